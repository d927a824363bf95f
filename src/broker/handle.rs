//! Requests in, responses out: one function per API, on the typed views and encoders.

use std::ops::Range;
use std::string::{String, ToString};
use std::time::{Duration, Instant};
use std::vec::Vec;

use super::conn::Outbox;
use super::groups::{Committed, Join, State};
use super::log::{Rejected, Segment};
use super::state::{Shared, valid_topic_name};
use crate::ApiKey;
use crate::conn::{ConnError, ReplyTo, ServerConn, ServerRequest};
use crate::error_code::ErrorCode;
use crate::messages::RequestBodyView;
use crate::types::{List, Uuid};
use crate::vectored::Part;

/// The APIs the broker serves (each at every version kwire reads, less
/// [`super::Config::max_versions`]).
pub const SERVED: &[ApiKey] = &[
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::Metadata,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::FindCoordinator,
    ApiKey::JoinGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::SyncGroup,
    ApiKey::DescribeGroups,
    ApiKey::ListGroups,
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::InitProducerId,
    ApiKey::DescribeConfigs,
    ApiKey::CreatePartitions,
    ApiKey::ApiVersions,
    ApiKey::DescribeCluster,
];

/// A topic's configs with Apache Kafka's defaults: (name, value, type) where the type is
/// DescribeConfigs' `ConfigType` (1 boolean, 2 string, 3 int, 5 long, 6 double, 7 list).
pub(crate) const TOPIC_CONFIGS: &[(&str, &str, i8)] = &[
    ("cleanup.policy", "delete", 7),
    ("compression.gzip.level", "-1", 3),
    ("compression.lz4.level", "9", 3),
    ("compression.type", "producer", 2),
    ("compression.zstd.level", "3", 3),
    ("delete.retention.ms", "86400000", 5),
    ("file.delete.delay.ms", "60000", 5),
    ("flush.messages", "9223372036854775807", 5),
    ("flush.ms", "9223372036854775807", 5),
    ("index.interval.bytes", "4096", 3),
    ("max.compaction.lag.ms", "9223372036854775807", 5),
    ("max.message.bytes", "1048588", 3),
    ("message.timestamp.after.max.ms", "3600000", 5),
    ("message.timestamp.before.max.ms", "9223372036854775807", 5),
    ("message.timestamp.type", "CreateTime", 2),
    ("min.cleanable.dirty.ratio", "0.5", 6),
    ("min.compaction.lag.ms", "0", 5),
    ("min.insync.replicas", "1", 3),
    ("preallocate", "false", 1),
    ("retention.bytes", "-1", 5),
    ("retention.ms", "604800000", 5),
    ("segment.bytes", "1073741824", 3),
    ("segment.index.bytes", "10485760", 3),
    ("segment.jitter.ms", "0", 5),
    ("segment.ms", "604800000", 5),
    ("unclean.leader.election.enable", "false", 1),
];

/// What a handled request asks of the connection.
pub(crate) enum Outcome {
    /// Go on (the answer, if any, is in the output).
    Continue,
    /// Close the connection (a Produce with acks=0 that failed, as Kafka does).
    Close(String),
}

/// One connection's request handler: its scratch buffers live as long as it does.
pub(crate) struct Handler<'s> {
    shared: &'s Shared,
    /// After a SaslHandshake v0 for PLAIN: the next frame is the bare token.
    pub raw_sasl: bool,
    client_host: String,
    scratch: Vec<u8>,
}

/// Every operation on topics and the cluster (READ through IDEMPOTENT_WRITE bits), for
/// authorized-operations fields: nothing is refused here.
const TOPIC_OPERATIONS: i32 = 0b1101_1111_1000;
const CLUSTER_OPERATIONS: i32 = 0b1_1111_1010_0000;

impl<'s> Handler<'s> {
    pub fn new(shared: &'s Shared, peer: &str) -> Self {
        let host = peer.rsplit_once(':').map_or(peer, |(h, _)| h).to_string();
        Handler { shared, raw_sasl: false, client_host: std::format!("/{host}"), scratch: Vec::new() }
    }

