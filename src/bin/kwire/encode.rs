//! `kwire encode`: builds frames from the JSON that `kwire decode --format json` writes.
//!
//! The JSON is first checked against the message schema (every error names its JSON
//! path), then sized and written with kwire's wire primitives, and finally decoded with
//! kwire's typed reference decoder and re-encoded with its typed encoder: the two byte
//! strings must be equal, or the command fails.

use std::io::Write as _;
use std::path::PathBuf;

use kwire::AnyBody;
use kwire::dispatch;
use kwire::frame;
use kwire::messages::{RequestBody, ResponseBody};
use kwire::reflect::{self, FieldSchema, FieldType, StructSchema};
use kwire::wire::{self, Writer};
use kwire::{ApiKey, Versions};
use serde_json::Value;

use crate::input::{self, parse_api_key};
use crate::value::{Scalar, json_key, parse_base64, parse_uuid, type_name};

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

/// A value checked against its schema type.
#[derive(Debug)]
enum V {
    S(Scalar),
    Arr(Option<Vec<V>>),
    Struct(Option<Box<SV>>),
}

/// A struct's values: one per schema field (`None` when not written in this version)
/// and its unknown tagged fields.
#[derive(Debug)]
struct SV {
    schema: &'static StructSchema,
    fields: Vec<Option<V>>,
    unknown: Vec<(u32, Vec<u8>)>,
}

struct Enc {
    version: i16,
    flexible: bool,
    message: &'static str,
    warnings: Vec<String>,
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.chars().count() > 30 => "a string".into(),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

fn versions_text(v: Versions) -> String {
    if v.is_empty() {
        "none".into()
    } else if v.max == i16::MAX {
        format!("{}+", v.min)
    } else if v.min == v.max {
        v.min.to_string()
    } else {
        format!("{}-{}", v.min, v.max)
    }
}

/// Reads an integer as Kafka's JSON reader does: a JSON integer, or a string holding a
/// decimal or `0x` hexadecimal number.
fn integer(v: &Value, min: i128, max: i128, ty: &str, path: &str) -> Result<i128, String> {
    let n: Option<i128> = match v {
        Value::Number(n) => n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)),
        Value::String(s) => {
            let (neg, digits) = match s.strip_prefix('-') {
                Some(d) => (true, d),
                None => (false, s.as_str()),
            };
            let parsed = match digits.strip_prefix("0x") {
                Some(hex) => i128::from_str_radix(hex, 16).ok(),
                None => digits.parse::<i128>().ok(),
            };
            parsed.map(|p| if neg { -p } else { p })
        }
        _ => None,
    };
    let Some(n) = n else {
        return Err(format!("{path}: expected an integer ({ty}), found {}", describe(v)));
    };
    if n < min || n > max {
        return Err(format!("{path}: {n} does not fit in {ty} ({min} to {max})"));
    }
    Ok(n)
}

fn unknown_tags(v: &Value, path: &str, known: &[u32]) -> Result<Vec<(u32, Vec<u8>)>, String> {
    let items = v.as_array().ok_or_else(|| {
        format!("{path}: expected an array of {{\"tag\": n, \"data\": base64}}, found {}", describe(v))
    })?;
    let mut out: Vec<(u32, Vec<u8>)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let obj =
            item.as_object().ok_or_else(|| format!("{p}: expected an object, found {}", describe(item)))?;
        if let Some(extra) = obj.keys().find(|k| *k != "tag" && *k != "data") {
            return Err(format!(
                "{p}.{extra}: unknown key; an unknown tagged field has only \"tag\" and \"data\""
            ));
        }
        let tag_value = obj.get("tag").ok_or_else(|| format!("{p}.tag: missing"))?;
        let tag = integer(tag_value, 0, i128::from(u32::MAX), "uint32", &join(&p, "tag"))? as u32;
        let data = match obj.get("data") {
            Some(Value::String(s)) => parse_base64(s).ok_or_else(|| format!("{p}.data: not valid base64"))?,
            Some(other) => {
                return Err(format!("{p}.data: expected a base64 string, found {}", describe(other)));
            }
            None => return Err(format!("{p}.data: missing")),
        };
        if known.contains(&tag) {
            return Err(format!(
                "{p}.tag: tag {tag} belongs to a field this struct knows; set that field instead"
            ));
        }
        if out.last().is_some_and(|(prev, _)| tag <= *prev) {
            return Err(format!(
                "{p}.tag: tags must be in ascending order without repeats ({tag} follows {})",
                out.last().map_or(0, |l| l.0)
            ));
        }
        if data.len() >= i32::MAX as usize {
            return Err(format!("{p}.data: too long"));
        }
        out.push((tag, data));
    }
    Ok(out)
}

