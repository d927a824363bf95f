//! [`Tenant`]: one connection's tenant of a virtual cluster, from the schemas' entity marks.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;

use super::splice::{Edit, Parts, Spliced, splice_parts, splice_parts_head};
use super::tenant_acls::TenantLookups;
use super::tenant_admin::{self, Names, Pending, as_is, unprefix_message};
use super::tenant_refuse::{self, Merges, Rest};
use super::tenant_walk::{StandIns, Way, owned_entity, rewrite, topic_id};
use super::{Exchange, Filter, RequestAction, ResponseAction, TopicNames};
use crate::ApiKey;
use crate::codec::dispatch::{Request, Response};
use crate::codec::entities::{self, EntityKind, Found};
use crate::codec::messages::entity_walker;
use crate::codec::types::{Uuid, Versions};
use crate::tools::reflect::{self, FieldType, MessageSchema, StructSchema};

/// Why a tenant may not use an API, or `None` for an API open to tenants: rewritten from the
/// entity marks of Kafka's schemas (topic names, group ids, transactional ids, topic ids),
/// or naming nothing of a tenant's. Every API is decided here, by an exhaustive match, so an
/// API added to Kafka does not compile until someone decides it: an isolation boundary
/// fails closed. A refused API's requests close the connection, and ApiVersions answers
/// leave it out.
pub(crate) fn refusal(api: ApiKey) -> Option<&'static str> {
    use ApiKey::*;
    const UNMARKED: &str = "it names topics, groups or principals in fields that carry no entity mark";
    const CLUSTER: &str = "it changes or shows the cluster for every tenant";
    const INTERNAL: &str = "it is spoken between brokers and controllers, not by clients";
    match api {
        Produce
        | Fetch
        | ListOffsets
        | Metadata
        | OffsetCommit
        | OffsetFetch
        | FindCoordinator
        | JoinGroup
        | Heartbeat
        | LeaveGroup
        | SyncGroup
        | DescribeGroups
        | ListGroups
        | SaslHandshake
        | ApiVersions
        | CreateTopics
        | DeleteTopics
        | DeleteRecords
        | InitProducerId
        | OffsetForLeaderEpoch
        | AddPartitionsToTxn
        | AddOffsetsToTxn
        | EndTxn
        | TxnOffsetCommit
        | DescribeLogDirs
        | SaslAuthenticate
        | CreatePartitions
        | DeleteGroups
        | OffsetDelete
        | DescribeCluster
        | DescribeProducers
        | DescribeTransactions
        | ListTransactions
        | ConsumerGroupHeartbeat
        | ConsumerGroupDescribe
        | GetTelemetrySubscriptions
        | PushTelemetry
        | DescribeTopicPartitions
        | ShareGroupHeartbeat
        | ShareGroupDescribe
        | ShareFetch
        | ShareAcknowledge
        | StreamsGroupHeartbeat
        | StreamsGroupDescribe
        | DescribeShareGroupOffsets
        | AlterShareGroupOffsets
        | DeleteShareGroupOffsets
        | StreamsGroupTopologyDescriptionUpdate => None,
        // Config, ACL and quota resources: rewritten and narrowed by `tenant_admin`.
        DescribeConfigs
        | AlterConfigs
        | IncrementalAlterConfigs
        | DescribeAcls
        | CreateAcls
        | DeleteAcls
        | DescribeClientQuotas
        | AlterClientQuotas => None,
        // SCRAM credentials, delegation tokens and the config resources' listing name
        // entities in fields without marks.
        DescribeUserScramCredentials
        | AlterUserScramCredentials
        | CreateDelegationToken
        | RenewDelegationToken
        | ExpireDelegationToken
        | DescribeDelegationToken
        | ListConfigResources => Some(UNMARKED),
        AlterPartitionReassignments
        | ListPartitionReassignments
        | ElectLeaders
        | UnregisterBroker
        | UpdateFeatures
        | AlterReplicaLogDirs
        | DescribeQuorum => Some(CLUSTER),
        WriteTxnMarkers
        | Vote
        | BeginQuorumEpoch
        | EndQuorumEpoch
        | AlterPartition
        | Envelope
        | FetchSnapshot
        | BrokerRegistration
        | BrokerHeartbeat
        | AllocateProducerIds
        | ControllerRegistration
        | AssignReplicasToDirs
        | AddRaftVoter
        | RemoveRaftVoter
        | UpdateRaftVoter
        | InitializeShareGroupState
        | ReadShareGroupState
        | WriteShareGroupState
        | DeleteShareGroupState
        | ReadShareGroupStateSummary
        | UnregisterController => Some(INTERNAL),
    }
}

