//! `kwire proxy`: command-line flags, a log and recordings over `kwire::proxy`, the
//! library's proxy runtime (docs/proxy.md).
//!
//! `log.rs` is the runtime's hooks (the text and JSON log, recordings, the summary's
//! counters), decoding each frame after it was sent (`decode.rs`); `tls.rs` the TLS flags;
//! `limits.rs` the descriptor limit; `metrics.rs` the `--metrics` endpoint.

pub mod decode;
mod limits;
mod log;
mod metrics;
mod tls;

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use kwire::Direction;
use kwire::conn::metrics::{Metrics, Undecoded};
use kwire::filter::{DenyApis, FilterChain, Rule, ValidateRecords};
use kwire::proxy::Proxy;
use kwire::proxy::{AuditLog, Tenants};

const AFTER_HELP: &str = "\
Examples:
  # Clients connect to 127.0.0.1:19092 instead of the broker at 127.0.0.1:9092
  kwire proxy --listen 127.0.0.1:19092 --upstream 127.0.0.1:9092

  # Every frame decoded, as JSON lines; frames saved as hex test vectors
  kwire proxy --listen 127.0.0.1:19092 --upstream 127.0.0.1:9092 --format json --record captured/

  # Problems only, and Prometheus metrics on http://127.0.0.1:9464/metrics
  kwire proxy --listen 0.0.0.0:19092 --upstream broker1:9092 --advertise proxy.example --quiet \
    --metrics 127.0.0.1:9464

  # A cluster, port per broker by node id: broker N on 10.0.0.5:19100+N. Two proxies
  # with the same flags on two hosts serve the same clients interchangeably.
  kwire proxy --listen 10.0.0.5:19092 --upstream b1:9092,b2:9092,b3:9092 \
    --broker-ports 19100 --advertise 10.0.0.5

  # TLS both ways: clients connect with TLS (security.protocol=SSL, trusting the CA of
  # proxy.pem), and the proxy reaches the brokers' SSL listener with a client certificate
  kwire proxy --listen 0.0.0.0:19093 --upstream broker1:9093 --advertise proxy.example \
    --tls-cert proxy.pem --tls-key proxy.key \
    --upstream-tls --upstream-ca kafka-ca.pem --upstream-cert client.pem --upstream-key client.key

  # SNI routing: one port for the whole cluster. Clients bootstrap with
  # kafka.example:9093; broker N is broker-N.kafka.example:9093 (names that must resolve to
  # the proxy, e.g. a wildcard DNS record, and be in proxy.pem's names, e.g. *.kafka.example)
  kwire proxy --listen 0.0.0.0:9093 --upstream broker1:9092 \
    --tls-cert proxy.pem --tls-key proxy.key \
    --sni-pattern 'broker-{id}.kafka.example' --sni-bootstrap kafka.example

Each broker named in a Metadata (FindCoordinator, DescribeCluster, ...) response gets a
listener of its own on the --listen address, and the response names that listener
instead, so that clients keep talking through the proxy: with --broker-ports BASE the
listener of node id N is on port BASE+N; without it, on a free port, in the order the
brokers are seen. With --sni-pattern there is one listener: brokers are named from the
pattern by node id, at the --listen port, and each TLS connection goes to the broker whose
name the client asked for (the bootstrap name to --upstream). Proxies given the same flags
map brokers alike and share nothing.

Log (text): one line per request when its response arrives:
  TIME conn=N CLIENT_ID API vVERSION req=BYTES resp=BYTES LATENCY [errors=NAME,...]
and a line for each frame kwire could not decode, each framing violation (the connection
is closed) and each connection opened or closed.";

/// How to log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One line per request, when its response arrives.
    Text,
    /// One JSON object per frame, with the whole decoded frame.
    Json,
}

