//! Partial answers: a filter refuses some entries of a request ([`Refusals`], through
//! [`super::RequestAction::Refuse`]); the chain forwards the rest, and merges the broker's
//! answer with the refused entries into one answer, in the client's order.
//!
//! Produce and Fetch have a typed split and merge of their own (here); every other API
//! whose request and response pair per-topic or per-partition entries is split and merged
//! from its schemas (`by_schema`, feature `reflect`). [`Refusals::supports`] says which APIs
//! and versions can be answered in part; a refusal for any other closes the connection
//! (fail closed), with the reason.
//!
//! # Indexes
//!
//! A refusal names a topic by its index in the request's topic array, and a partition by
//! its index in that topic's partition array (an array of partition structs, or of
//! partition indexes, as in OffsetFetch). Where topics sit in groups (OffsetFetch from
//! version 8, by group; AddPartitionsToTxn from version 4, by transaction), topics are
//! counted across the groups, in the request's order. Where an API has no partitions
//! (CreateTopics, DeleteTopics, CreatePartitions, Metadata, DescribeTopicPartitions), a
//! refusal of a topic's partition refuses the topic. A null topic list (every topic) has
//! no entries to refuse.
//!
//! # Requests with every entry refused
//!
//! - are answered by the chain, without the broker, as a broker answers them: the refused
//!   entries, and every other field at its schema default (no throttle time, no error at
//!   the top);
//! - except Fetch, which always goes to the broker, with nothing left to fetch: a fetch
//!   session's epoch moves on with every request, and answering one without the broker
//!   would put the client's session out of step with the broker's;
//! - and Metadata from version 1, which goes to the broker with an empty topic list (which
//!   asks for no topic): its answer carries the brokers, cluster id and controller that
//!   clients need. Metadata version 0 (where an empty list asks for every topic) then
//!   closes the connection;
//! - a Produce request with `acks = 0` expects no answer: it is dropped.
//!
//! Groups (OffsetFetch from version 8, AddPartitionsToTxn from version 4) whose topics are
//! all refused are left out of the forwarded request and answered by the chain, with no
//! error of their own.

use alloc::string::String;
use alloc::vec::Vec;

use crate::ApiKey;
use crate::ErrorCode;
#[cfg(feature = "api-fetch")]
use crate::codec::messages::FetchRequest;
#[cfg(feature = "api-fetch")]
use crate::codec::messages::fetch::{FetchPartition, FetchTopic, FetchableTopicResponse, PartitionData};
#[cfg(feature = "api-produce")]
use crate::codec::messages::produce::{
    BatchIndexAndErrorMessage, PartitionProduceData, PartitionProduceResponse, TopicProduceData,
    TopicProduceResponse,
};
#[cfg(feature = "api-produce")]
use crate::codec::messages::{ProduceRequest, ProduceResponse, ProduceResponseView};
use crate::codec::messages::{RequestBody, RequestBodyView, ResponseBody};
#[cfg(feature = "api-produce")]
use crate::codec::types::Uuid;

/// What a filter refuses of a request: entries by their position in the request (the
/// topic's index in its topic array, and the partition's in that topic's partition array),
/// each with an error code and, where the version carries one, a message. Everything not
/// refused goes on to the broker.
///
/// Where topics sit in groups (OffsetFetch from version 8, AddPartitionsToTxn from version
/// 4), topics are counted across the groups in the request's order. Where an API has no
/// partitions (CreateTopics, DeleteTopics, CreatePartitions, Metadata,
/// DescribeTopicPartitions), refusing a partition refuses its topic. A request with every
/// entry refused is answered without the broker, but Fetch (always forwarded, for its
/// fetch session) and Metadata from version 1 (forwarded with no topics, for the brokers
/// and cluster id its answer carries; version 0, where no topics means all, closes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Refusals {
    entries: Vec<Refusal>,
}

/// One refused entry.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Refusal {
    topic: usize,
    /// `None`: every partition of the topic.
    partition: Option<usize>,
    error: ErrorCode,
    message: Option<String>,
    /// Produce's per-record errors: (batch index, message).
    records: Vec<(i32, Option<String>)>,
}

impl Refusals {
    /// Nothing refused yet.
    pub fn new() -> Self {
        Refusals::default()
    }

