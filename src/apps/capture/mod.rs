//! Kafka traffic from packet captures (feature `capture`): pcap and pcapng files or
//! streams (`tcpdump -w -`), read as a stream of [`Event`]s with bounded memory.
//!
//! - **Containers:** pcap (microsecond and nanosecond, either byte order) and pcapng
//!   (every section and interface, `if_tsresol` and `if_tsoffset`), through `pcap-parser`.
//! - **Links:** Ethernet (VLAN tags included), Linux cooked captures SLL and SLL2
//!   (`tcpdump -i any`), BSD and OpenBSD loopback, raw IPv4 and IPv6; headers through
//!   `etherparse`. IP fragments are not reassembled.
//! - **TCP:** each direction reassembled by sequence number, taking every byte the capture
//!   holds: segments in any order wait for the bytes before them (across sequence-number
//!   wrap); of duplicated and overlapping segments the first copy of each byte wins, equal
//!   or not; a retransmission fills its hole however late it comes; a segment that
//!   acknowledges bytes of the other side the capture has not shown yet waits for them, so
//!   a response is never read before its request; a FIN or RST seen before the last bytes
//!   waits for them. Bytes the capture lacks are a [`Event::Gap`] of known length, once they
//!   can no longer come: acknowledged by the peer twice over 200 ms of capture time (or in
//!   1024 packets), past [`Limits::max_pending`], or at the end. Bytes cut by the snaplen
//!   count as missing.
//! - **Kafka:** a connection is Kafka when one side sends a plausible request (a size
//!   within [`Limits::max_frame`], an API key and version kwire knows, a non-negative
//!   correlation id, a client id that fits) and the other answers with its correlation
//!   id; the answering endpoint is then known as a broker for the connections after it.
//!   [`Options::ports`] narrows the search (the side on one of those ports is the broker).
//!   A connection whose start is not in the capture ([`Event::JoinedLate`]), or a stream
//!   that lost the bytes of a frame's size ([`Event::Resynchronised`]), is read from the
//!   next plausible frame: a request as above, a response with the correlation id of a
//!   request awaiting its answer.
//! - **Frames** are reported whole, or [cut](Cut) when the capture lacks some of their
//!   bytes (never as if whole); responses are paired with their requests through
//!   [`crate::session::conn::InFlight`] (Kafka answers in order). A response whose request is not
//!   in the capture is reported [unpaired](Frame::is_unpaired).
//!
//! With the `explain` feature, `PairLines` writes one line per request/response pair, as
//! `kwire decode` prints a capture.
//!
//! Memory is bounded by [`Limits`]: the bytes held out of order per direction, the bytes
//! held while a connection is not yet known to be Kafka, the largest frame held whole, the
//! connections tracked and the bytes held in all.
//!
//! ```no_run
//! use kwire::capture::{Event, FrameView, Options, Reader};
//!
//! let file = std::fs::File::open("kafka.pcapng")?;
//! for event in Reader::new(std::io::BufReader::new(file), Options::default())? {
//!     match event? {
//!         Event::Frame(f) => {
//!             println!("{} {} -> {} {:?} {:?}", f.ts, f.client, f.broker, f.direction, f.api());
//!             if let Ok(FrameView::Request(r)) = f.view() {
//!                 println!("  correlation id {}: {:?}", r.header.correlation_id(), r.body);
//!             }
//!         }
//!         other => eprintln!("{other}"),
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::format;
use std::prelude::rust_2024::*;

mod container;
mod event;
mod kafka;
mod packet;
#[cfg(feature = "explain")]
mod pairs;
mod reassembly;

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::io::Read;
use std::net::SocketAddr;

pub use container::is_capture_magic;
pub use event::{Cut, Event, Frame, FrameView, RequestOf, Timestamp, ViewError};
#[cfg(feature = "explain")]
pub use pairs::{MAX_WAITING, PairLines};

use container::{Container, Step};
use kafka::{Conn, Ctx};
use packet::Skip;

