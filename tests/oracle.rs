//! kwire held against an independent implementation of the protocol, the `kafka-protocol`
//! crate, over every version of the eight messages (ApiVersions, ListGroups, ListOffsets
//! and Metadata, requests and responses).
//!
//! For many generated values per version (seeded xorshift + `arbitrary`, as in
//! `tests/roundtrip.rs`): kwire's bytes decode in kafka-protocol to the same value;
//! kafka-protocol's bytes are byte for byte the same (both encodings are canonical); and
//! kwire's view and reference decoder read kafka-protocol's bytes back to the same value.
//! Values are compared field by field through a small hand-written mapping between the two
//! crates' types (below). The real-client vectors are decoded by both as well.
//!
//! Where the two disagree, `docs/oracle.md` says which one follows Apache Kafka; those
//! cases have tests of their own at the end of this file.

use std::collections::BTreeMap;
use std::fmt::Debug;

use arbitrary::{Arbitrary, Unstructured};
use bytes::Bytes as KpBytes;
use kafka_protocol::messages as kp;
use kafka_protocol::messages::{BrokerId, GroupId, TopicName};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kwire::messages::*;
use kwire::testing::AsVersion;
use kwire::{AnyBody, ApiKey, Body};
use kwire::{DecodeErrorKind, List, RawTaggedField, Str};

mod common;

use common::XorShift;

/// Values per version.
const CASES: usize = 150;

// ------------------------------------------------------------------ the mapping

/// kafka-protocol keys unknown tagged fields by `i32`: tags of 2^31 and above become
/// negative there and are lost on encoding (see `high_tags_are_lost_by_kafka_protocol`),
/// so the generated values have their tags fixed first ([`FixTags`]).
fn tags_to_kp(tags: &[RawTaggedField<'_>]) -> BTreeMap<i32, KpBytes> {
    tags.iter()
        .map(|t| {
            let tag = i32::try_from(t.tag).expect("tags are below 2^31 here");
            (tag, KpBytes::copy_from_slice(&t.data))
        })
        .collect()
}

fn tags_from_kp<'a>(tags: &BTreeMap<i32, KpBytes>) -> List<'a, RawTaggedField<'a>> {
    tags.iter()
        .map(|(&tag, data)| RawTaggedField { tag: tag as u32, data: List::Owned(data.to_vec()) })
        .collect()
}

fn s_to_kp(s: &Str<'_>) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn s_from_kp<'a>(s: &StrBytes) -> Str<'a> {
    Str::Owned(s.to_string())
}

fn list<T, U>(items: &[T], f: impl Fn(&T) -> U) -> Vec<U> {
    items.iter().map(f).collect()
}

fn list_from<'a, T, U>(items: &[T], f: impl Fn(&T) -> U) -> List<'a, U> {
    List::Owned(items.iter().map(f).collect())
}

/// The two directions of the mapping for one message.
trait Mapping: Sized {
    type Kp: Encodable + Decodable + Debug + Clone;
    fn to_kp(&self) -> Self::Kp;
    fn from_kp(k: &Self::Kp) -> Self;
}

impl Mapping for ApiVersionsRequest<'_> {
    type Kp = kp::ApiVersionsRequest;
    fn to_kp(&self) -> Self::Kp {
        kp::ApiVersionsRequest::default()
            .with_client_software_name(s_to_kp(&self.client_software_name))
            .with_client_software_version(s_to_kp(&self.client_software_version))
            .with_unknown_tagged_fields(tags_to_kp(&self.unknown_tagged_fields))
    }
    fn from_kp(k: &Self::Kp) -> Self {
        ApiVersionsRequest {
            client_software_name: s_from_kp(&k.client_software_name),
            client_software_version: s_from_kp(&k.client_software_version),
            unknown_tagged_fields: tags_from_kp(&k.unknown_tagged_fields),
            // Version 5 fields, which kafka-protocol 0.18 (Kafka 4.1) does not have.
            ..Default::default()
        }
    }
}

impl Mapping for ApiVersionsResponse<'_> {
    type Kp = kp::ApiVersionsResponse;
    fn to_kp(&self) -> Self::Kp {
        use kp::api_versions_response::{ApiVersion, FinalizedFeatureKey, SupportedFeatureKey};
        kp::ApiVersionsResponse::default()
            .with_error_code(self.error_code)
            .with_api_keys(list(&self.api_keys, |a| {
                ApiVersion::default()
                    .with_api_key(a.api_key)
                    .with_min_version(a.min_version)
                    .with_max_version(a.max_version)
                    .with_unknown_tagged_fields(tags_to_kp(&a.unknown_tagged_fields))
            }))
            .with_throttle_time_ms(self.throttle_time_ms)
            .with_supported_features(list(&self.supported_features, |f| {
                SupportedFeatureKey::default()
                    .with_name(s_to_kp(&f.name))
                    .with_min_version(f.min_version)
                    .with_max_version(f.max_version)
                    .with_unknown_tagged_fields(tags_to_kp(&f.unknown_tagged_fields))
            }))
            .with_finalized_features_epoch(self.finalized_features_epoch)
            .with_finalized_features(list(&self.finalized_features, |f| {
                FinalizedFeatureKey::default()
                    .with_name(s_to_kp(&f.name))
                    .with_max_version_level(f.max_version_level)
                    .with_min_version_level(f.min_version_level)
                    .with_unknown_tagged_fields(tags_to_kp(&f.unknown_tagged_fields))
            }))
            .with_zk_migration_ready(self.zk_migration_ready)
            .with_unknown_tagged_fields(tags_to_kp(&self.unknown_tagged_fields))
    }
    fn from_kp(k: &Self::Kp) -> Self {
        use api_versions::{ApiVersion, FinalizedFeatureKey, SupportedFeatureKey};
        ApiVersionsResponse {
            error_code: k.error_code,
            api_keys: list_from(&k.api_keys, |a| ApiVersion {
                api_key: a.api_key,
                min_version: a.min_version,
                max_version: a.max_version,
                unknown_tagged_fields: tags_from_kp(&a.unknown_tagged_fields),
            }),
            throttle_time_ms: k.throttle_time_ms,
            supported_features: list_from(&k.supported_features, |f| SupportedFeatureKey {
                name: s_from_kp(&f.name),
                min_version: f.min_version,
                max_version: f.max_version,
                unknown_tagged_fields: tags_from_kp(&f.unknown_tagged_fields),
            }),
            finalized_features_epoch: k.finalized_features_epoch,
            finalized_features: list_from(&k.finalized_features, |f| FinalizedFeatureKey {
                name: s_from_kp(&f.name),
                max_version_level: f.max_version_level,
                min_version_level: f.min_version_level,
                unknown_tagged_fields: tags_from_kp(&f.unknown_tagged_fields),
            }),
            zk_migration_ready: k.zk_migration_ready,
            unknown_tagged_fields: tags_from_kp(&k.unknown_tagged_fields),
        }
    }
}

