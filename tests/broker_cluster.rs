//! `kwire::broker` as a cluster of nodes in one process (`Config::nodes`), over raw frames
//! (hermetic, loopback only): Metadata and DescribeCluster agree on every node, partitions
//! at the wrong node get NOT_LEADER_OR_FOLLOWER (with KIP-951's current leader where the
//! version has it), group and transaction APIs at the wrong node get NOT_COORDINATOR, leader
//! epochs fence and are unknown as Kafka's are, and nodes are added, removed, stop, restart
//! and lose or gain leaders at run time.
//!
//! With the `interop` feature, real clients follow the cluster: franz-go and
//! confluent-kafka produce (idempotent, acks=all) while franz-go, Java (KIP-848) and
//! confluent-kafka groups consume, and the leaders move, a node stops and restarts, a node
//! joins and one leaves under them.
#![cfg(feature = "broker")]

mod common;

use std::collections::BTreeSet;
use std::io::Read;
use std::net::TcpStream;

use common::raw::{Conn, answer};
use kwire::broker::{Broker, Config};
use kwire::records::{BatchBuilder, NewRecord};
use kwire::types::Uuid;

/// A partition's answer: (error, base offset or batches' epochs, KIP-951's current leader
/// (id, epoch) if given, node endpoints [(id, port)]).
type Answer<T> = (i16, T, Option<(i32, i32)>, Vec<(i32, i32)>);

const NONE: i16 = 0;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const NOT_COORDINATOR: i16 = 16;
const FENCED_LEADER_EPOCH: i16 = 74;
const UNKNOWN_LEADER_EPOCH: i16 = 75;

fn batch(value: &str) -> Vec<u8> {
    let records = [NewRecord { key: None, value: Some(value.as_bytes()), headers: &[], timestamp: None }];
    let mut out = Vec::new();
    BatchBuilder::new(0, 1_700_000_000_000, &records).encode_to_vec(&mut out).unwrap();
    out
}

/// Metadata of a topic as one node tells it.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    /// (node id, port), in order.
    brokers: Vec<(i32, i32)>,
    controller: i32,
    topic_id: Uuid,
    /// (leader, epoch, replicas, isr) by partition.
    partitions: Vec<(i32, i32, Vec<i32>, Vec<i32>)>,
}

impl Conn {
    fn metadata(&mut self, topic: &str) -> Seen {
        use kwire::messages::metadata::{MetadataRequest, MetadataRequestTopic};
        let topics = [MetadataRequestTopic { name: Some(topic.into()), ..Default::default() }];
        let req = MetadataRequest { topics: Some((&topics).into()), ..Default::default() };
        let frame = self.call(&req, 12);
        let r = answer!(frame, Metadata, 12);
        let t = r.topics().iter().next().unwrap();
        assert_eq!(t.error_code(), NONE);
        Seen {
            brokers: r.brokers().iter().map(|b| (b.node_id(), b.port())).collect(),
            controller: r.controller_id(),
            topic_id: t.topic_id(),
            partitions: t
                .partitions()
                .iter()
                .map(|p| {
                    assert_eq!(p.partition_index() as usize, p.partition_index() as usize);
                    (
                        p.leader_id(),
                        p.leader_epoch(),
                        p.replica_nodes().iter().collect(),
                        p.isr_nodes().iter().collect(),
                    )
                })
                .collect(),
        }
    }

    /// DescribeCluster v1: (controller, [(node id, port)]).
    fn describe_cluster(&mut self) -> (i32, Vec<(i32, i32)>) {
        use kwire::messages::describe_cluster::DescribeClusterRequest;
        let frame = self.call(&DescribeClusterRequest { endpoint_type: 1, ..Default::default() }, 1);
        let r = answer!(frame, DescribeCluster, 1);
        assert_eq!(r.error_code(), NONE);
        (r.controller_id(), r.brokers().iter().map(|b| (b.broker_id(), b.port())).collect())
    }

