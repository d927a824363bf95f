//! Filters: code that sees each request and response of a connection as typed views and
//! decides what happens to it (feature `alloc`).
//!
//! A [`Filter`] gets the frame's header and body view ([`dispatch::Request`] or
//! [`dispatch::Response`], with the request's API and version for a response in an
//! [`Exchange`]) and returns an action: pass the frame on, rewrite it (only the body is
//! encoded again; the header's bytes are kept), answer a request itself, drop a request, or
//! close the connection. A [`FilterChain`] runs filters in order on requests and in
//! reverse order on responses, as layers around the broker, and turns their actions into
//! one [`Verdict`] for the frame that the I/O loop carries out.
//!
//! Built in: [`DenyApis`] (an API deny-list), [`RewriteAddresses`] (broker addresses in
//! responses replaced, so that clients keep talking through a proxy; [`BrokerPorts`] is the
//! rule of a port per broker by node id, the same in every proxy instance). The masking of
//! secrets in copies of frames for logs and recordings is [`crate::secrets::redact`].
//!
//! A filter of your own, which counts requests per API and renames one client:
//!
//! ```
//! use std::collections::BTreeMap;
//! use kwire::dispatch::Request;
//! use kwire::filter::{Filter, FilterChain, RequestAction, Verdict};
//! use kwire::messages::{ApiVersionsRequest, RequestBody};
//! use kwire::ApiKey;
//!
//! #[derive(Default)]
//! struct CountAndRename {
//!     per_api: BTreeMap<ApiKey, u64>,
//! }
//!
//! impl Filter for CountAndRename {
//!     fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
//!         *self.per_api.entry(request.body.api_key()).or_default() += 1;
//!         match request.header.client_id() {
//!             // A client id is in the header; the body is rewritten the same way.
//!             Some("legacy-app") => RequestAction::RewriteHeader { client_id: Some("app-v1".into()) },
//!             _ => RequestAction::Pass,
//!         }
//!     }
//! }
//!
//! let mut chain = FilterChain::new();
//! chain.push(CountAndRename::default());
//!
//! let mut frame = [0u8; 64];
//! let n = kwire::dispatch::encode_request(&ApiVersionsRequest::default(), 3, 9, Some("legacy-app"), &mut frame)?;
//! let Verdict::Replace(new) = chain.on_request(&frame[4..n]) else { panic!("rewritten") };
//! let request = kwire::dispatch::parse_request(&new)?;
//! assert_eq!(request.header.client_id(), Some("app-v1"));
//! assert_eq!(request.header.correlation_id(), 9);
//! assert!(matches!(RequestBody::from(request.body), RequestBody::ApiVersions(_)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What the chain guarantees
//!
//! - Frames kwire cannot read (an unknown API or version, a malformed body) reach no
//!   filter and are forwarded unchanged: a filter only ever sees checked views.
//! - A filter is asked about a frame only if its `wants_*` says so; a frame no filter wants
//!   is not parsed at all.
//! - A rewritten frame keeps its header (correlation id, client id, header tagged fields)
//!   byte for byte, unless the filter rewrote the header itself; the next filter sees the
//!   rewritten frame.
//! - A request that expects an answer is never silently lost: dropping it closes the
//!   connection instead. Answering a Produce request with `acks = 0`, which expects none,
//!   drops it instead.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write as _;

use crate::ApiKey;
use crate::conn::expects_response;
use crate::dispatch::{self, Request, Response};
use crate::encode::AnyBody;
use crate::frame::{RequestHeader, RequestHeaderView};
use crate::messages::{RequestBody, ResponseBody, ResponseBodyView};
use crate::types::{List, RawTaggedField};

/// What a response answers: the request's API, the version the response is read at (the
/// request's, or 0 for an ApiVersions error answer read as v0, as Kafka's clients read it),
/// and the correlation id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exchange {
    /// The request's API.
    pub api_key: ApiKey,
    /// The version of the response body.
    pub api_version: i16,
    /// The correlation id.
    pub correlation_id: i32,
}

