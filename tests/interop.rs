//! Real Kafka clients against `kwire serve`: kafka-python, confluent-kafka (librdkafka) and
//! kafkajs each connect to a fresh server on a loopback port, list groups and look up
//! offsets, and every answer they report is compared with what the built-in demo
//! catalogue holds (written out below). Each client runs three times: against every
//! version kwire serves, against a server limited to older versions that still carry
//! every answer ("fallback"), and against one limited to the oldest versions
//! ("oldest"), where some answers cannot be had and the clients must say so.
//!
//! The clients live in `target/interop/` (see `tests/interop/setup.sh`, which runs
//! first when `target/interop/ready` is missing). Every process has a deadline: a hung
//! client fails its test. See docs/interop.md.
#![cfg(feature = "cli")]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long one client run may take (a normal run takes about a second).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(45);
/// How long `tests/interop/setup.sh` may take when the tests have to run it.
const SETUP_TIMEOUT: Duration = Duration::from_secs(1200);
/// How long `kwire serve` may take to print where it listens.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------
// What the demo catalogue (`kwire serve --print-demo-catalog`) holds
// ---------------------------------------------------------------------------------------

const T0: i64 = 1_700_000_000_000;
/// The partitions every client asks about, in the order of the tables below.
const PARTITIONS: [&str; 4] = ["orders/0", "orders/1", "orders/2", "payments/0"];
/// Leader epoch of each partition.
const EPOCHS: [i64; 4] = [3, 3, 1, 0];
/// Topic ids kwire derives from the names (FNV-1a; the catalogue gives none).
const ORDERS_ID: &str = "00125d9250be8b4cfe8610b402a505bd";
const PAYMENTS_ID: &str = "e17ac5686623db26ee9b186e63750d9b";
/// The timestamps the clients look up, as offsets from T0 (ms).
const LOOKUPS: [i64; 3] = [2_000, 6_000, 300_000];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Iso {
    ReadUncommitted,
    ReadCommitted,
}

