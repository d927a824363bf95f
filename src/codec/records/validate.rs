//! Validate-and-assign: what a broker does to a Produce partition's `records` before it
//! appends them to its log, in place.
//!
//! [`validate_and_assign`] checks the bytes as Apache Kafka 4.4 does on a Produce request
//! (`ProduceRequest.validateRecords`, the checks of `UnifiedLog.analyzeAndValidateRecords`,
//! then `LogValidator.validateMessagesAndAssignOffsets`) and, when they pass, rewrites the
//! batch header in place:
//!
//! - the base offset becomes [`ValidateConfig::base_offset`] (the log end offset) and the
//!   partition leader epoch [`ValidateConfig::partition_leader_epoch`]; the CRC does not cover
//!   them, so it is left alone;
//! - under log-append time, the max timestamp becomes [`ValidateConfig::now_ms`] and the
//!   timestamp-type attribute is set; under create time, a max timestamp that is not the
//!   records' largest is corrected. Only then are the attributes normalised (as Kafka writes
//!   them) and the CRC recomputed.
//!
//! Records are never moved, recompressed or copied. A compressed batch is decompressed into
//! the caller's `scratch` buffer only to check its records; `scratch.len()` is the inflate
//! limit. Where Kafka would rebuild the batch (the topic's codec differs from the batch's, or
//! a compressed batch's inner offsets are not 0, 1, 2, ...), the result is
//! [`ValidateError::ConversionRequired`]: the bytes are valid but cannot be kept as they are.
//!
//! Nothing here allocates for an uncompressed batch. Errors carry the Kafka error code the
//! partition's Produce response gets ([`ValidateError::error_code`]); record-level errors
//! (Kafka's `record_errors`: a timestamp out of range, a missing key on a compacted topic) go
//! to a caller callback, one call per record, after the whole batch was read.
//!
//! Stateful checks stay with the broker: sequence numbers against the producer's last batch,
//! producer epochs, transaction state. [`Validated::producer`] gives what they need.

use core::fmt;

use super::batch::{Attributes, CRC_START, Compression, MAGIC_OFFSET, TimestampType};
use super::error::ErrorKind;
use super::varint::Cursor;
use super::{BATCH_HEADER_LEN, LOG_OVERHEAD, compression, crc};
use crate::ErrorCode;

/// Kafka's `NO_TIMESTAMP`.
const NO_TIMESTAMP: i64 = -1;
/// Bytes of a batch up to and including its magic byte (Kafka's `HEADER_SIZE_UP_TO_MAGIC`).
const HEADER_UP_TO_MAGIC: usize = MAGIC_OFFSET + 1;
/// Kafka's smallest entry (`LegacyRecord.RECORD_OVERHEAD_V0`): a shorter length field is
/// corrupt before anything else is read.
const MIN_ENTRY_LEN: i32 = 14;

/// A topic's `compression.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TopicCompression {
    /// `producer`: batches are kept in the codec the producer chose.
    #[default]
    Producer,
    /// A fixed codec (`uncompressed` is [`Compression::None`]): a batch in another codec would
    /// be rebuilt by Kafka ([`ValidateError::ConversionRequired`] here).
    Codec(Compression),
}

/// What the broker knows when a Produce partition arrives: where the records go, the clock,
/// and the topic's configuration. [`ValidateConfig::new`] starts from Kafka 4.4's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ValidateConfig {
    /// The offset the first record gets (the partition's log end offset).
    pub base_offset: i64,
    /// The partition's leader epoch, written into the batch.
    pub partition_leader_epoch: i32,
    /// The broker's clock, in ms since the epoch: the log-append time, and the reference of
    /// the create-time window.
    pub now_ms: i64,
    /// `message.timestamp.type`.
    pub timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms` (default `i64::MAX`): how far in the past a
    /// create-time timestamp may be.
    pub timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms` (default 3,600,000): how far in the future.
    pub timestamp_after_max_ms: i64,
    /// `compression.type`.
    pub compression: TopicCompression,
    /// `cleanup.policy` includes `compact`: every record needs a key.
    pub compacted: bool,
    /// `max.message.bytes` (default 1,048,588): the largest batch accepted.
    pub max_message_bytes: i32,
    /// The Produce request's version (3 to 13): zstd batches need 7 or later.
    pub produce_version: i16,
}

impl ValidateConfig {
    /// A configuration with Kafka 4.4's topic defaults (create time, no lower timestamp
    /// bound, one hour ahead at most, `producer` compression, not compacted, 1,048,588-byte
    /// batches), leader epoch 0 and the latest Produce version.
    pub const fn new(base_offset: i64, now_ms: i64) -> Self {
        ValidateConfig {
            base_offset,
            partition_leader_epoch: 0,
            now_ms,
            timestamp_type: TimestampType::CreateTime,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: 3_600_000,
            compression: TopicCompression::Producer,
            compacted: false,
            max_message_bytes: 1_048_588,
            produce_version: 13,
        }
    }
}

/// The producer fields of the validated batch, for the broker's idempotence and
/// transaction checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProducerInfo {
    /// Producer id, -1 when not idempotent.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// Sequence of the first record, -1 when not idempotent.
    pub base_sequence: i32,
    /// Sequence of the last record (wrapping past `i32::MAX` to 0 as Kafka's sequences do),
    /// -1 when not idempotent.
    pub last_sequence: i32,
    /// The transactional flag.
    pub transactional: bool,
}

impl ProducerInfo {
    /// Whether the batch carries a producer id (idempotent or transactional).
    pub const fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }
}

/// The outcome of a successful [`validate_and_assign`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Validated {
    /// Offset of the first record (the configured base offset).
    pub first_offset: i64,
    /// Offset of the last record.
    pub last_offset: i64,
    /// Number of records.
    pub record_count: u32,
    /// The largest timestamp (the log-append time under log-append time; -1 when no
    /// record has one).
    pub max_timestamp: i64,
    /// The log-append time for the Produce response: `now_ms` under log-append time, else -1.
    pub log_append_time_ms: i64,
    /// Bytes of the field that were validated and belong in the log: the batch. Bytes after
    /// it (a cut-short batch) are dropped by Kafka, and should be here.
    pub valid_bytes: usize,
    /// The batch's codec.
    pub compression: Compression,
    /// Whether the attributes or max timestamp changed, and with them the CRC.
    pub crc_rewritten: bool,
    /// The producer fields.
    pub producer: ProducerInfo,
}

