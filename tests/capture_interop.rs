//! `kwire decode` of real captures: tcpdump and dumpcap record the loopback while
//! kafka-python (tests/proxy/kafka_python_client.py: topics, configs, produce with every
//! codec, a consumer group, offsets) talks to a real Apache Kafka broker, into five files
//! at once: pcap with microseconds, pcap with nanoseconds, `-i any` in Linux cooked v2
//! (SLL2) and v1 (SLL), and pcapng. Every Kafka frame in each must decode, whole and
//! paired, from the file and from a pipe; tshark reads the same files and its counts
//! (Kafka PDUs, and those it marks malformed or with an error or warning) are printed
//! beside kwire's.
//!
//! The same client through `kwire proxy` (text log), captured on the proxy's client side:
//! the pair lines `kwire decode` prints of the capture match the proxy's log lines, field by
//! field.
//!
//! Needs root (to capture), tcpdump and tshark (tests/interop/setup.sh), the clients
//! (tests/proxy/setup.sh) and the broker (tests/kafka/broker.sh), one for both tests.
#![cfg(feature = "cli")]

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::Duration;

use common::clients::client_command;
use common::process::run;
use common::{proxy as harness, root};
use serde_json::Value;

const SETUP_TIMEOUT: Duration = Duration::from_secs(1800);

/// A running capture program, stopped with SIGINT (which makes it write what it holds).
struct Recorder {
    child: Child,
    file: PathBuf,
    what: String,
}

impl Recorder {
    fn start(what: &str, mut cmd: Command, file: PathBuf, ready: &'static str) -> Recorder {
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains(ready) {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("{what} did not start capturing"));
        Recorder { child, file, what: what.to_string() }
    }

    fn stop(mut self) -> (String, PathBuf) {
        let _ = Command::new("kill").args(["-INT", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
        (self.what.clone(), self.file.clone())
    }
}

impl Drop for Recorder {
    /// A failed test leaves no capture running.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tcpdump(dir: &Path, name: &str, port: u16, extra: &[&str]) -> Recorder {
    let file = dir.join(name);
    let mut cmd = Command::new("tcpdump");
    // --immediate-mode: without it, packets wait in the kernel's ring buffer for up to a
    // second, and those still there when tcpdump is stopped are lost.
    cmd.args(["--immediate-mode", "-U", "-s", "0", "-w"]).arg(&file).args(extra).args([
        "tcp",
        "port",
        &port.to_string(),
    ]);
    Recorder::start(&format!("tcpdump {}", extra.join(" ")), cmd, file, "listening on")
}

fn dumpcap(dir: &Path, name: &str, port: u16) -> Recorder {
    let file = dir.join(name);
    let mut cmd = Command::new("dumpcap");
    cmd.args(["-q", "-i", "lo", "-n", "-f", &format!("tcp port {port}"), "-w"]).arg(&file);
    // dumpcap says nothing with -q until it ends: give it a moment instead.
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let child = cmd.spawn().expect("dumpcap runs");
    std::thread::sleep(Duration::from_secs(2));
    Recorder { child, file, what: "dumpcap -n (pcapng)".into() }
}

/// The link type of a pcap file (its header's last field), or 0 for pcapng.
fn link_type(bytes: &[u8]) -> u32 {
    if bytes.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]) {
        return 0;
    }
    u32::from_le_bytes([bytes[20], bytes[21], bytes[22], bytes[23]])
}

