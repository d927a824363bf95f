//! [`check_json`]: whether bytes are one JSON text (RFC 8259), without building a tree.

use core::fmt;

/// The deepest nesting of arrays and objects (an empty one innermost aside) [`check_json`]
/// accepts.
pub const MAX_JSON_DEPTH: usize = 1024;

/// Why bytes are not a JSON text: what was wrong, and at which byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct JsonError {
    /// What was wrong.
    pub kind: JsonErrorKind,
    /// The byte offset where it was found.
    pub offset: usize,
}

/// What was wrong with a JSON text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JsonErrorKind {
    /// The bytes are not UTF-8.
    InvalidUtf8,
    /// The text ended inside a value.
    UnexpectedEnd,
    /// A byte that cannot start or continue what was being read.
    Unexpected(u8),
    /// A control character (below U+0020) inside a string.
    ControlInString(u8),
    /// A backslash escape other than `\" \\ \/ \b \f \n \r \t \uXXXX`.
    InvalidEscape,
    /// A `\u` escape of a UTF-16 surrogate that is not part of a pair.
    LoneSurrogate,
    /// Arrays and objects nested deeper than [`MAX_JSON_DEPTH`].
    TooDeep,
    /// Bytes after the value (other than whitespace).
    TrailingBytes,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.offset;
        match self.kind {
            JsonErrorKind::InvalidUtf8 => write!(f, "invalid UTF-8 at byte {at}"),
            JsonErrorKind::UnexpectedEnd => write!(f, "the text ends inside a value (byte {at})"),
            JsonErrorKind::Unexpected(b) if b.is_ascii_graphic() => {
                write!(f, "unexpected '{}' at byte {at}", b as char)
            }
            JsonErrorKind::Unexpected(b) => write!(f, "unexpected byte 0x{b:02x} at byte {at}"),
            JsonErrorKind::ControlInString(b) => {
                write!(f, "control character 0x{b:02x} in a string at byte {at}")
            }
            JsonErrorKind::InvalidEscape => write!(f, "invalid escape at byte {at}"),
            JsonErrorKind::LoneSurrogate => write!(f, "unpaired UTF-16 surrogate escape at byte {at}"),
            JsonErrorKind::TooDeep => {
                write!(f, "nested deeper than {MAX_JSON_DEPTH} levels at byte {at}")
            }
            JsonErrorKind::TrailingBytes => write!(f, "bytes after the value at byte {at}"),
        }
    }
}

impl core::error::Error for JsonError {}

/// Checks that `bytes` are exactly one JSON text (RFC 8259: any value, with whitespace
/// around it), without building anything: one pass, no allocation, a nesting stack of
/// [`MAX_JSON_DEPTH`] bits on the stack.
///
/// Strict where RFC 8259 leaves a choice, as serde_json is: the text must be UTF-8, and a
/// `\u` escape of a UTF-16 surrogate must be one of a high-low pair. Numbers are checked
/// for their syntax only (any magnitude and precision is accepted). A byte order mark is
/// not whitespace.
///
/// ```
/// use kwire::filter::{check_json, JsonErrorKind};
///
/// assert!(check_json(br#" {"id": 7, "tags": ["a", "\u00e9"], "ok": true} "#).is_ok());
/// let e = check_json(br#"{"id": 7,}"#).unwrap_err();
/// assert_eq!((e.kind, e.offset), (JsonErrorKind::Unexpected(b'}'), 9));
/// assert!(check_json(b"").is_err());
/// ```
pub fn check_json(bytes: &[u8]) -> Result<(), JsonError> {
    if let Err(e) = core::str::from_utf8(bytes) {
        return Err(JsonError { kind: JsonErrorKind::InvalidUtf8, offset: e.valid_up_to() });
    }
    Checker { b: bytes, i: 0, stack: [0; MAX_JSON_DEPTH / 64], depth: 0 }.run()
}

struct Checker<'a> {
    b: &'a [u8],
    i: usize,
    /// One bit a level: 1 for an object, 0 for an array.
    stack: [u64; MAX_JSON_DEPTH / 64],
    depth: usize,
}

