//! `kwire proxy` in front of a real three-broker Apache Kafka cluster (KRaft, each node broker
//! and controller, `tests/kafka/broker.sh cluster`), with real clients:
//!
//! - **Failover, two proxies**: idempotent producers (acks=all) and two consumer groups
//!   (franz-go and confluent-kafka), each group's members split over two proxy instances with
//!   the same deterministic port mapping (`--broker-ports`, on 127.0.0.1 and 127.0.0.2). One
//!   broker is killed (SIGKILL) mid-run and restarted. Every record acknowledged must be
//!   consumed by each group, once per offset and in order per partition; the proxies log the
//!   lost broker, keep serving, and close no client connection but those to the dead broker.
//!   Plain group consumers are at-least-once (a commit lost with a killed coordinator is
//!   re-delivered, and reported); **exactly once** is Kafka's own consume-transform-produce:
//!   a third group (franz-go `GroupTransactSession`, a member through each proxy) copies every
//!   record in transactions that commit its offsets, and the read_committed output must hold
//!   every acknowledged record exactly once, in order per partition.
//! - **SASL**: PLAIN and SCRAM-SHA-512 through the proxy to the brokers' SASL_PLAINTEXT
//!   listeners (kafka-python and confluent-kafka), and the SaslHandshake v0 flow (raw tokens)
//!   written by hand here. The log names the mechanism and the user; the passwords (made
//!   unique per run) appear in no output of the proxy: text and JSON logs, recordings,
//!   metrics, stderr, neither as text nor as base64 nor as hex.
//!
//! One cluster for the whole binary, its tests one at a time. The clients and the broker
//! jars come from `tests/proxy/setup.sh` (run when missing). See docs/proxy.md.
#![cfg(feature = "cli")]

mod common;

use common::{process, proxy as proxy_harness, root};

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use process::run;
use proxy_harness::{Printed, Proxy, scrape};
use serde_json::Value;

const CLUSTER_TIMEOUT: Duration = Duration::from_secs(600);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(150);
/// Seconds each producer of the failover test produces for.
const PRODUCE_SECONDS: u64 = 24;
/// The node killed and restarted.
const VICTIM: u32 = 2;
const PLAIN_USER: &str = "alice";
const SCRAM_USER: &str = "bob";

/// One test at a time: they share the cluster, and the failover test kills a node of it.
fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn modified(p: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// Installs the clients once per test process (tests/proxy/setup.sh); again when the
/// franz-go program is older than its failover modes.
fn setup() {
    common::clients::setup(|| {
        let go = modified(&root().join("target/go-client/go-client"));
        go.is_some() && go >= modified(&root().join("tests/interop/go/cluster.go"))
    });
}

/// A password no other run uses, so that finding it anywhere means it leaked.
fn unique(what: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos());
    format!("kw{what}{:016x}Zq", h.finish())
}

/// The cluster of this test process: three nodes, a PLAINTEXT listener and a SASL_PLAINTEXT
/// one (PLAIN for alice, SCRAM-SHA-512 for bob) on each.
struct Cluster {
    dir: PathBuf,
    /// Node `i + 1`'s PLAINTEXT address.
    plain: Vec<String>,
    /// Node `i + 1`'s SASL_PLAINTEXT address.
    sasl: Vec<String>,
    plain_password: String,
    scram_password: String,
}

fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let dir = root().join(format!("target/kafka/cluster-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (plain_password, scram_password) = (unique("Plain"), unique("Scram"));
        let props = dir.join("sasl.properties");
        std::fs::write(
            &props,
            format!(
                "listeners=PLAINTEXT://127.0.0.1:@PORT@,SASL_PLAINTEXT://127.0.0.1:@PORT2@,CONTROLLER://127.0.0.1:@CPORT@\n\
                 advertised.listeners=PLAINTEXT://127.0.0.1:@PORT@,SASL_PLAINTEXT://127.0.0.1:@PORT2@\n\
                 listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT\n\
                 sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512\n\
                 listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512\n\
                 listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_{PLAIN_USER}=\"{plain_password}\";\n\
                 listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n"
            ),
        )
        .unwrap();
        let scram = format!("--add-scram SCRAM-SHA-512=[name={SCRAM_USER},password={scram_password}]");
        let start = Instant::now();
        let env = [("KWIRE_KAFKA_PROPS", props.as_os_str()), ("KWIRE_KAFKA_FORMAT_ARGS", scram.as_ref())];
        let (_, out) = proxy_harness::kafka("cluster", "cluster", &["3", "{pid}"], &env, CLUSTER_TIMEOUT);
        eprintln!("cluster of 3 started in {:.1}s", start.elapsed().as_secs_f64());
        let ports = std::fs::read_to_string(dir.join("ports")).unwrap();
        let (mut plain, mut sasl) = (Vec::new(), Vec::new());
        for line in ports.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            plain.push(format!("127.0.0.1:{}", f[1]));
            sasl.push(format!("127.0.0.1:{}", f[2]));
        }
        assert_eq!(out.stdout.lines().collect::<Vec<_>>(), plain, "broker.sh printed the PLAINTEXT addresses");
        Cluster { dir, plain, sasl, plain_password, scram_password }
    })
}

