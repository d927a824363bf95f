//! A partition's log: the record batches' bytes in segments, with an index, and the
//! idempotent producers' state. Appends go through `kwire::records::validate` (Kafka's
//! `LogValidator`): the batch is copied to the log's end once and its offsets assigned
//! there, in place.
//!
//! Segments are shared (`Arc`), so that a Fetch answer holds the segment it reads instead of
//! copying the batches out: the connection writes them to its socket from the segment
//! itself ([`Log::read`], `outbox::Outbox`). The last segment is appended to in place while no
//! answer holds it; when one does, or when it is full, the next batch starts a new segment.
//! As in Kafka, one partition's answer to a Fetch never spans two segments: the client
//! fetches again from where it ended.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::string::String;
use std::sync::Arc;
use std::vec::Vec;

use crate::codec::error_code::ErrorCode;
use crate::codec::records::RecordBatch;
use crate::codec::records::validate::{RecordError, ValidateConfig, ValidateError, validate_and_assign_with};

/// Why a partition's records were refused: the error code and message of its Produce
/// response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Rejected {
    pub code: ErrorCode,
    pub message: String,
}

fn reject(code: ErrorCode, message: impl Into<String>) -> Rejected {
    Rejected { code, message: message.into() }
}

/// One batch's place in the log: its segment, and its bytes there.
#[derive(Clone, Copy, Debug)]
struct Entry {
    last_offset: i64,
    max_timestamp: i64,
    segment: usize,
    start: usize,
    end: usize,
}

/// A segment is closed for appends once it holds this many bytes (a larger batch gets a
/// segment of its own).
const SEGMENT_BYTES: usize = 4 << 20;

/// Bytes of one segment, shared with the Fetch answers being written from it.
pub(crate) type Segment = Arc<Vec<u8>>;

/// The last batches of an idempotent producer (Kafka keeps five), for duplicates.
#[derive(Debug)]
struct ProducerState {
    epoch: i16,
    /// (first sequence, last sequence, base offset), oldest first.
    batches: VecDeque<(i32, i32, i64, i64)>,
    /// The largest timestamp of its last batch (or marker).
    last_timestamp: i64,
    /// The coordinator epoch of its last transaction marker (-1 before any).
    coordinator_epoch: i32,
}

/// A producer as DescribeProducers reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ActiveProducer {
    pub producer_id: i64,
    pub epoch: i16,
    pub last_sequence: i32,
    pub last_timestamp: i64,
    pub coordinator_epoch: i32,
    /// The first offset of its open transaction here, or -1.
    pub current_txn_start_offset: i64,
}

const PRODUCER_BATCHES: usize = 5;

impl ProducerState {
    fn new() -> ProducerState {
        ProducerState { epoch: 0, batches: VecDeque::new(), last_timestamp: -1, coordinator_epoch: -1 }
    }
}

/// One partition's records.
#[derive(Debug, Default)]
pub(crate) struct Log {
    segments: Vec<Segment>,
    index: Vec<Entry>,
    next_offset: i64,
    /// The first offset a read may ask for (DeleteRecords moves it up).
    log_start: i64,
    producers: HashMap<i64, ProducerState>,
    /// The open transactions' producers, with the offset of their first batch here.
    ongoing: HashMap<i64, i64>,
    /// Aborted transactions: (producer id, first offset, offset of the abort marker), in
    /// marker order (Kafka's transaction index).
    aborted: Vec<(i64, i64, i64)>,
    /// The node (its index in the cluster) that leads this partition, and its leader epoch
    /// (bumped by every move), written into the batches appended.
    leader: (usize, i32),
    /// Kafka's leader epoch cache: (epoch, start offset) of each leader epoch that still
    /// starts in the log, both increasing; the last one is the current epoch.
    epochs: Vec<(i32, i64)>,
}

/// Where an append went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Appended {
    pub base_offset: i64,
    /// Whether the batch was a duplicate of one already in the log (not appended again).
    pub duplicate: bool,
    /// For a duplicate, the max timestamp of the batch in the log, which Kafka answers as
    /// the log append time (its producer state keeps it); -1 otherwise.
    pub duplicate_time: i64,
}

