//! Whether kwire reads a frame, and what its answer says: the checks a proxy's log and a
//! capture reader make of each frame after it has passed (`kwire proxy`, `kwire decode` of
//! a capture). Frames here are whole frames *without* their 4-byte size prefix.
//!
//! ```
//! use kwire::reflect::inspect::{self, Decoded};
//!
//! // An ApiVersions v3 request whose client software name is cut short.
//! let frame = [0, 18, 0, 3, 0, 0, 0, 1, 0, 1, b'c', 0, 5, b'a'];
//! assert!(matches!(inspect::request(&frame), Decoded::Malformed(_)));
//! ```

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use crate::codec::frame::{self, FrameError};
use crate::codec::messages::{RequestBody, ResponseBody};
use crate::{AnyBody, ApiKey, List, RawTaggedField, dispatch};

/// How kwire read a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// kwire's views read and checked the whole frame.
    Ok,
    /// kwire does not know this API or version: not a fault of the frame.
    Unknown(String),
    /// kwire knows the API and version, and the frame breaks them.
    Malformed(String),
}

impl Decoded {
    /// A word for logs: `ok`, `unknown` or `malformed`.
    pub fn word(&self) -> &'static str {
        match self {
            Decoded::Ok => "ok",
            Decoded::Unknown(_) => "unknown",
            Decoded::Malformed(_) => "malformed",
        }
    }

    /// Why kwire did not read it, if it did not.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Decoded::Ok => None,
            Decoded::Unknown(r) | Decoded::Malformed(r) => Some(r),
        }
    }
}

/// What [`response`] learns of a response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponseInfo {
    /// How kwire's views read it.
    pub decoded: Decoded,
    /// The version its body was read at: the request's, or 0 for an ApiVersions error
    /// answer (brokers answer an ApiVersions version they do not serve with a v0 body, and
    /// clients read it so: [`crate::session::conn::read_response`]).
    pub version: i16,
}

/// Reads a request frame with kwire's views. Bytes after the body are ignored, as Apache
/// Kafka's broker ignores them (librdkafka sends some).
pub fn request(frame: &[u8]) -> Decoded {
    decoded(dispatch::parse_request_prefix(frame).map(|_| ()))
}

/// What a parse of a request frame ([`crate::dispatch::parse_request_prefix`]) that was
/// made already says: [`request`] without parsing again.
pub fn decoded(read: Result<(), FrameError>) -> Decoded {
    match read {
        Ok(()) => Decoded::Ok,
        Err(FrameError::Decode(e)) => Decoded::Malformed(e.to_string()),
        Err(e) => Decoded::Unknown(format!("kwire: {e}")),
    }
}

/// Reads a response to a request of `api_key` at `api_version` with kwire's views.
pub fn response(frame: &[u8], api_key: i16, api_version: i16) -> ResponseInfo {
    let not_read = |why: String| ResponseInfo { decoded: Decoded::Unknown(why), version: api_version };
    let Some(key) = ApiKey::from_i16(api_key) else {
        return not_read(format!("kwire: unsupported API key {api_key} (version {api_version})"));
    };
    if !key.response_versions().contains(api_version) {
        return not_read(format!("kwire: unsupported version {api_version} of {}", key.name()));
    }
    match crate::session::conn::read_response(frame, key, api_version) {
        Ok((_, version)) => ResponseInfo { decoded: Decoded::Ok, version },
        Err(e) => ResponseInfo { decoded: Decoded::Malformed(e.to_string()), version: api_version },
    }
}

/// The non-zero error codes of a response read at `version` ([`ResponseInfo::version`]), in
/// wire order; none when kwire cannot read it. A walk of the body by its schema: call it
/// only when the codes are wanted.
pub fn errors(frame: &[u8], api_key: i16, version: i16) -> Vec<i16> {
    let Some(key) = ApiKey::from_i16(api_key).filter(|k| k.response_versions().contains(version)) else {
        return Vec::new();
    };
    frame::ResponseHeaderView::parse(frame, key.response_header_version(version))
        .ok()
        .and_then(|(_, header_len)| {
            super::addresses::scan(super::response_schema(key), version, &frame[header_len..]).ok()
        })
        .map(|found| found.errors)
        .unwrap_or_default()
}

