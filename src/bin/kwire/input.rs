//! Reading frames from files and stdin: hex text in the usual dump layouts, or raw
//! binary, and splitting a stream of concatenated frames at their size prefixes.

use std::io::{IsTerminal, Read};
use std::path::Path;

use kwire::ApiKey;

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
    parse_hex(text)
}

/// Parses hex text. Tolerated around the digits: whitespace, `0x` prefixes, commas,
/// `#` comments, offset columns (`0000:` as xxd writes them, or hexdump -C's bare
/// offsets), and the character columns of xxd (`  ....`) and hexdump -C (`|....|`).
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let mut digits: Vec<u8> = Vec::new();
    let mut hexdump_c = false;
    for (n, raw_line) in text.lines().enumerate() {
        let line_no = n + 1;
        let mut line = raw_line.split('#').next().unwrap_or("");
        if let Some(bar) = line.find('|') {
            hexdump_c = true;
            line = &line[..bar];
        }
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut rest = line;
        let mut had_offset = false;
        if let Some((first, after)) = split_first_token(line) {
            let bare = first.strip_suffix(':');
            if bare.is_some_and(|o| is_hex(strip_0x(o)) && !strip_0x(o).is_empty()) {
                rest = after;
                had_offset = true;
            } else if hexdump_c && first.len() >= 7 && is_hex(first) {
                // hexdump -C: an offset column, or its closing line that holds only the length.
                rest = after;
                had_offset = true;
            }
        }
        if had_offset {
            rest = drop_char_column(rest);
        }
        for token in rest.split(|c: char| c.is_whitespace() || c == ',') {
            if token.is_empty() {
                continue;
            }
            let body = strip_0x(token);
            if !is_hex(body) || body.is_empty() {
                return Err(format!(
                    "line {line_no}: {token:?} is not hex; expected hex digits such as `00 0e`, \
                     optionally with 0x prefixes or an offset column like `0000:` (use --binary for raw bytes)"
                ));
            }
            if body.len() == 1 && token.len() == 3 {
                // `0xe` in a C-style list stands for one byte.
                digits.push(b'0');
            }
            digits.extend_from_slice(body.as_bytes());
        }
    }
    if !digits.len().is_multiple_of(2) {
        return Err(format!("the input has an odd number of hex digits ({})", digits.len()));
    }
    Ok(digits
        .chunks(2)
        .map(|pair| {
            // Every digit was checked above.
            let hi = (pair[0] as char).to_digit(16).unwrap_or(0);
            let lo = (pair[1] as char).to_digit(16).unwrap_or(0);
            (hi * 16 + lo) as u8
        })
        .collect())
}

fn split_first_token(line: &str) -> Option<(&str, &str)> {
    let line = line.trim_start();
    if line.is_empty() {
        return None;
    }
    match line.find(char::is_whitespace) {
        Some(i) => Some((&line[..i], &line[i..])),
        None => Some((line, "")),
    }
}

fn strip_0x(s: &str) -> &str {
    s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s)
}

fn is_hex(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Drops xxd's character column: the text after a run of two or more spaces whose
/// length equals the number of bytes before it.
fn drop_char_column(rest: &str) -> &str {
    let bytes = rest.as_bytes();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b' ' && bytes[i + 1] == b' ' {
            let mut j = i;
            while j < bytes.len() && bytes[j] == b' ' {
                j += 1;
            }
            let head = &rest[..i];
            let tail = &rest[j..];
            let head_digits: usize = head.split_whitespace().map(|t| strip_0x(t).len()).sum();
            let head_ok = head.split_whitespace().all(|t| is_hex(strip_0x(t)));
            if head_ok && !tail.is_empty() && head_digits == 2 * tail.chars().count() {
                return head;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    rest
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
        let end = match rest.first_chunk::<4>() {
            Some(prefix) => match usize::try_from(i32::from_be_bytes(*prefix)) {
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
    fn hex_layouts() {
        let plain = parse_hex("0000000e 0012\n0004 00").unwrap();
        assert_eq!(plain, [0, 0, 0, 0x0e, 0, 0x12, 0, 4, 0]);
        let offsets = parse_hex("0000: 00 00 00 0e 00 12  # comment\n0006: 00 04").unwrap();
        assert_eq!(offsets, [0, 0, 0, 0x0e, 0, 0x12, 0, 4]);
        let xxd = "00000000: 0000 000e 0012 0004 0000 0000 0000 0001  ................\n\
                   00000010: 0100                                     ..\n";
        assert_eq!(parse_hex(xxd).unwrap().len(), 18);
        let xxd_hexlike = "00000000: 6162 6364  abcd\n";
        assert_eq!(parse_hex(xxd_hexlike).unwrap(), b"abcd");
        let hexdump = "00000000  00 00 00 0e 00 12 00 04  00 00 00 00 00 00 00 01  |................|\n\
                       00000010  01 00                                             |..|\n\
                       00000012\n";
        assert_eq!(parse_hex(hexdump).unwrap().len(), 18);
        assert_eq!(parse_hex("0x00, 0x0e, 0xe").unwrap(), [0, 0x0e, 0x0e]);
        assert!(parse_hex("00 0g").unwrap_err().contains("line 1"));
        assert!(parse_hex("000").unwrap_err().contains("odd"));
    }

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
