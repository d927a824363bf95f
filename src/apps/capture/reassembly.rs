//! TCP reassembly of one direction of a connection, by sequence number: segments in order
//! are passed on at once; segments ahead of the next expected byte wait (bounded); bytes
//! already passed on (duplicates, overlaps of retransmissions) are dropped; missing bytes
//! are passed on as a gap of known length, when the sequence numbers show them lost.

use std::prelude::rust_2024::*;

use std::collections::BTreeMap;

/// A piece of a reassembled byte stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Chunk<'a> {
    /// The next bytes of the stream.
    Data(&'a [u8]),
    /// The next `n` bytes of the stream are not in the capture.
    Gap(u64),
}

/// One direction's reassembly.
#[derive(Debug, Default)]
pub struct Stream {
    /// The sequence number of the next byte to pass on, once known.
    next_seq: Option<u32>,
    /// The stream offset of that byte.
    next_off: u64,
    /// Whether the stream was seen from its SYN (its first byte is the first of the capture).
    pub from_start: bool,
    /// Segments ahead of `next_off`, by stream offset: their payload and the bytes the
    /// snaplen cut after it.
    pending: BTreeMap<u64, (Vec<u8>, u32)>,
    pending_bytes: usize,
    /// An acknowledgment beyond the bytes seen, not yet acted on.
    unseen_ack: Option<u32>,
}

/// How far ahead of the next expected byte a segment may be and still be kept: further is
/// taken for a bogus sequence number.
const MAX_AHEAD: i64 = 1 << 30;

impl Stream {
    /// Bytes held, waiting for earlier ones.
    pub fn buffered(&self) -> usize {
        self.pending_bytes
    }

    /// Bytes of the stream passed on so far (gaps included).
    pub fn offset(&self) -> u64 {
        self.next_off
    }

