//! Partial answers to Fetch requests.

use super::*;
use crate::ErrorCode;
use crate::Uuid;
use crate::codec::messages::FetchRequest;
use crate::codec::messages::fetch::{FetchPartition, FetchTopic, FetchableTopicResponse, PartitionData};
use crate::codec::messages::{FetchResponse, RequestBodyView};

/// Refuses reads of topics whose name (or, by id, the book's name) starts with `audit`.
struct NoAuditReads(TopicNames);
impl Filter for NoAuditReads {
    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        let RequestBodyView::Fetch(f) = request.body else { return RequestAction::Pass };
        let mut refused = Refusals::new();
        for (t, topic) in f.topics().iter().enumerate() {
            match self.0.resolve(topic.topic(), topic.topic_id()) {
                Some(name) if !name.starts_with("audit") => {}
                _ => _ = refused.topic(t, ErrorCode::TopicAuthorizationFailed, None),
            }
        }
        RequestAction::Refuse(refused)
    }
}

fn fetch(topics: &[(&'static str, u8, &[i32])]) -> FetchRequest<'static> {
    let topics: Vec<FetchTopic<'static>> = topics
        .iter()
        .map(|&(name, id, parts)| FetchTopic {
            topic: name.into(),
            topic_id: if id == 0 { Uuid::ZERO } else { Uuid([id; 16]) },
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
    FetchRequest {
        replica_id: -1,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: topics.into(),
        ..Default::default()
    }
}

/// What the broker answers a forwarded fetch: every partition asked, high watermark 7.
fn answer(sent: &[u8], version: i16) -> Vec<u8> {
    let request = dispatch::parse_request(sent).unwrap();
    let RequestBodyView::Fetch(f) = request.body else { panic!() };
    let responses: Vec<FetchableTopicResponse<'static>> = f
        .topics()
        .iter()
        .map(|t| FetchableTopicResponse {
            topic: String::from(t.topic()).into(),
            topic_id: t.topic_id(),
            partitions: t
                .partitions()
                .iter()
                .map(|p| PartitionData {
                    partition_index: p.partition(),
                    high_watermark: 7,
                    ..Default::default()
                })
                .collect::<Vec<_>>()
                .into(),
            ..Default::default()
        })
        .collect();
    let body = FetchResponse { responses: responses.into(), ..Default::default() };
    let mut frame = vec![0u8; dispatch::response_len(&body, version).unwrap()];
    dispatch::encode_response(&body, version, request.header.correlation_id(), &mut frame).unwrap();
    frame.drain(..4);
    frame
}

fn seen(frame: &[u8], version: i16) -> Vec<(String, i32, i16, i64)> {
    let ResponseBodyView::Fetch(f) = dispatch::parse_response(frame, ApiKey::Fetch, version).unwrap().body
    else {
        panic!()
    };
    let mut out = Vec::new();
    for t in f.responses().iter() {
        let name =
            if t.topic().is_empty() { alloc::format!("#{}", t.topic_id().0[0]) } else { t.topic().into() };
        for p in t.partitions().iter() {
            out.push((name.clone(), p.partition_index(), p.error_code(), p.high_watermark()));
        }
    }
    out
}

#[test]
fn refused_topics_are_answered_beside_the_brokers_partitions() {
    let mut chain = FilterChain::new();
    chain.push(NoAuditReads(TopicNames::new()));
    let body = fetch(&[("orders", 0, &[0, 1]), ("audit.logins", 0, &[0])]);
    let Verdict::Replace(sent) = chain.on_request(&request(&body, 12, 5)) else { panic!() };
    let got = chain.on_response(&answer(&sent, 12), ApiKey::Fetch, 12);
    let Verdict::Replace(merged) = got else { panic!("{got:?}") };
    let auth = ErrorCode::TopicAuthorizationFailed.to_i16();
    assert_eq!(
        seen(&merged, 12),
        [("orders".into(), 0, 0, 7), ("orders".into(), 1, 0, 7), ("audit.logins".into(), 0, auth, -1)]
    );
    // Every topic refused: the request still goes to the broker (a fetch session's
    // epoch moves on with it), with nothing to fetch, and the refusal is merged in.
    let body = fetch(&[("audit.logins", 0, &[0])]);
    let Verdict::Replace(sent) = chain.on_request(&request(&body, 12, 6)) else { panic!() };
    let RequestBodyView::Fetch(f) = dispatch::parse_request(&sent).unwrap().body else { panic!() };
    assert_eq!(f.topics().len(), 0);
    let Verdict::Replace(merged) = chain.on_response(&answer(&sent, 12), ApiKey::Fetch, 12) else { panic!() };
    assert_eq!(seen(&merged, 12), [("audit.logins".into(), 0, auth, -1)]);
    assert!(chain.merges.is_empty(), "nothing left awaiting a merge");
}

#[test]
fn topics_named_by_id_are_judged_by_their_names() {
    let names = TopicNames::new();
    names.learn(Uuid([1; 16]), "orders");
    names.learn(Uuid([2; 16]), "audit.logins");
    let mut chain = FilterChain::new();
    chain.push(NoAuditReads(names));
    let body = fetch(&[("", 2, &[0]), ("", 1, &[0]), ("", 9, &[3])]);
    let Verdict::Replace(sent) = chain.on_request(&request(&body, 13, 8)) else { panic!() };
    let Verdict::Replace(merged) = chain.on_response(&answer(&sent, 13), ApiKey::Fetch, 13) else { panic!() };
    let auth = ErrorCode::TopicAuthorizationFailed.to_i16();
    assert_eq!(
        seen(&merged, 13),
        [("#1".into(), 0, 0, 7), ("#2".into(), 0, auth, -1), ("#9".into(), 3, auth, -1)]
    );
}
