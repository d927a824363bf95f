//! TLS through `kwire proxy`, with certificates made here (rcgen): a CA,
//! a server certificate for 127.0.0.1, localhost and the SNI names, a client certificate,
//! an expired one, one of another CA and one for another name.
//!
//! - Termination: kafka-python, confluent-kafka (librdkafka) and the Java client produce
//!   and consume through a TLS proxy in front of a real Kafka broker (port per broker).
//! - Origination: the proxy reaches the broker's SSL listener, which requires a client
//!   certificate (mutual TLS); a client runs through it, and through a proxy doing TLS on
//!   both sides.
//! - SNI routing: two proxies with the same flags, one port each for the whole cluster,
//!   rewrite broker addresses to the same names; a proxy that has seen no response routes
//!   a broker's name by asking the cluster; kafka-python follows the names.
//! - Tenants by SASL principal: kafka-python, confluent-kafka and the Java client as two
//!   tenants at once with the same names, transactions included (tests/proxy/tenant_txn.py,
//!   tests/proxy/TenantClient.java); the broker holds the prefixed names. The Java
//!   AdminClient's configs, ACLs and client quotas of each tenant's own against the broker's
//!   `StandardAuthorizer` (tests/proxy/TenantAdmin.java), and a Kafka Streams application
//!   (exactly-once, repartition and changelog topics) in both tenants
//!   (tests/proxy/TenantStreams.java).
//! - Bad input, each closing only its own connection with a log line while a good
//!   connection goes on: plaintext on a TLS port, a garbage or truncated handshake, a
//!   handshake that stalls, unknown or missing server names, client certificates that are
//!   expired, of another CA or missing; brokers whose certificate is expired, of another
//!   CA or for another name.
//!
//! One Kafka broker per test binary (tests/kafka/broker.sh with KWIRE_KAFKA_PROPS for its
//! SSL listener); the clients come from tests/proxy/setup.sh, as for tests/proxy.rs.
#![cfg(feature = "cli")]

mod common;

use common::{process, proxy as proxy_harness, root};

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use kwire::ApiKey;
use kwire::messages::{ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, ResponseBodyView};
use process::run;
use proxy_harness::Proxy;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::Value;

const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);
const BROKER_TIMEOUT: Duration = Duration::from_secs(600);
/// The SNI names: `broker-{id}.kwire.test`, and the bootstrap name.
const PATTERN: &str = "broker-{id}.kwire.test";
const BOOTSTRAP: &str = "bootstrap.kwire.test";

// ---- certificates ----

/// The certificate files of this test process, made once.
struct Certs {
    dir: PathBuf,
}

impl Certs {
    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }
}

fn server_names() -> Vec<String> {
    ["localhost", "127.0.0.1", BOOTSTRAP, "broker-1.kwire.test", "broker-7.kwire.test"]
        .map(String::from)
        .to_vec()
}

fn ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages =
        vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

/// A leaf certificate and its key (PKCS#8 PEM), for servers and clients alike.
fn leaf(names: Vec<String>, issuer: &Issuer<'_, KeyPair>, expired: bool) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(names).unwrap();
    params.distinguished_name.push(DnType::CommonName, "kwire test");
    params.extended_key_usages =
        vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    if expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    (params.signed_by(&key, issuer).unwrap().pem(), key.serialize_pem())
}

fn certs() -> &'static Certs {
    static CERTS: OnceLock<Certs> = OnceLock::new();
    CERTS.get_or_init(|| {
        let dir = root().join(format!("target/tls-test/{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (ca_pem, issuer) = ca("kwire test CA");
        let (other_pem, other) = ca("another CA");
        let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
        write("ca.pem", &ca_pem);
        write("other-ca.pem", &other_pem);
        for (name, (cert, key)) in [
            ("server", leaf(server_names(), &issuer, false)),
            ("client", leaf(vec!["kwire-test-client".into()], &issuer, false)),
            ("expired", leaf(server_names(), &issuer, true)),
            ("wrong-ca", leaf(server_names(), &other, false)),
            ("wrong-name", leaf(vec!["other.example".into()], &issuer, false)),
        ] {
            write(&format!("{name}.pem"), &cert);
            write(&format!("{name}.key"), &key);
            if name == "server" {
                // Kafka's PEM key store: the key, then the chain.
                write("broker.pem", &format!("{key}{cert}"));
            }
        }
        Certs { dir }
    })
}

fn chain(file: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(file).unwrap().map(Result::unwrap).collect()
}

/// rustls over *ring*, as kwire's TLS endpoints use it (see `src/apps/tls_provider.rs`).
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    #[allow(deprecated)]
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client configuration trusting the test CA, with a client certificate (`NAME.pem`,
/// `NAME.key`) if asked.
fn client_config(cert: Option<&str>) -> Arc<rustls::ClientConfig> {
    let c = certs();
    let mut roots = rustls::RootCertStore::empty();
    for ca in chain(&c.path("ca.pem")) {
        roots.add(ca).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    Arc::new(match cert {
        Some(name) => builder
            .with_client_auth_cert(
                chain(&c.path(&format!("{name}.pem"))),
                PrivateKeyDer::from_pem_file(c.path(&format!("{name}.key"))).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    })
}

fn server_config(name: &str) -> Arc<rustls::ServerConfig> {
    let c = certs();
    Arc::new(
        rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                chain(&c.path(&format!("{name}.pem"))),
                PrivateKeyDer::from_pem_file(c.path(&format!("{name}.key"))).unwrap(),
            )
            .unwrap(),
    )
}

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// A TLS connection to `addr` asking for `name` (an IP address sends no SNI).
fn tls(addr: &str, name: &str, config: Arc<rustls::ClientConfig>) -> std::io::Result<Tls> {
    let mut sock = TcpStream::connect(addr)?;
    sock.set_read_timeout(Some(Duration::from_secs(15)))?;
    let name = ServerName::try_from(name.to_string()).unwrap();
    let mut conn = rustls::ClientConnection::new(config, name).map_err(std::io::Error::other)?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock)?;
    }
    Ok(rustls::StreamOwned::new(conn, sock))
}

// ---- Kafka frames ----

fn read_frame(s: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size)?;
    let size = i32::from_be_bytes(size);
    assert!((0..1 << 24).contains(&size), "frame size {size}");
    let mut frame = vec![0u8; size as usize];
    s.read_exact(&mut frame)?;
    Ok(frame)
}

fn api_versions_frame(correlation_id: i32) -> Vec<u8> {
    let mut buf = vec![0u8; 128];
    let n = kwire::dispatch::encode_request(
        &ApiVersionsRequest::default(),
        2,
        correlation_id,
        Some("tls-test"),
        &mut buf,
    )
    .unwrap();
    buf.truncate(n);
    buf
}

/// An ApiVersions round trip (v2); the broker's answer must list APIs without error.
fn api_versions<S: Read + Write>(s: &mut S, correlation_id: i32) -> std::io::Result<()> {
    s.write_all(&api_versions_frame(correlation_id))?;
    s.flush()?;
    let frame = read_frame(s)?;
    let response = kwire::dispatch::parse_response(&frame, ApiKey::ApiVersions, 2).unwrap();
    assert_eq!(response.header.correlation_id(), correlation_id);
    let ResponseBodyView::ApiVersions(v) = response.body else { panic!("not ApiVersions") };
    assert_eq!(v.error_code(), 0);
    assert!(!v.api_keys().is_empty());
    Ok(())
}

/// The brokers of a Metadata (v12) answer, as `(node id, host, port)`.
fn metadata<S: Read + Write>(s: &mut S) -> Vec<(i32, String, i32)> {
    let mut buf = vec![0u8; 128];
    let n = kwire::dispatch::encode_request(&MetadataRequest::default(), 12, 7, Some("tls-test"), &mut buf)
        .unwrap();
    s.write_all(&buf[..n]).unwrap();
    s.flush().unwrap();
    let frame = read_frame(s).unwrap();
    let response = kwire::dispatch::parse_response(&frame, ApiKey::Metadata, 12).unwrap();
    let ResponseBodyView::Metadata(v) = response.body else { panic!("not Metadata") };
    v.brokers().iter().map(|b| (b.node_id(), b.host().to_string(), b.port())).collect()
}