impl Enc {
    fn strukt(&mut self, s: &'static StructSchema, json: &Value, path: &str) -> Result<SV, String> {
        let obj = json
            .as_object()
            .ok_or_else(|| format!("{path}: expected an object ({}), found {}", s.name, describe(json)))?;
        for key in obj.keys() {
            if key == "_unknownTaggedFields" || s.fields.iter().any(|f| json_key(f.name) == *key) {
                continue;
            }
            let here: Vec<String> = s
                .fields
                .iter()
                .filter(|f| f.versions.contains(self.version))
                .map(|f| json_key(f.name))
                .collect();
            let hint = match s.fields.iter().find(|f| f.name.eq_ignore_ascii_case(key)) {
                Some(f) => format!(" (did you mean {:?}?)", json_key(f.name)),
                None => String::new(),
            };
            return Err(format!(
                "{}: unknown field{hint}; {} version {} has: {}",
                join(path, key),
                s.name,
                self.version,
                if here.is_empty() { "no fields".to_string() } else { here.join(", ") }
            ));
        }
        let mut fields = Vec::with_capacity(s.fields.len());
        for f in s.fields {
            let key = json_key(f.name);
            let p = join(path, &key);
            let in_version = f.versions.contains(self.version);
            match obj.get(&key) {
                None if f.is_inline(self.version) => {
                    return Err(format!(
                        "{p}: missing; {} version {} requires this field ({})",
                        s.name,
                        self.version,
                        type_name(&f.ty)
                    ));
                }
                None => fields.push(None),
                Some(j) => {
                    let nullable = !in_version || f.is_nullable(self.version);
                    let v = self.value(&f.ty, nullable, j, &p)?;
                    if in_version {
                        if !nullable && is_null(&v) {
                            return Err(format!(
                                "{p}: null is not allowed; the field is not nullable in version {}",
                                self.version
                            ));
                        }
                        fields.push(Some(v));
                    } else {
                        if !is_default(&v, f) {
                            let why = format!(
                                "{} version {} cannot carry this field (it exists in versions {})",
                                self.message,
                                self.version,
                                versions_text(f.versions)
                            );
                            if f.ignorable {
                                self.warnings.push(format!("{p}: left out: {why}; Kafka drops it too"));
                            } else {
                                return Err(format!("{p}: {why}; remove it or set it to its default"));
                            }
                        }
                        fields.push(None);
                    }
                }
            }
        }
        let known: Vec<u32> = s.fields.iter().filter_map(|f| f.tag).collect();
        let unknown = match obj.get("_unknownTaggedFields") {
            None => Vec::new(),
            Some(v) => {
                let p = join(path, "_unknownTaggedFields");
                let list = unknown_tags(v, &p, &known)?;
                if !list.is_empty() && !self.flexible {
                    return Err(format!(
                        "{p}: version {} of {} is not flexible, so it has no tagged fields",
                        self.version, self.message
                    ));
                }
                list
            }
        };
        Ok(SV { schema: s, fields, unknown })
    }

