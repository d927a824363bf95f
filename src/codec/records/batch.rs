//! RecordBatch v2: the header, reading its attributes, and iteration over a `records` field.

use super::attributes::{Attributes, Compression, TimestampType};
use super::error::{Error, ErrorKind, sat32};
use super::record::{BatchContext, Records};
use super::{BATCH_HEADER_LEN, LOG_OVERHEAD, MIN_RECORD_LEN, compression, crc};

/// Offset of the `magic` byte in every batch or legacy message.
pub(crate) const MAGIC_OFFSET: usize = 16;
/// Offset of the first byte the v2 CRC covers (the attributes).
pub(crate) const CRC_START: usize = 21;
/// The smallest legacy (magic 0) message after its 12-byte log overhead; Kafka rejects
/// any entry shorter than this before it reads the magic byte.
const MIN_ENTRY_LEN: i32 = 14;

/// The 61-byte RecordBatch v2 header, its big-endian fields decoded
/// ([`RecordBatch::header`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchHeader {
    /// Offset of the first record.
    pub base_offset: i64,
    /// Bytes after this field (the whole batch less 12).
    pub batch_length: i32,
    /// Leader epoch of the partition when the batch was appended.
    pub partition_leader_epoch: i32,
    /// 2.
    pub magic: i8,
    /// CRC-32C of the bytes from `attributes` to the end of the batch.
    pub crc: u32,
    /// Codec, timestamp type and flags; see [`Attributes`].
    pub attributes: i16,
    /// Offset of the last record less `base_offset`.
    pub last_offset_delta: i32,
    /// Timestamp of the first record (or the delete horizon, see
    /// [`Attributes::has_delete_horizon`]).
    pub base_timestamp: i64,
    /// Largest timestamp in the batch.
    pub max_timestamp: i64,
    /// Idempotent or transactional producer id, or -1.
    pub producer_id: i64,
    /// The producer's epoch, or -1.
    pub producer_epoch: i16,
    /// Sequence number of the first record, or -1.
    pub base_sequence: i32,
    /// Number of records.
    pub records_count: i32,
}

impl BatchHeader {
    /// The header at the front of `bytes`, if they hold one.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        bytes.first_chunk().map(Self::from_array)
    }

    /// The header these bytes hold.
    #[inline]
    pub fn from_array(h: &[u8; BATCH_HEADER_LEN]) -> Self {
        BatchHeader {
            base_offset: i64::from_be_bytes(field(h, 0)),
            batch_length: i32::from_be_bytes(field(h, 8)),
            partition_leader_epoch: i32::from_be_bytes(field(h, 12)),
            magic: i8::from_be_bytes(field(h, MAGIC_OFFSET)),
            crc: u32::from_be_bytes(field(h, 17)),
            attributes: i16::from_be_bytes(field(h, CRC_START)),
            last_offset_delta: i32::from_be_bytes(field(h, 23)),
            base_timestamp: i64::from_be_bytes(field(h, 27)),
            max_timestamp: i64::from_be_bytes(field(h, 35)),
            producer_id: i64::from_be_bytes(field(h, 43)),
            producer_epoch: i16::from_be_bytes(field(h, 51)),
            base_sequence: i32::from_be_bytes(field(h, 53)),
            records_count: i32::from_be_bytes(field(h, 57)),
        }
    }
}

/// The `N` bytes of the header from `at` (a constant within it: the zeros are never used).
#[inline(always)]
fn field<const N: usize>(h: &[u8; BATCH_HEADER_LEN], at: usize) -> [u8; N] {
    h.get(at..).and_then(<[u8]>::first_chunk).copied().unwrap_or([0; N])
}

// The attribute types are in `attributes.rs` (a leaf); what reads a codec id, with the
// records error it fails with, is here.

impl Compression {
    /// The codec with attribute value `id` (0-4).
    pub const fn from_id(id: u8) -> Result<Self, ErrorKind> {
        Ok(match id {
            0 => Compression::None,
            1 => Compression::Gzip,
            2 => Compression::Snappy,
            3 => Compression::Lz4,
            4 => Compression::Zstd,
            other => return Err(ErrorKind::UnknownCompression(other)),
        })
    }
}

