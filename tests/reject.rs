//! Every rejection rule, with the exact error each decoder reports, and every
//! semantic error of the size step.

mod common;

use common::{unframe, vector};
use kwire::ApiKey;
use kwire::dispatch;
use kwire::messages::*;
use kwire::{DecodeError, DecodeErrorKind as K, EncodeError, RawTaggedField, Str, frame};

fn err(kind: K, offset: usize, field: &'static str) -> DecodeError {
    DecodeError::new(kind, offset, field)
}

/// The body of a seed frame (after size prefix and header).
fn seed_body(name: &str, header_len: usize) -> Vec<u8> {
    unframe(&vector(&format!("seed/{name}.hex")))[header_len..].to_vec()
}

/// ApiVersionsResponse v3: ErrorCode 0, no ApiKeys, ThrottleTimeMs 0, then `tags`.
fn api_versions_v3(tags: &[u8]) -> Vec<u8> {
    let mut b = vec![0, 0, 1, 0, 0, 0, 0];
    b.extend_from_slice(tags);
    b
}

fn api_versions_both(bytes: &[u8], version: i16) -> (Result<(), DecodeError>, Result<(), DecodeError>) {
    (
        ApiVersionsResponseView::new(bytes, version).map(drop),
        ApiVersionsResponse::decode(bytes, version).map(drop),
    )
}

#[test]
fn known_tagged_field_decodes() {
    let mut tags = vec![1, 1, 8];
    tags.extend_from_slice(&42i64.to_be_bytes());
    let bytes = api_versions_v3(&tags);
    let view = ApiVersionsResponseView::new(&bytes, 3).unwrap();
    assert_eq!(view.finalized_features_epoch(), 42);
    assert_eq!(view.unknown_tagged_fields().count(), 0);
    assert_eq!(ApiVersionsResponse::decode(&bytes, 3).unwrap().finalized_features_epoch, 42);
}

#[test]
fn unknown_tagged_fields_are_kept() {
    let bytes = api_versions_v3(&[2, 7, 1, 0xaa, 9, 0]);
    let view = ApiVersionsResponseView::new(&bytes, 3).unwrap();
    let unknown: Vec<_> = view.unknown_tagged_fields().collect();
    assert_eq!(unknown, [(7, &[0xaa][..]), (9, &[][..])]);
    let value = ApiVersionsResponse::decode(&bytes, 3).unwrap();
    assert_eq!(value.unknown_tagged_fields.len(), 2);
    let mut out = vec![0; bytes.len()];
    assert_eq!(value.encode(3, &mut out), Ok(bytes.len()));
    assert_eq!(out, bytes, "unknown tagged fields are written back");
}

#[test]
fn duplicate_tag() {
    let mut tags = vec![2, 1, 8, 0, 0, 0, 0, 0, 0, 0, 0, 1, 8];
    tags.extend_from_slice(&[0; 8]);
    let expected = err(K::TagOutOfOrder(1), 18, "ApiVersionsResponse._tagged_fields");
    assert_eq!(api_versions_both(&api_versions_v3(&tags), 3), (Err(expected), Err(expected)));
}

#[test]
fn descending_tags() {
    let expected = err(K::TagOutOfOrder(5), 10, "ApiVersionsResponse._tagged_fields");
    assert_eq!(api_versions_both(&api_versions_v3(&[2, 9, 0, 5, 0]), 3), (Err(expected), Err(expected)));
}

#[test]
fn tagged_size_larger_than_content() {
    let mut tags = vec![1, 1, 9];
    tags.extend_from_slice(&[0; 9]);
    let expected = err(
        K::TaggedSizeMismatch { tag: 1, declared: 9, actual: 8 },
        18,
        "ApiVersionsResponse._tagged_fields",
    );
    assert_eq!(api_versions_both(&api_versions_v3(&tags), 3), (Err(expected), Err(expected)));
}

#[test]
fn tagged_size_smaller_than_content() {
    let mut tags = vec![1, 1, 7];
    tags.extend_from_slice(&[0; 7]);
    let expected =
        err(K::Truncated { needed: 8, available: 7 }, 10, "ApiVersionsResponse.FinalizedFeaturesEpoch");
    assert_eq!(api_versions_both(&api_versions_v3(&tags), 3), (Err(expected), Err(expected)));
}

