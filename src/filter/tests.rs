use super::*;
use crate::codec::dispatch;
use crate::codec::messages::ResponseBodyView;
use crate::codec::messages::api_versions::ApiVersion;
use crate::codec::messages::{
    ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, ProduceRequest, ProduceResponse,
};
use crate::codec::types::List;

fn request(body: &impl AnyBody, version: i16, correlation_id: i32) -> Vec<u8> {
    let mut buf = vec![0u8; 256];
    let n = dispatch::encode_request(body, version, correlation_id, Some("c"), &mut buf).unwrap();
    buf.truncate(n);
    buf.drain(..4);
    buf
}

struct Answer;
impl Filter for Answer {
    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        match request.body.api_key() {
            ApiKey::Produce => RequestAction::Respond(ResponseBody::Produce(ProduceResponse::default())),
            ApiKey::Metadata => RequestAction::Drop,
            _ => RequestAction::Respond(ResponseBody::Produce(ProduceResponse::default())),
        }
    }
}

#[test]
fn answers_drops_and_their_rules() {
    let mut chain = FilterChain::new();
    chain.push(Answer);
    // An answer comes back with the request's correlation id and version.
    let produce = ProduceRequest { acks: -1, timeout_ms: 1000, ..Default::default() };
    let Verdict::Respond(frame) = chain.on_request(&request(&produce, 9, 41)) else { panic!() };
    let response = dispatch::parse_response(&frame, ApiKey::Produce, 9).unwrap();
    assert_eq!(response.header.correlation_id(), 41);
    // Answering acks=0, which expects nothing, drops it.
    let quiet = ProduceRequest { acks: 0, ..Default::default() };
    assert_eq!(chain.on_request(&request(&quiet, 9, 42)), Verdict::Drop);
    // Dropping a request that expects an answer closes instead of leaving a hole.
    assert!(matches!(chain.on_request(&request(&MetadataRequest::default(), 12, 43)), Verdict::Close(_)));
    // An answer of another API is refused.
    assert!(matches!(chain.on_request(&request(&ApiVersionsRequest::default(), 3, 44)), Verdict::Close(_)));
    // A frame no filter can read reaches no filter and closes the connection.
    let Verdict::Close(why) = chain.on_request(&[0, 99, 0, 0, 0, 0, 0, 1, 0xff, 0xff]) else { panic!() };
    assert_eq!(why, "refused: a request of API key 99, which kwire does not know");
}

/// Passes everything on; counts what it saw.
#[derive(Default)]
struct Observe(alloc::sync::Arc<core::sync::atomic::AtomicUsize>);
impl Filter for Observe {
    fn on_request<'a>(&mut self, _: &Request<'a>) -> RequestAction<'a> {
        self.0.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        RequestAction::Pass
    }
}

#[test]
fn requests_no_filter_can_read_close_the_connection_unless_the_chain_only_observes() {
    let produce = request(&ProduceRequest { acks: -1, timeout_ms: 1000, ..Default::default() }, 9, 1);
    let mut truncated = produce.clone();
    truncated.truncate(produce.len() - 3);
    let unknown_api = [0u8, 99, 0, 0, 0, 0, 0, 1, 0xff, 0xff];
    let bad_header = [0u8, 1];
    let mut closed = FilterChain::new();
    closed.push(Observe::default());
    for (frame, why) in [
        (&truncated[..], "refused: a Produce v9 request that does not decode"),
        (&unknown_api[..], "refused: a request of API key 99, which kwire does not know"),
        (&bad_header[..], "refused: a request whose header does not decode"),
    ] {
        let Verdict::Close(got) = closed.on_request(frame) else { panic!("{why}") };
        assert!(got.starts_with(why), "{got}");
    }
    assert_eq!(closed.on_request(&produce), Verdict::Forward);
    // The same, from a chain whose filter wants nothing: the body is still checked.
    struct Nothing;
    impl Filter for Nothing {
        fn wants_request(&self, _: ApiKey, _: i16) -> bool {
            false
        }
    }
    let mut quiet = FilterChain::new();
    quiet.push(Nothing);
    assert!(matches!(quiet.on_request(&truncated), Verdict::Close(_)));
    assert_eq!(quiet.on_request(&produce), Verdict::Forward);
    // A chain that only observes opts in to forwarding them unread.
    let mut observing = FilterChain::new();
    observing.push(Observe::default()).forward_unreadable();
    assert!(observing.forwards_unreadable());
    for frame in [&truncated[..], &unknown_api[..], &bad_header[..]] {
        assert_eq!(observing.on_request(frame), Verdict::Forward);
    }
    // Unless one of its filters must see every request.
    struct Strict;
    impl Filter for Strict {
        fn refuses_unreadable(&self) -> bool {
            true
        }
    }
    observing.push(Strict);
    assert!(!observing.forwards_unreadable());
    assert!(matches!(observing.on_request(&truncated), Verdict::Close(_)));
    // An empty chain judges nothing and forwards everything.
    let mut empty = FilterChain::new();
    assert_eq!(empty.on_request(&truncated), Verdict::Forward);
}

