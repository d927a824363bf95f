//! `kwire::filter::Tenant` through a `FilterChain`:
//!
//! - every API and version: arbitrary requests get every owned entity (topic names, group
//!   ids, transactional ids) prefixed and nothing else changed; arbitrary responses whose
//!   entities all carry the prefix come back to the client exactly as the encoder wrote
//!   them before the prefix went on;
//! - listings lose other tenants' entities (Metadata, ListGroups, a Produce answer);
//! - FindCoordinator's keys, which carry no entity mark, by version;
//! - refused APIs close and leave ApiVersions answers; a tenant not yet known closes;
//! - names the prefix pushes past Kafka's limit are sent whole; the topic names `.` and
//!   `..` pass as they are; error messages lose the prefix.

mod common;

use arbitrary::Unstructured;
use common::XorShift;
use kwire::filter::{FilterChain, Tenant, Verdict};
use kwire::messages::api_versions::ApiVersion;
use kwire::messages::find_coordinator::Coordinator;
use kwire::messages::list_groups::ListedGroup;
use kwire::messages::metadata::MetadataResponseTopic;
use kwire::messages::*;
use kwire::reflect::{self, Entity, entities};
use kwire::testing::AsVersion;
use kwire::{AnyBody, ApiKey, Str};

const PREFIX: &str = "tenant-a.";

fn chain(tenant: Tenant) -> FilterChain {
    let mut chain = FilterChain::new();
    chain.push(tenant);
    chain
}