#[test]
fn tagged_section_with_huge_size() {
    // One tag claiming 2^32 - 1 bytes.
    let expected =
        err(K::Truncated { needed: u32::MAX, available: 0 }, 14, "ApiVersionsResponse._tagged_fields");
    let bytes = api_versions_v3(&[1, 9, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert_eq!(api_versions_both(&bytes, 3), (Err(expected), Err(expected)));
}

#[test]
fn null_in_non_nullable_string() {
    // ListOffsets v10 request: one topic whose compact name length is 0 (null).
    let mut body = seed_body("listoffsets_v10_request", 11);
    assert_eq!(body[6], 1, "the topic name's compact length");
    body[6] = 0;
    let expected = err(K::UnexpectedNull, 6, "ListOffsetsTopic.Name");
    assert_eq!(ListOffsetsRequestView::new(&body, 10).map(drop), Err(expected));
    assert_eq!(ListOffsetsRequest::decode(&body, 10).map(drop), Err(expected));
}

#[test]
fn null_in_non_nullable_array() {
    // ListOffsets v1 request: ReplicaId, then a topics count of -1.
    let body = [0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
    let expected = err(K::UnexpectedNull, 4, "ListOffsetsRequest.Topics");
    assert_eq!(ListOffsetsRequestView::new(&body, 1).map(drop), Err(expected));
    assert_eq!(ListOffsetsRequest::decode(&body, 1).map(drop), Err(expected));
}

#[test]
fn null_classic_string() {
    // ListGroups v2 response: throttle, error code, one group whose id has length -1.
    let body = [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0, 0];
    let expected = err(K::UnexpectedNull, 10, "ListedGroup.GroupId");
    assert_eq!(ListGroupsResponseView::new(&body, 2).map(drop), Err(expected));
    assert_eq!(ListGroupsResponse::decode(&body, 2).map(drop), Err(expected));
}

#[test]
fn trailing_bytes() {
    let mut body = seed_body("listoffsets_v10_request", 11);
    let len = body.len();
    body.push(0);
    let expected = err(K::TrailingBytes(1), len, "ListOffsetsRequest");
    assert_eq!(ListOffsetsRequestView::new(&body, 10).map(drop), Err(expected));
    assert_eq!(ListOffsetsRequest::decode(&body, 10).map(drop), Err(expected));
}

#[test]
fn version_outside_valid_range() {
    let body = seed_body("listoffsets_v10_request", 11);
    for v in [0, 12, -1] {
        let expected = err(K::UnsupportedVersion(v), 0, "ListOffsetsRequest");
        assert_eq!(ListOffsetsRequestView::new(&body, v).map(drop), Err(expected));
        assert_eq!(ListOffsetsRequest::decode(&body, v).map(drop), Err(expected));
    }
}

#[test]
fn over_long_and_overflowing_varints() {
    // ListGroups v3 request body is only a tagged-field count.
    let too_long = [0x80, 0x80, 0x80, 0x80, 0x80, 0x00];
    let expected = err(K::VarintTooLong, 0, "ListGroupsRequest._tagged_fields");
    assert_eq!(ListGroupsRequestView::new(&too_long, 3).map(drop), Err(expected));
    assert_eq!(ListGroupsRequest::decode(&too_long, 3).map(drop), Err(expected));
    // Bits beyond 32 in the fifth byte are dropped, as Kafka's `ByteUtils` drops them: the
    // count reads as 2^32 - 1, more fields than bytes left.
    let overflow = [0xff, 0xff, 0xff, 0xff, 0x1f];
    let expected = err(K::ArrayTooLong(u32::MAX), 0, "ListGroupsRequest._tagged_fields");
    assert_eq!(ListGroupsRequestView::new(&overflow, 3).map(drop), Err(expected));
    assert_eq!(ListGroupsRequest::decode(&overflow, 3).map(drop), Err(expected));
}

#[test]
fn string_over_32767() {
    // ListGroups v3 response, one group whose id claims 32768 bytes (compact length
    // 32769): refused before the bytes are looked at, as Apache Kafka does.
    let body = [0, 0, 0, 0, 0, 0, 2, 0x81, 0x80, 0x02];
    let expected = err(K::StringTooLong(32768), 7, "ListedGroup.GroupId");
    assert_eq!(ListGroupsResponseView::new(&body, 3).map(drop), Err(expected));
    assert_eq!(ListGroupsResponse::decode(&body, 3).map(drop), Err(expected));
    // A classic length cannot say 32768: 0x8000 is -32768.
    let body = [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x80, 0x00];
    let expected = err(K::InvalidLength(-32768), 10, "ListedGroup.GroupId");
    assert_eq!(ListGroupsResponseView::new(&body, 2).map(drop), Err(expected));
    assert_eq!(ListGroupsResponse::decode(&body, 2).map(drop), Err(expected));
}

#[test]
fn array_count_beyond_the_input_fails_before_allocating() {
    // A 10-byte ListOffsets v1 request body claiming 2^31 - 1 topics.
    let body = [0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0];
    let expected = err(K::ArrayTooLong(i32::MAX as u32), 4, "ListOffsetsRequest.Topics");
    assert_eq!(ListOffsetsRequestView::new(&body, 1).map(drop), Err(expected));
    assert_eq!(ListOffsetsRequest::decode(&body, 1).map(drop), Err(expected));
    // -2 is not a length.
    let body = [0, 0, 0, 0, 0xff, 0xff, 0xff, 0xfe];
    let expected = err(K::InvalidLength(-2), 4, "ListOffsetsRequest.Topics");
    assert_eq!(ListOffsetsRequestView::new(&body, 1).map(drop), Err(expected));
}

#[test]
fn invalid_utf8_is_found_when_the_view_is_built() {
    // A topic name that is not UTF-8, nested in an array: the view is checked whole, so
    // construction rejects it, as the reference decoder does.
    let mut body = seed_body("listoffsets_v10_request", 11);
    body[6] = 2; // name of one byte...
    body.insert(7, 0xff); // ...that is not UTF-8
    let expected = err(K::InvalidUtf8, 6, "ListOffsetsTopic.Name");
    assert_eq!(ListOffsetsRequestView::new(&body, 10).map(drop), Err(expected));
    assert_eq!(ListOffsetsRequest::decode(&body, 10).map(drop), Err(expected));
}

#[test]
fn a_string_cut_inside_a_character_is_invalid_even_when_the_body_is_text() {
    // Metadata v4 request: one topic named "\xc3", then AllowAutoTopicCreation = 0xa9 (any
    // non-zero byte is true). The body as a whole is valid UTF-8 ("é" spans the name's only
    // byte and the next field), so the view checks strings by their ends; the name alone
    // ends in the middle of a character and must still be rejected.
    let body = [0, 0, 0, 1, 0, 1, 0xc3, 0xa9];
    assert!(std::str::from_utf8(&body).is_ok());
    let expected = err(K::InvalidUtf8, 4, "MetadataRequestTopic.Name");
    assert_eq!(MetadataRequestView::new(&body, 4).map(drop), Err(expected));
    assert_eq!(MetadataRequest::decode(&body, 4).map(drop), Err(expected));
    // The same name completed inside the string is fine.
    let body = [0, 0, 0, 1, 0, 2, 0xc3, 0xa9, 1];
    let view = MetadataRequestView::new(&body, 4).unwrap();
    assert_eq!(view.topics().unwrap().iter().next().unwrap().name(), Some("é"));
}

#[test]
fn truncation_at_every_offset_of_every_seed_frame() {
    for (name, key, is_request) in [
        ("apiversions_v4_request", ApiKey::ApiVersions, true),
        ("apiversions_v4_response", ApiKey::ApiVersions, false),
        ("listgroups_v5_request", ApiKey::ListGroups, true),
        ("listgroups_v5_response", ApiKey::ListGroups, false),
        ("listoffsets_v10_request", ApiKey::ListOffsets, true),
        ("listoffsets_v10_response", ApiKey::ListOffsets, false),
    ] {
        let whole = vector(&format!("seed/{name}.hex"));
        let frame_bytes = unframe(&whole);
        let version = if key == ApiKey::ApiVersions {
            4
        } else if key == ApiKey::ListGroups {
            5
        } else {
            10
        };
        let header_len = if is_request {
            11
        } else if key == ApiKey::ApiVersions {
            4
        } else {
            5
        };
        for cut in 0..frame_bytes.len() {
            let part = &frame_bytes[..cut];
            let frame_err = if is_request {
                dispatch::parse_request(part).err().map(|e| e.to_string())
            } else {
                dispatch::parse_response(part, key, version).err().map(|e| e.to_string())
            };
            assert!(frame_err.is_some(), "{name}: frame cut at {cut} was accepted");
            if cut >= header_len {
                let body = &part[header_len..];
                let view = RequestBodyView::new(body, key, version).map(drop);
                let view =
                    if is_request { view } else { ResponseBodyView::new(body, key, version).map(drop) };
                let reference = if is_request {
                    RequestBody::decode(body, key, version).map(drop)
                } else {
                    ResponseBody::decode(body, key, version).map(drop)
                };
                for (which, r) in [("view", view), ("reference", reference)] {
                    let e = r.expect_err(&format!("{name}: {which} accepted a body cut at {cut}"));
                    assert!(
                        matches!(e.kind(), K::Truncated { .. } | K::ArrayTooLong(_)),
                        "{name} cut at {cut}: {which} said {e}"
                    );
                }
            }
        }
        // Cutting the stream anywhere before the end asks for more bytes.
        for cut in 0..whole.len() {
            let status = frame::split_frame(&whole[..cut], frame::DEFAULT_MAX_FRAME_SIZE).unwrap();
            let needed = if cut < 4 { 4 - cut } else { whole.len() - cut };
            assert_eq!(status, frame::FrameStatus::Incomplete { needed });
        }
    }
}

#[test]
fn frame_size_limits() {
    let negative = [0xff, 0xff, 0xff, 0xfe];
    assert_eq!(frame::split_frame(&negative, 100), Err(err(K::InvalidLength(-2), 0, "Frame.size").into()));
    let big = 101u32.to_be_bytes();
    assert_eq!(
        frame::split_frame(&big, 100),
        Err(err(K::FrameTooLarge { size: 101, max: 100 }, 0, "Frame.size").into())
    );
}

#[test]
fn unsupported_request_version_and_key() {
    let mut f = unframe(&vector("seed/apiversions_v4_request.hex")).to_vec();
    f[3] = 6; // ApiVersions v6
    f[4..8].copy_from_slice(&77i32.to_be_bytes());
    assert_eq!(
        dispatch::parse_request(&f).map(drop),
        Err(frame::FrameError::UnsupportedVersion {
            api_key: ApiKey::ApiVersions,
            api_version: 6,
            correlation_id: 77
        })
    );
    f[1] = 99;
    assert_eq!(
        dispatch::parse_request(&f).map(drop),
        Err(frame::FrameError::UnsupportedApiKey { api_key: 99, api_version: 6, correlation_id: 77 })
    );
}

// ------------------------------------------------------------------ encoding

#[test]
fn encode_unsupported_version() {
    let value = ListOffsetsRequest::default();
    let expected = EncodeError::UnsupportedVersion { message: "ListOffsetsRequest", version: 0 };
    assert_eq!(value.encoded_len(0), Err(expected));
    assert_eq!(value.encode(0, &mut [0; 64]), Err(expected));
}

#[test]
fn encode_non_default_field_the_version_cannot_carry() {
    let value = ListOffsetsRequest { isolation_level: 1, ..Default::default() };
    let expected = EncodeError::FieldNotInVersion { field: "ListOffsetsRequest.IsolationLevel", version: 1 };
    assert_eq!(value.encoded_len(1), Err(expected));
    assert!(value.encoded_len(2).is_ok());
    // Nested: LeaderEpoch (v4+, not ignorable) in a v3 response.
    let parts = [list_offsets::ListOffsetsPartitionResponse { leader_epoch: 5, ..Default::default() }];
    let topics =
        [list_offsets::ListOffsetsTopicResponse { partitions: (&parts).into(), ..Default::default() }];
    let value = ListOffsetsResponse { topics: (&topics).into(), ..Default::default() };
    let expected =
        EncodeError::FieldNotInVersion { field: "ListOffsetsPartitionResponse.LeaderEpoch", version: 3 };
    assert_eq!(value.encoded_len(3), Err(expected));
}

#[test]
fn encode_drops_ignorable_fields() {
    // TimeoutMs (v10+) is ignorable: dropped silently at v9, as Apache Kafka does.
    let value = ListOffsetsRequest { timeout_ms: 5000, ..Default::default() };
    let n = value.encoded_len(9).unwrap();
    let mut buf = vec![0; n];
    value.encode(9, &mut buf).unwrap();
    assert_eq!(ListOffsetsRequestView::new(&buf, 9).unwrap().timeout_ms(), 0);
    assert_eq!(value.encoded_len(10), Ok(n + 4));
}

#[test]
fn encode_string_over_32767() {
    let long = "x".repeat(32768);
    let groups = [list_groups::ListedGroup { group_id: Str::Borrowed(&long), ..Default::default() }];
    let value = ListGroupsResponse { groups: (&groups).into(), ..Default::default() };
    let expected = EncodeError::StringTooLong { field: "ListedGroup.GroupId", len: 32768 };
    assert_eq!(value.encoded_len(2), Err(expected));
    assert_eq!(value.encoded_len(5), Err(expected), "compact strings have the same limit");
}

#[test]
fn encode_counts_that_overflow() {
    assert_eq!(
        kwire::wire::array_prefix_size(i32::MAX as usize, false, "X.Y"),
        Err(EncodeError::TooLong { field: "X.Y" })
    );
    assert_eq!(kwire::wire::bytes_size(usize::MAX, true, "X.Y"), Err(EncodeError::TooLong { field: "X.Y" }));
}

#[test]
fn encode_unknown_tags_out_of_order_or_known() {
    let raw = |tag| RawTaggedField { tag, data: (&[1u8][..]).into() };
    let tags = [raw(9), raw(7)];
    let value = ApiVersionsResponse { unknown_tagged_fields: (&tags).into(), ..Default::default() };
    let expected = EncodeError::InvalidTaggedFields { field: "ApiVersionsResponse._tagged_fields", tag: 7 };
    assert_eq!(value.encoded_len(3), Err(expected));
    let tags = [raw(1)];
    let value = ApiVersionsResponse { unknown_tagged_fields: (&tags).into(), ..Default::default() };
    let expected = EncodeError::InvalidTaggedFields { field: "ApiVersionsResponse._tagged_fields", tag: 1 };
    assert_eq!(value.encoded_len(3), Err(expected), "tag 1 is FinalizedFeaturesEpoch");
    // Unknown tags merge in order with known ones.
    let tags = [raw(2_000), raw(4)];
    let tags_sorted = [tags[1].clone(), tags[0].clone()];
    let value = ApiVersionsResponse {
        finalized_features_epoch: 3,
        unknown_tagged_fields: (&tags_sorted).into(),
        ..Default::default()
    };
    let mut buf = vec![0; value.encoded_len(3).unwrap()];
    value.encode(3, &mut buf).unwrap();
    let view = ApiVersionsResponseView::new(&buf, 3).unwrap();
    assert_eq!(view.finalized_features_epoch(), 3);
    let seen: Vec<u32> = view.unknown_tagged_fields().map(|(t, _)| t).collect();
    assert_eq!(seen, [4, 2000]);
}

#[test]
fn encode_buffer_too_small() {
    let value = ListOffsetsRequest::default();
    let n = value.encoded_len(10).unwrap();
    assert_eq!(
        value.encode(10, &mut vec![0; n - 1]),
        Err(EncodeError::BufferTooSmall { needed: n, available: n - 1 })
    );
}
