//! The table of secret fields: which field of which message carries a secret, and when.

use crate::codec::types::Versions;
use crate::{ApiKey, Direction};

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
