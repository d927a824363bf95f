//! Partial answers from the schemas (feature `reflect`): one split and one merge for every
//! API whose request and response pair per-topic or per-partition entries, found in the
//! messages' schemas rather than written per API.
//!
//! # The layout
//!
//! For an API and version, [`Layout::of`] finds in the request and in the response:
//! - the topic array: an array whose elements name a topic (a field marked `topicName`, or
//!   a `TopicId` uuid), or an array of topic names (DeleteTopics before version 6);
//! - above it, optionally, a group array whose elements carry a group id or transactional
//!   id (OffsetFetch from version 8, AddPartitionsToTxn from version 4), matched by that id;
//! - below it, optionally, the partition array: an array of partition indexes, or of
//!   structs with an `int32` partition index (`PartitionIndex`, `Partition`,
//!   `PartitionId`, `Index`).
//!
//! The response's entries at the finest level (partitions, or topics where the API has no
//! partitions) must carry an error code (`ErrorCode`, `PartitionErrorCode`): a refusal is
//! answered there, with the message in `ErrorMessage` where the version has one.
//!
//! A refused entry is the response element built from its schema: the topic's name and id
//! and the partition's index as the request gave them, the error code and message, and
//! every other field at its schema default, as Apache Kafka's broker answers an entry that
//! failed; `int64` offsets (fields named `…Offset` or `…Watermark`) whose default is 0 are
//! -1 instead, Kafka's "no offset".
//!
//! The merge puts the client's entries back in its order: topics matched by name, or by id
//! where the request named a topic by id only; partitions by index; groups by their id.
//! Entries the broker answered that the request did not ask for follow, as the broker
//! gave them.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use crate::ApiKey;
use crate::codec::types::Uuid;
use crate::reflect::value::Encoding;
use crate::reflect::{Entity, FieldSchema, FieldType, MessageSchema, StructSchema, StructValue, Value};

