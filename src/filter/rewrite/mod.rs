//! [`RewriteAddresses`]: broker addresses in responses replaced by the proxy's, with the
//! routes that say by what ([`BrokerPorts`], [`ByNode`], [`ByName`] over [`BrokerNames`]).

use alloc::string::{String, ToString};

use super::{Exchange, Filter, ResponseAction};
use crate::ApiKey;
use crate::codec::dispatch::Response;
use crate::codec::messages::ResponseBody;

/// Replaces broker addresses in responses, so that clients keep connecting through a
/// proxy: the brokers of Metadata and DescribeCluster, FindCoordinator's coordinator(s),
/// and the `NodeEndpoints` that Produce, Fetch, ShareFetch and ShareAcknowledge responses
/// carry (KIP-951 leader hints). Node ids are kept: the proxy stands in for each broker at
/// its own address.
///
/// `route(host, port)` gives the address to write instead (`None` keeps the broker's,
/// e.g. FindCoordinator's `""`/`-1` when there is no coordinator). A response is encoded
/// again only if some address changes; the header and every other field are kept.
///
/// ```
/// use kwire::filter::{FilterChain, RewriteAddresses, Verdict};
/// use kwire::messages::{MetadataResponse, metadata::MetadataResponseBroker};
/// use kwire::ApiKey;
///
/// let mut chain = FilterChain::new();
/// chain.push(RewriteAddresses::new(|host: &str, port: i32| Some(("proxy.local".to_string(), port + 10000))));
/// let brokers = [MetadataResponseBroker { node_id: 1, host: "b1.internal".into(), port: 9092, ..Default::default() }];
/// let body = MetadataResponse { brokers: (&brokers).into(), ..Default::default() };
/// let mut frame = vec![0u8; kwire::dispatch::response_len(&body, 12)?];
/// kwire::dispatch::encode_response(&body, 12, 5, &mut frame)?;
/// let Verdict::Replace(new) = chain.on_response(&frame[4..], ApiKey::Metadata, 12) else { panic!() };
/// let response = kwire::dispatch::parse_response(&new, ApiKey::Metadata, 12)?;
/// let kwire::messages::ResponseBodyView::Metadata(view) = response.body else { unreachable!() };
/// let broker = view.brokers().iter().next().unwrap();
/// assert_eq!((broker.host(), broker.port()), ("proxy.local", 19092));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// For one address for the whole cluster (SNI routing), [`RewriteAddresses::with_route`]
/// takes a [`Route`] that is told the broker's node id too, such as [`ByName`].
pub struct RewriteAddresses<F> {
    route: F,
}

impl<F: FnMut(&str, i32) -> Option<(String, i32)>> RewriteAddresses<F> {
    /// Rewrites with `route(host, port)`.
    pub fn new(route: F) -> Self {
        RewriteAddresses { route }
    }
}

impl<G: FnMut(i32, &str, i32) -> Option<(String, i32)>> RewriteAddresses<ByNode<G>> {
    /// Rewrites with `route(node_id, host, port)`: the broker's node id as the response
    /// names it (Metadata's and NodeEndpoints' `node_id`, DescribeCluster's `broker_id`,
    /// FindCoordinator's coordinator `node_id`, `-1` when it has none).
    pub fn by_node(route: G) -> Self {
        RewriteAddresses { route: ByNode(route) }
    }
}

impl<R: Route> RewriteAddresses<R> {
    /// Rewrites with a [`Route`], which is told each broker's node id as well as its
    /// address.
    pub fn with_route(route: R) -> Self {
        RewriteAddresses { route }
    }
}

/// Where [`RewriteAddresses`] sends clients instead of a broker: given the broker's node id
/// and address as a response names them, the address to write instead (`None` keeps it).
///
/// Every `FnMut(&str, i32) -> Option<(String, i32)>` (host, port) is a route that ignores
/// the node id; [`ByNode`] wraps a closure of `(node_id, host, port)`, [`BrokerPorts`] gives
/// each broker a port of its own and [`ByName`] names each broker from a pattern.
pub trait Route {
    /// The address to write for broker `node_id` at `host:port`, or `None` to keep it.
    fn route(&mut self, node_id: i32, host: &str, port: i32) -> Option<(String, i32)>;
}

impl<F: FnMut(&str, i32) -> Option<(String, i32)>> Route for F {
    fn route(&mut self, _node_id: i32, host: &str, port: i32) -> Option<(String, i32)> {
        self(host, port)
    }
}

/// A route that is a closure of `(node_id, host, port)` ([`RewriteAddresses::by_node`]).
#[derive(Clone, Copy, Debug)]
pub struct ByNode<G>(pub G);

