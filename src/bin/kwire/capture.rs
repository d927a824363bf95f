//! `kwire decode` of a packet capture (pcap or pcapng, recognised by its magic number):
//! the command's side of `kwire::capture`, which does the reading. One line per
//! request/response pair, the tree of one frame (`--frame N`), the records, or one JSON
//! object per Kafka frame (`--format json`, the contract in docs/cli.md).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{Read, Write as _};

use kwire::ApiKey;
use kwire::Direction;
use kwire::capture::{Event, Frame, FrameView, Options, Reader, Timestamp};
use kwire::filter::TopicNames;
use kwire::reflect::explain::{self, FrameKind as Kind};
use serde_json::{Value, json};

use crate::decode::{Args, Format, decode_frame, masked};
use crate::summary::{about, api_name, error_name, errors};
use kwire::proxy::{RecordAs, Recorder};
use kwire::reflect::inspect;

/// A request line waiting for its response (`--format tree` without `--frame`).
struct Waiting {
    ts: Timestamp,
    line: String,
}

/// What reading the capture counted.
#[derive(Default)]
struct Counts {
    frames: u64,
    whole: u64,
    cut: u64,
    unpaired: u64,
    malformed: u64,
    gaps: u64,
}

fn kind_of(f: &Frame) -> Option<Kind> {
    match f.direction {
        Direction::Request => Some(Kind::Request),
        Direction::Response => {
            let key = ApiKey::from_i16(f.api_key?)?;
            Some(Kind::Response(key, f.api_version?))
        }
    }
}

