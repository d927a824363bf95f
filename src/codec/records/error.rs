//! The error type of the records module.

use core::fmt;

use super::Compression;

/// What was wrong with a batch, a record, or a compressed payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input ended early: `needed` bytes were required, only `available` were left.
    Truncated {
        /// Bytes the field needed.
        needed: u32,
        /// Bytes that were left.
        available: u32,
    },
    /// A batch's length field is smaller than the smallest batch of its magic (or negative).
    BatchTooShort(i32),
    /// A magic byte this reader does not handle here (v2 readers take 2; [`super::legacy`]
    /// takes 0 and 1).
    UnsupportedMagic(i8),
    /// The CRC stored in the batch (or legacy message) differs from the one computed.
    CrcMismatch {
        /// The CRC in the header.
        stored: u32,
        /// The CRC of the bytes.
        computed: u32,
    },
    /// A negative record count.
    InvalidRecordCount(i32),
    /// A record count larger than the records' bytes could hold (each record takes at
    /// least [`super::MIN_RECORD_LEN`] bytes).
    RecordCountTooLarge {
        /// The declared count.
        count: i32,
        /// The most records the bytes could hold.
        max: u32,
    },
    /// The records ended (or broke off) before the declared count was reached.
    TooFewRecords {
        /// The declared count.
        declared: u32,
        /// Records found.
        found: u32,
    },
    /// Bytes were left after the declared number of records.
    TrailingBytes(u32),
    /// A varint longer than 5 bytes, or a varlong longer than 10.
    VarintTooLong,
    /// A length below -1 (key, value, header value), or negative where null is not allowed
    /// (record length, header key).
    InvalidLength(i32),
    /// A record's length prefix disagrees with the length of its contents.
    RecordLengthMismatch {
        /// The length the record declared.
        declared: u32,
        /// The length its fields took (`u32::MAX` if they ran past the declared end).
        actual: u32,
    },
    /// A negative header count.
    NegativeHeaderCount(i32),
    /// A header count larger than the record's bytes could hold (2 bytes a header at least).
    HeaderCountTooLarge(i32),
    /// An attributes field names compression codec 5, 6 or 7.
    UnknownCompression(u8),
    /// The batch is compressed: use [`super::RecordBatch::records_in`] (or `records_in_vec`).
    Compressed(Compression),
    /// The crate was built without the feature for this codec.
    CodecNotEnabled(Compression),
    /// Decompression would exceed the caller's size limit.
    DecompressedTooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The compressed payload is invalid for its codec.
    Decompress(&'static str),
    /// A control record's key or value is malformed, or the record is not in a control batch.
    InvalidControlRecord,
    /// An encoder's output buffer is too short.
    BufferTooSmall {
        /// Bytes the encoding needs.
        needed: u32,
        /// Bytes available.
        available: u32,
    },
    /// A value cannot be encoded (a count or length too large for its field, or an offset
    /// or timestamp delta that does not fit).
    ValueOutOfRange(&'static str),
}

/// An error from the records module: what was wrong and where.
///
/// The offset counts from the first byte given to the reader that found it: for batch
/// framing, the start of the `records` field; for a record, the start of the batch's
/// records section (after the 61-byte header, or of the decompressed bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Error {
    kind: ErrorKind,
    offset: usize,
}

impl Error {
    /// An error of `kind` at `offset`.
    pub const fn new(kind: ErrorKind, offset: usize) -> Self {
        Error { kind, offset }
    }

    /// What was wrong.
    pub const fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Where it was found (see the type's documentation).
    pub const fn offset(&self) -> usize {
        self.offset
    }

    /// The same error with its offset moved forward by `by` bytes.
    pub const fn shifted(self, by: usize) -> Self {
        Error { kind: self.kind, offset: self.offset.saturating_add(by) }
    }
}

pub(crate) fn sat32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ErrorKind::Truncated { needed, available } => {
                write!(f, "truncated: needed {needed} bytes, {available} left")
            }
            ErrorKind::BatchTooShort(n) => write!(f, "batch length {n} is below the minimum"),
            ErrorKind::UnsupportedMagic(m) => write!(f, "unsupported magic {m}"),
            ErrorKind::CrcMismatch { stored, computed } => {
                write!(f, "CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")
            }
            ErrorKind::InvalidRecordCount(n) => write!(f, "invalid record count {n}"),
            ErrorKind::RecordCountTooLarge { count, max } => {
                write!(f, "record count {count} is larger than the bytes could hold ({max})")
            }
            ErrorKind::TooFewRecords { declared, found } => {
                write!(f, "batch declares {declared} records but holds {found}")
            }
            ErrorKind::TrailingBytes(n) => write!(f, "{n} bytes left after the last record"),
            ErrorKind::VarintTooLong => f.write_str("varint is too long"),
            ErrorKind::InvalidLength(n) => write!(f, "invalid length {n}"),
            ErrorKind::RecordLengthMismatch { declared, actual } => {
                if actual == u32::MAX {
                    write!(f, "record declares {declared} bytes but its fields run past them")
                } else {
                    write!(f, "record declares {declared} bytes but its fields take {actual}")
                }
            }
            ErrorKind::NegativeHeaderCount(n) => write!(f, "negative header count {n}"),
            ErrorKind::HeaderCountTooLarge(n) => {
                write!(f, "header count {n} is larger than the record could hold")
            }
            ErrorKind::UnknownCompression(c) => write!(f, "unknown compression codec {c}"),
            ErrorKind::Compressed(c) => write!(f, "batch is compressed ({c:?}): decompress it first"),
            ErrorKind::CodecNotEnabled(c) => write!(f, "codec {c:?} is not enabled in this build"),
            ErrorKind::DecompressedTooLarge { limit } => {
                write!(f, "decompressed size exceeds the limit of {limit} bytes")
            }
            ErrorKind::Decompress(why) => write!(f, "invalid compressed data: {why}"),
            ErrorKind::InvalidControlRecord => f.write_str("invalid control record"),
            ErrorKind::BufferTooSmall { needed, available } => {
                write!(f, "buffer too small: needed {needed} bytes, {available} available")
            }
            ErrorKind::ValueOutOfRange(what) => write!(f, "{what} is out of range"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at offset {}", self.kind, self.offset)
    }
}

impl core::error::Error for Error {}
