//! A small blocking Kafka client for tests and tools (feature `client`): one connection to
//! one broker over a std [`TcpStream`], on [`crate::session::conn::ClientConn`].
//!
//! [`Client::connect`] asks ApiVersions first and then sends each API at the highest version
//! both sides speak ([`Client::version`]). Each call is one request and its answer:
//! [`Client::create_topic`], [`Client::produce`] (acks all by default, returns the base
//! offset), [`Client::fetch`] (the records of a partition from an offset, decoded and
//! owned, as one Fetch returns them; [`Client::fetch_to_end`] up to the high watermark), [`Client::list_offset`] (earliest, latest, by time), [`Client::commit_offset`]
//! and [`Client::committed_offset`] (a group's offsets, committed without a generation as
//! Kafka's admin tools do). Batches are compressed with [`Config::compression`] when its
//! codec's feature is on.
//!
//! It chooses what a test should not have to: acks, timeouts, fetch sizes (the message
//! types keep Kafka's schema defaults, such as `acks = 0`; this client does not).
//!
//! **Errors** ([`Error`]) are I/O (timeouts included), the protocol (a frame or batch that
//! cannot be read or built), or Kafka's own error codes with the topic, partition or group
//! they concern ([`Error::error_code`]).
//!
//! **Bounds.** Every socket read and write has a timeout ([`Config::timeout`]), a response
//! frame is at most [`Config::max_frame_bytes`] and a compressed batch inflates to at most
//! [`Config::max_decompressed_bytes`].
//!
//! **Not here.** It talks to the broker it connected to: no metadata-driven routing to a
//! partition's leader or a group's coordinator (with one broker, as in tests, that is every
//! one), no consumer-group membership, transactions or idempotence, no SASL or TLS. It
//! names topics by name: Produce and Fetch up to version 12, OffsetCommit and OffsetFetch up
//! to version 9 (the versions after those name topics by id).
//!
//! ```
//! # #[cfg(feature = "broker")] {
//! use kwire::broker::{Broker, Config};
//! use kwire::client::{Client, OffsetSpec};
//! use kwire::records::NewRecord;
//!
//! let broker = Broker::start(Config::default())?;
//! let mut client = Client::connect(broker.addr())?;
//! client.create_topic("orders", 1)?;
//! let base = client.produce("orders", 0, &[NewRecord::new(Some(b"k"), Some(b"order-1"))])?;
//! assert_eq!(base, 0);
//! let fetched = client.fetch("orders", 0, 0)?;
//! assert_eq!(fetched.records[0].value.as_deref(), Some(&b"order-1"[..]));
//! assert_eq!(client.list_offset("orders", 0, OffsetSpec::Latest)?.offset, 1);
//! client.commit_offset("billing", "orders", 0, 1)?;
//! assert_eq!(client.committed_offset("billing", "orders", 0)?, Some(1));
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::string::{String, ToString};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use std::vec::Vec;

use crate::ApiKey;
use crate::codec::encode::AnyBody;
use crate::codec::error_code::ErrorCode;
use crate::codec::messages::ResponseBodyView;
use crate::codec::records::reference::{OwnedHeader, OwnedRecord};
use crate::codec::records::{BatchBuilder, Compression, NewRecord, RecordBatches};
use crate::codec::types::Versions;
use crate::session::conn::{ApiVersionsOutcome, ClientConn, ConnError, FrameBuf, InFlight, shared_version};

