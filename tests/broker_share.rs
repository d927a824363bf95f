//! Share groups (KIP-932) of `kwire::broker` in raw frames: ShareGroupHeartbeat (member
//! epochs, assignment, Kafka's errors), ShareGroupDescribe, ShareFetch and
//! ShareAcknowledge (acquisition, delivery counts, accept, release and reject, lock
//! timeouts, share session epochs). The Java `KafkaShareConsumer` is in
//! tests/broker_share_java.rs (`interop`).
#![cfg(feature = "broker")]

#[path = "common/raw.rs"]
mod raw;

use std::time::Duration;

use kwire::broker::{Broker, Config};
use kwire::messages::share_acknowledge::{AcknowledgePartition, AcknowledgeTopic, ShareAcknowledgeRequest};
use kwire::messages::share_fetch::{AcknowledgementBatch, FetchPartition, FetchTopic, ShareFetchRequest};
use kwire::messages::share_group_describe::ShareGroupDescribeRequest;
use kwire::messages::share_group_heartbeat::ShareGroupHeartbeatRequest;
use kwire::records::NewRecord;
use kwire::types::Uuid;
use raw::{Conn, answer};

const UNKNOWN_MEMBER_ID: i16 = 25;
const INVALID_REQUEST: i16 = 42;
const GROUP_ID_NOT_FOUND: i16 = 69;
const FENCED_MEMBER_EPOCH: i16 = 110;
const INVALID_RECORD_STATE: i16 = 121;
const SHARE_SESSION_NOT_FOUND: i16 = 122;
const INVALID_SHARE_SESSION_EPOCH: i16 = 123;

/// An assignment: (topic id, partitions) of each topic.
type Assigned = Vec<(Uuid, Vec<i32>)>;

/// A heartbeat: (error, member epoch, assignment if sent).
fn beat(c: &mut Conn, member: &str, epoch: i32, topics: Option<&[&str]>) -> (i16, i32, Option<Assigned>) {
    let req = ShareGroupHeartbeatRequest {
        group_id: "sg".into(),
        member_id: member.into(),
        member_epoch: epoch,
        subscribed_topic_names: topics.map(|t| t.iter().map(|&n| n.into()).collect()),
        ..Default::default()
    };
    let frame = c.call(&req, 1);
    let r = answer!(frame, ShareGroupHeartbeat, 1);
    let assigned = r.assignment().map(|a| {
        a.topic_partitions().iter().map(|t| (t.topic_id(), t.partitions().iter().collect())).collect()
    });
    (r.error_code(), r.member_epoch(), assigned)
}

/// One acknowledgement batch.
fn ack(first: i64, last: i64, types: &[i8]) -> AcknowledgementBatch<'static> {
    AcknowledgementBatch {
        first_offset: first,
        last_offset: last,
        acknowledge_types: types.to_vec().into(),
        ..Default::default()
    }
}

/// A ShareFetch of partition 0 of `topic`: (top-level error, partition error, acknowledge
/// error, acquired (first, last, delivery count)).
fn fetch(
    c: &mut Conn,
    member: &str,
    epoch: i32,
    topic: Uuid,
    acks: Vec<AcknowledgementBatch<'static>>,
    wait_ms: i32,
) -> (i16, i16, i16, Vec<(i64, i64, i16)>) {
    let req = ShareFetchRequest {
        group_id: Some("sg".into()),
        member_id: Some(member.into()),
        share_session_epoch: epoch,
        max_wait_ms: wait_ms,
        min_bytes: 1,
        max_bytes: 1 << 20,
        max_records: 500,
        batch_size: 500,
        topics: vec![FetchTopic {
            topic_id: topic,
            partitions: vec![FetchPartition {
                partition_index: 0,
                acknowledgement_batches: acks.into(),
                ..Default::default()
            }]
            .into(),
            ..Default::default()
        }]
        .into(),
        ..Default::default()
    };
    let frame = c.call(&req, 2);
    let r = answer!(frame, ShareFetch, 2);
    let mut out = (r.error_code(), 0, 0, Vec::new());
    for t in r.responses() {
        for p in t.partitions() {
            out.1 = p.error_code();
            out.2 = p.acknowledge_error_code();
            out.3.extend(
                p.acquired_records().iter().map(|a| (a.first_offset(), a.last_offset(), a.delivery_count())),
            );
        }
    }
    out
}

