//! The docs' example filter (`kwire::proxy`'s module doc), shared by tests/proxy_lib.rs,
//! the real-client test of tests/proxy.rs and benches/proxy_filter.rs.

use std::sync::Arc;

use kwire::dispatch::Request;
use kwire::filter::{Filter, RequestAction};
use kwire::messages::produce::{PartitionProduceResponse, TopicProduceResponse};
use kwire::messages::{ProduceResponse, RequestBodyView, ResponseBody};
use kwire::proxy::ConnInfo;
use kwire::{ApiKey, ErrorCode};

/// The docs' example filter: Produce to `audit.*` topics refused for every principal but
/// `admin`, each partition answered with TOPIC_AUTHORIZATION_FAILED.
pub struct AuditTopics(pub Arc<ConnInfo>);

impl Filter for AuditTopics {
    fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
        api_key == ApiKey::Produce && self.0.principal().as_deref() != Some("admin")
    }
    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        let RequestBodyView::Produce(produce) = request.body else { return RequestAction::Pass };
        if !produce.topic_data().iter().any(|t| t.name().starts_with("audit.")) {
            return RequestAction::Pass;
        }
        let refused = |p: u32| PartitionProduceResponse {
            index: p as i32,
            error_code: ErrorCode::TopicAuthorizationFailed.to_i16(),
            ..Default::default()
        };
        let responses = produce.topic_data().iter().map(|t| TopicProduceResponse {
            name: t.name().into(),
            topic_id: t.topic_id(),
            partition_responses: (0..t.partition_data().len() as u32).map(refused).collect::<Vec<_>>().into(),
            ..Default::default()
        });
        let body = ProduceResponse { responses: responses.collect::<Vec<_>>().into(), ..Default::default() };
        RequestAction::Respond(ResponseBody::Produce(body))
    }
}
