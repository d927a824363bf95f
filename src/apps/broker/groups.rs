//! The group coordinator: Kafka's classic group protocol (JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup) with its states, generations, member ids, join and sync barriers
//! and session timeouts, and (in `offsets.rs`) the committed offsets of every group.
//!
//! JoinGroup and SyncGroup block their connection's thread until the barrier they wait
//! at opens (as Kafka holds their responses); a ticker thread expires sessions and
//! completes rebalances whose time is up.

use std::collections::BTreeMap;
use std::string::String;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use std::vec::Vec;

use super::cluster::CoordinatorKind;
use super::host::Host;
use super::kip848::ConsumerGroup;
use super::lock::lock;
use crate::codec::error_code::ErrorCode;

// The committed offsets: their checks, store and deletion.
mod offsets;

/// A group's state, as Kafka names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Empty => "Empty",
            State::PreparingRebalance => "PreparingRebalance",
            State::CompletingRebalance => "CompletingRebalance",
            State::Stable => "Stable",
        }
    }
}

/// What a finished join hands each member.
#[derive(Clone, Debug, Default)]
pub(crate) struct JoinResult {
    pub error: Option<ErrorCode>,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// For the leader: every member (id, instance id, metadata of the chosen protocol).
    pub members: Vec<(String, Option<String>, Vec<u8>)>,
}

impl JoinResult {
    fn error(code: ErrorCode, member_id: &str) -> JoinResult {
        JoinResult { error: Some(code), generation: -1, member_id: member_id.into(), ..Default::default() }
    }
}

#[derive(Debug)]
pub(crate) struct Member {
    pub id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    session_timeout: Duration,
    rebalance_timeout: Duration,
    pub protocols: Vec<(String, Vec<u8>)>,
    pub assignment: Vec<u8>,
    /// When its session expires (far away while it waits in a join).
    deadline: Instant,
    /// It has (re)joined in the rebalance under way.
    joining: bool,
    join_result: Option<JoinResult>,
}

/// A committed offset.
#[derive(Clone, Debug)]
pub(crate) struct Committed {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

#[derive(Debug)]
pub(crate) struct Group {
    pub state: State,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub members: BTreeMap<String, Member>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, until they join or expire.
    pending: BTreeMap<String, Instant>,
    rebalance_deadline: Instant,
    /// A new group's first rebalance completes no sooner than this.
    join_not_before: Instant,
    pub offsets: BTreeMap<(String, i32), Committed>,
    /// A KIP-848 consumer group's state (`None` for a classic group).
    pub consumer: Option<std::boxed::Box<ConsumerGroup>>,
}

impl Group {
    pub(crate) fn new(now: Instant) -> Group {
        Group {
            state: State::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: BTreeMap::new(),
            pending: BTreeMap::new(),
            rebalance_deadline: now,
            join_not_before: now,
            offsets: BTreeMap::new(),
            consumer: None,
        }
    }

    /// Whether it is a consumer group with members (a classic JoinGroup cannot turn it
    /// into a classic group).
    pub fn consumer_members(&self) -> bool {
        self.consumer.as_ref().is_some_and(|c| !c.members.is_empty())
    }

    /// The chosen protocol's metadata of a member.
    pub fn metadata_of(&self, m: &Member) -> Vec<u8> {
        let chosen = self.protocol.as_deref().unwrap_or_default();
        m.protocols.iter().find(|(n, _)| n == chosen).map(|(_, md)| md.clone()).unwrap_or_default()
    }

    fn prepare_rebalance(&mut self, now: Instant, initial_delay: Duration) {
        if self.state == State::PreparingRebalance {
            return;
        }
        let timeout = self.members.values().map(|m| m.rebalance_timeout).max().unwrap_or_default();
        if self.state == State::Empty {
            self.join_not_before = now + initial_delay;
        }
        self.state = State::PreparingRebalance;
        self.rebalance_deadline = now + timeout;
    }

