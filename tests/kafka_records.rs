//! kwire's record batches held against Apache Kafka's own `MemoryRecords` (kafka-clients, the
//! version in `tests/java/harness/pom.xml`), both ways. See `docs/records.md` ("Against
//! Apache Kafka") and `docs/kafka-codec.md`.
//!
//! - **Kafka reads kwire's bytes**: `records` fields generated from a seeded xorshift stream
//!   and written by kwire's `BatchBuilder` (every codec; control batches with transaction
//!   markers and KRaft types; transactional and idempotent batches; log-append time; null and
//!   empty keys and values; duplicate header keys; several batches per field; some stored
//!   CRCs flipped, some fields cut short in their last batch) go to one JVM running
//!   `tests/java/harness` in its records mode, which reads each with
//!   `MemoryRecords.readableRecords` and prints a canonical JSON of every batch and record.
//!   kwire's views (`RecordBatches`, and `legacy::Entries` which must agree) must give the
//!   identical JSON.
//! - **kwire reads Kafka's bytes**: specs generated the same way (magic 0, 1 and 2; every codec
//!   Kafka writes for that magic; offsets with gaps; log-append time; fields mixing magics) go
//!   to the same JVM, which builds each field with `MemoryRecords.builder` (Kafka's own
//!   compression, and for magic 0/1 its compressed wrappers with relative inner offsets) and
//!   answers the bytes and its own canonical reading of them. kwire reads the bytes with
//!   `RecordBatches` (magic 2), `legacy::LegacyMessages` (magic 0/1) or `legacy::Entries`
//!   (mixed), and must give the same JSON.
//!
//! The harness is built by `tests/java/build.sh` (cached in `target/java`); without Java or
//! Maven the test fails, as `tests/kafka_codec.rs` does. `KWIRE_KAFKA_RECORDS_CASES` sets the
//! number of fields each way (default 600).

mod common;
use common::java;

use std::fmt::Write as _;
use std::time::Instant;

use common::XorShift;
use kwire::records::legacy::{Entries, Entry, LegacyMessage, LegacyMessages};
use kwire::records::{
    BatchBuilder, Compression, ControlRecordType, NewHeader, NewRecord, RecordBatch, RecordBatches,
    TimestampType,
};
use serde_json::{Value, json};

const DEFAULT_CASES: usize = 600;
const SEED: u64 = 0x6b77_6972_6572_6563;
/// The decompression limit kwire reads with.
const LIMIT: usize = 1 << 22;

fn cases() -> usize {
    match std::env::var("KWIRE_KAFKA_RECORDS_CASES") {
        Ok(v) => v.parse().expect("KWIRE_KAFKA_RECORDS_CASES: a number"),
        Err(_) => DEFAULT_CASES,
    }
}

// ------------------------------------------------------------------ small helpers