#[test]
fn versions_not_advertised_are_refused_as_kafka_refuses_them() {
    /// Handles Produce up to v12 only.
    struct UpTo12;
    impl Filter for UpTo12 {
        fn versions(&self, api_key: ApiKey, readable: Versions) -> Option<Versions> {
            match api_key {
                ApiKey::Produce => Some(Versions::new(readable.min, readable.max.min(12))),
                _ => Some(readable),
            }
        }
    }
    let seen = alloc::sync::Arc::new(core::sync::atomic::AtomicUsize::new(0));
    let mut chain = FilterChain::new();
    chain.push(UpTo12).push(Observe(seen.clone()));
    let produce =
        |v: i16| request(&ProduceRequest { acks: -1, timeout_ms: 1000, ..Default::default() }, v, 3);
    // Before any ApiVersions answer: what kwire reads and the filters handle.
    assert_eq!(chain.served(ApiKey::Produce), Some(Versions::new(3, 12)));
    assert_eq!(chain.on_request(&produce(12)), Verdict::Forward);
    let Verdict::Close(why) = chain.on_request(&produce(13)) else { panic!() };
    assert_eq!(why, "refused: Produce v13, a version this connection does not serve (3-12)");
    // After it: what it advertised. Kafka 4.x advertises Produce 0-13 and Metadata 0-13; the
    // chain advertises Produce 0-12 (from 0, as Kafka does) and serves 3-12.
    let keys = [
        ApiVersion { api_key: 0, min_version: 0, max_version: 13, ..Default::default() },
        ApiVersion { api_key: 3, min_version: 0, max_version: 10, ..Default::default() },
    ];
    assert_eq!(clamped(&mut chain, &keys, 3, 3), vec![(0, 0, 12), (3, 0, 10)]);
    assert_eq!(chain.served(ApiKey::Produce), Some(Versions::new(3, 12)));
    assert_eq!(chain.served(ApiKey::Metadata), Some(Versions::new(0, 10)));
    assert_eq!(chain.served(ApiKey::Fetch), None, "not in the broker's answer");
    let metadata = |v: i16| request(&MetadataRequest::default(), v, 4);
    assert_eq!(chain.on_request(&metadata(10)), Verdict::Forward);
    assert!(matches!(chain.on_request(&metadata(11)), Verdict::Close(_)));
    // Produce v0-v2, advertised but not served, are refused as Kafka refuses them.
    let mut v2 = produce(3);
    v2[2..4].copy_from_slice(&2i16.to_be_bytes());
    let Verdict::Close(why) = chain.on_request(&v2) else { panic!() };
    assert!(why.starts_with("refused: Produce v2"), "{why}");
    assert!(matches!(chain.on_request(&produce(13)), Verdict::Close(_)));
    // No refused request reached a filter: only the v12 Produce and the v10 Metadata.
    assert_eq!(seen.load(core::sync::atomic::Ordering::Relaxed), 2);
}

#[test]
fn deny_list_hides_apis_from_api_versions() {
    let mut chain = FilterChain::new();
    chain.push(DenyApis::new([ApiKey::Metadata]));
    let keys = [
        ApiVersion { api_key: 3, min_version: 0, max_version: 13, ..Default::default() },
        ApiVersion { api_key: 18, min_version: 0, max_version: 4, ..Default::default() },
    ];
    let body = ApiVersionsResponse { api_keys: List::Borrowed(&keys), ..Default::default() };
    let mut frame = vec![0u8; dispatch::response_len(&body, 3).unwrap()];
    dispatch::encode_response(&body, 3, 5, &mut frame).unwrap();
    let Verdict::Replace(new) = chain.on_response(&frame[4..], ApiKey::ApiVersions, 3) else { panic!() };
    let ResponseBodyView::ApiVersions(v) =
        dispatch::parse_response(&new, ApiKey::ApiVersions, 3).unwrap().body
    else {
        panic!()
    };
    let listed: Vec<i16> = v.api_keys().iter().map(|k| k.api_key()).collect();
    assert_eq!(listed, [18]);
    assert!(matches!(chain.on_request(&request(&MetadataRequest::default(), 12, 1)), Verdict::Close(_)));
    assert_eq!(chain.on_request(&request(&ApiVersionsRequest::default(), 3, 2)), Verdict::Forward);
}

/// Requests go first to last, responses last to first; each sees the one before's rewrite.
#[test]
fn chain_order() {
    struct Rename(&'static str);
    impl Filter for Rename {
        fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
            let id = alloc::format!("{}+{}", request.header.client_id().unwrap_or(""), self.0);
            RequestAction::RewriteHeader { client_id: Some(id) }
        }
    }
    let mut chain = FilterChain::new();
    chain.push(Rename("a")).push(Rename("b"));
    let Verdict::Replace(new) = chain.on_request(&request(&ApiVersionsRequest::default(), 3, 7)) else {
        panic!()
    };
    let r = dispatch::parse_request(&new).unwrap();
    assert_eq!((r.header.client_id(), r.header.correlation_id()), (Some("c+a+b"), 7));
}

