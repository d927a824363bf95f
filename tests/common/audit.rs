//! The docs' example filter (`kwire::proxy`'s module doc), shared by tests/proxy_lib.rs,
//! the real-client test of tests/proxy.rs and benches/proxy_filter.rs; and its twin for
//! reads.

use std::sync::Arc;

use kwire::dispatch::Request;
use kwire::filter::{Filter, Refusals, RequestAction};
use kwire::messages::RequestBodyView;
use kwire::proxy::ConnInfo;
use kwire::{ApiKey, ErrorCode};

/// The docs' example filter: Produce to `audit.*` topics refused for every principal but
/// `admin`, each refused topic answered with TOPIC_AUTHORIZATION_FAILED and the request's
/// other topics sent on; topics named by id resolved through the proxy's book, and a topic
/// it cannot name refused.
pub struct AuditTopics(pub Arc<ConnInfo>);

impl Filter for AuditTopics {
    fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
        api_key == ApiKey::Produce && self.0.principal().as_deref() != Some("admin")
    }
    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        let RequestBodyView::Produce(produce) = request.body else { return RequestAction::Pass };
        let mut refused = Refusals::new();
        for (i, topic) in produce.topic_data().iter().enumerate() {
            match self.0.topic_names().resolve(topic.name(), topic.topic_id()) {
                Some(name) if !name.starts_with("audit.") => {}
                _ => _ = refused.topic(i, ErrorCode::TopicAuthorizationFailed, None),
            }
        }
        RequestAction::Refuse(refused) // nothing refused: the request passes
    }
}

/// Reads (Fetch) of `audit.*` topics refused with TOPIC_AUTHORIZATION_FAILED, judged by
/// name; topics named by id resolved through the proxy's book, and a topic it cannot name
/// refused.
#[allow(dead_code)] // not every test that shares this module reads
pub struct AuditReads(pub Arc<ConnInfo>);

impl Filter for AuditReads {
    fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
        api_key == ApiKey::Fetch
    }
    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        let RequestBodyView::Fetch(fetch) = request.body else { return RequestAction::Pass };
        let mut refused = Refusals::new();
        for (i, topic) in fetch.topics().iter().enumerate() {
            match self.0.topic_names().resolve(topic.topic(), topic.topic_id()) {
                Some(name) if !name.starts_with("audit.") => {}
                _ => _ = refused.topic(i, ErrorCode::TopicAuthorizationFailed, None),
            }
        }
        RequestAction::Refuse(refused)
    }
}
