//! The checked reader; its check pass, for views, is in `check.rs`.

mod check;
mod sized;

use super::varint::{self, VarintError};
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

    /// Reads an unsigned varint of at most 32 bits (see `wire/varint.rs` for the overflow
    /// policy: at most five bytes; bits of the fifth beyond 32 are dropped, as in Kafka).
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
        varint::long_uvarint(buf, pos).map_err(|e| varint_error(e, buf, pos, base, field))
    }

    /// Reads an unsigned varlong of at most 64 bits (at most ten bytes; bits of the tenth
    /// beyond 64 are dropped).
    pub fn uvarlong(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        let (value, pos) = varint::uvarlong(self.buf, self.pos)
            .map_err(|e| varint_error(e, self.buf, self.pos, self.base, field))?;
        self.pos = pos;
        Ok(value)
    }

    /// Reads a zig-zag encoded signed varint (32 bits).
    pub fn varint(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        self.uvarint(field).map(varint::unzigzag32)
    }

    /// Reads a zig-zag encoded signed varlong (64 bits).
    pub fn varlong(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        self.uvarlong(field).map(varint::unzigzag64)
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

/// A varint's error as the reader reports it: a truncated one at the end of the bytes (one
/// more byte needed), a too-long one at its start.
#[cold]
fn varint_error(e: VarintError, buf: &[u8], pos: usize, base: usize, field: &'static str) -> DecodeError {
    match e {
        VarintError::Truncated => truncated(base + buf.len(), 0, 1, field),
        VarintError::TooLong => DecodeError::new(DecodeErrorKind::VarintTooLong, base + pos, field),
    }
}

/// Checks UTF-8, reporting an error at `offset` (where the string's prefix starts).
#[inline]
pub fn utf8<'a>(bytes: &'a [u8], offset: usize, field: &'static str) -> Result<&'a str, DecodeError> {
    core::str::from_utf8(bytes).map_err(|_| DecodeError::new(DecodeErrorKind::InvalidUtf8, offset, field))
}
