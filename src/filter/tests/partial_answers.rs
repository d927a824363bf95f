//! Partial answers through the chain: refused entries merged with the broker's answer.

use super::*;
use crate::ErrorCode;
use crate::Uuid;
use crate::codec::messages::produce::{
    PartitionProduceData, PartitionProduceResponse, TopicProduceData, TopicProduceResponse,
};
use crate::codec::messages::{ProduceRequestView, RequestBodyView};

/// Refuses topics whose name (or, by id, the book's name) starts with `secret`, and
/// partition 1 of every other topic with a message.
struct NoSecrets(TopicNames);
impl Filter for NoSecrets {
    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        let RequestBodyView::Produce(p) = request.body else { return RequestAction::Pass };
        let mut refused = Refusals::new();
        for (t, topic) in p.topic_data().iter().enumerate() {
            match self.0.resolve(topic.name(), topic.topic_id()) {
                Some(name) if !name.starts_with("secret") => {
                    for (i, partition) in topic.partition_data().iter().enumerate() {
                        if partition.index() == 1 {
                            refused.partition(t, i, ErrorCode::PolicyViolation, Some("not partition 1"));
                        }
                    }
                }
                _ => _ = refused.topic(t, ErrorCode::TopicAuthorizationFailed, None),
            }
        }
        RequestAction::Refuse(refused)
    }
}

