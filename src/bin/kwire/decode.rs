//! `kwire decode`: reads frames (hex or binary), walks them over the schema tables and
//! prints them as an object tree, as JSON or as an annotated hex dump. Every frame is also
//! decoded by kwire's typed views; if the two disagree, that is reported as an error.

use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;

use kwire::ApiKey;
use kwire::secrets::Redaction;

use kwire::reflect::explain::{self, Checked, FrameKind as Kind, Shown};

use crate::input::{self, parse_api_key, supported_list};

const AFTER_HELP: &str = "\
Examples:
  # A request frame as hex (requests say what they are)
  kwire decode tests/vectors/seed/apiversions_v4_request.hex

  # Hex from a pipe, in xxd's layout, as JSON
  xxd frame.bin | kwire decode --format json

  # A response: name the request it answers...
  kwire decode --api-key ApiVersions --api-version 4 response.hex
  # ...or give the request itself (one request for all responses, or one per response)
  kwire decode --request request.hex response.hex

  # Raw bytes, annotated hex dump
  kwire decode --binary --format hex capture.bin

  # The records of a Produce request (or Fetch response), one JSON line each
  kwire decode --format records tests/vectors/records/requests/kafkajs_gzip_1.hex

  # The Kafka traffic of a packet capture (pcap or pcapng: tcpdump, Wireshark)
  kwire decode kafka.pcapng                       # one line per request/response pair
  tcpdump -i any -U -w - port 9092 | kwire decode -   # as it happens
  kwire decode --format json --port 9092 kafka.pcap   # one JSON object per Kafka frame
  kwire decode --frame 12 kafka.pcap              # the tree of the capture's 12th frame

Input: a pcap or pcapng capture (recognised by its first bytes; see docs/cli.md, \"Reading
a capture\"), or hex digits with any whitespace, 0x prefixes, offset columns (`0000:`) and the
character columns of xxd and hexdump -C; or raw bytes (detected, or forced with
--binary). Several frames may follow each other; each starts with its int32 size.

Secrets (SASL tokens and passwords, SCRAM salts, delegation-token HMACs, sensitive
config values: the fields of `kwire::secrets`) are printed as `*` bytes of the same
length, with a note on stderr; --show-secrets prints them as given. A frame that does not
decode is shown as given, unless its API can carry secrets: then everything after its
header's first fields is masked.

Exit status: 0 when every frame decoded, 1 when the input is malformed (everything
that decoded is printed first, then the error with its byte offset and field),
2 for a command-line mistake.";

/// How to print decoded frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The object tree: every field with its type, value, offset, size and meaning.
    Tree,
    /// Apache Kafka's JSON form of the header and body (what `kwire encode` reads).
    Json,
    /// An annotated hex dump, 16 bytes per row.
    Hex,
    /// One JSON object per record (Produce requests, Fetch and ShareFetch responses,
    /// FetchSnapshot): topic, partition, offset, timestamp, key, value, headers.
    Records,
}

/// When to colour the hex dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Colour {
    /// When standard output is a terminal and NO_COLOR is not set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Decode frames and show every field with its offset and size.
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// What to read (stdin when absent or `-`): one or more frames, each with its size
    /// prefix, as hex text (whitespace, `0x`, `#` comments, `xxd` and `hexdump -C` dumps) or as
    /// raw bytes (told apart by content, or forced with --binary); or a packet capture, pcap
    /// or pcapng (recognised by its first bytes, also streamed, as from `tcpdump -w -`).
    pub(crate) file: Option<PathBuf>,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = Format::Tree)]
    pub(crate) format: Format,
    /// Treat the input as raw bytes (otherwise detected: text is read as hex).
    #[arg(long)]
    pub(crate) binary: bool,
    /// The frames are responses to this API, by name (ListOffsets) or key (2).
    #[arg(long, value_parser = parse_api_key, value_name = "API", requires = "api_version", conflicts_with = "request")]
    pub(crate) api_key: Option<ApiKey>,
    /// The frames are responses to this version of the API.
    #[arg(long, value_name = "VERSION", requires = "api_key", conflicts_with = "request")]
    pub(crate) api_version: Option<i16>,
    /// The frames are responses to the request(s) in FILE (hex or binary): one request
    /// for all of them, or one per response, in order.
    #[arg(long, value_name = "FILE")]
    pub(crate) request: Option<PathBuf>,
    /// With --format json: one line per frame instead of pretty-printed JSON.
    #[arg(long)]
    pub(crate) compact: bool,
    /// With --format hex: when to use colours.
    #[arg(long, value_enum, default_value_t = Colour::Auto, value_name = "WHEN")]
    pub(crate) color: Colour,
    /// Print secret fields as given instead of masked.
    #[arg(long)]
    pub(crate) show_secrets: bool,
    /// A capture: only connections with one of these ports on one side (the broker's);
    /// without it, Kafka is found on any port. Repeat or separate with commas.
    #[arg(long, value_delimiter = ',', value_name = "PORT")]
    pub(crate) port: Vec<u16>,
    /// A capture: print only Kafka frame N (numbered from 1 in capture order, as the lines
    /// and `--format json` number them) as the tree, JSON or hex dump of `--format`.
    #[arg(long, value_name = "N")]
    pub(crate) frame: Option<u64>,
    /// A capture: save its whole frames as test vectors in DIR (requests/, responses/;
    /// cut and unpaired frames in undecoded/), as `kwire proxy --record` does.
    #[arg(long, value_name = "DIR")]
    pub(crate) record: Option<PathBuf>,
    /// With --record: at most this many pairs per client, API and version.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub(crate) record_limit: usize,
}

