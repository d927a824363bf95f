//! `kwire::broker`'s answers held against a real Apache Kafka broker's (tests/kafka/broker.sh,
//! the release of tests/kafka/VERSION), field by field.
//!
//! One script of raw requests (kwire's typed encoders, at the versions a modern client sends
//! and some older ones) runs against each broker in turn: the real one, then a
//! `kwire::broker` started in this process. Every answer is decoded with `kwire::reflect`
//! into a value tree, written as JSON, normalised (below), and the two trees are compared
//! field by field. A difference fails the test unless [`ALLOWED`] lists it; each entry there
//! is one item of `docs/serve.md`'s section "Differences from Apache Kafka" (the test checks
//! that both name the same items, and that every entry is still seen).
//!
//! **Normalised** ([`normalise`]), because the two brokers must differ there:
//! - node ids, hosts, ports, the cluster id, topic ids, producer ids, member ids and fetch
//!   session ids: each distinct value is renamed to its order of first appearance in the
//!   broker's whole run (`node#1`, `pid#2`), so that "the same id as before" still compares
//!   and the values themselves do not; sentinels (-1, 0, empty, the zero UUID) are kept;
//! - throttle times: set to 0;
//! - record batches: compared by their header fields and records' bytes, the producer ids
//!   renamed as above (the CRC, which covers them, compares as valid or not);
//! - error messages: a message given or not (and empty or not) compares, its free-form
//!   text does not;
//! - the order of entries: by their name or index (Kafka answers some in the order of its
//!   hash maps); entries with names (topics, configs) compare by name.
//!
//! Record timestamps are the script's own, so they compare as they are.
//!
//! The script: topics created (duplicate, bad partition count, bad replication factor,
//! validate-only, an older version), Metadata (known, unknown with auto-creation off, a bad
//! name, old versions), Produce (bad partition, unknown topic, old versions), Fetch and
//! ListOffsets (out of range, unknown partition, earliest, latest, by timestamp, max
//! timestamp), an idempotent producer's duplicates and sequence gaps, a classic group
//! (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetCommit, OffsetFetch, LeaveGroup
//! with wrong generations and unknown members), transactions (InitProducerId, fencing,
//! AddPartitionsToTxn, EndTxn in bad states), DescribeConfigs and DeleteTopics; then
//! Fetch by topic id (v13), a fetch session (new, incremental, wrong epoch, unknown id,
//! closed), OffsetForLeaderEpoch (current, future and old epochs), a KIP-848 member
//! (ConsumerGroupHeartbeat: join, fenced epoch, unknown member, leave), DescribeGroups,
//! CreatePartitions, DeleteRecords and IncrementalAlterConfigs.
//!
//! The real broker is this process's one (started with `tests/kafka/broker.sh start`);
//! names are unique per run.
#![cfg(feature = "cli")]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kwire::broker::{Broker, Config};
use kwire::encode::AnyBody;
use kwire::messages::ResponseBodyView;
use kwire::messages::add_partitions_to_txn::{AddPartitionsToTxnRequest, AddPartitionsToTxnTopic};
use kwire::messages::consumer_group_heartbeat::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatRequestTopicPartitions,
};
use kwire::messages::create_partitions::{
    CreatePartitionsAssignment, CreatePartitionsRequest, CreatePartitionsTopic,
};
use kwire::messages::create_topics::{CreatableTopic, CreateTopicsRequest};
use kwire::messages::delete_records::{DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic};
use kwire::messages::delete_topics::DeleteTopicsRequest;
use kwire::messages::describe_configs::{DescribeConfigsRequest, DescribeConfigsResource};
use kwire::messages::describe_groups::DescribeGroupsRequest;
use kwire::messages::end_txn::EndTxnRequest;
use kwire::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
use kwire::messages::find_coordinator::FindCoordinatorRequest;
use kwire::messages::heartbeat::HeartbeatRequest;
use kwire::messages::incremental_alter_configs::{
    AlterConfigsResource, AlterableConfig, IncrementalAlterConfigsRequest,
};
use kwire::messages::init_producer_id::InitProducerIdRequest;
use kwire::messages::join_group::{JoinGroupRequest, JoinGroupRequestProtocol};
use kwire::messages::leave_group::{LeaveGroupRequest, MemberIdentity};
use kwire::messages::list_offsets::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
use kwire::messages::metadata::{MetadataRequest, MetadataRequestTopic};
use kwire::messages::offset_commit::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kwire::messages::offset_fetch::{
    OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kwire::messages::offset_for_leader_epoch::{
    OffsetForLeaderEpochRequest, OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kwire::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
use kwire::messages::sync_group::{SyncGroupRequest, SyncGroupRequestAssignment};
use kwire::records::{BatchBuilder, NewRecord};
use kwire::reflect::json::to_json;
use kwire::reflect::{Encoding, StructValue, response_schema};
use kwire::{ApiKey, Uuid};
use serde_json::Value;

use common::proxy as harness;
use common::raw::Conn;

/// A difference `kwire::broker` keeps on purpose: in the answers of the steps whose label
/// contains `step`, at the JSON paths ending with one of `paths`. `id` names its item in
/// docs/serve.md.
struct Allowed {
    id: &'static str,
    step: &'static str,
    paths: &'static [&'static str],
}

/// The differences docs/serve.md lists ("Differences from Apache Kafka"), one entry each.
const ALLOWED: &[Allowed] = &[
    // Topic configs kwire has no behaviour for (tiered storage, replication throttles,
    // share groups' dead letter queues, decompression limits) are not described.
    Allowed {
        id: "topic configs",
        step: "create",
        paths: &[
            "configs[errors.deadletterqueue.group.enable]",
            "configs[follower.replication.throttled.replicas]",
            "configs[leader.replication.throttled.replicas]",
            "configs[local.retention.bytes]",
            "configs[local.retention.ms]",
            "configs[max.decompressed.message.bytes]",
            "configs[remote.copy.lag.bytes]",
            "configs[remote.copy.lag.ms]",
            "configs[remote.log.copy.disable]",
            "configs[remote.log.delete.on.disable]",
            "configs[remote.storage.enable]",
        ],
    },
    // kwire has no broker configuration: every default is DEFAULT_CONFIG (5), where the
    // real broker's come from its server.properties (4) or, for min.insync.replicas, the
    // cluster-wide default a KRaft cluster stores (3).
    Allowed {
        id: "config sources",
        step: "",
        paths: &["configs[flush.messages].configSource", "configs[min.insync.replicas].configSource"],
    },
    // Kafka assigns a KIP-848 group's partitions apart from the heartbeat that changed the
    // group; kwire assigns in the heartbeat (the first member's epoch 1 against Kafka's 2,
    // a joining member's partitions at once).
    Allowed {
        id: "KIP-848 assignment timing",
        step: "consumer heartbeat",
        paths: &[".memberEpoch", ".assignment", ".assignment.topicPartitions.length"],
    },
];

/// One answer: the step's label, the API and version, and the body as normalised JSON.
struct Answer {
    label: String,
    json: Value,
}

/// One broker's run of the script.
struct Run {
    conn: Conn,
    answers: Vec<Answer>,
    /// The renames of ids (kind, value) to their order of first appearance.
    ids: BTreeMap<(String, String), usize>,
}

impl Run {
    fn new(addr: SocketAddr) -> Run {
        Run { conn: Conn::open_as(addr, "kwire-diff"), answers: Vec::new(), ids: BTreeMap::new() }
    }

    /// Sends `body` at `version`, keeps its answer under `label` and returns the frame.
    fn call(&mut self, label: &str, body: &impl AnyBody, version: i16) -> Vec<u8> {
        let frame = self.conn.call(body, version);
        self.keep(label, body.api_key(), version, &frame);
        frame
    }

    /// Like [`Run::call`], but sends again (keeping only the last answer) while the answer
    /// says to retry (a coordinator loading or being elected, a transaction completing):
    /// the real broker creates its internal topics on first use.
    fn call_settled(&mut self, label: &str, body: &impl AnyBody, version: i16) -> Vec<u8> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let frame = self.conn.call(body, version);
            let errors = kwire::reflect::inspect::errors(&frame, body.api_key() as i16, version);
            let retry = errors.iter().any(|e| matches!(e, 14..=16 | 51));
            if !retry || Instant::now() > deadline {
                self.keep(label, body.api_key(), version, &frame);
                return frame;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn keep(&mut self, label: &str, key: ApiKey, version: i16, frame: &[u8]) {
        let schema = response_schema(key);
        let header_version = key.response_header_version(version);
        let (_, at) = kwire::frame::ResponseHeaderView::parse(frame, header_version).unwrap();
        let value = StructValue::decode_body(schema, version, &frame[at..])
            .unwrap_or_else(|e| panic!("{label}: the answer does not decode: {e:?}"));
        let mut json = to_json(&value, Encoding::body(schema, version));
        normalise(&mut json, "", &mut self.ids);
        self.answers.push(Answer { label: format!("{label} ({} v{version})", key.name()), json });
    }
}

/// The kind of id a field holds, for the renames of [`normalise`].
fn id_kind(key: &str) -> Option<&'static str> {
    Some(match key {
        "nodeId" | "leaderId" | "brokerId" | "controllerId" | "replicaNodes" | "isrNodes"
        | "offlineReplicas" | "coordinatorId" => "node",
        "host" => "host",
        "port" => "port",
        "clusterId" => "cluster",
        "topicId" => "topic",
        "producerId" => "pid",
        "memberId" | "leader" => "member",
        "sessionId" => "session",
        _ => return None,
    })
}

/// A sentinel that is kept: -1 (0 too for session ids), "", null, the zero UUID.
fn sentinel(kind: &str, v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Number(n) => n.as_i64() == Some(-1) || (kind == "session" && n.as_i64() == Some(0)),
        Value::String(s) => s.is_empty() || s == "AAAAAAAAAAAAAAAAAAAAAA",
        _ => false,
    }
}

