//! `kwire decode` of a packet capture (pcap or pcapng, recognised by its magic number):
//! the command's side of `kwire::capture`, which does the reading. One line per
//! request/response pair, the tree of one frame (`--frame N`), the records, or one JSON
//! object per Kafka frame (`--format json`, the contract in docs/cli.md).

use std::collections::BTreeMap;
use std::io::{Read, Write as _};

use kwire::Direction;
use kwire::capture::{Event, Frame, FrameView, Options, PairLines, Reader};
use kwire::reflect::explain::{self, Assigned, Shown, api_name};
use serde_json::{Value, json};

use crate::decode::{Args, Format, render, shown};
use kwire::proxy::{RecordAs, Recorder};
use kwire::reflect::inspect;

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
    let mut pairs = PairLines::new();
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
        let kind = if f.is_whole() { f.explain_kind() } else { None };
        let lines = matches!(args.format, Format::Tree | Format::Hex);
        let checked = match kind {
            Some(_) if lines => Some(check(&f)),
            _ => None,
        };
        let decoded = kind.filter(|_| !lines).map(|kind| {
            let (shown, note) = shown(&f.bytes, kind, args.show_secrets);
            if let Some(note) = note {
                eprintln!("kwire: note: frame {}: {note}", f.index);
            }
            shown.checked
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
                let mut obj = f.to_json();
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
                            if f.expects_response() {
                                produced.insert(f.index, records.lines);
                            } else {
                                push_records(
                                    &mut text,
                                    explain::produced_lines(&records.lines, None),
                                    "produced",
                                );
                            }
                        }
                        Direction::Request => {}
                        Direction::Response => {
                            if let Some(sent) = f.request.as_ref().and_then(|r| produced.remove(&r.index)) {
                                let answer = match f.view() {
                                    Ok(FrameView::Response(r)) => Assigned::from_response(&r.body),
                                    _ => Assigned::default(),
                                };
                                push_records(
                                    &mut text,
                                    explain::produced_lines(&sent, Some(&answer)),
                                    "produced",
                                );
                            }
                            push_records(
                                &mut text,
                                records.lines.iter().map(|l| l.to_json()).collect(),
                                "fetched",
                            );
                        }
                    }
                    // Requests with records whose answers never come are printed now and then.
                    while produced.len() > 10_000 {
                        if let Some((_, sent)) = produced.pop_first() {
                            push_records(&mut text, explain::produced_lines(&sent, None), "produced");
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
                write(&mut out, &pairs.frame(&f, problem.as_deref()))?;
            }
        }
    }
    let mut text = String::new();
    for (_, sent) in std::mem::take(&mut produced) {
        push_records(&mut text, explain::produced_lines(&sent, None), "produced");
    }
    text.push_str(&pairs.finish());
    write(&mut out, &text)?;
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

/// Appends record lines (JSON objects) with their `direction` (docs/cli.md, `--format records`).
fn push_records(text: &mut String, records: Vec<Value>, direction: &str) {
    for mut json in records {
        json["direction"] = json!(direction);
        text.push_str(&json.to_string());
        text.push('\n');
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
    let Some(kind) = f.explain_kind() else {
        return Err(format!(
            "frame {} is a response whose request is not in the capture (correlation id {}, {} bytes): \
             give it with `kwire decode --api-key K --api-version V` to decode it",
            f.index,
            f.correlation_id.unwrap_or_default(),
            f.bytes.len()
        ));
    };
    let (Shown { bytes, checked: decoded, .. }, note) = shown(&f.bytes, kind, args.show_secrets);
    if let Some(note) = note {
        eprintln!("kwire: note: frame {}: {note}", f.index);
    }
    if args.format == Format::Hex {
        text.push_str(&explain::hex_legend(crate::decode::use_colour(args.color)));
        text.push('\n');
    }
    if let Err(e) = render(args, &decoded, &bytes, &mut text) {
        print!("{text}");
        return Err(format!("cannot read the records of frame {}: {e}", f.index));
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
