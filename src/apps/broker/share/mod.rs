//! Share groups (KIP-932), as Apache Kafka's group coordinator and share-partition leader
//! run them: members joining, heartbeating and leaving with member epochs
//! (ShareGroupHeartbeat), partitions assigned to members as Kafka's `SimpleAssignor`
//! balances them (several members may share a partition), and each partition's records
//! acquired, acknowledged, released and archived ([`partition`]), within share sessions
//! ([`sessions`]). A share group's id is its own: a classic or consumer group of the same
//! id makes ShareGroupHeartbeat fail with GROUP_ID_NOT_FOUND.

use std::collections::BTreeMap;
use std::string::{String, ToString};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use std::vec::Vec;

use super::lock::lock;
use crate::codec::error_code::ErrorCode;
use crate::codec::types::Uuid;

pub(crate) mod assign;
pub(crate) mod partition;
pub(crate) mod sessions;

use partition::SharePartition;

/// Kafka's `group.share.max.size` default: members a share group takes.
pub(crate) const MAX_MEMBERS: usize = 200;

/// A share group member.
#[derive(Clone, Debug)]
pub(crate) struct ShareMember {
    pub id: String,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed: Vec<String>,
    pub epoch: i32,
    pub previous_epoch: i32,
    /// Its assignment (topic id → partitions, sorted).
    pub assigned: BTreeMap<Uuid, Vec<i32>>,
    pub deadline: Instant,
}

/// A share group.
#[derive(Debug, Default)]
pub(crate) struct ShareGroup {
    pub epoch: i32,
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, ShareMember>,
    /// The subscribed topics as they were at the last assignment (name, id, partitions).
    topics: Vec<(String, Uuid, usize)>,
    /// Its share partitions, by topic id and partition.
    pub partitions: BTreeMap<(Uuid, i32), SharePartition>,
}

impl ShareGroup {
    /// "Empty" without members, else "Stable" (an assignment is computed at once).
    pub fn state_name(&self) -> &'static str {
        if self.members.is_empty() { "Empty" } else { "Stable" }
    }

    /// Recomputes the target assignment from the members' subscriptions and `topics`
    /// (every topic: name, id, partition count), bumping the group epoch when it asks to
    /// or when the subscribed topics changed.
    fn reassign(&mut self, topics: &[(String, Uuid, usize)], bump: bool) {
        let subscribed: Vec<(String, Uuid, usize)> = topics
            .iter()
            .filter(|(name, ..)| self.members.values().any(|m| m.subscribed.contains(name)))
            .cloned()
            .collect();
        if !bump && subscribed == self.topics {
            return;
        }
        self.topics = subscribed;
        self.epoch += 1;
        let members: Vec<(&str, &[String])> =
            self.members.values().map(|m| (m.id.as_str(), m.subscribed.as_slice())).collect();
        let mut target = assign::simple(&members, &self.topics);
        for m in self.members.values_mut() {
            m.assigned = target.remove(&m.id).unwrap_or_default();
        }
        self.assignment_epoch = self.epoch;
    }

    /// Releases what a member holds in every share partition.
    fn release_member(&mut self, member: &str, limit: i16) -> bool {
        let now = Instant::now();
        let mut freed = false;
        for sp in self.partitions.values_mut() {
            freed |= sp.release(Some(member), now, limit);
        }
        freed
    }
}

/// A heartbeat, as ShareGroupHeartbeat carries it.
pub(crate) struct Heartbeat<'a> {
    pub group_id: &'a str,
    pub member_id: &'a str,
    pub member_epoch: i32,
    pub rack_id: Option<&'a str>,
    pub subscribed: Option<Vec<String>>,
    pub client_id: &'a str,
    pub client_host: &'a str,
}

/// A heartbeat's answer: the member's epoch and, when it may have changed, its assignment.
pub(crate) struct Beat {
    pub member_epoch: i32,
    pub assignment: Option<BTreeMap<Uuid, Vec<i32>>>,
}

/// Every share group and share session.
#[derive(Default)]
pub(crate) struct Shares {
    inner: Mutex<Inner>,
}

#[derive(Default)]
pub(crate) struct Inner {
    pub groups: BTreeMap<String, ShareGroup>,
    pub sessions: sessions::Sessions,
}

