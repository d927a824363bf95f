//! Schema facts: every `src/codec/schema/*.json` file says what Apache Kafka's own message
//! schema of the same name says about the wire.
//!
//! Kafka's schemas come from the `kafka-clients` jar of the release named in
//! `tests/kafka/fetch.sh`, which this test runs first: it fetches the jar from Maven Central
//! and extracts the schemas into `target/kafka/message/` once, and returns at once after
//! that. The test fails, rather than skips, when they cannot be had.
//!
//! Checked, at every depth and in every common struct:
//! - the message's `apiKey`, `type`, `name`, `validVersions` and `flexibleVersions`;
//! - the field list: names in Kafka's order (the wire order), and for each field its
//!   `type` (so the names of nested and common structs), `versions`, `nullableVersions`,
//!   `taggedVersions`, `tag`, `default` (compared as text: Kafka writes some as JSON numbers
//!   or booleans), `ignorable`, `mapKey`, field-level `flexibleVersions` and `entityType`
//!   (what the field identifies: a topic name, a group id, ...), each present in our file
//!   exactly when it is present in Kafka's;
//! - the common structs: their names, order, `versions` and fields;
//! - no key in either file that the test does not know: Kafka's non-wire keys are listed in
//!   `KAFKA_ONLY_KEYS` with the reason they are left out, so a new Kafka attribute fails here
//!   until someone decides what it means for the wire;
//! - every `about` is there, is not a placeholder and is not Kafka's text;
//! - coverage: every request, response and header of the release has our file, except the
//!   APIs of `EXCLUDED`, and every file of ours has Kafka's counterpart.
//!
//! Where Kafka marks the latest version `latestVersionUnstable`, our `validVersions` must
//! stop one version earlier, for the request and the response of that API. Any other
//! difference fails the test unless `ALLOWED` lists it with a reason; an entry of `ALLOWED`
//! that no longer matches a difference fails it too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value};

/// Differences from Kafka that are intended: (file stem, path, reason). A path is `/` for
/// the message, or the field names from the message down (`#Struct` for a common struct),
/// then `:` and the attribute.
const ALLOWED: &[(&str, &str, &str)] = &[];

/// Kafka APIs that have no schema files here: (Kafka's file stem, reason).
const EXCLUDED: &[(&str, &str)] = &[
    ("LeaderAndIsrRequest", REMOVED),
    ("LeaderAndIsrResponse", REMOVED),
    ("StopReplicaRequest", REMOVED),
    ("StopReplicaResponse", REMOVED),
    ("UpdateMetadataRequest", REMOVED),
    ("UpdateMetadataResponse", REMOVED),
    ("ControlledShutdownRequest", REMOVED),
    ("ControlledShutdownResponse", REMOVED),
];
const REMOVED: &str = "removed with ZooKeeper in Kafka 4.0: its validVersions is \"none\"";

/// Keys of Kafka's schemas that our files leave out, with the reason.
const KAFKA_ONLY_KEYS: &[(&str, &str)] = &[
    ("listeners", "which Kafka processes serve the API; no effect on the wire"),
    ("latestVersionUnstable", "checked here: the unstable version is cut from validVersions"),
    ("zeroCopy", "a hint to Kafka's Java code generator; no effect on the wire"),
];

const MESSAGE_FACTS: &[&str] = &["apiKey", "type", "name", "validVersions", "flexibleVersions"];
const FIELD_FACTS: &[&str] = &[
    "type",
    "versions",
    "nullableVersions",
    "taggedVersions",
    "tag",
    "default",
    "ignorable",
    "mapKey",
    "flexibleVersions",
    "entityType",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Kafka's message schemas. `tests/kafka/fetch.sh` runs every time: it returns at once
/// when they are in place for its Kafka version, and fetches them otherwise.
fn kafka_dir() -> PathBuf {
    let dir = root().join("target/kafka/message");
    let status = Command::new("bash")
        .arg(root().join("tests/kafka/fetch.sh"))
        .status()
        .expect("run tests/kafka/fetch.sh");
    assert!(status.success(), "tests/kafka/fetch.sh failed: cannot get Kafka's schemas");
    assert!(dir.join(".version").exists(), "tests/kafka/fetch.sh left no {}", dir.display());
    dir
}

/// Kafka's schema files have `//` comments; drops them (outside strings).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let (mut in_string, mut escaped) = (false, false);
        let bytes = line.as_bytes();
        let mut end = line.len();
        for (i, &b) in bytes.iter().enumerate() {
            if in_string {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_string = false,
                    _ => {}
                }
            } else if b == b'"' {
                in_string = true;
            } else if b == b'/' && bytes.get(i + 1) == Some(&b'/') {
                end = i;
                break;
            }
        }
        out.push_str(&line[..end]);
        out.push('\n');
    }
    out
}

