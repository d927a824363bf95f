//! Secret fields: which fields of which messages carry credentials, and how to mask them in
//! a copy of a frame before the copy is logged, printed or saved.
//!
//! [`SECRET_FIELDS`] is the one list, by schema: API, direction, the field's path as the
//! schema names it (struct fields joined by `.`, arrays implied), and the versions that
//! have the field. [`mask_request`] and [`mask_response`] find those fields in a frame with
//! the typed views and overwrite their bytes with [`MASK`] in a copy, keeping every length,
//! so that the copy still decodes and still has the frame's size. Nothing here allocates;
//! [`redact_request`] and [`redact_response`] (feature `alloc`) return the masked copy.
//!
//! ```
//! use kwire::dispatch;
//! use kwire::messages::SaslAuthenticateRequest;
//! use kwire::secrets::{self, Redaction};
//!
//! let body = SaslAuthenticateRequest { auth_bytes: (&b"\0alice\0hunter2"[..]).into(), ..Default::default() };
//! let mut frame = [0u8; 64];
//! let n = dispatch::encode_request(&body, 2, 1, Some("app"), &mut frame)?;
//! let frame = &frame[4..n]; // without the size prefix
//!
//! let mut copy = [0u8; 64];
//! let r = secrets::mask_request(frame, &mut copy[..frame.len()]);
//! assert_eq!(r, Redaction::Masked { fields: 1, bytes: 14 });
//! assert!(!copy.windows(7).any(|w| w == b"hunter2"));
//! // Still a SaslAuthenticate request, of the same size, with the secret masked.
//! let masked = dispatch::parse_request(&copy[..frame.len()])?;
//! let kwire::messages::RequestBodyView::SaslAuthenticate(view) = masked.body else { unreachable!() };
//! assert_eq!(view.auth_bytes(), &[b'*'; 14]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What counts as a secret
//!
//! A field is listed when its value lets someone authenticate as someone else, or attack a
//! credential offline: SASL tokens in both directions (the PLAIN password in clear, SCRAM
//! proofs and salts, OAUTHBEARER and GSSAPI tokens, all in `AuthBytes`), delegation-token
//! HMACs (the token's password), SCRAM salts and salted passwords, the requests and
//! responses an `Envelope` wraps (they can be any of the others), and configuration values
//! whose name says they are a password, a key or a JAAS configuration (see
//! [`is_sensitive_config_name`]; a value the broker marks `IsSensitive` is masked too).
//! The fields considered and left out, with the reason, are in [`manual::secrets`](crate::manual::secrets).
//!
//! After a successful SaslHandshake **v0**, the SASL tokens travel as bare size-prefixed
//! frames with no Kafka header until authentication ends. They are not messages, so they
//! are not in the table: [`RawSasl`] tells a proxy which frames those are, so that it
//! never decodes, logs or records them.
//!
//! A frame that may carry secrets but cannot be read (an API or version kwire does not
//! know, a malformed body, a request header that does not parse) is masked whole: every
//! byte after the fields that say what the frame is ([`Redaction::Whole`]).

use core::ops::Range;

use crate::codec::dispatch;
use crate::codec::messages::{RequestBodyView, ResponseBodyView};
use crate::{ApiKey, Direction};

mod sasl;
mod table;

pub use sasl::{Mechanism, RawSasl, sasl_user};
pub use table::{
    SECRET_FIELDS, SecretField, When, fields, is_sensitive_config_name, lookup, may_carry_secrets,
};

/// The byte that replaces secret bytes: `*`, which keeps a masked string valid UTF-8.
pub const MASK: u8 = b'*';

/// What masking did to a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redaction {
    /// The frame holds no secret: the copy is the frame.
    Clean,
    /// This many secret fields, of this many bytes in all, were masked (bytes after a
    /// request body, which Kafka ignores, count as one field).
    Masked {
        /// Fields masked.
        fields: usize,
        /// Bytes masked.
        bytes: usize,
    },
    /// The frame could not be read (unknown API or version, malformed): this many bytes, everything after the API key, version and correlation
    /// id of a request or the correlation id of a response, were masked.
    Whole {
        /// Bytes masked.
        bytes: usize,
    },
}

impl Redaction {
    /// Whether any byte was masked.
    pub fn masked_any(&self) -> bool {
        match *self {
            Redaction::Clean => false,
            Redaction::Masked { bytes, .. } | Redaction::Whole { bytes } => bytes > 0,
        }
    }
}

/// A frame whose secrets cannot be found: it does not parse (an unknown API or version, a
/// malformed header or body), so nothing is known of its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unreadable;

impl core::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("the frame does not parse, so its secrets cannot be found")
    }
}