/// `BrokerPorts` and `by_node` see each broker's node id: Metadata's brokers,
/// DescribeCluster's `broker_id`, FindCoordinator's top-level coordinator (v3).
#[test]
fn brokers_rewritten_by_node_id() {
    use crate::codec::messages::describe_cluster::DescribeClusterBroker;
    use crate::codec::messages::metadata::MetadataResponseBroker;
    use crate::codec::messages::{DescribeClusterResponse, FindCoordinatorResponse, MetadataResponse};
    let mut chain = FilterChain::new();
    chain.push(RewriteAddresses::with_route(BrokerPorts::new("proxy", 19000)));
    let brokers = [
        MetadataResponseBroker { node_id: 1, host: "b1".into(), port: 9092, ..Default::default() },
        MetadataResponseBroker { node_id: 7, host: "b7".into(), port: 9092, ..Default::default() },
    ];
    let body = MetadataResponse { brokers: (&brokers).into(), ..Default::default() };
    let mut frame = vec![0u8; dispatch::response_len(&body, 12).unwrap()];
    dispatch::encode_response(&body, 12, 5, &mut frame).unwrap();
    let Verdict::Replace(new) = chain.on_response(&frame[4..], ApiKey::Metadata, 12) else { panic!() };
    let ResponseBodyView::Metadata(v) = dispatch::parse_response(&new, ApiKey::Metadata, 12).unwrap().body
    else {
        panic!()
    };
    let got: Vec<(i32, &str, i32)> = v.brokers().iter().map(|b| (b.node_id(), b.host(), b.port())).collect();
    assert_eq!(got, [(1, "proxy", 19001), (7, "proxy", 19007)]);

    let brokers =
        [DescribeClusterBroker { broker_id: 3, host: "b3".into(), port: 9092, ..Default::default() }];
    let body = DescribeClusterResponse { brokers: (&brokers).into(), ..Default::default() };
    let mut frame = vec![0u8; dispatch::response_len(&body, 1).unwrap()];
    dispatch::encode_response(&body, 1, 6, &mut frame).unwrap();
    let Verdict::Replace(new) = chain.on_response(&frame[4..], ApiKey::DescribeCluster, 1) else { panic!() };
    let ResponseBodyView::DescribeCluster(v) =
        dispatch::parse_response(&new, ApiKey::DescribeCluster, 1).unwrap().body
    else {
        panic!()
    };
    assert_eq!(v.brokers().iter().next().map(|b| b.port()), Some(19003));

    // A closure of (node, host, port); no coordinator (-1, "", -1) is left alone.
    let mut seen = Vec::new();
    let mut chain = FilterChain::new();
    chain.push(RewriteAddresses::by_node(move |node: i32, host: &str, port: i32| {
        seen.push(node);
        (node >= 0).then(|| (alloc::format!("{host}.proxy"), port + node))
    }));
    for (node, host, port, rewritten) in [(2, "b2", 9092, true), (-1, "", -1, false)] {
        let body = FindCoordinatorResponse { node_id: node, host: host.into(), port, ..Default::default() };
        let mut frame = vec![0u8; dispatch::response_len(&body, 3).unwrap()];
        dispatch::encode_response(&body, 3, 7, &mut frame).unwrap();
        match chain.on_response(&frame[4..], ApiKey::FindCoordinator, 3) {
            Verdict::Replace(new) => {
                assert!(rewritten);
                let ResponseBodyView::FindCoordinator(v) =
                    dispatch::parse_response(&new, ApiKey::FindCoordinator, 3).unwrap().body
                else {
                    panic!()
                };
                assert_eq!((v.node_id(), v.host(), v.port()), (2, "b2.proxy", 9094));
            }
            v => assert!(!rewritten && v == Verdict::Forward, "{v:?}"),
        }
    }
}

#[test]
fn broker_names_are_one_to_one() {
    let names = BrokerNames::new("Broker-{id}.Kafka.example", "bootstrap.kafka.example").unwrap();
    // Two proxies given the same flags name every broker alike (nothing else is consulted).
    assert_eq!(names, BrokerNames::new("broker-{id}.kafka.example", "BOOTSTRAP.kafka.example").unwrap());
    for id in [0, 1, 2, 9, 10, 99, 1000, 65_535, i32::MAX] {
        let name = names.broker(id).unwrap();
        assert_eq!(name, alloc::format!("broker-{id}.kafka.example"));
        assert_eq!(names.lookup(&name), Some(NameTarget::Broker(id)), "{name}");
        assert_eq!(names.lookup(&name.to_ascii_uppercase()), Some(NameTarget::Broker(id)), "{name}");
    }
    assert_eq!(names.broker(-1), None);
    assert_eq!(names.lookup("bootstrap.kafka.example"), Some(NameTarget::Bootstrap));
    assert_eq!(names.bootstrap(), "bootstrap.kafka.example");
    for other in [
        "broker-.kafka.example",
        "broker-01.kafka.example",
        "broker-00.kafka.example",
        "broker--1.kafka.example",
        "broker-+1.kafka.example",
        "broker-1 .kafka.example",
        "broker-2147483648.kafka.example",
        "broker-1.kafka.example.",
        "broker-1.kafka.examplex",
        "xbroker-1.kafka.example",
        "broker-1",
        "kafka.example",
        "",
        "broker-é.kafka.example",
    ] {
        assert_eq!(names.lookup(other), None, "{other:?}");
    }
    // The id may sit inside a label, at the start or at the end.
    let first = BrokerNames::new("{id}.b.example", "b.example").unwrap();
    assert_eq!(first.lookup("12.b.example"), Some(NameTarget::Broker(12)));
    assert_eq!(first.lookup("b.example"), Some(NameTarget::Bootstrap));
    let last = BrokerNames::new("kafka-b{id}", "kafka").unwrap();
    assert_eq!(last.broker(3).as_deref(), Some("kafka-b3"));
    assert_eq!(last.lookup("kafka-b3"), Some(NameTarget::Broker(3)));
}

#[test]
fn broker_name_patterns_are_checked() {
    assert_eq!(BrokerNames::new("broker.kafka.example", "k.example"), Err(NameError::Placeholder));
    assert_eq!(BrokerNames::new("b{id}-{id}.example", "k.example"), Err(NameError::Placeholder));
    assert!(matches!(BrokerNames::new("b_{id}.example", "k.example"), Err(NameError::NotAHostName(_))));
    assert!(matches!(BrokerNames::new("{id}..example", "k.example"), Err(NameError::NotAHostName(_))));
    assert!(matches!(BrokerNames::new("-{id}.example", "k.example"), Err(NameError::NotAHostName(_))));
    assert!(matches!(BrokerNames::new("b{id}.example", "k .example"), Err(NameError::NotAHostName(_))));
    // A label that fits for id 0 but not for the longest ids.
    let long = alloc::format!("{}{{id}}.example", "a".repeat(55));
    assert!(matches!(BrokerNames::new(&long, "k.example"), Err(NameError::NotAHostName(_))));
    assert_eq!(
        BrokerNames::new("b{id}.example", "b7.example"),
        Err(NameError::BootstrapIsABroker("b7.example".into()))
    );
    // Names that look alike but are no broker's are fine as the bootstrap name.
    assert!(BrokerNames::new("b{id}.example", "b07.example").is_ok());
    assert!(!NameError::Placeholder.to_string().is_empty());
}