/// How a [`Client`] connects and what it asks for. `Config::default()` suits a test.
#[derive(Clone, Debug)]
pub struct Config {
    /// The client id sent in every request header (default `"kwire-client"`).
    pub client_id: String,
    /// The longest a connect, a socket read or a socket write may take (default 30 s); a
    /// Fetch adds its [`Config::fetch_max_wait`]. Also the `timeout_ms` of Produce and
    /// CreateTopics, and how long [`Client::create_topic`] waits for leaders.
    pub timeout: Duration,
    /// The largest response frame read (default 64 MiB); a larger one is an error.
    pub max_frame_bytes: usize,
    /// The most bytes a compressed batch may inflate to when fetched (default 64 MiB).
    pub max_decompressed_bytes: usize,
    /// Produce's `acks` (default -1: all in-sync replicas). With 0 no answer comes and
    /// [`Client::produce`] returns -1.
    pub acks: i16,
    /// The codec of the batches [`Client::produce`] writes (default none); a codec whose
    /// feature is off fails the produce.
    pub compression: Compression,
    /// Fetch's `max_wait_ms`: how long the broker may wait for records (default 0: answer
    /// at once).
    pub fetch_max_wait: Duration,
    /// Fetch's `partition_max_bytes` (default 1 MiB, Kafka's `max.partition.fetch.bytes`).
    pub fetch_partition_max_bytes: i32,
    /// Fetch's `max_bytes` (default 50 MiB, Kafka's `fetch.max.bytes`).
    pub fetch_max_bytes: i32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            client_id: "kwire-client".into(),
            timeout: Duration::from_secs(30),
            max_frame_bytes: 64 << 20,
            max_decompressed_bytes: 64 << 20,
            acks: -1,
            compression: Compression::None,
            fetch_max_wait: Duration::ZERO,
            fetch_partition_max_bytes: 1 << 20,
            fetch_max_bytes: 50 << 20,
        }
    }
}

/// Why a [`Client`] call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The socket failed, timed out ([`io::ErrorKind::WouldBlock`] or `TimedOut`), or the
    /// broker closed the connection ([`io::ErrorKind::UnexpectedEof`]).
    Io(io::Error),
    /// A request could not be encoded, or a response frame could not be read (too large,
    /// malformed, not the answer expected).
    Conn(ConnError),
    /// A record batch could not be built, or a fetched one read.
    Records(crate::codec::records::Error),
    /// The broker answered with an error code.
    Kafka {
        /// The API that failed.
        api: ApiKey,
        /// The error code (see [`Error::error_code`] for the typed one).
        code: i16,
        /// The topic it concerns, if one.
        topic: Option<String>,
        /// The partition it concerns, if one.
        partition: Option<i32>,
        /// The group it concerns, if one.
        group: Option<String>,
        /// The broker's message, if it sent one.
        message: Option<String>,
    },
    /// The broker and this client share no version of an API (or the broker does not
    /// list it).
    NoSharedVersion(ApiKey),
    /// The answer does not hold what was asked (e.g. not the partition asked for).
    Unexpected(String),
}

impl Error {
    /// The Kafka error code of an [`Error::Kafka`], if this crate knows it.
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self {
            Error::Kafka { code, .. } => ErrorCode::from_i16(*code),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "I/O: {e}"),
            Error::Conn(e) => write!(f, "protocol: {e}"),
            Error::Records(e) => write!(f, "record batch: {e}"),
            Error::Kafka { api, code, topic, partition, group, message } => {
                write!(f, "{}", api.name())?;
                if let Some(g) = group {
                    write!(f, " of group {g}")?;
                }
                match (topic, partition) {
                    (Some(t), Some(p)) => write!(f, " of {t}/{p}")?,
                    (Some(t), None) => write!(f, " of {t}")?,
                    _ => {}
                }
                match ErrorCode::from_i16(*code) {
                    Some(e) => write!(f, ": {} ({code})", e.name())?,
                    None => write!(f, ": error code {code}")?,
                }
                match message {
                    Some(m) if !m.is_empty() => write!(f, ": {m}"),
                    _ => Ok(()),
                }
            }
            Error::NoSharedVersion(key) => {
                write!(f, "the broker and kwire share no version of {}", key.name())
            }
            Error::Unexpected(what) => write!(f, "unexpected answer: {what}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            Error::Conn(e) => Some(e),
            Error::Records(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

impl From<ConnError> for Error {
    fn from(e: ConnError) -> Self {
        Error::Conn(e)
    }
}

impl From<crate::codec::records::Error> for Error {
    fn from(e: crate::codec::records::Error) -> Self {
        Error::Records(e)
    }
}

/// A record read by [`Client::fetch`], owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Its offset in the partition.
    pub offset: i64,
    /// Its timestamp (ms since the epoch; the append time under `LogAppendTime`).
    pub timestamp: i64,
    /// The key; `None` is null.
    pub key: Option<Vec<u8>>,
    /// The value; `None` is null.
    pub value: Option<Vec<u8>>,
    /// The headers, in order.
    pub headers: Vec<OwnedHeader>,
}

/// What [`Client::fetch`] read of a partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// The records at or after the offset asked for, in order (control records, such as
    /// transaction markers, left out).
    pub records: Vec<Record>,
    /// The partition's high watermark.
    pub high_watermark: i64,
    /// The partition's last stable offset (-1 from brokers that do not say).
    pub last_stable_offset: i64,
    /// The partition's log start offset (-1 from brokers that do not say).
    pub log_start_offset: i64,
}

impl Fetched {
    /// The offset to fetch from next: after the last record, or the offset asked for when
    /// none came.
    pub fn next_offset(&self, asked: i64) -> i64 {
        self.records.last().map_or(asked, |r| r.offset + 1)
    }
}

/// Which offset [`Client::list_offset`] asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The first offset (the log start offset).
    Earliest,
    /// The offset after the last record (the high watermark).
    Latest,
    /// The first offset whose record has a timestamp at or after this one (ms).
    Timestamp(i64),
}

