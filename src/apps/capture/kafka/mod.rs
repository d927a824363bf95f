//! Kafka on a reassembled TCP connection: which side is the broker (found from the
//! traffic), frames split by their size prefix, resynchronisation at the next plausible
//! frame when a stream was joined late or lost bytes, and responses paired with requests
//! through [`crate::session::conn::InFlight`].

use std::format;
use std::prelude::rust_2024::*;

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;

use super::reassembly::{Chunk, PIECE_OVERHEAD, Stream};
use super::{Cut, Event, Frame, Limits, RequestOf, Timestamp};
use crate::codec::frame::RequestHeaderView;
use crate::session::conn::InFlight;
use crate::{ApiKey, Direction};

/// What the connection engine needs from the reader.
pub struct Ctx<'a> {
    pub events: &'a mut VecDeque<Event>,
    pub next_index: &'a mut u64,
    pub limits: &'a Limits,
    pub ports: &'a [u16],
    pub brokers: &'a mut HashSet<SocketAddr>,
}

/// Bytes a plausible request header needs: size, key, version, correlation id and the
/// client id's length.
const REQUEST_HEAD: usize = 14;
/// Bytes a plausible response header needs: size and correlation id.
const RESPONSE_HEAD: usize = 8;
/// Bytes a frame too large to hold keeps (its headers).
const HEAD_KEEP: usize = 64;
/// Bytes searched for a frame boundary before the oldest are dropped.
const RESYNC_WINDOW: usize = 64 * 1024;

/// Whether `b` starts with a plausible request: a size that fits the limit, an API key
/// kwire knows at a version it knows, a non-negative correlation id and a client id
/// length within the frame (whose bytes, when present, are UTF-8). `None`: too few bytes
/// to say; `Some(None)`: not plausible; `Some(Some(id))`: plausible, with its correlation id.
fn plausible_request(b: &[u8], max_frame: usize) -> Option<Option<i32>> {
    let h = b.get(..REQUEST_HEAD)?;
    let size = i32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    let key = i16::from_be_bytes([h[4], h[5]]);
    let version = i16::from_be_bytes([h[6], h[7]]);
    let corr = i32::from_be_bytes([h[8], h[9], h[10], h[11]]);
    let client_len = i16::from_be_bytes([h[12], h[13]]);
    let ok = size >= 10
        && size as usize <= max_frame
        && ApiKey::from_i16(key).is_some_and(|k| k.request_versions().contains(version))
        && corr >= 0
        && client_len >= -1
        && i32::from(client_len) <= size - 10;
    if !ok {
        return Some(None);
    }
    if client_len > 0 {
        let end = REQUEST_HEAD + client_len as usize;
        if let Some(id) = b.get(REQUEST_HEAD..end)
            && (std::str::from_utf8(id).is_err() || id.iter().any(|&c| c < 0x20))
        {
            return Some(None);
        }
    }
    Some(Some(corr))
}

/// The first plausible request in `b` (only at 0 when `at_start`): its offset and
/// correlation id.
fn find_request(b: &[u8], at_start: bool, max_frame: usize) -> Option<(usize, i32)> {
    let last = if at_start { 0 } else { b.len().saturating_sub(REQUEST_HEAD) };
    (0..=last).find_map(|i| match plausible_request(&b[i..], max_frame) {
        Some(Some(corr)) => Some((i, corr)),
        _ => None,
    })
}

/// The first plausible response in `b` to one of `ids` (only at 0 when `at_start`).
fn find_response(b: &[u8], ids: &[i32], at_start: bool, max_frame: usize) -> Option<usize> {
    if ids.is_empty() || b.len() < RESPONSE_HEAD {
        return None;
    }
    let last = if at_start { 0 } else { b.len() - RESPONSE_HEAD };
    (0..=last).find(|&i| {
        let h = &b[i..i + RESPONSE_HEAD];
        let size = i32::from_be_bytes([h[0], h[1], h[2], h[3]]);
        let corr = i32::from_be_bytes([h[4], h[5], h[6], h[7]]);
        size >= 4 && size as usize <= max_frame && ids.contains(&corr)
    })
}

