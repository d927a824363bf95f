//! The classic consumer-group protocol: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup, ListGroups, DescribeGroups and DeleteGroups (the offsets are in `offsets.rs`).

use super::*;

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
                // Kafka's `Errors.message()`, which for NONE is its name.
                error_message: if code == 0 { Some("NONE".into()) } else { None },
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
        // Share groups: protocol type "share", as Kafka lists them.
        let mut listed = listed;
        listed.extend(
            self.shared
                .shares
                .lock()
                .groups
                .iter()
                .filter(|(id, _)| self.coordinates(CoordinatorKind::Group, id))
                .filter(|(id, _)| every || self.allowed(op::DESCRIBE, resource::GROUP, id))
                .map(|(id, g)| (id.clone(), "share".to_string(), g.state_name(), "share"))
                .filter(|(_, _, s, _)| states.is_empty() || states.iter().any(|w| w.eq_ignore_ascii_case(s)))
                .filter(|(_, _, _, ty)| types.is_empty() || types.iter().any(|t| t.eq_ignore_ascii_case(ty))),
        );
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
            if g.get(id).is_some_and(|group| group.consumer.is_some())
                || self.shared.shares.lock().groups.contains_key(id)
            {
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
}
