//! A raw-frame connection to a broker for tests that speak Kafka by hand: [`Conn::call`]
//! sends one typed request body at a version and returns the response frame (correlation
//! id first), checked to answer it; the group requests several suites make are methods
//! beside it ([`Conn::offset_commit`], [`Conn::commit`], [`Conn::join_group`]). A test file
//! uses it with
//! `#[path = "common/raw.rs"] mod raw;` (or through `mod common;`).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use kwire::dispatch;
use kwire::encode::AnyBody;

/// The typed view of a response frame of API `$key` at version `$v` (panics on anything
/// else): `answer!(frame, Metadata, 12).brokers()`.
#[allow(unused_macros)]
macro_rules! answer {
    ($frame:expr, $key:ident, $v:expr) => {
        match ::kwire::dispatch::parse_response(&$frame, ::kwire::ApiKey::$key, $v).unwrap().body {
            ::kwire::messages::ResponseBodyView::$key(r) => r,
            _ => panic!("not a {} response", stringify!($key)),
        }
    };
}
#[allow(unused_imports)]
pub(crate) use answer;

/// One connection: requests in order, each waiting for its response.
pub struct Conn {
    pub s: TcpStream,
    next_id: i32,
    client_id: &'static str,
}

impl Conn {
    /// Connects (20 s read timeout) with the client id `"test"`.
    pub fn open(addr: SocketAddr) -> Conn {
        Conn::open_as(addr, "test")
    }

    /// Connects with a client id of its own.
    pub fn open_as(addr: SocketAddr, client_id: &'static str) -> Conn {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Conn { s, next_id: 1, client_id }
    }

    /// Sends `body` at `version` and returns the response frame (without its size).
    pub fn call(&mut self, body: &impl AnyBody, version: i16) -> Vec<u8> {
        let id = self.next_id;
        self.next_id += 1;
        let header = kwire::frame::RequestHeader {
            correlation_id: id,
            client_id: Some(self.client_id),
            unknown_tagged_fields: &[],
        };
        let mut buf = vec![0u8; dispatch::request_len(body, version, &header).unwrap()];
        dispatch::encode_request_with(body, version, &header, &mut buf).unwrap();
        self.s.write_all(&buf).unwrap();
        let mut size = [0u8; 4];
        self.s.read_exact(&mut size).expect("a response");
        let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
        self.s.read_exact(&mut frame).expect("a response");
        assert_eq!(i32::from_be_bytes(frame[..4].try_into().unwrap()), id, "correlation id");
        frame
    }

    /// OffsetCommit at `version` of `(partition, offset)`s of one topic, as `member` at
    /// `epoch` (generation or member epoch): each partition's error, in order.
    pub fn offset_commit(
        &mut self,
        version: i16,
        group: &str,
        (member, epoch): (&str, i32),
        topic: &str,
        offsets: &[(i32, i64)],
    ) -> Vec<i16> {
        use kwire::messages::offset_commit::{
            OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
        };
        let parts: Vec<OffsetCommitRequestPartition<'_>> = offsets
            .iter()
            .map(|&(partition_index, committed_offset)| OffsetCommitRequestPartition {
                partition_index,
                committed_offset,
                ..Default::default()
            })
            .collect();
        let topics = [OffsetCommitRequestTopic {
            name: topic.into(),
            partitions: parts.as_slice().into(),
            ..Default::default()
        }];
        let req = OffsetCommitRequest {
            group_id: group.into(),
            generation_id_or_member_epoch: epoch,
            member_id: member.into(),
            topics: (&topics).into(),
            ..Default::default()
        };
        let frame = self.call(&req, version);
        let r = answer!(frame, OffsetCommit, version);
        r.topics().iter().flat_map(|t| t.partitions().iter().map(|p| p.error_code())).collect()
    }

    /// OffsetCommit v8 of one partition outside any generation (as for a group without
    /// members): its error.
    pub fn commit(&mut self, group: &str, topic: &str, partition: i32, offset: i64) -> i16 {
        self.offset_commit(8, group, ("", -1), topic, &[(partition, offset)])[0]
    }

    /// JoinGroup at `version` of one protocol `(name, metadata)`, session and rebalance
    /// timeouts 30 s: (error, member id).
    pub fn join_group(
        &mut self,
        version: i16,
        group: &str,
        member: &str,
        protocol_type: &str,
        (name, metadata): (&str, &[u8]),
    ) -> (i16, String) {
        use kwire::messages::join_group::{JoinGroupRequest, JoinGroupRequestProtocol};
        let protocols =
            [JoinGroupRequestProtocol { name: name.into(), metadata: metadata.into(), ..Default::default() }];
        let req = JoinGroupRequest {
            group_id: group.into(),
            session_timeout_ms: 30_000,
            rebalance_timeout_ms: 30_000,
            member_id: member.into(),
            protocol_type: protocol_type.into(),
            protocols: (&protocols).into(),
            ..Default::default()
        };
        let frame = self.call(&req, version);
        let r = answer!(frame, JoinGroup, version);
        (r.error_code(), r.member_id().to_string())
    }
}
