//! Partial answers from the schemas: for every API and version that may be answered in
//! part (but Produce and Fetch, typed in `partial_answers.rs` and `partial_fetch.rs`), a
//! request of two topics (two groups of two where topics sit in groups) of two partitions
//! each, built from the schema; one entry refused, then all.

use super::*;
use crate::ErrorCode;
use crate::Uuid;
use crate::reflect::value::Encoding;
use crate::reflect::{FieldType, StructSchema, StructValue, Value};

/// Where the entries are, written by hand from the schemas (independent of the
/// layout the chain finds).
struct Spec {
    /// (request group array, response group array, key field).
    group: Option<(&'static str, &'static str, &'static str)>,
    req_topics: &'static str,
    resp_topics: &'static str,
    /// (partition array, index field; `None`: an array of indexes).
    req_parts: Option<(&'static str, Option<&'static str>)>,
    /// (partition array, index field, error field).
    resp_parts: Option<(&'static str, &'static str, &'static str)>,
}

const fn topics(req: &'static str, resp: &'static str) -> Spec {
    Spec { group: None, req_topics: req, resp_topics: resp, req_parts: None, resp_parts: None }
}

const fn parts(
    req: (&'static str, &'static str, Option<&'static str>),
    resp: (&'static str, &'static str, &'static str, &'static str),
) -> Spec {
    Spec {
        group: None,
        req_topics: req.0,
        resp_topics: resp.0,
        req_parts: Some((req.1, req.2)),
        resp_parts: Some((resp.1, resp.2, resp.3)),
    }
}

fn spec(api: ApiKey, v: i16) -> Option<Spec> {
    let std = parts(
        ("Topics", "Partitions", Some("PartitionIndex")),
        ("Topics", "Partitions", "PartitionIndex", "ErrorCode"),
    );
    Some(match api {
        ApiKey::ListOffsets
        | ApiKey::OffsetCommit
        | ApiKey::DeleteRecords
        | ApiKey::TxnOffsetCommit
        | ApiKey::OffsetDelete => std,
        ApiKey::Metadata | ApiKey::CreateTopics | ApiKey::DescribeTopicPartitions => {
            topics("Topics", "Topics")
        }
        ApiKey::OffsetFetch if v < 8 => parts(
            ("Topics", "PartitionIndexes", None),
            ("Topics", "Partitions", "PartitionIndex", "ErrorCode"),
        ),
        ApiKey::OffsetFetch => Spec {
            group: Some(("Groups", "Groups", "GroupId")),
            ..parts(
                ("Topics", "PartitionIndexes", None),
                ("Topics", "Partitions", "PartitionIndex", "ErrorCode"),
            )
        },
        ApiKey::DeleteTopics if v < 6 => topics("TopicNames", "Responses"),
        ApiKey::DeleteTopics => topics("Topics", "Responses"),
        ApiKey::OffsetForLeaderEpoch => parts(
            ("Topics", "Partitions", Some("Partition")),
            ("Topics", "Partitions", "Partition", "ErrorCode"),
        ),
        ApiKey::AddPartitionsToTxn if v < 4 => parts(
            ("V3AndBelowTopics", "Partitions", None),
            ("ResultsByTopicV3AndBelow", "ResultsByPartition", "PartitionIndex", "PartitionErrorCode"),
        ),
        ApiKey::AddPartitionsToTxn => Spec {
            group: Some(("Transactions", "ResultsByTransaction", "TransactionalId")),
            ..parts(
                ("Topics", "Partitions", None),
                ("TopicResults", "ResultsByPartition", "PartitionIndex", "PartitionErrorCode"),
            )
        },
        ApiKey::CreatePartitions => topics("Topics", "Results"),
        ApiKey::ElectLeaders => parts(
            ("TopicPartitions", "Partitions", None),
            ("ReplicaElectionResults", "PartitionResult", "PartitionId", "ErrorCode"),
        ),
        ApiKey::AlterPartitionReassignments => parts(
            ("Topics", "Partitions", Some("PartitionIndex")),
            ("Responses", "Partitions", "PartitionIndex", "ErrorCode"),
        ),
        ApiKey::DescribeProducers => parts(
            ("Topics", "PartitionIndexes", None),
            ("Topics", "Partitions", "PartitionIndex", "ErrorCode"),
        ),
        _ => return None,
    })
}

fn has(s: &'static StructSchema, name: &str, v: i16) -> bool {
    s.fields.iter().any(|f| f.name == name && f.versions.contains(v))
}

fn elem(s: &'static StructSchema, name: &str) -> &'static StructSchema {
    let f = s.fields.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("{} has no {name}", s.name));
    match &f.ty {
        FieldType::Array(FieldType::Struct(e)) => e,
        _ => panic!("{}.{name} is not an array of structs", s.name),
    }
}

fn name_field(s: &'static StructSchema, v: i16) -> Option<&'static str> {
    ["Name", "Topic"].into_iter().find(|n| has(s, n, v))
}

fn id(t: usize) -> Uuid {
    Uuid([t as u8 + 1; 16])
}

/// Names a topic element: by name where the version has one, else by id.
fn name_topic(s: &mut StructValue, t: usize, v: i16) {
    match name_field(s.schema, v) {
        Some(n) => _ = s.set(n, Value::String(alloc::format!("t{t}"))),
        None => _ = s.set("TopicId", Value::Uuid(id(t))),
    }
}

/// How an answer or request names a topic.
fn topic_key(s: &Value, v: i16) -> String {
    match s {
        Value::String(n) => n.clone(),
        Value::Struct(s) => match name_field(s.schema, v).and_then(|n| s.get(n)) {
            Some(Value::String(n)) if !n.is_empty() => n.clone(),
            _ => match s.get("TopicId") {
                Some(Value::Uuid(u)) => alloc::format!("t{}", u.0[0] - 1),
                other => panic!("a topic named by neither name nor id: {other:?}"),
            },
        },
        other => panic!("not a topic: {other:?}"),
    }
}

fn array<'v>(s: &'v StructValue, name: &str) -> &'v [Value] {
    match s.get(name) {
        Some(Value::Array(items)) => items,
        other => panic!("{}.{name} is not an array: {other:?}", s.schema.name),
    }
}

fn strukt(v: &Value) -> &StructValue {
    match v {
        Value::Struct(s) => s,
        other => panic!("not a struct: {other:?}"),
    }
}

const PARTITIONS: [i32; 2] = [10, 11];

/// A request body: two topics (in each of two groups, where topics sit in groups) of
/// partitions 10 and 11 where the API has partitions.
fn request_body(api: ApiKey, v: i16, spec: &Spec) -> StructValue {
    let schema = crate::reflect::request_schema(api);
    let topics_of = |parent: &'static StructSchema, first: usize| -> Value {
        let field = parent.fields.iter().find(|f| f.name == spec.req_topics).unwrap();
        Value::Array(
            (first..first + 2)
                .map(|t| match &field.ty {
                    FieldType::Array(FieldType::String) => Value::String(alloc::format!("t{}", t % 2)),
                    _ => {
                        let mut topic = StructValue::new(elem(parent, spec.req_topics));
                        name_topic(&mut topic, t % 2, v);
                        if let Some((parts, index)) = spec.req_parts {
                            let items = PARTITIONS.iter().map(|&p| match index {
                                None => Value::Int32(p),
                                Some(index) => {
                                    let mut part = StructValue::new(elem(topic.schema, parts));
                                    part.set(index, Value::Int32(p));
                                    Value::Struct(part)
                                }
                            });
                            topic.set(parts, Value::Array(items.collect()));
                        }
                        Value::Struct(topic)
                    }
                })
                .collect(),
        )
    };
    let mut body = StructValue::new(schema.body);
    match spec.group {
        None => _ = body.set(spec.req_topics, topics_of(schema.body, 0)),
        Some((groups, _, key)) => {
            let g = elem(schema.body, groups);
            let items = (0..2).map(|i| {
                let mut group = StructValue::new(g);
                group.set(key, Value::String(alloc::format!("g{i}")));
                group.set(spec.req_topics, topics_of(g, 2 * i));
                Value::Struct(group)
            });
            body.set(groups, Value::Array(items.collect()));
        }
    }
    body
}

/// (group, topic, partitions) of a request, in its order.
type Entries = Vec<(String, String, Vec<i32>)>;

fn request_entries(body: &StructValue, v: i16, spec: &Spec) -> Entries {
    let mut out = Vec::new();
    let mut of = |group: String, parent: &StructValue| {
        for t in array(parent, spec.req_topics) {
            let partitions = match (spec.req_parts, t) {
                (Some((parts, index)), Value::Struct(s)) => array(s, parts)
                    .iter()
                    .map(|p| match (index, p) {
                        (None, Value::Int32(i)) => *i,
                        (Some(index), Value::Struct(p)) => match p.get(index) {
                            Some(Value::Int32(i)) => *i,
                            other => panic!("index {other:?}"),
                        },
                        other => panic!("partition {other:?}"),
                    })
                    .collect(),
                _ => Vec::new(),
            };
            out.push((group.clone(), topic_key(t, v), partitions));
        }
    };
    match spec.group {
        None => of(String::new(), body),
        Some((groups, _, key)) => {
            for g in array(body, groups) {
                let g = strukt(g);
                let Some(Value::String(id)) = g.get(key) else { panic!("group id") };
                of(id.clone(), g);
            }
        }
    }
    out
}

/// (group, topic, topic error, [(partition, error, message)]) of an answer, in its order.
type Answered = Vec<(String, String, i16, Vec<(i32, i16, Option<String>)>)>;

fn message(s: &StructValue) -> Option<String> {
    match s.get("ErrorMessage") {
        Some(Value::String(m)) => Some(m.clone()),
        _ => None,
    }
}

fn answered(body: &StructValue, v: i16, spec: &Spec) -> Answered {
    let mut out = Vec::new();
    let mut of = |group: String, parent: &StructValue| {
        for t in array(parent, spec.resp_topics) {
            let ts = strukt(t);
            let (error, parts) = match spec.resp_parts {
                Some((parts, index, error)) => {
                    let parts = array(ts, parts)
                        .iter()
                        .map(|p| {
                            let p = strukt(p);
                            let (Some(Value::Int32(i)), Some(Value::Int16(e))) = (p.get(index), p.get(error))
                            else {
                                panic!("partition {p:?}")
                            };
                            (*i, *e, message(p))
                        })
                        .collect();
                    (0, parts)
                }
                None => match ts.get("ErrorCode") {
                    Some(Value::Int16(e)) => (*e, vec![(-1, *e, message(ts))]),
                    other => panic!("topic error {other:?}"),
                },
            };
            out.push((group.clone(), topic_key(t, v), error, parts));
        }
    };
    match spec.group {
        None => of(String::new(), body),
        Some((_, groups, key)) => {
            for g in array(body, groups) {
                let g = strukt(g);
                let Some(Value::String(id)) = g.get(key) else { panic!("group id") };
                of(id.clone(), g);
            }
        }
    }
    out
}

/// The broker's answer to `sent`: every entry it got with error 0, groups, topics and
/// partitions in reverse order (the merge must restore the client's).
fn broker_answer(api: ApiKey, v: i16, spec: &Spec, sent: &Entries) -> StructValue {
    let schema = crate::reflect::response_schema(api);
    let topic = |parent: &'static StructSchema, t: &str, partitions: &[i32]| -> Value {
        let mut topic = StructValue::new(elem(parent, spec.resp_topics));
        name_topic(&mut topic, t[1..].parse().unwrap(), v);
        if let Some((parts, index, error)) = spec.resp_parts {
            let items = partitions.iter().rev().map(|&p| {
                let mut part = StructValue::new(elem(topic.schema, parts));
                part.set(index, Value::Int32(p));
                part.set(error, Value::Int16(0));
                Value::Struct(part)
            });
            topic.set(parts, Value::Array(items.collect()));
        }
        Value::Struct(topic)
    };
    let mut body = StructValue::new(schema.body);
    match spec.group {
        None => {
            let items = sent.iter().rev().map(|(_, t, p)| topic(schema.body, t, p));
            body.set(spec.resp_topics, Value::Array(items.collect()));
        }
        Some((_, groups, key)) => {
            let g = elem(schema.body, groups);
            let mut names: Vec<&String> = sent.iter().map(|(g, ..)| g).collect();
            names.dedup();
            let items = names.into_iter().rev().map(|name| {
                let mut group = StructValue::new(g);
                group.set(key, Value::String(name.clone()));
                let items = sent.iter().filter(|(n, ..)| n == name).rev().map(|(_, t, p)| topic(g, t, p));
                group.set(spec.resp_topics, Value::Array(items.collect()));
                Value::Struct(group)
            });
            body.set(groups, Value::Array(items.collect()));
        }
    }
    body
}

