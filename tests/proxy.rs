//! Real Kafka clients through `kwire proxy` against a real Apache Kafka 4.4.0 broker:
//! kafka-python, confluent-kafka (librdkafka), kafkajs, the Java kafka-clients and
//! franz-go each create a topic, describe it and its configs, produce with every codec
//! they have, consume in a consumer group with offsets committed, list groups and list
//! offsets. Every answer is checked, and so is every frame the proxy saw: each one of an
//! API kwire knows must decode and re-encode byte for byte (`--verify`); frames of APIs
//! kwire does not know yet are counted by API and reported (they fail the test once
//! [`ALL_APIS_KNOWN`] is set). A robustness test runs clients while other connections
//! send garbage, truncated frames, oversized sizes and slow trickles.
//!
//! The broker comes from `tests/kafka/broker.sh` (Maven Central, cached in target/kafka);
//! the clients from `tests/proxy/setup.sh` (run first when `target/proxy-clients/ready`
//! is missing). A test that cannot get them fails. See docs/proxy.md.
#![cfg(feature = "cli")]

mod common;

use common::clients::{client_command, partition_log};
use common::process::run;
use common::{kwire_cmd, proxy as proxy_harness, root};
use proxy_harness::{Proxy, scrape};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Set to true once kwire decodes every API of Apache Kafka 4.4: from then on a
/// frame of an API kwire does not know fails these tests instead of being counted.
const ALL_APIS_KNOWN: bool = true;

/// How long one client run may take (a run takes a few seconds).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(150);
/// How long fetching and starting the broker may take.
const BROKER_TIMEOUT: Duration = Duration::from_secs(600);

