//! OffsetForLeaderEpoch against `kwire::broker`, over raw frames (hermetic, loopback only):
//! the end offset of each leader epoch as Kafka's leader epoch cache gives it (the current
//! epoch ends at the log end offset, an older one where the next starts, an epoch that never
//! got a batch folds into the one before, an unknown one is -1/-1), the leader checks
//! (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, unknown partitions),
//! after leaders move and nodes stop, after DeleteRecords, and after an unclean leader
//! election (`Broker::elect_unclean`) cuts the log, which is how a client finds its position
//! truncated. With the `interop` feature, the Java consumer detects that truncation.
#![cfg(feature = "broker")]

mod common;

use common::raw::{Conn, answer};
use kwire::broker::{Broker, Config, Fault};
use kwire::records::{BatchBuilder, NewRecord, RecordBatches};
use kwire::{ApiKey, ErrorCode};

const NONE: i16 = 0;
const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const FENCED_LEADER_EPOCH: i16 = 74;
const UNKNOWN_LEADER_EPOCH: i16 = 75;

/// A batch of one record per value.
fn batch(values: &[&str]) -> Vec<u8> {
    let records: Vec<NewRecord<'_>> = values
        .iter()
        .map(|v| NewRecord { key: None, value: Some(v.as_bytes()), headers: &[], timestamp: None })
        .collect();
    let mut out = Vec::new();
    BatchBuilder::new(0, 1_700_000_000_000, &records).encode_to_vec(&mut out).unwrap();
    out
}

/// A partition asked for: (topic, partition).
type Asked = (String, i32);
/// A partition's answer: (error, leader epoch, end offset).
type EpochEnd = (i16, i32, i64);

/// OffsetForLeaderEpoch of one partition: (error, leader epoch, end offset).
fn epoch_end(
    c: &mut Conn,
    topic: &str,
    partition: i32,
    current: i32,
    epoch: i32,
    version: i16,
) -> (i16, i32, i64) {
    let all = epoch_ends(c, &[(topic, partition)], current, epoch, version);
    all[0].1
}

/// OffsetForLeaderEpoch of several partitions (one topic entry per partition, in order):
/// ((topic, partition), (error, leader epoch, end offset)) as answered.
fn epoch_ends(
    c: &mut Conn,
    asked: &[(&str, i32)],
    current: i32,
    epoch: i32,
    version: i16,
) -> Vec<(Asked, EpochEnd)> {
    use kwire::messages::offset_for_leader_epoch::{
        OffsetForLeaderEpochRequest, OffsetForLeaderPartition, OffsetForLeaderTopic,
    };
    let parts: Vec<[OffsetForLeaderPartition<'_>; 1]> = asked
        .iter()
        .map(|&(_, p)| {
            [OffsetForLeaderPartition {
                partition: p,
                current_leader_epoch: current,
                leader_epoch: epoch,
                ..Default::default()
            }]
        })
        .collect();
    let topics: Vec<OffsetForLeaderTopic<'_>> = asked
        .iter()
        .zip(&parts)
        .map(|(&(t, _), p)| OffsetForLeaderTopic {
            topic: t.into(),
            partitions: p.into(),
            ..Default::default()
        })
        .collect();
    let req =
        OffsetForLeaderEpochRequest { replica_id: -1, topics: (&topics[..]).into(), ..Default::default() };
    let frame = c.call(&req, version);
    let r = answer!(frame, OffsetForLeaderEpoch, version);
    r.topics()
        .iter()
        .flat_map(|t| {
            t.partitions().iter().map(move |p| {
                ((t.topic().to_string(), p.partition()), (p.error_code(), p.leader_epoch(), p.end_offset()))
            })
        })
        .collect()
}

/// Produce v9 of one batch: (error, base offset).
fn produce(c: &mut Conn, topic: &str, partition: i32, values: &[&str]) -> (i16, i64) {
    use kwire::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
    let b = batch(values);
    let data =
        [PartitionProduceData { index: partition, records: Some((&b[..]).into()), ..Default::default() }];
    let topics =
        [TopicProduceData { name: topic.into(), partition_data: (&data).into(), ..Default::default() }];
    let req =
        ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: (&topics).into(), ..Default::default() };
    let frame = c.call(&req, 9);
    let r = answer!(frame, Produce, 9);
    let p = r.responses().iter().next().unwrap().partition_responses().iter().next().unwrap();
    (p.error_code(), p.base_offset())
}

