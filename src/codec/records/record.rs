//! RecordBatch v2 records: iteration without allocation.

use super::MIN_RECORD_LEN;
use super::control::ControlRecord;
use super::error::{Error, ErrorKind, sat32};
use super::varint::Cursor;

/// What a record needs from its batch to answer absolute offsets and timestamps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BatchContext {
    pub(crate) base_offset: i64,
    pub(crate) base_timestamp: i64,
    pub(crate) max_timestamp: i64,
    pub(crate) log_append_time: bool,
    pub(crate) control: bool,
}

/// The records of one batch, checked one by one as they are iterated.
///
/// After the declared count, bytes left over are a [`ErrorKind::TrailingBytes`] error;
/// running out before it is [`ErrorKind::TooFewRecords`]. After an error the iterator ends.
#[derive(Clone, Debug)]
pub struct Records<'a> {
    cur: Cursor<'a>,
    declared: u32,
    read: u32,
    ctx: BatchContext,
    done: bool,
}

impl<'a> Records<'a> {
    /// Records over an uncompressed records section holding `count` records.
    pub(crate) fn new(bytes: &'a [u8], count: i32, ctx: BatchContext) -> Result<Self, Error> {
        if count < 0 {
            return Err(Error::new(ErrorKind::InvalidRecordCount(count), 0));
        }
        let max = bytes.len() / MIN_RECORD_LEN;
        if count as usize > max {
            return Err(Error::new(ErrorKind::RecordCountTooLarge { count, max: sat32(max) }, 0));
        }
        Ok(Records { cur: Cursor::new(bytes), declared: count as u32, read: 0, ctx, done: false })
    }

    /// The declared number of records.
    pub const fn count(&self) -> u32 {
        self.declared
    }

    /// The records section being iterated (decompressed, for a compressed batch).
    pub const fn bytes(&self) -> &'a [u8] {
        self.cur.buf
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, Error>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.read == self.declared {
            if self.done {
                return None;
            }
            self.done = true;
            let left = self.cur.remaining();
            return if left == 0 {
                None
            } else {
                Some(Err(Error::new(ErrorKind::TrailingBytes(sat32(left)), self.cur.pos)))
            };
        }
        let start = self.cur.pos;
        if self.cur.remaining() == 0 {
            let kind = ErrorKind::TooFewRecords { declared: self.declared, found: self.read };
            self.read = self.declared;
            self.done = true;
            return Some(Err(Error::new(kind, start)));
        }
        match read_record(&mut self.cur, self.ctx) {
            Ok(r) => {
                self.read += 1;
                Some(Ok(r))
            }
            Err(kind) => {
                self.read = self.declared;
                self.done = true;
                Some(Err(Error::new(kind, self.cur.pos)))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.declared - self.read) as usize;
        (0, Some(left + usize::from(!self.done)))
    }
}

impl core::iter::FusedIterator for Records<'_> {}

/// Reads one record at the cursor. On error the cursor is left where the problem is.
#[inline(always)]
fn read_record<'a>(cur: &mut Cursor<'a>, ctx: BatchContext) -> Result<Record<'a>, ErrorKind> {
    let len = cur.varint()?;
    if len < 0 {
        return Err(ErrorKind::InvalidLength(len));
    }
    let body_start = cur.pos;
    let body = cur.take(len as usize)?;
    let mut b = Cursor::new(body);
    match read_body(&mut b, body, ctx) {
        Ok(r) => Ok(r),
        Err(e) => {
            cur.pos = body_start + b.pos;
            Err(match e {
                // A field that runs past the declared length.
                ErrorKind::Truncated { .. } => {
                    ErrorKind::RecordLengthMismatch { declared: len as u32, actual: u32::MAX }
                }
                e => e,
            })
        }
    }
}

