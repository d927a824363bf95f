//! kwire's codec held against Apache Kafka's own generated Java codec (kafka-clients, the
//! version in `tests/java/harness/pom.xml`). See `docs/kafka-codec.md`.
//!
//! For every API kwire knows, every version, requests and responses, values generated with
//! `arbitrary` from a seeded random stream are encoded by kwire into whole frames (a header
//! with random client ids and header tagged fields, then the body). All frames go through one
//! run of `kwire decode --format json` (two: requests, then responses) and one JVM running
//! `tests/java/harness`, which reads each frame with Kafka's generated message classes. The
//! shared vectors (`tests/vectors/{clients,seed,bench}`: real clients' frames and the demo
//! broker's answers) go through the same run. Every frame must then pass four checks:
//!
//! - **decode**: Kafka reads kwire's header and body without an error and without leaving a
//!   byte unread;
//! - **json**: Kafka's JSON (its generated `*JsonConverter` classes) equals the JSON that
//!   `kwire decode --format json` prints, as JSON values, up to kwire's two documented
//!   additions (`_unknownTaggedFields`, and the bytes of `records` fields, which Kafka writes as
//!   `""`);
//! - **bytes**: Kafka's re-encoding of what it read equals kwire's bytes exactly;
//! - **reread**: `kwire encode` builds the same frame from Kafka's JSON (where that JSON can
//!   carry the whole frame: no unknown tagged fields, no records bytes).
//!
//! Every mismatch is collected and reported (API, version, the frame's hex, both JSONs), then
//! the test fails. The Java harness is built by `tests/java/build.sh` (cached in
//! `target/java`); without Java or Maven the test fails. `KWIRE_KAFKA_CODEC_CASES` sets the
//! number of values per message and version (default 32).
#![cfg(feature = "cli")]

mod common;
use common::java;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use arbitrary::Unstructured;
use common::XorShift;
use kwire::AnyBody;
use kwire::messages::*;
use kwire::reflect::{self, FieldType, StructSchema};
use kwire::testing::AsVersion;
use kwire::{ApiKey, EncodeError};
use serde_json::Value;

const DEFAULT_CASES: usize = 32;
const SEED: u64 = 0x6b61_666b_6163_6f64;
/// Most bytes `arbitrary` gets for one value.
const INPUT_BYTES: usize = 640;

// ------------------------------------------------------------------ values from `arbitrary`

/// A version and the body kwire encoded at it, or why it could not.
type Encoded = (i16, Result<Vec<u8>, EncodeError>);

/// One value of the API's request (or response) from `arbitrary`, encoded at every version
/// as that version carries it (`AsVersion`): `None` when `arbitrary` ran out of input, else
/// per version the body or why kwire cannot encode it.
fn generate(api: ApiKey, response: bool, data: &[u8]) -> Option<Vec<Encoded>> {
    let u = &mut Unstructured::new(data);
    if response {
        let value = ResponseBody::arbitrary_for(api, u).ok()?;
        Some(encode_every_version(api, api.response_versions(), |ver| value.as_version(ver)))
    } else {
        let value = RequestBody::arbitrary_for(api, u).ok()?;
        Some(encode_every_version(api, api.request_versions(), |ver| value.as_version(ver)))
    }
}

fn encode_every_version<B: AnyBody + std::fmt::Debug>(
    api: ApiKey,
    versions: kwire::Versions,
    at: impl Fn(kwire::types::Ver) -> B,
) -> Vec<Encoded> {
    let mut out = Vec::new();
    for version in versions.min..=versions.max {
        let value = at(kwire::types::Ver::new(version, api.flexible_versions().contains(version)));
        let encoded = value.encoded_len(version).and_then(|n| {
            let mut buf = vec![0u8; n];
            value.encode(version, &mut buf).map(|written| {
                assert_eq!(written, n, "{} v{version}: encoded_len and encode disagree", api.name());
                buf
            })
        });
        out.push((version, encoded));
    }
    out
}