    /// Whether some version of the API may be answered in part ([`Refusals::supports`]
    /// says which).
    pub fn supported(api_key: ApiKey) -> bool {
        let versions = api_key.request_versions();
        (versions.min..=versions.max).any(|v| Refusals::supports(api_key, v))
    }

    /// Whether requests of this API and version may be answered in part: Produce and
    /// Fetch; with the `reflect` feature, every API whose request and response pair
    /// per-topic or per-partition entries with an error code for each (ListOffsets,
    /// Metadata, OffsetCommit, OffsetFetch, CreateTopics, DeleteTopics, DeleteRecords,
    /// OffsetForLeaderEpoch, AddPartitionsToTxn, TxnOffsetCommit, CreatePartitions,
    /// ElectLeaders, AlterPartitionReassignments, OffsetDelete, DescribeProducers,
    /// DescribeTopicPartitions), in every version kwire reads.
    pub fn supports(api_key: ApiKey, version: i16) -> bool {
        if !api_key.request_versions().contains(version) {
            return false;
        }
        match api_key {
            ApiKey::Produce => cfg!(feature = "api-produce"),
            ApiKey::Fetch => cfg!(feature = "api-fetch"),
            #[cfg(feature = "reflect")]
            _ => super::by_schema::Layout::of(api_key, version).is_some(),
            #[cfg(not(feature = "reflect"))]
            _ => false,
        }
    }

    /// Refuses every partition of the topic at index `topic` of the request.
    pub fn topic(&mut self, topic: usize, error: ErrorCode, message: Option<&str>) -> &mut Self {
        self.push(topic, None, error, message, Vec::new())
    }

    /// Refuses the partition at index `partition` of the topic at index `topic`.
    pub fn partition(
        &mut self,
        topic: usize,
        partition: usize,
        error: ErrorCode,
        message: Option<&str>,
    ) -> &mut Self {
        self.push(topic, Some(partition), error, message, Vec::new())
    }

    /// Refuses a Produce partition for some of its records, as Kafka's `LogValidator` does:
    /// the records' batch indexes (their positions in the partition's records) and what
    /// was wrong with each, answered in the partition's `record_errors` (Produce v8 and
    /// later).
    pub fn records(
        &mut self,
        topic: usize,
        partition: usize,
        error: ErrorCode,
        message: Option<&str>,
        records: impl IntoIterator<Item = (i32, Option<String>)>,
    ) -> &mut Self {
        self.push(topic, Some(partition), error, message, records.into_iter().collect())
    }

    fn push(
        &mut self,
        topic: usize,
        partition: Option<usize>,
        error: ErrorCode,
        message: Option<&str>,
        records: Vec<(i32, Option<String>)>,
    ) -> &mut Self {
        let message = message.map(String::from);
        self.entries.push(Refusal { topic, partition, error, message, records });
        self
    }

    /// Whether nothing is refused.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The refusal of a partition, if any (a partition's own refusal before its topic's).
    fn find(&self, topic: usize, partition: usize) -> Option<&Refusal> {
        let of_topic = || self.entries.iter().filter(move |r| r.topic == topic);
        of_topic()
            .find(|r| r.partition == Some(partition))
            .or_else(|| of_topic().find(|r| r.partition.is_none()))
    }
}

#[cfg(feature = "reflect")]
impl super::by_schema::Refused for Refusals {
    fn partition(&self, topic: usize, partition: usize) -> Option<super::by_schema::Why> {
        self.find(topic, partition).map(|r| super::by_schema::Why(r.error.to_i16(), r.message.clone()))
    }

    fn topic(&self, topic: usize) -> Option<(super::by_schema::Why, bool)> {
        let of_topic = || self.entries.iter().filter(move |r| r.topic == topic);
        let r = of_topic().find(|r| r.partition.is_none()).or_else(|| of_topic().next())?;
        Some((super::by_schema::Why(r.error.to_i16(), r.message.clone()), r.partition.is_none()))
    }
}

