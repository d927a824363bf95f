//! [`Tenant`]: one connection's tenant of a virtual cluster, from the schemas' entity marks.

use alloc::boxed::Box;
use alloc::string::String;

use super::{Exchange, Filter, RequestAction, ResponseAction};
use crate::ApiKey;
use crate::dispatch::{Request, Response};
use crate::reflect::value::{Encoding, StructValue, Value};
use crate::reflect::{self, Entity, FieldType, MessageSchema, StructSchema};
use crate::types::Versions;

/// APIs a tenant may not use: their requests name topics, groups or principals in fields
/// that carry no entity mark (config and ACL resources, quotas, SCRAM credentials), or
/// they change the cluster for every tenant. Requests of these APIs close the connection,
/// and ApiVersions answers leave them out.
const DENIED: &[ApiKey] = &[
    ApiKey::DescribeConfigs,
    ApiKey::AlterConfigs,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::DescribeAcls,
    ApiKey::CreateAcls,
    ApiKey::DeleteAcls,
    ApiKey::DescribeClientQuotas,
    ApiKey::AlterClientQuotas,
    ApiKey::DescribeUserScramCredentials,
    ApiKey::AlterUserScramCredentials,
    ApiKey::CreateDelegationToken,
    ApiKey::RenewDelegationToken,
    ApiKey::ExpireDelegationToken,
    ApiKey::DescribeDelegationToken,
    ApiKey::AlterPartitionReassignments,
    ApiKey::ListPartitionReassignments,
    ApiKey::ElectLeaders,
    ApiKey::UnregisterBroker,
    ApiKey::UpdateFeatures,
];

/// Whether a field names an entity a tenant owns: a string (or array of strings) marked as
/// a topic name, group id or transactional id; and FindCoordinator's keys, which are group
/// or transactional ids by their `KeyType` and carry no mark.
fn owned_entity(api: ApiKey, field: &reflect::FieldSchema) -> bool {
    let string = match &field.ty {
        FieldType::String => true,
        FieldType::Array(t) => matches!(t, FieldType::String),
        _ => false,
    };
    let marked = matches!(field.entity, Some(Entity::TopicName | Entity::GroupId | Entity::TransactionalId));
    string && (marked || (api == ApiKey::FindCoordinator && matches!(field.name, "Key" | "CoordinatorKeys")))
}

/// What a field's strings are to a tenant.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Names {
    /// Not entities of a tenant.
    Not,
    /// Topic names.
    Topics,
    /// Group or transactional ids.
    Ids,
}

fn names(api: ApiKey, field: &reflect::FieldSchema) -> Names {
    match owned_entity(api, field) {
        false => Names::Not,
        true if field.entity == Some(Entity::TopicName) => Names::Topics,
        true => Names::Ids,
    }
}

/// Whether an entity's name passes as it is, both ways: empty (Kafka's "no group"), or a
/// topic named `.` or `..`, which Kafka refuses (INVALID_TOPIC_EXCEPTION) and so never
/// holds, whereas the prefix would make a valid name of it (`tenant-a..`).
fn as_is(kind: Names, name: &str) -> bool {
    name.is_empty() || (kind == Names::Topics && matches!(name, "." | ".."))
}

/// Whether a message has any field [`owned_entity`] accepts, at any depth.
fn has_owned_entities(api: ApiKey, schema: &MessageSchema) -> bool {
    fn walk(api: ApiKey, s: &'static StructSchema, depth: usize) -> bool {
        depth < reflect::walk::MAX_DEPTH
            && s.fields.iter().any(|f| {
                let mut ty = &f.ty;
                while let FieldType::Array(t) = ty {
                    ty = t;
                }
                owned_entity(api, f) || matches!(ty, FieldType::Struct(inner) if walk(api, inner, depth + 1))
            })
    }
    walk(api, schema.body, 0)
}

/// Where the tenant's prefix comes from.
enum Source {
    Known(String),
    /// Asked on each request until it answers (e.g. once SASL has named the principal).
    Later(Box<dyn Fn() -> Option<String> + Send>),
}

