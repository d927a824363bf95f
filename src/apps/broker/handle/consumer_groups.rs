//! The classic consumer-group protocol and its offsets: FindCoordinator, JoinGroup,
//! SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups, DescribeGroups,
//! DeleteGroups and OffsetDelete.

use super::*;

/// OffsetFetch's answer for one topic: (name, id, [(partition, offset, leader epoch,
/// metadata, error)]).
type FetchedTopic = (String, Uuid, Vec<(i32, i64, i32, Option<String>, i16)>);

impl Handler<'_> {
    pub(super) fn find_coordinator(
        &mut self,
        reply: ReplyTo,
        f: crate::codec::messages::FindCoordinatorRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        let v = reply.api_version;
        use crate::codec::messages::find_coordinator::{Coordinator, FindCoordinatorResponse};
        use CoordinatorKind::{Group, Transaction};
        let key_type = if v >= 1 { f.key_type() } else { 0 };
        let bad_type = !(0..=1).contains(&key_type);
        let kind = if key_type == 1 { Transaction } else { Group };
        let code = if bad_type { ErrorCode::InvalidRequest.to_i16() } else { 0 };
        let body = if v >= 4 {
            let coordinators: Vec<Coordinator<'_>> = f
                .coordinator_keys()
                .iter()
                .map(|key| {
                    // DESCRIBE on each group or transactional id.
                    let refused = match kind {
                        _ if bad_type => None,
                        Group => (!self.allowed(op::DESCRIBE, resource::GROUP, key))
                            .then_some(ErrorCode::GroupAuthorizationFailed),
                        Transaction => (!self.allowed(op::DESCRIBE, resource::TRANSACTIONAL_ID, key))
                            .then_some(ErrorCode::TransactionalIdAuthorizationFailed),
                    };
                    if let Some(code) = refused {
                        return Coordinator {
                            key: key.into(),
                            node_id: -1,
                            host: "".into(),
                            port: -1,
                            error_code: code.to_i16(),
                            ..Default::default()
                        };
                    }
                    let (node, host, port) = self.endpoint(self.shared.coordinator(kind, key));
                    Coordinator {
                        key: key.into(),
                        node_id: if bad_type { -1 } else { node },
                        host: if bad_type { "".into() } else { host.into() },
                        port: if bad_type { -1 } else { port },
                        error_code: code,
                        ..Default::default()
                    }
                })
                .collect();
            FindCoordinatorResponse { coordinators: coordinators.into(), ..Default::default() }
        } else {
            let (node, host, port) = self.endpoint(self.shared.coordinator(kind, f.key()));
            FindCoordinatorResponse {
                error_code: code,
                node_id: if bad_type { -1 } else { node },
                host: if bad_type { "".into() } else { host.into() },
                port: if bad_type { -1 } else { port },
                ..Default::default()
            }
        };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn join_group(
        &mut self,
        reply: ReplyTo,
        j: crate::codec::messages::JoinGroupRequestView<'_>,
        client_id: &str,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        let v = reply.api_version;
        use crate::codec::messages::join_group::{JoinGroupResponse, JoinGroupResponseMember};
        let result = self.shared.groups.join(
            self.shared,
            Join {
                group_id: j.group_id(),
                member_id: j.member_id(),
                instance_id: if v >= 5 { j.group_instance_id() } else { None },
                client_id,
                client_host: &self.client_host,
                session_timeout_ms: j.session_timeout_ms(),
                rebalance_timeout_ms: if v >= 1 { j.rebalance_timeout_ms() } else { j.session_timeout_ms() },
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
        Ok(())
    }

    pub(super) fn sync_group(
        &mut self,
        reply: ReplyTo,
        s: crate::codec::messages::SyncGroupRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        let v = reply.api_version;
        use crate::codec::messages::sync_group::SyncGroupResponse;
        let assignments =
            s.assignments().iter().map(|a| (a.member_id().to_string(), a.assignment().to_vec())).collect();
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
        Ok(())
    }

    pub(super) fn heartbeat(
        &mut self,
        reply: ReplyTo,
        h: crate::codec::messages::HeartbeatRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::heartbeat::HeartbeatResponse;
        let code = self.shared.groups.heartbeat(h.group_id(), h.generation_id(), h.member_id());
        let body = HeartbeatResponse { error_code: code.to_i16(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn leave_group(
        &mut self,
        reply: ReplyTo,
        l: crate::codec::messages::LeaveGroupRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        let v = reply.api_version;
        use crate::codec::messages::leave_group::{LeaveGroupResponse, MemberResponse};
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
        Ok(())
    }

    pub(super) fn offset_commit(
        &mut self,
        reply: ReplyTo,
        c: crate::codec::messages::OffsetCommitRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        let v = reply.api_version;
        use crate::codec::messages::offset_commit::{
            OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
        };
        let group = c.group_id();
        use crate::apps::broker::kip848::CommitCheck;
        // Kafka's order: READ on the group (every partition refused), then READ on each
        // topic, then the group coordinator's checks.
        let check = if !self.allowed(op::READ, resource::GROUP, group) {
            CommitCheck::Fail(ErrorCode::GroupAuthorizationFailed)
        } else if self.coordinates(CoordinatorKind::Group, group) {
            self.shared.groups.check_offset_commit(
                group,
                c.generation_id_or_member_epoch(),
                c.member_id(),
                v,
                false,
            )
        } else {
            CommitCheck::Fail(ErrorCode::NotCoordinator)
        };
        let mut topics = Vec::new();
        for t in c.topics() {
            let name: Option<String> =
                if v >= 10 { self.shared.topics.name_of(t.topic_id()) } else { Some(t.name().into()) };
            let mut parts = Vec::new();
            for p in t.partitions() {
                let i = p.partition_index();
                let stale = match &check {
                    CommitCheck::Partitions(allowed) => {
                        let id = name.as_deref().and_then(|n| self.shared.topics.id_of(n));
                        !id.is_some_and(|id| allowed.contains(&(id, i)))
                    }
                    _ => false,
                };
                let code = if let CommitCheck::Fail(code) = check {
                    code
                } else if name.as_deref().is_some_and(|n| !self.allowed(op::READ, resource::TOPIC, n)) {
                    ErrorCode::TopicAuthorizationFailed
                } else if stale {
                    ErrorCode::StaleMemberEpoch
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
        Ok(())
    }

    pub(super) fn list_groups(
        &mut self,
        reply: ReplyTo,
        l: crate::codec::messages::ListGroupsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        let v = reply.api_version;
        use crate::codec::messages::list_groups::{ListGroupsResponse, ListedGroup};
        let states: Vec<&str> = if v >= 4 { l.states_filter().iter().collect() } else { Vec::new() };
        let types: Vec<&str> = if v >= 5 { l.types_filter().iter().collect() } else { Vec::new() };
        // (id, protocol type, state, type)
        // With DESCRIBE on the cluster, every group; else those the principal may describe.
        let every = self.allowed(op::DESCRIBE, resource::CLUSTER, CLUSTER_NAME);
        let listed: Vec<(String, String, &'static str, &'static str)> = {
            let g = self.shared.groups.lock();
            // Each node lists the groups it coordinates, as Kafka's brokers do.
            g.iter()
                .filter(|(id, _)| self.coordinates(CoordinatorKind::Group, id))
                .filter(|(id, _)| every || self.allowed(op::DESCRIBE, resource::GROUP, id))
                .map(|(id, g)| match g.consumer.as_deref() {
                    Some(cg) => (id.clone(), "consumer".into(), cg.state_name(), "consumer"),
                    None => {
                        (id.clone(), g.protocol_type.clone().unwrap_or_default(), g.state.name(), "classic")
                    }
                })
                .filter(|(_, _, s, _)| states.is_empty() || states.iter().any(|w| w.eq_ignore_ascii_case(s)))
                .filter(|(_, _, _, ty)| types.is_empty() || types.iter().any(|t| t.eq_ignore_ascii_case(ty)))
                .collect()
        };
        let groups: Vec<ListedGroup<'_>> = listed
            .iter()
            .map(|(id, ptype, state, ty)| ListedGroup {
                group_id: id.as_str().into(),
                protocol_type: ptype.as_str().into(),
                group_state: if v >= 4 { *state } else { "" }.into(),
                group_type: if v >= 5 { *ty } else { "" }.into(),
                ..Default::default()
            })
            .collect();
        let body = ListGroupsResponse { groups: groups.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn delete_groups(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::DeleteGroupsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::delete_groups::{DeletableGroupResult, DeleteGroupsResponse};
        let results: Vec<DeletableGroupResult<'_>> = d
            .groups_names()
            .iter()
            .map(|name| {
                let code = if !self.allowed(op::DELETE, resource::GROUP, name) {
                    ErrorCode::GroupAuthorizationFailed
                } else if self.coordinates(CoordinatorKind::Group, name) {
                    self.shared.groups.delete(name)
                } else {
                    ErrorCode::NotCoordinator
                };
                if code == ErrorCode::None {
                    self.shared.log(format_args!("deleted group {name}"));
                }
                DeletableGroupResult {
                    group_id: name.into(),
                    error_code: code.to_i16(),
                    ..Default::default()
                }
            })
            .collect();
        let body = DeleteGroupsResponse { results: results.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn offset_delete(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::OffsetDeleteRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::offset_delete::{
            OffsetDeleteResponse, OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
        };
        let asked: Vec<(String, i32)> = d
            .topics()
            .iter()
            .flat_map(|t| t.partitions().iter().map(move |p| (t.name().to_string(), p.partition_index())))
            .collect();
        let known = |topic: &str, p: i32| self.shared.topics.partition(topic, p).is_some();
        let body = match self.shared.groups.delete_offsets(d.group_id(), &asked, known) {
            Err(code) => OffsetDeleteResponse { error_code: code.to_i16(), ..Default::default() },
            Ok(codes) => {
                let mut codes = codes.into_iter();
                let topics: Vec<OffsetDeleteResponseTopic<'_>> = d
                    .topics()
                    .iter()
                    .map(|t| OffsetDeleteResponseTopic {
                        name: t.name().into(),
                        partitions: t
                            .partitions()
                            .iter()
                            .map(|p| OffsetDeleteResponsePartition {
                                partition_index: p.partition_index(),
                                error_code: codes.next().unwrap_or(ErrorCode::None).to_i16(),
                            })
                            .collect(),
                    })
                    .collect();
                OffsetDeleteResponse { topics: topics.into(), ..Default::default() }
            }
        };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn describe_groups(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::DescribeGroupsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        let v = reply.api_version;
        use crate::codec::messages::describe_groups::{
            DescribeGroupsResponse, DescribedGroup, DescribedGroupMember,
        };
        let with_ops = v >= 3 && d.include_authorized_operations();
        let g = self.shared.groups.lock();
        let mut groups = Vec::new();
        for id in d.groups() {
            if !self.allowed(op::DESCRIBE, resource::GROUP, id) {
                groups.push(DescribedGroup {
                    error_code: ErrorCode::GroupAuthorizationFailed.to_i16(),
                    group_id: id.into(),
                    ..Default::default()
                });
                continue;
            }
            // Kafka fills in the operations of the groups answered without an error.
            let ops = if with_ops { self.authorized_operations(resource::GROUP, id) } else { i32::MIN };
            if !self.coordinates(CoordinatorKind::Group, id) {
                groups.push(DescribedGroup {
                    error_code: ErrorCode::NotCoordinator.to_i16(),
                    group_id: id.into(),
                    authorized_operations: ops,
                    ..Default::default()
                });
                continue;
            }
            if g.get(id).is_some_and(|group| group.consumer.is_some()) {
                // Kafka's DescribeGroups describes classic groups only.
                groups.push(DescribedGroup {
                    error_code: if v >= 6 { ErrorCode::GroupIdNotFound.to_i16() } else { 0 },
                    error_message: (v >= 6)
                        .then(|| std::format!("Group {id} is not a classic group.").into()),
                    group_id: id.into(),
                    group_state: "Dead".into(),
                    authorized_operations: ops,
                    ..Default::default()
                });
                continue;
            }
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
                    member_metadata: if show { group.metadata_of(m).into() } else { List::Borrowed(&[]) },
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
                protocol_data: if show { group.protocol.as_deref().unwrap_or_default() } else { "" }.into(),
                members: members.into(),
                authorized_operations: ops,
                ..Default::default()
            });
        }
        // Only the groups answered without an error carry their operations, as in Kafka.
        for group in groups.iter_mut().filter(|g| g.error_code != 0) {
            group.authorized_operations = i32::MIN;
        }
        // The refused groups first, as Kafka answers them before asking its coordinator.
        groups.sort_by_key(|g| g.error_code != ErrorCode::GroupAuthorizationFailed.to_i16());
        let body = DescribeGroupsResponse { groups: groups.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn offset_fetch(
        &mut self,
        reply: ReplyTo,
        f: crate::codec::messages::OffsetFetchRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::offset_fetch::{
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
        // DESCRIBE on each topic: the topics asked for that are refused are answered
        // TOPIC_AUTHORIZATION_FAILED after the others; asked for every topic, the refused
        // ones are left out.
        let described = |name: &Option<String>| {
            name.as_deref().is_none_or(|n| self.allowed(op::DESCRIBE, resource::TOPIC, n))
        };
        type Answered = Vec<(String, Uuid, Parts)>;
        let split = |wanted: Option<Vec<Wanted>>| -> (Option<Vec<Wanted>>, Answered) {
            let Some(list) = wanted else { return (None, Vec::new()) };
            let (asked, refused): (Vec<Wanted>, Vec<Wanted>) =
                list.into_iter().partition(|w| described(&w.0));
            let code = ErrorCode::TopicAuthorizationFailed.to_i16();
            let refused = refused
                .into_iter()
                .map(|(name, id, parts)| {
                    let parts = parts.into_iter().map(|p| (p, -1, -1, Some(String::new()), code)).collect();
                    (name.unwrap_or_default(), id, parts)
                })
                .collect();
            (Some(asked), refused)
        };
        let fetch = |group: &str, wanted: Option<Vec<Wanted>>| -> Answered {
            let every = wanted.is_none();
            let (wanted, refused) = split(wanted);
            let mut found = lookup(group, wanted);
            if every {
                found.retain(|t| self.allowed(op::DESCRIBE, resource::TOPIC, &t.0));
            }
            found.extend(refused);
            found
        };
        if v < 8 {
            let wanted: Option<Vec<Wanted>> = f.topics().map(|ts| {
                ts.iter()
                    .map(|t| (Some(t.name().to_string()), Uuid::ZERO, t.partition_indexes().iter().collect()))
                    .collect()
            });
            // v0-1 have no top-level error: a refused group is answered in each partition
            // (v2-7 are refused at the top, in `handle`).
            if !self.allowed(op::DESCRIBE, resource::GROUP, f.group_id()) {
                let code = ErrorCode::GroupAuthorizationFailed.to_i16();
                let topics: Vec<OffsetFetchResponseTopic<'_>> = wanted
                    .unwrap_or_default()
                    .iter()
                    .map(|(name, _, parts)| OffsetFetchResponseTopic {
                        name: name.as_deref().unwrap_or_default().to_string().into(),
                        partitions: parts
                            .iter()
                            .map(|&p| OffsetFetchResponsePartition {
                                partition_index: p,
                                committed_offset: -1,
                                error_code: code,
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
            let mut found = fetch(f.group_id(), wanted);
            if v >= 7 && f.require_stable() {
                self.unstable(f.group_id(), &mut found);
            }
            // v2-7 answer NOT_COORDINATOR at the top (in `handle`); v0-1 have only the
            // partitions' error codes.
            if !self.coordinates(CoordinatorKind::Group, f.group_id()) {
                for (_, _, parts) in &mut found {
                    for p in parts.iter_mut() {
                        *p = (p.0, -1, -1, None, ErrorCode::NotCoordinator.to_i16());
                    }
                }
            }
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
            // DESCRIBE on the group; a consumer group checks the member and its epoch (v9+).
            let code = if !self.allowed(op::DESCRIBE, resource::GROUP, g.group_id()) {
                ErrorCode::GroupAuthorizationFailed
            } else if !self.coordinates(CoordinatorKind::Group, g.group_id()) {
                ErrorCode::NotCoordinator
            } else if v >= 9 {
                let all = self.shared.groups.lock();
                all.get(g.group_id())
                    .and_then(|group| group.consumer.as_deref())
                    .map_or(ErrorCode::None, |cg| cg.check_fetch(g.member_id(), g.member_epoch()))
            } else {
                ErrorCode::None
            };
            if code != ErrorCode::None {
                groups.push((g.group_id().to_string(), Vec::new(), code));
                continue;
            }
            let mut found = fetch(g.group_id(), wanted);
            if f.require_stable() {
                self.unstable(g.group_id(), &mut found);
            }
            groups.push((g.group_id().to_string(), found, ErrorCode::None));
        }
        let groups: Vec<OffsetFetchResponseGroup<'_>> = groups
            .iter()
            .map(|(id, topics, code)| OffsetFetchResponseGroup {
                group_id: id.as_str().into(),
                error_code: code.to_i16(),
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

    /// OffsetFetch with `require_stable`: the partitions with offsets pending in an open
    /// transaction get UNSTABLE_OFFSET_COMMIT (the client retries).
    fn unstable(&self, group: &str, found: &mut [FetchedTopic]) {
        let pending = self.shared.txns.pending_offsets(group);
        if pending.is_empty() {
            return;
        }
        for (topic, _, parts) in found.iter_mut() {
            for p in parts.iter_mut() {
                if p.4 == 0 && pending.contains(&(topic.clone(), p.0)) {
                    *p = (p.0, -1, -1, None, ErrorCode::UnstableOffsetCommit.to_i16());
                }
            }
        }
    }
}
