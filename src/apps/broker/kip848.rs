//! KIP-848 consumer groups, as Apache Kafka's group coordinator runs them
//! (`GroupMetadataManager`, `ConsumerGroup`, `CurrentAssignmentBuilder`): member epochs, the
//! group epoch, a target assignment computed here by the `uniform` or `range` assignor, and
//! the reconciliation that revokes a partition from its old owner before its new owner gets
//! it. A consumer group lives in the same map as the classic groups
//! ([`super::groups::Group::consumer`]); a group id is one or the other.

use std::collections::{BTreeMap, BTreeSet};
use std::string::{String, ToString};
use std::time::{Duration, Instant};
use std::vec::Vec;

use super::host::Host;
use crate::codec::error_code::ErrorCode;
use crate::codec::types::Uuid;

/// A partition: topic id and index.
pub(crate) type Tp = (Uuid, i32);

/// The server-side assignors served, the first the default (Kafka's
/// `group.consumer.assignors`).
pub(crate) const ASSIGNORS: &[&str] = &["uniform", "range"];

/// A member's reconciliation state (Kafka's `MemberState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemberState {
    Stable,
    UnrevokedPartitions,
    UnreleasedPartitions,
}

/// A member of a consumer group.
#[derive(Clone, Debug)]
pub(crate) struct CgMember {
    pub id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
    pub subscribed_names: Vec<String>,
    pub subscribed_regex: Option<String>,
    pub epoch: i32,
    pub previous_epoch: i32,
    pub state: MemberState,
    /// The partitions it owns, each with the member epoch it was assigned at.
    pub assigned: BTreeMap<Tp, i32>,
    /// Partitions it must give up before its new ones come.
    pub pending_revocation: BTreeSet<Tp>,
    pub session_deadline: Instant,
    /// While it has partitions to revoke: when it is fenced if it has not.
    pub rebalance_deadline: Option<Instant>,
}

impl CgMember {
    pub fn new(id: &str, now: Instant) -> CgMember {
        CgMember {
            id: id.into(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            rebalance_timeout_ms: -1,
            server_assignor: None,
            subscribed_names: Vec::new(),
            subscribed_regex: None,
            epoch: 0,
            previous_epoch: -1,
            state: MemberState::Stable,
            assigned: BTreeMap::new(),
            pending_revocation: BTreeSet::new(),
            session_deadline: now,
            rebalance_deadline: None,
        }
    }

    /// Whether it subscribes to a topic, by name or by its regex.
    pub fn subscribes(&self, topic: &str) -> bool {
        self.subscribed_names.iter().any(|s| s == topic)
            || self
                .subscribed_regex
                .as_deref()
                .and_then(|r| super::regex::Regex::new(r).ok())
                .is_some_and(|r| r.is_match(topic))
    }

    fn reconciled_to(&self, epoch: i32) -> bool {
        self.state == MemberState::Stable && self.epoch == epoch
    }

    /// The topics it subscribes to that exist (names, and those its regex matches).
    fn topics<'t>(&self, topics: &'t TopicsView) -> BTreeSet<&'t str> {
        let regex = self.subscribed_regex.as_deref().and_then(|r| super::regex::Regex::new(r).ok());
        topics
            .by_name
            .keys()
            .filter(|n| {
                self.subscribed_names.iter().any(|s| s == *n) || regex.as_ref().is_some_and(|r| r.is_match(n))
            })
            .map(String::as_str)
            .collect()
    }
}

/// A consumer group's own state (its offsets live in [`Group::offsets`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct ConsumerGroup {
    pub epoch: i32,
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, CgMember>,
    /// The target assignment, by member id.
    pub target: BTreeMap<String, BTreeSet<Tp>>,
    /// The subscribed topics that exist (name, id, partitions) when the epoch was last set.
    pub subscription_metadata: BTreeMap<String, (Uuid, usize)>,
}

impl ConsumerGroup {
    /// Kafka's `ConsumerGroupState`.
    pub fn state_name(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else if self.epoch > self.assignment_epoch {
            "Assigning"
        } else if self.members.values().any(|m| !m.reconciled_to(self.assignment_epoch)) {
            "Reconciling"
        } else {
            "Stable"
        }
    }

    /// The assignor most members ask for, else the default (`uniform`).
    pub fn preferred_assignor(&self) -> &'static str {
        let mut best: (&'static str, usize) = (ASSIGNORS[0], 0);
        for a in ASSIGNORS {
            let n = self.members.values().filter(|m| m.server_assignor.as_deref() == Some(a)).count();
            if n > best.1 {
                best = (a, n);
            }
        }
        best.0
    }