/// Why a record was rejected: one entry of a Produce response's `record_errors`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecordErrorKind {
    /// A create-time timestamp outside `[now - before, now + after]`.
    TimestampOutOfRange {
        /// The record's timestamp.
        timestamp: i64,
        /// Its offset in the request (base offset 0 plus its delta).
        offset: i64,
        /// The earliest timestamp allowed.
        min: i64,
        /// The latest timestamp allowed.
        max: i64,
    },
    /// The producer set the log-append-time attribute.
    LogAppendTimeFromProducer,
    /// A record without a key on a compacted topic.
    MissingKey,
}

impl RecordErrorKind {
    /// The partition error this record error implies (INVALID_TIMESTAMP or INVALID_RECORD).
    pub const fn error_code(&self) -> ErrorCode {
        match self {
            RecordErrorKind::TimestampOutOfRange { .. } | RecordErrorKind::LogAppendTimeFromProducer => {
                ErrorCode::InvalidTimestamp
            }
            RecordErrorKind::MissingKey => ErrorCode::InvalidRecord,
        }
    }
}

/// A record-level error: the record's index in its batch and what was wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecordError {
    /// Index of the record in the batch (Kafka's `batch_index`).
    pub batch_index: u32,
    /// What was wrong.
    pub kind: RecordErrorKind,
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            RecordErrorKind::TimestampOutOfRange { timestamp, offset, min, max } => write!(
                f,
                "Timestamp {timestamp} of message with offset {offset} is out of range. \
                 The timestamp should be within [{min}, {max}]"
            ),
            RecordErrorKind::LogAppendTimeFromProducer => {
                f.write_str("Producer should not set timestamp type to LogAppendTime.")
            }
            RecordErrorKind::MissingKey => f.write_str("Compacted topic cannot accept message without key"),
        }
    }
}

/// Why Kafka would rebuild a batch instead of keeping its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Conversion {
    /// The topic's codec is not the batch's.
    Codec {
        /// The batch's codec.
        from: Compression,
        /// The topic's.
        to: Compression,
    },
    /// A compressed batch's records do not have offset deltas 0, 1, 2, ... (old clients).
    InnerOffsets,
}

/// Why a Produce partition's records were rejected. [`ValidateError::error_code`] is the
/// partition's error in the Produce response, as Kafka 4.4 answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ValidateError {
    /// No complete batch (an empty or cut-short field). INVALID_RECORD.
    NoBatch,
    /// A batch length field below 14. CORRUPT_MESSAGE.
    LengthTooSmall(i32),
    /// A magic byte outside 0-2: Kafka's batch iterator calls it corrupt. CORRUPT_MESSAGE.
    InvalidMagic(i8),
    /// Magic 0 or 1: Produce v3 and later take magic 2 only. INVALID_RECORD.
    UnsupportedMagic(i8),
    /// A zstd batch in a Produce request older than v7. UNSUPPORTED_COMPRESSION_TYPE.
    ZstdBeforeV7(i16),
    /// More than one batch: Produce v3 and later carry exactly one a partition.
    /// INVALID_RECORD.
    MoreThanOneBatch,
    /// A base offset other than 0 from a client. INVALID_RECORD.
    NonZeroBaseOffset(i64),
    /// A batch larger than `max.message.bytes`. MESSAGE_TOO_LARGE.
    MessageTooLarge {
        /// The batch's size.
        size: usize,
        /// The limit.
        max: i32,
    },
    /// A batch shorter than the 61-byte header. CORRUPT_MESSAGE.
    HeaderTooShort(usize),
    /// The stored CRC is not the CRC of the bytes. CORRUPT_MESSAGE.
    CrcMismatch {
        /// The CRC in the header.
        stored: u32,
        /// The CRC of the bytes.
        computed: u32,
    },
    /// Codec id 5, 6 or 7: Kafka fails with an `IllegalArgumentException`, which the
    /// partition gets as UNKNOWN_SERVER_ERROR.
    UnknownCompression(u8),
    /// This build of kwire lacks the codec's feature. UNSUPPORTED_COMPRESSION_TYPE.
    CodecNotEnabled(Compression),
    /// `last_offset_delta + 1` is not positive. INVALID_RECORD.
    InvalidOffsetRange(i32),
    /// A record count that is not positive. INVALID_RECORD.
    InvalidRecordCount(i32),
    /// The record count is not `last_offset_delta + 1`. INVALID_RECORD.
    CountMismatch {
        /// The declared record count.
        count: i32,
        /// The last offset delta.
        last_offset_delta: i32,
    },
    /// Clients may not write control batches. INVALID_RECORD.
    ControlBatch,
    /// A producer id without a sequence. INVALID_RECORD.
    MissingSequence {
        /// The producer id.
        producer_id: i64,
        /// The base sequence.
        base_sequence: i32,
    },
    /// A record's bytes are malformed, too few or too many for the count (`kind` says
    /// how). INVALID_RECORD.
    Record {
        /// Index of the record in the batch.
        index: u32,
        /// What was wrong.
        kind: ErrorKind,
    },
    /// An uncompressed record's length prefix is a varint longer than 5 bytes: Kafka's
    /// reader throws an `IllegalArgumentException` there, so UNKNOWN_SERVER_ERROR.
    RecordLengthVarint(u32),
    /// The compressed payload is invalid for its codec: Kafka's codec streams fail with a
    /// `KafkaException`, so UNKNOWN_SERVER_ERROR.
    Decompress(&'static str),
    /// The decompressed records would exceed `scratch` (the inflate limit). INVALID_RECORD,
    /// as Kafka's own record-size limit.
    DecompressedTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// One or more records were rejected (each went to the callback). INVALID_TIMESTAMP if
    /// any timestamp was, else INVALID_RECORD.
    Records {
        /// Records rejected.
        count: u32,
        /// Whether any was rejected for its timestamp.
        timestamp: bool,
    },
    /// Valid, but Kafka would rebuild the batch rather than keep its bytes. A broker that
    /// cannot rebuild answers INVALID_RECORD (the code given here).
    ConversionRequired(Conversion),
}

