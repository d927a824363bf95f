//! [`AwsKms`]: a [`Kms`] over the AWS Key Management Service's JSON API (feature
//! `encrypt-aws`). Its docs map the calls, errors, secrets and settings. This module holds
//! the calls and the reading of the service's answers and errors; `config.rs` the settings
//! (credentials, region, endpoint, CAs); `http.rs` the small bounded HTTP/1.1 exchange over
//! tokio (TLS by tokio-rustls). Requests are signed with SigV4 by `aws-sigv4`.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rustls::pki_types::ServerName;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::kms::{DataKey, Kms, KmsError, KmsFuture, PlainKey};

mod config;
mod http;
#[cfg(test)]
mod tests;

pub use config::{AwsConfigError, AwsCredentials, AwsKmsOptions};
use config::{Endpoint, client_config};
use http::{Answer, exchange};

/// The longest wrapped key AWS KMS takes in `Decrypt` (`CiphertextBlob`, 6144 bytes).
const MAX_WRAPPED: usize = 6144;
/// The longest service message quoted in an error.
const MAX_MESSAGE: usize = 200;
/// The JSON API's content type.
const CONTENT_TYPE: &str = "application/x-amz-json-1.1";

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
pub(super) fn wipe_string(s: &mut String) {
    let mut bytes = core::mem::take(s).into_bytes();
    bytes.fill(0);
    core::hint::black_box(&bytes);
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