/// A chunk kept while the connection is not yet known to be Kafka.
enum Owned {
    Data(Vec<u8>),
    Gap(u64),
}

/// The first bytes of a connection, kept until they show which side is the broker.
#[derive(Default)]
struct Probe {
    chunks: Vec<(usize, Timestamp, Owned)>,
    bytes: usize,
    /// Each side's bytes up to its first gap.
    prefix: [Vec<u8>; 2],
    gapped: [bool; 2],
    /// Each side's first plausible request, once found.
    request: [Option<(usize, i32)>; 2],
    /// Positions of each side's prefix already searched, for a request and for the answer
    /// to the other side's request: each byte is searched once, not once a packet.
    request_scanned: [usize; 2],
    answer_scanned: [usize; 2],
}

impl Probe {
    /// The first plausible request of `side` (only at 0 when `at_start`).
    fn first_request(&mut self, side: usize, at_start: bool, max: usize) -> Option<(usize, i32)> {
        if self.request[side].is_none() {
            let b = &self.prefix[side];
            let from = self.request_scanned[side].min(b.len());
            if at_start {
                self.request[side] = find_request(b, true, max);
            } else if let Some((at, corr)) = find_request(&b[from..], false, max) {
                self.request[side] = Some((from + at, corr));
            } else {
                self.request_scanned[side] = from.max((b.len() + 1).saturating_sub(REQUEST_HEAD));
            }
        }
        self.request[side]
    }

    /// Whether `side` holds an answer to `corr` (only at 0 when `at_start`).
    fn answers(&mut self, side: usize, corr: i32, at_start: bool, max: usize) -> bool {
        let b = &self.prefix[side];
        if at_start {
            return find_response(b, &[corr], true, max).is_some();
        }
        let from = self.answer_scanned[side].min(b.len());
        if find_response(&b[from..], &[corr], false, max).is_some() {
            return true;
        }
        self.answer_scanned[side] = from.max((b.len() + 1).saturating_sub(RESPONSE_HEAD));
        false
    }
}

/// A request awaiting its answer.
struct Asked {
    index: u64,
    ts: Timestamp,
    size: usize,
    client_id: Option<String>,
}

/// One direction's frame splitter.
#[derive(Default)]
struct Framer {
    sync: bool,
    /// Synchronised at least once: a later loss of sync is a resynchronisation, not a
    /// late join.
    started: bool,
    /// In sync: the current frame's bytes (up to its first gap, at most `keep`); out of
    /// sync: the bytes searched for a frame boundary.
    buf: Vec<u8>,
    /// The current frame's length with its size prefix, once read.
    want: Option<u64>,
    /// Bytes of the current frame passed (gaps included).
    filled: u64,
    keep: usize,
    cut: Option<Cut>,
    /// Out of sync: bytes dropped so far.
    skipped: u64,
    /// Out of sync: positions of `buf` already searched for a request.
    scanned: usize,
}

impl Framer {
    fn reset(&mut self) -> Vec<u8> {
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

    fn memory(&self) -> usize {
        self.buf.capacity()
    }
}

enum Step {
    Used(usize),
    Restart(Vec<u8>),
}

struct Kafka {
    client: usize,
    framers: [Framer; 2],
    in_flight: InFlight<Asked>,
}

enum Role {
    Probe(Box<Probe>),
    Kafka(Box<Kafka>),
    Not,
}

/// A segment waiting (see [`Conn::segment`]).
struct Queued {
    /// Its place among the waiting segments of both sides.
    order: u64,
    ts: Timestamp,
    seq: u32,
    ack: Option<u32>,
    syn: bool,
    fin: bool,
    payload: Vec<u8>,
    missing: u32,
}

/// A TCP connection.
pub struct Conn {
    pub id: u64,
    /// `addrs[0]` sent the first packet seen.
    pub addrs: [SocketAddr; 2],
    pub streams: [Stream; 2],
    role: Role,
    pub last_ts: Timestamp,
    pub fin: [bool; 2],
    /// Each side's segments waiting for bytes of the other side they acknowledge.
    queued: [VecDeque<Queued>; 2],
    queued_bytes: [usize; 2],
    /// Segments that waited so far.
    arrivals: u64,
    /// A RST was seen.
    pub rst: bool,
    /// Found to carry Kafka.
    pub kafka: bool,
}

impl Conn {
    pub fn new(id: u64, from: SocketAddr, to: SocketAddr) -> Self {
        Conn {
            id,
            addrs: [from, to],
            streams: [Stream::default(), Stream::default()],
            role: Role::Probe(Box::default()),
            last_ts: Timestamp::default(),
            fin: [false; 2],
            queued: Default::default(),
            queued_bytes: [0; 2],
            arrivals: 0,
            rst: false,
            kafka: false,
        }
    }

