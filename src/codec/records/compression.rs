//! Decompression (and, under `alloc`, compression) of record batch payloads.
//!
//! Each codec sits behind a feature: `gzip` (flate2 on miniz_oxide, pure Rust), `snappy`
//! (snap, pure Rust; the xerial framing and raw snappy are both accepted), `lz4` (the LZ4
//! frame format parsed here, blocks by lz4_flex, pure Rust, no `std`), `zstd` (the zstd C
//! library through the `zstd` crate). Without its feature a codec is an
//! [`ErrorKind::CodecNotEnabled`] error.
//!
//! Decompression always stops at a limit: into a slice, the slice's length; into a `Vec`,
//! the `limit` argument. Past it, the result is [`ErrorKind::DecompressedTooLarge`], so a
//! small payload that inflates to gigabytes fails after writing at most `limit` bytes.

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use super::Compression;
use super::error::{Error, ErrorKind};

#[cfg(any(feature = "gzip", feature = "zstd"))]
extern crate std;

fn err(kind: ErrorKind) -> Error {
    Error::new(kind, 0)
}

fn too_large(limit: usize) -> Error {
    err(ErrorKind::DecompressedTooLarge { limit: limit as u64 })
}

/// Decompresses a batch payload compressed with `codec` into `out`, returning the number
/// of bytes written. Output that would not fit in `out` is an
/// [`ErrorKind::DecompressedTooLarge`] error.
pub fn decompress_into(codec: Compression, input: &[u8], out: &mut [u8]) -> Result<usize, Error> {
    decompress_sink(codec, input, &mut Sink::Slice(out), false)
}

/// Decompresses a batch payload into `vec` (cleared first; its capacity is reused),
/// stopping with [`ErrorKind::DecompressedTooLarge`] past `limit` bytes.
#[cfg(feature = "alloc")]
pub fn decompress_to_vec(
    codec: Compression,
    input: &[u8],
    vec: &mut Vec<u8>,
    limit: usize,
) -> Result<(), Error> {
    vec.clear();
    let mut sink = Sink::Vec(vec, limit);
    let n = decompress_sink(codec, input, &mut sink, false)?;
    if let Sink::Vec(v, _) = sink {
        v.truncate(n);
    }
    Ok(())
}

/// Where decompressed bytes go: a caller's slice, or a `Vec` grown up to a limit.
pub(crate) enum Sink<'o> {
    Slice(&'o mut [u8]),
    #[cfg(feature = "alloc")]
    Vec(&'o mut Vec<u8>, usize),
}

#[allow(dead_code)]
impl Sink<'_> {
    fn limit(&self) -> usize {
        match self {
            Sink::Slice(s) => s.len(),
            #[cfg(feature = "alloc")]
            Sink::Vec(_, limit) => *limit,
        }
    }

    /// Makes `buf()[..end.min(limit)]` writable; returns the usable end.
    fn reserve(&mut self, end: usize) -> usize {
        match self {
            Sink::Slice(s) => end.min(s.len()),
            #[cfg(feature = "alloc")]
            Sink::Vec(v, limit) => {
                let end = end.min(*limit);
                if v.len() < end {
                    v.resize(end, 0);
                }
                end
            }
        }
    }

    fn buf(&mut self) -> &mut [u8] {
        match self {
            Sink::Slice(s) => s,
            #[cfg(feature = "alloc")]
            Sink::Vec(v, _) => v.as_mut_slice(),
        }
    }
}