    /// The topics any member subscribes to.
    pub fn subscribed_topics<'t>(&self, topics: &'t TopicsView) -> BTreeSet<&'t str> {
        self.members.values().flat_map(|m| m.topics(topics)).collect()
    }

    pub fn subscription_metadata_now(&self, topics: &TopicsView) -> BTreeMap<String, (Uuid, usize)> {
        self.subscribed_topics(topics)
            .into_iter()
            .filter_map(|n| topics.by_name.get(n).map(|&(id, count)| (n.to_string(), (id, count))))
            .collect()
    }

    /// Removes a member (left, fenced or expired) and bumps the group epoch.
    pub fn fence(&mut self, id: &str, topics: &TopicsView) {
        if self.members.remove(id).is_some() {
            self.target.remove(id);
            self.subscription_metadata = self.subscription_metadata_now(topics);
            self.epoch += 1;
        }
    }

    /// Who owns each partition (assigned or pending revocation), but `except`.
    fn owners(&self, except: &str) -> BTreeSet<Tp> {
        self.members
            .values()
            .filter(|m| m.id != except)
            .flat_map(|m| m.assigned.keys().chain(m.pending_revocation.iter()).copied())
            .collect()
    }

    /// Recomputes the target assignment for the group epoch.
    pub fn assign(&mut self, topics: &TopicsView) {
        let assignor = self.preferred_assignor();
        let subs: Vec<(String, BTreeSet<&str>)> =
            self.members.values().map(|m| (m.id.clone(), m.topics(topics))).collect();
        self.target = match assignor {
            "range" => range(&subs, topics),
            _ => uniform(&subs, topics, &self.target),
        };
        self.assignment_epoch = self.epoch;
    }

    /// Kafka's `CurrentAssignmentBuilder`: moves a member towards its target assignment.
    pub fn reconcile(&mut self, id: &str, owned: Option<&BTreeSet<Tp>>, now: Instant) {
        let target_epoch = self.assignment_epoch;
        let target = self.target.get(id).cloned().unwrap_or_default();
        let owners = self.owners(id);
        let Some(m) = self.members.get_mut(id) else { return };
        if m.reconciled_to(target_epoch) {
            return;
        }
        // Whether the member (by what it reported) still owns any of these partitions; not
        // knowing counts as owning.
        let still_owns =
            |pending: &BTreeSet<Tp>| owned.is_none_or(|o| o.iter().any(|tp| pending.contains(tp)));
        let next_epoch = match m.state {
            MemberState::Stable if m.epoch == target_epoch => return,
            MemberState::UnrevokedPartitions if still_owns(&m.pending_revocation) => return,
            _ => m.epoch,
        };
        let kept: BTreeMap<Tp, i32> =
            m.assigned.iter().filter(|(tp, _)| target.contains(tp)).map(|(tp, e)| (*tp, *e)).collect();
        let revoke: BTreeSet<Tp> = m.assigned.keys().filter(|tp| !target.contains(tp)).copied().collect();
        let mut unreleased = false;
        let mut to_assign = Vec::new();
        for tp in &target {
            if kept.contains_key(tp) {
                continue;
            }
            if owners.contains(tp) {
                unreleased = true;
            } else {
                to_assign.push(*tp);
            }
        }
        let old_epoch = m.epoch;
        if !revoke.is_empty() && still_owns(&revoke) {
            m.state = MemberState::UnrevokedPartitions;
            m.epoch = next_epoch;
            m.assigned = kept;
            m.pending_revocation = revoke;
            m.rebalance_deadline = Some(now + ms(m.rebalance_timeout_ms));
        } else {
            let mut assigned = kept;
            for tp in to_assign {
                assigned.insert(tp, target_epoch);
            }
            m.state = if unreleased { MemberState::UnreleasedPartitions } else { MemberState::Stable };
            m.epoch = target_epoch;
            m.assigned = assigned;
            m.pending_revocation.clear();
            m.rebalance_deadline = None;
        }
        if m.epoch != old_epoch {
            m.previous_epoch = old_epoch;
        }
    }
}

fn ms(v: i32) -> Duration {
    Duration::from_millis(u64::try_from(v).unwrap_or(0))
}