#[test]
fn by_name_tells_each_brokers_address() {
    let names = BrokerNames::new("b{id}.example", "example").unwrap();
    let mut learned = Vec::new();
    let mut route =
        ByName::new(names, 443, |id, host: &str, port| learned.push((id, host.to_string(), port)));
    assert_eq!(route.route(3, "10.0.0.3", 9092), Some(("b3.example".to_string(), 443)));
    assert_eq!(route.route(-1, "", -1), None);
    // A broker id without a usable address is still named, but nothing is learned.
    assert_eq!(route.route(4, "", -1), Some(("b4.example".to_string(), 443)));
    assert!(alloc::format!("{route:?}").contains("ByName"));
    drop(route);
    assert_eq!(learned, [(3, "10.0.0.3".to_string(), 9092)]);
    // A plain closure is a route that ignores the node id.
    let mut plain = |host: &str, port: i32| Some((alloc::format!("p-{host}"), port + 1));
    assert_eq!(Route::route(&mut plain, 9, "h", 1), Some(("p-h".to_string(), 2)));
}

fn response(body: &impl AnyBody, version: i16) -> Vec<u8> {
    let mut frame = vec![0u8; dispatch::response_len(body, version).unwrap()];
    dispatch::encode_response(body, version, 77, &mut frame).unwrap();
    frame.drain(..4);
    frame
}

/// Every address kind, by pattern: Metadata, DescribeCluster, FindCoordinator (the old
/// single coordinator and the list), and KIP-951 leader hints.
#[test]
fn addresses_by_name() {
    use crate::codec::messages::describe_cluster::DescribeClusterBroker;
    use crate::codec::messages::find_coordinator::Coordinator;
    use crate::codec::messages::metadata::MetadataResponseBroker;
    use crate::codec::messages::{DescribeClusterResponse, FindCoordinatorResponse, MetadataResponse};
    use alloc::sync::Arc;
    use core::sync::atomic::{AtomicUsize, Ordering};

    let seen = Arc::new(AtomicUsize::new(0));
    let names = BrokerNames::new("broker-{id}.kafka.example", "kafka.example").unwrap();
    let mut chain = FilterChain::new();
    let count = seen.clone();
    chain.push(RewriteAddresses::with_route(ByName::new(names, 9093, move |_, _: &str, _| {
        count.fetch_add(1, Ordering::Relaxed);
    })));

    let brokers = [
        MetadataResponseBroker { node_id: 1, host: "10.0.0.1".into(), port: 9092, ..Default::default() },
        MetadataResponseBroker {
            node_id: 12,
            host: "b12.internal".into(),
            port: 19092,
            ..Default::default()
        },
    ];
    let frame = response(&MetadataResponse { brokers: (&brokers).into(), ..Default::default() }, 12);
    let Verdict::Replace(new) = chain.on_response(&frame, ApiKey::Metadata, 12) else { panic!() };
    let r = dispatch::parse_response(&new, ApiKey::Metadata, 12).unwrap();
    assert_eq!(r.header.correlation_id(), 77);
    let ResponseBodyView::Metadata(v) = r.body else { panic!() };
    let got: Vec<(i32, &str, i32)> = v.brokers().iter().map(|b| (b.node_id(), b.host(), b.port())).collect();
    assert_eq!(got, [(1, "broker-1.kafka.example", 9093), (12, "broker-12.kafka.example", 9093)]);

    let brokers =
        [DescribeClusterBroker { broker_id: 3, host: "h3".into(), port: 9000, ..Default::default() }];
    let frame = response(&DescribeClusterResponse { brokers: (&brokers).into(), ..Default::default() }, 1);
    let Verdict::Replace(new) = chain.on_response(&frame, ApiKey::DescribeCluster, 1) else { panic!() };
    let ResponseBodyView::DescribeCluster(v) =
        dispatch::parse_response(&new, ApiKey::DescribeCluster, 1).unwrap().body
    else {
        panic!()
    };
    let b = v.brokers().iter().next().unwrap();
    assert_eq!((b.broker_id(), b.host(), b.port()), (3, "broker-3.kafka.example", 9093));

    // Version 3: one coordinator at the top level; with none (-1, "", -1) it is kept.
    let one = FindCoordinatorResponse { node_id: 5, host: "h5".into(), port: 9005, ..Default::default() };
    let Verdict::Replace(new) = chain.on_response(&response(&one, 3), ApiKey::FindCoordinator, 3) else {
        panic!()
    };
    let ResponseBodyView::FindCoordinator(v) =
        dispatch::parse_response(&new, ApiKey::FindCoordinator, 3).unwrap().body
    else {
        panic!()
    };
    assert_eq!((v.node_id(), v.host(), v.port()), (5, "broker-5.kafka.example", 9093));
    let none = FindCoordinatorResponse {
        node_id: -1,
        host: "".into(),
        port: -1,
        error_code: 15,
        ..Default::default()
    };
    assert_eq!(chain.on_response(&response(&none, 3), ApiKey::FindCoordinator, 3), Verdict::Forward);
    // Version 4+: a list, one of them without a coordinator.
    let coordinators = [
        Coordinator { key: "g1".into(), node_id: 2, host: "h2".into(), port: 9002, ..Default::default() },
        Coordinator {
            key: "g2".into(),
            node_id: -1,
            host: "".into(),
            port: -1,
            error_code: 15,
            ..Default::default()
        },
    ];
    let list = FindCoordinatorResponse { coordinators: (&coordinators).into(), ..Default::default() };
    let Verdict::Replace(new) = chain.on_response(&response(&list, 6), ApiKey::FindCoordinator, 6) else {
        panic!()
    };
    let ResponseBodyView::FindCoordinator(v) =
        dispatch::parse_response(&new, ApiKey::FindCoordinator, 6).unwrap().body
    else {
        panic!()
    };
    let got: Vec<(i32, &str, i32)> =
        v.coordinators().iter().map(|c| (c.node_id(), c.host(), c.port())).collect();
    assert_eq!(got, [(2, "broker-2.kafka.example", 9093), (-1, "", -1)]);

    // Leader hints of Produce (KIP-951).
    use crate::codec::messages::produce::NodeEndpoint;
    let hints = [NodeEndpoint { node_id: 4, host: "h4".into(), port: 9004, ..Default::default() }];
    let produce = ProduceResponse { node_endpoints: (&hints).into(), ..Default::default() };
    let Verdict::Replace(new) = chain.on_response(&response(&produce, 10), ApiKey::Produce, 10) else {
        panic!()
    };
    let ResponseBodyView::Produce(v) = dispatch::parse_response(&new, ApiKey::Produce, 10).unwrap().body
    else {
        panic!()
    };
    let e = v.node_endpoints().iter().next().unwrap();
    assert_eq!((e.node_id(), e.host(), e.port()), (4, "broker-4.kafka.example", 9093));

    // Each broker's own address was told, none for "no coordinator".
    assert_eq!(seen.load(Ordering::Relaxed), 6);
    // Already named so: passed on without encoding again.
    let frame = response(
        &MetadataResponse {
            brokers: (&[MetadataResponseBroker {
                node_id: 1,
                host: "broker-1.kafka.example".into(),
                port: 9093,
                ..Default::default()
            }])
                .into(),
            ..Default::default()
        },
        12,
    );
    assert_eq!(chain.on_response(&frame, ApiKey::Metadata, 12), Verdict::Forward);
}