/// Memory bounds of a [`Reader`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The largest frame held whole (and the largest size a frame boundary found by
    /// searching may declare); larger frames are reported [`Cut::TooLarge`] with their
    /// first bytes. Default 64 MiB.
    pub max_frame: usize,
    /// Bytes held per direction for segments ahead of a missing one (and for segments
    /// waiting for the other side's bytes they acknowledge), each segment counted with 64
    /// bytes of overhead; past it, the missing bytes are a gap. Default 4 MiB.
    pub max_pending: usize,
    /// Bytes held per connection before it is known to be Kafka; past it, it is not.
    /// Default 1 MiB.
    pub max_probe: usize,
    /// Connections tracked at once; past it, the least recently active is ended (its
    /// frames in progress reported cut). Default 65536.
    pub max_connections: usize,
    /// Requests awaiting their answer per connection (older ones are forgotten). Default
    /// 1024.
    pub max_in_flight: usize,
    /// The largest container record (a packet with its headers). Default 16 MiB.
    pub max_record: usize,
    /// Bytes held in all connections; past it, the connection holding most gives up
    /// what it holds (gaps, frames cut). Default 1 GiB.
    pub max_total: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame: 64 << 20,
            max_pending: 4 << 20,
            max_probe: 1 << 20,
            max_connections: 65_536,
            max_in_flight: 1024,
            max_record: 16 << 20,
            max_total: 1 << 30,
        }
    }
}

/// How a [`Reader`] looks for Kafka.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Broker ports: when not empty, only connections with one of these ports on one side
    /// are read, and that side is the broker (when both are, the traffic says which).
    pub ports: Vec<u16>,
    /// Memory bounds.
    pub limits: Limits,
}

impl Options {
    /// With these broker ports.
    pub fn ports(mut self, ports: &[u16]) -> Self {
        self.ports = ports.to_vec();
        self
    }

    /// With these limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// Why a capture cannot be read at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureError(String);

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CaptureError {}

/// Counts of what a [`Reader`] read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Packets in the capture.
    pub packets: u64,
    /// TCP segments among them.
    pub segments: u64,
    /// Packets skipped: malformed or cut headers, IP fragments, unknown link types.
    pub skipped: u64,
    /// TCP connections seen.
    pub connections: u64,
    /// Of them, Kafka.
    pub kafka_connections: u64,
}

type Key = (SocketAddr, SocketAddr);

fn key(a: SocketAddr, b: SocketAddr) -> Key {
    if a <= b { (a, b) } else { (b, a) }
}

/// Reads a capture from any [`Read`] as a stream of [`Event`]s (an iterator of
/// `Result<Event, CaptureError>`; an error ends it).
pub struct Reader<'r> {
    container: Container<'r>,
    state: State,
}

/// Everything a [`Reader`] holds but its container.
struct State {
    options: Options,
    conns: HashMap<Key, Conn>,
    next_conn: u64,
    next_index: u64,
    events: VecDeque<Event>,
    brokers: HashSet<SocketAddr>,
    total: usize,
    done: bool,
    stats: Stats,
    notes: HashMap<String, u64>,
    last_ts: Timestamp,
    /// Connections that ended, most recent last (at most [`CLOSED_KEPT`]).
    closed: HashSet<Key>,
    closed_order: VecDeque<Key>,
}

/// Ended connections remembered, so that their stragglers are dropped.
const CLOSED_KEPT: usize = 4096;

