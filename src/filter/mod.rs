//! Filters: code that sees each request and response of a connection as typed views and
//! decides what happens to it (feature `alloc`).
//!
//! A [`Filter`] gets the frame's header and body view ([`dispatch::Request`](Request) or
//! [`dispatch::Response`](Response), with the request's API and version for a response in an
//! [`Exchange`]) and returns an action: pass the frame on, rewrite it (only the body is
//! encoded again; the header's bytes are kept), answer a request itself, drop a request, or
//! close the connection. A [`FilterChain`] runs filters in order on requests and in
//! reverse order on responses, as layers around the broker, and turns their actions into
//! one [`Verdict`] for the frame that the I/O loop carries out.
//!
//! Built in: [`DenyApis`] (an API deny-list), [`RewriteAddresses`] (broker addresses in
//! responses replaced, so that clients keep talking through a proxy; [`BrokerPorts`] is the
//! rule of a port per broker by node id, the same in every proxy instance), [`ValidateRecords`]
//! (the records of Produce requests checked against rules per topic: JSON values, keys,
//! sizes, headers; [`check_json`] is its JSON check), [`Tenant`] (a tenant of a virtual
//! cluster, feature `reflect`). [`splice_request`] and [`splice_response`] rename entity
//! strings (topic names, group ids, transactional ids) in a frame by splicing, with one copy
//! and no value tree; a filter returns the new frame as [`RequestAction::RewriteFrame`] or
//! [`ResponseAction::RewriteFrame`]. A [`Tenant`] that borrows tails returns a request or
//! an answer as [`RequestAction::RewriteSpliced`] or [`ResponseAction::RewriteSpliced`]
//! instead: new bytes up to its last renamed string and its own bytes after it, uncopied
//! ([`Spliced`]), which the chain gives as [`Verdict::Splice`] for its caller to write as the
//! two parts. The masking of
//! secrets in copies of frames for logs and recordings is [`crate::session::secrets::redact`].
//!
//! A filter of your own, which counts requests per API and renames one client:
//!
//! ```
//! use std::collections::BTreeMap;
//! use kwire::dispatch::Request;
//! use kwire::filter::{Filter, FilterChain, RequestAction, Verdict};
//! use kwire::messages::{ApiVersionsRequest, RequestBody};
//! use kwire::ApiKey;
//!
//! #[derive(Default)]
//! struct CountAndRename {
//!     per_api: BTreeMap<ApiKey, u64>,
//! }
//!
//! impl Filter for CountAndRename {
//!     fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
//!         *self.per_api.entry(request.body.api_key()).or_default() += 1;
//!         match request.header.client_id() {
//!             // A client id is in the header; the body is rewritten the same way.
//!             Some("legacy-app") => RequestAction::RewriteHeader { client_id: Some("app-v1".into()) },
//!             _ => RequestAction::Pass,
//!         }
//!     }
//! }
//!
//! let mut chain = FilterChain::new();
//! chain.push(CountAndRename::default());
//!
//! let mut frame = [0u8; 64];
//! let n = kwire::dispatch::encode_request(&ApiVersionsRequest::default(), 3, 9, Some("legacy-app"), &mut frame)?;
//! let Verdict::Replace(new) = chain.on_request(&frame[4..n]) else { panic!("rewritten") };
//! let request = kwire::dispatch::parse_request(&new)?;
//! assert_eq!(request.header.client_id(), Some("app-v1"));
//! assert_eq!(request.header.correlation_id(), 9);
//! assert!(matches!(RequestBody::from(request.body), RequestBody::ApiVersions(_)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What the chain guarantees
//!
//! - A filter only ever sees checked views. A request that no filter can read closes the
//!   connection, with the reason (API and version) in the close: an API or version the
//!   connection does not serve, a header or body that does not decode. What a connection
//!   serves is what its ApiVersions answers advertise: what the broker serves, kwire reads
//!   and every filter handles ([`Filter::versions`]; [`FilterChain::served`]), so a client
//!   that ignores ApiVersions cannot reach a filter with a version it was not written for.
//!   Apache Kafka's broker closes the connection on a version it does not serve in the
//!   same way. ApiVersions requests of any version are answered. A chain whose filters
//!   only observe may forward such requests unread instead
//!   ([`FilterChain::forward_unreadable`]); an empty chain forwards everything.
//! - Produce is advertised from version 0, as Kafka 4.x advertises it, and served from
//!   version 3 ([`ApiKey::advertised`]).
//! - A filter is asked about a frame only if its `wants_*` says so; a frame no filter wants
//!   is not parsed at all.
//! - A rewritten frame keeps its header (correlation id, client id, header tagged fields)
//!   byte for byte, unless the filter rewrote the header itself; the next filter sees the
//!   rewritten frame.
//! - A frame no filter rewrites is [`Verdict::Forward`]: the caller sends it from where it
//!   read it. A spliced frame ([`Verdict::Splice`]) is new bytes only up to its last change;
//!   the rest is the frame as it came, in both directions. The chain copies a frame only to
//!   rewrite it, or to join a spliced frame that another filter reads after the splice.
//! - A request that expects an answer is never silently lost: dropping it closes the
//!   connection instead. Answering a Produce request with `acks = 0`, which expects none,
//!   drops it instead.
//!
//! Layer 4 of the crate: filters use the [`codec`](crate::codec), [`session`](crate::session)
//! and `tools` (`reflect`, for tenants and rewrites), never the applications.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use crate::ApiKey;
use crate::codec::dispatch::{Request, Response};
use crate::codec::encode::AnyBody;
use crate::codec::messages::{RequestBody, ResponseBody};
use crate::codec::types::Versions;

