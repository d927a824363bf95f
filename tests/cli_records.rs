//! `kwire decode` on record batches, run as a real process: `--format records` on every
//! captured client frame of `tests/vectors/records` against its `index.json`, the batches
//! and records in the tree (uncompressed, compressed, legacy), corrupted and cut-short
//! batches, and `--format json | encode` round trips of the records vectors.
#![cfg(feature = "cli")]

mod common;
use common::kwire_cmd;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use kwire_cmd::{fails, ok, run as kwire, text};

use kwire::records::{BatchBuilder, Compression, NewHeader, NewRecord};
use serde_json::Value;

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/records")
}

fn index() -> Value {
    serde_json::from_str(&std::fs::read_to_string(vectors().join("index.json")).unwrap()).unwrap()
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Standard base64 with padding, written here to check kwire's independently.
fn b64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, b)| acc | u32::from(*b) << (16 - 8 * i));
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

/// A key, value or header value of the index (`null`, `{"utf8"}`, `{"hex"}`) as the
/// records format writes it: `null` or base64.
fn expected_b64(v: &Value) -> Value {
    match v {
        Value::Null => Value::Null,
        Value::Object(m) if m.contains_key("utf8") => {
            Value::String(b64(m["utf8"].as_str().unwrap().as_bytes()))
        }
        Value::Object(m) if m.contains_key("hex") => Value::String(b64(&hex(m["hex"].as_str().unwrap()))),
        other => panic!("unexpected value {other}"),
    }
}

/// The text the records format writes beside a key, value or header value of the index
/// (`keyText`, `valueText`): the bytes as a string when they are valid UTF-8, else none.
fn expected_text(v: &Value) -> Option<Value> {
    let bytes = match v {
        Value::Null => return None,
        Value::Object(m) if m.contains_key("utf8") => m["utf8"].as_str().unwrap().as_bytes().to_vec(),
        Value::Object(m) if m.contains_key("hex") => hex(m["hex"].as_str().unwrap()),
        other => panic!("unexpected value {other}"),
    };
    String::from_utf8(bytes).ok().map(Value::String)
}

