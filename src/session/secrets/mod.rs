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
use crate::codec::types::Versions;
use crate::{ApiKey, Direction};

/// The byte that replaces secret bytes: `*`, which keeps a masked string valid UTF-8.
pub const MASK: u8 = b'*';

/// When a listed field holds a secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Always.
    Always,
    /// When the configuration entry it belongs to is sensitive: its `Name` passes
    /// [`is_sensitive_config_name`], or its `IsSensitive` flag (where the message has one,
    /// or its parent's for a synonym) is set.
    SensitiveConfig,
}

/// One secret field of one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SecretField {
    /// The API.
    pub api_key: ApiKey,
    /// Request or response.
    pub direction: Direction,
    /// The field's path as the schema names it, e.g. `"Upsertions.SaltedPassword"`.
    pub path: &'static str,
    /// The versions of the message that have the field.
    pub versions: Versions,
    /// When it holds a secret.
    pub when: When,
    /// What the secret is.
    pub what: &'static str,
}

const fn field(
    api_key: ApiKey,
    direction: Direction,
    path: &'static str,
    versions: (i16, i16),
    when: When,
    what: &'static str,
) -> SecretField {
    SecretField { api_key, direction, path, versions: Versions::new(versions.0, versions.1), when, what }
}

use Direction::{Request as Req, Response as Resp};
use When::{Always, SensitiveConfig};

/// Every secret field of every message kwire knows (Apache Kafka 4.4), by schema.
pub static SECRET_FIELDS: &[SecretField] = &[
    field(
        ApiKey::SaslAuthenticate,
        Req,
        "AuthBytes",
        (0, 2),
        Always,
        "SASL token: PLAIN password, SCRAM proof, OAUTHBEARER token",
    ),
    field(
        ApiKey::SaslAuthenticate,
        Resp,
        "AuthBytes",
        (0, 2),
        Always,
        "SASL token: SCRAM salt, nonce and server signature",
    ),
    field(ApiKey::AlterUserScramCredentials, Req, "Upsertions.Salt", (0, 0), Always, "SCRAM salt"),
    field(
        ApiKey::AlterUserScramCredentials,
        Req,
        "Upsertions.SaltedPassword",
        (0, 0),
        Always,
        "SCRAM salted password",
    ),
    field(
        ApiKey::CreateDelegationToken,
        Resp,
        "Hmac",
        (1, 3),
        Always,
        "delegation token HMAC (the token's password)",
    ),
    field(ApiKey::DescribeDelegationToken, Resp, "Tokens.Hmac", (1, 3), Always, "delegation token HMAC"),
    field(ApiKey::RenewDelegationToken, Req, "Hmac", (1, 2), Always, "delegation token HMAC"),
    field(ApiKey::ExpireDelegationToken, Req, "Hmac", (1, 2), Always, "delegation token HMAC"),
    field(
        ApiKey::Envelope,
        Req,
        "RequestData",
        (0, 0),
        Always,
        "a wrapped request, which may be any of these",
    ),
    field(
        ApiKey::Envelope,
        Resp,
        "ResponseData",
        (0, 0),
        Always,
        "a wrapped response, which may be any of these",
    ),
    field(
        ApiKey::AlterConfigs,
        Req,
        "Resources.Configs.Value",
        (0, 2),
        SensitiveConfig,
        "a password-type configuration value",
    ),
    field(
        ApiKey::IncrementalAlterConfigs,
        Req,
        "Resources.Configs.Value",
        (0, 1),
        SensitiveConfig,
        "a password-type configuration value",
    ),
    field(
        ApiKey::CreateTopics,
        Req,
        "Topics.Configs.Value",
        (2, 7),
        SensitiveConfig,
        "a password-type configuration value",
    ),
    field(
        ApiKey::CreateTopics,
        Resp,
        "Topics.Configs.Value",
        (5, 7),
        SensitiveConfig,
        "a password-type configuration value",
    ),
    field(
        ApiKey::DescribeConfigs,
        Resp,
        "Results.Configs.Value",
        (1, 4),
        SensitiveConfig,
        "a password-type configuration value",
    ),
    field(
        ApiKey::DescribeConfigs,
        Resp,
        "Results.Configs.Synonyms.Value",
        (1, 4),
        SensitiveConfig,
        "a password-type configuration value",
    ),
];

/// The secret fields of `api_key`'s requests or responses.
pub fn fields(api_key: ApiKey, direction: Direction) -> impl Iterator<Item = &'static SecretField> {
    SECRET_FIELDS.iter().filter(move |f| f.api_key == api_key && f.direction == direction)
}

