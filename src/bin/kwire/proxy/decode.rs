//! The proxy's adapter to the kwire library: every call the proxy makes into kwire is in
//! this file (and in `scan.rs`, which reads kwire's schema tables). The rest of the proxy
//! sees only the plain types below, so a change of kwire's view API is ported here.
//!
//! Frames here are whole frames *without* their 4-byte size prefix (as
//! `kwire::frame::split_frame` returns them), except where a function says otherwise.

use kwire::frame::{self, FrameError};
use kwire::messages::{ApiKey, RequestBody, ResponseBody};
use kwire::{AnyBody, List, RawTaggedField, dispatch};

use kwire::reflect::StructSchema;

use kwire::reflect::addresses;

/// Apache Kafka's default limit on a request's size (`socket.request.max.bytes`).
pub const DEFAULT_MAX_FRAME: usize = frame::DEFAULT_MAX_FRAME_SIZE;

/// What a request header says; read by hand so that it works for any API key, known or
/// not (the first fields of request headers v1 and v2 are the same).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    /// The API key.
    pub api_key: i16,
    /// The API version.
    pub api_version: i16,
    /// The correlation id.
    pub correlation_id: i32,
    /// The client id (`None` when null).
    pub client_id: Option<String>,
}

/// Reads the header fields every request starts with, or says why it cannot.
pub fn request_head(frame: &[u8]) -> Result<RequestHead, String> {
    let Some(head) = frame.first_chunk::<10>() else {
        return Err(format!("a request of {} bytes is too short to hold a request header", frame.len()));
    };
    let api_key = i16::from_be_bytes([head[0], head[1]]);
    let api_version = i16::from_be_bytes([head[2], head[3]]);
    let correlation_id = i32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    let len = i16::from_be_bytes([head[8], head[9]]);
    let client_id = match usize::try_from(len) {
        Err(_) if len == -1 => None,
        Err(_) => return Err(format!("request header: client id has negative length {len}")),
        Ok(n) => match frame.get(10..10 + n) {
            Some(b) => Some(String::from_utf8_lossy(b).into_owned()),
            None => return Err(format!("request header: client id of {n} bytes runs past the frame")),
        },
    };
    Ok(RequestHead { api_key, api_version, correlation_id, client_id })
}

/// The name of a Kafka error code (`UNKNOWN_TOPIC_OR_PARTITION`), or the number.
pub fn error_name(code: i16) -> String {
    match kwire::ErrorCode::from_code(code) {
        Some(e) => e.name().to_string(),
        None => code.to_string(),
    }
}

/// What [`split`] found at the front of a stream buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// A whole frame of this many bytes, size prefix included.
    Frame(usize),
    /// At least this many more bytes are needed.
    Incomplete(usize),
}

/// Finds the first frame in `buf`; an error is a framing violation (a negative size, or
/// one over `max`), known from the size prefix alone.
pub fn split(buf: &[u8], max: usize) -> Result<Split, String> {
    match frame::split_frame(buf, max) {
        Ok(frame::FrameStatus::Complete { consumed, .. }) => Ok(Split::Frame(consumed)),
        Ok(frame::FrameStatus::Incomplete { needed }) => Ok(Split::Incomplete(needed)),
        Err(FrameError::Decode(e)) => Err(match e.kind() {
            kwire::DecodeErrorKind::InvalidLength(n) => format!("negative frame size {n}"),
            kwire::DecodeErrorKind::FrameTooLarge { size, max } => {
                format!("frame size {size} is over the limit of {max} bytes (--max-frame-bytes)")
            }
            _ => e.to_string(),
        }),
        Err(e) => Err(e.to_string()),
    }
}

/// The correlation id a response starts with.
pub fn response_correlation_id(frame: &[u8]) -> Option<i32> {
    frame.first_chunk::<4>().map(|b| i32::from_be_bytes(*b))
}

/// The name of an API key: kwire's name when it knows the API, else Apache Kafka 4.4's
/// name for it, else `api<N>`.
pub fn api_name(api_key: i16) -> String {
    match ApiKey::from_i16(api_key) {
        Some(k) => k.name().to_string(),
        None => match super::names::kafka_api_name(api_key) {
            Some(name) => name.to_string(),
            None => format!("api{api_key}"),
        },
    }
}

/// How decoding a frame went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// kwire decoded and validated the whole frame.
    Ok,
    /// kwire does not know this API or version: not an error of the frame.
    Unknown(String),
    /// kwire knows the API and version, and rejects the frame.
    Malformed(String),
}

