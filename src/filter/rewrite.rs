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
mod addresses {
    use super::*;
    use crate::codec::messages::ResponseBodyView;
    use crate::codec::types::{List, Str};
    use crate::codec::wire::MAX_STRING_LEN;
    use crate::codec::wire::varint::{push_uvarint, uvarint_len};
    use alloc::vec::Vec;

    /// The elements of a list, owned so that they can be changed.
    fn owned<'l, 'a, T: Clone>(list: &'l mut List<'a, T>) -> &'l mut Vec<T> {
        if let List::Borrowed(items) = list {
            *list = List::Owned(items.to_vec());
        }
        match list {
            List::Owned(v) => v,
            List::Borrowed(_) => unreachable!("made owned above"),
        }
    }

    /// Asks `route` about one address; rewrites it and returns true if it changes.
    fn route_one(route: &mut impl Route, node_id: i32, host: &mut Str<'_>, port: &mut i32) -> bool {
        match route.route(node_id, host.as_str(), *port) {
            Some((h, p)) if h != host.as_str() || p != *port => {
                *host = Str::Owned(h);
                *port = p;
                true
            }
            _ => false,
        }
    }

    macro_rules! rewrite_list {
        ($route:expr, $list:expr) => {
            rewrite_list!($route, $list, node_id)
        };
        ($route:expr, $list:expr, $id:ident) => {{
            let mut changed = false;
            for item in owned($list).iter_mut() {
                changed |= route_one($route, item.$id, &mut item.host, &mut item.port);
            }
            changed
        }};
    }

    /// Why [`splice`] did not write a frame.
    #[derive(Debug)]
    pub(super) enum Failure {
        /// An address's bytes are not where a canonical encoding puts them (a padded
        /// varint, say): the typed path rewrites that response instead.
        NotFound,
        /// A new host is longer than a string can be.
        TooLong(usize),
    }

    /// What [`each`] reports, in wire order.
    enum Item<'a> {
        /// An address: node id, host (in the frame), port.
        Address(i32, &'a str, i32),
        /// A list of addresses in a tagged field starts: its first and last elements'
        /// bytes, and its count.
        Open(&'a [u8], &'a [u8], usize),
        /// That list ends.
        Close,
    }

    /// Calls `f` with the addresses of a response (the ones [`rewrite`] routes, in the same
    /// order), and the tagged fields around them.
    fn each<'a>(
        response: &Response<'a>,
        f: &mut dyn FnMut(Item<'a>) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        #[allow(unused_macros)] // some feature sets carry no such list
        macro_rules! list {
            ($list:expr, $id:ident) => {
                for e in $list.iter() {
                    f(Item::Address(e.$id(), e.host(), e.port()))?;
                }
            };
        }
        #[allow(unused_macros)] // without Produce and Fetch
        macro_rules! tagged {
            ($list:expr) => {{
                let list = $list;
                if let (Some(first), Some(last)) = (list.get(0), list.iter().last()) {
                    f(Item::Open(first.as_bytes(), last.as_bytes(), list.len()))?;
                    list!(list, node_id);
                    f(Item::Close)?;
                }
            }};
        }
        match response.body {
            #[cfg(feature = "api-metadata")]
            ResponseBodyView::Metadata(v) => list!(v.brokers(), node_id),
            #[cfg(feature = "api-describe-cluster")]
            ResponseBodyView::DescribeCluster(v) => list!(v.brokers(), broker_id),
            #[cfg(feature = "api-find-coordinator")]
            ResponseBodyView::FindCoordinator(v) => {
                list!(v.coordinators(), node_id);
                // Versions 0-3 answer one coordinator at the top level.
                if v.version() <= 3 {
                    f(Item::Address(v.node_id(), v.host(), v.port()))?;
                }
            }
            #[cfg(feature = "api-produce")]
            ResponseBodyView::Produce(v) => tagged!(v.node_endpoints()),
            #[cfg(feature = "api-fetch")]
            ResponseBodyView::Fetch(v) => tagged!(v.node_endpoints()),
            #[cfg(feature = "api-share-fetch")]
            ResponseBodyView::ShareFetch(v) => list!(v.node_endpoints(), node_id),
            #[cfg(feature = "api-share-acknowledge")]
            ResponseBodyView::ShareAcknowledge(v) => list!(v.node_endpoints(), node_id),
            _ => {}
        }
        Ok(())
    }

    /// Where `part` (bytes of `body`) starts in it.
    fn offset(body: &[u8], part: &[u8]) -> Option<usize> {
        let at = (part.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
        (at.checked_add(part.len())? <= body.len()).then_some(at)
    }

    /// The unsigned varint at `at` in `body`, and its width.
    fn uvarint_at(body: &[u8], at: usize) -> Option<(u32, usize)> {
        let mut r = crate::codec::wire::Reader::new(body.get(at..)?);
        let v = r.uvarint("size").ok()?;
        Some((v, r.pos()))
    }

    /// Where an address's host string starts (its length prefix) and ends, checked
    /// against the bytes: the port follows it.
    fn locate(body: &[u8], compact: bool, host: &str, port: i32) -> Option<(usize, usize)> {
        let off = offset(body, host.as_bytes())?;
        let len = host.len();
        let at = if compact {
            let width = uvarint_len(len as u32 + 1);
            let at = off.checked_sub(width)?;
            (uvarint_at(body, at)? == (len as u32 + 1, width)).then_some(at)?
        } else {
            let at = off.checked_sub(2)?;
            (body.get(at..off)? == (len as i16).to_be_bytes()).then_some(at)?
        };
        let end = off + len;
        (body.get(end..end + 4)? == port.to_be_bytes()).then_some((at, end))
    }

    /// Where a tagged field holding a list of `count` elements from `first` to `last`
    /// has its size varint, the size, and the varint's width.
    fn locate_tagged(body: &[u8], first: &[u8], last: &[u8], count: usize) -> Option<(usize, u32, usize)> {
        let count = u32::try_from(count).ok()?.checked_add(1)?;
        let start = offset(body, first)?.checked_sub(uvarint_len(count))?;
        let end = offset(body, last)? + last.len();
        let size = u32::try_from(end.checked_sub(start)?).ok()?;
        let width = uvarint_len(size);
        let at = start.checked_sub(width)?;
        let found = uvarint_at(body, start)? == (count, uvarint_len(count))
            && uvarint_at(body, at)? == (size, width)
            && at.checked_sub(1).and_then(|t| body.get(t)) == Some(&0);
        found.then_some((at, size, width))
    }

    /// What an edit writes.
    enum New {
        /// A host string, with its length prefix (compact or not).
        Text(String, bool),
        /// A port.
        Int(i32),
        /// A tagged field's size.
        Size(u32),
    }

    /// Bytes `at..end` of the body replaced.
    struct Edit {
        at: usize,
        end: usize,
        new: New,
    }

    impl Edit {
        fn write(&self, out: &mut Vec<u8>) {
            match &self.new {
                New::Text(s, true) => {
                    push_uvarint(out, s.len() as u32 + 1);
                    out.extend_from_slice(s.as_bytes());
                }
                New::Text(s, false) => {
                    out.extend_from_slice(&(s.len() as i16).to_be_bytes());
                    out.extend_from_slice(s.as_bytes());
                }
                New::Int(v) => out.extend_from_slice(&v.to_be_bytes()),
                New::Size(v) => push_uvarint(out, *v),
            }
        }
    }

    /// Edits kept without allocating (more go to a vector).
    const FEW: usize = 16;

    /// The edits of one frame, in wire order.
    struct Edits {
        few: [Option<Edit>; FEW],
        more: Vec<Edit>,
        n: usize,
    }

    impl Edits {
        fn push(&mut self, edit: Edit) -> usize {
            match self.few.get_mut(self.n) {
                Some(slot) => *slot = Some(edit),
                None => self.more.push(edit),
            }
            self.n += 1;
            self.n - 1
        }

        fn get_mut(&mut self, i: usize) -> Option<&mut Edit> {
            match i.checked_sub(FEW) {
                None => self.few.get_mut(i)?.as_mut(),
                Some(j) => self.more.get_mut(j),
            }
        }

        fn iter(&self) -> impl Iterator<Item = &Edit> {
            self.few.iter().flatten().chain(self.more.iter())
        }
    }

    /// The response's frame (header, then body) with its addresses routed and spliced in:
    /// copied once, each new host written in its place with its length prefix, each new
    /// port written over the old, and the size of a tagged field that holds them written
    /// again. `Ok(None)` when no address changes. `route` is asked about each address
    /// once, in the order [`rewrite`] asks; when the bytes are not where a canonical
    /// encoding has them, nothing is asked and the answer is [`Failure::NotFound`].
    pub(super) fn splice(
        route: &mut impl Route,
        version: i16,
        api: ApiKey,
        response: &Response<'_>,
    ) -> Result<Option<Vec<u8>>, Failure> {
        let body = response.body.as_bytes();
        let compact = api.flexible_versions().contains(version);
        // Every address is found before any is routed.
        each(response, &mut |item| match item {
            Item::Address(_, host, port) => {
                locate(body, compact, host, port).map(drop).ok_or(Failure::NotFound)
            }
            Item::Open(first, last, count) => {
                locate_tagged(body, first, last, count).map(drop).ok_or(Failure::NotFound)
            }
            Item::Close => Ok(()),
        })?;
        let mut edits = Edits { few: [const { None }; FEW], more: Vec::new(), n: 0 };
        let mut grows: i64 = 0;
        let mut changed = false;
        // The open tagged field: its size edit, the old size and width, what it grows by.
        let mut open: Option<(usize, u32, usize, i64)> = None;
        each(response, &mut |item| {
            match item {
                Item::Address(node_id, host, port) => {
                    let Some((new_host, new_port)) = route.route(node_id, host, port) else { return Ok(()) };
                    if new_host == host && new_port == port {
                        return Ok(());
                    }
                    let (at, end) = locate(body, compact, host, port).ok_or(Failure::NotFound)?;
                    changed = true;
                    if new_host != host {
                        if new_host.len() > MAX_STRING_LEN {
                            return Err(Failure::TooLong(new_host.len()));
                        }
                        let width = if compact { uvarint_len(new_host.len() as u32 + 1) } else { 2 };
                        let delta = (width + new_host.len()) as i64 - (end - at) as i64;
                        grows += delta;
                        if let Some(o) = open.as_mut() {
                            o.3 += delta;
                        }
                        edits.push(Edit { at, end, new: New::Text(new_host, compact) });
                    }
                    if new_port != port {
                        edits.push(Edit { at: end, end: end + 4, new: New::Int(new_port) });
                    }
                }
                Item::Open(first, last, count) => {
                    let (at, size, width) =
                        locate_tagged(body, first, last, count).ok_or(Failure::NotFound)?;
                    let i = edits.push(Edit { at, end: at + width, new: New::Size(size) });
                    open = Some((i, size, width, 0));
                }
                Item::Close => {
                    if let Some((i, size, width, by)) = open.take() {
                        let new =
                            u32::try_from(i64::from(size) + by).map_err(|_| Failure::TooLong(usize::MAX))?;
                        grows += uvarint_len(new) as i64 - width as i64;
                        if let Some(e) = edits.get_mut(i) {
                            e.new = New::Size(new);
                        }
                    }
                }
            }
            Ok(())
        })?;
        if !changed {
            return Ok(None);
        }
        let header = response.header.as_bytes();
        let len = usize::try_from(header.len() as i64 + body.len() as i64 + grows)
            .map_err(|_| Failure::NotFound)?;
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(header);
        let mut copied = 0;
        for e in edits.iter() {
            out.extend_from_slice(body.get(copied..e.at).ok_or(Failure::NotFound)?);
            e.write(&mut out);
            copied = e.end;
        }
        out.extend_from_slice(body.get(copied..).unwrap_or_default());
        if out.len() != len {
            return Err(Failure::NotFound);
        }
        Ok(Some(out))
    }

    /// The response with its addresses routed, or `None` if none changes.
    pub(super) fn rewrite<'a>(route: &mut impl Route, response: &Response<'a>) -> Option<ResponseBody<'a>> {
        // Cheap checks on the view first: most Produce and Fetch responses carry no hints.
        let (changed, body) = match response.body {
            #[cfg(feature = "api-metadata")]
            ResponseBodyView::Metadata(v) => {
                let mut b = crate::codec::messages::MetadataResponse::from(v);
                (rewrite_list!(route, &mut b.brokers, node_id), ResponseBody::Metadata(b))
            }
            #[cfg(feature = "api-describe-cluster")]
            ResponseBodyView::DescribeCluster(v) => {
                let mut b = crate::codec::messages::DescribeClusterResponse::from(v);
                (rewrite_list!(route, &mut b.brokers, broker_id), ResponseBody::DescribeCluster(b))
            }
            #[cfg(feature = "api-find-coordinator")]
            ResponseBodyView::FindCoordinator(v) => {
                let mut b = crate::codec::messages::FindCoordinatorResponse::from(v);
                let mut changed = rewrite_list!(route, &mut b.coordinators, node_id);
                // Versions 0-3 answer one coordinator at the top level.
                if v.coordinators().is_empty() {
                    changed |= route_one(route, b.node_id, &mut b.host, &mut b.port);
                }
                (changed, ResponseBody::FindCoordinator(b))
            }
            #[cfg(feature = "api-produce")]
            ResponseBodyView::Produce(v) if !v.node_endpoints().is_empty() => {
                let mut b = crate::codec::messages::ProduceResponse::from(v);
                (rewrite_list!(route, &mut b.node_endpoints, node_id), ResponseBody::Produce(b))
            }
            #[cfg(feature = "api-fetch")]
            ResponseBodyView::Fetch(v) if !v.node_endpoints().is_empty() => {
                let mut b = crate::codec::messages::FetchResponse::from(v);
                (rewrite_list!(route, &mut b.node_endpoints, node_id), ResponseBody::Fetch(b))
            }
            #[cfg(feature = "api-share-fetch")]
            ResponseBodyView::ShareFetch(v) if !v.node_endpoints().is_empty() => {
                let mut b = crate::codec::messages::ShareFetchResponse::from(v);
                (rewrite_list!(route, &mut b.node_endpoints, node_id), ResponseBody::ShareFetch(b))
            }
            #[cfg(feature = "api-share-acknowledge")]
            ResponseBodyView::ShareAcknowledge(v) if !v.node_endpoints().is_empty() => {
                let mut b = crate::codec::messages::ShareAcknowledgeResponse::from(v);
                (rewrite_list!(route, &mut b.node_endpoints, node_id), ResponseBody::ShareAcknowledge(b))
            }
            _ => return None,
        };
        changed.then_some(body)
    }
}

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
            // Bytes not in canonical form: rewritten through the typed body.
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
mod splice_tests {
    use super::*;
    use crate::codec::dispatch;
    use crate::codec::encode::AnyBody;
    use crate::codec::types::Ver;
    use crate::testing::AsVersion;
    use alloc::vec;
    use alloc::vec::Vec;

