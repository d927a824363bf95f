//! The stored form of an encrypted record: kwire's envelope, version 1.
//!
//! An encrypted record value is one envelope: a header that says how to open it, then the
//! AES-256-GCM ciphertext and its tag. Every field is in the envelope itself, so a record
//! stays readable for as long as its KEK exists, whatever keys the proxy uses now.
//!
//! | bytes | field |
//! |---|---|
//! | 3 | [`MAGIC`], `kwE` |
//! | 1 | the version, [`VERSION`] |
//! | 1 | flags: bit 0, the record's headers are inside ([`Flags::HEADERS`]); bit 1, there is no value ([`Flags::NO_VALUE`], a tombstone's headers); bits 4 to 7, the codec that compressed the value before it was encrypted (the batch codec's number, 0 for none) |
//! | 1 | the KEK name's length, 1 to 255 |
//! | n | the KEK name (UTF-8): which key of the KMS wraps the data key |
//! | 2 | the wrapped data key's length (big-endian), 1 to [`MAX_WRAPPED`] |
//! | n | the wrapped data key, as the KMS made it: only the KMS can open it |
//! | 12 | the nonce |
//! | rest | the ciphertext and the 16-byte tag |
//!
//! The associated data binds the ciphertext to where it belongs ([`associated_data`]):
//! the topic's name, the record's key, and the envelope's header (every byte before the
//! ciphertext). A record copied to another topic, given another key, or whose header was
//! altered (another KEK, another data key, other flags) does not open.
//!
//! The plaintext sealed inside: when the headers are inside, their count (4 bytes) and
//! each header as its key's length (4 bytes) and key, its value's length (4 bytes, -1 for
//! null) and value; then, when there is a value, its length before compression (4 bytes)
//! and the value (compressed with the codec the flags name, if any).
//!
//! A record with encrypted headers is stored with no headers. A tombstone (a null value)
//! stays a tombstone; if its headers are encrypted, they travel as an envelope without a
//! value in one header named [`HEADERS_KEY`].
//!
//! [`Envelope::parse`] and [`open_plain`] are total: any bytes give a value or an
//! [`FormatError`], and nothing is allocated beyond what the bytes hold (a decompressed
//! value stops at the length the authenticated plaintext states, at most
//! [`MAX_VALUE`]).

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use crate::records::Compression;

/// The first bytes of every envelope.
pub const MAGIC: [u8; 3] = *b"kwE";

/// The envelope's version this build writes (and the only one it reads).
pub const VERSION: u8 = 1;

/// The longest wrapped data key an envelope holds.
pub const MAX_WRAPPED: usize = 4096;

/// The nonce's length.
pub const NONCE_LEN: usize = 12;

/// The tag's length (AES-256-GCM).
pub const TAG_LEN: usize = 16;

/// The largest value an envelope opens to, in bytes (the proxy's default frame limit).
pub const MAX_VALUE: usize = crate::codec::frame::DEFAULT_MAX_FRAME_SIZE;

/// The header that carries a tombstone's encrypted headers.
pub const HEADERS_KEY: &str = "kwire.headers";

/// An envelope's flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Flags(pub u8);

impl Flags {
    /// The record's headers are inside.
    pub const HEADERS: u8 = 1;
    /// There is no value inside (a tombstone's headers).
    pub const NO_VALUE: u8 = 2;
    /// The bits a version-1 envelope may set.
    const KNOWN: u8 = 0xF3;

    /// Flags for these contents, the value compressed with `codec` (or not).
    pub fn new(headers: bool, value: bool, codec: Compression) -> Flags {
        let mut f = (codec.id() & 0x0F) << 4;
        if headers {
            f |= Flags::HEADERS;
        }
        if !value {
            f |= Flags::NO_VALUE;
        }
        Flags(f)
    }

    /// Whether the headers are inside.
    pub fn headers(self) -> bool {
        self.0 & Flags::HEADERS != 0
    }

    /// Whether a value is inside.
    pub fn value(self) -> bool {
        self.0 & Flags::NO_VALUE == 0
    }

    /// The codec that compressed the value, if a known one.
    pub fn codec(self) -> Option<Compression> {
        Compression::from_id(self.0 >> 4).ok()
    }
}

