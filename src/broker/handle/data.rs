//! Records in and out: Produce, Fetch and ListOffsets.

use super::*;

impl Handler<'_> {
    pub(super) fn produce(
        &mut self,
        reply: ReplyTo,
        p: crate::messages::ProduceRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<Outcome, ConnError> {
        use crate::messages::produce::{
            BatchIndexAndErrorMessage, PartitionProduceResponse, ProduceResponse, TopicProduceResponse,
        };
        let v = reply.api_version;
        let acks = p.acks();
        let transactional_id = p.transactional_id();
        let config = &self.shared.config;
        let mut topics = Vec::new();
        let mut appended = false;
        let mut first_error: Option<String> = None;
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        for t in p.topic_data() {
            let name: Option<String> =
                if v >= 13 { self.shared.topics.name_of(t.topic_id()) } else { Some(t.name().into()) };
            let mut parts = Vec::new();
            for d in t.partition_data() {
                let index = d.index();
                let mut errors = Vec::new();
                let result: Result<(i64, i64), Rejected> = (|| {
                    if !matches!(acks, -1..=1) {
                        return Err(Rejected {
                            code: ErrorCode::InvalidRequiredAcks,
                            message: String::new(),
                        });
                    }
                    let Some(name) = name.as_deref() else {
                        return Err(Rejected { code: ErrorCode::UnknownTopicId, message: String::new() });
                    };
                    let Some((partition, settings)) =
                        self.shared.topics.partition_with_settings(name, index, v, now_ms)
                    else {
                        return Err(Rejected {
                            code: ErrorCode::UnknownTopicOrPartition,
                            message: "This server does not host this topic-partition.".into(),
                        });
                    };
                    let mut settings = settings;
                    settings.max_message_bytes = i32::try_from(config.max_message_bytes).unwrap_or(i32::MAX);
                    let bytes = d.records().map(|r| r.bytes()).unwrap_or_default();
                    // A transactional batch: its producer must be the transactional id's,
                    // at its epoch, with this partition added to the open transaction.
                    // The coordinator stays locked until the batch is in the log, so
                    // that the transaction cannot end in between.
                    let batch = crate::records::RecordBatch::new(bytes).ok();
                    let _txn_guard = match batch.filter(|b| b.is_transactional() && b.producer_id() >= 0) {
                        None => None,
                        Some(b) => {
                            let Some(id) = transactional_id else {
                                return Err(Rejected {
                                    code: ErrorCode::TransactionalIdAuthorizationFailed,
                                    message: "a transactional batch needs the request's transactional id"
                                        .into(),
                                });
                            };
                            let mut all = self.shared.txns.lock();
                            let check = crate::broker::txn::Txns::check(
                                &mut all,
                                id,
                                b.producer_id(),
                                b.producer_epoch(),
                            )
                            .map(|txn| {
                                txn.state == crate::broker::txn::TxnState::Ongoing
                                    && txn.partitions.contains(&(name.to_string(), index))
                            });
                            match check {
                                Ok(true) => Some(all),
                                Ok(false) => {
                                    return Err(Rejected {
                                        code: ErrorCode::InvalidTxnState,
                                        message: "Partition was not added to the transaction".into(),
                                    });
                                }
                                Err(ErrorCode::ProducerFenced) => {
                                    return Err(Rejected {
                                        code: ErrorCode::InvalidProducerEpoch,
                                        message: std::format!(
                                            "producer {} epoch {} is fenced: a newer epoch took transactional id {id}",
                                            b.producer_id(),
                                            b.producer_epoch()
                                        ),
                                    });
                                }
                                Err(code) => return Err(Rejected { code, message: String::new() }),
                            }
                        }
                    };
                    let done = partition.lock().append(
                        bytes,
                        &settings,
                        &mut self.scratch,
                        config.max_decompressed_bytes,
                        &mut errors,
                    )?;
                    appended |= !done.duplicate;
                    let append_time =
                        if settings.timestamp_type == crate::records::TimestampType::LogAppendTime {
                            now_ms
                        } else {
                            -1
                        };
                    Ok((done.base_offset, append_time))
                })();
                let (code, (base_offset, log_append_time_ms), message) = match result {
                    Ok(done) => (0, done, None),
                    Err(r) => {
                        if first_error.is_none() {
                            first_error =
                                Some(std::format!("{}/{index}: {:?} {}", t.name(), r.code, r.message));
                        }
                        (r.code.to_i16(), (-1, -1), Some(r.message).filter(|m| !m.is_empty() && v >= 8))
                    }
                };
                let record_errors: Vec<BatchIndexAndErrorMessage<'_>> = if v >= 8 {
                    errors
                        .iter()
                        .map(|e| BatchIndexAndErrorMessage {
                            batch_index: i32::try_from(e.batch_index).unwrap_or(i32::MAX),
                            batch_index_error_message: Some(std::format!("{e}").into()),
                            ..Default::default()
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                parts.push(PartitionProduceResponse {
                    index,
                    error_code: code,
                    base_offset,
                    log_append_time_ms,
                    log_start_offset: if code == 0 && v >= 5 { 0 } else { -1 },
                    record_errors: record_errors.into(),
                    error_message: message.map(Into::into),
                    ..Default::default()
                });
            }
            topics.push(TopicProduceResponse {
                name: t.name().into(),
                topic_id: t.topic_id(),
                partition_responses: parts.into(),
                ..Default::default()
            });
        }
        if appended {
            self.shared.appended();
        }
        if !reply.expects_response {
            // acks=0: no answer; Kafka closes the connection on an error, so that the
            // producer notices.
            return Ok(match first_error {
                Some(e) => Outcome::Close(std::format!("a Produce with acks=0 failed: {e}")),
                None => Outcome::Continue,
            });
        }
        let body = ProduceResponse { responses: topics.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(Outcome::Continue)
    }

    pub(super) fn fetch(
        &mut self,
        reply: ReplyTo,
        f: crate::messages::FetchRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::messages::fetch::{
            AbortedTransaction, FetchResponse, FetchableTopicResponse, PartitionData,
        };
        let v = reply.api_version;
        if v >= 7 && f.session_id() != 0 {
            let body = FetchResponse {
                error_code: ErrorCode::FetchSessionIdNotFound.to_i16(),
                session_id: 0,
                ..Default::default()
            };
            ServerConn::encode_response(reply, &body, out)?;
            return Ok(());
        }
        let start = Instant::now();
        let max_wait = Duration::from_millis(u64::try_from(f.max_wait_ms()).unwrap_or(0));
        let deadline = start + max_wait;
        let min_bytes = usize::try_from(f.min_bytes()).unwrap_or(0);
        let max_bytes = usize::try_from(f.max_bytes()).unwrap_or(0).min(self.shared.config.fetch_max_bytes);
        // At read_committed (v4+), reads stop at the last stable offset and name the
        // aborted transactions they cover.
        let committed = v >= 4 && f.isolation_level() == 1;
        // (topic name, topic id, [(partition, error, high watermark, records, last stable
        // offset, aborted transactions)]): the records are held in their segment, not
        // copied (written from there by `Outbox`).
        type PartAnswer = (i32, i16, i64, Option<(Segment, Range<usize>)>, i64, Option<Vec<(i64, i64)>>);
        type Answer = (String, Uuid, Vec<PartAnswer>);
        let answers: Vec<Answer> = loop {
            let seen = self.shared.append_count();
            let mut total = 0usize;
            let mut errors = false;
            let mut answers: Vec<Answer> = Vec::new();
            for t in f.topics() {
                let (name, id) = if v >= 13 {
                    (self.shared.topics.name_of(t.topic_id()), t.topic_id())
                } else {
                    (Some(t.topic().to_string()), Uuid::ZERO)
                };
                let mut parts = Vec::new();
                for p in t.partitions() {
                    let index = p.partition();
                    let partition = name.as_deref().and_then(|n| self.shared.topics.partition(n, index));
                    let Some(partition) = partition else {
                        errors = true;
                        let code = if name.is_none() {
                            ErrorCode::UnknownTopicId
                        } else {
                            ErrorCode::UnknownTopicOrPartition
                        };
                        parts.push((index, code.to_i16(), -1, None, -1, None));
                        continue;
                    };
                    if v >= 9 && p.current_leader_epoch() > 0 {
                        errors = true;
                        parts.push((index, ErrorCode::UnknownLeaderEpoch.to_i16(), -1, None, -1, None));
                        continue;
                    }
                    let log = partition.lock();
                    let hw = log.next_offset();
                    let offset = p.fetch_offset();
                    if offset < 0 || offset > hw {
                        errors = true;
                        parts.push((index, ErrorCode::OffsetOutOfRange.to_i16(), hw, None, -1, None));
                        continue;
                    }
                    let limit = usize::try_from(p.partition_max_bytes())
                        .unwrap_or(0)
                        .min(max_bytes.saturating_sub(total));
                    let lso = log.last_stable_offset();
                    let below = if committed { lso } else { hw };
                    let records = log.read_below(offset, below, limit, total == 0);
                    let aborted = committed.then(|| log.aborted_between(offset, below));
                    drop(log);
                    total += records.as_ref().map_or(0, |(_, r)| r.len());
                    parts.push((index, 0, hw, records, lso, aborted));
                }
                answers.push((name.unwrap_or_default(), id, parts));
            }
            let now = Instant::now();
            if total >= min_bytes.max(1) || errors || now >= deadline || self.shared.stopping() {
                break answers;
            }
            self.shared.wait_for_append(seen, deadline);
        };
        let responses: Vec<FetchableTopicResponse<'_>> = answers
            .iter()
            .map(|(name, id, parts)| FetchableTopicResponse {
                topic: if v >= 13 { "" } else { name.as_str() }.into(),
                topic_id: *id,
                partitions: parts
                    .iter()
                    .map(|(index, code, hw, records, lso, aborted)| PartitionData {
                        partition_index: *index,
                        error_code: *code,
                        high_watermark: *hw,
                        last_stable_offset: if v >= 4 { *lso } else { -1 },
                        log_start_offset: if v >= 5 { 0 } else { -1 },
                        aborted_transactions: aborted.as_ref().map(|a| {
                            a.iter()
                                .map(|&(producer_id, first_offset)| AbortedTransaction {
                                    producer_id,
                                    first_offset,
                                    ..Default::default()
                                })
                                .collect()
                        }),
                        records: Some(records.as_ref().map_or(&[][..], |(s, r)| &s[r.clone()]).into()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        let body = FetchResponse { responses: responses.into(), session_id: 0, ..Default::default() };
        // Encoded around the records: the other bytes into `out`, and each partition's
        // records spliced in where they go, from the segment that holds them.
        let len = ServerConn::vectored_response_len(reply, &body)?;
        let mut pieces = std::vec![Part::Encoded(&[]); len.parts];
        let (at, before) = (out.len(), out.total_len());
        let mut buf = std::vec![0u8; len.buf];
        ServerConn::encode_response_vectored(reply, &body, &mut buf, &mut pieces)?;
        let mut held = answers.iter().flat_map(|(_, _, parts)| parts).filter_map(|p| p.3.as_ref());
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

    pub(super) fn list_offsets(
        &mut self,
        reply: ReplyTo,
        l: crate::messages::ListOffsetsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::messages::list_offsets::{
            ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse,
        };
        let v = reply.api_version;
        let limit = self.shared.config.max_decompressed_bytes;
        let mut topics = Vec::new();
        for t in l.topics() {
            let mut parts = Vec::new();
            for p in t.partitions() {
                let index = p.partition_index();
                let mut r = ListOffsetsPartitionResponse {
                    partition_index: index,
                    timestamp: -1,
                    offset: -1,
                    leader_epoch: -1,
                    ..Default::default()
                };
                match self.shared.topics.partition(t.name(), index) {
                    None => r.error_code = ErrorCode::UnknownTopicOrPartition.to_i16(),
                    Some(_) if v >= 4 && p.current_leader_epoch() > 0 => {
                        r.error_code = ErrorCode::UnknownLeaderEpoch.to_i16()
                    }
                    Some(partition) => {
                        let log = partition.lock();
                        let committed = v >= 2 && l.isolation_level() == 1;
                        let found = match p.timestamp() {
                            -1 if committed => Some((-1, log.last_stable_offset())),
                            -1 => Some((-1, log.next_offset())),
                            -2 | -4 => Some((-1, 0)),
                            -3 => log.max_timestamp(&mut self.scratch, limit),
                            ts if ts >= 0 => log.offset_for_timestamp(ts, &mut self.scratch, limit),
                            _ => None,
                        };
                        if let Some((ts, offset)) = found {
                            r.timestamp = ts;
                            r.offset = offset;
                            if v >= 4 {
                                r.leader_epoch = 0;
                            }
                        }
                    }
                }
                parts.push(r);
            }
            topics.push(ListOffsetsTopicResponse {
                name: t.name().into(),
                partitions: parts.into(),
                ..Default::default()
            });
        }
        let body = ListOffsetsResponse { topics: topics.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }
}