impl core::error::Error for Unreadable {}

/// Where `inner` (a subslice of `outer`, as views hand them out) lies in `outer`.
fn range_in(outer: &[u8], inner: &[u8]) -> Option<Range<usize>> {
    let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    let end = start.checked_add(inner.len())?;
    (end <= outer.len()).then_some(start..end)
}

/// Calls `f` with the byte range of every secret in a request frame (without its size
/// prefix). [`Unreadable`] when the frame does not parse (unknown API or version, malformed):
/// then nothing is known of its bytes.
pub fn request_secrets(frame: &[u8], mut f: impl FnMut(Range<usize>)) -> Result<(), Unreadable> {
    // A frame that does not parse is not trusted to be what its first bytes say (a raw
    // SASL token can begin like a request header of a known API).
    let Ok((request, ignored)) = dispatch::parse_request_prefix(frame) else { return Err(Unreadable) };
    let mut put = |bytes: &[u8]| {
        if let Some(r) = range_in(frame, bytes) {
            f(r);
        }
    };
    if ignored > 0 && may_carry_secrets(request.body.api_key(), Direction::Request) {
        put(&frame[frame.len() - ignored..]);
    }
    request_fields(&request.body, &mut put);
    Ok(())
}

#[allow(unused_variables)]
fn request_fields<'a>(body: &RequestBodyView<'a>, put: &mut impl FnMut(&'a [u8])) {
    match body {
        #[cfg(feature = "api-sasl-authenticate")]
        RequestBodyView::SaslAuthenticate(v) => put(v.auth_bytes()),
        #[cfg(feature = "api-alter-user-scram-credentials")]
        RequestBodyView::AlterUserScramCredentials(v) => {
            for u in v.upsertions() {
                put(u.salt());
                put(u.salted_password());
            }
        }
        #[cfg(feature = "api-renew-delegation-token")]
        RequestBodyView::RenewDelegationToken(v) => put(v.hmac()),
        #[cfg(feature = "api-expire-delegation-token")]
        RequestBodyView::ExpireDelegationToken(v) => put(v.hmac()),
        #[cfg(feature = "api-envelope")]
        RequestBodyView::Envelope(v) => put(v.request_data()),
        #[cfg(feature = "api-alter-configs")]
        RequestBodyView::AlterConfigs(v) => {
            for r in v.resources() {
                for c in r.configs() {
                    if let Some(value) = c.value().filter(|_| is_sensitive_config_name(c.name())) {
                        put(value.as_bytes());
                    }
                }
            }
        }
        #[cfg(feature = "api-incremental-alter-configs")]
        RequestBodyView::IncrementalAlterConfigs(v) => {
            for r in v.resources() {
                for c in r.configs() {
                    if let Some(value) = c.value().filter(|_| is_sensitive_config_name(c.name())) {
                        put(value.as_bytes());
                    }
                }
            }
        }
        #[cfg(feature = "api-create-topics")]
        RequestBodyView::CreateTopics(v) => {
            for t in v.topics() {
                for c in t.configs() {
                    if let Some(value) = c.value().filter(|_| is_sensitive_config_name(c.name())) {
                        put(value.as_bytes());
                    }
                }
            }
        }
        _ => {}
    }
}

