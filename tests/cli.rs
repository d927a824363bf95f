//! The `kwire` command, run as a real process on the shared vectors and on malformed
//! input: the seed trees line for line, `decode --format json | encode` byte for byte on
//! every vector, streams, the input layouts, the hex dump, and the error messages.
#![cfg(feature = "cli")]

mod common;
use common::kwire_cmd;

use std::path::{Path, PathBuf};

use kwire_cmd::{fails, ok, run as kwire, text};

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors")
}

fn read_hex(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).trim().to_string()
}

fn hex_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(vectors().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hex"))
        .collect();
    files.sort();
    files
}

/// `--api-key`/`--api-version` for a response file named `<api>_v<version>_...`.
fn response_args(name: &str) -> Vec<String> {
    let api = name.split('_').next().unwrap();
    let version = name.split("_v").nth(1).unwrap().split('_').next().unwrap();
    vec!["--api-key".into(), api.into(), "--api-version".into(), version.into()]
}

/// A scratch file for one test.
fn scratch(name: &str, contents: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// Splits a tree line into name, type, value, offset and size, using the columns of
/// the first line (its type is `message vN` and its range `[0x...`).
fn tree_rows(tree: &str) -> Vec<[String; 5]> {
    let mut lines = tree.lines().filter(|l| !l.starts_with("# "));
    let first = lines.next().expect("a tree");
    let type_col = first.find("message").expect("message column");
    let range_col = first.find("[0x").expect("range column");
    std::iter::once(first)
        .chain(lines)
        .map(|line| {
            let name = line[..type_col].trim().trim_start_matches(['|', '+', '-', ' ']).to_string();
            let middle = &line[type_col..range_col];
            let (ty, value) = match middle.find("= ") {
                Some(i) => (middle[..i].trim().to_string(), middle[i + 2..].trim().to_string()),
                None => (middle.trim().to_string(), String::new()),
            };
            let range = &line[range_col + 1..line[range_col..].find(']').unwrap() + range_col];
            let (offset, size) = range.split_once(", ").unwrap();
            [name, ty, value, offset.to_string(), size.trim_end_matches('B').to_string()]
        })
        .collect()
}

#[test]
fn seed_trees_match_the_pages_line_for_line() {
    for path in hex_files("seed") {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let mut args = vec!["decode".to_string(), path.to_string_lossy().into_owned()];
        if name.ends_with("response") {
            args.extend(response_args(&name));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let tree = ok(&args, b"");
        let got = tree_rows(&tree);
        let expected_text =
            std::fs::read_to_string(vectors().join(format!("seed/trees/{name}.txt"))).unwrap();
        let expected: Vec<[String; 5]> = expected_text
            .lines()
            .map(|l| {
                let cells: Vec<String> = l.split('|').map(|c| c.trim().to_string()).collect();
                cells.try_into().unwrap_or_else(|c| panic!("{name}: bad fixture line {c:?}"))
            })
            .collect();
        assert_eq!(got.len(), expected.len(), "{name}: line count\n{tree}");
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert_eq!(g, e, "{name}: line {}\n{tree}", i + 1);
        }
        // Columns are aligned: every range starts in the same column.
        let starts: Vec<usize> =
            tree.lines().filter(|l| !l.starts_with("# ")).map(|l| l.find("[0x").unwrap()).collect();
        assert!(starts.windows(2).all(|w| w[0] == w[1]), "{name}: ranges not aligned\n{tree}");
    }
}

/// decode --format json, then encode: must give back the file's hex.
fn round_trip(path: &Path, decode_args: &[String]) {
    let mut args =
        vec!["decode".to_string(), "--format".into(), "json".into(), path.to_string_lossy().into_owned()];
    args.extend_from_slice(decode_args);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let json = ok(&args, b"");
    let hex = ok(&["encode"], json.as_bytes());
    assert_eq!(hex.trim(), read_hex(path), "{}: round trip differs\n{json}", path.display());
}

#[test]
fn json_round_trips_every_shared_vector() {
    let mut checked = 0;
    for dir in ["seed", "bench"] {
        for path in hex_files(dir) {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let extra = if name.contains("response") { response_args(&name) } else { Vec::new() };
            round_trip(&path, &extra);
            checked += 1;
        }
    }
    for request in hex_files("clients/requests") {
        round_trip(&request, &[]);
        let response = vectors().join("clients/responses").join(request.file_name().unwrap());
        round_trip(&response, &["--request".into(), request.to_string_lossy().into_owned()]);
        checked += 2;
    }
    assert_eq!(checked, 6 + 6 + 2 * 68);
}

#[test]
fn streams_of_frames_round_trip() {
    let requests: Vec<String> = hex_files("clients/requests").iter().map(|p| read_hex(p)).collect();
    let responses: Vec<String> = hex_files("clients/requests")
        .iter()
        .map(|p| read_hex(&vectors().join("clients/responses").join(p.file_name().unwrap())))
        .collect();
    let requests_file = scratch("requests.hex", requests.join("\n").as_bytes());

    let json = ok(&["decode", "--format", "json", "--compact"], requests.join("\n").as_bytes());
    assert_eq!(json.lines().count(), requests.len());
    assert_eq!(ok(&["encode"], json.as_bytes()), requests.join("\n") + "\n");

    // Responses, each with its request; the rejected ApiVersions answers decode as v0.
    let out = kwire(
        &["decode", "--format", "json", "--request", requests_file.to_str().unwrap(), "-"],
        responses.join("").as_bytes(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("decoded as v0"));
    assert_eq!(ok(&["encode"], &out.stdout), responses.join("\n") + "\n");

    // The tree of a stream names each frame.
    let tree = ok(&["decode"], requests[..2].join("").as_bytes());
    assert!(tree.contains("# frame 1, input bytes 0..") && tree.contains("# frame 2, input bytes"), "{tree}");
}

/// The line before each frame's tree says what the frame is, in the words of a capture's
/// pair lines: API, version, correlation id, client, size, the topics and records.
#[test]
fn each_tree_starts_with_a_summary_line() {
    let produce = vectors().join("records/requests/kafkajs_gzip_1.hex");
    let tree = ok(&["decode", produce.to_str().unwrap()], b"");
    let first = tree.lines().next().unwrap();
    assert!(first.starts_with("# Produce v"), "{first}");
    assert!(first.contains(" corr=") && first.contains(" client=") && first.contains(" req="), "{first}");
    assert!(first.contains(" topics=") && first.contains(" gzip"), "{first}");
    assert!(first.contains(" records="), "{first}");
    // The same line in the hex dump, and none in the machine formats.
    let dump = ok(&["decode", "--format", "hex", produce.to_str().unwrap()], b"");
    assert!(dump.lines().any(|l| l == first), "{dump}");
    let json = ok(&["decode", "--format", "json", produce.to_str().unwrap()], b"");
    assert!(!json.contains("# Produce"), "{json}");

    // A response names its API, version and errors (ListOffsets v10's seed answer has none;
    // an error code set in the frame shows by name).
    let resp = read_hex(&vectors().join("seed/listoffsets_v10_response.hex"));
    let args = ["decode", "--api-key", "ListOffsets", "--api-version", "10"];
    let tree = ok(&args, resp.as_bytes());
    let first = tree.lines().next().unwrap();
    assert!(first.starts_with("# ListOffsets v10 response corr="), "{first}");
    assert!(!first.contains("errors="), "{first}");
    let code = ok(
        &["decode", "--format", "json", "--api-key", "ListOffsets", "--api-version", "10"],
        resp.as_bytes(),
    );
    let mut v: serde_json::Value = serde_json::from_str(&code).unwrap();
    v["body"]["topics"][0]["partitions"][0]["errorCode"] = 3.into();
    let hex = ok(&["encode"], v.to_string().as_bytes());
    let tree = ok(&args, hex.as_bytes());
    let first = tree.lines().next().unwrap();
    assert!(first.contains(" errors=UNKNOWN_TOPIC_OR_PARTITION"), "{first}");
}

/// `--format json` names the API beside its key, and `kwire encode` holds the name to it.
#[test]
fn json_names_the_api_beside_its_key() {
    let req = read_hex(&vectors().join("seed/listoffsets_v10_request.hex"));
    let v: serde_json::Value = serde_json::from_str(&ok(&["decode", "-f", "json"], req.as_bytes())).unwrap();
    assert_eq!(v["apiName"], "ListOffsets");
    assert_eq!(v["header"]["requestApiKey"], 2);
    let resp = read_hex(&vectors().join("seed/listoffsets_v10_response.hex"));
    let args = ["decode", "-f", "json", "--compact", "--api-key", "2", "--api-version", "10"];
    let line = ok(&args, resp.as_bytes());
    assert!(line.starts_with(r#"{"apiKey":2,"apiName":"ListOffsets","apiVersion":10,"#), "{line}");
    // Both round-trip; a name that disagrees with the key is refused, naming the field.
    assert_eq!(ok(&["encode"], serde_json::to_string(&v).unwrap().as_bytes()).trim(), req);
    assert_eq!(ok(&["encode"], line.as_bytes()).trim(), resp);
    let mut wrong = v.clone();
    wrong["apiName"] = "Fetch".into();
    let (_, err) = fails(&["encode"], wrong.to_string().as_bytes());
    assert!(err.contains("header.requestApiKey") || err.contains("apiName"), "{err}");
    let wrong = line.replace("\"apiName\":\"ListOffsets\"", "\"apiName\":\"Fetch\"");
    let (_, err) = fails(&["encode"], wrong.as_bytes());
    assert!(err.contains("apiName: Fetch does not match"), "{err}");
}

#[test]
fn input_layouts() {
    let seed = read_hex(&vectors().join("seed/apiversions_v4_request.hex"));
    let bytes: Vec<u8> =
        (0..seed.len() / 2).map(|i| u8::from_str_radix(&seed[2 * i..2 * i + 2], 16).unwrap()).collect();
    let expected = ok(&["decode", "--format", "json"], seed.as_bytes());

    let xxd = "00000000: 0000 000e 0012 0004 0000 0000 0000 0001  ................\n\
               00000010: 0100                                     ..\n";
    let hexdump = "00000000  00 00 00 0e 00 12 00 04  00 00 00 00 00 00 00 01  |................|\n\
                   00000010  01 00                                             |..|\n\
                   00000012\n";
    let offsets = "0000: 00 00 00 0e 00 12 00 04 00 00 00 00 00 00 00 01\n0010: 01 00\n";
    let c_style = "0x00, 0x00, 0x00, 0x0e, 0x00, 0x12, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00";
    for layout in [xxd, hexdump, offsets, c_style] {
        assert_eq!(ok(&["decode", "--format", "json"], layout.as_bytes()), expected, "{layout}");
    }
    // Raw bytes: detected, from stdin or a file, and forced with --binary.
    assert_eq!(ok(&["decode", "--format", "json"], &bytes), expected);
    let file = scratch("seed.bin", &bytes);
    assert_eq!(ok(&["decode", "--format", "json", "--binary", file.to_str().unwrap()], b""), expected);
    // encode --binary writes the same raw bytes.
    let raw = kwire(&["encode", "--binary"], expected.as_bytes());
    assert!(raw.status.success());
    assert_eq!(raw.stdout, bytes);
}

#[test]
fn hex_dump_marks_every_part() {
    let path = vectors().join("seed/listoffsets_v10_request.hex");
    let dump = ok(&["decode", "--format", "hex", path.to_str().unwrap()], b"");
    assert!(!dump.contains('\x1b'), "no colours when stdout is not a terminal");
    assert!(dump.starts_with("legend:"), "{dump}");
    let rows: Vec<&str> = dump.lines().filter(|l| l.starts_with("00")).collect();
    assert_eq!(rows.len(), 3, "46 bytes, 16 per row\n{dump}");
    assert!(rows[0].starts_with("0000  00 00 00 2a 00 02 00 0a"), "{dump}");
    assert!(rows[0].contains("FFFFHHHHHHHHHHTB"), "{dump}");
    assert!(rows[0].contains("size, request_api_key"), "{dump}");
    assert!(rows[2].contains("TimeoutMs"), "{dump}");
    let coloured = ok(&["decode", "--format", "hex", "--color", "always", path.to_str().unwrap()], b"");
    assert!(coloured.contains("\x1b[34m00\x1b[0m"), "frame bytes in blue");
}

#[test]
fn json_uses_kafka_names_and_encodings() {
    let path = vectors().join("clients/requests/kafkapython_listoffsets_v10_ts_rc_p012.hex");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["decode", "--format", "json", path.to_str().unwrap()], b"")).unwrap();
    assert_eq!(json["header"]["requestApiKey"], 2);
    assert_eq!(json["header"]["clientId"], "kafka-python-3.0.12");
    assert_eq!(json["body"]["isolationLevel"], 1);
    assert_eq!(json["body"]["topics"][0]["partitions"][2]["partitionIndex"], 2);
    assert_eq!(json["body"]["topics"][0]["partitions"][0]["timestamp"], 1_700_000_000_000_i64);

    // Known tagged fields appear when set; a response carries its API and version.
    let req = vectors().join("clients/requests/kafkapython_apiversions_v4_hello_featuresresp.hex");
    let resp = vectors().join("clients/responses/kafkapython_apiversions_v4_hello_featuresresp.hex");
    let out = ok(&["decode", "-f", "json", "--request", req.to_str().unwrap(), resp.to_str().unwrap()], b"");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((json["apiKey"].as_i64(), json["apiVersion"].as_i64()), (Some(18), Some(4)));
    assert_eq!(json["body"]["supportedFeatures"][0]["name"], "metadata.version");
    assert!(json["body"]["finalizedFeaturesEpoch"].as_i64().unwrap() >= 0);
    assert!(json["body"].get("zkMigrationReady").is_none(), "default tagged fields are left out");

    // Metadata v12: topic ids are UUIDs in Kafka's base64 form.
    let meta = vectors().join("clients/requests/kafkapython_metadata_v12_topic_t_autocreate.hex");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["decode", "-f", "json", meta.to_str().unwrap()], b"")).unwrap();
    assert_eq!(json["body"]["topics"][0]["topicId"], "AAAAAAAAAAAAAAAAAAAAAA");
    assert_eq!(json["body"]["allowAutoTopicCreation"], true);
}