/// The errors with which kwire refuses values that a version cannot carry even after
/// `AsVersion` (unknown tags out of order or clashing with known ones, a null where the
/// version has none, an over-long string); such values are skipped, as in
/// `tests/roundtrip.rs`. Any other error fails the test.
fn refusable(e: &EncodeError) -> bool {
    matches!(
        e,
        EncodeError::InvalidTaggedFields { .. }
            | EncodeError::NullNotAllowed { .. }
            | EncodeError::StringTooLong { .. }
    )
}

// ------------------------------------------------------------------ frames

/// One frame under test.
struct Frame {
    api: ApiKey,
    response: bool,
    version: i16,
    /// The whole frame, size prefix included.
    bytes: Vec<u8>,
    /// Where the body starts in `bytes`.
    body_at: usize,
    /// The shared vector it comes from (`None` for generated frames).
    vector: Option<String>,
}

impl Frame {
    fn kind(&self) -> &'static str {
        if self.response { "response" } else { "request" }
    }
    fn label(&self) -> String {
        match &self.vector {
            Some(name) => {
                format!("{} {} v{} (tests/vectors/{name})", self.api.name(), self.kind(), self.version)
            }
            None => format!("{} {} v{}", self.api.name(), self.kind(), self.version),
        }
    }
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A header tagged-field section: usually empty, sometimes one or two unknown tags.
fn header_tags(rng: &mut XorShift, out: &mut Vec<u8>) {
    let count = match rng.next() % 8 {
        0 => 2,
        1 => 1,
        _ => 0,
    };
    put_uvarint(out, count);
    let mut tag = 0u32;
    for _ in 0..count {
        tag += 1 + (rng.next() % 200) as u32;
        let data = rng.bytes(8);
        put_uvarint(out, tag);
        put_uvarint(out, data.len() as u32);
        out.extend_from_slice(&data);
    }
}

/// A whole frame: size prefix, the header kwire's tables give for the API and version (with
/// a random client id and header tagged fields), then the body.
fn frame(
    api: ApiKey,
    response: bool,
    version: i16,
    correlation_id: i32,
    body: &[u8],
    rng: &mut XorShift,
) -> Frame {
    let mut bytes = vec![0u8; 4];
    if response {
        bytes.extend_from_slice(&correlation_id.to_be_bytes());
        if api.response_header_version(version) >= 1 {
            header_tags(rng, &mut bytes);
        }
    } else {
        bytes.extend_from_slice(&api.to_i16().to_be_bytes());
        bytes.extend_from_slice(&version.to_be_bytes());
        bytes.extend_from_slice(&correlation_id.to_be_bytes());
        // ClientId: from header v1 on, a nullable string with an int16 length even in v2.
        let header_version = api.request_header_version(version);
        match rng.next() % 8 {
            _ if header_version < 1 => {}
            0 => bytes.extend_from_slice(&(-1i16).to_be_bytes()),
            1 => bytes.extend_from_slice(&0i16.to_be_bytes()),
            _ => {
                let id = rng.text(24);
                bytes.extend_from_slice(&(id.len() as i16).to_be_bytes());
                bytes.extend_from_slice(&id);
            }
        }
        if header_version >= 2 {
            header_tags(rng, &mut bytes);
        }
    }
    let body_at = bytes.len();
    bytes.extend_from_slice(body);
    let size = (bytes.len() - 4) as i32;
    bytes[..4].copy_from_slice(&size.to_be_bytes());
    Frame { api, response, version, bytes, body_at, vector: None }
}

