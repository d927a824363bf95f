//! Real clients against `kwire::broker` with SASL/SCRAM, over plaintext (SASL_PLAINTEXT)
//! and over TLS (SASL_SSL): kafka-python, confluent-kafka (librdkafka), the Java
//! kafka-clients and franz-go each produce 5 records and consume them in a group with
//! SCRAM-SHA-256 and SCRAM-SHA-512 over both, and over TLS without SASL (SSL); a wrong
//! password fails as the client
//! reports it, with Kafka's message. The programs are the TLS programs of the proxy tests
//! (tests/proxy/tls_client.py, tests/proxy/TlsClient.java) and `go-client secure`
//! (tests/interop/go/secure.go), installed by tests/proxy/setup.sh; passwords go to them
//! through the environment. Two brokers in all (plaintext, TLS), shared by every run;
//! certificates made here (rcgen). Raw-frame cases: tests/broker_scram.rs.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::clients::setup;
use common::process::{run, run_bounded};
use common::root;
use kwire::broker::{Broker, Config, ScramMechanism, ScramUser, TlsConfig};
use serde_json::Value;

const PASSWORD: &str = "scram-client-pw-40417";

struct Brokers {
    plain: Broker,
    tls: Broker,
    ca: PathBuf,
    log: Arc<Mutex<Vec<String>>>,
}

fn brokers() -> &'static Brokers {
    static B: OnceLock<Brokers> = OnceLock::new();
    B.get_or_init(|| {
        let (ca, cert, key) = common::tls::ca_and_server(&["localhost"]);
        let dir = root().join(format!("target/broker-scram-test/{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca_file = dir.join("ca.pem");
        std::fs::write(&ca_file, ca).unwrap();
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        // Advertised as localhost (the certificate's name) at a free port.
        let start = |tls: Option<TlsConfig>| {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let sink = log.clone();
            Broker::start(Config {
                listen: ([127, 0, 0, 1], port).into(),
                scram_users: ScramMechanism::ALL.map(|m| ScramUser::new("alice", PASSWORD, m)).to_vec(),
                tls,
                advertise: Some(("localhost".into(), port)),
                logger: Some(Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_string()))),
                verbose: true,
                ..Config::default()
            })
            .unwrap()
        };
        let tls = TlsConfig::from_pem(cert.as_bytes(), key.as_bytes()).unwrap();
        Brokers { plain: start(None), tls: start(Some(tls)), ca: ca_file, log }
    })
}

/// The client program for `client` against `bootstrap`, TLS checked against `ca` if given,
/// SCRAM with `mechanism` and `password`.
fn command(
    client: &str,
    bootstrap: &str,
    prefix: &str,
    ca: Option<&str>,
    m: Option<ScramMechanism>,
    password: &str,
) -> Command {
    let r = root();
    let mut c = match client {
        "kafka-python" | "confluent-kafka" => {
            let mut c = Command::new(r.join("target/interop/venv/bin/python"));
            let protocol = match (m.is_some(), ca.is_some()) {
                (true, true) => "SASL_SSL",
                (true, false) => "SASL_PLAINTEXT",
                (false, _) => "SSL",
            };
            c.arg(r.join("tests/proxy/tls_client.py")).args([client, bootstrap, prefix, protocol]);
            c.args(ca);
            c
        }
        "java" => {
            let mut c = Command::new("java");
            c.args(["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"])
                .arg(r.join("target/java-client/lib/*"))
                .arg(r.join("tests/proxy/TlsClient.java"))
                .args([bootstrap, prefix, ca.unwrap_or("-")]);
            c
        }
        "franz-go" => {
            let mut c = Command::new(r.join("target/go-client/go-client"));
            c.args(["secure", bootstrap, prefix, ca.unwrap_or("-")]);
            c
        }
        other => panic!("no client {other}"),
    };
    match m {
        Some(m) => c
            .env("KWIRE_SASL_MECHANISM", m.name())
            .env("KWIRE_SASL_USER", "alice")
            .env("KWIRE_SASL_PASSWORD", password),
        None => c.env_remove("KWIRE_SASL_MECHANISM"),
    };
    c
}

