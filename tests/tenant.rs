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
use kwire::filter::{FilterChain, Refusals, Tenant, Verdict};
use kwire::messages::api_versions::ApiVersion;
use kwire::messages::find_coordinator::Coordinator;
use kwire::messages::list_groups::ListedGroup;
use kwire::messages::metadata::MetadataResponseTopic;
use kwire::messages::*;
use kwire::reflect::walk::{Field, Scalar, Visitor};
use kwire::reflect::{self, Encoding, Entity, FieldType, StructValue, Value, entities};
use kwire::testing::AsVersion;
use kwire::types::Uuid;
use kwire::{AnyBody, ApiKey, Str};

const PREFIX: &str = "tenant-a.";

/// The config and ACL APIs, whose resources carry no entity marks.
const ADMIN: [ApiKey; 6] = [
    ApiKey::DescribeConfigs,
    ApiKey::AlterConfigs,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::DescribeAcls,
    ApiKey::CreateAcls,
    ApiKey::DeleteAcls,
];

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

/// Whether a field holds a topic id (every `uuid` named `TopicId` in Kafka's schemas).
fn is_topic_id(field: &reflect::FieldSchema) -> bool {
    matches!(field.ty, FieldType::Uuid) && field.name == "TopicId"
}

/// The topic ids of a request body (or of a response body, `request` false), in order.
fn ids_of(key: ApiKey, version: i16, body: &[u8], request: bool) -> Vec<Uuid> {
    struct Ids(Vec<Uuid>);
    impl<'a> Visitor<'a> for Ids {
        fn value(&mut self, field: &Field<'_>, value: Scalar<'a>) {
            if let Scalar::Uuid(id) = value
                && is_topic_id(field.schema)
            {
                self.0.push(id);
            }
        }
    }
    let schema = if request { reflect::request_schema(key) } else { reflect::response_schema(key) };
    let mut ids = Ids(Vec::new());
    reflect::walk::walk_body(schema, version, body, 0, &mut ids).unwrap();
    ids.0
}

fn ids_in(key: ApiKey, version: i16, body: &[u8]) -> Vec<Uuid> {
    ids_of(key, version, body, true)
}

/// Sets the topic ids of a decoded body in order, from `next`.
fn set_ids(s: &mut StructValue, version: i16, next: &mut dyn FnMut(Uuid) -> Uuid) {
    fn value(v: &mut Value, id_field: bool, version: i16, next: &mut dyn FnMut(Uuid) -> Uuid) {
        match v {
            Value::Uuid(id) if id_field => *id = next(*id),
            Value::Array(items) => items.iter_mut().for_each(|v| value(v, id_field, version, next)),
            Value::Struct(inner) => set_ids(inner, version, next),
            _ => {}
        }
    }
    for i in 0..s.schema.fields.len() {
        let field = &s.schema.fields[i];
        if !field.versions.contains(version) {
            continue;
        }
        if let Some(Some(v)) = s.fields.get_mut(i) {
            value(v, is_topic_id(field), version, next);
        }
    }
}

/// A body with its topic ids mapped by `next`, in order.
fn map_ids(
    key: ApiKey,
    version: i16,
    body: &[u8],
    request: bool,
    next: &mut dyn FnMut(Uuid) -> Uuid,
) -> Vec<u8> {
    let schema = if request { reflect::request_schema(key) } else { reflect::response_schema(key) };
    let mut value = StructValue::decode_body(schema, version, body).unwrap();
    set_ids(&mut value, version, next);
    value.to_bytes(Encoding::body(schema, version)).unwrap()
}

/// A request body with these topic ids, in order.
fn with_ids(key: ApiKey, version: i16, body: &[u8], ids: &[Uuid]) -> Vec<u8> {
    let mut ids = ids.iter();
    map_ids(key, version, body, true, &mut |_| *ids.next().unwrap())
}