/// What the chain does with a request a filter refused in part.
// Made once per refusal and matched at once; boxing the body would cost an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(super) enum Split<'a> {
    /// Forward this body instead; merge the broker's answer with `Merge`. `None`: the
    /// request expects no answer (Produce with acks = 0).
    Forward(RequestBody<'a>, Option<Merge>),
    /// Everything was refused: answer with this body (nothing goes to the broker).
    Answer(ResponseBody<'a>),
    /// Forward this body (encoded at the request's version); merge the broker's answer
    /// with `Merge`.
    #[cfg_attr(not(feature = "reflect"), allow(dead_code, reason = "built by the schema-driven splits"))]
    ForwardBody(Vec<u8>, Merge),
    /// Everything was refused: answer with this body (encoded at the request's version).
    #[cfg_attr(not(feature = "reflect"), allow(dead_code, reason = "built by the schema-driven splits"))]
    AnswerBody(Vec<u8>),
    /// The request cannot be answered in part, for this reason.
    Unsupported(String),
}

/// What a partial answer's merge needs to keep until the broker answers.
#[derive(Debug)]
pub(super) enum Merge {
    /// Produce: per topic of the request, in its order.
    #[cfg(feature = "api-produce")]
    Produce(Vec<ProduceTopic>),
    /// Fetch: the refused partitions' answers, by topic.
    #[cfg(feature = "api-fetch")]
    Fetch(Vec<FetchableTopicResponse<'static>>),
    /// Any other API: what the schema-driven merge keeps.
    #[cfg(feature = "reflect")]
    Schema(alloc::boxed::Box<super::by_schema::Pending>),
}

/// A Produce request's topic: its name or id and each partition, answered by the broker
/// or refused.
#[cfg(feature = "api-produce")]
#[derive(Debug)]
pub(super) struct ProduceTopic {
    name: String,
    topic_id: Uuid,
    slots: Vec<ProduceSlot>,
}

#[cfg(feature = "api-produce")]
#[derive(Debug)]
enum ProduceSlot {
    /// Sent to the broker (its partition index): the answer is the broker's.
    Forwarded(i32),
    /// Refused.
    Refused(PartitionProduceResponse<'static>),
}

/// Splits a request (`body`: its body view; `bytes`: the body's bytes, at `version`): what
/// goes to the broker, and what its answer is merged with.
pub(super) fn split<'a>(
    body: &RequestBodyView<'a>,
    version: i16,
    bytes: &[u8],
    refusals: &Refusals,
) -> Split<'a> {
    let api_key = body.api_key();
    if !Refusals::supports(api_key, version) {
        return Split::Unsupported(alloc::format!(
            "a filter refused part of a {} v{version} request, which cannot be answered in part",
            api_key.name()
        ));
    }
    match body {
        #[cfg(feature = "api-produce")]
        RequestBodyView::Produce(produce) => split_produce(produce, refusals),
        #[cfg(feature = "api-fetch")]
        RequestBodyView::Fetch(fetch) => split_fetch(fetch, refusals),
        #[cfg(feature = "reflect")]
        _ => match super::by_schema::split(api_key, version, bytes, refusals) {
            Ok(super::by_schema::SchemaSplit::Forward(body, pending)) => {
                Split::ForwardBody(body, Merge::Schema(pending))
            }
            Ok(super::by_schema::SchemaSplit::Answer(body)) => Split::AnswerBody(body),
            Err(why) => Split::Unsupported(why),
        },
        #[cfg(not(feature = "reflect"))]
        _ => {
            let _ = (bytes, refusals);
            Split::Unsupported(alloc::format!("{} cannot be answered in part", api_key.name()))
        }
    }
}

/// Merges the broker's answer (`response`, whose body's bytes are `bytes`, at `version`)
/// with the refused entries: the merged body, encoded.
pub(super) fn merge(
    merge: Merge,
    response: &crate::codec::messages::ResponseBodyView<'_>,
    version: i16,
    bytes: &[u8],
) -> Result<Vec<u8>, String> {
    let _ = (version, bytes);
    let name = response.api_key().name();
    let encoded = |body: ResponseBody<'_>| {
        super::encode_body(&body, version).map_err(|e| alloc::format!("a partial {name} answer merged: {e}"))
    };
    let _ = &encoded;
    match (merge, response) {
        #[cfg(feature = "api-produce")]
        (Merge::Produce(topics), crate::codec::messages::ResponseBodyView::Produce(view)) => {
            encoded(ResponseBody::Produce(merge_produce(topics, *view)))
        }
        #[cfg(feature = "api-fetch")]
        (Merge::Fetch(refused), crate::codec::messages::ResponseBodyView::Fetch(view)) => {
            encoded(ResponseBody::Fetch(merge_fetch(refused, *view)))
        }
        #[cfg(feature = "reflect")]
        (Merge::Schema(pending), _) => super::by_schema::merge(pending, bytes),
        #[allow(unreachable_patterns)]
        _ => Err(alloc::format!("a {name} answer to a request answered in part")),
    }
}