/// The entry for the field at `path` (as the schema names it, `.`-joined) of `api_key`'s
/// requests or responses, if that field can hold a secret. Formatters that walk a body by
/// its schema ask this for each field.
pub fn lookup(api_key: ApiKey, direction: Direction, path: &str) -> Option<&'static SecretField> {
    fields(api_key, direction).find(|f| f.path == path)
}

/// Whether some version of `api_key`'s requests or responses has a secret field.
pub fn may_carry_secrets(api_key: ApiKey, direction: Direction) -> bool {
    fields(api_key, direction).next().is_some()
}

/// Whether a configuration entry of this name holds a secret, by its name: it contains
/// `password`, `secret`, `jaas`, `credential`, `token` or `certificate`, or ends in `.key`
/// (ASCII case ignored). This errs towards masking: Kafka's own `PASSWORD`-type settings
/// (`ssl.keystore.password`, `ssl.key.password`, `ssl.keystore.key`,
/// `ssl.keystore.certificate.chain`, `sasl.jaas.config`, `password.encoder.secret`,
/// `listener.name.*.…` variants, ...) all match, and so do a few harmless ones.
pub fn is_sensitive_config_name(name: &str) -> bool {
    const WORDS: &[&[u8]] = &[b"password", b"secret", b"jaas", b"credential", b"token", b"certificate"];
    let name = name.as_bytes();
    let has = |word: &[u8]| name.windows(word.len()).any(|w| w.eq_ignore_ascii_case(word));
    WORDS.iter().any(|w| has(w)) || (name.len() >= 4 && name[name.len() - 4..].eq_ignore_ascii_case(b".key"))
}

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

/// The user name a client's first SASL token gives, for a log line: the authentication
/// identity of a `PLAIN` token (`authzid NUL authcid NUL password`), or the `n=` user of a
/// `SCRAM-SHA-256`/`SCRAM-SHA-512` client-first message (as sent, `=2C` and `=3D` escapes
/// kept). `None` for any other mechanism or token, SCRAM's client-final message included:
/// the password, proofs and bearer tokens are never part of the answer.
///
/// ```
/// use kwire::secrets::sasl_user;
///
/// assert_eq!(sasl_user("PLAIN", b"\0alice\0hunter2"), Some("alice"));
/// assert_eq!(sasl_user("SCRAM-SHA-512", b"n,,n=bob,r=fyko+d2lbbFgONRv9qkxdawL"), Some("bob"));
/// assert_eq!(sasl_user("SCRAM-SHA-512", b"c=biws,r=fyko,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="), None);
/// assert_eq!(sasl_user("OAUTHBEARER", b"n,,\x01auth=Bearer eyJ\x01\x01"), None);
/// ```
pub fn sasl_user<'t>(mechanism: &str, token: &'t [u8]) -> Option<&'t str> {
    let name = |b: &'t [u8]| core::str::from_utf8(b).ok().filter(|s| !s.is_empty());
    if mechanism.eq_ignore_ascii_case("PLAIN") {
        let mut parts = token.splitn(3, |&b| b == 0);
        let (_authzid, authcid, _password) = (parts.next()?, parts.next()?, parts.next()?);
        return name(authcid);
    }
    if mechanism.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("SCRAM-")) {
        // gs2-header ("n,," / "y,," / "p=...,," with an optional "a=authzid"), then
        // "n=user,r=nonce,...".
        let first = token.first()?;
        if !matches!(first, b'n' | b'y' | b'p') {
            return None;
        }
        let mut commas = token.iter().enumerate().filter(|(_, b)| **b == b',').map(|(i, _)| i);
        let (_, second) = (commas.next()?, commas.next()?);
        let bare = token.get(second + 1..)?;
        let user = bare.strip_prefix(b"n=")?;
        let end = user.iter().position(|&b| b == b',')?;
        return name(&user[..end]);
    }
    None
}

/// The SASL mechanism named in a SaslHandshake request, as far as the raw token exchange
/// of SaslHandshake v0 is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// `PLAIN`: one token each way; the broker's is empty.
    Plain,
    /// `SCRAM-SHA-256` / `SCRAM-SHA-512`: two tokens each way.
    Scram,
    /// `OAUTHBEARER`: the client's token, then the broker's: empty on success; an error
    /// description otherwise, after which the client sends one more token and the broker
    /// closes the connection.
    OAuthBearer,
    /// Any other mechanism (`GSSAPI`, ...): its end cannot be told from outside, so every
    /// later frame of the connection is taken for a token.
    Other,
}

