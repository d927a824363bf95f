//! One record, as Kafka's three record readers read it (`DefaultRecord.readFrom` over a
//! buffer or a stream, and `readPartiallyFrom`), and the fast path for a well-formed one.

use super::super::error::ErrorKind;
use super::super::varint::Cursor;
use super::error::ValidateError;
use crate::codec::wire::varint;

/// The three record readers Kafka's validator uses, which differ on malformed records.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// An uncompressed batch: `DefaultRecord.readFrom(ByteBuffer)` over the records section.
    InPlace,
    /// A compressed batch Kafka will rebuild: `readFrom(InputStream)`, each body read whole.
    Body,
    /// A compressed batch Kafka keeps: `readPartiallyFrom(InputStream)`, keys and values
    /// skipped.
    Partial,
}

fn check_length(size: i32, read: usize) -> Result<(), ErrorKind> {
    if read as i64 == i64::from(size) {
        Ok(())
    } else {
        Err(ErrorKind::RecordLengthMismatch { declared: size as u32, actual: read as u32 })
    }
}

/// Reads one record as Kafka's `DefaultRecord` does in `mode`, with the error it makes.
pub(super) fn read_record(cur: &mut Cursor<'_>, mode: Mode, index: u32) -> Result<Fields, ValidateError> {
    let rec_err = |kind| ValidateError::Record { index, kind };
    let size = match cur.varint() {
        Ok(s) => s,
        Err(ErrorKind::VarintTooLong) if mode == Mode::InPlace => {
            return Err(ValidateError::RecordLengthVarint(index));
        }
        Err(kind) => return Err(rec_err(kind)),
    };
    match mode {
        Mode::InPlace => {
            // DefaultRecord.readFrom(ByteBuffer): the fields are read in place, and may
            // run past a wrong length before the length check fails.
            if size >= 0 && cur.remaining() < size as usize {
                let needed = size as u32;
                return Err(rec_err(ErrorKind::Truncated { needed, available: cur.remaining() as u32 }));
            }
            let start = cur.pos;
            let fields = read_fields(cur).map_err(rec_err)?;
            check_length(size, cur.pos - start).map_err(rec_err)?;
            Ok(fields)
        }
        Mode::Body => {
            // DefaultRecord.readFrom(InputStream): the body is read whole, then parsed.
            if size < 0 {
                return Err(rec_err(ErrorKind::InvalidLength(size)));
            }
            let mut body = Cursor::new(cur.take(size as usize).map_err(rec_err)?);
            let fields = read_fields(&mut body).map_err(rec_err)?;
            check_length(size, body.pos).map_err(rec_err)?;
            Ok(fields)
        }
        Mode::Partial => {
            // DefaultRecord.readPartiallyFrom: the fields are read one after the other
            // from the stream; the length is not held against them.
            if size < 0 {
                return Err(rec_err(ErrorKind::InvalidLength(size)));
            }
            read_fields_partially(cur).map_err(rec_err)
        }
    }
}

/// A varint's bits (zig-zag encoded) from `b` at `p`, and the position after it: up to two
/// bytes inline, longer ones out of line; `None` where [`Cursor::uvarint`] fails (both are
/// the wire layer's one decoder, [`varint`]).
#[inline(always)]
fn uvarint_at(b: &[u8], p: usize) -> Option<(u32, usize)> {
    match varint::short_uvarint(b, p) {
        Some(v) => Some(v),
        None => long_uvarint_at(b, p),
    }
}

/// [`uvarint_at`]'s longer varints; out of line, as records rarely have one.
#[cold]
#[inline(never)]
fn long_uvarint_at(b: &[u8], p: usize) -> Option<(u32, usize)> {
    varint::long_uvarint(b, p).ok()
}

/// A varint from `b` at `p`, as [`Cursor::varint`] reads it.
#[inline(always)]
fn varint_at(b: &[u8], p: usize) -> Option<(i32, usize)> {
    let (v, p) = uvarint_at(b, p)?;
    Some((varint::unzigzag32(v), p))
}

/// A varlong from `b` at `p`, as [`Cursor::varlong`] reads it.
#[inline(always)]
fn varlong_at(b: &[u8], p: usize) -> Option<(i64, usize)> {
    let (v, p) = match varint::short_uvarint(b, p) {
        Some((v, p)) => (u64::from(v), p),
        None => long_uvarlong_at(b, p)?,
    };
    Some((varint::unzigzag64(v), p))
}

/// [`varlong_at`]'s longer varlongs.
#[cold]
#[inline(never)]
fn long_uvarlong_at(b: &[u8], p: usize) -> Option<(u64, usize)> {
    varint::long_uvarlong(b, p).ok()
}