impl<G: FnMut(i32, &str, i32) -> Option<(String, i32)>> Route for ByNode<G> {
    fn route(&mut self, node_id: i32, host: &str, port: i32) -> Option<(String, i32)> {
        (self.0)(node_id, host, port)
    }
}

/// A port per broker, by node id: broker `N` is served at `host:base + N`. The rule needs no
/// state, so that any number of proxy instances with the same `base` (on different hosts,
/// or the same host's different addresses) give every broker the same port, and a client
/// may talk to any of them. A broker without a node id (`-1`: no coordinator) or whose port
/// would pass 65535 is not rewritten ([`BrokerPorts::port`] is `None`).
///
/// ```
/// use kwire::filter::{BrokerPorts, Route};
///
/// let mut ports = BrokerPorts::new("proxy.local", 19000);
/// assert_eq!(ports.port(2), Some(19002));
/// assert_eq!(ports.route(2, "b2.internal", 9092), Some(("proxy.local".to_string(), 19002)));
/// assert_eq!(ports.route(-1, "", -1), None);
/// assert_eq!(BrokerPorts::new("p", 65535).port(1), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerPorts {
    host: String,
    base: u16,
}

impl BrokerPorts {
    /// Broker `N` at `host:base + N`.
    pub fn new(host: impl Into<String>, base: u16) -> Self {
        BrokerPorts { host: host.into(), base }
    }

    /// The host written into rewritten addresses.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port of broker `node_id`: `base + node_id`, if that is a port (1 to 65535).
    pub fn port(&self, node_id: i32) -> Option<u16> {
        if node_id < 0 {
            return None;
        }
        let port = i64::from(self.base) + i64::from(node_id);
        u16::try_from(port).ok().filter(|p| *p != 0)
    }
}

impl Route for BrokerPorts {
    fn route(&mut self, node_id: i32, host: &str, port: i32) -> Option<(String, i32)> {
        let _ = (host, port);
        self.port(node_id).map(|p| (self.host.clone(), i32::from(p)))
    }
}

/// Why a [`BrokerNames`] pattern or bootstrap name was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameError {
    /// The pattern does not hold `{id}` exactly once.
    Placeholder,
    /// A name made from the pattern, or the bootstrap name, is not a DNS host name (labels
    /// of 1-63 letters, digits and `-`, not starting or ending with `-`, at most 253 bytes).
    NotAHostName(String),
    /// The bootstrap name is also a broker's name.
    BootstrapIsABroker(String),
}

impl core::fmt::Display for NameError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            NameError::Placeholder => f.write_str("the broker name pattern must hold {id} exactly once"),
            NameError::NotAHostName(n) => write!(f, "{n:?} is not a DNS host name"),
            NameError::BootstrapIsABroker(n) => {
                write!(f, "the bootstrap name {n:?} is also a broker's name from the pattern")
            }
        }
    }
}

impl core::error::Error for NameError {}

/// What a host name asked for (the TLS server name, SNI) means under [`BrokerNames`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameTarget {
    /// The bootstrap name: any broker will do.
    Bootstrap,
    /// The broker with this node id.
    Broker(i32),
}

/// Per-broker host names from a pattern, for a proxy that serves a whole cluster on one
/// address and tells brokers apart by the host name each client asks for (TLS SNI):
/// broker `N` is the pattern with `{id}` replaced by `N` in decimal, and the bootstrap
/// name stands for the cluster.
///
/// The mapping is a pure function of the pattern, so that proxies given the same pattern
/// name every broker the same way without sharing any state; and it is one to one: a name
/// is a broker's only if it is exactly that broker's name (ASCII case aside; no sign, no
/// leading zeros, no trailing dot).
///
/// ```
/// use kwire::filter::{BrokerNames, NameTarget};
///
/// let names = BrokerNames::new("broker-{id}.kafka.example", "kafka.example")?;
/// assert_eq!(names.broker(2).as_deref(), Some("broker-2.kafka.example"));
/// assert_eq!(names.lookup("Broker-2.kafka.example"), Some(NameTarget::Broker(2)));
/// assert_eq!(names.lookup("kafka.example"), Some(NameTarget::Bootstrap));
/// assert_eq!(names.lookup("broker-02.kafka.example"), None);
/// assert_eq!(names.lookup("other.example"), None);
/// # Ok::<(), kwire::filter::NameError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerNames {
    prefix: String,
    suffix: String,
    bootstrap: String,
}