fn request_frame(api: ApiKey, v: i16, body: &StructValue, correlation_id: i32) -> Vec<u8> {
    let mut frame = Vec::new();
    frame.extend_from_slice(&api.to_i16().to_be_bytes());
    frame.extend_from_slice(&v.to_be_bytes());
    frame.extend_from_slice(&correlation_id.to_be_bytes());
    frame.extend_from_slice(&[0, 1, b'c']);
    if api.request_header_version(v) >= 2 {
        frame.push(0);
    }
    frame.extend(body.to_bytes(Encoding::body(crate::reflect::request_schema(api), v)).unwrap());
    frame
}

fn response_frame(api: ApiKey, v: i16, body: &StructValue, correlation_id: i32) -> Vec<u8> {
    let mut frame = correlation_id.to_be_bytes().to_vec();
    if api.response_header_version(v) >= 1 {
        frame.push(0);
    }
    frame.extend(body.to_bytes(Encoding::body(crate::reflect::response_schema(api), v)).unwrap());
    frame
}

fn request_of(api: ApiKey, v: i16, frame: &[u8]) -> StructValue {
    let request = dispatch::parse_request(frame).unwrap();
    assert_eq!(request.body.api_key(), api);
    let body = &frame[request.header.as_bytes().len()..];
    StructValue::decode_body(crate::reflect::request_schema(api), v, body).unwrap()
}

