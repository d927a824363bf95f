//! `kwire::filter::Tenant` against a client that names other tenants' topics by id: the
//! topics it may not touch are refused in part (UNKNOWN_TOPIC_ID, as Kafka answers an id
//! it does not know), the rest of the request reaches the broker prefixed, and the client
//! gets one answer in its order. Produce v13 and Fetch v13 (typed partial answers),
//! DeleteTopics v6 and Metadata v12 (partial answers from the schemas).

use kwire::filter::{FilterChain, Tenant, Verdict};
use kwire::messages::delete_topics::{DeletableTopicResult, DeleteTopicState};
use kwire::messages::fetch::{
    FetchPartition, FetchTopic, FetchableTopicResponse, ForgottenTopic, PartitionData,
};
use kwire::messages::metadata::{MetadataRequestTopic, MetadataResponseTopic};
use kwire::messages::produce::{
    PartitionProduceData, PartitionProduceResponse, TopicProduceData, TopicProduceResponse,
};
use kwire::messages::*;
use kwire::types::Uuid;
use kwire::{AnyBody, ApiKey, ErrorCode, Str};

const PREFIX: &str = "tenant-a.";
const OWN: Uuid = Uuid([0x41; 16]);
const FOREIGN: Uuid = Uuid([0x42; 16]);
const UNSEEN: Uuid = Uuid([0x43; 16]);
const UNKNOWN_ID: i16 = 100;

fn request_frame(body: &impl AnyBody, version: i16, correlation_id: i32) -> Vec<u8> {
    let header = kwire::frame::RequestHeader { correlation_id, client_id: Some("app"), ..Default::default() };
    let n = kwire::dispatch::request_len(body, version, &header).unwrap();
    let mut out = vec![0u8; n];
    kwire::dispatch::encode_request(body, version, correlation_id, Some("app"), &mut out).unwrap();
    out.drain(..4);
    out
}

fn response_frame(body: &impl AnyBody, version: i16, correlation_id: i32) -> Vec<u8> {
    let n = kwire::dispatch::response_len(body, version).unwrap();
    let mut out = vec![0u8; n];
    kwire::dispatch::encode_response(body, version, correlation_id, &mut out).unwrap();
    out.drain(..4);
    out
}

/// A tenant that has seen a Metadata answer naming its own topic and another tenant's.
fn tenant() -> FilterChain {
    let mut chain = FilterChain::new();
    chain.push(Tenant::new(PREFIX));
    let topics = [
        MetadataResponseTopic { name: Some(Str::from("tenant-a.mine")), topic_id: OWN, ..Default::default() },
        MetadataResponseTopic {
            name: Some(Str::from("tenant-b.theirs")),
            topic_id: FOREIGN,
            ..Default::default()
        },
    ];
    let response = MetadataResponse { topics: (&topics[..]).into(), ..Default::default() };
    assert!(matches!(
        chain.on_response(&response_frame(&response, 12, 1), ApiKey::Metadata, 12),
        Verdict::Replace(_)
    ));
    chain
}

fn produce_topic(id: Uuid, partitions: &[i32]) -> TopicProduceData<'static> {
    let partition_data: Vec<PartitionProduceData<'static>> =
        partitions.iter().map(|&index| PartitionProduceData { index, ..Default::default() }).collect();
    TopicProduceData { topic_id: id, partition_data: partition_data.into(), ..Default::default() }
}

fn produce(acks: i16, topics: &[(Uuid, &[i32])]) -> ProduceRequest<'static> {
    let topics: Vec<_> = topics.iter().map(|(id, parts)| produce_topic(*id, parts)).collect();
    ProduceRequest { acks, timeout_ms: 1000, topic_data: topics.into(), ..Default::default() }
}

/// What the broker gets: (topic id, partitions) of a Produce v13 frame.
fn produced(frame: &[u8]) -> Vec<(Uuid, Vec<i32>)> {
    let request = kwire::dispatch::parse_request(frame).unwrap();
    let RequestBodyView::Produce(p) = request.body else { panic!("not a Produce") };
    p.topic_data()
        .iter()
        .map(|t| (t.topic_id(), t.partition_data().iter().map(|p| p.index()).collect()))
        .collect()
}

