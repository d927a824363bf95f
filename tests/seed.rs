//! The six seed frames (the smallest legal frame of each message, laid out byte by byte in
//! the protocol pages): every field decoded and checked, and re-encoded byte for byte.

mod common;

use common::{unframe, vector};
use kwire::ApiKey;
use kwire::dispatch;
use kwire::frame::{self, RequestHeader};
use kwire::messages::{
    ApiVersionsRequest, ApiVersionsResponse, ListGroupsRequest, ListGroupsResponse, ListOffsetsRequest,
    ListOffsetsResponse, RequestBodyView, ResponseBodyView, api_versions, list_groups, list_offsets,
};
use kwire::{List, Str};

fn request_header_checks(h: &frame::RequestHeaderView<'_>, key: i16, version: i16) {
    assert_eq!(h.api_key(), key);
    assert_eq!(h.api_version(), version);
    assert_eq!(h.correlation_id(), 0);
    assert_eq!(h.client_id(), Some(""));
    assert_eq!(h.version(), 2);
    assert_eq!(h.unknown_tagged_fields().count(), 0);
    assert_eq!(h.as_bytes().len(), 11);
}

fn reencode_request(frame: &[u8], body: &impl kwire::AnyBody, version: i16) {
    let header = RequestHeader { correlation_id: 0, client_id: Some(""), unknown_tagged_fields: &[] };
    assert_eq!(dispatch::request_len(body, version, &header).unwrap(), frame.len());
    let mut out = vec![0u8; frame.len()];
    assert_eq!(dispatch::encode_request_with(body, version, &header, &mut out).unwrap(), frame.len());
    assert_eq!(out, frame);
}

fn reencode_response(frame: &[u8], body: &impl kwire::AnyBody, version: i16) {
    assert_eq!(dispatch::response_len(body, version).unwrap(), frame.len());
    let mut out = vec![0u8; frame.len()];
    assert_eq!(dispatch::encode_response(body, version, 0, &mut out).unwrap(), frame.len());
    assert_eq!(out, frame);
}

#[test]
fn api_versions_v4_request() {
    let bytes = vector("seed/apiversions_v4_request.hex");
    assert_eq!(bytes.len(), 18);
    let req = dispatch::parse_request(unframe(&bytes)).unwrap();
    request_header_checks(&req.header, 18, 4);
    let RequestBodyView::ApiVersions(body) = req.body else { panic!("wrong API") };
    assert_eq!(body.as_bytes().len(), 3);
    assert_eq!(body.client_software_name(), "");
    assert_eq!(body.client_software_version(), "");
    assert_eq!(body.unknown_tagged_fields().count(), 0);
    reencode_request(&bytes, &ApiVersionsRequest::default(), 4);
}

#[test]
fn api_versions_v4_response() {
    let bytes = vector("seed/apiversions_v4_response.hex");
    assert_eq!(bytes.len(), 23);
    let resp = dispatch::parse_response(unframe(&bytes), ApiKey::ApiVersions, 4).unwrap();
    assert_eq!(resp.header.version(), 0, "ApiVersions responses always use header v0");
    assert_eq!(resp.header.correlation_id(), 0);
    let ResponseBodyView::ApiVersions(body) = resp.body else { panic!("wrong API") };
    assert_eq!(body.as_bytes().len(), 15);
    assert_eq!(body.error_code(), 0);
    assert_eq!(body.api_keys().len(), 1);
    let key = body.api_keys().iter().next().unwrap();
    assert_eq!((key.api_key(), key.min_version(), key.max_version()), (0, 0, 0));
    assert_eq!(key.as_bytes().len(), 7);
    assert_eq!(body.throttle_time_ms(), 0);
    assert!(body.supported_features().is_empty());
    assert_eq!(body.finalized_features_epoch(), -1, "absent tagged field reads as its default");
    assert!(body.finalized_features().is_empty());
    assert!(!body.zk_migration_ready());
    let value = ApiVersionsResponse {
        api_keys: List::Owned(vec![api_versions::ApiVersion::default()]),
        ..Default::default()
    };
    reencode_response(&bytes, &value, 4);
}