impl Iso {
    const BOTH: [Iso; 2] = [Iso::ReadUncommitted, Iso::ReadCommitted];
    fn name(self) -> &'static str {
        match self {
            Iso::ReadUncommitted => "read_uncommitted",
            Iso::ReadCommitted => "read_committed",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Spec {
    Earliest,
    Latest,
    MaxTimestamp,
    /// The first record at or after T0 + this many ms.
    Timestamp(i64),
}

impl Spec {
    fn name(self) -> String {
        match self {
            Spec::Earliest => "earliest".into(),
            Spec::Latest => "latest".into(),
            Spec::MaxTimestamp => "max_timestamp".into(),
            Spec::Timestamp(dt) => format!("timestamp_{}", T0 + dt),
        }
    }
}

/// `(offset, timestamp)` of each partition in [`PARTITIONS`], or `None` where nothing is
/// found (Kafka answers offset -1, timestamp -1).
///
/// The catalogue: orders/0 has records 0..=4 at T0, T0+1s, T0+5s, T0+3s, T0+9s, high
/// watermark 5 and last stable offset 4 (offset 4 is not committed); orders/1 starts at
/// 100 and has records 100, 120, 121 at T0+0.5s, T0+2.5s, T0+7.5s; orders/2 is empty;
/// payments/0 has records 0 and 1 at T0+100s and T0+200s. Lookups other than earliest and
/// latest see only records below the latest offset visible at the isolation level.
fn expected(spec: Spec, iso: Iso) -> [Option<(i64, i64)>; 4] {
    use Iso::*;
    match (spec, iso) {
        (Spec::Earliest, _) => [Some((0, -1)), Some((100, -1)), Some((0, -1)), Some((0, -1))],
        (Spec::Latest, ReadUncommitted) => [Some((5, -1)), Some((122, -1)), Some((0, -1)), Some((2, -1))],
        (Spec::Latest, ReadCommitted) => [Some((4, -1)), Some((122, -1)), Some((0, -1)), Some((2, -1))],
        (Spec::MaxTimestamp, ReadUncommitted) => {
            [Some((4, T0 + 9_000)), Some((121, T0 + 7_500)), None, Some((1, T0 + 200_000))]
        }
        // The largest timestamp of orders/0 is at offset 4, which read_committed cannot see.
        (Spec::MaxTimestamp, ReadCommitted) => [None, Some((121, T0 + 7_500)), None, Some((1, T0 + 200_000))],
        (Spec::Timestamp(2_000), _) => {
            [Some((2, T0 + 5_000)), Some((120, T0 + 2_500)), None, Some((0, T0 + 100_000))]
        }
        (Spec::Timestamp(6_000), ReadUncommitted) => {
            [Some((4, T0 + 9_000)), Some((121, T0 + 7_500)), None, Some((0, T0 + 100_000))]
        }
        (Spec::Timestamp(6_000), ReadCommitted) => {
            [None, Some((121, T0 + 7_500)), None, Some((0, T0 + 100_000))]
        }
        (Spec::Timestamp(300_000), _) => [None; 4],
        (spec, _) => panic!("no expectation for {spec:?}"),
    }
}

fn all_specs() -> Vec<Spec> {
    let mut specs = vec![Spec::Earliest, Spec::Latest, Spec::MaxTimestamp];
    specs.extend(LOOKUPS.map(Spec::Timestamp));
    specs
}

/// A group: id, protocol type, state, type.
type Group = (&'static str, &'static str, &'static str, &'static str);
const GROUPS: [Group; 4] = [
    ("audit", "consumer", "Empty", "classic"),
    ("billing", "consumer", "Stable", "classic"),
    ("connect-cluster", "connect", "PreparingRebalance", "classic"),
    ("shipping", "consumer", "Stable", "consumer"),
];

/// The group listings the Python clients ask for: name and the filter (states, types).
const GROUP_QUERIES: [(&str, &[&str], &[&str]); 5] = [
    ("all", &[], &[]),
    ("states_stable", &["Stable"], &[]),
    ("states_stable_empty", &["Stable", "Empty"], &[]),
    ("types_classic", &[], &["classic"]),
    ("types_consumer", &[], &["consumer"]),
];

fn groups_matching(states: &[&str], types: &[&str]) -> Vec<Group> {
    GROUPS
        .iter()
        .copied()
        .filter(|g| states.is_empty() || states.contains(&g.2))
        .filter(|g| types.is_empty() || types.contains(&g.3))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Server limits
// ---------------------------------------------------------------------------------------

/// The highest version the server serves of each API in a run.
#[derive(Clone, Copy, Debug)]
struct Limits {
    name: &'static str,
    api_versions: i16,
    metadata: i16,
    list_groups: i16,
    list_offsets: i16,
}

/// kwire's own maxima: no `--max-version`.
const FULL: Limits = Limits { name: "full", api_versions: 5, metadata: 13, list_groups: 5, list_offsets: 11 };
/// Older versions that still carry every answer: ApiVersions 2 (clients that open with 3
/// or 4 are refused and retry), Metadata 8 (not flexible, no topic ids), ListOffsets 7
/// (the first with max-timestamp).
const FALLBACK: Limits =
    Limits { name: "fallback", api_versions: 2, metadata: 8, list_groups: 5, list_offsets: 7 };
/// The oldest versions: ApiVersions 0, Metadata 2 (the first with a cluster id), ListGroups
/// 0 (no filters, no states), ListOffsets 1 (no isolation level: read_uncommitted).
const OLDEST: Limits =
    Limits { name: "oldest", api_versions: 0, metadata: 2, list_groups: 0, list_offsets: 1 };

impl Limits {
    fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for (api, max, kwire_max) in [
            ("ApiVersions", self.api_versions, FULL.api_versions),
            ("Metadata", self.metadata, FULL.metadata),
            ("ListGroups", self.list_groups, FULL.list_groups),
            ("ListOffsets", self.list_offsets, FULL.list_offsets),
        ] {
            if max < kwire_max {
                args.push("--max-version".to_string());
                args.push(format!("{api}={max}"));
            }
        }
        args
    }

    /// The isolation level a ListOffsets request at the highest served version carries
    /// (version 1 has none: the broker reads uncommitted).
    fn effective(&self, iso: Iso) -> Iso {
        if self.list_offsets >= 2 { iso } else { Iso::ReadUncommitted }
    }
}

// ---------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn interop_dir() -> PathBuf {
    std::env::var_os("KWIRE_INTEROP_DIR").map_or_else(|| root().join("target/interop"), PathBuf::from)
}

struct Finished {
    /// `None` when the deadline passed and the process was killed.
    status: Option<ExitStatus>,
    stdout: String,
    stderr: String,
    took: Duration,
}

fn drain(mut from: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = from.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Runs `cmd` to the end or until `timeout`, whichever comes first.
fn run_bounded(cmd: &mut Command, timeout: Duration) -> Finished {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(20));
    };
    Finished { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap(), took: start.elapsed() }
}

