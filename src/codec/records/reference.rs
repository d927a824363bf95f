//! The reference decoder: owned batches and records ([`decode`]) and owned legacy messages
//! ([`decode_legacy`]), built by a separate, straightforward path (a plain byte reader,
//! eager decoding into `Vec`s), so fuzzing can hold the views (and [`super::legacy`])
//! against it. It shares only the decompressors and the CRCs with the views.
//!
//! It checks what the views check, in the same order, and reports the same
//! [`ErrorKind`]s (offsets may differ). Allocation stays bounded: a record count is checked
//! against the bytes before any `Vec` is sized from it, and decompression stops at the
//! caller's limit.

use alloc::vec::Vec;

use super::attributes::{Attributes, Compression, TimestampType};
use super::batch::RecordBatch;
use super::error::{Error, ErrorKind};
use super::record::Record;
use super::{compression, crc};
use crate::codec::wire::varint::{self, VarintError};

/// An owned record header.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OwnedHeader {
    /// The key.
    pub key: Vec<u8>,
    /// The value; `None` is null.
    pub value: Option<Vec<u8>>,
}

/// An owned record, with its absolute offset and timestamp worked out.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OwnedRecord {
    /// The attributes byte.
    pub attributes: i8,
    /// Timestamp delta.
    pub timestamp_delta: i64,
    /// Offset delta.
    pub offset_delta: i32,
    /// Absolute offset.
    pub offset: i64,
    /// Absolute timestamp (the batch's max timestamp under log-append time).
    pub timestamp: i64,
    /// The key; `None` is null.
    pub key: Option<Vec<u8>>,
    /// The value; `None` is null.
    pub value: Option<Vec<u8>>,
    /// Headers in wire order.
    pub headers: Vec<OwnedHeader>,
}

impl OwnedRecord {
    /// An owned copy of a record view.
    pub fn from_view(r: &Record<'_>) -> Self {
        OwnedRecord {
            attributes: r.attributes(),
            timestamp_delta: r.timestamp_delta(),
            offset_delta: r.offset_delta(),
            offset: r.offset(),
            timestamp: r.timestamp(),
            key: r.key().map(<[u8]>::to_vec),
            value: r.value().map(<[u8]>::to_vec),
            headers: r
                .headers()
                .map(|h| OwnedHeader { key: h.key.to_vec(), value: h.value.map(<[u8]>::to_vec) })
                .collect(),
        }
    }
}

/// An owned RecordBatch v2: header fields and decoded (decompressed) records.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OwnedBatch {
    /// Base offset.
    pub base_offset: i64,
    /// Batch length.
    pub batch_length: i32,
    /// Partition leader epoch.
    pub partition_leader_epoch: i32,
    /// Stored CRC-32C (checked).
    pub crc: u32,
    /// Attributes.
    pub attributes: i16,
    /// Last offset delta.
    pub last_offset_delta: i32,
    /// Base timestamp.
    pub base_timestamp: i64,
    /// Max timestamp.
    pub max_timestamp: i64,
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// Base sequence.
    pub base_sequence: i32,
    /// The records.
    pub records: Vec<OwnedRecord>,
}

impl OwnedBatch {
    /// An owned copy of a batch view and its records (decompressed into a `Vec` up to
    /// `limit` bytes).
    pub fn from_view(b: &RecordBatch<'_>, limit: usize) -> Result<Self, Error> {
        let mut buf = Vec::new();
        let mut records = Vec::new();
        for r in b.records_in_vec(&mut buf, limit)? {
            records.push(OwnedRecord::from_view(&r?));
        }
        Ok(OwnedBatch {
            base_offset: b.base_offset(),
            batch_length: b.batch_length(),
            partition_leader_epoch: b.partition_leader_epoch(),
            crc: b.crc(),
            attributes: b.attributes().0,
            last_offset_delta: b.last_offset_delta(),
            base_timestamp: b.base_timestamp(),
            max_timestamp: b.max_timestamp(),
            producer_id: b.producer_id(),
            producer_epoch: b.producer_epoch(),
            base_sequence: b.base_sequence(),
            records,
        })
    }
}

/// The batches of a `records` field, and whether it ended in a partial batch.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct OwnedRecords {
    /// The complete batches.
    pub batches: Vec<OwnedBatch>,
    /// Whether a cut-short batch followed them.
    pub partial: bool,
}