/// A ShareAcknowledge of partition 0: (top-level error, partition error).
fn acknowledge(
    c: &mut Conn,
    member: &str,
    epoch: i32,
    topic: Uuid,
    acks: Vec<AcknowledgementBatch<'static>>,
) -> (i16, i16) {
    use kwire::messages::share_acknowledge::AcknowledgementBatch as Batch;
    let batches: Vec<Batch<'static>> = acks
        .into_iter()
        .map(|a| Batch {
            first_offset: a.first_offset,
            last_offset: a.last_offset,
            acknowledge_types: a.acknowledge_types,
            ..Default::default()
        })
        .collect();
    let req = ShareAcknowledgeRequest {
        group_id: Some("sg".into()),
        member_id: Some(member.into()),
        share_session_epoch: epoch,
        topics: vec![AcknowledgeTopic {
            topic_id: topic,
            partitions: vec![AcknowledgePartition {
                partition_index: 0,
                acknowledgement_batches: batches.into(),
                ..Default::default()
            }]
            .into(),
            ..Default::default()
        }]
        .into(),
        ..Default::default()
    };
    let frame = c.call(&req, 2);
    let r = answer!(frame, ShareAcknowledge, 2);
    let part = r.responses().iter().flat_map(|t| t.partitions().iter().map(|p| p.error_code())).next();
    (r.error_code(), part.unwrap_or(-1))
}

fn records(n: usize) -> Vec<NewRecord<'static>> {
    (0..n).map(|_| NewRecord::new(None, Some(b"v"))).collect()
}

fn start(lock: Duration) -> Broker {
    Broker::start(Config {
        share_record_lock_duration: lock,
        share_start_earliest: true,
        share_delivery_count_limit: 3,
        ..Config::default()
    })
    .unwrap()
}

#[test]
fn heartbeat_epochs_assignment_and_errors() {
    let broker = start(Duration::from_secs(30));
    assert!(broker.create_topic("t", 2));
    let mut c = Conn::open(broker.addr());
    let (code, epoch, assigned) = beat(&mut c, "m1", 0, Some(&["t"]));
    assert_eq!((code, epoch), (0, 1));
    assert_eq!(assigned.unwrap()[0].1, [0, 1]);
    let (code, epoch, _) = beat(&mut c, "m2", 0, Some(&["t"]));
    assert_eq!((code, epoch), (0, 2));
    // m1 learns the new epoch and gives up one partition.
    let (code, epoch, assigned) = beat(&mut c, "m1", 1, None);
    assert_eq!((code, epoch, assigned.unwrap()[0].1.len()), (0, 2, 1));
    assert_eq!(beat(&mut c, "m1", 7, None).0, FENCED_MEMBER_EPOCH);
    assert_eq!(beat(&mut c, "nobody", 2, None).0, UNKNOWN_MEMBER_ID);
    assert_eq!(beat(&mut c, "m3", 0, None).0, INVALID_REQUEST);
    assert_eq!(beat(&mut c, "", 0, Some(&["t"])).0, INVALID_REQUEST);

    let frame = c.call(
        &ShareGroupDescribeRequest {
            group_ids: vec!["sg".into(), "none".into()].into(),
            ..Default::default()
        },
        1,
    );
    let d = answer!(frame, ShareGroupDescribe, 1);
    let groups: Vec<_> = d.groups().iter().collect();
    assert_eq!((groups[0].error_code(), groups[0].group_state(), groups[0].group_epoch()), (0, "Stable", 2));
    assert_eq!(groups[0].members().len(), 2);
    assert_eq!(groups[1].error_code(), GROUP_ID_NOT_FOUND);

    // ListGroups shows it with type and protocol type "share", as Kafka does.
    let list = kwire::messages::list_groups::ListGroupsRequest::default();
    let frame = c.call(&list, 5);
    let l = answer!(frame, ListGroups, 5);
    let listed: Vec<_> = l
        .groups()
        .iter()
        .map(|g| (g.group_id(), g.protocol_type(), g.group_state(), g.group_type()))
        .collect();
    assert_eq!(listed, [("sg", "share", "Stable", "share")]);

    // Leaving: epoch -1 answers -1; the member is gone.
    assert_eq!(beat(&mut c, "m2", -1, None).1, -1);
    assert_eq!(beat(&mut c, "m2", 2, None).0, UNKNOWN_MEMBER_ID);
}

