//! `kwire::capture` on captures built here: the real clients' frames of tests/vectors/clients
//! carried over TCP in pcap and pcapng files written by hand (every link type, IPv4 and
//! IPv6, both timestamp precisions), then hostile ones: a small snaplen, a capture joined
//! mid-stream, reordered, duplicated and overlapping segments, lost segments, a file cut
//! inside a record, and every header byte mutated. Needs nothing but the toolchain.

#![cfg(feature = "capture")]

use std::net::SocketAddr;
use std::path::Path;

use kwire::Direction;
use kwire::capture::{Cut, Event, Frame, Limits, Options, Reader};

// ---- the vectors ----

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// A request frame and its response frame, with their size prefixes.
type Pair = (Vec<u8>, Vec<u8>);

/// Request/response pairs of the real clients, their correlation ids renumbered 1, 2, ...
fn pairs() -> Vec<Pair> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/clients");
    let mut names: Vec<String> = std::fs::read_dir(dir.join("requests"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut req = hex(&std::fs::read_to_string(dir.join("requests").join(name)).unwrap());
            let mut resp = hex(&std::fs::read_to_string(dir.join("responses").join(name)).unwrap());
            let corr = (i as i32 + 1).to_be_bytes();
            req[8..12].copy_from_slice(&corr);
            resp[4..8].copy_from_slice(&corr);
            (req, resp)
        })
        .collect()
}

// ---- a tiny capture writer ----

#[derive(Clone, Copy, PartialEq)]
enum Link {
    Ethernet,
    Sll,
    Sll2,
    Null,
    Raw,
}

impl Link {
    fn code(self) -> u32 {
        match self {
            Link::Ethernet => 1,
            Link::Sll => 113,
            Link::Sll2 => 276,
            Link::Null => 0,
            Link::Raw => 101,
        }
    }
}

const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;

/// A packet: link header, IP header, TCP header, payload.
fn packet(
    link: Link,
    src: SocketAddr,
    dst: SocketAddr,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut tcp = Vec::new();
    tcp.extend_from_slice(&src.port().to_be_bytes());
    tcp.extend_from_slice(&dst.port().to_be_bytes());
    tcp.extend_from_slice(&seq.to_be_bytes());
    tcp.extend_from_slice(&ack.to_be_bytes());
    tcp.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    tcp.extend_from_slice(payload);
    let (ip, ether) = match (src, dst) {
        (SocketAddr::V4(s), SocketAddr::V4(d)) => {
            let mut ip = vec![0x45, 0];
            ip.extend_from_slice(&((20 + tcp.len()) as u16).to_be_bytes());
            ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
            ip.extend_from_slice(&s.ip().octets());
            ip.extend_from_slice(&d.ip().octets());
            (ip, 0x0800u16)
        }
        (SocketAddr::V6(s), SocketAddr::V6(d)) => {
            let mut ip = vec![0x60, 0, 0, 0];
            ip.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
            ip.extend_from_slice(&[6, 64]);
            ip.extend_from_slice(&s.ip().octets());
            ip.extend_from_slice(&d.ip().octets());
            (ip, 0x86dd)
        }
        _ => unreachable!(),
    };
    let mut out = match link {
        Link::Ethernet => {
            let mut h = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
            h.extend_from_slice(&ether.to_be_bytes());
            h
        }
        Link::Sll => {
            let mut h = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 2, 0, 0];
            h.extend_from_slice(&ether.to_be_bytes());
            h
        }
        Link::Sll2 => {
            let mut h = ether.to_be_bytes().to_vec();
            h.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 2, 0, 0, 0, 0, 2, 0, 0]);
            h
        }
        Link::Null => if ether == 0x0800 { 2u32 } else { 30 }.to_le_bytes().to_vec(),
        Link::Raw => Vec::new(),
    };
    out.extend_from_slice(&ip);
    out.extend_from_slice(&tcp);
    out
}

/// A captured packet: time in nanoseconds and bytes.
struct Pkt {
    ns: u64,
    data: Vec<u8>,
}

/// A TCP conversation: a handshake, then each pair's request and response in segments of
/// at most `mss` bytes.
struct Conv {
    link: Link,
    client: SocketAddr,
    broker: SocketAddr,
    cseq: u32,
    bseq: u32,
    ns: u64,
    pkts: Vec<Pkt>,
}

impl Conv {
    fn new(link: Link, client: &str, broker: &str) -> Self {
        Conv {
            link,
            client: client.parse().unwrap(),
            broker: broker.parse().unwrap(),
            cseq: 1000,
            bseq: u32::MAX - 50, // the broker's sequence numbers wrap
            ns: 1_764_730_000_123_456_789,
            pkts: Vec::new(),
        }
    }

    fn push(&mut self, from_client: bool, flags: u8, payload: &[u8]) {
        let (s, d, seq, ack) = if from_client {
            (self.client, self.broker, &mut self.cseq, self.bseq)
        } else {
            (self.broker, self.client, &mut self.bseq, self.cseq)
        };
        let ack = if flags & ACK != 0 { ack } else { 0 };
        let data = packet(self.link, s, d, *seq, ack, flags, payload);
        *seq = seq.wrapping_add(payload.len() as u32 + u32::from(flags & (SYN | FIN) != 0));
        self.ns += 1_000;
        self.pkts.push(Pkt { ns: self.ns, data });
    }

    fn handshake(&mut self) {
        self.push(true, SYN, &[]);
        self.push(false, SYN | ACK, &[]);
        self.push(true, ACK, &[]);
    }

    fn send(&mut self, from_client: bool, bytes: &[u8], mss: usize) {
        for c in bytes.chunks(mss) {
            self.push(from_client, PSH | ACK, c);
        }
    }

    fn talk(&mut self, pairs: &[Pair], mss: usize) {
        for (req, resp) in pairs {
            self.send(true, req, mss);
            self.send(false, resp, mss);
        }
    }

    fn close(&mut self) {
        self.push(true, FIN | ACK, &[]);
        self.push(false, FIN | ACK, &[]);
    }
}