/// The most config and ACL requests one connection has in flight.
const MAX_IN_FLIGHT: usize = 1024;

/// Whether a message has any field [`owned_entity`] accepts, at any depth.
fn has_owned_entities(api: ApiKey, schema: &MessageSchema) -> bool {
    fn walk(api: ApiKey, s: &'static StructSchema, depth: usize) -> bool {
        depth < reflect::walk::MAX_DEPTH
            && s.fields.iter().any(|f| {
                let mut ty = &f.ty;
                while let FieldType::Array(t) = ty {
                    ty = t;
                }
                owned_entity(api, f)
                    || topic_id(f)
                    || matches!(ty, FieldType::Struct(inner) if walk(api, inner, depth + 1))
            })
    }
    walk(api, schema.body, 0)
}

/// Where the tenant's prefix comes from.
enum Source {
    Known(String),
    /// Asked on each request until it answers (e.g. once SASL has named the principal).
    Later(Box<dyn Fn() -> Option<String> + Send>),
}

/// One connection's tenant of a virtual cluster: every topic name, group id and
/// transactional id the client sends is prefixed on the way to the broker, and the prefix
/// is taken off on the way back, in every API and version, from the entity marks of
/// Apache Kafka's schemas ([`reflect::entities`](crate::tools::reflect::entities)). Entities of
/// other tenants (names without the prefix) are taken out of the answers, so listings
/// (Metadata, ListGroups, DescribeGroups, ListTransactions, DescribeTopicPartitions,
/// OffsetFetch, ...) show only the tenant's own. A request cannot name another tenant's
/// entity: whatever it names is prefixed.
///
/// The tenant is chosen per connection by the caller: from the SNI name when it is known at
/// once ([`Tenant::new`]), or from the authenticated principal once SASL has named it
/// ([`Tenant::when_known`]); until then, a request that names entities closes the
/// connection. Config and ACL resources name entities beside a resource type, without
/// marks: TOPIC and GROUP configs, and ACL bindings on topics, groups and transactional ids,
/// are mapped into the prefix, and the other resource types refused per entry (filters of
/// DescribeAcls and DeleteAcls match only the tenant's bindings); client quotas are those
/// of the tenant's own users ([`Tenant::with_users`]). APIs whose requests name
/// entities in other unmarked fields (SCRAM credentials, delegation tokens) or that
/// act on the whole cluster (reassignments, leader elections, features) are refused as
/// [`super::DenyApis`] refuses them, and left out of ApiVersions answers, and a request kwire
/// cannot read (an API or version it does not know) closes the connection rather than pass
/// unprefixed.
///
/// Topic ids are the broker's, shared by every tenant, so the filter keeps a book of the
/// ids it has seen with their names (every answer that names a topic and its id: Metadata,
/// CreateTopics, DescribeTopicPartitions, DeleteTopics, ...). A request may name by id only
/// the tenant's own topics. A topic entry that names any other id, or one the book does not
/// know, is refused with UNKNOWN_TOPIC_ID, as Kafka answers an unknown id, as a partial
/// answer ([`super::Refusals`]): the rest of the request goes on, prefixed, and the client
/// gets one answer, the broker's with the refused topics merged in, in its order (a request
/// with every topic refused is answered without the broker, but Fetch and Metadata). That
/// holds for the APIs and versions [`super::Refusals::supports`] lists (Produce, Fetch,
/// Metadata, DeleteTopics, OffsetCommit, OffsetFetch, ...). Any other id (a Fetch's
/// forgotten topics, share fetches, a group's assignments) reaches the broker as a stand-in
/// that no topic can have, so the tenant gets what Kafka gives for an unknown id
/// (UNKNOWN_TOPIC_ID, with its own id in the answer) and the other tenant's topic is not
/// touched. The proxy's `kwire::proxy::Tenants` shares the book between connections and
/// looks up ids it does not know before the request goes on; a `Tenant` alone knows only the
/// ids its own connection's answers showed. Answers lose the entries that carry an id the
/// book knows to be another tenant's.
///
/// Empty names (Kafka's "no group") and the topic names `.` and `..` (which Kafka refuses,
/// and would not once prefixed) are passed as they are. A name the prefix pushes past
/// Kafka's 249 bytes is sent whole, so the broker refuses it as Kafka refuses any name
/// past the limit (INVALID_TOPIC_EXCEPTION from CreateTopics and Metadata); a broker's
/// error messages lose the prefix from the names they quote.
///
/// ```
/// use kwire::filter::{FilterChain, Tenant, Verdict};
/// use kwire::messages::{DeleteTopicsRequest, DeleteTopicsRequestView, RequestBody};
/// use kwire::Str;
///
/// let mut chain = FilterChain::new();
/// chain.push(Tenant::new("tenant-a."));
/// let names = [Str::from("orders")];
/// let request = DeleteTopicsRequest { topic_names: (&names[..]).into(), ..Default::default() };
/// let mut frame = [0u8; 64];
/// let n = kwire::dispatch::encode_request(&request, 3, 7, None, &mut frame)?;
/// let Verdict::Replace(sent) = chain.on_request(&frame[4..n]) else { panic!("prefixed") };
/// let sent = kwire::dispatch::parse_request(&sent)?;
/// let RequestBody::DeleteTopics(body) = RequestBody::from(sent.body) else { unreachable!() };
/// assert_eq!(body.topic_names[0].as_ref(), "tenant-a.orders");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Tenant {
    prefix: Source,
    ids: TopicNames,
    stand_ins: StandIns,
    /// Per API key (by its `i16`), whether its requests and its responses name entities.
    requests: [bool; 128],
    responses: [bool; 128],
    /// Config and ACL requests sent on, by correlation id, with what their answers need.
    admin: VecDeque<(i32, Pending)>,
    /// Requests sent on without the topics they named by another tenant's id.
    merges: Merges,
    /// Whether a principal is one of the tenant's users, for client quotas.
    users: Box<dyn Fn(&str) -> bool + Send>,
    /// The proxy's look-ups for DeleteAcls filters without a name.
    lookups: TenantLookups,
    /// Whether renamed requests leave their bytes after the last renamed string uncopied
    /// ([`Tenant::borrowing_tails`]).
    tails: bool,
}