/// Generates the frames: for every API, requests and responses, values until every version
/// has `cases` frames (or the attempts run out, which fails the test). Also returns how many
/// times kwire refused to encode a value at a version.
fn frames(cases: usize) -> (Vec<Frame>, usize) {
    let mut rng = XorShift(SEED);
    let mut out = Vec::new();
    let mut refused = 0usize;
    for &api in ApiKey::ALL {
        for response in [false, true] {
            let versions = if response { api.response_versions() } else { api.request_versions() };
            let mut counts: BTreeMap<i16, usize> = (versions.min..=versions.max).map(|v| (v, 0)).collect();
            let mut attempts = 0;
            while counts.values().any(|&n| n < cases) {
                attempts += 1;
                assert!(
                    attempts <= cases * 50,
                    "{} {}: arbitrary gave too few encodable values: {counts:?} after {attempts} attempts",
                    api.name(),
                    if response { "response" } else { "request" }
                );
                let data = rng.input(INPUT_BYTES);
                let Some(encoded) = generate(api, response, &data) else { continue };
                let got: Vec<i16> = encoded.iter().map(|(v, _)| *v).collect();
                assert_eq!(
                    got,
                    (versions.min..=versions.max).collect::<Vec<_>>(),
                    "{}: the message's versions differ from ApiKey's",
                    api.name()
                );
                for (version, body) in encoded {
                    let count = counts.get_mut(&version).expect("a version of the API");
                    match body {
                        Ok(body) if *count < cases => {
                            *count += 1;
                            let correlation_id = out.len() as i32;
                            out.push(frame(api, response, version, correlation_id, &body, &mut rng));
                        }
                        Ok(_) => {}
                        Err(e) => {
                            assert!(refusable(&e), "{} v{version}: unexpected encode error {e}", api.name());
                            refused += 1;
                        }
                    }
                }
            }
        }
    }
    (out, refused)
}

/// Reads an unsigned varint at `*at`.
fn uvarint(bytes: &[u8], at: &mut usize) -> u32 {
    let mut value = 0u32;
    for shift in (0..35).step_by(7) {
        let b = bytes[*at];
        *at += 1;
        value |= u32::from(b & 0x7f) << shift;
        if b < 0x80 {
            break;
        }
    }
    value
}

/// A shared vector as a frame under test: where its header ends, by kwire's header tables.
fn vector_frame(name: String, bytes: Vec<u8>, api: ApiKey, response: bool, version: i16) -> Frame {
    let mut at = if response { 8 } else { 12 };
    if !response && api.request_header_version(version) >= 1 {
        let len = i16::from_be_bytes([bytes[12], bytes[13]]);
        at = 14 + usize::try_from(len).unwrap_or(0);
    }
    let tagged = if response {
        api.response_header_version(version) >= 1
    } else {
        api.request_header_version(version) >= 2
    };
    if tagged {
        for _ in 0..uvarint(&bytes, &mut at) {
            let _tag = uvarint(&bytes, &mut at);
            at += uvarint(&bytes, &mut at) as usize;
        }
    }
    Frame { api, response, version, bytes, body_at: at, vector: Some(name) }
}

/// Every shared vector: the real clients' requests and the demo broker's answers
/// (`clients/`), the seed frames and the benchmark frames.
fn vectors() -> Vec<Frame> {
    let mut out = Vec::new();
    for (name, path) in common::hex_files("clients/requests") {
        let request = common::vector(&path);
        let api = ApiKey::from_i16(i16::from_be_bytes([request[4], request[5]])).expect("a known API");
        let version = i16::from_be_bytes([request[6], request[7]]);
        // A broker answers an ApiVersions version it does not support with a v0 body.
        let response_version = if name.ends_with("_rejected") { 0 } else { version };
        let response_path = format!("clients/responses/{name}.hex");
        let response = common::vector(&response_path);
        out.push(vector_frame(path, request, api, false, version));
        out.push(vector_frame(response_path, response, api, true, response_version));
    }
    for dir in ["seed", "bench"] {
        for (name, path) in common::hex_files(dir) {
            let (api, version) = common::api_and_version(&name);
            out.push(vector_frame(
                path.clone(),
                common::vector(&path),
                api,
                name.contains("_response"),
                version,
            ));
        }
    }
    out
}

// ------------------------------------------------------------------ the two decoders

