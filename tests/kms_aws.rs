//! `kwire::proxy::encrypt::AwsKms` against a real AWS-KMS-compatible server: moto in server
//! mode (installed by tests/kms/setup.sh into target/kms), started here on a free port, over
//! HTTP and over HTTPS with a certificate of a test CA.
//!
//! moto checks every request's SigV4 signature here (`INITIAL_NO_AUTH_ACTION_COUNT`, see
//! tests/kms/moto_keys.py), so a request signed wrongly fails. What is covered: data keys
//! made and unwrapped under a key id, an ARN and an alias; a wrong KEK, a tampered blob, an
//! unknown KEK and a wrong secret key each refused with their error; a service paused
//! (no answer: a time-out) and stopped (refused connections) each retriable, and calls that
//! work again once it is back. And `kwire proxy --encrypt ... --kms aws=URL` in front of
//! `kwire::broker`: the broker holds no plaintext, and a new proxy process reads what the
//! one before it wrote.

mod common;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use kwire::proxy::encrypt::{AwsCredentials, AwsKms, AwsKmsOptions, Kms, KmsError};
use serde_json::Value;

use common::process::run;
use common::root;

fn kms_dir() -> PathBuf {
    root().join("target/kms")
}

/// Installs moto once per test process (tests/kms/setup.sh), unless target/kms/ready is there.
fn setup() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        if kms_dir().join("ready").exists() {
            return;
        }
        let mut cmd = Command::new("bash");
        cmd.arg(root().join("tests/kms/setup.sh"));
        let out = run(cmd, "tests/kms/setup.sh", Duration::from_secs(900));
        assert!(out.ok, "tests/kms/setup.sh failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    });
}

fn block_on<T>(f: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// What tests/kms/moto_keys.py made on a fresh server.
struct Keys {
    region: String,
    access_key_id: String,
    secret_access_key: String,
    /// A session of a role: temporary credentials with a session token.
    session_key_id: String,
    session_secret: String,
    session_token: String,
    a_id: String,
    a_arn: String,
    b_id: String,
    alias: String,
}

/// A moto server of this test, stopped when dropped.
struct Moto {
    child: Option<Child>,
    port: u16,
    /// `-c CERT -k KEY`: HTTPS.
    tls: Option<(PathBuf, PathBuf)>,
    log: PathBuf,
}

impl Moto {
    fn start(port: u16, tls: Option<(PathBuf, PathBuf)>, log: PathBuf) -> Moto {
        setup();
        let mut moto = Moto { child: None, port, tls, log };
        moto.restart();
        moto
    }

    /// Starts the server (again, after `stop`) on the same port; it knows no keys.
    fn restart(&mut self) {
        assert!(self.child.is_none());
        let log = std::fs::File::create(&self.log).unwrap();
        let mut cmd = Command::new(kms_dir().join("venv/bin/moto_server"));
        cmd.args(["-H", "127.0.0.1", "-p", &self.port.to_string()])
            .env("INITIAL_NO_AUTH_ACTION_COUNT", "5")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        if let Some((cert, key)) = &self.tls {
            cmd.arg("-c").arg(cert).arg("-k").arg(key);
        }
        let mut child = cmd.spawn().expect("moto_server starts");
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("moto_server exited ({status}):\n{}", self.log_text());
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "moto_server not listening:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        self.child = Some(child);
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn endpoint(&self, host: &str) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{host}:{}", self.port)
    }

    /// A user, its access key and two KEKs, made through boto3 (tests/kms/moto_keys.py).
    fn keys(&self, ca: Option<&Path>) -> Keys {
        let mut cmd = Command::new(kms_dir().join("venv/bin/python"));
        cmd.arg(root().join("tests/kms/moto_keys.py")).arg(self.endpoint("localhost"));
        if let Some(ca) = ca {
            cmd.env("AWS_CA_BUNDLE", ca);
        }
        let out = run(cmd, "tests/kms/moto_keys.py", Duration::from_secs(120));
        assert!(out.ok, "moto_keys.py failed:\n{}\nserver log:\n{}", out.stderr, self.log_text());
        let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
        let s = |k: &str| v[k].as_str().unwrap_or_else(|| panic!("{k} in {v}")).to_owned();
        Keys {
            region: s("region"),
            access_key_id: s("access_key_id"),
            secret_access_key: s("secret_access_key"),
            session_key_id: s("session_key_id"),
            session_secret: s("session_secret"),
            session_token: s("session_token"),
            a_id: s("a_id"),
            a_arn: s("a_arn"),
            b_id: s("b_id"),
            alias: s("alias"),
        }
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().unwrap().id().to_string();
        let status = Command::new("kill").args([signal, &pid]).status().unwrap();
        assert!(status.success(), "kill {signal} {pid}");
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // A paused server is killed all the same; SIGCONT lets it go at once.
            let _ = Command::new("kill").args(["-CONT", &child.id().to_string()]).status();
        }
        self.stop();
    }
}