impl ValidateError {
    /// The partition's error code in the Produce response.
    pub const fn error_code(&self) -> ErrorCode {
        use ValidateError as E;
        match self {
            E::LengthTooSmall(_) | E::InvalidMagic(_) | E::HeaderTooShort(_) | E::CrcMismatch { .. } => {
                ErrorCode::CorruptMessage
            }
            E::ZstdBeforeV7(_) | E::CodecNotEnabled(_) => ErrorCode::UnsupportedCompressionType,
            E::MessageTooLarge { .. } => ErrorCode::MessageTooLarge,
            E::UnknownCompression(_) | E::RecordLengthVarint(_) | E::Decompress(_) => {
                ErrorCode::UnknownServerError
            }
            E::Records { timestamp: true, .. } => ErrorCode::InvalidTimestamp,
            E::NoBatch
            | E::UnsupportedMagic(_)
            | E::MoreThanOneBatch
            | E::NonZeroBaseOffset(_)
            | E::InvalidOffsetRange(_)
            | E::InvalidRecordCount(_)
            | E::CountMismatch { .. }
            | E::ControlBatch
            | E::MissingSequence { .. }
            | E::Record { .. }
            | E::DecompressedTooLarge { .. }
            | E::Records { timestamp: false, .. }
            | E::ConversionRequired(_) => ErrorCode::InvalidRecord,
        }
    }
}

impl fmt::Display for ValidateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ValidateError as E;
        match *self {
            E::NoBatch => f.write_str("the records hold no complete record batch"),
            E::LengthTooSmall(n) => write!(f, "record batch length {n} is below the minimum of 14"),
            E::InvalidMagic(m) => write!(f, "invalid magic {m}"),
            E::UnsupportedMagic(m) => write!(f, "record batch magic {m}: produce requests take magic 2 only"),
            E::ZstdBeforeV7(v) => write!(f, "produce requests with version {v} may not use zstd"),
            E::MoreThanOneBatch => f.write_str("produce requests take exactly one record batch a partition"),
            E::NonZeroBaseOffset(o) => write!(f, "the batch's base offset should be 0, but it is {o}"),
            E::MessageTooLarge { size, max } => {
                write!(f, "the record batch is {size} bytes, more than the maximum of {max}")
            }
            E::HeaderTooShort(n) => write!(f, "the record batch is {n} bytes, shorter than its header"),
            E::CrcMismatch { stored, computed } => {
                write!(f, "record batch is corrupt (stored crc = {stored}, computed {computed})")
            }
            E::UnknownCompression(id) => write!(f, "unknown compression type id {id}"),
            E::CodecNotEnabled(c) => write!(f, "codec {c:?} is not enabled in this build"),
            E::InvalidOffsetRange(d) => {
                write!(f, "the batch has an invalid offset range (last offset delta {d})")
            }
            E::InvalidRecordCount(n) => write!(f, "invalid record count {n}"),
            E::CountMismatch { count, last_offset_delta } => {
                write!(
                    f,
                    "last offset delta {last_offset_delta} is inconsistent with the record count {count}"
                )
            }
            E::ControlBatch => f.write_str("clients may not write control records"),
            E::MissingSequence { producer_id, base_sequence } => {
                write!(f, "invalid sequence number {base_sequence} in a batch with producer id {producer_id}")
            }
            E::Record { index, kind } => write!(f, "record {index}: {kind}"),
            E::RecordLengthVarint(index) => write!(f, "record {index}: its length varint is too long"),
            E::Decompress(why) => write!(f, "invalid compressed records: {why}"),
            E::DecompressedTooLarge { limit } => {
                write!(f, "the records decompress to more than the limit of {limit} bytes")
            }
            E::Records { count, timestamp: true } => {
                write!(f, "{count} record(s) rejected; one or more for an invalid timestamp")
            }
            E::Records { count, timestamp: false } => write!(f, "{count} record(s) rejected"),
            E::ConversionRequired(Conversion::Codec { from, to }) => {
                write!(f, "the batch would be recompressed from {from:?} to {to:?}")
            }
            E::ConversionRequired(Conversion::InnerOffsets) => {
                f.write_str("the compressed batch's offset deltas are not 0, 1, 2, ...")
            }
        }
    }
}

impl core::error::Error for ValidateError {}

