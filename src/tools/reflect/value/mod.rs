//! An owned dynamic value of any message, header or struct, built by a visitor of the
//! schema walker ([`Builder`], `builder.rs`) and encoded (exact size first, then into a
//! caller's buffer) by the rules of the generated encoders (`encoder.rs`).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::walk::{self, Scalar, WalkError};
use super::{FieldSchema, FieldType, MessageSchema, StructSchema};
use crate::codec::error::EncodeError;
use crate::codec::types::Uuid;
use crate::codec::wire::Writer;

mod builder;
mod encoder;

pub use builder::Builder;
use encoder::Enc;

/// A value of any schema type.
///
/// Equality is the generated types' ([`manual::design`](crate::manual::design), "Value equality"): a `Float64`
/// compares by its bits, so a value equals itself even when it holds a NaN, and `0.0`
/// differs from `-0.0`. That makes it an equivalence, so `Value` is `Eq`.
#[derive(Clone, Debug)]
pub enum Value {
    /// `bool`.
    Bool(bool),
    /// `int8`.
    Int8(i8),
    /// `int16`.
    Int16(i16),
    /// `int32`.
    Int32(i32),
    /// `int64`.
    Int64(i64),
    /// `uint16`.
    Uint16(u16),
    /// `uint32`.
    Uint32(u32),
    /// `float64`.
    Float64(f64),
    /// `uuid`.
    Uuid(Uuid),
    /// `string`.
    String(String),
    /// `bytes`.
    Bytes(Vec<u8>),
    /// `records` (the raw record-batch bytes).
    Records(Vec<u8>),
    /// Null: of a nullable string, bytes, records, array or struct.
    Null,
    /// An array.
    Array(Vec<Value>),
    /// A struct.
    Struct(StructValue),
}

