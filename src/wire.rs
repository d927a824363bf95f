//! Wire primitives: a bounds-checked [`Reader`], a [`Writer`] into a caller's buffer, and
//! the size arithmetic both sides share.
//!
//! Every Kafka schema type has its reader, writer and size function here: fixed-width
//! integers (big-endian), `float64`, `bool`, `uuid`, unsigned varints, zig-zag varints and
//! varlongs, classic (int16/int32 length) and compact (unsigned varint length + 1) strings
//! and bytes, nullable forms, array counts (int32, -1 = null; compact count + 1, 0 = null)
//! and tagged-field sections. Generated message code is built only from these.
//!
//! The reader never panics and never reads past its slice: every short read is a
//! [`DecodeErrorKind::Truncated`] error at the offset where it happened. The writer is
//! only used after the size step has checked that the buffer is large enough; it still
//! never panics (a write past the end is dropped and counted).

use crate::error::{DecodeError, DecodeErrorKind, EncodeError};
use crate::types::{RawTaggedField, Uuid};

/// Kafka's limit on the length of any string, classic or compact.
pub const MAX_STRING_LEN: usize = 0x7fff;

/// A cursor over input bytes that reports errors with absolute offsets.
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    /// `buf[text_at..]`, already checked as UTF-8, when `text_at` is a position; otherwise
    /// `text_at` is [`TEXT_OFF`] or [`TEXT_LAZY`] and `text` is empty.
    text: &'a str,
    text_at: usize,
}

/// `Reader::text_at` when every string is checked on its own.
const TEXT_OFF: usize = usize::MAX;
/// `Reader::text_at` when the first string read should try to check the rest of the buffer
/// as UTF-8 in one pass.
const TEXT_LAZY: usize = usize::MAX - 1;

