//! Kafka's variable-length integers: the one decoder, the one encoder and their widths.
//!
//! Every varint kwire reads or writes goes through this file: the message reader and writer,
//! views, record batches and their validation, the reference decoders, `explain`, the
//! filters that rewrite sizes. It names nothing else in the crate.
//!
//! # The rule
//!
//! An unsigned varint is seven bits a byte, least significant group first, the high bit set
//! on every byte but the last. A zig-zag varint maps 0, -1, 1, -2, ... to 0, 1, 2, 3, ....
//!
//! # The overflow policy (Apache Kafka's `ByteUtils`)
//!
//! - A varint (32 bits) takes at most five bytes, a varlong (64 bits) at most ten. A last
//!   byte that still has its high bit set is [`VarintError::TooLong`].
//! - Bits of that last byte beyond 32 (64) are dropped, as Kafka's `int` (`long`) shift drops
//!   them: `ff ff ff ff 1f` reads as `0xffff_ffff`.
//! - Non-minimal forms (`80 00` for 0) are accepted.
//! - Running off the end of the bytes is [`VarintError::Truncated`].
//!
//! Writers write the minimal form. Callers map [`VarintError`] to their own error types.

/// Why a varint could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VarintError {
    /// The bytes ended before the varint's last byte.
    Truncated,
    /// The fifth (tenth) byte still had its continuation bit set.
    TooLong,
}

/// The most bytes of an unsigned varint.
pub(crate) const MAX_VARINT_LEN: usize = 5;

/// The most bytes of an unsigned varlong.
pub(crate) const MAX_VARLONG_LEN: usize = 10;

/// The unsigned varint at `b[at..]` and the position after it.
#[inline]
pub(crate) fn uvarint(b: &[u8], at: usize) -> Result<(u32, usize), VarintError> {
    match b.get(at) {
        Some(&x) if x < 0x80 => Ok((u32::from(x), at + 1)),
        _ => long_uvarint(b, at),
    }
}

/// [`uvarint`] past its one-byte case, inlined; callers that want it out of line wrap it.
#[inline]
pub(crate) fn long_uvarint(b: &[u8], at: usize) -> Result<(u32, usize), VarintError> {
    let mut value: u32 = 0;
    for i in 0..MAX_VARINT_LEN {
        let Some(&x) = b.get(at + i) else {
            return Err(VarintError::Truncated);
        };
        // The fifth byte's shift of 28 drops its bits beyond 32.
        value |= u32::from(x & 0x7f) << (7 * i);
        if x < 0x80 {
            return Ok((value, at + i + 1));
        }
    }
    Err(VarintError::TooLong)
}

/// [`uvarint`]'s one- and two-byte cases, for a caller that inlines those (most of a record's
/// varints) and reads the rest out of line with [`long_uvarint`]: `None` for any other.
#[inline(always)]
pub(crate) fn short_uvarint(b: &[u8], at: usize) -> Option<(u32, usize)> {
    let x = *b.get(at)?;
    if x < 0x80 {
        return Some((u32::from(x), at + 1));
    }
    let y = *b.get(at + 1)?;
    if y < 0x80 {
        return Some((u32::from(x & 0x7f) | u32::from(y) << 7, at + 2));
    }
    None
}

/// The unsigned varlong at `b[at..]` and the position after it.
#[inline]
pub(crate) fn uvarlong(b: &[u8], at: usize) -> Result<(u64, usize), VarintError> {
    match b.get(at) {
        Some(&x) if x < 0x80 => Ok((u64::from(x), at + 1)),
        _ => long_uvarlong(b, at),
    }
}

/// [`uvarlong`] past its one-byte case.
#[inline]
pub(crate) fn long_uvarlong(b: &[u8], at: usize) -> Result<(u64, usize), VarintError> {
    let mut value: u64 = 0;
    for i in 0..MAX_VARLONG_LEN {
        let Some(&x) = b.get(at + i) else {
            return Err(VarintError::Truncated);
        };
        // The tenth byte's shift of 63 drops its bits beyond 64.
        value |= u64::from(x & 0x7f) << (7 * i);
        if x < 0x80 {
            return Ok((value, at + i + 1));
        }
    }
    Err(VarintError::TooLong)
}

/// The zig-zag varint at `b[at..]` and the position after it.
#[inline]
#[cfg_attr(
    not(feature = "alloc"),
    allow(dead_code, reason = "read and written by the record layer, which needs alloc")
)]
pub(crate) fn varint(b: &[u8], at: usize) -> Result<(i32, usize), VarintError> {
    uvarint(b, at).map(|(u, p)| (unzigzag32(u), p))
}

/// The zig-zag varlong at `b[at..]` and the position after it.
#[inline]
#[cfg_attr(
    not(feature = "alloc"),
    allow(dead_code, reason = "read and written by the record layer, which needs alloc")
)]
pub(crate) fn varlong(b: &[u8], at: usize) -> Result<(i64, usize), VarintError> {
    uvarlong(b, at).map(|(u, p)| (unzigzag64(u), p))
}

