//! [`ServerConn`]: a broker's side of a connection.

use alloc::vec::Vec;

use super::{ConnError, FrameBuf, expects_response};
use crate::ApiKey;
use crate::codec::dispatch;
use crate::codec::encode::AnyBody;
use crate::codec::error_code::ErrorCode;
use crate::codec::frame::{
    DEFAULT_MAX_FRAME_SIZE, FrameError, RequestHeaderPeek, RequestHeaderView, ResponseHeader,
};
use crate::codec::messages::RequestBodyView;
use crate::codec::messages::api_versions::{ApiVersion, ApiVersionsResponse};
use crate::codec::types::{List, Versions};
use crate::codec::vectored::{self, Slot, VectoredBody, VectoredLen};

/// What a response needs to know of its request, kept after the request's bytes are gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyTo {
    /// The request's API.
    pub api_key: ApiKey,
    /// The request's version, which the response takes.
    pub api_version: i16,
    /// The request's correlation id, which the response echoes.
    pub correlation_id: i32,
    /// Whether the request gets a response (not a Produce with `acks = 0`).
    pub expects_response: bool,
}

/// A request a [`ServerConn`] read: header and typed body, borrowed from its buffer.
#[derive(Clone, Copy, Debug)]
pub struct ServerRequest<'a> {
    /// The header.
    pub header: RequestHeaderView<'a>,
    /// The body.
    pub body: RequestBodyView<'a>,
    /// Bytes after the body, ignored as Apache Kafka's broker ignores them.
    pub trailing_bytes: usize,
    /// The whole frame after its size prefix (header and body), e.g. to forward it.
    pub frame: &'a [u8],
}

impl ServerRequest<'_> {
    /// What its response needs.
    pub fn reply_to(&self) -> ReplyTo {
        ReplyTo {
            api_key: self.body.api_key(),
            api_version: self.header.api_version(),
            correlation_id: self.header.correlation_id(),
            expects_response: expects_response(&self.body),
        }
    }
}

/// What [`ServerConn::next_request`] hands out.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Received<'a> {
    /// A request this crate reads.
    Request(ServerRequest<'a>),
    /// An ApiVersions request at a version this connection does not serve (above
    /// [`ServerConn::api_versions_max`] or outside what this crate reads). Apache Kafka
    /// answers it, rather than closing, so that any client can learn what to retry with:
    /// [`ServerConn::encode_api_versions_unsupported`] writes that answer.
    ApiVersionsUnsupported {
        /// Its header fields (the body is not read).
        header: RequestHeaderPeek<'a>,
        /// Where the answer goes (at version 0).
        reply_to: ReplyTo,
    },
}

/// A broker's side of a connection: bytes in, typed requests out, responses encoded with
/// the header version their API and version call for (v0 for every ApiVersions response).
///
/// **Errors.** A bad size prefix ends the stream: [`ServerConn::next_request`] returns the
/// same [`ConnError::Frame`] from then on. A frame whose API key is unknown
/// ([`FrameError::UnsupportedApiKey`]), whose version this crate does not read
/// ([`FrameError::UnsupportedVersion`], except for ApiVersions: see
/// [`Received::ApiVersionsUnsupported`]), or whose header or body is malformed
/// ([`FrameError::Decode`]) is returned as an error once, and consumed; Apache Kafka closes
/// the connection for all three, and a caller that wants to go on may call again.
///
/// **Order.** Kafka answers a connection's requests in the order they came; answer in
/// that order (a request whose [`ReplyTo::expects_response`] is false gets no answer).
///
/// See the [module docs](super) for a broker and a client talking to each other.
#[derive(Debug)]
pub struct ServerConn {
    frames: FrameBuf,
    api_versions_max: i16,
}

impl Default for ServerConn {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerConn {
    /// A connection refusing frames over Apache Kafka's default 100 MiB
    /// ([`DEFAULT_MAX_FRAME_SIZE`]).
    pub fn new() -> Self {
        Self::with_frame_buf(FrameBuf::new(DEFAULT_MAX_FRAME_SIZE))
    }

    /// A connection reading through `frames` (its limits and base capacity).
    pub fn with_frame_buf(frames: FrameBuf) -> Self {
        ServerConn { frames, api_versions_max: ApiKey::ApiVersions.request_versions().max }
    }

    /// The highest ApiVersions version answered normally (default: the highest this crate
    /// reads); a request above it is [`Received::ApiVersionsUnsupported`].
    pub const fn api_versions_max(&self) -> i16 {
        self.api_versions_max
    }

    /// Sets [`ServerConn::api_versions_max`] (clamped to what this crate reads).
    pub fn set_api_versions_max(&mut self, max: i16) {
        self.api_versions_max = max.min(ApiKey::ApiVersions.request_versions().max);
    }

    /// The frame buffer.
    pub const fn frame_buf(&self) -> &FrameBuf {
        &self.frames
    }

    /// The frame buffer, e.g. to change its frame limit after authentication.
    pub fn frame_buf_mut(&mut self) -> &mut FrameBuf {
        &mut self.frames
    }

    /// Space to read into ([`FrameBuf::spare`]).
    pub fn spare(&mut self) -> &mut [u8] {
        self.frames.spare()
    }

    /// Marks bytes read into [`ServerConn::spare`] ([`FrameBuf::commit`]).
    pub fn commit(&mut self, n: usize) {
        self.frames.commit(n);
    }

    /// Copies bytes in, as many as fit ([`FrameBuf::feed`]).
    pub fn feed(&mut self, bytes: &[u8]) -> usize {
        self.frames.feed(bytes)
    }