/// The ApiVersions answer of a broker newer than kwire, through a chain with no filters.
fn clamped(
    chain: &mut FilterChain,
    keys: &[ApiVersion<'_>],
    version: i16,
    asked_at: i16,
) -> Vec<(i16, i16, i16)> {
    let body = ApiVersionsResponse { api_keys: List::Borrowed(keys), ..Default::default() };
    let mut frame = vec![0u8; dispatch::response_len(&body, version).unwrap()];
    dispatch::encode_response(&body, version, 5, &mut frame).unwrap();
    let new = match chain.on_response(&frame[4..], ApiKey::ApiVersions, asked_at) {
        Verdict::Replace(new) => new,
        Verdict::Forward => frame[4..].to_vec(),
        other => panic!("{other:?}"),
    };
    let response = dispatch::parse_response(&new, ApiKey::ApiVersions, version).unwrap();
    assert_eq!(response.header.correlation_id(), 5);
    let ResponseBodyView::ApiVersions(v) = response.body else { panic!() };
    v.api_keys().iter().map(|k| (k.api_key(), k.min_version(), k.max_version())).collect()
}

#[test]
fn api_versions_are_clamped_to_what_kwire_reads() {
    let metadata = ApiKey::Metadata.request_versions();
    let ours = ApiKey::ApiVersions.request_versions();
    let keys = [
        // Newer than kwire: cut to kwire's highest.
        ApiVersion { api_key: 3, min_version: 0, max_version: metadata.max + 1, ..Default::default() },
        // An API kwire does not know: left out.
        ApiVersion { api_key: 999, min_version: 0, max_version: 3, ..Default::default() },
        ApiVersion { api_key: 18, min_version: 0, max_version: ours.max + 5, ..Default::default() },
        // Within kwire's range: kept as it is.
        ApiVersion { api_key: 0, min_version: 3, max_version: 9, ..Default::default() },
    ];
    let mut chain = FilterChain::new();
    // Produce is advertised from 0, as Kafka 4.x advertises it.
    let want = vec![(3, 0, metadata.max), (18, 0, ours.max), (0, 0, 9)];
    assert_eq!(clamped(&mut chain, &keys, 3, 3), want);
    // The version-0 fallback (the broker did not read the version asked for) is clamped too.
    assert_eq!(clamped(&mut chain, &keys, 0, 3), want);
    // An answer kwire reads whole is forwarded as it came.
    let fine = [ApiVersion { api_key: 0, min_version: 0, max_version: 9, ..Default::default() }];
    let body = ApiVersionsResponse { api_keys: List::Borrowed(&fine), ..Default::default() };
    let mut frame = vec![0u8; dispatch::response_len(&body, 3).unwrap()];
    dispatch::encode_response(&body, 3, 5, &mut frame).unwrap();
    assert_eq!(chain.on_response(&frame[4..], ApiKey::ApiVersions, 3), Verdict::Forward);
}

#[test]
fn filters_declare_the_versions_they_handle() {
    /// Handles Produce from v3 to v7 only, and no Metadata.
    struct Old;
    impl Filter for Old {
        fn versions(&self, api_key: ApiKey, readable: Versions) -> Option<Versions> {
            match api_key {
                ApiKey::Produce => Some(Versions::new(3, 7)),
                ApiKey::Metadata => None,
                _ => Some(readable),
            }
        }
    }
    let keys = [
        ApiVersion { api_key: 0, min_version: 0, max_version: 11, ..Default::default() },
        ApiVersion { api_key: 3, min_version: 0, max_version: 12, ..Default::default() },
        ApiVersion { api_key: 1, min_version: 4, max_version: 17, ..Default::default() },
    ];
    let mut chain = FilterChain::new();
    chain.push(Old);
    assert_eq!(clamped(&mut chain, &keys, 3, 3), vec![(0, 0, 7), (1, 4, 17)]);
}

#[test]
fn api_versions_at_a_version_kwire_does_not_read_is_answered_as_a_broker_does() {
    let mut chain = FilterChain::new();
    let ours = ApiKey::ApiVersions.request_versions();
    // A request header v2 of ApiVersions at a version past kwire's, with an empty body.
    let mut frame = Vec::new();
    frame.extend_from_slice(&18i16.to_be_bytes());
    frame.extend_from_slice(&(ours.max + 1).to_be_bytes());
    frame.extend_from_slice(&77i32.to_be_bytes());
    frame.extend_from_slice(&[0xff, 0xff, 0]);
    let Verdict::Respond(answer) = chain.on_request(&frame) else { panic!() };
    let response = dispatch::parse_response(&answer, ApiKey::ApiVersions, 0).unwrap();
    assert_eq!(response.header.correlation_id(), 77);
    let ResponseBodyView::ApiVersions(v) = response.body else { panic!() };
    assert_eq!(v.error_code(), crate::ErrorCode::UnsupportedVersion.to_i16());
    let listed: Vec<_> =
        v.api_keys().iter().map(|k| (k.api_key(), k.min_version(), k.max_version())).collect();
    assert_eq!(listed, [(18, ours.min, ours.max)]);
}

mod partial_answers {
    use super::*;
    use crate::ErrorCode;
    use crate::Uuid;
    use crate::codec::messages::produce::{
        PartitionProduceData, PartitionProduceResponse, TopicProduceData, TopicProduceResponse,
    };
    use crate::codec::messages::{ProduceRequestView, RequestBodyView};

    /// Refuses topics whose name (or, by id, the book's name) starts with `secret`, and
    /// partition 1 of every other topic with a message.
    struct NoSecrets(TopicNames);
    impl Filter for NoSecrets {
        fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
            let RequestBodyView::Produce(p) = request.body else { return RequestAction::Pass };
            let mut refused = Refusals::new();
            for (t, topic) in p.topic_data().iter().enumerate() {
                match self.0.resolve(topic.name(), topic.topic_id()) {
                    Some(name) if !name.starts_with("secret") => {
                        for (i, partition) in topic.partition_data().iter().enumerate() {
                            if partition.index() == 1 {
                                refused.partition(t, i, ErrorCode::PolicyViolation, Some("not partition 1"));
                            }
                        }
                    }
                    _ => _ = refused.topic(t, ErrorCode::TopicAuthorizationFailed, None),
                }
            }
            RequestAction::Refuse(refused)
        }
    }

    fn topic(name: &'static str, id: u8, partitions: &[i32]) -> TopicProduceData<'static> {
        let partition_data: Vec<PartitionProduceData<'static>> =
            partitions.iter().map(|&index| PartitionProduceData { index, ..Default::default() }).collect();
        TopicProduceData {
            name: name.into(),
            topic_id: if id == 0 { Uuid::ZERO } else { Uuid([id; 16]) },
            partition_data: partition_data.into(),
            ..Default::default()
        }
    }

    fn produce(acks: i16, topics: Vec<TopicProduceData<'static>>) -> ProduceRequest<'static> {
        ProduceRequest { acks, timeout_ms: 1000, topic_data: topics.into(), ..Default::default() }
    }

    /// The broker's answer to a forwarded request: every partition it got, error 0, base
    /// offset = its index (topics in reverse, to check the merge restores the client's order).
    fn broker_answer(sent: &ProduceRequestView<'_>, version: i16, correlation_id: i32) -> Vec<u8> {
        let mut topics: Vec<TopicProduceResponse<'static>> = sent
            .topic_data()
            .iter()
            .map(|t| TopicProduceResponse {
                name: String::from(t.name()).into(),
                topic_id: t.topic_id(),
                partition_responses: t
                    .partition_data()
                    .iter()
                    .map(|p| PartitionProduceResponse {
                        index: p.index(),
                        base_offset: i64::from(p.index()),
                        ..Default::default()
                    })
                    .collect::<Vec<_>>()
                    .into(),
                ..Default::default()
            })
            .collect();
        topics.reverse();
        let body = ProduceResponse { responses: topics.into(), ..Default::default() };
        let mut frame = vec![0u8; dispatch::response_len(&body, version).unwrap()];
        dispatch::encode_response(&body, version, correlation_id, &mut frame).unwrap();
        frame.drain(..4);
        frame
    }

    /// (topic name or id byte, [(partition, error, base offset)]) of an answer.
    type Seen = Vec<(String, Vec<(i32, i16, i64)>)>;

    fn seen(frame: &[u8], version: i16) -> Seen {
        let ResponseBodyView::Produce(p) =
            dispatch::parse_response(frame, ApiKey::Produce, version).unwrap().body
        else {
            panic!()
        };
        p.responses()
            .iter()
            .map(|t| {
                let name = if t.name().is_empty() {
                    alloc::format!("#{}", t.topic_id().0[0])
                } else {
                    t.name().into()
                };
                let parts = t
                    .partition_responses()
                    .iter()
                    .map(|p| (p.index(), p.error_code(), p.base_offset()))
                    .collect();
                (name, parts)
            })
            .collect()
    }

    #[test]
    fn the_rest_goes_on_and_one_answer_comes_back_in_the_clients_order() {
        let names = TopicNames::new();
        let mut chain = FilterChain::new();
        chain.push(NoSecrets(names.clone()));
        let request_body = produce(
            -1,
            vec![topic("orders", 0, &[0, 1, 2]), topic("secret-x", 0, &[0]), topic("audit", 0, &[1])],
        );
        let Verdict::Replace(sent) = chain.on_request(&request(&request_body, 9, 7)) else { panic!() };
        let sent = dispatch::parse_request(&sent).unwrap();
        assert_eq!(sent.header.correlation_id(), 7);
        assert_eq!(sent.header.client_id(), Some("c"), "the header is kept");
        let RequestBodyView::Produce(forwarded) = sent.body else { panic!() };
        let forwarded_parts: Vec<(&str, Vec<i32>)> = forwarded
            .topic_data()
            .iter()
            .map(|t| (t.name(), t.partition_data().iter().map(|p| p.index()).collect()))
            .collect();
        assert_eq!(forwarded_parts, [("orders", vec![0, 2])], "audit's only partition is refused");
        let Verdict::Replace(answer) =
            chain.on_response(&broker_answer(&forwarded, 9, 7), ApiKey::Produce, 9)
        else {
            panic!()
        };
        let (policy, auth) =
            (ErrorCode::PolicyViolation.to_i16(), ErrorCode::TopicAuthorizationFailed.to_i16());
        assert_eq!(
            seen(&answer, 9),
            [
                ("orders".into(), vec![(0, 0, 0), (1, policy, -1), (2, 0, 2)]),
                ("secret-x".into(), vec![(0, auth, -1)]),
                ("audit".into(), vec![(1, policy, -1)]),
            ]
        );
        // The message is in the answer where the version has one.
        let ResponseBodyView::Produce(p) =
            dispatch::parse_response(&answer, ApiKey::Produce, 9).unwrap().body
        else {
            panic!()
        };
        let orders = p.responses().iter().next().unwrap();
        assert_eq!(
            orders.partition_responses().iter().nth(1).unwrap().error_message(),
            Some("not partition 1")
        );
        // The next answer, not answered in part, passes as it came.
        let plain = request(&produce(-1, vec![topic("orders", 0, &[0])]), 9, 8);
        assert_eq!(chain.on_request(&plain), Verdict::Forward);
        let RequestBodyView::Produce(view) = dispatch::parse_request(&plain).unwrap().body else { panic!() };
        let answer = broker_answer(&view, 9, 8);
        assert_eq!(chain.on_response(&answer, ApiKey::Produce, 9), Verdict::Forward);
    }

    #[test]
    fn topics_named_by_id_are_refused_by_name_and_merged_by_id() {
        let names = TopicNames::new();
        names.learn(Uuid([1; 16]), "orders");
        names.learn(Uuid([2; 16]), "secret-x");
        let mut chain = FilterChain::new();
        chain.push(NoSecrets(names.clone()));
        // v13: ids only; #3 is an id nobody named: refused, as a policy filter must.
        let body = produce(-1, vec![topic("", 2, &[0]), topic("", 1, &[0]), topic("", 3, &[0])]);
        let Verdict::Replace(sent) = chain.on_request(&request(&body, 13, 9)) else { panic!() };
        let RequestBodyView::Produce(forwarded) = dispatch::parse_request(&sent).unwrap().body else {
            panic!()
        };
        assert_eq!(forwarded.topic_data().iter().map(|t| t.topic_id()).collect::<Vec<_>>(), [Uuid([1; 16])]);
        let Verdict::Replace(answer) =
            chain.on_response(&broker_answer(&forwarded, 13, 9), ApiKey::Produce, 13)
        else {
            panic!()
        };
        let auth = ErrorCode::TopicAuthorizationFailed.to_i16();
        assert_eq!(
            seen(&answer, 13),
            [
                ("#2".into(), vec![(0, auth, -1)]),
                ("#1".into(), vec![(0, 0, 0)]),
                ("#3".into(), vec![(0, auth, -1)])
            ]
        );
    }

    #[test]
    fn everything_refused_is_answered_without_the_broker_and_acks_zero_is_dropped() {
        let mut chain = FilterChain::new();
        chain.push(NoSecrets(TopicNames::new()));
        let body = produce(-1, vec![topic("secret-a", 0, &[0, 1]), topic("secret-b", 0, &[3])]);
        let Verdict::Respond(answer) = chain.on_request(&request(&body, 9, 11)) else { panic!() };
        assert_eq!(
            dispatch::parse_response(&answer, ApiKey::Produce, 9).unwrap().header.correlation_id(),
            11
        );
        let auth = ErrorCode::TopicAuthorizationFailed.to_i16();
        assert_eq!(
            seen(&answer, 9),
            [
                ("secret-a".into(), vec![(0, auth, -1), (1, auth, -1)]),
                ("secret-b".into(), vec![(3, auth, -1)])
            ]
        );
        // acks=0 expects no answer: all refused is dropped, part refused goes on with
        // nothing kept to merge.
        let quiet = produce(0, vec![topic("secret-a", 0, &[0])]);
        assert_eq!(chain.on_request(&request(&quiet, 9, 12)), Verdict::Drop);
        let quiet = produce(0, vec![topic("secret-a", 0, &[0]), topic("orders", 0, &[0])]);
        assert!(matches!(chain.on_request(&request(&quiet, 9, 13)), Verdict::Replace(_)));
        assert!(chain.merges.is_empty());
    }

    #[test]
    fn a_refusal_of_an_api_without_partial_answers_closes_the_connection() {
        struct RefuseAny;
        impl Filter for RefuseAny {
            fn on_request<'a>(&mut self, _: &Request<'a>) -> RequestAction<'a> {
                let mut r = Refusals::new();
                r.topic(0, ErrorCode::TopicAuthorizationFailed, None);
                RequestAction::Refuse(r)
            }
        }
        // Heartbeat has no per-topic entries.
        assert!(!Refusals::supported(ApiKey::Heartbeat));
        let mut chain = FilterChain::new();
        chain.push(RefuseAny);
        let heartbeat = crate::codec::messages::HeartbeatRequest::default();
        let Verdict::Close(why) = chain.on_request(&request(&heartbeat, 4, 1)) else { panic!() };
        assert!(why.contains("cannot be answered in part"), "{why}");
    }
}

