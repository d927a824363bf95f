//! The reader's length-prefixed values: string and byte lengths (with Kafka's string
//! limit), strings, byte arrays and array counts, compact or not.

use super::{MAX_STRING_LEN, Reader, unexpected_null, utf8};
use crate::codec::error::{DecodeError, DecodeErrorKind};

impl<'a> Reader<'a> {
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
}
