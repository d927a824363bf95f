//! The walks over a batch's records and `LogValidator.validateRecord` on each: the fast walk
//! keeps aggregates and settles the checks at the end; the exact walk goes record by record.

use super::super::attributes::TimestampType;
use super::super::error::ErrorKind;
use super::super::varint::Cursor;
use super::config::ValidateConfig;
use super::error::{RecordError, RecordErrorKind, ValidateError};
use super::record::{Mode, read_record, well_formed_record};

/// Kafka's `NO_TIMESTAMP`.
pub(super) const NO_TIMESTAMP: i64 = -1;

pub(super) struct WalkContext<'c> {
    pub(super) count: u32,
    pub(super) base_timestamp: i64,
    /// The batch's max timestamp when the batch says log-append time (every record's
    /// timestamp then, as Kafka reads it).
    pub(super) log_append_time: Option<i64>,
    pub(super) config: &'c ValidateConfig,
    /// How Kafka reads these records.
    pub(super) mode: Mode,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Walk {
    pub(super) max_timestamp: i64,
    pub(super) inner_offsets_in_order: bool,
    pub(super) errors: u32,
    pub(super) timestamp_errors: bool,
}

/// After a clean first walk with record errors, walks again to hand them to the callback
/// (so that a malformed record later in the batch suppresses them, as in Kafka).
pub(super) fn report(
    bytes: &[u8],
    ctx: &WalkContext<'_>,
    walk: Walk,
    on_record_error: &mut dyn FnMut(RecordError),
) -> Result<Walk, ValidateError> {
    if walk.errors == 0 {
        return Ok(walk);
    }
    walk_records(bytes, ctx, Some(on_record_error))?;
    Err(ValidateError::Records { count: walk.errors, timestamp: walk.timestamp_errors })
}

/// Reads every record as Kafka's `DefaultRecord.readFrom` does and applies
/// `LogValidator.validateRecord` to each.
pub(super) fn walk_records(
    bytes: &[u8],
    ctx: &WalkContext<'_>,
    sink: Option<&mut dyn FnMut(RecordError)>,
) -> Result<Walk, ValidateError> {
    // Most batches are well formed and every record passes: walk them on the fast path,
    // which keeps only aggregates, and settle the record checks on those at the end. Any
    // other batch (a record the fast path refuses, or aggregates that do not prove every
    // record clean) is walked again below, record by record, Kafka's way.
    if sink.is_none()
        && let Some(walk) = fast_walk(bytes, ctx.count).and_then(|s| clean_walk(ctx, &s))
    {
        return Ok(walk);
    }
    exact_walk(bytes, ctx, sink)
}

/// [`walk_records`] record by record: each record's fields, and each record's check.
pub(super) fn exact_walk(
    bytes: &[u8],
    ctx: &WalkContext<'_>,
    mut sink: Option<&mut dyn FnMut(RecordError)>,
) -> Result<Walk, ValidateError> {
    let mut cur = Cursor::new(bytes);
    let mut walk = Walk {
        max_timestamp: NO_TIMESTAMP,
        inner_offsets_in_order: true,
        errors: 0,
        timestamp_errors: false,
    };
    let config = ctx.config;
    for index in 0..ctx.count {
        let rec_err = |kind| ValidateError::Record { index, kind };
        if cur.remaining() == 0 {
            return Err(rec_err(ErrorKind::TooFewRecords { declared: ctx.count, found: index }));
        }
        // Most records are well formed: read them on a fast path that only says yes or no,
        // and read any other record again, Kafka's way, for the error it makes.
        let fields = match well_formed_record(cur.buf, cur.pos) {
            Some((end, fields)) => {
                cur.pos = end;
                fields
            }
            None => read_record(&mut cur, ctx.mode, index)?,
        };

        let timestamp = match ctx.log_append_time {
            Some(t) => t,
            None => ctx.base_timestamp.wrapping_add(fields.timestamp_delta),
        };
        // Offsets as Kafka reads them before assignment: base offset 0 plus the delta.
        let offset = i64::from(fields.offset_delta);
        let error = if config.compacted && !fields.has_key {
            Some(RecordErrorKind::MissingKey)
        } else if config.timestamp_type == TimestampType::CreateTime && timestamp != NO_TIMESTAMP {
            let diff = config.now_ms.wrapping_sub(timestamp);
            if diff > config.timestamp_before_max_ms || diff.wrapping_neg() > config.timestamp_after_max_ms {
                Some(RecordErrorKind::TimestampOutOfRange {
                    timestamp,
                    offset,
                    min: config.now_ms.wrapping_sub(config.timestamp_before_max_ms),
                    max: config.now_ms.wrapping_add(config.timestamp_after_max_ms),
                })
            } else {
                None
            }
        } else if ctx.log_append_time.is_some() {
            Some(RecordErrorKind::LogAppendTimeFromProducer)
        } else {
            None
        };
        match error {
            Some(kind) => {
                walk.errors += 1;
                walk.timestamp_errors |= !matches!(kind, RecordErrorKind::MissingKey);
                if let Some(sink) = sink.as_mut() {
                    sink(RecordError { batch_index: index, kind });
                }
            }
            None => {
                if timestamp > walk.max_timestamp {
                    walk.max_timestamp = timestamp;
                }
                if offset != i64::from(index) {
                    walk.inner_offsets_in_order = false;
                }
            }
        }
    }
    if cur.remaining() != 0 {
        return Err(ValidateError::Record {
            index: ctx.count,
            kind: ErrorKind::TrailingBytes(cur.remaining() as u32),
        });
    }
    Ok(walk)
}

