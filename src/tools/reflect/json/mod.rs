//! [`Value`]s in Apache Kafka's JSON form (feature `json`), through `serde_json` with
//! `preserve_order`, so that objects keep the schema's field order.
//!
//! The form is that of Kafka's generated JSON converters: keys are the field names with
//! their first letter in lower case, `bytes` and `records` are standard base64, UUIDs are
//! Kafka's URL-safe base64 without padding (hyphenated hex is read too), NaN and the
//! infinities are the strings `"NaN"`, `"Infinity"` and `"-Infinity"`, integers may be
//! given as strings (decimal or `0x` hex). Known tagged fields that hold their default
//! are left out; unknown ones are listed under `_unknownTaggedFields` as
//! `{"tag": n, "data": base64}`.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Map, Number, Value as Json};

use super::value::{Encoding, StructValue, Value};
use super::{FieldSchema, FieldType, StructSchema};
use crate::codec::types::Uuid;
use crate::codec::wire::MAX_STRING_LEN;

mod frame;
pub use frame::{JsonFrame, frame_from_json};

/// The JSON key of a schema field: its name with the first letter in lower case
/// (`ReplicaId` is `replicaId`).
pub fn json_key(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    // Writing into a String cannot fail.
    let _ = super::walk::write_key(name, &mut out);
    out
}

/// Kafka's string form of a UUID: URL-safe base64 of the 16 bytes, without padding.
pub fn uuid_string(u: &Uuid) -> String {
    URL_SAFE_NO_PAD.encode(u.0)
}

/// Reads a UUID in Kafka's form (22 characters of URL-safe base64) or in the usual
/// hyphenated hex form.
pub fn parse_uuid(s: &str) -> Option<Uuid> {
    if let Some(bytes) = URL_SAFE_NO_PAD.decode(s).ok().and_then(|b| <[u8; 16]>::try_from(b).ok()) {
        return Some(Uuid(bytes));
    }
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    if s.len() != 36 || hex.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(Uuid(out))
}

/// Standard base64 with padding, as Kafka's JSON writes bytes.
pub fn base64(b: &[u8]) -> String {
    STANDARD.encode(b)
}

/// Decodes base64 as Kafka's JSON writes bytes (standard alphabet); padding is optional.
pub fn parse_base64(s: &str) -> Option<Vec<u8>> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    LENIENT.decode(s).ok()
}

// ------------------------------------------------------------------ Value to JSON

/// The JSON of a value that is not a struct or array (structs and arrays convert
/// through [`to_json`]).
pub fn scalar_json(v: &Value) -> Json {
    match v {
        Value::Bool(b) => Json::Bool(*b),
        Value::Int8(x) => Json::from(*x),
        Value::Int16(x) => Json::from(*x),
        Value::Int32(x) => Json::from(*x),
        Value::Int64(x) => Json::from(*x),
        Value::Uint16(x) => Json::from(*x),
        Value::Uint32(x) => Json::from(*x),
        Value::Float64(x) => match Number::from_f64(*x) {
            Some(n) => Json::Number(n),
            None if x.is_nan() => Json::String("NaN".into()),
            None if *x > 0.0 => Json::String("Infinity".into()),
            None => Json::String("-Infinity".into()),
        },
        Value::Uuid(u) => Json::String(uuid_string(u)),
        Value::String(s) => Json::String(s.clone()),
        Value::Bytes(b) | Value::Records(b) => Json::String(base64(b)),
        Value::Null => Json::Null,
        Value::Array(items) => Json::Array(items.iter().map(scalar_json).collect()),
        Value::Struct(_) => Json::Null,
    }
}

