//! An in-memory Kafka broker for tests and demos, one node or a cluster of nodes in one
//! process (feature `broker`).
//!
//! Start one in a test the way Go users start franz-go's `kfake`, point any Kafka client
//! at [`Broker::addr`], and it stops when dropped:
//!
//! ```
//! use kwire::broker::{Broker, Config};
//!
//! let broker = Broker::start(Config::default())?;
//! let bootstrap = broker.addr().to_string(); // e.g. "127.0.0.1:40321"
//! # let _ = bootstrap;
//! drop(broker); // closes the listener and every connection, joins the threads
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! **What it is.** One node (id [`Config::node_id`]) that leads every partition, or with
//! [`Config::nodes`] a cluster of nodes in one process (below), keeping every
//! partition's log in memory as the record batches' bytes, and forgets everything when
//! dropped. Produce runs [`crate::codec::records::validate`] (Kafka's `LogValidator`) on each
//! batch where it lands in the log, assigning its offsets and leader epoch in place. Threads: one
//! accepts, one per connection serves requests in order through [`crate::session::conn::ServerConn`],
//! and one ticks the group and transaction coordinators' timers. Fetch long-polls (`max_wait_ms`,
//! `min_bytes`) wait on a condition variable that every append signals, never spinning.
//!
//! **APIs served** ([`SERVED`]): ApiVersions, Metadata, DescribeCluster, Produce (acks 0, 1
//! and all, which are the same: nothing is replicated), Fetch, ListOffsets, InitProducerId (idempotent
//! producers, with Kafka's duplicate and sequence checks, and transactional ones), CreateTopics, CreatePartitions,
//! DeleteTopics, FindCoordinator, the classic consumer-group protocol (JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup with rebalances, generations, member ids, the join and sync
//! barriers and session timeouts), OffsetCommit, OffsetFetch, ListGroups, DescribeGroups and
//! DescribeConfigs (a topic's defaults and the configs it was created or altered with), the
//! transaction APIs below, and the admin calls clients make: DescribeLogDirs, AlterConfigs
//! and IncrementalAlterConfigs (topic configs, checked as Kafka checks them, that take effect
//! at the next Produce), DeleteRecords (the log start offset moves; Fetch and ListOffsets
//! honour it), DeleteGroups, OffsetDelete, DescribeProducers, ElectLeaders (never needed:
//! a partition's leader is its only replica) and the ACL APIs (bindings stored and matched as Kafka's, not enforced). Fetch
//! serves fetch sessions (KIP-227: full and incremental requests, session ids and epochs, a
//! bounded cache, [`Config::fetch_session_slots`]). KIP-848 consumer groups are served as
//! Kafka's group coordinator serves them: ConsumerGroupHeartbeat (member epochs, the group
//! epoch, a target assignment computed here by the `uniform` or `range` assignor, partitions
//! revoked from their old owner before their new owner gets them, leaving, static members,
//! session and rebalance timeouts, Kafka's error codes) and ConsumerGroupDescribe; a group id
//! is a classic group or a consumer group, and OffsetCommit and OffsetFetch check a consumer
//! group's member epochs. Any other API
//! kwire can read is answered with UNSUPPORTED_VERSION (35) in the response's error fields,
//! and left out of ApiVersions, so the connection stays open; a frame kwire cannot read at
//! all (an unknown API key or version, a malformed request, a bad size) closes that
//! connection, as Apache Kafka does.
//!
//! **Topics** are auto-created as Apache Kafka's default (`auto.create.topics.enable=true`)
//! does: by a Metadata request naming an unknown topic (when the request allows it), with
//! [`Config::default_partitions`] partitions. Produce to an unknown topic gets
//! UNKNOWN_TOPIC_OR_PARTITION, as from Kafka.
//!
//! **SASL/PLAIN** ([`Config::plain_users`]) is offered, not required: SaslHandshake v0
//! and v1, SaslAuthenticate, and the bare token frame after a v0 handshake.
//!
//! **SASL/SCRAM** (feature `broker-scram`, `Config::scram_users`): SCRAM-SHA-256 and
//! SCRAM-SHA-512 as Kafka's `ScramSaslServer` serves them (RFC 5802/7677 over
//! SaslAuthenticate or bare v0 tokens, Kafka's nonce and proof checks and messages, 4096
//! iterations at least), from salted credentials derived at start (the passwords are then
//! dropped), with DescribeUserScramCredentials and AlterUserScramCredentials. **TLS**
//! (feature `broker-tls`, `Config::tls`): the listener speaks TLS only (SSL, SASL_SSL) with
//! rustls, blocking on each connection's thread; a client whose TLS fails loses its own
//! connection. [`manual::serve`](crate::manual::serve) ("SCRAM and TLS") has the details.
//!
//! **Transactions** follow Apache Kafka's coordinator (transaction version 1):
//! InitProducerId with a transactional id (epoch bumps, fencing), AddPartitionsToTxn (v0-v3,
//! and the batched v4+ form), AddOffsetsToTxn, TxnOffsetCommit, EndTxn (commit and abort
//! markers written into the partitions' logs), the last stable offset, Fetch and ListOffsets
//! at read_committed, transaction timeouts (aborting and fencing), DescribeTransactions and
//! ListTransactions. [`manual::serve`](crate::manual::serve) lists the error code of each bad transition.
//!
//! **Hooks** ([`Broker::add_hook`]) catch the requests of an API to answer, fail, delay or
//! drop them, or count them; **faults** ([`Broker::add_fault`]) fail chosen partitions of
//! Produce, Fetch, ListOffsets and OffsetForLeaderEpoch requests with an error code and
//! serve the others.
//!
//! **A cluster** ([`Config::nodes`]): each node listens on its own port
//! ([`Broker::node_addr`]; [`Broker::addr`] is node 0's, the bootstrap) and they share the
//! logs, groups and transactions. Partitions' leaders are placed round robin, and a group's
//! or transactional id's coordinator is the leader of its `__consumer_offsets` or
//! `__transaction_state` partition as Kafka maps it (a table of 50 leaders each, not
//! topics). Metadata, DescribeCluster and FindCoordinator tell each node's truth; a partition
//! at the wrong node gets NOT_LEADER_OR_FOLLOWER (with KIP-951's current leader in Produce
//! v10+ and Fetch v16+), a group or transaction API at the wrong node NOT_COORDINATOR, and
//! a stale or future leader epoch FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH.
//! OffsetForLeaderEpoch answers from a leader epoch cache kept as Kafka's (each epoch's
//! start offset, [`Broker::leader_epochs`]), and [`Broker::elect_unclean`] stages an unclean
//! election that cuts the log, so clients detect the truncation as against Kafka. A test moves
//! leaders ([`Broker::move_leader`], [`Broker::shuffle_leaders`], each bumping the epoch),
//! stops a node ([`Broker::stop_node`]: listener and connections closed, its partitions and
//! coordinators moved) and restarts it ([`Broker::restart_node`]). Hooks, faults and
//! throttles apply at every node. [`manual::serve`](crate::manual::serve) has the details.
//!
//! **Throttles** ([`Broker::throttle`]) set `throttle_time_ms` in an API's responses, and
//! [`Fault::records`] rejects a Produce batch with per-record errors.
//!
//! **Not here:** classic members in a KIP-848 consumer group, share groups, nodes added at
//! run time (the node count is fixed at start), replicas other than the leader (and so
//! fetching from followers), ACL enforcement, SASL mechanisms other than PLAIN and SCRAM
//! (GSSAPI, OAUTHBEARER), delegation tokens, required authentication,
//! retention and compaction (logs only grow; DeleteRecords hides records, it does not free
//! them), replication. It is a test double, not a broker to keep data in.