/// `legacy_lz4_header`: skip the LZ4 frame descriptor checksum, as Kafka does for magic 0
/// (its old writers computed it wrongly, KAFKA-3160).
pub(crate) fn decompress_sink(
    codec: Compression,
    input: &[u8],
    sink: &mut Sink<'_>,
    legacy_lz4_header: bool,
) -> Result<usize, Error> {
    let _ = (input, &sink, legacy_lz4_header);
    match codec {
        Compression::None => {
            let end = sink.reserve(input.len());
            if end < input.len() {
                return Err(too_large(sink.limit()));
            }
            sink.buf()[..end].copy_from_slice(input);
            Ok(end)
        }
        #[cfg(feature = "gzip")]
        Compression::Gzip => gzip::decompress(input, sink),
        #[cfg(feature = "snappy")]
        Compression::Snappy => snappy::decompress(input, sink),
        #[cfg(feature = "lz4")]
        Compression::Lz4 => lz4::decompress(input, sink, legacy_lz4_header),
        #[cfg(feature = "zstd")]
        Compression::Zstd => zstd::decompress(input, sink),
        #[allow(unreachable_patterns)]
        other => Err(err(ErrorKind::CodecNotEnabled(other))),
    }
}

/// Reads everything from `r` into the sink, failing past its limit.
#[cfg(any(feature = "gzip", feature = "zstd"))]
fn read_all(mut r: impl std::io::Read, sink: &mut Sink<'_>, what: &'static str) -> Result<usize, Error> {
    let mut pos: usize = 0;
    let limit = sink.limit();
    loop {
        let end = sink.reserve(pos.saturating_add(64 * 1024).max(pos * 2));
        if pos == end {
            // At the limit: one more byte means the output is too large.
            let mut probe = [0u8; 1];
            return match r.read(&mut probe) {
                Ok(0) => Ok(pos),
                Ok(_) => Err(too_large(limit)),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => Err(err(ErrorKind::Decompress(what))),
            };
        }
        match r.read(&mut sink.buf()[pos..end]) {
            Ok(0) => return Ok(pos),
            Ok(n) => pos += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(err(ErrorKind::Decompress(what))),
        }
    }
}

#[cfg(feature = "gzip")]
mod gzip {
    use super::*;

    pub(super) fn decompress(input: &[u8], sink: &mut Sink<'_>) -> Result<usize, Error> {
        // Java's GZIPInputStream reads concatenated members; so does MultiGzDecoder.
        read_all(flate2::read::MultiGzDecoder::new(input), sink, "gzip")
    }

    #[cfg(feature = "alloc")]
    pub(super) fn compress(input: &[u8], out: &mut Vec<u8>) {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(out, flate2::Compression::default());
        // Writing into a Vec cannot fail.
        let _ = e.write_all(input);
        let _ = e.finish();
    }
}

#[cfg(feature = "snappy")]
mod snappy {
    use super::*;

    /// The xerial snappy-java stream header magic.
    const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
    const XERIAL_HEADER_LEN: usize = 16;

    fn raw_into(block: &[u8], sink: &mut Sink<'_>, pos: usize) -> Result<usize, Error> {
        let len = snap::raw::decompress_len(block).map_err(|_| err(ErrorKind::Decompress("snappy")))?;
        let end = pos.checked_add(len).ok_or_else(|| too_large(sink.limit()))?;
        if sink.reserve(end) < end {
            return Err(too_large(sink.limit()));
        }
        snap::raw::Decoder::new()
            .decompress(block, &mut sink.buf()[pos..end])
            .map_err(|_| err(ErrorKind::Decompress("snappy")))?;
        Ok(end)
    }

    pub(super) fn decompress(input: &[u8], sink: &mut Sink<'_>) -> Result<usize, Error> {
        if input.len() >= XERIAL_HEADER_LEN && input[..8] == XERIAL_MAGIC {
            let mut rest = &input[XERIAL_HEADER_LEN..];
            let mut pos = 0;
            while !rest.is_empty() {
                let Some((len, tail)) = rest.split_first_chunk::<4>() else {
                    return Err(err(ErrorKind::Decompress("xerial snappy: truncated block length")));
                };
                let len = u32::from_be_bytes(*len) as usize;
                let Some(block) = tail.get(..len) else {
                    return Err(err(ErrorKind::Decompress("xerial snappy: truncated block")));
                };
                pos = raw_into(block, sink, pos)?;
                rest = &tail[len..];
            }
            Ok(pos)
        } else {
            raw_into(input, sink, 0)
        }
    }

