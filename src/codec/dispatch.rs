//! Frames, headers and bodies together: a request frame dispatched to its typed body view,
//! a response frame read as the answer to a known request, and whole frames encoded in
//! one call.
//!
//! ```
//! use kwire::dispatch;
//! use kwire::frame::{self, FrameStatus};
//! use kwire::messages::{ApiVersionsRequest, RequestBodyView};
//!
//! // A client encodes a request frame...
//! let mut buf = [0u8; 64];
//! let body = ApiVersionsRequest::default();
//! let n = dispatch::encode_request(&body, 3, 7, Some("my-client"), &mut buf)?;
//!
//! // ...and a broker splits it off its stream and dispatches it.
//! let FrameStatus::Complete { frame: bytes, .. } = frame::split_frame(&buf[..n], frame::DEFAULT_MAX_FRAME_SIZE)? else {
//!     unreachable!()
//! };
//! let request = dispatch::parse_request(bytes)?;
//! assert_eq!(request.header.correlation_id(), 7);
//! assert_eq!(request.header.client_id(), Some("my-client"));
//! assert!(matches!(request.body, RequestBodyView::ApiVersions(_)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::ApiKey;
use crate::codec::encode::AnyBody;
use crate::codec::error::{DecodeError, EncodeError};
use crate::codec::frame::{FrameError, RequestHeader, RequestHeaderView, ResponseHeader, ResponseHeaderView};
use crate::codec::messages::{RequestBodyView, ResponseBodyView};
use crate::codec::wire::Writer;

/// A request frame split into its header and a typed body view.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The header.
    pub header: RequestHeaderView<'a>,
    /// The body.
    pub body: RequestBodyView<'a>,
}

/// A response frame split into its header and a typed body view.
#[derive(Clone, Copy, Debug)]
pub struct Response<'a> {
    /// The header.
    pub header: ResponseHeaderView<'a>,
    /// The body.
    pub body: ResponseBodyView<'a>,
}

/// Parses a request frame (without its size prefix) into its header and body view.
/// Offsets in errors count from the start of `frame`.
pub fn parse_request(frame: &[u8]) -> Result<Request<'_>, FrameError> {
    parse_request_with(frame, RequestBodyView::new)
}

/// [`parse_request`] for a frame whose body may be followed by other bytes: the `_prefix`
/// convention of views ([`RequestBodyView::new_prefix`]), and how Apache Kafka's broker
/// reads requests (librdkafka 2.16 sends three bytes after the body of its all-topics
/// Metadata v9+ requests). Returns the request and the number of bytes after the body.
pub fn parse_request_prefix(frame: &[u8]) -> Result<(Request<'_>, usize), FrameError> {
    let request = parse_request_with(frame, RequestBodyView::new_prefix)?;
    let ignored = frame.len() - request.header.as_bytes().len() - request.body.as_bytes().len();
    Ok((request, ignored))
}

fn parse_request_with<'a>(
    frame: &'a [u8],
    body_view: impl FnOnce(&'a [u8], ApiKey, i16) -> Result<RequestBodyView<'a>, DecodeError>,
) -> Result<Request<'a>, FrameError> {
    let (api_key, api_version, correlation_id) = crate::codec::frame::peek_ids(frame)?;
    let Some(key) = ApiKey::from_i16(api_key).filter(|k| k.is_enabled()) else {
        return Err(FrameError::UnsupportedApiKey { api_key, api_version, correlation_id });
    };
    if !key.request_versions().contains(api_version) {
        return Err(FrameError::UnsupportedVersion { api_key: key, api_version, correlation_id });
    }
    let (header, at) = RequestHeaderView::parse(frame, key.request_header_version(api_version))?;
    let body = frame.get(at..).unwrap_or_default();
    let body = body_view(body, key, api_version).map_err(|e| e.shifted(at))?;
    Ok(Request { header, body })
}

/// Parses a response frame (without its size prefix) to a request of `api_key` at
/// `api_version`; responses do not say what they answer.
pub fn parse_response(frame: &[u8], api_key: ApiKey, api_version: i16) -> Result<Response<'_>, FrameError> {
    if !api_key.response_versions().contains(api_version) {
        return Err(FrameError::UnsupportedVersion { api_key, api_version, correlation_id: -1 });
    }
    let (header, at) = ResponseHeaderView::parse(frame, api_key.response_header_version(api_version))?;
    let body = frame.get(at..).unwrap_or_default();
    let body = ResponseBodyView::new(body, api_key, api_version).map_err(|e| e.shifted(at))?;
    Ok(Response { header, body })
}

