//! `kwire::broker` started in-process, as a Rust user would start it in a test.
//!
//! - Real clients: kafka-python, confluent-kafka (librdkafka), kafkajs, the Java
//!   kafka-clients and franz-go each create a topic, describe it and its configs, produce
//!   with every codec they have (acks=all; the Java client also acks=0), consume in a
//!   classic consumer group with offsets committed (the Java client also in a KIP-848
//!   group, tests/broker_kip848.rs has more), and list groups and offsets. The
//!   programs are those of the proxy tests (tests/proxy/, tests/interop/java,
//!   tests/interop/go); every record must come back exactly once and in order, and the
//!   committed and latest offsets must be the ends of the partitions. The clients come
//!   from tests/proxy/setup.sh (run when `target/proxy-clients/ready` is missing); a
//!   missing client fails its test. These run with the `interop` feature only (plain
//!   `cargo test` lists them as ignored).
//! - Transactions with confluent-kafka, franz-go and kafka-python (`interop` feature too):
//!   commit, abort, a zombie fenced, both isolation levels record by record, and
//!   (confluent-kafka) read-process-write exactly once across a crash and restart (the
//!   raw-frame cases, in plain `cargo test`, are in tests/broker_txn.rs).
//! - Bad input and edge cases, over raw frames where the frame is the point and through
//!   `kwire::client` where it is not: a corrupt batch fails its partition only,
//!   a batch that inflates past the limit is refused, acks=0 gets no answer (and an
//!   acks=0 failure closes the connection, as Kafka does), idempotent producers'
//!   duplicates and sequence gaps, Fetch long-polls, unsupported APIs, and a client that
//!   never reads its Fetch responses.
#![cfg(all(feature = "broker", feature = "client"))]

mod common;

use common::clients::{client_command, partition_log, setup};
use common::process::run;
use common::root;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use kwire::ApiKey;
use kwire::broker::{Broker, Config};
use kwire::client::Client;
use kwire::dispatch;
use kwire::encode::AnyBody;
use kwire::messages::ResponseBodyView;
use kwire::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
use kwire::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
use kwire::records::{BatchBuilder, Compression, NewRecord, RecordBatches};
use serde_json::Value;

/// How long one client run may take (a run takes a few seconds).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(170);

/// One heavy test at a time: the machine has two cores, and the slow-reader test reads
/// this process's memory.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every record produced consumed exactly once and in order per partition, offsets
/// committed up to the end, the admin answers right; returns (records, codecs).
fn check_answers(client: &str, out: &Value, prefix: &str, broker: &Broker) -> (usize, usize) {
    assert_eq!(out["topic_partitions"].as_u64(), Some(3), "{client}: describe topics: {out}");
    assert_eq!(out["config"]["cleanup.policy"], "delete", "{client}: describe configs: {out}");
    assert_eq!(out["errors"].as_array().map(Vec::len), Some(0), "{client}: errors: {}", out["errors"]);
    let codecs = out["codecs"].as_array().map_or(0, Vec::len);
    let produced = out["produced"].as_object().unwrap_or_else(|| panic!("{client}: no produced: {out}"));
    let topic = format!("{prefix}-t");
    let mut total = 0;
    for p in ["0", "1", "2"] {
        let sent = produced[p].as_array().unwrap_or_else(|| panic!("{client}: produced/{p}"));
        total += sent.len();
        // The Java client also consumes in a KIP-848 group (`consumed_consumer_protocol`).
        for key in ["consumed", "consumed_consumer_protocol"] {
            if key != "consumed" && out.get(key).is_none() {
                continue;
            }
            let log = partition_log(client, &format!("{key}/{p}"), &out[key][p]);
            assert_eq!(
                &Value::Array(log),
                &produced[p],
                "{client}: partition {p}: {key}: the records consumed are not every record produced, once and in order"
            );
        }
        let n = sent.len() as i64;
        assert_eq!(
            out["committed"][p].as_i64(),
            Some(n),
            "{client}: committed offset of partition {p}: {out}"
        );
        assert_eq!(out["latest"][p].as_i64(), Some(n), "{client}: latest offset of partition {p}: {out}");
        assert_eq!(
            broker.end_offset(&topic, p.parse().unwrap()),
            Some(n),
            "{client}: the broker's own end offset"
        );
    }
    let extra = out["extra_records"].as_u64().unwrap_or(0) as usize;
    assert_eq!(total, codecs * 12 + extra, "{client}: records produced");
    let group = format!("{prefix}-g");
    let groups = out["groups"].as_array().unwrap_or_else(|| panic!("{client}: no groups: {out}"));
    assert!(groups.iter().any(|g| g == &Value::String(group.clone())), "{client}: {group} not in {groups:?}");
    (total, codecs)
}

/// Older versions a broker of the Kafka 2.4 era served (what clients fall back to): no
/// flexible versions, no topic ids, no KIP-848.
const OLDER: &[(ApiKey, i16)] = &[
    (ApiKey::ApiVersions, 2),
    (ApiKey::Metadata, 8),
    (ApiKey::Produce, 7),
    (ApiKey::Fetch, 11),
    (ApiKey::ListOffsets, 5),
    (ApiKey::FindCoordinator, 2),
    (ApiKey::JoinGroup, 5),
    (ApiKey::SyncGroup, 3),
    (ApiKey::Heartbeat, 3),
    (ApiKey::LeaveGroup, 2),
    (ApiKey::OffsetCommit, 7),
    (ApiKey::OffsetFetch, 5),
    (ApiKey::ListGroups, 2),
    (ApiKey::DescribeGroups, 4),
    (ApiKey::CreateTopics, 4),
    (ApiKey::DeleteTopics, 3),
    (ApiKey::InitProducerId, 1),
    (ApiKey::DescribeConfigs, 2),
    (ApiKey::CreatePartitions, 1),
];

fn client_against_broker(client: &str) {
    client_against(client, &[]);
}

/// The highest version of each API the broker answered, from its verbose log lines
/// (`PEER: API vN: X bytes in, Y out`).
fn versions_answered(lines: &str) -> BTreeMap<String, i16> {
    let mut seen: BTreeMap<String, i16> = BTreeMap::new();
    for l in lines.lines().filter(|l| l.ends_with(" out")) {
        let mut words = l.split(": ").nth(1).unwrap_or_default().split(' ');
        let (Some(api), Some(v)) = (words.next(), words.next()) else { continue };
        let Ok(v) = v.trim_start_matches('v').parse::<i16>() else { continue };
        let e = seen.entry(api.to_string()).or_insert(v);
        *e = (*e).max(v);
    }
    seen
}

fn client_against(client: &str, limits: &[(ApiKey, i16)]) {
    let _serial = serial();
    setup(|| true);
    let log = std::sync::Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = log.clone();
    let config = Config {
        logger: Some(std::sync::Arc::new(move |line: &str| sink.lock().unwrap().push(line.to_string()))),
        verbose: true,
        max_versions: limits.to_vec(),
        ..Config::default()
    };
    let broker = Broker::start(config).expect("start the broker");
    let prefix = format!("{client}-{}", std::process::id());
    let mut cmd = client_command(client, &broker.addr().to_string(), &prefix);
    if client == "java" && !limits.is_empty() {
        // A KIP-848 member commits with OffsetCommit v9+, above these limits.
        cmd.env("KWIRE_CLASSIC_GROUPS_ONLY", "1");
    }
    let out = run(cmd, client, CLIENT_TIMEOUT);
    let lines = log.lock().unwrap().join("\n");
    assert!(
        out.ok,
        "{client} failed\nstdout:\n{}\nstderr:\n{}\nbroker log:\n{lines}",
        out.stdout, out.stderr
    );
    let answer = out.stdout.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| {
        panic!("{client} printed no JSON\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr)
    });
    let answer: Value = serde_json::from_str(answer).expect("client JSON");
    let (records, codecs) = check_answers(client, &answer, &prefix, &broker);
    // The broker closed no connection itself: each ended with its client.
    let closed: Vec<&str> = lines
        .lines()
        .filter(|l| l.contains(": closed (") && !l.contains("peer closed") && !l.contains("reset by peer"))
        .collect();
    assert!(closed.is_empty(), "{client}: connections the broker closed:\n{closed:?}");
    let answered = versions_answered(&lines);
    // ApiVersions above the limit is answered with error 35 and the range to retry with,
    // which is the fallback; anything else above it would be an error answer.
    for (key, max) in limits.iter().filter(|(k, _)| *k != ApiKey::ApiVersions) {
        if let Some(&v) = answered.get(key.name()) {
            assert!(v <= *max, "{client}: {} v{v} answered above the limit {max}", key.name());
        }
    }
    for api in ["Produce", "Fetch", "JoinGroup", "SyncGroup", "OffsetCommit"] {
        assert!(answered.contains_key(api), "{client}: no {api} request: {answered:?}");
    }
    if client == "java" && limits.is_empty() {
        assert!(answer.get("consumed_consumer_protocol").is_some(), "java: no KIP-848 group: {answer}");
        assert!(
            answered.contains_key("ConsumerGroupHeartbeat"),
            "java: no ConsumerGroupHeartbeat: {answered:?}"
        );
    }
    eprintln!(
        "{client} against kwire::broker ({}): {records} records with {codecs} codecs, each consumed once and in order; highest versions {answered:?}",
        if limits.is_empty() { "every version" } else { "older versions" }
    );
}

