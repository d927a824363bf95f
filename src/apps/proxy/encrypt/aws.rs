//! [`AwsKms`]: a [`Kms`] over the AWS Key Management Service's JSON API (feature
//! `encrypt-aws`). Its docs map the calls, errors, secrets and settings; this file holds the
//! client: the settings, SigV4 signing (by `aws-sigv4`), a small HTTP/1.1 exchange over
//! tokio (TLS by tokio-rustls) with bounded answers, and the reading of the service's errors.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::kms::{DataKey, Kms, KmsError, KmsFuture, PlainKey};

/// The longest answer head (status line and headers) read.
const MAX_HEAD: usize = 16 * 1024;
/// The longest answer body read (KMS answers are a few KiB at most).
const MAX_BODY: usize = 64 * 1024;
/// The most bytes read for one answer, framing included (chunk sizes and their extensions).
const MAX_ANSWER: usize = MAX_HEAD + 2 * MAX_BODY;
/// How much one read takes at most.
const READ_CHUNK: usize = 4096;
/// The longest wrapped key AWS KMS takes in `Decrypt` (`CiphertextBlob`, 6144 bytes).
const MAX_WRAPPED: usize = 6144;
/// The longest service message quoted in an error.
const MAX_MESSAGE: usize = 200;
/// The JSON API's content type.
const CONTENT_TYPE: &str = "application/x-amz-json-1.1";
/// Where the system's CA bundle usually is, tried in order when no CAs are given.
const SYSTEM_CA_BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// AWS credentials: an access key id and its secret key, and a session token for temporary
/// credentials. Printed only as `AwsCredentials(..)`; the secret and the token are
/// overwritten when dropped.
pub struct AwsCredentials {
    access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
}

impl AwsCredentials {
    /// Long-term credentials: an access key id and its secret access key.
    pub fn new(access_key_id: impl Into<String>, secret_access_key: impl Into<String>) -> Self {
        AwsCredentials {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token: None,
        }
    }

    /// The same with a session token (temporary credentials, from STS).
    pub fn with_session_token(mut self, token: impl Into<String>) -> Self {
        self.session_token = Some(token.into());
        self
    }

    /// From `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and, when set, `AWS_SESSION_TOKEN`.
    pub fn from_env() -> Result<Self, AwsConfigError> {
        let id = env("AWS_ACCESS_KEY_ID").ok_or_else(|| AwsConfigError::missing("AWS_ACCESS_KEY_ID"))?;
        let secret =
            env("AWS_SECRET_ACCESS_KEY").ok_or_else(|| AwsConfigError::missing("AWS_SECRET_ACCESS_KEY"))?;
        let credentials = AwsCredentials::new(id, secret);
        Ok(match env("AWS_SESSION_TOKEN") {
            Some(token) => credentials.with_session_token(token),
            None => credentials,
        })
    }
}

impl core::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("AwsCredentials(..)")
    }
}

impl Drop for AwsCredentials {
    fn drop(&mut self) {
        wipe_string(&mut self.secret_access_key);
        if let Some(token) = self.session_token.as_mut() {
            wipe_string(token);
        }
    }
}

/// How to reach AWS KMS: region, credentials, endpoint, TLS and time limit. Made by
/// [`AwsKmsOptions::new`] or [`AwsKmsOptions::from_env`], then changed field by field.
#[derive(Debug)]
#[non_exhaustive]
pub struct AwsKmsOptions {
    /// The region requests are signed for, e.g. `eu-west-1`.
    pub region: String,
    /// Who signs the requests.
    pub credentials: AwsCredentials,
    /// The endpoint's URL, `http://HOST[:PORT]` or `https://HOST[:PORT]` (a path of `/` at
    /// most); `None` is AWS's own, `https://kms.REGION.amazonaws.com`.
    pub endpoint: Option<String>,
    /// For an `https://` endpoint: a PEM file of the CAs its certificate is checked against;
    /// `None` is the system's bundle. Not read when [`tls`](Self::tls) is given.
    pub ca_file: Option<PathBuf>,
    /// For an `https://` endpoint: a rustls configuration of your own (client certificates,
    /// pinned roots).
    pub tls: Option<Arc<ClientConfig>>,
    /// The time limit of one call: connecting, TLS, the request and the whole answer.
    pub timeout: Duration,
}

impl AwsKmsOptions {
    /// The time limit of a call unless set otherwise.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// AWS KMS of `region`, at AWS's endpoint, checked against the system's CAs.
    pub fn new(region: impl Into<String>, credentials: AwsCredentials) -> Self {
        AwsKmsOptions {
            region: region.into(),
            credentials,
            endpoint: None,
            ca_file: None,
            tls: None,
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }

    /// From the environment, as the AWS tools read it (the table of [`AwsKms`]'s docs).
    pub fn from_env() -> Result<Self, AwsConfigError> {
        let region = env("AWS_REGION")
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .ok_or_else(|| AwsConfigError::missing("AWS_REGION"))?;
        let mut options = AwsKmsOptions::new(region, AwsCredentials::from_env()?);
        options.endpoint = env("AWS_ENDPOINT_URL_KMS").or_else(|| env("AWS_ENDPOINT_URL"));
        options.ca_file = env("AWS_CA_BUNDLE").map(PathBuf::from);
        Ok(options)
    }
}

/// Why an [`AwsKms`] could not be set up: a setting missing or wrong, or a CA file that
/// does not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsConfigError(String);

impl AwsConfigError {
    fn missing(variable: &str) -> Self {
        AwsConfigError(format!("{variable} is not set"))
    }
}

impl core::fmt::Display for AwsConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "AWS KMS settings: {}", self.0)
    }
}

