//! Legacy message sets (magic 0 and 1), read-only.
//!
//! Before RecordBatch v2 a `records` field held a *message set*: entries of
//! `offset (int64), message size (int32), message`, where a message is
//! `crc (CRC-32 IEEE of the rest), magic, attributes, [timestamp (magic 1)], key, value`
//! with int32 lengths (-1 for null). A compressed message is a *wrapper* whose value is a
//! compressed message set of inner messages. In magic 1 the inner offsets are relative
//! (0, 1, ...) and the wrapper carries the offset of the last inner message; in magic 0
//! they are absolute.
//!
//! [`LegacyMessages`] iterates the entries of a field like [`super::RecordBatches`]
//! (a cut-short last entry ends the iteration and sets [`LegacyMessages::partial`]);
//! [`LegacyMessage::inner_in`] decompresses a wrapper into the caller's buffer and
//! iterates its messages with absolute offsets.

use super::attributes::{Compression, TimestampType};
use super::batch::{MAGIC_OFFSET, entry_frame};
use super::compression::{self, Sink};
use super::error::{Error, ErrorKind, sat32};
use super::{LOG_OVERHEAD, crc};

/// The entries of a legacy message set, in order.
#[derive(Clone, Debug)]
pub struct LegacyMessages<'a> {
    bytes: &'a [u8],
    pos: usize,
    partial: bool,
    failed: bool,
    /// Set for the inner messages of a wrapper: they may not be cut short.
    inner: Option<InnerContext>,
}

#[derive(Clone, Copy, Debug)]
struct InnerContext {
    magic: i8,
    /// Added to each inner offset (magic 1: wrapper offset less the last relative offset).
    offset_base: i64,
    /// The wrapper's timestamp, when its timestamp type is log-append time.
    log_append_time: Option<i64>,
}

impl<'a> LegacyMessages<'a> {
    /// The entries of the message set in `bytes`.
    pub const fn new(bytes: &'a [u8]) -> Self {
        LegacyMessages { bytes, pos: 0, partial: false, failed: false, inner: None }
    }

    /// Whether the iteration ended at an incomplete last entry.
    pub const fn partial(&self) -> bool {
        self.partial
    }
}

impl<'a> Iterator for LegacyMessages<'a> {
    type Item = Result<LegacyMessage<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        if rest.is_empty() {
            return None;
        }
        let at = self.pos;
        let result = match entry_frame(rest) {
            Ok(Some((total, magic))) if magic < 2 => {
                LegacyMessage::parse(&rest[..total]).map(|m| (total, m)).map_err(|e| e.shifted(at))
            }
            Ok(Some((_, magic))) => Err(Error::new(ErrorKind::UnsupportedMagic(magic), at + MAGIC_OFFSET)),
            Ok(None) if self.inner.is_none() => {
                self.partial = true;
                return None;
            }
            Ok(None) => Err(Error::new(
                ErrorKind::Truncated { needed: sat32(LOG_OVERHEAD + 14), available: sat32(rest.len()) },
                at,
            )),
            Err(kind) => Err(Error::new(kind, at)),
        };
        match result {
            Ok((total, mut m)) => {
                self.pos += total;
                if let Some(ctx) = self.inner {
                    if m.magic != ctx.magic {
                        self.failed = true;
                        return Some(Err(Error::new(
                            ErrorKind::UnsupportedMagic(m.magic),
                            at + MAGIC_OFFSET,
                        )));
                    }
                    if m.compression() != Ok(Compression::None) {
                        self.failed = true;
                        return Some(Err(Error::new(ErrorKind::Decompress("compressed inner message"), at)));
                    }
                    m.offset = m.offset.wrapping_add(ctx.offset_base);
                    if let Some(ts) = ctx.log_append_time {
                        m.timestamp = Some(ts);
                        m.attributes |= 0x08;
                    }
                }
                Some(Ok(m))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

impl core::iter::FusedIterator for LegacyMessages<'_> {}

/// One legacy message (magic 0 or 1), borrowing its key and value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LegacyMessage<'a> {
    offset: i64,
    crc: u32,
    magic: i8,
    attributes: i8,
    timestamp: Option<i64>,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
    /// From the magic byte to the end: what the CRC covers.
    checked: &'a [u8],
}

fn bytes_field<'a>(buf: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>, Error> {
    let Some(len) = buf.get(*pos..*pos + 4) else {
        return Err(Error::new(
            ErrorKind::Truncated { needed: 4, available: sat32(buf.len().saturating_sub(*pos)) },
            *pos,
        ));
    };
    let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
    *pos += 4;
    if len < 0 {
        return if len == -1 { Ok(None) } else { Err(Error::new(ErrorKind::InvalidLength(len), *pos - 4)) };
    }
    match buf.get(*pos..).and_then(|r| r.get(..len as usize)) {
        Some(b) => {
            *pos += len as usize;
            Ok(Some(b))
        }
        None => Err(Error::new(
            ErrorKind::Truncated { needed: sat32(len as usize), available: sat32(buf.len() - *pos) },
            *pos,
        )),
    }
}

impl<'a> LegacyMessage<'a> {
    /// `bytes` is one whole entry (offset, size, message) of magic 0 or 1.
    fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let offset = i64::from_be_bytes(bytes[..8].try_into().unwrap_or([0; 8]));
        let crc = u32::from_be_bytes(bytes[12..16].try_into().unwrap_or([0; 4]));
        let magic = bytes[MAGIC_OFFSET] as i8;
        let attributes = bytes[17] as i8;
        let mut pos = 18;
        let timestamp = if magic == 1 {
            let Some(ts) = bytes.get(18..26) else {
                return Err(Error::new(
                    ErrorKind::BatchTooShort(sat32(bytes.len() - LOG_OVERHEAD) as i32),
                    8,
                ));
            };
            pos = 26;
            Some(i64::from_be_bytes(ts.try_into().unwrap_or([0; 8])))
        } else {
            None
        };
        let key = bytes_field(bytes, &mut pos)?;
        let value = bytes_field(bytes, &mut pos)?;
        if pos != bytes.len() {
            return Err(Error::new(ErrorKind::TrailingBytes(sat32(bytes.len() - pos)), pos));
        }
        Ok(LegacyMessage {
            offset,
            crc,
            magic,
            attributes,
            timestamp,
            key,
            value,
            checked: &bytes[MAGIC_OFFSET..],
        })
    }

