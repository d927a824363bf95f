//! The capture container: pcap (microsecond or nanosecond, either byte order) and pcapng
//! (sections, interfaces with their `if_tsresol` and `if_tsoffset`), read as a stream
//! through `pcap-parser` with a bounded buffer.

use std::format;
use std::prelude::rust_2024::*;

use std::io::Read;

use pcap_parser::pcapng::Block;
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{LegacyPcapReader, PcapBlockOwned, PcapError, PcapNGReader};

use super::{Limits, Timestamp};

/// The first bytes of a pcap file (either byte order, microsecond, nanosecond or the
/// "modified" format) or of a pcapng file (a section header block).
pub fn is_capture_magic(first: &[u8]) -> bool {
    matches!(
        first.get(..4),
        Some(
            [0xd4, 0xc3, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0xc3, 0xd4]
                | [0x4d, 0x3c, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0x3c, 0x4d]
                | [0x34, 0xcd, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0xcd, 0x34]
                | [0x0a, 0x0d, 0x0d, 0x0a]
        )
    )
}

/// One captured packet, borrowed from the reader's buffer.
pub struct Packet<'a> {
    pub ts: Timestamp,
    /// The link-layer header type (LINKTYPE_* values of tcpdump.org).
    pub link: u32,
    pub data: &'a [u8],
}

/// What reading the next record gave.
pub enum Step {
    /// A packet, handed to the callback.
    Packet,
    /// A record that is not a packet (headers, statistics, names): nothing to do.
    Other,
    /// A note on something skipped (a packet of an unknown interface).
    Note(String),
    /// The end of the capture.
    End,
    /// The capture ends in the middle of a record.
    Cut(String),
}

/// Why the container cannot be read on.
#[derive(Debug)]
pub struct ContainerError(pub String);

struct Interface {
    link: u32,
    /// Timestamp units per second.
    units: u64,
    offset: i64,
    snaplen: u32,
}

enum Kind {
    Pcap { nanos: bool, link: u32 },
    PcapNg { interfaces: Vec<Interface>, last_ts: Timestamp },
}

/// The streaming reader of a capture container.
pub struct Container<'r> {
    inner: Box<dyn PcapReaderIterator + 'r>,
    kind: Kind,
    capacity: usize,
    max_record: usize,
}

fn describe<I>(e: &PcapError<I>) -> String {
    match e {
        PcapError::Eof => "the input is empty".into(),
        PcapError::BufferTooSmall => "a record is larger than the reader's buffer".into(),
        PcapError::UnexpectedEof | PcapError::Incomplete(_) => {
            "the input ends inside its first header".into()
        }
        PcapError::ReadError => "cannot read the input".into(),
        PcapError::HeaderNotRecognized => "not a pcap or pcapng file".into(),
        PcapError::NomError(_, k) | PcapError::OwnedNomError(_, k) => format!("malformed ({k:?})"),
    }
}

impl<'r> Container<'r> {
    /// Opens a capture: the input's first bytes say pcap or pcapng.
    pub fn new<R: Read + 'r>(mut input: R, limits: &Limits) -> Result<Self, ContainerError> {
        // The readers of pcap-parser read their header in one `read`: the header is read
        // here, whole, and handed to them first.
        let mut head = Vec::new();
        fill(&mut input, &mut head, 4)?;
        if !is_capture_magic(&head) {
            return Err(ContainerError("not a pcap or pcapng capture (unknown magic number)".into()));
        }
        let pcapng = head[..4] == [0x0a, 0x0d, 0x0d, 0x0a];
        if pcapng {
            fill(&mut input, &mut head, 12)?;
            let le = head[8..12] == [0x4d, 0x3c, 0x2b, 0x1a];
            let len = [head[4], head[5], head[6], head[7]];
            let len = if le { u32::from_le_bytes(len) } else { u32::from_be_bytes(len) } as usize;
            if len > limits.max_record {
                return Err(ContainerError(format!(
                    "the pcapng section header claims {len} bytes: not a capture"
                )));
            }
            fill(&mut input, &mut head, len)?;
        } else {
            fill(&mut input, &mut head, 24)?;
        }
        let chained = std::io::Cursor::new(head).chain(input);
        let capacity = 256 * 1024;
        let what = if pcapng { "pcapng" } else { "pcap" };
        let bad = |e: PcapError<&'static [u8]>| {
            ContainerError(format!("cannot read the {what} header: {}", describe(&e)))
        };
        let (inner, kind): (Box<dyn PcapReaderIterator + 'r>, Kind) = if pcapng {
            let r = PcapNGReader::new(capacity, chained).map_err(bad)?;
            (Box::new(r), Kind::PcapNg { interfaces: Vec::new(), last_ts: Timestamp::default() })
        } else {
            let r = LegacyPcapReader::new(capacity, chained).map_err(bad)?;
            (Box::new(r), Kind::Pcap { nanos: false, link: 1 })
        };
        Ok(Container { inner, kind, capacity, max_record: limits.max_record })
    }

    /// Whether the container is pcapng.
    pub fn is_pcapng(&self) -> bool {
        matches!(self.kind, Kind::PcapNg { .. })
    }

    /// Reads the next record; a packet goes to `on_packet`.
    pub fn next(&mut self, on_packet: &mut dyn FnMut(&Packet<'_>)) -> Result<Step, ContainerError> {
        loop {
            let consumed_before = self.inner.consumed();
            match self.inner.next() {
                Ok((offset, block)) => {
                    let step = handle(&mut self.kind, block, on_packet);
                    self.inner.consume(offset);
                    return Ok(step);
                }
                Err(PcapError::Eof) => return Ok(Step::End),
                Err(PcapError::Incomplete(_)) => {
                    self.inner.refill().map_err(|_| ContainerError("cannot read the capture".into()))?;
                }
                Err(PcapError::UnexpectedEof) => {
                    let left = self.inner.data().len();
                    return Ok(Step::Cut(format!(
                        "the capture ends inside a record: its last {left} bytes (from byte {consumed_before}) \
                         are not a whole record"
                    )));
                }
                Err(PcapError::BufferTooSmall) => {
                    if self.capacity >= self.max_record {
                        return Err(ContainerError(format!(
                            "a record at byte {consumed_before} is larger than {} bytes (the limit): \
                             the capture is corrupt",
                            self.max_record
                        )));
                    }
                    self.capacity = (self.capacity * 2).min(self.max_record);
                    if !self.inner.grow(self.capacity) {
                        return Err(ContainerError("cannot grow the capture buffer".into()));
                    }
                    self.inner.refill().map_err(|_| ContainerError("cannot read the capture".into()))?;
                }
                Err(e) => {
                    return Err(ContainerError(format!(
                        "the capture is corrupt at byte {consumed_before}: {}",
                        describe(&e)
                    )));
                }
            }
        }
    }
}