    /// Bytes held for this connection.
    pub fn memory(&self) -> usize {
        let held = self.streams[0].buffered()
            + self.streams[1].buffered()
            + self.queued_bytes[0]
            + self.queued_bytes[1];
        held + match &self.role {
            Role::Probe(p) => p.bytes,
            Role::Kafka(k) => k.framers[0].memory() + k.framers[1].memory(),
            Role::Not => 0,
        }
    }

    /// Whether both directions are over: each has every byte up to its FIN in (with
    /// `rst`: nothing waits for earlier bytes).
    pub fn complete(&self, rst: bool) -> bool {
        if self.queued.iter().any(|q| !q.is_empty()) {
            false
        } else if rst {
            self.streams.iter().all(|s| s.buffered() == 0)
        } else {
            self.fin == [true, true] && self.streams.iter().all(Stream::complete)
        }
    }

    /// Takes a TCP segment from `side` (0: from `addrs[0]`).
    ///
    /// A segment whose acknowledgment covers bytes of the other side that the capture has
    /// not shown yet (a capture that reorders, or one that lost them) waits until those
    /// bytes come or are given up: so a response is not read before the request it
    /// answers. (Segments of its side that need nothing go on: in a capture that keeps
    /// causality, nothing the waiting one needs can wait for it.)
    #[allow(clippy::too_many_arguments)]
    pub fn segment(
        &mut self,
        side: usize,
        ts: Timestamp,
        seq: u32,
        ack: Option<u32>,
        syn: bool,
        fin: bool,
        payload: &[u8],
        missing: u32,
        ctx: &mut Ctx<'_>,
    ) {
        self.last_ts = ts;
        if matches!(self.role, Role::Not) {
            self.take(side, ts, seq, syn, fin, payload, missing, ctx);
            return;
        }
        let other = 1 - side;
        if let Some(ack) = ack
            && self.streams[other].acked(ack, ts.as_nanos())
        {
            // Bytes the peer acknowledged and the capture lacks are lost to it.
            self.release(other, ts, ctx);
        }
        let waits = ack.is_some_and(|a| self.streams[other].waits_for(a));
        if waits && (!payload.is_empty() || missing > 0 || syn || fin) {
            self.queued_bytes[side] += payload.len() + PIECE_OVERHEAD;
            self.arrivals += 1;
            self.queued[side].push_back(Queued {
                order: self.arrivals,
                ts,
                seq,
                ack,
                syn,
                fin,
                payload: payload.to_vec(),
                missing,
            });
            if self.queued_bytes[side] > ctx.limits.max_pending {
                // Too much waits: the missing bytes are given up.
                self.drain_queued(ctx);
            }
        } else {
            self.take(side, ts, seq, syn, fin, payload, missing, ctx);
        }
        self.pump(ctx);
    }

