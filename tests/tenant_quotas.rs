//! A tenant's client quotas through `kwire::filter::Tenant` (DescribeClientQuotas and
//! AlterClientQuotas): a tenant reads and sets the quotas of its own users and of their
//! client ids, and nothing else, whatever entities and filters it sends.

use kwire::filter::{FilterChain, Tenant, Verdict};
use kwire::messages::alter_client_quotas::{
    AlterClientQuotasRequestEntityData, AlterClientQuotasRequestEntryData,
    AlterClientQuotasResponseEntityData, AlterClientQuotasResponseEntryData, OpData,
};
use kwire::messages::describe_client_quotas::{ComponentData, EntityData, EntryData, ValueData};
use kwire::messages::*;
use kwire::{AnyBody, ApiKey};

fn chain(tenant: Tenant) -> FilterChain {
    let mut chain = FilterChain::new();
    chain.push(tenant);
    chain
}

fn alice_tenant() -> Tenant {
    Tenant::new("tenant-a.").with_users(|u| u == "alice" || u == "alice-batch")
}

fn request_frame(body: &impl AnyBody, version: i16) -> Vec<u8> {
    let mut out = vec![0u8; 4096];
    let n = kwire::dispatch::encode_request(body, version, 7, Some("app"), &mut out).unwrap();
    out.truncate(n);
    out.drain(..4);
    out
}

fn response_frame(body: &impl AnyBody, version: i16) -> Vec<u8> {
    let n = kwire::dispatch::response_len(body, version).unwrap();
    let mut out = vec![0u8; n];
    kwire::dispatch::encode_response(body, version, 7, &mut out).unwrap();
    out.drain(..4);
    out
}

type Entity = Vec<(&'static str, Option<&'static str>)>;

/// An entity as the broker or the client gets it.
type Owned = Vec<(String, Option<String>)>;

fn alter_entry(entity: &Entity) -> AlterClientQuotasRequestEntryData<'static> {
    let parts: Vec<_> = entity
        .iter()
        .map(|(t, n)| AlterClientQuotasRequestEntityData {
            entity_type: (*t).into(),
            entity_name: n.map(Into::into),
            ..Default::default()
        })
        .collect();
    let ops = vec![OpData { key: "producer_byte_rate".into(), value: 1024.0, ..Default::default() }];
    AlterClientQuotasRequestEntryData { entity: parts.into(), ops: ops.into(), ..Default::default() }
}

/// The entities of an AlterClientQuotas request as the broker gets it.
fn sent_entities(frame: &[u8]) -> Vec<Owned> {
    let parsed = kwire::dispatch::parse_request(frame).unwrap();
    let RequestBody::AlterClientQuotas(r) = RequestBody::from(parsed.body) else { panic!("not alter") };
    r.entries
        .iter()
        .map(|e| {
            e.entity
                .iter()
                .map(|c| (c.entity_type.to_string(), c.entity_name.as_ref().map(|n| n.to_string())))
                .collect()
        })
        .collect()
}

fn owned(e: &Entity) -> Owned {
    e.iter().map(|(t, n)| (t.to_string(), n.map(str::to_string))).collect()
}

