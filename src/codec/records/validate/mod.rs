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

//!
//! The files: `config.rs` (what the broker knows, what a valid batch gives), `error.rs` (what
//! is refused, with its Kafka error code), `batch.rs` (the entry points and the batch checks),
//! `walk.rs` (the walks over a batch's records: the fast one over aggregates and the exact
//! one, record by record) and `record.rs` (how Kafka's three record readers read one record).

mod batch;
mod config;
mod error;
mod record;
mod walk;

pub use batch::{validate_and_assign, validate_and_assign_with};
pub use config::{ProducerInfo, TopicCompression, ValidateConfig, Validated};
pub use error::{Conversion, RecordError, RecordErrorKind, ValidateError};

#[cfg(all(test, feature = "std"))]
mod tests;
