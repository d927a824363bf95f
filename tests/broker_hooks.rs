//! Hooks on `kwire::broker` (`Broker::add_hook`), over raw frames: each action (pass,
//! delay, drop, fail, answer), one-shot, counted and standing hooks, their counts, and
//! removal. Hermetic (loopback only).
#![cfg(feature = "broker")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kwire::broker::{Action, Broker, Config, Hook};
use kwire::conn::ServerConn;
use kwire::dispatch;
use kwire::encode::AnyBody;
use kwire::messages::ResponseBodyView;
use kwire::messages::find_coordinator::{Coordinator, FindCoordinatorRequest, FindCoordinatorResponse};
use kwire::messages::init_producer_id::InitProducerIdRequest;
use kwire::{ApiKey, ErrorCode};

struct Conn {
    s: TcpStream,
    next_id: i32,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Conn { s, next_id: 1 }
    }

    /// The response frame, or `None` when the broker closed the connection.
    fn call(&mut self, body: &impl AnyBody, version: i16) -> Option<Vec<u8>> {
        let id = self.next_id;
        self.next_id += 1;
        let header = kwire::frame::RequestHeader {
            correlation_id: id,
            client_id: Some("hooks-test"),
            unknown_tagged_fields: &[],
        };
        let mut buf = vec![0u8; dispatch::request_len(body, version, &header).unwrap()];
        dispatch::encode_request_with(body, version, &header, &mut buf).unwrap();
        self.s.write_all(&buf).ok()?;
        let mut size = [0u8; 4];
        self.s.read_exact(&mut size).ok()?;
        let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
        self.s.read_exact(&mut frame).ok()?;
        assert_eq!(i32::from_be_bytes(frame[..4].try_into().unwrap()), id, "correlation id");
        Some(frame)
    }

    /// InitProducerId v4 (idempotent): its error code, or `None` when closed.
    fn init(&mut self) -> Option<i16> {
        let req = InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: 60_000,
            ..Default::default()
        };
        let frame = self.call(&req, 4)?;
        let ResponseBodyView::InitProducerId(r) =
            dispatch::parse_response(&frame, ApiKey::InitProducerId, 4).unwrap().body
        else {
            panic!()
        };
        Some(r.error_code())
    }

    /// FindCoordinator v4 of group "g": (node id, error).
    fn coordinator(&mut self) -> (i32, i16) {
        let keys = ["g".into()];
        let req =
            FindCoordinatorRequest { key_type: 0, coordinator_keys: (&keys).into(), ..Default::default() };
        let frame = self.call(&req, 4).expect("an answer");
        let ResponseBodyView::FindCoordinator(r) =
            dispatch::parse_response(&frame, ApiKey::FindCoordinator, 4).unwrap().body
        else {
            panic!()
        };
        let c = r.coordinators().iter().next().unwrap();
        (c.node_id(), c.error_code())
    }
}

#[test]
fn fail_counted_then_through_and_removed() {
    let b = Broker::start(Config::default()).unwrap();
    let hook = b.add_hook(Hook::times(ApiKey::InitProducerId, Action::Fail(ErrorCode::NotCoordinator), 2));
    let mut c = Conn::open(b.addr());
    assert_eq!(c.init(), Some(ErrorCode::NotCoordinator.to_i16()));
    assert_eq!(c.init(), Some(ErrorCode::NotCoordinator.to_i16()));
    assert_eq!(c.init(), Some(0), "used up after two");
    assert_eq!(b.hook_fired(hook), Some(2));
    // Other APIs are not caught.
    assert_eq!(c.coordinator(), (1, 0));
    assert!(b.remove_hook(hook));
    assert!(!b.remove_hook(hook));
    assert_eq!(b.hook_fired(hook), None);
}

#[test]
fn drop_closes_that_connection_only() {
    let b = Broker::start(Config::default()).unwrap();
    let hook = b.add_hook(Hook::once(ApiKey::InitProducerId, Action::Drop));
    let mut dropped = Conn::open(b.addr());
    assert_eq!(dropped.init(), None, "closed without an answer");
    let mut other = Conn::open(b.addr());
    assert_eq!(other.init(), Some(0));
    assert_eq!(b.hook_fired(hook), Some(1));
}

