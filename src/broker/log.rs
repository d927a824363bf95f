//! A partition's log: the record batches' bytes, one after another, with an index, and the
//! idempotent producers' state.

use std::collections::{HashMap, VecDeque};
use std::string::String;
use std::vec::Vec;

use crate::error_code::ErrorCode;
use crate::records::{Compression, ErrorKind, RecordBatch, RecordBatches};

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

/// What the producer-state and append steps need of a checked batch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BatchInfo {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub last_offset_delta: i32,
    pub max_timestamp: i64,
    pub transactional: bool,
}

/// Checks the records of one Produce partition as Apache Kafka does for Produce v3 and up:
/// exactly one magic-2 batch, its CRC, its size, its records (decompressed into `scratch`,
/// at most `max_decompressed` bytes) against its header.
pub(crate) fn check_batch(
    records: &[u8],
    scratch: &mut Vec<u8>,
    max_message_bytes: usize,
    max_decompressed: usize,
) -> Result<BatchInfo, Rejected> {
    let mut batches = RecordBatches::new(records);
    let batch = match batches.next() {
        None if batches.partial() => {
            return Err(reject(ErrorCode::CorruptMessage, "the record batch is cut short"));
        }
        None => {
            return Err(reject(
                ErrorCode::InvalidRecord,
                "Produce requests with version 3 or later must contain exactly one record batch",
            ));
        }
        Some(Err(e)) => return Err(record_error(e.kind())),
        Some(Ok(b)) => b,
    };
    match batches.next() {
        None if batches.partial() => {
            return Err(reject(ErrorCode::CorruptMessage, "bytes after the record batch"));
        }
        None => {}
        Some(_) => {
            return Err(reject(
                ErrorCode::InvalidRecord,
                "Produce requests with version 3 or later must contain exactly one record batch",
            ));
        }
    }
    if batch.bytes().len() > max_message_bytes {
        return Err(reject(
            ErrorCode::MessageTooLarge,
            std::format!("the batch is {} bytes, over the limit of {max_message_bytes}", batch.bytes().len()),
        ));
    }
    if batch.is_control() {
        return Err(reject(ErrorCode::InvalidRecord, "clients may not send control batches"));
    }
    let count = batch.records_count();
    if count <= 0 {
        return Err(reject(ErrorCode::InvalidRecord, "a record batch must hold at least one record"));
    }
    if batch.last_offset_delta() != count - 1 {
        return Err(reject(
            ErrorCode::InvalidRecord,
            "the last offset delta does not match the record count",
        ));
    }
    let codec = batch.compression().map_err(|e| record_error(e.kind()))?;
    let records = if codec == Compression::None {
        batch.records()
    } else {
        batch.records_in_vec(scratch, max_decompressed)
    }
    .map_err(|e| record_error(e.kind()))?;
    for (i, r) in records.enumerate() {
        let r = r.map_err(|e| record_error(e.kind()))?;
        if i64::from(r.offset_delta()) != i as i64 {
            return Err(reject(
                ErrorCode::InvalidRecord,
                std::format!("record {i} has offset delta {}", r.offset_delta()),
            ));
        }
    }
    Ok(BatchInfo {
        producer_id: batch.producer_id(),
        producer_epoch: batch.producer_epoch(),
        base_sequence: batch.base_sequence(),
        last_offset_delta: batch.last_offset_delta(),
        max_timestamp: batch.max_timestamp(),
        transactional: batch.is_transactional(),
    })
}

fn record_error(kind: ErrorKind) -> Rejected {
    match kind {
        ErrorKind::DecompressedTooLarge { limit } => reject(
            ErrorCode::CorruptMessage,
            std::format!("the batch inflates past the broker's limit of {limit} bytes"),
        ),
        ErrorKind::UnsupportedMagic(m) => reject(
            ErrorCode::InvalidRecord,
            std::format!("Produce requests with version 3 or later must use magic 2, not {m}"),
        ),
        ErrorKind::UnknownCompression(_) | ErrorKind::CodecNotEnabled(_) => {
            reject(ErrorCode::UnsupportedCompressionType, std::format!("{kind}"))
        }
        other => reject(ErrorCode::CorruptMessage, std::format!("{other}")),
    }
}

/// Writes the base offset and the partition leader epoch into a batch's header, in place.
/// Neither is covered by the CRC (which starts at the attributes), so it stays valid.
pub(crate) fn assign_offsets(batch: &mut [u8], base_offset: i64, leader_epoch: i32) {
    if let Some(b) = batch.get_mut(0..8) {
        b.copy_from_slice(&base_offset.to_be_bytes());
    }
    if let Some(b) = batch.get_mut(12..16) {
        b.copy_from_slice(&leader_epoch.to_be_bytes());
    }
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

    /// Appends one checked batch (`bytes`, described by `info`): the idempotence checks
    /// of Kafka's `ProducerStateManager`, then its offsets assigned in place.
    pub fn append(
        &mut self,
        bytes: &[u8],
        info: &BatchInfo,
        leader_epoch: i32,
    ) -> Result<Appended, Rejected> {
        let idempotent = info.producer_id >= 0;
        if idempotent && let Some(state) = self.producers.get(&info.producer_id) {
            let last_seq = info.base_sequence.wrapping_add(info.last_offset_delta);
            if info.producer_epoch < state.epoch {
                return Err(reject(
                    ErrorCode::InvalidProducerEpoch,
                    std::format!(
                        "epoch {} is older than the producer's {}",
                        info.producer_epoch,
                        state.epoch
                    ),
                ));
            }
            if info.producer_epoch == state.epoch {
                if let Some(&(_, _, base)) =
                    state.batches.iter().find(|&&(f, l, _)| f == info.base_sequence && l == last_seq)
                {
                    return Ok(Appended { base_offset: base, duplicate: true });
                }
                let current = state.batches.back().map_or(-1, |b| b.1);
                let in_sequence = i64::from(info.base_sequence) == i64::from(current) + 1
                    || (info.base_sequence == 0 && current == i32::MAX);
                if !in_sequence {
                    return Err(reject(
                        ErrorCode::OutOfOrderSequenceNumber,
                        std::format!(
                            "out of order sequence number for producer {}: {} (incoming seq. number), {current} (current end sequence number)",
                            info.producer_id,
                            info.base_sequence
                        ),
                    ));
                }
            } else if info.base_sequence != 0 {
                return Err(reject(
                    ErrorCode::OutOfOrderSequenceNumber,
                    std::format!(
                        "invalid sequence number for new epoch {} of producer {}: {} (must be 0)",
                        info.producer_epoch,
                        info.producer_id,
                        info.base_sequence
                    ),
                ));
            }
        }
        let base_offset = self.next_offset;
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        let end = self.bytes.len();
        assign_offsets(&mut self.bytes[start..end], base_offset, leader_epoch);
        let last_offset = base_offset + i64::from(info.last_offset_delta);
        self.index.push(Entry { last_offset, max_timestamp: info.max_timestamp, start, end });
        self.next_offset = last_offset + 1;
        if idempotent {
            let state = self.producers.entry(info.producer_id).or_default();
            if state.epoch != info.producer_epoch {
                state.epoch = info.producer_epoch;
                state.batches.clear();
            }
            if state.batches.len() == PRODUCER_BATCHES {
                state.batches.pop_front();
            }
            let last_seq = info.base_sequence.wrapping_add(info.last_offset_delta);
            state.batches.push_back((info.base_sequence, last_seq, base_offset));
        }
        Ok(Appended { base_offset, duplicate: false })
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