#[cfg(feature = "api-produce")]
fn refused_partition(index: i32, refusal: &Refusal) -> PartitionProduceResponse<'static> {
    let record_errors: Vec<BatchIndexAndErrorMessage<'static>> = refusal
        .records
        .iter()
        .map(|(i, why)| BatchIndexAndErrorMessage {
            batch_index: *i,
            batch_index_error_message: why.clone().map(Into::into),
            ..Default::default()
        })
        .collect();
    // As Kafka answers a partition that failed: no offsets.
    PartitionProduceResponse {
        index,
        error_code: refusal.error.to_i16(),
        base_offset: -1,
        log_append_time_ms: -1,
        log_start_offset: -1,
        record_errors: record_errors.into(),
        error_message: refusal.message.clone().map(Into::into),
        ..Default::default()
    }
}

#[cfg(feature = "api-produce")]
fn split_produce<'a>(
    produce: &crate::codec::messages::ProduceRequestView<'a>,
    refusals: &Refusals,
) -> Split<'a> {
    let mut kept_topics: Vec<TopicProduceData<'a>> = Vec::new();
    let mut topics: Vec<ProduceTopic> = Vec::new();
    for (t, topic) in produce.topic_data().iter().enumerate() {
        let mut kept: Vec<PartitionProduceData<'a>> = Vec::new();
        let mut slots = Vec::new();
        for (p, partition) in topic.partition_data().iter().enumerate() {
            match refusals.find(t, p) {
                Some(r) => slots.push(ProduceSlot::Refused(refused_partition(partition.index(), r))),
                None => {
                    slots.push(ProduceSlot::Forwarded(partition.index()));
                    kept.push(PartitionProduceData::from(partition));
                }
            }
        }
        if !kept.is_empty() {
            let mut data = TopicProduceData::from(topic);
            data.partition_data = kept.into();
            kept_topics.push(data);
        }
        topics.push(ProduceTopic { name: topic.name().into(), topic_id: topic.topic_id(), slots });
    }
    if kept_topics.is_empty() {
        let responses: Vec<TopicProduceResponse<'a>> = topics
            .into_iter()
            .map(|t| TopicProduceResponse {
                name: t.name.into(),
                topic_id: t.topic_id,
                partition_responses: t
                    .slots
                    .into_iter()
                    .filter_map(|s| match s {
                        ProduceSlot::Refused(r) => Some(r),
                        ProduceSlot::Forwarded(_) => None,
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        return Split::Answer(ResponseBody::Produce(ProduceResponse {
            responses: responses.into(),
            ..Default::default()
        }));
    }
    let merge = (produce.acks() != 0).then_some(Merge::Produce(topics));
    let mut body = ProduceRequest::from(*produce);
    body.topic_data = kept_topics.into();
    Split::Forward(RequestBody::Produce(body), merge)
}

#[cfg(any(feature = "api-produce", feature = "api-fetch"))]
fn into_vec<T: Clone>(list: crate::codec::types::List<'_, T>) -> Vec<T> {
    match list {
        crate::codec::types::List::Owned(v) => v,
        other => other.to_vec(),
    }
}

/// The broker's Produce answer with the refused partitions put back, in the request's
/// order; topics match by name, or by id where the request named them by id only.
#[cfg(feature = "api-produce")]
fn merge_produce<'a>(pending: Vec<ProduceTopic>, view: ProduceResponseView<'a>) -> ProduceResponse<'a> {
    let mut response = ProduceResponse::from(view);
    let mut broker: Vec<Option<TopicProduceResponse<'a>>> =
        into_vec(core::mem::take(&mut response.responses)).into_iter().map(Some).collect();
    let mut topics = Vec::with_capacity(pending.len());
    for topic in pending {
        let same = |b: &TopicProduceResponse<'_>| {
            if topic.name.is_empty() { b.topic_id == topic.topic_id } else { b.name.as_str() == topic.name }
        };
        let found = broker.iter_mut().find(|b| b.as_ref().is_some_and(same)).and_then(Option::take);
        let mut answered =
            found.as_ref().map(|b| into_vec(b.partition_responses.clone())).unwrap_or_default();
        let mut partitions = Vec::with_capacity(topic.slots.len());
        for slot in topic.slots {
            match slot {
                ProduceSlot::Refused(r) => partitions.push(r),
                ProduceSlot::Forwarded(index) => {
                    if let Some(i) = answered.iter().position(|p| p.index == index) {
                        partitions.push(answered.remove(i));
                    }
                }
            }
        }
        // Whatever else the broker answered for the topic stays.
        partitions.extend(answered);
        let mut out = found.unwrap_or_else(|| TopicProduceResponse {
            name: topic.name.into(),
            topic_id: topic.topic_id,
            ..Default::default()
        });
        out.partition_responses = partitions.into();
        topics.push(out);
    }
    topics.extend(broker.into_iter().flatten());
    response.responses = topics.into();
    response
}