/// Forward Kafka traffic to a broker, decoding every frame on the way.
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Address to listen on for clients (the bootstrap address); port 0 picks a free port.
    #[arg(long)]
    listen: String,
    /// The broker (bootstrap server) to forward to, HOST:PORT; or several, comma-separated,
    /// tried in turn for each client connection to the bootstrap listener.
    #[arg(long)]
    upstream: String,
    /// Serve broker node id N on port BASE+N of the --listen address (the same in every
    /// proxy instance with the same flags; no state is shared). Without it, each broker gets
    /// a free port when a response first names it.
    #[arg(long, value_name = "BASE")]
    broker_ports: Option<u16>,
    /// The host written into rewritten broker addresses (default: the --listen IP).
    #[arg(long)]
    advertise: Option<String>,
    /// Log format.
    #[arg(long, short, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Save frames as hex test vectors in DIR/requests and DIR/responses (named
    /// CLIENT_API_vVERSION_N.hex), and frames kwire cannot decode in DIR/undecoded with
    /// the reason beside them. Secret fields are masked (same length, 0x2a bytes) unless
    /// --show-secrets, with a note NAME.masked.txt beside a masked frame.
    #[arg(long, value_name = "DIR")]
    record: Option<PathBuf>,
    /// Save at most this many request/response pairs per client, API and version.
    #[arg(long, default_value_t = 5, value_name = "N")]
    record_limit: usize,
    /// Decode each frame into kwire's owned values, encode it again and compare with the
    /// frame (reported per frame; a mismatch is logged).
    #[arg(long)]
    verify: bool,
    /// Close a connection that announces a frame larger than this many bytes (checked from
    /// the size prefix, before the frame is read).
    #[arg(long, default_value_t = kwire::frame::DEFAULT_MAX_FRAME_SIZE, value_name = "BYTES")]
    max_frame_bytes: usize,
    /// Log only connections and problems, not every request (text format).
    #[arg(long, short)]
    quiet: bool,
    /// Refuse requests of this API (repeatable, e.g. `--deny-api DeleteTopics`): the
    /// connection is closed, as a broker closes one that sends an API it does not offer,
    /// and ApiVersions answers no longer list it.
    #[arg(long = "deny-api", value_name = "API")]
    deny_api: Vec<String>,
    /// Validate the records of Produce requests (repeatable): `PATTERN=CHECK[,CHECK...]`,
    /// PATTERN a topic name with `*` wildcards, the checks `json` (values are JSON), `key`
    /// (a key is required), `max-bytes=N` (key, value and headers at most N bytes) and
    /// `header=NAME` (a header is required), e.g. `--validate
    /// 'orders.*=json,key,max-bytes=1048576,header=trace-id'`. A partition with a failing
    /// record gets INVALID_RECORD with the record errors; the rest go on to the broker.
    #[arg(long = "validate", value_name = "RULE")]
    validate: Vec<String>,
    /// Decompress at most this many bytes of records a batch to validate them; a larger
    /// batch fails with a message saying so.
    #[arg(long, default_value_t = kwire::filter::DEFAULT_DECOMPRESSION_LIMIT, value_name = "BYTES")]
    validate_decompression_limit: usize,
    /// A tenant of a virtual cluster (repeatable): `principal:USER=PREFIX`,
    /// `sni:NAME=PREFIX`, or `default=PREFIX` for connections no other rule names. The tenant's topic names, group ids and transactional ids carry
    /// PREFIX on the broker and not in its clients' eyes, and it sees no other tenant's;
    /// a connection that is no tenant gets no topics or groups (docs/proxy.md, "Tenants").
    #[arg(long = "tenant", value_name = "WHO=PREFIX")]
    tenant: Vec<String>,
    /// Append one JSON line per security-relevant event to FILE: authentication, changes
    /// to topics, ACLs, configs, quotas and credentials, and connections the proxy refused
    /// or closed (docs/proxy.md, "Audit log"). No secret is written.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Show secrets (SASL tokens, delegation-token HMACs, SCRAM credentials, password
    /// configs) in the JSON log and in recorded frames, where they are masked by default.
    /// Raw SaslHandshake v0 tokens are never shown.
    #[arg(long)]
    show_secrets: bool,
    /// Serve at most this many client connections at once (default: what the descriptor
    /// limit serves, two descriptors each, after the soft limit is raised to the hard
    /// limit). Past it every listener closes, so new clients are refused (connection
    /// refused, logged) rather than accepted and dropped, until a connection ends.
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// Serve metrics in the Prometheus text format on ADDR (HOST:PORT, any path; port 0
    /// picks one, logged as `metrics on http://ADDR/metrics`).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// TLS termination and origination, SNI routing (`tls.rs`).
    #[command(flatten)]
    tls: Box<tls::TlsArgs>,
}

