//! Framing and headers: the size prefix that frames every message, and the request and
//! response headers. Nothing here depends on the messages; [`crate::codec::dispatch`] puts frames,
//! headers and bodies together.
//!
//! Every Kafka message travels as an int32 size followed by that many bytes: a header,
//! then the body. The header's version follows from the API key and version (see
//! [`crate::ApiKey::request_header_version`] and [`crate::ApiKey::response_header_version`]).
//! The client id is always an int16-length nullable string, even in flexible header
//! versions.

use core::fmt;

use crate::codec::error::{DecodeError, DecodeErrorKind, EncodeError};
use crate::codec::types::RawTaggedField;
use crate::codec::wire::{self, Reader, TaggedIter, TaggedSection, Writer};

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
pub fn split_frame(buf: &[u8], max_size: usize) -> Result<FrameStatus<'_>, FrameError> {
    let Some(prefix) = buf.first_chunk::<4>() else {
        return Ok(FrameStatus::Incomplete { needed: 4 - buf.len() });
    };
    let size = i32::from_be_bytes(*prefix);
    let Ok(size) = usize::try_from(size) else {
        return Err(DecodeError::new(DecodeErrorKind::InvalidLength(size), 0, "Frame.size").into());
    };
    if size > max_size {
        let kind =
            DecodeErrorKind::FrameTooLarge { size: size as u32, max: max_size.min(u32::MAX as usize) as u32 };
        return Err(DecodeError::new(kind, 0, "Frame.size").into());
    }
    match buf.get(4..4 + size) {
        Some(frame) => Ok(FrameStatus::Complete { frame, consumed: 4 + size }),
        None => Ok(FrameStatus::Incomplete { needed: 4 + size - buf.len() }),
    }
}

/// The size a frame's prefix declares: the int32 at the front of `buf` (a stream buffer or
/// a frame with its prefix), as sent (it may be negative; [`split_frame`] checks it).
/// `None` before four bytes are there.
#[inline]
pub fn size_prefix(buf: &[u8]) -> Option<i32> {
    buf.first_chunk::<4>().map(|b| i32::from_be_bytes(*b))
}

/// The API key a request frame (after its size prefix) starts with, as sent; `None` before
/// two bytes are there.
#[inline]
pub fn request_api_key(frame: &[u8]) -> Option<i16> {
    frame.first_chunk::<2>().map(|b| i16::from_be_bytes(*b))
}

/// The API key, API version and correlation id a request frame (after its size prefix)
/// starts with, as sent; `None` before eight bytes are there.
#[inline]
pub fn request_ids(frame: &[u8]) -> Option<(i16, i16, i32)> {
    peek_ids(frame).ok()
}

/// The API version a request frame (after its size prefix) carries, as sent; `None` before
/// four bytes are there (a frame cut inside its header still shows it).
#[inline]
#[cfg_attr(not(feature = "capture"), allow(dead_code, reason = "read by the capture reader"))]
pub(crate) fn request_api_version(frame: &[u8]) -> Option<i16> {
    frame.get(2..4).map(|b| i16::from_be_bytes([b[0], b[1]]))
}

/// The length of the client id a request frame (after its size prefix) carries: the
/// nullable string's int16 length after the correlation id, as sent (`-1`: null); `None`
/// before ten bytes are there.
#[inline]
#[cfg_attr(not(feature = "capture"), allow(dead_code, reason = "read by the capture reader"))]
pub(crate) fn request_client_id_len(frame: &[u8]) -> Option<i16> {
    frame.get(8..10).map(|b| i16::from_be_bytes([b[0], b[1]]))
}

/// The correlation id a response frame (after its size prefix) starts with; `None` before
/// four bytes are there.
#[inline]
pub fn response_correlation_id(frame: &[u8]) -> Option<i32> {
    frame.first_chunk::<4>().map(|b| i32::from_be_bytes(*b))
}

/// The size prefix of a frame of `len` bytes after it, for code that writes the rest
/// itself (a SASL token after a SaslHandshake v0, which travels framed but headerless).
/// Fails when `len` does not fit the int32.
#[inline]
pub fn encode_size_prefix(len: usize) -> Result<[u8; 4], EncodeError> {
    i32::try_from(len).map(i32::to_be_bytes).map_err(|_| EncodeError::TooLong { field: "Frame.size" })
}

