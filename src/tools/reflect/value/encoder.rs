//! A value's encoder: exact size first, then the bytes, by the rules of the generated
//! encoders.

use alloc::vec::Vec;

use super::super::{FieldSchema, FieldType};
use super::{Encoding, StructValue, Value, ValueError, is_default};
use crate::codec::error::EncodeError;
use crate::codec::wire::{self, Writer};

pub(super) struct Enc {
    pub(super) e: Encoding,
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

    pub(super) fn size_struct(&self, sv: &StructValue) -> Result<usize, ValueError> {
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

    pub(super) fn write_struct(&self, w: &mut Writer<'_>, sv: &StructValue) {
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
