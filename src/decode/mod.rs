//! Link, IP and TCP headers → TCP segments.
//!
//! Link types: Ethernet (DLT 1, with 802.1Q/QinQ via etherparse, and PPPoE
//! sessions), BSD loopback NULL (0) and LOOP (108) in either byte order, raw
//! IP (12, 14, 101), IPV4 (228), IPV6 (229), Linux cooked SLL (113) and SLL2
//! (276), Linux NFLOG (239). IPv4 and
//! IPv6 through [`etherparse`]'s lax slicer, which keeps what it could decode
//! of a snaplen-cut packet; the common frame (Ethernet II, whole unfragmented
//! IPv4, TCP) through etherparse's header slices directly, with the same
//! result. Everything above this module sees segments, never headers.

use crate::anomaly::Code;
use std::net::IpAddr;

use etherparse::{EtherType, LaxNetSlice, LaxSlicedPacket, TransportSlice};

/// A decoded TCP segment (RFC 9293 §3.1), borrowing the payload from the frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment<'a> {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number (meaningful when `ack` is set).
    pub ack_no: u32,
    /// SYN flag.
    pub syn: bool,
    /// ACK flag.
    pub ack: bool,
    /// FIN flag.
    pub fin: bool,
    /// RST flag.
    pub rst: bool,
    /// The payload bytes present in the capture.
    pub payload: &'a [u8],
    /// Payload length on the wire, in bytes; larger than `payload.len()` when the snaplen cut the frame.
    pub wire_len: u32,
}

/// Outcome of decoding one frame.
#[derive(Debug)]
pub enum Decoded<'a> {
    /// A TCP segment.
    Tcp(Segment<'a>),
    /// A well-formed packet that is not TCP over IP (ARP, UDP, ICMP, …).
    NotTcp,
    /// An IP fragment (not reassembled yet; counted).
    Fragment,
    /// The link type is not supported.
    UnsupportedLink(i32),
    /// The packet is malformed; the code names the layer.
    Malformed(Code, String),
}

/// Decode a frame of link type `linktype`.
pub fn decode(linktype: i32, data: &[u8], orig_len: u32) -> Decoded<'_> {
    if linktype == 1 {
        if let Some(seg) = ethernet_ipv4_tcp(data) {
            return Decoded::Tcp(seg);
        }
    }
    decode_lax(linktype, data, orig_len)
}

/// The common frame, Ethernet II carrying a whole, unfragmented IPv4 packet of TCP (no VLAN tag,
/// no authentication header, not cut by the snaplen), sliced header by header: what
/// [`decode_lax`] gives for it, without building etherparse's whole-packet structure (copying
/// it cost more than slicing). `None` for any other frame.
fn ethernet_ipv4_tcp(data: &[u8]) -> Option<Segment<'_>> {
    let eth = etherparse::Ethernet2Slice::from_slice_without_fcs(data).ok()?;
    if eth.ether_type() != EtherType::IPV4 {
        return None;
    }
    let ip = etherparse::Ipv4Slice::from_slice(eth.payload_slice()).ok()?;
    let h = ip.header();
    if h.protocol() != etherparse::IpNumber::TCP || ip.is_payload_fragmented() {
        return None;
    }
    let tcp = etherparse::TcpSlice::from_slice(ip.payload().payload).ok()?;
    Some(segment(
        IpAddr::V4(h.source_addr()),
        IpAddr::V4(h.destination_addr()),
        &tcp,
        0,
    ))
}

/// The segment of a sliced TCP header from `src` to `dst`; `missing`: payload bytes the snaplen
/// cut off.
fn segment<'a>(
    src: IpAddr,
    dst: IpAddr,
    tcp: &etherparse::TcpSlice<'a>,
    missing: u32,
) -> Segment<'a> {
    let payload = tcp.payload();
    Segment {
        src,
        dst,
        sport: tcp.source_port(),
        dport: tcp.destination_port(),
        seq: tcp.sequence_number(),
        ack_no: tcp.acknowledgment_number(),
        syn: tcp.syn(),
        ack: tcp.ack(),
        fin: tcp.fin(),
        rst: tcp.rst(),
        payload,
        wire_len: (payload.len() as u32).saturating_add(missing),
    }
}

