//! Kafka on a reassembled TCP connection: which side is the broker (found from the
//! traffic), frames split by their size prefix, resynchronisation at the next plausible
//! frame when a stream was joined late or lost bytes, and responses paired with requests
//! through [`crate::session::conn::InFlight`].
//!
//! | File | Concept |
//! |---|---|
//! | `conn.rs` | the TCP connection: segments read in causal order |
//! | `detect.rs` | which side is the broker |
//! | `boundary.rs` | where a request or a response could start |
//! | `framer.rs` | frames split by their size prefix; resynchronisation |
//! | `pairing.rs` | frames reported, responses paired with requests |

use std::prelude::rust_2024::*;

use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;

use super::reassembly::Chunk;
use super::{Event, Limits, Timestamp};
use crate::Direction;
use crate::session::conn::InFlight;

mod boundary;
mod conn;
mod detect;
mod framer;
mod pairing;

pub use conn::Conn;
use detect::{Owned, Probe, decide};
use framer::Framer;
use pairing::Asked;

/// What the connection engine needs from the reader.
pub struct Ctx<'a> {
    pub events: &'a mut VecDeque<Event>,
    pub next_index: &'a mut u64,
    pub limits: &'a Limits,
    pub ports: &'a [u16],
    pub brokers: &'a mut HashSet<SocketAddr>,
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
}