/// Normalises a body's JSON in place (the module doc says what and why).
fn normalise(v: &mut Value, key: &str, ids: &mut BTreeMap<(String, String), usize>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                normalise(child, k, ids);
            }
        }
        Value::Array(items) if id_kind(key).is_some() => {
            for item in items {
                normalise(item, key, ids);
            }
        }
        Value::Array(items) => {
            items.sort_by_key(entry_key);
            for item in items.iter_mut() {
                normalise(item, "", ids);
            }
        }
        Value::String(base64) if key == "records" => {
            *v = batches(base64);
            normalise(v, "", ids);
        }
        _ => {
            if let Some(kind) = id_kind(key) {
                if !sentinel(kind, v) {
                    let next = ids.keys().filter(|(k, _)| k == kind).count() + 1;
                    let n = *ids.entry((kind.to_string(), v.to_string())).or_insert(next);
                    *v = Value::String(format!("{kind}#{n}"));
                }
            } else if key == "throttleTimeMs" {
                *v = Value::from(0);
            } else if key == "errorMessage" && v.as_str().is_some_and(|m| !m.is_empty()) {
                *v = Value::String("<message>".into());
            }
        }
    }
}

/// A Fetch answer's record batches as JSON: each batch's header fields and its records'
/// bytes. The producer ids are renamed by [`normalise`] like any other; the CRC, which
/// covers them, compares as valid or not.
fn batches(base64: &str) -> Value {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(base64).expect("records in base64");
    let batches = kwire::records::RecordBatches::new(&bytes)
        .map(|b| {
            let b = b.expect("a record batch");
            serde_json::json!({
                "baseOffset": b.base_offset(),
                "batchLength": b.batch_length(),
                "partitionLeaderEpoch": b.partition_leader_epoch(),
                "magic": b.magic(),
                "crcValid": b.verify_crc().is_ok(),
                "attributes": b.attributes().0,
                "lastOffsetDelta": b.last_offset_delta(),
                "baseTimestamp": b.base_timestamp(),
                "maxTimestamp": b.max_timestamp(),
                "producerId": b.producer_id(),
                "producerEpoch": b.producer_epoch(),
                "baseSequence": b.base_sequence(),
                "recordsCount": b.records_count(),
                "payload": base64::engine::general_purpose::STANDARD.encode(b.payload()),
            })
        })
        .collect();
    Value::Array(batches)
}