/// The broker's answer to a Produce v13 frame: every partition stored at offset 10 + index.
fn produce_answer(frame: &[u8]) -> Vec<u8> {
    let topics: Vec<TopicProduceResponse<'static>> = produced(frame)
        .into_iter()
        .map(|(id, parts)| TopicProduceResponse {
            topic_id: id,
            partition_responses: parts
                .iter()
                .map(|&index| PartitionProduceResponse {
                    index,
                    base_offset: 10 + i64::from(index),
                    ..Default::default()
                })
                .collect::<Vec<_>>()
                .into(),
            ..Default::default()
        })
        .collect();
    let correlation_id = kwire::dispatch::parse_request(frame).unwrap().header.correlation_id();
    response_frame(&ProduceResponse { responses: topics.into(), ..Default::default() }, 13, correlation_id)
}

/// (topic id, partition, error, base offset) of a Produce v13 answer, in its order.
fn produce_seen(frame: &[u8]) -> Vec<(Uuid, i32, i16, i64)> {
    let ResponseBodyView::Produce(p) =
        kwire::dispatch::parse_response(frame, ApiKey::Produce, 13).unwrap().body
    else {
        panic!()
    };
    let mut out = Vec::new();
    for t in p.responses().iter() {
        for part in t.partition_responses().iter() {
            out.push((t.topic_id(), part.index(), part.error_code(), part.base_offset()));
        }
    }
    out
}

#[test]
fn produce_by_id_stores_the_tenants_own_topics_and_refuses_the_rest() {
    let mut chain = tenant();
    // An attacking client mixes its own topic, another tenant's and one never seen.
    let body = produce(-1, &[(FOREIGN, &[0, 1]), (OWN, &[2, 0]), (UNSEEN, &[0]), (OWN, &[5])]);
    let Verdict::Replace(sent) = chain.on_request(&request_frame(&body, 13, 7)) else { panic!("split") };
    assert_eq!(kwire::dispatch::parse_request(&sent).unwrap().header.client_id(), Some("app"));
    assert_eq!(produced(&sent), [(OWN, vec![2, 0]), (OWN, vec![5])], "only the tenant's own topics go on");
    let Verdict::Replace(answer) = chain.on_response(&produce_answer(&sent), ApiKey::Produce, 13) else {
        panic!("merged")
    };
    assert_eq!(
        produce_seen(&answer),
        [
            (FOREIGN, 0, UNKNOWN_ID, -1),
            (FOREIGN, 1, UNKNOWN_ID, -1),
            (OWN, 2, 0, 12),
            (OWN, 0, 0, 10),
            (UNSEEN, 0, UNKNOWN_ID, -1),
            (OWN, 5, 0, 15),
        ],
        "one answer in the client's order"
    );
    // Nothing awaits a merge: the next answer passes as the broker gave it.
    let own = produce(-1, &[(OWN, &[1])]);
    let request = request_frame(&own, 13, 8);
    assert!(matches!(chain.on_request(&request), Verdict::Forward));
    assert!(matches!(chain.on_response(&produce_answer(&request), ApiKey::Produce, 13), Verdict::Forward));
}

#[test]
fn produce_with_every_topic_refused_never_reaches_the_broker() {
    let mut chain = tenant();
    let body = produce(-1, &[(FOREIGN, &[0]), (UNSEEN, &[3])]);
    let Verdict::Respond(answer) = chain.on_request(&request_frame(&body, 13, 9)) else { panic!("answered") };
    assert_eq!(produce_seen(&answer), [(FOREIGN, 0, UNKNOWN_ID, -1), (UNSEEN, 3, UNKNOWN_ID, -1)]);
    // acks = 0 expects no answer: the refused topics are dropped, the rest goes on.
    let body = produce(0, &[(FOREIGN, &[0]), (OWN, &[1])]);
    let Verdict::Replace(sent) = chain.on_request(&request_frame(&body, 13, 10)) else { panic!("split") };
    assert_eq!(produced(&sent), [(OWN, vec![1])]);
    let body = produce(0, &[(FOREIGN, &[0])]);
    assert_eq!(chain.on_request(&request_frame(&body, 13, 11)), Verdict::Drop);
}

fn fetch(topics: &[(Uuid, &[i32])], forgotten: &[Uuid]) -> FetchRequest<'static> {
    let topics: Vec<FetchTopic<'static>> = topics
        .iter()
        .map(|&(topic_id, parts)| FetchTopic {
            topic_id,
            partitions: parts
                .iter()
                .map(|&partition| FetchPartition {
                    partition,
                    partition_max_bytes: 1024,
                    ..Default::default()
                })
                .collect::<Vec<_>>()
                .into(),
            ..Default::default()
        })
        .collect();
    let forgotten: Vec<ForgottenTopic<'static>> = forgotten
        .iter()
        .map(|&topic_id| ForgottenTopic { topic_id, partitions: vec![0].into(), ..Default::default() })
        .collect();
    FetchRequest {
        replica_id: -1,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: topics.into(),
        forgotten_topics_data: forgotten.into(),
        ..Default::default()
    }
}

