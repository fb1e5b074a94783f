//! One direction of a TCP connection: segments in, in-order bytes and gaps out.
//!
//! Sequence space bookkeeping follows RFC 9293 §3.4 (comparisons modulo
//! 2^32): every sequence number is mapped to a 64-bit stream offset relative
//! to the ISN+1 (or to the first sequence number seen on a mid-stream start),
//! taking the representative nearest to the next expected offset, so that
//! wrap-around is invisible above this module.
//!
//! Each segment falls in one of four cases (as in retina's reassembly):
//! next expected (deliver), future (buffer, bounded by
//! [`ReassemblyLimits::max_ooo_bytes`]), overlapping with new data (trim the
//! old part, deliver the rest), old (retransmission, delivered once).
//! Holes become explicit [`Chunk::Gap`]s when the peer acknowledges past
//! them twice (one ACK may be recorded ahead of the segment it covers), when
//! the out-of-order buffer is full, or at FIN/RST/end of capture.

use std::collections::BTreeMap;

/// Limits of one direction's reassembly buffer.
#[derive(Debug, Clone, Copy)]
pub struct ReassemblyLimits {
    /// Bytes of out-of-order data held per direction before the first hole is declared a gap
    /// (anomaly `tcp.ooo_buffer_full`); each segment held counts [`ENTRY_COST`] bytes more, so
    /// that tiny or empty (snaplen-cut) segments are bounded too.
    pub max_ooo_bytes: usize,
    /// Bytes of out-of-order data (each segment counted as for `max_ooo_bytes`) all the
    /// directions of one flow table hold at once: past it, the direction that would add more
    /// declares its first hole a gap (anomaly `tcp.ooo_buffer_full`). Many connections each
    /// held up behind a hole would otherwise hold `max_ooo_bytes` each.
    pub max_ooo_total: usize,
    /// Connections one flow table holds live at once (their reassembly state; an ended one
    /// keeps only its row): past it, the connection idle the longest is evicted, its row kept
    /// and its state released, as if the capture had ended for it (anomaly `tcp.flow_evicted`).
    pub max_live_flows: usize,
}

/// What one buffered out-of-order segment costs beside its bytes (its map entry and buffer),
/// counted against [`ReassemblyLimits::max_ooo_bytes`]: about what a 1-byte segment measured.
pub const ENTRY_COST: usize = 96;

impl Default for ReassemblyLimits {
    fn default() -> Self {
        ReassemblyLimits {
            max_ooo_bytes: 4 << 20,
            max_ooo_total: 256 << 20,
            max_live_flows: 1 << 17,
        }
    }
}

/// What reassembly hands to the layer above, in stream order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk<'a> {
    /// In-order bytes at `offset` (bytes from the start of the direction's stream).
    Data {
        /// Stream offset of the first byte.
        offset: u64,
        /// The bytes.
        bytes: &'a [u8],
    },
    /// `len` bytes at `offset` that never appeared in the capture.
    Gap {
        /// Stream offset of the first missing byte.
        offset: u64,
        /// Number of missing bytes.
        len: u64,
    },
}

/// Per-direction counters for the flows table.
#[derive(Debug, Default, Clone, Copy)]
pub struct DirStats {
    /// Bytes reported as gaps (Zeek's `missed_bytes`).
    pub missed: u64,
    /// Segments wholly or partly retransmitted.
    pub retransmitted: u64,
    /// Segments that arrived ahead of a hole.
    pub out_of_order: u64,
    /// Times the out-of-order buffer limit forced holes to become gaps (anomaly `tcp.ooo_buffer_full`).
    pub ooo_overflows: u64,
    /// Of those, the times the limit of all directions at once did
    /// ([`ReassemblyLimits::max_ooo_total`]).
    pub ooo_total_overflows: u64,
    /// Overlapping copies that differ: among buffered segments byte for byte, at the same
    /// offset (the first copy wins) and at others (the one that starts first wins); against
    /// delivered data (not kept) only by a retransmission repeating one of the last segments'
    /// boundaries, on their first and last 8 bytes.
    pub overlap_conflicts: u64,
}