    /// Produce of one batch at `version` (9 or 12, by name): (error, base offset, current
    /// leader (id, epoch) if given, node endpoints [(id, port)]).
    fn produce(&mut self, topic: &str, partition: i32, version: i16) -> Answer<i64> {
        use kwire::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
        let b = batch("v");
        let data =
            [PartitionProduceData { index: partition, records: Some((&b[..]).into()), ..Default::default() }];
        let topics =
            [TopicProduceData { name: topic.into(), partition_data: (&data).into(), ..Default::default() }];
        let req =
            ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: (&topics).into(), ..Default::default() };
        let frame = self.call(&req, version);
        let r = answer!(frame, Produce, version);
        let p = r.responses().iter().next().unwrap().partition_responses().iter().next().unwrap();
        (
            p.error_code(),
            p.base_offset(),
            p.current_leader().map(|l| (l.leader_id(), l.leader_epoch())),
            r.node_endpoints().iter().map(|n| (n.node_id(), n.port())).collect(),
        )
    }

    /// Fetch (sessionless) of one partition from 0 with a current leader epoch, at v12 (by
    /// name) or v16 (by id): (error, the leader epochs of the batches returned, current
    /// leader if given, node endpoints [(id, port)]).
    fn fetch(&mut self, topic: (&str, Uuid), partition: i32, epoch: i32, version: i16) -> Answer<Vec<i32>> {
        use kwire::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
        let parts = [FetchPartition {
            partition,
            current_leader_epoch: epoch,
            fetch_offset: 0,
            partition_max_bytes: 1 << 20,
            ..Default::default()
        }];
        let topics = [FetchTopic {
            topic: if version >= 13 { "" } else { topic.0 }.into(),
            topic_id: if version >= 13 { topic.1 } else { Uuid::ZERO },
            partitions: (&parts).into(),
            ..Default::default()
        }];
        let req = FetchRequest {
            max_wait_ms: 0,
            min_bytes: 0,
            max_bytes: 50 << 20,
            session_epoch: -1,
            topics: (&topics).into(),
            ..Default::default()
        };
        let frame = self.call(&req, version);
        let r = answer!(frame, Fetch, version);
        assert_eq!(r.error_code(), NONE);
        let p = r.responses().iter().next().unwrap().partitions().iter().next().unwrap();
        let epochs = kwire::records::RecordBatches::new(p.records().map(|r| r.bytes()).unwrap_or_default())
            .map(|b| b.unwrap().partition_leader_epoch())
            .collect();
        (
            p.error_code(),
            epochs,
            p.current_leader().map(|l| (l.leader_id(), l.leader_epoch())),
            r.node_endpoints().iter().map(|n| (n.node_id(), n.port())).collect(),
        )
    }

    /// ListOffsets v5 (latest) of one partition with a current leader epoch: (error,
    /// offset, leader epoch).
    fn list_offset(&mut self, topic: &str, partition: i32, epoch: i32) -> (i16, i64, i32) {
        use kwire::messages::list_offsets::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
        let parts = [ListOffsetsPartition {
            partition_index: partition,
            current_leader_epoch: epoch,
            timestamp: -1,
            ..Default::default()
        }];
        let topics =
            [ListOffsetsTopic { name: topic.into(), partitions: (&parts).into(), ..Default::default() }];
        let req = ListOffsetsRequest { replica_id: -1, topics: (&topics).into(), ..Default::default() };
        let frame = self.call(&req, 5);
        let r = answer!(frame, ListOffsets, 5);
        let p = r.topics().iter().next().unwrap().partitions().iter().next().unwrap();
        (p.error_code(), p.offset(), p.leader_epoch())
    }

    /// DeleteRecords v2 of one partition up to `offset`: its error.
    fn delete_records(&mut self, topic: &str, partition: i32, offset: i64) -> i16 {
        use kwire::messages::delete_records::{
            DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic,
        };
        let parts = [DeleteRecordsPartition { partition_index: partition, offset, ..Default::default() }];
        let topics =
            [DeleteRecordsTopic { name: topic.into(), partitions: (&parts).into(), ..Default::default() }];
        let req = DeleteRecordsRequest { topics: (&topics).into(), timeout_ms: 5000, ..Default::default() };
        let frame = self.call(&req, 2);
        let r = answer!(frame, DeleteRecords, 2);
        r.topics().iter().next().unwrap().partitions().iter().next().unwrap().error_code()
    }

    /// FindCoordinator v4 of one key: (node id, port).
    fn find_coordinator(&mut self, key_type: i8, key: &str) -> (i32, i32) {
        use kwire::messages::find_coordinator::FindCoordinatorRequest;
        let keys = [key.into()];
        let req = FindCoordinatorRequest { key_type, coordinator_keys: (&keys).into(), ..Default::default() };
        let frame = self.call(&req, 4);
        let r = answer!(frame, FindCoordinator, 4);
        let c = r.coordinators().iter().next().unwrap();
        assert_eq!(c.error_code(), NONE);
        (c.node_id(), c.port())
    }

    /// OffsetFetch v8 of a group's offsets: its group error.
    fn offset_fetch(&mut self, group: &str) -> i16 {
        use kwire::messages::offset_fetch::{OffsetFetchRequest, OffsetFetchRequestGroup};
        let groups = [OffsetFetchRequestGroup { group_id: group.into(), topics: None, ..Default::default() }];
        let req = OffsetFetchRequest { groups: (&groups).into(), ..Default::default() };
        let frame = self.call(&req, 8);
        answer!(frame, OffsetFetch, 8).groups().iter().next().unwrap().error_code()
    }

    /// InitProducerId v4 with a transactional id: its error.
    fn init_transactional(&mut self, id: &str) -> i16 {
        use kwire::messages::init_producer_id::InitProducerIdRequest;
        let req = InitProducerIdRequest {
            transactional_id: Some(id.into()),
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        };
        let frame = self.call(&req, 4);
        answer!(frame, InitProducerId, 4).error_code()
    }
}

