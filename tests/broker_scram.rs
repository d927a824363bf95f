//! SASL SCRAM-SHA-256 and SCRAM-SHA-512 and the TLS listener of `kwire::broker` (features
//! `broker-scram`, `broker-tls`), over raw frames with the client side of SCRAM written here
//! on ring (RFC 5802): right and wrong passwords with both mechanisms, an unknown user, a
//! final nonce that is not the server's, replayed and malformed client-final messages,
//! authorization ids and extensions, the v0 bare-token path, Describe- and
//! AlterUserScramCredentials with Kafka's error codes, TLS (SSL and SASL_SSL) with
//! certificates made here (rcgen), bad TLS closing its own connection only, and no secret
//! in the broker's log lines. The real clients are in tests/broker_scram_clients.rs.
#![cfg(all(feature = "broker-scram", feature = "broker-tls"))]

#[path = "common/tls.rs"]
mod tls;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use kwire::ApiKey;
use kwire::broker::{Broker, Config, ScramMechanism, ScramUser, TlsConfig};
use kwire::dispatch;
use kwire::encode::AnyBody;
use kwire::messages::ResponseBodyView;
use kwire::messages::alter_user_scram_credentials::{ScramCredentialDeletion, ScramCredentialUpsertion};
use kwire::messages::describe_user_scram_credentials::UserName;
use kwire::messages::{
    AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest, MetadataRequest,
    SaslAuthenticateRequest, SaslHandshakeRequest,
};
use ring::{digest, hmac, pbkdf2};

const SHA256: ScramMechanism = ScramMechanism::Sha256;
const SHA512: ScramMechanism = ScramMechanism::Sha512;

/// One request on any stream (plain or TLS), its response frame (correlation id first).
fn call<S: Read + Write>(s: &mut S, body: &impl AnyBody, version: i16) -> std::io::Result<Vec<u8>> {
    let header = kwire::frame::RequestHeader {
        correlation_id: 7,
        client_id: Some("scram-test"),
        unknown_tagged_fields: &[],
    };
    let mut buf = vec![0u8; dispatch::request_len(body, version, &header).unwrap()];
    dispatch::encode_request_with(body, version, &header, &mut buf).unwrap();
    s.write_all(&buf)?;
    s.flush()?;
    read_frame(s)
}

fn read_frame<S: Read>(s: &mut S) -> std::io::Result<Vec<u8>> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size)?;
    let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
    s.read_exact(&mut frame)?;
    Ok(frame)
}

fn write_raw<S: Write>(s: &mut S, token: &[u8]) {
    s.write_all(&(token.len() as i32).to_be_bytes()).unwrap();
    s.write_all(token).unwrap();
    s.flush().unwrap();
}

/// Whether the broker closes the connection (reads reach EOF or an error other than the
/// read timeout; a TLS alert before it is read past).
fn closed<S: Read>(s: &mut S) -> bool {
    let mut b = [0u8; 256];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => {
                return !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut);
            }
        }
    }
}

fn response(frame: &[u8], key: ApiKey, version: i16) -> ResponseBodyView<'_> {
    dispatch::parse_response(frame, key, version).unwrap().body
}