fn tmp_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kafka_codec");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `command`, feeding `input` on stdin from a thread; returns (success, stdout, stderr).
fn run(mut command: Command, input: Vec<u8>) -> (bool, String, String) {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        // The process may stop reading early (kwire at a frame it rejects).
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).expect("UTF-8 output"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// kwire's JSON of every frame, or why `kwire decode` refused it. All requests go through
/// one `kwire decode --format json --compact`, all responses through another, told what
/// each response answers by a file of request headers (`--request`). If kwire refuses a
/// frame, the run starts again after it.
fn kwire_json(frames: &[Frame]) -> Vec<Result<Value, String>> {
    let mut out: Vec<Option<Result<Value, String>>> = (0..frames.len()).map(|_| None).collect();
    for response in [false, true] {
        let indices: Vec<usize> = (0..frames.len()).filter(|&i| frames[i].response == response).collect();
        let mut start = 0;
        while start < indices.len() {
            let batch = &indices[start..];
            let mut input = Vec::new();
            let mut requests = Vec::new();
            for &i in batch {
                let f = &frames[i];
                input.extend_from_slice(&f.bytes);
                // A request header naming the API and version, with the response's correlation id.
                requests.extend_from_slice(&8i32.to_be_bytes());
                requests.extend_from_slice(&f.api.to_i16().to_be_bytes());
                requests.extend_from_slice(&f.version.to_be_bytes());
                requests.extend_from_slice(&f.bytes[4..8]);
            }
            let mut command = Command::new(env!("CARGO_BIN_EXE_kwire"));
            // --show-secrets: the comparison is of every byte, SASL tokens and HMACs included.
            command.args(["decode", "--format", "json", "--compact", "--binary", "--show-secrets"]);
            let request_file =
                response.then(|| tmp_dir().join(format!("requests-{}.bin", std::process::id())));
            if let Some(path) = &request_file {
                std::fs::write(path, &requests).unwrap();
                command.arg("--request").arg(path);
            }
            let (ok, stdout, stderr) = run(command, input);
            if let Some(path) = &request_file {
                let _ = std::fs::remove_file(path);
            }
            let lines: Vec<&str> = stdout.lines().collect();
            let failed_at = if ok {
                assert_eq!(lines.len(), batch.len(), "kwire decode printed one line per frame");
                batch.len()
            } else {
                // "cannot decode frame N (input offset ...)", or "the frame" for one frame.
                let n = stderr
                    .split("cannot decode frame ")
                    .nth(1)
                    .and_then(|rest| rest.split(' ').next())
                    .and_then(|n| n.parse::<usize>().ok())
                    .unwrap_or(1);
                let failed_at = n - 1;
                assert!(failed_at < batch.len(), "kwire decode failed: {stderr}");
                out[batch[failed_at]] = Some(Err(stderr.trim().to_string()));
                failed_at
            };
            for (k, &i) in batch[..failed_at].iter().enumerate() {
                let value = serde_json::from_str(lines[k])
                    .unwrap_or_else(|e| panic!("kwire's JSON: {e}: {}", lines[k]));
                out[i] = Some(Ok(value));
            }
            start += failed_at + 1;
        }
    }
    out.into_iter().map(|v| v.expect("every frame decoded or refused")).collect()
}

/// Kafka's answer for every frame, from one JVM.
fn kafka_json(frames: &[Frame]) -> Vec<Value> {
    let lines = frames
        .iter()
        .map(|f| {
            let mut line = format!("{} {} {} ", f.kind(), f.api.to_i16(), f.version);
            for b in &f.bytes[4..] {
                let _ = write!(line, "{b:02x}");
            }
            line
        })
        .collect();
    java::answers(lines, "Kafka codec check")
}

// ------------------------------------------------------------------ comparing

/// kwire's JSON made comparable with Kafka's: kwire's documented additions taken out.
/// `_unknownTaggedFields` are dropped (Kafka's JSON leaves unknown tagged fields out; the
/// bytes check covers them), and the base64 bytes of `records` fields become `""`, which is
/// all Kafka's converters write for records. Counts what it changed.
fn kafka_form(value: &mut Value, schema: Option<(&StructSchema, i16)>, counts: &mut Conventions) {
    let Value::Object(map) = value else { return };
    if map.remove("_unknownTaggedFields").is_some() {
        counts.unknown_tagged += 1;
    }
    if let Some((schema, version)) = schema {
        for field in schema.fields.iter().filter(|f| f.versions.contains(version)) {
            let key = json_key(field.name);
            let Some(v) = map.get_mut(&key) else { continue };
            match &field.ty {
                FieldType::Records if v.is_string() => {
                    *v = Value::String(String::new());
                    counts.records += 1;
                }
                FieldType::Struct(s) => kafka_form(v, Some((s, version)), counts),
                FieldType::Array(FieldType::Struct(s)) => {
                    for element in v.as_array_mut().into_iter().flatten() {
                        kafka_form(element, Some((s, version)), counts);
                    }
                }
                _ => {}
            }
        }
    }
}

fn json_key(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map(|c| c.to_ascii_lowercase().to_string() + chars.as_str()).unwrap_or_default()
}

#[derive(Clone, Copy, Default, PartialEq)]
struct Conventions {
    unknown_tagged: usize,
    records: usize,
}

/// The first difference between two JSON values, as a path and both sides. Numbers are
/// compared as values: integers exactly, floats bit for bit; an integer never equals a float.
fn diff(kwire: &Value, kafka: &Value, path: &str) -> Option<String> {
    let show = |v: &Value| v.to_string();
    match (kwire, kafka) {
        (Value::Number(a), Value::Number(b)) => {
            let same = if a.is_f64() || b.is_f64() {
                a.is_f64() && b.is_f64() && a.as_f64().map(f64::to_bits) == b.as_f64().map(f64::to_bits)
            } else {
                a == b
            };
            (!same).then(|| format!("{path}: kwire {}, Kafka {}", show(kwire), show(kafka)))
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                return Some(format!("{path}: kwire has {} elements, Kafka {}", a.len(), b.len()));
            }
            a.iter().zip(b).enumerate().find_map(|(i, (x, y))| diff(x, y, &format!("{path}[{i}]")))
        }
        (Value::Object(a), Value::Object(b)) => {
            for key in a.keys() {
                if !b.contains_key(key) {
                    return Some(format!("{path}.{key}: only kwire has it ({})", show(&a[key])));
                }
            }
            for key in b.keys() {
                if !a.contains_key(key) {
                    return Some(format!("{path}.{key}: only Kafka has it ({})", show(&b[key])));
                }
            }
            a.iter().find_map(|(key, x)| diff(x, &b[key], &format!("{path}.{key}")))
        }
        _ => (kwire != kafka).then(|| format!("{path}: kwire {}, Kafka {}", show(kwire), show(kafka))),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One disagreement between kwire and Kafka on one frame.
struct Mismatch {
    /// `decode`, `json` or `bytes`.
    check: &'static str,
    label: String,
    detail: String,
    frame: String,
    kwire: String,
    kafka: String,
}

/// A disagreement that is understood and has a reason. It is reported with its count, but
/// does not fail the test; any other disagreement does.
struct Known {
    name: &'static str,
    reason: &'static str,
    /// Whether the mismatch is this one, given kwire's JSON of the frame.
    matches: fn(&Mismatch, Option<&Value>) -> bool,
}

const KNOWN: &[Known] = &[Known {
    name: "unknown tags above i32::MAX",
    reason: "Kafka holds tags in a Java int: it reads an unknown tagged field whose tag is 2^31 or more (as a \
             negative number) but its RawTaggedFieldWriter refuses to write it back; kwire writes and reads tags as \
             unsigned 32-bit numbers, as the protocol's unsigned varint allows",
    matches: |m, kwire| {
        m.check == "bytes"
            && m.detail.contains("Invalid raw tag field list")
            && kwire.is_some_and(has_big_unknown_tag)
    },
}];

/// Whether a kwire JSON document holds an unknown tagged field whose tag exceeds `i32::MAX`.
fn has_big_unknown_tag(v: &Value) -> bool {
    match v {
        Value::Object(map) => map.iter().any(|(key, v)| {
            if key == "_unknownTaggedFields" {
                v.as_array()
                    .into_iter()
                    .flatten()
                    .any(|t| t["tag"].as_u64().is_some_and(|tag| tag > i32::MAX as u64))
            } else {
                has_big_unknown_tag(v)
            }
        }),
        Value::Array(items) => items.iter().any(has_big_unknown_tag),
        _ => false,
    }
}

/// Every disagreement on one frame.
fn compare(
    f: &Frame,
    kafka: &Value,
    kwire: &Result<Value, String>,
    conventions: &mut Conventions,
) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let mut report = |check: &'static str, detail: String, with_kwire: bool| {
        out.push(Mismatch {
            check,
            label: f.label(),
            detail,
            frame: hex(&f.bytes),
            kwire: match (with_kwire, kwire) {
                (true, Ok(doc)) => doc.to_string(),
                _ => String::new(),
            },
            kafka: kafka.to_string(),
        });
    };
    // (a) Kafka reads the frame.
    if let Some(error) = kafka.get("error") {
        report("decode", format!("Kafka rejects kwire's frame: {}", error.as_str().unwrap_or("?")), true);
        return out;
    }
    let header_version = if f.response {
        f.api.response_header_version(f.version)
    } else {
        f.api.request_header_version(f.version)
    };
    if kafka["headerVersion"] != header_version {
        report(
            "decode",
            format!("header version: kwire {header_version}, Kafka {}", kafka["headerVersion"]),
            false,
        );
    }
    // (c) Kafka writes back the same bytes.
    let ours = hex(&f.bytes[4..]);
    let header_hex = 2 * (f.body_at - 4);
    match (kafka.get("reencoded").and_then(Value::as_str), kafka.get("writeError")) {
        (Some(theirs), _) if theirs == ours => {}
        (Some(theirs), _) if theirs.len() >= header_hex && theirs[..header_hex] == ours[..header_hex] => {
            report(
                "bytes",
                format!(
                    "Kafka re-encodes the body differently:\n  kwire {}\n  Kafka {}",
                    &ours[header_hex..],
                    &theirs[header_hex..]
                ),
                true,
            )
        }
        (Some(theirs), _) => report(
            "bytes",
            format!("Kafka re-encodes the header differently:\n  kwire {ours}\n  Kafka {theirs}"),
            true,
        ),
        (None, error) => report(
            "bytes",
            format!(
                "Kafka reads the frame but cannot write it back: {}",
                error.and_then(Value::as_str).unwrap_or("?")
            ),
            true,
        ),
    }
    // (b) Kafka's JSON is kwire's.
    match kwire {
        Err(e) => report("json", format!("kwire decode refuses kwire's own frame: {e}"), false),
        Ok(doc) => {
            let mut header = doc["header"].clone();
            let mut body = doc["body"].clone();
            kafka_form(&mut header, None, conventions);
            let schema =
                if f.response { reflect::response_schema(f.api) } else { reflect::request_schema(f.api) };
            kafka_form(&mut body, Some((schema.body, f.version)), conventions);
            if let Some(problem) =
                diff(&header, &kafka["header"], "header").or_else(|| diff(&body, &kafka["body"], "body"))
            {
                report("json", problem, true);
            }
        }
    }
    out
}