impl Cluster {
    fn node(&self, what: &str, id: u32, signal: Option<&str>) {
        let mut cmd = Command::new("bash");
        cmd.arg(root().join("tests/kafka/broker.sh")).arg(what).arg(&self.dir).arg(id.to_string());
        if let Some(s) = signal {
            cmd.arg(s);
        }
        let out = run(cmd, what, CLUSTER_TIMEOUT);
        assert!(out.ok, "broker.sh {what} {id} failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    }
}

/// A port P free on every one of `ips` together with P+1 ..= P+`nodes`: the bootstrap
/// listener on P and `--broker-ports P` (node ids start at 1). Taken below the ephemeral
/// range: the ports there are taken by outgoing connections, and those in TIME_WAIT (the
/// 9,000 connections of tests/proxy.rs, for a minute after it) refuse a listener.
fn free_ports(ips: &[&str], nodes: u16) -> u16 {
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let (low, high) = (10_000u16, ephemeral.saturating_sub(nodes + 1).max(10_001));
    // A start of its own for each test process, then every candidate in turn.
    let span = u32::from(high - low);
    let start = std::process::id().wrapping_mul(7919) % span;
    'again: for i in 0..span {
        let p = low + ((start + i) % span) as u16;
        for ip in ips {
            for q in p..=p + nodes {
                if TcpListener::bind((*ip, q)).is_err() {
                    continue 'again;
                }
            }
        }
        return p;
    }
    panic!("no free run of {} ports in {low}..{high} on {ips:?}", nodes + 1);
}

fn proxy_args(listen: &str, upstream: &[String], base: u16, more: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "--listen".into(),
        listen.into(),
        "--upstream".into(),
        upstream.join(","),
        "--broker-ports".into(),
        base.to_string(),
    ];
    v.extend(more.iter().map(|s| s.to_string()));
    v
}

fn python() -> PathBuf {
    root().join("target/interop/venv/bin/python")
}

fn go_client() -> Command {
    Command::new(root().join("target/go-client/go-client"))
}

fn confluent_cluster() -> Command {
    let mut c = Command::new(python());
    c.arg(root().join("tests/proxy/confluent_cluster.py"));
    c
}

/// One record as a consumer printed it.
#[derive(Clone, Debug)]
struct Rec {
    partition: i64,
    offset: i64,
    value: String,
}

/// A consumer running, its records collected as it prints them.
struct Consumer {
    name: String,
    child: Child,
    records: Arc<Mutex<Vec<Rec>>>,
    reader: Option<thread::JoinHandle<()>>,
    stderr: Option<thread::JoinHandle<String>>,
}

impl Consumer {
    fn start(name: &str, mut cmd: Command) -> Consumer {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let records = Arc::new(Mutex::new(Vec::new()));
        let sink = records.clone();
        let who = name.to_string();
        let reader = thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let v: Value =
                    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{who}: not JSON ({e}): {line}"));
                let rec = Rec {
                    partition: v["p"].as_i64().unwrap(),
                    offset: v["o"].as_i64().unwrap(),
                    value: v["v"].as_str().unwrap().to_string(),
                };
                sink.lock().unwrap().push(rec);
            }
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Consumer { name: name.to_string(), child, records, reader: Some(reader), stderr: Some(stderr) }
    }

    /// Waits for the consumer to end (after the stop file); its records and stderr.
    fn finish(mut self) -> (Vec<Rec>, String) {
        let start = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > Duration::from_secs(60) {
                let _ = self.child.kill();
                panic!("{} did not stop within 60 s of the stop file", self.name);
            }
            thread::sleep(Duration::from_millis(100));
        };
        if let Some(r) = self.reader.take() {
            r.join().expect("consumer reader");
        }
        let err = self.stderr.take().map(|e| e.join().unwrap_or_default()).unwrap_or_default();
        assert!(status.success(), "{} failed ({status}):\n{err}", self.name);
        let recs = std::mem::take(&mut *self.records.lock().unwrap());
        (recs, err)
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Partition to offset to value.
type Log = BTreeMap<i64, BTreeMap<i64, String>>;