fn frame_size(header_len: usize, body_len: usize) -> Result<usize, EncodeError> {
    let len = header_len.checked_add(body_len).filter(|&n| n <= i32::MAX as usize);
    len.map(|n| n + 4).ok_or(EncodeError::TooLong { field: "Frame.size" })
}

/// The exact size of a whole request frame: size prefix, header, body.
pub fn request_len(
    body: &impl AnyBody,
    version: i16,
    header: &RequestHeader<'_>,
) -> Result<usize, EncodeError> {
    let header_version = body.api_key().request_header_version(version);
    frame_size(header.encoded_len(header_version)?, body.encoded_len(version)?)
}

/// Encodes a whole request frame (size prefix, header, body) into the front of `buf` and
/// returns its length.
pub fn encode_request(
    body: &impl AnyBody,
    version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
    buf: &mut [u8],
) -> Result<usize, EncodeError> {
    let header = RequestHeader { correlation_id, client_id, unknown_tagged_fields: &[] };
    encode_request_with(body, version, &header, buf)
}

/// [`encode_request`] with every header field, including header tagged fields.
pub fn encode_request_with(
    body: &impl AnyBody,
    version: i16,
    header: &RequestHeader<'_>,
    buf: &mut [u8],
) -> Result<usize, EncodeError> {
    let api_key = body.api_key();
    let header_version = api_key.request_header_version(version);
    let header_len = header.encoded_len(header_version)?;
    let (total, out) = encode_frame_body(body, version, header_len, buf)?;
    let mut w = Writer::new(out);
    w.i32((total - 4) as i32);
    header.write(&mut w, api_key.to_i16(), version, header_version);
    Ok(total)
}

/// Encodes `body` after the frame's size prefix and `header_len` bytes of header, and
/// returns the frame's length with the front of `buf` to write those into. The errors are
/// those of sizing first: the body's, then the frame's length, then a short buffer.
#[inline]
fn encode_frame_body<'b>(
    body: &impl AnyBody,
    version: i16,
    header_len: usize,
    buf: &'b mut [u8],
) -> Result<(usize, &'b mut [u8]), EncodeError> {
    let available = buf.len();
    let too_small = |needed: usize| EncodeError::BufferTooSmall { needed, available };
    let head = 4 + header_len;
    if available < head {
        return Err(too_small(frame_size(header_len, body.encoded_len(version)?)?));
    }
    let (out, rest) = buf.split_at_mut(head);
    match body.encode(version, rest) {
        Ok(body_len) => Ok((frame_size(header_len, body_len)?, out)),
        Err(EncodeError::BufferTooSmall { needed, .. }) => Err(too_small(frame_size(header_len, needed)?)),
        Err(e) => Err(e),
    }
}

/// The exact size of a whole response frame (with an empty response header).
pub fn response_len(body: &impl AnyBody, version: i16) -> Result<usize, EncodeError> {
    response_len_with(body, version, &ResponseHeader::default())
}

/// The exact size of a whole response frame with this `header`.
pub fn response_len_with(
    body: &impl AnyBody,
    version: i16,
    header: &ResponseHeader<'_>,
) -> Result<usize, EncodeError> {
    let header_version = body.api_key().response_header_version(version);
    frame_size(header.encoded_len(header_version)?, body.encoded_len(version)?)
}

/// Encodes a whole response frame (size prefix, header, body) into the front of `buf`
/// and returns its length. The response header's version follows from the body's API and
/// `version` (always v0 for ApiVersions).
pub fn encode_response(
    body: &impl AnyBody,
    version: i16,
    correlation_id: i32,
    buf: &mut [u8],
) -> Result<usize, EncodeError> {
    let header = ResponseHeader { correlation_id, unknown_tagged_fields: &[] };
    encode_response_with(body, version, &header, buf)
}

/// [`encode_response`] with every header field, including header tagged fields.
pub fn encode_response_with(
    body: &impl AnyBody,
    version: i16,
    header: &ResponseHeader<'_>,
    buf: &mut [u8],
) -> Result<usize, EncodeError> {
    let header_version = body.api_key().response_header_version(version);
    let header_len = header.encoded_len(header_version)?;
    let (total, out) = encode_frame_body(body, version, header_len, buf)?;
    let mut w = Writer::new(out);
    w.i32((total - 4) as i32);
    header.write(&mut w, header_version);
    Ok(total)
}
