//! A tenant's configs and ACLs: the resources of DescribeConfigs, AlterConfigs,
//! IncrementalAlterConfigs, DescribeAcls, CreateAcls and DeleteAcls, which name topics,
//! groups and transactional ids in fields without entity marks (a resource type beside a
//! name). Used by [`super::Tenant`].
//!
//! Configs: TOPIC and GROUP resources are prefixed on the way in and lose the prefix on the
//! way out, so another tenant's resource is one the broker does not have. Every other
//! resource type is refused per entry: the broker never sees it, and the answer carries an
//! error in its place.
//!
//! ACLs: TOPIC, GROUP and TRANSACTIONAL_ID bindings map into the prefix (a LITERAL name `n`
//! to LITERAL `prefix+n`, a PREFIXED `n` to PREFIXED `prefix+n`, the LITERAL `*` to
//! PREFIXED `prefix`); other resource types are refused per entry. DescribeAcls' answer
//! keeps only the tenant's bindings that match its filter; a DeleteAcls filter becomes
//! filters that match exactly the tenant's bindings the tenant's filter matches, or is
//! refused when there is no such set (a filter without a resource name).

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use crate::ApiKey;
use crate::tools::reflect::value::{Encoding, StructValue, Value};
use crate::tools::reflect::{self, FieldType, MessageSchema, StructSchema};

/// CLUSTER_AUTHORIZATION_FAILED.
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
/// INVALID_REQUEST.
const INVALID_REQUEST: i16 = 42;

// Config resource types.
const CONFIG_TOPIC: i8 = 2;
const CONFIG_GROUP: i8 = 32;

// ACL resource types.
const ACL_ANY: i8 = 1;
const ACL_TOPIC: i8 = 2;
const ACL_GROUP: i8 = 3;
const ACL_CLUSTER: i8 = 4;
const ACL_TRANSACTIONAL_ID: i8 = 5;
const ACL_DELEGATION_TOKEN: i8 = 6;
const ACL_USER: i8 = 7;

// Pattern types.
const PATTERN_ANY: i8 = 1;
const PATTERN_MATCH: i8 = 2;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;

/// The longest resource name a MATCH filter of DeleteAcls may have: it becomes one filter
/// per prefix of the name.
const MAX_MATCH_NAME: usize = 512;
/// The most filters one DeleteAcls request becomes.
const MAX_DELETE_FILTERS: usize = 4096;

/// Whether [`request`] and [`response`] decide this API.
pub(super) fn handles(api: ApiKey) -> bool {
    use ApiKey::*;
    matches!(
        api,
        DescribeConfigs | AlterConfigs | IncrementalAlterConfigs | DescribeAcls | CreateAcls | DeleteAcls
    )
}

/// An error code and message for an entry the proxy answers itself.
#[derive(Clone, Debug)]
pub(super) struct Why(i16, String);

/// An entry refused by its position in the request, with the config resource it named.
pub(super) type Refused = (usize, Why, Option<(i8, String)>);

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
}

/// A resource pattern filter, as the tenant sent it.
#[derive(Clone, Debug)]
pub(super) struct AclFilter {
    resource_type: i8,
    pattern: i8,
    name: Option<String>,
}

fn field(s: &StructValue, name: &str) -> Option<usize> {
    s.schema.fields.iter().position(|f| f.name == name)
}

fn int8(s: &StructValue, name: &str) -> Option<i8> {
    match s.get(name) {
        Some(Value::Int8(v)) => Some(*v),
        _ => None,
    }
}

fn string(s: &StructValue, name: &str) -> Option<String> {
    match s.get(name) {
        Some(Value::String(v)) => Some(v.clone()),
        _ => None,
    }
}

/// The items of an array field, taken out of the struct.
fn take(s: &mut StructValue, name: &str) -> Result<Vec<Value>, String> {
    let i = field(s, name).ok_or_else(|| alloc::format!("no field {name}"))?;
    match s.fields.get_mut(i).and_then(Option::take) {
        Some(Value::Array(items)) => Ok(items),
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(_) => Err(alloc::format!("{name} is not an array")),
    }
}

