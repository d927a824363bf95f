//! Counters for `--metrics ADDR`, served in the Prometheus text format (version 0.0.4):
//! atomics, fixed tables, no dependency.
//!
//! - `kwire_proxy_requests_total{api,version}`: requests forwarded;
//! - `kwire_proxy_request_duration_seconds{api}`: a histogram of the time from reading a
//!   request to forwarding its response;
//! - `kwire_proxy_bytes_total{direction}`: frame bytes forwarded, size prefixes included
//!   (`request`: client to broker, `response`: broker to client);
//! - `kwire_proxy_undecoded_frames_total{direction,reason}`: frames kwire did not decode;
//! - `kwire_proxy_connections_open`, `kwire_proxy_connections_max`,
//!   `kwire_proxy_connections_total`, `kwire_proxy_listener_closes_total` (the gate was full);
//! - `kwire_proxy_upstream_errors_total{kind}`: broker connections that failed;
//! - `kwire_proxy_framing_violations_total{side}`.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use kwire::ApiKey;

/// Versions counted per API (Kafka 4.4's highest is 18); higher ones go to the last.
const VERSIONS: usize = 32;
/// Upper bounds of the latency buckets, in microseconds (the `+Inf` bucket is implicit).
const BUCKETS_US: [u64; 16] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
    2_500_000, 5_000_000, 10_000_000,
];

/// The kinds of upstream error, as labelled.
pub const UPSTREAM: [&str; 4] = ["connect", "read", "write", "closed"];
const UNDECODED: [&str; 3] = ["unknown", "malformed", "unpaired"];

/// One API's latency histogram.
#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS_US.len()],
    count: AtomicU64,
    sum_us: AtomicU64,
}

/// Every counter.
pub struct Metrics {
    /// `ApiKey::ALL` index × version; a request of an API kwire does not know is counted
    /// in `unknown_api`.
    requests: Box<[AtomicU64]>,
    unknown_api: AtomicU64,
    latency: Box<[Histogram]>,
    bytes: [AtomicU64; 2],
    undecoded: [[AtomicU64; UNDECODED.len()]; 2],
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections open (accepted and not yet ended).
    pub open: AtomicU64,
    /// Listener closes (the gate was full).
    pub listener_closes: AtomicU64,
    upstream: [AtomicU64; UPSTREAM.len()],
    violations: [AtomicU64; 2],
}

/// The index of a direction: 0 request (client side), 1 response (broker side).
fn side(direction: &str) -> usize {
    usize::from(direction != "request")
}

fn index(key: ApiKey) -> usize {
    ApiKey::ALL.iter().position(|k| *k == key).unwrap_or(0)
}

impl Metrics {
    /// All zero.
    pub fn new() -> Metrics {
        Metrics {
            requests: (0..ApiKey::ALL.len() * VERSIONS).map(|_| AtomicU64::new(0)).collect(),
            unknown_api: AtomicU64::new(0),
            latency: (0..ApiKey::ALL.len()).map(|_| Histogram::default()).collect(),
            bytes: Default::default(),
            undecoded: Default::default(),
            connections: AtomicU64::new(0),
            open: AtomicU64::new(0),
            listener_closes: AtomicU64::new(0),
            upstream: Default::default(),
            violations: Default::default(),
        }
    }

    /// A request forwarded: its API key, version and whole size.
    pub fn request(&self, api_key: i16, version: i16, bytes: usize) {
        self.bytes[0].fetch_add(bytes as u64, Relaxed);
        match ApiKey::from_i16(api_key) {
            Some(key) => {
                let v = usize::try_from(version).unwrap_or(0).min(VERSIONS - 1);
                self.requests[index(key) * VERSIONS + v].fetch_add(1, Relaxed);
            }
            None => {
                self.unknown_api.fetch_add(1, Relaxed);
            }
        }
    }

    /// Bytes forwarded that are no Kafka request or response (raw SASL tokens), or a
    /// frame whose header did not parse.
    pub fn bytes(&self, direction: &str, bytes: usize) {
        self.bytes[side(direction)].fetch_add(bytes as u64, Relaxed);
    }

    /// A response forwarded: its size, and its request's latency.
    pub fn response(&self, key: ApiKey, bytes: usize, latency: Duration) {
        self.bytes[1].fetch_add(bytes as u64, Relaxed);
        let h = &self.latency[index(key)];
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        if let Some(b) = BUCKETS_US.iter().position(|&le| us <= le) {
            h.buckets[b].fetch_add(1, Relaxed);
        }
        h.sum_us.fetch_add(us, Relaxed);
        h.count.fetch_add(1, Relaxed);
    }

    /// A frame not decoded (`what`: unknown, malformed or unpaired).
    pub fn undecoded(&self, direction: &str, what: &str) {
        let r = UNDECODED.iter().position(|w| *w == what).unwrap_or(1);
        self.undecoded[side(direction)][r].fetch_add(1, Relaxed);
    }

    /// An upstream error of `kind` (one of [`UPSTREAM`]).
    pub fn upstream(&self, kind: &str) {
        if let Some(i) = UPSTREAM.iter().position(|k| *k == kind) {
            self.upstream[i].fetch_add(1, Relaxed);
        }
    }

    /// A framing violation from the client (`request`) or the broker.
    pub fn violation(&self, direction: &str) {
        self.violations[side(direction)].fetch_add(1, Relaxed);
    }