/// The JSON object of a struct encoded with `encoding`: its fields in wire order (inline
/// fields, then known tagged fields that do not hold their default), unset fields left
/// out, and `_unknownTaggedFields` last if there are any.
pub fn to_json(value: &StructValue, encoding: Encoding) -> Json {
    let version = encoding.version;
    let mut out = Map::new();
    let fields = value.schema.fields.iter().zip(&value.fields);
    for (f, v) in fields.clone() {
        if let Some(v) = v
            && f.is_inline(version)
        {
            out.insert(json_key(f.name), value_json(v, encoding));
        }
    }
    let mut tagged: Vec<(u32, &FieldSchema, &Value)> = fields
        .filter_map(|(f, v)| Some((f.tag?, f, v.as_ref()?)))
        .filter(|(_, f, v)| f.is_tagged(version) && !json_default(v, f))
        .collect();
    tagged.sort_by_key(|t| t.0);
    for (_, f, v) in tagged {
        out.insert(json_key(f.name), value_json(v, encoding));
    }
    if encoding.tagged && !value.unknown_tagged_fields.is_empty() {
        let list = value
            .unknown_tagged_fields
            .iter()
            .map(|(tag, data)| {
                let mut m = Map::new();
                m.insert("tag".into(), Json::from(*tag));
                m.insert("data".into(), Json::String(base64(data)));
                Json::Object(m)
            })
            .collect();
        out.insert("_unknownTaggedFields".into(), Json::Array(list));
    }
    Json::Object(out)
}

/// Whether a known tagged field is left out of the JSON: a scalar or array holding its
/// default (a struct is always shown).
fn json_default(v: &Value, f: &'static FieldSchema) -> bool {
    !matches!(v, Value::Struct(_)) && v.is_default_for(f)
}

fn value_json(v: &Value, encoding: Encoding) -> Json {
    match v {
        Value::Struct(s) => to_json(s, encoding),
        Value::Array(items) => Json::Array(items.iter().map(|i| value_json(i, encoding)).collect()),
        other => scalar_json(other),
    }
}

// ------------------------------------------------------------------ JSON to Value

/// Why a JSON document is not a value of its schema: the JSON path of the value at fault
/// (`body.topics[0].name`) and what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonError {
    path: String,
    message: String,
}

impl JsonError {
    fn at(path: impl Into<String>, message: String) -> JsonError {
        JsonError { path: path.into(), message }
    }

    /// The JSON path of the value at fault.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What is wrong there.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl core::fmt::Display for JsonError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl core::error::Error for JsonError {}

/// A struct read from JSON, with the notes a user should see.
#[derive(Debug)]
pub struct FromJson {
    /// The value.
    pub value: StructValue,
    /// Values that were dropped, as Kafka drops them (non-default values of ignorable
    /// fields the version lacks), each naming its JSON path.
    pub warnings: Vec<String>,
}

/// Reads the JSON object `json` as a struct of `schema` in `encoding`; `message` names
/// the message in errors and `path` is the object's JSON path (`"body"`). Every error
/// names the JSON path of the value at fault.
///
/// Fields the version has must be present, except tagged fields; fields it lacks may be
/// given only with their default value, or (for ignorable fields) are dropped with a
/// warning.
pub fn from_json(
    schema: &'static StructSchema,
    message: &str,
    encoding: Encoding,
    json: &Json,
    path: &str,
) -> Result<FromJson, JsonError> {
    let mut r = Read { version: encoding.version, tagged: encoding.tagged, message, warnings: Vec::new() };
    let value = r.strukt(schema, json, path)?;
    Ok(FromJson { value, warnings: r.warnings })
}

struct Read<'m> {
    version: i16,
    tagged: bool,
    message: &'m str,
    warnings: Vec<String>,
}