/// `kwire encode` over Kafka's JSON of the frames in `docs` (index, document): the frame
/// kwire builds from each, as hex, or why it refused. One run for all; if kwire refuses a
/// document, the run starts again after it.
fn kwire_encode(docs: &[(usize, Value)]) -> Vec<(usize, Result<String, String>)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < docs.len() {
        let batch = &docs[start..];
        let input: String = batch.iter().map(|(_, doc)| doc.to_string() + "\n").collect();
        let mut command = Command::new(env!("CARGO_BIN_EXE_kwire"));
        command.arg("encode");
        let (ok, stdout, stderr) = run(command, input.into_bytes());
        if ok {
            let lines: Vec<&str> = stdout.lines().collect();
            assert_eq!(lines.len(), batch.len(), "kwire encode wrote one line per document");
            out.extend(batch.iter().zip(lines).map(|((i, _), line)| (*i, Ok(line.to_string()))));
            break;
        }
        // "JSON document N: ...", or no number for a single document; nothing is written.
        let n = stderr
            .split("JSON document ")
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(1);
        assert!(n >= 1 && n <= batch.len(), "kwire encode failed: {stderr}");
        out.push((batch[n - 1].0, Err(stderr.trim().to_string())));
        // The documents before the refused one are built again in the next run.
        let (before, _) = batch.split_at(n - 1);
        if !before.is_empty() {
            out.extend(kwire_encode(before));
        }
        start += n;
    }
    out
}