impl std::error::Error for AwsConfigError {}

/// Where requests go: `http` or `https`, the host and port.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Endpoint {
    https: bool,
    /// The host as connected to and checked in the certificate (no brackets).
    host: String,
    port: u16,
    /// The `Host` header: the URL's host and port as written (brackets kept).
    authority: String,
}

impl Endpoint {
    fn parse(url: &str) -> Result<Endpoint, AwsConfigError> {
        let bad = |why: &str| AwsConfigError(format!("endpoint {url:?}: {why}"));
        let (https, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err(bad("not http:// or https://"));
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.is_empty() {
            return Err(bad("no host"));
        }
        if authority.contains(['/', '?', '#', '@'])
            || authority.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(bad("only a scheme, host and port (no path, query or user)"));
        }
        let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
            let (host, after) = rest.split_once(']').ok_or_else(|| bad("an IPv6 address without its ]"))?;
            match after {
                "" => (host, None),
                _ => (host, Some(after.strip_prefix(':').ok_or_else(|| bad("text after the IPv6 address"))?)),
            }
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = match port {
            Some(p) => {
                p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| bad("a port that is not 1-65535"))?
            }
            None if https => 443,
            None => 80,
        };
        Ok(Endpoint { https, host: host.to_owned(), port, authority: authority.to_owned() })
    }

    fn url(&self) -> String {
        format!("{}://{}/", if self.https { "https" } else { "http" }, self.authority)
    }
}

/// A [`Kms`] over AWS KMS, or a server of its API (moto's server mode, LocalStack): data
/// keys from `GenerateDataKey`, unwrapped with `Decrypt`, under KEKs named by key id, key ARN
/// or alias (`alias/NAME`).
///
/// # What a call does
///
/// | [`Kms`] method | KMS action (`X-Amz-Target: TrentService.*`) | request | answer used |
/// | --- | --- | --- | --- |
/// | [`generate_data_key`](Kms::generate_data_key) | `GenerateDataKey` | `KeyId` = the KEK's name, `KeySpec` = `AES_256` | `Plaintext` (32 bytes), `CiphertextBlob` (the wrapped key) |
/// | [`unwrap_data_key`](Kms::unwrap_data_key) | `Decrypt` | `CiphertextBlob` = the wrapped key, `KeyId` = the KEK's name | `Plaintext` (32 bytes) |
///
/// Each call is one HTTP/1.1 `POST /` on a new connection (plain TCP, or TLS through rustls
/// for `https://` endpoints), signed with AWS Signature Version 4 by the `aws-sigv4` crate
/// (service `kms`, the configured region), within one time limit for the whole exchange
/// ([`AwsKmsOptions::timeout`]). Answers are read to at most 16 KiB of head and 64 KiB of
/// body (chunked or of a `Content-Length`); data keys are cached by the encryption filter, so
/// calls are few.
///
/// # Errors
///
/// | what happened | [`KmsError`] |
/// | --- | --- |
/// | connection refused or cut, no answer within the time limit, HTTP 5xx or 429, `ThrottlingException`, `KMSInternalException`, `DependencyTimeoutException`, `KeyUnavailableException`, `LimitExceededException` | [`Unavailable`](KmsError::Unavailable) (retriable) |
/// | `NotFoundException`, `DisabledException`, `KMSInvalidStateException` (disabled, pending deletion), `AccessDeniedException` | [`UnknownKey`](KmsError::UnknownKey) |
/// | `InvalidCiphertextException`, `IncorrectKeyException`, an empty or over-long wrapped key, a `Decrypt` answer that is not a 32-byte key | [`BadWrappedKey`](KmsError::BadWrappedKey) |
/// | anything else (bad credentials or signature, a TLS certificate refused, an answer that does not parse) | [`Protocol`](KmsError::Protocol), naming the error type and the service's message |
///
/// moto answers a `Decrypt` whose `KeyId` is not the key the blob was wrapped under with
/// `AccessDeniedException` (so [`UnknownKey`](KmsError::UnknownKey)); AWS KMS answers
/// `IncorrectKeyException` ([`BadWrappedKey`](KmsError::BadWrappedKey)).
///
/// # Secrets
///
/// The secret access key and session token are in no `Debug`, `Display` or error text;
/// [`AwsCredentials`] prints as `AwsCredentials(..)` and overwrites them when dropped. Data
/// keys are [`PlainKey`]s; the answer's bytes that held one are overwritten once read.
///
/// # Configuration from the environment
///
/// [`AwsKms::from_env`] reads the variables the AWS tools read:
///
/// | variable | what |
/// | --- | --- |
/// | `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` | the credentials (required) |
/// | `AWS_SESSION_TOKEN` | a session token, for temporary credentials |
/// | `AWS_REGION`, else `AWS_DEFAULT_REGION` | the region (required) |
/// | `AWS_ENDPOINT_URL_KMS`, else `AWS_ENDPOINT_URL` | the endpoint; else `https://kms.REGION.amazonaws.com` |
/// | `AWS_CA_BUNDLE` | the CAs (PEM) an `https://` endpoint's certificate is checked against; else the system's bundle (`SSL_CERT_FILE`, or the usual paths) |
///
/// # Example
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use kwire::proxy::encrypt::{AwsCredentials, AwsKms, AwsKmsOptions, Kms};
///
/// let mut options = AwsKmsOptions::new("eu-west-1", AwsCredentials::from_env()?);
/// options.endpoint = Some("http://127.0.0.1:4566".into()); // a local server of the API
/// let kms = AwsKms::new(options)?;
/// let key = kms.generate_data_key("alias/records").await?;
/// assert_eq!(kms.unwrap_data_key("alias/records", &key.wrapped).await?, key.plain);
/// # Ok(())
/// # }
/// ```
pub struct AwsKms {
    endpoint: Endpoint,
    region: String,
    identity: Identity,
    tls: Option<TlsConnector>,
    timeout: Duration,
}

