//! A tenant's client quotas: DescribeClientQuotas and AlterClientQuotas, whose entities
//! (users, client ids, IPs) carry no entity marks. Used by [`super::tenant_admin`].
//!
//! The rule: a tenant's quota entities are those of its own users, the principals the
//! caller names as the tenant's ([`super::Tenant::with_users`]). An entity is the tenant's
//! when it has exactly one `user` component, named (not the default) and one of the
//! tenant's users, and at most one `client-id` component (named, or the default client id
//! of that user); names pass as they are. Kafka applies such a quota only to connections of
//! that user, so it reaches no other tenant's clients. Every other entity is refused: a
//! `client-id` alone (or the default client id alone) applies to the clients of every
//! principal, every tenant's (the proxy passes client ids as clients send them); the
//! default user applies to every user; an `ip` to every connection from that address; and
//! another tenant's user is not the tenant's.
//!
//! AlterClientQuotas: an entry whose entity is not the tenant's never reaches the broker,
//! and the answer carries it with CLUSTER_AUTHORIZATION_FAILED, what Kafka gives a
//! principal without ALTER_CONFIGS on the cluster (INVALID_REQUEST for an entity Kafka
//! itself refuses: empty, a type twice, a type Kafka does not know). DescribeClientQuotas:
//! the filter goes on as it is (it only reads) and the answer keeps only the tenant's
//! entities, whatever the filter's components and match types were; the broker's own
//! errors pass as they are.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use super::tenant_fields::{
    CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST, Why, item_schema, put, structs, take,
};
use crate::tools::reflect::value::{StructValue, Value};

/// Kafka's quota entity types.
const USER: &str = "user";
const CLIENT_ID: &str = "client-id";
const IP: &str = "ip";

/// One quota entity: its components' types and names (`None`: the default).
pub(super) type Entity = Vec<(String, Option<String>)>;

/// An AlterClientQuotas entry refused by its position, with its entity.
pub(super) type RefusedEntity = (usize, Why, Entity);

/// Whether (and why not) an entity is the tenant's, by the rule of this module.
pub(super) fn owned(entity: &Entity, users: &dyn Fn(&str) -> bool) -> Result<(), Why> {
    if entity.is_empty() {
        return Err(Why(INVALID_REQUEST, "an empty client quota entity".to_owned()));
    }
    for (i, (ty, _)) in entity.iter().enumerate() {
        if !matches!(ty.as_str(), USER | CLIENT_ID | IP) {
            return Err(Why(INVALID_REQUEST, alloc::format!("unknown client quota entity type {ty:?}")));
        }
        if entity[..i].iter().any(|(t, _)| t == ty) {
            return Err(Why(INVALID_REQUEST, alloc::format!("entity type {ty} appears twice")));
        }
    }
    let user = entity.iter().find(|(t, _)| t == USER);
    let ip = entity.iter().any(|(t, _)| t == IP);
    match user {
        Some((_, Some(name))) if !ip && users(name) => Ok(()),
        _ => Err(Why(
            CLUSTER_AUTHORIZATION_FAILED,
            "a tenant has client quotas of its own users (and of their client ids) only".to_owned(),
        )),
    }
}

/// The entity of an entry (its `Entity` array).
fn entity_of(entry: &StructValue) -> Result<Entity, String> {
    let Some(Value::Array(items)) = entry.get("Entity") else { return Ok(Vec::new()) };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Value::Struct(c) = item else { return Err("an entity component is not a struct".to_owned()) };
        let ty = match c.get("EntityType") {
            Some(Value::String(t)) => t.clone(),
            _ => return Err("an entity component without a type".to_owned()),
        };
        let name = match c.get("EntityName") {
            Some(Value::String(n)) => Some(n.clone()),
            _ => None,
        };
        out.push((ty, name));
    }
    Ok(out)
}

/// AlterClientQuotas: entries whose entity is not the tenant's are taken out, to be
/// answered by [`alter_response`].
pub(super) fn alter_request(
    value: &mut StructValue,
    users: &dyn Fn(&str) -> bool,
) -> Result<Vec<RefusedEntity>, String> {
    let mut kept = Vec::new();
    let mut refused = Vec::new();
    for (i, e) in structs(take(value, "Entries")?)?.into_iter().enumerate() {
        let entity = entity_of(&e)?;
        match owned(&entity, users) {
            Ok(()) => kept.push(e),
            Err(why) => refused.push((i, why, entity)),
        }
    }
    put(value, "Entries", kept);
    Ok(refused)
}

/// AlterClientQuotas' answer: the refused entries go back in at their places, each with
/// its entity (clients match answers to their entities).
pub(super) fn alter_response(value: &mut StructValue, refused: Vec<RefusedEntity>) -> Result<(), String> {
    let schema = item_schema(value.schema, "Entries").ok_or("no entries")?;
    let component = item_schema(schema, "Entity").ok_or("no entity")?;
    let mut entries = structs(take(value, "Entries")?)?;
    for (at, why, entity) in refused {
        let mut e = StructValue::new(schema);
        e.set("ErrorCode", Value::Int16(why.0));
        e.set("ErrorMessage", Value::String(why.1));
        let parts = entity
            .into_iter()
            .map(|(ty, name)| {
                let mut c = StructValue::new(component);
                c.set("EntityType", Value::String(ty));
                c.set("EntityName", name.map_or(Value::Null, Value::String));
                c
            })
            .collect();
        put(&mut e, "Entity", parts);
        entries.insert(at.min(entries.len()), e);
    }
    put(value, "Entries", entries);
    Ok(())
}

/// DescribeClientQuotas' answer: only the tenant's entities stay.
pub(super) fn describe_response(value: &mut StructValue, users: &dyn Fn(&str) -> bool) -> Result<(), String> {
    if matches!(value.get("Entries"), None | Some(Value::Null)) {
        return Ok(()); // an error answer
    }
    let mut kept = Vec::new();
    for e in structs(take(value, "Entries")?)? {
        if owned(&entity_of(&e)?, users).is_ok() {
            kept.push(e);
        }
    }
    put(value, "Entries", kept);
    Ok(())
}