fn cluster(nodes: usize) -> Broker {
    Broker::start(Config { nodes, ..Config::default() }).unwrap()
}

/// A connection to node `id`.
fn to(broker: &Broker, id: i32) -> Conn {
    Conn::open(broker.node_addr(id).unwrap())
}

/// A node other than `id` that runs.
fn other(broker: &Broker, id: i32) -> i32 {
    broker.node_ids().into_iter().find(|&n| n != id && broker.node_running(n)).unwrap()
}

#[test]
fn every_node_listens_on_its_own_port_and_tells_the_same_truth() {
    let broker = cluster(3);
    let ids = broker.node_ids();
    assert_eq!(ids, [1, 2, 3]);
    assert_eq!(broker.addr(), broker.node_addr(1).unwrap(), "node 0 is the bootstrap");
    let ports: BTreeSet<u16> = ids.iter().map(|&id| broker.node_addr(id).unwrap().port()).collect();
    assert_eq!(ports.len(), 3, "one port each");
    assert!(broker.create_topic("t", 6));
    let expected_brokers: Vec<(i32, i32)> =
        ids.iter().map(|&id| (id, i32::from(broker.node_addr(id).unwrap().port()))).collect();
    let mut seen = Vec::new();
    for &id in &ids {
        let mut c = to(&broker, id);
        let s = c.metadata("t");
        assert_eq!(s.brokers, expected_brokers, "node {id} lists every node with its port");
        let (controller, brokers) = c.describe_cluster();
        assert_eq!((controller, &brokers), (s.controller, &expected_brokers), "node {id}");
        seen.push(s);
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "every node tells the same: {seen:?}");
    let partitions = &seen[0].partitions;
    for (p, (leader, epoch, replicas, isr)) in partitions.iter().enumerate() {
        assert_eq!(Some((*leader, *epoch)), broker.leader("t", p as i32));
        assert_eq!((*epoch, replicas.as_slice(), isr.as_slice()), (0, &[*leader][..], &[*leader][..]));
    }
    // Round robin: each node leads two of the six partitions.
    for &id in &ids {
        assert_eq!(partitions.iter().filter(|p| p.0 == id).count(), 2, "{partitions:?}");
    }
    // Coordinators spread too, and every node names the same one.
    let groups: BTreeSet<i32> = (0..40).map(|i| broker.group_coordinator(&format!("g{i}"))).collect();
    let txns: BTreeSet<i32> = (0..40).map(|i| broker.transaction_coordinator(&format!("tx{i}"))).collect();
    assert_eq!((groups.len(), txns.len()), (3, 3), "groups and transactional ids on every node");
    for &id in &ids {
        let mut c = to(&broker, id);
        for key in ["g1", "g2", "g3", "orders-app"] {
            let want = broker.group_coordinator(key);
            let port = i32::from(broker.node_addr(want).unwrap().port());
            assert_eq!(c.find_coordinator(0, key), (want, port), "group {key} asked at node {id}");
        }
        let want = broker.transaction_coordinator("tx1");
        assert_eq!(c.find_coordinator(1, "tx1").0, want);
    }
}

#[test]
fn partitions_at_the_wrong_node_get_not_leader_or_follower() {
    let broker = cluster(3);
    assert!(broker.create_topic("t", 3));
    let (leader, epoch) = broker.leader("t", 0).unwrap();
    let wrong = other(&broker, leader);
    let leader_port = i32::from(broker.node_addr(leader).unwrap().port());
    let mut at_leader = to(&broker, leader);
    let mut at_wrong = to(&broker, wrong);
    let id = at_leader.metadata("t").topic_id;

    // Produce: v9 has only the code; v12 (KIP-951) says where the leader is.
    assert_eq!(at_wrong.produce("t", 0, 9), (NOT_LEADER_OR_FOLLOWER, -1, None, vec![]));
    assert_eq!(
        at_wrong.produce("t", 0, 12),
        (NOT_LEADER_OR_FOLLOWER, -1, Some((leader, epoch)), vec![(leader, leader_port)])
    );
    assert_eq!(at_leader.produce("t", 0, 12), (NONE, 0, None, vec![]));
    assert_eq!(broker.end_offset("t", 0), Some(1), "only the leader appended");

    // Fetch: v12 the code; v16 the current leader and its endpoint.
    assert_eq!(at_wrong.fetch(("t", id), 0, -1, 12), (NOT_LEADER_OR_FOLLOWER, vec![], None, vec![]));
    assert_eq!(
        at_wrong.fetch(("t", id), 0, -1, 16),
        (NOT_LEADER_OR_FOLLOWER, vec![], Some((leader, epoch)), vec![(leader, leader_port)])
    );
    assert_eq!(at_leader.fetch(("t", id), 0, -1, 16), (NONE, vec![0], None, vec![]));

    assert_eq!(at_wrong.list_offset("t", 0, -1).0, NOT_LEADER_OR_FOLLOWER);
    assert_eq!(at_leader.list_offset("t", 0, -1), (NONE, 1, 0));
    assert_eq!(at_wrong.delete_records("t", 0, 1), NOT_LEADER_OR_FOLLOWER);
    assert_eq!(broker.log_start_offset("t", 0), Some(0));
    assert_eq!(at_leader.delete_records("t", 0, 1), NONE);
    assert_eq!(broker.log_start_offset("t", 0), Some(1));
}