impl Attributes {
    /// The compression codec (an error for ids 5-7).
    pub const fn compression(self) -> Result<Compression, ErrorKind> {
        Compression::from_id((self.0 & Self::CODEC_MASK) as u8)
    }
}

/// The RecordBatch v2 batches of a `records` field, in order.
///
/// Each step reads the batch length and magic byte only; the batch's CRC and records are
/// checked when they are asked for. A last batch cut short ends the iteration without an
/// error, and [`RecordBatches::partial`] then returns true (Fetch responses may end in
/// the middle of a batch). Any other problem is an error, after which the iterator ends.
#[derive(Clone, Debug)]
pub struct RecordBatches<'a> {
    bytes: &'a [u8],
    pos: usize,
    partial: bool,
    failed: bool,
}

impl<'a> RecordBatches<'a> {
    /// Batches over the bytes of a `records` field.
    pub const fn new(bytes: &'a [u8]) -> Self {
        RecordBatches { bytes, pos: 0, partial: false, failed: false }
    }

    /// The bytes of the whole field.
    pub const fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Whether the iteration ended at an incomplete last batch.
    pub const fn partial(&self) -> bool {
        self.partial
    }

    /// The bytes not yet iterated (after the end: the partial batch, if any).
    pub fn remaining(&self) -> &'a [u8] {
        self.bytes.get(self.pos..).unwrap_or_default()
    }
}

/// Reads the framing of the entry at the start of `rest`: `Ok(None)` for an incomplete
/// entry, else its total length (with the 12-byte log overhead) and its magic byte.
pub(crate) fn entry_frame(rest: &[u8]) -> Result<Option<(usize, i8)>, ErrorKind> {
    if rest.len() < LOG_OVERHEAD {
        return Ok(None);
    }
    let len = i32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]);
    if len < MIN_ENTRY_LEN {
        return Err(ErrorKind::BatchTooShort(len));
    }
    let Some(&magic) = rest.get(MAGIC_OFFSET) else { return Ok(None) };
    let magic = magic as i8;
    if !(0..=2).contains(&magic) {
        return Err(ErrorKind::UnsupportedMagic(magic));
    }
    let total = LOG_OVERHEAD + len as usize;
    if rest.len() < total {
        return Ok(None);
    }
    Ok(Some((total, magic)))
}

impl<'a> Iterator for RecordBatches<'a> {
    type Item = Result<RecordBatch<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        if rest.is_empty() {
            return None;
        }
        let at = self.pos;
        let fail = |s: &mut Self, kind| {
            s.failed = true;
            Some(Err(Error::new(kind, at)))
        };
        let (total, magic) = match entry_frame(rest) {
            Ok(Some(frame)) => frame,
            Ok(None) => {
                self.partial = true;
                return None;
            }
            Err(kind) => return fail(self, kind),
        };
        if magic != 2 {
            return fail(self, ErrorKind::UnsupportedMagic(magic));
        }
        match RecordBatch::parse(&rest[..total], at) {
            Ok(batch) => {
                self.pos += total;
                Some(Ok(batch))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

impl core::iter::FusedIterator for RecordBatches<'_> {}

/// A view of one RecordBatch v2.
#[derive(Clone, Copy)]
pub struct RecordBatch<'a> {
    header: &'a [u8; BATCH_HEADER_LEN],
    bytes: &'a [u8],
    offset: usize,
}

impl core::fmt::Debug for RecordBatch<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RecordBatch")
            .field("header", &self.header())
            .field("bytes", &self.bytes)
            .field("offset", &self.offset)
            .finish()
    }
}

