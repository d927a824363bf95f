//! ShareFetch and ShareAcknowledge: records acquired for a share group member under a
//! lock, and its acknowledgements applied (piggy-backed on ShareFetch or alone), within a
//! share session (`super::super::share`).

use super::*;
use crate::apps::broker::share::partition::{AckBatch, SharePartition, batches, ranges};
use crate::apps::broker::share::sessions::Context;

type Key = (Uuid, i32);
/// A partition's acknowledgement batches: (first, last, types).
type Acks = Vec<(Key, Vec<(i64, i64, Vec<i8>)>)>;

/// One partition's fetch answer.
struct Fetched {
    key: Key,
    code: ErrorCode,
    leader: (i32, i32),
    records: Vec<u8>,
    acquired: Vec<(i64, i16)>,
}

/// Kafka's checks of a partition's acknowledgement batches (INVALID_REQUEST when one
/// fails): ranges in order without overlap, types present, one or one per offset, each
/// at most `max_type`.
fn valid_batches(batches: &[(i64, i64, Vec<i8>)], max_type: i8) -> bool {
    let mut prev_end = -1;
    batches.iter().all(|(first, last, types)| {
        let ok = first <= last
            && *first >= prev_end
            && !types.is_empty()
            && (types.len() == 1
                || i64::try_from(types.len()).ok() == last.checked_sub(*first).map(|n| n + 1))
            && types.iter().all(|t| (0..=max_type).contains(t));
        prev_end = *last;
        ok
    })
}

/// A share request's group and member ids, which must both be given and not empty.
fn member_of<'a>(group: Option<&'a str>, member: Option<&'a str>) -> Option<(&'a str, &'a str)> {
    group.zip(member).filter(|(g, m)| !g.is_empty() && !m.is_empty())
}

/// Partition answers grouped by topic id, the topics in id order: `topic` makes each
/// topic's answer from its id and partitions.
fn by_topic<P, T>(parts: impl IntoIterator<Item = (Uuid, P)>, topic: impl Fn(Uuid, Vec<P>) -> T) -> Vec<T> {
    let mut by_id: std::collections::BTreeMap<Uuid, Vec<P>> = Default::default();
    for (id, part) in parts {
        by_id.entry(id).or_default().push(part);
    }
    by_id.into_iter().map(|(id, parts)| topic(id, parts)).collect()
}