fn b64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn nullable_b64(bytes: Option<&[u8]>) -> Value {
    bytes.map_or(Value::Null, |b| Value::String(b64(b)))
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

// ------------------------------------------------------------------ generated contents

/// A record's contents, owned.
#[derive(Clone, Debug)]
struct Rec {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
    timestamp: i64,
    /// The gap before this record's offset (Kafka-built fields only).
    gap: i64,
}

/// Null, empty, short random bytes or text, or a long compressible run.
fn payload(rng: &mut XorShift) -> Option<Vec<u8>> {
    match rng.next() % 10 {
        0 => None,
        1 => Some(Vec::new()),
        2 => {
            let unit = rng.text(12);
            let times = 1 + rng.next() as usize % 300;
            Some(unit.iter().copied().cycle().take(unit.len() * times).collect())
        }
        _ => Some(rng.input(48)),
    }
}

const HEADER_KEYS: [&str; 4] = ["trace-id", "", "dup", "clé"];

fn headers(rng: &mut XorShift) -> Vec<(String, Option<Vec<u8>>)> {
    let n = match rng.next() % 4 {
        0 | 1 => 0,
        2 => 1 + rng.next() as usize % 2,
        _ => 2 + rng.next() as usize % 4,
    };
    (0..n)
        .map(|_| {
            // Often a key from a small pool, so that keys repeat within a record.
            let key = if rng.next().is_multiple_of(2) {
                HEADER_KEYS[rng.next() as usize % HEADER_KEYS.len()].to_string()
            } else {
                String::from_utf8(rng.text(16)).expect("text() is UTF-8")
            };
            (key, payload(rng))
        })
        .collect()
}

fn records(rng: &mut XorShift, max: u64, with_headers: bool, base_ts: i64) -> Vec<Rec> {
    let n = 1 + rng.next() % max;
    (0..n)
        .map(|_| Rec {
            key: payload(rng),
            value: payload(rng),
            headers: if with_headers { headers(rng) } else { Vec::new() },
            timestamp: base_ts + (rng.next() % 20_000) as i64 - 5_000,
            gap: if rng.next().is_multiple_of(3) { (rng.next() % 5) as i64 } else { 0 },
        })
        .collect()
}

/// Control records: ABORT and COMMIT markers (value: version 0, coordinator epoch), KRaft
/// control types with opaque values, and with `unknown` an unknown type (17: Kafka reads it
/// as `UNKNOWN`, but its builder refuses to write it).
fn control_records(rng: &mut XorShift, base_ts: i64, unknown: bool) -> Vec<Rec> {
    let n = 1 + rng.next() % 3;
    (0..n)
        .map(|_| {
            let kinds: &[i16] =
                if unknown { &[0, 1, 0, 1, 2, 3, 4, 5, 6, 17] } else { &[0, 1, 0, 1, 2, 3, 4, 5, 6] };
            let kind = kinds[rng.next() as usize % kinds.len()];
            let mut key = 0i16.to_be_bytes().to_vec();
            key.extend_from_slice(&kind.to_be_bytes());
            let value = if kind <= 1 {
                let mut v = 0i16.to_be_bytes().to_vec();
                v.extend_from_slice(&((rng.next() % 1000) as i32).to_be_bytes());
                v
            } else {
                rng.bytes(24)
            };
            Rec {
                key: Some(key),
                value: Some(value),
                headers: Vec::new(),
                timestamp: base_ts + (rng.next() % 1000) as i64,
                gap: 0,
            }
        })
        .collect()
}

const CODECS: [Compression; 5] =
    [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];

/// Producer state: (transactional, producer id, epoch, base sequence).
fn producer(rng: &mut XorShift) -> (bool, i64, i16, i32) {
    match rng.next() % 3 {
        0 => (false, -1, -1, -1),
        n => (
            n == 1,
            (rng.next() % (1 << 40)) as i64,
            (rng.next() % 32_768) as i16,
            (rng.next() % 1_000_000) as i32,
        ),
    }
}

// ------------------------------------------------------------------ kwire's canonical form

fn ts_type_name(t: TimestampType) -> &'static str {
    match t {
        TimestampType::CreateTime => "CREATE_TIME",
        TimestampType::LogAppendTime => "LOG_APPEND_TIME",
    }
}

fn control_name(t: ControlRecordType) -> &'static str {
    match t {
        ControlRecordType::Abort => "ABORT",
        ControlRecordType::Commit => "COMMIT",
        ControlRecordType::LeaderChange => "LEADER_CHANGE",
        ControlRecordType::SnapshotHeader => "SNAPSHOT_HEADER",
        ControlRecordType::SnapshotFooter => "SNAPSHOT_FOOTER",
        ControlRecordType::KRaftVersion => "KRAFT_VERSION",
        ControlRecordType::KRaftVoters => "KRAFT_VOTERS",
        ControlRecordType::Other(_) => "UNKNOWN",
    }
}

#[allow(clippy::too_many_arguments)]
fn batch_json(
    base_offset: i64,
    last_offset: i64,
    magic: i8,
    valid: bool,
    codec: u8,
    ts_type: &str,
    transactional: bool,
    control: bool,
    producer: (i64, i16, i32),
    partition_leader_epoch: i32,
    max_timestamp: i64,
) -> serde_json::Map<String, Value> {
    let v = json!({
        "baseOffset": base_offset,
        "lastOffset": last_offset,
        "magic": magic,
        "valid": valid,
        "codec": codec,
        "timestampType": ts_type,
        "transactional": transactional,
        "control": control,
        "producerId": producer.0,
        "producerEpoch": producer.1,
        "baseSequence": producer.2,
        "partitionLeaderEpoch": partition_leader_epoch,
        "maxTimestamp": max_timestamp,
    });
    let Value::Object(m) = v else { unreachable!() };
    m
}

