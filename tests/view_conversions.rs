//! `From<XView>` for every generated struct, not only bodies: one topic (or partition) can
//! be taken out of a view without converting the whole body, as a filter rewriting one topic
//! does. Each conversion must equal the value that was encoded, and borrow its strings from
//! the input.

use kwire::messages::list_offsets::*;
use kwire::messages::metadata::*;
use kwire::types::{List, Str, Uuid};

fn encode<F: Fn(&mut [u8]) -> usize>(len: usize, write: F) -> Vec<u8> {
    let mut buf = vec![0; len];
    assert_eq!(write(&mut buf), len);
    buf
}

fn partition(index: i32, leader: i32, replicas: &'static [i32]) -> MetadataResponsePartition<'static> {
    MetadataResponsePartition {
        partition_index: index,
        leader_id: leader,
        leader_epoch: 7,
        replica_nodes: List::Borrowed(replicas),
        isr_nodes: List::Borrowed(&replicas[..1]),
        ..Default::default()
    }
}

fn metadata() -> MetadataResponse<'static> {
    MetadataResponse {
        throttle_time_ms: 3,
        brokers: List::Owned(vec![MetadataResponseBroker {
            node_id: 1,
            host: Str::Borrowed("broker-1"),
            port: 9092,
            rack: Some(Str::Borrowed("rack-a")),
            ..Default::default()
        }]),
        cluster_id: Some(Str::Borrowed("cluster")),
        topics: List::Owned(vec![
            MetadataResponseTopic {
                name: Some(Str::Borrowed("orders")),
                topic_id: Uuid([7; 16]),
                partitions: List::Owned(vec![partition(0, 1, &[1, 2, 3]), partition(1, 2, &[2, 3])]),
                ..Default::default()
            },
            MetadataResponseTopic {
                error_code: 3,
                name: None,
                topic_id: Uuid([9; 16]),
                ..Default::default()
            },
        ]),
        ..Default::default()
    }
}

#[test]
fn one_topic_of_a_metadata_response_converts_alone() {
    let value = metadata();
    for version in [12, 13] {
        let bytes = encode(value.encoded_len(version).unwrap(), |b| value.encode(version, b).unwrap());
        let view = MetadataResponseView::new(&bytes, version).unwrap();

        // One topic, with its partitions (a nested array of structs of arrays).
        let topic = view.topics().get(0).unwrap();
        let converted = MetadataResponseTopic::from(topic);
        let want = &value.topics.as_slice()[0];
        assert_eq!(&converted, want, "v{version}");
        // The name is borrowed from the input, not copied.
        let Some(Str::Borrowed(name)) = converted.name else { panic!("v{version}: name not borrowed") };
        assert!(bytes.as_ptr_range().contains(&name.as_ptr()), "v{version}: name outside the input");

        // One partition of it, and a null topic name.
        let p = MetadataResponsePartition::from(topic.partitions().get(1).unwrap());
        assert_eq!(p, partition(1, 2, &[2, 3]), "v{version}");
        let second = MetadataResponseTopic::from(view.topics().get(1).unwrap());
        assert_eq!(second.name, None);
        assert_eq!(second.error_code, 3);
        assert_eq!(&second, &value.topics.as_slice()[1]);

        // A broker, with a nullable string; the body as a whole agrees with its parts.
        let broker = MetadataResponseBroker::from(view.brokers().get(0).unwrap());
        assert_eq!(&broker, &value.brokers.as_slice()[0]);
        assert_eq!(MetadataResponse::from(view), value);
    }
}

#[test]
fn partitions_convert_alone_in_every_version() {
    // ListOffsets v1 has no current leader epoch (v4+): there the view gives its default.
    let value = ListOffsetsRequest {
        replica_id: -1,
        topics: List::Owned(vec![ListOffsetsTopic {
            name: Str::Borrowed("t"),
            partitions: List::Owned(vec![ListOffsetsPartition {
                partition_index: 4,
                current_leader_epoch: -1,
                timestamp: -2,
                ..Default::default()
            }]),
            ..Default::default()
        }]),
        ..Default::default()
    };
    for version in [1, 4, 10] {
        let bytes = encode(value.encoded_len(version).unwrap(), |b| value.encode(version, b).unwrap());
        let view = ListOffsetsRequestView::new(&bytes, version).unwrap();
        let topic = ListOffsetsTopic::from(view.topics().get(0).unwrap());
        assert_eq!(&topic, &value.topics.as_slice()[0], "v{version}");
        let partition =
            ListOffsetsPartition::from(view.topics().get(0).unwrap().partitions().get(0).unwrap());
        assert_eq!(partition.partition_index, 4);
        assert_eq!(partition.current_leader_epoch, -1);
        assert_eq!(partition.timestamp, -2);
    }
}