impl Checker<'_> {
    fn err<T>(&self, kind: JsonErrorKind) -> Result<T, JsonError> {
        Err(JsonError { kind, offset: self.i })
    }

    /// The error for the byte at the cursor (or the end).
    fn unexpected<T>(&self) -> Result<T, JsonError> {
        match self.b.get(self.i) {
            Some(&c) => self.err(JsonErrorKind::Unexpected(c)),
            None => self.err(JsonErrorKind::UnexpectedEnd),
        }
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Enters an array or object that opened at byte `at`.
    fn push(&mut self, object: bool, at: usize) -> Result<(), JsonError> {
        if self.depth == MAX_JSON_DEPTH {
            return Err(JsonError { kind: JsonErrorKind::TooDeep, offset: at });
        }
        let (word, bit) = (self.depth / 64, self.depth % 64);
        if object {
            self.stack[word] |= 1 << bit;
        } else {
            self.stack[word] &= !(1 << bit);
        }
        self.depth += 1;
        Ok(())
    }

    fn in_object(&self) -> bool {
        let top = self.depth - 1;
        self.stack[top / 64] & (1 << (top % 64)) != 0
    }

    fn run(mut self) -> Result<(), JsonError> {
        'value: loop {
            self.ws();
            match self.peek() {
                Some(b'{') => {
                    let at = self.i;
                    self.i += 1;
                    self.ws();
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                    } else {
                        self.push(true, at)?;
                        self.member_name()?;
                        continue 'value;
                    }
                }
                Some(b'[') => {
                    let at = self.i;
                    self.i += 1;
                    self.ws();
                    if self.peek() == Some(b']') {
                        self.i += 1;
                    } else {
                        self.push(false, at)?;
                        continue 'value;
                    }
                }
                Some(b'"') => self.string()?,
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                Some(b'-' | b'0'..=b'9') => self.number()?,
                _ => return self.unexpected(),
            }
            // After a value: close containers, or go on to the next element.
            loop {
                self.ws();
                if self.depth == 0 {
                    return if self.i == self.b.len() {
                        Ok(())
                    } else {
                        self.err(JsonErrorKind::TrailingBytes)
                    };
                }
                let object = self.in_object();
                match self.peek() {
                    Some(b',') => {
                        self.i += 1;
                        if object {
                            self.ws();
                            self.member_name()?;
                        }
                        continue 'value;
                    }
                    Some(b'}') if object => {
                        self.i += 1;
                        self.depth -= 1;
                    }
                    Some(b']') if !object => {
                        self.i += 1;
                        self.depth -= 1;
                    }
                    _ => return self.unexpected(),
                }
            }
        }
    }

    /// An object member's name and its colon (the cursor at the name's quote).
    fn member_name(&mut self) -> Result<(), JsonError> {
        if self.peek() != Some(b'"') {
            return self.unexpected();
        }
        self.string()?;
        self.ws();
        if self.peek() != Some(b':') {
            return self.unexpected();
        }
        self.i += 1;
        Ok(())
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), JsonError> {
        for &w in word {
            if self.peek() != Some(w) {
                return self.unexpected();
            }
            self.i += 1;
        }
        Ok(())
    }

    fn digits(&mut self) -> Result<(), JsonError> {
        if !matches!(self.peek(), Some(b'0'..=b'9')) {
            return self.unexpected();
        }
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        Ok(())
    }

    fn number(&mut self) -> Result<(), JsonError> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => self.digits()?,
            _ => return self.unexpected(),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            self.digits()?;
        }
        Ok(())
    }

    fn hex4(&mut self) -> Result<u16, JsonError> {
        let mut v = 0u16;
        for _ in 0..4 {
            let d = match self.peek() {
                Some(c @ b'0'..=b'9') => c - b'0',
                Some(c @ b'a'..=b'f') => c - b'a' + 10,
                Some(c @ b'A'..=b'F') => c - b'A' + 10,
                Some(_) => return self.err(JsonErrorKind::InvalidEscape),
                None => return self.err(JsonErrorKind::UnexpectedEnd),
            };
            v = v << 4 | u16::from(d);
            self.i += 1;
        }
        Ok(v)
    }

    /// A string (the cursor at its opening quote). The bytes are UTF-8 already.
    fn string(&mut self) -> Result<(), JsonError> {
        self.i += 1;
        loop {
            // The common case: plain bytes.
            let Some(n) = special_byte(&self.b[self.i..]) else {
                self.i = self.b.len();
                return self.err(JsonErrorKind::UnexpectedEnd);
            };
            self.i += n;
            match self.b[self.i] {
                b'"' => {
                    self.i += 1;
                    return Ok(());
                }
                b'\\' => {
                    let at = self.i;
                    self.i += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
                        Some(b'u') => {
                            self.i += 1;
                            let unit = self.hex4()?;
                            if (0xDC00..=0xDFFF).contains(&unit) {
                                return Err(JsonError { kind: JsonErrorKind::LoneSurrogate, offset: at });
                            }
                            if (0xD800..=0xDBFF).contains(&unit) {
                                // A low surrogate escape must follow.
                                if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                                    return Err(JsonError { kind: JsonErrorKind::LoneSurrogate, offset: at });
                                }
                                self.i += 2;
                                let low = self.hex4()?;
                                if !(0xDC00..=0xDFFF).contains(&low) {
                                    return Err(JsonError { kind: JsonErrorKind::LoneSurrogate, offset: at });
                                }
                            }
                        }
                        Some(_) => return self.err(JsonErrorKind::InvalidEscape),
                        None => return self.err(JsonErrorKind::UnexpectedEnd),
                    }
                }
                c => return self.err(JsonErrorKind::ControlInString(c)),
            }
        }
    }
}

