//! Transactions on `kwire::broker`, over raw frames (hermetic: no client, no network but
//! loopback): commit and abort with their markers, the last stable offset and Fetch and
//! ListOffsets at read_committed, group offsets committed with a transaction, and every bad
//! transition answered with Apache Kafka's error code while the broker keeps serving other
//! connections. The real clients' transactional tests are in tests/broker.rs.
#![cfg(feature = "broker")]

#[path = "common/raw.rs"]
mod raw;

use std::time::{Duration, Instant};

use kwire::ApiKey;
use kwire::broker::{Broker, Config};
use kwire::dispatch;
use kwire::messages::ResponseBodyView;
use kwire::messages::add_offsets_to_txn::AddOffsetsToTxnRequest;
use kwire::messages::add_partitions_to_txn::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kwire::messages::describe_transactions::DescribeTransactionsRequest;
use kwire::messages::end_txn::EndTxnRequest;
use kwire::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
use kwire::messages::init_producer_id::InitProducerIdRequest;
use kwire::messages::list_offsets::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
use kwire::messages::list_transactions::ListTransactionsRequest;
use kwire::messages::metadata::MetadataRequest;
use kwire::messages::offset_fetch::{OffsetFetchRequest, OffsetFetchRequestTopic};
use kwire::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
use kwire::messages::txn_offset_commit::{
    TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kwire::records::{BatchBuilder, ControlRecord, ControlRecordType, NewRecord, RecordBatches};
use raw::Conn;

const TOPIC: &str = "txn";

// Kafka's error codes the tests expect.
const NONE: i16 = 0;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_REQUEST: i16 = 42;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TXN_STATE: i16 = 48;
const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
const CONCURRENT_TRANSACTIONS: i16 = 51;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
const OPERATION_NOT_ATTEMPTED: i16 = 55;
const UNSTABLE_OFFSET_COMMIT: i16 = 88;
const PRODUCER_FENCED: i16 = 90;
const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;
const TRANSACTION_ABORTABLE: i16 = 120;

impl Conn {
    /// InitProducerId: (error, producer id, epoch).
    fn init(&mut self, id: &str, timeout_ms: i32, version: i16, expected: (i64, i16)) -> (i16, i64, i16) {
        let req = InitProducerIdRequest {
            transactional_id: Some(id.into()),
            transaction_timeout_ms: timeout_ms,
            producer_id: expected.0,
            producer_epoch: expected.1,
            ..Default::default()
        };
        let frame = self.call(&req, version);
        let ResponseBodyView::InitProducerId(r) =
            dispatch::parse_response(&frame, ApiKey::InitProducerId, version).unwrap().body
        else {
            panic!()
        };
        (r.error_code(), r.producer_id(), r.producer_epoch())
    }

    /// AddPartitionsToTxn v0-v3: the error of each partition.
    fn add(&mut self, id: &str, p: (i64, i16), parts: &[(&str, i32)], version: i16) -> Vec<i16> {
        let topics: Vec<AddPartitionsToTxnTopic<'_>> = parts
            .iter()
            .map(|(t, i)| AddPartitionsToTxnTopic {
                name: (*t).into(),
                partitions: vec![*i].into(),
                ..Default::default()
            })
            .collect();
        let req = AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: id.into(),
            v3_and_below_producer_id: p.0,
            v3_and_below_producer_epoch: p.1,
            v3_and_below_topics: topics.into(),
            ..Default::default()
        };
        let frame = self.call(&req, version);
        let ResponseBodyView::AddPartitionsToTxn(r) =
            dispatch::parse_response(&frame, ApiKey::AddPartitionsToTxn, version).unwrap().body
        else {
            panic!()
        };
        r.results_by_topic_v3_and_below()
            .iter()
            .flat_map(|t| {
                t.results_by_partition().iter().map(|p| p.partition_error_code()).collect::<Vec<_>>()
            })
            .collect()
    }

    fn end(&mut self, id: &str, p: (i64, i16), commit: bool, version: i16) -> i16 {
        let req = EndTxnRequest {
            transactional_id: id.into(),
            producer_id: p.0,
            producer_epoch: p.1,
            committed: commit,
            ..Default::default()
        };
        let frame = self.call(&req, version);
        let ResponseBodyView::EndTxn(r) =
            dispatch::parse_response(&frame, ApiKey::EndTxn, version).unwrap().body
        else {
            panic!()
        };
        r.error_code()
    }

    /// Produce v9 of one batch to partition 0 of TOPIC: (error, base offset).
    fn produce(&mut self, txn_id: Option<&str>, batch: &[u8]) -> (i16, i64) {
        let data = [PartitionProduceData { index: 0, records: Some(batch.into()), ..Default::default() }];
        let topics =
            [TopicProduceData { name: TOPIC.into(), partition_data: (&data).into(), ..Default::default() }];
        let req = ProduceRequest {
            transactional_id: txn_id.map(Into::into),
            acks: -1,
            timeout_ms: 5000,
            topic_data: (&topics).into(),
            ..Default::default()
        };
        let frame = self.call(&req, 9);
        let ResponseBodyView::Produce(r) = dispatch::parse_response(&frame, ApiKey::Produce, 9).unwrap().body
        else {
            panic!()
        };
        let p = r.responses().iter().next().unwrap().partition_responses().iter().next().unwrap();
        (p.error_code(), p.base_offset())
    }

    /// Fetch v12 of partition 0 of TOPIC from 0.
    fn fetch(&mut self, read_committed: bool) -> Fetched {
        let parts = [FetchPartition {
            partition: 0,
            fetch_offset: 0,
            partition_max_bytes: 1 << 20,
            ..Default::default()
        }];
        let topics = [FetchTopic { topic: TOPIC.into(), partitions: (&parts).into(), ..Default::default() }];
        let req = FetchRequest {
            max_wait_ms: 0,
            min_bytes: 0,
            max_bytes: 50 << 20,
            isolation_level: i8::from(read_committed),
            session_epoch: -1,
            topics: (&topics).into(),
            ..Default::default()
        };
        let frame = self.call(&req, 12);
        let ResponseBodyView::Fetch(r) = dispatch::parse_response(&frame, ApiKey::Fetch, 12).unwrap().body
        else {
            panic!()
        };
        let t = r.responses().iter().next().unwrap();
        let p = t.partitions().iter().next().unwrap();
        assert_eq!(p.error_code(), NONE);
        let mut out = Fetched {
            high_watermark: p.high_watermark(),
            last_stable_offset: p.last_stable_offset(),
            aborted: p
                .aborted_transactions()
                .map(|a| a.iter().map(|a| (a.producer_id(), a.first_offset())).collect()),
            records: Vec::new(),
            markers: Vec::new(),
        };
        let mut scratch = Vec::new();
        for b in RecordBatches::new(p.records().map(|r| r.bytes()).unwrap_or_default()) {
            let b = b.expect("a batch as stored");
            for r in b.records_in_vec(&mut scratch, 1 << 24).expect("its records") {
                let r = r.unwrap();
                if b.is_control() {
                    assert!(b.is_transactional(), "a marker batch is transactional");
                    assert_eq!(b.base_sequence(), -1);
                    assert_eq!(b.records_count(), 1);
                    let key = r.key().expect("a marker has a key");
                    let value = r.value().expect("a marker has a value");
                    assert_eq!(key.len(), 4, "key: version and type");
                    assert_eq!(&key[..2], &[0, 0], "key version 0");
                    assert_eq!(value, &[0, 0, 0, 0, 0, 0], "value: version 0, coordinator epoch 0");
                    let c = ControlRecord::parse(Some(key), Some(value)).unwrap();
                    out.markers.push((
                        r.offset(),
                        b.producer_id(),
                        b.producer_epoch(),
                        c.kind == ControlRecordType::Commit,
                    ));
                } else {
                    out.records.push((r.offset(), String::from_utf8(r.value().unwrap().to_vec()).unwrap()));
                }
            }
        }
        out
    }

    /// ListOffsets v5 latest offset of partition 0 of TOPIC.
    fn latest(&mut self, read_committed: bool) -> i64 {
        let parts = [ListOffsetsPartition { partition_index: 0, timestamp: -1, ..Default::default() }];
        let topics =
            [ListOffsetsTopic { name: TOPIC.into(), partitions: (&parts).into(), ..Default::default() }];
        let req = ListOffsetsRequest {
            replica_id: -1,
            isolation_level: i8::from(read_committed),
            topics: (&topics).into(),
            ..Default::default()
        };
        let frame = self.call(&req, 5);
        let ResponseBodyView::ListOffsets(r) =
            dispatch::parse_response(&frame, ApiKey::ListOffsets, 5).unwrap().body
        else {
            panic!()
        };
        let p = r.topics().iter().next().unwrap().partitions().iter().next().unwrap();
        assert_eq!(p.error_code(), 0);
        p.offset()
    }

    /// DescribeTransactions: (error, state, epoch, partitions).
    fn describe(&mut self, id: &str) -> (i16, String, i16, Vec<(String, i32)>) {
        let ids = [id.into()];
        let req = DescribeTransactionsRequest { transactional_ids: (&ids).into(), ..Default::default() };
        let frame = self.call(&req, 0);
        let ResponseBodyView::DescribeTransactions(r) =
            dispatch::parse_response(&frame, ApiKey::DescribeTransactions, 0).unwrap().body
        else {
            panic!()
        };
        let s = r.transaction_states().iter().next().unwrap();
        let parts = s
            .topics()
            .iter()
            .flat_map(|t| t.partitions().iter().map(|p| (t.topic().to_string(), p)).collect::<Vec<_>>())
            .collect();
        (s.error_code(), s.transaction_state().to_string(), s.producer_epoch(), parts)
    }

    /// Whether the broker still answers (Metadata of TOPIC).
    fn alive(&mut self) -> bool {
        let frame = self.call(&MetadataRequest { topics: None, ..Default::default() }, 9);
        matches!(dispatch::parse_response(&frame, ApiKey::Metadata, 9).unwrap().body, ResponseBodyView::Metadata(m) if m.topics().iter().count() >= 1)
    }
}