/// `kwire decode ARGS FILE`, checked to succeed; stdout and the gaps its summary counts.
fn kwire_gaps(args: &[&str], file: &Path) -> (String, usize) {
    let out = Command::new(env!("CARGO_BIN_EXE_kwire")).arg("decode").args(args).arg(file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kwire decode {args:?} {}: {stderr}", file.display());
    assert!(!stderr.contains("panicked"), "{stderr}");
    let gaps = stderr
        .lines()
        .filter_map(|l| l.strip_suffix(" gaps"))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .next_back()
        .unwrap_or(0);
    (String::from_utf8(out.stdout).unwrap(), gaps)
}

/// `kwire decode ARGS FILE`, checked to succeed; stdout.
fn kwire(args: &[&str], file: &Path) -> String {
    kwire_gaps(args, file).0
}

/// tshark's view of a capture: (Kafka PDUs, packets with a Kafka PDU, of them those with
/// a malformed note or an error or warning).
fn tshark_counts(file: &Path, port: u16) -> (usize, usize, usize) {
    let fields = |filter: &str| -> Vec<String> {
        let out = Command::new("tshark")
            .arg("-r")
            .arg(file)
            .args(["-o", &format!("kafka.tcp.ports:{port}"), "-Y", filter])
            .args(["-T", "fields", "-e", "kafka.correlation_id", "-E", "occurrence=a", "-E", "aggregator=,"])
            .output()
            .expect("tshark runs");
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
    };
    let all = fields("kafka");
    let pdus = all.iter().map(|l| l.split(',').filter(|s| !s.is_empty()).count()).sum();
    let bad = fields("kafka && (_ws.malformed || _ws.expert.severity >= 6291456)").len();
    (pdus, all.len(), bad)
}

/// The clients, tcpdump and tshark installed, and the broker of this test process started,
/// once: its address.
fn broker() -> &'static str {
    static BROKER: OnceLock<String> = OnceLock::new();
    BROKER.get_or_init(|| {
        common::clients::setup(|| true);
        // tcpdump and tshark come from tests/interop/setup.sh (apt-get).
        if Command::new("tcpdump").arg("--version").output().is_err()
            || Command::new("tshark").arg("--version").output().is_err()
        {
            let mut cmd = Command::new("bash");
            cmd.arg(root().join("tests/interop/setup.sh"));
            let out = run(cmd, "tests/interop/setup.sh", SETUP_TIMEOUT);
            assert!(out.ok, "tests/interop/setup.sh failed\n{}\n{}", out.stdout, out.stderr);
        }
        let (_, out) = harness::kafka("start", "capture", &["{pid}"], &[], Duration::from_secs(600));
        out.stdout.trim().to_string()
    })
}

