//! `kwire encode`: builds frames from the JSON that `kwire decode --format json` writes.
//!
//! The JSON is read into the library's dynamic values (`kwire::reflect::json`, which
//! checks it against the message schema; every error names its JSON path), encoded with
//! `kwire::reflect::Value`'s exact-size encoder, and finally decoded with kwire's typed
//! reference decoder and re-encoded with its typed encoder: the two byte strings must be
//! equal, or the command fails.

use std::io::Write as _;
use std::path::PathBuf;

use kwire::ApiKey;
use kwire::reflect::json::frame_from_json;
use serde_json::Value;

use crate::input::{self, parse_api_key};

const AFTER_HELP: &str = "\
Examples:
  # Decode a frame to JSON, edit it, and build it again
  kwire decode --format json request.hex > request.json
  kwire encode request.json

  # Round trip: prints the same hex as the input
  kwire decode --format json tests/vectors/seed/apiversions_v4_request.hex | kwire encode

  # A response: say what it answers, on the command line or in the JSON
  kwire encode --api-key ApiVersions --api-version 4 response.json
  echo '{\"apiKey\": 18, \"apiVersion\": 0, \"header\": {\"correlationId\": 1},
         \"body\": {\"errorCode\": 35, \"apiKeys\": []}}' | kwire encode

  # Raw bytes instead of hex
  kwire encode --binary request.json > request.bin

The JSON is Apache Kafka's own JSON form of the header and body: field names in
camelCase, bytes as base64, UUIDs in Kafka's base64 form. Fields that the version
has must be present (tagged fields may be left out). See docs/cli.md.";

/// Build frames from JSON, as `kwire decode --format json` writes it.
///
/// The JSON is checked against the message schema, and the frame against kwire's typed
/// decoder and encoder.
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// JSON file: one or more documents, one per frame. Reads stdin when absent or `-`.
    file: Option<PathBuf>,
    /// For responses: the API of the request answered, by name (ListOffsets) or key (2).
    /// Overrides nothing: if the JSON has "apiKey" too, they must agree.
    #[arg(long, value_parser = parse_api_key, value_name = "API")]
    api_key: Option<ApiKey>,
    /// For responses: the version of the request answered.
    #[arg(long, value_name = "VERSION")]
    api_version: Option<i16>,
    /// Write raw bytes instead of hex (one line of lowercase hex per frame).
    #[arg(long)]
    binary: bool,
}

/// Runs `kwire encode`.
pub fn run(args: Args) -> Result<(), String> {
    let raw = input::read_all(args.file.as_deref())?;
    let mut docs = Vec::new();
    for doc in serde_json::Deserializer::from_slice(&raw).into_iter::<Value>() {
        docs.push(doc.map_err(|e| format!("invalid JSON: {e}"))?);
    }
    if docs.is_empty() {
        return Err(
            "no JSON input: expected one document per frame, as `kwire decode --format json` writes".into()
        );
    }
    let many = docs.len() > 1;
    let mut frames = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let built = frame_from_json(doc, args.api_key, args.api_version).map_err(|e| {
            let hint = if e.path() == "apiKey" && e.message().starts_with("missing") {
                " (pass --api-key and --api-version)"
            } else {
                ""
            };
            if many { format!("JSON document {}: {e}{hint}", i + 1) } else { format!("{e}{hint}") }
        })?;
        for w in &built.warnings {
            eprintln!("kwire: warning: {w}");
        }
        frames.push(built.bytes);
    }
    let mut out = std::io::stdout().lock();
    let written = if args.binary {
        frames.iter().try_for_each(|f| out.write_all(f))
    } else {
        frames.iter().try_for_each(|f| {
            let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
            writeln!(out, "{hex}")
        })
    };
    written.and_then(|()| out.flush()).map_err(|e| format!("cannot write the output: {e}"))
}
