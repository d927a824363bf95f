//! Counters for a broker or proxy built on kwire, rendered in the Prometheus text
//! exposition format (version 0.0.4) (feature `std`).
//!
//! [`Metrics`] is a fixed set of atomics: requests by [`ApiKey`] and version, a latency
//! histogram per API, frame bytes per [`Direction`], frames not decoded, connections,
//! upstream errors and framing violations. Counting never allocates or locks, so every
//! connection can count into one shared `Metrics`; [`Metrics::render`] writes the text a
//! scrape of `/metrics` serves. The HTTP endpoint is the caller's.
//!
//! Every metric's name starts with the namespace given to [`Metrics::new`]:
//!
//! - `NS_requests_total{api,version}` (counter): requests, by API and version, and
//!   `{api="unknown",version=""}` for API keys kwire does not know;
//! - `NS_request_duration_seconds{api}` (histogram): from reading a request to writing its
//!   response, by API, in buckets from 100 µs to 10 s;
//! - `NS_bytes_total{direction}` (counter): frame bytes, size prefixes included
//!   (`request`: from clients, `response`: to clients);
//! - `NS_undecoded_frames_total{direction,reason}` (counter): frames not decoded, by
//!   [`Undecoded`] reason;
//! - `NS_connections_open` (gauge), `NS_connections_max` (gauge, if the caller gives a
//!   bound), `NS_connections_total` (counter), `NS_listener_closes_total` (counter);
//! - `NS_upstream_errors_total{kind}` (counter): connections to an upstream broker that
//!   failed, by [`UpstreamFailure`] kind;
//! - `NS_framing_violations_total{side}` (counter): `client` or `broker`.
//!
//! ```
//! use std::time::Duration;
//! use kwire::conn::metrics::Metrics;
//! use kwire::{ApiKey, Direction};
//!
//! let metrics = Metrics::new("my_broker");
//! metrics.connection_opened();
//! metrics.request(ApiKey::Produce, 11, 120);
//! metrics.response(ApiKey::Produce, 60, Duration::from_micros(800));
//! metrics.bytes(Direction::Request, 16);
//!
//! let text = metrics.render(Some(1000));
//! assert!(text.contains("my_broker_requests_total{api=\"Produce\",version=\"11\"} 1\n"));
//! assert!(text.contains("my_broker_request_duration_seconds_bucket{api=\"Produce\",le=\"0.001\"} 1\n"));
//! assert!(text.contains("my_broker_bytes_total{direction=\"request\"} 136\n"));
//! assert!(text.contains("my_broker_connections_open 1\n"));
//! assert!(text.contains("my_broker_connections_max 1000\n"));
//! ```

use std::fmt::Write as _;
use std::string::String;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;
use std::vec::Vec;

use crate::{ApiKey, Direction};

/// Versions counted per API (Kafka 4.4's highest is 18); higher ones count as the last.
pub const VERSIONS: usize = 32;

/// Upper bounds of the latency buckets, in microseconds (the `+Inf` bucket is implicit).
pub const BUCKETS_US: [u64; 16] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
    2_500_000, 5_000_000, 10_000_000,
];

/// The slot of a direction in the per-direction counters: a request (labelled `request`; a
/// framing violation, `client`), a response (`response`; a framing violation, `broker`).
fn side(direction: Direction) -> usize {
    match direction {
        Direction::Request => 0,
        Direction::Response => 1,
    }
}

/// Why a frame was not decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Undecoded {
    /// An API or version kwire does not know (`unknown`).
    Unknown,
    /// A frame kwire rejects (`malformed`).
    Malformed,
    /// A response that answers no request awaiting one (`unpaired`).
    Unpaired,
}

impl Undecoded {
    const ALL: [Undecoded; 3] = [Undecoded::Unknown, Undecoded::Malformed, Undecoded::Unpaired];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Undecoded::Unknown => "unknown",
            Undecoded::Malformed => "malformed",
            Undecoded::Unpaired => "unpaired",
        }
    }
}

/// How a connection to an upstream broker failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UpstreamFailure {
    /// It could not be opened (`connect`).
    Connect,
    /// A read failed (`read`).
    Read,
    /// A write failed (`write`).
    Write,
    /// The broker closed it (`closed`).
    Closed,
}

impl UpstreamFailure {
    const ALL: [UpstreamFailure; 4] =
        [UpstreamFailure::Connect, UpstreamFailure::Read, UpstreamFailure::Write, UpstreamFailure::Closed];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            UpstreamFailure::Connect => "connect",
            UpstreamFailure::Read => "read",
            UpstreamFailure::Write => "write",
            UpstreamFailure::Closed => "closed",
        }
    }
}

