//! `kwire encode`: builds frames from the JSON that `kwire decode --format json` writes.
//!
//! The JSON is read into the library's dynamic values (`kwire::reflect::json`, which
//! checks it against the message schema; every error names its JSON path), encoded with
//! `kwire::reflect::Value`'s exact-size encoder, and finally decoded with kwire's typed
//! reference decoder and re-encoded with its typed encoder: the two byte strings must be
//! equal, or the command fails.

use std::io::Write as _;
use std::path::PathBuf;

use kwire::AnyBody;
use kwire::ApiKey;
use kwire::dispatch;
use kwire::frame;
use kwire::messages::{RequestBody, ResponseBody};
use kwire::reflect::json::from_json;

use crate::json_input::{describe, integer, unknown_tags};
use kwire::reflect::walk::{REQUEST_HEADER, RESPONSE_HEADER};
use kwire::reflect::{self, Encoding, StructValue, Value as V};
use serde_json::Value;

use crate::input::{self, parse_api_key};

/// Kafka's limit on the length of a string.
const MAX_STRING_LEN: usize = 0x7fff;

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
        let built = build(doc, args.api_key, args.api_version)
            .map_err(|e| if many { format!("JSON document {}: {e}", i + 1) } else { e })?;
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

/// A frame built from JSON, with the notes the user should see.
pub struct Built {
    /// The whole frame, size prefix included.
    pub bytes: Vec<u8>,
    /// Values that were dropped, as Kafka drops them.
    pub warnings: Vec<String>,
}

fn header_object<'j>(
    header: &'j Value,
    allowed: &[&str],
) -> Result<&'j serde_json::Map<String, Value>, String> {
    let obj = header
        .as_object()
        .ok_or_else(|| format!("header: expected an object, found {}", describe(header)))?;
    if let Some(extra) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("header.{extra}: unknown field; the header has: {}", allowed.join(", ")));
    }
    Ok(obj)
}

fn required<'j>(obj: &'j serde_json::Map<String, Value>, key: &str, path: &str) -> Result<&'j Value, String> {
    obj.get(key).ok_or_else(|| format!("{path}.{key}: missing"))
}