fn connect(broker: &Broker) -> TcpStream {
    let s = TcpStream::connect(broker.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn hmac_sign(m: ScramMechanism, key: &[u8], data: &[u8]) -> Vec<u8> {
    let alg = if m == SHA256 { hmac::HMAC_SHA256 } else { hmac::HMAC_SHA512 };
    hmac::sign(&hmac::Key::new(alg, key), data).as_ref().to_vec()
}

fn salted(m: ScramMechanism, password: &str, salt: &[u8], iterations: u32) -> Vec<u8> {
    let (alg, len) =
        if m == SHA256 { (pbkdf2::PBKDF2_HMAC_SHA256, 32) } else { (pbkdf2::PBKDF2_HMAC_SHA512, 64) };
    let mut out = vec![0u8; len];
    pbkdf2::derive(alg, iterations.try_into().unwrap(), salt, password.as_bytes(), &mut out);
    out
}

/// The client side of one exchange (RFC 5802).
struct Client {
    m: ScramMechanism,
    gs2: String,
    user: String,
    password: String,
    nonce: String,
    first_bare: String,
    auth_message: String,
    salted: Vec<u8>,
}

impl Client {
    fn new(m: ScramMechanism, user: &str, password: &str) -> Client {
        let mut n = [0u8; 18];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut n).unwrap();
        let nonce = B64.encode(n);
        Client {
            m,
            user: user.into(),
            password: password.into(),
            gs2: "n,,".into(),
            first_bare: format!("n={user},r={nonce}"),
            nonce,
            auth_message: String::new(),
            salted: Vec::new(),
        }
    }

    fn first(&self) -> Vec<u8> {
        format!("{}{}", self.gs2, self.first_bare).into_bytes()
    }

    /// The client-final message for the server-first (`nonce` replaces the server's
    /// combined nonce when given).
    fn last(&mut self, server_first: &[u8], nonce: Option<&str>) -> Vec<u8> {
        let sf = std::str::from_utf8(server_first).unwrap();
        let mut parts = sf.split(',');
        let r = parts.next().unwrap().strip_prefix("r=").unwrap();
        assert!(
            r.starts_with(&self.nonce) && r.len() > self.nonce.len(),
            "the server's nonce extends ours: {sf}"
        );
        let salt = B64.decode(parts.next().unwrap().strip_prefix("s=").unwrap()).unwrap();
        let i: u32 = parts.next().unwrap().strip_prefix("i=").unwrap().parse().unwrap();
        assert!(i >= 4096, "{sf}");
        self.salted = salted(self.m, &self.password, &salt, i);
        let without_proof = format!("c={},r={}", B64.encode(&self.gs2), nonce.unwrap_or(r));
        self.auth_message = format!("{},{sf},{without_proof}", self.first_bare);
        let client_key = hmac_sign(self.m, &self.salted, b"Client Key");
        let stored =
            digest::digest(if self.m == SHA256 { &digest::SHA256 } else { &digest::SHA512 }, &client_key);
        let signature = hmac_sign(self.m, stored.as_ref(), self.auth_message.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        format!("{without_proof},p={}", B64.encode(proof)).into_bytes()
    }

    /// Checks the server's signature in server-final.
    fn verify(&self, server_final: &[u8]) {
        let server_key = hmac_sign(self.m, &self.salted, b"Server Key");
        let want = hmac_sign(self.m, &server_key, self.auth_message.as_bytes());
        assert_eq!(server_final, format!("v={}", B64.encode(want)).as_bytes(), "the server's signature");
        let _ = &self.user;
    }
}

/// SaslHandshake at `version`: (error code, mechanisms).
fn handshake<S: Read + Write>(s: &mut S, mechanism: &str, version: i16) -> (i16, Vec<String>) {
    let frame = call(s, &SaslHandshakeRequest { mechanism: mechanism.into() }, version).unwrap();
    let ResponseBodyView::SaslHandshake(r) = response(&frame, ApiKey::SaslHandshake, version) else {
        panic!()
    };
    (r.error_code(), r.mechanisms().iter().map(|m| m.to_string()).collect())
}

/// SaslAuthenticate at `version`: (error code, message, bytes).
fn authenticate<S: Read + Write>(s: &mut S, token: &[u8], version: i16) -> (i16, Option<String>, Vec<u8>) {
    let frame = call(s, &SaslAuthenticateRequest { auth_bytes: token.into(), ..Default::default() }, version)
        .unwrap();
    let ResponseBodyView::SaslAuthenticate(r) = response(&frame, ApiKey::SaslAuthenticate, version) else {
        panic!()
    };
    (r.error_code(), r.error_message().map(str::to_string), r.auth_bytes().to_vec())
}

/// A whole exchange over SaslHandshake v1 and SaslAuthenticate at `version`; the first
/// failing step's (code, message), or the server-final checked.
fn login<S: Read + Write>(
    s: &mut S,
    m: ScramMechanism,
    user: &str,
    password: &str,
    version: i16,
) -> Result<(), (i16, String)> {
    assert_eq!(handshake(s, m.name(), 1).0, 0);
    let mut c = Client::new(m, user, password);
    let (code, msg, server_first) = authenticate(s, &c.first(), version);
    if code != 0 {
        return Err((code, msg.unwrap_or_default()));
    }
    let last = c.last(&server_first, None);
    let (code, msg, server_final) = authenticate(s, &last, version);
    if code != 0 {
        return Err((code, msg.unwrap_or_default()));
    }
    c.verify(&server_final);
    Ok(())
}

fn failed(m: ScramMechanism) -> (i16, String) {
    (
        58,
        format!(
            "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
            m.name()
        ),
    )
}

type Lines = Arc<Mutex<Vec<String>>>;

fn broker_with(users: Vec<ScramUser>, tls: Option<TlsConfig>) -> (Broker, Lines) {
    let lines: Lines = Arc::default();
    let sink = lines.clone();
    let config = Config {
        scram_users: users,
        plain_users: vec![("paula".into(), "plain-secret-6621".into())],
        tls,
        logger: Some(Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_string()))),
        verbose: true,
        ..Config::default()
    };
    (Broker::start(config).unwrap(), lines)
}

