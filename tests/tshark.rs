//! Wireshark's Kafka dissector reads what kwire encodes: requests and responses of
//! ApiVersions, ListGroups, ListOffsets and Metadata, at every version both kwire and
//! Debian's tshark 4.0 know, go into a pcap file (written here: Ethernet, IPv4 and TCP
//! headers around the frames, one TCP connection to port 9092, each frame split over two
//! segments so that tshark has to reassemble it), and tshark must dissect every frame
//! without a malformed-packet or error note and show the values that were encoded.
//!
//! tshark comes from `tests/interop/setup.sh` (Debian's package); the test runs the script
//! when tshark is missing. See docs/interop.md.
#![cfg(feature = "cli")]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use kwire::dispatch;
use kwire::messages::api_versions::{ApiVersion, ApiVersionsRequest, ApiVersionsResponse};
use kwire::messages::list_groups::{ListGroupsRequest, ListGroupsResponse, ListedGroup};
use kwire::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsPartitionResponse, ListOffsetsRequest, ListOffsetsResponse,
    ListOffsetsTopic, ListOffsetsTopicResponse,
};
use kwire::messages::metadata::{
    MetadataRequest, MetadataRequestTopic, MetadataResponse, MetadataResponseBroker,
    MetadataResponsePartition, MetadataResponseTopic,
};
use kwire::{AnyBody, List, Str};

const TSHARK_TIMEOUT: Duration = Duration::from_secs(60);
const SETUP_TIMEOUT: Duration = Duration::from_secs(1200);
const T0: i64 = 1_700_000_000_000;

// ---------------------------------------------------------------------------------------
// A pcap file
// ---------------------------------------------------------------------------------------

const CLIENT: ([u8; 6], [u8; 4], u16) = ([0x02, 0, 0, 0, 0, 1], [10, 0, 0, 1], 40_001);
const BROKER: ([u8; 6], [u8; 4], u16) = ([0x02, 0, 0, 0, 0, 2], [10, 0, 0, 2], 9092);
const SYN: u8 = 0x02;
const PSH_ACK: u8 = 0x18;
const ACK: u8 = 0x10;

/// One TCP connection between a client and a broker on port 9092, in the classic pcap
/// format (microsecond timestamps, Ethernet link type).
struct Pcap {
    bytes: Vec<u8>,
    /// The next sequence number of the client and of the broker.
    seq: [u32; 2],
    packets: u32,
}