/// An offset [`Client::list_offset`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListedOffset {
    /// The offset; -1 when no record has a timestamp at or after the one asked for.
    pub offset: i64,
    /// The record's timestamp for [`OffsetSpec::Timestamp`], else -1.
    pub timestamp: i64,
}

/// The highest version of each API the client names topics by name in (the next ones name
/// them by id).
const BY_NAME: &[(ApiKey, i16)] =
    &[(ApiKey::Produce, 12), (ApiKey::Fetch, 12), (ApiKey::OffsetCommit, 9), (ApiKey::OffsetFetch, 9)];

/// How many times ApiVersions is asked again at a lower version before giving up.
const API_VERSIONS_RETRIES: usize = 3;

/// A blocking connection to one Kafka broker (see the [module docs](self)).
#[derive(Debug)]
pub struct Client {
    stream: TcpStream,
    conn: ClientConn,
    out: Vec<u8>,
    scratch: Vec<u8>,
    config: Config,
}

impl Client {
    /// Connects with [`Config::default`] and asks ApiVersions.
    pub fn connect(addr: impl ToSocketAddrs) -> Result<Client, Error> {
        Client::connect_with(addr, Config::default())
    }

    /// Connects to the first address of `addr` that answers within [`Config::timeout`],
    /// sets the socket's timeouts, and asks ApiVersions (again at a lower version if the
    /// broker asks, as Kafka's clients do) to choose the version of each API.
    pub fn connect_with(addr: impl ToSocketAddrs, config: Config) -> Result<Client, Error> {
        let mut last = None;
        let mut stream = None;
        for a in addr.to_socket_addrs()? {
            match TcpStream::connect_timeout(&a, config.timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = match (stream, last) {
            (Some(s), _) => s,
            (None, Some(e)) => return Err(Error::Io(e)),
            (None, None) => {
                return Err(Error::Io(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "no address to connect to",
                )));
            }
        };
        stream.set_read_timeout(Some(config.timeout))?;
        stream.set_write_timeout(Some(config.timeout))?;
        stream.set_nodelay(true)?;
        let conn = ClientConn::with_limits(
            Some(&config.client_id),
            FrameBuf::new(config.max_frame_bytes),
            InFlight::with_capacity(1),
        );
        let mut client = Client { stream, conn, out: Vec::new(), scratch: Vec::new(), config };
        client.api_versions()?;
        Ok(client)
    }

    fn api_versions(&mut self) -> Result<(), Error> {
        use crate::codec::messages::api_versions::ApiVersionsRequest;
        let request = ApiVersionsRequest {
            client_software_name: "kwire".into(),
            client_software_version: env!("CARGO_PKG_VERSION").into(),
            ..Default::default()
        };
        let mut version = ApiKey::ApiVersions.request_versions().max;
        for _ in 0..=API_VERSIONS_RETRIES {
            let outcome = self.call(&request, version, |r| {
                let ResponseBodyView::ApiVersions(body) = r else {
                    return Err(unexpected(ApiKey::ApiVersions));
                };
                Ok(crate::session::conn::api_versions_outcome(version, &body))
            })?;
            match outcome {
                ApiVersionsOutcome::Ready => return Ok(()),
                ApiVersionsOutcome::Retry { version: v } => version = v,
                ApiVersionsOutcome::Fail { error_code } => {
                    return Err(kafka(ApiKey::ApiVersions, error_code, None, None, None));
                }
            }
        }
        Err(Error::Unexpected("ApiVersions asked to retry too often".into()))
    }

    /// The address of the broker it is connected to.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.stream.peer_addr()
    }

