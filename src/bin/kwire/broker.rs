//! How `kwire serve` answers requests: ApiVersions, Metadata, ListGroups and ListOffsets
//! from a catalogue, built on kwire's views and encoders.
//!
//! A [`Handler`] serves one connection. It keeps its output buffer and the vectors it
//! builds responses in from one request to the next, so that once warm a request costs no
//! allocation (see the test at the bottom).

use kwire::conn::Received;
use kwire::dispatch;
use kwire::messages::api_versions::{ApiVersion, ApiVersionsResponse};
use kwire::messages::list_groups::{ListGroupsRequestView, ListGroupsResponse, ListedGroup};
use kwire::messages::list_offsets::{
    ListOffsetsPartitionResponse, ListOffsetsPartitionView, ListOffsetsRequestView, ListOffsetsResponse,
    ListOffsetsTopicResponse,
};
use kwire::messages::metadata::{
    MetadataRequestView, MetadataResponse, MetadataResponseBroker, MetadataResponsePartition,
    MetadataResponseTopic,
};
use kwire::messages::sasl_authenticate::SaslAuthenticateResponse;
use kwire::messages::sasl_handshake::SaslHandshakeResponse;
use kwire::messages::{ApiKey, RequestBodyView};
use kwire::{AnyBody, ErrorCode, List, Str, Uuid, Versions};

use crate::catalog::{Catalog, Partition, Topic};

/// Operations a client may perform on a topic, as Kafka's bit field of ACL operations:
/// READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
const TOPIC_OPERATIONS: i32 =
    (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11);
/// Operations on the cluster: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
/// ALTER_CONFIGS, IDEMPOTENT_WRITE.
const CLUSTER_OPERATIONS: i32 = (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);

/// The APIs the demo broker answers; it advertises only these.
pub const SERVED: &[ApiKey] =
    &[ApiKey::ListOffsets, ApiKey::Metadata, ApiKey::ListGroups, ApiKey::ApiVersions];

/// The SASL APIs, answered (and advertised) when the catalogue has users.
pub const SASL: &[ApiKey] = &[ApiKey::SaslHandshake, ApiKey::SaslAuthenticate];

/// What the server knows and advertises; shared, read-only, by every connection.
pub struct Broker {
    catalog: Catalog,
    topic_ids: Vec<Uuid>,
    /// Metadata partitions of each topic, built once: they do not depend on the request.
    partitions: Vec<Vec<MetadataResponsePartition<'static>>>,
    host: String,
    port: i32,
    /// The highest version served for each API (lower than kwire's when limited).
    max_versions: Vec<(ApiKey, i16)>,
    /// The APIs served: [`SERVED`], and [`SASL`] with users.
    served: Vec<ApiKey>,
}

impl Broker {
    /// A broker answering from `catalog`, advertising `host:port`, and serving at most
    /// the versions in `limits`.
    pub fn new(
        catalog: Catalog,
        host: String,
        port: i32,
        limits: &[(ApiKey, i16)],
    ) -> Result<Broker, String> {
        let topic_ids = catalog.topics.iter().map(|t| t.id().map(Uuid)).collect::<Result<Vec<_>, _>>()?;
        let node = catalog.node_id;
        let replicas: &'static [i32] = Box::leak(Box::new([node]));
        let partitions = catalog
            .topics
            .iter()
            .map(|t| {
                (0..t.partitions.len())
                    .map(|i| MetadataResponsePartition {
                        partition_index: i as i32,
                        leader_id: node,
                        leader_epoch: t.partitions[i].leader_epoch,
                        replica_nodes: List::Borrowed(replicas),
                        isr_nodes: List::Borrowed(replicas),
                        ..Default::default()
                    })
                    .collect()
            })
            .collect();
        let served: Vec<ApiKey> =
            SERVED.iter().chain(if catalog.users.is_empty() { &[][..] } else { SASL }).copied().collect();
        let max_versions = served
            .iter()
            .map(|&key| {
                let max = key.request_versions().max;
                let limit = limits.iter().find(|(k, _)| *k == key).map_or(max, |(_, v)| (*v).min(max));
                (key, limit)
            })
            .collect();
        Ok(Broker { catalog, topic_ids, partitions, host, port, max_versions, served })
    }