    /// A route by the address alone (both paths ask it the same questions): hosts
    /// lengthened, shortened, made long (a compact prefix and a tagged size a byte wider),
    /// kept with a new port, or left alone.
    fn route(node_id: i32, host: &str, port: i32) -> Option<(String, i32)> {
        match (host.len() + node_id.unsigned_abs() as usize) % 5 {
            0 => Some((alloc::format!("proxy-{host}"), port.wrapping_add(1))),
            1 => Some((host.get(1..).unwrap_or_default().to_string(), port)),
            2 => Some(("h".repeat(200), 19000)),
            3 => Some((host.to_string(), port.wrapping_sub(7))),
            _ => None,
        }
    }

    struct Rng(u64);

    impl Rng {
        fn bytes(&mut self, max: usize) -> Vec<u8> {
            let mut next = || {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0
            };
            let len = next() as usize % max;
            (0..len).map(|_| next() as u8).collect()
        }
    }

    /// The frame (without its size prefix) both ways: spliced, and through the typed body.
    fn both(api: ApiKey, version: i16, frame: &[u8]) -> (Vec<u8>, Vec<u8>, bool) {
        let response = dispatch::parse_response(frame, api, version).unwrap();
        let header = response.header.as_bytes();
        let spliced = addresses::splice(&mut ByNode(route), version, api, &response)
            .unwrap_or_else(|e| panic!("{} v{version}: {e:?}", api.name()));
        let typed = addresses::rewrite(&mut ByNode(route), &response).and_then(|body| {
            // The typed path routes FindCoordinator's top-level address in versions that
            // have none (no coordinators), and that body does not encode: the splice
            // leaves those frames as they are.
            let len = match body.encoded_len(version) {
                Ok(len) => len,
                Err(_) if api == ApiKey::FindCoordinator && version >= 4 => return None,
                Err(e) => panic!("{} v{version}: {e:?}", api.name()),
            };
            let mut out = vec![0u8; header.len() + len];
            out[..header.len()].copy_from_slice(header);
            body.encode(version, &mut out[header.len()..]).unwrap();
            Some(out)
        });
        let changed = spliced.is_some();
        (spliced.unwrap_or_else(|| frame.to_vec()), typed.unwrap_or_else(|| frame.to_vec()), changed)
    }

