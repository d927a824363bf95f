//! The command's reading of its JSON input beyond a message body (which
//! `kwire::reflect::json::from_json` reads): the frame's envelope and header.

use kwire::reflect::json::parse_base64;
use serde_json::Value as Json;

/// A short description of a JSON value for error messages.
pub fn describe(v: &Json) -> String {
    match v {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::String(s) if s.chars().count() > 30 => "a string".into(),
        Json::String(s) => format!("the string {s:?}"),
        Json::Array(_) => "an array".into(),
        Json::Object(_) => "an object".into(),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

/// Reads an integer as Kafka's JSON reader does: a JSON integer, or a string holding a
/// decimal or `0x` hexadecimal number, within `min..=max`.
pub fn integer(v: &Json, min: i128, max: i128, ty: &str, path: &str) -> Result<i128, String> {
    let n: Option<i128> = match v {
        Json::Number(n) => n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)),
        Json::String(s) => {
            let (neg, digits) = match s.strip_prefix('-') {
                Some(d) => (true, d),
                None => (false, s.as_str()),
            };
            let parsed = match digits.strip_prefix("0x") {
                Some(hex) => i128::from_str_radix(hex, 16).ok(),
                None => digits.parse::<i128>().ok(),
            };
            parsed.map(|p| if neg { -p } else { p })
        }
        _ => None,
    };
    let Some(n) = n else {
        return Err(format!("{path}: expected an integer ({ty}), found {}", describe(v)));
    };
    if n < min || n > max {
        return Err(format!("{path}: {n} does not fit in {ty} ({min} to {max})"));
    }
    Ok(n)
}

/// Reads `_unknownTaggedFields`: `[{"tag": n, "data": base64}, ...]`, tags ascending and
/// none of the `known` ones.
pub fn unknown_tags(v: &Json, path: &str, known: &[u32]) -> Result<Vec<(u32, Vec<u8>)>, String> {
    let items = v.as_array().ok_or_else(|| {
        format!("{path}: expected an array of {{\"tag\": n, \"data\": base64}}, found {}", describe(v))
    })?;
    let mut out: Vec<(u32, Vec<u8>)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let obj =
            item.as_object().ok_or_else(|| format!("{p}: expected an object, found {}", describe(item)))?;
        if let Some(extra) = obj.keys().find(|k| *k != "tag" && *k != "data") {
            return Err(format!(
                "{p}.{extra}: unknown key; an unknown tagged field has only \"tag\" and \"data\""
            ));
        }
        let tag_value = obj.get("tag").ok_or_else(|| format!("{p}.tag: missing"))?;
        let tag = integer(tag_value, 0, i128::from(u32::MAX), "uint32", &join(&p, "tag"))? as u32;
        let data = match obj.get("data") {
            Some(Json::String(s)) => parse_base64(s).ok_or_else(|| format!("{p}.data: not valid base64"))?,
            Some(other) => {
                return Err(format!("{p}.data: expected a base64 string, found {}", describe(other)));
            }
            None => return Err(format!("{p}.data: missing")),
        };
        if known.contains(&tag) {
            return Err(format!(
                "{p}.tag: tag {tag} belongs to a field this struct knows; set that field instead"
            ));
        }
        if out.last().is_some_and(|(prev, _)| tag <= *prev) {
            return Err(format!(
                "{p}.tag: tags must be in ascending order without repeats ({tag} follows {})",
                out.last().map_or(0, |l| l.0)
            ));
        }
        if data.len() >= i32::MAX as usize {
            return Err(format!("{p}.data: too long"));
        }
        out.push((tag, data));
    }
    Ok(out)
}