/// The values of a struct: one slot per field of its schema, in schema order, and its
/// unknown tagged fields.
#[derive(Clone, Debug)]
pub struct StructValue {
    /// The struct's schema.
    pub schema: &'static StructSchema,
    /// One slot per `schema.fields`: `None` for a field that was not read (the version
    /// lacks it, or a tagged field was absent); it encodes as the field's default.
    pub fields: Vec<Option<Value>>,
    /// Tagged fields the schema does not know, as `(tag, data)`, tags ascending.
    pub unknown_tagged_fields: Vec<(u32, Vec<u8>)>,
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        use Value::*;
        match (self, other) {
            (Bool(a), Bool(b)) => a == b,
            (Int8(a), Int8(b)) => a == b,
            (Int16(a), Int16(b)) => a == b,
            (Int32(a), Int32(b)) => a == b,
            (Int64(a), Int64(b)) => a == b,
            (Uint16(a), Uint16(b)) => a == b,
            (Uint32(a), Uint32(b)) => a == b,
            (Float64(a), Float64(b)) => a.to_bits() == b.to_bits(),
            (Uuid(a), Uuid(b)) => a == b,
            (String(a), String(b)) => a == b,
            (Bytes(a), Bytes(b)) | (Records(a), Records(b)) => a == b,
            (Null, Null) => true,
            (Array(a), Array(b)) => a == b,
            (Struct(a), Struct(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

impl PartialEq for StructValue {
    fn eq(&self, other: &Self) -> bool {
        core::ptr::eq(self.schema, other.schema)
            && self.fields == other.fields
            && self.unknown_tagged_fields == other.unknown_tagged_fields
    }
}

impl Eq for StructValue {}

impl StructValue {
    /// A struct whose every field is unset (encodes as the defaults).
    pub fn new(schema: &'static StructSchema) -> Self {
        StructValue {
            schema,
            fields: alloc::vec![None; schema.fields.len()],
            unknown_tagged_fields: Vec::new(),
        }
    }

    /// The value of the field named `name` (schema spelling), if set.
    pub fn get(&self, name: &str) -> Option<&Value> {
        let i = self.schema.fields.iter().position(|f| f.name == name)?;
        self.fields.get(i)?.as_ref()
    }

    /// Sets the field named `name`; `false` if the schema has no such field.
    pub fn set(&mut self, name: &str, value: Value) -> bool {
        match self.schema.fields.iter().position(|f| f.name == name) {
            Some(i) => {
                if let Some(slot) = self.fields.get_mut(i) {
                    *slot = Some(value);
                }
                true
            }
            None => false,
        }
    }

    /// Walks a whole body and builds its value.
    pub fn decode_body(schema: &MessageSchema, version: i16, body: &[u8]) -> Result<StructValue, WalkError> {
        let mut b = Builder::new(schema.body);
        walk::walk_body(schema, version, body, 0, &mut b)?;
        Ok(b.finish())
    }

    /// The exact encoded size in `encoding`.
    pub fn encoded_len(&self, encoding: Encoding) -> Result<usize, ValueError> {
        Enc { e: encoding }.size_struct(self)
    }

    /// Encodes into `buf` (after sizing, as the generated encoders do) and returns the
    /// bytes written.
    pub fn encode(&self, encoding: Encoding, buf: &mut [u8]) -> Result<usize, ValueError> {
        let enc = Enc { e: encoding };
        let needed = enc.size_struct(self)?;
        let Some(out) = buf.get_mut(..needed) else {
            return Err(ValueError::Encode(EncodeError::BufferTooSmall { needed, available: buf.len() }));
        };
        let mut w = Writer::new(out);
        enc.write_struct(&mut w, self);
        Ok(w.pos())
    }

    /// Encodes into a new vector of the exact size.
    pub fn to_bytes(&self, encoding: Encoding) -> Result<Vec<u8>, ValueError> {
        let mut out = alloc::vec![0u8; self.encoded_len(encoding)?];
        let n = self.encode(encoding, &mut out)?;
        out.truncate(n);
        Ok(out)
    }
}

/// Why a [`Value`] cannot be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValueError {
    /// What the generated encoders report for the same value (a null where the version
    /// allows none, a field the version lacks, a string too long, unknown tags out of
    /// order, a short buffer).
    Encode(EncodeError),
    /// A value does not have its field's type.
    WrongType {
        /// The field.
        field: &'static str,
    },
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::Encode(e) => e.fmt(f),
            ValueError::WrongType { field } => write!(f, "{field}: the value does not have the field's type"),
        }
    }
}

impl core::error::Error for ValueError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            ValueError::Encode(e) => Some(e),
            _ => None,
        }
    }
}

impl From<EncodeError> for ValueError {
    fn from(e: EncodeError) -> Self {
        ValueError::Encode(e)
    }
}

/// How a struct is encoded: its version, whether strings, bytes and arrays are compact,
/// and whether structs end in a tagged-field section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encoding {
    /// The message version (decides which fields exist, are nullable, are tagged).
    pub version: i16,
    /// Compact strings, bytes and arrays.
    pub flexible: bool,
    /// A tagged-field section after every struct.
    pub tagged: bool,
}

impl Encoding {
    /// A body of `schema` at `version`.
    pub const fn body(schema: &MessageSchema, version: i16) -> Self {
        let flexible = schema.is_flexible(version);
        Encoding { version, flexible, tagged: flexible }
    }

    /// A request header ([`walk::REQUEST_HEADER`]) of `header_version` (1 or 2).
    pub const fn request_header(header_version: i16) -> Self {
        Encoding { version: 0, flexible: false, tagged: header_version >= 2 }
    }

    /// A response header ([`walk::RESPONSE_HEADER`]) of `header_version` (0 or 1).
    pub const fn response_header(header_version: i16) -> Self {
        Encoding { version: 0, flexible: false, tagged: header_version >= 1 }
    }
}

