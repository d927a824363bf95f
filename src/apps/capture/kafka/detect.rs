//! Broker detection: the first bytes of a connection are held until they show which side
//! is the client (a request answered by the other side, the ports given, a broker seen
//! before, or at the end a request that decodes whole).

use std::prelude::rust_2024::*;

use std::net::SocketAddr;

use super::super::Timestamp;
use super::Ctx;
use super::boundary::{REQUEST_HEAD, RESPONSE_HEAD, find_request, find_response};
use crate::codec::frame::size_prefix;

/// A chunk kept while the connection is not yet known to be Kafka.
pub(super) enum Owned {
    Data(Vec<u8>),
    Gap(u64),
}

/// The first bytes of a connection, kept until they show which side is the broker.
#[derive(Default)]
pub(super) struct Probe {
    pub(super) chunks: Vec<(usize, Timestamp, Owned)>,
    pub(super) bytes: usize,
    /// Each side's bytes up to its first gap.
    pub(super) prefix: [Vec<u8>; 2],
    pub(super) gapped: [bool; 2],
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

/// Which side is the client, if the bytes so far tell (`last`: no more will come, so a
/// request that decodes whole is enough).
pub(super) fn decide(
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
            if let Some(size) = size_prefix(b)
                && let Some(frame) = b.get(4..4 + size as usize)
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