/// The clients' directory, after running `tests/interop/setup.sh` if it is not ready.
fn clients() -> &'static Path {
    static READY: OnceLock<PathBuf> = OnceLock::new();
    READY.get_or_init(|| {
        let dir = interop_dir();
        if !dir.join("ready").exists() {
            eprintln!("{} is not ready: running tests/interop/setup.sh", dir.display());
            let setup = root().join("tests/interop/setup.sh");
            let done = run_bounded(Command::new("bash").arg(&setup), SETUP_TIMEOUT);
            assert!(
                done.status.is_some_and(|s| s.success()) && dir.join("ready").exists(),
                "tests/interop/setup.sh failed ({:?}):\n{}\n{}",
                done.status,
                done.stdout,
                done.stderr
            );
        }
        dir
    })
}

/// A `kwire serve` on an ephemeral loopback port, killed when dropped.
struct Server {
    child: Child,
    addr: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    fn start(limits: &Limits) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kwire"))
            .args(["serve", "--listen", "127.0.0.1:0", "--verbose"])
            .args(limits.args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start kwire serve");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut lines = BufReader::new(stdout);
            let mut first = String::new();
            let _ = lines.read_line(&mut first);
            let _ = tx.send(first);
            let _ = std::io::copy(&mut lines, &mut std::io::sink());
        });
        // The guard exists before anything can fail, so the server never outlives a panic.
        let mut server = Server { child, addr: String::new(), log };
        let first = rx.recv_timeout(SERVER_START_TIMEOUT).unwrap_or_default();
        let addr = first
            .strip_prefix("kwire serve: listening on ")
            .and_then(|rest| rest.split(',').next())
            .unwrap_or_else(|| {
                panic!("kwire serve did not say where it listens: {first:?}\n{}", server.log())
            });
        server.addr = addr.to_string();
        server
    }

    fn port(&self) -> i64 {
        self.addr.rsplit_once(':').unwrap().1.parse().unwrap()
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// The versions of each API the server answered, from its verbose log lines
    /// (`[kwire serve] PEER: API vN: X bytes in, Y out`).
    fn versions_answered(&self) -> BTreeMap<String, BTreeSet<i16>> {
        let mut seen: BTreeMap<String, BTreeSet<i16>> = BTreeMap::new();
        for line in self.log().lines().filter(|l| l.contains(" bytes in, ")) {
            let Some((api, version)) = line.split(": ").nth(1).and_then(|s| s.rsplit_once(" v")) else {
                continue;
            };
            seen.entry(api.to_string()).or_default().insert(version.parse().unwrap());
        }
        seen
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Client {
    KafkaPython,
    Confluent,
    Kafkajs,
}

/// Runs a client against `server`; returns its JSON report.
fn run_client(client: Client, server: &Server) -> Value {
    let dir = clients();
    let script = |name: &str| root().join("tests/interop").join(name);
    let mut cmd = match client {
        Client::KafkaPython | Client::Confluent => {
            let mut cmd = Command::new(dir.join("venv/bin/python"));
            let name =
                if client == Client::KafkaPython { "kafka_python_client.py" } else { "confluent_client.py" };
            cmd.arg(script(name)).args([&server.addr, "orders:3", "payments:1"]);
            cmd.env("PYTHONDONTWRITEBYTECODE", "1");
            cmd
        }
        Client::Kafkajs => {
            let mut cmd = Command::new("node");
            cmd.arg(script("kafkajs_client.js")).args([&server.addr, "orders", "payments"]);
            cmd.env("NODE_PATH", dir.join("node/node_modules"));
            cmd
        }
    };
    let done = run_bounded(&mut cmd, CLIENT_TIMEOUT);
    let context = || {
        format!(
            "--- client stdout\n{}\n--- client stderr\n{}\n--- server log\n{}",
            done.stdout,
            done.stderr,
            server.log()
        )
    };
    match done.status {
        None => panic!("{client:?} did not finish within {CLIENT_TIMEOUT:?}\n{}", context()),
        Some(s) if !s.success() => panic!("{client:?} failed: {s}\n{}", context()),
        Some(_) => {}
    }
    eprintln!("{client:?} took {:.2?}", done.took);
    serde_json::from_str(&done.stdout)
        .unwrap_or_else(|e| panic!("{client:?} printed no JSON object: {e}\n{}", context()))
}

// ---------------------------------------------------------------------------------------
// Comparing
// ---------------------------------------------------------------------------------------

/// Collects every difference between a client's report and the expectation, then fails
/// once with all of them.
struct Check<'a> {
    report: &'a Value,
    failures: Vec<String>,
    compared: usize,
}

impl<'a> Check<'a> {
    fn new(report: &'a Value) -> Self {
        Check { report, failures: Vec::new(), compared: 0 }
    }

    fn get(&self, path: &[&str]) -> Option<&'a Value> {
        path.iter().try_fold(self.report, |v, key| v.get(key))
    }

    /// The value at `path` must be `want`.
    fn eq(&mut self, path: &[&str], want: Value) {
        self.compared += 1;
        match self.get(path) {
            Some(got) if *got == want => {}
            Some(got) => self.failures.push(format!("{}: got {got}, want {want}", path.join(" > "))),
            None => self.failures.push(format!("{}: missing, want {want}", path.join(" > "))),
        }
    }

    /// The value at `path` must be `{"error": "..."}` with `fragment` in the message.
    fn error(&mut self, path: &[&str], fragment: &str) {
        self.compared += 1;
        let message = self.get(path).and_then(|v| v.get("error")).and_then(Value::as_str);
        if !message.is_some_and(|m| m.contains(fragment)) {
            self.failures.push(format!(
                "{}: got {}, want an error mentioning {fragment:?}",
                path.join(" > "),
                self.get(path).map_or("nothing".to_string(), Value::to_string)
            ));
        }
    }

    /// The object at `path` must have exactly these keys.
    fn keys(&mut self, path: &[&str], want: &[String]) {
        self.compared += 1;
        let got: BTreeSet<String> = self
            .get(path)
            .and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        let want: BTreeSet<String> = want.iter().cloned().collect();
        if got != want {
            self.failures.push(format!("{}: keys {got:?}, want {want:?}", path.join(" > ")));
        }
    }

    fn finish(self, what: &str, server: &Server) {
        assert!(
            self.failures.is_empty(),
            "{what}: {} of {} comparisons failed:\n  {}\n--- report\n{}\n--- server log\n{}",
            self.failures.len(),
            self.compared,
            self.failures.join("\n  "),
            serde_json::to_string_pretty(self.report).unwrap(),
            server.log()
        );
        eprintln!("{what}: {} comparisons passed", self.compared);
    }
}