    /// Its configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The version it sends `key` at: the highest both kwire and the broker speak
    /// ([`ClientConn::negotiated`]), below the version where the API names topics by id
    /// for Produce, Fetch, OffsetCommit and OffsetFetch; `None` when there is none.
    pub fn version(&self, key: ApiKey) -> Option<i16> {
        let broker = self.conn.broker_versions(key)?;
        let cap = BY_NAME.iter().find(|(k, _)| *k == key).map_or(i16::MAX, |&(_, v)| v);
        shared_version(key, Versions::new(broker.min, broker.max.min(cap)))
    }

    /// The connection state underneath (the broker's versions, the frame buffer).
    pub fn conn(&self) -> &ClientConn {
        &self.conn
    }

    fn version_of(&self, key: ApiKey) -> Result<i16, Error> {
        self.version(key).ok_or(Error::NoSharedVersion(key))
    }

    /// Sends `body` at `version` and hands its answer to `read`.
    fn call<R>(
        &mut self,
        body: &impl AnyBody,
        version: i16,
        read: impl FnOnce(ResponseBodyView<'_>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        self.out.clear();
        self.conn.encode_request(body, version, (), &mut self.out)?;
        self.stream.write_all(&self.out)?;
        loop {
            if let Some(response) = self.conn.next_response()? {
                return read(response.body);
            }
            let n = self.stream.read(self.conn.spare())?;
            if n == 0 {
                return Err(Error::Io(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the broker closed the connection",
                )));
            }
            self.conn.commit(n);
        }
    }

    /// Creates a topic of `partitions` partitions (the broker's default replication
    /// factor, no configs), then waits (up to [`Config::timeout`]) until Metadata names a
    /// leader for each partition, so that a produce right after it finds one. A topic that
    /// exists is an [`Error::Kafka`] of TOPIC_ALREADY_EXISTS.
    pub fn create_topic(&mut self, name: &str, partitions: i32) -> Result<(), Error> {
        self.create_topic_with(name, partitions, &[])
    }

