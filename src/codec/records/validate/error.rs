//! What validation refuses: a record's error, a batch's, with the Kafka error code each gets.

use core::fmt;

use super::super::attributes::Compression;
use super::super::error::ErrorKind;
use crate::ErrorCode;

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