    /// Opens the join barrier when every member has rejoined (and no handed-out id is still
    /// to come), or when the rebalance timeout is up (dropping the members that did not).
    /// Returns whether it did.
    fn try_complete_join(&mut self, now: Instant) -> bool {
        if self.state != State::PreparingRebalance {
            return false;
        }
        let all = self.members.values().all(|m| m.joining) && self.pending.is_empty();
        let ready = (all && now >= self.join_not_before) || now >= self.rebalance_deadline;
        if !ready {
            return false;
        }
        self.members.retain(|_, m| m.joining);
        self.pending.clear();
        self.generation += 1;
        if self.members.is_empty() {
            self.state = State::Empty;
            self.protocol = None;
            self.leader = None;
            return true;
        }
        // The protocol every member supports that most members list first (Kafka's vote).
        let candidates: Vec<String> = self
            .members
            .values()
            .next()
            .map(|m| m.protocols.iter().map(|(n, _)| n.clone()).collect::<Vec<String>>())
            .unwrap_or_default()
            .into_iter()
            .filter(|p| self.members.values().all(|m| m.protocols.iter().any(|(n, _)| n == p)))
            .collect();
        let mut votes: Vec<(String, usize)> = candidates.iter().map(|c| (c.clone(), 0)).collect();
        for m in self.members.values() {
            if let Some(first) = m.protocols.iter().find(|(n, _)| candidates.contains(n))
                && let Some(v) = votes.iter_mut().find(|(c, _)| *c == first.0)
            {
                v.1 += 1;
            }
        }
        let mut best: Option<(String, usize)> = None;
        for (c, n) in votes {
            if best.as_ref().is_none_or(|b| n > b.1) {
                best = Some((c, n));
            }
        }
        self.protocol = best.map(|b| b.0);
        if self.leader.as_ref().is_none_or(|l| !self.members.contains_key(l)) {
            self.leader = self.members.keys().next().cloned();
        }
        self.state = State::CompletingRebalance;
        let leader = self.leader.clone().unwrap_or_default();
        let everyone: Vec<(String, Option<String>, Vec<u8>)> = self
            .members
            .values()
            .map(|m| (m.id.clone(), m.instance_id.clone(), self.metadata_of(m)))
            .collect();
        let (generation, ptype, protocol) =
            (self.generation, self.protocol_type.clone(), self.protocol.clone());
        for m in self.members.values_mut() {
            m.joining = false;
            m.assignment.clear();
            m.deadline = now + m.session_timeout;
            m.join_result = Some(JoinResult {
                error: None,
                generation,
                protocol_type: ptype.clone(),
                protocol: protocol.clone(),
                leader: leader.clone(),
                member_id: m.id.clone(),
                members: if m.id == leader { everyone.clone() } else { Vec::new() },
            });
        }
        true
    }

    /// Drops a member; starts a rebalance (or empties the group).
    fn remove_member(&mut self, id: &str, now: Instant, initial_delay: Duration) {
        if self.members.remove(id).is_none() {
            return;
        }
        if self.leader.as_deref() == Some(id) {
            self.leader = None;
        }
        if matches!(self.state, State::Stable | State::CompletingRebalance) {
            self.prepare_rebalance(now, initial_delay);
        }
        if self.members.is_empty() && self.state == State::PreparingRebalance {
            self.rebalance_deadline = now;
        }
        self.try_complete_join(now);
    }
}

/// What JoinGroup asks.
pub(crate) struct Join<'a> {
    pub group_id: &'a str,
    pub member_id: &'a str,
    pub instance_id: Option<&'a str>,
    pub client_id: &'a str,
    pub client_host: &'a str,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: &'a str,
    pub protocols: Vec<(String, Vec<u8>)>,
    /// Version 4 and up: a member without an id is given one and asked to join again.
    pub require_known_member_id: bool,
}

/// Every group.
#[derive(Debug, Default)]
pub(crate) struct Groups {
    groups: Mutex<BTreeMap<String, Group>>,
    cv: Condvar,
    made: AtomicI64,
}

