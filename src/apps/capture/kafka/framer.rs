//! Frame boundaries: each direction split into frames by their size prefix, and
//! resynchronisation at the next plausible frame when a stream was joined late or lost
//! bytes.

use std::format;
use std::prelude::rust_2024::*;

use std::borrow::Cow;
use std::net::SocketAddr;

use super::super::reassembly::Chunk;
use super::super::{Cut, Event, Timestamp};
use super::boundary::{REQUEST_HEAD, RESPONSE_HEAD, find_request, find_response};
use super::{Ctx, Kafka};
use crate::codec::frame::size_prefix;

/// Bytes a frame too large to hold keeps (its headers).
const HEAD_KEEP: usize = 64;
/// Bytes searched for a frame boundary before the oldest are dropped.
const RESYNC_WINDOW: usize = 64 * 1024;

/// One direction's frame splitter.
#[derive(Default)]
pub(super) struct Framer {
    pub(super) sync: bool,
    /// Synchronised at least once: a later loss of sync is a resynchronisation, not a
    /// late join.
    pub(super) started: bool,
    /// In sync: the current frame's bytes (up to its first gap, at most `keep`); out of
    /// sync: the bytes searched for a frame boundary.
    pub(super) buf: Vec<u8>,
    /// The current frame's length with its size prefix, once read.
    pub(super) want: Option<u64>,
    /// Bytes of the current frame passed (gaps included).
    pub(super) filled: u64,
    keep: usize,
    pub(super) cut: Option<Cut>,
    /// Out of sync: bytes dropped so far.
    skipped: u64,
    /// Out of sync: positions of `buf` already searched for a request.
    scanned: usize,
}

impl Framer {
    pub(super) fn reset(&mut self) -> Vec<u8> {
        self.want = None;
        self.filled = 0;
        self.keep = 0;
        self.cut = None;
        std::mem::take(&mut self.buf)
    }

    fn lose_sync(&mut self, skipped: u64) {
        self.reset();
        self.sync = false;
        self.skipped = skipped;
        self.scanned = 0;
    }

    pub(super) fn memory(&self) -> usize {
        self.buf.capacity()
    }
}

pub(super) enum Step {
    Used(usize),
    Restart(Vec<u8>),
}

impl Kafka {
    pub(super) fn chunk(
        &mut self,
        side: usize,
        ts: Timestamp,
        chunk: Chunk<'_>,
        addrs: [SocketAddr; 2],
        id: u64,
        ctx: &mut Ctx<'_>,
    ) {
        let (client, broker) = self.ends(addrs);
        let direction = self.direction(side);
        match chunk {
            Chunk::Gap(n) => {
                ctx.events.push_back(Event::Gap { conn: id, client, broker, direction, ts, bytes: n });
                let f = &mut self.framers[side];
                if !f.sync {
                    f.skipped += n + f.buf.len() as u64;
                    f.buf.clear();
                    f.scanned = 0;
                    return;
                }
                match f.want {
                    None => {
                        let partial = f.buf.len() as u64;
                        f.lose_sync(partial + n);
                    }
                    Some(want) => {
                        let remaining = want - f.filled;
                        f.cut.get_or_insert(Cut::Gap);
                        if n < remaining {
                            f.filled += n;
                        } else {
                            f.filled = want;
                            self.emit(side, ts, addrs, id, ctx);
                            let left = n - remaining;
                            if left > 0 {
                                self.framers[side].lose_sync(left);
                            }
                        }
                    }
                }
            }
            Chunk::Data(d) => self.data(side, ts, d, addrs, id, ctx),
        }
    }

    fn data(
        &mut self,
        side: usize,
        ts: Timestamp,
        input: &[u8],
        addrs: [SocketAddr; 2],
        id: u64,
        ctx: &mut Ctx<'_>,
    ) {
        // A loop, not recursion: hostile bytes may lose and find sync at every byte.
        let mut src: Cow<'_, [u8]> = Cow::Borrowed(input);
        let mut pos = 0;
        while pos < src.len() {
            match self.step(side, ts, &src[pos..], addrs, id, ctx) {
                Step::Used(k) => pos += k,
                Step::Restart(rest) => {
                    src = Cow::Owned(rest);
                    pos = 0;
                }
            }
        }
    }

