//! Building RecordBatch v2 batches into a caller's buffer.

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use super::attributes::{Attributes, Compression, TimestampType};
use super::batch::CRC_START;
use super::error::{Error, ErrorKind, sat32};
use super::varint::{put_bytes, put_varint, put_varlong, varint_len, varlong_len};
use super::{BATCH_HEADER_LEN, LOG_OVERHEAD, crc};

/// A header to write: a key and a nullable value, both borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewHeader<'a> {
    /// The key.
    pub key: &'a [u8],
    /// The value; `None` writes null.
    pub value: Option<&'a [u8]>,
}

/// A record to write, borrowing its key, value and headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewRecord<'a> {
    /// The key; `None` writes null.
    pub key: Option<&'a [u8]>,
    /// The value; `None` writes null (a tombstone).
    pub value: Option<&'a [u8]>,
    /// Headers, written in this order.
    pub headers: &'a [NewHeader<'a>],
    /// The absolute timestamp; `None` takes the batch's base timestamp.
    pub timestamp: Option<i64>,
}

impl<'a> NewRecord<'a> {
    /// A record with `key` and `value`, no headers, at the batch's base timestamp.
    pub const fn new(key: Option<&'a [u8]>, value: Option<&'a [u8]>) -> Self {
        NewRecord { key, value, headers: &[], timestamp: None }
    }

    /// The same record with `headers`.
    pub const fn with_headers(self, headers: &'a [NewHeader<'a>]) -> Self {
        NewRecord { headers, ..self }
    }

    /// The same record at absolute timestamp `ts`.
    pub const fn with_timestamp(self, ts: i64) -> Self {
        NewRecord { timestamp: Some(ts), ..self }
    }

    /// Bytes of the record body (after its length prefix).
    fn body_len(&self, ts_delta: i64, offset_delta: i32) -> Result<usize, Error> {
        let mut n = 1 + varlong_len(ts_delta) + varint_len(offset_delta);
        n += nullable_len(self.key)? + nullable_len(self.value)?;
        n += varint_len(len_i32(self.headers.len(), "header count")?);
        for h in self.headers {
            n += varint_len(len_i32(h.key.len(), "header key length")?) + h.key.len();
            n += nullable_len(h.value)?;
        }
        if n > i32::MAX as usize {
            return Err(Error::new(ErrorKind::ValueOutOfRange("record length"), 0));
        }
        Ok(n)
    }
}

fn len_i32(n: usize, what: &'static str) -> Result<i32, Error> {
    i32::try_from(n).map_err(|_| Error::new(ErrorKind::ValueOutOfRange(what), 0))
}

fn nullable_len(b: Option<&[u8]>) -> Result<usize, Error> {
    Ok(match b {
        None => 1,
        Some(b) => varint_len(len_i32(b.len(), "key or value length")?) + b.len(),
    })
}

fn put_nullable(buf: &mut [u8], pos: &mut usize, b: Option<&[u8]>) {
    match b {
        None => put_varint(buf, pos, -1),
        Some(b) => {
            put_varint(buf, pos, b.len() as i32);
            put_bytes(buf, pos, b);
        }
    }
}

/// A RecordBatch v2 to encode: header fields and borrowed records.
///
/// [`BatchBuilder::encoded_len`] is exact and does every check; [`BatchBuilder::encode`]
/// then writes the batch, CRC included, into the caller's buffer without allocating
/// (uncompressed batches). With `alloc`, [`BatchBuilder::encode_to_vec`] also writes
/// compressed batches.
#[derive(Clone, Copy, Debug)]
pub struct BatchBuilder<'a> {
    /// Offset of the first record (0 from producers; the broker assigns offsets).
    pub base_offset: i64,
    /// Partition leader epoch (-1 from producers).
    pub partition_leader_epoch: i32,
    /// Compression codec.
    pub compression: Compression,
    /// Timestamp type.
    pub timestamp_type: TimestampType,
    /// Transactional flag.
    pub transactional: bool,
    /// Control flag.
    pub control: bool,
    /// Base timestamp; record timestamps are written as deltas from it.
    pub base_timestamp: i64,
    /// Max timestamp; `None` computes it from the records.
    pub max_timestamp: Option<i64>,
    /// Producer id (-1 when not idempotent).
    pub producer_id: i64,
    /// Producer epoch (-1 when not idempotent).
    pub producer_epoch: i16,
    /// Base sequence (-1 when not idempotent).
    pub base_sequence: i32,
    /// The records; record `i` gets offset delta `i`.
    pub records: &'a [NewRecord<'a>],
}

