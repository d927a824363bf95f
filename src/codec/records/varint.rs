//! A bounds-checked cursor over record bodies; its varints are the wire layer's
//! ([`crate::codec::wire::varint`]).

use super::error::{ErrorKind, sat32};
use crate::codec::wire::varint::{self, VarintError};
pub(crate) use crate::codec::wire::varint::{varint_len, varlong_len};

/// A cursor over a byte slice. Errors carry no offset: callers add [`Cursor::pos`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cursor<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) const fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    #[inline]
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    #[inline]
    fn truncated(&self, needed: usize) -> ErrorKind {
        ErrorKind::Truncated { needed: sat32(needed), available: sat32(self.remaining()) }
    }

    #[inline]
    pub(crate) fn u8(&mut self) -> Result<u8, ErrorKind> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.truncated(1)),
        }
    }

    #[inline]
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], ErrorKind> {
        match self.buf.get(self.pos..).and_then(|rest| rest.get(..n)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(self.truncated(n)),
        }
    }

    /// An unsigned varint (the one rule: [`crate::codec::wire::varint`]). A failed read
    /// leaves the cursor where it stopped: at the end for a truncated varint, after five
    /// bytes for one too long.
    #[inline]
    pub(crate) fn uvarint(&mut self) -> Result<u32, ErrorKind> {
        match varint::uvarint(self.buf, self.pos) {
            Ok((v, pos)) => {
                self.pos = pos;
                Ok(v)
            }
            Err(e) => Err(self.fail(e, varint::MAX_VARINT_LEN)),
        }
    }

    /// An unsigned varlong (at most 10 bytes).
    #[inline]
    pub(crate) fn uvarlong(&mut self) -> Result<u64, ErrorKind> {
        match varint::uvarlong(self.buf, self.pos) {
            Ok((v, pos)) => {
                self.pos = pos;
                Ok(v)
            }
            Err(e) => Err(self.fail(e, varint::MAX_VARLONG_LEN)),
        }
    }

    /// A failed varint of at most `max` bytes as this cursor reports it.
    #[cold]
    fn fail(&mut self, e: VarintError, max: usize) -> ErrorKind {
        match e {
            VarintError::Truncated => {
                self.pos = self.buf.len();
                self.truncated(1)
            }
            VarintError::TooLong => {
                self.pos += max;
                ErrorKind::VarintTooLong
            }
        }
    }

    /// A zig-zag varint.
    #[inline]
    pub(crate) fn varint(&mut self) -> Result<i32, ErrorKind> {
        self.uvarint().map(varint::unzigzag32)
    }

    /// A zig-zag varlong.
    #[inline]
    pub(crate) fn varlong(&mut self) -> Result<i64, ErrorKind> {
        self.uvarlong().map(varint::unzigzag64)
    }

    /// A varint length: `None` for -1, an error below -1, else the slice.
    #[inline]
    pub(crate) fn nullable_bytes(&mut self) -> Result<Option<&'a [u8]>, ErrorKind> {
        let len = self.varint()?;
        if len < 0 {
            return if len == -1 { Ok(None) } else { Err(ErrorKind::InvalidLength(len)) };
        }
        self.take(len as usize).map(Some)
    }
}

/// Writes a zig-zag varint at `buf[*pos..]`; the caller has sized `buf`.
pub(crate) fn put_varint(buf: &mut [u8], pos: &mut usize, v: i32) {
    put_uvarlong(buf, pos, u64::from(varint::zigzag32(v)));
}

/// Writes a zig-zag varlong at `buf[*pos..]`; the caller has sized `buf`.
pub(crate) fn put_varlong(buf: &mut [u8], pos: &mut usize, v: i64) {
    put_uvarlong(buf, pos, varint::zigzag64(v));
}

fn put_uvarlong(buf: &mut [u8], pos: &mut usize, u: u64) {
    *pos = varint::put_uvarlong(buf, *pos, u).unwrap_or(*pos + varint::uvarlong_len(u));
}

/// Writes bytes at `buf[*pos..]`; the caller has sized `buf`.
pub(crate) fn put_bytes(buf: &mut [u8], pos: &mut usize, bytes: &[u8]) {
    if let Some(dst) = buf.get_mut(*pos..*pos + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
    *pos += bytes.len();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trip() {
        for v in [0i64, 1, -1, 63, -64, 64, 300, -300, i32::MAX as i64, i32::MIN as i64, i64::MAX, i64::MIN] {
            let mut buf = [0u8; 10];
            let mut pos = 0;
            put_varlong(&mut buf, &mut pos, v);
            assert_eq!(pos, varlong_len(v));
            let mut c = Cursor::new(&buf[..pos]);
            assert_eq!(c.varlong(), Ok(v));
            if let Ok(v32) = i32::try_from(v) {
                let mut pos = 0;
                put_varint(&mut buf, &mut pos, v32);
                assert_eq!(pos, varint_len(v32));
                assert_eq!(Cursor::new(&buf[..pos]).varint(), Ok(v32));
            }
        }
    }

    #[test]
    fn over_long_varints() {
        assert_eq!(
            Cursor::new(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]).varint(),
            Err(ErrorKind::VarintTooLong)
        );
        assert_eq!(Cursor::new(&[0xff; 11]).varlong(), Err(ErrorKind::VarintTooLong));
        assert!(matches!(Cursor::new(&[0x80]).varint(), Err(ErrorKind::Truncated { .. })));
    }
}