fn client(endpoint: &str, keys: &Keys, secret: &str, timeout: Duration, ca: Option<&Path>) -> AwsKms {
    let mut options = AwsKmsOptions::new(&keys.region, AwsCredentials::new(&keys.access_key_id, secret));
    options.endpoint = Some(endpoint.to_owned());
    options.timeout = timeout;
    options.ca_file = ca.map(Path::to_owned);
    AwsKms::new(options).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("kms-aws-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// No error text carries the secret key.
fn no_secret(err: &KmsError, keys: &Keys) {
    let text = format!("{err} {err:?}");
    assert!(!text.contains(&keys.secret_access_key), "{text}");
}

#[test]
fn data_keys_are_made_and_unwrapped_and_bad_ones_refused() {
    let dir = temp_dir("http");
    let moto = Moto::start(free_port(), None, dir.join("moto.log"));
    let keys = moto.keys(None);
    let endpoint = moto.endpoint("127.0.0.1");
    let kms = client(&endpoint, &keys, &keys.secret_access_key, Duration::from_secs(10), None);
    block_on(async {
        // The KEK by alias, by id and by ARN; each key unwraps under each name of its KEK.
        let mut seen = Vec::new();
        for name in [&keys.alias, &keys.a_id, &keys.a_arn] {
            let key = kms
                .generate_data_key(name)
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}\n{}", moto.log_text()));
            assert!(!key.wrapped.is_empty());
            assert_ne!(key.plain.bytes(), &[0u8; 32]);
            for unwrap_as in [&keys.a_id, &keys.a_arn, &keys.alias] {
                let plain = kms.unwrap_data_key(unwrap_as, &key.wrapped).await;
                assert_eq!(plain.as_ref(), Ok(&key.plain), "made under {name}, unwrapped under {unwrap_as}");
            }
            seen.push(key);
        }
        assert_ne!(seen[0].plain, seen[1].plain);
        assert_ne!(seen[0].wrapped, seen[1].wrapped);
        let key = &seen[0];

        // The other KEK: moto says AccessDeniedException (AWS: IncorrectKeyException).
        let err = kms.unwrap_data_key(&keys.b_id, &key.wrapped).await.unwrap_err();
        assert!(matches!(err, KmsError::UnknownKey(_) | KmsError::BadWrappedKey), "{err:?}");
        assert!(!err.is_retriable());

        // A key of the other KEK does not unwrap under the first either.
        let other = kms.generate_data_key(&keys.b_id).await.unwrap();
        assert_ne!(other.plain, key.plain);
        assert_eq!(kms.unwrap_data_key(&keys.b_id, &other.wrapped).await, Ok(other.plain.clone()));
        assert!(kms.unwrap_data_key(&keys.a_id, &other.wrapped).await.is_err());

        // Tampered blobs. The start names the KEK (in moto's blobs and AWS's): a bit flipped
        // there names another key, refused as such or as a bad blob, never unwrapped.
        let mut tampered = key.wrapped.clone();
        tampered[0] ^= 0x01;
        let err = kms.unwrap_data_key(&keys.a_id, &tampered).await.unwrap_err();
        assert!(matches!(err, KmsError::UnknownKey(_) | KmsError::BadWrappedKey), "{err:?}");
        // A bit flipped in the sealed key or its tag, in the middle and at the end; cut short.
        for at in [key.wrapped.len() / 2, key.wrapped.len() - 1] {
            let mut tampered = key.wrapped.clone();
            tampered[at] ^= 0x01;
            let got = kms.unwrap_data_key(&keys.a_id, &tampered).await;
            assert_eq!(got, Err(KmsError::BadWrappedKey), "bit flipped at {at} of {}", key.wrapped.len());
        }
        let got = kms.unwrap_data_key(&keys.a_id, &key.wrapped[..key.wrapped.len() / 2]).await;
        assert_eq!(got, Err(KmsError::BadWrappedKey));

        // Unknown KEKs.
        for name in ["alias/no-such-key", "11111111-2222-3333-4444-555555555555"] {
            let err = kms.generate_data_key(name).await.unwrap_err();
            assert_eq!(err, KmsError::UnknownKey(name.to_owned()));
            let err = kms.unwrap_data_key(name, &key.wrapped).await.unwrap_err();
            assert!(matches!(err, KmsError::UnknownKey(_) | KmsError::BadWrappedKey), "{name}: {err:?}");
        }
    });

    // A wrong secret key: moto refuses the signature; not retriable, and not in the error.
    let wrong = client(&endpoint, &keys, "not-the-secret-key", Duration::from_secs(10), None);
    let err = block_on(wrong.generate_data_key(&keys.alias)).unwrap_err();
    assert!(matches!(&err, KmsError::Protocol(why) if why.contains("SignatureDoesNotMatch")), "{err:?}");
    no_secret(&err, &keys);
    // And an access key the server does not know.
    let mut options = AwsKmsOptions::new(&keys.region, AwsCredentials::new("AKIAUNKNOWNKWIRE0000", "x"));
    options.endpoint = Some(endpoint.clone());
    let stranger = AwsKms::new(options).unwrap();
    let err = block_on(stranger.generate_data_key(&keys.alias)).unwrap_err();
    assert!(matches!(err, KmsError::Protocol(_)), "{err:?}");
    assert!(!format!("{kms:?}").contains(&keys.secret_access_key));

    // Temporary credentials: a role session's key, secret and token; moto checks the token.
    let session = |token: Option<&str>| {
        let mut credentials = AwsCredentials::new(&keys.session_key_id, &keys.session_secret);
        if let Some(token) = token {
            credentials = credentials.with_session_token(token);
        }
        let mut options = AwsKmsOptions::new(&keys.region, credentials);
        options.endpoint = Some(endpoint.clone());
        AwsKms::new(options).unwrap()
    };
    let temporary = session(Some(&keys.session_token));
    let key = block_on(temporary.generate_data_key(&keys.alias))
        .unwrap_or_else(|e| panic!("{e}\n{}", moto.log_text()));
    assert_eq!(block_on(temporary.unwrap_data_key(&keys.a_id, &key.wrapped)), Ok(key.plain.clone()));
    assert!(!format!("{temporary:?}").contains(&keys.session_token));
    for token in [None, Some("not-the-token")] {
        let err = block_on(session(token).generate_data_key(&keys.alias)).unwrap_err();
        assert!(matches!(err, KmsError::Protocol(_)), "{token:?}: {err:?}");
        assert!(!format!("{err} {err:?}").contains(&keys.session_token));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_outage_is_retriable_and_calls_work_once_the_service_is_back() {
    let dir = temp_dir("outage");
    let mut moto = Moto::start(free_port(), None, dir.join("moto.log"));
    let keys = moto.keys(None);
    let endpoint = moto.endpoint("127.0.0.1");
    let kms = client(&endpoint, &keys, &keys.secret_access_key, Duration::from_secs(2), None);
    let key = block_on(kms.generate_data_key(&keys.alias)).unwrap();

    // Paused: connections are accepted by the kernel, nothing answers; the time limit holds.
    moto.signal("-STOP");
    let start = Instant::now();
    let err = block_on(kms.unwrap_data_key(&keys.alias, &key.wrapped)).unwrap_err();
    let waited = start.elapsed();
    assert!(err.is_retriable(), "{err:?}");
    assert!(waited >= Duration::from_millis(1900) && waited < Duration::from_secs(8), "{waited:?}");
    let err = block_on(kms.generate_data_key(&keys.alias)).unwrap_err();
    assert!(err.is_retriable(), "{err:?}");
    no_secret(&err, &keys);

    // Back: the same keys, the old wrapped key unwraps.
    moto.signal("-CONT");
    assert_eq!(block_on(kms.unwrap_data_key(&keys.alias, &key.wrapped)), Ok(key.plain.clone()));

    // Stopped: connections refused, at once.
    moto.stop();
    let start = Instant::now();
    let err = block_on(kms.generate_data_key(&keys.alias)).unwrap_err();
    assert!(err.is_retriable(), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    let err = block_on(kms.unwrap_data_key(&keys.alias, &key.wrapped)).unwrap_err();
    assert!(matches!(err, KmsError::Unavailable(_)), "{err:?}");

    // Started again on the same port: moto keeps nothing, so it has new users and keys; the
    // same endpoint works with them.
    moto.restart();
    let keys = moto.keys(None);
    let kms = client(&endpoint, &keys, &keys.secret_access_key, Duration::from_secs(2), None);
    let again = block_on(kms.generate_data_key(&keys.alias)).unwrap();
    assert_eq!(block_on(kms.unwrap_data_key(&keys.a_id, &again.wrapped)), Ok(again.plain.clone()));
    // The old wrapped key's KEK is gone with the old server.
    assert!(block_on(kms.unwrap_data_key(&keys.alias, &key.wrapped)).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn https_endpoints_are_checked_against_the_ca_given() {
    let dir = temp_dir("https");
    let (ca, cert, key) = common::tls::ca_and_server(&["localhost"]);
    let (other_ca, _, _) = common::tls::ca_and_server(&["localhost"]);
    for (name, pem) in [("ca.pem", &ca), ("cert.pem", &cert), ("key.pem", &key), ("other-ca.pem", &other_ca)]
    {
        std::fs::write(dir.join(name), pem).unwrap();
    }
    let moto =
        Moto::start(free_port(), Some((dir.join("cert.pem"), dir.join("key.pem"))), dir.join("moto.log"));
    let keys = moto.keys(Some(&dir.join("ca.pem")));
    let endpoint = moto.endpoint("localhost");
    let kms =
        client(&endpoint, &keys, &keys.secret_access_key, Duration::from_secs(10), Some(&dir.join("ca.pem")));
    block_on(async {
        let key =
            kms.generate_data_key(&keys.alias).await.unwrap_or_else(|e| panic!("{e}\n{}", moto.log_text()));
        assert_eq!(kms.unwrap_data_key(&keys.a_id, &key.wrapped).await, Ok(key.plain.clone()));
        let mut tampered = key.wrapped.clone();
        tampered[10] ^= 0x80;
        assert_eq!(kms.unwrap_data_key(&keys.a_id, &tampered).await, Err(KmsError::BadWrappedKey));
    });
    // A certificate of another CA is refused, and that is no outage.
    let other = client(
        &endpoint,
        &keys,
        &keys.secret_access_key,
        Duration::from_secs(10),
        Some(&dir.join("other-ca.pem")),
    );
    let err = block_on(other.generate_data_key(&keys.alias)).unwrap_err();
    assert!(matches!(&err, KmsError::Protocol(why) if why.contains("TLS")), "{err:?}");
    // Plain HTTP to the HTTPS port: no answer that parses.
    let plain = client(
        &moto.endpoint("localhost").replace("https://", "http://"),
        &keys,
        "x",
        Duration::from_secs(5),
        None,
    );
    assert!(block_on(plain.generate_data_key(&keys.alias)).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `kwire proxy --kms aws=URL` (credentials from the environment) encrypts what a client
/// produces under a KEK of moto; the broker holds envelopes only; the proxy is stopped and
/// a new one, with nothing of the first in memory, decrypts the records through moto.
#[test]
fn kwire_proxy_with_aws_kms_reads_its_records_after_a_restart() {
    use common::proxy::Proxy;
    use kwire::records::NewRecord;
    let dir = temp_dir("proxy");
    let moto = Moto::start(free_port(), None, dir.join("moto.log"));
    let keys = moto.keys(None);
    let broker = kwire::broker::Broker::start(Default::default()).unwrap();
    let proxy = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kwire"));
        cmd.args(["proxy", "--quiet", "--listen", "127.0.0.1:0", "--upstream"])
            .arg(broker.addr().to_string())
            .arg("--encrypt")
            .arg(format!("secure.*={}", keys.alias))
            .arg("--kms")
            .arg(format!("aws={}", moto.endpoint("127.0.0.1")))
            .env("AWS_REGION", &keys.region)
            .env("AWS_ACCESS_KEY_ID", &keys.access_key_id)
            .env("AWS_SECRET_ACCESS_KEY", &keys.secret_access_key)
            .env_remove("AWS_SESSION_TOKEN");
        Proxy::spawn(cmd)
    };
    let values: Vec<String> = (0..20).map(|i| format!("card-number-{i:04}")).collect();
    let first = proxy();
    let mut client = kwire::client::Client::connect(&first.addr).unwrap();
    client.create_topic("secure.cards", 1).unwrap();
    let records: Vec<NewRecord<'_>> =
        values.iter().map(|v| NewRecord::new(None, Some(v.as_bytes()))).collect();
    client.produce("secure.cards", 0, &records).unwrap();
    let read = |c: &mut kwire::client::Client| -> Vec<String> {
        c.fetch_to_end("secure.cards", 0, 0)
            .unwrap()
            .records
            .iter()
            .map(|r| String::from_utf8(r.value.clone().unwrap_or_default()).unwrap())
            .collect()
    };
    assert_eq!(read(&mut client), values);
    drop(client);
    let printed = first.kill().0;
    // The broker holds envelopes: no plaintext value in any stored byte.
    let mut direct = kwire::client::Client::connect(broker.addr()).unwrap();
    let stored = direct.fetch_to_end("secure.cards", 0, 0).unwrap().records;
    assert_eq!(stored.len(), values.len());
    for r in &stored {
        let v = r.value.clone().unwrap_or_default();
        assert!(v.starts_with(b"kwE"), "not an envelope: {v:?}");
        assert!(!values.iter().any(|p| v.windows(p.len()).any(|w| w == p.as_bytes())), "plaintext stored");
    }
    // No credential in what the proxy printed.
    let all = format!("{}\n{}", printed.lines.join("\n"), printed.stderr);
    assert!(!all.contains(&keys.secret_access_key), "{all}");
    // A new proxy: its data keys come from moto again.
    let second = proxy();
    let mut client = kwire::client::Client::connect(&second.addr).unwrap();
    assert_eq!(read(&mut client), values);
}