fn checksum(chunks: &[&[u8]]) -> u16 {
    let mut sum = 0u32;
    for chunk in chunks {
        for pair in chunk.chunks(2) {
            sum += u32::from(u16::from_be_bytes([pair[0], pair.get(1).copied().unwrap_or(0)]));
        }
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

impl Pcap {
    fn new() -> Pcap {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes()); // magic: microseconds
        bytes.extend_from_slice(&2u16.to_le_bytes()); // version 2.4
        bytes.extend_from_slice(&4u16.to_le_bytes());
        bytes.extend_from_slice(&0i32.to_le_bytes()); // UTC offset
        bytes.extend_from_slice(&0u32.to_le_bytes()); // timestamp accuracy
        bytes.extend_from_slice(&65_535u32.to_le_bytes()); // snap length
        bytes.extend_from_slice(&1u32.to_le_bytes()); // LINKTYPE_ETHERNET
        let mut pcap = Pcap { bytes, seq: [1_000, 500_000], packets: 0 };
        // The three-way handshake.
        pcap.packet(0, SYN, &[]);
        pcap.seq[0] += 1;
        pcap.packet(1, SYN | ACK, &[]);
        pcap.seq[1] += 1;
        pcap.packet(0, ACK, &[]);
        pcap
    }

    /// One TCP segment from the client (`from` 0) or the broker (1).
    fn packet(&mut self, from: usize, flags: u8, payload: &[u8]) {
        let (src, dst) = if from == 0 { (CLIENT, BROKER) } else { (BROKER, CLIENT) };
        let ack = if flags & ACK != 0 { self.seq[1 - from] } else { 0 };
        let mut tcp = Vec::with_capacity(20 + payload.len());
        tcp.extend_from_slice(&src.2.to_be_bytes());
        tcp.extend_from_slice(&dst.2.to_be_bytes());
        tcp.extend_from_slice(&self.seq[from].to_be_bytes());
        tcp.extend_from_slice(&ack.to_be_bytes());
        tcp.extend_from_slice(&[5 << 4, flags]); // header length 20, flags
        tcp.extend_from_slice(&65_535u16.to_be_bytes()); // window
        tcp.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
        tcp.extend_from_slice(payload);
        let tcp_len = (tcp.len() as u16).to_be_bytes();
        let sum = checksum(&[&src.1, &dst.1, &[0, 6], &tcp_len, &tcp]);
        tcp[16..18].copy_from_slice(&sum.to_be_bytes());

        let mut ip = Vec::with_capacity(20);
        ip.extend_from_slice(&[0x45, 0]);
        ip.extend_from_slice(&((20 + tcp.len()) as u16).to_be_bytes());
        ip.extend_from_slice(&(self.packets as u16).to_be_bytes()); // identification
        ip.extend_from_slice(&[0x40, 0, 64, 6, 0, 0]); // don't fragment, TTL, TCP, checksum
        ip.extend_from_slice(&src.1);
        ip.extend_from_slice(&dst.1);
        let sum = checksum(&[&ip]);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());

        let mut frame = Vec::with_capacity(14 + ip.len() + tcp.len());
        frame.extend_from_slice(&dst.0);
        frame.extend_from_slice(&src.0);
        frame.extend_from_slice(&0x0800u16.to_be_bytes());
        frame.extend_from_slice(&ip);
        frame.extend_from_slice(&tcp);

        self.packets += 1;
        let (secs, micros) = (1_700_000_000 + self.packets / 1000, (self.packets % 1000) * 1000);
        for field in [secs, micros, frame.len() as u32, frame.len() as u32] {
            self.bytes.extend_from_slice(&field.to_le_bytes());
        }
        self.bytes.extend_from_slice(&frame);
        self.seq[from] = self.seq[from].wrapping_add(payload.len() as u32);
    }

    /// A whole Kafka frame, split over two segments.
    fn kafka_frame(&mut self, from: usize, frame: &[u8]) {
        let half = frame.len() / 2;
        self.packet(from, PSH_ACK, &frame[..half]);
        self.packet(from, PSH_ACK, &frame[half..]);
    }
}

// ---------------------------------------------------------------------------------------
// The exchanges
// ---------------------------------------------------------------------------------------

