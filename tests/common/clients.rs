//! The real client programs of tests/proxy/ and tests/interop/ (kafka-python,
//! confluent-kafka, kafkajs, the Java kafka-clients, franz-go): their installation
//! (tests/proxy/setup.sh), their command lines, and the check of what they consumed. For
//! the suites behind the `interop` feature (tests/broker.rs's client tests, tests/proxy*.rs).

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use super::process::run;
use super::root;

/// How long `tests/proxy/setup.sh` may take when the tests have to run it.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(1500);

/// Installs the clients once per test process with tests/proxy/setup.sh, unless
/// `target/proxy-clients/ready` is there and `fresh` says what the caller needs besides
/// is in place.
pub fn setup(fresh: impl FnOnce() -> bool) {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let ready = root().join("target/proxy-clients/ready");
        if ready.exists() && fresh() {
            return;
        }
        let _ = std::fs::remove_file(&ready);
        let mut cmd = Command::new("bash");
        cmd.arg(root().join("tests/proxy/setup.sh"));
        let out = run(cmd, "tests/proxy/setup.sh", SETUP_TIMEOUT);
        assert!(out.ok, "tests/proxy/setup.sh failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    });
}

/// How each real client program of tests/proxy/ and tests/interop/ is started (after
/// `tests/proxy/setup.sh`): `client` is `kafka-python`, `confluent-kafka`, `kafkajs`,
/// `java` or `franz-go`; each takes the bootstrap address and a prefix for its topic and
/// group names (see tests/proxy/kafka_python_client.py).
pub fn client_command(client: &str, bootstrap: &str, prefix: &str) -> Command {
    let r = root();
    match client {
        "kafka-python" | "confluent-kafka" => {
            let script =
                if client == "kafka-python" { "kafka_python_client.py" } else { "confluent_client.py" };
            let mut c = Command::new(r.join("target/interop/venv/bin/python"));
            c.arg(r.join("tests/proxy").join(script)).args([bootstrap, prefix]);
            c
        }
        "kafkajs" => {
            let mut c = Command::new("node");
            c.arg(r.join("tests/proxy/kafkajs_client.js"))
                .args([bootstrap, prefix])
                .env("NODE_PATH", r.join("target/interop/node/node_modules"));
            c
        }
        "java" => {
            let jar = r.join("target/java-client/proxy-java-client-0.jar");
            let lib = r.join("target/java-client/lib/*");
            let mut c = Command::new("java");
            c.arg("-Xmx512m")
                .arg("-cp")
                .arg(format!("{}:{}", jar.display(), lib.display()))
                .arg("dev.kwire.interop.ProxyClient")
                .args([bootstrap, prefix]);
            c
        }
        "franz-go" => {
            let mut c = Command::new(r.join("target/go-client/go-client"));
            c.args([bootstrap, prefix]);
            c
        }
        other => panic!("no client {other}"),
    }
}

/// The records of a partition as the consumer saw them, `[offset, value]` in delivery
/// order, as the partition's log: offsets 0, 1, 2, ... each with its value. A record
/// delivered again (a consumer group rebalance before a commit re-delivers, which is the
/// consumer's at-least-once contract) must carry the same value at the same offset; a gap,
/// or two values at one offset, fails.
pub fn partition_log(client: &str, what: &str, consumed: &Value) -> Vec<Value> {
    let entries = consumed.as_array().unwrap_or_else(|| panic!("{client}: {what}: not a list: {consumed}"));
    let mut log: BTreeMap<i64, Value> = BTreeMap::new();
    let mut again = 0;
    for e in entries {
        let (Some(offset), Some(value)) = (e[0].as_i64(), e.get(1)) else {
            panic!("{client}: {what}: not [offset, value]: {e}");
        };
        if let Some(before) = log.insert(offset, value.clone()) {
            assert_eq!(&before, value, "{client}: {what}: two values at offset {offset}");
            again += 1;
        }
    }
    if again > 0 {
        eprintln!(
            "{client}: {what}: {again} records delivered again by the consumer (same offsets, same values)"
        );
    }
    for (i, offset) in log.keys().enumerate() {
        assert_eq!(*offset, i as i64, "{client}: {what}: offsets not contiguous from 0: {:?}", log.keys());
    }
    log.into_values().collect()
}