impl core::fmt::Debug for AwsKms {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AwsKms")
            .field("endpoint", &self.endpoint.url())
            .field("region", &self.region)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl AwsKms {
    /// A client of these settings; an `https://` endpoint's CAs are read now.
    pub fn new(options: AwsKmsOptions) -> Result<AwsKms, AwsConfigError> {
        if options.region.is_empty()
            || !options.region.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(AwsConfigError(format!("region {:?}: not a region name", options.region)));
        }
        if options.timeout.is_zero() {
            return Err(AwsConfigError("a time limit of zero".into()));
        }
        let endpoint = match &options.endpoint {
            Some(url) => Endpoint::parse(url)?,
            None => Endpoint::parse(&format!("https://kms.{}.amazonaws.com", options.region))?,
        };
        let tls = match (endpoint.https, &options.tls) {
            (false, _) => None,
            (true, Some(config)) => Some(TlsConnector::from(config.clone())),
            (true, None) => Some(TlsConnector::from(client_config(options.ca_file.as_deref())?)),
        };
        let creds = &options.credentials;
        if creds.access_key_id.is_empty() || creds.secret_access_key.is_empty() {
            return Err(AwsConfigError("an empty access key id or secret access key".into()));
        }
        let identity: Identity = Credentials::new(
            creds.access_key_id.clone(),
            creds.secret_access_key.clone(),
            creds.session_token.clone(),
            None,
            "kwire",
        )
        .into();
        Ok(AwsKms { endpoint, region: options.region.clone(), identity, tls, timeout: options.timeout })
    }

    /// A client of the settings in the environment ([`AwsKmsOptions::from_env`]).
    pub fn from_env() -> Result<AwsKms, AwsConfigError> {
        AwsKms::new(AwsKmsOptions::from_env()?)
    }

    /// The endpoint's URL, e.g. `https://kms.eu-west-1.amazonaws.com/`.
    pub fn endpoint(&self) -> String {
        self.endpoint.url()
    }

    /// The region requests are signed for.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The request `action` with this JSON body, signed, as bytes to send.
    fn request(&self, action: &str, body: &[u8]) -> Result<Vec<u8>, KmsError> {
        let target = format!("TrentService.{action}");
        let unsigned = [
            ("host", self.endpoint.authority.as_str()),
            ("content-type", CONTENT_TYPE),
            ("x-amz-target", target.as_str()),
        ];
        let params = v4::SigningParams::builder()
            .identity(&self.identity)
            .region(&self.region)
            .name("kms")
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|_| KmsError::Protocol("the request could not be signed".into()))?
            .into();
        let url = self.endpoint.url();
        let signable =
            SignableRequest::new("POST", &url, unsigned.iter().copied(), SignableBody::Bytes(body))
                .map_err(|_| KmsError::Protocol("the request could not be signed".into()))?;
        let (instructions, _signature) = sign(signable, &params)
            .map_err(|_| KmsError::Protocol("the request could not be signed".into()))?
            .into_parts();
        let mut head = String::from("POST / HTTP/1.1\r\n");
        for (name, value) in unsigned.iter().copied().chain(instructions.headers()) {
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
        }
        head.push_str(&format!(
            "content-length: {}\r\nconnection: close\r\nuser-agent: kwire/{}\r\n\r\n",
            body.len(),
            env!("CARGO_PKG_VERSION")
        ));
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        Ok(bytes)
    }

    /// One call: `action` with this JSON body; the answer's JSON object when the service
    /// says 200, else the error it means. `kek` names the key in errors.
    async fn call(&self, action: &str, body: &[u8], kek: &str) -> Result<Value, KmsError> {
        let mut request = self.request(action, body)?;
        let answer = tokio::time::timeout(self.timeout, self.exchange(&request)).await;
        // The request holds the session token, when there is one.
        request.fill(0);
        let answer = answer.map_err(|_| {
            KmsError::Unavailable(format!("no answer from {} within {:?}", self.endpoint.url(), self.timeout))
        })??;
        interpret(answer, kek)
    }

    async fn exchange(&self, request: &[u8]) -> Result<Answer, KmsError> {
        let address = (self.endpoint.host.as_str(), self.endpoint.port);
        let tcp = TcpStream::connect(address)
            .await
            .map_err(|e| KmsError::Unavailable(format!("cannot connect to {}: {e}", self.endpoint.url())))?;
        let _ = tcp.set_nodelay(true);
        match &self.tls {
            None => exchange(tcp, request).await,
            Some(connector) => {
                let name = ServerName::try_from(self.endpoint.host.clone()).map_err(|_| {
                    KmsError::Protocol(format!("{:?} is not a TLS server name", self.endpoint.host))
                })?;
                let stream = connector.connect(name, tcp).await.map_err(|e| match e.kind() {
                    // rustls' refusals (a certificate of another CA or name, no common version).
                    std::io::ErrorKind::InvalidData => {
                        KmsError::Protocol(format!("TLS with {}: {e}", self.endpoint.url()))
                    }
                    _ => KmsError::Unavailable(format!("TLS with {}: {e}", self.endpoint.url())),
                })?;
                exchange(stream, request).await
            }
        }
    }
}