/// What reading a frame into kwire's owned values and encoding it again gave
/// ([`roundtrip_request`], [`roundtrip_response`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Roundtrip {
    /// The same bytes.
    Same,
    /// kwire does not know the API or version.
    Unknown,
    /// Other bytes, or the frame could not be read or written: what, in words (the first
    /// difference's offset when the bytes differ).
    Differs(String),
}

impl Roundtrip {
    /// A word for logs: `ok`, `unknown` or `mismatch`.
    pub fn word(&self) -> &'static str {
        match self {
            Roundtrip::Same => "ok",
            Roundtrip::Unknown => "unknown",
            Roundtrip::Differs(_) => "mismatch",
        }
    }
}

/// Reads a request into kwire's owned value, encodes it again and compares the bytes with
/// the frame.
pub fn roundtrip_request(frame: &[u8]) -> Roundtrip {
    let (req, ignored) = match dispatch::parse_request_prefix(frame) {
        Ok(r) => r,
        Err(FrameError::UnsupportedApiKey { .. } | FrameError::UnsupportedVersion { .. }) => {
            return Roundtrip::Unknown;
        }
        Err(e) => return Roundtrip::Differs(e.to_string()),
    };
    let version = req.header.api_version();
    let body = RequestBody::from(req.body);
    let tags: Vec<RawTaggedField<'_>> = req
        .header
        .unknown_tagged_fields()
        .map(|(tag, data)| RawTaggedField { tag, data: List::Borrowed(data) })
        .collect();
    let header = frame::RequestHeader {
        correlation_id: req.header.correlation_id(),
        client_id: req.header.client_id(),
        unknown_tagged_fields: &tags,
    };
    let encoded = dispatch::request_len(&body, version, &header).and_then(|len| {
        let mut buf = vec![0u8; len];
        dispatch::encode_request_with(&body, version, &header, &mut buf).map(|_| buf)
    });
    match encoded {
        Ok(buf) => compare(&buf[4..], &frame[..frame.len() - ignored]),
        Err(e) => Roundtrip::Differs(e.to_string()),
    }
}

/// As [`roundtrip_request`], for a response read at `version` (its [`ResponseInfo::version`]).
pub fn roundtrip_response(frame: &[u8], api_key: i16, version: i16) -> Roundtrip {
    let Some(key) = ApiKey::from_i16(api_key).filter(|k| k.response_versions().contains(version)) else {
        return Roundtrip::Unknown;
    };
    let resp = match dispatch::parse_response(frame, key, version) {
        Ok(r) => r,
        Err(e) => return Roundtrip::Differs(e.to_string()),
    };
    let header = resp.header.as_bytes();
    let body = ResponseBody::from(resp.body);
    let encoded = AnyBody::encoded_len(&body, version).and_then(|len| {
        let mut whole = vec![0u8; header.len() + len];
        whole[..header.len()].copy_from_slice(header);
        AnyBody::encode(&body, version, &mut whole[header.len()..]).map(|_| whole)
    });
    match encoded {
        Ok(whole) => compare(&whole, frame),
        Err(e) => Roundtrip::Differs(e.to_string()),
    }
}

fn compare(encoded: &[u8], frame: &[u8]) -> Roundtrip {
    if encoded == frame {
        return Roundtrip::Same;
    }
    let at = encoded.iter().zip(frame).position(|(a, b)| a != b).unwrap_or(encoded.len().min(frame.len()));
    Roundtrip::Differs(format!(
        "re-encoding gives {} bytes where the frame has {}; first difference at offset {at}",
        encoded.len(),
        frame.len()
    ))
}