impl core::fmt::Debug for Tenant {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.prefix {
            Source::Known(p) => write!(f, "Tenant({p:?})"),
            Source::Later(_) => f.write_str("Tenant(not yet known)"),
        }
    }
}

impl Tenant {
    /// A tenant whose names carry this prefix (e.g. `"tenant-a."`).
    pub fn new(prefix: impl Into<String>) -> Self {
        Tenant::with(Source::Known(prefix.into()))
    }

    /// A tenant known later: `prefix` is asked on each request that names entities until it
    /// answers (e.g. from the proxy's `ConnInfo::principal`), then kept.
    pub fn when_known(prefix: impl Fn() -> Option<String> + Send + 'static) -> Self {
        Tenant::with(Source::Later(Box::new(prefix)))
    }

    fn with(prefix: Source) -> Self {
        let mut t = Tenant {
            prefix,
            ids: TopicNames::default(),
            stand_ins: StandIns::default(),
            requests: [false; 128],
            responses: [false; 128],
            admin: VecDeque::new(),
            merges: Merges::default(),
            users: Box::new(|_| false),
            lookups: TenantLookups::default(),
            tails: false,
        };
        for &api in ApiKey::ALL {
            if let Ok(i) = usize::try_from(api.to_i16())
                && i < 128
            {
                t.requests[i] = has_owned_entities(api, reflect::request_schema(api));
                t.responses[i] = has_owned_entities(api, reflect::response_schema(api));
            }
        }
        t
    }

