//! `kwire::records::validate` held against Apache Kafka's own `LogValidator` (kafka-storage, the
//! version of `tests/kafka/VERSION`), on the same bytes and configuration.
//!
//! Each case is one Produce partition's `records` field and a topic configuration (base offset,
//! leader epoch, clock, timestamp type and window, topic codec, compaction, `max.message.bytes`,
//! Produce version). The Java harness (`tests/java/harness`, `ValidateMode`) runs what a broker
//! runs: `ProduceRequest.validateRecords`, the checks of `UnifiedLog.analyzeAndValidateRecords`
//! (written out, the method being private), then `LogValidator.validateMessagesAndAssignOffsets`.
//! kwire runs `validate_and_assign_with`. They must agree:
//!
//! - both accept: the validated bytes are identical, and so are the last offset, the max
//!   timestamp and the log-append time;
//! - both reject: the same error code, and the same record errors (batch indices; the message
//!   too for timestamps out of range);
//! - kwire's `ConversionRequired` where Kafka rebuilds the batch (`messageSizeMaybeChanged`).
//!
//! The cases: every partition of the captured client frames of `tests/vectors/records`
//! (kafka-python and kafkajs, every codec) under several configurations; batches built by kwire's
//! `BatchBuilder` from a seeded stream (every codec, idempotent and transactional, headers, null
//! keys and values, random timestamps and configurations); and hostile ones (bad CRC, wrong
//! counts, magics, base offsets, offset deltas, control and producer fields, timestamps out of
//! range, producer log-append time, cut-short and doubled batches, unknown codecs, zstd before
//! Produce v7, oversized batches, random bit flips in the records with the CRC fixed, and an
//! inflate bomb). Without Java or Maven the test fails, as the other harness tests do.

mod common;
use common::java;

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;

use std::fmt::Write as _;

use common::XorShift;
use kwire::ErrorCode;
use kwire::records::validate::{
    Conversion, RecordError, RecordErrorKind, TopicCompression, ValidateConfig, ValidateError, Validated,
    validate_and_assign_with,
};
use kwire::records::{BatchBuilder, Compression, NewHeader, NewRecord, RecordBatches, TimestampType, crc};
use serde_json::{Value, json};

const SEED: u64 = 0x7661_6c69_6461_7465;
/// kwire's inflate limit (its scratch buffer), and Kafka's record body limit in the bomb case.
const LIMIT: usize = 1 << 22;
const DEFAULT_MAX_RECORD_BODY: usize = 2_147_483_639;
const NOW: i64 = 1_700_000_100_000;

struct Case {
    name: String,
    field: Vec<u8>,
    config: ValidateConfig,
    limit: usize,
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn codec_name(c: Compression) -> &'static str {
    match c {
        Compression::None => "none",
        Compression::Gzip => "gzip",
        Compression::Snappy => "snappy",
        Compression::Lz4 => "lz4",
        Compression::Zstd => "zstd",
    }
}

fn line(case: &Case) -> String {
    let c = &case.config;
    let spec = json!({
        "hex": hex(&case.field),
        "baseOffset": c.base_offset,
        "leaderEpoch": c.partition_leader_epoch,
        "now": c.now_ms,
        "timestampType": match c.timestamp_type {
            TimestampType::CreateTime => "CREATE_TIME",
            TimestampType::LogAppendTime => "LOG_APPEND_TIME",
        },
        "before": c.timestamp_before_max_ms,
        "after": c.timestamp_after_max_ms,
        "compression": match c.compression {
            TopicCompression::Producer => "producer",
            TopicCompression::Codec(codec) => codec_name(codec),
        },
        "compacted": c.compacted,
        "maxMessageBytes": c.max_message_bytes,
        "produceVersion": c.produce_version,
        "maxRecordBodySize": if case.limit == LIMIT { DEFAULT_MAX_RECORD_BODY } else { case.limit },
    });
    format!("validate {spec}")
}

fn fix_crc(b: &mut [u8]) {
    if b.len() >= 61 {
        let len = (i32::from_be_bytes(b[8..12].try_into().unwrap()).max(0) as usize + 12).min(b.len());
        let c = crc::crc32c(&b[21..len.max(21)]);
        b[17..21].copy_from_slice(&c.to_be_bytes());
    }
}

// ------------------------------------------------------------------ cases

