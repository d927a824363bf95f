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

mod config;
mod failures;

pub use config::{ServerTls, TlsError, UpstreamTls};
pub(super) use failures::{Failure, Failures};

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
