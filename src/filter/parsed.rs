//! A frame read once on its way through: [`ParsedRequest`] and [`ParsedResponse`] hold the
//! frame's header and, once someone asks for it, its body view. Whoever drives a
//! [`FilterChain`](super::FilterChain) (the proxy's session) makes one per frame and hands it
//! to everything that reads the frame (the pairing, the authentication notes, the chain, the
//! topic-name book), so that no one parses it again. The body is parsed at most once, and
//! only when asked: a frame that nothing reads is never parsed past its header.

use crate::ApiKey;
use crate::codec::dispatch::{self, Request, Response};
use crate::codec::error::DecodeError;
use crate::codec::frame::{FrameError, RequestHeaderPeek, RequestHeaderView};

/// A request frame (without its size prefix) read once: its header's leading fields at
/// once, its header and body view the first time [`ParsedRequest::request`] asks.
#[derive(Clone, Copy, Debug)]
pub struct ParsedRequest<'a> {
    frame: &'a [u8],
    head: RequestHeaderPeek<'a>,
    /// The parse, once made: the request (read as Kafka's broker reads it, bytes after the
    /// body ignored) or why it does not parse.
    request: Option<Result<Request<'a>, FrameError>>,
}

impl<'a> ParsedRequest<'a> {
    /// Reads the leading header fields of `frame` (API key and version, correlation id,
    /// client id); an error if even those do not decode.
    pub fn new(frame: &'a [u8]) -> Result<Self, DecodeError> {
        Ok(ParsedRequest { frame, head: RequestHeaderView::peek(frame)?, request: None })
    }

    /// The frame.
    pub fn frame(&self) -> &'a [u8] {
        self.frame
    }

    /// The header's leading fields, for any API key, known or not.
    pub fn head(&self) -> &RequestHeaderPeek<'a> {
        &self.head
    }

    /// The API, if kwire knows its key.
    pub fn api_key(&self) -> Option<ApiKey> {
        self.head.key()
    }

    /// The header and body view ([`dispatch::parse_request_prefix`]), parsed the first time
    /// it is asked for and kept.
    pub fn request(&mut self) -> Result<Request<'a>, FrameError> {
        *self.request.get_or_insert_with(|| dispatch::parse_request_prefix(self.frame).map(|(r, _)| r))
    }

    /// The parse, if someone asked for it already (without parsing).
    pub fn parsed(&self) -> Option<Result<Request<'a>, FrameError>> {
        self.request
    }
}

/// A response frame (without its size prefix) that answers a request of a known API and
/// version, read once: its header and body view the first time
/// [`ParsedResponse::response`] asks.
#[derive(Clone, Copy, Debug)]
pub struct ParsedResponse<'a> {
    frame: &'a [u8],
    api_key: ApiKey,
    api_version: i16,
    /// The parse, once made: the response and the version it was read at, or `None` if it
    /// does not parse.
    response: Option<Option<(Response<'a>, i16)>>,
}

impl<'a> ParsedResponse<'a> {
    /// A response to a request of `api_key` at `api_version` (responses do not say what they
    /// answer); nothing is read yet.
    pub fn new(frame: &'a [u8], api_key: ApiKey, api_version: i16) -> Self {
        ParsedResponse { frame, api_key, api_version, response: None }
    }

    /// The frame.
    pub fn frame(&self) -> &'a [u8] {
        self.frame
    }

    /// The API of the request it answers.
    pub fn api_key(&self) -> ApiKey {
        self.api_key
    }

    /// The version of the request it answers.
    pub fn api_version(&self) -> i16 {
        self.api_version
    }

    /// The parse, if someone asked for it already (without parsing): `Some(None)` if it
    /// does not parse.
    pub fn parsed(&self) -> Option<Option<(Response<'a>, i16)>> {
        self.response
    }

    /// The response and the version its body was read at: the request's, or, for an
    /// ApiVersions error answer, version 0, as Kafka's clients read it. Parsed the first
    /// time it is asked for and kept; `None` if it does not parse.
    pub fn response(&mut self) -> Option<(Response<'a>, i16)> {
        *self.response.get_or_insert_with(|| read_response(self.frame, self.api_key, self.api_version))
    }
}

/// Reads a response as Kafka's clients do: at the request's version, or, for an
/// ApiVersions error answer, at version 0. Returns the response and its version.
pub(super) fn read_response(frame: &[u8], key: ApiKey, version: i16) -> Option<(Response<'_>, i16)> {
    match dispatch::parse_response(frame, key, version) {
        Ok(r) => Some((r, version)),
        Err(_) if key == ApiKey::ApiVersions && version > 0 => {
            dispatch::parse_response(frame, key, 0).ok().map(|r| (r, 0))
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::messages::{ApiVersionsRequest, ApiVersionsResponse, RequestBodyView};
    use alloc::vec;

    #[test]
    fn a_request_is_parsed_once_and_only_when_asked() {
        let mut buf = [0u8; 64];
        let n =
            dispatch::encode_request(&ApiVersionsRequest::default(), 3, 7, Some("app"), &mut buf).unwrap();
        let frame = &buf[4..n];
        let mut p = ParsedRequest::new(frame).unwrap();
        assert_eq!((p.head().api_key, p.head().correlation_id, p.head().client_id), (18, 7, Some("app")));
        assert!(p.parsed().is_none(), "not parsed before it is asked for");
        let r = p.request().unwrap();
        assert!(matches!(r.body, RequestBodyView::ApiVersions(_)));
        assert!(p.parsed().is_some());
        // A frame whose body does not decode: the error is kept too.
        let mut bad = frame.to_vec();
        bad.truncate(frame.len() - 1);
        let mut p = ParsedRequest::new(&bad).unwrap();
        assert!(p.request().is_err());
        assert!(matches!(p.parsed(), Some(Err(_))));
        assert!(ParsedRequest::new(&[0, 18]).is_err());
    }

    #[test]
    fn an_api_versions_error_answer_is_read_at_version_0() {
        let body = ApiVersionsResponse { error_code: 35, ..Default::default() };
        let mut buf = vec![0u8; dispatch::response_len(&body, 0).unwrap()];
        dispatch::encode_response(&body, 0, 1, &mut buf).unwrap();
        let mut p = ParsedResponse::new(&buf[4..], ApiKey::ApiVersions, 3);
        let (r, at) = p.response().expect("read at v0");
        assert_eq!((at, r.header.correlation_id()), (0, 1));
        let mut p = ParsedResponse::new(&buf[4..6], ApiKey::ApiVersions, 3);
        assert!(p.response().is_none());
    }
}
