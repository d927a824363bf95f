//! The committed offsets of every group, classic or consumer: the group-level checks of
//! OffsetCommit and TxnOffsetCommit, the offsets stored, fetched and waited for, and
//! DeleteGroups and OffsetDelete.

use std::string::String;
use std::time::Instant;
use std::vec::Vec;

use super::super::kip848::CommitCheck;
use super::{Committed, Group, Groups, POLL, State};
use crate::codec::error_code::ErrorCode;

impl Groups {
    /// The group-level check of a TxnOffsetCommit (then each partition is stored with
    /// [`Groups::store_offset`]); an older member epoch of a consumer group is
    /// STALE_MEMBER_EPOCH here.
    pub fn check_commit(&self, group_id: &str, generation: i32, member_id: &str) -> ErrorCode {
        match self.check_offset_commit(group_id, generation, member_id, 5, true) {
            CommitCheck::Ok => ErrorCode::None,
            CommitCheck::Fail(code) => code,
            CommitCheck::Partitions(_) => ErrorCode::StaleMemberEpoch,
        }
    }

    /// The group-level check of an OffsetCommit of `version` (or a TxnOffsetCommit) as
    /// Kafka's: a classic group checks the generation, a consumer group the member epoch.
    /// Creates the group of a simple (generation -1) commit.
    pub fn check_offset_commit(
        &self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        version: i16,
        transactional: bool,
    ) -> CommitCheck {
        if group_id.is_empty() {
            return CommitCheck::Fail(ErrorCode::InvalidGroupId);
        }
        let now = Instant::now();
        let mut g = self.lock();
        let group = g.entry(group_id.into()).or_insert_with(|| Group::new(now));
        if let Some(cg) = group.consumer.as_deref() {
            return cg.check_commit(member_id, generation, transactional, version);
        }
        let fail = CommitCheck::Fail;
        if generation < 0 && member_id.is_empty() {
            return if group.state == State::Empty {
                CommitCheck::Ok
            } else {
                fail(ErrorCode::UnknownMemberId)
            };
        }
        if group.state == State::CompletingRebalance {
            return fail(ErrorCode::RebalanceInProgress);
        }
        let Some(m) = group.members.get_mut(member_id) else { return fail(ErrorCode::UnknownMemberId) };
        if generation != group.generation {
            return fail(ErrorCode::IllegalGeneration);
        }
        if !m.joining {
            m.deadline = now + m.session_timeout;
        }
        CommitCheck::Ok
    }

    pub fn store_offset(&self, group_id: &str, topic: &str, partition: i32, c: Committed) {
        let now = Instant::now();
        let mut g = self.lock();
        let group = g.entry(group_id.into()).or_insert_with(|| Group::new(now));
        group.offsets.insert((topic.into(), partition), c);
        drop(g);
        self.cv.notify_all();
    }

    /// A group's committed offset for a partition.
    pub fn committed(&self, group_id: &str, topic: &str, partition: i32) -> Option<i64> {
        let key = (String::from(topic), partition);
        self.lock().get(group_id)?.offsets.get(&key).map(|c| c.offset)
    }