/// The size prefix and the response header (version `header_version`, no tagged fields)
/// of a response whose body of `body_len` bytes the caller writes itself: the first `len`
/// bytes of the array, as `(bytes, len)`. Fails when the frame does not fit the int32 size.
pub fn encode_response_head(
    correlation_id: i32,
    header_version: i16,
    body_len: usize,
) -> Result<([u8; 9], usize), EncodeError> {
    let header_len = if header_version >= 1 { 5 } else { 4 };
    let size = body_len.checked_add(header_len).ok_or(EncodeError::TooLong { field: "Frame.size" })?;
    let mut head = [0u8; 9];
    head[..4].copy_from_slice(&encode_size_prefix(size)?);
    head[4..8].copy_from_slice(&correlation_id.to_be_bytes());
    // Header v1's tagged-field count is the 0 already there.
    Ok((head, 4 + header_len))
}

/// Why a frame could not be split, parsed or dispatched: the one error type of framing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
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
        api_key: crate::ApiKey,
        /// The version sent.
        api_version: i16,
        /// The correlation id sent (`-1` for a response, which is parsed after the fact).
        correlation_id: i32,
    },
    /// The size prefix, header or body is malformed.
    Decode(DecodeError),
}

impl From<DecodeError> for FrameError {
    fn from(e: DecodeError) -> Self {
        FrameError::Decode(e)
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::UnsupportedApiKey { api_key, api_version, correlation_id } => {
                write!(
                    f,
                    "unsupported API key {api_key} (version {api_version}, correlation id {correlation_id})"
                )
            }
            FrameError::UnsupportedVersion { api_key, api_version, correlation_id } => write!(
                f,
                "unsupported version {api_version} of {} (API key {}, correlation id {correlation_id})",
                api_key.name(),
                api_key.to_i16()
            ),
            FrameError::Decode(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for FrameError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            FrameError::Decode(e) => Some(e),
            _ => None,
        }
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

impl<'a> RequestHeaderView<'a> {
    /// Parses the request header at the start of `frame` (after the size prefix), whose
    /// version the caller worked out from its API key and version (see
    /// [`RequestHeaderView::peek`]). Returns the header and the offset of the body.
    pub fn parse(frame: &'a [u8], version: i16) -> Result<(Self, usize), DecodeError> {
        let mut r = Reader::new(frame);
        let (api_key, api_version, correlation_id) = peek_ids(frame)?;
        r.take(8, "RequestHeader.CorrelationId")?;
        let client_id = r.nullable_str(false, "RequestHeader.ClientId")?;
        let tagged = if version >= 2 {
            r.tagged_fields("RequestHeader._tagged_fields", |_, _| Ok(false))?
        } else {
            TaggedSection::EMPTY
        };
        let header = RequestHeaderView {
            bytes: r.since(0),
            api_key,
            api_version,
            correlation_id,
            client_id,
            version,
            tagged,
        };
        Ok((header, r.pos()))
    }

    /// The fields every request header starts with, for any API key, known or not: the
    /// API key and version (what decides the header version and the body's type), the
    /// correlation id and the client id. Borrowed, nothing allocated; the client id is an
    /// int16-length nullable string in every header version and must be UTF-8. Header v2's
    /// tagged fields, which follow it, are not read.
    pub fn peek(frame: &'a [u8]) -> Result<RequestHeaderPeek<'a>, DecodeError> {
        let (api_key, api_version, correlation_id) = peek_ids(frame)?;
        let mut r = Reader::new(frame);
        r.take(8, "RequestHeader.CorrelationId")?;
        let client_id = r.nullable_str(false, "RequestHeader.ClientId")?;
        Ok(RequestHeaderPeek { api_key, api_version, correlation_id, client_id, len: r.pos() })
    }
}

/// The API key, API version and correlation id at the start of a request frame.
pub(crate) fn peek_ids(frame: &[u8]) -> Result<(i16, i16, i32), DecodeError> {
    let mut r = Reader::new(frame);
    Ok((
        r.i16("RequestHeader.RequestApiKey")?,
        r.i16("RequestHeader.RequestApiVersion")?,
        r.i32("RequestHeader.CorrelationId")?,
    ))
}

/// What [`RequestHeaderView::peek`] reads: the fields every request header starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHeaderPeek<'a> {
    /// The API key as sent (a raw wire value: the key may be one this crate does not know;
    /// see [`RequestHeaderPeek::key`]).
    pub api_key: i16,
    /// The API version as sent.
    pub api_version: i16,
    /// The correlation id, echoed in the response.
    pub correlation_id: i32,
    /// The client id (`None` when sent as null).
    pub client_id: Option<&'a str>,
    /// The bytes read: up to the end of the client id.
    pub len: usize,
}

impl RequestHeaderPeek<'_> {
    /// The API, if this crate knows its key (whether or not this build compiles it in,
    /// see [`crate::ApiKey::is_enabled`]).
    pub const fn key(&self) -> Option<crate::ApiKey> {
        crate::ApiKey::from_i16(self.api_key)
    }
}

/// [`crate::conn::expects_response`] for a request frame (after its size prefix) that need not be
/// parsed whole, for any API key: for Produce, reads the header and the two fields before
/// `acks` with the checked reader (works without the `api-produce` feature); for anything
/// else, `true` without reading more than the API key.
pub fn frame_expects_response(frame: &[u8]) -> Result<bool, DecodeError> {
    let peek = RequestHeaderView::peek(frame)?;
    if peek.api_key != crate::ApiKey::Produce.to_i16() {
        return Ok(true);
    }
    let key = crate::ApiKey::Produce;
    let (_, at) = RequestHeaderView::parse(frame, key.request_header_version(peek.api_version))?;
    let body = frame.get(at..).unwrap_or_default();
    let flexible = key.flexible_versions().contains(peek.api_version);
    let mut r = Reader::new(body);
    if peek.api_version >= 3 {
        r.nullable_str_bytes(flexible, "ProduceRequest.TransactionalId").map_err(|e| e.shifted(at))?;
    }
    let acks = r.i16("ProduceRequest.Acks").map_err(|e| e.shifted(at))?;
    Ok(acks != 0)
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

impl<'a> ResponseHeaderView<'a> {
    /// Parses the response header (of `version`) at the start of `frame`; returns it and
    /// the offset of the body.
    pub fn parse(frame: &'a [u8], version: i16) -> Result<(Self, usize), DecodeError> {
        let mut r = Reader::new(frame);
        let correlation_id = r.i32("ResponseHeader.CorrelationId")?;
        let tagged = if version >= 1 {
            r.tagged_fields("ResponseHeader._tagged_fields", |_, _| Ok(false))?
        } else {
            TaggedSection::EMPTY
        };
        Ok((ResponseHeaderView { bytes: r.since(0), correlation_id, version, tagged }, r.pos()))
    }
}

/// Request header fields for [`crate::codec::dispatch::encode_request_with`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHeader<'a> {
    /// The correlation id.
    pub correlation_id: i32,
    /// The client id (`None` sends null).
    pub client_id: Option<&'a str>,
    /// Tagged fields for header v2, in ascending tag order.
    pub unknown_tagged_fields: &'a [RawTaggedField<'a>],
}