fn pcap(pkts: &[Pkt], link: Link, nanos: bool, snaplen: u32) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&if nanos { 0xa1b2_3c4d_u32 } else { 0xa1b2_c3d4 }.to_le_bytes());
    out.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&snaplen.to_le_bytes());
    out.extend_from_slice(&link.code().to_le_bytes());
    for p in pkts {
        let frac = if nanos { p.ns % 1_000_000_000 } else { p.ns % 1_000_000_000 / 1000 };
        let cap = p.data.len().min(snaplen as usize);
        out.extend_from_slice(&((p.ns / 1_000_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&(frac as u32).to_le_bytes());
        out.extend_from_slice(&(cap as u32).to_le_bytes());
        out.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
        out.extend_from_slice(&p.data[..cap]);
    }
    out
}

fn block(out: &mut Vec<u8>, kind: u32, body: &[u8]) {
    let len = 12 + body.len().next_multiple_of(4);
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(body);
    out.resize(out.len() + body.len().next_multiple_of(4) - body.len(), 0);
    out.extend_from_slice(&(len as u32).to_le_bytes());
}

/// A pcapng file; `tsresol` is the interface's `if_tsresol` (6: microseconds when absent).
fn pcapng(pkts: &[Pkt], link: Link, tsresol: Option<u8>, snaplen: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut shb = 0x1a2b_3c4d_u32.to_le_bytes().to_vec();
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    block(&mut out, 0x0a0d_0d0a, &shb);
    let mut idb = (link.code() as u16).to_le_bytes().to_vec();
    idb.extend_from_slice(&[0, 0]);
    idb.extend_from_slice(&snaplen.to_le_bytes());
    if let Some(r) = tsresol {
        idb.extend_from_slice(&[9, 0, 1, 0, r, 0, 0, 0]);
        idb.extend_from_slice(&[0, 0, 0, 0]);
    }
    block(&mut out, 1, &idb);
    let units: u64 = match tsresol {
        None => 1_000_000,
        Some(r) if r & 0x80 == 0 => 10u64.pow(u32::from(r)),
        Some(r) => 1 << (r & 0x7f),
    };
    for p in pkts {
        let ts = (u128::from(p.ns) * u128::from(units) / 1_000_000_000) as u64;
        let cap = p.data.len().min(snaplen as usize);
        let mut epb = 0u32.to_le_bytes().to_vec();
        epb.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(ts as u32).to_le_bytes());
        epb.extend_from_slice(&(cap as u32).to_le_bytes());
        epb.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&p.data[..cap]);
        block(&mut out, 6, &epb);
    }
    out
}

// ---- reading ----

fn read_with(bytes: &[u8], options: Options) -> Vec<Event> {
    let reader = Reader::new(bytes, options).expect("a capture");
    let mut out = Vec::new();
    for e in reader {
        out.push(e.expect("no error after the header"));
        assert!(out.len() < 1_000_000, "runaway events");
    }
    out
}

fn read(bytes: &[u8]) -> Vec<Event> {
    read_with(bytes, Options::default())
}

fn frames(events: &[Event]) -> Vec<&Frame> {
    events.iter().filter_map(|e| if let Event::Frame(f) = e { Some(f) } else { None }).collect()
}

/// Every pair is there, whole, in order, paired, with the right addresses.
fn assert_all_pairs(events: &[Event], pairs: &[Pair], client: &str, broker: &str) {
    let fs = frames(events);
    assert_eq!(fs.len(), pairs.len() * 2, "{events:#?}");
    for (i, (req, resp)) in pairs.iter().enumerate() {
        let (q, r) = (fs[2 * i], fs[2 * i + 1]);
        assert_eq!(q.direction, Direction::Request);
        assert_eq!(r.direction, Direction::Response);
        assert_eq!((q.client.to_string(), q.broker.to_string()), (client.to_string(), broker.to_string()));
        assert!(q.is_whole() && r.is_whole(), "{q:?} {r:?}");
        assert_eq!(&q.bytes, req, "request {i}");
        assert_eq!(&r.bytes, resp, "response {i}");
        assert_eq!(q.correlation_id, Some(i as i32 + 1));
        assert_eq!(r.correlation_id, Some(i as i32 + 1));
        assert_eq!(r.api_key, q.api_key);
        assert_eq!(r.api_version, q.api_version);
        assert_eq!(r.request.as_ref().map(|x| x.index), Some(q.index));
        assert!(r.ts >= q.ts);
    }
}

fn full_conv(link: Link, client: &str, broker: &str, mss: usize) -> (Conv, Vec<Pair>) {
    let pairs = pairs();
    let mut c = Conv::new(link, client, broker);
    c.handshake();
    c.talk(&pairs, mss);
    c.close();
    (c, pairs)
}

#[test]
fn pcap_microseconds_ethernet_ipv4() {
    let (c, pairs) = full_conv(Link::Ethernet, "127.0.0.1:50000", "127.0.0.1:9092", 1460);
    let events = read(&pcap(&c.pkts, Link::Ethernet, false, 262_144));
    assert_all_pairs(&events, &pairs, "127.0.0.1:50000", "127.0.0.1:9092");
    let f = frames(&events)[0];
    assert_eq!(f.ts.digits, 6);
    assert_eq!(f.ts.to_string().len(), "2025-12-03T02:46:40.123457Z".len());
    assert_eq!(f.ts.nanos % 1000, 0);
    assert!(events.iter().all(|e| matches!(e, Event::Frame(_))), "{events:#?}");
}

#[test]
fn pcap_nanoseconds_small_segments() {
    let (c, pairs) = full_conv(Link::Ethernet, "10.0.0.1:40000", "10.0.0.2:19092", 7);
    let events = read(&pcap(&c.pkts, Link::Ethernet, true, 65_535));
    assert_all_pairs(&events, &pairs, "10.0.0.1:40000", "10.0.0.2:19092");
    let f = frames(&events)[0];
    assert_eq!(f.ts.digits, 9);
    // The first request ends in the 4th packet after the handshake's 3 at 7 bytes a segment.
    let first_len = pairs[0].0.len();
    let last_pkt = 3 + first_len.div_ceil(7) - 1;
    assert_eq!(f.ts.as_nanos(), i128::from(c.pkts[last_pkt].ns));
}