/// (name, produce version, records field) of every partition of the captured client frames.
fn vector_fields() -> Vec<(String, i16, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, rel) in common::hex_files("records/requests") {
        let frame = common::vector(&rel);
        let request =
            kwire::dispatch::parse_request(common::unframe(&frame)).expect("the Produce frame parses");
        let version = request.header.api_version();
        let kwire::messages::RequestBodyView::Produce(body) = request.body else {
            panic!("{name}: not Produce")
        };
        for topic in body.topic_data() {
            for partition in topic.partition_data() {
                let field = partition.records().expect("records").bytes().to_vec();
                out.push((format!("{name}/{}-{}", topic.name(), partition.index()), version, field));
            }
        }
    }
    out
}

fn max_record_timestamp(field: &[u8]) -> i64 {
    let mut scratch = vec![0u8; LIMIT];
    let mut max = i64::MIN;
    for batch in RecordBatches::new(field) {
        for r in batch.unwrap().records_in(&mut scratch).unwrap() {
            max = max.max(r.unwrap().timestamp());
        }
    }
    max
}

fn vector_cases(out: &mut Vec<Case>) {
    for (name, version, field) in vector_fields() {
        let now = max_record_timestamp(&field) + 1_000;
        let codec = RecordBatches::new(&field).next().unwrap().unwrap().compression().unwrap();
        let base = |offset: i64| {
            let mut c = ValidateConfig::new(offset, now);
            c.produce_version = version;
            c.partition_leader_epoch = 3;
            c
        };
        let mut variants: Vec<(&str, ValidateConfig)> =
            vec![("create-time", base(0)), ("offset 123456789", base(123_456_789))];
        let mut lat = base(77);
        lat.timestamp_type = TimestampType::LogAppendTime;
        variants.push(("log-append-time", lat));
        let mut compacted = base(5);
        compacted.compacted = true;
        variants.push(("compacted", compacted));
        let mut window = base(5);
        window.timestamp_before_max_ms = 2_000;
        variants.push(("before 2 s", window));
        let mut future = base(5);
        future.now_ms = now - 20_000;
        future.timestamp_after_max_ms = 10_000;
        variants.push(("after 10 s", future));
        let mut same = base(9);
        same.compression = TopicCompression::Codec(codec);
        variants.push(("topic codec = batch codec", same));
        let mut other = base(9);
        other.compression = TopicCompression::Codec(if codec == Compression::Gzip {
            Compression::Lz4
        } else {
            Compression::Gzip
        });
        variants.push(("topic codec differs", other));
        let mut v3 = base(1);
        v3.produce_version = 3;
        variants.push(("produce v3", v3));
        let mut small = base(1);
        small.max_message_bytes = field.len() as i32 - 1;
        variants.push(("max.message.bytes", small));
        for (variant, config) in variants {
            out.push(Case {
                name: format!("vector {name} [{variant}]"),
                field: field.clone(),
                config,
                limit: LIMIT,
            });
        }
    }
}

struct Gen {
    rng: XorShift,
}

impl Gen {
    fn below(&mut self, n: u64) -> u64 {
        self.rng.next() % n
    }