impl<'r> Reader<'r> {
    /// Opens a capture: its first bytes must be a pcap or pcapng header
    /// ([`is_capture_magic`]).
    pub fn new<R: Read + 'r>(input: R, options: Options) -> Result<Self, CaptureError> {
        let container = Container::new(input, &options.limits).map_err(|e| CaptureError(e.0))?;
        Ok(Reader {
            container,
            state: State {
                options,
                conns: HashMap::new(),
                next_conn: 0,
                next_index: 0,
                events: VecDeque::new(),
                brokers: HashSet::new(),
                total: 0,
                done: false,
                stats: Stats::default(),
                notes: HashMap::new(),
                last_ts: Timestamp::default(),
                closed: HashSet::new(),
                closed_order: VecDeque::new(),
            },
        })
    }

    /// Whether the container is pcapng (else pcap).
    pub fn is_pcapng(&self) -> bool {
        self.container.is_pcapng()
    }

    /// What was read so far.
    pub fn stats(&self) -> Stats {
        self.state.stats
    }

    /// Endpoints found to be brokers so far.
    pub fn brokers(&self) -> impl Iterator<Item = &SocketAddr> {
        self.state.brokers.iter()
    }

    /// The next event; `Ok(None)` at the end of the capture.
    pub fn next_event(&mut self) -> Result<Option<Event>, CaptureError> {
        loop {
            if let Some(e) = self.state.events.pop_front() {
                return Ok(Some(e));
            }
            if self.state.done {
                return Ok(None);
            }
            self.read_one();
        }
    }

    fn read_one(&mut self) {
        let Reader { container, state } = self;
        // The packet borrows the container's buffer: it is read inside the callback.
        let step = container.next(&mut |p| state.packet(p.ts, p.link, p.data));
        match step {
            Err(e) => {
                state.events.push_back(Event::FileCut { message: e.0 });
                state.finish(Cut::EndOfCapture);
            }
            Ok(Step::End) => state.finish(Cut::EndOfCapture),
            Ok(Step::Cut(message)) => {
                state.events.push_back(Event::FileCut { message });
                state.finish(Cut::EndOfCapture);
            }
            Ok(Step::Note(message)) => {
                let ts = state.last_ts;
                state.note_once(ts, message);
            }
            Ok(Step::Other | Step::Packet) => {}
        }
    }
}

impl State {
    fn note_once(&mut self, ts: Timestamp, what: String) {
        let n = self.notes.entry(what.clone()).or_insert(0);
        *n += 1;
        if *n == 1 && self.notes.len() < 1000 {
            self.events.push_back(Event::Note { ts, message: format!("{what} (noted once)") });
        }
    }

    fn packet(&mut self, ts: Timestamp, link: u32, data: &[u8]) {
        self.stats.packets += 1;
        self.last_ts = ts;
        let seg = match packet::segment(link, data) {
            Ok(s) => s,
            Err(Skip::NotTcp) => return,
            Err(Skip::UnknownLink(l)) => {
                self.stats.skipped += 1;
                self.note_once(ts, format!("packets of link type {l} are not read"));
                return;
            }
            Err(Skip::Fragment) => {
                self.stats.skipped += 1;
                self.note_once(
                    ts,
                    "IP fragments are not reassembled: fragmented packets were skipped".into(),
                );
                return;
            }
            Err(Skip::Malformed(why)) => {
                self.stats.skipped += 1;
                self.note_once(ts, format!("packets with malformed or cut headers were skipped: {why}"));
                return;
            }
        };
        self.stats.segments += 1;
        let k = key(seg.src, seg.dst);
        if !self.conns.contains_key(&k) {
            if !seg.syn && seg.payload.is_empty() && seg.missing == 0 {
                // A bare ACK or FIN of a connection not seen: nothing to read.
                return;
            }
            if self.closed.contains(&k) {
                if !seg.syn {
                    // A straggler of a connection already over (a retransmission the
                    // capture shows after its end): its bytes were read.
                    return;
                }
                self.closed.remove(&k);
            }
            if self.conns.len() >= self.options.limits.max_connections {
                self.evict();
            }
            self.next_conn += 1;
            self.stats.connections += 1;
            self.conns.insert(k, Conn::new(self.next_conn, seg.src, seg.dst));
        } else if seg.syn && {
            let c = &self.conns[&k];
            c.streams[usize::from(c.addrs[0] != seg.src)].is_new_syn(seg.seq)
        } {
            // A new connection on the same addresses and ports: the old one is over.
            if let Some(mut old) = self.conns.remove(&k) {
                self.total -= old.memory().min(self.total);
                self.end_conn(&mut old, Cut::Closed);
            }
            self.next_conn += 1;
            self.stats.connections += 1;
            self.conns.insert(k, Conn::new(self.next_conn, seg.src, seg.dst));
        }
        let Some(conn) = self.conns.get_mut(&k) else { return };
        let side = usize::from(conn.addrs[0] != seg.src);
        let before = conn.memory();
        let mut ctx = Ctx {
            events: &mut self.events,
            next_index: &mut self.next_index,
            limits: &self.options.limits,
            ports: &self.options.ports,
            brokers: &mut self.brokers,
        };
        conn.segment(side, ts, seg.seq, seg.ack, seg.syn, seg.fin, seg.payload, seg.missing, &mut ctx);
        conn.fin[side] |= seg.fin;
        conn.rst |= seg.rst;
        let after = conn.memory();
        self.total = (self.total + after).saturating_sub(before);
        if conn.complete(conn.rst) {
            // Over, with every byte in: a FIN or RST seen before the last segments (a
            // capture that reorders) waits for them.
            if let Some(mut c) = self.conns.remove(&k) {
                self.total -= c.memory().min(self.total);
                self.end_conn(&mut c, Cut::Closed);
                self.remember_closed(k);
            }
        } else if self.total > self.options.limits.max_total {
            self.shed(ts);
        }
    }

