//! What the proxy tests (tests/proxy.rs, tests/proxy_cluster.rs, tests/proxy_tls.rs) share:
//! a running `kwire proxy` with its output collected, the Kafka broker or cluster of
//! tests/kafka/broker.sh, and the metrics scrapes. With the `cli` feature only
//! (`CARGO_BIN_EXE_kwire`); the client installation is in `common/clients.rs`.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::process::{Output, run};
use super::root;

/// A running `kwire proxy`: its stdout lines (the first, "listening on", included) and its
/// stderr, collected as they come; killed on drop.
pub struct Proxy {
    pub child: Child,
    /// The `--listen` address, from the first line.
    pub addr: String,
    lines: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<thread::JoinHandle<()>>,
}

/// What a stopped proxy printed.
pub struct Printed {
    pub lines: Vec<String>,
    pub stderr: String,
}

impl Proxy {
    /// `kwire proxy ARGS` (`args` gives `--listen`).
    pub fn start<S: AsRef<OsStr>>(args: &[S]) -> Proxy {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kwire"));
        cmd.arg("proxy").args(args);
        Proxy::spawn(cmd)
    }

    /// Starts `cmd` (a `kwire proxy` command, maybe behind a shell) and waits for its first
    /// line; panics with what it wrote if that is not "kwire proxy: listening on ADDR".
    pub fn spawn(mut cmd: Command) -> Proxy {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start kwire proxy");
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().unwrap();
        let sink = stderr.clone();
        let err_reader = thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        let _ = stdout.read_line(&mut first);
        let Some(addr) = first.strip_prefix("kwire proxy: listening on ").and_then(|r| r.split(',').next())
        else {
            let _ = child.kill();
            let _ = child.wait();
            let _ = err_reader.join();
            panic!("kwire proxy did not start: {first:?}\nstderr:\n{}", stderr.lock().unwrap());
        };
        let addr = addr.to_string();
        let lines = Arc::new(Mutex::new(vec![first.trim_end().to_string()]));
        let sink = lines.clone();
        let reader = thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line);
            }
        });
        Proxy { child, addr, lines, stderr, readers: vec![reader, err_reader] }
    }

    /// The port of [`Proxy::addr`].
    pub fn port(&self) -> u16 {
        self.addr.rsplit_once(':').unwrap().1.parse().unwrap()
    }

    /// The stdout lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// The stdout lines so far, as one text.
    pub fn log(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// The stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits (up to 20 s) for a line holding every one of `needles`; returns it.
    pub fn wait_for(&self, needles: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let found =
                self.lines.lock().unwrap().iter().find(|l| needles.iter().all(|n| l.contains(n))).cloned();
            if let Some(line) = found {
                return line;
            }
            if start.elapsed() > Duration::from_secs(20) {
                panic!(
                    "no log line with {needles:?} from kwire proxy:\n{}\nstderr:\n{}",
                    self.log(),
                    self.stderr()
                );
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// How many lines hold `needle`.
    pub fn count(&self, needle: &str) -> usize {
        self.lines.lock().unwrap().iter().filter(|l| l.contains(needle)).count()
    }

    /// Whether it still runs (it must never exit by itself).
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_none()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The `--metrics` address, from the log ("metrics on http://ADDR/metrics").
    pub fn metrics_addr(&self) -> String {
        let start = Instant::now();
        loop {
            let found = self.lines.lock().unwrap().iter().find_map(|l| {
                l.split("metrics on http://")
                    .nth(1)
                    .and_then(|r| r.strip_suffix("/metrics"))
                    .map(String::from)
            });
            if let Some(addr) = found {
                return addr;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "the proxy logged no metrics address");
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the proxy after letting its logger write what it has; returns what it printed
    /// and whether it was still running.
    pub fn kill(mut self) -> (Printed, bool) {
        thread::sleep(Duration::from_millis(300));
        let alive = self.alive();
        let _ = self.child.kill();
        (self.collect(), alive)
    }

    /// Stops the proxy with SIGINT, so that it prints its summary (killed after 5 s);
    /// panics if it had exited by itself.
    pub fn interrupt(mut self) -> Printed {
        thread::sleep(Duration::from_millis(300));
        assert!(self.child.try_wait().unwrap().is_none(), "kwire proxy exited by itself");
        let _ = Command::new("kill").arg("-INT").arg(self.child.id().to_string()).status();
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(5) {
            thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        self.collect()
    }

    fn collect(&mut self) -> Printed {
        let _ = self.child.wait();
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        let lines = std::mem::take(&mut *self.lines.lock().unwrap());
        Printed { lines, stderr: self.stderr() }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `tests/kafka/broker.sh MODE target/kafka/NAME-PID ARGS...` (this process's PID,
/// which the script's watchdog follows; `args` may name it with `{pid}`), with `env`, and
/// checks that it succeeded. First removes the `NAME-*` folders of earlier runs whose test
/// process and broker (its `pid` file) are both gone. Returns the folder and the output.
pub fn kafka(
    mode: &str,
    name: &str,
    args: &[&str],
    env: &[(&str, &OsStr)],
    timeout: Duration,
) -> (PathBuf, Output) {
    let base = root().join("target/kafka");
    let running = |pid: &str| !pid.trim().is_empty() && Path::new(&format!("/proc/{}", pid.trim())).exists();
    if let Ok(entries) = std::fs::read_dir(&base) {
        for e in entries.flatten() {
            let folder = e.file_name().to_string_lossy().into_owned();
            let Some(owner) = folder.strip_prefix(name).and_then(|r| r.strip_prefix('-')) else { continue };
            let pid = std::fs::read_to_string(e.path().join("pid")).unwrap_or_default();
            if !running(owner) && !running(&pid) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let me = std::process::id().to_string();
    let dir = base.join(format!("{name}-{me}"));
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("tests/kafka/broker.sh")).arg(mode).arg(&dir);
    cmd.args(args.iter().map(|a| a.replace("{pid}", &me)));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let what = format!("tests/kafka/broker.sh {mode}");
    let out = run(cmd, &what, timeout);
    assert!(
        out.ok,
        "the Kafka broker could not start ({what})\nstdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    (dir, out)
}

/// One scrape of `GET /metrics` at `addr` (a proxy's `--metrics`): the body of a 200 answer
/// in the Prometheus text format.
pub fn scrape(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect to --metrics {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: kwire\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(head.contains("Content-Type: text/plain; version=0.0.4"), "{head}");
    body.to_string()
}

/// Scrapes as the Prometheus Python client's parser reads them (tests/proxy/parse_metrics.py,
/// after tests/proxy/setup.sh): per scrape, `{"types": {family: type}, "samples": [[name,
/// labels, value]]}`. Panics if the parser rejects one.
pub fn parse_metrics(scrapes: &[String]) -> Vec<Value> {
    let dir = root().join("target/proxy-vectors/metrics");
    std::fs::create_dir_all(&dir).unwrap();
    let files: Vec<PathBuf> = scrapes
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let f = dir.join(format!("{}-{i}.txt", std::process::id()));
            std::fs::write(&f, text).unwrap();
            f
        })
        .collect();
    let mut cmd = Command::new(root().join("target/interop/venv/bin/python"));
    cmd.arg(root().join("tests/proxy/parse_metrics.py")).args(&files);
    let out = run(cmd, "parse_metrics.py", Duration::from_secs(60));
    assert!(out.ok, "the Prometheus parser rejected a scrape: {}", out.stderr);
    for f in files {
        let _ = std::fs::remove_file(f);
    }
    out.stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

/// A parsed scrape's samples: name and sorted `k=v` labels (comma-separated) to value.
pub fn samples(scrape: &Value) -> BTreeMap<(String, String), f64> {
    scrape["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let labels: BTreeMap<String, String> = serde_json::from_value(s[1].clone()).unwrap();
            let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            ((s[0].as_str().unwrap().to_string(), labels.join(",")), s[2].as_f64().unwrap())
        })
        .collect()
}