/// [`validate_and_assign_with`] without a record-error callback: a rejected record makes
/// the whole partition fail with [`ValidateError::Records`].
pub fn validate_and_assign(
    records: &mut [u8],
    config: &ValidateConfig,
    scratch: &mut [u8],
) -> Result<Validated, ValidateError> {
    validate_and_assign_with(records, config, scratch, &mut |_| {})
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

/// The framing of the entry at the start of `rest`, as Kafka's batch iterator
/// (`ByteBufferLogInputStream`) reads it: `Ok(None)` when it is incomplete, else its total
/// length and magic. A length below 14, or a magic outside 0-2, is corrupt even in an
/// incomplete entry once the bytes to read it are there.
fn frame(rest: &[u8]) -> Result<Option<(usize, i8)>, ValidateError> {
    if rest.len() < LOG_OVERHEAD {
        return Ok(None);
    }
    let len = be_i32(rest, 8);
    if len < MIN_ENTRY_LEN {
        return Err(ValidateError::LengthTooSmall(len));
    }
    if rest.len() < HEADER_UP_TO_MAGIC {
        return Ok(None);
    }
    let magic = rest[MAGIC_OFFSET] as i8;
    if !(0..=2).contains(&magic) {
        return Err(ValidateError::InvalidMagic(magic));
    }
    let total = LOG_OVERHEAD + len as usize;
    if rest.len() < total {
        return Ok(None);
    }
    Ok(Some((total, magic)))
}

/// Validates one Produce partition's `records` (its whole field) and assigns offsets in
/// place; see the [module documentation](self).
///
/// `scratch` receives a compressed batch's records while they are checked; its length is
/// the inflate limit (an uncompressed batch does not touch it). `on_record_error` is called
/// once for each rejected record, in order, and only when the batch's bytes are otherwise
/// sound (as Kafka, a malformed record fails the partition without record errors). On any
/// error `records` is unchanged.
pub fn validate_and_assign_with(
    records: &mut [u8],
    config: &ValidateConfig,
    scratch: &mut [u8],
    on_record_error: &mut dyn FnMut(RecordError),
) -> Result<Validated, ValidateError> {
    // ProduceRequest.validateRecords: one batch of magic 2 (and zstd from v7).
    let Some((total, magic)) = frame(records)? else { return Err(ValidateError::NoBatch) };
    if magic != 2 {
        return Err(ValidateError::UnsupportedMagic(magic));
    }
    let codec_id = (be_i16(records, CRC_START) & Attributes::CODEC_MASK) as u8;
    if config.produce_version < 7 {
        match Compression::from_id(codec_id) {
            Ok(Compression::Zstd) => return Err(ValidateError::ZstdBeforeV7(config.produce_version)),
            Ok(_) => {}
            Err(_) => return Err(ValidateError::UnknownCompression(codec_id)),
        }
    }
    if frame(&records[total..])?.is_some() {
        return Err(ValidateError::MoreThanOneBatch);
    }
    let batch = &mut records[..total];

    // UnifiedLog.analyzeAndValidateRecords.
    let base_offset = be_i64(batch, 0);
    if base_offset != 0 {
        return Err(ValidateError::NonZeroBaseOffset(base_offset));
    }
    if total > config.max_message_bytes.max(0) as usize {
        return Err(ValidateError::MessageTooLarge { size: total, max: config.max_message_bytes });
    }
    if total < BATCH_HEADER_LEN {
        return Err(ValidateError::HeaderTooShort(total));
    }
    let stored = be_i32(batch, 17) as u32;
    let computed = crc::crc32c(&batch[CRC_START..]);
    if stored != computed {
        return Err(ValidateError::CrcMismatch { stored, computed });
    }
    let source = Compression::from_id(codec_id).map_err(|_| ValidateError::UnknownCompression(codec_id))?;

    // LogValidator.validateBatch.
    let attributes = Attributes(be_i16(batch, CRC_START));
    let last_offset_delta = be_i32(batch, 23);
    let base_timestamp = be_i64(batch, 27);
    let header_max_timestamp = be_i64(batch, 35);
    let producer_id = be_i64(batch, 43);
    let producer_epoch = be_i16(batch, 51);
    let base_sequence = be_i32(batch, 53);
    let count = be_i32(batch, 57);
    let count_from_offsets = i64::from(last_offset_delta) + 1;
    if count_from_offsets <= 0 {
        return Err(ValidateError::InvalidOffsetRange(last_offset_delta));
    }
    if count <= 0 {
        return Err(ValidateError::InvalidRecordCount(count));
    }
    if count_from_offsets != i64::from(count) {
        return Err(ValidateError::CountMismatch { count, last_offset_delta });
    }
    if attributes.is_control() {
        return Err(ValidateError::ControlBatch);
    }
    if producer_id >= 0 && base_sequence < 0 {
        return Err(ValidateError::MissingSequence { producer_id, base_sequence });
    }

    let target = match config.compression {
        TopicCompression::Producer => source,
        TopicCompression::Codec(c) => c,
    };
    let batch_lat = attributes.timestamp_type() == TimestampType::LogAppendTime;
    let ctx = WalkContext {
        count: count as u32,
        base_timestamp,
        log_append_time: batch_lat.then_some(header_max_timestamp),
        config,
        mode: if source == Compression::None {
            Mode::InPlace
        } else if source == target {
            Mode::Partial
        } else {
            Mode::Body
        },
    };

    let walk = if source == Compression::None {
        let payload = &batch[BATCH_HEADER_LEN..];
        walk_records(payload, &ctx, None).and_then(|w| report(payload, &ctx, w, on_record_error))?
    } else {
        #[allow(unreachable_patterns)]
        let n = match compression::decompress_into(source, &batch[BATCH_HEADER_LEN..], scratch) {
            Ok(n) => n,
            Err(e) => {
                return Err(match e.kind() {
                    ErrorKind::DecompressedTooLarge { .. } => {
                        ValidateError::DecompressedTooLarge { limit: scratch.len() }
                    }
                    ErrorKind::CodecNotEnabled(c) => ValidateError::CodecNotEnabled(c),
                    ErrorKind::Decompress(why) => ValidateError::Decompress(why),
                    _ => ValidateError::Decompress("invalid compressed payload"),
                });
            }
        };
        let inner = &scratch[..n];
        walk_records(inner, &ctx, None).and_then(|w| report(inner, &ctx, w, on_record_error))?
    };

    if source != target {
        return Err(ValidateError::ConversionRequired(Conversion::Codec { from: source, to: target }));
    }
    if source != Compression::None && !walk.inner_offsets_in_order {
        return Err(ValidateError::ConversionRequired(Conversion::InnerOffsets));
    }

    // Assign: base offset and leader epoch (not covered by the CRC).
    let first_offset = config.base_offset;
    let last_offset = first_offset.wrapping_add(i64::from(count) - 1);
    batch[0..8].copy_from_slice(&first_offset.to_be_bytes());
    batch[12..16].copy_from_slice(&config.partition_leader_epoch.to_be_bytes());

    // setMaxTimestamp: unchanged when both the type and the value already match.
    let (new_type, max_timestamp) = match config.timestamp_type {
        TimestampType::LogAppendTime => (TimestampType::LogAppendTime, config.now_ms),
        TimestampType::CreateTime => (TimestampType::CreateTime, walk.max_timestamp),
    };
    let crc_rewritten = attributes.timestamp_type() != new_type || header_max_timestamp != max_timestamp;
    if crc_rewritten {
        let mut attrs =
            Attributes::new(source, new_type, attributes.is_transactional(), attributes.is_control());
        if attributes.has_delete_horizon() {
            attrs.0 |= Attributes::DELETE_HORIZON;
        }
        batch[CRC_START..CRC_START + 2].copy_from_slice(&attrs.0.to_be_bytes());
        batch[35..43].copy_from_slice(&max_timestamp.to_be_bytes());
        let crc = crc::crc32c(&batch[CRC_START..]);
        batch[17..21].copy_from_slice(&crc.to_be_bytes());
    }

    let last_sequence = if base_sequence < 0 {
        -1
    } else {
        // Kafka's DefaultRecordBatch.incrementSequence: wraps past i32::MAX to 0.
        let s = i64::from(base_sequence) + i64::from(count) - 1;
        if s > i64::from(i32::MAX) { (s - i64::from(i32::MAX) - 1) as i32 } else { s as i32 }
    };
    Ok(Validated {
        first_offset,
        last_offset,
        record_count: count as u32,
        max_timestamp,
        log_append_time_ms: match config.timestamp_type {
            TimestampType::LogAppendTime => config.now_ms,
            TimestampType::CreateTime => NO_TIMESTAMP,
        },
        valid_bytes: total,
        compression: source,
        crc_rewritten,
        producer: ProducerInfo {
            producer_id,
            producer_epoch,
            base_sequence,
            last_sequence,
            transactional: attributes.is_transactional(),
        },
    })
}

struct WalkContext<'c> {
    count: u32,
    base_timestamp: i64,
    /// The batch's max timestamp when the batch says log-append time (every record's
    /// timestamp then, as Kafka reads it).
    log_append_time: Option<i64>,
    config: &'c ValidateConfig,
    /// How Kafka reads these records.
    mode: Mode,
}

