//! Real clients in a KIP-848 consumer group of `kwire::broker` (`group.protocol=consumer`):
//! the Java kafka-clients (tests/interop/java, `GroupMember`) and franz-go
//! (tests/interop/go, `group848`, with `kgo.ServerSideBalancer`). Three members consume one
//! topic of six partitions in one group; they join one by one and leave one by one while
//! records are produced in waves, and every record produced is consumed exactly once,
//! checked by value. The raw-frame cases of the protocol are in tests/broker_consumer_group.rs
//! (plain `cargo test`); these need the `interop` feature and the clients of
//! tests/proxy/setup.sh.
#![cfg(feature = "broker")]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::clients::setup;
use common::raw::{Conn, answer};
use common::root;
use kwire::broker::{Broker, Config};
use kwire::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
use kwire::records::{BatchBuilder, NewRecord};
use serde_json::Value;

const PARTITIONS: i32 = 6;
/// Records per partition in each wave.
const PER_WAVE: usize = 10;
/// How long a step (a member joining, a wave consumed) may take.
const STEP: Duration = Duration::from_secs(90);

/// One interop test at a time (the machine has two cores; JVMs are heavy).
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The client programs are built, with the group-member programs in them.
fn programs_fresh() -> bool {
    let r = root();
    let newer = |built: &str, source: &str| {
        let m = |p: &str| std::fs::metadata(r.join(p)).and_then(|m| m.modified()).ok();
        matches!((m(built), m(source)), (Some(b), Some(s)) if b >= s)
    };
    newer(
        "target/java-client/proxy-java-client-0.jar",
        "tests/interop/java/src/main/java/dev/kwire/interop/GroupMember.java",
    ) && newer("target/go-client/go-client", "tests/interop/go/group848.go")
}

/// A running member: its JSON lines as they come.
struct Member {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Arc<Mutex<Vec<Value>>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

impl Member {
    fn start(kind: &str, bootstrap: &str, topic: &str, group: &str, name: &str, assignor: &str) -> Member {
        let r = root();
        let mut cmd = match kind {
            "java" => {
                let jar = r.join("target/java-client/proxy-java-client-0.jar");
                let lib = r.join("target/java-client/lib/*");
                let mut c = Command::new("java");
                c.arg("-Xmx256m")
                    .arg("-cp")
                    .arg(format!("{}:{}", jar.display(), lib.display()))
                    .arg("dev.kwire.interop.GroupMember")
                    .args([bootstrap, topic, group, name]);
                c
            }
            "franz-go" => {
                let mut c = Command::new(r.join("target/go-client/go-client"));
                c.args(["group848", bootstrap, topic, group, name, assignor]);
                c
            }
            other => panic!("no client {other}"),
        };
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{kind}: {e}"));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        let (l, who) = (lines.clone(), name.to_string());
        let a = std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) => l.lock().unwrap().push(v),
                    Err(_) => eprintln!("{who}: {line}"),
                }
            }
        });
        let e = stderr.clone();
        let b = std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut e = e.lock().unwrap();
                if e.len() < 1 << 20 {
                    e.push_str(&line);
                    e.push('\n');
                }
            }
        });
        let stdin = child.stdin.take();
        Member { name: name.into(), child, stdin, lines, stderr, readers: vec![a, b] }
    }

    /// The records it consumed: (partition, offset, value).
    fn records(&self) -> Vec<(i64, i64, String)> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter_map(|v| {
                let r = v.get("record")?;
                Some((r[0].as_i64()?, r[1].as_i64()?, r[2].as_str()?.to_string()))
            })
            .collect()
    }

    fn has_partitions(&self) -> bool {
        self.lines.lock().unwrap().iter().any(|v| v["assigned"].as_array().is_some_and(|a| !a.is_empty()))
    }

    fn errors(&self) -> Vec<String> {
        self.lines.lock().unwrap().iter().filter_map(|v| v["error"].as_str().map(Into::into)).collect()
    }

    fn describe(&self) -> String {
        format!(
            "{}: lines:\n{}\nstderr:\n{}",
            self.name,
            self.lines.lock().unwrap().iter().map(Value::to_string).collect::<Vec<_>>().join("\n"),
            self.stderr.lock().unwrap()
        )
    }

    /// Ends its input: it closes its consumer (leaving the group) and exits.
    fn stop(&mut self) {
        self.stdin = None;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    for r in self.readers.drain(..) {
                        let _ = r.join();
                    }
                    assert!(status.success(), "{} exited with {status}\n{}", self.name, self.describe());
                    let closed = self.lines.lock().unwrap().iter().any(|v| v["closed"] == true);
                    assert!(closed, "{} did not close\n{}", self.name, self.describe());
                    return;
                }
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                _ => {
                    let _ = self.child.kill();
                    panic!("{} did not stop\n{}", self.name, self.describe());
                }
            }
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Produces one wave: `PER_WAVE` records to each partition, values `w{wave}-p{p}-{i}`.
fn produce_wave(c: &mut Conn, topic: &str, wave: usize) -> Vec<String> {
    let mut values = Vec::new();
    let mut batches = Vec::new();
    for p in 0..PARTITIONS {
        let vs: Vec<String> = (0..PER_WAVE).map(|i| format!("w{wave}-p{p}-{i}")).collect();
        let new: Vec<NewRecord<'_>> = vs
            .iter()
            .map(|v| NewRecord { key: None, value: Some(v.as_bytes()), headers: &[], timestamp: None })
            .collect();
        let mut out = Vec::new();
        BatchBuilder::new(0, 1_700_000_000_000, &new).encode_to_vec(&mut out).unwrap();
        batches.push((p, out));
        values.extend(vs);
    }
    let data: Vec<PartitionProduceData<'_>> = batches
        .iter()
        .map(|(p, b)| PartitionProduceData {
            index: *p,
            records: Some(b.as_slice().into()),
            ..Default::default()
        })
        .collect();
    let topics = [TopicProduceData {
        name: topic.into(),
        partition_data: data.as_slice().into(),
        ..Default::default()
    }];
    let req =
        ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: (&topics).into(), ..Default::default() };
    let frame = c.call(&req, 9);
    for t in answer!(frame, Produce, 9).responses().iter() {
        for p in t.partition_responses().iter() {
            assert_eq!(p.error_code(), 0, "produce to partition {}", p.index());
        }
    }
    values
}

