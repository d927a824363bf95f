//! Frames and headers: the size prefix, request and response headers, request dispatch
//! and whole-frame encoding.
//!
//! Every Kafka message travels as an int32 size followed by that many bytes: a header,
//! then the body. The header's version follows from the API key and version (see
//! [`ApiKey::request_header_version`] and [`ApiKey::response_header_version`]); this
//! module works it out, so callers never pass it. The client id is always an int16-length
//! nullable string, even in flexible header versions.
//!
//! ```
//! use kwire::frame::{self, FrameStatus};
//! use kwire::messages::{ApiVersionsRequest, RequestBodyView};
//!
//! // A client encodes a request frame...
//! let mut buf = [0u8; 64];
//! let body = ApiVersionsRequest::default();
//! let n = frame::encode_request(&body, 3, 7, Some("my-client"), &mut buf)?;
//!
//! // ...and a broker splits it off its stream and dispatches it.
//! let FrameStatus::Complete { frame: bytes, .. } = frame::split_frame(&buf[..n], frame::DEFAULT_MAX_FRAME_SIZE)? else {
//!     unreachable!()
//! };
//! let request = frame::parse_request(bytes)?;
//! assert_eq!(request.header.correlation_id(), 7);
//! assert_eq!(request.header.client_id(), Some("my-client"));
//! assert!(matches!(request.body, RequestBodyView::ApiVersions(_)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;

use crate::codec::AnyBody;
use crate::error::{DecodeError, DecodeErrorKind, EncodeError};
use crate::messages::{ApiKey, RequestBodyView, ResponseBodyView};
use crate::types::RawTaggedField;
use crate::wire::{self, Reader, TaggedIter, TaggedSection, Writer};

/// Apache Kafka's default limit on a request's size (`socket.request.max.bytes`, 100 MiB).
pub const DEFAULT_MAX_FRAME_SIZE: usize = 104_857_600;

/// What [`split_frame`] found at the front of a stream buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameStatus<'a> {
    /// A whole frame is there.
    Complete {
        /// The frame after its size prefix: header and body.
        frame: &'a [u8],
        /// Bytes to drop from the front of the buffer: the prefix and the frame.
        consumed: usize,
    },
    /// The frame is not complete yet.
    Incomplete {
        /// How many more bytes are needed at least (exactly, once the prefix is there).
        needed: usize,
    },
}

/// Finds the first frame in `buf`, a buffer filled from a stream. A negative size, or one
/// over `max_size`, is an error as soon as the 4-byte prefix is there, before any of the
/// frame is buffered.
pub fn split_frame(buf: &[u8], max_size: usize) -> Result<FrameStatus<'_>, DecodeError> {
    let Some(prefix) = buf.first_chunk::<4>() else {
        return Ok(FrameStatus::Incomplete { needed: 4 - buf.len() });
    };
    let size = i32::from_be_bytes(*prefix);
    let Ok(size) = usize::try_from(size) else {
        return Err(DecodeError::new(DecodeErrorKind::InvalidLength(size), 0, "Frame.size"));
    };
    if size > max_size {
        let kind =
            DecodeErrorKind::FrameTooLarge { size: size as u32, max: max_size.min(u32::MAX as usize) as u32 };
        return Err(DecodeError::new(kind, 0, "Frame.size"));
    }
    match buf.get(4..4 + size) {
        Some(frame) => Ok(FrameStatus::Complete { frame, consumed: 4 + size }),
        None => Ok(FrameStatus::Incomplete { needed: 4 + size - buf.len() }),
    }
}

/// A view of a request header (v1 or v2).
#[derive(Clone, Copy, Debug)]
pub struct RequestHeaderView<'a> {
    bytes: &'a [u8],
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    client_id: Option<&'a str>,
    version: i16,
    tagged: TaggedSection<'a>,
}

impl<'a> RequestHeaderView<'a> {
    /// The API key, as sent.
    pub const fn api_key(&self) -> i16 {
        self.api_key
    }
    /// The API version, as sent.
    pub const fn api_version(&self) -> i16 {
        self.api_version
    }
    /// The correlation id, echoed in the response.
    pub const fn correlation_id(&self) -> i32 {
        self.correlation_id
    }
    /// The client id (`None` when sent as null).
    pub const fn client_id(&self) -> Option<&'a str> {
        self.client_id
    }
    /// The header version (1 or 2).
    pub const fn version(&self) -> i16 {
        self.version
    }
    /// The header's bytes.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// The header's tagged fields (v2), as `(tag, bytes)`; Kafka defines none.
    pub fn unknown_tagged_fields(&self) -> TaggedIter<'a> {
        self.tagged.iter()
    }
}