/// Where the first `"`, `\\` or control character (below 0x20) of `bytes` is: eight bytes
/// at a time (SWAR), then byte by byte.
#[inline]
fn special_byte(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in chunks.by_ref() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        // A byte's high bit is set where it is zero (after the xor) or below 0x20. Borrows
        // can flag a byte above a true match, never below one: the lowest flag is exact.
        let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
        let flags = zero(w ^ (ONES * u64::from(b'"')))
            | zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGHS);
        if flags != 0 {
            return Some(at + (flags.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = chunks.remainder();
    tail.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).map(|n| at + n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn special_bytes_are_found_at_every_position() {
        // Every position of a 0-24 byte run, each special byte, beside bytes that border
        // them (0x1f/0x20, 0x21/0x23, 0x5b/0x5d, 0x80, 0xff) before and after.
        for len in 0..24 {
            for at in 0..len {
                for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                    for filler in [b'a', 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x80, 0xff] {
                        let mut v = alloc::vec![filler; len];
                        v[at] = special;
                        assert_eq!(special_byte(&v), Some(at), "{v:?}");
                        // A second one after it changes nothing.
                        if at + 1 < len {
                            v[len - 1] = b'"';
                            assert_eq!(special_byte(&v), Some(at), "{v:?}");
                        }
                    }
                }
            }
            for filler in [b'a', 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xff] {
                assert_eq!(special_byte(&alloc::vec![filler; len]), None);
            }
        }
    }

    fn ok(s: &str) -> bool {
        check_json(s.as_bytes()).is_ok()
    }

    #[test]
    fn accepts_every_kind_of_value() {
        for s in [
            "0",
            "-0",
            "1.5e+10",
            "-12.25E-3",
            "123456789012345678901234567890",
            "1e400",
            "true",
            "false",
            "null",
            "\"\"",
            "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\uD83D\\uDE00\"",
            "\"é😀\"",
            "[]",
            "{}",
            " [1, [2, [3, {}]], {\"a\": [], \"b\": {\"c\": null}}] ",
            "\t\r\n{\"\":0}\n",
        ] {
            assert!(ok(s), "{s:?}");
        }
    }

    #[test]
    fn rejects_what_rfc_8259_does_not_allow() {
        let cases: &[(&[u8], JsonErrorKind, usize)] = &[
            (b"", JsonErrorKind::UnexpectedEnd, 0),
            (b"   ", JsonErrorKind::UnexpectedEnd, 3),
            (b"01", JsonErrorKind::TrailingBytes, 1),
            (b"1.", JsonErrorKind::UnexpectedEnd, 2),
            (b".5", JsonErrorKind::Unexpected(b'.'), 0),
            (b"+1", JsonErrorKind::Unexpected(b'+'), 0),
            (b"-", JsonErrorKind::UnexpectedEnd, 1),
            (b"1e", JsonErrorKind::UnexpectedEnd, 2),
            (b"1e+", JsonErrorKind::UnexpectedEnd, 3),
            (b"tru", JsonErrorKind::UnexpectedEnd, 3),
            (b"nul1", JsonErrorKind::Unexpected(b'1'), 3),
            (b"NaN", JsonErrorKind::Unexpected(b'N'), 0),
            (b"[1,]", JsonErrorKind::Unexpected(b']'), 3),
            (b"[1 2]", JsonErrorKind::Unexpected(b'2'), 3),
            (b"{\"a\"}", JsonErrorKind::Unexpected(b'}'), 4),
            (b"{\"a\":1,}", JsonErrorKind::Unexpected(b'}'), 7),
            (b"{a:1}", JsonErrorKind::Unexpected(b'a'), 1),
            (b"{\"a\":1]", JsonErrorKind::Unexpected(b']'), 6),
            (b"[1}", JsonErrorKind::Unexpected(b'}'), 2),
            (b"[", JsonErrorKind::UnexpectedEnd, 1),
            (b"{\"a\":", JsonErrorKind::UnexpectedEnd, 5),
            (b"\"abc", JsonErrorKind::UnexpectedEnd, 4),
            (b"\"a\tb\"", JsonErrorKind::ControlInString(b'\t'), 2),
            (b"\"\\x\"", JsonErrorKind::InvalidEscape, 2),
            (b"\"\\u12G4\"", JsonErrorKind::InvalidEscape, 5),
            (b"\"\\uD800\"", JsonErrorKind::LoneSurrogate, 1),
            (b"\"\\uDC00\"", JsonErrorKind::LoneSurrogate, 1),
            (b"\"\\uD800\\u0041\"", JsonErrorKind::LoneSurrogate, 1),
            (b"\"\xff\"", JsonErrorKind::InvalidUtf8, 1),
            (b"\xef\xbb\xbf{}", JsonErrorKind::Unexpected(0xef), 0),
            (b"{} {}", JsonErrorKind::TrailingBytes, 3),
            (b"'a'", JsonErrorKind::Unexpected(b'\''), 0),
        ];
        for &(input, kind, offset) in cases {
            assert_eq!(
                check_json(input),
                Err(JsonError { kind, offset }),
                "{:?}",
                alloc::string::String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn nesting_is_limited_without_recursion() {
        let deep = |n: usize| {
            let mut v: Vec<u8> = Vec::new();
            v.extend(core::iter::repeat_n(b'[', n));
            v.push(b'0');
            v.extend(core::iter::repeat_n(b']', n));
            v
        };
        assert!(check_json(&deep(MAX_JSON_DEPTH)).is_ok());
        let e = check_json(&deep(MAX_JSON_DEPTH + 1)).unwrap_err();
        assert_eq!((e.kind, e.offset), (JsonErrorKind::TooDeep, MAX_JSON_DEPTH));
        // Objects and arrays interleaved past a 64-level word.
        let mut v: Vec<u8> = Vec::new();
        for _ in 0..100 {
            v.extend_from_slice(b"{\"a\":[");
        }
        v.push(b'1');
        for _ in 0..100 {
            v.extend_from_slice(b"]}");
        }
        assert!(check_json(&v).is_ok());
        // The wrong closer deep inside is found.
        let n = v.len();
        v[n - 49] = b']';
        assert!(check_json(&v).is_err());
    }
}