    /// Runs `f` on the stream of `side` with the chunks it passes on read as Kafka.
    fn with_out(
        &mut self,
        side: usize,
        ts: Timestamp,
        ctx: &mut Ctx<'_>,
        f: impl FnOnce(&mut Stream, &mut dyn FnMut(Chunk<'_>)),
    ) {
        let from_start = [self.streams[0].from_start, self.streams[1].from_start];
        let Conn { streams, role, addrs, id, .. } = self;
        let (addrs, id) = (*addrs, *id);
        f(&mut streams[side], &mut |chunk| role.chunk(side, ts, chunk, from_start, addrs, id, ctx));
        self.kafka |= matches!(self.role, Role::Kafka(_));
    }

    /// Gives up the bytes of `side` the other side acknowledged and the capture lacks (up
    /// to what the first segment waiting for them acknowledges), then reads what no longer
    /// waits.
    fn release(&mut self, side: usize, ts: Timestamp, ctx: &mut Ctx<'_>) {
        let stream = &self.streams[side];
        let upto = self.queued[1 - side]
            .iter()
            .filter_map(|q| q.ack)
            .find(|&a| stream.waits_for(a))
            .or_else(|| stream.unseen_ack());
        if let Some(a) = upto {
            self.with_out(side, ts, ctx, |stream, out| stream.give_up_to(a, out));
        }
        self.pump(ctx);
    }

    /// Reads every waiting segment, in the order of the capture, each after the bytes of
    /// the other side it acknowledges (gaps where the capture lacks them).
    fn drain_queued(&mut self, ctx: &mut Ctx<'_>) {
        while let Some((_, side)) = (0..2).filter_map(|s| self.queued[s].front().map(|q| (q.order, s))).min()
        {
            let Some(q) = self.queued[side].pop_front() else { break };
            self.queued_bytes[side] -= q.payload.len() + PIECE_OVERHEAD;
            if let Some(a) = q.ack {
                self.with_out(1 - side, q.ts, ctx, |stream, out| stream.give_up_to(a, out));
            }
            self.take(side, q.ts, q.seq, q.syn, q.fin, &q.payload, q.missing, ctx);
        }
    }

    /// Reads the segments that waited and need not any more, in their order.
    fn pump(&mut self, ctx: &mut Ctx<'_>) {
        loop {
            let mut moved = false;
            for side in 0..2 {
                let mut i = 0;
                while i < self.queued[side].len() {
                    let ready =
                        !self.queued[side][i].ack.is_some_and(|a| self.streams[1 - side].waits_for(a));
                    let Some(q) = ready.then(|| self.queued[side].remove(i)).flatten() else {
                        i += 1;
                        continue;
                    };
                    self.queued_bytes[side] -= q.payload.len() + PIECE_OVERHEAD;
                    self.take(side, q.ts, q.seq, q.syn, q.fin, &q.payload, q.missing, ctx);
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
    }

    /// Reads a segment of `side` into its stream.
    #[allow(clippy::too_many_arguments)]
    fn take(
        &mut self,
        side: usize,
        ts: Timestamp,
        seq: u32,
        syn: bool,
        fin: bool,
        payload: &[u8],
        missing: u32,
        ctx: &mut Ctx<'_>,
    ) {
        let max = ctx.limits.max_pending;
        let mut seq = seq;
        if syn {
            self.streams[side].segment(seq, true, &[], 0, max, &mut |_| {});
            seq = seq.wrapping_add(1);
        }
        if fin {
            let end = seq.wrapping_add(payload.len() as u32).wrapping_add(missing);
            self.streams[side].fin_at(end);
        }
        if matches!(self.role, Role::Not) {
            // Not Kafka: nothing of it is kept.
            if self.streams.iter().any(|s| s.buffered() > 0) || self.queued.iter().any(|q| !q.is_empty()) {
                self.streams = Default::default();
                self.queued = Default::default();
                self.queued_bytes = [0; 2];
            }
            return;
        }
        self.with_out(side, ts, ctx, |stream, out| stream.segment(seq, false, payload, missing, max, out));
    }

    /// The end of the connection or of the capture: everything held is passed on, a frame
    /// in progress is reported cut (`why`), and a connection not yet placed is placed with
    /// what it holds.
    pub fn finish(&mut self, why: Cut, ctx: &mut Ctx<'_>) {
        let from_start = [self.streams[0].from_start, self.streams[1].from_start];
        let ts = self.last_ts;
        // What waited for bytes not in the capture, in order, then what is left held.
        self.drain_queued(ctx);
        let Conn { streams, role, addrs, id, .. } = self;
        let (addrs, id) = (*addrs, *id);
        for (side, stream) in streams.iter_mut().enumerate() {
            stream.flush(&mut |chunk| role.chunk(side, ts, chunk, from_start, addrs, id, ctx));
        }
        if let Role::Probe(p) = role {
            let mut p = std::mem::take(p);
            *role = Role::Not;
            if let Some(client) = decide(&mut p, from_start, addrs, ctx, true) {
                *role = Role::Kafka(Box::new(Kafka::new(client, from_start, ctx)));
                replay(role, *p, from_start, addrs, id, ctx);
            }
        }
        if let Role::Kafka(k) = role {
            self.kafka = true;
            for side in 0..2 {
                k.end(side, ts, why, addrs, id, ctx);
            }
        }
        *role = Role::Not;
    }
}

impl Role {
    #[allow(clippy::too_many_arguments)]
    fn chunk(
        &mut self,
        side: usize,
        ts: Timestamp,
        chunk: Chunk<'_>,
        from_start: [bool; 2],
        addrs: [SocketAddr; 2],
        id: u64,
        ctx: &mut Ctx<'_>,
    ) {
        match self {
            Role::Not => {}
            Role::Kafka(k) => k.chunk(side, ts, chunk, addrs, id, ctx),
            Role::Probe(p) => {
                match chunk {
                    Chunk::Data(d) => {
                        // Held twice: in order, and in the side's prefix.
                        p.bytes += d.len();
                        if !p.gapped[side] {
                            p.prefix[side].extend_from_slice(d);
                            p.bytes += d.len();
                        }
                        p.chunks.push((side, ts, Owned::Data(d.to_vec())));
                    }
                    Chunk::Gap(n) => {
                        p.gapped[side] = true;
                        p.chunks.push((side, ts, Owned::Gap(n)));
                    }
                }
                let over = p.bytes > ctx.limits.max_probe;
                match decide(p, from_start, addrs, ctx, over) {
                    Some(client) => {
                        let p = std::mem::take(p);
                        *self = Role::Kafka(Box::new(Kafka::new(client, from_start, ctx)));
                        replay(self, *p, from_start, addrs, id, ctx);
                    }
                    None if over => *self = Role::Not,
                    None => {}
                }
            }
        }
    }
}

/// Which side is the client, if the bytes so far tell (`last`: no more will come, so a
/// request that decodes whole is enough).
fn decide(
    p: &mut Probe,
    from_start: [bool; 2],
    addrs: [SocketAddr; 2],
    ctx: &mut Ctx<'_>,
    last: bool,
) -> Option<usize> {
    if !ctx.ports.is_empty() {
        let on = [ctx.ports.contains(&addrs[0].port()), ctx.ports.contains(&addrs[1].port())];
        match on {
            [false, false] => return None,
            [true, false] => return Some(1),
            [false, true] => return Some(0),
            [true, true] => {}
        }
    }
    let known = [ctx.brokers.contains(&addrs[0]), ctx.brokers.contains(&addrs[1])];
    match known {
        [true, false] => return Some(1),
        [false, true] => return Some(0),
        _ => {}
    }
    let max = ctx.limits.max_frame;
    for client in 0..2 {
        let broker = 1 - client;
        let Some((at, corr)) = p.first_request(client, from_start[client], max) else { continue };
        if p.answers(broker, corr, from_start[broker], max) {
            remember(ctx, addrs[broker]);
            return Some(client);
        }
        if last {
            // No answer in the capture: a request that kwire decodes whole will do.
            let b = &p.prefix[client][at..];
            let size = i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
            if let Some(frame) = b.get(4..4 + size)
                && crate::codec::dispatch::parse_request_prefix(frame).is_ok()
            {
                return Some(client);
            }
        }
    }
    None
}

fn remember(ctx: &mut Ctx<'_>, broker: SocketAddr) {
    if ctx.brokers.len() < 4096 {
        ctx.brokers.insert(broker);
    }
}

fn replay(
    role: &mut Role,
    p: Probe,
    from_start: [bool; 2],
    addrs: [SocketAddr; 2],
    id: u64,
    ctx: &mut Ctx<'_>,
) {
    for (side, ts, owned) in p.chunks {
        let chunk = match &owned {
            Owned::Data(d) => Chunk::Data(d),
            Owned::Gap(n) => Chunk::Gap(*n),
        };
        role.chunk(side, ts, chunk, from_start, addrs, id, ctx);
    }
}

impl Kafka {
    fn new(client: usize, from_start: [bool; 2], ctx: &Ctx<'_>) -> Self {
        let mut framers = [Framer::default(), Framer::default()];
        for (side, f) in framers.iter_mut().enumerate() {
            f.sync = from_start[side];
            f.started = from_start[side];
        }
        Kafka { client, framers, in_flight: InFlight::with_capacity(ctx.limits.max_in_flight.max(1)) }
    }

    fn direction(&self, side: usize) -> Direction {
        if side == self.client { Direction::Request } else { Direction::Response }
    }

    fn ends(&self, addrs: [SocketAddr; 2]) -> (SocketAddr, SocketAddr) {
        (addrs[self.client], addrs[1 - self.client])
    }

    fn chunk(
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
                let size = i32::from_be_bytes([f.buf[0], f.buf[1], f.buf[2], f.buf[3]]);
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

    /// Reports the current frame of `side` (whole, or cut as its `cut` says).
    fn emit(&mut self, side: usize, ts: Timestamp, addrs: [SocketAddr; 2], id: u64, ctx: &mut Ctx<'_>) {
        let (client, broker) = self.ends(addrs);
        let direction = self.direction(side);
        let f = &mut self.framers[side];
        let cut = f.cut;
        let want = f.want;
        let bytes = f.reset();
        *ctx.next_index += 1;
        let index = *ctx.next_index;
        let size = want.map(|w| (w - 4) as u32);
        let be16 = |at: usize| bytes.get(at..at + 2).map(|b| i16::from_be_bytes([b[0], b[1]]));
        let be32 = |at: usize| bytes.get(at..at + 4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let mut frame = Frame {
            index,
            conn: id,
            client,
            broker,
            direction,
            ts,
            size,
            correlation_id: None,
            api_key: None,
            api_version: None,
            client_id: None,
            cut,
            request: None,
            bytes: Vec::new(),
        };
        match direction {
            Direction::Request => {
                frame.api_key = be16(4);
                frame.api_version = be16(6);
                frame.correlation_id = be32(8);
                frame.client_id = bytes
                    .get(4..)
                    .and_then(|b| RequestHeaderView::peek(b).ok())
                    .and_then(|p| p.client_id.map(str::to_string));
                if let (Some(key), Some(version), Some(corr)) =
                    (frame.api_key, frame.api_version, frame.correlation_id)
                    && let Some(api) = ApiKey::from_i16(key)
                {
                    let answered = cut.is_some()
                        || crate::session::conn::frame_expects_response(&bytes[4..]).unwrap_or(true);
                    if answered {
                        if self.in_flight.is_full()
                            && let Some(oldest) = self.in_flight.oldest().map(|p| p.correlation_id)
                        {
                            let _ = self.in_flight.complete(oldest);
                        }
                        let asked = Asked {
                            index,
                            ts,
                            size: bytes.len().max(want.unwrap_or(0) as usize),
                            client_id: frame.client_id.clone(),
                        };
                        let _ = self.in_flight.push(corr, api, version, asked);
                    }
                }
            }
            Direction::Response => {
                frame.correlation_id = be32(4);
                if let Some(corr) = frame.correlation_id
                    && self.in_flight.iter().any(|p| p.correlation_id == corr)
                {
                    // Kafka answers in order: requests older than the one answered got no
                    // answer in the capture.
                    while let Some(oldest) = self.in_flight.oldest().map(|p| p.correlation_id) {
                        let Ok(p) = self.in_flight.complete(oldest) else { break };
                        if oldest == corr {
                            frame.api_key = Some(p.api_key.to_i16());
                            frame.api_version = Some(p.api_version);
                            frame.client_id = p.payload.client_id.clone();
                            frame.request = Some(RequestOf {
                                index: p.payload.index,
                                ts: p.payload.ts,
                                size: p.payload.size,
                                client_id: p.payload.client_id,
                            });
                            break;
                        }
                    }
                }
            }
        }
        frame.bytes = bytes;
        ctx.events.push_back(Event::Frame(frame));
    }

    /// The end of `side`'s stream: a frame in progress is reported cut.
    fn end(
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