/// An API's name, `api<N>` for a key kwire does not know.
/// Reads a capture from `input` and prints it as `args` say.
pub fn run(args: &Args, input: impl Read) -> Result<(), String> {
    if args.request.is_some() || args.api_key.is_some() {
        return Err("--request, --api-key and --api-version do not apply to a capture: \
                    responses are paired with the requests in it"
            .into());
    }
    if args.frame.is_none() && args.format == Format::Hex {
        return Err("with a capture, --format hex needs --frame N".into());
    }
    let options = Options::default().ports(&args.port);
    let mut reader = Reader::new(input, options).map_err(|e| e.to_string())?;
    let recorder =
        args.record.clone().map(|dir| Recorder::new(dir, args.record_limit).show_secrets(args.show_secrets));
    let mut out = std::io::stdout().lock();
    let mut counts = Counts::default();
    let mut waiting: BTreeMap<u64, Waiting> = BTreeMap::new();
    let topic_names = TopicNames::new();
    // `--format records`: the records of Produce requests still waiting for their answers.
    let mut produced: BTreeMap<u64, Vec<explain::RecordLine>> = BTreeMap::new();
    // The names the recorder gave requests, for their responses.
    let mut recorded: BTreeMap<u64, String> = BTreeMap::new();
    let write = |out: &mut std::io::StdoutLock<'_>, text: &str| {
        out.write_all(text.as_bytes()).map_err(|e| format!("cannot write the output: {e}"))
    };
    let mut found_frame = false;
    while let Some(event) = reader.next_event().map_err(|e| e.to_string())? {
        let f = match event {
            Event::Frame(f) => f,
            Event::Gap { .. } => {
                counts.gaps += 1;
                eprintln!("kwire: note: {event}");
                continue;
            }
            other => {
                eprintln!("kwire: note: {other}");
                continue;
            }
        };
        counts.frames += 1;
        if f.is_whole() {
            counts.whole += 1;
        } else {
            counts.cut += 1;
        }
        if f.is_unpaired() {
            counts.unpaired += 1;
        }
        if let Some(n) = args.frame {
            if f.index == n {
                found_frame = true;
                write(&mut out, &one_frame(args, &f)?)?;
                break;
            }
            continue;
        }
        // Decode whole frames of known kind, their secrets masked. The pair lines print no
        // field: for them the typed views' check is enough (what `kwire proxy` does).
        let kind = if f.is_whole() { kind_of(&f) } else { None };
        let lines = matches!(args.format, Format::Tree | Format::Hex);
        let checked = match kind {
            Some(_) if lines => Some(check(&f)),
            _ => None,
        };
        let decoded = kind.filter(|_| !lines).map(|kind| {
            let (bytes, note) =
                if args.show_secrets { (Cow::Borrowed(&f.bytes[..]), None) } else { masked(&f.bytes, kind) };
            if let Some(note) = note {
                eprintln!("kwire: note: frame {}: {note}", f.index);
            }
            let mut d = decode_frame(&bytes, kind);
            if bytes.as_ref() != f.bytes && d.problem.is_some() {
                d.problem = decode_frame(&f.bytes, kind).problem;
            }
            d
        });
        let problem = decoded.as_ref().and_then(|d| d.problem.clone()).or(checked.flatten());
        if let Some(p) = &problem {
            counts.malformed += 1;
            eprintln!("kwire: frame {} ({} {}): {p}", f.index, f.direction.name(), f.client);
        }
        if let Some(r) = &recorder {
            record(r, &f, &mut recorded);
        }
        match args.format {
            Format::Json => {
                let doc = match (&decoded, &problem) {
                    (Some(d), _) => d.explained.to_json(),
                    (None, _) => Value::Null,
                };
                let mut obj = json!({
                    "index": f.index,
                    "ts": f.ts.to_string(),
                    "conn": f.conn,
                    "client": f.client.to_string(),
                    "broker": f.broker.to_string(),
                    "direction": f.direction.name(),
                    "correlationId": f.correlation_id,
                    "apiKey": f.api_key,
                    "apiName": f.api().map(|k| k.name()),
                    "apiVersion": f.api_version,
                    "clientId": f.client_id,
                    "size": f.size.map(|s| u64::from(s) + 4),
                    "cut": f.cut.map(|c| c.to_string()),
                });
                if let Some(r) = &f.request {
                    obj["requestIndex"] = json!(r.index);
                    obj["latencyUs"] = json!((f.ts.as_nanos() - r.ts.as_nanos()) / 1000);
                }
                if let Some(p) = &problem {
                    obj["error"] = json!(p);
                }
                // The frame's records, read (keys and values as text too where UTF-8): the
                // frame itself keeps Kafka's JSON form, with record sets as raw bytes.
                if let Some(d) = &decoded {
                    let records = explain::record_lines(&d.explained);
                    if !records.lines.is_empty() {
                        obj["records"] = Value::Array(records.lines.iter().map(|l| l.to_json()).collect());
                    }
                }
                obj["frame"] = doc;
                write(&mut out, &format!("{obj}\n"))?;
            }
            Format::Records => {
                if let Some(d) = &decoded {
                    let records = explain::record_lines(&d.explained);
                    for note in &records.notes {
                        eprintln!("kwire: note: frame {}: {note}", f.index);
                    }
                    let mut text = String::new();
                    match f.direction {
                        // Produced records wait for the answer that gives their offsets.
                        Direction::Request if !records.lines.is_empty() => {
                            if expects_response(&f.bytes) {
                                produced.insert(f.index, records.lines);
                            } else {
                                text.push_str(&produced_lines(records.lines, None));
                            }
                        }
                        Direction::Request => {}
                        Direction::Response => {
                            if let Some(lines) = f.request.as_ref().and_then(|r| produced.remove(&r.index)) {
                                text.push_str(&produced_lines(lines, Some(&assigned_offsets(&f))));
                            }
                            for line in records.lines {
                                let mut json = line.to_json();
                                json["direction"] = json!("fetched");
                                text.push_str(&json.to_string());
                                text.push('\n');
                            }
                        }
                    }
                    // Requests with records whose answers never come are printed now and then.
                    while produced.len() > 10_000 {
                        if let Some((_, lines)) = produced.pop_first() {
                            text.push_str(&produced_lines(lines, None));
                        }
                    }
                    write(&mut out, &text)?;
                    if let Some(e) = records.error {
                        eprintln!("kwire: cannot read the records of frame {}: {e}", f.index);
                        counts.malformed += 1;
                    }
                }
            }
            Format::Tree | Format::Hex => {
                let text = pair_line(&f, problem.as_deref(), &mut waiting, &topic_names);
                if let Some(text) = text {
                    write(&mut out, &text)?;
                }
                // A request pushed out of the table by many unanswered ones is printed now.
                while waiting.len() > 100_000 {
                    if let Some((_, w)) = waiting.pop_first() {
                        write(&mut out, &format!("{}\n", w.line))?;
                    }
                }
            }
        }
    }
    for (_, lines) in std::mem::take(&mut produced) {
        write(&mut out, &produced_lines(lines, None))?;
    }
    for (_, w) in std::mem::take(&mut waiting) {
        let _ = w.ts;
        write(&mut out, &format!("{} no response in the capture\n", w.line))?;
    }
    out.flush().map_err(|e| format!("cannot write the output: {e}"))?;
    if let Some(n) = args.frame
        && !found_frame
    {
        return Err(format!("the capture holds {} Kafka frames: there is no frame {n}", counts.frames));
    }
    let stats = reader.stats();
    if args.frame.is_none() {
        eprintln!(
            "kwire: capture: {} packets, {} TCP connections ({} Kafka), {} Kafka frames: {} whole, {} cut, {} \
             unpaired responses, {} gaps",
            stats.packets,
            stats.connections,
            stats.kafka_connections,
            counts.frames,
            counts.whole,
            counts.cut,
            counts.unpaired,
            counts.gaps
        );
    }
    if counts.malformed > 0 {
        return Err(format!("{} whole frame(s) of the capture did not decode (above)", counts.malformed));
    }
    Ok(())
}