    /// The APIs served, in the order they are advertised.
    pub fn served(&self) -> &[ApiKey] {
        &self.served
    }

    /// Whether `token` is a SASL/PLAIN token (`authzid NUL user NUL password`) of a user
    /// of the catalogue. The token is a secret (`kwire::secrets`): it is compared, never
    /// kept, logged or echoed, and a failure answers with a fixed message naming no user.
    fn plain_ok(&self, token: &[u8]) -> bool {
        let mut parts = token.split(|&b| b == 0);
        let (Some(_authzid), Some(user), Some(password), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        self.catalog.users.iter().any(|u| u.name.as_bytes() == user && u.password.as_bytes() == password)
    }

    /// The versions served for `key`.
    pub fn versions(&self, key: ApiKey) -> Versions {
        let max = self.max_versions.iter().find(|(k, _)| *k == key).map_or(-1, |(_, v)| *v);
        Versions::new(key.request_versions().min, max)
    }

    fn topic_index(&self, name: &str) -> Option<usize> {
        self.catalog.topics.iter().position(|t| t.name == name)
    }
}

/// What to do after a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Send the first `n` bytes of [`Handler::output`].
    Reply(usize),
    /// Close the connection, for this reason.
    Close(String),
}

/// Serves one connection.
pub struct Handler<'b> {
    broker: &'b Broker,
    out: Vec<u8>,
    // Vectors reused from request to request (see `recycle`).
    offsets: Vec<ListOffsetsPartitionResponse<'static>>,
    offset_topics: Vec<ListOffsetsTopicResponse<'static>>,
    groups: Vec<ListedGroup<'b>>,
    metadata_topics: Vec<MetadataResponseTopic<'static>>,
    api_keys: Vec<ApiVersion<'static>>,
    ignored_trailing_bytes: usize,
    /// After a SaslHandshake v0 for PLAIN: the next frame is the raw PLAIN token.
    raw_sasl: bool,
}

/// `v`'s allocation, emptied, for elements of another lifetime. Collecting a `map` over
/// `into_iter` of a vector into a vector of a type with the same size and alignment
/// reuses the allocation; the vector is empty, so the closure never runs.
fn recycle<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter().map(|_| unreachable!("the vector is empty")).collect()
}

fn outcome(result: Result<usize, String>) -> Outcome {
    match result {
        Ok(n) => Outcome::Reply(n),
        Err(e) => Outcome::Close(e),
    }
}

impl<'b> Handler<'b> {
    pub fn new(broker: &'b Broker) -> Self {
        Handler {
            broker,
            out: Vec::new(),
            offsets: Vec::new(),
            offset_topics: Vec::new(),
            groups: Vec::new(),
            metadata_topics: Vec::new(),
            api_keys: Vec::new(),
            ignored_trailing_bytes: 0,
            raw_sasl: false,
        }
    }

    /// Whether the next frame is a raw SASL token (after a SaslHandshake v0), not a Kafka
    /// request.
    pub fn expects_raw_sasl(&self) -> bool {
        self.raw_sasl
    }

    /// The response written by the last [`Outcome::Reply`].
    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// How many bytes after the body of the last request were ignored (see [`Handler::handle`]).
    pub fn ignored_trailing_bytes(&self) -> usize {
        self.ignored_trailing_bytes
    }

    /// Answers a raw SASL/PLAIN token, the frame after a SaslHandshake v0 for PLAIN (see
    /// [`Handler::expects_raw_sasl`]): an empty token back on success; a failure closes
    /// the connection, as Kafka does.
    pub fn raw_token(&mut self, token: &[u8]) -> Outcome {
        self.raw_sasl = false;
        if !self.broker.plain_ok(token) {
            return Outcome::Close("SASL/PLAIN authentication failed (v0 handshake)".into());
        }
        if self.out.len() < 4 {
            self.out.resize(4, 0);
        }
        self.out[..4].fill(0);
        Outcome::Reply(4)
    }

