//! TLS for the proxy, with rustls over ring: termination ([`ServerTls`]: clients connect
//! with TLS, client certificates optional), origination ([`UpstreamTls`]: the proxy connects
//! to brokers with TLS) and SNI routing (one listener for the whole cluster, each connection
//! sent to the broker whose name the client asked for).
//!
//! The names are [`BrokerNames`]' (a pure function of the pattern, so two proxies with the
//! same settings agree); the addresses behind them are learned from the responses the proxy
//! rewrites ([`crate::filter::ByName`]), or, for a name no response has named yet, from a
//! Metadata request of the proxy's own to the bootstrap broker.
//!
//! Every failure (a client that does not speak TLS, a handshake cut short or of garbage, a
//! name that is no broker's, a certificate refused either way) ends that one connection; the
//! listener and the other connections go on. Failed client handshakes are counted by
//! [`Failure`] (`kwire_proxy_tls_handshake_failures_total`).

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::ErrorKind;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crate::apps::tls_provider::tls_provider as provider;
use crate::filter::{BrokerNames, NameTarget};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::{LazyConfigAcceptor, TlsConnector};

/// TLS termination: the server side of client connections.
#[derive(Clone, Debug)]
pub struct ServerTls {
    config: Arc<ServerConfig>,
    client_auth: bool,
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
    connector: TlsConnector,
    insecure: bool,
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
pub struct TlsError(String);

impl core::fmt::Display for TlsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsError {}

/// The TLS set-up every connection shares.
pub(super) struct Tls {
    /// Termination: the server side of client connections.
    server: Option<ServerTls>,
    handshake_timeout: Duration,
    /// Origination: the client side of broker connections.
    upstream: Option<UpstreamTls>,
    /// SNI routing.
    pub(super) sni: Option<Sni>,
    /// Client handshakes that failed, by reason.
    pub(super) failures: Failures,
}

/// Why a client's TLS handshake failed: the `reason` label of
/// `kwire_proxy_tls_handshake_failures_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Failure {
    /// The first byte is not a TLS handshake record's (a plaintext client on a TLS port).
    Plaintext,
    /// A ClientHello that does not parse (garbage).
    BadHello,
    /// SNI routing: no server name, or one that is no broker's.
    UnknownName,
    /// rustls refused a certificate (a client's: expired, of another CA, missing), or the
    /// client sent an alert (commonly: it refused the proxy's certificate).
    Certificate,
    /// The client closed the connection before or during the handshake.
    Closed,
    /// Not finished within `--tls-handshake-timeout`.
    Timeout,
    /// Anything else: a read error, another TLS error, a broker's address not learned.
    Other,
}

impl Failure {
    /// Every reason, in the order rendered.
    pub const ALL: [Failure; 7] = [
        Failure::Plaintext,
        Failure::BadHello,
        Failure::UnknownName,
        Failure::Certificate,
        Failure::Closed,
        Failure::Timeout,
        Failure::Other,
    ];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Failure::Plaintext => "plaintext",
            Failure::BadHello => "bad_hello",
            Failure::UnknownName => "unknown_name",
            Failure::Certificate => "certificate",
            Failure::Closed => "closed",
            Failure::Timeout => "timeout",
            Failure::Other => "other",
        }
    }

    /// The reason of a failed TLS read (`fallback` unless the peer left or rustls says a
    /// certificate was refused or an alert came).
    fn of(e: &std::io::Error, fallback: Failure) -> Failure {
        if e.kind() == ErrorKind::UnexpectedEof {
            return Failure::Closed;
        }
        match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
            Some(
                rustls::Error::InvalidCertificate(_)
                | rustls::Error::NoCertificatesPresented
                | rustls::Error::AlertReceived(_),
            ) => Failure::Certificate,
            _ => fallback,
        }
    }
}

/// Counts of failed client handshakes, one per [`Failure`].
#[derive(Default)]
pub(super) struct Failures([AtomicU64; Failure::ALL.len()]);

impl Failures {
    /// Counts one failure.
    pub fn count(&self, why: Failure) {
        self.0[why as usize].fetch_add(1, Relaxed);
    }

    /// How many failures of `why` so far.
    pub fn get(&self, why: Failure) -> u64 {
        self.0[why as usize].load(Relaxed)
    }

    /// Appends `NS_tls_handshake_failures_total{reason}` (every reason, zeros too) in the
    /// Prometheus text format.
    pub fn render_into(&self, s: &mut String, ns: &str) {
        let _ = writeln!(
            s,
            "# HELP {ns}_tls_handshake_failures_total Client TLS handshakes that failed, by reason.\n\
             # TYPE {ns}_tls_handshake_failures_total counter"
        );
        for why in Failure::ALL {
            let _ = writeln!(
                s,
                "{ns}_tls_handshake_failures_total{{reason=\"{}\"}} {}",
                why.label(),
                self.get(why)
            );
        }
    }
}