    /// The same tenant, whose users (the principals, as Kafka names them in client quota
    /// entities) are those `users` accepts: it may read and set the client quotas of those
    /// users and of their client ids, and no others (by default, no user is the tenant's and
    /// it has no quotas). A quota entity is the tenant's when it has exactly one `user`,
    /// named and accepted here, and at most one `client-id` (named, or that user's
    /// default); AlterClientQuotas entries for other entities are refused with
    /// CLUSTER_AUTHORIZATION_FAILED before they reach the broker, and DescribeClientQuotas
    /// answers keep only the tenant's entities.
    ///
    /// ```
    /// use kwire::filter::Tenant;
    ///
    /// let tenant = Tenant::new("tenant-a.").with_users(|user| user == "alice" || user == "alice-batch");
    /// # let _ = tenant;
    /// ```
    pub fn with_users(mut self, users: impl Fn(&str) -> bool + Send + 'static) -> Self {
        self.users = Box::new(users);
        self
    }

    /// The same tenant, whose renamed requests and answers come as
    /// [`RequestAction::RewriteSpliced`] and [`ResponseAction::RewriteSpliced`]: the new bytes
    /// up to the last renamed string, and the frame's own bytes after it, not copied (a
    /// Produce request's or a Fetch answer's records). A chain then gives
    /// [`Verdict::Splice`](super::Verdict::Splice) for them, which its caller must write as
    /// the two parts (kwire's proxy does, and its `Tenants` make tenants so). By default a
    /// renamed frame is one new frame ([`RequestAction::RewriteFrame`],
    /// [`ResponseAction::RewriteFrame`]). Answers renamed on the value tree, or merged with
    /// the topics refused on the way in, are new frames either way.
    pub fn borrowing_tails(mut self) -> Self {
        self.tails = true;
        self
    }

    fn carries(table: &[bool; 128], api: ApiKey) -> bool {
        usize::try_from(api.to_i16()).ok().and_then(|i| table.get(i)).copied().unwrap_or(false)
    }

    /// The same tenant, with a book of topic ids shared with other connections (and with
    /// the proxy's lookups).
    #[cfg(feature = "proxy")]
    pub(crate) fn sharing(mut self, ids: TopicNames) -> Self {
        self.ids = ids;
        self
    }

    /// The same tenant, reading the proxy's look-ups of ACL bindings for DeleteAcls filters
    /// without a name (the proxy makes them once a tenant wants them).
    #[cfg(feature = "proxy")]
    pub(crate) fn looking_up(mut self, lookups: super::AclLookups) -> Self {
        lookups.want();
        self.lookups = TenantLookups(Some(lookups));
        self
    }
}

/// The prefix, once known.
fn prefix_of(source: &mut Source) -> Option<&str> {
    if let Source::Later(ask) = source {
        *source = Source::Known(ask()?);
    }
    match source {
        Source::Known(p) => Some(p),
        Source::Later(_) => None,
    }
}