/// What orders the entries of an array: a struct's name or index field (Kafka answers in
/// the order of its hash maps), else nothing (the order is kept).
fn entry_key(v: &Value) -> (String, i64) {
    let Value::Object(m) = v else { return (String::new(), 0) };
    let name = ["name", "topic", "resourceName", "groupId", "key"]
        .iter()
        .find_map(|k| m.get(*k).and_then(Value::as_str))
        .unwrap_or_default()
        .to_string();
    let index =
        ["index", "partitionIndex", "partition"].iter().find_map(|k| m.get(*k).and_then(Value::as_i64));
    (name, index.unwrap_or(0))
}

/// The differences of two trees: (JSON path, real broker's value, kwire's).
fn diff(path: &str, kafka: &Value, kwire: &Value, out: &mut Vec<(String, String, String)>) {
    match (kafka, kwire) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let p = format!("{path}.{k}");
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => diff(&p, x, y, out),
                    (x, y) => out.push((p, show(x), show(y))),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if keyed(a) && keyed(b) => {
            // Entries with names (configs, topics) compare by name.
            let by_name = |list: &'_ [Value]| -> BTreeMap<String, Value> {
                list.iter().map(|v| (entry_key(v).0, v.clone())).collect()
            };
            let (a, b) = (by_name(a), by_name(b));
            let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for name in names {
                let p = format!("{path}[{name}]");
                match (a.get(name), b.get(name)) {
                    (Some(x), Some(y)) => diff(&p, x, y, out),
                    (x, y) => out.push((p, show(x.map(|_| &NAMED)), show(y.map(|_| &NAMED)))),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), x, y, out);
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            out.push((format!("{path}.length"), a.len().to_string(), b.len().to_string()));
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), x, y, out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push((path.to_string(), show(Some(a)), show(Some(b)))),
    }
}

/// What a named entry present on one side only shows as.
static NAMED: Value = Value::Bool(true);

/// Whether every entry of a non-empty array has a name of its own.
fn keyed(list: &[Value]) -> bool {
    let names: BTreeSet<String> = list.iter().map(|v| entry_key(v).0).collect();
    !list.is_empty() && names.len() == list.len() && !names.contains("")
}

fn show(v: Option<&Value>) -> String {
    match v {
        None => "(absent)".into(),
        Some(v) => {
            let s = v.to_string();
            if s.len() > 160 { format!("{}...", &s[..160]) } else { s }
        }
    }
}

/// A record batch of `values` (keys `k0`, `k1`, ...) with fixed timestamps, optionally of a
/// producer (id, epoch, first sequence) and transactional.
fn batch(values: &[&str], producer: Option<(i64, i16, i32)>, transactional: bool) -> Vec<u8> {
    let keys: Vec<String> = (0..values.len()).map(|i| format!("k{i}")).collect();
    let new: Vec<NewRecord<'_>> = values
        .iter()
        .zip(&keys)
        .enumerate()
        .map(|(i, (v, k))| NewRecord {
            key: Some(k.as_bytes()),
            value: Some(v.as_bytes()),
            headers: &[],
            timestamp: Some(1_700_000_000_000 + i as i64),
        })
        .collect();
    let mut b = BatchBuilder::new(0, 1_700_000_000_000, &new);
    if let Some((id, epoch, seq)) = producer {
        b.producer_id = id;
        b.producer_epoch = epoch;
        b.base_sequence = seq;
    }
    b.transactional = transactional;
    let mut out = Vec::new();
    b.encode_to_vec(&mut out).unwrap();
    out
}

/// The names of one run: unique per run on the shared real broker.
struct Names {
    /// What every name starts with (left out of the paths of differences).
    prefix: String,
    topic: String,
    other: String,
    deleted: String,
    unknown: String,
    group: String,
    empty_group: String,
    txn: String,
}

impl Names {
    fn new() -> Names {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().subsec_nanos();
        let p = format!("diff-{}-{nanos}", std::process::id());
        Names {
            prefix: format!("{p}-"),
            topic: format!("{p}-t"),
            other: format!("{p}-old"),
            deleted: format!("{p}-del"),
            unknown: format!("{p}-none"),
            group: format!("{p}-g"),
            empty_group: format!("{p}-g2"),
            txn: format!("{p}-x"),
        }
    }
}

fn create(r: &mut Run, label: &str, topics: &[(&str, i32, i16)], validate_only: bool, version: i16) {
    let topics: Vec<CreatableTopic<'_>> = topics
        .iter()
        .map(|&(name, num_partitions, replication_factor)| CreatableTopic {
            name: name.into(),
            num_partitions,
            replication_factor,
            ..Default::default()
        })
        .collect();
    let req = CreateTopicsRequest {
        topics: topics.into(),
        timeout_ms: 30_000,
        validate_only,
        ..Default::default()
    };
    r.call(label, &req, version);
}