#[test]
fn unknown_tagged_fields_round_trip() {
    // ApiVersions v4 request with an unknown tag 7 (2 bytes) in the body and tag 3 in the header.
    let frame = "00000015001200040000000100000103010a01010107020a0b";
    let tree = ok(&["decode"], frame.as_bytes());
    assert!(tree.contains("tag 7") && tree.contains("tag 3"), "{tree}");
    let json = ok(&["decode", "-f", "json"], frame.as_bytes());
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["body"]["_unknownTaggedFields"][0]["tag"], 7);
    assert_eq!(v["body"]["_unknownTaggedFields"][0]["data"], "Cgs=");
    assert_eq!(v["header"]["_unknownTaggedFields"][0]["tag"], 3);
    assert_eq!(ok(&["encode"], json.as_bytes()).trim(), frame);
}

#[test]
fn malformed_input_prints_what_decoded_then_the_error() {
    // The seed ListOffsets v10 request, cut inside the first partition.
    let seed = read_hex(&vectors().join("seed/listoffsets_v10_request.hex"));
    let (out, err) = fails(&["decode"], &seed.as_bytes()[..60]);
    assert!(out.contains("PartitionIndex") && out.contains("ListOffsetsPartition[0]"), "{out}");
    assert!(!out.contains("CurrentLeaderEpoch"), "{out}");
    assert!(
        err.contains("at byte 27 (0x001b), body.topics[0].partitions[0].currentLeaderEpoch: truncated"),
        "{err}"
    );
    // The same through the JSON and hex outputs.
    let (json, _) = fails(&["decode", "-f", "json"], &seed.as_bytes()[..60]);
    assert!(json.contains("\"partitionIndex\": 0"), "{json}");
    let (dump, _) = fails(&["decode", "-f", "hex"], &seed.as_bytes()[..60]);
    assert!(dump.contains("BBB?"), "undecoded bytes are marked\n{dump}");

    // A null where the version allows none: the topic name of a v10 request.
    let mut null_name = seed.clone();
    null_name.replace_range(42..44, "00");
    let (_, err) = fails(&["decode"], null_name.as_bytes());
    assert!(err.contains("body.topics[0].name: null in a non-nullable field"), "{err}");

    // Bytes after the body: the ApiVersions seed request with one byte too many.
    let (_, err) = fails(&["decode"], b"0000000f0012000400000000000000010100ff");
    assert!(err.contains("at byte 18 (0x0012), body: 1 bytes left after the message"), "{err}");

    // An API kwire does not know, a version it does not have, bad hex, no input.
    let (_, err) = fails(&["decode"], b"0000000a 0063 0001 00000001 ffff");
    assert!(err.contains("API key 99 is not one kwire supports"), "{err}");
    let (_, err) = fails(&["decode"], b"0000000a 0012 0009 00000001 ffff");
    assert!(err.contains("ApiVersions has no request version 9"), "{err}");
    let (_, err) = fails(&["decode"], b"00 0g");
    assert!(err.contains("line 1") && err.contains("\"0g\" is not hex"), "{err}");
    let (_, err) = fails(&["decode"], b"");
    assert!(err.contains("no input"), "{err}");
    // A size prefix that promises more than there is.
    let (_, err) = fails(&["decode"], seed.replacen("0000002a", "0000002c", 1).as_bytes());
    assert!(err.contains("the size prefix says 44 bytes follow, but the input ends after 42"), "{err}");

    // Responses need to know what they answer; clap reports a half-given pair.
    let resp = vectors().join("seed/apiversions_v4_response.hex");
    let out = kwire(&["decode", "--api-key", "ApiVersions", resp.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(2));
    let (_, err) =
        fails(&["decode", "--api-key", "ApiVersions", "--api-version", "7", resp.to_str().unwrap()], b"");
    assert!(err.contains("no response version 7"), "{err}");
}

#[test]
fn truncation_at_every_offset_never_panics() {
    for name in [
        "seed/listoffsets_v10_request.hex",
        "clients/requests/kafkapython_metadata_v12_topic_t_autocreate.hex",
    ] {
        let hex = read_hex(&vectors().join(name));
        // Every cut at once, as a stream: each frame is shortened and its size fixed.
        let bytes: Vec<u8> =
            (0..hex.len() / 2).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()).collect();
        for cut in 4..bytes.len() {
            let mut frame = bytes[..cut].to_vec();
            frame[..4].copy_from_slice(&((cut - 4) as u32).to_be_bytes());
            let out = kwire(&["decode", "--binary"], &frame);
            assert_eq!(out.status.code(), Some(1), "{name} cut at {cut}: {}", text(&out.stderr));
            let err = text(&out.stderr);
            assert!(err.contains("at byte") && !err.contains("please report"), "{name} cut at {cut}: {err}");
        }
    }
}