/// One client at a time: the machine has two cores, and the broker is shared.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Installs the clients once per test process (see tests/proxy/setup.sh); again when the
/// metrics test's parser is missing, or the franz-go program is older than its `read`
/// command (a checkout set up before them).
fn setup() {
    common::clients::setup(|| {
        let modified = |p: &str| std::fs::metadata(root().join(p)).and_then(|m| m.modified()).ok();
        let go_fresh = matches!(
            (modified("target/go-client/go-client"), modified("tests/interop/go/read.go")),
            (Some(built), Some(source)) if built >= source
        );
        go_fresh
            && Command::new(root().join("target/interop/venv/bin/python"))
                .args(["-c", "import prometheus_client"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
    });
}

/// The broker of this test process, started once and stopped when the process ends (the
/// script's watchdog follows our pid).
fn broker() -> &'static str {
    static ADDR: OnceLock<String> = OnceLock::new();
    ADDR.get_or_init(|| {
        let (_, out) = proxy_harness::kafka("start", "test", &["{pid}"], &[], BROKER_TIMEOUT);
        let addr = out.stdout.trim().to_string();
        assert!(addr.starts_with("127.0.0.1:"), "unexpected broker address {addr:?}");
        addr
    })
}

/// A `kwire proxy` logging one JSON object per frame, checking each (`--verify`),
/// recording into `record` and serving `--metrics`.
fn json_proxy(upstream: &str, record: &Path) -> Proxy {
    let _ = std::fs::remove_dir_all(record);
    let mut args: Vec<&OsStr> = [
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        upstream,
        "--format",
        "json",
        "--verify",
        "--metrics",
        "127.0.0.1:0",
        "--max-frame-bytes",
        "16777216",
        "--record",
    ]
    .into_iter()
    .map(OsStr::new)
    .collect();
    args.push(record.as_os_str());
    Proxy::start(&args)
}

/// Stops `proxy`; returns its log lines and whether it was still running (it must never
/// have exited by itself).
fn stop_proxy(proxy: Proxy) -> (Vec<String>, bool) {
    let (printed, alive) = proxy.kill();
    if !printed.stderr.trim().is_empty() {
        eprintln!("kwire proxy stderr:\n{}", printed.stderr);
    }
    (printed.lines, alive)
}

/// The proxy log, summed up.
#[derive(Default, Debug)]
struct Frames {
    /// `(direction, api)` to frames decoded and re-encoded byte for byte.
    decoded: BTreeMap<(String, String), usize>,
    /// `(direction, api)` to frames of an API or version kwire does not know.
    unknown: BTreeMap<(String, String), usize>,
    /// Lines that are not frame records (connections, violations).
    events: Vec<String>,
    failures: Vec<String>,
}

impl Frames {
    fn of(lines: &[String]) -> Frames {
        let mut f = Frames::default();
        for line in lines {
            if !line.starts_with('{') {
                f.events.push(line.clone());
                continue;
            }
            let v: Value = match serde_json::from_str(line) {
                Ok(v) => v,
                Err(e) => {
                    f.failures.push(format!("proxy log line is not JSON ({e}): {line}"));
                    continue;
                }
            };
            let direction = v["direction"].as_str().unwrap_or("?").to_string();
            let api = v["api"].as_str().unwrap_or("?").to_string();
            let what = format!("{direction} {api} v{} ({} bytes)", v["apiVersion"], v["size"]);
            match v["decoded"].as_str() {
                Some("ok") => {
                    if v["roundtrip"] != "ok" {
                        f.failures
                            .push(format!("{what} does not re-encode byte for byte: {}", v["roundtrip"]));
                    } else if v["frame"].is_null() {
                        f.failures.push(format!(
                            "{what}: kwire's views decoded it but the schema walker did not (no JSON)"
                        ));
                    } else {
                        *f.decoded.entry((direction, api)).or_default() += 1;
                    }
                }
                Some("unknown") => {
                    if ALL_APIS_KNOWN {
                        f.failures.push(format!("{what} not decoded: {}", v["reason"]));
                    }
                    *f.unknown.entry((direction, api)).or_default() += 1;
                }
                _ => f.failures.push(format!("{what} is malformed according to kwire: {}", v["reason"])),
            }
        }
        f
    }

    fn count(&self, direction: &str, api: &str) -> usize {
        let key = (direction.to_string(), api.to_string());
        self.decoded.get(&key).copied().unwrap_or(0) + self.unknown.get(&key).copied().unwrap_or(0)
    }

    fn report(&self, client: &str) -> String {
        let mut s = format!("{client} through kwire proxy:\n  decoded and re-encoded byte for byte:");
        for ((d, api), n) in &self.decoded {
            s.push_str(&format!(" {api} {d}s {n};"));
        }
        s.push_str("\n  not decoded (kwire does not know the API or version yet):");
        for ((d, api), n) in &self.unknown {
            s.push_str(&format!(" {api} {d}s {n};"));
        }
        s
    }
}

/// A name no other run uses: topics and groups on the shared broker.
fn prefix(client: &str) -> String {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
    format!("{client}-{}-{t}", std::process::id())
}

/// Checks what a client reports: every record produced consumed exactly once and in
/// order per partition, offsets committed up to the end, admin answers right.
fn check_answers(client: &str, out: &Value, prefix: &str) {
    let partitions = out["topic_partitions"].as_u64();
    assert_eq!(partitions, Some(3), "{client}: describe topics: {out}");
    assert_eq!(out["config"]["cleanup.policy"], "delete", "{client}: describe configs: {out}");
    assert_eq!(out["errors"].as_array().map(Vec::len), Some(0), "{client}: errors: {}", out["errors"]);
    let codecs = out["codecs"].as_array().map_or(0, Vec::len);
    let produced = out["produced"].as_object().unwrap_or_else(|| panic!("{client}: no produced: {out}"));
    let mut total = 0;
    for p in ["0", "1", "2"] {
        let sent = produced[p].as_array().unwrap_or_else(|| panic!("{client}: produced/{p}"));
        total += sent.len();
        for key in ["consumed", "consumed_consumer_protocol"] {
            if out.get(key).is_none() {
                continue;
            }
            let log = partition_log(client, &format!("{key}/{p}"), &out[key][p]);
            assert_eq!(
                &Value::Array(log),
                &produced[p],
                "{client}: partition {p}: {key} is not every record produced, once and in order"
            );
        }
        let n = sent.len() as i64;
        assert_eq!(
            out["committed"][p].as_i64(),
            Some(n),
            "{client}: committed offset of partition {p}: {out}"
        );
        assert_eq!(out["latest"][p].as_i64(), Some(n), "{client}: latest offset of partition {p}: {out}");
    }
    let extra = out["extra_records"].as_u64().unwrap_or(0) as usize;
    assert_eq!(total, codecs * 12 + extra, "{client}: records produced");
    let group = format!("{prefix}-g");
    let groups = out["groups"].as_array().unwrap_or_else(|| panic!("{client}: no groups: {out}"));
    assert!(groups.iter().any(|g| g == &Value::String(group.clone())), "{client}: {group} not in {groups:?}");
}

/// Runs one client through a fresh proxy and checks its answers and every frame.
fn client_through_proxy(client: &str) {
    let _serial = serial();
    setup();
    let upstream = broker();
    let record = root().join("target/proxy-vectors").join(client);
    let proxy = json_proxy(upstream, &record);
    let prefix = prefix(client);
    // Metrics scraped while the client runs, and once after.
    let metrics = proxy.metrics_addr();
    let running = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let scraper = {
        let (running, metrics) = (running.clone(), metrics.clone());
        thread::spawn(move || {
            let mut scrapes = Vec::new();
            while running.load(std::sync::atomic::Ordering::Relaxed) {
                scrapes.push(scrape(&metrics));
                thread::sleep(Duration::from_millis(200));
            }
            scrapes
        })
    };
    let out = run(client_command(client, &proxy.addr, &prefix), client, CLIENT_TIMEOUT);
    running.store(false, std::sync::atomic::Ordering::Relaxed);
    let during = scraper.join().expect("scraper");
    thread::sleep(Duration::from_millis(300));
    let after = scrape(&metrics);
    let (lines, alive) = stop_proxy(proxy);
    assert!(alive, "kwire proxy exited during the {client} run");
    assert!(out.ok, "{client} failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let answer = out.stdout.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| {
        panic!("{client} printed no JSON\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr)
    });
    let answer: Value = serde_json::from_str(answer).expect("client JSON");
    check_answers(client, &answer, &prefix);

    let frames = Frames::of(&lines);
    let report = frames.report(client);
    eprintln!("{report}");
    let _ = std::fs::write(record.join("report.txt"), format!("{report}\n"));
    assert!(
        frames.failures.is_empty(),
        "{client}: {} frame problems:\n{}",
        frames.failures.len(),
        frames.failures.join("\n")
    );
    // Everything went through the proxy: the data path (Produce, Fetch) and the group
    // coordinator, which clients reach only through rewritten Metadata and
    // FindCoordinator answers.
    for api in ["ApiVersions", "Metadata", "Produce", "Fetch", "OffsetCommit"] {
        assert!(
            frames.count("request", api) > 0,
            "{client}: no {api} request went through the proxy\n{report}"
        );
        assert!(
            frames.count("response", api) > 0,
            "{client}: no {api} response came through the proxy\n{report}"
        );
    }
    // Metadata is one kwire decodes in every version these clients send (ApiVersions v5
    // of newer clients is not known yet).
    for api in ["Metadata"] {
        for d in ["request", "response"] {
            let n = frames.decoded.get(&(d.to_string(), api.to_string())).copied().unwrap_or(0);
            assert!(n > 0, "{client}: no {api} {d} was decoded\n{report}");
        }
    }
    // The proxy closed no connection on its own, nor did the broker: every one ended
    // because its client did.
    let closed: Vec<&String> = frames
        .events
        .iter()
        .filter(|l| {
            // A client that goes while an answer is on its way: reset, or a broken pipe.
            let by_client = ["(client closed)", "reset by peer", "Broken pipe"].iter().any(|w| l.contains(w));
            l.contains(": closed (") && !by_client
        })
        .collect();
    assert!(closed.is_empty(), "{client}: connections closed by the proxy or the broker:\n{closed:?}");
    let heard =
        frames.count("request", "FindCoordinator") + frames.count("request", "ConsumerGroupHeartbeat");
    assert!(heard > 0, "{client}: no coordinator lookup went through the proxy\n{report}");
    check_metrics(client, &during, &after, &lines, &frames);
}

/// The scrapes as the Prometheus Python client's parser reads them (tests/proxy/parse_metrics.py):
/// per scrape, sample name and sorted labels to value.
fn parse_scrapes(scrapes: &[String]) -> Vec<BTreeMap<(String, String), f64>> {
    proxy_harness::parse_metrics(scrapes)
        .into_iter()
        .map(|v| {
            assert_eq!(v["types"]["kwire_proxy_request_duration_seconds"], "histogram", "{v}");
            assert_eq!(v["types"]["kwire_proxy_requests"], "counter", "{v}");
            assert_eq!(v["types"]["kwire_proxy_connections_open"], "gauge", "{v}");
            proxy_harness::samples(&v)
        })
        .collect()
}

/// The metrics agree with the JSON log of the same run: requests by API, responses
/// (histogram counts) by API, bytes each way, connections; no upstream error and no
/// undecoded frame; counters never go down between scrapes; every bucket series is
/// cumulative.
fn check_metrics(client: &str, during: &[String], after: &str, lines: &[String], frames: &Frames) {
    assert!(!during.is_empty(), "{client}: no scrape during the run");
    let mut all = during.to_vec();
    all.push(after.to_string());
    let parsed = parse_scrapes(&all);
    let last = parsed.last().unwrap();
    let sum = |name: &str, filter: &dyn Fn(&str) -> bool| -> f64 {
        last.iter().filter(|((n, l), _)| n == name && filter(l)).map(|(_, v)| v).sum()
    };
    // Counters only grow.
    for pair in parsed.windows(2) {
        for ((name, labels), v) in &pair[0] {
            if name.ends_with("_total") || name.ends_with("_bucket") || name.ends_with("_count") {
                let later = pair[1].get(&(name.clone(), labels.clone())).copied().unwrap_or(-1.0);
                assert!(later >= *v, "{client}: {name}{{{labels}}} went from {v} to {later}");
            }
        }
    }
    let mut bytes = [0f64; 2];
    for line in lines.iter().filter(|l| l.starts_with('{')) {
        let v: Value = serde_json::from_str(line).unwrap();
        let d = usize::from(v["direction"] != "request");
        bytes[d] += v["size"].as_f64().unwrap_or(0.0);
    }
    for (d, name) in ["request", "response"].iter().enumerate() {
        let got = sum("kwire_proxy_bytes_total", &|l| l == format!("direction={name}"));
        assert_eq!(got, bytes[d], "{client}: {name} bytes in the metrics and in the log");
        assert!(got > 0.0);
    }
    let apis: std::collections::BTreeSet<&String> = frames.decoded.keys().map(|(_, api)| api).collect();
    for api in apis {
        let requests = sum("kwire_proxy_requests_total", &|l| l.starts_with(&format!("api={api},")));
        assert_eq!(requests as usize, frames.count("request", api), "{client}: {api} requests");
        let count = sum("kwire_proxy_request_duration_seconds_count", &|l| l == format!("api={api}"));
        assert_eq!(count as usize, frames.count("response", api), "{client}: {api} latencies");
        if count > 0.0 {
            let mut buckets: Vec<(f64, f64)> = last
                .iter()
                .filter(|((n, l), _)| {
                    n == "kwire_proxy_request_duration_seconds_bucket"
                        && l.starts_with(&format!("api={api},"))
                })
                .map(|((_, l), v)| (l.rsplit("le=").next().unwrap().parse::<f64>().unwrap(), *v))
                .collect();
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{client}: {api} buckets {buckets:?}");
            assert_eq!(buckets.last().map(|b| (b.0, b.1)), Some((f64::INFINITY, count)), "{client}: {api}");
        }
    }
    let accepted = frames.events.iter().filter(|l| l.contains(": connected, forwarding")).count();
    assert_eq!(sum("kwire_proxy_connections_total", &|_| true) as usize, accepted, "{client}: connections");
    assert!(accepted > 0);
    assert_eq!(sum("kwire_proxy_upstream_errors_total", &|_| true), 0.0, "{client}: upstream errors");
    assert_eq!(sum("kwire_proxy_undecoded_frames_total", &|_| true), 0.0, "{client}: undecoded frames");
    eprintln!(
        "{client}: metrics scraped {} times during the run and once after, parsed by prometheus_client; {} samples agree with the log",
        during.len(),
        last.len()
    );
}

#[test]
fn kafka_python_through_proxy() {
    client_through_proxy("kafka-python");
}

#[test]
fn confluent_kafka_through_proxy() {
    client_through_proxy("confluent-kafka");
}

#[test]
fn kafkajs_through_proxy() {
    client_through_proxy("kafkajs");
}

#[test]
fn java_kafka_clients_through_proxy() {
    client_through_proxy("java");
}

#[test]
fn franz_go_through_proxy() {
    client_through_proxy("franz-go");
}

/// One kind of bad connection, repeated until `stop`.
fn attacker(
    addr: String,
    kind: &'static str,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> thread::JoinHandle<usize> {
    use std::sync::atomic::Ordering;
    thread::spawn(move || {
        let mut rounds = 0;
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15 ^ kind.len() as u64;
        let mut rand = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        while !stop.load(Ordering::Relaxed) && rounds < 10_000 {
            rounds += 1;
            let Ok(mut s) = TcpStream::connect(&addr) else { continue };
            let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
            let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
            match kind {
                "garbage" => {
                    let bytes: Vec<u8> = (0..64 + rand() % 512).map(|_| rand() as u8).collect();
                    let _ = s.write_all(&bytes);
                }
                "negative" => {
                    let _ = s.write_all(&(-5i32).to_be_bytes());
                }
                "oversized" => {
                    let _ = s.write_all(&(1i32 << 30).to_be_bytes());
                    let _ = s.write_all(&[0; 64]);
                }
                "truncated" => {
                    // An ApiVersions v3 request cut short, then the connection closes.
                    let frame = [0u8, 0, 0, 30, 0, 18, 0, 3, 0, 0, 0, 1, 0, 4, b'e', b'v', b'i', b'l'];
                    let _ = s.write_all(&frame[..(rand() % frame.len() as u64) as usize]);
                    let _ = s.shutdown(Shutdown::Write);
                }
                "header-garbage" => {
                    // A well-framed request whose header and body are junk.
                    let mut body: Vec<u8> = (0..40).map(|_| rand() as u8).collect();
                    body[0] = 0;
                    body[1] = 3; // Metadata
                    let _ = s.write_all(&(body.len() as i32).to_be_bytes());
                    let _ = s.write_all(&body);
                }
                "trickle" => {
                    // A valid ApiVersions v0 request, one byte at a time.
                    let frame = [0u8, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 7, 0xff, 0xff];
                    for b in frame {
                        if stop.load(Ordering::Relaxed) || s.write_all(&[b]).is_err() {
                            break;
                        }
                        thread::sleep(Duration::from_millis(40));
                    }
                    let mut head = [0u8; 8];
                    let _ = s.read_exact(&mut head);
                }
                _ => unreachable!(),
            }
            let mut sink = [0u8; 256];
            let _ = s.read(&mut sink);
        }
        rounds
    })
}

/// Clients produce and consume through the proxy while other connections misbehave:
/// every record arrives once and in order, and the proxy keeps running.
#[test]
fn robustness_under_bad_connections() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let _serial = serial();
    setup();
    let upstream = broker();
    let record = root().join("target/proxy-vectors/robustness");
    let proxy = json_proxy(upstream, &record);
    let stop = Arc::new(AtomicBool::new(false));
    let kinds = ["garbage", "negative", "oversized", "truncated", "header-garbage", "trickle"];
    let attackers: Vec<_> = kinds.iter().map(|k| attacker(proxy.addr.clone(), k, stop.clone())).collect();
    // Two real clients at once, while the attacks run.
    let runs: Vec<_> = ["confluent-kafka", "kafka-python"]
        .into_iter()
        .map(|client| {
            let addr = proxy.addr.clone();
            thread::spawn(move || {
                let prefix = prefix(&format!("robust-{client}"));
                let out = run(client_command(client, &addr, &prefix), client, CLIENT_TIMEOUT);
                (client, prefix, out)
            })
        })
        .collect();
    let results: Vec<_> = runs.into_iter().map(|h| h.join().expect("client thread")).collect();
    stop.store(true, Ordering::Relaxed);
    let rounds: Vec<usize> = attackers.into_iter().map(|h| h.join().unwrap_or(0)).collect();
    let (lines, alive) = stop_proxy(proxy);
    assert!(alive, "kwire proxy exited under bad connections");
    for (client, prefix, out) in &results {
        assert!(
            out.ok,
            "{client} failed under bad connections\nstdout:\n{}\nstderr:\n{}",
            out.stdout, out.stderr
        );
        let answer = out.stdout.lines().rev().find(|l| l.starts_with('{')).expect("client JSON");
        check_answers(client, &serde_json::from_str(answer).unwrap(), prefix);
    }
    for (kind, n) in kinds.iter().zip(&rounds) {
        assert!(*n > 0, "attacker {kind} never ran");
    }
    let frames = Frames::of(&lines);
    let violations = frames.events.iter().filter(|l| l.contains("framing violation from the client")).count();
    assert!(violations > 0, "no framing violation was logged:\n{}", frames.events.join("\n"));
    for needle in ["negative frame size", "over the limit"] {
        assert!(
            frames
                .events
                .iter()
                .any(|l| l.contains("framing violation") && l.to_lowercase().contains(needle)),
            "no framing violation mentions {needle:?}"
        );
    }
    // Garbage inside well-formed frames is reported as such (malformed, or claiming a key or
    // version that does not exist), never as the client's fault.
    let garbage = |f: &&String| {
        f.contains("malformed according to kwire")
            || f.contains("kwire: unsupported version")
            || f.contains("kwire: unsupported API key")
    };
    let real_failures: Vec<_> = frames.failures.iter().filter(|f| !garbage(f)).collect();
    assert!(real_failures.is_empty(), "frame problems:\n{real_failures:?}");
    eprintln!(
        "robustness: attackers ran {:?} rounds ({kinds:?}); {violations} framing violations closed; clients intact",
        rounds
    );
}