/// A v2 batch as the harness prints one. Records are read after the CRC check, or without it
/// for an uncompressed batch whose CRC is wrong (Kafka iterates those too).
fn v2_json(b: &RecordBatch<'_>) -> Result<Value, (Value, String)> {
    let valid = b.verify_crc().is_ok();
    let codec = b.compression().map_err(|e| (Value::Null, e.to_string()))?;
    let mut m = batch_json(
        b.base_offset(),
        b.last_offset(),
        b.magic(),
        valid,
        codec.id(),
        ts_type_name(b.timestamp_type()),
        b.is_transactional(),
        b.is_control(),
        (b.producer_id(), b.producer_epoch(), b.base_sequence()),
        b.partition_leader_epoch(),
        b.max_timestamp(),
    );
    let mut buf = Vec::new();
    let records = if valid { b.records_in_vec(&mut buf, LIMIT) } else { b.records_unverified() };
    let mut out = Vec::new();
    let result = records.and_then(|rs| {
        for r in rs {
            let r = r?;
            let mut o = json!({
                "offset": r.offset(),
                "timestamp": r.timestamp(),
                "key": nullable_b64(r.key()),
                "value": nullable_b64(r.value()),
                "headers": r.headers().map(|h| json!({
                    "key": String::from_utf8_lossy(h.key),
                    "value": nullable_b64(h.value),
                })).collect::<Vec<_>>(),
            });
            if b.is_control() {
                let c = r.control().map_err(|k| kwire::records::Error::new(k, 0))?;
                o["controlType"] = control_name(c.kind).into();
                if let Some(marker) = c.marker {
                    o["coordinatorEpoch"] = marker.coordinator_epoch.into();
                }
            }
            out.push(o);
        }
        Ok(())
    });
    m.insert("records".into(), Value::Array(out));
    match result {
        Ok(()) => Ok(Value::Object(m)),
        Err(e) => Err((Value::Object(m), e.to_string())),
    }
}

fn legacy_record(offset: i64, timestamp: Option<i64>, key: Option<&[u8]>, value: Option<&[u8]>) -> Value {
    json!({
        "offset": offset,
        "timestamp": timestamp.unwrap_or(-1),
        "key": nullable_b64(key),
        "value": nullable_b64(value),
        "headers": [],
    })
}