fn wait_until(what: &str, members: &[&Member], log: &Mutex<Vec<String>>, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + STEP;
    while !done() {
        if Instant::now() > deadline {
            let logs = log.lock().unwrap().join("\n");
            let states: Vec<String> = members.iter().map(|m| m.describe()).collect();
            panic!("timed out waiting for {what}\nbroker log:\n{logs}\n{}", states.join("\n\n"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Three members of the given kinds join one by one, then the first two leave, while a
/// wave of records is produced at each step; each record is consumed exactly once.
fn scenario(kinds: [&str; 3], assignor: &str) {
    let _serial = serial();
    setup(programs_fresh);
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = log.clone();
    let config = Config {
        logger: Some(Arc::new(move |line: &str| sink.lock().unwrap().push(line.to_string()))),
        consumer_heartbeat_interval: Duration::from_millis(500),
        ..Config::default()
    };
    let broker = Broker::start(config).expect("start the broker");
    let bootstrap = broker.addr().to_string();
    let (topic, group) = ("orders", format!("kip848-{}", kinds.join("-")));
    assert!(broker.create_topic(topic, PARTITIONS));
    let mut c = Conn::open_as(broker.addr(), "kip848-producer");
    let mut produced: Vec<String> = Vec::new();
    let mut members: Vec<Member> = Vec::new();
    let consumed = |members: &[Member]| -> BTreeSet<String> {
        members.iter().flat_map(|m| m.records().into_iter().map(|r| r.2)).collect()
    };

    // Member 1 alone, then 2 and 3 join, each getting partitions, with a wave at each step.
    for (i, kind) in kinds.iter().enumerate() {
        let name = format!("{kind}-{}", i + 1);
        members.push(Member::start(kind, &bootstrap, topic, &group, &name, assignor));
        let m = members.last().unwrap();
        wait_until(&format!("{name} to get partitions"), &members.iter().collect::<Vec<_>>(), &log, || {
            m.has_partitions()
        });
        produced.extend(produce_wave(&mut c, topic, i));
        let want: BTreeSet<String> = produced.iter().cloned().collect();
        wait_until(&format!("wave {i} consumed"), &members.iter().collect::<Vec<_>>(), &log, || {
            consumed(&members) == want
        });
    }
    // The group as ConsumerGroupDescribe tells it: three consumer-protocol members, the
    // assignor they asked for.
    {
        use kwire::messages::consumer_group_describe::ConsumerGroupDescribeRequest;
        let frame = c.call(
            &ConsumerGroupDescribeRequest {
                group_ids: vec![group.as_str().into()].into(),
                ..Default::default()
            },
            1,
        );
        let g = answer!(frame, ConsumerGroupDescribe, 1).groups().iter().next().unwrap();
        assert_eq!((g.error_code(), g.assignor_name()), (0, assignor));
        let members: Vec<_> = g.members().iter().collect();
        assert_eq!(members.len(), 3);
        assert!(members.iter().all(|m| m.member_type() == 1 && m.member_epoch() > 0));
        let mut clients: Vec<&str> = members.iter().map(|m| m.client_id()).collect();
        clients.sort_unstable();
        let mut names: Vec<String> =
            kinds.iter().enumerate().map(|(i, k)| format!("{k}-{}", i + 1)).collect();
        names.sort();
        assert_eq!(clients, names);
    }
    // Members 1 and 2 leave, one at a time, with a wave after each.
    for i in 0..2 {
        members[i].stop();
        produced.extend(produce_wave(&mut c, topic, 3 + i));
        let want: BTreeSet<String> = produced.iter().cloned().collect();
        wait_until(
            &format!("wave {} consumed after {} left", 3 + i, members[i].name),
            &members.iter().collect::<Vec<_>>(),
            &log,
            || consumed(&members) == want,
        );
    }
    members[2].stop();

    // Every record produced, consumed exactly once, at one offset of its partition.
    let mut seen: BTreeMap<String, Vec<(String, i64, i64)>> = BTreeMap::new();
    for m in &members {
        assert!(m.errors().is_empty(), "{}: errors: {:?}", m.name, m.errors());
        for (p, o, v) in m.records() {
            seen.entry(v).or_default().push((m.name.clone(), p, o));
        }
    }
    let twice: Vec<_> = seen.iter().filter(|(_, at)| at.len() > 1).collect();
    assert!(twice.is_empty(), "records consumed more than once: {twice:?}");
    let got: BTreeSet<&String> = seen.keys().collect();
    let want: BTreeSet<&String> = produced.iter().collect();
    assert_eq!(got, want, "the records consumed are not the records produced");
    assert_eq!(produced.len(), 5 * PER_WAVE * PARTITIONS as usize);
    // Each member consumed some, and the two that left did so by leaving (epoch -1).
    for m in &members {
        assert!(!m.records().is_empty(), "{} consumed nothing", m.name);
    }
    let lines = log.lock().unwrap().join("\n");
    let left = lines
        .lines()
        .filter(|l| l.contains(&format!("group {group}: member")) && l.ends_with(" left"))
        .count();
    assert!(left >= 3, "{left} members left the group by a leave heartbeat\n{lines}");
    assert!(!lines.contains("fenced because"), "a member was fenced\n{lines}");
    eprintln!(
        "{kinds:?} ({assignor}): {} records, each consumed once; per member {:?}",
        produced.len(),
        members.iter().map(|m| (m.name.clone(), m.records().len())).collect::<Vec<_>>()
    );
}

#[test]
#[cfg_attr(not(feature = "interop"), ignore = "real clients: needs --features interop")]
fn java_consumer_protocol_group() {
    scenario(["java", "java", "java"], "uniform");
}

#[test]
#[cfg_attr(not(feature = "interop"), ignore = "real clients: needs --features interop")]
fn franz_go_consumer_protocol_group() {
    scenario(["franz-go", "franz-go", "franz-go"], "range");
}

#[test]
#[cfg_attr(not(feature = "interop"), ignore = "real clients: needs --features interop")]
fn java_and_franz_go_in_one_group() {
    scenario(["franz-go", "java", "franz-go"], "uniform");
}
