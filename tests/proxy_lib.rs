//! `kwire::proxy` as a library, without real clients: a user's filter that answers requests
//! itself, ApiVersions clamping in front of a cluster newer than kwire, hostile upstreams
//! and graceful shutdown. The upstream is `kwire::broker`, in-process; a small relay in
//! front of it stands in for a newer cluster, and fake upstreams misbehave on purpose.
//! tests/proxy.rs runs real clients through the same library runtime (`kwire proxy`).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::audit::{AuditReads, AuditTopics};
use common::newer_cluster::widening_relay;
use kwire::dispatch;
use kwire::filter::FilterChain;
use kwire::messages::{
    ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, ProduceRequest, ResponseBodyView,
};
use kwire::proxy::{ConnInfo, Event, Hooks, Pairing, Proxy, RequestHead};
use kwire::types::Uuid;
use kwire::{AnyBody, ApiKey, ErrorCode};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn broker() -> kwire::broker::Broker {
    kwire::broker::Broker::start(Default::default()).unwrap()
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn send(s: &mut TcpStream, body: &impl AnyBody, version: i16, correlation_id: i32) {
    let mut buf = vec![0u8; 4096];
    let n =
        dispatch::encode_request(body, version, correlation_id, Some("proxy-lib-test"), &mut buf).unwrap();
    s.write_all(&buf[..n]).unwrap();
}

/// The next response frame (without its size prefix).
fn read_frame(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size)?;
    let mut frame = vec![0u8; u32::from_be_bytes(size) as usize];
    s.read_exact(&mut frame)?;
    Ok(frame)
}

/// The API key, lowest and highest version of each entry of an ApiVersions answer.
fn listed(frame: &[u8], version: i16) -> (i16, Vec<(i16, i16, i16)>) {
    let (response, _) = kwire::conn::read_response(frame, ApiKey::ApiVersions, version).unwrap();
    let ResponseBodyView::ApiVersions(v) = response.body else { panic!() };
    (v.error_code(), v.api_keys().iter().map(|k| (k.api_key(), k.min_version(), k.max_version())).collect())
}

/// Hooks that count what a test checks: frames kwire could not read, and the events.
#[derive(Default)]
struct Counts {
    undecoded: AtomicUsize,
    violations: AtomicUsize,
    closed: Mutex<Vec<String>>,
    principals: Mutex<Vec<String>>,
}

