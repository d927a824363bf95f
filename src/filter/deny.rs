//! [`DenyApis`]: an API deny-list.

use alloc::vec::Vec;

use super::{Filter, RequestAction};
use crate::ApiKey;
use crate::codec::dispatch::Request;
use crate::codec::types::Versions;

/// Refuses some APIs: a request of one closes the connection, and ApiVersions answers no
/// longer list them (through [`Filter::versions`]), so that clients do not try.
///
/// Closing follows what a Kafka broker does with a request of an API it does not offer on a
/// listener (`SocketServer` closes the connection: "Received request api key ... which is
/// not enabled"). An error answer would need a per-API choice of where the error goes, and
/// a client that was told the API does not exist should not send it.
///
/// ```
/// use kwire::filter::{DenyApis, FilterChain, Verdict};
/// use kwire::messages::DeleteTopicsRequest;
/// use kwire::ApiKey;
///
/// let mut chain = FilterChain::new();
/// chain.push(DenyApis::new([ApiKey::DeleteTopics]));
/// let mut frame = [0u8; 64];
/// let n = kwire::dispatch::encode_request(&DeleteTopicsRequest::default(), 6, 1, None, &mut frame)?;
/// assert!(matches!(chain.on_request(&frame[4..n]), Verdict::Close(_)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct DenyApis {
    denied: Vec<ApiKey>,
}

impl DenyApis {
    /// Denies these APIs.
    pub fn new(apis: impl IntoIterator<Item = ApiKey>) -> Self {
        DenyApis { denied: apis.into_iter().collect() }
    }
}

impl Filter for DenyApis {
    fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
        self.denied.contains(&api_key)
    }

    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        RequestAction::Close(alloc::format!(
            "{} requests are denied by this proxy",
            request.body.api_key().name()
        ))
    }

    fn wants_response(&self, _: ApiKey, _: i16) -> bool {
        false
    }

    fn versions(&self, api_key: ApiKey, readable: Versions) -> Option<Versions> {
        (!self.denied.contains(&api_key)).then_some(readable)
    }
}