/// (topic, partition) to (error code, base offset): see [`assigned_offsets`].
type Assigned = BTreeMap<(String, i64), (i16, i64)>;

/// What a Produce answer says of each partition: (topic as a record line names it, partition)
/// to the error code and the base offset the broker assigned. A topic is keyed by its name
/// and by its id in Kafka's form, as record lines name topics either way.
fn assigned_offsets(f: &Frame) -> Assigned {
    let mut out = BTreeMap::new();
    let Ok(FrameView::Response(response)) = f.view() else { return out };
    let kwire::messages::ResponseBodyView::Produce(p) = response.body else { return out };
    for t in p.responses().iter() {
        let id = kwire::reflect::json::uuid_string(&t.topic_id());
        for part in t.partition_responses().iter() {
            let at = (part.error_code(), part.base_offset());
            let index = i64::from(part.index());
            if !t.name().is_empty() {
                out.insert((t.name().to_string(), index), at);
            }
            out.insert((id.clone(), index), at);
        }
    }
    out
}

/// Produced records as `--format records` prints them: with the offsets the broker
/// assigned (its base offset for the partition plus the record's position in the
/// client's batch), or `null` and the partition's error name where the answer gave none,
/// or `null` alone with no answer (`acks=0`, or none in the capture).
fn produced_lines(lines: Vec<explain::RecordLine>, answer: Option<&Assigned>) -> String {
    let mut text = String::new();
    // The client's offset of each partition's first record: the batch's base.
    let mut first: BTreeMap<(String, i64), i64> = BTreeMap::new();
    for line in lines {
        let mut json = line.to_json();
        let key =
            (line.topic.as_str().unwrap_or_default().to_string(), line.partition.as_i64().unwrap_or(-1));
        let base = *first.entry(key.clone()).or_insert(line.offset);
        match answer.and_then(|a| a.get(&key)) {
            Some(&(0, assigned)) if assigned >= 0 => json["offset"] = json!(assigned + (line.offset - base)),
            Some(&(code, _)) => {
                json["offset"] = Value::Null;
                if code != 0 {
                    json["error"] = json!(error_name(code));
                }
            }
            None => json["offset"] = Value::Null,
        }
        json["direction"] = json!("produced");
        text.push_str(&json.to_string());
        text.push('\n');
    }
    text
}