    /// Answers one request, as `kwire::conn::ServerConn` read it.
    ///
    /// Bytes after the end of a request body are ignored, as Apache Kafka ignores them (it
    /// reads a body up to its end and never looks at the rest of the frame): librdkafka
    /// 2.16 sends three stray bytes after the body of its all-topics Metadata v9+
    /// requests. [`Handler::ignored_trailing_bytes`] tells how many were ignored.
    pub fn handle(&mut self, received: Received<'_>) -> Outcome {
        self.ignored_trailing_bytes = 0;
        let request = match received {
            Received::Request(r) => r,
            Received::ApiVersionsUnsupported { reply_to, .. } => {
                return outcome(self.unsupported_api_versions(reply_to.correlation_id));
            }
            _ => return Outcome::Close("unexpected input".into()),
        };
        self.ignored_trailing_bytes = request.trailing_bytes;
        let version = request.header.api_version();
        let correlation_id = request.header.correlation_id();
        let key = request.body.api_key();
        if !self.broker.versions(key).contains(version) {
            if key == ApiKey::ApiVersions {
                return outcome(self.unsupported_api_versions(correlation_id));
            }
            return Outcome::Close(format!(
                "{} v{version} is above the limit this server was given",
                key.name()
            ));
        }
        let result = match request.body {
            RequestBodyView::ApiVersions(_) => self.api_versions(version, correlation_id),
            RequestBodyView::Metadata(body) => self.metadata(body, version, correlation_id),
            RequestBodyView::ListGroups(body) => self.list_groups(body, version, correlation_id),
            RequestBodyView::ListOffsets(body) => self.list_offsets(body, version, correlation_id),
            RequestBodyView::SaslHandshake(body) if self.broker.served.contains(&key) => {
                let accepted = body.mechanism() == "PLAIN";
                self.raw_sasl = accepted && version == 0;
                let mechanisms = [Str::Borrowed("PLAIN")];
                let error_code = if accepted { 0 } else { ErrorCode::UnsupportedSaslMechanism.code() };
                let body = SaslHandshakeResponse { error_code, mechanisms: List::Borrowed(&mechanisms) };
                Self::encode(&mut self.out, &body, version, correlation_id)
            }
            RequestBodyView::SaslAuthenticate(body) if self.broker.served.contains(&key) => {
                let body = if self.broker.plain_ok(body.auth_bytes()) {
                    SaslAuthenticateResponse { error_message: None, ..Default::default() }
                } else {
                    SaslAuthenticateResponse {
                        error_code: ErrorCode::SaslAuthenticationFailed.code(),
                        error_message: Some(Str::Borrowed(
                            "Authentication failed: invalid username or password",
                        )),
                        ..Default::default()
                    }
                };
                Self::encode(&mut self.out, &body, version, correlation_id)
            }
            _ => Err(format!("{} is not served", key.name())),
        };
        outcome(result)
    }

    /// Encodes a response frame into the reused output buffer.
    fn encode(
        out: &mut Vec<u8>,
        body: &impl AnyBody,
        version: i16,
        correlation_id: i32,
    ) -> Result<usize, String> {
        let n =
            dispatch::response_len(body, version).map_err(|e| format!("cannot encode the response: {e}"))?;
        if out.len() < n {
            out.resize(n, 0);
        }
        dispatch::encode_response(body, version, correlation_id, out)
            .map_err(|e| format!("cannot encode the response: {e}"))
    }

    /// The answer to an ApiVersions request of a version this server does not serve: error
    /// 35 in a version-0 body listing the ApiVersions versions it does serve, as Apache
    /// Kafka brokers answer, so that any client can read it and retry lower.
    fn unsupported_api_versions(&mut self, correlation_id: i32) -> Result<usize, String> {
        let range = self.broker.versions(ApiKey::ApiVersions);
        let keys = [ApiVersion {
            api_key: ApiKey::ApiVersions.key(),
            min_version: range.min,
            max_version: range.max,
            ..Default::default()
        }];
        let body = ApiVersionsResponse {
            error_code: ErrorCode::UnsupportedVersion.code(),
            api_keys: List::Borrowed(&keys),
            ..Default::default()
        };
        Self::encode(&mut self.out, &body, 0, correlation_id)
    }