/// A frame made ready to show (`explain::explain_shown`): masked unless `--show-secrets`,
/// explained and checked, an unknown API key's problem with the command's hint; and what
/// was masked, as a note.
pub(crate) fn shown(frame: &[u8], kind: Kind, show_secrets: bool) -> (Shown<'_>, Option<String>) {
    let mut shown = explain::explain_shown(frame, kind, show_secrets);
    with_hint(&mut shown.checked);
    let note = match shown.redaction {
        Redaction::Clean => None,
        Redaction::Masked { fields, bytes } => Some(format!(
            "{fields} secret field(s), {bytes} bytes, masked with '*'; --show-secrets shows them"
        )),
        Redaction::Whole { bytes } => Some(format!(
            "the frame does not decode and its API can carry secrets, so its {bytes} body bytes are shown as '*'; \
             --show-secrets shows them"
        )),
    };
    (shown, note)
}

/// Reads the API, version and correlation id of each request frame in `path`.
fn requests_in(path: &std::path::Path) -> Result<Vec<(ApiKey, i16, i32)>, String> {
    let raw = input::read_all(Some(path))?;
    let bytes = input::frame_bytes(&raw, false).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, (_, f)) in explain::split_frames(&bytes).enumerate() {
        let at = |what: String| format!("{}: request frame {}: {what}", path.display(), i + 1);
        let (key, version, correlation) = f
            .get(4..)
            .and_then(kwire::frame::request_ids)
            .ok_or_else(|| at("too short to hold a request header".into()))?;
        let api = ApiKey::from_i16(key)
            .ok_or_else(|| at(format!("API key {key} is not supported; {}", supported_list())))?;
        out.push((api, version, correlation));
    }
    if out.is_empty() {
        return Err(format!("{}: no request frame in the file", path.display()));
    }
    Ok(out)
}

/// Whether to colour the hex dump.
pub(crate) fn use_colour(c: Colour) -> bool {
    match c {
        Colour::Always => true,
        Colour::Never => false,
        Colour::Auto => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    }
}

