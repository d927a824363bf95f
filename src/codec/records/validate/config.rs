//! What the broker knows when a Produce partition arrives, and what a valid batch gives it.

use super::super::attributes::{Compression, TimestampType};

/// A topic's `compression.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TopicCompression {
    /// `producer`: batches are kept in the codec the producer chose.
    #[default]
    Producer,
    /// A fixed codec (`uncompressed` is [`Compression::None`]): a batch in another codec would
    /// be rebuilt by Kafka ([`ValidateError::ConversionRequired`](super::ValidateError::ConversionRequired) here).
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

/// The outcome of a successful [`validate_and_assign`](super::validate_and_assign).
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