/// The proxy's resident memory in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A client that sends requests as fast as it can and never reads the answers: TCP's
/// back-pressure reaches it through the proxy, and the proxy's memory stays bounded.
#[test]
fn slow_reader_does_not_grow_memory() {
    let _serial = serial();
    setup();
    let upstream = broker();
    let proxy = json_proxy(upstream, &root().join("target/proxy-vectors/slow-reader"));
    let before = rss_kib(proxy.child.id());
    let mut s = TcpStream::connect(&proxy.addr).expect("connect to the proxy");
    s.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
    // ApiVersions v3 (its answer is ~900 bytes from Kafka 4.4), 64 at a time.
    let mut one = vec![0, 0, 0, 0, 0, 18, 0, 3, 0, 0, 0, 1, 0, 4, b's', b'l', b'o', b'w', 0];
    one.extend_from_slice(&[5, b'k', b'w', b'i', b'r', 4, b'0', b'.', b'1', 0]);
    let len = (one.len() - 4) as i32;
    one[..4].copy_from_slice(&len.to_be_bytes());
    let batch: Vec<u8> = one.iter().copied().cycle().take(one.len() * 64).collect();
    let start = Instant::now();
    let mut sent = 0usize;
    let blocked = loop {
        if start.elapsed() > Duration::from_secs(20) {
            break false;
        }
        match s.write_all(&batch) {
            Ok(()) => sent += batch.len(),
            Err(_) => break true,
        }
    };
    let during = rss_kib(proxy.child.id());
    drop(s);
    let (_, alive) = stop_proxy(proxy);
    assert!(alive, "kwire proxy exited");
    eprintln!(
        "slow reader: {} MB of requests accepted before the writes blocked={blocked}; proxy RSS {before} KiB before, {during} KiB while blocked",
        sent / 1_000_000
    );
    assert!(blocked, "writes never blocked after {} MB: no back-pressure", sent / 1_000_000);
    assert!(during < before + 64 * 1024, "proxy memory grew from {before} KiB to {during} KiB");
}

/// Runs `kwire` with `args`, `stdin` as its input; returns (success, stdout, stderr).
fn kwire(args: &[&str], stdin: &[u8]) -> (bool, String, String) {
    let out = kwire_cmd::run(args, stdin);
    (out.status.success(), kwire_cmd::text(&out.stdout), kwire_cmd::text(&out.stderr))
}

/// The frames recorded between real clients and Apache Kafka 4.4.0
/// (tests/vectors/kafka44): each pair of an API and version kwire knows decodes, and
/// encodes back to the same bytes, through `kwire decode --format json | kwire encode`.
/// No broker needed.
#[test]
fn kafka44_vectors_round_trip() {
    let dir = root().join("tests/vectors/kafka44");
    let mut names: Vec<String> = std::fs::read_dir(dir.join("requests"))
        .expect("tests/vectors/kafka44/requests")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".hex"))
        .collect();
    names.sort();
    assert!(names.len() > 100, "only {} vectors", names.len());
    let (mut known, mut unknown) = (BTreeMap::<String, usize>::new(), BTreeMap::<String, usize>::new());
    let mut failures = Vec::new();
    for name in &names {
        let req = dir.join("requests").join(name);
        let resp = dir.join("responses").join(name);
        let api = name.split('_').nth(1).unwrap_or("?").to_string();
        let (req_s, resp_s) = (req.to_str().unwrap(), resp.to_str().unwrap());
        let (ok, json, err) = kwire(&["decode", "--format", "json", req_s], b"");
        if !ok {
            if err.contains("not one kwire supports") || err.contains("in kwire (versions") {
                *unknown.entry(api).or_default() += 1;
                if ALL_APIS_KNOWN {
                    failures.push(format!("{name}: {err}"));
                }
            } else {
                failures.push(format!("{name}: request does not decode: {err}"));
            }
            continue;
        }
        for (what, file, json) in [
            ("request", req_s, json),
            ("response", resp_s, kwire(&["decode", "--format", "json", "--request", req_s, resp_s], b"").1),
        ] {
            let want = std::fs::read_to_string(file).unwrap().trim().to_string();
            let (ok, hex, err) = kwire(&["encode"], json.as_bytes());
            if !ok || hex.trim() != want {
                failures.push(format!("{name}: the {what} does not re-encode to the same bytes: {err}"));
            }
        }
        *known.entry(api).or_default() += 1;
    }
    eprintln!("kafka44 vectors: round-tripped {known:?}; not known to kwire yet {unknown:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for api in ["apiversions", "metadata", "listgroups", "listoffsets"] {
        assert!(known.contains_key(api), "no {api} vector round-tripped");
    }
}

