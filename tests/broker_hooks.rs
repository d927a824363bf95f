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