/// Whether the peer closes `s` (end of stream or reset) within `within`; bytes it sends
/// first (a TLS alert) are read and dropped.
fn closed(s: &mut impl Read, within: Duration) -> bool {
    let start = Instant::now();
    let mut buf = [0u8; 512];
    while start.elapsed() < within {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

// ---- processes ----

/// `kwire proxy --listen 127.0.0.1:0 ARGS` (text log).
fn start_proxy(args: &[&str]) -> Proxy {
    Proxy::start(&[&["--listen", "127.0.0.1:0"], args].concat())
}

/// `kwire serve` (kwire's in-memory broker), for the tests that need a broker that answers
/// but not a real one; killed on drop.
struct Serve(Child, String);

impl Serve {
    fn start() -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kwire"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kwire serve");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        let addr = first
            .strip_prefix("kwire serve: listening on ")
            .and_then(|r| r.split(',').next())
            .unwrap_or_else(|| panic!("kwire serve: {first:?}"))
            .to_string();
        thread::spawn(move || for _ in stdout.lines() {});
        Serve(child, addr)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Installs the clients once per test process (tests/proxy/setup.sh).
fn setup() {
    common::clients::setup(|| true);
}

/// The Kafka broker of this test process: `(PLAINTEXT address, SSL address)`. The SSL
/// listener requires a client certificate of the test CA.
fn broker() -> &'static (String, String) {
    static ADDRS: OnceLock<(String, String)> = OnceLock::new();
    ADDRS.get_or_init(|| {
        let c = certs();
        let props = c.dir.join("broker.properties");
        std::fs::write(
            &props,
            format!(
                "listeners=PLAINTEXT://127.0.0.1:@PORT@,SSL://127.0.0.1:@PORT2@,SASL_SSL://127.0.0.1:@PORT3@,CONTROLLER://127.0.0.1:@CPORT@\n\
                 advertised.listeners=PLAINTEXT://127.0.0.1:@PORT@,SSL://127.0.0.1:@PORT2@,SASL_SSL://127.0.0.1:@PORT3@\n\
                 listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL\n\
                 ssl.keystore.type=PEM\nssl.keystore.location={}\n\
                 ssl.truststore.type=PEM\nssl.truststore.location={}\n\
                 ssl.client.auth=required\n\
                 sasl.enabled.mechanisms=PLAIN\n\
                 authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
                 allow.everyone.if.no.acl.found=true\n\
                 listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_{SASL_USER}=\"{}\" user_{SECOND_USER}=\"{}\";\n",
                c.path("broker.pem"),
                c.path("ca.pem"),
                sasl_password(),
                sasl_password()
            ),
        )
        .unwrap();
        let env = [("KWIRE_KAFKA_PROPS", props.as_os_str()), ("KWIRE_KAFKA_HEAP", OsStr::new("512m"))];
        let (dir, out) = proxy_harness::kafka("start", "tls-test", &["{pid}"], &env, BROKER_TIMEOUT);
        (out.stdout.trim().to_string(), listener(&dir, "SSL"))
    })
}

/// The address of the broker's `PROTOCOL://` listener, from its server.properties in `dir`.
fn listener(dir: &Path, protocol: &str) -> String {
    let config = std::fs::read_to_string(dir.join("server.properties")).unwrap();
    let listeners = config.lines().rfind(|l| l.starts_with("listeners=")).unwrap();
    listeners
        .split(',')
        .find_map(|l| l.strip_prefix(&format!("{protocol}://")))
        .unwrap_or_else(|| panic!("no {protocol} listener in {listeners}"))
        .to_string()
}

/// The SASL_SSL listener of [`broker`]'s broker (PLAIN, user [`SASL_USER`] with
/// [`sasl_password`]; a client certificate is required there too).
fn sasl_ssl() -> String {
    broker();
    listener(&root().join(format!("target/kafka/tls-test-{}", std::process::id())), "SASL_SSL")
}

const SASL_USER: &str = "alice";
/// A second user of the SASL_SSL listener (same password), another tenant's.
const SECOND_USER: &str = "bob";

/// The SASL user's password: new in each run, so that finding it anywhere means it leaked.
fn sasl_password() -> &'static str {
    static PASSWORD: OnceLock<String> = OnceLock::new();
    PASSWORD.get_or_init(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        format!("tls-sasl-secret-{}-{t}", std::process::id())
    })
}

/// A name no other run uses, for topics and groups.
fn prefix(what: &str) -> String {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
    format!("tls-{what}-{}-{t}", std::process::id())
}

/// Runs a real client (`kafka-python`, `confluent-kafka`, `java`) against `bootstrap` and
/// checks that it consumed what it produced, in order; with `hosts` as its /etc/hosts if
/// given ([`with_hosts`]).
fn client(lib: &str, bootstrap: &str, protocol: &str, hosts: Option<&Path>) -> Value {
    setup();
    let r = root();
    let ca = certs().path("ca.pem");
    let p = prefix(lib);
    let mut cmd = if lib == "java" {
        assert_eq!(protocol, "SSL");
        let mut c = Command::new("java");
        c.args(["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"])
            .arg(r.join("target/java-client/lib/*"))
            .arg(r.join("tests/proxy/TlsClient.java"))
            .args([bootstrap, &p, &ca]);
        c
    } else {
        let mut c = Command::new(r.join("target/interop/venv/bin/python"));
        c.arg(r.join("tests/proxy/tls_client.py")).args([lib, bootstrap, &p, protocol, &ca]);
        c
    };
    if let Some(hosts) = hosts {
        cmd = with_hosts(&cmd, hosts);
    }
    let start = Instant::now();
    let out = run(cmd, lib, CLIENT_TIMEOUT);
    assert!(out.ok, "{lib} through {bootstrap} failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let v: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{lib}: not JSON ({e}): {}\n{}", out.stdout, out.stderr));
    let produced = v["produced"].as_array().unwrap();
    assert_eq!(produced.len(), 5, "{lib}: {v}");
    assert_eq!(v["consumed"], v["produced"], "{lib}: consumed is not what was produced: {v}");
    assert_eq!(v["errors"].as_array().map(Vec::len), Some(0), "{lib}: {v}");
    eprintln!(
        "{} through {bootstrap} ({protocol}): 5 records produced and consumed in {:.1?}",
        v["client"],
        start.elapsed()
    );
    v
}

// ---- the tests ----

/// TLS termination in port-per-broker mode: three real clients over TLS, checking the
/// proxy's certificate against the test CA and the address (127.0.0.1) they connect to.
#[test]
fn termination_real_clients() {
    let (plain, _) = broker();
    let c = certs();
    let mut proxy = start_proxy(&[
        "--upstream",
        plain,
        "--tls-cert",
        &c.path("server.pem"),
        "--tls-key",
        &c.path("server.key"),
    ]);
    proxy.wait_for(&["TLS from clients"]);
    for lib in ["kafka-python", "confluent-kafka", "java"] {
        client(lib, &proxy.addr, "SSL", None);
    }
    // Every connection of theirs came over TLS (the one broker is the bootstrap address, so
    // it is served on the --listen port; a broker of its own would get a TLS listener too).
    let tls_connections = proxy.count("(TLS, server name");
    assert!(tls_connections >= 6, "TLS connections logged: {tls_connections}\n{}", proxy.log());
    assert_eq!(proxy.count("connected, forwarding to"), tls_connections, "{}", proxy.log());
    assert_eq!(proxy.count("closing this connection"), 0, "{}", proxy.log());
    assert!(proxy.alive());
}