mod acl;
mod cluster;
mod conn;
mod consumer_heartbeat;
mod fetch_sessions;
mod groups;
mod handle;
mod hooks;
mod host;
mod kip848;
mod lock;
mod log;
mod outbox;
mod regex;
#[cfg(feature = "broker-scram")]
mod scram;
mod served;
mod state;
#[cfg(feature = "broker-tls")]
mod tls;
mod txn;

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use std::vec::Vec;

use std::string::{String, ToString};

pub use acl::{Acl, Authorizer};
pub use hooks::{Action, AnswerFn, Fault, Hook, HookId};
#[cfg(feature = "broker-scram")]
pub use scram::{ScramMechanism, ScramUser};
pub use served::SERVED;
#[cfg(feature = "broker-tls")]
pub use tls::TlsConfig;

use crate::ApiKey;

/// A line the broker logs: connections always, every request when [`Config::verbose`].
pub type Logger = Arc<dyn Fn(&str) + Send + Sync>;

/// How a [`Broker`] starts. `Config::default()` listens on a free loopback port.
#[derive(Clone)]
pub struct Config {
    /// The address to listen on (default `127.0.0.1:0`: a free port).
    pub listen: SocketAddr,
    /// The host and port Metadata, FindCoordinator and DescribeCluster give clients
    /// (default: the address listened on).
    pub advertise: Option<(String, u16)>,
    /// This node's id (default 1); with [`Config::nodes`] above 1, node `i` has id
    /// `node_id + i`.
    pub node_id: i32,
    /// How many nodes the cluster has (default 1, at most 64): each listens on its own
    /// port (node 0 on [`Config::listen`], the others on free ports of the same address)
    /// and leads a share of the partitions and coordinators (see [`manual::serve`](crate::manual::serve)).
    pub nodes: usize,
    /// The cluster id (default `"kwire-broker"`).
    pub cluster_id: String,
    /// Partitions of an auto-created topic, and of CreateTopics asking for -1 (default 1,
    /// Kafka's `num.partitions`).
    pub default_partitions: i32,
    /// Whether Metadata creates the unknown topics it names (default true, as Kafka's
    /// `auto.create.topics.enable`).
    pub auto_create_topics: bool,
    /// The largest request frame read (default 100 MiB, Kafka's `socket.request.max.bytes`).
    pub max_frame_bytes: usize,
    /// The largest record batch accepted (default 1048588, Kafka's `message.max.bytes`).
    pub max_message_bytes: usize,
    /// The most bytes a compressed batch may inflate to when its records are checked
    /// (default 64 MiB); a larger one is rejected.
    pub max_decompressed_bytes: usize,
    /// The most bytes one Fetch response carries, whatever the client asks (default 55 MiB,
    /// Kafka's `fetch.max.bytes`).
    pub fetch_max_bytes: usize,
    /// How long a new group waits for more members before its first rebalance completes
    /// (default 0; Kafka's `group.initial.rebalance.delay.ms` is 3 s).
    pub initial_rebalance_delay: Duration,
    /// The session timeouts a member may ask for (default 6 s to 30 min, as Kafka's
    /// `group.min.session.timeout.ms` and `group.max.session.timeout.ms`).
    pub session_timeout_range: (Duration, Duration),
    /// The heartbeat interval KIP-848 consumer-group members are given (default 5 s, Kafka's
    /// `group.consumer.heartbeat.interval.ms`).
    pub consumer_heartbeat_interval: Duration,
    /// How long a KIP-848 consumer-group member may go without a heartbeat before it is
    /// fenced (default 45 s, Kafka's `group.consumer.session.timeout.ms`).
    pub consumer_session_timeout: Duration,
    /// The longest transaction timeout a transactional producer may ask for (default 15
    /// minutes, Kafka's `transaction.max.timeout.ms`); a longer one gets
    /// INVALID_TRANSACTION_TIMEOUT.
    pub transaction_max_timeout: Duration,
    /// The most fetch sessions (KIP-227) kept at once (default 1000, Kafka's
    /// `max.incremental.fetch.session.cache.slots`); 0 serves every Fetch without one.
    pub fetch_session_slots: usize,
    /// How long a fetch session must have been unused before a new one may take its place
    /// in a full cache (default 120 s, Kafka's `min.incremental.fetch.session.eviction.ms`).
    pub fetch_session_idle: Duration,
    /// Serve at most these versions of these APIs (ApiVersions lists the result).
    pub max_versions: Vec<(ApiKey, i16)>,
    /// SASL/PLAIN users (name, password): with at least one, SaslHandshake and
    /// SaslAuthenticate are served too (PLAIN only; authentication is offered, not
    /// required). Passwords and tokens are compared, never logged or echoed.
    pub plain_users: Vec<(String, String)>,
    /// SASL/SCRAM users (feature `broker-scram`): with at least one, SaslHandshake offers
    /// SCRAM-SHA-256 and SCRAM-SHA-512 (beside PLAIN when [`Config::plain_users`] has users);
    /// a user can log in with the mechanisms it has a credential for. [`Broker::start`]
    /// derives the salted credentials and drops the passwords; fewer than 4096 or more than
    /// 16384 iterations is refused, as Kafka refuses them.
    #[cfg(feature = "broker-scram")]
    pub scram_users: Vec<ScramUser>,
    /// TLS (feature `broker-tls`): with a certificate chain and key the listener speaks TLS
    /// only (Kafka's SSL, or SASL_SSL with users); without, plaintext only.
    #[cfg(feature = "broker-tls")]
    pub tls: Option<TlsConfig>,
    /// ACL bindings the broker starts with, as if created by CreateAcls (stored, described
    /// and deleted like those; see [`manual::serve`](crate::manual::serve)). [`Broker::start`] refuses one that
    /// CreateAcls would refuse.
    pub acls: Vec<Acl>,
    /// Enforce the ACLs, as Kafka's `StandardAuthorizer` does (`authorizer.class.name`),
    /// with these settings; `None` (the default): every request is allowed, as in a broker
    /// without an authorizer. A connection's principal is `User:NAME` after SASL, else
    /// `User:ANONYMOUS`. What each API checks is in [`manual::serve`](crate::manual::serve).
    pub authorizer: Option<Authorizer>,
    /// Where log lines go (default: nowhere).
    pub logger: Option<Logger>,
    /// Log every request (API, version, bytes in and out), not only connections.
    pub verbose: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            advertise: None,
            node_id: 1,
            nodes: 1,
            cluster_id: "kwire-broker".into(),
            default_partitions: 1,
            auto_create_topics: true,
            max_frame_bytes: crate::codec::frame::DEFAULT_MAX_FRAME_SIZE,
            max_message_bytes: 1_048_588,
            max_decompressed_bytes: 64 << 20,
            fetch_max_bytes: 55 << 20,
            initial_rebalance_delay: Duration::ZERO,
            session_timeout_range: (Duration::from_secs(6), Duration::from_secs(1800)),
            consumer_heartbeat_interval: Duration::from_secs(5),
            consumer_session_timeout: Duration::from_secs(45),
            transaction_max_timeout: Duration::from_secs(900),
            fetch_session_slots: 1000,
            fetch_session_idle: Duration::from_secs(120),
            max_versions: Vec::new(),
            plain_users: Vec::new(),
            #[cfg(feature = "broker-scram")]
            scram_users: Vec::new(),
            #[cfg(feature = "broker-tls")]
            tls: None,
            acls: Vec::new(),
            authorizer: None,
            logger: None,
            verbose: false,
        }
    }
}