impl Mapping for ListGroupsRequest<'_> {
    type Kp = kp::ListGroupsRequest;
    fn to_kp(&self) -> Self::Kp {
        kp::ListGroupsRequest::default()
            .with_states_filter(list(&self.states_filter, s_to_kp))
            .with_types_filter(list(&self.types_filter, s_to_kp))
            .with_unknown_tagged_fields(tags_to_kp(&self.unknown_tagged_fields))
    }
    fn from_kp(k: &Self::Kp) -> Self {
        ListGroupsRequest {
            states_filter: list_from(&k.states_filter, s_from_kp),
            types_filter: list_from(&k.types_filter, s_from_kp),
            unknown_tagged_fields: tags_from_kp(&k.unknown_tagged_fields),
        }
    }
}

impl Mapping for ListGroupsResponse<'_> {
    type Kp = kp::ListGroupsResponse;
    fn to_kp(&self) -> Self::Kp {
        kp::ListGroupsResponse::default()
            .with_throttle_time_ms(self.throttle_time_ms)
            .with_error_code(self.error_code)
            .with_groups(list(&self.groups, |g| {
                kp::list_groups_response::ListedGroup::default()
                    .with_group_id(GroupId(s_to_kp(&g.group_id)))
                    .with_protocol_type(s_to_kp(&g.protocol_type))
                    .with_group_state(s_to_kp(&g.group_state))
                    .with_group_type(s_to_kp(&g.group_type))
                    .with_unknown_tagged_fields(tags_to_kp(&g.unknown_tagged_fields))
            }))
            .with_unknown_tagged_fields(tags_to_kp(&self.unknown_tagged_fields))
    }
    fn from_kp(k: &Self::Kp) -> Self {
        ListGroupsResponse {
            throttle_time_ms: k.throttle_time_ms,
            error_code: k.error_code,
            groups: list_from(&k.groups, |g| list_groups::ListedGroup {
                group_id: s_from_kp(&g.group_id.0),
                protocol_type: s_from_kp(&g.protocol_type),
                group_state: s_from_kp(&g.group_state),
                group_type: s_from_kp(&g.group_type),
                unknown_tagged_fields: tags_from_kp(&g.unknown_tagged_fields),
            }),
            unknown_tagged_fields: tags_from_kp(&k.unknown_tagged_fields),
        }
    }
}

impl Mapping for ListOffsetsRequest<'_> {
    type Kp = kp::ListOffsetsRequest;
    fn to_kp(&self) -> Self::Kp {
        use kp::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
        kp::ListOffsetsRequest::default()
            .with_replica_id(BrokerId(self.replica_id))
            .with_isolation_level(self.isolation_level)
            .with_topics(list(&self.topics, |t| {
                ListOffsetsTopic::default()
                    .with_name(TopicName(s_to_kp(&t.name)))
                    .with_partitions(list(&t.partitions, |p| {
                        ListOffsetsPartition::default()
                            .with_partition_index(p.partition_index)
                            .with_current_leader_epoch(p.current_leader_epoch)
                            .with_timestamp(p.timestamp)
                            .with_unknown_tagged_fields(tags_to_kp(&p.unknown_tagged_fields))
                    }))
                    .with_unknown_tagged_fields(tags_to_kp(&t.unknown_tagged_fields))
            }))
            .with_timeout_ms(self.timeout_ms)
            .with_unknown_tagged_fields(tags_to_kp(&self.unknown_tagged_fields))
    }
    fn from_kp(k: &Self::Kp) -> Self {
        use list_offsets::{ListOffsetsPartition, ListOffsetsTopic};
        ListOffsetsRequest {
            replica_id: k.replica_id.0,
            isolation_level: k.isolation_level,
            topics: list_from(&k.topics, |t| ListOffsetsTopic {
                name: s_from_kp(&t.name.0),
                partitions: list_from(&t.partitions, |p| ListOffsetsPartition {
                    partition_index: p.partition_index,
                    current_leader_epoch: p.current_leader_epoch,
                    timestamp: p.timestamp,
                    unknown_tagged_fields: tags_from_kp(&p.unknown_tagged_fields),
                }),
                unknown_tagged_fields: tags_from_kp(&t.unknown_tagged_fields),
            }),
            timeout_ms: k.timeout_ms,
            unknown_tagged_fields: tags_from_kp(&k.unknown_tagged_fields),
        }
    }
}

