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
//! The ACL script ([`acl_script`]) follows on the same two brokers: the real one runs
//! Kafka's `StandardAuthorizer` (allow-if-no-acl, super users `User:ANONYMOUS` and
//! `User:admin`) with a SASL_PLAINTEXT listener of PLAIN users ([`kafka_props`]), the
//! `kwire::broker` the same `Config::authorizer` and users ([`kwire_config`]). An admin
//! creates bindings; each user, logged in on a connection of its own, sends what its
//! bindings allow and refuse across the APIs an authorizer guards; the admin lifts a DENY.
//! The main script runs as `User:ANONYMOUS`, a super user, so its answers are those of a
//! broker without an authorizer.
//!
//! The real broker is this process's one (started with `tests/kafka/broker.sh start`);
//! names are unique per run.
#![cfg(feature = "cli")]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kwire::broker::{Authorizer, Broker, Config};
use kwire::encode::AnyBody;
use kwire::messages::ResponseBodyView;
use kwire::messages::add_partitions_to_txn::{AddPartitionsToTxnRequest, AddPartitionsToTxnTopic};
use kwire::messages::consumer_group_heartbeat::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatRequestTopicPartitions,
};
use kwire::messages::create_acls::{AclCreation, CreateAclsRequest};
use kwire::messages::create_partitions::{
    CreatePartitionsAssignment, CreatePartitionsRequest, CreatePartitionsTopic,
};
use kwire::messages::create_topics::{CreatableTopic, CreateTopicsRequest};
use kwire::messages::delete_acls::{DeleteAclsFilter, DeleteAclsRequest};
use kwire::messages::delete_groups::DeleteGroupsRequest;
use kwire::messages::delete_records::{DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic};
use kwire::messages::delete_topics::DeleteTopicsRequest;
use kwire::messages::describe_acls::DescribeAclsRequest;
use kwire::messages::describe_cluster::DescribeClusterRequest;
use kwire::messages::describe_configs::{DescribeConfigsRequest, DescribeConfigsResource};
use kwire::messages::describe_groups::DescribeGroupsRequest;
use kwire::messages::describe_log_dirs::DescribeLogDirsRequest;
use kwire::messages::describe_producers::{DescribeProducersRequest, TopicRequest};
use kwire::messages::elect_leaders::{ElectLeadersRequest, TopicPartitions};
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
use kwire::messages::list_groups::ListGroupsRequest;
use kwire::messages::list_offsets::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
use kwire::messages::list_transactions::ListTransactionsRequest;
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
use kwire::messages::sasl_authenticate::SaslAuthenticateRequest;
use kwire::messages::sasl_handshake::SaslHandshakeRequest;
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

/// One broker's run of the script, or of one principal's part of the ACL script.
struct Run {
    conn: Conn,
    /// What each label starts with (the principal's name in the ACL script).
    who: String,
    answers: Vec<Answer>,
    /// The renames of ids (kind, value) to their order of first appearance.
    ids: BTreeMap<(String, String), usize>,
}

impl Run {
    fn new(addr: SocketAddr) -> Run {
        Run::as_who(addr, "")
    }