const ALICE_PW: &str = "alice-pw-83371";
const BOB_PW: &str = "bob-pw-52290";

fn users() -> Vec<ScramUser> {
    vec![
        ScramUser::new("alice", ALICE_PW, SHA256),
        ScramUser::new("alice", ALICE_PW, SHA512),
        ScramUser { iterations: 8192, ..ScramUser::new("bob", BOB_PW, SHA512) },
    ]
}

fn metadata_works<S: Read + Write>(s: &mut S) {
    let frame = call(s, &MetadataRequest { topics: None, ..Default::default() }, 9).unwrap();
    let ResponseBodyView::Metadata(m) = response(&frame, ApiKey::Metadata, 9) else { panic!() };
    assert_eq!(m.brokers().len(), 1);
}

#[test]
fn both_mechanisms_authenticate_and_wrong_passwords_fail_with_kafkas_message() {
    let (broker, lines) = broker_with(users(), None);
    let mut s = connect(&broker);
    let (code, mechanisms) = handshake(&mut s, "SCRAM-SHA-1", 1);
    assert_eq!(
        (code, mechanisms.as_slice()),
        (33, &["PLAIN".to_string(), "SCRAM-SHA-256".into(), "SCRAM-SHA-512".into()][..])
    );
    for (m, version) in [(SHA256, 0), (SHA512, 1), (SHA256, 2), (SHA512, 2)] {
        let mut s = connect(&broker);
        login(&mut s, m, "alice", ALICE_PW, version).unwrap_or_else(|e| panic!("{m:?} v{version}: {e:?}"));
        metadata_works(&mut s);
        // After success: ILLEGAL_SASL_STATE for another token or handshake; still served.
        let (code, msg, _) = authenticate(&mut s, b"n,,n=alice,r=again", version);
        assert_eq!(
            (code, msg.as_deref()),
            (34, Some("SaslAuthenticate request received after successful authentication"))
        );
        assert_eq!(handshake(&mut s, m.name(), 1).0, 34);
        metadata_works(&mut s);

        let mut s = connect(&broker);
        assert_eq!(login(&mut s, m, "alice", "not-her-password", version), Err(failed(m)));
        assert!(closed(&mut s), "a failed exchange closes the connection");
    }
    // bob: 8192 iterations, SCRAM-SHA-512 only.
    login(&mut connect(&broker), SHA512, "bob", BOB_PW, 2).unwrap();
    assert_eq!(login(&mut connect(&broker), SHA256, "bob", BOB_PW, 2), Err(failed(SHA256)));
    // An unknown user fails at the first message, with the same message.
    assert_eq!(login(&mut connect(&broker), SHA512, "mallory", BOB_PW, 2), Err(failed(SHA512)));
    // PLAIN beside SCRAM.
    let mut s = connect(&broker);
    assert_eq!(handshake(&mut s, "PLAIN", 1).0, 0);
    assert_eq!(authenticate(&mut s, b"\0paula\0plain-secret-6621", 2).0, 0);
    drop(broker);
    let lines = lines.lock().unwrap().join("\n");
    assert!(lines.contains("SaslAuthenticate v2"), "{lines}");
    for secret in [ALICE_PW, BOB_PW, "not-her-password", "plain-secret-6621", "r=", "p=", "c=biws"] {
        assert!(!lines.contains(secret), "{secret} in the log:\n{lines}");
    }
}

