//! Running a child process to its end with a time limit, its output collected, and the
//! command lines of the real client programs: for the tests that drive real clients
//! (tests/broker.rs, tests/proxy.rs, tests/proxy_cluster.rs).

#![allow(dead_code)] // each test that includes this uses part of it

use std::io::Read;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// What a finished child process said.
pub struct Output {
    /// Whether it exited with success.
    pub ok: bool,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// Runs `cmd` to the end, or kills it at `timeout` and panics.
pub fn run(mut cmd: Command, what: &str, timeout: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let drain = |mut r: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            let (o, e) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
            panic!("{what} did not finish within {timeout:?}\nstdout:\n{o}\nstderr:\n{e}");
        }
        thread::sleep(Duration::from_millis(50));
    };
    Output {
        ok: status.success(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// How each real client program of tests/proxy/ and tests/interop/ is started (after
/// `tests/proxy/setup.sh`): `client` is `kafka-python`, `confluent-kafka`, `kafkajs`,
/// `java` or `franz-go`; each takes the bootstrap address and a prefix for its topic and
/// group names (see tests/proxy/kafka_python_client.py).
pub fn client_command(client: &str, bootstrap: &str, prefix: &str) -> Command {
    let r = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
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