/// The struct schema of an array field's items.
fn item_schema(s: &'static StructSchema, name: &str) -> Option<&'static StructSchema> {
    match s.fields.iter().find(|f| f.name == name)?.ty {
        FieldType::Array(FieldType::Struct(inner)) => Some(inner),
        _ => None,
    }
}

fn structs(items: Vec<Value>) -> Result<Vec<StructValue>, String> {
    items
        .into_iter()
        .map(|v| match v {
            Value::Struct(s) => Ok(s),
            _ => Err("an entry is not a struct".to_owned()),
        })
        .collect()
}

fn put(s: &mut StructValue, name: &str, items: Vec<StructValue>) {
    s.set(name, Value::Array(items.into_iter().map(Value::Struct).collect()));
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
/// needs. `Err` closes the connection (a body that does not decode or encode).
pub(super) fn request(
    api: ApiKey,
    version: i16,
    body: &[u8],
    prefix: &str,
) -> Result<(Vec<u8>, Pending), String> {
    let schema = reflect::request_schema(api);
    let fail = |e: &dyn core::fmt::Display| alloc::format!("a tenant's {} request: {e}", api.name());
    let mut value = StructValue::decode_body(schema, version, body).map_err(|e| fail(&e))?;
    let pending = match api {
        ApiKey::DescribeConfigs | ApiKey::AlterConfigs | ApiKey::IncrementalAlterConfigs => {
            configs_request(&mut value, prefix).map_err(|e| fail(&e))?
        }
        ApiKey::CreateAcls => create_acls_request(&mut value, prefix).map_err(|e| fail(&e))?,
        ApiKey::DescribeAcls => describe_acls_request(&mut value, prefix),
        ApiKey::DeleteAcls => delete_acls_request(&mut value, prefix).map_err(|e| fail(&e))?,
        _ => return Err(fail(&"not an API of configs or ACLs")),
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
            describe_acls_response(&mut value, prefix, filter).map_err(|e| fail(&e))?
        }
        Pending::Delete(groups) => delete_acls_response(&mut value, prefix, groups).map_err(|e| fail(&e))?,
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

// ---- ACLs ----

/// Why an ACL resource type is refused, or the broker's types it stands for.
fn acl_types(resource_type: i8) -> Result<&'static [i8], Why> {
    match resource_type {
        ACL_ANY => Ok(&[ACL_TOPIC, ACL_GROUP, ACL_TRANSACTIONAL_ID]),
        ACL_TOPIC => Ok(&[ACL_TOPIC]),
        ACL_GROUP => Ok(&[ACL_GROUP]),
        ACL_TRANSACTIONAL_ID => Ok(&[ACL_TRANSACTIONAL_ID]),
        ACL_CLUSTER | ACL_DELEGATION_TOKEN | ACL_USER => Err(Why(
            CLUSTER_AUTHORIZATION_FAILED,
            "a tenant has ACLs on its topics, groups and transactional ids only".to_owned(),
        )),
        _ => Err(Why(INVALID_REQUEST, alloc::format!("unexpected resource type {resource_type}"))),
    }
}

/// The broker's pattern for a tenant's binding: a LITERAL `*` is PREFIXED on the prefix;
/// `None` for an empty name, or a pattern type a binding cannot have.
pub(super) fn to_broker(pattern: i8, name: &str, prefix: &str) -> Option<(i8, String)> {
    match pattern {
        LITERAL if name == "*" => Some((PREFIXED, prefix.to_owned())),
        LITERAL | PREFIXED if !name.is_empty() => Some((pattern, alloc::format!("{prefix}{name}"))),
        _ => None,
    }
}

/// The tenant's view of a broker's binding, `None` if it is not one [`to_broker`] gives.
pub(super) fn to_tenant(pattern: i8, name: &str, prefix: &str) -> Option<(i8, String)> {
    let rest = name.strip_prefix(prefix)?;
    match pattern {
        PREFIXED if rest.is_empty() => Some((LITERAL, "*".to_owned())),
        PREFIXED if !rest.is_empty() => Some((PREFIXED, rest.to_owned())),
        LITERAL if !rest.is_empty() && rest != "*" => Some((LITERAL, rest.to_owned())),
        _ => None,
    }
}

/// Whether a pattern filter matches a binding, as Kafka's `ResourcePatternFilter` does.
fn matches(filter_pattern: i8, filter_name: Option<&str>, pattern: i8, name: &str) -> bool {
    if !matches!(filter_pattern, PATTERN_ANY | PATTERN_MATCH) && filter_pattern != pattern {
        return false;
    }
    let Some(f) = filter_name else { return true };
    if filter_pattern == PATTERN_ANY || filter_pattern == pattern {
        return f == name;
    }
    match pattern {
        LITERAL => f == name || name == "*",
        PREFIXED => f.starts_with(name),
        _ => false,
    }
}

/// The broker's patterns that match exactly the tenant's bindings a tenant's filter
/// matches (one resource type).
fn exact(pattern: i8, name: Option<&str>, prefix: &str) -> Result<Vec<(i8, String)>, Why> {
    let Some(n) = name else {
        return Err(Why(
            INVALID_REQUEST,
            "a tenant's ACL filter must name a resource: the proxy cannot narrow it to the tenant's bindings"
                .to_owned(),
        ));
    };
    let mut out: Vec<(i8, String)> = match pattern {
        LITERAL | PREFIXED => to_broker(pattern, n, prefix).into_iter().collect(),
        PATTERN_ANY => [LITERAL, PREFIXED].iter().filter_map(|&p| to_broker(p, n, prefix)).collect(),
        PATTERN_MATCH => {
            if n.len() > MAX_MATCH_NAME {
                return Err(Why(
                    INVALID_REQUEST,
                    alloc::format!("a MATCH filter's name is longer than {MAX_MATCH_NAME} bytes"),
                ));
            }
            let mut v: Vec<(i8, String)> = [to_broker(LITERAL, n, prefix), to_broker(LITERAL, "*", prefix)]
                .into_iter()
                .flatten()
                .collect();
            for (k, c) in n.char_indices() {
                v.extend(to_broker(PREFIXED, &n[..k + c.len_utf8()], prefix));
            }
            v
        }
        _ => return Err(Why(INVALID_REQUEST, alloc::format!("unexpected pattern type {pattern}"))),
    };
    out.sort();
    out.dedup();
    Ok(out)
}

fn create_acls_request(value: &mut StructValue, prefix: &str) -> Result<Pending, String> {
    let mut kept = Vec::new();
    let mut refused = Vec::new();
    for (i, mut c) in structs(take(value, "Creations")?)?.into_iter().enumerate() {
        let ty = int8(&c, "ResourceType").ok_or("a creation without a resource type")?;
        let pattern = int8(&c, "ResourcePatternType").unwrap_or(LITERAL);
        let name = string(&c, "ResourceName").ok_or("a creation without a resource name")?;
        let mapped = match acl_types(ty) {
            Ok(_) if ty == ACL_ANY => {
                Err(Why(INVALID_REQUEST, "a binding's resource type may not be ANY".to_owned()))
            }
            Ok(_) => to_broker(pattern, &name, prefix).ok_or_else(|| {
                Why(
                    INVALID_REQUEST,
                    "a binding needs a resource name and a LITERAL or PREFIXED pattern".to_owned(),
                )
            }),
            Err(why) => Err(why),
        };
        match mapped {
            Ok((p, n)) => {
                c.set("ResourcePatternType", Value::Int8(p));
                c.set("ResourceName", Value::String(n));
                kept.push(c);
            }
            Err(why) => refused.push((i, why, None)),
        }
    }
    put(value, "Creations", kept);
    Ok(Pending::Entries(refused))
}

fn filter_of(s: &StructValue) -> Result<AclFilter, String> {
    Ok(AclFilter {
        resource_type: int8(s, "ResourceTypeFilter").ok_or("a filter without a resource type")?,
        pattern: int8(s, "PatternTypeFilter").unwrap_or(LITERAL),
        name: string(s, "ResourceNameFilter"),
    })
}

fn set_filter(s: &mut StructValue, resource_type: i8, pattern: i8, name: Option<String>) {
    s.set("ResourceTypeFilter", Value::Int8(resource_type));
    s.set("PatternTypeFilter", Value::Int8(pattern));
    s.set("ResourceNameFilter", name.map_or(Value::Null, Value::String));
}

fn describe_acls_request(value: &mut StructValue, prefix: &str) -> Pending {
    let filter = match filter_of(value) {
        Ok(f) => f,
        Err(e) => return Pending::Describe(Err(Why(INVALID_REQUEST, e))),
    };
    if let Err(why) = acl_types(filter.resource_type) {
        // Sent on as a filter for no binding of any tenant's; the answer gets the error.
        set_filter(value, ACL_TOPIC, LITERAL, Some(prefix.to_owned()));
        return Pending::Describe(Err(why));
    }
    // One exact pattern when there is one; else every binding of the type, narrowed on
    // the way back.
    match exact(filter.pattern, filter.name.as_deref(), prefix) {
        Ok(mut one) if one.len() == 1 => {
            let (p, n) = one.remove(0);
            set_filter(value, filter.resource_type, p, Some(n));
        }
        _ => set_filter(value, filter.resource_type, PATTERN_ANY, None),
    }
    Pending::Describe(Ok(filter))
}

fn describe_acls_response(
    value: &mut StructValue,
    prefix: &str,
    filter: Result<AclFilter, Why>,
) -> Result<(), String> {
    let resources = structs(take(value, "Resources")?)?;
    let filter = match filter {
        Ok(f) => f,
        Err(why) => {
            value.set("ErrorCode", Value::Int16(why.0));
            value.set("ErrorMessage", Value::String(why.1));
            put(value, "Resources", Vec::new());
            return Ok(());
        }
    };
    let mut kept = Vec::new();
    for mut r in resources {
        let ty = int8(&r, "ResourceType").ok_or("a resource without a type")?;
        let pattern = int8(&r, "PatternType").ok_or("a resource without a pattern type")?;
        let name = string(&r, "ResourceName").ok_or("a resource without a name")?;
        let ours = acl_types(ACL_ANY).is_ok_and(|t| t.contains(&ty))
            && (filter.resource_type == ACL_ANY || filter.resource_type == ty);
        let Some((p, n)) = to_tenant(pattern, &name, prefix).filter(|_| ours) else { continue };
        if !matches(filter.pattern, filter.name.as_deref(), p, &n) {
            continue;
        }
        r.set("PatternType", Value::Int8(p));
        r.set("ResourceName", Value::String(n));
        kept.push(r);
    }
    put(value, "Resources", kept);
    Ok(())
}

fn delete_acls_request(value: &mut StructValue, prefix: &str) -> Result<Pending, String> {
    let mut sent = Vec::new();
    let mut groups = Vec::new();
    for f in structs(take(value, "Filters")?)? {
        let filter = filter_of(&f)?;
        let expanded = acl_types(filter.resource_type).and_then(|types| {
            let patterns = exact(filter.pattern, filter.name.as_deref(), prefix)?;
            Ok(types
                .iter()
                .flat_map(|&t| patterns.iter().map(move |(p, n)| (t, *p, n.clone())))
                .collect::<Vec<_>>())
        });
        match expanded {
            Ok(list) if sent.len() + list.len() <= MAX_DELETE_FILTERS => {
                groups.push(Ok(list.len()));
                for (t, p, n) in list {
                    let mut one = f.clone();
                    set_filter(&mut one, t, p, Some(n));
                    sent.push(one);
                }
            }
            Ok(_) => groups.push(Err(Why(
                INVALID_REQUEST,
                alloc::format!(
                    "a tenant's DeleteAcls request becomes more than {MAX_DELETE_FILTERS} filters"
                ),
            ))),
            Err(why) => groups.push(Err(why)),
        }
    }
    put(value, "Filters", sent);
    Ok(Pending::Delete(groups))
}

fn delete_acls_response(
    value: &mut StructValue,
    prefix: &str,
    groups: Vec<Result<usize, Why>>,
) -> Result<(), String> {
    let schema = item_schema(value.schema, "FilterResults").ok_or("no filter results")?;
    let expected: usize = groups.iter().map(|g| *g.as_ref().unwrap_or(&0)).sum();
    let results = structs(take(value, "FilterResults")?)?;
    if results.len() != expected {
        return Err(alloc::format!("{} filter results for {expected} filters", results.len()));
    }
    let mut results = results.into_iter();
    let mut out = Vec::new();
    for group in groups {
        let mut merged = StructValue::new(schema);
        match group {
            Err(why) => {
                merged.set("ErrorCode", Value::Int16(why.0));
                merged.set("ErrorMessage", Value::String(why.1));
            }
            Ok(n) => {
                let mut matching = Vec::new();
                for mut r in results.by_ref().take(n) {
                    if let (Some(Value::Int16(code)), None | Some(Value::Int16(0))) =
                        (r.get("ErrorCode").cloned(), merged.get("ErrorCode"))
                        && code != 0
                    {
                        merged.set("ErrorCode", Value::Int16(code));
                        if let Some(m) = r.get("ErrorMessage").cloned() {
                            merged.set("ErrorMessage", m);
                        }
                    }
                    for mut acl in structs(take(&mut r, "MatchingAcls")?)? {
                        let pattern = int8(&acl, "PatternType").ok_or("a binding without a pattern type")?;
                        let name = string(&acl, "ResourceName").ok_or("a binding without a name")?;
                        // Exact filters match only the tenant's; anything else is not shown.
                        let Some((p, n)) = to_tenant(pattern, &name, prefix) else { continue };
                        acl.set("PatternType", Value::Int8(p));
                        acl.set("ResourceName", Value::String(n));
                        matching.push(acl);
                    }
                }
                put(&mut merged, "MatchingAcls", matching);
            }
        }
        out.push(merged);
    }
    put(value, "FilterResults", out);
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

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "ta.";

    /// Every tenant binding a small universe holds, with its broker form.
    fn universe() -> Vec<(i8, String)> {
        let names = ["a", "ab", "abc", "b", "*", "a*"];
        let mut v = Vec::new();
        for n in names {
            v.push((LITERAL, n.to_owned()));
            v.push((PREFIXED, n.to_owned()));
        }
        v
    }

    #[test]
    fn bindings_map_both_ways() {
        for (p, n) in universe() {
            let (bp, bn) = to_broker(p, &n, P).unwrap();
            assert!(bn.starts_with(P));
            assert_eq!(to_tenant(bp, &bn, P), Some((p, n.clone())), "{p} {n}");
        }
        assert_eq!(to_broker(LITERAL, "*", P), Some((PREFIXED, P.to_owned())));
        assert_eq!(to_tenant(LITERAL, "ta.*", P), None, "not a binding a tenant can make");
        assert_eq!(to_tenant(LITERAL, "tb.a", P), None);
        assert_eq!(to_tenant(PREFIXED, "t", P), None);
        assert_eq!(to_broker(PREFIXED, "", P), None);
    }

    /// The broker patterns of an exact delete match, as the broker would match them (its
    /// bindings being the broker forms of the universe, and another tenant's and the
    /// cluster's), exactly the tenant's bindings its filter matches.
    #[test]
    fn delete_filters_match_exactly_the_tenants_bindings() {
        let mut broker: Vec<(i8, String)> =
            universe().iter().map(|(p, n)| to_broker(*p, n, P).unwrap()).collect();
        broker.extend([(LITERAL, "*".to_owned()), (PREFIXED, "t".to_owned()), (LITERAL, "tb.a".to_owned())]);
        broker.extend([(PREFIXED, "tb.".to_owned()), (LITERAL, "ta.*".to_owned())]);
        for fp in [PATTERN_ANY, PATTERN_MATCH, LITERAL, PREFIXED] {
            for fname in ["a", "ab", "abc", "abd", "b", "*", "a*", "", "zz"] {
                let want: Vec<(i8, String)> = broker
                    .iter()
                    .filter(|(p, n)| {
                        to_tenant(*p, n, P).is_some_and(|(tp, tn)| matches(fp, Some(fname), tp, &tn))
                    })
                    .cloned()
                    .collect();
                let filters = exact(fp, Some(fname), P).unwrap();
                let got: Vec<(i8, String)> = broker
                    .iter()
                    .filter(|(p, n)| filters.iter().any(|(fp2, fn2)| matches(*fp2, Some(fn2), *p, n)))
                    .cloned()
                    .collect();
                assert_eq!(got, want, "filter {fp} {fname:?}");
            }
        }
        assert!(exact(PATTERN_MATCH, None, P).is_err());
        assert!(exact(PATTERN_ANY, None, P).is_err());
        assert!(exact(LITERAL, None, P).is_err());
    }
}