/// (topic id, partitions) fetched, and the forgotten topics' ids, of a Fetch frame.
fn fetched(frame: &[u8]) -> (Vec<(Uuid, Vec<i32>)>, Vec<Uuid>) {
    let RequestBodyView::Fetch(f) = kwire::dispatch::parse_request(frame).unwrap().body else { panic!() };
    let topics =
        f.topics().iter().map(|t| (t.topic_id(), t.partitions().iter().map(|p| p.partition()).collect()));
    (topics.collect(), f.forgotten_topics_data().iter().map(|t| t.topic_id()).collect())
}

fn fetch_answer(frame: &[u8], version: i16) -> Vec<u8> {
    let responses: Vec<FetchableTopicResponse<'static>> = fetched(frame)
        .0
        .into_iter()
        .map(|(topic_id, parts)| FetchableTopicResponse {
            topic_id,
            partitions: parts
                .iter()
                .map(|&partition_index| PartitionData {
                    partition_index,
                    high_watermark: 7,
                    ..Default::default()
                })
                .collect::<Vec<_>>()
                .into(),
            ..Default::default()
        })
        .collect();
    let correlation_id = kwire::dispatch::parse_request(frame).unwrap().header.correlation_id();
    response_frame(
        &FetchResponse { responses: responses.into(), ..Default::default() },
        version,
        correlation_id,
    )
}

fn fetch_seen(frame: &[u8], version: i16) -> Vec<(Uuid, i32, i16, i64)> {
    let ResponseBodyView::Fetch(f) =
        kwire::dispatch::parse_response(frame, ApiKey::Fetch, version).unwrap().body
    else {
        panic!()
    };
    let mut out = Vec::new();
    for t in f.responses().iter() {
        for p in t.partitions().iter() {
            out.push((t.topic_id(), p.partition_index(), p.error_code(), p.high_watermark()));
        }
    }
    out
}

#[test]
fn fetch_by_id_reads_the_tenants_own_topics_and_refuses_the_rest() {
    for version in [13, 16, 17] {
        let mut chain = tenant();
        let body = fetch(&[(OWN, &[0, 1]), (FOREIGN, &[0]), (UNSEEN, &[2])], &[FOREIGN, OWN]);
        let Verdict::Replace(sent) = chain.on_request(&request_frame(&body, version, 12)) else { panic!() };
        let (topics, forgotten) = fetched(&sent);
        assert_eq!(topics, [(OWN, vec![0, 1])], "v{version}: only the tenant's own topic is read");
        // A forgotten topic is no entry of the answer: another tenant's id there goes as a
        // stand-in, which no topic has.
        assert_eq!(forgotten.len(), 2);
        assert!(
            ![OWN, FOREIGN, UNSEEN, Uuid::ZERO].contains(&forgotten[0]),
            "v{version}: {:?}",
            forgotten[0]
        );
        assert_eq!(forgotten[1], OWN);
        let Verdict::Replace(answer) =
            chain.on_response(&fetch_answer(&sent, version), ApiKey::Fetch, version)
        else {
            panic!()
        };
        assert_eq!(
            fetch_seen(&answer, version),
            [(OWN, 0, 0, 7), (OWN, 1, 0, 7), (FOREIGN, 0, UNKNOWN_ID, -1), (UNSEEN, 2, UNKNOWN_ID, -1)],
            "v{version}"
        );
        // Every topic another tenant's: the fetch still goes (its session moves on), empty.
        let body = fetch(&[(FOREIGN, &[0])], &[]);
        let Verdict::Replace(sent) = chain.on_request(&request_frame(&body, version, 13)) else { panic!() };
        assert_eq!(fetched(&sent), (vec![], vec![]));
        let Verdict::Replace(answer) =
            chain.on_response(&fetch_answer(&sent, version), ApiKey::Fetch, version)
        else {
            panic!()
        };
        assert_eq!(fetch_seen(&answer, version), [(FOREIGN, 0, UNKNOWN_ID, -1)]);
    }
}

