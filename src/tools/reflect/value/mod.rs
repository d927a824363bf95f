//! An owned dynamic value of any message, header or struct, built by a [`Visitor`] of
//! the schema walker and encoded (exact size first, then into a caller's buffer) by the
//! rules of the generated encoders.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::walk::{self, Field, Scalar, TaggedField, Visitor, WalkError};
use super::{FieldSchema, FieldType, MessageSchema, StructSchema};
use crate::codec::error::EncodeError;
use crate::codec::types::Uuid;
use crate::codec::wire::{self, Writer};

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

/// A [`Visitor`] that builds the [`StructValue`] of the walked struct (a body or header).
///
/// When the walk stops at an error, [`Builder::finish`] still returns everything read
/// before it (events are balanced), so a tool can show what decoded.
#[derive(Debug)]
pub struct Builder {
    stack: Vec<StructOrArray>,
}

#[derive(Debug)]
enum StructOrArray {
    Struct(StructValue),
    Array(Vec<Value>),
}

impl Builder {
    /// A builder for a walk of `schema` (the body's or a header's).
    pub fn new(schema: &'static StructSchema) -> Self {
        Builder { stack: alloc::vec![StructOrArray::Struct(StructValue::new(schema))] }
    }

    /// The value built.
    pub fn finish(mut self) -> StructValue {
        while self.stack.len() > 1 {
            self.close();
        }
        match self.stack.pop() {
            Some(StructOrArray::Struct(s)) => s,
            // The root is always a struct.
            _ => StructValue::new(&walk::RESPONSE_HEADER),
        }
    }

    fn close(&mut self) {
        let v = match self.stack.pop() {
            Some(StructOrArray::Struct(s)) => Value::Struct(s),
            Some(StructOrArray::Array(a)) => Value::Array(a),
            None => return,
        };
        self.place_top(v);
    }

    /// Puts a finished value into its parent. The parent of an element is an array; that
    /// of a field a struct, found by the field's schema.
    fn place(&mut self, field: &Field<'_>, v: Value) {
        match self.stack.last_mut() {
            Some(StructOrArray::Array(items)) if field.index.is_some() => items.push(v),
            Some(StructOrArray::Struct(s)) => {
                if let Some(i) = s.schema.fields.iter().position(|f| core::ptr::eq(f, field.schema))
                    && let Some(slot) = s.fields.get_mut(i)
                {
                    *slot = Some(v);
                }
            }
            _ => {}
        }
    }

    fn place_top(&mut self, v: Value) {
        // Used when unwinding: the parent is an array (push) or the struct whose last
        // unset-or-set field is this one; `finish` only unwinds after a balanced walk,
        // so this is a fallback that keeps what was read.
        match self.stack.last_mut() {
            Some(StructOrArray::Array(items)) => items.push(v),
            Some(StructOrArray::Struct(_)) | None => {}
        }
    }
}

impl<'a> Visitor<'a> for Builder {
    fn value(&mut self, field: &Field<'_>, value: Scalar<'a>) {
        self.place(field, Value::from_scalar(value));
    }

    fn enter_struct(&mut self, _: &Field<'_>, schema: &'static StructSchema) {
        self.stack.push(StructOrArray::Struct(StructValue::new(schema)));
    }

    fn leave_struct(&mut self, field: &Field<'_>, _: &'static StructSchema) {
        if let Some(StructOrArray::Struct(s)) = self.stack.pop() {
            self.place(field, Value::Struct(s));
        }
    }

    fn enter_array(&mut self, field: &Field<'_>, count: Option<usize>) {
        match count {
            // The count was checked against the bytes left; cap the reservation anyway.
            Some(n) => self.stack.push(StructOrArray::Array(Vec::with_capacity(n.min(1024)))),
            None => self.place(field, Value::Null),
        }
    }

    fn leave_array(&mut self, field: &Field<'_>, count: Option<usize>) {
        if count.is_some()
            && let Some(StructOrArray::Array(a)) = self.stack.pop()
        {
            self.place(field, Value::Array(a));
        }
    }

