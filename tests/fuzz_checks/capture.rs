//! The `capture` target: `kwire::capture::Reader` (the pcap/pcapng container reader, the
//! packet headers, the TCP reassembler and the Kafka framing) never panics, stays within
//! its limits, and reports whole frames as whole.
//!
//! Byte 0 selects the mode:
//! - even: the rest is a capture file as it is (any container, any header, any length);
//! - odd: the rest is a script of TCP segments on one connection, written into a valid
//!   pcap file here, so that the fuzzer drives the reassembler and the Kafka framing
//!   directly. Each segment is `[flags][seq delta: i16][len][payload: len bytes]`: bit 0
//!   of flags picks the direction, bit 1 sets SYN, bit 2 FIN, bit 3 RST, bit 4 ACK (the
//!   acknowledgment is the other side's next byte, plus the seq delta when bit 5 is set),
//!   bits 6-7 cut the payload by a snaplen (64 bytes of payload kept).

use kwire::capture::{Event, Limits, Options, Reader};

const LIMIT_FRAME: usize = 4096;

fn limits() -> Limits {
    let mut l = Limits::default();
    l.max_frame = LIMIT_FRAME;
    l.max_pending = 8192;
    l.max_probe = 16 * 1024;
    l.max_connections = 8;
    l.max_in_flight = 16;
    l.max_record = 1 << 20;
    l.max_total = 64 * 1024;
    l
}

fn packet(from_client: bool, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let (sp, dp): (u16, u16) = if from_client { (50000, 9092) } else { (9092, 50000) };
    let mut p = vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0x08, 0x00];
    p.extend_from_slice(&[0x45, 0]);
    p.extend_from_slice(&((40 + payload.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1]);
    p.extend_from_slice(&sp.to_be_bytes());
    p.extend_from_slice(&dp.to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&ack.to_be_bytes());
    p.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    p.extend_from_slice(payload);
    p
}

/// The pcap file a segment script describes.
pub fn script_to_pcap(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4_u32.to_le_bytes());
    out.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&65_535u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    let mut next = [1000u32, 5000u32];
    let mut t = 0u32;
    while data.len() >= 4 {
        let flags = data[0];
        let delta = i16::from_be_bytes([data[1], data[2]]);
        let len = usize::from(data[3]).min(data.len() - 4);
        let payload = &data[4..4 + len];
        data = &data[4 + len..];
        let side = usize::from(flags & 1);
        let seq = next[side].wrapping_add(delta as i32 as u32);
        let mut ack = next[1 - side];
        if flags & 0x20 != 0 {
            ack = ack.wrapping_add(delta as i32 as u32);
        }
        let tcp_flags =
            ((flags >> 1) & 1) << 1 | ((flags >> 2) & 1) | ((flags >> 3) & 1) << 2 | ((flags >> 4) & 1) << 4;
        let p = packet(side == 0, seq, ack, tcp_flags, payload);
        next[side] = seq.wrapping_add(len as u32).wrapping_add(u32::from(flags & 6 != 0));
        let cap = if flags & 0xc0 != 0 { p.len().min(54 + 64) } else { p.len() };
        t += 1;
        out.extend_from_slice(&(1_700_000_000u32 + t / 1000).to_le_bytes());
        out.extend_from_slice(&((t % 1000) * 1000).to_le_bytes());
        out.extend_from_slice(&(cap as u32).to_le_bytes());
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(&p[..cap]);
    }
    out
}

/// Reads a capture to its end; checks what it says of frames.
pub fn capture(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let file = if mode & 1 == 1 { script_to_pcap(rest) } else { rest.to_vec() };
    let Ok(reader) = Reader::new(&file[..], Options::default().limits(limits())) else { return };
    let mut n = 0usize;
    for event in reader {
        let Ok(event) = event else { break };
        n += 1;
        assert!(n <= 4 * file.len() + 16, "more events than the input could hold");
        if let Event::Frame(f) = event {
            if f.is_whole() {
                let size = f.size.expect("a whole frame has its size") as usize;
                assert_eq!(f.bytes.len(), size + 4);
                assert!(size <= LIMIT_FRAME);
            } else {
                assert!(f.bytes.len() <= LIMIT_FRAME + 4);
            }
            if f.is_unpaired() {
                assert!(f.api_key.is_none() && f.api().is_none());
            }
            // The typed view: never a panic; none for a frame that is not whole.
            let view = f.view();
            assert!(f.is_whole() || view.is_err());
        }
    }
}
