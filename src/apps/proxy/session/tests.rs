//! The session's unit tests: pairing, answers in order, authentication, the one parse.

use super::*;
use crate::codec::messages::{
    ApiVersionsRequest, MetadataRequest, MetadataResponse, ResponseBody, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use crate::filter::{Filter, RequestAction};
use crate::{AnyBody, dispatch};

fn request(body: &impl AnyBody, version: i16, correlation_id: i32) -> Vec<u8> {
    let mut buf = vec![0u8; 512];
    let n = dispatch::encode_request(body, version, correlation_id, Some("app"), &mut buf).unwrap();
    buf.truncate(n);
    buf.drain(..4);
    buf
}

fn response(body: &impl AnyBody, version: i16, correlation_id: i32) -> Vec<u8> {
    let mut buf = vec![0u8; dispatch::response_len(body, version).unwrap()];
    dispatch::encode_response(body, version, correlation_id, &mut buf).unwrap();
    buf.drain(..4);
    buf
}

fn session(filters: FilterChain) -> Session<u32> {
    Session::new(Arc::new(ConnInfo::new(1, "127.0.0.1:5000".parse().unwrap(), "b:9092".into())), filters)
}

/// Answers Metadata itself.
struct AnswerMetadata;
impl Filter for AnswerMetadata {
    fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
        api_key == ApiKey::Metadata
    }
    fn on_request<'a>(&mut self, _: &dispatch::Request<'a>) -> RequestAction<'a> {
        RequestAction::Respond(ResponseBody::Metadata(MetadataResponse::default()))
    }
}

#[test]
fn requests_are_paired_with_their_answers_in_order() {
    let mut s = session(FilterChain::new());
    let now = Instant::now();
    let a = s.on_client_frame(&request(&ApiVersionsRequest::default(), 3, 1), now, |_| 10);
    assert_eq!(a.action, Action::Forward);
    assert!(matches!(
        a.head,
        RequestHead::Request { api_key: 18, api_version: 3, correlation_id: 1, expects: true, .. }
    ));
    let b = s.on_client_frame(&request(&MetadataRequest::default(), 12, 2), now, |_| 20);
    assert_eq!(b.action, Action::Forward);
    assert_eq!(s.in_flight(), 2);
    // The broker's answers come back paired, with what was kept of their requests.
    let got = s.on_broker_frame(&response(&crate::codec::messages::ApiVersionsResponse::default(), 3, 1));
    let Answer::Paired(e, _) = got.answer else { panic!("{got:?}") };
    assert_eq!((e.api_key, e.api_version, e.correlation_id, e.request.tag), (ApiKey::ApiVersions, 3, 1, 10));
    let got = s.on_broker_frame(&response(&MetadataResponse::default(), 12, 2));
    let Answer::Paired(e, _) = got.answer else { panic!() };
    assert_eq!(e.request.tag, 20);
    // An answer to nothing is reported, not paired, and sent on.
    let got = s.on_broker_frame(&response(&MetadataResponse::default(), 12, 99));
    assert!(matches!(got.answer, Answer::Unpaired(_)));
    assert_eq!(got.action, Action::Forward);
    // A header that does not parse is sent on and reported.
    let got = s.on_client_frame(&[0, 3], now, |_| 0);
    assert!(matches!(got.head, RequestHead::Bad(_)));
}

#[test]
fn a_filters_answer_waits_for_the_broker_answers_before_it() {
    let mut chain = FilterChain::new();
    chain.push(AnswerMetadata);
    let mut s = session(chain);
    let now = Instant::now();
    // Nothing before it: due at once.
    let a = s.on_client_frame(&request(&MetadataRequest::default(), 12, 1), now, |_| 1);
    assert_eq!(a.action, Action::Hold);
    let answer = s.take_answer().expect("due now");
    assert_eq!(answer.exchange.correlation_id, 1);
    let parsed = dispatch::parse_response(&answer.frame, ApiKey::Metadata, 12).unwrap();
    assert_eq!(parsed.header.correlation_id(), 1);
    assert!(s.take_answer().is_none());
    // Behind a request the broker has not answered yet: it follows that answer.
    s.on_client_frame(&request(&ApiVersionsRequest::default(), 3, 2), now, |_| 2);
    s.on_client_frame(&request(&MetadataRequest::default(), 12, 3), now, |_| 3);
    s.on_client_frame(&request(&MetadataRequest::default(), 12, 4), now, |_| 4);
    assert!(s.take_answer().is_none(), "not before the broker's answer to 2");
    let got = s.on_broker_frame(&response(&crate::codec::messages::ApiVersionsResponse::default(), 3, 2));
    assert!(matches!(got.answer, Answer::Paired(ref e, _) if e.correlation_id == 2));
    let ids: Vec<i32> = core::iter::from_fn(|| s.take_answer()).map(|a| a.exchange.correlation_id).collect();
    assert_eq!(ids, [3, 4]);
    assert_eq!(s.in_flight(), 0);
}