    fn value(&mut self, ty: &'static FieldType, nullable: bool, j: &Value, path: &str) -> Result<V, String> {
        if j.is_null() {
            if !nullable
                && !matches!(
                    ty,
                    FieldType::String
                        | FieldType::Bytes
                        | FieldType::Records
                        | FieldType::Array(_)
                        | FieldType::Struct(_)
                )
            {
                return Err(format!("{path}: expected {}, found null", expected(ty)));
            }
            if !nullable {
                return Err(format!(
                    "{path}: null is not allowed; the field is not nullable in version {}",
                    self.version
                ));
            }
            return Ok(match ty {
                FieldType::String => V::S(Scalar::Str(None)),
                FieldType::Bytes | FieldType::Records => V::S(Scalar::Bytes(None)),
                FieldType::Array(_) => V::Arr(None),
                FieldType::Struct(_) => V::Struct(None),
                _ => return Err(format!("{path}: expected {}, found null", expected(ty))),
            });
        }
        let wrong = || format!("{path}: expected {}, found {}", expected(ty), describe(j));
        Ok(match ty {
            FieldType::Bool => V::S(Scalar::Bool(j.as_bool().ok_or_else(wrong)?)),
            FieldType::Int8 => {
                V::S(Scalar::I8(integer(j, i8::MIN.into(), i8::MAX.into(), "int8", path)? as i8))
            }
            FieldType::Int16 => {
                V::S(Scalar::I16(integer(j, i16::MIN.into(), i16::MAX.into(), "int16", path)? as i16))
            }
            FieldType::Int32 => {
                V::S(Scalar::I32(integer(j, i32::MIN.into(), i32::MAX.into(), "int32", path)? as i32))
            }
            FieldType::Int64 => {
                V::S(Scalar::I64(integer(j, i64::MIN.into(), i64::MAX.into(), "int64", path)? as i64))
            }
            FieldType::Uint16 => V::S(Scalar::U16(integer(j, 0, u16::MAX.into(), "uint16", path)? as u16)),
            FieldType::Uint32 => V::S(Scalar::U32(integer(j, 0, u32::MAX.into(), "uint32", path)? as u32)),
            FieldType::Float64 => V::S(Scalar::F64(match j {
                Value::Number(n) => n.as_f64().ok_or_else(wrong)?,
                Value::String(s) if s == "NaN" => f64::NAN,
                Value::String(s) if s == "Infinity" => f64::INFINITY,
                Value::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
                _ => return Err(wrong()),
            })),
            FieldType::Uuid => V::S(Scalar::Uuid(j.as_str().and_then(parse_uuid).ok_or_else(wrong)?)),
            FieldType::String => {
                let s = j.as_str().ok_or_else(wrong)?;
                if s.len() > wire::MAX_STRING_LEN {
                    return Err(format!(
                        "{path}: the string is {} bytes; Kafka strings are at most 32767",
                        s.len()
                    ));
                }
                V::S(Scalar::Str(Some(s.to_string())))
            }
            FieldType::Bytes | FieldType::Records => {
                let s = j.as_str().ok_or_else(wrong)?;
                let b = parse_base64(s).ok_or_else(|| format!("{path}: not valid base64"))?;
                if b.len() >= i32::MAX as usize {
                    return Err(format!("{path}: too long"));
                }
                V::S(Scalar::Bytes(Some(b)))
            }
            FieldType::Array(elem) => {
                let items = j.as_array().ok_or_else(wrong)?;
                if items.len() >= i32::MAX as usize {
                    return Err(format!("{path}: too many elements for an array count"));
                }
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    out.push(self.value(elem, false, item, &format!("{path}[{i}]"))?);
                }
                V::Arr(Some(out))
            }
            FieldType::Struct(s) => V::Struct(Some(Box::new(self.strukt(s, j, path)?))),
        })
    }

    // ------------------------------------------------------------------ sizing

    fn size_struct(&self, sv: &SV) -> usize {
        let mut n = 0usize;
        for (f, v) in sv.schema.fields.iter().zip(&sv.fields) {
            if let Some(v) = v.as_ref().filter(|_| f.is_inline(self.version)) {
                n = n.saturating_add(self.size_value(v, f.is_nullable(self.version)));
            }
        }
        if self.flexible {
            let entries = self.tagged_entries(sv);
            n = n.saturating_add(wire::uvarint_len(entries.len() as u32));
            for (tag, entry) in entries {
                let len = match entry {
                    Entry::Known(v, nullable) => self.size_value(v, nullable),
                    Entry::Raw(d) => d.len(),
                };
                n = n.saturating_add(wire::uvarint_len(tag) + wire::uvarint_len(len as u32) + len);
            }
        }
        n
    }

    /// The encoded size of `v`; `nullable` says whether the field may be null in this
    /// version (a nullable struct then carries a one-byte presence marker).
    fn size_value(&self, v: &V, nullable: bool) -> usize {
        let flex = self.flexible;
        let prefixed = |len: usize, wide: bool| -> usize {
            let prefix = if flex {
                wire::uvarint_len(len as u32 + 1)
            } else if wide {
                4
            } else {
                2
            };
            prefix.saturating_add(len)
        };
        match v {
            V::S(s) => match s {
                Scalar::Bool(_) | Scalar::I8(_) => 1,
                Scalar::I16(_) | Scalar::U16(_) => 2,
                Scalar::I32(_) | Scalar::U32(_) => 4,
                Scalar::I64(_) | Scalar::F64(_) => 8,
                Scalar::Uuid(_) => 16,
                Scalar::Str(Some(s)) => prefixed(s.len(), false),
                Scalar::Str(None) => wire::null_size(flex, false),
                Scalar::Bytes(Some(b)) => prefixed(b.len(), true),
                Scalar::Bytes(None) => wire::null_size(flex, true),
                Scalar::Null => 1,
            },
            V::Arr(None) => wire::null_size(flex, true),
            V::Arr(Some(items)) => {
                let prefix = if flex { wire::uvarint_len(items.len() as u32 + 1) } else { 4 };
                items.iter().fold(prefix, |n, item| n.saturating_add(self.size_value(item, false)))
            }
            V::Struct(None) => 1,
            V::Struct(Some(sv)) => usize::from(nullable).saturating_add(self.size_struct(sv)),
        }
    }

    fn tagged_entries<'v>(&self, sv: &'v SV) -> Vec<(u32, Entry<'v>)> {
        let mut entries: Vec<(u32, Entry<'v>)> = Vec::new();
        for (f, v) in sv.schema.fields.iter().zip(&sv.fields) {
            if let (Some(v), Some(tag)) = (v, f.tag)
                && f.is_tagged(self.version)
                && !is_default(v, f)
            {
                entries.push((tag, Entry::Known(v, f.is_nullable(self.version))));
            }
        }
        entries.extend(sv.unknown.iter().map(|(tag, d)| (*tag, Entry::Raw(d))));
        entries.sort_by_key(|(tag, _)| *tag);
        entries
    }

    // ------------------------------------------------------------------ writing

    fn write_struct(&self, w: &mut Writer<'_>, sv: &SV) {
        for (f, v) in sv.schema.fields.iter().zip(&sv.fields) {
            if let Some(v) = v.as_ref().filter(|_| f.is_inline(self.version)) {
                self.write_value(w, v, f.is_nullable(self.version));
            }
        }
        if self.flexible {
            let entries = self.tagged_entries(sv);
            w.uvarint(entries.len() as u32);
            for (tag, entry) in entries {
                match entry {
                    Entry::Known(v, nullable) => {
                        w.tag_header(tag, self.size_value(v, nullable));
                        self.write_value(w, v, nullable);
                    }
                    Entry::Raw(d) => {
                        w.tag_header(tag, d.len());
                        w.put(d);
                    }
                }
            }
        }
    }

    fn write_value(&self, w: &mut Writer<'_>, v: &V, nullable: bool) {
        let flex = self.flexible;
        match v {
            V::S(s) => match s {
                Scalar::Bool(b) => w.bool(*b),
                Scalar::I8(x) => w.i8(*x),
                Scalar::I16(x) => w.i16(*x),
                Scalar::I32(x) => w.i32(*x),
                Scalar::I64(x) => w.i64(*x),
                Scalar::U16(x) => w.u16(*x),
                Scalar::U32(x) => w.u32(*x),
                Scalar::F64(x) => w.f64(*x),
                Scalar::Uuid(u) => w.uuid(kwire::Uuid(*u)),
                Scalar::Str(s) => w.nullable_str(s.as_deref(), flex),
                Scalar::Bytes(b) => w.nullable_bytes(b.as_deref(), flex),
                Scalar::Null => w.i8(-1),
            },
            V::Arr(None) => w.array_len(None, flex),
            V::Arr(Some(items)) => {
                w.array_len(Some(items.len()), flex);
                for item in items {
                    self.write_value(w, item, false);
                }
            }
            V::Struct(None) => w.i8(-1),
            V::Struct(Some(sv)) => {
                if nullable {
                    w.i8(1);
                }
                self.write_struct(w, sv);
            }
        }
    }
}