fn seed_json() -> serde_json::Value {
    let path = vectors().join("clients/requests/kafkapython_listoffsets_v10_ts_rc_p012.hex");
    serde_json::from_str(&ok(&["decode", "-f", "json", path.to_str().unwrap()], b"")).unwrap()
}

fn encode_error(doc: &serde_json::Value, args: &[&str]) -> String {
    let mut all = vec!["encode"];
    all.extend_from_slice(args);
    fails(&all, doc.to_string().as_bytes()).1
}

#[test]
fn encode_errors_name_the_json_path() {
    let mut doc = seed_json();
    doc["body"]["topics"][0]["partitions"][2]["timestamp"] = "soon".into();
    let err = encode_error(&doc, &[]);
    assert!(err.contains("body.topics[0].partitions[2].timestamp: expected an integer"), "{err}");

    let mut doc = seed_json();
    doc["body"]["topics"][0]["partitions"][1]["leaderEpoch"] = 3.into();
    let err = encode_error(&doc, &[]);
    assert!(err.contains("body.topics[0].partitions[1].leaderEpoch: unknown field"), "{err}");

    let mut doc = seed_json();
    doc["body"]["IsolationLevel"] = 1.into();
    let err = encode_error(&doc, &[]);
    assert!(err.contains("did you mean \"isolationLevel\"?"), "{err}");

    let mut doc = seed_json();
    doc["body"]["topics"][0].as_object_mut().unwrap().remove("name");
    let err = encode_error(&doc, &[]);
    assert!(err.contains("body.topics[0].name: missing"), "{err}");

    let mut doc = seed_json();
    doc["body"]["isolationLevel"] = 300.into();
    let err = encode_error(&doc, &[]);
    assert!(err.contains("body.isolationLevel: 300 does not fit in int8"), "{err}");

    let mut doc = seed_json();
    doc["body"]["topics"][0]["name"] = serde_json::Value::Null;
    let err = encode_error(&doc, &[]);
    assert!(err.contains("body.topics[0].name: null is not allowed"), "{err}");

    // A value version 1 cannot carry: isolation level exists from version 2 on and is not
    // ignorable.
    let mut doc = seed_json();
    doc["header"]["requestApiVersion"] = 1.into();
    doc["body"].as_object_mut().unwrap().remove("timeoutMs");
    let err = encode_error(&doc, &[]);
    assert!(
        err.contains("body.isolationLevel: ListOffsetsRequest version 1 cannot carry this field"),
        "{err}"
    );

    // Tagged fields need a flexible version.
    let mut doc = seed_json();
    doc["header"]["requestApiVersion"] = 5.into();
    doc["body"].as_object_mut().unwrap().remove("timeoutMs");
    doc["body"]["_unknownTaggedFields"] = serde_json::json!([{"tag": 9, "data": "AA=="}]);
    let err = encode_error(&doc, &[]);
    assert!(
        err.contains("body._unknownTaggedFields: version 5 of ListOffsetsRequest is not flexible"),
        "{err}"
    );

    // Responses must say what they answer.
    let doc = serde_json::json!({"header": {"correlationId": 1}, "body": {"errorCode": 0, "apiKeys": []}});
    let err = encode_error(&doc, &[]);
    assert!(err.contains("pass --api-key and --api-version"), "{err}");
    let hex = ok(&["encode", "--api-key", "18", "--api-version", "0"], doc.to_string().as_bytes());
    assert_eq!(hex.trim(), "0000000a00000001000000000000");

    let (_, err) = fails(&["encode"], b"{\"header\": ");
    assert!(err.contains("invalid JSON"), "{err}");
}