/// A Fetch request without its refused partitions. It always goes to the broker, even with
/// nothing left to fetch: a fetch session's epoch moves on with every request, so answering
/// one without the broker would put the client's session out of step with the broker's.
#[cfg(feature = "api-fetch")]
fn split_fetch<'a>(fetch: &crate::codec::messages::FetchRequestView<'a>, refusals: &Refusals) -> Split<'a> {
    let mut kept_topics: Vec<FetchTopic<'a>> = Vec::new();
    let mut refused_topics: Vec<FetchableTopicResponse<'static>> = Vec::new();
    for (t, topic) in fetch.topics().iter().enumerate() {
        let mut kept: Vec<FetchPartition<'a>> = Vec::new();
        let mut refused: Vec<PartitionData<'static>> = Vec::new();
        for (p, partition) in topic.partitions().iter().enumerate() {
            match refusals.find(t, p) {
                // As Kafka answers a partition that failed: no offsets, no records.
                Some(r) => refused.push(PartitionData {
                    partition_index: partition.partition(),
                    error_code: r.error.to_i16(),
                    high_watermark: -1,
                    ..Default::default()
                }),
                None => kept.push(FetchPartition::from(partition)),
            }
        }
        if !kept.is_empty() {
            let mut data = FetchTopic::from(topic);
            data.partitions = kept.into();
            kept_topics.push(data);
        }
        if !refused.is_empty() {
            refused_topics.push(FetchableTopicResponse {
                topic: String::from(topic.topic()).into(),
                topic_id: topic.topic_id(),
                partitions: refused.into(),
                ..Default::default()
            });
        }
    }
    let mut body = FetchRequest::from(*fetch);
    body.topics = kept_topics.into();
    Split::Forward(RequestBody::Fetch(body), Some(Merge::Fetch(refused_topics)))
}

/// The broker's Fetch answer with the refused partitions added to their topics (by name, or
/// by id where the request named topics by id only), after the broker's own partitions.
#[cfg(feature = "api-fetch")]
fn merge_fetch<'a>(
    refused: Vec<FetchableTopicResponse<'static>>,
    view: crate::codec::messages::FetchResponseView<'a>,
) -> crate::codec::messages::FetchResponse<'a> {
    let mut response = crate::codec::messages::FetchResponse::from(view);
    let mut topics = into_vec(core::mem::take(&mut response.responses));
    for topic in refused {
        let same = |b: &FetchableTopicResponse<'_>| {
            if topic.topic.is_empty() {
                b.topic_id == topic.topic_id
            } else {
                b.topic.as_str() == topic.topic.as_str()
            }
        };
        match topics.iter_mut().find(|b| same(b)) {
            Some(found) => {
                let mut partitions = into_vec(core::mem::take(&mut found.partitions));
                partitions.extend(into_vec(topic.partitions));
                found.partitions = partitions.into();
            }
            None => topics.push(topic),
        }
    }
    response.responses = topics.into();
    response
}
