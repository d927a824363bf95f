//! `kwire serve`: runs `kwire::broker`, the library's in-memory broker, until
//! Ctrl-C. Everything it serves is the library's; this is flags, logging and the signal.

use std::io::Write;
use std::net::SocketAddr;

use kwire::ApiKey;
use kwire::broker::{Acl, AclField, Action, Broker, Config, Hook, ScramMechanism, ScramUser, TlsConfig};

/// Run an in-memory Kafka broker (one node or a cluster) for tests and demos (records are kept in
/// memory only, and lost when it stops).
#[derive(clap::Args)]
#[command(after_help = "A test double, not a broker to keep data in: one node (or --nodes N) leads the
partitions, logs live in memory and only grow; transactions are served; TLS and SASL
(PLAIN, SCRAM) are offered with --tls-cert/--tls-key, --users and --scram-users, and ACLs
loaded with --acls are stored, and enforced with --authorizer.
Clients produce (acks 0, 1, all; idempotent), fetch, create and delete topics and consume
in classic and KIP-848 (group.protocol=consumer) consumer groups. Metadata auto-creates the topics it names, as Kafka does.

Examples:
  kwire serve                                  # 127.0.0.1:9092
  kwire serve --listen 127.0.0.1:0 -v          # a free port (the first line says which)
  kwire serve --topic orders:3 --topic audit   # topics ready before the first client
  kwire serve --nodes 3 --topic orders:6       # three nodes, leaders spread over them
  kwire serve --max-version Fetch=11           # make clients fall back to older versions
  kwire serve --fail InitProducerId=COORDINATOR_LOAD_IN_PROGRESS:2   # fail the first two
  kwire serve --delay Fetch=500 --drop Produce:1                     # slow fetches, drop a produce
  kwire serve --throttle Produce=250                                 # tell producers to slow down
  kwire serve --tls-cert chain.pem --tls-key key.pem --scram-users scram.toml   # SASL_SSL

A --scram-users file:
  [[users]]
  name = \"alice\"
  password = \"alice-secret\"
  mechanism = \"SCRAM-SHA-512\"   # or SCRAM-SHA-256 (the default)
  iterations = 8192             # 4096 (the default) to 16384

An --acls file (names as kafka-acls spells them, any case):
  [[acls]]
  resource_type = \"topic\"       # topic, group, cluster, transactional_id, delegation_token, user
  resource_name = \"orders\"
  pattern_type = \"prefixed\"     # literal (the default) or prefixed
  principal = \"User:alice\"
  host = \"*\"                    # the default
  operation = \"read\"            # all, read, write, create, delete, alter, describe, ...
  permission = \"allow\"          # allow (the default) or deny")]
