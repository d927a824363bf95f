//! The encoding contract of `docs/design.md` for the one-pass `encode`: it writes and checks
//! as it goes, and whenever it does not finish, the error is the size step's (`encoded_len`),
//! whatever the buffer. A buffer too short for a value the size step accepts is
//! `BufferTooSmall` with the exact size. The same for whole frames.

use kwire::dispatch;
use kwire::frame::RequestHeader;
use kwire::messages::api_versions::SupportedFeatureKey;
use kwire::messages::list_offsets::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kwire::messages::*;
use kwire::{AnyBody, Body, EncodeError, RawTaggedField, Str};

/// `encode` of `value` at `version` refuses it with `expected`, which `encoded_len` returns,
/// into buffers large enough for any of these values, exactly too short, and empty; so do
/// the frame encoders, with the frame's size where the body fits.
fn refused(value: &impl AnyBody, version: i16, expected: EncodeError) {
    assert_eq!(value.encoded_len(version), Err(expected));
    for len in [1 << 17, 64, 1, 0] {
        let mut buf = vec![0u8; len];
        assert_eq!(value.encode(version, &mut buf), Err(expected), "v{version}, a buffer of {len}");
        assert_eq!(dispatch::encode_response(value, version, 1, &mut buf), Err(expected), "frame, {len}");
    }
}

/// `encode` of `value` writes what `encoded_len` sizes, and refuses every shorter buffer with
/// the exact size; so does the frame encoder, with the frame's size.
fn encodes<B: Body>(value: &B, version: i16) -> Vec<u8> {
    let n = value.encoded_len(version).unwrap();
    let mut buf = vec![0xeeu8; n + 8];
    assert_eq!(value.encode(version, &mut buf), Ok(n));
    for short in [0, n / 2, n.saturating_sub(1)].into_iter().filter(|&s| s < n) {
        let mut out = vec![0u8; short];
        assert_eq!(
            value.encode(version, &mut out),
            Err(EncodeError::BufferTooSmall { needed: n, available: short })
        );
    }
    let header = RequestHeader { correlation_id: 9, client_id: Some("c"), unknown_tagged_fields: &[] };
    let frame = |out: &mut [u8]| {
        if B::IS_REQUEST {
            dispatch::encode_request_with(value, version, &header, out)
        } else {
            dispatch::encode_response(value, version, 9, out)
        }
    };
    let total = if B::IS_REQUEST {
        dispatch::request_len(value, version, &header).unwrap()
    } else {
        dispatch::response_len(value, version).unwrap()
    };
    let mut whole = vec![0u8; total];
    assert_eq!(frame(&mut whole), Ok(total));
    assert_eq!(&whole[total - n..], &buf[..n], "the frame ends with the body");
    assert_eq!(i32::from_be_bytes(whole[..4].try_into().unwrap()) as usize, total - 4);
    for short in [0, 3, total - n, total - 1] {
        let mut out = vec![0u8; short];
        assert_eq!(
            frame(&mut out),
            Err(EncodeError::BufferTooSmall { needed: total, available: short }),
            "a frame buffer of {short}"
        );
    }
    buf.truncate(n);
    buf
}

#[test]
fn unsupported_version() {
    let value = ListOffsetsResponse::default();
    refused(&value, 99, EncodeError::UnsupportedVersion { message: "ListOffsetsResponse", version: 99 });
}

#[test]
fn field_the_version_cannot_carry_at_any_depth() {
    let value = ListOffsetsRequest { isolation_level: 1, ..Default::default() };
    let field = "ListOffsetsRequest.IsolationLevel";
    let mut buf = vec![0u8; 256];
    assert_eq!(value.encode(1, &mut buf), Err(EncodeError::FieldNotInVersion { field, version: 1 }));
    encodes(&value, 2);

    // LeaderEpoch (v4+, not ignorable) deep in a v3 response, after other elements.
    let parts = [
        ListOffsetsPartitionResponse::default(),
        ListOffsetsPartitionResponse { leader_epoch: 5, ..Default::default() },
    ];
    let topics = [ListOffsetsTopicResponse { partitions: (&parts).into(), ..Default::default() }];
    let value = ListOffsetsResponse { topics: (&topics).into(), ..Default::default() };
    let field = "ListOffsetsPartitionResponse.LeaderEpoch";
    refused(&value, 3, EncodeError::FieldNotInVersion { field, version: 3 });
    encodes(&value, 4);
}

#[test]
fn null_the_version_cannot_carry() {
    let value = MetadataRequest { topics: None, ..Default::default() };
    refused(&value, 0, EncodeError::NullNotAllowed { field: "MetadataRequest.Topics" });
    encodes(&value, 1);
}