    /// The offset (absolute, for inner messages read through [`LegacyMessage::inner_in`]).
    pub const fn offset(&self) -> i64 {
        self.offset
    }
    /// 0 or 1.
    pub const fn magic(&self) -> i8 {
        self.magic
    }
    /// The stored CRC-32.
    pub const fn crc(&self) -> u32 {
        self.crc
    }
    /// CRC-32 of the bytes the CRC covers (magic to the end).
    pub fn computed_crc(&self) -> u32 {
        crc::crc32(self.checked)
    }
    /// Checks the stored CRC.
    pub fn verify_crc(&self) -> Result<(), Error> {
        let computed = self.computed_crc();
        if computed == self.crc {
            Ok(())
        } else {
            Err(Error::new(ErrorKind::CrcMismatch { stored: self.crc, computed }, LOG_OVERHEAD))
        }
    }
    /// The attributes byte.
    pub const fn attributes(&self) -> i8 {
        self.attributes
    }
    /// The compression codec (bits 0-2; zstd and ids above are errors in legacy messages).
    pub fn compression(&self) -> Result<Compression, ErrorKind> {
        match Compression::from_id((self.attributes & 0x07) as u8) {
            Ok(Compression::Zstd) => Err(ErrorKind::UnknownCompression(4)),
            other => other,
        }
    }
    /// The timestamp type (magic 1; always create time in magic 0).
    pub const fn timestamp_type(&self) -> TimestampType {
        if self.magic > 0 && self.attributes & 0x08 != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }
    /// The timestamp (magic 1 only).
    pub const fn timestamp(&self) -> Option<i64> {
        self.timestamp
    }
    /// The key; `None` is null.
    pub const fn key(&self) -> Option<&'a [u8]> {
        self.key
    }
    /// The value; `None` is null. For a wrapper, the compressed inner message set.
    pub const fn value(&self) -> Option<&'a [u8]> {
        self.value
    }

    /// The inner messages of a compressed wrapper, decompressed into `buf` (its length is
    /// the limit), after checking the wrapper's CRC. Inner offsets come back absolute.
    /// An uncompressed message is an [`ErrorKind::Decompress`] error.
    pub fn inner_in<'b>(&self, buf: &'b mut [u8]) -> Result<LegacyMessages<'b>, Error> {
        self.verify_crc()?;
        let codec = self.wrapper_codec()?;
        let n = compression::decompress_sink(
            codec,
            self.value.unwrap_or_default(),
            &mut Sink::Slice(buf),
            self.magic == 0,
        )?;
        self.inner_over(&buf[..n])
    }

    /// Like [`LegacyMessage::inner_in`], decompressing into `vec` up to `limit` bytes.
    #[cfg(feature = "alloc")]
    pub fn inner_in_vec<'b>(
        &self,
        vec: &'b mut alloc::vec::Vec<u8>,
        limit: usize,
    ) -> Result<LegacyMessages<'b>, Error> {
        self.verify_crc()?;
        let codec = self.wrapper_codec()?;
        vec.clear();
        let mut sink = Sink::Vec(vec, limit);
        let n =
            compression::decompress_sink(codec, self.value.unwrap_or_default(), &mut sink, self.magic == 0)?;
        vec.truncate(n);
        self.inner_over(vec)
    }

    fn wrapper_codec(&self) -> Result<Compression, Error> {
        match self.compression().map_err(|k| Error::new(k, 17))? {
            Compression::None => {
                Err(Error::new(ErrorKind::Decompress("not a compressed wrapper message"), 17))
            }
            codec => Ok(codec),
        }
    }

    fn inner_over<'b>(&self, set: &'b [u8]) -> Result<LegacyMessages<'b>, Error> {
        let offset_base = if self.magic == 1 {
            // The wrapper holds the offset of the last inner message; inner offsets are
            // relative. Find the last one (framing only).
            let mut last = 0i64;
            let mut pos = 0;
            while pos < set.len() {
                match entry_frame(&set[pos..]) {
                    Ok(Some((total, _))) => {
                        last = i64::from_be_bytes(set[pos..pos + 8].try_into().unwrap_or([0; 8]));
                        pos += total;
                    }
                    // The iteration reports it.
                    _ => break,
                }
            }
            self.offset.wrapping_sub(last)
        } else {
            0
        };
        let log_append_time =
            (self.timestamp_type() == TimestampType::LogAppendTime).then_some(self.timestamp).flatten();
        Ok(LegacyMessages {
            bytes: set,
            pos: 0,
            partial: false,
            failed: false,
            inner: Some(InnerContext { magic: self.magic, offset_base, log_append_time }),
        })
    }
}

