//! What the session notes of each frame, for the hooks and their owner: a request's head,
//! what it said of authentication, and what is kept of a request until its answer. A leaf:
//! the session writes these notes and the hooks read them.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::time::Instant;

use crate::ApiKey;

/// What a request frame is, as read once from its header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestHead {
    /// A Kafka request.
    Request {
        /// The API key as sent (a raw value: kwire may not know it).
        api_key: i16,
        /// The API version as sent.
        api_version: i16,
        /// The correlation id.
        correlation_id: i32,
        /// The client id, shared with the connection's earlier requests while it stays the same.
        client_id: Option<Arc<str>>,
        /// Whether an answer is expected (not Produce with acks=0, not dropped).
        expects: bool,
    },
    /// A raw SASL token of the SaslHandshake v0 phase (no Kafka header; never decoded).
    Token,
    /// A frame whose request header does not parse, with the reason.
    Bad(String),
}

/// What the session learned of the connection's authentication from one frame.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthNote {
    /// The client named its SASL mechanism (SaslHandshake).
    Mechanism(String),
    /// The client's SASL exchange named this user (PLAIN and SCRAM; never a secret).
    User(String),
    /// The broker accepted the authentication: the connection's principal is known.
    Accepted,
    /// The broker refused it, with this error code.
    Refused(i16),
}

/// A request that was sent on (or answered by a filter), as kept until its answer.
#[derive(Debug)]
pub struct Admitted<T> {
    /// The client id.
    pub client_id: Option<Arc<str>>,
    /// When it was admitted.
    pub at: Instant,
    /// The request frame's size, prefix included.
    pub size: usize,
    /// What the caller keeps with it.
    pub tag: T,
}

/// What a response answers.
#[derive(Debug)]
pub struct Pairing<T> {
    /// The request's API.
    pub api_key: ApiKey,
    /// The request's version.
    pub api_version: i16,
    /// The correlation id.
    pub correlation_id: i32,
    /// The request.
    pub request: Admitted<T>,
}