impl Kms for AwsKms {
    fn generate_data_key<'a>(&'a self, kek: &'a str) -> KmsFuture<'a, DataKey> {
        Box::pin(async move {
            let body = serde_json::json!({ "KeyId": kek, "KeySpec": "AES_256" }).to_string();
            let mut answer = self.call("GenerateDataKey", body.as_bytes(), kek).await?;
            let plain = take_key(&mut answer).ok_or_else(|| {
                KmsError::Protocol("GenerateDataKey's answer has no 32-byte Plaintext".into())
            })?;
            let wrapped = answer
                .get("CiphertextBlob")
                .and_then(Value::as_str)
                .and_then(|b| BASE64.decode(b).ok())
                .filter(|w| !w.is_empty() && w.len() <= MAX_WRAPPED)
                .ok_or_else(|| KmsError::Protocol("GenerateDataKey's answer has no CiphertextBlob".into()))?;
            Ok(DataKey { plain, wrapped })
        })
    }

    fn unwrap_data_key<'a>(&'a self, kek: &'a str, wrapped: &'a [u8]) -> KmsFuture<'a, PlainKey> {
        Box::pin(async move {
            if wrapped.is_empty() || wrapped.len() > MAX_WRAPPED {
                return Err(KmsError::BadWrappedKey);
            }
            let body =
                serde_json::json!({ "CiphertextBlob": BASE64.encode(wrapped), "KeyId": kek }).to_string();
            let mut answer = self.call("Decrypt", body.as_bytes(), kek).await?;
            // A blob of this KEK that holds something other than a data key.
            take_key(&mut answer).ok_or(KmsError::BadWrappedKey)
        })
    }
}

/// The answer's `Plaintext`: a 32-byte key, taken out of the answer and its copies wiped.
fn take_key(answer: &mut Value) -> Option<PlainKey> {
    let text = match answer.get_mut("Plaintext")? {
        Value::String(s) => core::mem::take(s),
        _ => return None,
    };
    let mut bytes = text.into_bytes();
    let decoded = BASE64.decode(&bytes);
    bytes.fill(0);
    let mut decoded = decoded.ok()?;
    let key = <[u8; 32]>::try_from(decoded.as_slice()).ok().map(PlainKey::new);
    decoded.fill(0);
    key
}

/// Overwrites a string's bytes before it is freed.
fn wipe_string(s: &mut String) {
    let mut bytes = core::mem::take(s).into_bytes();
    bytes.fill(0);
    core::hint::black_box(&bytes);
}