fn response_of(api: ApiKey, v: i16, frame: &[u8], correlation_id: i32) -> StructValue {
    let response = dispatch::parse_response(frame, api, v).unwrap();
    assert_eq!(response.header.correlation_id(), correlation_id);
    let body = &frame[response.header.as_bytes().len()..];
    StructValue::decode_body(crate::reflect::response_schema(api), v, body).unwrap()
}

struct Refuse(Refusals);
impl Filter for Refuse {
    fn on_request<'a>(&mut self, _: &Request<'a>) -> RequestAction<'a> {
        RequestAction::Refuse(self.0.clone())
    }
}

fn chain(refusals: Refusals) -> FilterChain {
    let mut chain = FilterChain::new();
    chain.push(Refuse(refusals));
    chain
}

/// What the client should get: every entry of the request in its order, the refused
/// ones with their error; `refused(topic index, partition index)`.
fn expected(
    all: &Entries,
    spec: &Spec,
    refused: impl Fn(usize, usize) -> Option<(i16, Option<String>)>,
    has_message: impl Fn(bool) -> bool,
) -> Answered {
    all.iter()
        .enumerate()
        .map(|(t, (g, name, partitions))| {
            if spec.resp_parts.is_none() {
                let (e, m) = refused(t, 0).unwrap_or((0, None));
                let m = if has_message(false) { m.or(Some(String::new())).filter(|_| e != 0) } else { None };
                return (g.clone(), name.clone(), e, vec![(-1, e, m)]);
            }
            let parts = partitions
                .iter()
                .enumerate()
                .map(|(p, &index)| {
                    let (e, m) = refused(t, p).unwrap_or((0, None));
                    (index, e, if has_message(true) && e != 0 { m } else { None })
                })
                .collect();
            (g.clone(), name.clone(), 0, parts)
        })
        .collect()
}

