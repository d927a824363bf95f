//! Every input that ever crashed a fuzz target, replayed through the same checks the
//! targets run (`tests/fuzz_checks`), plus the checked-in seed corpora so that a change
//! that breaks a property shows up in `cargo test` before any fuzzing.
//!
//! To add a crash: copy the file libFuzzer wrote (`fuzz/artifacts/<target>/crash-*`) to
//! `tests/fuzz_regressions/<target>/<short-name>`, or write it as a hex literal in a test
//! below with a line on what it found. See `docs/fuzzing.md`.

mod fuzz_checks;

use std::path::Path;

fn replay_dir(dir: &Path, check: Check) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut n = 0;
    let mut failed = Vec::new();
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_file() {
            let data = std::fs::read(&path).unwrap();
            if std::panic::catch_unwind(|| check(&data)).is_err() {
                failed.push(path.display().to_string());
            }
            n += 1;
        }
    }
    assert!(failed.is_empty(), "inputs that fail their check:\n{}", failed.join("\n"));
    n
}

type Check = fn(&[u8]);

fn targets() -> [(&'static str, Check); 11] {
    [
        ("request_frame", fuzz_checks::request_frame),
        ("response", fuzz_checks::response),
        ("roundtrip", fuzz_checks::roundtrip),
        ("primitives", fuzz_checks::primitives),
        ("records", fuzz_checks::records::records),
        ("conn", fuzz_checks::conn::conn),
        ("explain", fuzz_checks::explain::explain),
        ("validate", fuzz_checks::validate::validate),
        ("vectored", fuzz_checks::vectored::vectored),
        ("capture", fuzz_checks::capture::capture),
        ("encrypt", fuzz_checks::encrypt::encrypt),
    ]
}

#[test]
fn saved_crashes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    for (target, check) in targets() {
        replay_dir(&root.join(target), check);
    }
}

#[test]
fn seed_corpora() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for (target, check) in targets() {
        let n = replay_dir(&root.join(target), check);
        assert!(n >= 4, "fuzz/corpus/{target} has only {n} inputs");
    }
}