#[test]
fn nonces_replays_and_malformed_messages_fail() {
    let (broker, _) = broker_with(users(), None);
    // A final nonce that is not the server's combined nonce: the client's alone, the
    // server's with a byte added, a prefix in front of it (Kafka wants it equal).
    for bad in [Some("client-only"), None, Some("x")] {
        let mut s = connect(&broker);
        assert_eq!(handshake(&mut s, "SCRAM-SHA-256", 1).0, 0);
        let mut c = Client::new(SHA256, "alice", ALICE_PW);
        let (code, _, server_first) = authenticate(&mut s, &c.first(), 2);
        assert_eq!(code, 0);
        let combined =
            std::str::from_utf8(&server_first).unwrap().split(',').next().unwrap()[2..].to_string();
        let nonce = match bad {
            Some("client-only") => c.nonce.clone(),
            None => format!("{combined}A"),
            Some(p) => format!("{p}{combined}"),
        };
        let last = c.last(&server_first, Some(&nonce));
        assert_eq!(authenticate(&mut s, &last, 2), (58, Some(failed(SHA256).1), vec![]), "{nonce}");
        assert!(closed(&mut s));
    }
    // A client-final replayed: on a new connection (a new server nonce) it fails; on the
    // same connection after success it is ILLEGAL_SASL_STATE.
    let mut s = connect(&broker);
    assert_eq!(handshake(&mut s, "SCRAM-SHA-512", 1).0, 0);
    let mut c = Client::new(SHA512, "alice", ALICE_PW);
    let (_, _, server_first) = authenticate(&mut s, &c.first(), 1);
    let last = c.last(&server_first, None);
    let (code, _, server_final) = authenticate(&mut s, &last, 1);
    assert_eq!(code, 0);
    c.verify(&server_final);
    assert_eq!(authenticate(&mut s, &last, 1).0, 34);
    let mut again = connect(&broker);
    assert_eq!(handshake(&mut again, "SCRAM-SHA-512", 1).0, 0);
    assert_eq!(authenticate(&mut again, &c.first(), 1).0, 0);
    assert_eq!(authenticate(&mut again, &last, 1), (58, Some(failed(SHA512).1), vec![]));
    // Malformed client-final messages, each after a good client-first.
    let garbage: &[&[u8]] = &[
        b"",
        b"c=biws",
        b"\xff\xfe",
        b"c=biws,r=NONCE",
        b"c=biws,r=NONCE,p=",
        b"c=biws,r=NONCE,p=!!notbase64",
        b"c=biws,r=NONCE,p=AAAA",
        b"c=eSws,r=NONCE,p=PROOF",
        b"r=NONCE,c=biws,p=PROOF",
    ];
    for g in garbage {
        let mut s = connect(&broker);
        assert_eq!(handshake(&mut s, "SCRAM-SHA-256", 1).0, 0);
        let mut c = Client::new(SHA256, "alice", ALICE_PW);
        let (_, _, server_first) = authenticate(&mut s, &c.first(), 2);
        let good = String::from_utf8(c.last(&server_first, None)).unwrap();
        let (without, proof) = good.rsplit_once(",p=").unwrap();
        let nonce = &without["c=biws,r=".len()..];
        let token = String::from_utf8_lossy(g).replace("NONCE", nonce).replace("PROOF", proof);
        let token = if g == b"\xff\xfe" { g.to_vec() } else { token.into_bytes() };
        assert_eq!(authenticate(&mut s, &token, 2).0, 58, "{}", String::from_utf8_lossy(g));
        assert!(closed(&mut s));
    }
    // Malformed client-first messages, an authorization id and a delegation token.
    for (first, want) in [
        (&b"y,,n=alice,r=abc"[..], failed(SHA256).1),
        (b"p=tls-unique,,n=alice,r=abc", failed(SHA256).1),
        (b"n,,n=alice", failed(SHA256).1),
        (b"n,,n=alice,r=", failed(SHA256).1),
        (b"n,,n=alice,r=abc,tokenauth=true", failed(SHA256).1),
        (
            b"n,a=bob,n=alice,r=abc",
            "Authentication failed: Client requested an authorization id that is different from username"
                .into(),
        ),
    ] {
        let mut s = connect(&broker);
        assert_eq!(handshake(&mut s, "SCRAM-SHA-256", 1).0, 0);
        assert_eq!(
            authenticate(&mut s, first, 2),
            (58, Some(want), vec![]),
            "{}",
            String::from_utf8_lossy(first)
        );
        assert!(closed(&mut s));
    }
    // Extensions other than tokenauth are ignored; an authorization id equal to the user
    // is accepted.
    let mut s = connect(&broker);
    assert_eq!(handshake(&mut s, "SCRAM-SHA-256", 1).0, 0);
    let mut c = Client::new(SHA256, "alice", ALICE_PW);
    c.first_bare.push_str(",traceid=42");
    c.gs2 = "n,a=alice,".into();
    let (code, _, server_first) = authenticate(&mut s, &c.first(), 2);
    assert_eq!(code, 0);
    let last = c.last(&server_first, None);
    let (code, _, server_final) = authenticate(&mut s, &last, 2);
    assert_eq!(code, 0);
    c.verify(&server_final);
    metadata_works(&mut s);
}