impl Filter for Tenant {
    fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
        refusal(api_key).is_some()
            || tenant_admin::handles(api_key)
            || Tenant::carries(&self.requests, api_key)
    }

    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        let api = request.body.api_key();
        if let Some(why) = refusal(api) {
            return RequestAction::Close(alloc::format!(
                "{} requests are not open to tenants: {why}",
                api.name()
            ));
        }
        let Some(prefix) = prefix_of(&mut self.prefix) else {
            return RequestAction::Close(alloc::format!(
                "a {} request names topics or groups before the connection's tenant is known",
                api.name()
            ));
        };
        let (version, body) = (request.header.api_version(), request.body.as_bytes());
        if tenant_admin::handles(api) {
            if self.admin.len() >= MAX_IN_FLIGHT {
                return RequestAction::Close(alloc::format!(
                    "a tenant has more than {MAX_IN_FLIGHT} config and ACL requests in flight"
                ));
            }
            let looked_up = self.lookups.take(api, request.header.correlation_id());
            return match tenant_admin::request(api, version, body, prefix, &*self.users, looked_up) {
                Ok((body, pending)) => {
                    self.admin.push_back((request.header.correlation_id(), pending));
                    RequestAction::RewriteBody(body)
                }
                Err(e) => RequestAction::Close(e),
            };
        }
        let header = request.header.as_bytes();
        let (ids, stand_ins, tails) = (&self.ids, &self.stand_ins, self.tails);
        match splice(Way::ToBroker, api, version, header, body, prefix, ids, stand_ins, tails) {
            Some(Ok(None)) => return RequestAction::Pass,
            Some(Ok(Some(spliced))) if tails => return RequestAction::RewriteSpliced(spliced),
            Some(Ok(Some(spliced))) => return RequestAction::RewriteFrame(spliced.into_parts().0),
            Some(Err(e)) => return RequestAction::Close(e),
            // A topic id that is not the tenant's.
            None => {}
        }
        let mut ids = (&self.ids, &mut self.stand_ins);
        // Topics named by an id that is not the tenant's: refused, and the rest goes on.
        if let Some(refusals) = tenant_refuse::foreign_entries(request, prefix, ids.0) {
            match tenant_refuse::split(request, &refusals) {
                Ok(Rest::AllRefused) => return RequestAction::Refuse(refusals),
                Ok(Rest::Forward(rest, merge)) => {
                    if let Some(merge) = merge
                        && !self.merges.push(request.header.correlation_id(), merge)
                    {
                        return RequestAction::Close(
                            "a tenant has too many requests answered in part in flight".into(),
                        );
                    }
                    return match Way::ToBroker.walk(api, version, header, &rest, prefix, &mut ids) {
                        Ok(None) => RequestAction::RewriteBody(rest),
                        Ok(Some(Rewritten::Frame(frame))) => RequestAction::RewriteFrame(frame),
                        Ok(Some(Rewritten::Body(body))) => RequestAction::RewriteBody(body),
                        Err(e) => RequestAction::Close(e),
                    };
                }
                Ok(Rest::Unsupported) => {}
                Err(e) => return RequestAction::Close(e),
            }
        }
        // Ids elsewhere, or in a request that cannot be answered in part: stand-ins.
        match rewrite(Way::ToBroker, api, version, body, prefix, ids.0, ids.1) {
            Ok(None) => RequestAction::Pass,
            Ok(Some(body)) => RequestAction::RewriteBody(body),
            Err(e) => RequestAction::Close(e),
        }
    }

    fn wants_response(&self, api_key: ApiKey, _: i16) -> bool {
        tenant_admin::handles(api_key) || Tenant::carries(&self.responses, api_key) || !self.merges.is_empty()
    }

    fn on_response<'a>(&mut self, exchange: &Exchange, response: &Response<'a>) -> ResponseAction<'a> {
        let api = exchange.api_key;
        let Some(prefix) = prefix_of(&mut self.prefix) else {
            // Nothing was prefixed: nothing of this connection's is in the answer.
            return ResponseAction::Close(alloc::format!(
                "a {} answer names topics or groups before the connection's tenant is known",
                api.name()
            ));
        };
        let (version, body) = (exchange.api_version, response.body.as_bytes());
        if tenant_admin::handles(api) {
            // Answers come in the order of their requests.
            let Some((id, pending)) = self.admin.pop_front() else {
                return ResponseAction::Close(alloc::format!("a {} answer to no request", api.name()));
            };
            if id != exchange.correlation_id {
                return ResponseAction::Close(alloc::format!("a {} answer out of order", api.name()));
            }
            return match tenant_admin::response(api, version, body, prefix, &*self.users, pending) {
                Ok(body) => ResponseAction::RewriteBody(body),
                Err(e) => ResponseAction::Close(e),
            };
        }
        let header = response.header.as_bytes();
        let Some(merge) = self.merges.take(exchange.correlation_id) else {
            // Renamed by splicing, as requests are: with borrowed tails, the answer's bytes
            // after its last renamed string (a Fetch answer's records) are not copied.
            let (ids, stand_ins, tails) = (&self.ids, &self.stand_ins, self.tails);
            match splice(Way::ToClient, api, version, header, body, prefix, ids, stand_ins, tails) {
                Some(Ok(None)) => return ResponseAction::Pass,
                Some(Ok(Some(spliced))) if tails => return ResponseAction::RewriteSpliced(spliced),
                Some(Ok(Some(spliced))) => return ResponseAction::RewriteFrame(spliced.into_parts().0),
                Some(Err(e)) => return ResponseAction::Close(e),
                None => {}
            }
            return match rewrite(Way::ToClient, api, version, body, prefix, &self.ids, &mut self.stand_ins) {
                Ok(None) => ResponseAction::Pass,
                Ok(Some(body)) => ResponseAction::RewriteBody(body),
                Err(e) => ResponseAction::Close(e),
            };
        };
        let walked =
            Way::ToClient.walk(api, version, header, body, prefix, &mut (&self.ids, &mut self.stand_ins));
        // The topics refused on the way in join the answer as the tenant leaves it.
        let merged = match &walked {
            Ok(None) => tenant_refuse::merge(merge, api, version, header, body),
            Ok(Some(Rewritten::Frame(frame))) => {
                let (head, rest) = frame.split_at(header.len().min(frame.len()));
                tenant_refuse::merge(merge, api, version, head, rest)
            }
            Ok(Some(Rewritten::Body(body))) => tenant_refuse::merge(merge, api, version, header, body),
            Err(e) => Err(e.clone()),
        };
        match merged {
            Ok(body) => ResponseAction::RewriteBody(body),
            Err(e) => ResponseAction::Close(e),
        }
    }

    fn versions(&self, api_key: ApiKey, readable: Versions) -> Option<Versions> {
        refusal(api_key).is_none().then_some(readable)
    }

    fn refuses_unreadable(&self) -> bool {
        // A request kwire cannot read could name anything, unprefixed.
        true
    }
}

