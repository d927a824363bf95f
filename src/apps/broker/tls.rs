//! The TLS listener (feature `broker-tls`): rustls over ring, blocking, on the connection
//! threads. A client whose TLS fails (no TLS, garbage, a handshake cut short) loses its own
//! connection only.

use std::io;
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::vec::Vec;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

/// The server side of TLS for [`super::Config::tls`]: a certificate chain and its key. With
/// it the listener speaks TLS only (Kafka's SSL, and SASL_SSL with users).
#[derive(Clone)]
pub struct TlsConfig {
    config: Arc<ServerConfig>,
}

impl core::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TlsConfig").finish_non_exhaustive()
    }
}

fn invalid(what: &str, e: impl core::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, std::format!("{what}: {e}"))
}

impl TlsConfig {
    /// From PEM: the certificate chain (the server's certificate first) and its private key
    /// (PKCS#8, PKCS#1 or SEC1). TLS 1.2 and 1.3, no client certificates.
    pub fn from_pem(cert_chain: &[u8], key: &[u8]) -> io::Result<TlsConfig> {
        let chain = CertificateDer::pem_slice_iter(cert_chain)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid("certificate chain", e))?;
        if chain.is_empty() {
            return Err(invalid("certificate chain", "no certificate in the PEM"));
        }
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| invalid("private key", e))?;
        let config = ServerConfig::builder_with_provider(crate::apps::tls_provider::tls_provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid("TLS", e))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| invalid("certificate and key", e))?;
        Ok(TlsConfig { config: Arc::new(config) })
    }

    /// From PEM files (see [`TlsConfig::from_pem`]).
    pub fn from_pem_files(cert_chain: &Path, key: &Path) -> io::Result<TlsConfig> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| io::Error::new(e.kind(), std::format!("{}: {e}", p.display())))
        };
        TlsConfig::from_pem(&read(cert_chain)?, &read(key)?)
    }

    /// From a rustls configuration of your own (client certificates, other versions).
    pub fn from_config(config: Arc<ServerConfig>) -> TlsConfig {
        TlsConfig { config }
    }
}

/// An accepted connection with TLS on it (the handshake happens at the first read).
pub(crate) fn wrap(
    tls: &TlsConfig,
    stream: TcpStream,
) -> io::Result<StreamOwned<ServerConnection, TcpStream>> {
    let conn = ServerConnection::new(tls.config.clone()).map_err(io::Error::other)?;
    Ok(StreamOwned::new(conn, stream))
}
