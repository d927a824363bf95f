//! Records and batches written again around new values and headers: every other field of
//! the record (attributes, deltas, key) and of the batch header kept, the batch compressed
//! with its codec and its length and CRC computed again. Both sides use it.

#[allow(unused_imports)]
use std::{string::String, string::ToString, vec::Vec};

use crate::codec::types::List;
use crate::codec::wire::varint::push_varlong;
use crate::records::{Compression, Record, RecordBatch};

/// A record's value and headers on their way out.
pub(super) struct OutRecord<'r> {
    /// The new value, unless `keep_value`.
    pub(super) value: Option<Vec<u8>>,
    /// The record's own value goes out.
    pub(super) keep_value: bool,
    /// The new headers, unless `keep_headers`.
    pub(super) headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// The record's own headers go out.
    pub(super) keep_headers: bool,
    /// The record as it came.
    pub(super) record: Record<'r>,
}

impl<'r> OutRecord<'r> {
    /// `record` as it came, until its value or headers are replaced.
    pub(super) fn unchanged(record: Record<'r>) -> Self {
        OutRecord { value: None, keep_value: true, headers: Vec::new(), keep_headers: true, record }
    }
}

fn put_nullable(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => push_varlong(out, -1),
        Some(b) => {
            push_varlong(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// Writes a record as a batch holds it, keeping its attributes, deltas and key.
pub(super) fn write_record(raw: &mut Vec<u8>, out: &OutRecord<'_>, scratch: &mut Vec<u8>) {
    let r = &out.record;
    scratch.clear();
    scratch.push(r.attributes() as u8);
    push_varlong(scratch, r.timestamp_delta());
    push_varlong(scratch, i64::from(r.offset_delta()));
    put_nullable(scratch, r.key());
    if out.keep_value {
        put_nullable(scratch, r.value());
    } else {
        put_nullable(scratch, out.value.as_deref());
    }
    if out.keep_headers {
        push_varlong(scratch, i64::from(r.header_count()));
        for h in r.headers() {
            push_varlong(scratch, h.key.len() as i64);
            scratch.extend_from_slice(h.key);
            put_nullable(scratch, h.value);
        }
    } else {
        push_varlong(scratch, out.headers.len() as i64);
        for (k, v) in &out.headers {
            push_varlong(scratch, k.len() as i64);
            scratch.extend_from_slice(k);
            put_nullable(scratch, v.as_deref());
        }
    }
    push_varlong(raw, scratch.len() as i64);
    raw.extend_from_slice(scratch);
}

/// Writes a batch like `batch` (every header field kept) around new records `raw`,
/// compressed with the batch's codec, its length and CRC recomputed.
pub(super) fn write_batch(
    batch: &RecordBatch<'_>,
    codec: Compression,
    raw: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    const HEADER: usize = 61;
    let start = out.len();
    out.extend_from_slice(batch.bytes().get(..HEADER).ok_or("a batch shorter than its header")?);
    crate::records::compression::compress(codec, raw, out).map_err(|e| e.to_string())?;
    let length = i32::try_from(out.len() - start - 12).map_err(|_| "a batch over 2 GiB".to_string())?;
    out[start + 8..start + 12].copy_from_slice(&length.to_be_bytes());
    let crc = crate::records::crc::crc32c(&out[start + 21..]);
    out[start + 17..start + 21].copy_from_slice(&crc.to_be_bytes());
    Ok(())
}

/// A list's items, owned.
pub(super) fn into_vec<T: Clone>(list: List<'_, T>) -> Vec<T> {
    match list {
        List::Borrowed(s) => s.to_vec(),
        List::Owned(v) => v,
    }
}