/// How long a blocked JoinGroup or SyncGroup sleeps between looks (it is woken sooner by
/// any change to a group).
const POLL: Duration = Duration::from_millis(200);

impl Groups {
    pub fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Group>> {
        lock(&self.groups)
    }

    /// Wakes the threads waiting on a group change.
    pub fn notify(&self) {
        self.cv.notify_all();
    }

    /// A fresh number for a member id.
    pub fn next_id(&self) -> i64 {
        self.made.fetch_add(1, Ordering::Relaxed)
    }

    pub fn wake(&self) {
        let _g = self.lock();
        self.cv.notify_all();
    }

    fn wait<'g>(
        &self,
        g: MutexGuard<'g, BTreeMap<String, Group>>,
    ) -> MutexGuard<'g, BTreeMap<String, Group>> {
        match self.cv.wait_timeout(g, POLL) {
            Ok((g, _)) => g,
            Err(e) => e.into_inner().0,
        }
    }

    /// Expires sessions and handed-out member ids, completes rebalances whose time is up.
    pub fn tick(&self, shared: &dyn Host) {
        let now = Instant::now();
        let delay = shared.config().initial_rebalance_delay;
        let mut changed = false;
        let mut g = self.lock();
        for (name, group) in g.iter_mut() {
            let before = (group.generation, group.state, group.members.len(), group.pending.len());
            group.pending.retain(|_, expires| *expires > now);
            let expired: Vec<String> = group
                .members
                .values()
                .filter(|m| !m.joining && m.deadline <= now)
                .map(|m| m.id.clone())
                .collect();
            for id in expired {
                shared.log(format_args!("group {name}: member {id} expired (session timeout)"));
                group.remove_member(&id, now, delay);
            }
            group.try_complete_join(now);
            if let Some(cg) = group.consumer.as_deref_mut() {
                changed |= Groups::expire_consumer_members(name, cg, shared, now);
            }
            changed |= before != (group.generation, group.state, group.members.len(), group.pending.len());
        }
        if changed {
            self.cv.notify_all();
        }
    }

    /// JoinGroup: blocks until the join barrier opens for this member.
    pub fn join(&self, shared: &dyn Host, req: Join<'_>) -> JoinResult {
        let now = Instant::now();
        // The coordinator when the request came: if the group moves (its node stopped),
        // a waiting member is told NOT_COORDINATOR, as Kafka's unloaded group tells it.
        let home = shared.coordinator(CoordinatorKind::Group, req.group_id);
        let (min, max) = shared.config().session_timeout_range;
        if req.group_id.is_empty() {
            return JoinResult::error(ErrorCode::InvalidGroupId, req.member_id);
        }
        let session = Duration::from_millis(u64::try_from(req.session_timeout_ms).unwrap_or(0));
        if session < min || session > max {
            return JoinResult::error(ErrorCode::InvalidSessionTimeout, req.member_id);
        }
        let rebalance =
            Duration::from_millis(u64::try_from(req.rebalance_timeout_ms).unwrap_or(0)).max(session);
        if req.protocol_type.is_empty() || req.protocols.is_empty() {
            return JoinResult::error(ErrorCode::InconsistentGroupProtocol, req.member_id);
        }
        let delay = shared.config().initial_rebalance_delay;
        let mut g = self.lock();
        let group = g.entry(req.group_id.into()).or_insert_with(|| Group::new(now));
        // A consumer group with members does not take classic members here (Kafka 4 can
        // migrate them); an empty one becomes a classic group.
        if group.consumer_members() {
            return JoinResult::error(ErrorCode::InconsistentGroupProtocol, req.member_id);
        }
        group.consumer = None;
        // The protocol type must match, and some protocol must suit every member.
        if !group.members.is_empty() || group.state != State::Empty {
            let others = group.members.values().filter(|m| m.id != req.member_id);
            let mut others = others.peekable();
            if others.peek().is_some() {
                if group.protocol_type.as_deref() != Some(req.protocol_type) {
                    return JoinResult::error(ErrorCode::InconsistentGroupProtocol, req.member_id);
                }
                let common = req.protocols.iter().any(|(p, _)| {
                    group
                        .members
                        .values()
                        .filter(|m| m.id != req.member_id)
                        .all(|m| m.protocols.iter().any(|(n, _)| n == p))
                });
                if !common {
                    return JoinResult::error(ErrorCode::InconsistentGroupProtocol, req.member_id);
                }
            }
        }
        let member_id: String = if req.member_id.is_empty() {
            let n = self.made.fetch_add(1, Ordering::Relaxed);
            let uuid = shared.new_uuid(req.group_id, n);
            let id = std::format!("{}-{}", req.client_id, uuid_text(&uuid.0));
            if req.require_known_member_id {
                group.pending.insert(id.clone(), now + session);
                self.cv.notify_all();
                return JoinResult::error(ErrorCode::MemberIdRequired, &id);
            }
            id
        } else {
            if !group.members.contains_key(req.member_id) && !group.pending.contains_key(req.member_id) {
                return JoinResult::error(ErrorCode::UnknownMemberId, req.member_id);
            }
            req.member_id.into()
        };
        group.pending.remove(&member_id);
        group.protocol_type = Some(req.protocol_type.into());
        let existing = group.members.get(&member_id);
        // A follower of a stable group rejoining with nothing changed gets the current
        // generation back, with no rebalance (as Kafka does).
        if let Some(m) = existing
            && group.state == State::Stable
            && group.leader.as_deref() != Some(member_id.as_str())
            && m.protocols == req.protocols
        {
            return JoinResult {
                error: None,
                generation: group.generation,
                protocol_type: group.protocol_type.clone(),
                protocol: group.protocol.clone(),
                leader: group.leader.clone().unwrap_or_default(),
                member_id,
                members: Vec::new(),
            };
        }
        let assignment = existing.map(|m| m.assignment.clone()).unwrap_or_default();
        group.members.insert(
            member_id.clone(),
            Member {
                id: member_id.clone(),
                instance_id: req.instance_id.map(Into::into),
                client_id: req.client_id.into(),
                client_host: req.client_host.into(),
                session_timeout: session,
                rebalance_timeout: rebalance,
                protocols: req.protocols,
                assignment,
                deadline: now + Duration::from_secs(365 * 24 * 3600),
                joining: true,
                join_result: None,
            },
        );
        group.prepare_rebalance(now, delay);
        // A longer rebalance timeout of a new member stretches the rebalance.
        group.rebalance_deadline = group.rebalance_deadline.max(now + rebalance);
        if group.try_complete_join(now) {
            self.cv.notify_all();
        }
        loop {
            let Some(group) = g.get_mut(req.group_id) else {
                return JoinResult::error(ErrorCode::UnknownMemberId, &member_id);
            };
            let Some(m) = group.members.get_mut(&member_id) else {
                return JoinResult::error(ErrorCode::UnknownMemberId, &member_id);
            };
            if let Some(result) = m.join_result.take() {
                return result;
            }
            if shared.stopping() {
                return JoinResult::error(ErrorCode::CoordinatorNotAvailable, &member_id);
            }
            if shared.coordinator(CoordinatorKind::Group, req.group_id) != home {
                return JoinResult::error(ErrorCode::NotCoordinator, &member_id);
            }
            g = self.wait(g);
        }
    }

    /// SyncGroup: the leader's assignments in, each member's out; blocks followers until
    /// the leader's arrive. Returns the error and the member's assignment.
    #[allow(clippy::too_many_arguments)]
    pub fn sync(
        &self,
        shared: &dyn Host,
        group_id: &str,
        generation: i32,
        member_id: &str,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, Vec<u8>)>,
    ) -> (ErrorCode, Vec<u8>, Option<String>, Option<String>) {
        let fail = |code| (code, Vec::new(), None, None);
        let home = shared.coordinator(CoordinatorKind::Group, group_id);
        let mut g = self.lock();
        let Some(group) = g.get_mut(group_id) else { return fail(ErrorCode::UnknownMemberId) };
        if !group.members.contains_key(member_id) {
            return fail(ErrorCode::UnknownMemberId);
        }
        if generation != group.generation {
            return fail(ErrorCode::IllegalGeneration);
        }
        if protocol_type.is_some_and(|t| Some(t) != group.protocol_type.as_deref())
            || protocol_name.is_some_and(|p| Some(p) != group.protocol.as_deref())
        {
            return fail(ErrorCode::InconsistentGroupProtocol);
        }
        match group.state {
            State::PreparingRebalance => return fail(ErrorCode::RebalanceInProgress),
            State::Empty => return fail(ErrorCode::UnknownMemberId),
            State::Stable | State::CompletingRebalance => {}
        }
        let now = Instant::now();
        if let Some(m) = group.members.get_mut(member_id) {
            m.deadline = now + m.session_timeout;
        }
        if group.state == State::CompletingRebalance && group.leader.as_deref() == Some(member_id) {
            for m in group.members.values_mut() {
                m.assignment = assignments
                    .iter()
                    .find(|(id, _)| *id == m.id)
                    .map(|(_, a)| a.clone())
                    .unwrap_or_default();
            }
            group.state = State::Stable;
            self.cv.notify_all();
        }
        loop {
            let Some(group) = g.get(group_id) else { return fail(ErrorCode::UnknownMemberId) };
            let Some(m) = group.members.get(member_id) else { return fail(ErrorCode::UnknownMemberId) };
            if group.generation != generation || group.state == State::PreparingRebalance {
                return fail(ErrorCode::RebalanceInProgress);
            }
            if group.state == State::Stable {
                return (
                    ErrorCode::None,
                    m.assignment.clone(),
                    group.protocol_type.clone(),
                    group.protocol.clone(),
                );
            }
            if shared.stopping() {
                return fail(ErrorCode::CoordinatorNotAvailable);
            }
            if shared.coordinator(CoordinatorKind::Group, group_id) != home {
                return fail(ErrorCode::NotCoordinator);
            }
            g = self.wait(g);
        }
    }

    /// Heartbeat.
    pub fn heartbeat(&self, group_id: &str, generation: i32, member_id: &str) -> ErrorCode {
        let mut g = self.lock();
        let Some(group) = g.get_mut(group_id) else { return ErrorCode::UnknownMemberId };
        if group.state == State::Empty {
            return ErrorCode::UnknownMemberId;
        }
        let Some(m) = group.members.get_mut(member_id) else { return ErrorCode::UnknownMemberId };
        if generation != group.generation {
            return ErrorCode::IllegalGeneration;
        }
        if !m.joining {
            m.deadline = Instant::now() + m.session_timeout;
        }
        if group.state == State::PreparingRebalance {
            ErrorCode::RebalanceInProgress
        } else {
            ErrorCode::None
        }
    }

    /// LeaveGroup for one member (by id, or by instance id when the id is empty).
    pub fn leave(
        &self,
        shared: &dyn Host,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> ErrorCode {
        let now = Instant::now();
        let mut g = self.lock();
        let Some(group) = g.get_mut(group_id) else { return ErrorCode::UnknownMemberId };
        let id = if member_id.is_empty() {
            match group
                .members
                .values()
                .find(|m| m.instance_id.as_deref() == instance_id && instance_id.is_some())
            {
                Some(m) => m.id.clone(),
                None => return ErrorCode::UnknownMemberId,
            }
        } else {
            member_id.into()
        };
        if !group.members.contains_key(&id) {
            return ErrorCode::UnknownMemberId;
        }
        group.remove_member(&id, now, shared.config().initial_rebalance_delay);
        self.cv.notify_all();
        ErrorCode::None
    }
}

fn uuid_text(b: &[u8; 16]) -> String {
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&std::format!("{byte:02x}"));
    }
    s
}
