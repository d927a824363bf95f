//! Filters that wait: [`WaitingFilter`], which may ask the broker things of its own through
//! [`Upstream`] before it decides on a request.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use core::future::Future;
use core::pin::Pin;
use std::time::Duration;

use crate::ApiKey;
use crate::session::conn::ConnError;

/// What a [`WaitingFilter`]'s [`Upstream`] does, for the driver to carry out: enters a
/// request of the proxy's own in the connection's session and writes it on its broker stream.
pub(super) trait OwnRequests: Send {
    /// Enters a request: its correlation id, and where its answer will come.
    fn enter(
        &mut self,
        api_key: ApiKey,
        version: i16,
    ) -> Result<(i32, tokio::sync::oneshot::Receiver<Vec<u8>>), ConnError>;
    /// Writes a whole frame (with its size prefix).
    fn write<'a>(
        &'a mut self,
        frame: &'a [u8],
    ) -> Pin<Box<dyn Future<Output = std::io::Result<()>> + Send + 'a>>;
}

/// A filter that may wait (feature `proxy`): it sees each request it wants before the
/// connection's [`crate::filter::FilterChain`], as an owned frame, and may ask the broker things of its own
/// through [`Upstream`] (e.g. Metadata, to map topic ids to names) before it decides. While
/// it waits, the connection reads no further request (the broker's answers still flow).
/// Requests it does not want cost one check, so synchronous filters pay nothing for it.
pub trait WaitingFilter: Send + Sync + 'static {
    /// Whether it wants requests of this API and version.
    fn wants_request(&self, api_key: crate::ApiKey, version: i16) -> bool;

    /// Whether this request (the whole frame, without its size prefix), of an API and
    /// version it wants, must wait for it: by default, every one. A filter that waits on
    /// only some frames says which here, from the borrowed frame, so that the others go on
    /// without the owned copy [`WaitingFilter::on_request`] is given (the proxy's look-up of
    /// topic ids waits only on a request naming an id its book does not know).
    fn waits_on(&self, frame: &[u8]) -> bool {
        let _ = frame;
        true
    }

    /// Decides on a request (the whole frame, without its size prefix).
    fn on_request<'a>(
        &'a mut self,
        frame: Vec<u8>,
        upstream: &'a mut Upstream<'_>,
    ) -> core::pin::Pin<Box<dyn core::future::Future<Output = Decision> + Send + 'a>>;

    /// What waits on the connection's responses, if this filter wants any (none by
    /// default): asked once, when the connection is set up. Filters that want no
    /// responses keep the response side as it is.
    fn responses(&mut self) -> Option<Box<dyn WaitingResponses>> {
        None
    }
}

/// The response half of a [`WaitingFilter`] ([`WaitingFilter::responses`]): sees each
/// response it wants after the connection's [`crate::filter::FilterChain`] (it is the
/// layer nearest the client), as an owned frame, and may rewrite it before the client gets
/// it. While it waits, the connection sends the client nothing further (answers keep their
/// order). The proxy's hooks (logs, recordings) are told of the frame as the chain left
/// it, not as this filter rewrote it.
pub trait WaitingResponses: Send + Sync + 'static {
    /// Whether it wants the responses to requests of this API and version.
    fn wants_response(&self, api_key: ApiKey, version: i16) -> bool;

    /// Decides on a response (the whole frame, without its size prefix) to a request of
    /// `api_key` at `version`: [`Decision::Forward`] with the frame to send (the one given,
    /// or a rewritten one of the same API, version and correlation id), or
    /// [`Decision::Close`].
    fn on_response<'a>(
        &'a mut self,
        frame: Vec<u8>,
        api_key: ApiKey,
        version: i16,
    ) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>>;
}

/// What a [`WaitingFilter`] decided.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Go on with this request frame (the one given, or a rewritten one of the same API and
    /// version): the connection's filter chain sees it next.
    Forward(Vec<u8>),
    /// Close the connection, for this reason.
    Close(String),
}

/// The broker of one connection, for a [`WaitingFilter`]'s requests of its own: they go on
/// the connection's own broker connection, with correlation ids the client never sees, and
/// their answers go to the filter, not to the client.
pub struct Upstream<'a> {
    inner: &'a mut (dyn OwnRequests + 'a),
}

impl core::fmt::Debug for Upstream<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Upstream")
    }
}

/// Why a request of the proxy's own got no answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum UpstreamError {
    /// It could not be encoded, or entered (too many requests awaiting answers).
    Request(crate::session::conn::ConnError),
    /// Writing it to the broker failed.
    Io(std::io::Error),
    /// The connection ended, or no answer came within 30 s.
    NoAnswer,
}

