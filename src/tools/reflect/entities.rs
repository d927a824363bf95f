//! Entities in any message: every field that Apache Kafka's schemas mark with an
//! `entityType` (topic names, group ids, transactional ids, producer ids, broker ids), found
//! and rewritten from the schema tables, in every API and version, with no code per API.
//!
//! [`visit`] walks a body with the schema walker (no copy, no allocation) and hands each
//! entity value to a function; [`rewrite`] decodes the body into a [`StructValue`], replaces
//! the string entities a mapping function returns (a tenant's prefix, say), and encodes that
//! body again. Entities are met in wire order: the inline fields of each struct in schema
//! order, then its known tagged fields in tag order, depth first; the elements of an array
//! of entities (e.g. a list of topic names) each count as one.
//!
//! ```
//! use kwire::reflect::{entities, request_schema, Entity};
//! use kwire::ApiKey;
//!
//! // A DeleteTopics v1 request for "orders" and "payments" (a 30 s timeout).
//! let body = b"\x00\x00\x00\x02\x00\x06orders\x00\x08payments\x00\x00\x75\x30";
//! let schema = request_schema(ApiKey::DeleteTopics);
//! let prefixed = entities::rewrite(schema, 1, body, |entity, name| {
//!     (entity == Entity::TopicName).then(|| format!("tenant-a.{name}"))
//! })
//! .unwrap()
//! .expect("the names changed");
//! let mut names = Vec::new();
//! entities::visit(schema, 1, &prefixed, |entity, value| names.push((entity, value.to_string())))
//!     .unwrap();
//! assert_eq!(names[0], (Entity::TopicName, "tenant-a.orders".to_string()));
//! assert_eq!(names[1], (Entity::TopicName, "tenant-a.payments".to_string()));
//! ```

use alloc::string::String;

use super::value::{Encoding, StructValue, Value};
use super::walk::{self, Field, Scalar, Visitor, WalkError};
use super::{Entity, MessageSchema, RewriteError, StructSchema};

/// An entity's value as the wire holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntityValue<'a> {
    /// A name or id written as a string (topic names, group ids, transactional ids).
    Str(&'a str),
    /// An id written as an integer (producer ids, broker ids).
    Int(i64),
    /// A null (a nullable entity field, e.g. a transactional id outside transactions).
    Null,
}

impl core::fmt::Display for EntityValue<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EntityValue::Str(s) => f.write_str(s),
            EntityValue::Int(n) => write!(f, "{n}"),
            EntityValue::Null => f.write_str("null"),
        }
    }
}

struct Finder<F> {
    found: F,
    count: usize,
}

impl<'a, F: FnMut(Entity, EntityValue<'a>)> Visitor<'a> for Finder<F> {
    fn value(&mut self, field: &Field<'_>, value: Scalar<'a>) {
        let Some(entity) = field.schema.entity else { return };
        let value = match value {
            Scalar::String(s) => EntityValue::Str(s),
            Scalar::Int8(n) => EntityValue::Int(n.into()),
            Scalar::Int16(n) => EntityValue::Int(n.into()),
            Scalar::Int32(n) => EntityValue::Int(n.into()),
            Scalar::Int64(n) => EntityValue::Int(n),
            Scalar::Null => EntityValue::Null,
            _ => return,
        };
        self.count += 1;
        (self.found)(entity, value);
    }
}

/// Walks a whole body of `schema` at `version` and calls `found` with every entity in it, in
/// wire order; returns how many there were. Allocates nothing.
pub fn visit<'a>(
    schema: &MessageSchema,
    version: i16,
    body: &'a [u8],
    found: impl FnMut(Entity, EntityValue<'a>),
) -> Result<usize, WalkError> {
    let mut finder = Finder { found, count: 0 };
    walk::walk_body(schema, version, body, 0, &mut finder)?;
    Ok(finder.count)
}

/// Rewrites the string entities of a whole body of `schema` at `version`: `map(entity,
/// value)` returns the string to write instead, or `None` to keep it (nulls and integer
/// ids are left as they are). Returns the body encoded again (byte for byte the input where
/// nothing changed, for bodies in Kafka's canonical encoding), or `None` when `map` changed
/// nothing.
pub fn rewrite(
    schema: &MessageSchema,
    version: i16,
    body: &[u8],
    mut map: impl FnMut(Entity, &str) -> Option<String>,
) -> Result<Option<alloc::vec::Vec<u8>>, RewriteError> {
    let mut value = StructValue::decode_body(schema, version, body).map_err(RewriteError::Walk)?;
    let mut changed = false;
    rewrite_struct(&mut value, version, &mut |entity, s: &str| {
        let new = map(entity, s)?;
        changed |= new != s;
        Some(new)
    });
    if !changed {
        return Ok(None);
    }
    value.to_bytes(Encoding::body(schema, version)).map(Some).map_err(RewriteError::Encode)
}

type Map<'m> = &'m mut dyn FnMut(Entity, &str) -> Option<String>;

/// The struct's fields in wire order: inline fields in schema order, then tagged fields by
/// tag.
fn rewrite_struct(s: &mut StructValue, version: i16, map: Map<'_>) {
    let schema: &'static StructSchema = s.schema;
    let inline = schema.fields.iter().enumerate().filter(|(_, f)| f.is_inline(version)).map(|(i, _)| i);
    for i in inline {
        rewrite_field(s, i, version, map);
    }
    for i in schema.tagged_in_order(version) {
        rewrite_field(s, i, version, map);
    }
}

fn rewrite_field(s: &mut StructValue, i: usize, version: i16, map: Map<'_>) {
    let entity = s.schema.fields.get(i).and_then(|f| f.entity);
    let Some(Some(value)) = s.fields.get_mut(i) else { return };
    rewrite_value(value, entity, version, map);
}

fn rewrite_value(value: &mut Value, entity: Option<Entity>, version: i16, map: Map<'_>) {
    match value {
        Value::String(old) => {
            if let Some(entity) = entity
                && let Some(new) = map(entity, old)
            {
                *old = new;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_value(v, entity, version, map)),
        Value::Struct(s) => rewrite_struct(s, version, map),
        _ => {}
    }
}