#[test]
fn pcapng_if_tsresol() {
    for (resol, digits) in [(None, 6), (Some(9), 9), (Some(3), 3), (Some(0x80 | 20), 9)] {
        let (c, pairs) = full_conv(Link::Ethernet, "127.0.0.1:50001", "127.0.0.1:9092", 1000);
        let events = read(&pcapng(&c.pkts, Link::Ethernet, resol, 262_144));
        assert_all_pairs(&events, &pairs, "127.0.0.1:50001", "127.0.0.1:9092");
        let f = frames(&events)[0];
        assert_eq!(f.ts.digits, digits, "{resol:?}");
        assert_eq!(f.ts.secs, 1_764_730_000, "{resol:?}");
    }
}

#[test]
fn every_link_type_ipv4_and_ipv6() {
    for link in [Link::Ethernet, Link::Sll, Link::Sll2, Link::Null, Link::Raw] {
        for (client, broker) in [("192.168.1.5:51000", "192.168.1.9:9092"), ("[::1]:51000", "[::1]:9092")] {
            let (c, pairs) = full_conv(link, client, broker, 1400);
            let events = read(&pcapng(&c.pkts, link, Some(9), 262_144));
            assert_all_pairs(&events, &pairs, client, broker);
            let events = read(&pcap(&c.pkts, link, true, 262_144));
            assert_all_pairs(&events, &pairs, client, broker);
        }
    }
}

#[test]
fn ports_narrow_the_search_and_two_connections_interleave() {
    let pairs = pairs();
    let mut a = Conv::new(Link::Ethernet, "127.0.0.1:50010", "127.0.0.1:9092");
    let mut b = Conv::new(Link::Ethernet, "127.0.0.1:50011", "127.0.0.1:9093");
    a.handshake();
    b.handshake();
    for p in pairs.chunks(1) {
        a.talk(p, 500);
        b.talk(p, 300);
    }
    let mut pkts: Vec<Pkt> = a.pkts.into_iter().chain(b.pkts).collect();
    pkts.sort_by_key(|p| p.ns);
    let bytes = pcap(&pkts, Link::Ethernet, false, 65_535);
    let all = read(&bytes);
    assert_eq!(frames(&all).len(), pairs.len() * 4);
    let only = read_with(&bytes, Options::default().ports(&[9093]));
    let fs = frames(&only);
    assert_eq!(fs.len(), pairs.len() * 2);
    assert!(fs.iter().all(|f| f.broker.port() == 9093 && f.is_whole()));
    // A port no connection uses: nothing.
    assert!(frames(&read_with(&bytes, Options::default().ports(&[1234]))).is_empty());
}

// ---- hostile captures ----

/// Every frame reported is a whole vector frame or a cut one that is a prefix of one, and
/// every whole response is paired with the request it answers.
fn assert_honest(events: &[Event], pairs: &[Pair]) -> (usize, usize) {
    let (mut whole, mut cut) = (0, 0);
    for f in frames(events) {
        let i = f.correlation_id.map(|c| c as usize - 1);
        let expected = match (f.direction, i.and_then(|i| pairs.get(i))) {
            (Direction::Request, Some(p)) => Some(&p.0),
            (Direction::Response, Some(p)) => Some(&p.1),
            _ => None,
        };
        if f.is_whole() {
            whole += 1;
            assert_eq!(Some(&f.bytes), expected, "{f:?}");
            if f.direction == Direction::Response
                && let Some(r) = &f.request
            {
                assert!(r.index < f.index);
            }
        } else {
            cut += 1;
            if let Some(e) = expected {
                assert!(e.starts_with(&f.bytes), "cut frame is not a prefix of its frame: {f:?}");
            }
        }
    }
    (whole, cut)
}

#[test]
fn small_snaplen_cuts_frames_and_decodes_none_as_whole() {
    let (c, pairs) = full_conv(Link::Ethernet, "127.0.0.1:50002", "127.0.0.1:9092", 1460);
    for snaplen in [54, 60, 80, 100, 200, 300] {
        for file in
            [pcap(&c.pkts, Link::Ethernet, false, snaplen), pcapng(&c.pkts, Link::Ethernet, Some(6), snaplen)]
        {
            let events = read(&file);
            let (whole, cut) = assert_honest(&events, &pairs);
            // Frames that fit in the snaplen are whole; no frame is invented.
            let fit =
                pairs.iter().flat_map(|(a, b)| [a, b]).filter(|f| f.len() + 54 <= snaplen as usize).count();
            assert!(whole >= fit, "snaplen {snaplen}: {whole} whole, {fit} fit");
            assert!(whole + cut <= pairs.len() * 2, "snaplen {snaplen}: {whole} + {cut}");
            // Below 54 + 14 bytes no packet holds a request header: nothing is Kafka.
            if (80..200).contains(&snaplen) {
                assert!(cut > 0);
                assert!(events.iter().any(|e| matches!(e, Event::Gap { .. })));
                assert!(frames(&events).iter().all(|f| f.cut != Some(Cut::TooLarge)));
            }
        }
    }
}

#[test]
fn joined_mid_stream_resynchronises() {
    let (c, pairs) = full_conv(Link::Ethernet, "127.0.0.1:50003", "127.0.0.1:9092", 10);
    // Start after the handshake and the first 3 segments (in the middle of the first request).
    for start in [5, 6, 20, 41] {
        let file = pcap(&c.pkts[start..], Link::Ethernet, false, 65_535);
        let events = read(&file);
        let (whole, _) = assert_honest(&events, &pairs);
        assert!(events.iter().any(|e| matches!(e, Event::JoinedLate { .. })), "start {start}");
        assert!(whole >= pairs.len() * 2 - 4 - start / 2, "start {start}: {whole} whole");
        // The last frames are all there and paired.
        let fs = frames(&events);
        let last = fs.last().unwrap();
        assert_eq!(last.bytes, pairs.last().unwrap().1);
        assert!(last.request.is_some());
    }
}