#[inline(always)]
fn read_body<'a>(b: &mut Cursor<'a>, body: &'a [u8], ctx: BatchContext) -> Result<Record<'a>, ErrorKind> {
    let attributes = b.u8()? as i8;
    let timestamp_delta = b.varlong()?;
    let offset_delta = b.varint()?;
    let key = b.nullable_bytes()?;
    let value = b.nullable_bytes()?;
    let header_count = b.varint()?;
    if header_count < 0 {
        return Err(ErrorKind::NegativeHeaderCount(header_count));
    }
    if header_count as usize > b.remaining() / 2 {
        return Err(ErrorKind::HeaderCountTooLarge(header_count));
    }
    let headers_start = b.pos;
    for _ in 0..header_count {
        let klen = b.varint()?;
        if klen < 0 {
            return Err(ErrorKind::InvalidLength(klen));
        }
        b.take(klen as usize)?;
        b.nullable_bytes()?;
    }
    if b.remaining() != 0 {
        return Err(ErrorKind::RecordLengthMismatch { declared: sat32(body.len()), actual: sat32(b.pos) });
    }
    Ok(Record {
        attributes,
        control: ctx.control,
        offset_delta,
        header_count: header_count as u32,
        timestamp_delta,
        offset: ctx.base_offset.wrapping_add(offset_delta as i64),
        timestamp: if ctx.log_append_time {
            ctx.max_timestamp
        } else {
            ctx.base_timestamp.wrapping_add(timestamp_delta)
        },
        key,
        value,
        headers: body.get(headers_start..b.pos).unwrap_or_default(),
    })
}

/// One record, borrowing its key, value and headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    attributes: i8,
    control: bool,
    offset_delta: i32,
    header_count: u32,
    timestamp_delta: i64,
    offset: i64,
    timestamp: i64,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
    headers: &'a [u8],
}

impl<'a> Record<'a> {
    /// The record's attributes byte (unused by Kafka so far; always 0 from clients).
    pub const fn attributes(&self) -> i8 {
        self.attributes
    }
    /// Timestamp delta from the batch's base timestamp.
    pub const fn timestamp_delta(&self) -> i64 {
        self.timestamp_delta
    }
    /// Offset delta from the batch's base offset.
    pub const fn offset_delta(&self) -> i32 {
        self.offset_delta
    }
    /// The absolute offset: base offset + offset delta.
    pub const fn offset(&self) -> i64 {
        self.offset
    }
    /// The absolute timestamp: base timestamp + delta for create time; the batch's max
    /// timestamp for log-append time (as Kafka reads it).
    pub const fn timestamp(&self) -> i64 {
        self.timestamp
    }
    /// The key; `None` is null, distinct from an empty key.
    pub const fn key(&self) -> Option<&'a [u8]> {
        self.key
    }
    /// The value; `None` is null (a tombstone), distinct from an empty value.
    pub const fn value(&self) -> Option<&'a [u8]> {
        self.value
    }
    /// The headers in wire order, duplicates kept.
    pub const fn headers(&self) -> Headers<'a> {
        Headers { cur: Cursor::new(self.headers), left: self.header_count }
    }
    /// The headers as the record holds them: each a varint key length, key, varint value
    /// length and value (what follows the header count).
    #[cfg_attr(not(feature = "encrypt"), allow(dead_code, reason = "copied by record encryption"))]
    pub(crate) const fn headers_bytes(&self) -> &'a [u8] {
        self.headers
    }
    /// The number of headers.
    pub const fn header_count(&self) -> u32 {
        self.header_count
    }
    /// Whether the record is in a control batch.
    pub const fn is_control(&self) -> bool {
        self.control
    }
    /// The record read as a control record (transaction marker or KRaft control record).
    pub fn control(&self) -> Result<ControlRecord<'a>, ErrorKind> {
        if !self.control {
            return Err(ErrorKind::InvalidControlRecord);
        }
        ControlRecord::parse(self.key, self.value)
    }
}

/// One record header: a key (bytes, UTF-8 in practice) and a nullable value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// The key bytes.
    pub key: &'a [u8],
    /// The value; `None` is null.
    pub value: Option<&'a [u8]>,
}

impl<'a> Header<'a> {
    /// The key as UTF-8, if it is.
    pub fn key_str(&self) -> Option<&'a str> {
        core::str::from_utf8(self.key).ok()
    }
}

/// A record's headers, in wire order. They were checked when the record was read, so
/// iteration cannot fail.
#[derive(Clone, Debug)]
pub struct Headers<'a> {
    cur: Cursor<'a>,
    left: u32,
}

impl<'a> Iterator for Headers<'a> {
    type Item = Header<'a>;

    #[inline]
    fn next(&mut self) -> Option<Header<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let klen = self.cur.varint().ok()?;
        let key = self.cur.take(usize::try_from(klen).ok()?).ok()?;
        let value = self.cur.nullable_bytes().ok()?;
        Some(Header { key, value })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl ExactSizeIterator for Headers<'_> {}
