//! TCP reassembly of one direction of a connection, by sequence number.
//!
//! The rules, in the order a segment meets them:
//! - **Anchor.** The stream starts at its SYN (the next byte is the SYN's sequence number
//!   plus one); a stream whose SYN is not in the capture starts at the first segment seen.
//!   A SYN seen again with the same sequence number is a retransmission, not a new stream.
//! - **In order.** Bytes at the next expected sequence number are passed on at once.
//! - **Ahead.** Segments ahead of it wait, by stream offset, until the bytes before them
//!   come: segments may arrive in any order, and a retransmission that fills a hole long
//!   after later bytes came is taken as it comes.
//! - **Duplicates and overlaps: first seen wins.** Each byte of the stream is taken from
//!   the first segment the capture shows holding it; later copies of it (retransmissions,
//!   overlapping re-segmentations) are dropped, whether their bytes are equal or not, and
//!   whether the first copy was already passed on or still waits. (A conflicting copy can
//!   only come from a broken stack or a forged packet; the receiver took one of them, and
//!   the capture cannot say which: the first is as good a guess as any and keeps the
//!   output stable while later packets arrive.)
//! - **Sequence numbers wrap** at 2^32: positions are compared modulo 2^32 (a segment more
//!   than 2^30 bytes ahead, or one behind, is not taken as new data), and stream offsets
//!   are 64-bit.
//! - **Gaps.** A hole is passed on as a gap of known length only when it can no longer be
//!   filled within the bounds: bytes held past it exceed `max_pending`; the peer
//!   acknowledged bytes past it in [`ACK_PATIENCE`] packets, or in two over at least
//!   [`REORDER_NS`] of capture time (the capture lost them: a capture that reorders shows
//!   an acknowledgment before the segment it acknowledges, but not that long before); or
//!   the stream ends (the connection ended at a limit, or the capture ends). Bytes cut by
//!   the snaplen are missing from the segment that was cut: a gap in place.
//! - **Waiting for the other side** (in `kafka/conn.rs`): the peer's segments that acknowledge
//!   bytes not yet shown wait with them, so that a response is never read before the
//!   request it answers; a connection is over when both FINs (or a RST) are in and no byte
//!   before them is missing.
//!
//! Memory: the held segments never overlap (each keeps only the bytes no earlier segment
//! holds), and each counts its bytes plus [`PIECE_OVERHEAD`] against `max_pending`.

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

/// Bytes held ahead of the next expected one: its payload, then bytes the snaplen cut.
#[derive(Debug)]
struct Piece {
    data: Vec<u8>,
    missing: u32,
}

impl Piece {
    fn len(&self) -> u64 {
        self.data.len() as u64 + u64::from(self.missing)
    }

    fn cost(&self) -> usize {
        self.data.len() + PIECE_OVERHEAD
    }
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
    /// The SYN's sequence number, once seen.
    isn: Option<u32>,
    /// The stream offset of its FIN, once seen.
    fin_off: Option<u64>,
    /// Bytes ahead of `next_off`, by stream offset; no two overlap.
    pending: BTreeMap<u64, Piece>,
    /// What `pending` costs against the bound.
    held: usize,
    /// An acknowledgment beyond the bytes seen, not yet acted on: the first such, when
    /// (capture time, ns) it was first seen, and how many times since.
    unseen_ack: Option<(u32, i128, u32)>,
}

/// How far ahead of the next expected byte a segment may be and still be kept: further is
/// taken for a bogus sequence number.
const MAX_AHEAD: i64 = 1 << 30;

/// Capture time (ns) an acknowledgment of bytes the capture lacks must outlive before the
/// bytes are taken for lost: far longer than any reordering a capture shows (microseconds
/// to milliseconds), short enough that a live capture resumes soon after a loss.
pub const REORDER_NS: i128 = 200_000_000;

/// Packets acknowledging bytes the capture lacks after which they are taken for lost,
/// whatever the capture's clock says.
pub const ACK_PATIENCE: u32 = 1024;

/// What each held piece costs beyond its bytes (its map entry and vector), so that many
/// tiny segments cannot hold more memory than the bound says.
pub const PIECE_OVERHEAD: usize = 64;

impl Stream {
    /// Bytes held, waiting for earlier ones (with each piece's overhead).
    pub fn buffered(&self) -> usize {
        self.held
    }

    /// Whether a SYN with sequence number `seq` starts a new connection on this stream's
    /// addresses, rather than repeating the one seen.
    pub fn is_new_syn(&self, seq: u32) -> bool {
        match self.isn {
            Some(isn) => isn != seq,
            None => self.next_off > 0 || !self.pending.is_empty(),
        }
    }

