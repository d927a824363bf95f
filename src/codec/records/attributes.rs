//! A batch's attributes: the compression codec, the timestamp type and the flags, as types.
//!
//! A leaf: it names nothing else in the crate, so the records error can name [`Compression`].
//! What reads a codec id with its error ([`Compression::from_id`],
//! [`Attributes::compression`]) is in `batch.rs`.

/// A batch's compression codec (attribute bits 0-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    /// 0: not compressed.
    None,
    /// 1: gzip.
    Gzip,
    /// 2: snappy (xerial framing or raw).
    Snappy,
    /// 3: LZ4 frame.
    Lz4,
    /// 4: zstd.
    Zstd,
}

impl Compression {
    /// The attribute value of this codec.
    pub const fn id(self) -> u8 {
        self as u8
    }
}

/// How a batch's timestamps were set (attribute bit 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimestampType {
    /// Set by the producer.
    CreateTime,
    /// Set by the broker when it appended the batch: every record's timestamp is the
    /// batch's `max_timestamp`.
    LogAppendTime,
}

/// A batch's attributes field, typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Attributes(pub i16);

impl Attributes {
    /// Bits 0-2: the compression codec id.
    pub const CODEC_MASK: i16 = 0x07;
    /// Bit 3: log-append time.
    pub const TIMESTAMP_TYPE: i16 = 0x08;
    /// Bit 4: part of a transaction.
    pub const TRANSACTIONAL: i16 = 0x10;
    /// Bit 5: a control batch.
    pub const CONTROL: i16 = 0x20;
    /// Bit 6: `base_timestamp` holds the delete horizon (compacted tombstones).
    pub const DELETE_HORIZON: i16 = 0x40;

    /// The timestamp type.
    pub const fn timestamp_type(self) -> TimestampType {
        if self.0 & Self::TIMESTAMP_TYPE != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Whether the batch is part of a transaction.
    pub const fn is_transactional(self) -> bool {
        self.0 & Self::TRANSACTIONAL != 0
    }

    /// Whether the batch holds control records (transaction markers, KRaft records).
    pub const fn is_control(self) -> bool {
        self.0 & Self::CONTROL != 0
    }

    /// Whether `base_timestamp` is the delete horizon.
    pub const fn has_delete_horizon(self) -> bool {
        self.0 & Self::DELETE_HORIZON != 0
    }

    /// Attributes for `compression`, `timestamp_type` and the three flags.
    pub const fn new(
        compression: Compression,
        timestamp_type: TimestampType,
        transactional: bool,
        control: bool,
    ) -> Self {
        let mut v = compression as i16;
        if matches!(timestamp_type, TimestampType::LogAppendTime) {
            v |= Self::TIMESTAMP_TYPE;
        }
        if transactional {
            v |= Self::TRANSACTIONAL;
        }
        if control {
            v |= Self::CONTROL;
        }
        Attributes(v)
    }
}