impl Hooks for Counts {
    type Tag = ();
    fn admit(&self, _: &ConnInfo, _: &RequestHead, _: &[u8]) {}
    fn request(&self, _: &ConnInfo, frame: &[u8], _: &RequestHead, _: &()) {
        if dispatch::parse_request_prefix(frame).is_err() {
            self.undecoded.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn response(&self, _: &ConnInfo, frame: &[u8], e: Pairing<()>, _: bool, _: Duration) {
        if kwire::conn::read_response(frame, e.api_key, e.api_version).is_err() {
            self.undecoded.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn event(&self, conn: Option<&ConnInfo>, event: Event<'_>) {
        match event {
            Event::Violation { .. } => {
                self.violations.fetch_add(1, Ordering::Relaxed);
            }
            Event::Unpaired { .. } | Event::BadRequest { .. } => {
                self.undecoded.fetch_add(1, Ordering::Relaxed);
            }
            Event::Closed { why } => self.closed.lock().unwrap().push(why.to_string()),
            Event::Auth(_) => {
                if let Some(p) = conn.and_then(ConnInfo::principal) {
                    self.principals.lock().unwrap().push(p);
                }
            }
            _ => {}
        }
    }
}

fn produce_to(topic: &str) -> ProduceRequest<'_> {
    use kwire::messages::produce::{PartitionProduceData, TopicProduceData};
    let partitions = vec![PartitionProduceData { index: 0, records: None, ..Default::default() }];
    let topics = vec![TopicProduceData {
        name: topic.into(),
        partition_data: partitions.into(),
        ..Default::default()
    }];
    ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: topics.into(), ..Default::default() }
}

#[test]
fn a_users_filter_answers_in_turn_among_the_brokers_answers() {
    let rt = runtime();
    let broker = broker();
    broker.create_topic("audit.logins", 1);
    broker.create_topic("orders", 1);
    let counts = Counts::default();
    let proxy = rt
        .block_on(
            Proxy::builder(any_port(), [broker.addr().to_string()])
                .filters(|conn: &Arc<ConnInfo>| {
                    let mut chain = FilterChain::new();
                    chain.push(AuditTopics(conn.clone()));
                    chain
                })
                .hooks(counts)
                .start(),
        )
        .unwrap();
    let mut c = connect(proxy.local_addr());
    // Pipelined: the filter's answer to 2 must come after the broker's answer to 1, and
    // before its answer to 3.
    send(&mut c, &MetadataRequest::default(), 12, 1);
    send(&mut c, &produce_to("audit.logins"), 9, 2);
    send(&mut c, &produce_to("orders"), 9, 3);
    send(&mut c, &ApiVersionsRequest::default(), 3, 4);
    let mut ids = Vec::new();
    for (key, version) in
        [(ApiKey::Metadata, 12), (ApiKey::Produce, 9), (ApiKey::Produce, 9), (ApiKey::ApiVersions, 3)]
    {
        let frame = read_frame(&mut c).unwrap();
        let response = dispatch::parse_response(&frame, key, version).unwrap();
        ids.push(response.header.correlation_id());
        if let ResponseBodyView::Produce(p) = response.body {
            let t = p.responses().iter().next().unwrap();
            let code = t.partition_responses().iter().next().unwrap().error_code();
            match t.name() {
                "audit.logins" => assert_eq!(code, ErrorCode::TopicAuthorizationFailed.to_i16()),
                // The broker's own answer (it refuses a partition without records).
                "orders" => assert_ne!(code, ErrorCode::TopicAuthorizationFailed.to_i16()),
                other => panic!("{other}"),
            }
        }
    }
    assert_eq!(ids, [1, 2, 3, 4]);
    // Only the allowed Produce reached the broker (it holds no record either way, but the
    // filter's answer never went there: its log of audit.logins is untouched).
    assert_eq!(proxy.hooks().undecoded.load(Ordering::Relaxed), 0);
    drop(c);
    rt.block_on(proxy.shutdown_within(Duration::from_secs(5)));
}

#[test]
fn api_versions_are_clamped_in_front_of_a_newer_cluster() {
    let rt = runtime();
    let broker = broker();
    let relay = widening_relay(broker.addr());
    // Without the proxy, the relay advertises what kwire cannot read.
    let mut direct = connect(relay);
    send(&mut direct, &ApiVersionsRequest::default(), 3, 1);
    let (_, keys) = listed(&read_frame(&mut direct).unwrap(), 3);
    assert!(keys.iter().any(|k| k.0 == 999));
    let metadata_max = ApiKey::Metadata.request_versions().max;
    assert!(keys.contains(&(3, 0, metadata_max + 1)), "{keys:?}");

    let proxy = rt
        .block_on(Proxy::builder(any_port(), [relay.to_string()]).hooks(Counts::default()).start())
        .unwrap();
    let mut c = connect(proxy.local_addr());
    for (version, id) in [(3, 1), (0, 2), (4, 3)] {
        send(&mut c, &ApiVersionsRequest::default(), version, id);
        let (error, keys) = listed(&read_frame(&mut c).unwrap(), version);
        assert_eq!(error, 0);
        assert!(!keys.iter().any(|k| k.0 == 999), "v{version}: {keys:?}");
        let metadata = keys.iter().find(|k| k.0 == 3).expect("Metadata listed");
        assert_eq!(metadata.2, metadata_max, "v{version}");
        for (key, min, max) in keys {
            // What kwire reads, advertised as Kafka advertises it (Produce from 0).
            let key = ApiKey::from_i16(key).unwrap();
            let ours = key.advertised(key.request_versions());
            assert!(ours.contains(min) && ours.contains(max), "{key:?} {min}-{max} past kwire's {ours}");
        }
    }
    // The highest Metadata the client was offered goes through, decoded both ways.
    send(&mut c, &MetadataRequest::default(), metadata_max, 4);
    let frame = read_frame(&mut c).unwrap();
    assert!(dispatch::parse_response(&frame, ApiKey::Metadata, metadata_max).is_ok());
    assert_eq!(proxy.hooks().undecoded.load(Ordering::Relaxed), 0, "a frame of the session went undecoded");
    // An ApiVersions request past what kwire reads gets what a broker answers: v0,
    // UNSUPPORTED_VERSION, and the versions to ask at.
    let mut frame = Vec::new();
    let past = ApiKey::ApiVersions.request_versions().max + 1;
    for part in [&18i16.to_be_bytes()[..], &past.to_be_bytes(), &5i32.to_be_bytes(), &[0xff, 0xff, 0]] {
        frame.extend_from_slice(part);
    }
    c.write_all(&(frame.len() as u32).to_be_bytes()).unwrap();
    c.write_all(&frame).unwrap();
    let (error, keys) = listed(&read_frame(&mut c).unwrap(), 0);
    assert_eq!(error, ErrorCode::UnsupportedVersion.to_i16());
    let ours = ApiKey::ApiVersions.request_versions();
    assert_eq!(keys, [(18, ours.min, ours.max)]);
    rt.block_on(proxy.shutdown_within(Duration::from_secs(5)));
}

/// How a fake upstream misbehaves after reading a request.
#[derive(Clone, Copy, Debug)]
enum Hostile {
    /// A size prefix of 2 GiB.
    HugeSize,
    /// A well-formed answer to a correlation id nobody asked for.
    UnknownCorrelation,
    /// One byte of a valid answer every 50 ms.
    Trickle,
    /// Bytes of a TLS record where a Kafka frame should be.
    TlsGarbage,
    /// Half a frame, then a reset.
    ResetMidFrame,
}

fn hostile_upstream(how: Hostile) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { return };
            thread::spawn(move || {
                let Ok(request) = read_frame(&mut s) else { return };
                let id = i32::from_be_bytes(request[4..8].try_into().unwrap());
                let body = ApiVersionsResponse::default();
                let mut answer = vec![0u8; dispatch::response_len(&body, 0).unwrap()];
                dispatch::encode_response(&body, 0, id, &mut answer).unwrap();
                let _ = match how {
                    Hostile::HugeSize => s.write_all(&[0x7f, 0xff, 0xff, 0xff, 1, 2, 3]),
                    Hostile::UnknownCorrelation => {
                        answer[4..8].copy_from_slice(&(id + 1000).to_be_bytes());
                        s.write_all(&answer)
                    }
                    Hostile::Trickle => {
                        for b in &answer {
                            if s.write_all(&[*b]).is_err() {
                                return;
                            }
                            thread::sleep(Duration::from_millis(50));
                        }
                        Ok(())
                    }
                    Hostile::TlsGarbage => {
                        s.write_all(&[0x16, 0x03, 0x03, 0x00, 0x30, 0xde, 0xad, 0xbe, 0xef])
                    }
                    Hostile::ResetMidFrame => s.write_all(&answer[..answer.len() / 2]),
                };
                if matches!(how, Hostile::ResetMidFrame) {
                    drop(s);
                    return;
                }
                // Hold the connection open until the proxy closes it.
                let mut sink = [0u8; 64];
                while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

#[test]
fn hostile_upstreams_close_only_their_own_connections() {
    let rt = runtime();
    let broker = broker();
    let good = rt
        .block_on(Proxy::builder(any_port(), [broker.addr().to_string()]).hooks(Counts::default()).start())
        .unwrap();
    let mut steady = connect(good.local_addr());
    let mut round = 0;
    let mut check_steady = |steady: &mut TcpStream| {
        round += 1;
        send(steady, &ApiVersionsRequest::default(), 3, round);
        let frame = read_frame(steady).expect("the good connection goes on");
        assert_eq!(listed(&frame, 3).0, 0);
    };
    check_steady(&mut steady);
    for how in [
        Hostile::HugeSize,
        Hostile::UnknownCorrelation,
        Hostile::Trickle,
        Hostile::TlsGarbage,
        Hostile::ResetMidFrame,
    ] {
        let upstream = hostile_upstream(how);
        let proxy = rt
            .block_on(
                Proxy::builder(any_port(), [upstream.to_string()])
                    .max_frame_bytes(1 << 20)
                    .hooks(Counts::default())
                    .start(),
            )
            .unwrap();
        let mut victims: Vec<TcpStream> = (0..3).map(|_| connect(proxy.local_addr())).collect();
        for (i, v) in victims.iter_mut().enumerate() {
            send(v, &ApiVersionsRequest::default(), 0, i as i32);
        }
        let started = Instant::now();
        for v in &mut victims {
            let got = read_frame(v);
            match how {
                // The answer arrives whole, a byte at a time.
                Hostile::Trickle => assert!(got.is_ok(), "{how:?}: {got:?}"),
                // Forwarded unpaired (the client decides what an answer to nothing means).
                Hostile::UnknownCorrelation => assert!(got.is_ok(), "{how:?}: {got:?}"),
                // The proxy closes the connection: the client reads its end, not a frame.
                _ => assert!(got.is_err(), "{how:?}: the client got a frame: {got:?}"),
            }
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{how:?} took {:?}", started.elapsed());
        match how {
            Hostile::HugeSize | Hostile::TlsGarbage => {
                // A prefix over the limit is refused before anything is read into memory.
                let deadline = Instant::now() + Duration::from_secs(5);
                while proxy.hooks().violations.load(Ordering::Relaxed) < 3 && Instant::now() < deadline {
                    thread::sleep(Duration::from_millis(20));
                }
                assert_eq!(proxy.hooks().violations.load(Ordering::Relaxed), 3, "{how:?}");
            }
            Hostile::UnknownCorrelation => {
                // Hooks run after the frame was sent: the client may read it first.
                let deadline = Instant::now() + Duration::from_secs(5);
                while proxy.hooks().undecoded.load(Ordering::Relaxed) < 3 && Instant::now() < deadline {
                    thread::sleep(Duration::from_millis(20));
                }
                assert_eq!(proxy.hooks().undecoded.load(Ordering::Relaxed), 3, "{how:?}");
            }
            _ => {}
        }
        check_steady(&mut steady);
        drop(victims);
        rt.block_on(proxy.shutdown_within(Duration::from_secs(5)));
    }
    check_steady(&mut steady);
    assert!(good.hooks().closed.lock().unwrap().is_empty(), "{:?}", good.hooks().closed.lock().unwrap());
}

#[test]
fn shutdown_answers_requests_in_flight_then_refuses_new_connections() {
    let rt = runtime();
    let upstream = hostile_upstream(Hostile::Trickle);
    let proxy = rt
        .block_on(Proxy::builder(any_port(), [upstream.to_string()]).hooks(Counts::default()).start())
        .unwrap();
    let addr = proxy.local_addr();
    let mut c = connect(addr);
    send(&mut c, &ApiVersionsRequest::default(), 0, 7);
    thread::sleep(Duration::from_millis(100));
    let stopping = rt.spawn(proxy.clone().shutdown_within(Duration::from_secs(10)));
    // The request in flight is still answered, whole.
    let frame = read_frame(&mut c).expect("answered during shutdown");
    assert_eq!(i32::from_be_bytes(frame[..4].try_into().unwrap()), 7);
    rt.block_on(stopping).unwrap();
    // Then the connection is closed, and the listener with it.
    let mut end = [0u8; 1];
    assert!(matches!(c.read(&mut end), Ok(0) | Err(_)));
    assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err(), "still accepting");
    assert_eq!(proxy.open_connections(), 0);
}

#[test]
fn idle_connections_are_closed_after_the_idle_timeout_and_busy_ones_are_not() {
    let rt = runtime();
    let upstream = hostile_upstream(Hostile::Trickle);
    let proxy = rt
        .block_on(
            Proxy::builder(any_port(), [upstream.to_string()])
                .idle_timeout(Duration::from_millis(300))
                .hooks(Counts::default())
                .start(),
        )
        .unwrap();
    // Awaiting an answer that takes longer than the timeout: not idle, so it is answered.
    let mut busy = connect(proxy.local_addr());
    send(&mut busy, &ApiVersionsRequest::default(), 0, 1);
    assert!(read_frame(&mut busy).is_ok(), "closed while a request was in flight");
    // Then nothing: closed.
    let started = Instant::now();
    let mut end = [0u8; 1];
    assert!(matches!(busy.read(&mut end), Ok(0) | Err(_)));
    assert!(started.elapsed() < Duration::from_secs(5));
    let deadline = Instant::now() + Duration::from_secs(5);
    while proxy.hooks().closed.lock().unwrap().is_empty() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    let closed = proxy.hooks().closed.lock().unwrap().clone();
    assert!(closed.iter().any(|why| why.contains("idle")), "{closed:?}");
    rt.block_on(proxy.shutdown_within(Duration::from_secs(5)));
}

/// A waiting filter: before a Produce goes on, it asks the broker (a Metadata request of the
/// proxy's own) whether its topic exists, and closes the connection if not. Produce to the
/// topic `trusted` does not wait.
struct KnownTopicsOnly {
    asked: Arc<AtomicUsize>,
}

/// The first topic a Produce request names.
fn first_produced_topic(frame: &[u8]) -> Option<String> {
    match dispatch::parse_request(frame).ok()?.body {
        kwire::messages::RequestBodyView::Produce(p) => {
            Some(p.topic_data().iter().next()?.name().to_string())
        }
        _ => None,
    }
}

impl kwire::proxy::WaitingFilter for KnownTopicsOnly {
    fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
        api_key == ApiKey::Produce
    }

    fn waits_on(&self, frame: &[u8]) -> bool {
        first_produced_topic(frame).as_deref() != Some("trusted")
    }

    fn on_request<'a>(
        &'a mut self,
        frame: Vec<u8>,
        upstream: &'a mut kwire::proxy::Upstream<'_>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = kwire::proxy::Decision> + Send + 'a>> {
        use kwire::messages::metadata::MetadataRequestTopic;
        use kwire::proxy::Decision;
        Box::pin(async move {
            assert_ne!(
                first_produced_topic(&frame).as_deref(),
                Some("trusted"),
                "waited on a frame it said it does not"
            );
            let Some(topic) = first_produced_topic(&frame) else { return Decision::Forward(frame) };
            let topics = [MetadataRequestTopic { name: Some(topic.as_str().into()), ..Default::default() }];
            let ask = MetadataRequest {
                topics: Some((&topics).into()),
                allow_auto_topic_creation: false,
                ..Default::default()
            };
            let answer = match upstream.request(&ask, 12).await {
                Ok(a) => a,
                Err(e) => return Decision::Close(e.to_string()),
            };
            self.asked.fetch_add(1, Ordering::Relaxed);
            let Ok((response, _)) = kwire::conn::read_response(&answer, ApiKey::Metadata, 12) else {
                return Decision::Close("the broker's Metadata answer does not decode".into());
            };
            let ResponseBodyView::Metadata(m) = response.body else { unreachable!() };
            let known = m.topics().iter().any(|t| t.name() == Some(topic.as_str()) && t.error_code() == 0);
            if known { Decision::Forward(frame) } else { Decision::Close(format!("no topic {topic}")) }
        })
    }
}

#[test]
fn a_waiting_filter_asks_the_broker_with_ids_the_client_never_sees() {
    let rt = runtime();
    let broker = broker();
    broker.create_topic("orders", 1);
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let proxy = rt
        .block_on(
            Proxy::builder(any_port(), [broker.addr().to_string()])
                .waiting_filter(move |_| Box::new(KnownTopicsOnly { asked: counter.clone() }))
                .hooks(Counts::default())
                .start(),
        )
        .unwrap();
    let mut c = connect(proxy.local_addr());
    // Pipelined around the waiting Produce: the answers come in the client's order, with
    // the client's correlation ids only.
    send(&mut c, &ApiVersionsRequest::default(), 3, 1);
    send(&mut c, &produce_to("orders"), 9, 2);
    send(&mut c, &ApiVersionsRequest::default(), 3, 3);
    for (id, key, version) in
        [(1, ApiKey::ApiVersions, 3), (2, ApiKey::Produce, 9), (3, ApiKey::ApiVersions, 3)]
    {
        let frame = read_frame(&mut c).unwrap();
        let response = dispatch::parse_response(&frame, key, version).unwrap();
        assert_eq!(response.header.correlation_id(), id);
    }
    assert_eq!(asked.load(Ordering::Relaxed), 1);
    // A frame the filter does not wait on goes on without it: not asked, still answered.
    send(&mut c, &produce_to("trusted"), 9, 5);
    let frame = read_frame(&mut c).unwrap();
    assert_eq!(dispatch::parse_response(&frame, ApiKey::Produce, 9).unwrap().header.correlation_id(), 5);
    assert_eq!(asked.load(Ordering::Relaxed), 1);
    // A topic the broker does not have: the filter closes the connection.
    send(&mut c, &produce_to("nowhere"), 9, 4);
    assert!(read_frame(&mut c).is_err(), "answered a Produce to a topic that does not exist");
    assert_eq!(asked.load(Ordering::Relaxed), 2);
    let deadline = Instant::now() + Duration::from_secs(5);
    while proxy.hooks().closed.lock().unwrap().is_empty() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    let closed = proxy.hooks().closed.lock().unwrap().clone();
    assert!(closed.iter().any(|w| w.contains("no topic nowhere")), "{closed:?}");
    assert_eq!(proxy.hooks().undecoded.load(Ordering::Relaxed), 0);
    rt.block_on(proxy.shutdown_within(Duration::from_secs(5)));
}

/// A topic's partitions and their records.
type Partitions = Vec<(i32, Vec<u8>)>;

/// A Produce request of `(topic, [(partition, records)])`.
fn produce_records<'a>(topics: &'a [(&'a str, Partitions)]) -> ProduceRequest<'a> {
    use kwire::messages::produce::{PartitionProduceData, TopicProduceData};
    let topics: Vec<TopicProduceData<'a>> = topics
        .iter()
        .map(|(name, parts)| TopicProduceData {
            name: (*name).into(),
            partition_data: parts
                .iter()
                .map(|(i, r)| PartitionProduceData {
                    index: *i,
                    records: Some(r[..].into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: topics.into(), ..Default::default() }
}

#[test]
fn record_validation_answers_failing_partitions_and_the_broker_the_rest_in_one_response() {
    use kwire::filter::{Rule, ValidateRecords};
    use kwire::records::{BatchBuilder, Compression, NewRecord};
    let batch = |values: &[&'static [u8]], codec| {
        let records: Vec<NewRecord<'_>> =
            values.iter().map(|v| NewRecord::new(Some(b"k"), Some(*v))).collect();
        let mut b = BatchBuilder::new(0, 1_700_000_000_000, &records);
        b.compression = codec;
        let mut out = Vec::new();
        b.encode_to_vec(&mut out).unwrap();
        out
    };
    let good = batch(&[b"{\"a\": 1}", b"[]", b"2"], Compression::Zstd);
    let bad = batch(&[b"{}", b"{\"a\": }", b"3", b"x"], Compression::Gzip);
    let rt = runtime();
    let broker = broker();
    broker.create_topic("orders.eu", 3);
    broker.create_topic("logs", 1);
    let rules: Arc<[Rule]> = vec!["orders.*=json,key".parse::<Rule>().unwrap()].into();
    let proxy = rt
        .block_on(
            Proxy::builder(any_port(), [broker.addr().to_string()])
                .filters(move |_: &Arc<ConnInfo>| {
                    let mut chain = FilterChain::new();
                    chain.push(ValidateRecords::new(rules.clone()));
                    chain
                })
                .start(),
        )
        .unwrap();
    let mut c = connect(proxy.local_addr());
    // Pipelined: a mixed request, one the filter answers whole, and one that passes.
    let mixed = [
        ("orders.eu", vec![(0, good.clone()), (1, bad.clone()), (2, good.clone())]),
        ("logs", vec![(0, bad.clone())]),
    ];
    send(&mut c, &produce_records(&mixed), 9, 1);
    send(&mut c, &produce_records(&[("orders.eu", vec![(1, bad.clone())])]), 9, 2);
    send(&mut c, &produce_records(&[("orders.eu", vec![(0, good.clone())])]), 9, 3);
    let mut got = Vec::new();
    for _ in 0..3 {
        let frame = read_frame(&mut c).unwrap();
        let response = dispatch::parse_response(&frame, ApiKey::Produce, 9).unwrap();
        let ResponseBodyView::Produce(p) = response.body else { panic!() };
        let mut parts = Vec::new();
        for t in p.responses() {
            for q in t.partition_responses() {
                let errors: Vec<i32> = q.record_errors().iter().map(|e| e.batch_index()).collect();
                parts.push((t.name().to_string(), q.index(), q.error_code(), errors));
            }
        }
        got.push((response.header.correlation_id(), parts));
    }
    let part = |t: &str, i, code, errors: &[i32]| (t.to_string(), i, code, errors.to_vec());
    assert_eq!(
        got,
        [
            (
                1,
                vec![
                    part("orders.eu", 0, 0, &[]),
                    part("orders.eu", 1, 87, &[1, 3]),
                    part("orders.eu", 2, 0, &[]),
                    part("logs", 0, 0, &[]),
                ]
            ),
            (2, vec![part("orders.eu", 1, 87, &[1, 3])]),
            (3, vec![part("orders.eu", 0, 0, &[])]),
        ]
    );
    // The broker holds the good records only (and the unvalidated topic's).
    assert_eq!(broker.end_offset("orders.eu", 0), Some(6));
    assert_eq!(broker.end_offset("orders.eu", 1), Some(0));
    assert_eq!(broker.end_offset("orders.eu", 2), Some(3));
    assert_eq!(broker.end_offset("logs", 0), Some(4));
    drop(c);
    rt.block_on(proxy.shutdown_within(Duration::from_secs(5)));
}

/// A writer the test reads back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// SaslHandshake v1 and SaslAuthenticate v2 with PLAIN; the broker's error code.
fn authenticate(c: &mut TcpStream, user: &str, password: &str) -> i16 {
    use kwire::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
    send(c, &SaslHandshakeRequest { mechanism: "PLAIN".into() }, 1, 1);
    read_frame(c).unwrap();
    let token = format!("\0{user}\0{password}");
    send(c, &SaslAuthenticateRequest { auth_bytes: token.as_bytes().into(), ..Default::default() }, 2, 2);
    let frame = read_frame(c).unwrap();
    let (response, _) = kwire::conn::read_response(&frame, ApiKey::SaslAuthenticate, 2).unwrap();
    let ResponseBodyView::SaslAuthenticate(r) = response.body else { panic!() };
    r.error_code()
}

/// The audit log as hooks: authentication (accepted and refused), topic creation and
/// deletion (with their names and errors), and a connection a filter closed, one JSON line
/// each, with the principal; the password appears nowhere.
#[test]
fn the_audit_log_writes_security_events_and_no_secret() {
    use kwire::filter::DenyApis;
    use kwire::messages::create_topics::CreatableTopic;
    use kwire::messages::{CreateTopicsRequest, DeleteTopicsRequest, DescribeAclsRequest};
    use kwire::proxy::AuditLog;
    const PASSWORD: &str = "pw-audit-7781";

    let rt = runtime();
    let broker = kwire::broker::Broker::start(kwire::broker::Config {
        plain_users: vec![("alice".into(), PASSWORD.into())],
        ..Default::default()
    })
    .unwrap();
    let out = Shared::default();
    let proxy = rt
        .block_on(
            Proxy::builder(any_port(), [broker.addr().to_string()])
                .filters(|_: &Arc<ConnInfo>| {
                    let mut chain = FilterChain::new();
                    chain.push(DenyApis::new([ApiKey::DescribeAcls]));
                    chain
                })
                .hooks(AuditLog::new(out.clone()))
                .start(),
        )
        .unwrap();

    let mut c = connect(proxy.local_addr());
    assert_eq!(authenticate(&mut c, "alice", PASSWORD), 0);
    let topics = [CreatableTopic {
        name: "orders".into(),
        num_partitions: 1,
        replication_factor: 1,
        ..Default::default()
    }];
    let create = CreateTopicsRequest { topics: (&topics[..]).into(), timeout_ms: 5000, ..Default::default() };
    send(&mut c, &create, 7, 3);
    read_frame(&mut c).unwrap();
    send(&mut c, &create, 7, 4); // exists already
    read_frame(&mut c).unwrap();
    let names = ["orders".into()];
    send(
        &mut c,
        &DeleteTopicsRequest { topic_names: (&names[..]).into(), timeout_ms: 5000, ..Default::default() },
        5,
        5,
    );
    read_frame(&mut c).unwrap();
    send(&mut c, &DescribeAclsRequest::default(), 3, 6); // denied: the proxy closes
    assert!(read_frame(&mut c).is_err());

    let mut wrong = connect(proxy.local_addr());
    assert_ne!(authenticate(&mut wrong, "alice", "not-the-password"), 0);
    drop(wrong);
    rt.block_on(proxy.shutdown_within(Duration::from_secs(5)));

    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let find = |event: &str, outcome: &str| {
        lines
            .iter()
            .find(|l| l["event"] == event && l["outcome"] == outcome)
            .unwrap_or_else(|| panic!("no {event} {outcome} line in\n{text}"))
    };
    let ok = find("authentication", "ok");
    assert_eq!((ok["principal"].as_str(), ok["mechanism"].as_str()), (Some("alice"), Some("PLAIN")));
    assert_eq!(ok["client"].as_str().unwrap(), c.local_addr().unwrap().to_string());
    let created = find("CreateTopics", "ok");
    assert_eq!(created["objects"], serde_json::json!([{"name": "orders", "error": "NONE"}]), "{text}");
    assert_eq!(created["principal"], "alice");
    let again = find("CreateTopics", "failed");
    assert_eq!(again["objects"][0]["error"], "TOPIC_ALREADY_EXISTS", "{text}");
    assert_eq!(find("DeleteTopics", "ok")["objects"][0]["name"], "orders");
    let closed = find("connection closed by the proxy", "refused");
    assert!(closed["why"].as_str().unwrap().contains("DescribeAcls"), "{text}");
    let refused = find("authentication", "failed");
    assert_eq!((refused["user"].as_str(), refused["principal"].as_str()), (Some("alice"), None), "{text}");
    assert!(
        !text.contains(PASSWORD) && !text.contains("not-the-password"),
        "a password is in the audit log:\n{text}"
    );
}

/// What a Fetch v13 of partition 0 of each id answers, by the response's topic ids: each
/// id with its partition's error code.
fn fetch_by_id(c: &mut TcpStream, ids: &[Uuid], correlation_id: i32) -> Vec<(Uuid, i16)> {
    use kwire::messages::fetch::{FetchPartition, FetchTopic};
    let partitions = [FetchPartition { partition: 0, partition_max_bytes: 1024, ..Default::default() }];
    let topics: Vec<_> = ids
        .iter()
        .map(|&topic_id| FetchTopic { topic_id, partitions: (&partitions[..]).into(), ..Default::default() })
        .collect();
    let request = kwire::messages::FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: (&topics[..]).into(),
        ..Default::default()
    };
    send(c, &request, 13, correlation_id);
    let frame = read_frame(c).unwrap();
    let response = dispatch::parse_response(&frame, ApiKey::Fetch, 13).unwrap();
    assert_eq!(response.header.correlation_id(), correlation_id);
    let ResponseBodyView::Fetch(view) = response.body else { unreachable!() };
    view.responses()
        .iter()
        .map(|t| (t.topic_id(), t.partitions().iter().next().map_or(-1, |p| p.error_code())))
        .collect()
}

/// The ids of topics, asked of the broker directly (Metadata v12).
fn ids_of(broker: SocketAddr, names: &[&str]) -> Vec<Uuid> {
    use kwire::messages::metadata::MetadataRequestTopic;
    let topics: Vec<_> =
        names.iter().map(|&n| MetadataRequestTopic { name: Some(n.into()), ..Default::default() }).collect();
    let mut c = connect(broker);
    send(&mut c, &MetadataRequest { topics: Some((&topics[..]).into()), ..Default::default() }, 12, 1);
    let frame = read_frame(&mut c).unwrap();
    let ResponseBodyView::Metadata(view) =
        dispatch::parse_response(&frame, ApiKey::Metadata, 12).unwrap().body
    else {
        unreachable!()
    };
    view.topics().iter().map(|t| t.topic_id()).collect()
}

/// Topic ids through tenants: a tenant's own topic by id is served, another tenant's is
/// answered UNKNOWN_TOPIC_ID (Fetch, DeleteTopics) and left alone. The proxy
/// asks the broker (Metadata by id) about an id once, for every connection: counted here by
/// the broker's hooks, the cost in round trips of a Fetch by an id the proxy has not seen.
#[test]
fn tenants_reach_their_own_topics_by_id_and_no_others() {
    use kwire::broker::{Action, Hook};
    let rt = runtime();
    let broker = broker();
    broker.create_topic("tenant-a.mine", 1);
    broker.create_topic("tenant-b.theirs", 1);
    let ids = ids_of(broker.addr(), &["tenant-a.mine", "tenant-b.theirs"]);
    let (mine, theirs) = (ids[0], ids[1]);
    assert!(mine != Uuid::ZERO && theirs != Uuid::ZERO && mine != theirs);
    let metadata = broker.add_hook(Hook::new(ApiKey::Metadata, Action::Pass));
    let fetches = broker.add_hook(Hook::new(ApiKey::Fetch, Action::Pass));
    let mut tenants = kwire::proxy::Tenants::new();
    tenants.default_tenant("tenant-a.").unwrap();
    let tenants = Arc::new(tenants);
    let for_filters = tenants.clone();
    let proxy = rt
        .block_on(
            Proxy::builder(any_port(), [broker.addr().to_string()])
                .filters(move |conn| {
                    let mut chain = FilterChain::new();
                    chain.push(for_filters.filter(conn));
                    chain
                })
                .start(),
        )
        .unwrap();
    let asked = || broker.hook_fired(metadata).unwrap();
    let mut c = connect(proxy.local_addr());
    // Its own topic, which no answer through the proxy has shown: one lookup first.
    assert_eq!(fetch_by_id(&mut c, &[mine], 1), [(mine, 0)]);
    assert_eq!(asked(), 1, "one Metadata lookup on first use");
    assert_eq!(fetch_by_id(&mut c, &[mine], 2), [(mine, 0)]);
    let mut other = connect(proxy.local_addr());
    assert_eq!(fetch_by_id(&mut other, &[mine], 3), [(mine, 0)]);
    assert_eq!(asked(), 1, "no lookup after, on any connection");
    // The other tenant's: looked up once, then refused in part as an unknown id, with the
    // id the client sent, beside its own in the same request (a Fetch answer's topics are
    // matched by id: the refused one follows the broker's).
    assert_eq!(fetch_by_id(&mut c, &[theirs, mine], 4), [(mine, 0), (theirs, 100)]);
    assert_eq!(asked(), 2);
    assert_eq!(fetch_by_id(&mut other, &[theirs], 5), [(theirs, 100)]);
    assert_eq!(asked(), 2);
    assert_eq!(broker.hook_fired(fetches), Some(5), "every Fetch went to the broker");
    // DeleteTopics by the other tenant's id: UNKNOWN_TOPIC_ID, and the topic stays.
    use kwire::messages::delete_topics::DeleteTopicState;
    let topics = [DeleteTopicState { name: None, topic_id: theirs, ..Default::default() }];
    let request = kwire::messages::DeleteTopicsRequest {
        topics: (&topics[..]).into(),
        timeout_ms: 5000,
        ..Default::default()
    };
    send(&mut c, &request, 6, 6);
    let frame = read_frame(&mut c).unwrap();
    let ResponseBodyView::DeleteTopics(view) =
        dispatch::parse_response(&frame, ApiKey::DeleteTopics, 6).unwrap().body
    else {
        unreachable!()
    };
    let results: Vec<_> = view.responses().iter().map(|r| (r.topic_id(), r.name(), r.error_code())).collect();
    assert_eq!(results, [(theirs, None, 100)]);
    assert_eq!(
        ids_of(broker.addr(), &["tenant-b.theirs"]),
        [theirs],
        "the other tenant's topic is left alone"
    );
    rt.block_on(proxy.shutdown_within(Duration::from_secs(5)));
}

/// A partition's end offset, asked of the broker directly.
fn end_offset(broker: SocketAddr, topic: &str) -> i64 {
    use kwire::messages::ListOffsetsRequest;
    use kwire::messages::list_offsets::{ListOffsetsPartition, ListOffsetsTopic};
    let partitions = [ListOffsetsPartition { partition_index: 0, timestamp: -1, ..Default::default() }];
    let topics =
        [ListOffsetsTopic { name: topic.into(), partitions: (&partitions).into(), ..Default::default() }];
    let mut c = connect(broker);
    send(
        &mut c,
        &ListOffsetsRequest { replica_id: -1, topics: (&topics).into(), ..Default::default() },
        7,
        1,
    );
    let frame = read_frame(&mut c).unwrap();
    let ResponseBodyView::ListOffsets(l) =
        dispatch::parse_response(&frame, ApiKey::ListOffsets, 7).unwrap().body
    else {
        panic!()
    };
    l.topics().iter().next().unwrap().partitions().iter().next().unwrap().offset()
}

/// The docs' example filter judges topics by name. Produce v13 names them by id only: the
/// proxy looks the ids up, the filter refuses `audit.*` and an id nobody knows, and the
/// request's other topic is stored, all in one answer in the client's order. Fetch v13 the
/// same, with a filter of reads.
#[test]
fn a_name_filter_refuses_topics_named_by_id_and_only_them() {
    use kwire::messages::produce::{PartitionProduceData, TopicProduceData};
    use kwire::records::{BatchBuilder, NewRecord};
    let rt = runtime();
    let broker = broker();
    broker.create_topic("audit.logins", 1);
    broker.create_topic("orders", 1);
    let ids = ids_of(broker.addr(), &["audit.logins", "orders"]);
    let proxy = rt
        .block_on(
            Proxy::builder(any_port(), [broker.addr().to_string()])
                .filters(|conn: &Arc<ConnInfo>| {
                    let mut chain = FilterChain::new();
                    chain.push(AuditTopics(conn.clone())).push(AuditReads(conn.clone()));
                    chain
                })
                .start(),
        )
        .unwrap();
    let records = [NewRecord::new(Some(b"k"), Some(b"secret login"))];
    let mut batch = Vec::new();
    BatchBuilder::new(0, 1_700_000_000_000, &records).encode_to_vec(&mut batch).unwrap();
    let nobody = Uuid([0x5a; 16]);
    let produce = |ids: &[Uuid]| {
        let topics: Vec<TopicProduceData<'_>> = ids
            .iter()
            .map(|&topic_id| TopicProduceData {
                topic_id,
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: Some(batch.as_slice().into()),
                    ..Default::default()
                }]
                .into(),
                ..Default::default()
            })
            .collect();
        ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: topics.into(), ..Default::default() }
    };
    let mut c = connect(proxy.local_addr());
    // A client that never asked ApiVersions or Metadata, naming topics by id at v13.
    send(&mut c, &produce(&[ids[0], ids[1], nobody]), 13, 1);
    let frame = read_frame(&mut c).unwrap();
    let ResponseBodyView::Produce(p) = dispatch::parse_response(&frame, ApiKey::Produce, 13).unwrap().body
    else {
        panic!()
    };
    let got: Vec<(Uuid, i16)> = p
        .responses()
        .iter()
        .map(|t| (t.topic_id(), t.partition_responses().iter().next().unwrap().error_code()))
        .collect();
    let refused = ErrorCode::TopicAuthorizationFailed.to_i16();
    assert_eq!(got, [(ids[0], refused), (ids[1], 0), (nobody, refused)]);
    assert_eq!(end_offset(broker.addr(), "audit.logins"), 0, "the audit record must not land");
    assert_eq!(end_offset(broker.addr(), "orders"), 1, "the allowed topic's record lands");
    // Every topic refused: answered without the broker.
    send(&mut c, &produce(&[ids[0]]), 13, 2);
    let frame = read_frame(&mut c).unwrap();
    let response = dispatch::parse_response(&frame, ApiKey::Produce, 13).unwrap();
    assert_eq!(response.header.correlation_id(), 2);
    assert_eq!(end_offset(broker.addr(), "audit.logins"), 0);
    // Reads by id (Fetch v13): the orders topic is served, the audit topic and the unknown
    // id are refused.
    broker.create_topic("audit.reads", 1);
    let audit_reads = ids_of(broker.addr(), &["audit.reads"])[0];
    let refused = ErrorCode::TopicAuthorizationFailed.to_i16();
    assert_eq!(
        fetch_by_id(&mut c, &[ids[1], audit_reads, nobody], 3),
        [(ids[1], 0), (audit_reads, refused), (nobody, refused)]
    );
    // A version past what the proxy serves is refused as Kafka refuses one: the connection
    // closes, and nothing lands.
    let mut past = Vec::new();
    for part in [&0i16.to_be_bytes()[..], &99i16.to_be_bytes(), &4i32.to_be_bytes(), &[0xff, 0xff, 0, 0]] {
        past.extend_from_slice(part);
    }
    c.write_all(&(past.len() as u32).to_be_bytes()).unwrap();
    c.write_all(&past).unwrap();
    assert!(read_frame(&mut c).is_err(), "the connection closes");
    drop(c);
    rt.block_on(proxy.shutdown_within(Duration::from_secs(5)));
}

/// A `Write` the test reads back: the text log's lines.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A filter that wants nothing: with it, the chain learns topic names from the answers
/// before the client gets them, so the next request's line names topics it gives by id.
struct Watching;

impl kwire::filter::Filter for Watching {
    fn wants_request(&self, _: ApiKey, _: i16) -> bool {
        false
    }
}

/// The text log's pair lines say what each request is about, as `kwire decode` does for a
/// capture: the topics (named too where the request gives only their ids), the records
/// and their codec, in the request's and the answer's words.
#[test]
fn the_text_log_names_topics_and_records_of_each_pair() {
    let rt = runtime();
    let broker = broker();
    let lines = Lines::default();
    let log = kwire::proxy::TrafficLog::new(kwire::proxy::LogFormat::Text, lines.clone());
    let proxy = rt
        .block_on(
            Proxy::builder(any_port(), [broker.addr().to_string()])
                .filters(|_: &Arc<ConnInfo>| {
                    let mut chain = FilterChain::new();
                    chain.push(Watching);
                    chain
                })
                .hooks(log)
                .start(),
        )
        .unwrap();
    let config =
        kwire::client::Config { compression: kwire::records::Compression::Gzip, ..Default::default() };
    let mut client = kwire::client::Client::connect_with(proxy.local_addr(), config).unwrap();
    client.create_topic("orders", 1).unwrap();
    let records = [
        kwire::records::NewRecord::new(None, Some(b"a")),
        kwire::records::NewRecord::new(None, Some(b"b")),
        kwire::records::NewRecord::new(None, Some(b"c")),
    ];
    client.produce("orders", 0, &records).unwrap();
    drop(client);
    // Fetch v13 names the topic by id only.
    let id = ids_of(broker.addr(), &["orders"])[0];
    let mut c = connect(proxy.local_addr());
    assert_eq!(fetch_by_id(&mut c, &[id], 1), [(id, 0)]);
    drop(c);
    rt.block_on(proxy.shutdown());
    // The log writes on a thread of its own.
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        if text.lines().any(|l| l.split(' ').nth(3) == Some("Fetch")) || Instant::now() > deadline {
            break text;
        }
        thread::sleep(Duration::from_millis(20));
    };
    let line = |api: &str| {
        text.lines()
            .find(|l| l.split(' ').nth(3) == Some(api))
            .unwrap_or_else(|| panic!("no {api} line in:\n{text}"))
            .to_string()
    };
    let words = |l: &str| l.split(' ').skip(4).map(String::from).collect::<Vec<_>>();
    let created = words(&line("CreateTopics"));
    assert_eq!(created[2], "topics=orders", "{created:?}");
    let produced = words(&line("Produce"));
    assert_eq!(produced[2..5], ["topics=orders", "records=3", "gzip"], "{produced:?}");
    assert!(produced[5].starts_with("resp="), "{produced:?}");
    let fetch = words(&line("Fetch"));
    assert_eq!(fetch[2], "topics=orders", "{fetch:?}");
    // The answer's records, after the latency.
    assert_eq!(fetch[3..].iter().position(|w| w.starts_with("resp=")), Some(0), "{fetch:?}");
    assert_eq!(fetch[5..7], ["records=3", "gzip"], "{fetch:?}");
}

/// Offsets of `audit.*` topics neither committed nor listed, and partition 1 of any other
/// topic not listed: refused by name, the rest forwarded.
struct AuditOffsets;

impl kwire::filter::Filter for AuditOffsets {
    fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
        matches!(api_key, ApiKey::OffsetCommit | ApiKey::ListOffsets)
    }
    fn on_request<'a>(&mut self, request: &dispatch::Request<'a>) -> kwire::filter::RequestAction<'a> {
        use kwire::messages::RequestBodyView;
        let mut refused = kwire::filter::Refusals::new();
        match request.body {
            RequestBodyView::OffsetCommit(c) => {
                for (t, topic) in c.topics().iter().enumerate() {
                    if topic.name().starts_with("audit.") {
                        refused.topic(t, ErrorCode::TopicAuthorizationFailed, None);
                    }
                }
            }
            RequestBodyView::ListOffsets(l) => {
                for (t, topic) in l.topics().iter().enumerate() {
                    if topic.name().starts_with("audit.") {
                        refused.topic(t, ErrorCode::TopicAuthorizationFailed, None);
                        continue;
                    }
                    for (p, partition) in topic.partitions().iter().enumerate() {
                        if partition.partition_index() == 1 {
                            refused.partition(t, p, ErrorCode::PolicyViolation, None);
                        }
                    }
                }
            }
            _ => {}
        }
        kwire::filter::RequestAction::Refuse(refused)
    }
}