impl Handler<'_> {
    /// A partition's topic name and (node id, leader epoch), or the error it gets here.
    fn share_partition_check(&self, (id, p): Key) -> Result<(String, (i32, i32)), ErrorCode> {
        let name = self.shared.topics.name_of(id).ok_or(ErrorCode::UnknownTopicId)?;
        if !self.allowed(op::READ, resource::TOPIC, &name) {
            return Err(ErrorCode::TopicAuthorizationFailed);
        }
        let part = self.shared.topics.partition(&name, p).ok_or(ErrorCode::UnknownTopicOrPartition)?;
        let leader = part.leader();
        let node = (self.shared.cluster.nodes[leader.0].id, leader.1);
        match self.leader_error(leader, -1) {
            Some(code) => Err(code),
            None => Ok((name, node)),
        }
    }

    /// Applies acknowledgements; each partition's result.
    fn share_acks(&self, group: &str, member: &str, acks: &Acks, max_type: i8) -> Vec<(Key, ErrorCode)> {
        let config = &self.shared.config;
        let renewed = Instant::now() + config.share_record_lock_duration;
        let mut out = Vec::new();
        let mut freed = false;
        for (key, list) in acks {
            let code = if !valid_batches(list, max_type) {
                ErrorCode::InvalidRequest
            } else if let Err(code) = self.share_partition_check(*key) {
                code
            } else {
                let mut inner = self.shared.shares.lock();
                let sp = inner.groups.get_mut(group).and_then(|g| g.partitions.get_mut(key));
                let batches: Vec<AckBatch<'_>> =
                    list.iter().map(|(f, l, t)| AckBatch { first: *f, last: *l, types: t }).collect();
                match sp
                    .map(|sp| sp.acknowledge(member, &batches, config.share_delivery_count_limit, renewed))
                {
                    Some(Ok(())) => {
                        freed |= list.iter().any(|(_, _, t)| t.contains(&2));
                        ErrorCode::None
                    }
                    Some(Err(code)) => code,
                    None => ErrorCode::InvalidRecordState,
                }
            };
            out.push((*key, code));
        }
        if freed {
            self.shared.appended();
        }
        out
    }

    /// Releases what `member` holds in `group` (its share session closed).
    fn share_release(&self, group: &str, member: &str) {
        let limit = self.shared.config.share_delivery_count_limit;
        let mut inner = self.shared.shares.lock();
        let freed = inner.groups.get_mut(group).is_some_and(|g| {
            g.partitions.values_mut().fold(false, |f, sp| sp.release(Some(member), Instant::now(), limit) | f)
        });
        drop(inner);
        if freed {
            self.shared.appended();
        }
    }

    /// Acquires records of one partition for `member`, up to `max_records` and `max_bytes`.
    fn share_acquire(
        &self,
        group: &str,
        member: &str,
        key: Key,
        max_records: &mut i64,
        max_bytes: &mut usize,
    ) -> Fetched {
        let (name, leader) = match self.share_partition_check(key) {
            Ok(ok) => ok,
            Err(code) => {
                return Fetched { key, code, leader: (-1, -1), records: Vec::new(), acquired: Vec::new() };
            }
        };
        let mut f = Fetched { key, code: ErrorCode::None, leader, records: Vec::new(), acquired: Vec::new() };
        let Some(part) = self.shared.topics.partition(&name, key.1) else { return f };
        let config = &self.shared.config;
        let deadline = Instant::now() + config.share_record_lock_duration;
        let mut inner = self.shared.shares.lock();
        let group = inner.groups.entry(group.to_string()).or_default();
        let log = part.lock();
        let (log_start, hw) = (log.log_start_offset(), log.next_offset());
        let sp = group
            .partitions
            .entry(key)
            .or_insert_with(|| SharePartition::new(if config.share_start_earliest { log_start } else { hw }));
        sp.follow_log_start(log_start);
        let mut offset = sp.next_available(sp.start);
        while *max_records > 0 && *max_bytes > 0 && offset < hw {
            let Some((segment, range)) = log.read_below(offset, hw, *max_bytes, f.records.is_empty()) else {
                break;
            };
            let bytes = &segment[range];
            let mut last = offset;
            for (batch, at) in batches(bytes) {
                last = last.max(batch.last);
                if batch.last < offset || *max_records <= 0 {
                    continue;
                }
                let before = f.acquired.len();
                sp.acquire_batch(&batch, member, deadline, &mut f.acquired);
                let got = f.acquired.len() - before;
                if got > 0 {
                    *max_records -= got as i64;
                    *max_bytes = max_bytes.saturating_sub(at.len());
                    f.records.extend_from_slice(&bytes[at]);
                }
            }
            let next = sp.next_available(last + 1);
            if next <= offset {
                break;
            }
            offset = next;
        }
        f
    }

    pub(super) fn share_fetch(
        &mut self,
        reply: ReplyTo,
        r: crate::codec::messages::ShareFetchRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::share_fetch::{
            AcquiredRecords, LeaderIdAndEpoch, PartitionData, ShareFetchResponse, ShareFetchableTopicResponse,
        };
        let v = reply.api_version;
        let lock_ms = self.shared.config.share_record_lock_duration.as_millis().min(i32::MAX as u128) as i32;
        let top = |code: ErrorCode, message: &str| ShareFetchResponse {
            error_code: code.to_i16(),
            error_message: Some(message.to_string().into()),
            acquisition_lock_timeout_ms: lock_ms,
            ..Default::default()
        };
        let Some((group, member)) = member_of(r.group_id(), r.member_id()) else {
            let body = top(ErrorCode::InvalidRequest, "A ShareFetch needs a group id and a member id.");
            ServerConn::encode_response(reply, &body, out)?;
            return Ok(());
        };
        let epoch = r.share_session_epoch();
        let mut added = Vec::new();
        let mut acks: Acks = Vec::new();
        for t in r.topics() {
            for p in t.partitions() {
                let key = (t.topic_id(), p.partition_index());
                added.push(key);
                let list: Vec<_> = p
                    .acknowledgement_batches()
                    .iter()
                    .map(|b| (b.first_offset(), b.last_offset(), b.acknowledge_types().iter().collect()))
                    .collect();
                if !list.is_empty() {
                    acks.push((key, list));
                }
            }
        }
        if epoch == 0 && !acks.is_empty() {
            let body = top(ErrorCode::InvalidRequest, "Acknowledge data present in Initial Fetch Request.");
            ServerConn::encode_response(reply, &body, out)?;
            return Ok(());
        }
        let forgotten: Vec<Key> = r
            .forgotten_topics_data()
            .iter()
            .flat_map(|t| t.partitions().iter().map(move |p| (t.topic_id(), p)))
            .collect();
        let context = self.shared.shares.lock().sessions.fetch(group, member, epoch, &added, &forgotten);
        let context = match context {
            Ok(c) => c,
            Err(code) => {
                let body = top(code, code.name());
                ServerConn::encode_response(reply, &body, out)?;
                return Ok(());
            }
        };
        let max_type = if v >= 2 && r.is_renew_ack() { 4 } else { 3 };
        let acked = self.share_acks(group, member, &acks, max_type);
        let (parts, full) = match &context {
            Context::Full(p) => (p.clone(), true),
            Context::Incremental(p) => (p.clone(), false),
            Context::Final => {
                self.share_release(group, member);
                (Vec::new(), false)
            }
        };
        let deadline = Instant::now() + Duration::from_millis(u64::try_from(r.max_wait_ms()).unwrap_or(0));
        let renew_only = v >= 2 && r.is_renew_ack();
        let fetched = loop {
            let seen = self.shared.append_count();
            let mut max_records = i64::from(if v >= 1 { r.max_records() } else { 500 }.max(1));
            let mut max_bytes =
                usize::try_from(r.max_bytes()).unwrap_or(0).min(self.shared.config.fetch_max_bytes);
            let fetched: Vec<Fetched> = if renew_only {
                Vec::new()
            } else {
                parts
                    .iter()
                    .map(|&k| self.share_acquire(group, member, k, &mut max_records, &mut max_bytes))
                    .collect()
            };
            let done = fetched.iter().any(|f| !f.acquired.is_empty() || f.code != ErrorCode::None)
                || !acked.is_empty()
                || Instant::now() >= deadline
                || parts.is_empty();
            if done || self.shared.stopping() {
                break fetched;
            }
            self.shared.wait_for_append(seen, deadline.min(Instant::now() + Duration::from_millis(100)));
        };
        let mut keys: Vec<Key> = fetched.iter().map(|f| f.key).chain(acked.iter().map(|a| a.0)).collect();
        keys.sort_unstable();
        keys.dedup();
        let parts = keys.into_iter().filter_map(|key| {
            let f = fetched.iter().find(|f| f.key == key);
            let ack = acked.iter().find(|a| a.0 == key).map(|a| a.1);
            let news =
                f.is_some_and(|f| !f.acquired.is_empty() || f.code != ErrorCode::None) || ack.is_some();
            if !full && !news {
                return None;
            }
            let (code, leader, records, acquired) = match f {
                Some(f) => (f.code, f.leader, f.records.clone(), ranges(&f.acquired)),
                None => (ErrorCode::None, (-1, -1), Vec::new(), Vec::new()),
            };
            let part = PartitionData {
                partition_index: key.1,
                error_code: code.to_i16(),
                acknowledge_error_code: ack.unwrap_or(ErrorCode::None).to_i16(),
                current_leader: LeaderIdAndEpoch {
                    leader_id: leader.0,
                    leader_epoch: leader.1,
                    ..Default::default()
                },
                records: records.into(),
                acquired_records: acquired
                    .into_iter()
                    .map(|(first, last, count)| AcquiredRecords {
                        first_offset: first,
                        last_offset: last,
                        delivery_count: count,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            Some((key.0, part))
        });
        let body = ShareFetchResponse {
            acquisition_lock_timeout_ms: lock_ms,
            responses: by_topic(parts, |id, parts| ShareFetchableTopicResponse {
                topic_id: id,
                partitions: parts.into(),
                ..Default::default()
            })
            .into(),
            ..Default::default()
        };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn share_acknowledge(
        &mut self,
        reply: ReplyTo,
        r: crate::codec::messages::ShareAcknowledgeRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::share_acknowledge::{
            LeaderIdAndEpoch, PartitionData, ShareAcknowledgeResponse, ShareAcknowledgeTopicResponse,
        };
        let v = reply.api_version;
        let lock_ms = self.shared.config.share_record_lock_duration.as_millis().min(i32::MAX as u128) as i32;
        let top = |code: ErrorCode, message: &str| ShareAcknowledgeResponse {
            error_code: code.to_i16(),
            error_message: Some(message.to_string().into()),
            acquisition_lock_timeout_ms: lock_ms,
            ..Default::default()
        };
        let Some((group, member)) = member_of(r.group_id(), r.member_id()) else {
            let body = top(ErrorCode::InvalidRequest, "A ShareAcknowledge needs a group id and a member id.");
            ServerConn::encode_response(reply, &body, out)?;
            return Ok(());
        };
        let closing =
            match self.shared.shares.lock().sessions.acknowledge(group, member, r.share_session_epoch()) {
                Ok(c) => c,
                Err(code) => {
                    let body = top(code, code.name());
                    ServerConn::encode_response(reply, &body, out)?;
                    return Ok(());
                }
            };
        let mut acks: Acks = Vec::new();
        for t in r.topics() {
            for p in t.partitions() {
                let list = p
                    .acknowledgement_batches()
                    .iter()
                    .map(|b| (b.first_offset(), b.last_offset(), b.acknowledge_types().iter().collect()))
                    .collect();
                acks.push(((t.topic_id(), p.partition_index()), list));
            }
        }
        let max_type = if v >= 2 && r.is_renew_ack() { 4 } else { 3 };
        let acked = self.share_acks(group, member, &acks, max_type);
        if closing {
            self.share_release(group, member);
        }
        let parts = acked.into_iter().map(|((id, p), code)| {
            let leader = self.share_partition_check((id, p)).map_or((-1, -1), |(_, l)| l);
            let part = PartitionData {
                partition_index: p,
                error_code: code.to_i16(),
                current_leader: LeaderIdAndEpoch {
                    leader_id: leader.0,
                    leader_epoch: leader.1,
                    ..Default::default()
                },
                ..Default::default()
            };
            (id, part)
        });
        let body = ShareAcknowledgeResponse {
            acquisition_lock_timeout_ms: lock_ms,
            responses: by_topic(parts, |id, parts| ShareAcknowledgeTopicResponse {
                topic_id: id,
                partitions: parts.into(),
                ..Default::default()
            })
            .into(),
            ..Default::default()
        };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }
}