#[test]
fn group_and_transaction_apis_at_the_wrong_node_get_not_coordinator() {
    let broker = cluster(3);
    assert!(broker.create_topic("t", 1));
    let group = "orders";
    let coordinator = broker.group_coordinator(group);
    let wrong = other(&broker, coordinator);
    let mut at_coordinator = to(&broker, coordinator);
    let mut at_wrong = to(&broker, wrong);
    assert_eq!(at_wrong.join_group(9, group, "", "consumer", ("range", &[])).0, NOT_COORDINATOR);
    assert_eq!(at_wrong.commit(group, "t", 0, 5), NOT_COORDINATOR);
    assert_eq!(at_wrong.offset_fetch(group), NOT_COORDINATOR);
    // JoinGroup v9 from a new member: MEMBER_ID_REQUIRED (79) at the coordinator.
    assert_eq!(at_coordinator.join_group(9, group, "", "consumer", ("range", &[])).0, 79);
    assert_eq!(at_coordinator.commit(group, "t", 0, 5), NONE);
    assert_eq!(at_coordinator.offset_fetch(group), NONE);

    let txn = "payments";
    let coordinator = broker.transaction_coordinator(txn);
    let wrong = other(&broker, coordinator);
    assert_eq!(to(&broker, wrong).init_transactional(txn), NOT_COORDINATOR);
    assert_eq!(to(&broker, coordinator).init_transactional(txn), NONE);
}

#[test]
fn a_moved_leader_bumps_the_epoch_and_fences_the_old_one() {
    let broker = cluster(3);
    assert!(broker.create_topic("t", 1));
    let (first, e0) = broker.leader("t", 0).unwrap();
    assert_eq!(e0, 0);
    let mut c = to(&broker, first);
    let id = c.metadata("t").topic_id;
    assert_eq!(c.produce("t", 0, 9).0, NONE);
    // Epoch checks at the leader: older fenced, newer unknown, -1 unchecked.
    assert_eq!(c.fetch(("t", id), 0, 0, 12).0, NONE);
    assert_eq!(c.fetch(("t", id), 0, 1, 12).0, UNKNOWN_LEADER_EPOCH);
    assert_eq!(c.list_offset("t", 0, 1).0, UNKNOWN_LEADER_EPOCH);

    let next = other(&broker, first);
    assert_eq!(broker.move_leader("t", 0, next).unwrap(), 1);
    assert_eq!(broker.move_leader("t", 0, next).unwrap(), 1, "moving to the leader changes nothing");
    assert_eq!(broker.leader("t", 0), Some((next, 1)));
    for node in broker.node_ids() {
        assert_eq!(to(&broker, node).metadata("t").partitions[0].0, next);
        assert_eq!(to(&broker, node).metadata("t").partitions[0].1, 1);
    }
    // The old leader refuses; the new one fences epoch 0 and serves epoch 1.
    assert_eq!(c.produce("t", 0, 9).0, NOT_LEADER_OR_FOLLOWER);
    let mut n = to(&broker, next);
    assert_eq!(n.fetch(("t", id), 0, 0, 12).0, FENCED_LEADER_EPOCH);
    let (code, _, leader, _) = n.fetch(("t", id), 0, 0, 16);
    assert_eq!((code, leader), (FENCED_LEADER_EPOCH, Some((next, 1))), "KIP-951 on a fenced epoch");
    assert_eq!(n.list_offset("t", 0, 0).0, FENCED_LEADER_EPOCH);
    assert_eq!(n.list_offset("t", 0, 2).0, UNKNOWN_LEADER_EPOCH);
    assert_eq!(n.list_offset("t", 0, 1), (NONE, 1, 1));
    // Batches appended now carry the new epoch.
    assert_eq!(n.produce("t", 0, 9), (NONE, 1, None, vec![]));
    assert_eq!(n.fetch(("t", id), 0, 1, 12), (NONE, vec![0, 1], None, vec![]));

    assert!(broker.move_leader("t", 0, 99).is_err(), "no such node");
    assert!(broker.move_leader("nope", 0, next).is_err(), "no such partition");
    broker.shuffle_leaders();
    let (shuffled, epoch) = broker.leader("t", 0).unwrap();
    assert_eq!((shuffled != next, epoch), (true, 2));
}