#[test]
fn delay_and_pass_let_the_request_through() {
    let b = Broker::start(Config::default()).unwrap();
    let delay = b.add_hook(Hook::once(ApiKey::InitProducerId, Action::Delay(Duration::from_millis(300))));
    let mut c = Conn::open(b.addr());
    let start = Instant::now();
    assert_eq!(c.init(), Some(0));
    assert!(start.elapsed() >= Duration::from_millis(300), "{:?}", start.elapsed());
    assert_eq!(b.hook_fired(delay), Some(1));
    // A standing Pass counts every request and changes nothing.
    let pass = b.add_hook(Hook::new(ApiKey::InitProducerId, Action::Pass));
    for _ in 0..3 {
        assert_eq!(c.init(), Some(0));
    }
    assert_eq!(b.hook_fired(pass), Some(3));
    assert_eq!(b.hook_fired(delay), Some(1), "the used-up one-shot hook catches no more");
}

#[test]
fn answer_writes_the_response_it_likes() {
    let b = Broker::start(Config::default()).unwrap();
    let hook = b.add_hook(Hook::once(
        ApiKey::FindCoordinator,
        Action::Answer(Arc::new(|req, out| {
            let keys: Vec<Coordinator<'_>> = match req.body {
                kwire::messages::RequestBodyView::FindCoordinator(f) => f
                    .coordinator_keys()
                    .iter()
                    .map(|k| Coordinator {
                        key: k.into(),
                        node_id: 42,
                        host: "elsewhere".into(),
                        port: 9,
                        ..Default::default()
                    })
                    .collect(),
                _ => unreachable!(),
            };
            let body = FindCoordinatorResponse { coordinators: keys.into(), ..Default::default() };
            ServerConn::encode_response(req.reply_to(), &body, out).map(|_| ())
        })),
    ));
    let mut c = Conn::open(b.addr());
    assert_eq!(c.coordinator(), (42, 0));
    assert_eq!(c.coordinator(), (1, 0), "then the broker's own answer");
    assert_eq!(b.hook_fired(hook), Some(1));
}

/// Produce v9 of one record to each partition named: each one's (error, base offset).
fn produce(c: &mut Conn, topic: &str, partitions: &[i32]) -> Vec<(i16, i64)> {
    use kwire::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
    use kwire::records::{BatchBuilder, NewRecord};
    let records = [NewRecord { key: None, value: Some(b"v"), headers: &[], timestamp: None }];
    let mut batch = Vec::new();
    BatchBuilder::new(0, 1_700_000_000_000, &records).encode_to_vec(&mut batch).unwrap();
    let data: Vec<PartitionProduceData<'_>> = partitions
        .iter()
        .map(|&index| PartitionProduceData {
            index,
            records: Some(batch.as_slice().into()),
            ..Default::default()
        })
        .collect();
    let topics = [TopicProduceData { name: topic.into(), partition_data: data.into(), ..Default::default() }];
    let req =
        ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: (&topics).into(), ..Default::default() };
    let frame = c.call(&req, 9).expect("an answer");
    let ResponseBodyView::Produce(r) = dispatch::parse_response(&frame, ApiKey::Produce, 9).unwrap().body
    else {
        panic!()
    };
    let t = r.responses().iter().next().unwrap();
    t.partition_responses().iter().map(|p| (p.error_code(), p.base_offset())).collect()
}

/// Fetch v12 (sessionless) of each partition named from 0: each one's (error, record bytes).
fn fetch(c: &mut Conn, topic: &str, partitions: &[i32]) -> Vec<(i16, usize)> {
    use kwire::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
    let parts: Vec<FetchPartition<'_>> = partitions
        .iter()
        .map(|&partition| FetchPartition { partition, partition_max_bytes: 1 << 20, ..Default::default() })
        .collect();
    let topics = [FetchTopic { topic: topic.into(), partitions: parts.into(), ..Default::default() }];
    let req = FetchRequest {
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: (&topics).into(),
        ..Default::default()
    };
    let frame = c.call(&req, 12).expect("an answer");
    let ResponseBodyView::Fetch(r) = dispatch::parse_response(&frame, ApiKey::Fetch, 12).unwrap().body else {
        panic!()
    };
    let t = r.responses().iter().next().unwrap();
    t.partitions().iter().map(|p| (p.error_code(), p.records().map_or(0, |r| r.bytes().len()))).collect()
}