#[test]
fn reordered_duplicated_and_overlapping_segments() {
    let (mut c, pairs) = full_conv(Link::Ethernet, "127.0.0.1:50004", "127.0.0.1:9092", 16);
    // Swap neighbours, duplicate every fifth packet, and add segments that overlap two.
    let mut pkts: Vec<Pkt> = Vec::new();
    let body: Vec<Pkt> = c.pkts.drain(3..).collect();
    pkts.append(&mut c.pkts);
    let mut i = 0;
    while i < body.len() {
        if i + 1 < body.len() && i % 3 == 0 {
            pkts.push(Pkt { ns: body[i + 1].ns, data: body[i + 1].data.clone() });
            pkts.push(Pkt { ns: body[i].ns, data: body[i].data.clone() });
            i += 2;
        } else {
            pkts.push(Pkt { ns: body[i].ns, data: body[i].data.clone() });
            if i % 5 == 0 {
                pkts.push(Pkt { ns: body[i].ns + 1, data: body[i].data.clone() });
            }
            i += 1;
        }
    }
    // An overlapping retransmission: the first request again, in one segment from the start.
    let mut conv = Conv::new(Link::Ethernet, "127.0.0.1:50004", "127.0.0.1:9092");
    conv.cseq = 1001;
    conv.send(true, &pairs[0].0[..20], 30);
    pkts.insert(8, Pkt { ns: pkts[8].ns, data: conv.pkts[0].data.clone() });
    let events = read(&pcap(&pkts, Link::Ethernet, false, 65_535));
    assert_all_pairs(&events, &pairs, "127.0.0.1:50004", "127.0.0.1:9092");
}

#[test]
fn lost_segments_are_gaps_and_cut_frames() {
    let (c, pairs) = full_conv(Link::Ethernet, "127.0.0.1:50005", "127.0.0.1:9092", 20);
    for drop in [4, 5, 10, 30, 77] {
        eprintln!("DEBUG drop {drop}");
        let pkts: Vec<&Pkt> = c.pkts.iter().enumerate().filter(|(i, _)| *i != drop).map(|(_, p)| p).collect();
        let pkts: Vec<Pkt> = pkts.iter().map(|p| Pkt { ns: p.ns, data: p.data.clone() }).collect();
        let events = read(&pcap(&pkts, Link::Ethernet, false, 65_535));
        let (whole, cut) = assert_honest(&events, &pairs);
        assert!(events.iter().any(|e| matches!(e, Event::Gap { .. })), "drop {drop}");
        // A frame partly lost is cut; a frame lost whole leaves the next read from the next
        // plausible frame.
        let resync = events.iter().any(|e| matches!(e, Event::Resynchronised { .. }));
        assert!(cut >= 1 || resync, "drop {drop}");
        assert!(whole >= pairs.len() * 2 - 3, "drop {drop}: {whole}");
    }
}

#[test]
fn file_cut_inside_a_record() {
    let (c, pairs) = full_conv(Link::Ethernet, "127.0.0.1:50006", "127.0.0.1:9092", 500);
    for file in
        [pcap(&c.pkts, Link::Ethernet, false, 65_535), pcapng(&c.pkts, Link::Ethernet, Some(9), 65_535)]
    {
        for end in (40..file.len()).step_by(97) {
            let events = read(&file[..end]);
            assert_honest(&events, &pairs);
            let cut_file = events.iter().any(|e| matches!(e, Event::FileCut { .. }));
            let fs = frames(&events);
            if let Some(last) = fs.last()
                && !last.is_whole()
            {
                assert!(matches!(last.cut, Some(Cut::EndOfCapture | Cut::Gap)), "{last:?}");
            }
            let _ = cut_file;
        }
        // Cut inside the last record: the file is reported cut.
        let events = read(&file[..file.len() - 3]);
        assert!(events.iter().any(|e| matches!(e, Event::FileCut { .. })), "{events:#?}");
    }
    // A header alone, or less.
    assert!(Reader::new(&[0xd4u8, 0xc3, 0xb2][..], Options::default()).is_err());
    assert!(Reader::new(&b"not a capture"[..], Options::default()).is_err());
    assert!(frames(&read(&pcap(&[], Link::Ethernet, false, 100))).is_empty());
}

#[test]
fn every_header_byte_mutated() {
    let pairs: Vec<_> = pairs().into_iter().take(2).collect();
    let mut c = Conv::new(Link::Ethernet, "127.0.0.1:50007", "127.0.0.1:9092");
    c.handshake();
    c.talk(&pairs, 60);
    c.close();
    for file in [
        pcap(&c.pkts[..6], Link::Ethernet, false, 65_535),
        pcapng(&c.pkts[..6], Link::Ethernet, Some(9), 65_535),
    ] {
        for i in 0..file.len() {
            for v in [0x00, 0x7f, 0x80, 0xff, file[i].wrapping_add(1), file[i].wrapping_sub(1)] {
                let mut m = file.clone();
                m[i] = v;
                if let Ok(r) = Reader::new(&m[..], Options::default()) {
                    let n = r.take(10_000).count();
                    assert!(n < 10_000);
                }
            }
        }
    }
    for link in [Link::Sll, Link::Sll2, Link::Null, Link::Raw] {
        let mut c = Conv::new(link, "[::1]:50008", "[::1]:9092");
        c.handshake();
        c.talk(&pairs[..1], 60);
        let file = pcap(&c.pkts[..5], link, true, 65_535);
        for i in 24..file.len() {
            for v in [0x00, 0xff, file[i].wrapping_add(1)] {
                let mut m = file.clone();
                m[i] = v;
                let _ = read(&m);
            }
        }
    }
}