/// An error with Kafka's message.
pub(crate) type Refusal = (ErrorCode, String);

fn refuse(code: ErrorCode, message: impl Into<String>) -> Refusal {
    (code, message.into())
}

impl Shares {
    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// ShareGroupHeartbeat, with Kafka's checks and errors. `topics` is every topic (name,
    /// id, partition count); `other_group` says whether the id is a classic or consumer
    /// group's.
    pub fn heartbeat(
        &self,
        h: Heartbeat<'_>,
        topics: &[(String, Uuid, usize)],
        other_group: bool,
        session_timeout: Duration,
        limit: i16,
    ) -> Result<Beat, Refusal> {
        if h.member_id.is_empty() {
            return Err(refuse(ErrorCode::InvalidRequest, "MemberId can't be empty."));
        }
        if h.group_id.is_empty() {
            return Err(refuse(ErrorCode::InvalidRequest, "GroupId can't be empty."));
        }
        if h.rack_id == Some("") {
            return Err(refuse(ErrorCode::InvalidRequest, "RackId can't be empty."));
        }
        if h.member_epoch == 0 {
            if h.subscribed.as_ref().is_none_or(Vec::is_empty) {
                return Err(refuse(
                    ErrorCode::InvalidRequest,
                    "SubscribedTopicNames must be set in first request.",
                ));
            }
        } else if h.member_epoch < -1 {
            return Err(refuse(ErrorCode::InvalidRequest, "MemberEpoch is invalid."));
        }
        if other_group {
            return Err(refuse(
                ErrorCode::GroupIdNotFound,
                std::format!("Group {} is not a share group.", h.group_id),
            ));
        }
        let mut inner = self.lock();
        let now = Instant::now();
        if h.member_epoch == -1 {
            let Some(group) = inner.groups.get_mut(h.group_id) else {
                return Err(refuse(
                    ErrorCode::GroupIdNotFound,
                    std::format!("Group {} not found.", h.group_id),
                ));
            };
            if group.members.remove(h.member_id).is_none() {
                return Err(refuse(
                    ErrorCode::UnknownMemberId,
                    std::format!("Member {} is not a member of group {}.", h.member_id, h.group_id),
                ));
            }
            group.release_member(h.member_id, limit);
            group.reassign(topics, true);
            inner.sessions.remove_member(h.group_id, h.member_id);
            return Ok(Beat { member_epoch: -1, assignment: None });
        }
        if !inner.groups.contains_key(h.group_id) && h.member_epoch != 0 {
            return Err(refuse(
                ErrorCode::GroupIdNotFound,
                std::format!("Share group {} not found.", h.group_id),
            ));
        }
        let group = inner.groups.entry(h.group_id.to_string()).or_default();
        let joined = match group.members.get(h.member_id) {
            None if h.member_epoch != 0 => {
                return Err(refuse(
                    ErrorCode::UnknownMemberId,
                    std::format!("Member {} is not a member of group {}.", h.member_id, h.group_id),
                ));
            }
            None => {
                if group.members.len() >= MAX_MEMBERS {
                    return Err(refuse(
                        ErrorCode::GroupMaxSizeReached,
                        std::format!(
                            "The share group has reached its maximum capacity of {MAX_MEMBERS} members."
                        ),
                    ));
                }
                true
            }
            Some(m) => {
                let e = h.member_epoch;
                if e > m.epoch {
                    return Err(refuse(
                        ErrorCode::FencedMemberEpoch,
                        std::format!(
                            "The share group member has a greater member epoch ({e}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                            m.epoch
                        ),
                    ));
                }
                if e < m.epoch && e != m.previous_epoch && e != 0 {
                    return Err(refuse(
                        ErrorCode::FencedMemberEpoch,
                        std::format!(
                            "The share group member has a smaller member epoch ({e}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                            m.epoch
                        ),
                    ));
                }
                false
            }
        };
        let member = group.members.entry(h.member_id.to_string()).or_insert_with(|| ShareMember {
            id: h.member_id.to_string(),
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            subscribed: Vec::new(),
            epoch: 0,
            previous_epoch: -1,
            assigned: BTreeMap::new(),
            deadline: now,
        });
        member.deadline = now + session_timeout;
        member.client_id = h.client_id.to_string();
        member.client_host = h.client_host.to_string();
        if let Some(rack) = h.rack_id {
            member.rack_id = Some(rack.to_string());
        }
        let mut changed = joined;
        if let Some(mut names) = h.subscribed.clone() {
            names.sort();
            names.dedup();
            if names != member.subscribed {
                member.subscribed = names;
                changed = true;
            }
        }
        group.reassign(topics, changed);
        let epoch = group.epoch;
        let member = group.members.get_mut(h.member_id).expect("the member was just added");
        let bumped = member.epoch != epoch;
        if bumped {
            member.previous_epoch = member.epoch;
            member.epoch = epoch;
        }
        let assignment = (bumped || h.subscribed.is_some()).then(|| member.assigned.clone());
        Ok(Beat { member_epoch: member.epoch, assignment })
    }

