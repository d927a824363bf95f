//! What a tenant's config, ACL and quota rewrites share ([`super::tenant_admin`],
//! [`super::tenant_acls`], [`super::tenant_quotas`]): the errors of entries the proxy answers
//! itself, and reading and writing the fields of a value tree.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use crate::tools::reflect::value::{StructValue, Value};
use crate::tools::reflect::{FieldType, StructSchema};

/// CLUSTER_AUTHORIZATION_FAILED.
pub(super) const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
/// INVALID_REQUEST.
pub(super) const INVALID_REQUEST: i16 = 42;

/// An error code and message for an entry the proxy answers itself.
#[derive(Clone, Debug)]
pub(super) struct Why(pub(super) i16, pub(super) String);

/// An entry refused by its position in the request, with the config resource it named.
pub(super) type Refused = (usize, Why, Option<(i8, String)>);

fn field(s: &StructValue, name: &str) -> Option<usize> {
    s.schema.fields.iter().position(|f| f.name == name)
}

pub(super) fn int8(s: &StructValue, name: &str) -> Option<i8> {
    match s.get(name) {
        Some(Value::Int8(v)) => Some(*v),
        _ => None,
    }
}

pub(super) fn string(s: &StructValue, name: &str) -> Option<String> {
    match s.get(name) {
        Some(Value::String(v)) => Some(v.clone()),
        _ => None,
    }
}

/// The items of an array field, taken out of the struct.
pub(super) fn take(s: &mut StructValue, name: &str) -> Result<Vec<Value>, String> {
    let i = field(s, name).ok_or_else(|| alloc::format!("no field {name}"))?;
    match s.fields.get_mut(i).and_then(Option::take) {
        Some(Value::Array(items)) => Ok(items),
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(_) => Err(alloc::format!("{name} is not an array")),
    }
}

/// The struct schema of an array field's items.
pub(super) fn item_schema(s: &'static StructSchema, name: &str) -> Option<&'static StructSchema> {
    match s.fields.iter().find(|f| f.name == name)?.ty {
        FieldType::Array(FieldType::Struct(inner)) => Some(inner),
        _ => None,
    }
}

pub(super) fn structs(items: Vec<Value>) -> Result<Vec<StructValue>, String> {
    items
        .into_iter()
        .map(|v| match v {
            Value::Struct(s) => Ok(s),
            _ => Err("an entry is not a struct".to_owned()),
        })
        .collect()
}

pub(super) fn put(s: &mut StructValue, name: &str, items: Vec<StructValue>) {
    s.set(name, Value::Array(items.into_iter().map(Value::Struct).collect()));
}