impl Mapping for ListOffsetsResponse<'_> {
    type Kp = kp::ListOffsetsResponse;
    fn to_kp(&self) -> Self::Kp {
        use kp::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
        kp::ListOffsetsResponse::default()
            .with_throttle_time_ms(self.throttle_time_ms)
            .with_topics(list(&self.topics, |t| {
                ListOffsetsTopicResponse::default()
                    .with_name(TopicName(s_to_kp(&t.name)))
                    .with_partitions(list(&t.partitions, |p| {
                        ListOffsetsPartitionResponse::default()
                            .with_partition_index(p.partition_index)
                            .with_error_code(p.error_code)
                            .with_timestamp(p.timestamp)
                            .with_offset(p.offset)
                            .with_leader_epoch(p.leader_epoch)
                            .with_unknown_tagged_fields(tags_to_kp(&p.unknown_tagged_fields))
                    }))
                    .with_unknown_tagged_fields(tags_to_kp(&t.unknown_tagged_fields))
            }))
            .with_unknown_tagged_fields(tags_to_kp(&self.unknown_tagged_fields))
    }
    fn from_kp(k: &Self::Kp) -> Self {
        use list_offsets::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
        ListOffsetsResponse {
            throttle_time_ms: k.throttle_time_ms,
            topics: list_from(&k.topics, |t| ListOffsetsTopicResponse {
                name: s_from_kp(&t.name.0),
                partitions: list_from(&t.partitions, |p| ListOffsetsPartitionResponse {
                    partition_index: p.partition_index,
                    error_code: p.error_code,
                    timestamp: p.timestamp,
                    offset: p.offset,
                    leader_epoch: p.leader_epoch,
                    unknown_tagged_fields: tags_from_kp(&p.unknown_tagged_fields),
                }),
                unknown_tagged_fields: tags_from_kp(&t.unknown_tagged_fields),
            }),
            unknown_tagged_fields: tags_from_kp(&k.unknown_tagged_fields),
        }
    }
}

impl Mapping for MetadataRequest<'_> {
    type Kp = kp::MetadataRequest;
    fn to_kp(&self) -> Self::Kp {
        kp::MetadataRequest::default()
            .with_topics(self.topics.as_ref().map(|topics| {
                list(topics, |t| {
                    kp::metadata_request::MetadataRequestTopic::default()
                        .with_topic_id(uuid::Uuid::from_bytes(t.topic_id.0))
                        .with_name(t.name.as_ref().map(|n| TopicName(s_to_kp(n))))
                        .with_unknown_tagged_fields(tags_to_kp(&t.unknown_tagged_fields))
                })
            }))
            .with_allow_auto_topic_creation(self.allow_auto_topic_creation)
            .with_include_cluster_authorized_operations(self.include_cluster_authorized_operations)
            .with_include_topic_authorized_operations(self.include_topic_authorized_operations)
            .with_unknown_tagged_fields(tags_to_kp(&self.unknown_tagged_fields))
    }
    fn from_kp(k: &Self::Kp) -> Self {
        MetadataRequest {
            topics: k.topics.as_ref().map(|topics| {
                list_from(topics, |t| metadata::MetadataRequestTopic {
                    topic_id: kwire::Uuid(*t.topic_id.as_bytes()),
                    name: t.name.as_ref().map(|n| s_from_kp(&n.0)),
                    unknown_tagged_fields: tags_from_kp(&t.unknown_tagged_fields),
                })
            }),
            allow_auto_topic_creation: k.allow_auto_topic_creation,
            include_cluster_authorized_operations: k.include_cluster_authorized_operations,
            include_topic_authorized_operations: k.include_topic_authorized_operations,
            unknown_tagged_fields: tags_from_kp(&k.unknown_tagged_fields),
        }
    }
}

