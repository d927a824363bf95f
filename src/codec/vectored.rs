//! Vectored encoding: a message with `records` fields written around the caller's record
//! bytes, which are never copied.
//!
//! A broker answers a Fetch with batches exactly as they sit in its log, and a producer
//! sends batches it built elsewhere. [`encode`](crate::AnyBody::encode) would copy every
//! record byte into one buffer; the vectored encoders write only the other bytes (lengths,
//! offsets, headers, tagged fields) into the caller's buffer and hand back the output as an
//! ordered list of parts: pieces of that buffer interleaved with the record bytes of the
//! value's `records` fields, borrowed as they are. Concatenated, the parts are exactly what
//! `encode` writes.
//!
//! Every body with a `records` field has the two methods (`ProduceRequest`, `FetchResponse`,
//! `ShareFetchResponse`, `FetchSnapshotResponse`): `vectored_len(version)` and
//! `encode_vectored(version, buf, parts)`. [`request_len`] / [`encode_request`] and
//! [`response_len`] / [`encode_response`] do the same for a whole frame: the size prefix and
//! the header go into the front of the buffer, so that the first part covers them and one
//! `writev` sends the whole frame.
//!
//! # The contract
//!
//! It is the contract of `encoded_len` and `encode`, with one more number:
//!
//! - The size step ([`VectoredLen`]) does every check `encoded_len` does and returns the
//!   exact bytes the buffer needs ([`VectoredLen::buf`]: everything but the record bytes), the
//!   exact number of parts ([`VectoredLen::parts`]) and the length of the whole encoding
//!   ([`VectoredLen::total`], what `encoded_len` returns).
//! - The write step checks the buffer ([`EncodeError::BufferTooSmall`]) and the part array
//!   ([`EncodeError::TooFewParts`]) once, then writes without failing. It fills exactly
//!   `parts` entries from the front of the array and uses exactly `buf` bytes.
//! - Nothing allocates: the caller provides both the buffer and the part array, which can
//!   live on the stack (`no_std`, no `alloc`).
//!
//! # Which parts are records
//!
//! A part is one of the value's record fields or a piece of the buffer. Each records field
//! that holds at least one byte becomes one part of its own, in wire order (depth first, in
//! field order: for a Fetch response, topic by topic and partition by partition); a null or
//! empty records field becomes no part (its length prefix is in the buffer). A records part
//! is the field's own slice (same pointer, same length), and every other part is a
//! non-empty piece of the buffer. Consecutive records parts always have a buffer piece
//! between them (the second one's length prefix), so a value with `k` non-empty records
//! fields has `2k` or `2k + 1` parts (one when `k` is 0).
//!
//! The element type of the part array is any [`Slot`]:
//!
//! - [`Part`] says which parts are records. A log kept in files that mapped its segments
//!   into memory can send a [`Part::Records`] with `sendfile` (or `splice`) from the file
//!   range it mapped, recognised by its pointer, and the buffer pieces with `write`.
//! - [`std::io::IoSlice`] (feature `std`) is what `writev` takes: the encoder fills the
//!   caller's `IoSlice` array directly, with no copy of anything, and [`write_all`] sends it.
//! - `&[u8]`, for a caller with its own I/O.
//!
//! The parts borrow the body as well as the buffer (a records field may own its bytes), so
//! the body value lives until the parts are sent; it is a few structs that borrow the log,
//! built for the response and dropped after it.
//!
//! ```
//! use kwire::messages::fetch::{FetchResponse, FetchableTopicResponse, PartitionData};
//! use kwire::vectored::{self, Part};
//! use kwire::List;
//!
//! // The log's bytes (one batch each); a broker would borrow them from its segments.
//! let log: Vec<Vec<u8>> = vec![vec![1; 300], vec![2; 500]];
//! let partitions: Vec<PartitionData<'_>> = log
//!     .iter()
//!     .enumerate()
//!     .map(|(i, bytes)| PartitionData {
//!         partition_index: i as i32,
//!         high_watermark: 10,
//!         records: Some(List::Borrowed(bytes)),
//!         ..Default::default()
//!     })
//!     .collect();
//! let topics = [FetchableTopicResponse { partitions: List::Borrowed(&partitions), ..Default::default() }];
//! let body = FetchResponse { responses: List::Borrowed(&topics), ..Default::default() };
//!
//! // A whole response frame: size prefix, header and body, around the records.
//! let len = vectored::response_len(&body, 17, &Default::default())?;
//! assert_eq!(len.parts, 5); // frame and body up to the first records, records, ..., the rest
//! let mut buf = [0u8; 256];
//! let mut parts = [Part::Encoded(&[]); 8];
//! let used = vectored::encode_response(&body, 17, &Default::default(), &mut buf, &mut parts)?;
//! assert_eq!(used, len);
//! let parts = &parts[..used.parts];
//! assert!(matches!(parts[1], Part::Records(r) if r.as_ptr() == log[0].as_ptr()));
//! assert_eq!(parts.iter().map(|p| p.bytes().len()).sum::<usize>(), len.total);
//! # Ok::<(), kwire::EncodeError>(())
//! ```
//!
//! With `std`, the same frame goes out in one `writev` (more if the socket takes it in
//! pieces):
//!
//! ```
//! # use kwire::messages::fetch::FetchResponse;
//! # let body = FetchResponse::default();
//! use std::io::IoSlice;
//! use kwire::vectored;
//!
//! let len = vectored::response_len(&body, 17, &Default::default())?;
//! let mut buf = vec![0u8; len.buf];
//! let mut iov = vec![IoSlice::new(&[]); len.parts];
//! vectored::encode_response(&body, 17, &Default::default(), &mut buf, &mut iov)?;
//! let mut socket: Vec<u8> = Vec::new(); // a TcpStream in a broker
//! vectored::write_all(&mut socket, &mut iov)?;
//! assert_eq!(socket.len(), len.total);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// A build without any API that has records (`api-produce`, `api-fetch`, `api-share-fetch`,
// `api-fetch-snapshot`) has no generated code using the helpers below.
#![cfg_attr(
    not(any(
        feature = "api-produce",
        feature = "api-fetch",
        feature = "api-share-fetch",
        feature = "api-fetch-snapshot"
    )),
    allow(dead_code, unused_macros)
)]