#[test]
#[cfg_attr(not(feature = "interop"), ignore = "a real client: needs --features interop")]
fn kafka_python_against_broker() {
    client_against_broker("kafka-python");
}

#[test]
#[cfg_attr(not(feature = "interop"), ignore = "a real client: needs --features interop")]
fn confluent_kafka_against_broker() {
    client_against_broker("confluent-kafka");
}

#[test]
#[cfg_attr(not(feature = "interop"), ignore = "a real client: needs --features interop")]
fn kafkajs_against_broker() {
    client_against_broker("kafkajs");
}

#[test]
#[cfg_attr(not(feature = "interop"), ignore = "a real client: needs --features interop")]
fn java_kafka_clients_against_broker() {
    client_against_broker("java");
}

#[test]
#[cfg_attr(not(feature = "interop"), ignore = "a real client: needs --features interop")]
fn franz_go_against_broker() {
    client_against_broker("franz-go");
}

#[test]
#[cfg_attr(not(feature = "interop"), ignore = "a real client: needs --features interop")]
fn kafka_python_falls_back() {
    client_against("kafka-python", OLDER);
}

#[test]
#[cfg_attr(not(feature = "interop"), ignore = "a real client: needs --features interop")]
fn confluent_kafka_falls_back() {
    client_against("confluent-kafka", OLDER);
}

#[test]
#[cfg_attr(not(feature = "interop"), ignore = "a real client: needs --features interop")]
fn kafkajs_falls_back() {
    client_against("kafkajs", OLDER);
}

#[test]
#[cfg_attr(not(feature = "interop"), ignore = "a real client: needs --features interop")]
fn java_kafka_clients_fall_back() {
    client_against("java", OLDER);
}

#[test]
#[cfg_attr(not(feature = "interop"), ignore = "a real client: needs --features interop")]
fn franz_go_falls_back() {
    client_against("franz-go", OLDER);
}

// ---- raw frames ----

/// A connection that writes request frames and reads response frames.
struct Conn {
    s: TcpStream,
    next_id: i32,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Conn { s, next_id: 1 }
    }

    fn send(&mut self, body: &impl AnyBody, version: i16) -> i32 {
        let id = self.next_id;
        self.next_id += 1;
        let header = kwire::frame::RequestHeader {
            correlation_id: id,
            client_id: Some("broker-test"),
            unknown_tagged_fields: &[],
        };
        let mut buf = vec![0u8; dispatch::request_len(body, version, &header).unwrap()];
        dispatch::encode_request_with(body, version, &header, &mut buf).unwrap();
        self.s.write_all(&buf).unwrap();
        id
    }

    /// The next response frame (after its size), or `None` if the connection closed.
    fn read(&mut self) -> Option<Vec<u8>> {
        let mut size = [0u8; 4];
        self.s.read_exact(&mut size).ok()?;
        let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
        self.s.read_exact(&mut frame).ok()?;
        Some(frame)
    }

    /// Sends a request and returns its response frame, checking the correlation id.
    fn call(&mut self, body: &impl AnyBody, version: i16) -> Vec<u8> {
        let id = self.send(body, version);
        let frame = self.read().expect("a response");
        assert_eq!(i32::from_be_bytes(frame[..4].try_into().unwrap()), id, "correlation id");
        frame
    }
}

fn records(n: usize, tag: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n).map(|i| (format!("k{i}").into_bytes(), format!("{tag}-{i}").into_bytes())).collect()
}

fn batch(rs: &[(Vec<u8>, Vec<u8>)], compression: Compression, producer: Option<(i64, i16, i32)>) -> Vec<u8> {
    let new: Vec<NewRecord<'_>> = rs
        .iter()
        .map(|(k, v)| NewRecord { key: Some(k), value: Some(v), headers: &[], timestamp: None })
        .collect();
    let mut b = BatchBuilder::new(0, 1_700_000_000_000, &new);
    b.compression = compression;
    if let Some((id, epoch, seq)) = producer {
        b.producer_id = id;
        b.producer_epoch = epoch;
        b.base_sequence = seq;
    }
    let mut out = Vec::new();
    b.encode_to_vec(&mut out).unwrap();
    out
}

/// (partition, error code, base offset) of each partition of a Produce v9 response.
fn produce(c: &mut Conn, topic: &str, acks: i16, parts: &[(i32, &[u8])]) -> Option<Vec<(i32, i16, i64)>> {
    let data: Vec<PartitionProduceData<'_>> = parts
        .iter()
        .map(|(i, b)| PartitionProduceData { index: *i, records: Some((*b).into()), ..Default::default() })
        .collect();
    let topics = [TopicProduceData {
        name: topic.into(),
        partition_data: data.as_slice().into(),
        ..Default::default()
    }];
    let req = ProduceRequest { acks, timeout_ms: 5000, topic_data: (&topics).into(), ..Default::default() };
    if acks == 0 {
        c.send(&req, 9);
        return None;
    }
    let frame = c.call(&req, 9);
    let ResponseBodyView::Produce(r) = dispatch::parse_response(&frame, ApiKey::Produce, 9).unwrap().body
    else {
        panic!()
    };
    Some(
        r.responses()
            .iter()
            .flat_map(|t| {
                t.partition_responses()
                    .iter()
                    .map(|p| (p.index(), p.error_code(), p.base_offset()))
                    .collect::<Vec<_>>()
            })
            .collect(),
    )
}

/// Fetch v12 of one partition: (error, high watermark, the values of the records).
fn fetch(
    c: &mut Conn,
    topic: &str,
    partition: i32,
    offset: i64,
    max_wait_ms: i32,
) -> (i16, i64, Vec<String>) {
    let parts = [FetchPartition {
        partition,
        fetch_offset: offset,
        partition_max_bytes: 1 << 20,
        ..Default::default()
    }];
    let topics = [FetchTopic { topic: topic.into(), partitions: (&parts).into(), ..Default::default() }];
    let req = FetchRequest {
        max_wait_ms,
        min_bytes: 1,
        max_bytes: 50 << 20,
        session_epoch: -1,
        topics: (&topics).into(),
        ..Default::default()
    };
    let frame = c.call(&req, 12);
    let ResponseBodyView::Fetch(r) = dispatch::parse_response(&frame, ApiKey::Fetch, 12).unwrap().body else {
        panic!()
    };
    let t = r.responses().iter().next().unwrap();
    let p = t.partitions().iter().next().unwrap();
    let mut values = Vec::new();
    let mut scratch = Vec::new();
    for b in RecordBatches::new(p.records().map(|r| r.bytes()).unwrap_or_default()) {
        let b = b.expect("a batch as stored");
        for r in b.records_in_vec(&mut scratch, 1 << 24).expect("its records") {
            values.push(String::from_utf8(r.unwrap().value().unwrap().to_vec()).unwrap());
        }
    }
    (p.error_code(), p.high_watermark(), values)
}

fn broker_with_topic(config: Config, topic: &str, partitions: i32) -> Broker {
    let b = Broker::start(config).unwrap();
    assert!(b.create_topic(topic, partitions));
    b
}

#[test]
fn a_corrupt_batch_fails_its_partition_only() {
    let b = broker_with_topic(Config::default(), "t", 3);
    let mut c = Conn::open(b.addr());
    let good = batch(&records(3, "good"), Compression::None, None);
    let mut corrupt = batch(&records(3, "bad"), Compression::None, None);
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0x55; // a value byte: the CRC no longer matches
    let mut cut = good.clone();
    cut.truncate(good.len() - 5);
    let two = [good.clone(), good.clone()].concat();
    let answers = produce(&mut c, "t", -1, &[(0, &good), (1, &corrupt), (2, &cut)]).unwrap();
    // A bad CRC is CORRUPT_MESSAGE (2); a cut batch leaves no whole batch, INVALID_RECORD
    // (87), as Kafka answers Produce v3+ (kwire::records::validate); partition 0 is fine.
    assert_eq!(answers, [(0, 0, 0), (1, 2, -1), (2, 87, -1)], "errors for the bad partitions only");
    // Two batches in one partition: INVALID_RECORD (87), as Kafka answers Produce v3+.
    assert_eq!(produce(&mut c, "t", 1, &[(0, &two)]).unwrap(), [(0, 87, -1)]);
    // An unknown partition and topic: UNKNOWN_TOPIC_OR_PARTITION (3); Produce creates nothing.
    assert_eq!(produce(&mut c, "t", 1, &[(7, &good)]).unwrap(), [(7, 3, -1)]);
    assert_eq!(produce(&mut c, "nope", 1, &[(0, &good)]).unwrap(), [(0, 3, -1)]);
    assert_eq!(b.end_offset("nope", 0), None);
    // A record two hours ahead of the broker's clock (message.timestamp.after.max.ms is one
    // hour): INVALID_TIMESTAMP (32).
    let ahead = {
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
        let rs =
            [NewRecord { key: None, value: Some(b"late"), headers: &[], timestamp: Some(now + 7_200_000) }];
        let mut out = Vec::new();
        BatchBuilder::new(0, now + 7_200_000, &rs).encode_to_vec(&mut out).unwrap();
        out
    };
    assert_eq!(produce(&mut c, "t", -1, &[(0, &ahead)]).unwrap(), [(0, 32, -1)]);
    // Only the good batch is in the log, with its offsets assigned.
    assert_eq!(fetch(&mut c, "t", 0, 0, 0), (0, 3, vec!["good-0".into(), "good-1".into(), "good-2".into()]));
    assert_eq!((b.end_offset("t", 1), b.end_offset("t", 2)), (Some(0), Some(0)));
    assert_eq!(b.log_bytes("t", 1), Some(0));
    // A second batch gets the next offsets, written into its header in place.
    assert_eq!(produce(&mut c, "t", -1, &[(0, &good)]).unwrap(), [(0, 0, 3)]);
    // A fetch from inside a batch returns that whole batch (offsets 3 to 5), as Kafka does.
    let (_, hw, values) = fetch(&mut c, "t", 0, 4, 0);
    assert_eq!((hw, values), (6, vec!["good-0".to_string(), "good-1".into(), "good-2".into()]));
}