#[test]
fn bogus_kafka_sizes_resynchronise() {
    let pairs = pairs();
    let mut c = Conv::new(Link::Ethernet, "127.0.0.1:50009", "127.0.0.1:9092");
    c.handshake();
    c.talk(&pairs[..3], 1000);
    // Junk with a negative size, then the rest.
    c.send(true, &[0xff, 0xff, 0xff, 0xf0, 1, 2, 3], 1000);
    c.talk(&pairs[3..6], 1000);
    c.close();
    let events = read(&pcap(&c.pkts, Link::Ethernet, false, 65_535));
    let (whole, cut) = assert_honest(&events, &pairs);
    assert_eq!((whole, cut), (12, 0), "{events:#?}");
    assert!(events.iter().any(|e| matches!(e, Event::Resynchronised { skipped: 7, .. })), "{events:#?}");
}

#[test]
fn limits_bound_frames_and_held_bytes() {
    let (c, pairs) = full_conv(Link::Ethernet, "127.0.0.1:50012", "127.0.0.1:9092", 100);
    let mut limits = Limits::default();
    limits.max_frame = 40;
    let events = read_with(&pcap(&c.pkts, Link::Ethernet, false, 65_535), Options::default().limits(limits));
    let (_, cut) = assert_honest(&events, &pairs);
    assert!(cut > 0, "{events:#?}");
    for f in frames(&events) {
        assert!(f.bytes.len() <= 64 || f.size <= Some(40), "{}", f.bytes.len());
        if f.size > Some(40) {
            assert_eq!(f.cut, Some(Cut::TooLarge));
        }
    }
}