    fn api_versions(&mut self, version: i16, correlation_id: i32) -> Result<usize, String> {
        let mut keys = std::mem::take(&mut self.api_keys);
        keys.clear();
        for &key in &self.broker.served {
            let range = self.broker.versions(key);
            keys.push(ApiVersion {
                api_key: key.key(),
                min_version: range.min,
                max_version: range.max,
                ..Default::default()
            });
        }
        let body = ApiVersionsResponse { api_keys: List::Borrowed(&keys), ..Default::default() };
        let n = Self::encode(&mut self.out, &body, version, correlation_id);
        self.api_keys = keys;
        n
    }

    fn list_groups(
        &mut self,
        req: ListGroupsRequestView<'_>,
        version: i16,
        correlation_id: i32,
    ) -> Result<usize, String> {
        let mut groups = std::mem::take(&mut self.groups);
        groups.clear();
        let states = req.states_filter();
        let types = req.types_filter();
        'groups: for g in &self.broker.catalog.groups {
            for (filter, value) in [(states, &g.state), (types, &g.group_type)] {
                if filter.is_empty() {
                    continue;
                }
                let mut matched = false;
                for wanted in filter {
                    matched |= wanted.eq_ignore_ascii_case(value);
                }
                if !matched {
                    continue 'groups;
                }
            }
            groups.push(ListedGroup {
                group_id: Str::Borrowed(&g.id),
                protocol_type: Str::Borrowed(&g.protocol_type),
                group_state: Str::Borrowed(&g.state),
                group_type: Str::Borrowed(&g.group_type),
                ..Default::default()
            });
        }
        let body = ListGroupsResponse { groups: List::Borrowed(&groups), ..Default::default() };
        let n = Self::encode(&mut self.out, &body, version, correlation_id);
        self.groups = groups;
        n
    }

    fn list_offsets(
        &mut self,
        req: ListOffsetsRequestView<'_>,
        version: i16,
        correlation_id: i32,
    ) -> Result<usize, String> {
        let isolation = req.isolation_level();
        let mut offsets = std::mem::take(&mut self.offsets);
        offsets.clear();
        for topic in req.topics() {
            let known = self.broker.catalog.topic(topic.name());
            for p in topic.partitions() {
                offsets.push(lookup(known, p, isolation, version));
            }
        }
        let mut topics: Vec<ListOffsetsTopicResponse<'_>> = recycle(std::mem::take(&mut self.offset_topics));
        let mut start = 0;
        for topic in req.topics() {
            let end = start + topic.partitions().len();
            topics.push(ListOffsetsTopicResponse {
                name: Str::Borrowed(topic.name()),
                partitions: List::Borrowed(&offsets[start..end]),
                ..Default::default()
            });
            start = end;
        }
        let body = ListOffsetsResponse { topics: List::Borrowed(&topics), ..Default::default() };
        let n = Self::encode(&mut self.out, &body, version, correlation_id);
        self.offset_topics = recycle(topics);
        self.offsets = offsets;
        n
    }

    fn metadata(
        &mut self,
        req: MetadataRequestView<'_>,
        version: i16,
        correlation_id: i32,
    ) -> Result<usize, String> {
        let broker = self.broker;
        let operations = if req.include_topic_authorized_operations() { TOPIC_OPERATIONS } else { i32::MIN };
        let mut topics: Vec<MetadataResponseTopic<'_>> = recycle(std::mem::take(&mut self.metadata_topics));
        let described = |i: usize| MetadataResponseTopic {
            name: Some(Str::Borrowed(&broker.catalog.topics[i].name)),
            topic_id: broker.topic_ids[i],
            is_internal: broker.catalog.topics[i].internal,
            partitions: List::Borrowed(&broker.partitions[i]),
            topic_authorized_operations: operations,
            ..Default::default()
        };
        match req.topics() {
            // Every topic: null from version 1, an empty list in version 0.
            None => topics.extend((0..broker.catalog.topics.len()).map(described)),
            Some(list) if list.is_empty() && version == 0 => {
                topics.extend((0..broker.catalog.topics.len()).map(described))
            }
            Some(list) => {
                for t in list {
                    let found = match t.name() {
                        Some(name) => broker.topic_index(name),
                        None => broker.topic_ids.iter().position(|id| *id == t.topic_id()),
                    };
                    topics.push(match (found, t.name()) {
                        (Some(i), _) => described(i),
                        (None, Some(name)) => MetadataResponseTopic {
                            error_code: ErrorCode::UnknownTopicOrPartition.code(),
                            name: Some(Str::Borrowed(name)),
                            topic_authorized_operations: operations,
                            ..Default::default()
                        },
                        (None, None) => MetadataResponseTopic {
                            error_code: ErrorCode::UnknownTopicId.code(),
                            name: None,
                            topic_id: t.topic_id(),
                            topic_authorized_operations: operations,
                            ..Default::default()
                        },
                    });
                }
            }
        }
        let brokers = [MetadataResponseBroker {
            node_id: broker.catalog.node_id,
            host: Str::Borrowed(&broker.host),
            port: broker.port,
            ..Default::default()
        }];
        let body = MetadataResponse {
            brokers: List::Borrowed(&brokers),
            cluster_id: Some(Str::Borrowed(&broker.catalog.cluster_id)),
            controller_id: broker.catalog.node_id,
            topics: List::Borrowed(&topics),
            cluster_authorized_operations: if (8..=10).contains(&version)
                && req.include_cluster_authorized_operations()
            {
                CLUSTER_OPERATIONS
            } else {
                i32::MIN
            },
            ..Default::default()
        };
        let n = Self::encode(&mut self.out, &body, version, correlation_id);
        self.metadata_topics = recycle(topics);
        n
    }
}