#[test]
fn a_stopped_node_closes_and_its_leaders_and_coordinators_move() {
    let broker = cluster(3);
    assert!(broker.create_topic("t", 6));
    let victim = broker.leader("t", 0).unwrap().0;
    let victim_addr = broker.node_addr(victim).unwrap();
    let led: Vec<i32> = (0..6).filter(|&p| broker.leader("t", p).unwrap().0 == victim).collect();
    let groups: Vec<String> =
        (0..60).map(|i| format!("g{i}")).filter(|g| broker.group_coordinator(g) == victim).collect();
    assert!(!groups.is_empty());
    let mut open = TcpStream::connect(victim_addr).unwrap();
    open.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    // The connection is served (counted) before the node stops.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while broker.connections() == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(broker.connections(), 1);

    broker.stop_node(victim).unwrap();
    assert!(!broker.node_running(victim));
    let mut buf = [0u8; 1];
    assert!(matches!(open.read(&mut buf), Ok(0) | Err(_)), "its connections are closed");
    assert_eq!(broker.connections(), 0, "closed when stop_node returns");
    assert!(TcpStream::connect(victim_addr).is_err(), "its listener is closed");
    for p in 0..6 {
        let (leader, epoch) = broker.leader("t", p).unwrap();
        assert_ne!(leader, victim);
        assert_eq!(epoch, i32::from(led.contains(&p)), "partition {p}: only moved ones bump");
    }
    for g in &groups {
        assert_ne!(broker.group_coordinator(g), victim, "{g} moved");
    }
    let alive: Vec<i32> = broker.node_ids().into_iter().filter(|&n| n != victim).collect();
    for &n in &alive {
        let mut c = to(&broker, n);
        let s = c.metadata("t");
        assert_eq!(
            s.brokers.iter().map(|b| b.0).collect::<Vec<_>>(),
            alive,
            "the stopped node is not listed"
        );
        assert!(s.partitions.iter().all(|p| p.0 != victim));
        assert_eq!(c.describe_cluster().1.len(), 2);
        assert_eq!(c.find_coordinator(0, &groups[0]).0, broker.group_coordinator(&groups[0]));
    }
    // A moved partition is served at its new leader.
    let (leader, epoch) = broker.leader("t", 0).unwrap();
    let mut c = to(&broker, leader);
    assert_eq!(c.produce("t", 0, 9).0, NONE);
    assert_eq!(c.list_offset("t", 0, epoch), (NONE, 1, epoch));

    // Restart: the same address again, listed again, leading nothing until moved to.
    broker.restart_node(victim).unwrap();
    assert!(broker.node_running(victim));
    let mut back = Conn::open(victim_addr);
    assert_eq!(back.metadata("t").brokers.len(), 3);
    assert_eq!(back.produce("t", 0, 9).0, NOT_LEADER_OR_FOLLOWER);
    let epoch = broker.move_leader("t", 0, victim).unwrap();
    assert_eq!(back.produce("t", 0, 9).0, NONE);
    assert_eq!(back.list_offset("t", 0, epoch), (NONE, 2, epoch));

    // Stopping the same node twice is nothing; the last running node stays.
    let [a, b, c] = broker.node_ids()[..] else { unreachable!() };
    broker.stop_node(a).unwrap();
    broker.stop_node(a).unwrap();
    broker.stop_node(b).unwrap();
    assert!(broker.stop_node(c).is_err(), "the last running node cannot stop");
    assert!(broker.stop_node(42).is_err(), "no such node");
    assert!((0..6).all(|p| broker.leader("t", p).unwrap().0 == c));
    assert_eq!(to(&broker, c).metadata("t").brokers.len(), 1);
}