/// One test at a time: each captures the broker's or the proxy's port on the loopback, and
/// the other's traffic would be in it.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh directory for a test's captures.
fn capture_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn real_captures_decode_whole() {
    let _one = one_at_a_time();
    let broker = broker().to_string();
    let port: u16 = broker.rsplit_once(':').unwrap().1.parse().unwrap();
    let dir = capture_dir("capture-interop");
    let recorders = vec![
        tcpdump(&dir, "lo-us.pcap", port, &["-i", "lo"]),
        tcpdump(&dir, "lo-ns.pcap", port, &["-i", "lo", "--time-stamp-precision", "nano"]),
        tcpdump(&dir, "any-sll2.pcap", port, &["-i", "any", "-y", "LINUX_SLL2"]),
        tcpdump(&dir, "any-sll.pcap", port, &["-i", "any", "-y", "LINUX_SLL"]),
        dumpcap(&dir, "lo.pcapng", port),
    ];

    // One short run of a real client.
    let mut client = client_command("kafka-python", &broker, "capture");
    let out = run(client.current_dir(&dir), "kafka-python client", Duration::from_secs(150));
    assert!(out.ok, "the client failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    std::thread::sleep(Duration::from_millis(1500));
    let files: Vec<(String, PathBuf)> = recorders.into_iter().map(Recorder::stop).collect();

    // Packets in each file: `-i any` sometimes loses some on this machine (tshark says
    // "previous segment not captured" on the same file).
    let packets = |file: &Path| {
        let out = Command::new("tshark").arg("-r").arg(file).output().expect("tshark runs");
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let most = files.iter().map(|(_, f)| packets(f)).max().unwrap_or(0);
    let mut counts = Vec::new();
    for (what, file) in &files {
        let lossy = packets(file) < most;
        let bytes = std::fs::read(file).unwrap();
        let link = link_type(&bytes);
        match what.as_str() {
            w if w.contains("SLL2") => assert_eq!(link, 276, "{what}"),
            w if w.contains("LINUX_SLL") => assert_eq!(link, 113, "{what}"),
            w if w.contains("pcapng") => assert_eq!(link, 0, "{what}"),
            _ => {}
        }
        let nanos = bytes.starts_with(&[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(nanos, what.contains("nano"), "{what}: timestamp precision");

        // Found without --port, and the same with it.
        let (json, gaps) = kwire_gaps(&["--format", "json"], file);
        let narrowed = kwire(&["--format", "json", "--port", &port.to_string()], file);
        assert_eq!(json, narrowed, "{what}: --port changes what is found");
        let objs: Vec<Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let requests = objs.iter().filter(|o| o["direction"] == "request").count();
        let responses = objs.len() - requests;
        assert!(requests > 20, "{what}: only {requests} requests");
        // `-i any` sometimes loses packets on this machine (tshark says "previous segment not
        // captured" on the same file): then kwire reports the gaps, and the frames they
        // touch are cut or unpaired, never decoded as whole. Every other frame decodes.
        let mut touched = 0;
        for o in &objs {
            assert!(o.get("error").is_none(), "{what}: a frame does not decode: {o}");
            assert_eq!(o["broker"], broker.as_str(), "{what}");
            let clean = o["cut"].is_null() && (o["direction"] == "request" || !o["apiKey"].is_null());
            if clean {
                assert!(o["frame"].is_object(), "{what}: {o}");
            } else {
                assert!(lossy || gaps > 0, "{what}: a frame is cut or unpaired in a whole capture: {o}");
                assert!(o["frame"].is_null(), "{what}: {o}");
                touched += 1;
            }
        }
        assert!(lossy || touched <= 4 * gaps, "{what}: {touched} frames touched by {gaps} gaps");
        // From a pipe, as `tcpdump -w - | kwire decode -` reads it.
        let piped = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "cat '{}' | '{}' decode --format json -",
                file.display(),
                env!("CARGO_BIN_EXE_kwire")
            ))
            .output()
            .unwrap();
        assert!(piped.status.success());
        assert_eq!(String::from_utf8_lossy(&piped.stdout), json, "{what}: a pipe reads differently");
        // The pair lines: one per request (the client uses no acks=0).
        let lines = kwire(&[], file);
        assert!(!lines.contains("malformed"), "{what}\n{lines}");
        if gaps == 0 && !lossy {
            assert_eq!(lines.lines().count(), requests, "{what}\n{lines}");
            assert!(!lines.contains("no response"), "{what}\n{lines}");
        }

        let (pdus, packets, bad) = tshark_counts(file, port);
        let lost = if gaps == 0 {
            String::new()
        } else {
            format!(" ({gaps} gaps: {touched} frames cut or unpaired)")
        };
        counts.push(format!(
            "{what:40} kwire: {} frames ({requests} requests, {responses} responses), all whole ones decoded{lost}; \
             tshark: {pdus} Kafka PDUs in {packets} packets, {bad} packets marked malformed or with an error \
             or warning",
            objs.len()
        ));
    }
    println!(
        "capture interop (kafka-python against Apache Kafka {}):",
        std::fs::read_to_string(root().join("tests/kafka/VERSION")).unwrap_or_default().trim()
    );
    for c in &counts {
        println!("  {c}");
    }
    // The same traffic in every file that lost nothing.
    let totals: Vec<&str> = counts
        .iter()
        // `-i any` is left out: it drops packets on this machine now and then (above).
        .filter(|c| !c.contains("packets lost by the capture") && !c.contains("-i any"))
        .map(|c| c.split("kwire: ").nth(1).unwrap_or_default().split(" (").next().unwrap_or_default())
        .collect();
    assert!(totals.len() >= 2, "most captures lost packets: {counts:#?}");
    assert!(totals.windows(2).all(|w| w[0] == w[1]), "the captures differ: {totals:?}");
    if std::env::var_os("KWIRE_KEEP_CAPTURES").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        println!("captures kept in {}", dir.display());
    }
}

/// The fields a pair line of `kwire decode CAPTURE` and a request line of the proxy's text
/// log share: client id, API, version, and the words from the request's size on (what the
/// request is about, the response's size, what the answer carries, the error names), but
/// the latency. The proxy's line has no correlation id.
type Shared = (String, String, String, Vec<String>);

/// The words from `req=` on, without the latency (the word after `resp=`) and the proxy's
/// closing note (`(versions clamped)`).
fn pair_words(words: &[&str], line: &str) -> Vec<String> {
    assert!(words.first().is_some_and(|w| w.starts_with("req=")), "{line}");
    let resp = words.iter().position(|x| x.starts_with("resp=")).unwrap_or_else(|| panic!("{line}"));
    assert!(words.get(resp + 1).is_some_and(|l| l.ends_with("ms")), "{line}");
    words
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != resp + 1)
        .map(|(_, w)| *w)
        .take_while(|w| !w.starts_with('('))
        .map(String::from)
        .collect()
}

/// A capture's pair line (`TS conn=N CLIENT -> BROKER CLIENT_ID API vV corr=C req=NB
/// [topics=...] resp=MB LAT ms [records=...] [errors=...]`): the client's address, the
/// correlation id and the shared fields.
fn capture_line(line: &str) -> (String, i32, Shared) {
    let w: Vec<&str> = line.split(' ').collect();
    assert!(w.len() >= 12 && w[3] == "->", "not a pair line: {line}");
    let corr = w[8].strip_prefix("corr=").and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("{line}"));
    let shared = (w[5].into(), w[6].into(), w[7].into(), pair_words(&w[9..], line));
    (w[2].to_string(), corr, shared)
}

