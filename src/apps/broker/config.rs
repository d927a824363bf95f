//! How a [`Broker`](super::Broker) starts: [`Config`], and the [`Logger`] it logs to.

use std::net::SocketAddr;
use std::string::String;
use std::sync::Arc;
use std::time::Duration;
use std::vec::Vec;

#[cfg(feature = "broker-scram")]
use super::ScramUser;
#[cfg(feature = "broker-tls")]
use super::TlsConfig;
use super::{Acl, Authorizer};
use crate::ApiKey;

/// A line the broker logs: connections always, every request when [`Config::verbose`].
pub type Logger = Arc<dyn Fn(&str) + Send + Sync>;

/// How a [`Broker`](super::Broker) starts. `Config::default()` listens on a free loopback port.
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
    /// a user can log in with the mechanisms it has a credential for. [`Broker::start`](super::Broker::start)
    /// derives the salted credentials and drops the passwords; fewer than 4096 or more than
    /// 16384 iterations is refused, as Kafka refuses them.
    #[cfg(feature = "broker-scram")]
    pub scram_users: Vec<ScramUser>,
    /// TLS (feature `broker-tls`): with a certificate chain and key the listener speaks TLS
    /// only (Kafka's SSL, or SASL_SSL with users); without, plaintext only.
    #[cfg(feature = "broker-tls")]
    pub tls: Option<TlsConfig>,
    /// ACL bindings the broker starts with, as if created by CreateAcls (stored, described
    /// and deleted like those; see [`manual::serve`](crate::manual::serve)). [`Broker::start`](super::Broker::start) refuses one that
    /// CreateAcls would refuse.
    pub acls: Vec<Acl>,
    /// Enforce the ACLs, as Kafka's `StandardAuthorizer` does (`authorizer.class.name`),
    /// with these settings; `None` (the default): every request is allowed, as in a broker
    /// without an authorizer. A connection's principal is `User:NAME` after SASL, else
    /// `User:ANONYMOUS`. What each API checks is in [`manual::serve`](crate::manual::serve).
    pub authorizer: Option<Authorizer>,
    /// A share group member's heartbeat interval (Kafka's `group.share.heartbeat.interval.ms`,
    /// default 5 s).
    pub share_heartbeat_interval: Duration,
    /// A share group member's session timeout (Kafka's `group.share.session.timeout.ms`,
    /// default 45 s).
    pub share_session_timeout: Duration,
    /// How long a share group member holds the records it acquired before they are
    /// released to others (Kafka's `group.share.record.lock.duration.ms`, default 30 s).
    pub share_record_lock_duration: Duration,
    /// How many times a record is delivered to share group members before it is archived
    /// (Kafka's `group.share.delivery.count.limit`, default 5).
    pub share_delivery_count_limit: i16,
    /// Where a share group starts reading a partition it has not read before: `false` at
    /// the partition's end (Kafka's default `share.auto.offset.reset=latest`), `true` at
    /// its log start (`earliest`).
    pub share_start_earliest: bool,
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
            share_heartbeat_interval: Duration::from_secs(5),
            share_session_timeout: Duration::from_secs(45),
            share_record_lock_duration: Duration::from_secs(30),
            share_delivery_count_limit: 5,
            share_start_earliest: false,
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