#[test]
fn fetch_acknowledge_release_reject_and_sessions() {
    let broker = start(Duration::from_secs(30));
    assert!(broker.create_topic("t", 1));
    broker.append("t", 0, &records(10)).unwrap();
    let mut c = Conn::open(broker.addr());
    let (_, _, assigned) = beat(&mut c, "m1", 0, Some(&["t"]));
    let topic = assigned.unwrap()[0].0;

    assert_eq!(fetch(&mut c, "m1", 1, topic, vec![], 0).0, SHARE_SESSION_NOT_FOUND);
    assert_eq!(fetch(&mut c, "m1", 0, topic, vec![ack(0, 0, &[1])], 0).0, INVALID_REQUEST);
    let (code, part, _, acquired) = fetch(&mut c, "m1", 0, topic, vec![], 0);
    assert_eq!((code, part, acquired), (0, 0, vec![(0, 9, 1)]));
    assert_eq!(fetch(&mut c, "m1", 5, topic, vec![], 0).0, INVALID_SHARE_SESSION_EPOCH);
    // Accept 0-4, release 5-6, reject 7-9: 5-6 come back with delivery count 2.
    let acks = vec![ack(0, 4, &[1]), ack(5, 9, &[2, 2, 3, 3, 3])];
    let (code, part, ack_code, acquired) = fetch(&mut c, "m1", 1, topic, acks, 0);
    assert_eq!((code, part, ack_code), (0, 0, 0));
    assert_eq!(acquired, [(5, 6, 2)]);
    // Bad acknowledgements: offsets already accepted, and types that do not match the range.
    assert_eq!(acknowledge(&mut c, "m1", 0, topic, vec![ack(5, 6, &[1])]).0, INVALID_SHARE_SESSION_EPOCH);
    assert_eq!(acknowledge(&mut c, "m1", 2, topic, vec![ack(0, 0, &[1])]), (0, INVALID_RECORD_STATE));
    assert_eq!(acknowledge(&mut c, "m1", 3, topic, vec![ack(5, 6, &[1, 1, 1])]), (0, INVALID_REQUEST));
    // Release again: at the limit of 3 deliveries, the third release archives them.
    assert_eq!(acknowledge(&mut c, "m1", 4, topic, vec![ack(5, 6, &[2])]), (0, 0));
    let (.., acquired) = fetch(&mut c, "m1", 5, topic, vec![], 0);
    assert_eq!(acquired, [(5, 6, 3)]);
    assert_eq!(acknowledge(&mut c, "m1", 6, topic, vec![ack(5, 6, &[2])]), (0, 0));
    // Nothing left: rejected and archived records are not delivered again.
    let (code, part, _, acquired) = fetch(&mut c, "m1", 7, topic, vec![], 50);
    assert_eq!((code, part, acquired), (0, 0, vec![]));
    // New records are.
    broker.append("t", 0, &records(2)).unwrap();
    let (.., acquired) = fetch(&mut c, "m1", 8, topic, vec![], 500);
    assert_eq!(acquired, [(10, 11, 1)]);
    // Closing the session (epoch -1) releases what the member holds.
    assert_eq!(acknowledge(&mut c, "m1", -1, topic, vec![]).0, 0);
    let mut c2 = Conn::open(broker.addr());
    let (.., acquired) = fetch(&mut c2, "m2", 0, topic, vec![], 0);
    assert_eq!(acquired, [(10, 11, 2)]);
}

