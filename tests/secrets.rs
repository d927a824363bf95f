//! Secrets never leave the proxy: the table of secret fields (`kwire::secrets`) names real
//! schema fields, masking finds each of them at every version, and `kwire proxy` in front
//! of `kwire serve` (and of a scripted broker, for the responses `kwire serve` does not
//! give) writes no secret in any output mode, unless `--show-secrets`.

#![cfg(all(feature = "cli", feature = "reflect"))]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kwire::ApiKey;
use kwire::Direction;
use kwire::dispatch;
use kwire::messages::alter_configs::{AlterConfigsResource, AlterableConfig};
use kwire::messages::alter_user_scram_credentials::ScramCredentialUpsertion;
use kwire::messages::create_topics::{
    CreatableTopic, CreatableTopicConfig, CreatableTopicConfigs, CreatableTopicResult,
};
use kwire::messages::describe_configs::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kwire::messages::describe_delegation_token::DescribedDelegationToken;
use kwire::messages::incremental_alter_configs as iac;
use kwire::messages::*;
use kwire::reflect::{FieldType, StructSchema};
use kwire::secrets::{self, Redaction, SECRET_FIELDS};
use kwire::{AnyBody, List, Str, Versions};

// ---------------------------------------------------------------------------------------
// The table

fn find_field<'s>(s: &'s StructSchema, path: &str) -> Option<&'s kwire::reflect::FieldSchema> {
    let (head, rest) = match path.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (path, None),
    };
    let f = s.fields.iter().find(|f| f.name == head)?;
    let Some(rest) = rest else { return Some(f) };
    let mut ty = &f.ty;
    while let FieldType::Array(inner) = ty {
        ty = inner;
    }
    match ty {
        FieldType::Struct(inner) => find_field(inner, rest),
        _ => None,
    }
}

/// Every entry names a field of its schema, of type bytes or string, and its versions are
/// exactly the message's versions that have the field.
#[test]
fn every_entry_names_a_real_field() {
    assert!(SECRET_FIELDS.len() >= 10);
    for e in SECRET_FIELDS {
        let schema = match e.direction {
            Direction::Request => kwire::reflect::request_schema(e.api_key),
            Direction::Response => kwire::reflect::response_schema(e.api_key),
        };
        let f = find_field(schema.body, e.path)
            .unwrap_or_else(|| panic!("{} {:?}: no field {}", e.api_key.name(), e.direction, e.path));
        assert!(
            matches!(f.ty, FieldType::Bytes | FieldType::String),
            "{} {}: {:?}",
            e.api_key.name(),
            e.path,
            f.ty
        );
        let (lo, hi) = (f.versions.min.max(schema.versions.min), f.versions.max.min(schema.versions.max));
        assert_eq!(e.versions, Versions::new(lo, hi), "{} {:?} {}", e.api_key.name(), e.direction, e.path);
        assert_eq!(secrets::lookup(e.api_key, e.direction, e.path), Some(e));
        assert!(secrets::may_carry_secrets(e.api_key, e.direction));
    }
    assert!(!secrets::may_carry_secrets(ApiKey::Metadata, Direction::Response));
    assert_eq!(
        secrets::lookup(ApiKey::SaslAuthenticate, Direction::Request, "AuthBytes").unwrap().path,
        "AuthBytes"
    );
}

/// Every field of every schema whose name says it is a credential is in the table (so a new
/// schema with such a field fails here until it is listed or rejected in docs/secrets.md).
#[test]
fn credential_like_fields_are_all_listed() {
    const CREDENTIAL_NAMES: &[&str] =
        &["AuthBytes", "Hmac", "Salt", "SaltedPassword", "RequestData", "ResponseData"];
    fn walk(s: &StructSchema, path: String, out: &mut Vec<String>) {
        for f in s.fields {
            let p = if path.is_empty() { f.name.to_string() } else { format!("{path}.{}", f.name) };
            let lower = f.name.to_ascii_lowercase();
            if CREDENTIAL_NAMES.contains(&f.name) || lower.contains("password") || lower.contains("secret") {
                out.push(p.clone());
            }
            let mut ty = &f.ty;
            while let FieldType::Array(inner) = ty {
                ty = inner;
            }
            if let FieldType::Struct(inner) = ty {
                walk(inner, p, out);
            }
        }
    }
    let mut checked = 0;
    for &key in ApiKey::ALL {
        for (direction, schema) in [
            (Direction::Request, kwire::reflect::request_schema(key)),
            (Direction::Response, kwire::reflect::response_schema(key)),
        ] {
            let mut found = Vec::new();
            walk(schema.body, String::new(), &mut found);
            for path in found {
                checked += 1;
                assert!(
                    secrets::lookup(key, direction, &path).is_some(),
                    "{} {direction:?} {path} looks like a credential and is not in SECRET_FIELDS",
                    key.name()
                );
            }
        }
    }
    assert!(checked >= 9, "{checked}");
}