struct Rd<'a> {
    b: &'a [u8],
    p: usize,
}

impl<'a> Rd<'a> {
    fn left(&self) -> usize {
        self.b.len() - self.p
    }
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], ErrorKind> {
        if self.left() < n {
            return Err(ErrorKind::Truncated { needed: n as u32, available: self.left() as u32 });
        }
        self.p += n;
        Ok(&self.b[self.p - n..self.p])
    }
    fn be<const N: usize>(&mut self) -> Result<[u8; N], ErrorKind> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }
    /// Moves past a varint the wire layer read at the current position.
    fn wire<T>(&mut self, read: Result<(T, usize), VarintError>) -> Result<T, ErrorKind> {
        match read {
            Ok((v, p)) => {
                self.p = p;
                Ok(v)
            }
            Err(VarintError::TooLong) => Err(ErrorKind::VarintTooLong),
            Err(VarintError::Truncated) => {
                self.p = self.b.len();
                Err(ErrorKind::Truncated { needed: 1, available: 0 })
            }
        }
    }
    fn varint(&mut self) -> Result<i32, ErrorKind> {
        self.wire(varint::varint(self.b, self.p))
    }
    fn varlong(&mut self) -> Result<i64, ErrorKind> {
        self.wire(varint::varlong(self.b, self.p))
    }
    fn nullable(&mut self) -> Result<Option<Vec<u8>>, ErrorKind> {
        match self.varint()? {
            -1 => Ok(None),
            n if n < 0 => Err(ErrorKind::InvalidLength(n)),
            n => Ok(Some(self.bytes(n as usize)?.to_vec())),
        }
    }
}

fn at(offset: usize) -> impl Fn(ErrorKind) -> Error {
    move |k| Error::new(k, offset)
}

/// Decodes every batch of a `records` field, checking CRCs and decompressing compressed
/// batches into owned memory of at most `limit` bytes each.
pub fn decode(field: &[u8], limit: usize) -> Result<OwnedRecords, Error> {
    let mut out = OwnedRecords::default();
    let mut pos = 0;
    while pos < field.len() {
        let rest = &field[pos..];
        if rest.len() < 12 {
            out.partial = true;
            break;
        }
        let length = i32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]);
        if length < 14 {
            return Err(Error::new(ErrorKind::BatchTooShort(length), pos));
        }
        if rest.len() < 17 {
            out.partial = true;
            break;
        }
        // As Kafka: a magic outside 0..=2 is an error even in a cut-short last entry; a
        // cut-short entry of a known magic ends the field.
        let magic = rest[16] as i8;
        if !(0..=2).contains(&magic) {
            return Err(Error::new(ErrorKind::UnsupportedMagic(magic), pos));
        }
        let total = length as usize + 12;
        if rest.len() < total {
            out.partial = true;
            break;
        }
        if magic != 2 {
            return Err(Error::new(ErrorKind::UnsupportedMagic(magic), pos));
        }
        if length < 49 {
            return Err(Error::new(ErrorKind::BatchTooShort(length), pos));
        }
        out.batches.push(decode_batch(&rest[..total], limit)?);
        pos += total;
    }
    Ok(out)
}