use crate::codec::encode::Body;
use crate::codec::error::EncodeError;
use crate::codec::frame::{RequestHeader, ResponseHeader};
use crate::codec::types::Ver;
use crate::codec::wire::Writer;

pub(crate) mod private {
    use super::{PartCount, RecordsOut};
    use crate::codec::encode::Encode;
    use crate::codec::types::Ver;
    use crate::codec::wire::Writer;

    /// A value with `records` fields somewhere inside it: it counts its parts and writes
    /// itself around its records. Sealed.
    pub trait EncodeVectored: Encode {
        /// Counts the records parts and whether bytes follow the last one. Only called
        /// after `size` succeeded for the same version.
        fn count_parts(&self, c: &mut PartCount, ver: Ver);

        /// Writes the value, its records fields through `out`: `Encode::write` is this with
        /// [`Copied`](super::Copied), which copies them into `w`; the vectored encoders hand
        /// each non-empty one out as a part of its own instead.
        fn write_with<'b, 'w, R: RecordsOut<'b, 'w>>(&'b self, w: &mut Writer<'w>, out: &mut R, ver: Ver);
    }
}

pub(crate) use private::EncodeVectored;

/// A message body with `records` fields, which can be encoded around them: `ProduceRequest`,
/// `FetchResponse`, `ShareFetchResponse` and `FetchSnapshotResponse`. Sealed.
pub trait VectoredBody: Body + private::EncodeVectored {}

impl<B: Body + private::EncodeVectored> VectoredBody for B {}

