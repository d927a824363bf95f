//! The filter chain's unit tests: answers and drops, what no filter can read, versions
//! enforced and clamped, the deny-list, chain order; each part of partial answers and broker
//! addresses in a file of its own.

use super::*;
use crate::codec::dispatch;
use crate::codec::messages::ResponseBodyView;
use crate::codec::messages::api_versions::ApiVersion;
use crate::codec::messages::{
    ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, ProduceRequest, ProduceResponse,
};
use crate::codec::types::List;

fn request(body: &impl AnyBody, version: i16, correlation_id: i32) -> Vec<u8> {
    let mut buf = vec![0u8; 256];
    let n = dispatch::encode_request(body, version, correlation_id, Some("c"), &mut buf).unwrap();
    buf.truncate(n);
    buf.drain(..4);
    buf
}

struct Answer;
impl Filter for Answer {
    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        match request.body.api_key() {
            ApiKey::Produce => RequestAction::Respond(ResponseBody::Produce(ProduceResponse::default())),
            ApiKey::Metadata => RequestAction::Drop,
            _ => RequestAction::Respond(ResponseBody::Produce(ProduceResponse::default())),
        }
    }
}

#[test]
fn answers_drops_and_their_rules() {
    let mut chain = FilterChain::new();
    chain.push(Answer);
    // An answer comes back with the request's correlation id and version.
    let produce = ProduceRequest { acks: -1, timeout_ms: 1000, ..Default::default() };
    let Verdict::Respond(frame) = chain.on_request(&request(&produce, 9, 41)) else { panic!() };
    let response = dispatch::parse_response(&frame, ApiKey::Produce, 9).unwrap();
    assert_eq!(response.header.correlation_id(), 41);
    // Answering acks=0, which expects nothing, drops it.
    let quiet = ProduceRequest { acks: 0, ..Default::default() };
    assert_eq!(chain.on_request(&request(&quiet, 9, 42)), Verdict::Drop);
    // Dropping a request that expects an answer closes instead of leaving a hole.
    assert!(matches!(chain.on_request(&request(&MetadataRequest::default(), 12, 43)), Verdict::Close(_)));
    // An answer of another API is refused.
    assert!(matches!(chain.on_request(&request(&ApiVersionsRequest::default(), 3, 44)), Verdict::Close(_)));
    // A frame no filter can read reaches no filter and closes the connection.
    let Verdict::Close(why) = chain.on_request(&[0, 99, 0, 0, 0, 0, 0, 1, 0xff, 0xff]) else { panic!() };
    assert_eq!(why, "refused: a request of API key 99, which kwire does not know");
}

/// Passes everything on; counts what it saw.
#[derive(Default)]
struct Observe(alloc::sync::Arc<core::sync::atomic::AtomicUsize>);
impl Filter for Observe {
    fn on_request<'a>(&mut self, _: &Request<'a>) -> RequestAction<'a> {
        self.0.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        RequestAction::Pass
    }
}

#[test]
fn requests_no_filter_can_read_close_the_connection_unless_the_chain_only_observes() {
    let produce = request(&ProduceRequest { acks: -1, timeout_ms: 1000, ..Default::default() }, 9, 1);
    let mut truncated = produce.clone();
    truncated.truncate(produce.len() - 3);
    let unknown_api = [0u8, 99, 0, 0, 0, 0, 0, 1, 0xff, 0xff];
    let bad_header = [0u8, 1];
    let mut closed = FilterChain::new();
    closed.push(Observe::default());
    for (frame, why) in [
        (&truncated[..], "refused: a Produce v9 request that does not decode"),
        (&unknown_api[..], "refused: a request of API key 99, which kwire does not know"),
        (&bad_header[..], "refused: a request whose header does not decode"),
    ] {
        let Verdict::Close(got) = closed.on_request(frame) else { panic!("{why}") };
        assert!(got.starts_with(why), "{got}");
    }
    assert_eq!(closed.on_request(&produce), Verdict::Forward);
    // The same, from a chain whose filter wants nothing: the body is still checked.
    struct Nothing;
    impl Filter for Nothing {
        fn wants_request(&self, _: ApiKey, _: i16) -> bool {
            false
        }
    }
    let mut quiet = FilterChain::new();
    quiet.push(Nothing);
    assert!(matches!(quiet.on_request(&truncated), Verdict::Close(_)));
    assert_eq!(quiet.on_request(&produce), Verdict::Forward);
    // A chain that only observes opts in to forwarding them unread.
    let mut observing = FilterChain::new();
    observing.push(Observe::default()).forward_unreadable();
    assert!(observing.forwards_unreadable());
    for frame in [&truncated[..], &unknown_api[..], &bad_header[..]] {
        assert_eq!(observing.on_request(frame), Verdict::Forward);
    }
    // Unless one of its filters must see every request.
    struct Strict;
    impl Filter for Strict {
        fn refuses_unreadable(&self) -> bool {
            true
        }
    }
    observing.push(Strict);
    assert!(!observing.forwards_unreadable());
    assert!(matches!(observing.on_request(&truncated), Verdict::Close(_)));
    // An empty chain judges nothing and forwards everything.
    let mut empty = FilterChain::new();
    assert_eq!(empty.on_request(&truncated), Verdict::Forward);
}