/// The topics that exist, by name and by id, with their partition counts.
#[derive(Debug, Default)]
pub(crate) struct TopicsView {
    pub by_name: BTreeMap<String, (Uuid, usize)>,
    pub by_id: BTreeMap<Uuid, String>,
}

impl TopicsView {
    pub fn of(shared: &dyn Host) -> TopicsView {
        let mut v = TopicsView::default();
        for (name, id, partitions) in shared.topics() {
            v.by_id.insert(id, name.clone());
            v.by_name.insert(name, (id, partitions));
        }
        v
    }
}

/// The `uniform` assignor: every partition of a subscribed topic goes to one of its
/// subscribers, counts as even as the subscriptions allow, and a partition stays with the
/// member its last target gave it to unless balance needs it elsewhere.
fn uniform(
    subs: &[(String, BTreeSet<&str>)],
    topics: &TopicsView,
    previous: &BTreeMap<String, BTreeSet<Tp>>,
) -> BTreeMap<String, BTreeSet<Tp>> {
    let mut out: BTreeMap<String, BTreeSet<Tp>> =
        subs.iter().map(|(id, _)| (id.clone(), BTreeSet::new())).collect();
    let mut all: Vec<(Tp, Vec<usize>)> = Vec::new();
    let names: BTreeSet<&str> = subs.iter().flat_map(|(_, t)| t.iter().copied()).collect();
    for name in names {
        let Some(&(id, count)) = topics.by_name.get(name) else { continue };
        let eligible: Vec<usize> = (0..subs.len()).filter(|&i| subs[i].1.contains(name)).collect();
        for p in 0..count {
            all.push(((id, i32::try_from(p).unwrap_or(i32::MAX)), eligible.clone()));
        }
    }
    let mut owner: BTreeMap<Tp, usize> = BTreeMap::new();
    let mut counts = std::vec![0usize; subs.len()];
    // Sticky: a partition stays where the last target had it, if that member may have it.
    for (tp, eligible) in &all {
        if let Some(i) =
            eligible.iter().copied().find(|&i| previous.get(&subs[i].0).is_some_and(|s| s.contains(tp)))
        {
            owner.insert(*tp, i);
            counts[i] += 1;
        }
    }
    for (tp, eligible) in &all {
        if owner.contains_key(tp) {
            continue;
        }
        if let Some(&i) = eligible.iter().min_by_key(|&&i| (counts[i], i)) {
            owner.insert(*tp, i);
            counts[i] += 1;
        }
    }
    // Balance: move a partition from a member to another eligible one with at least two
    // fewer, until none can move (each move lowers the sum of squares, so this ends).
    loop {
        let mut moved = false;
        for (tp, eligible) in &all {
            let Some(&from) = owner.get(tp) else { continue };
            if let Some(&to) =
                eligible.iter().filter(|&&i| counts[i] + 1 < counts[from]).min_by_key(|&&i| (counts[i], i))
            {
                owner.insert(*tp, to);
                counts[from] -= 1;
                counts[to] += 1;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    for (tp, i) in owner {
        if let Some(set) = out.get_mut(&subs[i].0) {
            set.insert(tp);
        }
    }
    out
}

/// The `range` assignor: each topic's partitions split into contiguous ranges over its
/// subscribers in member id order, the first ones taking one more when it does not divide.
fn range(subs: &[(String, BTreeSet<&str>)], topics: &TopicsView) -> BTreeMap<String, BTreeSet<Tp>> {
    let mut out: BTreeMap<String, BTreeSet<Tp>> =
        subs.iter().map(|(id, _)| (id.clone(), BTreeSet::new())).collect();
    let names: BTreeSet<&str> = subs.iter().flat_map(|(_, t)| t.iter().copied()).collect();
    for name in names {
        let Some(&(id, count)) = topics.by_name.get(name) else { continue };
        let members: Vec<&String> = subs.iter().filter(|(_, t)| t.contains(name)).map(|(m, _)| m).collect();
        let n = members.len();
        if n == 0 {
            continue;
        }
        let (per, extra) = (count / n, count % n);
        let mut start = 0;
        for (i, m) in members.iter().enumerate() {
            let len = per + usize::from(i < extra);
            if let Some(set) = out.get_mut(*m) {
                set.extend((start..start + len).map(|p| (id, i32::try_from(p).unwrap_or(i32::MAX))));
            }
            start += len;
        }
    }
    out
}

/// How an OffsetCommit or TxnOffsetCommit to a consumer group is checked (Kafka's
/// `ConsumerGroup.validateOffsetCommit`).
#[derive(Debug)]
pub(crate) enum CommitCheck {
    /// Every partition may be committed.
    Ok,
    /// None may: this code for each.
    Fail(ErrorCode),
    /// An older member epoch: only the partitions the member owns since at most that
    /// epoch may be committed (the others get STALE_MEMBER_EPOCH).
    Partitions(BTreeSet<Tp>),
}

impl ConsumerGroup {
    pub fn check_commit(
        &self,
        member_id: &str,
        epoch: i32,
        transactional: bool,
        version: i16,
    ) -> CommitCheck {
        if epoch < 0 && self.members.is_empty() {
            return CommitCheck::Ok;
        }
        if transactional && epoch == -1 && member_id.is_empty() {
            return CommitCheck::Ok;
        }
        let Some(m) = self.members.get(member_id) else {
            return CommitCheck::Fail(ErrorCode::UnknownMemberId);
        };
        if !transactional && version < 9 {
            return CommitCheck::Fail(ErrorCode::UnsupportedVersion);
        }
        if epoch == m.epoch {
            CommitCheck::Ok
        } else if epoch > m.epoch || epoch < 0 {
            CommitCheck::Fail(ErrorCode::StaleMemberEpoch)
        } else {
            CommitCheck::Partitions(
                m.assigned.iter().filter(|(_, e)| **e <= epoch).map(|(tp, _)| *tp).collect(),
            )
        }
    }

    /// Kafka's `ConsumerGroup.validateOffsetFetch`.
    pub fn check_fetch(&self, member_id: Option<&str>, epoch: i32) -> ErrorCode {
        let Some(id) = member_id else {
            return if epoch < 0 { ErrorCode::None } else { ErrorCode::UnknownMemberId };
        };
        match self.members.get(id) {
            None => ErrorCode::UnknownMemberId,
            Some(m) if m.epoch != epoch => ErrorCode::StaleMemberEpoch,
            Some(_) => ErrorCode::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(topics: &[(&str, u8, usize)]) -> TopicsView {
        let mut v = TopicsView::default();
        for &(n, id, count) in topics {
            let id = Uuid([id; 16]);
            v.by_name.insert(n.into(), (id, count));
            v.by_id.insert(id, n.into());
        }
        v
    }

    #[test]
    fn uniform_is_even_and_sticky() {
        let topics = view(&[("a", 1, 7), ("b", 2, 2)]);
        let ab: BTreeSet<&str> = ["a", "b"].into_iter().collect();
        let subs: Vec<(String, BTreeSet<&str>)> =
            ["m1", "m2", "m3"].iter().map(|m| (m.to_string(), ab.clone())).collect();
        let first = uniform(&subs, &topics, &BTreeMap::new());
        let counts: Vec<usize> = first.values().map(BTreeSet::len).collect();
        assert_eq!(counts.iter().sum::<usize>(), 9);
        assert!(counts.iter().all(|&c| c == 3), "{counts:?}");
        // m3 leaves: m1 and m2 keep everything they had.
        let second = uniform(&subs[..2], &topics, &first);
        assert!(first["m1"].is_subset(&second["m1"]) && first["m2"].is_subset(&second["m2"]));
        let counts: Vec<usize> = second.values().map(BTreeSet::len).collect();
        assert_eq!(counts.iter().sum::<usize>(), 9);
        assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1, "{counts:?}");
        // Heterogeneous: b only to m2.
        let only_a: BTreeSet<&str> = ["a"].into_iter().collect();
        let het = std::vec![("m1".to_string(), only_a), ("m2".to_string(), ab)];
        let got = uniform(&het, &topics, &BTreeMap::new());
        assert!(got["m1"].iter().all(|(t, _)| *t == Uuid([1; 16])));
        assert_eq!(got["m1"].len() + got["m2"].len(), 9);
        assert!(got["m1"].len().abs_diff(got["m2"].len()) <= 1);
    }

    #[test]
    fn range_splits_each_topic() {
        let topics = view(&[("a", 1, 5)]);
        let a: BTreeSet<&str> = ["a"].into_iter().collect();
        let subs: Vec<(String, BTreeSet<&str>)> =
            ["x", "y"].iter().map(|m| (m.to_string(), a.clone())).collect();
        let got = range(&subs, &topics);
        let parts = |m: &str| got[m].iter().map(|(_, p)| *p).collect::<Vec<i32>>();
        assert_eq!(parts("x"), [0, 1, 2]);
        assert_eq!(parts("y"), [3, 4]);
    }
}