/// OffsetCommit and ListOffsets answered in part through the proxy: the broker commits and
/// lists only what the filter let through, and the client gets one answer per request with
/// every entry in its order; a commit of refused topics only never reaches the broker.
#[test]
fn offset_commits_and_listings_are_answered_in_part() {
    use kwire::messages::list_offsets::{ListOffsetsPartition, ListOffsetsTopic};
    use kwire::messages::offset_commit::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
    use kwire::messages::{ListOffsetsRequest, OffsetCommitRequest};
    use kwire::records::NewRecord;
    let rt = runtime();
    let broker = broker();
    broker.create_topic("audit.logins", 1);
    broker.create_topic("orders", 2);
    let mut direct = kwire::client::Client::connect(broker.addr()).unwrap();
    let records = [NewRecord::new(Some(b"k"), Some(b"v")), NewRecord::new(Some(b"k"), Some(b"w"))];
    direct.produce("orders", 0, &records).unwrap();
    let proxy = rt
        .block_on(
            Proxy::builder(any_port(), [broker.addr().to_string()])
                .filters(|_: &Arc<ConnInfo>| {
                    let mut chain = FilterChain::new();
                    chain.push(AuditOffsets);
                    chain
                })
                .start(),
        )
        .unwrap();
    let mut c = connect(proxy.local_addr());
    let commit = |topics: &[(&'static str, &[(i32, i64)])]| -> OffsetCommitRequest<'static> {
        let topics: Vec<OffsetCommitRequestTopic<'static>> = topics
            .iter()
            .map(|&(name, partitions)| OffsetCommitRequestTopic {
                name: name.into(),
                partitions: partitions
                    .iter()
                    .map(|&(partition_index, committed_offset)| OffsetCommitRequestPartition {
                        partition_index,
                        committed_offset,
                        ..Default::default()
                    })
                    .collect::<Vec<_>>()
                    .into(),
                ..Default::default()
            })
            .collect();
        OffsetCommitRequest {
            group_id: "g".into(),
            generation_id_or_member_epoch: -1,
            topics: topics.into(),
            ..Default::default()
        }
    };
    let committed = |frame: &[u8], correlation_id: i32| -> Vec<(String, Vec<(i32, i16)>)> {
        let response = dispatch::parse_response(frame, ApiKey::OffsetCommit, 8).unwrap();
        assert_eq!(response.header.correlation_id(), correlation_id);
        let ResponseBodyView::OffsetCommit(body) = response.body else { panic!() };
        body.topics()
            .iter()
            .map(|t| {
                let parts = t.partitions().iter().map(|p| (p.partition_index(), p.error_code())).collect();
                (t.name().to_string(), parts)
            })
            .collect()
    };
    let denied = ErrorCode::TopicAuthorizationFailed.to_i16();
    send(&mut c, &commit(&[("audit.logins", &[(0, 5)]), ("orders", &[(0, 1), (1, 0)])]), 8, 1);
    assert_eq!(
        committed(&read_frame(&mut c).unwrap(), 1),
        [("audit.logins".to_string(), vec![(0, denied)]), ("orders".to_string(), vec![(0, 0), (1, 0)])]
    );
    assert_eq!(direct.committed_offset("g", "orders", 0).unwrap(), Some(1));
    assert_eq!(direct.committed_offset("g", "orders", 1).unwrap(), Some(0));
    assert_eq!(
        direct.committed_offset("g", "audit.logins", 0).unwrap(),
        None,
        "the refused commit must not land"
    );
    // Only refused topics: answered by the proxy, nothing committed.
    send(&mut c, &commit(&[("audit.logins", &[(0, 7)])]), 8, 2);
    assert_eq!(committed(&read_frame(&mut c).unwrap(), 2), [("audit.logins".to_string(), vec![(0, denied)])]);
    assert_eq!(direct.committed_offset("g", "audit.logins", 0).unwrap(), None);
    // ListOffsets: partition 1 and the audit topic refused, partition 0's end offset listed.
    let latest =
        |partition_index| ListOffsetsPartition { partition_index, timestamp: -1, ..Default::default() };
    let orders = [latest(0), latest(1)];
    let audit = [latest(0)];
    let topics = [
        ListOffsetsTopic { name: "orders".into(), partitions: (&orders).into(), ..Default::default() },
        ListOffsetsTopic { name: "audit.logins".into(), partitions: (&audit).into(), ..Default::default() },
    ];
    send(
        &mut c,
        &ListOffsetsRequest { replica_id: -1, topics: (&topics).into(), ..Default::default() },
        7,
        3,
    );
    let frame = read_frame(&mut c).unwrap();
    let response = dispatch::parse_response(&frame, ApiKey::ListOffsets, 7).unwrap();
    assert_eq!(response.header.correlation_id(), 3);
    let ResponseBodyView::ListOffsets(l) = response.body else { panic!() };
    // (topic, [(partition, error, offset)]).
    type Listed = Vec<(String, Vec<(i32, i16, i64)>)>;
    let listed: Listed = l
        .topics()
        .iter()
        .map(|t| {
            let parts =
                t.partitions().iter().map(|p| (p.partition_index(), p.error_code(), p.offset())).collect();
            (t.name().to_string(), parts)
        })
        .collect();
    let policy = ErrorCode::PolicyViolation.to_i16();
    assert_eq!(
        listed,
        [
            ("orders".to_string(), vec![(0, 0, 2), (1, policy, -1)]),
            ("audit.logins".to_string(), vec![(0, denied, -1)])
        ]
    );
    rt.block_on(proxy.shutdown_within(Duration::from_secs(5)));
}

/// One request through a connection and its answer's body, parsed.
fn ask<'f>(
    c: &mut TcpStream,
    body: &impl AnyBody,
    version: i16,
    frame: &'f mut Vec<u8>,
) -> ResponseBodyView<'f> {
    send(c, body, version, 9);
    *frame = read_frame(c).unwrap();
    dispatch::parse_response(frame, body.api_key(), version).unwrap().body
}