/// TLS origination: the broker's SSL listener requires a client certificate. kafka-python
/// in plaintext through a proxy that originates TLS, confluent-kafka through one that does
/// TLS on both sides; without a client certificate the broker refuses the proxy, and the
/// proxy closes that client's connection with a log line.
#[test]
fn origination_to_ssl_broker() {
    let (_, ssl) = broker();
    let c = certs();
    let (ca, cert, key) = (c.path("ca.pem"), c.path("client.pem"), c.path("client.key"));
    let upstream = ["--upstream", ssl, "--upstream-tls", "--upstream-ca", &ca];
    let mtls = ["--upstream-cert", &cert, "--upstream-key", &key];
    let mut plain_in = start_proxy(&[&upstream[..], &mtls[..]].concat());
    plain_in.wait_for(&["TLS to brokers"]);
    // The broker's addresses come back rewritten to the proxy's listeners.
    let mut s = TcpStream::connect(&plain_in.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    api_versions(&mut s, 1).unwrap();
    let brokers = metadata(&mut s);
    assert_eq!(brokers.len(), 1, "{brokers:?}");
    assert_eq!(brokers[0].1, "127.0.0.1");
    assert_ne!(brokers[0].2.to_string(), ssl.rsplit_once(':').unwrap().1, "not rewritten: {brokers:?}");
    plain_in.wait_for(&["connected, forwarding to", "(TLS to the broker)"]);
    client("kafka-python", &plain_in.addr, "PLAINTEXT", None);

    let tls_in =
        ["--tls-cert".to_string(), c.path("server.pem"), "--tls-key".to_string(), c.path("server.key")];
    let args: Vec<&str> =
        upstream.iter().chain(&mtls).copied().chain(tls_in.iter().map(String::as_str)).collect();
    let both = start_proxy(&args);
    client("confluent-kafka", &both.addr, "SSL", None);
    both.wait_for(&["(TLS, server name", "(TLS to the broker)"]);

    // No client certificate: Kafka refuses the proxy's handshake; that client is closed.
    let no_cert = start_proxy(&upstream);
    let mut s = TcpStream::connect(&no_cert.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let answered = api_versions(&mut s, 1).is_ok();
    assert!(!answered, "the broker answered a proxy without a client certificate");
    let line = no_cert.wait_for(&["closed", "conn=1"]);
    eprintln!("without a client certificate: {line}");
    assert!(plain_in.alive());
    let mut s = TcpStream::connect(&plain_in.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    api_versions(&mut s, 2).unwrap();
}

/// SASL_SSL: kafka-python authenticates with SASL PLAIN through a proxy that takes it in
/// plaintext and originates TLS (with a client certificate) to the broker's SASL_SSL
/// listener; it produces and reads back records. The proxy's log names the mechanism and
/// the user, and holds the password in no form (text, hex, base64), nor does its stderr.
#[test]
fn sasl_ssl_through_tls_origination_hides_the_password() {
    let addr = sasl_ssl();
    let c = certs();
    let (ca, cert, key) = (c.path("ca.pem"), c.path("client.pem"), c.path("client.key"));
    let proxy = start_proxy(&[
        "--upstream",
        &addr,
        "--upstream-tls",
        "--upstream-ca",
        &ca,
        "--upstream-cert",
        &cert,
        "--upstream-key",
        &key,
    ]);
    proxy.wait_for(&["TLS to brokers"]);
    setup();
    let r = root();
    let mut cmd = Command::new(r.join("target/interop/venv/bin/python"));
    cmd.arg(r.join("tests/proxy/sasl_client.py"))
        .args(["kafka-python", &proxy.addr, "PLAIN", SASL_USER, &prefix("sasl-ssl")])
        .env("KWIRE_SASL_PASSWORD", sasl_password());
    let out = run(cmd, "kafka-python SASL_SSL", CLIENT_TIMEOUT);
    assert!(out.ok, "kafka-python over SASL_SSL failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let line = out.stdout.lines().rev().find(|l| l.starts_with('{')).expect("JSON");
    let v: Value = serde_json::from_str(line).unwrap();
    assert!(v["produced"].as_array().is_some_and(|p| !p.is_empty()), "{v}");
    assert_eq!(v["consumed"], v["produced"], "records read back: {v}");
    let user_line = proxy.wait_for(&["SASL PLAIN user \"alice\""]);
    let log = proxy.log();
    assert!(log.contains("(TLS to the broker)"), "{log}");
    let stderr = proxy.stderr();
    let pw = sasl_password();
    let hex: String = pw.bytes().map(|b| format!("{b:02x}")).collect();
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(pw);
    // The PLAIN token is "\0alice\0PASSWORD": its base64 as a whole, too.
    let token = base64::engine::general_purpose::STANDARD.encode(format!("\0{SASL_USER}\0{pw}"));
    for (form, needle) in
        [("text", pw), ("hex", hex.as_str()), ("base64", b64.as_str()), ("token", token.as_str())]
    {
        assert!(!log.contains(needle), "the password ({form}) is in the proxy's log:\n{log}");
        assert!(!stderr.contains(needle), "the password ({form}) is in the proxy's stderr");
    }
    eprintln!("SASL_SSL through the proxy: {} records; {user_line}", v["produced"].as_array().unwrap().len());
}

/// Tenants by SASL principal (`--tenant principal:USER=PREFIX`): two users run kafka-python
/// at once through one proxy against the real broker, with the same topic and group names.
/// Each consumes only its own records and lists only its own topic and group; the broker
/// holds both, prefixed.
#[test]
fn tenants_by_principal_share_names_and_see_only_their_own() {
    let tag = prefix("tenants");
    let proxy = tenant_proxy();
    setup();
    let script = r#"
import json, os, sys
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
bootstrap, user, tag = sys.argv[1], sys.argv[2], sys.argv[3]
auth = dict(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
            sasl_plain_username=user, sasl_plain_password=os.environ["KWIRE_SASL_PASSWORD"])
topic, group = "orders-" + tag, "group-" + tag
admin = KafkaAdminClient(**auth)
admin.create_topics([NewTopic(topic, 1, 1)])
p = KafkaProducer(acks="all", retries=20, **auth)
values = [f"{user}-{i}" for i in range(3)]
for v in values:
    p.send(topic, v.encode()).get(timeout=60)
p.close()
c = KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", consumer_timeout_ms=20000, **auth)
got = []
for m in c:
    got.append(m.value.decode())
    if len(got) == len(values):
        break
c.commit()
c.close()
topics = sorted(t for t in admin.list_topics() if tag in t)
names = [g["group_id"] if isinstance(g, dict) else g[0] for g in admin.list_groups()]
groups = sorted(g for g in names if tag in g)
admin.close()
print(json.dumps({"produced": values, "consumed": got, "topics": topics, "groups": groups}))
"#;
    let r = root();
    let spawn = |user: &str| {
        let mut cmd = Command::new(r.join("target/interop/venv/bin/python"));
        cmd.args(["-c", script, &proxy.addr, user, &tag]).env("KWIRE_SASL_PASSWORD", sasl_password());
        thread::spawn(move || run(cmd, "kafka-python as a tenant", CLIENT_TIMEOUT))
    };
    let (a, b) = (spawn(SASL_USER), spawn(SECOND_USER));
    for (user, out) in [(SASL_USER, a.join().unwrap()), (SECOND_USER, b.join().unwrap())] {
        assert!(out.ok, "{user}: kafka-python failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
        let v: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or("")).unwrap();
        assert_eq!(v["consumed"], v["produced"], "{user} read what it wrote, and only that: {v}");
        assert_eq!(v["topics"], serde_json::json!([format!("orders-{tag}")]), "{user}: {v}");
        assert_eq!(v["groups"], serde_json::json!([format!("group-{tag}")]), "{user}: {v}");
        eprintln!("tenant {user}: {v}");
    }
    // The broker holds both tenants' topics, under their prefixes (read past the proxy).
    let list = r#"
import json, sys
from kafka.admin import KafkaAdminClient
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1])
print(json.dumps(sorted(t for t in admin.list_topics() if sys.argv[2] in t)))
"#;
    let (plain, _) = broker();
    let mut cmd = Command::new(r.join("target/interop/venv/bin/python"));
    cmd.args(["-c", list, plain, &tag]);
    let out = run(cmd, "kafka-python on the broker", CLIENT_TIMEOUT);
    assert!(out.ok, "{}", out.stderr);
    let held: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or("")).unwrap();
    assert_eq!(held, serde_json::json!([format!("tenant-a.orders-{tag}"), format!("tenant-b.orders-{tag}")]));
}

/// A proxy with tenants by principal: [`SASL_USER`] is `tenant-a.`, [`SECOND_USER`]
/// `tenant-b.`; plaintext SASL from clients, TLS (with a client certificate) to the broker's
/// SASL_SSL listener. The tenants come from a file (`--tenants`).
fn tenant_proxy() -> Proxy {
    let addr = sasl_ssl();
    let c = certs();
    let file = c.dir.join("tenants");
    std::fs::write(
        &file,
        format!("# two tenants by principal\nprincipal:{SASL_USER}=tenant-a.\n\n  principal:{SECOND_USER}=tenant-b.\n"),
    )
    .unwrap();
    let tenants = file.to_str().unwrap().to_string();
    let (ca, cert, key) = (c.path("ca.pem"), c.path("client.pem"), c.path("client.key"));
    let proxy = start_proxy(&[
        "--upstream",
        &addr,
        "--upstream-tls",
        "--upstream-ca",
        &ca,
        "--upstream-cert",
        &cert,
        "--upstream-key",
        &key,
        "--tenants",
        &tenants,
    ]);
    proxy.wait_for(&["TLS to brokers"]);
    proxy
}

/// One run of tests/proxy/TenantAdmin.java (the Java AdminClient): a tenant's `phase`
/// (`grant`, `revoke`) through the proxy at `bootstrap` as `user`, or (`broker`) what the
/// broker holds, asked on its PLAINTEXT listener; its JSON.
fn tenant_admin(bootstrap: &str, user: &str, other: &str, tag: &str, phase: &str) -> Value {
    let r = root();
    let mut cmd = Command::new("java");
    cmd.args(["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"])
        .arg(r.join("target/java-client/lib/*"))
        .arg(r.join("tests/proxy/TenantAdmin.java"))
        .args([bootstrap, user, other, tag, phase])
        .env("KWIRE_SASL_PASSWORD", sasl_password());
    let out = run(cmd, "the Java AdminClient", CLIENT_TIMEOUT);
    assert!(out.ok, "TenantAdmin {phase} as {user} failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    serde_json::from_str(out.stdout.lines().last().unwrap_or("")).unwrap()
}

/// Configs, ACLs and client quotas of a tenant's own, through `kwire proxy --tenants` against
/// the real broker's `StandardAuthorizer` (`allow.everyone.if.no.acl.found`, so that a
/// resource is open until an ACL names it), with the Java AdminClient as two SASL users who
/// are no super users, at once, with the same names. Each sets and reads its own topic's
/// retention.ms and cannot reach the other's by its broker-side name; grants itself READ on
/// its topic and groups, and lists only those two bindings; sets its own user's quota,
/// is refused the other user's and a client id's, and lists only its own. The ACLs really
/// hold on the broker: its topics vanish from the listing of a principal they do not name.
/// Past the proxy the broker holds every binding under its tenant's prefix. Then each
/// deletes every ACL it can (`AclBindingFilter.ANY`): exactly its own go, and its quota.
#[test]
fn tenants_have_configs_acls_and_quotas_of_their_own() {
    let tag = prefix("admin");
    let proxy = tenant_proxy();
    setup();
    let (plain, _) = broker();
    let users =
        [(SASL_USER, SECOND_USER, "tenant-a.", "111000"), (SECOND_USER, SASL_USER, "tenant-b.", "222000")];
    let phase = |phase: &'static str| {
        let runs: Vec<_> = users
            .iter()
            .map(|&(user, other, _, _)| {
                let (addr, tag) = (proxy.addr.clone(), tag.clone());
                thread::spawn(move || tenant_admin(&addr, user, other, &tag, phase))
            })
            .collect();
        runs.into_iter().map(|t| t.join().unwrap()).collect::<Vec<Value>>()
    };
    let binding = |ty: &str, pattern: &str, name: &str, user: &str| {
        format!("{ty}:{pattern}:{name}:User:{user}:READ:ALLOW")
    };
    let own = |user: &str, prefix: &str| {
        // As the AdminClient lists them: sorted.
        vec![
            binding("GROUP", "PREFIXED", &format!("{prefix}group-{tag}"), user),
            binding("TOPIC", "LITERAL", &format!("{prefix}orders-{tag}"), user),
        ]
    };
    let quota = |user: &str| format!("{{user={user}}}={{consumer_byte_rate=1.0E9}}");
    for (v, &(user, _, _, retention)) in phase("grant").iter().zip(&users) {
        eprintln!("{user} grant: {v}");
        assert_eq!(v["retention"], retention, "{user}: {v}");
        assert_eq!(v["theirs"], "UnknownTopicOrPartitionException", "{user}: {v}");
        assert_eq!(v["acls"], serde_json::json!(own(user, "")), "{user} sees its own bindings only: {v}");
        assert_eq!(v["quota_own"], "ok", "{user}: {v}");
        assert_eq!(v["quota_other_user"], "ClusterAuthorizationException", "{user}: {v}");
        assert_eq!(v["quota_client_id"], "ClusterAuthorizationException", "{user}: {v}");
        assert_eq!(v["quotas"], serde_json::json!([quota(user)]), "{user} sees its own quota only: {v}");
    }
    // Past the proxy: every binding under its tenant's prefix, both quotas; the topics are
    // now hidden from a principal their ACLs do not name (ANONYMOUS, on PLAINTEXT).
    let held = tenant_admin(plain, "-", "-", &tag, "broker");
    eprintln!("broker after grants: {held}");
    let mut all: Vec<String> = users.iter().flat_map(|&(user, _, prefix, _)| own(user, prefix)).collect();
    all.sort();
    let mine: Vec<&Value> =
        held["acls"].as_array().unwrap().iter().filter(|a| a.as_str().unwrap().contains(&tag)).collect();
    assert_eq!(mine, all.iter().map(|s| s.as_str()).collect::<Vec<_>>(), "{held}");
    assert_eq!(held["topics"], serde_json::json!([]), "the ACLs deny on the broker: {held}");
    let quotas: Vec<&str> = held["quotas"].as_array().unwrap().iter().map(|q| q.as_str().unwrap()).collect();
    assert!(
        quotas.contains(&quota(SASL_USER).as_str()) && quotas.contains(&quota(SECOND_USER).as_str()),
        "{held}"
    );

    for (v, &(user, _, _, _)) in phase("revoke").iter().zip(&users) {
        eprintln!("{user} revoke: {v}");
        assert_eq!(v["deleted"], serde_json::json!(own(user, "")), "{user} deleted exactly its own: {v}");
        assert_eq!(v["acls"], serde_json::json!([]), "{user}: {v}");
        assert_eq!(v["quotas"], serde_json::json!([]), "{user}: {v}");
    }
    let held = tenant_admin(plain, "-", "-", &tag, "broker");
    eprintln!("broker after revokes: {held}");
    assert!(!held["acls"].as_array().unwrap().iter().any(|a| a.as_str().unwrap().contains(&tag)), "{held}");
    assert_eq!(
        held["topics"],
        serde_json::json!([format!("tenant-a.orders-{tag}"), format!("tenant-b.orders-{tag}")]),
        "open again without the ACLs: {held}"
    );
}

/// One tenant's run of tests/proxy/tenant_txn.py (`kafka-python`, `confluent-kafka`) or
/// tests/proxy/TenantClient.java (`java`) through the proxy at `bootstrap`, as `user`.
fn tenant_client(lib: &str, bootstrap: &str, user: &str, tag: &str) -> Command {
    let r = root();
    let mut cmd = if lib == "java" {
        let mut c = Command::new("java");
        c.args(["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"])
            .arg(r.join("target/java-client/lib/*"))
            .arg(r.join("tests/proxy/TenantClient.java"))
            .args([bootstrap, user, tag]);
        c
    } else {
        let mut c = Command::new(r.join("target/interop/venv/bin/python"));
        c.arg(r.join("tests/proxy/tenant_txn.py")).args([lib, bootstrap, user, tag]);
        c
    };
    cmd.env("KWIRE_SASL_PASSWORD", sasl_password());
    cmd
}

/// What the broker holds whose name has `tag`, asked past the proxy on its PLAINTEXT
/// listener with kafka-python's admin client: topics, groups, transactions (ListTransactions)
/// with their states (DescribeTransactions), and the committed offsets of the
/// `tenant-?.offsets-TAG` groups.
fn held_by_broker(tag: &str) -> Value {
    let script = r#"
import json, sys
from kafka.admin import KafkaAdminClient
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1])
tag = sys.argv[2]
topics = sorted(t for t in admin.list_topics() if tag in t)
names = [g["group_id"] if isinstance(g, dict) else g[0] for g in admin.list_groups()]
groups = sorted(g for g in names if tag in g)
txns = sorted({t.transactional_id for ts in admin.list_transactions().values() for t in ts if tag in t.transactional_id})
states = {i: str(d.state) for i, d in admin.describe_transactions(txns).items()}
offsets = {}
for g in groups:
    if ".offsets-" in g:
        offsets[g] = {tp.topic: om.offset for tp, om in admin.list_group_offsets(g)[g].items()}