#[derive(Debug)]
struct Fetched {
    high_watermark: i64,
    last_stable_offset: i64,
    aborted: Option<Vec<(i64, i64)>>,
    /// (offset, value) of the data records.
    records: Vec<(i64, String)>,
    /// (offset, producer id, epoch, commit) of the markers.
    markers: Vec<(i64, i64, i16, bool)>,
}

/// A batch of `values` from producer `p` at sequence `seq`.
fn batch(values: &[&str], p: (i64, i16), seq: i32, transactional: bool) -> Vec<u8> {
    let new: Vec<NewRecord<'_>> = values
        .iter()
        .map(|v| NewRecord { key: None, value: Some(v.as_bytes()), headers: &[], timestamp: None })
        .collect();
    let mut b = BatchBuilder::new(0, 1_700_000_000_000, &new);
    b.producer_id = p.0;
    b.producer_epoch = p.1;
    b.base_sequence = seq;
    b.transactional = transactional;
    let mut out = Vec::new();
    b.encode_to_vec(&mut out).unwrap();
    out
}

fn broker() -> Broker {
    let b = Broker::start(Config::default()).unwrap();
    assert!(b.create_topic(TOPIC, 1));
    b
}

fn values(f: &Fetched) -> Vec<&str> {
    f.records.iter().map(|(_, v)| v.as_str()).collect()
}

