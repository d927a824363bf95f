//! Checksums: CRC-32C (Castagnoli) for RecordBatch v2 and CRC-32 (IEEE) for legacy
//! messages.
//!
//! With the `std` feature, [`crc32c()`] runs the SSE 4.2 `crc32` instruction, three chains
//! at once, on x86-64 when the CPU has it (tested at run time, `sse42.rs`), and the `crc32c`
//! crate (ARMv8 CRC instructions) on other targets. Without `std` it uses
//! [`crc32c_portable`], this module's own slice-by-8 tables, which need neither `std`
//! nor an allocator. [`crc32`] (IEEE, legacy messages only) is always the portable one.

#[cfg(all(feature = "std", target_arch = "x86_64"))]
mod sse42;

/// Reflected CRC-32C polynomial.
const POLY_C: u32 = 0x82f6_3b78;
/// Reflected CRC-32 (IEEE 802.3) polynomial.
const POLY_IEEE: u32 = 0xedb8_8320;

const fn tables(poly: u32) -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ poly } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut i = 0;
    while i < 256 {
        let mut j = 1;
        while j < 8 {
            let prev = t[j - 1][i];
            t[j][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            j += 1;
        }
        i += 1;
    }
    t
}

static TABLES_C: [[u32; 256]; 8] = tables(POLY_C);
static TABLES_IEEE: [[u32; 256]; 8] = tables(POLY_IEEE);

fn slice_by_8(t: &[[u32; 256]; 8], crc: u32, data: &[u8]) -> u32 {
    let mut crc = !crc;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let lo = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) ^ crc;
        let hi = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
        crc = t[7][(lo & 0xff) as usize]
            ^ t[6][((lo >> 8) & 0xff) as usize]
            ^ t[5][((lo >> 16) & 0xff) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][(hi & 0xff) as usize]
            ^ t[2][((hi >> 8) & 0xff) as usize]
            ^ t[1][((hi >> 16) & 0xff) as usize]
            ^ t[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        crc = (crc >> 8) ^ t[0][((crc ^ u32::from(b)) & 0xff) as usize];
    }
    !crc
}

/// CRC-32C of `data`, hardware-accelerated where the build and the CPU allow.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    {
        sse42::crc32c(data)
    }
    #[cfg(all(feature = "std", not(target_arch = "x86_64")))]
    {
        ::crc32c::crc32c(data)
    }
    #[cfg(not(feature = "std"))]
    {
        crc32c_portable(data)
    }
}

/// CRC-32C of `data` with this module's portable slice-by-8 tables (no `std`, no
/// allocation, no `unsafe`).
pub fn crc32c_portable(data: &[u8]) -> u32 {
    slice_by_8(&TABLES_C, 0, data)
}

/// CRC-32 (IEEE 802.3, as in zlib and Java's `java.util.zip.CRC32`) of `data`.
pub fn crc32(data: &[u8]) -> u32 {
    slice_by_8(&TABLES_IEEE, 0, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values() {
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c_portable(b"123456789"), 0xe306_9283);
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        let long: [u8; 1000] = core::array::from_fn(|i| (i * 7 + 3) as u8);
        for n in [0, 1, 7, 8, 9, 63, 1000] {
            assert_eq!(crc32c(&long[..n]), crc32c_portable(&long[..n]));
        }
    }
}
