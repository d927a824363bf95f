//! Requests in, responses out: one function per API, on the typed views and encoders.

use std::ops::Range;
use std::string::{String, ToString};
use std::time::{Duration, Instant};
use std::vec::Vec;

use super::acl::{CLUSTER_NAME, op, resource};
use super::cluster::CoordinatorKind;
use super::groups::{Committed, Join, State};
use super::log::{Rejected, Segment};
use super::outbox::Outbox;
use super::state::{Shared, valid_topic_name};
use crate::ApiKey;
use crate::codec::error_code::ErrorCode;
use crate::codec::messages::RequestBodyView;
use crate::codec::types::{List, Uuid};
use crate::codec::vectored::Part;
use crate::session::conn::{ConnError, ReplyTo, ServerConn, ServerRequest};

mod acls;
mod admin;
mod configs;
mod consumer_groups;
mod data;
mod fetch;
mod kip848;
mod offsets;
mod partitions;
mod sasl;
mod share;
mod share_fetch;
mod share_offsets;
mod txn;

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

/// The message of a CLUSTER_AUTHORIZATION_FAILED given per entry.
pub(crate) const CLUSTER_REFUSED: &str = "Cluster authorization failed.";

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
    /// The node this connection is to (an index into the cluster's nodes).
    node: usize,
    /// After a SaslHandshake v0 for PLAIN: the next frame is the bare token.
    pub raw_sasl: bool,
    sasl: sasl::Session,
    /// A SASL exchange failed: the connection closes after Kafka's delay.
    sasl_failed: bool,
    client_host: String,
    /// The connection's principal for the authorizer: `User:NAME` after SASL, else
    /// `User:ANONYMOUS`.
    principal: String,
    scratch: Vec<u8>,
}

impl<'s> Handler<'s> {
    pub fn new(shared: &'s Shared, peer: &str, node: usize) -> Self {
        let host = peer.rsplit_once(':').map_or(peer, |(h, _)| h).to_string();
        Handler {
            shared,
            node,
            raw_sasl: false,
            sasl: sasl::Session::default(),
            sasl_failed: false,
            client_host: std::format!("/{host}"),
            principal: "User:ANONYMOUS".into(),
            scratch: Vec::new(),
        }
    }

    /// Whether the connection's principal may do `operation` on a resource
    /// ([`super::acl::Acls::authorize`]); always, without [`super::Config::authorizer`].
    fn allowed(&self, operation: i8, resource_type: i8, name: &str) -> bool {
        let Some(az) = &self.shared.config.authorizer else { return true };
        let host = self.client_host.trim_start_matches('/');
        self.shared.acls.authorize(az, &self.principal, host, operation, resource_type, name)
    }

    /// An authorized-operations field, as Kafka computes it: the bit of each operation the
    /// resource type supports ([`super::acl::supported_operations`]) that the principal
    /// may do on the resource (all of them without an authorizer).
    fn authorized_operations(&self, resource_type: i8, name: &str) -> i32 {
        super::acl::supported_operations(resource_type)
            .iter()
            .filter(|&&o| self.allowed(o, resource_type, name))
            .fold(0, |bits, &o| bits | (1 << o))
    }

    /// The cluster's authorized-operations field (Metadata v8-10, DescribeCluster) when
    /// asked for: 0 without DESCRIBE on the cluster, as in Kafka.
    fn cluster_operations(&self) -> i32 {
        if self.allowed(op::DESCRIBE, resource::CLUSTER, CLUSTER_NAME) {
            self.authorized_operations(resource::CLUSTER, CLUSTER_NAME)
        } else {
            0
        }
    }

    /// Whether this node coordinates a group or a transactional id.
    fn coordinates(&self, kind: CoordinatorKind, key: &str) -> bool {
        self.shared.coordinator(kind, key) == self.node
    }

    /// Kafka's leader checks of a partition this node was asked to read or write (with
    /// the request's current leader epoch, -1 for none): NOT_LEADER_OR_FOLLOWER when
    /// another node leads it, else FENCED_LEADER_EPOCH for an older epoch and
    /// UNKNOWN_LEADER_EPOCH for a newer one.
    fn leader_error(&self, leader: (usize, i32), current_leader_epoch: i32) -> Option<ErrorCode> {
        if leader.0 != self.node {
            Some(ErrorCode::NotLeaderOrFollower)
        } else if current_leader_epoch == -1 || current_leader_epoch == leader.1 {
            None
        } else if current_leader_epoch < leader.1 {
            Some(ErrorCode::FencedLeaderEpoch)
        } else {
            Some(ErrorCode::UnknownLeaderEpoch)
        }
    }