#[test]
fn sensitive_config_names() {
    for name in [
        "ssl.keystore.password",
        "sasl.jaas.config",
        "listener.name.x.scram-sha-256.sasl.jaas.config",
        "ssl.keystore.key",
        "password.encoder.secret",
        "SSL.KEY.PASSWORD",
        "ssl.keystore.certificate.chain",
    ] {
        assert!(secrets::is_sensitive_config_name(name), "{name}");
    }
    for name in ["retention.ms", "cleanup.policy", "ssl.keystore.type", "min.insync.replicas", "key"] {
        assert!(!secrets::is_sensitive_config_name(name), "{name}");
    }
}

// ---------------------------------------------------------------------------------------
// Masking, at every version

const PASSWORD: &str = "pw-Zq8kW2vR5-plain";
const SALT: &[u8] = b"SALT-7f3a9c21e0b4";
const SALTED: &[u8] = b"SALTEDPW-2b8e6d4f0a1c9e7b";
const HMAC: &[u8] = b"HMAC-e3b0c44298fc1c14";
const SERVER_TOKEN: &[u8] = b"r=nonce-9c1e,s=U0FMVC1zZXJ2ZXI=,i=4096";
const CONFIG_SECRET: &str = "keystore-pass-41d8cd98";
const WRAPPED: &[u8] = b"ENVELOPED-REQUEST-0a1b2c";

fn plain_token() -> Vec<u8> {
    format!("\0alice\0{PASSWORD}").into_bytes()
}

/// Every secret the tests plant.
fn planted() -> Vec<Vec<u8>> {
    vec![
        PASSWORD.into(),
        SALT.into(),
        SALTED.into(),
        HMAC.into(),
        SERVER_TOKEN.into(),
        CONFIG_SECRET.into(),
        WRAPPED.into(),
    ]
}

fn request_frame(body: &impl AnyBody, version: i16) -> Vec<u8> {
    let header = kwire::frame::RequestHeader {
        correlation_id: 7,
        client_id: Some("secrets-test"),
        unknown_tagged_fields: &[],
    };
    let mut buf = vec![0u8; dispatch::request_len(body, version, &header).unwrap()];
    dispatch::encode_request_with(body, version, &header, &mut buf).unwrap();
    buf
}