    /// The next request, `None` until one is whole, or why it cannot be read (see the
    /// type's docs on errors).
    pub fn next_request(&mut self) -> Result<Option<Received<'_>>, ConnError> {
        let api_versions_max = self.api_versions_max;
        let Some(frame) = self.frames.next_frame()? else {
            return Ok(None);
        };
        read_request(frame, api_versions_max).map(Some)
    }

    /// Encodes the response to `reply_to` (size prefix, header, body), appended to `out`;
    /// returns its length.
    pub fn encode_response(
        reply_to: ReplyTo,
        body: &impl AnyBody,
        out: &mut Vec<u8>,
    ) -> Result<usize, ConnError> {
        let n = Self::response_len(reply_to, body)?;
        let at = out.len();
        out.resize(at + n, 0);
        let written = Self::encode_response_into(reply_to, body, &mut out[at..]);
        if written.is_err() {
            out.truncate(at);
        }
        written
    }

    /// The exact length of the response frame [`ServerConn::encode_response`] writes.
    pub fn response_len(reply_to: ReplyTo, body: &impl AnyBody) -> Result<usize, ConnError> {
        check_reply(reply_to, body)?;
        Ok(dispatch::response_len(body, reply_to.api_version)?)
    }

    /// Encodes the response to `reply_to` into the front of `buf`; returns its length.
    pub fn encode_response_into(
        reply_to: ReplyTo,
        body: &impl AnyBody,
        buf: &mut [u8],
    ) -> Result<usize, ConnError> {
        check_reply(reply_to, body)?;
        Ok(dispatch::encode_response(body, reply_to.api_version, reply_to.correlation_id, buf)?)
    }

    /// The exact sizes of the response to `reply_to` encoded around its body's records with
    /// [`ServerConn::encode_response_vectored`] (see [`crate::codec::vectored`]).
    pub fn vectored_response_len<B: VectoredBody>(
        reply_to: ReplyTo,
        body: &B,
    ) -> Result<VectoredLen, ConnError> {
        check_reply(reply_to, body)?;
        let header = ResponseHeader { correlation_id: reply_to.correlation_id, ..Default::default() };
        Ok(vectored::response_len(body, reply_to.api_version, &header)?)
    }

    /// Encodes the response to `reply_to` around its body's records, which are never
    /// copied: the size prefix, header and the body's other bytes go into the front of
    /// `buf`, and the parts (pieces of `buf` and the records, in wire order) into the front
    /// of `parts`; one `writev` of them sends the frame. A broker answers a Fetch this way
    /// with the batches as they sit in its log. Returns what
    /// [`ServerConn::vectored_response_len`] returns.
    pub fn encode_response_vectored<'b, B: VectoredBody, S: Slot<'b>>(
        reply_to: ReplyTo,
        body: &'b B,
        buf: &'b mut [u8],
        parts: &mut [S],
    ) -> Result<VectoredLen, ConnError> {
        check_reply(reply_to, body)?;
        let header = ResponseHeader { correlation_id: reply_to.correlation_id, ..Default::default() };
        Ok(vectored::encode_response(body, reply_to.api_version, &header, buf, parts)?)
    }

    /// Encodes Apache Kafka's answer to an ApiVersions request of a version it does not
    /// serve, appended to `out`: error 35 (UNSUPPORTED_VERSION) in a version-0 body that
    /// lists the ApiVersions versions it does serve (`supported`), so that the client
    /// retries with the highest of them. Returns the frame's length.
    pub fn encode_api_versions_unsupported(
        reply_to: ReplyTo,
        supported: Versions,
        out: &mut Vec<u8>,
    ) -> Result<usize, ConnError> {
        let keys = [ApiVersion {
            api_key: ApiKey::ApiVersions.to_i16(),
            min_version: supported.min,
            max_version: supported.max,
            ..Default::default()
        }];
        let body = ApiVersionsResponse {
            error_code: ErrorCode::UnsupportedVersion.to_i16(),
            api_keys: List::Borrowed(&keys),
            ..Default::default()
        };
        let v0 = ReplyTo { api_version: 0, api_key: ApiKey::ApiVersions, ..reply_to };
        Self::encode_response(v0, &body, out)
    }
}

fn check_reply(reply_to: ReplyTo, body: &impl AnyBody) -> Result<(), ConnError> {
    if !reply_to.expects_response {
        return Err(ConnError::NoResponseExpected { correlation_id: reply_to.correlation_id });
    }
    if body.api_key() != reply_to.api_key {
        return Err(ConnError::WrongApi { expected: reply_to.api_key, api_key: body.api_key() });
    }
    Ok(())
}

/// Reads one request frame as a broker does.
pub(crate) fn read_request(frame: &[u8], api_versions_max: i16) -> Result<Received<'_>, ConnError> {
    let unsupported_api_versions = |frame| {
        let header = RequestHeaderView::peek(frame)?;
        let reply_to = ReplyTo {
            api_key: ApiKey::ApiVersions,
            api_version: 0,
            correlation_id: header.correlation_id,
            expects_response: true,
        };
        Ok(Received::ApiVersionsUnsupported { header, reply_to })
    };
    match dispatch::parse_request_prefix(frame) {
        Ok((request, trailing_bytes)) => {
            let is_api_versions = request.body.api_key() == ApiKey::ApiVersions;
            if is_api_versions && request.header.api_version() > api_versions_max {
                return unsupported_api_versions(frame);
            }
            Ok(Received::Request(ServerRequest {
                header: request.header,
                body: request.body,
                trailing_bytes,
                frame,
            }))
        }
        Err(FrameError::UnsupportedVersion { api_key: ApiKey::ApiVersions, .. }) => {
            unsupported_api_versions(frame)
        }
        Err(e) => Err(e.into()),
    }
}
