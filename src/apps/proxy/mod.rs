//! A Kafka proxy as a library (feature `proxy`): listeners, TLS on both sides, SNI routing,
//! a connection per client to the cluster, and a [`FilterChain`] of your own per connection,
//! on a tokio runtime. `kwire proxy` is this runtime with command-line flags and a log.
//!
//! The layers, bottom up:
//! - [`Session`] (sans-IO): one connection's frames. Pairing, the SASL v0 token phase,
//!   authentication observed, the filters' verdicts, ApiVersions clamping and broker
//!   address rewriting; tested without sockets.
//! - The tokio driver (private): one task per connection, two buffers of at most a frame
//!   each while busy and none while idle, TCP's own back-pressure.
//! - [`ProxyBuilder`] and [`Proxy`]: listeners (one port per broker, by node id or as
//!   brokers are named; or SNI names on one port), the upstream bootstrap list, TLS,
//!   limits, metrics, [`Hooks`] for logs and recordings, and graceful shutdown.
//!
//! Every ApiVersions answer a client gets through the proxy lists, for each API, only the
//! versions that the broker serves, kwire reads and every filter handles
//! ([`crate::filter::Filter::versions`]); APIs kwire does not know are left out. So a
//! cluster upgraded past kwire is still proxied frame by frame, decoded and filtered.
//!
//! A proxy that refuses Produce to `audit.*` topics for every principal but `admin`, with
//! TOPIC_AUTHORIZATION_FAILED for each refused topic, while the request's other topics go
//! on to the broker. Produce v13 names topics by id only: the proxy's book of topic names
//! ([`ConnInfo::topic_names`]) resolves them, and a topic it cannot name is refused too.
//!
//! ```no_run
//! use std::sync::Arc;
//! use kwire::dispatch::Request;
//! use kwire::filter::{Filter, FilterChain, Refusals, RequestAction};
//! use kwire::messages::RequestBodyView;
//! use kwire::proxy::{ConnInfo, Proxy};
//! use kwire::{ApiKey, ErrorCode};
//!
//! struct AuditTopics(Arc<ConnInfo>);
//!
//! impl Filter for AuditTopics {
//!     fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
//!         api_key == ApiKey::Produce && self.0.principal().as_deref() != Some("admin")
//!     }
//!     fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
//!         let RequestBodyView::Produce(produce) = request.body else { return RequestAction::Pass };
//!         let mut refused = Refusals::new();
//!         for (i, topic) in produce.topic_data().iter().enumerate() {
//!             match self.0.topic_names().resolve(topic.name(), topic.topic_id()) {
//!                 Some(name) if !name.starts_with("audit.") => {}
//!                 _ => _ = refused.topic(i, ErrorCode::TopicAuthorizationFailed, None),
//!             }
//!         }
//!         RequestAction::Refuse(refused) // nothing refused: the request passes
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::io::Result<()> {
//!     let proxy = Proxy::builder("127.0.0.1:19092".parse().unwrap(), ["broker:9092"])
//!         .filters(|conn: &Arc<ConnInfo>| {
//!             let mut chain = FilterChain::new();
//!             chain.push(AuditTopics(conn.clone()));
//!             chain
//!         })
//!         .start()
//!         .await?;
//!     println!("clients bootstrap with {}", proxy.local_addr());
//!     tokio::time::sleep(std::time::Duration::from_secs(24 * 3600)).await; // serve a day
//!     proxy.shutdown().await;
//!     Ok(())
//! }
//! ```
//!
//! The rules of a filter's answer (the same API, the request's version and correlation id,
//! sent to the client in its turn among the broker's answers) are the chain's
//! ([`crate::filter`]).

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

mod acl_lookups;
mod audit;
mod dial;
#[cfg(feature = "encrypt")]
pub mod encrypt;
mod hooks;
mod io;
mod listeners;
mod notes;
mod runtime;
mod scrape;
mod session;
mod tenants;
mod tls;
mod topic_ids;
mod traffic;
mod waiting;

use std::net::SocketAddr;
use std::time::Duration;

pub use audit::{AuditLog, timestamp};
pub use hooks::{ConnInfo, Event, Hooks, NoHooks};
pub use notes::{Admitted, AuthNote, Pairing, RequestHead};
pub use session::{Action, Answer, Answered, FromBroker, FromClient, Session};
pub use tenants::{TenantError, TenantLineError, Tenants};
pub use tls::{ServerTls, TlsError, UpstreamTls};
pub use traffic::{LogFormat, RecordAs, Recorder, TrafficLog, TrafficTag};
pub use waiting::{Decision, Upstream, UpstreamError, WaitingFilter, WaitingResponses};

use crate::filter::{FilterChain, TopicNames};
use crate::session::conn::metrics::Metrics;

/// The metrics' namespace: `kwire_proxy_*`.
pub const METRICS_NAMESPACE: &str = "kwire_proxy";

/// Makes each connection's filters.
type FilterFactory = dyn Fn(&Arc<ConnInfo>) -> FilterChain + Send + Sync;

/// Makes each connection's waiting filter.
type WaitingFactory = dyn Fn(&Arc<ConnInfo>) -> Box<dyn WaitingFilter> + Send + Sync;

/// SNI routing: one listener for the whole cluster, each TLS connection sent to the broker
/// whose name the client asked for.
#[derive(Clone, Debug)]
pub struct SniRouting {
    /// Broker N's name: the pattern with `{id}` replaced by N.
    pub pattern: String,
    /// The name clients bootstrap with; its connections go to the upstream list.
    pub bootstrap: String,
}

/// Sets a proxy up ([`Proxy::builder`]).
pub struct ProxyBuilder<H: Hooks = NoHooks> {
    listen: SocketAddr,
    upstream: Vec<String>,
    broker_ports: Option<u16>,
    advertise: Option<String>,
    max_frame: usize,
    max_connections: usize,
    idle_timeout: Option<Duration>,
    handshake_timeout: Duration,
    server_tls: Option<ServerTls>,
    upstream_tls: Option<UpstreamTls>,
    sni: Option<SniRouting>,
    filters: Arc<FilterFactory>,
    waiting: Option<Arc<WaitingFactory>>,
    topic_names: TopicNames,
    /// Whether the user gave filters: then the proxy looks up topic ids for them.
    user_filters: bool,
    /// Record encryption, shared by the connections.
    #[cfg(feature = "encrypt")]
    encryption: Option<Arc<encrypt::Engine>>,
    hooks: Arc<H>,
    metrics: Arc<Metrics>,
}

impl<H: Hooks> core::fmt::Debug for ProxyBuilder<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ProxyBuilder")
            .field("listen", &self.listen)
            .field("upstream", &self.upstream)
            .finish()
    }
}