    /// Expires members whose session timed out (releasing their records), and record
    /// locks past their deadline. Returns whether records became available again.
    pub fn tick(&self, topics: &[(String, Uuid, usize)], limit: i16) -> bool {
        let now = Instant::now();
        let mut inner = self.lock();
        let mut freed = false;
        let mut gone = Vec::new();
        for (id, group) in inner.groups.iter_mut() {
            let expired: Vec<String> =
                group.members.values().filter(|m| m.deadline <= now).map(|m| m.id.clone()).collect();
            for m in &expired {
                group.members.remove(m);
                freed |= group.release_member(m, limit);
                gone.push((id.clone(), m.clone()));
            }
            if !expired.is_empty() {
                group.reassign(topics, true);
            }
            for sp in group.partitions.values_mut() {
                freed |= sp.release(None, now, limit);
            }
        }
        for (group, member) in gone {
            inner.sessions.remove_member(&group, &member);
        }
        freed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beat<'a>(member: &'a str, epoch: i32, subscribed: Option<&[&str]>) -> Heartbeat<'a> {
        Heartbeat {
            group_id: "g",
            member_id: member,
            member_epoch: epoch,
            rack_id: None,
            subscribed: subscribed.map(|s| s.iter().map(|n| n.to_string()).collect()),
            client_id: "c",
            client_host: "/127.0.0.1",
        }
    }

    #[test]
    fn epochs_as_kafka_checks_them() {
        let s = Shares::default();
        let topics = [("t".to_string(), Uuid([1; 16]), 2)];
        let t = Duration::from_secs(45);
        let a = s.heartbeat(beat("a", 0, Some(&["t"])), &topics, false, t, 5).unwrap();
        assert_eq!(a.member_epoch, 1);
        assert_eq!(a.assignment.unwrap()[&Uuid([1; 16])], [0, 1]);
        let b = s.heartbeat(beat("b", 0, Some(&["t"])), &topics, false, t, 5).unwrap();
        assert_eq!(b.member_epoch, 2);
        // a at its old epoch is behind the group: it gets epoch 2 and one partition.
        let a = s.heartbeat(beat("a", 1, None), &topics, false, t, 5).unwrap();
        assert_eq!(a.member_epoch, 2);
        assert_eq!(a.assignment.unwrap()[&Uuid([1; 16])].len(), 1);
        // The previous epoch is still accepted; one ahead is fenced.
        assert!(s.heartbeat(beat("a", 1, None), &topics, false, t, 5).is_ok());
        let e = s.heartbeat(beat("a", 3, None), &topics, false, t, 5).err().unwrap();
        assert_eq!(e.0, ErrorCode::FencedMemberEpoch);
        let e = s.heartbeat(beat("z", 2, None), &topics, false, t, 5).err().unwrap();
        assert_eq!(e.0, ErrorCode::UnknownMemberId);
        let e = s.heartbeat(beat("z", 0, None), &topics, false, t, 5).err().unwrap();
        assert_eq!(e.0, ErrorCode::InvalidRequest);
        let e = s.heartbeat(beat("z", 0, Some(&["t"])), &topics, true, t, 5).err().unwrap();
        assert_eq!(e.0, ErrorCode::GroupIdNotFound);
        assert_eq!(s.heartbeat(beat("a", -1, None), &topics, false, t, 5).unwrap().member_epoch, -1);
    }
}