    /// A partition's leader (node id, leader epoch) for a KIP-951 `current_leader`, with
    /// its node added to `endpoints` (for `node_endpoints`).
    fn current_leader(&self, topic: &str, partition: i32, endpoints: &mut Vec<usize>) -> Option<(i32, i32)> {
        let (node, epoch) = self.shared.topics.partition(topic, partition)?.leader();
        if !endpoints.contains(&node) {
            endpoints.push(node);
        }
        Some((self.shared.cluster.nodes[node].id, epoch))
    }

    /// The node id and advertised address of node `i`.
    fn endpoint(&self, i: usize) -> (i32, &str, i32) {
        let n = &self.shared.cluster.nodes[i];
        (n.id, n.host.as_str(), n.port)
    }

    /// The (node id, host, port) of each node in `endpoints`, in order: a KIP-951
    /// `node_endpoints`, which each response maps into its own generated type.
    fn node_endpoints<'a>(
        &'a self,
        endpoints: &'a [usize],
    ) -> impl Iterator<Item = (i32, &'a str, i32)> + 'a {
        endpoints.iter().map(|&i| self.endpoint(i))
    }

    /// The error a request of a coordinator's API gets at a node that does not coordinate
    /// its (one) group or transactional id, for the APIs whose response has a top-level
    /// error code; the others check per group, transaction or partition where they serve.
    fn not_coordinator(&self, body: &RequestBodyView<'_>, v: i16) -> bool {
        use CoordinatorKind::{Group, Transaction};
        let (kind, key) = match body {
            RequestBodyView::JoinGroup(r) => (Group, r.group_id()),
            RequestBodyView::SyncGroup(r) => (Group, r.group_id()),
            RequestBodyView::Heartbeat(r) => (Group, r.group_id()),
            RequestBodyView::LeaveGroup(r) => (Group, r.group_id()),
            RequestBodyView::OffsetDelete(r) => (Group, r.group_id()),
            RequestBodyView::ConsumerGroupHeartbeat(r) => (Group, r.group_id()),
            RequestBodyView::ShareGroupHeartbeat(r) => (Group, r.group_id()),
            RequestBodyView::AlterShareGroupOffsets(r) => (Group, r.group_id()),
            RequestBodyView::DeleteShareGroupOffsets(r) => (Group, r.group_id()),
            RequestBodyView::OffsetFetch(r) if (2..=7).contains(&v) => (Group, r.group_id()),
            RequestBodyView::InitProducerId(r) => match r.transactional_id() {
                Some(id) => (Transaction, id),
                None => return false,
            },
            RequestBodyView::AddOffsetsToTxn(r) => (Transaction, r.transactional_id()),
            RequestBodyView::EndTxn(r) => (Transaction, r.transactional_id()),
            _ => return false,
        };
        !self.coordinates(kind, key)
    }

    /// The authorizer's refusal of a whole request, for the APIs whose answer to it is a
    /// top-level error code (Kafka checks these before anything else): READ on the group
    /// of the classic and KIP-848 group APIs, DELETE on OffsetDelete's, DESCRIBE on
    /// FindCoordinator's key (v0-3), WRITE on the transactional id of InitProducerId,
    /// AddOffsetsToTxn (and READ on its group) and EndTxn, IDEMPOTENT_WRITE on the cluster
    /// (or WRITE on some topic) for InitProducerId without one, DESCRIBE on OffsetFetch's
    /// group (v2-7), DESCRIBE on the cluster for DescribeAcls, DescribeLogDirs (v3+) and
    /// DescribeUserScramCredentials. The per-entry checks are in the APIs' handlers.
    fn refused(&self, body: &RequestBodyView<'_>, v: i16) -> Option<ErrorCode> {
        use ErrorCode::{
            ClusterAuthorizationFailed, GroupAuthorizationFailed, TransactionalIdAuthorizationFailed,
        };
        self.shared.config.authorizer.as_ref()?;
        let group = |operation, id: &str| {
            (!self.allowed(operation, resource::GROUP, id)).then_some(GroupAuthorizationFailed)
        };
        let cluster = |operation| {
            (!self.allowed(operation, resource::CLUSTER, CLUSTER_NAME)).then_some(ClusterAuthorizationFailed)
        };
        let txn = |id: &str| {
            (!self.allowed(op::WRITE, resource::TRANSACTIONAL_ID, id))
                .then_some(TransactionalIdAuthorizationFailed)
        };
        match body {
            RequestBodyView::JoinGroup(r) => group(op::READ, r.group_id()),
            RequestBodyView::SyncGroup(r) => group(op::READ, r.group_id()),
            RequestBodyView::Heartbeat(r) => group(op::READ, r.group_id()),
            RequestBodyView::LeaveGroup(r) => group(op::READ, r.group_id()),
            RequestBodyView::ConsumerGroupHeartbeat(r) => group(op::READ, r.group_id()),
            RequestBodyView::ShareGroupHeartbeat(r) => group(op::READ, r.group_id()),
            RequestBodyView::AlterShareGroupOffsets(r) => group(op::READ, r.group_id()),
            RequestBodyView::DeleteShareGroupOffsets(r) => group(op::DELETE, r.group_id()),
            RequestBodyView::ShareFetch(r) => group(op::READ, r.group_id().unwrap_or_default()),
            RequestBodyView::ShareAcknowledge(r) => group(op::READ, r.group_id().unwrap_or_default()),
            RequestBodyView::OffsetDelete(r) => group(op::DELETE, r.group_id()),
            RequestBodyView::FindCoordinator(r) if v <= 3 => match r.key_type() {
                0 => group(op::DESCRIBE, r.key()),
                1 => (!self.allowed(op::DESCRIBE, resource::TRANSACTIONAL_ID, r.key()))
                    .then_some(TransactionalIdAuthorizationFailed),
                _ => None,
            },
            RequestBodyView::InitProducerId(r) => match r.transactional_id() {
                Some(id) => txn(id),
                // Idempotent: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic.
                None => {
                    let az = self.shared.config.authorizer.as_ref()?;
                    let host = self.client_host.trim_start_matches('/');
                    let any_topic = || {
                        self.shared.acls.authorize_by_resource_type(
                            az,
                            &self.principal,
                            host,
                            op::WRITE,
                            resource::TOPIC,
                        )
                    };
                    (!self.allowed(op::IDEMPOTENT_WRITE, resource::CLUSTER, CLUSTER_NAME) && !any_topic())
                        .then_some(ClusterAuthorizationFailed)
                }
            },
            RequestBodyView::OffsetFetch(r) if (2..=7).contains(&v) => group(op::DESCRIBE, r.group_id()),
            // Versions 4+ come from brokers.
            RequestBodyView::AddPartitionsToTxn(_) if v >= 4 => cluster(op::CLUSTER_ACTION),
            RequestBodyView::DescribeLogDirs(_) if v >= 3 => cluster(op::DESCRIBE),
            RequestBodyView::DescribeUserScramCredentials(_) => cluster(op::DESCRIBE),
            RequestBodyView::AddOffsetsToTxn(r) => {
                txn(r.transactional_id()).or_else(|| group(op::READ, r.group_id()))
            }
            RequestBodyView::EndTxn(r) => txn(r.transactional_id()),
            RequestBodyView::DescribeAcls(_) => cluster(op::DESCRIBE),
            _ => None,
        }
    }

    /// Answers one request, appending the response frame (if it gets one) to `out`.
    pub fn handle(&mut self, req: &ServerRequest<'_>, out: &mut Outbox) -> Result<Outcome, ConnError> {
        let reply = req.reply_to();
        if let Some(action) = self.shared.hooks.catch(reply.api_key) {
            use super::hooks::Action;
            match action {
                Action::Pass => {}
                Action::Delay(d) => std::thread::sleep(d),
                Action::Drop => {
                    return Ok(Outcome::Close(std::format!("{} dropped by a hook", reply.api_key.name())));
                }
                Action::Fail(code) => {
                    error_response(reply, code, out)?;
                    return Ok(Outcome::Continue);
                }
                Action::Answer(f) => {
                    let mut frame = Vec::new();
                    f(req, &mut frame)?;
                    out.extend_from_slice(&frame);
                    return Ok(Outcome::Continue);
                }
            }
        }
        let v = reply.api_version;
        let served = self.shared.versions(reply.api_key).is_some_and(|range| range.contains(v));
        if !served {
            unsupported(reply, out)?;
            return Ok(Outcome::Continue);
        }
        let client_id = req.header.client_id().unwrap_or_default();
        let at = out.len();
        let outcome = if let Some(code) = self.refused(&req.body, v) {
            request_error(reply, code, out)?;
            Outcome::Continue
        } else if self.not_coordinator(&req.body, v) {
            request_error(reply, ErrorCode::NotCoordinator, out)?;
            Outcome::Continue
        } else {
            self.serve(req, reply, client_id, out)?
        };
        if let Some(ms) = self.shared.hooks.throttle(reply.api_key) {
            set_throttle(out, at, reply, ms);
        }
        Ok(outcome)
    }

    fn serve(
        &mut self,
        req: &ServerRequest<'_>,
        reply: ReplyTo,
        client_id: &str,
        out: &mut Outbox,
    ) -> Result<Outcome, ConnError> {
        match req.body {
            RequestBodyView::ApiVersions(r) => self.api_versions(reply, r, out)?,
            RequestBodyView::Metadata(m) => self.metadata(reply, m, out)?,
            RequestBodyView::DescribeCluster(d) => self.describe_cluster(reply, d, out)?,
            RequestBodyView::Produce(p) => return self.produce(reply, p, out),
            RequestBodyView::Fetch(f) => self.fetch(reply, f, out)?,
            RequestBodyView::ListOffsets(l) => self.list_offsets(reply, l, out)?,
            RequestBodyView::OffsetForLeaderEpoch(r) => self.offset_for_leader_epoch(reply, r, out)?,
            RequestBodyView::InitProducerId(i) => self.init_producer_id(reply, i, out)?,
            RequestBodyView::CreateTopics(c) => self.create_topics(reply, c, out)?,
            RequestBodyView::CreatePartitions(c) => self.create_partitions(reply, c, out)?,
            RequestBodyView::DeleteTopics(d) => self.delete_topics(reply, d, out)?,
            RequestBodyView::FindCoordinator(f) => self.find_coordinator(reply, f, out)?,
            RequestBodyView::JoinGroup(j) => self.join_group(reply, j, client_id, out)?,
            RequestBodyView::SyncGroup(s) => self.sync_group(reply, s, out)?,
            RequestBodyView::Heartbeat(h) => self.heartbeat(reply, h, out)?,
            RequestBodyView::LeaveGroup(l) => self.leave_group(reply, l, out)?,
            RequestBodyView::OffsetCommit(c) => self.offset_commit(reply, c, out)?,
            RequestBodyView::OffsetFetch(f) => self.offset_fetch(reply, f, out)?,
            RequestBodyView::ListGroups(l) => self.list_groups(reply, l, out)?,
            RequestBodyView::DescribeGroups(d) => self.describe_groups(reply, d, out)?,
            RequestBodyView::DescribeConfigs(d) => self.describe_configs(reply, d, out)?,
            RequestBodyView::SaslHandshake(h) => self.sasl_handshake(reply, h, out)?,
            RequestBodyView::SaslAuthenticate(a) => return self.sasl_authenticate(reply, a, out),
            #[cfg(feature = "broker-scram")]
            RequestBodyView::DescribeUserScramCredentials(d) => {
                self.describe_user_scram_credentials(reply, d, out)?
            }
            #[cfg(feature = "broker-scram")]
            RequestBodyView::AlterUserScramCredentials(a) => {
                self.alter_user_scram_credentials(reply, a, out)?
            }
            RequestBodyView::AddPartitionsToTxn(a) => self.add_partitions_to_txn(reply, a, out)?,
            RequestBodyView::AddOffsetsToTxn(a) => self.add_offsets_to_txn(reply, a, out)?,
            RequestBodyView::TxnOffsetCommit(c) => self.txn_offset_commit(reply, c, out)?,
            RequestBodyView::EndTxn(e) => self.end_txn(reply, e, out)?,
            RequestBodyView::DescribeTransactions(d) => self.describe_transactions(reply, d, out)?,
            RequestBodyView::ListTransactions(l) => self.list_transactions(reply, l, out)?,
            RequestBodyView::DescribeLogDirs(d) => self.describe_log_dirs(reply, d, out)?,
            RequestBodyView::AlterConfigs(a) => self.alter_configs(reply, a, out)?,
            RequestBodyView::IncrementalAlterConfigs(a) => self.incremental_alter_configs(reply, a, out)?,
            RequestBodyView::DeleteRecords(d) => self.delete_records(reply, d, out)?,
            RequestBodyView::DeleteGroups(d) => self.delete_groups(reply, d, out)?,
            RequestBodyView::OffsetDelete(d) => self.offset_delete(reply, d, out)?,
            RequestBodyView::DescribeProducers(d) => self.describe_producers(reply, d, out)?,
            RequestBodyView::ElectLeaders(e) => self.elect_leaders(reply, e, out)?,
            RequestBodyView::DescribeAcls(d) => self.describe_acls(reply, d, out)?,
            RequestBodyView::CreateAcls(c) => self.create_acls(reply, c, out)?,
            RequestBodyView::DeleteAcls(d) => self.delete_acls(reply, d, out)?,
            RequestBodyView::ConsumerGroupHeartbeat(h) => {
                self.consumer_group_heartbeat(reply, h, client_id, out)?
            }
            RequestBodyView::ConsumerGroupDescribe(d) => self.consumer_group_describe(reply, d, out)?,
            RequestBodyView::ShareGroupHeartbeat(h) => {
                self.share_group_heartbeat(reply, h, client_id, out)?
            }
            RequestBodyView::ShareGroupDescribe(d) => self.share_group_describe(reply, d, out)?,
            RequestBodyView::ShareFetch(f) => self.share_fetch(reply, f, out)?,
            RequestBodyView::ShareAcknowledge(a) => self.share_acknowledge(reply, a, out)?,
            RequestBodyView::DescribeShareGroupOffsets(d) => {
                self.describe_share_group_offsets(reply, d, out)?
            }
            RequestBodyView::AlterShareGroupOffsets(a) => self.alter_share_group_offsets(reply, a, out)?,
            RequestBodyView::DeleteShareGroupOffsets(d) => self.delete_share_group_offsets(reply, d, out)?,
            _ => unsupported(reply, out)?,
        }
        Ok(Outcome::Continue)
    }
}