/// What a filter does with a request.
#[derive(Debug)]
#[non_exhaustive]
pub enum RequestAction<'a> {
    /// Pass it on unchanged.
    Pass,
    /// Replace the body with this one (the same API, encoded at the request's version);
    /// the header is kept.
    Rewrite(RequestBody<'a>),
    /// Keep the body and write the header again with this client id.
    RewriteHeader {
        /// The new client id.
        client_id: Option<String>,
    },
    /// Do not forward it; answer the client with this body (the same API, encoded at the
    /// request's version and with its correlation id).
    Respond(ResponseBody<'a>),
    /// Do not forward it and do not answer (a request that expects an answer closes the
    /// connection instead).
    Drop,
    /// Close the connection, for this reason.
    Close(String),
}

/// What a filter does with a response. Responses cannot be dropped: the client waits for
/// each answer in order.
// An action is returned once per frame and moved at once; boxing the body would cost an
// allocation per rewrite.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
#[non_exhaustive]
pub enum ResponseAction<'a> {
    /// Pass it on unchanged.
    Pass,
    /// Replace the body with this one (the same API, encoded at the response's version);
    /// the header is kept.
    Rewrite(ResponseBody<'a>),
    /// Close the connection, for this reason.
    Close(String),
}

/// A filter: sees requests and responses as checked views and decides what happens to
/// them. Every method has a default that passes everything on.
pub trait Filter {
    /// Whether [`Filter::on_request`] wants requests of this API and version (a frame that
    /// no filter wants is not parsed).
    fn wants_request(&self, api_key: ApiKey, version: i16) -> bool {
        let _ = (api_key, version);
        true
    }

    /// Decides what happens to a request.
    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        let _ = request;
        RequestAction::Pass
    }

    /// Whether [`Filter::on_response`] wants responses of this API and version.
    fn wants_response(&self, api_key: ApiKey, version: i16) -> bool {
        let _ = (api_key, version);
        true
    }

    /// Decides what happens to a response.
    fn on_response<'a>(&mut self, exchange: &Exchange, response: &Response<'a>) -> ResponseAction<'a> {
        let _ = (exchange, response);
        ResponseAction::Pass
    }
}

/// What to do with a frame, after every filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Forward the frame as it came.
    Forward,
    /// Forward this frame instead (without its size prefix).
    Replace(Vec<u8>),
    /// Do not forward the request; send this response frame (without its size prefix) to
    /// the client, in its turn.
    Respond(Vec<u8>),
    /// Forward nothing; nothing answers it (a request that expects no answer).
    Drop,
    /// Close the connection.
    Close(String),
}

/// Filters in order: requests go through them first to last, responses last to first.
#[derive(Default)]
pub struct FilterChain {
    filters: Vec<Box<dyn Filter + Send>>,
}

impl core::fmt::Debug for FilterChain {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "FilterChain({} filters)", self.filters.len())
    }
}