/// The zig-zag step, 32 bits: `v` as its unsigned wire bits.
#[inline]
pub(crate) const fn zigzag32(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

/// The zig-zag step back, 32 bits.
#[inline]
pub(crate) const fn unzigzag32(u: u32) -> i32 {
    ((u >> 1) as i32) ^ -((u & 1) as i32)
}

/// The zig-zag step, 64 bits.
#[inline]
pub(crate) const fn zigzag64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The zig-zag step back, 64 bits.
#[inline]
pub(crate) const fn unzigzag64(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
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
    uvarint_len(zigzag32(v))
}

/// Bytes a zig-zag varlong of `v` takes.
pub const fn varlong_len(v: i64) -> usize {
    uvarlong_len(zigzag64(v))
}

/// The bytes of the unsigned varlong `v` (an unsigned varint is the same for `v` below
/// 2^32): the array and how many of its bytes are used.
#[inline]
#[cfg_attr(
    not(feature = "alloc"),
    allow(dead_code, reason = "read and written by the record layer, which needs alloc")
)]
pub(crate) const fn uvarlong_bytes(mut v: u64) -> ([u8; MAX_VARLONG_LEN], usize) {
    let mut out = [0u8; MAX_VARLONG_LEN];
    let mut n = 0;
    while v >= 0x80 {
        out[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    out[n] = v as u8;
    (out, n + 1)
}

/// Writes the unsigned varlong `v` (or a varint: `u64::from` it) at `buf[pos..]`, a byte at a
/// time; the position after it, or `None` when it does not fit (some bytes may be written).
#[inline]
pub(crate) fn put_uvarlong(buf: &mut [u8], mut pos: usize, mut v: u64) -> Option<usize> {
    while v >= 0x80 {
        *buf.get_mut(pos)? = (v as u8) | 0x80;
        v >>= 7;
        pos += 1;
    }
    *buf.get_mut(pos)? = v as u8;
    Some(pos + 1)
}

/// Appends the unsigned varlong `v`: one or two bytes (nearly every length and delta in a
/// record) stored directly, longer ones through [`uvarlong_bytes`].
#[cfg(feature = "alloc")]
#[inline(always)]
fn push_uvarlong(out: &mut alloc::vec::Vec<u8>, v: u64) {
    if v < 0x80 {
        out.push(v as u8);
    } else if v < 0x4000 {
        out.extend_from_slice(&[(v as u8) | 0x80, (v >> 7) as u8]);
    } else {
        let (b, n) = uvarlong_bytes(v);
        out.extend_from_slice(&b[..n]);
    }
}

/// Appends the unsigned varint `v`.
#[cfg(feature = "owned")]
#[inline]
pub(crate) fn push_uvarint(out: &mut alloc::vec::Vec<u8>, v: u32) {
    push_uvarlong(out, u64::from(v));
}

/// Appends the zig-zag varlong `v`.
#[cfg(feature = "alloc")]
#[inline]
#[cfg_attr(not(feature = "encrypt"), allow(dead_code, reason = "written by record encryption"))]
pub(crate) fn push_varlong(out: &mut alloc::vec::Vec<u8>, v: i64) {
    push_uvarlong(out, zigzag64(v));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_at_every_width() {
        for v in [0u64, 1, 0x7f, 0x80, 0x3fff, 0x4000, 0xffff_ffff, 1 << 35, u64::MAX] {
            let (b, n) = uvarlong_bytes(v);
            assert_eq!(n, uvarlong_len(v));
            let mut put = [0u8; MAX_VARLONG_LEN];
            assert_eq!(put_uvarlong(&mut put, 0, v), Some(n));
            assert_eq!(put[..n], b[..n]);
            assert_eq!(put_uvarlong(&mut put[..n - 1], 0, v), None, "one byte short");
            assert_eq!(uvarlong(&b[..n], 0), Ok((v, n)));
            #[cfg(feature = "alloc")]
            {
                let mut pushed = alloc::vec![0xaa];
                push_uvarlong(&mut pushed, v);
                assert_eq!(pushed[1..], b[..n], "pushed after what was there");
            }
            if let Ok(v32) = u32::try_from(v) {
                assert_eq!(n, uvarint_len(v32));
                assert_eq!(uvarint(&b[..n], 0), Ok((v32, n)));
            }
        }
        for v in [0i64, 1, -1, 63, -64, 64, -65, i64::from(i32::MAX), i64::from(i32::MIN), i64::MAX, i64::MIN]
        {
            let (b, n) = uvarlong_bytes(zigzag64(v));
            assert_eq!(n, varlong_len(v));
            assert_eq!(varlong(&b[..n], 0), Ok((v, n)));
            if let Ok(v32) = i32::try_from(v) {
                assert_eq!(n, varint_len(v32));
                assert_eq!(varint(&b[..n], 0), Ok((v32, n)));
            }
        }
    }

    #[test]
    fn the_overflow_policy() {
        // Bits beyond 32 (64) in the last byte are dropped.
        assert_eq!(uvarint(&[0xff, 0xff, 0xff, 0xff, 0x1f], 0), Ok((u32::MAX, 5)));
        assert_eq!(uvarint(&[0x80, 0x80, 0x80, 0x80, 0x7f], 0), Ok((0xf000_0000, 5)));
        let mut ten = [0xffu8; 10];
        ten[9] = 0x7f;
        assert_eq!(uvarlong(&ten, 0), Ok((u64::MAX, 10)));
        // A continuation bit on the last byte is too long; a short input is truncated.
        assert_eq!(uvarint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00], 0), Err(VarintError::TooLong));
        assert_eq!(uvarlong(&[0xff; 11], 0), Err(VarintError::TooLong));
        assert_eq!(uvarint(&[0x80, 0x80], 0), Err(VarintError::Truncated));
        assert_eq!(uvarint(&[], 0), Err(VarintError::Truncated));
        assert_eq!(uvarint(&[1], 1), Err(VarintError::Truncated));
        // Non-minimal forms are read; reads start at `at`.
        assert_eq!(uvarint(&[0x80, 0x00], 0), Ok((0, 2)));
        assert_eq!(varint(&[9, 0x03], 1), Ok((-2, 2)));
        // The short cases agree with the whole decoder, and leave the rest to it.
        assert_eq!(short_uvarint(&[0x81, 0x01], 0), Some((129, 2)));
        assert_eq!(short_uvarint(&[0x81, 0x81, 0x01], 0), None);
        assert_eq!(short_uvarint(&[0x81], 0), None);
    }
}
