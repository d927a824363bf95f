//! [`parse_hex`]: frames as people paste them, in hex; [`parse_input`]: hex or raw bytes;
//! [`split_frames`]: one frame after another.

use alloc::borrow::Cow;
use alloc::format;
use alloc::vec::Vec;

use super::Problem;

/// Frames as given: `input` itself when `binary` is set or it looks binary, otherwise hex
/// text ([`parse_hex`]). Input looks binary when it holds a NUL, a control character other
/// than whitespace, or a byte outside ASCII: a frame almost always starts with a zero byte
/// (sizes under 16 MiB), so binary frames are told apart at once.
pub fn parse_input(input: &[u8], binary: bool) -> Result<Cow<'_, [u8]>, Problem> {
    let text = core::str::from_utf8(input).ok().filter(|t| {
        !t.bytes().any(|b| b == 0 || b >= 0x7f || (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c)))
    });
    match text {
        Some(text) if !binary => parse_hex(text).map(Cow::Owned),
        _ => Ok(Cow::Borrowed(input)),
    }
}

/// Concatenated frames, split at their size prefixes: each frame's offset in `input` and
/// its bytes, from its size prefix to where the prefix says it ends, or to the end of
/// `input` if that comes first (the walker then reports the frame as truncated).
pub fn split_frames(input: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut pos = 0;
    core::iter::from_fn(move || {
        let rest = input.get(pos..).filter(|r| !r.is_empty())?;
        let declared = crate::codec::frame::size_prefix(rest).and_then(|s| usize::try_from(s).ok());
        let end = declared.map_or(rest.len(), |size| size.saturating_add(4).min(rest.len()));
        let start = pos;
        pos += end;
        Some((start, &rest[..end]))
    })
}

/// Parses hex text. Tolerated around the digits: whitespace, `0x` prefixes, commas,
/// `#` comments, offset columns (`0000:` as xxd writes them, or hexdump -C's bare
/// offsets), and the character columns of xxd (`  ....`) and hexdump -C (`|....|`).
/// The problem names the line at fault and the offset in `text` where it starts.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, Problem> {
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
                return Err(Problem {
                    // Where the token starts in the text.
                    offset: token.as_ptr() as usize - text.as_ptr() as usize,
                    path: format!("line {line_no}"),
                    message: format!(
                        "{token:?} is not hex; expected hex digits such as `00 0e`, optionally with 0x prefixes or \
                         an offset column like `0000:`"
                    ),
                    kind: None,
                });
            }
            if body.len() == 1 && token.len() == 3 {
                // `0xe` in a C-style list stands for one byte.
                digits.push(b'0');
            }
            digits.extend_from_slice(body.as_bytes());
        }
    }
    if !digits.len().is_multiple_of(2) {
        return Err(Problem {
            offset: text.len(),
            path: "input".into(),
            message: format!("an odd number of hex digits ({})", digits.len()),
            kind: None,
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitting_and_telling_binary_from_hex() {
        let two = [0, 0, 0, 1, 9, 0, 0, 0, 2, 7];
        let frames: Vec<_> = split_frames(&two).collect();
        assert_eq!(frames, [(0, &two[..5]), (5, &two[5..])]);
        assert_eq!(split_frames(&[0xff, 0xff, 0xff, 0xff, 1]).count(), 1);
        assert_eq!(split_frames(&[]).count(), 0);
        assert_eq!(parse_input(&two, false).unwrap(), &two[..]);
        assert_eq!(parse_input(b"00 00 00 01 09", false).unwrap(), &two[..5]);
        assert_eq!(parse_input(b"00", true).unwrap(), &b"00"[..]);
    }

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
        let bad = parse_hex("00 0g").unwrap_err();
        assert_eq!((bad.offset, bad.path.as_str()), (3, "line 1"), "{bad}");
        assert!(parse_hex("000").unwrap_err().message.contains("odd"));
    }
}