/// Fetch v12 (sessionless, no epoch check) from `offset`: (error, high watermark, the
/// batches' (base offset, partition leader epoch, record count)).
fn fetch(c: &mut Conn, topic: &str, partition: i32, offset: i64) -> (i16, i64, Vec<(i64, i32, i32)>) {
    use kwire::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
    let parts = [FetchPartition {
        partition,
        current_leader_epoch: -1,
        fetch_offset: offset,
        partition_max_bytes: 1 << 20,
        ..Default::default()
    }];
    let topics = [FetchTopic { topic: topic.into(), partitions: (&parts).into(), ..Default::default() }];
    let req = FetchRequest {
        max_wait_ms: 0,
        min_bytes: 0,
        max_bytes: 50 << 20,
        session_epoch: -1,
        topics: (&topics).into(),
        ..Default::default()
    };
    let frame = c.call(&req, 12);
    let r = answer!(frame, Fetch, 12);
    let p = r.responses().iter().next().unwrap().partitions().iter().next().unwrap();
    let batches = RecordBatches::new(p.records().map(|r| r.bytes()).unwrap_or_default())
        .map(|b| {
            let b = b.unwrap();
            (b.base_offset(), b.partition_leader_epoch(), b.last_offset_delta() + 1)
        })
        .collect();
    (p.error_code(), p.high_watermark(), batches)
}

#[test]
fn api_versions_lists_it() {
    use kwire::messages::ApiVersionsRequest;
    let b = Broker::start(Config::default()).unwrap();
    let mut c = Conn::open(b.addr());
    let frame = c.call(&ApiVersionsRequest::default(), 3);
    let r = answer!(frame, ApiVersions, 3);
    let k = r.api_keys().iter().find(|k| k.api_key() == ApiKey::OffsetForLeaderEpoch.to_i16()).unwrap();
    assert_eq!((k.min_version(), k.max_version()), (2, 4));
    // Limited like any API.
    let b =
        Broker::start(Config { max_versions: vec![(ApiKey::OffsetForLeaderEpoch, 3)], ..Config::default() })
            .unwrap();
    assert_eq!(b.versions(ApiKey::OffsetForLeaderEpoch).map(|v| (v.min, v.max)), Some((2, 3)));
}

#[test]
fn one_node_the_current_epoch_ends_at_the_log_end() {
    let b = Broker::start(Config::default()).unwrap();
    assert!(b.create_topic("t", 2));
    let mut c = Conn::open(b.addr());
    // An empty log: epoch 0 ends at 0.
    for v in 2..=4 {
        assert_eq!(epoch_end(&mut c, "t", 0, -1, 0, v), (NONE, 0, 0), "v{v}");
    }
    assert_eq!(produce(&mut c, "t", 0, &["a", "b"]), (NONE, 0));
    assert_eq!(produce(&mut c, "t", 0, &["c"]), (NONE, 2));
    for v in 2..=4 {
        assert_eq!(epoch_end(&mut c, "t", 0, -1, 0, v), (NONE, 0, 3), "v{v}");
        assert_eq!(epoch_end(&mut c, "t", 0, 0, 0, v), (NONE, 0, 3), "v{v}");
        // No epoch at or below -1, none above the current: -1 and -1.
        assert_eq!(epoch_end(&mut c, "t", 0, -1, -1, v), (NONE, -1, -1), "v{v}");
        assert_eq!(epoch_end(&mut c, "t", 0, -1, 1, v), (NONE, -1, -1), "v{v}");
        // The current leader epoch is checked as Fetch checks it.
        assert_eq!(epoch_end(&mut c, "t", 0, 1, 0, v), (UNKNOWN_LEADER_EPOCH, -1, -1), "v{v}");
    }
    // The other partition has its own log.
    assert_eq!(epoch_end(&mut c, "t", 1, -1, 0, 4), (NONE, 0, 0));
    // Unknown topics and partitions, beside a known one in the same request.
    let all = epoch_ends(&mut c, &[("nope", 0), ("t", 7), ("t", -1), ("t", 0)], -1, 0, 4);
    let got: Vec<(&str, i32, (i16, i32, i64))> = all.iter().map(|((t, p), r)| (t.as_str(), *p, *r)).collect();
    assert_eq!(
        got,
        [
            ("nope", 0, (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)),
            ("t", 7, (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)),
            ("t", -1, (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)),
            ("t", 0, (NONE, 0, 3)),
        ]
    );
    // Asking creates nothing.
    assert!(b.leader("nope", 0).is_none());
}

