//! ApiVersions clamping: what a client is told a connection serves is what the broker
//! serves, what kwire reads and what every filter handles, so that no frame of the session
//! goes by undecoded (see [`super::FilterChain`]).

use alloc::vec::Vec;

use super::Filter;
use crate::ApiKey;
use crate::ErrorCode;
use crate::codec::messages::api_versions::ApiVersion;
use crate::codec::messages::{ApiVersionsResponse, ApiVersionsResponseView};
use crate::codec::types::{List, Versions};

/// The versions of `api_key` a client may use through the chain, `None` for none: the
/// broker's range `(min, max)`, cut to what kwire reads (requests and responses) and to
/// what each filter handles.
pub(super) fn allowed(
    raw_key: i16,
    min: i16,
    max: i16,
    filters: &[alloc::boxed::Box<dyn Filter + Send>],
) -> Option<Versions> {
    let key = ApiKey::from_i16(raw_key)?;
    if !key.is_enabled() {
        return None;
    }
    let kwire = meet(key.request_versions(), key.response_versions());
    let mut range = meet(Versions::new(min, max), kwire);
    for filter in filters {
        if range.is_empty() {
            break;
        }
        range = meet(range, filter.versions(key, range)?);
    }
    (!range.is_empty()).then_some(range)
}

/// The versions in both ranges.
fn meet(a: Versions, b: Versions) -> Versions {
    Versions::new(a.min.max(b.min), a.max.min(b.max))
}

/// What a connection through the chain serves of each API, by key: what the last
/// ApiVersions answer through it advertised, cut to [`allowed`]. Before any answer, what
/// kwire reads and every filter handles.
#[derive(Clone, Debug, Default)]
pub(super) struct Served {
    /// Indexed by API key; an empty range for an API not served. `None` until the chain has
    /// seen the broker's ApiVersions answer.
    by_key: Option<Vec<Versions>>,
}

impl Served {
    /// The versions of `key` a request may use.
    pub(super) fn get(
        &self,
        key: ApiKey,
        filters: &[alloc::boxed::Box<dyn Filter + Send>],
    ) -> Option<Versions> {
        match &self.by_key {
            Some(by_key) => by_key.get(key.to_i16() as usize).copied().filter(|v| !v.is_empty()),
            None => {
                let ours = meet(key.request_versions(), key.response_versions());
                allowed(key.to_i16(), ours.min, ours.max, filters)
            }
        }
    }
}

/// Each API of an ApiVersions answer cut to [`allowed`], in the answer's order (`None`: left
/// out), or `None` when nothing changes (every API kept, advertised as it came);
/// `served` becomes what the answer says is served. [`rebuild`] makes the answer.
pub(super) fn clamp(
    view: &ApiVersionsResponseView<'_>,
    filters: &[alloc::boxed::Box<dyn Filter + Send>],
    served: &mut Served,
) -> Option<Vec<Option<Versions>>> {
    let mut by_key = Vec::new();
    let mut ranges = Vec::new();
    let mut same = true;
    for k in view.api_keys().iter() {
        let range = allowed(k.api_key(), k.min_version(), k.max_version(), filters);
        if let (Some(range), Ok(index)) = (range, usize::try_from(k.api_key())) {
            if by_key.len() <= index {
                by_key.resize(index + 1, Versions::NONE);
            }
            by_key[index] = range;
        }
        let advertised = range.zip(ApiKey::from_i16(k.api_key())).map(|(r, key)| key.advertised(r));
        same &= advertised == Some(Versions::new(k.min_version(), k.max_version()));
        ranges.push(advertised);
    }
    served.by_key = Some(by_key);
    (!same).then_some(ranges)
}

/// The ApiVersions answer with each API advertised as [`clamp`] found (`ranges`, in the
/// answer's order), as Kafka advertises it ([`ApiKey::advertised`]).
pub(super) fn rebuild<'a>(
    view: &ApiVersionsResponseView<'a>,
    ranges: &[Option<Versions>],
) -> ApiVersionsResponse<'a> {
    let mut body = ApiVersionsResponse::from(*view);
    let keys: Vec<ApiVersion<'a>> = body
        .api_keys
        .iter()
        .zip(ranges)
        .filter_map(|(k, range)| {
            let range = (*range)?;
            Some(ApiVersion { min_version: range.min, max_version: range.max, ..k.clone() })
        })
        .collect();
    body.api_keys = List::Owned(keys);
    body
}

/// What a broker answers an ApiVersions request at a version it does not read: a version-0
/// body with UNSUPPORTED_VERSION and the ApiVersions versions it reads, so that the client
/// asks again at one of those (Apache Kafka's `ApiVersionsRequest.getErrorResponse`).
pub(super) fn unsupported_answer(
    filters: &[alloc::boxed::Box<dyn Filter + Send>],
) -> ApiVersionsResponse<'static> {
    let ours = ApiKey::ApiVersions.request_versions();
    let range = allowed(ApiKey::ApiVersions.to_i16(), ours.min, ours.max, filters).unwrap_or(ours);
    let entry = ApiVersion {
        api_key: ApiKey::ApiVersions.to_i16(),
        min_version: range.min,
        max_version: range.max,
        ..Default::default()
    };
    ApiVersionsResponse {
        error_code: ErrorCode::UnsupportedVersion.to_i16(),
        api_keys: List::Owned(alloc::vec![entry]),
        ..Default::default()
    }
}
