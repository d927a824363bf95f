//! `kwire proxy`: command-line flags over `kwire::proxy`, the library's proxy runtime, with
//! its `TrafficLog` (docs/proxy.md). `tls.rs` is the TLS flags, `limits.rs` the descriptor
//! limit, `metrics.rs` the `--metrics` endpoint.

mod limits;
mod tls;

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::sync_channel;
use std::time::Duration;

use kwire::conn::metrics::Metrics;
use kwire::filter::{DenyApis, FilterChain, Rule, ValidateRecords};
use kwire::proxy::{AuditLog, LogFormat, Proxy, Recorder, Tenants, TrafficLog};

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
    /// Encrypt the records of the topics PATTERN names (repeatable):
    /// `PATTERN=KEK[,headers][,on-failure=error|pass]`, KEK the name of a key in the
    /// `--kms` service, `headers` to encrypt headers too, `on-failure` what a consumer gets
    /// of a record the proxy cannot decrypt (an error for its partition, or the record as
    /// stored, marked). Values leave encrypted and come back decrypted (docs/proxy.md,
    /// "Record encryption").
    #[arg(long = "encrypt", value_name = "RULE")]
    encrypt: Vec<String>,
    /// The key management service that holds the KEKs of `--encrypt`: `aws` (AWS KMS, or a
    /// service that speaks its API: region, credentials, endpoint and CA bundle from the
    /// AWS environment variables, `AWS_REGION`, `AWS_ACCESS_KEY_ID`, ...; `aws=URL` sets
    /// the endpoint; KEKs are key ids, ARNs or `alias/NAME`), or `memory` (KEKs made at
    /// start and kept in this process only: records encrypted with them cannot be read
    /// after it stops; for demos and tests).
    #[arg(long, value_name = "KMS")]
    kms: Option<String>,
    /// A tenant of a virtual cluster (repeatable): `principal:USER=PREFIX`,
    /// `sni:NAME=PREFIX`, or `default=PREFIX` for connections no other rule names. The tenant's topic names, group ids and transactional ids carry
    /// PREFIX on the broker and not in its clients' eyes, and it sees no other tenant's;
    /// a connection that is no tenant gets no topics or groups (docs/proxy.md, "Tenants").
    #[arg(long = "tenant", value_name = "WHO=PREFIX")]
    tenant: Vec<String>,
    /// Tenants from FILE: one `--tenant` rule a line (blank lines and `#` comments skipped).
    #[arg(long = "tenants", value_name = "FILE")]
    tenants: Option<PathBuf>,
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
            kwire::ApiKey::from_name(name.trim())
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
    let encryption = encryption(&args.encrypt, args.kms.as_deref())?;
    let mut tenants = match &args.tenants {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| Tenants::from_lines(&text).map_err(|e| e.to_string()))
            .map_err(|e| format!("--tenants {}: {e}", path.display()))?,
        None => Tenants::new(),
    };
    for rule in &args.tenant {
        tenants.rule(rule).map_err(|e| format!("--tenant {rule}: {e}"))?;
    }
    let tenants = Arc::new(tenants);
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
    let metrics = Arc::new(Metrics::new(kwire::proxy::METRICS_NAMESPACE));
    let format = match args.format {
        Format::Text => LogFormat::Text,
        Format::Json => LogFormat::Json,
    };
    let mut log = TrafficLog::held(format, std::io::stdout())
        .quiet(args.quiet)
        .verify(args.verify)
        .show_secrets(args.show_secrets)
        .metrics(metrics.clone());
    if let Some(dir) = args.record {
        log = log.record(Recorder::new(dir, args.record_limit).show_secrets(args.show_secrets));
    }
    if let Some(path) = &args.audit {
        log = log.audit(AuditLog::to_file(path).map_err(|e| format!("--audit {}: {e}", path.display()))?);
    }
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
                chain.push(
                    ValidateRecords::new(rules.clone())
                        .decompression_limit(decompression_limit)
                        .topic_names(conn.topic_names().clone()),
                );
            }
            chain
        });
    }
    if let Some(e) = encryption {
        builder = builder.encrypt(e);
    }
    let builder = args.tls.apply(builder.hooks(log))?;
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
    let log = proxy.hooks();
    log.release();
    for w in tls_warnings {
        log.note(&w);
    }
    log.note(&format!(
        "descriptor limit {} (soft {} at start, hard {}): serving at most {max_connections} connections{}",
        nofile.now,
        nofile.before,
        nofile.hard,
        if args.max_connections.is_some() { " (--max-connections)" } else { "" }
    ));
    if let Some(listener) = metrics_listener {
        let at = listener.local_addr().map_err(|e| e.to_string())?;
        log.note(&format!("metrics on http://{at}/metrics"));
        proxy.serve_metrics(listener);
    }
    let _ = stop_rx.recv();
    // Give the log's thread a moment to write what it has.
    std::thread::sleep(Duration::from_millis(100));
    eprintln!("kwire proxy: {}", proxy.hooks().summary());
    runtime.shutdown_background();
    Ok(())
}

/// The `--encrypt` rules with the `--kms` service they name.
fn encryption(
    rules: &[String],
    kms: Option<&str>,
) -> Result<Option<kwire::proxy::encrypt::Encryption>, String> {
    use kwire::proxy::encrypt::{EncryptRule, Encryption, Kms, MemoryKms};
    let rules = rules
        .iter()
        .map(|r| r.parse::<EncryptRule>().map_err(|e| format!("--encrypt {r}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(kms) = kms else {
        return match rules.is_empty() {
            true => Ok(None),
            false => Err("--encrypt needs --kms (aws or memory)".into()),
        };
    };
    if rules.is_empty() {
        return Err("--kms without --encrypt".into());
    }
    // `NAME` or `NAME=SETTINGS`: each service says what its settings are.
    let (name, settings) = kms.split_once('=').unwrap_or((kms, ""));
    let service: Arc<dyn Kms> = match name {
        "memory" => {
            let memory = MemoryKms::new();
            for rule in &rules {
                memory.create_key(rule.kek());
            }
            eprintln!(
                "kwire proxy: --kms memory: the KEKs live in this process only; what it encrypts cannot be \
                 read once it stops"
            );
            Arc::new(memory)
        }
        "aws" => {
            use kwire::proxy::encrypt::{AwsKms, AwsKmsOptions};
            let mut options = AwsKmsOptions::from_env().map_err(|e| format!("--kms aws: {e}"))?;
            if !settings.is_empty() {
                options.endpoint = Some(settings.to_string());
            }
            Arc::new(AwsKms::new(options).map_err(|e| format!("--kms aws: {e}"))?)
        }
        other => return Err(format!("--kms {other}: no such key management service (aws, memory)")),
    };
    Ok(Some(rules.into_iter().fold(Encryption::new(service), Encryption::rule)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_parses() {
        assert!(parse_upstream("127.0.0.1:9092").is_ok());
        assert!(parse_upstream("[::1]:9092").is_ok());
        assert!(parse_upstream("nohost").is_err());
        assert!(parse_upstream("h:99999").is_err());
    }
}