    fn unknown_tagged_field(&mut self, field: &TaggedField, data: &'a [u8]) {
        if let Some(StructOrArray::Struct(s)) = self.stack.last_mut() {
            s.unknown_tagged_fields.push((field.tag, data.to_vec()));
        }
    }
}

struct Enc {
    e: Encoding,
}

enum Entry<'v> {
    Known(&'static FieldSchema, &'v Value),
    Raw(&'v [u8]),
}

impl Enc {
    fn entries<'v>(&self, sv: &'v StructValue) -> Result<Vec<(u32, Entry<'v>)>, ValueError> {
        let mut entries: Vec<(u32, Entry<'v>)> = Vec::new();
        for (f, v) in sv.schema.fields.iter().zip(&sv.fields) {
            if let (Some(v), Some(tag)) = (v, f.tag)
                && f.is_tagged(self.e.version)
                && !is_default(Some(v), &f.ty, f.default)
            {
                entries.push((tag, Entry::Known(f, v)));
            }
        }
        let mut last: Option<u32> = None;
        for (tag, data) in &sv.unknown_tagged_fields {
            let known = sv.schema.fields.iter().any(|f| f.tag == Some(*tag));
            if last.is_some_and(|prev| *tag <= prev) || known {
                return Err(EncodeError::InvalidTaggedFields { field: sv.schema.name, tag: *tag }.into());
            }
            last = Some(*tag);
            entries.push((*tag, Entry::Raw(data)));
        }
        entries.sort_by_key(|(tag, _)| *tag);
        Ok(entries)
    }

    /// Checks the fields a version lacks (a non-default value in a field that is not
    /// ignorable is refused, as the generated encoders refuse it).
    fn check_absent(&self, sv: &StructValue) -> Result<(), ValueError> {
        for (f, v) in sv.schema.fields.iter().zip(&sv.fields) {
            if !f.versions.contains(self.e.version)
                && !f.ignorable
                && !is_default(v.as_ref(), &f.ty, f.default)
            {
                return Err(EncodeError::FieldNotInVersion { field: f.name, version: self.e.version }.into());
            }
        }
        Ok(())
    }

    fn size_struct(&self, sv: &StructValue) -> Result<usize, ValueError> {
        self.check_absent(sv)?;
        let mut n = 0usize;
        for (f, v) in sv.schema.fields.iter().zip(&sv.fields) {
            if f.is_inline(self.e.version) {
                n = wire::add(n, self.size_field(f, v.as_ref())?, f.name)?;
            }
        }
        if self.e.tagged {
            let mut t = wire::TaggedSize::new();
            for (tag, entry) in self.entries(sv)? {
                let (len, name) = match entry {
                    Entry::Known(f, v) => (self.size_field(f, Some(v))?, f.name),
                    Entry::Raw(d) => (d.len(), sv.schema.name),
                };
                t.field(tag, len, name)?;
            }
            n = wire::add(n, t.finish(&[], &[], sv.schema.name)?, sv.schema.name)?;
        }
        Ok(n)
    }

    /// The size of field `f` holding `v` (`None`: its default).
    fn size_field(&self, f: &'static FieldSchema, v: Option<&Value>) -> Result<usize, ValueError> {
        let nullable = f.is_nullable(self.e.version);
        match v {
            Some(v) => self.size_value(f, &f.ty, v, nullable),
            None => {
                let d = Value::default_of(&f.ty, f.default).ok_or(ValueError::WrongType { field: f.name })?;
                self.size_value(f, &f.ty, &d, nullable)
            }
        }
    }

    fn size_value(
        &self,
        f: &'static FieldSchema,
        ty: &'static FieldType,
        v: &Value,
        nullable: bool,
    ) -> Result<usize, ValueError> {
        let flex = self.e.flexible;
        let wrong = ValueError::WrongType { field: f.name };
        Ok(match (ty, v) {
            (
                FieldType::String
                | FieldType::Bytes
                | FieldType::Records
                | FieldType::Array(_)
                | FieldType::Struct(_),
                Value::Null,
            ) => {
                if !nullable {
                    return Err(EncodeError::NullNotAllowed { field: f.name }.into());
                }
                match ty {
                    FieldType::String => wire::null_size(flex, false),
                    FieldType::Struct(_) => 1,
                    _ => wire::null_size(flex, true),
                }
            }
            (FieldType::Bool, Value::Bool(_)) | (FieldType::Int8, Value::Int8(_)) => 1,
            (FieldType::Int16, Value::Int16(_)) | (FieldType::Uint16, Value::Uint16(_)) => 2,
            (FieldType::Int32, Value::Int32(_)) | (FieldType::Uint32, Value::Uint32(_)) => 4,
            (FieldType::Int64, Value::Int64(_)) | (FieldType::Float64, Value::Float64(_)) => 8,
            (FieldType::Uuid, Value::Uuid(_)) => 16,
            (FieldType::String, Value::String(s)) => wire::string_size(s.len(), flex, f.name)?,
            (FieldType::Bytes, Value::Bytes(b)) | (FieldType::Records, Value::Records(b)) => {
                wire::bytes_size(b.len(), flex, f.name)?
            }
            (FieldType::Array(elem), Value::Array(items)) => {
                let mut n = wire::array_prefix_size(items.len(), flex, f.name)?;
                for item in items {
                    n = wire::add(n, self.size_value(f, elem, item, false)?, f.name)?;
                }
                n
            }
            (FieldType::Struct(s), Value::Struct(sv)) if core::ptr::eq(*s, sv.schema) => {
                wire::add(usize::from(nullable), self.size_struct(sv)?, f.name)?
            }
            _ => return Err(wrong),
        })
    }

    fn write_struct(&self, w: &mut Writer<'_>, sv: &StructValue) {
        for (f, v) in sv.schema.fields.iter().zip(&sv.fields) {
            if f.is_inline(self.e.version) {
                self.write_field(w, f, v.as_ref());
            }
        }
        if self.e.tagged {
            // Sized (and so checked) before: these cannot fail now.
            let entries = self.entries(sv).unwrap_or_default();
            w.uvarint(entries.len() as u32);
            for (tag, entry) in entries {
                match entry {
                    Entry::Known(f, v) => {
                        w.tag_header(tag, self.size_field(f, Some(v)).unwrap_or(0));
                        self.write_field(w, f, Some(v));
                    }
                    Entry::Raw(d) => {
                        w.tag_header(tag, d.len());
                        w.put(d);
                    }
                }
            }
        }
    }

    fn write_field(&self, w: &mut Writer<'_>, f: &'static FieldSchema, v: Option<&Value>) {
        let nullable = f.is_nullable(self.e.version);
        match v {
            Some(v) => self.write_value(w, &f.ty, v, nullable),
            None => {
                if let Some(d) = Value::default_of(&f.ty, f.default) {
                    self.write_value(w, &f.ty, &d, nullable);
                }
            }
        }
    }

    fn write_value(&self, w: &mut Writer<'_>, ty: &'static FieldType, v: &Value, nullable: bool) {
        let flex = self.e.flexible;
        match v {
            Value::Bool(b) => w.bool(*b),
            Value::Int8(x) => w.i8(*x),
            Value::Int16(x) => w.i16(*x),
            Value::Int32(x) => w.i32(*x),
            Value::Int64(x) => w.i64(*x),
            Value::Uint16(x) => w.u16(*x),
            Value::Uint32(x) => w.u32(*x),
            Value::Float64(x) => w.f64(*x),
            Value::Uuid(u) => w.uuid(*u),
            Value::String(s) => w.str(s, flex),
            Value::Bytes(b) | Value::Records(b) => w.bytes(b, flex),
            Value::Null => match ty {
                FieldType::String => w.nullable_str(None, flex),
                FieldType::Struct(_) => w.i8(-1),
                FieldType::Array(_) => w.array_len(None, flex),
                _ => w.nullable_bytes(None, flex),
            },
            Value::Array(items) => {
                w.array_len(Some(items.len()), flex);
                let elem = match ty {
                    FieldType::Array(elem) => elem,
                    other => other,
                };
                for item in items {
                    self.write_value(w, elem, item, false);
                }
            }
            Value::Struct(sv) => {
                if nullable {
                    w.i8(1);
                }
                self.write_struct(w, sv);
            }
        }
    }
}
