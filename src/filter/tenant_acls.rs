//! A tenant's ACLs: the bindings of DescribeAcls, CreateAcls and DeleteAcls, which name
//! topics, groups and transactional ids beside a resource type, without entity marks. Used
//! by [`super::tenant_admin`].
//!
//! TOPIC, GROUP and TRANSACTIONAL_ID bindings map into the prefix (a LITERAL name `n` to
//! LITERAL `prefix+n`, a PREFIXED `n` to PREFIXED `prefix+n`, the LITERAL `*` to PREFIXED
//! `prefix`); other resource types are refused per entry. DescribeAcls' answer keeps only
//! the tenant's bindings that match its filter; a DeleteAcls filter becomes filters that
//! match exactly the tenant's bindings the tenant's filter matches: by its name, or, for a
//! filter without one, by the bindings the proxy looked up ([`AclLookups`]); without a
//! look-up such a filter is refused.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use super::tenant_fields::{
    CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST, Refused, Why, int8, item_schema, put, string, structs,
    take,
};
use crate::tools::reflect::value::{StructValue, Value};

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

/// A broker's ACL binding's resource: its type, pattern type and name.
pub(crate) type Binding = (i8, i8, String);

/// What the proxy looked up for one DeleteAcls filter without a name: the broker's bindings
/// that match the filter but for its name (DescribeAcls with the filter's resource type,
/// principal, host, operation and permission, any pattern and any name), or the broker's
/// error code and message.
pub(crate) type LookedUp = Result<Vec<Binding>, (i16, Option<String>)>;

/// A connection's look-ups of ACL bindings, shared between the proxy (which asks the broker
/// before a DeleteAcls request with filters without a name goes on) and the connection's
/// [`super::Tenant`] (which turns such a filter into exact filters, one per binding of the
/// tenant's that it matches). A filter without a name matches bindings that no exact
/// pattern can name in advance (every LITERAL name in the prefix), so without a look-up it
/// is refused.
#[cfg(feature = "proxy")]
#[derive(Clone, Debug, Default)]
pub(crate) struct AclLookups(alloc::sync::Arc<std::sync::Mutex<Lookups>>);

#[cfg(feature = "proxy")]
#[derive(Debug, Default)]
pub(crate) struct Lookups {
    /// Whether a tenant reads the look-ups (else the proxy makes none).
    wanted: bool,
    /// The last look-up: the request's correlation id, and per filter what was found.
    found: Option<(i32, Vec<Option<LookedUp>>)>,
}