    /// Takes a segment; passes on what is now in order. `max_pending` bounds the bytes held
    /// for later: past it, the earliest held segment is passed on after a gap.
    pub fn segment(
        &mut self,
        seq: u32,
        syn: bool,
        payload: &[u8],
        missing: u32,
        max_pending: usize,
        out: &mut dyn FnMut(Chunk<'_>),
    ) {
        let mut seq = seq;
        if syn {
            if self.next_seq.is_none() || (self.next_off == 0 && self.pending.is_empty()) {
                self.next_seq = Some(seq.wrapping_add(1));
                self.from_start = true;
            }
            seq = seq.wrapping_add(1);
        }
        if payload.is_empty() && missing == 0 {
            return;
        }
        let next = *self.next_seq.get_or_insert(seq);
        let rel = i64::from(seq.wrapping_sub(next) as i32);
        if rel <= 0 {
            self.deliver((-rel) as u64, payload, missing, out);
            self.drain(out);
        } else if rel < MAX_AHEAD {
            let at = self.next_off + rel as u64;
            let len = payload.len();
            let keep = match self.pending.get(&at) {
                Some((p, m)) => p.len() + *m as usize > len + missing as usize,
                None => false,
            };
            if !keep {
                if let Some((old, _)) = self.pending.insert(at, (payload.to_vec(), missing)) {
                    self.pending_bytes -= old.len();
                }
                self.pending_bytes += len;
            }
            while self.pending_bytes > max_pending {
                // Too much held: give up on the bytes before the earliest held segment.
                if !self.skip_to_first(out) {
                    break;
                }
            }
        }
        // A segment far ahead or behind is taken for a bogus sequence number: dropped.
    }

    /// The peer acknowledged the bytes before `ack`. Bytes acknowledged and not in the
    /// capture are lost to it: when a second acknowledgment shows them still unseen (the
    /// first may have overtaken them in a capture that reorders) and later bytes are held,
    /// the missing ones are passed on as a gap, with what then is in order.
    pub fn acked(&mut self, ack: u32, out: &mut dyn FnMut(Chunk<'_>)) {
        let Some(next) = self.next_seq else { return };
        let beyond = |a: u32| {
            let rel = i64::from(a.wrapping_sub(next) as i32);
            (rel > 0 && rel < MAX_AHEAD).then_some(rel)
        };
        if beyond(ack).is_none() {
            self.unseen_ack = None;
            return;
        }
        let earlier = self.unseen_ack.replace(ack);
        let Some(rel) = earlier.and_then(beyond) else { return };
        let upto = self.next_off + rel as u64;
        // Only a hole with bytes already after it: a capture that reorders (`-i any` across
        // CPUs) may show the acknowledgment of a segment before the segment itself.
        while self.next_off < upto {
            match self.pending.first_key_value() {
                Some((&at, _)) if at <= upto => {
                    self.skip_to_first(out);
                }
                _ => break,
            }
        }
    }

    /// Passes on a segment that starts `skip` bytes before the next expected byte.
    fn deliver(&mut self, skip: u64, payload: &[u8], missing: u32, out: &mut dyn FnMut(Chunk<'_>)) {
        let total = payload.len() as u64 + u64::from(missing);
        if skip >= total {
            return;
        }
        let new_data = payload.get(skip as usize..).unwrap_or_default();
        if !new_data.is_empty() {
            out(Chunk::Data(new_data));
        }
        let gap = if skip > payload.len() as u64 {
            u64::from(missing) - (skip - payload.len() as u64)
        } else {
            u64::from(missing)
        };
        if gap > 0 {
            out(Chunk::Gap(gap));
        }
        let advance = total - skip;
        self.next_off += advance;
        self.next_seq = self.next_seq.map(|s| s.wrapping_add(advance as u32));
    }

    /// Passes on held segments now in order.
    fn drain(&mut self, out: &mut dyn FnMut(Chunk<'_>)) {
        while let Some(entry) = self.pending.first_entry() {
            if *entry.key() > self.next_off {
                break;
            }
            let at = *entry.key();
            let (payload, missing) = entry.remove();
            self.pending_bytes -= payload.len();
            self.deliver(self.next_off - at, &payload, missing, out);
        }
    }

    /// Passes on a gap up to the earliest held segment, and what then is in order; `false`
    /// when nothing is held.
    fn skip_to_first(&mut self, out: &mut dyn FnMut(Chunk<'_>)) -> bool {
        let Some((&at, _)) = self.pending.first_key_value() else { return false };
        let gap = at - self.next_off;
        if gap > 0 {
            out(Chunk::Gap(gap));
            self.next_off = at;
            self.next_seq = self.next_seq.map(|s| s.wrapping_add(gap as u32));
        }
        self.drain(out);
        true
    }

    /// At the end of the capture or of the connection: passes on everything held, with
    /// gaps for the bytes missing before it.
    pub fn flush(&mut self, out: &mut dyn FnMut(Chunk<'_>)) {
        while self.skip_to_first(out) {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    fn run(stream: &mut Stream, segs: &[(u32, &[u8])]) -> Vec<String> {
        let mut got = Vec::new();
        for &(seq, p) in segs {
            stream.segment(seq, false, p, 0, 1 << 20, &mut |c| got.push(format!("{c:?}")));
        }
        stream.flush(&mut |c| got.push(format!("{c:?}")));
        got
    }

    #[test]
    fn reorders_drops_duplicates_and_overlaps() {
        let mut s = Stream::default();
        s.segment(99, true, b"", 0, 1 << 20, &mut |_| {});
        let got = run(&mut s, &[(100, b"ab"), (104, b"ef"), (102, b"cd"), (101, b"bcd"), (103, b"dEFg")]);
        assert_eq!(got, ["Data([97, 98])", "Data([99, 100])", "Data([101, 102])", "Data([103])"]);
    }

    #[test]
    fn gaps_are_reported_and_sequence_numbers_wrap() {
        let mut s = Stream::default();
        let got = run(&mut s, &[(u32::MAX - 1, b"ab"), (2, b"ef")]);
        assert_eq!(got, ["Data([97, 98])", "Gap(2)", "Data([101, 102])"]);
    }

    #[test]
    fn acknowledged_bytes_not_seen_are_a_gap() {
        let mut s = Stream::default();
        let mut got = Vec::new();
        s.segment(10, false, b"ab", 0, 1 << 20, &mut |c| got.push(format!("{c:?}")));
        s.segment(16, false, b"gh", 0, 1 << 20, &mut |c| got.push(format!("{c:?}")));
        s.acked(18, &mut |c| got.push(format!("{c:?}")));
        s.acked(18, &mut |c| got.push(format!("{c:?}")));
        s.acked(20, &mut |c| got.push(format!("{c:?}")));
        s.acked(20, &mut |c| got.push(format!("{c:?}")));
        s.acked(5, &mut |c| got.push(format!("{c:?}")));
        assert_eq!(got, ["Data([97, 98])", "Gap(4)", "Data([103, 104])"]);
    }

    #[test]
    fn memory_is_bounded() {
        let mut s = Stream::default();
        let mut got = Vec::new();
        s.segment(0, false, b"a", 0, 4, &mut |c| got.push(format!("{c:?}")));
        for i in 0..10u32 {
            s.segment(10 + i * 3, false, b"xy", 0, 4, &mut |c| got.push(format!("{c:?}")));
            assert!(s.buffered() <= 4);
        }
        assert!(got.contains(&"Gap(9)".to_string()), "{got:?}");
    }
}