/// What the log, the recordings and the summary share: the proxy's hooks (`log.rs`).
pub struct Cli {
    format: Format,
    quiet: bool,
    verify: bool,
    /// `--show-secrets`: no masking in the JSON log and recordings.
    show_secrets: bool,
    log: Logger,
    recorder: Option<Recorder>,
    stats: Stats,
    /// What `--metrics` serves; the proxy counts into it too.
    metrics: Arc<Metrics>,
    /// `--audit FILE`.
    audit: Option<AuditLog>,
}

/// Counters for the summary printed at exit.
#[derive(Default)]
struct Stats {
    connections: AtomicU64,
    requests: AtomicU64,
    responses: AtomicU64,
    rewritten: AtomicU64,
    /// Raw SASL tokens passed through (SaslHandshake v0).
    sasl_tokens: AtomicU64,
    violations: AtomicU64,
    mismatches: AtomicU64,
    /// `(direction, api, why)` to count, for frames kwire did not decode.
    undecoded: Mutex<BTreeMap<(String, String, &'static str), u64>>,
}

impl Cli {
    /// Counts a frame kwire did not decode; returns how many were counted before.
    fn count_undecoded(&self, direction: Direction, api: &str, why: Undecoded) -> u64 {
        self.metrics.undecoded(direction, why);
        let direction = if direction == Direction::Request { "request" } else { "response" };
        let mut map = self.stats.undecoded.lock().unwrap_or_else(|e| e.into_inner());
        let n = map.entry((direction.to_string(), api.to_string(), why.label())).or_insert(0);
        *n += 1;
        *n - 1
    }
}

/// A logger thread: connection threads hand it lines and never wait on the terminal. When
/// it falls behind by more than its queue, lines are dropped and counted. It prints nothing
/// until [`Logger::open`]: the first line of stdout says where to connect.
struct Logger {
    tx: SyncSender<String>,
    dropped: AtomicU64,
    open: Mutex<Option<SyncSender<()>>>,
}

impl Logger {
    fn start() -> (Logger, std::thread::JoinHandle<()>) {
        let (tx, rx) = sync_channel::<String>(1 << 16);
        let (open_tx, open_rx) = sync_channel::<()>(1);
        let handle = std::thread::spawn(move || {
            let _ = open_rx.recv();
            log_loop(rx)
        });
        (Logger { tx, dropped: AtomicU64::new(0), open: Mutex::new(Some(open_tx)) }, handle)
    }

    /// Lets the logger print (after the first line).
    fn open(&self) {
        if let Some(tx) = self.open.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = tx.send(());
        }
    }

    fn line(&self, line: String) {
        match self.tx.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

fn log_loop(rx: Receiver<String>) {
    let mut batch = String::new();
    while let Ok(line) = rx.recv() {
        batch.clear();
        batch.push_str(&line);
        batch.push('\n');
        while batch.len() < 1 << 16
            && let Ok(line) = rx.try_recv()
        {
            batch.push_str(&line);
            batch.push('\n');
        }
        // Stdout is locked per batch only: other threads print too.
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(batch.as_bytes());
        let _ = out.flush();
    }
}

/// Saves frames as hex vectors (`kwire proxy --record`, `kwire decode --record` of a capture).
pub(crate) struct Recorder {
    dir: PathBuf,
    limit: usize,
    counts: Mutex<HashMap<String, usize>>,
    undecoded: AtomicU64,
}

/// Lowercase letters, digits and `-` only, for file names.
fn file_part(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c.to_ascii_lowercase() } else { '-' })
        .collect();
    if s.is_empty() { "none".into() } else { s }
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2 + 1);
    for b in bytes {
        s.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        s.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    s.push('\n');
    s
}