    fn codec(&mut self) -> Compression {
        [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
            [self.below(5) as usize]
    }

    /// A batch from kwire's builder: up to 12 records, random fields.
    fn batch(&mut self, codec: Compression) -> (Vec<u8>, i64) {
        let n = 1 + self.below(12) as usize;
        let base_ts = NOW - 50_000 + self.below(100_000) as i64;
        let keys: Vec<Option<Vec<u8>>> =
            (0..n).map(|_| (self.below(4) != 0).then(|| self.rng.bytes(12))).collect();
        let values: Vec<Option<Vec<u8>>> =
            (0..n).map(|_| (self.below(6) != 0).then(|| self.rng.bytes(300))).collect();
        let hkeys: Vec<Vec<u8>> = (0..n).map(|_| self.rng.text(8)).collect();
        let hvals: Vec<Option<Vec<u8>>> =
            (0..n).map(|_| (self.below(3) != 0).then(|| self.rng.bytes(8))).collect();
        let headers: Vec<[NewHeader<'_>; 1]> =
            (0..n).map(|i| [NewHeader { key: &hkeys[i], value: hvals[i].as_deref() }]).collect();
        let stamps: Vec<i64> = (0..n).map(|_| base_ts + self.below(20_000) as i64 - 10_000).collect();
        let hdr_flags: Vec<bool> = (0..n).map(|_| self.below(3) == 0).collect();
        let records: Vec<NewRecord<'_>> = (0..n)
            .map(|i| {
                let r = NewRecord::new(keys[i].as_deref(), values[i].as_deref()).with_timestamp(stamps[i]);
                if hdr_flags[i] { r.with_headers(&headers[i]) } else { r }
            })
            .collect();
        let mut b = BatchBuilder::new(0, base_ts, &records);
        b.compression = codec;
        match self.below(4) {
            0 => {}
            1 => {
                b.producer_id = self.below(1 << 40) as i64;
                b.producer_epoch = self.below(100) as i16;
                b.base_sequence = self.below(1 << 31) as i32;
            }
            2 => {
                b.producer_id = self.below(1 << 40) as i64;
                b.producer_epoch = self.below(100) as i16;
                b.base_sequence = self.below(1000) as i32;
                b.transactional = true;
            }
            _ => b.partition_leader_epoch = self.below(10) as i32,
        }
        if self.below(5) == 0 {
            b.max_timestamp = Some(base_ts - 1);
        }
        let mut out = Vec::new();
        b.encode_to_vec(&mut out).unwrap();
        (out, *stamps.iter().max().unwrap())
    }

    fn config(&mut self, max_ts: i64) -> ValidateConfig {
        let mut c = ValidateConfig::new(self.below(1 << 40) as i64, max_ts + self.below(5_000) as i64);
        c.partition_leader_epoch = self.below(1000) as i32;
        if self.below(3) == 0 {
            c.timestamp_type = TimestampType::LogAppendTime;
        }
        if self.below(6) == 0 {
            c.timestamp_before_max_ms = self.below(30_000) as i64;
        }
        if self.below(6) == 0 {
            c.timestamp_after_max_ms = self.below(10_000) as i64;
            c.now_ms -= 8_000;
        }
        if self.below(8) == 0 {
            c.compacted = true;
        }
        if self.below(10) == 0 {
            c.compression = TopicCompression::Codec(self.codec());
        }
        c.produce_version = 3 + self.below(11) as i16;
        c
    }
}

fn built_cases(out: &mut Vec<Case>, g: &mut Gen, n: usize) {
    for i in 0..n {
        let codec = g.codec();
        let (field, max_ts) = g.batch(codec);
        let config = g.config(max_ts);
        out.push(Case { name: format!("built {i} ({codec:?})"), field, config, limit: LIMIT });
    }
}

/// A hostile change to a valid batch; `true` in the second place fixes the CRC after it.
type Mutation = (&'static str, fn(&mut Vec<u8>), bool);

const MUTATIONS: &[Mutation] = &[
    ("crc flipped", |b| b[19] ^= 0x10, false),
    ("payload byte flipped, crc stale", |b| *b.last_mut().unwrap() ^= 1, false),
    ("count + 1", |b| b[60] = b[60].wrapping_add(1), true),
    ("count - 1", |b| b[60] = b[60].wrapping_sub(1), true),
    (
        "count and delta + 1",
        |b| {
            b[60] = b[60].wrapping_add(1);
            b[26] = b[26].wrapping_add(1)
        },
        true,
    ),
    ("count 0", |b| b[57..61].copy_from_slice(&0i32.to_be_bytes()), true),
    ("count -1", |b| b[57..61].copy_from_slice(&(-1i32).to_be_bytes()), true),
    ("count huge", |b| b[57..61].copy_from_slice(&0x7fff_fff0i32.to_be_bytes()), true),
    ("delta -1", |b| b[23..27].copy_from_slice(&(-1i32).to_be_bytes()), true),
    ("delta max", |b| b[23..27].copy_from_slice(&i32::MAX.to_be_bytes()), true),
    ("magic 0", |b| b[16] = 0, false),
    ("magic 1", |b| b[16] = 1, false),
    ("magic 3", |b| b[16] = 3, false),
    ("magic -1", |b| b[16] = 0xff, false),
    ("base offset 1", |b| b[7] = 1, false),
    ("base offset -1", |b| b[0..8].copy_from_slice(&(-1i64).to_be_bytes()), false),
    ("control bit", |b| b[22] |= 0x20, true),
    (
        "producer id, no sequence",
        |b| {
            b[43..51].copy_from_slice(&7i64.to_be_bytes());
            b[53..57].copy_from_slice(&(-1i32).to_be_bytes())
        },
        true,
    ),
    (
        "transactional, no producer id",
        |b| {
            b[22] |= 0x10;
            b[43..51].copy_from_slice(&(-1i64).to_be_bytes())
        },
        true,
    ),
    (
        "transactional with producer",
        |b| {
            b[22] |= 0x10;
            b[43..51].copy_from_slice(&9i64.to_be_bytes());
            b[53..57].copy_from_slice(&0i32.to_be_bytes())
        },
        true,
    ),
    ("log-append-time bit from producer", |b| b[22] |= 0x08, true),
    (
        "log-append-time bit, max -1",
        |b| {
            b[22] |= 0x08;
            b[35..43].copy_from_slice(&(-1i64).to_be_bytes())
        },
        true,
    ),
    ("delete horizon bit", |b| b[22] |= 0x40, true),
    ("high attribute bits", |b| b[21] |= 0x81, true),
    ("codec 5", |b| b[22] = (b[22] & !7) | 5, true),
    ("codec 7", |b| b[22] |= 7, true),
    ("base timestamp -1 (no timestamps)", |b| b[27..35].copy_from_slice(&(-1i64).to_be_bytes()), true),
    ("base timestamp 0", |b| b[27..35].copy_from_slice(&0i64.to_be_bytes()), true),
    ("base timestamp far future", |b| b[27..35].copy_from_slice(&i64::MAX.to_be_bytes()), true),
    ("max timestamp wrong", |b| b[35..43].copy_from_slice(&5i64.to_be_bytes()), true),
    (
        "cut by 1",
        |b| {
            b.pop();
        },
        false,
    ),
    ("cut to 61", |b| b.truncate(61), false),
    ("cut to 20", |b| b.truncate(20), false),
    ("cut to 16", |b| b.truncate(16), false),
    ("length 13", |b| b[8..12].copy_from_slice(&13i32.to_be_bytes()), false),
    (
        "length 48 (short batch)",
        |b| {
            b[8..12].copy_from_slice(&48i32.to_be_bytes());
            b.truncate(60)
        },
        false,
    ),
    (
        "length 49 (header only)",
        |b| {
            b[8..12].copy_from_slice(&49i32.to_be_bytes());
            b.truncate(61)
        },
        true,
    ),
    (
        "length + 1 over the end",
        |b| {
            let l = i32::from_be_bytes(b[8..12].try_into().unwrap());
            b[8..12].copy_from_slice(&(l + 1).to_be_bytes())
        },
        false,
    ),
    (
        "two batches",
        |b| {
            let c = b.clone();
            b.extend_from_slice(&c)
        },
        false,
    ),
    ("trailing 11 bytes", |b| b.extend_from_slice(&[0xab; 11]), false),
    ("trailing 16 bytes", |b| b.extend_from_slice(&[0xab; 16]), false),
    (
        "trailing 12 bytes, length 100",
        |b| b.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 100]),
        false,
    ),
    (
        "trailing 17 bytes, magic 9",
        |b| b.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0, 0, 9]),
        false,
    ),
    ("trailing 17 zero bytes", |b| b.extend_from_slice(&[0; 17]), false),
    (
        "trailing cut-short batch",
        |b| {
            let c = b.clone();
            b.extend_from_slice(&c[..c.len() - 1])
        },
        false,
    ),
    ("empty", |b| b.clear(), false),
];

