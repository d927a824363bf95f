//! Records in and out: Produce and ListOffsets (Fetch is in `fetch.rs`).

use super::*;

impl Handler<'_> {
    pub(super) fn produce(
        &mut self,
        reply: ReplyTo,
        p: crate::codec::messages::ProduceRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<Outcome, ConnError> {
        use crate::codec::messages::produce::{
            BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse,
            ProduceResponse, TopicProduceResponse,
        };
        // The nodes named in `current_leader`s (KIP-951), for `node_endpoints`.
        let mut endpoints: Vec<usize> = Vec::new();
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
        let names: Vec<Option<String>> = p
            .topic_data()
            .iter()
            .map(|t| if v >= 13 { self.shared.topics.name_of(t.topic_id()) } else { Some(t.name().into()) })
            .collect();
        // The partitions the faults fail (`Broker::add_fault`).
        let faults = {
            let asked: Vec<(&str, i32)> = p
                .topic_data()
                .iter()
                .zip(&names)
                .flat_map(|(t, n)| {
                    t.partition_data().iter().map(move |d| (n.as_deref().unwrap_or_default(), d.index()))
                })
                .collect();
            self.shared.hooks.partition_failures(ApiKey::Produce, &asked)
        };
        let mut faults = faults.into_iter();
        for (t, name) in p.topic_data().iter().zip(names) {
            let mut parts = Vec::new();
            for d in t.partition_data() {
                let index = d.index();
                let mut errors = Vec::new();
                let (fault, fault_records) = match faults.next().flatten() {
                    Some((code, records)) => (Some(code), records),
                    None => (None, Vec::new()),
                };
                // The log start offset a failed append answers with (Kafka's, for the
                // errors its log raises after the partition was found).
                let mut failed_log_start = -1;
                let result: Result<(i64, i64, i64), Rejected> = (|| {
                    if !matches!(acks, -1..=1) {
                        return Err(Rejected {
                            code: ErrorCode::InvalidRequiredAcks,
                            message: String::new(),
                        });
                    }
                    if let Some(code) = fault {
                        let message = if fault_records.is_empty() {
                            "injected by a fault".into()
                        } else {
                            std::format!(
                                "One or more records have been rejected due to {} record errors in total (injected by a fault)",
                                fault_records.len()
                            )
                        };
                        return Err(Rejected { code, message });
                    }
                    let Some(name) = name.as_deref() else {
                        return Err(Rejected { code: ErrorCode::UnknownTopicId, message: String::new() });
                    };
                    if let Some(id) = transactional_id
                        && !self.allowed(op::WRITE, resource::TRANSACTIONAL_ID, id)
                    {
                        let code = ErrorCode::TransactionalIdAuthorizationFailed;
                        return Err(Rejected { code, message: String::new() });
                    }
                    if !self.allowed(op::WRITE, resource::TOPIC, name) {
                        let code = ErrorCode::TopicAuthorizationFailed;
                        return Err(Rejected { code, message: String::new() });
                    }
                    let Some((partition, settings)) = self.shared.topics.partition_with_settings(
                        name,
                        index,
                        v,
                        now_ms,
                        config.max_message_bytes,
                    ) else {
                        return Err(Rejected {
                            code: ErrorCode::UnknownTopicOrPartition,
                            message: "This server does not host this topic-partition.".into(),
                        });
                    };
                    let not_leader = |leader| {
                        self.leader_error(leader, -1).map(|code| Rejected {
                            code,
                            message: std::format!(
                                "node {} is not the leader of {name}-{index}",
                                self.endpoint(self.node).0
                            ),
                        })
                    };
                    if let Some(r) = not_leader(partition.leader()) {
                        return Err(r);
                    }
                    let bytes = d.records().map(|r| r.bytes()).unwrap_or_default();
                    // A transactional batch: its producer must be the transactional id's,
                    // at its epoch, with this partition added to the open transaction.
                    // The coordinator stays locked until the batch is in the log, so
                    // that the transaction cannot end in between.
                    let batch = crate::codec::records::RecordBatch::new(bytes).ok();
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
                            let check = crate::apps::broker::txn::Txns::check(
                                &mut all,
                                id,
                                b.producer_id(),
                                b.producer_epoch(),
                            )
                            .map(|txn| {
                                txn.state == crate::apps::broker::txn::TxnState::Ongoing
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
                    let mut log = partition.lock();
                    // Checked again with the log locked: it may have moved meanwhile.
                    if let Some(r) = not_leader(log.leader()) {
                        return Err(r);
                    }
                    let done = match log.append(
                        bytes,
                        &settings,
                        &mut self.scratch,
                        config.max_decompressed_bytes,
                        &mut errors,
                    ) {
                        Ok(done) => done,
                        Err(r) => {
                            // As Kafka's ReplicaManager: a corrupt or too large batch
                            // answers with no log start offset, any other failure of the
                            // log (sequences, epochs, invalid records) with the log's.
                            if !matches!(
                                r.code,
                                ErrorCode::CorruptMessage
                                    | ErrorCode::MessageTooLarge
                                    | ErrorCode::RecordListTooLarge
                            ) {
                                failed_log_start = log.log_start_offset();
                            }
                            return Err(r);
                        }
                    };
                    let log_start = log.log_start_offset();
                    drop(log);
                    appended |= !done.duplicate;
                    let append_time = if done.duplicate {
                        done.duplicate_time
                    } else if settings.timestamp_type == crate::codec::records::TimestampType::LogAppendTime {
                        now_ms
                    } else {
                        -1
                    };
                    Ok((done.base_offset, append_time, log_start))
                })();
                let (code, (base_offset, log_append_time_ms, log_start), message) = match result {
                    Ok(done) => (0, done, None),
                    Err(r) => {
                        if first_error.is_none() {
                            first_error =
                                Some(std::format!("{}/{index}: {:?} {}", t.name(), r.code, r.message));
                        }
                        // Kafka gives a message only with an invalid record's errors
                        // (ReplicaManager's `hasCustomErrorMessage`); a fault's is kwire's.
                        let custom = fault.is_some()
                            || matches!(r.code, ErrorCode::InvalidRecord | ErrorCode::InvalidTimestamp);
                        let message = Some(r.message).filter(|m| custom && !m.is_empty() && v >= 8);
                        (r.code.to_i16(), (-1, -1, failed_log_start), message)
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
                        .chain(fault_records.iter().map(|&i| BatchIndexAndErrorMessage {
                            batch_index: i,
                            batch_index_error_message: Some("record rejected by a fault".into()),
                            ..Default::default()
                        }))
                        .collect()
                } else {
                    Vec::new()
                };
                // KIP-951: where the partition's leader is now (v10+).
                let current_leader = match name.as_deref() {
                    Some(n) if v >= 10 && code == ErrorCode::NotLeaderOrFollower.to_i16() => {
                        self.current_leader(n, index, &mut endpoints)
                    }
                    _ => None,
                };
                parts.push(PartitionProduceResponse {
                    index,
                    error_code: code,
                    current_leader: current_leader
                        .map(|(leader_id, leader_epoch)| LeaderIdAndEpoch {
                            leader_id,
                            leader_epoch,
                            ..Default::default()
                        })
                        .unwrap_or_default(),
                    base_offset,
                    log_append_time_ms,
                    log_start_offset: if v >= 5 { log_start } else { -1 },
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
        let node_endpoints: Vec<NodeEndpoint<'_>> = self
            .node_endpoints(&endpoints)
            .map(|(node_id, host, port)| NodeEndpoint {
                node_id,
                host: host.into(),
                port,
                ..Default::default()
            })
            .collect();
        let body = ProduceResponse {
            responses: topics.into(),
            node_endpoints: node_endpoints.into(),
            ..Default::default()
        };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(Outcome::Continue)
    }

    pub(super) fn list_offsets(
        &mut self,
        reply: ReplyTo,
        l: crate::codec::messages::ListOffsetsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::list_offsets::{
            ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse,
        };
        let v = reply.api_version;
        let limit = self.shared.config.max_decompressed_bytes;
        let mut topics = Vec::new();
        let asked: Vec<(&str, i32)> = l
            .topics()
            .iter()
            .flat_map(|t| t.partitions().iter().map(move |p| (t.name(), p.partition_index())))
            .collect();
        let mut faults = self.shared.hooks.partition_faults(ApiKey::ListOffsets, &asked).into_iter();
        for t in l.topics() {
            let mut parts = Vec::new();
            for p in t.partitions() {
                let index = p.partition_index();
                let fault = faults.next().flatten();
                let mut r = ListOffsetsPartitionResponse {
                    partition_index: index,
                    timestamp: -1,
                    offset: -1,
                    leader_epoch: -1,
                    ..Default::default()
                };
                match self.shared.topics.partition(t.name(), index) {
                    _ if fault.is_some() => r.error_code = fault.map_or(0, |c| c.to_i16()),
                    _ if !self.allowed(op::DESCRIBE, resource::TOPIC, t.name()) => {
                        r.error_code = ErrorCode::TopicAuthorizationFailed.to_i16();
                    }
                    None => r.error_code = ErrorCode::UnknownTopicOrPartition.to_i16(),
                    Some(partition) => {
                        let log = partition.lock();
                        let current = if v >= 4 { p.current_leader_epoch() } else { -1 };
                        if let Some(code) = self.leader_error(log.leader(), current) {
                            r.error_code = code.to_i16();
                            parts.push(r);
                            continue;
                        }
                        let committed = v >= 2 && l.isolation_level() == 1;
                        let start = log.log_start_offset();
                        let found = match p.timestamp() {
                            -1 if committed => Some((-1, log.last_stable_offset())),
                            -1 => Some((-1, log.next_offset())),
                            -2 | -4 => Some((-1, start)),
                            -3 => log.max_timestamp(&mut self.scratch, limit),
                            ts if ts >= 0 => log.offset_for_timestamp(ts, &mut self.scratch, limit),
                            _ => None,
                        };
                        if let Some((ts, offset)) = found {
                            r.timestamp = ts;
                            // Nothing below the log start offset is served.
                            r.offset = offset.max(start);
                            if v >= 4 {
                                r.leader_epoch = log.leader().1;
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

    /// OffsetForLeaderEpoch, as Kafka's `Partition::lastOffsetForLeaderEpoch` answers it at
    /// the leader: the largest epoch at most the one asked for and where it ends in the
    /// log (-1 and -1 when none is known), after the leader checks (NOT_LEADER_OR_FOLLOWER,
    /// and FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH for `current_leader_epoch`).
    pub(super) fn offset_for_leader_epoch(
        &mut self,
        reply: ReplyTo,
        r: crate::messages::OffsetForLeaderEpochRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::messages::offset_for_leader_epoch::{
            EpochEndOffset, OffsetForLeaderEpochResponse, OffsetForLeaderTopicResult,
        };
        let asked: Vec<(&str, i32)> = r
            .topics()
            .iter()
            .flat_map(|t| t.partitions().iter().map(move |p| (t.topic(), p.partition())))
            .collect();
        let mut faults = self.shared.hooks.partition_faults(ApiKey::OffsetForLeaderEpoch, &asked).into_iter();
        // CLUSTER_ACTION on the cluster (a replica), else DESCRIBE on each topic.
        let replica = self.allowed(op::CLUSTER_ACTION, resource::CLUSTER, CLUSTER_NAME);
        let mut topics = Vec::new();
        for t in r.topics() {
            let refused = !replica && !self.allowed(op::DESCRIBE, resource::TOPIC, t.topic());
            let mut parts = Vec::new();
            for p in t.partitions() {
                let mut e = EpochEndOffset { partition: p.partition(), ..Default::default() };
                let fault = faults.next().flatten();
                match self.shared.topics.partition(t.topic(), p.partition()) {
                    _ if refused => e.error_code = ErrorCode::TopicAuthorizationFailed.to_i16(),
                    _ if fault.is_some() => e.error_code = fault.map_or(0, |c| c.to_i16()),
                    None => e.error_code = ErrorCode::UnknownTopicOrPartition.to_i16(),
                    Some(partition) => {
                        let log = partition.lock();
                        if let Some(code) = self.leader_error(log.leader(), p.current_leader_epoch()) {
                            e.error_code = code.to_i16();
                        } else if let Some((epoch, end)) = log.end_offset_for_epoch(p.leader_epoch()) {
                            e.leader_epoch = epoch;
                            e.end_offset = end;
                        }
                    }
                }
                parts.push(e);
            }
            topics.push(OffsetForLeaderTopicResult {
                topic: t.topic().into(),
                partitions: parts.into(),
                ..Default::default()
            });
        }
        let body = OffsetForLeaderEpochResponse { topics: topics.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }
}