impl ProxyBuilder<NoHooks> {
    fn new(listen: SocketAddr, upstream: Vec<String>) -> Self {
        ProxyBuilder {
            listen,
            upstream,
            broker_ports: None,
            advertise: None,
            max_frame: crate::codec::frame::DEFAULT_MAX_FRAME_SIZE,
            max_connections: 10_000,
            idle_timeout: None,
            handshake_timeout: Duration::from_secs(10),
            server_tls: None,
            upstream_tls: None,
            sni: None,
            filters: Arc::new(|_: &Arc<ConnInfo>| FilterChain::new()),
            waiting: None,
            topic_names: TopicNames::new(),
            user_filters: false,
            #[cfg(feature = "encrypt")]
            encryption: None,
            hooks: Arc::new(NoHooks),
            metrics: Arc::new(Metrics::new(METRICS_NAMESPACE)),
        }
    }
}

impl<H: Hooks> ProxyBuilder<H> {
    /// Serves broker node id N on port `base + N` of the listen address (the same in every
    /// proxy with the same settings). Without it, each broker gets a free port when a
    /// response first names it.
    pub fn broker_ports(mut self, base: u16) -> Self {
        self.broker_ports = Some(base);
        self
    }

    /// The host written into rewritten broker addresses (default: the listen IP, or
    /// 127.0.0.1 when that is unspecified).
    pub fn advertise(mut self, host: impl Into<String>) -> Self {
        self.advertise = Some(host.into());
        self
    }