impl RequestHeader<'_> {
    /// The exact size of this header at header `version` (1 or 2).
    #[inline]
    pub fn encoded_len(&self, version: i16) -> Result<usize, EncodeError> {
        let client_id = match self.client_id {
            Some(s) => wire::string_size(s.len(), false, "RequestHeader.ClientId")?,
            None => wire::null_size(false, false),
        };
        // An empty tagged section (the usual one) is its count byte.
        let tags = match (version >= 2, self.unknown_tagged_fields) {
            (false, _) => 0,
            (true, []) => 1,
            (true, unknown) => wire::raw_tagged_fields_size(unknown, "RequestHeader._tagged_fields")?,
        };
        Ok(8 + client_id + tags)
    }

    /// Writes this header, sized by [`RequestHeader::encoded_len`], for a request of
    /// `api_key` at `api_version`.
    #[inline]
    pub(crate) fn write(&self, w: &mut Writer<'_>, api_key: i16, api_version: i16, version: i16) {
        w.fixed(|b: &mut [u8; 8]| {
            b[0..2].copy_from_slice(&api_key.to_be_bytes());
            b[2..4].copy_from_slice(&api_version.to_be_bytes());
            b[4..8].copy_from_slice(&self.correlation_id.to_be_bytes());
        });
        w.nullable_str(self.client_id, false);
        if version >= 2 {
            w.raw_tagged_fields(self.unknown_tagged_fields);
        }
    }
}

/// Response header fields for [`crate::codec::dispatch::encode_response_with`]: the value type
/// beside [`ResponseHeaderView`], as [`RequestHeader`] is beside [`RequestHeaderView`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResponseHeader<'a> {
    /// The correlation id of the request answered.
    pub correlation_id: i32,
    /// Tagged fields for header v1, in ascending tag order (dropped at header v0).
    pub unknown_tagged_fields: &'a [RawTaggedField<'a>],
}

impl ResponseHeader<'_> {
    /// The exact size of this header at header `version` (0 or 1).
    #[inline]
    pub fn encoded_len(&self, version: i16) -> Result<usize, EncodeError> {
        let tags = if version >= 1 {
            wire::raw_tagged_fields_size(self.unknown_tagged_fields, "ResponseHeader._tagged_fields")?
        } else {
            0
        };
        Ok(4 + tags)
    }

    /// Writes this header, sized by [`ResponseHeader::encoded_len`].
    #[inline]
    pub(crate) fn write(&self, w: &mut Writer<'_>, version: i16) {
        w.i32(self.correlation_id);
        if version >= 1 {
            w.raw_tagged_fields(self.unknown_tagged_fields);
        }
    }
}