#[test]
fn the_v0_path_sends_bare_tokens() {
    let (broker, _) = broker_with(users(), None);
    for m in [SHA256, SHA512] {
        let mut s = connect(&broker);
        assert_eq!(handshake(&mut s, m.name(), 0).0, 0);
        let mut c = Client::new(m, "alice", ALICE_PW);
        write_raw(&mut s, &c.first());
        let server_first = read_frame(&mut s).unwrap();
        write_raw(&mut s, &c.last(&server_first, None));
        let server_final = read_frame(&mut s).unwrap();
        c.verify(&server_final);
        metadata_works(&mut s);
        // A wrong password: the connection closes without an answer.
        let mut s = connect(&broker);
        assert_eq!(handshake(&mut s, m.name(), 0).0, 0);
        let mut c = Client::new(m, "alice", "wrong");
        write_raw(&mut s, &c.first());
        let server_first = read_frame(&mut s).unwrap();
        write_raw(&mut s, &c.last(&server_first, None));
        assert!(closed(&mut s));
    }
}

#[test]
fn start_refuses_too_few_or_too_many_iterations() {
    for i in [0, 4095, 16385] {
        let config = Config {
            scram_users: vec![ScramUser { iterations: i, ..ScramUser::new("a", "b", SHA256) }],
            ..Config::default()
        };
        let e = Broker::start(config).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{i}");
    }
    let debug = format!("{:?}", Config { scram_users: users(), ..Config::default() });
    assert!(debug.contains("alice") && !debug.contains(ALICE_PW) && !debug.contains(BOB_PW), "{debug}");
}

