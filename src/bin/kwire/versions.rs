//! `kwire versions`: the APIs kwire supports, with their request and response versions,
//! flexible versions and header versions, from the `ApiKey` table.

use kwire::{ApiKey, Versions};

const AFTER_HELP: &str = "\
Examples:
  kwire versions
  kwire versions --format json

Columns: the API and its key; the request and response versions kwire decodes and
encodes; the versions that use the flexible encoding (compact strings and arrays,
tagged fields); and the header version used with each body version (request
headers v1/v2, response headers v0/v1; ApiVersions responses always use v0).";

/// List the supported APIs and their versions.
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// `table` (default) or `json`: an array of {"name", "key", "min", "max", "flexible_min"},
    /// `flexible_min` being null for an API with no flexible version.
    #[arg(long, default_value = "table")]
    format: String,
}

/// A range for a table cell: `Versions`' own text, with `-` for none.
fn range(v: Versions) -> String {
    if v.is_empty() { "-".into() } else { v.to_string() }
}

/// Which header version goes with which body versions, e.g. `v1: 0-2, v2: 3-4`.
fn header_runs(versions: Versions, header: impl Fn(i16) -> i16) -> String {
    let mut runs: Vec<(i16, i16, i16)> = Vec::new();
    for v in versions.min..=versions.max {
        let h = header(v);
        match runs.last_mut() {
            Some((hv, _, last)) if *hv == h => *last = v,
            _ => runs.push((h, v, v)),
        }
    }
    let parts: Vec<String> =
        runs.iter().map(|(h, a, b)| format!("v{h}: {}", range(Versions::new(*a, *b)))).collect();
    parts.join(", ")
}

/// The table as text.
pub fn table() -> String {
    let mut rows = vec![[
        "API".to_string(),
        "key".into(),
        "requests".into(),
        "responses".into(),
        "flexible".into(),
        "request header".into(),
        "response header".into(),
    ]];
    for &key in ApiKey::ALL {
        let flexible = key.flexible_versions();
        let within = Versions::new(flexible.min, flexible.max.min(key.request_versions().max));
        rows.push([
            key.name().into(),
            key.to_i16().to_string(),
            range(key.request_versions()),
            range(key.response_versions()),
            range(within),
            header_runs(key.request_versions(), |v| key.request_header_version(v)),
            header_runs(key.response_versions(), |v| key.response_header_version(v)),
        ]);
    }
    let widths: Vec<usize> = (0..7).map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c == 1 {
                line.push_str(&format!("{cell:>w$}  ", w = widths[c]));
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Runs `kwire versions`.
pub fn run(args: Args) -> Result<(), String> {
    match args.format.as_str() {
        "table" => print!("{}", table()),
        "json" => println!("{}", json()),
        other => return Err(format!("--format {other}: expected table or json")),
    }
    Ok(())
}

/// Every API as JSON: name, key, the request version range and the first flexible version.
pub fn json() -> String {
    let apis: Vec<serde_json::Value> = ApiKey::ALL
        .iter()
        .map(|&key| {
            let (versions, flexible) = (key.request_versions(), key.flexible_versions());
            let flexible_min = if flexible.min <= flexible.max { Some(flexible.min) } else { None };
            serde_json::json!({
                "name": key.name(),
                "key": key.to_i16(),
                "min": versions.min,
                "max": versions.max,
                "flexible_min": flexible_min,
            })
        })
        .collect();
    serde_json::to_string_pretty(&apis).unwrap_or_default()
}
