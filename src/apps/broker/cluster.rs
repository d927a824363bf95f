//! The cluster of nodes in one process: each node's listener address and whether it runs
//! (nodes are added at run time, up to [`MAX_NODES`], and removed ones keep their index),
//! where new partitions' leaders go, and which node coordinates a group or a transactional
//! id. The partitions' leaders themselves live with their logs (`Log::leader`).
//!
//! Coordinators follow Kafka's rule: a key maps to a partition of `__consumer_offsets`
//! (groups) or `__transaction_state` (transactional ids), `abs(key.hashCode()) % 50` with
//! Java's `String.hashCode`, and the node leading that partition coordinates the key. Those
//! internal partitions are not topics here (no Metadata lists them), only a table of 50
//! leaders each, placed round robin over the nodes at start and moved off a stopped node as
//! other partitions are.

use std::net::SocketAddr;
use std::string::String;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::vec::Vec;

use super::lock::lock;

/// Kafka's `offsets.topic.num.partitions` and `transaction.state.log.num.partitions`.
pub(crate) const COORDINATOR_PARTITIONS: usize = 50;

/// Which coordinator: FindCoordinator's key type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CoordinatorKind {
    /// A group (key type 0), on `__consumer_offsets`.
    Group,
    /// A transactional id (key type 1), on `__transaction_state`.
    Transaction,
}

/// The most nodes a cluster has over its life, those added at run time and removed included.
pub(crate) const MAX_NODES: usize = 64;

/// One node: its id, the address clients are given, and the address it listens on.
#[derive(Debug)]
pub(crate) struct Node {
    pub id: i32,
    pub host: String,
    pub port: i32,
    pub addr: SocketAddr,
    running: AtomicBool,
    /// Removed for good ([`Cluster::remove`]): never runs again.
    removed: AtomicBool,
}

impl Node {
    pub fn new(id: i32, host: String, port: i32, addr: SocketAddr) -> Node {
        Node { id, host, port, addr, running: AtomicBool::new(true), removed: AtomicBool::new(false) }
    }

    /// Whether the node was removed from the cluster.
    pub fn removed(&self) -> bool {
        self.removed.load(Ordering::SeqCst)
    }
}

/// The nodes by index, growing at run time: slots set once, in order, so that a node is
/// borrowed without a lock for as long as the cluster lives.
#[derive(Debug)]
pub(crate) struct Nodes {
    slots: Vec<OnceLock<Node>>,
    len: AtomicUsize,
}

impl Nodes {
    fn new(nodes: Vec<Node>) -> Nodes {
        let slots: Vec<OnceLock<Node>> = (0..MAX_NODES.max(nodes.len())).map(|_| OnceLock::new()).collect();
        let len = nodes.len();
        for (slot, node) in slots.iter().zip(nodes) {
            let _ = slot.set(node);
        }
        Nodes { slots, len: AtomicUsize::new(len) }
    }

    /// How many nodes the cluster has had (removed ones included).
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Node `i`, if the cluster has had that many.
    pub fn get(&self, i: usize) -> Option<&Node> {
        self.slots.get(..self.len())?.get(i)?.get()
    }

    /// Every node, removed ones included, by index.
    pub fn iter(&self) -> impl Iterator<Item = &Node> {
        self.slots[..self.len()].iter().filter_map(OnceLock::get)
    }

    /// Adds a node (callers hold the broker's accept lock, so adds come one at a time):
    /// its index, or `None` when the cluster has had [`MAX_NODES`].
    fn push(&self, node: Node) -> Option<usize> {
        let i = self.len();
        self.slots.get(i)?.set(node).ok()?;
        self.len.store(i + 1, Ordering::Release);
        Some(i)
    }
}

impl core::ops::Index<usize> for Nodes {
    type Output = Node;

    /// Node `i`: indexes come from the cluster itself (leaders, coordinators, accept
    /// loops), which only names nodes it has.
    fn index(&self, i: usize) -> &Node {
        self.get(i).expect("a node index the cluster gave out")
    }
}