#[test]
fn two_members_never_hold_the_same_record_and_locks_time_out() {
    let broker = start(Duration::from_millis(300));
    assert!(broker.create_topic("t", 1));
    broker.append("t", 0, &records(4)).unwrap();
    let (mut a, mut b) = (Conn::open(broker.addr()), Conn::open(broker.addr()));
    let topic = beat(&mut a, "a", 0, Some(&["t"])).2.unwrap()[0].0;
    beat(&mut b, "b", 0, Some(&["t"]));
    assert_eq!(fetch(&mut a, "a", 0, topic, vec![], 0).3, [(0, 3, 1)]);
    // b finds nothing while a holds them ...
    assert_eq!(fetch(&mut b, "b", 0, topic, vec![], 0).3, []);
    // ... and gets them once a's lock has timed out, waiting for them in its fetch.
    std::thread::sleep(Duration::from_millis(100));
    let (.., acquired) = fetch(&mut b, "b", 1, topic, vec![], 2000);
    assert_eq!(acquired, [(0, 3, 2)]);
    // a's late acknowledgement fails: the records are not a's any more.
    assert_eq!(acknowledge(&mut a, "a", 1, topic, vec![ack(0, 3, &[1])]), (0, INVALID_RECORD_STATE));
    assert_eq!(acknowledge(&mut b, "b", 2, topic, vec![ack(0, 3, &[1])]), (0, 0));
}

#[test]
fn share_group_offsets_described_altered_and_deleted() {
    use kwire::messages::alter_share_group_offsets::{
        AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsRequestPartition,
        AlterShareGroupOffsetsRequestTopic,
    };
    use kwire::messages::delete_share_group_offsets::{
        DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequestTopic,
    };
    use kwire::messages::describe_share_group_offsets::{
        DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequestGroup,
    };
    const NON_EMPTY_GROUP: i16 = 68;
    let broker = start(Duration::from_secs(30));
    assert!(broker.create_topic("t", 1));
    broker.append("t", 0, &records(6)).unwrap();
    let mut c = Conn::open(broker.addr());
    let topic = beat(&mut c, "m1", 0, Some(&["t"])).2.unwrap()[0].0;
    fetch(&mut c, "m1", 0, topic, vec![], 0);
    fetch(&mut c, "m1", 1, topic, vec![ack(0, 2, &[1])], 0);
    let describe = |c: &mut Conn| {
        let req = DescribeShareGroupOffsetsRequest {
            groups: vec![DescribeShareGroupOffsetsRequestGroup {
                group_id: "sg".into(),
                topics: None,
                ..Default::default()
            }]
            .into(),
            ..Default::default()
        };
        let frame = c.call(&req, 1);
        let r = answer!(frame, DescribeShareGroupOffsets, 1);
        r.groups()
            .iter()
            .flat_map(|g| {
                g.topics()
                    .iter()
                    .flat_map(|t| t.partitions().iter().map(|p| (p.start_offset(), p.lag(), p.error_code())))
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(describe(&mut c), [(3, 3, 0)]);
    let alter = AlterShareGroupOffsetsRequest {
        group_id: "sg".into(),
        topics: vec![AlterShareGroupOffsetsRequestTopic {
            topic_name: "t".into(),
            partitions: vec![AlterShareGroupOffsetsRequestPartition {
                partition_index: 0,
                start_offset: 1,
                ..Default::default()
            }]
            .into(),
            ..Default::default()
        }]
        .into(),
        ..Default::default()
    };
    let frame = c.call(&alter, 0);
    assert_eq!(answer!(frame, AlterShareGroupOffsets, 0).error_code(), NON_EMPTY_GROUP);
    assert_eq!(beat(&mut c, "m1", -1, None).1, -1);
    let frame = c.call(&alter, 0);
    assert_eq!(answer!(frame, AlterShareGroupOffsets, 0).error_code(), 0);
    assert_eq!(describe(&mut c), [(1, 5, 0)]);
    let delete = DeleteShareGroupOffsetsRequest {
        group_id: "sg".into(),
        topics: vec![DeleteShareGroupOffsetsRequestTopic { topic_name: "t".into(), ..Default::default() }]
            .into(),
        ..Default::default()
    };
    let frame = c.call(&delete, 0);
    let r = answer!(frame, DeleteShareGroupOffsets, 0);
    assert_eq!(
        (r.error_code(), r.responses().iter().map(|t| t.error_code()).collect::<Vec<_>>()),
        (0, vec![0])
    );
    assert_eq!(describe(&mut c), []);
}