fn encode_body(body: &impl AnyBody, version: i16) -> Result<Vec<u8>, String> {
    let n = body.encoded_len(version).map_err(|e| e.to_string())?;
    let mut out = vec![0u8; n];
    body.encode(version, &mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

fn splice(header: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(header.len() + body.len());
    out.extend_from_slice(header);
    out.extend_from_slice(body);
    out
}

/// What one filter's action made of a request.
enum Step {
    Same,
    New(Vec<u8>),
    Done(Verdict),
}

fn request_step(frame: &[u8], request: &Request<'_>, action: RequestAction<'_>) -> Step {
    let header = request.header;
    let version = header.api_version();
    let key = request.body.api_key();
    let wrong_api = |what: &str, got: &str| {
        let mut s = String::new();
        let _ = write!(s, "a filter {what} a {} request with a {got} body", key.name());
        Step::Done(Verdict::Close(s))
    };
    match action {
        RequestAction::Pass => Step::Same,
        RequestAction::Rewrite(body) => {
            if body.api_key() != key {
                return wrong_api("rewrote", body.api_key().name());
            }
            match encode_body(&body, version) {
                Ok(b) => Step::New(splice(&frame[..header.as_bytes().len()], &b)),
                Err(e) => Step::Done(Verdict::Close(alloc::format!(
                    "a filter's rewritten {} request: {e}",
                    key.name()
                ))),
            }
        }
        RequestAction::RewriteHeader { client_id } => {
            let tags: Vec<RawTaggedField<'_>> = header
                .unknown_tagged_fields()
                .map(|(tag, data)| RawTaggedField { tag, data: List::Borrowed(data) })
                .collect();
            let new = RequestHeader {
                correlation_id: header.correlation_id(),
                client_id: client_id.as_deref(),
                unknown_tagged_fields: &tags,
            };
            let header_version = header.version();
            match new.encoded_len(header_version) {
                Ok(len) => {
                    let mut out = vec![0u8; len + frame.len() - header.as_bytes().len()];
                    let mut w = crate::wire::Writer::new(&mut out[..len]);
                    new.write(&mut w, key.to_i16(), version, header_version);
                    // The body's bytes as they came (trailing bytes included).
                    out[len..].copy_from_slice(&frame[header.as_bytes().len()..]);
                    Step::New(out)
                }
                Err(e) => Step::Done(Verdict::Close(e.to_string())),
            }
        }
        RequestAction::Respond(body) => {
            if !expects_response(&request.body) {
                return Step::Done(Verdict::Drop);
            }
            if body.api_key() != key {
                return wrong_api("answered", body.api_key().name());
            }
            let answer = dispatch::response_len(&body, version).and_then(|n| {
                let mut out = vec![0u8; n];
                dispatch::encode_response(&body, version, header.correlation_id(), &mut out).map(|_| out)
            });
            match answer {
                Ok(mut out) => {
                    out.drain(..4);
                    Step::Done(Verdict::Respond(out))
                }
                Err(e) => {
                    Step::Done(Verdict::Close(alloc::format!("a filter's answer to {}: {e}", key.name())))
                }
            }
        }
        RequestAction::Drop if expects_response(&request.body) => Step::Done(Verdict::Close(alloc::format!(
            "a filter dropped a {} request, which expects an answer",
            key.name()
        ))),
        RequestAction::Drop => Step::Done(Verdict::Drop),
        RequestAction::Close(why) => Step::Done(Verdict::Close(why)),
    }
}

/// Reads a response as Kafka's clients do: at the request's version, or, for an
/// ApiVersions error answer, at version 0. Returns the response and its version.
fn read_response(frame: &[u8], key: ApiKey, version: i16) -> Option<(Response<'_>, i16)> {
    match dispatch::parse_response(frame, key, version) {
        Ok(r) => Some((r, version)),
        Err(_) if key == ApiKey::ApiVersions && version > 0 => {
            dispatch::parse_response(frame, key, 0).ok().map(|r| (r, 0))
        }
        Err(_) => None,
    }
}

impl FilterChain {
    /// An empty chain (it forwards everything).
    pub fn new() -> Self {
        FilterChain { filters: Vec::new() }
    }

    /// Adds a filter after the others (nearer the broker).
    pub fn push(&mut self, filter: impl Filter + Send + 'static) -> &mut Self {
        self.filters.push(Box::new(filter));
        self
    }

    /// Whether the chain has no filters.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// Whether some filter wants requests of this API and version.
    pub fn wants_request(&self, api_key: ApiKey, version: i16) -> bool {
        self.filters.iter().any(|f| f.wants_request(api_key, version))
    }

    /// Whether some filter wants responses of this API and version.
    pub fn wants_response(&self, api_key: ApiKey, version: i16) -> bool {
        self.filters.iter().any(|f| f.wants_response(api_key, version))
    }

    /// Runs a request frame (without its size prefix) through the filters.
    pub fn on_request(&mut self, frame: &[u8]) -> Verdict {
        let Ok(peek) = RequestHeaderView::peek(frame) else { return Verdict::Forward };
        let (key, version) = (peek.api_key, peek.api_version);
        let Some(key) = ApiKey::from_i16(key) else { return Verdict::Forward };
        if !self.wants_request(key, version) {
            return Verdict::Forward;
        }
        let mut current: Option<Vec<u8>> = None;
        for filter in &mut self.filters {
            if !filter.wants_request(key, version) {
                continue;
            }
            let bytes = current.as_deref().unwrap_or(frame);
            let Ok((request, _)) = dispatch::parse_request_prefix(bytes) else {
                // Only the original frame can fail here: a rewritten one was encoded by kwire.
                break;
            };
            let action = filter.on_request(&request);
            match request_step(bytes, &request, action) {
                Step::Same => {}
                Step::New(new) => current = Some(new),
                Step::Done(verdict) => return verdict,
            }
        }
        current.map_or(Verdict::Forward, Verdict::Replace)
    }

    /// Runs a response frame (without its size prefix) that answers a request of
    /// `api_key` at `version` through the filters, last to first.
    pub fn on_response(&mut self, frame: &[u8], api_key: ApiKey, version: i16) -> Verdict {
        if !self.wants_response(api_key, version) {
            return Verdict::Forward;
        }
        let mut current: Option<Vec<u8>> = None;
        for filter in self.filters.iter_mut().rev() {
            if !filter.wants_response(api_key, version) {
                continue;
            }
            let bytes = current.as_deref().unwrap_or(frame);
            let Some((response, read_at)) = read_response(bytes, api_key, version) else { break };
            let exchange =
                Exchange { api_key, api_version: read_at, correlation_id: response.header.correlation_id() };
            match filter.on_response(&exchange, &response) {
                ResponseAction::Pass => {}
                ResponseAction::Rewrite(body) => {
                    if body.api_key() != api_key {
                        return Verdict::Close(alloc::format!(
                            "a filter rewrote a {} response with a {} body",
                            api_key.name(),
                            body.api_key().name()
                        ));
                    }
                    match encode_body(&body, read_at) {
                        Ok(b) => current = Some(splice(response.header.as_bytes(), &b)),
                        Err(e) => {
                            return Verdict::Close(alloc::format!(
                                "a filter's rewritten {} response: {e}",
                                api_key.name()
                            ));
                        }
                    }
                }
                ResponseAction::Close(why) => return Verdict::Close(why),
            }
        }
        current.map_or(Verdict::Forward, Verdict::Replace)
    }
}

/// Refuses some APIs: a request of one closes the connection, and ApiVersions answers no
/// longer list them, so that clients do not try.
///
/// Closing follows what a Kafka broker does with a request of an API it does not offer on a
/// listener (`SocketServer` closes the connection: "Received request api key ... which is
/// not enabled"). An error answer would need a per-API choice of where the error goes, and
/// a client that was told the API does not exist should not send it.
///
/// ```
/// use kwire::filter::{DenyApis, FilterChain, Verdict};
/// use kwire::messages::{DeleteTopicsRequest};
/// use kwire::ApiKey;
///
/// let mut chain = FilterChain::new();
/// chain.push(DenyApis::new([ApiKey::DeleteTopics]));
/// let mut frame = [0u8; 64];
/// let n = kwire::dispatch::encode_request(&DeleteTopicsRequest::default(), 6, 1, None, &mut frame)?;
/// assert!(matches!(chain.on_request(&frame[4..n]), Verdict::Close(_)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct DenyApis {
    denied: Vec<ApiKey>,
}

impl DenyApis {
    /// Denies these APIs.
    pub fn new(apis: impl IntoIterator<Item = ApiKey>) -> Self {
        DenyApis { denied: apis.into_iter().collect() }
    }
}

impl Filter for DenyApis {
    fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
        self.denied.contains(&api_key)
    }

    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        RequestAction::Close(alloc::format!(
            "{} requests are denied by this proxy",
            request.body.api_key().name()
        ))
    }

    fn wants_response(&self, api_key: ApiKey, _: i16) -> bool {
        api_key == ApiKey::ApiVersions && !self.denied.is_empty()
    }

    fn on_response<'a>(&mut self, exchange: &Exchange, response: &Response<'a>) -> ResponseAction<'a> {
        let ResponseBodyView::ApiVersions(view) = response.body else { return ResponseAction::Pass };
        if !view.api_keys().iter().any(|k| self.denied.iter().any(|d| d.to_i16() == k.api_key())) {
            return ResponseAction::Pass;
        }
        let _ = exchange;
        let mut body = crate::messages::ApiVersionsResponse::from(view);
        let keys: Vec<_> = body
            .api_keys
            .iter()
            .filter(|k| !self.denied.iter().any(|d| d.to_i16() == k.api_key))
            .cloned()
            .collect();
        body.api_keys = List::Owned(keys);
        ResponseAction::Rewrite(ResponseBody::ApiVersions(body))
    }
}

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
    use crate::types::Str;

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

    /// The response with its addresses routed, or `None` if none changes.
    pub(super) fn rewrite<'a>(route: &mut impl Route, response: &Response<'a>) -> Option<ResponseBody<'a>> {
        // Cheap checks on the view first: most Produce and Fetch responses carry no hints.
        let (changed, body) = match response.body {
            #[cfg(feature = "api-metadata")]
            ResponseBodyView::Metadata(v) => {
                let mut b = crate::messages::MetadataResponse::from(v);
                (rewrite_list!(route, &mut b.brokers, node_id), ResponseBody::Metadata(b))
            }
            #[cfg(feature = "api-describe-cluster")]
            ResponseBodyView::DescribeCluster(v) => {
                let mut b = crate::messages::DescribeClusterResponse::from(v);
                (rewrite_list!(route, &mut b.brokers, broker_id), ResponseBody::DescribeCluster(b))
            }
            #[cfg(feature = "api-find-coordinator")]
            ResponseBodyView::FindCoordinator(v) => {
                let mut b = crate::messages::FindCoordinatorResponse::from(v);
                let mut changed = rewrite_list!(route, &mut b.coordinators, node_id);
                // Versions 0-3 answer one coordinator at the top level.
                if v.coordinators().is_empty() {
                    changed |= route_one(route, b.node_id, &mut b.host, &mut b.port);
                }
                (changed, ResponseBody::FindCoordinator(b))
            }
            #[cfg(feature = "api-produce")]
            ResponseBodyView::Produce(v) if !v.node_endpoints().is_empty() => {
                let mut b = crate::messages::ProduceResponse::from(v);
                (rewrite_list!(route, &mut b.node_endpoints, node_id), ResponseBody::Produce(b))
            }
            #[cfg(feature = "api-fetch")]
            ResponseBodyView::Fetch(v) if !v.node_endpoints().is_empty() => {
                let mut b = crate::messages::FetchResponse::from(v);
                (rewrite_list!(route, &mut b.node_endpoints, node_id), ResponseBody::Fetch(b))
            }
            #[cfg(feature = "api-share-fetch")]
            ResponseBodyView::ShareFetch(v) if !v.node_endpoints().is_empty() => {
                let mut b = crate::messages::ShareFetchResponse::from(v);
                (rewrite_list!(route, &mut b.node_endpoints, node_id), ResponseBody::ShareFetch(b))
            }
            #[cfg(feature = "api-share-acknowledge")]
            ResponseBodyView::ShareAcknowledge(v) if !v.node_endpoints().is_empty() => {
                let mut b = crate::messages::ShareAcknowledgeResponse::from(v);
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
}

impl<R: Route> Filter for RewriteAddresses<R> {
    fn wants_request(&self, _: ApiKey, _: i16) -> bool {
        false
    }

    fn wants_response(&self, api_key: ApiKey, version: i16) -> bool {
        let _ = version;
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

    fn on_response<'a>(&mut self, _: &Exchange, response: &Response<'a>) -> ResponseAction<'a> {
        match addresses::rewrite(&mut self.route, response) {
            Some(body) => ResponseAction::Rewrite(body),
            None => ResponseAction::Pass,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::api_versions::ApiVersion;
    use crate::messages::{
        ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, ProduceRequest, ProduceResponse,
    };

    fn request(body: &impl AnyBody, version: i16, correlation_id: i32) -> Vec<u8> {
        let mut buf = vec![0u8; 256];
        let n = dispatch::encode_request(body, version, correlation_id, Some("c"), &mut buf).unwrap();
        buf.truncate(n);
        buf.drain(..4);
        buf
    }

    struct Answer;
    impl Filter for Answer {
        fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
            match request.body.api_key() {
                ApiKey::Produce => RequestAction::Respond(ResponseBody::Produce(ProduceResponse::default())),
                ApiKey::Metadata => RequestAction::Drop,
                _ => RequestAction::Respond(ResponseBody::Produce(ProduceResponse::default())),
            }
        }
    }

    #[test]
    fn answers_drops_and_their_rules() {
        let mut chain = FilterChain::new();
        chain.push(Answer);
        // An answer comes back with the request's correlation id and version.
        let produce = ProduceRequest { acks: -1, timeout_ms: 1000, ..Default::default() };
        let Verdict::Respond(frame) = chain.on_request(&request(&produce, 9, 41)) else { panic!() };
        let response = dispatch::parse_response(&frame, ApiKey::Produce, 9).unwrap();
        assert_eq!(response.header.correlation_id(), 41);
        // Answering acks=0, which expects nothing, drops it.
        let quiet = ProduceRequest { acks: 0, ..Default::default() };
        assert_eq!(chain.on_request(&request(&quiet, 9, 42)), Verdict::Drop);
        // Dropping a request that expects an answer closes instead of leaving a hole.
        assert!(matches!(chain.on_request(&request(&MetadataRequest::default(), 12, 43)), Verdict::Close(_)));
        // An answer of another API is refused.
        assert!(matches!(
            chain.on_request(&request(&ApiVersionsRequest::default(), 3, 44)),
            Verdict::Close(_)
        ));
        // Frames kwire cannot read reach no filter.
        assert_eq!(chain.on_request(&[0, 99, 0, 0, 0, 0, 0, 1, 0xff, 0xff]), Verdict::Forward);
    }

    #[test]
    fn deny_list_hides_apis_from_api_versions() {
        let mut chain = FilterChain::new();
        chain.push(DenyApis::new([ApiKey::Metadata]));
        let keys = [
            ApiVersion { api_key: 3, min_version: 0, max_version: 13, ..Default::default() },
            ApiVersion { api_key: 18, min_version: 0, max_version: 4, ..Default::default() },
        ];
        let body = ApiVersionsResponse { api_keys: List::Borrowed(&keys), ..Default::default() };
        let mut frame = vec![0u8; dispatch::response_len(&body, 3).unwrap()];
        dispatch::encode_response(&body, 3, 5, &mut frame).unwrap();
        let Verdict::Replace(new) = chain.on_response(&frame[4..], ApiKey::ApiVersions, 3) else { panic!() };
        let ResponseBodyView::ApiVersions(v) =
            dispatch::parse_response(&new, ApiKey::ApiVersions, 3).unwrap().body
        else {
            panic!()
        };
        let listed: Vec<i16> = v.api_keys().iter().map(|k| k.api_key()).collect();
        assert_eq!(listed, [18]);
        assert!(matches!(chain.on_request(&request(&MetadataRequest::default(), 12, 1)), Verdict::Close(_)));
        assert_eq!(chain.on_request(&request(&ApiVersionsRequest::default(), 3, 2)), Verdict::Forward);
    }

    /// Requests go first to last, responses last to first; each sees the one before's rewrite.
    #[test]
    fn chain_order() {
        struct Rename(&'static str);
        impl Filter for Rename {
            fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
                let id = alloc::format!("{}+{}", request.header.client_id().unwrap_or(""), self.0);
                RequestAction::RewriteHeader { client_id: Some(id) }
            }
        }
        let mut chain = FilterChain::new();
        chain.push(Rename("a")).push(Rename("b"));
        let Verdict::Replace(new) = chain.on_request(&request(&ApiVersionsRequest::default(), 3, 7)) else {
            panic!()
        };
        let r = dispatch::parse_request(&new).unwrap();
        assert_eq!((r.header.client_id(), r.header.correlation_id()), (Some("c+a+b"), 7));
    }

    /// `BrokerPorts` and `by_node` see each broker's node id: Metadata's brokers,
    /// DescribeCluster's `broker_id`, FindCoordinator's top-level coordinator (v3).
    #[test]
    fn brokers_rewritten_by_node_id() {
        use crate::messages::describe_cluster::DescribeClusterBroker;
        use crate::messages::metadata::MetadataResponseBroker;
        use crate::messages::{DescribeClusterResponse, FindCoordinatorResponse, MetadataResponse};
        let mut chain = FilterChain::new();
        chain.push(RewriteAddresses::with_route(BrokerPorts::new("proxy", 19000)));
        let brokers = [
            MetadataResponseBroker { node_id: 1, host: "b1".into(), port: 9092, ..Default::default() },
            MetadataResponseBroker { node_id: 7, host: "b7".into(), port: 9092, ..Default::default() },
        ];
        let body = MetadataResponse { brokers: (&brokers).into(), ..Default::default() };
        let mut frame = vec![0u8; dispatch::response_len(&body, 12).unwrap()];
        dispatch::encode_response(&body, 12, 5, &mut frame).unwrap();
        let Verdict::Replace(new) = chain.on_response(&frame[4..], ApiKey::Metadata, 12) else { panic!() };
        let ResponseBodyView::Metadata(v) =
            dispatch::parse_response(&new, ApiKey::Metadata, 12).unwrap().body
        else {
            panic!()
        };
        let got: Vec<(i32, &str, i32)> =
            v.brokers().iter().map(|b| (b.node_id(), b.host(), b.port())).collect();
        assert_eq!(got, [(1, "proxy", 19001), (7, "proxy", 19007)]);

        let brokers =
            [DescribeClusterBroker { broker_id: 3, host: "b3".into(), port: 9092, ..Default::default() }];
        let body = DescribeClusterResponse { brokers: (&brokers).into(), ..Default::default() };
        let mut frame = vec![0u8; dispatch::response_len(&body, 1).unwrap()];
        dispatch::encode_response(&body, 1, 6, &mut frame).unwrap();
        let Verdict::Replace(new) = chain.on_response(&frame[4..], ApiKey::DescribeCluster, 1) else {
            panic!()
        };
        let ResponseBodyView::DescribeCluster(v) =
            dispatch::parse_response(&new, ApiKey::DescribeCluster, 1).unwrap().body
        else {
            panic!()
        };
        assert_eq!(v.brokers().iter().next().map(|b| b.port()), Some(19003));

        // A closure of (node, host, port); no coordinator (-1, "", -1) is left alone.
        let mut seen = Vec::new();
        let mut chain = FilterChain::new();
        chain.push(RewriteAddresses::by_node(move |node: i32, host: &str, port: i32| {
            seen.push(node);
            (node >= 0).then(|| (alloc::format!("{host}.proxy"), port + node))
        }));
        for (node, host, port, rewritten) in [(2, "b2", 9092, true), (-1, "", -1, false)] {
            let body =
                FindCoordinatorResponse { node_id: node, host: host.into(), port, ..Default::default() };
            let mut frame = vec![0u8; dispatch::response_len(&body, 3).unwrap()];
            dispatch::encode_response(&body, 3, 7, &mut frame).unwrap();
            match chain.on_response(&frame[4..], ApiKey::FindCoordinator, 3) {
                Verdict::Replace(new) => {
                    assert!(rewritten);
                    let ResponseBodyView::FindCoordinator(v) =
                        dispatch::parse_response(&new, ApiKey::FindCoordinator, 3).unwrap().body
                    else {
                        panic!()
                    };
                    assert_eq!((v.node_id(), v.host(), v.port()), (2, "b2.proxy", 9094));
                }
                v => assert!(!rewritten && v == Verdict::Forward, "{v:?}"),
            }
        }
    }

    #[test]
    fn broker_names_are_one_to_one() {
        let names = BrokerNames::new("Broker-{id}.Kafka.example", "bootstrap.kafka.example").unwrap();
        // Two proxies given the same flags name every broker alike (nothing else is consulted).
        assert_eq!(names, BrokerNames::new("broker-{id}.kafka.example", "BOOTSTRAP.kafka.example").unwrap());
        for id in [0, 1, 2, 9, 10, 99, 1000, 65_535, i32::MAX] {
            let name = names.broker(id).unwrap();
            assert_eq!(name, alloc::format!("broker-{id}.kafka.example"));
            assert_eq!(names.lookup(&name), Some(NameTarget::Broker(id)), "{name}");
            assert_eq!(names.lookup(&name.to_ascii_uppercase()), Some(NameTarget::Broker(id)), "{name}");
        }
        assert_eq!(names.broker(-1), None);
        assert_eq!(names.lookup("bootstrap.kafka.example"), Some(NameTarget::Bootstrap));
        assert_eq!(names.bootstrap(), "bootstrap.kafka.example");
        for other in [
            "broker-.kafka.example",
            "broker-01.kafka.example",
            "broker-00.kafka.example",
            "broker--1.kafka.example",
            "broker-+1.kafka.example",
            "broker-1 .kafka.example",
            "broker-2147483648.kafka.example",
            "broker-1.kafka.example.",
            "broker-1.kafka.examplex",
            "xbroker-1.kafka.example",
            "broker-1",
            "kafka.example",
            "",
            "broker-é.kafka.example",
        ] {
            assert_eq!(names.lookup(other), None, "{other:?}");
        }
        // The id may sit inside a label, at the start or at the end.
        let first = BrokerNames::new("{id}.b.example", "b.example").unwrap();
        assert_eq!(first.lookup("12.b.example"), Some(NameTarget::Broker(12)));
        assert_eq!(first.lookup("b.example"), Some(NameTarget::Bootstrap));
        let last = BrokerNames::new("kafka-b{id}", "kafka").unwrap();
        assert_eq!(last.broker(3).as_deref(), Some("kafka-b3"));
        assert_eq!(last.lookup("kafka-b3"), Some(NameTarget::Broker(3)));
    }

    #[test]
    fn broker_name_patterns_are_checked() {
        assert_eq!(BrokerNames::new("broker.kafka.example", "k.example"), Err(NameError::Placeholder));
        assert_eq!(BrokerNames::new("b{id}-{id}.example", "k.example"), Err(NameError::Placeholder));
        assert!(matches!(BrokerNames::new("b_{id}.example", "k.example"), Err(NameError::NotAHostName(_))));
        assert!(matches!(BrokerNames::new("{id}..example", "k.example"), Err(NameError::NotAHostName(_))));
        assert!(matches!(BrokerNames::new("-{id}.example", "k.example"), Err(NameError::NotAHostName(_))));
        assert!(matches!(BrokerNames::new("b{id}.example", "k .example"), Err(NameError::NotAHostName(_))));
        // A label that fits for id 0 but not for the longest ids.
        let long = alloc::format!("{}{{id}}.example", "a".repeat(55));
        assert!(matches!(BrokerNames::new(&long, "k.example"), Err(NameError::NotAHostName(_))));
        assert_eq!(
            BrokerNames::new("b{id}.example", "b7.example"),
            Err(NameError::BootstrapIsABroker("b7.example".into()))
        );
        // Names that look alike but are no broker's are fine as the bootstrap name.
        assert!(BrokerNames::new("b{id}.example", "b07.example").is_ok());
        assert!(!NameError::Placeholder.to_string().is_empty());
    }

    #[test]
    fn by_name_tells_each_brokers_address() {
        let names = BrokerNames::new("b{id}.example", "example").unwrap();
        let mut learned = Vec::new();
        let mut route =
            ByName::new(names, 443, |id, host: &str, port| learned.push((id, host.to_string(), port)));
        assert_eq!(route.route(3, "10.0.0.3", 9092), Some(("b3.example".to_string(), 443)));
        assert_eq!(route.route(-1, "", -1), None);
        // A broker id without a usable address is still named, but nothing is learned.
        assert_eq!(route.route(4, "", -1), Some(("b4.example".to_string(), 443)));
        assert!(alloc::format!("{route:?}").contains("ByName"));
        drop(route);
        assert_eq!(learned, [(3, "10.0.0.3".to_string(), 9092)]);
        // A plain closure is a route that ignores the node id.
        let mut plain = |host: &str, port: i32| Some((alloc::format!("p-{host}"), port + 1));
        assert_eq!(Route::route(&mut plain, 9, "h", 1), Some(("p-h".to_string(), 2)));
    }

    fn response(body: &impl AnyBody, version: i16) -> Vec<u8> {
        let mut frame = vec![0u8; dispatch::response_len(body, version).unwrap()];
        dispatch::encode_response(body, version, 77, &mut frame).unwrap();
        frame.drain(..4);
        frame
    }

    /// Every address kind, by pattern: Metadata, DescribeCluster, FindCoordinator (the old
    /// single coordinator and the list), and KIP-951 leader hints.
    #[test]
    fn addresses_by_name() {
        use crate::messages::describe_cluster::DescribeClusterBroker;
        use crate::messages::find_coordinator::Coordinator;
        use crate::messages::metadata::MetadataResponseBroker;
        use crate::messages::{DescribeClusterResponse, FindCoordinatorResponse, MetadataResponse};
        use alloc::sync::Arc;
        use core::sync::atomic::{AtomicUsize, Ordering};

        let seen = Arc::new(AtomicUsize::new(0));
        let names = BrokerNames::new("broker-{id}.kafka.example", "kafka.example").unwrap();
        let mut chain = FilterChain::new();
        let count = seen.clone();
        chain.push(RewriteAddresses::with_route(ByName::new(names, 9093, move |_, _: &str, _| {
            count.fetch_add(1, Ordering::Relaxed);
        })));

        let brokers = [
            MetadataResponseBroker { node_id: 1, host: "10.0.0.1".into(), port: 9092, ..Default::default() },
            MetadataResponseBroker {
                node_id: 12,
                host: "b12.internal".into(),
                port: 19092,
                ..Default::default()
            },
        ];
        let frame = response(&MetadataResponse { brokers: (&brokers).into(), ..Default::default() }, 12);
        let Verdict::Replace(new) = chain.on_response(&frame, ApiKey::Metadata, 12) else { panic!() };
        let r = dispatch::parse_response(&new, ApiKey::Metadata, 12).unwrap();
        assert_eq!(r.header.correlation_id(), 77);
        let ResponseBodyView::Metadata(v) = r.body else { panic!() };
        let got: Vec<(i32, &str, i32)> =
            v.brokers().iter().map(|b| (b.node_id(), b.host(), b.port())).collect();
        assert_eq!(got, [(1, "broker-1.kafka.example", 9093), (12, "broker-12.kafka.example", 9093)]);

        let brokers =
            [DescribeClusterBroker { broker_id: 3, host: "h3".into(), port: 9000, ..Default::default() }];
        let frame =
            response(&DescribeClusterResponse { brokers: (&brokers).into(), ..Default::default() }, 1);
        let Verdict::Replace(new) = chain.on_response(&frame, ApiKey::DescribeCluster, 1) else { panic!() };
        let ResponseBodyView::DescribeCluster(v) =
            dispatch::parse_response(&new, ApiKey::DescribeCluster, 1).unwrap().body
        else {
            panic!()
        };
        let b = v.brokers().iter().next().unwrap();
        assert_eq!((b.broker_id(), b.host(), b.port()), (3, "broker-3.kafka.example", 9093));

        // Version 3: one coordinator at the top level; with none (-1, "", -1) it is kept.
        let one = FindCoordinatorResponse { node_id: 5, host: "h5".into(), port: 9005, ..Default::default() };
        let Verdict::Replace(new) = chain.on_response(&response(&one, 3), ApiKey::FindCoordinator, 3) else {
            panic!()
        };
        let ResponseBodyView::FindCoordinator(v) =
            dispatch::parse_response(&new, ApiKey::FindCoordinator, 3).unwrap().body
        else {
            panic!()
        };
        assert_eq!((v.node_id(), v.host(), v.port()), (5, "broker-5.kafka.example", 9093));
        let none = FindCoordinatorResponse {
            node_id: -1,
            host: "".into(),
            port: -1,
            error_code: 15,
            ..Default::default()
        };
        assert_eq!(chain.on_response(&response(&none, 3), ApiKey::FindCoordinator, 3), Verdict::Forward);
        // Version 4+: a list, one of them without a coordinator.
        let coordinators = [
            Coordinator { key: "g1".into(), node_id: 2, host: "h2".into(), port: 9002, ..Default::default() },
            Coordinator {
                key: "g2".into(),
                node_id: -1,
                host: "".into(),
                port: -1,
                error_code: 15,
                ..Default::default()
            },
        ];
        let list = FindCoordinatorResponse { coordinators: (&coordinators).into(), ..Default::default() };
        let Verdict::Replace(new) = chain.on_response(&response(&list, 6), ApiKey::FindCoordinator, 6) else {
            panic!()
        };
        let ResponseBodyView::FindCoordinator(v) =
            dispatch::parse_response(&new, ApiKey::FindCoordinator, 6).unwrap().body
        else {
            panic!()
        };
        let got: Vec<(i32, &str, i32)> =
            v.coordinators().iter().map(|c| (c.node_id(), c.host(), c.port())).collect();
        assert_eq!(got, [(2, "broker-2.kafka.example", 9093), (-1, "", -1)]);

        // Leader hints of Produce (KIP-951).
        use crate::messages::produce::NodeEndpoint;
        let hints = [NodeEndpoint { node_id: 4, host: "h4".into(), port: 9004, ..Default::default() }];
        let produce = ProduceResponse { node_endpoints: (&hints).into(), ..Default::default() };
        let Verdict::Replace(new) = chain.on_response(&response(&produce, 10), ApiKey::Produce, 10) else {
            panic!()
        };
        let ResponseBodyView::Produce(v) = dispatch::parse_response(&new, ApiKey::Produce, 10).unwrap().body
        else {
            panic!()
        };
        let e = v.node_endpoints().iter().next().unwrap();
        assert_eq!((e.node_id(), e.host(), e.port()), (4, "broker-4.kafka.example", 9093));

        // Each broker's own address was told, none for "no coordinator".
        assert_eq!(seen.load(Ordering::Relaxed), 6);
        // Already named so: passed on without encoding again.
        let frame = response(
            &MetadataResponse {
                brokers: (&[MetadataResponseBroker {
                    node_id: 1,
                    host: "broker-1.kafka.example".into(),
                    port: 9093,
                    ..Default::default()
                }])
                    .into(),
                ..Default::default()
            },
            12,
        );
        assert_eq!(chain.on_response(&frame, ApiKey::Metadata, 12), Verdict::Forward);
    }
}