#[test]
fn versions_not_advertised_are_refused_as_kafka_refuses_them() {
    /// Handles Produce up to v12 only.
    struct UpTo12;
    impl Filter for UpTo12 {
        fn versions(&self, api_key: ApiKey, readable: Versions) -> Option<Versions> {
            match api_key {
                ApiKey::Produce => Some(Versions::new(readable.min, readable.max.min(12))),
                _ => Some(readable),
            }
        }
    }
    let seen = alloc::sync::Arc::new(core::sync::atomic::AtomicUsize::new(0));
    let mut chain = FilterChain::new();
    chain.push(UpTo12).push(Observe(seen.clone()));
    let produce =
        |v: i16| request(&ProduceRequest { acks: -1, timeout_ms: 1000, ..Default::default() }, v, 3);
    // Before any ApiVersions answer: what kwire reads and the filters handle.
    assert_eq!(chain.served(ApiKey::Produce), Some(Versions::new(3, 12)));
    assert_eq!(chain.on_request(&produce(12)), Verdict::Forward);
    let Verdict::Close(why) = chain.on_request(&produce(13)) else { panic!() };
    assert_eq!(why, "refused: Produce v13, a version this connection does not serve (3-12)");
    // After it: what it advertised. Kafka 4.x advertises Produce 0-13 and Metadata 0-13; the
    // chain advertises Produce 0-12 (from 0, as Kafka does) and serves 3-12.
    let keys = [
        ApiVersion { api_key: 0, min_version: 0, max_version: 13, ..Default::default() },
        ApiVersion { api_key: 3, min_version: 0, max_version: 10, ..Default::default() },
    ];
    assert_eq!(clamped(&mut chain, &keys, 3, 3), vec![(0, 0, 12), (3, 0, 10)]);
    assert_eq!(chain.served(ApiKey::Produce), Some(Versions::new(3, 12)));
    assert_eq!(chain.served(ApiKey::Metadata), Some(Versions::new(0, 10)));
    assert_eq!(chain.served(ApiKey::Fetch), None, "not in the broker's answer");
    let metadata = |v: i16| request(&MetadataRequest::default(), v, 4);
    assert_eq!(chain.on_request(&metadata(10)), Verdict::Forward);
    assert!(matches!(chain.on_request(&metadata(11)), Verdict::Close(_)));
    // Produce v0-v2, advertised but not served, are refused as Kafka refuses them.
    let mut v2 = produce(3);
    v2[2..4].copy_from_slice(&2i16.to_be_bytes());
    let Verdict::Close(why) = chain.on_request(&v2) else { panic!() };
    assert!(why.starts_with("refused: Produce v2"), "{why}");
    assert!(matches!(chain.on_request(&produce(13)), Verdict::Close(_)));
    // No refused request reached a filter: only the v12 Produce and the v10 Metadata.
    assert_eq!(seen.load(core::sync::atomic::Ordering::Relaxed), 2);
}

#[test]
fn deny_list_hides_apis_from_api_versions() {
    let mut chain = FilterChain::new();
    chain.push(DenyApis::new([ApiKey::Metadata]));
    let keys = [
        ApiVersion { api_key: 3, min_version: 0, max_version: 13, ..Default::default() },
        ApiVersion { api_key: 18, min_version: 0, max_version: 4, ..Default::default() },
    ];
    let body = ApiVersionsResponse { api_keys: List::Borrowed(&keys), ..Default::default() };
    let mut frame = vec![0u8; dispatch::response_len(&body, 3).unwrap()];
    dispatch::encode_response(&body, 3, 5, &mut frame).unwrap();
    let Verdict::Replace(new) = chain.on_response(&frame[4..], ApiKey::ApiVersions, 3) else { panic!() };
    let ResponseBodyView::ApiVersions(v) =
        dispatch::parse_response(&new, ApiKey::ApiVersions, 3).unwrap().body
    else {
        panic!()
    };
    let listed: Vec<i16> = v.api_keys().iter().map(|k| k.api_key()).collect();
    assert_eq!(listed, [18]);
    assert!(matches!(chain.on_request(&request(&MetadataRequest::default(), 12, 1)), Verdict::Close(_)));
    assert_eq!(chain.on_request(&request(&ApiVersionsRequest::default(), 3, 2)), Verdict::Forward);
}

