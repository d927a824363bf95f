//! Fetch, with fetch sessions (KIP-227, `super::super::fetch_sessions`): a full Fetch opens
//! a session, an incremental one names only the partitions that changed and is answered
//! with only the partitions that have something new.

use super::*;
use crate::apps::broker::fetch_sessions::{Key, SessionPartition, SessionRequest};

/// One partition's answer. The records are held in their segment, not copied (written from
/// there by `Outbox`).
struct PartAnswer {
    key: Key,
    code: i16,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    records: Option<(Segment, Range<usize>)>,
    aborted: Option<Vec<(i64, i64)>>,
}

impl PartAnswer {
    fn error(key: Key, code: ErrorCode) -> PartAnswer {
        PartAnswer {
            key,
            code: code.to_i16(),
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            records: None,
            aborted: None,
        }
    }

    /// A partition refused before its log is read (unknown, not authorized): Kafka's
    /// `FetchResponse.partitionResponse`, whose aborted transactions are an empty list
    /// rather than null.
    fn refused(key: Key, code: ErrorCode) -> PartAnswer {
        PartAnswer { aborted: Some(Vec::new()), ..PartAnswer::error(key, code) }
    }

    fn offsets(&self) -> (i64, i64, i64) {
        (self.high_watermark, self.last_stable_offset, self.log_start_offset)
    }
}