/// Waits (up to 30 s, answers not kept) until Metadata shows `topics` all present with
/// leaders, or all gone: the real broker's metadata cache follows its controller's a moment
/// after CreateTopics and DeleteTopics answer.
fn settle(r: &mut Run, topics: &[&str], present: bool) {
    let list: Vec<MetadataRequestTopic<'_>> = topics
        .iter()
        .map(|t| MetadataRequestTopic { name: Some((*t).into()), ..Default::default() })
        .collect();
    let req =
        MetadataRequest { topics: Some(list.into()), allow_auto_topic_creation: false, ..Default::default() };
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let frame = r.conn.call(&req, 12);
        let ResponseBodyView::Metadata(m) =
            kwire::dispatch::parse_response(&frame, ApiKey::Metadata, 12).unwrap().body
        else {
            unreachable!()
        };
        let done = m.topics().iter().all(|t| {
            if present {
                t.error_code() == 0
                    && t.partitions().iter().all(|p| p.error_code() == 0 && p.leader_id() >= 0)
            } else {
                t.error_code() == 3
            }
        });
        if done {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("topics {topics:?} did not settle (present: {present})");
}

fn metadata(r: &mut Run, label: &str, topics: &[&str], auto: bool, version: i16) {
    let topics: Vec<MetadataRequestTopic<'_>> = topics
        .iter()
        .map(|t| MetadataRequestTopic { name: Some((*t).into()), ..Default::default() })
        .collect();
    let req = MetadataRequest {
        topics: Some(topics.into()),
        allow_auto_topic_creation: auto,
        ..Default::default()
    };
    r.call(label, &req, version);
}

fn produce(
    r: &mut Run,
    label: &str,
    topic: &str,
    parts: &[(i32, &[u8])],
    txn: Option<&str>,
    version: i16,
) -> Vec<u8> {
    let data: Vec<PartitionProduceData<'_>> = parts
        .iter()
        .map(|(i, b)| PartitionProduceData { index: *i, records: Some((*b).into()), ..Default::default() })
        .collect();
    let topics = [TopicProduceData { name: topic.into(), partition_data: data.into(), ..Default::default() }];
    let req = ProduceRequest {
        transactional_id: txn.map(Into::into),
        acks: -1,
        timeout_ms: 10_000,
        topic_data: (&topics).into(),
        ..Default::default()
    };
    r.call(label, &req, version)
}

fn fetch(r: &mut Run, label: &str, topic: &str, parts: &[(i32, i64)], version: i16) {
    let partitions: Vec<FetchPartition<'_>> = parts
        .iter()
        .map(|&(partition, fetch_offset)| FetchPartition {
            partition,
            fetch_offset,
            partition_max_bytes: 1 << 20,
            ..Default::default()
        })
        .collect();
    let topics = [FetchTopic { topic: topic.into(), partitions: partitions.into(), ..Default::default() }];
    let req = FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: (&topics).into(),
        ..Default::default()
    };
    r.call(label, &req, version);
}

fn list_offsets(r: &mut Run, label: &str, topic: &str, parts: &[(i32, i64)], version: i16) {
    let partitions: Vec<ListOffsetsPartition<'_>> = parts
        .iter()
        .map(|&(partition_index, timestamp)| ListOffsetsPartition {
            partition_index,
            timestamp,
            current_leader_epoch: -1,
            ..Default::default()
        })
        .collect();
    let topics =
        [ListOffsetsTopic { name: topic.into(), partitions: partitions.into(), ..Default::default() }];
    let req = ListOffsetsRequest { replica_id: -1, topics: (&topics).into(), ..Default::default() };
    r.call(label, &req, version);
}

/// InitProducerId: (producer id, epoch) of the answer.
fn init_producer(
    r: &mut Run,
    label: &str,
    txn: Option<&str>,
    current: (i64, i16),
    version: i16,
) -> (i64, i16) {
    let req = InitProducerIdRequest {
        transactional_id: txn.map(Into::into),
        transaction_timeout_ms: 60_000,
        producer_id: current.0,
        producer_epoch: current.1,
        ..Default::default()
    };
    let frame = r.call_settled(label, &req, version);
    let ResponseBodyView::InitProducerId(a) =
        kwire::dispatch::parse_response(&frame, ApiKey::InitProducerId, version).unwrap().body
    else {
        unreachable!()
    };
    (a.producer_id(), a.producer_epoch())
}

fn find_coordinator(r: &mut Run, label: &str, key: &str, key_type: i8, version: i16) {
    let req = if version >= 4 {
        FindCoordinatorRequest { key_type, coordinator_keys: vec![key.into()].into(), ..Default::default() }
    } else {
        FindCoordinatorRequest { key: key.into(), key_type, ..Default::default() }
    };
    r.call_settled(label, &req, version);
}

/// JoinGroup v9 of one "range" protocol: (member id, generation).
fn join(r: &mut Run, label: &str, group: &str, member: &str) -> (String, i32) {
    let protocols =
        [JoinGroupRequestProtocol { name: "range".into(), metadata: b"meta".into(), ..Default::default() }];
    let req = JoinGroupRequest {
        group_id: group.into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 30_000,
        member_id: member.into(),
        protocol_type: "consumer".into(),
        protocols: (&protocols).into(),
        ..Default::default()
    };
    let frame = r.call_settled(label, &req, 9);
    let ResponseBodyView::JoinGroup(a) =
        kwire::dispatch::parse_response(&frame, ApiKey::JoinGroup, 9).unwrap().body
    else {
        unreachable!()
    };
    (a.member_id().to_string(), a.generation_id())
}

fn sync(r: &mut Run, label: &str, group: &str, member: &str, generation: i32) {
    let assignments = [SyncGroupRequestAssignment {
        member_id: member.into(),
        assignment: b"plan".into(),
        ..Default::default()
    }];
    let req = SyncGroupRequest {
        group_id: group.into(),
        generation_id: generation,
        member_id: member.into(),
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments: (&assignments).into(),
        ..Default::default()
    };
    r.call(label, &req, 5);
}

fn heartbeat(r: &mut Run, label: &str, group: &str, member: &str, generation: i32) {
    let req = HeartbeatRequest {
        group_id: group.into(),
        generation_id: generation,
        member_id: member.into(),
        ..Default::default()
    };
    r.call(label, &req, 4);
}