#[test]
fn versions_lists_every_api() {
    let table = ok(&["versions"], b"");
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), kwire::ApiKey::ALL.len() + 1, "{table}");
    assert!(rows[0].starts_with("API"));
    assert!(
        rows.iter().any(|r| r.starts_with("ListOffsets") && r.contains("1-11") && r.contains("v2: 6-11"))
    );
    assert!(rows.iter().any(|r| r.starts_with("ApiVersions") && r.contains("v0: 0-5")));
}

#[test]
fn versions_as_json() {
    let out = ok(&["versions", "--format", "json"], b"");
    let apis: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(apis.len(), kwire::ApiKey::ALL.len());
    let produce = apis.iter().find(|a| a["name"] == "Produce").expect("Produce is listed");
    assert_eq!(produce["key"], 0);
    assert_eq!(produce["flexible_min"], 9);
    let offset_delete = apis.iter().find(|a| a["name"] == "OffsetDelete").expect("OffsetDelete is listed");
    assert_eq!(offset_delete["flexible_min"], serde_json::Value::Null);
    for a in &apis {
        assert!(a["min"].as_i64() <= a["max"].as_i64(), "{a}");
    }
}

/// `kwire decode --help` names every input it reads.
#[test]
fn decode_help_lists_its_inputs() {
    let help = ok(&["decode", "--help"], b"");
    // The argument's own description, not the examples after it.
    let start = help.find("[FILE]\n").expect("the FILE argument");
    let file = &help[start..help.find("Options:").expect("options")];
    for input in ["hex", "raw bytes", "--binary", "pcap ", "pcapng", "stdin", "`-`", "tcpdump -w -"] {
        assert!(file.contains(input), "{input} not in\n{file}");
    }
}