impl<'a> RecordBatch<'a> {
    /// A view of one whole batch (`bytes` is exactly the batch, from its base offset to its
    /// last byte). Checks the length field and the magic byte, not the CRC or records.
    pub fn new(bytes: &'a [u8]) -> Result<Self, Error> {
        match entry_frame(bytes) {
            Err(kind) => Err(Error::new(kind, 0)),
            Ok(None) => {
                let needed = match bytes.get(8..12) {
                    Some(&[a, b, c, d]) => LOG_OVERHEAD + i32::from_be_bytes([a, b, c, d]).max(0) as usize,
                    _ => LOG_OVERHEAD,
                };
                Err(Error::new(
                    ErrorKind::Truncated { needed: sat32(needed), available: sat32(bytes.len()) },
                    0,
                ))
            }
            Ok(Some((total, 2))) if total == bytes.len() => Self::parse(bytes, 0),
            Ok(Some((total, 2))) => {
                Err(Error::new(ErrorKind::TrailingBytes(sat32(bytes.len() - total)), total))
            }
            Ok(Some((_, magic))) => Err(Error::new(ErrorKind::UnsupportedMagic(magic), MAGIC_OFFSET)),
        }
    }

    /// `bytes` is a whole magic-2 entry; `offset` its position in the field.
    fn parse(bytes: &'a [u8], offset: usize) -> Result<Self, Error> {
        match bytes.first_chunk() {
            Some(header) => Ok(RecordBatch { header, bytes, offset }),
            None => {
                Err(Error::new(ErrorKind::BatchTooShort(sat32(bytes.len() - LOG_OVERHEAD) as i32), offset))
            }
        }
    }

    /// The header, decoded. (Each accessor below decodes its own field only.)
    #[inline]
    pub fn header(&self) -> BatchHeader {
        BatchHeader::from_array(self.header)
    }

    /// The whole batch, header included.
    pub const fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Where the batch starts in the `records` field it was read from.
    pub const fn offset_in_field(&self) -> usize {
        self.offset
    }