/// Drops messages the broker's answer has as "" or null, where refused ones are set.
fn normalize(mut a: Answered) -> Answered {
    for (_, _, _, parts) in &mut a {
        for (_, e, m) in parts {
            if *e == 0 {
                *m = None;
            }
        }
    }
    a
}

#[test]
fn every_api_the_schemas_pair_is_answered_in_part() {
    let mut tested = Vec::new();
    for &api in ApiKey::ALL {
        let versions = api.request_versions();
        for v in versions.min..=versions.max {
            let supported = Refusals::supports(api, v);
            if matches!(api, ApiKey::Produce | ApiKey::Fetch) {
                assert!(supported, "{} v{v}", api.name());
                continue;
            }
            let Some(spec) = spec(api, v) else {
                assert!(
                    !supported,
                    "{} v{v} is answered in part, but the test has no spec for it",
                    api.name()
                );
                continue;
            };
            assert!(supported, "{} v{v} is not answered in part", api.name());
            one_refused(api, v, &spec);
            all_refused(api, v, &spec);
            tested.push((api, v));
        }
        assert_eq!(
            Refusals::supported(api),
            tested.iter().any(|&(a, _)| a == api) || matches!(api, ApiKey::Produce | ApiKey::Fetch)
        );
    }
    // Every API of the brief, in every version kwire reads.
    let mut apis: Vec<ApiKey> = tested.iter().map(|&(a, _)| a).collect();
    apis.dedup();
    let want = [
        ApiKey::ListOffsets,
        ApiKey::Metadata,
        ApiKey::OffsetCommit,
        ApiKey::OffsetFetch,
        ApiKey::CreateTopics,
        ApiKey::DeleteTopics,
        ApiKey::DeleteRecords,
        ApiKey::OffsetForLeaderEpoch,
        ApiKey::AddPartitionsToTxn,
        ApiKey::TxnOffsetCommit,
        ApiKey::CreatePartitions,
        ApiKey::ElectLeaders,
        ApiKey::AlterPartitionReassignments,
        ApiKey::OffsetDelete,
        ApiKey::DescribeProducers,
        ApiKey::DescribeTopicPartitions,
    ];
    assert_eq!(apis, want);
    assert_eq!(tested.len(), 87, "{tested:?}");
}