fn cases() -> usize {
    match std::env::var("KWIRE_KAFKA_CODEC_CASES") {
        Ok(v) => v.parse().expect("KWIRE_KAFKA_CODEC_CASES: a number"),
        Err(_) => DEFAULT_CASES,
    }
}

#[test]
fn kwire_matches_kafkas_own_codec() {
    let t0 = Instant::now();
    let (mut frames, refused) = frames(cases());
    let generated = frames.len();
    frames.extend(vectors());
    let t_gen = t0.elapsed();
    // Kafka and kwire read the frames at the same time, each timed on its own.
    let ((kafka, t_java), (kwire, t_kwire)) = std::thread::scope(|s| {
        let java = s.spawn(|| {
            let start = Instant::now();
            (kafka_json(&frames), start.elapsed())
        });
        let start = Instant::now();
        let kwire = (kwire_json(&frames), start.elapsed());
        (java.join().expect("the Kafka side"), kwire)
    });

    let mut mismatches = Vec::new();
    let mut conventions = Conventions::default();
    // (d) The frames whose JSON is all Kafka's (no kwire addition set aside), as documents
    // for `kwire encode`.
    let mut documents = Vec::new();
    for (i, ((f, kafka), kwire)) in frames.iter().zip(&kafka).zip(&kwire).enumerate() {
        let before = conventions;
        let found = compare(f, kafka, kwire, &mut conventions);
        if kafka.get("error").is_none() && kwire.is_ok() && conventions == before {
            let mut doc = serde_json::Map::new();
            if f.response {
                doc.insert("apiKey".into(), f.api.to_i16().into());
                doc.insert("apiVersion".into(), f.version.into());
            }
            doc.insert("header".into(), kafka["header"].clone());
            doc.insert("body".into(), kafka["body"].clone());
            documents.push((i, Value::Object(doc)));
        }
        mismatches.extend(found.into_iter().map(|m| (m, i)));
    }
    let t_encode = Instant::now();
    let reread = documents.len();
    for (i, built) in kwire_encode(&documents) {
        let f = &frames[i];
        let detail = match built {
            Ok(hex_frame) if hex_frame == hex(&f.bytes) => continue,
            Ok(hex_frame) => format!("kwire encode builds another frame from Kafka's JSON:\n  {hex_frame}"),
            Err(e) => format!("kwire encode refuses Kafka's JSON: {e}"),
        };
        let m = Mismatch {
            check: "reread",
            label: f.label(),
            detail,
            frame: hex(&f.bytes),
            kwire: String::new(),
            kafka: kafka[i].to_string(),
        };
        mismatches.push((m, i));
    }
    let t_encode = t_encode.elapsed();

    let mut unexplained = Vec::new();
    let mut known_counts = vec![0usize; KNOWN.len()];
    for (m, i) in mismatches {
        match KNOWN.iter().position(|k| (k.matches)(&m, kwire[i].as_ref().ok())) {
            Some(k) => known_counts[k] += 1,
            None => unexplained.push(m),
        }
    }

    let mut per_message: BTreeMap<String, usize> = BTreeMap::new();
    for f in &frames {
        *per_message.entry(format!("{} {}", f.api.name(), f.kind())).or_default() += 1;
    }
    println!(
        "kafka_codec: {} frames ({generated} generated, {} shared vectors), {} bytes ({} APIs, {} messages, {} values \
         per version) checked in {:.1}s: generate {:.1}s, then side by side Kafka {:.1}s and kwire decode {:.1}s",
        frames.len(),
        frames.len() - generated,
        frames.iter().map(|f| f.bytes.len()).sum::<usize>(),
        ApiKey::ALL.len(),
        per_message.len(),
        cases(),
        t0.elapsed().as_secs_f64(),
        t_gen.as_secs_f64(),
        t_java.as_secs_f64(),
        t_kwire.as_secs_f64(),
    );
    println!("kafka_codec: kwire's encoder refused a generated value at a version {refused} times (skipped)");
    println!(
        "kafka_codec: kwire's JSON additions set aside: _unknownTaggedFields in {} objects, records bytes in {} fields",
        conventions.unknown_tagged, conventions.records
    );
    println!(
        "kafka_codec: kwire encode read Kafka's JSON of the {reread} frames without such additions in {:.1}s",
        t_encode.as_secs_f64()
    );
    for (known, n) in KNOWN.iter().zip(&known_counts) {
        println!("kafka_codec: known disagreement, {}: {n} frames ({})", known.name, known.reason);
    }

    if unexplained.is_empty() {
        return;
    }
    let mut summary: BTreeMap<(String, &str), usize> = BTreeMap::new();
    for m in &unexplained {
        *summary.entry((m.label.clone(), m.check)).or_default() += 1;
    }
    let mut text =
        format!("{} disagreements with Apache Kafka in {} frames:\n", unexplained.len(), frames.len());
    for ((label, check), n) in &summary {
        let _ = writeln!(text, "  {label}: {n} ({check})");
    }
    // The first mismatch of each message, version and check in full.
    let mut shown = std::collections::BTreeSet::new();
    for m in &unexplained {
        if shown.insert((m.label.clone(), m.check)) && shown.len() <= 40 {
            let _ = write!(text, "\n[{}] {}: {}\n  frame: {}\n", m.check, m.label, m.detail, m.frame);
            if !m.kwire.is_empty() {
                let _ = writeln!(text, "  kwire: {}", m.kwire);
            }
            let _ = writeln!(text, "  Kafka: {}", m.kafka);
        }
    }
    panic!("{text}");
}