#[derive(Debug)]
pub(crate) struct Cluster {
    pub nodes: Nodes,
    /// Leaders (node indexes) of the coordinator partitions: groups', then transactions'.
    coordinators: Mutex<Vec<usize>>,
    /// Topics placed so far: the next topic's first partition goes to the next node.
    placed: AtomicUsize,
}

/// Java's `String.hashCode` (over UTF-16 code units, wrapping).
pub(crate) fn java_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The coordinator partition of a key: Kafka's `Utils.abs(key.hashCode) % 50`.
pub(crate) fn coordinator_partition(key: &str) -> usize {
    let h = java_hash(key);
    let abs = if h == i32::MIN { 0 } else { h.unsigned_abs() };
    abs as usize % COORDINATOR_PARTITIONS
}

impl Cluster {
    pub fn new(nodes: Vec<Node>) -> Cluster {
        let n = nodes.len().max(1);
        let coordinators = (0..2 * COORDINATOR_PARTITIONS).map(|p| p % COORDINATOR_PARTITIONS % n).collect();
        Cluster {
            nodes: Nodes::new(nodes),
            coordinators: Mutex::new(coordinators),
            placed: AtomicUsize::new(0),
        }
    }

    /// Adds a running node: its index, or `None` when the cluster has had [`MAX_NODES`].
    pub fn add(&self, node: Node) -> Option<usize> {
        self.nodes.push(node)
    }

    /// Marks a stopped node removed: it never runs again.
    pub fn remove(&self, node: usize) {
        if let Some(n) = self.nodes.get(node) {
            n.removed.store(true, Ordering::SeqCst);
        }
    }

    pub fn running(&self, node: usize) -> bool {
        self.nodes.get(node).is_some_and(|n| n.running.load(Ordering::SeqCst))
    }

    pub fn set_running(&self, node: usize, running: bool) {
        if let Some(n) = self.nodes.get(node) {
            n.running.store(running, Ordering::SeqCst);
        }
    }

    /// The running nodes' indexes, in order.
    pub fn live(&self) -> Vec<usize> {
        (0..self.nodes.len()).filter(|&i| self.running(i)).collect()
    }

    /// A node's index by its id (a removed node's too).
    pub fn index_of(&self, id: i32) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == id)
    }

    /// Leaders for the `count` partitions of a new topic (or the new partitions from
    /// `first` on): round robin over the running nodes, each topic starting one node
    /// further than the last, as Kafka's rack-unaware placement does from its start index.
    pub fn place(&self, first: usize, count: usize) -> Vec<usize> {
        let live = self.live();
        if live.is_empty() {
            return std::vec![0; count];
        }
        let start = self.placed.fetch_add(1, Ordering::Relaxed);
        (first..first + count).map(|p| live[(start + p) % live.len()]).collect()
    }

    /// The node coordinating `key`.
    pub fn coordinator(&self, kind: CoordinatorKind, key: &str) -> usize {
        let p = coordinator_partition(key)
            + match kind {
                CoordinatorKind::Group => 0,
                CoordinatorKind::Transaction => COORDINATOR_PARTITIONS,
            };
        lock(&self.coordinators)[p]
    }

    /// Moves the coordinator partitions `node` leads to the running nodes, round robin.
    pub fn move_coordinators_off(&self, node: usize) {
        let live = self.live();
        if live.is_empty() {
            return;
        }
        let mut k = 0;
        for leader in lock(&self.coordinators).iter_mut() {
            if *leader == node {
                *leader = live[k % live.len()];
                k += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_partitions_as_kafka_maps_them() {
        // Java: "".hashCode() == 0, "a".hashCode() == 97, "group".hashCode() == 98629247.
        assert_eq!(java_hash(""), 0);
        assert_eq!(java_hash("a"), 97);
        assert_eq!(java_hash("group"), 98_629_247);
        assert_eq!(coordinator_partition("group"), 98_629_247 % 50);
        // "polygenelubricants".hashCode() == Integer.MIN_VALUE: Kafka's Utils.abs gives 0.
        assert_eq!(java_hash("polygenelubricants"), i32::MIN);
        assert_eq!(coordinator_partition("polygenelubricants"), 0);
    }
}