impl Mapping for MetadataResponse<'_> {
    type Kp = kp::MetadataResponse;
    fn to_kp(&self) -> Self::Kp {
        use kp::metadata_response::{
            MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
        };
        let ids = |v: &[i32]| list(v, |n| BrokerId(*n));
        kp::MetadataResponse::default()
            .with_throttle_time_ms(self.throttle_time_ms)
            .with_brokers(list(&self.brokers, |b| {
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(b.node_id))
                    .with_host(s_to_kp(&b.host))
                    .with_port(b.port)
                    .with_rack(b.rack.as_ref().map(s_to_kp))
                    .with_unknown_tagged_fields(tags_to_kp(&b.unknown_tagged_fields))
            }))
            .with_cluster_id(self.cluster_id.as_ref().map(s_to_kp))
            .with_controller_id(BrokerId(self.controller_id))
            .with_topics(list(&self.topics, |t| {
                MetadataResponseTopic::default()
                    .with_error_code(t.error_code)
                    .with_name(t.name.as_ref().map(|n| TopicName(s_to_kp(n))))
                    .with_topic_id(uuid::Uuid::from_bytes(t.topic_id.0))
                    .with_is_internal(t.is_internal)
                    .with_partitions(list(&t.partitions, |p| {
                        MetadataResponsePartition::default()
                            .with_error_code(p.error_code)
                            .with_partition_index(p.partition_index)
                            .with_leader_id(BrokerId(p.leader_id))
                            .with_leader_epoch(p.leader_epoch)
                            .with_replica_nodes(ids(&p.replica_nodes))
                            .with_isr_nodes(ids(&p.isr_nodes))
                            .with_offline_replicas(ids(&p.offline_replicas))
                            .with_unknown_tagged_fields(tags_to_kp(&p.unknown_tagged_fields))
                    }))
                    .with_topic_authorized_operations(t.topic_authorized_operations)
                    .with_unknown_tagged_fields(tags_to_kp(&t.unknown_tagged_fields))
            }))
            .with_cluster_authorized_operations(self.cluster_authorized_operations)
            .with_error_code(self.error_code)
            .with_unknown_tagged_fields(tags_to_kp(&self.unknown_tagged_fields))
    }
    fn from_kp(k: &Self::Kp) -> Self {
        use metadata::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic};
        let ids = |v: &[BrokerId]| list_from(v, |n| n.0);
        MetadataResponse {
            throttle_time_ms: k.throttle_time_ms,
            brokers: list_from(&k.brokers, |b| MetadataResponseBroker {
                node_id: b.node_id.0,
                host: s_from_kp(&b.host),
                port: b.port,
                rack: b.rack.as_ref().map(s_from_kp),
                unknown_tagged_fields: tags_from_kp(&b.unknown_tagged_fields),
            }),
            cluster_id: k.cluster_id.as_ref().map(s_from_kp),
            controller_id: k.controller_id.0,
            topics: list_from(&k.topics, |t| MetadataResponseTopic {
                error_code: t.error_code,
                name: t.name.as_ref().map(|n| s_from_kp(&n.0)),
                topic_id: kwire::Uuid(*t.topic_id.as_bytes()),
                is_internal: t.is_internal,
                partitions: list_from(&t.partitions, |p| MetadataResponsePartition {
                    error_code: p.error_code,
                    partition_index: p.partition_index,
                    leader_id: p.leader_id.0,
                    leader_epoch: p.leader_epoch,
                    replica_nodes: ids(&p.replica_nodes),
                    isr_nodes: ids(&p.isr_nodes),
                    offline_replicas: ids(&p.offline_replicas),
                    unknown_tagged_fields: tags_from_kp(&p.unknown_tagged_fields),
                }),
                topic_authorized_operations: t.topic_authorized_operations,
                unknown_tagged_fields: tags_from_kp(&t.unknown_tagged_fields),
            }),
            cluster_authorized_operations: k.cluster_authorized_operations,
            error_code: k.error_code,
            unknown_tagged_fields: tags_from_kp(&k.unknown_tagged_fields),
        }
    }
}

// ------------------------------------------------------------------ the comparison

fn kp_encode<K: Encodable>(k: &K, version: i16) -> anyhow_free::Result<Vec<u8>> {
    let mut out = Vec::new();
    k.encode(&mut out, version).map_err(|e| e.to_string())?;
    let size = k.compute_size(version).map_err(|e| e.to_string())?;
    assert_eq!(size, out.len(), "kafka-protocol's compute_size");
    Ok(out)
}

/// kafka-protocol's encoder alone, with what its size step says.
fn kp_encode_raw<K: Encodable>(k: &K, version: i16) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    k.encode(&mut out, version).unwrap();
    (out, k.compute_size(version).unwrap())
}

fn kp_decode<K: Decodable>(bytes: &[u8], version: i16) -> anyhow_free::Result<K> {
    let mut rest = bytes;
    let k = K::decode(&mut rest, version).map_err(|e| e.to_string())?;
    if !rest.is_empty() {
        return Err(format!("{} bytes left over", rest.len()));
    }
    Ok(k)
}

/// `Result` with kafka-protocol's errors as text (it uses `anyhow`, which this crate does
/// not depend on).
mod anyhow_free {
    pub type Result<T> = std::result::Result<T, String>;
}

// ------------------------------------------------------------------ generated values

/// Makes the unknown tagged fields of a generated value (at every depth) valid for both
/// crates: below 2^31, ascending, unique, and clear of the struct's known tags. Without
/// this most values of flexible versions would be refused for their random tags, and
/// those with a tag of 2^31 or more cannot be held in kafka-protocol at all.
trait FixTags {
    fn fix_tags(&mut self);
    /// Replaces nulls the version cannot carry (kwire refuses them when encoding).
    fn fix_nulls(&mut self, _version: i16) {}
}

fn owned<'v, T: Clone>(list: &'v mut List<'_, T>) -> &'v mut Vec<T> {
    if let List::Borrowed(items) = list {
        *list = List::Owned(items.to_vec());
    }
    match list {
        List::Owned(items) => items,
        _ => unreachable!(),
    }
}

fn fix(tags: &mut List<'_, RawTaggedField<'_>>, known: &[u32]) {
    let tags = owned(tags);
    for t in tags.iter_mut() {
        t.tag &= 0x7fff_ffff;
    }
    tags.sort_by_key(|t| t.tag);
    tags.dedup_by_key(|t| t.tag);
    tags.retain(|t| !known.contains(&t.tag));
}

impl FixTags for ApiVersionsRequest<'_> {
    fn fix_tags(&mut self) {
        fix(&mut self.unknown_tagged_fields, &[]);
    }
}

impl FixTags for ApiVersionsResponse<'_> {
    fn fix_tags(&mut self) {
        fix(&mut self.unknown_tagged_fields, &[0, 1, 2, 3]);
        owned(&mut self.api_keys).iter_mut().for_each(|a| fix(&mut a.unknown_tagged_fields, &[]));
        owned(&mut self.supported_features).iter_mut().for_each(|f| fix(&mut f.unknown_tagged_fields, &[]));
        owned(&mut self.finalized_features).iter_mut().for_each(|f| fix(&mut f.unknown_tagged_fields, &[]));
    }
}