impl Decoded {
    /// A short word for logs: `ok`, `unknown` or `malformed`.
    pub fn word(&self) -> &'static str {
        match self {
            Decoded::Ok => "ok",
            Decoded::Unknown(_) => "unknown",
            Decoded::Malformed(_) => "malformed",
        }
    }

    /// Why it did not decode.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Decoded::Ok => None,
            Decoded::Unknown(r) | Decoded::Malformed(r) => Some(r),
        }
    }
}

/// Decodes a request frame with kwire's views (checked once, when made). Bytes after the
/// body are ignored, as Apache Kafka's broker ignores them (librdkafka sends some).
pub fn decode_request(frame: &[u8]) -> Decoded {
    match dispatch::parse_request_prefix(frame) {
        Ok(_) => Decoded::Ok,
        Err(e @ (FrameError::UnsupportedApiKey { .. } | FrameError::UnsupportedVersion { .. })) => {
            Decoded::Unknown(format!("kwire: {e}"))
        }
        Err(FrameError::Decode(e)) => Decoded::Malformed(e.to_string()),
    }
}

/// What the proxy learns from a response.
#[derive(Debug, PartialEq, Eq)]
pub struct ResponseInfo {
    /// How kwire's views decoded it.
    pub decoded: Decoded,
    /// The version its body was read at: the request's, or 0 for an ApiVersions error
    /// answer (brokers answer an ApiVersions version they do not support with a v0 body).
    pub version: i16,
    /// Non-zero error codes in the body.
    pub errors: Vec<i16>,
    /// Broker addresses in the body, `(host, port)`.
    pub addresses: Vec<(String, i32)>,
}

fn view_response(frame: &[u8], key: ApiKey, version: i16) -> Decoded {
    match dispatch::parse_response(frame, key, version) {
        Ok(_) => Decoded::Ok,
        Err(e) => Decoded::Malformed(e.to_string()),
    }
}

/// kwire's schema of the response body of `api_key` at `version`, whether that version is
/// flexible, and whether the response header is (v1).
fn response_schema(api_key: i16, version: i16) -> Option<(&'static StructSchema, bool, bool)> {
    match ApiKey::from_i16(api_key) {
        Some(key) if key.response_versions().contains(version) => {
            let schema = kwire::reflect::response_schema(key);
            Some((schema.body, schema.is_flexible(version), key.response_header_version(version) >= 1))
        }
        Some(_) => None,
        None => None,
    }
}