/// One connection's tenant of a virtual cluster: every topic name, group id and
/// transactional id the client sends is prefixed on the way to the broker, and the prefix
/// is taken off on the way back, in every API and version, from the entity marks of
/// Apache Kafka's schemas ([`reflect::entities`](crate::reflect::entities)). Entities of
/// other tenants (names without the prefix) are taken out of the answers, so listings
/// (Metadata, ListGroups, DescribeGroups, ListTransactions, DescribeTopicPartitions,
/// OffsetFetch, ...) show only the tenant's own. A request cannot name another tenant's
/// entity: whatever it names is prefixed.
///
/// The tenant is chosen per connection by the caller: from the SNI name when it is known at
/// once ([`Tenant::new`]), or from the authenticated principal once SASL has named it
/// ([`Tenant::when_known`]); until then, a request that names entities closes the
/// connection. APIs whose requests name entities in unmarked fields (configs, ACLs, quotas,
/// SCRAM credentials, delegation tokens) or that act on the whole cluster (reassignments,
/// leader elections, features) are refused as [`super::DenyApis`] refuses them, and left out
/// of ApiVersions answers, and a request kwire cannot read (an API or version it does not
/// know) closes the connection rather than pass unprefixed. Topic ids are the broker's and are passed as they are: a tenant
/// learns only its own topics' ids, from its filtered Metadata. Empty names (Kafka's "no
/// group") and the topic names `.` and `..` (which Kafka refuses, and would not once
/// prefixed) are passed as they are. A name the prefix pushes past Kafka's 249 bytes is
/// sent whole, so the broker refuses it as Kafka refuses any name past the limit
/// (INVALID_TOPIC_EXCEPTION from CreateTopics and Metadata); a broker's error messages lose
/// the prefix from the names they quote.
///
/// ```
/// use kwire::filter::{FilterChain, Tenant, Verdict};
/// use kwire::messages::{DeleteTopicsRequest, DeleteTopicsRequestView, RequestBody};
/// use kwire::Str;
///
/// let mut chain = FilterChain::new();
/// chain.push(Tenant::new("tenant-a."));
/// let names = [Str::from("orders")];
/// let request = DeleteTopicsRequest { topic_names: (&names[..]).into(), ..Default::default() };
/// let mut frame = [0u8; 64];
/// let n = kwire::dispatch::encode_request(&request, 3, 7, None, &mut frame)?;
/// let Verdict::Replace(sent) = chain.on_request(&frame[4..n]) else { panic!("prefixed") };
/// let sent = kwire::dispatch::parse_request(&sent)?;
/// let RequestBody::DeleteTopics(body) = RequestBody::from(sent.body) else { unreachable!() };
/// assert_eq!(body.topic_names[0].as_ref(), "tenant-a.orders");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Tenant {
    prefix: Source,
    /// Per API key (by its `i16`), whether its requests and its responses name entities.
    requests: [bool; 128],
    responses: [bool; 128],
}

impl core::fmt::Debug for Tenant {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.prefix {
            Source::Known(p) => write!(f, "Tenant({p:?})"),
            Source::Later(_) => f.write_str("Tenant(not yet known)"),
        }
    }
}

impl Tenant {
    /// A tenant whose names carry this prefix (e.g. `"tenant-a."`).
    pub fn new(prefix: impl Into<String>) -> Self {
        Tenant::with(Source::Known(prefix.into()))
    }

    /// A tenant known later: `prefix` is asked on each request that names entities until it
    /// answers (e.g. from the proxy's `ConnInfo::principal`), then kept.
    pub fn when_known(prefix: impl Fn() -> Option<String> + Send + 'static) -> Self {
        Tenant::with(Source::Later(Box::new(prefix)))
    }

    fn with(prefix: Source) -> Self {
        let mut t = Tenant { prefix, requests: [false; 128], responses: [false; 128] };
        for &api in ApiKey::ALL {
            if let Ok(i) = usize::try_from(api.to_i16())
                && i < 128
            {
                t.requests[i] = has_owned_entities(api, reflect::request_schema(api));
                t.responses[i] = has_owned_entities(api, reflect::response_schema(api));
            }
        }
        t
    }

    fn carries(table: &[bool; 128], api: ApiKey) -> bool {
        usize::try_from(api.to_i16()).ok().and_then(|i| table.get(i)).copied().unwrap_or(false)
    }

    fn prefix(&mut self) -> Option<&str> {
        if let Source::Later(ask) = &self.prefix {
            self.prefix = Source::Known(ask()?);
        }
        match &self.prefix {
            Source::Known(p) => Some(p),
            Source::Later(_) => None,
        }
    }
}