impl FixTags for ListGroupsRequest<'_> {
    fn fix_tags(&mut self) {
        fix(&mut self.unknown_tagged_fields, &[]);
    }
}

impl FixTags for ListGroupsResponse<'_> {
    fn fix_tags(&mut self) {
        fix(&mut self.unknown_tagged_fields, &[]);
        owned(&mut self.groups).iter_mut().for_each(|g| fix(&mut g.unknown_tagged_fields, &[]));
    }
}

impl FixTags for ListOffsetsRequest<'_> {
    fn fix_tags(&mut self) {
        fix(&mut self.unknown_tagged_fields, &[]);
        for t in owned(&mut self.topics) {
            fix(&mut t.unknown_tagged_fields, &[]);
            owned(&mut t.partitions).iter_mut().for_each(|p| fix(&mut p.unknown_tagged_fields, &[]));
        }
    }
}

impl FixTags for ListOffsetsResponse<'_> {
    fn fix_tags(&mut self) {
        fix(&mut self.unknown_tagged_fields, &[]);
        for t in owned(&mut self.topics) {
            fix(&mut t.unknown_tagged_fields, &[]);
            owned(&mut t.partitions).iter_mut().for_each(|p| fix(&mut p.unknown_tagged_fields, &[]));
        }
    }
}

impl FixTags for MetadataRequest<'_> {
    fn fix_tags(&mut self) {
        fix(&mut self.unknown_tagged_fields, &[]);
        if let Some(topics) = self.topics.as_mut() {
            owned(topics).iter_mut().for_each(|t| fix(&mut t.unknown_tagged_fields, &[]));
        }
    }
    fn fix_nulls(&mut self, version: i16) {
        if version < 1 && self.topics.is_none() {
            self.topics = Some(List::Borrowed(&[]));
        }
        if let Some(topics) = self.topics.as_mut() {
            for t in owned(topics) {
                if version < 10 && t.name.is_none() {
                    t.name = Some(Str::Borrowed(""));
                }
            }
        }
    }
}

impl FixTags for MetadataResponse<'_> {
    fn fix_tags(&mut self) {
        fix(&mut self.unknown_tagged_fields, &[]);
        owned(&mut self.brokers).iter_mut().for_each(|b| fix(&mut b.unknown_tagged_fields, &[]));
        for t in owned(&mut self.topics) {
            fix(&mut t.unknown_tagged_fields, &[]);
            owned(&mut t.partitions).iter_mut().for_each(|p| fix(&mut p.unknown_tagged_fields, &[]));
        }
    }
    fn fix_nulls(&mut self, version: i16) {
        for t in owned(&mut self.topics) {
            if version < 12 && t.name.is_none() {
                t.name = Some(Str::Borrowed(""));
            }
        }
    }
}

struct Tally {
    compared: usize,
    refused: usize,
}

macro_rules! oracle_test {
    ($test:ident, $ty:ident, $view:ident, $seed:expr) => {
        #[test]
        fn $test() {
            let mut rng = XorShift($seed);
            let versions = <$ty as Body>::VERSIONS;
            // Versions both sides know: kafka-protocol 0.18 follows Kafka 4.1.
            let theirs = <<$ty as Mapping>::Kp as kafka_protocol::protocol::Message>::VERSIONS;
            for version in versions.min.max(theirs.min)..=versions.max.min(theirs.max) {
                let ver = <$ty as Body>::ver(version).unwrap();
                let mut tally = Tally { compared: 0, refused: 0 };
                for _ in 0..CASES {
                    let data = rng.input(768);
                    let Ok(generated) = $ty::arbitrary(&mut Unstructured::new(&data)) else { continue };
                    let mut value = generated.as_version(ver);
                    value.fix_tags();
                    value.fix_nulls(version);
                    compare(
                        &value,
                        version,
                        &mut tally,
                        |b| $view::new(b, version).map(drop),
                        |b| $ty::decode(b, version),
                    );
                }
                assert!(
                    tally.compared >= CASES * 9 / 10,
                    "{} v{version}: only {} values compared, {} refused by kwire",
                    <$ty as Body>::NAME,
                    tally.compared,
                    tally.refused
                );
            }
        }
    };
}

fn compare<T>(
    value: &T,
    version: i16,
    tally: &mut Tally,
    view: impl Fn(&[u8]) -> Result<(), kwire::DecodeError>,
    reference: impl Fn(&[u8]) -> Result<T, kwire::DecodeError>,
) where
    T: Mapping + PartialEq + Debug + Body,
{
    let Ok(n) = value.encoded_len(version) else {
        tally.refused += 1;
        return;
    };
    let mapped = value.to_kp();
    let mut kwire_bytes = vec![0u8; n];
    value.encode(version, &mut kwire_bytes).unwrap();

    // kafka-protocol reads kwire's bytes as the same value.
    let decoded: T::Kp = kp_decode(&kwire_bytes, version)
        .unwrap_or_else(|e| panic!("{} v{version}: kafka-protocol cannot read kwire's bytes: {e}", T::NAME));
    assert_eq!(&T::from_kp(&decoded), value, "{} v{version}: kafka-protocol read back", T::NAME);

    // kafka-protocol writes the same bytes, and kwire reads them back both ways.
    let kp_bytes = kp_encode(&mapped, version)
        .unwrap_or_else(|e| panic!("{} v{version}: kafka-protocol cannot encode {value:?}: {e}", T::NAME));
    assert_eq!(kp_bytes, kwire_bytes, "{} v{version}: the encodings differ", T::NAME);
    view(&kp_bytes).unwrap_or_else(|e| panic!("{} v{version}: view: {e}", T::NAME));
    let back = reference(&kp_bytes).unwrap_or_else(|e| panic!("{} v{version}: reference: {e}", T::NAME));
    assert_eq!(&back, value);
    tally.compared += 1;
}