#[allow(unused_variables)]
fn response_fields<'a>(body: &ResponseBodyView<'a>, put: &mut impl FnMut(&'a [u8])) {
    match body {
        #[cfg(feature = "api-sasl-authenticate")]
        ResponseBodyView::SaslAuthenticate(v) => put(v.auth_bytes()),
        #[cfg(feature = "api-create-delegation-token")]
        ResponseBodyView::CreateDelegationToken(v) => put(v.hmac()),
        #[cfg(feature = "api-describe-delegation-token")]
        ResponseBodyView::DescribeDelegationToken(v) => {
            for t in v.tokens() {
                put(t.hmac());
            }
        }
        #[cfg(feature = "api-envelope")]
        ResponseBodyView::Envelope(v) => {
            if let Some(data) = v.response_data() {
                put(data);
            }
        }
        #[cfg(feature = "api-create-topics")]
        ResponseBodyView::CreateTopics(v) => {
            for t in v.topics() {
                for c in t.configs().into_iter().flatten() {
                    let sensitive = c.is_sensitive() || is_sensitive_config_name(c.name());
                    if let Some(value) = c.value().filter(|_| sensitive) {
                        put(value.as_bytes());
                    }
                }
            }
        }
        #[cfg(feature = "api-describe-configs")]
        ResponseBodyView::DescribeConfigs(v) => {
            for r in v.results() {
                for c in r.configs() {
                    let sensitive = c.is_sensitive() || is_sensitive_config_name(c.name());
                    if let Some(value) = c.value().filter(|_| sensitive) {
                        put(value.as_bytes());
                    }
                    for s in c.synonyms() {
                        if let Some(value) =
                            s.value().filter(|_| sensitive || is_sensitive_config_name(s.name()))
                        {
                            put(value.as_bytes());
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

/// Calls `f` with the byte range of every secret in a response frame (without its size
/// prefix) that answers a request of `api_key` at `version`. [`Unreadable`] when the frame
/// does not parse at that version.
pub fn response_secrets(
    frame: &[u8],
    api_key: ApiKey,
    version: i16,
    mut f: impl FnMut(Range<usize>),
) -> Result<(), Unreadable> {
    let Ok(response) = dispatch::parse_response(frame, api_key, version) else { return Err(Unreadable) };
    response_fields(&response.body, &mut |bytes: &[u8]| {
        if let Some(r) = range_in(frame, bytes) {
            f(r);
        }
    });
    Ok(())
}

/// Copies `frame` into `out` (which must be as long) with `ranges`' bytes masked, or with
/// everything after `keep` bytes masked when the ranges could not be found.
fn mask_copy(
    frame: &[u8],
    out: &mut [u8],
    keep: usize,
    find: impl FnOnce(&mut dyn FnMut(Range<usize>)) -> Result<(), Unreadable>,
) -> Redaction {
    let n = frame.len().min(out.len());
    out[..n].copy_from_slice(&frame[..n]);
    let out = &mut out[..n];
    let (mut fields, mut bytes) = (0, 0);
    let found = find(&mut |r: Range<usize>| {
        if let Some(b) = out.get_mut(r) {
            b.fill(MASK);
            fields += 1;
            bytes += b.len();
        }
    });
    match found {
        Ok(()) if fields == 0 => Redaction::Clean,
        Ok(()) => Redaction::Masked { fields, bytes },
        Err(Unreadable) => {
            let keep = keep.min(n);
            out[keep..].fill(MASK);
            Redaction::Whole { bytes: n - keep }
        }
    }
}

/// Copies the request `frame` (without its size prefix) into `out` with its secrets
/// masked. `out` should be as long as `frame`; only the shorter length is copied.
pub fn mask_request(frame: &[u8], out: &mut [u8]) -> Redaction {
    mask_copy(frame, out, 8, |f| request_secrets(frame, f))
}

/// Copies the response `frame` (without its size prefix) to a request of `api_key` at
/// `version` into `out` with its secrets masked. `out` should be as long as `frame`. A
/// response to a request of an API kwire does not know goes to [`mask_unknown_response`].
pub fn mask_response(frame: &[u8], api_key: ApiKey, version: i16, out: &mut [u8]) -> Redaction {
    mask_copy(frame, out, 4, |f| response_secrets(frame, api_key, version, f))
}

/// Masks a response frame that answers no known request: everything after its correlation
/// id, since nothing says what it is.
pub fn mask_unknown_response(frame: &[u8], out: &mut [u8]) -> Redaction {
    mask_copy(frame, out, 4, |_| Err(Unreadable))
}

/// The request `frame` with its secrets masked: borrowed when it holds none.
#[cfg(feature = "alloc")]
pub fn redact_request(frame: &[u8]) -> (alloc::borrow::Cow<'_, [u8]>, Redaction) {
    let mut out = alloc::vec![0u8; frame.len()];
    match mask_request(frame, &mut out) {
        Redaction::Clean => (alloc::borrow::Cow::Borrowed(frame), Redaction::Clean),
        r => (alloc::borrow::Cow::Owned(out), r),
    }
}

/// The response `frame` with its secrets masked: borrowed when it holds none.
#[cfg(feature = "alloc")]
pub fn redact_response(
    frame: &[u8],
    api_key: ApiKey,
    version: i16,
) -> (alloc::borrow::Cow<'_, [u8]>, Redaction) {
    let mut out = alloc::vec![0u8; frame.len()];
    match mask_response(frame, api_key, version, &mut out) {
        Redaction::Clean => (alloc::borrow::Cow::Borrowed(frame), Redaction::Clean),
        r => (alloc::borrow::Cow::Owned(out), r),
    }
}

/// A frame copy with its secrets masked, for a log or a recording: [`redact_request`] for a
/// request (`response_to` is `None`), [`redact_response`] for a response to a request of
/// this API and version.
#[cfg(feature = "alloc")]
pub fn redact(frame: &[u8], response_to: Option<(ApiKey, i16)>) -> (alloc::borrow::Cow<'_, [u8]>, Redaction) {
    match response_to {
        None => redact_request(frame),
        Some((key, version)) => redact_response(frame, key, version),
    }
}