/// ListOffsets v5 latest of each partition named: each one's (error, offset).
fn latest(c: &mut Conn, topic: &str, partitions: &[i32]) -> Vec<(i16, i64)> {
    use kwire::messages::list_offsets::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
    let parts: Vec<ListOffsetsPartition<'_>> = partitions
        .iter()
        .map(|&partition_index| ListOffsetsPartition { partition_index, timestamp: -1, ..Default::default() })
        .collect();
    let topics = [ListOffsetsTopic { name: topic.into(), partitions: parts.into(), ..Default::default() }];
    let req = ListOffsetsRequest { replica_id: -1, topics: (&topics).into(), ..Default::default() };
    let frame = c.call(&req, 5).expect("an answer");
    let ResponseBodyView::ListOffsets(r) =
        dispatch::parse_response(&frame, ApiKey::ListOffsets, 5).unwrap().body
    else {
        panic!()
    };
    let t = r.topics().iter().next().unwrap();
    t.partitions().iter().map(|p| (p.error_code(), p.offset())).collect()
}

#[test]
fn faults_fail_their_partitions_only() {
    use kwire::broker::Fault;
    let broker = Broker::start(Config::default()).unwrap();
    assert!(broker.create_topic("t", 3));
    let mut c = Conn::open(broker.addr());
    let not_leader = ErrorCode::NotLeaderOrFollower.to_i16();
    let timed_out = ErrorCode::RequestTimedOut.to_i16();
    // Produce: t/1 fails twice (not appended), then is served; t/0 and t/2 are served.
    let f =
        broker.add_fault(Fault::new(ApiKey::Produce, "t", Some(1), ErrorCode::NotLeaderOrFollower).times(2));
    assert_eq!(produce(&mut c, "t", &[0, 1, 2]), vec![(0, 0), (not_leader, -1), (0, 0)]);
    assert_eq!(produce(&mut c, "t", &[0]), vec![(0, 1)], "a request without t/1 is not counted");
    assert_eq!(produce(&mut c, "t", &[1]), vec![(not_leader, -1)]);
    assert_eq!(broker.hook_fired(f), Some(2));
    assert_eq!(produce(&mut c, "t", &[1]), vec![(0, 0)], "used up");
    assert_eq!(broker.end_offset("t", 1), Some(1));
    assert!(broker.remove_hook(f));
    assert_eq!(broker.hook_fired(f), None);

    // Fetch: every partition of the topic, standing, until removed.
    let f = broker.add_fault(Fault::new(ApiKey::Fetch, "t", None, ErrorCode::RequestTimedOut));
    assert_eq!(fetch(&mut c, "t", &[0, 1]), vec![(timed_out, 0), (timed_out, 0)]);
    assert_eq!(fetch(&mut c, "t", &[2]), vec![(timed_out, 0)]);
    assert_eq!(broker.hook_fired(f), Some(2));
    // Another API is not caught.
    assert_eq!(latest(&mut c, "t", &[0, 1]), vec![(0, 2), (0, 1)]);
    assert!(broker.remove_hook(f));
    let served = fetch(&mut c, "t", &[0, 1]);
    assert!(served.iter().all(|&(code, bytes)| code == 0 && bytes > 0), "{served:?}");

    // ListOffsets, and a fault on another topic catches nothing here.
    let f = broker.add_fault(Fault::new(ApiKey::ListOffsets, "t", Some(0), ErrorCode::NotLeaderOrFollower));
    let other = broker.add_fault(Fault::new(ApiKey::ListOffsets, "u", None, ErrorCode::RequestTimedOut));
    assert_eq!(latest(&mut c, "t", &[0, 1]), vec![(not_leader, -1), (0, 1)]);
    assert_eq!((broker.hook_fired(f), broker.hook_fired(other)), (Some(1), Some(0)));
}