/// A request frame split into its header and a typed body view.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The header.
    pub header: RequestHeaderView<'a>,
    /// The body.
    pub body: RequestBodyView<'a>,
}

/// Why [`parse_request`] could not dispatch a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestError {
    /// The API key is not one this crate supports. Apache Kafka closes the connection.
    UnsupportedApiKey {
        /// The key sent.
        api_key: i16,
        /// The version sent.
        api_version: i16,
        /// The correlation id sent.
        correlation_id: i32,
    },
    /// The API is supported but not in this version. A broker answers ApiVersions with
    /// error 35 (UNSUPPORTED_VERSION) and a version-0 body listing what it supports, under
    /// this correlation id.
    UnsupportedVersion {
        /// The API.
        api_key: ApiKey,
        /// The version sent.
        api_version: i16,
        /// The correlation id sent.
        correlation_id: i32,
    },
    /// The header or body is malformed.
    Decode(DecodeError),
}

impl From<DecodeError> for RequestError {
    fn from(e: DecodeError) -> Self {
        RequestError::Decode(e)
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::UnsupportedApiKey { api_key, api_version, correlation_id } => {
                write!(
                    f,
                    "unsupported API key {api_key} (version {api_version}, correlation id {correlation_id})"
                )
            }
            RequestError::UnsupportedVersion { api_key, api_version, correlation_id } => write!(
                f,
                "unsupported version {api_version} of {} (correlation id {correlation_id})",
                api_key.name()
            ),
            RequestError::Decode(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for RequestError {}

/// Parses a request frame (without its size prefix) into its header and body view.
/// Offsets in errors count from the start of `frame`.
pub fn parse_request(frame: &[u8]) -> Result<Request<'_>, RequestError> {
    let mut r = Reader::new(frame);
    let api_key = r.i16("RequestHeader.RequestApiKey")?;
    let api_version = r.i16("RequestHeader.RequestApiVersion")?;
    let correlation_id = r.i32("RequestHeader.CorrelationId")?;
    let Some(key) = ApiKey::from_i16(api_key) else {
        return Err(RequestError::UnsupportedApiKey { api_key, api_version, correlation_id });
    };
    if !key.request_versions().contains(api_version) {
        return Err(RequestError::UnsupportedVersion { api_key: key, api_version, correlation_id });
    }
    let version = key.request_header_version(api_version);
    let client_id = r.nullable_str(false, "RequestHeader.ClientId")?;
    let tagged =
        if version >= 2 { r.tagged_fields("RequestHeader", |_, _| Ok(false))? } else { TaggedSection::EMPTY };
    let header_len = r.pos();
    let header = RequestHeaderView {
        bytes: r.since(0),
        api_key,
        api_version,
        correlation_id,
        client_id,
        version,
        tagged,
    };
    let body = frame.get(header_len..).unwrap_or_default();
    let body = RequestBodyView::new(key, api_version, body).map_err(|e| e.shifted(header_len))?;
    Ok(Request { header, body })
}

/// A view of a response header (v0 or v1).
#[derive(Clone, Copy, Debug)]
pub struct ResponseHeaderView<'a> {
    bytes: &'a [u8],
    correlation_id: i32,
    version: i16,
    tagged: TaggedSection<'a>,
}

impl<'a> ResponseHeaderView<'a> {
    /// The correlation id of the request this answers.
    pub const fn correlation_id(&self) -> i32 {
        self.correlation_id
    }
    /// The header version (0 or 1).
    pub const fn version(&self) -> i16 {
        self.version
    }
    /// The header's bytes.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// The header's tagged fields (v1), as `(tag, bytes)`; Kafka defines none.
    pub fn unknown_tagged_fields(&self) -> TaggedIter<'a> {
        self.tagged.iter()
    }
}

/// A response frame split into its header and a typed body view.
#[derive(Clone, Copy, Debug)]
pub struct Response<'a> {
    /// The header.
    pub header: ResponseHeaderView<'a>,
    /// The body.
    pub body: ResponseBodyView<'a>,
}

