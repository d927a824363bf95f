//! What a walk hands out: the [`Visitor`] trait, the [`Field`] each callback is for, and
//! the [`Scalar`] values it reads.

use super::super::{FieldSchema, FieldType, StructSchema};
use super::Path;
use crate::codec::types::Uuid;

/// A decoded value that is not a container: what [`Visitor::value`] receives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar<'a> {
    /// `bool` (any non-zero byte is `true`, as in Apache Kafka).
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
    /// `string`, checked to be UTF-8.
    String(&'a str),
    /// `bytes`.
    Bytes(&'a [u8]),
    /// `records`, as the raw record-batch bytes.
    Records(&'a [u8]),
    /// A null string, byte array, records or struct (null arrays are
    /// [`Visitor::enter_array`] with no count).
    Null,
}

/// What a visitor learns about the field a callback is for.
#[derive(Clone, Copy, Debug)]
pub struct Field<'p> {
    /// The schema field. For an array element it is the array field (see `index`).
    pub schema: &'static FieldSchema,
    /// The type of this value: the field's type, or the element type for an element.
    pub ty: &'static FieldType,
    /// For an array element: its index.
    pub index: Option<usize>,
    /// Where the value starts (its length prefix or null marker included), as an offset
    /// from the start of the input (plus the walk's base offset).
    pub offset: usize,
    /// Where the value ends; in [`Visitor::enter_array`] and [`Visitor::enter_struct`],
    /// where its count (or null marker) ends.
    pub end: usize,
    /// Whether the field may be null in this version (never for elements).
    pub nullable: bool,
    /// Whether the value uses the compact (flexible) encoding.
    pub flexible: bool,
    /// For the value of a known tagged field: its tag.
    pub tag: Option<u32>,
    /// The path to the value.
    pub path: &'p Path,
}

/// A tagged field's framing, as [`Visitor::tagged_field`] and
/// [`Visitor::unknown_tagged_field`] receive it.
#[derive(Clone, Copy, Debug)]
pub struct TaggedField {
    /// The tag.
    pub tag: u32,
    /// Where the entry (its tag varint) starts.
    pub offset: usize,
    /// Where its size varint starts.
    pub size_offset: usize,
    /// Where its value starts.
    pub value_offset: usize,
    /// The size its header declares.
    pub size: usize,
    /// The field the schema knows by this tag in this version, if any.
    pub known: Option<&'static FieldSchema>,
}

/// A tagged-field section's framing, as [`Visitor::enter_tagged_fields`] receives it.
#[derive(Clone, Copy, Debug)]
pub struct TaggedFraming<'p> {
    /// The struct the section belongs to (`None` for a header's).
    pub owner: Option<&'static StructSchema>,
    /// Where the count varint starts.
    pub offset: usize,
    /// Where it ends.
    pub count_end: usize,
    /// The number of fields, known and unknown.
    pub count: u32,
    /// The path of the struct the section belongs to.
    pub path: &'p Path,
}

/// Receives a walk's events, in wire order. Every method has an empty default, so a
/// visitor implements only what it needs.
///
/// Events are balanced: every `enter_*` (and every [`Visitor::tagged_field`]) is matched
/// by its `leave_*`, also when the walk stops at an error (the ends are then where the
/// reader stood). A value whose read fails gets no event.
pub trait Visitor<'a> {
    /// A value that is not a container.
    fn value(&mut self, field: &Field<'_>, value: Scalar<'a>) {
        let _ = (field, value);
    }
    /// A struct (a struct field or an element) starts; `field.end` is after its presence
    /// marker, if it is nullable.
    fn enter_struct(&mut self, field: &Field<'_>, schema: &'static StructSchema) {
        let _ = (field, schema);
    }
    /// The struct ends at `field.end`.
    fn leave_struct(&mut self, field: &Field<'_>, schema: &'static StructSchema) {
        let _ = (field, schema);
    }
    /// An array starts; `count` is `None` for null; `field.end` is after its count.
    fn enter_array(&mut self, field: &Field<'_>, count: Option<usize>) {
        let _ = (field, count);
    }
    /// The array ends at `field.end`.
    fn leave_array(&mut self, field: &Field<'_>, count: Option<usize>) {
        let _ = (field, count);
    }
    /// A tagged-field section starts.
    fn enter_tagged_fields(&mut self, section: &TaggedFraming<'_>) {
        let _ = section;
    }
    /// The section ends at `end`.
    fn leave_tagged_fields(&mut self, section: &TaggedFraming<'_>, end: usize) {
        let _ = (section, end);
    }
    /// A known tagged field starts; its value follows as an ordinary event whose
    /// [`Field::tag`] is set.
    fn tagged_field(&mut self, field: &TaggedField) {
        let _ = field;
    }
    /// The known tagged field ends at `end`.
    fn leave_tagged_field(&mut self, field: &TaggedField, end: usize) {
        let _ = (field, end);
    }
    /// A tagged field the schema does not know in this version, with its raw bytes.
    fn unknown_tagged_field(&mut self, field: &TaggedField, data: &'a [u8]) {
        let _ = (field, data);
    }
    /// The walk is over: `end` is where the reader stood (after the last byte read, or
    /// where it stopped at an error). Called once per walk, also after an error.
    fn finish(&mut self, end: usize) {
        let _ = end;
    }
}
