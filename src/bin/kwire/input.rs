//! Reading frames from files and stdin: hex text in the usual dump layouts, or raw
//! binary, and splitting a stream of concatenated frames at their size prefixes.

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

/// Whether input is binary rather than hex text: it holds a NUL, a control character
/// other than whitespace, or a byte outside ASCII. A frame almost always starts with a
/// zero byte (sizes under 16 MiB), so binary frames are told apart at once.
pub fn looks_binary(raw: &[u8]) -> bool {
    raw.iter().any(|&b| b == 0 || b >= 0x7f || (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c)))
}

/// The frame bytes of an input: raw when `binary` is set or the input looks binary,
/// otherwise parsed as hex.
pub fn frame_bytes(raw: &[u8], binary: bool) -> Result<Vec<u8>, String> {
    if binary || looks_binary(raw) {
        return Ok(raw.to_vec());
    }
    // looks_binary() is false, so the input is ASCII.
    let text = std::str::from_utf8(raw).map_err(|_| "input is neither hex text nor binary".to_string())?;
    explain::parse_hex(text).map_err(|e| format!("{e} (use --binary for raw bytes)"))
}

/// One frame of a stream: where it starts in the input and its bytes, from the size
/// prefix to where the prefix says it ends (or to the end of the input, if that comes
/// first; the walker then reports the frame as truncated).
pub struct FrameSlice<'a> {
    /// Offset of the size prefix in the input.
    pub start: usize,
    /// The frame's bytes.
    pub bytes: &'a [u8],
}

/// Splits concatenated frames at their size prefixes.
pub fn split_frames(input: &[u8]) -> Vec<FrameSlice<'_>> {
    let mut frames = Vec::new();
    let mut pos = 0;
    while pos < input.len() {
        let rest = &input[pos..];
        let end = match kwire::frame::size_prefix(rest) {
            Some(size) => match usize::try_from(size) {
                Ok(size) => size.saturating_add(4).min(rest.len()),
                Err(_) => rest.len(),
            },
            None => rest.len(),
        };
        frames.push(FrameSlice { start: pos, bytes: &rest[..end] });
        pos += end;
    }
    frames
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
    fn splitting() {
        let two = [0, 0, 0, 1, 9, 0, 0, 0, 2, 7];
        let frames = split_frames(&two);
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].bytes, [0, 0, 0, 1, 9]);
        assert_eq!((frames[1].start, frames[1].bytes.len()), (5, 5));
        assert_eq!(split_frames(&[0xff, 0xff, 0xff, 0xff, 1]).len(), 1);
    }

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