impl Recorder {
    /// Saves into `dir`, at most `limit` pairs per client, API and version.
    pub(crate) fn new(dir: PathBuf, limit: usize) -> Self {
        Recorder { dir, limit, counts: Mutex::new(HashMap::new()), undecoded: AtomicU64::new(0) }
    }

    /// The name for the next pair of `client`, `api`, `version`, or `None` past the limit.
    pub(crate) fn name(&self, client: Option<&str>, api: &str, version: i16) -> Option<String> {
        let stem = format!("{}_{}_v{version}", file_part(client.unwrap_or("")), file_part(api));
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let n = counts.entry(stem.clone()).or_insert(0);
        if *n >= self.limit {
            return None;
        }
        *n += 1;
        Some(format!("{stem}_{n}"))
    }

    /// Saves a frame as `DIR/SUB/NAME.hex`, its secrets masked unless `show_secrets`
    /// (`response_to` as for [`decode::redacted`]); a masked frame gets a note beside it,
    /// `NAME.masked.txt`, saying what was masked.
    pub(crate) fn save(
        &self,
        sub: &str,
        name: &str,
        frame_with_prefix: &[u8],
        response_to: Option<(i16, i16)>,
        show_secrets: bool,
    ) -> std::io::Result<()> {
        let dir = self.dir.join(sub);
        std::fs::create_dir_all(&dir)?;
        if show_secrets {
            return std::fs::write(dir.join(format!("{name}.hex")), hex(frame_with_prefix));
        }
        let (masked, redaction) = decode::redacted(frame_with_prefix, response_to);
        std::fs::write(dir.join(format!("{name}.hex")), hex(&masked))?;
        if let Some(note) = decode::redaction_note(&redaction) {
            std::fs::write(dir.join(format!("{name}.masked.txt")), format!("{note}\n"))?;
        }
        Ok(())
    }

    /// Saves a frame kwire could not decode, with the reason beside it; at most 1000. Such
    /// a frame is masked whole unless `show_secrets`: nothing says what it holds.
    pub(crate) fn save_undecoded(
        &self,
        what: &str,
        frame_with_prefix: &[u8],
        response_to: Option<(i16, i16)>,
        reason: &str,
        show_secrets: bool,
    ) -> std::io::Result<()> {
        let n = self.undecoded.fetch_add(1, Ordering::Relaxed) + 1;
        if n > 1000 {
            return Ok(());
        }
        let dir = self.dir.join("undecoded");
        std::fs::create_dir_all(&dir)?;
        let name = format!("{n:04}_{}", file_part(what));
        let (bytes, note) = if show_secrets {
            (frame_with_prefix.to_vec(), None)
        } else {
            let (masked, redaction) = decode::redacted(frame_with_prefix, response_to);
            (masked, decode::redaction_note(&redaction))
        };
        std::fs::write(dir.join(format!("{name}.hex")), hex(&bytes))?;
        let note = note.map(|n| format!("{n}\n")).unwrap_or_default();
        std::fs::write(dir.join(format!("{name}.txt")), format!("{what}\n{reason}\n{note}"))
    }
}

/// UTC time with milliseconds, `2026-11-30T08:51:02.123Z`.
fn now() -> String {
    kwire::proxy::timestamp(SystemTime::now())
}

/// `--tenant principal:USER=PREFIX` and `--tenant sni:NAME=PREFIX`.
fn parse_tenants(flags: &[String]) -> Result<Tenants, String> {
    let mut tenants = Tenants::new();
    for flag in flags {
        let bad = |why: String| format!("--tenant {flag}: {why}");
        let (who, prefix) = flag.split_once('=').ok_or_else(|| bad("expected WHO=PREFIX".into()))?;
        let added = match who.split_once(':') {
            Some(("principal", user)) if !user.is_empty() => tenants.principal(user, prefix),
            Some(("sni", name)) if !name.is_empty() => tenants.sni(name, prefix),
            None if who == "default" => tenants.default_tenant(prefix),
            _ => return Err(bad("WHO is principal:USER, sni:NAME or default".into())),
        };
        added.map_err(|e| bad(e.to_string()))?;
    }
    Ok(tenants)
}