oracle_test!(api_versions_request, ApiVersionsRequest, ApiVersionsRequestView, 0x0a1);
oracle_test!(api_versions_response, ApiVersionsResponse, ApiVersionsResponseView, 0x0a2);
oracle_test!(list_groups_request, ListGroupsRequest, ListGroupsRequestView, 0x0a3);
oracle_test!(list_groups_response, ListGroupsResponse, ListGroupsResponseView, 0x0a4);
oracle_test!(list_offsets_request, ListOffsetsRequest, ListOffsetsRequestView, 0x0a5);
oracle_test!(list_offsets_response, ListOffsetsResponse, ListOffsetsResponseView, 0x0a6);
oracle_test!(metadata_request, MetadataRequest, MetadataRequestView, 0x0a7);
oracle_test!(metadata_response, MetadataResponse, MetadataResponseView, 0x0a8);

// ------------------------------------------------------------------ shared vectors

/// Decodes a body with kafka-protocol and compares with kwire's reference decoder; both
/// then re-encode it to the same bytes.
fn vector_body<T>(body: &[u8], version: i16, name: &str)
where
    T: Mapping + PartialEq + Debug + Body + TryFromBytes,
{
    let k: T::Kp = kp_decode(body, version).unwrap_or_else(|e| panic!("{name}: kafka-protocol: {e}"));
    let ours = T::decode_bytes(body, version).unwrap_or_else(|e| panic!("{name}: kwire: {e}"));
    assert_eq!(T::from_kp(&k), ours, "{name}");
    assert_eq!(kp_encode(&k, version).unwrap(), body, "{name}: kafka-protocol re-encodes");
}

/// The reference decoder, reachable from generic code.
trait TryFromBytes: Sized {
    fn decode_bytes(bytes: &[u8], version: i16) -> Result<Self, kwire::DecodeError>;
}

macro_rules! try_from_bytes {
    ($($ty:ident),*) => {$(
        impl TryFromBytes for $ty<'_> {
            fn decode_bytes(bytes: &[u8], version: i16) -> Result<Self, kwire::DecodeError> {
                $ty::decode(bytes, version)
            }
        }
    )*};
}

try_from_bytes!(
    ApiVersionsRequest,
    ApiVersionsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse
);

fn request_vector(name: &str, bytes: &[u8]) {
    let req = kwire::dispatch::parse_request(common::unframe(bytes)).unwrap();
    let (body, version) = (req.body.as_bytes(), req.header.api_version());
    match req.body.api_key() {
        ApiKey::ApiVersions => vector_body::<ApiVersionsRequest>(body, version, name),
        ApiKey::ListGroups => vector_body::<ListGroupsRequest>(body, version, name),
        ApiKey::ListOffsets => vector_body::<ListOffsetsRequest>(body, version, name),
        ApiKey::Metadata => vector_body::<MetadataRequest>(body, version, name),
        _ => unreachable!(),
    }
}

fn response_vector(name: &str, bytes: &[u8], key: ApiKey, version: i16) {
    let resp = kwire::dispatch::parse_response(common::unframe(bytes), key, version).unwrap();
    let body = resp.body.as_bytes();
    match key {
        ApiKey::ApiVersions => vector_body::<ApiVersionsResponse>(body, version, name),
        ApiKey::ListGroups => vector_body::<ListGroupsResponse>(body, version, name),
        ApiKey::ListOffsets => vector_body::<ListOffsetsResponse>(body, version, name),
        ApiKey::Metadata => vector_body::<MetadataResponse>(body, version, name),
        _ => unreachable!(),
    }
}

#[test]
fn shared_vectors_decode_alike() {
    let mut checked = 0;
    for (name, path) in common::hex_files("clients/requests") {
        let key =
            ["apiversions", "listgroups", "listoffsets", "metadata"].iter().position(|a| name.contains(a));
        let key =
            key.map(|i| [ApiKey::ApiVersions, ApiKey::ListGroups, ApiKey::ListOffsets, ApiKey::Metadata][i]);
        let key = key.unwrap_or_else(|| panic!("{name}: an API kwire does not support"));
        request_vector(&name, &common::vector(&path));
        let version: i16 = name.split("_v").nth(1).unwrap().split('_').next().unwrap().parse().unwrap();
        let version = if name.ends_with("_rejected") { 0 } else { version };
        response_vector(&name, &common::vector(&format!("clients/responses/{name}.hex")), key, version);
        checked += 1;
    }
    for (name, path) in common::hex_files("bench") {
        let bytes = common::vector(&path);
        if name.contains("request") {
            request_vector(&name, &bytes);
        } else {
            let (key, version) = common::api_and_version(&name);
            response_vector(&name, &bytes, key, version);
        }
        checked += 1;
    }
    assert_eq!(checked, 68 + 6);
}

// ------------------------------------------------------------------ disagreements
//
// Each test below pins one difference between the two crates; docs/oracle.md says which
// side follows Apache Kafka.