impl<'a> Reader<'a> {
    /// A reader over `buf`; offsets in errors count from its first byte.
    pub const fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0, base: 0, text: "", text_at: TEXT_OFF }
    }

    /// A reader over `buf`, which starts `base` bytes into the message (for offsets in
    /// errors).
    pub const fn with_base(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base, text: "", text_at: TEXT_OFF }
    }

    /// A reader like [`Reader::with_base`] for a region that holds many strings (the
    /// elements of an array): the first string read checks the rest of the region as UTF-8
    /// in one pass, and if that succeeds every later string is sliced out of it (a
    /// char-boundary check instead of a UTF-8 check per string). If the rest of the region
    /// is not UTF-8 (it holds binary fields), strings are checked one by one as usual. The
    /// results are the same either way: a substring of valid UTF-8 is valid exactly when
    /// both its ends are char boundaries.
    pub const fn for_strings(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base, text: "", text_at: TEXT_LAZY }
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

    fn truncated(&self, needed: usize, field: &'static str) -> DecodeError {
        let kind = DecodeErrorKind::Truncated {
            needed: u32::try_from(needed).unwrap_or(u32::MAX),
            available: u32::try_from(self.remaining()).unwrap_or(u32::MAX),
        };
        self.error(kind, field)
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
        let start = self.pos;
        let mut value: u32 = 0;
        for i in 0..5 {
            let Some(&b) = self.buf.get(self.pos) else {
                let err = self.truncated(1, field);
                self.pos = start;
                return Err(err);
            };
            self.pos += 1;
            if i == 4 && b > 0x0f {
                let kind = if b & 0x80 != 0 {
                    DecodeErrorKind::VarintTooLong
                } else {
                    DecodeErrorKind::VarintOverflow
                };
                self.pos = start;
                return Err(self.error(kind, field));
            }
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        // Not reached: the fifth byte either ended the varint or was refused above.
        self.pos = start;
        Err(self.error(DecodeErrorKind::VarintTooLong, field))
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
        self.checked_str(bytes, start, field)
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
            Some(bytes) => self.checked_str(bytes, start, field).map(Some),
            None => Ok(None),
        }
    }

    /// `bytes`, the string just read (it ends at the current position), as `&str`.
    #[inline]
    fn checked_str(
        &mut self,
        bytes: &'a [u8],
        start: usize,
        field: &'static str,
    ) -> Result<&'a str, DecodeError> {
        if self.text_at != TEXT_OFF
            && let Some(s) = self.cached_str(bytes.len())
        {
            return Ok(s);
        }
        utf8(bytes, start, field)
    }

    /// The `len` bytes before the current position, sliced out of the region checked as
    /// UTF-8 (checking it first if this is the first string); `None` when the region is not
    /// UTF-8 or the slice does not fall on char boundaries (then the caller checks the
    /// string on its own, which reports the error).
    #[inline]
    fn cached_str(&mut self, len: usize) -> Option<&'a str> {
        let begin = self.pos.checked_sub(len)?;
        if self.text_at == TEXT_LAZY {
            self.text_at = TEXT_OFF;
            self.text = core::str::from_utf8(self.buf.get(begin..)?).ok()?;
            self.text_at = begin;
        }
        let from = begin.checked_sub(self.text_at)?;
        self.text.get(from..from + len)
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
    #[inline]
    pub fn array_len(&mut self, flexible: bool, field: &'static str) -> Result<Option<usize>, DecodeError> {
        let start = self.pos;
        let count: i64 =
            if flexible { i64::from(self.uvarint(field)?) - 1 } else { i64::from(self.i32(field)?) };
        if count == -1 {
            return Ok(None);
        }
        let err = if count < -1 {
            DecodeErrorKind::InvalidLength(count as i32)
        } else if count as u64 > self.remaining() as u64 {
            DecodeErrorKind::ArrayTooLong(count as u32)
        } else {
            return Ok(Some(count as usize));
        };
        self.pos = start;
        Err(self.error(err, field))
    }

    /// Reads a non-nullable array count.
    #[inline]
    pub fn array_len_non_null(&mut self, flexible: bool, field: &'static str) -> Result<usize, DecodeError> {
        let start = self.pos;
        match self.array_len(flexible, field)? {
            Some(n) => Ok(n),
            None => {
                self.pos = start;
                Err(self.error(DecodeErrorKind::UnexpectedNull, field))
            }
        }
    }

    /// Reads a tagged-field section and hands each field to `on_field` as its tag and a
    /// reader over exactly its declared bytes.
    ///
    /// Checks the framing: the count, every tag and size varint, sizes within the bytes
    /// left, and tags strictly ascending (Kafka's writers always sort them; kwire rejects a
    /// duplicate or descending tag). `on_field` returns `Ok(true)` for a known tag it
    /// decoded, which must have consumed its reader exactly, and `Ok(false)` for an unknown
    /// tag, which is kept raw.
    #[inline]
    pub fn tagged_fields(
        &mut self,
        field: &'static str,
        mut on_field: impl FnMut(u32, &mut Reader<'a>) -> Result<bool, DecodeError>,
    ) -> Result<TaggedSection<'a>, DecodeError> {
        // Fast path: an empty section, by far the most common.
        if let Some(0) = self.buf.get(self.pos) {
            self.pos += 1;
            return Ok(TaggedSection { bytes: &[], count: 0 });
        }
        let count_at = self.pos;
        let count = self.uvarint(field)?;
        if count as u64 > self.remaining() as u64 {
            self.pos = count_at;
            return Err(self.error(DecodeErrorKind::ArrayTooLong(count), field));
        }
        let start = self.pos;
        let mut last: Option<u32> = None;
        for _ in 0..count {
            let tag_at = self.pos;
            let tag = self.uvarint(field)?;
            if last.is_some_and(|prev| tag <= prev) {
                self.pos = tag_at;
                return Err(self.error(DecodeErrorKind::TagOutOfOrder(tag), field));
            }
            last = Some(tag);
            let size = self.uvarint(field)? as usize;
            let mut value = self.sub(size, field)?;
            if on_field(tag, &mut value)? && value.remaining() != 0 {
                let kind = DecodeErrorKind::TaggedSizeMismatch {
                    tag,
                    declared: size as u32,
                    actual: value.pos() as u32,
                };
                return Err(DecodeError::new(kind, value.offset(), field));
            }
        }
        Ok(TaggedSection { bytes: self.since(start), count })
    }
}

/// Checks UTF-8, reporting an error at `offset` (where the string's prefix starts).
#[inline]
pub fn utf8<'a>(bytes: &'a [u8], offset: usize, field: &'static str) -> Result<&'a str, DecodeError> {
    core::str::from_utf8(bytes).map_err(|_| DecodeError::new(DecodeErrorKind::InvalidUtf8, offset, field))
}