#[test]
fn leaders_move_and_each_epoch_ends_where_the_next_starts() {
    let b = Broker::start(Config { nodes: 3, ..Config::default() }).unwrap();
    assert!(b.create_topic("t", 1));
    let conn = |id: i32| Conn::open(b.node_addr(id).unwrap());
    let (first, e0) = b.leader("t", 0).unwrap();
    assert_eq!(e0, 0);
    let mut c = conn(first);
    assert_eq!(produce(&mut c, "t", 0, &["a"]), (NONE, 0));
    assert_eq!(produce(&mut c, "t", 0, &["b"]), (NONE, 1));
    let ids = b.node_ids();
    let second = *ids.iter().find(|&&i| i != first).unwrap();
    assert_eq!(b.move_leader("t", 0, second).unwrap(), 1);
    let mut c2 = conn(second);
    assert_eq!(produce(&mut c2, "t", 0, &["c"]), (NONE, 2));
    // Epoch 2 gets no batch: epoch 3 starts where it did, and it is forgotten (Kafka's
    // cache drops an entry a later one starts at or before).
    assert_eq!(b.move_leader("t", 0, first).unwrap(), 2);
    assert_eq!(b.move_leader("t", 0, second).unwrap(), 3);
    assert_eq!(b.leader_epochs("t", 0).unwrap(), [(0, 0), (1, 2), (3, 3)]);
    let ask = |c: &mut Conn, epoch: i32| epoch_end(c, "t", 0, 3, epoch, 4);
    assert_eq!(ask(&mut c2, 0), (NONE, 0, 2));
    assert_eq!(ask(&mut c2, 1), (NONE, 1, 3));
    assert_eq!(ask(&mut c2, 2), (NONE, 1, 3), "an epoch without batches folds into the one before");
    assert_eq!(ask(&mut c2, 3), (NONE, 3, 3));
    assert_eq!(ask(&mut c2, 4), (NONE, -1, -1));
    assert_eq!(produce(&mut c2, "t", 0, &["d", "e"]), (NONE, 3));
    assert_eq!(ask(&mut c2, 3), (NONE, 3, 5), "the current epoch ends at the log end");
    // The new batch carries epoch 3, the old ones theirs.
    let (_, hw, batches) = fetch(&mut c2, "t", 0, 0);
    assert_eq!(hw, 5);
    assert_eq!(batches, [(0, 0, 1), (1, 0, 1), (2, 1, 1), (3, 3, 2)]);
    // The leader checks: another node, an old epoch, a newer one; -1 is unchecked.
    let mut old = conn(first);
    assert_eq!(ask(&mut old, 0), (NOT_LEADER_OR_FOLLOWER, -1, -1));
    assert_eq!(epoch_end(&mut c2, "t", 0, 1, 0, 4), (FENCED_LEADER_EPOCH, -1, -1));
    assert_eq!(epoch_end(&mut c2, "t", 0, 4, 0, 3), (UNKNOWN_LEADER_EPOCH, -1, -1));
    assert_eq!(epoch_end(&mut c2, "t", 0, -1, 1, 2), (NONE, 1, 3));
    // The leader stops: the partition moves on, epoch 4 starts at the end.
    b.stop_node(second).unwrap();
    let (third, e4) = b.leader("t", 0).unwrap();
    assert_eq!(e4, 4);
    let mut c3 = conn(third);
    assert_eq!(epoch_end(&mut c3, "t", 0, 4, 3, 4), (NONE, 3, 5));
    assert_eq!(epoch_end(&mut c3, "t", 0, 4, 4, 4), (NONE, 4, 5));
    assert_eq!(epoch_end(&mut c3, "t", 0, 3, 3, 4), (FENCED_LEADER_EPOCH, -1, -1));
}