impl Filter for Tenant {
    fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
        DENIED.contains(&api_key) || Tenant::carries(&self.requests, api_key)
    }

    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        let api = request.body.api_key();
        if DENIED.contains(&api) {
            return RequestAction::Close(alloc::format!("{} requests are not open to tenants", api.name()));
        }
        let Some(prefix) = self.prefix() else {
            return RequestAction::Close(alloc::format!(
                "a {} request names topics or groups before the connection's tenant is known",
                api.name()
            ));
        };
        let version = request.header.api_version();
        let schema = reflect::request_schema(api);
        let Ok(mut value) = StructValue::decode_body(schema, version, request.body.as_bytes()) else {
            // Fails closed: an unprefixed request would reach other tenants' names.
            return RequestAction::Close(alloc::format!("a tenant's {} request did not decode", api.name()));
        };
        let mut changed = false;
        prefix_struct(api, &mut value, version, prefix, &mut changed);
        if !changed {
            return RequestAction::Pass;
        }
        match value.to_bytes(Encoding::body(schema, version)) {
            Ok(body) => RequestAction::RewriteBody(body),
            // A name the prefix makes longer than a string can be.
            Err(e) => RequestAction::Close(alloc::format!("a tenant's {} request: {e}", api.name())),
        }
    }

    fn wants_response(&self, api_key: ApiKey, _: i16) -> bool {
        Tenant::carries(&self.responses, api_key)
    }

    fn on_response<'a>(&mut self, exchange: &Exchange, response: &Response<'a>) -> ResponseAction<'a> {
        let api = exchange.api_key;
        let Some(prefix) = self.prefix() else {
            // Nothing was prefixed: nothing of this connection's is in the answer.
            return ResponseAction::Close(alloc::format!(
                "a {} answer names topics or groups before the connection's tenant is known",
                api.name()
            ));
        };
        let version = exchange.api_version;
        let schema = reflect::response_schema(api);
        let Ok(mut value) = StructValue::decode_body(schema, version, response.body.as_bytes()) else {
            // Fails closed: the answer could show other tenants' names.
            return ResponseAction::Close(alloc::format!("a tenant's {} answer did not decode", api.name()));
        };
        let mut changed = false;
        unprefix_struct(api, &mut value, version, prefix, &mut changed);
        if !changed {
            return ResponseAction::Pass;
        }
        match value.to_bytes(Encoding::body(schema, version)) {
            Ok(body) => ResponseAction::RewriteBody(body),
            Err(e) => ResponseAction::Close(alloc::format!("a tenant's {} answer: {e}", api.name())),
        }
    }

    fn versions(&self, api_key: ApiKey, readable: Versions) -> Option<Versions> {
        (!DENIED.contains(&api_key)).then_some(readable)
    }

    fn refuses_unreadable(&self) -> bool {
        // A request kwire cannot read could name anything, unprefixed.
        true
    }
}

/// The indexes of a struct's fields present in `version`.
fn present(s: &StructValue, version: i16) -> impl Iterator<Item = usize> + use<> {
    let schema: &'static StructSchema = s.schema;
    (0..schema.fields.len()).filter(move |&i| schema.fields[i].versions.contains(version))
}

fn prefix_struct(api: ApiKey, s: &mut StructValue, version: i16, prefix: &str, changed: &mut bool) {
    for i in present(s, version) {
        let kind = names(api, &s.schema.fields[i]);
        if let Some(Some(v)) = s.fields.get_mut(i) {
            prefix_value(api, v, kind, version, prefix, changed);
        }
    }
}

fn prefix_value(api: ApiKey, v: &mut Value, kind: Names, version: i16, prefix: &str, changed: &mut bool) {
    match v {
        Value::String(name) if kind != Names::Not && !as_is(kind, name) => {
            name.insert_str(0, prefix);
            *changed = true;
        }
        Value::Array(items) => {
            items.iter_mut().for_each(|v| prefix_value(api, v, kind, version, prefix, changed))
        }
        Value::Struct(s) => prefix_struct(api, s, version, prefix, changed),
        _ => {}
    }
}

/// Takes the prefix off the struct's entities; returns whether the struct names an entity
/// of another tenant (and is to be left out of its array).
fn unprefix_struct(api: ApiKey, s: &mut StructValue, version: i16, prefix: &str, changed: &mut bool) -> bool {
    let mut foreign = false;
    for i in present(s, version) {
        let field = &s.schema.fields[i];
        let kind = names(api, field);
        let message = kind == Names::Not && field.name.ends_with("ErrorMessage");
        let Some(Some(v)) = s.fields.get_mut(i) else { continue };
        match v {
            Value::String(name) if kind != Names::Not => foreign |= !unprefix(kind, name, prefix, changed),
            Value::String(text) if message => unprefix_message(text, prefix, changed),
            Value::Array(items) => {
                let before = items.len();
                items.retain_mut(|item| match item {
                    Value::String(name) if kind != Names::Not => unprefix(kind, name, prefix, changed),
                    Value::Struct(inner) => !unprefix_struct(api, inner, version, prefix, changed),
                    _ => true,
                });
                *changed |= items.len() != before;
            }
            Value::Struct(inner) => {
                // A nested struct that names another tenant's entity leaves the struct out.
                foreign |= unprefix_struct(api, inner, version, prefix, changed);
            }
            _ => {}
        }
    }
    foreign
}

/// Takes the prefix off one name; false for another tenant's (without it, and not one
/// that passes [`as_is`]).
fn unprefix(kind: Names, name: &mut String, prefix: &str, changed: &mut bool) -> bool {
    if as_is(kind, name) {
        return true;
    }
    if name.starts_with(prefix) {
        name.drain(..prefix.len());
        *changed = true;
        return true;
    }
    false
}

/// Takes the prefix off the names in a broker's error message ("the length of
/// 'tenant-a.orders' is ..."): every occurrence that starts a name, i.e. that does not
/// follow a character Kafka allows in a topic name.
fn unprefix_message(text: &mut String, prefix: &str, changed: &mut bool) {
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