/// A long stream joined late that is not Kafka: each byte is searched once, not once a
/// packet (this took minutes when the search restarted at every packet), and nothing is
/// reported.
#[test]
fn a_long_stream_that_is_not_kafka() {
    let mut c = Conv::new(Link::Ethernet, "127.0.0.1:50014", "127.0.0.1:443");
    let mut x: u32 = 0x1234_5678;
    let junk: Vec<u8> = (0..2_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    c.send(true, &junk[..1_000_000], 100);
    c.send(false, &junk[1_000_000..], 100);
    let started = std::time::Instant::now();
    let events = read(&pcap(&c.pkts, Link::Ethernet, false, 65_535));
    assert!(frames(&events).is_empty(), "{:?}", &events[..events.len().min(3)]);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn unpaired_responses() {
    let pairs = pairs();
    let mut c = Conv::new(Link::Ethernet, "127.0.0.1:50013", "127.0.0.1:9092");
    c.handshake();
    c.talk(&pairs[..4], 1000);
    // Drop the second request: its response is unpaired, the others pair.
    let pkts: Vec<Pkt> = c.pkts.into_iter().enumerate().filter(|(i, _)| *i != 5).map(|(_, p)| p).collect();
    let events = read(&pcap(&pkts, Link::Ethernet, false, 65_535));
    let fs = frames(&events);
    let unpaired: Vec<_> = fs.iter().filter(|f| f.is_unpaired()).collect();
    assert_eq!(unpaired.len(), 1, "{events:#?}");
    assert_eq!(unpaired[0].correlation_id, Some(2));
    assert_eq!(unpaired[0].api_key, None);
    assert_eq!(fs.iter().filter(|f| f.direction == Direction::Response && !f.is_unpaired()).count(), 3);
}

// ---- `kwire decode` of a capture (the command is built with `cli`) ----

#[cfg(feature = "cli")]
mod common;

#[cfg(feature = "cli")]
mod cli {
    use super::common::kwire_cmd::{fails, ok, run, text};
    use super::*;

    fn capture() -> (Vec<u8>, Vec<Pair>) {
        let (c, pairs) = full_conv(Link::Sll2, "[::1]:50100", "[::1]:9092", 700);
        (pcapng(&c.pkts, Link::Sll2, Some(9), 262_144), pairs)
    }

    /// A frame of `body` at `version`, with its size prefix.
    fn framed(body: &impl kwire::AnyBody, version: i16, corr: i32, request: bool) -> Vec<u8> {
        let mut buf = vec![0u8; 4096];
        let n = if request {
            kwire::dispatch::encode_request(body, version, corr, Some("by-id"), &mut buf).unwrap()
        } else {
            kwire::dispatch::encode_response(body, version, corr, &mut buf).unwrap()
        };
        buf.truncate(n);
        buf
    }

    /// Fetch v13 names topics by id only: the pair line names them from an earlier Metadata
    /// answer of the capture, and shows the id of a topic no answer named.
    #[test]
    fn topics_named_by_id_are_named_from_the_captures_answers() {
        use kwire::messages::fetch::{FetchPartition, FetchTopic};
        use kwire::messages::metadata::MetadataResponseTopic;
        use kwire::messages::{FetchRequest, FetchResponse, MetadataRequest, MetadataResponse};
        use kwire::types::Uuid;
        let (orders, unknown) = (Uuid([7; 16]), Uuid([9; 16]));
        let topics =
            [MetadataResponseTopic { name: Some("orders".into()), topic_id: orders, ..Default::default() }];
        let metadata = MetadataResponse { topics: (&topics[..]).into(), ..Default::default() };
        let partitions = [FetchPartition { partition: 0, ..Default::default() }];
        let fetch_topics: Vec<FetchTopic<'_>> = [orders, unknown]
            .iter()
            .map(|&topic_id| FetchTopic {
                topic_id,
                partitions: (&partitions[..]).into(),
                ..Default::default()
            })
            .collect();
        let fetch = FetchRequest { replica_id: -1, topics: (&fetch_topics[..]).into(), ..Default::default() };
        let pairs = vec![
            (framed(&MetadataRequest::default(), 12, 1, true), framed(&metadata, 12, 1, false)),
            (framed(&fetch, 13, 2, true), framed(&FetchResponse::default(), 13, 2, false)),
        ];
        let mut c = Conv::new(Link::Ethernet, "10.0.0.1:40000", "10.0.0.2:9092");
        c.handshake();
        c.talk(&pairs, 1000);
        c.close();
        let out = ok(&["decode", "-"], &pcap(&c.pkts, Link::Ethernet, false, 65535));
        let fetch_line = out.lines().find(|l| l.contains(" Fetch v13 ")).unwrap_or_else(|| panic!("{out}"));
        let id = kwire::reflect::json::uuid_string(&unknown);
        assert!(fetch_line.contains(&format!(" topics=orders,id:{id} ")), "{fetch_line}");
    }

    #[test]
    fn lines_one_per_pair_from_stdin_and_a_file() {
        let (file, pairs) = capture();
        let out = ok(&["decode", "-"], &file);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), pairs.len(), "{out}");
        assert!(
            lines[0].contains(
                "conn=1 [::1]:50100 -> [::1]:9092 kafkajs-probe ApiVersions v1 corr=1 req=27B resp="
            ),
            "{}",
            lines[0]
        );
        assert!(lines.iter().all(|l| l.contains("ms") && !l.contains("malformed")), "{out}");
        assert!(out.contains("errors=UNSUPPORTED_VERSION"), "{out}");
        let dir = std::env::temp_dir().join(format!("kwire-capture-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.pcapng");
        std::fs::write(&path, &file).unwrap();
        assert_eq!(ok(&["decode", path.to_str().unwrap()], b""), out);
        // --record saves every pair as vectors the command decodes.
        let rec = dir.join("rec");
        ok(
            &["decode", "--record", rec.to_str().unwrap(), "--record-limit", "100", path.to_str().unwrap()],
            b"",
        );
        let saved = std::fs::read_dir(rec.join("requests")).unwrap().count();
        assert_eq!(saved, pairs.len());
        assert_eq!(std::fs::read_dir(rec.join("responses")).unwrap().count(), pairs.len());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn json_one_object_per_frame_with_the_frame_alone() {
        let (file, pairs) = capture();
        let out = ok(&["decode", "--format", "json", "-"], &file);
        let objs: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(objs.len(), pairs.len() * 2);
        for (i, o) in objs.iter().enumerate() {
            let (req, resp) = &pairs[i / 2];
            let (dir, bytes) = if i % 2 == 0 { ("request", req) } else { ("response", resp) };
            assert_eq!(o["direction"], dir);
            assert_eq!(o["client"], "[::1]:50100");
            assert_eq!(o["broker"], "[::1]:9092");
            assert_eq!(o["correlationId"], i / 2 + 1);
            assert_eq!(o["apiKey"], i64::from(i16::from_be_bytes([req[4], req[5]])));
            let name = kwire::ApiKey::from_i16(i16::from_be_bytes([req[4], req[5]])).unwrap().name();
            assert_eq!(o["apiName"], name);
            // The frame document is what `kwire decode --format json` gives for the frame alone.
            let hexed: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let alone = if i % 2 == 0 {
                ok(&["decode", "--format", "json", "--compact", "-"], hexed.as_bytes())
            } else {
                let req_hex: String = req.iter().map(|b| format!("{b:02x}")).collect();
                let dir = std::env::temp_dir().join(format!("kwire-capture-json-{}-{i}", std::process::id()));
                std::fs::write(&dir, req_hex).unwrap();
                let out = ok(
                    &["decode", "--format", "json", "--compact", "--request", dir.to_str().unwrap(), "-"],
                    hexed.as_bytes(),
                );
                std::fs::remove_file(&dir).unwrap();
                out
            };
            let alone: serde_json::Value = serde_json::from_str(alone.trim()).unwrap();
            assert_eq!(o["frame"], alone, "frame {i}");
        }
    }

    #[test]
    fn frame_tree_cut_frames_and_unpaired() {
        let (file, _) = capture();
        let tree = ok(&["decode", "--frame", "2", "-"], &file);
        assert!(tree.contains("ApiVersions") && tree.contains("ErrorCode"), "{tree}");
        let (_, err) = fails(&["decode", "--frame", "9999", "-"], &file);
        assert!(err.contains("no frame 9999"), "{err}");
        // A small snaplen: cut frames are said to be cut, and never decoded.
        let (c, _) = full_conv(Link::Ethernet, "127.0.0.1:50101", "127.0.0.1:9092", 1460);
        let small = pcap(&c.pkts, Link::Ethernet, false, 100);
        let out = ok(&["decode", "--format", "json", "-"], &small);
        let objs: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(objs.iter().any(|o| o["cut"].is_string() && o["frame"].is_null()), "{out}");
        assert!(objs.iter().all(|o| o["cut"].is_null() != o["frame"].is_null() || o["apiKey"].is_null()));
        let lines = ok(&["decode", "-"], &small);
        assert!(lines.contains(" cut ("), "{lines}");
        // Hex input still works, and capture options are refused for it.
        let out = run(&["decode", "--port", "9092", "-"], b"0000000e0012000400000000000000010100");
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    }

    #[test]
    fn a_cut_file_and_a_bad_one() {
        let (file, _) = capture();
        let out = run(&["decode", "-"], &file[..file.len() - 10]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains("ends inside a record"), "{}", text(&out.stderr));
        let out = run(&["decode", "-"], &file[..30]);
        assert!(!text(&out.stderr).contains("panicked"));
    }
}

// ---- a real capture, reshuffled ----
//
// tests/vectors/captures/kafka-python-serve.pcap: kafka-python against `kwire serve`,
// recorded by tcpdump on the loopback (see the README there). Its segments are cut
// smaller, their sequence numbers moved to wrap, then reordered, duplicated, overlapped
// (equal bytes, and conflicting bytes after the first copy) and retransmitted after a
// hole, by a seeded generator: every frame of the original must come out byte for byte.

/// A TCP packet of the recorded capture (Ethernet, IPv4), its fields for rewriting.
#[derive(Clone, Debug)]
struct Seg {
    ns: u64,
    src: SocketAddr,
    dst: SocketAddr,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: Vec<u8>,
}

impl Seg {
    fn pkt(&self) -> Pkt {
        Pkt {
            ns: self.ns,
            data: packet(Link::Ethernet, self.src, self.dst, self.seq, self.ack, self.flags, &self.payload),
        }
    }
}

fn recorded() -> (Vec<u8>, Vec<Seg>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/captures/kafka-python-serve.pcap");
    let file = std::fs::read(path).unwrap();
    assert_eq!(file[..4], 0xa1b2_c3d4_u32.to_le_bytes(), "a microsecond pcap, little-endian");
    assert_eq!(u32::from_le_bytes(file[20..24].try_into().unwrap()), 1, "Ethernet");
    let le = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap());
    let be16 = |b: &[u8]| u16::from_be_bytes(b.try_into().unwrap());
    let be32 = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap());
    let mut segs = Vec::new();
    let mut at = 24;
    while at < file.len() {
        let (secs, micros, caplen) =
            (le(&file[at..at + 4]), le(&file[at + 4..at + 8]), le(&file[at + 8..at + 12]));
        let p = &file[at + 16..at + 16 + caplen as usize];
        at += 16 + caplen as usize;
        assert_eq!(be16(&p[12..14]), 0x0800);
        let ip = &p[14..];
        let ihl = usize::from(ip[0] & 0xf) * 4;
        let total = usize::from(be16(&ip[2..4]));
        let tcp = &ip[ihl..total];
        let off = usize::from(tcp[12] >> 4) * 4;
        let addr = |a: &[u8], port: u16| SocketAddr::from(([a[0], a[1], a[2], a[3]], port));
        segs.push(Seg {
            ns: u64::from(secs) * 1_000_000_000 + u64::from(micros) * 1000,
            src: addr(&ip[12..16], be16(&tcp[0..2])),
            dst: addr(&ip[16..20], be16(&tcp[2..4])),
            seq: be32(&tcp[4..8]),
            ack: be32(&tcp[8..12]),
            flags: tcp[13],
            payload: tcp[off..].to_vec(),
        });
    }
    (file, segs)
}