impl core::fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            UpstreamError::Request(e) => write!(f, "the proxy's request: {e}"),
            UpstreamError::Io(e) => write!(f, "writing the proxy's request: {e}"),
            UpstreamError::NoAnswer => f.write_str("the broker did not answer the proxy's request"),
        }
    }
}

impl std::error::Error for UpstreamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UpstreamError::Request(e) => Some(e),
            UpstreamError::Io(e) => Some(e),
            UpstreamError::NoAnswer => None,
        }
    }
}

impl Upstream<'_> {
    /// Sends `body` as a request of `version` to the broker and waits for its answer: the
    /// response frame (without its size prefix; parse it with
    /// [`crate::session::conn::read_response`] at the same API and version).
    pub async fn request(
        &mut self,
        body: &impl crate::AnyBody,
        version: i16,
    ) -> Result<Vec<u8>, UpstreamError> {
        let (id, answer) = self.inner.enter(body.api_key(), version).map_err(UpstreamError::Request)?;
        let header = crate::codec::frame::RequestHeader {
            correlation_id: id,
            client_id: Some("kwire-proxy"),
            unknown_tagged_fields: &[],
        };
        let len = crate::codec::dispatch::request_len(body, version, &header)
            .map_err(|e| UpstreamError::Request(e.into()))?;
        let mut frame = vec![0u8; len];
        crate::codec::dispatch::encode_request_with(body, version, &header, &mut frame)
            .map_err(|e| UpstreamError::Request(e.into()))?;
        self.inner.write(&frame).await.map_err(UpstreamError::Io)?;
        match tokio::time::timeout(Duration::from_secs(30), answer).await {
            Ok(Ok(frame)) => Ok(frame),
            _ => Err(UpstreamError::NoAnswer),
        }
    }
}

impl<'a> Upstream<'a> {
    /// The broker stream and session of one connection, for its waiting filter.
    pub(super) fn new(inner: &'a mut (dyn OwnRequests + 'a)) -> Self {
        Upstream { inner }
    }
}

/// Two waiting filters, one after the other: the second sees what the first forwards.
pub(super) struct Both(pub(super) Box<dyn WaitingFilter>, pub(super) Box<dyn WaitingFilter>);

impl WaitingFilter for Both {
    fn wants_request(&self, api_key: ApiKey, version: i16) -> bool {
        self.0.wants_request(api_key, version) || self.1.wants_request(api_key, version)
    }

    fn waits_on(&self, frame: &[u8]) -> bool {
        let Some((key, version)) = head_of(frame) else { return true };
        [&*self.0, &*self.1].iter().any(|f| f.wants_request(key, version) && f.waits_on(frame))
    }

    fn on_request<'a>(
        &'a mut self,
        frame: Vec<u8>,
        upstream: &'a mut Upstream<'_>,
    ) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            let head = head_of(&frame);
            let wants =
                |f: &dyn WaitingFilter| head.is_some_and(|(key, version)| f.wants_request(key, version));
            let frame = if wants(&*self.0) {
                match self.0.on_request(frame, upstream).await {
                    Decision::Forward(frame) => frame,
                    close => return close,
                }
            } else {
                frame
            };
            if wants(&*self.1) { self.1.on_request(frame, upstream).await } else { Decision::Forward(frame) }
        })
    }

    fn responses(&mut self) -> Option<Box<dyn WaitingResponses>> {
        match (self.0.responses(), self.1.responses()) {
            (None, None) => None,
            (Some(one), None) | (None, Some(one)) => Some(one),
            // Responses go the other way: the second (nearer the broker) first.
            (Some(first), Some(second)) => Some(Box::new(BothResponses(second, first))),
        }
    }
}

/// A request frame's API and version, when kwire knows the API.
fn head_of(frame: &[u8]) -> Option<(ApiKey, i16)> {
    let peek = crate::codec::frame::RequestHeaderView::peek(frame).ok()?;
    Some((ApiKey::from_i16(peek.api_key)?, peek.api_version))
}

/// Two response waiters, one after the other: the second sees what the first forwards.
struct BothResponses(Box<dyn WaitingResponses>, Box<dyn WaitingResponses>);

impl WaitingResponses for BothResponses {
    fn wants_response(&self, api_key: ApiKey, version: i16) -> bool {
        self.0.wants_response(api_key, version) || self.1.wants_response(api_key, version)
    }

    fn on_response<'a>(
        &'a mut self,
        frame: Vec<u8>,
        api_key: ApiKey,
        version: i16,
    ) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            let frame = if self.0.wants_response(api_key, version) {
                match self.0.on_response(frame, api_key, version).await {
                    Decision::Forward(frame) => frame,
                    close => return close,
                }
            } else {
                frame
            };
            if self.1.wants_response(api_key, version) {
                self.1.on_response(frame, api_key, version).await
            } else {
                Decision::Forward(frame)
            }
        })
    }
}
