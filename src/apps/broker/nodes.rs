//! A test's hand on a cluster: its nodes added, removed, stopped and restarted, leaders
//! (and so partitions: each has one replica) moved, shuffled and elected uncleanly, and who
//! coordinates a group or a transactional id.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::string::ToString;
use std::vec::Vec;

use super::{Broker, cluster, lock};

impl Broker {
    /// The nodes' ids, node 0's (the bootstrap, [`Broker::addr`]) first, then the others
    /// in the order they were added; removed nodes are not listed.
    pub fn node_ids(&self) -> Vec<i32> {
        self.shared.cluster.nodes.iter().filter(|n| !n.removed()).map(|n| n.id).collect()
    }

    /// The address node `id` listens on (also while it is stopped: a restart binds it
    /// again), or `None` for an id not in the cluster (or removed from it).
    pub fn node_addr(&self, id: i32) -> Option<SocketAddr> {
        let i = self.node_index(id).ok()?;
        Some(self.shared.cluster.nodes[i].addr)
    }

    /// Adds a node to the running cluster, as a new broker joining it: it listens on a new
    /// port of [`super::Config::listen`]'s address (advertised as the nodes after the first
    /// are), takes the id after the highest the cluster has had, and is listed by Metadata
    /// and DescribeCluster from then on. It leads nothing until partitions move to it
    /// ([`Broker::move_leader`]) or new topics are placed on it. Returns its id. Fails when
    /// the cluster has had 64 nodes, or the port cannot be bound.
    ///
    /// ```
    /// use kwire::broker::{Broker, Config};
    ///
    /// let broker = Broker::start(Config::default())?;
    /// broker.create_topic("orders", 1);
    /// let id = broker.add_node()?;
    /// assert_eq!(broker.node_ids(), [1, id]);
    /// broker.move_leader("orders", 0, id)?; // the partition moves to the new node
    /// broker.remove_node(1)?; // the first node leaves for good; its port closes
    /// assert_eq!(broker.node_ids(), [id]);
    /// assert_eq!(broker.leader("orders", 0).unwrap().0, id);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn add_node(&self) -> io::Result<i32> {
        let cluster = &self.shared.cluster;
        let config = &self.shared.config;
        let mut accepts = lock::lock(&self.accepts);
        if self.ticker.is_none() {
            return Err(io::Error::other("the broker has stopped"));
        }
        let full =
            || io::Error::new(io::ErrorKind::InvalidInput, "a cluster has at most 64 nodes over its life");
        if cluster.nodes.len() >= cluster::MAX_NODES {
            return Err(full());
        }
        let highest = cluster.nodes.iter().map(|n| n.id).max().unwrap_or(config.node_id);
        let id = highest
            .checked_add(1)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "node ids overflow i32"))?;
        let listener = TcpListener::bind(SocketAddr::new(config.listen.ip(), 0))?;
        let addr = listener.local_addr()?;
        let host = match &config.advertise {
            Some((h, _)) => h.clone(),
            None => addr.ip().to_string(),
        };
        let i = cluster.add(cluster::Node::new(id, host, i32::from(addr.port()), addr)).ok_or_else(full)?;
        match self.spawn_accept(i, listener) {
            Ok(t) => {
                accepts.resize_with(i + 1, || None);
                accepts[i] = Some(t);
            }
            Err(e) => {
                self.shared.node_stopped(i);
                cluster.remove(i);
                return Err(e);
            }
        }
        drop(accepts);
        self.shared.log(format_args!("node {id} added at {addr}"));
        Ok(id)
    }

    /// Removes node `id` from the cluster for good, as a decommissioned broker: it stops as
    /// [`Broker::stop_node`] stops a node (its connections closed, its partitions and
    /// coordinators moved to the running nodes), and it is no longer listed, nor can it be
    /// restarted or named to any other call. The last running node cannot be removed.
    pub fn remove_node(&self, id: i32) -> io::Result<()> {
        let i = self.node_index(id)?;
        let cluster = &self.shared.cluster;
        if cluster.running(i) {
            self.stop_node(id)?;
        }
        cluster.remove(i);
        self.shared.log(format_args!("node {id} removed"));
        Ok(())
    }

    /// Whether node `id` runs (not stopped by [`Broker::stop_node`]).
    pub fn node_running(&self, id: i32) -> bool {
        self.shared.cluster.index_of(id).is_some_and(|i| self.shared.cluster.running(i))
    }

    /// Stops node `id` as a crashed broker: its listener closes and its connections are shut
    /// down, the partitions it led move to the running nodes (round robin, each with its
    /// leader epoch bumped), and so do the groups and transactional ids it coordinated.
    /// Metadata from the other nodes stops listing it. Stopping a stopped node does nothing;
    /// the last running node cannot be stopped, nor an id not in the cluster.
    ///
    /// ```
    /// use kwire::broker::{Broker, Config};
    ///
    /// let broker = Broker::start(Config { nodes: 3, ..Config::default() })?;
    /// broker.create_topic("orders", 3);
    /// let (leader, epoch) = broker.leader("orders", 0).unwrap();
    /// broker.stop_node(leader)?;
    /// let (moved, bumped) = broker.leader("orders", 0).unwrap();
    /// assert!(moved != leader && bumped == epoch + 1);
    /// assert!(std::net::TcpStream::connect(broker.node_addr(leader).unwrap()).is_err());
    /// broker.restart_node(leader)?; // the same port again; leaders stay where they moved
    /// assert!(broker.node_running(leader));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stop_node(&self, id: i32) -> io::Result<()> {
        let cluster = &self.shared.cluster;
        let i = self.node_index(id)?;
        if !cluster.running(i) {
            return Ok(());
        }
        if cluster.live().len() == 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the last running node cannot be stopped",
            ));
        }
        let accept = lock::lock(&self.accepts)[i].take();
        self.shared.node_stopped(i);
        self.shared.log(format_args!("node {id} stopped"));
        if let Some(t) = accept {
            // Wakes the blocking accept with a connection of its own; it then closes the
            // listener and every connection.
            let _ = TcpStream::connect(cluster.nodes[i].addr);
            let _ = t.join();
        }
        Ok(())
    }

    /// Restarts a stopped node on the address it had: it serves again and Metadata lists it
    /// again, leading nothing until partitions move to it ([`Broker::move_leader`]), new
    /// topics are placed on it, or another node stops. Fails if the address cannot be bound
    /// again; restarting a running node does nothing.
    pub fn restart_node(&self, id: i32) -> io::Result<()> {
        let i = self.node_index(id)?;
        let mut accepts = lock::lock(&self.accepts);
        // Not removed in the meantime.
        self.node_index(id)?;
        if self.shared.cluster.running(i) || self.ticker.is_none() {
            return Ok(());
        }
        let listener = TcpListener::bind(self.shared.cluster.nodes[i].addr)?;
        self.shared.cluster.set_running(i, true);
        match self.spawn_accept(i, listener) {
            Ok(t) => accepts[i] = Some(t),
            Err(e) => {
                self.shared.node_stopped(i);
                return Err(e);
            }
        }
        self.shared.log(format_args!("node {id} restarted"));
        Ok(())
    }

    /// The leader of a partition: its node id and leader epoch.
    pub fn leader(&self, topic: &str, partition: i32) -> Option<(i32, i32)> {
        let (node, epoch) = self.shared.topics.partition(topic, partition)?.leader();
        Some((self.shared.cluster.nodes[node].id, epoch))
    }

    /// Moves a partition's leadership to running node `id`, bumping its leader epoch (as a
    /// reassignment or an election does); returns the new epoch. Moving it to the node that
    /// leads it already changes nothing and returns the epoch it has.
    pub fn move_leader(&self, topic: &str, partition: i32, id: i32) -> io::Result<i32> {
        let i = self.node_index(id)?;
        if !self.shared.cluster.running(i) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, std::format!("node {id} is stopped")));
        }
        let p = self.shared.topics.partition(topic, partition).ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, std::format!("no partition {topic}/{partition}"))
        })?;
        let mut log = p.lock();
        let epoch = if log.leader().0 == i { log.leader().1 } else { log.move_leader(i) };
        drop(log);
        // Long-polls on the partition look again (and see they lost it).
        self.shared.appended();
        Ok(epoch)
    }

    /// Stages an unclean leader election: running node `id` becomes the partition's leader
    /// with a log that ends at `end_offset`, rounded down to the start of the batch holding
    /// it, as a replica that was not in sync and lacked the last batches would; those
    /// batches are gone. The leader epoch is bumped and the new epoch starts at the new
    /// end, so OffsetForLeaderEpoch tells a client that read past it where the older epoch
    /// now ends (how Kafka clients detect the truncation). Returns the new leader epoch and
    /// log end offset. Fails for a stopped node, an unknown partition, or an offset below
    /// 0 or past the end. `id` may be the node that leads it already.
    ///
    /// ```
    /// use kwire::broker::{Broker, Config};
    ///
    /// let broker = Broker::start(Config::default())?;
    /// broker.create_topic("orders", 1);
    /// let (leader, epoch) = broker.leader("orders", 0).unwrap();
    /// // Nothing produced yet: the log ends at 0 either way.
    /// assert_eq!(broker.elect_unclean("orders", 0, leader, 0)?, (epoch + 1, 0));
    /// assert!(broker.elect_unclean("orders", 0, leader, 5).is_err());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn elect_unclean(
        &self,
        topic: &str,
        partition: i32,
        id: i32,
        end_offset: i64,
    ) -> io::Result<(i32, i64)> {
        let i = self.node_index(id)?;
        if !self.shared.cluster.running(i) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, std::format!("node {id} is stopped")));
        }
        let p = self.shared.topics.partition(topic, partition).ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, std::format!("no partition {topic}/{partition}"))
        })?;
        let done = p.lock().truncate_unclean(i, end_offset).map_err(|()| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                std::format!("offset {end_offset} is outside {topic}/{partition}'s log"),
            )
        });
        // Long-polls on the partition look again.
        self.shared.appended();
        done
    }

    /// The leader epochs of a partition's log (Kafka's leader epoch cache), each with the
    /// offset it starts at, oldest first: what OffsetForLeaderEpoch answers from.
    pub fn leader_epochs(&self, topic: &str, partition: i32) -> Option<Vec<(i32, i64)>> {
        let p = self.shared.topics.partition(topic, partition)?;
        let log = p.lock();
        Some(log.epochs().to_vec())
    }

    /// Moves every partition's leadership one running node further (each moved partition's
    /// leader epoch bumped), as a test of clients that follow leaders does; with one
    /// running node nothing moves.
    pub fn shuffle_leaders(&self) {
        let live = self.shared.cluster.live();
        if live.len() < 2 {
            return;
        }
        for (_, _, p) in self.shared.all_partitions() {
            let mut log = p.lock();
            let at = live.iter().position(|&n| n == log.leader().0).unwrap_or(live.len() - 1);
            log.move_leader(live[(at + 1) % live.len()]);
        }
        self.shared.appended();
    }

    /// The node id coordinating a group (the leader of its `__consumer_offsets` partition,
    /// as Kafka maps it).
    pub fn group_coordinator(&self, group: &str) -> i32 {
        let i = self.shared.coordinator(cluster::CoordinatorKind::Group, group);
        self.shared.cluster.nodes[i].id
    }

    /// The node id coordinating a transactional id (the leader of its
    /// `__transaction_state` partition, as Kafka maps it).
    pub fn transaction_coordinator(&self, transactional_id: &str) -> i32 {
        let i = self.shared.coordinator(cluster::CoordinatorKind::Transaction, transactional_id);
        self.shared.cluster.nodes[i].id
    }

    /// The index of node `id`, which must be in the cluster (not removed).
    fn node_index(&self, id: i32) -> io::Result<usize> {
        let cluster = &self.shared.cluster;
        match cluster.index_of(id) {
            Some(i) if !cluster.nodes[i].removed() => Ok(i),
            Some(_) => Err(io::Error::new(io::ErrorKind::NotFound, std::format!("node {id} was removed"))),
            None => Err(io::Error::new(io::ErrorKind::NotFound, std::format!("no node {id} in the cluster"))),
        }
    }
}