/// Builds one frame from one JSON document.
pub fn build(doc: &Value, cli_key: Option<ApiKey>, cli_version: Option<i16>) -> Result<Built, String> {
    let top = doc
        .as_object()
        .ok_or_else(|| format!("expected an object with \"header\" and \"body\", found {}", describe(doc)))?;
    if let Some(extra) =
        top.keys().find(|k| !["header", "body", "apiKey", "apiVersion"].contains(&k.as_str()))
    {
        return Err(format!(
            "{extra}: unknown key; a frame has \"header\", \"body\" and, for responses, \"apiKey\" and \"apiVersion\""
        ));
    }
    let header = top.get("header").ok_or("header: missing")?;
    let body = top.get("body").ok_or("body: missing")?;
    let json_key_arg = match top.get("apiKey") {
        None => None,
        Some(Value::String(s)) => Some(parse_api_key(s).map_err(|e| format!("apiKey: {e}"))?),
        Some(v) => {
            let k = integer(v, i16::MIN.into(), i16::MAX.into(), "int16", "apiKey")? as i16;
            Some(ApiKey::from_i16(k).ok_or_else(|| {
                format!("apiKey: API key {k} is not supported; {}", crate::input::supported_list())
            })?)
        }
    };
    let json_version = match top.get("apiVersion") {
        None => None,
        Some(v) => Some(integer(v, i16::MIN.into(), i16::MAX.into(), "int16", "apiVersion")? as i16),
    };
    let request = header.get("requestApiKey").is_some();
    let (key, version) = if request {
        let h = header_object(
            header,
            &["requestApiKey", "requestApiVersion", "correlationId", "clientId", "_unknownTaggedFields"],
        )?;
        let k = integer(
            required(h, "requestApiKey", "header")?,
            i16::MIN.into(),
            i16::MAX.into(),
            "int16",
            "header.requestApiKey",
        )? as i16;
        let key = ApiKey::from_i16(k).ok_or_else(|| {
            format!("header.requestApiKey: API key {k} is not supported; {}", crate::input::supported_list())
        })?;
        let version = integer(
            required(h, "requestApiVersion", "header")?,
            i16::MIN.into(),
            i16::MAX.into(),
            "int16",
            "header.requestApiVersion",
        )? as i16;
        for (what, other) in [("apiKey", json_key_arg), ("--api-key", cli_key)] {
            if other.is_some_and(|o| o != key) {
                return Err(format!("{what} does not match header.requestApiKey ({} is {})", k, key.name()));
            }
        }
        for (what, other) in [("apiVersion", json_version), ("--api-version", cli_version)] {
            if other.is_some_and(|o| o != version) {
                return Err(format!("{what} does not match header.requestApiVersion ({version})"));
            }
        }
        if !key.request_versions().contains(version) {
            return Err(format!(
                "header.requestApiVersion: {} has no request version {version} in kwire (versions {})",
                key.name(),
                key.request_versions()
            ));
        }
        (key, version)
    } else {
        let key = match (json_key_arg, cli_key) {
            (Some(a), Some(b)) if a != b => {
                return Err(format!("apiKey ({}) and --api-key ({}) disagree", a.name(), b.name()));
            }
            (a, b) => a.or(b),
        };
        let version = match (json_version, cli_version) {
            (Some(a), Some(b)) if a != b => {
                return Err(format!("apiVersion ({a}) and --api-version ({b}) disagree"));
            }
            (a, b) => a.or(b),
        };
        let (Some(key), Some(version)) = (key, version) else {
            return Err("this is a response (its header has no requestApiKey), and a response does not say which API it \
                        answers: pass --api-key and --api-version, or add \"apiKey\" and \"apiVersion\" to the JSON"
                .into());
        };
        if !key.response_versions().contains(version) {
            return Err(format!(
                "{} has no response version {version} in kwire (versions {})",
                key.name(),
                key.response_versions()
            ));
        }
        (key, version)
    };

    let schema = if request { reflect::request_schema(key) } else { reflect::response_schema(key) };
    let body_encoding = Encoding::body(schema, version);
    let read = from_json(schema.body, schema.name, body_encoding, body, "body").map_err(|e| e.to_string())?;
    let internal = |e: reflect::ValueError| format!("cannot encode the body: {e}");
    let body_len = read.value.encoded_len(body_encoding).map_err(internal)?;

    // The header, as a value of the header schema.
    let h = if request {
        header_object(
            header,
            &["requestApiKey", "requestApiVersion", "correlationId", "clientId", "_unknownTaggedFields"],
        )?
    } else {
        header_object(header, &["correlationId", "_unknownTaggedFields"])?
    };
    let correlation = integer(
        required(h, "correlationId", "header")?,
        i32::MIN.into(),
        i32::MAX.into(),
        "int32",
        "header.correlationId",
    )? as i32;
    let (header_encoding, header_tagged) = if request {
        let hv = key.request_header_version(version);
        (Encoding::request_header(hv), hv >= 2)
    } else {
        let hv = key.response_header_version(version);
        (Encoding::response_header(hv), hv >= 1)
    };
    let tags = match h.get("_unknownTaggedFields") {
        None => Vec::new(),
        Some(v) => {
            let list = unknown_tags(v, "header._unknownTaggedFields", &[])?;
            if !list.is_empty() && !header_tagged {
                return Err("header._unknownTaggedFields: this header version has no tagged fields".into());
            }
            list
        }
    };
    let mut head = StructValue::new(if request { &REQUEST_HEADER } else { &RESPONSE_HEADER });
    head.set("CorrelationId", V::Int32(correlation));
    if request {
        head.set("RequestApiKey", V::Int16(key.to_i16()));
        head.set("RequestApiVersion", V::Int16(version));
        let client = match required(h, "clientId", "header")? {
            Value::Null => V::Null,
            Value::String(s) if s.len() <= MAX_STRING_LEN => V::String(s.clone()),
            Value::String(s) => {
                return Err(format!(
                    "header.clientId: the string is {} bytes; Kafka strings are at most 32767",
                    s.len()
                ));
            }
            other => {
                return Err(format!("header.clientId: expected a string or null, found {}", describe(other)));
            }
        };
        head.set("ClientId", client);
    }
    head.unknown_tagged_fields = tags;
    let head = head.to_bytes(header_encoding).map_err(|e| format!("cannot encode the header: {e}"))?;

    let size = head.len().saturating_add(body_len);
    let Ok(size32) = i32::try_from(size) else {
        return Err(format!(
            "the frame would be {size} bytes, over the 2147483647 an int32 size prefix can say"
        ));
    };
    let total = size + 4;
    let mut bytes = vec![0u8; total];
    bytes[..4].copy_from_slice(&size32.to_be_bytes());
    bytes[4..4 + head.len()].copy_from_slice(&head);
    let written = read.value.encode(body_encoding, &mut bytes[4 + head.len()..]).map_err(internal)?;
    if written != body_len {
        return Err(format!("internal error: sized the body at {body_len} bytes but wrote {written}"));
    }
    check_with_typed_codec(&bytes, key, version, request)?;
    Ok(Built { bytes, warnings: read.warnings })
}