/// Whether `name` is a DNS host name (RFC 1123 labels, at most 253 bytes).
fn is_host_name(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

impl BrokerNames {
    /// Names from `pattern` (holding `{id}` once, e.g. `broker-{id}.kafka.example`) with
    /// `bootstrap` as the cluster's name. Names are kept in lower case.
    pub fn new(pattern: &str, bootstrap: &str) -> Result<Self, NameError> {
        let pattern = pattern.to_ascii_lowercase();
        let bootstrap = bootstrap.to_ascii_lowercase();
        let mut parts = pattern.split("{id}");
        let (Some(prefix), Some(suffix), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(NameError::Placeholder);
        };
        let names = BrokerNames { prefix: prefix.to_string(), suffix: suffix.to_string(), bootstrap };
        // The shortest and the longest ids: the labels are checked at both lengths.
        for id in [0, i32::MAX] {
            let name = names.name(id);
            if !is_host_name(&name) {
                return Err(NameError::NotAHostName(name));
            }
        }
        if !is_host_name(&names.bootstrap) {
            return Err(NameError::NotAHostName(names.bootstrap));
        }
        if names.lookup_broker(&names.bootstrap).is_some() {
            return Err(NameError::BootstrapIsABroker(names.bootstrap));
        }
        Ok(names)
    }

    fn name(&self, node_id: i32) -> String {
        alloc::format!("{}{node_id}{}", self.prefix, self.suffix)
    }

    /// Broker `node_id`'s name; `None` for a negative id (no broker: FindCoordinator's
    /// answer when there is no coordinator).
    pub fn broker(&self, node_id: i32) -> Option<String> {
        (node_id >= 0).then(|| self.name(node_id))
    }

    /// The bootstrap name.
    pub fn bootstrap(&self) -> &str {
        &self.bootstrap
    }

    /// What `name` stands for: the bootstrap name, a broker's name, or neither (`None`).
    pub fn lookup(&self, name: &str) -> Option<NameTarget> {
        if name.eq_ignore_ascii_case(&self.bootstrap) {
            return Some(NameTarget::Bootstrap);
        }
        self.lookup_broker(name).map(NameTarget::Broker)
    }

    fn lookup_broker(&self, name: &str) -> Option<i32> {
        let (p, s) = (self.prefix.len(), self.suffix.len());
        if name.len() <= p + s
            || !name.is_char_boundary(p)
            || !name.is_char_boundary(name.len() - s)
            || !name[..p].eq_ignore_ascii_case(&self.prefix)
            || !name[name.len() - s..].eq_ignore_ascii_case(&self.suffix)
        {
            return None;
        }
        let digits = &name[p..name.len() - s];
        if !digits.bytes().all(|b| b.is_ascii_digit()) || (digits.len() > 1 && digits.starts_with('0')) {
            return None;
        }
        digits.parse::<i32>().ok()
    }
}

/// A [`Route`] that writes every broker as its [`BrokerNames`] name at one port, and tells
/// `seen(node_id, host, port)` each broker's own address as a response names it (so that a
/// proxy learns where a name's connections go). Addresses of no broker (a negative node
/// id) are kept.
///
/// ```
/// use kwire::filter::{BrokerNames, ByName, FilterChain, RewriteAddresses, Verdict};
/// use kwire::messages::{MetadataResponse, metadata::MetadataResponseBroker};
/// use kwire::ApiKey;
///
/// let names = BrokerNames::new("b{id}.kafka.example", "kafka.example")?;
/// let mut chain = FilterChain::new();
/// let (tx, rx) = std::sync::mpsc::channel();
/// chain.push(RewriteAddresses::with_route(ByName::new(names, 9093, move |id, host: &str, port| {
///     let _ = tx.send((id, host.to_string(), port));
/// })));
/// let brokers = [MetadataResponseBroker { node_id: 7, host: "10.1.2.3".into(), port: 9092, ..Default::default() }];
/// let body = MetadataResponse { brokers: (&brokers).into(), ..Default::default() };
/// let mut frame = vec![0u8; kwire::dispatch::response_len(&body, 12)?];
/// kwire::dispatch::encode_response(&body, 12, 5, &mut frame)?;
/// let Verdict::Replace(new) = chain.on_response(&frame[4..], ApiKey::Metadata, 12) else { panic!() };
/// let response = kwire::dispatch::parse_response(&new, ApiKey::Metadata, 12)?;
/// let kwire::messages::ResponseBodyView::Metadata(view) = response.body else { unreachable!() };
/// let broker = view.brokers().iter().next().unwrap();
/// assert_eq!((broker.host(), broker.port()), ("b7.kafka.example", 9093));
/// let learned: Vec<_> = rx.try_iter().collect();
/// assert_eq!(learned, [(7, "10.1.2.3".to_string(), 9092)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ByName<S> {
    names: BrokerNames,
    port: i32,
    seen: S,
}