impl<'a> BatchBuilder<'a> {
    /// An uncompressed, non-idempotent create-time batch of `records` at `base_offset`.
    pub const fn new(base_offset: i64, base_timestamp: i64, records: &'a [NewRecord<'a>]) -> Self {
        BatchBuilder {
            base_offset,
            partition_leader_epoch: -1,
            compression: Compression::None,
            timestamp_type: TimestampType::CreateTime,
            transactional: false,
            control: false,
            base_timestamp,
            max_timestamp: None,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            records,
        }
    }

    fn attributes(&self) -> Attributes {
        Attributes::new(self.compression, self.timestamp_type, self.transactional, self.control)
    }

    fn ts_delta(&self, r: &NewRecord<'_>) -> Result<i64, Error> {
        r.timestamp
            .unwrap_or(self.base_timestamp)
            .checked_sub(self.base_timestamp)
            .ok_or(Error::new(ErrorKind::ValueOutOfRange("timestamp delta"), 0))
    }

    /// Bytes of the uncompressed records section.
    fn records_len(&self) -> Result<usize, Error> {
        len_i32(self.records.len(), "record count")?;
        let mut total = 0usize;
        for (i, r) in self.records.iter().enumerate() {
            let body = r.body_len(self.ts_delta(r)?, i as i32)?;
            total = total
                .checked_add(varint_len(body as i32) + body)
                .ok_or(Error::new(ErrorKind::ValueOutOfRange("batch length"), 0))?;
        }
        Ok(total)
    }

    /// The exact size of the encoded batch (uncompressed), after checking every field.
    pub fn encoded_len(&self) -> Result<usize, Error> {
        let total = BATCH_HEADER_LEN + self.records_len()?;
        if total - LOG_OVERHEAD > i32::MAX as usize {
            return Err(Error::new(ErrorKind::ValueOutOfRange("batch length"), 0));
        }
        Ok(total)
    }

    fn write_records(&self, buf: &mut [u8], pos: &mut usize) -> Result<(), Error> {
        for (i, r) in self.records.iter().enumerate() {
            let ts_delta = self.ts_delta(r)?;
            let body = r.body_len(ts_delta, i as i32)?;
            put_varint(buf, pos, body as i32);
            buf[*pos] = 0;
            *pos += 1;
            put_varlong(buf, pos, ts_delta);
            put_varint(buf, pos, i as i32);
            put_nullable(buf, pos, r.key);
            put_nullable(buf, pos, r.value);
            put_varint(buf, pos, r.headers.len() as i32);
            for h in r.headers {
                put_varint(buf, pos, h.key.len() as i32);
                put_bytes(buf, pos, h.key);
                put_nullable(buf, pos, h.value);
            }
        }
        Ok(())
    }

    fn max_timestamp(&self) -> i64 {
        self.max_timestamp.unwrap_or_else(|| {
            self.records
                .iter()
                .map(|r| r.timestamp.unwrap_or(self.base_timestamp))
                .max()
                .unwrap_or(self.base_timestamp)
        })
    }

    /// Writes the header into `batch[..61]` and the CRC over `batch[21..]`.
    fn finish_header(&self, batch: &mut [u8]) {
        let mut h = [0u8; BATCH_HEADER_LEN];
        h[0..8].copy_from_slice(&self.base_offset.to_be_bytes());
        h[8..12].copy_from_slice(&((batch.len() - LOG_OVERHEAD) as i32).to_be_bytes());
        h[12..16].copy_from_slice(&self.partition_leader_epoch.to_be_bytes());
        h[16] = 2;
        h[21..23].copy_from_slice(&self.attributes().0.to_be_bytes());
        let last_delta = (self.records.len() as i32).saturating_sub(1).max(0);
        h[23..27].copy_from_slice(&last_delta.to_be_bytes());
        h[27..35].copy_from_slice(&self.base_timestamp.to_be_bytes());
        h[35..43].copy_from_slice(&self.max_timestamp().to_be_bytes());
        h[43..51].copy_from_slice(&self.producer_id.to_be_bytes());
        h[51..53].copy_from_slice(&self.producer_epoch.to_be_bytes());
        h[53..57].copy_from_slice(&self.base_sequence.to_be_bytes());
        h[57..61].copy_from_slice(&(self.records.len() as i32).to_be_bytes());
        batch[..BATCH_HEADER_LEN].copy_from_slice(&h);
        let crc = crc::crc32c(&batch[CRC_START..]);
        batch[17..21].copy_from_slice(&crc.to_be_bytes());
    }

    /// Encodes the batch into `buf`, returning its length. Uncompressed only (a compressed
    /// batch is an [`ErrorKind::Compressed`] error: use `encode_to_vec`).
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, Error> {
        if self.compression != Compression::None {
            return Err(Error::new(ErrorKind::Compressed(self.compression), 0));
        }
        let len = self.encoded_len()?;
        let Some(batch) = buf.get_mut(..len) else {
            return Err(Error::new(
                ErrorKind::BufferTooSmall { needed: sat32(len), available: sat32(buf.len()) },
                0,
            ));
        };
        let mut pos = BATCH_HEADER_LEN;
        self.write_records(batch, &mut pos)?;
        debug_assert_eq!(pos, len);
        self.finish_header(batch);
        Ok(len)
    }

    /// Appends the encoded batch to `out`, compressed with `self.compression`.
    #[cfg(feature = "alloc")]
    pub fn encode_to_vec(&self, out: &mut Vec<u8>) -> Result<usize, Error> {
        let start = out.len();
        if self.compression == Compression::None {
            let len = self.encoded_len()?;
            out.resize(start + len, 0);
            return self.encode(&mut out[start..]);
        }
        let raw_len = self.records_len()?;
        let mut raw = alloc::vec![0u8; raw_len];
        let mut pos = 0;
        self.write_records(&mut raw, &mut pos)?;
        out.resize(start + BATCH_HEADER_LEN, 0);
        super::compression::compress(self.compression, &raw, out)?;
        let len = out.len() - start;
        if len - LOG_OVERHEAD > i32::MAX as usize {
            out.truncate(start);
            return Err(Error::new(ErrorKind::ValueOutOfRange("batch length"), 0));
        }
        self.finish_header(&mut out[start..]);
        Ok(len)
    }
}
