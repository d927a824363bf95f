//! Throughput of `kwire serve` on loopback: requests per second and the server's CPU time
//! per request.
//!
//! Starts the `kwire` binary of this build (`cargo bench --features cli --bench
//! serve_throughput` builds it with the release profile) on an ephemeral loopback port
//! with two empty topics (orders, 3 partitions; payments, 1), opens connections that each keep a window of pre-encoded
//! ListOffsets v10 and Metadata v13 requests in flight, and counts the answers for a fixed
//! time. The server's CPU time comes from /proc/PID/stat (utime + stime). Client and
//! server share the machine's cores, so the numbers are the pair's, not the server's
//! alone.
//!
//! Environment: `KWIRE_BENCH_SECS` (seconds per run, default 3), `KWIRE_BENCH_DEPTH`
//! (requests in flight per connection, default 32).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use kwire::ApiKey;
use kwire::dispatch;
use kwire::messages::ResponseBodyView;
use kwire::messages::list_offsets::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
use kwire::messages::metadata::MetadataRequest;
use kwire::{AnyBody, List};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn encode(body: &impl AnyBody, version: i16, correlation_id: i32) -> Vec<u8> {
    let mut buf = vec![0u8; 1024];
    let n = dispatch::encode_request(body, version, correlation_id, Some("kwire-bench"), &mut buf).unwrap();
    buf.truncate(n);
    buf
}

/// ListOffsets v10: latest of orders 0-2 (read_committed) and the first record at or after
/// a timestamp in payments 0.
fn list_offsets(correlation_id: i32) -> Vec<u8> {
    let orders = [0, 1, 2].map(|partition_index| ListOffsetsPartition {
        partition_index,
        timestamp: -1,
        ..Default::default()
    });
    let payments =
        [ListOffsetsPartition { partition_index: 0, timestamp: 1_700_000_150_000, ..Default::default() }];
    let topics = [
        ListOffsetsTopic { name: "orders".into(), partitions: List::Borrowed(&orders), ..Default::default() },
        ListOffsetsTopic {
            name: "payments".into(),
            partitions: List::Borrowed(&payments),
            ..Default::default()
        },
    ];
    let body =
        ListOffsetsRequest { isolation_level: 1, topics: List::Borrowed(&topics), ..Default::default() };
    encode(&body, 10, correlation_id)
}

/// Metadata v13 for every topic (a null topic list).
fn metadata(correlation_id: i32) -> Vec<u8> {
    encode(&MetadataRequest { topics: None, ..Default::default() }, 13, correlation_id)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mix {
    ListOffsets,
    Metadata,
    Both,
}

impl Mix {
    fn name(self) -> &'static str {
        match self {
            Mix::ListOffsets => "ListOffsets v10",
            Mix::Metadata => "Metadata v13",
            Mix::Both => "both, alternating",
        }
    }

    /// The request with this correlation id, and its API and version.
    fn request(self, correlation_id: i32) -> (Vec<u8>, ApiKey, i16) {
        let list_offsets_turn = match self {
            Mix::ListOffsets => true,
            Mix::Metadata => false,
            Mix::Both => correlation_id % 2 == 0,
        };
        if list_offsets_turn {
            (list_offsets(correlation_id), ApiKey::ListOffsets, 10)
        } else {
            (metadata(correlation_id), ApiKey::Metadata, 13)
        }
    }
}

/// Checks that the server answers each kind of request correctly before timing it.
fn check_answers(addr: &str) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for (i, mix) in [Mix::ListOffsets, Mix::Metadata].into_iter().enumerate() {
        let (request, key, version) = mix.request(i as i32);
        stream.write_all(&request).unwrap();
        let mut size = [0u8; 4];
        stream.read_exact(&mut size).unwrap();
        let mut body = vec![0u8; u32::from_be_bytes(size) as usize];
        stream.read_exact(&mut body).unwrap();
        let response = dispatch::parse_response(&body, key, version).unwrap();
        assert_eq!(response.header.correlation_id(), i as i32);
        match response.body {
            ResponseBodyView::ListOffsets(b) => {
                let offsets: Vec<i64> = b
                    .topics()
                    .iter()
                    .flat_map(|t| t.partitions().iter().map(|p| p.offset()).collect::<Vec<_>>())
                    .collect();
                assert_eq!(offsets, [0, 0, 0, -1], "the answers of empty logs");
            }
            ResponseBodyView::Metadata(b) => assert_eq!(b.topics().len(), 2),
            _ => panic!("unexpected response"),
        }
    }
}