/// Where a message's entries are, at one version.
#[derive(Clone, Copy, Debug)]
struct Side {
    /// The group array (its field index in the body, its element, the key field's index).
    group: Option<(usize, &'static StructSchema, usize)>,
    /// The topic array's field index, in the body or in the group element.
    topics: usize,
    topic: Topic,
}

#[derive(Clone, Copy, Debug)]
enum Topic {
    /// An array of topic names.
    Names,
    /// An array of structs.
    Struct {
        schema: &'static StructSchema,
        name: Option<usize>,
        id: Option<usize>,
        partitions: Option<Parts>,
        error: Option<usize>,
        message: Option<usize>,
    },
}

#[derive(Clone, Copy, Debug)]
enum Parts {
    /// An array of partition indexes (its field index in the topic element).
    Indexes(usize),
    /// An array of structs.
    Struct {
        field: usize,
        schema: &'static StructSchema,
        index: usize,
        error: Option<usize>,
        message: Option<usize>,
    },
}

/// Where the entries of an API's request and response are, at one version.
#[derive(Clone, Copy, Debug)]
pub(super) struct Layout {
    api_key: ApiKey,
    version: i16,
    request: Side,
    response: Side,
}

/// The APIs the schema-driven path serves (Produce and Fetch have their own, typed).
/// Left out on purpose: share fetches and acknowledgements (a share session moves on with
/// each request, and acknowledgements in a refused partition would be lost), the KRaft
/// quorum APIs and the APIs only brokers and controllers send one another.
const SERVED: &[ApiKey] = &[
    ApiKey::ListOffsets,
    ApiKey::Metadata,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::DeleteRecords,
    ApiKey::OffsetForLeaderEpoch,
    ApiKey::AddPartitionsToTxn,
    ApiKey::TxnOffsetCommit,
    ApiKey::CreatePartitions,
    ApiKey::ElectLeaders,
    ApiKey::AlterPartitionReassignments,
    ApiKey::OffsetDelete,
    ApiKey::DescribeProducers,
    ApiKey::DescribeTopicPartitions,
];

fn present(f: &FieldSchema, version: i16) -> bool {
    f.versions.contains(version)
}

fn named_field(
    s: &'static StructSchema,
    version: i16,
    names: &[&str],
    ty: fn(&FieldType) -> bool,
) -> Option<usize> {
    s.fields.iter().position(|f| present(f, version) && names.contains(&f.name) && ty(&f.ty))
}

fn is_i16(t: &FieldType) -> bool {
    matches!(t, FieldType::Int16)
}

fn is_i32(t: &FieldType) -> bool {
    matches!(t, FieldType::Int32)
}

fn is_string(t: &FieldType) -> bool {
    matches!(t, FieldType::String)
}

fn error_field(s: &'static StructSchema, version: i16) -> Option<usize> {
    named_field(s, version, &["ErrorCode", "PartitionErrorCode"], is_i16)
}

fn message_field(s: &'static StructSchema, version: i16) -> Option<usize> {
    named_field(s, version, &["ErrorMessage"], is_string)
}

/// The partition array of a topic element, if it has one; `Err` if it has several.
fn parts(s: &'static StructSchema, version: i16) -> Result<Option<Parts>, ()> {
    let mut found = None;
    for (i, f) in s.fields.iter().enumerate() {
        if !present(f, version) {
            continue;
        }
        let part = match &f.ty {
            FieldType::Array(FieldType::Int32) if f.name.contains("Partition") => Some(Parts::Indexes(i)),
            FieldType::Array(FieldType::Struct(p)) => {
                named_field(p, version, &["PartitionIndex", "Partition", "PartitionId", "Index"], is_i32).map(
                    |index| Parts::Struct {
                        field: i,
                        schema: p,
                        index,
                        error: error_field(p, version),
                        message: message_field(p, version),
                    },
                )
            }
            _ => None,
        };
        if let Some(part) = part {
            if found.is_some() {
                return Err(());
            }
            found = Some(part);
        }
    }
    Ok(found)
}

/// The topic array of a struct (the body or a group element), if it has exactly one.
fn topics(s: &'static StructSchema, version: i16) -> Option<(usize, Topic)> {
    let mut found = None;
    for (i, f) in s.fields.iter().enumerate() {
        if !present(f, version) {
            continue;
        }
        let topic = match &f.ty {
            FieldType::Array(FieldType::String) if f.entity == Some(Entity::TopicName) => Some(Topic::Names),
            FieldType::Array(FieldType::Struct(t)) => {
                let name = t.fields.iter().position(|g| {
                    present(g, version) && g.entity == Some(Entity::TopicName) && is_string(&g.ty)
                });
                let id = named_field(t, version, &["TopicId"], |t| matches!(t, FieldType::Uuid));
                if name.is_none() && id.is_none() {
                    None
                } else {
                    let partitions = parts(t, version).ok()?;
                    Some(Topic::Struct {
                        schema: t,
                        name,
                        id,
                        partitions,
                        error: error_field(t, version),
                        message: message_field(t, version),
                    })
                }
            }
            _ => None,
        };
        if let Some(topic) = topic {
            if found.is_some() {
                return None;
            }
            found = Some((i, topic));
        }
    }
    found
}

/// Where a message's entries are: a topic array in the body, or in the elements of one
/// group array.
fn side(schema: &'static MessageSchema, version: i16) -> Option<Side> {
    if !schema.versions.contains(version) {
        return None;
    }
    if let Some((topics, topic)) = topics(schema.body, version) {
        return Some(Side { group: None, topics, topic });
    }
    let mut found = None;
    for (i, f) in schema.body.fields.iter().enumerate() {
        let FieldType::Array(FieldType::Struct(g)) = &f.ty else { continue };
        if !present(f, version) {
            continue;
        }
        let Some((topics, topic)) = self::topics(g, version) else { continue };
        let key = g.fields.iter().position(|k| {
            present(k, version)
                && matches!(k.entity, Some(Entity::GroupId | Entity::TransactionalId))
                && is_string(&k.ty)
        })?;
        if found.is_some() {
            return None;
        }
        found = Some(Side { group: Some((i, g, key)), topics, topic });
    }
    found
}

impl Layout {
    /// The layout of `api_key` at `version`, if it can be answered in part by the schemas.
    pub(super) fn of(api_key: ApiKey, version: i16) -> Option<Layout> {
        if !SERVED.contains(&api_key) {
            return None;
        }
        let mut request = side(crate::reflect::request_schema(api_key), version)?;
        let mut response = side(crate::reflect::response_schema(api_key), version)?;
        let Topic::Struct { name, id, partitions, error, .. } = response.topic else { return None };
        // The response names each topic as the request can.
        let (request_name, request_id, request_parts) = match request.topic {
            Topic::Names => (true, false, None),
            Topic::Struct { name, id, partitions, .. } => (name.is_some(), id.is_some(), partitions),
        };
        if (request_name && name.is_none()) || (request_id && id.is_none()) {
            return None;
        }
        // Entries are refused per partition where both pair partitions and the response
        // answers each with an error; else per topic, where the response's topics carry
        // one (Metadata's answer has partitions its request does not name; CreateTopics's
        // request has assignments per partition that its answer does not repeat).
        match (request_parts, partitions) {
            (Some(_), Some(Parts::Struct { error: Some(_), .. })) => {}
            _ if error.is_some() => {
                set_parts(&mut request.topic, None);
                set_parts(&mut response.topic, None);
            }
            _ => return None,
        }
        match (request.group, response.group) {
            (None, None) => {}
            (Some((_, rg, rk)), Some((_, sg, sk))) if rg.fields[rk].name == sg.fields[sk].name => {}
            _ => return None,
        }
        Some(Layout { api_key, version, request, response })
    }