#[test]
fn describe_and_alter_user_scram_credentials() {
    let (broker, _) = broker_with(users(), None);
    let mut s = connect(&broker);
    let describe = |s: &mut TcpStream, names: Option<&[&str]>| {
        let list: Vec<UserName> = names
            .unwrap_or_default()
            .iter()
            .map(|n| UserName { name: (*n).into(), ..Default::default() })
            .collect();
        let req = DescribeUserScramCredentialsRequest {
            users: names.map(|_| list[..].into()),
            ..Default::default()
        };
        let frame = call(s, &req, 0).unwrap();
        let ResponseBodyView::DescribeUserScramCredentials(r) =
            response(&frame, ApiKey::DescribeUserScramCredentials, 0)
        else {
            panic!()
        };
        assert_eq!(r.error_code(), 0);
        r.results()
            .iter()
            .map(|u| {
                let infos: Vec<(i8, i32)> =
                    u.credential_infos().iter().map(|c| (c.mechanism(), c.iterations())).collect();
                (u.user().to_string(), u.error_code(), infos)
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        describe(&mut s, None),
        vec![("alice".into(), 0, vec![(1, 4096), (2, 4096)]), ("bob".into(), 0, vec![(2, 8192)])]
    );
    assert_eq!(describe(&mut s, Some(&["nobody"])), vec![("nobody".into(), 91, vec![])]);
    assert_eq!(
        describe(&mut s, Some(&["bob", "bob"])),
        vec![("bob".into(), 92, vec![]), ("bob".into(), 92, vec![])]
    );

    let alter = |s: &mut TcpStream,
                 deletions: &[ScramCredentialDeletion],
                 upsertions: &[ScramCredentialUpsertion]| {
        let req = AlterUserScramCredentialsRequest {
            deletions: deletions.into(),
            upsertions: upsertions.into(),
            ..Default::default()
        };
        let frame = call(s, &req, 0).unwrap();
        let ResponseBodyView::AlterUserScramCredentials(r) =
            response(&frame, ApiKey::AlterUserScramCredentials, 0)
        else {
            panic!()
        };
        r.results().iter().map(|u| (u.user().to_string(), u.error_code())).collect::<Vec<_>>()
    };
    let salt = b"carol-salt-0001";
    let carol = salted(SHA256, "carol-pw-1", salt, 4096);
    let up = |name: &'static str, mechanism: i8, iterations: i32, salted: &'static [u8]| {
        ScramCredentialUpsertion {
            name: name.into(),
            mechanism,
            iterations,
            salt: (&salt[..]).into(),
            salted_password: salted.into(),
            ..Default::default()
        }
    };
    let carol: &'static [u8] = carol.leak();
    let del = |name: &'static str, mechanism: i8| ScramCredentialDeletion {
        name: name.into(),
        mechanism,
        ..Default::default()
    };
    assert_eq!(
        alter(
            &mut s,
            &[del("bob", 1), del("", 2), del("alice", 3)],
            &[
                up("carol", 1, 4096, carol),
                up("dave", 1, 4095, carol),
                up("erin", 2, 16385, carol),
                up("frank", 1, 4096, carol),
                up("frank", 1, 4096, carol)
            ]
        ),
        vec![
            ("bob".into(), 91),
            ("".into(), 93),
            ("alice".into(), 33),
            ("carol".into(), 0),
            ("dave".into(), 93),
            ("erin".into(), 93),
            ("frank".into(), 92)
        ]
    );
    // carol logs in with the password her salted password came from; the refused users
    // got nothing.
    login(&mut connect(&broker), SHA256, "carol", "carol-pw-1", 2).unwrap();
    assert_eq!(login(&mut connect(&broker), SHA256, "carol", "carol-pw-2", 2), Err(failed(SHA256)));
    assert_eq!(describe(&mut s, Some(&["frank"])), vec![("frank".into(), 91, vec![])]);
    // Deleting alice's SCRAM-SHA-512 credential: she logs in with SHA-256 only.
    assert_eq!(alter(&mut s, &[del("alice", 2)], &[]), vec![("alice".into(), 0)]);
    assert_eq!(login(&mut connect(&broker), SHA512, "alice", ALICE_PW, 2), Err(failed(SHA512)));
    login(&mut connect(&broker), SHA256, "alice", ALICE_PW, 2).unwrap();
}

fn tls_client(
    ca: &str,
    addr: std::net::SocketAddr,
) -> std::io::Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(ring_provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut sock = TcpStream::connect(addr)?;
    sock.set_read_timeout(Some(Duration::from_secs(10)))?;
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name).map_err(std::io::Error::other)?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock)?;
    }
    Ok(rustls::StreamOwned::new(conn, sock))
}