    /// A run on a connection of its own whose labels start with `who` (its ids are renamed
    /// on their own, so the real broker's second listener compares with kwire's one port).
    fn as_who(addr: SocketAddr, who: &str) -> Run {
        let who = if who.is_empty() { String::new() } else { format!("{who}: ") };
        Run { conn: Conn::open_as(addr, "kwire-diff"), who, answers: Vec::new(), ids: BTreeMap::new() }
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
        let label = format!("{}{label} ({} v{version})", self.who, key.name());
        self.answers.push(Answer { label, json });
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
    if let Some(principal) = m.get("principal").and_then(Value::as_str) {
        // An ACL: its whole binding is its name.
        let part = |k: &str| m.get(k).map(Value::to_string).unwrap_or_default();
        let (rt, name, pattern) = (part("resourceType"), part("resourceName"), part("patternType"));
        let (host, op, permission) = (part("host"), part("operation"), part("permissionType"));
        return (format!("{rt} {name} {pattern} {principal} {host} {op} {permission}"), 0);
    }
    let name = ["name", "topic", "resourceName", "groupId", "key", "transactionalId"]
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

/// A consumer's Fetch of `parts` (partition, offset) of one topic (named, or by id in
/// `topic`), in fetch session `session` (id, epoch; `NO_SESSION` for none; no partitions
/// sends no topic): the answer's frame.
fn fetch_frame(
    r: &mut Run,
    label: &str,
    topic: FetchTopic<'_>,
    parts: &[(i32, i64)],
    session: (i32, i32),
    version: i16,
) -> Vec<u8> {
    let partitions: Vec<FetchPartition<'_>> = parts
        .iter()
        .map(|&(partition, fetch_offset)| FetchPartition {
            partition,
            fetch_offset,
            partition_max_bytes: 1 << 20,
            ..Default::default()
        })
        .collect();
    let topics = [FetchTopic { partitions: partitions.into(), ..topic }];
    let req = FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_id: session.0,
        session_epoch: session.1,
        topics: if parts.is_empty() { Default::default() } else { (&topics).into() },
        ..Default::default()
    };
    r.call(label, &req, version)
}

/// No fetch session: a full fetch.
const NO_SESSION: (i32, i32) = (0, -1);

fn fetch(r: &mut Run, label: &str, topic: &str, parts: &[(i32, i64)], version: i16) {
    fetch_frame(
        r,
        label,
        FetchTopic { topic: topic.into(), ..Default::default() },
        parts,
        NO_SESSION,
        version,
    );
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

fn add_partitions(r: &mut Run, label: &str, txn: &str, p: (i64, i16), topics: &[(&str, &[i32])]) {
    let topics: Vec<AddPartitionsToTxnTopic<'_>> = topics
        .iter()
        .map(|&(topic, partitions)| AddPartitionsToTxnTopic {
            name: topic.into(),
            partitions: partitions.to_vec().into(),
            ..Default::default()
        })
        .collect();
    let req = AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: txn.into(),
        v3_and_below_producer_id: p.0,
        v3_and_below_producer_epoch: p.1,
        v3_and_below_topics: topics.into(),
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
    add_partitions(r, "add partitions", x, p, &[(t, &[0])]);
    add_partitions(r, "add partitions unknown partition", x, p, &[(t, &[9])]);
    let tb = batch(&["t0"], Some((p.0, p.1, 0)), true);
    produce(r, "transactional produce", t, &[(0, &tb)], Some(x), 11);
    end_txn(r, "commit transaction", x, p, true);
    end_txn(r, "end transaction wrong producer", x, (p.0 + 1000, p.1), false);
    end_txn(r, "abort after commit", x, p, false);
    let p2 = init_producer(r, "transactional init again", Some(x), (-1, -1), 4);
    add_partitions(r, "add partitions fenced epoch", x, p, &[(t, &[0])]);
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
    fetch_frame(r, label, FetchTopic { topic_id, ..Default::default() }, parts, NO_SESSION, 13);
}

/// Fetch v12 in a fetch session (`session` 0 and `epoch` 0 open one) of `parts` from offset
/// 0: the session id of the answer.
fn fetch_session(r: &mut Run, label: &str, topic: &str, session: i32, epoch: i32, parts: &[i32]) -> i32 {
    let parts: Vec<(i32, i64)> = parts.iter().map(|&p| (p, 0)).collect();
    let topic = FetchTopic { topic: topic.into(), ..Default::default() };
    let frame = fetch_frame(r, label, topic, &parts, (session, epoch), 12);
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

// The ACL script: the same bindings and requests, as several principals, against the real
// broker's `StandardAuthorizer` and `kwire::broker`'s `Config::authorizer`.

/// The SASL/PLAIN users of the ACL script. `admin` is a super user, beside `User:ANONYMOUS`
/// (the main script's principal, and the real broker's own on its inter-broker and
/// controller listeners, which must keep CLUSTER_ACTION once the cluster has ACLs); the
/// others have only what the script's bindings give them, and what
/// `allow.everyone.if.no.acl.found` gives on resources no binding names.
const USERS: [&str; 4] = ["admin", "alice", "bob", "carol"];

/// The users' password: new in each run.
fn password() -> &'static str {
    static PASSWORD: OnceLock<String> = OnceLock::new();
    PASSWORD.get_or_init(|| {
        let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
        format!("diff-secret-{}-{t}", std::process::id())
    })
}

/// Kafka's codes (resource types, pattern types, operations, permissions; 1 is ANY).
const ANY: i8 = 1;
const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const TXN: i8 = 5;
const MATCH: i8 = 2;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const ALL: i8 = 2;
const READ: i8 = 3;
const WRITE: i8 = 4;
const CREATE: i8 = 5;
const ALTER: i8 = 7;
const DESCRIBE: i8 = 8;
const ALTER_CONFIGS: i8 = 11;
const DENY: i8 = 2;
const ALLOW: i8 = 3;

/// One binding: resource type, name, pattern type, principal, host, operation, permission.
type Binding<'a> = (i8, &'a str, i8, &'a str, &'a str, i8, i8);

/// The resources of the ACL script, under the run's prefix.
struct AclNames {
    /// Topics (two partitions each): bindings on each by name, by a prefix, by `*`.
    lit: String,
    pre: String,
    pre_one: String,
    pre_two: String,
    star: String,
    /// Topics to create: under a prefix alice may CREATE, and not.
    new: String,
    new_alice: String,
    new_bob: String,
    none: String,
    /// Groups: one by name, the others under a prefix every user may READ.
    g: String,
    gp: String,
    gx: String,
    gy: String,
    /// Transactional ids: one with bindings, one without.
    x: String,
    free: String,
}

impl AclNames {
    fn new(n: &Names) -> AclNames {
        let p = |s: &str| format!("{}acl-{s}", n.prefix);
        AclNames {
            lit: p("lit"),
            pre: p("pre-"),
            pre_one: p("pre-one"),
            pre_two: p("pre-two"),
            star: p("star"),
            new: p("new-"),
            new_alice: p("new-alice"),
            new_bob: p("new-bob"),
            none: p("none"),
            g: p("g"),
            gp: p("gp-"),
            gx: p("gp-x"),
            gy: p("gp-y"),
            x: p("x"),
            free: p("free"),
        }
    }