    /// Closes a connection that announces a frame larger than this (default
    /// [`crate::codec::frame::DEFAULT_MAX_FRAME_SIZE`], Kafka's `socket.request.max.bytes`).
    pub fn max_frame_bytes(mut self, bytes: usize) -> Self {
        self.max_frame = bytes;
        self
    }

    /// Serves at most this many client connections at once (default 10,000); past it the
    /// listeners close, so that new clients are refused, until a connection ends.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// Closes a connection that has sent nothing for this long with nothing awaiting an
    /// answer (Kafka's `connections.max.idle.ms`). Off by default.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// Closes a client connection whose TLS handshake has not finished in this long
    /// (default 10 s).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Terminates TLS: clients connect to every listener with TLS.
    pub fn server_tls(mut self, tls: ServerTls) -> Self {
        self.server_tls = Some(tls);
        self
    }

    /// Originates TLS: the proxy connects to brokers with TLS.
    pub fn upstream_tls(mut self, tls: UpstreamTls) -> Self {
        self.upstream_tls = Some(tls);
        self
    }

    /// SNI routing (needs [`ProxyBuilder::server_tls`]).
    pub fn sni(mut self, sni: SniRouting) -> Self {
        self.sni = Some(sni);
        self
    }

    /// Each client connection's filters, made when it is set up (after TLS), from what is
    /// known of it. Address rewriting is added after them (nearest the broker).
    ///
    /// The proxy keeps the names of topic ids for its filters and its log: each connection
    /// fills the proxy's [`TopicNames`] book ([`ConnInfo::topic_names`]) from the answers
    /// that pair names with ids, before its filters see them. With filters, before a request that names an id the book does not know goes
    /// on, the proxy asks the broker its name (Metadata by id, on the connection's own
    /// broker connection). So a filter that judges topics by name resolves every topic of
    /// every version ([`TopicNames::resolve`]); an id the broker does not know stays
    /// unknown, and a policy filter refuses it.
    pub fn filters(
        mut self,
        factory: impl Fn(&Arc<ConnInfo>) -> FilterChain + Send + Sync + 'static,
    ) -> Self {
        self.filters = Arc::new(factory);
        self.user_filters = true;
        self
    }

    /// The book of topic names by id the connections share (by default a new one): give
    /// one that your filters hold to share it beyond the proxy.
    pub fn topic_names(mut self, book: TopicNames) -> Self {
        self.topic_names = book;
        self
    }

    /// Each client connection's [`WaitingFilter`], made when it is set up, before its
    /// filter chain.
    pub fn waiting_filter(
        mut self,
        factory: impl Fn(&Arc<ConnInfo>) -> Box<dyn WaitingFilter> + Send + Sync + 'static,
    ) -> Self {
        self.waiting = Some(Arc::new(factory));
        self
    }

    /// Encrypts the records of the topics `encryption`'s rules name on their way to the
    /// brokers and decrypts them on their way back (feature `encrypt`; see
    /// [`encrypt`]): a waiting filter after the user's (so that theirs see plaintext
    /// requests), and a filter after the user's chain that refuses what could not be
    /// encrypted. The proxy keeps topic names for it, as for filters.
    #[cfg(feature = "encrypt")]
    pub fn encrypt(mut self, encryption: encrypt::Encryption) -> Self {
        self.encryption = Some(encryption.engine());
        self.user_filters = true;
        self
    }