fn commit(r: &mut Run, label: &str, group: &str, member: &str, generation: i32, topic: &str, version: i16) {
    let partitions = [
        OffsetCommitRequestPartition { partition_index: 0, committed_offset: 2, ..Default::default() },
        OffsetCommitRequestPartition { partition_index: 1, committed_offset: 1, ..Default::default() },
    ];
    let topics = [OffsetCommitRequestTopic {
        name: topic.into(),
        partitions: (&partitions).into(),
        ..Default::default()
    }];
    let req = OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: generation,
        member_id: member.into(),
        retention_time_ms: -1,
        topics: (&topics).into(),
        ..Default::default()
    };
    r.call(label, &req, version);
}

fn offset_fetch(r: &mut Run, label: &str, group: &str, topic: &str, version: i16) {
    let req = if version >= 8 {
        let topics = vec![OffsetFetchRequestTopics {
            name: topic.into(),
            partition_indexes: vec![0, 1, 2].into(),
            ..Default::default()
        }];
        let groups = vec![OffsetFetchRequestGroup {
            group_id: group.into(),
            member_id: None,
            member_epoch: -1,
            topics: Some(topics.into()),
            ..Default::default()
        }];
        OffsetFetchRequest { groups: groups.into(), ..Default::default() }
    } else {
        let topics = vec![OffsetFetchRequestTopic {
            name: topic.into(),
            partition_indexes: vec![0, 1, 2].into(),
            ..Default::default()
        }];
        OffsetFetchRequest { group_id: group.into(), topics: Some(topics.into()), ..Default::default() }
    };
    r.call(label, &req, version);
}

fn add_partitions(r: &mut Run, label: &str, txn: &str, p: (i64, i16), topic: &str, partitions: &[i32]) {
    let topics = [AddPartitionsToTxnTopic {
        name: topic.into(),
        partitions: partitions.to_vec().into(),
        ..Default::default()
    }];
    let req = AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: txn.into(),
        v3_and_below_producer_id: p.0,
        v3_and_below_producer_epoch: p.1,
        v3_and_below_topics: (&topics).into(),
        ..Default::default()
    };
    r.call_settled(label, &req, 3);
}

fn end_txn(r: &mut Run, label: &str, txn: &str, p: (i64, i16), committed: bool) {
    let req = EndTxnRequest {
        transactional_id: txn.into(),
        producer_id: p.0,
        producer_epoch: p.1,
        committed,
        ..Default::default()
    };
    r.call_settled(label, &req, 3);
}