/// One request and its response, and the values tshark must show for them.
struct Exchange {
    api: &'static str,
    version: i16,
    correlation_id: i32,
    request: Vec<u8>,
    response: Vec<u8>,
    /// Field name and the values tshark must show, in order, for the request and the
    /// response.
    request_fields: Vec<(&'static str, Vec<String>)>,
    response_fields: Vec<(&'static str, Vec<String>)>,
}

fn strings<T: ToString>(values: impl IntoIterator<Item = T>) -> Vec<String> {
    values.into_iter().map(|v| v.to_string()).collect()
}

fn encode_request(body: &impl AnyBody, version: i16, correlation_id: i32) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    let n = dispatch::encode_request(body, version, correlation_id, Some("kwire-tshark"), &mut buf).unwrap();
    buf.truncate(n);
    buf
}

fn encode_response(body: &impl AnyBody, version: i16, correlation_id: i32) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    let n = dispatch::encode_response(body, version, correlation_id, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

/// `value` from version `first` on, `otherwise` (the field's default) before: kwire
/// refuses to encode a value that a version cannot carry.
fn since<T>(version: i16, first: i16, value: T, otherwise: T) -> T {
    if version >= first { value } else { otherwise }
}

fn api_versions(version: i16, correlation_id: i32) -> Exchange {
    let request = ApiVersionsRequest {
        client_software_name: since(version, 3, "kwire-tshark", "").into(),
        client_software_version: since(version, 3, "0.1.0", "").into(),
        ..Default::default()
    };
    let keys = [(2, 1, 5), (3, 0, 9), (16, 0, 3), (18, 0, 3)].map(|(api_key, min_version, max_version)| {
        ApiVersion { api_key, min_version, max_version, ..Default::default() }
    });
    let response = ApiVersionsResponse {
        api_keys: List::Borrowed(&keys),
        throttle_time_ms: since(version, 1, 25, 0),
        ..Default::default()
    };
    let mut request_fields = vec![];
    if version >= 3 {
        request_fields.push(("kafka.client_software_name", strings(["kwire-tshark"])));
        request_fields.push(("kafka.client_software_version", strings(["0.1.0"])));
    }
    let mut response_fields = vec![
        ("kafka.error", strings([0])),
        ("kafka.api_versions.api_key", strings([2, 3, 16, 18])),
        ("kafka.api_versions.min_version", strings([1, 0, 0, 0])),
        ("kafka.api_versions.max_version", strings([5, 9, 3, 3])),
    ];
    if version >= 1 {
        response_fields.push(("kafka.throttle_time", strings([25])));
    }
    Exchange {
        api: "ApiVersions",
        version,
        correlation_id,
        request: encode_request(&request, version, correlation_id),
        response: encode_response(&response, version, correlation_id),
        request_fields,
        response_fields,
    }
}

fn list_groups(version: i16, correlation_id: i32) -> Exchange {
    let groups =
        [("billing", "consumer"), ("connect-cluster", "connect")].map(|(id, protocol)| ListedGroup {
            group_id: Str::Borrowed(id),
            protocol_type: Str::Borrowed(protocol),
            ..Default::default()
        });
    let response = ListGroupsResponse {
        throttle_time_ms: since(version, 1, 7, 0),
        groups: List::Borrowed(&groups),
        ..Default::default()
    };
    let mut response_fields = vec![
        ("kafka.error", strings([0])),
        ("kafka.consumer_group", strings(["billing", "connect-cluster"])),
        ("kafka.protocol_type", strings(["consumer", "connect"])),
    ];
    if version >= 1 {
        response_fields.push(("kafka.throttle_time", strings([7])));
    }
    Exchange {
        api: "ListGroups",
        version,
        correlation_id,
        request: encode_request(&ListGroupsRequest::default(), version, correlation_id),
        response: encode_response(&response, version, correlation_id),
        request_fields: vec![],
        response_fields,
    }
}

fn list_offsets(version: i16, correlation_id: i32) -> Exchange {
    let orders =
        [(0, -1), (1, -2), (2, T0 + 2_000)].map(|(partition_index, timestamp)| ListOffsetsPartition {
            partition_index,
            current_leader_epoch: since(version, 4, 3, -1),
            timestamp,
            ..Default::default()
        });
    let payments = [ListOffsetsPartition {
        partition_index: 0,
        current_leader_epoch: since(version, 4, 0, -1),
        timestamp: -1,
        ..Default::default()
    }];
    let topics = [
        ListOffsetsTopic { name: "orders".into(), partitions: List::Borrowed(&orders), ..Default::default() },
        ListOffsetsTopic {
            name: "payments".into(),
            partitions: List::Borrowed(&payments),
            ..Default::default()
        },
    ];
    let request = ListOffsetsRequest {
        replica_id: -1,
        isolation_level: since(version, 2, 1, 0),
        topics: List::Borrowed(&topics),
        ..Default::default()
    };
    // (partition, error, timestamp, offset, leader epoch)
    let answers = [(0, 0, -1, 4, 3), (1, 0, -1, 100, 3), (2, 0, T0 + 2_500, 120, 3), (0, 3, -1, -1, -1)];
    let parts = answers.map(|(partition_index, error_code, timestamp, offset, leader_epoch)| {
        ListOffsetsPartitionResponse {
            partition_index,
            error_code,
            timestamp,
            offset,
            leader_epoch: since(version, 4, leader_epoch, -1),
            ..Default::default()
        }
    });
    let response_topics = [
        ListOffsetsTopicResponse {
            name: "orders".into(),
            partitions: List::Borrowed(&parts[..3]),
            ..Default::default()
        },
        ListOffsetsTopicResponse {
            name: "payments".into(),
            partitions: List::Borrowed(&parts[3..]),
            ..Default::default()
        },
    ];
    let response = ListOffsetsResponse {
        throttle_time_ms: since(version, 2, 3, 0),
        topics: List::Borrowed(&response_topics),
        ..Default::default()
    };

    let mut request_fields = vec![
        ("kafka.replica_id", strings([-1])),
        ("kafka.topic_name", strings(["orders", "payments"])),
        ("kafka.partition_id", strings([0, 1, 2, 0])),
        ("kafka.offset_time", strings([-1, -2, T0 + 2_000, -1])),
    ];
    if version >= 2 {
        request_fields.push(("kafka.isolation_level", strings([1])));
    }
    if version >= 4 {
        request_fields.push(("kafka.leader_epoch", strings([3, 3, 3, 0]))); // tshark calls the current leader epoch "Leader Epoch"
    }
    let mut response_fields = vec![
        ("kafka.topic_name", strings(["orders", "payments"])),
        ("kafka.partition_id", strings(answers.map(|a| a.0))),
        ("kafka.error", strings(answers.map(|a| a.1))),
        ("kafka.offset", strings(answers.map(|a| a.3))),
        ("kafka.offset_time", strings(answers.map(|a| a.2))),
    ];
    if version >= 2 {
        response_fields.push(("kafka.throttle_time", strings([3])));
    }
    if version >= 4 {
        response_fields.push(("kafka.leader_epoch", strings(answers.map(|a| a.4))));
    }
    Exchange {
        api: "ListOffsets",
        version,
        correlation_id,
        request: encode_request(&request, version, correlation_id),
        response: encode_response(&response, version, correlation_id),
        request_fields,
        response_fields,
    }
}

fn metadata(version: i16, correlation_id: i32) -> Exchange {
    let wanted = ["orders", "payments"]
        .map(|name| MetadataRequestTopic { name: Some(Str::Borrowed(name)), ..Default::default() });
    let request = MetadataRequest {
        topics: Some(List::Borrowed(&wanted)),
        allow_auto_topic_creation: since(version, 4, false, true),
        include_cluster_authorized_operations: since(version, 8, true, false),
        include_topic_authorized_operations: since(version, 8, true, false),
        ..Default::default()
    };
    let replicas = [1, 2];
    let isr = [1];
    let offline = [2];
    let partition = |partition_index: i32, leader_epoch: i32| MetadataResponsePartition {
        partition_index,
        leader_id: 1,
        leader_epoch: since(version, 7, leader_epoch, -1),
        replica_nodes: List::Borrowed(&replicas),
        isr_nodes: List::Borrowed(&isr),
        offline_replicas: List::Borrowed(since(version, 5, &offline[..], &[])),
        ..Default::default()
    };
    let orders = [partition(0, 3), partition(1, 3), partition(2, 1)];
    let payments = [partition(0, 0)];
    let topics = [
        MetadataResponseTopic {
            name: Some("orders".into()),
            partitions: List::Borrowed(&orders),
            topic_authorized_operations: since(version, 8, 0x0df8, i32::MIN),
            ..Default::default()
        },
        MetadataResponseTopic {
            name: Some("payments".into()),
            is_internal: since(version, 1, true, false),
            partitions: List::Borrowed(&payments),
            topic_authorized_operations: since(version, 8, 0x0df8, i32::MIN),
            ..Default::default()
        },
    ];
    let brokers = [
        MetadataResponseBroker {
            node_id: 1,
            host: "broker-1.test".into(),
            port: 9092,
            rack: since(version, 1, Some("rack-a".into()), None),
            ..Default::default()
        },
        MetadataResponseBroker {
            node_id: 2,
            host: "broker-2.test".into(),
            port: 9093,
            rack: None,
            ..Default::default()
        },
    ];
    let response = MetadataResponse {
        throttle_time_ms: since(version, 3, 9, 0),
        brokers: List::Borrowed(&brokers),
        cluster_id: since(version, 2, Some("kwire-demo".into()), None),
        controller_id: since(version, 1, 2, -1),
        topics: List::Borrowed(&topics),
        cluster_authorized_operations: since(version, 8, 0x1fa0, i32::MIN),
        ..Default::default()
    };
    let mut request_fields = vec![("kafka.topic_name", strings(["orders", "payments"]))];
    if version >= 4 {
        request_fields.push(("kafka.allow_auto_topic_creation", strings(["0"])));
    }
    if version >= 8 {
        request_fields.push(("kafka.include_cluster_authorized_ops", strings(["1"])));
        request_fields.push(("kafka.include_topic_authorized_ops", strings(["1"])));
    }
    let mut response_fields = vec![
        // The brokers' ids, then (from version 1) the controller's.
        ("kafka.node_id", strings(if version >= 1 { vec![1, 2, 2] } else { vec![1, 2] })),
        ("kafka.error", strings([0; 6])),
        ("kafka.host", strings(["broker-1.test", "broker-2.test"])),
        ("kafka.port", strings([9092, 9093])),
        ("kafka.topic_name", strings(["orders", "payments"])),
        ("kafka.partition_id", strings([0, 1, 2, 0])),
        ("kafka.leader_id", strings([1, 1, 1, 1])),
        ("kafka.replica_id", strings([1, 2, 1, 2, 1, 2, 1, 2])),
        ("kafka.isr_id", strings([1, 1, 1, 1])),
    ];
    if version >= 1 {
        response_fields.push(("kafka.rack", strings(["rack-a", "[ Null ]"])));
        response_fields.push(("kafka.is_internal", strings([0, 1])));
    }
    if version >= 2 {
        response_fields.push(("kafka.cluster_id", strings(["kwire-demo"])));
    }
    if version >= 3 {
        response_fields.push(("kafka.throttle_time", strings([9])));
    }
    if version >= 5 {
        response_fields.push(("kafka.offline_id", strings([2, 2, 2, 2])));
    }
    if version >= 7 {
        response_fields.push(("kafka.leader_epoch", strings([3, 3, 1, 0])));
    }
    if version >= 8 {
        response_fields.push(("kafka.topic_authorized_ops", strings(["0x00000df8", "0x00000df8"])));
        response_fields.push(("kafka.cluster_authorized_ops", strings(["0x00001fa0"])));
    }
    Exchange {
        api: "Metadata",
        version,
        correlation_id,
        request: encode_request(&request, version, correlation_id),
        response: encode_response(&response, version, correlation_id),
        request_fields,
        response_fields,
    }
}

/// Every exchange: the versions both kwire and tshark 4.0's dissector know.
fn exchanges() -> Vec<Exchange> {
    let mut all = Vec::new();
    let mut correlation_id = 100;
    let mut next = || {
        correlation_id += 1;
        correlation_id
    };
    for v in 0..=3 {
        all.push(api_versions(v, next()));
    }
    for v in 0..=3 {
        all.push(list_groups(v, next()));
    }
    for v in 1..=5 {
        all.push(list_offsets(v, next()));
    }
    for v in 0..=9 {
        all.push(metadata(v, next()));
    }
    all
}

// ---------------------------------------------------------------------------------------
// tshark
// ---------------------------------------------------------------------------------------

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tshark_available() -> bool {
    Command::new("tshark")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `cmd` with a deadline; returns (success, stdout, stderr).
fn run_bounded(cmd: &mut Command, timeout: Duration) -> (bool, String, String) {
    let what = format!("{cmd:?}");
    let out = common::process::run(cmd, &what, timeout);
    (out.ok, out.stdout, out.stderr)
}

fn ensure_tshark() {
    if tshark_available() {
        return;
    }
    let (ok, out, err) =
        run_bounded(Command::new("bash").arg(root().join("tests/interop/setup.sh")), SETUP_TIMEOUT);
    assert!(ok && tshark_available(), "tests/interop/setup.sh did not install tshark:\n{out}\n{err}");
}

fn tshark(pcap: &Path, args: &[&str]) -> String {
    let (ok, out, err) = run_bounded(
        Command::new("tshark").arg("-r").arg(pcap).args(["-o", "kafka.tcp.ports:9092"]).args(args),
        TSHARK_TIMEOUT,
    );
    assert!(ok, "tshark {args:?} failed:\n{err}");
    out
}

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tshark");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn tshark_dissects_what_kwire_encodes() {
    ensure_tshark();
    let exchanges = exchanges();
    let mut pcap = Pcap::new();
    for e in &exchanges {
        pcap.kafka_frame(0, &e.request);
        pcap.kafka_frame(1, &e.response);
    }
    let path = out_dir().join("kwire.pcap");
    std::fs::write(&path, &pcap.bytes).unwrap();

    // The whole dissection: nothing malformed, no error or warning notes.
    let text = tshark(&path, &["-V"]);
    std::fs::write(out_dir().join("kwire.txt"), &text).unwrap();
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            ["malformed", "expert info (error", "expert info (warning", "unsupported", "unknown api", "bad "]
                .iter()
                .any(|bad| l.contains(bad))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "tshark found problems (see {}):\n{}",
        out_dir().join("kwire.txt").display(),
        bad.join("\n")
    );

    // The values, message by message: one line per packet that completes a Kafka frame.
    let mut fields = vec![
        "frame.number",
        "tcp.srcport",
        "kafka.correlation_id",
        "kafka.api_key",
        "kafka.api_version",
        "kafka.response.version",
        "kafka.client_id",
        "kafka.request_frame",
    ];
    let mut wanted: Vec<&str> = exchanges
        .iter()
        .flat_map(|e| e.request_fields.iter().chain(&e.response_fields).map(|(f, _)| *f))
        .collect();
    wanted.sort();
    wanted.dedup();
    fields.extend(&wanted);
    let mut args =
        vec!["-T", "fields", "-E", "separator=|", "-E", "aggregator=,", "-E", "occurrence=a", "-Y", "kafka"];
    for f in &fields {
        args.extend(["-e", f]);
    }
    let table = tshark(&path, &args);
    let rows: Vec<BTreeMap<&str, &str>> =
        table.lines().map(|line| fields.iter().copied().zip(line.split('|')).collect()).collect();
    assert_eq!(rows.len(), 2 * exchanges.len(), "one dissected Kafka frame per message:\n{table}");

    let mut failures = Vec::new();
    let mut compared = 0;
    for (i, e) in exchanges.iter().enumerate() {
        let (request, response) = (&rows[2 * i], &rows[2 * i + 1]);
        for (row, from_client, expected) in
            [(request, true, &e.request_fields), (response, false, &e.response_fields)]
        {
            let what =
                format!("{} v{} {}", e.api, e.version, if from_client { "request" } else { "response" });
            // A request carries its version and client id; tshark shows a response's version
            // from the request it pairs it with (by correlation id), and names that frame.
            let only = |yes: bool, values: Vec<String>| if yes { values } else { Vec::new() };
            let frame_of = |row: &BTreeMap<&str, &str>| strings([row["frame.number"]]);
            let mut want: Vec<(&str, Vec<String>)> = vec![
                ("tcp.srcport", strings([if from_client { CLIENT.2 } else { BROKER.2 }])),
                ("kafka.correlation_id", strings([e.correlation_id])),
                ("kafka.api_key", strings([api_key(e.api)])),
                ("kafka.api_version", only(from_client, strings([e.version]))),
                ("kafka.response.version", only(!from_client, strings([e.version]))),
                ("kafka.client_id", only(from_client, strings(["kwire-tshark"]))),
                ("kafka.request_frame", only(!from_client, frame_of(request))),
            ];
            want.extend(expected.iter().cloned());
            for (field, values) in want {
                compared += 1;
                let got = row.get(field).copied().unwrap_or("");
                if got != values.join(",") {
                    failures.push(format!("{what}: {field} = {got:?}, want {:?}", values.join(",")));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {compared} values differ:\n  {}\n{table}",
        failures.len(),
        failures.join("\n  ")
    );
    eprintln!("tshark: {} frames dissected, {compared} values as encoded", rows.len());
}

fn api_key(api: &str) -> i16 {
    match api {
        "ListOffsets" => 2,
        "Metadata" => 3,
        "ListGroups" => 16,
        "ApiVersions" => 18,
        _ => unreachable!(),
    }
}