#[test]
fn commit_and_abort_write_markers_and_read_committed_stops_at_the_lso() {
    let b = broker();
    let mut c = Conn::open(b.addr());
    let (e, pid, epoch) = c.init("t1", 60_000, 4, (-1, -1));
    assert_eq!((e, epoch), (NONE, 0));
    let p = (pid, epoch);
    assert_eq!(c.describe("t1").1, "Empty");

    // A non-transactional record first, then an open transaction.
    assert_eq!(c.produce(None, &batch(&["plain"], (-1, -1), -1, false)), (NONE, 0));
    assert_eq!(c.add("t1", p, &[(TOPIC, 0)], 3), vec![NONE]);
    let d = c.describe("t1");
    assert_eq!((d.0, d.1.as_str(), d.2, d.3), (NONE, "Ongoing", 0, vec![(TOPIC.to_string(), 0)]));
    assert_eq!(c.produce(Some("t1"), &batch(&["a", "b"], p, 0, true)), (NONE, 1));
    let open = c.fetch(true);
    assert_eq!((open.high_watermark, open.last_stable_offset), (3, 1));
    assert_eq!(values(&open), ["plain"], "read_committed stops at the open transaction");
    assert_eq!(open.aborted, Some(vec![]));
    assert_eq!(values(&c.fetch(false)), ["plain", "a", "b"]);
    assert_eq!(c.fetch(false).aborted, None, "read_uncommitted gets no aborted list");
    assert_eq!((c.latest(true), c.latest(false)), (1, 3));

    // Commit: a commit marker at offset 3, everything visible.
    assert_eq!(c.end("t1", p, true, 3), NONE);
    let done = c.fetch(true);
    assert_eq!((done.high_watermark, done.last_stable_offset), (4, 4));
    assert_eq!(values(&done), ["plain", "a", "b"]);
    assert_eq!(done.markers, vec![(3, pid, 0, true)]);
    assert_eq!(c.describe("t1").1, "CompleteCommit");
    // A retried commit is answered as done.
    assert_eq!(c.end("t1", p, true, 3), NONE);

    // AddPartitionsToTxn after the commit starts the next transaction (Kafka's coordinator
    // accepts it at the same epoch); this one aborts.
    assert_eq!(c.add("t1", p, &[(TOPIC, 0)], 3), vec![NONE]);
    assert_eq!(c.produce(Some("t1"), &batch(&["x", "y"], p, 2, true)), (NONE, 4));
    assert_eq!(c.end("t1", p, false, 3), NONE);
    let after = c.fetch(true);
    assert_eq!((after.high_watermark, after.last_stable_offset), (7, 7));
    assert_eq!(after.aborted, Some(vec![(pid, 4)]), "the aborted transaction and its first offset");
    // The broker returns the aborted records (the client drops them by the list); the
    // markers are there, commit then abort.
    assert_eq!(values(&after), ["plain", "a", "b", "x", "y"]);
    assert_eq!(after.markers, vec![(3, pid, 0, true), (6, pid, 0, false)]);
    assert_eq!(c.describe("t1").1, "CompleteAbort");
    assert_eq!((c.latest(true), c.latest(false)), (7, 7));

    // ListTransactions, with and without filters.
    let list = |c: &mut Conn, states: &[&str], pattern: Option<&str>| {
        let states: Vec<_> = states.iter().map(|s| (*s).into()).collect();
        let req = ListTransactionsRequest {
            state_filters: states.into(),
            duration_filter: -1,
            transactional_id_pattern: pattern.map(Into::into),
            ..Default::default()
        };
        let frame = c.call(&req, 2);
        let ResponseBodyView::ListTransactions(r) =
            dispatch::parse_response(&frame, ApiKey::ListTransactions, 2).unwrap().body
        else {
            panic!()
        };
        (
            r.error_code(),
            r.unknown_state_filters().iter().map(String::from).collect::<Vec<_>>(),
            r.transaction_states()
                .iter()
                .map(|s| {
                    (s.transactional_id().to_string(), s.producer_id(), s.transaction_state().to_string())
                })
                .collect::<Vec<_>>(),
        )
    };
    let all = list(&mut c, &[], None);
    assert_eq!(all, (NONE, vec![], vec![("t1".to_string(), pid, "CompleteAbort".to_string())]));
    assert_eq!(list(&mut c, &["Ongoing", "Bogus"], None), (NONE, vec!["Bogus".to_string()], vec![]));
    assert_eq!(list(&mut c, &[], Some("t.*")).2.len(), 1);
    assert_eq!(list(&mut c, &[], Some("u.*")).2.len(), 0);
    assert_eq!(c.describe("nope").0, TRANSACTIONAL_ID_NOT_FOUND);
}