fn decode_batch(bytes: &[u8], limit: usize) -> Result<OwnedBatch, Error> {
    let mut r = Rd { b: bytes, p: 0 };
    let e = at(0);
    let base_offset = i64::from_be_bytes(r.be().map_err(&e)?);
    let batch_length = i32::from_be_bytes(r.be().map_err(&e)?);
    let partition_leader_epoch = i32::from_be_bytes(r.be().map_err(&e)?);
    let _magic = r.be::<1>().map_err(&e)?;
    let stored = u32::from_be_bytes(r.be().map_err(&e)?);
    let computed = crc::crc32c(&bytes[21..]);
    if stored != computed {
        return Err(Error::new(ErrorKind::CrcMismatch { stored, computed }, 17));
    }
    let attributes = i16::from_be_bytes(r.be().map_err(&e)?);
    let last_offset_delta = i32::from_be_bytes(r.be().map_err(&e)?);
    let base_timestamp = i64::from_be_bytes(r.be().map_err(&e)?);
    let max_timestamp = i64::from_be_bytes(r.be().map_err(&e)?);
    let producer_id = i64::from_be_bytes(r.be().map_err(&e)?);
    let producer_epoch = i16::from_be_bytes(r.be().map_err(&e)?);
    let base_sequence = i32::from_be_bytes(r.be().map_err(&e)?);
    let count = i32::from_be_bytes(r.be().map_err(&e)?);
    let attrs = Attributes(attributes);
    let codec = attrs.compression().map_err(at(21))?;
    let payload = &bytes[61..];
    let decompressed;
    let records_bytes: &[u8] = if codec == Compression::None {
        payload
    } else {
        if count < 0 {
            return Err(Error::new(ErrorKind::InvalidRecordCount(count), 0));
        }
        if count as usize > limit / 7 {
            return Err(Error::new(ErrorKind::RecordCountTooLarge { count, max: (limit / 7) as u32 }, 0));
        }
        let mut v = Vec::new();
        compression::decompress_to_vec(codec, payload, &mut v, limit)?;
        decompressed = v;
        &decompressed
    };
    if count < 0 {
        return Err(Error::new(ErrorKind::InvalidRecordCount(count), 0));
    }
    if count as usize > records_bytes.len() / 7 {
        return Err(Error::new(
            ErrorKind::RecordCountTooLarge { count, max: (records_bytes.len() / 7) as u32 },
            0,
        ));
    }
    let log_append = attrs.timestamp_type() == TimestampType::LogAppendTime;
    let mut records = Vec::with_capacity(count as usize);
    let mut rr = Rd { b: records_bytes, p: 0 };
    for found in 0..count as u32 {
        if rr.left() == 0 {
            return Err(Error::new(ErrorKind::TooFewRecords { declared: count as u32, found }, rr.p));
        }
        let mut rec = decode_record(&mut rr).map_err(at(rr.p))?;
        rec.offset = base_offset.wrapping_add(i64::from(rec.offset_delta));
        rec.timestamp =
            if log_append { max_timestamp } else { base_timestamp.wrapping_add(rec.timestamp_delta) };
        records.push(rec);
    }
    if rr.left() != 0 {
        return Err(Error::new(ErrorKind::TrailingBytes(rr.left() as u32), rr.p));
    }
    Ok(OwnedBatch {
        base_offset,
        batch_length,
        partition_leader_epoch,
        crc: stored,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        records,
    })
}

fn decode_record(r: &mut Rd<'_>) -> Result<OwnedRecord, ErrorKind> {
    let len = r.varint()?;
    if len < 0 {
        return Err(ErrorKind::InvalidLength(len));
    }
    let body = r.bytes(len as usize)?;
    let mut b = Rd { b: body, p: 0 };
    let fields = (|| {
        let attributes = b.be::<1>()?[0] as i8;
        let timestamp_delta = b.varlong()?;
        let offset_delta = b.varint()?;
        let key = b.nullable()?;
        let value = b.nullable()?;
        let n = b.varint()?;
        if n < 0 {
            return Err(ErrorKind::NegativeHeaderCount(n));
        }
        if n as usize > b.left() / 2 {
            return Err(ErrorKind::HeaderCountTooLarge(n));
        }
        let mut headers = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let klen = b.varint()?;
            if klen < 0 {
                return Err(ErrorKind::InvalidLength(klen));
            }
            let key = b.bytes(klen as usize)?.to_vec();
            let value = b.nullable()?;
            headers.push(OwnedHeader { key, value });
        }
        if b.left() != 0 {
            return Err(ErrorKind::RecordLengthMismatch { declared: len as u32, actual: b.p as u32 });
        }
        Ok(OwnedRecord {
            attributes,
            timestamp_delta,
            offset_delta,
            offset: 0,
            timestamp: 0,
            key,
            value,
            headers,
        })
    })();
    fields.map_err(|k| match k {
        ErrorKind::Truncated { .. } => {
            ErrorKind::RecordLengthMismatch { declared: len as u32, actual: u32::MAX }
        }
        k => k,
    })
}

// ---------------------------------------------------------------------------------------
// Legacy message sets (magic 0 and 1)