/// SNI routing's state: the names, and the brokers' own addresses learned so far.
pub(super) struct Sni {
    pub(super) names: BrokerNames,
    /// `--sni-pattern` as given, for the log.
    pattern: String,
    /// The port written into rewritten addresses (the --listen port).
    pub(super) port: i32,
    /// Node id to the broker's own `host:port`.
    brokers: Mutex<HashMap<i32, String>>,
}

impl Sni {
    /// Remembers broker `node_id`'s own address, as a response named it.
    pub fn learn(&self, node_id: i32, host: &str, port: i32) {
        let addr = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
        let mut brokers = self.brokers.lock().unwrap_or_else(|e| e.into_inner());
        if brokers.get(&node_id) != Some(&addr) {
            brokers.insert(node_id, addr);
        }
    }

    fn broker(&self, node_id: i32) -> Option<String> {
        self.brokers.lock().unwrap_or_else(|e| e.into_inner()).get(&node_id).cloned()
    }
}

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

impl Tls {
    /// The set-up; `listen_port` is the port SNI routing writes into addresses.
    pub(super) fn new(
        server: Option<ServerTls>,
        upstream: Option<UpstreamTls>,
        sni: Option<&super::SniRouting>,
        handshake_timeout: Duration,
        listen_port: u16,
    ) -> Result<Tls, String> {
        let sni = match sni {
            Some(routing) => {
                if server.is_none() {
                    return Err("SNI routing needs TLS termination (server TLS)".into());
                }
                Some(Sni {
                    pattern: routing.pattern.clone(),
                    names: BrokerNames::new(&routing.pattern, &routing.bootstrap)
                        .map_err(|e| format!("SNI pattern and bootstrap name: {e}"))?,
                    port: i32::from(listen_port),
                    brokers: Mutex::new(HashMap::new()),
                })
            }
            None => None,
        };
        Ok(Tls { server, handshake_timeout, upstream, sni, failures: Failures::default() })
    }

