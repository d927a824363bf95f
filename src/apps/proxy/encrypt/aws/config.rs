//! [`AwsKms`](super::AwsKms)'s settings: credentials (from the environment or given), the
//! region, the endpoint URL and the CAs an `https://` endpoint is checked against.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::path::{Path, PathBuf};
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{ClientConfig, RootCertStore};

use super::wipe_string;

/// Where the system's CA bundle usually is, tried in order when no CAs are given.
const SYSTEM_CA_BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// credentials. Printed only as `AwsCredentials(..)`; the secret and the token are
/// overwritten when dropped.
pub struct AwsCredentials {
    pub(super) access_key_id: String,
    pub(super) secret_access_key: String,
    pub(super) session_token: Option<String>,
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

    /// From the environment, as the AWS tools read it (the table of [`AwsKms`](super::AwsKms)'s docs).
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

/// Why an [`AwsKms`](super::AwsKms) could not be set up: a setting missing or wrong, or a CA file that
/// does not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsConfigError(pub(super) String);

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
pub(super) struct Endpoint {
    pub(super) https: bool,
    /// The host as connected to and checked in the certificate (no brackets).
    pub(super) host: String,
    pub(super) port: u16,
    /// The `Host` header: the URL's host and port as written (brackets kept).
    pub(super) authority: String,
}

impl Endpoint {
    pub(super) fn parse(url: &str) -> Result<Endpoint, AwsConfigError> {
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

    pub(super) fn url(&self) -> String {
        format!("{}://{}/", if self.https { "https" } else { "http" }, self.authority)
    }
}

/// An environment variable, when set and not empty.
pub(super) fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A rustls client configuration (ring) checking certificates against the CAs of `ca_file`,
/// else of the system's bundle.
pub(super) fn client_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, AwsConfigError> {
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