fn hostile_cases(out: &mut Vec<Case>, g: &mut Gen) {
    for codec in
        [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
    {
        for (name, f, fix) in MUTATIONS {
            let (mut field, max_ts) = g.batch(codec);
            f(&mut field);
            if *fix {
                fix_crc(&mut field);
            }
            let mut config = ValidateConfig::new(1000, max_ts + 10);
            config.partition_leader_epoch = 4;
            out.push(Case {
                name: format!("hostile {codec:?}: {name}"),
                field: field.clone(),
                config,
                limit: LIMIT,
            });
            config.timestamp_type = TimestampType::LogAppendTime;
            out.push(Case { name: format!("hostile {codec:?}: {name} [lat]"), field, config, limit: LIMIT });
        }
        // zstd in old Produce versions.
        let (field, max_ts) = g.batch(codec);
        let mut config = ValidateConfig::new(0, max_ts);
        config.produce_version = 6;
        out.push(Case { name: format!("hostile {codec:?}: produce v6"), field, config, limit: LIMIT });
    }
    // Random bit flips in the records section, CRC fixed: the record readers against each other.
    for i in 0..1500 {
        let codec = if i % 2 == 0 { Compression::None } else { g.codec() };
        let (mut field, max_ts) = g.batch(codec);
        let flips = 1 + g.below(3);
        for _ in 0..flips {
            let at = 61 + g.below((field.len() - 61) as u64) as usize;
            field[at] ^= 1 << g.below(8);
        }
        fix_crc(&mut field);
        let config = g.config(max_ts);
        out.push(Case { name: format!("flipped {i} ({codec:?})"), field, config, limit: LIMIT });
    }
    // Inflate bombs: one 8 MiB record of zeros; kwire's scratch and Kafka's record limit are
    // 1 MiB.
    let big = vec![0u8; 8 << 20];
    for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
        let records = [NewRecord::new(None, Some(&big[..])).with_timestamp(NOW)];
        let mut b = BatchBuilder::new(0, NOW, &records);
        b.compression = codec;
        let mut field = Vec::new();
        b.encode_to_vec(&mut field).unwrap();
        let config = ValidateConfig::new(0, NOW);
        out.push(Case {
            name: format!("inflate bomb {codec:?} ({} bytes)", field.len()),
            field,
            config,
            limit: 1 << 20,
        });
    }
}