/// The length of a response header (v1 when `flexible`, else v0).
fn response_header_len(frame: &[u8], flexible: bool) -> Option<usize> {
    if !flexible {
        return (frame.len() >= 4).then_some(4);
    }
    // Tagged fields: a count, then (tag, size, bytes) each.
    let mut pos = 4;
    let uvarint = |pos: &mut usize| -> Option<usize> {
        let mut v: usize = 0;
        for i in 0..5 {
            let b = *frame.get(*pos)?;
            *pos += 1;
            v |= usize::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    };
    let count = uvarint(&mut pos)?;
    for _ in 0..count {
        uvarint(&mut pos)?;
        let size = uvarint(&mut pos)?;
        pos = pos.checked_add(size).filter(|&p| p <= frame.len())?;
    }
    Some(pos)
}

/// Decodes a response to a request of `api_key` at `api_version`: validates it with
/// kwire's views and scans it for error codes and broker addresses.
pub fn decode_response(frame: &[u8], api_key: i16, api_version: i16) -> ResponseInfo {
    let mut version = api_version;
    let decoded = match ApiKey::from_i16(api_key) {
        None => Decoded::Unknown(format!("kwire: unsupported API key {api_key} (version {api_version})")),
        Some(key) if !key.response_versions().contains(api_version) => {
            Decoded::Unknown(format!("kwire: unsupported version {api_version} of {}", key.name()))
        }
        Some(key) => {
            let decoded = view_response(frame, key, version);
            if decoded != Decoded::Ok && key == ApiKey::ApiVersions && version > 0 {
                let v0 = view_response(frame, key, 0);
                if v0 == Decoded::Ok {
                    version = 0;
                    v0
                } else {
                    decoded
                }
            } else {
                decoded
            }
        }
    };
    let mut info = ResponseInfo { decoded, version, errors: Vec::new(), addresses: Vec::new() };
    if let Some((_, _, flexible_header)) = response_schema(api_key, version)
        && let Some(header_len) = response_header_len(frame, flexible_header)
        && let Some(key) = ApiKey::from_i16(api_key)
        && let Ok(found) =
            addresses::scan(kwire::reflect::response_schema(key), version, &frame[header_len..])
    {
        info.errors = found.errors;
        // Addresses only from a body the schema describes to its last byte.
        if header_len + found.end == frame.len() {
            info.addresses = found.addresses;
        }
    }
    info
}

/// Writes the response `frame` (without size prefix) again with its broker addresses
/// replaced (`replace[i]` for `ResponseInfo::addresses[i]`; `None` keeps one), and
/// returns the new frame *with* its size prefix.
pub fn rewrite_addresses(
    frame: &[u8],
    api_key: i16,
    version: i16,
    replace: &[Option<(String, i32)>],
) -> Result<Vec<u8>, String> {
    let (_, _, flexible_header) = response_schema(api_key, version).ok_or("no schema")?;
    let header_len = response_header_len(frame, flexible_header).ok_or("truncated response header")?;
    let schema = kwire::reflect::response_schema(ApiKey::from_i16(api_key).ok_or("no schema")?);
    let rewritten = addresses::rewrite(schema, version, &frame[header_len..], |i, _, _| {
        replace.get(i).cloned().flatten()
    })
    .map_err(|e| e.to_string())?;
    let body = rewritten.unwrap_or_else(|| frame[header_len..].to_vec());
    let size = i32::try_from(header_len + body.len()).map_err(|_| "rewritten frame too large")?;
    let mut out = Vec::with_capacity(4 + header_len + body.len());
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(&frame[..header_len]);
    out.extend_from_slice(&body);
    Ok(out)
}

/// Decodes a request into kwire's owned value, encodes it again and compares with the
/// frame. `Ok(false)` when kwire does not know the API or version.
pub fn roundtrip_request(frame: &[u8]) -> Result<bool, String> {
    let (req, ignored) = match dispatch::parse_request_prefix(frame) {
        Ok(r) => r,
        Err(FrameError::UnsupportedApiKey { .. } | FrameError::UnsupportedVersion { .. }) => {
            return Ok(false);
        }
        Err(FrameError::Decode(e)) => return Err(e.to_string()),
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
    let len = dispatch::request_len(&body, version, &header).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; len];
    dispatch::encode_request_with(&body, version, &header, &mut buf).map_err(|e| e.to_string())?;
    compare(&buf[4..], &frame[..frame.len() - ignored])
}

/// As [`roundtrip_request`], for a response read at `version`.
pub fn roundtrip_response(frame: &[u8], api_key: i16, version: i16) -> Result<bool, String> {
    let Some(key) = ApiKey::from_i16(api_key) else { return Ok(false) };
    if !key.response_versions().contains(version) {
        return Ok(false);
    }
    let resp = dispatch::parse_response(frame, key, version).map_err(|e| e.to_string())?;
    let header = resp.header.as_bytes();
    let body = ResponseBody::from(resp.body);
    let mut buf = vec![0u8; AnyBody::encoded_len(&body, version).map_err(|e| e.to_string())?];
    AnyBody::encode(&body, version, &mut buf).map_err(|e| e.to_string())?;
    let mut whole = Vec::with_capacity(header.len() + buf.len());
    whole.extend_from_slice(header);
    whole.extend_from_slice(&buf);
    compare(&whole, frame)
}

fn compare(encoded: &[u8], frame: &[u8]) -> Result<bool, String> {
    if encoded == frame {
        return Ok(true);
    }
    let at = encoded.iter().zip(frame).position(|(a, b)| a != b).unwrap_or(encoded.len().min(frame.len()));
    Err(format!(
        "re-encoding gives {} bytes where the frame has {}; first difference at offset {at}",
        encoded.len(),
        frame.len()
    ))
}

/// The frame (with its size prefix) as kwire's JSON document (what `kwire decode
/// --format json` prints), on one line. `response` is `Some((api_key, version))` for a
/// response.
pub fn frame_json(frame_with_prefix: &[u8], response: Option<(i16, i16)>) -> Option<String> {
    use crate::walk::{self, Kind};
    let kind = match response {
        None => Kind::Request,
        Some((key, version)) => Kind::Response(ApiKey::from_i16(key)?, version),
    };
    let walked = walk::walk(frame_with_prefix, kind);
    if walked.error.is_some() {
        return None;
    }
    Some(crate::decode::frame_json(&walked, kind).to_text(false))
}

/// Whether responses of `api_key` at `version` may carry broker addresses (a struct with
/// a `Host` field, inline or tagged), which must be rewritten before they are forwarded.
pub fn may_carry_addresses(api_key: i16, version: i16) -> bool {
    use kwire::reflect::FieldType;
    fn has_host(s: &StructSchema, version: i16, depth: usize) -> bool {
        depth < 16
            && s.fields.iter().filter(|f| f.versions.contains(version)).any(|f| {
                f.name == "Host" || {
                    let mut ty = &f.ty;
                    while let FieldType::Array(inner) = ty {
                        ty = inner;
                    }
                    matches!(ty, FieldType::Struct(inner) if has_host(inner, version, depth + 1))
                }
            })
    }
    response_schema(api_key, version).is_some_and(|(s, _, _)| has_host(s, version, 0))
}

#[cfg(test)]
mod tests {
    use kwire::messages::metadata::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
    use kwire::messages::{ApiKey, MetadataResponse};
    use kwire::{List, Str};

    use super::*;

    fn metadata(brokers: &[(i32, &'static str, i32)]) -> MetadataResponse<'static> {
        MetadataResponse {
            throttle_time_ms: 7,
            brokers: List::Owned(
                brokers
                    .iter()
                    .map(|&(node_id, host, port)| MetadataResponseBroker {
                        node_id,
                        host: Str::Borrowed(host),
                        port,
                        rack: Some(Str::Borrowed("rack-a")),
                        ..Default::default()
                    })
                    .collect(),
            ),
            cluster_id: Some(Str::Borrowed("cluster")),
            controller_id: 1,
            topics: List::Owned(vec![MetadataResponseTopic {
                name: Some(Str::Borrowed("orders")),
                partitions: List::Owned(vec![MetadataResponsePartition {
                    error_code: 6,
                    partition_index: 0,
                    leader_id: 1,
                    replica_nodes: List::Owned(vec![1, 2]),
                    isr_nodes: List::Owned(vec![1]),
                    ..Default::default()
                }]),
                ..Default::default()
            }]),
            ..Default::default()
        }
    }

    fn response_frame(body: &MetadataResponse<'_>, version: i16) -> Vec<u8> {
        let mut buf = vec![0u8; dispatch::response_len(body, version).unwrap()];
        dispatch::encode_response(body, version, 42, &mut buf).unwrap();
        buf
    }

    #[test]
    fn metadata_addresses_are_found_and_rewritten_at_every_version() {
        let key = ApiKey::Metadata.key();
        for version in ApiKey::Metadata.response_versions().min..=ApiKey::Metadata.response_versions().max {
            let before =
                response_frame(&metadata(&[(1, "broker-1.example", 9092), (2, "b2", 9093)]), version);
            let info = decode_response(&before[4..], key, version);
            assert_eq!(info.decoded, Decoded::Ok, "v{version}");
            assert_eq!(info.errors, vec![6], "v{version}");
            assert_eq!(
                info.addresses,
                vec![("broker-1.example".into(), 9092), ("b2".into(), 9093)],
                "v{version}"
            );
            assert!(may_carry_addresses(key, version));
            let replace = [Some(("127.0.0.1".to_string(), 40001)), None];
            let after = rewrite_addresses(&before[4..], key, version, &replace).unwrap();
            let expected = response_frame(&metadata(&[(1, "127.0.0.1", 40001), (2, "b2", 9093)]), version);
            assert_eq!(after, expected, "v{version}");
            assert_eq!(roundtrip_response(&after[4..], key, version), Ok(true));
        }
    }

    #[test]
    fn find_coordinator_addresses_are_rewritten() {
        // FindCoordinator v6 response: header v1, throttle, one coordinator, tags.
        let mut body = vec![0, 0, 0, 42, 0]; // correlation id, header tags
        body.extend_from_slice(&[0, 0, 0, 0]); // throttle
        body.push(2); // one coordinator
        body.extend_from_slice(&[3, b'g', b'1']); // key "g1"
        body.extend_from_slice(&1i32.to_be_bytes());
        body.extend_from_slice(&[10]); // host, 9 bytes
        body.extend_from_slice(b"127.0.0.1");
        body.extend_from_slice(&9092i32.to_be_bytes());
        body.extend_from_slice(&[0, 0, 0, 0, 0]); // error code, null message, tags
        let info = decode_response(&body, 10, 6);
        assert_eq!(info.decoded, Decoded::Ok);
        assert_eq!(info.addresses, vec![("127.0.0.1".into(), 9092)]);
        let after = rewrite_addresses(&body, 10, 6, &[Some(("proxy.local".into(), 1234))]).unwrap();
        let info = decode_response(&after[4..], 10, 6);
        assert_eq!(info.addresses, vec![("proxy.local".into(), 1234)]);
        assert_eq!(after.len(), 4 + body.len() + 2);
        // A truncated body is left alone.
        assert!(rewrite_addresses(&body[..body.len() - 3], 10, 6, &[None]).is_err());
        assert!(decode_response(&body[..body.len() - 3], 10, 6).addresses.is_empty());
    }

    fn vector(name: &str) -> Vec<u8> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/kafka44/responses/");
        let text = std::fs::read_to_string(format!("{path}{name}.hex")).unwrap();
        (0..text.trim().len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text.trim()[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Responses of Apache Kafka 4.4.0 (tests/vectors/kafka44): the broker address is found
    /// in each, which needs the schema to describe the body to its last byte, and rewriting
    /// it changes only the address.
    #[test]
    fn kafka_responses_name_their_broker() {
        for (name, key, version) in [
            ("java_describecluster_v2_1", 60, 2),
            ("confluent-kafka_findcoordinator_v2_1", 10, 2),
            ("java_findcoordinator_v6_1", 10, 6),
            ("java_metadata_v13_1", 3, 13),
            ("kafka-python_metadata_v13_1", 3, 13),
        ] {
            let frame = vector(name);
            let info = decode_response(&frame[4..], key, version);
            assert_eq!(info.addresses.len(), 1, "{name}: {info:?}");
            let (host, port) = info.addresses[0].clone();
            assert_eq!(host, "127.0.0.1", "{name}");
            let same = rewrite_addresses(&frame[4..], key, version, &[Some((host.clone(), port))]).unwrap();
            assert_eq!(same, frame, "{name}: rewriting to the same address changes nothing");
            let moved =
                rewrite_addresses(&frame[4..], key, version, &[Some(("proxy.test".into(), 1))]).unwrap();
            let again = decode_response(&moved[4..], key, version);
            assert_eq!(again.addresses, vec![("proxy.test".to_string(), 1)], "{name}");
            assert_eq!(again.errors, info.errors, "{name}");
            assert_eq!(moved.len(), frame.len() + 1, "{name}");
        }
    }

    #[test]
    fn requests_of_unknown_apis_are_reported_not_failed() {
        // A request header of API key 999 (no such API) with client id "c", then junk.
        let frame = [3, 0xe7, 0, 9, 0, 0, 0, 5, 0, 1, b'c', 0, 1, 2, 3];
        let head = request_head(&frame).unwrap();
        assert_eq!((head.api_key, head.api_version, head.correlation_id), (999, 9, 5));
        assert_eq!(head.client_id.as_deref(), Some("c"));
        assert!(matches!(decode_request(&frame), Decoded::Unknown(_)));
        assert_eq!(roundtrip_request(&frame), Ok(false));
        assert!(request_head(&frame[..9]).is_err());
        assert!(request_head(&[0, 18, 0, 3, 0, 0, 0, 1, 0, 9, b'x']).is_err());
        assert!(request_head(&[0, 18, 0, 3, 0, 0, 0, 1, 0x80, 0]).is_err());
    }

    #[test]
    fn malformed_known_requests_are_malformed() {
        // ApiVersions v3 with a truncated body.
        let frame = [0, 18, 0, 3, 0, 0, 0, 1, 0, 1, b'c', 0, 5, b'a'];
        assert!(matches!(decode_request(&frame), Decoded::Malformed(_)));
    }

    #[test]
    fn split_reports_violations() {
        assert_eq!(split(&[0, 0], 100), Ok(Split::Incomplete(2)));
        assert_eq!(split(&[0, 0, 0, 2, 1], 100), Ok(Split::Incomplete(1)));
        assert_eq!(split(&[0, 0, 0, 1, 1, 9], 100), Ok(Split::Frame(5)));
        assert!(split(&[0xff, 0xff, 0xff, 0xfb], 100).is_err());
        assert!(split(&[0, 0, 1, 0], 100).is_err());
    }
}