/// A request line of the proxy's text log (`TS conn=N CLIENT_ID API vV req=NB [topics=...]
/// resp=MB LAT ms [records=...] [errors=...] [(note)]`): the connection and the shared
/// fields; `None` for other lines.
fn proxy_line(line: &str) -> Option<(u64, Shared)> {
    let w: Vec<&str> = line.split(' ').collect();
    if w.len() < 8 || !w[5].starts_with("req=") || !w.iter().any(|x| x.starts_with("resp=")) {
        return None;
    }
    let conn = w[1].strip_prefix("conn=")?.parse().ok()?;
    Some((conn, (w[2].into(), w[3].into(), w[4].into(), pair_words(&w[5..], line))))
}

/// kafka-python's traffic through `kwire proxy` (text log), captured by tcpdump on the
/// proxy's port (the client's side: the requests as the proxy forwards them, unchanged
/// without filters, and the responses as it sends them back): `kwire decode CAPTURE`'s pair
/// lines match the proxy's request lines, connection by connection (the proxy's
/// `connected` line names the client's address) and in order, on client id, API, version,
/// request and response sizes and error names; each connection's correlation ids in the
/// capture rise one by one as the client numbers them. The words that say what each pair is
/// about (topics, group, records) match too.
#[test]
fn proxy_log_matches_the_capture() {
    let _one = one_at_a_time();
    let broker = broker();
    let proxy = harness::Proxy::start(&["--listen", "127.0.0.1:0", "--upstream", broker]);
    let dir = capture_dir("capture-proxy");
    let recorder = tcpdump(&dir, "proxy.pcap", proxy.port(), &["-i", "lo"]);
    let mut client = client_command("kafka-python", &proxy.addr, "capture-proxy");
    let out = run(client.current_dir(&dir), "kafka-python client", Duration::from_secs(150));
    assert!(out.ok, "the client failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    std::thread::sleep(Duration::from_millis(1500));
    let (_, file) = recorder.stop();
    let (lines, gaps) = kwire_gaps(&[], &file);
    assert_eq!(gaps, 0, "the capture lost packets:\n{lines}");
    assert!(
        !lines.contains("no response") && !lines.contains("unpaired") && !lines.contains(" cut "),
        "{lines}"
    );

    // The proxy's log: its connections by client address, and their request lines.
    let log = proxy.lines();
    let mut peers = BTreeMap::new();
    let mut logged: BTreeMap<u64, Vec<Shared>> = BTreeMap::new();
    for line in &log {
        let w: Vec<&str> = line.split(' ').collect();
        if line.contains(": connected, forwarding to") {
            let conn: u64 = w[1].strip_prefix("conn=").unwrap().parse().unwrap();
            peers.insert(w[2].trim_end_matches(':').to_string(), conn);
        } else if let Some((conn, shared)) = proxy_line(line) {
            logged.entry(conn).or_default().push(shared);
        }
    }
    let mut captured: BTreeMap<u64, Vec<Shared>> = BTreeMap::new();
    let mut corrs: BTreeMap<u64, Vec<i32>> = BTreeMap::new();
    for line in lines.lines() {
        let (client, corr, shared) = capture_line(line);
        let conn = *peers.get(&client).unwrap_or_else(|| panic!("no proxy connection from {client}: {line}"));
        captured.entry(conn).or_default().push(shared);
        corrs.entry(conn).or_default().push(corr);
    }
    let pairs: usize = captured.values().map(Vec::len).sum();
    assert!(pairs > 20, "only {pairs} pair lines:\n{lines}");
    assert_eq!(captured.keys().collect::<Vec<_>>(), logged.keys().collect::<Vec<_>>(), "connections");
    for (conn, lines) in &captured {
        assert_eq!(lines, &logged[conn], "conn={conn}: the capture's pair lines, then the proxy's");
        let c = &corrs[conn];
        assert!(c.windows(2).all(|w| w[1] == w[0] + 1), "conn={conn}: correlation ids {c:?}");
    }
    eprintln!(
        "{pairs} request/response pairs on {} connections: the capture's pair lines match the proxy's log",
        captured.len()
    );
    if std::env::var_os("KWIRE_KEEP_CAPTURES").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