/// The raw fields of a tagged-field section, after the framing was checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaggedSection<'a> {
    bytes: &'a [u8],
    count: u32,
}

impl<'a> TaggedSection<'a> {
    /// An empty section (non-flexible versions, or no tagged fields).
    pub const EMPTY: TaggedSection<'static> = TaggedSection { bytes: &[], count: 0 };

    /// The number of tagged fields, known and unknown.
    pub const fn count(&self) -> u32 {
        self.count
    }

    /// The section's bytes after its count.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Every field in the section as `(tag, bytes)`, in wire order.
    #[inline]
    pub fn iter(&self) -> TaggedIter<'a> {
        TaggedIter { rest: self.bytes, left: self.count, known: &[] }
    }

    /// The fields whose tags are not in `known`, as `(tag, bytes)`.
    #[inline]
    pub fn unknown(&self, known: &'static [u32]) -> TaggedIter<'a> {
        TaggedIter { known, ..self.iter() }
    }
}

/// An iterator over `(tag, bytes)` of a checked tagged-field section.
#[derive(Clone, Debug)]
pub struct TaggedIter<'a> {
    /// The fields not yet yielded.
    rest: &'a [u8],
    left: u32,
    known: &'static [u32],
}

impl<'a> Iterator for TaggedIter<'a> {
    type Item = (u32, &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.next_field()
    }
}

impl<'a> TaggedIter<'a> {
    fn next_field(&mut self) -> Option<(u32, &'a [u8])> {
        while self.left > 0 {
            self.left -= 1;
            // The section was checked when it was read, so these cannot fail; stop if they do.
            let mut r = Reader::new(self.rest);
            let parsed = (|| {
                let tag = r.uvarint("")?;
                let size = r.uvarint("")? as usize;
                Ok::<_, DecodeError>((tag, r.take(size, "")?))
            })();
            self.rest = self.rest.get(r.pos()..).unwrap_or_default();
            match parsed {
                Ok((tag, bytes)) if !self.known.contains(&tag) => return Some((tag, bytes)),
                Ok(_) => {}
                Err(_) => self.left = 0,
            }
        }
        None
    }
}

/// Bytes an unsigned varint of `v` takes.
#[inline]
pub const fn uvarint_len(v: u32) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0x0fff_ffff => 4,
        _ => 5,
    }
}

/// Bytes an unsigned varlong of `v` takes.
#[inline]
pub const fn uvarlong_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Bytes a zig-zag varint of `v` takes.
pub const fn varint_len(v: i32) -> usize {
    uvarint_len(((v << 1) ^ (v >> 31)) as u32)
}

/// Bytes a zig-zag varlong of `v` takes.
pub const fn varlong_len(v: i64) -> usize {
    uvarlong_len(((v << 1) ^ (v >> 63)) as u64)
}

/// Size of a string of `len` bytes with its prefix; checks the 32767-byte limit.
#[inline]
pub fn string_size(len: usize, flexible: bool, field: &'static str) -> Result<usize, EncodeError> {
    if len > MAX_STRING_LEN {
        return Err(EncodeError::StringTooLong { field, len });
    }
    Ok(if flexible { uvarint_len(len as u32 + 1) } else { 2 } + len)
}

/// Size of a null string or byte array.
#[inline]
pub const fn null_size(flexible: bool, wide: bool) -> usize {
    if flexible {
        1
    } else if wide {
        4
    } else {
        2
    }
}

/// Size of a byte array of `len` bytes with its prefix.
#[inline]
pub fn bytes_size(len: usize, flexible: bool, field: &'static str) -> Result<usize, EncodeError> {
    if len >= i32::MAX as usize {
        return Err(EncodeError::TooLong { field });
    }
    Ok(if flexible { uvarint_len(len as u32 + 1) } else { 4 } + len)
}

/// Size of an array count prefix for `count` elements (a null array takes
/// [`null_size`]`(flexible, true)`).
#[inline]
pub fn array_prefix_size(count: usize, flexible: bool, field: &'static str) -> Result<usize, EncodeError> {
    if count >= i32::MAX as usize {
        return Err(EncodeError::TooLong { field });
    }
    Ok(if flexible { uvarint_len(count as u32 + 1) } else { 4 })
}

