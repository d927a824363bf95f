//! The KIP-848 consumer group protocol: ConsumerGroupHeartbeat and ConsumerGroupDescribe
//! (the coordinator is `super::super::kip848`).

use std::collections::BTreeSet;

use super::*;
use crate::apps::broker::consumer_heartbeat::CgHeartbeat;
use crate::apps::broker::kip848::TopicsView;

impl Handler<'_> {
    pub(super) fn consumer_group_heartbeat(
        &mut self,
        reply: ReplyTo,
        h: crate::codec::messages::ConsumerGroupHeartbeatRequestView<'_>,
        client_id: &str,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::consumer_group_heartbeat::{
            Assignment, ConsumerGroupHeartbeatResponse, ConsumerGroupHeartbeatResponseTopicPartitions,
        };
        let v = reply.api_version;
        let owned = h.topic_partitions().map(|tps| {
            tps.iter()
                .flat_map(|t| t.partitions().iter().map(move |p| (t.topic_id(), p)))
                .collect::<BTreeSet<_>>()
        });
        let result = self.shared.groups.consumer_heartbeat(
            self.shared,
            CgHeartbeat {
                version: v,
                group_id: h.group_id(),
                member_id: h.member_id(),
                member_epoch: h.member_epoch(),
                instance_id: h.instance_id(),
                rack_id: h.rack_id(),
                rebalance_timeout_ms: h.rebalance_timeout_ms(),
                subscribed_names: h.subscribed_topic_names().map(|n| n.iter().map(Into::into).collect()),
                subscribed_regex: if v >= 1 { h.subscribed_topic_regex() } else { None },
                server_assignor: h.server_assignor(),
                owned,
                client_id,
                client_host: &self.client_host,
            },
        );
        let body = match &result {
            Err((code, message)) => ConsumerGroupHeartbeatResponse {
                error_code: code.to_i16(),
                error_message: Some(message.as_str().into()),
                ..Default::default()
            },
            Ok(a) => ConsumerGroupHeartbeatResponse {
                member_id: Some(a.member_id.as_str().into()),
                member_epoch: a.member_epoch,
                heartbeat_interval_ms: a.heartbeat_interval_ms,
                assignment: a.assignment.as_ref().map(|by_topic| Assignment {
                    topic_partitions: by_topic
                        .iter()
                        .map(|(id, parts)| ConsumerGroupHeartbeatResponseTopicPartitions {
                            topic_id: *id,
                            partitions: parts.as_slice().into(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }),
                ..Default::default()
            },
        };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn consumer_group_describe(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::ConsumerGroupDescribeRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::consumer_group_describe::{
            Assignment, ConsumerGroupDescribeResponse, DescribedGroup, Member, TopicPartitions,
        };
        let v = reply.api_version;
        let with_ops = d.include_authorized_operations();
        let topics = TopicsView::of(self.shared);
        let assignment = |parts: &mut dyn Iterator<Item = (Uuid, i32)>| -> Assignment<'static> {
            let mut by_topic: std::collections::BTreeMap<Uuid, Vec<i32>> = Default::default();
            for (t, p) in parts {
                by_topic.entry(t).or_default().push(p);
            }
            Assignment {
                topic_partitions: by_topic
                    .into_iter()
                    .map(|(id, parts)| TopicPartitions {
                        topic_id: id,
                        topic_name: topics.by_id.get(&id).cloned().unwrap_or_default().into(),
                        partitions: parts.into(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }
        };
        let g = self.shared.groups.lock();
        let mut groups = Vec::new();
        for id in d.group_ids() {
            if !self.allowed(op::DESCRIBE, resource::GROUP, id) {
                groups.push(DescribedGroup {
                    group_id: id.into(),
                    error_code: ErrorCode::GroupAuthorizationFailed.to_i16(),
                    authorized_operations: i32::MIN,
                    ..Default::default()
                });
                continue;
            }
            let ops = if with_ops { self.authorized_operations(resource::GROUP, id) } else { i32::MIN };
            if !self.coordinates(CoordinatorKind::Group, id) {
                groups.push(DescribedGroup {
                    group_id: id.into(),
                    error_code: ErrorCode::NotCoordinator.to_i16(),
                    authorized_operations: ops,
                    ..Default::default()
                });
                continue;
            }
            let cg = match g.get(id) {
                Some(group) => match group.consumer.as_deref() {
                    Some(cg) => cg,
                    None => {
                        groups.push(DescribedGroup {
                            group_id: id.into(),
                            error_code: ErrorCode::GroupIdNotFound.to_i16(),
                            error_message: Some(std::format!("Group {id} is not a consumer group.").into()),
                            authorized_operations: ops,
                            ..Default::default()
                        });
                        continue;
                    }
                },
                None => {
                    groups.push(DescribedGroup {
                        group_id: id.into(),
                        error_code: ErrorCode::GroupIdNotFound.to_i16(),
                        error_message: Some(std::format!("Group {id} not found.").into()),
                        authorized_operations: ops,
                        ..Default::default()
                    });
                    continue;
                }
            };
            let members: Vec<Member<'_>> = cg
                .members
                .values()
                .map(|m| Member {
                    member_id: m.id.clone().into(),
                    instance_id: m.instance_id.clone().map(Into::into),
                    rack_id: m.rack_id.clone().map(Into::into),
                    member_epoch: m.epoch,
                    client_id: m.client_id.clone().into(),
                    client_host: m.client_host.clone().into(),
                    subscribed_topic_names: m.subscribed_names.iter().map(|n| n.clone().into()).collect(),
                    subscribed_topic_regex: m.subscribed_regex.clone().map(Into::into),
                    assignment: assignment(&mut m.assigned.keys().copied()),
                    target_assignment: assignment(
                        &mut cg.target.get(&m.id).into_iter().flat_map(|s| s.iter().copied()),
                    ),
                    member_type: if v >= 1 { 1 } else { -1 },
                    ..Default::default()
                })
                .collect();
            groups.push(DescribedGroup {
                group_id: id.into(),
                group_state: cg.state_name().into(),
                group_epoch: cg.epoch,
                assignment_epoch: cg.assignment_epoch,
                assignor_name: cg.preferred_assignor().into(),
                members: members.into(),
                authorized_operations: ops,
                ..Default::default()
            });
        }
        drop(g);
        // Only the groups answered without an error carry their operations, as in Kafka.
        for group in groups.iter_mut().filter(|g| g.error_code != 0) {
            group.authorized_operations = i32::MIN;
        }
        // The refused groups first, as Kafka answers them before asking its coordinator.
        groups.sort_by_key(|g| g.error_code != ErrorCode::GroupAuthorizationFailed.to_i16());
        let body = ConsumerGroupDescribeResponse { groups: groups.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }
}