#[test]
fn nodes_are_added_and_removed_at_run_time() {
    let broker = cluster(1);
    assert!(broker.create_topic("t", 2));
    let first = broker.node_ids()[0];
    let first_addr = broker.node_addr(first).unwrap();
    let mut old = to(&broker, first);
    assert_eq!(old.produce("t", 0, 9).0, NONE);

    // Added: listed by every node, serving, leading nothing until a partition moves to it.
    let added = broker.add_node().unwrap();
    assert_eq!(added, first + 1);
    assert_eq!(broker.node_ids(), [first, added]);
    let mut new = to(&broker, added);
    let port = |id: i32| i32::from(broker.node_addr(id).unwrap().port());
    for c in [&mut old, &mut new] {
        assert_eq!(c.metadata("t").brokers, [(first, port(first)), (added, port(added))]);
        assert_eq!(c.describe_cluster().1, [(first, port(first)), (added, port(added))]);
    }
    assert_eq!(new.produce("t", 0, 9).0, NOT_LEADER_OR_FOLLOWER);
    let epoch = broker.move_leader("t", 0, added).unwrap();
    assert_eq!(new.produce("t", 0, 9), (NONE, 1, None, vec![]), "the log moved with the partition");
    let (code, _, leader, endpoints) = old.produce("t", 0, 12);
    assert_eq!(
        (code, leader, endpoints),
        (NOT_LEADER_OR_FOLLOWER, Some((added, epoch)), vec![(added, port(added))])
    );
    // New topics are placed on it too.
    assert!(broker.create_topic("u", 4));
    let leaders: BTreeSet<i32> = (0..4).map(|p| broker.leader("u", p).unwrap().0).collect();
    assert_eq!(leaders, BTreeSet::from([first, added]));
    let groups: Vec<String> =
        (0..60).map(|i| format!("g{i}")).filter(|g| broker.group_coordinator(g) == first).collect();
    assert!(!groups.is_empty());

    // Removed (the bootstrap node): closed, its partitions and coordinators moved, never
    // listed or named again.
    broker.remove_node(first).unwrap();
    let mut buf = [0u8; 1];
    assert!(matches!(old.s.read(&mut buf), Ok(0) | Err(_)), "its connections are closed");
    assert!(TcpStream::connect(first_addr).is_err(), "its listener is closed");
    assert_eq!(broker.node_ids(), [added]);
    assert_eq!(broker.node_addr(first), None);
    assert!(!broker.node_running(first));
    for (t, n) in [("t", 2), ("u", 4)] {
        assert!((0..n).all(|p| broker.leader(t, p).unwrap().0 == added), "{t}");
    }
    assert!(groups.iter().all(|g| broker.group_coordinator(g) == added));
    assert_eq!(new.metadata("u").brokers, [(added, port(added))]);
    assert_eq!(new.find_coordinator(0, &groups[0]).0, added);
    assert_eq!(new.produce("t", 1, 9).0, NONE);
    assert!(broker.restart_node(first).is_err(), "a removed node does not come back");
    assert!(broker.move_leader("t", 0, first).is_err());
    assert!(broker.stop_node(first).is_err());
    assert!(broker.remove_node(first).is_err(), "removed once");
    assert!(broker.remove_node(added).is_err(), "the last running node stays");

    // Ids are never given twice; 64 nodes over the cluster's life at most.
    let third = broker.add_node().unwrap();
    assert_eq!(third, added + 1);
    assert_eq!(broker.node_ids(), [added, third]);
    assert_eq!(to(&broker, third).metadata("t").brokers.len(), 2);
    while broker.node_ids().len() + 1 < 64 {
        broker.add_node().unwrap();
    }
    assert!(broker.add_node().is_err(), "the cluster has had 64 nodes");
}

#[test]
fn one_node_is_the_default_and_leads_everything() {
    let broker = Broker::start(Config::default()).unwrap();
    assert_eq!(broker.node_ids(), [1]);
    assert!(broker.create_topic("t", 4));
    let s = Conn::open(broker.addr()).metadata("t");
    assert_eq!(s.brokers, [(1, i32::from(broker.addr().port()))]);
    assert!(s.partitions.iter().all(|p| (p.0, p.1) == (1, 0)));
    assert!(broker.stop_node(1).is_err());
    assert!(Broker::start(Config { nodes: 0, ..Config::default() }).is_err());
}

