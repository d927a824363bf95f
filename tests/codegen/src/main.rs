//! kwire's code generator: it reads every schema in `src/codec/schema/` and generates
//! `src/codec/messages/`, `src/codec/reference/` and `src/tools/reflect/schemas.rs` (see [`emit`]).
//!
//! - `cargo run --manifest-path tests/codegen/Cargo.toml` rewrites the generated files.
//! - `... -- --check` (what CI runs) fails, changing nothing, if any of them is stale.
//!
//! It is a crate of its own, not a test of kwire, so that it runs even when the generated
//! code of a half-finished schema change does not compile.

mod code;
mod emit;
mod schema;
mod versions;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

fn rustfmt(src: &str) -> String {
    let mut child = Command::new(std::env::var("RUSTFMT").unwrap_or_else(|_| "rustfmt".into()))
        .args(["--edition", "2024", "--emit", "stdout", "--config-path"])
        .arg(root().join("rustfmt.toml"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rustfmt runs");
    child.stdin.take().unwrap().write_all(src.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        let dump = std::env::temp_dir().join("kwire-codegen-failed.rs");
        std::fs::write(&dump, src).unwrap();
        panic!(
            "rustfmt failed on generated code (saved to {}):\n{}",
            dump.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).unwrap()
}

fn load() -> Vec<schema::Message> {
    let dir = root().join("src/codec/schema");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .iter()
        // The request and response headers are framing, written by hand in `src/codec/frame.rs`;
        // their schema files are checked against Kafka's like the others.
        .filter(|p| !p.file_name().unwrap().to_string_lossy().ends_with("Header.json"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            schema::parse(&name, &std::fs::read_to_string(p).unwrap()).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

fn generate() -> BTreeMap<PathBuf, String> {
    let mut msgs = load();
    separate_struct_names(&mut msgs);
    let mut by_api: BTreeMap<i16, Vec<&schema::Message>> = BTreeMap::new();
    for m in &msgs {
        by_api.entry(m.api_key).or_default().push(m);
    }
    let mut files = BTreeMap::new();
    let mut apis = Vec::new();
    for (key, mut pair) in by_api {
        pair.sort_by_key(|m| !m.is_request);
        assert!(
            pair.len() == 2 && pair[0].is_request && !pair[1].is_request,
            "API key {key} needs exactly one request and one response schema"
        );
        let (req, resp) = (pair[0], pair[1]);
        let name = emit::api_name(req).to_string();
        assert_eq!(name, emit::api_name(resp), "request and response of key {key} disagree on the API name");
        assert_eq!(req.flexible, resp.flexible, "{name}: request and response flexible versions differ");
        let module = emit::snake(&name);
        files.insert(root().join(format!("src/codec/messages/{module}.rs")), emit::api_module(&name, &pair));
        files.insert(
            root().join(format!("src/codec/reference/{module}.rs")),
            emit::reference_module(&name, &pair),
        );
        apis.push(emit::Api { name, key, request: req, response: resp });
    }
    apis.sort_by_key(|a| a.key);
    files.insert(root().join("src/codec/api_key/table.rs"), emit::modules::api_key(&apis));
    files.insert(root().join("src/codec/messages/mod.rs"), emit::modules::messages(&apis));
    files.insert(root().join("src/codec/messages/answers.rs"), emit::answers::module(&apis));
    files.insert(root().join("src/codec/reference/mod.rs"), emit::modules::reference(&apis));
    files.insert(root().join("src/tools/reflect/schemas.rs"), emit::reflect::module(&apis));
    // rustfmt can need a second pass to settle (a long line in a match arm), and the output
    // must be what `cargo fmt` leaves unchanged.
    files.into_iter().map(|(p, src)| (p, rustfmt(&rustfmt(&src)))).collect()
}

/// A request and its response share one module, so a struct name both use (Vote's
/// `PartitionData`, say) is prefixed with its message's name on both sides.
fn separate_struct_names(msgs: &mut [schema::Message]) {
    let keys: Vec<i16> = msgs.iter().map(|m| m.api_key).collect();
    for key in keys {
        let names =
            |m: &schema::Message| m.structs.iter().skip(1).map(|s| s.name.clone()).collect::<Vec<_>>();
        let both: Vec<Vec<String>> = msgs.iter().filter(|m| m.api_key == key).map(names).collect();
        let [a, b] = both.as_slice() else { continue };
        let clash: Vec<String> = a.iter().filter(|n| b.contains(n)).cloned().collect();
        for m in msgs.iter_mut().filter(|m| m.api_key == key) {
            for name in &clash {
                let new = format!("{}{name}", m.name);
                m.rename_struct(name, &new);
            }
        }
    }
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

fn main() {
    let check = std::env::args().any(|a| a == "--check");
    let mut stale = Vec::new();
    for (path, want) in generate() {
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        if have != want {
            stale.push(rel(&path));
            if !check {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &want).unwrap();
            }
        }
    }
    match (check, stale.is_empty()) {
        (_, true) => println!("codegen: generated code is up to date"),
        (true, false) => {
            eprintln!(
                "codegen: stale generated files (run `cargo run --manifest-path tests/codegen/Cargo.toml`): {stale:?}"
            );
            std::process::exit(1);
        }
        (false, false) => println!("codegen: rewrote {stale:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message whose tagged field starts after its first flexible version, so the
    /// decoders must reject the tag in version 3.
    const LATE_TAG: &str = r#"{
      "apiKey": 999, "type": "response", "name": "LateTagResponse", "about": "Test.",
      "validVersions": "0-4", "flexibleVersions": "3+",
      "fields": [
        { "name": "Epoch", "type": "int64", "versions": "4+", "taggedVersions": "4+", "tag": 0,
          "default": "-1", "about": "Test." }
      ]
    }"#;

    #[test]
    fn known_tag_outside_its_tagged_versions_is_rejected() {
        let msg = schema::parse("LateTagResponse.json", LATE_TAG).unwrap();
        let code = emit::api_module("LateTag", &[&msg]);
        assert!(code.contains("0 if ver.version == 4 => {"), "{code}");
        assert!(code.contains("value.take(8, \"LateTagResponse.Epoch\")?"), "{code}");
        assert!(
            code.contains("0 => return Err(value.error(DecodeErrorKind::TagNotValidForVersion(tag)"),
            "{code}"
        );
        let reference = emit::reference_module("LateTag", &[&msg]);
        assert!(reference.contains("TagNotValidForVersion"), "{reference}");
    }

    #[test]
    fn schema_errors_are_reported() {
        let bad = LATE_TAG.replace("\"taggedVersions\": \"4+\"", "\"taggedVersions\": \"2+\"");
        let err = schema::parse("Bad.json", &bad).unwrap_err();
        assert!(err.contains("tagged versions outside the flexible versions"), "{err}");
        let bad = LATE_TAG
            .replace("\"type\": \"int64\"", "\"type\": \"[][]int64\"")
            .replace("\"default\": \"-1\",", "");
        assert!(schema::parse("Bad.json", &bad).unwrap_err().contains("arrays of arrays"));
    }

    #[test]
    fn every_schema_parses_and_generates() {
        let files = generate();
        assert!(files.keys().any(|p| p.ends_with("src/codec/messages/mod.rs")));
    }
}
