//! `tokio_util::codec` codecs (feature `tokio`): [`FrameCodec`] for raw frames,
//! [`ServerCodec`] for a broker's typed requests and responses, and [`ClientCodec`] for a
//! client's, built on the rules of [`FrameBuf`](super::FrameBuf), [`ServerConn`] and
//! [`ClientConn`](super::ClientConn).
//!
//! **Framing.** The same limits and errors as `FrameBuf`: a negative or oversized size
//! prefix is a [`FrameError`] as soon as its four bytes are there. The codecs never
//! reserve the size a prefix claims: the read buffer grows by at most its own length (or
//! the base capacity) per call, as bytes arrive. A framing error **sticks**: every later
//! `decode` returns it again, so a `FramedRead` that is polled after an error does not
//! read on.
//!
//! **Typed errors.** An item whose framing is intact but whose request cannot be read
//! (unknown API, unsupported version, malformed body) is not a decoder error: the item is
//! returned, and [`RequestFrame::received`] says what is wrong with it, so a broker can
//! answer or close, and a proxy can forward it. Decoder errors are [`CodecError`]s, matched
//! without downcasting.
//!
//! Frames leave as [`Bytes`] split off the read buffer: holding one keeps its part of the
//! buffer alive (see `bytes::BytesMut::reserve`).
//!
//! ```
//! use bytes::BytesMut;
//! use kwire::conn::Received;
//! use kwire::conn::tokio::ServerCodec;
//! use kwire::dispatch;
//! use kwire::messages::api_versions::{ApiVersionsRequest, ApiVersionsResponse};
//! use tokio_util::codec::{Decoder, Encoder};
//!
//! let mut codec = ServerCodec::new();
//! let mut input = BytesMut::new();
//! let mut frame = [0u8; 64];
//! let n = dispatch::encode_request(&ApiVersionsRequest::default(), 3, 7, Some("c"), &mut frame)?;
//! input.extend_from_slice(&frame[..n]);
//!
//! let request = codec.decode(&mut input)?.expect("a whole frame");
//! let Received::Request(r) = request.received()? else { unreachable!() };
//! let mut output = BytesMut::new();
//! codec.encode((r.reply_to(), &ApiVersionsResponse::default()), &mut output)?;
//! let answer = dispatch::parse_response(&output[4..], kwire::ApiKey::ApiVersions, 3)?;
//! assert_eq!(answer.header.correlation_id(), 7);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A client and a broker talking through their codecs:
//!
//! ```
//! use bytes::BytesMut;
//! use kwire::conn::Received;
//! use kwire::conn::tokio::{ClientCodec, ClientRequest, ServerCodec};
//! use kwire::messages::ResponseBodyView;
//! use kwire::messages::api_versions::{ApiVersionsRequest, ApiVersionsResponse};
//! use tokio_util::codec::{Decoder, Encoder};
//!
//! let (mut client, mut server) = (ClientCodec::new(Some("c")), ServerCodec::new());
//! let (mut to_server, mut to_client) = (BytesMut::new(), BytesMut::new());
//! client.encode(ClientRequest { body: &ApiVersionsRequest::default(), version: 3, payload: "hello" }, &mut to_server)?;
//!
//! let frame = server.decode(&mut to_server)?.expect("a whole request");
//! let Received::Request(r) = frame.received()? else { unreachable!() };
//! server.encode((r.reply_to(), &ApiVersionsResponse::default()), &mut to_client)?;
//!
//! let answer = client.decode(&mut to_client)?.expect("a whole response");
//! assert_eq!(answer.request.payload, "hello");
//! let (response, version) = answer.response()?;
//! assert!(matches!(response.body, ResponseBodyView::ApiVersions(_)));
//! assert_eq!(version, 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::io;
use std::vec::Vec;

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::frame_buf::DEFAULT_BASE_CAPACITY;
use super::server::read_request;
use super::{
    ConnError, InFlight, Pending, Received, ReplyTo, ServerConn, frame_expects_response, read_response,
};
use crate::ApiKey;
use crate::codec::dispatch::{self, Response};
use crate::codec::encode::AnyBody;
use crate::codec::frame::{self, DEFAULT_MAX_FRAME_SIZE, FrameError, FrameStatus};
use crate::codec::frame::{RequestHeader, ResponseHeaderView};
use crate::codec::types::Versions;