/// The answer for one partition of a ListOffsets request, following Apache Kafka: -1
/// latest (the high watermark, or the last stable offset for read_committed), -2 earliest,
/// -3 the record with the largest timestamp, -4 earliest on local disk, -5 latest in tiered
/// storage, and a timestamp finds the first record at or after it. Lookups other than
/// latest, earliest and earliest-local only see offsets below the latest visible one; when
/// nothing is found the offset and timestamp are -1.
fn lookup(
    topic: Option<&Topic>,
    p: ListOffsetsPartitionView<'_>,
    isolation: i8,
    version: i16,
) -> ListOffsetsPartitionResponse<'static> {
    let index = p.partition_index();
    let mut out = ListOffsetsPartitionResponse { partition_index: index, ..Default::default() };
    let partition: Option<&Partition> =
        topic.and_then(|t| usize::try_from(index).ok().and_then(|i| t.partitions.get(i)));
    let Some(part) = partition else {
        out.error_code = ErrorCode::UnknownTopicOrPartition.code();
        return out;
    };
    let requested_epoch = p.current_leader_epoch();
    if requested_epoch >= 0 && requested_epoch < part.leader_epoch {
        out.error_code = ErrorCode::FencedLeaderEpoch.code();
        return out;
    }
    if requested_epoch > part.leader_epoch {
        out.error_code = ErrorCode::UnknownLeaderEpoch.code();
        return out;
    }
    let visible = if isolation == 1 { part.last_stable_offset() } else { part.high_watermark() };
    let found: Option<(i64, i64)> = match p.timestamp() {
        -1 => Some((-1, visible)),
        -2 => Some((-1, part.log_start_offset)),
        -4 => Some((-1, part.local_log_start_offset())),
        -5 => Some((-1, part.last_tiered_offset)).filter(|&(_, o)| o < visible),
        -3 => {
            let mut best: Option<(i64, i64)> = None;
            for &(offset, ts) in &part.records {
                if offset >= part.log_start_offset && best.is_none_or(|(t, _)| ts > t) {
                    best = Some((ts, offset));
                }
            }
            best.filter(|&(_, o)| o < visible)
        }
        t if t >= 0 => part
            .records
            .iter()
            .find(|&&(offset, ts)| offset >= part.log_start_offset && ts >= t)
            .map(|&(offset, ts)| (ts, offset))
            .filter(|&(_, o)| o < visible),
        _ => None,
    };
    if let Some((timestamp, offset)) = found {
        out.timestamp = timestamp;
        out.offset = offset;
        if version >= 4 {
            out.leader_epoch = part.leader_epoch;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kwire::conn::{ConnError, ServerConn};
    use kwire::frame::FrameError;
    use kwire::messages::list_offsets::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
    use kwire::messages::{
        ApiVersionsRequest, ListGroupsRequest, MetadataRequest, ResponseBodyView,
        metadata::MetadataRequestTopic,
    };
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    struct Counting;
    thread_local! {
        static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    }
    // SAFETY: forwards to the system allocator unchanged; only counts calls.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
            // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: `ptr` came from `System.alloc` with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
            // SAFETY: as for `alloc` and `dealloc`.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }
    #[global_allocator]
    static GLOBAL: Counting = Counting;

    fn broker() -> Broker {
        Broker::new(Catalog::demo(), "127.0.0.1".into(), 9092, &[]).unwrap()
    }

    fn request(body: &impl AnyBody, version: i16) -> Vec<u8> {
        let mut buf = vec![0; 4096];
        let n = dispatch::encode_request(body, version, 7, Some("test"), &mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    fn handle(h: &mut Handler<'_>, frame_bytes: &[u8]) -> Result<Outcome, ConnError> {
        let mut conn = ServerConn::new();
        assert_eq!(conn.feed(frame_bytes), frame_bytes.len());
        let received = conn.next_request()?.expect("a whole frame");
        Ok(h.handle(received))
    }

    fn answer<'h>(h: &'h mut Handler<'_>, frame_bytes: &[u8]) -> &'h [u8] {
        match handle(h, frame_bytes).expect("read") {
            Outcome::Reply(n) => &h.output()[4..n],
            Outcome::Close(why) => panic!("closed: {why}"),
        }
    }

    fn offsets_request(timestamp: i64, isolation: i8) -> Vec<u8> {
        let parts = [0, 1, 2, 7].map(|i| ListOffsetsPartition {
            partition_index: i,
            timestamp,
            ..Default::default()
        });
        let topics = [
            ListOffsetsTopic { name: "orders".into(), partitions: (&parts).into(), ..Default::default() },
            ListOffsetsTopic { name: "nope".into(), partitions: (&parts[..1]).into(), ..Default::default() },
        ];
        request(
            &ListOffsetsRequest {
                isolation_level: isolation,
                topics: (&topics).into(),
                ..Default::default()
            },
            9,
        )
    }

    /// (error, timestamp, offset) for each partition of the answer.
    fn offsets(broker: &Broker, timestamp: i64, isolation: i8) -> Vec<(i16, i64, i64)> {
        let mut h = Handler::new(broker);
        let req = offsets_request(timestamp, isolation);
        let resp = answer(&mut h, &req);
        let parsed = dispatch::parse_response(resp, ApiKey::ListOffsets, 9).unwrap();
        let ResponseBodyView::ListOffsets(body) = parsed.body else { panic!() };
        let mut out = Vec::new();
        for t in body.topics() {
            for p in t.partitions() {
                out.push((p.error_code(), p.timestamp(), p.offset()));
            }
        }
        out
    }

    #[test]
    fn list_offsets_follows_kafka() {
        let b = broker();
        const T0: i64 = 1_700_000_000_000;
        // orders/0: records 0..=4, hw 5, lso 4; orders/1: log start 100, local 120, tiered
        // 119, records 100, 120, 121; orders/2: empty; orders/7 and nope/0 do not exist.
        let unknown = (3, -1, -1);
        assert_eq!(offsets(&b, -1, 0), [(0, -1, 5), (0, -1, 122), (0, -1, 0), unknown, unknown]);
        assert_eq!(offsets(&b, -1, 1), [(0, -1, 4), (0, -1, 122), (0, -1, 0), unknown, unknown]);
        assert_eq!(offsets(&b, -2, 0), [(0, -1, 0), (0, -1, 100), (0, -1, 0), unknown, unknown]);
        assert_eq!(offsets(&b, -4, 0), [(0, -1, 0), (0, -1, 120), (0, -1, 0), unknown, unknown]);
        assert_eq!(offsets(&b, -5, 0)[..3], [(0, -1, -1), (0, -1, 119), (0, -1, -1)]);
        assert_eq!(offsets(&b, -3, 0)[..3], [(0, T0 + 9000, 4), (0, T0 + 7500, 121), (0, -1, -1)]);
        // As in Kafka, the record with the largest timestamp is found first and then hidden
        // if it is not visible: read_committed cannot see offset 4 (the last stable offset).
        assert_eq!(offsets(&b, -3, 1)[..1], [(0, -1, -1)]);
        assert_eq!(offsets(&b, T0 + 2000, 0)[..3], [(0, T0 + 5000, 2), (0, T0 + 2500, 120), (0, -1, -1)]);
        assert_eq!(offsets(&b, T0 + 6000, 1)[..1], [(0, -1, -1)], "offset 4 is above the last stable offset");
    }

    #[test]
    fn fenced_and_unknown_leader_epochs() {
        let b = broker();
        let mut h = Handler::new(&b);
        for (epoch, code) in [(2, 74), (4, 75), (3, 0), (-1, 0)] {
            let parts =
                [ListOffsetsPartition { current_leader_epoch: epoch, timestamp: -1, ..Default::default() }];
            let topics = [ListOffsetsTopic {
                name: "orders".into(),
                partitions: (&parts).into(),
                ..Default::default()
            }];
            let req = request(&ListOffsetsRequest { topics: (&topics).into(), ..Default::default() }, 10);
            let resp = answer(&mut h, &req);
            let ResponseBodyView::ListOffsets(body) =
                dispatch::parse_response(resp, ApiKey::ListOffsets, 10).unwrap().body
            else {
                panic!()
            };
            let p = body.topics().iter().next().unwrap().partitions().iter().next().unwrap();
            assert_eq!(p.error_code(), code, "current leader epoch {epoch}");
        }
    }

    #[test]
    fn list_groups_filters() {
        let b = broker();
        let mut h = Handler::new(&b);
        let ids = |h: &mut Handler<'_>, states: &[&str], types: &[&str]| -> Vec<String> {
            let states: Vec<Str> = states.iter().map(|s| Str::Borrowed(s)).collect();
            let types: Vec<Str> = types.iter().map(|s| Str::Borrowed(s)).collect();
            let req = ListGroupsRequest {
                states_filter: (&states[..]).into(),
                types_filter: (&types[..]).into(),
                ..Default::default()
            };
            let resp = answer(h, &request(&req, 5)).to_vec();
            let ResponseBodyView::ListGroups(body) =
                dispatch::parse_response(&resp, ApiKey::ListGroups, 5).unwrap().body
            else {
                panic!()
            };
            body.groups().iter().map(|g| g.group_id().to_string()).collect()
        };
        assert_eq!(ids(&mut h, &[], &[]), ["billing", "audit", "shipping", "connect-cluster"]);
        assert_eq!(ids(&mut h, &["stable"], &[]), ["billing", "shipping"]);
        assert_eq!(ids(&mut h, &["Stable", "Empty"], &["classic"]), ["billing", "audit"]);
        assert_eq!(ids(&mut h, &[], &["consumer"]), ["shipping"]);
    }

    #[test]
    fn api_versions_above_the_limit_get_error_35_in_a_v0_body() {
        let b = Broker::new(Catalog::demo(), "127.0.0.1".into(), 9092, &[(ApiKey::ApiVersions, 2)]).unwrap();
        let mut h = Handler::new(&b);
        let resp = answer(&mut h, &request(&ApiVersionsRequest::default(), 3)).to_vec();
        let ResponseBodyView::ApiVersions(body) =
            dispatch::parse_response(&resp, ApiKey::ApiVersions, 0).unwrap().body
        else {
            panic!()
        };
        assert_eq!(body.error_code(), 35);
        let k = body.api_keys().iter().next().unwrap();
        assert_eq!((k.api_key(), k.min_version(), k.max_version()), (18, 0, 2));
        // Within the limit: every API with its served versions.
        let resp = answer(&mut h, &request(&ApiVersionsRequest::default(), 2)).to_vec();
        let ResponseBodyView::ApiVersions(body) =
            dispatch::parse_response(&resp, ApiKey::ApiVersions, 2).unwrap().body
        else {
            panic!()
        };
        let keys: Vec<(i16, i16, i16)> =
            body.api_keys().iter().map(|k| (k.api_key(), k.min_version(), k.max_version())).collect();
        assert_eq!(keys, [(2, 1, 11), (3, 0, 13), (16, 0, 5), (18, 0, 2)]);
    }

    #[test]
    fn unknown_api_keys_close_the_connection() {
        let b = broker();
        let mut h = Handler::new(&b);
        let mut req = request(&ApiVersionsRequest::default(), 3);
        req[5] = 99;
        assert!(matches!(handle(&mut h, &req), Err(ConnError::Frame(FrameError::UnsupportedApiKey { .. }))));
    }

    #[test]
    fn metadata_describes_the_catalogue() {
        let b = broker();
        let mut h = Handler::new(&b);
        let topics = [
            MetadataRequestTopic { name: Some("payments".into()), ..Default::default() },
            MetadataRequestTopic { name: Some("missing".into()), ..Default::default() },
        ];
        let req = MetadataRequest { topics: Some((&topics).into()), ..Default::default() };
        let resp = answer(&mut h, &request(&req, 12)).to_vec();
        let ResponseBodyView::Metadata(body) =
            dispatch::parse_response(&resp, ApiKey::Metadata, 12).unwrap().body
        else {
            panic!()
        };
        let broker = body.brokers().iter().next().unwrap();
        assert_eq!((broker.node_id(), broker.host(), broker.port()), (1, "127.0.0.1", 9092));
        let t: Vec<_> = body.topics().iter().collect();
        assert_eq!((t[0].error_code(), t[0].name(), t[0].partitions().len()), (0, Some("payments"), 1));
        assert_eq!((t[1].error_code(), t[1].name()), (3, Some("missing")));
        // Null means every topic.
        let resp =
            answer(&mut h, &request(&MetadataRequest { topics: None, ..Default::default() }, 6)).to_vec();
        let ResponseBodyView::Metadata(body) =
            dispatch::parse_response(&resp, ApiKey::Metadata, 6).unwrap().body
        else {
            panic!()
        };
        assert_eq!(body.topics().len(), 2);
    }

    #[test]
    fn bytes_after_a_request_body_are_ignored_as_kafka_does() {
        // librdkafka 2.16.0's Metadata v13 request for all topics (AdminClient.list_topics),
        // as captured: its topics field is 00 00 00 00 (a null compact array, then three
        // bytes of an unfinished four-byte placeholder), so the body ends three bytes
        // before the frame does. Kafka reads topics = null, both flags false, no tags, and
        // ignores the rest.
        let frame = kwire_hex("000000190003000d00000003000772646b61666b610000000000010000");
        let b = broker();
        let mut h = Handler::new(&b);
        let resp = answer(&mut h, &frame).to_vec();
        assert_eq!(h.ignored_trailing_bytes(), 3);
        let ResponseBodyView::Metadata(body) =
            dispatch::parse_response(&resp, ApiKey::Metadata, 13).unwrap().body
        else {
            panic!()
        };
        assert_eq!(body.topics().len(), 2, "null topics: every topic");
        // The next, well-formed, request resets the count.
        let _ = answer(&mut h, &request(&ApiVersionsRequest::default(), 3));
        assert_eq!(h.ignored_trailing_bytes(), 0);
        // Anything else that is malformed still closes the connection.
        let mut truncated = request(&ListGroupsRequest::default(), 5);
        truncated.pop();
        let size = (truncated.len() as i32 - 4).to_be_bytes();
        truncated[..4].copy_from_slice(&size);
        assert!(matches!(handle(&mut h, &truncated), Err(ConnError::Frame(FrameError::Decode(_)))));
    }

    fn kwire_hex(text: &str) -> Vec<u8> {
        (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn warm_requests_do_not_allocate() {
        let b = broker();
        let mut h = Handler::new(&b);
        let requests = [
            request(&ApiVersionsRequest::default(), 3),
            request(&MetadataRequest { topics: None, ..Default::default() }, 12),
            request(&ListGroupsRequest::default(), 5),
            offsets_request(-1, 1),
            offsets_request(1_700_000_002_000, 0),
        ];
        let mut conn = ServerConn::new();
        let mut step = |conn: &mut ServerConn, f: &[u8]| {
            assert_eq!(conn.feed(f), f.len());
            let received = conn.next_request().unwrap().unwrap();
            assert!(matches!(h.handle(received), Outcome::Reply(_)));
        };
        for f in &requests {
            step(&mut conn, f);
        }
        let before = ALLOCATIONS.with(Cell::get);
        for _ in 0..100 {
            for f in &requests {
                step(&mut conn, f);
            }
        }
        assert_eq!(ALLOCATIONS.with(Cell::get) - before, 0, "allocations in 500 warm requests");
    }
}