/// An entry of the part array: built from a piece of the caller's buffer or from a
/// records field's bytes. See [the module docs](self) for the types that implement it.
pub trait Slot<'b> {
    /// A piece of the buffer: bytes the encoder wrote.
    fn encoded(bytes: &'b [u8]) -> Self;
    /// The bytes of a records field, as the value holds them.
    fn records(bytes: &'b [u8]) -> Self;
}

/// One part of a vectored encoding, saying what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part<'b> {
    /// A piece of the caller's buffer, written by the encoder (never empty).
    Encoded(&'b [u8]),
    /// The bytes of a records field, borrowed from the value (never empty, never copied).
    Records(&'b [u8]),
}

impl<'b> Part<'b> {
    /// The part's bytes.
    pub const fn bytes(&self) -> &'b [u8] {
        match self {
            Part::Encoded(b) | Part::Records(b) => b,
        }
    }

    /// Whether the part is a records field's bytes.
    pub const fn is_records(&self) -> bool {
        matches!(self, Part::Records(_))
    }
}

impl<'b> Slot<'b> for Part<'b> {
    #[inline]
    fn encoded(bytes: &'b [u8]) -> Self {
        Part::Encoded(bytes)
    }
    #[inline]
    fn records(bytes: &'b [u8]) -> Self {
        Part::Records(bytes)
    }
}

impl<'b> Slot<'b> for &'b [u8] {
    #[inline]
    fn encoded(bytes: &'b [u8]) -> Self {
        bytes
    }
    #[inline]
    fn records(bytes: &'b [u8]) -> Self {
        bytes
    }
}

#[cfg(feature = "std")]
impl<'b> Slot<'b> for std::io::IoSlice<'b> {
    #[inline]
    fn encoded(bytes: &'b [u8]) -> Self {
        std::io::IoSlice::new(bytes)
    }
    #[inline]
    fn records(bytes: &'b [u8]) -> Self {
        std::io::IoSlice::new(bytes)
    }
}

#[cfg(feature = "std")]
impl<'b> From<Part<'b>> for std::io::IoSlice<'b> {
    fn from(part: Part<'b>) -> Self {
        std::io::IoSlice::new(part.bytes())
    }
}

/// The exact sizes of a vectored encoding, from the size step; the write step returns the
/// same numbers for what it used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VectoredLen {
    /// Bytes the caller's buffer needs: the whole encoding but the record bytes.
    pub buf: usize,
    /// Entries the caller's part array needs.
    pub parts: usize,
    /// The length of the whole encoding (what `encoded_len` returns for a body): `buf` plus
    /// the record bytes.
    pub total: usize,
}

/// Counts the parts of a vectored encoding (generated code calls it, in wire order).
#[doc(hidden)]
#[derive(Debug)]
pub struct PartCount {
    records: usize,
    record_bytes: usize,
    /// Whether bytes were written since the last records part.
    tail: bool,
}

impl PartCount {
    fn new() -> Self {
        PartCount { records: 0, record_bytes: 0, tail: false }
    }

    /// Bytes other than records follow. Every field that is present writes at least one
    /// byte, so generated code calls this for a run of fields without knowing their sizes.
    #[inline]
    pub fn head(&mut self) {
        self.tail = true;
    }

    /// A records field: its length prefix, then (when not null or empty) a part of its own.
    #[inline]
    pub fn records(&mut self, records: Option<&[u8]>) {
        match records {
            Some(r) if !r.is_empty() => {
                self.records += 1;
                self.record_bytes = self.record_bytes.saturating_add(r.len());
                self.tail = false;
            }
            _ => self.tail = true,
        }
    }

    /// The parts, for a buffer of `buf` bytes. A records part always follows a non-empty
    /// piece of the buffer (its length prefix at least).
    fn parts(&self, buf: usize) -> usize {
        match self.records {
            0 => usize::from(buf > 0),
            k => 2 * k + usize::from(self.tail),
        }
    }
}

/// Counts the parts of an array of values with records: its count prefix, then each.
#[inline]
pub(crate) fn count_array<T: EncodeVectored>(c: &mut PartCount, items: &[T], ver: Ver) {
    c.head();
    for item in items {
        item.count_parts(c, ver);
    }
}