/// Decodes a built frame with kwire's typed decoders and re-encodes its body with the
/// typed encoder; the bytes must come out the same.
fn check_with_typed_codec(bytes: &[u8], key: ApiKey, version: i16, request: bool) -> Result<(), String> {
    let frame_bytes = bytes.get(4..).unwrap_or_default();
    let fail =
        |what: String| format!("internal error: the frame built from the JSON {what}; please report this");
    let rejected = |e: &dyn std::fmt::Display| fail(format!("is rejected by kwire's typed decoder: {e}"));
    let reference = |e: kwire::DecodeError| fail(format!("is rejected by kwire's reference decoder: {e}"));
    let encoder = |e: kwire::EncodeError| fail(format!("cannot be re-encoded by kwire's typed encoder: {e}"));
    let differs = || fail("differs from what kwire's typed encoder writes for the same values".into());
    // The whole frame again, from the typed values, with the typed frame encoders.
    let mut again = vec![0u8; bytes.len()];
    let n = if request {
        let req = dispatch::parse_request(frame_bytes).map_err(|e| rejected(&e))?;
        let typed = RequestBody::decode(req.body.as_bytes(), key, version).map_err(reference)?;
        let tags: Vec<kwire::RawTaggedField<'_>> = req
            .header
            .unknown_tagged_fields()
            .map(|(tag, data)| kwire::RawTaggedField { tag, data: data.into() })
            .collect();
        let header = frame::RequestHeader {
            correlation_id: req.header.correlation_id(),
            client_id: req.header.client_id(),
            unknown_tagged_fields: &tags,
        };
        dispatch::encode_request_with(&typed, version, &header, &mut again).map_err(encoder)?
    } else {
        let resp = dispatch::parse_response(frame_bytes, key, version).map_err(|e| rejected(&e))?;
        let typed = ResponseBody::decode(resp.body.as_bytes(), key, version).map_err(reference)?;
        if resp.header.unknown_tagged_fields().next().is_some() {
            // kwire's response encoder writes no header tagged fields: compare the bodies.
            let body = encode_typed(&typed, version).map_err(encoder)?;
            return if body == resp.body.as_bytes() { Ok(()) } else { Err(differs()) };
        }
        dispatch::encode_response(&typed, version, resp.header.correlation_id(), &mut again)
            .map_err(encoder)?
    };
    if again.get(..n) != Some(bytes) {
        return Err(differs());
    }
    Ok(())
}

/// Encodes a body with kwire's typed encoder.
pub fn encode_typed(body: &impl AnyBody, version: i16) -> Result<Vec<u8>, kwire::EncodeError> {
    let mut out = vec![0u8; body.encoded_len(version)?];
    let n = body.encode(version, &mut out)?;
    out.truncate(n);
    Ok(out)
}
