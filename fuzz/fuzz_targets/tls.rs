//! The TLS record layer: a connection's two directions, interleaved in chunks, through the TLS
//! stage with the key logs of `fixtures/mcp-tls/` (so a seed made of a fixture connection is
//! decrypted). It must not panic, and what it hands on continues where it left off.
//!
//! Input: a chunk size (byte 0: 8 to 2048 bytes, in steps of 8), the client's length (bytes 1–2, little-endian), the
//! client's bytes, then the server's. Seeds from the fixtures' connections:
//! `mcpcap analyze -q --dump-streams D fixtures/mcp-tls/tls13.pcap`, then for each `F<n>`:
//! `{ printf '\xff'; python3 -c "import sys,struct; sys.stdout.buffer.write(struct.pack('<H', $(stat -c%s D/F<n>.orig.bin)))"; cat D/F<n>.orig.bin D/F<n>.resp.bin; } > fuzz/corpus/tls/F<n>`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcpcap::tcp::{Chunk, FlowMeta, StreamEvent, StreamSink};
use mcpcap::tls::{keylog::Secrets, TlsLayer, TlsOptions};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, OnceLock};

/// Checks that each direction's plaintext offsets run on without a hole or an overlap.
#[derive(Default)]
struct Check([Option<u64>; 2]);

impl StreamSink for Check {
    fn event(&mut self, _: FlowMeta, ev: StreamEvent<'_>, _: i64, _: u64) {
        let StreamEvent::Chunk(d, c) = ev else { return };
        let (offset, len) = match c {
            Chunk::Data { offset, bytes } => (offset, bytes.len() as u64),
            Chunk::Gap { offset, len } => (offset, len),
        };
        if let Some(next) = self.0[d] {
            assert_eq!(offset, next, "direction {d}");
        }
        self.0[d] = Some(offset + len);
    }
}

fn secrets() -> Arc<Secrets> {
    static S: OnceLock<Arc<Secrets>> = OnceLock::new();
    S.get_or_init(|| {
        let mut s = Secrets::default();
        s.add_keylog(include_str!("../../fixtures/mcp-tls/tls13.keys"));
        s.add_keylog(include_str!("../../fixtures/mcp-tls/tls12.keys"));
        Arc::new(s)
    })
    .clone()
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let k = (data[0] as usize + 1) * 8;
    let split = (u16::from_le_bytes([data[1], data[2]]) as usize).min(data.len() - 3);
    let (client, server) = data[3..].split_at(split);
    let a = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let flow = FlowMeta { index: 0, ends: [(a, 40000), (a, 443)], client_by_syn: true };
    let mut tls = TlsLayer::new(TlsOptions { secrets: Some(secrets()) });
    let mut check = Check::default();
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
            tls.event(flow, ev, frame, frame as u64, &mut check);
            frame += 1;
        }
    }
    tls.event(flow, StreamEvent::Close, frame, frame as u64, &mut check);
});