/// [`decode`] through etherparse's lax slicer: every link type, snaplen-cut packets.
fn decode_lax(linktype: i32, data: &[u8], orig_len: u32) -> Decoded<'_> {
    let sliced = match linktype {
        1 => {
            LaxSlicedPacket::from_ethernet(data).map_err(|e| (Code::DecodeEthernet, e.to_string()))
        }
        0 | 108 => {
            if data.len() < 4 {
                return Decoded::Malformed(Code::DecodeNullShort, format!("{} bytes", data.len()));
            }
            let le = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
            let be = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
            let fam = if le < 256 { le } else { be };
            match fam {
                2 => Ok(LaxSlicedPacket::from_ether_type(
                    EtherType::IPV4,
                    &data[4..],
                )),
                24 | 28 | 30 => Ok(LaxSlicedPacket::from_ether_type(
                    EtherType::IPV6,
                    &data[4..],
                )),
                _ => return Decoded::NotTcp,
            }
        }
        12 | 14 | 101 | 228 | 229 => {
            LaxSlicedPacket::from_ip(data).map_err(|e| (Code::DecodeIp, e.to_string()))
        }
        113 => {
            // Linux cooked v1: 16-byte header, protocol type in the last two bytes.
            if data.len() < 16 {
                return Decoded::Malformed(Code::DecodeSllShort, format!("{} bytes", data.len()));
            }
            let proto = u16::from_be_bytes([data[14], data[15]]);
            Ok(LaxSlicedPacket::from_ether_type(
                EtherType(proto),
                &data[16..],
            ))
        }
        276 => {
            // Linux cooked v2: 20-byte header, protocol type first.
            if data.len() < 20 {
                return Decoded::Malformed(Code::DecodeSll2Short, format!("{} bytes", data.len()));
            }
            let proto = u16::from_be_bytes([data[0], data[1]]);
            Ok(LaxSlicedPacket::from_ether_type(
                EtherType(proto),
                &data[20..],
            ))
        }
        239 => match nflog_payload(data) {
            Ok(Some((t, ip))) => Ok(LaxSlicedPacket::from_ether_type(t, ip)),
            Ok(None) => return Decoded::NotTcp,
            Err(detail) => return Decoded::Malformed(Code::DecodeNflog, detail),
        },
        other => return Decoded::UnsupportedLink(other),
    };
    let mut p = match sliced {
        Ok(p) => p,
        Err((code, e)) => return Decoded::Malformed(code, e),
    };
    // PPPoE session (RFC 2516 §4: 6-byte header, then the 2-byte PPP protocol), which etherparse
    // leaves as an opaque ether payload: IPv4 (0x0021) and IPv6 (0x0057) are sliced again.
    if p.net.is_none() {
        if let Some(ep) = p.ether_payload() {
            if ep.ether_type == EtherType(0x8864) && ep.payload.len() >= 8 {
                let inner = match u16::from_be_bytes([ep.payload[6], ep.payload[7]]) {
                    0x0021 => Some(EtherType::IPV4),
                    0x0057 => Some(EtherType::IPV6),
                    _ => None,
                };
                match inner {
                    Some(t) => p = LaxSlicedPacket::from_ether_type(t, &ep.payload[8..]),
                    None => return Decoded::NotTcp,
                }
            }
        }
    }
    let (src, dst, fragmented, ip_payload, ip_incomplete) = match &p.net {
        Some(LaxNetSlice::Ipv4(v4)) => {
            let h = v4.header();
            let pl = v4.payload();
            (
                IpAddr::V4(h.source_addr()),
                IpAddr::V4(h.destination_addr()),
                pl.fragmented,
                (pl.ip_number, pl.payload),
                pl.incomplete,
            )
        }
        Some(LaxNetSlice::Ipv6(v6)) => {
            let h = v6.header();
            let pl = v6.payload();
            (
                IpAddr::V6(h.source_addr()),
                IpAddr::V6(h.destination_addr()),
                pl.fragmented,
                (pl.ip_number, pl.payload),
                pl.incomplete,
            )
        }
        Some(LaxNetSlice::Arp(_)) | None => {
            if let Some((e, _)) = &p.stop_err {
                return Decoded::Malformed(Code::DecodeLink, e.to_string());
            }
            return Decoded::NotTcp;
        }
    };
    if fragmented {
        return Decoded::Fragment;
    }
    // Bytes of the frame the snaplen cut off (they belong to the end of the TCP payload).
    let missing = if ip_incomplete {
        orig_len.saturating_sub(data.len() as u32)
    } else {
        0
    };
    match &p.transport {
        Some(TransportSlice::Tcp(tcp)) => Decoded::Tcp(segment(src, dst, tcp, missing)),
        Some(_) => Decoded::NotTcp,
        // The snaplen cut the TCP options: the fixed 20-byte header (RFC 9293 §3.1) still says
        // which connection and sequence range the segment is; its payload is all missing.
        None if ip_payload.0 == etherparse::IpNumber::TCP
            && ip_payload.1.len() >= 20
            && ip_incomplete =>
        {
            let t = ip_payload.1;
            let doff = ((t[12] >> 4) as u32) * 4;
            let declared = (t.len() as u32).saturating_add(missing);
            let flags = t[13];
            Decoded::Tcp(Segment {
                src,
                dst,
                sport: u16::from_be_bytes([t[0], t[1]]),
                dport: u16::from_be_bytes([t[2], t[3]]),
                seq: u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
                ack_no: u32::from_be_bytes([t[8], t[9], t[10], t[11]]),
                syn: flags & 0x02 != 0,
                ack: flags & 0x10 != 0,
                fin: flags & 0x01 != 0,
                rst: flags & 0x04 != 0,
                payload: &[],
                wire_len: declared.saturating_sub(doff),
            })
        }
        None => match &p.stop_err {
            Some((e, _)) => Decoded::Malformed(Code::DecodeTransport, e.to_string()),
            None => Decoded::NotTcp,
        },
    }
}

