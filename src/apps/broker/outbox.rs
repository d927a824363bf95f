//! A connection's answers on their way out: encoded bytes with record bytes spliced in from
//! the log, written with `writev`. The handlers fill it (`handle.rs`); the I/O loop
//! (`conn.rs`) writes it.

use std::io::{IoSlice, Write};
use std::ops::{Deref, DerefMut, Range};
use std::vec::Vec;

use super::log::Segment;
use crate::codec::vectored;

/// A connection's answers not yet written: the bytes encoded for them, with the record
/// batches of Fetch answers spliced in from the log's segments, which are held, never
/// copied. It dereferences to the encoded bytes, where every answer but a Fetch's is
/// appended whole.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    bytes: Vec<u8>,
    /// Record bytes to send at a position of `bytes`, in order of position.
    splices: Vec<Splice>,
    spliced_bytes: usize,
}

#[derive(Debug)]
struct Splice {
    at: usize,
    segment: Segment,
    range: Range<usize>,
}

impl Outbox {
    /// Appends a segment's bytes (the records of an answer being encoded) at the current
    /// end of the encoded bytes.
    pub fn splice(&mut self, segment: Segment, range: Range<usize>) {
        self.spliced_bytes += range.len();
        self.splices.push(Splice { at: self.bytes.len(), segment, range });
    }

    /// Bytes to send: encoded and spliced.
    pub fn total_len(&self) -> usize {
        self.bytes.len() + self.spliced_bytes
    }

    /// Writes everything with `writev`, the encoded pieces and the segments' bytes in order,
    /// and empties the box (also when the write fails).
    pub(super) fn flush(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        let mut iov = Vec::with_capacity(2 * self.splices.len() + 1);
        let mut at = 0;
        for s in &self.splices {
            if s.at > at {
                iov.push(IoSlice::new(&self.bytes[at..s.at]));
                at = s.at;
            }
            iov.push(IoSlice::new(&s.segment[s.range.clone()]));
        }
        if at < self.bytes.len() {
            iov.push(IoSlice::new(&self.bytes[at..]));
        }
        let written = vectored::write_all(out, &mut iov);
        self.bytes.clear();
        self.splices.clear();
        self.spliced_bytes = 0;
        written
    }
}

impl Deref for Outbox {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.bytes
    }
}

impl DerefMut for Outbox {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn an_outbox_writes_its_bytes_with_the_segments_spliced_in() {
        let segment: Segment = Arc::new(b"0123456789".to_vec());
        let mut out = Outbox::default();
        out.extend_from_slice(b"<a>");
        out.splice(segment.clone(), 2..5);
        out.splice(segment.clone(), 7..8);
        out.extend_from_slice(b"<b>");
        out.splice(segment.clone(), 0..1);
        assert_eq!(out.total_len(), 3 + 3 + 1 + 3 + 1);
        let mut written = Vec::new();
        out.flush(&mut written).unwrap();
        assert_eq!(written, b"<a>2347<b>0");
        assert_eq!((out.total_len(), Arc::strong_count(&segment)), (0, 1), "emptied, nothing held");
    }
}
