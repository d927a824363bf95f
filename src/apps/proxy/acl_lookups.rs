//! The proxy's look-ups of ACL bindings for tenants: before a DeleteAcls request whose
//! filters have no resource name goes on, the proxy asks the broker (DescribeAcls) which
//! bindings match each such filter but for its name, so that the connection's
//! [`crate::filter::Tenant`] can turn it into exact filters for the tenant's own bindings
//! ([`AclLookups`]).

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, string::String, string::ToString, vec::Vec};

use super::{Decision, Upstream, WaitingFilter};
use crate::ApiKey;
use crate::codec::messages::{DescribeAclsRequest, RequestBodyView, ResponseBodyView};
use crate::filter::{AclLookups, Binding, LookedUp};

/// The DescribeAcls version asked (pattern types are in it; every Kafka 4 broker serves it).
const DESCRIBE_VERSION: i16 = 1;
/// The most bindings one look-up keeps (the Tenant makes one filter of each of its own).
const MAX_BINDINGS: usize = 4096;
/// The most filters without a name one request gets look-ups for (one round trip each);
/// the rest are refused by the tenant as without a look-up.
const MAX_LOOKUPS: usize = 64;
/// Kafka's pattern type ANY.
const PATTERN_ANY: i8 = 1;

/// The look-ups of one connection, when its tenant wants them.
pub(crate) struct LookUpAcls {
    lookups: AclLookups,
}

impl LookUpAcls {
    pub(crate) fn new(lookups: AclLookups) -> Self {
        LookUpAcls { lookups }
    }
}

/// The DescribeAcls requests for a DeleteAcls request's filters without a name, by position
/// (`None` for a filter with a name), and the request's correlation id.
fn asked(frame: &[u8]) -> Option<(i32, Vec<Option<DescribeAclsRequest<'_>>>)> {
    let request = crate::codec::dispatch::parse_request(frame).ok()?;
    let RequestBodyView::DeleteAcls(view) = request.body else { return None };
    let asks: Vec<_> = view
        .filters()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            (i < MAX_LOOKUPS && f.resource_name_filter().is_none()).then(|| DescribeAclsRequest {
                resource_type_filter: f.resource_type_filter(),
                resource_name_filter: None,
                pattern_type_filter: PATTERN_ANY,
                principal_filter: f.principal_filter().map(Into::into),
                host_filter: f.host_filter().map(Into::into),
                operation: f.operation(),
                permission_type: f.permission_type(),
                ..Default::default()
            })
        })
        .collect();
    asks.iter().any(Option::is_some).then_some((request.header.correlation_id(), asks))
}

/// Asks the broker one filter's bindings.
async fn look_up(ask: &DescribeAclsRequest<'_>, upstream: &mut Upstream<'_>) -> LookedUp {
    let no_answer = || {
        let why = "no answer to the proxy's DescribeAcls".to_owned();
        Err((crate::ErrorCode::UnknownServerError.to_i16(), Some(why)))
    };
    let Ok(answer) = upstream.request(ask, DESCRIBE_VERSION).await else { return no_answer() };
    let Ok((response, _)) =
        crate::session::conn::read_response(&answer, ApiKey::DescribeAcls, DESCRIBE_VERSION)
    else {
        return no_answer();
    };
    let ResponseBodyView::DescribeAcls(view) = response.body else { return no_answer() };
    if view.error_code() != 0 {
        return Err((view.error_code(), view.error_message().map(str::to_owned)));
    }
    let found: Vec<Binding> = view
        .resources()
        .iter()
        .take(MAX_BINDINGS)
        .map(|r| (r.resource_type(), r.pattern_type(), r.resource_name().to_owned()))
        .collect();
    Ok(found)
}

impl WaitingFilter for LookUpAcls {
    fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
        api_key == ApiKey::DeleteAcls && self.lookups.wanted()
    }

    fn on_request<'a>(
        &'a mut self,
        frame: Vec<u8>,
        upstream: &'a mut Upstream<'_>,
    ) -> core::pin::Pin<Box<dyn core::future::Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            if let Some((correlation_id, asks)) = asked(&frame) {
                let mut found = Vec::with_capacity(asks.len());
                for ask in &asks {
                    found.push(match ask {
                        Some(ask) => Some(look_up(ask, upstream).await),
                        None => None,
                    });
                }
                self.lookups.put(correlation_id, found);
            }
            Decision::Forward(frame)
        })
    }
}