/// Why bytes are not an envelope this build opens.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatError {
    /// The bytes do not start with [`MAGIC`]: not an encrypted record.
    NotEncrypted,
    /// An envelope of a version this build does not read.
    Version(u8),
    /// Flags this version does not define, or an unknown codec.
    Flags(u8),
    /// The bytes end inside the field named.
    Truncated(&'static str),
    /// The KEK name is empty or not UTF-8.
    KekName,
    /// The wrapped key is empty or longer than [`MAX_WRAPPED`].
    WrappedLength(usize),
    /// The ciphertext does not open: another topic or key, or altered bytes.
    Tampered,
    /// The opened plaintext is not well formed (the field named).
    Plaintext(&'static str),
}

impl core::fmt::Display for FormatError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FormatError::NotEncrypted => f.write_str("not an encrypted record (no kwire envelope)"),
            FormatError::Version(v) => {
                write!(f, "an envelope of version {v}, which this build does not read")
            }
            FormatError::Flags(b) => write!(f, "envelope flags {b:#04x} are not defined"),
            FormatError::Truncated(what) => write!(f, "the envelope ends inside its {what}"),
            FormatError::KekName => f.write_str("the envelope's KEK name is empty or not UTF-8"),
            FormatError::WrappedLength(n) => write!(f, "the envelope's wrapped key is {n} bytes"),
            FormatError::Tampered => {
                f.write_str("the ciphertext does not open (altered, or moved from its topic or key)")
            }
            FormatError::Plaintext(what) => write!(f, "the decrypted record's {what} is not well formed"),
        }
    }
}

impl std::error::Error for FormatError {}

/// An envelope, read in place.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// The flags.
    pub flags: Flags,
    /// The KEK's name.
    pub kek: &'a str,
    /// The wrapped data key.
    pub wrapped: &'a [u8],
    /// The nonce.
    pub nonce: [u8; NONCE_LEN],
    /// The ciphertext and tag.
    pub sealed: &'a [u8],
    /// Every byte before the ciphertext (part of the associated data).
    pub header: &'a [u8],
}

impl core::fmt::Debug for Envelope<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Envelope")
            .field("flags", &self.flags)
            .field("kek", &self.kek)
            .field("wrapped_len", &self.wrapped.len())
            .field("sealed_len", &self.sealed.len())
            .finish()
    }
}

/// Whether `value` starts as an envelope does (whatever follows).
pub fn is_envelope(value: &[u8]) -> bool {
    value.starts_with(&MAGIC)
}

impl<'a> Envelope<'a> {
    /// Reads an envelope: the header's fields checked, the ciphertext at least a tag long.
    pub fn parse(bytes: &'a [u8]) -> Result<Envelope<'a>, FormatError> {
        if !is_envelope(bytes) {
            return Err(FormatError::NotEncrypted);
        }
        let mut at = MAGIC.len();
        let take = |at: &mut usize, n: usize, what| -> Result<&'a [u8], FormatError> {
            let end = at.checked_add(n).ok_or(FormatError::Truncated(what))?;
            let s = bytes.get(*at..end).ok_or(FormatError::Truncated(what))?;
            *at = end;
            Ok(s)
        };
        let version = take(&mut at, 1, "version")?[0];
        if version != VERSION {
            return Err(FormatError::Version(version));
        }
        let flags = Flags(take(&mut at, 1, "flags")?[0]);
        if flags.0 & !Flags::KNOWN != 0 || flags.codec().is_none() || (!flags.value() && !flags.headers()) {
            return Err(FormatError::Flags(flags.0));
        }
        let kek_len = usize::from(take(&mut at, 1, "KEK name length")?[0]);
        let kek = take(&mut at, kek_len, "KEK name")?;
        let kek = core::str::from_utf8(kek).map_err(|_| FormatError::KekName)?;
        if kek.is_empty() {
            return Err(FormatError::KekName);
        }
        let w = take(&mut at, 2, "wrapped key length")?;
        let wrapped_len = usize::from(u16::from_be_bytes([w[0], w[1]]));
        if wrapped_len == 0 || wrapped_len > MAX_WRAPPED {
            return Err(FormatError::WrappedLength(wrapped_len));
        }
        let wrapped = take(&mut at, wrapped_len, "wrapped key")?;
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(take(&mut at, NONCE_LEN, "nonce")?);
        let header = &bytes[..at];
        let sealed = &bytes[at..];
        if sealed.len() < TAG_LEN {
            return Err(FormatError::Truncated("tag"));
        }
        Ok(Envelope { flags, kek, wrapped, nonce, sealed, header })
    }
}