#[test]
fn bad_transitions_get_kafkas_errors_and_the_broker_serves_on() {
    let b = broker();
    let mut c = Conn::open(b.addr());
    let mut other = Conn::open(b.addr());
    assert_eq!(c.init("", 60_000, 4, (-1, -1)).0, INVALID_REQUEST);
    assert_eq!(c.init("bad", 0, 4, (-1, -1)).0, INVALID_TRANSACTION_TIMEOUT);
    assert_eq!(c.init("bad", 900_001, 4, (-1, -1)).0, INVALID_TRANSACTION_TIMEOUT);
    let (_, pid, epoch) = c.init("t2", 60_000, 4, (-1, -1));
    let p = (pid, epoch);

    // EndTxn with no transaction (state Empty), of an unknown id, with another producer id.
    assert_eq!(c.end("t2", p, true, 3), INVALID_TXN_STATE);
    assert_eq!(c.end("t2", p, false, 3), INVALID_TXN_STATE);
    assert_eq!(c.end("unknown", p, true, 3), INVALID_PRODUCER_ID_MAPPING);
    assert_eq!(c.end("t2", (pid + 1, 0), true, 3), INVALID_PRODUCER_ID_MAPPING);
    assert_eq!(c.add("unknown", p, &[(TOPIC, 0)], 3), vec![INVALID_PRODUCER_ID_MAPPING]);
    assert!(other.alive());

    // A transactional batch for a partition not added, and one without a transactional id.
    assert_eq!(c.produce(Some("t2"), &batch(&["a"], p, 0, true)).0, INVALID_TXN_STATE);
    assert_eq!(c.produce(None, &batch(&["a"], p, 0, true)).0, TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    // An unknown partition fails the whole request: the others are not attempted.
    assert_eq!(
        c.add("t2", p, &[(TOPIC, 0), ("nope", 0)], 3),
        vec![OPERATION_NOT_ATTEMPTED, UNKNOWN_TOPIC_OR_PARTITION]
    );
    assert_eq!(c.describe("t2").1, "Empty");

    // After a commit, aborting is a bad transition; committing again is a retry.
    assert_eq!(c.add("t2", p, &[(TOPIC, 0)], 3), vec![NONE]);
    assert_eq!(c.produce(Some("t2"), &batch(&["a"], p, 0, true)), (NONE, 0));
    assert_eq!(c.end("t2", p, true, 3), NONE);
    assert_eq!(c.end("t2", p, false, 3), INVALID_TXN_STATE);
    assert_eq!(c.end("t2", p, true, 3), NONE);
    // A transactional batch after the commit, before AddPartitionsToTxn.
    assert_eq!(c.produce(Some("t2"), &batch(&["late"], p, 1, true)).0, INVALID_TXN_STATE);

    // A stale epoch: InitProducerId again bumps it; the old one is fenced everywhere, with
    // PRODUCER_FENCED where the version knows it and INVALID_PRODUCER_EPOCH before.
    let (e, pid2, epoch2) = c.init("t2", 60_000, 4, (-1, -1));
    assert_eq!((e, pid2, epoch2), (NONE, pid, 1));
    assert_eq!(c.add("t2", p, &[(TOPIC, 0)], 3), vec![PRODUCER_FENCED]);
    assert_eq!(c.add("t2", p, &[(TOPIC, 0)], 1), vec![INVALID_PRODUCER_EPOCH]);
    assert_eq!(c.end("t2", p, true, 3), PRODUCER_FENCED);
    assert_eq!(c.end("t2", p, true, 1), INVALID_PRODUCER_EPOCH);
    // KIP-360: an InitProducerId naming an epoch that is not the current one is fenced.
    assert_eq!(c.init("t2", 60_000, 4, (pid, 0)).0, PRODUCER_FENCED);
    assert_eq!(c.init("t2", 60_000, 3, (pid, 0)).0, INVALID_PRODUCER_EPOCH);
    assert_eq!(c.init("t2", 60_000, 4, (pid, 1)), (NONE, pid, 2));
    assert!(other.alive());
    let f = other.fetch(true);
    assert_eq!((values(&f), f.last_stable_offset, f.high_watermark), (vec!["a"], 2, 2));
}

#[test]
fn a_new_producer_fences_the_one_holding_the_transactional_id() {
    let b = broker();
    let mut zombie = Conn::open(b.addr());
    let mut fresh = Conn::open(b.addr());
    let (_, pid, epoch) = zombie.init("t3", 60_000, 4, (-1, -1));
    let z = (pid, epoch);
    assert_eq!(zombie.add("t3", z, &[(TOPIC, 0)], 3), vec![NONE]);
    assert_eq!(zombie.produce(Some("t3"), &batch(&["zombie"], z, 0, true)), (NONE, 0));
    assert_eq!(fresh.fetch(true).last_stable_offset, 0);

    // The new producer's InitProducerId aborts the open transaction, fencing its epoch,
    // and asks to be retried; the retry bumps the epoch again.
    assert_eq!(fresh.init("t3", 60_000, 4, (-1, -1)).0, CONCURRENT_TRANSACTIONS);
    let f = fresh.fetch(true);
    assert_eq!((f.last_stable_offset, f.high_watermark), (2, 2));
    assert_eq!(f.aborted, Some(vec![(pid, 0)]));
    assert_eq!(f.markers, vec![(1, pid, 1, false)], "the abort marker carries the fencing epoch");
    let (e, pid2, epoch2) = fresh.init("t3", 60_000, 4, (-1, -1));
    assert_eq!((e, pid2, epoch2), (NONE, pid, 2));
    let n = (pid2, epoch2);

    // The zombie gets the fencing errors.
    assert_eq!(zombie.produce(Some("t3"), &batch(&["zombie-2"], z, 1, true)).0, INVALID_PRODUCER_EPOCH);
    assert_eq!(zombie.add("t3", z, &[(TOPIC, 0)], 3), vec![PRODUCER_FENCED]);
    assert_eq!(zombie.end("t3", z, true, 3), PRODUCER_FENCED);
    assert_eq!(zombie.end("t3", z, true, 0), INVALID_PRODUCER_EPOCH);

    // The new producer commits.
    assert_eq!(fresh.add("t3", n, &[(TOPIC, 0)], 3), vec![NONE]);
    assert_eq!(fresh.produce(Some("t3"), &batch(&["fresh"], n, 0, true)), (NONE, 2));
    assert_eq!(fresh.end("t3", n, true, 3), NONE);
    let f = fresh.fetch(true);
    assert_eq!(values(&f), ["zombie", "fresh"]);
    assert_eq!(f.aborted, Some(vec![(pid, 0)]));
    assert_eq!(f.markers, vec![(1, pid, 1, false), (3, pid, 2, true)]);
}

#[test]
fn a_transaction_that_times_out_is_aborted_while_its_client_writes() {
    let b = broker();
    let mut c = Conn::open(b.addr());
    let mut other = Conn::open(b.addr());
    let (_, pid, epoch) = c.init("t4", 500, 4, (-1, -1));
    let p = (pid, epoch);
    assert_eq!(c.add("t4", p, &[(TOPIC, 0)], 3), vec![NONE]);
    let start = Instant::now();
    let mut seq = 0;
    let fenced = loop {
        assert!(start.elapsed() < Duration::from_secs(20), "the transaction never timed out");
        let (e, _) = c.produce(Some("t4"), &batch(&["w"], p, seq, true));
        if e != NONE {
            break e;
        }
        seq += 1;
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(fenced, INVALID_PRODUCER_EPOCH);
    assert!(start.elapsed() >= Duration::from_millis(500), "not before its timeout");
    assert!(seq > 0);
    assert_eq!(c.end("t4", p, true, 3), PRODUCER_FENCED);
    let d = other.describe("t4");
    assert_eq!((d.1.as_str(), d.2), ("CompleteAbort", 1));
    let f = other.fetch(true);
    assert_eq!(f.last_stable_offset, f.high_watermark);
    assert_eq!(f.aborted, Some(vec![(pid, 0)]));
    assert_eq!(f.markers.len(), 1);
    assert_eq!(f.records.len(), seq as usize, "every record written before the abort, all aborted");
    assert!(other.alive());
    // The client starts over with a new epoch.
    let (e, _, epoch) = c.init("t4", 500, 4, (pid, 1));
    assert_eq!((e, epoch), (NONE, 2));
}

#[test]
fn group_offsets_commit_with_the_transaction() {
    let b = broker();
    let mut c = Conn::open(b.addr());
    let (_, pid, epoch) = c.init("t5", 60_000, 4, (-1, -1));
    let p = (pid, epoch);
    let commit = |c: &mut Conn, offset: i64| {
        let parts = [TxnOffsetCommitRequestPartition {
            partition_index: 0,
            committed_offset: offset,
            committed_leader_epoch: -1,
            ..Default::default()
        }];
        let topics = [TxnOffsetCommitRequestTopic {
            name: TOPIC.into(),
            partitions: (&parts).into(),
            ..Default::default()
        }];
        let req = TxnOffsetCommitRequest {
            transactional_id: "t5".into(),
            group_id: "g".into(),
            producer_id: p.0,
            producer_epoch: p.1,
            generation_id_or_member_epoch: -1,
            topics: (&topics).into(),
            ..Default::default()
        };
        let frame = c.call(&req, 3);
        let ResponseBodyView::TxnOffsetCommit(r) =
            dispatch::parse_response(&frame, ApiKey::TxnOffsetCommit, 3).unwrap().body
        else {
            panic!()
        };
        r.topics().iter().next().unwrap().partitions().iter().next().unwrap().error_code()
    };
    let fetch = |c: &mut Conn| {
        let parts = [0];
        let topics = [OffsetFetchRequestTopic {
            name: TOPIC.into(),
            partition_indexes: (&parts).into(),
            ..Default::default()
        }];
        let req = OffsetFetchRequest {
            group_id: "g".into(),
            topics: Some((&topics).into()),
            require_stable: true,
            ..Default::default()
        };
        let frame = c.call(&req, 7);
        let ResponseBodyView::OffsetFetch(r) =
            dispatch::parse_response(&frame, ApiKey::OffsetFetch, 7).unwrap().body
        else {
            panic!()
        };
        let p = r.topics().iter().next().unwrap().partitions().iter().next().unwrap();
        (p.error_code(), p.committed_offset())
    };
    // Without AddOffsetsToTxn the group is not in the transaction.
    assert_eq!(commit(&mut c, 5), INVALID_TXN_STATE);
    let add_offsets = |c: &mut Conn, version: i16, p: (i64, i16)| {
        let req = AddOffsetsToTxnRequest {
            transactional_id: "t5".into(),
            producer_id: p.0,
            producer_epoch: p.1,
            group_id: "g".into(),
            ..Default::default()
        };
        let frame = c.call(&req, version);
        let ResponseBodyView::AddOffsetsToTxn(r) =
            dispatch::parse_response(&frame, ApiKey::AddOffsetsToTxn, version).unwrap().body
        else {
            panic!()
        };
        r.error_code()
    };
    assert_eq!(add_offsets(&mut c, 3, p), NONE);
    assert_eq!(add_offsets(&mut c, 3, (pid, epoch + 1)), PRODUCER_FENCED);
    assert_eq!(add_offsets(&mut c, 1, (pid, epoch + 1)), INVALID_PRODUCER_EPOCH);
    assert_eq!(commit(&mut c, 5), NONE);
    assert_eq!(fetch(&mut c), (UNSTABLE_OFFSET_COMMIT, -1), "pending in an open transaction");
    assert_eq!(c.end("t5", p, false, 3), NONE);
    assert_eq!(fetch(&mut c), (NONE, -1), "aborted: nothing committed");
    assert_eq!(add_offsets(&mut c, 3, p), NONE);
    assert_eq!(commit(&mut c, 7), NONE);
    assert_eq!(c.end("t5", p, true, 3), NONE);
    assert_eq!(fetch(&mut c), (NONE, 7));
}

#[test]
fn add_partitions_v4_batches_transactions_and_verifies() {
    use kwire::messages::add_partitions_to_txn::AddPartitionsToTxnRequest as Req;
    let b = broker();
    assert!(b.create_topic("other", 2));
    let mut c = Conn::open(b.addr());
    let (_, pa, ea) = c.init("ta", 60_000, 4, (-1, -1));
    let (_, pb, eb) = c.init("tb", 60_000, 4, (-1, -1));
    let txn = |id: &'static str, pid: i64, epoch: i16, verify: bool, parts: &'static [i32]| {
        AddPartitionsToTxnTransaction {
            transactional_id: id.into(),
            producer_id: pid,
            producer_epoch: epoch,
            verify_only: verify,
            topics: vec![AddPartitionsToTxnTopic {
                name: "other".into(),
                partitions: parts.into(),
                ..Default::default()
            }]
            .into(),
            ..Default::default()
        }
    };
    let call = |c: &mut Conn, txns: Vec<AddPartitionsToTxnTransaction<'static>>| {
        let frame = c.call(&Req { transactions: txns.into(), ..Default::default() }, 5);
        let ResponseBodyView::AddPartitionsToTxn(r) =
            dispatch::parse_response(&frame, ApiKey::AddPartitionsToTxn, 5).unwrap().body
        else {
            panic!()
        };
        assert_eq!(r.error_code(), NONE);
        r.results_by_transaction()
            .iter()
            .map(|t| {
                let codes: Vec<i16> = t
                    .topic_results()
                    .iter()
                    .flat_map(|t| {
                        t.results_by_partition().iter().map(|p| p.partition_error_code()).collect::<Vec<_>>()
                    })
                    .collect();
                (t.transactional_id().to_string(), codes)
            })
            .collect::<Vec<_>>()
    };
    let added = call(&mut c, vec![txn("ta", pa, ea, false, &[0]), txn("tb", pb, eb, false, &[1])]);
    assert_eq!(added, vec![("ta".to_string(), vec![NONE]), ("tb".to_string(), vec![NONE])]);
    let verified = call(&mut c, vec![txn("ta", pa, ea, true, &[0, 1]), txn("tb", pb, eb + 1, true, &[1])]);
    assert_eq!(
        verified,
        vec![
            ("ta".to_string(), vec![NONE, TRANSACTION_ABORTABLE]),
            ("tb".to_string(), vec![PRODUCER_FENCED])
        ]
    );
}