/// What a response answers: the request's API, the version the response is read at (the
/// request's, or 0 for an ApiVersions error answer read as v0, as Kafka's clients read it),
/// and the correlation id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exchange {
    /// The request's API.
    pub api_key: ApiKey,
    /// The version of the response body.
    pub api_version: i16,
    /// The correlation id.
    pub correlation_id: i32,
}

/// What a filter does with a request.
#[derive(Debug)]
#[non_exhaustive]
pub enum RequestAction<'a> {
    /// Pass it on unchanged.
    Pass,
    /// Replace the body with this one (the same API, encoded at the request's version);
    /// the header is kept.
    Rewrite(RequestBody<'a>),
    /// Replace the body with these bytes: a body of the same API encoded at the request's
    /// version (by a generic filter, from `reflect`'s `Value`); the header is kept. Bytes
    /// that do not decode as such close the connection.
    RewriteBody(Vec<u8>),
    /// Replace the whole frame (without its size prefix) with these bytes: the request's
    /// own header, then a body of the same API at the request's version (what
    /// [`splice_request`] writes). Bytes that do not decode as such close the connection.
    RewriteFrame(Vec<u8>),
    /// Replace the whole frame with this one, made by kwire's own splicing: new bytes up to
    /// the last renamed string, then the request's own bytes from there on, not copied
    /// ([`Spliced`]). For the frame as it came, the chain's verdict is [`Verdict::Splice`];
    /// after another filter's rewrite, the two parts are joined.
    RewriteSpliced(Spliced<'a>),
    /// Keep the body and write the header again with this client id.
    RewriteHeader {
        /// The new client id.
        client_id: Option<String>,
    },
    /// Do not forward it; answer the client with this body (the same API, encoded at the
    /// request's version and with its correlation id).
    Respond(ResponseBody<'a>),
    /// Refuse these entries (topics or partitions) with their errors, and forward the rest:
    /// the client gets one answer, the broker's with the refused entries merged in, in the
    /// request's order; if every entry is refused, the chain answers without the broker
    /// (but Fetch and Metadata). For the APIs and versions [`Refusals::supports`] lists; for
    /// others it closes the connection.
    Refuse(Refusals),
    /// Do not forward it and do not answer (a request that expects an answer closes the
    /// connection instead).
    Drop,
    /// Close the connection, for this reason.
    Close(String),
}

/// What a filter does with a response. Responses cannot be dropped: the client waits for
/// each answer in order.
// An action is returned once per frame and moved at once; boxing the body would cost an
// allocation per rewrite.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
#[non_exhaustive]
pub enum ResponseAction<'a> {
    /// Pass it on unchanged.
    Pass,
    /// Replace the body with this one (the same API, encoded at the response's version);
    /// the header is kept.
    Rewrite(ResponseBody<'a>),
    /// Replace the body with these bytes: a body of the same API encoded at the response's
    /// version (by a generic filter, from `reflect`'s `Value`); the header is kept. Bytes
    /// that do not decode as such close the connection.
    RewriteBody(Vec<u8>),
    /// Replace the whole frame (without its size prefix) with these bytes: the response's
    /// own header, then a body of the same API at the response's version (what
    /// [`splice_response`] writes). Bytes that do not decode as such close the connection.
    RewriteFrame(Vec<u8>),
    /// Replace the whole frame with this one, made by kwire's own splicing: new bytes up to
    /// the last renamed string, then the response's own bytes from there on, not copied
    /// ([`Spliced`]), as [`RequestAction::RewriteSpliced`] for requests: for the frame as it
    /// came, the chain's verdict is [`Verdict::Splice`]; after another filter's rewrite, the
    /// two parts are joined.
    RewriteSpliced(Spliced<'a>),
    /// Close the connection, for this reason.
    Close(String),
}

/// A filter: sees requests and responses as checked views and decides what happens to
/// them. Every method has a default that passes everything on.
pub trait Filter {
    /// Whether [`Filter::on_request`] wants requests of this API and version (a frame that
    /// no filter wants is not parsed).
    fn wants_request(&self, api_key: ApiKey, version: i16) -> bool {
        let _ = (api_key, version);
        true
    }

    /// Decides what happens to a request.
    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        let _ = request;
        RequestAction::Pass
    }

    /// Whether [`Filter::on_response`] wants responses of this API and version.
    fn wants_response(&self, api_key: ApiKey, version: i16) -> bool {
        let _ = (api_key, version);
        true
    }

    /// Decides what happens to a response.
    fn on_response<'a>(&mut self, exchange: &Exchange, response: &Response<'a>) -> ResponseAction<'a> {
        let _ = (exchange, response);
        ResponseAction::Pass
    }

    /// Whether requests no filter can read (an API or version the connection does not serve,
    /// a body that does not decode) must never pass, even through a chain that forwards them
    /// unread ([`FilterChain::forward_unreadable`]): a filter that has to see every request
    /// (tenant isolation) says so. A chain closes the connection on such requests by
    /// default anyway.
    fn refuses_unreadable(&self) -> bool {
        false
    }

    /// The versions of `api_key` this filter handles, out of `readable` (what the broker
    /// serves and kwire reads, cut by the filters before this one). The ApiVersions answers
    /// that clients get through the chain list only what every filter handles; `None` takes
    /// the API out of them. By default a filter handles every version.
    fn versions(&self, api_key: ApiKey, readable: Versions) -> Option<Versions> {
        let _ = api_key;
        Some(readable)
    }
}