fn lines(out: &str) -> Vec<Value> {
    out.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

#[test]
fn records_format_gives_every_vector_record() {
    let index = index();
    let files = index["files"].as_object().unwrap();
    assert_eq!(files.len(), 19);
    let mut total = 0;
    for (name, facts) in files {
        let request = vectors().join(facts["request"].as_str().unwrap());
        let got = lines(&ok(&["decode", "--format", "records", request.to_str().unwrap()], b""));
        let want = facts["records"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{name}: record count");
        // Base offsets of each (topic, partition, batch), for the expected offsets.
        let mut base: HashMap<(String, i64, i64), i64> = HashMap::new();
        for lay in facts["layout"].as_array().unwrap() {
            for (bi, b) in lay["batches"].as_array().unwrap().iter().enumerate() {
                let key = (
                    lay["topic"].as_str().unwrap().to_string(),
                    lay["partition"].as_i64().unwrap(),
                    bi as i64,
                );
                base.insert(key, b["base_offset"].as_i64().unwrap());
            }
        }
        let mut seen: HashMap<(String, i64, i64), i64> = HashMap::new();
        for (g, w) in got.iter().zip(want) {
            let at = format!("{name}: record {}", w["i"]);
            let obj = g.as_object().unwrap();
            let keys: Vec<&str> = obj.keys().map(String::as_str).filter(|k| !k.ends_with("Text")).collect();
            let mut sorted = keys.clone();
            sorted.sort_unstable();
            assert_eq!(
                sorted,
                ["headers", "key", "offset", "partition", "timestamp", "topic", "value"],
                "{at}"
            );
            assert_eq!(obj.get("keyText").cloned(), expected_text(&w["key"]), "{at}: keyText");
            assert_eq!(obj.get("valueText").cloned(), expected_text(&w["value"]), "{at}: valueText");
            assert_eq!(g["topic"], w["topic"], "{at}");
            assert_eq!(g["partition"], w["partition"], "{at}");
            let batch = (
                w["topic"].as_str().unwrap().to_string(),
                w["partition"].as_i64().unwrap(),
                w["batch"].as_i64().unwrap(),
            );
            let n = seen.entry(batch.clone()).or_insert(0);
            assert_eq!(g["offset"].as_i64(), Some(base[&batch] + *n), "{at}: offset");
            *n += 1;
            match w["timestamp"].as_i64() {
                Some(ts) => assert_eq!(g["timestamp"].as_i64(), Some(ts), "{at}: timestamp"),
                // The client's clock: any time after the capture tool was written.
                None => {
                    assert!(g["timestamp"].as_i64().is_some_and(|t| t > 1_700_000_000_000), "{at}: timestamp")
                }
            }
            assert_eq!(g["key"], expected_b64(&w["key"]), "{at}: key");
            assert_eq!(g["value"], expected_b64(&w["value"]), "{at}: value");
            let headers: Vec<Value> = w["headers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| {
                    let mut want = serde_json::json!({"key": h["key"], "value": expected_b64(&h["value"])});
                    if let Some(t) = expected_text(&h["value"]) {
                        want["valueText"] = t;
                    }
                    want
                })
                .collect();
            assert_eq!(g["headers"], Value::Array(headers), "{at}: headers");
            total += 1;
        }
        // The broker's answer has no records: nothing is printed.
        let response = vectors().join(facts["response"].as_str().unwrap());
        let none = ok(
            &[
                "decode",
                "--format",
                "records",
                "--request",
                request.to_str().unwrap(),
                response.to_str().unwrap(),
            ],
            b"",
        );
        assert_eq!(none, "", "{name}: response");
    }
    assert_eq!(total, 17 * 20 + 910 + 90);
}

#[test]
fn json_round_trips_the_records_vectors() {
    for entry in std::fs::read_dir(vectors().join("requests")).unwrap() {
        let path = entry.unwrap().path();
        let json = ok(&["decode", "--format", "json", path.to_str().unwrap()], b"");
        let back = ok(&["encode"], json.as_bytes());
        let want = std::fs::read_to_string(&path).unwrap();
        assert_eq!(back.trim(), want.trim(), "{}", path.display());
    }
}

/// The tree's rows without the tree's branches, column padding folded to single spaces.
fn rows(tree: &str) -> Vec<String> {
    tree.lines()
        .map(|l| l.split_whitespace().skip_while(|w| *w == "|" || *w == "+--").collect::<Vec<_>>().join(" "))
        .collect()
}

fn has_row_starting(tree: &str, start: &str) {
    assert!(rows(tree).iter().any(|r| r.starts_with(start)), "no row starting {start:?} in\n{tree}");
}

#[test]
fn tree_shows_uncompressed_batches_and_records() {
    let path = vectors().join("requests/kafkapython_none_1.hex");
    let tree = ok(&["decode", path.to_str().unwrap()], b"");
    has_row_starting(&tree, "RecordBatch[0] v2 = 7 records, offsets 0..6, none [0x");
    has_row_starting(&tree, "crc uint32 = 0x");
    assert!(tree.contains("(ok)"), "{tree}");
    has_row_starting(&tree, "compression bits 0-2 = none");
    has_row_starting(&tree, "timestampType bit 3 = CreateTime");
    has_row_starting(&tree, "isTransactional bit 4 = false");
    has_row_starting(&tree, "producerId int64 = 1000 ");
    has_row_starting(&tree, "recordsCount int32 = 7 ");
    has_row_starting(&tree, "baseTimestamp int64 = 1700000000000 (2023-11-14T22:13:20.000Z)");
    has_row_starting(&tree, "records records = ");
    has_row_starting(&tree, "Record[0] = offset 0, key \"k-0\" [0x");
    has_row_starting(&tree, "key bytes = \"k-0\" (varint len=3) [0x");
    has_row_starting(&tree, "value bytes = \"\" (varint len=0) [0x");
    // Record 3 of the set (partition 0, second record): 10,240 bytes, cut.
    has_row_starting(
        &tree,
        "value bytes = \"0123456789abcdef0123456789abcdef0123456789abcdef\"... (varint len=10240) [0x",
    );
    // Record 2: 100 binary bytes, in hex.
    has_row_starting(&tree, "value bytes = 100 bytes: 000102030405060708090a0b0c0d0e0f... (varint len=100)");
    // Record 8: three headers, a duplicate key and an empty value.
    has_row_starting(&tree, "headers []Header = 3 headers");
    has_row_starting(&tree, "Header[1] = \"h1\" = \"v1-dup\"");
    has_row_starting(&tree, "Header[2] = \"h-empty\" = \"\"");
    // Offsets of record fields are in the frame: the first key follows its length byte.
    let row = rows(&tree).into_iter().find(|r| r.contains("key bytes = \"k-0\"")).unwrap();
    assert!(row.contains("[0x") && !row.contains("[+0x"), "{row}");
    assert!(!tree.contains("error"), "{tree}");
}

#[test]
fn tree_shows_compressed_batches_and_records() {
    for codec in ["gzip", "snappy", "lz4", "zstd"] {
        let path = vectors().join(format!("requests/kafkajs_{codec}_1.hex"));
        let tree = ok(&["decode", path.to_str().unwrap()], b"");
        has_row_starting(&tree, &format!("RecordBatch[0] v2 = 7 records, offsets 0..6, {codec} [0x"));
        has_row_starting(&tree, &format!("compression bits 0-2 = {codec}"));
        has_row_starting(&tree, &format!("records records = {codec}, "));
        assert!(tree.contains("bytes decompressed"), "{tree}");
        // The records' positions count in the decompressed payload: the first starts at 0.
        has_row_starting(&tree, "Record[0] = offset 0, key \"k-0\" [+0x0000, ");
        has_row_starting(&tree, "value bytes = \"héllo wörld — 日本語 🚀\" (varint len=32) [+0x");
        has_row_starting(&tree, "value bytes = null (varint len=-1) [+0x");
        assert!(!tree.contains("error"), "{codec}\n{tree}");
    }
}

// ---------------------------------------------------------------------------------------
// Frames built here: a Produce v3 request around any records bytes.

fn i16b(v: i16) -> [u8; 2] {
    v.to_be_bytes()
}

fn produce_v3(records: &[u8]) -> String {
    let mut b = Vec::new();
    b.extend(i16b(0)); // api key: Produce
    b.extend(i16b(3)); // version
    b.extend(7i32.to_be_bytes()); // correlation id
    b.extend(i16b(1));
    b.push(b't'); // client id "t"
    b.extend(i16b(-1)); // transactional id: null
    b.extend(i16b(-1)); // acks
    b.extend(1000i32.to_be_bytes()); // timeout
    b.extend(1i32.to_be_bytes()); // one topic
    b.extend(i16b(4));
    b.extend(b"logs");
    b.extend(1i32.to_be_bytes()); // one partition
    b.extend(5i32.to_be_bytes()); // partition 5
    b.extend((records.len() as i32).to_be_bytes());
    b.extend(records);
    let mut frame = (b.len() as i32).to_be_bytes().to_vec();
    frame.extend(b);
    to_hex(&frame)
}

/// One legacy entry (magic 0 or 1): offset, size, CRC-32, magic, attributes, timestamp
/// (magic 1), key, value.
fn legacy(
    offset: i64,
    magic: u8,
    attributes: u8,
    ts: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Vec<u8> {
    let mut m = vec![magic, attributes];
    if magic == 1 {
        m.extend(ts.to_be_bytes());
    }
    for f in [key, value] {
        match f {
            Some(b) => {
                m.extend((b.len() as i32).to_be_bytes());
                m.extend(b);
            }
            None => m.extend((-1i32).to_be_bytes()),
        }
    }
    let mut out = offset.to_be_bytes().to_vec();
    out.extend(((m.len() + 4) as i32).to_be_bytes());
    out.extend(kwire::records::crc::crc32(&m).to_be_bytes());
    out.extend(m);
    out
}

fn batch(base: i64, codec: Compression, records: &[NewRecord<'_>]) -> Vec<u8> {
    let mut b = BatchBuilder::new(base, 1_700_000_000_000, records);
    b.compression = codec;
    let mut out = Vec::new();
    b.encode_to_vec(&mut out).unwrap();
    out
}

#[test]
fn legacy_sets_in_the_tree_and_as_records() {
    let mut set = legacy(10, 0, 0, 0, Some(b"k0"), Some(b"v0"));
    set.extend(legacy(11, 1, 0, 1_600_000_000_000, None, Some(b"v1")));
    // A gzip wrapper (magic 1) of three inner messages with relative offsets 0..2; the
    // wrapper holds the offset of the last, 14.
    let mut inner = Vec::new();
    for i in 0..3i64 {
        inner.extend(legacy(i, 1, 0, 1_650_000_000_000 + i, Some(format!("ik{i}").as_bytes()), Some(b"iv")));
    }
    let mut gz = Vec::new();
    kwire::records::compression::compress(Compression::Gzip, &inner, &mut gz).unwrap();
    set.extend(legacy(14, 1, 1, 1_650_000_000_002, None, Some(&gz)));
    let file = scratch("legacy.hex", produce_v3(&set).as_bytes());

    let tree = ok(&["decode", file.to_str().unwrap()], b"");
    has_row_starting(&tree, "LegacyMessage[0] v0 = offset 10, key \"k0\" [0x");
    has_row_starting(&tree, "crc uint32 = 0x");
    has_row_starting(&tree, "LegacyMessage[1] v1 = offset 11, key null [0x");
    has_row_starting(&tree, "timestamp int64 = 1600000000000 (2020-09-13T12:26:40.000Z)");
    has_row_starting(&tree, "LegacyMessage[2] v1 = offset 14, gzip wrapper [0x");
    has_row_starting(&tree, "attributes int8 = 0x01: gzip, CreateTime");
    has_row_starting(&tree, "messages = ");
    has_row_starting(&tree, "Message[0] v1 = offset 12, key \"ik0\" [+0x0000, ");
    has_row_starting(&tree, "Message[2] v1 = offset 14, key \"ik2\" [+0x");
    assert!(!tree.contains("error") && !tree.contains("mismatch"), "{tree}");

    let got = lines(&ok(&["decode", "--format", "records", file.to_str().unwrap()], b""));
    let rec = |offset: i64, ts: Value, key: Option<&str>, value: &str| {
        let mut r = serde_json::json!({"topic": "logs", "partition": 5, "offset": offset, "timestamp": ts,
            "key": key.map(|k| b64(k.as_bytes())), "value": b64(value.as_bytes()), "headers": []});
        if let Some(k) = key {
            r["keyText"] = k.into();
        }
        r["valueText"] = value.into();
        r
    };
    let want = vec![
        rec(10, (-1i64).into(), Some("k0"), "v0"),
        rec(11, 1_600_000_000_000i64.into(), None, "v1"),
        rec(12, 1_650_000_000_000i64.into(), Some("ik0"), "iv"),
        rec(13, 1_650_000_000_001i64.into(), Some("ik1"), "iv"),
        rec(14, 1_650_000_000_002i64.into(), Some("ik2"), "iv"),
    ];
    assert_eq!(got, want);
}

fn scratch(name: &str, contents: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-records");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

#[test]
fn records_format_fields() {
    let headers =
        [NewHeader { key: b"trace", value: Some(&[0xff, 0x00]) }, NewHeader { key: b"n", value: None }];
    let records = [
        NewRecord::new(Some(b"a"), Some(b"hello")).with_timestamp(1_700_000_000_500).with_headers(&headers),
        NewRecord::new(None, None).with_timestamp(1_700_000_000_000),
    ];
    let mut field = batch(40, Compression::None, &records);
    field.extend(batch(42, Compression::Zstd, &records));
    let file = scratch("fields.hex", produce_v3(&field).as_bytes());
    let out = ok(&["decode", "--format", "records", file.to_str().unwrap()], b"");
    let first = r#"{"topic":"logs","partition":5,"offset":40,"timestamp":1700000000500,"key":"YQ==","keyText":"a","value":"aGVsbG8=","valueText":"hello","headers":[{"key":"trace","value":"/wA="},{"key":"n","value":null}]}"#;
    let second = r#"{"topic":"logs","partition":5,"offset":41,"timestamp":1700000000000,"key":null,"value":null,"headers":[]}"#;
    let want = format!(
        "{first}\n{second}\n{}\n{}\n",
        first.replace("\"offset\":40", "\"offset\":42"),
        second.replace("\"offset\":41", "\"offset\":43")
    );
    assert_eq!(out, want);
    // Frames with no records field print nothing.
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/seed/apiversions_v4_request.hex");
    assert_eq!(ok(&["decode", "--format", "records", seed.to_str().unwrap()], b""), "");
}

#[test]
fn corrupted_and_cut_short_batches() {
    let records = [NewRecord::new(Some(b"a"), Some(b"hello")), NewRecord::new(Some(b"b"), Some(b"world"))];
    let plain = batch(0, Compression::None, &records);
    let zstd = batch(2, Compression::Zstd, &records);

    // A flipped CRC byte: the tree says so and still shows the (unverified) records; the
    // records format fails.
    let mut bad = plain.clone();
    bad[20] ^= 0xff;
    let file = scratch("badcrc.hex", produce_v3(&bad).as_bytes());
    let tree = ok(&["decode", file.to_str().unwrap()], b"");
    assert!(tree.contains("(mismatch: computed 0x"), "{tree}");
    has_row_starting(&tree, "error = CRC mismatch: the records below are not verified");
    has_row_starting(&tree, "Record[1] = offset 1, key \"b\"");
    let (stdout, stderr) = fails(&["decode", "--format", "records", file.to_str().unwrap()], b"");
    assert_eq!(stdout, "");
    assert!(stderr.contains("CRC mismatch"), "{stderr}");

    // A compressed batch with a bad CRC is not decompressed.
    let mut bad = zstd.clone();
    bad[20] ^= 0xff;
    let file = scratch("badcrc_zstd.hex", produce_v3(&bad).as_bytes());
    let tree = ok(&["decode", file.to_str().unwrap()], b"");
    has_row_starting(&tree, "error = records not read: CRC mismatch");

    // A broken compressed payload with a correct CRC: a decompression error line.
    let mut bad = zstd.clone();
    bad[61] ^= 0xff; // the zstd frame's magic number
    let crc = kwire::records::crc::crc32c(&bad[21..]);
    bad[17..21].copy_from_slice(&crc.to_be_bytes());
    let file = scratch("badzstd.hex", produce_v3(&bad).as_bytes());
    let tree = ok(&["decode", file.to_str().unwrap()], b"");
    has_row_starting(&tree, "error = records not read: ");
    let (_, stderr) = fails(&["decode", "--format", "records", file.to_str().unwrap()], b"");
    assert!(stderr.contains("topic \"logs\", partition 5"), "{stderr}");

    // A record that runs past its batch: an error line for that record.
    let mut bad = plain.clone();
    bad[61] = 0x7e; // the first record's length: 63
    let crc = kwire::records::crc::crc32c(&bad[21..]);
    bad[17..21].copy_from_slice(&crc.to_be_bytes());
    let file = scratch("badrecord.hex", produce_v3(&bad).as_bytes());
    let tree = ok(&["decode", file.to_str().unwrap()], b"");
    has_row_starting(&tree, "error = record 0: ");

    // A whole batch, then a cut-short one: the first is read, the rest is marked partial.
    let mut field = plain.clone();
    field.extend(&zstd[..30]);
    let file = scratch("partial.hex", produce_v3(&field).as_bytes());
    let tree = ok(&["decode", file.to_str().unwrap()], b"");
    has_row_starting(&tree, "RecordBatch[0] v2 = 2 records, offsets 0..1, none");
    has_row_starting(&tree, "partial = 30 bytes: a last batch cut short");
    let out = kwire(&["decode", "--format", "records", file.to_str().unwrap()], b"");
    assert!(out.status.success());
    assert_eq!(lines(&text(&out.stdout)).len(), 2);
    assert!(text(&out.stderr).contains("partial batch"), "{}", text(&out.stderr));

    // A bad magic and a bad batch length: an error line, no panic.
    let mut bad = plain.clone();
    bad[16] = 7;
    let file = scratch("badmagic.hex", produce_v3(&bad).as_bytes());
    let tree = ok(&["decode", file.to_str().unwrap()], b"");
    has_row_starting(&tree, "error = entry 0: unsupported magic 7");
    fails(&["decode", "--format", "records", file.to_str().unwrap()], b"");

    // Every cut of the records bytes and every byte flip: never a panic.
    for cut in 0..zstd.len() {
        let file = scratch("cut.hex", produce_v3(&zstd[..cut]).as_bytes());
        let out = kwire(&["decode", file.to_str().unwrap()], b"");
        assert!(out.status.success(), "cut {cut}: {}", text(&out.stderr));
    }
    for i in 0..plain.len() {
        let mut m = plain.clone();
        m[i] ^= 0x80;
        let file = scratch("flip.hex", produce_v3(&m).as_bytes());
        for format in ["tree", "records"] {
            let out = kwire(&["decode", "--format", format, file.to_str().unwrap()], b"");
            assert!(!text(&out.stderr).contains("panicked"), "flip {i}: {}", text(&out.stderr));
            assert!(out.status.code().is_some_and(|c| c <= 1), "flip {i}");
        }
    }
}

/// A Fetch response of `version` (built with `kwire encode` from JSON) whose one partition
/// holds `records`; `topic` is the JSON of the topic's name or id field.
fn fetch_response(version: i16, topic: (&str, &str), records: &[u8]) -> PathBuf {
    let doc = serde_json::json!({
        "apiKey": 1, "apiVersion": version, "header": {"correlationId": 9},
        "body": {"throttleTimeMs": 0, "errorCode": 0, "sessionId": 0, "responses": [{
            topic.0: topic.1,
            "partitions": [{"partitionIndex": 2, "errorCode": 0, "highWatermark": 10, "lastStableOffset": 10,
                "logStartOffset": 0, "abortedTransactions": null, "preferredReadReplica": -1,
                "records": b64(records)}]}]}
    });
    let hex = ok(&["encode"], doc.to_string().as_bytes());
    scratch(&format!("fetch_v{version}.hex"), hex.as_bytes())
}

#[test]
fn fetch_responses_by_topic_name_and_id() {
    // A log-append-time batch: every record takes the batch's max timestamp, as Kafka
    // reads it; then a transaction's COMMIT marker (a control batch), which is left out.
    let records = [
        NewRecord::new(Some(b"x"), Some(b"1")).with_timestamp(1_700_000_000_000),
        NewRecord::new(Some(b"y"), Some(b"2")).with_timestamp(1_700_000_000_100),
    ];
    let mut b = BatchBuilder::new(100, 1_700_000_000_000, &records);
    b.timestamp_type = kwire::records::TimestampType::LogAppendTime;
    b.max_timestamp = Some(1_700_000_009_999);
    b.compression = Compression::Lz4;
    let mut field = Vec::new();
    b.encode_to_vec(&mut field).unwrap();
    let marker_key = [0u8, 0, 0, 1]; // version 0, type 1 (COMMIT)
    let marker_value = [0u8, 0, 0, 0, 0, 5]; // version 0, coordinator epoch 5
    let marker = [NewRecord::new(Some(&marker_key), Some(&marker_value))];
    let mut c = BatchBuilder::new(102, 1_700_000_010_000, &marker);
    c.control = true;
    c.transactional = true;
    c.encode_to_vec(&mut field).unwrap();

    let want = |topic: &str| {
        format!(
            "{{\"topic\":\"{topic}\",\"partition\":2,\"offset\":100,\"timestamp\":1700000009999,\"key\":\"eA==\",\"keyText\":\"x\",\"value\":\"MQ==\",\"valueText\":\"1\",\"headers\":[]}}\n\
             {{\"topic\":\"{topic}\",\"partition\":2,\"offset\":101,\"timestamp\":1700000009999,\"key\":\"eQ==\",\"keyText\":\"y\",\"value\":\"Mg==\",\"valueText\":\"2\",\"headers\":[]}}\n"
        )
    };
    let args = |path: &Path, version: &str| {
        let p = path.to_str().unwrap().to_string();
        vec![
            "decode".to_string(),
            "--api-key".into(),
            "Fetch".into(),
            "--api-version".into(),
            version.into(),
            p,
        ]
    };
    let run = |a: Vec<String>, extra: &[&str]| {
        let mut a: Vec<&str> = a.iter().map(String::as_str).collect::<Vec<_>>();
        a.extend_from_slice(extra);
        ok(&a, b"")
    };
    // v12 names the topic, v13 gives only its id (Kafka's string form of the UUID).
    let v12 = fetch_response(12, ("topic", "orders"), &field);
    assert_eq!(run(args(&v12, "12"), &["--format", "records"]), want("orders"));
    let v13 = fetch_response(13, ("topicId", "AAAAAAAAAAAAAAAAAAAAAQ"), &field);
    assert_eq!(run(args(&v13, "13"), &["--format", "records"]), want("AAAAAAAAAAAAAAAAAAAAAQ"));

    // Produce v13 also carries only the topic id.
    let doc = serde_json::json!({
        "header": {"requestApiKey": 0, "requestApiVersion": 13, "correlationId": 1, "clientId": "t"},
        "body": {"transactionalId": null, "acks": -1, "timeoutMs": 1000, "topicData": [{
            "topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partitionData": [{"index": 2, "records": b64(&field)}]}]}
    });
    let produce = scratch("produce_v13.hex", ok(&["encode"], doc.to_string().as_bytes()).as_bytes());
    assert_eq!(
        ok(&["decode", "--format", "records", produce.to_str().unwrap()], b""),
        want("AAAAAAAAAAAAAAAAAAAAAQ")
    );

    let tree = run(args(&v13, "13"), &[]);
    has_row_starting(&tree, "RecordBatch[0] v2 = 2 records, offsets 100..101, lz4 [0x");
    has_row_starting(&tree, "timestampType bit 3 = LogAppendTime");
    has_row_starting(
        &tree,
        "timestampDelta varlong = 100 (timestamp 1700000009999, 2023-11-14T22:13:29.999Z)",
    );
    has_row_starting(&tree, "RecordBatch[1] v2 = 1 record, offsets 102..102, none, control [0x");
    has_row_starting(&tree, "isControl bit 5 = true");
    has_row_starting(&tree, "Record[0] = offset 102, control [0x");
    has_row_starting(&tree, "control = COMMIT (coordinator epoch 5) [0x");
}

/// Fetch responses that Apache Kafka 4.4.0 itself sent to five real clients
/// (`tests/vectors/kafka44`): `--format records` prints exactly the non-control records that
/// kwire's batch views find in them, each partition's offsets ascending.
#[test]
fn real_broker_fetch_responses_print_their_records() {
    use kwire::ApiKey;
    use kwire::dispatch;
    use kwire::messages::ResponseBodyView;

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/kafka44");
    let mut files = 0;
    let mut total = 0;
    for entry in std::fs::read_dir(dir.join("responses")).unwrap() {
        let response = entry.unwrap().path();
        let name = response.file_name().unwrap().to_str().unwrap().to_owned();
        let Some(version) = name.split("_fetch_v").nth(1) else { continue };
        let version: i16 = version.split('_').next().unwrap().parse().unwrap();
        let request = dir.join("requests").join(&name);

        // What the library sees: every non-control record of every batch.
        let frame = hex(&std::fs::read_to_string(&response).unwrap());
        let parsed = dispatch::parse_response(&frame[4..], ApiKey::Fetch, version).unwrap();
        let ResponseBodyView::Fetch(body) = parsed.body else { panic!("{name}: not a Fetch response") };
        let mut want = 0;
        for topic in body.responses() {
            for partition in topic.partitions() {
                for batch in partition.records().into_iter().flatten() {
                    let batch = batch.unwrap();
                    if !batch.is_control() {
                        let mut scratch = vec![0; 1 << 20];
                        want += batch.records_in(&mut scratch).unwrap().count();
                    }
                }
            }
        }

        let out = ok(
            &[
                "decode",
                "--format",
                "records",
                "--request",
                request.to_str().unwrap(),
                response.to_str().unwrap(),
            ],
            b"",
        );
        let got = lines(&out);
        assert_eq!(got.len(), want, "{name}");
        let mut last: HashMap<(String, i64), i64> = HashMap::new();
        for g in &got {
            let key = (g["topic"].as_str().unwrap().to_owned(), g["partition"].as_i64().unwrap());
            let offset = g["offset"].as_i64().unwrap();
            assert!(g["timestamp"].as_i64().is_some(), "{name}: {g}");
            if let Some(prev) = last.insert(key, offset) {
                assert!(offset > prev, "{name}: offsets go {prev} then {offset}");
            }
        }
        files += 1;
        total += got.len();
    }
    assert_eq!(files, 8);
    assert!(total > 0, "the broker's Fetch responses carry records");
}