/// kafka-protocol keeps unknown tags as `i32`. A tag of 2^31 or more decodes to a
/// negative key; on encoding, the field is counted in the section's count but not
/// written (the writer only walks tags from 0 up), so its output is malformed. kwire
/// keeps tags as `u32` and round-trips them.
#[test]
fn high_tags_are_lost_by_kafka_protocol() {
    let tags = [RawTaggedField { tag: 0x8000_0000, data: (&[7u8][..]).into() }];
    let value = ListGroupsRequest { unknown_tagged_fields: (&tags).into(), ..Default::default() };
    let mut ours = vec![0u8; value.encoded_len(3).unwrap()];
    value.encode(3, &mut ours).unwrap();
    assert_eq!(ours, [1, 0x80, 0x80, 0x80, 0x80, 0x08, 1, 7]);
    assert_eq!(ListGroupsRequest::decode(&ours, 3).unwrap(), value);

    let k: kp::ListGroupsRequest = kp_decode(&ours, 3).unwrap();
    assert_eq!(k.unknown_tagged_fields.keys().copied().collect::<Vec<_>>(), [i32::MIN]);
    let (theirs, size) = kp_encode_raw(&k, 3);
    assert_eq!(theirs, [1], "count 1, then no field");
    assert_eq!(size, 8, "its size step counts the field it does not write");
    let e = ListGroupsRequest::decode(&theirs, 3).unwrap_err();
    assert_eq!(e.kind(), DecodeErrorKind::ArrayTooLong(1), "kwire rejects it: {e}");
}

/// kafka-protocol writes compact strings of any length; Apache Kafka, and kwire, refuse
/// strings over 32767 bytes when writing and when reading.
#[test]
fn long_compact_strings() {
    let long = "s".repeat(40_000);
    let k = kp::ListGroupsRequest::default().with_states_filter(vec![StrBytes::from_string(long.clone())]);
    let theirs = kp_encode(&k, 4).unwrap();
    let e = ListGroupsRequest::decode(&theirs, 4).unwrap_err();
    assert_eq!(e.kind(), DecodeErrorKind::StringTooLong(40_000));
    assert_eq!(ListGroupsRequestView::new(&theirs, 4).unwrap_err(), e);
    let states = [Str::Borrowed(&long)];
    let value = ListGroupsRequest { states_filter: (&states).into(), ..Default::default() };
    assert!(matches!(value.encoded_len(4), Err(kwire::EncodeError::StringTooLong { len: 40_000, .. })));
}

/// An unknown tagged field that uses a known field's tag: kafka-protocol counts it but
/// writes only unknown tags above the known ones, so its output is malformed; kwire, like
/// Apache Kafka's `RawTaggedFieldWriter`, refuses to encode it.
#[test]
fn unknown_tag_with_a_known_number() {
    let k = kp::ApiVersionsResponse::default().with_unknown_tagged_field(1, KpBytes::from_static(&[9]));
    let (theirs, size) = kp_encode_raw(&k, 3);
    assert_eq!(theirs, [0, 0, 1, 0, 0, 0, 0, 1], "count 1, then no field");
    assert_eq!(size, 11, "its size step counts the field it does not write");
    let e = ApiVersionsResponse::decode(&theirs, 3).unwrap_err();
    assert_eq!(e.kind(), DecodeErrorKind::ArrayTooLong(1), "kwire rejects it: {e}");
    let tags = [RawTaggedField { tag: 1, data: (&[9u8][..]).into() }];
    let value = ApiVersionsResponse { unknown_tagged_fields: (&tags).into(), ..Default::default() };
    assert_eq!(
        value.encoded_len(3),
        Err(kwire::EncodeError::InvalidTaggedFields { field: "ApiVersionsResponse._tagged_fields", tag: 1 })
    );
}

/// Bodies kafka-protocol accepts and kwire rejects, each with the rule kwire applies.
#[test]
fn lenient_decoding_in_kafka_protocol() {
    use DecodeErrorKind as K;
    // ListGroups v3 request: the body is only a tagged-field section.
    let cases: [(&str, &[u8], K); 6] = [
        ("trailing byte", &[0, 0], K::TrailingBytes(1)),
        ("varint over five bytes", &[0x80, 0x80, 0x80, 0x80, 0x80, 0x00], K::VarintTooLong),
        ("duplicate tag", &[2, 5, 0, 5, 0], K::TagOutOfOrder(5)),
        ("descending tags", &[2, 6, 0, 5, 0], K::TagOutOfOrder(5)),
        ("tag count over the bytes left", &[0x7f], K::ArrayTooLong(127)),
        // Its bits over 32 are dropped, as Kafka drops them: a count of 2^32 - 1.
        ("varint with bits over 32", &[0xff, 0xff, 0xff, 0xff, 0x1f], K::ArrayTooLong(u32::MAX)),
    ];
    for (what, body, kind) in cases {
        assert_eq!(ListGroupsRequest::decode(body, 3).unwrap_err().kind(), kind, "{what}");
        assert_eq!(ListGroupsRequestView::new(body, 3).unwrap_err().kind(), kind, "{what}");
        let mut rest = body;
        let theirs = kp::ListGroupsRequest::decode(&mut rest, 3);
        match what {
            // These two kafka-protocol rejects as well, only later.
            "tag count over the bytes left" | "varint with bits over 32" => {
                assert!(theirs.is_err(), "{what}")
            }
            _ => assert!(theirs.is_ok(), "{what}: kafka-protocol accepts"),
        }
    }
    // A known tagged field whose declared size is larger than its value: kafka-protocol
    // reads the value and ignores the size (so do Kafka's readers); the bytes after it are
    // then read as the next tag.
    let mut body = vec![0, 0, 1, 0, 0, 0, 0, 1, 1, 9];
    body.extend_from_slice(&42i64.to_be_bytes());
    body.push(0);
    let mut rest = &body[..];
    let k = kp::ApiVersionsResponse::decode(&mut rest, 3).unwrap();
    assert_eq!((k.finalized_features_epoch, rest.len()), (42, 1), "one byte left unread");
    let e = ApiVersionsResponse::decode(&body, 3).unwrap_err();
    assert_eq!(e.kind(), K::TaggedSizeMismatch { tag: 1, declared: 9, actual: 8 });
}

