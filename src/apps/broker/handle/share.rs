//! Share groups (KIP-932): ShareGroupHeartbeat and ShareGroupDescribe (the coordinator is
//! `super::super::share`).

use super::*;
use crate::apps::broker::host::Host;
use crate::apps::broker::share::Heartbeat;

impl Handler<'_> {
    pub(super) fn share_group_heartbeat(
        &mut self,
        reply: ReplyTo,
        h: crate::codec::messages::ShareGroupHeartbeatRequestView<'_>,
        client_id: &str,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::share_group_heartbeat::{
            Assignment, ShareGroupHeartbeatResponse, TopicPartitions,
        };
        let topics = self.shared.topics();
        // Topics it subscribes to and may not describe fail the heartbeat, as in Kafka.
        let subscribed: Option<Vec<String>> =
            h.subscribed_topic_names().map(|n| n.iter().map(Into::into).collect());
        if let Some(names) = &subscribed
            && let Some(refused) = names.iter().find(|n| !self.allowed(op::DESCRIBE, resource::TOPIC, n))
        {
            let body = ShareGroupHeartbeatResponse {
                error_code: ErrorCode::TopicAuthorizationFailed.to_i16(),
                error_message: Some(std::format!("Unauthorized topics: {refused}").into()),
                ..Default::default()
            };
            ServerConn::encode_response(reply, &body, out)?;
            return Ok(());
        }
        let other_group = self.shared.groups.lock().contains_key(h.group_id());
        let config = &self.shared.config;
        let result = self.shared.shares.heartbeat(
            Heartbeat {
                group_id: h.group_id(),
                member_id: h.member_id(),
                member_epoch: h.member_epoch(),
                rack_id: h.rack_id(),
                subscribed,
                client_id,
                client_host: &self.client_host,
            },
            &topics,
            other_group,
            config.share_session_timeout,
            config.share_delivery_count_limit,
        );
        let body = match result {
            Err((code, message)) => ShareGroupHeartbeatResponse {
                error_code: code.to_i16(),
                error_message: Some(message.into()),
                ..Default::default()
            },
            Ok(beat) => ShareGroupHeartbeatResponse {
                member_id: Some(h.member_id().into()),
                member_epoch: beat.member_epoch,
                heartbeat_interval_ms: if beat.member_epoch == -1 {
                    0
                } else {
                    config.share_heartbeat_interval.as_millis().min(i32::MAX as u128) as i32
                },
                assignment: beat.assignment.map(|by_topic| Assignment {
                    topic_partitions: by_topic
                        .into_iter()
                        .map(|(id, parts)| TopicPartitions {
                            topic_id: id,
                            partitions: parts.into(),
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

    pub(super) fn share_group_describe(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::ShareGroupDescribeRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::share_group_describe::{
            Assignment, DescribedGroup, Member, ShareGroupDescribeResponse, TopicPartitions,
        };
        let names: std::collections::BTreeMap<Uuid, String> =
            self.shared.topics().into_iter().map(|(name, id, _)| (id, name)).collect();
        let with_ops = d.include_authorized_operations();
        // The classic and consumer groups asked about, before the share groups' lock (the
        // groups' lock is never taken inside it).
        let classic: std::collections::BTreeSet<&str> = {
            let g = self.shared.groups.lock();
            d.group_ids().iter().filter(|id| g.contains_key(*id)).collect()
        };
        let shares = self.shared.shares.lock();
        let mut groups = Vec::new();
        for id in d.group_ids() {
            let mut g =
                DescribedGroup { group_id: id.into(), authorized_operations: i32::MIN, ..Default::default() };
            if !self.allowed(op::DESCRIBE, resource::GROUP, id) {
                g.error_code = ErrorCode::GroupAuthorizationFailed.to_i16();
                groups.push(g);
                continue;
            }
            if !self.coordinates(CoordinatorKind::Group, id) {
                g.error_code = ErrorCode::NotCoordinator.to_i16();
                groups.push(g);
                continue;
            }
            let Some(sg) = shares.groups.get(id) else {
                g.error_code = ErrorCode::GroupIdNotFound.to_i16();
                g.error_message = Some(if classic.contains(id) {
                    std::format!("Group {id} is not a share group.").into()
                } else {
                    std::format!("Group {id} not found.").into()
                });
                groups.push(g);
                continue;
            };
            g.group_state = sg.state_name().into();
            g.group_epoch = sg.epoch;
            g.assignment_epoch = sg.assignment_epoch;
            g.assignor_name = "simple".into();
            g.authorized_operations =
                if with_ops { self.authorized_operations(resource::GROUP, id) } else { i32::MIN };
            g.members = sg
                .members
                .values()
                .map(|m| Member {
                    member_id: m.id.clone().into(),
                    rack_id: m.rack_id.clone().map(Into::into),
                    member_epoch: m.epoch,
                    client_id: m.client_id.clone().into(),
                    client_host: m.client_host.clone().into(),
                    subscribed_topic_names: m.subscribed.iter().map(|n| n.clone().into()).collect(),
                    assignment: Assignment {
                        topic_partitions: m
                            .assigned
                            .iter()
                            .map(|(tid, parts)| TopicPartitions {
                                topic_id: *tid,
                                topic_name: names.get(tid).cloned().unwrap_or_default().into(),
                                partitions: parts.clone().into(),
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    },
                    ..Default::default()
                })
                .collect();
            groups.push(g);
        }
        drop(shares);
        let body = ShareGroupDescribeResponse { groups: groups.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }
}