/// The three record readers Kafka's validator uses, which differ on malformed records.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// An uncompressed batch: `DefaultRecord.readFrom(ByteBuffer)` over the records section.
    InPlace,
    /// A compressed batch Kafka will rebuild: `readFrom(InputStream)`, each body read whole.
    Body,
    /// A compressed batch Kafka keeps: `readPartiallyFrom(InputStream)`, keys and values
    /// skipped.
    Partial,
}

fn check_length(size: i32, read: usize) -> Result<(), ErrorKind> {
    if read as i64 == i64::from(size) {
        Ok(())
    } else {
        Err(ErrorKind::RecordLengthMismatch { declared: size as u32, actual: read as u32 })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Walk {
    max_timestamp: i64,
    inner_offsets_in_order: bool,
    errors: u32,
    timestamp_errors: bool,
}

/// After a clean first walk with record errors, walks again to hand them to the callback
/// (so that a malformed record later in the batch suppresses them, as in Kafka).
fn report(
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
fn walk_records(
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
fn exact_walk(
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
struct Summary {
    /// The smallest and largest timestamp delta.
    min_delta: i64,
    max_delta: i64,
    /// Whether every record has a key.
    keys: bool,
    /// Whether every record's offset delta is its index.
    in_order: bool,
}

/// Walks `count` records on [`well_formed_record`]'s fast path, keeping [`Summary`]'s
/// aggregates; `None` unless every record is accepted there and they fill `bytes` exactly
/// (then [`walk_records`]'s exact loop reads the batch for its error).
#[inline(never)]
fn fast_walk(bytes: &[u8], count: u32) -> Option<Summary> {
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
fn clean_walk(ctx: &WalkContext<'_>, s: &Summary) -> Option<Walk> {
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

/// Reads one record as Kafka's `DefaultRecord` does in `mode`, with the error it makes.
fn read_record(cur: &mut Cursor<'_>, mode: Mode, index: u32) -> Result<Fields, ValidateError> {
    let rec_err = |kind| ValidateError::Record { index, kind };
    let size = match cur.varint() {
        Ok(s) => s,
        Err(ErrorKind::VarintTooLong) if mode == Mode::InPlace => {
            return Err(ValidateError::RecordLengthVarint(index));
        }
        Err(kind) => return Err(rec_err(kind)),
    };
    match mode {
        Mode::InPlace => {
            // DefaultRecord.readFrom(ByteBuffer): the fields are read in place, and may
            // run past a wrong length before the length check fails.
            if size >= 0 && cur.remaining() < size as usize {
                let needed = size as u32;
                return Err(rec_err(ErrorKind::Truncated { needed, available: cur.remaining() as u32 }));
            }
            let start = cur.pos;
            let fields = read_fields(cur).map_err(rec_err)?;
            check_length(size, cur.pos - start).map_err(rec_err)?;
            Ok(fields)
        }
        Mode::Body => {
            // DefaultRecord.readFrom(InputStream): the body is read whole, then parsed.
            if size < 0 {
                return Err(rec_err(ErrorKind::InvalidLength(size)));
            }
            let mut body = Cursor::new(cur.take(size as usize).map_err(rec_err)?);
            let fields = read_fields(&mut body).map_err(rec_err)?;
            check_length(size, body.pos).map_err(rec_err)?;
            Ok(fields)
        }
        Mode::Partial => {
            // DefaultRecord.readPartiallyFrom: the fields are read one after the other
            // from the stream; the length is not held against them.
            if size < 0 {
                return Err(rec_err(ErrorKind::InvalidLength(size)));
            }
            read_fields_partially(cur).map_err(rec_err)
        }
    }
}

/// A varint's bits (zig-zag encoded) from `b` at `p`, and the position after it: up to two
/// bytes inline, longer ones out of line; `None` where [`Cursor::uvarint`] fails.
#[inline(always)]
fn uvarint_at(b: &[u8], p: usize) -> Option<(u32, usize)> {
    let x = *b.get(p)?;
    if x < 0x80 {
        return Some((u32::from(x), p + 1));
    }
    let y = *b.get(p + 1)?;
    if y < 0x80 {
        return Some((u32::from(x & 0x7f) | u32::from(y) << 7, p + 2));
    }
    long_uvarint_at(b, p)
}

/// [`uvarint_at`]'s longer varints, through [`Cursor::uvarint`] (the same decoding); out of
/// line, as records rarely have one.
#[cold]
#[inline(never)]
fn long_uvarint_at(b: &[u8], p: usize) -> Option<(u32, usize)> {
    let mut cur = Cursor { buf: b, pos: p };
    let v = cur.uvarint().ok()?;
    Some((v, cur.pos))
}

/// A varint from `b` at `p`, as [`Cursor::varint`] reads it.
#[inline(always)]
fn varint_at(b: &[u8], p: usize) -> Option<(i32, usize)> {
    let (v, p) = uvarint_at(b, p)?;
    Some((((v >> 1) as i32) ^ -((v & 1) as i32), p))
}

/// A varlong from `b` at `p`, as [`Cursor::varlong`] reads it.
#[inline(always)]
fn varlong_at(b: &[u8], p: usize) -> Option<(i64, usize)> {
    let x = *b.get(p)?;
    let (v, p) = if x < 0x80 {
        (u64::from(x), p + 1)
    } else {
        match b.get(p + 1) {
            Some(&y) if y < 0x80 => (u64::from(x & 0x7f) | u64::from(y) << 7, p + 2),
            _ => long_uvarlong_at(b, p)?,
        }
    };
    Some((((v >> 1) as i64) ^ -((v & 1) as i64), p))
}

/// [`varlong_at`]'s longer varlongs, through [`Cursor::uvarlong`].
#[cold]
#[inline(never)]
fn long_uvarlong_at(b: &[u8], p: usize) -> Option<(u64, usize)> {
    let mut cur = Cursor { buf: b, pos: p };
    let v = cur.uvarlong().ok()?;
    Some((v, cur.pos))
}

/// Skips a varint length and that many bytes (none when negative, a null): whether it was
/// not null, and the position after it. A zig-zag varint is negative when its bits are
/// odd, and its value is otherwise half of them.
#[inline(always)]
fn bytes_at(b: &[u8], p: usize) -> Option<(bool, usize)> {
    let (v, p) = uvarint_at(b, p)?;
    if v & 1 != 0 {
        return Some((false, p));
    }
    let end = p + (v >> 1) as usize;
    if end > b.len() {
        return None;
    }
    Some((true, end))
}

/// The fast path of [`read_record`]: a record whose length is a non-negative varint and
/// whose fields, read as [`read_fields`] reads them, fill exactly that length within
/// `bytes`. Returns the position after it and its fields, or `None` for any other record
/// (which `read_record` then reads for its error; it reads a record this accepts in every
/// mode, with the same fields).
#[inline(always)]
fn well_formed_record(bytes: &[u8], at: usize) -> Option<(usize, Fields)> {
    let (size, p) = uvarint_at(bytes, at)?;
    if size & 1 != 0 {
        return None; // a negative length
    }
    let end = p + (size >> 1) as usize;
    let b = bytes.get(p..end)?;
    if b.is_empty() {
        return None; // not even the attributes
    }
    // Past the attributes.
    let (timestamp_delta, q) = varlong_at(b, 1)?;
    let (offset_delta, q) = varint_at(b, q)?;
    let (has_key, q) = bytes_at(b, q)?;
    let (_, q) = bytes_at(b, q)?;
    let (headers, mut q) = uvarint_at(b, q)?;
    if headers & 1 != 0 {
        return None; // a negative count
    }
    // A count larger than the bytes left (which `read_fields` refuses) is refused by the
    // loop: every header takes two bytes at least, so it runs out of bytes first.
    for _ in 0..headers >> 1 {
        let (key, k) = uvarint_at(b, q)?;
        if key & 1 != 0 {
            return None;
        }
        let key_end = k + (key >> 1) as usize;
        if key_end > b.len() {
            return None;
        }
        (_, q) = bytes_at(b, key_end)?;
    }
    (q == b.len()).then_some((end, Fields { timestamp_delta, offset_delta, has_key }))
}

struct Fields {
    timestamp_delta: i64,
    offset_delta: i32,
    has_key: bool,
}

/// A varint length, Kafka's way: negative is null (any negative, not only -1).
fn lenient_bytes(cur: &mut Cursor<'_>) -> Result<bool, ErrorKind> {
    let len = cur.varint()?;
    if len < 0 {
        return Ok(false);
    }
    cur.take(len as usize)?;
    Ok(true)
}

/// Kafka's `skipBytes`: nothing for a length of 0 or less.
fn skip(cur: &mut Cursor<'_>) -> Result<bool, ErrorKind> {
    let len = cur.varint()?;
    if len > 0 {
        cur.take(len as usize)?;
    }
    Ok(len >= 0)
}

fn read_fields_partially(cur: &mut Cursor<'_>) -> Result<Fields, ErrorKind> {
    let _attributes = cur.u8()?;
    let timestamp_delta = cur.varlong()?;
    let offset_delta = cur.varint()?;
    let has_key = skip(cur)?;
    skip(cur)?;
    let headers = cur.varint()?;
    if headers < 0 {
        return Err(ErrorKind::NegativeHeaderCount(headers));
    }
    for _ in 0..headers {
        let klen = cur.varint()?;
        if klen < 0 {
            return Err(ErrorKind::InvalidLength(klen));
        }
        cur.take(klen as usize)?;
        skip(cur)?;
    }
    Ok(Fields { timestamp_delta, offset_delta, has_key })
}

fn read_fields(cur: &mut Cursor<'_>) -> Result<Fields, ErrorKind> {
    let _attributes = cur.u8()?;
    let timestamp_delta = cur.varlong()?;
    let offset_delta = cur.varint()?;
    let has_key = lenient_bytes(cur)?;
    let _value = lenient_bytes(cur)?;
    let headers = cur.varint()?;
    if headers < 0 {
        return Err(ErrorKind::NegativeHeaderCount(headers));
    }
    if headers as usize > cur.remaining() {
        return Err(ErrorKind::HeaderCountTooLarge(headers));
    }
    for _ in 0..headers {
        let klen = cur.varint()?;
        if klen < 0 {
            return Err(ErrorKind::InvalidLength(klen));
        }
        cur.take(klen as usize)?;
        lenient_bytes(cur)?;
    }
    Ok(Fields { timestamp_delta, offset_delta, has_key })
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use alloc::vec::Vec;

    use super::*;
    use crate::codec::records::{BatchBuilder, NewRecord, RecordBatch};

    const NOW: i64 = 1_700_000_000_000;

    fn batch(f: impl FnOnce(&mut BatchBuilder<'_>)) -> Vec<u8> {
        let records = [
            NewRecord::new(Some(b"k0"), Some(b"v0")).with_timestamp(NOW - 10),
            NewRecord::new(None, Some(b"v1")).with_timestamp(NOW - 5),
            NewRecord::new(Some(b"k2"), None).with_timestamp(NOW - 7),
        ];
        let mut b = BatchBuilder::new(0, NOW - 10, &records);
        f(&mut b);
        let mut out = Vec::new();
        b.encode_to_vec(&mut out).unwrap();
        out
    }

    fn run(
        bytes: &mut [u8],
        config: &ValidateConfig,
    ) -> (Result<Validated, ValidateError>, Vec<RecordError>) {
        let mut scratch = [0u8; 4096];
        let mut errors = Vec::new();
        let r = validate_and_assign_with(bytes, config, &mut scratch, &mut |e| errors.push(e));
        (r, errors)
    }

    fn fix_crc(b: &mut [u8]) {
        let c = crc::crc32c(&b[CRC_START..]);
        b[17..21].copy_from_slice(&c.to_be_bytes());
    }

    #[test]
    fn assigns_offsets_in_place_without_touching_the_crc() {
        let mut bytes = batch(|_| {});
        let before = bytes.clone();
        let mut config = ValidateConfig::new(1000, NOW);
        config.partition_leader_epoch = 7;
        let (r, errors) = run(&mut bytes, &config);
        let v = r.unwrap();
        assert!(errors.is_empty());
        assert_eq!((v.first_offset, v.last_offset, v.record_count), (1000, 1002, 3));
        assert_eq!((v.max_timestamp, v.log_append_time_ms, v.valid_bytes), (NOW - 5, -1, before.len()));
        assert!(!v.crc_rewritten);
        assert_eq!(bytes[21..], before[21..], "CRC-covered bytes and CRC unchanged");
        let b = RecordBatch::new(&bytes).unwrap();
        b.verify_crc().unwrap();
        assert_eq!((b.base_offset(), b.partition_leader_epoch()), (1000, 7));
        let offsets: Vec<i64> = b.records().unwrap().map(|r| r.unwrap().offset()).collect();
        assert_eq!(offsets, [1000, 1001, 1002]);
    }

    #[test]
    fn log_append_time_sets_the_max_timestamp_and_the_crc() {
        let mut bytes = batch(|_| {});
        let mut config = ValidateConfig::new(5, NOW + 99);
        config.timestamp_type = TimestampType::LogAppendTime;
        let v = run(&mut bytes, &config).0.unwrap();
        assert!(v.crc_rewritten);
        assert_eq!((v.max_timestamp, v.log_append_time_ms), (NOW + 99, NOW + 99));
        let b = RecordBatch::new(&bytes).unwrap();
        b.verify_crc().unwrap();
        assert_eq!(b.timestamp_type(), TimestampType::LogAppendTime);
        assert!(b.records().unwrap().all(|r| r.unwrap().timestamp() == NOW + 99));
    }

    #[test]
    fn a_wrong_header_max_timestamp_is_corrected() {
        let mut bytes = batch(|b| b.max_timestamp = Some(NOW - 1000));
        let v = run(&mut bytes, &ValidateConfig::new(0, NOW)).0.unwrap();
        assert!(v.crc_rewritten);
        let b = RecordBatch::new(&bytes).unwrap();
        b.verify_crc().unwrap();
        assert_eq!(b.max_timestamp(), NOW - 5);
    }

    #[test]
    fn timestamps_out_of_range_are_record_errors() {
        let mut bytes = batch(|_| {});
        let before = bytes.clone();
        let mut config = ValidateConfig::new(0, NOW);
        config.timestamp_before_max_ms = 8;
        let (r, errors) = run(&mut bytes, &config);
        let e = r.unwrap_err();
        assert_eq!(e, ValidateError::Records { count: 1, timestamp: true });
        assert_eq!(e.error_code(), ErrorCode::InvalidTimestamp);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].batch_index, 0);
        assert_eq!(bytes, before, "nothing written on error");
        config.timestamp_before_max_ms = i64::MAX;
        config.timestamp_after_max_ms = 0;
        config.now_ms = NOW - 6;
        let (r, errors) = run(&mut bytes, &config);
        assert_eq!(r.unwrap_err(), ValidateError::Records { count: 1, timestamp: true });
        assert_eq!(errors[0].batch_index, 1);
    }

    #[test]
    fn compacted_topics_need_keys() {
        let mut bytes = batch(|_| {});
        let mut config = ValidateConfig::new(0, NOW);
        config.compacted = true;
        let (r, errors) = run(&mut bytes, &config);
        let e = r.unwrap_err();
        assert_eq!(e.error_code(), ErrorCode::InvalidRecord);
        assert_eq!(errors, [RecordError { batch_index: 1, kind: RecordErrorKind::MissingKey }]);
    }

    /// `walk_records` settles the record checks on the fast path's aggregates only when they
    /// prove every record clean: its answer is the record-by-record walk's, over timestamps
    /// at and near the ends of `i64`, NO_TIMESTAMP, keys missing or not, offsets out of order
    /// and every kind of timestamp bound.
    #[test]
    fn the_summary_decides_as_the_record_checks() {
        let deltas: [&[i64]; 5] =
            [&[0, 1, 2], &[0, -1, 5], &[0, 1 << 40, -(1 << 40)], &[3, 3, 3], &[-7, 0, 900]];
        let bases = [NOW - 10, -1, 0, 1, i64::MAX - 2, i64::MAX, i64::MIN, i64::MIN + 1, NOW + 3_600_000];
        let nows = [NOW, 0, -1, i64::MAX, i64::MIN, NOW + 3_600_000];
        let bounds = [i64::MAX, 0, 10, -5, i64::MIN, 3_600_000, 1 << 40];
        let mut checked = 0;
        let mut summed = 0;
        for (n, ds) in deltas.iter().enumerate() {
            for keys in [true, false] {
                let records: Vec<NewRecord<'_>> = ds
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| {
                        let key: Option<&[u8]> = if keys || i != 1 { Some(b"k") } else { None };
                        NewRecord::new(key, Some(b"v")).with_timestamp(d)
                    })
                    .collect();
                let mut b = Vec::new();
                BatchBuilder::new(0, 0, &records).encode_to_vec(&mut b).unwrap();
                let mut section = b[BATCH_HEADER_LEN..].to_vec();
                if n == 4 {
                    // Offset deltas 0, 2, 2: the second record's delta (after its length, attributes
                    // and one-byte timestamp delta) becomes 2 (zig-zag 4).
                    let at = 1 + 1 + 1; // length, attributes, a one-byte timestamp delta
                    assert_eq!(section[at], 0);
                    let second = 1 + usize::from(section[0] >> 1);
                    section[second + 3] = 4;
                }
                for &base_timestamp in &bases {
                    for &now_ms in &nows {
                        for &before in &bounds {
                            for &after in &bounds {
                                for (timestamp_type, compacted, lat) in [
                                    (TimestampType::CreateTime, false, None),
                                    (TimestampType::CreateTime, true, None),
                                    (TimestampType::LogAppendTime, false, None),
                                    (TimestampType::LogAppendTime, true, None),
                                    (TimestampType::CreateTime, false, Some(base_timestamp)),
                                ] {
                                    let mut config = ValidateConfig::new(0, now_ms);
                                    config.timestamp_type = timestamp_type;
                                    config.compacted = compacted;
                                    config.timestamp_before_max_ms = before;
                                    config.timestamp_after_max_ms = after;
                                    let ctx = WalkContext {
                                        count: ds.len() as u32,
                                        base_timestamp,
                                        log_append_time: lat,
                                        config: &config,
                                        mode: Mode::InPlace,
                                    };
                                    let exact = exact_walk(&section, &ctx, None);
                                    assert_eq!(
                                        walk_records(&section, &ctx, None),
                                        exact,
                                        "deltas {ds:?} keys {keys} base {base_timestamp} now {now_ms} \
                                         before {before} after {after} {timestamp_type:?} {compacted} {lat:?}"
                                    );
                                    checked += 1;
                                    if fast_walk(&section, ctx.count)
                                        .and_then(|s| clean_walk(&ctx, &s))
                                        .is_some()
                                    {
                                        summed += 1;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        // Both ways were taken.
        assert!(summed > checked / 10 && summed < checked, "{summed} of {checked} settled on the summary");
    }

    /// The fast path accepts only records that `read_record` reads the same way in every
    /// mode: checked over every byte flip and cut of records with and without keys,
    /// headers and long varints.
    #[test]
    fn the_fast_path_agrees_with_kafkas_readers() {
        let key = [7u8; 200];
        let value = [9u8; 20_000];
        let header = crate::codec::records::NewHeader { key: b"h", value: Some(&key[..3]) };
        let headers = [header, header];
        let records = [
            NewRecord { key: None, value: Some(&value[..5]), headers: &[], timestamp: None },
            NewRecord { key: Some(&key), value: Some(&value), headers: &headers, timestamp: Some(1 << 40) },
            NewRecord { key: Some(&key[..0]), value: None, headers: &headers[..1], timestamp: Some(-5) },
        ];
        let mut b = Vec::new();
        BatchBuilder::new(0, NOW, &records).encode_to_vec(&mut b).unwrap();
        let section = &b[BATCH_HEADER_LEN..];
        let mut inputs = std::vec![section.to_vec()];
        for i in 0..section.len().min(400) {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut m = section.to_vec();
                m[i] ^= flip;
                inputs.push(m);
            }
            inputs.push(section[..i].to_vec());
        }
        // Records of no bytes at all, or cut inside their fields (a fuzzed crash: the
        // attributes byte was skipped past the end).
        for short in [&[0x00][..], &[0x02, 0x00][..], &[0x04, 0x00, 0x80][..]] {
            assert!(well_formed_record(short, 0).is_none(), "{short:?}");
            inputs.push(short.to_vec());
        }
        let mut fast = 0;
        for input in &inputs {
            let mut at = 0;
            for index in 0..3 {
                let Some((end, f)) = well_formed_record(input, at) else { break };
                fast += 1;
                for mode in [Mode::InPlace, Mode::Body, Mode::Partial] {
                    let mut cur = Cursor { buf: input, pos: at };
                    let g = read_record(&mut cur, mode, index).unwrap_or_else(|e| panic!("{e}"));
                    assert_eq!(cur.pos, end);
                    assert_eq!(
                        (g.timestamp_delta, g.offset_delta, g.has_key),
                        (f.timestamp_delta, f.offset_delta, f.has_key)
                    );
                }
                at = end;
            }
        }
        assert!(fast > inputs.len(), "the fast path took {fast} records of {} inputs", inputs.len());
    }

    #[test]
    fn hostile_headers() {
        let config = ValidateConfig::new(0, NOW);
        type Mutation = (&'static str, fn(&mut Vec<u8>), ErrorCode);
        let cases: [Mutation; 9] = [
            ("crc", |b| b[30] ^= 1, ErrorCode::CorruptMessage),
            ("magic", |b| b[16] = 1, ErrorCode::InvalidRecord),
            ("base offset", |b| b[7] = 1, ErrorCode::InvalidRecord),
            (
                "count",
                |b| {
                    b[60] = 4;
                    fix_crc(b)
                },
                ErrorCode::InvalidRecord,
            ),
            (
                "delta",
                |b| {
                    b[26] = 1;
                    b[60] = 2;
                    fix_crc(b)
                },
                ErrorCode::InvalidRecord,
            ),
            (
                "control",
                |b| {
                    b[22] |= 0x20;
                    fix_crc(b)
                },
                ErrorCode::InvalidRecord,
            ),
            (
                "sequence",
                |b| {
                    b[43..51].copy_from_slice(&5i64.to_be_bytes());
                    fix_crc(b)
                },
                ErrorCode::InvalidRecord,
            ),
            (
                "codec 6",
                |b| {
                    b[22] |= 6;
                    fix_crc(b)
                },
                ErrorCode::UnknownServerError,
            ),
            (
                "truncated",
                |b| {
                    b.pop();
                },
                ErrorCode::InvalidRecord,
            ),
        ];
        for (name, f, code) in cases {
            let mut bytes = batch(|_| {});
            f(&mut bytes);
            let before = bytes.clone();
            let e = run(&mut bytes, &config).0.unwrap_err();
            assert_eq!(e.error_code(), code, "{name}: {e}");
            assert_eq!(bytes, before, "{name}: unchanged");
        }
        let mut two = batch(|_| {});
        two.extend_from_slice(&batch(|_| {}));
        assert_eq!(run(&mut two, &config).0.unwrap_err(), ValidateError::MoreThanOneBatch);
        let mut tail = batch(|_| {});
        let n = tail.len();
        tail.extend_from_slice(&[0u8; 11]);
        assert_eq!(run(&mut tail, &config).0.unwrap().valid_bytes, n, "a cut-short tail is dropped");
        tail.push(0);
        // 12 bytes are enough to read a length: 0 is corrupt, as in Kafka's batch iterator.
        assert_eq!(run(&mut tail, &config).0.unwrap_err(), ValidateError::LengthTooSmall(0));
    }

    #[test]
    fn compressed_batches_are_checked_through_scratch_and_kept() {
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
            let mut bytes = batch(|b| b.compression = codec);
            let before = bytes.clone();
            let mut config = ValidateConfig::new(42, NOW);
            let v = run(&mut bytes, &config).0.unwrap();
            assert_eq!((v.compression, v.first_offset, v.last_offset), (codec, 42, 44));
            assert_eq!(bytes[61..], before[61..], "{codec:?}: payload kept");
            RecordBatch::new(&bytes).unwrap().verify_crc().unwrap();

            let mut small = [0u8; 16];
            let mut copy = before.clone();
            let e = validate_and_assign(&mut copy, &config, &mut small).unwrap_err();
            assert_eq!(e, ValidateError::DecompressedTooLarge { limit: 16 });

            config.compression = TopicCompression::Codec(Compression::None);
            let mut copy = before.clone();
            assert!(matches!(run(&mut copy, &config).0, Err(ValidateError::ConversionRequired(_))));
            config.produce_version = 6;
            config.compression = TopicCompression::Producer;
            let mut copy = before.clone();
            let r = run(&mut copy, &config).0;
            assert_eq!(r.is_err(), codec == Compression::Zstd, "{codec:?}");
        }
    }

    #[test]
    fn producer_info() {
        let mut bytes = batch(|b| {
            b.producer_id = 9;
            b.producer_epoch = 2;
            b.base_sequence = i32::MAX - 1;
            b.transactional = true;
        });
        let v = run(&mut bytes, &ValidateConfig::new(0, NOW)).0.unwrap();
        assert_eq!(
            v.producer,
            ProducerInfo {
                producer_id: 9,
                producer_epoch: 2,
                base_sequence: i32::MAX - 1,
                last_sequence: 0,
                transactional: true
            }
        );
    }
}