/// A frame or body a [`Way`]'s walk rewrote.
enum Rewritten {
    /// The whole frame (the header as it was, then the new body), spliced.
    Frame(Vec<u8>),
    /// The body, encoded again from a value tree.
    Body(Vec<u8>),
}

impl Way {
    /// Rewrites a frame (`header`, then `body`) the way it goes: by splicing where renaming
    /// is all it needs, else on a value tree ([`rewrite`]); `Ok(None)` if nothing changes.
    fn walk(
        self,
        api: ApiKey,
        version: i16,
        header: &[u8],
        body: &[u8],
        prefix: &str,
        (ids, stand_ins): &mut (&TopicNames, &mut StandIns),
    ) -> Result<Option<Rewritten>, String> {
        match splice(self, api, version, header, body, prefix, ids, stand_ins, false) {
            Some(Ok(frame)) => return Ok(frame.map(|f| Rewritten::Frame(f.into_parts().0))),
            Some(Err(e)) => return Err(e),
            None => {}
        }
        Ok(rewrite(self, api, version, body, prefix, ids, stand_ins)?.map(Rewritten::Body))
    }
}

/// The kind of names an entity field holds, for [`as_is`].
fn names_of(kind: EntityKind) -> Names {
    match kind {
        EntityKind::TopicName => Names::Topics,
        EntityKind::GroupId | EntityKind::TransactionalId | EntityKind::CoordinatorKey => Names::Ids,
        _ => Names::Not,
    }
}