/// Adds sizes, failing instead of overflowing.
#[inline]
pub fn add(a: usize, b: usize, field: &'static str) -> Result<usize, EncodeError> {
    a.checked_add(b).ok_or(EncodeError::TooLong { field })
}

/// Sizing of a tagged-field section: known fields are added as they are found present,
/// then [`TaggedSize::finish`] adds the unknown ones and the count.
#[derive(Debug, Default)]
pub struct TaggedSize {
    count: u32,
    bytes: usize,
}

impl TaggedSize {
    /// A section with no fields yet.
    pub const fn new() -> Self {
        TaggedSize { count: 0, bytes: 0 }
    }

    /// Adds a known field whose value takes `len` bytes.
    #[inline]
    pub fn field(&mut self, tag: u32, len: usize, field: &'static str) -> Result<(), EncodeError> {
        let len32 = u32::try_from(len).map_err(|_| EncodeError::TooLong { field })?;
        self.count += 1;
        self.bytes = add(self.bytes, uvarint_len(tag) + uvarint_len(len32) + len, field)?;
        Ok(())
    }

    /// Adds the unknown fields and the count, and returns the section's size. Unknown tags
    /// must ascend strictly and must not be one of the `known` tags.
    #[inline]
    pub fn finish(
        mut self,
        unknown: &[RawTaggedField<'_>],
        known: &[u32],
        field: &'static str,
    ) -> Result<usize, EncodeError> {
        let mut last: Option<u32> = None;
        for raw in unknown {
            if last.is_some_and(|prev| raw.tag <= prev) || known.contains(&raw.tag) {
                return Err(EncodeError::InvalidTaggedFields { field, tag: raw.tag });
            }
            last = Some(raw.tag);
            self.field(raw.tag, raw.data.len(), field)?;
        }
        add(self.bytes, uvarint_len(self.count), field)
    }
}

/// Size of a tagged-field section that holds only unknown fields (the struct has no
/// known tagged fields); their tags must ascend strictly.
#[inline]
pub fn raw_tagged_fields_size(
    unknown: &[RawTaggedField<'_>],
    field: &'static str,
) -> Result<usize, EncodeError> {
    if unknown.is_empty() {
        return Ok(1);
    }
    TaggedSize::new().finish(unknown, &[], field)
}

/// A cursor writing into a caller's buffer.
///
/// Encoders size their output first and check the buffer, so writes always fit; a write
/// that would not fit is dropped (never a panic) and [`Writer::pos`] still advances, so
/// the mismatch shows in the returned length.
#[derive(Debug)]
pub struct Writer<'b> {
    buf: &'b mut [u8],
    pos: usize,
}

impl<'b> Writer<'b> {
    /// A writer at the start of `buf`.
    pub fn new(buf: &'b mut [u8]) -> Self {
        Writer { buf, pos: 0 }
    }

    /// Bytes written so far.
    pub const fn pos(&self) -> usize {
        self.pos
    }

    /// Writes raw bytes.
    #[inline]
    pub fn put(&mut self, bytes: &[u8]) {
        if let Some(dst) = self.buf.get_mut(self.pos..self.pos + bytes.len()) {
            dst.copy_from_slice(bytes);
        }
        self.pos += bytes.len();
    }

    /// Writes an `int8`.
    #[inline]
    pub fn i8(&mut self, v: i8) {
        self.put(&v.to_be_bytes());
    }
    /// Writes an `int16`.
    #[inline]
    pub fn i16(&mut self, v: i16) {
        self.put(&v.to_be_bytes());
    }
    /// Writes an `int32`.
    #[inline]
    pub fn i32(&mut self, v: i32) {
        self.put(&v.to_be_bytes());
    }
    /// Writes an `int64`.
    #[inline]
    pub fn i64(&mut self, v: i64) {
        self.put(&v.to_be_bytes());
    }
    /// Writes a `uint16`.
    #[inline]
    pub fn u16(&mut self, v: u16) {
        self.put(&v.to_be_bytes());
    }
    /// Writes a `uint32`.
    #[inline]
    pub fn u32(&mut self, v: u32) {
        self.put(&v.to_be_bytes());
    }
    /// Writes a `float64`.
    #[inline]
    pub fn f64(&mut self, v: f64) {
        self.put(&v.to_be_bytes());
    }
    /// Writes a `bool` as 0 or 1.
    #[inline]
    pub fn bool(&mut self, v: bool) {
        self.put(&[u8::from(v)]);
    }
    /// Writes a `uuid`.
    #[inline]
    pub fn uuid(&mut self, v: Uuid) {
        self.put(&v.0);
    }

