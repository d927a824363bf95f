//! Record batches: the captured client frames of `tests/vectors/records`, hostile inputs,
//! legacy message sets, encoding and compression round trips.

mod common;

use kwire::records::{
    BatchBuilder, Compression, ControlRecordType, ErrorKind, NewHeader, NewRecord, Record, RecordBatch,
    RecordBatches,
};
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// Produce requests through kwire's own frame parser and generated Produce view: each
// partition's `records()` is the batch iterator under test.

/// (topic, partition, records bytes) of a Produce request frame.
type PartitionRecords<'a> = (String, i32, &'a [u8]);

fn produce_records(frame: &[u8]) -> (i16, Vec<PartitionRecords<'_>>) {
    let request = kwire::dispatch::parse_request(common::unframe(frame)).expect("the Produce frame parses");
    let kwire::messages::RequestBodyView::Produce(body) = request.body else {
        panic!("not a Produce request")
    };
    let mut out = Vec::new();
    for topic in body.topic_data() {
        for partition in topic.partition_data() {
            let batches = partition.records().expect("the clients send records");
            assert_eq!(batches.remaining(), batches.bytes(), "a fresh iterator starts at the first batch");
            out.push((topic.name().to_string(), partition.index(), batches.bytes()));
        }
    }
    (request.header.api_version(), out)
}

fn expected_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Null => None,
        Value::Object(m) if m.contains_key("utf8") => Some(m["utf8"].as_str().unwrap().as_bytes().to_vec()),
        Value::Object(m) if m.contains_key("hex") => Some(common::hex(m["hex"].as_str().unwrap())),
        other => panic!("unexpected value {other}"),
    }
}

fn index() -> Value {
    let text = std::fs::read_to_string(common::vectors_dir().join("records/index.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Decodes a records field (any codec) into owned tuples with the batch index.
type OwnedHeaders = Vec<(Vec<u8>, Option<Vec<u8>>)>;
type Flat = (String, i32, usize, Option<Vec<u8>>, Option<Vec<u8>>, OwnedHeaders, i64);
type FlatRecord = (Option<Vec<u8>>, Option<Vec<u8>>, OwnedHeaders, i64);

fn flatten(record: &Record<'_>) -> FlatRecord {
    (
        record.key().map(<[u8]>::to_vec),
        record.value().map(<[u8]>::to_vec),
        record.headers().map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec))).collect(),
        record.timestamp(),
    )
}

#[test]
fn client_frames_decode_to_their_records() {
    let index = index();
    let files = index["files"].as_object().unwrap();
    assert_eq!(files.len(), 19);
    let mut codecs_seen = std::collections::BTreeSet::new();
    let mut scratch = vec![0u8; 1 << 20];
    for (name, facts) in files {
        let frame = common::vector(&format!("records/{}", facts["request"].as_str().unwrap()));
        let (version, partitions) = produce_records(&frame);
        assert_eq!(i64::from(version), facts["api_version"].as_i64().unwrap(), "{name}");
        let layout = facts["layout"].as_array().unwrap();
        assert_eq!(partitions.len(), layout.len(), "{name}: partitions");
        let mut got: Vec<Flat> = Vec::new();
        for ((topic, partition, bytes), lay) in partitions.iter().zip(layout) {
            assert_eq!(topic, lay["topic"].as_str().unwrap(), "{name}");
            assert_eq!(i64::from(*partition), lay["partition"].as_i64().unwrap(), "{name}");
            assert_eq!(bytes.len() as i64, lay["records_bytes"].as_i64().unwrap(), "{name}");
            let mut batches = RecordBatches::new(bytes);
            let want_batches = lay["batches"].as_array().unwrap();
            let mut n = 0;
            for (bi, batch) in batches.by_ref().enumerate() {
                let batch = batch.unwrap_or_else(|e| panic!("{name}: {e}"));
                let want = &want_batches[bi];
                let h = batch.header();
                assert_eq!(h.base_offset, want["base_offset"].as_i64().unwrap(), "{name}");
                assert_eq!(i64::from(batch.batch_length()), want["batch_length"].as_i64().unwrap(), "{name}");
                assert_eq!(format!("{:08x}", batch.crc()), want["crc"].as_str().unwrap(), "{name}");
                assert_eq!(batch.computed_crc(), batch.crc(), "{name}: CRC-32C");
                assert_eq!(i64::from(batch.attributes().0), want["attributes"].as_i64().unwrap(), "{name}");
                assert_eq!(
                    i64::from(batch.records_count()),
                    want["records_count"].as_i64().unwrap(),
                    "{name}"
                );
                assert_eq!(i64::from(batch.last_offset_delta()), want["last_offset_delta"].as_i64().unwrap());
                assert_eq!(batch.base_timestamp(), want["base_timestamp"].as_i64().unwrap(), "{name}");
                assert_eq!(batch.max_timestamp(), want["max_timestamp"].as_i64().unwrap(), "{name}");
                assert_eq!(batch.producer_id(), want["producer_id"].as_i64().unwrap(), "{name}");
                assert_eq!(i64::from(batch.producer_epoch()), want["producer_epoch"].as_i64().unwrap());
                assert_eq!(i64::from(batch.base_sequence()), want["base_sequence"].as_i64().unwrap());
                assert_eq!(
                    i64::from(batch.partition_leader_epoch()),
                    want["partition_leader_epoch"].as_i64().unwrap()
                );
                assert_eq!(batch.is_transactional(), want["attributes"].as_i64().unwrap() & 0x10 != 0);
                let codec = batch.compression().unwrap();
                codecs_seen.insert(format!("{codec:?}"));
                // The slice path and the Vec path must agree.
                let records: Vec<_> = batch
                    .records_in(&mut scratch)
                    .unwrap_or_else(|e| panic!("{name}: {e}"))
                    .map(|r| r.unwrap_or_else(|e| panic!("{name}: {e}")))
                    .map(|r| {
                        assert_eq!(r.offset(), batch.base_offset() + i64::from(r.offset_delta()));
                        flatten(&r)
                    })
                    .collect();
                let mut vec = Vec::new();
                let again: Vec<_> =
                    batch.records_in_vec(&mut vec, 1 << 20).unwrap().map(|r| flatten(&r.unwrap())).collect();
                assert_eq!(records, again, "{name}");
                if codec == Compression::None {
                    let plain: Vec<_> = batch.records().unwrap().map(|r| flatten(&r.unwrap())).collect();
                    assert_eq!(records, plain, "{name}");
                } else {
                    assert_eq!(batch.records().unwrap_err().kind(), ErrorKind::Compressed(codec));
                }
                for (k, v, hs, ts) in records {
                    got.push((topic.clone(), *partition, bi, k, v, hs, ts));
                }
                n += 1;
            }
            assert!(!batches.partial(), "{name}");
            assert_eq!(n, want_batches.len(), "{name}");
        }
        let want = facts["records"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{name}: record count");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g.0, w["topic"].as_str().unwrap(), "{name}");
            assert_eq!(i64::from(g.1), w["partition"].as_i64().unwrap(), "{name}");
            assert_eq!(g.2 as i64, w["batch"].as_i64().unwrap(), "{name}");
            assert_eq!(g.3, expected_bytes(&w["key"]), "{name}: key of record {}", w["i"]);
            assert_eq!(g.4, expected_bytes(&w["value"]), "{name}: value of record {}", w["i"]);
            let headers: Vec<(Vec<u8>, Option<Vec<u8>>)> = w["headers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| (h["key"].as_str().unwrap().as_bytes().to_vec(), expected_bytes(&h["value"])))
                .collect();
            assert_eq!(g.5, headers, "{name}: headers of record {}", w["i"]);
            if let Some(ts) = w["timestamp"].as_i64() {
                assert_eq!(g.6, ts, "{name}: timestamp of record {}", w["i"]);
            }
        }
    }
    assert_eq!(codecs_seen.len(), 5, "every codec seen: {codecs_seen:?}");
}

// ---------------------------------------------------------------------------------------
// Encoding round trips.

fn encode(builder: &BatchBuilder<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    let n = builder.encode_to_vec(&mut out).unwrap();
    assert_eq!(n, out.len());
    out
}

fn sample_records<'a>(headers: &'a [NewHeader<'a>], big: &'a [u8]) -> Vec<NewRecord<'a>> {
    vec![
        NewRecord::new(Some(b"k-0"), Some(b"")).with_timestamp(1_700_000_000_000),
        NewRecord::new(None, Some(b"null key")).with_timestamp(1_700_000_001_000),
        NewRecord::new(Some(b""), None).with_timestamp(1_600_000_000_000),
        NewRecord::new(Some(b"k-3"), Some(big)).with_headers(headers),
        NewRecord::new(Some(b"k-4"), Some("héllo wörld — 日本語 🚀".as_bytes())),
    ]
}