/// An upstream for the connection tests (no Kafka needed): answers every request with an
/// ApiVersions v0 response (error 0, no APIs) of the request's correlation id, for as many
/// connections as come, on one tokio thread. Runs until the test process ends.
fn answering_upstream() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap().to_string()).unwrap();
            loop {
                let Ok((mut s, _)) = listener.accept().await else { continue };
                tokio::spawn(async move {
                    let mut head = [0u8; 12];
                    loop {
                        if s.read_exact(&mut head).await.is_err() {
                            return;
                        }
                        let size = i32::from_be_bytes(head[..4].try_into().unwrap()) as usize;
                        let mut rest = vec![0u8; size.saturating_sub(8)];
                        if s.read_exact(&mut rest).await.is_err() {
                            return;
                        }
                        let correlation_id = i32::from_be_bytes(head[8..12].try_into().unwrap());
                        if s.write_all(&api_versions_v0_response(correlation_id)).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
    });
    rx.recv().unwrap()
}

fn api_versions_v0_response(correlation_id: i32) -> Vec<u8> {
    let body = kwire::messages::ApiVersionsResponse { error_code: 0, ..Default::default() };
    let mut buf = vec![0u8; kwire::dispatch::response_len(&body, 0).unwrap()];
    kwire::dispatch::encode_response(&body, 0, correlation_id, &mut buf).unwrap();
    buf
}

/// An ApiVersions v0 request (no client id) with `correlation_id`.
fn api_versions_v0_request(correlation_id: i32) -> [u8; 14] {
    let mut f = [0u8, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 0, 0xff, 0xff];
    f[8..12].copy_from_slice(&correlation_id.to_be_bytes());
    f
}

/// One ApiVersions round trip on `s`: the answer carries the request's correlation id.
fn round_trip(s: &mut TcpStream, correlation_id: i32) -> std::io::Result<()> {
    s.write_all(&api_versions_v0_request(correlation_id))?;
    let want = api_versions_v0_response(correlation_id);
    let mut got = vec![0u8; want.len()];
    s.read_exact(&mut got)?;
    if got != want {
        return Err(std::io::Error::other(format!("unexpected answer {got:?}")));
    }
    Ok(())
}

/// A `kwire proxy --quiet` run by bash after `ulimit` (`limits`, e.g. `-Sn 100`).
fn quiet_proxy(upstream: &str, limits: &str, args: &[&str]) -> Proxy {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(format!("ulimit {limits} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_kwire"))
        .args(["proxy", "--quiet", "--listen", "127.0.0.1:0", "--upstream", upstream])
        .args(args);
    Proxy::spawn(cmd)
}

/// Under a hard descriptor limit of 300 and a soft one of 64, the proxy raises the soft
/// limit to 300, says so, and serves the (300 - 128) / 2 = 86 connections that limit
/// allows, each one through to the upstream. The 87th client is refused by the kernel
/// (connection refused: the proxy closed its listener, with a log line) rather than
/// accepted and dropped; once a connection ends the listener opens again and a new client
/// is served. No connection is ever accepted and then closed for want of a descriptor.
#[test]
fn descriptor_limit_raised_and_connections_past_it_refused() {
    let _serial = serial();
    let upstream = answering_upstream();
    let proxy = quiet_proxy(&upstream, "-Sn 64 && ulimit -Hn 300", &[]);
    let line = proxy.wait_for(&["descriptor limit"]);
    assert!(
        line.contains("descriptor limit 300 (soft 64 at start, hard 300): serving at most 86 connections"),
        "{line}"
    );
    let mut held = Vec::new();
    for i in 0..86 {
        let mut s = TcpStream::connect(&proxy.addr).unwrap_or_else(|e| panic!("connection {i}: {e}"));
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        round_trip(&mut s, i).unwrap_or_else(|e| panic!("connection {i} not served: {e}"));
        held.push(s);
    }
    proxy.wait_for(&["at 86 connections (the connection limit)"]);
    let refused = TcpStream::connect(&proxy.addr);
    assert!(
        matches!(&refused, Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused),
        "the 87th connection was not refused: {refused:?}"
    );
    // Every held connection still works.
    for (i, s) in held.iter_mut().enumerate() {
        round_trip(s, 1000 + i as i32).unwrap_or_else(|e| panic!("connection {i} after the refusal: {e}"));
    }
    drop(held.pop());
    proxy.wait_for(&["open again, accepting connections"]);
    let mut s = TcpStream::connect(&proxy.addr).expect("a connection once one has ended");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    round_trip(&mut s, 7).expect("served once one has ended");
    let log = proxy.lines();
    let dropped: Vec<&String> = log
        .iter()
        .filter(|l| l.contains("cannot connect") || l.contains("accept on") || l.contains("open files"))
        .collect();
    assert!(dropped.is_empty(), "connections accepted and dropped:\n{dropped:?}");
    eprintln!("descriptor limit: {line}");
}

/// Threads and descriptors of a process.
fn threads_and_fds(pid: u32) -> (usize, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let threads = status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0);
    (threads, fds)
}

/// The value of an unlabelled sample in a scrape.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// Many connections held through `kwire proxy`, started with
/// the common soft descriptor limit of 1024: it raises the limit itself. The test process
/// holds both ends (its clients and the upstream), so it holds up to 9,000 connections
/// (2 × 9,000 descriptors within the hard limit of 20,000). Each connection makes one
/// round trip through to the upstream and then idles; then 100 of them are active (200
/// round trips each, all at once) while the rest idle, and every connection makes one
/// more round trip at the end. Checks: the proxy's resident memory per idle connection
/// stays within 64 KiB, it runs on a fixed set of threads (not a thread per connection),
/// it holds two descriptors per connection, its metrics count the open connections, and
/// they drop back to 0 when the clients close.
#[test]
fn many_idle_connections_held() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let _serial = serial();
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).expect("raise this test's descriptor limit");
    let n = 9_000.min(usize::try_from(hard.saturating_sub(400) / 2).unwrap_or(0));
    assert!(n >= 1_000, "the hard descriptor limit {hard} leaves room for {n} connections only");
    let upstream = answering_upstream();
    let proxy = quiet_proxy(&upstream, "-Sn 1024", &["--metrics", "127.0.0.1:0"]);
    let metrics = proxy.metrics_addr();
    let limit = proxy.wait_for(&["descriptor limit"]);
    let start = Instant::now();
    let (rss_before, (threads_before, _)) = (rss_kib(proxy.pid()), threads_and_fds(proxy.pid()));
    let mut conns = Vec::with_capacity(n);
    for i in 0..n {
        let mut s = TcpStream::connect(&proxy.addr).unwrap_or_else(|e| panic!("connection {i}: {e}"));
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        round_trip(&mut s, i as i32).unwrap_or_else(|e| panic!("connection {i} not served: {e}"));
        conns.push(s);
    }
    let opened = start.elapsed();
    thread::sleep(Duration::from_millis(500));
    let rss_idle = rss_kib(proxy.pid());
    let (threads, fds) = threads_and_fds(proxy.pid());
    let open = sample(&scrape(&metrics), "kwire_proxy_connections_open");
    // 100 active connections while the others idle.
    let active: Vec<TcpStream> = conns.drain(..100).collect();
    let workers: Vec<_> = active
        .into_iter()
        .enumerate()
        .map(|(k, mut s)| {
            thread::spawn(move || {
                for j in 0..200 {
                    round_trip(&mut s, (k * 1000 + j) as i32).unwrap_or_else(|e| panic!("active {k}: {e}"));
                }
                s
            })
        })
        .collect();
    let active: Vec<TcpStream> = workers.into_iter().map(|w| w.join().expect("active connection")).collect();
    let rss_active = rss_kib(proxy.pid());
    conns.extend(active);
    for (i, s) in conns.iter_mut().enumerate() {
        round_trip(s, -(i as i32)).unwrap_or_else(|e| panic!("connection {i} after idling: {e}"));
    }
    let per_conn = rss_idle.saturating_sub(rss_before) * 1024 / n as u64;
    eprintln!(
        "{n} connections through kwire proxy in {opened:.1?} ({limit}): RSS {rss_before} KiB before, {rss_idle} KiB \
         idle ({per_conn} bytes per connection), {rss_active} KiB with 100 active; {threads} threads (\
         {threads_before} before); {fds} descriptors"
    );
    assert_eq!(open, Some(n as f64), "kwire_proxy_connections_open");
    assert!(per_conn <= 64 * 1024, "{per_conn} bytes of RSS per idle connection");
    assert!(threads <= threads_before + 4, "{threads} threads for {n} connections ({threads_before} before)");
    assert!((2 * n..2 * n + 64).contains(&fds), "{fds} descriptors for {n} connections");
    drop(conns);
    let closed = Instant::now();
    while sample(&scrape(&metrics), "kwire_proxy_connections_open") != Some(0.0) {
        assert!(
            closed.elapsed() < Duration::from_secs(20),
            "connections still open 20 s after the clients closed"
        );
        thread::sleep(Duration::from_millis(100));
    }
    assert!(start.elapsed() < Duration::from_secs(60), "took {:?}", start.elapsed());
}