fn read_json(path: &Path, comments: bool) -> Map<String, Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let text = if comments { strip_comments(&text) } else { text };
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => map,
        Ok(_) => panic!("{}: not a JSON object", path.display()),
        Err(e) => panic!("{}: {e}", path.display()),
    }
}

/// The `*.json` files of a folder by stem.
fn json_files(dir: &Path, comments: bool) -> BTreeMap<String, Map<String, Value>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
            out.insert(stem, read_json(&path, comments));
        }
    }
    out
}

/// A fact as text, so that Kafka's `0` and our `"0"` compare equal for `default`.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn normalise(about: &str) -> String {
    about.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

struct Checker {
    /// (file, path) -> what differs.
    diffs: BTreeMap<(String, String), String>,
    file: String,
}

impl Checker {
    fn diff(&mut self, path: &str, what: String) {
        self.diffs.entry((self.file.clone(), path.to_owned())).or_insert(what);
    }

    fn keys(&mut self, path: &str, ours: &Map<String, Value>, kafka: &Map<String, Value>, known: &[&str]) {
        for key in ours.keys() {
            if !known.contains(&key.as_str()) && key != "about" && key != "fields" {
                self.diff(&format!("{path}:{key}"), format!("key `{key}` is not a known fact"));
            }
        }
        for key in kafka.keys() {
            let left_out = KAFKA_ONLY_KEYS.iter().any(|(k, _)| k == key);
            if !known.contains(&key.as_str()) && !left_out && key != "about" && key != "fields" {
                self.diff(&format!("{path}:{key}"), format!("Kafka's key `{key}` is unknown to this test"));
            }
        }
    }

    fn facts(&mut self, path: &str, ours: &Map<String, Value>, kafka: &Map<String, Value>, facts: &[&str]) {
        for &fact in facts {
            let (o, k) = (ours.get(fact).map(text), kafka.get(fact).map(text));
            if o != k {
                self.diff(&format!("{path}:{fact}"), format!("ours {o:?}, Kafka {k:?}"));
            }
        }
    }

    fn about(&mut self, path: &str, ours: &Map<String, Value>, kafka: &Map<String, Value>) {
        match ours.get("about").and_then(Value::as_str) {
            None => self.diff(&format!("{path}:about"), "no `about`".into()),
            Some(a) if a.trim().is_empty() || a.contains("TODO") => {
                self.diff(&format!("{path}:about"), format!("placeholder `about`: {a:?}"))
            }
            Some(a) => {
                if let Some(k) = kafka.get("about").and_then(Value::as_str)
                    && normalise(a) == normalise(k)
                {
                    self.diff(&format!("{path}:about"), "`about` is Kafka's text".into());
                }
            }
        }
    }

    /// Compares two field lists; `path` is the parent's path ending in `/`.
    fn fields(&mut self, path: &str, ours: Option<&Value>, kafka: Option<&Value>) {
        let empty = Vec::new();
        let ours = ours.map(|v| v.as_array().expect("fields is an array")).unwrap_or(&empty);
        let kafka = kafka.map(|v| v.as_array().expect("fields is an array")).unwrap_or(&empty);
        let name = |f: &Value| f["name"].as_str().unwrap_or("?").to_owned();
        let on: Vec<String> = ours.iter().map(name).collect();
        let kn: Vec<String> = kafka.iter().map(name).collect();
        if on != kn {
            let at = if path == "/" {
                "/:fields".to_owned()
            } else {
                format!("{}:fields", path.trim_end_matches('/'))
            };
            self.diff(&at, format!("fields ours {on:?}, Kafka {kn:?}"));
        }
        for o in ours {
            let Some(k) = kafka.iter().find(|k| name(k) == name(o)) else { continue };
            let (o, k) = (o.as_object().unwrap(), k.as_object().unwrap());
            let here = format!("{path}{}", name(&Value::Object(o.clone())));
            self.keys(&here, o, k, &[&["name"], FIELD_FACTS].concat());
            self.facts(&here, o, k, FIELD_FACTS);
            self.about(&here, o, k);
            if o.contains_key("fields") != k.contains_key("fields") {
                self.diff(&format!("{here}:fields"), "nested fields in only one file".into());
            }
            self.fields(&format!("{here}/"), o.get("fields"), k.get("fields"));
        }
    }

    fn common_structs(&mut self, ours: Option<&Value>, kafka: Option<&Value>) {
        let empty = Vec::new();
        let ours = ours.and_then(Value::as_array).unwrap_or(&empty);
        let kafka = kafka.and_then(Value::as_array).unwrap_or(&empty);
        let name = |s: &Value| s["name"].as_str().unwrap_or("?").to_owned();
        let on: Vec<String> = ours.iter().map(name).collect();
        let kn: Vec<String> = kafka.iter().map(name).collect();
        if on != kn {
            self.diff("/:commonStructs", format!("common structs ours {on:?}, Kafka {kn:?}"));
        }
        for o in ours {
            let Some(k) = kafka.iter().find(|k| name(k) == name(o)) else { continue };
            let (o, k) = (o.as_object().unwrap(), k.as_object().unwrap());
            let here = format!("#{}", name(&Value::Object(o.clone())));
            for key in o.keys().chain(k.keys()) {
                if !["name", "versions", "fields"].contains(&key.as_str()) {
                    self.diff(&format!("{here}:{key}"), format!("unexpected common-struct key `{key}`"));
                }
            }
            self.facts(&here, o, k, &["versions"]);
            self.fields(&format!("{here}/"), o.get("fields"), k.get("fields"));
        }
    }
}

