//! The entry points and the batch-level checks: framing, the header, the codec, the CRC,
//! then the records' walk and the header rewritten in place.

use super::super::attributes::{Attributes, Compression, TimestampType};
use super::super::batch::{CRC_START, MAGIC_OFFSET};
use super::super::error::ErrorKind;
use super::super::{BATCH_HEADER_LEN, LOG_OVERHEAD, compression, crc};
use super::config::{ProducerInfo, TopicCompression, ValidateConfig, Validated};
use super::error::{Conversion, RecordError, ValidateError};
use super::record::Mode;
use super::walk::{NO_TIMESTAMP, WalkContext, report, walk_records};

/// Bytes of a batch up to and including its magic byte (Kafka's `HEADER_SIZE_UP_TO_MAGIC`).
const HEADER_UP_TO_MAGIC: usize = MAGIC_OFFSET + 1;
/// Kafka's smallest entry (`LegacyRecord.RECORD_OVERHEAD_V0`): a shorter length field is
/// corrupt before anything else is read.
const MIN_ENTRY_LEN: i32 = 14;

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
/// place; see the [module documentation](super).
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
