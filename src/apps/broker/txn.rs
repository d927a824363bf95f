//! The transaction coordinator: transactional ids, their producer ids and epochs, and the
//! state of each one's transaction, with the transitions (and the error codes) of Apache
//! Kafka's `TransactionCoordinator` under transaction version 1 (an epoch is bumped by
//! InitProducerId and by fencing, not by every commit).
//!
//! A transaction ends at once: EndTxn writes the commit or abort markers into the
//! partitions' logs and moves the pending group offsets before it answers, so the
//! `PrepareCommit` and `PrepareAbort` states are never seen from outside.
//!
//! Lock order: the coordinator's lock, then a partition's log, then the groups.

use std::collections::{BTreeMap, BTreeSet};
use std::string::String;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;
use std::vec::Vec;

use super::groups::Committed;
use super::host::Host;
use super::lock::lock;
use crate::codec::error_code::ErrorCode;

/// A transaction's state, as Kafka names it (DescribeTransactions, ListTransactions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TxnState {
    Empty,
    Ongoing,
    CompleteCommit,
    CompleteAbort,
}

impl TxnState {
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
        }
    }
}

/// Every state name Kafka knows (ListTransactions' filters).
pub(crate) const STATE_NAMES: &[&str] = &[
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
];

/// One transactional id.
#[derive(Debug)]
pub(crate) struct Txn {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The producer id before the last rotation (epoch exhaustion), or -1.
    pub previous_producer_id: i64,
    pub timeout_ms: i32,
    pub state: TxnState,
    /// The partitions written in the open transaction.
    pub partitions: BTreeSet<(String, i32)>,
    /// The groups whose offsets it commits (AddOffsetsToTxn).
    pub groups: BTreeSet<String>,
    /// Offsets to commit with it: (group, topic, partition, offset).
    pub pending_offsets: Vec<(String, String, i32, Committed)>,
    /// When the open transaction started (wall clock ms, and for its timeout).
    pub start_ms: i64,
    started: Instant,
}

/// Kafka's `TransactionMetadata.isEpochExhausted`: the last epoch before a new producer id.
fn exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Every transactional id, by name.
#[derive(Debug, Default)]
pub(crate) struct Txns {
    by_id: Mutex<BTreeMap<String, Txn>>,
}

/// The coordinator's lock, held across a check and what follows it (a transactional
/// Produce holds it while it appends, so that a transaction cannot end in between).
pub(crate) type TxnsGuard<'a> = MutexGuard<'a, BTreeMap<String, Txn>>;

