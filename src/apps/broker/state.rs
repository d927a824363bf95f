//! The broker's shared state: topics and their partitions, the producer id counter, the
//! groups, and the condition variable appends signal for Fetch long-polls.

use std::collections::BTreeMap;
use std::string::String;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;
use std::vec::Vec;

use super::Config;
use super::acl::Acls;
use super::cluster::{Cluster, CoordinatorKind, Node};
use super::fetch_sessions::FetchSessions;
use super::groups::Groups;
use super::hooks::Hooks;
use super::lock::lock;
use super::log::Log;
use super::txn::Txns;
use crate::ApiKey;
use crate::codec::error_code::ErrorCode;
use crate::codec::records::validate::{TopicCompression, ValidateConfig};
use crate::codec::records::{Compression, TimestampType};
use crate::codec::types::{Uuid, Versions};

/// One partition: its log, behind its own lock.
#[derive(Debug, Default)]
pub(crate) struct Partition {
    log: Mutex<Log>,
}

impl Partition {
    /// A new partition led by node `node` (an index into the cluster's nodes).
    pub fn led_by(node: usize) -> Partition {
        Partition { log: Mutex::new(Log::led_by(node)) }
    }

    pub fn lock(&self) -> MutexGuard<'_, Log> {
        lock(&self.log)
    }

    /// The leading node's index and the leader epoch.
    pub fn leader(&self) -> (usize, i32) {
        self.lock().leader()
    }
}

/// A topic.
#[derive(Debug)]
pub(crate) struct Topic {
    pub name: String,
    pub id: Uuid,
    /// Configs set when it was created or since (name, value), checked against
    /// `handle::TOPIC_CONFIGS`.
    pub configs: Vec<(String, String)>,
    pub partitions: Vec<Arc<Partition>>,
}

/// Every topic, by name.
#[derive(Debug, Default)]
pub(crate) struct Topics {
    by_name: Mutex<BTreeMap<String, Topic>>,
    created: AtomicI64,
}