/// The error of the codecs: framing, encoding, or the I/O below them.
#[derive(Debug)]
#[non_exhaustive]
pub enum CodecError {
    /// The stream's framing is broken (a bad size prefix); it sticks.
    Frame(FrameError),
    /// A response could not be encoded (see [`ServerConn::encode_response`]).
    Conn(ConnError),
    /// The transport failed.
    Io(io::Error),
}

impl From<io::Error> for CodecError {
    fn from(e: io::Error) -> Self {
        CodecError::Io(e)
    }
}

impl From<FrameError> for CodecError {
    fn from(e: FrameError) -> Self {
        CodecError::Frame(e)
    }
}

impl From<ConnError> for CodecError {
    fn from(e: ConnError) -> Self {
        CodecError::Conn(e)
    }
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecError::Frame(e) => e.fmt(f),
            CodecError::Conn(e) => e.fmt(f),
            CodecError::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CodecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CodecError::Frame(e) => Some(e),
            CodecError::Conn(e) => Some(e),
            CodecError::Io(e) => Some(e),
        }
    }
}

/// Size-prefixed frames: decodes to the bytes after the prefix, encodes bytes with their
/// prefix. The limits and errors of [`FrameBuf`](super::FrameBuf).
#[derive(Clone, Debug)]
pub struct FrameCodec {
    max_frame: usize,
    base: usize,
    error: Option<FrameError>,
}

impl Default for FrameCodec {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME_SIZE)
    }
}

impl FrameCodec {
    /// A codec refusing frames over `max_frame_size` bytes (after the prefix).
    pub fn new(max_frame_size: usize) -> Self {
        FrameCodec { max_frame: max_frame_size, base: DEFAULT_BASE_CAPACITY, error: None }
    }

    /// The largest frame accepted.
    pub const fn max_frame_size(&self) -> usize {
        self.max_frame
    }

    /// Changes the largest frame accepted, from the next frame.
    pub fn set_max_frame_size(&mut self, max_frame_size: usize) {
        self.max_frame = max_frame_size;
    }

    /// The framing error that ended the stream, if any.
    pub const fn error(&self) -> Option<FrameError> {
        self.error
    }
}

impl Decoder for FrameCodec {
    type Item = Bytes;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, CodecError> {
        if let Some(e) = self.error {
            return Err(e.into());
        }
        match frame::split_frame(src, self.max_frame) {
            Ok(FrameStatus::Complete { consumed, .. }) => {
                let mut frame = src.split_to(consumed);
                frame.advance(4);
                Ok(Some(frame.freeze()))
            }
            Ok(FrameStatus::Incomplete { needed }) => {
                // Room for what arrives next, never the whole claimed frame at once.
                src.reserve(needed.min(src.len().max(self.base)));
                Ok(None)
            }
            Err(e) => {
                self.error = Some(e);
                Err(e.into())
            }
        }
    }
}

fn put_frame(bytes: &[u8], dst: &mut BytesMut) -> Result<(), CodecError> {
    let len = i32::try_from(bytes.len())
        .map_err(|_| ConnError::Encode(crate::EncodeError::TooLong { field: "Frame.size" }))?;
    dst.reserve(4 + bytes.len());
    dst.extend_from_slice(&len.to_be_bytes());
    dst.extend_from_slice(bytes);
    Ok(())
}

impl Encoder<&[u8]> for FrameCodec {
    type Error = CodecError;

    /// Writes `item` (a frame without its prefix) with its size prefix.
    fn encode(&mut self, item: &[u8], dst: &mut BytesMut) -> Result<(), CodecError> {
        put_frame(item, dst)
    }
}