impl Log {
    /// An empty log led by node `node` (an index into the cluster's nodes), at epoch 0.
    pub fn led_by(node: usize) -> Log {
        Log { leader: (node, 0), epochs: std::vec![(0, 0)], ..Log::default() }
    }

    /// The leading node's index and the leader epoch.
    pub fn leader(&self) -> (usize, i32) {
        self.leader
    }

    /// Moves the leadership to `node`, bumping the leader epoch; returns the new epoch.
    pub fn move_leader(&mut self, node: usize) -> i32 {
        self.leader = (node, self.leader.1.saturating_add(1));
        self.assign_epoch(self.leader.1, self.next_offset);
        self.leader.1
    }

    /// Records that `epoch` starts at `start` (a new leader starts its epoch at its log end
    /// offset), as Kafka's `LeaderEpochFileCache` assigns: the entries that would break the
    /// order (a later or equal epoch, or a start at or after `start`, such as an epoch that
    /// never got a batch) are dropped first.
    fn assign_epoch(&mut self, epoch: i32, start: i64) {
        if self.epochs.last().is_some_and(|&(e, s)| e == epoch && s <= start) {
            return;
        }
        while self.epochs.last().is_some_and(|&(e, s)| e >= epoch || s >= start) {
            self.epochs.pop();
        }
        self.epochs.push((epoch, start));
    }

    /// The leader epochs this log knows, with the offset each starts at (oldest first).
    pub fn epochs(&self) -> &[(i32, i64)] {
        &self.epochs
    }

