//! Partial answers: a filter refuses some entries of a request ([`Refusals`], through
//! [`super::RequestAction::Refuse`]); the chain forwards the rest, and merges the broker's
//! answer with the refused entries into one answer, in the client's order.
//!
//! Each API with per-topic or per-partition entries needs its own split and merge; the
//! APIs served are listed by [`Refusals::supported`]. A refusal for any other API closes
//! the connection (fail closed), with the reason.

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

    /// The APIs whose requests may be answered in part.
    pub fn supported(api_key: ApiKey) -> bool {
        matches!(api_key, ApiKey::Produce | ApiKey::Fetch)
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
    /// The API cannot be answered in part.
    Unsupported,
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

/// Splits a request: what goes to the broker, and what its answer is merged with.
pub(super) fn split<'a>(body: &RequestBodyView<'a>, refusals: &Refusals) -> Split<'a> {
    match body {
        #[cfg(feature = "api-produce")]
        RequestBodyView::Produce(produce) => split_produce(produce, refusals),
        #[cfg(feature = "api-fetch")]
        RequestBodyView::Fetch(fetch) => split_fetch(fetch, refusals),
        _ => {
            let _ = refusals;
            Split::Unsupported
        }
    }
}

/// Merges the broker's answer (a response body view of the same API) with the refused
/// entries; `None` if the answer is not of the API.
pub(super) fn merge<'a>(
    merge: Merge,
    response: &crate::codec::messages::ResponseBodyView<'a>,
) -> Option<ResponseBody<'a>> {
    match (merge, response) {
        #[cfg(feature = "api-produce")]
        (Merge::Produce(topics), crate::codec::messages::ResponseBodyView::Produce(view)) => {
            Some(ResponseBody::Produce(merge_produce(topics, *view)))
        }
        #[cfg(feature = "api-fetch")]
        (Merge::Fetch(refused), crate::codec::messages::ResponseBodyView::Fetch(view)) => {
            Some(ResponseBody::Fetch(merge_fetch(refused, *view)))
        }
        #[allow(unreachable_patterns)]
        _ => None,
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