#[test]
fn an_unclean_election_cuts_the_log_and_the_old_epoch_ends_at_the_cut() {
    let b = Broker::start(Config { nodes: 2, ..Config::default() }).unwrap();
    assert!(b.create_topic("t", 1));
    let (first, _) = b.leader("t", 0).unwrap();
    let other = *b.node_ids().iter().find(|&&i| i != first).unwrap();
    let mut c = Conn::open(b.node_addr(first).unwrap());
    assert_eq!(produce(&mut c, "t", 0, &["a", "b"]), (NONE, 0));
    assert_eq!(produce(&mut c, "t", 0, &["c", "d", "e"]), (NONE, 2));
    assert_eq!(produce(&mut c, "t", 0, &["f"]), (NONE, 5));
    // A consumer read all six at epoch 0, its position is 6.
    assert_eq!(epoch_end(&mut c, "t", 0, 0, 0, 4), (NONE, 0, 6));
    // The new leader had only the first batch and part of the second: the cut falls at the
    // start of the batch holding offset 3, so the log ends at 2.
    assert_eq!(b.elect_unclean("t", 0, other, 3).unwrap(), (1, 2));
    assert_eq!(b.end_offset("t", 0), Some(2));
    assert_eq!(b.leader("t", 0), Some((other, 1)));
    assert_eq!(b.leader_epochs("t", 0).unwrap(), [(0, 0), (1, 2)]);
    let mut c2 = Conn::open(b.node_addr(other).unwrap());
    // The consumer's position (6, epoch 0) is past where epoch 0 now ends: truncated.
    assert_eq!(epoch_end(&mut c2, "t", 0, 1, 0, 4), (NONE, 0, 2));
    assert_eq!(epoch_end(&mut c2, "t", 0, 1, 1, 4), (NONE, 1, 2));
    assert_eq!(epoch_end(&mut c2, "t", 0, 0, 0, 4), (FENCED_LEADER_EPOCH, -1, -1));
    // What was cut is gone: reading past the end is out of range; new records take the
    // offsets again, at the new epoch.
    assert_eq!(fetch(&mut c2, "t", 0, 4).0, OFFSET_OUT_OF_RANGE);
    assert_eq!(produce(&mut c2, "t", 0, &["x", "y", "z"]), (NONE, 2));
    let (err, hw, batches) = fetch(&mut c2, "t", 0, 0);
    assert_eq!((err, hw), (NONE, 5));
    assert_eq!(batches, [(0, 0, 2), (2, 1, 3)]);
    assert_eq!(epoch_end(&mut c2, "t", 0, 1, 0, 4), (NONE, 0, 2));
    assert_eq!(epoch_end(&mut c2, "t", 0, 1, 1, 4), (NONE, 1, 5));
    // An election on a batch boundary keeps the whole batch below it; at the leader itself
    // too. Offsets outside the log, stopped nodes and unknown partitions are refused.
    assert_eq!(b.elect_unclean("t", 0, other, 2).unwrap(), (2, 2));
    assert_eq!(b.leader_epochs("t", 0).unwrap(), [(0, 0), (2, 2)]);
    assert!(b.elect_unclean("t", 0, other, 3).is_err());
    assert!(b.elect_unclean("t", 0, other, -1).is_err());
    assert!(b.elect_unclean("t", 1, other, 0).is_err());
    assert!(b.elect_unclean("nope", 0, other, 0).is_err());
    assert!(b.elect_unclean("t", 0, 99, 0).is_err());
    b.stop_node(first).unwrap();
    assert!(b.elect_unclean("t", 0, first, 0).is_err());
    // Everything cut: the log is empty and epoch 0 ends at 0.
    assert_eq!(b.elect_unclean("t", 0, other, 0).unwrap(), (3, 0));
    assert_eq!(b.leader_epochs("t", 0).unwrap(), [(3, 0)]);
    assert_eq!(
        epoch_end(&mut c2, "t", 0, 3, 0, 4),
        (NONE, 0, 0),
        "older than any epoch: where the first starts"
    );
    assert_eq!(fetch(&mut c2, "t", 0, 0), (NONE, 0, vec![]));
    assert_eq!(produce(&mut c2, "t", 0, &["again"]), (NONE, 0));
}