/// The library's proxy with a user's filter (`kwire::proxy`'s example: Produce to `audit.*`
/// refused per partition with TOPIC_AUTHORIZATION_FAILED; and its twin for reads),
/// started in this process in front of the real broker, reached through a relay that
/// advertises versions and an API past kwire's (`common::newer_cluster`): kafka-python
/// produces to an audit topic and to another through it. The refused send fails with
/// Kafka's error, the other lands, and every frame of the session decodes (the ApiVersions
/// answer was clamped). Then Apache Kafka's Java client, which names topics by id (Produce
/// v13, Fetch v13 and later), does the same and reads both topics back: the allowed one
/// reads its record, the audit one fails with Kafka's error.
#[test]
fn library_proxy_with_a_users_filter_and_a_real_client() {
    use common::audit::{AuditReads, AuditTopics};
    use kwire::filter::FilterChain;
    use kwire::proxy::{ConnInfo, Hooks, Pairing, RequestHead};

    /// Counts the frames kwire could not read, and the answers the filter gave.
    #[derive(Default)]
    struct Seen {
        undecoded: std::sync::atomic::AtomicUsize,
        answered_by_filter: std::sync::atomic::AtomicUsize,
        clamped: std::sync::atomic::AtomicUsize,
        produce_v13: std::sync::atomic::AtomicUsize,
        fetch_by_id: std::sync::atomic::AtomicUsize,
    }
    impl Hooks for Seen {
        type Tag = ();
        fn admit(&self, _: &ConnInfo, _: &RequestHead, _: &[u8]) {}
        fn request(&self, _: &ConnInfo, frame: &[u8], head: &RequestHead, _: &()) {
            if kwire::dispatch::parse_request_prefix(frame).is_err() {
                self.undecoded.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            if let RequestHead::Request { api_key: 0, api_version: 13, .. } = head {
                self.produce_v13.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            if let RequestHead::Request { api_key: 1, api_version: 13.., .. } = head {
                self.fetch_by_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        fn response(&self, _: &ConnInfo, frame: &[u8], e: Pairing<()>, rewritten: bool, _: Duration) {
            if kwire::conn::read_response(frame, e.api_key, e.api_version).is_err() {
                self.undecoded.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            if rewritten && e.api_key == kwire::ApiKey::Produce {
                self.answered_by_filter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            if rewritten && e.api_key == kwire::ApiKey::ApiVersions {
                self.clamped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    let _serial = serial();
    setup();
    // The bootstrap connection goes through a relay that advertises versions and an API
    // past kwire's: the proxy clamps them, so every frame of the session decodes.
    let upstream = common::newer_cluster::widening_relay(broker().parse().unwrap()).to_string();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let proxy = rt
        .block_on(
            kwire::proxy::Proxy::builder("127.0.0.1:0".parse().unwrap(), [upstream])
                .filters(|conn: &Arc<ConnInfo>| {
                    let mut chain = FilterChain::new();
                    chain.push(AuditTopics(conn.clone())).push(AuditReads(conn.clone()));
                    chain
                })
                .hooks(Seen::default())
                .start(),
        )
        .unwrap();
    let tag = format!("{}", std::process::id());
    let script = r#"
import json, sys
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
bootstrap, tag = sys.argv[1], sys.argv[2]
audit, orders = "audit.logins-" + tag, "orders-" + tag
admin = KafkaAdminClient(bootstrap_servers=bootstrap)
admin.create_topics([NewTopic(audit, 1, 1), NewTopic(orders, 1, 1)])
admin.close()
p = KafkaProducer(bootstrap_servers=bootstrap, retries=0, max_block_ms=20000, linger_ms=500)
for topic in (orders, audit):
    p.partitions_for(topic)
# Both records in one linger window: one Produce request names both topics.
sent = {topic.split("-")[0]: p.send(topic, b"v") for topic in (orders, audit)}
p.flush()
out = {}
for name, future in sent.items():
    try:
        out[name] = {"offset": future.get(timeout=20).offset}
    except Exception as e:
        out[name] = {"error": type(e).__name__}
p.close()
print(json.dumps(out))
"#;
    let mut cmd = Command::new(root().join("target/interop/venv/bin/python"));
    cmd.args(["-c", script, &proxy.local_addr().to_string(), &tag]);
    let out = run(cmd, "kafka-python through the library proxy", CLIENT_TIMEOUT);
    assert!(out.ok, "kafka-python failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let v: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or("")).unwrap();
    assert_eq!(v["orders"]["offset"], 0, "{v}");
    assert_eq!(v["audit.logins"]["error"], "TopicAuthorizationFailedError", "{v}");
    assert!(proxy.hooks().answered_by_filter.load(std::sync::atomic::Ordering::Relaxed) >= 1);
    assert!(
        proxy.hooks().clamped.load(std::sync::atomic::Ordering::Relaxed) >= 1,
        "no ApiVersions answer clamped"
    );
    assert_eq!(proxy.hooks().undecoded.load(std::sync::atomic::Ordering::Relaxed), 0);
    // Apache Kafka's Java client names topics by id (Produce v13): the proxy names them for
    // the filter, which refuses the audit topic and lets the other through, in one request.
    let jar = root().join("target/java-client/proxy-java-client-0.jar");
    let lib = root().join("target/java-client/lib/*");
    let mut java = Command::new("java");
    java.arg("-Xmx384m")
        .arg("-cp")
        .arg(format!("{}:{}", jar.display(), lib.display()))
        .arg("dev.kwire.interop.AuditProducer")
        .args([&proxy.local_addr().to_string(), &format!("java-{tag}")]);
    let out = run(java, "the Java client through the library proxy", CLIENT_TIMEOUT);
    assert!(out.ok, "the Java client failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let j: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or("")).unwrap();
    assert_eq!(j["orders"]["offset"], 0, "{j}");
    assert_eq!(j["audit"]["error"], "TopicAuthorizationException", "{j}");
    assert_eq!(j["read_orders"]["values"], serde_json::json!(["an order"]), "{j}");
    assert_eq!(j["read_audit"]["error"], "TopicAuthorizationException", "{j}");
    assert!(proxy.hooks().fetch_by_id.load(std::sync::atomic::Ordering::Relaxed) >= 1, "no Fetch v13+ seen");
    assert_eq!(proxy.hooks().undecoded.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert!(proxy.hooks().produce_v13.load(std::sync::atomic::Ordering::Relaxed) >= 1, "no Produce v13 seen");
    rt.block_on(proxy.shutdown_within(Duration::from_secs(10)));
    eprintln!("library proxy with a user's filter: {v} {j}");
}

/// Record validation (`kwire::filter::ValidateRecords`) in the library proxy with kafka-python
/// against the real broker: good records are written, a partition with a bad record gets
/// INVALID_RECORD while the other partition of the same request is written, a topic no rule
/// names takes anything, and a consumer reads back only the good records.
#[test]
fn library_proxy_validating_records_with_a_real_client() {
    use kwire::filter::{FilterChain, Rule, ValidateRecords};
    use kwire::proxy::{ConnInfo, Hooks, Pairing, RequestHead};

    /// Counts the frames kwire could not read and the Produce answers the filter gave or
    /// merged.
    #[derive(Default)]
    struct Seen {
        undecoded: std::sync::atomic::AtomicUsize,
        merged: std::sync::atomic::AtomicUsize,
    }
    impl Hooks for Seen {
        type Tag = ();
        fn admit(&self, _: &ConnInfo, _: &RequestHead, _: &[u8]) {}
        fn request(&self, _: &ConnInfo, frame: &[u8], _: &RequestHead, _: &()) {
            if kwire::dispatch::parse_request_prefix(frame).is_err() {
                self.undecoded.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        fn response(&self, _: &ConnInfo, frame: &[u8], e: Pairing<()>, rewritten: bool, _: Duration) {
            if kwire::conn::read_response(frame, e.api_key, e.api_version).is_err() {
                self.undecoded.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            if rewritten && e.api_key == kwire::ApiKey::Produce {
                self.merged.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    let _serial = serial();
    setup();
    let upstream = broker().to_string();
    let rules: Arc<[Rule]> = vec!["valid.*=json,key".parse::<Rule>().unwrap()].into();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let proxy = rt
        .block_on(
            kwire::proxy::Proxy::builder("127.0.0.1:0".parse().unwrap(), [upstream])
                .filters(move |_: &Arc<ConnInfo>| {
                    let mut chain = FilterChain::new();
                    chain.push(ValidateRecords::new(rules.clone()));
                    chain
                })
                .hooks(Seen::default())
                .start(),
        )
        .unwrap();
    let tag = format!("{}", std::process::id());
    let script = r#"
import json, sys, time
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
bootstrap, tag = sys.argv[1], sys.argv[2]
valid, plain = "valid.orders-" + tag, "plain-" + tag
admin = KafkaAdminClient(bootstrap_servers=bootstrap)
admin.create_topics([NewTopic(valid, 2, 1), NewTopic(plain, 1, 1)])
admin.close()
p = KafkaProducer(bootstrap_servers=bootstrap, retries=0, acks="all", linger_ms=200, max_block_ms=20000)
def outcome(f):
    try:
        md = f.get(timeout=30)
        return {"partition": md.partition, "offset": md.offset}
    except Exception as e:
        return {"error": type(e).__name__, "message": str(e)}
# One linger: the good partition and the bad one most likely in one request. Partition 1's
# batch holds a good record and then a bad one: the whole batch is refused.
sent = [p.send(valid, key=b"k%d" % i, value=json.dumps({"n": i}).encode(), partition=0) for i in range(3)]
sent.append(p.send(valid, key=b"ky", value=b"[]", partition=1))
sent.append(p.send(valid, key=b"kx", value=b"{not json", partition=1))
p.flush()
first = [outcome(f) for f in sent]
keyless = outcome(p.send(valid, value=b'{"n": 9}', partition=0))
other = outcome(p.send(plain, value=b"{not json"))
p.close()
c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
parts = [TopicPartition(valid, 0), TopicPartition(valid, 1)]
c.assign(parts)
c.seek_to_beginning(*parts)
read = sorted([m.partition, m.offset, m.value.decode()] for m in c)
c.close()
print(json.dumps({"first": first, "keyless": keyless, "other": other, "read": read}))
"#;
    let mut cmd = Command::new(root().join("target/interop/venv/bin/python"));
    cmd.args(["-c", script, &proxy.local_addr().to_string(), &tag]);
    let out = run(cmd, "kafka-python through the validating library proxy", CLIENT_TIMEOUT);
    assert!(out.ok, "kafka-python failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let mut v: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or("")).unwrap();
    // The client tells each record of the refused batch why, from `record_errors`: the bad
    // one by its message, the good one as part of a batch with an invalid record.
    let message = |at: &str| v.pointer(at).and_then(Value::as_str).unwrap_or_default().to_string();
    let (bad, good, keyless) =
        (message("/first/4/message"), message("/first/3/message"), message("/keyless/message"));
    assert!(bad.contains("the value is not valid JSON: unexpected 'n' at byte 1"), "{v}");
    assert!(good.contains("part of a batch which had one more more invalid records"), "{v}");
    assert!(keyless.contains("the record has no key"), "{v}");
    for at in ["/first/3", "/first/4", "/keyless"] {
        v.pointer_mut(at).unwrap().as_object_mut().unwrap().remove("message");
    }
    let expected: Value = serde_json::json!({
        "first": [
            {"partition": 0, "offset": 0},
            {"partition": 0, "offset": 1},
            {"partition": 0, "offset": 2},
            {"error": "KafkaError"},
            {"error": "InvalidRecordError"},
        ],
        "keyless": {"error": "InvalidRecordError"},
        "other": {"partition": 0, "offset": 0},
        "read": [[0, 0, "{\"n\": 0}"], [0, 1, "{\"n\": 1}"], [0, 2, "{\"n\": 2}"]],
    });
    assert_eq!(v, expected);
    // The filter answered or merged the failing partitions' requests.
    assert!(proxy.hooks().merged.load(std::sync::atomic::Ordering::Relaxed) >= 1);
    assert_eq!(proxy.hooks().undecoded.load(std::sync::atomic::Ordering::Relaxed), 0);
    rt.block_on(proxy.shutdown_within(Duration::from_secs(10)));
    eprintln!("library proxy validating records: {v}");
}

/// `kwire::client` against the real broker, directly: the versions it chooses, create a
/// topic, produce (plain and with every codec), fetch, list offsets, commit and fetch a
/// group's offsets, and Kafka's own errors with their context.
#[test]
fn kwire_client_against_kafka() {
    use kwire::client::{Client, Config, OffsetSpec};
    use kwire::records::{Compression, NewRecord};
    use kwire::{ApiKey, ErrorCode};
    let _serial = serial();
    let addr = broker();
    let start = Instant::now();
    let mut c = Client::connect(addr).expect("connect to Kafka");
    // Kafka 4.4 serves what kwire speaks; the client names topics by name (Fetch 12).
    assert_eq!(c.version(ApiKey::Fetch), Some(12));
    assert_eq!(c.version(ApiKey::Produce), Some(12));
    assert!(c.conn().negotiated(ApiKey::Fetch) > Some(12), "{:?}", c.conn().broker_versions(ApiKey::Fetch));
    let topic = format!("client-{}", std::process::id());
    c.create_topic(&topic, 2).expect("create the topic");
    let e = c.create_topic(&topic, 2).unwrap_err();
    assert_eq!(e.error_code(), Some(ErrorCode::TopicAlreadyExists), "{e}");

    let records = [
        NewRecord::new(Some(b"k0"), Some(b"v0")).with_timestamp(1_700_000_000_000),
        NewRecord::new(None, Some(b"v1")).with_timestamp(1_700_000_001_000),
    ];
    // A new partition's leader may need a moment after Metadata names it.
    let base = loop {
        match c.produce(&topic, 1, &records) {
            Err(e)
                if e.error_code().is_some_and(|e| e.is_retriable())
                    && start.elapsed() < Duration::from_secs(20) =>
            {
                thread::sleep(Duration::from_millis(100))
            }
            other => break other.expect("produce"),
        }
    };
    assert_eq!(base, 0);
    let codecs = [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];
    for (i, codec) in codecs.into_iter().enumerate() {
        let mut z = Client::connect_with(addr, Config { compression: codec, ..Config::default() }).unwrap();
        let value = format!("{codec:?}").repeat(50);
        let rs = [NewRecord::new(None, Some(value.as_bytes())), NewRecord::new(None, Some(value.as_bytes()))];
        assert_eq!(z.produce(&topic, 1, &rs).unwrap(), 2 + 2 * i as i64, "{codec:?}");
    }
    // One Fetch may stop before the high watermark (Kafka reads up to the position it knows
    // of it); fetch_to_end asks again until it has every record.
    let f = c.fetch_to_end(&topic, 1, 0).unwrap();
    assert_eq!(f.high_watermark, 10);
    assert_eq!(f.records.iter().map(|r| r.offset).collect::<Vec<_>>(), (0..10).collect::<Vec<_>>());
    assert_eq!(
        (f.records[0].key.as_deref(), f.records[0].value.as_deref()),
        (Some(&b"k0"[..]), Some(&b"v0"[..]))
    );
    assert_eq!(f.records[0].timestamp, 1_700_000_000_000);
    assert_eq!(f.records[9].value.as_deref(), Some("Zstd".repeat(50).as_bytes()));
    assert_eq!(c.fetch(&topic, 1, 9).unwrap().records.len(), 1);

    assert_eq!(c.list_offset(&topic, 1, OffsetSpec::Earliest).unwrap().offset, 0);
    assert_eq!(c.list_offset(&topic, 1, OffsetSpec::Latest).unwrap().offset, 10);
    assert_eq!(c.list_offset(&topic, 1, OffsetSpec::Timestamp(1_700_000_000_500)).unwrap().offset, 1);
    assert_eq!(c.list_offset(&topic, 0, OffsetSpec::Latest).unwrap().offset, 0);

    let group = format!("client-g-{}", std::process::id());
    assert_eq!(c.committed_offset(&group, &topic, 1).unwrap(), None);
    c.commit_offset(&group, &topic, 1, 7).unwrap();
    assert_eq!(c.committed_offset(&group, &topic, 1).unwrap(), Some(7));

    let e = c.fetch(&topic, 1, 99).unwrap_err();
    assert_eq!(e.error_code(), Some(ErrorCode::OffsetOutOfRange), "{e}");
    let e = c.fetch("client-no-such-topic", 0, 0).unwrap_err();
    assert_eq!(e.error_code(), Some(ErrorCode::UnknownTopicOrPartition), "{e}");
    let e = c.produce(&topic, 7, &records).unwrap_err();
    assert_eq!(e.error_code(), Some(ErrorCode::UnknownTopicOrPartition), "{e}");
    eprintln!("kwire::client against Kafka: {:?} after the broker was up", start.elapsed());
}

/// The codecs of the batches a partition holds, read straight from the broker at `addr`
/// (Fetch v12, which names topics), waiting up to 20 s for `want` batches.
fn stored_codecs(addr: &str, topic: &str, want: usize) -> Vec<kwire::records::Compression> {
    use kwire::messages::FetchRequest;
    use kwire::messages::fetch::{FetchPartition, FetchTopic};
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let partitions = [FetchPartition {
            partition: 0,
            fetch_offset: 0,
            partition_max_bytes: 1 << 20,
            ..Default::default()
        }];
        let topics =
            [FetchTopic { topic: topic.into(), partitions: (&partitions).into(), ..Default::default() }];
        let request = FetchRequest {
            replica_id: -1,
            max_wait_ms: 100,
            max_bytes: 1 << 20,
            session_epoch: -1,
            topics: (&topics).into(),
            ..Default::default()
        };
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = vec![0u8; 4096];
        let n = kwire::dispatch::encode_request(&request, 12, 1, Some("codec-check"), &mut buf).unwrap();
        s.write_all(&buf[..n]).unwrap();
        let mut size = [0u8; 4];
        s.read_exact(&mut size).unwrap();
        let mut frame = vec![0u8; u32::from_be_bytes(size) as usize];
        s.read_exact(&mut frame).unwrap();
        let response = kwire::dispatch::parse_response(&frame, kwire::ApiKey::Fetch, 12).unwrap();
        let kwire::messages::ResponseBodyView::Fetch(fetch) = response.body else { panic!() };
        let mut codecs = Vec::new();
        for t in fetch.responses().iter() {
            for p in t.partitions().iter() {
                if let Some(records) = p.records() {
                    for batch in records {
                        codecs
                            .push(batch.expect("a stored batch reads").compression().expect("a known codec"));
                    }
                }
            }
        }
        if codecs.len() >= want || Instant::now() > deadline {
            return codecs;
        }
        thread::sleep(Duration::from_millis(200));
    }
}

/// librdkafka 2.0.2 (Debian's, under kcat) turns compression off when Produce's advertised
/// minimum version is above 0. Through `kwire proxy` in front of Apache Kafka, and against
/// `kwire serve`'s broker, its gzip, snappy and lz4 batches arrive compressed: both
/// advertise Produce from 0, as Kafka 4.x does.
#[test]
fn librdkafka_compresses_through_the_proxy_and_against_kwire_serve() {
    use kwire::records::Compression;
    let _serial = serial();
    setup();
    let upstream = broker();
    let proxy = quiet_proxy(upstream, "-Sn 4096", &[]);
    let served = kwire::broker::Broker::start(Default::default()).unwrap();
    let served_addr = served.addr().to_string();
    let tag = std::process::id();
    for (via, bootstrap, stored_at) in [
        ("kwire proxy", proxy.addr.as_str(), upstream),
        ("kwire serve", served_addr.as_str(), served_addr.as_str()),
    ] {
        for (codec, want) in
            [("gzip", Compression::Gzip), ("snappy", Compression::Snappy), ("lz4", Compression::Lz4)]
        {
            let topic = format!("rdkafka-{codec}-{tag}");
            let mut kcat = Command::new("kcat")
                .args(["-P", "-b", bootstrap, "-t", &topic, "-p", "0", "-z", codec, "-X", "linger.ms=100"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("kcat (tests/proxy/setup.sh installs it)");
            let lines: String =
                (0..20).map(|i| format!("a compressible record {i} {}\n", "x".repeat(100))).collect();
            kcat.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
            let out = kcat.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "kcat via {via} ({codec}) failed:\n{stderr}");
            assert!(!stderr.contains("does not support compression"), "via {via}: {stderr}");
            let codecs = stored_codecs(stored_at, &topic, 1);
            assert!(!codecs.is_empty(), "via {via}: no batch of {topic} stored");
            assert!(codecs.iter().all(|c| *c == want), "via {via}: {codec} batches stored as {codecs:?}");
        }
    }
    let (_, alive) = stop_proxy(proxy);
    assert!(alive, "kwire proxy exited during the kcat runs");
}

/// Record encryption with real clients: `kwire proxy --encrypt ... --kms memory` in front of
/// Apache Kafka. kafka-python produces with every codec (keys, headers, a tombstone) and
/// consumes through the proxy: exactly the plaintext, in order. Read straight from the
/// broker, every value is an envelope and no plaintext value or header is anywhere in a
/// stored record; the stored batches keep the client's codec. Then kcat (librdkafka)
/// produces gzip batches through the proxy and reads them back through it, and straight
/// from the broker sees only envelopes.
#[test]
fn encrypting_proxy_with_kafka_python_and_kcat() {
    use base64::Engine as _;
    use kwire::records::Compression;
    let _serial = serial();
    setup();
    let upstream = broker();
    let proxy = quiet_proxy(upstream, "-Sn 4096", &["--encrypt", "enc.*=kek-1,headers", "--kms", "memory"]);
    let tag = std::process::id();
    let script = r#"
import base64, json, sys
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
proxy, broker, tag = sys.argv[1], sys.argv[2], sys.argv[3]
codecs = ["none", "gzip", "snappy", "lz4", "zstd"]
admin = KafkaAdminClient(bootstrap_servers=proxy)
admin.create_topics([NewTopic("enc.%s-%s" % (c, tag), 1, 1) for c in codecs])
admin.close()
def read(bootstrap, topic, n):
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=10000)
    tp = TopicPartition(topic, 0)
    c.assign([tp]); c.seek_to_beginning(tp)
    out = []
    for m in c:
        out.append({"offset": m.offset, "key": m.key and m.key.decode(),
                    "value": None if m.value is None else base64.b64encode(m.value).decode(),
                    "headers": [[k, None if v is None else base64.b64encode(v).decode()] for k, v in m.headers]})
        if len(out) == n:
            break
    c.close()
    return out
result = {}
for codec in codecs:
    topic = "enc.%s-%s" % (codec, tag)
    p = KafkaProducer(bootstrap_servers=proxy, compression_type=None if codec == "none" else codec,
                      acks="all", linger_ms=50, retries=5)
    for i in range(20):
        value = None if i == 7 else ("secret-%s-%d-%s" % (codec, i, "abc" * i)).encode()
        p.send(topic, key=b"k%d" % i, value=value, headers=[("trace", b"hdr-secret-%d" % i)])
    p.flush(); p.close()
    result[codec] = {"through": read(proxy, topic, 20), "direct": read(broker, topic, 20)}
print(json.dumps(result))
"#;
    let mut cmd = Command::new(root().join("target/interop/venv/bin/python"));
    cmd.args(["-c", script, &proxy.addr, upstream, &tag.to_string()]);
    let out = run(cmd, "kafka-python through the encrypting proxy", CLIENT_TIMEOUT);
    assert!(out.ok, "kafka-python failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let v: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or("")).unwrap();
    let b64 = |s: &Value| base64::engine::general_purpose::STANDARD.decode(s.as_str().unwrap()).unwrap();
    let contains = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    let codecs = [
        ("none", Compression::None),
        ("gzip", Compression::Gzip),
        ("snappy", Compression::Snappy),
        ("lz4", Compression::Lz4),
        ("zstd", Compression::Zstd),
    ];
    for (codec, want) in codecs {
        let through = v[codec]["through"].as_array().unwrap();
        let direct = v[codec]["direct"].as_array().unwrap();
        assert_eq!((through.len(), direct.len()), (20, 20), "{codec}: {v}");
        for (i, (t, d)) in through.iter().zip(direct).enumerate() {
            let plain = format!("secret-{codec}-{i}-{}", "abc".repeat(i)).into_bytes();
            assert_eq!(t["offset"], i, "{codec}");
            assert_eq!(t["key"], format!("k{i}"), "{codec}: keys kept");
            assert_eq!(d["key"], format!("k{i}"), "{codec}: keys kept");
            let header = format!("hdr-secret-{i}").into_bytes();
            assert_eq!(t["headers"].as_array().unwrap().len(), 1, "{codec} {i}");
            assert_eq!(b64(&t["headers"][0][1]), header, "{codec} {i}");
            if i == 7 {
                assert!(t["value"].is_null() && d["value"].is_null(), "{codec}: a tombstone stays one");
            } else {
                assert_eq!(b64(&t["value"]), plain, "{codec} record {i} through the proxy");
                let stored = b64(&d["value"]);
                assert!(stored.starts_with(b"kwE\x01"), "{codec} {i}: stored value is not an envelope");
                assert!(!contains(&stored, &plain), "{codec} {i}: plaintext stored");
            }
            for h in d["headers"].as_array().unwrap() {
                let bytes = if h[1].is_null() { Vec::new() } else { b64(&h[1]) };
                assert!(
                    !contains(&bytes, &header) && h[0] != "trace",
                    "{codec} {i}: a header stored in the clear"
                );
            }
        }
        let topic = format!("enc.{codec}-{tag}");
        let stored = stored_codecs(upstream, &topic, 1);
        assert!(!stored.is_empty() && stored.iter().all(|c| *c == want), "{codec}: stored as {stored:?}");
    }
    // librdkafka (kcat): gzip batches in, the same lines out through the proxy, envelopes
    // straight from the broker.
    let topic = format!("enc.kcat-{tag}");
    let lines: Vec<String> = (0..30).map(|i| format!("kcat-secret-{i}-{}", "y".repeat(i))).collect();
    let mut kcat = Command::new("kcat")
        .args(["-P", "-b", &proxy.addr, "-t", &topic, "-p", "0", "-z", "gzip", "-X", "linger.ms=50"])
        .args(["-X", "topic.metadata.refresh.interval.ms=500"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kcat (tests/proxy/setup.sh installs it)");
    kcat.stdin.take().unwrap().write_all((lines.join("\n") + "\n").as_bytes()).unwrap();
    let produced = kcat.wait_with_output().unwrap();
    assert!(produced.status.success(), "kcat -P: {}", String::from_utf8_lossy(&produced.stderr));
    let consume = |bootstrap: &str| {
        let out = Command::new("kcat")
            .args([
                "-C",
                "-b",
                bootstrap,
                "-t",
                &topic,
                "-p",
                "0",
                "-o",
                "beginning",
                "-e",
                "-q",
                "-f",
                "%s\n",
            ])
            .output()
            .expect("kcat");
        assert!(out.status.success(), "kcat -C: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let through = consume(&proxy.addr);
    assert_eq!(String::from_utf8_lossy(&through), lines.join("\n") + "\n", "kcat through the proxy");
    let direct = consume(upstream);
    for line in &lines {
        assert!(!contains(&direct, line.as_bytes()), "kcat straight from the broker saw {line}");
    }
    assert_eq!(direct.windows(4).filter(|w| *w == b"kwE\x01").count(), lines.len(), "one envelope a record");
    // librdkafka sends a batch that gzip does not shrink (a lone short record) uncompressed.
    let stored = stored_codecs(upstream, &topic, 1);
    assert!(stored.contains(&Compression::Gzip), "kcat's batches stored as {stored:?}");
    assert!(stored.iter().all(|c| matches!(c, Compression::Gzip | Compression::None)), "{stored:?}");
    let (_, alive) = stop_proxy(proxy);
    assert!(alive, "kwire proxy exited during the encrypted runs");
}

/// The batches a partition holds, read straight from the broker at `addr` (Fetch v12, which
/// names topics): each batch's codec and its records' bytes, decompressed; with the
/// partition's high watermark.
fn stored_batches(
    addr: &str,
    topic: &str,
    partition: i32,
) -> (Vec<(kwire::records::Compression, Vec<u8>)>, i64) {
    use kwire::messages::FetchRequest;
    use kwire::messages::fetch::{FetchPartition, FetchTopic};
    let partitions =
        [FetchPartition { partition, fetch_offset: 0, partition_max_bytes: 8 << 20, ..Default::default() }];
    let topics = [FetchTopic { topic: topic.into(), partitions: (&partitions).into(), ..Default::default() }];
    let request = FetchRequest {
        replica_id: -1,
        max_wait_ms: 100,
        max_bytes: 8 << 20,
        session_epoch: -1,
        topics: (&topics).into(),
        ..Default::default()
    };
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = vec![0u8; 4096];
    let n = kwire::dispatch::encode_request(&request, 12, 1, Some("stored-check"), &mut buf).unwrap();
    s.write_all(&buf[..n]).unwrap();
    let mut size = [0u8; 4];
    s.read_exact(&mut size).unwrap();
    let mut frame = vec![0u8; u32::from_be_bytes(size) as usize];
    s.read_exact(&mut frame).unwrap();
    let response = kwire::dispatch::parse_response(&frame, kwire::ApiKey::Fetch, 12).unwrap();
    let kwire::messages::ResponseBodyView::Fetch(fetch) = response.body else { panic!() };
    let (mut batches, mut high_watermark, mut next) = (Vec::new(), -1, 0);
    for t in fetch.responses().iter() {
        for p in t.partitions().iter() {
            assert_eq!(p.error_code(), 0, "{topic}/{partition}: fetch error");
            high_watermark = p.high_watermark();
            for batch in p.records().into_iter().flatten() {
                let batch = batch.expect("a stored batch reads");
                let codec = batch.compression().expect("a known codec");
                let mut bytes = Vec::new();
                match codec {
                    kwire::records::Compression::None => bytes.extend_from_slice(batch.payload()),
                    c => kwire::records::compression::decompress_to_vec(
                        c,
                        batch.payload(),
                        &mut bytes,
                        64 << 20,
                    )
                    .expect("a stored batch decompresses"),
                }
                next = batch.next_offset();
                batches.push((codec, bytes));
            }
        }
    }
    assert_eq!(next, high_watermark, "{topic}/{partition}: not every stored batch came in one fetch");
    (batches, high_watermark)
}

/// Record encryption with the Java kafka-clients and franz-go: each runs its whole program
/// through `kwire proxy --encrypt ... --kms memory` in front of Apache Kafka (produce with
/// every codec, consume in a consumer group, commit) and consumes exactly what it produced,
/// in order. Straight from the broker, franz-go (no group, every partition from its start)
/// sees one envelope a record and no plaintext; every stored batch, decompressed, holds no
/// plaintext value, and the Java client's batches keep its codecs.
#[test]
fn encrypting_proxy_with_java_and_franz_go() {
    use base64::Engine as _;
    use kwire::records::Compression;
    let _serial = serial();
    setup();
    let upstream = broker();
    let proxy = quiet_proxy(upstream, "-Sn 4096", &["--encrypt", "enc.*=kek-1,headers", "--kms", "memory"]);
    let contains = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    // The value franz-go's program lists as "large-900000": the alphabet over and over.
    let alphabet = b"abcdefghijklmnopqrstuvwxyz";
    for client in ["java", "franz-go"] {
        let prefix = format!("enc.{}", prefix(client));
        let out = run(client_command(client, &proxy.addr, &prefix), client, CLIENT_TIMEOUT);
        assert!(
            out.ok,
            "{client} through the encrypting proxy failed\nstdout:\n{}\nstderr:\n{}",
            out.stdout, out.stderr
        );
        let answer = out.stdout.lines().rev().find(|l| l.starts_with('{')).expect("the client's JSON");
        let answer: Value = serde_json::from_str(answer).expect("client JSON");
        check_answers(client, &answer, &prefix);
        let topic = format!("{prefix}-t");
        let produced: Vec<String> = (0..3)
            .flat_map(|p| answer["produced"][p.to_string()].as_array().unwrap().clone())
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        let plaintexts: Vec<&[u8]> = produced
            .iter()
            .map(|v| if v.starts_with("large-") { &alphabet[..] } else { v.as_bytes() })
            .collect();

        // franz-go straight at the broker.
        let mut read = Command::new(root().join("target/go-client/go-client"));
        read.args(["read", upstream, &topic, &produced.len().to_string()]);
        let direct = run(read, "franz-go reading the broker", CLIENT_TIMEOUT);
        assert!(direct.ok, "franz-go read failed\nstderr:\n{}", direct.stderr);
        let records: Vec<Value> = direct.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let values: Vec<Vec<u8>> = records
            .iter()
            .filter(|r| r.get("o").is_some())
            .map(|r| {
                let v = r["v"].as_str().unwrap_or_else(|| panic!("{client}: a null value stored: {r}"));
                base64::engine::general_purpose::STANDARD.decode(v).unwrap()
            })
            .collect();
        assert_eq!(values.len(), produced.len(), "{client}: records read straight from the broker");
        for v in &values {
            assert!(v.starts_with(b"kwE\x01"), "{client}: a stored value is not an envelope");
            for plain in &plaintexts {
                assert!(!contains(v, plain), "{client}: a stored value holds plaintext");
            }
        }

        // Every stored batch, decompressed.
        let mut codecs = Vec::new();
        let mut stored = 0;
        for partition in 0..3 {
            let (batches, high_watermark) = stored_batches(upstream, &topic, partition);
            stored += high_watermark;
            for (codec, bytes) in batches {
                codecs.push(codec);
                for plain in &plaintexts {
                    assert!(!contains(&bytes, plain), "{client}: a stored {codec:?} batch holds plaintext");
                }
            }
        }
        assert_eq!(stored, produced.len() as i64, "{client}: records stored");
        // The Java client compresses every batch with its codec, and the proxy keeps it;
        // franz-go sends a batch uncompressed when the codec does not make it shorter, as
        // it does not for this program's short values.
        if client == "java" {
            for want in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
                assert!(codecs.contains(&want), "{client}: no {want:?} batch stored: {codecs:?}");
            }
        }
        eprintln!("{client}: stored batches by codec: {codecs:?}");
    }
    let (_, alive) = stop_proxy(proxy);
    assert!(alive, "kwire proxy exited during the encrypted runs");
}
