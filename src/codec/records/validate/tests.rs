//! Validation against hand-made batches, and the fast walk against the exact one.

use alloc::vec::Vec;

use super::super::attributes::{Compression, TimestampType};
use super::super::batch::CRC_START;
use super::super::varint::Cursor;
use super::super::{BATCH_HEADER_LEN, crc};
use super::record::{Mode, read_record, well_formed_record};
use super::walk::{WalkContext, clean_walk, exact_walk, fast_walk, walk_records};
use super::*;
use crate::ErrorCode;
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

fn run(bytes: &mut [u8], config: &ValidateConfig) -> (Result<Validated, ValidateError>, Vec<RecordError>) {
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
    let deltas: [&[i64]; 5] = [&[0, 1, 2], &[0, -1, 5], &[0, 1 << 40, -(1 << 40)], &[3, 3, 3], &[-7, 0, 900]];
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
                                if fast_walk(&section, ctx.count).and_then(|s| clean_walk(&ctx, &s)).is_some()
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