fn topic(name: &'static str, id: u8, partitions: &[i32]) -> TopicProduceData<'static> {
    let partition_data: Vec<PartitionProduceData<'static>> =
        partitions.iter().map(|&index| PartitionProduceData { index, ..Default::default() }).collect();
    TopicProduceData {
        name: name.into(),
        topic_id: if id == 0 { Uuid::ZERO } else { Uuid([id; 16]) },
        partition_data: partition_data.into(),
        ..Default::default()
    }
}

fn produce(acks: i16, topics: Vec<TopicProduceData<'static>>) -> ProduceRequest<'static> {
    ProduceRequest { acks, timeout_ms: 1000, topic_data: topics.into(), ..Default::default() }
}

/// The broker's answer to a forwarded request: every partition it got, error 0, base
/// offset = its index (topics in reverse, to check the merge restores the client's order).
fn broker_answer(sent: &ProduceRequestView<'_>, version: i16, correlation_id: i32) -> Vec<u8> {
    let mut topics: Vec<TopicProduceResponse<'static>> = sent
        .topic_data()
        .iter()
        .map(|t| TopicProduceResponse {
            name: String::from(t.name()).into(),
            topic_id: t.topic_id(),
            partition_responses: t
                .partition_data()
                .iter()
                .map(|p| PartitionProduceResponse {
                    index: p.index(),
                    base_offset: i64::from(p.index()),
                    ..Default::default()
                })
                .collect::<Vec<_>>()
                .into(),
            ..Default::default()
        })
        .collect();
    topics.reverse();
    let body = ProduceResponse { responses: topics.into(), ..Default::default() };
    let mut frame = vec![0u8; dispatch::response_len(&body, version).unwrap()];
    dispatch::encode_response(&body, version, correlation_id, &mut frame).unwrap();
    frame.drain(..4);
    frame
}

/// (topic name or id byte, [(partition, error, base offset)]) of an answer.
type Seen = Vec<(String, Vec<(i32, i16, i64)>)>;

fn seen(frame: &[u8], version: i16) -> Seen {
    let ResponseBodyView::Produce(p) =
        dispatch::parse_response(frame, ApiKey::Produce, version).unwrap().body
    else {
        panic!()
    };
    p.responses()
        .iter()
        .map(|t| {
            let name =
                if t.name().is_empty() { alloc::format!("#{}", t.topic_id().0[0]) } else { t.name().into() };
            let parts = t
                .partition_responses()
                .iter()
                .map(|p| (p.index(), p.error_code(), p.base_offset()))
                .collect();
            (name, parts)
        })
        .collect()
}

#[test]
fn the_rest_goes_on_and_one_answer_comes_back_in_the_clients_order() {
    let names = TopicNames::new();
    let mut chain = FilterChain::new();
    chain.push(NoSecrets(names.clone()));
    let request_body = produce(
        -1,
        vec![topic("orders", 0, &[0, 1, 2]), topic("secret-x", 0, &[0]), topic("audit", 0, &[1])],
    );
    let Verdict::Replace(sent) = chain.on_request(&request(&request_body, 9, 7)) else { panic!() };
    let sent = dispatch::parse_request(&sent).unwrap();
    assert_eq!(sent.header.correlation_id(), 7);
    assert_eq!(sent.header.client_id(), Some("c"), "the header is kept");
    let RequestBodyView::Produce(forwarded) = sent.body else { panic!() };
    let forwarded_parts: Vec<(&str, Vec<i32>)> = forwarded
        .topic_data()
        .iter()
        .map(|t| (t.name(), t.partition_data().iter().map(|p| p.index()).collect()))
        .collect();
    assert_eq!(forwarded_parts, [("orders", vec![0, 2])], "audit's only partition is refused");
    let Verdict::Replace(answer) = chain.on_response(&broker_answer(&forwarded, 9, 7), ApiKey::Produce, 9)
    else {
        panic!()
    };
    let (policy, auth) = (ErrorCode::PolicyViolation.to_i16(), ErrorCode::TopicAuthorizationFailed.to_i16());
    assert_eq!(
        seen(&answer, 9),
        [
            ("orders".into(), vec![(0, 0, 0), (1, policy, -1), (2, 0, 2)]),
            ("secret-x".into(), vec![(0, auth, -1)]),
            ("audit".into(), vec![(1, policy, -1)]),
        ]
    );
    // The message is in the answer where the version has one.
    let ResponseBodyView::Produce(p) = dispatch::parse_response(&answer, ApiKey::Produce, 9).unwrap().body
    else {
        panic!()
    };
    let orders = p.responses().iter().next().unwrap();
    assert_eq!(orders.partition_responses().iter().nth(1).unwrap().error_message(), Some("not partition 1"));
    // The next answer, not answered in part, passes as it came.
    let plain = request(&produce(-1, vec![topic("orders", 0, &[0])]), 9, 8);
    assert_eq!(chain.on_request(&plain), Verdict::Forward);
    let RequestBodyView::Produce(view) = dispatch::parse_request(&plain).unwrap().body else { panic!() };
    let answer = broker_answer(&view, 9, 8);
    assert_eq!(chain.on_response(&answer, ApiKey::Produce, 9), Verdict::Forward);
}

#[test]
fn topics_named_by_id_are_refused_by_name_and_merged_by_id() {
    let names = TopicNames::new();
    names.learn(Uuid([1; 16]), "orders");
    names.learn(Uuid([2; 16]), "secret-x");
    let mut chain = FilterChain::new();
    chain.push(NoSecrets(names.clone()));
    // v13: ids only; #3 is an id nobody named: refused, as a policy filter must.
    let body = produce(-1, vec![topic("", 2, &[0]), topic("", 1, &[0]), topic("", 3, &[0])]);
    let Verdict::Replace(sent) = chain.on_request(&request(&body, 13, 9)) else { panic!() };
    let RequestBodyView::Produce(forwarded) = dispatch::parse_request(&sent).unwrap().body else { panic!() };
    assert_eq!(forwarded.topic_data().iter().map(|t| t.topic_id()).collect::<Vec<_>>(), [Uuid([1; 16])]);
    let Verdict::Replace(answer) = chain.on_response(&broker_answer(&forwarded, 13, 9), ApiKey::Produce, 13)
    else {
        panic!()
    };
    let auth = ErrorCode::TopicAuthorizationFailed.to_i16();
    assert_eq!(
        seen(&answer, 13),
        [
            ("#2".into(), vec![(0, auth, -1)]),
            ("#1".into(), vec![(0, 0, 0)]),
            ("#3".into(), vec![(0, auth, -1)])
        ]
    );
}

#[test]
fn everything_refused_is_answered_without_the_broker_and_acks_zero_is_dropped() {
    let mut chain = FilterChain::new();
    chain.push(NoSecrets(TopicNames::new()));
    let body = produce(-1, vec![topic("secret-a", 0, &[0, 1]), topic("secret-b", 0, &[3])]);
    let Verdict::Respond(answer) = chain.on_request(&request(&body, 9, 11)) else { panic!() };
    assert_eq!(dispatch::parse_response(&answer, ApiKey::Produce, 9).unwrap().header.correlation_id(), 11);
    let auth = ErrorCode::TopicAuthorizationFailed.to_i16();
    assert_eq!(
        seen(&answer, 9),
        [("secret-a".into(), vec![(0, auth, -1), (1, auth, -1)]), ("secret-b".into(), vec![(3, auth, -1)])]
    );
    // acks=0 expects no answer: all refused is dropped, part refused goes on with
    // nothing kept to merge.
    let quiet = produce(0, vec![topic("secret-a", 0, &[0])]);
    assert_eq!(chain.on_request(&request(&quiet, 9, 12)), Verdict::Drop);
    let quiet = produce(0, vec![topic("secret-a", 0, &[0]), topic("orders", 0, &[0])]);
    assert!(matches!(chain.on_request(&request(&quiet, 9, 13)), Verdict::Replace(_)));
    assert!(chain.merges.is_empty());
}

#[test]
fn a_refusal_of_an_api_without_partial_answers_closes_the_connection() {
    struct RefuseAny;
    impl Filter for RefuseAny {
        fn on_request<'a>(&mut self, _: &Request<'a>) -> RequestAction<'a> {
            let mut r = Refusals::new();
            r.topic(0, ErrorCode::TopicAuthorizationFailed, None);
            RequestAction::Refuse(r)
        }
    }
    // Heartbeat has no per-topic entries.
    assert!(!Refusals::supported(ApiKey::Heartbeat));
    let mut chain = FilterChain::new();
    chain.push(RefuseAny);
    let heartbeat = crate::codec::messages::HeartbeatRequest::default();
    let Verdict::Close(why) = chain.on_request(&request(&heartbeat, 4, 1)) else { panic!() };
    assert!(why.contains("cannot be answered in part"), "{why}");
}