    /// The counters the proxy keeps (by default its own, namespace [`METRICS_NAMESPACE`]);
    /// give one that your hooks share to count beside it.
    pub fn metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// What the proxy tells its owner (logs, recordings).
    pub fn hooks<G: Hooks>(self, hooks: G) -> ProxyBuilder<G> {
        ProxyBuilder {
            listen: self.listen,
            upstream: self.upstream,
            broker_ports: self.broker_ports,
            advertise: self.advertise,
            max_frame: self.max_frame,
            max_connections: self.max_connections,
            idle_timeout: self.idle_timeout,
            handshake_timeout: self.handshake_timeout,
            server_tls: self.server_tls,
            upstream_tls: self.upstream_tls,
            sni: self.sni,
            filters: self.filters,
            waiting: self.waiting,
            topic_names: self.topic_names,
            user_filters: self.user_filters,
            #[cfg(feature = "encrypt")]
            encryption: self.encryption,
            hooks: Arc::new(hooks),
            metrics: self.metrics,
        }
    }

    /// Binds the bootstrap listener and starts serving on the current tokio runtime.
    pub async fn start(self) -> std::io::Result<Proxy<H>> {
        listeners::start(self).await
    }
}

/// A running proxy (a handle: clones share it). Dropping it leaves it running on its
/// runtime; [`Proxy::shutdown`] stops it.
pub struct Proxy<H: Hooks = NoHooks> {
    runtime: Arc<runtime::Runtime<H>>,
    addr: SocketAddr,
}

impl<H: Hooks> Clone for Proxy<H> {
    fn clone(&self) -> Self {
        Proxy { runtime: self.runtime.clone(), addr: self.addr }
    }
}

impl<H: Hooks> core::fmt::Debug for Proxy<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Proxy").field("addr", &self.addr).finish()
    }
}

impl Proxy<NoHooks> {
    /// A proxy listening on `listen` (the bootstrap address clients are given; port 0
    /// picks one) for the cluster whose bootstrap brokers are `upstream` (`host:port`,
    /// tried in turn for each connection to the bootstrap listener).
    pub fn builder<S: Into<String>>(
        listen: SocketAddr,
        upstream: impl IntoIterator<Item = S>,
    ) -> ProxyBuilder {
        ProxyBuilder::new(listen, upstream.into_iter().map(Into::into).collect())
    }
}

impl<H: Hooks> Proxy<H> {
    /// The bootstrap listener's address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The hooks.
    pub fn hooks(&self) -> &H {
        &self.runtime.hooks
    }

    /// The counters ([`Metrics`]: connections, requests and responses by API, bytes,
    /// latency, frames not decoded, upstream errors).
    pub fn metrics(&self) -> &Metrics {
        &self.runtime.metrics
    }

    /// The metrics in the Prometheus text format, with the connection bound and, with TLS,
    /// the client handshakes that failed by reason.
    pub fn render_metrics(&self) -> String {
        self.runtime.render_metrics()
    }

    /// Serves [`Proxy::render_metrics`] on `listener` to HTTP scrapers (`GET /metrics`, any
    /// path answered alike), one scrape at a time, each bounded to 8 KiB of request and
    /// 2 s, on a thread of its own for as long as the process runs.
    pub fn serve_metrics(&self, listener: std::net::TcpListener) {
        let proxy = self.clone();
        std::thread::spawn(move || scrape::serve(listener, move || proxy.render_metrics()));
    }

    /// Client connections open now.
    pub fn open_connections(&self) -> usize {
        self.runtime.gate.open()
    }

    /// Stops accepting connections, lets each connection's requests in flight be answered
    /// (reading no new ones), then closes them; waits at most 30 s.
    pub async fn shutdown(self) {
        self.shutdown_within(Duration::from_secs(30)).await;
    }

    /// [`Proxy::shutdown`], waiting at most `limit` for the requests in flight.
    pub async fn shutdown_within(self, limit: Duration) {
        self.runtime.stop.send_replace(true);
        let _ = tokio::time::timeout(limit, async {
            while self.runtime.gate.open() > 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
    }
}