/// What to do with a frame, after every filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Forward the frame as it came.
    Forward,
    /// Forward this frame instead (without its size prefix).
    Replace(Vec<u8>),
    /// Forward `head` and then the frame's own bytes from offset `tail` on, as they came:
    /// the new frame (without its size prefix) is `head` followed by `frame[tail..]`. From
    /// a filter's [`RequestAction::RewriteSpliced`] or [`ResponseAction::RewriteSpliced`], so
    /// that the bytes after the last renamed string (a Produce request's or a Fetch answer's
    /// records) are written from where they were received, not copied.
    Splice {
        /// The new frame's bytes up to the end of its last change.
        head: Vec<u8>,
        /// Where the rest starts in the frame as it came.
        tail: usize,
    },
    /// Do not forward the request; send this response frame (without its size prefix) to
    /// the client, in its turn.
    Respond(Vec<u8>),
    /// Forward nothing; nothing answers it (a request that expects no answer).
    Drop,
    /// Close the connection.
    Close(String),
}

fn encode_body(body: &impl AnyBody, version: i16) -> Result<Vec<u8>, String> {
    let n = body.encoded_len(version).map_err(|e| e.to_string())?;
    let mut out = vec![0u8; n];
    body.encode(version, &mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

fn splice(header: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(header.len() + body.len());
    out.extend_from_slice(header);
    out.extend_from_slice(body);
    out
}

#[cfg(feature = "reflect")]
mod by_schema;
mod chain;
mod deny;
mod json;
mod parsed;
mod partial;
mod rewrite;
mod splice;
#[cfg(feature = "reflect")]
mod tenant;
#[cfg(feature = "reflect")]
mod tenant_acls;
#[cfg(feature = "reflect")]
mod tenant_admin;
#[cfg(feature = "reflect")]
mod tenant_fields;
#[cfg(feature = "reflect")]
mod tenant_quotas;
#[cfg(feature = "reflect")]
mod tenant_refuse;
#[cfg(feature = "reflect")]
mod tenant_walk;
mod topic_names;
#[cfg(feature = "api-produce")]
mod validate;
mod versions;

pub use chain::FilterChain;
pub use deny::DenyApis;
pub use json::{JsonError, JsonErrorKind, MAX_JSON_DEPTH, check_json};
pub use parsed::{ParsedRequest, ParsedResponse};
pub use partial::Refusals;
pub use rewrite::{
    BrokerNames, BrokerPorts, ByName, ByNode, NameError, NameTarget, RewriteAddresses, Route,
    carries_addresses,
};
pub use splice::{Edit, EntityKind, SpliceError, Spliced, splice_request, splice_response};
#[cfg(feature = "reflect")]
pub use tenant::Tenant;
#[cfg(feature = "proxy")]
pub(crate) use tenant_acls::{AclLookups, Binding, LookedUp};
#[cfg(feature = "proxy")]
pub(crate) use tenant_walk::topic_id;
pub use topic_names::{TopicName, TopicNames};
#[cfg(feature = "api-produce")]
pub use validate::{
    Checks, DEFAULT_DECOMPRESSION_LIMIT, MAX_RECORD_ERRORS, Rule, RuleError, ValidateRecords,
};

#[cfg(test)]
mod tests;