/// Linux NFLOG (LINKTYPE 239): a 4-byte header (address family, version, resource id), then
/// TLVs (length and type little-endian, values padded to 4 bytes); type 9 (NFULA_PAYLOAD)
/// holds the IP packet. Returns the packet's ether type and bytes, `None` when it has none.
fn nflog_payload(data: &[u8]) -> Result<Option<(EtherType, &[u8])>, String> {
    if data.len() < 4 {
        return Err(format!("{} bytes, header needs 4", data.len()));
    }
    let t = match data[0] {
        2 => EtherType::IPV4,
        10 => EtherType::IPV6,
        _ => return Ok(None),
    };
    let mut i = 4;
    while i + 4 <= data.len() {
        let len = u16::from_le_bytes([data[i], data[i + 1]]) as usize;
        let kind = u16::from_le_bytes([data[i + 2], data[i + 3]]);
        if len < 4 {
            return Err(format!("TLV of length {len} at byte {i}"));
        }
        let end = (i + len).min(data.len());
        if kind == 9 {
            return Ok(Some((t, &data[i + 4..end])));
        }
        i += (len + 3) & !3;
    }
    Ok(None)
}

/// A connection's address pair, lower end first.
pub type ConnKey = ((std::net::IpAddr, u16), (std::net::IpAddr, u16));

