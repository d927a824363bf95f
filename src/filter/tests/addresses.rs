//! Broker addresses rewritten: by node id, by name, by pattern, every address kind.

use super::*;

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
