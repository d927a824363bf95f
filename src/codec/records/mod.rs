//! Record batches: the bytes of every Kafka `records` field.
//!
//! A `records` field (Produce request, Fetch and ShareFetch responses, FetchSnapshot)
//! holds consecutive *batches*. Since Kafka 0.11 each is a **RecordBatch v2** (magic 2):
//! a 61-byte header followed by records, possibly compressed. Older logs and clients use
//! **legacy message sets** (magic 0 and 1), read by [`legacy`].
//!
//! Everything here is a view over the caller's bytes:
//!
//! - [`RecordBatches::new`] iterates the batches of a `records` field. Each step reads
//!   only the 12-byte framing and the magic byte, in O(1). A last batch cut short (as a
//!   Fetch response may end) is not an error: iteration stops and
//!   [`RecordBatches::partial`] says so, as Kafka's clients do.
//! - A [`RecordBatch`] decodes its 61-byte header ([`BatchHeader`]) when it is made. Its
//!   payload is checked lazily, when its records are asked for: [`RecordBatch::records`]
//!   checks the CRC-32C and the record count, and [`Records`] checks each record as it is
//!   iterated.
//! - A [`Record`] borrows its key, value and headers from the batch (or from the caller's
//!   decompression buffer); null stays distinct from empty; headers come in wire order,
//!   duplicates kept.
//!
//! Nothing on these paths allocates. Compressed batches decompress into a buffer the
//! caller provides ([`RecordBatch::records_in`]) or, with `alloc`, into a `Vec` the caller
//! reuses ([`RecordBatch::records_in_vec`]); both stop at a size limit.
//!
//! ```
//! use kwire::records::{BatchBuilder, NewRecord, RecordBatches};
//!
//! let records = [NewRecord::new(Some(b"k"), Some(b"v"))];
//! let builder = BatchBuilder::new(7, 1_700_000_000_000, &records);
//! let mut buf = [0u8; 128];
//! let n = builder.encode(&mut buf)?;
//!
//! let mut count = 0;
//! for batch in RecordBatches::new(&buf[..n]) {
//!     for record in batch?.records()? {
//!         let record = record?;
//!         assert_eq!((record.offset(), record.key(), record.value()), (7, Some(&b"k"[..]), Some(&b"v"[..])));
//!         count += 1;
//!     }
//! }
//! assert_eq!(count, 1);
//! # Ok::<(), kwire::records::Error>(())
//! ```

mod attributes;
mod batch;
pub mod compression;
mod control;
pub mod crc;
mod encode;
mod error;
pub mod legacy;
mod record;
#[cfg(feature = "alloc")]
pub mod reference;
pub mod validate;
mod varint;
#[cfg(feature = "lz4")]
mod xxh32;

pub use attributes::{Attributes, Compression, TimestampType};
pub use batch::{BatchHeader, RecordBatch, RecordBatches};
pub use control::{ControlRecord, ControlRecordType, EndTxnMarker};
pub use encode::{BatchBuilder, NewHeader, NewRecord};
pub use error::{Error, ErrorKind};
pub use record::{Header, Headers, Record, Records};

/// Bytes before a batch's `magic` byte that every batch (v2 or legacy) shares: base
/// offset (8), batch length (4), and 4 more (partition leader epoch, or a legacy CRC).
pub const LOG_OVERHEAD: usize = 12;

/// Size of a RecordBatch v2 header, base offset to records count.
pub const BATCH_HEADER_LEN: usize = 61;

/// The smallest possible v2 record: length, attributes, timestamp delta, offset delta,
/// key length, value length and header count, one byte each.
pub const MIN_RECORD_LEN: usize = 7;