pub struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:9092")]
    listen: SocketAddr,
    /// The host:port clients should connect to, advertised in Metadata (default: the
    /// address listened on).
    #[arg(long)]
    advertise: Option<String>,
    /// A topic to create at start, NAME or NAME:PARTITIONS (repeatable).
    #[arg(long = "topic", value_name = "NAME[:PARTITIONS]")]
    topics: Vec<String>,
    /// Nodes of the cluster: node 0 listens on --listen, the others on free ports of its
    /// address; leaders and coordinators are spread over them.
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// Partitions of auto-created topics (and of CreateTopics asking for the default).
    #[arg(long, default_value_t = 1)]
    partitions: i32,
    /// Do not create unknown topics named in Metadata requests.
    #[arg(long)]
    no_auto_create: bool,
    /// Serve at most this version of an API, e.g. `Fetch=11` (repeatable).
    #[arg(long = "max-version", value_name = "API=VERSION")]
    max_versions: Vec<String>,
    /// Refuse frames larger than this many bytes (checked from the size prefix).
    #[arg(long, default_value_t = 100 << 20)]
    max_frame_bytes: usize,
    /// SASL/PLAIN users, a TOML file of `[[users]]` with `name` and `password`: they may
    /// authenticate (it is offered, not required).
    #[arg(long, value_name = "FILE")]
    users: Option<String>,
    /// SASL/SCRAM users, a TOML file of `[[users]]` with `name`, `password`, and optionally
    /// `mechanism` (SCRAM-SHA-256, the default, or SCRAM-SHA-512) and `iterations` (4096 to
    /// 16384; 4096): they may authenticate (offered, not required).
    #[arg(long, value_name = "FILE")]
    scram_users: Option<String>,
    /// TLS: the certificate chain (PEM, the server's certificate first); with --tls-key the
    /// listeners speak TLS only.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<String>,
    /// TLS: the private key (PEM: PKCS#8, PKCS#1 or SEC1) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<String>,
    /// ACL bindings to start with, a TOML file of `[[acls]]` (see below): stored, described
    /// and deleted as if created by CreateAcls.
    #[arg(long, value_name = "FILE")]
    acls: Option<String>,
    /// Enforce the ACLs as Kafka's StandardAuthorizer does (principal `User:NAME` after
    /// SASL, else `User:ANONYMOUS`); without it every request is allowed.
    #[arg(long)]
    authorizer: bool,
    /// With --authorizer: principals allowed everything (repeatable), such as `User:admin`.
    #[arg(long = "super-user", value_name = "PRINCIPAL", requires = "authorizer")]
    super_users: Vec<String>,
    /// With --authorizer: a resource no ACL names is open to everyone
    /// (`allow.everyone.if.no.acl.found`).
    #[arg(long, requires = "authorizer")]
    allow_if_no_acl: bool,
    /// Fail requests of an API with an error (a name such as NOT_COORDINATOR, or a code) in
    /// the response's top-level error code: the first N, or every one (repeatable).
    #[arg(long = "fail", value_name = "API=ERROR[:N]")]
    fail: Vec<String>,
    /// Delay every request of an API by this many milliseconds (repeatable).
    #[arg(long = "delay", value_name = "API=MS")]
    delay: Vec<String>,
    /// Close the connection of a request of an API without answering: the first N, or
    /// every one (repeatable).
    #[arg(long = "drop", value_name = "API[:N]")]
    drop: Vec<String>,
    /// Answer every request of an API with this `throttle_time_ms`, as a broker enforcing a
    /// quota does (the answer is not held back; repeatable).
    #[arg(long = "throttle", value_name = "API=MS")]
    throttle: Vec<String>,
    /// Log every request, not only connections.
    #[arg(short, long)]
    verbose: bool,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Users {
    #[serde(default)]
    users: Vec<User>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct User {
    name: String,
    password: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ScramUsers {
    #[serde(default)]
    users: Vec<ScramEntry>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ScramEntry {
    name: String,
    password: String,
    mechanism: Option<String>,
    iterations: Option<u32>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Acls {
    #[serde(default)]
    acls: Vec<AclEntry>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AclEntry {
    resource_type: String,
    resource_name: String,
    pattern_type: Option<String>,
    principal: String,
    host: Option<String>,
    operation: String,
    permission: Option<String>,
}

/// The SCRAM users of a `--scram-users` file.
fn scram_users(path: &str) -> Result<Vec<ScramUser>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let file: ScramUsers = toml::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let mut out = Vec::with_capacity(file.users.len());
    for (i, u) in file.users.into_iter().enumerate() {
        let mechanism = match u.mechanism.as_deref() {
            None => ScramMechanism::Sha256,
            Some(m) => ScramMechanism::from_name(&m.to_ascii_uppercase()).ok_or(format!(
                "{path}: user {} ({}): unknown mechanism {m:?} (SCRAM-SHA-256 or SCRAM-SHA-512)",
                i + 1,
                u.name
            ))?,
        };
        let mut user = ScramUser::new(u.name, u.password, mechanism);
        if let Some(n) = u.iterations {
            user.iterations = n;
        }
        out.push(user);
    }
    Ok(out)
}

/// The code of a name in an `--acls` file.
fn acl_code(path: &str, i: usize, field: AclField, value: &str) -> Result<i8, String> {
    field.code(value).ok_or_else(|| {
        let key = match field {
            AclField::ResourceType => "resource_type",
            AclField::PatternType => "pattern_type",
            AclField::Operation => "operation",
            AclField::Permission => "permission",
        };
        let all: Vec<&str> = field.names().collect();
        format!("{path}: ACL {i}: unknown {key} {value:?} (one of {})", all.join(", "))
    })
}

/// The ACL bindings of an `--acls` file.
fn acls(path: &str) -> Result<Vec<Acl>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let file: Acls = toml::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let mut out = Vec::with_capacity(file.acls.len());
    for (i, a) in file.acls.into_iter().enumerate() {
        let i = i + 1;
        let pattern = a.pattern_type.as_deref().unwrap_or("literal");
        let permission = a.permission.as_deref().unwrap_or("allow");
        out.push(Acl {
            resource_type: acl_code(path, i, AclField::ResourceType, &a.resource_type)?,
            resource_name: a.resource_name,
            pattern_type: acl_code(path, i, AclField::PatternType, pattern)?,
            principal: a.principal,
            host: a.host.unwrap_or_else(|| "*".into()),
            operation: acl_code(path, i, AclField::Operation, &a.operation)?,
            permission_type: acl_code(path, i, AclField::Permission, permission)?,
        });
    }
    Ok(out)
}

fn parse_limit(spec: &str) -> Result<(ApiKey, i16), String> {
    let (name, version) =
        spec.split_once('=').ok_or(format!("--max-version {spec}: expected API=VERSION"))?;
    let key = api_named("max-version", spec, name)?;
    let version: i16 = version.trim().parse().map_err(|_| format!("--max-version {spec}: bad version"))?;
    if !key.request_versions().contains(version) {
        return Err(format!("--max-version {spec}: {} has versions {}", key.name(), key.request_versions()));
    }
    Ok((key, version))
}

fn api_named(flag: &str, spec: &str, name: &str) -> Result<ApiKey, String> {
    ApiKey::from_name(name.trim())
        .ok_or(format!("--{flag} {spec}: unknown API {name:?} (see `kwire versions`)"))
}

/// `NAME[:N]`: the name and the count (`None`: every one).
fn counted<'a>(flag: &str, spec: &'a str, text: &'a str) -> Result<(&'a str, Option<usize>), String> {
    match text.rsplit_once(':') {
        Some((name, n)) => {
            let n: usize = n.trim().parse().map_err(|_| format!("--{flag} {spec}: bad count {n:?}"))?;
            Ok((name, Some(n)))
        }
        None => Ok((text, None)),
    }
}

fn hook(key: ApiKey, action: Action, times: Option<usize>) -> Hook {
    match times {
        Some(n) => Hook::times(key, action, n),
        None => Hook::new(key, action),
    }
}

/// The hooks of `--fail`, `--delay` and `--drop`.
fn hooks(args: &Args) -> Result<Vec<Hook>, String> {
    let mut out = Vec::new();
    for spec in &args.fail {
        let (api, rest) = spec.split_once('=').ok_or(format!("--fail {spec}: expected API=ERROR[:N]"))?;
        let key = api_named("fail", spec, api)?;
        let (error, times) = counted("fail", spec, rest)?;
        let error = error.trim();
        let code = error
            .parse::<i16>()
            .ok()
            .map_or_else(|| kwire::ErrorCode::from_name(error), kwire::ErrorCode::from_i16);
        let code = code.ok_or(format!("--fail {spec}: unknown error {error:?}"))?;
        out.push(hook(key, Action::Fail(code), times));
    }
    for spec in &args.delay {
        let (api, ms) = spec.split_once('=').ok_or(format!("--delay {spec}: expected API=MS"))?;
        let key = api_named("delay", spec, api)?;
        let ms: u64 = ms.trim().parse().map_err(|_| format!("--delay {spec}: bad milliseconds"))?;
        out.push(Hook::new(key, Action::Delay(std::time::Duration::from_millis(ms))));
    }
    for spec in &args.drop {
        let (api, times) = counted("drop", spec, spec)?;
        out.push(hook(api_named("drop", spec, api)?, Action::Drop, times));
    }
    Ok(out)
}

fn log(line: &str) {
    eprintln!("[kwire serve] {line}");
}

pub fn run(args: Args) -> Result<(), String> {
    let mut config = Config {
        listen: args.listen,
        default_partitions: args.partitions,
        nodes: args.nodes,
        auto_create_topics: !args.no_auto_create,
        max_frame_bytes: args.max_frame_bytes,
        verbose: args.verbose,
        logger: Some(std::sync::Arc::new(log)),
        ..Config::default()
    };
    config.max_versions = args.max_versions.iter().map(|s| parse_limit(s)).collect::<Result<_, _>>()?;
    if let Some(a) = &args.advertise {
        let (h, p) = a.rsplit_once(':').ok_or(format!("--advertise {a}: expected HOST:PORT"))?;
        config.advertise =
            Some((h.to_string(), p.parse().map_err(|_| format!("--advertise {a}: bad port"))?));
    }
    if let Some(path) = &args.users {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        let users: Users = toml::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
        config.plain_users = users.users.into_iter().map(|u| (u.name, u.password)).collect();
    }
    if let Some(path) = &args.scram_users {
        config.scram_users = scram_users(path)?;
    }
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        let tls = TlsConfig::from_pem_files(cert.as_ref(), key.as_ref())
            .map_err(|e| format!("--tls-cert {cert} --tls-key {key}: {e}"))?;
        config.tls = Some(tls);
    }
    if let Some(path) = &args.acls {
        config.acls = acls(path)?;
    }
    if args.authorizer {
        config.authorizer = Some(kwire::broker::Authorizer {
            super_users: args.super_users.clone(),
            allow_everyone_if_no_acl_found: args.allow_if_no_acl,
        });
    }
    let hooks = hooks(&args)?;
    let broker = Broker::start(config).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidInput => e.to_string(),
        _ => format!("cannot listen on {}: {e}", args.listen),
    })?;
    for h in hooks {
        broker.add_hook(h);
    }
    for spec in &args.throttle {
        let (api, ms) = spec.split_once('=').ok_or(format!("--throttle {spec}: expected API=MS"))?;
        let key = api_named("throttle", spec, api)?;
        let ms: u64 = ms.trim().parse().map_err(|_| format!("--throttle {spec}: bad milliseconds"))?;
        broker.throttle(key, std::time::Duration::from_millis(ms));
    }
    for spec in &args.topics {
        let (name, n) = match spec.split_once(':') {
            Some((name, n)) => (name, n.parse().map_err(|_| format!("--topic {spec}: bad partition count"))?),
            None => (spec.as_str(), args.partitions),
        };
        if !broker.create_topic(name, n) {
            return Err(format!(
                "--topic {spec}: cannot create it (a bad name, a bad count, or given twice)"
            ));
        }
    }
    let (stop_tx, stop_rx) = std::sync::mpsc::channel();
    ctrlc::set_handler(move || {
        let _ = stop_tx.send(());
    })
    .map_err(|e| e.to_string())?;
    let (host, port) = broker.advertised();
    // The first line says where to connect; tests read it.
    println!("kwire serve: listening on {}, advertising {host}:{port}", broker.addr());
    let _ = std::io::stdout().flush();
    for id in broker.node_ids().into_iter().skip(1) {
        log(&format!(
            "node {id} listening on {}",
            broker.node_addr(id).map_or("-".into(), |a| a.to_string())
        ));
    }
    for key in ApiKey::ALL {
        if let Some(v) = broker.versions(*key) {
            log(&format!("serving {} versions {v}", key.name()));
        }
    }
    let _ = stop_rx.recv();
    log("shutting down");
    drop(broker);
    log("stopped");
    Ok(())
}