/// Parses a response frame (without its size prefix) to a request of `api_key` at
/// `api_version`; responses do not say what they answer.
pub fn parse_response(frame: &[u8], api_key: ApiKey, api_version: i16) -> Result<Response<'_>, DecodeError> {
    if !api_key.response_versions().contains(api_version) {
        return Err(DecodeError::new(DecodeErrorKind::UnsupportedVersion(api_version), 0, api_key.name()));
    }
    let mut r = Reader::new(frame);
    let correlation_id = r.i32("ResponseHeader.CorrelationId")?;
    let version = api_key.response_header_version(api_version);
    let tagged = if version >= 1 {
        r.tagged_fields("ResponseHeader", |_, _| Ok(false))?
    } else {
        TaggedSection::EMPTY
    };
    let header_len = r.pos();
    let header = ResponseHeaderView { bytes: r.since(0), correlation_id, version, tagged };
    let body = frame.get(header_len..).unwrap_or_default();
    let body = ResponseBodyView::new(api_key, api_version, body).map_err(|e| e.shifted(header_len))?;
    Ok(Response { header, body })
}

/// Request header fields for [`encode_request_with`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHeader<'a> {
    /// The correlation id.
    pub correlation_id: i32,
    /// The client id (`None` sends null).
    pub client_id: Option<&'a str>,
    /// Tagged fields for header v2, in ascending tag order.
    pub unknown_tagged_fields: &'a [RawTaggedField<'a>],
}

fn key_of(body: &impl AnyBody) -> Result<ApiKey, EncodeError> {
    // Every body type this crate defines has an API key in the table.
    ApiKey::from_i16(body.api_key())
        .ok_or(EncodeError::UnsupportedVersion { message: "unknown API", version: -1 })
}

fn header_size(header: &RequestHeader<'_>, version: i16) -> Result<usize, EncodeError> {
    let client_id = match header.client_id {
        Some(s) => wire::string_size(s.len(), false, "RequestHeader.ClientId")?,
        None => wire::null_size(false, false),
    };
    let tags = if version >= 2 {
        wire::raw_tagged_fields_size(header.unknown_tagged_fields, "RequestHeader")?
    } else {
        0
    };
    Ok(8 + client_id + tags)
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
    let header_version = key_of(body)?.request_header_version(version);
    frame_size(header_size(header, header_version)?, body.encoded_len(version)?)
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
    let header_version = key_of(body)?.request_header_version(version);
    let header_len = header_size(header, header_version)?;
    let body_len = body.encoded_len(version)?;
    let total = frame_size(header_len, body_len)?;
    let Some(out) = buf.get_mut(..total) else {
        return Err(EncodeError::BufferTooSmall { needed: total, available: buf.len() });
    };
    let (head, rest) = out.split_at_mut(4 + header_len);
    let mut w = Writer::new(head);
    w.i32((total - 4) as i32);
    w.i16(body.api_key());
    w.i16(version);
    w.i32(header.correlation_id);
    w.nullable_str(header.client_id, false);
    if header_version >= 2 {
        w.raw_tagged_fields(header.unknown_tagged_fields);
    }
    body.write_sized(version, rest);
    Ok(total)
}

/// The exact size of a whole response frame.
pub fn response_len(body: &impl AnyBody, version: i16) -> Result<usize, EncodeError> {
    let header_len = if key_of(body)?.response_header_version(version) >= 1 { 5 } else { 4 };
    frame_size(header_len, body.encoded_len(version)?)
}

/// Encodes a whole response frame (size prefix, header, body) into the front of `buf`
/// and returns its length.
pub fn encode_response(
    body: &impl AnyBody,
    version: i16,
    correlation_id: i32,
    buf: &mut [u8],
) -> Result<usize, EncodeError> {
    let total = response_len(body, version)?;
    let flexible_header = key_of(body)?.response_header_version(version) >= 1;
    let Some(out) = buf.get_mut(..total) else {
        return Err(EncodeError::BufferTooSmall { needed: total, available: buf.len() });
    };
    let (head, rest) = out.split_at_mut(if flexible_header { 9 } else { 8 });
    let mut w = Writer::new(head);
    w.i32((total - 4) as i32);
    w.i32(correlation_id);
    if flexible_header {
        w.uvarint(0);
    }
    body.write_sized(version, rest);
    Ok(total)
}