    /// The text exposition, with the connection bound given.
    pub fn render(&self, max: usize) -> String {
        let open = self.open.load(Relaxed);
        let mut s = String::with_capacity(8 * 1024);
        let head = |s: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        head(&mut s, "kwire_proxy_requests_total", "counter", "Requests forwarded, by API and version.");
        for (i, key) in ApiKey::ALL.iter().enumerate() {
            for v in 0..VERSIONS {
                let n = self.requests[i * VERSIONS + v].load(Relaxed);
                if n > 0 {
                    let _ = writeln!(
                        s,
                        "kwire_proxy_requests_total{{api=\"{}\",version=\"{v}\"}} {n}",
                        key.name()
                    );
                }
            }
        }
        let _ = writeln!(
            s,
            "kwire_proxy_requests_total{{api=\"unknown\",version=\"\"}} {}",
            self.unknown_api.load(Relaxed)
        );
        head(
            &mut s,
            "kwire_proxy_request_duration_seconds",
            "histogram",
            "From reading a request to forwarding its response, by API.",
        );
        for (i, key) in ApiKey::ALL.iter().enumerate() {
            let h = &self.latency[i];
            let count = h.count.load(Relaxed);
            if count == 0 {
                continue;
            }
            let api = key.name();
            let mut cumulative = 0;
            for (b, le) in BUCKETS_US.iter().enumerate() {
                cumulative += h.buckets[b].load(Relaxed);
                let _ = writeln!(
                    s,
                    "kwire_proxy_request_duration_seconds_bucket{{api=\"{api}\",le=\"{}\"}} {cumulative}",
                    *le as f64 / 1e6
                );
            }
            // Counts read one by one: `+Inf` is at least every bucket below it.
            let count = count.max(cumulative);
            let _ = writeln!(
                s,
                "kwire_proxy_request_duration_seconds_bucket{{api=\"{api}\",le=\"+Inf\"}} {count}"
            );
            let _ = writeln!(
                s,
                "kwire_proxy_request_duration_seconds_sum{{api=\"{api}\"}} {}",
                h.sum_us.load(Relaxed) as f64 / 1e6
            );
            let _ = writeln!(s, "kwire_proxy_request_duration_seconds_count{{api=\"{api}\"}} {count}");
        }
        head(
            &mut s,
            "kwire_proxy_bytes_total",
            "counter",
            "Frame bytes forwarded (request: client to broker).",
        );
        for (d, name) in ["request", "response"].iter().enumerate() {
            let _ = writeln!(
                s,
                "kwire_proxy_bytes_total{{direction=\"{name}\"}} {}",
                self.bytes[d].load(Relaxed)
            );
        }
        head(&mut s, "kwire_proxy_undecoded_frames_total", "counter", "Frames kwire did not decode.");
        for (d, name) in ["request", "response"].iter().enumerate() {
            for (r, reason) in UNDECODED.iter().enumerate() {
                let n = self.undecoded[d][r].load(Relaxed);
                let _ = writeln!(
                    s,
                    "kwire_proxy_undecoded_frames_total{{direction=\"{name}\",reason=\"{reason}\"}} {n}"
                );
            }
        }
        head(&mut s, "kwire_proxy_connections_open", "gauge", "Client connections open.");
        let _ = writeln!(s, "kwire_proxy_connections_open {open}");
        head(
            &mut s,
            "kwire_proxy_connections_max",
            "gauge",
            "Client connections served at most (--max-connections).",
        );
        let _ = writeln!(s, "kwire_proxy_connections_max {max}");
        head(&mut s, "kwire_proxy_connections_total", "counter", "Client connections accepted.");
        let _ = writeln!(s, "kwire_proxy_connections_total {}", self.connections.load(Relaxed));
        head(
            &mut s,
            "kwire_proxy_listener_closes_total",
            "counter",
            "Times a listener closed because --max-connections were open.",
        );
        let _ = writeln!(s, "kwire_proxy_listener_closes_total {}", self.listener_closes.load(Relaxed));
        head(
            &mut s,
            "kwire_proxy_upstream_errors_total",
            "counter",
            "Broker connections that failed, by kind.",
        );
        for (i, kind) in UPSTREAM.iter().enumerate() {
            let _ = writeln!(
                s,
                "kwire_proxy_upstream_errors_total{{kind=\"{kind}\"}} {}",
                self.upstream[i].load(Relaxed)
            );
        }
        head(&mut s, "kwire_proxy_framing_violations_total", "counter", "Framing violations, by side.");
        for (d, name) in ["client", "broker"].iter().enumerate() {
            let _ = writeln!(
                s,
                "kwire_proxy_framing_violations_total{{side=\"{name}\"}} {}",
                self.violations[d].load(Relaxed)
            );
        }
        s
    }
}

/// Serves `GET /metrics` (any path) on `listener`, one scrape at a time, each bounded to
/// 8 KiB of request and 2 s.
pub fn serve(listener: TcpListener, shared: Arc<super::Shared>) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
        let mut req = [0u8; 8192];
        let mut n = 0;
        while n < req.len() {
            match stream.read(&mut req[n..]) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
            if req[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
        let body = shared.metrics.render(shared.gate.max());
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative() {
        let m = Metrics::new();
        m.request(ApiKey::Produce.key(), 11, 100);
        m.response(ApiKey::Produce, 50, Duration::from_micros(300));
        m.response(ApiKey::Produce, 50, Duration::from_secs(60));
        let text = m.render(10);
        assert!(text.contains("kwire_proxy_requests_total{api=\"Produce\",version=\"11\"} 1"), "{text}");
        assert!(text.contains("api=\"Produce\",le=\"0.0005\"} 1"), "{text}");
        assert!(text.contains("api=\"Produce\",le=\"10\"} 1"), "{text}");
        assert!(text.contains("api=\"Produce\",le=\"+Inf\"} 2"), "{text}");
        assert!(text.contains("kwire_proxy_bytes_total{direction=\"response\"} 100"), "{text}");
    }
}