#[test]
fn list_groups_v5_request() {
    let bytes = vector("seed/listgroups_v5_request.hex");
    assert_eq!(bytes.len(), 20);
    let req = dispatch::parse_request(unframe(&bytes)).unwrap();
    request_header_checks(&req.header, 16, 5);
    let RequestBodyView::ListGroups(body) = req.body else { panic!("wrong API") };
    let states: Vec<&str> = body.states_filter().iter().collect();
    let types: Vec<&str> = body.types_filter().iter().collect();
    assert_eq!(states, [""]);
    assert_eq!(types, [""]);
    let empty = [Str::Borrowed("")];
    let value = ListGroupsRequest {
        states_filter: (&empty).into(),
        types_filter: (&empty).into(),
        ..Default::default()
    };
    reencode_request(&bytes, &value, 5);
}

#[test]
fn list_groups_v5_response() {
    let bytes = vector("seed/listgroups_v5_response.hex");
    assert_eq!(bytes.len(), 22);
    let resp = dispatch::parse_response(unframe(&bytes), ApiKey::ListGroups, 5).unwrap();
    assert_eq!(resp.header.version(), 1);
    let ResponseBodyView::ListGroups(body) = resp.body else { panic!("wrong API") };
    assert_eq!(body.throttle_time_ms(), 0);
    assert_eq!(body.error_code(), 0);
    assert_eq!(body.groups().len(), 1);
    let g = body.groups().iter().next().unwrap();
    assert_eq!((g.group_id(), g.protocol_type(), g.group_state(), g.group_type()), ("", "", "", ""));
    assert_eq!(g.as_bytes(), [1, 1, 1, 1, 0]);
    let value = ListGroupsResponse {
        groups: List::Owned(vec![list_groups::ListedGroup::default()]),
        ..Default::default()
    };
    reencode_response(&bytes, &value, 5);
}

#[test]
fn list_offsets_v10_request() {
    let bytes = vector("seed/listoffsets_v10_request.hex");
    assert_eq!(bytes.len(), 46);
    let req = dispatch::parse_request(unframe(&bytes)).unwrap();
    request_header_checks(&req.header, 2, 10);
    let RequestBodyView::ListOffsets(body) = req.body else { panic!("wrong API") };
    assert_eq!(body.as_bytes().len(), 31);
    assert_eq!(body.replica_id(), 0);
    assert_eq!(body.isolation_level(), 0);
    assert_eq!(body.timeout_ms(), 0);
    assert_eq!(body.topics().len(), 1);
    let topic = body.topics().iter().next().unwrap();
    assert_eq!(topic.name(), "");
    assert_eq!(topic.as_bytes().len(), 20);
    let parts: Vec<_> = topic.partitions().iter().collect();
    assert_eq!(parts.len(), 1);
    let p = parts[0];
    assert_eq!((p.partition_index(), p.current_leader_epoch(), p.timestamp()), (0, 0, 0));
    assert_eq!(p.as_bytes().len(), 17);
    let partitions = [list_offsets::ListOffsetsPartition { current_leader_epoch: 0, ..Default::default() }];
    let topics = [list_offsets::ListOffsetsTopic { partitions: (&partitions).into(), ..Default::default() }];
    let value = ListOffsetsRequest { topics: (&topics).into(), ..Default::default() };
    reencode_request(&bytes, &value, 10);
}

#[test]
fn list_offsets_v10_response() {
    let bytes = vector("seed/listoffsets_v10_response.hex");
    assert_eq!(bytes.len(), 45);
    let resp = dispatch::parse_response(unframe(&bytes), ApiKey::ListOffsets, 10).unwrap();
    assert_eq!(resp.header.version(), 1);
    let ResponseBodyView::ListOffsets(body) = resp.body else { panic!("wrong API") };
    assert_eq!(body.throttle_time_ms(), 0);
    let topic = body.topics().iter().next().unwrap();
    assert_eq!(topic.name(), "");
    let p = topic.partitions().iter().next().unwrap();
    assert_eq!(
        (p.partition_index(), p.error_code(), p.timestamp(), p.offset(), p.leader_epoch()),
        (0, 0, 0, 0, 0)
    );
    assert_eq!(p.as_bytes().len(), 27);
    let partitions = [list_offsets::ListOffsetsPartitionResponse {
        timestamp: 0,
        offset: 0,
        leader_epoch: 0,
        ..Default::default()
    }];
    let topics =
        [list_offsets::ListOffsetsTopicResponse { partitions: (&partitions).into(), ..Default::default() }];
    let value = ListOffsetsResponse { topics: (&topics).into(), ..Default::default() };
    reencode_response(&bytes, &value, 10);
}