#[cfg(feature = "proxy")]
impl AclLookups {
    fn with<R>(&self, f: impl FnOnce(&mut Lookups) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A tenant will read the look-ups.
    pub(crate) fn want(&self) {
        self.with(|l| l.wanted = true);
    }

    /// Whether a tenant reads the look-ups.
    pub(crate) fn wanted(&self) -> bool {
        self.with(|l| l.wanted)
    }

    /// Notes what was found for the request `correlation_id`, by filter position.
    pub(crate) fn put(&self, correlation_id: i32, found: Vec<Option<LookedUp>>) {
        self.with(|l| l.found = Some((correlation_id, found)));
    }

    /// What was found for the request `correlation_id` (then forgotten).
    pub(crate) fn take(&self, correlation_id: i32) -> Vec<Option<LookedUp>> {
        self.with(|l| match l.found.take() {
            Some((id, found)) if id == correlation_id => found,
            _ => Vec::new(),
        })
    }
}

/// A [`super::Tenant`]'s handle on its connection's look-ups (none outside a proxy).
#[derive(Debug, Default)]
pub(super) struct TenantLookups(#[cfg(feature = "proxy")] pub(super) Option<AclLookups>);

impl TenantLookups {
    /// What was looked up for the request `correlation_id` of `api` (nothing but for
    /// DeleteAcls).
    pub(super) fn take(&self, api: crate::ApiKey, correlation_id: i32) -> Vec<Option<LookedUp>> {
        #[cfg(feature = "proxy")]
        if let (Some(lookups), crate::ApiKey::DeleteAcls) = (&self.0, api) {
            return lookups.take(correlation_id);
        }
        let _ = (api, correlation_id);
        Vec::new()
    }
}

/// A resource pattern filter, as the tenant sent it.
#[derive(Clone, Debug)]
pub(super) struct AclFilter {
    resource_type: i8,
    pattern: i8,
    name: Option<String>,
}

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

pub(super) fn create_acls_request(value: &mut StructValue, prefix: &str) -> Result<Vec<Refused>, String> {
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
    Ok(refused)
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

pub(super) fn describe_acls_request(value: &mut StructValue, prefix: &str) -> Result<AclFilter, Why> {
    let filter = match filter_of(value) {
        Ok(f) => f,
        Err(e) => return Err(Why(INVALID_REQUEST, e)),
    };
    if let Err(why) = acl_types(filter.resource_type) {
        // Sent on as a filter for no binding of any tenant's; the answer gets the error.
        set_filter(value, ACL_TOPIC, LITERAL, Some(prefix.to_owned()));
        return Err(why);
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
    Ok(filter)
}

pub(super) fn describe_acls_response(
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

/// The tenant's bindings among those the proxy looked up for a filter without a name (the
/// broker's bindings that match the filter but for its name), that the filter matches: one
/// exact broker pattern each.
fn nameless(filter: &AclFilter, types: &[i8], found: &[Binding], prefix: &str) -> Vec<Binding> {
    let mut out: Vec<Binding> = found
        .iter()
        .filter(|(t, p, n)| {
            types.contains(t)
                && to_tenant(*p, n, prefix).is_some_and(|(tp, tn)| matches(filter.pattern, None, tp, &tn))
        })
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// DeleteAcls: each filter becomes broker filters that match exactly the tenant's bindings
/// it matches. `looked_up` holds, by the filter's position, what the proxy looked up for a
/// filter without a name ([`AclLookups`]); a filter without a name and without a look-up
/// is refused.
pub(super) fn delete_acls_request(
    value: &mut StructValue,
    prefix: &str,
    mut looked_up: Vec<Option<LookedUp>>,
) -> Result<Vec<Result<usize, Why>>, String> {
    let mut sent = Vec::new();
    let mut groups = Vec::new();
    for (i, f) in structs(take(value, "Filters")?)?.into_iter().enumerate() {
        let filter = filter_of(&f)?;
        let found = looked_up.get_mut(i).and_then(Option::take);
        let expanded = acl_types(filter.resource_type).and_then(|types| match (&filter.name, found) {
            (None, Some(Ok(found))) => Ok(nameless(&filter, types, &found, prefix)),
            (None, Some(Err((code, message)))) => Err(Why(code, message.unwrap_or_default())),
            _ => {
                let patterns = exact(filter.pattern, filter.name.as_deref(), prefix)?;
                Ok(types
                    .iter()
                    .flat_map(|&t| patterns.iter().map(move |(p, n)| (t, *p, n.clone())))
                    .collect::<Vec<_>>())
            }
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
    Ok(groups)
}

pub(super) fn delete_acls_response(
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
    }

    /// A filter without a name, given the broker's bindings (the tenant's, another's, the
    /// cluster's, a name that only starts like the prefix), becomes exact filters for
    /// exactly the tenant's bindings it matches, by type and pattern.
    #[test]
    fn filters_without_a_name_delete_exactly_the_tenants_bindings() {
        let mut broker: Vec<Binding> = Vec::new();
        for ty in [ACL_TOPIC, ACL_GROUP, ACL_TRANSACTIONAL_ID, ACL_CLUSTER] {
            for (p, n) in universe() {
                let (bp, bn) = to_broker(p, &n, P).unwrap();
                broker.push((ty, bp, bn));
                let (bp, bn) = to_broker(p, &n, "tb.").unwrap();
                broker.push((ty, bp, bn));
            }
            broker.extend([(ty, LITERAL, "*".to_owned()), (ty, PREFIXED, "t".to_owned())]);
            broker.extend([(ty, LITERAL, "ta.*".to_owned()), (ty, LITERAL, "ta".to_owned())]);
        }
        for ty in [ACL_ANY, ACL_TOPIC, ACL_GROUP, ACL_TRANSACTIONAL_ID] {
            let types = acl_types(ty).unwrap();
            for pattern in [PATTERN_ANY, PATTERN_MATCH, LITERAL, PREFIXED] {
                let filter = AclFilter { resource_type: ty, pattern, name: None };
                let got = nameless(&filter, types, &broker, P);
                let mut want: Vec<Binding> = broker
                    .iter()
                    .filter(|(t, p, n)| {
                        types.contains(t)
                            && to_tenant(*p, n, P).is_some_and(|(tp, _)| {
                                matches!(pattern, PATTERN_ANY | PATTERN_MATCH) || tp == pattern
                            })
                    })
                    .cloned()
                    .collect();
                want.sort();
                assert_eq!(got, want, "type {ty} pattern {pattern}");
                assert!(got.iter().all(|(t, _, n)| *t != ACL_CLUSTER && n.starts_with(P)));
                let per_type = if ty == ACL_ANY { 3 } else { 1 };
                let per_pattern = match pattern {
                    LITERAL => 6,  // the universe's LITERAL names, `*` among them
                    PREFIXED => 6, // the universe's PREFIXED names
                    _ => 12,
                };
                assert_eq!(got.len(), per_type * per_pattern, "type {ty} pattern {pattern}");
            }
        }
        // A look-up feeds the DeleteAcls rewrite; without one, the filter is refused.
        let schema = crate::tools::reflect::request_schema(crate::ApiKey::DeleteAcls);
        let filters_schema = super::super::tenant_fields::item_schema(schema.body, "Filters").unwrap();
        let mut f = StructValue::new(filters_schema);
        set_filter(&mut f, ACL_ANY, PATTERN_ANY, None);
        let make = || {
            let mut v = StructValue::new(schema.body);
            put(&mut v, "Filters", alloc::vec![f.clone()]);
            v
        };
        let mut v = make();
        let groups = delete_acls_request(&mut v, P, Vec::new()).unwrap();
        assert!(matches!(groups[..], [Err(Why(INVALID_REQUEST, _))]));
        let mut v = make();
        let found = alloc::vec![Some(Ok(broker.clone()))];
        let groups = delete_acls_request(&mut v, P, found).unwrap();
        assert!(matches!(groups[..], [Ok(36)]), "{groups:?}");
        let Some(Value::Array(sent)) = v.get("Filters") else { panic!() };
        assert_eq!(sent.len(), 36);
        for item in sent {
            let Value::Struct(s) = item else { panic!() };
            assert!(string(s, "ResourceNameFilter").unwrap().starts_with(P));
            assert!(matches!(int8(s, "PatternTypeFilter"), Some(LITERAL | PREFIXED)));
        }
        let mut v = make();
        let denied = alloc::vec![Some(Err((31, Some("no".to_owned()))))];
        let groups = delete_acls_request(&mut v, P, denied).unwrap();
        assert!(matches!(groups[..], [Err(Why(31, _))]));
        assert!(exact(LITERAL, None, P).is_err());
    }
}