    /// The bindings the admin creates: LITERAL and PREFIXED, the wildcard principal, the
    /// wildcard resource, hosts, a DENY over an ALLOW, one operation at a time.
    fn bindings(&self) -> Vec<Binding<'_>> {
        let any = "*";
        vec![
            (TOPIC, &self.lit, LITERAL, "User:alice", any, READ, ALLOW),
            (TOPIC, &self.lit, LITERAL, "User:alice", any, ALTER_CONFIGS, ALLOW),
            (TOPIC, &self.lit, LITERAL, "User:bob", any, DESCRIBE, ALLOW),
            (TOPIC, &self.pre, PREFIXED, "User:alice", any, ALL, ALLOW),
            (TOPIC, &self.pre_one, LITERAL, "User:alice", any, WRITE, DENY),
            (TOPIC, &self.star, LITERAL, "User:*", any, READ, ALLOW),
            (TOPIC, &self.star, LITERAL, "User:bob", "127.0.0.1", WRITE, ALLOW),
            (TOPIC, &self.star, LITERAL, "User:alice", "10.0.0.9", WRITE, ALLOW),
            (TOPIC, &self.new, PREFIXED, "User:alice", any, CREATE, ALLOW),
            // Every topic now has a binding: allow-if-no-acl no longer opens any of them.
            (TOPIC, "*", LITERAL, "User:carol", any, WRITE, DENY),
            (GROUP, &self.g, LITERAL, "User:alice", any, READ, ALLOW),
            (GROUP, &self.g, LITERAL, "User:bob", any, DESCRIBE, ALLOW),
            (GROUP, &self.gp, PREFIXED, "User:*", any, READ, ALLOW),
            (GROUP, &self.gx, LITERAL, "User:bob", any, READ, DENY),
            (TXN, &self.x, LITERAL, "User:alice", any, WRITE, ALLOW),
            (TXN, &self.x, LITERAL, "User:bob", any, DESCRIBE, ALLOW),
            (CLUSTER, "kafka-cluster", LITERAL, "User:alice", any, DESCRIBE, ALLOW),
        ]
    }
}

fn login(r: &mut Run, label: &str, user: &str, password: &str) {
    r.call(&format!("{label} handshake"), &SaslHandshakeRequest { mechanism: "PLAIN".into() }, 1);
    let token = format!("\0{user}\0{password}");
    let req = SaslAuthenticateRequest { auth_bytes: token.as_bytes().into(), ..Default::default() };
    r.call(&format!("{label} authenticate"), &req, 2);
}

fn create_acls(r: &mut Run, label: &str, bindings: &[Binding<'_>]) {
    let creations: Vec<AclCreation<'_>> = bindings
        .iter()
        .map(|&(resource_type, name, pattern, principal, host, operation, permission_type)| AclCreation {
            resource_type,
            resource_name: name.into(),
            resource_pattern_type: pattern,
            principal: principal.into(),
            host: host.into(),
            operation,
            permission_type,
            ..Default::default()
        })
        .collect();
    r.call(label, &CreateAclsRequest { creations: creations.into(), ..Default::default() }, 3);
}

/// DescribeAcls v3 of (resource type, name, pattern type, principal), any host, operation
/// and permission.
fn describe_acls_request<'a>(
    (resource_type, name, pattern, principal): (i8, Option<&'a str>, i8, Option<&'a str>),
) -> DescribeAclsRequest<'a> {
    DescribeAclsRequest {
        resource_type_filter: resource_type,
        resource_name_filter: name.map(Into::into),
        pattern_type_filter: pattern,
        principal_filter: principal.map(Into::into),
        host_filter: None,
        operation: ANY,
        permission_type: ANY,
        ..Default::default()
    }
}