/// A client program running: its stdout's JSON lines as they come.
struct Running {
    what: String,
    child: std::process::Child,
    lines: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    /// The threads reading its stdout and stderr; they end at the pipes' end of file.
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Running {
    fn start(what: &str, mut cmd: std::process::Command) -> Running {
        use std::io::BufRead;
        use std::process::Stdio;
        use std::sync::{Arc, Mutex};
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
        let lines: Arc<Mutex<Vec<serde_json::Value>>> = Arc::default();
        let stderr: Arc<Mutex<String>> = Arc::default();
        let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let l = lines.clone();
        let out_reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str(&line) {
                    l.lock().unwrap().push(v);
                }
            }
        });
        let e = stderr.clone();
        let err_reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                let mut e = e.lock().unwrap();
                if e.len() < 1 << 20 {
                    e.push_str(&line);
                    e.push('\n');
                }
            }
        });
        Running { what: what.into(), child, lines, stderr, readers: vec![out_reader, err_reader] }
    }

    /// The records it printed: (partition, offset, value), from franz-go's
    /// `{"p","o","v"}` lines or the Java member's `{"record": [p, o, v]}` ones.
    fn records(&self) -> Vec<(i64, i64, String)> {
        let lines = self.lines.lock().unwrap();
        lines
            .iter()
            .filter_map(|v| match v.get("record") {
                Some(r) => Some((r[0].as_i64()?, r[1].as_i64()?, r[2].as_str()?.to_string())),
                None => {
                    Some((v.get("p")?.as_i64()?, v.get("o")?.as_i64()?, v.get("v")?.as_str()?.to_string()))
                }
            })
            .collect()
    }

    /// Waits for it to end (killing it after `limit`): whether it exited with success.
    fn wait(&mut self, limit: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // What it printed last is read before anyone looks at its lines.
                while !self.readers.iter().all(|r| r.is_finished()) && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                return status.success();
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Real clients follow the cluster. franz-go's and confluent-kafka's idempotent producers
/// (acks=all) send to three partitions for 12 s, while a franz-go group (classic), a Java
/// group (KIP-848, `group.protocol=consumer`) and a confluent-kafka group consume them;
/// meanwhile every leader moves, the node that coordinates the groups and leads partitions
/// stops (its connections closed), a new node joins and a partition moves to it, the
/// stopped node restarts and gets a partition back, and another node leaves for good.
///
/// What the clients promise, and so what is checked: the idempotent producer's log holds
/// every acknowledged record exactly once (no duplicate appended on a retry after a move,
/// no gap, nothing unacknowledged lost), and no send fails. A group consumer that commits
/// after each poll is at-least-once: a commit lost with a stopped coordinator re-delivers
/// (counted and printed), so each group must see every record of the log, each offset with
/// the value the log holds, and nothing else.
#[test]
#[cfg_attr(not(feature = "interop"), ignore = "real clients: needs --features interop")]
fn clients_follow_moving_leaders_and_nodes_that_stop_join_and_leave() {
    use std::time::{Duration, Instant};
    common::clients::setup(|| {
        let m = |p: &str| std::fs::metadata(common::root().join(p)).and_then(|m| m.modified()).ok();
        let go = m("target/go-client/go-client");
        let java = m("target/java-client/proxy-java-client-0.jar");
        go.is_some()
            && go >= m("tests/interop/go/cluster.go")
            && java >= m("tests/interop/java/src/main/java/dev/kwire/interop/GroupMember.java")
    });
    let logs: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let l = logs.clone();
    let logger: kwire::broker::Logger =
        std::sync::Arc::new(move |line: &str| l.lock().unwrap_or_else(|e| e.into_inner()).push(line.into()));
    let broker = Broker::start(Config {
        nodes: 3,
        logger: Some(logger),
        session_timeout_range: (Duration::from_secs(1), Duration::from_secs(60)),
        ..Config::default()
    })
    .unwrap();
    let topic = "moving";
    assert!(broker.create_topic(topic, 3));
    let ids = broker.node_ids();
    // The node stopped: not the bootstrap, and the coordinator of both groups.
    let victim = ids[1];
    let group = |prefix: &str| {
        (0..1000).map(|i| format!("{prefix}-{i}")).find(|g| broker.group_coordinator(g) == victim).unwrap()
    };
    let (go_group, java_group, rd_group) = (group("cl-go"), group("cl-java"), group("cl-rdkafka"));
    let bootstrap = broker.addr().to_string();
    let dir = common::root().join(format!("target/broker-cluster-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stop_file = dir.join("stop");
    let _ = std::fs::remove_file(&stop_file);
    let go = common::root().join("target/go-client/go-client");

    let mut consume = std::process::Command::new(&go);
    consume.args(["cluster-consume", &bootstrap, topic, &go_group]).arg(&stop_file).arg("go-consumer");
    let mut go_consumer = Running::start("franz-go consumer", consume);
    let r = common::root();
    let mut java = std::process::Command::new("java");
    java.arg("-Xmx256m")
        .arg("-cp")
        .arg(format!(
            "{}:{}",
            r.join("target/java-client/proxy-java-client-0.jar").display(),
            r.join("target/java-client/lib/*").display()
        ))
        .arg("dev.kwire.interop.GroupMember")
        .args([&bootstrap, topic, &java_group, "java-consumer"]);
    let mut java_consumer = Running::start("Java consumer", java);
    let python = r.join("target/interop/venv/bin/python");
    let rdkafka = r.join("tests/proxy/confluent_cluster.py");
    let mut consume = std::process::Command::new(&python);
    consume.arg(&rdkafka).args(["consume", &bootstrap, topic, &rd_group]).arg(&stop_file).arg("rd-consumer");
    let mut rd_consumer = Running::start("confluent-kafka consumer", consume);
    let mut produce = std::process::Command::new(&go);
    produce.args(["cluster-produce", &bootstrap, topic, "12", "go-producer"]).env("KWIRE_PARTITIONS", "3");
    let mut producer = Running::start("franz-go producer", produce);
    let mut produce = std::process::Command::new(&python);
    produce
        .arg(&rdkafka)
        .args(["produce", &bootstrap, topic, "12", "rd-producer"])
        .env("KWIRE_PARTITIONS", "3");
    let mut rd_producer = Running::start("confluent-kafka producer", produce);

    // The cluster changes under them.
    let start = Instant::now();
    let at = |s: u64| {
        let until = start + Duration::from_millis(s);
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
    };
    at(2500);
    broker.shuffle_leaders();
    at(4000);
    let led: Vec<i32> = (0..3).filter(|&p| broker.leader(topic, p).unwrap().0 == victim).collect();
    assert!(!led.is_empty(), "the victim leads a partition");
    let ends = |b: &Broker| -> Vec<i64> { (0..3).map(|p| b.end_offset(topic, p).unwrap()).collect() };
    let at_stop = ends(&broker);
    broker.stop_node(victim).unwrap();
    at(5500);
    // A node joins, and partition 2 moves to it.
    let added = broker.add_node().unwrap();
    broker.move_leader(topic, 2, added).unwrap();
    let at_add = ends(&broker);
    at(7000);
    broker.restart_node(victim).unwrap();
    at(8000);
    broker.move_leader(topic, 0, victim).unwrap();
    let at_move = ends(&broker);
    at(9000);
    // The last of the first nodes leaves for good (not the bootstrap, nor the victim).
    let gone = ids[2];
    let gone_led: Vec<i32> = (0..3).filter(|&p| broker.leader(topic, p).unwrap().0 == gone).collect();
    // Placement and the moves above are deterministic: it leads partition 1 by now.
    assert_eq!(gone_led, [1], "what node {gone} leads when it leaves");
    broker.remove_node(gone).unwrap();
    let at_remove = ends(&broker);
    let epochs: Vec<i32> = (0..3).map(|p| broker.leader(topic, p).unwrap().1).collect();

    // The log: every record acknowledged to either producer once, offsets 0.. per partition.
    let mut log: Vec<std::collections::BTreeMap<i64, String>> = vec![Default::default(); 3];
    let mut sent = 0;
    for p in [&mut producer, &mut rd_producer] {
        assert!(p.wait(Duration::from_secs(60)), "{} failed:\n{}", p.what, p.stderr());
        let printed = p.lines.lock().unwrap().last().cloned().expect("the producer's summary");
        assert_eq!(printed["errors"], serde_json::json!([]), "{}: no send failed", p.what);
        let mut acked = 0;
        for (i, log) in log.iter_mut().enumerate() {
            for a in printed["acked"][i.to_string()].as_array().unwrap() {
                let (o, v) = (a[0].as_i64().unwrap(), a[1].as_str().unwrap().to_string());
                assert_eq!(log.insert(o, v), None, "partition {i} offset {o} acknowledged twice");
                acked += 1;
            }
        }
        assert_eq!(printed["sent"].as_u64(), Some(acked), "{}: every record sent was acknowledged", p.what);
        assert!(acked > 500, "{}: {acked} records", p.what);
        sent += acked;
    }
    let log: Vec<Vec<String>> = log
        .into_iter()
        .enumerate()
        .map(|(p, l)| {
            let offsets: Vec<i64> = l.keys().copied().collect();
            assert_eq!(
                offsets,
                (0..offsets.len() as i64).collect::<Vec<_>>(),
                "partition {p}: acked offsets"
            );
            assert_eq!(
                broker.end_offset(topic, p as i32),
                Some(offsets.len() as i64),
                "partition {p}: no duplicate appended, nothing unacknowledged"
            );
            l.into_values().collect()
        })
        .collect();
    let total: usize = log.iter().map(Vec::len).sum();
    assert_eq!(total as u64, sent);
    // The producers followed: the victim's partitions grew at their new leaders after the
    // stop, and partition 0 at the restarted node after the move.
    let end = ends(&broker);
    for &p in &led {
        assert!(end[p as usize] > at_stop[p as usize], "partition {p}: {at_stop:?} then {end:?}");
    }
    assert!(end[0] > at_move[0], "partition 0 after its move back: {at_move:?} then {end:?}");
    assert!(end[2] > at_add[2], "partition 2 at the added node: {at_add:?} then {end:?}");
    for &p in &gone_led {
        assert!(
            end[p as usize] > at_remove[p as usize],
            "partition {p} after node {gone} left: {at_remove:?} then {end:?}"
        );
    }

    // Both groups catch up, then stop.
    let deadline = Instant::now() + Duration::from_secs(40);
    let caught_up = |c: &Running| {
        let mut seen = BTreeSet::new();
        for (p, o, _) in c.records() {
            seen.insert((p, o));
        }
        seen.len() >= total
    };
    while !(caught_up(&go_consumer) && caught_up(&java_consumer) && caught_up(&rd_consumer))
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::write(&stop_file, b"").unwrap();
    drop(java_consumer.child.stdin.take());
    let go_ok = go_consumer.wait(Duration::from_secs(20));
    let java_ok = java_consumer.wait(Duration::from_secs(20));
    let rd_ok = rd_consumer.wait(Duration::from_secs(20));
    let _ = std::fs::remove_dir_all(&dir);
    for (c, ok) in [(&go_consumer, go_ok), (&java_consumer, java_ok), (&rd_consumer, rd_ok)] {
        let records = c.records();
        let mut again = 0;
        let mut seen: BTreeSet<(i64, i64)> = BTreeSet::new();
        for (p, o, v) in &records {
            let want = log.get(*p as usize).and_then(|l| l.get(*o as usize));
            assert_eq!(want, Some(v), "{}: partition {p} offset {o}", c.what);
            if !seen.insert((*p, *o)) {
                again += 1;
            }
        }
        assert_eq!(
            seen.len(),
            total,
            "{}: every record of the log consumed\nstderr:\n{}\nbroker:\n{}",
            c.what,
            c.stderr(),
            logs.lock().unwrap().join("\n")
        );
        assert!(ok, "{} did not end cleanly:\n{}", c.what, c.stderr());
        eprintln!("{}: {total} records, {again} delivered again", c.what);
    }
    eprintln!("leader epochs at the end: {epochs:?}; took {:.1}s", start.elapsed().as_secs_f64());
}