/// The address pair of a segment, lower end first.
pub fn conn_key(seg: &Segment<'_>) -> ConnKey {
    let (a, b) = ((seg.src, seg.sport), (seg.dst, seg.dport));
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    /// Capture files under `dir`, recursively.
    fn captures(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut paths: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            if p.is_dir() {
                captures(&p, out);
            } else if p
                .extension()
                .is_some_and(|e| e == "pcap" || e == "pcapng" || e == "cap")
            {
                out.push(p);
            }
        }
    }

    /// On every Ethernet frame of the fixture captures (and of the shared corpus when present),
    /// the direct slicing gives what the lax slicer gives, or leaves the frame to it.
    #[test]
    fn direct_slicing_equals_lax_slicing() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        captures(&root.join("fixtures"), &mut files);
        captures(&root.join("../shared/corpus"), &mut files);
        let mut taken = 0u64;
        for path in &files {
            let Ok(file) = std::fs::File::open(path) else {
                continue;
            };
            let mut anomalies = crate::anomaly::Anomalies::default();
            let _ = crate::capture::read_capture(file, 1, &mut anomalies, |f| {
                if f.linktype != 1 {
                    return;
                }
                if let Some(seg) = ethernet_ipv4_tcp(f.data) {
                    taken += 1;
                    match decode_lax(1, f.data, f.orig_len) {
                        Decoded::Tcp(lax) => {
                            assert_eq!(seg, lax, "{} frame {}", path.display(), f.number)
                        }
                        other => panic!("{} frame {}: {other:?}", path.display(), f.number),
                    }
                }
            });
        }
        assert!(taken > 1000, "{taken} frames taken");
        // Frames it leaves to the lax slicer: a VLAN tag, IPv6, UDP, a snaplen cut, a fragment.
        fn built(write: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
            let mut out = Vec::new();
            write(&mut out);
            out
        }
        let vlan = built(|out| {
            PacketBuilder::ethernet2([1; 6], [2; 6])
                .single_vlan(etherparse::VlanId::try_new(7).unwrap())
                .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
                .tcp(40000, 80, 1000, 65535)
                .write(out, b"x")
                .unwrap()
        });
        let v6 = built(|out| {
            PacketBuilder::ethernet2([1; 6], [2; 6])
                .ipv6([1; 16], [2; 16], 64)
                .tcp(40000, 80, 1000, 65535)
                .write(out, b"x")
                .unwrap()
        });
        let udp = built(|out| {
            PacketBuilder::ethernet2([1; 6], [2; 6])
                .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
                .udp(5353, 5353)
                .write(out, b"x")
                .unwrap()
        });
        let full = tcp_frame();
        let cut = full[..full.len() - 5].to_vec();
        let mut fragment = full.clone();
        fragment[14 + 6] |= 0x20; // IPv4 "more fragments"
        for (frame, orig_len) in [
            (&vlan, vlan.len()),
            (&v6, v6.len()),
            (&udp, udp.len()),
            (&cut, full.len()),
            (&fragment, fragment.len()),
        ] {
            assert!(ethernet_ipv4_tcp(frame).is_none());
            assert_eq!(
                format!("{:?}", decode(1, frame, orig_len as u32)),
                format!("{:?}", decode_lax(1, frame, orig_len as u32))
            );
        }
        assert!(ethernet_ipv4_tcp(&full).is_some());
    }

    fn tcp_frame() -> Vec<u8> {
        let b = PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(40000, 80, 1000, 65535)
            .psh()
            .ack(7);
        let mut out = Vec::new();
        b.write(&mut out, b"GET / HTTP/1.1\r\n\r\n").unwrap();
        out
    }

    #[test]
    fn ethernet_tcp() {
        let f = tcp_frame();
        match decode(1, &f, f.len() as u32) {
            Decoded::Tcp(s) => {
                assert_eq!((s.sport, s.dport, s.seq, s.ack_no), (40000, 80, 1000, 7));
                assert_eq!(s.payload, b"GET / HTTP/1.1\r\n\r\n");
                assert_eq!(s.wire_len, 18);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn null_and_sll2_and_raw() {
        let f = tcp_frame();
        let ip = &f[14..];
        let mut null = vec![2, 0, 0, 0];
        null.extend_from_slice(ip);
        assert!(matches!(
            decode(0, &null, null.len() as u32),
            Decoded::Tcp(_)
        ));
        let mut sll2 = vec![0x08, 0x00];
        sll2.extend_from_slice(&[0; 18]);
        sll2.extend_from_slice(ip);
        assert!(matches!(
            decode(276, &sll2, sll2.len() as u32),
            Decoded::Tcp(_)
        ));
        // Raw IP: LINKTYPE_RAW, and the DLT_RAW values older files carry (12; 14 on OpenBSD).
        for raw in [101, 12, 14] {
            assert!(matches!(decode(raw, ip, ip.len() as u32), Decoded::Tcp(_)));
        }
        assert!(matches!(
            decode(147, ip, ip.len() as u32),
            Decoded::UnsupportedLink(147)
        ));
    }

    #[test]
    fn vlan_sll_and_ipv6() {
        let b = PacketBuilder::ethernet2([1; 6], [2; 6])
            .single_vlan(etherparse::VlanId::try_new(7).unwrap())
            .ipv6([1; 16], [2; 16], 64)
            .tcp(5, 6, 9, 100);
        let mut f = Vec::new();
        b.write(&mut f, b"x").unwrap();
        match decode(1, &f, f.len() as u32) {
            Decoded::Tcp(s) => assert_eq!((s.sport, s.dport, s.payload), (5, 6, &b"x"[..])),
            other => panic!("{other:?}"),
        }
        let ip = &tcp_frame()[14..];
        let mut sll = vec![0; 14];
        sll.extend_from_slice(&[0x08, 0x00]);
        sll.extend_from_slice(ip);
        assert!(matches!(
            decode(113, &sll, sll.len() as u32),
            Decoded::Tcp(_)
        ));
    }

    #[test]
    fn pppoe_and_nflog() {
        let ip = tcp_frame()[14..].to_vec();
        // Ethernet, PPPoE session (0x8864): ver/type 0x11, code 0, session 0x0036, length, PPP 0x0021.
        let mut f = vec![2; 12];
        f.extend_from_slice(&[0x88, 0x64, 0x11, 0x00, 0x00, 0x36]);
        f.extend_from_slice(&((ip.len() + 2) as u16).to_be_bytes());
        f.extend_from_slice(&[0x00, 0x21]);
        f.extend_from_slice(&ip);
        assert!(matches!(decode(1, &f, f.len() as u32), Decoded::Tcp(_)));
        // NFLOG: header (AF_INET, v0, res 0), a prefix TLV (type 10, padded), the payload TLV (type 9).
        let mut n = vec![2, 0, 0, 0];
        n.extend_from_slice(&[7, 0, 10, 0, b'a', b'b', b'c', 0]);
        n.extend_from_slice(&((ip.len() + 4) as u16).to_le_bytes());
        n.extend_from_slice(&[9, 0]);
        n.extend_from_slice(&ip);
        assert!(matches!(decode(239, &n, n.len() as u32), Decoded::Tcp(_)));
        assert!(matches!(decode(239, &n[..3], 3), Decoded::Malformed(..)));
    }

    #[test]
    fn every_truncation_is_safe() {
        let f = tcp_frame();
        for n in 0..f.len() {
            let _ = decode(1, &f[..n], f.len() as u32);
        }
    }

    #[test]
    fn snaplen_cut_keeps_wire_length() {
        let f = tcp_frame();
        let cut = &f[..f.len() - 5];
        match decode(1, cut, f.len() as u32) {
            Decoded::Tcp(s) => {
                assert_eq!(s.payload.len(), 13);
                assert_eq!(s.wire_len, 18);
            }
            other => panic!("{other:?}"),
        }
    }
}
