//! What a `no_std` user of kwire writes against the enums a feature could change: built
//! with `-D warnings` without `alloc` and with it (`.ci/run`). If one of them lost
//! `#[non_exhaustive]`, the `_` arms below would be unreachable without `alloc` (a
//! warning, so an error here), and without them the `match`es would not compile with
//! `alloc` (its `Owned` variants): the code of a crate that compiles alone must still
//! compile once another crate in the build turns a feature on.

#![no_std]
#![deny(warnings)]

use kwire::messages::{RequestBody, RequestBodyView, ResponseBody, ResponseBodyView};
use kwire::{ApiKey, List, Str};

/// The length of a string, by its variants.
pub fn str_len(s: &Str<'_>) -> usize {
    match s {
        Str::Borrowed(s) => s.len(),
        _ => s.len(),
    }
}

/// The length of a list, by its variants.
pub fn list_len<T>(l: &List<'_, T>) -> usize {
    match l {
        List::Borrowed(l) => l.len(),
        _ => l.len(),
    }
}

/// Whether a request body view is an ApiVersions request (the one API every build has;
/// the `api-*` features add variants).
pub fn is_api_versions_view(v: &RequestBodyView<'_>) -> bool {
    match v {
        RequestBodyView::ApiVersions(_) => true,
        _ => false,
    }
}

/// The same for the value enums of both directions and the response views.
pub fn api_versions_everywhere(q: &RequestBody<'_>, r: &ResponseBody<'_>, rv: &ResponseBodyView<'_>) -> bool {
    let q = match q {
        RequestBody::ApiVersions(_) => true,
        _ => false,
    };
    let r = match r {
        ResponseBody::ApiVersions(_) => true,
        _ => false,
    };
    let rv = match rv {
        ResponseBodyView::ApiVersions(_) => true,
        _ => false,
    };
    q && r && rv
}

/// An API key as a name, with a `_` arm: keys join the enum as Kafka adds APIs.
pub fn name(key: ApiKey) -> &'static str {
    match key {
        ApiKey::ApiVersions => "ApiVersions",
        _ => key.name(),
    }
}