/// Skips a varint length and that many bytes (none when negative, a null): whether it was
/// not null, and the position after it. A zig-zag varint is negative when its bits are
/// odd, and its value is otherwise half of them.
#[inline(always)]
fn bytes_at(b: &[u8], p: usize) -> Option<(bool, usize)> {
    let (v, p) = uvarint_at(b, p)?;
    if v & 1 != 0 {
        return Some((false, p));
    }
    let end = p + (v >> 1) as usize;
    if end > b.len() {
        return None;
    }
    Some((true, end))
}

/// The fast path of [`read_record`]: a record whose length is a non-negative varint and
/// whose fields, read as [`read_fields`] reads them, fill exactly that length within
/// `bytes`. Returns the position after it and its fields, or `None` for any other record
/// (which `read_record` then reads for its error; it reads a record this accepts in every
/// mode, with the same fields).
#[inline(always)]
pub(super) fn well_formed_record(bytes: &[u8], at: usize) -> Option<(usize, Fields)> {
    let (size, p) = uvarint_at(bytes, at)?;
    if size & 1 != 0 {
        return None; // a negative length
    }
    let end = p + (size >> 1) as usize;
    let b = bytes.get(p..end)?;
    if b.is_empty() {
        return None; // not even the attributes
    }
    // Past the attributes.
    let (timestamp_delta, q) = varlong_at(b, 1)?;
    let (offset_delta, q) = varint_at(b, q)?;
    let (has_key, q) = bytes_at(b, q)?;
    let (_, q) = bytes_at(b, q)?;
    let (headers, mut q) = uvarint_at(b, q)?;
    if headers & 1 != 0 {
        return None; // a negative count
    }
    // A count larger than the bytes left (which `read_fields` refuses) is refused by the
    // loop: every header takes two bytes at least, so it runs out of bytes first.
    for _ in 0..headers >> 1 {
        let (key, k) = uvarint_at(b, q)?;
        if key & 1 != 0 {
            return None;
        }
        let key_end = k + (key >> 1) as usize;
        if key_end > b.len() {
            return None;
        }
        (_, q) = bytes_at(b, key_end)?;
    }
    (q == b.len()).then_some((end, Fields { timestamp_delta, offset_delta, has_key }))
}

pub(super) struct Fields {
    pub(super) timestamp_delta: i64,
    pub(super) offset_delta: i32,
    pub(super) has_key: bool,
}

/// A varint length, Kafka's way: negative is null (any negative, not only -1).
fn lenient_bytes(cur: &mut Cursor<'_>) -> Result<bool, ErrorKind> {
    let len = cur.varint()?;
    if len < 0 {
        return Ok(false);
    }
    cur.take(len as usize)?;
    Ok(true)
}

/// Kafka's `skipBytes`: nothing for a length of 0 or less.
fn skip(cur: &mut Cursor<'_>) -> Result<bool, ErrorKind> {
    let len = cur.varint()?;
    if len > 0 {
        cur.take(len as usize)?;
    }
    Ok(len >= 0)
}

fn read_fields_partially(cur: &mut Cursor<'_>) -> Result<Fields, ErrorKind> {
    let _attributes = cur.u8()?;
    let timestamp_delta = cur.varlong()?;
    let offset_delta = cur.varint()?;
    let has_key = skip(cur)?;
    skip(cur)?;
    let headers = cur.varint()?;
    if headers < 0 {
        return Err(ErrorKind::NegativeHeaderCount(headers));
    }
    for _ in 0..headers {
        let klen = cur.varint()?;
        if klen < 0 {
            return Err(ErrorKind::InvalidLength(klen));
        }
        cur.take(klen as usize)?;
        skip(cur)?;
    }
    Ok(Fields { timestamp_delta, offset_delta, has_key })
}

fn read_fields(cur: &mut Cursor<'_>) -> Result<Fields, ErrorKind> {
    let _attributes = cur.u8()?;
    let timestamp_delta = cur.varlong()?;
    let offset_delta = cur.varint()?;
    let has_key = lenient_bytes(cur)?;
    let _value = lenient_bytes(cur)?;
    let headers = cur.varint()?;
    if headers < 0 {
        return Err(ErrorKind::NegativeHeaderCount(headers));
    }
    if headers as usize > cur.remaining() {
        return Err(ErrorKind::HeaderCountTooLarge(headers));
    }
    for _ in 0..headers {
        let klen = cur.varint()?;
        if klen < 0 {
            return Err(ErrorKind::InvalidLength(klen));
        }
        cur.take(klen as usize)?;
        lenient_bytes(cur)?;
    }
    Ok(Fields { timestamp_delta, offset_delta, has_key })
}
