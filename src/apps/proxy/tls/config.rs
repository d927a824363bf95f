//! What TLS is set up from: the listener's certificate ([`ServerTls`]), the brokers' roots
//! ([`UpstreamTls`]), the PEM files they are read from, and [`TlsError`].

use super::*;

/// TLS termination: the server side of client connections.
#[derive(Clone, Debug)]
pub struct ServerTls {
    pub(super) config: Arc<ServerConfig>,
    pub(super) client_auth: bool,
}

impl ServerTls {
    /// From a certificate chain and its key (PEM files: the server's certificate first; the
    /// key PKCS#8, PKCS#1 or SEC1), with client certificates required and checked against
    /// the CAs of `client_ca` when given (mutual TLS).
    pub fn from_pem_files(
        cert: &Path,
        key_file: &Path,
        client_ca: Option<&Path>,
    ) -> Result<ServerTls, TlsError> {
        let chain = certs(cert, "certificate")?;
        let key = key(key_file, "key")?;
        let builder = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError(e.to_string()))?;
        let builder = match client_ca {
            Some(ca) => {
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    roots(ca, "client CA")?,
                    provider(),
                )
                .build()
                .map_err(|e| TlsError(format!("client CA {}: {e}", ca.display())))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let config = builder
            .with_single_cert(chain, key)
            .map_err(|e| TlsError(format!("certificate and key: {e}")))?;
        Ok(ServerTls { config: Arc::new(config), client_auth: client_ca.is_some() })
    }

    /// From a rustls configuration of your own; `client_auth` says whether it asks clients
    /// for certificates (for the start-up words only).
    pub fn from_config(config: Arc<ServerConfig>, client_auth: bool) -> ServerTls {
        ServerTls { config, client_auth }
    }
}

/// TLS origination: the client side of broker connections.
#[derive(Clone)]
pub struct UpstreamTls {
    pub(super) connector: TlsConnector,
    pub(super) insecure: bool,
}

impl core::fmt::Debug for UpstreamTls {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("UpstreamTls").field("insecure", &self.insecure).finish()
    }
}

impl UpstreamTls {
    /// Brokers' certificates checked against the CAs of `ca` (PEM) and the host name each
    /// broker is reached by; `client` is a certificate chain and key (PEM) shown to brokers
    /// that ask for one.
    pub fn from_pem_files(ca: &Path, client: Option<(&Path, &Path)>) -> Result<UpstreamTls, TlsError> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError(e.to_string()))?
            .with_root_certificates(roots(ca, "upstream CA")?);
        Self::finish(builder, client, false)
    }

    /// DANGEROUS, for tests only: accepts any certificate from brokers, of any CA and for any
    /// name. Anyone between the proxy and the brokers can then read and change the traffic.
    pub fn insecure_skip_verify(client: Option<(&Path, &Path)>) -> Result<UpstreamTls, TlsError> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SkipVerify(provider())));
        Self::finish(builder, client, true)
    }

    fn finish(
        builder: rustls::ConfigBuilder<ClientConfig, rustls::client::WantsClientCert>,
        client: Option<(&Path, &Path)>,
        insecure: bool,
    ) -> Result<UpstreamTls, TlsError> {
        let config = match client {
            Some((cert, key_file)) => builder
                .with_client_auth_cert(certs(cert, "client certificate")?, key(key_file, "client key")?)
                .map_err(|e| TlsError(format!("client certificate and key: {e}")))?,
            None => builder.with_no_client_auth(),
        };
        Ok(UpstreamTls { connector: TlsConnector::from(Arc::new(config)), insecure })
    }

    /// From a rustls configuration of your own.
    pub fn from_config(config: Arc<ClientConfig>) -> UpstreamTls {
        UpstreamTls { connector: TlsConnector::from(config), insecure: false }
    }

    /// Whether brokers' certificates go unchecked ([`UpstreamTls::insecure_skip_verify`]).
    pub fn is_insecure(&self) -> bool {
        self.insecure
    }
}

/// A TLS set-up that could not be made: which file, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsError(pub(super) String);

impl core::fmt::Display for TlsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsError {}

fn certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError(format!("{what} {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(TlsError(format!(
            "{what} {}: no certificate (PEM \"CERTIFICATE\") in the file",
            path.display()
        )));
    }
    Ok(certs)
}

fn key(path: &Path, what: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| TlsError(format!("{what} {}: {e}", path.display())))
}

fn roots(path: &Path, what: &str) -> Result<Arc<RootCertStore>, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in certs(path, what)? {
        roots.add(cert).map_err(|e| TlsError(format!("{what} {}: {e}", path.display())))?;
    }
    Ok(Arc::new(roots))
}

/// Accepts any broker certificate (`--upstream-insecure-skip-verify`); the handshake's
/// signatures are still checked, so the peer holds the key of what it showed.
#[derive(Debug)]
struct SkipVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for SkipVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