    /// Whether a request whose entries are all refused must still go to the broker (with
    /// none of them), rather than be answered by the chain: Metadata, whose answer carries
    /// the brokers, cluster id and controller that clients need.
    fn forward_when_all_refused(&self) -> bool {
        self.api_key == ApiKey::Metadata
    }

    /// Whether an empty topic array asks for every topic, so that a request with every
    /// topic refused cannot be forwarded: Metadata version 0, DescribeTopicPartitions.
    fn empty_means_all(&self) -> bool {
        matches!((self.api_key, self.version), (ApiKey::Metadata, 0) | (ApiKey::DescribeTopicPartitions, _))
    }
}

fn set_parts(topic: &mut Topic, to: Option<Parts>) {
    if let Topic::Struct { partitions, .. } = topic {
        *partitions = to;
    }
}

/// A topic of the request: how it is named, and its entries, answered by the broker or
/// refused.
#[derive(Debug)]
struct TopicSlot {
    name: Option<Value>,
    id: Option<Uuid>,
    entry: Entry,
}

#[derive(Debug)]
enum Entry {
    /// A topic without partitions, sent to the broker.
    Forwarded,
    /// A topic without partitions, refused: its answer.
    Refused(StructValue),
    /// A topic's partitions.
    Parts(Vec<PartSlot>),
}

#[derive(Debug)]
enum PartSlot {
    /// Sent to the broker (its index).
    Forwarded(i32),
    /// Refused: its answer.
    Refused(StructValue),
}

#[derive(Debug)]
struct GroupSlot {
    key: Option<Value>,
    topics: Vec<TopicSlot>,
}

/// What the merge keeps until the broker answers.
#[derive(Debug)]
pub(super) struct Pending {
    layout: Layout,
    groups: Vec<GroupSlot>,
}

/// What the chain does with a request refused in part, by the schemas.
#[derive(Debug)]
pub(super) enum SchemaSplit {
    /// Forward this body; merge the answer with `Pending`.
    Forward(Vec<u8>, Box<Pending>),
    /// Answer with this body.
    Answer(Vec<u8>),
}

fn take_array(v: &mut Option<Value>) -> Vec<Value> {
    match v.take() {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}

fn int32(v: Option<&Value>) -> Option<i32> {
    match v {
        Some(Value::Int32(i)) => Some(*i),
        _ => None,
    }
}

fn get(s: &StructValue, i: Option<usize>) -> Option<&Value> {
    s.fields.get(i?)?.as_ref()
}

/// A refused entry of `schema`: every field at its default, offsets -1, the error set.
fn refused(
    schema: &'static StructSchema,
    version: i16,
    error: Option<usize>,
    message: Option<usize>,
    why: &Why,
) -> StructValue {
    let mut s = StructValue::new(schema);
    for (i, f) in schema.fields.iter().enumerate() {
        let offset = f.name.ends_with("Offset") || f.name.ends_with("Watermark");
        if present(f, version)
            && offset
            && matches!(f.ty, FieldType::Int64)
            && matches!(f.default, None | Some("0"))
        {
            s.fields[i] = Some(Value::Int64(-1));
        }
    }
    if let Some(e) = error {
        s.fields[e] = Some(Value::Int16(why.0));
    }
    if let (Some(m), Some(text)) = (message, &why.1) {
        s.fields[m] = Some(Value::String(text.clone()));
    }
    s
}

/// An error code and message.
#[derive(Clone, Debug)]
pub(super) struct Why(pub(super) i16, pub(super) Option<String>);

/// What a filter refused, by position in the request (`Refusals`).
pub(super) trait Refused {
    /// The refusal of a partition by its index in its topic: its own, else its topic's.
    fn partition(&self, topic: usize, partition: usize) -> Option<Why>;
    /// The refusal of a topic where the API has no partitions: its own, else the first of
    /// one of its partitions; and whether it is the topic's own.
    fn topic(&self, topic: usize) -> Option<(Why, bool)>;
}

/// Splits a request body by its schema: what goes to the broker, and what its answer is
/// merged with. `Err` with the reason where it cannot be answered in part.
pub(super) fn split(
    api_key: ApiKey,
    version: i16,
    body: &[u8],
    refusals: &impl Refused,
) -> Result<SchemaSplit, String> {
    let Some(layout) = Layout::of(api_key, version) else {
        return Err(alloc::format!("{} v{version} cannot be answered in part", api_key.name()));
    };
    let schema = crate::reflect::request_schema(api_key);
    let mut request = StructValue::decode_body(schema, version, body)
        .map_err(|e| alloc::format!("the {} request does not decode: {e}", api_key.name()))?;
    let mut groups = Vec::new();
    let mut topic_index = 0usize;
    let mut forwarded_any = false;
    match layout.request.group {
        None => {
            let (slots, forwarded) = split_topics(&layout, &mut request, &mut topic_index, refusals);
            forwarded_any = forwarded;
            groups.push(GroupSlot { key: None, topics: slots });
        }
        Some((field, _, key)) => {
            let mut kept = Vec::new();
            for group in take_array(&mut request.fields[field]) {
                let Value::Struct(mut group) = group else { continue };
                let (slots, forwarded) = split_topics(&layout, &mut group, &mut topic_index, refusals);
                groups.push(GroupSlot { key: group.fields[key].clone(), topics: slots });
                // A group with none of its topics left goes nowhere: an empty list may
                // ask for every topic.
                if forwarded {
                    forwarded_any = true;
                    kept.push(Value::Struct(group));
                }
            }
            request.fields[field] = Some(Value::Array(kept));
        }
    }
    let pending = Pending { layout, groups };
    if forwarded_any || layout.forward_when_all_refused() {
        if !forwarded_any && layout.empty_means_all() {
            return Err(alloc::format!(
                "every topic of a {} v{version} request was refused, and an empty list asks for all",
                api_key.name()
            ));
        }
        let bytes = request
            .to_bytes(Encoding::body(schema, version))
            .map_err(|e| alloc::format!("the {} request without its refused entries: {e}", api_key.name()))?;
        return Ok(SchemaSplit::Forward(bytes, Box::new(pending)));
    }
    let response = crate::reflect::response_schema(api_key);
    let body = merge_into(pending, StructValue::new(response.body));
    let bytes = body
        .to_bytes(Encoding::body(response, version))
        .map_err(|e| alloc::format!("the {} answer of refused entries: {e}", api_key.name()))?;
    Ok(SchemaSplit::Answer(bytes))
}

/// The topic ids of a request's topic entries (`body`, at `version`), in the order
/// `Refusals` counts them, across groups; the all-zero id for an entry that names its topic
/// by name only. Empty where the request's topics carry no id; `None` where the request
/// cannot be answered in part by the schemas, or does not decode.
pub(super) fn topic_ids(api_key: ApiKey, version: i16, body: &[u8]) -> Option<Vec<Uuid>> {
    let layout = Layout::of(api_key, version)?;
    let Topic::Struct { id: Some(id), .. } = layout.request.topic else { return Some(Vec::new()) };
    let request = StructValue::decode_body(crate::reflect::request_schema(api_key), version, body).ok()?;
    let mut out = Vec::new();
    let mut topics_of = |parent: &StructValue| {
        if let Some(Some(Value::Array(items))) = parent.fields.get(layout.request.topics) {
            out.extend(items.iter().map(|item| match item {
                Value::Struct(s) => match get(s, Some(id)) {
                    Some(Value::Uuid(u)) => *u,
                    _ => Uuid::ZERO,
                },
                _ => Uuid::ZERO,
            }));
        }
    };
    match layout.request.group {
        None => topics_of(&request),
        Some((field, _, _)) => {
            if let Some(Some(Value::Array(groups))) = request.fields.get(field) {
                groups
                    .iter()
                    .filter_map(|g| if let Value::Struct(g) = g { Some(g) } else { None })
                    .for_each(topics_of);
            }
        }
    }
    Some(out)
}

/// Splits the topics of `parent` (the body or a group element): keeps what goes on in
/// `parent`, returns the slots and whether anything goes on.
fn split_topics(
    layout: &Layout,
    parent: &mut StructValue,
    at: &mut usize,
    refusals: &impl Refused,
) -> (Vec<TopicSlot>, bool) {
    let version = layout.version;
    let field = layout.request.topics;
    if matches!(parent.fields[field], Some(Value::Null) | None) {
        // A null list (every topic) has no entries to refuse.
        return (Vec::new(), true);
    }
    let Topic::Struct {
        schema: rt,
        name: r_name,
        error: r_error,
        message: r_message,
        partitions: r_parts,
        ..
    } = layout.response.topic
    else {
        return (Vec::new(), true);
    };
    let mut slots = Vec::new();
    let mut kept = Vec::new();
    for topic in take_array(&mut parent.fields[field]) {
        let t = *at;
        *at += 1;
        let (name, id, parts) = match (&layout.request.topic, &topic) {
            (Topic::Names, Value::String(_)) => (Some(topic.clone()), None, None),
            (Topic::Struct { name, id, partitions, .. }, Value::Struct(s)) => {
                let id = match get(s, *id) {
                    Some(Value::Uuid(u)) => Some(*u),
                    _ => None,
                };
                (name.and_then(|n| s.fields[n].clone()), id, *partitions)
            }
            _ => continue,
        };
        let mut topic = topic;
        let name_for_answer = match (&name, r_name) {
            (Some(Value::Null), Some(n)) if !rt.fields[n].is_nullable(version) => {
                Some(Value::String(String::new()))
            }
            (n, _) => n.clone(),
        };
        let entry = match (parts, r_parts, &mut topic) {
            (None, _, _) => match refusals.topic(t) {
                Some((why, _)) => Entry::Refused(refused(rt, version, r_error, r_message, &why)),
                None => {
                    kept.push(topic);
                    slots.push(TopicSlot { name: name_for_answer, id, entry: Entry::Forwarded });
                    continue;
                }
            },
            (
                Some(rp),
                Some(Parts::Struct { schema: ps, index: pi, error: pe, message: pm, .. }),
                Value::Struct(s),
            ) => {
                let field = match rp {
                    Parts::Indexes(f) => f,
                    Parts::Struct { field, .. } => field,
                };
                let mut part_slots = Vec::new();
                let mut kept_parts = Vec::new();
                let items = take_array(&mut s.fields[field]);
                let had_partitions = !items.is_empty();
                for (p, item) in items.into_iter().enumerate() {
                    let index = match (rp, &item) {
                        (Parts::Indexes(_), Value::Int32(i)) => *i,
                        (Parts::Struct { index, .. }, Value::Struct(ps)) => {
                            int32(get(ps, Some(index))).unwrap_or(-1)
                        }
                        _ => -1,
                    };
                    match refusals.partition(t, p) {
                        Some(why) => {
                            let mut answer = refused(ps, version, pe, pm, &why);
                            answer.fields[pi] = Some(Value::Int32(index));
                            part_slots.push(PartSlot::Refused(answer));
                        }
                        None => {
                            part_slots.push(PartSlot::Forwarded(index));
                            kept_parts.push(item);
                        }
                    }
                }
                let topic_refused = refusals.topic(t).is_some_and(|(_, own)| own);
                if kept_parts.is_empty() && (had_partitions || topic_refused) {
                    Entry::Parts(part_slots)
                } else {
                    s.fields[field] = Some(Value::Array(kept_parts));
                    kept.push(topic);
                    Entry::Parts(part_slots)
                }
            }
            _ => continue,
        };
        slots.push(TopicSlot { name: name_for_answer, id, entry });
    }
    let forwarded = !kept.is_empty();
    parent.fields[field] = Some(Value::Array(kept));
    (slots, forwarded)
}

/// The broker's answer (a response body) with the refused entries merged in.
pub(super) fn merge(pending: Box<Pending>, body: &[u8]) -> Result<Vec<u8>, String> {
    let api_key = pending.layout.api_key;
    let version = pending.layout.version;
    let schema = crate::reflect::response_schema(api_key);
    let response = StructValue::decode_body(schema, version, body)
        .map_err(|e| alloc::format!("the {} answer does not decode: {e}", api_key.name()))?;
    merge_into(*pending, response)
        .to_bytes(Encoding::body(schema, version))
        .map_err(|e| alloc::format!("a partial {} answer merged: {e}", api_key.name()))
}

fn same_group(key: &Option<Value>, at: usize, g: &Value) -> bool {
    matches!(g, Value::Struct(g) if g.fields.get(at).and_then(Option::as_ref) == key.as_ref())
}

/// `response` (the broker's, or an empty one) with the refused entries merged in.
fn merge_into(pending: Pending, mut response: StructValue) -> StructValue {
    let layout = pending.layout;
    match layout.response.group {
        None => {
            let mut groups = pending.groups;
            if let Some(group) = groups.pop() {
                merge_topics(&layout, &mut response, group.topics);
            }
        }
        Some((field, gs, key)) => {
            let mut broker: Vec<Option<Value>> =
                take_array(&mut response.fields[field]).into_iter().map(Some).collect();
            let mut out = Vec::new();
            for group in pending.groups {
                let found =
                    broker.iter_mut().find(|b| b.as_ref().is_some_and(|g| same_group(&group.key, key, g)));
                let mut element = match found.and_then(Option::take) {
                    Some(Value::Struct(g)) => g,
                    _ => {
                        let mut g = StructValue::new(gs);
                        g.fields[key] = group.key.clone();
                        g
                    }
                };
                merge_topics(&layout, &mut element, group.topics);
                out.push(Value::Struct(element));
            }
            out.extend(broker.into_iter().flatten());
            response.fields[field] = Some(Value::Array(out));
        }
    }
    response
}

/// Whether a response topic element is the request's topic: by name, or by id where the
/// request named it by id only.
fn same_topic(layout: &Layout, slot: &TopicSlot, t: &Value) -> bool {
    let Topic::Struct { name, id, .. } = layout.response.topic else { return false };
    let Value::Struct(t) = t else { return false };
    match &slot.name {
        Some(Value::String(n)) if !n.is_empty() => {
            matches!(get(t, name), Some(Value::String(b)) if b == n)
        }
        _ => slot.id.is_some() && matches!(get(t, id), Some(Value::Uuid(b)) if Some(*b) == slot.id),
    }
}

fn merge_topics(layout: &Layout, parent: &mut StructValue, slots: Vec<TopicSlot>) {
    let Topic::Struct { schema: ts, name, id, partitions, .. } = layout.response.topic else { return };
    let field = layout.response.topics;
    let mut broker: Vec<Option<Value>> =
        take_array(&mut parent.fields[field]).into_iter().map(Some).collect();
    let mut out = Vec::new();
    for slot in slots {
        let found = broker
            .iter_mut()
            .find(|b| b.as_ref().is_some_and(|t| same_topic(layout, &slot, t)))
            .and_then(Option::take);
        let TopicSlot { name: slot_name, id: slot_id, entry } = slot;
        let parts = match entry {
            Entry::Forwarded => {
                out.extend(found);
                continue;
            }
            Entry::Refused(mut answer) => {
                name_topic(&mut answer, (name, id), (&slot_name, slot_id));
                out.push(Value::Struct(answer));
                out.extend(found);
                continue;
            }
            Entry::Parts(parts) => parts,
        };
        let Some(Parts::Struct { field: pf, index, .. }) = partitions else { continue };
        let mut topic = match found {
            Some(Value::Struct(t)) => t,
            _ => {
                if !parts.iter().any(|p| matches!(p, PartSlot::Refused(_))) {
                    continue;
                }
                let mut t = StructValue::new(ts);
                name_topic(&mut t, (name, id), (&slot_name, slot_id));
                t
            }
        };
        let mut answered = take_array(&mut topic.fields[pf]);
        let mut merged = Vec::with_capacity(parts.len() + answered.len());
        for part in parts {
            match part {
                PartSlot::Refused(answer) => merged.push(Value::Struct(answer)),
                PartSlot::Forwarded(i) => {
                    let at = answered
                        .iter()
                        .position(|p| matches!(p, Value::Struct(p) if int32(get(p, Some(index))) == Some(i)));
                    if let Some(at) = at {
                        merged.push(answered.remove(at));
                    }
                }
            }
        }
        merged.extend(answered);
        topic.fields[pf] = Some(Value::Array(merged));
        out.push(Value::Struct(topic));
    }
    out.extend(broker.into_iter().flatten());
    parent.fields[field] = Some(Value::Array(out));
}

/// Names a topic element (its name and id fields) as the request named the topic.
fn name_topic(
    t: &mut StructValue,
    (name, id): (Option<usize>, Option<usize>),
    (n, u): (&Option<Value>, Option<Uuid>),
) {
    if let Some(at) = name {
        t.fields[at] = n.clone();
    }
    if let (Some(i), Some(u)) = (id, u) {
        t.fields[i] = Some(Value::Uuid(u));
    }
}