/// The script, the same for both brokers.
fn script(r: &mut Run, n: &Names) {
    let (t, other, deleted, unknown) =
        (n.topic.as_str(), n.other.as_str(), n.deleted.as_str(), n.unknown.as_str());

    // Topics.
    create(r, "create", &[(t, 3, 1), (deleted, 1, 1)], false, 7);
    create(r, "create duplicate", &[(t, 3, 1)], false, 7);
    create(r, "create bad partitions", &[(unknown, 0, 1)], false, 7);
    create(r, "create negative partitions", &[(unknown, -2, 1)], false, 7);
    create(r, "create bad replication", &[(unknown, 1, 3)], false, 7);
    create(r, "create validate only", &[(unknown, 2, 1)], true, 7);
    create(r, "create invalid name", &[("bad name!", 1, 1)], false, 7);
    create(r, "create old version", &[(other, 2, 1)], false, 4);
    settle(r, &[t, other, deleted], true);

    // Metadata.
    metadata(r, "metadata", &[t], false, 12);
    metadata(r, "metadata unknown no auto-create", &[unknown], false, 12);
    metadata(r, "metadata invalid name", &["bad name!"], false, 12);
    metadata(r, "metadata v4", &[t, unknown], false, 4);
    metadata(r, "metadata v1", &[other], true, 1);

    // Produce.
    let b3 = batch(&["a", "b", "c"], None, false);
    let b1 = batch(&["d"], None, false);
    produce(r, "produce", t, &[(0, &b3), (1, &b1)], None, 11);
    produce(r, "produce bad partition", t, &[(7, &b1)], None, 11);
    produce(r, "produce unknown topic", unknown, &[(0, &b1)], None, 11);
    produce(r, "produce v9", t, &[(2, &b1)], None, 9);
    produce(r, "produce v3", other, &[(0, &b1)], None, 3);

    // Fetch and ListOffsets.
    fetch(r, "fetch", t, &[(0, 0), (1, 0)], 12);
    fetch(r, "fetch middle", t, &[(0, 1)], 12);
    fetch(r, "fetch out of range", t, &[(0, 100)], 12);
    fetch(r, "fetch unknown partition", t, &[(9, 0)], 12);
    fetch(r, "fetch unknown topic", unknown, &[(0, 0)], 12);
    fetch(r, "fetch v4", t, &[(0, 0)], 4);
    list_offsets(r, "list offsets latest earliest", t, &[(0, -1), (1, -2)], 9);
    list_offsets(r, "list offsets by time", t, &[(0, 1_700_000_000_001), (1, 1_800_000_000_000)], 9);
    list_offsets(r, "list offsets max timestamp", t, &[(0, -3)], 9);
    list_offsets(r, "list offsets unknown partition", t, &[(9, -1)], 9);
    list_offsets(r, "list offsets unknown topic", unknown, &[(0, -1)], 9);
    list_offsets(r, "list offsets v1", t, &[(0, -1)], 1);

    // An idempotent producer.
    let (pid, epoch) = init_producer(r, "idempotent init", None, (-1, -1), 5);
    let s0 = batch(&["i0", "i1"], Some((pid, epoch, 0)), false);
    produce(r, "idempotent produce", t, &[(2, &s0)], None, 11);
    produce(r, "idempotent duplicate", t, &[(2, &s0)], None, 11);
    let gap = batch(&["i5"], Some((pid, epoch, 5)), false);
    produce(r, "idempotent sequence gap", t, &[(2, &gap)], None, 11);
    let next = batch(&["i2"], Some((pid, epoch, 2)), false);
    produce(r, "idempotent next", t, &[(2, &next)], None, 11);
    let new_epoch = batch(&["e1"], Some((pid, epoch + 1, 3)), false);
    produce(r, "idempotent new epoch not at 0", t, &[(2, &new_epoch)], None, 11);
    let stranger = batch(&["s"], Some((pid + 1000, 0, 7)), false);
    produce(r, "idempotent unknown producer", t, &[(2, &stranger)], None, 11);

    // A classic group.
    let g = n.group.as_str();
    find_coordinator(r, "find group coordinator", g, 0, 6);
    find_coordinator(r, "find group coordinator v3", g, 0, 3);
    let (member, _) = join(r, "join new member", g, "");
    let (member, generation) = join(r, "join", g, &member);
    sync(r, "sync", g, &member, generation);
    sync(r, "sync wrong generation", g, &member, generation + 5);
    sync(r, "sync unknown member", g, "nobody", generation);
    heartbeat(r, "heartbeat", g, &member, generation);
    heartbeat(r, "heartbeat wrong generation", g, &member, generation + 5);
    heartbeat(r, "heartbeat unknown member", g, "nobody", generation);
    heartbeat(r, "heartbeat unknown group", &n.empty_group, "nobody", 1);
    commit(r, "commit", g, &member, generation, t, 9);
    commit(r, "commit wrong generation", g, &member, generation + 5, t, 9);
    commit(r, "commit unknown member", g, "nobody", generation, t, 9);
    commit(r, "commit unknown topic", g, &member, generation, unknown, 9);
    commit(r, "commit empty group v2", &n.empty_group, "", -1, t, 2);
    offset_fetch(r, "offset fetch", g, t, 9);
    offset_fetch(r, "offset fetch v1", &n.empty_group, t, 1);
    offset_fetch(r, "offset fetch unknown group", unknown, t, 9);
    let members = [MemberIdentity { member_id: member.as_str().into(), ..Default::default() }];
    let leave = LeaveGroupRequest { group_id: g.into(), members: (&members).into(), ..Default::default() };
    r.call("leave", &leave, 5);
    r.call("leave again", &leave, 5);
    heartbeat(r, "heartbeat after leave", g, &member, generation);

    // Transactions (transaction version 1: AddPartitionsToTxn v3 and EndTxn v3).
    let x = n.txn.as_str();
    find_coordinator(r, "find transaction coordinator", x, 1, 6);
    let p = init_producer(r, "transactional init", Some(x), (-1, -1), 4);
    add_partitions(r, "add partitions", x, p, t, &[0]);
    add_partitions(r, "add partitions unknown partition", x, p, t, &[9]);
    let tb = batch(&["t0"], Some((p.0, p.1, 0)), true);
    produce(r, "transactional produce", t, &[(0, &tb)], Some(x), 11);
    end_txn(r, "commit transaction", x, p, true);
    end_txn(r, "end transaction wrong producer", x, (p.0 + 1000, p.1), false);
    end_txn(r, "abort after commit", x, p, false);
    let p2 = init_producer(r, "transactional init again", Some(x), (-1, -1), 4);
    add_partitions(r, "add partitions fenced epoch", x, p, t, &[0]);
    let fenced = batch(&["f"], Some((p.0, p.1, 1)), true);
    produce(r, "produce fenced epoch", t, &[(0, &fenced)], Some(x), 11);
    end_txn(r, "end transaction none ongoing", x, p2, true);
    end_txn(r, "end transaction fenced epoch", x, p, false);

    // Configs and deletion.
    let keys = vec!["cleanup.policy".into(), "retention.ms".into(), "min.insync.replicas".into()];
    let resources = vec![
        DescribeConfigsResource {
            resource_type: 2,
            resource_name: t.into(),
            configuration_keys: Some(keys.into()),
            ..Default::default()
        },
        DescribeConfigsResource {
            resource_type: 2,
            resource_name: unknown.into(),
            configuration_keys: None,
            ..Default::default()
        },
    ];
    let req = DescribeConfigsRequest { resources: resources.into(), ..Default::default() };
    r.call("describe configs", &req, 4);
    let req = DeleteTopicsRequest {
        topic_names: vec![deleted.into(), unknown.into()].into(),
        timeout_ms: 30_000,
        ..Default::default()
    };
    r.call("delete topics", &req, 5);
    settle(r, &[deleted], false);
    metadata(r, "metadata after delete", &[deleted], false, 12);
    script_newer(r, n);
}

/// The topic id Metadata v12 gives `topic`.
fn topic_id(r: &mut Run, topic: &str) -> Uuid {
    let topics = [MetadataRequestTopic { name: Some(topic.into()), ..Default::default() }];
    let req = MetadataRequest { topics: Some((&topics).into()), ..Default::default() };
    let frame = r.conn.call(&req, 12);
    let ResponseBodyView::Metadata(m) =
        kwire::dispatch::parse_response(&frame, ApiKey::Metadata, 12).unwrap().body
    else {
        unreachable!()
    };
    m.topics().iter().next().expect("the topic").topic_id()
}

/// Fetch v13, which names topics by id only.
fn fetch_by_id(r: &mut Run, label: &str, topic_id: Uuid, parts: &[(i32, i64)]) {
    let partitions: Vec<FetchPartition<'_>> = parts
        .iter()
        .map(|&(partition, fetch_offset)| FetchPartition {
            partition,
            fetch_offset,
            partition_max_bytes: 1 << 20,
            ..Default::default()
        })
        .collect();
    let topics = [FetchTopic { topic_id, partitions: partitions.into(), ..Default::default() }];
    let req = FetchRequest {
        replica_id: -1,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: (&topics).into(),
        ..Default::default()
    };
    r.call(label, &req, 13);
}

