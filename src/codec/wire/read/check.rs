//! The reader's check pass: what a view's constructor runs over a body once. The `fast_`
//! steps are the fast pass (`body_view!`'s first try: short ASCII strings, no tagged fields);
//! the `check_` steps and [`Reader::run`] are the general pass, with the error for any input.

use super::super::str_from;
use super::super::utf8::is_ascii;
use super::{Reader, truncated};
use crate::codec::error::{DecodeError, DecodeErrorKind};

impl<'a> Reader<'a> {
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
        str_from(bytes).map(|_| end)
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
        if !bytes.is_empty() && !is_ascii(bytes) {
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
        match str_from(bytes) {
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
}