mod partial_fetch {
    use super::*;
    use crate::ErrorCode;
    use crate::Uuid;
    use crate::codec::messages::FetchRequest;
    use crate::codec::messages::fetch::{FetchPartition, FetchTopic, FetchableTopicResponse, PartitionData};
    use crate::codec::messages::{FetchResponse, RequestBodyView};

    /// Refuses reads of topics whose name (or, by id, the book's name) starts with `audit`.
    struct NoAuditReads(TopicNames);
    impl Filter for NoAuditReads {
        fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
            let RequestBodyView::Fetch(f) = request.body else { return RequestAction::Pass };
            let mut refused = Refusals::new();
            for (t, topic) in f.topics().iter().enumerate() {
                match self.0.resolve(topic.topic(), topic.topic_id()) {
                    Some(name) if !name.starts_with("audit") => {}
                    _ => _ = refused.topic(t, ErrorCode::TopicAuthorizationFailed, None),
                }
            }
            RequestAction::Refuse(refused)
        }
    }

    fn fetch(topics: &[(&'static str, u8, &[i32])]) -> FetchRequest<'static> {
        let topics: Vec<FetchTopic<'static>> = topics
            .iter()
            .map(|&(name, id, parts)| FetchTopic {
                topic: name.into(),
                topic_id: if id == 0 { Uuid::ZERO } else { Uuid([id; 16]) },
                partitions: parts
                    .iter()
                    .map(|&partition| FetchPartition {
                        partition,
                        partition_max_bytes: 1024,
                        ..Default::default()
                    })
                    .collect::<Vec<_>>()
                    .into(),
                ..Default::default()
            })
            .collect();
        FetchRequest {
            replica_id: -1,
            max_bytes: 1 << 20,
            session_epoch: -1,
            topics: topics.into(),
            ..Default::default()
        }
    }

    /// What the broker answers a forwarded fetch: every partition asked, high watermark 7.
    fn answer(sent: &[u8], version: i16) -> Vec<u8> {
        let request = dispatch::parse_request(sent).unwrap();
        let RequestBodyView::Fetch(f) = request.body else { panic!() };
        let responses: Vec<FetchableTopicResponse<'static>> = f
            .topics()
            .iter()
            .map(|t| FetchableTopicResponse {
                topic: String::from(t.topic()).into(),
                topic_id: t.topic_id(),
                partitions: t
                    .partitions()
                    .iter()
                    .map(|p| PartitionData {
                        partition_index: p.partition(),
                        high_watermark: 7,
                        ..Default::default()
                    })
                    .collect::<Vec<_>>()
                    .into(),
                ..Default::default()
            })
            .collect();
        let body = FetchResponse { responses: responses.into(), ..Default::default() };
        let mut frame = vec![0u8; dispatch::response_len(&body, version).unwrap()];
        dispatch::encode_response(&body, version, request.header.correlation_id(), &mut frame).unwrap();
        frame.drain(..4);
        frame
    }

    fn seen(frame: &[u8], version: i16) -> Vec<(String, i32, i16, i64)> {
        let ResponseBodyView::Fetch(f) =
            dispatch::parse_response(frame, ApiKey::Fetch, version).unwrap().body
        else {
            panic!()
        };
        let mut out = Vec::new();
        for t in f.responses().iter() {
            let name = if t.topic().is_empty() {
                alloc::format!("#{}", t.topic_id().0[0])
            } else {
                t.topic().into()
            };
            for p in t.partitions().iter() {
                out.push((name.clone(), p.partition_index(), p.error_code(), p.high_watermark()));
            }
        }
        out
    }

    #[test]
    fn refused_topics_are_answered_beside_the_brokers_partitions() {
        let mut chain = FilterChain::new();
        chain.push(NoAuditReads(TopicNames::new()));
        let body = fetch(&[("orders", 0, &[0, 1]), ("audit.logins", 0, &[0])]);
        let Verdict::Replace(sent) = chain.on_request(&request(&body, 12, 5)) else { panic!() };
        let got = chain.on_response(&answer(&sent, 12), ApiKey::Fetch, 12);
        let Verdict::Replace(merged) = got else { panic!("{got:?}") };
        let auth = ErrorCode::TopicAuthorizationFailed.to_i16();
        assert_eq!(
            seen(&merged, 12),
            [("orders".into(), 0, 0, 7), ("orders".into(), 1, 0, 7), ("audit.logins".into(), 0, auth, -1)]
        );
        // Every topic refused: the request still goes to the broker (a fetch session's
        // epoch moves on with it), with nothing to fetch, and the refusal is merged in.
        let body = fetch(&[("audit.logins", 0, &[0])]);
        let Verdict::Replace(sent) = chain.on_request(&request(&body, 12, 6)) else { panic!() };
        let RequestBodyView::Fetch(f) = dispatch::parse_request(&sent).unwrap().body else { panic!() };
        assert_eq!(f.topics().len(), 0);
        let Verdict::Replace(merged) = chain.on_response(&answer(&sent, 12), ApiKey::Fetch, 12) else {
            panic!()
        };
        assert_eq!(seen(&merged, 12), [("audit.logins".into(), 0, auth, -1)]);
        assert!(chain.merges.is_empty(), "nothing left awaiting a merge");
    }

    #[test]
    fn topics_named_by_id_are_judged_by_their_names() {
        let names = TopicNames::new();
        names.learn(Uuid([1; 16]), "orders");
        names.learn(Uuid([2; 16]), "audit.logins");
        let mut chain = FilterChain::new();
        chain.push(NoAuditReads(names));
        let body = fetch(&[("", 2, &[0]), ("", 1, &[0]), ("", 9, &[3])]);
        let Verdict::Replace(sent) = chain.on_request(&request(&body, 13, 8)) else { panic!() };
        let Verdict::Replace(merged) = chain.on_response(&answer(&sent, 13), ApiKey::Fetch, 13) else {
            panic!()
        };
        let auth = ErrorCode::TopicAuthorizationFailed.to_i16();
        assert_eq!(
            seen(&merged, 13),
            [("#1".into(), 0, 0, 7), ("#2".into(), 0, auth, -1), ("#9".into(), 3, auth, -1)]
        );
    }
}

/// Partial answers from the schemas: for every API and version that may be answered in
/// part (but Produce and Fetch, typed and tested above), a request of two topics (two
/// groups of two where topics sit in groups) of two partitions each, built from the
/// schema; one entry refused, then all.
#[cfg(feature = "reflect")]
mod partial_by_schema {
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
        let f =
            s.fields.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("{} has no {name}", s.name));
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
                                let (Some(Value::Int32(i)), Some(Value::Int16(e))) =
                                    (p.get(index), p.get(error))
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
                    let m =
                        if has_message(false) { m.or(Some(String::new())).filter(|_| e != 0) } else { None };
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
        let refused =
            |t: usize, p: usize| -> Option<(i16, Option<String>)> {
                match spec.resp_parts {
                    Some(_) => (t == 0 && p == 1)
                        .then(|| (ErrorCode::PolicyViolation.to_i16(), Some("not 11".into()))),
                    None => (t == 1)
                        .then(|| (ErrorCode::TopicAuthorizationFailed.to_i16(), Some("not t1".into()))),
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
        let Verdict::Replace(merged) = chain.on_response(&answer, api, v) else {
            panic!("{what}: not merged")
        };
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
        let Verdict::Replace(forwarded) = chain.on_request(&request_frame(api, v, &body, 9)) else {
            panic!()
        };
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
}