/// The versions of each API the server answered (from its log) must be exactly `want`.
fn check_versions(server: &Server, what: &str, want: &[(&str, &[i16])]) {
    let got = server.versions_answered();
    let want: BTreeMap<String, BTreeSet<i16>> =
        want.iter().map(|(api, vs)| (api.to_string(), vs.iter().copied().collect())).collect();
    assert_eq!(got, want, "{what}: versions the server answered\n--- server log\n{}", server.log());
}

fn topic_metadata_partitions(epochs: bool) -> (Value, Value) {
    let part = |i: usize, p: i64| {
        let epoch = if epochs { json!(EPOCHS[i]) } else { Value::Null };
        json!([p, 1, epoch, [1], [1]])
    };
    (json!([part(0, 0), part(1, 1), part(2, 2)]), json!([part(3, 0)]))
}

// ---------------------------------------------------------------------------------------
// kafka-python
// ---------------------------------------------------------------------------------------

fn kafka_python(limits: Limits) {
    let server = Server::start(&limits);
    let report = run_client(Client::KafkaPython, &server);
    let what = format!("kafka-python, {} versions", limits.name);
    let mut c = Check::new(&report);
    c.eq(&["version"], json!("3.0.12"));

    // Metadata.
    c.eq(
        &["describe_cluster"],
        json!({"cluster_id": "kwire-demo", "controller_id": 1, "brokers": [[1, "127.0.0.1", server.port()]]}),
    );
    c.eq(&["list_topics"], json!(["orders", "payments"]));
    let ids = limits.metadata >= 10;
    let (orders, payments) = topic_metadata_partitions(limits.metadata >= 7);
    c.eq(
        &["describe_topics"],
        json!([
            {"name": "orders", "error_code": 0, "topic_id": if ids { ORDERS_ID } else { "None" }, "partitions": orders},
            {"name": "payments", "error_code": 0, "topic_id": if ids { PAYMENTS_ID } else { "None" }, "partitions": payments},
        ]),
    );

    // ListGroups: filters need version 4 (states) and 5 (types); kafka-python refuses to
    // send them to an older broker. State and type come from versions 4 and 5.
    for (name, states, types) in GROUP_QUERIES {
        let needs = if !types.is_empty() {
            5
        } else if !states.is_empty() {
            4
        } else {
            0
        };
        if limits.list_groups < needs {
            c.error(&["list_groups", name], "IncompatibleBrokerVersion");
            continue;
        }
        let rows: Vec<Value> = groups_matching(states, types)
            .iter()
            .map(|g| {
                let state = if limits.list_groups >= 4 { json!(g.2) } else { Value::Null };
                let group_type = if limits.list_groups >= 5 { json!(g.3) } else { Value::Null };
                json!([g.0, g.1, state, group_type])
            })
            .collect();
        c.eq(&["list_groups", name], json!(rows));
    }

    // ListOffsets through the admin client and the consumer. kafka-python needs version 2
    // for read_committed and 7 for max-timestamp, and says so rather than send less.
    let specs = all_specs();
    let mut admin_keys = Vec::new();
    let mut consumer_keys = Vec::new();
    for iso in Iso::BOTH {
        for &spec in &specs {
            let key = format!("{}/{}", spec.name(), iso.name());
            admin_keys.push(key.clone());
            let needs = match (spec, iso) {
                (Spec::MaxTimestamp, _) => 7,
                (_, Iso::ReadCommitted) => 2,
                _ => 1,
            };
            let answers = expected(spec, iso);
            if limits.list_offsets < needs {
                c.error(&["admin_list_partition_offsets", &key], "IncompatibleBrokerVersion");
            } else {
                for (i, p) in PARTITIONS.iter().enumerate() {
                    let (offset, timestamp) = answers[i].unwrap_or((-1, -1));
                    c.eq(
                        &["admin_list_partition_offsets", &key, p],
                        json!({"offset": offset, "timestamp": timestamp}),
                    );
                }
            }
            if spec == Spec::MaxTimestamp {
                continue; // the consumer has no max-timestamp lookup
            }
            consumer_keys.push(key.clone());
            if limits.list_offsets < needs {
                c.error(&["consumer_offsets", &key], "IncompatibleBrokerVersion");
                continue;
            }
            for (i, p) in PARTITIONS.iter().enumerate() {
                // beginning_offsets/end_offsets give a bare offset; offsets_for_times
                // gives offset and timestamp, or None where nothing is found.
                let want = match (spec, answers[i]) {
                    (Spec::Earliest | Spec::Latest, Some((o, _))) => json!({"offset": o, "timestamp": null}),
                    (_, Some((o, t))) => json!({"offset": o, "timestamp": t}),
                    (_, None) => Value::Null,
                };
                c.eq(&["consumer_offsets", &key, p], want);
            }
        }
    }
    c.keys(&["admin_list_partition_offsets"], &admin_keys);
    c.keys(&["consumer_offsets"], &consumer_keys);
    c.finish(&what, &server);

    let (av, md, lg, lo) = (limits.api_versions, limits.metadata, limits.list_groups, limits.list_offsets);
    // kafka-python opens with ApiVersions 4 and, refused, retries at the version the
    // broker's error answer lists.
    let api_versions: &[i16] = if av < 4 { &[av, 4] } else { &[4] };
    let list_groups: &[i16] = &[lg];
    check_versions(
        &server,
        &what,
        &[
            ("ApiVersions", api_versions),
            ("ListGroups", list_groups),
            ("ListOffsets", &[lo]),
            ("Metadata", &[md]),
        ],
    );
}

