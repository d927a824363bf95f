//! The share-group offset APIs: DescribeShareGroupOffsets (each share partition's start
//! offset), AlterShareGroupOffsets and DeleteShareGroupOffsets (of an empty share group).

use super::*;
use crate::apps::broker::share::partition::SharePartition;

/// Kafka's message of NON_EMPTY_GROUP.
const NOT_EMPTY: &str = "The group is not empty.";

impl Handler<'_> {
    /// A share partition asked for by topic name (`allowed`: whether the topic's ACL lets
    /// the request through): its topic id, leader epoch and end offset, or its error.
    fn share_log_end(&self, allowed: bool, topic: &str, p: i32) -> Result<(Uuid, i32, i64), ErrorCode> {
        let unknown = ErrorCode::UnknownTopicOrPartition;
        if !allowed {
            return Err(ErrorCode::TopicAuthorizationFailed);
        }
        let tid = self.shared.topics.id_of(topic).ok_or(unknown)?;
        let part = self.shared.topics.partition(topic, p).ok_or(unknown)?;
        let log = part.lock();
        Ok((tid, log.leader().1, log.next_offset()))
    }

    pub(super) fn describe_share_group_offsets(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::DescribeShareGroupOffsetsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::describe_share_group_offsets::{
            DescribeShareGroupOffsetsResponse, DescribeShareGroupOffsetsResponseGroup as Group,
            DescribeShareGroupOffsetsResponsePartition as Part,
            DescribeShareGroupOffsetsResponseTopic as Topic,
        };
        let v = reply.api_version;
        let mut groups = Vec::new();
        for g in d.groups() {
            let id = g.group_id();
            let mut group = Group { group_id: id.into(), ..Default::default() };
            let refused = if !self.allowed(op::DESCRIBE, resource::GROUP, id) {
                Some(ErrorCode::GroupAuthorizationFailed)
            } else if !self.coordinates(CoordinatorKind::Group, id) {
                Some(ErrorCode::NotCoordinator)
            } else {
                None
            };
            if let Some(code) = refused {
                group.error_code = code.to_i16();
                groups.push(group);
                continue;
            }
            // (topic, partitions asked), or every share partition the group has.
            let asked: Vec<(String, Vec<i32>)> = match g.topics() {
                Some(topics) => topics
                    .iter()
                    .map(|t| (t.topic_name().to_string(), t.partitions().iter().collect()))
                    .collect(),
                None => {
                    let shares = self.shared.shares.lock();
                    let mut by_topic: std::collections::BTreeMap<String, Vec<i32>> = Default::default();
                    for (tid, p) in shares
                        .groups
                        .get(id)
                        .map(|g| g.partitions.keys().copied().collect::<Vec<_>>())
                        .unwrap_or_default()
                    {
                        if let Some(name) = self.shared.topics.name_of(tid) {
                            by_topic.entry(name).or_default().push(p);
                        }
                    }
                    by_topic.into_iter().collect()
                }
            };
            let mut topics = Vec::new();
            for (name, parts) in asked {
                let tid = self.shared.topics.id_of(&name);
                let allowed = self.allowed(op::DESCRIBE, resource::TOPIC, &name);
                let mut answers = Vec::new();
                for p in parts {
                    let mut part = Part {
                        partition_index: p,
                        start_offset: -1,
                        leader_epoch: -1,
                        lag: -1,
                        ..Default::default()
                    };
                    match self.share_log_end(allowed, &name, p) {
                        Err(code) => part.error_code = code.to_i16(),
                        Ok((tid, epoch, end)) => {
                            let shares = self.shared.shares.lock();
                            if let Some(sp) = shares.groups.get(id).and_then(|g| g.partitions.get(&(tid, p)))
                            {
                                part.start_offset = sp.start;
                                part.leader_epoch = epoch;
                                part.lag = if v >= 1 { (end - sp.start).max(0) } else { -1 };
                            }
                        }
                    }
                    answers.push(part);
                }
                topics.push(Topic {
                    topic_name: name.into(),
                    topic_id: tid.unwrap_or(Uuid::ZERO),
                    partitions: answers.into(),
                    ..Default::default()
                });
            }
            group.topics = topics.into();
            groups.push(group);
        }
        let body = DescribeShareGroupOffsetsResponse { groups: groups.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    /// The error of an Alter or DeleteShareGroupOffsets for the whole group: it must be a
    /// share group without members.
    fn share_group_settable(&self, id: &str) -> Option<(ErrorCode, String)> {
        let shares = self.shared.shares.lock();
        match shares.groups.get(id) {
            None => Some((ErrorCode::GroupIdNotFound, std::format!("Group {id} not found."))),
            Some(g) if !g.members.is_empty() => Some((ErrorCode::NonEmptyGroup, NOT_EMPTY.into())),
            Some(_) => None,
        }
    }

    pub(super) fn alter_share_group_offsets(
        &mut self,
        reply: ReplyTo,
        a: crate::codec::messages::AlterShareGroupOffsetsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::alter_share_group_offsets::{
            AlterShareGroupOffsetsResponse, AlterShareGroupOffsetsResponsePartition as Part,
            AlterShareGroupOffsetsResponseTopic as Topic,
        };
        let id = a.group_id();
        if let Some((code, message)) = self.share_group_settable(id) {
            let body = AlterShareGroupOffsetsResponse {
                error_code: code.to_i16(),
                error_message: Some(message.into()),
                ..Default::default()
            };
            ServerConn::encode_response(reply, &body, out)?;
            return Ok(());
        }
        let mut topics = Vec::new();
        for t in a.topics() {
            let name = t.topic_name();
            let tid = self.shared.topics.id_of(name);
            let allowed = self.allowed(op::READ, resource::TOPIC, name);
            let mut parts = Vec::new();
            for p in t.partitions() {
                let index = p.partition_index();
                let code = match self.share_log_end(allowed, name, index) {
                    Err(code) => code,
                    Ok(_) if p.start_offset() < 0 => ErrorCode::InvalidRequest,
                    Ok((tid, ..)) => {
                        let mut shares = self.shared.shares.lock();
                        match shares.groups.get_mut(id) {
                            Some(g) => {
                                g.partitions.insert((tid, index), SharePartition::new(p.start_offset()));
                                ErrorCode::None
                            }
                            None => ErrorCode::GroupIdNotFound,
                        }
                    }
                };
                parts.push(Part { partition_index: index, error_code: code.to_i16(), ..Default::default() });
            }
            topics.push(Topic {
                topic_name: name.into(),
                topic_id: tid.unwrap_or(Uuid::ZERO),
                partitions: parts.into(),
                ..Default::default()
            });
        }
        let body = AlterShareGroupOffsetsResponse { responses: topics.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn delete_share_group_offsets(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::DeleteShareGroupOffsetsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::delete_share_group_offsets::{
            DeleteShareGroupOffsetsResponse, DeleteShareGroupOffsetsResponseTopic as Topic,
        };
        let id = d.group_id();
        if let Some((code, message)) = self.share_group_settable(id) {
            let body = DeleteShareGroupOffsetsResponse {
                error_code: code.to_i16(),
                error_message: Some(message.into()),
                ..Default::default()
            };
            ServerConn::encode_response(reply, &body, out)?;
            return Ok(());
        }
        let mut topics = Vec::new();
        for t in d.topics() {
            let name = t.topic_name();
            let tid = self.shared.topics.id_of(name);
            let code = match tid {
                _ if !self.allowed(op::READ, resource::TOPIC, name) => ErrorCode::TopicAuthorizationFailed,
                None => ErrorCode::UnknownTopicOrPartition,
                Some(tid) => {
                    if let Some(g) = self.shared.shares.lock().groups.get_mut(id) {
                        g.partitions.retain(|(t, _), _| *t != tid);
                    }
                    ErrorCode::None
                }
            };
            topics.push(Topic {
                topic_name: name.into(),
                topic_id: tid.unwrap_or(Uuid::ZERO),
                error_code: code.to_i16(),
                ..Default::default()
            });
        }
        let body = DeleteShareGroupOffsetsResponse { responses: topics.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }
}
