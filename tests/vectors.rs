//! Every ApiVersions, ListGroups, ListOffsets and Metadata frame captured from real clients
//! (`tests/vectors/clients`) and every large frame from an independent encoder
//! (`tests/vectors/bench`): decoded through the views and through the reference decoder
//! to equal values, fully validated, and re-encoded byte for byte.

mod common;

use common::{hex_files, unframe, vector};
use kwire::ApiKey;
use kwire::dispatch;
use kwire::frame::RequestHeader;
use kwire::messages::{RequestBody, ResponseBody};
use kwire::{AnyBody, RawTaggedField};

/// Decodes a request frame both ways, checks they agree, and re-encodes it.
fn check_request(name: &str, bytes: &[u8]) -> (ApiKey, i16) {
    let frame_bytes = unframe(bytes);
    let req = dispatch::parse_request(frame_bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let key = req.body.api_key();
    let version = req.header.api_version();
    let from_view = RequestBody::from(req.body);
    let body_bytes = req.body.as_bytes();
    let reference = RequestBody::decode(body_bytes, key, version).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(from_view, reference, "{name}: view and reference decoder disagree");

    let tags: Vec<RawTaggedField> = req
        .header
        .unknown_tagged_fields()
        .map(|(tag, data)| RawTaggedField { tag, data: data.into() })
        .collect();
    let header = RequestHeader {
        correlation_id: req.header.correlation_id(),
        client_id: req.header.client_id(),
        unknown_tagged_fields: &tags,
    };
    let mut out = vec![0u8; bytes.len() + 16];
    let n = dispatch::encode_request_with(&reference, version, &header, &mut out).unwrap();
    assert_eq!(&out[..n], bytes, "{name}: re-encoded request differs");
    assert_eq!(reference.encoded_len(version).unwrap(), body_bytes.len());
    (key, version)
}

fn check_response(name: &str, bytes: &[u8], key: ApiKey, version: i16) {
    let resp =
        dispatch::parse_response(unframe(bytes), key, version).unwrap_or_else(|e| panic!("{name}: {e}"));
    let from_view = ResponseBody::from(resp.body);
    let reference = ResponseBody::decode(resp.body.as_bytes(), key, version).unwrap();
    assert_eq!(from_view, reference, "{name}: view and reference decoder disagree");
    let mut out = vec![0u8; bytes.len() + 16];
    let n = dispatch::encode_response(&reference, version, resp.header.correlation_id(), &mut out).unwrap();
    assert_eq!(&out[..n], bytes, "{name}: re-encoded response differs");
}

fn supported(name: &str) -> bool {
    ["apiversions", "listgroups", "listoffsets", "metadata"].iter().any(|api| name.contains(api))
}

#[test]
fn client_captures() {
    let mut checked = 0;
    for (name, path) in hex_files("clients/requests") {
        assert!(supported(&name), "{name}: a capture of an API kwire does not support");
        let (key, version) = check_request(&name, &vector(&path));
        // A broker that rejects an ApiVersions version answers with a version-0 body.
        let response_version = if name.ends_with("_rejected") { 0 } else { version };
        check_response(&name, &vector(&format!("clients/responses/{name}.hex")), key, response_version);
        checked += 1;
    }
    assert_eq!(checked, 68, "every capture was checked");
}

#[test]
fn rejected_api_versions_carry_error_35() {
    let bytes = vector("clients/responses/kafkapython_apiversions_v4_rejected.hex");
    let resp = dispatch::parse_response(unframe(&bytes), ApiKey::ApiVersions, 0).unwrap();
    let kwire::messages::ResponseBodyView::ApiVersions(body) = resp.body else { panic!() };
    assert_eq!(body.error_code(), 35);
    let keys: Vec<_> = body.api_keys().iter().collect();
    assert_eq!(keys.len(), 1);
    assert_eq!((keys[0].api_key(), keys[0].min_version(), keys[0].max_version()), (18, 0, 3));
}

#[test]
fn feature_tagged_fields_decode() {
    let bytes = vector("clients/responses/kafkapython_apiversions_v4_hello_featuresresp.hex");
    let resp = dispatch::parse_response(unframe(&bytes), ApiKey::ApiVersions, 4).unwrap();
    let kwire::messages::ResponseBodyView::ApiVersions(body) = resp.body else { panic!() };
    assert!(!body.supported_features().is_empty());
    assert!(body.finalized_features_epoch() >= 0);
    for f in body.supported_features() {
        assert!(!f.name().is_empty());
        assert!(f.min_version() <= f.max_version());
    }
}

#[test]
fn bench_frames() {
    let mut checked = 0;
    for (name, path) in hex_files("bench") {
        let bytes = vector(&path);
        if name.contains("request") {
            check_request(&name, &bytes);
        } else {
            let (key, version) = common::api_and_version(&name);
            check_response(&name, &bytes, key, version);
        }
        checked += 1;
    }
    assert_eq!(checked, 6);
}

#[test]
fn bench_frame_values() {
    // Spot checks against the shapes documented in tests/vectors/bench/README.md.
    let bytes = vector("bench/listoffsets_v10_response_10x100.hex");
    let resp = dispatch::parse_response(unframe(&bytes), ApiKey::ListOffsets, 10).unwrap();
    let kwire::messages::ResponseBodyView::ListOffsets(body) = resp.body else { panic!() };
    assert_eq!(body.topics().len(), 10);
    for (t, topic) in body.topics().iter().enumerate() {
        assert_eq!(topic.name(), format!("topic-{t:02}"));
        for (p, part) in topic.partitions().iter().enumerate() {
            let i = (t * 100 + p) as i64;
            assert_eq!(part.partition_index() as usize, p);
            assert_eq!(part.timestamp(), 1_700_000_000_000 + i);
            assert_eq!(part.offset(), 1_000_000 + i);
            assert_eq!(part.leader_epoch() as i64, 1 + i);
        }
    }
    let bytes = vector("bench/listgroups_v5_response_1000.hex");
    let resp = dispatch::parse_response(unframe(&bytes), ApiKey::ListGroups, 5).unwrap();
    let kwire::messages::ResponseBodyView::ListGroups(body) = resp.body else { panic!() };
    assert_eq!(body.groups().len(), 1000);
    let last = body.groups().iter().last().unwrap();
    assert_eq!(
        (last.group_id(), last.protocol_type(), last.group_state(), last.group_type()),
        ("group-0999", "consumer", "Stable", "classic")
    );
}