#[test]
fn strings_over_32767_bytes() {
    let long = "x".repeat(32768);
    let groups = [list_groups::ListedGroup { group_id: Str::Borrowed(&long), ..Default::default() }];
    let value = ListGroupsResponse { groups: (&groups).into(), ..Default::default() };
    let expected = EncodeError::StringTooLong { field: "ListedGroup.GroupId", len: 32768 };
    refused(&value, 2, expected);
    refused(&value, 5, expected);

    // Inside a tagged field, whose header needs the size first.
    let features = [SupportedFeatureKey { name: Str::Borrowed(&long), ..Default::default() }];
    let value = ApiVersionsResponse { supported_features: (&features).into(), ..Default::default() };
    refused(&value, 3, EncodeError::StringTooLong { field: "SupportedFeatureKey.Name", len: 32768 });

    let just = "x".repeat(32767);
    let groups = [list_groups::ListedGroup { group_id: Str::Borrowed(&just), ..Default::default() }];
    let value = ListGroupsResponse { groups: (&groups).into(), ..Default::default() };
    encodes(&value, 2);
    encodes(&value, 5);
}

#[test]
fn unknown_tags_out_of_order_or_known() {
    let raw = |tag| RawTaggedField { tag, data: (&[1u8][..]).into() };
    // A struct without known tags: only the order is checked.
    let tags = [raw(9), raw(7)];
    let groups = [list_groups::ListedGroup { unknown_tagged_fields: (&tags).into(), ..Default::default() }];
    let value = ListGroupsResponse { groups: (&groups).into(), ..Default::default() };
    refused(&value, 5, EncodeError::InvalidTaggedFields { field: "ListedGroup._tagged_fields", tag: 7 });
    // Dropped where the version has no tagged fields.
    encodes(&value, 2);

    // A struct with known tags: order and collisions, whether the known field is written or not.
    let field = "ApiVersionsResponse._tagged_fields";
    for (tags, tag) in [(vec![raw(9), raw(7)], 7), (vec![raw(1)], 1), (vec![raw(3), raw(3)], 3)] {
        let value = ApiVersionsResponse { unknown_tagged_fields: tags[..].into(), ..Default::default() };
        refused(&value, 3, EncodeError::InvalidTaggedFields { field, tag });
        let value = ApiVersionsResponse {
            finalized_features_epoch: 7,
            unknown_tagged_fields: tags[..].into(),
            ..Default::default()
        };
        refused(&value, 3, EncodeError::InvalidTaggedFields { field, tag });
    }

    // Valid unknown tags merge with the known ones in order.
    let tags = [raw(4), raw(2_000)];
    let value = ApiVersionsResponse {
        finalized_features_epoch: 3,
        unknown_tagged_fields: (&tags).into(),
        ..Default::default()
    };
    let bytes = encodes(&value, 3);
    let view = ApiVersionsResponseView::new(&bytes, 3).unwrap();
    assert_eq!(view.finalized_features_epoch(), 3);
    let seen: Vec<u32> = view.unknown_tagged_fields().map(|(t, _)| t).collect();
    assert_eq!(seen, [4, 2000]);
}

#[test]
fn a_refused_value_leaves_nothing_behind() {
    // The writer is per call: after a refusal and a short buffer, the same value at a
    // version that carries it encodes in full.
    let value = ListOffsetsRequest { isolation_level: 1, ..Default::default() };
    let mut buf = vec![0u8; 256];
    assert!(value.encode(1, &mut buf).is_err());
    assert!(value.encode(2, &mut buf[..3]).is_err());
    let n = value.encode(2, &mut buf).unwrap();
    assert_eq!(ListOffsetsRequest::decode(&buf[..n], 2).unwrap(), value);
}

#[test]
fn every_seed_body_encodes_exactly() {
    let body = |name: &str| {
        let frame = kwire_test_vector(name);
        frame[4..].to_vec()
    };
    // ApiVersions v4 response and ListOffsets v10 request: decoded, then encoded back.
    let bytes = body("apiversions_v4_response");
    let value = ApiVersionsResponse::decode(&bytes[4..], 4).unwrap();
    assert_eq!(encodes(&value, 4), bytes[4..]);
    let bytes = body("listoffsets_v10_request");
    let header_len = 2 + 2 + 4 + 2 + u16::from_be_bytes([bytes[8], bytes[9]]) as usize + 1;
    let value = ListOffsetsRequest::decode(&bytes[header_len..], 10).unwrap();
    assert_eq!(encodes(&value, 10), bytes[header_len..]);
}

fn kwire_test_vector(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/vectors/seed/{name}.hex", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits.chunks(2).map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap()).collect()
}
