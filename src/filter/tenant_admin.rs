//! A tenant's configs, ACLs and client quotas: the resources of DescribeConfigs,
//! AlterConfigs, IncrementalAlterConfigs, DescribeAcls, CreateAcls, DeleteAcls,
//! DescribeClientQuotas and AlterClientQuotas, which name topics, groups, transactional ids
//! and users in fields without entity marks (a resource type beside a name). Used by
//! [`super::Tenant`].
//!
//! Configs: TOPIC and GROUP resources are prefixed on the way in and lose the prefix on the
//! way out, so another tenant's resource is one the broker does not have. Every other
//! resource type is refused per entry: the broker never sees it, and the answer carries an
//! error in its place.
//!
//! ACLs are [`super::tenant_acls`]'s, client quotas [`super::tenant_quotas`]'s; this module
//! decodes and encodes their bodies.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use super::tenant_acls::{self, AclFilter};
use super::tenant_fields::{
    CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST, Refused, Why, int8, item_schema, put, string, structs,
    take,
};
use super::tenant_quotas::{self, RefusedEntity};
use crate::ApiKey;
use crate::tools::reflect::value::{Encoding, StructValue, Value};
use crate::tools::reflect::{self, MessageSchema};

// Config resource types.
const CONFIG_TOPIC: i8 = 2;
const CONFIG_GROUP: i8 = 32;

/// Whether [`request`] and [`response`] decide this API.
pub(super) fn handles(api: ApiKey) -> bool {
    use ApiKey::*;
    matches!(
        api,
        DescribeConfigs
            | AlterConfigs
            | IncrementalAlterConfigs
            | DescribeAcls
            | CreateAcls
            | DeleteAcls
            | DescribeClientQuotas
            | AlterClientQuotas
    )
}

/// What the answer to a rewritten request needs.
#[derive(Debug)]
pub(super) enum Pending {
    /// Entries refused by position in the request, with the resource they named (configs).
    Entries(Vec<Refused>),
    /// DescribeAcls: the tenant's filter, or why it was refused.
    Describe(Result<AclFilter, Why>),
    /// DeleteAcls: per filter of the tenant's, the number of broker filters it became, or
    /// why it was refused.
    Delete(Vec<Result<usize, Why>>),
    /// AlterClientQuotas: the entries refused, by position, with their entities.
    Quotas(Vec<RefusedEntity>),
    /// DescribeClientQuotas: the answer keeps the tenant's entities.
    QuotaList,
}

/// The array of resources (or creations, or filters) of a request and of its answer.
fn arrays(api: ApiKey) -> (&'static str, &'static str) {
    match api {
        ApiKey::DescribeConfigs => ("Resources", "Results"),
        ApiKey::AlterConfigs | ApiKey::IncrementalAlterConfigs => ("Resources", "Responses"),
        ApiKey::CreateAcls => ("Creations", "Results"),
        ApiKey::DeleteAcls => ("Filters", "FilterResults"),
        _ => ("", "Resources"),
    }
}

