//! XXH32, for the LZ4 frame format's checksums.

const P1: u32 = 2_654_435_761;
const P2: u32 = 2_246_822_519;
const P3: u32 = 3_266_489_917;
const P4: u32 = 668_265_263;
const P5: u32 = 374_761_393;

fn round(acc: u32, lane: u32) -> u32 {
    acc.wrapping_add(lane.wrapping_mul(P2)).rotate_left(13).wrapping_mul(P1)
}

fn word(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// XXH32 of `data` with `seed`.
pub(crate) fn xxh32(data: &[u8], seed: u32) -> u32 {
    let mut rest = data;
    let mut h = if data.len() >= 16 {
        let mut v =
            [seed.wrapping_add(P1).wrapping_add(P2), seed.wrapping_add(P2), seed, seed.wrapping_sub(P1)];
        let mut stripes = data.chunks_exact(16);
        for s in &mut stripes {
            for (i, acc) in v.iter_mut().enumerate() {
                *acc = round(*acc, word(&s[i * 4..]));
            }
        }
        rest = stripes.remainder();
        v[0].rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18))
    } else {
        seed.wrapping_add(P5)
    };
    h = h.wrapping_add(data.len() as u32);
    let mut words = rest.chunks_exact(4);
    for w in &mut words {
        h = h.wrapping_add(word(w).wrapping_mul(P3)).rotate_left(17).wrapping_mul(P4);
    }
    for &b in words.remainder() {
        h = h.wrapping_add(u32::from(b).wrapping_mul(P5)).rotate_left(11).wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_values() {
        // Reference values of XXH32 with seed 0.
        assert_eq!(super::xxh32(b"", 0), 0x02cc_5d05);
        assert_eq!(super::xxh32(b"a", 0), 0x550d_7456);
        assert_eq!(super::xxh32(b"abc", 0), 0x32d1_53ff);
        assert_eq!(super::xxh32(b"Nobody inspects the spammish repetition", 0), 0xe229_3b2f);
    }
}