#[test]
fn every_request_gets_its_entities_prefixed_and_nothing_else() {
    let mut rng = XorShift(0x7e4a_0001);
    let mut prefixed = 0;
    for &key in ApiKey::ALL {
        if key == ApiKey::FindCoordinator {
            continue; // keys without marks: find_coordinator_keys_by_version
        }
        if ADMIN.contains(&key) {
            continue; // resources without marks: configs_and_acls_*
        }
        if matches!(key, ApiKey::DescribeClientQuotas | ApiKey::AlterClientQuotas) {
            continue; // entities of users: tests/tenant_quotas.rs
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
                let mut frame = request_frame(&value, version);
                let mut original = body_of(&frame, key, version, true);
                if Refusals::supports(key, version) && !ids_in(key, version, &original).is_empty() {
                    // Topics named by ids this tenant has not seen would be refused in
                    // part (tests/tenant_refuse.rs, and the test of topic ids below): the
                    // topics are named by name here.
                    let by_name = map_ids(key, version, &original, true, &mut |_| Uuid::ZERO);
                    frame = rebody(&frame, original.len(), &by_name);
                    original = by_name;
                }
                let verdict = chain(Tenant::new(PREFIX)).on_request(&frame);
                // A tenant borrowing tails sends the same bytes, as a new head and the
                // frame's own tail.
                let split = chain(Tenant::new(PREFIX).borrowing_tails()).on_request(&frame);
                match (&verdict, split) {
                    (Verdict::Replace(new), Verdict::Splice { head, tail }) => {
                        assert_eq!([&head[..], &frame[tail..]].concat(), *new, "{} v{version}", key.name());
                    }
                    (Verdict::Replace(new), Verdict::Replace(split)) => {
                        assert_eq!(split, *new, "{} v{version}", key.name())
                    }
                    (Verdict::Close(_), Verdict::Close(_)) => {}
                    (v, split) => assert_eq!(split, *v, "{} v{version}", key.name()),
                }
                let sent = match verdict {
                    Verdict::Forward => frame.clone(),
                    Verdict::Replace(new) => new,
                    // A refused API, or a name the prefix pushes past what a string holds.
                    Verdict::Close(_) => continue,
                    other => panic!("{} v{version}: {other:?}", key.name()),
                };
                let sent = body_of(&sent, key, version, true);
                // Every topic id the client named is one this tenant has not seen: it goes
                // as a stand-in (the all-zero id, which names no topic, as it is); with the
                // client's ids put back, the body is the client's but for its names.
                let (client_ids, sent_ids) = (ids_in(key, version, &original), ids_in(key, version, &sent));
                assert_eq!(client_ids.len(), sent_ids.len(), "{} v{version}", key.name());
                for (c, s) in client_ids.iter().zip(&sent_ids) {
                    assert_eq!(*c == Uuid::ZERO, c == s, "{} v{version}: {c:?} sent as {s:?}", key.name());
                    assert!(*c == Uuid::ZERO || *s != Uuid::ZERO, "{} v{version}", key.name());
                }
                let sent = with_ids(key, version, &sent, &client_ids);
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

/// A Produce request whose topics carry records, at every version a tenant splices: the
/// tenant that borrows tails sends a new head and the request's own bytes after its last
/// topic name (its records), and the two are byte for byte the request decoded, renamed
/// and encoded again, as the tenant that copies the frame sends it.
#[test]
fn a_renamed_produce_request_goes_as_a_new_head_and_its_own_records() {
    use kwire::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
    use kwire::records::{BatchBuilder, NewRecord};
    let values: Vec<Vec<u8>> = (0..50).map(|i| format!("value-{i}-{}", "x".repeat(i)).into_bytes()).collect();
    let new: Vec<NewRecord<'_>> = values
        .iter()
        .map(|v| NewRecord { key: Some(b"k"), value: Some(v), headers: &[], timestamp: None })
        .collect();
    let mut batch = Vec::new();
    BatchBuilder::new(0, 1_700_000_000_000, &new).encode_to_vec(&mut batch).unwrap();
    let parts = |n: i32| -> Vec<PartitionProduceData<'_>> {
        (0..n)
            .map(|i| PartitionProduceData { index: i, records: Some(batch[..].into()), ..Default::default() })
            .collect()
    };
    let (one, two) = (parts(1), parts(2));
    for names in [&["orders"][..], &["orders", "payments-eu"][..]] {
        let topics: Vec<TopicProduceData<'_>> = names
            .iter()
            .enumerate()
            .map(|(i, n)| TopicProduceData {
                name: (*n).into(),
                partition_data: (if i == 0 { &one } else { &two }).as_slice().into(),
                ..Default::default()
            })
            .collect();
        let request = ProduceRequest {
            transactional_id: Some("tx-1".into()),
            acks: -1,
            timeout_ms: 5000,
            topic_data: topics.as_slice().into(),
            ..Default::default()
        };
        // The rename on the value tree: every topic name and the transactional id prefixed.
        let renamed_topics: Vec<TopicProduceData<'_>> = topics
            .iter()
            .map(|t| TopicProduceData { name: format!("{PREFIX}{}", t.name.as_ref()).into(), ..t.clone() })
            .collect();
        let renamed = ProduceRequest {
            transactional_id: Some(format!("{PREFIX}tx-1").into()),
            topic_data: renamed_topics.as_slice().into(),
            ..request.clone()
        };
        let versions = ApiKey::Produce.request_versions();
        // Produce v13 names topics by id only.
        for version in 3..=versions.max.min(12) {
            let frame = request_frame(&request, version);
            let want = request_frame(&renamed, version);
            let Verdict::Splice { head, tail } =
                chain(Tenant::new(PREFIX).borrowing_tails()).on_request(&frame)
            else {
                panic!("v{version}: not spliced")
            };
            // The tail is the last topic's partitions: their records are not copied.
            let last_batch = frame.len() - batch.len();
            assert!(tail <= last_batch && frame.len() - tail >= batch.len(), "v{version}: tail at {tail}");
            assert!(
                head.len() < frame.len() - batch.len() * names.len() + 64,
                "v{version}: head of {}",
                head.len()
            );
            let sent = [&head[..], &frame[tail..]].concat();
            assert_eq!(sent, want, "v{version}, {names:?}");
            let Verdict::Replace(copied) = chain(Tenant::new(PREFIX)).on_request(&frame) else { panic!() };
            assert_eq!(copied, want, "v{version}");
        }
    }
}

/// A tenant's split frame is joined when another filter reads the request after it, or when
/// the frame it renamed is another filter's rewrite: only the frame as it came has its tail
/// where the chain's caller has it.
#[test]
fn a_split_frame_is_joined_for_other_filters() {
    use kwire::dispatch::Request;
    use kwire::filter::{Filter, RequestAction};
    /// Reads every request; renames the client when asked to.
    struct Look(Option<&'static str>, std::sync::Arc<std::sync::atomic::AtomicUsize>);
    impl Filter for Look {
        fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
            if let Some(topic) = request_topic(request) {
                assert!(topic.starts_with(PREFIX) || self.0.is_some(), "{topic}");
            }
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match self.0 {
                Some(c) => RequestAction::RewriteHeader { client_id: Some(c.into()) },
                None => RequestAction::Pass,
            }
        }
    }
    fn request_topic(request: &Request<'_>) -> Option<String> {
        let RequestBody::DeleteTopics(body) = RequestBody::from(request.body) else { return None };
        body.topic_names.first().map(|t| t.as_ref().to_owned())
    }
    let names = [Str::from("orders")];
    let request = DeleteTopicsRequest { topic_names: (&names[..]).into(), ..Default::default() };
    let frame = request_frame(&request, 4);
    let Verdict::Splice { head, tail } = chain(Tenant::new(PREFIX).borrowing_tails()).on_request(&frame)
    else {
        panic!()
    };
    let split = [&head[..], &frame[tail..]].concat();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // A filter after the tenant reads the joined frame; the verdict is the whole frame.
    let mut after = chain(Tenant::new(PREFIX).borrowing_tails());
    after.push(Look(None, seen.clone()));
    assert_eq!(after.on_request(&frame), Verdict::Replace(split.clone()));
    // A filter before it rewrites the header: the tenant's splice is of that frame, joined.
    let mut before = FilterChain::new();
    before.push(Look(Some("other"), seen.clone())).push(Tenant::new(PREFIX).borrowing_tails());
    let Verdict::Replace(sent) = before.on_request(&frame) else { panic!() };
    let sent = kwire::dispatch::parse_request(&sent).unwrap();
    assert_eq!(sent.header.client_id(), Some("other"));
    assert_eq!(request_topic(&sent).as_deref(), Some("tenant-a.orders"));
    assert_eq!(seen.load(std::sync::atomic::Ordering::Relaxed), 2);
}

#[test]
fn every_response_of_the_tenant_reaches_the_client_as_it_was() {
    let mut rng = XorShift(0x7e4a_0002);
    let (mut unprefixed, mut spliced) = (0, 0);
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
                // A tenant that borrows tails sends the same bytes: a new head, then the
                // answer's own bytes from where it was read.
                let split =
                    chain(Tenant::new(PREFIX).borrowing_tails()).on_response(&broker_frame, key, version);
                let sent = match split {
                    Verdict::Splice { head, tail } => {
                        spliced += 1;
                        assert!(tail <= broker_frame.len(), "{} v{version}: tail at {tail}", key.name());
                        [&head[..], &broker_frame[tail..]].concat()
                    }
                    Verdict::Replace(new) => new,
                    Verdict::Forward => broker_frame.clone(),
                    other => panic!("{} v{version}: {other:?}", key.name()),
                };
                assert_eq!(sent, got, "{} v{version}: split", key.name());
            }
        }
    }
    assert!(unprefixed > 500, "only {unprefixed} responses named an entity");
    assert!(spliced > 300, "only {spliced} responses were spliced");
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
    let request = DescribeUserScramCredentialsRequest::default();
    assert!(matches!(chain(Tenant::new(PREFIX)).on_request(&request_frame(&request, 0)), Verdict::Close(_)));
    // ApiVersions answers leave the refused APIs out.
    let keys = [
        ApiVersion {
            api_key: ApiKey::Metadata.to_i16(),
            min_version: 0,
            max_version: 12,
            ..Default::default()
        },
        ApiVersion {
            api_key: ApiKey::DescribeUserScramCredentials.to_i16(),
            min_version: 0,
            max_version: 0,
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

/// Whether a struct carries a topic id at `version`, at any depth.
fn has_ids(s: &'static reflect::StructSchema, version: i16) -> bool {
    s.fields.iter().filter(|f| f.versions.contains(version)).any(|f| {
        let mut ty = &f.ty;
        while let FieldType::Array(t) = ty {
            ty = t;
        }
        is_topic_id(f) || matches!(ty, FieldType::Struct(inner) if has_ids(inner, version))
    })
}

/// A frame with its body replaced (same header).
fn rebody(frame: &[u8], old_body_len: usize, body: &[u8]) -> Vec<u8> {
    let mut out = frame[..frame.len() - old_body_len].to_vec();
    out.extend_from_slice(body);
    out
}

/// Topic ids, over every API and version whose requests or responses carry them, from the
/// schemas. The tenant has seen a Metadata answer naming its own topic and another
/// tenant's, with their ids. A request naming its own id, the other tenant's, an id it has
/// never seen and the all-zero id sends the broker its own id and the zero id as they are,
/// and a stand-in for each of the others (not zero, not any id named, the same for the same
/// id); where the API and version can be answered in part, the topics named by the others
/// are refused instead (not sent; tests/tenant_refuse.rs checks the answers). An answer
/// that carries the stand-ins gives the client its ids back; an answer that carries the
/// other tenant's id loses every entry that names it.
#[test]
fn every_api_with_topic_ids_lets_only_the_tenants_own_pass() {
    let (own, foreign, unseen) = (Uuid([0x41; 16]), Uuid([0x42; 16]), Uuid([0x43; 16]));
    let tenant = || {
        let mut chain = chain(Tenant::new(PREFIX));
        let topics = [
            MetadataResponseTopic {
                name: Some(Str::from("tenant-a.mine")),
                topic_id: own,
                ..Default::default()
            },
            MetadataResponseTopic {
                name: Some(Str::from("tenant-b.theirs")),
                topic_id: foreign,
                ..Default::default()
            },
        ];
        let response = MetadataResponse { topics: (&topics[..]).into(), ..Default::default() };
        let Verdict::Replace(got) = chain.on_response(&response_frame(&response, 12), ApiKey::Metadata, 12)
        else {
            panic!("rewritten")
        };
        let view = MetadataResponseView::new(&got[4 + 1..], 12).unwrap();
        let seen: Vec<_> =
            view.topics().iter().map(|t| (t.name().unwrap().to_owned(), t.topic_id())).collect();
        assert_eq!(seen, [("mine".to_owned(), own)]);
        chain
    };
    let mut rng = XorShift(0x7e4a_0003);
    let (mut expected, mut covered) = (Vec::new(), Vec::new());
    let (mut expected_answers, mut covered_answers) = (Vec::new(), Vec::new());
    let mut kept = 0;
    for &key in ApiKey::ALL {
        // APIs refused to tenants never reach the filter (apis_not_opened_to_tenants_...).
        if chain(Tenant::new(PREFIX)).served(key).is_none() {
            continue;
        }
        for version in key.request_versions().min..=key.request_versions().max {
            let ver = kwire::types::Ver::new(version, key.flexible_versions().contains(version));
            let in_request = has_ids(reflect::request_schema(key).body, version);
            let in_response = key.response_versions().contains(version)
                && has_ids(reflect::response_schema(key).body, version);
            if in_request {
                expected.push((key, version));
            }
            if in_response {
                expected_answers.push((key, version));
            }
            // Requests.
            let in_part = Refusals::supports(key, version);
            let mut stand_ins: Vec<(Uuid, Uuid)> = Vec::new();
            for _ in 0..400 {
                if !in_request {
                    break;
                }
                let data = rng.bytes(2048);
                let Ok(value) = RequestBody::arbitrary_for(key, &mut Unstructured::new(&data)) else {
                    continue;
                };
                let value = value.as_version(ver);
                if value.encoded_len(version).is_err() {
                    continue;
                }
                let frame = request_frame(&value, version);
                let body = body_of(&frame, key, version, true);
                if ids_in(key, version, &body).len() < 2 {
                    continue;
                }
                let cycle = [foreign, unseen, own, Uuid::ZERO];
                let mut n = 0;
                let named = map_ids(key, version, &body, true, &mut |_| {
                    n += 1;
                    cycle[(n - 1) % 4]
                });
                let client_ids = ids_in(key, version, &named);
                let frame = rebody(&frame, body.len(), &named);
                let sent = match tenant().on_request(&frame) {
                    Verdict::Forward => frame.clone(),
                    Verdict::Replace(new) => new,
                    // A name the prefix pushes past what a string holds.
                    Verdict::Close(_) => continue,
                    // Every topic another tenant's, refused in part: answered at once.
                    Verdict::Respond(_) if in_part => continue,
                    other => panic!("{} v{version}: {other:?}", key.name()),
                };
                let sent_ids = ids_in(key, version, &body_of(&sent, key, version, true));
                if in_part {
                    // Topics named by another tenant's id (or one never seen) are refused
                    // in part (tests/tenant_refuse.rs checks the answers): they are not
                    // sent, and an id elsewhere goes as a stand-in.
                    assert!(sent_ids.len() <= client_ids.len(), "{} v{version}", key.name());
                    for s in &sent_ids {
                        assert!(![foreign, unseen].contains(s), "{} v{version}: {s:?} sent", key.name());
                        kept += usize::from(*s == own || *s == Uuid::ZERO);
                    }
                    covered.push((key, version));
                    break;
                }
                assert_eq!(sent_ids.len(), client_ids.len(), "{} v{version}", key.name());
                for (c, s) in client_ids.iter().zip(&sent_ids) {
                    if *c == own || *c == Uuid::ZERO {
                        assert_eq!(s, c, "{} v{version}: the tenant's own id or zero", key.name());
                        kept += 1;
                        continue;
                    }
                    assert!(
                        ![own, foreign, unseen, Uuid::ZERO].contains(s),
                        "{} v{version}: {c:?} sent as {s:?}",
                        key.name()
                    );
                    match stand_ins.iter().find(|(k, _)| k == c) {
                        Some((_, known)) => {
                            assert_eq!(known, s, "{} v{version}: one stand-in per id", key.name())
                        }
                        None => stand_ins.push((*c, *s)),
                    }
                }
                assert_eq!(stand_ins.len(), 2, "{} v{version}", key.name());
                assert!(stand_ins[0].1 != stand_ins[1].1);
                covered.push((key, version));
                break;
            }
            // Answers, through a tenant that gave these stand-ins.
            for _ in 0..400 {
                if !in_response {
                    break;
                }
                let data = rng.bytes(2048);
                let Ok(value) = ResponseBody::arbitrary_for(key, &mut Unstructured::new(&data)) else {
                    continue;
                };
                let value = value.as_version(ver);
                if value.encoded_len(version).is_err() {
                    continue;
                }
                let frame = response_frame(&value, version);
                let body = body_of(&frame, key, version, false);
                if ids_of(key, version, &body, false).len() < 3 {
                    continue;
                }
                // The broker's names carry the prefix (as the tenant's would).
                let schema = reflect::response_schema(key);
                let Ok(broker_body) = entities::rewrite(schema, version, &body, |e, s| {
                    owned(e).then(|| format!("{PREFIX}{s}"))
                }) else {
                    continue;
                };
                let broker_body = broker_body.unwrap_or(body.clone());
                if !stand_ins.is_empty() && !in_part {
                    let answer_ids = [stand_ins[0].1, stand_ins[1].1, own];
                    let mut n = 0;
                    let answered = map_ids(key, version, &broker_body, false, &mut |_| {
                        n += 1;
                        answer_ids[(n - 1) % 3]
                    });
                    let frame_out = rebody(&frame, body.len(), &answered);
                    // A chain that sent the request (the same ids in the same order, so the
                    // same stand-ins) gives the client its ids back.
                    let asked: Vec<Uuid> = stand_ins.iter().map(|(c, _)| *c).collect();
                    let mut chain = tenant();
                    let request = stand_in_request(key, version, &asked).expect("a request with ids");
                    assert!(matches!(chain.on_request(&request), Verdict::Replace(_)));
                    let got = match chain.on_response(&frame_out, key, version) {
                        Verdict::Forward => frame_out.clone(),
                        Verdict::Replace(new) => new,
                        other => panic!("{} v{version}: {other:?}", key.name()),
                    };
                    let got_ids = ids_of(key, version, &body_of(&got, key, version, false), false);
                    let want: Vec<Uuid> = (0..got_ids.len()).map(|i| [foreign, unseen, own][i % 3]).collect();
                    assert_eq!(got_ids, want, "{} v{version}: the client's ids back", key.name());
                    // A chain that did not send it knows no stand-in: they pass as they are.
                    let fresh = match tenant().on_response(&frame_out, key, version) {
                        Verdict::Forward => frame_out.clone(),
                        Verdict::Replace(new) => new,
                        other => panic!("{} v{version}: {other:?}", key.name()),
                    };
                    let fresh_ids = ids_of(key, version, &body_of(&fresh, key, version, false), false);
                    assert!(
                        !fresh_ids.contains(&foreign) && !fresh_ids.contains(&unseen),
                        "{} v{version}",
                        key.name()
                    );
                }
                // An answer carrying the other tenant's id loses every entry that names it.
                let theirs = map_ids(key, version, &broker_body, false, &mut |_| foreign);
                let frame_theirs = rebody(&frame, body.len(), &theirs);
                let got = match tenant().on_response(&frame_theirs, key, version) {
                    Verdict::Forward => frame_theirs.clone(),
                    Verdict::Replace(new) => new,
                    other => panic!("{} v{version}: {other:?}", key.name()),
                };
                let left = ids_of(key, version, &body_of(&got, key, version, false), false);
                assert!(
                    !left.contains(&foreign),
                    "{} v{version}: the other tenant's id reached the client",
                    key.name()
                );
                covered_answers.push((key, version));
                break;
            }
        }
    }
    let names = |v: &[(ApiKey, i16)]| {
        v.iter().map(|(k, v)| format!("{} v{v}", k.name())).collect::<Vec<_>>().join(", ")
    };
    eprintln!("requests with topic ids: {}", names(&expected));
    eprintln!("answers with topic ids: {}", names(&expected_answers));
    assert_eq!(names(&covered), names(&expected), "every request version with topic ids");
    assert!(!expected.is_empty());
    assert_eq!(names(&covered_answers), names(&expected_answers), "every answer version with topic ids");
    assert!(kept > 10, "only {kept} own or zero ids were named");
}

/// A request of `key` at `version` that names `ids` (each once, first), for a chain to give
/// them stand-ins in the order named; `None` if arbitrary bytes give no such request.
fn stand_in_request(key: ApiKey, version: i16, ids: &[Uuid]) -> Option<Vec<u8>> {
    let mut rng = XorShift(0x7e4a_0004);
    let ver = kwire::types::Ver::new(version, key.flexible_versions().contains(version));
    for _ in 0..400 {
        let data = rng.bytes(2048);
        let Ok(value) = RequestBody::arbitrary_for(key, &mut Unstructured::new(&data)) else { continue };
        let value = value.as_version(ver);
        if value.encoded_len(version).is_err() {
            continue;
        }
        let frame = request_frame(&value, version);
        let body = body_of(&frame, key, version, true);
        if ids_in(key, version, &body).len() < ids.len() {
            continue;
        }
        let mut n = 0;
        let named = map_ids(key, version, &body, true, &mut |_| {
            n += 1;
            ids[(n - 1).min(ids.len() - 1)]
        });
        return Some(rebody(&frame, body.len(), &named));
    }
    None
}

/// Every API is decided for tenants, and an API nobody opened is refused: ListConfigResources
/// (whose answer lists every config resource of the cluster, other tenants' included) and the
/// APIs spoken between brokers close the connection and are left out of ApiVersions answers.
#[test]
fn apis_not_opened_to_tenants_are_refused_and_left_out() {
    let request = ListConfigResourcesRequest::default();
    let Verdict::Close(why) = chain(Tenant::new(PREFIX)).on_request(&request_frame(&request, 1)) else {
        panic!("ListConfigResources must be refused")
    };
    assert!(why.contains("ListConfigResources"), "{why}");
    let keys: Vec<ApiVersion<'_>> = ApiKey::ALL
        .iter()
        .map(|k| ApiVersion {
            api_key: k.to_i16(),
            min_version: k.request_versions().min,
            max_version: k.request_versions().max,
            ..Default::default()
        })
        .collect();
    let response = ApiVersionsResponse { api_keys: (&keys[..]).into(), ..Default::default() };
    let Verdict::Replace(got) =
        chain(Tenant::new(PREFIX)).on_response(&response_frame(&response, 3), ApiKey::ApiVersions, 3)
    else {
        panic!("clamped")
    };
    let view = ApiVersionsResponseView::new(&got[4..], 3).unwrap();
    let listed: Vec<ApiKey> = view.api_keys().iter().filter_map(|k| ApiKey::from_i16(k.api_key())).collect();
    for refused in [
        ApiKey::ListConfigResources,
        ApiKey::DescribeUserScramCredentials,
        ApiKey::WriteTxnMarkers,
        ApiKey::Vote,
        ApiKey::ReadShareGroupState,
        ApiKey::ElectLeaders,
    ] {
        assert!(!listed.contains(&refused), "{refused:?} offered to a tenant");
    }
    for open in
        [ApiKey::Produce, ApiKey::Fetch, ApiKey::Metadata, ApiKey::ShareFetch, ApiKey::StreamsGroupHeartbeat]
    {
        assert!(listed.contains(&open), "{open:?} not offered to a tenant");
    }
    for open in ADMIN.into_iter().chain([ApiKey::DescribeClientQuotas, ApiKey::AlterClientQuotas]) {
        assert!(listed.contains(&open), "{open:?} not offered to a tenant");
    }
    // Between the two lists, every API kwire knows: none is left undecided (the filter's
    // exhaustive match makes an undecided API a compile error).
    assert!(listed.len() > 40 && listed.len() < ApiKey::ALL.len(), "{}", listed.len());
}

/// The (resource type, name) of each resource, creation or filter a config or ACL request
/// body names.
fn admin_resources(key: ApiKey, version: i16, body: &[u8]) -> Vec<(i8, Option<String>)> {
    let v = StructValue::decode_body(reflect::request_schema(key), version, body).unwrap();
    let pair = |s: &StructValue, ty: &str, name: &str| {
        let Some(Value::Int8(t)) = s.get(ty) else { panic!("{} v{version}: no {ty}", key.name()) };
        let name = match s.get(name) {
            Some(Value::String(n)) => Some(n.clone()),
            _ => None,
        };
        (*t, name)
    };
    let items = |field: &str| match v.get(field) {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::Struct(s) => s.clone(),
                _ => panic!("not a struct"),
            })
            .collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    match key {
        ApiKey::CreateAcls => {
            items("Creations").iter().map(|s| pair(s, "ResourceType", "ResourceName")).collect()
        }
        ApiKey::DeleteAcls => {
            items("Filters").iter().map(|s| pair(s, "ResourceTypeFilter", "ResourceNameFilter")).collect()
        }
        ApiKey::DescribeAcls => vec![pair(&v, "ResourceTypeFilter", "ResourceNameFilter")],
        _ => items("Resources").iter().map(|s| pair(s, "ResourceType", "ResourceName")).collect(),
    }
}

/// Arbitrary config and ACL requests, every version: what reaches the broker names only
/// the tenant's resources. Config resources are TOPIC or GROUP ones, prefixed (but the
/// names that pass as they are); ACL bindings and DeleteAcls filters are on TOPIC, GROUP or
/// TRANSACTIONAL_ID resources named in the prefix; DescribeAcls' one filter too, or it has
/// no name (its answer is narrowed instead: `tests/proxy_lib.rs`).
#[test]
fn configs_and_acls_reach_the_broker_only_in_the_prefix() {
    let mut rng = XorShift(0x7e4a_0044);
    let (mut checked, mut named) = (0, 0);
    for key in ADMIN {
        for _ in 0..150 {
            let data = rng.bytes(1024);
            let Ok(value) = RequestBody::arbitrary_for(key, &mut Unstructured::new(&data)) else { continue };
            for version in key.request_versions().min..=key.request_versions().max {
                let value = value
                    .as_version(kwire::types::Ver::new(version, key.flexible_versions().contains(version)));
                if value.encoded_len(version).is_err() {
                    continue;
                }
                let frame = request_frame(&value, version);
                let sent = match chain(Tenant::new(PREFIX)).on_request(&frame) {
                    Verdict::Replace(new) => new,
                    // A name the prefix pushes past what a string holds.
                    Verdict::Close(why) => {
                        assert!(
                            why.contains("too long") || why.contains("long"),
                            "{} v{version}: {why}",
                            key.name()
                        );
                        continue;
                    }
                    other => panic!("{} v{version}: {other:?}", key.name()),
                };
                checked += 1;
                for (ty, name) in admin_resources(key, version, &body_of(&sent, key, version, true)) {
                    let what = format!("{} v{version}: ({ty}, {name:?})", key.name());
                    let configs = matches!(
                        key,
                        ApiKey::DescribeConfigs | ApiKey::AlterConfigs | ApiKey::IncrementalAlterConfigs
                    );
                    if configs {
                        assert!(ty == 2 || ty == 32, "{what}");
                        let n = name.as_deref().unwrap();
                        assert!(
                            n.is_empty() || (ty == 2 && matches!(n, "." | "..")) || n.starts_with(PREFIX),
                            "{what}"
                        );
                    } else if key == ApiKey::DescribeAcls && name.is_none() {
                        assert!(matches!(ty, 1 | 2 | 3 | 5), "{what}");
                    } else {
                        assert!(matches!(ty, 2 | 3 | 5), "{what}");
                        assert!(name.as_deref().unwrap().starts_with(PREFIX), "{what}");
                    }
                    named += 1;
                }
            }
        }
    }
    assert!(checked > 300 && named > 100, "{checked} requests, {named} resources");
}

/// DescribeConfigs through one tenant: a GROUP resource gets the prefix, CLIENT_METRICS is
/// refused in its place; the answer loses the prefix, and an entry the broker adds that is
/// not the tenant's is left out.
#[test]
fn group_configs_are_prefixed_and_client_metrics_refused() {
    use kwire::messages::describe_configs::{DescribeConfigsResource, DescribeConfigsResult};
    let resources = [
        DescribeConfigsResource { resource_type: 32, resource_name: "g".into(), ..Default::default() },
        DescribeConfigsResource { resource_type: 16, resource_name: "m".into(), ..Default::default() },
    ];
    let request = DescribeConfigsRequest { resources: (&resources[..]).into(), ..Default::default() };
    let mut chain = chain(Tenant::new(PREFIX));
    let Verdict::Replace(sent) = chain.on_request(&request_frame(&request, 4)) else { panic!("rewritten") };
    assert_eq!(
        admin_resources(ApiKey::DescribeConfigs, 4, &body_of(&sent, ApiKey::DescribeConfigs, 4, true)),
        [(32, Some("tenant-a.g".to_string()))]
    );
    let result = |name: &'static str| DescribeConfigsResult {
        resource_type: 32,
        resource_name: name.into(),
        error_message: Some(format!("group {name}").into()),
        ..Default::default()
    };
    let results = [result("tenant-a.g"), result("tenant-b.g")];
    let response = DescribeConfigsResponse { results: (&results[..]).into(), ..Default::default() };
    let Verdict::Replace(got) = chain.on_response(&response_frame(&response, 4), ApiKey::DescribeConfigs, 4)
    else {
        panic!("rewritten")
    };
    let view = DescribeConfigsResponseView::new(&got[4 + 1..], 4).unwrap();
    let got: Vec<_> = view
        .results()
        .iter()
        .map(|r| {
            (
                r.resource_type(),
                r.resource_name().to_string(),
                r.error_code(),
                r.error_message().map(str::to_string),
            )
        })
        .collect();
    assert_eq!(
        got,
        [(32, "g".to_string(), 0, Some("group g".to_string())), (16, "m".to_string(), 31, got[1].3.clone()),]
    );
    assert!(got[1].3.as_deref().is_some_and(|m| m.contains("client-metrics")), "{got:?}");
}
