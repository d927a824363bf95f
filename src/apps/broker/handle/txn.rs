//! Transactions: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit,
//! EndTxn, DescribeTransactions and ListTransactions, on the coordinator of `super::txn`.

use super::*;
use crate::apps::broker::txn::{STATE_NAMES, Txns};

/// PRODUCER_FENCED for the versions that know it, INVALID_PRODUCER_EPOCH before (as
/// Kafka's `KafkaApis` answers older clients).
fn fenced_as(code: ErrorCode, version: i16, knows_fenced_from: i16) -> ErrorCode {
    if code == ErrorCode::ProducerFenced && version < knows_fenced_from {
        ErrorCode::InvalidProducerEpoch
    } else {
        code
    }
}

/// A partition list of a request, with whether each partition exists.
fn partitions_of<'a>(
    shared: &Shared,
    topics: impl Iterator<Item = (&'a str, Vec<i32>)>,
) -> Vec<(String, i32, bool)> {
    let mut out = Vec::new();
    for (name, parts) in topics {
        for p in parts {
            out.push((name.to_string(), p, shared.topics.partition(name, p).is_some()));
        }
    }
    out
}

impl Handler<'_> {
    pub(super) fn init_producer_id(
        &mut self,
        reply: ReplyTo,
        i: crate::codec::messages::InitProducerIdRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::init_producer_id::InitProducerIdResponse;
        let v = reply.api_version;
        let result = match i.transactional_id() {
            None => Ok((self.shared.new_producer_id(), 0)),
            Some(id) => {
                let expected =
                    (v >= 3 && i.producer_id() != -1).then(|| (i.producer_id(), i.producer_epoch()));
                self.shared
                    .txns
                    .init(self.shared, id, i.transaction_timeout_ms(), expected)
                    .map_err(|e| fenced_as(e, v, 4))
            }
        };
        let body = match result {
            Ok((producer_id, producer_epoch)) => {
                InitProducerIdResponse { producer_id, producer_epoch, ..Default::default() }
            }
            Err(e) => InitProducerIdResponse {
                error_code: e.to_i16(),
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            },
        };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    /// Adds (or, when `verify_only`, checks) partitions of one transaction: per partition,
    /// its error. A client's request (`authorize`, v0-3) needs WRITE on the transactional
    /// id (else every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each
    /// topic. Partitions of refused topics get TOPIC_AUTHORIZATION_FAILED, unknown ones
    /// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, nothing added,
    /// as from Kafka.
    #[allow(clippy::too_many_arguments)]
    fn add_partitions(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        verify_only: bool,
        parts: &[(String, i32, bool)],
        version: i16,
        authorize: bool,
    ) -> Vec<ErrorCode> {
        if authorize && !self.allowed(op::WRITE, resource::TRANSACTIONAL_ID, id) {
            return std::vec![ErrorCode::TransactionalIdAuthorizationFailed; parts.len()];
        }
        let failed: Vec<Option<ErrorCode>> = parts
            .iter()
            .map(|(topic, _, exists)| {
                if authorize && !self.allowed(op::WRITE, resource::TOPIC, topic) {
                    Some(ErrorCode::TopicAuthorizationFailed)
                } else if !exists {
                    Some(ErrorCode::UnknownTopicOrPartition)
                } else {
                    None
                }
            })
            .collect();
        if failed.iter().any(Option::is_some) {
            return failed.into_iter().map(|f| f.unwrap_or(ErrorCode::OperationNotAttempted)).collect();
        }
        if !self.coordinates(CoordinatorKind::Transaction, id) {
            return std::vec![ErrorCode::NotCoordinator; parts.len()];
        }
        let list: Vec<(String, i32)> = parts.iter().map(|(t, p, _)| (t.clone(), *p)).collect();
        if verify_only {
            return match self.shared.txns.verify(id, producer_id, epoch, &list) {
                Ok(codes) => codes,
                Err(e) => std::vec![e; list.len()],
            };
        }
        match self.shared.txns.add(id, producer_id, epoch, &list, None) {
            Ok(()) => std::vec![ErrorCode::None; list.len()],
            Err(e) => std::vec![fenced_as(e, version, 2); list.len()],
        }
    }

    pub(super) fn add_partitions_to_txn(
        &mut self,
        reply: ReplyTo,
        a: crate::codec::messages::AddPartitionsToTxnRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::add_partitions_to_txn::{
            AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse, AddPartitionsToTxnResult,
            AddPartitionsToTxnTopicResult,
        };
        let v = reply.api_version;
        // Per transaction: (id, [(topic, [(partition, error)])]).
        type Results = Vec<(String, Vec<(String, Vec<(i32, i16)>)>)>;
        let group = |parts: &[(String, i32, bool)], codes: &[ErrorCode]| {
            let mut topics: Vec<(String, Vec<(i32, i16)>)> = Vec::new();
            for ((t, p, _), c) in parts.iter().zip(codes) {
                match topics.last_mut() {
                    Some(last) if last.0 == *t => last.1.push((*p, c.to_i16())),
                    _ => topics.push((t.clone(), std::vec![(*p, c.to_i16())])),
                }
            }
            topics
        };
        let mut results: Results = Vec::new();
        if v <= 3 {
            let parts = partitions_of(
                self.shared,
                a.v3_and_below_topics().iter().map(|t| (t.name(), t.partitions().iter().collect())),
            );
            let codes = self.add_partitions(
                a.v3_and_below_transactional_id(),
                a.v3_and_below_producer_id(),
                a.v3_and_below_producer_epoch(),
                false,
                &parts,
                v,
                true,
            );
            results.push((String::new(), group(&parts, &codes)));
        } else {
            for t in a.transactions() {
                let parts = partitions_of(
                    self.shared,
                    t.topics().iter().map(|t| (t.name(), t.partitions().iter().collect())),
                );
                let codes = self.add_partitions(
                    t.transactional_id(),
                    t.producer_id(),
                    t.producer_epoch(),
                    t.verify_only(),
                    &parts,
                    v,
                    false,
                );
                results.push((t.transactional_id().to_string(), group(&parts, &codes)));
            }
        }
        fn topic_results(topics: &[(String, Vec<(i32, i16)>)]) -> Vec<AddPartitionsToTxnTopicResult<'_>> {
            topics
                .iter()
                .map(|(name, parts)| AddPartitionsToTxnTopicResult {
                    name: name.as_str().into(),
                    results_by_partition: parts
                        .iter()
                        .map(|&(partition_index, partition_error_code)| AddPartitionsToTxnPartitionResult {
                            partition_index,
                            partition_error_code,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect()
        }
        let body = if v <= 3 {
            AddPartitionsToTxnResponse {
                results_by_topic_v3_and_below: results
                    .first()
                    .map(|(_, topics)| topic_results(topics))
                    .unwrap_or_default()
                    .into(),
                ..Default::default()
            }
        } else {
            AddPartitionsToTxnResponse {
                results_by_transaction: results
                    .iter()
                    .map(|(id, topics)| AddPartitionsToTxnResult {
                        transactional_id: id.as_str().into(),
                        topic_results: topic_results(topics).into(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }
        };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn add_offsets_to_txn(
        &mut self,
        reply: ReplyTo,
        a: crate::codec::messages::AddOffsetsToTxnRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::add_offsets_to_txn::AddOffsetsToTxnResponse;
        let code = if a.group_id().is_empty() {
            ErrorCode::InvalidGroupId
        } else {
            match self.shared.txns.add(
                a.transactional_id(),
                a.producer_id(),
                a.producer_epoch(),
                &[],
                Some(a.group_id()),
            ) {
                Ok(()) => ErrorCode::None,
                Err(e) => fenced_as(e, reply.api_version, 2),
            }
        };
        let body = AddOffsetsToTxnResponse { error_code: code.to_i16(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn txn_offset_commit(
        &mut self,
        reply: ReplyTo,
        c: crate::codec::messages::TxnOffsetCommitRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::txn_offset_commit::{
            TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
        };
        let v = reply.api_version;
        let group = c.group_id();
        // The group-level checks: the transaction has this group (AddOffsetsToTxn), then
        // the member and generation when the client sent them (v3+).
        // WRITE on the transactional id, READ on the group, then READ on each topic: the
        // authorizer's refusals come first, as in Kafka.
        let check = if !self.allowed(op::WRITE, resource::TRANSACTIONAL_ID, c.transactional_id()) {
            ErrorCode::TransactionalIdAuthorizationFailed
        } else if !self.allowed(op::READ, resource::GROUP, group) {
            ErrorCode::GroupAuthorizationFailed
        } else if !self.coordinates(CoordinatorKind::Group, group) {
            ErrorCode::NotCoordinator
        } else {
            let mut all = self.shared.txns.lock();
            match Txns::check(&mut all, c.transactional_id(), c.producer_id(), c.producer_epoch()) {
                // A producer fenced here gets the error Produce gets.
                Err(ErrorCode::ProducerFenced) => ErrorCode::InvalidProducerEpoch,
                Err(e) => e,
                Ok(txn) if !txn.groups.contains(group) => ErrorCode::InvalidTxnState,
                Ok(_) => ErrorCode::None,
            }
        };
        let refused = matches!(
            check,
            ErrorCode::TransactionalIdAuthorizationFailed | ErrorCode::GroupAuthorizationFailed
        );
        let check = if check != ErrorCode::None {
            check
        } else if group.is_empty() {
            ErrorCode::InvalidGroupId
        } else if v >= 3 && !(c.generation_id_or_member_epoch() < 0 && c.member_id().is_empty()) {
            self.shared.groups.check_commit(group, c.generation_id_or_member_epoch(), c.member_id())
        } else {
            ErrorCode::None
        };
        let mut answers: Vec<(&str, Vec<(i32, ErrorCode)>)> = Vec::new();
        let mut pending = Vec::new();
        for t in c.topics() {
            let topic_refused = !refused && !self.allowed(op::READ, resource::TOPIC, t.name());
            let mut parts = Vec::new();
            for p in t.partitions() {
                let i = p.partition_index();
                let code = if topic_refused {
                    ErrorCode::TopicAuthorizationFailed
                } else if check != ErrorCode::None {
                    check
                } else if self.shared.topics.partition(t.name(), i).is_none() {
                    ErrorCode::UnknownTopicOrPartition
                } else if p.committed_metadata().is_some_and(|m| m.len() > 4096) {
                    ErrorCode::OffsetMetadataTooLarge
                } else {
                    pending.push((
                        group.to_string(),
                        t.name().to_string(),
                        i,
                        Committed {
                            offset: p.committed_offset(),
                            leader_epoch: if v >= 2 { p.committed_leader_epoch() } else { -1 },
                            metadata: p.committed_metadata().map(Into::into),
                        },
                    ));
                    ErrorCode::None
                };
                parts.push((i, code));
            }
            answers.push((t.name(), parts));
        }
        if !pending.is_empty() {
            // Kept with the transaction (checked again under the lock: it may have ended).
            let mut all = self.shared.txns.lock();
            match Txns::check(&mut all, c.transactional_id(), c.producer_id(), c.producer_epoch()) {
                Ok(txn) if txn.groups.contains(group) => {
                    for o in pending {
                        txn.pending_offsets.retain(|q| !(q.0 == o.0 && q.1 == o.1 && q.2 == o.2));
                        txn.pending_offsets.push(o);
                    }
                }
                _ => {
                    for (_, parts) in &mut answers {
                        for p in parts.iter_mut().filter(|p| p.1 == ErrorCode::None) {
                            p.1 = ErrorCode::InvalidTxnState;
                        }
                    }
                }
            }
        }
        let topics: Vec<TxnOffsetCommitResponseTopic<'_>> = answers
            .iter()
            .map(|(name, parts)| TxnOffsetCommitResponseTopic {
                name: (*name).into(),
                partitions: parts
                    .iter()
                    .map(|&(partition_index, code)| TxnOffsetCommitResponsePartition {
                        partition_index,
                        error_code: code.to_i16(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        let body = TxnOffsetCommitResponse { topics: topics.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn end_txn(
        &mut self,
        reply: ReplyTo,
        e: crate::codec::messages::EndTxnRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::end_txn::EndTxnResponse;
        let result = self.shared.txns.end(
            self.shared,
            e.transactional_id(),
            e.producer_id(),
            e.producer_epoch(),
            e.committed(),
        );
        let body = match result {
            Ok((producer_id, producer_epoch)) => {
                EndTxnResponse { producer_id, producer_epoch, ..Default::default() }
            }
            Err(code) => EndTxnResponse {
                error_code: fenced_as(code, reply.api_version, 2).to_i16(),
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            },
        };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn describe_transactions(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::DescribeTransactionsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::describe_transactions::{
            DescribeTransactionsResponse, TopicData, TransactionState,
        };
        let all = self.shared.txns.lock();
        let mut states = Vec::new();
        for id in d.transactional_ids() {
            let state = match all.get(id) {
                _ if !self.allowed(op::DESCRIBE, resource::TRANSACTIONAL_ID, id) => TransactionState {
                    error_code: ErrorCode::TransactionalIdAuthorizationFailed.to_i16(),
                    transactional_id: id.into(),
                    ..Default::default()
                },
                _ if id.is_empty() => TransactionState {
                    error_code: ErrorCode::InvalidRequest.to_i16(),
                    transactional_id: id.into(),
                    ..Default::default()
                },
                _ if !self.coordinates(CoordinatorKind::Transaction, id) => TransactionState {
                    error_code: ErrorCode::NotCoordinator.to_i16(),
                    transactional_id: id.into(),
                    ..Default::default()
                },
                None => TransactionState {
                    error_code: ErrorCode::TransactionalIdNotFound.to_i16(),
                    transactional_id: id.into(),
                    ..Default::default()
                },
                Some(t) => {
                    let mut grouped: Vec<(&str, Vec<i32>)> = Vec::new();
                    // Only the topics the principal may describe.
                    for (name, p) in
                        t.partitions.iter().filter(|(n, _)| self.allowed(op::DESCRIBE, resource::TOPIC, n))
                    {
                        match grouped.last_mut() {
                            Some(last) if last.0 == name.as_str() => last.1.push(*p),
                            _ => grouped.push((name.as_str(), std::vec![*p])),
                        }
                    }
                    let topics: Vec<TopicData<'_>> = grouped
                        .into_iter()
                        .map(|(name, partitions)| TopicData {
                            topic: name.to_string().into(),
                            partitions: partitions.into(),
                            ..Default::default()
                        })
                        .collect();
                    TransactionState {
                        transactional_id: id.into(),
                        transaction_state: t.state.name().into(),
                        transaction_timeout_ms: t.timeout_ms,
                        transaction_start_time_ms: t.start_ms,
                        producer_id: t.producer_id,
                        producer_epoch: t.producer_epoch,
                        topics: topics.into(),
                        ..Default::default()
                    }
                }
            };
            states.push(state);
        }
        drop(all);
        let body = DescribeTransactionsResponse { transaction_states: states.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn list_transactions(
        &mut self,
        reply: ReplyTo,
        l: crate::codec::messages::ListTransactionsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::list_transactions::{ListTransactionsResponse, TransactionState};
        let v = reply.api_version;
        let states: Vec<&str> = l.state_filters().iter().collect();
        let unknown: Vec<&str> = states.iter().copied().filter(|s| !STATE_NAMES.contains(s)).collect();
        let pids: Vec<i64> = l.producer_id_filters().iter().collect();
        let min_duration = if v >= 1 { l.duration_filter() } else { -1 };
        let pattern = if v >= 2 { l.transactional_id_pattern().filter(|p| !p.is_empty()) } else { None };
        // Java regular expressions are not read here: a pattern is either `.*`, a literal
        // prefix followed by `.*`, or a literal (no other metacharacter).
        let meta = |s: &str| s.chars().any(|c| "\\^$.|?*+()[]{}".contains(c));
        // (prefix, whether the id must equal it)
        let matcher: Option<(&str, bool)> = match pattern {
            None => Some(("", false)),
            Some(p) => match p.strip_suffix(".*") {
                Some(prefix) if !meta(prefix) => Some((prefix, false)),
                _ if !meta(p) => Some((p, true)),
                _ => None,
            },
        };
        let Some((prefix, exact)) = matcher else {
            let body = ListTransactionsResponse {
                error_code: ErrorCode::InvalidRequest.to_i16(),
                ..Default::default()
            };
            ServerConn::encode_response(reply, &body, out)?;
            return Ok(());
        };
        let matcher = |id: &str| if exact { id == prefix } else { id.starts_with(prefix) };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let listed: Vec<(String, i64, &'static str)> = self
            .shared
            .txns
            .lock()
            .iter()
            .filter(|(id, t)| {
                (states.is_empty() || states.contains(&t.state.name()))
                    && (pids.is_empty() || pids.contains(&t.producer_id))
                    && (min_duration < 0 || (t.start_ms >= 0 && now - t.start_ms > min_duration))
                    && matcher(id)
                    // Each node lists the transactional ids it coordinates, as Kafka's do.
                    && self.coordinates(CoordinatorKind::Transaction, id)
                    // Only the ids the principal may describe.
                    && self.allowed(op::DESCRIBE, resource::TRANSACTIONAL_ID, id)
            })
            .map(|(id, t)| (id.clone(), t.producer_id, t.state.name()))
            .collect();
        let body = ListTransactionsResponse {
            unknown_state_filters: unknown.iter().map(|&s| s.into()).collect(),
            transaction_states: listed
                .iter()
                .map(|(id, producer_id, state)| TransactionState {
                    transactional_id: id.as_str().into(),
                    producer_id: *producer_id,
                    transaction_state: (*state).into(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }
}