#[test]
fn help_has_examples() {
    for cmd in [&["--help"][..], &["decode", "--help"], &["encode", "--help"], &["versions", "--help"]] {
        let help = ok(cmd, b"");
        assert!(help.contains("Examples:"), "{cmd:?}\n{help}");
    }
}

#[test]
fn proxy_refuses_a_wrong_validation_rule_at_start_up() {
    for (rule, problem) in [
        ("orders.*=json,kye", "unknown check \"kye\": the checks are json, key, max-bytes=N and header=NAME"),
        ("orders.*", "\"orders.*\" has no checks"),
        ("orders/*=json", "topic pattern \"orders/*\" is not a topic name"),
        ("t=max-bytes=1MB", "max-bytes=1MB: not a whole number of bytes"),
        ("t=header=", "header= needs a header name"),
    ] {
        let args = [
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:9",
            "--validate",
            "t=json",
            "--validate",
            rule,
        ];
        let (_, err) = fails(&args, b"");
        assert!(err.contains(&format!("--validate {rule}: {problem}")), "{rule}: {err}");
    }
}

/// `kwire::client` against the `kwire serve` process: a topic created, records produced with
/// gzip and fetched back at the offsets the broker gave, offsets listed, a group's offset
/// committed and read back.
#[test]
#[cfg(feature = "client")]
fn the_client_works_against_kwire_serve() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    use kwire::client::{Client, Config, OffsetSpec};
    use kwire::records::{Compression, NewRecord};

    let mut child = Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kwire serve runs");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let addr: std::net::SocketAddr =
        first.split("listening on ").nth(1).and_then(|r| r.split(',').next()).unwrap().parse().unwrap();

    let config = Config { compression: Compression::Gzip, ..Config::default() };
    let mut client = Client::connect_with(addr, config).expect("connect to kwire serve");
    client.create_topic("orders", 2).unwrap();
    let records = [NewRecord::new(Some(b"k1"), Some(b"one")), NewRecord::new(None, Some(b"two"))];
    assert_eq!(client.produce("orders", 1, &records).unwrap(), 0);
    assert_eq!(client.produce("orders", 1, &[NewRecord::new(None, Some(b"three"))]).unwrap(), 2);
    let fetched = client.fetch_to_end("orders", 1, 0).unwrap();
    let got: Vec<(i64, &[u8])> =
        fetched.records.iter().map(|r| (r.offset, r.value.as_deref().unwrap())).collect();
    assert_eq!(got, [(0, &b"one"[..]), (1, b"two"), (2, b"three")]);
    assert_eq!(client.list_offset("orders", 1, OffsetSpec::Latest).unwrap().offset, 3);
    client.commit_offset("billing", "orders", 1, 3).unwrap();
    assert_eq!(client.committed_offset("billing", "orders", 1).unwrap(), Some(3));
    let _ = child.kill();
    let _ = child.wait();
}

