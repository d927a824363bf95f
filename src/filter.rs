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
//! rule of a port per broker by node id, the same in every proxy instance), and
//! [`redact_request`] / [`redact_response`], the masking of secrets in copies of frames
//! for logs and recordings (see [`crate::secrets`]).
//!
//! A filter of your own, which counts requests per API and renames one client:
//!
//! ```
//! use std::collections::BTreeMap;
//! use kwire::dispatch::Request;
//! use kwire::filter::{Filter, FilterChain, RequestAction, Verdict};
//! use kwire::messages::{ApiKey, ApiVersionsRequest, RequestBody};
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

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write as _;

use crate::conn::expects_response;
use crate::dispatch::{self, Request, Response};
use crate::encode::AnyBody;
use crate::frame::{RequestHeader, RequestHeaderView};
use crate::messages::{ApiKey, RequestBody, ResponseBody, ResponseBodyView};
use crate::types::{List, RawTaggedField, Str};

pub use crate::secrets::{redact_request, redact_response};

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
                    new.write(&mut w, key.key(), version, header_version);
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
/// use kwire::messages::{ApiKey, DeleteTopicsRequest};
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
        if !view.api_keys().iter().any(|k| self.denied.iter().any(|d| d.key() == k.api_key())) {
            return ResponseAction::Pass;
        }
        let _ = exchange;
        let mut body = crate::messages::ApiVersionsResponse::from(view);
        let keys: Vec<_> = body
            .api_keys
            .iter()
            .filter(|k| !self.denied.iter().any(|d| d.key() == k.api_key))
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
/// use kwire::messages::{ApiKey, MetadataResponse, metadata::MetadataResponseBroker};
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

impl RewriteAddresses<BrokerPorts> {
    /// Rewrites by the port-per-broker rule `ports` ([`BrokerPorts`]).
    pub fn with_ports(ports: BrokerPorts) -> Self {
        RewriteAddresses { route: ports }
    }
}

/// Where [`RewriteAddresses`] sends a broker: implemented for closures of `(host, port)`,
/// for [`ByNode`] closures of `(node_id, host, port)` and for [`BrokerPorts`].
pub trait Route {
    /// The address to write for broker `node_id` at `host:port` (`None` keeps it).
    fn route(&mut self, node_id: i32, host: &str, port: i32) -> Option<(String, i32)>;
}

impl<F: FnMut(&str, i32) -> Option<(String, i32)>> Route for F {
    fn route(&mut self, _: i32, host: &str, port: i32) -> Option<(String, i32)> {
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

impl<F> core::fmt::Debug for RewriteAddresses<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("RewriteAddresses")
    }
}

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

impl<F: Route> Filter for RewriteAddresses<F> {
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
        let route = &mut self.route;
        // Cheap checks on the view first: most Produce and Fetch responses carry no hints.
        let (changed, body) = match response.body {
            #[cfg(feature = "api-metadata")]
            ResponseBodyView::Metadata(v) => {
                let mut b = crate::messages::MetadataResponse::from(v);
                (rewrite_list!(route, &mut b.brokers), ResponseBody::Metadata(b))
            }
            #[cfg(feature = "api-describe-cluster")]
            ResponseBodyView::DescribeCluster(v) => {
                let mut b = crate::messages::DescribeClusterResponse::from(v);
                (rewrite_list!(route, &mut b.brokers, broker_id), ResponseBody::DescribeCluster(b))
            }
            #[cfg(feature = "api-find-coordinator")]
            ResponseBodyView::FindCoordinator(v) => {
                let mut b = crate::messages::FindCoordinatorResponse::from(v);
                let mut changed = rewrite_list!(route, &mut b.coordinators);
                // Versions 0-3 answer one coordinator at the top level.
                if v.coordinators().is_empty() {
                    changed |= route_one(route, b.node_id, &mut b.host, &mut b.port);
                }
                (changed, ResponseBody::FindCoordinator(b))
            }
            #[cfg(feature = "api-produce")]
            ResponseBodyView::Produce(v) if !v.node_endpoints().is_empty() => {
                let mut b = crate::messages::ProduceResponse::from(v);
                (rewrite_list!(route, &mut b.node_endpoints), ResponseBody::Produce(b))
            }
            #[cfg(feature = "api-fetch")]
            ResponseBodyView::Fetch(v) if !v.node_endpoints().is_empty() => {
                let mut b = crate::messages::FetchResponse::from(v);
                (rewrite_list!(route, &mut b.node_endpoints), ResponseBody::Fetch(b))
            }
            #[cfg(feature = "api-share-fetch")]
            ResponseBodyView::ShareFetch(v) if !v.node_endpoints().is_empty() => {
                let mut b = crate::messages::ShareFetchResponse::from(v);
                (rewrite_list!(route, &mut b.node_endpoints), ResponseBody::ShareFetch(b))
            }
            #[cfg(feature = "api-share-acknowledge")]
            ResponseBodyView::ShareAcknowledge(v) if !v.node_endpoints().is_empty() => {
                let mut b = crate::messages::ShareAcknowledgeResponse::from(v);
                (rewrite_list!(route, &mut b.node_endpoints), ResponseBody::ShareAcknowledge(b))
            }
            _ => return ResponseAction::Pass,
        };
        if changed { ResponseAction::Rewrite(body) } else { ResponseAction::Pass }
    }
}

/// Masks the secrets of a frame copy for a log or a recording: [`redact_request`] or
/// [`redact_response`] by direction (`response_to` is the request's API key and version).
pub fn redact<'f>(
    frame: &'f [u8],
    response_to: Option<(i16, i16)>,
) -> (Cow<'f, [u8]>, crate::secrets::Redaction) {
    match response_to {
        None => redact_request(frame),
        Some((key, version)) => redact_response(frame, key, version),
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
        chain.push(RewriteAddresses::with_ports(BrokerPorts::new("proxy", 19000)));
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
}