    /// Waits until a group's committed offset for a partition is at least `at_least`, and
    /// returns it; `None` at `deadline` or when `stopping()` says so.
    pub fn wait_for_offset(
        &self,
        group_id: &str,
        (topic, partition): (&str, i32),
        at_least: i64,
        deadline: Instant,
        stopping: impl Fn() -> bool,
    ) -> Option<i64> {
        let key = (String::from(topic), partition);
        let mut g = self.lock();
        loop {
            if let Some(c) = g.get(group_id).and_then(|group| group.offsets.get(&key))
                && c.offset >= at_least
            {
                return Some(c.offset);
            }
            let now = Instant::now();
            if now >= deadline || stopping() {
                return None;
            }
            g = match self.cv.wait_timeout(g, (deadline - now).min(POLL)) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
    }

    /// DeleteGroups of one group, as Kafka's coordinator: an empty group is removed with
    /// its committed offsets; one with members is NON_EMPTY_GROUP, an unknown one
    /// GROUP_ID_NOT_FOUND.
    pub fn delete(&self, group_id: &str) -> ErrorCode {
        if group_id.is_empty() {
            return ErrorCode::InvalidGroupId;
        }
        let mut g = self.lock();
        match g.get(group_id) {
            None => ErrorCode::GroupIdNotFound,
            Some(group)
                if group.state != State::Empty || !group.members.is_empty() || group.consumer_members() =>
            {
                ErrorCode::NonEmptyGroup
            }
            Some(_) => {
                g.remove(group_id);
                self.cv.notify_all();
                ErrorCode::None
            }
        }
    }

    /// OffsetDelete, as Kafka's coordinator: the group-level error, or each partition's
    /// (GROUP_SUBSCRIBED_TO_TOPIC for a topic a member of a live `consumer` group is
    /// subscribed to; the others' offsets are removed). `known(topic, partition)` says
    /// whether a partition exists (else UNKNOWN_TOPIC_OR_PARTITION).
    pub fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
        known: impl Fn(&str, i32) -> bool,
    ) -> Result<Vec<ErrorCode>, ErrorCode> {
        if group_id.is_empty() {
            return Err(ErrorCode::InvalidGroupId);
        }
        let mut g = self.lock();
        let Some(group) = g.get_mut(group_id) else { return Err(ErrorCode::GroupIdNotFound) };
        let live = group.state != State::Empty;
        if live && group.protocol_type.as_deref() != Some("consumer") {
            return Err(ErrorCode::NonEmptyGroup);
        }
        // The topics the members subscribe to (`None`: some subscription could not be read,
        // and every topic counts as subscribed, as in Kafka).
        let subscribed: Option<Vec<String>> = if let Some(cg) = group.consumer.as_deref() {
            Some(
                partitions
                    .iter()
                    .map(|(t, _)| t)
                    .filter(|t| cg.members.values().any(|m| m.subscribes(t)))
                    .cloned()
                    .collect(),
            )
        } else if live {
            let mut all = Vec::new();
            let mut readable = true;
            for m in group.members.values() {
                match subscription_topics(&group.metadata_of(m)) {
                    Some(t) => all.extend(t),
                    None => readable = false,
                }
            }
            readable.then_some(all)
        } else {
            Some(Vec::new())
        };
        let mut codes = Vec::with_capacity(partitions.len());
        for (topic, partition) in partitions {
            if !known(topic, *partition) {
                codes.push(ErrorCode::UnknownTopicOrPartition);
            } else if subscribed.as_ref().is_none_or(|s| s.contains(topic)) {
                codes.push(ErrorCode::GroupSubscribedToTopic);
            } else {
                group.offsets.remove(&(topic.clone(), *partition));
                codes.push(ErrorCode::None);
            }
        }
        Ok(codes)
    }

    /// Drops a deleted topic's committed offsets.
    pub fn forget_topic(&self, topic: &str) {
        let mut g = self.lock();
        for group in g.values_mut() {
            group.offsets.retain(|(t, _), _| t != topic);
        }
    }
}

/// The topics of a consumer protocol subscription (`ConsumerProtocolSubscription`: a
/// version, then an array of topic names, in the classic encoding up to version 3).
fn subscription_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let mut r = crate::codec::wire::Reader::new(metadata);
    r.i16("ConsumerProtocolSubscription.Version").ok()?;
    let count = r.i32("ConsumerProtocolSubscription.Topics").ok()?;
    let count = usize::try_from(count).ok()?;
    let mut topics = Vec::with_capacity(count.min(metadata.len() / 2));
    for _ in 0..count {
        topics.push(String::from(r.str(false, "ConsumerProtocolSubscription.Topics").ok()?));
    }
    Some(topics)
}