fn client_with_scram(client: &str) {
    setup(|| root().join("target/go-client/go-client").exists());
    let b = brokers();
    let ca = b.ca.to_str().unwrap();
    let started = Instant::now();
    // SCRAM over plaintext and over TLS, and TLS without SASL (SSL).
    let runs = [(&b.plain, None), (&b.tls, Some(ca))]
        .into_iter()
        .flat_map(|(broker, tls)| ScramMechanism::ALL.map(|m| (broker, tls, Some(m))))
        .chain([(&b.tls, Some(ca), None)]);
    let mut times = Vec::new();
    {
        for (broker, tls, m) in runs {
            let one = Instant::now();
            let side = if tls.is_some() { "ssl" } else { "plain" };
            let prefix = format!("{client}-{}-{side}", m.map_or(0, ScramMechanism::to_i8));
            let bootstrap = format!("localhost:{}", broker.addr().port());
            let out =
                run(command(client, &bootstrap, &prefix, tls, m, PASSWORD), client, Duration::from_secs(90));
            let what = match m {
                Some(m) => format!(
                    "{client} {} over SASL_{}",
                    m.name(),
                    if tls.is_some() { "SSL" } else { "PLAINTEXT" }
                ),
                None => format!("{client} over SSL"),
            };
            assert!(out.ok, "{what} failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
            let v: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or(""))
                .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}\n{}", out.stdout, out.stderr));
            assert_eq!(v["errors"], Value::Array(vec![]), "{what}: {v}");
            assert_eq!(v["produced"].as_array().map(Vec::len), Some(5), "{what}: {v}");
            assert_eq!(v["consumed"], v["produced"], "{what}: every record consumed once, in order: {v}");
            assert_eq!(broker.end_offset(&format!("{prefix}-t"), 0), Some(5), "{what}");
            times.push(format!("{what}: {:.1}s", one.elapsed().as_secs_f64()));
        }
    }
    let ran = started.elapsed();
    eprintln!("{}", times.join("; "));
    // A wrong password (SCRAM-SHA-512 over TLS): the client reports Kafka's message. The
    // clients that retry are stopped after a few seconds; what they printed by then counts.
    let bootstrap = format!("localhost:{}", b.tls.addr().port());
    let started = Instant::now();
    let (ok, stdout, stderr) = run_bounded(
        command(
            client,
            &bootstrap,
            &format!("{client}-wrong"),
            Some(ca),
            Some(ScramMechanism::Sha512),
            "not-the-password",
        ),
        Duration::from_secs(8),
    );
    let said = format!("{stdout}\n{stderr}");
    assert_ne!(ok, Some(true), "{client}: a wrong password succeeded:\n{said}");
    assert!(
        said.contains("Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"),
        "{client}: the wrong password is not reported with Kafka's message:\n{said}"
    );
    // The broker closes a failed connection 100 ms after its answer, as Kafka does.
    let deadline = Instant::now() + Duration::from_secs(3);
    let log = loop {
        let log = b.log.lock().unwrap().join("\n");
        if log.contains("SASL/SCRAM-SHA-512 authentication failed") || Instant::now() > deadline {
            break log;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(log.contains("SASL/SCRAM-SHA-512 authentication failed"), "{log}");
    for secret in [PASSWORD, "not-the-password"] {
        assert!(!log.contains(secret) && !said.contains(secret), "{client}: a password in the output");
    }
    eprintln!(
        "{client}: SCRAM-SHA-256 and -512 over SASL_PLAINTEXT and SASL_SSL, and SSL, 5 records each produced and consumed ({:.1}s); a wrong password reported ({:.1}s)",
        ran.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn kafka_python_with_scram_over_plaintext_and_tls() {
    client_with_scram("kafka-python");
}

#[test]
fn confluent_kafka_with_scram_over_plaintext_and_tls() {
    client_with_scram("confluent-kafka");
}

#[test]
fn java_with_scram_over_plaintext_and_tls() {
    client_with_scram("java");
}

#[test]
fn franz_go_with_scram_over_plaintext_and_tls() {
    client_with_scram("franz-go");
}