impl Encoder<Bytes> for FrameCodec {
    type Error = CodecError;

    fn encode(&mut self, item: Bytes, dst: &mut BytesMut) -> Result<(), CodecError> {
        put_frame(&item, dst)
    }
}

/// A request frame [`ServerCodec`] decoded: framing checked, the request read on demand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestFrame {
    frame: Bytes,
    api_versions_max: i16,
}

impl RequestFrame {
    /// The frame after its size prefix.
    pub fn bytes(&self) -> &Bytes {
        &self.frame
    }

    /// The frame, owned.
    pub fn into_bytes(self) -> Bytes {
        self.frame
    }

    /// The request, as [`ServerConn::next_request`] reads it (typed views borrowed from
    /// this frame), or why it cannot be read.
    pub fn received(&self) -> Result<Received<'_>, ConnError> {
        read_request(&self.frame, self.api_versions_max)
    }
}

/// Apache Kafka's answer to an ApiVersions request of a version not served (see
/// [`ServerConn::encode_api_versions_unsupported`]), as an item for [`ServerCodec`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApiVersionsUnsupported {
    /// The request answered.
    pub reply_to: ReplyTo,
    /// The ApiVersions versions served.
    pub supported: Versions,
}

/// A broker's codec: decodes [`RequestFrame`]s, encodes responses as `(ReplyTo, &body)`
/// with the right response header, and [`ApiVersionsUnsupported`] answers.
#[derive(Clone, Debug, Default)]
pub struct ServerCodec {
    frames: FrameCodec,
    api_versions_max: Option<i16>,
}

impl ServerCodec {
    /// A codec refusing frames over Apache Kafka's default 100 MiB.
    pub fn new() -> Self {
        Self::with_frame_codec(FrameCodec::default())
    }

    /// A codec framing with `frames` (its limit).
    pub fn with_frame_codec(frames: FrameCodec) -> Self {
        ServerCodec { frames, api_versions_max: None }
    }

    /// The frame codec, e.g. to change its limit after authentication.
    pub fn frame_codec_mut(&mut self) -> &mut FrameCodec {
        &mut self.frames
    }

    /// The highest ApiVersions version answered normally (see
    /// [`ServerConn::set_api_versions_max`]).
    pub fn set_api_versions_max(&mut self, max: i16) {
        self.api_versions_max = Some(max.min(ApiKey::ApiVersions.request_versions().max));
    }
}

impl Decoder for ServerCodec {
    type Item = RequestFrame;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RequestFrame>, CodecError> {
        let api_versions_max = self.api_versions_max.unwrap_or(ApiKey::ApiVersions.request_versions().max);
        Ok(self.frames.decode(src)?.map(|frame| RequestFrame { frame, api_versions_max }))
    }
}

impl<B: AnyBody> Encoder<(ReplyTo, &B)> for ServerCodec {
    type Error = CodecError;

    fn encode(&mut self, (reply_to, body): (ReplyTo, &B), dst: &mut BytesMut) -> Result<(), CodecError> {
        let n = ServerConn::response_len(reply_to, body)?;
        let at = dst.len();
        dst.resize(at + n, 0);
        if let Err(e) = ServerConn::encode_response_into(reply_to, body, &mut dst[at..]) {
            dst.truncate(at);
            return Err(e.into());
        }
        Ok(())
    }
}

impl Encoder<ApiVersionsUnsupported> for ServerCodec {
    type Error = CodecError;

    fn encode(&mut self, item: ApiVersionsUnsupported, dst: &mut BytesMut) -> Result<(), CodecError> {
        let mut out = Vec::new();
        ServerConn::encode_api_versions_unsupported(item.reply_to, item.supported, &mut out)?;
        dst.extend_from_slice(&out);
        Ok(())
    }
}