/// A tenant's configs: (type, name, error code, value of `retention.ms` if given), by
/// DescribeConfigs v4.
fn describe_retention(c: &mut TcpStream, resources: &[(i8, &str)]) -> Vec<(i8, String, i16, Option<String>)> {
    use kwire::messages::DescribeConfigsRequest;
    use kwire::messages::describe_configs::DescribeConfigsResource;
    let keys = [kwire::Str::from("retention.ms")];
    let resources: Vec<_> = resources
        .iter()
        .map(|&(ty, name)| DescribeConfigsResource {
            resource_type: ty,
            resource_name: name.into(),
            configuration_keys: Some((&keys[..]).into()),
            ..Default::default()
        })
        .collect();
    let request = DescribeConfigsRequest { resources: (&resources[..]).into(), ..Default::default() };
    let mut frame = Vec::new();
    let ResponseBodyView::DescribeConfigs(view) = ask(c, &request, 4, &mut frame) else { unreachable!() };
    view.results()
        .iter()
        .map(|r| {
            let value = r.configs().iter().find(|e| e.name() == "retention.ms").and_then(|e| e.value());
            (r.resource_type(), r.resource_name().to_string(), r.error_code(), value.map(str::to_string))
        })
        .collect()
}

/// IncrementalAlterConfigs v1 setting `retention.ms` on topics: (name, error code) per entry.
fn set_retention(c: &mut TcpStream, topics: &[&str], value: &str) -> Vec<(String, i16)> {
    use kwire::messages::IncrementalAlterConfigsRequest;
    use kwire::messages::incremental_alter_configs::{AlterConfigsResource, AlterableConfig};
    let config = [AlterableConfig {
        name: "retention.ms".into(),
        config_operation: 0,
        value: Some(value.into()),
        ..Default::default()
    }];
    let resources: Vec<_> = topics
        .iter()
        .map(|&t| AlterConfigsResource {
            resource_type: 2,
            resource_name: t.into(),
            configs: (&config[..]).into(),
            ..Default::default()
        })
        .collect();
    let request = IncrementalAlterConfigsRequest { resources: (&resources[..]).into(), ..Default::default() };
    let mut frame = Vec::new();
    let ResponseBodyView::IncrementalAlterConfigs(view) = ask(c, &request, 1, &mut frame) else {
        unreachable!()
    };
    view.responses().iter().map(|r| (r.resource_name().to_string(), r.error_code())).collect()
}