/// An owned legacy message (magic 0 or 1), read by [`decode_legacy`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OwnedLegacyMessage {
    /// The offset (absolute for inner messages).
    pub offset: i64,
    /// The stored CRC-32.
    pub crc: u32,
    /// Whether the stored CRC is the CRC-32 of the message (magic to the end).
    pub crc_valid: bool,
    /// 0 or 1.
    pub magic: i8,
    /// The attributes byte (inner messages of a log-append-time wrapper get bit 3 set).
    pub attributes: i8,
    /// The timestamp (magic 1; a log-append-time wrapper's own for its inner messages).
    pub timestamp: Option<i64>,
    /// The key; `None` is null.
    pub key: Option<Vec<u8>>,
    /// The value; `None` is null (for a wrapper, the compressed inner set).
    pub value: Option<Vec<u8>>,
    /// For a message whose codec bits are not 0: its inner messages (CRC checked, value
    /// decompressed, offsets made absolute), or the kind of error that stopped them. `None`
    /// for an uncompressed message and for inner messages.
    pub inner: Option<Result<Vec<OwnedLegacyMessage>, ErrorKind>>,
}

impl OwnedLegacyMessage {
    /// An owned copy of a legacy message view, without its inner messages.
    pub fn from_view(m: &super::legacy::LegacyMessage<'_>) -> Self {
        OwnedLegacyMessage {
            offset: m.offset(),
            crc: m.crc(),
            crc_valid: m.verify_crc().is_ok(),
            magic: m.magic(),
            attributes: m.attributes(),
            timestamp: m.timestamp(),
            key: m.key().map(<[u8]>::to_vec),
            value: m.value().map(<[u8]>::to_vec),
            inner: None,
        }
    }
}

/// The messages of a legacy message set, and whether it ended in a partial entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct OwnedLegacyMessages {
    /// The complete messages.
    pub messages: Vec<OwnedLegacyMessage>,
    /// Whether a cut-short entry followed them.
    pub partial: bool,
}

/// Reads every message of a legacy message set, and the inner messages of each compressed
/// wrapper (decompressed into owned memory of at most `limit` bytes each). As
/// [`super::legacy::LegacyMessages`]: a cut-short last entry ends the set (`partial`); a
/// magic-2 entry is `UnsupportedMagic`. A wrapper's problems (its CRC, its codec, its
/// compressed bytes, its inner messages) are kept in its `inner` and do not stop the set.
pub fn decode_legacy(field: &[u8], limit: usize) -> Result<OwnedLegacyMessages, Error> {
    let mut out = OwnedLegacyMessages::default();
    let mut pos = 0;
    while pos < field.len() {
        let rest = &field[pos..];
        let Some(total) = legacy_frame(rest).map_err(at(pos))? else {
            out.partial = true;
            break;
        };
        let mut m = legacy_message(&rest[..total]).map_err(|e| e.shifted(pos))?;
        if m.attributes & 0x07 != 0 {
            m.inner = Some(legacy_inner(&m, limit));
        }
        out.messages.push(m);
        pos += total;
    }
    Ok(out)
}

/// The length of the legacy entry at the start of `rest`, `None` when it is cut short.
/// As for batches: a length below 14 and a magic outside 0..=2 are errors (checked as soon
/// as their bytes are there), and so is magic 2 here.
fn legacy_frame(rest: &[u8]) -> Result<Option<usize>, ErrorKind> {
    if rest.len() < 12 {
        return Ok(None);
    }
    let length = i32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]);
    if length < 14 {
        return Err(ErrorKind::BatchTooShort(length));
    }
    if rest.len() < 17 {
        return Ok(None);
    }
    let magic = rest[16] as i8;
    if !(0..=2).contains(&magic) {
        return Err(ErrorKind::UnsupportedMagic(magic));
    }
    let total = 12 + length as usize;
    if rest.len() < total {
        return Ok(None);
    }
    if magic == 2 {
        return Err(ErrorKind::UnsupportedMagic(2));
    }
    Ok(Some(total))
}

/// One whole legacy entry: offset, size, CRC, magic, attributes, [timestamp], key, value.
fn legacy_message(entry: &[u8]) -> Result<OwnedLegacyMessage, Error> {
    let mut r = Rd { b: entry, p: 0 };
    let e = at(0);
    let offset = i64::from_be_bytes(r.be().map_err(&e)?);
    let _size = r.be::<4>().map_err(&e)?;
    let crc = u32::from_be_bytes(r.be().map_err(&e)?);
    let magic = r.be::<1>().map_err(&e)?[0] as i8;
    let attributes = r.be::<1>().map_err(&e)?[0] as i8;
    let timestamp = if magic == 1 {
        let ts = r.be::<8>().map_err(|_| Error::new(ErrorKind::BatchTooShort(entry.len() as i32 - 12), 8))?;
        Some(i64::from_be_bytes(ts))
    } else {
        None
    };
    let key = legacy_bytes(&mut r)?;
    let value = legacy_bytes(&mut r)?;
    if r.left() != 0 {
        return Err(Error::new(ErrorKind::TrailingBytes(r.left() as u32), r.p));
    }
    Ok(OwnedLegacyMessage {
        offset,
        crc,
        crc_valid: crc::crc32(&entry[16..]) == crc,
        magic,
        attributes,
        timestamp,
        key,
        value,
        inner: None,
    })
}