#[test]
fn authentication_is_observed_and_the_principal_known_once_the_broker_accepts() {
    let mut s = session(FilterChain::new());
    let now = Instant::now();
    let hs = SaslHandshakeRequest { mechanism: "PLAIN".into() };
    let got = s.on_client_frame(&request(&hs, 1, 1), now, |_| 0);
    assert_eq!(got.auth, Some(AuthNote::Mechanism("PLAIN".into())));
    s.on_broker_frame(&response(&SaslHandshakeResponse::default(), 1, 1));
    let token =
        SaslAuthenticateRequest { auth_bytes: (&b"\0alice\0secret"[..]).into(), ..Default::default() };
    let got = s.on_client_frame(&request(&token, 2, 2), now, |_| 0);
    assert_eq!(got.auth, Some(AuthNote::User("alice".into())));
    assert_eq!(s.info().principal(), None, "not before the broker says yes");
    let got = s.on_broker_frame(&response(&SaslAuthenticateResponse::default(), 2, 2));
    assert_eq!(got.auth, Some(AuthNote::Accepted));
    assert_eq!(s.info().principal().as_deref(), Some("alice"));
    assert_eq!(s.info().mechanism().as_deref(), Some("PLAIN"));
}

#[test]
fn sasl_v0_tokens_pass_undecoded_and_end_with_the_brokers_token() {
    let mut s = session(FilterChain::new());
    let now = Instant::now();
    let hs = SaslHandshakeRequest { mechanism: "PLAIN".into() };
    s.on_client_frame(&request(&hs, 0, 1), now, |_| 0);
    s.on_broker_frame(&response(&SaslHandshakeResponse::default(), 0, 1));
    // The client's raw token: no Kafka header, never parsed as one.
    let got = s.on_client_frame(b"\0bob\0pw", now, |_| 0);
    assert_eq!(got.head, RequestHead::Token);
    assert_eq!(got.auth, Some(AuthNote::User("bob".into())));
    let got = s.on_broker_frame(b"");
    assert!(matches!(got.answer, Answer::Token));
    assert_eq!(got.auth, Some(AuthNote::Accepted));
    assert_eq!(s.info().principal().as_deref(), Some("bob"));
    // Kafka requests again after it.
    let got = s.on_client_frame(&request(&MetadataRequest::default(), 12, 2), now, |_| 0);
    assert!(matches!(got.head, RequestHead::Request { api_key: 3, .. }));
}

/// Reads every frame and passes it.
struct Observe;
impl Filter for Observe {}

#[test]
fn the_one_parse_is_handed_on_with_the_frame() {
    let now = Instant::now();
    // No reader of a Metadata request's body: nothing parses it, and the hooks parse it.
    let mut s = session(FilterChain::new());
    let got = s.on_client_frame(&request(&MetadataRequest::default(), 12, 1), now, |_| 0);
    assert_eq!((got.action, got.read), (Action::Forward, None));
    // A Metadata answer feeds the book of topic names: parsed once, and said so.
    let got = s.on_broker_frame(&response(&MetadataResponse::default(), 12, 1));
    assert_eq!((got.action, got.read_at), (Action::Forward, Some(12)));
    // A filter that reads the request: its parse is handed on.
    let mut chain = FilterChain::new();
    chain.push(Observe);
    let mut s = session(chain);
    let got = s.on_client_frame(&request(&MetadataRequest::default(), 12, 2), now, |_| 0);
    assert_eq!((got.action, got.read), (Action::Forward, Some(Ok(()))));
    // A body that does not decode: the parse's error is handed on (the chain forwards
    // nothing it cannot read, so the connection closes).
    let mut bad = request(&MetadataRequest::default(), 12, 3);
    bad.push(0xff);
    bad.truncate(bad.len() - 2);
    let got = s.on_client_frame(&bad, now, |_| 0);
    assert!(matches!(got.read, Some(Err(_))), "{got:?}");
    assert!(matches!(got.action, Action::Close(_)));
}

#[test]
fn acks_zero_produce_is_not_awaited() {
    let mut s = session(FilterChain::new());
    let now = Instant::now();
    let quiet = crate::codec::messages::ProduceRequest { acks: 0, ..Default::default() };
    let got = s.on_client_frame(&request(&quiet, 9, 1), now, |_| 0);
    assert!(matches!(got.head, RequestHead::Request { expects: false, .. }));
    assert_eq!(s.in_flight(), 0);
}