/// Where a value's records fields go as it is written into `Writer<'w>`, the fields
/// borrowed for `'b`: [`Copied`] into the buffer, or [`Parts`] out as parts of their own.
#[doc(hidden)]
pub trait RecordsOut<'b, 'w> {
    /// Writes a records field (`None`: null).
    fn records(&mut self, w: &mut Writer<'w>, records: Option<&'b [u8]>, flexible: bool);
}

/// Records copied into the buffer with the rest: what `Encode::write` does.
#[doc(hidden)]
#[derive(Debug)]
pub struct Copied;

impl<'b, 'w> RecordsOut<'b, 'w> for Copied {
    #[inline]
    fn records(&mut self, w: &mut Writer<'w>, records: Option<&'b [u8]>, flexible: bool) {
        w.nullable_bytes(records, flexible);
    }
}

/// Records handed out as parts: each piece of the buffer written before a records field
/// becomes a part, then the field's own bytes.
#[derive(Debug)]
struct Parts<'p, S> {
    /// Bytes of the buffer in pieces already handed out.
    done: usize,
    parts: &'p mut [S],
    /// Parts handed out (entries of `parts` filled).
    n: usize,
}

impl<'b, 'p, S: Slot<'b>> Parts<'p, S> {
    fn new(parts: &'p mut [S]) -> Self {
        Parts { done: 0, parts, n: 0 }
    }

    /// Hands out what `w` wrote since the last part, if anything.
    #[inline]
    fn piece(&mut self, w: &mut Writer<'b>) {
        let written = w.pos();
        let piece = w.split_written();
        self.done += written;
        if !piece.is_empty() {
            self.push(S::encoded(piece));
        }
    }

    #[inline]
    fn push(&mut self, part: S) {
        if let Some(slot) = self.parts.get_mut(self.n) {
            *slot = part;
        }
        self.n += 1;
    }

    /// Hands out the last piece; returns the buffer bytes and the parts used.
    fn finish(mut self, mut w: Writer<'b>) -> (usize, usize) {
        self.piece(&mut w);
        (self.done, self.n)
    }
}

impl<'b, S: Slot<'b>> RecordsOut<'b, 'b> for Parts<'_, S> {
    /// The length prefix into the buffer, then the bytes as a part of their own unless
    /// they are null or empty.
    #[inline]
    fn records(&mut self, w: &mut Writer<'b>, records: Option<&'b [u8]>, flexible: bool) {
        let Some(bytes) = records else {
            w.len_prefix(None, flexible, true);
            return;
        };
        w.len_prefix(Some(bytes.len()), flexible, true);
        if !bytes.is_empty() {
            self.piece(w);
            self.push(S::records(bytes));
        }
    }
}

/// Writes an array of values with records: its count prefix, then each, its records
/// through `out`.
#[inline]
pub(crate) fn write_array<'b, 'w, T: EncodeVectored, R: RecordsOut<'b, 'w>>(
    w: &mut Writer<'w>,
    out: &mut R,
    items: &'b [T],
    ver: Ver,
) {
    w.array_len(Some(items.len()), ver.flexible);
    for item in items {
        item.write_with(w, out, ver);
    }
}

/// The version of a body, or the error for one it does not have.
fn ver_of<B: Body>(version: i16) -> Result<Ver, EncodeError> {
    B::ver(version).ok_or(EncodeError::UnsupportedVersion { message: B::NAME, version })
}

/// The sizes of `body` at `ver` after `head` bytes of frame (0 for a bare body).
fn sizes<B: VectoredBody>(body: &B, ver: Ver, head: usize) -> Result<(VectoredLen, usize), EncodeError> {
    let body_len = body.size(ver, B::NAME)?;
    let mut count = PartCount::new();
    if head > 0 {
        count.head();
    }
    body.count_parts(&mut count, ver);
    // `size` added the record bytes into `body_len`, so they cannot exceed it.
    let buf = head + body_len.saturating_sub(count.record_bytes);
    let total = crate::codec::wire::add(head, body_len, "Frame.size")?;
    Ok((VectoredLen { buf, parts: count.parts(buf), total }, body_len))
}