#[test]
fn delete_topics_by_id_deletes_only_the_tenants_own() {
    let mut chain = tenant();
    let topics = [
        DeleteTopicState { name: None, topic_id: FOREIGN, ..Default::default() },
        DeleteTopicState { name: Some(Str::from("logs")), topic_id: Uuid::ZERO, ..Default::default() },
        DeleteTopicState { name: None, topic_id: OWN, ..Default::default() },
    ];
    let body = DeleteTopicsRequest { topics: (&topics[..]).into(), timeout_ms: 1000, ..Default::default() };
    let Verdict::Replace(sent) = chain.on_request(&request_frame(&body, 6, 14)) else { panic!() };
    let RequestBodyView::DeleteTopics(d) = kwire::dispatch::parse_request(&sent).unwrap().body else {
        panic!()
    };
    let asked: Vec<(Option<String>, Uuid)> =
        d.topics().iter().map(|t| (t.name().map(String::from), t.topic_id())).collect();
    assert_eq!(asked, [(Some("tenant-a.logs".into()), Uuid::ZERO), (None, OWN)]);
    // The broker deletes both.
    let results = [
        DeletableTopicResult {
            name: Some(Str::from("tenant-a.logs")),
            topic_id: Uuid([0x44; 16]),
            ..Default::default()
        },
        DeletableTopicResult { name: Some(Str::from("tenant-a.mine")), topic_id: OWN, ..Default::default() },
    ];
    let answer = DeleteTopicsResponse { responses: (&results[..]).into(), ..Default::default() };
    let Verdict::Replace(got) = chain.on_response(&response_frame(&answer, 6, 14), ApiKey::DeleteTopics, 6)
    else {
        panic!()
    };
    let ResponseBodyView::DeleteTopics(d) =
        kwire::dispatch::parse_response(&got, ApiKey::DeleteTopics, 6).unwrap().body
    else {
        panic!()
    };
    let seen: Vec<(Option<String>, Uuid, i16)> =
        d.responses().iter().map(|t| (t.name().map(String::from), t.topic_id(), t.error_code())).collect();
    assert_eq!(
        seen,
        [
            (None, FOREIGN, UNKNOWN_ID),
            (Some("logs".into()), Uuid([0x44; 16]), 0),
            (Some("mine".into()), OWN, 0),
        ]
    );
    // Only the other tenant's topic, by id: answered without the broker.
    let only = [DeleteTopicState { name: None, topic_id: FOREIGN, ..Default::default() }];
    let body = DeleteTopicsRequest { topics: (&only[..]).into(), timeout_ms: 1000, ..Default::default() };
    let Verdict::Respond(got) = chain.on_request(&request_frame(&body, 6, 15)) else { panic!("answered") };
    let ResponseBodyView::DeleteTopics(d) =
        kwire::dispatch::parse_response(&got, ApiKey::DeleteTopics, 6).unwrap().body
    else {
        panic!()
    };
    let seen: Vec<(Uuid, i16)> = d.responses().iter().map(|t| (t.topic_id(), t.error_code())).collect();
    assert_eq!(seen, [(FOREIGN, ErrorCode::UnknownTopicId.to_i16())]);
}

#[test]
fn metadata_by_id_describes_only_the_tenants_own() {
    let mut chain = tenant();
    let topics = [
        MetadataRequestTopic { name: None, topic_id: FOREIGN, ..Default::default() },
        MetadataRequestTopic { name: None, topic_id: OWN, ..Default::default() },
    ];
    let body = MetadataRequest { topics: Some((&topics[..]).into()), ..Default::default() };
    let Verdict::Replace(sent) = chain.on_request(&request_frame(&body, 12, 16)) else { panic!() };
    let RequestBodyView::Metadata(m) = kwire::dispatch::parse_request(&sent).unwrap().body else { panic!() };
    let asked: Vec<Uuid> = m.topics().unwrap().iter().map(|t| t.topic_id()).collect();
    assert_eq!(asked, [OWN]);
    let answer_topics = [MetadataResponseTopic {
        name: Some(Str::from("tenant-a.mine")),
        topic_id: OWN,
        ..Default::default()
    }];
    let answer = MetadataResponse { topics: (&answer_topics[..]).into(), ..Default::default() };
    let Verdict::Replace(got) = chain.on_response(&response_frame(&answer, 12, 16), ApiKey::Metadata, 12)
    else {
        panic!()
    };
    let ResponseBodyView::Metadata(m) =
        kwire::dispatch::parse_response(&got, ApiKey::Metadata, 12).unwrap().body
    else {
        panic!()
    };
    let seen: Vec<(Option<String>, Uuid, i16)> =
        m.topics().iter().map(|t| (t.name().map(String::from), t.topic_id(), t.error_code())).collect();
    assert_eq!(seen, [(None, FOREIGN, UNKNOWN_ID), (Some("mine".into()), OWN, 0)]);
}