/// Kafka's rule for topic names: 1 to 249 of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub(crate) fn valid_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "." || name == ".." {
        return Err(std::format!("topic name {name:?} is illegal"));
    }
    if name.len() > 249 {
        return Err(std::format!("topic name is longer than 249 characters ({})", name.len()));
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-') {
        return Err(std::format!(
            "topic name {name:?} is illegal: it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}

impl Topics {
    /// Runs `f` on the topics map.
    pub fn with<R>(&self, f: impl FnOnce(&mut BTreeMap<String, Topic>) -> R) -> R {
        f(&mut lock(&self.by_name))
    }

    /// Creates a topic; the error is CreateTopics' code and message.
    pub fn create(
        &self,
        shared: &Shared,
        name: &str,
        partitions: i32,
        configs: Vec<(String, String)>,
    ) -> Result<Uuid, (ErrorCode, String)> {
        valid_topic_name(name).map_err(|m| (ErrorCode::InvalidTopicException, m))?;
        if partitions <= 0 {
            return Err((
                ErrorCode::InvalidPartitions,
                "the number of partitions must be larger than 0".into(),
            ));
        }
        if partitions > 100_000 {
            return Err((ErrorCode::InvalidPartitions, "at most 100000 partitions in this broker".into()));
        }
        let n = self.created.fetch_add(1, Ordering::Relaxed);
        let id = shared.new_uuid(name, n);
        self.with(|topics| {
            if topics.contains_key(name) {
                return Err((ErrorCode::TopicAlreadyExists, std::format!("Topic '{name}' already exists.")));
            }
            let leaders = shared.cluster.place(0, partitions as usize);
            let partitions = leaders.into_iter().map(|node| Arc::new(Partition::led_by(node))).collect();
            topics.insert(name.into(), Topic { name: name.into(), id, configs, partitions });
            Ok(id)
        })
    }

    /// A partition by topic name and index.
    pub fn partition(&self, topic: &str, index: i32) -> Option<Arc<Partition>> {
        self.with(|t| t.get(topic)?.partitions.get(usize::try_from(index).ok()?).cloned())
    }

    /// A partition with what validation needs of its topic's configs (`compression.type`,
    /// `message.timestamp.*`, `cleanup.policy`, `max.message.bytes`, else
    /// `max_message_bytes`), for a Produce of `version` at `now_ms`.
    pub fn partition_with_settings(
        &self,
        topic: &str,
        index: i32,
        version: i16,
        now_ms: i64,
        max_message_bytes: usize,
    ) -> Option<(Arc<Partition>, ValidateConfig)> {
        self.with(|t| {
            let topic = t.get(topic)?;
            let partition = topic.partitions.get(usize::try_from(index).ok()?)?.clone();
            let mut c = ValidateConfig::new(0, now_ms);
            c.produce_version = version;
            c.max_message_bytes = i32::try_from(max_message_bytes).unwrap_or(i32::MAX);
            for (name, value) in &topic.configs {
                match name.as_str() {
                    "max.message.bytes" => c.max_message_bytes = value.parse().unwrap_or(c.max_message_bytes),
                    "message.timestamp.type" if value == "LogAppendTime" => {
                        c.timestamp_type = TimestampType::LogAppendTime
                    }
                    "message.timestamp.before.max.ms" => {
                        c.timestamp_before_max_ms = value.parse().unwrap_or(i64::MAX)
                    }
                    "message.timestamp.after.max.ms" => {
                        c.timestamp_after_max_ms = value.parse().unwrap_or(i64::MAX)
                    }
                    "cleanup.policy" => c.compacted = value.split(',').any(|p| p.trim() == "compact"),
                    "compression.type" => {
                        c.compression = match value.as_str() {
                            "uncompressed" => TopicCompression::Codec(Compression::None),
                            "gzip" => TopicCompression::Codec(Compression::Gzip),
                            "snappy" => TopicCompression::Codec(Compression::Snappy),
                            "lz4" => TopicCompression::Codec(Compression::Lz4),
                            "zstd" => TopicCompression::Codec(Compression::Zstd),
                            _ => TopicCompression::Producer,
                        }
                    }
                    _ => {}
                }
            }
            Some((partition, c))
        })
    }

    /// A topic's name by its id.
    pub fn name_of(&self, id: Uuid) -> Option<String> {
        self.with(|t| t.values().find(|t| t.id == id).map(|t| t.name.clone()))
    }

    /// A topic's id by its name.
    pub fn id_of(&self, name: &str) -> Option<Uuid> {
        self.with(|t| t.get(name).map(|t| t.id))
    }
}

/// What every connection shares.
pub(crate) struct Shared {
    pub config: Config,
    /// Node 0's advertised host and port.
    pub host: String,
    pub port: i32,
    pub cluster: Cluster,
    pub topics: Topics,
    pub groups: Groups,
    pub txns: Txns,
    pub hooks: Hooks,
    pub fetch_sessions: FetchSessions,
    pub shares: super::share::Shares,
    pub acls: Acls,
    /// SCRAM credentials (feature `broker-scram`).
    #[cfg(feature = "broker-scram")]
    pub scram: super::scram::Credentials,
    pub stop: AtomicBool,
    next_producer_id: AtomicI64,
    /// Bumped by every append (and on stop); Fetch long-polls wait for it to change.
    appended: Mutex<u64>,
    appended_cv: Condvar,
    open: AtomicUsize,
    seed: u64,
    /// Served APIs and their versions, after `max_versions`.
    versions: Vec<(ApiKey, Versions)>,
}

impl Shared {
    pub fn new(config: Config, nodes: Vec<Node>) -> Shared {
        let (host, port) = (nodes[0].host.clone(), nodes[0].port);
        // The passwords go as soon as the credentials are derived.
        #[cfg(feature = "broker-scram")]
        let (config, scram) = {
            let mut config = config;
            let scram = super::scram::Credentials::from_users(core::mem::take(&mut config.scram_users));
            (config, scram)
        };
        #[cfg(feature = "broker-scram")]
        let scram_on = scram.enabled;
        #[cfg(not(feature = "broker-scram"))]
        let scram_on = false;
        let sasl: &[ApiKey] = if config.plain_users.is_empty() && !scram_on {
            &[]
        } else {
            &[ApiKey::SaslHandshake, ApiKey::SaslAuthenticate]
        };
        let versions = super::served::SERVED
            .iter()
            .chain(sasl)
            .map(|&k| {
                let mut v = k.request_versions();
                if let Some(&(_, max)) = config.max_versions.iter().find(|(key, _)| *key == k) {
                    v.max = v.max.min(max);
                }
                (k, v)
            })
            .collect();
        let seed = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(Instant::now().elapsed().as_nanos());
            h.finish()
        };
        Shared {
            #[cfg(feature = "broker-scram")]
            scram,
            fetch_sessions: FetchSessions::new(config.fetch_session_slots, config.fetch_session_idle),
            acls: {
                let acls = Acls::default();
                for a in &config.acls {
                    acls.create(a.clone());
                }
                acls
            },
            config,
            host,
            port,
            cluster: Cluster::new(nodes),
            topics: Topics::default(),
            groups: Groups::default(),
            txns: Txns::default(),
            hooks: Hooks::default(),
            shares: Default::default(),
            stop: AtomicBool::new(false),
            next_producer_id: AtomicI64::new(1000),
            appended: Mutex::new(0),
            appended_cv: Condvar::new(),
            open: AtomicUsize::new(0),
            seed,
            versions,
        }
    }

    /// A random number, fixed for the broker's life (ids are derived from it).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Whether node `node` still serves: the broker is not stopping and the node runs.
    pub fn serving(&self, node: usize) -> bool {
        !self.stopping() && self.cluster.running(node)
    }

    pub fn versions(&self, key: ApiKey) -> Option<Versions> {
        self.versions.iter().find(|(k, _)| *k == key).map(|&(_, v)| v)
    }

    pub fn served(&self) -> &[(ApiKey, Versions)] {
        &self.versions
    }

    /// The user whose SASL/PLAIN token (`authzid NUL user NUL password`) `token` is, if it
    /// is one. The token is a secret: compared, never kept, logged or echoed.
    pub fn plain_user(&self, token: &[u8]) -> Option<String> {
        let mut parts = token.split(|&b| b == 0);
        let (Some(_authzid), Some(user), Some(password), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        self.config
            .plain_users
            .iter()
            .find(|(u, p)| u.as_bytes() == user && p.as_bytes() == password)
            .map(|(u, _)| u.clone())
    }

    pub fn new_producer_id(&self) -> i64 {
        self.next_producer_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A random-looking, never-zero UUID (topic ids, member ids).
    pub fn new_uuid(&self, salt: &str, n: i64) -> Uuid {
        use std::hash::{BuildHasher, Hasher};
        let hash = |k: u64| {
            let mut h = std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                .build_hasher();
            h.write_u64(self.seed ^ k);
            h.write(salt.as_bytes());
            h.write_i64(n);
            h.finish()
        };
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&hash(0x9e37_79b9_7f4a_7c15).to_be_bytes());
        id[8..].copy_from_slice(&(hash(0xc2b2_ae3d_27d4_eb4f) | 1).to_be_bytes());
        Uuid(id)
    }

    /// The current append count (read before looking at the logs).
    pub fn append_count(&self) -> u64 {
        *lock(&self.appended)
    }

    /// Signals an append to every waiting Fetch.
    pub fn appended(&self) {
        *lock(&self.appended) += 1;
        self.appended_cv.notify_all();
    }

    /// Waits until an append after `seen`, `deadline` or a stop, whichever comes first.
    pub fn wait_for_append(&self, seen: u64, deadline: Instant) {
        let mut count = lock(&self.appended);
        while *count == seen && !self.stopping() {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            count = match self.appended_cv.wait_timeout(count, deadline - now) {
                Ok((c, _)) => c,
                Err(e) => e.into_inner().0,
            };
        }
    }

    /// Wakes every waiting thread (on stop).
    pub fn wake_all(&self) {
        self.appended();
        self.groups.wake();
    }

    pub fn connection_opened(&self) {
        self.open.fetch_add(1, Ordering::SeqCst);
    }

    pub fn connection_closed(&self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }

    pub fn open_connections(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// The node coordinating a group or a transactional id (its index).
    pub fn coordinator(&self, kind: CoordinatorKind, key: &str) -> usize {
        self.cluster.coordinator(kind, key)
    }

    /// Every partition (topic, index, partition), in topic order.
    pub fn all_partitions(&self) -> Vec<(String, i32, Arc<Partition>)> {
        self.topics.with(|all| {
            all.values()
                .flat_map(|t| {
                    t.partitions.iter().enumerate().map(|(i, p)| (t.name.clone(), i as i32, p.clone()))
                })
                .collect()
        })
    }

    /// Takes node `node` out of the cluster: the partitions and coordinators it led move to
    /// the running nodes (round robin, each partition's leader epoch bumped). Its listener
    /// and connections are closed by the caller.
    pub fn node_stopped(&self, node: usize) {
        self.cluster.set_running(node, false);
        let live = self.cluster.live();
        if !live.is_empty() {
            let mut k = 0;
            for (_, _, p) in self.all_partitions() {
                let mut log = p.lock();
                if log.leader().0 == node {
                    log.move_leader(live[k % live.len()]);
                    k += 1;
                }
            }
            self.cluster.move_coordinators_off(node);
        }
        // Long-polls and join barriers look again (and see they lost their partitions).
        self.wake_all();
    }

    pub fn log(&self, line: core::fmt::Arguments<'_>) {
        if let Some(logger) = &self.config.logger {
            logger(&std::format!("{line}"));
        }
    }
}

impl super::host::Host for Shared {
    fn config(&self) -> &Config {
        &self.config
    }
    fn log(&self, line: core::fmt::Arguments<'_>) {
        Shared::log(self, line);
    }
    fn coordinator(&self, kind: CoordinatorKind, key: &str) -> usize {
        Shared::coordinator(self, kind, key)
    }
    fn new_uuid(&self, salt: &str, n: i64) -> Uuid {
        Shared::new_uuid(self, salt, n)
    }
    fn new_producer_id(&self) -> i64 {
        Shared::new_producer_id(self)
    }
    fn stopping(&self) -> bool {
        Shared::stopping(self)
    }
    fn topics(&self) -> Vec<(String, Uuid, usize)> {
        self.topics.with(|t| t.values().map(|t| (t.name.clone(), t.id, t.partitions.len())).collect())
    }
    fn write_marker(
        &self,
        topic: &str,
        partition: i32,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        now: i64,
    ) {
        if let Some(p) = self.topics.partition(topic, partition) {
            p.lock().write_marker(producer_id, epoch, commit, now);
        }
    }
    fn store_offset(&self, group: &str, topic: &str, partition: i32, offset: (i64, i32, Option<String>)) {
        let (offset, leader_epoch, metadata) = offset;
        let c = super::groups::Committed { offset, leader_epoch, metadata };
        self.groups.store_offset(group, topic, partition, c);
    }
    fn appended(&self) {
        Shared::appended(self);
    }
}