/// `kwire serve`'s fault flags, on the wire: `--throttle` sets `throttle_time_ms` in every
/// answer of its API, `--fail API=ERROR:N` fails the first N requests with that error and
/// then serves, `--drop API:N` closes the connection of the first N without an answer; and
/// `--nodes 3` makes three brokers at three ports.
#[test]
fn serve_fault_flags_act_on_the_wire() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::{Command, Stdio};

    use common::raw::Conn;
    use kwire::messages::{ListGroupsRequest, MetadataRequest, ResponseBodyView};
    use kwire::{ApiKey, dispatch};

    let mut child = Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(["serve", "--listen", "127.0.0.1:0", "--throttle", "Metadata=250", "--nodes", "3"])
        .args(["--fail", "ListGroups=NOT_COORDINATOR:1", "--drop", "DescribeGroups:1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kwire serve runs");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let addr: std::net::SocketAddr =
        first.split("listening on ").nth(1).and_then(|r| r.split(',').next()).unwrap().parse().unwrap();

    let mut conn = Conn::open(addr);
    for _ in 0..2 {
        let frame = conn.call(&MetadataRequest::default(), 12);
        let response = dispatch::parse_response(&frame, ApiKey::Metadata, 12).unwrap();
        let ResponseBodyView::Metadata(m) = response.body else { panic!("not Metadata") };
        assert_eq!(m.throttle_time_ms(), 250);
        // --nodes 3: three brokers, each at a port of its own.
        let ports: std::collections::BTreeSet<i32> = m.brokers().iter().map(|b| b.port()).collect();
        assert_eq!((m.brokers().len(), ports.len()), (3, 3), "three nodes at three ports");
    }
    let list_error = |conn: &mut Conn| {
        let frame = conn.call(&ListGroupsRequest::default(), 4);
        let response = dispatch::parse_response(&frame, ApiKey::ListGroups, 4).unwrap();
        let ResponseBodyView::ListGroups(l) = response.body else { panic!("not ListGroups") };
        l.error_code()
    };
    assert_eq!(list_error(&mut conn), kwire::ErrorCode::NotCoordinator.to_i16());
    assert_eq!(list_error(&mut conn), 0, "only the first request fails");

    // The first DescribeGroups closes its connection unanswered; the next is answered.
    let describe = kwire::messages::DescribeGroupsRequest::default();
    let header =
        kwire::frame::RequestHeader { correlation_id: 7, client_id: None, unknown_tagged_fields: &[] };
    let mut buf = vec![0u8; dispatch::request_len(&describe, 5, &header).unwrap()];
    dispatch::encode_request_with(&describe, 5, &header, &mut buf).unwrap();
    std::io::Write::write_all(&mut conn.s, &buf).unwrap();
    let mut rest = Vec::new();
    assert_eq!(conn.s.read_to_end(&mut rest).map(|_| rest.len()).unwrap_or(0), 0, "dropped unanswered");
    let mut again = Conn::open(addr);
    let frame = again.call(&describe, 5);
    assert!(dispatch::parse_response(&frame, ApiKey::DescribeGroups, 5).is_ok());

    let _ = child.kill();
    let _ = child.wait();
}

/// One request over any stream (TLS here): the response frame (correlation id first).
fn call_on(
    s: &mut (impl std::io::Read + std::io::Write),
    body: &impl kwire::encode::AnyBody,
    version: i16,
) -> Vec<u8> {
    use kwire::dispatch;
    let header =
        kwire::frame::RequestHeader { correlation_id: 1, client_id: Some("cli"), unknown_tagged_fields: &[] };
    let mut buf = vec![0u8; dispatch::request_len(body, version, &header).unwrap()];
    dispatch::encode_request_with(body, version, &header, &mut buf).unwrap();
    s.write_all(&buf).unwrap();
    let mut size = [0u8; 4];
    s.read_exact(&mut size).unwrap();
    let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
    s.read_exact(&mut frame).unwrap();
    frame
}

