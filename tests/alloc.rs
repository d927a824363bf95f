//! Decoding and walking views, validating, sizing and encoding allocate nothing: checked
//! with a counting global allocator on every seed and bench frame. A frame renamed by
//! splicing (`filter::splice_request`, a tenant's chain) allocates once: the new frame.

mod common;

use common::{hex_files, unframe, vector};

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;

/// Runs `f` and returns how many allocations it made.
fn allocations(f: impl FnOnce()) -> usize {
    common::counting::allocations(f).0
}
use kwire::AnyBody;
use kwire::ApiKey;
use kwire::dispatch;
use kwire::messages::{RequestBody, RequestBodyView, ResponseBody, ResponseBodyView};

/// Reads every field of every element at every depth, the way a broker would.
fn walk_request(body: &RequestBodyView<'_>) -> u64 {
    let mut sum = 0u64;
    match body {
        RequestBodyView::ApiVersions(v) => {
            sum =
                sum.wrapping_add((v.client_software_name().len() + v.client_software_version().len()) as u64);
        }
        RequestBodyView::ListGroups(v) => {
            for s in v.states_filter().iter().chain(v.types_filter().iter()) {
                sum = sum.wrapping_add(s.len() as u64);
            }
        }
        RequestBodyView::ListOffsets(v) => {
            sum = sum.wrapping_add(
                (v.replica_id() as i64 + v.isolation_level() as i64 + v.timeout_ms() as i64) as u64,
            );
            for t in v.topics() {
                sum = sum.wrapping_add(t.name().len() as u64);
                for p in t.partitions() {
                    sum = sum.wrapping_add(
                        (p.partition_index() as i64 + p.current_leader_epoch() as i64 + p.timestamp()) as u64,
                    );
                }
            }
        }
        _ => unreachable!(),
    }
    sum
}

fn walk_response(body: &ResponseBodyView<'_>) -> u64 {
    let mut sum = 0u64;
    match body {
        ResponseBodyView::ApiVersions(v) => {
            sum = sum.wrapping_add(
                (v.error_code() as i64 + v.throttle_time_ms() as i64 + v.finalized_features_epoch()) as u64,
            );
            for k in v.api_keys() {
                sum = sum.wrapping_add(
                    (k.api_key() as i64 + k.min_version() as i64 + k.max_version() as i64) as u64,
                );
            }
            for f in v.supported_features() {
                sum = sum.wrapping_add(f.name().len() as u64);
            }
            for f in v.finalized_features() {
                sum = sum.wrapping_add(f.name().len() as u64);
            }
            sum = sum.wrapping_add(u64::from(v.zk_migration_ready()));
        }
        ResponseBodyView::ListGroups(v) => {
            sum = sum.wrapping_add((v.throttle_time_ms() as i64 + v.error_code() as i64) as u64);
            for g in v.groups() {
                let len = g.group_id().len()
                    + g.protocol_type().len()
                    + g.group_state().len()
                    + g.group_type().len();
                sum = sum.wrapping_add(len as u64);
            }
        }
        ResponseBodyView::ListOffsets(v) => {
            sum = sum.wrapping_add(v.throttle_time_ms() as u64);
            for t in v.topics() {
                sum = sum.wrapping_add(t.name().len() as u64);
                for p in t.partitions() {
                    sum = sum.wrapping_add(
                        (p.partition_index() as i64 + p.error_code() as i64 + p.timestamp() + p.offset())
                            as u64
                            + p.leader_epoch() as u64,
                    );
                }
            }
        }
        _ => unreachable!(),
    }
    sum
}

struct Frame {
    name: String,
    bytes: Vec<u8>,
    request: bool,
    key: ApiKey,
    version: i16,
}

fn frames() -> Vec<Frame> {
    let mut out = Vec::new();
    for dir in ["seed", "bench"] {
        for (name, path) in hex_files(dir) {
            let bytes = vector(&path);
            let request = name.contains("request");
            let (key, version) = common::api_and_version(&name);
            out.push(Frame { name, bytes, request, key, version });
        }
    }
    assert_eq!(out.len(), 12);
    out
}

#[test]
fn views_validation_sizing_and_encoding_allocate_nothing() {
    for f in frames() {
        let frame_bytes = unframe(&f.bytes);
        let mut out = vec![0u8; f.bytes.len() + 64];
        if f.request {
            // Owned value made beforehand: encoding it must not allocate.
            let req = dispatch::parse_request(frame_bytes).unwrap();
            let value = RequestBody::decode(req.body.as_bytes(), f.key, f.version).unwrap();
            let n = allocations(|| {
                let req = dispatch::parse_request(frame_bytes).unwrap();
                std::hint::black_box(walk_request(&req.body));
                let len = value.encoded_len(f.version).unwrap();
                assert_eq!(value.encode(f.version, &mut out).unwrap(), len);
                let total = dispatch::encode_request(&value, f.version, 1, Some("x"), &mut out).unwrap();
                std::hint::black_box(total);
            });
            assert_eq!(n, 0, "{}: {n} allocations", f.name);
        } else {
            let resp = dispatch::parse_response(frame_bytes, f.key, f.version).unwrap();
            let value = ResponseBody::decode(resp.body.as_bytes(), f.key, f.version).unwrap();
            let n = allocations(|| {
                let resp = dispatch::parse_response(frame_bytes, f.key, f.version).unwrap();
                std::hint::black_box(walk_response(&resp.body));
                let len = value.encoded_len(f.version).unwrap();
                assert_eq!(value.encode(f.version, &mut out).unwrap(), len);
                let total = dispatch::encode_response(&value, f.version, 1, &mut out).unwrap();
                std::hint::black_box(total);
            });
            assert_eq!(n, 0, "{}: {n} allocations", f.name);
        }
    }
}