impl<S: FnMut(i32, &str, i32)> ByName<S> {
    /// Brokers as `names.broker(node_id):port`; `seen` is told their own addresses.
    pub fn new(names: BrokerNames, port: i32, seen: S) -> Self {
        ByName { names, port, seen }
    }
}

impl<S> core::fmt::Debug for ByName<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ByName").field("names", &self.names).field("port", &self.port).finish_non_exhaustive()
    }
}

impl<S: FnMut(i32, &str, i32)> Route for ByName<S> {
    fn route(&mut self, node_id: i32, host: &str, port: i32) -> Option<(String, i32)> {
        let name = self.names.broker(node_id)?;
        if !host.is_empty() && (1..=65535).contains(&port) {
            (self.seen)(node_id, host, port);
        }
        Some((name, self.port))
    }
}

impl<F> core::fmt::Debug for RewriteAddresses<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("RewriteAddresses")
    }
}

/// The address rewriting of [`RewriteAddresses`], compiled when a message that carries broker
/// addresses is.
#[cfg(any(
    feature = "api-metadata",
    feature = "api-describe-cluster",
    feature = "api-find-coordinator",
    feature = "api-produce",
    feature = "api-fetch",
    feature = "api-share-fetch",
    feature = "api-share-acknowledge"
))]
mod addresses;

/// A build with no message that carries broker addresses has nothing to rewrite.
#[cfg(not(any(
    feature = "api-metadata",
    feature = "api-describe-cluster",
    feature = "api-find-coordinator",
    feature = "api-produce",
    feature = "api-fetch",
    feature = "api-share-fetch",
    feature = "api-share-acknowledge"
)))]
mod addresses {
    use super::*;

    pub(super) fn rewrite<'a>(_: &mut impl Route, _: &Response<'a>) -> Option<ResponseBody<'a>> {
        None
    }

    /// Why nothing was spliced (never, with nothing to rewrite).
    #[derive(Debug)]
    pub(super) enum Failure {
        /// Never made.
        NotFound,
        /// Never made.
        TooLong(usize),
        /// Never made.
        Broken,
    }

    pub(super) fn splice(
        _: &mut impl Route,
        _: i16,
        _: ApiKey,
        _: &Response<'_>,
    ) -> Result<Option<alloc::vec::Vec<u8>>, Failure> {
        Ok(None)
    }
}

/// Whether responses of `api_key` carry broker addresses (a struct with a `Host` string and
/// a `Port` int32, in some version) that clients receive from brokers: the answers
/// [`RewriteAddresses`] reads. A test holds this list to the schemas (UpdateRaftVoter's
/// answer also names an address, a KRaft controller's, but only controllers send it).
pub const fn carries_addresses(api_key: ApiKey) -> bool {
    matches!(
        api_key,
        ApiKey::Metadata
            | ApiKey::FindCoordinator
            | ApiKey::DescribeCluster
            | ApiKey::Produce
            | ApiKey::Fetch
            | ApiKey::ShareFetch
            | ApiKey::ShareAcknowledge
    )
}

impl<R: Route> Filter for RewriteAddresses<R> {
    fn wants_request(&self, _: ApiKey, _: i16) -> bool {
        false
    }

    fn wants_response(&self, api_key: ApiKey, _: i16) -> bool {
        carries_addresses(api_key)
    }

    fn on_response<'a>(&mut self, exchange: &Exchange, response: &Response<'a>) -> ResponseAction<'a> {
        match addresses::splice(&mut self.route, exchange.api_version, exchange.api_key, response) {
            Ok(None) => return ResponseAction::Pass,
            Ok(Some(frame)) => return ResponseAction::RewriteFrame(frame),
            Err(addresses::Failure::TooLong(len)) => {
                return ResponseAction::Close(alloc::format!(
                    "a rewritten broker host of {len} bytes is longer than a string can be"
                ));
            }
            Err(addresses::Failure::Broken) => {
                return ResponseAction::Close(alloc::format!(
                    "the broker addresses of a {} answer could not be spliced",
                    exchange.api_key.name()
                ));
            }
            // Bytes not in canonical form (found before the route is asked about any
            // address): rewritten through the typed body, which asks it once.
            Err(addresses::Failure::NotFound) => {}
        }
        match addresses::rewrite(&mut self.route, response) {
            Some(body) => ResponseAction::Rewrite(body),
            None => ResponseAction::Pass,
        }
    }
}

/// The splice against the typed path it stands for: for every API and version whose
/// responses carry addresses, arbitrary bodies get their addresses routed both ways, and
/// the frames must be the same bytes.
#[cfg(all(test, feature = "arbitrary", feature = "testing", feature = "all-apis"))]
mod splice_tests;