/// Fetch v12 in a fetch session (`session` 0 and `epoch` 0 open one): the session id of
/// the answer.
fn fetch_session(r: &mut Run, label: &str, topic: &str, session: i32, epoch: i32, parts: &[i32]) -> i32 {
    let partitions: Vec<FetchPartition<'_>> = parts
        .iter()
        .map(|&partition| FetchPartition { partition, partition_max_bytes: 1 << 20, ..Default::default() })
        .collect();
    let topics = [FetchTopic { topic: topic.into(), partitions: partitions.into(), ..Default::default() }];
    let req = FetchRequest {
        replica_id: -1,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_id: session,
        session_epoch: epoch,
        topics: if parts.is_empty() { Default::default() } else { (&topics).into() },
        ..Default::default()
    };
    let frame = r.call(label, &req, 12);
    let ResponseBodyView::Fetch(a) = kwire::dispatch::parse_response(&frame, ApiKey::Fetch, 12).unwrap().body
    else {
        unreachable!()
    };
    a.session_id()
}

/// OffsetForLeaderEpoch v4 as a consumer: (partition, current leader epoch, epoch asked).
fn leader_epochs(r: &mut Run, label: &str, topic: &str, parts: &[(i32, i32, i32)]) {
    let partitions: Vec<OffsetForLeaderPartition<'_>> = parts
        .iter()
        .map(|&(partition, current_leader_epoch, leader_epoch)| OffsetForLeaderPartition {
            partition,
            current_leader_epoch,
            leader_epoch,
            ..Default::default()
        })
        .collect();
    let topics =
        [OffsetForLeaderTopic { topic: topic.into(), partitions: partitions.into(), ..Default::default() }];
    let req = OffsetForLeaderEpochRequest { replica_id: -1, topics: (&topics).into(), ..Default::default() };
    r.call(label, &req, 4);
}

/// ConsumerGroupHeartbeat v1 (a KIP-848 member; the client names it): the answer's member
/// epoch.
fn consumer_heartbeat(r: &mut Run, label: &str, group: &str, member: &str, epoch: i32, topic: &str) -> i32 {
    let joining = epoch == 0;
    let req = ConsumerGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: member.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: if joining { 30_000 } else { -1 },
        subscribed_topic_names: joining.then(|| vec![topic.into()].into()),
        topic_partitions: joining
            .then(|| Vec::<ConsumerGroupHeartbeatRequestTopicPartitions<'_>>::new().into()),
        ..Default::default()
    };
    let frame = r.call_settled(label, &req, 1);
    let ResponseBodyView::ConsumerGroupHeartbeat(a) =
        kwire::dispatch::parse_response(&frame, ApiKey::ConsumerGroupHeartbeat, 1).unwrap().body
    else {
        unreachable!()
    };
    a.member_epoch()
}