/// Requests go first to last, responses last to first; each sees the one before's rewrite.
#[test]
fn chain_order() {
    struct Rename(&'static str);
    impl Filter for Rename {
        fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
            let id = alloc::format!("{}+{}", request.header.client_id().unwrap_or(""), self.0);
            RequestAction::RewriteHeader { client_id: Some(id) }
        }
    }
    let mut chain = FilterChain::new();
    chain.push(Rename("a")).push(Rename("b"));
    let Verdict::Replace(new) = chain.on_request(&request(&ApiVersionsRequest::default(), 3, 7)) else {
        panic!()
    };
    let r = dispatch::parse_request(&new).unwrap();
    assert_eq!((r.header.client_id(), r.header.correlation_id()), (Some("c+a+b"), 7));
}

/// The ApiVersions answer of a broker newer than kwire, through a chain with no filters.
fn clamped(
    chain: &mut FilterChain,
    keys: &[ApiVersion<'_>],
    version: i16,
    asked_at: i16,
) -> Vec<(i16, i16, i16)> {
    let body = ApiVersionsResponse { api_keys: List::Borrowed(keys), ..Default::default() };
    let mut frame = vec![0u8; dispatch::response_len(&body, version).unwrap()];
    dispatch::encode_response(&body, version, 5, &mut frame).unwrap();
    let new = match chain.on_response(&frame[4..], ApiKey::ApiVersions, asked_at) {
        Verdict::Replace(new) => new,
        Verdict::Forward => frame[4..].to_vec(),
        other => panic!("{other:?}"),
    };
    let response = dispatch::parse_response(&new, ApiKey::ApiVersions, version).unwrap();
    assert_eq!(response.header.correlation_id(), 5);
    let ResponseBodyView::ApiVersions(v) = response.body else { panic!() };
    v.api_keys().iter().map(|k| (k.api_key(), k.min_version(), k.max_version())).collect()
}

#[test]
fn a_broker_answering_differently_later_is_clamped_afresh() {
    // A chain keeps its last clamped answer: the same answer again gets the same bytes, a
    // different one (a broker upgraded, or another broker) is clamped anew.
    let metadata = ApiKey::Metadata.request_versions();
    let newer = [
        ApiVersion { api_key: 3, min_version: 0, max_version: metadata.max + 1, ..Default::default() },
        ApiVersion { api_key: 0, min_version: 3, max_version: 9, ..Default::default() },
    ];
    let older = [
        ApiVersion { api_key: 3, min_version: 0, max_version: metadata.max - 1, ..Default::default() },
        ApiVersion { api_key: 0, min_version: 3, max_version: 8, ..Default::default() },
    ];
    let mut chain = FilterChain::new();
    let newer_want = vec![(3, 0, metadata.max), (0, 0, 9)];
    let older_want = vec![(3, 0, metadata.max - 1), (0, 0, 8)];
    assert_eq!(clamped(&mut chain, &newer, 3, 3), newer_want);
    assert_eq!(chain.served(ApiKey::Metadata), Some(Versions::new(0, metadata.max)));
    assert_eq!(clamped(&mut chain, &newer, 3, 3), newer_want);
    assert_eq!(clamped(&mut chain, &older, 3, 3), older_want);
    assert_eq!(chain.served(ApiKey::Metadata), Some(Versions::new(0, metadata.max - 1)));
    assert_eq!(clamped(&mut chain, &newer, 3, 3), newer_want);
    assert_eq!(chain.served(ApiKey::Metadata), Some(Versions::new(0, metadata.max)));
    // The same answer read at another version is clamped at that version.
    assert_eq!(clamped(&mut chain, &newer, 0, 3), newer_want);
    // A filter pushed later cuts the next answer, even one seen before.
    struct NoMetadata;
    impl Filter for NoMetadata {
        fn versions(&self, api_key: ApiKey, readable: Versions) -> Option<Versions> {
            (api_key != ApiKey::Metadata).then_some(readable)
        }
    }
    chain.push(NoMetadata);
    assert_eq!(clamped(&mut chain, &newer, 3, 3), vec![(0, 0, 9)]);
    assert_eq!(chain.served(ApiKey::Metadata), None);
}

#[test]
fn api_versions_are_clamped_to_what_kwire_reads() {
    let metadata = ApiKey::Metadata.request_versions();
    let ours = ApiKey::ApiVersions.request_versions();
    let keys = [
        // Newer than kwire: cut to kwire's highest.
        ApiVersion { api_key: 3, min_version: 0, max_version: metadata.max + 1, ..Default::default() },
        // An API kwire does not know: left out.
        ApiVersion { api_key: 999, min_version: 0, max_version: 3, ..Default::default() },
        ApiVersion { api_key: 18, min_version: 0, max_version: ours.max + 5, ..Default::default() },
        // Within kwire's range: kept as it is.
        ApiVersion { api_key: 0, min_version: 3, max_version: 9, ..Default::default() },
    ];
    let mut chain = FilterChain::new();
    // Produce is advertised from 0, as Kafka 4.x advertises it.
    let want = vec![(3, 0, metadata.max), (18, 0, ours.max), (0, 0, 9)];
    assert_eq!(clamped(&mut chain, &keys, 3, 3), want);
    // The version-0 fallback (the broker did not read the version asked for) is clamped too.
    assert_eq!(clamped(&mut chain, &keys, 0, 3), want);
    // An answer kwire reads whole is forwarded as it came.
    let fine = [ApiVersion { api_key: 0, min_version: 0, max_version: 9, ..Default::default() }];
    let body = ApiVersionsResponse { api_keys: List::Borrowed(&fine), ..Default::default() };
    let mut frame = vec![0u8; dispatch::response_len(&body, 3).unwrap()];
    dispatch::encode_response(&body, 3, 5, &mut frame).unwrap();
    assert_eq!(chain.on_response(&frame[4..], ApiKey::ApiVersions, 3), Verdict::Forward);
}

#[test]
fn filters_declare_the_versions_they_handle() {
    /// Handles Produce from v3 to v7 only, and no Metadata.
    struct Old;
    impl Filter for Old {
        fn versions(&self, api_key: ApiKey, readable: Versions) -> Option<Versions> {
            match api_key {
                ApiKey::Produce => Some(Versions::new(3, 7)),
                ApiKey::Metadata => None,
                _ => Some(readable),
            }
        }
    }
    let keys = [
        ApiVersion { api_key: 0, min_version: 0, max_version: 11, ..Default::default() },
        ApiVersion { api_key: 3, min_version: 0, max_version: 12, ..Default::default() },
        ApiVersion { api_key: 1, min_version: 4, max_version: 17, ..Default::default() },
    ];
    let mut chain = FilterChain::new();
    chain.push(Old);
    assert_eq!(clamped(&mut chain, &keys, 3, 3), vec![(0, 0, 7), (1, 4, 17)]);
}

#[test]
fn api_versions_at_a_version_kwire_does_not_read_is_answered_as_a_broker_does() {
    let mut chain = FilterChain::new();
    let ours = ApiKey::ApiVersions.request_versions();
    // A request header v2 of ApiVersions at a version past kwire's, with an empty body.
    let mut frame = Vec::new();
    frame.extend_from_slice(&18i16.to_be_bytes());
    frame.extend_from_slice(&(ours.max + 1).to_be_bytes());
    frame.extend_from_slice(&77i32.to_be_bytes());
    frame.extend_from_slice(&[0xff, 0xff, 0]);
    let Verdict::Respond(answer) = chain.on_request(&frame) else { panic!() };
    let response = dispatch::parse_response(&answer, ApiKey::ApiVersions, 0).unwrap();
    assert_eq!(response.header.correlation_id(), 77);
    let ResponseBodyView::ApiVersions(v) = response.body else { panic!() };
    assert_eq!(v.error_code(), crate::ErrorCode::UnsupportedVersion.to_i16());
    let listed: Vec<_> =
        v.api_keys().iter().map(|k| (k.api_key(), k.min_version(), k.max_version())).collect();
    assert_eq!(listed, [(18, ours.min, ours.max)]);
}

mod addresses;
mod partial_answers;
#[cfg(feature = "reflect")]
mod partial_by_schema;
mod partial_fetch;