/// A binding: (resource type, name, pattern type).
type Pattern<'a> = (i8, &'a str, i8);

/// CreateAcls v3 of ALLOW READ bindings for `User:ANONYMOUS`: the error code per creation.
fn allow_anonymous_reads(c: &mut TcpStream, patterns: &[Pattern<'_>]) -> Vec<i16> {
    use kwire::messages::CreateAclsRequest;
    use kwire::messages::create_acls::AclCreation;
    let creations: Vec<_> = patterns
        .iter()
        .map(|&(ty, name, pattern)| AclCreation {
            resource_type: ty,
            resource_name: name.into(),
            resource_pattern_type: pattern,
            principal: "User:ANONYMOUS".into(),
            host: "*".into(),
            operation: 3,
            permission_type: 3,
            ..Default::default()
        })
        .collect();
    let request = CreateAclsRequest { creations: (&creations[..]).into(), ..Default::default() };
    let mut frame = Vec::new();
    let ResponseBodyView::CreateAcls(view) = ask(c, &request, 3, &mut frame) else { unreachable!() };
    view.results().iter().map(|r| r.error_code()).collect()
}

/// DescribeAcls v3: the error code and the bindings (type, name, pattern), sorted.
fn describe_acls(c: &mut TcpStream, ty: i8, name: Option<&str>, pattern: i8) -> (i16, Vec<(i8, String, i8)>) {
    let request = kwire::messages::DescribeAclsRequest {
        resource_type_filter: ty,
        resource_name_filter: name.map(Into::into),
        pattern_type_filter: pattern,
        principal_filter: None,
        host_filter: None,
        operation: 1,
        permission_type: 1,
        ..Default::default()
    };
    let mut frame = Vec::new();
    let ResponseBodyView::DescribeAcls(view) = ask(c, &request, 3, &mut frame) else { unreachable!() };
    let mut found: Vec<_> = view
        .resources()
        .iter()
        .map(|r| (r.resource_type(), r.resource_name().to_string(), r.pattern_type()))
        .collect();
    found.sort();
    (view.error_code(), found)
}

/// A binding as an answer names it: (resource type, name, pattern type).
type Binding = (i8, String, i8);

/// DeleteAcls v3: per filter, its error code and the bindings it deleted, sorted.
fn delete_acls(c: &mut TcpStream, filters: &[(i8, Option<&str>, i8)]) -> Vec<(i16, Vec<Binding>)> {
    use kwire::messages::delete_acls::DeleteAclsFilter;
    let filters: Vec<_> = filters
        .iter()
        .map(|&(ty, name, pattern)| DeleteAclsFilter {
            resource_type_filter: ty,
            resource_name_filter: name.map(Into::into),
            pattern_type_filter: pattern,
            principal_filter: None,
            host_filter: None,
            operation: 1,
            permission_type: 1,
            ..Default::default()
        })
        .collect();
    let request = kwire::messages::DeleteAclsRequest { filters: (&filters[..]).into(), ..Default::default() };
    let mut frame = Vec::new();
    let ResponseBodyView::DeleteAcls(view) = ask(c, &request, 3, &mut frame) else { unreachable!() };
    view.filter_results()
        .iter()
        .map(|r| {
            let mut deleted: Vec<_> = r
                .matching_acls()
                .iter()
                .map(|a| (a.resource_type(), a.resource_name().to_string(), a.pattern_type()))
                .collect();
            deleted.sort();
            (r.error_code(), deleted)
        })
        .collect()
}

/// Whether `User:ANONYMOUS`, straight to the broker, may read a topic.
fn anonymous_reads(broker: SocketAddr, topic: &str) -> bool {
    let mut client = kwire::client::Client::connect(broker).unwrap();
    match client.fetch(topic, 0, 0) {
        Ok(_) => true,
        Err(e) if e.error_code() == Some(ErrorCode::TopicAuthorizationFailed) => false,
        Err(e) => panic!("fetch {topic}: {e}"),
    }
}

/// Two tenants, each through its own proxy, in front of a broker with an authorizer: each
/// reads and changes its own topic's configs and not the other's (which it reaches only as
/// a topic that does not exist); broker configs are refused per entry. ACLs a tenant
/// creates land in its prefix and really grant on the broker (to `User:ANONYMOUS`, no super
/// user); describe and delete see only the tenant's own bindings, a tenant's `*` is a
/// PREFIXED binding on its prefix, and a delete filter without a name deletes exactly the
/// tenant's bindings.
#[test]
fn tenants_have_configs_and_acls_of_their_own() {
    let (topic, group, cluster) = (2i8, 3i8, 4i8);
    let (any, matching, literal, prefixed) = (1i8, 2i8, 3i8, 4i8);
    let rt = runtime();
    let config = kwire::broker::Config {
        authorizer: Some(kwire::broker::Authorizer {
            super_users: vec!["User:admin".into()],
            ..Default::default()
        }),
        // The proxies connect as ANONYMOUS. DescribeAcls needs DESCRIBE on the cluster,
        // CreateAcls and DeleteAcls ALTER on it, and the config APIs ALTER_CONFIGS (which
        // implies DESCRIBE_CONFIGS) on the topics: both tenants' prefixes, so that only the
        // proxy keeps them apart.
        acls: [
            (cluster, "kafka-cluster", literal, 8),
            (cluster, "kafka-cluster", literal, 7),
            (topic, "tenant-", prefixed, 11),
        ]
        .into_iter()
        .map(|(resource_type, name, pattern_type, operation)| kwire::broker::Acl {
            resource_type,
            resource_name: name.into(),
            pattern_type,
            principal: "User:ANONYMOUS".into(),
            host: "*".into(),
            operation,
            permission_type: 3,
        })
        .collect(),
        ..Default::default()
    };
    let broker = kwire::broker::Broker::start(config).unwrap();
    broker.create_topic("tenant-a.orders", 1);
    broker.create_topic("tenant-b.orders", 1);
    let proxy_for = |prefix: &str| {
        let mut tenants = kwire::proxy::Tenants::new();
        tenants.default_tenant(prefix).unwrap();
        let tenants = Arc::new(tenants);
        rt.block_on(
            Proxy::builder(any_port(), [broker.addr().to_string()])
                .filters(move |conn| {
                    let mut chain = FilterChain::new();
                    chain.push(tenants.filter(conn));
                    chain
                })
                .start(),
        )
        .unwrap()
    };
    let (proxy_a, proxy_b) = (proxy_for("tenant-a."), proxy_for("tenant-b."));
    let (mut a, mut b) = (connect(proxy_a.local_addr()), connect(proxy_b.local_addr()));
    let mut direct = connect(broker.addr());

    // Configs: each its own.
    assert_eq!(set_retention(&mut a, &["orders"], "1000"), [("orders".to_string(), 0)]);
    assert_eq!(set_retention(&mut b, &["orders"], "2000"), [("orders".to_string(), 0)]);
    let own = |v: &str| (topic, "orders".to_string(), 0, Some(v.to_string()));
    assert_eq!(describe_retention(&mut a, &[(topic, "orders")]), [own("1000")]);
    assert_eq!(describe_retention(&mut b, &[(topic, "orders")]), [own("2000")]);
    // The other's, by its broker-side name: a topic that does not exist, and left alone.
    let unknown = ErrorCode::UnknownTopicOrPartition.to_i16();
    assert_eq!(
        describe_retention(&mut a, &[(topic, "tenant-b.orders")]),
        [(topic, "tenant-b.orders".to_string(), unknown, None)]
    );
    assert_eq!(
        set_retention(&mut a, &["tenant-b.orders", "orders"], "3000"),
        [("tenant-b.orders".to_string(), unknown), ("orders".to_string(), 0)]
    );
    assert_eq!(
        describe_retention(&mut direct, &[(topic, "tenant-b.orders"), (topic, "tenant-a.orders")]),
        [
            (topic, "tenant-b.orders".to_string(), 0, Some("2000".to_string())),
            (topic, "tenant-a.orders".to_string(), 0, Some("3000".to_string())),
        ]
    );
    // Broker configs: refused per entry, in its place; the broker answers the rest.
    let refused = ErrorCode::ClusterAuthorizationFailed.to_i16();
    assert_eq!(
        describe_retention(&mut a, &[(4, "1"), (topic, "orders")]),
        [(4, "1".to_string(), refused, None), own("3000")]
    );

    // ACLs: nothing granted yet.
    assert!(!anonymous_reads(broker.addr(), "tenant-a.orders"));
    assert_eq!(
        allow_anonymous_reads(&mut a, &[(topic, "orders", literal), (cluster, "kafka-cluster", literal)]),
        [0, refused]
    );
    assert!(anonymous_reads(broker.addr(), "tenant-a.orders"), "A's ACL grants on the broker");
    assert!(!anonymous_reads(broker.addr(), "tenant-b.orders"), "and on A's topic only");
    assert_eq!(allow_anonymous_reads(&mut b, &[(topic, "*", literal), (group, "g", prefixed)]), [0, 0]);
    assert!(anonymous_reads(broker.addr(), "tenant-b.orders"), "B's `*` grants on B's topics");
    assert_eq!(allow_anonymous_reads(&mut a, &[(topic, "ord", prefixed)]), [0]);
    // On the broker: every binding in its tenant's prefix, B's `*` as PREFIXED.
    let (code, all) = describe_acls(&mut direct, any, None, any);
    assert_eq!(code, 0);
    assert_eq!(
        all,
        [
            (topic, "tenant-".to_string(), prefixed),
            (topic, "tenant-a.ord".to_string(), prefixed),
            (topic, "tenant-a.orders".to_string(), literal),
            (topic, "tenant-b.".to_string(), prefixed),
            (group, "tenant-b.g".to_string(), prefixed),
            (cluster, "kafka-cluster".to_string(), literal),
        ]
    );
    // Described through the proxy: each its own, as it made them.
    let mine_a = vec![(topic, "ord".to_string(), prefixed), (topic, "orders".to_string(), literal)];
    assert_eq!(describe_acls(&mut a, any, None, any), (0, mine_a.clone()));
    assert_eq!(describe_acls(&mut a, topic, Some("orders"), matching), (0, mine_a.clone()));
    assert_eq!(describe_acls(&mut a, topic, Some("orders"), literal), (0, vec![mine_a[1].clone()]));
    assert_eq!(
        describe_acls(&mut b, any, None, any),
        (0, vec![(topic, "*".to_string(), literal), (group, "g".to_string(), prefixed)])
    );
    assert_eq!(
        describe_acls(&mut b, topic, Some("orders"), matching),
        (0, vec![(topic, "*".to_string(), literal)])
    );
    assert_eq!(describe_acls(&mut a, cluster, None, any), (refused, vec![]));

    // Deleted through the proxy: A's MATCH deletes A's two and not B's `*`, which matches
    // the broker-side name too.
    assert_eq!(delete_acls(&mut a, &[(topic, Some("orders"), matching)]), [(0, mine_a.clone())]);
    assert!(!anonymous_reads(broker.addr(), "tenant-a.orders"));
    assert!(anonymous_reads(broker.addr(), "tenant-b.orders"));
    assert_eq!(
        describe_acls(&mut direct, topic, None, any).1,
        [(topic, "tenant-".to_string(), prefixed), (topic, "tenant-b.".to_string(), prefixed)]
    );
    // A filter without a name (the Java AdminClient's `AclBindingFilter.ANY`): the proxy
    // looks up the broker's bindings first, and deletes exactly A's, of every type it
    // names; B's (`*` and its group), the cluster's and the proxies' own stay.
    let again = [(topic, "orders", literal), (topic, "ord", prefixed), (group, "*", literal)];
    assert_eq!(allow_anonymous_reads(&mut a, &again), [0, 0, 0]);
    assert_eq!(delete_acls(&mut a, &[(topic, None, prefixed)]), [(0, vec![mine_a[0].clone()])]);
    assert_eq!(
        delete_acls(&mut a, &[(any, None, any), (cluster, None, any)]),
        [
            (0, vec![(topic, "orders".to_string(), literal), (group, "*".to_string(), literal)]),
            (refused, vec![])
        ]
    );
    assert!(!anonymous_reads(broker.addr(), "tenant-a.orders"));
    assert!(anonymous_reads(broker.addr(), "tenant-b.orders"));
    assert_eq!(delete_acls(&mut a, &[(any, None, any)]), [(0, vec![])]);
    assert_eq!(
        describe_acls(&mut direct, any, None, any).1,
        [
            (topic, "tenant-".to_string(), prefixed),
            (topic, "tenant-b.".to_string(), prefixed),
            (group, "tenant-b.g".to_string(), prefixed),
            (cluster, "kafka-cluster".to_string(), literal)
        ]
    );
    assert_eq!(
        delete_acls(&mut b, &[(topic, Some("*"), literal), (cluster, Some("kafka-cluster"), literal)]),
        [(0, vec![(topic, "*".to_string(), literal)]), (refused, vec![])]
    );
    assert!(!anonymous_reads(broker.addr(), "tenant-b.orders"));
    assert_eq!(
        describe_acls(&mut direct, any, None, any).1,
        [
            (topic, "tenant-".to_string(), prefixed),
            (group, "tenant-b.g".to_string(), prefixed),
            (cluster, "kafka-cluster".to_string(), literal)
        ]
    );
    rt.block_on(proxy_a.shutdown_within(Duration::from_secs(5)));
    rt.block_on(proxy_b.shutdown_within(Duration::from_secs(5)));
}

/// A request frame with its size prefix.
fn request_frame(body: &impl AnyBody, version: i16, correlation_id: i32) -> Vec<u8> {
    let header = kwire::frame::RequestHeader {
        correlation_id,
        client_id: Some("proxy-lib-test"),
        ..Default::default()
    };
    let mut out = vec![0u8; dispatch::request_len(body, version, &header).unwrap()];
    dispatch::encode_request(body, version, correlation_id, Some("proxy-lib-test"), &mut out).unwrap();
    out
}

/// A tenant's renamed Produce requests reach the broker byte for byte as the request
/// decoded, renamed and encoded again, with the right size prefix: large ones go as a new
/// head and their records written from the proxy's read buffer, small ones copied into the
/// batch, several in one read and one write.
#[test]
fn renamed_produce_requests_reach_the_broker_as_if_encoded_renamed() {
    use kwire::messages::produce::{PartitionProduceData, TopicProduceData};
    let rt = runtime();
    // The upstream hands over every frame it reads, and answers none.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = listener.local_addr().unwrap();
    let (got_tx, got_rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else { return };
        while let Ok(frame) = read_frame(&mut s) {
            if got_tx.send(frame).is_err() {
                return;
            }
        }
    });
    let mut tenants = kwire::proxy::Tenants::new();
    tenants.default_tenant("tenant-a.").unwrap();
    let tenants = Arc::new(tenants);
    let proxy = rt
        .block_on(
            Proxy::builder(any_port(), [upstream.to_string()])
                .filters(move |conn| {
                    let mut chain = FilterChain::new();
                    chain.push(tenants.filter(conn));
                    chain
                })
                .start(),
        )
        .unwrap();
    let (small, large) = (filled_batch(3, 100), filled_batch(40, 1000));
    // (version, batch, partitions, topics)
    let cases: [(i16, &[u8], i32, &[&str]); 5] = [
        (9, &large, 3, &["orders"]),
        (3, &small, 1, &["orders"]),
        (12, &large, 2, &["orders", "payments"]),
        (9, &small, 2, &["orders", "payments"]),
        (7, &large, 1, &["orders"]),
    ];
    let (mut sent, mut want) = (Vec::new(), Vec::new());
    for (i, &(version, batch, partitions, names)) in cases.iter().enumerate() {
        let partitions: Vec<PartitionProduceData<'_>> = (0..partitions)
            .map(|p| PartitionProduceData { index: p, records: Some(batch.into()), ..Default::default() })
            .collect();
        for (prefix, out) in [("", &mut sent), ("tenant-a.", &mut want)] {
            let names: Vec<String> = names.iter().map(|n| format!("{prefix}{n}")).collect();
            let topics: Vec<TopicProduceData<'_>> = names
                .iter()
                .map(|n| TopicProduceData {
                    name: n.as_str().into(),
                    partition_data: partitions.as_slice().into(),
                    ..Default::default()
                })
                .collect();
            let tx = format!("{prefix}tx");
            let request = ProduceRequest {
                transactional_id: Some(tx.as_str().into()),
                acks: -1,
                timeout_ms: 5000,
                topic_data: topics.as_slice().into(),
                ..Default::default()
            };
            out.push(request_frame(&request, version, i as i32));
        }
    }
    let sent = sent.concat();
    assert!(sent.len() > 150_000);
    let mut client = connect(proxy.local_addr());
    client.write_all(&sent).unwrap();
    for (i, want) in want.iter().enumerate() {
        let got = got_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(got == want[4..], "request {i}: {} bytes, {} wanted", got.len(), want.len() - 4);
    }
}