/// One entry of a `records` field that may mix formats: a RecordBatch v2 or a legacy
/// message (a log written before and after an upgrade holds both).
#[derive(Clone, Copy, Debug)]
pub enum Entry<'a> {
    /// A magic-2 batch.
    Batch(super::RecordBatch<'a>),
    /// A magic-0 or magic-1 message (possibly a compressed wrapper).
    Legacy(LegacyMessage<'a>),
}

/// The entries of a `records` field in any format, in order: what
/// [`super::RecordBatches`] yields for magic 2, and [`LegacyMessage`]s for magic 0 and 1.
/// The same framing rules apply: a cut-short last entry ends the iteration and sets
/// [`Entries::partial`].
#[derive(Clone, Debug)]
pub struct Entries<'a> {
    bytes: &'a [u8],
    pos: usize,
    partial: bool,
    failed: bool,
}

impl<'a> Entries<'a> {
    /// The entries of `bytes`.
    pub const fn new(bytes: &'a [u8]) -> Self {
        Entries { bytes, pos: 0, partial: false, failed: false }
    }

    /// Whether the iteration ended at an incomplete last entry.
    pub const fn partial(&self) -> bool {
        self.partial
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        if rest.is_empty() {
            return None;
        }
        let at = self.pos;
        let entry = match entry_frame(rest) {
            Ok(None) => {
                self.partial = true;
                return None;
            }
            Err(kind) => Err(Error::new(kind, at)),
            Ok(Some((total, 2))) => super::RecordBatch::new(&rest[..total])
                .map(|b| (total, Entry::Batch(b)))
                .map_err(|e| e.shifted(at)),
            Ok(Some((total, _))) => LegacyMessage::parse(&rest[..total])
                .map(|m| (total, Entry::Legacy(m)))
                .map_err(|e| e.shifted(at)),
        };
        match entry {
            Ok((total, e)) => {
                self.pos += total;
                Some(Ok(e))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

impl core::iter::FusedIterator for Entries<'_> {}