/// What a producer printed: its acknowledged records added to `log`; returns how many it
/// sent.
fn acked(name: &str, out: &process::Output, log: &mut Log) -> usize {
    assert!(out.ok, "producer {name} failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let line = out.stdout.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| {
        panic!("producer {name} printed no JSON\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr)
    });
    let v: Value = serde_json::from_str(line).unwrap();
    assert_eq!(v["errors"].as_array().map(Vec::len), Some(0), "producer {name}: {}", v["errors"]);
    let sent = v["sent"].as_u64().unwrap() as usize;
    let mut n = 0;
    let mut seqs = BTreeSet::new();
    for (p, recs) in v["acked"].as_object().unwrap() {
        let p: i64 = p.parse().unwrap();
        for r in recs.as_array().unwrap() {
            let (offset, value) = (r[0].as_i64().unwrap(), r[1].as_str().unwrap().to_string());
            let seq: usize = value.rsplit('-').next().unwrap().parse().unwrap();
            assert_eq!(seq as i64 % 3, p, "producer {name}: {value} in partition {p}");
            seqs.insert(seq);
            let before = log.entry(p).or_default().insert(offset, value.clone());
            assert!(before.is_none(), "two records acknowledged at {p}/{offset}: {before:?} and {value}");
            n += 1;
        }
    }
    assert_eq!(n, sent, "producer {name}: every record sent is acknowledged once");
    assert_eq!(seqs.len(), sent, "producer {name}: each record acknowledged once");
    sent
}

/// Checks that a group consumed exactly `log`: every record at its offset, no gap, no other
/// value, each member's deliveries of a partition in offset order. Returns how many records
/// were delivered more than once (the same record at the same offset).
fn check_group(group: &str, members: &[(String, Vec<Rec>)], log: &Log) -> usize {
    let mut seen: Log = BTreeMap::new();
    let mut again = 0;
    for (member, recs) in members {
        let mut last: BTreeMap<i64, i64> = BTreeMap::new();
        for r in recs {
            let at = seen.entry(r.partition).or_default();
            match at.insert(r.offset, r.value.clone()) {
                Some(before) => {
                    assert_eq!(before, r.value, "{group}: two values at {}/{}", r.partition, r.offset);
                    again += 1;
                }
                None => {
                    if let Some(prev) = last.get(&r.partition) {
                        assert!(
                            r.offset > *prev,
                            "{group}/{member}: partition {} delivered {} after {prev}",
                            r.partition,
                            r.offset
                        );
                    }
                    last.insert(r.partition, r.offset);
                }
            }
        }
    }
    for (p, want) in log {
        let got = seen.get(p).cloned().unwrap_or_default();
        let missing: Vec<_> = want.keys().filter(|o| !got.contains_key(o)).take(10).collect();
        assert!(missing.is_empty(), "{group}: partition {p}: offsets never consumed, e.g. {missing:?}");
        for (o, v) in &got {
            assert_eq!(want.get(o), Some(v), "{group}: partition {p} offset {o} is not what was produced");
        }
    }
    again
}

/// A proxy log's connections.
#[derive(Default)]
struct Conns {
    /// Conn id to the broker it was forwarded to.
    to: BTreeMap<String, String>,
    /// Conn id and why it closed.
    closed: Vec<(String, String)>,
    /// Lines saying a broker could not be reached.
    refused: Vec<String>,
}

fn connections(lines: &[String]) -> Conns {
    let Conns { mut to, mut closed, mut refused } = Conns::default();
    for l in lines {
        let Some(conn) = l.split_whitespace().nth(1).filter(|w| w.starts_with("conn=")) else { continue };
        if let Some(up) = l.split(": connected, forwarding to ").nth(1) {
            to.insert(conn.to_string(), up.trim().to_string());
        } else if let Some(why) = l.split(": closed (").nth(1) {
            closed.push((conn.to_string(), why.trim_end_matches(')').to_string()));
        } else if l.contains(": cannot connect to ") {
            refused.push(l.clone());
        }
    }
    Conns { to, closed, refused }
}

