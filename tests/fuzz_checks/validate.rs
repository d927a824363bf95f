//! The `validate` fuzz target's properties: `records::validate` (validate-and-assign in
//! place) against the reference decoder.
//!
//! Byte 0 selects the input's shape: bits 0-1: 0 the rest is the `records` field as it is;
//! 1 a valid batch header (length, count from byte 1, CRC fixed) before the rest as
//! uncompressed records; 2 or 3 a batch built by `BatchBuilder` from the rest (codec
//! `byte 1 % 5`), then, for 3, one byte of it flipped (byte 2 the place, byte 3 the bit)
//! with the CRC fixed. Bit 2: log-append time; bit 3: compacted; bit 4: a narrow create-time
//! window; bit 5: topic compression fixed to the batch's codec id (`byte 1 % 5`); bits 6-7: the
//! inflate limit (256 bytes, 4 KiB, 64 KiB, 1 MiB).
//!
//! Properties: no panic. On an error the bytes are unchanged. On success the output is the
//! input's length; only the header fields validation writes changed (base offset, leader
//! epoch, and where the CRC was rewritten the attributes, max timestamp and CRC); the records
//! section is untouched (never recompressed); the outcome's offsets, count and max timestamp
//! follow from the bytes; and whenever the reference decoder reads the input, it reads the
//! output too, with every record at the assigned base offset plus its delta and everything
//! else unchanged (timestamps under log-append time excepted: they become the append time).

use kwire::records::reference;
use kwire::records::validate::{TopicCompression, ValidateConfig, validate_and_assign_with};
use kwire::records::{BatchBuilder, Compression, NewHeader, NewRecord, TimestampType, crc};

const LIMITS: [usize; 4] = [256, 4096, 64 << 10, 1 << 20];
const NOW: i64 = 1_700_000_000_000;

fn fix_crc(b: &mut [u8]) {
    if b.len() >= 61 {
        let c = crc::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&c.to_be_bytes());
    }
}

fn codec(b: u8) -> Compression {
    [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
        [usize::from(b % 5)]
}

/// A batch header (count `count`, base timestamp near `NOW`) in front of `records`.
fn with_header(records: &[u8], count: u8) -> Vec<u8> {
    let mut b = vec![0u8; 61];
    b[8..12].copy_from_slice(&((49 + records.len()) as i32).to_be_bytes());
    b[12..16].copy_from_slice(&(-1i32).to_be_bytes());
    b[16] = 2;
    let count = i32::from(count.max(1));
    b[23..27].copy_from_slice(&(count - 1).to_be_bytes());
    b[27..35].copy_from_slice(&(NOW - 1000).to_be_bytes());
    b[35..43].copy_from_slice(&NOW.to_be_bytes());
    b[43..51].copy_from_slice(&(-1i64).to_be_bytes());
    b[51..53].copy_from_slice(&(-1i16).to_be_bytes());
    b[53..57].copy_from_slice(&(-1i32).to_be_bytes());
    b[57..61].copy_from_slice(&count.to_be_bytes());
    b.extend_from_slice(records);
    fix_crc(&mut b);
    b
}

/// A batch built from `rest`: each chunk of up to 16 bytes is a record (key, value and a
/// header split from it, timestamps from its first byte).
fn built(rest: &[u8], codec: Compression) -> Vec<u8> {
    let chunks: Vec<&[u8]> = rest.chunks(16).take(64).collect();
    let headers: Vec<[NewHeader<'_>; 1]> = chunks
        .iter()
        .map(|c| [NewHeader { key: &c[..c.len() / 4], value: Some(&c[c.len() / 4..c.len() / 2]) }])
        .collect();
    let records: Vec<NewRecord<'_>> = chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (k, v) = c.split_at(c.len() / 2);
            let key = (c[0] & 1 == 0).then_some(k);
            let r = NewRecord::new(key, Some(v)).with_timestamp(NOW - i64::from(c[0]) * 100);
            if c[0] & 2 != 0 { r.with_headers(&headers[i]) } else { r }
        })
        .collect();
    let mut b = BatchBuilder::new(0, NOW - 10_000, &records);
    b.compression = codec;
    let mut out = Vec::new();
    if b.encode_to_vec(&mut out).is_err() {
        return rest.to_vec();
    }
    out
}