// ------------------------------------------------------------------ every API, as bytes

/// The largest unknown tag in a value, read from its `Debug` form (kafka-protocol keeps
/// unknown tags in an `i32`, so tags from 2^31 on are a known difference, see
/// `docs/oracle.md`).
fn largest_unknown_tag(value: &impl Debug) -> u64 {
    let text = format!("{value:?}");
    text.match_indices("RawTaggedField { tag: ")
        .filter_map(|(i, m)| {
            let rest = &text[i + m.len()..];
            rest[..rest.find(',').unwrap_or(rest.len())].parse::<u64>().ok()
        })
        .max()
        .unwrap_or(0)
}

/// Every API that both crates have, at every version both know, requests and responses:
/// kwire's bytes of arbitrary values decode in kafka-protocol (its generic `RequestKind` /
/// `ResponseKind`), and kafka-protocol writes them back byte for byte. The four seed APIs
/// above are also compared value by value.
#[test]
fn every_api_kafka_protocol_reads_and_rewrites_kwires_bytes() {
    const PER_VERSION: usize = 12;
    let mut rng = XorShift(0x0ac1_e0ba);
    let (mut apis, mut compared, mut big_tags, mut known) = (0usize, 0usize, 0usize, 0usize);
    let mut failures = Vec::new();
    for &key in ApiKey::ALL {
        let Ok(kp_key) = kp::ApiKey::try_from(key.to_i16()) else { continue };
        apis += 1;
        let theirs = kp_key.valid_versions();
        for response in [false, true] {
            let ours = if response { key.response_versions() } else { key.request_versions() };
            for version in ours.min.max(theirs.min)..=ours.max.min(theirs.max) {
                let ver = kwire::types::Ver::new(version, key.flexible_versions().contains(version));
                for _ in 0..PER_VERSION {
                    let data = rng.input(512);
                    let u = &mut Unstructured::new(&data);
                    let (bytes, tag) = if response {
                        let Ok(v) = ResponseBody::arbitrary_for(key, u) else { continue };
                        let v = v.as_version(ver);
                        (
                            v.encoded_len(version).ok().map(|n| (v.clone(), n)).map(|(v, n)| {
                                let mut b = vec![0u8; n];
                                v.encode(version, &mut b).map(|_| b)
                            }),
                            largest_unknown_tag(&v),
                        )
                    } else {
                        let Ok(v) = RequestBody::arbitrary_for(key, u) else { continue };
                        let v = v.as_version(ver);
                        (
                            v.encoded_len(version).ok().map(|n| (v.clone(), n)).map(|(v, n)| {
                                let mut b = vec![0u8; n];
                                v.encode(version, &mut b).map(|_| b)
                            }),
                            largest_unknown_tag(&v),
                        )
                    };
                    let Some(Ok(bytes)) = bytes else { continue };
                    if tag > i32::MAX as u64 {
                        big_tags += 1;
                        continue;
                    }
                    let mut input = KpBytes::from(bytes.clone());
                    let mut out = bytes::BytesMut::new();
                    let result = if response {
                        kp::ResponseKind::decode(kp_key, &mut input, version)
                            .and_then(|m| m.encode(&mut out, version))
                    } else {
                        kp::RequestKind::decode(kp_key, &mut input, version)
                            .and_then(|m| m.encode(&mut out, version))
                    };
                    // kafka-protocol 0.18 lists OffsetCommit and OffsetFetch request v10 (unstable
                    // in Kafka 4.1, which it follows) in `valid_versions`, but the structs inside
                    // those requests decode only up to v9 ("specified version not supported by
                    // this message type"); Apache Kafka 4.4's own codec reads kwire's v10 bytes
                    // (tests/kafka_codec.rs).
                    let kp_stops_at_9 = !response
                        && version == 10
                        && matches!(key, ApiKey::OffsetCommit | ApiKey::OffsetFetch);
                    if kp_stops_at_9 && result.is_err() {
                        known += 1;
                        continue;
                    }
                    compared += 1;
                    let what = format!(
                        "{} {} v{version}",
                        key.name(),
                        if response { "response" } else { "request" }
                    );
                    match result {
                        Err(e) => failures.push(format!("{what}: kafka-protocol refuses kwire's bytes: {e}")),
                        Ok(()) if !input.is_empty() => {
                            failures.push(format!("{what}: {} bytes left over", input.len()))
                        }
                        Ok(()) if out[..] != bytes[..] => failures.push(format!(
                            "{what}: kafka-protocol writes other bytes\n  kwire: {}\n  kp:    {}",
                            hex(&bytes),
                            hex(&out)
                        )),
                        Ok(()) => {}
                    }
                }
            }
        }
    }
    eprintln!(
        "kafka-protocol: {apis} APIs, {compared} bodies compared, {big_tags} skipped for unknown tags of 2^31 or more, \
         {known} refused by kafka-protocol's v9 limit on OffsetCommit/OffsetFetch v10 requests"
    );
    assert!(apis >= 80 && compared > 5_000, "only {apis} APIs, {compared} bodies compared");
    assert!(
        failures.is_empty(),
        "{} of {compared} differ:\n{}",
        failures.len(),
        failures.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
    );
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
