//! A captured packet's link, IP and TCP headers (through `etherparse`): the TCP segment it
//! carries, if any.

use std::format;
use std::prelude::rust_2024::*;

use std::net::{IpAddr, SocketAddr};

use etherparse::{EtherType, IpNumber, LaxNetSlice, LaxSlicedPacket, TcpSlice};

/// LINKTYPE_NULL: BSD loopback, a 4-byte address family in the capturing host's order.
pub const LINK_NULL: u32 = 0;
/// LINKTYPE_ETHERNET.
pub const LINK_ETHERNET: u32 = 1;
/// LINKTYPE_RAW: an IPv4 or IPv6 packet.
pub const LINK_RAW: u32 = 101;
/// LINKTYPE_LOOP: OpenBSD loopback, the family in network order.
pub const LINK_LOOP: u32 = 108;
/// LINKTYPE_LINUX_SLL: Linux cooked capture (`-i any` before libpcap 1.10).
pub const LINK_SLL: u32 = 113;
/// LINKTYPE_IPV4.
pub const LINK_IPV4: u32 = 228;
/// LINKTYPE_IPV6.
pub const LINK_IPV6: u32 = 229;
/// LINKTYPE_LINUX_SLL2: Linux cooked capture v2 (`-i any` since libpcap 1.10).
pub const LINK_SLL2: u32 = 276;

/// A TCP segment.
#[derive(Debug)]
pub struct Segment<'a> {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    /// The acknowledgment number, when the ACK flag is set.
    pub ack: Option<u32>,
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    /// The payload bytes captured.
    pub payload: &'a [u8],
    /// Payload bytes the packet carried past the captured ones (cut by the snaplen).
    pub missing: u32,
}

/// Why a packet holds no TCP segment to read.
#[derive(Debug, PartialEq, Eq)]
pub enum Skip {
    /// Not TCP over IP (ARP, UDP, ICMP...): silently ignored.
    NotTcp,
    /// A link type this reader does not know.
    UnknownLink(u32),
    /// An IP fragment (TCP over fragmented IP is not reassembled).
    Fragment,
    /// The headers are cut or malformed.
    Malformed(String),
}

/// The TCP segment in a packet of link type `link`.
pub fn segment(link: u32, data: &[u8]) -> Result<Segment<'_>, Skip> {
    let sliced = match link {
        LINK_ETHERNET => LaxSlicedPacket::from_ethernet(data).map_err(|e| Skip::Malformed(e.to_string()))?,
        LINK_NULL | LINK_LOOP => {
            let rest = data.get(4..).ok_or_else(|| Skip::Malformed("loopback header cut".into()))?;
            LaxSlicedPacket::from_ip(rest).map_err(|e| Skip::Malformed(e.to_string()))?
        }
        LINK_RAW | 12 | LINK_IPV4 | LINK_IPV6 => {
            LaxSlicedPacket::from_ip(data).map_err(|e| Skip::Malformed(e.to_string()))?
        }
        LINK_SLL | LINK_SLL2 => {
            let (at, proto) = if link == LINK_SLL { (16, 14) } else { (20, 0) };
            let rest = data.get(at..).ok_or_else(|| Skip::Malformed("Linux cooked header cut".into()))?;
            let ether = u16::from_be_bytes([data[proto], data[proto + 1]]);
            LaxSlicedPacket::from_ether_type(EtherType(ether), rest)
        }
        other => return Err(Skip::UnknownLink(other)),
    };
    let (src, dst, payload, ip_end) = match &sliced.net {
        Some(LaxNetSlice::Ipv4(v4)) => {
            let h = v4.header();
            let end = h.slice().as_ptr() as usize + usize::from(h.total_len());
            (IpAddr::V4(h.source_addr()), IpAddr::V4(h.destination_addr()), v4.payload(), end)
        }
        Some(LaxNetSlice::Ipv6(v6)) => {
            let h = v6.header();
            let end = h.slice().as_ptr() as usize + 40 + usize::from(h.payload_length());
            (IpAddr::V6(h.source_addr()), IpAddr::V6(h.destination_addr()), v6.payload(), end)
        }
        _ => {
            return match sliced.stop_err {
                Some((e, _)) => Err(Skip::Malformed(e.to_string())),
                None => Err(Skip::NotTcp),
            };
        }
    };
    if payload.ip_number != IpNumber::TCP {
        return Err(Skip::NotTcp);
    }
    if payload.fragmented {
        return Err(Skip::Fragment);
    }
    let tcp =
        TcpSlice::from_slice(payload.payload).map_err(|e| Skip::Malformed(format!("TCP header: {e}")))?;
    let body = tcp.payload();
    let missing = if payload.incomplete {
        // The IP header's length says how much the packet held; the capture holds less.
        let captured_end = body.as_ptr() as usize + body.len();
        u32::try_from(ip_end.saturating_sub(captured_end)).unwrap_or(u32::MAX)
    } else {
        0
    };
    Ok(Segment {
        src: SocketAddr::new(src, tcp.source_port()),
        dst: SocketAddr::new(dst, tcp.destination_port()),
        seq: tcp.sequence_number(),
        ack: tcp.ack().then(|| tcp.acknowledgment_number()),
        syn: tcp.syn(),
        fin: tcp.fin(),
        rst: tcp.rst(),
        payload: body,
        missing,
    })
}