/// A short description of a JSON value for error messages.
fn describe(v: &Json) -> String {
    match v {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::String(s) if s.chars().count() > 30 => "a string".into(),
        Json::String(s) => format!("the string {s:?}"),
        Json::Array(_) => "an array".into(),
        Json::Object(_) => "an object".into(),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

/// A type's name as the schema language writes it (`int32`, `[]ListOffsetsTopic`).
pub fn type_name(ty: &FieldType) -> String {
    let mut s = String::new();
    // Writing into a String cannot fail.
    let _ = ty.write_name(&mut s);
    s
}

/// Reads an integer as Kafka's JSON reader does: a JSON integer, or a string holding a
/// decimal or `0x` hexadecimal number, within `min..=max`.
fn integer(v: &Json, min: i128, max: i128, ty: &str, path: &str) -> Result<i128, JsonError> {
    let n: Option<i128> = match v {
        Json::Number(n) => n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)),
        Json::String(s) => {
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
        return Err(JsonError::at(path, format!("expected an integer ({ty}), found {}", describe(v))));
    };
    if n < min || n > max {
        return Err(JsonError::at(path, format!("{n} does not fit in {ty} ({min} to {max})")));
    }
    Ok(n)
}

/// Reads `_unknownTaggedFields`: `[{"tag": n, "data": base64}, ...]`, tags ascending and
/// none of the `known` ones.
fn unknown_tags(v: &Json, path: &str, known: &[u32]) -> Result<Vec<(u32, Vec<u8>)>, JsonError> {
    let items = v.as_array().ok_or_else(|| {
        JsonError::at(
            path,
            format!("expected an array of {{\"tag\": n, \"data\": base64}}, found {}", describe(v)),
        )
    })?;
    let mut out: Vec<(u32, Vec<u8>)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let obj = item
            .as_object()
            .ok_or_else(|| JsonError::at(&p, format!("expected an object, found {}", describe(item))))?;
        if let Some(extra) = obj.keys().find(|k| *k != "tag" && *k != "data") {
            return Err(JsonError::at(
                format!("{p}.{extra}"),
                "unknown key; an unknown tagged field has only \"tag\" and \"data\"".into(),
            ));
        }
        let tag_value = obj.get("tag").ok_or_else(|| JsonError::at(format!("{p}.tag"), "missing".into()))?;
        let tag = integer(tag_value, 0, i128::from(u32::MAX), "uint32", &join(&p, "tag"))? as u32;
        let data = match obj.get("data") {
            Some(Json::String(s)) => parse_base64(s)
                .ok_or_else(|| JsonError::at(format!("{p}.data"), "not valid base64".into()))?,
            Some(other) => {
                return Err(JsonError::at(
                    format!("{p}.data"),
                    format!("expected a base64 string, found {}", describe(other)),
                ));
            }
            None => return Err(JsonError::at(format!("{p}.data"), "missing".into())),
        };
        if known.contains(&tag) {
            return Err(JsonError::at(
                format!("{p}.tag"),
                format!("tag {tag} belongs to a field this struct knows; set that field instead"),
            ));
        }
        if out.last().is_some_and(|(prev, _)| tag <= *prev) {
            return Err(JsonError::at(
                format!("{p}.tag"),
                format!(
                    "tags must be in ascending order without repeats ({tag} follows {})",
                    out.last().map_or(0, |l| l.0)
                ),
            ));
        }
        if data.len() >= i32::MAX as usize {
            return Err(JsonError::at(format!("{p}.data"), "too long".into()));
        }
        out.push((tag, data));
    }
    Ok(out)
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

impl Read<'_> {
    fn strukt(
        &mut self,
        s: &'static StructSchema,
        json: &Json,
        path: &str,
    ) -> Result<StructValue, JsonError> {
        let obj = json.as_object().ok_or_else(|| {
            JsonError::at(path, format!("expected an object ({}), found {}", s.name, describe(json)))
        })?;
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
            return Err(JsonError::at(
                join(path, key),
                format!(
                    "unknown field{hint}; {} version {} has: {}",
                    s.name,
                    self.version,
                    if here.is_empty() { "no fields".to_string() } else { here.join(", ") }
                ),
            ));
        }
        let mut out = StructValue::new(s);
        for (f, slot) in s.fields.iter().zip(out.fields.iter_mut()) {
            let key = json_key(f.name);
            let p = join(path, &key);
            let in_version = f.versions.contains(self.version);
            match obj.get(&key) {
                None if f.is_inline(self.version) => {
                    return Err(JsonError::at(
                        &p,
                        format!(
                            "missing; {} version {} requires this field ({})",
                            s.name,
                            self.version,
                            type_name(&f.ty)
                        ),
                    ));
                }
                None => {}
                Some(j) => {
                    let nullable = !in_version || f.is_nullable(self.version);
                    let v = self.value(&f.ty, nullable, j, &p)?;
                    if in_version {
                        *slot = Some(v);
                    } else if !v.is_default_for(f) {
                        let why = format!(
                            "{} version {} cannot carry this field (it exists in versions {})",
                            self.message, self.version, f.versions
                        );
                        if f.ignorable {
                            self.warnings.push(format!("{p}: left out: {why}; Kafka drops it too"));
                        } else {
                            return Err(JsonError::at(
                                &p,
                                format!("{why}; remove it or set it to its default"),
                            ));
                        }
                    }
                }
            }
        }
        if let Some(v) = obj.get("_unknownTaggedFields") {
            let known: Vec<u32> = s.fields.iter().filter_map(|f| f.tag).collect();
            let p = join(path, "_unknownTaggedFields");
            let list = unknown_tags(v, &p, &known)?;
            if !list.is_empty() && !self.tagged {
                return Err(JsonError::at(
                    &p,
                    format!(
                        "version {} of {} is not flexible, so it has no tagged fields",
                        self.version, self.message
                    ),
                ));
            }
            out.unknown_tagged_fields = list;
        }
        Ok(out)
    }

    fn value(
        &mut self,
        ty: &'static FieldType,
        nullable: bool,
        j: &Json,
        path: &str,
    ) -> Result<Value, JsonError> {
        if j.is_null() {
            let may_be_null = matches!(
                ty,
                FieldType::String
                    | FieldType::Bytes
                    | FieldType::Records
                    | FieldType::Array(_)
                    | FieldType::Struct(_)
            );
            if !may_be_null {
                return Err(JsonError::at(path, format!("expected {}, found null", expected(ty))));
            }
            if !nullable {
                return Err(JsonError::at(
                    path,
                    format!("null is not allowed; the field is not nullable in version {}", self.version),
                ));
            }
            return Ok(Value::Null);
        }
        let wrong = || JsonError::at(path, format!("expected {}, found {}", expected(ty), describe(j)));
        Ok(match ty {
            FieldType::Bool => Value::Bool(j.as_bool().ok_or_else(wrong)?),
            FieldType::Int8 => Value::Int8(integer(j, i8::MIN.into(), i8::MAX.into(), "int8", path)? as i8),
            FieldType::Int16 => {
                Value::Int16(integer(j, i16::MIN.into(), i16::MAX.into(), "int16", path)? as i16)
            }
            FieldType::Int32 => {
                Value::Int32(integer(j, i32::MIN.into(), i32::MAX.into(), "int32", path)? as i32)
            }
            FieldType::Int64 => {
                Value::Int64(integer(j, i64::MIN.into(), i64::MAX.into(), "int64", path)? as i64)
            }
            FieldType::Uint16 => Value::Uint16(integer(j, 0, u16::MAX.into(), "uint16", path)? as u16),
            FieldType::Uint32 => Value::Uint32(integer(j, 0, u32::MAX.into(), "uint32", path)? as u32),
            FieldType::Float64 => Value::Float64(match j {
                Json::Number(n) => n.as_f64().ok_or_else(wrong)?,
                Json::String(s) if s == "NaN" => f64::NAN,
                Json::String(s) if s == "Infinity" => f64::INFINITY,
                Json::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
                _ => return Err(wrong()),
            }),
            FieldType::Uuid => Value::Uuid(j.as_str().and_then(parse_uuid).ok_or_else(wrong)?),
            FieldType::String => {
                let s = j.as_str().ok_or_else(wrong)?;
                if s.len() > MAX_STRING_LEN {
                    return Err(JsonError::at(
                        path,
                        format!("the string is {} bytes; Kafka strings are at most 32767", s.len()),
                    ));
                }
                Value::String(s.into())
            }
            FieldType::Bytes | FieldType::Records => {
                let s = j.as_str().ok_or_else(wrong)?;
                let b = parse_base64(s).ok_or_else(|| JsonError::at(path, "not valid base64".into()))?;
                if b.len() >= i32::MAX as usize {
                    return Err(JsonError::at(path, "too long".into()));
                }
                if matches!(ty, FieldType::Records) { Value::Records(b) } else { Value::Bytes(b) }
            }
            FieldType::Array(elem) => {
                let items = j.as_array().ok_or_else(wrong)?;
                if items.len() >= i32::MAX as usize {
                    return Err(JsonError::at(path, "too many elements for an array count".into()));
                }
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    out.push(self.value(elem, false, item, &format!("{path}[{i}]"))?);
                }
                Value::Array(out)
            }
            FieldType::Struct(s) => Value::Struct(self.strukt(s, j, path)?),
        })
    }
}