    #[cfg(feature = "alloc")]
    pub(super) fn compress(input: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        // Raw snappy, as librdkafka writes; Kafka's readers take it.
        let start = out.len();
        out.resize(start + snap::raw::max_compress_len(input.len()), 0);
        let n = snap::raw::Encoder::new()
            .compress(input, &mut out[start..])
            .map_err(|_| err(ErrorKind::ValueOutOfRange("snappy input")))?;
        out.truncate(start + n);
        Ok(())
    }
}

#[cfg(feature = "lz4")]
mod lz4 {
    use super::super::xxh32::xxh32;
    use super::*;

    const MAGIC: u32 = 0x184d_2204;
    /// Blocks may refer back this far into earlier blocks (linked blocks).
    const WINDOW: usize = 64 * 1024;

    fn bad(why: &'static str) -> Error {
        err(ErrorKind::Decompress(why))
    }

    fn u32_at(input: &[u8], at: usize) -> Result<u32, Error> {
        input
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| bad("lz4: truncated frame"))
    }

    pub(super) fn decompress(input: &[u8], sink: &mut Sink<'_>, legacy_header: bool) -> Result<usize, Error> {
        if u32_at(input, 0)? != MAGIC {
            return Err(bad("lz4: not an LZ4 frame"));
        }
        let (&flg, &bd) = match input.get(4..6) {
            Some([f, b]) => (f, b),
            _ => return Err(bad("lz4: truncated frame")),
        };
        if flg >> 6 != 1 {
            return Err(bad("lz4: unsupported frame version"));
        }
        let linked = flg & 0x20 == 0;
        let block_checksum = flg & 0x10 != 0;
        let content_size = flg & 0x08 != 0;
        let content_checksum = flg & 0x04 != 0;
        if flg & 0x01 != 0 {
            return Err(bad("lz4: dictionaries are not supported"));
        }
        let block_max = match (bd >> 4) & 0x07 {
            4 => 64 * 1024,
            5 => 256 * 1024,
            6 => 1024 * 1024,
            7 => 4 * 1024 * 1024,
            _ => return Err(bad("lz4: invalid block maximum size")),
        };
        let mut at = 6 + if content_size { 8 } else { 0 };
        let hc = *input.get(at).ok_or_else(|| bad("lz4: truncated frame"))?;
        if !legacy_header && hc != ((xxh32(&input[4..at], 0) >> 8) & 0xff) as u8 {
            return Err(bad("lz4: frame descriptor checksum mismatch"));
        }
        at += 1;
        let mut pos = 0usize;
        loop {
            let word = u32_at(input, at)?;
            at += 4;
            if word == 0 {
                break;
            }
            let len = (word & 0x7fff_ffff) as usize;
            let block = input.get(at..at.saturating_add(len)).ok_or_else(|| bad("lz4: truncated block"))?;
            at += len;
            if block_checksum {
                if u32_at(input, at)? != xxh32(block, 0) {
                    return Err(bad("lz4: block checksum mismatch"));
                }
                at += 4;
            }
            let want = pos.saturating_add(block_max);
            let end = sink.reserve(want);
            if word & 0x8000_0000 != 0 {
                if len > block_max {
                    return Err(bad("lz4: block larger than its maximum"));
                }
                if pos + len > end {
                    return Err(too_large(sink.limit()));
                }
                sink.buf()[pos..pos + len].copy_from_slice(block);
                pos += len;
                continue;
            }
            let buf = sink.buf();
            let (before, after) = buf.split_at_mut(pos);
            let out = &mut after[..end - pos];
            let result = if linked && pos > 0 {
                lz4_flex::block::decompress_into_with_dict(block, out, &before[pos.saturating_sub(WINDOW)..])
            } else {
                lz4_flex::block::decompress_into(block, out)
            };
            match result {
                Ok(n) => pos += n,
                Err(lz4_flex::block::DecompressError::OutputTooSmall { .. }) if end < want => {
                    return Err(too_large(sink.limit()));
                }
                Err(_) => return Err(bad("lz4: invalid block")),
            }
        }
        if content_checksum && u32_at(input, at)? != xxh32(&sink.buf()[..pos], 0) {
            return Err(bad("lz4: content checksum mismatch"));
        }
        if content_size {
            let declared = u64::from_le_bytes(input[6..14].try_into().unwrap_or([0; 8]));
            if declared != pos as u64 {
                return Err(bad("lz4: content size mismatch"));
            }
        }
        Ok(pos)
    }

    /// An LZ4 frame (64 KB independent blocks, no checksums beyond the header's), as
    /// Kafka's Java producer writes.
    #[cfg(feature = "alloc")]
    pub(super) fn compress(input: &[u8], out: &mut Vec<u8>) {
        const BLOCK: usize = 64 * 1024;
        let start = out.len();
        out.extend_from_slice(&MAGIC.to_le_bytes());
        let flg = 0x60u8; // version 1, independent blocks
        let bd = 0x40u8; // 64 KB
        out.extend_from_slice(&[flg, bd, ((xxh32(&[flg, bd], 0) >> 8) & 0xff) as u8]);
        let _ = start;
        let mut scratch = alloc::vec![0u8; lz4_flex::block::get_maximum_output_size(BLOCK)];
        for chunk in input.chunks(BLOCK) {
            match lz4_flex::block::compress_into(chunk, &mut scratch) {
                Ok(n) if n < chunk.len() => {
                    out.extend_from_slice(&(n as u32).to_le_bytes());
                    out.extend_from_slice(&scratch[..n]);
                }
                _ => {
                    out.extend_from_slice(&(chunk.len() as u32 | 0x8000_0000).to_le_bytes());
                    out.extend_from_slice(chunk);
                }
            }
        }
        out.extend_from_slice(&0u32.to_le_bytes());
    }
}