/// A seeded generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// Whether `a` is after `b` in sequence space.
fn seq_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// The recorded segments, disordered as `seed` says.
fn disorder(segs: &[Seg], seed: u64, jitter_ns: u64) -> Vec<Seg> {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    // Sequence numbers moved so that each direction wraps within its first bytes.
    let mut shift: std::collections::HashMap<(SocketAddr, SocketAddr), u32> =
        std::collections::HashMap::new();
    for s in segs.iter().filter(|s| s.flags & SYN != 0) {
        let isn = u32::MAX - rng.below(400) as u32;
        shift.insert((s.src, s.dst), isn.wrapping_sub(s.seq));
    }
    // Cut into pieces of 1 to 60 bytes.
    let mut out: Vec<Seg> = Vec::new();
    for s in segs {
        let mut s = s.clone();
        s.seq = s.seq.wrapping_add(shift[&(s.src, s.dst)]);
        if s.flags & ACK != 0 {
            s.ack = s.ack.wrapping_add(shift[&(s.dst, s.src)]);
        }
        if s.payload.is_empty() {
            out.push(s);
            continue;
        }
        let mut from = 0;
        while from < s.payload.len() {
            let n = (1 + rng.below(60) as usize).min(s.payload.len() - from);
            let last = from + n == s.payload.len();
            out.push(Seg {
                seq: s.seq.wrapping_add(from as u32),
                flags: if last { s.flags } else { s.flags & !FIN },
                payload: s.payload[from..from + n].to_vec(),
                ..s.clone()
            });
            from += n;
        }
    }
    // Retransmitted after a hole: a segment the capture first lacks (lost before the
    // capture point) comes later, just before the peer sends anything that needs it, and
    // the peer's bare acknowledgments in between stop at the hole.
    let mut i = 0;
    while i < out.len() {
        if out[i].payload.is_empty() || rng.below(12) != 0 {
            i += 1;
            continue;
        }
        let lost = out[i].clone();
        let mut j = i + 1;
        while j < out.len() {
            let o = &out[j];
            let peer = o.src == lost.dst && o.dst == lost.src;
            let needs = peer && (!o.payload.is_empty() || o.flags & FIN != 0) && seq_after(o.ack, lost.seq);
            let later_own = o.src == lost.src && o.dst == lost.dst && o.flags & FIN != 0;
            if needs || later_own || j - i > 30 {
                break;
            }
            if peer && seq_after(o.ack, lost.seq) {
                out[j].ack = lost.seq;
            }
            j += 1;
        }
        let moved = out.remove(i);
        out.insert(j - 1, moved);
        i = j;
    }
    // Duplicates (some far later), overlapping segments with equal bytes, and conflicting
    // copies that come after the first.
    let mut extra: Vec<(usize, Seg)> = Vec::new();
    for (i, s) in out.iter().enumerate() {
        if s.payload.is_empty() {
            continue;
        }
        match rng.below(10) {
            0 => extra.push((i + rng.below(6) as usize, s.clone())),
            1 => extra.push((i + 10 + rng.below(200) as usize, s.clone())),
            2 => {
                // Overlapping: this segment and the next of its direction in one.
                if let Some(next) = out[i + 1..].iter().find(|n| {
                    n.src == s.src && n.dst == s.dst && n.seq == s.seq.wrapping_add(s.payload.len() as u32)
                }) && !next.payload.is_empty()
                {
                    let mut both = s.clone();
                    both.payload.extend_from_slice(&next.payload);
                    both.flags = next.flags;
                    extra.push((i + rng.below(8) as usize, both));
                }
            }
            3 => {
                let mut bad = s.clone();
                for b in &mut bad.payload {
                    *b ^= 0x5a;
                }
                extra.push((i + 1 + rng.below(40) as usize, bad));
            }
            _ => {}
        }
    }
    // Reordered: each packet's place moves by up to `jitter_ns` of its time (a capture that
    // reorders within a window), SYNs kept in place before their connection's packets.
    let mut keyed: Vec<(u64, usize, Seg)> = out
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let j = if s.flags & SYN != 0 { 0 } else { 1 + rng.below(jitter_ns) };
            (s.ns + j, i * 4, s.clone())
        })
        .collect();
    keyed.sort_by_key(|k| (k.0, k.1));
    let mut shuffled: Vec<(usize, Seg)> = keyed.into_iter().map(|(_, i, s)| (i, s)).collect();
    // The extra copies go after the original's new place (the first copy is seen first).
    for (after, s) in extra {
        let orig =
            out.iter().position(|o| o.src == s.src && o.seq == s.seq && o.payload.len() <= s.payload.len());
        let base = orig.and_then(|o| shuffled.iter().position(|(i, _)| *i == o * 4)).unwrap_or(0);
        let firsts = shuffled
            .iter()
            .enumerate()
            .filter(|(_, (_, o))| {
                o.src == s.src
                    && seq_after(o.seq.wrapping_add(o.payload.len() as u32), s.seq)
                    && !seq_after(o.seq, s.seq.wrapping_add(s.payload.len() as u32 - 1))
            })
            .map(|(at, _)| at)
            .max()
            .unwrap_or(base);
        let at = (firsts + 1 + after % 7).min(shuffled.len());
        shuffled.insert(at, (usize::MAX, s));
    }
    shuffled.into_iter().map(|(_, s)| s).collect()
}

