//! What a proxy tells its owner and its filters of each connection: [`ConnInfo`], the
//! [`Hooks`] for logs and recordings, and the [`Event`]s they see.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use super::notes::{Admitted, AuthNote, Pairing, RequestHead};

/// What a proxy knows of one client connection, for its filters and hooks. What
/// authentication tells (mechanism, principal) is filled in as the connection authenticates.
#[derive(Debug)]
pub struct ConnInfo {
    /// The connection's number, from 1, in the order connections were accepted.
    pub id: u64,
    /// The client's address.
    pub peer: SocketAddr,
    /// The TLS server name the client asked for (SNI), if it connected with TLS.
    pub server_name: Option<String>,
    /// The client's TLS certificate chain (DER, its own certificate first), if it showed one.
    pub peer_certificates: Vec<Vec<u8>>,
    /// The broker this connection goes to (`host:port`, as routed).
    pub route: String,
    auth: Mutex<(Option<String>, Option<String>)>,
    pub(super) topic_names: crate::filter::TopicNames,
    /// The look-ups of ACL bindings for the connection's tenant (`acl_lookups.rs`).
    pub(super) acl_lookups: crate::filter::AclLookups,
}

impl ConnInfo {
    /// A connection's facts (the runtime makes these; tests and other drivers of
    /// [`super::Session`] may too).
    pub fn new(id: u64, peer: SocketAddr, route: String) -> ConnInfo {
        ConnInfo {
            id,
            peer,
            server_name: None,
            peer_certificates: Vec::new(),
            route,
            auth: Mutex::new((None, None)),
            topic_names: crate::filter::TopicNames::new(),
            acl_lookups: crate::filter::AclLookups::default(),
        }
    }

    /// The proxy's book of topic names by id, shared by all its connections: what a filter
    /// that judges topics by name resolves ids with ([`crate::filter::TopicNames::resolve`];
    /// see [`super::ProxyBuilder::filters`]).
    pub fn topic_names(&self) -> &crate::filter::TopicNames {
        &self.topic_names
    }

    /// The SASL mechanism the client named, if any.
    pub fn mechanism(&self) -> Option<String> {
        self.auth.lock().unwrap_or_else(|e| e.into_inner()).0.clone()
    }

    /// The principal (the SASL user) once the broker accepted the authentication; `Some("")`
    /// when it accepted a mechanism whose user kwire does not read (GSSAPI, OAUTHBEARER).
    pub fn principal(&self) -> Option<String> {
        self.auth.lock().unwrap_or_else(|e| e.into_inner()).1.clone()
    }

    pub(super) fn set_auth(&self, mechanism: Option<String>, principal: Option<String>) {
        *self.auth.lock().unwrap_or_else(|e| e.into_inner()) = (mechanism, principal);
    }
}