impl Txns {
    pub fn lock(&self) -> TxnsGuard<'_> {
        lock(&self.by_id)
    }

    /// InitProducerId with a transactional id: the new producer id and epoch, or the error
    /// (PRODUCER_FENCED is for the caller to turn into INVALID_PRODUCER_EPOCH for old
    /// versions).
    pub fn init(
        &self,
        shared: &dyn Host,
        id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
    ) -> Result<(i64, i16), ErrorCode> {
        if id.is_empty() {
            return Err(ErrorCode::InvalidRequest);
        }
        let max = shared.config().transaction_max_timeout.as_millis();
        if timeout_ms <= 0 || u128::from(timeout_ms.unsigned_abs()) > max {
            return Err(ErrorCode::InvalidTransactionTimeout);
        }
        let mut all = self.lock();
        let txn = all.entry(id.into()).or_insert_with(|| Txn {
            producer_id: shared.new_producer_id(),
            producer_epoch: -1,
            previous_producer_id: -1,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            groups: BTreeSet::new(),
            pending_offsets: Vec::new(),
            start_ms: -1,
            started: Instant::now(),
        });
        if let Some((pid, epoch)) = expected {
            let valid = txn.producer_epoch == -1
                || pid == txn.producer_id
                || (pid == txn.previous_producer_id && exhausted(epoch));
            if !valid {
                return Err(ErrorCode::ProducerFenced);
            }
        }
        match txn.state {
            TxnState::Ongoing => {
                // Fences the current producer and aborts its transaction; the client
                // retries, and that InitProducerId bumps the epoch again.
                txn.producer_epoch = txn.producer_epoch.saturating_add(1);
                finish(shared, id, txn, false);
                Err(ErrorCode::ConcurrentTransactions)
            }
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                if let Some((pid, epoch)) = expected
                    && txn.producer_epoch != -1
                    && pid == txn.producer_id
                    && epoch != txn.producer_epoch
                {
                    return Err(ErrorCode::ProducerFenced);
                }
                if exhausted(txn.producer_epoch) {
                    txn.previous_producer_id = txn.producer_id;
                    txn.producer_id = shared.new_producer_id();
                    txn.producer_epoch = 0;
                } else {
                    txn.producer_epoch += 1;
                }
                txn.timeout_ms = timeout_ms;
                txn.state = TxnState::Empty;
                txn.partitions.clear();
                txn.groups.clear();
                txn.pending_offsets.clear();
                Ok((txn.producer_id, txn.producer_epoch))
            }
        }
    }

    /// The checks every request of a running producer goes through: the id is known, the
    /// producer id is its own and the epoch is current.
    pub fn check<'g>(
        all: &'g mut TxnsGuard<'_>,
        id: &str,
        producer_id: i64,
        epoch: i16,
    ) -> Result<&'g mut Txn, ErrorCode> {
        if id.is_empty() {
            return Err(ErrorCode::InvalidRequest);
        }
        let txn = all.get_mut(id).ok_or(ErrorCode::InvalidProducerIdMapping)?;
        if txn.producer_id != producer_id {
            return Err(ErrorCode::InvalidProducerIdMapping);
        }
        if txn.producer_epoch != epoch {
            return Err(ErrorCode::ProducerFenced);
        }
        Ok(txn)
    }

    /// AddPartitionsToTxn (and AddOffsetsToTxn, with `group`): starts the transaction if
    /// none is open.
    pub fn add(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
        group: Option<&str>,
    ) -> Result<(), ErrorCode> {
        let mut all = self.lock();
        let txn = Self::check(&mut all, id, producer_id, epoch)?;
        if txn.state != TxnState::Ongoing {
            txn.state = TxnState::Ongoing;
            txn.partitions.clear();
            txn.groups.clear();
            txn.pending_offsets.clear();
            txn.start_ms = now_ms();
            txn.started = Instant::now();
        }
        txn.partitions.extend(partitions.iter().cloned());
        if let Some(g) = group {
            txn.groups.insert(g.into());
        }
        Ok(())
    }

    /// AddPartitionsToTxn's verify-only form (v4+): per partition, whether it is in the
    /// open transaction (TRANSACTION_ABORTABLE when it is not).
    pub fn verify(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Result<Vec<ErrorCode>, ErrorCode> {
        let mut all = self.lock();
        let txn = Self::check(&mut all, id, producer_id, epoch)?;
        Ok(partitions
            .iter()
            .map(|p| {
                if txn.state == TxnState::Ongoing && txn.partitions.contains(p) {
                    ErrorCode::None
                } else {
                    ErrorCode::TransactionAbortable
                }
            })
            .collect())
    }

    /// EndTxn.
    pub fn end(
        &self,
        shared: &dyn Host,
        id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<(i64, i16), ErrorCode> {
        let mut all = self.lock();
        let txn = Self::check(&mut all, id, producer_id, epoch)?;
        match (txn.state, commit) {
            (TxnState::Ongoing, _) => {
                finish(shared, id, txn, commit);
                Ok((txn.producer_id, txn.producer_epoch))
            }
            // A retry of the end that was done.
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => {
                Ok((txn.producer_id, txn.producer_epoch))
            }
            _ => Err(ErrorCode::InvalidTxnState),
        }
    }

    /// Aborts the open transactions older than their timeout, fencing their producers
    /// (the epoch is bumped, as Kafka's `abortTimedOutTransactions` does).
    pub fn abort_timed_out(&self, shared: &dyn Host) {
        let now = Instant::now();
        let mut all = self.lock();
        for (id, txn) in all.iter_mut() {
            let timeout = std::time::Duration::from_millis(u64::from(txn.timeout_ms.unsigned_abs()));
            if txn.state == TxnState::Ongoing && now.duration_since(txn.started) >= timeout {
                txn.producer_epoch = txn.producer_epoch.saturating_add(1);
                shared.log(format_args!(
                    "transaction {id} timed out after {} ms: aborted, producer {} fenced at epoch {}",
                    txn.timeout_ms, txn.producer_id, txn.producer_epoch
                ));
                finish(shared, id, txn, false);
            }
        }
    }

    /// Pending (uncommitted) transactional offsets of `group`: the (topic, partition) pairs.
    pub fn pending_offsets(&self, group: &str) -> BTreeSet<(String, i32)> {
        self.lock()
            .values()
            .filter(|t| t.state == TxnState::Ongoing)
            .flat_map(|t| t.pending_offsets.iter())
            .filter(|(g, ..)| g == group)
            .map(|(_, t, p, _)| (t.clone(), *p))
            .collect()
    }
}

/// Ends `txn`'s open transaction: a marker (at its current epoch) in each of its
/// partitions, its group offsets committed or dropped.
fn finish(shared: &dyn Host, id: &str, txn: &mut Txn, commit: bool) {
    let now = now_ms();
    for (topic, p) in &txn.partitions {
        shared.write_marker(topic, *p, txn.producer_id, txn.producer_epoch, commit, now);
    }
    let offsets = core::mem::take(&mut txn.pending_offsets);
    if commit {
        for (group, topic, p, c) in offsets {
            shared.store_offset(&group, &topic, p, (c.offset, c.leader_epoch, c.metadata));
        }
    }
    shared.log(format_args!(
        "transaction {id} (producer {} epoch {}) {}: {} partitions",
        txn.producer_id,
        txn.producer_epoch,
        if commit { "committed" } else { "aborted" },
        txn.partitions.len()
    ));
    txn.partitions.clear();
    txn.groups.clear();
    txn.state = if commit { TxnState::CompleteCommit } else { TxnState::CompleteAbort };
    shared.appended();
}