    /// What the start-up log says of TLS, if any is on.
    pub(super) fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(server) = &self.server {
            let mtls = if server.client_auth { ", client certificates required" } else { "" };
            parts.push(format!("TLS from clients{mtls}"));
        }
        if let Some(upstream) = &self.upstream {
            let unchecked = if upstream.insecure { ", their certificates NOT verified" } else { "" };
            parts.push(format!("TLS to brokers{unchecked}"));
        }
        if let Some(sni) = &self.sni {
            parts.push(format!(
                "SNI routing: bootstrap {}, brokers {} on port {}",
                sni.names.bootstrap(),
                sni.pattern,
                sni.port
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// Whether clients connect with TLS.
    pub(super) fn terminates(&self) -> bool {
        self.server.is_some()
    }

    /// Whether brokers are reached with TLS.
    pub(super) fn originates(&self) -> bool {
        self.upstream.is_some()
    }
}

/// A client's TLS connection, with the server name it asked for and the broker it goes to.
pub(super) struct Accepted {
    pub(super) stream: tokio_rustls::server::TlsStream<TcpStream>,
    pub(super) server_name: Option<String>,
    pub(super) upstream: String,
    /// The client's certificate chain (DER), if it showed one.
    pub(super) certificates: Vec<Vec<u8>>,
}

/// The server side of a client's handshake, within `--tls-handshake-timeout`. The first
/// byte is looked at before anything else, so that a client speaking plain Kafka to a TLS
/// port is told apart from a broken handshake; with SNI routing the server name of the
/// ClientHello chooses the broker ([`route`]) before the handshake goes on, so that a name
/// that is no broker's is refused before any certificate is shown. `Err` is the log line's
/// reason.
pub(super) async fn accept(
    tls: &Tls,
    stream: TcpStream,
    bootstrap: &str,
    max_frame: usize,
) -> Result<Accepted, String> {
    let Some(server) = &tls.server else { return Err("TLS is not configured".into()) };
    let handshake = async {
        let mut first = [0u8; 1];
        match stream.peek(&mut first).await {
            Ok(0) => {
                return Err((
                    Failure::Closed,
                    "the client closed the connection before a TLS handshake".to_string(),
                ));
            }
            Ok(_) => {}
            Err(e) => return Err((Failure::Other, format!("read error before the TLS handshake: {e}"))),
        }
        // 0x16: a TLS handshake record.
        if first[0] != 0x16 {
            return Err((
                Failure::Plaintext,
                format!(
                    "not a TLS handshake (first byte 0x{:02x}; a plaintext Kafka client on a TLS port?)",
                    first[0]
                ),
            ));
        }
        let start =
            LazyConfigAcceptor::new(rustls::server::Acceptor::default(), stream).await.map_err(|e| {
                (Failure::of(&e, Failure::BadHello), format!("bad TLS ClientHello: {}", reason(&e)))
            })?;
        let server_name = start.client_hello().server_name().map(str::to_ascii_lowercase);
        let upstream = route(tls, server_name.as_deref(), bootstrap, max_frame).await?;
        let stream = start.into_stream(server.config.clone()).await.map_err(|e| {
            (Failure::of(&e, Failure::Other), format!("TLS handshake failed: {}", reason(&e)))
        })?;
        let certificates = stream
            .get_ref()
            .1
            .peer_certificates()
            .map(|chain| chain.iter().map(|c| c.as_ref().to_vec()).collect())
            .unwrap_or_default();
        Ok(Accepted { stream, server_name, upstream, certificates })
    };
    let result = match tokio::time::timeout(tls.handshake_timeout, handshake).await {
        Ok(r) => r,
        Err(_) => Err((
            Failure::Timeout,
            format!("the TLS handshake did not finish within {}s", tls.handshake_timeout.as_secs()),
        )),
    };
    result.map_err(|(why, line)| {
        tls.failures.count(why);
        line
    })
}

/// An I/O error's words, without the "unexpected end of file" noise of a peer that left.
fn reason(e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::UnexpectedEof => "the peer closed the connection during the handshake".into(),
        _ => e.to_string(),
    }
}

/// The host part of `host:port` (IPv6 brackets removed).
fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

/// The client side of a handshake with broker `addr` (`host:port`), checking its
/// certificate against the host name (or IP address) it is reached by.
pub(super) async fn connect(
    tls: &Tls,
    tcp: TcpStream,
    addr: &str,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
    let Some(upstream) = &tls.upstream else { return Err("TLS to brokers is not configured".into()) };
    let name = ServerName::try_from(host_of(addr).to_string())
        .map_err(|e| format!("{}: not a server name for TLS: {e}", host_of(addr)))?;
    match tokio::time::timeout(Duration::from_secs(10), upstream.connector.connect(name, tcp)).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(format!("TLS handshake with the broker failed: {}", reason(&e))),
        Err(_) => Err("the TLS handshake with the broker did not finish within 10s".into()),
    }
}

/// Where a client's server name sends it under SNI routing: the bootstrap broker, or the
/// broker the name stands for (its address learned from responses, or asked of the
/// bootstrap broker). `Err` is the log line's reason.
async fn route(
    tls: &Tls,
    server_name: Option<&str>,
    bootstrap: &str,
    max_frame: usize,
) -> Result<String, (Failure, String)> {
    let Some(sni) = &tls.sni else { return Ok(bootstrap.to_string()) };
    let Some(name) = server_name else {
        return Err((
            Failure::UnknownName,
            "the client sent no server name (SNI), which --sni-pattern routing needs".into(),
        ));
    };
    let id = match sni.names.lookup(name.trim_end_matches('.')) {
        Some(NameTarget::Bootstrap) => return Ok(bootstrap.to_string()),
        Some(NameTarget::Broker(id)) => id,
        None => {
            return Err((
                Failure::UnknownName,
                format!(
                    "unknown server name {name:?}: neither the bootstrap name {} nor a broker's (--sni-pattern)",
                    sni.names.bootstrap()
                ),
            ));
        }
    };
    if let Some(addr) = sni.broker(id) {
        return Ok(addr);
    }
    // No response named this broker yet (another proxy instance may have): ask the cluster.
    learn_brokers(tls, sni, bootstrap, max_frame).await.map_err(|e| {
        (
            Failure::Other,
            format!("server name {name:?} is broker {id}, whose address is not known: asking {bootstrap} failed: {e}"),
        )
    })?;
    sni.broker(id).ok_or((
        Failure::UnknownName,
        format!("server name {name:?} is broker {id}, which the cluster's metadata does not list"),
    ))
}

/// Asks the bootstrap broker for the cluster's brokers (Metadata v12, no topics) and learns
/// their addresses.
async fn learn_brokers(tls: &Tls, sni: &Sni, bootstrap: &str, max_frame: usize) -> Result<(), String> {
    const VERSION: i16 = 12;
    let mut request = vec![0u8; 64];
    let body = crate::codec::messages::MetadataRequest::default();
    let n = crate::codec::dispatch::encode_request(&body, VERSION, 1, Some("kwire-proxy"), &mut request)
        .map_err(|e| e.to_string())?;
    request.truncate(n);
    let (tcp, reached) = super::dial::connect(bootstrap).await.map_err(|e| format!("cannot connect: {e}"))?;
    let ask = async {
        let frame = if tls.upstream.is_some() {
            exchange(connect(tls, tcp, &reached).await?, &request, max_frame).await
        } else {
            exchange(tcp, &request, max_frame).await
        }?;
        let response = crate::codec::dispatch::parse_response(&frame, crate::ApiKey::Metadata, VERSION)
            .map_err(|e| format!("its Metadata response does not decode: {e}"))?;
        let crate::codec::messages::ResponseBodyView::Metadata(view) = response.body else {
            return Err("not a Metadata response".to_string());
        };
        for b in view.brokers().iter() {
            sni.learn(b.node_id(), b.host(), b.port());
        }
        Ok(())
    };
    match tokio::time::timeout(Duration::from_secs(10), ask).await {
        Ok(r) => r,
        Err(_) => Err("no answer within 10s".into()),
    }
}

/// Sends one request frame and reads one response frame (without its size prefix).
async fn exchange<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut s: S,
    request: &[u8],
    max_frame: usize,
) -> Result<Vec<u8>, String> {
    s.write_all(request).await.map_err(|e| format!("write error: {e}"))?;
    s.flush().await.map_err(|e| format!("write error: {e}"))?;
    let mut size = [0u8; 4];
    s.read_exact(&mut size).await.map_err(|e| format!("read error: {e}"))?;
    // The size prefix alone: a frame of `needed` more bytes (none for an empty frame).
    let size = match crate::codec::frame::split_frame(&size, max_frame) {
        Ok(crate::codec::frame::FrameStatus::Incomplete { needed }) => needed,
        Ok(crate::codec::frame::FrameStatus::Complete { .. }) => 0,
        Err(e) => return Err(format!("bad response size: {e}")),
    };
    let mut frame = vec![0u8; size];
    s.read_exact(&mut frame).await.map_err(|e| format!("read error: {e}"))?;
    Ok(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_of_addresses() {
        assert_eq!(host_of("broker-1.kafka:9093"), "broker-1.kafka");
        assert_eq!(host_of("127.0.0.1:9093"), "127.0.0.1");
        assert_eq!(host_of("[::1]:9093"), "::1");
    }

    #[test]
    fn learned_addresses() {
        let sni = Sni {
            pattern: "b{id}.example".into(),
            names: BrokerNames::new("b{id}.example", "example").unwrap(),
            port: 9093,
            brokers: Mutex::new(HashMap::new()),
        };
        sni.learn(1, "10.0.0.1", 9092);
        sni.learn(2, "::1", 9092);
        assert_eq!(sni.broker(1).as_deref(), Some("10.0.0.1:9092"));
        assert_eq!(sni.broker(2).as_deref(), Some("[::1]:9092"));
        assert_eq!(sni.broker(3), None);
        sni.learn(1, "10.0.0.9", 9092);
        assert_eq!(sni.broker(1).as_deref(), Some("10.0.0.9:9092"));
    }

    #[test]
    fn handshake_failures_classified_and_rendered() {
        let eof = std::io::Error::new(ErrorKind::UnexpectedEof, "eof");
        assert_eq!(Failure::of(&eof, Failure::BadHello), Failure::Closed);
        let cert = std::io::Error::new(ErrorKind::InvalidData, rustls::Error::NoCertificatesPresented);
        assert_eq!(Failure::of(&cert, Failure::Other), Failure::Certificate);
        let other = std::io::Error::new(ErrorKind::InvalidData, rustls::Error::HandshakeNotComplete);
        assert_eq!(Failure::of(&other, Failure::BadHello), Failure::BadHello);
        let f = Failures::default();
        f.count(Failure::Plaintext);
        f.count(Failure::Certificate);
        f.count(Failure::Certificate);
        let mut text = String::new();
        f.render_into(&mut text, "ns");
        assert!(text.contains("# TYPE ns_tls_handshake_failures_total counter\n"), "{text}");
        assert!(text.contains("ns_tls_handshake_failures_total{reason=\"plaintext\"} 1\n"), "{text}");
        assert!(text.contains("ns_tls_handshake_failures_total{reason=\"certificate\"} 2\n"), "{text}");
        assert!(text.contains("ns_tls_handshake_failures_total{reason=\"timeout\"} 0\n"), "{text}");
        assert_eq!(text.lines().count(), 2 + Failure::ALL.len());
    }
}