#[test]
fn encode_and_read_back_every_codec() {
    let headers = [
        NewHeader { key: b"h1", value: Some(b"v1") },
        NewHeader { key: b"h1", value: Some(b"v1-dup") },
        NewHeader { key: b"h-empty", value: Some(b"") },
        NewHeader { key: b"h-null", value: None },
    ];
    let big: Vec<u8> = b"0123456789abcdef".iter().copied().cycle().take(10_240).collect();
    let records = sample_records(&headers, &big);
    for codec in
        [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
    {
        let mut b = BatchBuilder::new(1000, 1_700_000_000_000, &records);
        b.compression = codec;
        b.producer_id = 42;
        b.producer_epoch = 3;
        b.base_sequence = 7;
        b.partition_leader_epoch = 9;
        let bytes = encode(&b);
        if codec == Compression::None {
            // The slice encoder writes the same bytes, into a buffer of the exact size.
            let mut exact = vec![0u8; b.encoded_len().unwrap()];
            assert_eq!(b.encode(&mut exact).unwrap(), exact.len());
            assert_eq!(exact, bytes);
            let mut short = vec![0u8; exact.len() - 1];
            assert!(matches!(b.encode(&mut short).unwrap_err().kind(), ErrorKind::BufferTooSmall { .. }));
        } else {
            assert!(bytes.len() < 10_000, "{codec:?} compresses");
        }
        let batch = RecordBatch::new(&bytes).unwrap();
        batch.verify_crc().unwrap();
        assert_eq!(batch.compression().unwrap(), codec);
        assert_eq!((batch.base_offset(), batch.last_offset(), batch.next_offset()), (1000, 1004, 1005));
        assert_eq!((batch.producer_id(), batch.producer_epoch(), batch.base_sequence()), (42, 3, 7));
        assert_eq!(batch.partition_leader_epoch(), 9);
        assert_eq!(batch.max_timestamp(), 1_700_000_001_000);
        let mut vec = Vec::new();
        let got: Vec<_> = batch.records_in_vec(&mut vec, 1 << 20).unwrap().map(Result::unwrap).collect();
        assert_eq!(got.len(), 5);
        for (i, (r, want)) in got.iter().zip(&records).enumerate() {
            assert_eq!(r.offset(), 1000 + i as i64);
            assert_eq!(r.key(), want.key, "{codec:?} {i}");
            assert_eq!(r.value(), want.value, "{codec:?} {i}");
            assert_eq!(r.timestamp(), want.timestamp.unwrap_or(1_700_000_000_000));
            let hs: Vec<_> = r.headers().map(|h| (h.key, h.value)).collect();
            let want_hs: Vec<_> = want.headers.iter().map(|h| (h.key, h.value)).collect();
            assert_eq!(hs, want_hs);
        }
        // Null and empty stay apart.
        assert_eq!(got[0].value(), Some(&b""[..]));
        assert_eq!(got[2].value(), None);
        assert_eq!(got[1].key(), None);
        assert_eq!(got[2].key(), Some(&b""[..]));
        assert_eq!(got[2].timestamp_delta(), -100_000_000_000);
    }
}

#[test]
fn control_batches_are_typed() {
    let commit_key = [0u8, 0, 0, 1];
    let commit_value = [0u8, 0, 0, 0, 0, 5];
    let abort_key = [0u8, 0, 0, 0];
    let abort_value = [0u8, 0, 0xff, 0xff, 0xff, 0xff];
    let voters_key = [0u8, 0, 0, 6];
    let records = [
        NewRecord::new(Some(&commit_key), Some(&commit_value)),
        NewRecord::new(Some(&abort_key), Some(&abort_value)),
        NewRecord::new(Some(&voters_key), Some(b"\x00\x00")),
        NewRecord::new(Some(&[0, 0, 0x12, 0x34]), None),
    ];
    let mut b = BatchBuilder::new(5, 0, &records);
    b.control = true;
    b.transactional = true;
    let bytes = encode(&b);
    let batch = RecordBatch::new(&bytes).unwrap();
    assert!(batch.is_control() && batch.is_transactional());
    let recs: Vec<_> = batch.records().unwrap().map(Result::unwrap).collect();
    let c0 = recs[0].control().unwrap();
    assert_eq!(c0.kind, ControlRecordType::Commit);
    assert_eq!(c0.marker.unwrap().coordinator_epoch, 5);
    let c1 = recs[1].control().unwrap();
    assert_eq!(c1.kind, ControlRecordType::Abort);
    assert_eq!(c1.marker.unwrap().coordinator_epoch, -1);
    assert_eq!(recs[2].control().unwrap().kind, ControlRecordType::KRaftVoters);
    assert_eq!(recs[2].control().unwrap().value, Some(&b"\x00\x00"[..]));
    assert_eq!(recs[3].control().unwrap().kind, ControlRecordType::Other(0x1234));
    // A marker without its value, and a record outside a control batch, are errors.
    let bad = [NewRecord::new(Some(&commit_key), Some(&[0, 0]))];
    let mut b = BatchBuilder::new(0, 0, &bad);
    b.control = true;
    let bytes = encode(&b);
    let r = RecordBatch::new(&bytes).unwrap().records().unwrap().next().unwrap().unwrap();
    assert_eq!(r.control(), Err(ErrorKind::InvalidControlRecord));
    let plain = encode(&BatchBuilder::new(0, 0, &records));
    let r = RecordBatch::new(&plain).unwrap().records().unwrap().next().unwrap().unwrap();
    assert_eq!(r.control(), Err(ErrorKind::InvalidControlRecord));
}

#[test]
fn log_append_time_and_delete_horizon() {
    let records = [NewRecord::new(None, Some(b"v")).with_timestamp(10), NewRecord::new(None, Some(b"w"))];
    let mut b = BatchBuilder::new(0, 5, &records);
    b.timestamp_type = kwire::records::TimestampType::LogAppendTime;
    b.max_timestamp = Some(99);
    let bytes = encode(&b);
    let batch = RecordBatch::new(&bytes).unwrap();
    let ts: Vec<i64> = batch.records().unwrap().map(|r| r.unwrap().timestamp()).collect();
    assert_eq!(ts, [99, 99]);
    assert_eq!(batch.delete_horizon_ms(), None);
    let mut bytes = bytes;
    bytes[22] |= 0x40;
    fix_crc(&mut bytes);
    assert_eq!(RecordBatch::new(&bytes).unwrap().delete_horizon_ms(), Some(5));
}

// ---------------------------------------------------------------------------------------
// Hostile and malformed input.

fn fix_crc(batch: &mut [u8]) {
    let crc = kwire::records::crc::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
}

fn kind<T: std::fmt::Debug>(r: Result<T, kwire::records::Error>) -> ErrorKind {
    r.unwrap_err().kind()
}

/// The first error from iterating the records of the single batch in `bytes`.
fn first_record_error(bytes: &[u8]) -> ErrorKind {
    let batch = RecordBatch::new(bytes).unwrap();
    match batch.records() {
        Err(e) => e.kind(),
        Ok(mut it) => it.find_map(Result::err).expect("an error").kind(),
    }
}

/// A batch of one record whose body (after the length varint) is `body`, length `len`.
fn one_record_batch(len: i32, body: &[u8]) -> Vec<u8> {
    let mut batch = encode(&BatchBuilder::new(0, 0, &[]));
    batch[57..61].copy_from_slice(&1i32.to_be_bytes());
    let z = ((len << 1) ^ (len >> 31)) as u32;
    let mut v = z;
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        batch.push(if v == 0 { b } else { b | 0x80 });
        if v == 0 {
            break;
        }
    }
    batch.extend_from_slice(body);
    let len = (batch.len() - 12) as i32;
    batch[8..12].copy_from_slice(&len.to_be_bytes());
    fix_crc(&mut batch);
    batch
}

