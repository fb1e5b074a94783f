//! Reassembly operations from bytes: (kind, seq, len) triples offer segments, ACKs and a flush.
//! Every delivered chunk must continue exactly where the previous one ended.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcpcap::tcp::{Chunk, Reassembler, ReassemblyLimits};

fuzz_target!(|data: &[u8]| {
    let limits = ReassemblyLimits { max_ooo_bytes: 4096, ..Default::default() };
    let mut r = Reassembler::default();
    let payload = [0x5a_u8; 2048];
    let mut next = 0u64;
    let mut check = |c: Chunk<'_>| {
        let (offset, len) = match c {
            Chunk::Data { offset, bytes } => (offset, bytes.len() as u64),
            Chunk::Gap { offset, len } => (offset, len),
        };
        assert_eq!(offset, next);
        next += len;
    };
    for op in data.chunks_exact(7) {
        let seq = u32::from_le_bytes([op[1], op[2], op[3], op[4]]);
        let len = (u16::from_le_bytes([op[5], op[6]]) as usize) % payload.len();
        match op[0] % 4 {
            0 => { r.syn(seq); }
            1 | 2 => r.segment(seq, &payload[..len], len as u32, false, &limits, &mut check),
            _ => r.peer_ack(seq, &mut check),
        }
    }
    r.flush(&mut check);
});
