//! The checked reader.

use super::{MAX_STRING_LEN, TaggedSection};
use crate::codec::error::{DecodeError, DecodeErrorKind};
use crate::codec::types::Uuid;

/// A cursor over input bytes that reports errors with absolute offsets.
///
/// Views are checked with it once, when they are built; the reference decoder reads with
/// it field by field. Every short read is an error, never a panic.
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    /// No struct read so far, other than the body, had a tagged field (see
    /// [`crate::codec::types::Ver::uniform`]).
    uniform: bool,
}

impl<'a> Reader<'a> {
    /// A reader over `buf`; offsets in errors count from its first byte.
    pub const fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0, base: 0, uniform: true }
    }

    /// A reader over `buf`, which starts `base` bytes into the message (for offsets in
    /// errors).
    pub const fn with_base(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base, uniform: true }
    }

    /// Whether no struct seen, other than the body, had a tagged field.
    pub(crate) const fn uniform(&self) -> bool {
        self.uniform
    }

    /// Records that a struct other than the body had tagged fields.
    pub(crate) fn not_uniform(&mut self) {
        self.uniform = false;
    }

    /// The byte `ahead` bytes after the current position, if there is one.
    #[inline]
    pub(crate) fn peek(&self, ahead: usize) -> Option<u8> {
        self.buf.get(self.pos.wrapping_add(ahead)).copied()
    }

    /// The next `n` bytes (fewer if fewer are left), without moving past them.
    #[inline]
    pub(crate) fn rest(&self, n: usize) -> &'a [u8] {
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        rest.get(..n).unwrap_or(rest)
    }

    /// Moves past `n` bytes the caller has already seen to be there.
    #[inline]
    pub(crate) fn advance(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.buf.len());
    }

    /// Position within this reader's slice.
    pub const fn pos(&self) -> usize {
        self.pos
    }

    /// Offset of the current position within the whole message.
    pub const fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// Bytes left.
    pub const fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The bytes from position `start` (as returned by [`Reader::pos`]) up to the current
    /// position.
    pub fn since(&self, start: usize) -> &'a [u8] {
        self.buf.get(start..self.pos).unwrap_or_default()
    }

    /// An error of `kind` at the current position.
    pub const fn error(&self, kind: DecodeErrorKind, field: &'static str) -> DecodeError {
        DecodeError::new(kind, self.base + self.pos, field)
    }

    /// Fails with [`DecodeErrorKind::TrailingBytes`] unless every byte was read.
    pub const fn finish(&self, field: &'static str) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(self.error(DecodeErrorKind::TrailingBytes(n as u32), field)),
        }
    }

    /// Takes the next `n` bytes.
    #[inline]
    pub fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], DecodeError> {
        match self.buf.get(self.pos..).and_then(|rest| rest.get(..n)) {
            Some(bytes) => {
                self.pos += n;
                Ok(bytes)
            }
            None => Err(self.truncated(n, field)),
        }
    }

    /// Takes the next `n` bytes as a reader of their own (offsets stay absolute).
    pub fn sub(&mut self, n: usize, field: &'static str) -> Result<Reader<'a>, DecodeError> {
        let base = self.offset();
        Ok(Reader::with_base(self.take(n, field)?, base))
    }

    /// The error for `needed` bytes where fewer are left.
    ///
    /// The out-of-line paths of the reader (errors, long varints, non-empty tagged sections)
    /// take its parts (`buf`, `pos`, `base`) as values and return the new position, never
    /// `&self` or a copy of the reader: a reader whose address reaches a call that LLVM does
    /// not inline is kept in memory across the whole check pass that holds it, and every
    /// field then loads and stores its position.
    #[inline]
    fn truncated(&self, needed: usize, field: &'static str) -> DecodeError {
        truncated(self.offset(), self.remaining(), needed, field)
    }

    #[inline]
    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        match self.buf.get(self.pos..).and_then(|rest| rest.first_chunk::<N>()) {
            Some(bytes) => {
                self.pos += N;
                Ok(*bytes)
            }
            None => Err(self.truncated(N, field)),
        }
    }

    /// Reads an `int8`.
    #[inline]
    pub fn i8(&mut self, field: &'static str) -> Result<i8, DecodeError> {
        self.array(field).map(i8::from_be_bytes)
    }

    /// Reads an `int16`.
    #[inline]
    pub fn i16(&mut self, field: &'static str) -> Result<i16, DecodeError> {
        self.array(field).map(i16::from_be_bytes)
    }

    /// Reads an `int32`.
    #[inline]
    pub fn i32(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        self.array(field).map(i32::from_be_bytes)
    }

    /// Reads an `int64`.
    #[inline]
    pub fn i64(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        self.array(field).map(i64::from_be_bytes)
    }

    /// Reads a `uint16`.
    #[inline]
    pub fn u16(&mut self, field: &'static str) -> Result<u16, DecodeError> {
        self.array(field).map(u16::from_be_bytes)
    }

    /// Reads a `uint32`.
    #[inline]
    pub fn u32(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        self.array(field).map(u32::from_be_bytes)
    }

    /// Reads a `float64`.
    #[inline]
    pub fn f64(&mut self, field: &'static str) -> Result<f64, DecodeError> {
        self.array(field).map(f64::from_be_bytes)
    }

    /// Reads a `bool`: as in Apache Kafka, any non-zero byte is `true`.
    #[inline]
    pub fn bool(&mut self, field: &'static str) -> Result<bool, DecodeError> {
        self.array::<1>(field).map(|[b]| b != 0)
    }

    /// Reads a `uuid`.
    #[inline]
    pub fn uuid(&mut self, field: &'static str) -> Result<Uuid, DecodeError> {
        self.array(field).map(Uuid)
    }

    /// Reads an unsigned varint of at most 32 bits: at most five bytes, and the fifth may
    /// carry only the top four bits.
    #[inline]
    pub fn uvarint(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        if let Some(&b) = self.buf.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return Ok(u32::from(b));
        }
        let (value, pos) = Self::long_uvarint(self.buf, self.pos, self.base, field)?;
        self.pos = pos;
        Ok(value)
    }

    /// [`Reader::uvarint`] of more than one byte, out of line; it takes the reader's parts,
    /// not the reader, and returns the position after the varint (see [`Reader::truncated`]).
    #[inline(never)]
    fn long_uvarint(
        buf: &'a [u8],
        pos: usize,
        base: usize,
        field: &'static str,
    ) -> Result<(u32, usize), DecodeError> {
        let mut r = Reader { buf, pos, base, uniform: true };
        let start = r.pos;
        let mut value: u32 = 0;
        for i in 0..5 {
            let Some(&b) = r.buf.get(r.pos) else {
                return Err(r.truncated(1, field));
            };
            r.pos += 1;
            if i == 4 && b > 0x0f {
                let kind = if b & 0x80 != 0 {
                    DecodeErrorKind::VarintTooLong
                } else {
                    DecodeErrorKind::VarintOverflow
                };
                r.pos = start;
                return Err(r.error(kind, field));
            }
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok((value, r.pos));
            }
        }
        // Not reached: the fifth byte either ended the varint or was refused above.
        r.pos = start;
        Err(r.error(DecodeErrorKind::VarintTooLong, field))
    }

    /// Reads an unsigned varlong of at most 64 bits (at most ten bytes).
    pub fn uvarlong(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        let start = self.pos;
        let mut value: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                let err = self.truncated(1, field);
                self.pos = start;
                return Err(err);
            };
            self.pos += 1;
            if i == 9 && b > 0x01 {
                let kind = if b & 0x80 != 0 {
                    DecodeErrorKind::VarintTooLong
                } else {
                    DecodeErrorKind::VarintOverflow
                };
                self.pos = start;
                return Err(self.error(kind, field));
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        let err = self.error(DecodeErrorKind::VarintTooLong, field);
        self.pos = start;
        Err(err)
    }

    /// Reads a zig-zag encoded signed varint (32 bits).
    pub fn varint(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        self.uvarint(field).map(|u| ((u >> 1) as i32) ^ -((u & 1) as i32))
    }

    /// Reads a zig-zag encoded signed varlong (64 bits).
    pub fn varlong(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        self.uvarlong(field).map(|u| ((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    /// Reads a string or bytes length prefix: `Ok(None)` is null. `flexible` selects the
    /// compact form (unsigned varint, length + 1); otherwise the prefix is an int16 for
    /// strings (`wide == false`) or an int32 for bytes (`wide == true`). The length is
    /// checked against the bytes left.
    #[inline]
    pub fn len_prefix(
        &mut self,
        flexible: bool,
        wide: bool,
        field: &'static str,
    ) -> Result<Option<usize>, DecodeError> {
        self.len_prefix_max(flexible, wide, usize::MAX, field)
    }

    #[inline]
    fn len_prefix_max(
        &mut self,
        flexible: bool,
        wide: bool,
        max: usize,
        field: &'static str,
    ) -> Result<Option<usize>, DecodeError> {
        let start = self.pos;
        let len: i64 = if flexible {
            i64::from(self.uvarint(field)?) - 1
        } else if wide {
            i64::from(self.i32(field)?)
        } else {
            i64::from(self.i16(field)?)
        };
        if len == -1 {
            return Ok(None);
        }
        if len < -1 {
            self.pos = start;
            return Err(self.error(DecodeErrorKind::InvalidLength(len as i32), field));
        }
        let len = len as usize;
        if len > max {
            self.pos = start;
            return Err(self.error(DecodeErrorKind::StringTooLong(len as u32), field));
        }
        if len > self.remaining() {
            return Err(self.truncated(len, field));
        }
        Ok(Some(len))
    }

    /// Reads a string length prefix and checks Kafka's 32767-byte limit (before the bytes
    /// left, as Apache Kafka does).
    #[inline]
    pub fn string_len(&mut self, flexible: bool, field: &'static str) -> Result<Option<usize>, DecodeError> {
        self.len_prefix_max(flexible, false, MAX_STRING_LEN, field)
    }

    /// Reads the bytes of a non-nullable string without checking UTF-8.
    #[inline]
    pub fn str_bytes(&mut self, flexible: bool, field: &'static str) -> Result<&'a [u8], DecodeError> {
        // Fast path for the common case: a one-byte compact length (under 127 bytes) or a
        // non-negative int16 length (within Kafka's limit by construction), with the bytes
        // there. Anything else, errors included, takes the general path.
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        let (prefix, len) = match (flexible, rest) {
            (true, &[b, ..]) if b.wrapping_sub(1) < 0x7f => (1, usize::from(b - 1)),
            (false, &[hi, lo, ..]) if hi < 0x80 => (2, usize::from(u16::from_be_bytes([hi, lo]))),
            _ => return self.str_bytes_general(flexible, field),
        };
        match rest.get(prefix..prefix + len) {
            Some(bytes) => {
                self.pos += prefix + len;
                Ok(bytes)
            }
            None => self.str_bytes_general(flexible, field),
        }
    }

    fn str_bytes_general(&mut self, flexible: bool, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let start = self.pos;
        match self.string_len(flexible, field)? {
            Some(n) => self.take(n, field),
            None => {
                self.pos = start;
                Err(self.error(DecodeErrorKind::UnexpectedNull, field))
            }
        }
    }

    /// Reads the bytes of a nullable string without checking UTF-8.
    #[inline]
    pub fn nullable_str_bytes(
        &mut self,
        flexible: bool,
        field: &'static str,
    ) -> Result<Option<&'a [u8]>, DecodeError> {
        match self.string_len(flexible, field)? {
            Some(n) => self.take(n, field).map(Some),
            None => Ok(None),
        }
    }

    /// Reads a non-nullable string and checks that it is UTF-8.
    #[inline]
    pub fn str(&mut self, flexible: bool, field: &'static str) -> Result<&'a str, DecodeError> {
        let start = self.offset();
        let bytes = self.str_bytes(flexible, field)?;
        utf8(bytes, start, field)
    }

    /// Reads a nullable string and checks that it is UTF-8.
    #[inline]
    pub fn nullable_str(
        &mut self,
        flexible: bool,
        field: &'static str,
    ) -> Result<Option<&'a str>, DecodeError> {
        let start = self.offset();
        match self.nullable_str_bytes(flexible, field)? {
            Some(bytes) => utf8(bytes, start, field).map(Some),
            None => Ok(None),
        }
    }

    /// Checks a non-nullable string: its length, its bytes and its UTF-8.
    #[inline(always)]
    pub(crate) fn check_str(&mut self, flexible: bool, field: &'static str) -> Result<(), DecodeError> {
        match self.short_ascii_str(flexible) {
            Some(pos) => {
                self.pos = pos;
                Ok(())
            }
            None => self.check_str_general(flexible, field),
        }
    }

    /// The position after the string at the current position when it takes the fast path
    /// of the string checks: a short string (see [`Reader::short_str`]), ASCII. `None` for
    /// anything else (null, long, not ASCII, short input).
    #[inline(always)]
    fn short_ascii_str(&self, flexible: bool) -> Option<usize> {
        let (bytes, end) = self.short_str(flexible)?;
        super::str_from(bytes).map(|_| end)
    }

    /// The bytes of the string at the current position and the position after it, when its
    /// length is a one-byte compact length or an int16 length and the bytes are there.
    /// `None` for anything else (null, long, short input).
    #[inline(always)]
    fn short_str(&self, flexible: bool) -> Option<(&'a [u8], usize)> {
        // Each step one bounds check on `buf` (no empty-slice default in between): the
        // prefix, then the bytes, whose start is known not to pass their end.
        let (from, len) = if flexible {
            let b = *self.buf.get(self.pos)?;
            if b.wrapping_sub(1) >= 0x7f {
                return None;
            }
            (self.pos + 1, usize::from(b - 1))
        } else {
            let &[hi, lo] = self.buf.get(self.pos..)?.first_chunk::<2>()?;
            if hi >= 0x80 {
                return None;
            }
            (self.pos + 2, usize::from(u16::from_be_bytes([hi, lo])))
        };
        let end = from + len;
        Some((self.buf.get(from..end)?, end))
    }

    /// Moves past `n` bytes if they are there. The `fast_` checks are the body check pass
    /// of `body_view!`'s fast path: `None` does not say that the bytes are wrong, only that
    /// they are not on the fast path (an error, or a form it leaves to the general path:
    /// long or non-ASCII strings, non-empty tagged sections); the caller then checks the
    /// whole body again with the general pass. They make no call, so that the fast pass
    /// needs no callee-saved register.
    #[inline(always)]
    pub(crate) fn fast_take(&mut self, n: usize) -> Option<()> {
        if self.buf.len() - self.pos >= n {
            self.pos += n;
            Some(())
        } else {
            None
        }
    }

    /// A string on the fast path: a short string ([`Reader::short_str`]), ASCII (see
    /// [`Reader::fast_take`]).
    #[inline(always)]
    pub(crate) fn fast_str(&mut self, flexible: bool) -> Option<()> {
        let (bytes, end) = self.short_str(flexible)?;
        // An empty string needs no test (the ASCII test would try 16, 8 and 4 first).
        if !bytes.is_empty() && !super::utf8::is_ascii(bytes) {
            return None;
        }
        self.pos = end;
        Some(())
    }

    /// A nullable string on the fast path: null, or what [`Reader::fast_str`] takes.
    #[inline(always)]
    pub(crate) fn fast_nullable_str(&mut self, flexible: bool) -> Option<()> {
        let null = if flexible {
            self.buf.get(self.pos) == Some(&0)
        } else {
            self.buf.get(self.pos..).and_then(<[u8]>::first_chunk) == Some(&[0xff, 0xff])
        };
        if null {
            self.pos += if flexible { 1 } else { 2 };
            return Some(());
        }
        self.fast_str(flexible)
    }

    /// An array count on the fast path: a one-byte compact count or a non-negative int32;
    /// null (as zero elements) only when `nullable`. Not checked against the bytes left:
    /// every element of a string or a fixed-width value takes at least one byte, so the
    /// elements' own reads fail first (`view::fast_array`, whose elements may take none,
    /// tests it).
    #[inline(always)]
    pub(crate) fn fast_count(&mut self, flexible: bool, nullable: bool) -> Option<usize> {
        if flexible {
            let b = *self.buf.get(self.pos)?;
            if b >= 0x80 || (b == 0 && !nullable) {
                return None;
            }
            self.pos += 1;
            Some(usize::from(b.saturating_sub(1)))
        } else {
            let &[a, b, c, d] = self.buf.get(self.pos..)?.first_chunk::<4>()?;
            let count = match i32::from_be_bytes([a, b, c, d]) {
                -1 if nullable => 0,
                n => usize::try_from(n).ok()?,
            };
            self.pos += 4;
            Some(count)
        }
    }

    /// An array of strings on the fast path: the count, then each string as
    /// [`Reader::fast_str`] takes it.
    #[inline(always)]
    pub(crate) fn fast_str_array(&mut self, flexible: bool, nullable: bool) -> Option<()> {
        for _ in 0..self.fast_count(flexible, nullable)? {
            self.fast_str(flexible)?;
        }
        Some(())
    }

    /// An array of `width`-byte values on the fast path.
    #[inline(always)]
    pub(crate) fn fast_fixed_array(&mut self, flexible: bool, nullable: bool, width: usize) -> Option<()> {
        let n = self.fast_count(flexible, nullable)?;
        self.fast_take(n.checked_mul(width)?)
    }

    /// An empty tagged-field section on the fast path (any other is for the general path).
    #[inline(always)]
    pub(crate) fn fast_no_tags(&mut self) -> Option<()> {
        if self.buf.get(self.pos) == Some(&0) {
            self.pos += 1;
            Some(())
        } else {
            None
        }
    }

    /// [`Reader::check_str`] for what its fast path does not take (long or null strings,
    /// text that is not ASCII, errors), out of line; the reader goes by value, so that its
    /// address does not escape (see [`Reader::truncated`]).
    #[inline]
    fn check_str_general(&mut self, flexible: bool, field: &'static str) -> Result<(), DecodeError> {
        self.pos = Self::check_str_slow(self.buf, self.pos, self.base, flexible, field)?;
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn check_str_slow(
        buf: &'a [u8],
        pos: usize,
        base: usize,
        flexible: bool,
        field: &'static str,
    ) -> Result<usize, DecodeError> {
        let mut r = Reader { buf, pos, base, uniform: true };
        let start = r.offset();
        let bytes = r.str_bytes(flexible, field)?;
        r.check_text(bytes, start, field)?;
        Ok(r.pos)
    }

    /// Checks that `bytes`, the string just read, is UTF-8.
    #[inline]
    fn check_text(&self, bytes: &'a [u8], start: usize, field: &'static str) -> Result<(), DecodeError> {
        match super::str_from(bytes) {
            Some(_) => Ok(()),
            None => Err(DecodeError::new(DecodeErrorKind::InvalidUtf8, start, field)),
        }
    }

    /// Checks a nullable string like [`Reader::check_str`].
    #[inline(always)]
    pub(crate) fn check_nullable_str(
        &mut self,
        flexible: bool,
        field: &'static str,
    ) -> Result<(), DecodeError> {
        // Fast paths: null, or what `check_str` takes; the rest goes by value, out of line.
        let null = if flexible {
            self.buf.get(self.pos) == Some(&0)
        } else {
            self.buf.get(self.pos..).and_then(<[u8]>::first_chunk) == Some(&[0xff, 0xff])
        };
        if null {
            self.pos += if flexible { 1 } else { 2 };
            return Ok(());
        }
        self.pos = match self.short_ascii_str(flexible) {
            Some(pos) => pos,
            None => Self::check_nullable_str_slow(self.buf, self.pos, self.base, flexible, field)?,
        };
        Ok(())
    }

    /// [`Reader::check_nullable_str`] off its fast paths; takes the reader's parts and
    /// returns the position after the string (see [`Reader::truncated`]).
    #[cold]
    #[inline(never)]
    fn check_nullable_str_slow(
        buf: &'a [u8],
        pos: usize,
        base: usize,
        flexible: bool,
        field: &'static str,
    ) -> Result<usize, DecodeError> {
        let mut r = Reader { buf, pos, base, uniform: true };
        let start = r.offset();
        if let Some(bytes) = r.nullable_str_bytes(flexible, field)? {
            r.check_text(bytes, start, field)?;
        }
        Ok(r.pos)
    }

    /// Checks that a run of fixed-width fields, `fields` as `(name, width)` adding up to
    /// `total` bytes, is there, and moves past it. A short input names the first field that
    /// does not fit.
    #[inline]
    pub(crate) fn run(
        &mut self,
        total: usize,
        fields: &'static [(&'static str, u8)],
    ) -> Result<(), DecodeError> {
        if self.remaining() >= total {
            self.pos += total;
            return Ok(());
        }
        Err(Self::short_run(self.offset(), self.remaining(), fields))
    }

    #[cold]
    #[inline(never)]
    fn short_run(offset: usize, remaining: usize, fields: &'static [(&'static str, u8)]) -> DecodeError {
        let (mut offset, mut remaining) = (offset, remaining);
        for &(field, width) in fields {
            let width = usize::from(width);
            if remaining < width {
                return truncated(offset, remaining, width, field);
            }
            offset += width;
            remaining -= width;
        }
        DecodeError::new(DecodeErrorKind::TrailingBytes(0), offset, "")
    }

    /// Reads a non-nullable byte array (`bytes` or `records`).
    pub fn bytes(&mut self, flexible: bool, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let start = self.pos;
        match self.len_prefix(flexible, true, field)? {
            Some(n) => self.take(n, field),
            None => {
                self.pos = start;
                Err(self.error(DecodeErrorKind::UnexpectedNull, field))
            }
        }
    }

    /// Reads a nullable byte array (`bytes` or `records`).
    pub fn nullable_bytes(
        &mut self,
        flexible: bool,
        field: &'static str,
    ) -> Result<Option<&'a [u8]>, DecodeError> {
        match self.len_prefix(flexible, true, field)? {
            Some(n) => self.take(n, field).map(Some),
            None => Ok(None),
        }
    }

    /// Reads an array count: `Ok(None)` is null. As in Apache Kafka, a count larger than
    /// the bytes left is rejected before anything looks at the elements.
    #[inline(always)]
    pub fn array_len(&mut self, flexible: bool, field: &'static str) -> Result<Option<usize>, DecodeError> {
        // Fast path: a one-byte compact count, or an int32 count of zero or more, that fits.
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        match (flexible, rest) {
            (true, &[0, ..]) => {
                self.pos += 1;
                return Ok(None);
            }
            (true, &[b, ref after @ ..]) if b < 0x80 && usize::from(b - 1) <= after.len() => {
                self.pos += 1;
                return Ok(Some(usize::from(b - 1)));
            }
            (false, &[a, b, c, d, ref after @ ..]) if a < 0x80 => {
                let count = u32::from_be_bytes([a, b, c, d]) as usize;
                if count <= after.len() {
                    self.pos += 4;
                    return Ok(Some(count));
                }
            }
            _ => {}
        }
        let (count, pos) = Self::array_len_slow(self.buf, self.pos, self.base, flexible, field)?;
        self.pos = pos;
        Ok(count)
    }

    /// [`Reader::array_len`] for what its fast path does not take, out of line (see
    /// [`Reader::parts`]).
    #[inline(never)]
    fn array_len_slow(
        buf: &'a [u8],
        pos: usize,
        base: usize,
        flexible: bool,
        field: &'static str,
    ) -> Result<(Option<usize>, usize), DecodeError> {
        let mut r = Reader { buf, pos, base, uniform: true };
        let start = r.pos;
        let count: i64 = if flexible { i64::from(r.uvarint(field)?) - 1 } else { i64::from(r.i32(field)?) };
        if count == -1 {
            return Ok((None, r.pos));
        }
        let err = if count < -1 {
            DecodeErrorKind::InvalidLength(count as i32)
        } else if count as u64 > r.remaining() as u64 {
            DecodeErrorKind::ArrayTooLong(count as u32)
        } else {
            return Ok((Some(count as usize), r.pos));
        };
        r.pos = start;
        Err(r.error(err, field))
    }

    /// Reads a non-nullable array count.
    #[inline(always)]
    pub fn array_len_non_null(&mut self, flexible: bool, field: &'static str) -> Result<usize, DecodeError> {
        let start = self.offset();
        match self.array_len(flexible, field)? {
            Some(n) => Ok(n),
            None => Err(unexpected_null(start, field)),
        }
    }

    /// [`Reader::tagged_fields`] for a struct other than the body: one whose section is not
    /// empty means that the body is not uniform (see [`crate::codec::types::Ver::uniform`]).
    #[allow(dead_code)]
    #[inline]
    pub(crate) fn fixed_struct_tagged_fields(
        &mut self,
        field: &'static str,
        on_field: impl FnMut(u32, &mut Reader<'a>) -> Result<bool, DecodeError>,
    ) -> Result<TaggedSection<'a>, DecodeError> {
        let section = self.tagged_fields(field, on_field)?;
        if section.count() > 0 {
            self.uniform = false;
        }
        Ok(section)
    }

    /// [`Reader::fixed_struct_tagged_fields`] for a struct that knows no tagged field.
    #[inline]
    pub(crate) fn fixed_struct_unknown_tagged_fields(
        &mut self,
        field: &'static str,
    ) -> Result<TaggedSection<'a>, DecodeError> {
        let section = self.unknown_tagged_fields(field)?;
        if section.count() > 0 {
            self.uniform = false;
        }
        Ok(section)
    }

    /// [`Reader::tagged_fields`] for a struct that knows no tagged field: every field is
    /// unknown and kept raw. Not generic, so that the check passes of the structs without
    /// tagged fields (most of them) share one body.
    #[inline]
    pub(crate) fn unknown_tagged_fields(
        &mut self,
        field: &'static str,
    ) -> Result<TaggedSection<'a>, DecodeError> {
        if let Some(0) = self.buf.get(self.pos) {
            self.pos += 1;
            return Ok(TaggedSection::EMPTY);
        }
        let (section, pos, uniform) =
            Self::tagged_fields_slow(self.buf, self.pos, self.base, self.uniform, field, &mut |_, _| {
                Ok(false)
            })?;
        self.pos = pos;
        self.uniform = uniform;
        Ok(section)
    }

    /// Reads a tagged-field section and hands each field to `on_field` as its tag and a
    /// reader over exactly its declared bytes.
    ///
    /// Checks the framing: the count, every tag and size varint, sizes within the bytes
    /// left, and tags strictly ascending (Kafka's writers always sort them; kwire rejects a
    /// duplicate or descending tag). `on_field` returns `Ok(true)` for a known tag it
    /// decoded, which must have consumed its reader exactly, and `Ok(false)` for an unknown
    /// tag, which is kept raw.
    ///
    /// Only this fast path (an empty section) is generic: the loop over the fields is one
    /// function for every caller, which calls `on_field` through `&mut dyn FnMut` (an
    /// indirect call per field present). Generic, it was compiled once per closure, 954
    /// times, and was a quarter of the crate's LLVM IR ([`manual::benchmarks`](crate::manual::benchmarks), "Build cost").
    #[inline]
    pub fn tagged_fields(
        &mut self,
        field: &'static str,
        mut on_field: impl FnMut(u32, &mut Reader<'a>) -> Result<bool, DecodeError>,
    ) -> Result<TaggedSection<'a>, DecodeError> {
        // Fast path: an empty section, by far the most common.
        if let Some(0) = self.buf.get(self.pos) {
            self.pos += 1;
            return Ok(TaggedSection::EMPTY);
        }
        let (section, pos, uniform) =
            Self::tagged_fields_slow(self.buf, self.pos, self.base, self.uniform, field, &mut on_field)?;
        self.pos = pos;
        self.uniform = uniform;
        Ok(section)
    }

    /// [`Reader::tagged_fields`] for a section that has fields, out of line (see
    /// [`Reader::parts`]); returns the section, the position after it and whether the reader
    /// is still uniform.
    #[inline(never)]
    fn tagged_fields_slow(
        buf: &'a [u8],
        pos: usize,
        base: usize,
        uniform: bool,
        field: &'static str,
        on_field: &mut dyn FnMut(u32, &mut Reader<'a>) -> Result<bool, DecodeError>,
    ) -> Result<(TaggedSection<'a>, usize, bool), DecodeError> {
        let mut r = Reader { buf, pos, base, uniform };
        let count_at = r.pos;
        let count = r.uvarint(field)?;
        if count as u64 > r.remaining() as u64 {
            r.pos = count_at;
            return Err(r.error(DecodeErrorKind::ArrayTooLong(count), field));
        }
        let start = r.pos;
        let mut last: Option<u32> = None;
        for _ in 0..count {
            let tag_at = r.pos;
            let tag = r.uvarint(field)?;
            if last.is_some_and(|prev| tag <= prev) {
                r.pos = tag_at;
                return Err(r.error(DecodeErrorKind::TagOutOfOrder(tag), field));
            }
            last = Some(tag);
            let size = r.uvarint(field)? as usize;
            let mut value = r.sub(size, field)?;
            let known = on_field(tag, &mut value)?;
            r.uniform &= value.uniform;
            if known && value.remaining() != 0 {
                let kind = DecodeErrorKind::TaggedSizeMismatch {
                    tag,
                    declared: size as u32,
                    actual: value.pos() as u32,
                };
                return Err(DecodeError::new(kind, value.offset(), field));
            }
        }
        Ok((TaggedSection::new(r.since(start), count), r.pos, r.uniform))
    }
}

/// [`DecodeErrorKind::UnexpectedNull`] at `offset`.
#[cold]
#[inline(never)]
fn unexpected_null(offset: usize, field: &'static str) -> DecodeError {
    DecodeError::new(DecodeErrorKind::UnexpectedNull, offset, field)
}

/// [`DecodeErrorKind::Truncated`] at `offset`, with `available` bytes left of `needed`.
#[cold]
#[inline(never)]
fn truncated(offset: usize, available: usize, needed: usize, field: &'static str) -> DecodeError {
    let kind = DecodeErrorKind::Truncated {
        needed: u32::try_from(needed).unwrap_or(u32::MAX),
        available: u32::try_from(available).unwrap_or(u32::MAX),
    };
    DecodeError::new(kind, offset, field)
}

/// Checks UTF-8, reporting an error at `offset` (where the string's prefix starts).
#[inline]
pub fn utf8<'a>(bytes: &'a [u8], offset: usize, field: &'static str) -> Result<&'a str, DecodeError> {
    core::str::from_utf8(bytes).map_err(|_| DecodeError::new(DecodeErrorKind::InvalidUtf8, offset, field))
}