/// One connection: keeps `depth` requests in flight until `stop`, returns how many were
/// answered. Responses are only counted (by their size prefixes), not decoded.
fn connection(addr: String, mix: Mix, depth: usize, stop: Arc<AtomicBool>) -> u64 {
    let mut stream = TcpStream::connect(&addr).unwrap();
    stream.set_nodelay(true).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // One window of requests, encoded once and sent again and again (correlation ids
    // repeat from window to window, which the server does not mind).
    let window: Vec<u8> = (0..depth as i32).flat_map(|i| mix.request(i).0).collect();
    let mut buf = vec![0u8; 256 * 1024];
    let mut answered = 0u64;
    stream.write_all(&window).unwrap();
    let mut in_flight = depth;
    let (mut start, mut end) = (0usize, 0usize);
    while in_flight > 0 {
        let n = stream.read(&mut buf[end..]).expect("the server stopped answering");
        assert!(n > 0, "the server closed the connection");
        end += n;
        // Count the complete responses buffered.
        while end - start >= 4 {
            let size = u32::from_be_bytes(buf[start..start + 4].try_into().unwrap()) as usize;
            if end - start < 4 + size {
                break;
            }
            start += 4 + size;
            in_flight -= 1;
            answered += 1;
            if in_flight == 0 && !stop.load(Ordering::Relaxed) {
                stream.write_all(&window).unwrap();
                in_flight = depth;
            }
        }
        buf.copy_within(start..end, 0);
        end -= start;
        start = 0;
    }
    answered
}

/// User and system CPU time of a process, from /proc/PID/stat, in seconds.
fn cpu_seconds(pid: &str, ticks_per_second: f64) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 of `rest`.
    let seconds = |i: usize| fields[i].parse::<u64>().unwrap() as f64 / ticks_per_second;
    (seconds(11), seconds(12))
}

fn clock_ticks() -> f64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().ok();
    out.and_then(|o| String::from_utf8(o.stdout).ok()).and_then(|s| s.trim().parse().ok()).unwrap_or(100.0)
}

fn main() {
    let secs = env_or("KWIRE_BENCH_SECS", 3).clamp(1, 60);
    let depth = env_or("KWIRE_BENCH_DEPTH", 32).clamp(1, 1024) as usize;
    let ticks = clock_ticks();

    let mut child = Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(["serve", "--listen", "127.0.0.1:0", "--topic", "orders:3", "--topic", "payments:1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start kwire serve");
    let stdout = child.stdout.take().unwrap();
    let pid = child.id().to_string();
    let _server = Server(child);
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap();
    let addr = first
        .strip_prefix("kwire serve: listening on ")
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("kwire serve said {first:?}"))
        .to_string();
    check_answers(&addr);

    println!(
        "kwire serve throughput on {addr} ({secs} s per run, {depth} requests in flight per connection)"
    );
    println!(
        "{:<18} {:>5} {:>12} {:>11} {:>14} {:>14}",
        "requests", "conns", "requests/s", "server CPU", "CPU/request", "user + system"
    );
    for (mix, connections) in [(Mix::Both, 1), (Mix::Both, 16), (Mix::ListOffsets, 16), (Mix::Metadata, 16)] {
        let stop = Arc::new(AtomicBool::new(false));
        let (user_before, system_before) = cpu_seconds(&pid, ticks);
        let start = Instant::now();
        let workers: Vec<_> = (0..connections)
            .map(|_| {
                let (addr, stop) = (addr.clone(), stop.clone());
                thread::spawn(move || connection(addr, mix, depth, stop))
            })
            .collect();
        thread::sleep(Duration::from_secs(secs));
        stop.store(true, Ordering::Relaxed);
        let answered: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
        let elapsed = start.elapsed().as_secs_f64();
        let (user_after, system_after) = cpu_seconds(&pid, ticks);
        let (user, system) = (user_after - user_before, system_after - system_before);
        let per_request = |seconds: f64| 1e6 * seconds / answered as f64;
        println!(
            "{:<18} {:>5} {:>12.0} {:>10.0}% {:>11.2} µs {:>5.2} + {:.2} µs",
            mix.name(),
            connections,
            answered as f64 / elapsed,
            100.0 * (user + system) / elapsed,
            per_request(user + system),
            per_request(user),
            per_request(system),
        );
    }
}