/// Reassembly state of one direction.
#[derive(Debug, Default)]
pub struct Reassembler {
    /// Sequence number of stream offset 0, once known.
    base: Option<u32>,
    /// Next expected stream offset: everything before it was delivered or reported as a gap.
    next: u64,
    /// Out-of-order segments by stream offset.
    pending: BTreeMap<u64, Vec<u8>>,
    pending_bytes: usize,
    /// `pending_bytes`, held from the flow table's budget ([`ReassemblyLimits::max_ooo_total`]).
    charge: crate::budget::Charge,
    /// Highest offset the peer acknowledged.
    acked: u64,
    /// ACKs seen past the hole at offset `.1` (the `next` they found): the second makes it a
    /// gap (see [`Reassembler::peer_ack`]).
    hole_acks: (u8, u64),
    /// Stream offset of the FIN, when seen.
    fin: Option<u64>,
    /// Stream offset a RST of this direction named (its sequence number: the next byte the
    /// sender would have sent), when past the bytes delivered: what lies between was sent.
    rst_end: Option<u64>,
    /// Counters.
    pub stats: DirStats,
    /// Samples of the last segments delivered whole, to compare retransmissions with.
    recent: std::collections::VecDeque<Sample>,
}

/// Most bytes a RST's sequence number may be ahead of the delivered bytes to count them as a
/// gap ([`Reassembler::rst`]): a receive window's worth.
pub const MAX_RST_GAP: u64 = 1 << 20;

/// Segments remembered per direction for [`Sample`] comparison.
const RECENT_SEGMENTS: usize = 16;

/// The boundaries and the first and last 8 bytes of a delivered segment: delivered bytes are not
/// kept, so a retransmission with the same boundaries is compared on these samples
/// (`tcp.overlap_conflict` when they differ; first copy wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sample {
    offset: u64,
    len: u64,
    head: [u8; 8],
    tail: [u8; 8],
}

impl Sample {
    fn of(offset: u64, payload: &[u8]) -> Sample {
        let mut head = [0u8; 8];
        let mut tail = [0u8; 8];
        let n = payload.len().min(8);
        head[..n].copy_from_slice(&payload[..n]);
        tail[..n].copy_from_slice(&payload[payload.len() - n..]);
        Sample {
            offset,
            len: payload.len() as u64,
            head,
            tail,
        }
    }
}

impl Reassembler {
    /// Whether this direction has fixed its sequence base.
    pub fn started(&self) -> bool {
        self.base.is_some()
    }

    /// Sequence number of stream offset 0, once known.
    pub fn base(&self) -> Option<u32> {
        self.base
    }

    /// Next expected stream offset.
    pub fn next_offset(&self) -> u64 {
        self.next
    }

    /// Bytes of a segment at `seq`, `len` long on the wire, past what this direction delivered
    /// or declared a gap (0 for a retransmission).
    pub fn beyond(&self, seq: u32, len: u64) -> u64 {
        let end = self.offset_of(seq).saturating_add(len as i64);
        end.saturating_sub(self.next as i64).max(0) as u64
    }

    /// Whether a FIN was seen and every byte before it delivered.
    pub fn finished(&self) -> bool {
        self.fin.is_some_and(|f| self.next >= f)
    }

    /// Whether the peer acknowledged every byte delivered (or reported as a gap) so far.
    pub fn all_acked(&self) -> bool {
        self.base.is_some() && self.acked >= self.next
    }

    /// Whether a FIN was seen and the peer acknowledged every byte before it.
    pub fn fin_acked(&self) -> bool {
        self.fin.is_some_and(|f| self.acked >= f)
    }

    /// A SYN with sequence number `isn` (RFC 9293 §3.4: the first data byte is ISN+1).
    /// Returns false when this direction already carried data from another base (a reused port).
    pub fn syn(&mut self, isn: u32) -> bool {
        match self.base {
            None => {
                self.base = Some(isn.wrapping_add(1));
                true
            }
            Some(b) => b == isn.wrapping_add(1) || self.next == 0,
        }
    }

    /// The stream offset of `seq`: the representative nearest to the next expected offset
    /// (RFC 9293 §3.4 modular comparison); negative before the base.
    fn offset_of(&self, seq: u32) -> i64 {
        let base = self.base.unwrap_or(seq);
        let next_seq = base.wrapping_add(self.next as u32);
        let delta = seq.wrapping_sub(next_seq) as i32 as i64;
        self.next as i64 + delta
    }