/// An environment variable, when set and not empty.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A rustls client configuration (ring) checking certificates against the CAs of `ca_file`,
/// else of the system's bundle.
fn client_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, AwsConfigError> {
    let path: PathBuf = match ca_file {
        Some(path) => path.to_owned(),
        None => env("SSL_CERT_FILE")
            .map(PathBuf::from)
            .or_else(|| SYSTEM_CA_BUNDLES.iter().map(PathBuf::from).find(|p| p.is_file()))
            .ok_or_else(|| {
                AwsConfigError("no CA bundle for an https endpoint: set AWS_CA_BUNDLE or ca_file".into())
            })?,
    };
    let mut roots = RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(&path)
        .map_err(|e| AwsConfigError(format!("CA file {}: {e}", path.display())))?;
    for cert in certs {
        let cert = cert.map_err(|e| AwsConfigError(format!("CA file {}: {e}", path.display())))?;
        // A bundle may hold certificates rustls does not take; the rest still count.
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err(AwsConfigError(format!("CA file {}: no usable certificate", path.display())));
    }
    let config = ClientConfig::builder_with_provider(crate::apps::tls_provider::tls_provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| AwsConfigError(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// An HTTP answer: its status and body.
struct Answer {
    status: u16,
    body: Vec<u8>,
}

impl Drop for Answer {
    fn drop(&mut self) {
        // The body may hold a data key.
        self.body.fill(0);
    }
}

/// What the service's answer means: its JSON object on 200, else the error.
fn interpret(answer: Answer, kek: &str) -> Result<Value, KmsError> {
    if answer.status == 200 {
        return match serde_json::from_slice::<Value>(&answer.body) {
            Ok(value @ Value::Object(_)) => Ok(value),
            _ => Err(KmsError::Protocol("an answer of status 200 that is not a JSON object".into())),
        };
    }
    let (kind, message) = error_of(&answer.body);
    let kind_or_status = if kind.is_empty() { format!("HTTP {}", answer.status) } else { kind.clone() };
    let what = if message.is_empty() { kind_or_status } else { format!("{kind_or_status}: {message}") };
    match kind.as_str() {
        "ThrottlingException"
        | "Throttling"
        | "KMSInternalException"
        | "DependencyTimeoutException"
        | "KeyUnavailableException"
        | "LimitExceededException"
        | "ServiceUnavailableException" => Err(KmsError::Unavailable(what)),
        "NotFoundException" | "DisabledException" | "KMSInvalidStateException" | "AccessDeniedException" => {
            Err(KmsError::UnknownKey(kek.to_owned()))
        }
        "InvalidCiphertextException" | "IncorrectKeyException" => Err(KmsError::BadWrappedKey),
        _ if answer.status >= 500 || answer.status == 429 => Err(KmsError::Unavailable(what)),
        _ => Err(KmsError::Protocol(what)),
    }
}

/// An error answer's type and message: JSON's `__type` (after any `#`) and `message`, or
/// an XML error's `<Code>` and `<Message>`; printable and short.
fn error_of(body: &[u8]) -> (String, String) {
    let clean = |s: &str| -> String { s.chars().filter(|c| !c.is_control()).take(MAX_MESSAGE).collect() };
    if let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) {
        let kind = map.get("__type").and_then(Value::as_str).unwrap_or("");
        let kind = kind.rsplit('#').next().unwrap_or(kind);
        let message =
            ["message", "Message"].iter().find_map(|k| map.get(*k).and_then(Value::as_str)).unwrap_or("");
        return (clean(kind), clean(message));
    }
    let text = String::from_utf8_lossy(body);
    let tag = |name: &str| -> String {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        text.split_once(&open)
            .and_then(|(_, rest)| rest.split_once(&close))
            .map(|(inner, _)| clean(inner))
            .unwrap_or_default()
    };
    (tag("Code"), tag("Message"))
}

/// Sends `request` and reads the whole answer: status line, headers, then a body of
/// `Content-Length`, chunked, or to the end of the connection; bounded.
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(stream: S, request: &[u8]) -> Result<Answer, KmsError> {
    // Room for the whole answer from the start: no copy of it is left behind by a growing
    // buffer, and the one buffer is wiped when dropped.
    let mut reader = Reader { stream, buf: Vec::with_capacity(MAX_ANSWER + READ_CHUNK), pos: 0 };
    reader.stream.write_all(request).await.map_err(cut)?;
    reader.stream.flush().await.map_err(cut)?;
    let head = reader.head().await?;
    let (status, length, chunked) = parse_head(&head)?;
    let body = if chunked {
        reader.chunked().await?
    } else if let Some(length) = length {
        if length > MAX_BODY {
            return Err(KmsError::Protocol(format!("an answer body of {length} bytes (at most {MAX_BODY})")));
        }
        reader.fill(length).await?;
        reader.take(length)
    } else {
        reader.rest().await?
    };
    Ok(Answer { status, body })
}

/// A connection that broke while the answer was awaited: worth retrying.
fn cut(e: std::io::Error) -> KmsError {
    KmsError::Unavailable(format!("the connection broke: {e}"))
}

/// The status, `Content-Length` and whether the body is chunked, from an answer's head.
fn parse_head(head: &[u8]) -> Result<(u16, Option<usize>, bool), KmsError> {
    let bad = |why: &str| KmsError::Protocol(format!("an HTTP answer with {why}"));
    let head = core::str::from_utf8(head).map_err(|_| bad("a head that is not text"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(bad("a status line that is not HTTP/1.x"));
    }
    let status = parts
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|s| (200..600).contains(s))
        .ok_or_else(|| bad("no final status"))?;
    let mut length = None;
    let mut chunked = false;
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').ok_or_else(|| bad("a header line without a colon"))?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n = value.parse::<usize>().map_err(|_| bad("a Content-Length that is not a number"))?;
            if length.is_some_and(|l| l != n) {
                return Err(bad("two Content-Lengths"));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if !value.eq_ignore_ascii_case("chunked") {
                return Err(bad("a transfer coding other than chunked"));
            }
            chunked = true;
        }
    }
    Ok((status, length, chunked))
}

/// An answer's bytes as they arrive: what is read and not yet used is `buf[pos..]`.
struct Reader<S> {
    stream: S,
    buf: Vec<u8>,
    pos: usize,
}

impl<S> Drop for Reader<S> {
    fn drop(&mut self) {
        // It held the answer's bytes, which may hold a data key.
        self.buf.fill(0);
    }
}

impl<S: AsyncRead + Unpin> Reader<S> {
    /// Reads more; `Ok(false)` at the end of the connection.
    async fn more(&mut self) -> Result<bool, KmsError> {
        if self.buf.len() >= MAX_ANSWER {
            return Err(KmsError::Protocol(format!("an answer over {MAX_ANSWER} bytes")));
        }
        let mut chunk = [0u8; READ_CHUNK];
        let n = match self.stream.read(&mut chunk).await {
            Ok(n) => n,
            // TLS peers that close without close_notify.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
            Err(e) => return Err(cut(e)),
        };
        self.buf.extend_from_slice(&chunk[..n]);
        chunk.fill(0);
        Ok(n > 0)
    }

    /// Until `n` unused bytes are there.
    async fn fill(&mut self, n: usize) -> Result<(), KmsError> {
        while self.buf.len() - self.pos < n {
            if !self.more().await? {
                return Err(KmsError::Unavailable(
                    "the connection closed in the middle of the answer".into(),
                ));
            }
        }
        Ok(())
    }

    /// The next `n` unused bytes (there).
    fn take(&mut self, n: usize) -> Vec<u8> {
        let out = self.buf[self.pos..self.pos + n].to_vec();
        self.pos += n;
        out
    }

    /// The head, up to and without its empty line.
    async fn head(&mut self) -> Result<Vec<u8>, KmsError> {
        loop {
            if let Some(i) = find(&self.buf[self.pos..], b"\r\n\r\n") {
                return Ok(self.take(i + 4)[..i].to_vec());
            }
            if self.buf.len() - self.pos > MAX_HEAD {
                return Err(KmsError::Protocol(format!("an answer head over {MAX_HEAD} bytes")));
            }
            if !self.more().await? {
                return Err(KmsError::Unavailable(if self.buf.is_empty() {
                    "the connection closed without an answer".into()
                } else {
                    "the connection closed in the middle of the answer".into()
                }));
            }
        }
    }

    /// One line, without its CRLF (at most `max` bytes).
    async fn line(&mut self, max: usize) -> Result<Vec<u8>, KmsError> {
        loop {
            if let Some(i) = find(&self.buf[self.pos..], b"\r\n") {
                return Ok(self.take(i + 2)[..i].to_vec());
            }
            if self.buf.len() - self.pos > max {
                return Err(KmsError::Protocol("a chunked answer with an over-long line".into()));
            }
            if !self.more().await? {
                return Err(KmsError::Unavailable(
                    "the connection closed in the middle of the answer".into(),
                ));
            }
        }
    }

    /// A chunked body, its trailers skipped.
    async fn chunked(&mut self) -> Result<Vec<u8>, KmsError> {
        let mut body = Vec::with_capacity(MAX_BODY);
        loop {
            let line = self.line(1024).await?;
            let size = core::str::from_utf8(&line)
                .ok()
                .map(|l| l.split(';').next().unwrap_or("").trim())
                .and_then(|hex| usize::from_str_radix(hex, 16).ok())
                .ok_or_else(|| KmsError::Protocol("a chunked answer with a bad chunk size".into()))?;
            if size == 0 {
                // Trailers, to the empty line.
                let mut total = 0;
                loop {
                    let trailer = self.line(MAX_HEAD).await?;
                    total += trailer.len();
                    if trailer.is_empty() {
                        return Ok(body);
                    }
                    if total > MAX_HEAD {
                        return Err(KmsError::Protocol("a chunked answer with over-long trailers".into()));
                    }
                }
            }
            if size > MAX_BODY - body.len() {
                body.fill(0);
                return Err(KmsError::Protocol(format!("an answer body over {MAX_BODY} bytes")));
            }
            self.fill(size + 2).await?;
            body.extend_from_slice(&self.buf[self.pos..self.pos + size]);
            if &self.buf[self.pos + size..self.pos + size + 2] != b"\r\n" {
                body.fill(0);
                return Err(KmsError::Protocol("a chunked answer with a chunk not ended by CRLF".into()));
            }
            self.pos += size + 2;
        }
    }

    /// The rest of the connection, as the body.
    async fn rest(&mut self) -> Result<Vec<u8>, KmsError> {
        while self.more().await? {
            if self.buf.len() - self.pos > MAX_BODY {
                return Err(KmsError::Protocol(format!("an answer body over {MAX_BODY} bytes")));
            }
        }
        let n = self.buf.len() - self.pos;
        Ok(self.take(n))
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    fn run<T>(f: impl core::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
    }

    fn answer(status: u16, body: &str) -> Answer {
        Answer { status, body: body.as_bytes().to_vec() }
    }

    fn kms(endpoint: &str, timeout: Duration) -> AwsKms {
        let credentials =
            AwsCredentials::new("AKIDKWIRETEST", "very-secret-key").with_session_token("secret-token");
        let mut options = AwsKmsOptions::new("eu-west-1", credentials);
        options.endpoint = Some(endpoint.to_owned());
        options.timeout = timeout;
        AwsKms::new(options).unwrap()
    }

    /// A one-connection HTTP server on loopback: it reads one request (head and
    /// Content-Length body), answers `reply`, and gives back what it read.
    fn serve_once(reply: Vec<u8>) -> (String, std::thread::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let handle = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut got = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                let n = s.read(&mut chunk).unwrap();
                got.extend_from_slice(&chunk[..n]);
                if let Some(i) = find(&got, b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&got[..i]).to_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length: "))
                        .map(|v| v.trim().parse().unwrap())
                        .unwrap_or(0);
                    if got.len() >= i + 4 + length {
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            s.write_all(&reply).unwrap();
            got
        });
        (url, handle)
    }

    #[test]
    fn endpoints_parse_to_host_port_and_host_header() {
        let e = Endpoint::parse("https://kms.eu-west-1.amazonaws.com").unwrap();
        assert_eq!((e.https, e.host.as_str(), e.port), (true, "kms.eu-west-1.amazonaws.com", 443));
        assert_eq!(e.url(), "https://kms.eu-west-1.amazonaws.com/");
        let e = Endpoint::parse("http://127.0.0.1:4566/").unwrap();
        assert_eq!(
            (e.https, e.host.as_str(), e.port, e.authority.as_str()),
            (false, "127.0.0.1", 4566, "127.0.0.1:4566")
        );
        let e = Endpoint::parse("http://[::1]:8080").unwrap();
        assert_eq!((e.host.as_str(), e.port, e.authority.as_str()), ("::1", 8080, "[::1]:8080"));
        assert_eq!(Endpoint::parse("http://[::1]").unwrap().port, 80);
        for bad in [
            "kms.example.com",
            "ftp://kms",
            "http://",
            "http://host:0",
            "http://host:99999",
            "http://host:x",
            "http://host/path",
            "http://user@host",
            "http://[::1",
            "http://[::1]x",
            "http://ho st",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn settings_are_checked_and_no_secret_is_printed() {
        let creds =
            || AwsCredentials::new("AKIDKWIRETEST", "very-secret-key").with_session_token("secret-token");
        let options = AwsKmsOptions::new("eu-west-1", creds());
        let printed = format!("{options:?}");
        assert!(!printed.contains("very-secret-key") && !printed.contains("secret-token"), "{printed}");
        assert!(printed.contains("AwsCredentials(..)"), "{printed}");
        let kms = kms("http://127.0.0.1:1", Duration::from_secs(1));
        let printed = format!("{kms:?}");
        assert!(!printed.contains("secret") && !printed.contains("AKID"), "{printed}");
        assert!(printed.contains("http://127.0.0.1:1/") && printed.contains("eu-west-1"), "{printed}");

        let mut o = AwsKmsOptions::new("eu west", creds());
        o.endpoint = Some("http://127.0.0.1:1".into());
        assert!(AwsKms::new(o).is_err());
        let mut o = AwsKmsOptions::new("eu-west-1", AwsCredentials::new("", "x"));
        o.endpoint = Some("http://127.0.0.1:1".into());
        assert!(AwsKms::new(o).is_err());
        let mut o = AwsKmsOptions::new("eu-west-1", creds());
        o.endpoint = Some("https://127.0.0.1:1".into());
        o.ca_file = Some("/nonexistent/ca.pem".into());
        let err = AwsKms::new(o).unwrap_err().to_string();
        assert!(err.contains("/nonexistent/ca.pem"), "{err}");
        let mut o = AwsKmsOptions::new("eu-west-1", creds());
        o.timeout = Duration::ZERO;
        assert!(AwsKms::new(o).is_err());
    }

    #[test]
    fn service_errors_map_to_kms_errors() {
        let e = |status: u16, body: &str| interpret(answer(status, body), "alias/k").unwrap_err();
        let json = |kind: &str| format!(r#"{{"__type":"{kind}","message":"why"}}"#);
        for kind in [
            "ThrottlingException",
            "KMSInternalException",
            "DependencyTimeoutException",
            "KeyUnavailableException",
        ] {
            assert!(e(400, &json(kind)).is_retriable(), "{kind}");
        }
        assert!(e(503, "").is_retriable());
        assert!(e(500, "<html>oops</html>").is_retriable());
        assert!(e(429, "").is_retriable());
        for kind in [
            "NotFoundException",
            "com.amazonaws.kms#NotFoundException",
            "DisabledException",
            "KMSInvalidStateException",
            "AccessDeniedException",
        ] {
            assert_eq!(e(400, &json(kind)), KmsError::UnknownKey("alias/k".into()), "{kind}");
        }
        assert_eq!(e(400, &json("InvalidCiphertextException")), KmsError::BadWrappedKey);
        assert_eq!(e(400, &json("IncorrectKeyException")), KmsError::BadWrappedKey);
        assert_eq!(
            e(400, &json("ValidationException")),
            KmsError::Protocol("ValidationException: why".into())
        );
        let xml = "<ErrorResponse><Errors><Error><Code>SignatureDoesNotMatch</Code><Message>no\nmatch</Message></Error></Errors></ErrorResponse>";
        assert_eq!(e(403, xml), KmsError::Protocol("SignatureDoesNotMatch: nomatch".into()));
        assert_eq!(e(404, ""), KmsError::Protocol("HTTP 404".into()));
        let long = json(&"x".repeat(1000));
        let KmsError::Protocol(what) = e(400, &long) else { panic!() };
        assert!(what.len() < 2 * MAX_MESSAGE, "{what}");
        assert!(matches!(interpret(answer(200, "[1]"), "k"), Err(KmsError::Protocol(_))));
        assert!(matches!(interpret(answer(200, "{"), "k"), Err(KmsError::Protocol(_))));
    }

    #[test]
    fn answers_are_read_by_length_chunked_or_to_the_end_and_bounded() {
        let read = |bytes: Vec<u8>| {
            run(async move {
                let (mut server, client) = tokio::io::duplex(1 << 20);
                server.write_all(&bytes).await.unwrap();
                drop(server);
                exchange(client, b"").await.map(|a| (a.status, a.body.clone()))
            })
        };
        let ok = |s: &str| read(s.as_bytes().to_vec()).unwrap();
        assert_eq!(ok("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"), (200, b"{}".to_vec()));
        assert_eq!(ok("HTTP/1.1 400 Bad\r\ncontent-length: 3\r\n\r\nabcdef"), (400, b"abc".to_vec()));
        assert_eq!(
            ok(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n1\r\nd\r\n0\r\nT: 1\r\n\r\n"
            ),
            (200, b"abcd".to_vec())
        );
        assert_eq!(ok("HTTP/1.0 200 OK\r\n\r\nto the end"), (200, b"to the end".to_vec()));

        let err = |s: &[u8]| read(s.to_vec()).unwrap_err();
        assert!(err(b"").is_retriable());
        assert!(err(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab").is_retriable());
        assert!(err(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab").is_retriable());
        for bad in [
            &b"SSH-2.0\r\n\r\n"[..],
            b"HTTP/1.1 abc\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffff\r\n",
        ] {
            let e = err(bad);
            assert!(matches!(e, KmsError::Protocol(_)), "{:?}: {e:?}", String::from_utf8_lossy(bad));
        }
        let mut huge_head = b"HTTP/1.1 200 OK\r\n".to_vec();
        huge_head.extend(core::iter::repeat_n(b'a', MAX_HEAD + 10));
        assert!(matches!(err(&huge_head), KmsError::Protocol(_)));
        let mut huge_body = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        huge_body.extend(core::iter::repeat_n(b'a', MAX_BODY + 10));
        assert!(matches!(err(&huge_body), KmsError::Protocol(_)));
        let mut many_chunks = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for _ in 0..(MAX_BODY / 1000 + 2) {
            many_chunks.extend_from_slice(b"3e8\r\n");
            many_chunks.extend(core::iter::repeat_n(b'a', 1000));
            many_chunks.extend_from_slice(b"\r\n");
        }
        assert!(matches!(err(&many_chunks), KmsError::Protocol(_)));
        // One byte per chunk, each size line long with an extension: the framing is bounded too.
        let mut long_framing = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        let extension = format!("1;{}\r\na\r\n", "x".repeat(1000));
        for _ in 0..(MAX_ANSWER / 1000 + 2) {
            long_framing.extend_from_slice(extension.as_bytes());
        }
        assert!(matches!(err(&long_framing), KmsError::Protocol(why) if why.contains("an answer over")));
    }

    #[test]
    fn a_request_is_signed_with_sigv4_and_a_key_is_read_from_the_answer() {
        let key = [7u8; 32];
        let body = format!(
            r#"{{"KeyId":"arn:k","Plaintext":"{}","CiphertextBlob":"{}"}}"#,
            BASE64.encode(key),
            BASE64.encode(b"wrapped")
        );
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.1\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (url, server) = serve_once(reply.into_bytes());
        let kms = kms(&url, Duration::from_secs(5));
        let got = run(kms.generate_data_key("alias/k")).unwrap();
        assert_eq!(got.plain.bytes(), &key);
        assert_eq!(got.wrapped, b"wrapped");
        let request = String::from_utf8(server.join().unwrap()).unwrap();
        let (head, body) = request.split_once("\r\n\r\n").unwrap();
        let head = head.to_lowercase();
        assert!(head.starts_with("post / http/1.1\r\n"), "{head}");
        let authority = url.strip_prefix("http://").unwrap();
        for line in [
            format!("host: {authority}"),
            "content-type: application/x-amz-json-1.1".into(),
            "x-amz-target: trentservice.generatedatakey".into(),
            "x-amz-security-token: secret-token".into(),
            format!("content-length: {}", body.len()),
        ] {
            assert!(head.lines().any(|l| l == line), "{line} not in {head}");
        }
        let auth = head.lines().find_map(|l| l.strip_prefix("authorization: ")).unwrap();
        assert!(auth.starts_with("aws4-hmac-sha256 credential=akidkwiretest/"), "{auth}");
        assert!(auth.contains("/eu-west-1/kms/aws4_request"), "{auth}");
        assert!(
            auth.contains("signedheaders=content-type;host;x-amz-date;x-amz-security-token;x-amz-target"),
            "{auth}"
        );
        assert!(!request.contains("very-secret-key"));
        let sent: Value = serde_json::from_str(body).unwrap();
        assert_eq!(sent, serde_json::json!({"KeyId": "alias/k", "KeySpec": "AES_256"}));
    }

    #[test]
    fn decrypt_answers_other_than_a_32_byte_key_are_bad_wrapped_keys() {
        let body = format!(r#"{{"KeyId":"arn:k","Plaintext":"{}"}}"#, BASE64.encode([1u8; 16]));
        let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        let (url, server) = serve_once(reply.into_bytes());
        let kms = kms(&url, Duration::from_secs(5));
        assert_eq!(run(kms.unwrap_data_key("k", b"blob")), Err(KmsError::BadWrappedKey));
        let request = String::from_utf8(server.join().unwrap()).unwrap();
        let sent: Value = serde_json::from_str(request.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(sent, serde_json::json!({"CiphertextBlob": BASE64.encode(b"blob"), "KeyId": "k"}));
        // Not sent at all.
        assert_eq!(run(kms.unwrap_data_key("k", b"")), Err(KmsError::BadWrappedKey));
        assert_eq!(run(kms.unwrap_data_key("k", &[0; MAX_WRAPPED + 1])), Err(KmsError::BadWrappedKey));
    }

    #[test]
    fn refused_and_silent_services_are_unavailable() {
        // A port nothing listens on: bound, then closed.
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let kms = kms(&format!("http://127.0.0.1:{port}"), Duration::from_secs(5));
        let err = run(kms.generate_data_key("k")).unwrap_err();
        assert!(err.is_retriable(), "{err}");
        // A service that accepts and never answers.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let kms = kms_at(&listener, Duration::from_millis(300));
        let start = std::time::Instant::now();
        let err = run(kms.unwrap_data_key("k", b"blob")).unwrap_err();
        assert!(err.is_retriable() && err.to_string().contains("within"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(3));
        drop(listener);
    }

    fn kms_at(listener: &TcpListener, timeout: Duration) -> AwsKms {
        kms(&format!("http://{}", listener.local_addr().unwrap()), timeout)
    }
}
