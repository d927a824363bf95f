//! A partition's log: the record batches' bytes, one after another, with an index, and the
//! idempotent producers' state. Appends go through `kwire::records::validate` (Kafka's
//! `LogValidator`): the batch is copied to the log's end once and its offsets assigned
//! there, in place.

use std::collections::{HashMap, VecDeque};
use std::string::String;
use std::vec::Vec;

use crate::error_code::ErrorCode;
use crate::records::RecordBatch;
use crate::records::validate::{RecordError, ValidateConfig, ValidateError, validate_and_assign_with};

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

/// One batch's place in the log.
#[derive(Clone, Copy, Debug)]
struct Entry {
    last_offset: i64,
    max_timestamp: i64,
    start: usize,
    end: usize,
}

/// The last batches of an idempotent producer (Kafka keeps five), for duplicates.
#[derive(Debug, Default)]
struct ProducerState {
    epoch: i16,
    /// (first sequence, last sequence, base offset), oldest first.
    batches: VecDeque<(i32, i32, i64)>,
}

const PRODUCER_BATCHES: usize = 5;

/// One partition's records.
#[derive(Debug, Default)]
pub(crate) struct Log {
    bytes: Vec<u8>,
    index: Vec<Entry>,
    next_offset: i64,
    producers: HashMap<i64, ProducerState>,
}

/// Where an append went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Appended {
    pub base_offset: i64,
    /// Whether the batch was a duplicate of one already in the log (not appended again).
    pub duplicate: bool,
}

impl Log {
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    pub fn len_bytes(&self) -> usize {
        self.bytes.len()
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
        let start = self.bytes.len();
        self.bytes.extend_from_slice(records);
        let mut config = *config;
        config.base_offset = self.next_offset;
        let validated = loop {
            record_errors.clear();
            let result = validate_and_assign_with(&mut self.bytes[start..], &config, scratch, &mut |e| {
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
                self.bytes.truncate(start);
                return Err(reject(e.error_code(), std::format!("{e}")));
            }
        };
        self.bytes.truncate(start + v.valid_bytes);
        let p = v.producer;
        if p.transactional {
            self.bytes.truncate(start);
            return Err(reject(
                ErrorCode::InvalidTxnState,
                "transactional batches need a transaction, which this broker does not serve",
            ));
        }
        if p.has_producer_id()
            && let Some(state) = self.producers.get(&p.producer_id)
        {
            let refuse = |log: &mut Log, code, message: String| {
                log.bytes.truncate(start);
                Err(reject(code, message))
            };
            if p.producer_epoch < state.epoch {
                let m =
                    std::format!("epoch {} is older than the producer's {}", p.producer_epoch, state.epoch);
                return refuse(self, ErrorCode::InvalidProducerEpoch, m);
            }
            if p.producer_epoch == state.epoch {
                if let Some(&(_, _, base)) =
                    state.batches.iter().find(|&&(f, l, _)| f == p.base_sequence && l == p.last_sequence)
                {
                    self.bytes.truncate(start);
                    return Ok(Appended { base_offset: base, duplicate: true });
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
        let end = self.bytes.len();
        self.index.push(Entry { last_offset: v.last_offset, max_timestamp: v.max_timestamp, start, end });
        self.next_offset = v.last_offset + 1;
        if p.has_producer_id() {
            let state = self.producers.entry(p.producer_id).or_default();
            if state.epoch != p.producer_epoch {
                state.epoch = p.producer_epoch;
                state.batches.clear();
            }
            if state.batches.len() == PRODUCER_BATCHES {
                state.batches.pop_front();
            }
            state.batches.push_back((p.base_sequence, p.last_sequence, v.first_offset));
        }
        Ok(Appended { base_offset: v.first_offset, duplicate: false })
    }

    /// The batches from the one holding `offset`: whole batches while they fit in
    /// `max_bytes`, and the first one even if it does not when `at_least_one`.
    pub fn read(&self, offset: i64, max_bytes: usize, at_least_one: bool) -> &[u8] {
        let first = self.index.partition_point(|e| e.last_offset < offset);
        let Some(start) = self.index.get(first) else { return &[] };
        let mut end = start.start;
        for e in &self.index[first..] {
            if e.end - start.start > max_bytes && !(at_least_one && end == start.start) {
                break;
            }
            end = e.end;
        }
        &self.bytes[start.start..end]
    }

    /// The first offset at or after timestamp `ts` (the batch holding it, then its
    /// record), with that record's timestamp.
    pub fn offset_for_timestamp(&self, ts: i64, scratch: &mut Vec<u8>, limit: usize) -> Option<(i64, i64)> {
        for e in &self.index {
            if e.max_timestamp < ts {
                continue;
            }
            let batch = RecordBatch::new(&self.bytes[e.start..e.end]).ok()?;
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
        let batch = RecordBatch::new(&self.bytes[e.start..e.end]).ok()?;
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