#[cfg(feature = "gzip")]
#[test]
fn a_batch_inflating_past_the_limit_is_refused() {
    let config = Config { max_decompressed_bytes: 64 * 1024, ..Config::default() };
    let b = broker_with_topic(config, "t", 1);
    let gzip = kwire::client::Config { compression: Compression::Gzip, ..Default::default() };
    let mut c = Client::connect_with(b.addr(), gzip).unwrap();
    // 200 KB of one byte: gzip shrinks it to a few hundred bytes.
    let big = vec![b'z'; 200_000];
    let e = c.produce("t", 0, &[NewRecord::new(Some(b"k"), Some(&big))]).unwrap_err();
    // INVALID_RECORD (87), kwire::records::validate's code for a batch past the inflate limit.
    assert_eq!(e.error_code(), Some(kwire::ErrorCode::InvalidRecord), "{e}");
    assert_eq!(b.log_bytes("t", 0), Some(0));
    let small: Vec<NewRecord<'_>> = (0..5).map(|_| NewRecord::new(None, Some(b"ok"))).collect();
    assert_eq!(c.produce("t", 0, &small).unwrap(), 0);
    assert_eq!(c.fetch("t", 0, 0).unwrap().records.len(), 5);
}

#[test]
fn acks_zero_gets_no_answer_and_a_failure_closes_the_connection() {
    use kwire::messages::ApiVersionsRequest;
    let b = broker_with_topic(Config::default(), "t", 1);
    let mut c = Conn::open(b.addr());
    let good = batch(&records(2, "a0"), Compression::None, None);
    assert!(produce(&mut c, "t", 0, &[(0, &good)]).is_none());
    assert!(produce(&mut c, "t", 0, &[(0, &good)]).is_none());
    // The next answer on the connection is the ApiVersions one: nothing came for acks=0.
    let frame = c.call(&ApiVersionsRequest::default(), 3);
    assert!(dispatch::parse_response(&frame, ApiKey::ApiVersions, 3).is_ok());
    assert_eq!(b.end_offset("t", 0), Some(4));
    // acks=0 to an unknown partition: Kafka closes the connection so the producer notices.
    assert!(produce(&mut c, "t", 0, &[(5, &good)]).is_none());
    c.send(&ApiVersionsRequest::default(), 3);
    assert!(c.read().is_none(), "the connection is closed");
    assert_eq!(b.end_offset("t", 0), Some(4));
}

#[test]
fn idempotent_producers_duplicates_and_gaps() {
    use kwire::messages::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
    let b = broker_with_topic(Config::default(), "t", 1);
    let mut c = Conn::open(b.addr());
    // An idempotent producer sends a null transactional id (an empty one is
    // INVALID_REQUEST, as from Kafka).
    let frame = c.call(
        &InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: 60000,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        },
        4,
    );
    let ResponseBodyView::InitProducerId(r) =
        dispatch::parse_response(&frame, ApiKey::InitProducerId, 4).unwrap().body
    else {
        panic!()
    };
    assert_eq!(r.error_code(), 0);
    let (pid, epoch) = (r.producer_id(), r.producer_epoch());
    let _ = InitProducerIdResponse::default();
    let first = batch(&records(3, "s0"), Compression::None, Some((pid, epoch, 0)));
    assert_eq!(produce(&mut c, "t", -1, &[(0, &first)]).unwrap(), [(0, 0, 0)]);
    // The same batch again (a retry): the same offset, nothing appended.
    assert_eq!(produce(&mut c, "t", -1, &[(0, &first)]).unwrap(), [(0, 0, 0)]);
    assert_eq!(b.end_offset("t", 0), Some(3));
    // A gap (sequence 5 after 0..=2): OUT_OF_ORDER_SEQUENCE_NUMBER (45).
    let gap = batch(&records(1, "gap"), Compression::None, Some((pid, epoch, 5)));
    assert_eq!(produce(&mut c, "t", -1, &[(0, &gap)]).unwrap(), [(0, 45, -1)]);
    // The next sequence: appended.
    let next = batch(&records(2, "s3"), Compression::None, Some((pid, epoch, 3)));
    assert_eq!(produce(&mut c, "t", -1, &[(0, &next)]).unwrap(), [(0, 0, 3)]);
    // An older epoch: INVALID_PRODUCER_EPOCH (47); a new epoch must start at 0.
    let bumped = batch(&records(1, "e1"), Compression::None, Some((pid, epoch + 1, 0)));
    assert_eq!(produce(&mut c, "t", -1, &[(0, &bumped)]).unwrap(), [(0, 0, 5)]);
    let stale = batch(&records(1, "old"), Compression::None, Some((pid, epoch, 5)));
    assert_eq!(produce(&mut c, "t", -1, &[(0, &stale)]).unwrap(), [(0, 47, -1)]);
    let bad_start = batch(&records(1, "e2"), Compression::None, Some((pid, epoch + 2, 7)));
    assert_eq!(produce(&mut c, "t", -1, &[(0, &bad_start)]).unwrap(), [(0, 45, -1)]);
    let values = fetch(&mut c, "t", 0, 0, 0).2;
    assert_eq!(values, ["s0-0", "s0-1", "s0-2", "s3-0", "s3-1", "e1-0"]);
    // A transactional id gets its producer id from the transaction coordinator
    // (tests/broker_txn.rs has the rest).
    let frame = c.call(
        &InitProducerIdRequest {
            transactional_id: Some("tx".into()),
            transaction_timeout_ms: 60000,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        },
        4,
    );
    let ResponseBodyView::InitProducerId(r) =
        dispatch::parse_response(&frame, ApiKey::InitProducerId, 4).unwrap().body
    else {
        panic!()
    };
    assert_eq!((r.error_code(), r.producer_epoch()), (0, 0));
    assert!(r.producer_id() > pid, "a new producer id");
}

#[test]
fn fetch_long_polls_until_data_or_max_wait() {
    let b = broker_with_topic(Config::default(), "t", 1);
    let waiting = |wait_ms| kwire::client::Config {
        fetch_max_wait: Duration::from_millis(wait_ms),
        ..kwire::client::Config::default()
    };
    let mut c = Client::connect_with(b.addr(), waiting(600)).unwrap();
    // Nothing to read: the answer comes at max_wait_ms, empty.
    let start = Instant::now();
    let f = c.fetch("t", 0, 0).unwrap();
    let waited = start.elapsed();
    assert_eq!((f.high_watermark, f.records.len()), (0, 0));
    assert!(waited >= Duration::from_millis(550), "answered after {waited:?}, before max_wait_ms");
    assert!(waited < Duration::from_secs(10), "answered after {waited:?}");
    // A long wait ends as soon as another connection produces.
    let addr = b.addr();
    let producer = thread::spawn(move || {
        thread::sleep(Duration::from_millis(300));
        Client::connect(addr).unwrap().produce("t", 0, &[NewRecord::new(None, Some(b"late-0"))]).unwrap()
    });
    let mut c = Client::connect_with(addr, waiting(30_000)).unwrap();
    let start = Instant::now();
    let f = c.fetch("t", 0, 0).unwrap();
    let waited = start.elapsed();
    assert_eq!(producer.join().unwrap(), 0);
    assert_eq!(f.records.iter().map(|r| r.value.as_deref().unwrap()).collect::<Vec<_>>(), [b"late-0"]);
    assert!(waited < Duration::from_secs(15), "the append did not end the wait ({waited:?})");
    // An offset past the end: OFFSET_OUT_OF_RANGE (1), at once.
    let start = Instant::now();
    assert_eq!(c.fetch("t", 0, 9).unwrap_err().error_code(), Some(kwire::ErrorCode::OffsetOutOfRange));
    assert!(start.elapsed() < Duration::from_secs(15));
    // Stopping the broker ends a waiting fetch: the connection closes.
    let waiter = thread::spawn(move || {
        let mut c = Client::connect_with(addr, waiting(60_000)).unwrap();
        let start = Instant::now();
        let closed = c.fetch("t", 0, 1).is_err();
        (closed, start.elapsed())
    });
    thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    drop(b);
    assert!(start.elapsed() < Duration::from_secs(15), "stopping took {:?}", start.elapsed());
    let (closed, waited) = waiter.join().unwrap();
    assert!(closed && waited < Duration::from_secs(20), "{closed} after {waited:?}");
}