/// Decodes the frames of `kwire decode`'s input: `raw` holds what `source` gave so far.
pub fn run_frames(args: &Args, mut source: impl std::io::Read, mut raw: Vec<u8>) -> Result<(), String> {
    let what = || args.file.as_ref().map_or("stdin".to_string(), |p| p.display().to_string());
    if args.port.len() + usize::from(args.frame.is_some()) + usize::from(args.record.is_some()) > 0 {
        return Err("--port, --frame and --record apply to a capture (pcap or pcapng) only".into());
    }
    std::io::Read::read_to_end(&mut source, &mut raw).map_err(|e| format!("cannot read {}: {e}", what()))?;
    let bytes = input::frame_bytes(&raw, args.binary)?;
    if bytes.is_empty() {
        return Err("no input: expected one or more frames, as hex or raw bytes".into());
    }
    let frames: Vec<(usize, &[u8])> = explain::split_frames(&bytes).collect();
    let requests = match &args.request {
        Some(path) => {
            let list = requests_in(path)?;
            if list.len() != 1 && list.len() != frames.len() {
                return Err(format!(
                    "{} holds {} requests but the input holds {} responses: give one request, or one per response",
                    path.display(),
                    list.len(),
                    frames.len()
                ));
            }
            Some(list)
        }
        None => None,
    };
    if let (Some(key), Some(version)) = (args.api_key, args.api_version)
        && !key.response_versions().contains(version)
    {
        let v = key.response_versions();
        return Err(format!(
            "{} has no response version {version} in kwire (versions {}-{})",
            key.name(),
            v.min,
            v.max
        ));
    }
    let colour = use_colour(args.color);

    let mut out = std::io::stdout().lock();
    let many = frames.len() > 1;
    let mut text = String::new();
    if args.format == Format::Hex {
        text.push_str(&explain::hex_legend(colour));
        text.push('\n');
    }
    for (i, &(start, f)) in frames.iter().enumerate() {
        let n = i + 1;
        let kind = match (&requests, args.api_key, args.api_version) {
            (Some(list), _, _) => {
                let (key, version, correlation) =
                    list.get(i).or(list.first()).copied().ok_or("no request")?;
                let got = f.get(4..).and_then(kwire::frame::response_correlation_id);
                if list.len() > 1 && got.is_some_and(|c| c != correlation) {
                    eprintln!(
                        "kwire: warning: frame {n}: correlation id {} differs from that of request {n} ({correlation})",
                        got.unwrap_or_default()
                    );
                }
                Kind::Response(key, version)
            }
            (None, Some(key), Some(version)) => Kind::Response(key, version),
            _ => Kind::Request,
        };
        let (Shown { bytes, checked: decoded, .. }, masking) = shown(f, kind, args.show_secrets);
        if let Some(note) = masking {
            eprintln!("kwire: note: frame {n}: {note}");
        }
        if let Some(note) = &decoded.note {
            eprintln!("kwire: note: frame {n}: {note}");
        }
        if !matches!(args.format, Format::Json | Format::Records) {
            let summary = explain::frame_line(&bytes, kind);
            if many {
                if i > 0 {
                    text.push('\n');
                }
                let end = start + f.len();
                text.push_str(&format!("# frame {n}, input bytes {start}..{end}: {summary}\n"));
            } else {
                text.push_str(&format!("# {summary}\n"));
            }
        }
        if let Err(e) = render(args, &decoded, &bytes, &mut text) {
            out.write_all(text.as_bytes()).map_err(|e| format!("cannot write the output: {e}"))?;
            let _ = out.flush();
            let place = if many { format!("frame {n} (input offset {start})") } else { "the frame".into() };
            return Err(format!("cannot read the records of {place}: {e}"));
        }
        out.write_all(text.as_bytes()).map_err(|e| format!("cannot write the output: {e}"))?;
        text.clear();
        if let Some(problem) = decoded.problem {
            let _ = out.flush();
            let place = if many { format!("frame {n} (input offset {start})") } else { "the frame".into() };
            return Err(format!("cannot decode {place}: {problem}"));
        }
    }
    out.flush().map_err(|e| format!("cannot write the output: {e}"))
}

/// `decoded` (of `bytes`) appended to `text` as `--format` says; a hex dump without its
/// legend. A record batch that cannot be read is the error, after the records before it.
pub(crate) fn render(args: &Args, decoded: &Checked, bytes: &[u8], text: &mut String) -> Result<(), String> {
    match args.format {
        Format::Tree => {
            let mut root = decoded.explained.root.clone();
            explain::annotate_records(&mut root);
            text.push_str(&explain::render_tree(&root));
        }
        Format::Hex => {
            text.push_str(&explain::render_hex(&decoded.explained.root, bytes, use_colour(args.color)))
        }
        Format::Json => {
            let json = decoded.explained.to_json();
            // Serialising a serde_json value cannot fail.
            let json =
                if args.compact { serde_json::to_string(&json) } else { serde_json::to_string_pretty(&json) };
            text.push_str(&json.unwrap_or_default());
            text.push('\n');
        }
        Format::Records => {
            let records = explain::record_lines(&decoded.explained);
            for note in &records.notes {
                eprintln!("kwire: note: {note}");
            }
            for line in records.lines {
                text.push_str(&line.to_json().to_string());
                text.push('\n');
            }
            if let Some(e) = records.error {
                return Err(e);
            }
        }
    }
    Ok(())
}

/// The walker's problem as the command reports it: an unknown API key gets the list of
/// supported ones and a hint for responses.
fn with_hint(checked: &mut Checked) {
    if let Some(p) = &checked.explained.problem
        && checked.problem.as_deref() == Some(p.to_string().as_str())
        && p.path == "header.requestApiKey"
        && p.message.starts_with("API key")
    {
        checked.problem = Some(format!(
            "{p} ({}); if the frame is a response, say what it answers with --api-key and --api-version, or \
             --request",
            supported_list()
        ));
    }
}