fn message_in(api: ApiKey, v: i16, spec: &Spec, partitions: bool) -> bool {
    let body = crate::reflect::response_schema(api).body;
    let topics = match spec.group {
        None => elem(body, spec.resp_topics),
        Some((_, groups, _)) => elem(elem(body, groups), spec.resp_topics),
    };
    match (partitions, spec.resp_parts) {
        (true, Some((parts, ..))) => has(elem(topics, parts), "ErrorMessage", v),
        _ => has(topics, "ErrorMessage", v),
    }
}

fn one_refused(api: ApiKey, v: i16, spec: &Spec) {
    let what = alloc::format!("{} v{v}", api.name());
    let body = request_body(api, v, spec);
    let all = request_entries(&body, v, spec);
    let mut refusals = Refusals::new();
    // With partitions: the second partition of the first topic; else the second topic.
    let refused = |t: usize, p: usize| -> Option<(i16, Option<String>)> {
        match spec.resp_parts {
            Some(_) => {
                (t == 0 && p == 1).then(|| (ErrorCode::PolicyViolation.to_i16(), Some("not 11".into())))
            }
            None => (t == 1).then(|| (ErrorCode::TopicAuthorizationFailed.to_i16(), Some("not t1".into()))),
        }
    };
    match spec.resp_parts {
        Some(_) => refusals.partition(0, 1, ErrorCode::PolicyViolation, Some("not 11")),
        None => refusals.topic(1, ErrorCode::TopicAuthorizationFailed, Some("not t1")),
    };
    let mut chain = chain(refusals);
    let Verdict::Replace(forwarded) = chain.on_request(&request_frame(api, v, &body, 7)) else {
        panic!("{what}: not forwarded in part")
    };
    // The forwarded request lacks exactly the refused entry.
    let sent = request_entries(&request_of(api, v, &forwarded), v, spec);
    let mut want = all.clone();
    match spec.resp_parts {
        Some(_) => _ = want[0].2.remove(1),
        None => _ = want.remove(1),
    }
    assert_eq!(sent, want, "{what}: forwarded");
    // The merged answer: every entry in the client's order, the refused one's error.
    let answer = response_frame(api, v, &broker_answer(api, v, spec, &sent), 7);
    let Verdict::Replace(merged) = chain.on_response(&answer, api, v) else { panic!("{what}: not merged") };
    let got = normalize(answered(&response_of(api, v, &merged, 7), v, spec));
    let want = expected(&all, spec, refused, |p| message_in(api, v, spec, p));
    assert_eq!(got, normalize(want), "{what}: merged");
}

