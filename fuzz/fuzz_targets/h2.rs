//! HTTP/2 (RFC 9113) through the HTTP stage: the client's connection preface, then arbitrary
//! client and server bytes, interleaved in chunks, so the input reaches the frame reader and
//! the HPACK decoder. It must not panic, and no body is longer than its direction.
//!
//! Input: a chunk size (byte 0: 1 to 256 bytes), the client's length after its preface (bytes
//! 1–2, little-endian), the client's bytes, then the server's. Seeds from the fixtures'
//! connections: `mcpcap analyze -q --dump-streams D fixtures/mcp-h2py/h2c_healthy.pcap`, then
//! for `F0`: `{ printf '\xff'; python3 -c "import sys,struct;
//! sys.stdout.buffer.write(struct.pack('<H', $(stat -c%s D/F0.orig.bin) - 24))"; tail -c +25
//! D/F0.orig.bin; cat D/F0.resp.bin; } > fuzz/corpus/h2/F0`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcpcap::http::{HttpLayer, HttpOptions};
use mcpcap::tcp::{Chunk, FlowMeta, StreamEvent, StreamSink};
use std::net::{IpAddr, Ipv4Addr};

use mcpcap::http::h2::frame::PREFACE;

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let k = data[0] as usize + 1;
    let split = (u16::from_le_bytes([data[1], data[2]]) as usize).min(data.len() - 3);
    let (after, server) = data[3..].split_at(split);
    let client = [PREFACE, after].concat();
    let a = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let flow = FlowMeta { index: 0, ends: [(a, 40000), (a, 3600)], client_by_syn: true };
    let mut http = HttpLayer::new(HttpOptions {
        event_role: Some(mcpcap::mcp::event_role),
        ..Default::default()
    });
    http.event(flow, StreamEvent::Open, 0, 0);
    let mut off = [0u64; 2];
    let (mut c, mut s) = (client.chunks(k), server.chunks(k));
    let mut frame = 1;
    loop {
        let (cc, sc) = (c.next(), s.next());
        if cc.is_none() && sc.is_none() {
            break;
        }
        for (d, bytes) in [(0, cc), (1, sc)] {
            let Some(bytes) = bytes else { continue };
            let ev = StreamEvent::Chunk(d, Chunk::Data { offset: off[d], bytes });
            off[d] += bytes.len() as u64;
            http.event(flow, ev, frame, frame as u64);
            frame += 1;
        }
    }
    for dir in 0..2 {
        let end = StreamEvent::End {
            dir,
            fin: true,
            reset: false,
            peer_acked: true,
            acked_by_peer: true,
        };
        http.event(flow, end, frame, frame as u64);
    }
    http.event(flow, StreamEvent::Close, frame, frame as u64);
    for e in http.exchanges.iter() {
        assert!(e.req_body_len <= client.len() as u64);
        assert!(e.resp_body_len <= server.len() as u64);
    }
});
