//! The admin calls of `kwire::broker`, over raw frames (hermetic): DescribeLogDirs,
//! AlterConfigs and IncrementalAlterConfigs (and the configs taking effect), DeleteRecords
//! (and Fetch and ListOffsets honouring the log start offset), DeleteGroups, OffsetDelete,
//! DescribeProducers, ElectLeaders and the ACL APIs, each with Apache Kafka's error codes.
#![cfg(feature = "broker")]
// Tuples of a response's fields, compared whole.
#![allow(clippy::type_complexity)]

#[path = "common/raw.rs"]
mod raw;

use kwire::ApiKey;
use kwire::broker::{Broker, Config};
use kwire::records::{BatchBuilder, NewRecord};
use raw::{Conn, answer};

const NONE: i16 = 0;
const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const MESSAGE_TOO_LARGE: i16 = 10;
const INVALID_GROUP_ID: i16 = 24;
const INVALID_CONFIG: i16 = 40;
const INVALID_REQUEST: i16 = 42;
const POLICY_VIOLATION: i16 = 44;
const NON_EMPTY_GROUP: i16 = 68;
const GROUP_ID_NOT_FOUND: i16 = 69;
const MEMBER_ID_REQUIRED: i16 = 79;
const ELECTION_NOT_NEEDED: i16 = 84;
const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
const INVALID_RECORD: i16 = 87;