/// `validVersions` without its last version, for an API whose latest version is unstable.
fn cut_latest(range: &str) -> String {
    let (lo, hi) = range.split_once('-').unwrap_or_else(|| panic!("cannot cut the only version of {range}"));
    let (lo, hi): (i32, i32) = (lo.parse().unwrap(), hi.parse().unwrap());
    if hi - 1 == lo { lo.to_string() } else { format!("{lo}-{}", hi - 1) }
}

#[test]
fn schema_files_match_kafka() {
    let kafka_dir = kafka_dir();
    let version = std::fs::read_to_string(kafka_dir.join(".version")).unwrap();
    let kafka: BTreeMap<_, _> = json_files(&kafka_dir, true)
        .into_iter()
        .filter(|(_, m)| {
            matches!(m.get("type").and_then(Value::as_str), Some("request" | "response" | "header"))
        })
        .collect();
    let ours = json_files(&root().join("src/codec/schema"), false);
    assert!(kafka.len() > 150, "only {} Kafka schemas in {}", kafka.len(), kafka_dir.display());

    // API keys whose latest version Kafka marks unstable (on the request).
    let unstable: BTreeSet<i64> = kafka
        .values()
        .filter(|m| m.get("latestVersionUnstable") == Some(&Value::Bool(true)))
        .filter_map(|m| m.get("apiKey").and_then(Value::as_i64))
        .collect();

    let mut problems = Vec::new();
    let mut checker = Checker { diffs: BTreeMap::new(), file: String::new() };
    for (stem, k) in &kafka {
        let excluded = EXCLUDED.iter().find(|(s, _)| s == stem);
        match (ours.get(stem), excluded) {
            (None, None) => problems.push(format!("{stem}: missing (Kafka has it)")),
            (Some(_), Some(_)) => problems.push(format!("{stem}: excluded in this test but present")),
            (None, Some(_)) => {
                if k.get("validVersions").and_then(Value::as_str) != Some("none") {
                    problems.push(format!("{stem}: excluded as removed, but Kafka has versions"));
                }
            }
            (Some(o), None) => {
                checker.file = stem.clone();
                let mut k = k.clone();
                if let Some(key) = k.get("apiKey").and_then(Value::as_i64)
                    && unstable.contains(&key)
                {
                    let all = k["validVersions"].as_str().unwrap().to_owned();
                    k.insert("validVersions".into(), Value::String(cut_latest(&all)));
                    if o.get("validVersions") != k.get("validVersions") {
                        let at = (stem.clone(), "/:validVersions".to_owned());
                        let what = format!(
                            "ours {:?}, Kafka {all:?} less its unstable latest version",
                            o.get("validVersions").map(text)
                        );
                        checker.diffs.insert(at, what);
                    }
                }
                checker.keys("/", o, &k, &[MESSAGE_FACTS, &["commonStructs"]].concat());
                checker.facts("/", o, &k, MESSAGE_FACTS);
                checker.about("/", o, &k);
                checker.fields("/", o.get("fields"), k.get("fields"));
                checker.common_structs(o.get("commonStructs"), k.get("commonStructs"));
            }
        }
    }
    for (stem, _) in EXCLUDED {
        if !kafka.contains_key(*stem) {
            problems.push(format!("{stem}: excluded in this test, but Kafka has no such schema"));
        }
    }
    for stem in ours.keys() {
        if !kafka.contains_key(stem) {
            problems.push(format!("{stem}: Kafka has no schema of this name"));
        }
    }

    let mut allowed_used = BTreeSet::new();
    for ((file, path), what) in &checker.diffs {
        match ALLOWED.iter().position(|(f, p, _)| f == file && p == path) {
            Some(i) => {
                allowed_used.insert(i);
            }
            None => problems.push(format!("{file} {path}: {what}")),
        }
    }
    for (i, (file, path, reason)) in ALLOWED.iter().enumerate() {
        if !allowed_used.contains(&i) {
            problems.push(format!("{file} {path}: allowed ({reason}) but no longer differs"));
        }
    }

    let missing = problems.iter().filter(|p| p.ends_with("missing (Kafka has it)")).count();
    assert!(
        problems.is_empty(),
        "{} schema problems against Kafka {} ({missing} files missing):\n{}",
        problems.len(),
        version.trim(),
        problems.join("\n")
    );
}