/// An int32-length nullable byte string.
fn legacy_bytes(r: &mut Rd<'_>) -> Result<Option<Vec<u8>>, Error> {
    let p = r.p;
    match i32::from_be_bytes(r.be().map_err(at(p))?) {
        -1 => Ok(None),
        n if n < 0 => Err(Error::new(ErrorKind::InvalidLength(n), p)),
        n => {
            let p = r.p;
            Ok(Some(r.bytes(n as usize).map_err(at(p))?.to_vec()))
        }
    }
}

/// A wrapper's inner messages: CRC, codec (zstd and ids 5-7 are unknown in legacy
/// messages), decompression under `limit`, then each inner message, which must be complete,
/// of the wrapper's magic and uncompressed.
fn legacy_inner(w: &OwnedLegacyMessage, limit: usize) -> Result<Vec<OwnedLegacyMessage>, ErrorKind> {
    if !w.crc_valid {
        let mut bytes = Vec::new();
        legacy_body(w, &mut bytes);
        return Err(ErrorKind::CrcMismatch { stored: w.crc, computed: crc::crc32(&bytes) });
    }
    let codec = match w.attributes & 0x07 {
        id @ 1..=3 => Compression::from_id(id as u8)?,
        id => return Err(ErrorKind::UnknownCompression(id as u8)),
    };
    let mut set = Vec::new();
    let mut sink = compression::Sink::Vec(&mut set, limit);
    let n =
        compression::decompress_sink(codec, w.value.as_deref().unwrap_or_default(), &mut sink, w.magic == 0)
            .map_err(|e| e.kind())?;
    set.truncate(n);

    // Magic 1: inner offsets are relative, the wrapper holds the last one's absolute offset.
    // The last relative offset is that of the last entry whose framing is whole.
    let mut base = 0i64;
    if w.magic == 1 {
        let mut last = 0i64;
        let mut p = 0;
        while let Some(rest) = set.get(p..).filter(|r| r.len() >= 17) {
            let length = i32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]);
            if length < 14 || !(0..=2).contains(&(rest[16] as i8)) || rest.len() < 12 + length as usize {
                break;
            }
            last = i64::from_be_bytes(rest[..8].try_into().unwrap_or([0; 8]));
            p += 12 + length as usize;
        }
        base = w.offset.wrapping_sub(last);
    }
    let log_append = w.magic == 1 && w.attributes & 0x08 != 0;

    let mut inner = Vec::new();
    let mut p = 0;
    while p < set.len() {
        let rest = &set[p..];
        let total = match legacy_frame(rest) {
            Ok(Some(total)) => total,
            Ok(None) => {
                return Err(ErrorKind::Truncated { needed: 26, available: rest.len() as u32 });
            }
            Err(k) => return Err(k),
        };
        let mut m = legacy_message(&rest[..total]).map_err(|e| e.kind())?;
        if m.magic != w.magic {
            return Err(ErrorKind::UnsupportedMagic(m.magic));
        }
        if m.attributes & 0x07 != 0 {
            return Err(ErrorKind::Decompress("compressed inner message"));
        }
        m.offset = m.offset.wrapping_add(base);
        if log_append && let Some(ts) = w.timestamp {
            m.timestamp = Some(ts);
            m.attributes |= 0x08;
        }
        inner.push(m);
        p += total;
    }
    Ok(inner)
}

/// The bytes a legacy message's CRC covers, written again from its fields.
fn legacy_body(m: &OwnedLegacyMessage, out: &mut Vec<u8>) {
    out.push(m.magic as u8);
    out.push(m.attributes as u8);
    if let Some(ts) = m.timestamp {
        out.extend_from_slice(&ts.to_be_bytes());
    }
    for b in [&m.key, &m.value] {
        match b {
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(b) => {
                out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                out.extend_from_slice(b);
            }
        }
    }
}
