//! ConsumerGroupHeartbeat (KIP-848), as Apache Kafka's `GroupMetadataManager` answers it:
//! the request's checks, joining and leaving, member epochs and the reconciliation of each
//! member's assignment, on the consumer groups of `super::kip848` kept in the group store
//! of `super::groups`.

use std::collections::{BTreeMap, BTreeSet};
use std::string::String;
use std::time::Instant;
use std::vec::Vec;

use super::groups::{Group, Groups, State};
use super::host::Host;
use super::kip848::*;
use crate::codec::error_code::ErrorCode;
use crate::codec::types::Uuid;

/// What a ConsumerGroupHeartbeat asks.
pub(crate) struct CgHeartbeat<'a> {
    pub version: i16,
    pub group_id: &'a str,
    pub member_id: &'a str,
    pub member_epoch: i32,
    pub instance_id: Option<&'a str>,
    pub rack_id: Option<&'a str>,
    pub rebalance_timeout_ms: i32,
    pub subscribed_names: Option<Vec<String>>,
    pub subscribed_regex: Option<&'a str>,
    pub server_assignor: Option<&'a str>,
    pub owned: Option<BTreeSet<Tp>>,
    pub client_id: &'a str,
    pub client_host: &'a str,
}

/// A ConsumerGroupHeartbeat's answer.
#[derive(Debug, Default)]
pub(crate) struct CgAnswer {
    pub member_id: String,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    /// The member's partitions, when the answer carries them.
    pub assignment: Option<BTreeMap<Uuid, Vec<i32>>>,
}

/// An error code with Kafka's message.
pub(crate) type CgError = (ErrorCode, String);

fn invalid(message: &str) -> CgError {
    (ErrorCode::InvalidRequest, message.into())
}

fn blank(s: Option<&str>) -> bool {
    s.is_some_and(|s| s.trim().is_empty())
}

/// Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid`.
fn validate(r: &CgHeartbeat<'_>) -> Result<(), CgError> {
    if (r.version >= 1 || r.member_epoch > 0 || r.member_epoch == -1) && blank(Some(r.member_id)) {
        return Err(invalid("MemberId can't be empty."));
    }
    if blank(Some(r.group_id)) {
        return Err(invalid("GroupId can't be empty."));
    }
    if blank(r.instance_id) {
        return Err(invalid("InstanceId can't be empty."));
    }
    if blank(r.rack_id) {
        return Err(invalid("RackId can't be empty."));
    }
    if r.member_epoch == 0 {
        if r.rebalance_timeout_ms == -1 {
            return Err(invalid("RebalanceTimeoutMs must be provided in first request."));
        }
        if r.owned.as_ref().is_none_or(|o| !o.is_empty()) {
            return Err(invalid("TopicPartitions must be empty when (re-)joining."));
        }
        if r.subscribed_names.is_none() && r.subscribed_regex.is_none() {
            return Err(invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            ));
        }
    } else if r.member_epoch == -2 {
        if r.instance_id.is_none() {
            return Err(invalid("InstanceId can't be null."));
        }
    } else if r.member_epoch < -2 {
        return Err(invalid("MemberEpoch is invalid."));
    }
    if let Some(regex) = r.subscribed_regex
        && let Err(e) = super::regex::Regex::new(regex)
    {
        return Err((
            ErrorCode::InvalidRegularExpression,
            std::format!("SubscribedTopicRegex `{regex}` is not a valid regular expression: {e}."),
        ));
    }
    if let Some(a) = r.server_assignor
        && !ASSIGNORS.contains(&a)
    {
        return Err((
            ErrorCode::UnsupportedAssignor,
            std::format!(
                "ServerAssignor {a} is not supported. Supported assignors: {}.",
                ASSIGNORS.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Kafka's `throwIfMemberEpochIsInvalid`.
fn check_epoch(m: &CgMember, epoch: i32, owned: Option<&BTreeSet<Tp>>) -> Result<(), CgError> {
    let fenced = |what: &str| {
        Err((
            ErrorCode::FencedMemberEpoch,
            std::format!(
                "The consumer group member has a {what} member epoch ({epoch}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                m.epoch
            ),
        ))
    };
    if epoch > m.epoch {
        return fenced("greater");
    }
    if epoch < m.epoch {
        // The answer with the bumped epoch may have been lost: the previous epoch with a
        // subset of the partitions is accepted.
        let subset = owned.is_some_and(|o| o.iter().all(|tp| m.assigned.contains_key(tp)));
        if epoch != m.previous_epoch || !subset {
            return fenced("smaller");
        }
    }
    Ok(())
}

fn not_consumer(group_id: &str) -> CgError {
    (ErrorCode::GroupIdNotFound, std::format!("Group {group_id} is not a consumer group."))
}

fn unknown_member(member_id: &str, group_id: &str) -> CgError {
    (ErrorCode::UnknownMemberId, std::format!("Member {member_id} is not a member of group {group_id}."))
}

/// Kafka's `Uuid.toString()`: URL-safe base64 without padding.
fn uuid_base64(id: &Uuid) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut s = String::with_capacity(22);
    for chunk in id.0.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..=chunk.len() {
            s.push(char::from(A[usize::try_from((n >> (18 - 6 * k)) & 63).unwrap_or(0)]));
        }
    }
    s
}

impl Groups {
    /// ConsumerGroupHeartbeat, as Kafka's `consumerGroupHeartbeat`.
    pub fn consumer_heartbeat(&self, shared: &dyn Host, r: CgHeartbeat<'_>) -> Result<CgAnswer, CgError> {
        validate(&r)?;
        let topics = TopicsView::of(shared);
        let now = Instant::now();
        let mut g = self.lock();
        if r.member_epoch == -1 || r.member_epoch == -2 {
            let exists = g.contains_key(r.group_id);
            let cg = match g.get_mut(r.group_id).and_then(|g| g.consumer.as_deref_mut()) {
                Some(cg) => cg,
                None if exists => return Err(not_consumer(r.group_id)),
                None => {
                    return Err((
                        ErrorCode::GroupIdNotFound,
                        std::format!("Consumer group {} not found.", r.group_id),
                    ));
                }
            };
            match r.instance_id {
                None => {
                    if !cg.members.contains_key(r.member_id) {
                        return Err(unknown_member(r.member_id, r.group_id));
                    }
                    cg.fence(r.member_id, &topics);
                    shared.log(format_args!("group {}: member {} left", r.group_id, r.member_id));
                }
                Some(instance) => {
                    let Some(m) =
                        cg.members.values_mut().find(|m| m.instance_id.as_deref() == Some(instance))
                    else {
                        return Err((
                            ErrorCode::UnknownMemberId,
                            std::format!("Instance id {instance} is unknown."),
                        ));
                    };
                    if m.id != r.member_id {
                        return Err((
                            ErrorCode::FencedInstanceId,
                            std::format!(
                                "Static member {} with instance id {instance} was fenced by member {}.",
                                r.member_id,
                                m.id
                            ),
                        ));
                    }
                    if r.member_epoch == -2 {
                        // Away for now: it keeps its partitions until its session ends.
                        m.epoch = -2;
                        m.pending_revocation.clear();
                        m.rebalance_deadline = None;
                    } else {
                        let id = m.id.clone();
                        cg.fence(&id, &topics);
                    }
                }
            }
            self.notify();
            return Ok(CgAnswer {
                member_id: r.member_id.into(),
                member_epoch: r.member_epoch,
                ..Default::default()
            });
        }
        // The group: created by a joining member, or taken over from an empty classic group.
        let group = match g.get_mut(r.group_id) {
            Some(group) => group,
            None if r.member_epoch == 0 => g.entry(r.group_id.into()).or_insert_with(|| Group::new(now)),
            None => {
                return Err((
                    ErrorCode::GroupIdNotFound,
                    std::format!("Consumer group {} not found.", r.group_id),
                ));
            }
        };
        if group.consumer.is_none() {
            if r.member_epoch != 0 || !group.members.is_empty() || group.state != State::Empty {
                return Err(not_consumer(r.group_id));
            }
            group.protocol_type = None;
            group.protocol = None;
            group.consumer = Some(Default::default());
        }
        let Some(cg) = group.consumer.as_deref_mut() else { return Err(not_consumer(r.group_id)) };
        let member_id: String = if r.member_id.is_empty() {
            let n = self.next_id();
            uuid_base64(&shared.new_uuid(r.group_id, n))
        } else {
            r.member_id.into()
        };
        let owned = r.owned.as_ref();
        let mut replaced: Option<CgMember> = None;
        let before: Option<CgMember> = match r.instance_id {
            None => match cg.members.get(&member_id) {
                Some(m) => {
                    check_epoch(m, r.member_epoch, owned)?;
                    Some(m.clone())
                }
                None if r.member_epoch == 0 => None,
                None => return Err(unknown_member(&member_id, r.group_id)),
            },
            Some(instance) => {
                let existing =
                    cg.members.values().find(|m| m.instance_id.as_deref() == Some(instance)).cloned();
                if r.member_epoch == 0 {
                    match existing {
                        None => cg.members.get(&member_id).cloned(),
                        Some(old) if old.epoch != -2 => {
                            return Err((
                                ErrorCode::UnreleasedInstanceId,
                                std::format!(
                                    "Static member {member_id} with instance id {instance} cannot join the group because the instance id is owned by {} member.",
                                    old.id
                                ),
                            ));
                        }
                        Some(old) => {
                            // It comes back under a new member id and takes over the old
                            // one's partitions and target.
                            replaced = Some(old);
                            None
                        }
                    }
                } else {
                    let Some(m) = existing else {
                        return Err((
                            ErrorCode::UnknownMemberId,
                            std::format!("Instance id {instance} is unknown."),
                        ));
                    };
                    if m.id != member_id {
                        return Err((
                            ErrorCode::FencedInstanceId,
                            std::format!(
                                "Static member {member_id} with instance id {instance} was fenced by member {}.",
                                m.id
                            ),
                        ));
                    }
                    check_epoch(&m, r.member_epoch, owned)?;
                    Some(m)
                }
            }
        };
        let mut m = before.clone().unwrap_or_else(|| CgMember::new(&member_id, now));
        if let Some(old) = &replaced {
            m.assigned = old.assigned.clone();
            m.subscribed_names = old.subscribed_names.clone();
            m.subscribed_regex = old.subscribed_regex.clone();
            m.server_assignor = old.server_assignor.clone();
            m.rebalance_timeout_ms = old.rebalance_timeout_ms;
            cg.members.remove(&old.id);
            if let Some(t) = cg.target.remove(&old.id) {
                cg.target.insert(member_id.clone(), t);
            }
        }
        let previous_subscription = (m.subscribed_names.clone(), m.subscribed_regex.clone());
        if let Some(i) = r.instance_id {
            m.instance_id = Some(i.into());
        }
        if let Some(rack) = r.rack_id {
            m.rack_id = Some(rack.into());
        }
        if r.rebalance_timeout_ms != -1 {
            m.rebalance_timeout_ms = r.rebalance_timeout_ms;
        }
        if let Some(a) = r.server_assignor {
            m.server_assignor = Some(a.into());
        }
        if let Some(names) = &r.subscribed_names {
            m.subscribed_names = names.clone();
        }
        if let Some(regex) = r.subscribed_regex {
            m.subscribed_regex = Some(regex.into());
        }
        m.client_id = r.client_id.into();
        m.client_host = r.client_host.into();
        m.session_deadline = now + shared.config().consumer_session_timeout;
        let subscription_changed =
            previous_subscription != (m.subscribed_names.clone(), m.subscribed_regex.clone());
        cg.members.insert(member_id.clone(), m);
        let metadata = cg.subscription_metadata_now(&topics);
        if subscription_changed || metadata != cg.subscription_metadata {
            cg.subscription_metadata = metadata;
            cg.epoch += 1;
            shared.log(format_args!("group {}: epoch {}", r.group_id, cg.epoch));
        }
        if cg.epoch > cg.assignment_epoch || replaced.is_some() {
            cg.assign(&topics);
        }
        cg.reconcile(&member_id, owned, now);
        let Some(m) = cg.members.get(&member_id) else { return Err(unknown_member(&member_id, r.group_id)) };
        let full = r.member_epoch == 0
            || (r.rebalance_timeout_ms != -1
                && (r.subscribed_names.is_some() || r.subscribed_regex.is_some())
                && r.owned.is_some());
        let changed = before.as_ref().is_none_or(|b| b.assigned.keys().ne(m.assigned.keys()));
        let assignment = (full || changed).then(|| {
            let mut by_topic: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
            for (t, p) in m.assigned.keys() {
                by_topic.entry(*t).or_default().push(*p);
            }
            by_topic
        });
        let answer = CgAnswer {
            member_id,
            member_epoch: m.epoch,
            heartbeat_interval_ms: i32::try_from(shared.config().consumer_heartbeat_interval.as_millis())
                .unwrap_or(i32::MAX),
            assignment,
        };
        self.notify();
        Ok(answer)
    }

    /// Fences the consumer-group members whose session ended, or whose revocation took
    /// longer than their rebalance timeout. Returns whether any was.
    pub(crate) fn expire_consumer_members(
        group_id: &str,
        cg: &mut ConsumerGroup,
        shared: &dyn Host,
        now: Instant,
    ) -> bool {
        let expired: Vec<(String, &'static str)> = cg
            .members
            .values()
            .filter_map(|m| {
                if m.session_deadline <= now {
                    Some((m.id.clone(), "its session expired"))
                } else if m.rebalance_deadline.is_some_and(|d| d <= now) {
                    Some((m.id.clone(), "it did not revoke its partitions within its rebalance timeout"))
                } else {
                    None
                }
            })
            .collect();
        if expired.is_empty() {
            return false;
        }
        let topics = TopicsView::of(shared);
        for (id, why) in expired {
            shared.log(format_args!("group {group_id}: member {id} fenced because {why}"));
            cg.fence(&id, &topics);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_ids_look_like_kafkas() {
        let s = uuid_base64(&Uuid([0xff; 16]));
        assert_eq!(s.len(), 22);
        assert_eq!(s, "_____________________w");
    }
}