    /// [`Client::create_topic`] with topic configs (`("cleanup.policy", "compact")`, ...).
    pub fn create_topic_with(
        &mut self,
        name: &str,
        partitions: i32,
        configs: &[(&str, &str)],
    ) -> Result<(), Error> {
        use crate::codec::messages::create_topics::{
            CreatableTopic, CreatableTopicConfig, CreateTopicsRequest,
        };
        let key = ApiKey::CreateTopics;
        let v = self.version_of(key)?;
        let configs: Vec<CreatableTopicConfig<'_>> = configs
            .iter()
            .map(|&(name, value)| CreatableTopicConfig {
                name: name.into(),
                value: Some(value.into()),
                ..Default::default()
            })
            .collect();
        let topics = [CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            // -1 (the broker's default) from version 4.
            replication_factor: if v >= 4 { -1 } else { 1 },
            configs: configs.as_slice().into(),
            ..Default::default()
        }];
        let request = CreateTopicsRequest {
            topics: (&topics).into(),
            timeout_ms: self.timeout_ms(),
            ..Default::default()
        };
        self.call(&request, v, |r| {
            let ResponseBodyView::CreateTopics(body) = r else { return Err(unexpected(key)) };
            let t =
                body.topics().iter().find(|t| t.name() == name).ok_or_else(|| missing(key, name, None))?;
            check(key, t.error_code(), Some(name), None, None, t.error_message())
        })?;
        self.wait_for_leaders(name, partitions)
    }

    /// Asks Metadata about `topic` until every one of its `partitions` has a leader.
    fn wait_for_leaders(&mut self, topic: &str, partitions: i32) -> Result<(), Error> {
        use crate::codec::messages::metadata::{MetadataRequest, MetadataRequestTopic};
        let key = ApiKey::Metadata;
        let v = self.version_of(key)?;
        let deadline = Instant::now() + self.config.timeout;
        let topics = [MetadataRequestTopic { name: Some(topic.into()), ..Default::default() }];
        let request = MetadataRequest {
            topics: Some((&topics).into()),
            allow_auto_topic_creation: false,
            ..Default::default()
        };
        loop {
            let led = self.call(&request, v, |r| {
                let ResponseBodyView::Metadata(body) = r else { return Err(unexpected(key)) };
                let Some(t) = body.topics().iter().find(|t| t.name() == Some(topic)) else {
                    return Ok(false);
                };
                let led = t.partitions().iter().filter(|p| p.error_code() == 0 && p.leader_id() >= 0).count();
                Ok(t.error_code() == 0 && led >= usize::try_from(partitions).unwrap_or(0))
            })?;
            if led {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::Io(io::Error::new(
                    io::ErrorKind::TimedOut,
                    std::format!("{topic}'s partitions have no leader yet"),
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Produces `records` to a partition as one batch (compressed with
    /// [`Config::compression`], timestamps now unless a record has its own), with
    /// [`Config::acks`]; returns the offset the broker gave the first record (-1 with
    /// acks 0, which gets no answer).
    pub fn produce(&mut self, topic: &str, partition: i32, records: &[NewRecord<'_>]) -> Result<i64, Error> {
        let mut builder = BatchBuilder::new(0, now_ms(), records);
        builder.compression = self.config.compression;
        let mut batch = Vec::new();
        builder.encode_to_vec(&mut batch)?;
        self.produce_batches(topic, partition, &batch)
    }

    /// Produces record batches already encoded (the `records` field of one Produce
    /// partition, sent as they are) with [`Config::acks`]; returns the base offset as
    /// [`Client::produce`] does.
    pub fn produce_batches(&mut self, topic: &str, partition: i32, batches: &[u8]) -> Result<i64, Error> {
        use crate::codec::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
        let key = ApiKey::Produce;
        let v = self.version_of(key)?;
        let data =
            [PartitionProduceData { index: partition, records: Some(batches.into()), ..Default::default() }];
        let topics =
            [TopicProduceData { name: topic.into(), partition_data: (&data).into(), ..Default::default() }];
        let request = ProduceRequest {
            acks: self.config.acks,
            timeout_ms: self.timeout_ms(),
            topic_data: (&topics).into(),
            ..Default::default()
        };
        if self.config.acks == 0 {
            self.out.clear();
            self.conn.encode_request(&request, v, (), &mut self.out)?;
            self.stream.write_all(&self.out)?;
            return Ok(-1);
        }
        self.call(&request, v, |r| {
            let ResponseBodyView::Produce(body) = r else { return Err(unexpected(key)) };
            let p = body
                .responses()
                .iter()
                .filter(|t| t.name() == topic)
                .flat_map(|t| t.partition_responses().iter())
                .find(|p| p.index() == partition)
                .ok_or_else(|| missing(key, topic, Some(partition)))?;
            check(key, p.error_code(), Some(topic), Some(partition), None, p.error_message())?;
            Ok(p.base_offset())
        })
    }

    /// Fetches the records of a partition from `offset` (read_uncommitted, with the
    /// [`Config`]'s fetch sizes and wait): what one Fetch returns, decoded (decompressed
    /// too) and owned. Records before `offset` in the first batch are left out; an empty
    /// list means nothing at `offset` yet. An offset outside the log is an
    /// [`Error::Kafka`] of OFFSET_OUT_OF_RANGE.
    pub fn fetch(&mut self, topic: &str, partition: i32, offset: i64) -> Result<Fetched, Error> {
        use crate::codec::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
        let key = ApiKey::Fetch;
        let v = self.version_of(key)?;
        let parts = [FetchPartition {
            partition,
            fetch_offset: offset,
            partition_max_bytes: self.config.fetch_partition_max_bytes,
            ..Default::default()
        }];
        let topics = [FetchTopic { topic: topic.into(), partitions: (&parts).into(), ..Default::default() }];
        let wait = self.config.fetch_max_wait;
        let request = FetchRequest {
            max_wait_ms: i32::try_from(wait.as_millis()).unwrap_or(i32::MAX),
            min_bytes: 1,
            max_bytes: self.config.fetch_max_bytes,
            session_epoch: -1,
            topics: (&topics).into(),
            ..Default::default()
        };
        if !wait.is_zero() {
            self.stream.set_read_timeout(Some(self.config.timeout.saturating_add(wait)))?;
        }
        let limit = self.config.max_decompressed_bytes;
        let mut scratch = core::mem::take(&mut self.scratch);
        let result = self.call(&request, v, |r| {
            let ResponseBodyView::Fetch(body) = r else { return Err(unexpected(key)) };
            check(key, body.error_code(), Some(topic), Some(partition), None, None)?;
            let p = body
                .responses()
                .iter()
                .filter(|t| t.topic() == topic)
                .flat_map(|t| t.partitions().iter())
                .find(|p| p.partition_index() == partition)
                .ok_or_else(|| missing(key, topic, Some(partition)))?;
            check(key, p.error_code(), Some(topic), Some(partition), None, None)?;
            let mut records = Vec::new();
            for batch in RecordBatches::new(p.records().map(|r| r.bytes()).unwrap_or_default()) {
                let batch = batch?;
                if batch.is_control() || batch.last_offset() < offset {
                    continue;
                }
                for r in batch.records_in_vec(&mut scratch, limit)? {
                    let r = r?;
                    if r.offset() < offset {
                        continue;
                    }
                    let r = OwnedRecord::from_view(&r);
                    records.push(Record {
                        offset: r.offset,
                        timestamp: r.timestamp,
                        key: r.key,
                        value: r.value,
                        headers: r.headers,
                    });
                }
            }
            Ok(Fetched {
                records,
                high_watermark: p.high_watermark(),
                last_stable_offset: p.last_stable_offset(),
                log_start_offset: p.log_start_offset(),
            })
        });
        self.scratch = scratch;
        if !wait.is_zero() {
            self.stream.set_read_timeout(Some(self.config.timeout))?;
        }
        result
    }

    /// [`Client::fetch`] again from where each answer ended, until the records reach the
    /// high watermark (a Kafka broker's answer may stop before it) or an answer brings
    /// none: every record from `offset` to the end, with the last answer's offsets.
    pub fn fetch_to_end(&mut self, topic: &str, partition: i32, offset: i64) -> Result<Fetched, Error> {
        let mut all = self.fetch(topic, partition, offset)?;
        loop {
            let next = all.next_offset(offset);
            if next >= all.high_watermark {
                return Ok(all);
            }
            let more = self.fetch(topic, partition, next)?;
            let done = more.records.is_empty();
            all.records.extend(more.records);
            all.high_watermark = more.high_watermark;
            all.last_stable_offset = more.last_stable_offset;
            all.log_start_offset = more.log_start_offset;
            if done {
                return Ok(all);
            }
        }
    }

    /// ListOffsets of one partition (read_uncommitted): the earliest offset, the latest,
    /// or the first at or after a timestamp.
    pub fn list_offset(
        &mut self,
        topic: &str,
        partition: i32,
        spec: OffsetSpec,
    ) -> Result<ListedOffset, Error> {
        use crate::codec::messages::list_offsets::{
            ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
        };
        let key = ApiKey::ListOffsets;
        let v = self.version_of(key)?;
        let timestamp = match spec {
            OffsetSpec::Earliest => -2,
            OffsetSpec::Latest => -1,
            OffsetSpec::Timestamp(t) => t,
        };
        let parts = [ListOffsetsPartition { partition_index: partition, timestamp, ..Default::default() }];
        let topics =
            [ListOffsetsTopic { name: topic.into(), partitions: (&parts).into(), ..Default::default() }];
        let request = ListOffsetsRequest {
            replica_id: -1,
            topics: (&topics).into(),
            timeout_ms: self.timeout_ms(),
            ..Default::default()
        };
        self.call(&request, v, |r| {
            let ResponseBodyView::ListOffsets(body) = r else { return Err(unexpected(key)) };
            let p = body
                .topics()
                .iter()
                .filter(|t| t.name() == topic)
                .flat_map(|t| t.partitions().iter())
                .find(|p| p.partition_index() == partition)
                .ok_or_else(|| missing(key, topic, Some(partition)))?;
            check(key, p.error_code(), Some(topic), Some(partition), None, None)?;
            Ok(ListedOffset { offset: p.offset(), timestamp: p.timestamp() })
        })
    }

    /// Commits `offset` (the next offset to read) for a group's partition, as a simple
    /// commit without a generation (generation -1, no member id), as Kafka's admin tools
    /// commit. A group with members refuses it (UNKNOWN_MEMBER_ID from Kafka).
    pub fn commit_offset(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
        offset: i64,
    ) -> Result<(), Error> {
        use crate::codec::messages::offset_commit::{
            OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
        };
        let key = ApiKey::OffsetCommit;
        let v = self.version_of(key)?;
        let parts = [OffsetCommitRequestPartition {
            partition_index: partition,
            committed_offset: offset,
            committed_leader_epoch: -1,
            committed_metadata: Some("".into()),
            ..Default::default()
        }];
        let topics = [OffsetCommitRequestTopic {
            name: topic.into(),
            partitions: (&parts).into(),
            ..Default::default()
        }];
        let request = OffsetCommitRequest {
            group_id: group.into(),
            generation_id_or_member_epoch: -1,
            member_id: "".into(),
            topics: (&topics).into(),
            ..Default::default()
        };
        self.group_call(group, |c| {
            c.call(&request, v, |r| {
                let ResponseBodyView::OffsetCommit(body) = r else { return Err(unexpected(key)) };
                let p = body
                    .topics()
                    .iter()
                    .filter(|t| t.name() == topic)
                    .flat_map(|t| t.partitions().iter())
                    .find(|p| p.partition_index() == partition)
                    .ok_or_else(|| missing(key, topic, Some(partition)))?;
                check(key, p.error_code(), Some(topic), Some(partition), Some(group), None)
            })
        })
    }

    /// The offset a group committed for a partition (OffsetFetch), or `None` when it
    /// committed none.
    pub fn committed_offset(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
    ) -> Result<Option<i64>, Error> {
        use crate::codec::messages::offset_fetch::{
            OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
        };
        let key = ApiKey::OffsetFetch;
        let v = self.version_of(key)?;
        let indexes = [partition];
        let old_topics = [OffsetFetchRequestTopic {
            name: topic.into(),
            partition_indexes: (&indexes).into(),
            ..Default::default()
        }];
        let new_topics = [OffsetFetchRequestTopics {
            name: topic.into(),
            partition_indexes: (&indexes).into(),
            ..Default::default()
        }];
        let groups = [OffsetFetchRequestGroup {
            group_id: group.into(),
            topics: Some((&new_topics).into()),
            ..Default::default()
        }];
        let request = if v >= 8 {
            OffsetFetchRequest { groups: (&groups).into(), ..Default::default() }
        } else {
            OffsetFetchRequest {
                group_id: group.into(),
                topics: Some((&old_topics).into()),
                ..Default::default()
            }
        };
        // A partition the answer leaves out has no committed offset (Kafka leaves out
        // those of a group it does not know).
        let found = |group_code: i16, p: Option<(i16, i64)>| -> Result<Option<i64>, Error> {
            check(key, group_code, None, None, Some(group), None)?;
            let Some((code, offset)) = p else { return Ok(None) };
            check(key, code, Some(topic), Some(partition), Some(group), None)?;
            Ok((offset >= 0).then_some(offset))
        };
        self.group_call(group, |c| {
            c.call(&request, v, |r| {
                let ResponseBodyView::OffsetFetch(body) = r else { return Err(unexpected(key)) };
                if v >= 8 {
                    let g = body
                        .groups()
                        .iter()
                        .find(|g| g.group_id() == group)
                        .ok_or_else(|| missing(key, group, None))?;
                    let p = g
                        .topics()
                        .iter()
                        .filter(|t| t.name() == topic)
                        .flat_map(|t| t.partitions().iter())
                        .find(|p| p.partition_index() == partition);
                    found(g.error_code(), p.map(|p| (p.error_code(), p.committed_offset())))
                } else {
                    let p = body
                        .topics()
                        .iter()
                        .filter(|t| t.name() == topic)
                        .flat_map(|t| t.partitions().iter())
                        .find(|p| p.partition_index() == partition);
                    found(body.error_code(), p.map(|p| (p.error_code(), p.committed_offset())))
                }
            })
        })
    }

    /// Runs a group request, and while the broker answers that its group coordinator is not
    /// ready (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, as
    /// a fresh Kafka broker does before its offsets topic exists), asks FindCoordinator
    /// (which makes Kafka create that topic) and runs it again, until [`Config::timeout`].
    fn group_call<R>(
        &mut self,
        group: &str,
        mut f: impl FnMut(&mut Self) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let deadline = Instant::now() + self.config.timeout;
        loop {
            match f(self) {
                Err(e)
                    if matches!(
                        e.error_code(),
                        Some(
                            ErrorCode::NotCoordinator
                                | ErrorCode::CoordinatorNotAvailable
                                | ErrorCode::CoordinatorLoadInProgress
                        )
                    ) && Instant::now() < deadline =>
                {
                    self.find_coordinator(group)?;
                    std::thread::sleep(Duration::from_millis(50));
                }
                other => return other,
            }
        }
    }

    /// FindCoordinator of a group; its answer is not needed (this client talks to the
    /// broker it connected to), only its side effect.
    fn find_coordinator(&mut self, group: &str) -> Result<(), Error> {
        use crate::codec::messages::find_coordinator::FindCoordinatorRequest;
        let key = ApiKey::FindCoordinator;
        let v = self.version_of(key)?;
        let keys = [group.into()];
        let request = if v >= 4 {
            FindCoordinatorRequest { coordinator_keys: (&keys).into(), ..Default::default() }
        } else {
            FindCoordinatorRequest { key: group.into(), ..Default::default() }
        };
        self.call(&request, v, |r| match r {
            ResponseBodyView::FindCoordinator(_) => Ok(()),
            _ => Err(unexpected(key)),
        })
    }

    fn timeout_ms(&self) -> i32 {
        i32::try_from(self.config.timeout.as_millis()).unwrap_or(i32::MAX)
    }
}

/// Milliseconds since the epoch, now.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn kafka(api: ApiKey, code: i16, topic: Option<&str>, partition: Option<i32>, group: Option<&str>) -> Error {
    Error::Kafka {
        api,
        code,
        topic: topic.map(String::from),
        partition,
        group: group.map(String::from),
        message: None,
    }
}

/// `Ok` for error code 0, else the [`Error::Kafka`] with its context.
fn check(
    api: ApiKey,
    code: i16,
    topic: Option<&str>,
    partition: Option<i32>,
    group: Option<&str>,
    message: Option<&str>,
) -> Result<(), Error> {
    if code == 0 {
        return Ok(());
    }
    let mut e = kafka(api, code, topic, partition, group);
    if let Error::Kafka { message: m, .. } = &mut e {
        *m = message.map(String::from);
    }
    Err(e)
}

fn unexpected(api: ApiKey) -> Error {
    Error::Unexpected(std::format!("not a {} response", api.name()))
}

fn missing(api: ApiKey, topic: &str, partition: Option<i32>) -> Error {
    let what = match partition {
        Some(p) => std::format!("{topic}/{p}"),
        None => topic.to_string(),
    };
    Error::Unexpected(std::format!("the {} response does not answer for {what}", api.name()))
}