/// Rewrites a frame the way it goes by splicing (see [`super::splice`]): names prefixed on
/// the way to the broker, the prefix taken off (in error messages too) on the way back,
/// with no value tree. The frame is the header's bytes as they are, then the checked body.
/// `None` when the frame needs more than renaming, which [`rewrite`] does on a value tree:
/// a request naming a topic id that is not the tenant's (it gets a stand-in), an answer
/// naming another tenant's entity or topic id (its entry is left out) or a stand-in (the
/// client's id goes back), and DeleteTopics answers (the book forgets deleted ids). On an
/// answer's way, the book learns the ids it pairs with names, as the value-tree walk does
/// ([`super::tenant_walk`]). With `tails`, the body's bytes after the last renamed string
/// are left where they are ([`Spliced::tail`]); else the new frame is whole, all in the
/// head.
#[allow(clippy::too_many_arguments)]
fn splice<'b>(
    way: Way,
    api: ApiKey,
    version: i16,
    header: &'b [u8],
    body: &'b [u8],
    prefix: &str,
    ids: &TopicNames,
    stand_ins: &StandIns,
    tails: bool,
) -> Option<Result<Option<Spliced<'b>>, String>> {
    let to_broker = way == Way::ToBroker;
    let what = if to_broker { "request" } else { "answer" };
    let Some(walker) = entity_walker(api, to_broker) else { return Some(Ok(None)) };
    if !to_broker && api == ApiKey::DeleteTopics {
        return None;
    }
    let mut tree = false;
    let walked = ids.with(|book| {
        // The topic name and id of the struct last seen, for the book.
        let mut pair: (usize, Option<&str>, Option<Uuid>) = (usize::MAX, None, None);
        entities::walk(walker, api, version, body, 0, &mut |field| {
            if !to_broker {
                if field.owner != pair.0 {
                    pair = (field.owner, None, None);
                }
                match (field.kind, field.value) {
                    (EntityKind::TopicName, Found::Text(name)) => pair.1 = Some(name),
                    (EntityKind::TopicId, Found::TopicId(id)) => pair.2 = Some(id),
                    _ => {}
                }
                if let (_, Some(name), Some(id)) = pair {
                    book.learn(id, name);
                }
            }
            match (field.kind, field.value) {
                (EntityKind::TopicId, Found::TopicId(id)) => {
                    let ours = book.name(&id).map(|n| n.starts_with(prefix));
                    tree |= match way {
                        Way::ToBroker => id != Uuid::ZERO && ours != Some(true),
                        Way::ToClient => stand_ins.original(&id).is_some() || ours == Some(false),
                    };
                }
                (kind, Found::Text(name)) if !to_broker && names_of(kind) != Names::Not => {
                    tree |= !as_is(names_of(kind), name) && !name.starts_with(prefix);
                }
                _ => {}
            }
        })
    });
    if walked.is_err() {
        return Some(Err(alloc::format!("a tenant's {} {what} did not decode", api.name())));
    }
    if tree {
        return None;
    }
    let mut map = |kind: EntityKind, text: &str| -> Option<Edit<'_>> {
        let names = names_of(kind);
        if names == Names::Not {
            if to_broker || kind != EntityKind::ErrorMessage || !text.contains(prefix) {
                return None;
            }
            let (mut text, mut changed) = (String::from(text), false);
            unprefix_message(&mut text, prefix, &mut changed);
            return changed.then_some(Edit::Replace(text.into()));
        }
        match (as_is(names, text), way) {
            (true, _) => None,
            (false, Way::ToBroker) => Some(Edit::Prepend(prefix)),
            (false, Way::ToClient) => text.starts_with(prefix).then_some(Edit::DropFront(prefix.len())),
        }
    };
    let parts = Parts { sized: false, header, body, walker, api, version };
    let spliced = match tails {
        true => splice_parts_head(parts, &mut map),
        false => splice_parts(parts, &mut map).map(|f| f.map(|f| Spliced::whole(f, body))),
    };
    Some(spliced.map_err(|e| alloc::format!("a tenant's {} {what}: {e}", api.name())))
}