/// `kwire serve --tls-cert --tls-key --scram-users --acls`: the listener speaks TLS only
/// (a plaintext request gets no answer), SaslHandshake offers SCRAM, the users of the file
/// are there with their mechanisms and iteration counts (DescribeUserScramCredentials), and
/// the ACLs of the file are stored with Kafka's codes (DescribeAcls). Bad files are refused
/// with a message naming the problem, and no password is printed.
#[test]
fn serve_tls_scram_and_acl_flags() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::{Command, Stdio};
    use std::sync::Arc;

    use kwire::messages::ResponseBodyView;
    use kwire::{ApiKey, dispatch};

    let (ca, chain, key) = common::tls::ca_and_server(&["localhost", "127.0.0.1"]);
    let cert_file = scratch("serve-chain.pem", chain.as_bytes());
    let key_file = scratch("serve-key.pem", key.as_bytes());
    let scram = scratch(
        "serve-scram.toml",
        b"[[users]]\nname = \"alice\"\npassword = \"alice-secret-pw\"\nmechanism = \"SCRAM-SHA-512\"\niterations = 8192\n\n[[users]]\nname = \"bob\"\npassword = \"bob-secret-pw\"\n",
    );
    let acls = scratch(
        "serve-acls.toml",
        b"[[acls]]\nresource_type = \"topic\"\nresource_name = \"orders\"\npattern_type = \"prefixed\"\nprincipal = \"User:alice\"\noperation = \"read\"\n\n[[acls]]\nresource_type = \"TRANSACTIONAL_ID\"\nresource_name = \"*\"\nprincipal = \"User:bob\"\nhost = \"10.0.0.1\"\noperation = \"two-phase-commit\"\npermission = \"deny\"\n",
    );
    let path = |p: &PathBuf| p.to_str().unwrap().to_string();
    /// Kills the server when dropped, also when an assertion fails (it would otherwise
    /// outlive the test, holding whatever it inherited).
    struct Server(std::process::Child);
    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut server = Server(
        Command::new(env!("CARGO_BIN_EXE_kwire"))
            .args(["serve", "--listen", "127.0.0.1:0", "-v"])
            .args(["--tls-cert", &path(&cert_file), "--tls-key", &path(&key_file)])
            .args(["--scram-users", &path(&scram), "--acls", &path(&acls)])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kwire serve runs"),
    );
    let mut first = String::new();
    BufReader::new(server.0.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let addr: std::net::SocketAddr =
        first.split("listening on ").nth(1).and_then(|r| r.split(',').next()).unwrap().parse().unwrap();

    // Plaintext: the TLS listener closes it without a Kafka answer.
    let mut plain = std::net::TcpStream::connect(addr).unwrap();
    plain.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    let header =
        kwire::frame::RequestHeader { correlation_id: 1, client_id: None, unknown_tagged_fields: &[] };
    let versions = kwire::messages::ApiVersionsRequest::default();
    let mut buf = vec![0u8; dispatch::request_len(&versions, 3, &header).unwrap()];
    dispatch::encode_request_with(&versions, 3, &header, &mut buf).unwrap();
    plain.write_all(&buf).unwrap();
    let mut got = Vec::new();
    let _ = plain.read_to_end(&mut got);
    assert!(dispatch::parse_response(got.get(4..).unwrap_or_default(), ApiKey::ApiVersions, 3).is_err());

    // TLS, trusting the test CA.
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(ring_provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let sock = std::net::TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    let mut tls =
        rustls::StreamOwned::new(rustls::ClientConnection::new(Arc::new(config), name).unwrap(), sock);

    let handshake = kwire::messages::SaslHandshakeRequest { mechanism: "SCRAM-SHA-512".into() };
    let frame = call_on(&mut tls, &handshake, 1);
    let ResponseBodyView::SaslHandshake(h) =
        dispatch::parse_response(&frame, ApiKey::SaslHandshake, 1).unwrap().body
    else {
        panic!("not SaslHandshake")
    };
    assert_eq!(h.error_code(), 0);
    let offered: Vec<&str> = h.mechanisms().iter().collect();
    assert!(offered.contains(&"SCRAM-SHA-256") && offered.contains(&"SCRAM-SHA-512"), "{offered:?}");
    // A new connection for the admin calls (this one waits for a SASL token now).
    let config = rustls::ClientConfig::builder_with_provider(ring_provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates({
            let mut roots = rustls::RootCertStore::empty();
            for c in rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes()) {
                roots.add(c.unwrap()).unwrap();
            }
            roots
        })
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let sock = std::net::TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    let mut tls =
        rustls::StreamOwned::new(rustls::ClientConnection::new(Arc::new(config), name).unwrap(), sock);

    let describe = kwire::messages::DescribeUserScramCredentialsRequest { users: None, ..Default::default() };
    let frame = call_on(&mut tls, &describe, 0);
    let ResponseBodyView::DescribeUserScramCredentials(d) =
        dispatch::parse_response(&frame, ApiKey::DescribeUserScramCredentials, 0).unwrap().body
    else {
        panic!("not DescribeUserScramCredentials")
    };
    assert_eq!(d.error_code(), 0);
    let mut users: Vec<(String, Vec<(i8, i32)>)> = d
        .results()
        .iter()
        .map(|r| {
            (
                r.user().to_string(),
                r.credential_infos().iter().map(|c| (c.mechanism(), c.iterations())).collect(),
            )
        })
        .collect();
    users.sort();
    assert_eq!(users, [("alice".to_string(), vec![(2, 8192)]), ("bob".to_string(), vec![(1, 4096)])]);

    let any = kwire::messages::DescribeAclsRequest {
        resource_type_filter: 1,
        resource_name_filter: None,
        pattern_type_filter: 1,
        principal_filter: None,
        host_filter: None,
        operation: 1,
        permission_type: 1,
        ..Default::default()
    };
    let frame = call_on(&mut tls, &any, 3);
    let ResponseBodyView::DescribeAcls(a) =
        dispatch::parse_response(&frame, ApiKey::DescribeAcls, 3).unwrap().body
    else {
        panic!("not DescribeAcls")
    };
    assert_eq!(a.error_code(), 0);
    let mut bindings: Vec<(i8, String, i8, String, String, i8, i8)> = a
        .resources()
        .iter()
        .flat_map(|r| {
            r.acls().iter().map(move |e| {
                (
                    r.resource_type(),
                    r.resource_name().to_string(),
                    r.pattern_type(),
                    e.principal().to_string(),
                    e.host().to_string(),
                    e.operation(),
                    e.permission_type(),
                )
            })
        })
        .collect();
    bindings.sort();
    assert_eq!(
        bindings,
        [
            (2, "orders".into(), 4, "User:alice".into(), "*".into(), 3, 3),
            (5, "*".into(), 3, "User:bob".into(), "10.0.0.1".into(), 15, 2),
        ]
    );
    drop(tls);
    let mut stderr = server.0.stderr.take().unwrap();
    drop(server);
    let mut log = String::new();
    stderr.read_to_string(&mut log).unwrap();
    assert!(!log.contains("secret-pw"), "a password in the log: {log}");

    // Bad files and flags: refused with the problem named.
    let bad_mech = scratch(
        "serve-bad-mech.toml",
        b"[[users]]\nname = \"x\"\npassword = \"p\"\nmechanism = \"SCRAM-MD5\"\n",
    );
    let (_, err) = fails(&["serve", "--listen", "127.0.0.1:0", "--scram-users", &path(&bad_mech)], b"");
    assert!(err.contains("unknown mechanism \"SCRAM-MD5\""), "{err}");
    let few = scratch("serve-few.toml", b"[[users]]\nname = \"x\"\npassword = \"p\"\niterations = 10\n");
    let (_, err) = fails(&["serve", "--listen", "127.0.0.1:0", "--scram-users", &path(&few)], b"");
    assert!(err.contains("SCRAM user x") && err.contains("4096 to 16384"), "{err}");
    let bad_op = scratch(
        "serve-bad-op.toml",
        b"[[acls]]\nresource_type = \"topic\"\nresource_name = \"t\"\nprincipal = \"User:a\"\noperation = \"fly\"\n",
    );
    let (_, err) = fails(&["serve", "--listen", "127.0.0.1:0", "--acls", &path(&bad_op)], b"");
    assert!(err.contains("ACL 1: unknown operation \"fly\""), "{err}");
    let bad_principal = scratch(
        "serve-bad-principal.toml",
        b"[[acls]]\nresource_type = \"topic\"\nresource_name = \"t\"\nprincipal = \"alice\"\noperation = \"read\"\n",
    );
    let (_, err) = fails(&["serve", "--listen", "127.0.0.1:0", "--acls", &path(&bad_principal)], b"");
    assert!(err.contains("Could not parse principal"), "{err}");
    let bad_key = scratch("serve-bad-key.pem", b"not a key");
    let (_, err) = fails(
        &["serve", "--listen", "127.0.0.1:0", "--tls-cert", &path(&cert_file), "--tls-key", &path(&bad_key)],
        b"",
    );
    assert!(err.contains("--tls-cert") && err.contains("private key"), "{err}");
    let out = kwire(&["serve", "--listen", "127.0.0.1:0", "--tls-cert", &path(&cert_file)], b"");
    assert!(!out.status.success() && text(&out.stderr).contains("--tls-key"), "{}", text(&out.stderr));
}

/// Every `$ kwire decode ... tests/vectors/captures/kafka-python-serve.pcap` example of
/// docs/cli.md: each line it quotes is one the command prints (stdout or stderr) for that
/// capture, so the summary lines and records shown there are a real run's.
#[test]
fn docs_capture_examples_are_what_the_command_prints() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md")).unwrap();
    let mut examples = 0;
    let mut lines_checked = 0;
    let mut doc_lines = doc.lines();
    while let Some(line) = doc_lines.next() {
        let Some(cmd) = line.strip_prefix("$ kwire ") else { continue };
        if !cmd.contains("tests/vectors/captures/kafka-python-serve.pcap") {
            continue;
        }
        let cmd = cmd.split('|').next().unwrap();
        let args: Vec<String> = cmd
            .split_whitespace()
            .map(|a| match a.strip_prefix("tests/") {
                Some(rest) => vectors().parent().unwrap().join(rest).to_str().unwrap().to_string(),
                None => a.to_string(),
            })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = kwire(&args, b"");
        assert!(out.status.success(), "{cmd}: {}", text(&out.stderr));
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        let printed: Vec<&str> = stdout.lines().chain(stderr.lines()).collect();
        examples += 1;
        for quoted in doc_lines.by_ref().take_while(|l| !l.starts_with("```")) {
            assert!(
                printed.contains(&quoted),
                "docs/cli.md quotes a line `kwire {cmd}` does not print:\n{quoted}"
            );
            lines_checked += 1;
        }
    }
    assert!(examples >= 2 && lines_checked >= 8, "{examples} examples, {lines_checked} lines");
    // The summary lines shown name topics, groups and records.
    for part in ["topics=orders,audit", "group=billing", "records=11 gzip", "records=24 gzip"] {
        assert!(doc.contains(part), "docs/cli.md shows no {part}");
    }
}

