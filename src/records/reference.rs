//! The reference decoder: owned batches and records, built by a separate, straightforward
//! path (a plain byte reader, eager decoding into `Vec`s), so fuzzing can hold the views
//! against it. It shares only the decompressors and the CRC with the views.
//!
//! It checks what the views check, in the same order, and reports the same
//! [`ErrorKind`]s (offsets may differ). Allocation stays bounded: a record count is checked
//! against the bytes before any `Vec` is sized from it, and decompression stops at the
//! caller's limit.

use alloc::vec::Vec;

use super::batch::{Attributes, Compression, RecordBatch, TimestampType};
use super::error::{Error, ErrorKind};
use super::record::Record;
use super::{compression, crc};

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
    fn unsigned(&mut self, max_bytes: u32) -> Result<u64, ErrorKind> {
        let mut v = 0u64;
        for i in 0..max_bytes {
            let b = self.bytes(1)?[0];
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(ErrorKind::VarintTooLong)
    }
    fn varint(&mut self) -> Result<i32, ErrorKind> {
        let u = self.unsigned(5)? as u32;
        Ok((u >> 1) as i32 ^ -((u & 1) as i32))
    }
    fn varlong(&mut self) -> Result<i64, ErrorKind> {
        let u = self.unsigned(10)?;
        Ok((u >> 1) as i64 ^ -((u & 1) as i64))
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