/// One API's latency histogram.
#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS_US.len()],
    count: AtomicU64,
    sum_us: AtomicU64,
}

/// Every counter, shared by all connections (`&self` methods, relaxed atomics): see the
/// [module](self) for what is counted and how it is named.
pub struct Metrics {
    namespace: String,
    /// `ApiKey::ALL` index × version.
    requests: Vec<AtomicU64>,
    unknown_api: AtomicU64,
    latency: Vec<Histogram>,
    bytes: [AtomicU64; 2],
    undecoded: [[AtomicU64; Undecoded::ALL.len()]; 2],
    connections: AtomicU64,
    open: AtomicU64,
    listener_closes: AtomicU64,
    upstream: [AtomicU64; UpstreamFailure::ALL.len()],
    violations: [AtomicU64; 2],
}

impl core::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Metrics")
            .field("namespace", &self.namespace)
            .field("connections", &self.connections.load(Relaxed))
            .field("open", &self.open.load(Relaxed))
            .finish_non_exhaustive()
    }
}

fn index(key: ApiKey) -> usize {
    ApiKey::ALL.iter().position(|k| *k == key).unwrap_or(0)
}

impl Metrics {
    /// All zero; every metric's name starts with `namespace` and `_` (`kwire_proxy`
    /// gives `kwire_proxy_requests_total`). The namespace should match
    /// `[a-zA-Z_][a-zA-Z0-9_]*`, as Prometheus names must.
    pub fn new(namespace: &str) -> Metrics {
        Metrics {
            namespace: namespace.into(),
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

    /// A request: its API key and version (as the header has it: a negative version counts
    /// as 0) and its size with prefix.
    pub fn request(&self, key: ApiKey, version: i16, bytes: usize) {
        self.bytes[0].fetch_add(bytes as u64, Relaxed);
        let v = usize::try_from(version).unwrap_or(0).min(VERSIONS - 1);
        self.requests[index(key) * VERSIONS + v].fetch_add(1, Relaxed);
    }

    /// A request whose API key kwire does not know (counted as `unknown`), and its size with
    /// prefix.
    pub fn unknown_request(&self, bytes: usize) {
        self.bytes[0].fetch_add(bytes as u64, Relaxed);
        self.unknown_api.fetch_add(1, Relaxed);
    }

    /// A response to a request of `key`: its size with prefix, and the request's latency.
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

    /// Bytes of frames that are neither counted by [`Metrics::request`] nor by
    /// [`Metrics::response`] (raw SASL tokens, frames whose header did not parse).
    pub fn bytes(&self, direction: Direction, bytes: usize) {
        self.bytes[side(direction)].fetch_add(bytes as u64, Relaxed);
    }

    /// A frame not decoded.
    pub fn undecoded(&self, direction: Direction, why: Undecoded) {
        self.undecoded[side(direction)][why as usize].fetch_add(1, Relaxed);
    }

    /// A connection accepted: counted, and open until [`Metrics::connection_closed`].
    pub fn connection_opened(&self) {
        self.connections.fetch_add(1, Relaxed);
        self.open.fetch_add(1, Relaxed);
    }

    /// A connection counted by [`Metrics::connection_opened`] ended.
    pub fn connection_closed(&self) {
        // Never below zero, whatever the caller does.
        let _ = self.open.fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
    }

    /// Connections open now.
    pub fn open_connections(&self) -> u64 {
        self.open.load(Relaxed)
    }

    /// A listener closed because the connection bound was reached.
    pub fn listener_closed(&self) {
        self.listener_closes.fetch_add(1, Relaxed);
    }

    /// An upstream connection failed.
    pub fn upstream_error(&self, kind: UpstreamFailure) {
        self.upstream[kind as usize].fetch_add(1, Relaxed);
    }

    /// A framing violation (a negative frame size, or one over the limit) in `direction`:
    /// from the client for a request, from the broker for a response.
    pub fn violation(&self, direction: Direction) {
        self.violations[side(direction)].fetch_add(1, Relaxed);
    }

    /// The text exposition of every metric; `max_connections` is rendered as the
    /// `NS_connections_max` gauge when given. APIs with no request (no response, for the
    /// histogram) are left out; every other series is always present.
    pub fn render(&self, max_connections: Option<usize>) -> String {
        let mut s = String::with_capacity(8 * 1024);
        self.render_into(&mut s, max_connections);
        s
    }

    /// As [`Metrics::render`], appending to `s`.
    pub fn render_into(&self, s: &mut String, max_connections: Option<usize>) {
        let ns = &self.namespace;
        let head = |s: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(s, "# HELP {ns}_{name} {help}\n# TYPE {ns}_{name} {kind}");
        };
        head(s, "requests_total", "counter", "Requests, by API and version.");
        for (i, key) in ApiKey::ALL.iter().enumerate() {
            for v in 0..VERSIONS {
                let n = self.requests[i * VERSIONS + v].load(Relaxed);
                if n > 0 {
                    let _ = writeln!(s, "{ns}_requests_total{{api=\"{}\",version=\"{v}\"}} {n}", key.name());
                }
            }
        }
        let _ = writeln!(
            s,
            "{ns}_requests_total{{api=\"unknown\",version=\"\"}} {}",
            self.unknown_api.load(Relaxed)
        );
        head(
            s,
            "request_duration_seconds",
            "histogram",
            "From reading a request to writing its response, by API.",
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
                    "{ns}_request_duration_seconds_bucket{{api=\"{api}\",le=\"{}\"}} {cumulative}",
                    *le as f64 / 1e6
                );
            }
            // Counts are read one by one: `+Inf` is at least every bucket below it.
            let count = count.max(cumulative);
            let _ = writeln!(s, "{ns}_request_duration_seconds_bucket{{api=\"{api}\",le=\"+Inf\"}} {count}");
            let sum = h.sum_us.load(Relaxed) as f64 / 1e6;
            let _ = writeln!(s, "{ns}_request_duration_seconds_sum{{api=\"{api}\"}} {sum}");
            let _ = writeln!(s, "{ns}_request_duration_seconds_count{{api=\"{api}\"}} {count}");
        }
        head(s, "bytes_total", "counter", "Frame bytes (request: from clients, response: to clients).");
        for (d, name) in ["request", "response"].iter().enumerate() {
            let _ = writeln!(s, "{ns}_bytes_total{{direction=\"{name}\"}} {}", self.bytes[d].load(Relaxed));
        }
        head(s, "undecoded_frames_total", "counter", "Frames kwire did not decode.");
        for (d, name) in ["request", "response"].iter().enumerate() {
            for why in Undecoded::ALL {
                let n = self.undecoded[d][why as usize].load(Relaxed);
                let _ = writeln!(
                    s,
                    "{ns}_undecoded_frames_total{{direction=\"{name}\",reason=\"{}\"}} {n}",
                    why.label()
                );
            }
        }
        head(s, "connections_open", "gauge", "Client connections open.");
        let _ = writeln!(s, "{ns}_connections_open {}", self.open.load(Relaxed));
        if let Some(max) = max_connections {
            head(s, "connections_max", "gauge", "Client connections served at most.");
            let _ = writeln!(s, "{ns}_connections_max {max}");
        }
        head(s, "connections_total", "counter", "Client connections accepted.");
        let _ = writeln!(s, "{ns}_connections_total {}", self.connections.load(Relaxed));
        head(
            s,
            "listener_closes_total",
            "counter",
            "Times a listener closed because the connection bound was reached.",
        );
        let _ = writeln!(s, "{ns}_listener_closes_total {}", self.listener_closes.load(Relaxed));
        head(
            s,
            "upstream_errors_total",
            "counter",
            "UpstreamFailure broker connections that failed, by kind.",
        );
        for kind in UpstreamFailure::ALL {
            let n = self.upstream[kind as usize].load(Relaxed);
            let _ = writeln!(s, "{ns}_upstream_errors_total{{kind=\"{}\"}} {n}", kind.label());
        }
        head(s, "framing_violations_total", "counter", "Framing violations, by side.");
        for (d, name) in ["client", "broker"].iter().enumerate() {
            let n = self.violations[d].load(Relaxed);
            let _ = writeln!(s, "{ns}_framing_violations_total{{side=\"{name}\"}} {n}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::format;

    use super::*;

    /// The value of the one sample line that starts with `series ` (name and labels).
    fn sample(text: &str, series: &str) -> Option<f64> {
        let mut found = text.lines().filter_map(|l| l.strip_prefix(series)?.strip_prefix(' '));
        let v = found.next()?.parse().ok();
        assert!(found.next().is_none(), "{series} twice");
        v
    }

    #[test]
    fn histogram_is_cumulative() {
        let m = Metrics::new("t");
        m.request(ApiKey::Produce, 11, 100);
        m.response(ApiKey::Produce, 50, Duration::from_micros(300));
        m.response(ApiKey::Produce, 50, Duration::from_secs(60));
        let text = m.render(Some(10));
        assert_eq!(sample(&text, "t_requests_total{api=\"Produce\",version=\"11\"}"), Some(1.0));
        assert_eq!(
            sample(&text, "t_request_duration_seconds_bucket{api=\"Produce\",le=\"0.00025\"}"),
            Some(0.0)
        );
        assert_eq!(
            sample(&text, "t_request_duration_seconds_bucket{api=\"Produce\",le=\"0.0005\"}"),
            Some(1.0)
        );
        assert_eq!(sample(&text, "t_request_duration_seconds_bucket{api=\"Produce\",le=\"10\"}"), Some(1.0));
        assert_eq!(
            sample(&text, "t_request_duration_seconds_bucket{api=\"Produce\",le=\"+Inf\"}"),
            Some(2.0)
        );
        assert_eq!(sample(&text, "t_request_duration_seconds_count{api=\"Produce\"}"), Some(2.0));
        let sum = sample(&text, "t_request_duration_seconds_sum{api=\"Produce\"}").unwrap();
        assert!((sum - 60.0003).abs() < 1e-9, "{sum}");
        assert_eq!(sample(&text, "t_bytes_total{direction=\"request\"}"), Some(100.0));
        assert_eq!(sample(&text, "t_bytes_total{direction=\"response\"}"), Some(100.0));
        assert_eq!(sample(&text, "t_connections_max"), Some(10.0));
        // No histogram for an API with no response.
        assert!(!text.contains("api=\"Fetch\""), "{text}");
    }

    #[test]
    fn versions_unknown_apis_and_labels() {
        let m = Metrics::new("ns");
        m.request(ApiKey::Fetch, 99, 10);
        m.request(ApiKey::Fetch, -1, 10);
        m.unknown_request(10);
        m.undecoded(Direction::Response, Undecoded::Unpaired);
        m.upstream_error(UpstreamFailure::Write);
        m.violation(Direction::Request);
        m.bytes(Direction::Response, 7);
        let text = m.render(None);
        let last = format!("ns_requests_total{{api=\"Fetch\",version=\"{}\"}}", VERSIONS - 1);
        assert_eq!(sample(&text, &last), Some(1.0));
        assert_eq!(sample(&text, "ns_requests_total{api=\"Fetch\",version=\"0\"}"), Some(1.0));
        assert_eq!(sample(&text, "ns_requests_total{api=\"unknown\",version=\"\"}"), Some(1.0));
        assert_eq!(
            sample(&text, "ns_undecoded_frames_total{direction=\"response\",reason=\"unpaired\"}"),
            Some(1.0)
        );
        assert_eq!(
            sample(&text, "ns_undecoded_frames_total{direction=\"request\",reason=\"unpaired\"}"),
            Some(0.0)
        );
        assert_eq!(sample(&text, "ns_upstream_errors_total{kind=\"write\"}"), Some(1.0));
        assert_eq!(sample(&text, "ns_upstream_errors_total{kind=\"read\"}"), Some(0.0));
        assert_eq!(sample(&text, "ns_framing_violations_total{side=\"client\"}"), Some(1.0));
        assert_eq!(sample(&text, "ns_framing_violations_total{side=\"broker\"}"), Some(0.0));
        assert_eq!(sample(&text, "ns_bytes_total{direction=\"response\"}"), Some(7.0));
        assert!(!text.contains("ns_connections_max"), "{text}");
        // Every sample line belongs to a declared family.
        let declared: Vec<&str> =
            text.lines().filter_map(|l| l.strip_prefix("# TYPE ")?.split(' ').next()).collect();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap();
            assert!(declared.iter().any(|d| name.starts_with(d)), "{line}");
        }
    }

    #[test]
    fn connections_open_and_close() {
        let m = Metrics::new("c");
        m.connection_opened();
        m.connection_opened();
        m.connection_closed();
        m.connection_closed();
        m.connection_closed();
        m.listener_closed();
        assert_eq!(m.open_connections(), 0);
        let text = m.render(None);
        assert_eq!(sample(&text, "c_connections_total"), Some(2.0));
        assert_eq!(sample(&text, "c_connections_open"), Some(0.0));
        assert_eq!(sample(&text, "c_listener_closes_total"), Some(1.0));
    }
}
