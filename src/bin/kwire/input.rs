//! Reading frames from files and stdin (hex text in the usual dump layouts, or raw
//! binary: `explain::parse_input`), and naming APIs.

use std::borrow::Cow;
use std::io::{IsTerminal, Read};
use std::path::Path;

use kwire::ApiKey;
use kwire::reflect::explain;

/// Reads a whole file, or stdin for `None` or `-`.
pub fn read_all(path: Option<&Path>) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    match path {
        Some(p) if p != Path::new("-") => {
            buf = std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
        }
        _ => {
            let mut stdin = std::io::stdin();
            if stdin.is_terminal() {
                eprintln!("kwire: reading standard input; end it with Ctrl-D (or give a file name)");
            }
            stdin.read_to_end(&mut buf).map_err(|e| format!("cannot read stdin: {e}"))?;
        }
    }
    Ok(buf)
}

/// The input to read as a stream: the file, or stdin when absent or `-`.
pub fn open(path: Option<&Path>) -> Result<Box<dyn Read>, String> {
    match path {
        Some(p) if p != Path::new("-") => {
            let f = std::fs::File::open(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
            Ok(Box::new(f))
        }
        _ => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                eprintln!("kwire: reading standard input; end it with Ctrl-D (or give a file name)");
            }
            Ok(Box::new(stdin.lock()))
        }
    }
}

/// The frame bytes of an input (`explain::parse_input`).
pub fn frame_bytes(raw: &[u8], binary: bool) -> Result<Cow<'_, [u8]>, String> {
    explain::parse_input(raw, binary).map_err(|e| format!("{e} (use --binary for raw bytes)"))
}

/// Parses an API given by key (`18`) or name (`ApiVersions`, `api-versions`,
/// `api_versions`, any case).
pub fn parse_api_key(s: &str) -> Result<ApiKey, String> {
    if let Ok(n) = s.trim().parse::<i16>() {
        return ApiKey::from_i16(n)
            .ok_or_else(|| format!("API key {n} is not supported; {}", supported_list()));
    }
    ApiKey::from_name(s).ok_or_else(|| format!("unknown API {s:?}; {}", supported_list()))
}

/// The supported API keys, for error messages.
pub fn supported_list() -> String {
    let keys: Vec<String> = ApiKey::ALL.iter().map(|k| format!("{} {}", k.to_i16(), k.name())).collect();
    format!("supported: {}", keys.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_names() {
        assert_eq!(parse_api_key("18"), Ok(ApiKey::ApiVersions));
        assert_eq!(parse_api_key("api-versions"), Ok(ApiKey::ApiVersions));
        assert_eq!(parse_api_key("ListOffsets"), Ok(ApiKey::ListOffsets));
        assert!(parse_api_key("99").is_err());
        assert_eq!(parse_api_key("Produce"), Ok(ApiKey::Produce));
        assert!(parse_api_key("NoSuchApi").is_err());
    }
}