/// The line of a request/response pair, printed when the response comes (requests wait
/// in `waiting`); a cut frame or an unpaired response gets a line of its own.
///
/// Topics named by id only (Fetch v13 and later, Produce v13) are named from the
/// capture's earlier answers that pair names with ids (Metadata, CreateTopics,
/// DescribeTopicPartitions), learnt into `topic_names`.
fn pair_line(
    f: &Frame,
    problem: Option<&str>,
    waiting: &mut BTreeMap<u64, Waiting>,
    topic_names: &TopicNames,
) -> Option<String> {
    let api = |key: Option<i16>| key.map(api_name).unwrap_or_else(|| "?".into());
    let version = f.api_version.map(|v| format!("v{v}")).unwrap_or_else(|| "v?".into());
    let corr = f.correlation_id.map(|c| c.to_string()).unwrap_or_else(|| "?".into());
    let head = format!(
        "{} conn={} {} -> {} {}",
        f.ts,
        f.conn,
        f.client,
        f.broker,
        f.client_id.as_deref().unwrap_or("-")
    );
    let len = f.bytes.len();
    let size = f.size.map(|s| u64::from(s) + 4).unwrap_or(len as u64);
    let trouble = |line: &mut String| {
        if let Some(c) = f.cut {
            line.push_str(&format!(" cut ({c}; {len} of {size} bytes captured)"));
        }
        if let Some(p) = problem {
            line.push_str(&format!(" malformed: {p}"));
        }
    };
    match f.direction {
        Direction::Request => {
            let mut line = format!("{head} {} {version} corr={corr} req={size}B", api(f.api_key));
            if f.cut.is_none() {
                let mut summary = explain::about_request(&f.bytes[4..]);
                summary.name_topic_ids(|id| topic_names.name(id).map(|n| n.to_string()));
                about(&mut line, summary);
            }
            trouble(&mut line);
            let answered = f.api_key.and_then(ApiKey::from_i16).is_some() && f.correlation_id.is_some();
            if answered && f.cut.is_none() && !expects_response(&f.bytes) {
                return Some(format!("{line} no response expected (acks=0)\n"));
            }
            if answered {
                waiting.insert(f.index, Waiting { ts: f.ts, line });
                None
            } else {
                Some(format!("{line}\n"))
            }
        }
        Direction::Response => {
            let Some(req) = &f.request else {
                let mut line = format!(
                    "{head} response corr={corr} resp={size}B unpaired: its request is not in the capture"
                );
                trouble(&mut line);
                return Some(format!("{line}\n"));
            };
            let mut line = match waiting.remove(&req.index) {
                Some(w) => w.line,
                None => format!("{head} {} {version} corr={corr} req={}B", api(f.api_key), req.size),
            };
            // The pair's line starts at the request's time and tells the latency.
            let latency = (f.ts.as_nanos() - req.ts.as_nanos()) as f64 / 1e6;
            line.push_str(&format!(" resp={size}B {latency:.3}ms"));
            if f.cut.is_none()
                && problem.is_none()
                && let (Some(key), Some(v)) = (f.api_key, f.api_version)
            {
                if let Some(api) = ApiKey::from_i16(key) {
                    about(&mut line, explain::about_response(&f.bytes[4..], api, v));
                    if TopicNames::learns_from(api)
                        && let Ok(FrameView::Response(response)) = f.view()
                    {
                        topic_names.learn_from(&response);
                    }
                }
                errors(&mut line, &f.bytes[4..], key, v);
            }
            trouble(&mut line);
            Some(format!("{line}\n"))
        }
    }
}

/// Whether kwire's typed views accept a whole frame: the reason when not.
fn check(f: &Frame) -> Option<String> {
    let frame = &f.bytes[4..];
    let decoded = match (f.direction, f.api_key, f.api_version) {
        (Direction::Request, ..) => inspect::request(frame),
        (Direction::Response, Some(key), Some(version)) => inspect::response(frame, key, version).decoded,
        _ => return None,
    };
    decoded.reason().map(str::to_string)
}

fn expects_response(frame_with_prefix: &[u8]) -> bool {
    frame_with_prefix.get(4..).is_none_or(|f| kwire::conn::frame_expects_response(f).unwrap_or(true))
}

