//! The Java harness of `tests/java` (Apache Kafka's own codec), built once by
//! `tests/java/build.sh` and started once per test: one line in, one JSON line out.
//! Used by `tests/kafka_codec.rs`, `tests/kafka_records.rs` and `tests/kafka_validator.rs`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::Value;

/// The harness's class path, after building it if needed (fails loudly without Java 17+
/// and Maven: these checks are not skipped).
fn classpath(check: &str) -> String {
    let root = super::root();
    let status = Command::new("bash")
        .arg(root.join("tests/java/build.sh"))
        .status()
        .expect("bash runs tests/java/build.sh");
    assert!(
        status.success(),
        "tests/java/build.sh failed ({status}): the {check} needs Java 17+ and Maven with access to Maven \
         Central (or a filled local repository)"
    );
    let path = root.join("target/java/harness.classpath");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).trim().to_string()
}

/// Kafka's answer to every line, in order, from one JVM with a modest heap. `check` names
/// the test in the message given when Java is missing.
pub fn answers(lines: Vec<String>, check: &str) -> Vec<Value> {
    let classpath = classpath(check);
    let n = lines.len();
    let mut child = Command::new("java")
        .args(["-Xmx256m", "-XX:+UseSerialGC", "-cp", &classpath, "kwire.harness.Harness"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run java: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for line in lines {
            stdin.write_all(line.as_bytes())?;
            stdin.write_all(b"\n")?;
        }
        Ok::<(), std::io::Error>(())
    });
    let mut answers = Vec::with_capacity(n);
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.expect("the harness's output");
        answers
            .push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("the harness's JSON: {e}: {line}")));
    }
    writer.join().unwrap().expect("the harness reads every line");
    let status = child.wait().unwrap();
    assert!(status.success(), "the Java harness failed: {status}");
    assert_eq!(answers.len(), n, "the Java harness answers every line");
    answers
}

/// Runs one class of the harness (`kwire.harness.NAME`) with `args`, in a JVM with a
/// modest heap, to its end (at most `limit`): its stdout lines as JSON, and whether it
/// exited successfully. `check` names the test in the message given when Java is missing.
pub fn run_class(class: &str, args: &[&str], limit: std::time::Duration, check: &str) -> (Vec<Value>, bool) {
    let classpath = classpath(check);
    let mut child = Command::new("java")
        .args(["-Xmx256m", "-XX:+UseSerialGC", "-cp", &classpath, &std::format!("kwire.harness.{class}")])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run java: {e}"));
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
            .collect::<Vec<_>>()
    });
    let until = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let lines = reader.join().unwrap();
    (lines, status.is_some_and(|s| s.success()))
}