fn response_frame(body: &impl AnyBody, version: i16, correlation_id: i32) -> Vec<u8> {
    let mut buf = vec![0u8; dispatch::response_len(body, version).unwrap()];
    dispatch::encode_response(body, version, correlation_id, &mut buf).unwrap();
    buf
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn request_bodies() -> Vec<(ApiKey, RequestBody<'static>, usize)> {
    let cfg = |name: &'static str, value: &'static str| AlterableConfig {
        name: Str::Borrowed(name),
        value: Some(Str::Borrowed(value)),
        ..Default::default()
    };
    let icfg = |name: &'static str, value: &'static str| iac::AlterableConfig {
        name: Str::Borrowed(name),
        value: Some(Str::Borrowed(value)),
        ..Default::default()
    };
    let token: &'static [u8] = Box::leak(plain_token().into_boxed_slice());
    vec![
        (
            ApiKey::SaslAuthenticate,
            RequestBody::SaslAuthenticate(SaslAuthenticateRequest {
                auth_bytes: List::Borrowed(token),
                ..Default::default()
            }),
            1,
        ),
        (
            ApiKey::AlterUserScramCredentials,
            RequestBody::AlterUserScramCredentials(AlterUserScramCredentialsRequest {
                upsertions: List::Owned(vec![ScramCredentialUpsertion {
                    name: Str::Borrowed("alice"),
                    mechanism: 1,
                    iterations: 4096,
                    salt: List::Borrowed(SALT),
                    salted_password: List::Borrowed(SALTED),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            2,
        ),
        (
            ApiKey::RenewDelegationToken,
            RequestBody::RenewDelegationToken(RenewDelegationTokenRequest {
                hmac: List::Borrowed(HMAC),
                ..Default::default()
            }),
            1,
        ),
        (
            ApiKey::ExpireDelegationToken,
            RequestBody::ExpireDelegationToken(ExpireDelegationTokenRequest {
                hmac: List::Borrowed(HMAC),
                ..Default::default()
            }),
            1,
        ),
        (
            ApiKey::Envelope,
            RequestBody::Envelope(EnvelopeRequest {
                request_data: List::Borrowed(WRAPPED),
                ..Default::default()
            }),
            1,
        ),
        (
            ApiKey::AlterConfigs,
            RequestBody::AlterConfigs(AlterConfigsRequest {
                resources: List::Owned(vec![AlterConfigsResource {
                    resource_type: 4,
                    resource_name: Str::Borrowed("1"),
                    configs: List::Owned(vec![
                        cfg("retention.ms", "1000"),
                        cfg("ssl.keystore.password", CONFIG_SECRET),
                    ]),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            1,
        ),
        (
            ApiKey::IncrementalAlterConfigs,
            RequestBody::IncrementalAlterConfigs(IncrementalAlterConfigsRequest {
                resources: List::Owned(vec![iac::AlterConfigsResource {
                    resource_type: 4,
                    resource_name: Str::Borrowed("1"),
                    configs: List::Owned(vec![
                        icfg("sasl.jaas.config", CONFIG_SECRET),
                        icfg("retention.ms", "1000"),
                    ]),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            1,
        ),
        (
            ApiKey::CreateTopics,
            RequestBody::CreateTopics(CreateTopicsRequest {
                topics: List::Owned(vec![CreatableTopic {
                    name: Str::Borrowed("t"),
                    num_partitions: 1,
                    replication_factor: 1,
                    configs: List::Owned(vec![
                        CreatableTopicConfig {
                            name: Str::Borrowed("x.password"),
                            value: Some(Str::Borrowed(CONFIG_SECRET)),
                            ..Default::default()
                        },
                        CreatableTopicConfig {
                            name: Str::Borrowed("cleanup.policy"),
                            value: Some(Str::Borrowed("compact")),
                            ..Default::default()
                        },
                    ]),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            1,
        ),
    ]
}

fn response_bodies() -> Vec<(ApiKey, ResponseBody<'static>, usize)> {
    vec![
        (
            ApiKey::SaslAuthenticate,
            ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
                auth_bytes: List::Borrowed(SERVER_TOKEN),
                ..Default::default()
            }),
            1,
        ),
        (
            ApiKey::CreateDelegationToken,
            ResponseBody::CreateDelegationToken(CreateDelegationTokenResponse {
                token_id: Str::Borrowed("token-1"),
                hmac: List::Borrowed(HMAC),
                ..Default::default()
            }),
            1,
        ),
        (
            ApiKey::DescribeDelegationToken,
            ResponseBody::DescribeDelegationToken(DescribeDelegationTokenResponse {
                tokens: List::Owned(vec![
                    DescribedDelegationToken {
                        token_id: Str::Borrowed("t1"),
                        hmac: List::Borrowed(HMAC),
                        ..Default::default()
                    },
                    DescribedDelegationToken {
                        token_id: Str::Borrowed("t2"),
                        hmac: List::Borrowed(HMAC),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }),
            2,
        ),
        (
            ApiKey::Envelope,
            ResponseBody::Envelope(EnvelopeResponse {
                response_data: Some(List::Borrowed(WRAPPED)),
                ..Default::default()
            }),
            1,
        ),
        (
            ApiKey::CreateTopics,
            ResponseBody::CreateTopics(CreateTopicsResponse {
                topics: List::Owned(vec![CreatableTopicResult {
                    name: Str::Borrowed("t"),
                    configs: Some(List::Owned(vec![
                        CreatableTopicConfigs {
                            name: Str::Borrowed("custom"),
                            value: Some(Str::Borrowed(CONFIG_SECRET)),
                            is_sensitive: true,
                            ..Default::default()
                        },
                        CreatableTopicConfigs {
                            name: Str::Borrowed("cleanup.policy"),
                            value: Some(Str::Borrowed("delete")),
                            ..Default::default()
                        },
                    ])),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            1,
        ),
        (
            ApiKey::DescribeConfigs,
            ResponseBody::DescribeConfigs(DescribeConfigsResponse {
                results: List::Owned(vec![DescribeConfigsResult {
                    resource_type: 4,
                    resource_name: Str::Borrowed("1"),
                    configs: List::Owned(vec![
                        DescribeConfigsResourceResult {
                            name: Str::Borrowed("ssl.key.password"),
                            value: Some(Str::Borrowed(CONFIG_SECRET)),
                            synonyms: List::Owned(vec![DescribeConfigsSynonym {
                                name: Str::Borrowed("listener.name.a.ssl.key.password"),
                                value: Some(Str::Borrowed(CONFIG_SECRET)),
                                source: 1,
                                ..Default::default()
                            }]),
                            ..Default::default()
                        },
                        DescribeConfigsResourceResult {
                            name: Str::Borrowed("num.io.threads"),
                            value: Some(Str::Borrowed("8")),
                            ..Default::default()
                        },
                    ]),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            // Synonyms exist from version 1; the test body has two secrets there.
            2,
        ),
    ]
}

/// Checks one masked copy: same length, every planted secret gone, only secret bytes
/// changed (to `*`), and the copy still parses.
fn check_masked(what: &str, frame: &[u8], masked: &[u8], r: Redaction, fields: usize) {
    assert_eq!(masked.len(), frame.len(), "{what}");
    for s in planted() {
        assert!(!contains(masked, &s), "{what}: {:?} left in the masked copy", String::from_utf8_lossy(&s));
    }
    let changed = frame.iter().zip(masked).filter(|(a, b)| a != b).count();
    assert!(masked.iter().zip(frame).all(|(m, f)| m == f || *m == secrets::MASK), "{what}");
    let Redaction::Masked { fields: n, bytes } = r else { panic!("{what}: {r:?}") };
    assert_eq!(n, fields, "{what}");
    assert!(changed <= bytes && changed > 0, "{what}: {changed} changed, {bytes} masked");
}

#[test]
fn masking_finds_every_secret_at_every_version() {
    let mut seen: Vec<(ApiKey, Direction)> = Vec::new();
    for (key, body, fields) in request_bodies() {
        for v in key.request_versions().min..=key.request_versions().max {
            let frame = request_frame(&body, v);
            let frame = &frame[4..];
            let (masked, r) = secrets::redact_request(frame);
            check_masked(&format!("{} request v{v}", key.name()), frame, &masked, r, fields);
            dispatch::parse_request(&masked).expect("the masked copy parses");
        }
        seen.push((key, Direction::Request));
    }
    for (key, body, fields) in response_bodies() {
        for v in key.response_versions().min..=key.response_versions().max {
            // Fields that a version lacks are not encoded (CreateTopics configs before v5,
            // DescribeConfigs synonyms before v1).
            let expected = match (key, v) {
                (ApiKey::CreateTopics, v) if v < 5 => continue,
                (ApiKey::DescribeConfigs, 0) => 1,
                _ => fields,
            };
            let frame = response_frame(&body, v, 7);
            let frame = &frame[4..];
            let (masked, r) = secrets::redact_response(frame, key, v);
            check_masked(&format!("{} response v{v}", key.name()), frame, &masked, r, expected);
            dispatch::parse_response(&masked, key, v).expect("the masked copy parses");
        }
        seen.push((key, Direction::Response));
    }
    // Every API and direction of the table was exercised.
    for e in SECRET_FIELDS {
        assert!(
            seen.contains(&(e.api_key, e.direction)),
            "{} {:?} not exercised",
            e.api_key.name(),
            e.direction
        );
    }
}

#[test]
fn unreadable_frames_are_masked_whole() {
    let frame = request_frame(
        &SaslAuthenticateRequest { auth_bytes: List::Owned(plain_token()), ..Default::default() },
        2,
    );
    let frame = &frame[4..];
    // Truncated: masked whole, but the API key, version and correlation id.
    let cut = &frame[..frame.len() - 1];
    let (masked, r) = secrets::redact_request(cut);
    assert_eq!(r, Redaction::Whole { bytes: cut.len() - 8 });
    assert_eq!(&masked[..8], &cut[..8]);
    assert!(!contains(&masked, PASSWORD.as_bytes()));
    // A raw PLAIN token read as a request (SaslHandshake v0 flow): nothing is kept.
    let token = plain_token();
    let (masked, r) = secrets::redact_request(&token);
    assert!(matches!(r, Redaction::Whole { .. }), "{r:?}");
    assert!(!contains(&masked, PASSWORD.as_bytes()));
    // A response that answers nothing known.
    let resp = response_frame(
        &SaslAuthenticateResponse { auth_bytes: List::Borrowed(SERVER_TOKEN), ..Default::default() },
        2,
        3,
    );
    let mut out = vec![0; resp.len() - 4];
    assert!(matches!(secrets::mask_unknown_response(&resp[4..], &mut out), Redaction::Whole { .. }));
    assert!(!contains(&out, SERVER_TOKEN));
    // A frame without secrets is left as it is.
    let frame = request_frame(&ApiVersionsRequest::default(), 3);
    let (same, r) = secrets::redact_request(&frame[4..]);
    assert_eq!((r, &same[..]), (Redaction::Clean, &frame[4..]));
}

// ---------------------------------------------------------------------------------------
// Through `kwire proxy`

fn kwire() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kwire"))
}

/// A child process whose first stdout line was read; the rest is collected when it stops.
struct Running {
    child: Child,
    first: String,
    rest: std::thread::JoinHandle<Vec<u8>>,
}

fn start(mut cmd: Command) -> Running {
    let mut child =
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).stdin(Stdio::null()).spawn().expect("kwire starts");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).expect("first line");
    let rest = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    Running { child, first, rest }
}

impl Running {
    fn addr(&self) -> String {
        let at = self.first.find("listening on ").expect(&self.first) + "listening on ".len();
        self.first[at..].split([',', ' ', '\n']).next().unwrap().to_string()
    }

    /// Stops it with SIGINT (the proxy then prints its summary); returns stdout + stderr.
    fn stop(mut self) -> Vec<u8> {
        let _ = Command::new("kill").arg("-INT").arg(self.child.id().to_string()).status();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut all = self.first.into_bytes();
        all.extend(self.rest.join().unwrap());
        let mut err = Vec::new();
        let _ = self.child.stderr.take().unwrap().read_to_end(&mut err);
        all.extend(err);
        all
    }
}

fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size).ok()?;
    let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
    s.read_exact(&mut frame).ok()?;
    Some(frame)
}

fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect to the proxy");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// What a client does through the proxy in front of `kwire serve` (SASL/PLAIN by
/// SaslHandshake v1 + SaslAuthenticate, and by SaslHandshake v0 + a raw token; then a
/// SCRAM upsertion and a delegation-token renewal, which `kwire serve` does not serve and
/// answers by closing the connection).
fn talk_to_serve(addr: &str) {
    let mut s = connect(addr);
    let hs = SaslHandshakeRequest { mechanism: Str::Borrowed("PLAIN") };
    s.write_all(&request_frame(&hs, 1)).unwrap();
    read_frame(&mut s).expect("handshake v1 answered");
    let auth = SaslAuthenticateRequest { auth_bytes: List::Owned(plain_token()), ..Default::default() };
    s.write_all(&request_frame(&auth, 2)).unwrap();
    let answer = read_frame(&mut s).expect("authenticate answered");
    let resp = dispatch::parse_response(&answer, ApiKey::SaslAuthenticate, 2).unwrap();
    let ResponseBodyView::SaslAuthenticate(r) = resp.body else { unreachable!() };
    assert_eq!(r.error_code(), 0, "kwire serve accepts alice's password");

    // SaslHandshake v0: the token goes bare, the answer is an empty bare frame.
    let mut s = connect(addr);
    s.write_all(&request_frame(&hs, 0)).unwrap();
    read_frame(&mut s).expect("handshake v0 answered");
    let token = plain_token();
    s.write_all(&(token.len() as i32).to_be_bytes()).unwrap();
    s.write_all(&token).unwrap();
    assert_eq!(read_frame(&mut s).expect("the broker's token"), Vec::<u8>::new());
    // Kafka requests again after the exchange.
    s.write_all(&request_frame(&ApiVersionsRequest::default(), 3)).unwrap();
    read_frame(&mut s).expect("ApiVersions answered after the v0 exchange");

    for (key, body) in request_bodies().into_iter().map(|(k, b, _)| (k, b)) {
        if key == ApiKey::SaslAuthenticate {
            continue;
        }
        let mut s = connect(addr);
        s.write_all(&request_frame(&body, key.request_versions().max)).unwrap();
        let _ = read_frame(&mut s); // closed by kwire serve
    }
}

/// A broker that answers every request with a fixed response carrying secrets (the
/// responses `kwire serve` does not give). Runs until the test process ends.
fn scripted_broker() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut s) = conn else { continue };
            std::thread::spawn(move || {
                while let Some(frame) = read_frame(&mut s) {
                    let Ok(req) = dispatch::parse_request(&frame) else { return };
                    let (key, v, cid) =
                        (req.body.api_key(), req.header.api_version(), req.header.correlation_id());
                    let Some((_, body, _)) = response_bodies().into_iter().find(|(k, _, _)| *k == key) else {
                        return;
                    };
                    if s.write_all(&response_frame(&body, v, cid)).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// Sends each request of [`response_bodies`]' APIs through the proxy to the scripted broker.
fn talk_to_scripted(addr: &str) {
    let mut s = connect(addr);
    let auth = SaslAuthenticateRequest { auth_bytes: List::Owned(plain_token()), ..Default::default() };
    let requests: Vec<(ApiKey, Vec<u8>)> = vec![
        (ApiKey::SaslAuthenticate, request_frame(&auth, 2)),
        (ApiKey::CreateDelegationToken, request_frame(&CreateDelegationTokenRequest::default(), 3)),
        (ApiKey::DescribeDelegationToken, request_frame(&DescribeDelegationTokenRequest::default(), 3)),
        (
            ApiKey::Envelope,
            request_frame(
                &EnvelopeRequest { request_data: List::Borrowed(WRAPPED), ..Default::default() },
                0,
            ),
        ),
        (ApiKey::CreateTopics, request_frame(&CreateTopicsRequest::default(), 7)),
        (ApiKey::DescribeConfigs, request_frame(&DescribeConfigsRequest::default(), 4)),
    ];
    for (key, frame) in requests {
        s.write_all(&frame).unwrap();
        let answer = read_frame(&mut s).unwrap_or_else(|| panic!("{} answered", key.name()));
        // The client gets the secrets: the proxy masks only its own outputs.
        assert!(
            planted().iter().any(|p| contains(&answer, p)),
            "{}: the answer carries its secret",
            key.name()
        );
    }
}

/// The forms a secret can take in an output: raw, hex (both cases), base64 at each of the
/// three alignments of its bytes.
fn forms(secret: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine as _;
    let mut out = vec![secret.to_vec()];
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    out.push(hex.clone().into_bytes());
    out.push(hex.to_uppercase().into_bytes());
    for skip in 0..3 {
        let part = &secret[skip..];
        let part = &part[..part.len() / 3 * 3];
        if part.len() >= 9 {
            out.push(base64::engine::general_purpose::STANDARD.encode(part).into_bytes());
        }
    }
    out
}

fn files_under(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
}

/// Where each planted secret shows, in any form, in the outputs and recorded files.
fn leaks(outputs: &[(String, Vec<u8>)]) -> Vec<String> {
    let mut found = Vec::new();
    for secret in planted() {
        for form in forms(&secret) {
            for (name, bytes) in outputs {
                if contains(bytes, &form) {
                    found.push(format!(
                        "{:?} as {:?} in {name}",
                        String::from_utf8_lossy(&secret),
                        String::from_utf8_lossy(&form)
                    ));
                }
            }
        }
    }
    found
}

/// Runs both conversations through a proxy started with `args`; returns every output.
fn through_proxy(args: &[&str], record: Option<&Path>) -> Vec<(String, Vec<u8>)> {
    let dir = tempdir("users");
    let catalog = dir.join("users.toml");
    std::fs::write(&catalog, format!("[[users]]\nname = \"alice\"\npassword = \"{PASSWORD}\"\n")).unwrap();
    let mut serve_cmd = kwire();
    serve_cmd.args(["serve", "--listen", "127.0.0.1:0", "--verbose", "--users"]).arg(&catalog);
    let serve = start(serve_cmd);
    let mut outputs = Vec::new();
    for (n, upstream) in [serve.addr(), scripted_broker()].into_iter().enumerate() {
        let mut cmd = kwire();
        cmd.args(["proxy", "--listen", "127.0.0.1:0", "--upstream", &upstream]).args(args);
        if let Some(r) = record {
            cmd.arg("--record").arg(r.join(n.to_string()));
        }
        let proxy = start(cmd);
        if n == 0 {
            talk_to_serve(&proxy.addr());
        } else {
            talk_to_scripted(&proxy.addr());
        }
        // Let the log thread write what it has.
        std::thread::sleep(Duration::from_millis(200));
        outputs.push((format!("proxy {args:?} output ({n})"), proxy.stop()));
    }
    outputs.push(("kwire serve output".into(), serve.stop()));
    if let Some(r) = record {
        let mut files = Vec::new();
        files_under(r, &mut files);
        assert!(files.len() > 10, "{} files recorded", files.len());
        outputs.extend(files.into_iter().map(|(p, b)| (p.display().to_string(), b)));
    }
    outputs
}

fn tempdir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("secrets-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn no_secret_in_any_output_mode() {
    let modes: &[&[&str]] =
        &[&[], &["--format", "json"], &["--verify"], &["--quiet"], &["--format", "json", "--verify"]];
    for (i, mode) in modes.iter().enumerate() {
        // Every other mode records too.
        let record = (i % 2 == 0).then(|| tempdir(&format!("record-{i}")));
        let outputs = through_proxy(mode, record.as_deref());
        let leaks = leaks(&outputs);
        assert!(leaks.is_empty(), "proxy {mode:?}: {leaks:#?}");
        let all: Vec<u8> = outputs.iter().flat_map(|(_, b)| b.clone()).collect();
        let text = String::from_utf8_lossy(&all);
        assert!(!text.contains("panicked"), "{text}");
        if !mode.contains(&"--quiet") {
            // The v0 tokens are passed through and said to be.
            assert!(
                text.contains("SASL tokens (v0 handshake)") || text.contains("\"saslToken\":true"),
                "proxy {mode:?}: no line for the v0 tokens"
            );
        }
        if mode.contains(&"json") {
            assert!(
                text.contains("\"api\":\"SaslAuthenticate\""),
                "the SaslAuthenticate frames are logged, masked"
            );
            assert!(text.contains("\"api\":\"DescribeDelegationToken\""));
        }
        if let Some(r) = record {
            let mut files = Vec::new();
            files_under(&r, &mut files);
            assert!(
                files.iter().any(|(p, _)| p.to_string_lossy().ends_with("saslauthenticate_v2_1.masked.txt"))
            );
            let _ = std::fs::remove_dir_all(r);
        }
    }
}

/// `--show-secrets` does show them (so the test above can fail), with a warning.
#[test]
fn show_secrets_shows_them() {
    let record = tempdir("show");
    let outputs = through_proxy(&["--format", "json", "--show-secrets"], Some(&record));
    let leaks = leaks(&outputs);
    let text: String = outputs.iter().map(|(_, b)| String::from_utf8_lossy(b).into_owned()).collect();
    assert!(text.contains("WARNING: --show-secrets"), "a warning on stderr");
    for secret in [PASSWORD.as_bytes(), SALT, SALTED, HMAC, SERVER_TOKEN, CONFIG_SECRET.as_bytes()] {
        let shown = String::from_utf8_lossy(secret).into_owned();
        assert!(leaks.iter().any(|l| l.starts_with(&format!("{shown:?}"))), "{shown} not shown: {leaks:#?}");
    }
    // The raw v0 tokens are never shown, not even now: the only PLAIN tokens shown are the
    // SaslAuthenticate ones (JSON base64 and recorded hex).
    assert!(text.contains("\"saslToken\":true,\"size\":") && text.contains("\"shown\":false"));
    let _ = std::fs::remove_dir_all(record);
}

// ---------------------------------------------------------------------------------------
// `kwire decode`

/// Runs `kwire decode` on `frame` (binary, size prefix included) with `args`; returns its
/// stdout, its stderr and whether it succeeded.
fn decode(frame: &[u8], args: &[&str], name: &str) -> (Vec<u8>, String, bool) {
    let dir = tempdir(&format!("decode-{name}"));
    let file = dir.join("frame.bin");
    std::fs::write(&file, frame).unwrap();
    let out = kwire().arg("decode").arg("--binary").args(args).arg(&file).output().expect("kwire runs");
    let _ = std::fs::remove_dir_all(dir);
    (out.stdout, String::from_utf8_lossy(&out.stderr).into_owned(), out.status.success())
}

/// Every secret of every listed message, in every output of `kwire decode`, is masked by
/// default (with a note), and printed with `--show-secrets`.
#[test]
fn decode_masks_secrets_unless_asked() {
    let mut frames: Vec<(String, Vec<u8>, Vec<&str>)> = Vec::new();
    for (key, body, _) in request_bodies() {
        let v = key.request_versions().max;
        frames.push((format!("{}-request", key.name()), request_frame(&body, v), Vec::new()));
    }
    let mut responses = Vec::new();
    for (key, body, _) in response_bodies() {
        let v = key.response_versions().max;
        responses.push((key, v, response_frame(&body, v, 7)));
    }
    let versions: Vec<String> = responses.iter().map(|(_, v, _)| v.to_string()).collect();
    for ((key, _, frame), version) in responses.iter().zip(&versions) {
        frames.push((
            format!("{}-response", key.name()),
            frame.clone(),
            vec!["--api-key", key.name(), "--api-version", version],
        ));
    }
    for (name, frame, extra) in &frames {
        for format in ["tree", "json", "hex"] {
            let mut args = extra.clone();
            args.extend(["--format", format, "--color", "never"]);
            let (stdout, stderr, ok) = decode(frame, &args, name);
            assert!(ok, "{name} {format}: {stderr}");
            let found =
                leaks(&[(format!("{name} {format}"), stdout), ("stderr".into(), stderr.clone().into())]);
            assert!(found.is_empty(), "kwire decode {name} --format {format}: {found:#?}");
            assert!(stderr.contains("masked with '*'"), "{name} {format}: no note on stderr: {stderr}");
        }
        // The tree and the hex dump cut long values and split bytes over rows; the JSON
        // holds every byte, so it shows that the checks above can fail.
        let mut args = extra.clone();
        args.extend(["--format", "json", "--show-secrets"]);
        let (shown, stderr, ok) = decode(frame, &args, name);
        assert!(ok && !leaks(&[(name.clone(), shown)]).is_empty(), "{name}: --show-secrets shows a secret");
        assert!(!stderr.contains("masked"), "{stderr}");
    }
    // A SaslAuthenticate request that does not decode (its body cut short) is masked whole
    // after the header's first fields; a truncated Metadata request is shown as given.
    let sasl = frames.iter().find(|(n, ..)| n == "SaslAuthenticate-request").unwrap().1.clone();
    let mut cut = sasl[..sasl.len() - 3].to_vec();
    let size = (cut.len() - 4) as i32;
    cut[..4].copy_from_slice(&size.to_be_bytes());
    let hex = ["--format", "hex", "--color", "never"];
    let (stdout, stderr, ok) = decode(&cut, &hex, "cut");
    assert!(!ok, "a truncated frame is an error");
    assert!(leaks(&[("cut".into(), stdout.clone())]).is_empty(), "{stderr}");
    assert!(stderr.contains("does not decode and its API can carry secrets"), "{stderr}");
    // The error is the given frame's (the token's true length), and the header is shown.
    assert!(stderr.contains("body.authBytes: truncated"), "{stderr}");
    assert!(String::from_utf8_lossy(&stdout).contains("client_id"));
    let (shown, stderr_shown, _) = decode(&cut, &[&hex[..], &["--show-secrets"]].concat(), "cut");
    assert_ne!(shown, stdout, "--show-secrets shows the bytes");
    assert!(!stderr_shown.contains("masked") && !stderr_shown.contains("shown as '*'"));
    let mut metadata = request_frame(&kwire::messages::MetadataRequest::default(), 12);
    metadata.pop(); // the body's tagged-field count cut off
    let size = (metadata.len() - 4) as i32;
    metadata[..4].copy_from_slice(&size.to_be_bytes());
    let (_, stderr, ok) = decode(&metadata, &hex, "metadata");
    assert!(!ok && !stderr.contains("'*'"), "a malformed Metadata request is shown as given: {stderr}");
    // Frames cut inside the header of an API that carries secrets: masked, no panic.
    for n in 0..=9 {
        let mut short = cut[..4 + n].to_vec();
        short[..4].copy_from_slice(&(n as i32).to_be_bytes());
        let (_, stderr, ok) = decode(&short, &hex, "header");
        assert!(!ok && !stderr.contains("panicked"), "{n} header bytes: {stderr}");
    }
    assert!(!ok && !stderr.contains("'*'"), "a malformed Metadata request is shown as given: {stderr}");
}