/// A tenant's renamed Fetch answers reach the client byte for byte as the answer the broker
/// would give without the prefix: a large one as a new head and its records written from the
/// proxy's read buffer, small ones copied into the batch, several in one write.
#[test]
fn renamed_fetch_answers_reach_the_client_as_if_encoded_unprefixed() {
    use kwire::messages::fetch::{FetchPartition, FetchTopic, FetchableTopicResponse, PartitionData};
    use kwire::messages::{FetchRequest, FetchResponse};
    let (small, large) = (filled_batch(3, 100), filled_batch(1000, 1000));
    // The answers, by the prefix their topics carry: (broker's, client's) for each request.
    let answer = |prefix: &str, records: &[u8]| {
        let partitions: Vec<PartitionData<'_>> = (0..2)
            .map(|p| PartitionData {
                partition_index: p,
                high_watermark: 10,
                records: Some(records.into()),
                ..Default::default()
            })
            .collect();
        let names = [format!("{prefix}orders"), format!("{prefix}payments")];
        let topics: Vec<FetchableTopicResponse<'_>> = names
            .iter()
            .map(|n| FetchableTopicResponse {
                topic: n.as_str().into(),
                partitions: partitions.as_slice().into(),
                ..Default::default()
            })
            .collect();
        let body = FetchResponse { responses: topics.as_slice().into(), ..Default::default() };
        let mut out = vec![0u8; dispatch::response_len(&body, 12).unwrap()];
        dispatch::encode_response(&body, 12, 0, &mut out).unwrap();
        out
    };
    let records = [&large[..], &small, &small, &large, &small];
    let broker: Vec<Vec<u8>> = records.iter().map(|r| answer("tenant-a.", r)).collect();
    let want: Vec<Vec<u8>> = records.iter().map(|r| answer("", r)).collect();
    assert!(broker[0].len() > 2_000_000);
    // The upstream answers the requests in turn, with their correlation ids, all the small
    // ones in one write.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = listener.local_addr().unwrap();
    thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else { return };
        let mut pending = Vec::new();
        for mut a in broker {
            let Ok(frame) = read_frame(&mut s) else { return };
            a[4..8].copy_from_slice(&frame[4..8]);
            let large = a.len() > 100_000;
            pending.extend_from_slice(&a);
            if large || pending.len() > 3 * 1000 {
                if s.write_all(&pending).is_err() {
                    return;
                }
                pending.clear();
            }
        }
        let _ = s.write_all(&pending);
        let mut rest = [0u8; 64];
        while s.read(&mut rest).is_ok_and(|n| n > 0) {}
    });
    let mut tenants = kwire::proxy::Tenants::new();
    tenants.default_tenant("tenant-a.").unwrap();
    let tenants = Arc::new(tenants);
    let (rt, proxy) = rt_proxy(upstream, tenants);
    let partitions = [FetchPartition { partition: 0, ..Default::default() }];
    let topics =
        [FetchTopic { topic: "orders".into(), partitions: partitions[..].into(), ..Default::default() }];
    let request = FetchRequest { topics: topics[..].into(), ..Default::default() };
    let mut client = connect(proxy.local_addr());
    for i in 0..want.len() {
        client.write_all(&request_frame(&request, 12, i as i32)).unwrap();
    }
    for (i, want) in want.iter().enumerate() {
        let got = read_frame(&mut client).unwrap();
        assert_eq!(got[..4], (i as i32).to_be_bytes(), "answer {i}");
        assert!(got[4..] == want[8..], "answer {i}: {} bytes, {} wanted", got.len(), want.len() - 4);
    }
    rt.block_on(proxy.shutdown_within(Duration::from_secs(5)));
}

/// A proxy whose connections are the default tenant's, in front of `upstream`.
fn rt_proxy(
    upstream: SocketAddr,
    tenants: Arc<kwire::proxy::Tenants>,
) -> (tokio::runtime::Runtime, kwire::proxy::Proxy) {
    let rt = runtime();
    let proxy = rt
        .block_on(
            Proxy::builder(any_port(), [upstream.to_string()])
                .filters(move |conn| {
                    let mut chain = FilterChain::new();
                    chain.push(tenants.filter(conn));
                    chain
                })
                .start(),
        )
        .unwrap();
    (rt, proxy)
}

/// A record batch of `values` records, each value `size` bytes of one letter.
fn filled_batch(values: usize, size: usize) -> Vec<u8> {
    use kwire::records::{BatchBuilder, NewRecord};
    let values: Vec<Vec<u8>> = (0..values).map(|i| vec![b'a' + (i % 26) as u8; size]).collect();
    let new: Vec<NewRecord<'_>> = values
        .iter()
        .map(|v| NewRecord { key: None, value: Some(v), headers: &[], timestamp: None })
        .collect();
    let mut out = Vec::new();
    BatchBuilder::new(0, 1_700_000_000_000, &new).encode_to_vec(&mut out).unwrap();
    out
}