/// Writes an envelope's header (everything before the ciphertext) to `out`.
pub fn write_header(
    out: &mut Vec<u8>,
    flags: Flags,
    kek: &str,
    wrapped: &[u8],
    nonce: &[u8; NONCE_LEN],
) -> Result<(), FormatError> {
    let kek_len = u8::try_from(kek.len()).map_err(|_| FormatError::KekName)?;
    if kek.is_empty() {
        return Err(FormatError::KekName);
    }
    if wrapped.is_empty() || wrapped.len() > MAX_WRAPPED {
        return Err(FormatError::WrappedLength(wrapped.len()));
    }
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(flags.0);
    out.push(kek_len);
    out.extend_from_slice(kek.as_bytes());
    out.extend_from_slice(&(wrapped.len() as u16).to_be_bytes());
    out.extend_from_slice(wrapped);
    out.extend_from_slice(nonce);
    Ok(())
}

/// The associated data of an envelope: a domain label, the topic's name, the record's key
/// (null distinct from empty) and the envelope's header, each with its length.
pub fn associated_data(topic: &str, key: Option<&[u8]>, header: &[u8]) -> Vec<u8> {
    let mut aad = Vec::new();
    associated_data_into(&mut aad, topic, key, header);
    aad
}

/// [`associated_data`] written into `aad` (cleared first), which keeps its capacity.
pub(super) fn associated_data_into(aad: &mut Vec<u8>, topic: &str, key: Option<&[u8]>, header: &[u8]) {
    let topic_part = associated_data_topic(aad, topic);
    associated_data_record(aad, topic_part, key, header);
}

/// Writes the part of the associated data that every record of `topic` shares into `aad`
/// (emptied first): its length, for [`associated_data_record`].
pub(super) fn associated_data_topic(aad: &mut Vec<u8>, topic: &str) -> usize {
    const LABEL: &[u8] = b"kwire record encryption";
    aad.clear();
    aad.extend_from_slice(LABEL);
    aad.extend_from_slice(&(topic.len() as u32).to_be_bytes());
    aad.extend_from_slice(topic.as_bytes());
    aad.len()
}

/// Completes the associated data of one record in `aad`, which starts with the `topic_part`
/// bytes [`associated_data_topic`] wrote (whatever follows them is replaced).
pub(super) fn associated_data_record(
    aad: &mut Vec<u8>,
    topic_part: usize,
    key: Option<&[u8]>,
    header: &[u8],
) {
    aad.truncate(topic_part);
    match key {
        None => aad.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(k) => {
            aad.extend_from_slice(&(k.len() as u32).to_be_bytes());
            aad.extend_from_slice(k);
        }
    }
    aad.extend_from_slice(&(header.len() as u32).to_be_bytes());
    aad.extend_from_slice(header);
}

/// The length of an envelope's header under `kek` and `wrapped` (what [`write_header`]
/// writes).
pub(super) fn header_len(kek: &str, wrapped: &[u8]) -> usize {
    MAGIC.len() + 3 + kek.len() + 2 + wrapped.len() + NONCE_LEN
}

/// The length of the headers' part of a plaintext (what [`write_plain`] writes for them).
pub(super) fn plain_headers_len<'h>(headers: impl Iterator<Item = crate::records::Header<'h>>) -> usize {
    4 + headers.map(|h| 8 + h.key.len() + h.value.map_or(0, <[u8]>::len)).sum::<usize>()
}

/// Writes the headers' part of a plaintext: their count, then each header.
pub(super) fn write_plain_headers<'h>(
    out: &mut Vec<u8>,
    count: usize,
    headers: impl Iterator<Item = crate::records::Header<'h>>,
) {
    out.extend_from_slice(&(count as u32).to_be_bytes());
    for h in headers {
        out.extend_from_slice(&(h.key.len() as u32).to_be_bytes());
        out.extend_from_slice(h.key);
        match h.value {
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(v) => {
                out.extend_from_slice(&(v.len() as u32).to_be_bytes());
                out.extend_from_slice(v);
            }
        }
    }
}

/// Writes the value's part of a plaintext: its length, then the value, compressed with
/// `codec` when that makes it shorter. Returns the codec used.
pub(super) fn write_plain_value(
    out: &mut Vec<u8>,
    value: &[u8],
    codec: Compression,
) -> Result<Compression, crate::records::Error> {
    out.extend_from_slice(&(value.len() as u32).to_be_bytes());
    if codec != Compression::None {
        let start = out.len();
        crate::records::compression::compress(codec, value, out)?;
        if out.len() - start < value.len() {
            return Ok(codec);
        }
        out.truncate(start);
    }
    out.extend_from_slice(value);
    Ok(Compression::None)
}

/// A header of a record: key and nullable value, owned.
pub type OwnedHeader = (Vec<u8>, Option<Vec<u8>>);