/// Checks the buffer and the part array against `len`.
fn check_room<S>(len: VectoredLen, buf: &mut [u8], parts: &[S]) -> Result<(), EncodeError> {
    if buf.len() < len.buf {
        return Err(EncodeError::BufferTooSmall { needed: len.buf, available: buf.len() });
    }
    if parts.len() < len.parts {
        return Err(EncodeError::TooFewParts { needed: len.parts, available: parts.len() });
    }
    Ok(())
}

/// Writes `body` after the frame head already in `w`, and checks the counts against `len`.
fn write_body<'b, B: VectoredBody, S: Slot<'b>>(
    body: &'b B,
    ver: Ver,
    len: VectoredLen,
    mut w: Writer<'b>,
    parts: &mut [S],
) -> Result<VectoredLen, EncodeError> {
    let mut out = Parts::new(parts);
    body.write_with(&mut w, &mut out, ver);
    let (buf, n) = out.finish(w);
    if buf != len.buf {
        return Err(EncodeError::SizeMismatch { message: B::NAME, sized: len.buf, written: buf });
    }
    if n != len.parts {
        return Err(EncodeError::PartsMismatch { message: B::NAME, counted: len.parts, written: n });
    }
    Ok(len)
}

/// The sizes of `body` encoded as `version` (the `vectored_len` of every body with records).
#[inline]
pub(crate) fn body_len<B: VectoredBody>(body: &B, version: i16) -> Result<VectoredLen, EncodeError> {
    Ok(sizes(body, ver_of::<B>(version)?, 0)?.0)
}

/// Encodes `body` as `version` around its records (the `encode_vectored` of every body
/// with records).
#[inline]
pub(crate) fn encode_body<'b, B: VectoredBody, S: Slot<'b>>(
    body: &'b B,
    version: i16,
    buf: &'b mut [u8],
    parts: &mut [S],
) -> Result<VectoredLen, EncodeError> {
    let ver = ver_of::<B>(version)?;
    let (len, _) = sizes(body, ver, 0)?;
    check_room(len, buf, parts)?;
    let buf = &mut buf[..len.buf];
    write_body(body, ver, len, Writer::new(buf), parts)
}

/// The frame's sizes: the size prefix and header take `head` bytes.
fn frame_sizes<B: VectoredBody>(body: &B, ver: Ver, head: usize) -> Result<VectoredLen, EncodeError> {
    let (len, body_len) = sizes(body, ver, head)?;
    if (head - 4).checked_add(body_len).is_none_or(|n| n > i32::MAX as usize) {
        return Err(EncodeError::TooLong { field: "Frame.size" });
    }
    Ok(len)
}

/// The sizes of a whole request frame (size prefix, header, body) encoded around the
/// body's records with [`encode_request`].
pub fn request_len<B: VectoredBody>(
    body: &B,
    version: i16,
    header: &RequestHeader<'_>,
) -> Result<VectoredLen, EncodeError> {
    let ver = ver_of::<B>(version)?;
    let header_version = B::API_KEY.request_header_version(version);
    frame_sizes(body, ver, 4 + header.encoded_len(header_version)?)
}

/// Encodes a whole request frame around the body's records: the size prefix, the header
/// and the body's other bytes into the front of `buf`, the parts into the front of `parts`
/// (the first one starts with the size prefix). Returns what [`request_len`] returns.
pub fn encode_request<'b, B: VectoredBody, S: Slot<'b>>(
    body: &'b B,
    version: i16,
    header: &RequestHeader<'_>,
    buf: &'b mut [u8],
    parts: &mut [S],
) -> Result<VectoredLen, EncodeError> {
    let ver = ver_of::<B>(version)?;
    let header_version = B::API_KEY.request_header_version(version);
    let head = 4 + header.encoded_len(header_version)?;
    let len = frame_sizes(body, ver, head)?;
    check_room(len, buf, parts)?;
    let mut w = Writer::new(&mut buf[..len.buf]);
    w.i32((len.total - 4) as i32);
    header.write(&mut w, B::API_KEY.to_i16(), version, header_version);
    write_body(body, ver, len, w, parts)
}