/// Another tenant's user, a client id alone, the default user or client id alone, an IP,
/// an unknown entity type, a type twice, an empty entity: none reaches the broker; each
/// comes back in its place with Kafka's error for it, and with its entity, which clients
/// match answers by.
#[test]
fn alter_sets_only_the_tenants_users_quotas() {
    let entities: Vec<(Entity, i16)> = vec![
        (vec![("user", Some("alice"))], 0),
        (vec![("user", Some("bob"))], 31),
        (vec![("client-id", Some("app"))], 31),
        (vec![("user", Some("alice-batch")), ("client-id", Some("app"))], 0),
        (vec![("client-id", None)], 31),
        (vec![("user", None)], 31),
        (vec![("user", None), ("client-id", Some("app"))], 31),
        (vec![("user", Some("alice")), ("client-id", None)], 0),
        (vec![("ip", Some("10.0.0.1"))], 31),
        (vec![("user", Some("alice")), ("ip", Some("10.0.0.1"))], 31),
        (vec![("user", Some("alice")), ("user", Some("bob"))], 42),
        (vec![("client-id", Some("app")), ("user", Some("alice")), ("client-id", Some("x"))], 42),
        (vec![("user", Some("alice")), ("group", Some("g"))], 42),
        (vec![], 42),
        (vec![("user", Some("tenant-a.alice"))], 31),
    ];
    for version in 0..=1 {
        let entries: Vec<_> = entities.iter().map(|(e, _)| alter_entry(e)).collect();
        let request = AlterClientQuotasRequest { entries: entries.into(), ..Default::default() };
        let mut chain = chain(alice_tenant());
        let Verdict::Replace(sent) = chain.on_request(&request_frame(&request, version)) else {
            panic!("rewritten")
        };
        let allowed: Vec<_> = entities.iter().filter(|(_, code)| *code == 0).map(|(e, _)| owned(e)).collect();
        assert_eq!(sent_entities(&sent), allowed, "v{version}");

        // The broker answers what it got, in an order of its own.
        let answered: Vec<_> = allowed
            .iter()
            .rev()
            .map(|e| AlterClientQuotasResponseEntryData {
                entity: e
                    .iter()
                    .map(|(t, n)| AlterClientQuotasResponseEntityData {
                        entity_type: t.clone().into(),
                        entity_name: n.clone().map(Into::into),
                        ..Default::default()
                    })
                    .collect::<Vec<_>>()
                    .into(),
                ..Default::default()
            })
            .collect();
        let response = AlterClientQuotasResponse { entries: answered.into(), ..Default::default() };
        let Verdict::Replace(got) =
            chain.on_response(&response_frame(&response, version), ApiKey::AlterClientQuotas, version)
        else {
            panic!("rewritten")
        };
        let parsed = kwire::dispatch::parse_response(&got, ApiKey::AlterClientQuotas, version).unwrap();
        let ResponseBody::AlterClientQuotas(r) = ResponseBody::from(parsed.body) else { panic!() };
        let mut got: Vec<(Owned, i16)> = r
            .entries
            .iter()
            .map(|e| {
                let entity = e
                    .entity
                    .iter()
                    .map(|c| (c.entity_type.to_string(), c.entity_name.as_ref().map(|n| n.to_string())))
                    .collect();
                (entity, e.error_code)
            })
            .collect();
        let mut want: Vec<_> = entities.iter().map(|(e, code)| (owned(e), *code)).collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "v{version}");
    }
}

/// A tenant without users (an SNI tenant, or `Tenant::new` alone) sets no quotas.
#[test]
fn a_tenant_without_users_has_no_quotas() {
    let entries = vec![alter_entry(&vec![("user", Some("alice"))])];
    let request = AlterClientQuotasRequest { entries: entries.into(), ..Default::default() };
    let Verdict::Replace(sent) = chain(Tenant::new("tenant-a.")).on_request(&request_frame(&request, 1))
    else {
        panic!("rewritten")
    };
    assert!(sent_entities(&sent).is_empty());
}

fn component(ty: &'static str, match_type: i8, name: Option<&'static str>) -> ComponentData<'static> {
    ComponentData { entity_type: ty.into(), match_type, r#match: name.map(Into::into), ..Default::default() }
}

fn entry(entity: &Entity) -> EntryData<'static> {
    let parts: Vec<_> = entity
        .iter()
        .map(|(t, n)| EntityData {
            entity_type: (*t).into(),
            entity_name: n.map(Into::into),
            ..Default::default()
        })
        .collect();
    let values = vec![ValueData { key: "consumer_byte_rate".into(), value: 2048.0, ..Default::default() }];
    EntryData { entity: parts.into(), values: values.into(), ..Default::default() }
}