impl core::fmt::Debug for Config {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut d = f.debug_struct("Config");
        d.field("listen", &self.listen)
            .field("advertise", &self.advertise)
            .field("node_id", &self.node_id)
            .field("nodes", &self.nodes)
            .field("cluster_id", &self.cluster_id)
            .field("default_partitions", &self.default_partitions)
            .field("auto_create_topics", &self.auto_create_topics)
            .field("max_versions", &self.max_versions)
            .field("plain_users", &self.plain_users.iter().map(|(u, _)| u.as_str()).collect::<Vec<_>>());
        #[cfg(feature = "broker-scram")]
        d.field(
            "scram_users",
            &self.scram_users.iter().map(|u| (u.name.as_str(), u.mechanism.name())).collect::<Vec<_>>(),
        );
        #[cfg(feature = "broker-tls")]
        d.field("tls", &self.tls.is_some());
        d.field("acls", &self.acls.len()).field("verbose", &self.verbose).finish_non_exhaustive()
    }
}

/// A running broker: listening from [`Broker::start`] until dropped.
pub struct Broker {
    addr: SocketAddr,
    shared: Arc<state::Shared>,
    /// Each node's accept thread while it runs.
    accepts: Mutex<Vec<Option<JoinHandle<()>>>>,
    ticker: Option<JoinHandle<()>>,
}