/// `--frame N`: the frame alone, as `kwire decode` prints a frame, after a line saying
/// where it is in the capture.
fn one_frame(args: &Args, f: &Frame) -> Result<String, String> {
    let mut text = String::new();
    eprintln!(
        "kwire: frame {}: {} {} {} -> {} conn={} correlation id {}",
        f.index,
        f.ts,
        f.direction.name(),
        f.client,
        f.broker,
        f.conn,
        f.correlation_id.map(|c| c.to_string()).unwrap_or_else(|| "?".into())
    );
    if let Some(c) = f.cut {
        return Err(format!(
            "frame {} is cut ({c}): the capture holds {} of its bytes, so it is not decoded",
            f.index,
            f.bytes.len()
        ));
    }
    let Some(kind) = kind_of(f) else {
        return Err(format!(
            "frame {} is a response whose request is not in the capture (correlation id {}, {} bytes): \
             give it with `kwire decode --api-key K --api-version V` to decode it",
            f.index,
            f.correlation_id.unwrap_or_default(),
            f.bytes.len()
        ));
    };
    let (bytes, note) =
        if args.show_secrets { (Cow::Borrowed(&f.bytes[..]), None) } else { masked(&f.bytes, kind) };
    if let Some(note) = note {
        eprintln!("kwire: note: frame {}: {note}", f.index);
    }
    let decoded = decode_frame(&bytes, kind);
    match args.format {
        Format::Tree => {
            let mut root = decoded.explained.root.clone();
            explain::annotate_records(&mut root);
            text.push_str(&explain::render_tree(&root));
        }
        Format::Hex => {
            let colour = crate::decode::use_colour(args.color);
            text.push_str(&explain::hex_legend(colour));
            text.push('\n');
            text.push_str(&explain::render_hex(&decoded.explained.root, &bytes, colour));
        }
        Format::Json => {
            let json = decoded.explained.to_json();
            let json =
                if args.compact { serde_json::to_string(&json) } else { serde_json::to_string_pretty(&json) };
            text.push_str(&json.unwrap_or_default());
            text.push('\n');
        }
        Format::Records => {
            let records = explain::record_lines(&decoded.explained);
            for line in records.lines {
                text.push_str(&line.to_json().to_string());
                text.push('\n');
            }
        }
    }
    if let Some(p) = decoded.problem {
        print!("{text}");
        return Err(format!("cannot decode frame {}: {p}", f.index));
    }
    Ok(text)
}

/// `--record DIR`: whole frames saved as test vectors, named as `kwire proxy --record`
/// names them; frames that are cut or unpaired go to `undecoded/`.
fn record(r: &Recorder, f: &Frame, names: &mut BTreeMap<u64, String>) {
    let what = f.direction.name();
    match f.direction {
        Direction::Request if f.is_whole() => {
            let (Some(key), Some(version)) = (f.api_key, f.api_version) else { return };
            if let Some(name) = r.name(f.client_id.as_deref(), &api_name(key), version) {
                let _ = r.save("requests", &name, &f.bytes, RecordAs::Request);
                if names.len() < 100_000 {
                    names.insert(f.index, name);
                }
            }
        }
        Direction::Response if f.is_whole() && f.request.is_some() => {
            let (Some(key), Some(version)) = (f.api_key, f.api_version) else { return };
            let index = f.request.as_ref().map(|q| q.index).unwrap_or_default();
            if let Some(name) = names.remove(&index) {
                let api_version = inspect::response(&f.bytes[4..], key, version).version;
                let _ =
                    r.save("responses", &name, &f.bytes, RecordAs::Response { api_key: key, api_version });
            }
        }
        _ => {
            let why = match (f.cut, f.is_unpaired()) {
                (Some(c), _) => format!("cut: {c}"),
                (None, true) => "unpaired: its request is not in the capture".into(),
                _ => "not decoded".into(),
            };
            let side =
                if f.direction == Direction::Response { RecordAs::Unpaired } else { RecordAs::Request };
            let _ = r.save_undecoded(what, &f.bytes, side, &why);
        }
    }
}
