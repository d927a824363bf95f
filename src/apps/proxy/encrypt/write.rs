//! Records and batches written again around new values and headers, straight into one
//! output buffer: every other field of the record (attributes, deltas, key) and of the
//! batch header kept, each record's length computed before it is written, the batch
//! compressed with its codec (uncompressed batches are written in place, compressed ones
//! through one scratch buffer) and its length and CRC computed again. Both sides use it,
//! with the scratch buffers of [`Scratch`], which a connection keeps between requests.

#[allow(unused_imports)]
use std::{string::String, string::ToString, vec::Vec};

use core::ops::Range;

use crate::codec::types::List;
use crate::codec::wire::varint::{push_varlong, varlong_len};
use crate::records::{Compression, Record, RecordBatch};

/// The most capacity a scratch buffer keeps between requests: a larger one (made for a
/// huge batch) is freed once its request is done, so a connection never pins more.
const KEEP: usize = 1 << 20;

/// The most capacity the buffer of a request's partitions keeps between requests.
const KEEP_OUT: usize = 4 << 20;

/// Buffers one side of a connection reuses from request to request, each bounded
/// ([`Scratch::done`]).
#[derive(Default)]
pub(super) struct Scratch {
    /// The partitions written again, one after the other (ranges into it).
    pub(super) out: Vec<u8>,
    /// A compressed batch's records, before they are compressed.
    pub(super) raw: Vec<u8>,
    /// A compressed batch's records, decompressed to be read.
    pub(super) buf: Vec<u8>,
    /// A plaintext: a value compressed before sealing, an envelope opened.
    pub(super) plain: Vec<u8>,
    /// A value decompressed after opening.
    pub(super) value: Vec<u8>,
    /// Associated data.
    pub(super) aad: Vec<u8>,
}

impl Scratch {
    /// Empties the buffers after a request, freeing those grown past their bound.
    pub(super) fn done(&mut self) {
        let keep = |v: &mut Vec<u8>, max: usize| {
            if v.capacity() > max {
                *v = Vec::new();
            } else {
                v.clear();
            }
        };
        keep(&mut self.out, KEEP_OUT);
        for v in [&mut self.raw, &mut self.buf, &mut self.plain, &mut self.value, &mut self.aad] {
            keep(v, KEEP);
        }
    }

    /// The capacity held (for tests of the bound).
    #[cfg(test)]
    pub(super) fn capacity(&self) -> usize {
        [&self.out, &self.raw, &self.buf, &self.plain, &self.value, &self.aad]
            .iter()
            .map(|v| v.capacity())
            .sum()
    }
}

/// The bytes a nullable field takes: its varint length and the bytes.
pub(super) fn nullable_len(b: Option<&[u8]>) -> usize {
    match b {
        None => 1,
        Some(b) => varlong_len(b.len() as i64) + b.len(),
    }
}

/// Writes a nullable field.
pub(super) fn put_nullable(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => push_varlong(out, -1),
        Some(b) => {
            push_varlong(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// The bytes of a record before its value: attributes, deltas, key.
pub(super) fn prefix_len(r: &Record<'_>) -> usize {
    1 + varlong_len(r.timestamp_delta()) + varlong_len(i64::from(r.offset_delta())) + nullable_len(r.key())
}

/// Writes a record's length (`body`, every byte after it), attributes, deltas and key.
pub(super) fn put_prefix(out: &mut Vec<u8>, r: &Record<'_>, body: usize) {
    push_varlong(out, body as i64);
    out.push(r.attributes() as u8);
    push_varlong(out, r.timestamp_delta());
    push_varlong(out, i64::from(r.offset_delta()));
    put_nullable(out, r.key());
}

/// The bytes a record's own headers take (their count and the headers).
pub(super) fn kept_headers_len(r: &Record<'_>) -> usize {
    varlong_len(i64::from(r.header_count())) + r.headers_bytes().len()
}

/// Writes a record's own headers, as it holds them.
pub(super) fn put_kept_headers(out: &mut Vec<u8>, r: &Record<'_>) {
    push_varlong(out, i64::from(r.header_count()));
    out.extend_from_slice(r.headers_bytes());
}

/// The bytes one header takes.
pub(super) fn header_len(key: &[u8], value: Option<&[u8]>) -> usize {
    varlong_len(key.len() as i64) + key.len() + nullable_len(value)
}

/// Writes one header.
pub(super) fn put_header(out: &mut Vec<u8>, key: &[u8], value: Option<&[u8]>) {
    push_varlong(out, key.len() as i64);
    out.extend_from_slice(key);
    put_nullable(out, value);
}

/// Writes a record as it came.
pub(super) fn put_unchanged(out: &mut Vec<u8>, r: &Record<'_>) {
    let body = prefix_len(r) + nullable_len(r.value()) + kept_headers_len(r);
    put_prefix(out, r, body);
    put_nullable(out, r.value());
    put_kept_headers(out, r);
}

/// Writes a record as it came with one header more.
pub(super) fn put_with_header(out: &mut Vec<u8>, r: &Record<'_>, key: &[u8], value: &[u8]) {
    let count = i64::from(r.header_count()) + 1;
    let body = prefix_len(r)
        + nullable_len(r.value())
        + varlong_len(count)
        + r.headers_bytes().len()
        + header_len(key, Some(value));
    put_prefix(out, r, body);
    put_nullable(out, r.value());
    push_varlong(out, count);
    out.extend_from_slice(r.headers_bytes());
    put_header(out, key, Some(value));
}

/// The length of a batch's header (everything before its records).
const HEADER: usize = 61;

/// Starts writing a batch like `batch` (every header field kept) at the end of `out`:
/// where it starts. Its records go to [`records_to`], then [`finish_batch`].
pub(super) fn start_batch(batch: &RecordBatch<'_>, out: &mut Vec<u8>) -> Result<usize, String> {
    let start = out.len();
    out.extend_from_slice(batch.bytes().get(..HEADER).ok_or("a batch shorter than its header")?);
    Ok(start)
}

/// Where a batch of `codec` has its records written: straight into `out` if it is not
/// compressed, else into `raw` (emptied), to be compressed into `out` by [`finish_batch`].
pub(super) fn records_to<'v>(
    codec: Compression,
    out: &'v mut Vec<u8>,
    raw: &'v mut Vec<u8>,
) -> &'v mut Vec<u8> {
    if codec == Compression::None {
        out
    } else {
        raw.clear();
        raw
    }
}

/// Ends the batch started at `start`: its records compressed from `raw` if it has a codec,
/// its length and CRC computed again.
pub(super) fn finish_batch(
    codec: Compression,
    raw: &[u8],
    out: &mut Vec<u8>,
    start: usize,
) -> Result<(), String> {
    if codec != Compression::None {
        crate::records::compression::compress(codec, raw, out).map_err(|e| e.to_string())?;
    }
    let length = i32::try_from(out.len() - start - 12).map_err(|_| "a batch over 2 GiB".to_string())?;
    out[start + 8..start + 12].copy_from_slice(&length.to_be_bytes());
    let crc = crate::records::crc::crc32c(&out[start + 21..]);
    out[start + 17..start + 21].copy_from_slice(&crc.to_be_bytes());
    Ok(())
}

/// The bytes of `range` in `out`, as a field.
pub(super) fn slice(out: &[u8], range: Range<usize>) -> List<'_, u8> {
    List::Borrowed(&out[range])
}

/// A list's items, owned.
pub(super) fn into_vec<T: Clone>(list: List<'_, T>) -> Vec<T> {
    match list {
        List::Borrowed(s) => s.to_vec(),
        List::Owned(v) => v,
    }
}