#[test]
fn the_counter_sees_allocations() {
    // The reference decoder allocates, so this proves the counter is live.
    let frames = frames();
    let f = frames.iter().find(|f| f.name == "listoffsets_v10_request_10x100").unwrap();
    let n = allocations(|| {
        let req = dispatch::parse_request(unframe(&f.bytes)).unwrap();
        std::hint::black_box(RequestBody::decode(req.body.as_bytes(), f.key, f.version).unwrap());
    });
    assert!(n > 0);
}

#[path = "../benches/support/mod.rs"]
mod support;

#[test]
fn every_benched_kwire_operation_allocates_nothing() {
    // Exactly what benches/codec.rs and benches/instructions.rs measure, walk included.
    for p in support::Prepared::all() {
        let (key, ver, req) = (p.key, p.version, p.is_request());
        let body = p.body();
        let mut out = p.out.clone();
        let client_id = p.client_id.as_deref();
        let n = allocations(|| {
            support::view(key, ver, req, body);
            std::hint::black_box(support::view_walk(key, ver, req, body));
            std::hint::black_box(support::encoded_len(&p.value, ver));
            std::hint::black_box(support::encode(&p.value, ver, &mut out));
            std::hint::black_box(support::encode_frame(&p.value, ver, p.correlation_id, client_id, &mut out));
        });
        assert_eq!(n, 0, "{}: {n} allocations", p.name);
    }
    for partitions in [10, 100, 1000] {
        let value = support::list_offsets_request(partitions);
        let n = allocations(|| {
            std::hint::black_box(value.encoded_len(5).unwrap());
        });
        assert_eq!(n, 0);
    }
}

/// A Fetch request of 20 topics × 10 partitions at version 12 (the last that names topics),
/// without its size prefix.
fn fetch_frame() -> Vec<u8> {
    use kwire::messages::FetchRequest;
    use kwire::messages::fetch::{FetchPartition, FetchTopic};
    let partitions: Vec<FetchPartition> =
        (0..10).map(|p| FetchPartition { partition: p, ..Default::default() }).collect();
    let names: Vec<String> = (0..20).map(|t| format!("orders-{t:02}")).collect();
    let topics: Vec<FetchTopic> = names
        .iter()
        .map(|n| FetchTopic {
            topic: n.as_str().into(),
            partitions: (&partitions[..]).into(),
            ..Default::default()
        })
        .collect();
    let request = FetchRequest { topics: (&topics[..]).into(), ..Default::default() };
    let mut out = vec![0u8; 8192];
    let n = dispatch::encode_request(&request, 12, 7, Some("app"), &mut out).unwrap();
    out.truncate(n);
    out.drain(..4);
    out
}