impl Mechanism {
    /// The mechanism of this name.
    pub fn from_name(name: &str) -> Mechanism {
        match name {
            "PLAIN" => Mechanism::Plain,
            "SCRAM-SHA-256" | "SCRAM-SHA-512" => Mechanism::Scram,
            "OAUTHBEARER" => Mechanism::OAuthBearer,
            _ => Mechanism::Other,
        }
    }
}

/// Where a connection is in SaslHandshake v0's raw token exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Kafka frames.
    Kafka,
    /// A SaslHandshake v0 request went out; its answer decides.
    Handshake(Mechanism),
    /// Raw tokens until the broker has sent `server_tokens` of them (`u8::MAX`: never).
    Tokens { mechanism: Mechanism, server_tokens: u8 },
}

/// Tells, on one connection, which frames are SaslHandshake v0's raw SASL tokens.
///
/// After a SaslHandshake **v0** request and a successful answer, both sides exchange the
/// mechanism's tokens as bare frames (a 4-byte size, then the token, no Kafka header) until
/// authentication ends; Kafka frames follow. SaslHandshake v1 and later wrap the tokens in
/// SaslAuthenticate requests instead. A proxy calls [`RawSasl::on_request`] for every
/// request it forwards, [`RawSasl::on_handshake_response`] for the answer to a SaslHandshake
/// v0 request, and asks [`RawSasl::client_token`] / [`RawSasl::server_token`] before
/// decoding each frame; a token is forwarded as it is and never decoded or shown.
///
/// The end of the exchange is known from the mechanism ([`Mechanism`]): PLAIN after the
/// broker's first token, SCRAM after its second, OAUTHBEARER after an empty one. For any
/// other mechanism the rest of the connection is treated as tokens.
///
/// ```
/// use kwire::{secrets::RawSasl, ApiKey};
///
/// let mut sasl = RawSasl::new();
/// sasl.on_request(ApiKey::SaslHandshake, 0, Some("PLAIN")); // v0
/// assert!(sasl.client_token()); // nothing but tokens may follow until the answer
/// sasl.on_handshake_response(0); // accepted
/// assert!(sasl.client_token()); // the client's token
/// assert!(sasl.server_token(0)); // the broker's (empty) token: the last
/// assert!(!sasl.client_token() && !sasl.server_token(10)); // Kafka frames again
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawSasl {
    phase: Phase,
}

impl Default for RawSasl {
    fn default() -> Self {
        Self::new()
    }
}

impl RawSasl {
    /// A connection that starts with Kafka frames.
    pub const fn new() -> Self {
        RawSasl { phase: Phase::Kafka }
    }

    /// A request of `api_key` at `version` goes out; `mechanism` is a SaslHandshake
    /// request's `Mechanism` (`None` if it could not be read).
    pub fn on_request(&mut self, api_key: ApiKey, version: i16, mechanism: Option<&str>) {
        if api_key == ApiKey::SaslHandshake && version == 0 && self.phase == Phase::Kafka {
            self.phase = Phase::Handshake(mechanism.map_or(Mechanism::Other, Mechanism::from_name));
        }
    }

    /// The answer to the SaslHandshake v0 request arrived, with this error code (0:
    /// accepted; tokens follow).
    pub fn on_handshake_response(&mut self, error_code: i16) {
        if let Phase::Handshake(mechanism) = self.phase {
            self.phase = if error_code == 0 {
                let server_tokens = match mechanism {
                    Mechanism::Plain => 1,
                    Mechanism::Scram => 2,
                    Mechanism::OAuthBearer | Mechanism::Other => u8::MAX,
                };
                Phase::Tokens { mechanism, server_tokens }
            } else {
                Phase::Kafka
            };
        }
    }

    /// Whether the next frame from the client is a raw token (from the SaslHandshake v0
    /// request until the broker's last token).
    pub fn client_token(&self) -> bool {
        !matches!(self.phase, Phase::Kafka)
    }

    /// Whether a frame of `len` bytes from the broker is a raw token; counts it, so ask
    /// once per frame, before forwarding it.
    pub fn server_token(&mut self, len: usize) -> bool {
        let Phase::Tokens { mechanism, server_tokens } = &mut self.phase else { return false };
        match mechanism {
            Mechanism::OAuthBearer if len == 0 => self.phase = Phase::Kafka,
            Mechanism::Plain | Mechanism::Scram => {
                *server_tokens -= 1;
                if *server_tokens == 0 {
                    self.phase = Phase::Kafka;
                }
            }
            _ => {}
        }
        true
    }

    /// Whether the connection is in the raw token exchange for good (a mechanism whose
    /// end cannot be told).
    pub fn for_good(&self) -> bool {
        matches!(self.phase, Phase::Tokens { server_tokens: u8::MAX, mechanism: Mechanism::Other })
    }
}