/// A legacy message as the harness prints one: Kafka's `AbstractLegacyRecordBatch` (a
/// compressed wrapper is one batch of its inner messages, an uncompressed message a batch of
/// itself; no producer state, no partition leader epoch; magic 0 has no timestamps).
fn legacy_json(m: &LegacyMessage<'_>) -> Result<Value, (Value, String)> {
    let codec = m.compression().map_err(|k| (Value::Null, k.to_string()))?;
    let mut records = Vec::new();
    let mut error = None;
    if codec == Compression::None {
        records.push(legacy_record(m.offset(), m.timestamp(), m.key(), m.value()));
    } else {
        let mut buf = Vec::new();
        match m.inner_in_vec(&mut buf, LIMIT) {
            Ok(inner) => {
                for i in inner {
                    match i {
                        Ok(i) => records.push(legacy_record(i.offset(), i.timestamp(), i.key(), i.value())),
                        Err(e) => {
                            error = Some(e.to_string());
                            break;
                        }
                    }
                }
            }
            Err(e) => error = Some(e.to_string()),
        }
    }
    let base_offset = records.first().and_then(|r| r["offset"].as_i64()).unwrap_or(m.offset());
    let ts_type = if m.magic() == 0 { "NO_TIMESTAMP_TYPE" } else { ts_type_name(m.timestamp_type()) };
    let mut o = batch_json(
        base_offset,
        m.offset(),
        m.magic(),
        m.verify_crc().is_ok(),
        codec.id(),
        ts_type,
        false,
        false,
        (-1, -1, -1),
        -1,
        m.timestamp().unwrap_or(-1),
    );
    o.insert("records".into(), Value::Array(records));
    match error {
        None => Ok(Value::Object(o)),
        Some(e) => Err((Value::Object(o), e)),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reader {
    /// `RecordBatches` (magic 2 only).
    Batches,
    /// `legacy::LegacyMessages` (magic 0 and 1 only).
    Legacy,
    /// `legacy::Entries` (any mix).
    Entries,
}

/// kwire's reading of a field in the harness's canonical form. An error stops the reading
/// and is reported beside the batches read so far (as the harness does).
fn kwire_json(field: &[u8], reader: Reader) -> Value {
    let mut batches = Vec::new();
    let mut error = None;
    let mut push = |r: Result<Value, (Value, String)>| match r {
        Ok(v) => {
            batches.push(v);
            true
        }
        Err((v, e)) => {
            if !v.is_null() {
                batches.push(v);
            }
            error = Some(e);
            false
        }
    };
    match reader {
        Reader::Batches => {
            for b in RecordBatches::new(field) {
                let r = b.map_err(|e| (Value::Null, e.to_string())).and_then(|b| v2_json(&b));
                if !push(r) {
                    break;
                }
            }
        }
        Reader::Legacy => {
            for m in LegacyMessages::new(field) {
                let r = m.map_err(|e| (Value::Null, e.to_string())).and_then(|m| legacy_json(&m));
                if !push(r) {
                    break;
                }
            }
        }
        Reader::Entries => {
            for e in Entries::new(field) {
                let r = e.map_err(|e| (Value::Null, e.to_string())).and_then(|e| match e {
                    Entry::Batch(b) => v2_json(&b),
                    Entry::Legacy(m) => legacy_json(&m),
                });
                if !push(r) {
                    break;
                }
            }
        }
    }
    let mut out = json!({ "batches": batches });
    if let Some(e) = error {
        out["error"] = e.into();
    }
    out
}

// ------------------------------------------------------------------ (a) kwire writes

/// What one side's fields held.
#[derive(Default, Debug)]
struct Tally {
    batches: usize,
    records: usize,
    /// Batches per codec id.
    codecs: [usize; 5],
    /// Batches per magic.
    magics: [usize; 3],
    control: usize,
    log_append: usize,
    /// Batches with a flipped CRC bit (kwire side).
    bad_crc: usize,
    /// Fields cut short in their last batch (kwire side).
    cut: usize,
    /// Fields mixing magics (Kafka side).
    mixed: usize,
}

/// One field under test.
struct Field {
    label: String,
    /// kwire's bytes (a), or the spec line for Kafka (b).
    bytes: Vec<u8>,
    spec: Option<String>,
    reader: Reader,
}

/// A field of 1-4 batches written by kwire's `BatchBuilder`.
fn kwire_field(rng: &mut XorShift, i: usize, t: &mut Tally) -> Field {
    let n = 1 + rng.next() % 4;
    let mut bytes = Vec::new();
    let mut offset = (rng.next() % 1_000_000) as i64;
    let mut label = format!("kwire field {i}:");
    for _ in 0..n {
        let base_ts = 1_700_000_000_000 + (rng.next() % 100_000_000) as i64;
        let codec = CODECS[rng.next() as usize % 5];
        let control = rng.next().is_multiple_of(8);
        let recs = if control { control_records(rng, base_ts, true) } else { records(rng, 8, true, base_ts) };
        let hdrs: Vec<Vec<NewHeader<'_>>> = recs
            .iter()
            .map(|r| {
                r.headers.iter().map(|(k, v)| NewHeader { key: k.as_bytes(), value: v.as_deref() }).collect()
            })
            .collect();
        let new: Vec<NewRecord<'_>> = recs
            .iter()
            .zip(&hdrs)
            .map(|(r, h)| {
                NewRecord::new(r.key.as_deref(), r.value.as_deref())
                    .with_headers(h)
                    .with_timestamp(r.timestamp)
            })
            .collect();
        let mut b = BatchBuilder::new(offset, base_ts, &new);
        b.compression = codec;
        b.control = control;
        let (transactional, pid, epoch, seq) = producer(rng);
        (b.transactional, b.producer_id, b.producer_epoch, b.base_sequence) =
            (transactional || control, pid, epoch, seq);
        if rng.next().is_multiple_of(4) {
            b.timestamp_type = TimestampType::LogAppendTime;
            b.max_timestamp = Some(1_700_000_000_000 + (rng.next() % 100_000_000) as i64);
        }
        if rng.next().is_multiple_of(2) {
            b.partition_leader_epoch = (rng.next() % 1000) as i32;
        }
        let start = bytes.len();
        b.encode_to_vec(&mut bytes).expect("kwire encodes the batch");
        let flip = codec == Compression::None && rng.next().is_multiple_of(16);
        if flip {
            bytes[start + 17 + (rng.next() % 4) as usize] ^= 1 << (rng.next() % 8);
        }
        let _ = write!(
            label,
            " [{codec:?}{}{}{}{} {} records]",
            if control { " control" } else { "" },
            if b.transactional { " transactional" } else { "" },
            if b.timestamp_type == TimestampType::LogAppendTime { " log-append" } else { "" },
            if flip { " bad-crc" } else { "" },
            recs.len()
        );
        t.batches += 1;
        t.records += recs.len();
        t.codecs[codec.id() as usize] += 1;
        t.magics[2] += 1;
        t.control += usize::from(control);
        t.log_append += usize::from(b.timestamp_type == TimestampType::LogAppendTime);
        t.bad_crc += usize::from(flip);
        offset += recs.len() as i64 + (rng.next() % 3) as i64;
    }
    if rng.next().is_multiple_of(10) {
        // A Fetch response may end inside a batch: both readers stop before it.
        let cut = 1 + rng.next() as usize % 80.min(bytes.len() - 1);
        bytes.truncate(bytes.len() - cut);
        let _ = write!(label, " cut {cut} bytes short");
        t.cut += 1;
    }
    Field { label, bytes, spec: None, reader: Reader::Batches }
}

// ------------------------------------------------------------------ (b) Kafka writes

/// A field spec for the harness's `MemoryRecords.builder`: 1-3 batches, each of magic 0, 1
/// or 2 (usually one magic per field, sometimes mixed).
fn kafka_spec(rng: &mut XorShift, i: usize, t: &mut Tally) -> Field {
    let n = 1 + rng.next() % 3;
    let field_magic = (rng.next() % 3) as i8;
    let mixed = rng.next().is_multiple_of(8);
    let mut specs = Vec::new();
    let mut offset = (rng.next() % 1_000_000) as i64;
    let mut magics = Vec::new();
    let mut label = format!("Kafka field {i}:");
    for _ in 0..n {
        let magic = if mixed { (rng.next() % 3) as i8 } else { field_magic };
        magics.push(magic);
        let codec = CODECS[rng.next() as usize % if magic == 2 { 5 } else { 4 }];
        let base_ts = 1_600_000_000_000 + (rng.next() % 100_000_000_000) as i64;
        let control = magic == 2 && rng.next().is_multiple_of(8);
        let mut recs = if control {
            control_records(rng, base_ts, false)
        } else {
            records(rng, 10, magic == 2, base_ts)
        };
        if magic < 2 && rng.next().is_multiple_of(8) {
            // Kafka's "no timestamp" (-1) is allowed in legacy messages.
            for r in &mut recs {
                r.timestamp = -1;
            }
        }
        let (ts_type, log_append_time) = match (magic, rng.next() % 4) {
            (0, 0) => ("NO_TIMESTAMP_TYPE", -1),
            (1 | 2, 0) => ("LOG_APPEND_TIME", 1_700_000_000_000 + (rng.next() % 1_000_000) as i64),
            _ => ("CREATE_TIME", -1),
        };
        let (transactional, pid, epoch, seq) = if magic == 2 { producer(rng) } else { (false, -1, -1, -1) };
        let transactional = transactional || (control && pid >= 0);
        let ple = if magic == 2 && rng.next().is_multiple_of(2) { (rng.next() % 1000) as i32 } else { -1 };
        let mut rs = Vec::new();
        for r in &recs {
            offset += r.gap;
            rs.push(json!({
                "offset": offset,
                "timestamp": r.timestamp,
                "key": nullable_b64(r.key.as_deref()),
                "value": nullable_b64(r.value.as_deref()),
                "headers": r.headers.iter().map(|(k, v)| json!({"key": k, "value": nullable_b64(v.as_deref())})).collect::<Vec<_>>(),
            }));
            offset += 1;
        }
        let base_offset = rs[0]["offset"].as_i64().unwrap() - (rng.next() % 2) as i64 * recs[0].gap;
        specs.push(json!({
            "magic": magic,
            "codec": codec.id(),
            "timestampType": ts_type,
            "baseOffset": base_offset,
            "logAppendTime": log_append_time,
            "producerId": pid,
            "producerEpoch": epoch,
            "baseSequence": seq,
            "transactional": transactional,
            "control": control,
            "partitionLeaderEpoch": ple,
            "records": rs,
        }));
        let _ = write!(
            label,
            " [v{magic} {codec:?}{}{} {ts_type} {} records]",
            if control { " control" } else { "" },
            if transactional { " transactional" } else { "" },
            recs.len()
        );
        t.batches += 1;
        t.records += recs.len();
        t.codecs[codec.id() as usize] += 1;
        t.magics[magic as usize] += 1;
        t.control += usize::from(control);
        t.log_append += usize::from(ts_type == "LOG_APPEND_TIME");
        offset += (rng.next() % 3) as i64;
    }
    let reader = if magics.iter().all(|&m| m == 2) {
        Reader::Batches
    } else if magics.iter().all(|&m| m < 2) {
        Reader::Legacy
    } else {
        t.mixed += 1;
        Reader::Entries
    };
    let spec = json!({ "batches": specs }).to_string();
    Field { label, bytes: Vec::new(), spec: Some(spec), reader }
}

// ------------------------------------------------------------------ the JVM

/// Kafka's answer to every line, from one JVM.
fn kafka(lines: Vec<String>) -> Vec<Value> {
    java::answers(lines, "Kafka records check")
}

// ------------------------------------------------------------------ the test

#[test]
fn kwire_and_kafka_read_each_others_records() {
    let t0 = Instant::now();
    let cases = cases();
    let mut rng = XorShift(SEED);
    let mut fields = Vec::new();
    let mut tallies = [Tally::default(), Tally::default()];
    for i in 0..cases {
        fields.push(kwire_field(&mut rng, i, &mut tallies[0]));
    }
    for i in 0..cases {
        fields.push(kafka_spec(&mut rng, i, &mut tallies[1]));
    }
    let lines = fields
        .iter()
        .map(|f| match &f.spec {
            None => format!("records-read {}", hex(&f.bytes)),
            Some(spec) => format!("records-build {spec}"),
        })
        .collect();
    let t_java = Instant::now();
    let answers = kafka(lines);
    let t_java = t_java.elapsed();

    let mut failures = Vec::new();
    let mut bytes = [0usize; 2];
    for (f, answer) in fields.iter_mut().zip(&answers) {
        let (side, kafka_view) = if let Some(spec) = &f.spec {
            if let Some(e) = answer.get("error") {
                failures.push(format!("{}: Kafka could not build the spec: {e}\n  spec: {spec}", f.label));
                continue;
            }
            f.bytes = common::hex(answer["hex"].as_str().expect("the built field's hex"));
            (1, &answer["kafka"])
        } else {
            (0, answer)
        };
        bytes[side] += f.bytes.len();
        if kafka_view.get("error").is_some() {
            failures.push(format!(
                "{}: Kafka fails reading: {}\n  field: {}",
                f.label,
                kafka_view["error"],
                hex(&f.bytes)
            ));
            continue;
        }
        let mine = kwire_json(&f.bytes, f.reader);
        if &mine != kafka_view {
            failures.push(format!(
                "{}: kwire ({:?}) and Kafka read different records\n  field: {}\n  kwire: {mine}\n  Kafka: {kafka_view}",
                f.label,
                f.reader,
                hex(&f.bytes)
            ));
            continue;
        }
        // Whatever the reader, the mixed-format one reads the same.
        if f.reader != Reader::Entries {
            let entries = kwire_json(&f.bytes, Reader::Entries);
            if entries != mine {
                failures.push(format!(
                    "{}: legacy::Entries reads otherwise than {:?}\n  field: {}\n  Entries: {entries}\n  {:?}: {mine}",
                    f.label,
                    f.reader,
                    hex(&f.bytes),
                    f.reader
                ));
            }
        }
    }

    let [a, b] = &tallies;
    println!(
        "kafka_records: Kafka read {cases} kwire fields ({} bytes): {} batches (codecs none/gzip/snappy/lz4/zstd {:?}; \
         {} control, {} log-append time, {} with a flipped CRC bit), {} records; {} fields cut short",
        bytes[0], a.batches, a.codecs, a.control, a.log_append, a.bad_crc, a.records, a.cut
    );
    println!(
        "kafka_records: kwire read {cases} Kafka fields ({} bytes): {} batches (magic 0/1/2 {:?}; codecs {:?}; {} \
         control, {} log-append time), {} records; {} fields mixing magics",
        bytes[1], b.batches, b.magics, b.codecs, b.control, b.log_append, b.records, b.mixed
    );
    println!(
        "kafka_records: {} disagreements; {:.1}s in all, the JVM {:.1}s",
        failures.len(),
        t0.elapsed().as_secs_f64(),
        t_java.as_secs_f64()
    );
    if !failures.is_empty() {
        let n = failures.len();
        failures.truncate(20);
        panic!("{n} fields where kwire and Apache Kafka disagree (first 20):\n\n{}", failures.join("\n\n"));
    }
}

#[test]
fn base64_matches_the_standard_alphabet() {
    assert_eq!(b64(b""), "");
    assert_eq!(b64(b"f"), "Zg==");
    assert_eq!(b64(b"fo"), "Zm8=");
    assert_eq!(b64(b"foo"), "Zm9v");
    assert_eq!(b64(&[0xff, 0xfe, 0xfd, 0x00]), "//79AA==");
}