/// Writes the plaintext to seal: the headers (if `headers` is given) and the value (if
/// any), the value compressed with `codec` when that makes it shorter. Returns the codec
/// used (for the flags).
pub fn write_plain(
    out: &mut Vec<u8>,
    headers: Option<&[crate::records::Header<'_>]>,
    value: Option<&[u8]>,
    codec: Compression,
) -> Result<Compression, crate::records::Error> {
    if let Some(headers) = headers {
        write_plain_headers(out, headers.len(), headers.iter().copied());
    }
    let Some(value) = value else { return Ok(Compression::None) };
    write_plain_value(out, value, codec)
}

/// What an opened envelope held.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Plain {
    /// The headers, if they were inside.
    pub headers: Option<Vec<OwnedHeader>>,
    /// The value, if there was one.
    pub value: Option<Vec<u8>>,
}

impl core::fmt::Debug for Plain {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Plaintext is never printed.
        f.debug_struct("Plain")
            .field("headers", &self.headers.as_ref().map(Vec::len))
            .field("value_len", &self.value.as_ref().map(Vec::len))
            .finish()
    }
}

/// Reads an opened envelope's plaintext, as its flags say.
pub fn open_plain(flags: Flags, bytes: &[u8]) -> Result<Plain, FormatError> {
    let read = PlainRef::parse(flags, bytes)?;
    let headers = read.headers.map(|h| h.map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec))).collect());
    let value = match read.value {
        None => None,
        Some(v) => {
            let mut buf = Vec::new();
            Some(v.read(&mut buf)?.to_vec())
        }
    };
    Ok(Plain { headers, value })
}

/// An opened envelope's plaintext, read in place.
pub(super) struct PlainRef<'a> {
    /// The headers, if they were inside.
    pub(super) headers: Option<PlainHeaders<'a>>,
    /// The value, if there was one.
    pub(super) value: Option<PlainValue<'a>>,
}

/// The headers of a plaintext, checked: each a key and a nullable value.
#[derive(Clone)]
pub(super) struct PlainHeaders<'a> {
    bytes: &'a [u8],
    left: usize,
}

impl PlainHeaders<'_> {
    /// How many headers.
    pub(super) fn header_count(&self) -> usize {
        self.left
    }
}

impl<'a> Iterator for PlainHeaders<'a> {
    type Item = (&'a [u8], Option<&'a [u8]>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // Checked by `PlainRef::parse`: every length is within the bytes.
        let u32_at = |s: &[u8]| s.get(..4).map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]));
        let klen = u32_at(self.bytes)? as usize;
        let key = self.bytes.get(4..4 + klen)?;
        let rest = self.bytes.get(4 + klen..)?;
        let vlen = u32_at(rest)? as i32;
        let (value, used) = match vlen {
            -1 => (None, 4),
            n => (Some(rest.get(4..4 + n as usize)?), 4 + n as usize),
        };
        self.bytes = rest.get(used..)?;
        Some((key, value))
    }
}

/// The value of a plaintext, as stored inside (compressed or not).
pub(super) struct PlainValue<'a> {
    stored: &'a [u8],
    raw_len: usize,
    codec: Compression,
}

impl<'a> PlainValue<'a> {
    /// The value: in place if it was not compressed, else decompressed into `buf`.
    pub(super) fn read<'b>(&self, buf: &'b mut Vec<u8>) -> Result<&'b [u8], FormatError>
    where
        'a: 'b,
    {
        if self.codec == Compression::None {
            return Ok(self.stored);
        }
        buf.clear();
        crate::records::compression::decompress_to_vec(self.codec, self.stored, buf, self.raw_len)
            .map_err(|_| FormatError::Plaintext("compressed value"))?;
        if buf.len() != self.raw_len {
            return Err(FormatError::Plaintext("value length"));
        }
        Ok(&buf[..])
    }
}