fn describe_acls(r: &mut Run, label: &str, filter: (i8, Option<&str>, i8, Option<&str>)) {
    r.call(label, &describe_acls_request(filter), 3);
}

/// Waits (up to 30 s, answers not kept) until the broker's authorizer holds `count`
/// bindings: the real broker applies CreateAcls and DeleteAcls from its metadata log a
/// moment after answering.
fn settle_acls(r: &mut Run, count: usize) {
    let req = describe_acls_request((ANY, None, ANY, None));
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut held = 0;
    while Instant::now() < deadline {
        let frame = r.conn.call(&req, 3);
        let ResponseBodyView::DescribeAcls(d) =
            kwire::dispatch::parse_response(&frame, ApiKey::DescribeAcls, 3).unwrap().body
        else {
            unreachable!()
        };
        held = d.resources().iter().map(|res| res.acls().len()).sum::<usize>();
        if held == count {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the broker holds {held} ACLs, not {count}");
}

/// A DeleteAcls filter: resource type, name, pattern type, principal, operation,
/// permission (any host).
type AclFilter<'a> = (i8, Option<&'a str>, i8, Option<&'a str>, i8, i8);

/// DeleteAcls v3 of filters.
fn delete_acls(r: &mut Run, label: &str, filters: &[AclFilter<'_>]) {
    let filters: Vec<DeleteAclsFilter<'_>> = filters
        .iter()
        .map(|&(resource_type, name, pattern, principal, operation, permission_type)| DeleteAclsFilter {
            resource_type_filter: resource_type,
            resource_name_filter: name.map(Into::into),
            pattern_type_filter: pattern,
            principal_filter: principal.map(Into::into),
            host_filter: None,
            operation,
            permission_type,
            ..Default::default()
        })
        .collect();
    r.call(label, &DeleteAclsRequest { filters: filters.into(), ..Default::default() }, 3);
}

/// Metadata v12 of `topics` (every topic when `None`), with the topics' authorized
/// operations.
fn metadata_ops(r: &mut Run, label: &str, topics: Option<&[&str]>, auto: bool) {
    let topics: Option<Vec<MetadataRequestTopic<'_>>> = topics.map(|list| {
        list.iter().map(|t| MetadataRequestTopic { name: Some((*t).into()), ..Default::default() }).collect()
    });
    let req = MetadataRequest {
        topics: topics.map(Into::into),
        allow_auto_topic_creation: auto,
        include_topic_authorized_operations: true,
        ..Default::default()
    };
    r.call(label, &req, 12);
}

/// FindCoordinator v6 of several keys of one type.
fn find_coordinators(r: &mut Run, label: &str, keys: &[&str], key_type: i8) {
    let keys: Vec<kwire::Str<'_>> = keys.iter().map(|k| (*k).into()).collect();
    let req = FindCoordinatorRequest { key_type, coordinator_keys: keys.into(), ..Default::default() };
    r.call_settled(label, &req, 6);
}

fn list_groups(r: &mut Run, label: &str) {
    r.call(label, &ListGroupsRequest::default(), 5);
}

fn describe_groups(r: &mut Run, label: &str, groups: &[&str]) {
    let groups: Vec<kwire::Str<'_>> = groups.iter().map(|g| (*g).into()).collect();
    let req = DescribeGroupsRequest {
        groups: groups.into(),
        include_authorized_operations: true,
        ..Default::default()
    };
    r.call(label, &req, 5);
}

fn leave(r: &mut Run, label: &str, group: &str, member: &str) {
    let members = [MemberIdentity { member_id: member.into(), ..Default::default() }];
    r.call(
        label,
        &LeaveGroupRequest { group_id: group.into(), members: (&members).into(), ..Default::default() },
        5,
    );
}

fn delete_topics(r: &mut Run, label: &str, topics: &[&str]) {
    let names: Vec<kwire::Str<'_>> = topics.iter().map(|t| (*t).into()).collect();
    let req = DeleteTopicsRequest { topic_names: names.into(), timeout_ms: 30_000, ..Default::default() };
    r.call(label, &req, 5);
}

/// DescribeConfigs v4 of two topic configs of each topic (type 2), or of a broker (type 4).
fn describe_configs(r: &mut Run, label: &str, resources: &[(i8, &str)]) {
    let resources: Vec<DescribeConfigsResource<'_>> = resources
        .iter()
        .map(|&(resource_type, name)| DescribeConfigsResource {
            resource_type,
            resource_name: name.into(),
            configuration_keys: Some(vec!["cleanup.policy".into(), "retention.ms".into()].into()),
            ..Default::default()
        })
        .collect();
    r.call(label, &DescribeConfigsRequest { resources: resources.into(), ..Default::default() }, 4);
}

fn describe_cluster(r: &mut Run, label: &str) {
    let req = DescribeClusterRequest { include_cluster_authorized_operations: true, ..Default::default() };
    r.call(label, &req, 1);
}

/// CreatePartitions v3: each topic to `count` partitions, placed by the broker or, with
/// `listed`, on an empty list of assignments.
fn create_partitions(r: &mut Run, label: &str, topics: &[(&str, i32, bool)]) {
    let topics: Vec<CreatePartitionsTopic<'_>> = topics
        .iter()
        .map(|&(name, count, listed)| CreatePartitionsTopic {
            name: name.into(),
            count,
            assignments: listed.then(|| vec![].into()),
            ..Default::default()
        })
        .collect();
    let req = CreatePartitionsRequest { topics: topics.into(), timeout_ms: 30_000, ..Default::default() };
    r.call(label, &req, 3);
}

/// IncrementalAlterConfigs v1: `retention.ms` set on each topic.
fn alter_configs(r: &mut Run, label: &str, topics: &[&str]) {
    let configs = [AlterableConfig {
        name: "retention.ms".into(),
        config_operation: 0,
        value: Some("86400000".into()),
        ..Default::default()
    }];
    let resources: Vec<AlterConfigsResource<'_>> = topics
        .iter()
        .map(|t| AlterConfigsResource {
            resource_type: TOPIC,
            resource_name: (*t).into(),
            configs: (&configs).into(),
            ..Default::default()
        })
        .collect();
    r.call(label, &IncrementalAlterConfigsRequest { resources: resources.into(), ..Default::default() }, 1);
}

/// DeleteRecords v2: partition 0 of each topic up to `offset`.
fn delete_records(r: &mut Run, label: &str, topics: &[(&str, i64)]) {
    let topics: Vec<DeleteRecordsTopic<'_>> = topics
        .iter()
        .map(|&(name, offset)| DeleteRecordsTopic {
            name: name.into(),
            partitions: vec![DeleteRecordsPartition { partition_index: 0, offset, ..Default::default() }]
                .into(),
            ..Default::default()
        })
        .collect();
    r.call(
        label,
        &DeleteRecordsRequest { topics: topics.into(), timeout_ms: 30_000, ..Default::default() },
        2,
    );
}

/// Bob's calls of the other APIs an authorizer guards: each with a topic or group he may
/// use and one he may not, or one the cluster refuses him.
fn other_apis(bob: &mut Run, a: &AclNames, n: &Names) {
    let topics: Vec<TopicRequest<'_>> = [a.star.as_str(), &a.lit]
        .iter()
        .map(|t| TopicRequest { name: (*t).into(), partition_indexes: vec![0].into(), ..Default::default() })
        .collect();
    bob.call(
        "describe producers",
        &DescribeProducersRequest { topics: topics.into(), ..Default::default() },
        0,
    );
    let req = DeleteGroupsRequest {
        groups_names: vec![a.g.as_str().into(), n.empty_group.as_str().into()].into(),
        ..Default::default()
    };
    bob.call("delete groups", &req, 2);
    bob.call("list transactions", &ListTransactionsRequest { duration_filter: -1, ..Default::default() }, 1);
    let topics: Vec<OffsetForLeaderTopic<'_>> = [a.lit.as_str(), &a.pre_one]
        .iter()
        .map(|t| OffsetForLeaderTopic {
            topic: (*t).into(),
            partitions: vec![OffsetForLeaderPartition {
                partition: 0,
                current_leader_epoch: -1,
                leader_epoch: 0,
                ..Default::default()
            }]
            .into(),
            ..Default::default()
        })
        .collect();
    let req = OffsetForLeaderEpochRequest { replica_id: -1, topics: topics.into(), ..Default::default() };
    bob.call("offset for leader epoch", &req, 4);
    bob.call("describe log dirs", &DescribeLogDirsRequest { topics: None, ..Default::default() }, 4);
    let partitions = vec![TopicPartitions {
        topic: a.lit.as_str().into(),
        partitions: vec![0].into(),
        ..Default::default()
    }];
    let req = ElectLeadersRequest {
        election_type: 0,
        topic_partitions: Some(partitions.into()),
        timeout_ms: 30_000,
        ..Default::default()
    };
    bob.call("elect leaders", &req, 2);
    create_partitions(bob, "create partitions", &[(&a.lit, 3, false)]);
    alter_configs(bob, "alter configs", &[&a.lit]);
    delete_records(bob, "delete records", &[(&a.lit, 0)]);
}

/// The ACL script, the same for both brokers, at `addr` (the real broker's SASL_PLAINTEXT
/// listener): its answers, each principal's after the other's.
fn acl_script(addr: SocketAddr, n: &Names) -> Vec<Answer> {
    let a = AclNames::new(n);
    let pw = password();
    let b1 = batch(&["acl"], None, false);

    // The admin: topics and bindings.
    let mut admin = Run::as_who(addr, "admin");
    login(&mut admin, "login", "admin", pw);
    let topics = [a.lit.as_str(), &a.pre_one, &a.pre_two, &a.star];
    let specs: Vec<(&str, i32, i16)> = topics.iter().map(|t| (*t, 2, 1)).collect();
    create(&mut admin, "create topics", &specs, false, 7);
    settle(&mut admin, &topics, true);
    let bindings = a.bindings();
    create_acls(&mut admin, "create acls", &bindings);
    settle_acls(&mut admin, bindings.len());
    produce(&mut admin, "produce", &a.lit, &[(0, &b1), (1, &b1)], None, 11);
    create_acls(&mut admin, "create acls again", &bindings[..2]);
    // Each refused binding beside a good one (already there): some refuse the request.
    let invalid: [(&str, Binding<'_>); 6] = [
        ("another cluster name", (CLUSTER, "other", LITERAL, "User:alice", "*", ALTER, ALLOW)),
        ("empty name", (TOPIC, "", LITERAL, "User:alice", "*", READ, ALLOW)),
        ("principal without type", (TOPIC, &a.lit, LITERAL, "alice", "*", READ, ALLOW)),
        ("match pattern", (TOPIC, &a.lit, MATCH, "User:alice", "*", READ, ALLOW)),
        ("any operation", (TOPIC, &a.lit, LITERAL, "User:alice", "*", ANY, ALLOW)),
        ("any resource type", (ANY, &a.lit, LITERAL, "User:alice", "*", READ, ALLOW)),
    ];
    for (what, binding) in invalid {
        create_acls(&mut admin, &format!("create acl: {what}"), &[binding, bindings[0]]);
    }
    describe_acls(&mut admin, "describe every acl", (ANY, None, ANY, None));
    describe_acls(&mut admin, "describe acls matching a topic", (TOPIC, Some(&a.pre_one), MATCH, None));
    describe_acls(&mut admin, "describe alice's group acls", (GROUP, None, ANY, Some("User:alice")));

    // A wrong password.
    let mut mallory = Run::as_who(addr, "mallory");
    login(&mut mallory, "login wrong password", "alice", "not the password");

    // alice: READ on `lit`, everything under `pre-` but WRITE on `pre-one`, WRITE on
    // `star` only from another host, CREATE under `new-`, her group, her transactional id,
    // DESCRIBE on the cluster.
    let mut alice = Run::as_who(addr, "alice");
    login(&mut alice, "login", "alice", pw);
    metadata_ops(&mut alice, "metadata named", Some(&[&a.lit, &a.pre_one, &a.star, &n.topic]), false);
    metadata_ops(&mut alice, "metadata every topic", None, false);
    produce(&mut alice, "produce without write", &a.lit, &[(0, &b1)], None, 11);
    produce(&mut alice, "produce denied", &a.pre_one, &[(0, &b1)], None, 11);
    produce(&mut alice, "produce under prefix", &a.pre_two, &[(0, &b1), (1, &b1)], None, 11);
    produce(&mut alice, "produce from another host", &a.star, &[(0, &b1)], None, 11);
    fetch(&mut alice, "fetch", &a.lit, &[(0, 0), (1, 0)], 12);
    fetch(&mut alice, "fetch under prefix", &a.pre_two, &[(0, 0)], 12);
    list_offsets(&mut alice, "list offsets", &a.star, &[(0, -1)], 9);
    create(&mut alice, "create topics", &[(&a.new_alice, 1, 1), (&a.none, 1, 1)], false, 7);
    find_coordinators(&mut alice, "find coordinators", &[&a.g, &a.gy, &n.group], 0);
    let (member, _) = join(&mut alice, "join new member", &a.g, "");
    let (member, generation) = join(&mut alice, "join", &a.g, &member);
    sync(&mut alice, "sync", &a.g, &member, generation);
    commit(&mut alice, "commit", &a.g, &member, generation, &a.lit, 9);
    commit(&mut alice, "commit topic without read", &a.g, &member, generation, &n.topic, 9);
    offset_fetch(&mut alice, "offset fetch", &a.g, &a.lit, 9);
    list_groups(&mut alice, "list groups");
    let p = init_producer(&mut alice, "init transactional", Some(&a.x), (-1, -1), 4);
    add_partitions(
        &mut alice,
        "add partitions without write",
        &a.x,
        p,
        &[(&a.pre_two, &[0]), (&a.lit, &[0])],
    );
    add_partitions(&mut alice, "add partitions", &a.x, p, &[(&a.pre_two, &[0])]);
    end_txn(&mut alice, "abort", &a.x, p, false);
    describe_configs(
        &mut alice,
        "describe configs",
        &[(TOPIC, &a.lit), (TOPIC, &a.pre_one), (TOPIC, &a.star)],
    );
    describe_acls(&mut alice, "describe bob's acls", (ANY, None, ANY, Some("User:bob")));
    create_acls(&mut alice, "create acls", &[(TOPIC, &a.lit, LITERAL, "User:alice", "*", WRITE, ALLOW)]);
    describe_cluster(&mut alice, "describe cluster");
    create_partitions(&mut alice, "create partitions", &[(&a.pre_one, 3, false), (&a.lit, 3, false)]);
    create_partitions(&mut alice, "create partitions, no assignments", &[(&a.pre_two, 4, true)]);
    alter_configs(&mut alice, "alter configs", &[&a.lit, &a.pre_one, &a.star]);
    delete_records(&mut alice, "delete records", &[(&a.pre_two, 1), (&a.star, 0)]);

    // bob: DESCRIBE on `lit`, WRITE on `star` from his host, DESCRIBE on alice's group,
    // READ denied on `gp-x`, DESCRIBE on alice's transactional id, nothing on the cluster.
    let mut bob = Run::as_who(addr, "bob");
    login(&mut bob, "login", "bob", pw);
    metadata_ops(&mut bob, "metadata named", Some(&[&a.lit, &a.pre_one, &a.star]), false);
    metadata_ops(&mut bob, "metadata every topic", None, false);
    metadata_ops(&mut bob, "metadata auto-create", Some(&[&a.new_bob]), true);
    produce(&mut bob, "produce from his host", &a.star, &[(0, &b1)], None, 11);
    produce(&mut bob, "produce without write", &a.lit, &[(0, &b1)], None, 11);
    fetch(&mut bob, "fetch describe only", &a.lit, &[(0, 0)], 12);
    fetch(&mut bob, "fetch", &a.star, &[(0, 0)], 12);
    list_offsets(&mut bob, "list offsets", &a.lit, &[(0, -1), (1, -2)], 9);
    create(&mut bob, "create topics", &[(&a.new_bob, 1, 1)], false, 7);
    find_coordinators(&mut bob, "find coordinators", &[&a.g, &a.gx], 0);
    join(&mut bob, "join denied", &a.gx, "");
    join(&mut bob, "join describe only", &a.g, "");
    describe_groups(&mut bob, "describe groups", &[&a.g, &a.gx, &a.gy, &n.group]);
    offset_fetch(&mut bob, "offset fetch", &a.g, &a.lit, 9);
    commit(&mut bob, "commit", &a.g, "", -1, &a.lit, 9);
    list_groups(&mut bob, "list groups");
    init_producer(&mut bob, "init transactional", Some(&a.x), (-1, -1), 4);
    find_coordinators(&mut bob, "find transaction coordinators", &[&a.x, &a.free], 1);
    init_producer(&mut bob, "init idempotent", None, (-1, -1), 4);
    describe_configs(&mut bob, "describe configs", &[(TOPIC, &a.lit), (4, "1")]);
    describe_acls(&mut bob, "describe acls", (ANY, None, ANY, None));
    create_acls(&mut bob, "create acls", &[(TOPIC, &a.lit, LITERAL, "User:bob", "*", ALL, ALLOW)]);
    delete_acls(&mut bob, "delete acls", &[(ANY, None, ANY, None, ANY, ANY)]);
    delete_topics(&mut bob, "delete topics", &[&a.lit, &a.none]);
    describe_cluster(&mut bob, "describe cluster");
    other_apis(&mut bob, &a, n);

    // carol: no binding of her own but a DENY of WRITE on every topic; READ on `star` and
    // the `gp-` groups as every user; transactional ids and groups no binding names.
    let mut carol = Run::as_who(addr, "carol");
    login(&mut carol, "login", "carol", pw);
    metadata_ops(&mut carol, "metadata named", Some(&[&a.star, &a.lit]), false);
    produce(&mut carol, "produce denied everywhere", &a.star, &[(0, &b1)], None, 11);
    fetch(&mut carol, "fetch", &a.star, &[(0, 0)], 12);
    init_producer(&mut carol, "init idempotent", None, (-1, -1), 4);
    init_producer(&mut carol, "init transactional without acls", Some(&a.free), (-1, -1), 4);
    let (member_y, _) = join(&mut carol, "join new member", &a.gy, "");
    let (member_y, _) = join(&mut carol, "join", &a.gy, &member_y);
    find_coordinators(&mut carol, "find coordinators", &[&n.group, &a.g], 0);
    list_groups(&mut carol, "list groups");
    leave(&mut carol, "leave", &a.gy, &member_y);

    // The admin lifts alice's DENY; alice writes and deletes.
    delete_acls(
        &mut admin,
        "delete the deny",
        &[(TOPIC, Some(&a.pre_one), LITERAL, Some("User:alice"), WRITE, DENY)],
    );
    delete_acls(&mut admin, "delete nothing", &[(GROUP, Some("nothing"), ANY, None, ANY, ANY)]);
    settle_acls(&mut admin, bindings.len() - 1);
    produce(&mut alice, "produce after the deny is gone", &a.pre_one, &[(0, &b1)], None, 11);
    leave(&mut alice, "leave", &a.g, &member);
    delete_topics(&mut alice, "delete topics", &[&a.pre_two, &a.lit]);

    let mut answers = Vec::new();
    for r in [admin, mallory, alice, bob, carol] {
        answers.extend(r.answers);
    }
    answers
}

/// The properties the real broker starts with beside tests/kafka/broker.sh's: a
/// SASL_PLAINTEXT listener with PLAIN [`USERS`], and `StandardAuthorizer` as kwire's side
/// is configured ([`kwire_config`]).
fn kafka_props() -> String {
    let users: String = USERS.iter().map(|u| format!(" user_{u}=\"{}\"", password())).collect();
    format!(
        "listeners=PLAINTEXT://127.0.0.1:@PORT@,SASL_PLAINTEXT://127.0.0.1:@PORT2@,CONTROLLER://127.0.0.1:@CPORT@\n\
         advertised.listeners=PLAINTEXT://127.0.0.1:@PORT@,SASL_PLAINTEXT://127.0.0.1:@PORT2@\n\
         listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT\n\
         sasl.enabled.mechanisms=PLAIN\n\
         authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
         allow.everyone.if.no.acl.found=true\n\
         super.users=User:ANONYMOUS;User:admin\n\
         listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required{users};\n"
    )
}

/// kwire's side: the same users, super users and allow-if-no-acl.
fn kwire_config() -> Config {
    Config {
        plain_users: USERS.iter().map(|u| (u.to_string(), password().to_string())).collect(),
        authorizer: Some(Authorizer {
            super_users: vec!["User:ANONYMOUS".into(), "User:admin".into()],
            allow_everyone_if_no_acl_found: true,
        }),
        ..Config::default()
    }
}

/// The address of the real broker's `PROTOCOL://` listener, from its server.properties in
/// `dir` (the last `listeners=` line wins, as in Kafka).
fn listener(dir: &std::path::Path, protocol: &str) -> SocketAddr {
    let config = std::fs::read_to_string(dir.join("server.properties")).unwrap();
    let listeners = config.lines().rfind(|l| l.starts_with("listeners=")).unwrap();
    listeners
        .split(['=', ','])
        .find_map(|l| l.strip_prefix(&format!("{protocol}://")))
        .unwrap_or_else(|| panic!("no {protocol} listener in {listeners}"))
        .parse()
        .unwrap()
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
    let props = std::env::temp_dir().join(format!("kwire-diff-{}.properties", std::process::id()));
    std::fs::write(&props, kafka_props()).unwrap();
    let env = [("KWIRE_KAFKA_PROPS", props.as_os_str())];
    let (dir, out) = harness::kafka("start", "diff", &["{pid}"], &env, Duration::from_secs(600));
    let _ = std::fs::remove_file(&props);
    let kafka_addr: SocketAddr = out.stdout.trim().parse().expect("the broker's address");
    let kafka_sasl = listener(&dir, "SASL_PLAINTEXT");
    let names = Names::new();
    let script_started = Instant::now();

    let mut kafka = Run::new(kafka_addr);
    script(&mut kafka, &names);
    let acl_started = Instant::now();
    kafka.answers.extend(acl_script(kafka_sasl, &names));
    let kafka_acl_time = acl_started.elapsed();

    let broker = Broker::start(kwire_config()).unwrap();
    let mut kwire = Run::new(broker.addr());
    script(&mut kwire, &names);
    kwire.answers.extend(acl_script(broker.addr(), &names));
    drop(broker);
    let scripts_time = script_started.elapsed();

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
        "{} answers compared, {listed} listed differences seen, {} unlisted, in {:.1}s \
         (the scripts {:.1}s, the ACL script against Kafka {:.1}s)",
        kafka.answers.len(),
        unlisted.len(),
        started.elapsed().as_secs_f64(),
        scripts_time.as_secs_f64(),
        kafka_acl_time.as_secs_f64()
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
