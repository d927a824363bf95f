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
//! a partition's leader is its only replica) and the ACL APIs (bindings stored and matched
//! as Kafka's, and enforced as Kafka's `StandardAuthorizer` enforces them with
//! [`Config::authorizer`]). Fetch
//! serves fetch sessions (KIP-227: full and incremental requests, session ids and epochs, a
//! bounded cache, [`Config::fetch_session_slots`]). KIP-848 consumer groups are served as
//! Kafka's group coordinator serves them: ConsumerGroupHeartbeat (member epochs, the group
//! epoch, a target assignment computed here by the `uniform` or `range` assignor, partitions
//! revoked from their old owner before their new owner gets them, leaving, static members,
//! session and rebalance timeouts, Kafka's error codes) and ConsumerGroupDescribe; a group id
//! is a classic group or a consumer group, and OffsetCommit and OffsetFetch check a consumer
//! group's member epochs. Share groups (KIP-932) are served with ShareGroupHeartbeat, ShareGroupDescribe,
//! ShareFetch and ShareAcknowledge (acquisition locks, delivery counts, accept, release and
//! reject, share sessions) and the share-group offset APIs;
//! [`manual::serve`](crate::manual::serve) ("Share groups") has the details. Any other API
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
//! **Not here:** classic members in a KIP-848 consumer group, nodes added at
//! run time (the node count is fixed at start), replicas other than the leader (and so
//! fetching from followers), SASL mechanisms other than PLAIN and SCRAM
//! (GSSAPI, OAUTHBEARER), delegation tokens, required authentication,
//! retention and compaction (logs only grow; DeleteRecords hides records, it does not free
//! them), replication. It is a test double, not a broker to keep data in.

mod acl;
mod cluster;
mod config;
mod conn;
mod consumer_heartbeat;
mod fetch_sessions;
mod groups;
mod handle;
mod hooks;
mod host;
mod inspect;
mod kip848;
mod lock;
mod log;
mod nodes;
mod outbox;
mod regex;
#[cfg(feature = "broker-scram")]
mod scram;
mod served;
mod share;
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

use std::string::ToString;

pub use acl::{Acl, AclField, Authorizer};
pub use config::{Config, Logger};
pub use hooks::{Action, AnswerFn, Fault, Hook, HookId};
#[cfg(feature = "broker-scram")]
pub use scram::{ScramMechanism, ScramUser};
pub use served::SERVED;
#[cfg(feature = "broker-tls")]
pub use tls::TlsConfig;

use crate::ApiKey;

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
                    let topics = host::Host::topics(&*shared);
                    if shared.shares.tick(&topics, shared.config.share_delivery_count_limit) {
                        shared.appended();
                    }
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