#[test]
fn a_61_byte_batch_claiming_2_pow_31_records() {
    let mut batch = encode(&BatchBuilder::new(0, 0, &[]));
    assert_eq!(batch.len(), 61);
    batch[57..61].copy_from_slice(&0x8000_0000u32.to_be_bytes());
    fix_crc(&mut batch);
    assert_eq!(first_record_error(&batch), ErrorKind::InvalidRecordCount(i32::MIN));
    batch[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
    fix_crc(&mut batch);
    assert_eq!(first_record_error(&batch), ErrorKind::RecordCountTooLarge { count: i32::MAX, max: 0 });
    // Compressed: refused before anything is decompressed.
    batch[22] = Compression::Zstd.id();
    fix_crc(&mut batch);
    let b = RecordBatch::new(&batch).unwrap();
    let mut buf = [0u8; 700];
    assert_eq!(kind(b.records_in(&mut buf)), ErrorKind::RecordCountTooLarge { count: i32::MAX, max: 100 });
    let mut vec = Vec::new();
    assert!(matches!(kind(b.records_in_vec(&mut vec, 1 << 30)), ErrorKind::RecordCountTooLarge { .. }));
    assert_eq!(vec.capacity(), 0);
}

#[test]
fn record_count_disagreeing_with_records() {
    let records = [NewRecord::new(None, Some(b"aaaaaaaaaa")), NewRecord::new(None, Some(b"bbbbbbbbbb"))];
    let mut bytes = encode(&BatchBuilder::new(0, 0, &records));
    bytes[57..61].copy_from_slice(&1i32.to_be_bytes());
    fix_crc(&mut bytes);
    assert_eq!(first_record_error(&bytes), ErrorKind::TrailingBytes(17));
    bytes[57..61].copy_from_slice(&3i32.to_be_bytes());
    fix_crc(&mut bytes);
    assert_eq!(first_record_error(&bytes), ErrorKind::TooFewRecords { declared: 3, found: 2 });
    bytes[57..61].copy_from_slice(&5i32.to_be_bytes());
    fix_crc(&mut bytes);
    assert_eq!(first_record_error(&bytes), ErrorKind::RecordCountTooLarge { count: 5, max: 4 });
}

#[test]
fn huge_and_negative_header_counts() {
    // attributes, ts delta, offset delta, key -1, value -1, header count.
    let huge = [0u8, 0, 0, 1, 1, 0xfe, 0xff, 0xff, 0xff, 0x07];
    assert_eq!(
        first_record_error(&one_record_batch(huge.len() as i32, &huge)),
        ErrorKind::HeaderCountTooLarge(0x3fff_ffff)
    );
    let neg = [0u8, 0, 0, 1, 1, 3];
    assert_eq!(
        first_record_error(&one_record_batch(neg.len() as i32, &neg)),
        ErrorKind::NegativeHeaderCount(-2)
    );
    // A header count of 3 with bytes for one header.
    let short = [0u8, 0, 0, 1, 1, 6, 2, b'h', 1];
    assert!(matches!(
        first_record_error(&one_record_batch(short.len() as i32, &short)),
        ErrorKind::HeaderCountTooLarge(3) | ErrorKind::RecordLengthMismatch { .. }
    ));
    // A negative header key length.
    let null_key = [0u8, 0, 0, 1, 1, 2, 1, 1];
    assert_eq!(
        first_record_error(&one_record_batch(null_key.len() as i32, &null_key)),
        ErrorKind::InvalidLength(-1)
    );
}

#[test]
fn record_lengths_disagreeing_with_contents() {
    let body = [0u8, 0, 0, 1, 1, 0];
    // Declared longer than the fields: bytes left inside the record.
    let mut longer = body.to_vec();
    longer.push(0);
    assert_eq!(
        first_record_error(&one_record_batch(7, &longer)),
        ErrorKind::RecordLengthMismatch { declared: 7, actual: 6 }
    );
    // Declared shorter: the fields run past it.
    assert_eq!(
        first_record_error(&one_record_batch(5, &body)),
        ErrorKind::RecordLengthMismatch { declared: 5, actual: u32::MAX }
    );
    // Declared past the end of the batch.
    assert!(matches!(first_record_error(&one_record_batch(60, &body)), ErrorKind::Truncated { .. }));
    // Negative record length; key length below -1.
    assert_eq!(first_record_error(&one_record_batch(-3, &body)), ErrorKind::InvalidLength(-3));
    let bad_key = [0u8, 0, 0, 3, 1, 0];
    assert_eq!(first_record_error(&one_record_batch(6, &bad_key)), ErrorKind::InvalidLength(-2));
}

#[test]
fn over_long_varints() {
    let long_ts = [0u8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 1, 1, 0];
    assert_eq!(
        first_record_error(&one_record_batch(long_ts.len() as i32, &long_ts)),
        ErrorKind::VarintTooLong
    );
    let long_offset = [0u8, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 1, 1, 0];
    assert_eq!(
        first_record_error(&one_record_batch(long_offset.len() as i32, &long_offset)),
        ErrorKind::VarintTooLong
    );
}

#[test]
fn bad_batch_framing() {
    let records = [NewRecord::new(None, Some(b"a"))];
    let good = encode(&BatchBuilder::new(0, 0, &records));
    // Every truncation of a two-batch field ends in a partial batch, never an error.
    let mut two = good.clone();
    two.extend_from_slice(&good);
    for cut in 0..two.len() {
        let mut it = RecordBatches::new(&two[..cut]);
        let n = it.by_ref().map(Result::unwrap).count();
        assert_eq!(n, usize::from(cut >= good.len()), "cut {cut}");
        assert_eq!(it.partial(), cut != 0 && cut != good.len(), "cut {cut}");
        if cut < good.len() {
            assert!(RecordBatch::new(&two[..cut]).is_err());
        }
    }
    // A batch length under the minimum, negative, or a bad magic: errors, and the end.
    for (len, want) in [
        (13, ErrorKind::BatchTooShort(13)),
        (-1, ErrorKind::BatchTooShort(-1)),
        (48, ErrorKind::BatchTooShort(48)),
    ] {
        let mut b = good.clone();
        b[8..12].copy_from_slice(&i32::to_be_bytes(len));
        let mut it = RecordBatches::new(&b);
        assert_eq!(it.next().unwrap().unwrap_err().kind(), want);
        assert!(it.next().is_none());
    }
    let mut b = good.clone();
    b[16] = 3;
    assert_eq!(kind(RecordBatches::new(&b).next().unwrap()), ErrorKind::UnsupportedMagic(3));
    b[16] = 1;
    assert_eq!(kind(RecordBatches::new(&b).next().unwrap()), ErrorKind::UnsupportedMagic(1));
    // A flipped payload bit fails the CRC when the records are asked for, not before.
    let mut b = good.clone();
    let last = b.len() - 1;
    b[last] ^= 1;
    let batch = RecordBatches::new(&b).next().unwrap().unwrap();
    assert!(matches!(kind(batch.records()), ErrorKind::CrcMismatch { .. }));
    assert!(batch.records_unverified().is_ok());
    // Codec 5 is unknown.
    let mut b = good.clone();
    b[22] = 5;
    fix_crc(&mut b);
    assert_eq!(first_record_error(&b), ErrorKind::UnknownCompression(5));
}

/// A batch whose records section is `raw` (uncompressed), compressed with `codec`.
fn compressed_batch(codec: Compression, count: i32, raw: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 61];
    kwire::records::compression::compress(codec, raw, &mut out).unwrap();
    let mut hdr = encode(&BatchBuilder::new(0, 0, &[]));
    hdr[22] = codec.id();
    hdr[57..61].copy_from_slice(&count.to_be_bytes());
    out[..61].copy_from_slice(&hdr);
    let len = (out.len() - 12) as i32;
    out[8..12].copy_from_slice(&len.to_be_bytes());
    fix_crc(&mut out);
    out
}