#[test]
fn a_tls_listener_serves_ssl_and_sasl_ssl_and_bad_tls_closes_one_connection() {
    let (ca, chain, key) = tls::ca_and_server(&["localhost", "127.0.0.1"]);
    let tls = TlsConfig::from_pem(chain.as_bytes(), key.as_bytes()).unwrap();
    assert!(TlsConfig::from_pem(b"not a certificate", key.as_bytes()).is_err());
    assert!(TlsConfig::from_pem(chain.as_bytes(), b"").is_err());
    let (broker, lines) = broker_with(users(), Some(tls));
    // SSL: a request without SASL.
    let mut ssl = tls_client(&ca, broker.addr()).unwrap();
    metadata_works(&mut ssl);
    // Bad TLS from other clients: plaintext Kafka, garbage, a handshake cut short.
    let mut plain = connect(&broker);
    plain.write_all(&[0, 0, 0, 12, 0, 18, 0, 3, 0, 0, 0, 1, 0, 2, b'h', b'i']).unwrap();
    assert!(closed(&mut plain));
    let mut garbage = connect(&broker);
    garbage.write_all(&[0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5]).unwrap();
    assert!(closed(&mut garbage));
    let mut cut = connect(&broker);
    cut.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).unwrap();
    drop(cut);
    // SASL_SSL, both mechanisms, on new connections; the first connection still served.
    for m in [SHA256, SHA512] {
        let mut s = tls_client(&ca, broker.addr()).unwrap();
        login(&mut s, m, "alice", ALICE_PW, 2).unwrap();
        metadata_works(&mut s);
        let mut s = tls_client(&ca, broker.addr()).unwrap();
        assert_eq!(login(&mut s, m, "alice", "wrong", 2), Err(failed(m)));
        assert!(closed(&mut s));
    }
    metadata_works(&mut ssl);
    // v0 bare tokens over TLS.
    let mut s = tls_client(&ca, broker.addr()).unwrap();
    assert_eq!(handshake(&mut s, "SCRAM-SHA-512", 0).0, 0);
    let mut c = Client::new(SHA512, "alice", ALICE_PW);
    write_raw(&mut s, &c.first());
    let server_first = read_frame(&mut s).unwrap();
    write_raw(&mut s, &c.last(&server_first, None));
    c.verify(&read_frame(&mut s).unwrap());
    metadata_works(&mut s);
    drop(broker);
    let lines = lines.lock().unwrap().join("\n");
    assert!(lines.contains("read failed"), "the bad TLS connections' ends are logged:\n{lines}");
    for secret in [ALICE_PW, "r=", "p="] {
        assert!(!lines.contains(secret), "{secret} in the log:\n{lines}");
    }
}

/// rustls over *ring*, as kwire's TLS endpoints use it (see `src/apps/tls_provider.rs` for
/// why *ring*, whose provider rustls deprecates for its lack of post-quantum key exchange).
fn ring_provider() -> Arc<rustls::crypto::CryptoProvider> {
    #[allow(deprecated)]
    Arc::new(rustls::crypto::ring::default_provider())
}