fn request_frame(body: &impl AnyBody, version: i16) -> Vec<u8> {
    let header =
        kwire::frame::RequestHeader { correlation_id: 7, client_id: Some("app"), ..Default::default() };
    let n = kwire::dispatch::request_len(body, version, &header).unwrap();
    let mut out = vec![0u8; n];
    kwire::dispatch::encode_request(body, version, 7, Some("app"), &mut out).unwrap();
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

fn owned(entity: Entity) -> bool {
    matches!(entity, Entity::TopicName | Entity::GroupId | Entity::TransactionalId)
}

/// The body of a request or response frame.
fn body_of(frame: &[u8], key: ApiKey, version: i16, request: bool) -> Vec<u8> {
    if request {
        kwire::dispatch::parse_request(frame).unwrap().body.as_bytes().to_vec()
    } else {
        kwire::dispatch::parse_response(frame, key, version).unwrap().body.as_bytes().to_vec()
    }
}

#[test]
fn every_request_gets_its_entities_prefixed_and_nothing_else() {
    let mut rng = XorShift(0x7e4a_0001);
    let mut prefixed = 0;
    for &key in ApiKey::ALL {
        if key == ApiKey::FindCoordinator {
            continue; // keys without marks: find_coordinator_keys_by_version
        }
        let schema = reflect::request_schema(key);
        for _ in 0..60 {
            let data = rng.bytes(1024);
            let Ok(value) = RequestBody::arbitrary_for(key, &mut Unstructured::new(&data)) else { continue };
            for version in key.request_versions().min..=key.request_versions().max {
                let value = value
                    .as_version(kwire::types::Ver::new(version, key.flexible_versions().contains(version)));
                if value.encoded_len(version).is_err() {
                    continue;
                }
                let frame = request_frame(&value, version);
                let original = body_of(&frame, key, version, true);
                let verdict = chain(Tenant::new(PREFIX)).on_request(&frame);
                let sent = match verdict {
                    Verdict::Forward => frame.clone(),
                    Verdict::Replace(new) => new,
                    // A refused API, or a name the prefix pushes past what a string holds.
                    Verdict::Close(_) => continue,
                    other => panic!("{} v{version}: {other:?}", key.name()),
                };
                let sent = body_of(&sent, key, version, true);
                // Taking the prefix off every owned entity gives back the client's body.
                let back = entities::rewrite(schema, version, &sent, |e, s| {
                    // Empty names, and the topic names "." and "..", pass as they are.
                    if !owned(e) || s.is_empty() || (e == Entity::TopicName && matches!(s, "." | "..")) {
                        return None;
                    }
                    Some(
                        s.strip_prefix(PREFIX)
                            .unwrap_or_else(|| panic!("{} v{version}: {s:?} unprefixed", key.name()))
                            .to_owned(),
                    )
                })
                .unwrap();
                prefixed += usize::from(back.is_some());
                assert_eq!(back.unwrap_or(sent), original, "{} v{version}", key.name());
            }
        }
    }
    assert!(prefixed > 500, "only {prefixed} requests named an entity");
}

#[test]
fn every_response_of_the_tenant_reaches_the_client_as_it_was() {
    let mut rng = XorShift(0x7e4a_0002);
    let mut unprefixed = 0;
    for &key in ApiKey::ALL {
        if key == ApiKey::FindCoordinator {
            continue;
        }
        let schema = reflect::response_schema(key);
        for _ in 0..60 {
            let data = rng.bytes(1024);
            let Ok(value) = ResponseBody::arbitrary_for(key, &mut Unstructured::new(&data)) else { continue };
            for version in key.response_versions().min..=key.response_versions().max {
                let value = value
                    .as_version(kwire::types::Ver::new(version, key.flexible_versions().contains(version)));
                if value.encoded_len(version).is_err() {
                    continue;
                }
                let frame = response_frame(&value, version);
                let header_len = frame.len() - body_of(&frame, key, version, false).len();
                let original = frame[header_len..].to_vec();
                // What the broker holds: every owned entity with the tenant's prefix.
                let Ok(Some(broker_body)) = entities::rewrite(schema, version, &original, |e, s| {
                    owned(e).then(|| format!("{PREFIX}{s}"))
                }) else {
                    continue;
                };
                let mut broker_frame = frame[..header_len].to_vec();
                broker_frame.extend_from_slice(&broker_body);
                let got = match chain(Tenant::new(PREFIX)).on_response(&broker_frame, key, version) {
                    Verdict::Replace(new) => new,
                    Verdict::Forward => broker_frame.clone(),
                    other => panic!("{} v{version}: {other:?}", key.name()),
                };
                unprefixed += 1;
                assert_eq!(&got[header_len..], &original[..], "{} v{version}", key.name());
            }
        }
    }
    assert!(unprefixed > 500, "only {unprefixed} responses named an entity");
}

#[test]
fn listings_show_only_the_tenants_own() {
    let topic =
        |name: &'static str| MetadataResponseTopic { name: Some(Str::from(name)), ..Default::default() };
    let topics = [
        topic("tenant-a.orders"),
        topic("tenant-b.orders"),
        topic("__consumer_offsets"),
        topic("tenant-a.pay"),
    ];
    let response = MetadataResponse { topics: (&topics[..]).into(), ..Default::default() };
    let Verdict::Replace(got) =
        chain(Tenant::new(PREFIX)).on_response(&response_frame(&response, 12), ApiKey::Metadata, 12)
    else {
        panic!("rewritten")
    };
    let view = MetadataResponseView::new(&got[4 + 1..], 12).unwrap();
    let names: Vec<_> = view.topics().iter().map(|t| t.name().unwrap().to_owned()).collect();
    assert_eq!(names, ["orders", "pay"]);

    let group = |id: &'static str| ListedGroup { group_id: Str::from(id), ..Default::default() };
    let groups = [group("tenant-b.g"), group("tenant-a.g"), group("plain")];
    let response = ListGroupsResponse { groups: (&groups[..]).into(), ..Default::default() };
    let Verdict::Replace(got) =
        chain(Tenant::new(PREFIX)).on_response(&response_frame(&response, 5), ApiKey::ListGroups, 5)
    else {
        panic!("rewritten")
    };
    let view = ListGroupsResponseView::new(&got[4 + 1..], 5).unwrap();
    let ids: Vec<_> = view.groups().iter().map(|g| g.group_id().to_owned()).collect();
    assert_eq!(ids, ["g"]);
}

#[test]
fn find_coordinator_keys_by_version() {
    // v3: one key, in `Key`.
    let request = FindCoordinatorRequest { key: Str::from("g1"), key_type: 0, ..Default::default() };
    let Verdict::Replace(sent) = chain(Tenant::new(PREFIX)).on_request(&request_frame(&request, 3)) else {
        panic!()
    };
    let RequestBody::FindCoordinator(sent) =
        RequestBody::from(kwire::dispatch::parse_request(&sent).unwrap().body)
    else {
        unreachable!()
    };
    assert_eq!(sent.key.as_ref(), "tenant-a.g1");
    // v4+: several, in `CoordinatorKeys`, and the answer names them back.
    let keys = [Str::from("txn-1"), Str::from("txn-2")];
    let request =
        FindCoordinatorRequest { key_type: 1, coordinator_keys: (&keys[..]).into(), ..Default::default() };
    let Verdict::Replace(sent) = chain(Tenant::new(PREFIX)).on_request(&request_frame(&request, 6)) else {
        panic!()
    };
    let RequestBody::FindCoordinator(sent) =
        RequestBody::from(kwire::dispatch::parse_request(&sent).unwrap().body)
    else {
        unreachable!()
    };
    let sent: Vec<_> = sent.coordinator_keys.iter().map(|k| k.as_ref().to_owned()).collect();
    assert_eq!(sent, ["tenant-a.txn-1", "tenant-a.txn-2"]);
    let coordinator =
        |key: &'static str| Coordinator { key: Str::from(key), node_id: 1, ..Default::default() };
    let coordinators = [coordinator("tenant-a.txn-1"), coordinator("tenant-a.txn-2")];
    let response = FindCoordinatorResponse { coordinators: (&coordinators[..]).into(), ..Default::default() };
    let Verdict::Replace(got) =
        chain(Tenant::new(PREFIX)).on_response(&response_frame(&response, 6), ApiKey::FindCoordinator, 6)
    else {
        panic!()
    };
    let view = FindCoordinatorResponseView::new(&got[4 + 1..], 6).unwrap();
    let keys: Vec<_> = view.coordinators().iter().map(|c| c.key().to_owned()).collect();
    assert_eq!(keys, ["txn-1", "txn-2"]);
}

#[test]
fn refused_apis_and_unknown_tenants() {
    let request = DescribeConfigsRequest::default();
    assert!(matches!(chain(Tenant::new(PREFIX)).on_request(&request_frame(&request, 4)), Verdict::Close(_)));
    // ApiVersions answers leave the refused APIs out.
    let keys = [
        ApiVersion {
            api_key: ApiKey::Metadata.to_i16(),
            min_version: 0,
            max_version: 12,
            ..Default::default()
        },
        ApiVersion {
            api_key: ApiKey::DescribeConfigs.to_i16(),
            min_version: 0,
            max_version: 4,
            ..Default::default()
        },
    ];
    let response = ApiVersionsResponse { api_keys: (&keys[..]).into(), ..Default::default() };
    let Verdict::Replace(got) =
        chain(Tenant::new(PREFIX)).on_response(&response_frame(&response, 3), ApiKey::ApiVersions, 3)
    else {
        panic!("clamped")
    };
    let view = ApiVersionsResponseView::new(&got[4..], 3).unwrap();
    let listed: Vec<i16> = view.api_keys().iter().map(|k| k.api_key()).collect();
    assert_eq!(listed, [ApiKey::Metadata.to_i16()]);

    // Until the tenant is known, a request naming a topic closes; then it is prefixed.
    let known = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let asked = known.clone();
    let mut chain = chain(Tenant::when_known(move || asked.lock().unwrap().clone()));
    let names = [Str::from("orders")];
    let request = DeleteTopicsRequest { topic_names: (&names[..]).into(), ..Default::default() };
    assert!(matches!(chain.on_request(&request_frame(&request, 3)), Verdict::Close(_)));
    *known.lock().unwrap() = Some("tenant-c.".into());
    let Verdict::Replace(sent) = chain.on_request(&request_frame(&request, 3)) else { panic!() };
    let RequestBody::DeleteTopics(sent) =
        RequestBody::from(kwire::dispatch::parse_request(&sent).unwrap().body)
    else {
        unreachable!()
    };
    assert_eq!(sent.topic_names[0].as_ref(), "tenant-c.orders");
    // ApiVersions requests, which name nothing, pass untouched.
    assert_eq!(chain.on_request(&request_frame(&ApiVersionsRequest::default(), 3)), Verdict::Forward);
}

/// A request kwire cannot read could name anything, unprefixed: a tenant's chain closes
/// instead of forwarding it; a chain without a tenant forwards it as before.
#[test]
fn unreadable_requests_do_not_pass_a_tenant() {
    // Metadata at a version kwire does not read, and an API key it does not know.
    let mut frame = request_frame(&MetadataRequest::default(), 12);
    frame[2..4].copy_from_slice(&99i16.to_be_bytes());
    let mut unknown = frame.clone();
    unknown[0..2].copy_from_slice(&999i16.to_be_bytes());
    for f in [&frame, &unknown] {
        assert!(matches!(chain(Tenant::new(PREFIX)).on_request(f), Verdict::Close(_)));
        assert_eq!(FilterChain::new().on_request(f), Verdict::Forward);
    }
}

/// The names a tenant's topics cannot have: one the prefix pushes past Kafka's 249 bytes is
/// sent whole (the broker refuses it as Kafka refuses a name past the limit; never
/// truncated); one past what a string holds closes the connection; `.` and `..`, which Kafka
/// refuses but which would be valid once prefixed, are sent as they are (a group may be
/// named `.`: it is prefixed). Answers: the topics `.` and `..` are kept, the group `.` of
/// no tenant is left out, and error messages lose the prefix from the names they quote.
#[test]
fn names_kafka_refuses_stay_refused() {
    let sent_topics = |names: &[&str], version: i16| -> Option<Vec<String>> {
        let topics: Vec<_> = names
            .iter()
            .map(|&n| create_topics::CreatableTopic { name: Str::from(n), ..Default::default() })
            .collect();
        let request = CreateTopicsRequest { topics: (&topics[..]).into(), ..Default::default() };
        let sent = match chain(Tenant::new(PREFIX)).on_request(&request_frame(&request, version)) {
            Verdict::Replace(sent) => sent,
            Verdict::Forward => request_frame(&request, version),
            Verdict::Close(_) => return None,
            other => panic!("{other:?}"),
        };
        let RequestBody::CreateTopics(sent) =
            RequestBody::from(kwire::dispatch::parse_request(&sent).unwrap().body)
        else {
            unreachable!()
        };
        Some(sent.topics.iter().map(|t| t.name.as_ref().to_owned()).collect())
    };
    let long = "x".repeat(245);
    assert_eq!(sent_topics(&[&long], 7).unwrap(), [format!("{PREFIX}{long}")]);
    assert_eq!(sent_topics(&[&long], 7).unwrap()[0].len(), 254);
    assert_eq!(sent_topics(&[".", "..", "a"], 7).unwrap(), [".", "..", "tenant-a.a"]);
    assert_eq!(sent_topics(&[".", ".."], 7).unwrap(), [".", ".."]);
    let huge = "y".repeat(0x7fff - 3);
    assert_eq!(sent_topics(&[&huge], 4), None, "past a string's 32767 bytes: closed");

    let groups = [Str::from("."), Str::from("..")];
    let request = DeleteGroupsRequest { groups_names: (&groups[..]).into(), ..Default::default() };
    let Verdict::Replace(sent) = chain(Tenant::new(PREFIX)).on_request(&request_frame(&request, 2)) else {
        panic!("groups are prefixed")
    };
    let RequestBody::DeleteGroups(sent) =
        RequestBody::from(kwire::dispatch::parse_request(&sent).unwrap().body)
    else {
        unreachable!()
    };
    let sent: Vec<_> = sent.groups_names.iter().map(|g| g.as_ref().to_owned()).collect();
    assert_eq!(sent, ["tenant-a..", "tenant-a..."]);

    // Answers.
    let result = |name: &'static str, message: &'static str| create_topics::CreatableTopicResult {
        name: Str::from(name),
        error_code: 17,
        error_message: Some(Str::from(message)),
        ..Default::default()
    };
    let results = [
        result(
            "tenant-a.orders",
            "the length of 'tenant-a.orders' is longer than the max allowed length 249",
        ),
        result(".", "Topic name is invalid: '.' is not allowed"),
        result("tenant-a.x", "tenant-a.x, then 'tenant-b.tenant-a.x' and tenant-a.tenant-a.x"),
        result("tenant-b.y", "tenant-b.y"),
    ];
    let response = CreateTopicsResponse { topics: (&results[..]).into(), ..Default::default() };
    let Verdict::Replace(got) =
        chain(Tenant::new(PREFIX)).on_response(&response_frame(&response, 7), ApiKey::CreateTopics, 7)
    else {
        panic!("rewritten")
    };
    let view = CreateTopicsResponseView::new(&got[4 + 1..], 7).unwrap();
    let got: Vec<_> =
        view.topics().iter().map(|t| (t.name().to_owned(), t.error_message().unwrap().to_owned())).collect();
    let expected = [
        ("orders", "the length of 'orders' is longer than the max allowed length 249"),
        (".", "Topic name is invalid: '.' is not allowed"),
        ("x", "x, then 'tenant-b.tenant-a.x' and tenant-a.x"),
    ];
    assert_eq!(got, expected.map(|(n, m)| (n.to_owned(), m.to_owned())));

    let listed = [
        ListedGroup { group_id: Str::from("."), ..Default::default() },
        ListedGroup { group_id: Str::from("tenant-a.."), ..Default::default() },
    ];
    let response = ListGroupsResponse { groups: (&listed[..]).into(), ..Default::default() };
    let Verdict::Replace(got) =
        chain(Tenant::new(PREFIX)).on_response(&response_frame(&response, 5), ApiKey::ListGroups, 5)
    else {
        panic!("rewritten")
    };
    let view = ListGroupsResponseView::new(&got[4 + 1..], 5).unwrap();
    let ids: Vec<_> = view.groups().iter().map(|g| g.group_id().to_owned()).collect();
    assert_eq!(ids, ["."], "the group \".\" of no tenant is left out; the tenant's \".\" is listed");
}

/// Prefixes that overlap (one starts with another, or they differ only in `.` against `_`,
/// which Kafka takes for the same in topic names) are refused: tenant `a.` would otherwise
/// see and name tenant `a.b.`'s topics (`a.` + `b.x` is `a.b.` + `x`). One prefix may serve
/// several principals and SNI names.
#[cfg(feature = "proxy")]
#[test]
fn overlapping_prefixes_are_refused() {
    use kwire::proxy::{TenantError, Tenants};
    let mut tenants = Tenants::new();
    tenants.principal("alice", "tenant-a.").unwrap();
    tenants.sni("a.example.com", "tenant-a.").unwrap();
    tenants.principal("bob", "tenant-b.").unwrap();
    for (who, prefix) in
        [("carol", "tenant-a.eu."), ("dave", "tenant-"), ("erin", "tenant-b_eu."), ("frank", "tenant-b_")]
    {
        let refused = tenants.principal(who, prefix).unwrap_err();
        assert!(matches!(refused, TenantError::Overlaps(_)), "{prefix}: {refused}");
        assert!(refused.to_string().contains("overlaps"), "{refused}");
    }
    assert!(matches!(tenants.sni("c.example.com", "tenant-a.x."), Err(TenantError::Overlaps(_))));
    assert!(matches!(tenants.default_tenant("tenant"), Err(TenantError::Overlaps(_))));
    tenants.default_tenant("tenant-c.").unwrap();
    tenants.principal("carol", "tenant-ab.").unwrap();
}