    #[test]
    fn every_api_and_version_with_addresses_splices_as_the_typed_path_rewrites() {
        let mut rng = Rng(0xadd2_e55e);
        let mut missed = Vec::new();
        let (mut frames, mut spliced) = (0, 0);
        for &api in ApiKey::ALL.iter().filter(|a| carries_addresses(**a)) {
            let versions = api.response_versions();
            // Produce and Fetch carry leader hints from these versions on.
            let first = match api {
                ApiKey::Produce => 10,
                ApiKey::Fetch => 16,
                _ => versions.min,
            };
            for version in versions.min..=versions.max {
                let ver = Ver::new(version, api.flexible_versions().contains(version));
                let mut changed = 0;
                for round in 0..2000 {
                    if round >= 30 && (changed > 0 || version < first) {
                        break;
                    }
                    let data = rng.bytes(4096);
                    let Ok(value) =
                        ResponseBody::arbitrary_for(api, &mut arbitrary::Unstructured::new(&data))
                    else {
                        continue;
                    };
                    let value = value.as_version(ver);
                    let Ok(n) = dispatch::response_len(&value, version) else { continue };
                    let mut frame = vec![0u8; n];
                    dispatch::encode_response(&value, version, 7, &mut frame).unwrap();
                    let (got, want, did) = both(api, version, &frame[4..]);
                    assert_eq!(got, want, "{} v{version}: {frame:02x?}", api.name());
                    frames += 1;
                    changed += usize::from(did);
                }
                spliced += changed;
                if changed == 0 && version >= first {
                    missed.push((api.name(), version));
                }
            }
        }
        assert!(missed.is_empty(), "never spliced: {missed:?}");
        assert!(spliced > frames / 10, "only {spliced} of {frames} frames spliced");
        std::eprintln!("{frames} frames, {spliced} spliced");
    }
}
