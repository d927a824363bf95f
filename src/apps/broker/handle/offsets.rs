//! Groups' committed offsets: OffsetCommit, OffsetFetch and OffsetDelete.

use super::*;

/// OffsetFetch's answer for one topic: (name, id, [(partition, offset, leader epoch,
/// metadata, error)]).
type FetchedTopic = (String, Uuid, Vec<(i32, i64, i32, Option<String>, i16)>);

impl Handler<'_> {
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
        // Topics asked for, every partition answered `code` with no offset.
        let refuse = |wanted: Vec<Wanted>, code: ErrorCode| -> Answered {
            let code = code.to_i16();
            let answer = |(name, id, parts): Wanted| {
                let parts = parts.into_iter().map(|p| (p, -1, -1, Some(String::new()), code)).collect();
                (name.unwrap_or_default(), id, parts)
            };
            wanted.into_iter().map(answer).collect()
        };
        let split = |wanted: Option<Vec<Wanted>>| -> (Option<Vec<Wanted>>, Answered) {
            let Some(list) = wanted else { return (None, Vec::new()) };
            let (asked, refused): (Vec<Wanted>, Vec<Wanted>) =
                list.into_iter().partition(|w| described(&w.0));
            (Some(asked), refuse(refused, ErrorCode::TopicAuthorizationFailed))
        };
        // A group's answer for the topics wanted (`None`: every topic with offsets), pending
        // offsets UNSTABLE_OFFSET_COMMIT when the request requires stable ones (v7+).
        let fetch = |group: &str, wanted: Option<Vec<Wanted>>| -> Answered {
            let every = wanted.is_none();
            let (wanted, refused) = split(wanted);
            let mut found = lookup(group, wanted);
            if every {
                found.retain(|t| self.allowed(op::DESCRIBE, resource::TOPIC, &t.0));
            }
            found.extend(refused);
            if v >= 7 && f.require_stable() {
                self.unstable(group, &mut found);
            }
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
            let found = if !self.allowed(op::DESCRIBE, resource::GROUP, f.group_id()) {
                refuse(wanted.unwrap_or_default(), ErrorCode::GroupAuthorizationFailed)
            } else {
                let mut found = fetch(f.group_id(), wanted);
                // v2-7 answer NOT_COORDINATOR at the top (in `handle`); v0-1 have only the
                // partitions' error codes.
                if !self.coordinates(CoordinatorKind::Group, f.group_id()) {
                    for (_, _, parts) in &mut found {
                        for p in parts.iter_mut() {
                            *p = (p.0, -1, -1, None, ErrorCode::NotCoordinator.to_i16());
                        }
                    }
                }
                found
            };
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
            groups.push((g.group_id().to_string(), fetch(g.group_id(), wanted), ErrorCode::None));
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