impl core::fmt::Debug for Broker {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Broker").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl Broker {
    /// Binds [`Config::listen`] and starts serving. Fails if the address cannot be bound, a
    /// [`Config::max_versions`] entry names a version kwire does not read, an ACL of
    /// [`Config::acls`] is one CreateAcls refuses (or there are more than it keeps), or a
    /// thread cannot be started.
    pub fn start(config: Config) -> io::Result<Broker> {
        for &(key, v) in &config.max_versions {
            if !key.request_versions().contains(v) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    std::format!("{} has versions {}, not {v}", key.name(), key.request_versions()),
                ));
            }
        }
        #[cfg(feature = "broker-scram")]
        for u in &config.scram_users {
            if let Err(why) = scram::check_iterations(i64::from(u.iterations)) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    std::format!("SCRAM user {}: {why} ({}; 4096 to 16384)", u.name, u.iterations),
                ));
            }
        }
        if config.acls.len() > acl::MAX_ACLS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                std::format!("{} ACLs; at most {} are kept", config.acls.len(), acl::MAX_ACLS),
            ));
        }
        for a in &config.acls {
            if let Some(why) = a.invalid() {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, std::format!("ACL {a:?}: {why}")));
            }
        }
        if !(1..=64).contains(&config.nodes) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                std::format!("a cluster has 1 to 64 nodes, not {}", config.nodes),
            ));
        }
        if i32::try_from(config.nodes - 1).ok().and_then(|n| config.node_id.checked_add(n)).is_none() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "node ids overflow i32"));
        }
        let mut listeners = Vec::with_capacity(config.nodes);
        let mut nodes = Vec::with_capacity(config.nodes);
        for i in 0..config.nodes {
            let listen = if i == 0 { config.listen } else { SocketAddr::new(config.listen.ip(), 0) };
            let listener = TcpListener::bind(listen)?;
            let addr = listener.local_addr()?;
            // Node 0 advertises `advertise`; the others its host with their own ports.
            let (host, port) = match &config.advertise {
                Some((h, p)) if i == 0 => (h.clone(), i32::from(*p)),
                Some((h, _)) => (h.clone(), i32::from(addr.port())),
                None => (addr.ip().to_string(), i32::from(addr.port())),
            };
            nodes.push(cluster::Node::new(config.node_id + i as i32, host, port, addr));
            listeners.push(listener);
        }
        let addr = nodes[0].addr;
        let shared = Arc::new(state::Shared::new(config, nodes));
        let ticker = {
            let shared = shared.clone();
            std::thread::Builder::new().name("kwire-broker-timers".into()).spawn(move || {
                while !shared.stopping() {
                    shared.groups.tick(&*shared);
                    shared.txns.abort_timed_out(&*shared);
                    std::thread::sleep(Duration::from_millis(100));
                }
            })?
        };
        let mut broker = Broker { addr, shared, accepts: Mutex::new(Vec::new()), ticker: Some(ticker) };
        for (i, listener) in listeners.into_iter().enumerate() {
            let accept = broker.spawn_accept(i, listener);
            lock::lock(&broker.accepts).push(None);
            match accept {
                Ok(t) => lock::lock(&broker.accepts)[i] = Some(t),
                Err(e) => {
                    broker.shutdown();
                    return Err(e);
                }
            }
        }
        Ok(broker)
    }

    fn spawn_accept(&self, node: usize, listener: TcpListener) -> io::Result<JoinHandle<()>> {
        let shared = self.shared.clone();
        std::thread::Builder::new()
            .name("kwire-broker-accept".into())
            .spawn(move || conn::accept_loop(listener, shared, node))
    }

    /// The address it listens on (with the port picked when [`Config::listen`] had port 0):
    /// node 0's, the bootstrap address of a cluster.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The nodes' ids, node 0's (the bootstrap, [`Broker::addr`]) first.
    pub fn node_ids(&self) -> Vec<i32> {
        self.shared.cluster.nodes.iter().map(|n| n.id).collect()
    }

    /// The address node `id` listens on (also while it is stopped: a restart binds it
    /// again), or `None` for an id not in the cluster.
    pub fn node_addr(&self, id: i32) -> Option<SocketAddr> {
        let i = self.shared.cluster.index_of(id)?;
        Some(self.shared.cluster.nodes[i].addr)
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

    fn node_index(&self, id: i32) -> io::Result<usize> {
        self.shared.cluster.index_of(id).ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, std::format!("no node {id} in the cluster"))
        })
    }

    /// The host and port it advertises to clients (node 0's).
    pub fn advertised(&self) -> (&str, i32) {
        (&self.shared.host, self.shared.port)
    }

    /// The versions of `key` it serves, or `None` for an API it does not serve.
    pub fn versions(&self, key: ApiKey) -> Option<crate::codec::types::Versions> {
        self.shared.versions(key)
    }

    /// Creates a topic as CreateTopics would (no configs); `false` if it exists or the name
    /// or count is invalid.
    pub fn create_topic(&self, name: &str, partitions: i32) -> bool {
        self.shared.topics.create(&self.shared, name, partitions, Vec::new()).is_ok()
    }

    /// The offset after the last record of a partition (its high watermark), if it exists.
    pub fn end_offset(&self, topic: &str, partition: i32) -> Option<i64> {
        let p = self.shared.topics.partition(topic, partition)?;
        let log = p.lock();
        Some(log.next_offset())
    }

    /// The first offset of a partition a read may ask for (0 until DeleteRecords moves it),
    /// if it exists.
    pub fn log_start_offset(&self, topic: &str, partition: i32) -> Option<i64> {
        let p = self.shared.topics.partition(topic, partition)?;
        let log = p.lock();
        Some(log.log_start_offset())
    }

    /// Appends `records` to a partition without a client, as one uncompressed batch a
    /// Produce would carry (timestamps now unless a record has its own), validated as
    /// Produce validates it (the topic's configs apply); returns the offset of the first
    /// record. Fetch long-polls waiting on the partition wake up. An unknown topic or
    /// partition is UNKNOWN_TOPIC_OR_PARTITION; a batch the log refuses gets the error
    /// code a Produce would (e.g. INVALID_TIMESTAMP, RECORD_TOO_LARGE).
    ///
    /// ```
    /// use kwire::broker::{Broker, Config};
    /// use kwire::records::NewRecord;
    ///
    /// let broker = Broker::start(Config::default())?;
    /// broker.create_topic("orders", 1);
    /// let records = [NewRecord::new(Some(b"k1"), Some(b"one")), NewRecord::new(None, Some(b"two"))];
    /// assert_eq!(broker.append("orders", 0, &records), Ok(0));
    /// assert_eq!(broker.end_offset("orders", 0), Some(2));
    /// let read = broker.records("orders", 0).unwrap();
    /// assert_eq!((read[1].offset, read[1].value.as_deref()), (1, Some(&b"two"[..])));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn append(
        &self,
        topic: &str,
        partition: i32,
        records: &[crate::codec::records::NewRecord<'_>],
    ) -> Result<i64, crate::ErrorCode> {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let mut batch = Vec::new();
        crate::codec::records::BatchBuilder::new(0, now_ms, records)
            .encode_to_vec(&mut batch)
            .map_err(|_| crate::ErrorCode::InvalidRecord)?;
        let version = ApiKey::Produce.request_versions().max;
        let config = &self.shared.config;
        let (p, settings) = self
            .shared
            .topics
            .partition_with_settings(topic, partition, version, now_ms, config.max_message_bytes)
            .ok_or(crate::ErrorCode::UnknownTopicOrPartition)?;
        let appended = p
            .lock()
            .append(&batch, &settings, &mut Vec::new(), config.max_decompressed_bytes, &mut Vec::new())
            .map_err(|r| r.code)?;
        self.shared.appended();
        Ok(appended.base_offset)
    }

    /// The records of a partition from its log start offset to its end, decoded (compressed
    /// batches too) and owned, control records (transaction markers) left out and records
    /// of aborted transactions kept (as a read_uncommitted consumer sees them); `None` for
    /// an unknown partition.
    pub fn records(
        &self,
        topic: &str,
        partition: i32,
    ) -> Option<Vec<crate::codec::records::reference::OwnedRecord>> {
        use crate::codec::records::RecordBatch;
        use crate::codec::records::reference::OwnedRecord;
        let p = self.shared.topics.partition(topic, partition)?;
        let log = p.lock();
        let start = log.log_start_offset();
        let limit = self.shared.config.max_decompressed_bytes;
        let mut scratch = Vec::new();
        let mut out = Vec::new();
        for bytes in log.batches() {
            // The log holds only batches validated on the way in.
            let Ok(batch) = RecordBatch::new(bytes) else { continue };
            if batch.is_control() || batch.last_offset() < start {
                continue;
            }
            let Ok(records) = batch.records_in_vec(&mut scratch, limit) else { continue };
            out.extend(records.flatten().filter(|r| r.offset() >= start).map(|r| OwnedRecord::from_view(&r)));
        }
        Some(out)
    }

    /// The offset a group has committed for a partition (by OffsetCommit or a
    /// transaction's TxnOffsetCommit), if any.
    pub fn committed_offset(&self, group: &str, topic: &str, partition: i32) -> Option<i64> {
        self.shared.groups.committed(group, topic, partition)
    }

    /// Waits until a group has committed an offset of at least `at_least` for a partition
    /// (0 for any commit), and returns it; `None` after `timeout` or when the broker stops.
    /// Every commit wakes it: it does not poll.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kwire::broker::{Broker, Config};
    ///
    /// let broker = Broker::start(Config::default())?;
    /// // Nothing committed: the wait ends at its timeout.
    /// assert_eq!(broker.wait_for_commit("billing", "orders", 0, 0, Duration::from_millis(50)), None);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn wait_for_commit(
        &self,
        group: &str,
        topic: &str,
        partition: i32,
        at_least: i64,
        timeout: Duration,
    ) -> Option<i64> {
        let deadline = std::time::Instant::now() + timeout;
        self.shared
            .groups
            .wait_for_offset(group, (topic, partition), at_least, deadline, || self.shared.stopping())
    }

    /// Fetch sessions (KIP-227) open now.
    pub fn fetch_sessions(&self) -> usize {
        self.shared.fetch_sessions.len()
    }

    /// The bytes a partition's log holds (its record batches, as fetched).
    pub fn log_bytes(&self, topic: &str, partition: i32) -> Option<usize> {
        let p = self.shared.topics.partition(topic, partition)?;
        let log = p.lock();
        Some(log.len_bytes())
    }

    /// Adds a hook: the requests of its API it catches (the first hook that matches, in the
    /// order added) are answered, failed, delayed, dropped or let through as its
    /// [`Action`] says, before the broker looks at them.
    ///
    /// A test makes a client retry: the first InitProducerId fails with a retriable error,
    /// the client asks again and gets its producer id.
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use kwire::broker::{Action, Broker, Config, Hook};
    /// use kwire::messages::init_producer_id::InitProducerIdRequest;
    /// use kwire::messages::ResponseBodyView;
    /// use kwire::{dispatch, ApiKey, ErrorCode};
    ///
    /// let broker = Broker::start(Config::default())?;
    /// let hook = broker.add_hook(Hook::once(
    ///     ApiKey::InitProducerId,
    ///     Action::Fail(ErrorCode::CoordinatorLoadInProgress),
    /// ));
    /// let mut s = std::net::TcpStream::connect(broker.addr())?;
    /// let req = InitProducerIdRequest { transactional_id: None, transaction_timeout_ms: 60_000, ..Default::default() };
    /// // A client's loop: retry while the error is retriable.
    /// let mut attempts = 0;
    /// let producer_id = loop {
    ///     attempts += 1;
    ///     let header = kwire::frame::RequestHeader { correlation_id: attempts, client_id: Some("doc"), unknown_tagged_fields: &[] };
    ///     let mut frame = vec![0; dispatch::request_len(&req, 4, &header).unwrap()];
    ///     dispatch::encode_request_with(&req, 4, &header, &mut frame).unwrap();
    ///     s.write_all(&frame)?;
    ///     let mut size = [0; 4];
    ///     s.read_exact(&mut size)?;
    ///     let mut answer = vec![0; i32::from_be_bytes(size) as usize];
    ///     s.read_exact(&mut answer)?;
    ///     let ResponseBodyView::InitProducerId(r) =
    ///         dispatch::parse_response(&answer, ApiKey::InitProducerId, 4).unwrap().body else { unreachable!() };
    ///     match ErrorCode::from_i16(r.error_code()) {
    ///         Some(ErrorCode::None) => break r.producer_id(),
    ///         Some(e) if e.is_retriable() => continue,
    ///         e => panic!("{e:?}"),
    ///     }
    /// };
    /// assert_eq!(attempts, 2);
    /// assert!(producer_id >= 0);
    /// assert_eq!(broker.hook_fired(hook), Some(1));
    /// assert!(broker.remove_hook(hook));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn add_hook(&self, hook: Hook) -> HookId {
        self.shared.hooks.add(hook)
    }

    /// Adds a per-partition fault: the partitions it names, in the requests of its API
    /// (Produce, Fetch or ListOffsets), are answered with its error code, and the other
    /// partitions of those requests are served. [`Broker::hook_fired`] counts the requests
    /// it caught and [`Broker::remove_hook`] removes it.
    ///
    /// ```
    /// use kwire::broker::{Broker, Config, Fault};
    /// use kwire::{ApiKey, ErrorCode};
    ///
    /// let broker = Broker::start(Config::default())?;
    /// broker.create_topic("orders", 3);
    /// // The next two Produce requests naming orders/1 get NOT_LEADER_OR_FOLLOWER for it.
    /// let fault = broker.add_fault(
    ///     Fault::new(ApiKey::Produce, "orders", Some(1), ErrorCode::NotLeaderOrFollower).times(2),
    /// );
    /// assert_eq!(broker.hook_fired(fault), Some(0));
    /// assert!(broker.remove_hook(fault));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn add_fault(&self, fault: Fault) -> HookId {
        self.shared.hooks.add_fault(fault)
    }

    /// Throttles an API: every response to it carries `throttle_time_ms` (clients back off
    /// for that long before their next request to this broker, as from a broker enforcing a
    /// quota), until [`Broker::remove_hook`] removes it; [`Broker::hook_fired`] counts the
    /// responses. The broker itself does not hold the responses back (an [`Action::Delay`]
    /// hook does that). Responses without the field (before the version that has it) are
    /// unchanged.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kwire::broker::{Broker, Config};
    /// use kwire::ApiKey;
    ///
    /// let broker = Broker::start(Config::default())?;
    /// let throttle = broker.throttle(ApiKey::Fetch, Duration::from_millis(250));
    /// assert_eq!(broker.hook_fired(throttle), Some(0));
    /// assert!(broker.remove_hook(throttle));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn throttle(&self, key: ApiKey, time: Duration) -> HookId {
        self.shared.hooks.add_throttle(key, i32::try_from(time.as_millis()).unwrap_or(i32::MAX))
    }

    /// Removes a hook, a fault or a throttle; `false` if it was not there.
    pub fn remove_hook(&self, id: HookId) -> bool {
        self.shared.hooks.remove(id)
    }

    /// How many requests a hook or a fault has caught, or responses a throttle has marked
    /// (`None` once removed).
    pub fn hook_fired(&self, id: HookId) -> Option<usize> {
        self.shared.hooks.fired(id)
    }

    /// Connections open now.
    pub fn connections(&self) -> usize {
        self.shared.open_connections()
    }

    /// Stops it: the listener closes, every connection is shut down, and the threads are
    /// joined (what dropping it does).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(ticker) = self.ticker.take() else {
            return;
        };
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake_all();
        let accepts: Vec<_> = lock::lock(&self.accepts).iter_mut().map(Option::take).collect();
        for (node, accept) in accepts.into_iter().enumerate() {
            if let Some(t) = accept {
                // Wakes the blocking accept with a connection of its own.
                let _ = TcpStream::connect(self.shared.cluster.nodes[node].addr);
                let _ = t.join();
            }
        }
        let _ = ticker.join();
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.shutdown();
    }
}