/// What happens on a proxy, beside its frames, for [`Hooks::event`].
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A listener is open: the bootstrap listener (`broker` `None`) or a broker's.
    Listening {
        /// Its address.
        addr: SocketAddr,
        /// The broker it forwards to, and its node id when known.
        broker: Option<(&'a str, Option<i32>)>,
    },
    /// Something the operator should read (a listener that could not open, a route that
    /// changed, the connection limit reached); one line, no secret.
    Notice(&'a str),
    /// A client connection is forwarded to its broker.
    Connected {
        /// The broker's address as reached.
        upstream: &'a str,
        /// TLS on either side, in words (empty without TLS).
        tls: &'a str,
    },
    /// A client connection could not be set up (TLS, routing, the broker unreachable); the
    /// hooks get its `ConnInfo` when it got that far (after TLS).
    Refused {
        /// The client.
        peer: SocketAddr,
        /// Why, in words.
        why: &'a str,
    },
    /// A client connection ended.
    Closed {
        /// Why, in words.
        why: &'a str,
    },
    /// A frame broke the framing (a negative size, or one over the limit): the connection
    /// is closed.
    Violation {
        /// Whether the client sent it (else the broker).
        from_client: bool,
        /// What was wrong.
        what: &'a str,
    },
    /// Authentication as the session observed it.
    Auth(&'a AuthNote),
    /// A raw SASL token (SaslHandshake v0) passed: its size only, never its bytes.
    SaslToken {
        /// Whether the client sent it (else the broker).
        from_client: bool,
        /// The frame's size, prefix included.
        size: usize,
    },
    /// A request frame whose header does not parse was sent on.
    BadRequest {
        /// The frame (without its size prefix).
        frame: &'a [u8],
        /// Why.
        why: &'a str,
    },
    /// A response that answers no request awaiting one was sent on.
    Unpaired {
        /// The frame (without its size prefix).
        frame: &'a [u8],
        /// Why.
        why: &'a str,
    },
    /// The broker answered a correlation id out of order (it was paired all the same).
    OutOfOrder {
        /// The correlation id answered.
        correlation_id: i32,
    },
}

/// What a proxy tells its owner: logs, recordings, counters. Every method has a default that
/// does nothing; hooks run on the connection's task after its frames were sent, so they
/// should not block.
pub trait Hooks: Send + Sync + 'static {
    /// What the hooks keep of a request until its answer (e.g. the name it is recorded
    /// under).
    type Tag: Clone + Send + 'static;

    /// A request is about to be sent on (or answered by a filter): what to keep of it, from
    /// its head and its frame as the client sent it (without the size prefix). Called
    /// before the frame is sent, so keep it cheap.
    fn admit(&self, conn: &ConnInfo, head: &RequestHead, frame: &[u8]) -> Self::Tag;

    /// A request frame (as sent on, without its size prefix) was sent. A frame a filter
    /// spliced, sent in two parts, its new head and the rest from where it was read
    /// ([`Action::Splice`](super::Action::Splice): a tenant's renaming), is given as it came
    /// from the client: its sent form is never whole.
    fn request(&self, conn: &ConnInfo, frame: &[u8], head: &RequestHead, tag: &Self::Tag) {
        let _ = (conn, frame, head, tag);
    }

    /// [`Hooks::request`], with what the proxy's one parse of the frame found, when it
    /// parsed it (`None` when nothing read the body, or a filter replaced the frame): a
    /// hook that reads the frame need not parse it again to learn whether it decodes. By
    /// default, [`Hooks::request`].
    fn request_read(
        &self,
        conn: &ConnInfo,
        frame: &[u8],
        head: &RequestHead,
        tag: &Self::Tag,
        read: Option<Result<(), crate::codec::frame::FrameError>>,
    ) {
        let _ = read;
        self.request(conn, frame, head, tag);
    }

    /// A response frame (as sent to the client, without its size prefix) was sent: what it
    /// answers, whether it was rewritten, and how long after its request. A frame a filter
    /// spliced, sent in two parts ([`Action::Splice`](super::Action::Splice): a tenant's
    /// renaming), is given as it came from the broker, with `rewritten` set: its sent form
    /// is never whole (the same rule as [`Hooks::request`]'s).
    fn response(
        &self,
        conn: &ConnInfo,
        frame: &[u8],
        exchange: Pairing<Self::Tag>,
        rewritten: bool,
        latency: Duration,
    ) {
        let _ = (conn, frame, exchange, rewritten, latency);
    }

    /// [`Hooks::response`], with the version the proxy's one parse of the frame read its
    /// body at, when it parsed it and it decoded (`None` otherwise, or when a filter
    /// replaced the frame): a hook that reads the frame need not parse it again to learn
    /// that. By default, [`Hooks::response`].
    fn response_read(
        &self,
        conn: &ConnInfo,
        frame: &[u8],
        exchange: Pairing<Self::Tag>,
        rewritten: bool,
        latency: Duration,
        read_at: Option<i16>,
    ) {
        let _ = read_at;
        self.response(conn, frame, exchange, rewritten, latency);
    }

    /// A request that expects no answer was sent (Produce with acks=0, a dropped request),
    /// or one still awaited its answer when the connection closed. `api_key` is the raw value
    /// the client sent (kwire may not know the API), as in [`RequestHead`].
    fn no_response(&self, conn: &ConnInfo, api_key: i16, api_version: i16, request: Admitted<Self::Tag>) {
        let _ = (conn, api_key, api_version, request);
    }

    /// Anything else (`conn` is `None` for the proxy as a whole).
    fn event(&self, conn: Option<&ConnInfo>, event: Event<'_>) {
        let _ = (conn, event);
    }
}

/// Hooks that do nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

impl Hooks for NoHooks {
    type Tag = ();
    fn admit(&self, _: &ConnInfo, _: &RequestHead, _: &[u8]) {}
}