/// A response frame [`ClientCodec`] decoded, paired with its request; the body is read on
/// demand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponseFrame<T = ()> {
    frame: Bytes,
    /// The request it answers, with its payload.
    pub request: Pending<T>,
}

impl<T> ResponseFrame<T> {
    /// The frame after its size prefix.
    pub fn bytes(&self) -> &Bytes {
        &self.frame
    }

    /// The response as typed views, with the version its body was read at (see
    /// [`read_response`]: ApiVersions falls back to version 0).
    pub fn response(&self) -> Result<(Response<'_>, i16), FrameError> {
        read_response(&self.frame, self.request.api_key, self.request.api_version)
    }
}

/// A request for [`ClientCodec`]: a body, its version and the payload kept until its
/// response.
#[derive(Debug)]
pub struct ClientRequest<'b, B, T = ()> {
    /// The body.
    pub body: &'b B,
    /// Its version.
    pub version: i16,
    /// What comes back with the response.
    pub payload: T,
}

/// A client's codec: encodes [`ClientRequest`]s with fresh correlation ids (tracked in an
/// [`InFlight`] table unless they get no response), decodes [`ResponseFrame`]s paired with
/// their requests. A response whose correlation id is not the oldest request's is a
/// [`CodecError::Conn`] ([`ConnError::UnknownCorrelationId`] or [`ConnError::OutOfOrder`]);
/// close the connection.
#[derive(Debug)]
pub struct ClientCodec<T = ()> {
    frames: FrameCodec,
    in_flight: InFlight<T>,
    next_id: i32,
    client_id: Option<std::string::String>,
}

impl<T> ClientCodec<T> {
    /// A codec sending `client_id`, with Kafka's default frame limit and
    /// [`super::DEFAULT_MAX_IN_FLIGHT`] requests in flight at most.
    pub fn new(client_id: Option<&str>) -> Self {
        Self::with_limits(client_id, FrameCodec::default(), InFlight::new())
    }

    /// A codec framing with `frames` and tracking requests in `in_flight`.
    pub fn with_limits(client_id: Option<&str>, frames: FrameCodec, in_flight: InFlight<T>) -> Self {
        ClientCodec { frames, in_flight, next_id: 0, client_id: client_id.map(Into::into) }
    }

    /// The requests awaiting responses.
    pub fn in_flight(&self) -> &InFlight<T> {
        &self.in_flight
    }
}

impl<T> Decoder for ClientCodec<T> {
    type Item = ResponseFrame<T>;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<ResponseFrame<T>>, CodecError> {
        let Some(frame) = self.frames.decode(src)? else { return Ok(None) };
        let (header, _) = ResponseHeaderView::parse(&frame, 0).map_err(ConnError::from)?;
        let request = self.in_flight.complete(header.correlation_id())?;
        Ok(Some(ResponseFrame { frame, request }))
    }
}

impl<B: AnyBody, T> Encoder<ClientRequest<'_, B, T>> for ClientCodec<T> {
    type Error = CodecError;

    fn encode(&mut self, item: ClientRequest<'_, B, T>, dst: &mut BytesMut) -> Result<(), CodecError> {
        let correlation_id = self.next_id;
        let header = RequestHeader {
            correlation_id,
            client_id: self.client_id.as_deref(),
            unknown_tagged_fields: &[],
        };
        let n = dispatch::request_len(item.body, item.version, &header).map_err(ConnError::from)?;
        let at = dst.len();
        dst.resize(at + n, 0);
        let tracked = (|| {
            dispatch::encode_request_with(item.body, item.version, &header, &mut dst[at..])?;
            if frame_expects_response(&dst[at + 4..])? {
                self.in_flight.push(correlation_id, item.body.api_key(), item.version, item.payload)?;
            }
            Ok::<(), ConnError>(())
        })();
        if let Err(e) = tracked {
            dst.truncate(at);
            return Err(e.into());
        }
        self.next_id = if correlation_id >= i32::MAX - 8 { 0 } else { correlation_id.wrapping_add(1) };
        Ok(())
    }
}