/// The proxy closed no client connection but those to `dead`; returns how many it closed
/// because `dead` went (the lost upstream, logged).
fn check_closes(proxy: &str, lines: &[String], dead: &str) -> usize {
    let Conns { to, closed, refused } = connections(lines);
    let mut lost = 0;
    for (conn, why) in &closed {
        if why.starts_with("client") {
            continue;
        }
        let up = to.get(conn).map(String::as_str).unwrap_or("?");
        assert_eq!(up, dead, "{proxy}: {conn} to {up} closed by the proxy or its broker: {why}");
        assert!(why.contains("broker"), "{proxy}: {conn} to {up} closed by the proxy: {why}");
        lost += 1;
    }
    for l in &refused {
        assert!(l.contains(&format!("cannot connect to {dead}:")), "{proxy}: {l}");
    }
    lost + refused.len()
}

#[test]
fn failover_through_two_proxies() {
    let _x = exclusive();
    setup();
    let c = cluster();
    let started = Instant::now();
    let pid = std::process::id();
    let ips = ["127.0.0.1", "127.0.0.2"];
    let base = free_ports(&ips, 3);
    let proxies: Vec<Proxy> = ips
        .iter()
        .map(|ip| Proxy::start(&proxy_args(&format!("{ip}:{base}"), &c.plain, base, &["--quiet"])))
        .collect();
    let (a, b) = (proxies[0].addr.clone(), proxies[1].addr.clone());
    let topic = format!("failover-{pid}");
    let mut create = confluent_cluster();
    create.args(["create", &a, &topic, "3", "3", "2"]);
    let out = run(create, "create the topic", CLIENT_TIMEOUT);
    assert!(out.ok, "creating {topic} failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    // The exactly-once members' output: input partition P goes to output partition P.
    let out_topic = format!("failover-out-{pid}");
    let mut create = confluent_cluster();
    create.args(["create", &b, &out_topic, "3", "3", "2"]);
    let out = run(create, "create the output topic", CLIENT_TIMEOUT);
    assert!(out.ok, "creating {out_topic} failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);

    let stop = c.dir.join(format!("stop-{pid}"));
    let _ = std::fs::remove_file(&stop);
    let stop_s = stop.to_string_lossy().into_owned();
    let (go_group, rd_group) = (format!("fo-go-{pid}"), format!("fo-rd-{pid}"));
    let mut consumers = Vec::new();
    for (name, via) in [("go-a", &a), ("go-b", &b)] {
        let mut cmd = go_client();
        cmd.args(["cluster-consume", via, &topic, &go_group, &stop_s, name]);
        consumers.push((go_group.clone(), Consumer::start(name, cmd)));
    }
    for (name, via) in [("rd-a", &a), ("rd-b", &b)] {
        let mut cmd = confluent_cluster();
        cmd.args(["consume", via, &topic, &rd_group, &stop_s, name]);
        consumers.push((rd_group.clone(), Consumer::start(name, cmd)));
    }
    // Exactly once: consume-transform-produce in transactions (read_committed, the group's
    // offsets committed in each transaction), a member through each proxy.
    let eos_group = format!("fo-eos-{pid}");
    let mut eos = Vec::new();
    for (name, via) in [("eos-a", &a), ("eos-b", &b)] {
        let mut cmd = go_client();
        let txn = format!("fo-txn-{pid}-{name}");
        cmd.args(["cluster-transact", via, &topic, &out_topic, &eos_group, &txn, &stop_s, name]);
        eos.push(Consumer::start(name, cmd));
    }
    let secs = PRODUCE_SECONDS.to_string();
    let mut go_producer = go_client();
    go_producer.args(["cluster-produce", &a, &topic, &secs, "go"]);
    let mut rd_producer = confluent_cluster();
    rd_producer.args(["produce", &b, &topic, &secs, "rd"]);
    let producers: Vec<_> = [("go", go_producer), ("rd", rd_producer)]
        .into_iter()
        .map(|(name, cmd)| (name, thread::spawn(move || run(cmd, name, CLIENT_TIMEOUT))))
        .collect();

    let produce_start = Instant::now();
    thread::sleep(Duration::from_secs(PRODUCE_SECONDS / 3));
    c.node("stop-node", VICTIM, Some("KILL"));
    let killed_at = produce_start.elapsed();
    thread::sleep(Duration::from_secs(PRODUCE_SECONDS / 3));
    c.node("start-node", VICTIM, None);
    let back_at = produce_start.elapsed();

    let mut log: Log = BTreeMap::new();
    let mut sent = 0;
    for (name, h) in producers {
        sent += acked(name, &h.join().expect("producer thread"), &mut log);
    }
    let produced_in = produce_start.elapsed();
    // Each producer's records in order in each partition.
    for (p, recs) in &log {
        let mut last: BTreeMap<&str, usize> = BTreeMap::new();
        for v in recs.values() {
            let (who, seq) = v.rsplit_once('-').unwrap();
            let seq: usize = seq.parse().unwrap();
            if let Some(prev) = last.insert(who, seq) {
                assert!(seq > prev, "partition {p}: {who}-{seq} after {who}-{prev}");
            }
        }
    }
    let total: usize = log.values().map(BTreeMap::len).sum();
    assert_eq!(total, sent);

    // Until every group has every record.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut done = true;
        for group in [&go_group, &rd_group] {
            let mut got: BTreeSet<(i64, i64)> = BTreeSet::new();
            for (g, cons) in &consumers {
                if g == group {
                    got.extend(cons.records.lock().unwrap().iter().map(|r| (r.partition, r.offset)));
                }
            }
            done &= got.len() >= total;
        }
        let mut got: BTreeSet<(i64, i64)> = BTreeSet::new();
        for cons in &eos {
            got.extend(cons.records.lock().unwrap().iter().map(|r| (r.partition, r.offset)));
        }
        done &= got.len() >= total;
        if done || Instant::now() > deadline {
            break;
        }
        thread::sleep(Duration::from_millis(500));
    }
    std::fs::write(&stop, "stop").unwrap();
    let mut groups: BTreeMap<String, Vec<(String, Vec<Rec>)>> = BTreeMap::new();
    for (group, cons) in consumers {
        let name = cons.name.clone();
        let (recs, err) = cons.finish();
        eprintln!("{name}: {} records; stderr:\n{}", recs.len(), err.trim_end());
        groups.entry(group).or_default().push((name, recs));
    }
    let mut report = Vec::new();
    for (group, members) in &groups {
        let again = check_group(group, members, &log);
        // Records delivered again, at their offsets, with their values: a commit lost with
        // the killed broker when it was the group's coordinator, then a rebalance, re-delivers
        // from the last commit (the consumer's at-least-once contract, proxy or not).
        // Reported, not failed; a gap, a second value at an offset, or a record out of order
        // fails above.
        let per: Vec<String> = members.iter().map(|(m, r)| format!("{m} {}", r.len())).collect();
        report.push(format!("{group}: {} ({again} delivered again)", per.join(", ")));
    }
    let mut eos_counts = Vec::new();
    for cons in eos {
        let name = cons.name.clone();
        let (recs, err) = cons.finish();
        eprintln!("{name}: {} records in committed transactions; stderr:\n{}", recs.len(), err.trim_end());
        eos_counts.push(transact_counts(&name, &err));
    }
    // The truth: what the output topic holds, read with read_committed.
    let mut read = go_client();
    read.args(["cluster-read-committed", &a, &out_topic, &total.to_string(), "eos-read"]);
    let out = run(read, "read the output topic", CLIENT_TIMEOUT);
    assert!(out.ok, "reading {out_topic} failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let outputs = check_exactly_once(&out.stdout, &log);
    report.push(format!(
        "{eos_group}: {outputs} committed outputs, each input record exactly once, in order ({})",
        eos_counts.join(", ")
    ));

    let dead = c.plain[(VICTIM - 1) as usize].clone();
    let mut lost = 0;
    for (name, p) in ["proxy 127.0.0.1", "proxy 127.0.0.2"].into_iter().zip(proxies) {
        let printed = p.interrupt();
        let lines = printed.lines;
        let n = check_closes(name, &lines, &dead);
        let opened = connections(&lines).to.len();
        eprintln!("{name}: {opened} connections, {n} lost with broker {VICTIM} ({dead})");
        for node in 1..=3 {
            let want = format!(
                "listening on {}:{} for broker {node} ",
                name.split(' ').nth(1).unwrap(),
                base + node
            );
            assert!(
                lines.iter().any(|l| l.contains(&want)),
                "{name}: no listener for broker {node}: {lines:#?}"
            );
        }
        assert!(!printed.stderr.contains("panicked"), "{name}: {}", printed.stderr);
        lost += n;
    }
    assert!(lost > 0, "no proxy logged the loss of broker {VICTIM}");
    eprintln!(
        "failover: {sent} records from 2 producers in {:.1}s (broker {VICTIM} killed at {:.1}s, back at {:.1}s), \
         each consumed by 2 groups and transformed exactly once by a third, over 2 proxies: {}; test took {:.1}s",
        produced_in.as_secs_f64(),
        killed_at.as_secs_f64(),
        back_at.as_secs_f64(),
        report.join("; "),
        started.elapsed().as_secs_f64()
    );
}

/// Where a secret could be read in what a proxy left: its log lines, stderr, recordings and
/// a metrics scrape.
fn outputs(printed: &Printed, record: &Path, metrics: &str) -> Vec<(String, String)> {
    let mut out = vec![
        ("log".to_string(), printed.lines.join("\n")),
        ("stderr".to_string(), printed.stderr.clone()),
        ("metrics".to_string(), metrics.to_string()),
    ];
    let mut stack = vec![record.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p.display().to_string(), String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    out
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64(bytes: &[u8]) -> String {
    let mut s = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..=c.len() {
            s.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    s
}

/// The forms a secret could take in an output: as is, hex (both cases), and base64 at each
/// of the three alignments it can have inside a longer buffer (only the characters that the
/// secret alone determines).
fn forms(secret: &str) -> Vec<String> {
    let b = secret.as_bytes();
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    let mut v = vec![secret.to_string(), hex.clone(), hex.to_uppercase()];
    for shift in 0..3usize {
        let mut buf = vec![0u8; shift];
        buf.extend_from_slice(b);
        let enc = base64(&buf);
        let first = (8 * shift).div_ceil(6);
        let last = (8 * (shift + b.len())) / 6;
        v.push(enc[first..last].to_string());
    }
    v
}

fn assert_hidden(what: &str, secret: &str, outputs: &[(String, String)]) {
    for form in forms(secret) {
        for (name, text) in outputs {
            assert!(!text.contains(&form), "{what}: the secret ({form}) is in {name}");
        }
    }
}

/// The SaslHandshake v0 flow written by hand: SaslHandshake v0 (PLAIN), then the PLAIN token
/// as a bare length-prefixed frame, then an ApiVersions request. Returns whether the broker
/// accepted the token (answered ApiVersions) or closed the connection.
fn raw_v0_plain(addr: &str, user: &str, password: &str) -> bool {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = [0u8; 256];
    let body = kwire::messages::SaslHandshakeRequest { mechanism: "PLAIN".into() };
    let n = kwire::dispatch::encode_request(&body, 0, 1, Some("raw-v0"), &mut buf).unwrap();
    s.write_all(&buf[..n]).unwrap();
    let answer = read_frame(&mut s).expect("a SaslHandshake answer");
    let r = kwire::dispatch::parse_response(&answer, kwire::ApiKey::SaslHandshake, 0).unwrap();
    let kwire::messages::ResponseBodyView::SaslHandshake(h) = r.body else { unreachable!() };
    assert_eq!(h.error_code(), 0, "SaslHandshake v0: PLAIN is enabled");
    let token = format!("\0{user}\0{password}");
    s.write_all(&(token.len() as u32).to_be_bytes()).unwrap();
    s.write_all(token.as_bytes()).unwrap();
    // PLAIN's server token is empty; a wrong password closes the connection.
    match read_frame(&mut s) {
        Some(t) => assert!(t.is_empty(), "the broker's PLAIN token is empty: {t:?}"),
        None => return false,
    }
    let body = kwire::messages::ApiVersionsRequest::default();
    let n = kwire::dispatch::encode_request(&body, 0, 2, Some("raw-v0"), &mut buf).unwrap();
    s.write_all(&buf[..n]).unwrap();
    let Some(answer) = read_frame(&mut s) else { return false };
    let r = kwire::dispatch::parse_response(&answer, kwire::ApiKey::ApiVersions, 0).unwrap();
    assert_eq!(r.header.correlation_id(), 2);
    let kwire::messages::ResponseBodyView::ApiVersions(v) = r.body else { unreachable!() };
    v.error_code() == 0
}

fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size).ok()?;
    let mut f = vec![0u8; u32::from_be_bytes(size) as usize];
    s.read_exact(&mut f).ok()?;
    Some(f)
}

#[test]
fn sasl_plain_and_scram_through_proxy_hide_the_secrets() {
    let _x = exclusive();
    setup();
    let c = cluster();
    let started = Instant::now();
    let pid = std::process::id();
    let wrong = unique("Wrong");
    let root_rec = root().join(format!("target/proxy-vectors/sasl-{pid}"));
    let _ = std::fs::remove_dir_all(&root_rec);
    let mut results = Vec::new();
    // Two proxies: text log and JSON log, each recording and serving metrics.
    for (format, ip) in [("text", "127.0.0.1"), ("json", "127.0.0.3")] {
        let base = free_ports(&[ip], 3);
        let record = root_rec.join(format);
        let rec_s = record.to_string_lossy().into_owned();
        let proxy = Proxy::start(&proxy_args(
            &format!("{ip}:{base}"),
            &c.sasl,
            base,
            &["--format", format, "--record", &rec_s, "--metrics", "127.0.0.1:0"],
        ));
        let metrics = proxy.metrics_addr();
        // Both clients, both mechanisms.
        let runs = [
            ("kafka-python", "PLAIN", PLAIN_USER, &c.plain_password),
            ("confluent-kafka", "SCRAM-SHA-512", SCRAM_USER, &c.scram_password),
            ("confluent-kafka", "PLAIN", PLAIN_USER, &c.plain_password),
            ("kafka-python", "SCRAM-SHA-512", SCRAM_USER, &c.scram_password),
        ];
        for (i, (client, mechanism, user, password)) in runs.iter().enumerate() {
            let topic = format!("sasl-{pid}-{format}-{i}");
            let mut cmd = Command::new(python());
            cmd.arg(root().join("tests/proxy/sasl_client.py"))
                .args([*client, proxy.addr.as_str(), *mechanism, *user, topic.as_str()])
                .env("KWIRE_SASL_PASSWORD", password.as_str());
            let out = run(cmd, client, CLIENT_TIMEOUT);
            assert!(out.ok, "{client} {mechanism} failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
            let line = out.stdout.lines().rev().find(|l| l.starts_with('{')).expect("JSON");
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["consumed"], v["produced"], "{client} {mechanism}: records read back");
            results.push(format!("{client} {mechanism} via {format}"));
        }
        assert!(raw_v0_plain(&proxy.addr, PLAIN_USER, &c.plain_password), "v0 PLAIN with the password");
        assert!(!raw_v0_plain(&proxy.addr, PLAIN_USER, &wrong), "v0 PLAIN with a wrong password is refused");
        let scraped = scrape(&metrics);
        let printed = proxy.interrupt();
        let outs = outputs(&printed, &record, &scraped);
        assert!(outs.len() > 3, "{format}: nothing recorded");
        for (what, secret) in [
            ("PLAIN password", &c.plain_password),
            ("SCRAM password", &c.scram_password),
            ("wrong password", &wrong),
        ] {
            assert_hidden(&format!("{format}: {what}"), secret, &outs);
        }
        // The log names the mechanisms and the users.
        let log = printed.lines.join("\n");
        for (mechanism, user) in [("PLAIN", PLAIN_USER), ("SCRAM-SHA-512", SCRAM_USER)] {
            let want = format!("SASL {mechanism} user \\\"{user}\\\"");
            let want_text = format!("SASL {mechanism} user \"{user}\"");
            assert!(
                log.contains(if format == "json" { &want } else { &want_text }),
                "{format}: the log does not name {mechanism} and {user}:\n{log}"
            );
            assert!(
                log.contains(&format!("SASL mechanism {mechanism}")),
                "{format}: no mechanism {mechanism} logged"
            );
        }
        assert!(printed.stderr.contains("SASL tokens (v0, not shown)"), "{}", printed.stderr);
        let tokens: u64 = printed
            .stderr
            .split(" SASL tokens")
            .next()
            .and_then(|s| s.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(tokens >= 3, "{format}: raw v0 tokens counted: {}", printed.stderr);
    }
    eprintln!(
        "SASL through kwire proxy: {}; v0 flow (right and wrong password) through both; secrets in no output; {:.1}s",
        results.join(", "),
        started.elapsed().as_secs_f64()
    );
}

/// The search of [`assert_hidden`] finds a secret written into an output in each form.
#[test]
fn secret_forms_are_found_in_each_encoding() {
    let secret = "kwPlain0123456789abcdefZq";
    for pad in 0..3 {
        let mut buf = b"\0alice\0".to_vec();
        buf.extend(std::iter::repeat_n(b'x', pad));
        buf.extend_from_slice(secret.as_bytes());
        let hex: String = buf.iter().map(|x| format!("{x:02x}")).collect();
        for text in [String::from_utf8(buf.clone()).unwrap(), hex.clone(), hex.to_uppercase(), base64(&buf)] {
            let outputs = vec![("out".to_string(), text.clone())];
            let found = std::panic::catch_unwind(|| assert_hidden("self-test", secret, &outputs)).is_err();
            assert!(found, "the secret was not found in {text}");
        }
    }
    assert_hidden("self-test", secret, &[("out".to_string(), "nothing here".to_string())]);
}

/// An exactly-once member's counts, from the last line of its stderr
/// (`NAME: C transactions committed (R records), A aborted (K records), S sessions reopened`).
fn transact_counts(name: &str, stderr: &str) -> String {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.contains(" transactions committed ("))
        .unwrap_or_else(|| panic!("{name} printed no counts:\n{stderr}"));
    line.to_string()
}

/// Checks the exactly-once output (`cluster-read-committed`'s lines: each output record's
/// partition `p`, offset `o`, value `v`, and its input's partition `ip` and offset `io`)
/// against `log`, the producers' acknowledged records: each input record appears exactly
/// once, with its value, in the output partition of its input partition, and each output
/// partition holds its inputs in offset order. Returns how many output records there are.
fn check_exactly_once(lines: &str, log: &Log) -> usize {
    // (input partition, input offset) to the output positions holding it.
    let mut seen: BTreeMap<(i64, i64), Vec<(i64, i64)>> = BTreeMap::new();
    let mut by_out: BTreeMap<i64, BTreeMap<i64, i64>> = BTreeMap::new();
    let mut n = 0;
    for line in lines.lines().filter(|l| l.starts_with('{')) {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("exactly once: not JSON ({e}): {line}"));
        let field = |k: &str| v[k].as_i64().unwrap_or_else(|| panic!("exactly once: no {k} in {line}"));
        let (p, o, ip, io) = (field("p"), field("o"), field("ip"), field("io"));
        let value = v["v"].as_str().unwrap_or_default();
        assert!(ip >= 0 && io >= 0, "exactly once: output {p}/{o} ({value}) has no input position");
        assert_eq!(p, ip, "exactly once: input {ip}/{io} ({value}) written to output partition {p}");
        let want = log.get(&ip).and_then(|m| m.get(&io));
        assert_eq!(
            want.map(String::as_str),
            Some(value),
            "exactly once: output {p}/{o} says input {ip}/{io} is {value:?}; the producers' log has {want:?}"
        );
        seen.entry((ip, io)).or_default().push((p, o));
        assert!(
            by_out.entry(p).or_default().insert(o, io).is_none(),
            "exactly once: output {p}/{o} read twice"
        );
        n += 1;
    }
    let dups: Vec<String> = seen
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|((ip, io), at)| format!("input {ip}/{io} at outputs {at:?}"))
        .collect();
    let missing: Vec<String> = log
        .iter()
        .flat_map(|(p, recs)| recs.iter().map(move |(o, v)| (*p, *o, v)))
        .filter(|(p, o, _)| !seen.contains_key(&(*p, *o)))
        .map(|(p, o, v)| format!("{p}/{o} ({v})"))
        .collect();
    assert!(
        dups.is_empty() && missing.is_empty(),
        "exactly once failed: {} input records written more than once, e.g. {:?}; {} never written, e.g. {:?}",
        dups.len(),
        &dups[..dups.len().min(10)],
        missing.len(),
        &missing[..missing.len().min(10)]
    );
    for (p, recs) in &by_out {
        let mut prev = -1;
        for (o, io) in recs {
            assert!(
                *io > prev,
                "exactly once: output partition {p} has input offset {io} (at {o}) after {prev}"
            );
            prev = *io;
        }
    }
    n
}
