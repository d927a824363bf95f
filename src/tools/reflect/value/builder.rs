//! The [`Builder`]: a value built while the schema walker reads a body or header.

use alloc::vec::Vec;

use super::super::StructSchema;
use super::super::walk::{self, Field, Scalar, TaggedField, Visitor};
use super::{StructValue, Value};

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