    /// Offer one segment: `payload` as captured, `wire_len` its length on the wire
    /// (longer when the snaplen cut it), `fin` its FIN flag. In-order output goes to `out`.
    pub fn segment(
        &mut self,
        seq: u32,
        payload: &[u8],
        wire_len: u32,
        fin: bool,
        limits: &ReassemblyLimits,
        out: &mut impl FnMut(Chunk<'_>),
    ) {
        if self.base.is_none() {
            if payload.is_empty() && !fin {
                return;
            }
            self.base = Some(seq);
        }
        let mut wire_len = wire_len.max(payload.len() as u32) as u64;
        let mut payload = payload;
        let off = self.offset_of(seq);
        // Bytes before the stream's first byte (a mid-stream start that later sees older data)
        // cannot be placed: they are dropped, the rest of the segment is kept.
        let off = if off < 0 {
            let skip = off.unsigned_abs();
            if skip >= wire_len {
                self.stats.retransmitted += 1;
                return;
            }
            payload = &payload[(skip as usize).min(payload.len())..];
            wire_len -= skip;
            0
        } else {
            off as u64
        };
        let end = off + wire_len;
        if fin && self.fin.is_none() {
            self.fin = Some(end);
        }
        if wire_len == 0 {
            return;
        }
        if end <= self.next {
            self.stats.retransmitted += 1;
            // A retransmission that repeats a recent segment's boundaries is compared with it.
            if payload.len() as u64 == wire_len {
                if let Some(r) = self
                    .recent
                    .iter()
                    .find(|r| r.offset == off && r.len == wire_len)
                {
                    if *r != Sample::of(off, payload) {
                        self.stats.overlap_conflicts += 1;
                    }
                }
            }
            return;
        }
        if off <= self.next {
            if off < self.next {
                self.stats.retransmitted += 1;
            }
            let skip = (self.next - off) as usize;
            self.deliver_cut(off, payload, wire_len, skip, out);
            self.drain(out);
        } else {
            self.stats.out_of_order += 1;
            self.store(off, payload);
            let own = |r: &Self| r.pending_bytes > limits.max_ooo_bytes;
            let all = |r: &mut Self| !r.pending.is_empty() && !r.charge.hold(r.pending_bytes);
            if own(self) || all(self) {
                self.stats.ooo_overflows += 1;
                if !own(self) {
                    self.stats.ooo_total_overflows += 1;
                }
                while own(self) || all(self) {
                    self.flush_first_hole(out);
                }
            }
        }
    }

    /// Deliver `payload` (at `off`, `wire_len` long on the wire) from byte `skip` on.
    fn deliver_cut(
        &mut self,
        off: u64,
        payload: &[u8],
        wire_len: u64,
        skip: usize,
        out: &mut impl FnMut(Chunk<'_>),
    ) {
        if skip == 0 && payload.len() as u64 == wire_len && !payload.is_empty() {
            if self.recent.len() == RECENT_SEGMENTS {
                self.recent.pop_front();
            }
            self.recent.push_back(Sample::of(off, payload));
        }
        if skip < payload.len() {
            let bytes = &payload[skip..];
            out(Chunk::Data {
                offset: self.next,
                bytes,
            });
            self.next += bytes.len() as u64;
        }
        let end = off + wire_len;
        if end > self.next {
            // Bytes the snaplen cut off: a gap.
            let len = end - self.next;
            out(Chunk::Gap {
                offset: self.next,
                len,
            });
            self.stats.missed += len;
            self.next = end;
        }
    }

    fn store(&mut self, off: u64, payload: &[u8]) {
        // One buffer per offset; overlaps at other offsets are trimmed on delivery. Every
        // overlap is compared here, once per segment. Of a snaplen-cut segment only the captured
        // bytes are kept; the rest becomes a gap later.
        if self.differs_from_buffered(off, payload) {
            self.stats.overlap_conflicts += 1;
        }
        match self.pending.get_mut(&off) {
            Some(existing) => {
                self.stats.retransmitted += 1;
                // First wins: only bytes beyond the buffered copy are taken from the new one.
                if payload.len() > existing.len() {
                    self.pending_bytes += payload.len() - existing.len();
                    existing.extend_from_slice(&payload[existing.len()..]);
                }
            }
            None => {
                self.pending_bytes += payload.len() + ENTRY_COST;
                self.pending.insert(off, payload.to_vec());
            }
        }
    }

    /// Whether `payload` at `off` differs from a buffered segment it overlaps, on the bytes they
    /// share: those that start inside it, and the nearest one that starts before it (an
    /// earlier, longer one that also reaches into it is not compared: finding it would mean
    /// walking every buffered segment before `off`).
    fn differs_from_buffered(&self, off: u64, payload: &[u8]) -> bool {
        let end = off + payload.len() as u64;
        let before = self.pending.range(..off).next_back();
        let inside = self.pending.range(off..end);
        before.into_iter().chain(inside).any(|(&o, d)| {
            let (from, to) = (o.max(off), (o + d.len() as u64).min(end));
            from < to
                && d[(from - o) as usize..(to - o) as usize]
                    != payload[(from - off) as usize..(to - off) as usize]
        })
    }

    /// Hold the flow table's `budget` for this direction's out-of-order bytes from now on
    /// ([`ReassemblyLimits::max_ooo_total`]).
    pub fn draw_on(&mut self, budget: &std::sync::Arc<crate::budget::Budget>) {
        self.charge.draw_on(budget);
    }

    /// Deliver buffered segments that now touch `next`.
    fn drain(&mut self, out: &mut impl FnMut(Chunk<'_>)) {
        while let Some((&off, _)) = self.pending.first_key_value() {
            if off > self.next {
                break;
            }
            let Some((off, data)) = self.pending.pop_first() else {
                break;
            };
            self.pending_bytes -= data.len() + ENTRY_COST;
            // (Fewer bytes: never refused.)
            self.charge.hold(self.pending_bytes);
            let end = off + data.len() as u64;
            if end <= self.next {
                self.stats.retransmitted += 1;
                continue;
            }
            let skip = (self.next - off) as usize;
            let bytes = &data[skip..];
            out(Chunk::Data {
                offset: self.next,
                bytes,
            });
            self.next = end;
        }
    }

    /// Declare the hole before the first buffered segment a gap, then deliver what follows.
    fn flush_first_hole(&mut self, out: &mut impl FnMut(Chunk<'_>)) {
        if let Some((&off, _)) = self.pending.first_key_value() {
            if off > self.next {
                let len = off - self.next;
                out(Chunk::Gap {
                    offset: self.next,
                    len,
                });
                self.stats.missed += len;
                self.next = off;
            }
            self.drain(out);
        }
    }

    /// The peer acknowledged up to sequence number `ack_no`: a hole below it that is followed
    /// by buffered data will never be filled by the capture — once a second ACK past it is seen.
    /// (A capture point that sees the two directions through different queues, a tap or a
    /// mirror port, can record a segment just after the ACK that covers it; the peer's next
    /// ACK comes after it.)
    pub fn peer_ack(&mut self, ack_no: u32, out: &mut impl FnMut(Chunk<'_>)) {
        if self.base.is_none() {
            return;
        }
        let a = self.offset_of(ack_no).max(0) as u64;
        // An ACK of the FIN covers one sequence number beyond the data.
        let a = match self.fin {
            Some(f) if a > f => f,
            _ => a,
        };
        if a > self.acked {
            self.acked = a;
        }
        let acked_hole = |r: &Self| {
            r.pending
                .first_key_value()
                .is_some_and(|(&off, _)| off > r.next && off <= r.acked)
        };
        if !acked_hole(self) {
            return;
        }
        if self.hole_acks.1 != self.next {
            self.hole_acks = (0, self.next);
        }
        self.hole_acks.0 = self.hole_acks.0.saturating_add(1);
        if self.hole_acks.0 < 2 {
            return;
        }
        while acked_hole(self) {
            self.flush_first_hole(out);
        }
    }

    /// A RST of this direction with sequence number `seq` (RFC 9293 §3.5.2: a reset sent on a
    /// synchronized connection carries the sender's next sequence number): bytes before it that
    /// the capture never showed are a gap when the direction ends, as before a FIN. A sequence
    /// number more than [`MAX_RST_GAP`] bytes ahead is not believed (a reset for a segment out
    /// of window), nor one after a FIN (which took a sequence number of its own).
    pub fn rst(&mut self, seq: u32) {
        if self.base.is_none() || self.fin.is_some() {
            return;
        }
        let off = self.offset_of(seq);
        if off > self.next as i64 && off as u64 - self.next <= MAX_RST_GAP {
            self.rst_end = Some(self.rst_end.unwrap_or(0).max(off as u64));
        }
    }

    /// Give back what only a live direction needs (the samples of recent segments): the
    /// connection is closed, its later segments are counted, not compared.
    pub fn release(&mut self) {
        self.recent = std::collections::VecDeque::new();
    }

    /// End of this direction (FIN/RST delivered, or end of capture): every hole becomes a gap,
    /// including acknowledged bytes that never appeared.
    pub fn flush(&mut self, out: &mut impl FnMut(Chunk<'_>)) {
        while !self.pending.is_empty() {
            self.flush_first_hole(out);
        }
        let target = self
            .acked
            .max(self.fin.unwrap_or(0))
            .max(self.rst_end.unwrap_or(0));
        if target > self.next {
            let len = target - self.next;
            out(Chunk::Gap {
                offset: self.next,
                len,
            });
            self.stats.missed += len;
            self.next = target;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bytes missing before a RST (its sequence number is past them) are a gap, as before a
    /// FIN; a RST after a FIN, or far out of window, adds none.
    #[test]
    fn bytes_missing_before_a_rst_are_a_gap() {
        let gap = |rst: u32, fin: bool| {
            let limits = ReassemblyLimits::default();
            let mut r = Reassembler::default();
            let mut gaps = 0u64;
            let mut out = |c: Chunk<'_>| {
                if let Chunk::Gap { len, .. } = c {
                    gaps += len;
                }
            };
            r.segment(1000, b"abcd", 4, fin, &limits, &mut out);
            r.rst(rst);
            r.flush(&mut out);
            gaps
        };
        assert_eq!(gap(1004, false), 0);
        assert_eq!(gap(1169, false), 165);
        assert_eq!(gap(1005, true), 0);
        assert_eq!(gap(1004 + (2 << 20), false), 0);
        assert_eq!(gap(900, false), 0);
    }

    /// Collect output as (bytes, gaps) with gap bytes shown as `None`.
    fn run(segs: &[(u32, Vec<u8>)], isn: Option<u32>, limits: ReassemblyLimits) -> Vec<Option<u8>> {
        let mut r = Reassembler::default();
        let mut outv: Vec<Option<u8>> = Vec::new();
        let mut next_off = 0u64;
        let mut out = |c: Chunk<'_>| match c {
            Chunk::Data { offset, bytes } => {
                assert_eq!(offset, next_off);
                next_off += bytes.len() as u64;
                outv.extend(bytes.iter().map(|b| Some(*b)));
            }
            Chunk::Gap { offset, len } => {
                assert_eq!(offset, next_off);
                next_off += len;
                outv.extend(std::iter::repeat_n(None, len as usize));
            }
        };
        if let Some(i) = isn {
            r.syn(i);
        }
        for (seq, p) in segs {
            r.segment(*seq, p, p.len() as u32, false, &limits, &mut out);
        }
        r.flush(&mut out);
        outv
    }

    /// A hole with data behind it becomes a gap at the second ACK past it, not the first: a
    /// segment recorded just after the ACK that covers it (a tap seeing the two directions
    /// through different queues) still fills it.
    #[test]
    fn a_hole_is_a_gap_at_the_second_ack_past_it() {
        let isn = 1000u32;
        let s = isn.wrapping_add(1);
        let limits = ReassemblyLimits::default();
        let collect = |acks_before_late: usize| {
            let mut r = Reassembler::default();
            r.syn(isn);
            let mut got: Vec<Option<u8>> = Vec::new();
            let mut out = |c: Chunk<'_>| match c {
                Chunk::Data { bytes, .. } => got.extend(bytes.iter().map(|b| Some(*b))),
                Chunk::Gap { len, .. } => got.extend(std::iter::repeat_n(None, len as usize)),
            };
            r.segment(s, b"ab", 2, false, &limits, &mut out);
            r.segment(s.wrapping_add(4), b"ef", 2, false, &limits, &mut out);
            for _ in 0..acks_before_late {
                r.peer_ack(s.wrapping_add(6), &mut out);
            }
            r.segment(s.wrapping_add(2), b"cd", 2, false, &limits, &mut out);
            r.flush(&mut out);
            got
        };
        let whole: Vec<Option<u8>> = b"abcdef".iter().map(|b| Some(*b)).collect();
        assert_eq!(collect(0), whole);
        assert_eq!(collect(1), whole);
        let gap = vec![Some(b'a'), Some(b'b'), None, None, Some(b'e'), Some(b'f')];
        assert_eq!(collect(2), gap);
        assert_eq!(collect(3), gap);
    }

    #[test]
    fn in_order_retransmit_and_wrap() {
        let isn = u32::MAX - 3; // data starts at MAX-2 and wraps after 3 bytes
        let s = isn.wrapping_add(1);
        let segs = vec![
            (s, b"abc".to_vec()),
            (s.wrapping_add(3), b"def".to_vec()),
            (s, b"abc".to_vec()),
            (s.wrapping_add(6), b"g".to_vec()),
        ];
        let got = run(&segs, Some(isn), ReassemblyLimits::default());
        assert_eq!(got, b"abcdefg".iter().map(|b| Some(*b)).collect::<Vec<_>>());
    }

    #[test]
    fn hole_at_end_is_gap() {
        let segs = vec![(1, b"ab".to_vec()), (5, b"ef".to_vec())];
        let got = run(&segs, Some(0), ReassemblyLimits::default());
        assert_eq!(
            got,
            vec![Some(b'a'), Some(b'b'), None, None, Some(b'e'), Some(b'f')]
        );
    }

    #[test]
    fn overflow_declares_gap() {
        let segs = vec![
            (1, b"ab".to_vec()),
            (10, b"xyz".to_vec()),
            (20, b"q".to_vec()),
        ];
        let got = run(
            &segs,
            Some(0),
            ReassemblyLimits {
                max_ooo_bytes: 2,
                ..Default::default()
            },
        );
        // First hole (offset 2..9) flushed when 3 bytes were buffered.
        assert_eq!(got.len(), 20);
        assert_eq!(got[9], Some(b'x'));
        assert_eq!(got[19], Some(b'q'));
    }

    #[test]
    fn data_before_a_mid_stream_base_is_dropped() {
        let got = run(
            &[
                (1000, b"FGHIJ".to_vec()),
                (990, b"0123456789FGHIJKLMNO".to_vec()),
            ],
            None,
            ReassemblyLimits::default(),
        );
        assert_eq!(
            got,
            b"FGHIJKLMNO".iter().map(|b| Some(*b)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn ooo_buffer_stays_bounded() {
        let mut r = Reassembler::default();
        r.syn(0);
        let limits = ReassemblyLimits {
            max_ooo_bytes: 1000,
            ..Default::default()
        };
        let mut gaps = 0;
        let mut sink = |c: Chunk<'_>| {
            if let Chunk::Gap { .. } = c {
                gaps += 1
            }
        };
        for i in 0..2000u32 {
            r.segment(10 + 2 * i, b"x", 1, false, &limits, &mut sink);
        }
        for i in 0..2000u32 {
            r.segment(
                100_000 + 1400 * i,
                &[0u8; 1400],
                1400,
                false,
                &limits,
                &mut sink,
            );
            assert!(r.pending_bytes <= 1000 + 1400 + ENTRY_COST);
        }
        assert!(gaps > 0);
    }

    #[test]
    fn empty_segments_held_are_bounded_too() {
        // Snaplen-cut segments whose payload the capture kept none of: each held entry counts.
        let mut r = Reassembler::default();
        r.syn(0);
        let limits = ReassemblyLimits {
            max_ooo_bytes: 10_000,
            ..Default::default()
        };
        let mut sink = |_: Chunk<'_>| {};
        for i in 0..100_000u32 {
            r.segment(10 + 100 * i, b"", 100, false, &limits, &mut sink);
            assert!(r.pending.len() <= 10_000 / ENTRY_COST + 1);
        }
    }

    /// A reassembler after a SYN at sequence 0, and the bytes it delivered.
    #[derive(Default)]
    struct Fed {
        r: Reassembler,
        out: Vec<u8>,
    }

    impl Fed {
        fn new() -> Fed {
            let mut f = Fed::default();
            f.r.syn(0);
            f
        }
        /// One whole segment at `seq`; returns the overlap conflicts counted so far.
        fn seg(&mut self, seq: u32, bytes: &[u8]) -> u64 {
            let out = &mut self.out;
            let limits = ReassemblyLimits::default();
            self.r
                .segment(seq, bytes, bytes.len() as u32, false, &limits, &mut |c| {
                    if let Chunk::Data { bytes, .. } = c {
                        out.extend_from_slice(bytes)
                    }
                });
            self.r.stats.overlap_conflicts
        }
    }

    #[test]
    fn overlap_conflict_first_wins() {
        let mut f = Fed::new();
        assert_eq!(f.seg(3, b"cdef"), 0); // future: buffered
        assert_eq!(f.seg(3, b"XYefgh"), 1); // same offset, differs, longer
        assert_eq!(f.seg(1, b"ab"), 1); // fills the hole
        assert_eq!(f.seg(1, b"ab"), 1); // same retransmission: fine
        assert_eq!(f.seg(1, b"aB"), 2); // differing retransmission
        assert_eq!(f.out, b"abcdefgh");
    }

    #[test]
    fn overlap_conflict_at_other_offsets() {
        // Buffered copies that overlap without sharing a start: compared on the bytes they
        // share, either way round, once per segment. (Of buffered copies at other offsets, the
        // one that starts first in the stream is delivered.)
        let mut f = Fed::new();
        assert_eq!(f.seg(5, b"efgh"), 0); // offsets 4..8
        assert_eq!(f.seg(7, b"ghij"), 0); // 6..10, agrees on "gh"
        assert_eq!(f.seg(8, b"HIJK"), 1); // 7..11, differs on "hij"
        assert_eq!(f.seg(3, b"cdEf"), 2); // 2..6, differs on "e"
        assert_eq!(f.seg(5, b"eFgH"), 3); // 4..8: differs from two copies, one conflict
        assert_eq!(f.seg(1, b"ab"), 3); // fills the hole
        assert_eq!(f.out, b"abcdEfghijK");
    }

    proptest! {
        /// Model: cut a byte string into segments, duplicate some, add overlapping
        /// retransmissions, drop some, shuffle. Every byte covered by a remaining segment is
        /// delivered once, in order, and exactly the uncovered ranges below the highest covered
        /// byte come out as gaps (bytes missing at the very end are unknown without an ACK or FIN).
        #[test]
        fn reassembly_matches_model(data in proptest::collection::vec(any::<u8>(), 1..400),
                                    cuts in proptest::collection::vec(0usize..400, 0..20),
                                    order in proptest::collection::vec(any::<u16>(), 0..40),
                                    dups in proptest::collection::vec(any::<u16>(), 0..10),
                                    overlaps in proptest::collection::vec((any::<u16>(), any::<u16>()), 0..4),
                                    drops in proptest::collection::vec(any::<u16>(), 0..4),
                                    isn in any::<u32>()) {
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c % data.len()).collect();
            points.push(0);
            points.push(data.len());
            points.sort();
            points.dedup();
            let seq = |off: usize| isn.wrapping_add(1).wrapping_add(off as u32);
            let mut segs: Vec<(usize, usize)> = points.windows(2).map(|w| (w[0], w[1])).collect();
            for (a, b) in &overlaps {
                let (a, b) = (*a as usize % data.len(), *b as usize % data.len());
                if a < b { segs.push((a, b + 1)); }
            }
            for d in &dups { let i = *d as usize % segs.len(); let s = segs[i]; segs.push(s); }
            for d in &drops {
                if segs.len() > 1 {
                    let victim = segs[*d as usize % segs.len()];
                    segs.retain(|s| *s != victim);
                }
            }
            for (i, o) in order.iter().enumerate() { let n = segs.len(); if n > 1 { segs.swap(i % n, *o as usize % n); } }
            let mut covered = vec![false; data.len()];
            for &(a, b) in &segs { for c in &mut covered[a..b] { *c = true; } }
            let end = covered.iter().rposition(|c| *c).map_or(0, |p| p + 1);
            let expect: Vec<Option<u8>> = (0..end).map(|i| covered[i].then_some(data[i])).collect();
            let input: Vec<(u32, Vec<u8>)> = segs.iter().map(|&(a, b)| (seq(a), data[a..b].to_vec())).collect();
            let got = run(&input, Some(isn), ReassemblyLimits::default());
            prop_assert_eq!(got, expect);
        }
    }
}
