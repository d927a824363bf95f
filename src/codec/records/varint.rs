//! A bounds-checked cursor with Kafka's zig-zag varints, for record bodies.

use super::error::{ErrorKind, sat32};

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

    /// An unsigned varint of at most 5 bytes. As in Kafka's `ByteUtils.readVarint`, bits
    /// of the fifth byte beyond 32 are dropped; a sixth byte is an error.
    #[inline]
    pub(crate) fn uvarint(&mut self) -> Result<u32, ErrorKind> {
        // Fast path: one byte.
        if let Some(&b) = self.buf.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return Ok(u32::from(b));
        }
        let mut value: u32 = 0;
        let mut shift = 0u32;
        loop {
            let b = self.u8()?;
            value |= u32::from(b & 0x7f).wrapping_shl(shift);
            if b < 0x80 {
                return Ok(value);
            }
            shift += 7;
            if shift > 28 {
                return Err(ErrorKind::VarintTooLong);
            }
        }
    }

    /// An unsigned varlong of at most 10 bytes.
    #[inline]
    pub(crate) fn uvarlong(&mut self) -> Result<u64, ErrorKind> {
        if let Some(&b) = self.buf.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return Ok(u64::from(b));
        }
        let mut value: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = self.u8()?;
            value |= u64::from(b & 0x7f).wrapping_shl(shift);
            if b < 0x80 {
                return Ok(value);
            }
            shift += 7;
            if shift > 63 {
                return Err(ErrorKind::VarintTooLong);
            }
        }
    }

    /// A zig-zag varint.
    #[inline]
    pub(crate) fn varint(&mut self) -> Result<i32, ErrorKind> {
        let v = self.uvarint()?;
        Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
    }

    /// A zig-zag varlong.
    #[inline]
    pub(crate) fn varlong(&mut self) -> Result<i64, ErrorKind> {
        let v = self.uvarlong()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
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

/// Bytes a zig-zag varint takes.
pub(crate) const fn varint_len(v: i32) -> usize {
    uvarint_len(((v << 1) ^ (v >> 31)) as u32)
}

/// Bytes a zig-zag varlong takes.
pub(crate) const fn varlong_len(v: i64) -> usize {
    let mut u = ((v << 1) ^ (v >> 63)) as u64;
    let mut n = 1;
    while u >= 0x80 {
        u >>= 7;
        n += 1;
    }
    n
}

/// Bytes an unsigned varint takes.
pub(crate) const fn uvarint_len(mut u: u32) -> usize {
    let mut n = 1;
    while u >= 0x80 {
        u >>= 7;
        n += 1;
    }
    n
}

/// Writes a zig-zag varint at `buf[*pos..]`; the caller has sized `buf`.
pub(crate) fn put_varint(buf: &mut [u8], pos: &mut usize, v: i32) {
    put_uvarlong(buf, pos, u64::from(((v << 1) ^ (v >> 31)) as u32));
}

/// Writes a zig-zag varlong at `buf[*pos..]`; the caller has sized `buf`.
pub(crate) fn put_varlong(buf: &mut [u8], pos: &mut usize, v: i64) {
    put_uvarlong(buf, pos, ((v << 1) ^ (v >> 63)) as u64);
}

fn put_uvarlong(buf: &mut [u8], pos: &mut usize, mut u: u64) {
    loop {
        let byte = (u & 0x7f) as u8;
        u >>= 7;
        let out = if u == 0 { byte } else { byte | 0x80 };
        if let Some(slot) = buf.get_mut(*pos) {
            *slot = out;
        }
        *pos += 1;
        if u == 0 {
            return;
        }
    }
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