/// Sets the top-level `ThrottleTimeMs` of the response frame written at `at` (if one was
/// and its version has the field), where the generated
/// [`throttle_time_at`](crate::codec::messages::throttle_time_at) says it is.
fn set_throttle(out: &mut Outbox, at: usize, reply: ReplyTo, ms: i32) {
    use crate::codec::messages::throttle_time_at;
    if out.len() <= at {
        return;
    }
    let flexible = reply.api_key.response_header_version(reply.api_version) >= 1;
    let body = at + 8 + usize::from(flexible);
    let Some(bytes) = out.get(body..) else { return };
    if let Some(offset) = throttle_time_at(reply.api_key, reply.api_version, bytes)
        && let Some(slot) = out.get_mut(body + offset..body + offset + 4)
    {
        slot.copy_from_slice(&ms.to_be_bytes());
    }
}

/// Answers a request of an API (or version) this broker does not serve: the response of
/// that API at the request's version, every field at its default but the top-level
/// `ErrorCode`, which is UNSUPPORTED_VERSION (35). A request that gets no response gets
/// none.
pub(crate) fn unsupported(reply: ReplyTo, out: &mut Outbox) -> Result<(), ConnError> {
    error_response(reply, ErrorCode::UnsupportedVersion, out)
}

/// The response of a request's API at its version with every field at its default but the
/// top-level `ErrorCode` (where it has one), set to `code`: the generated
/// [`ResponseBody::error_response`](crate::codec::messages::ResponseBody::error_response).
/// The answer to a request refused as a whole before it is served (by the authorizer, or
/// at a node that does not coordinate it), as Kafka's request classes write it
/// (`getErrorResponse`): [`error_response`], but JoinGroup v7+ has no protocol name,
/// InitProducerId no producer epoch (-1), and DescribeAcls a message.
fn request_error(reply: ReplyTo, code: ErrorCode, out: &mut Outbox) -> Result<(), ConnError> {
    use crate::codec::messages::{DescribeAclsResponse, InitProducerIdResponse, JoinGroupResponse};
    if !reply.expects_response {
        return Ok(());
    }
    let e = code.to_i16();
    match reply.api_key {
        ApiKey::JoinGroup => {
            let protocol_name = if reply.api_version >= 7 { None } else { Some("".into()) };
            let body = JoinGroupResponse { error_code: e, protocol_name, ..Default::default() };
            ServerConn::encode_response(reply, &body, out)?;
        }
        ApiKey::InitProducerId => {
            let body = InitProducerIdResponse {
                error_code: e,
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            };
            ServerConn::encode_response(reply, &body, out)?;
        }
        ApiKey::DescribeAcls => {
            let message = if code == ErrorCode::ClusterAuthorizationFailed { CLUSTER_REFUSED } else { "" };
            let body = DescribeAclsResponse {
                error_code: e,
                error_message: Some(message.into()),
                ..Default::default()
            };
            ServerConn::encode_response(reply, &body, out)?;
        }
        _ => return error_response(reply, code, out),
    }
    Ok(())
}

pub(crate) fn error_response(reply: ReplyTo, code: ErrorCode, out: &mut Outbox) -> Result<(), ConnError> {
    use crate::codec::messages::ResponseBody;
    if !reply.expects_response {
        return Ok(());
    }
    if let Some(body) = ResponseBody::error_response(reply.api_key, reply.api_version, code) {
        ServerConn::encode_response(reply, &body, out)?;
    }
    Ok(())
}