/// `--format json` of a capture gives each frame's records read, beside the frame in Kafka's
/// JSON form: the same records `--format records` prints, with their text.
#[test]
fn capture_json_gives_the_records_of_each_frame() {
    let pcap = vectors().join("captures/kafka-python-serve.pcap");
    let out = ok(&["decode", "--format", "json", pcap.to_str().unwrap()], b"");
    let frames: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut counts = (0, 0);
    for f in &frames {
        let Some(records) = f.get("records") else { continue };
        let records = records.as_array().unwrap();
        assert!(!records.is_empty(), "{f}");
        match (f["direction"].as_str(), f["apiName"].as_str()) {
            (Some("request"), Some("Produce")) => counts.0 += records.len(),
            (Some("response"), Some("Fetch")) => counts.1 += records.len(),
            other => panic!("records in a frame of {other:?}"),
        }
        assert!(records.iter().all(|r| r["valueText"].is_string() && r.get("direction").is_none()), "{f}");
    }
    assert_eq!(counts, (24, 24));
}

/// `--format records` of a capture says which records were produced and which fetched,
/// gives produced records the offsets the broker assigned (each the offset it is fetched at
/// later), and gives UTF-8 keys and values as text beside their base64.
#[test]
fn capture_records_tell_produced_from_fetched() {
    let pcap = vectors().join("captures/kafka-python-serve.pcap");
    let out = ok(&["decode", "--format", "records", pcap.to_str().unwrap()], b"");
    let records: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let produced = records.iter().filter(|r| r["direction"] == "produced").count();
    let fetched = records.iter().filter(|r| r["direction"] == "fetched").count();
    // The capture's summary counts 1 + 11 + 1 + 11 records produced and 24 fetched.
    assert_eq!((produced, fetched, records.len()), (24, 24, 48));
    let place = |r: &serde_json::Value| (r["topic"].clone(), r["partition"].clone(), r["offset"].clone());
    let mut produced: Vec<_> = records.iter().filter(|r| r["direction"] == "produced").map(place).collect();
    let mut fetched: Vec<_> = records.iter().filter(|r| r["direction"] == "fetched").map(place).collect();
    produced.sort_by_key(|p| format!("{p:?}"));
    fetched.sort_by_key(|p| format!("{p:?}"));
    assert_eq!(produced, fetched, "produced records at the offsets they are fetched at");
    for r in records.iter().filter(|r| r["direction"] == "produced") {
        let same = |x: &&serde_json::Value| {
            x["direction"] == "fetched" && place(x) == place(r) && x["value"] == r["value"]
        };
        assert!(records.iter().any(|x| same(&x)), "no fetched record like {r}");
    }
    for r in &records {
        let b64 = r["value"].as_str().unwrap();
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
        match std::str::from_utf8(&bytes) {
            Ok(t) => assert_eq!(r["valueText"], t, "{r}"),
            Err(_) => assert!(r.get("valueText").is_none(), "{r}"),
        }
    }
}

/// rustls over *ring*, as kwire's TLS endpoints use it (see `src/apps/tls_provider.rs` for
/// why *ring*, whose provider rustls deprecates for its lack of post-quantum key exchange).
fn ring_provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    #[allow(deprecated)]
    std::sync::Arc::new(rustls::crypto::ring::default_provider())
}