#[cfg(feature = "zstd")]
mod zstd {
    use super::*;

    pub(super) fn decompress(input: &[u8], sink: &mut Sink<'_>) -> Result<usize, Error> {
        if let Sink::Slice(out) = sink {
            // One call into the caller's slice; a slice that is too small is the limit.
            let mut dctx = ::zstd::zstd_safe::DCtx::create();
            return match dctx.decompress(&mut **out, input) {
                Ok(n) => Ok(n),
                Err(code) if ::zstd::zstd_safe::get_error_name(code).contains("too small") => {
                    Err(too_large(out.len()))
                }
                Err(_) => Err(err(ErrorKind::Decompress("zstd"))),
            };
        }
        let decoder = ::zstd::stream::read::Decoder::with_buffer(input)
            .map_err(|_| err(ErrorKind::Decompress("zstd")))?;
        read_all(decoder, sink, "zstd")
    }

    #[cfg(feature = "alloc")]
    pub(super) fn compress(input: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        let bound = ::zstd::zstd_safe::compress_bound(input.len());
        let start = out.len();
        out.resize(start + bound, 0);
        let n = ::zstd::bulk::compress_to_buffer(input, &mut out[start..], 3)
            .map_err(|_| err(ErrorKind::ValueOutOfRange("zstd input")))?;
        out.truncate(start + n);
        Ok(())
    }
}

/// Compresses `input` with `codec`, appending to `out`.
#[cfg(feature = "alloc")]
pub fn compress(codec: Compression, input: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
    match codec {
        Compression::None => {
            out.extend_from_slice(input);
            Ok(())
        }
        #[cfg(feature = "gzip")]
        Compression::Gzip => {
            gzip::compress(input, out);
            Ok(())
        }
        #[cfg(feature = "snappy")]
        Compression::Snappy => snappy::compress(input, out),
        #[cfg(feature = "lz4")]
        Compression::Lz4 => {
            lz4::compress(input, out);
            Ok(())
        }
        #[cfg(feature = "zstd")]
        Compression::Zstd => zstd::compress(input, out),
        #[allow(unreachable_patterns)]
        other => Err(err(ErrorKind::CodecNotEnabled(other))),
    }
}