    /// OffsetForLeaderEpoch: the largest epoch at most `epoch` and the offset where it ends
    /// (the start of the next epoch, or the log end offset for the current one), as Kafka's
    /// `LeaderEpochFileCache::endOffsetFor` finds them; `None` (Kafka's -1 and -1) for -1 or
    /// an epoch later than any here. An epoch older than every one here ends where the
    /// first one starts.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)> {
        if epoch < 0 {
            return None;
        }
        if self.epochs.last().is_some_and(|&(e, _)| e == epoch) {
            return Some((epoch, self.next_offset));
        }
        let after = self.epochs.iter().position(|&(e, _)| e > epoch)?;
        let end = self.epochs[after].1;
        Some(match after.checked_sub(1) {
            Some(floor) => (self.epochs[floor].0, end),
            None => (epoch, end),
        })
    }

    /// An unclean leader election: node `node` becomes the leader with a log that ends at
    /// the start of the batch holding `end` (the batches from there on are gone, as from a
    /// new leader that never had them), at a bumped epoch that starts there. Returns the
    /// new epoch and log end offset; `Err` for an offset below 0 or past the end. A log
    /// start offset past the new end comes down to it.
    pub fn truncate_unclean(&mut self, node: usize, end: i64) -> Result<(i32, i64), ()> {
        if end < 0 || end > self.next_offset {
            return Err(());
        }
        let keep = self.index.partition_point(|e| e.last_offset < end);
        // Batches are contiguous from offset 0: the first one cut starts after the last kept.
        let end = keep.checked_sub(1).map_or(0, |i| self.index[i].last_offset + 1);
        // Nothing below the new end is left to hide.
        self.log_start = self.log_start.min(end);
        if let Some(last) = self.index.get(keep) {
            // The bytes after the last batch kept: dropped, unless an answer holds their
            // segment (the next append then starts a new one).
            self.segments.truncate(last.segment + 1);
            let at = last.start;
            if let Some(bytes) = self.segments.last_mut().and_then(Arc::get_mut) {
                bytes.truncate(at);
            }
        }
        self.index.truncate(keep);
        self.next_offset = end;
        for state in self.producers.values_mut() {
            state.batches.retain(|b| b.2 < end);
        }
        self.producers.retain(|_, s| !s.batches.is_empty() || s.coordinator_epoch >= 0);
        self.ongoing.retain(|_, first| *first < end);
        self.aborted.retain(|a| a.2 < end);
        while self.epochs.last().is_some_and(|&(_, s)| s >= end) {
            self.epochs.pop();
        }
        Ok((self.move_leader(node), end))
    }

    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// The log start offset: 0 until DeleteRecords moves it.
    pub fn log_start_offset(&self) -> i64 {
        self.log_start
    }

    /// DeleteRecords: moves the log start offset up to `offset` (never down; -1 is the high
    /// watermark). Returns the new log start offset, or `Err` for an offset outside the log
    /// (Kafka's OFFSET_OUT_OF_RANGE). The batches' bytes are kept (a batch may hold records
    /// on both sides), but no read below the log start offset is served.
    pub fn delete_records(&mut self, offset: i64) -> Result<i64, ()> {
        let offset = if offset == -1 { self.next_offset } else { offset };
        if offset < 0 || offset > self.next_offset {
            return Err(());
        }
        self.log_start = self.log_start.max(offset);
        // Kafka's truncateFromStart: the epoch holding the new log start offset starts there,
        // the ones before it are gone.
        if let Some(holding) = self.epochs.iter().rposition(|&(_, s)| s <= self.log_start) {
            self.epochs.drain(..holding);
            self.epochs[0].1 = self.log_start;
        }
        Ok(self.log_start)
    }

    /// The producers with state here (DescribeProducers), by producer id.
    pub fn producers(&self) -> Vec<ActiveProducer> {
        let mut all: Vec<ActiveProducer> = self
            .producers
            .iter()
            .map(|(&producer_id, s)| ActiveProducer {
                producer_id,
                epoch: s.epoch,
                last_sequence: s.batches.back().map_or(-1, |b| b.1),
                last_timestamp: s.last_timestamp,
                coordinator_epoch: s.coordinator_epoch,
                current_txn_start_offset: self.ongoing.get(&producer_id).copied().unwrap_or(-1),
            })
            .collect();
        all.sort_by_key(|p| p.producer_id);
        all
    }

    /// The last stable offset: the first offset of the oldest open transaction here, or
    /// the high watermark when none is open.
    pub fn last_stable_offset(&self) -> i64 {
        self.ongoing.values().copied().min().unwrap_or(self.next_offset)
    }

    /// The aborted transactions a read of `[from, to)` at read_committed must be told of:
    /// (producer id, first offset) of those whose data overlaps it.
    pub fn aborted_between(&self, from: i64, to: i64) -> Vec<(i64, i64)> {
        self.aborted.iter().filter(|a| a.2 >= from && a.1 < to).map(|a| (a.0, a.1)).collect()
    }

    /// Writes a transaction marker (a control batch of one record: the key is version 0
    /// and type 0 for abort or 1 for commit, the value version 0 and the coordinator
    /// epoch) for producer `producer_id` at `epoch`, closing its transaction here. Returns
    /// the marker's offset.
    pub fn write_marker(&mut self, producer_id: i64, epoch: i16, commit: bool, now_ms: i64) -> i64 {
        use crate::codec::records::{BatchBuilder, NewRecord};
        let key = [0, 0, 0, u8::from(commit)];
        let value = [0u8; 6];
        let records = [NewRecord { key: Some(&key), value: Some(&value), headers: &[], timestamp: None }];
        let mut builder = BatchBuilder::new(self.next_offset, now_ms, &records);
        builder.transactional = true;
        builder.control = true;
        builder.producer_id = producer_id;
        builder.producer_epoch = epoch;
        builder.base_sequence = -1;
        builder.partition_leader_epoch = self.leader.1;
        let len = builder.encoded_len().expect("a marker batch has a size");
        let offset = self.next_offset;
        let (segment, bytes) = self.writable(len);
        let start = bytes.len();
        bytes.resize(start + len, 0);
        builder.encode(&mut bytes[start..]).expect("sized above");
        let end = bytes.len();
        self.index.push(Entry { last_offset: offset, max_timestamp: now_ms, segment, start, end });
        self.next_offset = offset + 1;
        if let Some(first) = self.ongoing.remove(&producer_id)
            && !commit
        {
            self.aborted.push((producer_id, first, offset));
        }
        let state = self.producers.entry(producer_id).or_insert_with(ProducerState::new);
        if epoch > state.epoch {
            state.epoch = epoch;
            state.batches.clear();
        }
        state.last_timestamp = now_ms;
        state.coordinator_epoch = 0;
        offset
    }

    /// The bytes of its record batches.
    pub fn len_bytes(&self) -> usize {
        self.segments.iter().map(|s| s.len()).sum()
    }

    /// The segment the next append writes into, with room for `len` more bytes: the last
    /// one, unless an answer holds it or it is full.
    fn writable(&mut self, len: usize) -> (usize, &mut Vec<u8>) {
        let reusable = self
            .segments
            .last_mut()
            .and_then(Arc::get_mut)
            .is_some_and(|s| s.is_empty() || s.len().saturating_add(len) <= SEGMENT_BYTES);
        if !reusable {
            self.segments.push(Arc::new(Vec::new()));
        }
        let at = self.segments.len() - 1;
        let segment =
            Arc::get_mut(&mut self.segments[at]).expect("the last segment was just checked or made");
        (at, segment)
    }

    /// Appends one Produce partition's `records`: copied to the end of the log, validated
    /// and given their offsets there in place (`config` without its base offset, which is
    /// the log's end), then the idempotence checks of Kafka's `ProducerStateManager`. On
    /// any error, or for a duplicate, the log is left as it was. A compressed batch is
    /// inflated into `scratch` to be checked, which grows (up to `max_inflate` bytes) only
    /// when a batch needs more. Record-level errors go to `record_errors`.
    pub fn append(
        &mut self,
        records: &[u8],
        config: &ValidateConfig,
        scratch: &mut Vec<u8>,
        max_inflate: usize,
        record_errors: &mut Vec<RecordError>,
    ) -> Result<Appended, Rejected> {
        let next_offset = self.next_offset;
        let mut config = *config;
        config.base_offset = next_offset;
        config.partition_leader_epoch = self.leader.1;
        let (segment, bytes) = self.writable(records.len());
        let start = bytes.len();
        bytes.extend_from_slice(records);
        let validated = loop {
            record_errors.clear();
            let result = validate_and_assign_with(&mut bytes[start..], &config, scratch, &mut |e| {
                record_errors.push(e)
            });
            match result {
                Err(ValidateError::DecompressedTooLarge { .. }) if scratch.len() < max_inflate => {
                    let grown = (scratch.len() * 4).max(1 << 20).min(max_inflate);
                    scratch.resize(grown, 0);
                }
                other => break other,
            }
        };
        let v = match validated {
            Ok(v) => v,
            Err(e) => {
                bytes.truncate(start);
                return Err(reject(e.error_code(), std::format!("{e}")));
            }
        };
        bytes.truncate(start + v.valid_bytes);
        let end = bytes.len();
        // Undoes the copy: `segment` is the last one, and no answer holds it (it was written).
        let undo = |log: &mut Log| {
            if let Some(bytes) = log.segments.get_mut(segment).and_then(Arc::get_mut) {
                bytes.truncate(start);
            }
        };
        let p = v.producer;
        if p.has_producer_id()
            && let Some(state) = self.producers.get(&p.producer_id)
        {
            let refuse = |log: &mut Log, code, message: String| {
                undo(log);
                Err(reject(code, message))
            };
            if p.producer_epoch < state.epoch {
                let m =
                    std::format!("epoch {} is older than the producer's {}", p.producer_epoch, state.epoch);
                return refuse(self, ErrorCode::InvalidProducerEpoch, m);
            }
            if p.producer_epoch == state.epoch {
                if let Some(&(_, _, base, time)) =
                    state.batches.iter().find(|&&(f, l, _, _)| f == p.base_sequence && l == p.last_sequence)
                {
                    undo(self);
                    return Ok(Appended { base_offset: base, duplicate: true, duplicate_time: time });
                }
                let current = state.batches.back().map_or(-1, |b| b.1);
                let in_sequence = i64::from(p.base_sequence) == i64::from(current) + 1
                    || (p.base_sequence == 0 && current == i32::MAX);
                if !in_sequence {
                    let m = std::format!(
                        "out of order sequence number for producer {}: {} (incoming seq. number), {current} (current end sequence number)",
                        p.producer_id,
                        p.base_sequence
                    );
                    return refuse(self, ErrorCode::OutOfOrderSequenceNumber, m);
                }
            } else if p.base_sequence != 0 {
                let m = std::format!(
                    "invalid sequence number for new epoch {} of producer {}: {} (must be 0)",
                    p.producer_epoch,
                    p.producer_id,
                    p.base_sequence
                );
                return refuse(self, ErrorCode::OutOfOrderSequenceNumber, m);
            }
        }
        self.index.push(Entry {
            last_offset: v.last_offset,
            max_timestamp: v.max_timestamp,
            segment,
            start,
            end,
        });
        self.next_offset = v.last_offset + 1;
        if p.has_producer_id() {
            let state = self.producers.entry(p.producer_id).or_insert_with(ProducerState::new);
            state.last_timestamp = v.max_timestamp;
            if state.epoch != p.producer_epoch {
                state.epoch = p.producer_epoch;
                state.batches.clear();
            }
            if state.batches.len() == PRODUCER_BATCHES {
                state.batches.pop_front();
            }
            state.batches.push_back((p.base_sequence, p.last_sequence, v.first_offset, v.max_timestamp));
            if p.transactional {
                self.ongoing.entry(p.producer_id).or_insert(v.first_offset);
            }
        }
        Ok(Appended { base_offset: v.first_offset, duplicate: false, duplicate_time: -1 })
    }

    /// The batches from the one holding `offset`, in its segment: whole batches of that
    /// segment while they fit in `max_bytes`, and the first one even if it does not when
    /// `at_least_one`. `None` when there are none (past the end, or the first does not fit).
    #[cfg(test)]
    pub fn read(&self, offset: i64, max_bytes: usize, at_least_one: bool) -> Option<(Segment, Range<usize>)> {
        self.read_below(offset, i64::MAX, max_bytes, at_least_one)
    }

    /// [`Log::read`], of the batches that end before offset `below` only (a read at
    /// read_committed stops at the last stable offset).
    pub fn read_below(
        &self,
        offset: i64,
        below: i64,
        max_bytes: usize,
        at_least_one: bool,
    ) -> Option<(Segment, Range<usize>)> {
        let first = self.index.partition_point(|e| e.last_offset < offset);
        let start = self.index.get(first).filter(|e| e.last_offset < below)?;
        let mut end = start.start;
        for e in
            self.index[first..].iter().take_while(|e| e.segment == start.segment && e.last_offset < below)
        {
            if e.end - start.start > max_bytes && !(at_least_one && end == start.start) {
                break;
            }
            end = e.end;
        }
        (end > start.start).then(|| (self.segments[start.segment].clone(), start.start..end))
    }

    /// Every batch's bytes, in offset order.
    pub fn batches(&self) -> impl Iterator<Item = &[u8]> {
        self.index.iter().map(|e| self.batch(e))
    }

    /// One batch's bytes.
    fn batch(&self, e: &Entry) -> &[u8] {
        &self.segments[e.segment][e.start..e.end]
    }

    /// The first offset at or after timestamp `ts` (the batch holding it, then its
    /// record), with that record's timestamp.
    pub fn offset_for_timestamp(&self, ts: i64, scratch: &mut Vec<u8>, limit: usize) -> Option<(i64, i64)> {
        for e in &self.index {
            if e.max_timestamp < ts {
                continue;
            }
            let batch = RecordBatch::new(self.batch(e)).ok()?;
            let found = for_each_record(&batch, scratch, limit, |offset, t| (t >= ts).then_some((t, offset)));
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// The record with the largest timestamp (the first of them), with its timestamp.
    pub fn max_timestamp(&self, scratch: &mut Vec<u8>, limit: usize) -> Option<(i64, i64)> {
        let max = self.index.iter().map(|e| e.max_timestamp).max()?;
        let e = self.index.iter().find(|e| e.max_timestamp == max)?;
        let batch = RecordBatch::new(self.batch(e)).ok()?;
        for_each_record(&batch, scratch, limit, |offset, t| (t == max).then_some((t, offset)))
            .or(Some((max, e.last_offset)))
    }
}

fn for_each_record(
    batch: &RecordBatch<'_>,
    scratch: &mut Vec<u8>,
    limit: usize,
    mut f: impl FnMut(i64, i64) -> Option<(i64, i64)>,
) -> Option<(i64, i64)> {
    let records = batch.records_in_vec(scratch, limit).ok()?;
    for r in records.flatten() {
        if let Some(found) = f(r.offset(), r.timestamp()) {
            return Some(found);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::records::{BatchBuilder, NewRecord};

    fn batch(value: &[u8]) -> Vec<u8> {
        let records = [NewRecord { key: None, value: Some(value), headers: &[], timestamp: None }];
        let mut out = Vec::new();
        BatchBuilder::new(0, 1_700_000_000_000, &records).encode_to_vec(&mut out).unwrap();
        out
    }

    fn append(log: &mut Log, bytes: &[u8]) -> i64 {
        let config = ValidateConfig::new(0, 1_700_000_000_000);
        log.append(bytes, &config, &mut Vec::new(), 1 << 20, &mut Vec::new()).unwrap().base_offset
    }

    #[test]
    fn a_read_holds_the_segment_and_the_next_append_starts_another() {
        let mut log = Log::default();
        let (a, b, c) = (batch(b"a"), batch(b"bb"), batch(b"ccc"));
        assert_eq!(append(&mut log, &a), 0);
        let (held, range) = log.read(0, usize::MAX, true).unwrap();
        // Not a copy: the log's own bytes.
        assert!(Arc::ptr_eq(&held, &log.segments[0]));
        assert_eq!(range, 0..a.len());
        assert_eq!(append(&mut log, &b), 1);
        assert_eq!(log.segments.len(), 2, "the held segment is not written to");
        assert_eq!(held[range].len(), a.len());
        drop(held);
        assert_eq!(append(&mut log, &c), 2);
        assert_eq!(log.segments.len(), 2, "the last segment, no longer held, takes the append");
        // An answer stays within one segment; the next read goes on from where it ended.
        let (s0, r0) = log.read(0, usize::MAX, true).unwrap();
        assert_eq!(r0.len(), a.len());
        let (s1, r1) = log.read(1, usize::MAX, true).unwrap();
        assert_eq!(r1.len(), b.len() + c.len());
        assert!(Arc::ptr_eq(&s1, &log.segments[1]) && !Arc::ptr_eq(&s0, &s1));
        assert_eq!(log.len_bytes(), a.len() + b.len() + c.len());
        assert!(log.read(3, usize::MAX, true).is_none());
    }

    #[test]
    fn a_refused_append_leaves_no_bytes_behind() {
        let mut log = Log::default();
        let a = batch(b"a");
        append(&mut log, &a);
        let held = log.read(0, usize::MAX, true);
        let mut corrupt = batch(b"b");
        *corrupt.last_mut().unwrap() ^= 1;
        let config = ValidateConfig::new(0, 0);
        assert!(log.append(&corrupt, &config, &mut Vec::new(), 1 << 20, &mut Vec::new()).is_err());
        drop(held);
        assert_eq!(log.len_bytes(), a.len());
        assert_eq!(append(&mut log, &a), 1);
        assert_eq!(log.read(1, usize::MAX, true).unwrap().1.len(), a.len());
    }
}