#[test]
fn unsupported_apis_get_error_35_and_the_connection_stays_open() {
    use kwire::messages::describe_client_quotas::DescribeClientQuotasRequest;
    use kwire::messages::{ApiVersionsRequest, MetadataRequest};
    let b = Broker::start(Config { max_versions: vec![(ApiKey::Metadata, 9)], ..Config::default() }).unwrap();
    let mut c = Conn::open(b.addr());
    // ApiVersions lists what is served, not DescribeClientQuotas.
    let frame = c.call(&ApiVersionsRequest::default(), 3);
    let ResponseBodyView::ApiVersions(v) =
        dispatch::parse_response(&frame, ApiKey::ApiVersions, 3).unwrap().body
    else {
        panic!()
    };
    let keys: Vec<(i16, i16, i16)> =
        v.api_keys().iter().map(|k| (k.api_key(), k.min_version(), k.max_version())).collect();
    assert!(keys.contains(&(ApiKey::Metadata.to_i16(), 0, 9)), "{keys:?}");
    assert!(!keys.iter().any(|k| k.0 == ApiKey::DescribeClientQuotas.to_i16()));
    assert_eq!(keys.len(), kwire::broker::SERVED.len());
    // An API it does not serve: its response with UNSUPPORTED_VERSION.
    for version in [0, 1] {
        let frame = c.call(&DescribeClientQuotasRequest { strict: true, ..Default::default() }, version);
        let ResponseBodyView::DescribeClientQuotas(r) =
            dispatch::parse_response(&frame, ApiKey::DescribeClientQuotas, version).unwrap().body
        else {
            panic!()
        };
        assert_eq!(r.error_code(), 35);
    }
    // A version above the limit: the same (Metadata has a top-level error code from v13).
    let frame = c.call(&MetadataRequest::default(), 13);
    let ResponseBodyView::Metadata(m) = dispatch::parse_response(&frame, ApiKey::Metadata, 13).unwrap().body
    else {
        panic!()
    };
    assert_eq!(m.error_code(), 35);
    // ApiVersions above what is served: error 35 in a v0 body, the ApiVersions range listed.
    let b2 =
        Broker::start(Config { max_versions: vec![(ApiKey::ApiVersions, 2)], ..Config::default() }).unwrap();
    let mut c2 = Conn::open(b2.addr());
    let frame = c2.call(&ApiVersionsRequest::default(), 3);
    let ResponseBodyView::ApiVersions(v) =
        dispatch::parse_response(&frame, ApiKey::ApiVersions, 0).unwrap().body
    else {
        panic!()
    };
    assert_eq!(v.error_code(), 35);
    // Still open after all that.
    let frame = c.call(&ApiVersionsRequest::default(), 3);
    assert!(dispatch::parse_response(&frame, ApiKey::ApiVersions, 3).is_ok());
    // A frame kwire cannot read at all (an unknown API key) closes the connection.
    let mut raw = vec![0u8, 0, 0, 10, 0x7f, 0x00, 0, 0, 0, 0, 0, 9, 0xff, 0xff];
    raw[4] = 0x7f;
    c.s.write_all(&raw).unwrap();
    assert!(c.read().is_none());
}

/// The test process's resident memory in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A client that sends Fetch after Fetch for a megabyte of records and never reads the
/// answers: the connection's writes block (TCP back-pressure reaches the client), and
/// the broker holds at most about one answer for it.
#[test]
fn a_client_that_never_reads_does_not_grow_memory() {
    let _serial = serial();
    let b = broker_with_topic(Config::default(), "t", 1);
    let mut c = Conn::open(b.addr());
    let value = vec![(b"k".to_vec(), vec![b'v'; 900_000])];
    let one = batch(&value, Compression::None, None);
    assert_eq!(produce(&mut c, "t", 1, &[(0, &one)]).unwrap(), [(0, 0, 0)]);
    let parts = [FetchPartition {
        partition: 0,
        fetch_offset: 0,
        partition_max_bytes: 1 << 20,
        ..Default::default()
    }];
    let topics = [FetchTopic { topic: "t".into(), partitions: (&parts).into(), ..Default::default() }];
    let req = FetchRequest {
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: (&topics).into(),
        ..Default::default()
    };
    let header = kwire::frame::RequestHeader {
        correlation_id: 1,
        client_id: Some("slow"),
        unknown_tagged_fields: &[],
    };
    let mut frame = vec![0u8; dispatch::request_len(&req, 12, &header).unwrap()];
    dispatch::encode_request_with(&req, 12, &header, &mut frame).unwrap();
    let before = rss_kib();
    c.s.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
    let start = Instant::now();
    let mut sent = 0usize;
    let blocked = loop {
        if start.elapsed() > Duration::from_secs(30) {
            break false;
        }
        match c.s.write_all(&frame) {
            Ok(()) => sent += 1,
            Err(_) => break true,
        }
    };
    let during = rss_kib();
    eprintln!(
        "slow reader: {sent} Fetch requests ({} MB of answers asked for) before the writes blocked={blocked}; RSS {before} KiB before, {during} KiB while blocked",
        sent * one.len() / 1_000_000
    );
    assert!(blocked, "writes never blocked after {sent} requests: no back-pressure");
    assert!(sent * one.len() > 100 << 20, "only {sent} requests were taken before blocking");
    assert!(during < before + 64 * 1024, "memory grew from {before} KiB to {during} KiB");
    drop(c);
    assert_eq!(b.end_offset("t", 0), Some(1));
}

// ---- transactions with real clients ----

/// Runs a transactional client program; its last JSON line.
fn txn_client(cmd: Command, what: &str, broker_log: &Mutex<Vec<String>>) -> Value {
    let out = run(cmd, what, CLIENT_TIMEOUT);
    let lines = broker_log.lock().unwrap().join("\n");
    assert!(out.ok, "{what} failed\nstdout:\n{}\nstderr:\n{}\nbroker log:\n{lines}", out.stdout, out.stderr);
    let answer = out.stdout.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| {
        panic!("{what} printed no JSON\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr)
    });
    serde_json::from_str(answer).expect("client JSON")
}

/// `[[offset, value], ...]` as pairs.
fn offsets_and_values(v: &Value) -> Vec<(i64, String)> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|r| (r[0].as_i64().unwrap(), r[1].as_str().unwrap().to_string()))
        .collect()
}

fn logging_broker() -> (Broker, std::sync::Arc<Mutex<Vec<String>>>) {
    let log = std::sync::Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = log.clone();
    let config = Config {
        logger: Some(std::sync::Arc::new(move |line: &str| sink.lock().unwrap().push(line.to_string()))),
        ..Config::default()
    };
    (Broker::start(config).expect("start the broker"), log)
}

/// confluent-kafka (librdkafka): commit, abort, a zombie fenced, and read_committed and
/// read_uncommitted consumers checked record by record; then a read-process-write loop
/// (consume, produce, the group's offsets in the transaction) whose process is killed in
/// the middle of a transaction and restarted: the output at read_committed has every input
/// exactly once, in order.
#[test]
#[cfg_attr(not(feature = "interop"), ignore = "a real client: needs --features interop")]
fn confluent_kafka_admin() {
    let _serial = serial();
    setup(|| true);
    let (broker, log) = logging_broker();
    let topic = format!("admin-{}", std::process::id());
    let mut cmd = Command::new(root().join("target/interop/venv/bin/python"));
    cmd.arg(root().join("tests/broker_admin/confluent_admin.py"))
        .args([broker.addr().to_string(), topic.clone()]);
    let out = txn_client(cmd, "confluent-kafka admin", &log);
    // Source 1: DYNAMIC_TOPIC_CONFIG.
    assert_eq!(out["configs"]["retention.ms"], serde_json::json!(["5000", "1"]), "{out}");
    assert_eq!(out["configs"]["cleanup.policy"][0], "delete,compact", "{out}");
    assert_eq!(out["bad"], "INVALID_CONFIG", "{out}");
    assert_eq!(
        (&out["low_watermark"], &out["earliest"]),
        (&serde_json::json!(3), &serde_json::json!(3)),
        "{out}"
    );
    assert_eq!(broker.log_start_offset(&topic, 0), Some(3));
    assert_eq!(out["acls"], serde_json::json!(["User:alice"]), "{out}");
    assert_eq!(out["deleted_acls"], serde_json::json!(["User:alice"]), "{out}");
    assert_eq!(out["elect"], serde_json::json!(["ELECTION_NOT_NEEDED"]), "{out}");
}

