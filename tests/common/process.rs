//! Running a child process to its end with a time limit, its output collected.

use std::borrow::BorrowMut;
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

/// Runs `cmd` (a `Command` or a `&mut Command`) to the end, or kills it at `timeout` and
/// panics with what it printed.
pub fn run(cmd: impl BorrowMut<Command>, what: &str, timeout: Duration) -> Output {
    let (ok, stdout, stderr) = run_bounded(cmd, timeout);
    let Some(ok) = ok else {
        panic!("{what} did not finish within {timeout:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    };
    Output { ok, stdout, stderr }
}

/// Runs `cmd` to the end, or kills it at `timeout`; returns whether it succeeded (`None`
/// when it was killed) and what it printed on stdout and stderr.
pub fn run_bounded(mut cmd: impl BorrowMut<Command>, timeout: Duration) -> (Option<bool>, String, String) {
    let cmd = cmd.borrow_mut();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
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
            break Some(status.success());
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(20));
    };
    (status, out.join().unwrap_or_default(), err.join().unwrap_or_default())
}