/// Whatever the filter (another tenant's client id, the default user, any user, a match
/// type or entity type Kafka does not know), the answer shows only the tenant's users'
/// entities; the broker's error answers pass as they are.
#[test]
fn describe_shows_only_the_tenants_users_quotas() {
    let filters = [
        vec![component("client-id", 0, Some("app"))],
        vec![component("user", 1, None)],
        vec![component("user", 2, None)],
        vec![component("user", 0, Some("bob"))],
        vec![component("user", 7, Some("a.*"))],
        vec![component("group", 0, Some("g"))],
        vec![],
    ];
    let everything: Vec<Entity> = vec![
        vec![("user", Some("alice"))],
        vec![("user", Some("alice")), ("client-id", Some("app"))],
        vec![("user", Some("alice")), ("client-id", None)],
        vec![("user", Some("bob"))],
        vec![("user", Some("bob")), ("client-id", Some("app"))],
        vec![("client-id", Some("app"))],
        vec![("client-id", None)],
        vec![("user", None)],
        vec![("user", None), ("client-id", Some("app"))],
        vec![("ip", Some("10.0.0.1"))],
        vec![("user", Some("alice")), ("ip", Some("10.0.0.1"))],
        vec![("user", Some("alice")), ("user", Some("bob"))],
        vec![("user", Some("alice")), ("shadow", Some("x"))],
    ];
    let mine = &everything[..3];
    for version in 0..=1 {
        for components in &filters {
            let request = DescribeClientQuotasRequest {
                components: components.clone().into(),
                strict: false,
                ..Default::default()
            };
            let frame = request_frame(&request, version);
            let mut chain = chain(alice_tenant());
            let sent = match chain.on_request(&frame) {
                Verdict::Replace(sent) => sent,
                Verdict::Forward => frame.clone(),
                other => panic!("{other:?}"),
            };
            // The filter goes on as the tenant sent it (it only reads).
            assert_eq!(sent, frame, "v{version} {components:?}");
            // A broker that answers every entity it has, whatever the filter.
            let entries: Vec<_> = everything.iter().map(entry).collect();
            let response =
                DescribeClientQuotasResponse { entries: Some(entries.into()), ..Default::default() };
            let Verdict::Replace(got) =
                chain.on_response(&response_frame(&response, version), ApiKey::DescribeClientQuotas, version)
            else {
                panic!("rewritten")
            };
            let parsed =
                kwire::dispatch::parse_response(&got, ApiKey::DescribeClientQuotas, version).unwrap();
            let ResponseBody::DescribeClientQuotas(r) = ResponseBody::from(parsed.body) else { panic!() };
            let shown: Vec<_> = r
                .entries
                .unwrap()
                .iter()
                .map(|e| {
                    assert_eq!(e.values.len(), 1);
                    e.entity
                        .iter()
                        .map(|c| (c.entity_type.to_string(), c.entity_name.as_ref().map(|n| n.to_string())))
                        .collect::<Vec<_>>()
                })
                .collect();
            let want: Vec<_> = mine.iter().map(owned).collect();
            assert_eq!(shown, want, "v{version} {components:?}");
        }
    }
    // An error answer (no entries) passes with its error.
    let request = DescribeClientQuotasRequest::default();
    let mut chain = chain(alice_tenant());
    assert!(!matches!(chain.on_request(&request_frame(&request, 1)), Verdict::Close(_)));
    let response = DescribeClientQuotasResponse {
        error_code: 31,
        error_message: Some("Cluster authorization failed.".into()),
        entries: None,
        ..Default::default()
    };
    let Verdict::Replace(got) =
        chain.on_response(&response_frame(&response, 1), ApiKey::DescribeClientQuotas, 1)
    else {
        panic!("rewritten")
    };
    let parsed = kwire::dispatch::parse_response(&got, ApiKey::DescribeClientQuotas, 1).unwrap();
    let ResponseBody::DescribeClientQuotas(r) = ResponseBody::from(parsed.body) else { panic!() };
    assert_eq!((r.error_code, r.entries.is_none()), (31, true));
}