/// Rewrites a request of an API [`handles`] decides: the body to send and what its answer
/// needs; `users` tells the tenant's users (for quotas), `looked_up` the bindings the proxy
/// looked up for a DeleteAcls request's filters without a name. `Err` closes the connection
/// (a body that does not decode or encode).
pub(super) fn request(
    api: ApiKey,
    version: i16,
    body: &[u8],
    prefix: &str,
    users: &dyn Fn(&str) -> bool,
    looked_up: Vec<Option<tenant_acls::LookedUp>>,
) -> Result<(Vec<u8>, Pending), String> {
    let schema = reflect::request_schema(api);
    let fail = |e: &dyn core::fmt::Display| alloc::format!("a tenant's {} request: {e}", api.name());
    let mut value = StructValue::decode_body(schema, version, body).map_err(|e| fail(&e))?;
    let pending = match api {
        ApiKey::DescribeConfigs | ApiKey::AlterConfigs | ApiKey::IncrementalAlterConfigs => {
            configs_request(&mut value, prefix).map_err(|e| fail(&e))?
        }
        ApiKey::CreateAcls => {
            Pending::Entries(tenant_acls::create_acls_request(&mut value, prefix).map_err(|e| fail(&e))?)
        }
        ApiKey::DescribeAcls => Pending::Describe(tenant_acls::describe_acls_request(&mut value, prefix)),
        ApiKey::DeleteAcls => Pending::Delete(
            tenant_acls::delete_acls_request(&mut value, prefix, looked_up).map_err(|e| fail(&e))?,
        ),
        ApiKey::AlterClientQuotas => {
            Pending::Quotas(tenant_quotas::alter_request(&mut value, users).map_err(|e| fail(&e))?)
        }
        ApiKey::DescribeClientQuotas => Pending::QuotaList,
        _ => return Err(fail(&"not an API of configs, ACLs or quotas")),
    };
    let bytes = value.to_bytes(Encoding::body(schema, version)).map_err(|e| fail(&e))?;
    Ok((bytes, pending))
}

/// Rewrites the answer to a request [`request`] rewrote. `Err` closes the connection.
pub(super) fn response(
    api: ApiKey,
    version: i16,
    body: &[u8],
    prefix: &str,
    users: &dyn Fn(&str) -> bool,
    pending: Pending,
) -> Result<Vec<u8>, String> {
    let schema: &'static MessageSchema = reflect::response_schema(api);
    let fail = |e: &dyn core::fmt::Display| alloc::format!("a tenant's {} answer: {e}", api.name());
    let mut value = StructValue::decode_body(schema, version, body).map_err(|e| fail(&e))?;
    match pending {
        Pending::Entries(refused) => {
            entries_response(api, &mut value, prefix, refused).map_err(|e| fail(&e))?
        }
        Pending::Describe(filter) => {
            tenant_acls::describe_acls_response(&mut value, prefix, filter).map_err(|e| fail(&e))?
        }
        Pending::Delete(groups) => {
            tenant_acls::delete_acls_response(&mut value, prefix, groups).map_err(|e| fail(&e))?
        }
        Pending::Quotas(refused) => {
            tenant_quotas::alter_response(&mut value, refused).map_err(|e| fail(&e))?
        }
        Pending::QuotaList => tenant_quotas::describe_response(&mut value, users).map_err(|e| fail(&e))?,
    }
    unprefix_messages(&mut value, prefix);
    value.to_bytes(Encoding::body(schema, version)).map_err(|e| fail(&e))
}

/// Takes the prefix off the names quoted in every error message of an answer.
fn unprefix_messages(s: &mut StructValue, prefix: &str) {
    let mut changed = false;
    for (i, f) in s.schema.fields.iter().enumerate() {
        match s.fields.get_mut(i) {
            Some(Some(Value::String(text))) if f.name.ends_with("ErrorMessage") => {
                unprefix_message(text, prefix, &mut changed)
            }
            Some(Some(Value::Array(items))) => {
                for item in items {
                    if let Value::Struct(inner) = item {
                        unprefix_messages(inner, prefix);
                    }
                }
            }
            Some(Some(Value::Struct(inner))) => unprefix_messages(inner, prefix),
            _ => {}
        }
    }
}

// ---- Configs ----

/// Why a config resource of this type is refused, or `None` for a tenant's own type.
fn config_refusal(resource_type: i8) -> Option<Why> {
    match resource_type {
        CONFIG_TOPIC | CONFIG_GROUP => None,
        4 | 8 | 16 => Some(Why(
            CLUSTER_AUTHORIZATION_FAILED,
            "a tenant may not read or change broker, broker-logger or client-metrics configs".to_owned(),
        )),
        _ => Some(Why(INVALID_REQUEST, alloc::format!("unexpected resource type {resource_type}"))),
    }
}