    /// Reads some of `d`: how much, or the bytes to read next instead (after a frame
    /// boundary was found).
    fn step(
        &mut self,
        side: usize,
        ts: Timestamp,
        d: &[u8],
        addrs: [SocketAddr; 2],
        id: u64,
        ctx: &mut Ctx<'_>,
    ) -> Step {
        let max_frame = ctx.limits.max_frame;
        let least = if side == self.client { 8 } else { 4 };
        let f = &mut self.framers[side];
        if !f.sync {
            f.buf.extend_from_slice(d);
            return match self.resync(side, ts, addrs, id, ctx) {
                Some(rest) => Step::Restart(rest),
                None => Step::Used(d.len()),
            };
        }
        match f.want {
            None => {
                let k = (4 - f.buf.len()).min(d.len());
                f.buf.extend_from_slice(&d[..k]);
                f.filled += k as u64;
                if f.buf.len() < 4 {
                    return Step::Used(k);
                }
                let Some(size) = size_prefix(&f.buf) else { return Step::Used(k) };
                if size < least {
                    // Not a frame boundary after all: search from the next byte.
                    let (client, broker) = self.ends(addrs);
                    let what = if side == self.client { "request" } else { "response" };
                    ctx.events.push_back(Event::Note {
                        ts,
                        message: format!(
                            "connection {id} {client} -> {broker}: a {what} frame size of {size} bytes; \
                             looking for the next frame"
                        ),
                    });
                    let f = &mut self.framers[side];
                    let mut held = f.reset();
                    held.extend_from_slice(&d[k..]);
                    held.remove(0);
                    f.sync = false;
                    f.skipped = 1;
                    f.scanned = 0;
                    f.buf = held;
                    return match self.resync(side, ts, addrs, id, ctx) {
                        Some(rest) => Step::Restart(rest),
                        None => Step::Used(d.len()),
                    };
                }
                let want = 4 + size as u64;
                f.want = Some(want);
                if size as usize > max_frame {
                    f.keep = HEAD_KEEP;
                    f.cut = Some(Cut::TooLarge);
                } else {
                    f.keep = want as usize;
                }
                Step::Used(k)
            }
            Some(want) => {
                let k = ((want - f.filled) as usize).min(d.len());
                // Bytes after a gap are not kept: the frame is cut at the gap.
                if matches!(f.cut, None | Some(Cut::TooLarge)) {
                    let room = f.keep.saturating_sub(f.buf.len()).min(k);
                    f.buf.extend_from_slice(&d[..room]);
                }
                f.filled += k as u64;
                if f.filled == want {
                    self.emit(side, ts, addrs, id, ctx);
                }
                Step::Used(k)
            }
        }
    }

    /// Out of sync: searches the held bytes for a frame boundary. Found: back in sync,
    /// and the bytes from the boundary on are returned to be read.
    fn resync(
        &mut self,
        side: usize,
        ts: Timestamp,
        addrs: [SocketAddr; 2],
        id: u64,
        ctx: &mut Ctx<'_>,
    ) -> Option<Vec<u8>> {
        let max = ctx.limits.max_frame;
        let ids: Vec<i32> = self.in_flight.iter().map(|p| p.correlation_id).collect();
        let request = side == self.client;
        let f = &mut self.framers[side];
        let found = if request {
            // Each position is searched once (a position rejected stays rejected).
            let from = f.scanned.min(f.buf.len());
            let found = find_request(&f.buf[from..], false, max).map(|(at, _)| from + at);
            if found.is_none() {
                f.scanned = from.max((f.buf.len() + 1).saturating_sub(REQUEST_HEAD));
            }
            found
        } else {
            find_response(&f.buf, &ids, false, max)
        };
        let Some(at) = found else {
            let keep = if request { REQUEST_HEAD } else { RESPONSE_HEAD } - 1;
            if f.buf.len() > RESYNC_WINDOW {
                let drop = f.buf.len() - keep;
                f.buf.drain(..drop);
                f.scanned = f.scanned.saturating_sub(drop);
                f.skipped += drop as u64;
            }
            return None;
        };
        let mut rest = std::mem::take(&mut f.buf);
        rest.drain(..at);
        f.scanned = 0;
        let skipped = f.skipped + at as u64;
        f.skipped = 0;
        f.sync = true;
        let (client, broker) = self.ends(addrs);
        let direction = self.direction(side);
        let f = &mut self.framers[side];
        if f.started {
            ctx.events.push_back(Event::Resynchronised { conn: id, client, broker, direction, ts, skipped });
        } else {
            f.started = true;
            ctx.events.push_back(Event::JoinedLate { conn: id, client, broker, direction, ts, skipped });
        }
        Some(rest)
    }

    /// The end of `side`'s stream: a frame in progress is reported cut.
    pub(super) fn end(
        &mut self,
        side: usize,
        ts: Timestamp,
        why: Cut,
        addrs: [SocketAddr; 2],
        id: u64,
        ctx: &mut Ctx<'_>,
    ) {
        let f = &mut self.framers[side];
        if f.sync && !f.buf.is_empty() {
            if f.cut.is_none() || f.cut == Some(Cut::TooLarge) && f.filled < f.want.unwrap_or(0) {
                f.cut = Some(why);
            }
            self.emit(side, ts, addrs, id, ctx);
        } else if !f.sync && (f.skipped > 0 || !f.buf.is_empty()) {
            let skipped = f.skipped + f.buf.len() as u64;
            let (client, broker) = self.ends(addrs);
            ctx.events.push_back(Event::Note {
                ts,
                message: format!(
                    "connection {id} {client} -> {broker}: {skipped} {} bytes with no plausible frame boundary \
                     were skipped",
                    if side == self.client { "request" } else { "response" }
                ),
            });
        }
        self.framers[side] = Framer::default();
    }
}