impl Conn {
    /// Produce v9 of one batch to a partition: (error, base offset, log append time, log
    /// start offset).
    fn produce(&mut self, topic: &str, partition: i32, batch: &[u8]) -> (i16, i64, i64, i64) {
        use kwire::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
        let data =
            [PartitionProduceData { index: partition, records: Some(batch.into()), ..Default::default() }];
        let topics =
            [TopicProduceData { name: topic.into(), partition_data: (&data).into(), ..Default::default() }];
        let req =
            ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: (&topics).into(), ..Default::default() };
        let frame = self.call(&req, 9);
        let r = answer!(frame, Produce, 9);
        let p = r.responses().iter().next().unwrap().partition_responses().iter().next().unwrap();
        (p.error_code(), p.base_offset(), p.log_append_time_ms(), p.log_start_offset())
    }

    /// Fetch v12 (sessionless) of one partition from `offset`: (error, log start offset,
    /// offsets of the records returned).
    fn fetch(&mut self, topic: &str, partition: i32, offset: i64) -> (i16, i64, Vec<i64>) {
        use kwire::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
        let parts = [FetchPartition {
            partition,
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
        let frame = self.call(&req, 12);
        let r = answer!(frame, Fetch, 12);
        assert_eq!(r.error_code(), NONE);
        let p = r.responses().iter().next().unwrap().partitions().iter().next().unwrap();
        let mut offsets = Vec::new();
        let mut scratch = Vec::new();
        for b in kwire::records::RecordBatches::new(p.records().map(|r| r.bytes()).unwrap_or_default()) {
            for rec in b.unwrap().records_in_vec(&mut scratch, 1 << 20).unwrap() {
                offsets.push(rec.unwrap().offset());
            }
        }
        (p.error_code(), p.log_start_offset(), offsets)
    }

    /// ListOffsets v5 of one partition at `timestamp`: (error, offset).
    fn list_offset(&mut self, topic: &str, partition: i32, timestamp: i64) -> (i16, i64) {
        use kwire::messages::list_offsets::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
        let parts = [ListOffsetsPartition { partition_index: partition, timestamp, ..Default::default() }];
        let topics =
            [ListOffsetsTopic { name: topic.into(), partitions: (&parts).into(), ..Default::default() }];
        let req = ListOffsetsRequest { replica_id: -1, topics: (&topics).into(), ..Default::default() };
        let frame = self.call(&req, 5);
        let r = answer!(frame, ListOffsets, 5);
        let p = r.topics().iter().next().unwrap().partitions().iter().next().unwrap();
        (p.error_code(), p.offset())
    }

    /// DescribeConfigs v4 of a topic: (error, [(name, value, source)]).
    fn topic_configs(&mut self, topic: &str, keys: &[&str]) -> (i16, Vec<(String, String, i8)>) {
        use kwire::messages::describe_configs::{DescribeConfigsRequest, DescribeConfigsResource};
        let keys: Vec<kwire::types::Str<'_>> = keys.iter().map(|&k| k.into()).collect();
        let resources = [DescribeConfigsResource {
            resource_type: 2,
            resource_name: topic.into(),
            configuration_keys: Some(keys.into()),
            ..Default::default()
        }];
        let frame =
            self.call(&DescribeConfigsRequest { resources: (&resources).into(), ..Default::default() }, 4);
        let r = answer!(frame, DescribeConfigs, 4);
        let res = r.results().iter().next().unwrap();
        let configs = res
            .configs()
            .iter()
            .map(|c| (c.name().to_string(), c.value().unwrap_or_default().to_string(), c.config_source()))
            .collect();
        (res.error_code(), configs)
    }

    /// A topic config's value and source, as DescribeConfigs tells.
    fn config(&mut self, topic: &str, name: &str) -> (String, i8) {
        let (code, configs) = self.topic_configs(topic, &[name]);
        assert_eq!(code, NONE);
        let (_, value, source) = configs.into_iter().find(|c| c.0 == name).expect("described");
        (value, source)
    }

    /// AlterConfigs v1 of topic (or other) resources: each one's error.
    fn alter(&mut self, resources: &[(i8, &str, &[(&str, Option<&str>)])], validate_only: bool) -> Vec<i16> {
        use kwire::messages::alter_configs::{AlterConfigsRequest, AlterConfigsResource, AlterableConfig};
        let configs: Vec<Vec<AlterableConfig<'_>>> = resources
            .iter()
            .map(|(_, _, c)| {
                c.iter()
                    .map(|(n, v)| AlterableConfig {
                        name: (*n).into(),
                        value: v.map(Into::into),
                        ..Default::default()
                    })
                    .collect()
            })
            .collect();
        let list: Vec<AlterConfigsResource<'_>> = resources
            .iter()
            .zip(&configs)
            .map(|((ty, name, _), c)| AlterConfigsResource {
                resource_type: *ty,
                resource_name: (*name).into(),
                configs: c.as_slice().into(),
                ..Default::default()
            })
            .collect();
        let req = AlterConfigsRequest { resources: list.into(), validate_only, ..Default::default() };
        let frame = self.call(&req, 1);
        let r = answer!(frame, AlterConfigs, 1);
        r.responses().iter().map(|x| x.error_code()).collect()
    }

    /// IncrementalAlterConfigs v1 of one topic: its error.
    fn alter_incremental(&mut self, topic: &str, ops: &[(&str, i8, Option<&str>)]) -> i16 {
        use kwire::messages::incremental_alter_configs::{
            AlterConfigsResource, AlterableConfig, IncrementalAlterConfigsRequest,
        };
        let configs: Vec<AlterableConfig<'_>> = ops
            .iter()
            .map(|(n, op, v)| AlterableConfig {
                name: (*n).into(),
                config_operation: *op,
                value: v.map(Into::into),
                ..Default::default()
            })
            .collect();
        let resources = [AlterConfigsResource {
            resource_type: 2,
            resource_name: topic.into(),
            configs: configs.into(),
            ..Default::default()
        }];
        let req = IncrementalAlterConfigsRequest { resources: (&resources).into(), ..Default::default() };
        let frame = self.call(&req, 1);
        let r = answer!(frame, IncrementalAlterConfigs, 1);
        let res = r.responses().iter().next().unwrap();
        assert_eq!(res.resource_name(), topic);
        res.error_code()
    }

    /// DeleteRecords v2 of one partition: (error, low watermark).
    fn delete_records(&mut self, topic: &str, partition: i32, offset: i64) -> (i16, i64) {
        use kwire::messages::delete_records::{
            DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic,
        };
        let parts = [DeleteRecordsPartition { partition_index: partition, offset, ..Default::default() }];
        let topics =
            [DeleteRecordsTopic { name: topic.into(), partitions: (&parts).into(), ..Default::default() }];
        let req = DeleteRecordsRequest { topics: (&topics).into(), timeout_ms: 1000, ..Default::default() };
        let frame = self.call(&req, 2);
        let r = answer!(frame, DeleteRecords, 2);
        let p = r.topics().iter().next().unwrap().partitions().iter().next().unwrap();
        assert_eq!(p.partition_index(), partition);
        (p.error_code(), p.low_watermark())
    }

    /// OffsetFetch v7 of one partition: the committed offset (-1 for none).
    fn committed(&mut self, group: &str, topic: &str, partition: i32) -> i64 {
        use kwire::messages::offset_fetch::{OffsetFetchRequest, OffsetFetchRequestTopic};
        let parts = [partition];
        let topics = [OffsetFetchRequestTopic {
            name: topic.into(),
            partition_indexes: (&parts).into(),
            ..Default::default()
        }];
        let req = OffsetFetchRequest {
            group_id: group.into(),
            topics: Some((&topics).into()),
            ..Default::default()
        };
        let frame = self.call(&req, 7);
        let r = answer!(frame, OffsetFetch, 7);
        let p = r.topics().iter().next().unwrap().partitions().iter().next().unwrap();
        p.committed_offset()
    }

    /// OffsetDelete v0: (group error, each partition's error).
    fn offset_delete(&mut self, group: &str, parts: &[(&str, i32)]) -> (i16, Vec<i16>) {
        use kwire::messages::offset_delete::{
            OffsetDeleteRequest, OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
        };
        let partitions: Vec<[OffsetDeleteRequestPartition; 1]> =
            parts.iter().map(|&(_, p)| [OffsetDeleteRequestPartition { partition_index: p }]).collect();
        let topics: Vec<OffsetDeleteRequestTopic<'_>> = parts
            .iter()
            .zip(&partitions)
            .map(|(&(t, _), p)| OffsetDeleteRequestTopic { name: t.into(), partitions: p.as_slice().into() })
            .collect();
        let req = OffsetDeleteRequest { group_id: group.into(), topics: topics.into() };
        let frame = self.call(&req, 0);
        let r = answer!(frame, OffsetDelete, 0);
        let codes = r
            .topics()
            .iter()
            .flat_map(|t| t.partitions().iter().map(|p| p.error_code()).collect::<Vec<_>>())
            .collect();
        (r.error_code(), codes)
    }

    /// DeleteGroups v2: each group's error.
    fn delete_groups(&mut self, groups: &[&str]) -> Vec<(String, i16)> {
        use kwire::messages::delete_groups::DeleteGroupsRequest;
        let names: Vec<kwire::types::Str<'_>> = groups.iter().map(|&g| g.into()).collect();
        let frame = self.call(&DeleteGroupsRequest { groups_names: names.into(), ..Default::default() }, 2);
        let r = answer!(frame, DeleteGroups, 2);
        r.results().iter().map(|g| (g.group_id().to_string(), g.error_code())).collect()
    }
}

/// A batch of records with these keys (`None`: no key) and values.
fn batch(records: &[(Option<&str>, &str)]) -> Vec<u8> {
    let new: Vec<NewRecord<'_>> = records
        .iter()
        .map(|(k, v)| NewRecord {
            key: k.map(str::as_bytes),
            value: Some(v.as_bytes()),
            headers: &[],
            timestamp: None,
        })
        .collect();
    let mut out = Vec::new();
    BatchBuilder::new(0, 1_700_000_000_000, &new).encode_to_vec(&mut out).unwrap();
    out
}

fn started() -> (Broker, Conn) {
    let broker = Broker::start(Config::default()).unwrap();
    assert!(broker.create_topic("t", 2));
    assert!(broker.create_topic("u", 1));
    let c = Conn::open_as(broker.addr(), "admin-test");
    (broker, c)
}

#[test]
fn api_versions_lists_the_admin_apis() {
    let (broker, _c) = started();
    for key in [
        ApiKey::DescribeLogDirs,
        ApiKey::AlterConfigs,
        ApiKey::IncrementalAlterConfigs,
        ApiKey::DeleteRecords,
        ApiKey::DeleteGroups,
        ApiKey::OffsetDelete,
        ApiKey::DescribeProducers,
        ApiKey::ElectLeaders,
        ApiKey::DescribeAcls,
        ApiKey::CreateAcls,
        ApiKey::DeleteAcls,
    ] {
        assert_eq!(broker.versions(key), Some(key.request_versions()), "{}", key.name());
    }
}

#[test]
fn describe_log_dirs_tells_each_partitions_bytes() {
    use kwire::messages::describe_log_dirs::{DescribableLogDirTopic, DescribeLogDirsRequest};
    let (broker, mut c) = started();
    assert_eq!(c.produce("t", 0, &batch(&[(None, "a"), (None, "b")])).0, NONE);
    assert_eq!(c.produce("t", 1, &batch(&[(None, "ccc")])).0, NONE);
    for v in [1, 2, 3, 4] {
        let frame = c.call(&DescribeLogDirsRequest { topics: None, ..Default::default() }, v);
        let r = answer!(frame, DescribeLogDirs, v);
        assert_eq!(r.error_code(), NONE);
        let dirs: Vec<_> = r.results().iter().collect();
        assert_eq!(dirs.len(), 1, "one log dir");
        assert_eq!(dirs[0].error_code(), NONE);
        assert!(!dirs[0].log_dir().is_empty());
        let mut seen: Vec<(String, i32, i64)> = dirs[0]
            .topics()
            .iter()
            .flat_map(|t| {
                t.partitions()
                    .iter()
                    .map(|p| (t.name().to_string(), p.partition_index(), p.partition_size()))
                    .collect::<Vec<_>>()
            })
            .collect();
        seen.sort();
        let size = |t: &str, p: i32| broker.log_bytes(t, p).unwrap() as i64;
        assert_eq!(
            seen,
            vec![("t".into(), 0, size("t", 0)), ("t".into(), 1, size("t", 1)), ("u".into(), 0, 0)],
            "v{v}"
        );
        assert!(size("t", 0) > size("t", 1) && size("t", 1) > 0);
    }
    // Asked for: unknown topics and partitions are left out, as Kafka does.
    let wanted = [
        DescribableLogDirTopic { topic: "t".into(), partitions: (&[1, 7]).into(), ..Default::default() },
        DescribableLogDirTopic { topic: "nope".into(), partitions: (&[0]).into(), ..Default::default() },
    ];
    let frame = c.call(&DescribeLogDirsRequest { topics: Some((&wanted).into()), ..Default::default() }, 4);
    let r = answer!(frame, DescribeLogDirs, 4);
    let dir = r.results().iter().next().unwrap();
    let topics: Vec<(String, Vec<i32>)> = dir
        .topics()
        .iter()
        .map(|t| (t.name().to_string(), t.partitions().iter().map(|p| p.partition_index()).collect()))
        .collect();
    assert_eq!(topics, vec![("t".to_string(), vec![1])]);
}

#[test]
fn alter_configs_replaces_a_topics_configs_and_they_take_effect() {
    let (_broker, mut c) = started();
    let big = batch(&[(None, &"x".repeat(300))]);
    // Defaults: create time, the broker's max.message.bytes.
    let (code, _, append_time, _) = c.produce("t", 0, &big);
    assert_eq!((code, append_time), (NONE, -1));
    assert_eq!(c.config("t", "max.message.bytes"), ("1048588".to_string(), 5));

    let set: &[(&str, Option<&str>)] =
        &[("message.timestamp.type", Some("LogAppendTime")), ("max.message.bytes", Some("200"))];
    // validate_only changes nothing.
    assert_eq!(c.alter(&[(2, "t", set)], true), vec![NONE]);
    assert_eq!(c.config("t", "max.message.bytes"), ("1048588".to_string(), 5));
    assert_eq!(c.alter(&[(2, "t", set)], false), vec![NONE]);
    assert_eq!(c.config("t", "max.message.bytes"), ("200".to_string(), 1), "DYNAMIC_TOPIC_CONFIG");
    assert_eq!(c.config("t", "message.timestamp.type"), ("LogAppendTime".to_string(), 1));
    // In effect: the batch is now too large, a small one gets the log's append time.
    assert_eq!(c.produce("t", 0, &big).0, MESSAGE_TOO_LARGE);
    let (code, _, append_time, _) = c.produce("t", 0, &batch(&[(None, "small")]));
    assert_eq!(code, NONE);
    assert!(append_time > 1_700_000_000_000, "log append time {append_time}");

    // AlterConfigs is not incremental: what it does not name goes back to its default.
    assert_eq!(c.alter(&[(2, "t", &[("retention.ms", Some("1000"))])], false), vec![NONE]);
    assert_eq!(c.config("t", "max.message.bytes"), ("1048588".to_string(), 5));
    assert_eq!(c.config("t", "retention.ms"), ("1000".to_string(), 1));
    assert_eq!(c.produce("t", 0, &big).0, NONE);
    assert_eq!(c.produce("t", 0, &batch(&[(None, "again")])).2, -1, "create time again");

    // Errors, each for its own resource; the others are applied.
    let codes = c.alter(
        &[
            (2, "nope", &[("retention.ms", Some("1"))]),
            (2, "u", &[("no.such.config", Some("1"))]),
            (2, "t", &[("max.message.bytes", Some("abc"))]),
            (2, "t", &[("compression.type", Some("brotli"))]),
        ],
        false,
    );
    assert_eq!(codes, vec![UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG, INVALID_REQUEST, INVALID_REQUEST]);
    assert_eq!(c.alter(&[(2, "t", &[("max.message.bytes", Some("abc"))])], false), vec![INVALID_CONFIG]);
    assert_eq!(c.alter(&[(2, "t", &[("compression.type", Some("brotli"))])], false), vec![INVALID_CONFIG]);
    assert_eq!(c.alter(&[(2, "t", &[("min.insync.replicas", Some("0"))])], false), vec![INVALID_CONFIG]);
    assert_eq!(c.alter(&[(2, "t", &[("retention.ms", None)])], false), vec![INVALID_REQUEST]);
    assert_eq!(
        c.alter(&[(2, "u", &[("retention.ms", Some("1")), ("retention.ms", Some("2"))])], false),
        vec![INVALID_REQUEST]
    );
    assert_eq!(c.alter(&[(4, "1", &[("message.max.bytes", Some("1"))])], false), vec![INVALID_REQUEST]);
    assert_eq!(c.alter(&[(3, "g", &[])], false), vec![INVALID_REQUEST]);
    // None of the refused changes was applied.
    assert_eq!(c.config("t", "retention.ms"), ("1000".to_string(), 1));
    assert_eq!(c.config("t", "compression.type"), ("producer".to_string(), 5));
}

#[test]
fn incremental_alter_configs_sets_deletes_appends_and_subtracts() {
    let (_broker, mut c) = started();
    const SET: i8 = 0;
    const DELETE: i8 = 1;
    const APPEND: i8 = 2;
    const SUBTRACT: i8 = 3;
    assert_eq!(
        c.alter_incremental("t", &[("retention.ms", SET, Some("5000")), ("segment.ms", SET, Some("60000"))]),
        NONE
    );
    assert_eq!(c.config("t", "retention.ms"), ("5000".to_string(), 1));
    // Incremental: the configs it does not name stay.
    assert_eq!(c.alter_incremental("t", &[("retention.ms", DELETE, None)]), NONE);
    assert_eq!(c.config("t", "retention.ms"), ("604800000".to_string(), 5));
    assert_eq!(c.config("t", "segment.ms"), ("60000".to_string(), 1));
    // APPEND to a list starts from its default.
    assert_eq!(c.alter_incremental("t", &[("cleanup.policy", APPEND, Some("compact"))]), NONE);
    assert_eq!(c.config("t", "cleanup.policy"), ("delete,compact".to_string(), 1));
    assert_eq!(c.alter_incremental("t", &[("cleanup.policy", APPEND, Some("compact"))]), NONE);
    assert_eq!(c.config("t", "cleanup.policy"), ("delete,compact".to_string(), 1), "no duplicate");
    assert_eq!(c.alter_incremental("t", &[("cleanup.policy", SUBTRACT, Some("delete"))]), NONE);
    assert_eq!(c.config("t", "cleanup.policy"), ("compact".to_string(), 1));
    // In effect: a compacted topic refuses records without keys (Kafka's LogValidator),
    // and DeleteRecords on it is a policy violation.
    assert_eq!(c.produce("t", 0, &batch(&[(None, "keyless")])).0, INVALID_RECORD);
    assert_eq!(c.produce("t", 0, &batch(&[(Some("k"), "keyed")])).0, NONE);
    assert_eq!(c.delete_records("t", 0, 1).0, POLICY_VIOLATION);

    // Errors.
    assert_eq!(c.alter_incremental("nope", &[("retention.ms", SET, Some("1"))]), UNKNOWN_TOPIC_OR_PARTITION);
    assert_eq!(c.alter_incremental("t", &[("no.such.config", SET, Some("1"))]), INVALID_CONFIG);
    assert_eq!(c.alter_incremental("t", &[("no.such.config", DELETE, None)]), INVALID_CONFIG);
    assert_eq!(c.alter_incremental("t", &[("retention.ms", SET, Some("soon"))]), INVALID_CONFIG);
    assert_eq!(c.alter_incremental("t", &[("retention.ms", APPEND, Some("1"))]), INVALID_CONFIG);
    assert_eq!(c.alter_incremental("t", &[("retention.ms", SUBTRACT, Some("1"))]), INVALID_CONFIG);
    assert_eq!(c.alter_incremental("t", &[("cleanup.policy", APPEND, Some("shred"))]), INVALID_CONFIG);
    assert_eq!(c.alter_incremental("t", &[("retention.ms", SET, None)]), INVALID_REQUEST);
    assert_eq!(c.alter_incremental("t", &[("retention.ms", 7, Some("1"))]), INVALID_REQUEST);
    assert_eq!(
        c.alter_incremental("t", &[("retention.ms", SET, Some("1")), ("retention.ms", SET, Some("2"))]),
        INVALID_REQUEST
    );
    // A request with an error changes nothing of its resource, not even its valid parts.
    assert_eq!(
        c.alter_incremental("t", &[("segment.ms", DELETE, None), ("retention.ms", SET, Some("soon"))]),
        INVALID_CONFIG
    );
    assert_eq!(c.config("t", "segment.ms"), ("60000".to_string(), 1));
    assert_eq!(c.config("t", "retention.ms"), ("604800000".to_string(), 5));
}

#[test]
fn delete_records_moves_the_log_start_and_reads_honour_it() {
    let (broker, mut c) = started();
    for i in 0..5 {
        assert_eq!(c.produce("t", 0, &batch(&[(None, &i.to_string())])), (NONE, i, -1, 0));
    }
    assert_eq!(c.delete_records("t", 0, 3), (NONE, 3));
    assert_eq!(broker.log_start_offset("t", 0), Some(3));
    assert_eq!(broker.log_start_offset("t", 1), Some(0), "the other partition is untouched");
    // Fetch below the log start: OFFSET_OUT_OF_RANGE, without offsets (as Kafka's
    // ReplicaManager answers without tiered storage; the client asks ListOffsets).
    assert_eq!(c.fetch("t", 0, 0), (OFFSET_OUT_OF_RANGE, -1, vec![]));
    assert_eq!(c.fetch("t", 0, 2).0, OFFSET_OUT_OF_RANGE);
    assert_eq!(c.fetch("t", 0, 3), (NONE, 3, vec![3, 4]));
    // ListOffsets: earliest is the log start; a timestamp before it finds no record below.
    assert_eq!(c.list_offset("t", 0, -2), (NONE, 3));
    assert_eq!(c.list_offset("t", 0, -4), (NONE, 3));
    assert_eq!(c.list_offset("t", 0, -1), (NONE, 5));
    assert_eq!(c.list_offset("t", 0, 0), (NONE, 3));
    // It never moves back; -1 is the high watermark.
    assert_eq!(c.delete_records("t", 0, 1), (NONE, 3));
    assert_eq!(c.delete_records("t", 0, -1), (NONE, 5));
    assert_eq!(c.fetch("t", 0, 5), (NONE, 5, vec![]));
    // Produce answers the log start offset.
    assert_eq!(c.produce("t", 0, &batch(&[(None, "5")])), (NONE, 5, -1, 5));
    assert_eq!(c.fetch("t", 0, 5), (NONE, 5, vec![5]));
    // Errors.
    assert_eq!(c.delete_records("t", 0, 7).0, OFFSET_OUT_OF_RANGE);
    assert_eq!(c.delete_records("t", 0, -5).0, OFFSET_OUT_OF_RANGE);
    assert_eq!(c.delete_records("t", 9, 0).0, UNKNOWN_TOPIC_OR_PARTITION);
    assert_eq!(c.delete_records("nope", 0, 0).0, UNKNOWN_TOPIC_OR_PARTITION);
    assert_eq!(broker.log_start_offset("t", 0), Some(5));
}

#[test]
fn delete_groups_and_offset_delete() {
    let (_broker, mut c) = started();
    assert_eq!(c.commit("g1", "t", 0, 5), NONE);
    assert_eq!(c.commit("g1", "t", 1, 6), NONE);
    assert_eq!(c.commit("g1", "u", 0, 7), NONE);
    // OffsetDelete of an empty group removes the offsets; unknown partitions are named.
    assert_eq!(
        c.offset_delete("g1", &[("t", 0), ("t", 9), ("nope", 0)]),
        (NONE, vec![NONE, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_OR_PARTITION])
    );
    assert_eq!(c.committed("g1", "t", 0), -1);
    assert_eq!(c.committed("g1", "t", 1), 6);
    assert_eq!(c.offset_delete("nope", &[("t", 0)]).0, GROUP_ID_NOT_FOUND);
    assert_eq!(c.offset_delete("", &[("t", 0)]).0, INVALID_GROUP_ID);

    // A consumer group with a member subscribed to "t".
    let mut subscription = Vec::new();
    subscription.extend_from_slice(&0i16.to_be_bytes());
    subscription.extend_from_slice(&1i32.to_be_bytes());
    subscription.extend_from_slice(&1i16.to_be_bytes());
    subscription.extend_from_slice(b"t");
    subscription.extend_from_slice(&(-1i32).to_be_bytes());
    let protocol = ("range", subscription.as_slice());
    let (error, member) = c.join_group(5, "g2", "", "consumer", protocol);
    assert_eq!(error, MEMBER_ID_REQUIRED);
    assert_eq!(c.join_group(5, "g2", &member, "consumer", protocol).0, NONE);
    assert_eq!(
        c.commit("g2", "u", 0, 1),
        kwire::ErrorCode::UnknownMemberId.to_i16(),
        "a live group checks members"
    );
    // Its subscribed topic's offsets cannot be deleted; the others can.
    assert_eq!(c.offset_delete("g2", &[("t", 0), ("u", 0)]), (NONE, vec![GROUP_SUBSCRIBED_TO_TOPIC, NONE]));
    // A group with members is not deleted.
    let results = c.delete_groups(&["g1", "g2", "nope", ""]);
    assert_eq!(
        results,
        vec![
            ("g1".to_string(), NONE),
            ("g2".to_string(), NON_EMPTY_GROUP),
            ("nope".to_string(), GROUP_ID_NOT_FOUND),
            (String::new(), INVALID_GROUP_ID),
        ]
    );
    // Deleted with its offsets: a new group of that name starts with none.
    assert_eq!(c.committed("g1", "t", 1), -1);
    assert_eq!(c.delete_groups(&["g1"]), vec![("g1".to_string(), GROUP_ID_NOT_FOUND)]);
}

#[test]
fn offset_delete_of_a_live_group_of_another_protocol_type_is_non_empty() {
    let (_broker, mut c) = started();
    // v3: no member id round.
    assert_eq!(c.join_group(3, "connect", "", "connect", ("p", b"x")).0, NONE);
    assert_eq!(c.offset_delete("connect", &[("t", 0)]).0, NON_EMPTY_GROUP);
}

#[test]
fn describe_producers_tells_each_partitions_producers() {
    use kwire::messages::describe_producers::{DescribeProducersRequest, TopicRequest};
    use kwire::messages::init_producer_id::InitProducerIdRequest;
    let (_broker, mut c) = started();
    let frame = c.call(
        &InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: 60_000,
            ..Default::default()
        },
        4,
    );
    let r = answer!(frame, InitProducerId, 4);
    let (pid, epoch) = (r.producer_id(), r.producer_epoch());
    for seq in [0, 2] {
        let records = [NewRecord { key: None, value: Some(b"v"), headers: &[], timestamp: None }; 2];
        let mut b = BatchBuilder::new(0, 1_700_000_000_000 + i64::from(seq), &records);
        b.producer_id = pid;
        b.producer_epoch = epoch;
        b.base_sequence = seq;
        let mut bytes = Vec::new();
        b.encode_to_vec(&mut bytes).unwrap();
        assert_eq!(c.produce("t", 1, &bytes).0, NONE);
    }
    assert_eq!(c.produce("t", 0, &batch(&[(None, "plain")])).0, NONE);
    let topics = [
        TopicRequest { name: "t".into(), partition_indexes: (&[0, 1, 5]).into(), ..Default::default() },
        TopicRequest { name: "nope".into(), partition_indexes: (&[0]).into(), ..Default::default() },
    ];
    let frame = c.call(&DescribeProducersRequest { topics: (&topics).into(), ..Default::default() }, 0);
    let r = answer!(frame, DescribeProducers, 0);
    let parts: Vec<(String, i32, i16, Vec<(i64, i32, i32, i64, i64)>)> = r
        .topics()
        .iter()
        .flat_map(|t| {
            t.partitions()
                .iter()
                .map(|p| {
                    let producers = p
                        .active_producers()
                        .iter()
                        .map(|s| {
                            (
                                s.producer_id(),
                                s.producer_epoch(),
                                s.last_sequence(),
                                s.last_timestamp(),
                                s.current_txn_start_offset(),
                            )
                        })
                        .collect();
                    (t.name().to_string(), p.partition_index(), p.error_code(), producers)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        parts,
        vec![
            ("t".into(), 0, NONE, vec![]),
            ("t".into(), 1, NONE, vec![(pid, i32::from(epoch), 3, 1_700_000_000_002, -1)]),
            ("t".into(), 5, UNKNOWN_TOPIC_OR_PARTITION, vec![]),
            ("nope".into(), 0, UNKNOWN_TOPIC_OR_PARTITION, vec![]),
        ]
    );
}

#[test]
fn elect_leaders_is_never_needed_on_one_node() {
    use kwire::messages::elect_leaders::{ElectLeadersRequest, TopicPartitions};
    let (_broker, mut c) = started();
    let wanted = [
        TopicPartitions { topic: "t".into(), partitions: (&[0, 1, 4]).into(), ..Default::default() },
        TopicPartitions { topic: "nope".into(), partitions: (&[0]).into(), ..Default::default() },
    ];
    for (v, election_type) in [(0, 0), (1, 0), (2, 1)] {
        let req = ElectLeadersRequest {
            election_type,
            topic_partitions: Some((&wanted).into()),
            timeout_ms: 1000,
            ..Default::default()
        };
        let frame = c.call(&req, v);
        let r = answer!(frame, ElectLeaders, v);
        assert_eq!(r.error_code(), NONE);
        let got: Vec<(String, i32, i16)> = r
            .replica_election_results()
            .iter()
            .flat_map(|t| {
                t.partition_result()
                    .iter()
                    .map(|p| (t.topic().to_string(), p.partition_id(), p.error_code()))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("t".into(), 0, ELECTION_NOT_NEEDED),
                ("t".into(), 1, ELECTION_NOT_NEEDED),
                ("t".into(), 4, UNKNOWN_TOPIC_OR_PARTITION),
                ("nope".into(), 0, UNKNOWN_TOPIC_OR_PARTITION),
            ],
            "v{v}"
        );
    }
    // Every partition: those that need no election are left out.
    let frame =
        c.call(&ElectLeadersRequest { election_type: 0, topic_partitions: None, ..Default::default() }, 2);
    let r = answer!(frame, ElectLeaders, 2);
    assert_eq!((r.error_code(), r.replica_election_results().iter().count()), (NONE, 0));
    // An unknown election type.
    let frame =
        c.call(&ElectLeadersRequest { election_type: 5, topic_partitions: None, ..Default::default() }, 2);
    assert_eq!(answer!(frame, ElectLeaders, 2).error_code(), INVALID_REQUEST);
}

/// (resource type, name, pattern type, principal, host, operation, permission)
type Acl<'a> = (i8, &'a str, i8, &'a str, &'a str, i8, i8);

fn create_acls(c: &mut Conn, acls: &[Acl<'_>]) -> Vec<i16> {
    use kwire::messages::create_acls::{AclCreation, CreateAclsRequest};
    let creations: Vec<AclCreation<'_>> = acls
        .iter()
        .map(|&(ty, name, pattern, principal, host, op, perm)| AclCreation {
            resource_type: ty,
            resource_name: name.into(),
            resource_pattern_type: pattern,
            principal: principal.into(),
            host: host.into(),
            operation: op,
            permission_type: perm,
            ..Default::default()
        })
        .collect();
    let frame = c.call(&CreateAclsRequest { creations: creations.into(), ..Default::default() }, 3);
    answer!(frame, CreateAcls, 3).results().iter().map(|r| r.error_code()).collect()
}

/// DescribeAcls v3 with a filter: (error, the bindings found, sorted).
fn describe_acls(
    c: &mut Conn,
    f: (i8, Option<&str>, i8, Option<&str>, i8),
) -> (i16, Vec<(i8, String, i8, String, i8, i8)>) {
    use kwire::messages::describe_acls::DescribeAclsRequest;
    let req = DescribeAclsRequest {
        resource_type_filter: f.0,
        resource_name_filter: f.1.map(Into::into),
        pattern_type_filter: f.2,
        principal_filter: f.3.map(Into::into),
        host_filter: None,
        operation: f.4,
        permission_type: 1,
        ..Default::default()
    };
    let frame = c.call(&req, 3);
    let r = answer!(frame, DescribeAcls, 3);
    let mut found: Vec<_> = r
        .resources()
        .iter()
        .flat_map(|res| {
            res.acls()
                .iter()
                .map(|a| {
                    (
                        res.resource_type(),
                        res.resource_name().to_string(),
                        res.pattern_type(),
                        a.principal().to_string(),
                        a.operation(),
                        a.permission_type(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    found.sort();
    (r.error_code(), found)
}

#[test]
fn acls_are_created_described_and_deleted() {
    use kwire::messages::delete_acls::{DeleteAclsFilter, DeleteAclsRequest};
    let (_broker, mut c) = started();
    const TOPIC: i8 = 2;
    const GROUP: i8 = 3;
    const CLUSTER: i8 = 4;
    const ANY: i8 = 1;
    const MATCH: i8 = 2;
    const LITERAL: i8 = 3;
    const PREFIXED: i8 = 4;
    const READ: i8 = 3;
    const WRITE: i8 = 4;
    const ALTER: i8 = 7;
    const DENY: i8 = 2;
    const ALLOW: i8 = 3;
    let codes = create_acls(
        &mut c,
        &[
            (TOPIC, "orders", LITERAL, "User:alice", "*", READ, ALLOW),
            (TOPIC, "ord", PREFIXED, "User:bob", "*", WRITE, DENY),
            (TOPIC, "*", LITERAL, "User:carol", "*", READ, ALLOW),
            (GROUP, "g", LITERAL, "User:alice", "*", READ, ALLOW),
            (CLUSTER, "kafka-cluster", LITERAL, "User:admin", "*", ALTER, ALLOW),
            // Refused, each with INVALID_REQUEST:
            (TOPIC, "orders", LITERAL, "alice", "*", READ, ALLOW),
            (CLUSTER, "other", LITERAL, "User:admin", "*", ALTER, ALLOW),
            (TOPIC, "", LITERAL, "User:alice", "*", READ, ALLOW),
        ],
    );
    assert_eq!(codes, [&[NONE; 5][..], &[INVALID_REQUEST; 3][..]].concat());
    // No binding at all (ANY or MATCH where a binding needs a value): the whole request
    // fails with UNKNOWN_SERVER_ERROR, the good creation beside it too, as in Kafka.
    for unbindable in [
        (ANY, "orders", LITERAL, "User:alice", "*", READ, ALLOW),
        (TOPIC, "orders", MATCH, "User:alice", "*", READ, ALLOW),
        (TOPIC, "orders", LITERAL, "User:alice", "*", ANY, ALLOW),
        (TOPIC, "orders", LITERAL, "User:alice", "*", READ, ANY),
    ] {
        let good = (TOPIC, "more", LITERAL, "User:alice", "*", READ, ALLOW);
        assert_eq!(create_acls(&mut c, &[good, unbindable]), [-1, -1], "{unbindable:?}");
    }
    let (code, all) = describe_acls(&mut c, (ANY, None, ANY, None, ANY));
    assert_eq!(code, NONE);
    assert_eq!(all.len(), 5, "{all:?}");
    // LITERAL matches the name exactly.
    let (_, literal) = describe_acls(&mut c, (TOPIC, Some("orders"), LITERAL, None, ANY));
    assert_eq!(literal, vec![(TOPIC, "orders".into(), LITERAL, "User:alice".into(), READ, ALLOW)]);
    // MATCH: everything that applies to the topic "orders": itself, the wildcard, the prefix.
    let (_, matched) = describe_acls(&mut c, (TOPIC, Some("orders"), MATCH, None, ANY));
    assert_eq!(
        matched,
        vec![
            (TOPIC, "*".into(), LITERAL, "User:carol".into(), READ, ALLOW),
            (TOPIC, "ord".into(), PREFIXED, "User:bob".into(), WRITE, DENY),
            (TOPIC, "orders".into(), LITERAL, "User:alice".into(), READ, ALLOW),
        ]
    );
    let (_, by_principal) = describe_acls(&mut c, (ANY, None, ANY, Some("User:alice"), ANY));
    assert_eq!(by_principal.len(), 2);
    let (_, by_operation) = describe_acls(&mut c, (ANY, None, ANY, None, WRITE));
    assert_eq!(by_operation.len(), 1);
    // A filter of an unknown type is refused.
    assert_eq!(describe_acls(&mut c, (0, None, ANY, None, ANY)).0, INVALID_REQUEST);

    let filters = [
        DeleteAclsFilter {
            resource_type_filter: ANY,
            resource_name_filter: None,
            pattern_type_filter: ANY,
            principal_filter: Some("User:alice".into()),
            host_filter: None,
            operation: ANY,
            permission_type: ANY,
            ..Default::default()
        },
        DeleteAclsFilter {
            resource_type_filter: ANY,
            resource_name_filter: None,
            pattern_type_filter: 0,
            principal_filter: None,
            host_filter: None,
            operation: ANY,
            permission_type: ANY,
            ..Default::default()
        },
        DeleteAclsFilter {
            resource_type_filter: TOPIC,
            resource_name_filter: Some("nothing".into()),
            pattern_type_filter: LITERAL,
            principal_filter: None,
            host_filter: None,
            operation: ANY,
            permission_type: ANY,
            ..Default::default()
        },
    ];
    let frame = c.call(&DeleteAclsRequest { filters: (&filters).into(), ..Default::default() }, 3);
    let r = answer!(frame, DeleteAcls, 3);
    let results: Vec<(i16, Vec<String>)> = r
        .filter_results()
        .iter()
        .map(|f| {
            (
                f.error_code(),
                f.matching_acls()
                    .iter()
                    .map(|m| std::format!("{}:{}", m.resource_name(), m.principal()))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0].0, NONE);
    let mut gone = results[0].1.clone();
    gone.sort();
    assert_eq!(gone, vec!["g:User:alice".to_string(), "orders:User:alice".to_string()]);
    assert_eq!(results[1], (INVALID_REQUEST, vec![]));
    assert_eq!(results[2], (NONE, vec![]));
    let (_, left) = describe_acls(&mut c, (ANY, None, ANY, None, ANY));
    assert_eq!(left.len(), 3);
    // v1, before flexible versions.
    let codes = {
        use kwire::messages::create_acls::{AclCreation, CreateAclsRequest};
        let creations = [AclCreation {
            resource_type: TOPIC,
            resource_name: "v1".into(),
            resource_pattern_type: PREFIXED,
            principal: "User:dave".into(),
            host: "*".into(),
            operation: READ,
            permission_type: ALLOW,
            ..Default::default()
        }];
        let frame = c.call(&CreateAclsRequest { creations: (&creations).into(), ..Default::default() }, 1);
        answer!(frame, CreateAcls, 1).results().iter().map(|r| r.error_code()).collect::<Vec<_>>()
    };
    assert_eq!(codes, vec![NONE]);
    let (_, v1) = describe_acls(&mut c, (TOPIC, Some("v1-topic"), MATCH, None, ANY));
    assert_eq!(
        v1,
        vec![
            (TOPIC, "*".into(), LITERAL, "User:carol".into(), READ, ALLOW),
            (TOPIC, "v1".into(), PREFIXED, "User:dave".into(), READ, ALLOW),
        ]
    );
}