/// `kafka_form` on a hand-made schema, since no API kwire knows today has a `records` field:
/// records bytes become `""` at any depth, in the versions that have the field, and
/// `_unknownTaggedFields` go.
#[test]
fn kafka_form_sets_aside_kwires_additions() {
    use kwire::Versions;
    use kwire::reflect::FieldSchema;
    const fn field(name: &'static str, ty: FieldType, versions: Versions) -> FieldSchema {
        FieldSchema {
            name,
            ty,
            versions,
            nullable_versions: Versions::new(0, i16::MAX),
            tagged_versions: Versions::NONE,
            tag: None,
            default: None,
            ignorable: false,
            entity: None,
            about: "",
        }
    }
    static PARTITION: StructSchema = StructSchema {
        name: "Partition",
        fields: &[
            field("Records", FieldType::Records, Versions::new(0, i16::MAX)),
            field("Key", FieldType::Bytes, Versions::new(0, i16::MAX)),
        ],
    };
    static PARTITIONS: FieldType = FieldType::Struct(&PARTITION);
    static BODY: StructSchema = StructSchema {
        name: "Body",
        fields: &[
            field("Partitions", FieldType::Array(&PARTITIONS), Versions::new(0, i16::MAX)),
            field("Old", FieldType::Records, Versions::new(0, 1)),
        ],
    };
    let mut doc = serde_json::json!({
        "partitions": [
            {"records": "AAEC", "key": "AAEC", "_unknownTaggedFields": [{"tag": 9, "data": ""}]},
            {"records": null, "key": null}
        ],
        "old": "AAEC",
        "_unknownTaggedFields": [{"tag": 7, "data": "AA=="}]
    });
    let mut counts = Conventions::default();
    kafka_form(&mut doc, Some((&BODY, 2)), &mut counts);
    assert_eq!(
        doc,
        serde_json::json!({
            "partitions": [{"records": "", "key": "AAEC"}, {"records": null, "key": null}],
            "old": "AAEC"
        })
    );
    assert_eq!((counts.unknown_tagged, counts.records), (2, 1));
}