// ------------------------------------------------------------------ comparison

/// How kwire's answer compares with Kafka's.
enum Verdict {
    Agree(&'static str),
    /// A documented difference (docs/records.md): both reject, with different codes.
    Known(&'static str),
    Disagree(String),
}

fn compare(case: &Case, kafka: &Value) -> Verdict {
    let mut field = case.field.clone();
    let mut scratch = vec![0u8; case.limit];
    let mut errors: Vec<RecordError> = Vec::new();
    let got = validate_and_assign_with(&mut field, &case.config, &mut scratch, &mut |e| errors.push(e));
    let code = kafka["error"].as_i64().unwrap_or_else(|| panic!("{}: harness answer {kafka}", case.name));
    match got {
        Ok(v) => compare_ok(case, kafka, code, &field, &v),
        Err(ValidateError::ConversionRequired(why)) => {
            let rebuild_fails = kafka["exception"]
                .as_str()
                .is_some_and(|e| e.contains("key is skipped in PartialDefaultRecord"));
            if why == Conversion::InnerOffsets && rebuild_fails {
                // Kafka 4.4 chose its key-skipping reader before it saw the offsets, and then
                // cannot rebuild from the records it read (UnsupportedOperationException,
                // UNKNOWN_SERVER_ERROR): neither keeps the batch.
                Verdict::Agree("both refuse to keep it (Kafka cannot rebuild skipped records)")
            } else if code == 0 && kafka["sizeMaybeChanged"] == json!(true) {
                Verdict::Agree(match why {
                    Conversion::Codec { .. } => "both convert (codec)",
                    Conversion::InnerOffsets => "both convert (inner offsets)",
                })
            } else {
                Verdict::Disagree(format!("kwire: conversion {why:?}; Kafka: {kafka}"))
            }
        }
        Err(e) => {
            let want = e.error_code().to_i16();
            if let ValidateError::Decompress(_) = e
                && code == i64::from(ErrorCode::InvalidRecord.to_i16())
                && kafka["exception"]
                    .as_str()
                    .is_some_and(|x| x.starts_with("org.apache.kafka.common.InvalidRecordException"))
            {
                // Known: kwire decompresses the whole payload before reading a record, Kafka
                // reads records from the stream as it inflates, so on a payload whose codec
                // fails after garbage output Kafka meets a malformed record first. Both reject.
                return Verdict::Known("codec error (kwire) vs an earlier malformed record (Kafka)");
            }
            if i64::from(want) != code {
                return Verdict::Disagree(format!("kwire: {e} (code {want}); Kafka: {kafka}"));
            }
            if field != case.field {
                return Verdict::Disagree("kwire changed the bytes of a rejected batch".into());
            }
            let kafka_errors = kafka["recordErrors"].as_array().cloned().unwrap_or_default();
            if kafka_errors.len() != errors.len() {
                return Verdict::Disagree(format!("record errors: kwire {errors:?}; Kafka {kafka_errors:?}"));
            }
            for (ours, theirs) in errors.iter().zip(&kafka_errors) {
                if i64::from(ours.batch_index) != theirs[0].as_i64().unwrap() {
                    return Verdict::Disagree(format!("record error index: kwire {ours:?}; Kafka {theirs}"));
                }
                if matches!(ours.kind, RecordErrorKind::TimestampOutOfRange { .. })
                    && ours.to_string() != theirs[1].as_str().unwrap()
                {
                    return Verdict::Disagree(format!("record error message: kwire {ours}; Kafka {theirs}"));
                }
            }
            Verdict::Agree(if errors.is_empty() { "both reject" } else { "both reject, same record errors" })
        }
    }
}

fn compare_ok(case: &Case, kafka: &Value, code: i64, field: &[u8], v: &Validated) -> Verdict {
    if code != 0 {
        return Verdict::Disagree(format!("kwire accepts ({v:?}); Kafka: {kafka}"));
    }
    if kafka["sizeMaybeChanged"] == json!(true) {
        return Verdict::Disagree(format!("kwire kept the batch; Kafka rebuilt it: {kafka}"));
    }
    let ours = hex(&field[..v.valid_bytes]);
    if kafka["hex"].as_str().unwrap() != ours {
        return Verdict::Disagree(format!("validated bytes differ:\n kwire {ours}\n Kafka {}", kafka["hex"]));
    }
    if kafka["lastOffset"].as_i64().unwrap() != v.last_offset {
        return Verdict::Disagree(format!(
            "last offset: kwire {}; Kafka {}",
            v.last_offset, kafka["lastOffset"]
        ));
    }
    if kafka["maxTimestamp"].as_i64().unwrap() != v.max_timestamp {
        return Verdict::Disagree(format!(
            "max timestamp: kwire {}; Kafka {}",
            v.max_timestamp, kafka["maxTimestamp"]
        ));
    }
    let lat = match case.config.timestamp_type {
        TimestampType::LogAppendTime => kafka["logAppendTime"].as_i64().unwrap(),
        TimestampType::CreateTime => -1,
    };
    if lat != v.log_append_time_ms {
        return Verdict::Disagree(format!("log-append time: kwire {}; Kafka {lat}", v.log_append_time_ms));
    }
    if v.first_offset != case.config.base_offset {
        return Verdict::Disagree("first offset is not the configured base offset".into());
    }
    Verdict::Agree("both accept, same bytes")
}

#[test]
fn kwire_validates_and_assigns_as_kafkas_log_validator() {
    let mut g = Gen { rng: XorShift(SEED) };
    let mut cases = Vec::new();
    vector_cases(&mut cases);
    let vectors = cases.len();
    built_cases(&mut cases, &mut g, 600);
    let built = cases.len() - vectors;
    hostile_cases(&mut cases, &mut g);
    let hostile = cases.len() - vectors - built;

    let lines: Vec<String> = cases.iter().map(line).collect();
    let answers = java::answers(lines, "Kafka LogValidator check");

    let mut tally: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut known: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut disagreements = Vec::new();
    let mut codes: std::collections::BTreeMap<i64, usize> = Default::default();
    for (case, kafka) in cases.iter().zip(&answers) {
        if case.name.starts_with("inflate bomb") {
            // Rejected for the limit on both sides, not for anything else.
            let mut field = case.field.clone();
            let mut scratch = vec![0u8; case.limit];
            let got = kwire::records::validate::validate_and_assign(&mut field, &case.config, &mut scratch);
            assert_eq!(got, Err(ValidateError::DecompressedTooLarge { limit: case.limit }), "{}", case.name);
            let e = kafka["exception"].as_str().unwrap_or_default();
            assert!(e.contains("exceeds the configured maximum record size"), "{}: Kafka {kafka}", case.name);
        }
        *codes.entry(kafka["error"].as_i64().unwrap_or(i64::MIN)).or_default() += 1;
        match compare(case, kafka) {
            Verdict::Agree(how) => *tally.entry(how).or_default() += 1,
            Verdict::Known(how) => *known.entry(how).or_default() += 1,
            Verdict::Disagree(why) => disagreements.push(format!("{}: {why}", case.name)),
        }
    }
    eprintln!(
        "kafka_validator: {} cases ({vectors} vector, {built} built, {hostile} hostile); agree {:?}; \
         Kafka's codes {:?}; known differences {:?}; disagree {}",
        cases.len(),
        tally,
        codes,
        known,
        disagreements.len()
    );
    for d in disagreements.iter().take(40) {
        eprintln!("  {d}");
    }
    assert!(disagreements.is_empty(), "{} of {} cases disagree with Kafka", disagreements.len(), cases.len());
    // The comparison exercised every outcome.
    for how in
        ["both accept, same bytes", "both reject", "both reject, same record errors", "both convert (codec)"]
    {
        assert!(tally.get(how).copied().unwrap_or(0) > 0, "no case ended in `{how}`");
    }
}

/// A Produce request with a corrupt batch in one partition: that partition gets Kafka's error,
/// the others validate as before, in place inside the request frame. (Runs without Java.)
#[test]
fn a_corrupt_partition_fails_alone() {
    let mut checked = 0;
    for (name, rel) in common::hex_files("records/requests") {
        let frame = common::vector(&rel);
        // Where each partition's records lie in the frame.
        let spans: Vec<(usize, usize)> = {
            let request = kwire::dispatch::parse_request(common::unframe(&frame)).unwrap();
            let kwire::messages::RequestBodyView::Produce(body) = request.body else { panic!("{name}") };
            let mut spans = Vec::new();
            for topic in body.topic_data() {
                for partition in topic.partition_data() {
                    let r = partition.records().unwrap().bytes();
                    spans.push((r.as_ptr() as usize - frame.as_ptr() as usize, r.len()));
                }
            }
            spans
        };
        if spans.len() < 2 {
            continue;
        }
        for bad in 0..spans.len() {
            let mut frame = frame.clone();
            // A flipped bit in the last byte of the bad partition's batch: its CRC no longer holds.
            let (at, len) = spans[bad];
            frame[at + len - 1] ^= 0x40;
            let mut scratch = vec![0u8; LIMIT];
            for (i, &(at, len)) in spans.iter().enumerate() {
                let mut config = ValidateConfig::new(100 * i as i64, NOW);
                config.timestamp_after_max_ms = i64::MAX;
                let got = kwire::records::validate::validate_and_assign(
                    &mut frame[at..at + len],
                    &config,
                    &mut scratch,
                );
                if i == bad {
                    let e = got.expect_err("the corrupt partition fails");
                    assert_eq!(e.error_code(), ErrorCode::CorruptMessage, "{name}: {e}");
                } else {
                    let v = got.unwrap_or_else(|e| panic!("{name}: partition {i} fails too: {e}"));
                    assert_eq!(v.first_offset, 100 * i as i64);
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 30, "only {checked} healthy partitions checked");
}

/// Validation allocates nothing for uncompressed, lz4 and snappy batches (gzip's and zstd's
/// decoders keep their own state), log-append time (a CRC rewrite) and record errors included.
/// (Runs without Java.)
#[test]
fn validation_allocates_nothing() {
    let mut scratch = vec![0u8; LIMIT];
    let mut seen = std::collections::BTreeMap::new();
    for (name, version, field) in vector_fields() {
        let codec = RecordBatches::new(&field).next().unwrap().unwrap().compression().unwrap();
        let now = max_record_timestamp(&field) + 1_000;
        let mut configs =
            [ValidateConfig::new(7, now), ValidateConfig::new(9, now), ValidateConfig::new(1, now)];
        configs[1].timestamp_type = TimestampType::LogAppendTime;
        configs[2].timestamp_before_max_ms = 1_500;
        for mut config in configs {
            config.produce_version = version;
            let mut bytes = field.clone();
            let mut errors = 0u32;
            let (n, got) = common::counting::allocations(|| {
                validate_and_assign_with(&mut bytes, &config, &mut scratch, &mut |_| errors += 1)
            });
            assert!(got.is_ok() || errors > 0, "{name}: {got:?}");
            if matches!(codec, Compression::None | Compression::Lz4 | Compression::Snappy) {
                assert_eq!(n, 0, "{name} ({codec:?}): {n} allocations");
            }
            let e = seen.entry(format!("{codec:?}")).or_insert(0);
            *e = (*e).max(n);
        }
    }
    assert_eq!(seen.len(), 5, "every codec: {seen:?}");
    eprintln!("validation_allocates_nothing: most allocations per call, by codec: {seen:?}");
}