impl Handler<'_> {
    pub(super) fn fetch(
        &mut self,
        reply: ReplyTo,
        f: crate::codec::messages::FetchRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::fetch::{
            AbortedTransaction, FetchResponse, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint,
            PartitionData,
        };
        let v = reply.api_version;
        let uses_ids = v >= 13;
        let mut asked = Vec::new();
        for t in f.topics() {
            for p in t.partitions() {
                asked.push(SessionPartition {
                    topic: if uses_ids { String::new() } else { t.topic().to_string() },
                    topic_id: if uses_ids { t.topic_id() } else { Uuid::ZERO },
                    partition: p.partition(),
                    fetch_offset: p.fetch_offset(),
                    max_bytes: p.partition_max_bytes(),
                    current_leader_epoch: if v >= 9 { p.current_leader_epoch() } else { -1 },
                    answered: (-1, -1, i64::MIN),
                });
            }
        }
        // Before v7 there are no sessions: every Fetch is full and sessionless.
        let context = if v >= 7 {
            let mut forgotten = Vec::new();
            for t in f.forgotten_topics_data() {
                for p in t.partitions() {
                    forgotten.push(if uses_ids {
                        (String::new(), t.topic_id(), p)
                    } else {
                        (t.topic().to_string(), Uuid::ZERO, p)
                    });
                }
            }
            let request = SessionRequest {
                session_id: f.session_id(),
                epoch: f.session_epoch(),
                uses_ids,
                partitions: asked,
                forgotten,
            };
            match self.shared.fetch_sessions.context(request, self.shared.seed()) {
                Ok(c) => c,
                Err(code) => {
                    let body =
                        FetchResponse { error_code: code.to_i16(), session_id: 0, ..Default::default() };
                    ServerConn::encode_response(reply, &body, out)?;
                    return Ok(());
                }
            }
        } else {
            crate::apps::broker::fetch_sessions::SessionContext {
                session_id: 0,
                incremental: false,
                partitions: asked,
            }
        };
        let start = Instant::now();
        let max_wait = Duration::from_millis(u64::try_from(f.max_wait_ms()).unwrap_or(0));
        let deadline = start + max_wait;
        let min_bytes = usize::try_from(f.min_bytes()).unwrap_or(0);
        let max_bytes = usize::try_from(f.max_bytes()).unwrap_or(0).min(self.shared.config.fetch_max_bytes);
        // At read_committed (v4+), reads stop at the last stable offset and name the
        // aborted transactions they cover.
        let committed = v >= 4 && f.isolation_level() == 1;
        // Topic names of the ids asked for (v13+), looked up once.
        let mut names: Vec<(Uuid, Option<String>)> = Vec::new();
        if uses_ids {
            for p in &context.partitions {
                if !names.iter().any(|(id, _)| *id == p.topic_id) {
                    names.push((p.topic_id, self.shared.topics.name_of(p.topic_id)));
                }
            }
        }
        // The partitions the faults fail (`Broker::add_fault`), once per request.
        let faults = {
            let asked: Vec<(&str, i32)> = context
                .partitions
                .iter()
                .map(|p| {
                    let name = if uses_ids {
                        names.iter().find(|(id, _)| *id == p.topic_id).and_then(|(_, n)| n.as_deref())
                    } else {
                        Some(p.topic.as_str())
                    };
                    (name.unwrap_or_default(), p.partition)
                })
                .collect();
            self.shared.hooks.partition_faults(ApiKey::Fetch, &asked)
        };
        let answers: Vec<PartAnswer> = loop {
            let seen = self.shared.append_count();
            let mut total = 0usize;
            let mut errors = false;
            let mut answers: Vec<PartAnswer> = Vec::with_capacity(context.partitions.len());
            for (p, fault) in context.partitions.iter().zip(&faults) {
                let key = p.key();
                if let Some(code) = fault {
                    errors = true;
                    answers.push(PartAnswer::error(key, *code));
                    continue;
                }
                let name = if uses_ids {
                    names.iter().find(|(id, _)| *id == p.topic_id).and_then(|(_, n)| n.as_deref())
                } else {
                    Some(p.topic.as_str())
                };
                if name.is_some_and(|n| !self.allowed(op::READ, resource::TOPIC, n)) {
                    errors = true;
                    answers.push(PartAnswer::refused(key, ErrorCode::TopicAuthorizationFailed));
                    continue;
                }
                let partition = name.and_then(|n| self.shared.topics.partition(n, p.partition));
                let Some(partition) = partition else {
                    errors = true;
                    let code = if name.is_none() {
                        ErrorCode::UnknownTopicId
                    } else {
                        ErrorCode::UnknownTopicOrPartition
                    };
                    answers.push(PartAnswer::refused(key, code));
                    continue;
                };
                let log = partition.lock();
                if let Some(code) = self.leader_error(log.leader(), p.current_leader_epoch) {
                    errors = true;
                    answers.push(PartAnswer::error(key, code));
                    continue;
                }
                let hw = log.next_offset();
                let log_start = log.log_start_offset();
                let offset = p.fetch_offset;
                if offset < log_start || offset > hw {
                    errors = true;
                    // As Kafka's ReplicaManager (without tiered storage): no offsets.
                    answers.push(PartAnswer::error(key, ErrorCode::OffsetOutOfRange));
                    continue;
                }
                let limit = usize::try_from(p.max_bytes).unwrap_or(0).min(max_bytes.saturating_sub(total));
                let lso = log.last_stable_offset();
                let below = if committed { lso } else { hw };
                let records = log.read_below(offset, below, limit, total == 0);
                let aborted = committed.then(|| log.aborted_between(offset, below));
                drop(log);
                total += records.as_ref().map_or(0, |(_, r)| r.len());
                answers.push(PartAnswer {
                    key,
                    code: 0,
                    high_watermark: hw,
                    last_stable_offset: lso,
                    log_start_offset: log_start,
                    records,
                    aborted,
                });
            }
            let now = Instant::now();
            if total >= min_bytes.max(1) || errors || now >= deadline || !self.shared.serving(self.node) {
                break answers;
            }
            self.shared.wait_for_append(seen, deadline);
        };
        // An incremental answer leaves out the partitions with nothing new: no records, no
        // error, and the offsets the session last answered.
        let answers: Vec<PartAnswer> = if context.incremental {
            let before: std::collections::BTreeMap<Key, (i64, i64, i64)> =
                context.partitions.iter().map(|p| (p.key(), p.answered)).collect();
            answers
                .into_iter()
                .filter(|a| {
                    a.code != 0
                        || a.records.is_some()
                        || before.get(&a.key).is_none_or(|&answered| answered != a.offsets())
                })
                .collect()
        } else {
            answers
        };
        self.shared
            .fetch_sessions
            .answered(context.session_id, answers.iter().map(|a| (a.key.clone(), a.offsets())).collect());
        // Consecutive partitions of a topic go in one topic answer.
        let mut topics: Vec<(&Key, Vec<&PartAnswer>)> = Vec::new();
        for a in &answers {
            match topics.last_mut() {
                Some((k, parts)) if (k.0, &k.1) == (a.key.0, &a.key.1) => parts.push(a),
                _ => topics.push((&a.key, std::vec![a])),
            }
        }
        // KIP-951 (v16+): where the leader is now, for the partitions that lost it.
        let mut endpoints: Vec<usize> = Vec::new();
        let mut leaders: Vec<Option<(i32, i32)>> = Vec::with_capacity(answers.len());
        for a in &answers {
            let moved = a.code == ErrorCode::NotLeaderOrFollower.to_i16()
                || a.code == ErrorCode::FencedLeaderEpoch.to_i16();
            let name = if uses_ids { self.shared.topics.name_of(a.key.0) } else { Some(a.key.1.clone()) };
            leaders.push(match name {
                Some(n) if v >= 16 && moved => self.current_leader(&n, a.key.2, &mut endpoints),
                _ => None,
            });
        }
        let mut leaders = leaders.into_iter();
        let responses: Vec<FetchableTopicResponse<'_>> = topics
            .iter()
            .map(|(key, parts)| FetchableTopicResponse {
                topic: key.1.as_str().into(),
                topic_id: key.0,
                partitions: parts
                    .iter()
                    .map(|a| PartitionData {
                        partition_index: a.key.2,
                        error_code: a.code,
                        high_watermark: a.high_watermark,
                        last_stable_offset: if v >= 4 { a.last_stable_offset } else { -1 },
                        log_start_offset: if v >= 5 { a.log_start_offset } else { -1 },
                        aborted_transactions: a.aborted.as_ref().map(|list| {
                            list.iter()
                                .map(|&(producer_id, first_offset)| AbortedTransaction {
                                    producer_id,
                                    first_offset,
                                    ..Default::default()
                                })
                                .collect()
                        }),
                        records: Some(a.records.as_ref().map_or(&[][..], |(s, r)| &s[r.clone()]).into()),
                        current_leader: leaders
                            .next()
                            .flatten()
                            .map(|(leader_id, leader_epoch)| LeaderIdAndEpoch {
                                leader_id,
                                leader_epoch,
                                ..Default::default()
                            })
                            .unwrap_or_default(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        let node_endpoints: Vec<NodeEndpoint<'_>> = self
            .node_endpoints(&endpoints)
            .map(|(node_id, host, port)| NodeEndpoint {
                node_id,
                host: host.into(),
                port,
                ..Default::default()
            })
            .collect();
        let body = FetchResponse {
            responses: responses.into(),
            session_id: context.session_id,
            node_endpoints: node_endpoints.into(),
            ..Default::default()
        };
        // Encoded around the records: the other bytes into `out`, and each partition's
        // records spliced in where they go, from the segment that holds them.
        let len = ServerConn::vectored_response_len(reply, &body)?;
        let mut pieces = std::vec![Part::Encoded(&[]); len.parts];
        let (at, before) = (out.len(), out.total_len());
        let mut buf = std::vec![0u8; len.buf];
        ServerConn::encode_response_vectored(reply, &body, &mut buf, &mut pieces)?;
        let mut held = answers.iter().filter_map(|a| a.records.as_ref());
        let mut encoded = 0;
        for piece in &pieces {
            match piece {
                Part::Encoded(b) => {
                    out.extend_from_slice(b);
                    encoded += b.len();
                }
                Part::Records(r) => {
                    // Every non-empty records field is a part, in wire order: the held
                    // segments in the order of `answers`.
                    let (segment, range) = held.next().expect("one held segment per records part");
                    debug_assert_eq!(r.as_ptr(), segment[range.clone()].as_ptr());
                    out.splice(segment.clone(), range.clone());
                }
            }
        }
        debug_assert_eq!((at + encoded, out.total_len() - before), (out.len(), len.total));
        Ok(())
    }
}
