//! An async example broker on `kwire::conn` and tokio, and real clients talking to it.
//!
//! The broker (below, about 200 lines) reads requests with `conn::tokio::ServerCodec`,
//! answers ApiVersions, Metadata, ListGroups and DescribeCluster from a small fixed
//! catalogue, and answers an ApiVersions request of a version it does not serve as Apache
//! Kafka does (error 35 in a v0 body). kafka-python and confluent-kafka (librdkafka) run
//! against it on a loopback port, once with every version kwire reads and once with
//! ApiVersions limited to v2, so that both clients go through the ApiVersions fallback; what
//! they report is compared with the catalogue, and the broker's log with what each client
//! must have sent.
//!
//! The clients live in `target/interop/` (`tests/interop/setup.sh`, run first when
//! `target/interop/ready` is missing). A client that is
//! missing, fails or hangs fails its test.

mod common;

use common::process::run_bounded;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::Duration;

use bytes::BytesMut;
use kwire::ApiKey;
use kwire::conn::tokio::{ApiVersionsUnsupported, CodecError, ServerCodec};
use kwire::conn::{Received, ServerRequest};
use kwire::messages::RequestBodyView;
use kwire::messages::api_versions::{ApiVersion, ApiVersionsResponse};
use kwire::messages::describe_cluster::{DescribeClusterBroker, DescribeClusterResponse};
use kwire::messages::list_groups::{ListGroupsResponse, ListedGroup};
use kwire::messages::metadata::{
    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kwire::{ErrorCode, List, Str, Uuid, Versions};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::{Decoder, Encoder};

// ------------------------------------------------------------------ the broker

const CLUSTER_ID: &str = "kwire-tokio-test";
const NODE_ID: i32 = 1;
/// Topics and their partition counts.
const TOPICS: [(&str, i32); 2] = [("orders", 3), ("payments", 1)];
/// Groups: id, protocol type, state.
const GROUPS: [(&str, &str, &str); 2] = [("billing", "consumer", "Stable"), ("audit", "consumer", "Empty")];
/// What the broker serves, at every version kwire reads.
const SERVED: [ApiKey; 4] =
    [ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::ListGroups, ApiKey::DescribeCluster];

/// What the broker saw: every request answered as (API, version), and the ApiVersions
/// versions it refused.
#[derive(Default, Debug)]
struct Log {
    answered: Vec<(ApiKey, i16)>,
    refused_api_versions: Vec<i16>,
    closed: Vec<String>,
}

struct Broker {
    host: String,
    port: i32,
    api_versions: Versions,
    log: Mutex<Log>,
}

impl Broker {
    fn versions(&self, key: ApiKey) -> Versions {
        if key == ApiKey::ApiVersions { self.api_versions } else { key.request_versions() }
    }
}

/// Stable topic ids, derived from the names.
fn topic_id(name: &str) -> Uuid {
    let mut b = [0u8; 16];
    for (i, c) in name.bytes().enumerate() {
        b[i % 16] ^= c.wrapping_mul(31).wrapping_add(i as u8);
    }
    b[0] |= 1;
    Uuid(b)
}

/// Serves one connection until the client closes it or breaks the protocol.
async fn connection(mut socket: TcpStream, broker: Arc<Broker>) -> Result<(), String> {
    let mut codec = ServerCodec::new();
    codec.set_api_versions_max(broker.api_versions.max);
    let mut input = BytesMut::with_capacity(16 * 1024);
    let mut output = BytesMut::new();
    loop {
        // Answer every whole request buffered, in order, then write the answers at once.
        while let Some(frame) = codec.decode(&mut input).map_err(|e| e.to_string())? {
            match frame.received() {
                Ok(Received::Request(request)) => answer(&request, &broker, &mut codec, &mut output)?,
                Ok(Received::ApiVersionsUnsupported { header, reply_to }) => {
                    broker.log.lock().unwrap().refused_api_versions.push(header.api_version);
                    let item = ApiVersionsUnsupported { reply_to, supported: broker.api_versions };
                    codec.encode(item, &mut output).map_err(|e| e.to_string())?;
                }
                Ok(_) => return Err("an unknown kind of request".into()),
                // Kafka closes the connection on an unknown API, a version it does not
                // serve or a malformed request.
                Err(e) => return Err(e.to_string()),
            }
        }
        if !output.is_empty() {
            match socket.write_all(&output).await {
                Err(e) if gone(&e) => return Ok(()),
                r => r.map_err(|e| e.to_string())?,
            }
            output.clear();
        }
        match socket.read_buf(&mut input).await {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if gone(&e) => return Ok(()),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Whether an I/O error says that the client went away: confluent-kafka (librdkafka) may
/// reset a connection instead of closing it when it is done with it. That is the client's
/// choice, not a protocol error of the broker's.
fn gone(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe)
}

fn answer(
    request: &ServerRequest<'_>,
    broker: &Broker,
    codec: &mut ServerCodec,
    out: &mut BytesMut,
) -> Result<(), String> {
    let reply = request.reply_to();
    let (key, version) = (reply.api_key, reply.api_version);
    if !SERVED.contains(&key) || !broker.versions(key).contains(version) {
        return Err(format!("{} v{version} is not served", key.name()));
    }
    broker.log.lock().unwrap().answered.push((key, version));
    let done = |r: Result<(), CodecError>| {
        r.map_err(|e| format!("cannot encode the {} v{version} answer: {e}", key.name()))
    };
    match request.body {
        RequestBodyView::ApiVersions(_) => {
            let keys: Vec<ApiVersion<'_>> = SERVED
                .iter()
                .map(|&k| ApiVersion {
                    api_key: k.to_i16(),
                    min_version: broker.versions(k).min,
                    max_version: broker.versions(k).max,
                    ..Default::default()
                })
                .collect();
            let body = ApiVersionsResponse { api_keys: List::Borrowed(&keys), ..Default::default() };
            done(codec.encode((reply, &body), out))
        }
        RequestBodyView::Metadata(req) => {
            // Null topics: all; an empty list is all only in v0.
            let wanted: Option<Vec<Option<&str>>> = match req.topics() {
                None => None,
                Some(t) if t.is_empty() && version == 0 => None,
                Some(t) => Some(t.iter().map(|t| t.name()).collect()),
            };
            let names: Vec<Option<&str>> = match &wanted {
                None => TOPICS.iter().map(|(n, _)| Some(*n)).collect(),
                Some(w) => w.clone(),
            };
            let partitions: Vec<Vec<MetadataResponsePartition<'_>>> = names
                .iter()
                .map(|name| {
                    let count = TOPICS.iter().find(|(n, _)| Some(*n) == *name).map_or(0, |t| t.1);
                    (0..count)
                        .map(|p| MetadataResponsePartition {
                            partition_index: p,
                            leader_id: NODE_ID,
                            leader_epoch: 0,
                            replica_nodes: vec![NODE_ID].into(),
                            isr_nodes: vec![NODE_ID].into(),
                            ..Default::default()
                        })
                        .collect()
                })
                .collect();
            let topics: Vec<MetadataResponseTopic<'_>> = names
                .iter()
                .zip(&partitions)
                .map(|(name, partitions)| {
                    let known = TOPICS.iter().any(|(n, _)| Some(*n) == *name);
                    MetadataResponseTopic {
                        error_code: if known { 0 } else { ErrorCode::UnknownTopicOrPartition.to_i16() },
                        name: name.map(Str::Borrowed),
                        topic_id: if known && version >= 10 {
                            topic_id(name.unwrap_or(""))
                        } else {
                            Uuid::ZERO
                        },
                        partitions: List::Borrowed(partitions),
                        ..Default::default()
                    }
                })
                .collect();
            let brokers = [MetadataResponseBroker {
                node_id: NODE_ID,
                host: Str::Borrowed(&broker.host),
                port: broker.port,
                ..Default::default()
            }];
            let body = MetadataResponse {
                brokers: List::Borrowed(&brokers),
                cluster_id: Some(Str::Borrowed(CLUSTER_ID)),
                controller_id: NODE_ID,
                topics: List::Borrowed(&topics),
                ..Default::default()
            };
            done(codec.encode((reply, &body), out))
        }
        RequestBodyView::ListGroups(req) => {
            let states: Vec<&str> = req.states_filter().iter().collect();
            let groups: Vec<ListedGroup<'_>> = GROUPS
                .iter()
                .filter(|g| states.is_empty() || states.iter().any(|s| s.eq_ignore_ascii_case(g.2)))
                .map(|&(id, protocol_type, state)| ListedGroup {
                    group_id: Str::Borrowed(id),
                    protocol_type: Str::Borrowed(protocol_type),
                    group_state: Str::Borrowed(state),
                    group_type: Str::Borrowed("classic"),
                    ..Default::default()
                })
                .collect();
            let body = ListGroupsResponse { groups: List::Borrowed(&groups), ..Default::default() };
            done(codec.encode((reply, &body), out))
        }
        RequestBodyView::DescribeCluster(_) => {
            let brokers = [DescribeClusterBroker {
                broker_id: NODE_ID,
                host: Str::Borrowed(&broker.host),
                port: broker.port,
                ..Default::default()
            }];
            let body = DescribeClusterResponse {
                cluster_id: Str::Borrowed(CLUSTER_ID),
                controller_id: NODE_ID,
                brokers: List::Borrowed(&brokers),
                ..Default::default()
            };
            done(codec.encode((reply, &body), out))
        }
        _ => Err(format!("{} is not served", key.name())),
    }
}

/// The broker on its own runtime thread; stops when dropped (the runtime is shut down).
struct Running {
    broker: Arc<Broker>,
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Running {
    fn start(api_versions: Versions) -> Running {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let broker = Arc::new(Broker {
            host: addr.ip().to_string(),
            port: i32::from(addr.port()),
            api_versions,
            log: Mutex::new(Log::default()),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let b = broker.clone();
        let thread = thread::spawn(move || {
            runtime.block_on(async move {
                let accept = async {
                    loop {
                        let Ok((socket, _)) = listener.accept().await else { continue };
                        let _ = socket.set_nodelay(true);
                        let b = b.clone();
                        tokio::spawn(async move {
                            if let Err(why) = connection(socket, b.clone()).await {
                                b.log.lock().unwrap().closed.push(why);
                            }
                        });
                    }
                };
                tokio::select! {
                    () = accept => {}
                    _ = stopped => {}
                }
            });
            runtime.shutdown_timeout(Duration::from_secs(1));
        });
        Running { broker, addr, stop: Some(stop), thread: Some(thread) }
    }

    fn log(&self) -> String {
        format!("{:?}", self.broker.log.lock().unwrap())
    }

    fn answered(&self) -> BTreeSet<(ApiKey, i16)> {
        self.broker.log.lock().unwrap().answered.iter().copied().collect()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

// ------------------------------------------------------------------ the clients

const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);
const SETUP_TIMEOUT: Duration = Duration::from_secs(1200);

const KAFKA_PYTHON: &str = r#"
import json, sys
from kafka import KafkaAdminClient
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=10000)
c = admin.describe_cluster()
out = {
    "cluster_id": c.get("cluster_id"),
    "controller_id": c.get("controller_id"),
    "brokers": [[b["broker_id"], b["host"], b["port"]] for b in c["brokers"]],
    "topics": sorted(admin.list_topics()),
    "partitions": {
        t["name"]: sorted([p["partition_index"], p["leader_id"]] for p in t["partitions"])
        for t in admin.describe_topics(["orders", "payments"])
    },
    "groups": sorted([g["group_id"], g.get("protocol_type")] for g in admin.list_groups()),
}
admin.close()
print(json.dumps(out, sort_keys=True))
"#;

const CONFLUENT: &str = r#"
import json, sys
from confluent_kafka.admin import AdminClient
admin = AdminClient({"bootstrap.servers": sys.argv[1]})
md = admin.list_topics(timeout=10)
c = admin.describe_cluster(request_timeout=10).result(timeout=10)
groups = admin.list_consumer_groups(request_timeout=10).result(timeout=10)
stable = admin.list_consumer_groups(request_timeout=10, states={__import__("confluent_kafka").ConsumerGroupState.STABLE}).result(timeout=10)
out = {
    "cluster_id": md.cluster_id,
    "controller_id": md.controller_id,
    "brokers": sorted([b.id, b.host, b.port] for b in md.brokers.values()),
    "topics": sorted(md.topics),
    "partitions": {n: sorted([p.id, p.leader] for p in t.partitions.values()) for n, t in md.topics.items()},
    "describe_cluster": [c.cluster_id, c.controller.id, sorted([n.id, n.host, n.port] for n in c.nodes)],
    "groups": sorted([g.group_id, g.state.name] for g in groups.valid),
    "stable_groups": sorted(g.group_id for g in stable.valid),
}
print(json.dumps(out, sort_keys=True))
"#;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn interop_dir() -> PathBuf {
    std::env::var_os("KWIRE_INTEROP_DIR").map_or_else(|| root().join("target/interop"), PathBuf::from)
}

/// The Python of the interop venv, after running `tests/interop/setup.sh` if needed.
fn python() -> &'static Path {
    static READY: OnceLock<PathBuf> = OnceLock::new();
    READY.get_or_init(|| {
        let dir = interop_dir();
        if !dir.join("ready").exists() {
            eprintln!("{} is not ready: running tests/interop/setup.sh", dir.display());
            let (ok, out, err) =
                run_bounded(Command::new("bash").arg(root().join("tests/interop/setup.sh")), SETUP_TIMEOUT);
            assert!(
                ok == Some(true) && dir.join("ready").exists(),
                "the real clients are missing and tests/interop/setup.sh failed ({ok:?}):\n{out}\n{err}"
            );
        }
        let python = dir.join("venv/bin/python");
        assert!(python.exists(), "{} is missing: run tests/interop/setup.sh", python.display());
        python
    })
}

fn run_client(name: &str, script: &str, broker: &Running) -> Value {
    let mut cmd = Command::new(python());
    cmd.arg("-c").arg(script).arg(broker.addr.to_string()).env("PYTHONDONTWRITEBYTECODE", "1");
    let (ok, stdout, stderr) = run_bounded(&mut cmd, CLIENT_TIMEOUT);
    let context = || format!("--- stdout\n{stdout}\n--- stderr\n{stderr}\n--- broker\n{}", broker.log());
    match ok {
        None => panic!("{name} did not finish within {CLIENT_TIMEOUT:?}\n{}", context()),
        Some(false) => panic!("{name} failed\n{}", context()),
        Some(true) => {}
    }
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{name} printed no JSON: {e}\n{}", context()))
}

fn expected_partitions() -> Value {
    json!({"orders": [[0, 1], [1, 1], [2, 1]], "payments": [[0, 1]]})
}

/// The ApiVersions exchange the broker saw: with ApiVersions limited below what the
/// client asks first, one refusal and then answers at the limit or below.
fn check_api_versions(broker: &Running, limited: bool, client: &str) {
    let log = broker.broker.log.lock().unwrap();
    let asked: Vec<i16> =
        log.answered.iter().filter(|(k, _)| *k == ApiKey::ApiVersions).map(|&(_, v)| v).collect();
    assert!(!asked.is_empty(), "{client}: no ApiVersions answered: {log:?}");
    if limited {
        assert!(!log.refused_api_versions.is_empty(), "{client}: never refused: {log:?}");
        assert!(log.refused_api_versions.iter().all(|&v| v > 2), "{log:?}");
        assert!(asked.iter().all(|&v| v <= 2), "{client}: answered above the limit: {log:?}");
    } else {
        assert!(log.refused_api_versions.is_empty(), "{client}: refused with every version served: {log:?}");
    }
    assert!(log.closed.is_empty(), "{client}: connections closed for a protocol error: {log:?}");
}

fn kafka_python(api_versions: Versions) {
    let broker = Running::start(api_versions);
    let report = run_client("kafka-python", KAFKA_PYTHON, &broker);
    let host = broker.addr.ip().to_string();
    let port = broker.addr.port();
    assert_eq!(report["cluster_id"], json!(CLUSTER_ID), "{report}");
    assert_eq!(report["controller_id"], json!(NODE_ID), "{report}");
    assert_eq!(report["brokers"], json!([[NODE_ID, host, port]]), "{report}");
    assert_eq!(report["topics"], json!(["orders", "payments"]), "{report}");
    assert_eq!(report["partitions"], expected_partitions(), "{report}");
    assert_eq!(report["groups"], json!([["audit", "consumer"], ["billing", "consumer"]]), "{report}");
    let answered = broker.answered();
    for key in [ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::ListGroups] {
        assert!(
            answered.iter().any(|(k, _)| *k == key),
            "kafka-python sent no {}: {}",
            key.name(),
            broker.log()
        );
    }
    check_api_versions(
        &broker,
        api_versions.max < ApiKey::ApiVersions.request_versions().max,
        "kafka-python",
    );
    eprintln!("kafka-python: answered {answered:?}");
}

fn confluent(api_versions: Versions) {
    let broker = Running::start(api_versions);
    let report = run_client("confluent-kafka", CONFLUENT, &broker);
    let host = broker.addr.ip().to_string();
    let port = broker.addr.port();
    assert_eq!(report["cluster_id"], json!(CLUSTER_ID), "{report}");
    assert_eq!(report["controller_id"], json!(NODE_ID), "{report}");
    assert_eq!(report["brokers"], json!([[NODE_ID, host, port]]), "{report}");
    assert_eq!(report["topics"], json!(["orders", "payments"]), "{report}");
    assert_eq!(report["partitions"], expected_partitions(), "{report}");
    assert_eq!(report["describe_cluster"], json!([CLUSTER_ID, NODE_ID, [[NODE_ID, host, port]]]), "{report}");
    assert_eq!(report["groups"], json!([["audit", "EMPTY"], ["billing", "STABLE"]]), "{report}");
    assert_eq!(report["stable_groups"], json!(["billing"]), "{report}");
    let answered = broker.answered();
    // librdkafka's describe_cluster reads Metadata; DescribeCluster is served but not needed.
    for key in [ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::ListGroups] {
        assert!(
            answered.iter().any(|(k, _)| *k == key),
            "librdkafka sent no {}: {}",
            key.name(),
            broker.log()
        );
    }
    check_api_versions(
        &broker,
        api_versions.max < ApiKey::ApiVersions.request_versions().max,
        "confluent-kafka",
    );
    eprintln!("confluent-kafka: answered {answered:?}");
}

#[test]
fn kafka_python_against_the_tokio_broker() {
    kafka_python(ApiKey::ApiVersions.request_versions());
}

#[test]
fn kafka_python_falls_back_from_an_unsupported_api_versions_version() {
    kafka_python(Versions::new(0, 2));
}

#[test]
fn confluent_against_the_tokio_broker() {
    confluent(ApiKey::ApiVersions.request_versions());
}

#[test]
fn confluent_falls_back_from_an_unsupported_api_versions_version() {
    confluent(Versions::new(0, 2));
}

// ------------------------------------------------------------------ the codecs, in memory

#[test]
fn frame_codec_limits_errors_and_reservation() {
    use kwire::conn::tokio::FrameCodec;
    use kwire::frame::FrameError;
    use kwire::{DecodeError, DecodeErrorKind};
    let mut codec = FrameCodec::new(1000);
    let mut src = BytesMut::new();
    src.extend_from_slice(&[0, 0, 0, 2, 7, 8, 0, 0]);
    assert_eq!(codec.decode(&mut src).unwrap().as_deref(), Some(&[7u8, 8][..]));
    assert_eq!(codec.decode(&mut src).unwrap(), None);
    // A claim of 1 MiB with a few bytes there: room for what arrives next (at most the
    // bytes buffered or 16 KiB), never the claim.
    let mut big = FrameCodec::new(1 << 20);
    let mut src = BytesMut::new();
    src.extend_from_slice(&(1i32 << 20).to_be_bytes());
    src.extend_from_slice(&[0; 100]);
    assert_eq!(big.decode(&mut src).unwrap(), None);
    assert!(src.capacity() <= 32 * 1024, "reserved {} for a 1 MiB claim", src.capacity());
    let mut over = BytesMut::from(&1001i32.to_be_bytes()[..]);
    let want = FrameError::Decode(DecodeError::new(
        DecodeErrorKind::FrameTooLarge { size: 1001, max: 1000 },
        0,
        "Frame.size",
    ));
    let mut codec = FrameCodec::new(1000);
    assert!(matches!(codec.decode(&mut over), Err(CodecError::Frame(e)) if e == want));
    // The error sticks, even with good bytes after it.
    let mut good = BytesMut::from(&[0u8, 0, 0, 1, 5][..]);
    assert!(matches!(codec.decode(&mut good), Err(CodecError::Frame(e)) if e == want));
    assert_eq!(codec.error(), Some(want));
    let mut dst = BytesMut::new();
    codec.encode(&[1u8, 2, 3][..], &mut dst).unwrap();
    assert_eq!(&dst[..], &[0, 0, 0, 3, 1, 2, 3]);
}

#[test]
fn client_codec_pairs_responses_and_skips_acks_zero() {
    use kwire::conn::ConnError;
    use kwire::conn::tokio::{ClientCodec, ClientRequest};
    use kwire::messages::api_versions::ApiVersionsRequest;
    use kwire::messages::produce::ProduceRequest;
    let mut client: ClientCodec<&str> = ClientCodec::new(Some("c"));
    let mut server = ServerCodec::new();
    let (mut to_server, mut to_client) = (BytesMut::new(), BytesMut::new());
    let produce = ProduceRequest { acks: 0, ..Default::default() };
    client.encode(ClientRequest { body: &produce, version: 9, payload: "produce" }, &mut to_server).unwrap();
    client
        .encode(
            ClientRequest { body: &ApiVersionsRequest::default(), version: 3, payload: "versions" },
            &mut to_server,
        )
        .unwrap();
    assert_eq!(client.in_flight().iter().map(|p| p.correlation_id).collect::<Vec<_>>(), [1]);
    let mut ids = Vec::new();
    while let Some(frame) = server.decode(&mut to_server).unwrap() {
        let Received::Request(r) = frame.received().unwrap() else { panic!() };
        ids.push(r.header.correlation_id());
        if r.reply_to().expects_response {
            server.encode((r.reply_to(), &ApiVersionsResponse::default()), &mut to_client).unwrap();
        }
    }
    assert_eq!(ids, [0, 1]);
    // An answer nobody asked for, after the real one.
    let stray = kwire::conn::ReplyTo { correlation_id: 55, ..ids_reply(1) };
    server.encode((stray, &ApiVersionsResponse::default()), &mut to_client).unwrap();
    let answer = client.decode(&mut to_client).unwrap().unwrap();
    assert_eq!((answer.request.correlation_id, answer.request.payload), (1, "versions"));
    assert_eq!(answer.response().unwrap().1, 3);
    assert!(matches!(
        client.decode(&mut to_client),
        Err(CodecError::Conn(ConnError::UnknownCorrelationId { correlation_id: 55 }))
    ));
}

fn ids_reply(correlation_id: i32) -> kwire::conn::ReplyTo {
    kwire::conn::ReplyTo {
        api_key: ApiKey::ApiVersions,
        api_version: 3,
        correlation_id,
        expects_response: true,
    }
}