#[test]
fn kafka_python_all_versions() {
    kafka_python(FULL);
}

#[test]
fn kafka_python_falls_back() {
    kafka_python(FALLBACK);
}

#[test]
fn kafka_python_oldest_versions() {
    kafka_python(OLDEST);
}

// ---------------------------------------------------------------------------------------
// confluent-kafka (librdkafka)
// ---------------------------------------------------------------------------------------

fn confluent(limits: Limits) {
    let server = Server::start(&limits);
    let report = run_client(Client::Confluent, &server);
    let what = format!("confluent-kafka, {} versions", limits.name);
    let mut c = Check::new(&report);
    c.eq(&["version"], json!("2.16.1"));
    c.eq(&["librdkafka"], json!("2.16.0"));

    // Metadata. list_topics is the all-topics request librdkafka sends with three stray
    // bytes from Metadata v9 on (see src/bin/kwire/broker.rs).
    let partitions = |n: i64| (0..n).map(|p| json!([p, 1, [1], [1]])).collect::<Vec<_>>();
    c.eq(
        &["list_topics"],
        json!({
            "cluster_id": "kwire-demo",
            "controller_id": 1,
            "brokers": [[1, "127.0.0.1", server.port()]],
            "topics": {"orders": partitions(3), "payments": partitions(1)},
        }),
    );
    c.eq(
        &["describe_cluster"],
        json!({"cluster_id": "kwire-demo", "controller": 1, "nodes": [[1, "127.0.0.1", server.port()]]}),
    );
    let zero = "0".repeat(32);
    let ids = limits.metadata >= 10;
    c.eq(
        &["describe_topics"],
        json!({
            "orders": {"topic_id": if ids { ORDERS_ID } else { &zero }, "is_internal": false, "partitions": partitions(3)},
            "payments": {"topic_id": if ids { PAYMENTS_ID } else { &zero }, "is_internal": false, "partitions": partitions(1)},
        }),
    );

    // ListGroups: librdkafka lists only groups of protocol type "consumer" (or empty), so
    // connect-cluster never shows. Below version 4 it sends no filter at all and lists
    // every group with state and type UNKNOWN (it does not refuse, as kafka-python does).
    for (name, states, types) in GROUP_QUERIES {
        let rows: Vec<Value> =
            if limits.list_groups >= 4 { groups_matching(states, types) } else { GROUPS.to_vec() }
                .iter()
                .filter(|g| g.1 == "consumer")
                .map(|g| {
                    let known = |since: i16, value: &str| {
                        if limits.list_groups >= since { value.to_uppercase() } else { "UNKNOWN".into() }
                    };
                    let (state, group_type) = (known(4, g.2), known(5, g.3));
                    json!([g.0, false, state, group_type])
                })
                .collect();
        c.eq(&["list_groups", name], json!(rows));
    }

    // ListOffsets through AdminClient.list_offsets. Below version 2 librdkafka sends
    // read_committed requests all the same, without the isolation level (so the broker
    // reads uncommitted), and it sends max-timestamp lookups at any version.
    let mut admin_keys = Vec::new();
    for iso in Iso::BOTH {
        for spec in all_specs() {
            let key = format!("{}/{}", spec.name(), iso.name());
            admin_keys.push(key.clone());
            let answers = expected(spec, limits.effective(iso));
            for (i, p) in PARTITIONS.iter().enumerate() {
                let want = match answers[i] {
                    Some((o, t)) => {
                        let epoch = if limits.list_offsets >= 4 { json!(EPOCHS[i]) } else { Value::Null };
                        json!({"offset": o, "timestamp": t, "leader_epoch": epoch})
                    }
                    None => json!({"offset": -1, "timestamp": -1, "leader_epoch": null}),
                };
                c.eq(&["admin_list_offsets", &key, p], want);
            }
        }
    }
    c.keys(&["admin_list_offsets"], &admin_keys);

    // The consumer: watermarks (earliest, latest) and offsets_for_times.
    let mut consumer_keys = Vec::new();
    for iso in Iso::BOTH {
        let key = format!("watermarks/{}", iso.name());
        let low = expected(Spec::Earliest, iso);
        let high = expected(Spec::Latest, limits.effective(iso));
        for (i, p) in PARTITIONS.iter().enumerate() {
            c.eq(&["consumer_offsets", &key, p], json!([low[i].unwrap().0, high[i].unwrap().0]));
        }
        consumer_keys.push(key);
        for dt in LOOKUPS {
            let key = format!("{}/{}", Spec::Timestamp(dt).name(), iso.name());
            let answers = expected(Spec::Timestamp(dt), limits.effective(iso));
            for (i, p) in PARTITIONS.iter().enumerate() {
                let offset = answers[i].map_or(-1, |a| a.0);
                c.eq(&["consumer_offsets", &key, p], json!({"offset": offset, "error": null}));
            }
            consumer_keys.push(key);
        }
    }
    c.keys(&["consumer_offsets"], &consumer_keys);
    c.finish(&what, &server);

    // librdkafka opens with ApiVersions 3 and, refused, retries at version 0.
    let api_versions: &[i16] = if limits.api_versions < 3 { &[0, 3] } else { &[3] };
    let list_offsets = limits.list_offsets.min(7);
    check_versions(
        &server,
        &what,
        &[
            ("ApiVersions", api_versions),
            ("ListGroups", &[limits.list_groups]),
            ("ListOffsets", &[list_offsets]),
            ("Metadata", &[limits.metadata]),
        ],
    );
}