#[test]
fn an_unclean_election_keeps_idempotent_producers_consistent() {
    use kwire::messages::init_producer_id::InitProducerIdRequest;
    use kwire::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
    let b = Broker::start(Config::default()).unwrap();
    assert!(b.create_topic("t", 1));
    let mut c = Conn::open(b.addr());
    let req = InitProducerIdRequest {
        transactional_id: None,
        transaction_timeout_ms: 60_000,
        ..Default::default()
    };
    let frame = c.call(&req, 4);
    let pid = answer!(frame, InitProducerId, 4).producer_id();
    let send = |c: &mut Conn, seq: i32| {
        let records = [NewRecord { key: None, value: Some(b"v"), headers: &[], timestamp: None }];
        let mut builder = BatchBuilder::new(0, 1_700_000_000_000, &records);
        builder.producer_id = pid;
        builder.producer_epoch = 0;
        builder.base_sequence = seq;
        let mut bytes = Vec::new();
        builder.encode_to_vec(&mut bytes).unwrap();
        let data =
            [PartitionProduceData { index: 0, records: Some((&bytes[..]).into()), ..Default::default() }];
        let topics =
            [TopicProduceData { name: "t".into(), partition_data: (&data).into(), ..Default::default() }];
        let req =
            ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: (&topics).into(), ..Default::default() };
        let frame = c.call(&req, 9);
        let r = answer!(frame, Produce, 9);
        let p = r.responses().iter().next().unwrap().partition_responses().iter().next().unwrap();
        (p.error_code(), p.base_offset())
    };
    assert_eq!(send(&mut c, 0), (NONE, 0));
    assert_eq!(send(&mut c, 1), (NONE, 1));
    assert_eq!(send(&mut c, 2), (NONE, 2));
    let (leader, _) = b.leader("t", 0).unwrap();
    assert_eq!(b.elect_unclean("t", 0, leader, 2).unwrap(), (1, 2));
    // The producer's batch 2 is gone with the log: sent again it is appended, not taken for
    // a duplicate of the lost one.
    assert_eq!(send(&mut c, 2), (NONE, 2));
    assert_eq!(send(&mut c, 2), (NONE, 2), "now a duplicate");
    assert_eq!(b.end_offset("t", 0), Some(3));
}

#[test]
fn delete_records_moves_the_first_epoch_start() {
    let b = Broker::start(Config { nodes: 2, ..Config::default() }).unwrap();
    assert!(b.create_topic("t", 1));
    let (first, _) = b.leader("t", 0).unwrap();
    let other = *b.node_ids().iter().find(|&&i| i != first).unwrap();
    let mut c = Conn::open(b.node_addr(first).unwrap());
    assert_eq!(produce(&mut c, "t", 0, &["a", "b", "c", "d"]), (NONE, 0));
    b.move_leader("t", 0, other).unwrap();
    let mut c2 = Conn::open(b.node_addr(other).unwrap());
    assert_eq!(produce(&mut c2, "t", 0, &["e", "f"]), (NONE, 4));
    // DeleteRecords inside epoch 0: it starts at 2 now.
    delete_records(&mut c2, 2);
    assert_eq!(b.leader_epochs("t", 0).unwrap(), [(0, 2), (1, 4)]);
    assert_eq!(epoch_end(&mut c2, "t", 0, 1, 0, 4), (NONE, 0, 4));
    // Past epoch 1's start: epoch 0 is gone, and asked for it ends where epoch 1 starts.
    delete_records(&mut c2, 5);
    assert_eq!(b.leader_epochs("t", 0).unwrap(), [(1, 5)]);
    assert_eq!(epoch_end(&mut c2, "t", 0, 1, 0, 4), (NONE, 0, 5));
    assert_eq!(epoch_end(&mut c2, "t", 0, 1, 1, 4), (NONE, 1, 6));
}

fn delete_records(c: &mut Conn, offset: i64) {
    use kwire::messages::delete_records::{DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic};
    let parts = [DeleteRecordsPartition { partition_index: 0, offset, ..Default::default() }];
    let topics = [DeleteRecordsTopic { name: "t".into(), partitions: (&parts).into(), ..Default::default() }];
    let req = DeleteRecordsRequest { topics: (&topics).into(), timeout_ms: 5000, ..Default::default() };
    let frame = c.call(&req, 2);
    let r = answer!(frame, DeleteRecords, 2);
    let p = r.topics().iter().next().unwrap().partitions().iter().next().unwrap();
    assert_eq!((p.error_code(), p.low_watermark()), (NONE, offset));
}