/// What [`fast_walk`] keeps of a batch's records: enough to decide, at the end, that every
/// record passes `LogValidator.validateRecord`.
pub(super) struct Summary {
    /// The smallest and largest timestamp delta.
    pub(super) min_delta: i64,
    pub(super) max_delta: i64,
    /// Whether every record has a key.
    pub(super) keys: bool,
    /// Whether every record's offset delta is its index.
    pub(super) in_order: bool,
}

/// Walks `count` records on [`well_formed_record`]'s fast path, keeping [`Summary`]'s
/// aggregates; `None` unless every record is accepted there and they fill `bytes` exactly
/// (then [`walk_records`]'s exact loop reads the batch for its error).
#[inline(never)]
pub(super) fn fast_walk(bytes: &[u8], count: u32) -> Option<Summary> {
    let mut s = Summary { min_delta: i64::MAX, max_delta: i64::MIN, keys: true, in_order: true };
    let mut p = 0;
    for index in 0..count {
        let (end, f) = well_formed_record(bytes, p)?;
        p = end;
        s.min_delta = s.min_delta.min(f.timestamp_delta);
        s.max_delta = s.max_delta.max(f.timestamp_delta);
        s.keys &= f.has_key;
        s.in_order &= f.offset_delta as u32 == index;
    }
    (p == bytes.len()).then_some(s)
}

/// The [`Walk`] of a batch whose records [`fast_walk`] summed up in `s`, when the summary
/// proves that no record has an error; `None` when it does not (the exact loop then
/// decides, record by record).
pub(super) fn clean_walk(ctx: &WalkContext<'_>, s: &Summary) -> Option<Walk> {
    let config = ctx.config;
    if ctx.log_append_time.is_some() || (config.compacted && !s.keys) || s.min_delta > s.max_delta {
        return None;
    }
    // Without overflow in the sums, every record's timestamp lies in [lo, hi].
    let lo = ctx.base_timestamp.checked_add(s.min_delta)?;
    let hi = ctx.base_timestamp.checked_add(s.max_delta)?;
    if config.timestamp_type == TimestampType::CreateTime {
        // The record check is `d <= before && -d <= after` on d = now - timestamp (wrapping).
        // When d neither wraps at the ends nor is i64::MIN, it is monotone over [lo, hi]
        // and the check holds for all if it holds for both ends; else decide per record.
        let d_min = i64::try_from(i128::from(config.now_ms) - i128::from(hi)).ok()?;
        let d_max = i64::try_from(i128::from(config.now_ms) - i128::from(lo)).ok()?;
        if d_min == i64::MIN
            || d_max > config.timestamp_before_max_ms
            || -d_min > config.timestamp_after_max_ms
        {
            return None;
        }
    }
    Some(Walk {
        max_timestamp: hi.max(NO_TIMESTAMP),
        inner_offsets_in_order: s.in_order,
        errors: 0,
        timestamp_errors: false,
    })
}