    /// Remembers a connection that ended (bounded), so that its stragglers are not taken
    /// for a new connection.
    fn remember_closed(&mut self, k: Key) {
        if self.closed.insert(k) {
            self.closed_order.push_back(k);
        }
        while self.closed_order.len() > CLOSED_KEPT {
            if let Some(old) = self.closed_order.pop_front() {
                self.closed.remove(&old);
            }
        }
    }

    fn end_conn(&mut self, conn: &mut Conn, why: Cut) {
        let mut ctx = Ctx {
            events: &mut self.events,
            next_index: &mut self.next_index,
            limits: &self.options.limits,
            ports: &self.options.ports,
            brokers: &mut self.brokers,
        };
        conn.finish(why, &mut ctx);
        if conn.kafka {
            self.stats.kafka_connections += 1;
        }
    }

    /// Ends the least recently active connection, to make room for a new one.
    fn evict(&mut self) {
        let oldest = self.conns.iter().min_by_key(|(_, c)| c.last_ts).map(|(k, _)| *k);
        if let Some(k) = oldest
            && let Some(mut c) = self.conns.remove(&k)
        {
            self.total -= c.memory().min(self.total);
            let ts = c.last_ts;
            self.note_once(
                ts,
                format!(
                    "more than {} connections at once: the least recently active were ended",
                    self.options.limits.max_connections
                ),
            );
            self.end_conn(&mut c, Cut::MemoryLimit);
        }
    }

    /// Over the total memory bound: the connection holding most gives it up.
    fn shed(&mut self, ts: Timestamp) {
        let biggest = self.conns.iter().max_by_key(|(_, c)| c.memory()).map(|(k, _)| *k);
        if let Some(k) = biggest
            && let Some(mut c) = self.conns.remove(&k)
        {
            self.total -= c.memory().min(self.total);
            self.note_once(
                ts,
                format!(
                    "more than {} bytes held in all: the connection holding most was ended",
                    self.options.limits.max_total
                ),
            );
            self.end_conn(&mut c, Cut::MemoryLimit);
        }
    }

    fn finish(&mut self, why: Cut) {
        self.done = true;
        let mut all: Vec<Conn> = self.conns.drain().map(|(_, c)| c).collect();
        all.sort_by_key(|c| c.id);
        for mut c in all {
            self.end_conn(&mut c, why);
        }
        self.total = 0;
    }
}

impl Iterator for Reader<'_> {
    type Item = Result<Event, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}