#[test]
fn faults_and_hooks_catch_it() {
    use kwire::broker::{Action, Hook};
    let b = Broker::start(Config::default()).unwrap();
    assert!(b.create_topic("t", 2));
    let mut c = Conn::open(b.addr());
    let fault = b.add_fault(
        Fault::new(ApiKey::OffsetForLeaderEpoch, "t", Some(1), ErrorCode::NotLeaderOrFollower).times(1),
    );
    let all = epoch_ends(&mut c, &[("t", 0), ("t", 1)], -1, 0, 4);
    assert_eq!(all[0].1, (NONE, 0, 0));
    assert_eq!(all[1].1, (NOT_LEADER_OR_FOLLOWER, -1, -1));
    assert_eq!(b.hook_fired(fault), Some(1));
    // Counted: the next one is served.
    assert_eq!(epoch_end(&mut c, "t", 1, -1, 0, 4), (NONE, 0, 0));
    // A hook failing the whole request: OffsetForLeaderEpoch has no top-level error code,
    // so the answer is empty and the connection stays.
    let hook =
        b.add_hook(Hook::once(ApiKey::OffsetForLeaderEpoch, Action::Fail(ErrorCode::NotLeaderOrFollower)));
    assert!(epoch_ends(&mut c, &[("t", 0)], -1, 0, 4).is_empty());
    assert_eq!(b.hook_fired(hook), Some(1));
    assert_eq!(epoch_end(&mut c, "t", 0, -1, 0, 4), (NONE, 0, 0));
}

/// The Java kafka-clients 4.4.0 consumer (`tests/interop/java`, `TruncationConsumer`) reads six
/// records at epoch 0 from the leader of a two-node cluster; an unclean election then moves
/// the partition to the other node with the log cut at offset 2. The consumer, told by Fetch
/// and Metadata that the epoch moved on, asks OffsetForLeaderEpoch for epoch 0, learns it
/// ends at 2, below its position, and throws `LogTruncationException` with divergent offset 2
/// (it was configured with `auto.offset.reset=none`), as against a Kafka cluster.
#[cfg(feature = "interop")]
#[test]
fn java_consumer_detects_truncation_after_an_unclean_election() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};

    let root = common::root();
    let jar = root.join("target/java-client/proxy-java-client-0.jar");
    let source = root.join("tests/interop/java/src/main/java/dev/kwire/interop/TruncationConsumer.java");
    common::clients::setup(|| {
        let m = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        matches!((m(&jar), m(&source)), (Some(b), Some(s)) if b >= s)
    });
    let b = Broker::start(Config { nodes: 2, ..Config::default() }).unwrap();
    assert!(b.create_topic("cut", 1));
    let (first, _) = b.leader("cut", 0).unwrap();
    let other = *b.node_ids().iter().find(|&&i| i != first).unwrap();
    let mut c = Conn::open(b.node_addr(first).unwrap());
    for (i, v) in ["a", "b", "c", "d", "e", "f"].iter().enumerate() {
        assert_eq!(produce(&mut c, "cut", 0, &[v]), (NONE, i as i64));
    }
    struct Child(std::process::Child);
    impl Drop for Child {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let lib = root.join("target/java-client/lib/*");
    let mut child = Child(
        Command::new("java")
            .arg("-Xmx256m")
            .arg("-cp")
            .arg(format!("{}:{}", jar.display(), lib.display()))
            .arg("dev.kwire.interop.TruncationConsumer")
            .args([&b.addr().to_string(), "cut", "6"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("java runs"),
    );
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines().map_while(Result::ok);
    let mut next = || lines.find(|l| l.starts_with('{')).expect("a JSON line from the consumer");
    let records: Vec<String> = (0..6).map(|_| next()).collect();
    let want: Vec<String> = ["a", "b", "c", "d", "e", "f"]
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{{\"record\":[{i},0,\"{v}\"]}}"))
        .collect();
    assert_eq!(records, want);
    assert_eq!(next(), "{\"read\":6}");
    assert_eq!(b.elect_unclean("cut", 0, other, 2).unwrap(), (1, 2));
    writeln!(child.0.stdin.as_mut().unwrap(), "go").unwrap();
    assert_eq!(next(), "{\"truncated\":[2,0]}");
}