admin.close()
print(json.dumps({"topics": topics, "groups": groups, "transactions": txns, "states": states, "offsets": offsets}))
"#;
    let (plain, _) = broker();
    let mut cmd = Command::new(root().join("target/interop/venv/bin/python"));
    cmd.args(["-c", script, plain, tag]);
    let out = run(cmd, "kafka-python on the broker", CLIENT_TIMEOUT);
    assert!(out.ok, "kafka-python on the broker failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    serde_json::from_str(out.stdout.lines().last().unwrap_or("")).unwrap()
}

/// Tenants with transactions, for each real client (confluent-kafka, the Java client,
/// kafka-python): two users run it at once through one tenant proxy with the same topic,
/// group and transactional-id names. Each commits a transaction (with an offset of a group,
/// sent to the transaction), aborts one and commits another; its read_committed consumer
/// gets exactly its own committed values, in order. Listing through the proxy shows only its
/// own topic, groups, committed offset and (Java) transaction, in its state. Past the proxy,
/// the broker holds each name under both prefixes and no name unprefixed, the transactional
/// ids included (ListTransactions, DescribeTransactions).
#[test]
fn tenants_run_transactions_with_real_clients() {
    let proxy = tenant_proxy();
    setup();
    for lib in ["confluent-kafka", "java", "kafka-python"] {
        let tag = prefix(&format!("txn-{lib}"));
        let start = Instant::now();
        let runs: Vec<_> = [SASL_USER, SECOND_USER]
            .into_iter()
            .map(|user| {
                let cmd = tenant_client(lib, &proxy.addr, user, &tag);
                (user, thread::spawn(move || run(cmd, "a tenant's client", CLIENT_TIMEOUT)))
            })
            .collect();
        for (user, out) in runs {
            let out = out.join().unwrap();
            assert!(out.ok, "{lib} as {user} failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
            let v: Value =
                serde_json::from_str(out.stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| {
                    panic!("{lib} as {user}: not JSON ({e}): {}\n{}", out.stdout, out.stderr)
                });
            let values = |what: &'static str, n: usize| (0..n).map(move |i| format!("{user}-{what}-{i}"));
            let committed: Vec<String> = values("commit", 3).chain(values("commit2", 2)).collect();
            assert_eq!(v["committed"], serde_json::json!(committed), "{lib} as {user}: {v}");
            assert_eq!(v["consumed"], v["committed"], "{lib} as {user} read its committed values, only: {v}");
            assert_eq!(v["topics"], serde_json::json!([format!("orders-{tag}")]), "{lib} as {user}: {v}");
            assert_eq!(
                v["groups"],
                serde_json::json!([format!("group-{tag}"), format!("offsets-{tag}")]),
                "{lib} as {user}: {v}"
            );
            assert_eq!(
                v["offsets"],
                serde_json::json!([3]),
                "{lib} as {user}: the transaction's offset: {v}"
            );
            if lib == "java" {
                assert_eq!(v["transactions"], serde_json::json!([format!("txn-{tag}")]), "{user}: {v}");
                assert_eq!(v["state"], "CompleteCommit", "{user}: {v}");
            }
            eprintln!("{lib} as {user} ({:.1?}): {v}", start.elapsed());
        }
        let held = held_by_broker(&tag);
        let both = |name: &str| serde_json::json!([format!("tenant-a.{name}"), format!("tenant-b.{name}")]);
        assert_eq!(held["topics"], both(&format!("orders-{tag}")), "{lib}: the broker holds {held}");
        let groups = [format!("group-{tag}"), format!("offsets-{tag}")];
        let mut expected: Vec<String> = ["tenant-a.", "tenant-b."]
            .iter()
            .flat_map(|p| groups.iter().map(move |g| format!("{p}{g}")))
            .collect();
        expected.sort();
        assert_eq!(held["groups"], serde_json::json!(expected), "{lib}: the broker holds {held}");
        assert_eq!(held["transactions"], both(&format!("txn-{tag}")), "{lib}: the broker holds {held}");
        for p in ["tenant-a.", "tenant-b."] {
            let id = format!("{p}txn-{tag}");
            let state = held["states"][&id].as_str().unwrap_or_default().to_string();
            assert!(state.contains("COMPLETE_COMMIT") || state.contains("CompleteCommit"), "{id}: {held}");
            let offsets = &held["offsets"][format!("{p}offsets-{tag}")];
            assert_eq!(offsets, &serde_json::json!({ format!("{p}orders-{tag}"): 3 }), "{lib}: {held}");
        }
        eprintln!("{lib}: the broker holds {held}");
    }
    assert_eq!(proxy.count("closing this connection"), 0, "{}", proxy.log());
}

/// One run of tests/proxy/TenantStreams.java (Kafka Streams): a tenant's word count
/// (`run`) through the proxy at `bootstrap` as `user`, or (`broker`) what the broker holds,
/// asked on its PLAINTEXT listener; its JSON.
fn tenant_streams(bootstrap: &str, user: &str, tag: &str, phase: &str) -> Value {
    let r = root();
    let mut cmd = Command::new("java");
    cmd.args(["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"])
        .arg(r.join("target/java-client/lib/*"))
        .arg(r.join("tests/proxy/TenantStreams.java"))
        .args([bootstrap, user, tag, phase])
        .env("KWIRE_SASL_PASSWORD", sasl_password());
    let out = run(cmd, "Kafka Streams", CLIENT_TIMEOUT);
    assert!(
        out.ok,
        "TenantStreams {phase} as {user} failed\nstdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    serde_json::from_str(out.stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("TenantStreams {phase} as {user}: not JSON ({e}): {}", out.stdout))
}

/// A Kafka Streams application in two tenants at once, with the same application id and
/// topic names, against the broker's `StandardAuthorizer`: exactly-once v2, a repartition
/// topic, a persistent state store and its changelog. Each tenant's output holds exactly the
/// counts of its own words, and each lists only its own topics and groups. Past the proxy,
/// every topic, group and transactional id of the run is under a tenant's prefix: the
/// internal topics and the application's producers' transactional ids too.
#[test]
fn tenants_run_kafka_streams() {
    let tag = prefix("streams");
    let proxy = tenant_proxy();
    setup();
    let (plain, _) = broker();
    let runs: Vec<_> = [SASL_USER, SECOND_USER]
        .into_iter()
        .map(|user| {
            let (addr, tag) = (proxy.addr.clone(), tag.clone());
            (user, thread::spawn(move || tenant_streams(&addr, user, &tag, "run")))
        })
        .collect();
    let app = format!("wordcount-{tag}");
    for (user, v) in runs {
        let v = v.join().unwrap();
        eprintln!("Kafka Streams as {user}: {v}");
        let expected: serde_json::Map<String, Value> =
            (0..5).map(|i| (format!("{user}-w{i}"), serde_json::json!(i + 1))).collect();
        assert_eq!(v["expected"], Value::Object(expected), "{user}: {v}");
        assert_eq!(v["counts"], v["expected"], "{user}'s output holds exactly its own counts: {v}");
        assert_eq!(v["state"], "RUNNING", "{user}: {v}");
        let topics: Vec<&str> = v["topics"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
        assert!(topics.contains(&format!("words-{tag}").as_str()), "{user}: {v}");
        assert!(topics.contains(&format!("counts-{tag}").as_str()), "{user}: {v}");
        for suffix in ["-repartition", "-changelog"] {
            assert!(
                topics.iter().any(|t| t.starts_with(&app) && t.ends_with(suffix)),
                "{user} sees the application's {suffix} topic under its own name: {v}"
            );
        }
        assert!(topics.iter().all(|t| !t.starts_with("tenant-")), "{user}: {v}");
        assert_eq!(v["groups"], serde_json::json!([format!("reader-{tag}"), app.clone()]), "{user}: {v}");
    }
    let held = tenant_streams(plain, "-", &tag, "broker");
    eprintln!("the broker holds {held}");
    for what in ["topics", "groups", "transactions"] {
        let names = held[what].as_array().unwrap();
        assert!(!names.is_empty(), "{what}: {held}");
        for p in ["tenant-a.", "tenant-b."] {
            assert!(names.iter().any(|n| n.as_str().unwrap().starts_with(p)), "{what} of {p}: {held}");
        }
        assert!(
            names.iter().all(|n| n.as_str().unwrap().starts_with("tenant-a.")
                || n.as_str().unwrap().starts_with("tenant-b.")),
            "every name of {what} is a tenant's: {held}"
        );
    }
    // Each tenant's half of the broker's topics mirrors the other's.
    let topics: Vec<&str> = held["topics"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let a: Vec<&str> = topics.iter().filter_map(|t| t.strip_prefix("tenant-a.")).collect();
    let b: Vec<&str> = topics.iter().filter_map(|t| t.strip_prefix("tenant-b.")).collect();
    assert_eq!(a, b, "{held}");
    assert_eq!(proxy.count("closing this connection"), 0, "{}", proxy.log());
}

/// SNI routing against the real broker: one port per proxy for the whole cluster, names
/// from the pattern, the same in two proxies that share nothing.
#[test]
fn sni_routing() {
    let (plain, _) = broker();
    let c = certs();
    let (cert, key) = (c.path("server.pem"), c.path("server.key"));
    let args = [
        "--upstream",
        plain,
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--sni-pattern",
        PATTERN,
        "--sni-bootstrap",
        BOOTSTRAP,
    ];
    let mut a = start_proxy(&args);
    let mut b = start_proxy(&args);
    a.wait_for(&["SNI routing: bootstrap bootstrap.kwire.test, brokers broker-{id}.kwire.test"]);
    let config = client_config(None);

    // Through the bootstrap name: the broker is named by the pattern, at the proxy's port.
    let mut good = tls(&a.addr, BOOTSTRAP, config.clone()).unwrap();
    api_versions(&mut good, 1).unwrap();
    let via_a = metadata(&mut good);
    assert_eq!(via_a, [(1, "broker-1.kwire.test".to_string(), i32::from(a.port()))]);
    a.wait_for(&["server name bootstrap.kwire.test", &format!("forwarding to {plain}")]);
    // Proxy b has seen no response: the broker's name is routed by asking the cluster.
    let mut direct = tls(&b.addr, "broker-1.kwire.test", config.clone()).unwrap();
    api_versions(&mut direct, 1).unwrap();
    let via_b = metadata(&mut direct);
    assert_eq!(via_b, [(1, "broker-1.kwire.test".to_string(), i32::from(b.port()))]);
    b.wait_for(&["server name broker-1.kwire.test", &format!("forwarding to {plain}")]);
    // The same names from both (nothing shared but the flags).
    assert_eq!(
        via_a.iter().map(|(id, h, _)| (*id, h.clone())).collect::<Vec<_>>(),
        via_b.iter().map(|(id, h, _)| (*id, h.clone())).collect::<Vec<_>>()
    );

    // Names that are no broker's, a broker the cluster does not have, and no name at all:
    // each closed with a log line; the good connection goes on.
    for (name, log) in [
        ("nope.kwire.test", "unknown server name \"nope.kwire.test\""),
        ("broker-01.kwire.test", "unknown server name \"broker-01.kwire.test\""),
        ("broker-7.kwire.test", "broker 7, which the cluster's metadata does not list"),
        ("127.0.0.1", "sent no server name (SNI)"),
    ] {
        let refused = match tls(&a.addr, name, config.clone()) {
            Err(_) => true,
            Ok(mut s) => api_versions(&mut s, 9).is_err(),
        };
        assert!(refused, "{name}: served");
        a.wait_for(&[log, "closing this connection"]);
        api_versions(&mut good, 2).unwrap();
    }

    // Real clients follow the names: librdkafka, the Java client and kafka-python each
    // resolve them by a hosts file of their own, through the one SNI port.
    let hosts = hosts_file();
    let bootstrap = format!("{BOOTSTRAP}:{}", a.port());
    let routed = |name: &str| {
        let needles = [&format!("(TLS, server name {name})"), &format!("connected, forwarding to {plain}")];
        a.lines().iter().filter(|l| needles.iter().all(|n| l.contains(n.as_str()))).count()
    };
    for (i, lib) in ["kafka-python", "confluent-kafka", "java"].into_iter().enumerate() {
        let before = (routed(BOOTSTRAP), routed("broker-1.kwire.test"));
        client(lib, &bootstrap, "SSL", Some(&hosts));
        thread::sleep(Duration::from_millis(200));
        let (by_bootstrap, by_broker) =
            (routed(BOOTSTRAP) - before.0, routed("broker-1.kwire.test") - before.1);
        assert!(by_bootstrap > 0, "{lib}: no connection by the bootstrap name\n{}", a.log());
        assert!(by_broker > 0, "{lib}: no connection routed by broker-1.kwire.test\n{}", a.log());
        eprintln!(
            "{lib} through the SNI port: {by_bootstrap} connections by {BOOTSTRAP}, {by_broker} by broker-1.kwire.test"
        );
        api_versions(&mut good, 3 + i as i32).unwrap();
    }
    assert_eq!(a.count("closing this connection"), 4, "{}", a.log());
    assert!(a.alive() && b.alive());
}

/// Runs `cmd` inside `unshare -m` (a mount namespace of its own; the machine's stays as
/// it is) with `hosts` bind-mounted over /etc/hosts: the way to make librdkafka and the
/// JVM resolve the SNI names to the proxy. Exits 97 with a message if the mount is refused.
fn with_hosts(cmd: &Command, hosts: &Path) -> Command {
    const SCRIPT: &str = r#"mount --bind "$1" /etc/hosts || { echo "kwire test: cannot bind-mount $1 over /etc/hosts (unshare -m needs root or CAP_SYS_ADMIN)" >&2; exit 97; }; shift; exec "$@""#;
    let mut c = Command::new("unshare");
    c.args(["--mount", "--propagation", "private", "sh", "-c", SCRIPT, "sh"])
        .arg(hosts)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        c.current_dir(dir);
    }
    c
}

/// A hosts file mapping the SNI names (bootstrap and broker 1) to 127.0.0.1, checked to
/// work through [`with_hosts`]: the test fails here, saying why, where a private
/// /etc/hosts cannot be had (it is never skipped).
fn hosts_file() -> PathBuf {
    let path = certs().dir.join("hosts");
    std::fs::write(&path, format!("127.0.0.1 localhost\n127.0.0.1 {BOOTSTRAP} broker-1.kwire.test\n"))
        .unwrap();
    let mut probe = Command::new("getent");
    probe.args(["hosts", "broker-1.kwire.test"]);
    let out = run(with_hosts(&probe, &path), "unshare -m getent hosts", Duration::from_secs(20));
    assert!(
        out.ok && out.stdout.starts_with("127.0.0.1"),
        "the SNI routing test needs a private /etc/hosts for its clients (unshare -m, then mount --bind; \
         root in a container with CAP_SYS_ADMIN), and could not get one: getent said {:?}, stderr:\n{}",
        out.stdout,
        out.stderr
    );
    path
}

/// One bad-input case: whether the proxy closed its connection.
type Case<'a> = Box<dyn FnOnce() -> bool + Send + 'a>;

/// Bad input from clients on a TLS port that requires client certificates: each closes
/// its own connection with a log line, while a good connection keeps being answered.
#[test]
fn bad_client_input() {
    let serve = Serve::start();
    let c = certs();
    let mut proxy = start_proxy(&[
        "--upstream",
        &serve.1,
        "--tls-cert",
        &c.path("server.pem"),
        "--tls-key",
        &c.path("server.key"),
        "--tls-client-ca",
        &c.path("ca.pem"),
        "--tls-handshake-timeout",
        "2",
        "--metrics",
        "127.0.0.1:0",
    ]);
    proxy.wait_for(&["TLS from clients, client certificates required"]);
    let metrics = proxy.metrics_addr();
    let mut good = tls(&proxy.addr, "localhost", client_config(Some("client"))).unwrap();
    api_versions(&mut good, 1).unwrap();
    // The good connection is used all along, from another thread.
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicUsize::new(0));
    let pinger = {
        let (stop, rounds) = (stop.clone(), rounds.clone());
        thread::spawn(move || {
            let mut id = 2;
            while !stop.load(Ordering::Relaxed) {
                api_versions(&mut good, id).expect("the good connection was answered");
                rounds.fetch_add(1, Ordering::Relaxed);
                id += 1;
                thread::sleep(Duration::from_millis(50));
            }
        })
    };
    // A real ClientHello, to cut short.
    let hello = {
        let mut conn =
            rustls::ClientConnection::new(client_config(None), ServerName::try_from("localhost").unwrap())
                .unwrap();
        let mut bytes = Vec::new();
        conn.write_tls(&mut bytes).unwrap();
        bytes
    };
    let raw = |bytes: &[u8], shut: bool| {
        let mut s = TcpStream::connect(&proxy.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        s.write_all(bytes).unwrap();
        if shut {
            s.shutdown(Shutdown::Write).unwrap();
        }
        s
    };
    let mut cases: Vec<(&str, &str, &str, Case<'_>)> = Vec::new();
    let plaintext = api_versions_frame(1);
    cases.push((
        "plaintext Kafka",
        "not a TLS handshake (first byte 0x00",
        "plaintext",
        Box::new(move || closed(&mut raw(&plaintext, false), Duration::from_secs(5))),
    ));
    let mut garbage = vec![0x16, 0x03, 0x01, 0x00, 0x20];
    garbage.extend((0..32u8).map(|i| i.wrapping_mul(37)));
    cases.push((
        "garbage handshake",
        "bad TLS ClientHello",
        "bad_hello",
        Box::new(move || closed(&mut raw(&garbage, false), Duration::from_secs(5))),
    ));
    let half = hello[..hello.len() / 2].to_vec();
    let cut = half.clone();
    cases.push((
        "truncated handshake, then the end",
        "the peer closed the connection during the handshake",
        "closed",
        Box::new(move || closed(&mut raw(&cut, true), Duration::from_secs(5))),
    ));
    cases.push((
        "truncated handshake, then silence",
        "did not finish within 2s",
        "timeout",
        Box::new(move || {
            let start = Instant::now();
            let shut = closed(&mut raw(&half, false), Duration::from_secs(6));
            shut && start.elapsed() >= Duration::from_millis(1500)
        }),
    ));
    for (what, name) in
        [("expired client certificate", "expired"), ("client certificate of another CA", "wrong-ca")]
    {
        let addr = proxy.addr.clone();
        let needle = if name == "expired" { "xpired" } else { "ssuer" };
        cases.push((
            what,
            needle,
            "certificate",
            Box::new(move || match tls(&addr, "localhost", client_config(Some(name))) {
                Err(_) => true,
                Ok(mut s) => api_versions(&mut s, 1).is_err(),
            }),
        ));
    }
    let addr = proxy.addr.clone();
    cases.push((
        "no client certificate",
        "TLS handshake failed: peer sent no certificates",
        "certificate",
        Box::new(move || match tls(&addr, "localhost", client_config(None)) {
            Err(_) => true,
            Ok(mut s) => api_versions(&mut s, 1).is_err(),
        }),
    ));
    let n = cases.len();
    let mut expected: BTreeMap<String, f64> = BTreeMap::new();
    for (_, _, reason, _) in &cases {
        *expected.entry(format!("reason={reason}")).or_default() += 1.0;
    }
    // All at once, beside the good connection.
    let results: Vec<(&str, &str, bool)> = thread::scope(|scope| {
        let handles: Vec<_> =
            cases.into_iter().map(|(what, needle, _, case)| (what, needle, scope.spawn(case))).collect();
        handles.into_iter().map(|(w, n, h)| (w, n, h.join().unwrap())).collect()
    });
    for (what, needle, was_closed) in &results {
        assert!(was_closed, "{what}: the proxy did not close the connection\n{}", proxy.log());
        let line = proxy.wait_for(&[needle, "closing this connection"]);
        eprintln!("{what}: {line}");
    }
    thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    pinger.join().expect("the good connection kept working");
    assert!(
        rounds.load(Ordering::Relaxed) >= 5,
        "the good connection was used {} times",
        rounds.load(Ordering::Relaxed)
    );
    assert!(proxy.count("closing this connection") >= n, "{}", proxy.log());
    // Each refused handshake is counted once, by its reason (the Prometheus parser reads it).
    let scraped = proxy_harness::parse_metrics(&[proxy_harness::scrape(&metrics)]);
    let family = "kwire_proxy_tls_handshake_failures";
    assert_eq!(scraped[0]["types"][family], "counter", "{}", scraped[0]);
    let counted: BTreeMap<String, f64> = proxy_harness::samples(&scraped[0])
        .into_iter()
        .filter(|((name, _), v)| name == &format!("{family}_total") && *v > 0.0)
        .map(|((_, labels), v)| (labels, v))
        .collect();
    assert_eq!(counted, expected, "TLS handshake failures counted (left) and made (right)");
    assert_eq!(counted.values().sum::<f64>(), n as f64);
    eprintln!("{family}_total: {counted:?}");
    assert_eq!(proxy.count("panicked"), 0);
    assert!(proxy.alive());
    assert!(!proxy.stderr().contains("panicked"));
}

/// A TLS "broker" of the test's own: each connection shows the next certificate of
/// `certs` (the last one for all after), and answers ApiVersions requests.
fn fake_broker(certs_in_order: Vec<&'static str>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let configs: Vec<_> = certs_in_order.iter().map(|n| server_config(n)).collect();
    thread::spawn(move || {
        for (i, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { continue };
            let config = configs[i.min(configs.len() - 1)].clone();
            thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut s = rustls::StreamOwned::new(conn, stream);
                while let Ok(frame) = read_frame(&mut s) {
                    let Ok(peek) = kwire::frame::RequestHeaderView::peek(&frame) else { return };
                    let body = ApiVersionsResponse::default();
                    let mut out = vec![0u8; kwire::dispatch::response_len(&body, peek.api_version).unwrap()];
                    kwire::dispatch::encode_response(&body, peek.api_version, peek.correlation_id, &mut out)
                        .unwrap();
                    if s.write_all(&out).and_then(|()| s.flush()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// ApiVersions with an empty list is the fake broker's answer: checked for the header only.
fn ping<S: Read + Write>(s: &mut S, correlation_id: i32) -> std::io::Result<()> {
    s.write_all(&api_versions_frame(correlation_id))?;
    s.flush()?;
    let frame = read_frame(s)?;
    let response = kwire::dispatch::parse_response(&frame, ApiKey::ApiVersions, 2).unwrap();
    assert_eq!(response.header.correlation_id(), correlation_id);
    Ok(())
}

/// Brokers whose certificates the proxy must refuse: expired, of another CA, for another
/// name. Each refusal closes that client's connection with a log line; a connection made
/// before goes on. With --upstream-insecure-skip-verify (logged) the expired one is taken.
#[test]
fn bad_upstream_certificates() {
    let ca = certs().path("ca.pem");
    let upstream = fake_broker(vec!["server", "expired", "wrong-ca", "wrong-name"]);
    let mut proxy = start_proxy(&["--upstream", &upstream, "--upstream-tls", "--upstream-ca", &ca]);
    let mut good = TcpStream::connect(&proxy.addr).unwrap();
    good.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    ping(&mut good, 1).unwrap();
    for (i, what) in ["xpired", "ssuer", "ame"].iter().enumerate() {
        let mut s = TcpStream::connect(&proxy.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        let refused = ping(&mut s, 1).is_err();
        assert!(refused, "case {i}: served\n{}", proxy.log());
        let line =
            proxy.wait_for(&[&format!("conn={} ", i + 2), "TLS handshake with the broker failed", what]);
        eprintln!("broker certificate refused: {line}");
        ping(&mut good, 2 + i as i32).unwrap();
    }
    assert!(proxy.alive());

    let expired = fake_broker(vec!["expired"]);
    let insecure =
        start_proxy(&["--upstream", &expired, "--upstream-tls", "--upstream-insecure-skip-verify"]);
    insecure.wait_for(&["WARNING: --upstream-insecure-skip-verify"]);
    let mut s = TcpStream::connect(&insecure.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    ping(&mut s, 1).unwrap();
    assert!(insecure.stderr().contains("WARNING: --upstream-insecure-skip-verify"));
}

/// Flags that do not fit together, and files that are not what they should be, stop the
/// proxy at start-up with a message (TLS flags and files, tenant rules and files).
#[test]
fn bad_tls_flags() {
    let c = certs();
    let fails = |args: &[&str], needle: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_kwire"))
            .args(["proxy", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} started");
        assert!(err.contains(needle), "{args:?}: {err}");
    };
    fails(&["--tls-cert", &c.path("server.pem")], "--tls-key");
    fails(&["--tls-cert", &c.path("ca.pem"), "--tls-key", &c.path("ca.pem")], "--tls-key");
    fails(&["--tls-cert", &c.path("server.key"), "--tls-key", &c.path("server.key")], "no certificate");
    fails(&["--upstream-tls"], "--upstream-ca");
    // Tenants: a rule that is none of the three forms, a file that is not there, a file
    // whose third line is wrong (named by its number).
    fails(&["--tenant", "alice=tenant-a."], "--tenant alice=tenant-a.: expected principal:USER=PREFIX");
    let missing = c.dir.join("no-such-tenants");
    fails(&["--tenants", missing.to_str().unwrap()], "--tenants");
    let file = c.dir.join("bad-tenants");
    std::fs::write(&file, "principal:alice=tenant-a.\n# b\nsni:b.example.com=tenant-a.eu.\n").unwrap();
    fails(
        &["--tenants", file.to_str().unwrap()],
        "line 3: sni:b.example.com=tenant-a.eu.: a tenant's prefix overlaps",
    );
    fails(&["--sni-pattern", PATTERN], "--tls-cert");
    let (cert, key) = (c.path("server.pem"), c.path("server.key"));
    let tls = ["--tls-cert", &cert, "--tls-key", &key];
    fails(
        &[&tls[..], &["--sni-pattern", "broker.kwire.test", "--sni-bootstrap", BOOTSTRAP]].concat(),
        "{id}",
    );
    fails(
        &[&tls[..], &["--sni-pattern", PATTERN, "--sni-bootstrap", "broker-3.kwire.test"]].concat(),
        "also a broker's name",
    );
}

// ---- names a tenant's prefix pushes past Kafka's limit ----

/// A request body of `api` at `version` from `spec`, a JSON object keyed by the schema's
/// field names (`"Topics"`, `"Name"`): strings, integers, booleans and arrays of them or of
/// objects; every field not given keeps its default.
fn body_from(api: ApiKey, version: i16, spec: &Value) -> Vec<u8> {
    use kwire::reflect::{self, FieldType, StructSchema, StructValue, Value as V};
    fn value(ty: &'static FieldType, spec: &Value) -> V {
        match (ty, spec) {
            (FieldType::Array(inner), Value::Array(items)) => {
                V::Array(items.iter().map(|i| value(inner, i)).collect())
            }
            (FieldType::Struct(s), Value::Object(_)) => V::Struct(strukt(s, spec)),
            (FieldType::String, Value::String(s)) => V::String(s.clone()),
            (FieldType::Bool, Value::Bool(b)) => V::Bool(*b),
            (FieldType::Int8, Value::Number(n)) => V::Int8(n.as_i64().unwrap() as i8),
            (FieldType::Int16, Value::Number(n)) => V::Int16(n.as_i64().unwrap() as i16),
            (FieldType::Int32, Value::Number(n)) => V::Int32(n.as_i64().unwrap() as i32),
            (FieldType::Int64, Value::Number(n)) => V::Int64(n.as_i64().unwrap()),
            (FieldType::Uuid, Value::String(s)) => V::Uuid(kwire::reflect::json::parse_uuid(s).unwrap()),
            (_, Value::Null) => V::Null,
            (ty, v) => panic!("no {ty:?} from {v}"),
        }
    }
    fn strukt(schema: &'static StructSchema, spec: &Value) -> StructValue {
        let mut s = StructValue::new(schema);
        for (name, v) in spec.as_object().unwrap() {
            let field =
                schema.fields.iter().find(|f| f.name.eq_ignore_ascii_case(name)).unwrap_or_else(|| {
                    panic!(
                        "no field {name} in {:?}",
                        schema.fields.iter().map(|f| f.name).collect::<Vec<_>>()
                    )
                });
            s.set(field.name, value(&field.ty, v));
        }
        s
    }
    let schema = reflect::request_schema(api);
    strukt(schema.body, spec).to_bytes(kwire::reflect::Encoding::body(schema, version)).unwrap()
}

/// A request frame (size first) of `body` (of `api` at `version`).
fn request_with(api: ApiKey, version: i16, correlation_id: i32, body: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 4];
    f.extend(api.to_i16().to_be_bytes());
    f.extend(version.to_be_bytes());
    f.extend(correlation_id.to_be_bytes());
    let client = b"tls-test";
    f.extend((client.len() as i16).to_be_bytes());
    f.extend(client);
    if api.flexible_versions().contains(version) {
        f.push(0); // no tagged fields in the header
    }
    f.extend(body);
    let size = (f.len() - 4) as i32;
    f[..4].copy_from_slice(&size.to_be_bytes());
    f
}

/// `api` at `version` with `spec` sent on `s`: the answer's body in Kafka's JSON form.
fn ask<S: Read + Write>(s: &mut S, api: ApiKey, version: i16, spec: &Value) -> Value {
    use kwire::reflect::{self, StructValue};
    s.write_all(&request_with(api, version, 9, &body_from(api, version, spec))).unwrap();
    s.flush().unwrap();
    let frame = read_frame(s).unwrap_or_else(|e| panic!("{} v{version}: no answer: {e}", api.name()));
    let response = kwire::dispatch::parse_response(&frame, api, version).unwrap();
    assert_eq!(response.header.correlation_id(), 9);
    let schema = reflect::response_schema(api);
    let value = StructValue::decode_body(schema, version, response.body.as_bytes()).unwrap();
    kwire::reflect::json::to_json(&value, kwire::reflect::Encoding::body(schema, version))
}

/// Every `errorCode` in `v`, in order.
fn error_codes(v: &Value, out: &mut Vec<i64>) {
    match v {
        Value::Object(o) => {
            for (k, v) in o {
                if k == "errorCode" {
                    out.push(v.as_i64().unwrap());
                } else {
                    error_codes(v, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| error_codes(v, out)),
        _ => {}
    }
}

/// `v` with every string's `from` replaced by `to`, and the fields that change from one
/// answer to the next (throttle time) or that the proxy rewrites (Metadata's brokers) dropped.
fn renamed(v: &Value, from: &str, to: &str) -> Value {
    match v {
        Value::String(s) if !from.is_empty() => Value::String(s.replace(from, to)),
        Value::Array(a) => Value::Array(a.iter().map(|v| renamed(v, from, to)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| !["throttleTimeMs", "brokers"].contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), renamed(v, from, to)))
                .collect(),
        ),
        v => v.clone(),
    }
}

/// The requests that name topics, each naming `name` (and group `group`): `(API, version,
/// body)`.
fn naming_requests(name: &str, group: &str) -> Vec<(ApiKey, i16, Value)> {
    use serde_json::json;
    let partition = |extra: Value| {
        let mut p = json!({"PartitionIndex": 0});
        p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        p
    };
    vec![
        (
            ApiKey::CreateTopics,
            7,
            json!({"Topics": [{"Name": name, "NumPartitions": 1, "ReplicationFactor": 1}], "TimeoutMs": 30000}),
        ),
        (ApiKey::Metadata, 12, json!({"Topics": [{"Name": name}], "AllowAutoTopicCreation": true})),
        (
            ApiKey::Produce,
            11,
            json!({"Acks": -1, "TimeoutMs": 30000, "TopicData": [{"Name": name, "PartitionData": [{"Index": 0, "Records": null}]}]}),
        ),
        (
            ApiKey::Fetch,
            12,
            json!({"ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 1, "MaxBytes": 1048576, "SessionEpoch": -1,
                   "Topics": [{"Topic": name, "Partitions": [{"Partition": 0, "FetchOffset": 0, "PartitionMaxBytes": 1024}]}]}),
        ),
        (
            ApiKey::ListOffsets,
            8,
            json!({"ReplicaId": -1, "Topics": [{"Name": name, "Partitions": [partition(json!({"Timestamp": -1}))]}]}),
        ),
        (ApiKey::DeleteTopics, 5, json!({"TopicNames": [name], "TimeoutMs": 30000})),
        (ApiKey::CreatePartitions, 3, json!({"Topics": [{"Name": name, "Count": 2}], "TimeoutMs": 30000})),
        (
            ApiKey::DeleteRecords,
            2,
            json!({"Topics": [{"Name": name, "Partitions": [partition(json!({"Offset": 0}))]}], "TimeoutMs": 30000}),
        ),
        (
            ApiKey::OffsetForLeaderEpoch,
            4,
            json!({"ReplicaId": -1, "Topics": [{"Topic": name, "Partitions": [{"Partition": 0, "LeaderEpoch": 0}]}]}),
        ),
        (
            ApiKey::DescribeTopicPartitions,
            0,
            json!({"Topics": [{"Name": name}], "ResponsePartitionLimit": 100}),
        ),
        (ApiKey::DescribeProducers, 0, json!({"Topics": [{"Name": name, "PartitionIndexes": [0]}]})),
        (
            ApiKey::OffsetCommit,
            8,
            json!({"GroupId": group, "GenerationIdOrMemberEpoch": -1,
                   "Topics": [{"Name": name, "Partitions": [partition(json!({"CommittedOffset": 0}))]}]}),
        ),
        (
            ApiKey::OffsetFetch,
            8,
            json!({"Groups": [{"GroupId": group, "Topics": [{"Name": name, "PartitionIndexes": [0]}]}]}),
        ),
        (
            ApiKey::OffsetDelete,
            0,
            json!({"GroupId": group, "Topics": [{"Name": name, "Partitions": [{"PartitionIndex": 0}]}]}),
        ),
    ]
}

/// A name a tenant's prefix pushes past Kafka's 249 bytes (a 245-byte name, `tenant-a.` in
/// front) gets, API by API, what Kafka gives a client for a name past the limit: the answer
/// through the proxy equals the broker's answer to the prefixed (254-byte) name sent
/// directly, with the client's own name in it, whole (never truncated). So CreateTopics and
/// Metadata's auto-creation give INVALID_TOPIC_EXCEPTION (17); nothing is created. A name
/// that fits after prefixing still works, as a check that the requests are sound.
#[test]
fn tenant_names_past_the_limit_get_kafkas_errors() {
    let (plain, _) = broker();
    let proxy = start_proxy(&["--upstream", plain, "--tenant", "default=tenant-a."]);
    let tag = prefix("long");
    let long = format!("{tag}-{}", "x".repeat(245 - tag.len() - 1));
    assert_eq!(long.len(), 245);
    let held = format!("tenant-a.{long}");
    let group = format!("group-{tag}");
    let mut direct = TcpStream::connect(plain).unwrap();
    let mut through = TcpStream::connect(&proxy.addr).unwrap();
    for s in [&mut direct, &mut through] {
        s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    }
    // The group's coordinator is up before the group APIs are asked (FindCoordinator creates
    // the offsets topic on first use), so that both paths meet the same coordinator.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = ask(
            &mut direct,
            ApiKey::FindCoordinator,
            4,
            &serde_json::json!({"KeyType": 0, "CoordinatorKeys": [format!("tenant-a.{group}")]}),
        );
        if found["coordinators"][0]["errorCode"] == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no coordinator: {found}");
        thread::sleep(Duration::from_millis(200));
    }
    let mut seen = BTreeMap::new();
    for ((api, version, to_broker), (_, _, to_proxy)) in
        naming_requests(&held, &format!("tenant-a.{group}")).into_iter().zip(naming_requests(&long, &group))
    {
        let kafka = ask(&mut direct, api, version, &to_broker);
        let tenant = ask(&mut through, api, version, &to_proxy);
        let mut codes = Vec::new();
        error_codes(&kafka, &mut codes);
        assert_eq!(
            renamed(&tenant, "", ""),
            renamed(&renamed(&kafka, &held, &long), &format!("tenant-a.{group}"), &group),
            "{} v{version}: through the tenant, unlike Kafka's answer",
            api.name()
        );
        assert!(!tenant.to_string().contains(&format!("\"{}\"", &held[..249])), "truncated: {tenant}");
        seen.insert(api.name(), codes);
    }
    eprintln!("Kafka's error codes for a name past the limit, the same through the tenant: {seen:?}");
    assert_eq!(seen["CreateTopics"], [17], "{seen:?}");
    assert!(seen["Metadata"].contains(&17), "{seen:?}");
    // "." and "..", which Kafka refuses as topic names, are refused through the tenant too
    // (prefixed, they would be valid names).
    for name in [".", ".."] {
        for (api, version, spec) in naming_requests(name, &group).into_iter().take(2) {
            let kafka = ask(&mut direct, api, version, &spec);
            let tenant = ask(&mut through, api, version, &spec);
            assert_eq!(renamed(&tenant, "", ""), renamed(&kafka, "", ""), "{} of {name:?}", api.name());
            let mut codes = Vec::new();
            error_codes(&kafka, &mut codes);
            assert_eq!(codes, [17], "{} of {name:?}: {kafka}", api.name());
        }
    }
    // Nothing was created, under any name.
    let metadata = ask(&mut direct, ApiKey::Metadata, 12, &serde_json::json!({"Topics": null}));
    assert!(!metadata.to_string().contains(&tag), "{metadata}");
    assert!(!metadata.to_string().contains("\"tenant-a..\""), "{metadata}");
    // A name that fits (240 bytes, 249 with the prefix) is created and deleted.
    let fits = &long[..240];
    let created = ask(&mut through, ApiKey::CreateTopics, 7, &naming_requests(fits, &group)[0].2);
    assert_eq!(created["topics"][0]["errorCode"], 0, "{created}");
    assert_eq!(created["topics"][0]["name"], fits, "{created}");
    let deleted = ask(
        &mut through,
        ApiKey::DeleteTopics,
        5,
        &serde_json::json!({"TopicNames": [fits], "TimeoutMs": 30000}),
    );
    assert_eq!(deleted["responses"][0]["errorCode"], 0, "{deleted}");
    assert!(proxy.log().matches("closing").count() == 0, "{}", proxy.log());
}

/// Topic-id isolation. Tenant `tenant-a.` learns the id of tenant `tenant-b.`'s
/// topic (here from the broker directly; ids are 128 random bits, but they are not secrets)
/// and names it through the proxy: Fetch v13, Metadata v12 and DeleteTopics v6 by that id
/// must get what Kafka gives for an id it does not know, UNKNOWN_TOPIC_ID (100) with the id
/// echoed (measured straight from the broker with an id no topic has), and the other
/// tenant's topic is left alone. Its own topic, created behind the proxy's back (so that
/// the proxy has to look its id up), is served by id, beside the other's in one Fetch.
#[test]
fn tenant_cannot_reach_another_tenants_topic_by_id() {
    let (plain, _) = broker();
    let proxy = start_proxy(&["--upstream", plain, "--tenant", "default=tenant-a."]);
    let tag = prefix("ids");
    let victim = format!("tenant-b.victim-{tag}");
    let mine = format!("mine-{tag}");
    let mut direct = TcpStream::connect(plain).unwrap();
    let mut through = TcpStream::connect(&proxy.addr).unwrap();
    for s in [&mut direct, &mut through] {
        s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    }
    let mut created_id = |name: &str| {
        let create = serde_json::json!({"Topics": [{"Name": name, "NumPartitions": 1, "ReplicationFactor": 1}], "TimeoutMs": 30000});
        let created = ask(&mut direct, ApiKey::CreateTopics, 7, &create);
        assert_eq!(created["topics"][0]["errorCode"], 0, "{created}");
        created["topics"][0]["topicId"].as_str().unwrap().to_string()
    };
    let id = created_id(&victim);
    let own = created_id(&format!("tenant-a.{mine}"));
    // The broker serves a new topic once its metadata has it.
    let known = |direct: &mut TcpStream, id: &str, code: i64| {
        let ask_id = serde_json::json!({"Topics": [{"TopicId": id, "Name": null}]});
        let deadline = Instant::now() + Duration::from_secs(30);
        while ask(direct, ApiKey::Metadata, 12, &ask_id)["topics"][0]["errorCode"] != code {
            assert!(Instant::now() < deadline, "topic {id}: never error {code}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    known(&mut direct, &id, 0);
    known(&mut direct, &own, 0);
    let fetch = |ids: &[&str]| {
        let topics: Vec<_> = ids
            .iter()
            .map(|id| serde_json::json!({"TopicId": id, "Partitions": [{"Partition": 0, "FetchOffset": 0, "PartitionMaxBytes": 1024}]}))
            .collect();
        serde_json::json!({"ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 1, "MaxBytes": 1048576, "SessionEpoch": -1, "Topics": topics})
    };
    // What Kafka answers for an id no topic has, asked directly.
    let nowhere = "AAAAAAAAAAAAAAAAAAAAAg"; // 0...02: no topic has a version-0 id but 0 and 1
    let kafka = ask(&mut direct, ApiKey::Fetch, 13, &fetch(&[nowhere]));
    assert_eq!(kafka["responses"][0]["partitions"][0]["errorCode"], 100, "{kafka}");
    assert_eq!(kafka["responses"][0]["topicId"], nowhere, "{kafka}");
    // The connection is set up, and the broker has served these topics, before the timing.
    ask(&mut direct, ApiKey::Fetch, 13, &fetch(&[&id, &own]));
    ask(
        &mut through,
        ApiKey::ApiVersions,
        3,
        &serde_json::json!({"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"}),
    );
    let first = Instant::now();
    let fetched = ask(&mut through, ApiKey::Fetch, 13, &fetch(&[&id, &own]));
    let first = first.elapsed();
    let again = Instant::now();
    ask(&mut through, ApiKey::Fetch, 13, &fetch(&[&id, &own]));
    eprintln!(
        "Fetch by two unseen ids through the tenant: {first:?} (with the lookup), then {:?}",
        again.elapsed()
    );
    let by_id = ask(
        &mut through,
        ApiKey::Metadata,
        12,
        &serde_json::json!({"Topics": [{"TopicId": id, "Name": null}]}),
    );
    let delete = serde_json::json!({"Topics": [{"Name": null, "TopicId": id}], "TimeoutMs": 30000});
    let deleted = ask(&mut through, ApiKey::DeleteTopics, 6, &delete);
    let still = ask(&mut direct, ApiKey::Metadata, 12, &serde_json::json!({"Topics": [{"Name": victim}]}));
    assert_eq!(
        still["topics"][0]["errorCode"], 0,
        "the other tenant's topic was deleted by id: {deleted}; Fetch by its id: {fetched}"
    );
    assert_eq!(still["topics"][0]["topicId"], id.as_str(), "{still}");
    // Each topic's partition error, by the ids the answer gives (Kafka puts unknown ids last).
    let mut codes: Vec<_> = fetched["responses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (t["topicId"].as_str().unwrap().to_string(), t["partitions"][0]["errorCode"].as_i64().unwrap())
        })
        .collect();
    codes.sort();
    let mut expected = vec![(id.clone(), 100), (own.clone(), 0)];
    expected.sort();
    assert_eq!(codes, expected, "{fetched}");
    assert_eq!(by_id["topics"][0]["errorCode"], 100, "{by_id}");
    assert_eq!(by_id["topics"][0]["topicId"], id.as_str(), "{by_id}");
    assert_eq!(by_id["topics"][0]["name"], serde_json::Value::Null, "{by_id}");
    assert_eq!(deleted["responses"][0]["errorCode"], 100, "{deleted}");
    assert_eq!(deleted["responses"][0]["topicId"], id.as_str(), "{deleted}");
    // Its own topic, by id: Metadata names it without the prefix, and DeleteTopics deletes it.
    let by_id = ask(
        &mut through,
        ApiKey::Metadata,
        12,
        &serde_json::json!({"Topics": [{"TopicId": own, "Name": null}]}),
    );
    assert_eq!(by_id["topics"][0]["errorCode"], 0, "{by_id}");
    assert_eq!(by_id["topics"][0]["name"], mine.as_str(), "{by_id}");
    let delete = serde_json::json!({"Topics": [{"Name": null, "TopicId": own}], "TimeoutMs": 30000});
    let deleted = ask(&mut through, ApiKey::DeleteTopics, 6, &delete);
    assert_eq!(deleted["responses"][0]["errorCode"], 0, "{deleted}");
    assert_eq!(deleted["responses"][0]["name"], mine.as_str(), "{deleted}");
    known(&mut direct, &own, 100);
    let delete = serde_json::json!({"Topics": [{"Name": victim, "TopicId": "AAAAAAAAAAAAAAAAAAAAAA"}], "TimeoutMs": 30000});
    assert_eq!(ask(&mut direct, ApiKey::DeleteTopics, 6, &delete)["responses"][0]["errorCode"], 0);
    assert!(proxy.log().matches("closing").count() == 0, "{}", proxy.log());
}
