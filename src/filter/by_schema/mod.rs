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

mod request;
mod response;

pub(super) use request::split;
pub(super) use response::merge;

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