#[test]
fn decompression_bombs_stop_at_the_limit() {
    // 64 MiB of zero records inflating from a few KB (fewer for zstd and gzip).
    let raw = vec![0u8; 64 << 20];
    for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
        let bomb = compressed_batch(codec, 1000, &raw);
        assert!(bomb.len() < 4 << 20, "{codec:?}: {}", bomb.len());
        let batch = RecordBatch::new(&bomb).unwrap();
        let mut buf = vec![0u8; 1 << 20];
        assert_eq!(
            kind(batch.records_in(&mut buf)),
            ErrorKind::DecompressedTooLarge { limit: 1 << 20 },
            "{codec:?}"
        );
        let mut vec = Vec::new();
        assert_eq!(
            kind(batch.records_in_vec(&mut vec, 1 << 20)),
            ErrorKind::DecompressedTooLarge { limit: 1 << 20 },
            "{codec:?}"
        );
        assert!(vec.capacity() <= 2 << 20, "{codec:?}: grew to {}", vec.capacity());
    }
}

#[test]
fn corrupt_compressed_payloads_are_errors() {
    let records = [NewRecord::new(Some(b"key"), Some(b"value value value value"))];
    let raw = encode(&BatchBuilder::new(0, 0, &records))[61..].to_vec();
    for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
        let good = compressed_batch(codec, 1, &raw);
        let batch = RecordBatch::new(&good).unwrap();
        let mut buf = vec![0u8; 4096];
        let r: Vec<_> = batch
            .records_in(&mut buf)
            .unwrap()
            .map(Result::unwrap)
            .map(|r| r.value().map(<[u8]>::to_vec))
            .collect();
        assert_eq!(r, [Some(b"value value value value".to_vec())]);
        // Every truncation and every single-byte change of the payload: an error or
        // (for a change the codec cannot see) a result, never a panic.
        for cut in 61..good.len() {
            let mut b = good[..cut].to_vec();
            let len = (b.len() - 12) as i32;
            b[8..12].copy_from_slice(&len.to_be_bytes());
            fix_crc(&mut b);
            let batch = RecordBatch::new(&b).unwrap();
            if let Ok(it) = batch.records_in(&mut buf) {
                for r in it {
                    let _ = r;
                }
            }
        }
        for i in 61..good.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut b = good.clone();
                b[i] ^= x;
                fix_crc(&mut b);
                let batch = RecordBatch::new(&b).unwrap();
                let mut vec = Vec::new();
                if let Ok(it) = batch.records_in_vec(&mut vec, 4096) {
                    for r in it {
                        let _ = r;
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Legacy message sets (magic 0 and 1).

use kwire::records::legacy::LegacyMessages;

/// One legacy entry: offset, size, crc, magic, attributes, [timestamp], key, value.
fn legacy(
    offset: i64,
    magic: i8,
    attributes: i8,
    ts: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Vec<u8> {
    let mut m = vec![magic as u8, attributes as u8];
    if magic == 1 {
        m.extend_from_slice(&ts.to_be_bytes());
    }
    for f in [key, value] {
        match f {
            None => m.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(b) => {
                m.extend_from_slice(&(b.len() as i32).to_be_bytes());
                m.extend_from_slice(b);
            }
        }
    }
    let mut out = offset.to_be_bytes().to_vec();
    out.extend_from_slice(&((m.len() + 4) as i32).to_be_bytes());
    out.extend_from_slice(&kwire::records::crc::crc32(&m).to_be_bytes());
    out.extend_from_slice(&m);
    out
}

fn xerial(raw_snappy: &[u8]) -> Vec<u8> {
    let mut out = vec![0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1];
    out.extend_from_slice(&(raw_snappy.len() as u32).to_be_bytes());
    out.extend_from_slice(raw_snappy);
    out
}

/// An LZ4 frame with Kafka's pre-KIP-57 header checksum (over the magic number too).
fn lz4_broken_header(frame: &mut [u8]) {
    // Our encoder writes no content size: the checksum byte is at 6.
    let hc = (xxh32_ref(&frame[..6]) >> 8) as u8;
    frame[6] = hc;
}

/// A plain XXH32 (seed 0) for the test, written from the specification.
fn xxh32_ref(data: &[u8]) -> u32 {
    const P: [u32; 5] = [2654435761, 2246822519, 3266489917, 668265263, 374761393];
    assert!(data.len() < 16);
    let mut h = P[4].wrapping_add(data.len() as u32);
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        h = h
            .wrapping_add(u32::from_le_bytes(c.try_into().unwrap()).wrapping_mul(P[2]))
            .rotate_left(17)
            .wrapping_mul(P[3]);
    }
    for &b in chunks.remainder() {
        h = h.wrapping_add(u32::from(b).wrapping_mul(P[4])).rotate_left(11).wrapping_mul(P[0]);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P[1]);
    h ^= h >> 13;
    h = h.wrapping_mul(P[2]);
    h ^ (h >> 16)
}

#[test]
fn legacy_uncompressed_sets() {
    let mut set = legacy(10, 0, 0, 0, Some(b"k0"), Some(b"v0"));
    set.extend(legacy(11, 0, 0, 0, None, Some(b"")));
    set.extend(legacy(12, 1, 0, 1_600_000_000_000, Some(b""), None));
    set.extend(legacy(13, 1, 0x08, 1_700_000_000_000, Some(b"k3"), Some(b"v3")));
    let msgs: Vec<_> = LegacyMessages::new(&set).map(Result::unwrap).collect();
    assert_eq!(msgs.len(), 4);
    for m in &msgs {
        m.verify_crc().unwrap();
        assert_eq!(m.compression(), Ok(Compression::None));
    }
    assert_eq!(
        (msgs[0].offset(), msgs[0].magic(), msgs[0].key(), msgs[0].value()),
        (10, 0, Some(&b"k0"[..]), Some(&b"v0"[..]))
    );
    assert_eq!((msgs[1].key(), msgs[1].value(), msgs[1].timestamp()), (None, Some(&b""[..]), None));
    assert_eq!(
        (msgs[2].key(), msgs[2].value(), msgs[2].timestamp()),
        (Some(&b""[..]), None, Some(1_600_000_000_000))
    );
    assert_eq!(msgs[3].timestamp_type(), kwire::records::TimestampType::LogAppendTime);
    // Every cut of the set: a partial end, never an error.
    for cut in 0..set.len() {
        let mut it = LegacyMessages::new(&set[..cut]);
        for m in it.by_ref() {
            m.unwrap();
        }
        let boundary = [0, 30, 56, 90].contains(&cut);
        assert_eq!(it.partial(), !boundary, "cut {cut}");
    }
    // A flipped bit fails the CRC-32; a bad length is an error.
    let mut bad = set.clone();
    bad[29] ^= 1;
    assert!(matches!(
        LegacyMessages::new(&bad).next().unwrap().unwrap().verify_crc().unwrap_err().kind(),
        ErrorKind::CrcMismatch { .. }
    ));
    let mut bad = set.clone();
    bad[18..22].copy_from_slice(&(-5i32).to_be_bytes());
    assert_eq!(LegacyMessages::new(&bad).next().unwrap().unwrap_err().kind(), ErrorKind::InvalidLength(-5));
    // RecordBatches refuses legacy magic clearly.
    assert_eq!(RecordBatches::new(&set).next().unwrap().unwrap_err().kind(), ErrorKind::UnsupportedMagic(0));
}

#[test]
fn legacy_compressed_wrappers() {
    for magic in [0i8, 1] {
        // Inner offsets: relative in magic 1, absolute in magic 0.
        let first = if magic == 1 { 0 } else { 100 };
        let mut inner = Vec::new();
        for i in 0..3i64 {
            let v = format!("value-{i}");
            inner.extend(legacy(
                first + i,
                magic,
                0,
                1_000 + i,
                Some(format!("k{i}").as_bytes()),
                Some(v.as_bytes()),
            ));
        }
        let mut raw_snappy = Vec::new();
        kwire::records::compression::compress(Compression::Snappy, &inner, &mut raw_snappy).unwrap();
        let mut gz = Vec::new();
        kwire::records::compression::compress(Compression::Gzip, &inner, &mut gz).unwrap();
        let mut lz4 = Vec::new();
        kwire::records::compression::compress(Compression::Lz4, &inner, &mut lz4).unwrap();
        let mut lz4_broken = lz4.clone();
        lz4_broken_header(&mut lz4_broken);
        let cases: Vec<(i8, Vec<u8>, bool)> = vec![
            (1, gz, true),
            (2, xerial(&raw_snappy), true),
            (2, raw_snappy, true),
            (3, lz4.clone(), true),
            // Kafka skips the header checksum for magic 0 (KAFKA-3160) and checks it in 1.
            (3, lz4_broken, magic == 0),
        ];
        for (codec, payload, ok) in cases {
            for log_append in [false, true] {
                let attrs = codec | if log_append && magic == 1 { 0x08 } else { 0 };
                let wrapper = legacy(102, magic, attrs, 5_000, None, Some(&payload));
                let m = LegacyMessages::new(&wrapper).next().unwrap().unwrap();
                let mut buf = vec![0u8; 4096];
                let inner = match m.inner_in(&mut buf) {
                    Ok(it) => it,
                    Err(e) => {
                        assert!(!ok, "magic {magic} codec {codec}: {e}");
                        continue;
                    }
                };
                assert!(ok, "magic {magic} codec {codec}: broken lz4 header accepted");
                let got: Vec<_> = inner
                    .map(Result::unwrap)
                    .map(|m| {
                        m.verify_crc().unwrap();
                        (m.offset(), m.key().unwrap().to_vec(), m.value().unwrap().to_vec(), m.timestamp())
                    })
                    .collect();
                let want: Vec<_> = (0..3i64)
                    .map(|i| {
                        let ts = (magic == 1).then_some(if log_append { 5_000 } else { 1_000 + i });
                        (100 + i, format!("k{i}").into_bytes(), format!("value-{i}").into_bytes(), ts)
                    })
                    .collect();
                assert_eq!(got, want, "magic {magic} codec {codec}");
                let mut vec = Vec::new();
                assert_eq!(m.inner_in_vec(&mut vec, 4096).unwrap().count(), 3);
                // The limit holds here too.
                let mut small = [0u8; 16];
                assert!(matches!(
                    m.inner_in(&mut small).unwrap_err().kind(),
                    ErrorKind::DecompressedTooLarge { .. }
                ));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Differential: kafka-protocol's record decoder, and the fuzz target's property.

#[path = "fuzz_checks/records.rs"]
#[allow(dead_code)]
mod records_check;

/// Records as kafka-protocol sees them: its headers are an `IndexMap`, so a repeated key
/// keeps its first position and its last value.
type KpRecord =
    (i64, i64, Option<Vec<u8>>, Option<Vec<u8>>, Vec<(Vec<u8>, Option<Vec<u8>>)>, i64, i16, bool, bool);

fn ours_as_kp(field: &[u8]) -> Vec<KpRecord> {
    let mut out = Vec::new();
    let mut vec = Vec::new();
    for batch in RecordBatches::new(field) {
        let batch = batch.unwrap();
        for r in batch.records_in_vec(&mut vec, 1 << 24).unwrap() {
            let r = r.unwrap();
            let mut headers: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
            for h in r.headers() {
                match headers.iter_mut().find(|(k, _)| k == h.key) {
                    Some(slot) => slot.1 = h.value.map(<[u8]>::to_vec),
                    None => headers.push((h.key.to_vec(), h.value.map(<[u8]>::to_vec))),
                }
            }
            out.push((
                r.offset(),
                r.timestamp(),
                r.key().map(<[u8]>::to_vec),
                r.value().map(<[u8]>::to_vec),
                headers,
                batch.producer_id(),
                batch.producer_epoch(),
                batch.is_transactional(),
                batch.is_control(),
            ));
        }
    }
    out
}

fn kp(field: &[u8]) -> Result<Vec<KpRecord>, String> {
    let mut buf = bytes::Bytes::copy_from_slice(field);
    let sets =
        kafka_protocol::records::RecordBatchDecoder::decode_all(&mut buf).map_err(|e| e.to_string())?;
    Ok(sets
        .into_iter()
        .flat_map(|s| s.records)
        .map(|r| {
            (
                r.offset,
                r.timestamp,
                r.key.map(|b| b.to_vec()),
                r.value.map(|b| b.to_vec()),
                r.headers.into_iter().map(|(k, v)| (k.as_bytes().to_vec(), v.map(|b| b.to_vec()))).collect(),
                r.producer_id,
                r.producer_epoch,
                r.transactional,
                r.control,
            )
        })
        .collect())
}

#[test]
fn differential_against_kafka_protocol() {
    let index = index();
    let mut compared = 0;
    let mut kp_failed = Vec::new();
    for (name, facts) in index["files"].as_object().unwrap() {
        let frame = common::vector(&format!("records/{}", facts["request"].as_str().unwrap()));
        for (_, partition, field) in produce_records(&frame).1 {
            match kp(field) {
                Ok(theirs) => {
                    assert_eq!(ours_as_kp(field), theirs, "{name} partition {partition}");
                    compared += 1;
                }
                Err(e) => kp_failed.push(format!("{name}/{partition}: {e}")),
            }
        }
    }
    // Generated batches: random keys, values and headers (duplicate keys included), every
    // codec, several batches per field.
    let mut rng = common::XorShift(0x05ee_d4ec_04d5);
    for round in 0..60 {
        let codec =
            [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
                [round % 5];
        let mut field = Vec::new();
        for b in 0..1 + rng.next() % 3 {
            let n = (rng.next() % 20) as usize;
            let keys: Vec<Vec<u8>> = (0..n).map(|_| rng.input(20)).collect();
            let values: Vec<Vec<u8>> = (0..n).map(|_| rng.bytes(300)).collect();
            let hkeys: Vec<Vec<u8>> = (0..4).map(|_| rng.text(6)).collect();
            let headers: Vec<NewHeader<'_>> = (0..(rng.next() % 5) as usize)
                .map(|i| NewHeader { key: &hkeys[i % 2], value: (i % 3 != 2).then_some(&hkeys[i][..]) })
                .collect();
            let records: Vec<NewRecord<'_>> = (0..n)
                .map(|i| {
                    let key = (!rng.next().is_multiple_of(4)).then_some(&keys[i][..]);
                    let value = (!rng.next().is_multiple_of(5)).then_some(&values[i][..]);
                    NewRecord::new(key, value)
                        .with_headers(&headers)
                        .with_timestamp(1_700_000_000_000 + (rng.next() % 5000) as i64 - 2500)
                })
                .collect();
            let mut builder = BatchBuilder::new(1000 * b as i64, 1_700_000_000_000, &records);
            builder.compression = codec;
            builder.producer_id = 77;
            builder.producer_epoch = 1;
            builder.transactional = rng.next().is_multiple_of(2);
            builder.encode_to_vec(&mut field).unwrap();
        }
        let theirs = kp(&field).unwrap_or_else(|e| panic!("round {round} {codec:?}: {e}"));
        assert_eq!(ours_as_kp(&field), theirs, "round {round} {codec:?}");
        compared += 1;
    }
    eprintln!("compared {compared} fields; kafka-protocol failed on {}: {kp_failed:?}", kp_failed.len());
    assert!(compared >= 100);
}

fn replay_dir(dir: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut n = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_file() {
            let data = std::fs::read(&path).unwrap();
            if std::panic::catch_unwind(|| records_check::records(&data)).is_err() {
                panic!("{} fails the records fuzz check", path.display());
            }
            n += 1;
        }
    }
    n
}

#[test]
fn fuzz_corpus_and_crashes_replay() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let n = replay_dir(&root.join("fuzz/corpus/records"));
    assert!(n >= 20, "fuzz/corpus/records has {n} inputs");
    replay_dir(&root.join("tests/fuzz_regressions/records"));
}

#[test]
fn views_agree_with_the_reference_on_mutations() {
    // Every vector field, and single-byte mutations of it (with and without a fixed CRC),
    // through the fuzz target's property.
    let index = index();
    let mut rng = common::XorShift(77);
    for facts in index["files"].as_object().unwrap().values() {
        let frame = common::vector(&format!("records/{}", facts["request"].as_str().unwrap()));
        for (_, _, field) in produce_records(&frame).1 {
            for sel in [0u8, 1, 2, 3] {
                let mut data = vec![sel];
                data.extend_from_slice(field);
                records_check::records(&data);
            }
            for _ in 0..40 {
                let mut data = vec![(rng.next() % 4) as u8];
                data.extend_from_slice(field);
                let i = 1 + (rng.next() as usize) % field.len();
                data[i] ^= 1 << (rng.next() % 8);
                records_check::records(&data);
                // The same mutation with the CRC fixed, so the records are reached.
                let mut fixed = data.clone();
                let len = i32::from_be_bytes(fixed[9..13].try_into().unwrap());
                if len >= 49 && 13 + len as usize <= fixed.len() {
                    let end = 13 + len as usize;
                    let crc = kwire::records::crc::crc32c(&fixed[22..end]);
                    fixed[18..22].copy_from_slice(&crc.to_be_bytes());
                    records_check::records(&fixed);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The reference decoder for legacy message sets, against the views.

/// A legacy field: two uncompressed v0 messages, a v1 gzip wrapper with relative inner offsets
/// (gaps included), a v1 log-append-time LZ4 wrapper, a v0 snappy wrapper (absolute inner
/// offsets), then an uncompressed v1 message.
fn legacy_reference_field() -> Vec<u8> {
    let inner = |magic: i8, offsets: &[i64]| -> Vec<u8> {
        let mut set = Vec::new();
        for (i, &o) in offsets.iter().enumerate() {
            let key = (i % 2 == 0).then_some(format!("k{o}").into_bytes());
            set.extend(legacy(
                o,
                magic,
                0,
                2_000 + i as i64,
                key.as_deref(),
                Some(format!("v{o}").as_bytes()),
            ));
        }
        set
    };
    let compressed = |codec: Compression, set: &[u8]| {
        let mut out = Vec::new();
        kwire::records::compression::compress(codec, set, &mut out).unwrap();
        out
    };
    let mut field = legacy(10, 0, 0, 0, Some(b"a"), None);
    field.extend(legacy(11, 0, 0, 0, None, Some(b"")));
    field.extend(legacy(
        17,
        1,
        1,
        3_000,
        None,
        Some(&compressed(Compression::Gzip, &inner(1, &[0, 1, 4, 6]))),
    ));
    field.extend(legacy(
        20,
        1,
        3 | 0x08,
        9_000,
        None,
        Some(&compressed(Compression::Lz4, &inner(1, &[0, 2]))),
    ));
    field.extend(legacy(0, 0, 2, 0, None, Some(&compressed(Compression::Snappy, &inner(0, &[21, 22, 23])))));
    field.extend(legacy(24, 1, 0, 4_000, Some(b"last"), Some(b"x")));
    field
}

#[test]
fn legacy_reference_reads_wrappers_as_the_views_do() {
    use kwire::records::reference::decode_legacy;
    let field = legacy_reference_field();
    let owned = decode_legacy(&field, 1 << 16).unwrap();
    assert!(!owned.partial);
    assert_eq!(owned.messages.len(), 6);
    assert!(owned.messages.iter().all(|m| m.crc_valid));
    assert_eq!(owned.messages[0].inner, None);
    assert_eq!(
        (owned.messages[1].key.as_deref(), owned.messages[1].value.as_deref()),
        (None, Some(&b""[..]))
    );
    let inner = |i: usize| -> Vec<(i64, Option<i64>, i8)> {
        owned.messages[i]
            .inner
            .clone()
            .unwrap()
            .unwrap()
            .iter()
            .map(|m| (m.offset, m.timestamp, m.attributes))
            .collect()
    };
    // Magic 1: wrapper offset 17 less the last relative offset 6, plus each relative offset.
    assert_eq!(
        inner(2),
        [(11, Some(2_000), 0), (12, Some(2_001), 0), (15, Some(2_002), 0), (17, Some(2_003), 0)]
    );
    // Log-append time: the wrapper's timestamp, and the attribute bit.
    assert_eq!(inner(3), [(18, Some(9_000), 8), (20, Some(9_000), 8)]);
    // Magic 0: absolute inner offsets, no timestamps.
    assert_eq!(inner(4), [(21, None, 0), (22, None, 0), (23, None, 0)]);
    assert_eq!(owned.messages[5].inner, None);
    assert_eq!(records_check::legacy_through_views(&field, 1 << 16), Ok(owned.clone()));

    // Every cut: a partial end (never an error), as the views.
    for cut in 0..field.len() {
        let r = decode_legacy(&field[..cut], 1 << 16).unwrap();
        assert_eq!(records_check::legacy_through_views(&field[..cut], 1 << 16), Ok(r.clone()), "cut {cut}");
        assert_eq!(r.messages[..], owned.messages[..r.messages.len()]);
    }
    // A limit below a wrapper's inner set: that wrapper's error, the set goes on.
    let small = decode_legacy(&field, 64).unwrap();
    assert!(matches!(small.messages[2].inner, Some(Err(ErrorKind::DecompressedTooLarge { .. }))));
    assert_eq!(small.messages[5], owned.messages[5]);
    assert_eq!(records_check::legacy_through_views(&field, 64), Ok(small));
}

#[test]
fn legacy_reference_errors_match_the_views() {
    use kwire::records::reference::decode_legacy;
    let check = |field: &[u8]| {
        let reference = decode_legacy(field, 4096);
        let views = records_check::legacy_through_views(field, 4096);
        match (&reference, &views) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind()),
            _ => panic!("reference {reference:?}, views {views:?}"),
        }
        reference
    };
    let gz = |set: &[u8]| {
        let mut out = Vec::new();
        kwire::records::compression::compress(Compression::Gzip, set, &mut out).unwrap();
        out
    };
    let inner_err = |field: &[u8]| check(field).unwrap().messages[0].inner.clone().unwrap().unwrap_err();
    let one = legacy(0, 1, 0, 5, Some(b"k"), Some(b"v"));

    // Framing: a magic-2 entry, a length below 14, an unknown magic, a negative length.
    let mut v2 = one.clone();
    v2[16] = 2;
    assert_eq!(check(&v2).unwrap_err().kind(), ErrorKind::UnsupportedMagic(2));
    let mut short = one.clone();
    short[8..12].copy_from_slice(&13i32.to_be_bytes());
    assert_eq!(check(&short).unwrap_err().kind(), ErrorKind::BatchTooShort(13));
    let mut magic = one.clone();
    magic[16] = 7;
    assert_eq!(check(&magic).unwrap_err().kind(), ErrorKind::UnsupportedMagic(7));
    let mut neg = one.clone();
    neg[26..30].copy_from_slice(&(-2i32).to_be_bytes());
    assert_eq!(check(&neg).unwrap_err().kind(), ErrorKind::InvalidLength(-2));
    // A length longer than the fields: trailing bytes.
    let mut trailing = one.clone();
    trailing.push(0);
    trailing[8..12].copy_from_slice(&(i32::from_be_bytes(one[8..12].try_into().unwrap()) + 1).to_be_bytes());
    assert_eq!(check(&trailing).unwrap_err().kind(), ErrorKind::TrailingBytes(1));

    // Wrappers: a bad CRC, zstd and ids 5-7, an inner message of the other magic, a
    // compressed inner message, an inner set cut short, a nonsense compressed value.
    let mut bad_crc = legacy(5, 1, 1, 0, None, Some(&gz(&one)));
    bad_crc[13] ^= 0x40;
    assert!(matches!(inner_err(&bad_crc), ErrorKind::CrcMismatch { .. }));
    assert!(!check(&bad_crc).unwrap().messages[0].crc_valid);
    assert_eq!(inner_err(&legacy(5, 1, 4, 0, None, Some(b"x"))), ErrorKind::UnknownCompression(4));
    assert_eq!(inner_err(&legacy(5, 0, 6, 0, None, Some(b"x"))), ErrorKind::UnknownCompression(6));
    assert_eq!(inner_err(&legacy(5, 0, 1, 0, None, Some(&gz(&one)))), ErrorKind::UnsupportedMagic(1));
    let nested = legacy(0, 1, 1, 0, None, Some(&gz(&one)));
    assert_eq!(
        inner_err(&legacy(5, 1, 1, 0, None, Some(&gz(&nested)))),
        ErrorKind::Decompress("compressed inner message")
    );
    assert_eq!(
        inner_err(&legacy(5, 1, 1, 0, None, Some(&gz(&one[..20])))),
        ErrorKind::Truncated { needed: 26, available: 20 }
    );
    assert_eq!(inner_err(&legacy(5, 1, 1, 0, None, Some(&gz(&v2)))), ErrorKind::UnsupportedMagic(2));
    assert!(matches!(inner_err(&legacy(5, 1, 1, 0, None, Some(b"not gzip"))), ErrorKind::Decompress(_)));
    // A null wrapper value decompresses as empty bytes (gzip: an error; both agree).
    let _ = check(&legacy(5, 1, 1, 0, None, None));
}

#[test]
fn legacy_reference_agrees_on_mutations() {
    // The legacy field and single-byte mutations of it, alone and as the inner set of a valid
    // wrapper (every codec, both magics, log-append time), through the fuzz property.
    let field = legacy_reference_field();
    let mut rng = common::XorShift(0x1e9a);
    for sel in 0u8..=255 {
        if sel & 4 == 0 {
            continue;
        }
        let mut data = vec![sel];
        data.extend_from_slice(&field);
        records_check::records(&data);
        for _ in 0..12 {
            let mut m = data.clone();
            let i = 1 + (rng.next() as usize) % field.len();
            m[i] ^= 1 << (rng.next() % 8);
            records_check::records(&m);
            let cut = 1 + (rng.next() as usize) % field.len();
            records_check::records(&m[..cut]);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Zero allocations on the view and encode paths.

use common::counting;

#[global_allocator]
static GLOBAL: counting::Counting = counting::Counting;

fn walk(field: &[u8], scratch: &mut [u8]) -> u64 {
    let mut sum = 0u64;
    let mut batches = RecordBatches::new(field);
    for batch in batches.by_ref() {
        let batch = batch.unwrap();
        sum = sum.wrapping_add(batch.header().producer_id as u64);
        for r in batch.records_in(scratch).unwrap() {
            let r = r.unwrap();
            sum = sum.wrapping_add(r.offset() as u64 + r.timestamp() as u64);
            sum = sum.wrapping_add(
                r.key().map_or(0, <[u8]>::len) as u64 + r.value().map_or(0, <[u8]>::len) as u64,
            );
            for h in r.headers() {
                sum = sum.wrapping_add(h.key.len() as u64 + h.value.map_or(0, <[u8]>::len) as u64);
            }
        }
    }
    assert!(!batches.partial());
    sum
}

#[test]
fn views_and_encoding_do_not_allocate() {
    let index = index();
    let mut scratch = vec![0u8; 1 << 20];
    let mut checked = std::collections::BTreeMap::new();
    for (name, facts) in index["files"].as_object().unwrap() {
        let frame = common::vector(&format!("records/{}", facts["request"].as_str().unwrap()));
        let codec = facts["compression"].as_str().unwrap().to_string();
        for (_, _, field) in produce_records(&frame).1 {
            let (n, sum) = counting::allocations(|| walk(field, &mut scratch));
            assert!(sum > 0);
            // Uncompressed, lz4 and snappy into a caller's buffer allocate nothing; gzip
            // (flate2's inflate state) and zstd (a decompression context) do, per batch.
            if ["none", "lz4", "snappy"].contains(&codec.as_str()) {
                assert_eq!(n, 0, "{name}: {n} allocations");
            }
            checked.entry(codec.clone()).or_insert(n);
        }
    }
    // Encoding into a buffer.
    let headers = [NewHeader { key: b"h", value: Some(b"v") }];
    let records = [NewRecord::new(Some(b"k"), Some(b"v")).with_headers(&headers); 10];
    let builder = BatchBuilder::new(0, 0, &records);
    let mut buf = [0u8; 512];
    let (n, len) = counting::allocations(|| builder.encode(&mut buf).unwrap());
    assert_eq!(n, 0);
    let (n, count) =
        counting::allocations(|| RecordBatch::new(&buf[..len]).unwrap().records().unwrap().count());
    assert_eq!((n, count), (0, 10));
    eprintln!("allocations per field by codec: {checked:?}");
}

// ---------------------------------------------------------------------------------------
// Codec layouts the clients' vectors do not show.

/// 300 KB with matches that reach back across 64 KB block boundaries.
fn compressible() -> Vec<u8> {
    let mut rng = common::XorShift(3);
    let unit: Vec<u8> = (0..40_000).map(|_| b'a' + (rng.next() % 20) as u8).collect();
    let mut out = Vec::new();
    while out.len() < 300_000 {
        out.extend_from_slice(&unit[..(rng.next() % 40_000) as usize]);
        out.extend_from_slice(&rng.bytes(50));
    }
    out
}

fn decompress_both(codec: Compression, input: &[u8], want: &[u8]) {
    use kwire::records::compression::{decompress_into, decompress_to_vec};
    let mut buf = vec![0u8; want.len() + 10];
    let n = decompress_into(codec, input, &mut buf).unwrap_or_else(|e| panic!("{codec:?}: {e}"));
    assert!(buf[..n] == *want, "{codec:?}: slice output differs");
    let mut vec = Vec::new();
    decompress_to_vec(codec, input, &mut vec, want.len()).unwrap();
    assert!(vec == want, "{codec:?}: Vec output differs");
    let mut short = vec![0u8; want.len() - 1];
    assert_eq!(
        decompress_into(codec, input, &mut short).unwrap_err().kind(),
        ErrorKind::DecompressedTooLarge { limit: want.len() as u64 - 1 },
        "{codec:?}"
    );
    assert_eq!(
        decompress_to_vec(codec, input, &mut vec, want.len() - 1).unwrap_err().kind(),
        ErrorKind::DecompressedTooLarge { limit: want.len() as u64 - 1 },
        "{codec:?}"
    );
}

#[test]
fn lz4_frames_in_every_layout() {
    use lz4_c::liblz4::BlockChecksum;
    use lz4_c::{BlockMode, BlockSize, ContentChecksum};
    use std::io::Write;
    let data = compressible();
    let mut layouts = 0;
    for linked in [true, false] {
        for block_sum in [false, true] {
            for content_sum in [false, true] {
                for (size, with_len) in
                    [(BlockSize::Max64KB, false), (BlockSize::Max256KB, true), (BlockSize::Max4MB, false)]
                {
                    let mut b = lz4_c::EncoderBuilder::new();
                    b.block_size(size)
                        .block_mode(if linked { BlockMode::Linked } else { BlockMode::Independent })
                        .block_checksum(if block_sum {
                            BlockChecksum::BlockChecksumEnabled
                        } else {
                            BlockChecksum::NoBlockChecksum
                        })
                        .checksum(if content_sum {
                            ContentChecksum::ChecksumEnabled
                        } else {
                            ContentChecksum::NoChecksum
                        });
                    if with_len {
                        b.content_size(data.len() as u64);
                    }
                    let mut e = b.build(Vec::new()).unwrap();
                    e.write_all(&data).unwrap();
                    let (frame, r) = e.finish();
                    r.unwrap();
                    decompress_both(Compression::Lz4, &frame, &data);
                    // A flipped byte in the last block or checksum: an error, never a panic
                    // or wrong output passed off as right (with a checksum).
                    let mut bad = frame.clone();
                    let i = bad.len() - 6;
                    bad[i] ^= 0x55;
                    let mut out = vec![0u8; data.len()];
                    let r = kwire::records::compression::decompress_into(Compression::Lz4, &bad, &mut out);
                    if block_sum || content_sum {
                        assert!(r.is_err(), "corruption passed a checksum");
                    }
                    layouts += 1;
                }
            }
        }
    }
    assert_eq!(layouts, 24);
}

#[test]
fn zstd_gzip_and_snappy_framings() {
    use std::io::Write;
    let data = compressible();
    // zstd: streamed (no content size), and two frames back to back.
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    e.write_all(&data).unwrap();
    let streamed = e.finish().unwrap();
    assert!(matches!(zstd::zstd_safe::get_frame_content_size(&streamed), Ok(None)));
    decompress_both(Compression::Zstd, &streamed, &data);
    let half = data.len() / 2;
    let mut two = zstd::bulk::compress(&data[..half], 1).unwrap();
    two.extend(zstd::bulk::compress(&data[half..], 1).unwrap());
    decompress_both(Compression::Zstd, &two, &data);
    // gzip: two members back to back (Java's GZIPInputStream reads both).
    let mut two = Vec::new();
    for part in [&data[..half], &data[half..]] {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(part).unwrap();
        two.extend(e.finish().unwrap());
    }
    decompress_both(Compression::Gzip, &two, &data);
    // snappy: xerial with several blocks (snappy-java writes 32 KB blocks), and raw.
    let mut x = vec![0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1];
    for chunk in data.chunks(32 * 1024) {
        let block = snap::raw::Encoder::new().compress_vec(chunk).unwrap();
        x.extend_from_slice(&(block.len() as u32).to_be_bytes());
        x.extend_from_slice(&block);
    }
    decompress_both(Compression::Snappy, &x, &data);
    decompress_both(Compression::Snappy, &snap::raw::Encoder::new().compress_vec(&data).unwrap(), &data);
    // A xerial block length past the end is an error.
    let mut bad = x.clone();
    bad[16..20].copy_from_slice(&u32::MAX.to_be_bytes());
    let mut out = vec![0u8; data.len()];
    assert!(matches!(
        kwire::records::compression::decompress_into(Compression::Snappy, &bad, &mut out).unwrap_err().kind(),
        ErrorKind::Decompress(_)
    ));
}

#[test]
fn mixed_entries_in_one_field() {
    use kwire::records::legacy::{Entries, Entry};
    let records = [NewRecord::new(Some(b"k"), Some(b"v2"))];
    let mut field = legacy(0, 0, 0, 0, Some(b"k0"), Some(b"v0"));
    field.extend(legacy(1, 1, 0, 5, Some(b"k1"), Some(b"v1")));
    field.extend(encode(&BatchBuilder::new(2, 0, &records)));
    let cut = field.len() - 3;
    let mut it = Entries::new(&field);
    let kinds: Vec<_> = it
        .by_ref()
        .map(|e| match e.unwrap() {
            Entry::Legacy(m) => (m.offset(), m.value().unwrap().to_vec()),
            Entry::Batch(b) => {
                let r = b.records().unwrap().next().unwrap().unwrap();
                (r.offset(), r.value().unwrap().to_vec())
            }
        })
        .collect();
    assert_eq!(kinds, [(0, b"v0".to_vec()), (1, b"v1".to_vec()), (2, b"v2".to_vec())]);
    assert!(!it.partial());
    let mut it = Entries::new(&field[..cut]);
    assert_eq!(it.by_ref().count(), 2);
    assert!(it.partial());
}