#[test]
fn confluent_all_versions() {
    confluent(FULL);
}

#[test]
fn confluent_falls_back() {
    confluent(FALLBACK);
}

#[test]
fn confluent_oldest_versions() {
    confluent(OLDEST);
}

// ---------------------------------------------------------------------------------------
// kafkajs
// ---------------------------------------------------------------------------------------

fn kafkajs(limits: Limits) {
    let server = Server::start(&limits);
    let report = run_client(Client::Kafkajs, &server);
    let what = format!("kafkajs, {} versions", limits.name);
    let mut c = Check::new(&report);
    c.eq(&["version"], json!("2.2.4"));

    c.eq(
        &["describe_cluster"],
        json!({"cluster_id": "kwire-demo", "controller": 1, "brokers": [[1, "127.0.0.1", server.port()]]}),
    );
    let partitions = |n: i64| (0..n).map(|p| json!([p, 1, [1], [1], 0])).collect::<Vec<_>>();
    c.eq(
        &["topic_metadata"],
        json!([{"name": "orders", "partitions": partitions(3)}, {"name": "payments", "partitions": partitions(1)}]),
    );
    c.eq(&["list_topics"], json!(["orders", "payments"]));

    // kafkajs's listGroups has no filters and reads id and protocol type only.
    let rows: Vec<Value> = GROUPS.iter().map(|g| json!([g.0, g.1])).collect();
    c.eq(&["list_groups", "all"], json!(rows));

    // The admin client always asks for read_committed (ListOffsets v2 and up) and gives
    // offsets as strings. fetchTopicOffsetsByTimestamp answers the latest offset where no
    // record is found.
    let iso = limits.effective(Iso::ReadCommitted);
    let low = expected(Spec::Earliest, iso);
    let high = expected(Spec::Latest, iso);
    let mut keys = Vec::new();
    for (topic, range) in [("orders", 0..3), ("payments", 3..4)] {
        let key = format!("earliest_latest/{topic}");
        for i in range.clone() {
            let (l, h) = (low[i].unwrap().0.to_string(), high[i].unwrap().0.to_string());
            c.eq(&["admin_offsets", &key, PARTITIONS[i]], json!({"offset": h, "high": h, "low": l}));
        }
        keys.push(key);
        for dt in LOOKUPS {
            let key = format!("{}/{topic}", Spec::Timestamp(dt).name());
            let answers = expected(Spec::Timestamp(dt), iso);
            for i in range.clone() {
                let offset = answers[i].map_or(high[i].unwrap().0, |a| a.0).to_string();
                c.eq(&["admin_offsets", &key, PARTITIONS[i]], json!({"offset": offset}));
            }
            keys.push(key);
        }
    }
    c.keys(&["admin_offsets"], &keys);
    c.finish(&what, &server);

    // kafkajs knows ApiVersions 0-2, Metadata 0-6, ListGroups 0-2 and ListOffsets 0-3;
    // refused, it steps ApiVersions down one version at a time.
    let api_versions: Vec<i16> = (limits.api_versions.min(2)..=2).collect();
    check_versions(
        &server,
        &what,
        &[
            ("ApiVersions", &api_versions),
            ("ListGroups", &[limits.list_groups.min(2)]),
            ("ListOffsets", &[limits.list_offsets.min(3)]),
            ("Metadata", &[limits.metadata.min(6)]),
        ],
    );
}

#[test]
fn kafkajs_all_versions() {
    kafkajs(FULL);
}

#[test]
fn kafkajs_falls_back() {
    kafkajs(FALLBACK);
}

#[test]
fn kafkajs_oldest_versions() {
    kafkajs(OLDEST);
}
