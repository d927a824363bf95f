//! The `kwire` command run as a real process, for the tests of the command
//! (`CARGO_BIN_EXE_kwire` exists only with `cli`).

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `kwire` with `args`, feeding `stdin` from another thread (kwire may exit before
/// reading it all, on a usage error; that is not a failure here).
pub fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kwire runs");
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().expect("kwire finishes");
    writer.join().expect("stdin writer");
    out
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `kwire` expecting success and no panic; returns stdout.
pub fn ok(args: &[&str], stdin: &[u8]) -> String {
    let out = run(args, stdin);
    assert!(out.status.success(), "kwire {args:?} failed: {}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("panicked"), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// Runs `kwire` expecting exit status 1 without a panic; returns (stdout, stderr).
pub fn fails(args: &[&str], stdin: &[u8]) -> (String, String) {
    let out = run(args, stdin);
    assert_eq!(out.status.code(), Some(1), "kwire {args:?}: {}{}", text(&out.stdout), text(&out.stderr));
    assert!(!text(&out.stderr).contains("panicked"), "{}", text(&out.stderr));
    (text(&out.stdout), text(&out.stderr))
}
