//! `kwire::reflect::inspect` on frames of every version and of Apache Kafka 4.4.0, with
//! broker addresses rewritten by `kwire::filter::RewriteAddresses` between reading and
//! re-encoding: what `kwire proxy`'s log and `kwire decode` of a capture say of each frame.

mod common;

use kwire::filter::{FilterChain, RewriteAddresses, Verdict};
use kwire::messages::MetadataResponse;
use kwire::messages::metadata::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic};
use kwire::reflect::inspect::{self, Decoded, Roundtrip};
use kwire::{ApiKey, List, Str, dispatch};

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
fn rewrite(frame: &[u8], key: ApiKey, version: i16, to: fn(&str, i32) -> Option<(String, i32)>) -> Verdict {
    let mut chain = FilterChain::new();
    chain.push(RewriteAddresses::new(to));
    chain.on_response(frame, key, version)
}

#[test]
fn metadata_addresses_are_rewritten_at_every_version() {
    for version in ApiKey::Metadata.response_versions().min..=ApiKey::Metadata.response_versions().max {
        let before = response_frame(&metadata(&[(1, "broker-1.example", 9092), (2, "b2", 9093)]), version);
        let info = inspect::response(&before[4..], ApiKey::Metadata.to_i16(), version);
        assert_eq!(info.decoded, Decoded::Ok, "v{version}");
        assert_eq!(
            inspect::errors(&before[4..], ApiKey::Metadata.to_i16(), info.version),
            vec![6],
            "v{version}"
        );
        let to = |host: &str, port| {
            (host == "broker-1.example").then(|| ("127.0.0.1".to_string(), 40001 + port - 9092))
        };
        let Verdict::Replace(after) = rewrite(&before[4..], ApiKey::Metadata, version, to) else {
            panic!("v{version}")
        };
        let expected = response_frame(&metadata(&[(1, "127.0.0.1", 40001), (2, "b2", 9093)]), version);
        assert_eq!(after, expected[4..], "v{version}");
        assert_eq!(inspect::roundtrip_response(&after, ApiKey::Metadata.to_i16(), version), Roundtrip::Same);
    }
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
        let frame = common::vector(&format!("kafka44/responses/{name}.hex"));
        let same = rewrite(&frame[4..], key, version, |h, p| Some((h.to_string(), p)));
        assert_eq!(same, Verdict::Forward, "{name}: the same address changes nothing");
        let Verdict::Replace(moved) = rewrite(&frame[4..], key, version, |h, _| {
            assert_eq!(h, "127.0.0.1");
            Some(("proxy.test".into(), 1))
        }) else {
            panic!("{name}")
        };
        assert_eq!(moved.len(), frame.len() - 4 + 1, "{name}");
        assert_eq!(inspect::response(&frame[4..], key.to_i16(), version).decoded, Decoded::Ok, "{name}");
        let after = inspect::response(&moved, key.to_i16(), version);
        let errors = |frame: &[u8]| inspect::errors(frame, key.to_i16(), version);
        assert_eq!((after.decoded, errors(&moved)), (Decoded::Ok, errors(&frame[4..])), "{name}");
        assert_eq!(inspect::roundtrip_response(&moved, key.to_i16(), version), Roundtrip::Same, "{name}");
    }
}

#[test]
fn requests_of_unknown_apis_are_reported_not_failed() {
    // A request header of API key 999 (no such API) with client id "c", then junk.
    let frame = [3, 0xe7, 0, 9, 0, 0, 0, 5, 0, 1, b'c', 0, 1, 2, 3];
    assert!(matches!(inspect::request(&frame), Decoded::Unknown(_)));
    assert_eq!(inspect::roundtrip_request(&frame), Roundtrip::Unknown);
}

#[test]
fn malformed_known_requests_are_malformed() {
    // ApiVersions v3 with a truncated body.
    let frame = [0, 18, 0, 3, 0, 0, 0, 1, 0, 1, b'c', 0, 5, b'a'];
    assert!(matches!(inspect::request(&frame), Decoded::Malformed(_)));
}
