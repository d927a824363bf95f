//! UTF-8 with an ASCII fast path: the one place in kwire with `unsafe` code.
//!
//! Kafka's strings are names (topics, groups, clients, hosts) and almost always ASCII. Core's
//! `str::from_utf8` is a call and a general loop; for a short ASCII string, checking eight
//! bytes at a time inline and then taking the bytes as they are is several times faster, and
//! views check each string when they are built and again whenever it is read. Measured in
//! [`manual::benchmarks`](crate::manual::benchmarks) (ListGroups v2 with 1,000 groups: view + walk 39 µs with
//! `from_utf8` on every string).
//!
//! The soundness argument is local to [`str_from`]: it hands bytes to
//! `from_utf8_unchecked` only after checking, in the same function, that every one of them
//! is below 0x80. Miri runs this module's tests in CI (`.ci/run`), and the fuzz targets
//! reach it through every view.
#![allow(unsafe_code)]

/// `bytes` as `&str` if they are UTF-8: inline for ASCII, else through `core::str`.
#[inline]
pub fn str_from(bytes: &[u8]) -> Option<&str> {
    if is_ascii(bytes) {
        // SAFETY: `is_ascii` returned true, so every byte of `bytes` is below 0x80. A
        // sequence of bytes below 0x80 is valid UTF-8 (each byte is a one-byte character).
        Some(unsafe { core::str::from_utf8_unchecked(bytes) })
    } else {
        not_ascii(bytes)
    }
}

/// [`str_from`] for bytes that are not all ASCII, out of the inlined path.
#[cold]
#[inline(never)]
fn not_ascii(bytes: &[u8]) -> Option<&str> {
    core::str::from_utf8(bytes).ok()
}

/// Whether every byte is below 0x80, reading up to sixteen bytes in two overlapping
/// word loads and longer slices through core's vectorised check.
#[inline]
pub(super) fn is_ascii(bytes: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let n = bytes.len();
    if n > 16 {
        return bytes.is_ascii();
    }
    if let (Some(head), Some(tail)) = (bytes.first_chunk::<8>(), bytes.last_chunk::<8>()) {
        return (u64::from_ne_bytes(*head) | u64::from_ne_bytes(*tail)) & HIGH == 0;
    }
    if let (Some(head), Some(tail)) = (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        return (u32::from_ne_bytes(*head) | u32::from_ne_bytes(*tail)) & HIGH as u32 == 0;
    }
    bytes.iter().fold(0, |acc, b| acc | b) & 0x80 == 0
}

#[cfg(test)]
mod tests {
    extern crate alloc;

    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn ascii_of_every_length_and_position() {
        for len in 0..if cfg!(miri) { 20 } else { 40 } {
            let ascii: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            assert_eq!(str_from(&ascii).map(str::len), Some(len));
            for at in 0..len {
                let mut high = ascii.clone();
                high[at] = 0x80;
                assert!(str_from(&high).is_none(), "len {len}, 0x80 at {at}");
                high[at] = 0xff;
                assert!(str_from(&high).is_none(), "len {len}, 0xff at {at}");
            }
        }
    }

    #[test]
    fn non_ascii_goes_through_core() {
        for s in ["é", "日本語", "héllo wörld — 🚀", "abcdefgh日本語"] {
            assert_eq!(str_from(s.as_bytes()), Some(s));
        }
        let text = "héllo".as_bytes();
        assert!(str_from(&text[..2]).is_none(), "a cut character is not UTF-8");
        assert!(str_from(&[0xc3, 0x28]).is_none());
    }

    #[test]
    fn agrees_with_core_on_every_two_byte_string() {
        // Miri is slow: a sample there, every pair natively.
        let step = if cfg!(miri) { 15 } else { 1 };
        for a in (0..=255u8).step_by(step) {
            for b in (0..=255u8).step_by(step) {
                let bytes = [a, b];
                assert_eq!(str_from(&bytes), core::str::from_utf8(&bytes).ok());
            }
        }
    }
}