enum Entry<'v> {
    Known(&'v V, bool),
    Raw(&'v [u8]),
}

fn expected(ty: &FieldType) -> String {
    match ty {
        FieldType::Bool => "true or false".into(),
        FieldType::Int8
        | FieldType::Int16
        | FieldType::Int32
        | FieldType::Int64
        | FieldType::Uint16
        | FieldType::Uint32 => "an integer".into(),
        FieldType::Float64 => "a number".into(),
        FieldType::Uuid => {
            "a UUID (22 characters of URL-safe base64, as Kafka writes it, or 8-4-4-4-12 hex)".into()
        }
        FieldType::String => "a string".into(),
        FieldType::Bytes | FieldType::Records => "a base64 string".into(),
        FieldType::Array(_) => format!("an array ({})", type_name(ty)),
        FieldType::Struct(s) => format!("an object ({})", s.name),
    }
}

fn is_null(v: &V) -> bool {
    matches!(v, V::S(Scalar::Str(None) | Scalar::Bytes(None) | Scalar::Null) | V::Arr(None) | V::Struct(None))
}

/// Whether a value equals the field's default, as Kafka decides whether to write a
/// tagged field and whether a field a version lacks may be dropped silently.
fn is_default(v: &V, f: &FieldSchema) -> bool {
    let null_default = f.default == Some("null");
    match v {
        V::S(s) => s.is_default(f),
        V::Arr(None) | V::Struct(None) => null_default,
        V::Arr(Some(items)) => !null_default && items.is_empty(),
        V::Struct(Some(sv)) => {
            !null_default
                && sv.unknown.is_empty()
                && sv
                    .schema
                    .fields
                    .iter()
                    .zip(&sv.fields)
                    .all(|(f, v)| v.as_ref().is_none_or(|v| is_default(v, f)))
        }
    }
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
                format!("apiKey: API key {k} is not supported; {}", crate::walk::supported_list())
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
            format!("header.requestApiKey: API key {k} is not supported; {}", crate::walk::supported_list())
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
                versions_text(key.request_versions())
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
                versions_text(key.response_versions())
            ));
        }
        (key, version)
    };

    let schema = if request { reflect::request_schema(key) } else { reflect::response_schema(key) };
    let flexible = key.flexible_versions().contains(version);
    let mut enc = Enc { version, flexible, message: schema.name, warnings: Vec::new() };
    let body_value = enc.strukt(schema.body, body, "body")?;
    let body_len = enc.size_struct(&body_value);

    // The header, as bytes.
    let mut head: Vec<u8> = Vec::new();
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
    let header_tagged = if request {
        key.request_header_version(version) >= 2
    } else {
        key.response_header_version(version) >= 1
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
    if request {
        head.extend_from_slice(&key.key().to_be_bytes());
        head.extend_from_slice(&version.to_be_bytes());
        head.extend_from_slice(&correlation.to_be_bytes());
        let client = match required(h, "clientId", "header")? {
            Value::Null => None,
            Value::String(s) if s.len() <= wire::MAX_STRING_LEN => Some(s.as_str()),
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
        match client {
            Some(s) => {
                head.extend_from_slice(&(s.len() as i16).to_be_bytes());
                head.extend_from_slice(s.as_bytes());
            }
            None => head.extend_from_slice(&(-1i16).to_be_bytes()),
        }
    } else {
        head.extend_from_slice(&correlation.to_be_bytes());
    }
    if header_tagged {
        let size: usize = tags
            .iter()
            .map(|(t, d)| wire::uvarint_len(*t) + wire::uvarint_len(d.len() as u32) + d.len())
            .sum();
        let mut buf = vec![0u8; wire::uvarint_len(tags.len() as u32) + size];
        let mut w = Writer::new(&mut buf);
        w.uvarint(tags.len() as u32);
        for (tag, data) in &tags {
            w.tag_header(*tag, data.len());
            w.put(data);
        }
        head.extend_from_slice(&buf);
    }

    let size = head.len().saturating_add(body_len);
    let Ok(size32) = i32::try_from(size) else {
        return Err(format!(
            "the frame would be {size} bytes, over the 2147483647 an int32 size prefix can say"
        ));
    };
    let total = size + 4;
    let mut bytes = Vec::with_capacity(total);
    bytes.extend_from_slice(&size32.to_be_bytes());
    bytes.extend_from_slice(&head);
    let mut body_bytes = vec![0u8; body_len];
    let mut w = Writer::new(&mut body_bytes);
    enc.write_struct(&mut w, &body_value);
    if w.pos() != body_len {
        return Err(format!("internal error: sized the body at {body_len} bytes but wrote {}", w.pos()));
    }
    bytes.extend_from_slice(&body_bytes);
    check_with_typed_codec(&bytes, key, version, request)?;
    Ok(Built { bytes, warnings: enc.warnings })
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
