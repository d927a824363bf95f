//! A user's proxy for `benches/proxy.sh`'s path `filter`: the library runtime (`kwire::proxy`)
//! with the docs' example filter (Produce to `audit.*` topics refused for every principal
//! but `admin`), no log. Not a criterion bench: a program the script runs and measures.
//!
//!   proxy_filter UPSTREAM    # listens on 127.0.0.1, a free port, and says which first

use std::sync::Arc;

use kwire::dispatch::Request;
use kwire::filter::{Filter, FilterChain, RequestAction};
use kwire::messages::produce::{PartitionProduceResponse, TopicProduceResponse};
use kwire::messages::{ProduceResponse, RequestBodyView, ResponseBody};
use kwire::proxy::{ConnInfo, Proxy};
use kwire::{ApiKey, ErrorCode};

struct AuditTopics(Arc<ConnInfo>);

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

fn main() -> std::io::Result<()> {
    let Some(upstream) = std::env::args().nth(1) else {
        eprintln!("usage: proxy_filter UPSTREAM");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let proxy = Proxy::builder("127.0.0.1:0".parse().unwrap(), [upstream.clone()])
            .filters(|conn: &Arc<ConnInfo>| {
                let mut chain = FilterChain::new();
                chain.push(AuditTopics(conn.clone()));
                chain
            })
            .start()
            .await?;
        println!("kwire proxy: listening on {}, forwarding to {upstream}", proxy.local_addr());
        std::future::pending::<std::io::Result<()>>().await
    })
}
