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
//!
//! The files: `mod.rs` the connection (versions, the request and answer exchange),
//! `topics.rs` topics, records and offsets, `groups.rs` group offsets, `error.rs` the
//! errors.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::string::String;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use std::vec::Vec;

use crate::ApiKey;
use crate::codec::encode::AnyBody;
use crate::codec::messages::ResponseBodyView;
use crate::codec::records::Compression;
use crate::codec::types::Versions;
use crate::session::conn::{ApiVersionsOutcome, ClientConn, FrameBuf, InFlight, shared_version};

mod error;
mod groups;
mod topics;

pub use error::Error;
use error::{kafka, unexpected};
pub use topics::{Fetched, ListedOffset, OffsetSpec, Record};

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