/// Timestamp units per second of an `if_tsresol` value: 10^n, or 2^n with the high bit
/// set; an impossible one is taken for microseconds (pcap-parser 0.17's `ts_resolution`
/// refuses every power of 2).
fn resolution(tsresol: u8) -> u64 {
    let n = u32::from(tsresol & 0x7f);
    let units = if tsresol & 0x80 == 0 { 10u64.checked_pow(n) } else { 1u64.checked_shl(n) };
    units.filter(|&u| u > 0).unwrap_or(1_000_000)
}

/// Reads until `head` holds `n` bytes, or the input ends.
fn fill(input: &mut dyn Read, head: &mut Vec<u8>, n: usize) -> Result<(), ContainerError> {
    if head.len() >= n {
        return Ok(());
    }
    let need = (n - head.len()) as u64;
    Read::take(&mut *input, need)
        .read_to_end(head)
        .map_err(|e| ContainerError(format!("cannot read the capture: {e}")))?;
    if head.len() < n {
        return Err(ContainerError(format!("the capture ends inside its header ({} bytes)", head.len())));
    }
    Ok(())
}

fn ts_from_units(value: u64, units: u64, offset: i64) -> Timestamp {
    let units = units.max(1);
    let secs = value / units;
    let frac = u128::from(value % units);
    let nanos = (frac * 1_000_000_000 / u128::from(units)) as u32;
    let digits = if units <= 1_000 {
        3
    } else if units <= 1_000_000 {
        6
    } else {
        9
    };
    Timestamp { secs: i64::try_from(secs).unwrap_or(i64::MAX).saturating_add(offset), nanos, digits }
}

fn handle(kind: &mut Kind, block: PcapBlockOwned<'_>, on_packet: &mut dyn FnMut(&Packet<'_>)) -> Step {
    match (kind, block) {
        (Kind::Pcap { nanos, link }, PcapBlockOwned::LegacyHeader(h)) => {
            *nanos = h.is_nanosecond_precision();
            // The upper bits of the link field hold the FCS length and flags.
            *link = (h.network.0 as u32) & 0x0fff_ffff;
            Step::Other
        }
        (Kind::Pcap { nanos, link }, PcapBlockOwned::Legacy(b)) => {
            let units = if *nanos { 1_000_000_000 } else { 1_000_000 };
            let frac = u64::from(b.ts_usec).min(units - 1);
            let ts = ts_from_units(u64::from(b.ts_sec) * units + frac, units, 0);
            on_packet(&Packet { ts, link: *link, data: b.data });
            Step::Packet
        }
        (Kind::PcapNg { interfaces, .. }, PcapBlockOwned::NG(Block::SectionHeader(_))) => {
            interfaces.clear();
            Step::Other
        }
        (Kind::PcapNg { interfaces, .. }, PcapBlockOwned::NG(Block::InterfaceDescription(idb))) => {
            if interfaces.len() >= 4096 {
                return Step::Note("more than 4096 interfaces in one section: the rest are ignored".into());
            }
            interfaces.push(Interface {
                link: idb.linktype.0 as u32,
                units: resolution(idb.if_tsresol),
                offset: idb.ts_offset(),
                snaplen: idb.snaplen,
            });
            Step::Other
        }
        (Kind::PcapNg { interfaces, last_ts }, PcapBlockOwned::NG(Block::EnhancedPacket(epb))) => {
            let Some(i) = interfaces.get(epb.if_id as usize) else {
                return Step::Note(format!(
                    "a packet of interface {} that no interface block describes",
                    epb.if_id
                ));
            };
            let value = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
            let ts = ts_from_units(value, i.units, i.offset);
            *last_ts = ts;
            let n = (epb.caplen as usize).min(epb.data.len());
            on_packet(&Packet { ts, link: i.link, data: &epb.data[..n] });
            Step::Packet
        }
        (Kind::PcapNg { interfaces, last_ts }, PcapBlockOwned::NG(Block::SimplePacket(spb))) => {
            let Some(i) = interfaces.first() else {
                return Step::Note("a simple packet block before any interface block".into());
            };
            let mut n = (spb.origlen as usize).min(spb.data.len());
            if i.snaplen > 0 {
                n = n.min(i.snaplen as usize);
            }
            on_packet(&Packet { ts: *last_ts, link: i.link, data: &spb.data[..n] });
            Step::Packet
        }
        _ => Step::Other,
    }
}