    /// Whether every byte up to the stream's FIN (when seen) is in, and nothing waits.
    pub fn complete(&self) -> bool {
        self.pending.is_empty() && self.fin_off.is_none_or(|f| self.next_off >= f)
    }

    /// The peer's FIN at sequence number `seq` (that of the byte after the last).
    pub fn fin_at(&mut self, seq: u32) {
        let Some(next) = self.next_seq else {
            self.fin_off.get_or_insert(self.next_off);
            return;
        };
        let rel = i64::from(seq.wrapping_sub(next) as i32);
        if rel.abs() < MAX_AHEAD {
            // A FIN seen again (retransmitted) keeps the first place.
            self.fin_off.get_or_insert((self.next_off as i64 + rel).max(0) as u64);
        }
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
                self.isn = Some(seq);
                self.from_start = true;
            }
            seq = seq.wrapping_add(1);
        }
        if payload.is_empty() && missing == 0 {
            return;
        }
        let next = *self.next_seq.get_or_insert(seq);
        let rel = i64::from(seq.wrapping_sub(next) as i32);
        if rel >= MAX_AHEAD {
            // Far ahead: taken for a bogus sequence number.
            return;
        }
        if rel <= 0 && self.pending.is_empty() {
            // In order, nothing held: passed on as it is.
            self.deliver((-rel) as u64, payload, missing, out);
            return;
        }
        self.hold(self.next_off as i64 + rel, payload, missing);
        self.drain(out);
        while self.held > max_pending {
            // Too much held: give up on the bytes before the earliest held segment.
            if !self.skip_to_first(out) {
                break;
            }
        }
    }

    /// Holds the bytes of a segment starting at stream offset `start` that no earlier
    /// segment holds and that were not passed on yet (first seen wins).
    fn hold(&mut self, start: i64, payload: &[u8], missing: u32) {
        let data_end = start + payload.len() as i64;
        let end = data_end + i64::from(missing);
        let lo = start.max(self.next_off as i64);
        if lo >= end {
            return;
        }
        let (lo, end) = (lo as u64, end as u64);
        // The parts of [lo, end) no held piece covers.
        let mut free = Vec::new();
        let mut cur = lo;
        if let Some((&at, p)) = self.pending.range(..=lo).next_back() {
            cur = cur.max(at + p.len());
        }
        for (&at, p) in self.pending.range(lo + 1..end) {
            if at > cur {
                free.push((cur, at));
            }
            cur = cur.max(at + p.len());
        }
        if cur < end {
            free.push((cur, end));
        }
        for (a, b) in free {
            let (a, b) = (a as i64, b as i64);
            let data = if a < data_end {
                &payload[(a - start) as usize..(b.min(data_end) - start) as usize]
            } else {
                &[]
            };
            let piece = Piece { data: data.to_vec(), missing: (b - a.max(data_end)).max(0) as u32 };
            self.held += piece.cost();
            self.pending.insert(a as u64, piece);
        }
    }

    /// Whether `ack` acknowledges bytes not passed on yet: the capture has not shown them
    /// yet, or lost them.
    pub fn waits_for(&self, ack: u32) -> bool {
        self.beyond(ack).is_some()
    }

    /// How far `ack` is past the next byte to pass on, when it is (and not bogus).
    fn beyond(&self, ack: u32) -> Option<i64> {
        let next = self.next_seq?;
        let rel = i64::from(ack.wrapping_sub(next) as i32);
        // A FIN takes a sequence number of its own, acknowledged with the bytes before it.
        let fin = i64::from(self.fin_off.is_some_and(|f| self.next_off >= f));
        (rel > fin && rel < MAX_AHEAD).then_some(rel)
    }

    /// The peer acknowledged the bytes before `ack`, in a packet of capture time `now` (ns).
    /// Bytes acknowledged and not in the capture are lost to it: `true` when
    /// acknowledgments beyond bytes not seen came in [`ACK_PATIENCE`] packets, or in two
    /// over at least [`REORDER_NS`] (the caller then gives them up,
    /// [`Stream::give_up_to`]).
    pub fn acked(&mut self, ack: u32, now: i128) -> bool {
        if self.beyond(ack).is_none() {
            self.unseen_ack = None;
            return false;
        }
        let (first, since, seen) = match self.unseen_ack {
            Some((a, t, n)) if self.beyond(a).is_some() => (a, t, n + 1),
            _ => (ack, now, 1),
        };
        self.unseen_ack = Some((first, since, seen));
        seen >= ACK_PATIENCE || (seen >= 2 && now - since >= REORDER_NS)
    }

    /// The first acknowledgment beyond the bytes passed on that is still beyond them.
    pub fn unseen_ack(&self) -> Option<u32> {
        self.unseen_ack.map(|(a, ..)| a).filter(|&a| self.beyond(a).is_some())
    }

    /// Passes on every byte before `ack` (acknowledged by the peer): those the capture
    /// lacks as gaps, those held, and what then is in order.
    pub fn give_up_to(&mut self, ack: u32, out: &mut dyn FnMut(Chunk<'_>)) {
        let Some(rel) = self.beyond(ack) else { return };
        let upto = self.next_off + rel as u64;
        while self.next_off < upto {
            match self.pending.first_key_value() {
                Some((&at, _)) if at <= upto => {
                    self.skip_to_first(out);
                }
                _ => {
                    let gap = upto - self.next_off;
                    out(Chunk::Gap(gap));
                    self.next_off = upto;
                    self.next_seq = self.next_seq.map(|s| s.wrapping_add(gap as u32));
                }
            }
        }
        if self.unseen_ack().is_none() {
            self.unseen_ack = None;
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
            let piece = entry.remove();
            self.held -= piece.cost();
            self.deliver(self.next_off - at, &piece.data, piece.missing, out);
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
        let ms = 1_000_000;
        s.segment(10, false, b"ab", 0, 1 << 20, &mut |c| got.push(format!("{c:?}")));
        s.segment(16, false, b"gh", 0, 1 << 20, &mut |c| got.push(format!("{c:?}")));
        // Acknowledged, but not for long enough: a capture that reorders.
        assert!(!s.acked(18, 0));
        assert!(!s.acked(18, 100 * ms));
        assert!(s.waits_for(18) && !s.waits_for(12) && !s.waits_for(5));
        // Twice, over the window: lost.
        assert!(s.acked(20, 300 * ms));
        assert_eq!(s.unseen_ack(), Some(18));
        s.give_up_to(18, &mut |c| got.push(format!("{c:?}")));
        assert_eq!(got, ["Data([97, 98])", "Gap(4)", "Data([103, 104])"]);
        assert!(!s.acked(5, 303 * ms));
        // Many acknowledgments over no time at all: lost too.
        let mut t = Stream::default();
        t.segment(10, false, b"ab", 0, 1 << 20, &mut |_| {});
        t.segment(16, false, b"gh", 0, 1 << 20, &mut |_| {});
        let fired: Vec<bool> = (0..ACK_PATIENCE).map(|_| t.acked(18, 0)).collect();
        assert_eq!(fired.iter().filter(|&&f| f).count(), 1);
        assert!(fired[ACK_PATIENCE as usize - 1]);
        // Bytes acknowledged with nothing held after them are a gap when given up.
        let mut u = Stream::default();
        let mut got = Vec::new();
        u.segment(10, false, b"ab", 0, 1 << 20, &mut |c| got.push(format!("{c:?}")));
        u.give_up_to(15, &mut |c| got.push(format!("{c:?}")));
        u.segment(15, false, b"f", 0, 1 << 20, &mut |c| got.push(format!("{c:?}")));
        assert_eq!(got, ["Data([97, 98])", "Gap(3)", "Data([102])"]);
    }

    /// Runs segments and returns the stream's bytes, gaps as `?`.
    fn bytes(stream: &mut Stream, segs: &[(u32, &[u8])]) -> Vec<u8> {
        let mut got = Vec::new();
        let mut take = |c: Chunk<'_>| match c {
            Chunk::Data(d) => got.extend_from_slice(d),
            Chunk::Gap(n) => got.extend(std::iter::repeat_n(b'?', n as usize)),
        };
        for &(seq, p) in segs {
            stream.segment(seq, false, p, 0, 1 << 20, &mut take);
        }
        stream.flush(&mut take);
        got
    }

    #[test]
    fn conflicting_bytes_first_seen_wins() {
        // Held first, then a conflicting copy that also covers the hole before it.
        let mut s = Stream::default();
        s.segment(99, true, b"", 0, 1 << 20, &mut |_| {});
        assert_eq!(bytes(&mut s, &[(100, b"ab"), (104, b"EF"), (102, b"cdXYgh")]), b"abcdEFgh");
        // Passed on first, then a conflicting retransmission.
        let mut s = Stream::default();
        assert_eq!(bytes(&mut s, &[(0, b"abcd"), (2, b"XYef")]), b"abcdef");
        // A copy spanning several held pieces fills only what is between them.
        let mut s = Stream::default();
        assert_eq!(
            bytes(&mut s, &[(0, b"a"), (2, b"c"), (5, b"f"), (8, b"i"), (1, b"BCDEFGHIJ")]),
            b"aBcDEfGHiJ"
        );
        assert_eq!(s.buffered(), 0);
    }

    #[test]
    fn any_order_across_the_wrap() {
        // Twelve 3-byte segments around 2^32, in a scrambled order with duplicates.
        let data: Vec<u8> = (0..36u8).collect();
        let base = u32::MAX - 16;
        let order = [3, 0, 7, 7, 1, 11, 2, 5, 4, 10, 6, 9, 8, 3, 0];
        let segs: Vec<(u32, &[u8])> =
            order.iter().map(|&i| (base.wrapping_add(3 * i as u32), &data[3 * i..3 * i + 3])).collect();
        let mut s = Stream::default();
        s.segment(base.wrapping_sub(1), true, b"", 0, 1 << 20, &mut |_| {});
        assert_eq!(bytes(&mut s, &segs), data);
        // Overlapping re-segmentations across the wrap.
        let mut s = Stream::default();
        s.segment(base.wrapping_sub(1), true, b"", 0, 1 << 20, &mut |_| {});
        let over: Vec<(u32, &[u8])> = [(20, 36), (0, 10), (5, 25), (15, 17)]
            .iter()
            .map(|&(a, b)| (base.wrapping_add(a), &data[a as usize..b as usize]))
            .collect();
        assert_eq!(bytes(&mut s, &over), data);
    }

    #[test]
    fn a_retransmission_long_after_fills_the_hole() {
        let mut s = Stream::default();
        let mut got = Vec::new();
        s.segment(0, false, b"ab", 0, 1 << 20, &mut |c| got.push(format!("{c:?}")));
        for i in 1..50u32 {
            s.segment(2 + 2 * i, false, b"zz", 0, 1 << 20, &mut |c| got.push(format!("{c:?}")));
            // The peer acknowledges only up to the hole (it did not get it either).
            assert!(!s.acked(2, i128::from(i) * 100_000_000));
        }
        assert_eq!(got.len(), 1);
        s.segment(2, false, b"cd", 0, 1 << 20, &mut |c| got.push(format!("{c:?}")));
        assert_eq!(got.len(), 51, "{got:?}");
        assert!(!got.iter().any(|c| c.starts_with("Gap")));
        assert!(s.complete());
    }

    #[test]
    fn fin_before_the_last_bytes() {
        let mut s = Stream::default();
        s.segment(9, true, b"", 0, 1 << 20, &mut |_| {});
        s.segment(10, false, b"ab", 0, 1 << 20, &mut |_| {});
        s.fin_at(16);
        assert!(!s.complete());
        s.segment(14, false, b"ef", 0, 1 << 20, &mut |_| {});
        assert!(!s.complete());
        s.segment(12, false, b"cd", 0, 1 << 20, &mut |_| {});
        assert!(s.complete());
        // A SYN seen again is the same stream; another sequence number is a new one.
        assert!(!s.is_new_syn(9));
        assert!(s.is_new_syn(1234));
    }

    #[test]
    fn memory_is_bounded() {
        let bound = 2 * PIECE_OVERHEAD + 8;
        let mut s = Stream::default();
        let mut got = Vec::new();
        s.segment(0, false, b"a", 0, bound, &mut |c| got.push(format!("{c:?}")));
        for i in 0..10u32 {
            s.segment(10 + i * 3, false, b"xy", 0, bound, &mut |c| got.push(format!("{c:?}")));
            assert!(s.buffered() <= bound);
        }
        assert!(got.contains(&"Gap(9)".to_string()), "{got:?}");
        // Tiny segments count their overhead; duplicates and overlaps hold nothing more.
        let mut s = Stream::default();
        s.segment(0, false, b"a", 0, 1 << 20, &mut |_| {});
        for i in 0..1000u32 {
            s.segment(2 + 2 * i, false, b"x", 0, 1 << 20, &mut |_| {});
            s.segment(2 + 2 * i, false, b"x", 0, 1 << 20, &mut |_| {});
        }
        assert_eq!(s.buffered(), 1000 * (1 + PIECE_OVERHEAD));
        s.segment(1, false, &[b'y'; 2000], 0, 1 << 20, &mut |_| {});
        assert_eq!(s.buffered(), 0);
    }
}