    /// Writes an unsigned varint.
    #[inline]
    pub fn uvarint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.put(&[(v as u8) | 0x80]);
            v >>= 7;
        }
        self.put(&[v as u8]);
    }

    /// Writes an unsigned varlong.
    pub fn uvarlong(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.put(&[(v as u8) | 0x80]);
            v >>= 7;
        }
        self.put(&[v as u8]);
    }

    /// Writes a zig-zag varint.
    pub fn varint(&mut self, v: i32) {
        self.uvarint(((v << 1) ^ (v >> 31)) as u32);
    }

    /// Writes a zig-zag varlong.
    pub fn varlong(&mut self, v: i64) {
        self.uvarlong(((v << 1) ^ (v >> 63)) as u64);
    }

    /// Writes a length prefix (`None` = null) in the compact or classic form; `wide`
    /// selects int32 over int16 for the classic form.
    #[inline]
    pub fn len_prefix(&mut self, len: Option<usize>, flexible: bool, wide: bool) {
        match (len, flexible, wide) {
            (Some(n), true, _) => self.uvarint(n as u32 + 1),
            (None, true, _) => self.uvarint(0),
            (Some(n), false, true) => self.i32(n as i32),
            (None, false, true) => self.i32(-1),
            (Some(n), false, false) => self.i16(n as i16),
            (None, false, false) => self.i16(-1),
        }
    }

    /// Writes a string with its prefix.
    #[inline]
    pub fn str(&mut self, s: &str, flexible: bool) {
        self.len_prefix(Some(s.len()), flexible, false);
        self.put(s.as_bytes());
    }

    /// Writes a nullable string with its prefix.
    #[inline]
    pub fn nullable_str(&mut self, s: Option<&str>, flexible: bool) {
        match s {
            Some(s) => self.str(s, flexible),
            None => self.len_prefix(None, flexible, false),
        }
    }

    /// Writes a byte array with its prefix.
    #[inline]
    pub fn bytes(&mut self, b: &[u8], flexible: bool) {
        self.len_prefix(Some(b.len()), flexible, true);
        self.put(b);
    }

    /// Writes a nullable byte array with its prefix.
    #[inline]
    pub fn nullable_bytes(&mut self, b: Option<&[u8]>, flexible: bool) {
        match b {
            Some(b) => self.bytes(b, flexible),
            None => self.len_prefix(None, flexible, true),
        }
    }

    /// Writes an array count (`None` = null).
    #[inline]
    pub fn array_len(&mut self, count: Option<usize>, flexible: bool) {
        self.len_prefix(count, flexible, true);
    }

    /// Writes the header of a tagged field: its tag and size.
    #[inline]
    pub fn tag_header(&mut self, tag: u32, size: usize) {
        self.uvarint(tag);
        self.uvarint(size as u32);
    }

    /// Writes a tagged-field section that holds only unknown fields: the count, then each
    /// field.
    #[inline]
    pub fn raw_tagged_fields(&mut self, unknown: &[RawTaggedField<'_>]) {
        if unknown.is_empty() {
            self.put(&[0]);
            return;
        }
        self.uvarint(unknown.len() as u32);
        self.raw_tags_below(unknown, &mut 0, None);
    }

    /// Writes the unknown tagged fields from index `next` on whose tags are below `below`
    /// (all the rest with `None`), advancing `next` past them.
    #[inline]
    pub fn raw_tags_below(&mut self, unknown: &[RawTaggedField<'_>], next: &mut usize, below: Option<u32>) {
        while let Some(raw) = unknown.get(*next) {
            if below.is_some_and(|b| raw.tag >= b) {
                break;
            }
            self.tag_header(raw.tag, raw.data.len());
            self.put(&raw.data);
            *next += 1;
        }
    }
}