fn parse_upstream(s: &str) -> Result<(), String> {
    let (_, port) = s.rsplit_once(':').ok_or(format!("--upstream {s}: expected HOST:PORT"))?;
    port.parse::<u16>().map_err(|_| format!("--upstream {s}: bad port"))?;
    if s.to_socket_addrs().map(|mut a| a.next().is_none()).unwrap_or(true) {
        return Err(format!("--upstream {s}: cannot resolve the address"));
    }
    Ok(())
}

/// Runs `kwire proxy`.
pub fn run(args: Args) -> Result<(), String> {
    let upstreams: Vec<String> = args.upstream.split(',').map(str::to_string).collect();
    for one in &upstreams {
        parse_upstream(one)?;
    }
    if args.record_limit == 0 && args.record.is_some() {
        return Err("--record-limit must be at least 1".into());
    }
    let denied = args
        .deny_api
        .iter()
        .map(|name| {
            kwire::ApiKey::ALL
                .iter()
                .copied()
                .find(|k| k.name().eq_ignore_ascii_case(name.trim()))
                .ok_or(format!("--deny-api {name}: no such API (see `kwire versions`)"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let rules: Arc<[Rule]> = args
        .validate
        .iter()
        .map(|rule| rule.parse::<Rule>().map_err(|e| format!("--validate {rule}: {e}")))
        .collect::<Result<Vec<_>, _>>()?
        .into();
    let decompression_limit = args.validate_decompression_limit;
    let tenants = Arc::new(parse_tenants(&args.tenant)?);
    let nofile = limits::raise_nofile()?;
    let max_connections = match args.max_connections {
        Some(n) if n > nofile.connections() => {
            eprintln!(
                "kwire proxy: --max-connections {n} is more than the descriptor limit ({}) serves ({}); \
                 connections past that will fail",
                nofile.now,
                nofile.connections()
            );
            n
        }
        Some(0) => return Err("--max-connections must be at least 1".into()),
        Some(n) => n,
        None if nofile.connections() == 0 => {
            return Err(format!("the descriptor limit ({}) serves no connection", nofile.now));
        }
        None => nofile.connections(),
    };
    let listen: SocketAddr = args
        .listen
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or(format!("cannot listen on {}: not an address", args.listen))?;
    if let Some(dir) = &args.record {
        std::fs::create_dir_all(dir).map_err(|e| format!("--record {}: {e}", dir.display()))?;
    }
    if args.show_secrets {
        eprintln!(
            "kwire proxy: WARNING: --show-secrets: SASL tokens, delegation-token HMACs, SCRAM credentials and \
             password configs will appear unmasked in the JSON log and in recorded frames"
        );
    }
    let metrics_listener = match &args.metrics {
        Some(addr) => Some(TcpListener::bind(addr).map_err(|e| format!("--metrics {addr}: {e}"))?),
        None => None,
    };
    let (log, log_thread) = Logger::start();
    let metrics = Arc::new(Metrics::new(kwire::proxy::METRICS_NAMESPACE));
    let cli = Cli {
        format: args.format,
        quiet: args.quiet,
        verify: args.verify,
        show_secrets: args.show_secrets,
        log,
        recorder: args.record.map(|dir| Recorder {
            dir,
            limit: args.record_limit,
            counts: Mutex::new(HashMap::new()),
            undecoded: AtomicU64::new(0),
        }),
        stats: Stats::default(),
        metrics: metrics.clone(),
        audit: match &args.audit {
            Some(path) => {
                Some(AuditLog::to_file(path).map_err(|e| format!("--audit {}: {e}", path.display()))?)
            }
            None => None,
        },
    };
    let mut builder = Proxy::builder(listen, upstreams)
        .max_frame_bytes(args.max_frame_bytes)
        .max_connections(max_connections)
        .metrics(metrics);
    if let Some(base) = args.broker_ports {
        builder = builder.broker_ports(base);
    }
    if let Some(host) = &args.advertise {
        builder = builder.advertise(host.clone());
    }
    if !denied.is_empty() || !tenants.is_empty() || !rules.is_empty() {
        builder = builder.filters(move |conn| {
            let mut chain = FilterChain::new();
            if !denied.is_empty() {
                chain.push(DenyApis::new(denied.iter().copied()));
            }
            if !tenants.is_empty() {
                chain.push(tenants.filter(conn));
            }
            // After the tenants' prefixing: rules name topics as the broker holds them.
            if !rules.is_empty() {
                chain.push(ValidateRecords::new(rules.clone()).decompression_limit(decompression_limit));
            }
            chain
        });
    }
    let builder = args.tls.apply(builder.hooks(cli))?;
    let tls_warnings = args.tls.warnings();
    for w in &tls_warnings {
        eprintln!("kwire proxy: {w}");
    }
    let (stop_tx, stop_rx) = sync_channel::<()>(1);
    ctrlc::set_handler(move || {
        let _ = stop_tx.try_send(());
    })
    .map_err(|e| e.to_string())?;
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("kwire-proxy-io")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let proxy = runtime.block_on(builder.start()).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidInput => e.to_string(),
        _ => format!("cannot listen on {}: {e}", args.listen),
    })?;
    // The first line says where to connect; tests read it.
    println!("kwire proxy: listening on {}, forwarding to {}", proxy.local_addr(), args.upstream);
    let _ = std::io::stdout().flush();
    proxy.hooks().log.open();
    for w in tls_warnings {
        proxy.hooks().log.line(format!("{} {w}", now()));
    }
    proxy.hooks().log.line(format!(
        "{} descriptor limit {} (soft {} at start, hard {}): serving at most {max_connections} connections{}",
        now(),
        nofile.now,
        nofile.before,
        nofile.hard,
        if args.max_connections.is_some() { " (--max-connections)" } else { "" }
    ));
    if let Some(listener) = metrics_listener {
        let at = listener.local_addr().map_err(|e| e.to_string())?;
        proxy.hooks().log.line(format!("{} metrics on http://{at}/metrics", now()));
        let scraped = proxy.clone();
        std::thread::spawn(move || metrics::serve(listener, move || scraped.render_metrics()));
    }
    let _ = stop_rx.recv();
    summary(proxy.hooks());
    runtime.shutdown_background();
    drop(log_thread);
    Ok(())
}

/// Prints the counters (stderr), at exit.
fn summary(cli: &Cli) {
    let s = &cli.stats;
    let mut out = format!(
        "kwire proxy: {} connections, {} requests, {} responses, {} rewritten, {} SASL tokens (v0, not shown), {} \
         framing violations, {} re-encoding mismatches, {} log lines dropped",
        s.connections.load(Ordering::Relaxed),
        s.requests.load(Ordering::Relaxed),
        s.responses.load(Ordering::Relaxed),
        s.rewritten.load(Ordering::Relaxed),
        s.sasl_tokens.load(Ordering::Relaxed),
        s.violations.load(Ordering::Relaxed),
        s.mismatches.load(Ordering::Relaxed),
        cli.log.dropped.load(Ordering::Relaxed),
    );
    let undecoded = s.undecoded.lock().unwrap_or_else(|e| e.into_inner());
    for ((direction, api, what), n) in undecoded.iter() {
        out.push_str(&format!("\n  {n} {direction}s of {api} not decoded ({what})"));
    }
    // Give the logger a moment to drain what it has.
    std::thread::sleep(Duration::from_millis(100));
    eprintln!("{out}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_tame() {
        assert_eq!(file_part("kafka-python-3.0.12"), "kafka-python-3.0.12");
        assert_eq!(file_part("rdkafka/Producer#1"), "rdkafka-producer-1");
        assert_eq!(file_part(""), "none");
    }

    #[test]
    fn time_is_utc_iso() {
        let t = now();
        assert_eq!(t.len(), 24, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z'), "{t}");
    }

    #[test]
    fn upstream_parses() {
        assert!(parse_upstream("127.0.0.1:9092").is_ok());
        assert!(parse_upstream("[::1]:9092").is_ok());
        assert!(parse_upstream("nohost").is_err());
        assert!(parse_upstream("h:99999").is_err());
    }
}