/// Validate-and-assign on one input; see the module documentation.
pub fn validate(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else { return };
    let byte = |i: usize| rest.get(i).copied().unwrap_or(0);
    let mut field = match sel & 3 {
        0 => rest.to_vec(),
        1 => with_header(rest.get(1..).unwrap_or_default(), byte(0)),
        shape => {
            let mut b = built(rest.get(4..).unwrap_or_default(), codec(byte(1)));
            if shape == 3 && !b.is_empty() {
                let at = usize::from(byte(2)) * 7 % b.len();
                b[at] ^= 1 << (byte(3) % 8);
                fix_crc(&mut b);
            }
            b
        }
    };
    let mut config = ValidateConfig::new(1_000_000 + i64::from(byte(0)), NOW);
    config.partition_leader_epoch = i32::from(byte(1));
    if sel & 4 != 0 {
        config.timestamp_type = TimestampType::LogAppendTime;
    }
    config.compacted = sel & 8 != 0;
    if sel & 16 != 0 {
        config.timestamp_before_max_ms = 5_000;
        config.timestamp_after_max_ms = 0;
    }
    if sel & 32 != 0 {
        config.compression = TopicCompression::Codec(codec(byte(1)));
    }
    let limit = LIMITS[usize::from(sel >> 6)];
    let mut scratch = vec![0u8; limit];

    let input = field.clone();
    let mut record_errors = 0u32;
    let result = validate_and_assign_with(&mut field, &config, &mut scratch, &mut |_| record_errors += 1);
    let v = match result {
        Err(e) => {
            assert_eq!(field, input, "a rejected field is unchanged ({e})");
            let _ = (e.error_code(), e.to_string());
            return;
        }
        Ok(v) => v,
    };
    assert_eq!(record_errors, 0, "no record error on success");
    assert_eq!(field.len(), input.len(), "in place: the length is unchanged");
    let n = v.valid_bytes;
    assert!(n >= 61 && n <= field.len());
    assert_eq!(field[n..], input[n..], "bytes after the batch are untouched");
    assert_eq!(field[61..n], input[61..n], "the records section is untouched (never recompressed)");
    assert_eq!(field[8..12], input[8..12], "the length is unchanged");
    assert_eq!(field[16], 2);
    assert_eq!(field[23..35], input[23..35], "deltas and base timestamp unchanged");
    assert_eq!(field[43..61], input[43..61], "producer fields and count unchanged");
    if !v.crc_rewritten {
        assert_eq!(field[17..43], input[17..43], "without a rewrite, CRC, attributes and max timestamp stay");
    }
    assert_eq!(field[0..8], config.base_offset.to_be_bytes());
    assert_eq!(field[12..16], config.partition_leader_epoch.to_be_bytes());
    assert_eq!(v.first_offset, config.base_offset);
    assert_eq!(v.last_offset, v.first_offset + i64::from(v.record_count) - 1);
    assert_eq!(field[35..43], v.max_timestamp.to_be_bytes());
    if config.timestamp_type == TimestampType::LogAppendTime {
        assert_eq!((v.max_timestamp, v.log_append_time_ms), (NOW, NOW));
        assert_eq!(field[22] & 0x08, 0x08);
    } else {
        assert_eq!(v.log_append_time_ms, -1);
        assert_eq!(field[22] & 0x08, 0);
    }

    // The reference decoder: if it reads the input, it reads the output the same way.
    let Ok(before) = reference::decode(&input[..n], limit) else { return };
    let after = reference::decode(&field[..n], limit).expect("the reference reads what validation wrote");
    assert_eq!((before.batches.len(), after.batches.len()), (1, 1));
    let (b, a) = (&before.batches[0], &after.batches[0]);
    assert_eq!(a.base_offset, config.base_offset);
    assert_eq!(a.partition_leader_epoch, config.partition_leader_epoch);
    assert_eq!(a.records.len() as u32, v.record_count);
    assert_eq!(
        (
            a.batch_length,
            a.last_offset_delta,
            a.base_timestamp,
            a.producer_id,
            a.producer_epoch,
            a.base_sequence
        ),
        (
            b.batch_length,
            b.last_offset_delta,
            b.base_timestamp,
            b.producer_id,
            b.producer_epoch,
            b.base_sequence
        )
    );
    assert_eq!(a.attributes & 0x77, b.attributes & 0x77, "codec and flags kept");
    for (ra, rb) in a.records.iter().zip(&b.records) {
        assert_eq!(ra.offset, config.base_offset + i64::from(ra.offset_delta), "assigned offset");
        let mut rb = rb.clone();
        rb.offset = ra.offset;
        // Log-append time: every record reads as the append time. Create time: base plus
        // delta (a batch that came with the log-append-time bit loses it).
        let want = match config.timestamp_type {
            TimestampType::LogAppendTime => NOW,
            TimestampType::CreateTime => a.base_timestamp.wrapping_add(ra.timestamp_delta),
        };
        assert_eq!(ra.timestamp, want);
        rb.timestamp = want;
        assert_eq!(*ra, rb, "the record is otherwise unchanged");
    }
    if config.timestamp_type == TimestampType::CreateTime && b.attributes & 0x08 == 0 {
        let max = a.records.iter().map(|r| r.timestamp).max().unwrap_or(-1).max(-1);
        assert_eq!(v.max_timestamp, max, "the max timestamp is the records' largest");
    }
}