    /// The records section: the bytes after the 61-byte header (compressed or not).
    pub fn payload(&self) -> &'a [u8] {
        self.bytes.get(BATCH_HEADER_LEN..).unwrap_or_default()
    }

    /// Offset of the first record.
    pub fn base_offset(&self) -> i64 {
        self.header().base_offset
    }
    /// The batch length field (the batch's size less 12).
    pub fn batch_length(&self) -> i32 {
        self.header().batch_length
    }
    /// Partition leader epoch.
    pub fn partition_leader_epoch(&self) -> i32 {
        self.header().partition_leader_epoch
    }
    /// The magic byte (2).
    pub fn magic(&self) -> i8 {
        self.header().magic
    }
    /// The stored CRC-32C.
    pub fn crc(&self) -> u32 {
        self.header().crc
    }
    /// The attributes.
    pub fn attributes(&self) -> Attributes {
        Attributes(self.header().attributes)
    }
    /// The compression codec (an error for ids 5-7).
    pub fn compression(&self) -> Result<Compression, Error> {
        self.attributes().compression().map_err(|k| Error::new(k, self.offset + CRC_START))
    }
    /// Whether the batch is transactional.
    pub fn is_transactional(&self) -> bool {
        self.attributes().is_transactional()
    }
    /// Whether the batch is a control batch.
    pub fn is_control(&self) -> bool {
        self.attributes().is_control()
    }
    /// The timestamp type.
    pub fn timestamp_type(&self) -> TimestampType {
        self.attributes().timestamp_type()
    }
    /// The delete horizon (the base timestamp field) if the attributes flag one.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        self.attributes().has_delete_horizon().then(|| self.base_timestamp())
    }
    /// Last offset delta.
    pub fn last_offset_delta(&self) -> i32 {
        self.header().last_offset_delta
    }
    /// Offset of the last record (base offset + last offset delta).
    pub fn last_offset(&self) -> i64 {
        self.base_offset().wrapping_add(i64::from(self.last_offset_delta()))
    }
    /// The offset after the batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }
    /// Base timestamp.
    pub fn base_timestamp(&self) -> i64 {
        self.header().base_timestamp
    }
    /// Max timestamp.
    pub fn max_timestamp(&self) -> i64 {
        self.header().max_timestamp
    }
    /// Producer id.
    pub fn producer_id(&self) -> i64 {
        self.header().producer_id
    }
    /// Producer epoch.
    pub fn producer_epoch(&self) -> i16 {
        self.header().producer_epoch
    }
    /// Base sequence.
    pub fn base_sequence(&self) -> i32 {
        self.header().base_sequence
    }
    /// The declared record count (not checked until the records are read).
    pub fn records_count(&self) -> i32 {
        self.header().records_count
    }

    /// CRC-32C of the bytes the CRC covers (attributes to the end).
    pub fn computed_crc(&self) -> u32 {
        crc::crc32c(self.bytes.get(CRC_START..).unwrap_or_default())
    }

    /// Checks the stored CRC against the bytes.
    pub fn verify_crc(&self) -> Result<(), Error> {
        let computed = self.computed_crc();
        if computed == self.crc() {
            Ok(())
        } else {
            Err(Error::new(ErrorKind::CrcMismatch { stored: self.crc(), computed }, self.offset + 17))
        }
    }

    pub(crate) fn context(&self) -> BatchContext {
        BatchContext {
            base_offset: self.base_offset(),
            base_timestamp: self.base_timestamp(),
            max_timestamp: self.max_timestamp(),
            log_append_time: self.timestamp_type() == TimestampType::LogAppendTime,
            control: self.is_control(),
        }
    }

    /// The records of an uncompressed batch, after checking the CRC and the record count.
    /// A compressed batch is an [`ErrorKind::Compressed`] error: see
    /// [`RecordBatch::records_in`].
    pub fn records(&self) -> Result<Records<'a>, Error> {
        self.verify_crc()?;
        self.records_unverified()
    }

    /// Like [`RecordBatch::records`] without the CRC check.
    pub fn records_unverified(&self) -> Result<Records<'a>, Error> {
        match self.compression()? {
            Compression::None => Records::new(self.payload(), self.records_count(), self.context()),
            other => Err(Error::new(ErrorKind::Compressed(other), self.offset + CRC_START)),
        }
    }

    /// The records, after checking the CRC; a compressed batch is decompressed into `buf`,
    /// and fails if it would not fit (`buf.len()` is the size limit). An uncompressed batch
    /// does not touch `buf`.
    pub fn records_in<'b>(&self, buf: &'b mut [u8]) -> Result<Records<'b>, Error>
    where
        'a: 'b,
    {
        self.verify_crc()?;
        let codec = self.compression()?;
        if codec == Compression::None {
            return self.records_unverified();
        }
        self.check_count_fits(buf.len())?;
        let n = compression::decompress_into(codec, self.payload(), buf)?;
        Records::new(&buf[..n], self.records_count(), self.context())
    }

    /// The records, after checking the CRC; a compressed batch is decompressed into `vec`
    /// (cleared first, its capacity reused), stopping at `limit` bytes.
    #[cfg(feature = "alloc")]
    pub fn records_in_vec<'b>(
        &self,
        vec: &'b mut alloc::vec::Vec<u8>,
        limit: usize,
    ) -> Result<Records<'b>, Error>
    where
        'a: 'b,
    {
        self.verify_crc()?;
        let codec = self.compression()?;
        if codec == Compression::None {
            return self.records_unverified();
        }
        self.check_count_fits(limit)?;
        compression::decompress_to_vec(codec, self.payload(), vec, limit)?;
        Records::new(vec, self.records_count(), self.context())
    }

    /// Rejects a record count that could not fit in `limit` decompressed bytes, before
    /// decompressing anything.
    fn check_count_fits(&self, limit: usize) -> Result<(), Error> {
        let count = self.records_count();
        if count < 0 {
            return Err(Error::new(ErrorKind::InvalidRecordCount(count), 0));
        }
        let max = limit / MIN_RECORD_LEN;
        if count as usize > max {
            return Err(Error::new(ErrorKind::RecordCountTooLarge { count, max: sat32(max) }, 0));
        }
        Ok(())
    }
}