    /// Answers one request, appending the response frame (if it gets one) to `out`.
    pub fn handle(&mut self, req: &ServerRequest<'_>, out: &mut Outbox) -> Result<Outcome, ConnError> {
        let reply = req.reply_to();
        let v = reply.api_version;
        let served = self.shared.versions(reply.api_key).is_some_and(|range| range.contains(v));
        if !served {
            unsupported(reply, out)?;
            return Ok(Outcome::Continue);
        }
        let node = self.shared.config.node_id;
        let client_id = req.header.client_id().unwrap_or_default();
        match req.body {
            RequestBodyView::ApiVersions(_) => {
                use crate::messages::api_versions::{ApiVersion, ApiVersionsResponse};
                let keys: Vec<ApiVersion<'_>> = self
                    .shared
                    .served()
                    .iter()
                    .map(|&(k, r)| ApiVersion {
                        api_key: k.to_i16(),
                        min_version: r.min,
                        max_version: r.max,
                        ..Default::default()
                    })
                    .collect();
                let body = ApiVersionsResponse { api_keys: keys.into(), ..Default::default() };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::Metadata(m) => {
                use crate::messages::metadata::{
                    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition,
                    MetadataResponseTopic,
                };
                let auto = self.shared.config.auto_create_topics && (v < 4 || m.allow_auto_topic_creation());
                let wanted: Option<Vec<(Option<String>, Uuid)>> = match m.topics() {
                    None => None,
                    Some(t) if v == 0 && t.is_empty() => None,
                    Some(t) => Some(t.iter().map(|t| (t.name().map(Into::into), t.topic_id())).collect()),
                };
                let mut answers: Vec<(i16, Option<String>, Uuid, i32)> = Vec::new();
                match wanted {
                    None => self.shared.topics.with(|all| {
                        for t in all.values() {
                            answers.push((0, Some(t.name.clone()), t.id, t.partitions.len() as i32));
                        }
                    }),
                    Some(list) => {
                        for (name, id) in list {
                            let name = match name {
                                Some(n) => n,
                                None => match self.shared.topics.name_of(id) {
                                    Some(n) => n,
                                    None => {
                                        answers.push((ErrorCode::UnknownTopicId.to_i16(), None, id, 0));
                                        continue;
                                    }
                                },
                            };
                            let found = self
                                .shared
                                .topics
                                .with(|all| all.get(&name).map(|t| (t.id, t.partitions.len())));
                            match found {
                                Some((id, n)) => answers.push((0, Some(name), id, n as i32)),
                                None if valid_topic_name(&name).is_err() => answers.push((
                                    ErrorCode::InvalidTopicException.to_i16(),
                                    Some(name),
                                    Uuid::ZERO,
                                    0,
                                )),
                                None if auto => {
                                    let n = self.shared.config.default_partitions;
                                    match self.shared.topics.create(self.shared, &name, n, Vec::new()) {
                                        Ok(id) => {
                                            self.shared.log(format_args!(
                                                "auto-created topic {name} ({n} partitions)"
                                            ));
                                            answers.push((0, Some(name), id, n));
                                        }
                                        Err(_) => {
                                            let again = self.shared.topics.with(|all| {
                                                all.get(&name).map(|t| (t.id, t.partitions.len() as i32))
                                            });
                                            match again {
                                                Some((id, n)) => answers.push((0, Some(name), id, n)),
                                                None => answers.push((
                                                    ErrorCode::UnknownTopicOrPartition.to_i16(),
                                                    Some(name),
                                                    Uuid::ZERO,
                                                    0,
                                                )),
                                            }
                                        }
                                    }
                                }
                                None => answers.push((
                                    ErrorCode::UnknownTopicOrPartition.to_i16(),
                                    Some(name),
                                    Uuid::ZERO,
                                    0,
                                )),
                            }
                        }
                    }
                }
                let topic_ops = if v >= 8 && m.include_topic_authorized_operations() {
                    TOPIC_OPERATIONS
                } else {
                    i32::MIN
                };
                let cluster_ops = if (8..=10).contains(&v) && m.include_cluster_authorized_operations() {
                    CLUSTER_OPERATIONS
                } else {
                    i32::MIN
                };
                let topics: Vec<MetadataResponseTopic<'_>> = answers
                    .into_iter()
                    .map(|(error_code, name, topic_id, n)| MetadataResponseTopic {
                        error_code,
                        name: name.map(Into::into),
                        topic_id: if v >= 10 { topic_id } else { Uuid::ZERO },
                        is_internal: false,
                        partitions: (0..n)
                            .map(|i| MetadataResponsePartition {
                                error_code: 0,
                                partition_index: i,
                                leader_id: node,
                                leader_epoch: if v >= 7 { 0 } else { -1 },
                                replica_nodes: std::vec![node].into(),
                                isr_nodes: std::vec![node].into(),
                                offline_replicas: List::Borrowed(&[]),
                                ..Default::default()
                            })
                            .collect(),
                        topic_authorized_operations: topic_ops,
                        ..Default::default()
                    })
                    .collect();
                let brokers = [MetadataResponseBroker {
                    node_id: node,
                    host: self.shared.host.as_str().into(),
                    port: self.shared.port,
                    rack: None,
                    ..Default::default()
                }];
                let body = MetadataResponse {
                    brokers: (&brokers).into(),
                    cluster_id: (v >= 2).then(|| self.shared.config.cluster_id.as_str().into()),
                    controller_id: if v >= 1 { node } else { -1 },
                    topics: topics.into(),
                    cluster_authorized_operations: cluster_ops,
                    ..Default::default()
                };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::DescribeCluster(d) => {
                use crate::messages::describe_cluster::{DescribeClusterBroker, DescribeClusterResponse};
                let brokers = [DescribeClusterBroker {
                    broker_id: node,
                    host: self.shared.host.as_str().into(),
                    port: self.shared.port,
                    rack: None,
                    is_fenced: false,
                    ..Default::default()
                }];
                let ops =
                    if d.include_cluster_authorized_operations() { CLUSTER_OPERATIONS } else { i32::MIN };
                let body = DescribeClusterResponse {
                    endpoint_type: if v >= 1 { d.endpoint_type() } else { 1 },
                    cluster_id: self.shared.config.cluster_id.as_str().into(),
                    controller_id: node,
                    brokers: (&brokers).into(),
                    cluster_authorized_operations: ops,
                    ..Default::default()
                };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::Produce(p) => return self.produce(reply, p, out),
            RequestBodyView::Fetch(f) => self.fetch(reply, f, out)?,
            RequestBodyView::ListOffsets(l) => self.list_offsets(reply, l, out)?,
            RequestBodyView::InitProducerId(i) => {
                use crate::messages::init_producer_id::InitProducerIdResponse;
                let body = if i.transactional_id().is_some_and(|t| !t.is_empty()) {
                    InitProducerIdResponse {
                        error_code: ErrorCode::TransactionalIdAuthorizationFailed.to_i16(),
                        producer_id: -1,
                        producer_epoch: -1,
                        ..Default::default()
                    }
                } else {
                    InitProducerIdResponse {
                        producer_id: self.shared.new_producer_id(),
                        producer_epoch: 0,
                        ..Default::default()
                    }
                };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::CreateTopics(c) => self.create_topics(reply, c, out)?,
            RequestBodyView::CreatePartitions(c) => {
                use crate::messages::create_partitions::{
                    CreatePartitionsResponse, CreatePartitionsTopicResult,
                };
                let mut results = Vec::new();
                for t in c.topics() {
                    let (code, message) = self.shared.topics.with(|all| match all.get_mut(t.name()) {
                        None => (ErrorCode::UnknownTopicOrPartition, None),
                        Some(topic) if (t.count() as usize) <= topic.partitions.len() || t.count() > 100_000 => (
                            ErrorCode::InvalidPartitions,
                            Some(std::format!(
                                "Topic currently has {} partitions, which is higher than the requested {}.",
                                topic.partitions.len(),
                                t.count()
                            )),
                        ),
                        Some(topic) => {
                            if !c.validate_only() {
                                topic.partitions.resize_with(t.count() as usize, Default::default);
                            }
                            (ErrorCode::None, None)
                        }
                    });
                    results.push(CreatePartitionsTopicResult {
                        name: t.name().into(),
                        error_code: code.to_i16(),
                        error_message: message.map(Into::into),
                        ..Default::default()
                    });
                }
                let body = CreatePartitionsResponse { results: results.into(), ..Default::default() };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::DeleteTopics(d) => {
                use crate::messages::delete_topics::{DeletableTopicResult, DeleteTopicsResponse};
                let wanted: Vec<(Option<String>, Uuid)> = if v >= 6 {
                    d.topics().iter().map(|t| (t.name().map(Into::into), t.topic_id())).collect()
                } else {
                    d.topic_names().iter().map(|n| (Some(n.to_string()), Uuid::ZERO)).collect()
                };
                let mut results = Vec::new();
                for (name, id) in wanted {
                    let name = name.or_else(|| self.shared.topics.name_of(id));
                    let removed = name.as_ref().and_then(|n| self.shared.topics.with(|all| all.remove(n)));
                    let (code, topic_id) = match &removed {
                        Some(t) => (ErrorCode::None, t.id),
                        None if name.is_none() => (ErrorCode::UnknownTopicId, id),
                        None => (ErrorCode::UnknownTopicOrPartition, id),
                    };
                    if let Some(n) = removed.as_ref().map(|t| t.name.clone()) {
                        self.shared.groups.forget_topic(&n);
                        self.shared.log(format_args!("deleted topic {n}"));
                    }
                    results.push(DeletableTopicResult {
                        name: name.map(Into::into),
                        topic_id: if v >= 6 { topic_id } else { Uuid::ZERO },
                        error_code: code.to_i16(),
                        ..Default::default()
                    });
                }
                // Fetches waiting on a deleted topic's partitions look again.
                self.shared.appended();
                let body = DeleteTopicsResponse { responses: results.into(), ..Default::default() };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::FindCoordinator(f) => {
                use crate::messages::find_coordinator::{Coordinator, FindCoordinatorResponse};
                let host = self.shared.host.as_str();
                let port = self.shared.port;
                let bad_type = !(0..=1).contains(&f.key_type());
                let code = if bad_type { ErrorCode::InvalidRequest.to_i16() } else { 0 };
                let body = if v >= 4 {
                    let coordinators: Vec<Coordinator<'_>> = f
                        .coordinator_keys()
                        .iter()
                        .map(|key| Coordinator {
                            key: key.into(),
                            node_id: if bad_type { -1 } else { node },
                            host: if bad_type { "".into() } else { host.into() },
                            port: if bad_type { -1 } else { port },
                            error_code: code,
                            ..Default::default()
                        })
                        .collect();
                    FindCoordinatorResponse { coordinators: coordinators.into(), ..Default::default() }
                } else {
                    FindCoordinatorResponse {
                        error_code: code,
                        node_id: if bad_type { -1 } else { node },
                        host: if bad_type { "".into() } else { host.into() },
                        port: if bad_type { -1 } else { port },
                        ..Default::default()
                    }
                };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::JoinGroup(j) => {
                use crate::messages::join_group::{JoinGroupResponse, JoinGroupResponseMember};
                let result = self.shared.groups.join(
                    self.shared,
                    Join {
                        group_id: j.group_id(),
                        member_id: j.member_id(),
                        instance_id: if v >= 5 { j.group_instance_id() } else { None },
                        client_id,
                        client_host: &self.client_host,
                        session_timeout_ms: j.session_timeout_ms(),
                        rebalance_timeout_ms: if v >= 1 {
                            j.rebalance_timeout_ms()
                        } else {
                            j.session_timeout_ms()
                        },
                        protocol_type: j.protocol_type(),
                        protocols: j
                            .protocols()
                            .iter()
                            .map(|p| (p.name().to_string(), p.metadata().to_vec()))
                            .collect(),
                        require_known_member_id: v >= 4,
                    },
                );
                let members: Vec<JoinGroupResponseMember<'_>> = result
                    .members
                    .iter()
                    .map(|(id, instance, md)| JoinGroupResponseMember {
                        member_id: id.as_str().into(),
                        group_instance_id: instance.as_deref().map(Into::into),
                        metadata: md.as_slice().into(),
                        ..Default::default()
                    })
                    .collect();
                let protocol_name = match (&result.protocol, v >= 7) {
                    (Some(p), _) => Some(p.as_str().into()),
                    (None, true) => None,
                    (None, false) => Some("".into()),
                };
                let body = JoinGroupResponse {
                    error_code: result.error.map_or(0, |e| e.to_i16()),
                    generation_id: result.generation,
                    protocol_type: result.protocol_type.as_deref().filter(|_| v >= 7).map(Into::into),
                    protocol_name,
                    leader: result.leader.as_str().into(),
                    member_id: result.member_id.as_str().into(),
                    members: members.into(),
                    ..Default::default()
                };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::SyncGroup(s) => {
                use crate::messages::sync_group::SyncGroupResponse;
                let assignments = s
                    .assignments()
                    .iter()
                    .map(|a| (a.member_id().to_string(), a.assignment().to_vec()))
                    .collect();
                let (code, assignment, ptype, pname) = self.shared.groups.sync(
                    self.shared,
                    s.group_id(),
                    s.generation_id(),
                    s.member_id(),
                    if v >= 5 { s.protocol_type() } else { None },
                    if v >= 5 { s.protocol_name() } else { None },
                    assignments,
                );
                let body = SyncGroupResponse {
                    error_code: code.to_i16(),
                    protocol_type: ptype.filter(|_| v >= 5).map(Into::into),
                    protocol_name: pname.filter(|_| v >= 5).map(Into::into),
                    assignment: assignment.into(),
                    ..Default::default()
                };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::Heartbeat(h) => {
                use crate::messages::heartbeat::HeartbeatResponse;
                let code = self.shared.groups.heartbeat(h.group_id(), h.generation_id(), h.member_id());
                let body = HeartbeatResponse { error_code: code.to_i16(), ..Default::default() };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::LeaveGroup(l) => {
                use crate::messages::leave_group::{LeaveGroupResponse, MemberResponse};
                let body = if v >= 3 {
                    let members: Vec<MemberResponse<'_>> = l
                        .members()
                        .iter()
                        .map(|m| MemberResponse {
                            member_id: m.member_id().into(),
                            group_instance_id: m.group_instance_id().map(Into::into),
                            error_code: self
                                .shared
                                .groups
                                .leave(self.shared, l.group_id(), m.member_id(), m.group_instance_id())
                                .to_i16(),
                            ..Default::default()
                        })
                        .collect();
                    LeaveGroupResponse { members: members.into(), ..Default::default() }
                } else {
                    let code = self.shared.groups.leave(self.shared, l.group_id(), l.member_id(), None);
                    LeaveGroupResponse { error_code: code.to_i16(), ..Default::default() }
                };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::OffsetCommit(c) => {
                use crate::messages::offset_commit::{
                    OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
                };
                let group = c.group_id();
                let check =
                    self.shared.groups.check_commit(group, c.generation_id_or_member_epoch(), c.member_id());
                let mut topics = Vec::new();
                for t in c.topics() {
                    let name: Option<String> = if v >= 10 {
                        self.shared.topics.name_of(t.topic_id())
                    } else {
                        Some(t.name().into())
                    };
                    let mut parts = Vec::new();
                    for p in t.partitions() {
                        let i = p.partition_index();
                        let code = if check != ErrorCode::None {
                            check
                        } else if let Some(name) =
                            name.as_deref().filter(|n| self.shared.topics.partition(n, i).is_some())
                        {
                            let metadata = p.committed_metadata();
                            if metadata.is_some_and(|m| m.len() > 4096) {
                                ErrorCode::OffsetMetadataTooLarge
                            } else {
                                self.shared.groups.store_offset(
                                    group,
                                    name,
                                    i,
                                    Committed {
                                        offset: p.committed_offset(),
                                        leader_epoch: if v >= 6 { p.committed_leader_epoch() } else { -1 },
                                        metadata: metadata.map(Into::into),
                                    },
                                );
                                ErrorCode::None
                            }
                        } else if v >= 10 && name.is_none() {
                            ErrorCode::UnknownTopicId
                        } else {
                            ErrorCode::UnknownTopicOrPartition
                        };
                        parts.push(OffsetCommitResponsePartition {
                            partition_index: i,
                            error_code: code.to_i16(),
                            ..Default::default()
                        });
                    }
                    topics.push(OffsetCommitResponseTopic {
                        name: t.name().into(),
                        topic_id: t.topic_id(),
                        partitions: parts.into(),
                        ..Default::default()
                    });
                }
                let body = OffsetCommitResponse { topics: topics.into(), ..Default::default() };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::OffsetFetch(f) => self.offset_fetch(reply, f, out)?,
            RequestBodyView::ListGroups(l) => {
                use crate::messages::list_groups::{ListGroupsResponse, ListedGroup};
                let states: Vec<&str> = if v >= 4 { l.states_filter().iter().collect() } else { Vec::new() };
                let types: Vec<&str> = if v >= 5 { l.types_filter().iter().collect() } else { Vec::new() };
                let listed: Vec<(String, String, &'static str)> = {
                    let g = self.shared.groups.lock();
                    g.iter()
                        .map(|(id, g)| {
                            (id.clone(), g.protocol_type.clone().unwrap_or_default(), g.state.name())
                        })
                        .filter(|(_, _, s)| {
                            states.is_empty() || states.iter().any(|w| w.eq_ignore_ascii_case(s))
                        })
                        .filter(|_| {
                            types.is_empty() || types.iter().any(|t| t.eq_ignore_ascii_case("classic"))
                        })
                        .collect()
                };
                let groups: Vec<ListedGroup<'_>> = listed
                    .iter()
                    .map(|(id, ptype, state)| ListedGroup {
                        group_id: id.as_str().into(),
                        protocol_type: ptype.as_str().into(),
                        group_state: if v >= 4 { *state } else { "" }.into(),
                        group_type: if v >= 5 { "classic" } else { "" }.into(),
                        ..Default::default()
                    })
                    .collect();
                let body = ListGroupsResponse { groups: groups.into(), ..Default::default() };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::DescribeGroups(d) => {
                use crate::messages::describe_groups::{
                    DescribeGroupsResponse, DescribedGroup, DescribedGroupMember,
                };
                let ops = if v >= 3 && d.include_authorized_operations() { 0b1_0001_1000 } else { i32::MIN };
                let g = self.shared.groups.lock();
                let mut groups = Vec::new();
                for id in d.groups() {
                    let Some(group) = g.get(id) else {
                        groups.push(DescribedGroup {
                            error_code: if v >= 6 { ErrorCode::GroupIdNotFound.to_i16() } else { 0 },
                            error_message: (v >= 6).then(|| std::format!("Group {id} not found.").into()),
                            group_id: id.into(),
                            group_state: "Dead".into(),
                            authorized_operations: ops,
                            ..Default::default()
                        });
                        continue;
                    };
                    let show = matches!(group.state, State::Stable | State::CompletingRebalance);
                    let members: Vec<DescribedGroupMember<'_>> = group
                        .members
                        .values()
                        .map(|m| DescribedGroupMember {
                            member_id: m.id.as_str().into(),
                            group_instance_id: m.instance_id.as_deref().filter(|_| v >= 4).map(Into::into),
                            client_id: m.client_id.as_str().into(),
                            client_host: m.client_host.as_str().into(),
                            member_metadata: if show {
                                group.metadata_of(m).into()
                            } else {
                                List::Borrowed(&[])
                            },
                            member_assignment: if group.state == State::Stable {
                                m.assignment.as_slice().into()
                            } else {
                                List::Borrowed(&[])
                            },
                            ..Default::default()
                        })
                        .collect();
                    groups.push(DescribedGroup {
                        group_id: id.into(),
                        group_state: group.state.name().into(),
                        protocol_type: group.protocol_type.as_deref().unwrap_or_default().into(),
                        protocol_data: if show { group.protocol.as_deref().unwrap_or_default() } else { "" }
                            .into(),
                        members: members.into(),
                        authorized_operations: ops,
                        ..Default::default()
                    });
                }
                let body = DescribeGroupsResponse { groups: groups.into(), ..Default::default() };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::DescribeConfigs(d) => self.describe_configs(reply, d, out)?,
            RequestBodyView::SaslHandshake(h) => {
                use crate::messages::sasl_handshake::SaslHandshakeResponse;
                let accepted = h.mechanism() == "PLAIN";
                self.raw_sasl = accepted && v == 0;
                let mechanisms = ["PLAIN".into()];
                let code = if accepted { 0 } else { ErrorCode::UnsupportedSaslMechanism.to_i16() };
                let body = SaslHandshakeResponse { error_code: code, mechanisms: (&mechanisms).into() };
                ServerConn::encode_response(reply, &body, out)?;
            }
            RequestBodyView::SaslAuthenticate(a) => {
                use crate::messages::sasl_authenticate::SaslAuthenticateResponse;
                let body = if self.shared.plain_ok(a.auth_bytes()) {
                    SaslAuthenticateResponse::default()
                } else {
                    SaslAuthenticateResponse {
                        error_code: ErrorCode::SaslAuthenticationFailed.to_i16(),
                        error_message: Some("Authentication failed: invalid username or password".into()),
                        ..Default::default()
                    }
                };
                ServerConn::encode_response(reply, &body, out)?;
            }
            _ => unsupported(reply, out)?,
        }
        Ok(Outcome::Continue)
    }

    /// Answers the bare SASL/PLAIN token after a SaslHandshake v0: an empty frame on
    /// success; a failure closes the connection, as Kafka does.
    pub fn raw_token(&mut self, token: &[u8], out: &mut Outbox) -> Outcome {
        self.raw_sasl = false;
        if !self.shared.plain_ok(token) {
            return Outcome::Close("SASL/PLAIN authentication failed (v0 handshake)".into());
        }
        out.extend_from_slice(&0i32.to_be_bytes());
        Outcome::Continue
    }

    fn produce(
        &mut self,
        reply: ReplyTo,
        p: crate::messages::ProduceRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<Outcome, ConnError> {
        use crate::messages::produce::{
            BatchIndexAndErrorMessage, PartitionProduceResponse, ProduceResponse, TopicProduceResponse,
        };
        let v = reply.api_version;
        let acks = p.acks();
        let transactional = p.transactional_id().is_some();
        let config = &self.shared.config;
        let mut topics = Vec::new();
        let mut appended = false;
        let mut first_error: Option<String> = None;
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        for t in p.topic_data() {
            let name: Option<String> =
                if v >= 13 { self.shared.topics.name_of(t.topic_id()) } else { Some(t.name().into()) };
            let mut parts = Vec::new();
            for d in t.partition_data() {
                let index = d.index();
                let mut errors = Vec::new();
                let result: Result<(i64, i64), Rejected> = (|| {
                    if !matches!(acks, -1..=1) {
                        return Err(Rejected {
                            code: ErrorCode::InvalidRequiredAcks,
                            message: String::new(),
                        });
                    }
                    if transactional {
                        return Err(Rejected {
                            code: ErrorCode::TransactionalIdAuthorizationFailed,
                            message: "this broker does not serve transactions".into(),
                        });
                    }
                    let Some(name) = name.as_deref() else {
                        return Err(Rejected { code: ErrorCode::UnknownTopicId, message: String::new() });
                    };
                    let Some((partition, settings)) =
                        self.shared.topics.partition_with_settings(name, index, v, now_ms)
                    else {
                        return Err(Rejected {
                            code: ErrorCode::UnknownTopicOrPartition,
                            message: "This server does not host this topic-partition.".into(),
                        });
                    };
                    let mut settings = settings;
                    settings.max_message_bytes = i32::try_from(config.max_message_bytes).unwrap_or(i32::MAX);
                    let bytes = d.records().map(|r| r.bytes()).unwrap_or_default();
                    let done = partition.lock().append(
                        bytes,
                        &settings,
                        &mut self.scratch,
                        config.max_decompressed_bytes,
                        &mut errors,
                    )?;
                    appended |= !done.duplicate;
                    let append_time =
                        if settings.timestamp_type == crate::records::TimestampType::LogAppendTime {
                            now_ms
                        } else {
                            -1
                        };
                    Ok((done.base_offset, append_time))
                })();
                let (code, (base_offset, log_append_time_ms), message) = match result {
                    Ok(done) => (0, done, None),
                    Err(r) => {
                        if first_error.is_none() {
                            first_error =
                                Some(std::format!("{}/{index}: {:?} {}", t.name(), r.code, r.message));
                        }
                        (r.code.to_i16(), (-1, -1), Some(r.message).filter(|m| !m.is_empty() && v >= 8))
                    }
                };
                let record_errors: Vec<BatchIndexAndErrorMessage<'_>> = if v >= 8 {
                    errors
                        .iter()
                        .map(|e| BatchIndexAndErrorMessage {
                            batch_index: i32::try_from(e.batch_index).unwrap_or(i32::MAX),
                            batch_index_error_message: Some(std::format!("{e}").into()),
                            ..Default::default()
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                parts.push(PartitionProduceResponse {
                    index,
                    error_code: code,
                    base_offset,
                    log_append_time_ms,
                    log_start_offset: if code == 0 && v >= 5 { 0 } else { -1 },
                    record_errors: record_errors.into(),
                    error_message: message.map(Into::into),
                    ..Default::default()
                });
            }
            topics.push(TopicProduceResponse {
                name: t.name().into(),
                topic_id: t.topic_id(),
                partition_responses: parts.into(),
                ..Default::default()
            });
        }
        if appended {
            self.shared.appended();
        }
        if !reply.expects_response {
            // acks=0: no answer; Kafka closes the connection on an error, so that the
            // producer notices.
            return Ok(match first_error {
                Some(e) => Outcome::Close(std::format!("a Produce with acks=0 failed: {e}")),
                None => Outcome::Continue,
            });
        }
        let body = ProduceResponse { responses: topics.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(Outcome::Continue)
    }

    fn fetch(
        &mut self,
        reply: ReplyTo,
        f: crate::messages::FetchRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::messages::fetch::{FetchResponse, FetchableTopicResponse, PartitionData};
        let v = reply.api_version;
        if v >= 7 && f.session_id() != 0 {
            let body = FetchResponse {
                error_code: ErrorCode::FetchSessionIdNotFound.to_i16(),
                session_id: 0,
                ..Default::default()
            };
            ServerConn::encode_response(reply, &body, out)?;
            return Ok(());
        }
        let start = Instant::now();
        let max_wait = Duration::from_millis(u64::try_from(f.max_wait_ms()).unwrap_or(0));
        let deadline = start + max_wait;
        let min_bytes = usize::try_from(f.min_bytes()).unwrap_or(0);
        let max_bytes = usize::try_from(f.max_bytes()).unwrap_or(0).min(self.shared.config.fetch_max_bytes);
        // (topic name, topic id, [(partition, error, high watermark, records)]): the records
        // are held in their segment, not copied (written from there by `Outbox`).
        type Answer = (String, Uuid, Vec<(i32, i16, i64, Option<(Segment, Range<usize>)>)>);
        let answers: Vec<Answer> = loop {
            let seen = self.shared.append_count();
            let mut total = 0usize;
            let mut errors = false;
            let mut answers: Vec<Answer> = Vec::new();
            for t in f.topics() {
                let (name, id) = if v >= 13 {
                    (self.shared.topics.name_of(t.topic_id()), t.topic_id())
                } else {
                    (Some(t.topic().to_string()), Uuid::ZERO)
                };
                let mut parts = Vec::new();
                for p in t.partitions() {
                    let index = p.partition();
                    let partition = name.as_deref().and_then(|n| self.shared.topics.partition(n, index));
                    let Some(partition) = partition else {
                        errors = true;
                        let code = if name.is_none() {
                            ErrorCode::UnknownTopicId
                        } else {
                            ErrorCode::UnknownTopicOrPartition
                        };
                        parts.push((index, code.to_i16(), -1, None));
                        continue;
                    };
                    if v >= 9 && p.current_leader_epoch() > 0 {
                        errors = true;
                        parts.push((index, ErrorCode::UnknownLeaderEpoch.to_i16(), -1, None));
                        continue;
                    }
                    let log = partition.lock();
                    let hw = log.next_offset();
                    let offset = p.fetch_offset();
                    if offset < 0 || offset > hw {
                        errors = true;
                        parts.push((index, ErrorCode::OffsetOutOfRange.to_i16(), hw, None));
                        continue;
                    }
                    let limit = usize::try_from(p.partition_max_bytes())
                        .unwrap_or(0)
                        .min(max_bytes.saturating_sub(total));
                    let records = log.read(offset, limit, total == 0);
                    drop(log);
                    total += records.as_ref().map_or(0, |(_, r)| r.len());
                    parts.push((index, 0, hw, records));
                }
                answers.push((name.unwrap_or_default(), id, parts));
            }
            let now = Instant::now();
            if total >= min_bytes.max(1) || errors || now >= deadline || self.shared.stopping() {
                break answers;
            }
            self.shared.wait_for_append(seen, deadline);
        };
        let responses: Vec<FetchableTopicResponse<'_>> = answers
            .iter()
            .map(|(name, id, parts)| FetchableTopicResponse {
                topic: if v >= 13 { "" } else { name.as_str() }.into(),
                topic_id: *id,
                partitions: parts
                    .iter()
                    .map(|(index, code, hw, records)| PartitionData {
                        partition_index: *index,
                        error_code: *code,
                        high_watermark: *hw,
                        last_stable_offset: *hw,
                        log_start_offset: if v >= 5 { 0 } else { -1 },
                        aborted_transactions: None,
                        records: Some(records.as_ref().map_or(&[][..], |(s, r)| &s[r.clone()]).into()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        let body = FetchResponse { responses: responses.into(), session_id: 0, ..Default::default() };
        // Encoded around the records: the other bytes into `out`, and each partition's
        // records spliced in where they go, from the segment that holds them.
        let len = ServerConn::vectored_response_len(reply, &body)?;
        let mut pieces = std::vec![Part::Encoded(&[]); len.parts];
        let (at, before) = (out.len(), out.total_len());
        let mut buf = std::vec![0u8; len.buf];
        ServerConn::encode_response_vectored(reply, &body, &mut buf, &mut pieces)?;
        let mut held = answers.iter().flat_map(|(_, _, parts)| parts).filter_map(|p| p.3.as_ref());
        let mut encoded = 0;
        for piece in &pieces {
            match piece {
                Part::Encoded(b) => {
                    out.extend_from_slice(b);
                    encoded += b.len();
                }
                Part::Records(r) => {
                    // Every non-empty records field is a part, in wire order: the held
                    // segments in the order of `answers`.
                    let (segment, range) = held.next().expect("one held segment per records part");
                    debug_assert_eq!(r.as_ptr(), segment[range.clone()].as_ptr());
                    out.splice(segment.clone(), range.clone());
                }
            }
        }
        debug_assert_eq!((at + encoded, out.total_len() - before), (out.len(), len.total));
        Ok(())
    }

    fn list_offsets(
        &mut self,
        reply: ReplyTo,
        l: crate::messages::ListOffsetsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::messages::list_offsets::{
            ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse,
        };
        let v = reply.api_version;
        let limit = self.shared.config.max_decompressed_bytes;
        let mut topics = Vec::new();
        for t in l.topics() {
            let mut parts = Vec::new();
            for p in t.partitions() {
                let index = p.partition_index();
                let mut r = ListOffsetsPartitionResponse {
                    partition_index: index,
                    timestamp: -1,
                    offset: -1,
                    leader_epoch: -1,
                    ..Default::default()
                };
                match self.shared.topics.partition(t.name(), index) {
                    None => r.error_code = ErrorCode::UnknownTopicOrPartition.to_i16(),
                    Some(_) if v >= 4 && p.current_leader_epoch() > 0 => {
                        r.error_code = ErrorCode::UnknownLeaderEpoch.to_i16()
                    }
                    Some(partition) => {
                        let log = partition.lock();
                        let found = match p.timestamp() {
                            -1 => Some((-1, log.next_offset())),
                            -2 | -4 => Some((-1, 0)),
                            -3 => log.max_timestamp(&mut self.scratch, limit),
                            ts if ts >= 0 => log.offset_for_timestamp(ts, &mut self.scratch, limit),
                            _ => None,
                        };
                        if let Some((ts, offset)) = found {
                            r.timestamp = ts;
                            r.offset = offset;
                            if v >= 4 {
                                r.leader_epoch = 0;
                            }
                        }
                    }
                }
                parts.push(r);
            }
            topics.push(ListOffsetsTopicResponse {
                name: t.name().into(),
                partitions: parts.into(),
                ..Default::default()
            });
        }
        let body = ListOffsetsResponse { topics: topics.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    fn create_topics(
        &mut self,
        reply: ReplyTo,
        c: crate::messages::CreateTopicsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::messages::create_topics::{
            CreatableTopicConfigs, CreatableTopicResult, CreateTopicsResponse,
        };
        let node = self.shared.config.node_id;
        let mut results = Vec::new();
        for t in c.topics() {
            let name = t.name();
            let mut partitions = if t.num_partitions() == -1 {
                self.shared.config.default_partitions
            } else {
                t.num_partitions()
            };
            let rf = if t.replication_factor() == -1 { 1 } else { t.replication_factor() };
            let assignments = t.assignments();
            let check = (|| -> Result<Vec<(String, String)>, (ErrorCode, String)> {
                valid_topic_name(name).map_err(|m| (ErrorCode::InvalidTopicException, m))?;
                if !assignments.is_empty() {
                    if t.num_partitions() != -1 || t.replication_factor() != -1 {
                        return Err((
                            ErrorCode::InvalidRequest,
                            "Both numPartitions or replicationFactor and replicasAssignments were set."
                                .into(),
                        ));
                    }
                    if assignments.iter().any(|a| a.broker_ids().iter().collect::<Vec<i32>>() != [node]) {
                        return Err((
                            ErrorCode::InvalidReplicaAssignment,
                            std::format!("every replica must be broker {node}"),
                        ));
                    }
                    partitions = assignments.len() as i32;
                } else if rf != 1 {
                    return Err((
                        ErrorCode::InvalidReplicationFactor,
                        std::format!(
                            "Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached because only 1 broker(s) are registered."
                        ),
                    ));
                }
                if partitions <= 0 {
                    return Err((
                        ErrorCode::InvalidPartitions,
                        "Number of partitions must be larger than 0.".into(),
                    ));
                }
                let mut configs = Vec::new();
                for cfg in t.configs() {
                    if !TOPIC_CONFIGS.iter().any(|(n, _, _)| *n == cfg.name()) {
                        return Err((
                            ErrorCode::InvalidConfig,
                            std::format!("Unknown topic config name: {}", cfg.name()),
                        ));
                    }
                    let Some(value) = cfg.value() else {
                        return Err((
                            ErrorCode::InvalidConfig,
                            std::format!("Null value not supported for topic configs: {}", cfg.name()),
                        ));
                    };
                    configs.push((cfg.name().to_string(), value.to_string()));
                }
                if self.shared.topics.id_of(name).is_some() {
                    return Err((
                        ErrorCode::TopicAlreadyExists,
                        std::format!("Topic '{name}' already exists."),
                    ));
                }
                Ok(configs)
            })();
            let result = match check {
                Err(e) => Err(e),
                Ok(configs) if c.validate_only() => Ok((Uuid::ZERO, configs)),
                Ok(configs) => self
                    .shared
                    .topics
                    .create(self.shared, name, partitions, configs.clone())
                    .map(|id| (id, configs)),
            };
            results.push(match result {
                Ok((id, configs)) => {
                    let described: Vec<CreatableTopicConfigs<'_>> = TOPIC_CONFIGS
                        .iter()
                        .map(|&(n, default, _)| {
                            let set = configs.iter().find(|(k, _)| k == n);
                            CreatableTopicConfigs {
                                name: n.into(),
                                value: Some(set.map_or(default, |(_, v)| v.as_str()).to_string().into()),
                                read_only: false,
                                config_source: if set.is_some() { 1 } else { 5 },
                                is_sensitive: false,
                                ..Default::default()
                            }
                        })
                        .collect();
                    if reply.api_version >= 5 {
                        CreatableTopicResult {
                            name: name.into(),
                            topic_id: if reply.api_version >= 7 { id } else { Uuid::ZERO },
                            num_partitions: partitions,
                            replication_factor: 1,
                            configs: Some(described.into()),
                            ..Default::default()
                        }
                    } else {
                        CreatableTopicResult { name: name.into(), ..Default::default() }
                    }
                }
                Err((code, message)) => CreatableTopicResult {
                    name: name.into(),
                    error_code: code.to_i16(),
                    error_message: Some(message.into()),
                    num_partitions: -1,
                    replication_factor: -1,
                    ..Default::default()
                },
            });
        }
        let body = CreateTopicsResponse { topics: results.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    fn offset_fetch(
        &mut self,
        reply: ReplyTo,
        f: crate::messages::OffsetFetchRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::messages::offset_fetch::{
            OffsetFetchResponse, OffsetFetchResponseGroup, OffsetFetchResponsePartition,
            OffsetFetchResponsePartitions, OffsetFetchResponseTopic, OffsetFetchResponseTopics,
        };
        let v = reply.api_version;
        // (group, [(topic name, topic id, [(partition, offset, epoch, metadata, error)])])
        type Parts = Vec<(i32, i64, i32, Option<String>, i16)>;
        // A topic asked for: its name (None for an unknown id), its id, its partitions.
        type Wanted = (Option<String>, Uuid, Vec<i32>);
        let lookup = |group: &str, wanted: Option<Vec<Wanted>>| -> Vec<(String, Uuid, Parts)> {
            let g = self.shared.groups.lock();
            let committed = g.get(group).map(|g| &g.offsets);
            match wanted {
                None => {
                    let mut out: Vec<(String, Uuid, Parts)> = Vec::new();
                    if let Some(c) = committed {
                        for ((topic, p), o) in c {
                            let entry = (*p, o.offset, o.leader_epoch, o.metadata.clone(), 0);
                            match out.last_mut() {
                                Some(last) if last.0 == *topic => last.2.push(entry),
                                _ => out.push((topic.clone(), Uuid::ZERO, std::vec![entry])),
                            }
                        }
                    }
                    drop(g);
                    for t in &mut out {
                        t.1 = self.shared.topics.id_of(&t.0).unwrap_or_default();
                    }
                    out
                }
                Some(list) => list
                    .into_iter()
                    .map(|(name, id, parts)| {
                        let parts = parts
                            .into_iter()
                            .map(|p| match (&name, committed) {
                                (None, _) => (p, -1, -1, None, ErrorCode::UnknownTopicId.to_i16()),
                                (Some(n), Some(c)) => match c.get(&(n.clone(), p)) {
                                    Some(o) => (p, o.offset, o.leader_epoch, o.metadata.clone(), 0),
                                    None => (p, -1, -1, Some(String::new()), 0),
                                },
                                (Some(_), None) => (p, -1, -1, Some(String::new()), 0),
                            })
                            .collect();
                        (name.unwrap_or_default(), id, parts)
                    })
                    .collect(),
            }
        };
        if v < 8 {
            let wanted = f.topics().map(|ts| {
                ts.iter()
                    .map(|t| (Some(t.name().to_string()), Uuid::ZERO, t.partition_indexes().iter().collect()))
                    .collect()
            });
            let found = lookup(f.group_id(), wanted);
            let topics: Vec<OffsetFetchResponseTopic<'_>> = found
                .iter()
                .map(|(name, _, parts)| OffsetFetchResponseTopic {
                    name: name.as_str().into(),
                    partitions: parts
                        .iter()
                        .map(|(p, offset, epoch, md, code)| OffsetFetchResponsePartition {
                            partition_index: *p,
                            committed_offset: *offset,
                            committed_leader_epoch: if v >= 5 { *epoch } else { -1 },
                            metadata: md.as_deref().map(Into::into),
                            error_code: *code,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect();
            let body = OffsetFetchResponse { topics: topics.into(), ..Default::default() };
            ServerConn::encode_response(reply, &body, out)?;
            return Ok(());
        }
        let mut groups = Vec::new();
        for g in f.groups() {
            let wanted = g.topics().map(|ts| {
                ts.iter()
                    .map(|t| {
                        if v >= 10 {
                            (
                                self.shared.topics.name_of(t.topic_id()),
                                t.topic_id(),
                                t.partition_indexes().iter().collect(),
                            )
                        } else {
                            (Some(t.name().to_string()), Uuid::ZERO, t.partition_indexes().iter().collect())
                        }
                    })
                    .collect()
            });
            groups.push((g.group_id().to_string(), lookup(g.group_id(), wanted)));
        }
        let groups: Vec<OffsetFetchResponseGroup<'_>> = groups
            .iter()
            .map(|(id, topics)| OffsetFetchResponseGroup {
                group_id: id.as_str().into(),
                topics: topics
                    .iter()
                    .map(|(name, tid, parts)| OffsetFetchResponseTopics {
                        name: if v >= 10 { "" } else { name.as_str() }.into(),
                        topic_id: if v >= 10 { *tid } else { Uuid::ZERO },
                        partitions: parts
                            .iter()
                            .map(|(p, offset, epoch, md, code)| OffsetFetchResponsePartitions {
                                partition_index: *p,
                                committed_offset: *offset,
                                committed_leader_epoch: *epoch,
                                metadata: md.as_deref().map(Into::into),
                                error_code: *code,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        let body = OffsetFetchResponse { groups: groups.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    fn describe_configs(
        &mut self,
        reply: ReplyTo,
        d: crate::messages::DescribeConfigsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::messages::describe_configs::{
            DescribeConfigsResourceResult, DescribeConfigsResponse, DescribeConfigsResult,
        };
        let config = &self.shared.config;
        let broker_configs: Vec<(&str, String, i8)> = std::vec![
            ("auto.create.topics.enable", config.auto_create_topics.to_string(), 1),
            ("broker.id", config.node_id.to_string(), 3),
            ("default.replication.factor", "1".into(), 3),
            ("message.max.bytes", config.max_message_bytes.to_string(), 3),
            ("num.partitions", config.default_partitions.to_string(), 3),
            ("offsets.topic.replication.factor", "1".into(), 4),
        ];
        // (name, value, config source, config type)
        type Entry = (String, String, i8, i8);
        let mut results = Vec::new();
        for r in d.resources() {
            let keys: Option<Vec<&str>> = r.configuration_keys().map(|k| k.iter().collect());
            let wanted = |name: &str| keys.as_ref().is_none_or(|k| k.is_empty() || k.contains(&name));
            let name = r.resource_name();
            let (code, message, entries): (ErrorCode, Option<String>, Vec<Entry>) = match r.resource_type() {
                2 => match self.shared.topics.with(|all| all.get(name).map(|t| t.configs.clone())) {
                    None => (
                        ErrorCode::UnknownTopicOrPartition,
                        Some(std::format!("Topic {name} does not exist")),
                        Vec::new(),
                    ),
                    Some(set) => (
                        ErrorCode::None,
                        None,
                        TOPIC_CONFIGS
                            .iter()
                            .filter(|(n, _, _)| wanted(n))
                            .map(|&(n, default, ty)| match set.iter().find(|(k, _)| k == n) {
                                Some((_, value)) => (n.to_string(), value.clone(), 1, ty),
                                None => (n.to_string(), default.to_string(), 5, ty),
                            })
                            .collect(),
                    ),
                },
                4 if name.is_empty() || name == config.node_id.to_string() => (
                    ErrorCode::None,
                    None,
                    broker_configs
                        .iter()
                        .filter(|(n, _, _)| wanted(n))
                        .map(|(n, value, ty)| (n.to_string(), value.clone(), 4, *ty))
                        .collect(),
                ),
                4 => (ErrorCode::InvalidRequest, Some(std::format!("unknown broker {name}")), Vec::new()),
                other => (
                    ErrorCode::InvalidRequest,
                    Some(std::format!("resource type {other} is not described by this broker")),
                    Vec::new(),
                ),
            };
            results.push((code, message, r.resource_type(), name.to_string(), entries));
        }
        let results: Vec<DescribeConfigsResult<'_>> = results
            .iter()
            .map(|(code, message, ty, name, entries)| DescribeConfigsResult {
                error_code: code.to_i16(),
                error_message: message.as_deref().map(Into::into),
                resource_type: *ty,
                resource_name: name.as_str().into(),
                configs: entries
                    .iter()
                    .map(|(n, value, source, config_type)| DescribeConfigsResourceResult {
                        name: n.as_str().into(),
                        value: Some(value.as_str().into()),
                        read_only: *ty == 4,
                        config_source: *source,
                        is_sensitive: false,
                        config_type: if reply.api_version >= 3 { *config_type } else { 0 },
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        let body = DescribeConfigsResponse { results: results.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }
}

/// Answers a request of an API (or version) this broker does not serve: the response of
/// that API at the request's version, every field at its default but the top-level
/// `ErrorCode`, which is UNSUPPORTED_VERSION (35). A request that gets no response gets
/// none.
pub(crate) fn unsupported(reply: ReplyTo, out: &mut Outbox) -> Result<(), ConnError> {
    use crate::reflect::{Encoding, StructValue, Value};
    if !reply.expects_response {
        return Ok(());
    }
    let schema = crate::reflect::response_schema(reply.api_key);
    let mut body = StructValue::new(schema.body);
    let _ = body.set("ErrorCode", Value::Int16(ErrorCode::UnsupportedVersion.to_i16()));
    let encoding = Encoding::body(schema, reply.api_version);
    let len = body.encoded_len(encoding).map_err(|_| {
        ConnError::Encode(crate::error::EncodeError::BufferTooSmall { needed: 0, available: 0 })
    })?;
    let flexible_header = reply.api_key.response_header_version(reply.api_version) >= 1;
    let header_len = 4 + usize::from(flexible_header);
    let size = i32::try_from(header_len + len).unwrap_or(i32::MAX);
    let at = out.len();
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(&reply.correlation_id.to_be_bytes());
    if flexible_header {
        out.push(0);
    }
    let start = out.len();
    out.resize(start + len, 0);
    if body.encode(encoding, &mut out[start..]).is_err() {
        out.truncate(at);
    }
    Ok(())
}