/// Topic ids, fetch sessions, OffsetForLeaderEpoch, a KIP-848 group, DescribeGroups, new
/// partitions, deleted records and altered configs: the newer half of [`script`].
fn script_newer(r: &mut Run, n: &Names) {
    let (t, unknown) = (n.topic.as_str(), n.unknown.as_str());

    // Topic ids (Fetch v13).
    let id = topic_id(r, t);
    // Partitions 1 and 2: partition 0 ends with a transaction's marker, which Kafka writes
    // after EndTxn answers (a Fetch soon after may end before it).
    fetch_by_id(r, "fetch by topic id", id, &[(1, 0), (2, 0)]);
    fetch_by_id(r, "fetch unknown topic id", Uuid([7; 16]), &[(0, 0)]);

    // Fetch sessions (Fetch v12).
    let session = fetch_session(r, "fetch session new", t, 0, 0, &[1, 2]);
    fetch_session(r, "fetch session incremental", t, session, 1, &[]);
    fetch_session(r, "fetch session wrong epoch", t, session, 5, &[]);
    fetch_session(r, "fetch session unknown id", t, session.wrapping_add(7919), 1, &[]);
    fetch_session(r, "fetch session closed", t, session, -1, &[]);

    // OffsetForLeaderEpoch: the current epoch, an unknown future one, an old one.
    leader_epochs(r, "leader epochs", t, &[(0, -1, 0), (1, 0, 0), (2, -1, 3)]);
    leader_epochs(r, "leader epochs future current epoch", t, &[(0, 5, 0)]);
    leader_epochs(r, "leader epochs unknown partition", t, &[(9, -1, 0)]);
    leader_epochs(r, "leader epochs unknown topic", unknown, &[(0, -1, 0)]);

    // A KIP-848 group of one member.
    let (k, member) = (format!("{}k", n.group), "AAAAAAAAAAAAAAAAAAAAAQ");
    let epoch = consumer_heartbeat(r, "consumer heartbeat join", &k, member, 0, t);
    consumer_heartbeat(r, "consumer heartbeat", &k, member, epoch, t);
    let second =
        consumer_heartbeat(r, "consumer heartbeat second member", &k, "AAAAAAAAAAAAAAAAAAAAAw", 0, t);
    consumer_heartbeat(r, "consumer heartbeat first after second", &k, member, epoch, t);
    consumer_heartbeat(r, "consumer heartbeat second again", &k, "AAAAAAAAAAAAAAAAAAAAAw", second, t);
    consumer_heartbeat(r, "consumer heartbeat fenced epoch", &k, member, epoch + 7, t);
    consumer_heartbeat(r, "consumer heartbeat unknown member", &k, "AAAAAAAAAAAAAAAAAAAAAg", 3, t);
    let req = DescribeGroupsRequest {
        groups: vec![n.group.as_str().into(), unknown.into()].into(),
        ..Default::default()
    };
    r.call("describe groups", &req, 5);
    consumer_heartbeat(r, "consumer heartbeat leave", &k, member, -1, t);

    // Partitions added, records deleted.
    let topics = [
        CreatePartitionsTopic { name: t.into(), count: 4, assignments: None, ..Default::default() },
        CreatePartitionsTopic { name: n.other.as_str().into(), count: 1, ..Default::default() },
        CreatePartitionsTopic { name: unknown.into(), count: 2, ..Default::default() },
    ];
    let req = CreatePartitionsRequest { topics: (&topics).into(), timeout_ms: 30_000, ..Default::default() };
    r.call("create partitions", &req, 3);
    let topics = [CreatePartitionsTopic {
        name: t.into(),
        count: 6,
        assignments: Some(Vec::<CreatePartitionsAssignment<'_>>::new().into()),
        ..Default::default()
    }];
    let req = CreatePartitionsRequest { topics: (&topics).into(), timeout_ms: 30_000, ..Default::default() };
    r.call("create partitions too few assignments", &req, 3);
    let partitions = [
        DeleteRecordsPartition { partition_index: 0, offset: 1, ..Default::default() },
        DeleteRecordsPartition { partition_index: 1, offset: 100, ..Default::default() },
        DeleteRecordsPartition { partition_index: 9, offset: 0, ..Default::default() },
    ];
    let topics =
        [DeleteRecordsTopic { name: t.into(), partitions: (&partitions).into(), ..Default::default() }];
    let req = DeleteRecordsRequest { topics: (&topics).into(), timeout_ms: 30_000, ..Default::default() };
    r.call("delete records", &req, 2);
    list_offsets(r, "list offsets after delete records", t, &[(0, -2)], 9);

    // Configs altered, then described.
    let configs = [AlterableConfig {
        name: "retention.ms".into(),
        config_operation: 0,
        value: Some("86400000".into()),
        ..Default::default()
    }];
    let bad = [AlterableConfig {
        name: "no.such.config".into(),
        config_operation: 0,
        value: Some("1".into()),
        ..Default::default()
    }];
    let resources = [
        AlterConfigsResource {
            resource_type: 2,
            resource_name: t.into(),
            configs: (&configs).into(),
            ..Default::default()
        },
        AlterConfigsResource {
            resource_type: 2,
            resource_name: n.other.as_str().into(),
            configs: (&bad).into(),
            ..Default::default()
        },
        AlterConfigsResource {
            resource_type: 2,
            resource_name: unknown.into(),
            configs: (&configs).into(),
            ..Default::default()
        },
    ];
    let req = IncrementalAlterConfigsRequest { resources: (&resources).into(), ..Default::default() };
    r.call("incremental alter configs", &req, 1);
    let resources = vec![DescribeConfigsResource {
        resource_type: 2,
        resource_name: t.into(),
        configuration_keys: Some(vec!["retention.ms".into()].into()),
        ..Default::default()
    }];
    let req = DescribeConfigsRequest { resources: resources.into(), ..Default::default() };
    r.call("describe configs after alter", &req, 4);
}

/// The item names of docs/serve.md's section "Differences from Apache Kafka" (each item
/// starts with `- **name**`).
fn documented() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(common::root().join("docs/serve.md")).unwrap();
    let section = doc
        .split("\n## Differences from Apache Kafka")
        .nth(1)
        .expect("docs/serve.md has a section \"Differences from Apache Kafka\"");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter_map(|l| l.strip_prefix("- **"))
        .filter_map(|l| l.split("**").next())
        .map(str::to_string)
        .collect()
}

#[test]
fn answers_match_apache_kafka() {
    let started = Instant::now();
    let (_, out) = harness::kafka("start", "diff", &["{pid}"], &[], Duration::from_secs(600));
    let kafka_addr: SocketAddr = out.stdout.trim().parse().expect("the broker's address");
    let names = Names::new();

    let mut kafka = Run::new(kafka_addr);
    script(&mut kafka, &names);

    let broker = Broker::start(Config::default()).unwrap();
    let mut kwire = Run::new(broker.addr());
    script(&mut kwire, &names);
    drop(broker);

    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut unlisted = Vec::new();
    let mut listed = 0;
    assert_eq!(kafka.answers.len(), kwire.answers.len());
    for (a, b) in kafka.answers.iter().zip(&kwire.answers) {
        assert_eq!(a.label, b.label);
        let mut found = Vec::new();
        diff("", &a.json, &b.json, &mut found);
        for (path, x, y) in found {
            let path = path.replace(&names.prefix, "");
            let allowed = ALLOWED
                .iter()
                .find(|d| a.label.contains(d.step) && d.paths.iter().any(|p| path.ends_with(p)));
            match allowed {
                Some(d) => {
                    seen.insert(d.id);
                    listed += 1;
                }
                None => unlisted.push(format!("{}: {path}: Kafka {x}, kwire {y}", a.label)),
            }
        }
    }
    println!(
        "{} answers compared, {listed} listed differences seen, {} unlisted, in {:.1}s",
        kafka.answers.len(),
        unlisted.len(),
        started.elapsed().as_secs_f64()
    );
    if std::env::var_os("KWIRE_DIFF_SHOW").is_some() {
        for (a, b) in kafka.answers.iter().zip(&kwire.answers) {
            println!("{}:\n  Kafka {}\n  kwire {}", a.label, a.json, b.json);
        }
    }
    assert!(
        unlisted.is_empty(),
        "differences from Apache Kafka not listed in docs/serve.md:\n{}",
        unlisted.join("\n")
    );
    let unseen: Vec<&str> = ALLOWED.iter().map(|d| d.id).filter(|id| !seen.contains(id)).collect();
    assert!(
        unseen.is_empty(),
        "listed differences no longer seen (remove them from the test and docs/serve.md): {unseen:?}"
    );
    let ids: BTreeSet<String> = ALLOWED.iter().map(|d| d.id.to_string()).collect();
    assert_eq!(ids, documented(), "the test's allowed differences and docs/serve.md's list differ");
}