/// Two filters refuse in turn: the second sees the first's forwarded request, and each
/// merges its refusals back at its own place, so the client gets every entry.
#[test]
fn two_refusing_filters_merge_in_turn() {
    let (api, v) = (ApiKey::ListOffsets, 7);
    let spec = spec(api, v).unwrap();
    let body = request_body(api, v, &spec);
    let all = request_entries(&body, v, &spec);
    let mut first = Refusals::new();
    first.topic(0, ErrorCode::TopicAuthorizationFailed, None);
    // In what the first forwards, topic 0 is the client's topic 1.
    let mut second = Refusals::new();
    second.partition(0, 0, ErrorCode::PolicyViolation, None);
    let mut chain = FilterChain::new();
    chain.push(Refuse(first)).push(Refuse(second));
    let Verdict::Replace(forwarded) = chain.on_request(&request_frame(api, v, &body, 9)) else { panic!() };
    let sent = request_entries(&request_of(api, v, &forwarded), v, &spec);
    assert_eq!(sent, [(String::new(), "t1".to_string(), vec![11])]);
    let answer = response_frame(api, v, &broker_answer(api, v, &spec, &sent), 9);
    let Verdict::Replace(merged) = chain.on_response(&answer, api, v) else { panic!() };
    let got = normalize(answered(&response_of(api, v, &merged, 9), v, &spec));
    let denied = ErrorCode::TopicAuthorizationFailed.to_i16();
    let policy = ErrorCode::PolicyViolation.to_i16();
    let refused = |t: usize, p: usize| match (t, p) {
        (0, _) => Some((denied, None)),
        (1, 0) => Some((policy, None)),
        _ => None,
    };
    assert_eq!(got, expected(&all, &spec, refused, |_| false));
    assert!(chain.merges.is_empty());
}

fn all_refused(api: ApiKey, v: i16, spec: &Spec) {
    let what = alloc::format!("{} v{v}", api.name());
    let body = request_body(api, v, spec);
    let all = request_entries(&body, v, spec);
    let mut refusals = Refusals::new();
    for t in 0..all.len() {
        refusals.topic(t, ErrorCode::TopicAuthorizationFailed, Some("no"));
    }
    let refused =
        |_: usize, _: usize| Some((ErrorCode::TopicAuthorizationFailed.to_i16(), Some("no".into())));
    let want = normalize(expected(&all, spec, refused, |p| message_in(api, v, spec, p)));
    let mut chain = chain(refusals);
    let answer = match chain.on_request(&request_frame(api, v, &body, 8)) {
        Verdict::Respond(answer) => {
            assert!(api != ApiKey::Metadata, "{what}: Metadata goes to the broker");
            answer
        }
        // Metadata goes on with no topics, for the brokers and cluster id.
        Verdict::Replace(forwarded) if api == ApiKey::Metadata && v >= 1 => {
            let sent = request_of(api, v, &forwarded);
            assert_eq!(sent.get("Topics"), Some(&Value::Array(Vec::new())), "{what}");
            let mut broker = broker_answer(api, v, spec, &Vec::new());
            broker.set("ControllerId", Value::Int32(3));
            let Verdict::Replace(merged) = chain.on_response(&response_frame(api, v, &broker, 8), api, v)
            else {
                panic!("{what}: not merged")
            };
            let merged_body = response_of(api, v, &merged, 8);
            assert_eq!(
                merged_body.get("ControllerId"),
                Some(&Value::Int32(3)),
                "{what}: the broker's answer"
            );
            merged
        }
        Verdict::Close(_) if api == ApiKey::Metadata && v == 0 => return,
        other => panic!("{what}: {other:?}"),
    };
    assert_eq!(normalize(answered(&response_of(api, v, &answer, 8), v, spec)), want, "{what}: answered");
}
