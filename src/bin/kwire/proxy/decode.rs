//! The proxy's adapter to the kwire library: every call the proxy makes into kwire is in
//! this file. The rest of the proxy
//! sees only the plain types below, so a change of kwire's view API is ported here.
//!
//! Frames here are whole frames *without* their 4-byte size prefix (as
//! `kwire::frame::split_frame` returns them), except where a function says otherwise.

use kwire::ApiKey;
use kwire::frame::{self, FrameError};
use kwire::messages::{RequestBody, ResponseBody};
use kwire::secrets::{self, Redaction};
use kwire::{AnyBody, List, RawTaggedField, dispatch};

use kwire::reflect::StructSchema;

use kwire::reflect::addresses;

/// The name of a Kafka error code (`UNKNOWN_TOPIC_OR_PARTITION`), or the number.
pub fn error_name(code: i16) -> String {
    match kwire::ErrorCode::from_i16(code) {
        Some(e) => e.name().to_string(),
        None => code.to_string(),
    }
}

/// The name of an API key: kwire's name (kwire has every API of Apache Kafka 4.4), else
/// `api<N>`.
pub fn api_name(api_key: i16) -> String {
    match ApiKey::from_i16(api_key) {
        Some(k) => k.name().to_string(),
        None => format!("api{api_key}"),
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
        Err(e) => Decoded::Unknown(format!("kwire: {e}")),
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
}

/// kwire's schema of the response body of `api_key` at `version`, whether that version is
/// flexible, and the response header's version.
fn response_schema(api_key: i16, version: i16) -> Option<(&'static StructSchema, bool, i16)> {
    match ApiKey::from_i16(api_key) {
        Some(key) if key.response_versions().contains(version) => {
            let schema = kwire::reflect::response_schema(key);
            Some((schema.body, schema.is_flexible(version), key.response_header_version(version)))
        }
        _ => None,
    }
}

/// Decodes a response to a request of `api_key` at `api_version`: validates it with
/// kwire's views (an ApiVersions answer that does not parse at the request's version is
/// read as v0, as Kafka's clients read it: `kwire::conn::read_response`) and scans it for
/// error codes.
pub fn decode_response(frame: &[u8], api_key: i16, api_version: i16) -> ResponseInfo {
    let (decoded, version) = match ApiKey::from_i16(api_key) {
        None => (
            Decoded::Unknown(format!("kwire: unsupported API key {api_key} (version {api_version})")),
            api_version,
        ),
        Some(key) if !key.response_versions().contains(api_version) => (
            Decoded::Unknown(format!("kwire: unsupported version {api_version} of {}", key.name())),
            api_version,
        ),
        Some(key) => match kwire::conn::read_response(frame, key, api_version) {
            Ok((_, version)) => (Decoded::Ok, version),
            Err(e) => (Decoded::Malformed(e.to_string()), api_version),
        },
    };
    let mut info = ResponseInfo { decoded, version, errors: Vec::new() };
    if let Some(key) = ApiKey::from_i16(api_key)
        && let Some((_, _, header_version)) = response_schema(api_key, version)
        && let Ok((_, header_len)) = frame::ResponseHeaderView::parse(frame, header_version)
        && let Ok(found) =
            addresses::scan(kwire::reflect::response_schema(key), version, &frame[header_len..])
    {
        info.errors = found.errors;
    }
    info
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
        Err(e) => return Err(e.to_string()),
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
    use kwire::reflect::explain::{FrameKind, explain_frame};
    let kind = match response {
        None => FrameKind::Request,
        Some((key, version)) => FrameKind::Response(ApiKey::from_i16(key)?, version),
    };
    let explained = explain_frame(frame_with_prefix, kind);
    if explained.problem.is_some() {
        return None;
    }
    Some(explained.to_json().to_string())
}

/// A copy of `frame_with_prefix` for logs and recordings, with its secrets masked
/// (`kwire::secrets`): `response_to` is `Some((api_key, version))` for a response, `None`
/// for a request; `Some((-1, -1))` for a response that answers no known request (masked
/// whole). The size prefix is kept.
pub fn redacted(frame_with_prefix: &[u8], response_to: Option<(i16, i16)>) -> (Vec<u8>, Redaction) {
    let mut out = frame_with_prefix.to_vec();
    let (prefix, body) = out.split_at_mut(4.min(frame_with_prefix.len()));
    let _ = prefix;
    let frame = &frame_with_prefix[4.min(frame_with_prefix.len())..];
    let r = match response_to {
        None => secrets::mask_request(frame, body),
        Some((key, version)) => match ApiKey::from_i16(key) {
            Some(key) => secrets::mask_response(frame, key, version, body),
            None => secrets::mask_unknown_response(frame, body),
        },
    };
    (out, r)
}

/// What masking did, in words, for the note beside a recorded frame; `None` if nothing.
pub fn redaction_note(r: &Redaction) -> Option<String> {
    match *r {
        Redaction::Clean | Redaction::Masked { bytes: 0, .. } | Redaction::Whole { bytes: 0 } => None,
        Redaction::Masked { fields, bytes } => Some(format!(
            "secrets masked: {fields} secret field(s), {bytes} bytes, overwritten with 0x2a ('*'); the frame keeps \
             its length (kwire::secrets; --show-secrets records them unmasked)"
        )),
        Redaction::Whole { bytes } => Some(format!(
            "masked whole: kwire could not read this frame, so its last {bytes} bytes were overwritten with 0x2a \
             ('*'); the frame keeps its length (--show-secrets records it unmasked)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use kwire::ApiKey;
    use kwire::filter::{FilterChain, RewriteAddresses, Verdict};
    use kwire::messages::MetadataResponse;
    use kwire::messages::metadata::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
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

    /// The proxy's rewriting: `kwire::filter::RewriteAddresses` with a route per address.
    fn rewrite(
        frame: &[u8],
        key: ApiKey,
        version: i16,
        to: fn(&str, i32) -> Option<(String, i32)>,
    ) -> Verdict {
        let mut chain = FilterChain::new();
        chain.push(RewriteAddresses::new(to));
        chain.on_response(frame, key, version)
    }

    #[test]
    fn metadata_addresses_are_rewritten_at_every_version() {
        for version in ApiKey::Metadata.response_versions().min..=ApiKey::Metadata.response_versions().max {
            let before =
                response_frame(&metadata(&[(1, "broker-1.example", 9092), (2, "b2", 9093)]), version);
            let info = decode_response(&before[4..], ApiKey::Metadata.to_i16(), version);
            assert_eq!(info.decoded, Decoded::Ok, "v{version}");
            assert_eq!(info.errors, vec![6], "v{version}");
            let to = |host: &str, port| {
                (host == "broker-1.example").then(|| ("127.0.0.1".to_string(), 40001 + port - 9092))
            };
            let Verdict::Replace(after) = rewrite(&before[4..], ApiKey::Metadata, version, to) else {
                panic!("v{version}")
            };
            let expected = response_frame(&metadata(&[(1, "127.0.0.1", 40001), (2, "b2", 9093)]), version);
            assert_eq!(after, expected[4..], "v{version}");
            assert_eq!(roundtrip_response(&after, ApiKey::Metadata.to_i16(), version), Ok(true));
        }
    }

    fn vector(name: &str) -> Vec<u8> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/kafka44/responses/");
        let text = std::fs::read_to_string(format!("{path}{name}.hex")).unwrap();
        (0..text.trim().len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text.trim()[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Responses of Apache Kafka 4.4.0 (tests/vectors/kafka44): the broker address in each
    /// is rewritten, and rewriting changes only the address.
    #[test]
    fn kafka_responses_name_their_broker() {
        for (name, key, version) in [
            ("java_describecluster_v2_1", ApiKey::DescribeCluster, 2),
            ("confluent-kafka_findcoordinator_v2_1", ApiKey::FindCoordinator, 2),
            ("java_findcoordinator_v6_1", ApiKey::FindCoordinator, 6),
            ("java_metadata_v13_1", ApiKey::Metadata, 13),
            ("kafka-python_metadata_v13_1", ApiKey::Metadata, 13),
        ] {
            let frame = vector(name);
            let same = rewrite(&frame[4..], key, version, |h, p| Some((h.to_string(), p)));
            assert_eq!(same, Verdict::Forward, "{name}: the same address changes nothing");
            let Verdict::Replace(moved) = rewrite(&frame[4..], key, version, |h, _| {
                assert_eq!(h, "127.0.0.1");
                Some(("proxy.test".into(), 1))
            }) else {
                panic!("{name}")
            };
            assert_eq!(moved.len(), frame.len() - 4 + 1, "{name}");
            let before = decode_response(&frame[4..], key.to_i16(), version);
            let after = decode_response(&moved, key.to_i16(), version);
            assert_eq!((after.decoded, &after.errors), (Decoded::Ok, &before.errors), "{name}");
            assert_eq!(roundtrip_response(&moved, key.to_i16(), version), Ok(true), "{name}");
        }
    }

    #[test]
    fn requests_of_unknown_apis_are_reported_not_failed() {
        // A request header of API key 999 (no such API) with client id "c", then junk.
        let frame = [3, 0xe7, 0, 9, 0, 0, 0, 5, 0, 1, b'c', 0, 1, 2, 3];
        assert!(matches!(decode_request(&frame), Decoded::Unknown(_)));
        assert_eq!(roundtrip_request(&frame), Ok(false));
        // Masked whole: nothing says what it holds.
        let (masked, r) = redacted(&[&[0, 0, 0, 15][..], &frame].concat(), None);
        assert_eq!(r, Redaction::Whole { bytes: 7 });
        assert_eq!(&masked[4..12], &frame[..8]);
    }

    #[test]
    fn malformed_known_requests_are_malformed() {
        // ApiVersions v3 with a truncated body.
        let frame = [0, 18, 0, 3, 0, 0, 0, 1, 0, 1, b'c', 0, 5, b'a'];
        assert!(matches!(decode_request(&frame), Decoded::Malformed(_)));
    }
}