fn configs_request(value: &mut StructValue, prefix: &str) -> Result<Pending, String> {
    let mut kept = Vec::new();
    let mut refused = Vec::new();
    for (i, mut r) in structs(take(value, "Resources")?)?.into_iter().enumerate() {
        let ty = int8(&r, "ResourceType").ok_or("a resource without a type")?;
        let name = string(&r, "ResourceName").ok_or("a resource without a name")?;
        match config_refusal(ty) {
            Some(why) => refused.push((i, why, Some((ty, name)))),
            None => {
                let kind = if ty == CONFIG_TOPIC { Names::Topics } else { Names::Ids };
                if !as_is(kind, &name) {
                    r.set("ResourceName", Value::String(alloc::format!("{prefix}{name}")));
                }
                kept.push(r);
            }
        }
    }
    put(value, "Resources", kept);
    Ok(Pending::Entries(refused))
}

/// Config answers (and CreateAcls'): the broker's entries lose the prefix from their
/// resource names, and the refused entries go back in at their places.
fn entries_response(
    api: ApiKey,
    value: &mut StructValue,
    prefix: &str,
    refused: Vec<Refused>,
) -> Result<(), String> {
    let (_, name) = arrays(api);
    let schema = item_schema(value.schema, name).ok_or("no entries")?;
    let mut entries = Vec::new();
    for mut e in structs(take(value, name)?)? {
        if api != ApiKey::CreateAcls {
            let ty = int8(&e, "ResourceType").ok_or("an entry without a resource type")?;
            let mut n = string(&e, "ResourceName").ok_or("an entry without a resource name")?;
            let kind = if ty == CONFIG_TOPIC { Names::Topics } else { Names::Ids };
            if config_refusal(ty).is_some() {
                continue; // never asked for: not the tenant's
            }
            if !as_is(kind, &n) {
                let Some(rest) = n.strip_prefix(prefix) else { continue };
                n = rest.to_owned();
            }
            e.set("ResourceName", Value::String(n));
        }
        entries.push(e);
    }
    for (at, why, resource) in refused {
        let mut e = StructValue::new(schema);
        e.set("ErrorCode", Value::Int16(why.0));
        e.set("ErrorMessage", Value::String(why.1));
        if let Some((ty, n)) = resource {
            e.set("ResourceType", Value::Int8(ty));
            e.set("ResourceName", Value::String(n));
        }
        entries.insert(at.min(entries.len()), e);
    }
    put(value, name, entries);
    Ok(())
}

// ---- Names, shared with the tenant's other APIs ----

/// What a field's strings are to a tenant.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Names {
    /// Not entities of a tenant.
    Not,
    /// Topic names.
    Topics,
    /// Group or transactional ids.
    Ids,
}

/// Whether an entity's name passes as it is, both ways: empty (Kafka's "no group"), or a
/// topic named `.` or `..`, which Kafka refuses (INVALID_TOPIC_EXCEPTION) and so never
/// holds, whereas the prefix would make a valid name of it (`tenant-a..`).
pub(super) fn as_is(kind: Names, name: &str) -> bool {
    name.is_empty() || (kind == Names::Topics && matches!(name, "." | ".."))
}

/// Takes the prefix off the names in a broker's error message ("the length of
/// 'tenant-a.orders' is ..."): every occurrence that starts a name, i.e. that does not
/// follow a character Kafka allows in a topic name.
pub(super) fn unprefix_message(text: &mut String, prefix: &str, changed: &mut bool) {
    if !text.contains(prefix) {
        return;
    }
    let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(c) = text.get(i..).and_then(|rest| rest.chars().next()) {
        let starts_name = !text[..i].chars().next_back().is_some_and(name_char);
        if starts_name && text[i..].starts_with(prefix) {
            i += prefix.len();
            *changed = true;
            continue;
        }
        out.push(c);
        i += c.len_utf8();
    }
    *text = out;
}
