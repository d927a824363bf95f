//! The TCP connection: both directions' streams, with segments read in causal order (a
//! segment waits for the bytes of the other side it acknowledges), passed on to the
//! connection's [`super::Role`].

use std::prelude::rust_2024::*;

use std::collections::VecDeque;
use std::net::SocketAddr;

use super::super::reassembly::{Chunk, PIECE_OVERHEAD, Stream};
use super::super::{Cut, Timestamp};
use super::detect::decide;
use super::{Ctx, Kafka, Role, replay};

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