impl<'a> PlainRef<'a> {
    /// Reads an opened envelope's plaintext, as its flags say: every length checked.
    pub(super) fn parse(flags: Flags, bytes: &'a [u8]) -> Result<PlainRef<'a>, FormatError> {
        let mut at = 0usize;
        let take = |at: &mut usize, n: usize, what| -> Result<&'a [u8], FormatError> {
            let end = at.checked_add(n).ok_or(FormatError::Plaintext(what))?;
            let s = bytes.get(*at..end).ok_or(FormatError::Plaintext(what))?;
            *at = end;
            Ok(s)
        };
        let u32_at = |s: &[u8]| u32::from_be_bytes([s[0], s[1], s[2], s[3]]);
        let mut plain = PlainRef { headers: None, value: None };
        if flags.headers() {
            let count = u32_at(take(&mut at, 4, "header count")?) as usize;
            // Each header takes at least 8 bytes: no more can be there than the bytes allow.
            if count > bytes.len() / 8 {
                return Err(FormatError::Plaintext("header count"));
            }
            let start = at;
            for _ in 0..count {
                let klen = u32_at(take(&mut at, 4, "header key length")?) as usize;
                take(&mut at, klen, "header key")?;
                match u32_at(take(&mut at, 4, "header value length")?) as i32 {
                    -1 => {}
                    n if n < 0 => return Err(FormatError::Plaintext("header value length")),
                    n => {
                        take(&mut at, n as usize, "header value")?;
                    }
                }
            }
            plain.headers = Some(PlainHeaders { bytes: &bytes[start..at], left: count });
        }
        if flags.value() {
            let raw_len = u32_at(take(&mut at, 4, "value length")?) as usize;
            let stored = &bytes[at..];
            let codec = flags.codec().ok_or(FormatError::Flags(flags.0))?;
            if codec == Compression::None && stored.len() != raw_len {
                return Err(FormatError::Plaintext("value length"));
            }
            if codec != Compression::None && raw_len > MAX_VALUE {
                return Err(FormatError::Plaintext("value length"));
            }
            plain.value = Some(PlainValue { stored, raw_len, codec });
        } else if at != bytes.len() {
            return Err(FormatError::Plaintext("end"));
        }
        Ok(plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(flags: Flags) -> Vec<u8> {
        let mut out = Vec::new();
        write_header(&mut out, flags, "kek-1", &[7; 60], &[1; NONCE_LEN]).unwrap();
        out.extend_from_slice(&[9; 40]);
        out
    }

    #[test]
    fn an_envelope_reads_back_and_every_cut_is_an_error() {
        let flags = Flags::new(true, true, Compression::Gzip);
        let bytes = envelope(flags);
        let e = Envelope::parse(&bytes).unwrap();
        assert_eq!((e.flags, e.kek, e.wrapped, e.nonce), (flags, "kek-1", &[7u8; 60][..], [1; NONCE_LEN]));
        assert_eq!(e.sealed, &[9; 40][..]);
        assert_eq!(e.header.len() + e.sealed.len(), bytes.len());
        for cut in 0..bytes.len() - 40 + TAG_LEN {
            assert!(Envelope::parse(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut other = bytes.clone();
        other[3] = 2;
        assert_eq!(Envelope::parse(&other), Err(FormatError::Version(2)));
        other[3] = 1;
        other[4] = 0x04;
        assert_eq!(Envelope::parse(&other), Err(FormatError::Flags(0x04)));
        other[4] = 0x70;
        assert_eq!(Envelope::parse(&other), Err(FormatError::Flags(0x70)));
        assert_eq!(Envelope::parse(b"plain text"), Err(FormatError::NotEncrypted));
    }

    #[test]
    fn the_plaintext_reads_back_with_and_without_headers_and_compression() {
        let headers = [
            crate::records::Header { key: b"h1", value: Some(b"v1") },
            crate::records::Header { key: b"h2", value: None },
        ];
        let value = vec![b'x'; 500];
        for codec in
            [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
        {
            for with_headers in [false, true] {
                let mut out = Vec::new();
                let h = with_headers.then_some(&headers[..]);
                let used = write_plain(&mut out, h, Some(&value), codec).unwrap();
                assert_eq!(used, codec, "a repetitive value compresses");
                let plain = open_plain(Flags::new(with_headers, true, used), &out).unwrap();
                assert_eq!(plain.value.as_deref(), Some(&value[..]));
                let want: Option<Vec<OwnedHeader>> = with_headers
                    .then(|| vec![(b"h1".to_vec(), Some(b"v1".to_vec())), (b"h2".to_vec(), None)]);
                assert_eq!(plain.headers, want);
                for cut in 0..out.len() {
                    let _ = open_plain(Flags::new(with_headers, true, used), &out[..cut]);
                }
            }
        }
        // A tombstone's headers only.
        let mut out = Vec::new();
        write_plain(&mut out, Some(&headers), None, Compression::None).unwrap();
        let plain = open_plain(Flags::new(true, false, Compression::None), &out).unwrap();
        assert_eq!(plain.value, None);
        assert_eq!(plain.headers.unwrap().len(), 2);
        // A huge header count is refused before anything is reserved.
        assert_eq!(
            open_plain(Flags::new(true, false, Compression::None), &[0xFF, 0xFF, 0xFF, 0xFF]),
            Err(FormatError::Plaintext("header count"))
        );
    }
}
