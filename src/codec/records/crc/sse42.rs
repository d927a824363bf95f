//! CRC-32C with the SSE 4.2 `crc32` instruction (x86-64, with `std` for the run-time test):
//! the second of kwire's two modules with `unsafe` code.
//!
//! The instruction takes eight bytes a cycle but needs three cycles before its result can
//! be fed back, so one chain runs at a third of its rate. [`crc32c`] runs three chains over
//! three adjacent blocks at once and joins them: the register after a block `B` that
//! follows a state `s` is `shift(s, B.len()) ^ crc(0, B)`, where `shift` feeds zero bytes
//! and is linear, so a table per block length ([`Shift`]) applies it in four lookups.
//!
//! The soundness argument is local to [`crc32c`]: it calls the `#[target_feature]`
//! function only after `is_x86_feature_detected!("sse4.2")` said the CPU has the
//! instruction. Miri runs this module's tests in CI with `-C target-feature=+sse4.2`, where
//! that test is true at compile time.
#![allow(unsafe_code)]

use core::arch::x86_64::{_mm_crc32_u8, _mm_crc32_u64};

use super::{POLY_C, crc32c_portable};

/// CRC-32C of `data`: three chains of the `crc32` instruction where the CPU has SSE 4.2,
/// else the portable tables.
#[inline]
pub(super) fn crc32c(data: &[u8]) -> u32 {
    if std::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2 (tested just above), the one target feature
        // `crc32c_sse42` enables; it does nothing else that needs `unsafe`.
        !unsafe { crc32c_sse42(!0, data) }
    } else {
        crc32c_portable(data)
    }
}

/// The register after `data`, from `crc` (no inversion in or out).
#[target_feature(enable = "sse4.2")]
fn crc32c_sse42(mut crc: u32, mut data: &[u8]) -> u32 {
    for (len, shift) in [(LONG, &SHIFT_LONG), (SHORT, &SHIFT_SHORT)] {
        while data.len() >= 3 * len {
            let (a, rest) = data.split_at(len);
            let (b, rest) = rest.split_at(len);
            let (c, rest) = rest.split_at(len);
            let (mut x, mut y, mut z) = (u64::from(crc), 0u64, 0u64);
            for ((a, b), c) in a.chunks_exact(8).zip(b.chunks_exact(8)).zip(c.chunks_exact(8)) {
                x = _mm_crc32_u64(x, word(a));
                y = _mm_crc32_u64(y, word(b));
                z = _mm_crc32_u64(z, word(c));
            }
            // The blocks' lengths are multiples of eight, so each chain fits in 32 bits.
            let (x, y, z) = (x as u32, y as u32, z as u32);
            crc = shift.apply(shift.apply(x) ^ y) ^ z;
            data = rest;
        }
    }
    let mut words = data.chunks_exact(8);
    let mut x = u64::from(crc);
    for w in &mut words {
        x = _mm_crc32_u64(x, word(w));
    }
    let mut crc = x as u32;
    for &b in words.remainder() {
        crc = _mm_crc32_u8(crc, b);
    }
    crc
}

/// Eight bytes as the little-endian word the instruction takes.
#[inline(always)]
fn word(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().unwrap_or_default())
}

/// The block lengths of the three chains: long blocks while the data lasts, then short.
const LONG: usize = 4096;
const SHORT: usize = 256;

static SHIFT_LONG: Shift = Shift::zeros(LONG);
static SHIFT_SHORT: Shift = Shift::zeros(SHORT);

/// The register's change over `n` zero bytes, as four tables of 256 (one per byte of the
/// register): the change is linear, so it is the XOR of each byte's.
struct Shift([[u32; 256]; 4]);

impl Shift {
    /// Built at compile time: one zero bit as a 32 × 32 matrix over GF(2), squared up to
    /// `8 n` bits (`n` a power of two), then applied to every byte value in each position.
    const fn zeros(n: usize) -> Shift {
        assert!(n.is_power_of_two());
        // Column `i` is what bit `i` of the register becomes.
        let mut m = [0u32; 32];
        m[0] = POLY_C;
        let mut i = 1;
        while i < 32 {
            m[i] = 1 << (i - 1);
            i += 1;
        }
        let mut bits = 1;
        while bits < 8 * n {
            m = square(&m);
            bits *= 2;
        }
        let mut t = [[0u32; 256]; 4];
        let mut k = 0;
        while k < 4 {
            let mut v = 0;
            while v < 256 {
                t[k][v] = times(&m, (v as u32) << (8 * k));
                v += 1;
            }
            k += 1;
        }
        Shift(t)
    }

    #[inline(always)]
    fn apply(&self, crc: u32) -> u32 {
        let [a, b, c, d] = crc.to_le_bytes();
        self.0[0][a as usize] ^ self.0[1][b as usize] ^ self.0[2][c as usize] ^ self.0[3][d as usize]
    }
}

/// The matrix `m` times the vector `v`.
const fn times(m: &[u32; 32], mut v: u32) -> u32 {
    let mut out = 0;
    let mut i = 0;
    while v != 0 {
        if v & 1 != 0 {
            out ^= m[i];
        }
        v >>= 1;
        i += 1;
    }
    out
}

/// `m` applied twice.
const fn square(m: &[u32; 32]) -> [u32; 32] {
    let mut out = [0u32; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = times(m, m[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    extern crate alloc;

    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn agrees_with_the_portable_tables_at_every_block_boundary() {
        let long: Vec<u8> = (0..3 * LONG + 3 * SHORT + 40).map(|i| (i * 131 + i / 7) as u8).collect();
        let mut lens: Vec<usize> = (0..40).collect();
        for edge in [3 * SHORT, 3 * LONG, 3 * LONG + 3 * SHORT] {
            lens.extend(edge - 9..edge + 9);
        }
        lens.push(long.len());
        if cfg!(miri) {
            // Miri is slow: the edges of the short blocks and one long run.
            lens.retain(|&n| n < 3 * SHORT + 9 || n == 3 * LONG + 1);
        }
        for n in lens {
            assert_eq!(crc32c(&long[..n]), crc32c_portable(&long[..n]), "{n} bytes");
        }
    }

    #[test]
    fn shift_is_feeding_zero_bytes() {
        // One step of the register over a zero byte, bit by bit.
        let zero_byte = |mut c: u32| {
            for _ in 0..8 {
                c = if c & 1 != 0 { (c >> 1) ^ POLY_C } else { c >> 1 };
            }
            c
        };
        for v in [1u32, 0x8000_0000, 0xdead_beef, 0x0123_4567] {
            let mut c = v;
            for _ in 0..SHORT {
                c = zero_byte(c);
            }
            assert_eq!(SHIFT_SHORT.apply(v), c, "{v:#x}");
        }
    }
}