#[test]
#[cfg_attr(not(feature = "interop"), ignore = "a real client: needs --features interop")]
fn confluent_kafka_transactions() {
    let _serial = serial();
    setup(|| true);
    let (broker, log) = logging_broker();
    let prefix = format!("ctxn-{}", std::process::id());
    let (src, dst) = (format!("{prefix}-in"), format!("{prefix}-out"));
    assert!(broker.create_topic(&src, 1) && broker.create_topic(&dst, 1));
    let python = root().join("target/interop/venv/bin/python");
    let script = root().join("tests/broker_txn/confluent_txn.py");
    let bootstrap = broker.addr().to_string();
    let cmd = |args: &[&str]| {
        let mut c = Command::new(&python);
        c.arg(&script).args([bootstrap.as_str(), prefix.as_str()]).args(args);
        c
    };

    let basics = txn_client(cmd(&["basics"]), "confluent-kafka basics", &log);
    let fenced = &basics["fenced"];
    assert!(fenced.is_object(), "the zombie was not fenced: {basics}");
    assert_eq!(fenced["fatal"], true, "{fenced}");
    assert!(
        ["_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"].contains(&fenced["name"].as_str().unwrap()),
        "{fenced}"
    );
    // The log: c-0..9, commit marker (10), a-0..4, abort marker (16), d-0..2, commit marker
    // (20), zombie-0, the abort marker of the fencing (22), fresh-0, commit marker (24).
    let c = |tag: &str, n: usize, first: i64| -> Vec<(i64, String)> {
        (0..n).map(|i| (first + i as i64, format!("{tag}-{i}"))).collect()
    };
    let committed: Vec<(i64, String)> =
        [c("c", 10, 0), c("d", 3, 17), c("fresh", 1, 23)].into_iter().flatten().collect();
    let uncommitted: Vec<(i64, String)> =
        [c("c", 10, 0), c("a", 5, 11), c("d", 3, 17), c("zombie", 1, 21), c("fresh", 1, 23)]
            .into_iter()
            .flatten()
            .collect();
    assert_eq!(offsets_and_values(&basics["committed"]), committed, "read_committed");
    assert_eq!(offsets_and_values(&basics["uncommitted"]), uncommitted, "read_uncommitted");
    assert_eq!(broker.end_offset(&src, 0), Some(25));

    // Read-process-write, killed mid-transaction after 6 records, then restarted.
    let out = run(cmd(&["rpw", "6"]), "confluent-kafka rpw (crashing)", CLIENT_TIMEOUT);
    assert!(
        !out.ok && !out.stderr.contains("Traceback") && !out.stdout.contains('{'),
        "the first run must die mid-transaction (exit 3)\nstdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    let written_before_restart = broker.end_offset(&dst, 0).unwrap();
    let second = txn_client(cmd(&["rpw"]), "confluent-kafka rpw (restarted)", &log);
    let processed = second["processed"].as_i64().unwrap();
    assert!(processed > 0 && processed < 14, "the restart goes on from the committed offsets: {second}");
    let read = txn_client(cmd(&["read", &dst]), "confluent-kafka read", &log);
    let expected: Vec<String> = committed.iter().map(|(_, v)| format!("out:{v}")).collect();
    let got: Vec<String> = offsets_and_values(&read["committed"]).into_iter().map(|(_, v)| v).collect();
    assert_eq!(got, expected, "read_committed output: every input once, in order");
    let all: Vec<String> = offsets_and_values(&read["uncommitted"]).into_iter().map(|(_, v)| v).collect();
    assert!(all.len() > got.len(), "the crashed transaction's output is in the log, aborted: {all:?}");
    assert!(all.iter().all(|v| expected.contains(v)), "{all:?}");
    assert!(written_before_restart > 0);
    let lines = log.lock().unwrap().join("\n");
    assert!(lines.contains(&format!("transaction {prefix}-rpw")) && lines.contains("aborted"), "{lines}");
    eprintln!(
        "confluent-kafka transactions: {} committed / {} uncommitted records checked; rpw restarted after a crash, {processed} records after the restart, output exactly once",
        committed.len(),
        uncommitted.len()
    );
}

/// franz-go: commit, abort and a zombie fenced by a new producer with its transactional
/// id; read_committed and read_uncommitted consumers checked record by record.
#[test]
#[cfg_attr(not(feature = "interop"), ignore = "a real client: needs --features interop")]
fn franz_go_transactions() {
    let _serial = serial();
    setup(|| true);
    let (broker, log) = logging_broker();
    let topic = format!("gtxn-{}", std::process::id());
    assert!(broker.create_topic(&topic, 1));
    let go_client = root().join("target/go-client/go-client");
    // A go-client built before its `txn` subcommand (setup ran earlier) is built again.
    let modified = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if modified(&go_client) < modified(&root().join("tests/interop/go/txn.go")) {
        let mut build = Command::new("go");
        build.current_dir(root().join("tests/interop/go")).arg("build").arg("-o").arg(&go_client).arg(".");
        let out = run(build, "go build (go-client)", common::clients::SETUP_TIMEOUT);
        assert!(out.ok, "go build failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    }
    let mut cmd = Command::new(&go_client);
    cmd.args(["txn", &broker.addr().to_string(), &topic]);
    let out = txn_client(cmd, "franz-go txn", &log);
    let e = out["zombie_produce"].as_str().unwrap_or_else(|| panic!("the zombie was not fenced: {out}"));
    assert!(e.contains("INVALID_PRODUCER_EPOCH") || e.contains("PRODUCER_FENCED"), "zombie produce: {e}");
    // After that, franz-go refuses the commit itself (its error varies by version); that the
    // zombie's record stays uncommitted is checked below.
    assert!(out["zombie_commit"].is_string(), "the zombie's commit succeeded: {out}");
    // g-0..4, commit marker (5), ga-0..2, abort marker (9), gz-0, the fencing abort (11),
    // gf-0, commit marker (13).
    let rec = |o: i64, v: &str| (o, v.to_string());
    let committed: Vec<(i64, String)> =
        (0..5).map(|i| rec(i, &format!("g-{i}"))).chain([rec(12, "gf-0")]).collect();
    let uncommitted: Vec<(i64, String)> = (0..5)
        .map(|i| rec(i, &format!("g-{i}")))
        .chain((0..3).map(|i| rec(6 + i, &format!("ga-{i}"))))
        .chain([rec(10, "gz-0"), rec(12, "gf-0")])
        .collect();
    assert_eq!(offsets_and_values(&out["committed"]), committed, "read_committed");
    assert_eq!(offsets_and_values(&out["uncommitted"]), uncommitted, "read_uncommitted");
    assert_eq!(broker.end_offset(&topic, 0), Some(14));
    eprintln!(
        "franz-go transactions: commit, abort and a fenced zombie; both isolation levels checked record by record"
    );
}

/// kafka-python (the README's demo client): commit, abort, commit; both isolation levels
/// checked record by record.
#[test]
#[cfg_attr(not(feature = "interop"), ignore = "a real client: needs --features interop")]
fn kafka_python_transactions() {
    let _serial = serial();
    setup(|| true);
    let (broker, log) = logging_broker();
    let topic = format!("kptxn-{}", std::process::id());
    assert!(broker.create_topic(&topic, 1));
    let mut cmd = Command::new(root().join("target/interop/venv/bin/python"));
    cmd.arg(root().join("tests/broker_txn/kafka_python_txn.py")).args([&broker.addr().to_string(), &topic]);
    let out = txn_client(cmd, "kafka-python txn", &log);
    // k-0..2, commit marker (3), ka-0..1, abort marker (6), k-3, commit marker (8).
    let rec = |o: i64, v: &str| (o, v.to_string());
    let committed = vec![rec(0, "k-0"), rec(1, "k-1"), rec(2, "k-2"), rec(7, "k-3")];
    let uncommitted =
        vec![rec(0, "k-0"), rec(1, "k-1"), rec(2, "k-2"), rec(4, "ka-0"), rec(5, "ka-1"), rec(7, "k-3")];
    assert_eq!(offsets_and_values(&out["committed"]), committed, "read_committed");
    assert_eq!(offsets_and_values(&out["uncommitted"]), uncommitted, "read_uncommitted");
    assert_eq!(broker.end_offset(&topic, 0), Some(9));
}

/// Authenticates a raw connection with SASL/PLAIN (handshake v1, authenticate v2).
fn plain_login(c: &mut Conn, user: &str, password: &str) {
    use kwire::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
    let frame = c.call(&SaslHandshakeRequest { mechanism: "PLAIN".into() }, 1);
    let ResponseBodyView::SaslHandshake(h) =
        dispatch::parse_response(&frame, ApiKey::SaslHandshake, 1).unwrap().body
    else {
        panic!()
    };
    assert_eq!(h.error_code(), 0);
    let token = format!("\0{user}\0{password}");
    let frame =
        c.call(&SaslAuthenticateRequest { auth_bytes: token.as_bytes().into(), ..Default::default() }, 2);
    let ResponseBodyView::SaslAuthenticate(a) =
        dispatch::parse_response(&frame, ApiKey::SaslAuthenticate, 2).unwrap().body
    else {
        panic!()
    };
    assert_eq!(a.error_code(), 0);
}

/// The topics a Metadata v12 request for every topic lists, with their error codes.
fn metadata_all(c: &mut Conn) -> Vec<(String, i16)> {
    let frame = c.call(&kwire::messages::MetadataRequest { topics: None, ..Default::default() }, 12);
    let ResponseBodyView::Metadata(m) = dispatch::parse_response(&frame, ApiKey::Metadata, 12).unwrap().body
    else {
        panic!()
    };
    let mut topics: Vec<_> =
        m.topics().iter().map(|t| (t.name().unwrap_or_default().to_string(), t.error_code())).collect();
    topics.sort();
    topics
}

/// With `Config::authorizer`, the ACLs are enforced as Kafka's `StandardAuthorizer` decides,
/// for the connection's principal (`User:ANONYMOUS` without SASL, `User:NAME` after it):
/// each refused topic gets TOPIC_AUTHORIZATION_FAILED in its place, the others are served,
/// a group refused gets GROUP_AUTHORIZATION_FAILED, Metadata for every topic leaves out
/// what the principal may not describe, and super users may do everything.
#[test]
fn acls_are_enforced_for_each_principal() {
    use kwire::ErrorCode;
    use kwire::broker::{Acl, Authorizer};
    let (topic, group) = (2, 3);
    let (literal, prefixed) = (3, 4);
    let (read, write, create) = (3, 4, 5);
    let allow = |rt: i8, name: &str, pattern: i8, principal: &str, op: i8| Acl {
        resource_type: rt,
        resource_name: name.into(),
        pattern_type: pattern,
        principal: principal.into(),
        host: "*".into(),
        operation: op,
        permission_type: 3,
    };
    let config = Config {
        plain_users: vec![("alice".into(), "pw-a".into()), ("admin".into(), "pw-b".into())],
        authorizer: Some(Authorizer { super_users: vec!["User:admin".into()], ..Default::default() }),
        acls: vec![
            allow(topic, "open", prefixed, "User:ANONYMOUS", create),
            allow(topic, "open", prefixed, "User:ANONYMOUS", write),
            allow(topic, "open", prefixed, "User:alice", read),
            allow(group, "readers", literal, "User:alice", read),
        ],
        ..Config::default()
    };
    let broker = Broker::start(config).unwrap();
    assert!(broker.create_topic("secret", 1));

    // Anonymous: may create and write `open*` topics, not read them, and nothing else.
    let mut anonymous = Client::connect(broker.addr()).unwrap();
    anonymous.create_topic("open.a", 1).unwrap();
    let refused = anonymous.create_topic("closed", 1).unwrap_err();
    assert_eq!(refused.error_code(), Some(ErrorCode::TopicAuthorizationFailed), "{refused}");
    anonymous.produce("open.a", 0, &[NewRecord::new(None, Some(b"v0"))]).unwrap();
    let refused = anonymous.fetch("open.a", 0, 0).unwrap_err();
    assert_eq!(refused.error_code(), Some(ErrorCode::TopicAuthorizationFailed), "{refused}");
    let refused = anonymous.produce("secret", 0, &[NewRecord::new(None, Some(b"x"))]).unwrap_err();
    assert_eq!(refused.error_code(), Some(ErrorCode::TopicAuthorizationFailed), "{refused}");
    let mut raw = Conn::open(broker.addr());
    assert_eq!(
        metadata_all(&mut raw),
        [("open.a".to_string(), 0)],
        "WRITE implies DESCRIBE; secret is hidden"
    );
    let refused = anonymous.commit_offset("readers", "open.a", 0, 1).unwrap_err();
    assert_eq!(refused.error_code(), Some(ErrorCode::GroupAuthorizationFailed), "{refused}");

    // alice: may read `open*`, not write it; her group, no other.
    let mut alice = Conn::open(broker.addr());
    plain_login(&mut alice, "alice", "pw-a");
    let (error, _, values) = fetch(&mut alice, "open.a", 0, 0, 0);
    assert_eq!((error, values), (0, vec!["v0".to_string()]));
    let b = batch(&records(1, "alice"), Compression::None, None);
    let answer = produce(&mut alice, "open.a", -1, &[(0, &b)]).unwrap();
    assert_eq!(answer[0].1, ErrorCode::TopicAuthorizationFailed.to_i16());
    let heartbeat = |c: &mut Conn, group_id: &str| {
        let req = kwire::messages::HeartbeatRequest {
            group_id: group_id.into(),
            generation_id: 1,
            member_id: "m".into(),
            ..Default::default()
        };
        let frame = c.call(&req, 4);
        let ResponseBodyView::Heartbeat(h) =
            dispatch::parse_response(&frame, ApiKey::Heartbeat, 4).unwrap().body
        else {
            panic!()
        };
        h.error_code()
    };
    assert_eq!(heartbeat(&mut alice, "others"), ErrorCode::GroupAuthorizationFailed.to_i16());
    assert_ne!(heartbeat(&mut alice, "readers"), ErrorCode::GroupAuthorizationFailed.to_i16());

    // admin, a super user: everything, with no binding naming it.
    let mut admin = Conn::open(broker.addr());
    plain_login(&mut admin, "admin", "pw-b");
    let (error, _, _) = fetch(&mut admin, "secret", 0, 0, 0);
    assert_eq!(error, 0);
    assert_eq!(metadata_all(&mut admin).len(), 2);
}

/// Sends a request and binds its parsed response body (the variant named) for `$then`.
macro_rules! ask {
    ($c:expr, $req:expr, $api:ident, $v:expr, |$r:ident| $then:expr) => {{
        let frame = $c.call(&$req, $v);
        let ResponseBodyView::$api($r) = dispatch::parse_response(&frame, ApiKey::$api, $v).unwrap().body
        else {
            panic!(stringify!($api))
        };
        $then
    }};
}

/// The admin, group, offset and transaction APIs' checks, each asked by a principal that
/// is refused and by one that an ACL allows: the error in each entry or at the top as
/// Kafka gives it, what is left out of listings, and authorized-operations fields computed
/// from the bindings.
#[test]
fn acls_guard_the_admin_group_and_transaction_apis() {
    use kwire::ErrorCode;
    use kwire::broker::{Acl, Authorizer};
    use kwire::messages as m;
    let (topic, group, cluster, txn) = (2, 3, 4, 5);
    let literal = 3;
    let allow = |rt: i8, name: &str, principal: &str, op: i8| Acl {
        resource_type: rt,
        resource_name: name.into(),
        pattern_type: literal,
        principal: principal.into(),
        host: "*".into(),
        operation: op,
        permission_type: 3,
    };
    // READ 3, WRITE 4, DELETE 6, ALTER 7, DESCRIBE 8, ALTER_CONFIGS 11.
    let mut acls = Vec::new();
    for op in [3, 4, 6, 7, 8, 11] {
        acls.push(allow(topic, "t", "User:alice", op));
    }
    acls.push(allow(group, "g", "User:alice", 3));
    acls.push(allow(group, "g", "User:alice", 6));
    acls.push(allow(txn, "tx", "User:alice", 4));
    for op in [7, 8, 11] {
        acls.push(allow(cluster, "kafka-cluster", "User:bob", op));
    }
    let config = Config {
        plain_users: vec![
            ("alice".into(), "pw-a".into()),
            ("bob".into(), "pw-b".into()),
            ("admin".into(), "pw-c".into()),
        ],
        authorizer: Some(Authorizer { super_users: vec!["User:admin".into()], ..Default::default() }),
        acls,
        ..Config::default()
    };
    let broker = Broker::start(config).unwrap();
    assert!(broker.create_topic("t", 1) && broker.create_topic("secret", 1));
    let login = |user: &str, pw: &str| {
        let mut c = Conn::open(broker.addr());
        plain_login(&mut c, user, pw);
        c
    };
    let (mut anon, mut alice, mut bob, mut admin) =
        (Conn::open(broker.addr()), login("alice", "pw-a"), login("bob", "pw-b"), login("admin", "pw-c"));
    let code = |e: ErrorCode| e.to_i16();
    let (topic_refused, group_refused, cluster_refused, txn_refused) = (
        code(ErrorCode::TopicAuthorizationFailed),
        code(ErrorCode::GroupAuthorizationFailed),
        code(ErrorCode::ClusterAuthorizationFailed),
        code(ErrorCode::TransactionalIdAuthorizationFailed),
    );

    // Offsets committed (by the super user) in groups g and other, on t and secret.
    for g in ["g", "other"] {
        let req = m::OffsetCommitRequest {
            group_id: g.into(),
            generation_id_or_member_epoch: -1,
            member_id: "".into(),
            topics: ["t", "secret"]
                .iter()
                .map(|&name| m::offset_commit::OffsetCommitRequestTopic {
                    name: name.into(),
                    partitions: vec![m::offset_commit::OffsetCommitRequestPartition {
                        partition_index: 0,
                        committed_offset: 0,
                        ..Default::default()
                    }]
                    .into(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        ask!(admin, req, OffsetCommit, 8, |r| for t in r.topics() {
            assert!(t.partitions().iter().all(|p| p.error_code() == 0));
        });
    }

    // OffsetFetch v8: DESCRIBE on the group, then on each topic; every topic: filtered.
    let offset_fetch = |c: &mut Conn, g: &str, topics: Option<&[&str]>| {
        let req = m::OffsetFetchRequest {
            groups: vec![m::offset_fetch::OffsetFetchRequestGroup {
                group_id: g.into(),
                topics: topics.map(|ts| {
                    ts.iter()
                        .map(|&name| m::offset_fetch::OffsetFetchRequestTopics {
                            name: name.into(),
                            partition_indexes: vec![0].into(),
                            ..Default::default()
                        })
                        .collect()
                }),
                ..Default::default()
            }]
            .into(),
            ..Default::default()
        };
        ask!(c, req, OffsetFetch, 8, |r| {
            let g = r.groups().iter().next().unwrap();
            let topics: Vec<(String, i16)> = g
                .topics()
                .iter()
                .map(|t| (t.name().to_string(), t.partitions().iter().next().unwrap().error_code()))
                .collect();
            (g.error_code(), topics)
        })
    };
    assert_eq!(offset_fetch(&mut anon, "g", None), (group_refused, vec![]));
    assert_eq!(offset_fetch(&mut alice, "other", None), (group_refused, vec![]));
    assert_eq!(offset_fetch(&mut alice, "g", None), (0, vec![("t".to_string(), 0)]), "secret left out");
    assert_eq!(
        offset_fetch(&mut alice, "g", Some(&["secret", "t"])),
        (0, vec![("t".to_string(), 0), ("secret".to_string(), topic_refused)])
    );
    assert_eq!(offset_fetch(&mut admin, "g", None).1.len(), 2);
    // v5: the group refused at the top.
    let req = m::OffsetFetchRequest { group_id: "g".into(), topics: None, ..Default::default() };
    assert_eq!(ask!(anon, req, OffsetFetch, 5, |r| r.error_code()), group_refused);
    assert_eq!(ask!(alice, req, OffsetFetch, 5, |r| r.error_code()), 0);

    // TxnOffsetCommit: WRITE on the id, READ on the group, READ on each topic.
    let txn_commit = |c: &mut Conn, id: &str, g: &str| {
        let req = m::TxnOffsetCommitRequest {
            transactional_id: id.into(),
            group_id: g.into(),
            producer_id: 1,
            producer_epoch: 0,
            generation_id_or_member_epoch: -1,
            member_id: "".into(),
            topics: ["t", "secret"]
                .iter()
                .map(|&name| m::txn_offset_commit::TxnOffsetCommitRequestTopic {
                    name: name.into(),
                    partitions: vec![m::txn_offset_commit::TxnOffsetCommitRequestPartition {
                        partition_index: 0,
                        committed_offset: 1,
                        ..Default::default()
                    }]
                    .into(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        ask!(c, req, TxnOffsetCommit, 3, |r| r
            .topics()
            .iter()
            .map(|t| t.partitions().iter().next().unwrap().error_code())
            .collect::<Vec<_>>())
    };
    assert_eq!(txn_commit(&mut anon, "tx", "g"), [txn_refused, txn_refused]);
    assert_eq!(txn_commit(&mut alice, "tx", "other"), [group_refused, group_refused]);
    let codes = txn_commit(&mut alice, "tx", "g");
    assert_eq!(codes[1], topic_refused);
    assert!(![0, topic_refused, group_refused, txn_refused].contains(&codes[0]), "{codes:?}: no transaction");

    // AddPartitionsToTxn v3: WRITE on the id, then each topic (the rest not attempted).
    let add = |c: &mut Conn, topics: &[&str]| {
        let req = m::AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: "tx".into(),
            v3_and_below_producer_id: 1,
            v3_and_below_producer_epoch: 0,
            v3_and_below_topics: topics
                .iter()
                .map(|&name| m::add_partitions_to_txn::AddPartitionsToTxnTopic {
                    name: name.into(),
                    partitions: vec![0].into(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        ask!(c, req, AddPartitionsToTxn, 3, |r| r
            .results_by_topic_v3_and_below()
            .iter()
            .map(|t| t.results_by_partition().iter().next().unwrap().partition_error_code())
            .collect::<Vec<_>>())
    };
    assert_eq!(add(&mut anon, &["t"]), [txn_refused]);
    assert_eq!(add(&mut alice, &["t", "secret"]), [code(ErrorCode::OperationNotAttempted), topic_refused]);
    assert!(![0, topic_refused, txn_refused].contains(&add(&mut alice, &["t"])[0]), "allowed, no producer");

    // FindCoordinator v4: DESCRIBE on each key.
    let find = |c: &mut Conn, key_type: i8, keys: &[&str]| {
        let req = m::FindCoordinatorRequest {
            key_type,
            coordinator_keys: keys.iter().map(|&k| k.into()).collect(),
            ..Default::default()
        };
        ask!(c, req, FindCoordinator, 4, |r| r
            .coordinators()
            .iter()
            .map(|k| k.error_code())
            .collect::<Vec<_>>())
    };
    assert_eq!(find(&mut alice, 0, &["g", "other"]), [0, group_refused]);
    assert_eq!(find(&mut anon, 0, &["g"]), [group_refused]);
    assert_eq!(find(&mut alice, 1, &["tx"]), [0]);
    assert_eq!(find(&mut anon, 1, &["tx"]), [txn_refused]);

    // DescribeGroups v5: DESCRIBE on each group (refused first), its operations from the
    // bindings: READ, DELETE and the DESCRIBE they imply.
    let req = m::DescribeGroupsRequest {
        groups: vec!["g".into(), "other".into()].into(),
        include_authorized_operations: true,
        ..Default::default()
    };
    let described = ask!(alice, req, DescribeGroups, 5, |r| r
        .groups()
        .iter()
        .map(|g| (g.group_id().to_string(), g.error_code(), g.authorized_operations()))
        .collect::<Vec<_>>());
    assert_eq!(
        described,
        [
            ("other".to_string(), group_refused, i32::MIN),
            ("g".to_string(), 0, (1 << 3) | (1 << 6) | (1 << 8))
        ]
    );
    assert_eq!(
        ask!(admin, req, DescribeGroups, 5, |r| r.groups().iter().filter(|g| g.error_code() == 0).count()),
        2
    );

    // ListGroups: with DESCRIBE on the cluster every group, else those described.
    let list = |c: &mut Conn| {
        let mut ids = ask!(c, m::ListGroupsRequest::default(), ListGroups, 4, |r| r
            .groups()
            .iter()
            .map(|g| g.group_id().to_string())
            .collect::<Vec<_>>());
        ids.sort();
        ids
    };
    assert_eq!(list(&mut anon), Vec::<String>::new());
    assert_eq!(list(&mut alice), ["g"]);
    assert_eq!(list(&mut bob), ["g", "other"]);

    // CreateAcls and DeleteAcls: ALTER on the cluster, each entry refused.
    let create = m::CreateAclsRequest {
        creations: vec![m::create_acls::AclCreation {
            resource_type: topic,
            resource_name: "x".into(),
            resource_pattern_type: literal,
            principal: "User:carol".into(),
            host: "*".into(),
            operation: 3,
            permission_type: 3,
            ..Default::default()
        }]
        .into(),
        ..Default::default()
    };
    let created = |c: &mut Conn| {
        ask!(c, create, CreateAcls, 3, |r| r.results().iter().map(|x| x.error_code()).collect::<Vec<_>>())
    };
    assert_eq!(created(&mut anon), [cluster_refused]);
    assert_eq!(created(&mut bob), [0]);
    let delete = m::DeleteAclsRequest {
        filters: vec![m::delete_acls::DeleteAclsFilter {
            resource_type_filter: topic,
            resource_name_filter: Some("x".into()),
            pattern_type_filter: literal,
            principal_filter: None,
            host_filter: None,
            operation: 1,
            permission_type: 1,
            ..Default::default()
        }]
        .into(),
        ..Default::default()
    };
    let deleted = |c: &mut Conn| {
        ask!(c, delete, DeleteAcls, 3, |r| r
            .filter_results()
            .iter()
            .map(|x| (x.error_code(), x.matching_acls().iter().count()))
            .collect::<Vec<_>>())
    };
    assert_eq!(deleted(&mut anon), [(cluster_refused, 0)]);
    assert_eq!(deleted(&mut bob), [(0, 1)]);

    // DescribeConfigs and IncrementalAlterConfigs: per resource, on the topic or the
    // cluster (ALTER_CONFIGS implies DESCRIBE_CONFIGS).
    let describe_configs = |c: &mut Conn, resource_type: i8, name: &str| {
        let req = m::DescribeConfigsRequest {
            resources: vec![m::describe_configs::DescribeConfigsResource {
                resource_type,
                resource_name: name.into(),
                configuration_keys: None,
                ..Default::default()
            }]
            .into(),
            ..Default::default()
        };
        ask!(c, req, DescribeConfigs, 4, |r| r.results().iter().next().unwrap().error_code())
    };
    assert_eq!(describe_configs(&mut anon, 2, "t"), topic_refused);
    assert_eq!(describe_configs(&mut alice, 2, "t"), 0);
    assert_eq!(describe_configs(&mut alice, 4, ""), cluster_refused);
    assert_eq!(describe_configs(&mut bob, 4, ""), 0);
    let alter = |c: &mut Conn, resource_type: i8, name: &str| {
        let req = m::IncrementalAlterConfigsRequest {
            resources: vec![m::incremental_alter_configs::AlterConfigsResource {
                resource_type,
                resource_name: name.into(),
                configs: vec![m::incremental_alter_configs::AlterableConfig {
                    name: "retention.ms".into(),
                    config_operation: 0,
                    value: Some("1000".into()),
                    ..Default::default()
                }]
                .into(),
                ..Default::default()
            }]
            .into(),
            validate_only: true,
            ..Default::default()
        };
        ask!(c, req, IncrementalAlterConfigs, 1, |r| r.responses().iter().next().unwrap().error_code())
    };
    assert_eq!(alter(&mut anon, 2, "t"), topic_refused);
    assert_eq!(alter(&mut alice, 2, "t"), 0);
    assert_eq!(alter(&mut alice, 4, ""), cluster_refused);

    // CreatePartitions (ALTER) and DeleteRecords (DELETE) on each topic.
    let grow = |c: &mut Conn| {
        let req = m::CreatePartitionsRequest {
            topics: vec![m::create_partitions::CreatePartitionsTopic {
                name: "t".into(),
                count: 2,
                assignments: None,
                ..Default::default()
            }]
            .into(),
            validate_only: true,
            ..Default::default()
        };
        ask!(c, req, CreatePartitions, 3, |r| r.results().iter().next().unwrap().error_code())
    };
    assert_eq!(grow(&mut anon), topic_refused);
    assert_eq!(grow(&mut alice), 0);
    let delete_records = |c: &mut Conn| {
        let req = m::DeleteRecordsRequest {
            topics: vec![m::delete_records::DeleteRecordsTopic {
                name: "t".into(),
                partitions: vec![m::delete_records::DeleteRecordsPartition {
                    partition_index: 0,
                    offset: 0,
                    ..Default::default()
                }]
                .into(),
                ..Default::default()
            }]
            .into(),
            ..Default::default()
        };
        ask!(c, req, DeleteRecords, 2, |r| r
            .topics()
            .iter()
            .next()
            .unwrap()
            .partitions()
            .iter()
            .next()
            .unwrap()
            .error_code())
    };
    assert_eq!(delete_records(&mut anon), topic_refused);
    assert_eq!(delete_records(&mut alice), 0);

    // DescribeProducers (READ) and OffsetForLeaderEpoch (DESCRIBE) on each topic.
    let producers = |c: &mut Conn| {
        let req = m::DescribeProducersRequest {
            topics: vec![m::describe_producers::TopicRequest {
                name: "t".into(),
                partition_indexes: vec![0].into(),
                ..Default::default()
            }]
            .into(),
            ..Default::default()
        };
        ask!(c, req, DescribeProducers, 0, |r| r
            .topics()
            .iter()
            .next()
            .unwrap()
            .partitions()
            .iter()
            .next()
            .unwrap()
            .error_code())
    };
    assert_eq!(producers(&mut anon), topic_refused);
    assert_eq!(producers(&mut alice), 0);
    let epochs = |c: &mut Conn| {
        let req = m::OffsetForLeaderEpochRequest {
            replica_id: -1,
            topics: vec![m::offset_for_leader_epoch::OffsetForLeaderTopic {
                topic: "t".into(),
                partitions: vec![m::offset_for_leader_epoch::OffsetForLeaderPartition {
                    partition: 0,
                    current_leader_epoch: -1,
                    leader_epoch: 0,
                    ..Default::default()
                }]
                .into(),
                ..Default::default()
            }]
            .into(),
            ..Default::default()
        };
        ask!(c, req, OffsetForLeaderEpoch, 4, |r| r
            .topics()
            .iter()
            .next()
            .unwrap()
            .partitions()
            .iter()
            .next()
            .unwrap()
            .error_code())
    };
    assert_eq!(epochs(&mut anon), topic_refused);
    assert_eq!(epochs(&mut alice), 0);

    // ElectLeaders and DescribeLogDirs: ALTER and DESCRIBE on the cluster.
    let elect = m::ElectLeadersRequest {
        election_type: 0,
        topic_partitions: Some(
            vec![m::elect_leaders::TopicPartitions {
                topic: "t".into(),
                partitions: vec![0].into(),
                ..Default::default()
            }]
            .into(),
        ),
        ..Default::default()
    };
    let elected = |c: &mut Conn| {
        ask!(c, elect, ElectLeaders, 2, |r| (
            r.error_code(),
            r.replica_election_results()
                .iter()
                .next()
                .unwrap()
                .partition_result()
                .iter()
                .next()
                .unwrap()
                .error_code()
        ))
    };
    assert_eq!(elected(&mut anon), (cluster_refused, cluster_refused));
    assert_eq!(elected(&mut bob), (0, code(ErrorCode::ElectionNotNeeded)));
    let log_dirs = |c: &mut Conn| {
        ask!(c, m::DescribeLogDirsRequest { topics: None, ..Default::default() }, DescribeLogDirs, 4, |r| (
            r.error_code(),
            r.results().iter().count()
        ))
    };
    assert_eq!(log_dirs(&mut anon), (cluster_refused, 0));
    assert_eq!(log_dirs(&mut bob), (0, 1));

    // DescribeCluster and Metadata v10: the operations the bindings allow, 0 without
    // DESCRIBE on the cluster; the topic's from its bindings.
    let cluster_ops = |c: &mut Conn| {
        let req = m::DescribeClusterRequest {
            include_cluster_authorized_operations: true,
            endpoint_type: 1,
            ..Default::default()
        };
        ask!(c, req, DescribeCluster, 1, |r| r.cluster_authorized_operations())
    };
    let bob_ops = (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11);
    assert_eq!(cluster_ops(&mut alice), 0);
    assert_eq!(cluster_ops(&mut bob), bob_ops);
    let metadata_ops = |c: &mut Conn| {
        let req = m::MetadataRequest {
            topics: Some(
                vec![m::metadata::MetadataRequestTopic { name: Some("t".into()), ..Default::default() }]
                    .into(),
            ),
            include_cluster_authorized_operations: true,
            include_topic_authorized_operations: true,
            ..Default::default()
        };
        ask!(c, req, Metadata, 10, |r| (
            r.cluster_authorized_operations(),
            r.topics().iter().next().unwrap().topic_authorized_operations()
        ))
    };
    // READ, WRITE, DELETE, ALTER, DESCRIBE, ALTER_CONFIGS and the DESCRIBE_CONFIGS it implies.
    let alice_ops = (1 << 3) | (1 << 4) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11);
    assert_eq!(metadata_ops(&mut alice), (0, alice_ops));
    assert_eq!(metadata_ops(&mut bob), (bob_ops, i32::MIN), "t refused to bob");

    // Idempotent InitProducerId: IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
    let init = |c: &mut Conn| {
        let req = m::InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        };
        ask!(c, req, InitProducerId, 4, |r| r.error_code())
    };
    assert_eq!(init(&mut anon), cluster_refused);
    assert_eq!(init(&mut alice), 0);

    // DescribeTransactions: DESCRIBE on each id.
    let describe_txn = |c: &mut Conn| {
        let req = m::DescribeTransactionsRequest {
            transactional_ids: vec!["tx".into()].into(),
            ..Default::default()
        };
        ask!(c, req, DescribeTransactions, 0, |r| r.transaction_states().iter().next().unwrap().error_code())
    };
    assert_eq!(describe_txn(&mut anon), txn_refused);
    assert_ne!(describe_txn(&mut alice), txn_refused);

    // DeleteGroups: DELETE on each group.
    let delete_groups = |c: &mut Conn, g: &str| {
        let req = m::DeleteGroupsRequest { groups_names: vec![g.into()].into(), ..Default::default() };
        ask!(c, req, DeleteGroups, 2, |r| r.results().iter().next().unwrap().error_code())
    };
    assert_eq!(delete_groups(&mut alice, "other"), group_refused);
    assert_eq!(delete_groups(&mut alice, "g"), 0);
    assert_eq!(list(&mut bob), ["other"]);
}