/// Each connection's frames, in order: direction, correlation id, bytes, whole, paired.
type Conns = std::collections::BTreeMap<u64, Vec<(Direction, Option<i32>, Vec<u8>, bool, bool)>>;

fn frame_list(events: &[Event]) -> Conns {
    let mut conns = Conns::new();
    for f in frames(events) {
        let paired = f.request.is_some();
        conns.entry(f.conn).or_default().push((
            f.direction,
            f.correlation_id,
            f.bytes.clone(),
            f.is_whole(),
            paired,
        ));
    }
    conns
}

#[test]
fn a_real_capture_reshuffled_gives_every_frame() {
    let (file, segs) = recorded();
    let original = read(&file);
    let want = frame_list(&original);
    assert_eq!(want.values().map(Vec::len).sum::<usize>(), 56, "the recorded capture's frames");
    assert!(
        want.values().flatten().all(|f| f.3 && (f.0 == Direction::Request || f.4)),
        "all whole and paired"
    );
    assert!(original.iter().all(|e| matches!(e, Event::Frame(_))), "{original:#?}");
    // The segments as they are, written back: the same frames.
    let same: Vec<Pkt> = segs.iter().map(Seg::pkt).collect();
    assert_eq!(frame_list(&read(&pcap(&same, Link::Ethernet, false, 262_144))), want);
    for seed in 1..=12u64 {
        // Reordering windows from 50 µs to 20 ms of capture time.
        let jitter = [50_000, 1_000_000, 20_000_000][seed as usize % 3];
        let disordered = disorder(&segs, seed, jitter);
        assert!(disordered.len() > 2 * segs.len(), "{} packets", disordered.len());
        let pkts: Vec<Pkt> = disordered.iter().map(Seg::pkt).collect();
        for bytes in
            [pcap(&pkts, Link::Ethernet, true, 262_144), pcapng(&pkts, Link::Ethernet, Some(9), 262_144)]
        {
            if let Ok(dir) = std::env::var("DUMP") {
                std::fs::write(format!("{dir}/seed{seed}.pcap"), &bytes).unwrap();
            }
            let events = read(&bytes);
            let notes: Vec<&Event> = events.iter().filter(|e| !matches!(e, Event::Frame(_))).collect();
            assert!(notes.is_empty(), "seed {seed}: {notes:#?}");
            let got = frame_list(&events);
            assert_eq!(got.len(), want.len(), "seed {seed}: connections");
            for (conn, w) in &want {
                assert_eq!(got[conn].len(), w.len(), "seed {seed}: frames of connection {conn}");
                for (i, (g, w)) in got[conn].iter().zip(w).enumerate() {
                    assert_eq!(g, w, "seed {seed}: connection {conn} frame {i}");
                }
            }
        }
    }
}

#[test]
fn frames_as_views() {
    use kwire::ApiKey;
    use kwire::capture::{FrameView, ViewError};
    use kwire::messages::{RequestBodyView, ResponseBodyView};
    let (file, _) = recorded();
    let events = read(&file);
    let fs = frames(&events);
    let mut produce = 0;
    for f in &fs {
        assert_eq!(f.payload(), &f.bytes[4..]);
        assert_eq!(f.api().map(ApiKey::to_i16), f.api_key);
        let view = f.view().unwrap_or_else(|e| panic!("frame {}: {e}", f.index));
        match (f.direction, view) {
            (Direction::Request, FrameView::Request(r)) => {
                assert_eq!(Some(r.header.correlation_id()), f.correlation_id);
                assert_eq!(Some(r.header.api_key()), f.api_key);
                if let RequestBodyView::Produce(_) = r.body {
                    produce += 1;
                }
            }
            (Direction::Response, FrameView::Response(r)) => {
                assert_eq!(Some(r.header.correlation_id()), f.correlation_id);
                if f.api() == Some(ApiKey::Produce) {
                    assert!(matches!(r.body, ResponseBodyView::Produce(_)));
                }
            }
            (d, v) => panic!("frame {}: {d:?} as {v:?}", f.index),
        }
    }
    assert_eq!(produce, 4);
    // A cut frame and an unpaired response say why they have no view.
    let (c, _) = full_conv(Link::Ethernet, "127.0.0.1:50200", "127.0.0.1:9092", 1460);
    let small = read(&pcap(&c.pkts, Link::Ethernet, false, 100));
    let cut = frames(&small).into_iter().find(|f| !f.is_whole()).expect("a cut frame");
    assert!(matches!(cut.view(), Err(ViewError::Cut(_))));
    let pairs = pairs();
    let mut c = Conv::new(Link::Ethernet, "127.0.0.1:50201", "127.0.0.1:9092");
    c.handshake();
    c.talk(&pairs[..2], 1000);
    let pkts: Vec<Pkt> = c.pkts.into_iter().enumerate().filter(|(i, _)| *i != 5).map(|(_, p)| p).collect();
    let events = read(&pcap(&pkts, Link::Ethernet, false, 65_535));
    let unpaired = frames(&events).into_iter().find(|f| f.is_unpaired()).expect("an unpaired response");
    assert_eq!(unpaired.api(), None);
    assert_eq!(unpaired.view().unwrap_err(), ViewError::Unpaired);
}