#[test]
fn a_renamed_frame_allocates_once() {
    use kwire::filter::{Edit, EntityKind, FilterChain, Tenant, Verdict, splice_request, splice_response};
    let frame = fetch_frame();
    let prefix = |kind, _: &str| (kind == EntityKind::TopicName).then_some(Edit::Prepend("tenant-a."));
    let (n, spliced) = common::counting::allocations(|| splice_request(&frame, false, prefix));
    assert!(spliced.unwrap().is_some());
    assert_eq!(n, 1, "splice_request");
    // Nothing renamed: nothing allocated.
    assert_eq!(allocations(|| assert_eq!(splice_request(&frame, false, |_, _| None), Ok(None))), 0);

    // Through a chain with a tenant: the one frame it forwards.
    let mut chain = FilterChain::new();
    chain.push(Tenant::new("tenant-a."));
    let _ = chain.on_request(&frame);
    let (n, verdict) = common::counting::allocations(|| chain.on_request(&frame));
    assert!(matches!(verdict, Verdict::Replace(_)), "{verdict:?}");
    assert_eq!(n, 1, "a tenant's chain");
    // A tenant that borrows tails (the proxy's): the one head, whose capacity is its length.
    let mut chain = FilterChain::new();
    chain.push(Tenant::new("tenant-a.").borrowing_tails());
    let _ = chain.on_request(&frame);
    let (n, verdict) = common::counting::allocations(|| chain.on_request(&frame));
    let Verdict::Splice { head, tail } = verdict else { panic!("{verdict:?}") };
    assert_eq!(n, 1, "a tenant's chain borrowing tails");
    assert_eq!(head.capacity(), head.len());
    assert!(tail < frame.len());

    // An answer's names lose the prefix with one allocation too.
    let mut answer = vec![0u8; 8192];
    let response = kwire::messages::FetchResponse {
        responses: vec![kwire::messages::fetch::FetchableTopicResponse {
            topic: "tenant-a.orders".into(),
            ..Default::default()
        }]
        .into(),
        ..Default::default()
    };
    let len = dispatch::encode_response(&response, 12, 7, &mut answer).unwrap();
    let answer = &answer[4..len];
    let (n, spliced) = common::counting::allocations(|| {
        splice_response(answer, false, ApiKey::Fetch, 12, |_, _| Some(Edit::DropFront(9)))
    });
    assert!(spliced.unwrap().is_some());
    assert_eq!(n, 1, "splice_response");

    // Through a tenant's chain, an answer with records: one allocation, the new frame; with
    // borrowed tails (the proxy's), only the head, and the records are not in it.
    let records = vec![7u8; 4096];
    let partitions =
        [kwire::messages::fetch::PartitionData { records: Some(records[..].into()), ..Default::default() }];
    let topics = [kwire::messages::fetch::FetchableTopicResponse {
        topic: "tenant-a.orders".into(),
        partitions: partitions[..].into(),
        ..Default::default()
    }];
    let response = kwire::messages::FetchResponse { responses: topics[..].into(), ..Default::default() };
    let mut answer = vec![0u8; 8192];
    let len = dispatch::encode_response(&response, 12, 7, &mut answer).unwrap();
    let answer = &answer[4..len];
    let mut chain = FilterChain::new();
    chain.push(Tenant::new("tenant-a."));
    let _ = chain.on_response(answer, ApiKey::Fetch, 12);
    let (n, verdict) = common::counting::allocations(|| chain.on_response(answer, ApiKey::Fetch, 12));
    assert!(matches!(verdict, Verdict::Replace(_)), "{verdict:?}");
    assert_eq!(n, 1, "a tenant's chain, an answer");
    let mut chain = FilterChain::new();
    chain.push(Tenant::new("tenant-a.").borrowing_tails());
    let _ = chain.on_response(answer, ApiKey::Fetch, 12);
    let (n, verdict) = common::counting::allocations(|| chain.on_response(answer, ApiKey::Fetch, 12));
    let Verdict::Splice { head, tail } = verdict else { panic!("{verdict:?}") };
    assert_eq!(n, 1, "a tenant's chain borrowing tails, an answer");
    assert_eq!(head.capacity(), head.len());
    assert!(head.len() < 100 && answer.len() - tail > records.len(), "head {}, tail at {tail}", head.len());
}

/// A response whose broker addresses are rewritten (`RewriteAddresses`) is spliced: one
/// allocation, the new frame, besides the route's own strings (here made beforehand).
#[test]
fn a_rewritten_address_frame_allocates_once() {
    use kwire::filter::{Filter, RewriteAddresses};
    use kwire::messages::{MetadataResponse, metadata::MetadataResponseBroker};
    let brokers: Vec<_> = (0..5)
        .map(|i| MetadataResponseBroker {
            node_id: i,
            host: format!("b{i}.internal").into(),
            port: 9092,
            ..Default::default()
        })
        .collect();
    let body = MetadataResponse { brokers: (&brokers[..]).into(), ..Default::default() };
    let mut frame = vec![0u8; dispatch::response_len(&body, 12).unwrap()];
    dispatch::encode_response(&body, 12, 5, &mut frame).unwrap();
    let response = dispatch::parse_response(&frame[4..], ApiKey::Metadata, 12).unwrap();
    let exchange = kwire::filter::Exchange { api_key: ApiKey::Metadata, api_version: 12, correlation_id: 5 };
    let mut hosts: Vec<String> = (0..5).map(|i| format!("proxy-{i}.example")).collect();
    let mut filter = RewriteAddresses::new(move |_: &str, port: i32| hosts.pop().map(|h| (h, port + 10000)));
    let (n, action) = common::counting::allocations(|| filter.on_response(&exchange, &response));
    let kwire::filter::ResponseAction::RewriteFrame(new) = action else { panic!("not spliced") };
    assert_eq!(n, 1, "RewriteAddresses");
    let parsed = dispatch::parse_response(&new, ApiKey::Metadata, 12).unwrap();
    let ResponseBodyView::Metadata(v) = parsed.body else { unreachable!() };
    let got: Vec<_> = v.brokers().iter().map(|b| (b.host().to_string(), b.port())).collect();
    assert_eq!(got[0], ("proxy-4.example".to_string(), 19092));
    assert_eq!(got.len(), 5);
    // Nothing routed anew: nothing allocated.
    let mut same = RewriteAddresses::new(|_: &str, _: i32| None);
    assert_eq!(
        allocations(|| assert!(matches!(
            same.on_response(&exchange, &response),
            kwire::filter::ResponseAction::Pass
        ))),
        0
    );
}