/// The sizes of a whole response frame encoded around the body's records with
/// [`encode_response`].
pub fn response_len<B: VectoredBody>(
    body: &B,
    version: i16,
    header: &ResponseHeader<'_>,
) -> Result<VectoredLen, EncodeError> {
    let ver = ver_of::<B>(version)?;
    let header_version = B::API_KEY.response_header_version(version);
    frame_sizes(body, ver, 4 + header.encoded_len(header_version)?)
}

/// Encodes a whole response frame around the body's records, as [`encode_request`] does
/// a request; the header's version follows from the body's API and `version`.
pub fn encode_response<'b, B: VectoredBody, S: Slot<'b>>(
    body: &'b B,
    version: i16,
    header: &ResponseHeader<'_>,
    buf: &'b mut [u8],
    parts: &mut [S],
) -> Result<VectoredLen, EncodeError> {
    let ver = ver_of::<B>(version)?;
    let header_version = B::API_KEY.response_header_version(version);
    let head = 4 + header.encoded_len(header_version)?;
    let len = frame_sizes(body, ver, head)?;
    check_room(len, buf, parts)?;
    let mut w = Writer::new(&mut buf[..len.buf]);
    w.i32((len.total - 4) as i32);
    header.write(&mut w, header_version);
    write_body(body, ver, len, w, parts)
}

/// Writes every part to `out` with `write_vectored` (`writev` on a socket or file),
/// calling it again while it takes only some of the bytes. `parts` is advanced past what
/// was written (see [`std::io::IoSlice::advance_slices`]).
#[cfg(feature = "std")]
pub fn write_all<W: std::io::Write + ?Sized>(
    out: &mut W,
    mut parts: &mut [std::io::IoSlice<'_>],
) -> std::io::Result<()> {
    // Empty parts are never produced, but a caller's array may hold some.
    std::io::IoSlice::advance_slices(&mut parts, 0);
    while !parts.is_empty() {
        match out.write_vectored(parts) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => std::io::IoSlice::advance_slices(&mut parts, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Declares the vectored encoders of a body with records: `vectored_len` and
/// `encode_vectored`. The generated messages invoke it once per such body, e.g.
/// `vectored_body!(FetchResponse)`.
macro_rules! vectored_body {
    ($name:ident) => {
        impl<'a> $name<'a> {
            /// The exact sizes of this body encoded as `version` around its records: the
            /// buffer bytes and parts [`encode_vectored`](Self::encode_vectored) needs, or why it
            /// cannot be encoded (the errors of `encoded_len`). See [`crate::codec::vectored`].
            pub fn vectored_len(
                &self,
                version: i16,
            ) -> Result<$crate::codec::vectored::VectoredLen, $crate::codec::error::EncodeError> {
                $crate::codec::vectored::body_len(self, version)
            }

            /// Encodes this body as `version` around its records: every byte but the
            /// records' into the front of `buf`, and the output as parts (pieces of `buf`
            /// and the records' own bytes, in order) into the front of `parts`. Returns what
            /// [`vectored_len`](Self::vectored_len) returns. See [`crate::codec::vectored`].
            pub fn encode_vectored<'b, S: $crate::codec::vectored::Slot<'b>>(
                &'b self,
                version: i16,
                buf: &'b mut [u8],
                parts: &mut [S],
            ) -> Result<$crate::codec::vectored::VectoredLen, $crate::codec::error::EncodeError> {
                $crate::codec::vectored::encode_body(self, version, buf, parts)
            }
        }
    };
}

pub(crate) use vectored_body;