impl Value {
    /// The value of a scalar the walker read.
    pub fn from_scalar(s: Scalar<'_>) -> Value {
        match s {
            Scalar::Bool(v) => Value::Bool(v),
            Scalar::Int8(v) => Value::Int8(v),
            Scalar::Int16(v) => Value::Int16(v),
            Scalar::Int32(v) => Value::Int32(v),
            Scalar::Int64(v) => Value::Int64(v),
            Scalar::Uint16(v) => Value::Uint16(v),
            Scalar::Uint32(v) => Value::Uint32(v),
            Scalar::Float64(v) => Value::Float64(v),
            Scalar::Uuid(v) => Value::Uuid(v),
            Scalar::String(v) => Value::String(v.into()),
            Scalar::Bytes(v) => Value::Bytes(v.to_vec()),
            Scalar::Records(v) => Value::Records(v.to_vec()),
            Scalar::Null => Value::Null,
        }
    }

    /// The default value of a field of type `ty` whose schema default is `default`
    /// (`None` for the type's zero value), as Kafka's generated code sets it: `None` if
    /// the text does not parse.
    pub fn default_of(ty: &'static FieldType, default: Option<&str>) -> Option<Value> {
        let text = default.unwrap_or("");
        let int = |t: &str| -> Option<i64> {
            if t.is_empty() {
                return Some(0);
            }
            let (neg, digits) = match t.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, t),
            };
            let v = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
                Some(hex) => i64::from_str_radix(hex, 16).ok()?,
                None => digits.parse::<i64>().ok()?,
            };
            Some(if neg { -v } else { v })
        };
        Some(match ty {
            FieldType::Bool => Value::Bool(text == "true"),
            FieldType::Int8 => Value::Int8(i8::try_from(int(text)?).ok()?),
            FieldType::Int16 => Value::Int16(i16::try_from(int(text)?).ok()?),
            FieldType::Int32 => Value::Int32(i32::try_from(int(text)?).ok()?),
            FieldType::Int64 => Value::Int64(int(text)?),
            FieldType::Uint16 => Value::Uint16(u16::try_from(int(text)?).ok()?),
            FieldType::Uint32 => Value::Uint32(u32::try_from(int(text)?).ok()?),
            FieldType::Float64 => Value::Float64(if text.is_empty() { 0.0 } else { text.parse().ok()? }),
            FieldType::Uuid => Value::Uuid(Uuid([0; 16])),
            _ if text == "null" => Value::Null,
            FieldType::String => Value::String(text.into()),
            FieldType::Bytes => Value::Bytes(Vec::new()),
            FieldType::Records => Value::Records(Vec::new()),
            FieldType::Array(_) => Value::Array(Vec::new()),
            FieldType::Struct(s) => Value::Struct(StructValue::new(s)),
        })
    }

    /// Whether this is `field`'s default value (its schema default, else the type's zero
    /// value; a struct whose fields are all default): Kafka writes a tagged field only
    /// when it is not, and drops such a value silently from a version that lacks the
    /// field. Floats compare by their bits.
    pub fn is_default_for(&self, field: &'static FieldSchema) -> bool {
        is_default(Some(self), &field.ty, field.default)
    }
}

fn is_default(v: Option<&Value>, ty: &'static FieldType, default: Option<&str>) -> bool {
    let Some(v) = v else { return true };
    match (v, ty) {
        (Value::Null, _) => default == Some("null"),
        (Value::Array(items), FieldType::Array(_)) => default != Some("null") && items.is_empty(),
        (Value::Struct(sv), FieldType::Struct(_)) => {
            default != Some("null")
                && sv.unknown_tagged_fields.is_empty()
                && sv
                    .schema
                    .fields
                    .iter()
                    .zip(&sv.fields)
                    .all(|(f, v)| is_default(v.as_ref(), &f.ty, f.default))
        }
        (Value::Float64(x), _) => {
            matches!(Value::default_of(ty, default), Some(Value::Float64(d)) if d.to_bits() == x.to_bits())
        }
        (v, ty) => Value::default_of(ty, default).as_ref() == Some(v),
    }
}
