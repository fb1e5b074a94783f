//! Flow table and per-direction reassembly (RFC 9293).
//!
//! Connections are keyed by their 5-tuple. The client (`orig`) is the SYN
//! sender; with no SYN captured it is the sender of the first packet until
//! the HTTP layer says otherwise (see [`crate::http`]). A SYN on a 5-tuple
//! whose connection ended (FIN both ways or RST), or with another ISN, starts
//! a new connection. A connection a RST ended is closed 5 s of capture time
//! after its last segment ([`RST_LINGER_US`]), as Zeek's `tcp_reset_delay`.
//! Everything above this module receives [`StreamEvent`]s, never headers.

pub mod reassembly;
pub mod rows;

use std::net::IpAddr;

use crate::anomaly::{Anomalies, Anomaly, Code};
use crate::decode::Segment;
pub use reassembly::{Chunk, DirStats, Reassembler, ReassemblyLimits};
pub use rows::{FlowRow, History};

/// Index of a direction: 0 = from `Flow::ends[0]` to `ends[1]`, 1 = the reverse.
pub type Dir = usize;

/// One TCP connection.
#[derive(Debug)]
pub struct Flow {
    /// Stable index of the flow in capture order, shown as `F<index>`.
    pub index: usize,
    /// The two endpoints; `ends[0]` is the client when known.
    pub ends: [(IpAddr, u16); 2],
    /// Whether a SYN or SYN-ACK fixed the client (`ends` are swapped when the SYN-ACK came first).
    pub client_by_syn: bool,
    /// Per-direction reassembly.
    pub dirs: [Reassembler; 2],
    /// Packets per direction.
    pub packets: [u64; 2],
    /// Payload bytes on the wire per direction (including retransmissions).
    pub wire_bytes: [u64; 2],
    /// First and last packet time, microseconds since the Unix epoch.
    pub ts_first: i64,
    /// Last packet time.
    pub ts_last: i64,
    /// Latest packet time (`ts_last` unless the capture's times went backwards).
    pub ts_max: i64,
    /// First and last frame numbers.
    pub frame_first: u64,
    /// Last frame number.
    pub frame_last: u64,
    /// SYN, FIN and RST seen per direction.
    pub syn: [bool; 2],
    /// FIN seen per direction.
    pub fin: [bool; 2],
    /// RST seen per direction.
    pub rst: [bool; 2],
    /// Frame of the first FIN or RST each direction sent (0: none).
    pub end_frame: [u64; 2],
    /// Zeek-style history letters, recorded per direction in arrival order.
    pub history: History,
    /// Whether the connection ended (FIN both ways delivered; after a RST, a new SYN or the end of capture).
    pub closed: bool,
    /// Whether the End event of each direction was emitted.
    ended: [bool; 2],
}

/// A flow's id as every table shows it, Zeek `uid`-like: `F<index>` (index in capture order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowId(pub usize);

impl std::fmt::Display for FlowId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "F{}", self.0)
    }
}

impl Flow {
    /// `F<index>`.
    pub fn flow_id(&self) -> String {
        FlowId(self.index).to_string()
    }

    /// The part of the flow a stream sink sees.
    pub fn meta(&self) -> FlowMeta {
        FlowMeta {
            index: self.index,
            ends: self.ends,
            client_by_syn: self.client_by_syn,
        }
    }

    fn note(&mut self, dir: Dir, c: char) {
        self.history.note(dir, c);
    }

    /// The flow's row of the `flows` table.
    pub fn row(&self) -> FlowRow {
        let stat = |f: fn(&DirStats) -> u64| [f(&self.dirs[0].stats), f(&self.dirs[1].stats)];
        FlowRow {
            index: self.index,
            ends: self.ends,
            client_by_syn: self.client_by_syn,
            packets: self.packets,
            wire_bytes: self.wire_bytes,
            ts_first: self.ts_first,
            ts_last: self.ts_last,
            frame_first: self.frame_first,
            frame_last: self.frame_last,
            missed: stat(|s| s.missed),
            retransmitted: stat(|s| s.retransmitted),
            out_of_order: stat(|s| s.out_of_order),
            syn: self.syn,
            fin: self.fin,
            rst: self.rst,
            end_frame: self.end_frame,
            history: self.history,
        }
    }

    /// The client's direction when nothing better is known: the SYN sender; on a mid-stream
    /// start the side without the lower well-known port (below 1024), else the first sender.
    pub fn client_guess(&self) -> Dir {
        let (p0, p1) = (self.ends[0].1, self.ends[1].1);
        if !self.client_by_syn && p0 < 1024 && p0 < p1 {
            1
        } else {
            0
        }
    }

    /// Zeek conn.log `history`: upper case for the client, lower case for the server.
    /// `client` is the direction index of the client.
    pub fn history_string(&self, client: Dir) -> String {
        self.history.string(client)
    }
}

/// Something that happened on a flow's byte streams.
#[derive(Debug, Clone, Copy)]
pub enum StreamEvent<'a> {
    /// A new connection.
    Open,
    /// Reassembled bytes or a gap in direction `dir`.
    Chunk(Dir, Chunk<'a>),
    /// Direction `dir` ended: `fin` when its FIN was delivered with every byte before it (RFC
    /// 9293 §3.6: an orderly close); false when the connection ended otherwise (RST, a new SYN on
    /// the 5-tuple, end of capture).
    End {
        /// The direction.
        dir: Dir,
        /// Ended by its FIN.
        fin: bool,
        /// This direction's side sent a RST.
        reset: bool,
        /// This direction's side had acknowledged every byte the other direction sent before
        /// its FIN (false when the other direction has no FIN yet): what the other side sent
        /// reached this side's host.
        peer_acked: bool,
        /// The other side had acknowledged every byte this direction delivered: they reached
        /// its host (for a direction a RST ended, before the reset).
        acked_by_peer: bool,
    },
    /// The capture ended while the connection was still open (no RST, not both FINs): what
    /// it carried next is unknown. Followed by the End and Close events.
    CaptureEnd,
    /// The connection ended (both directions, RST, or end of capture).
    Close,
}

/// What a stream sink learns about the flow an event belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowMeta {
    /// Index of the flow (`F<index>`).
    pub index: usize,
    /// The endpoints; `ends[0]` sent direction 0.
    pub ends: [(IpAddr, u16); 2],
    /// Whether a SYN fixed the client: then direction 0 is the client's.
    pub client_by_syn: bool,
}

impl FlowMeta {
    /// `F<index>`.
    pub fn flow_id(&self) -> String {
        FlowId(self.index).to_string()
    }
}

/// Receives stream events, with the flow they belong to and the time and frame that caused them.
pub trait StreamSink {
    /// One event. `ts` is microseconds since the Unix epoch; `frame` the frame that completed it.
    fn event(&mut self, flow: FlowMeta, ev: StreamEvent<'_>, ts: i64, frame: u64);
}

/// Hands every event to two sinks, the first first.
pub struct Tee<'a, A, B>(pub &'a mut A, pub &'a mut B);

impl<A: StreamSink, B: StreamSink> StreamSink for Tee<'_, A, B> {
    fn event(&mut self, flow: FlowMeta, ev: StreamEvent<'_>, ts: i64, frame: u64) {
        self.0.event(flow, ev, ts, frame);
        self.1.event(flow, ev, ts, frame);
    }
}

/// A sink that ignores everything.
pub struct NoSink;

impl StreamSink for NoSink {
    fn event(&mut self, _: FlowMeta, _: StreamEvent<'_>, _: i64, _: u64) {}
}

type Key = ((IpAddr, u16), (IpAddr, u16));

/// How long a connection ended by a RST stays open for segments the network still delivers
/// after it (reordered, or held back by a middlebox), in microseconds of capture time after its
/// latest segment: then it is closed as at the end of the capture (Zeek's `tcp_reset_delay` is
/// 5 s too), and its reassembly and HTTP state go. Capture time is the latest time of any
/// segment so far, moving at most [`CLOCK_STEP_US`] a segment ([`clock_after`]), so that a
/// connection's fate depends on the capture alone, not on which thread saw which segments, and
/// one frame stamped far ahead does not close every reset connection at once.
pub const RST_LINGER_US: i64 = 5_000_000;

/// The most the capture's clock moves on one segment, in microseconds: a jump ahead (a frame
/// with a bad time) counts as this much; a real pause in the traffic is caught up on over the
/// next segments.
pub const CLOCK_STEP_US: i64 = 1_000_000;

/// The capture's clock after a segment of time `ts`, from `clock` (`i64::MIN` before the first).
pub fn clock_after(clock: i64, ts: i64) -> i64 {
    if clock == i64::MIN {
        return ts;
    }
    clock.max(ts.min(clock.saturating_add(CLOCK_STEP_US)))
}

fn key_of(a: (IpAddr, u16), b: (IpAddr, u16)) -> Key {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// How long an ended connection stays in the table for the segments the network still delivers
/// after its end (trailing ACKs, retransmitted FINs, late bytes: `tcp.data_after_close`), in µs
/// of capture time after its close or latest segment, whichever is later: then only its row
/// stays ([`FlowRow`]), its state is released, and a segment of its address pair opens another
/// connection.
pub const RETIRE_US: i64 = 5_000_000;

/// Bytes of one block of the table's row log (a row is at most about 80 bytes).
const ROW_BLOCK: usize = 1 << 20;

/// A flow of the table: live (its whole state), or ended and retired to its row, encoded at
/// this offset of the table's row log.
#[derive(Debug)]
enum Slot {
    Live(Box<Flow>),
    Done(usize),
}

/// All connections of a run.
#[derive(Debug, Default)]
pub struct FlowTable {
    /// Every flow, in order of first packet (in chunks: a flood of connections does not move
    /// them all to a buffer twice the size).
    slots: crate::chunks::Chunks<Slot>,
    /// The rows of the flows retired, encoded end to end ([`FlowRow::encode`]) in blocks of
    /// [`ROW_BLOCK`] bytes (a row does not cross blocks): a growing log is never copied to a
    /// buffer twice its size.
    done: Vec<Vec<u8>>,
    /// Flows live (not retired).
    live: usize,
    /// Live flows in the order they were made or last given a second chance, for the eviction
    /// of the one idle longest when [`ReassemblyLimits::max_live_flows`] is reached (entries of
    /// flows retired since are skipped).
    lru: std::collections::VecDeque<usize>,
    /// Ended flows waiting to be retired, by when they may be ([`RETIRE_US`] after their latest
    /// segment, as far as known when queued).
    retiring: std::collections::BinaryHeap<std::cmp::Reverse<(i64, usize)>>,
    active: crate::hash::FastMap<Key, usize>,
    /// The address pair of the last segment and its flow (the entry of `active`): consecutive
    /// segments are mostly of one connection, and skip the lookup.
    last: Option<(Key, usize)>,
    /// Flows a RST ended and not yet closed, by when they may be ([`RST_LINGER_US`] after
    /// their latest segment, as far as known when queued: never later than that).
    reset: std::collections::BinaryHeap<std::cmp::Reverse<(i64, usize)>>,
    /// The latest segment time of the capture so far (µs since the Unix epoch).
    clock: i64,
    /// Reassembly limits.
    pub limits: ReassemblyLimits,
    /// The out-of-order bytes all the table's flows hold at once, up to
    /// [`ReassemblyLimits::max_ooo_total`].
    ooo_held: std::sync::Arc<crate::budget::Budget>,
    /// Reassembly anomalies: `tcp.ooo_buffer_full`, `tcp.overlap_conflict`, `tcp.data_after_close`.
    pub anomalies: Anomalies,
    /// Source of flow indices shared with other tables (one per vantage point), so `F<n>` is
    /// unique across them; `None`: the index is the position in `flows`.
    ids: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
}

impl FlowTable {
    /// A table with the given limits.
    pub fn new(limits: ReassemblyLimits) -> Self {
        FlowTable {
            limits,
            ooo_held: crate::budget::Budget::new(limits.max_ooo_total),
            clock: i64::MIN,
            ..Default::default()
        }
    }

    /// A table whose flow indices come from `ids`, shared with other tables (several vantage
    /// points of one analysis): a flow's index is then not its position.
    pub fn with_ids(
        limits: ReassemblyLimits,
        ids: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) -> Self {
        FlowTable {
            ids: Some(ids),
            ..FlowTable::new(limits)
        }
    }

    /// Reserve `n` consecutive flow indices for flows made elsewhere (the workers of
    /// [`crate::shard`]); returns the first.
    pub fn reserve_ids(&mut self, n: usize) -> usize {
        match &self.ids {
            Some(ids) => ids.fetch_add(n, std::sync::atomic::Ordering::Relaxed),
            None => self.slots.len(),
        }
    }

    /// Number of flows, live and retired.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the table has no flow.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Flows whose state is held now (not retired to their rows).
    pub fn live_count(&self) -> usize {
        self.live
    }

    fn live_mut(&mut self, i: usize) -> Option<&mut Flow> {
        match self.slots.get_mut(i)? {
            Slot::Live(f) => Some(f),
            Slot::Done(_) => None,
        }
    }

    fn live(&self, i: usize) -> Option<&Flow> {
        match self.slots.get(i)? {
            Slot::Live(f) => Some(f),
            Slot::Done(_) => None,
        }
    }

    /// The row of the flow at position `i`.
    fn row_at(&self, i: usize) -> Option<FlowRow> {
        match self.slots.get(i)? {
            Slot::Live(f) => Some(f.row()),
            Slot::Done(at) => FlowRow::decode(self.done.get(at / ROW_BLOCK)?, at % ROW_BLOCK),
        }
    }

    /// The rows of every flow, in order of first packet.
    pub fn rows(&self) -> impl Iterator<Item = FlowRow> + '_ {
        (0..self.slots.len()).filter_map(|i| self.row_at(i))
    }

    /// The row of the flow with index `index` (`F<index>`).
    pub fn row(&self, index: usize) -> Option<FlowRow> {
        let index_at = |i: usize| self.row_at(i).map_or(usize::MAX, |r| r.index);
        if index_at(index.min(self.slots.len().saturating_sub(1))) == index {
            return self.row_at(index);
        }
        // Indices grow with position: the first flow whose index is not below it.
        let (mut lo, mut hi) = (0, self.slots.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if index_at(mid) < index {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        self.row_at(lo).filter(|r| r.index == index)
    }

    /// Move every flow out, as rows (they are retired first: call after [`FlowTable::finish`]),
    /// in order of first packet.
    pub fn into_rows(mut self) -> Vec<FlowRow> {
        for i in 0..self.slots.len() {
            self.retire(i);
        }
        self.rows().collect()
    }

    /// Encode `row` into the row log; its offset.
    fn keep_row(&mut self, row: &FlowRow) -> usize {
        let mut buf = Vec::with_capacity(64);
        row.encode(&mut buf);
        let fits = self
            .done
            .last()
            .is_some_and(|b| b.len() + buf.len() <= ROW_BLOCK);
        if !fits {
            self.done.push(Vec::with_capacity(ROW_BLOCK.max(buf.len())));
        }
        let k = self.done.len() - 1;
        let block = &mut self.done[k];
        let at = k * ROW_BLOCK + block.len();
        block.extend_from_slice(&buf);
        at
    }

    /// Append rows of flows made elsewhere (the workers of [`crate::shard`]), already numbered.
    pub fn extend_rows(&mut self, rows: impl IntoIterator<Item = FlowRow>) {
        for r in rows {
            let at = self.keep_row(&r);
            self.slots.push(Slot::Done(at));
        }
    }

    /// Process one segment captured at `ts` in frame `frame`. Returns whether the table already
    /// had a flow for its address pair before it (`true` also for a SYN that reuses the pair,
    /// closing that flow and opening another; `false`: this segment opened the first one).
    pub fn segment(
        &mut self,
        seg: &Segment<'_>,
        ts: i64,
        frame: u64,
        sink: &mut impl StreamSink,
    ) -> bool {
        let clock = clock_after(self.clock, ts);
        self.segment_at(seg, ts, clock, frame, sink)
    }

    /// [`FlowTable::segment`] with the capture's clock given: [`clock_after`] over every
    /// segment of the capture up to this one, of which this table may see only some (a worker
    /// of [`crate::shard`]).
    pub fn segment_at(
        &mut self,
        seg: &Segment<'_>,
        ts: i64,
        clock: i64,
        frame: u64,
        sink: &mut impl StreamSink,
    ) -> bool {
        self.clock = self.clock.max(clock);
        // (Most segments find nothing due: the heaps are only peeked at.)
        if self.reset.peek().is_some_and(|r| r.0 .0 <= self.clock) {
            self.close_reset(sink);
        }
        if self.retiring.peek().is_some_and(|r| r.0 .0 <= self.clock) {
            self.retire_due();
        }
        let src = (seg.src, seg.sport);
        let dst = (seg.dst, seg.dport);
        let key = key_of(src, dst);
        let pure_syn = seg.syn && !seg.ack;
        let mut idx = match self.last {
            Some((k, i)) if k == key => Some(i),
            _ => self.active.get(&key).copied(),
        };
        let known = idx.is_some();
        if let Some(i) = idx {
            let Some(f) = self.live(i) else {
                debug_assert!(false, "an active flow is live");
                return known;
            };
            let d = if f.ends[0] == src { 0 } else { 1 };
            let new_isn = f.dirs[d]
                .base()
                .is_some_and(|b| b != seg.seq.wrapping_add(1));
            let reset = f.rst[0] || f.rst[1];
            let reused =
                pure_syn && (f.closed || reset || (new_isn && f.dirs[d].next_offset() > 0));
            if reused {
                self.close(i, ts, frame, sink);
                self.retire(i);
                idx = None;
            } else if f.closed {
                self.after_close(i, d, seg, ts, frame);
                self.last = Some((key, i));
                return known;
            }
        }
        let i = match idx {
            Some(i) => i,
            None => self.open(seg, src, dst, key, ts, frame, sink),
        };
        self.last = Some((key, i));
        self.carry(i, src, seg, ts, frame, sink);
        known
    }

    /// Trailing ACKs and retransmissions after the close of flow `i` (direction `d`): counted,
    /// nothing delivered; new bytes are said (`tcp.data_after_close`), not dropped silently.
    fn after_close(&mut self, i: usize, d: Dir, seg: &Segment<'_>, ts: i64, frame: u64) {
        let Some(f) = self.live_mut(i) else { return };
        f.packets[d] += 1;
        f.wire_bytes[d] += seg.wire_len as u64;
        if seg.wire_len > 0 {
            f.dirs[d].stats.retransmitted += 1;
        }
        f.ts_last = ts;
        f.ts_max = f.ts_max.max(ts);
        f.frame_last = frame;
        let late = match seg.wire_len {
            0 => 0,
            n => f.dirs[d].beyond(seg.seq, u64::from(n)),
        };
        if late > 0 {
            let flow_id = f.meta().flow_id();
            self.anomalies.add(Anomaly::new(
                Code::TcpDataAfterClose,
                Some(frame),
                Some(flow_id),
                format!("{late} bytes past the stream's end arrived after the connection was closed; not delivered"),
            ));
        }
    }

    /// A new flow for the segment's address pair; the one idle longest is evicted first when
    /// the table holds [`ReassemblyLimits::max_live_flows`] already.
    #[allow(clippy::too_many_arguments)]
    fn open(
        &mut self,
        seg: &Segment<'_>,
        src: (IpAddr, u16),
        dst: (IpAddr, u16),
        key: Key,
        ts: i64,
        frame: u64,
        sink: &mut impl StreamSink,
    ) -> usize {
        while self.live >= self.limits.max_live_flows.max(1) {
            if !self.evict(ts, frame, sink) {
                break;
            }
        }
        let local = self.slots.len();
        let index = match &self.ids {
            Some(ids) => ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            None => local,
        };
        // A SYN-ACK first means the sender is the server.
        let ends = if seg.syn && seg.ack {
            [dst, src]
        } else {
            [src, dst]
        };
        let mut dirs: [Reassembler; 2] = Default::default();
        for r in &mut dirs {
            r.draw_on(&self.ooo_held);
        }
        let flow = Flow {
            index,
            ends,
            client_by_syn: seg.syn,
            dirs,
            packets: [0; 2],
            wire_bytes: [0; 2],
            ts_first: ts,
            ts_last: ts,
            ts_max: ts,
            frame_first: frame,
            frame_last: frame,
            syn: [false; 2],
            fin: [false; 2],
            rst: [false; 2],
            end_frame: [0; 2],
            history: History::default(),
            closed: false,
            ended: [false; 2],
        };
        let meta = flow.meta();
        self.slots.push(Slot::Live(Box::new(flow)));
        self.live += 1;
        self.lru.push_back(local);
        self.active.insert(key, local);
        sink.event(meta, StreamEvent::Open, ts, frame);
        local
    }

    /// Evict the live flow idle longest (a flow active in the last second gets one more
    /// chance, a few at most): closed as at the end of the capture, its row kept, its state
    /// released, said (`tcp.flow_evicted`). False when no flow is live.
    fn evict(&mut self, ts: i64, frame: u64, sink: &mut impl StreamSink) -> bool {
        let mut chances = 16;
        while let Some(i) = self.lru.pop_front() {
            let Some(f) = self.live(i) else { continue };
            if chances > 0 && f.ts_max > self.clock.saturating_sub(1_000_000) {
                chances -= 1;
                self.lru.push_back(i);
                continue;
            }
            let (meta, last, idle) = (f.meta(), f.frame_last, ts.saturating_sub(f.ts_max));
            let ended = f.closed || f.rst[0] || f.rst[1] || (f.fin[0] && f.fin[1]);
            if !ended {
                sink.event(meta, StreamEvent::CaptureEnd, f.ts_last, last);
            }
            let (t, fl) = (f.ts_last, f.frame_last);
            self.close(i, t, fl, sink);
            self.retire(i);
            let max = self.limits.max_live_flows;
            self.anomalies.add_with(Code::TcpFlowEvicted, Some(frame), Some(meta.flow_id()), || {
                format!("{max} connections held live at once: this one, idle {} ms since frame {last}, was ended as at the end of the capture (what it carried later is read as a new connection)", idle / 1000)
            });
            return true;
        }
        false
    }

    /// Count segment `seg` on flow `i` (sent by `src`) and hand its bytes to reassembly.
    fn carry(
        &mut self,
        i: usize,
        src: (IpAddr, u16),
        seg: &Segment<'_>,
        ts: i64,
        frame: u64,
        sink: &mut impl StreamSink,
    ) {
        let limits = self.limits;
        let Some(flow) = self.live_mut(i) else { return };
        let d: Dir = if flow.ends[0] == src { 0 } else { 1 };
        flow.packets[d] += 1;
        flow.wire_bytes[d] += seg.wire_len as u64;
        flow.ts_last = ts;
        flow.ts_max = flow.ts_max.max(ts);
        flow.frame_last = frame;
        if seg.syn {
            flow.syn[d] = true;
            flow.note(d, if seg.ack { 'h' } else { 's' });
            flow.dirs[d].syn(seg.seq);
        }
        if seg.rst {
            if !flow.rst[0] && !flow.rst[1] {
                let due = flow.ts_max.saturating_add(RST_LINGER_US);
                self.reset.push(std::cmp::Reverse((due, i)));
            }
            let Some(flow) = self.live_mut(i) else { return };
            flow.rst[d] = true;
            flow.note(d, 'r');
            flow.dirs[d].rst(seg.seq);
        }
        let Some(flow) = self.live_mut(i) else { return };
        if (seg.fin || seg.rst) && flow.end_frame[d] == 0 {
            flow.end_frame[d] = frame;
        }
        if seg.fin {
            flow.fin[d] = true;
            flow.note(d, 'f');
        }
        if seg.wire_len > 0 {
            flow.note(d, 'd');
        }
        let meta = flow.meta();
        // Ack-triggered gaps of the peer direction first, then this segment's data, in stream
        // order; in-order payload goes to the sink straight from the frame, uncopied.
        if seg.ack {
            let peer = 1 - d;
            flow.dirs[peer].peer_ack(seg.ack_no, &mut |c| {
                sink.event(meta, StreamEvent::Chunk(peer, c), ts, frame)
            });
        }
        let before = flow.dirs[d].stats;
        if !seg.syn || !seg.payload.is_empty() {
            let seq = if seg.syn {
                seg.seq.wrapping_add(1)
            } else {
                seg.seq
            };
            flow.dirs[d].segment(seq, seg.payload, seg.wire_len, seg.fin, &limits, &mut |c| {
                sink.event(meta, StreamEvent::Chunk(d, c), ts, frame)
            });
        }
        let after = flow.dirs[d].stats;
        self.reassembly_anomalies(before, after, meta, frame);
        // After a RST the connection is closed when a new SYN reuses the 5-tuple, when
        // `RST_LINGER_US` passed after its last segment, or at the end of the capture: segments
        // the network still delivers after it (reordered or held back by a middlebox) are in the
        // capture and must reach the stream, not be called missed.
        let Some(flow) = self.live_mut(i) else { return };
        if flow.dirs[d].finished() && !flow.ended[d] {
            flow.ended[d] = true;
            let peer_acked = flow.dirs[1 - d].fin_acked();
            let acked_by_peer = flow.dirs[d].all_acked();
            sink.event(
                flow.meta(),
                StreamEvent::End {
                    dir: d,
                    fin: true,
                    reset: false,
                    peer_acked,
                    acked_by_peer,
                },
                ts,
                frame,
            );
            if flow.dirs[1 - d].finished() {
                self.close(i, ts, frame, sink);
            }
        }
    }

    /// The anomalies of one segment's reassembly, from its direction's counters before and
    /// after it.
    #[inline]
    fn reassembly_anomalies(
        &mut self,
        before: DirStats,
        after: DirStats,
        meta: FlowMeta,
        frame: u64,
    ) {
        let limits = self.limits;
        if after.ooo_overflows > before.ooo_overflows {
            let detail = if after.ooo_total_overflows > before.ooo_total_overflows {
                format!(
                    "more than {} bytes waiting behind the holes of all connections at once; this connection's first hole became a gap",
                    limits.max_ooo_total
                )
            } else {
                format!(
                    "more than {} bytes waiting behind a hole; the hole became a gap",
                    limits.max_ooo_bytes
                )
            };
            self.anomalies.add(Anomaly::new(
                Code::TcpOooBufferFull,
                Some(frame),
                Some(meta.flow_id()),
                detail,
            ));
        }
        if after.overlap_conflicts > before.overlap_conflicts {
            let detail =
                "overlapping copies of the same stream bytes differ; one of them was delivered (the first at the same offset, else the one that starts first)"
                    .to_string();
            self.anomalies.add(Anomaly::new(
                Code::TcpOverlapConflict,
                Some(frame),
                Some(meta.flow_id()),
                detail,
            ));
        }
    }

    /// Close the flows a RST ended whose linger the clock passed (at their own last segment,
    /// as at the end of the capture); one that got segments since it was queued goes back in
    /// line. Every flow due is looked at: whether a flow is closed before one of its segments
    /// depends only on its own segments and the clock at that segment.
    fn close_reset(&mut self, sink: &mut impl StreamSink) {
        while let Some(&std::cmp::Reverse((due, i))) = self.reset.peek() {
            if self.clock < due {
                break;
            }
            self.reset.pop();
            let Some(f) = self.live(i) else { continue };
            if f.closed {
                continue;
            }
            let again = f.ts_max.saturating_add(RST_LINGER_US);
            if self.clock < again {
                self.reset.push(std::cmp::Reverse((again, i)));
                continue;
            }
            let (ts, frame) = (f.ts_last, f.frame_last);
            self.close(i, ts, frame, sink);
        }
    }

    /// Retire the ended flows whose [`RETIRE_US`] the clock passed since their latest segment;
    /// one that got segments since it was queued goes back in line.
    fn retire_due(&mut self) {
        while let Some(&std::cmp::Reverse((due, i))) = self.retiring.peek() {
            if self.clock < due {
                break;
            }
            self.retiring.pop();
            let Some(f) = self.live(i) else { continue };
            let again = f.ts_max.saturating_add(RETIRE_US);
            if self.clock < again {
                self.retiring.push(std::cmp::Reverse((again, i)));
                continue;
            }
            self.retire(i);
        }
    }

    /// Keep only the row of flow `i` (closed already): its state is released, and segments of
    /// its address pair from now on open another flow.
    fn retire(&mut self, i: usize) {
        let Some(f) = self.live(i) else { return };
        let key = key_of(f.ends[0], f.ends[1]);
        let row = f.row();
        let at = self.keep_row(&row);
        if self.active.get(&key) == Some(&i) {
            self.active.remove(&key);
        }
        if self.last.is_some_and(|(_, l)| l == i) {
            self.last = None;
        }
        if let Some(slot) = self.slots.get_mut(i) {
            *slot = Slot::Done(at);
        }
        self.live -= 1;
        // Entries of retired flows at the front of the eviction queue go at once.
        while let Some(&front) = self.lru.front() {
            if self.live(front).is_some() {
                break;
            }
            self.lru.pop_front();
        }
    }

    /// End a connection: flush both directions, emit the End and Close events. It waits
    /// [`RETIRE_US`] for trailing segments before it is retired to its row.
    fn close(&mut self, i: usize, ts: i64, frame: u64, sink: &mut impl StreamSink) {
        let Some(flow) = self.live_mut(i) else { return };
        if flow.closed {
            return;
        }
        let meta = flow.meta();
        for d in 0..2 {
            flow.dirs[d].flush(&mut |c| sink.event(meta, StreamEvent::Chunk(d, c), ts, frame));
            flow.dirs[d].release();
        }
        flow.closed = true;
        for d in 0..2 {
            if !flow.ended[d] {
                flow.ended[d] = true;
                let reset = flow.rst[d];
                let peer_acked = flow.dirs[1 - d].fin_acked();
                let acked_by_peer = flow.dirs[d].all_acked();
                sink.event(
                    meta,
                    StreamEvent::End {
                        dir: d,
                        fin: false,
                        reset,
                        peer_acked,
                        acked_by_peer,
                    },
                    ts,
                    frame,
                );
            }
        }
        sink.event(meta, StreamEvent::Close, ts, frame);
        // (A connection a RST ended is closed after its linger: it waits as long again.)
        let due = flow.ts_max.max(self.clock).saturating_add(RETIRE_US);
        self.retiring.push(std::cmp::Reverse((due, i)));
    }

    /// End of capture: close every open connection, in flow order, at its own last packet
    /// time, and retire every flow to its row.
    pub fn finish(&mut self, sink: &mut impl StreamSink) {
        let mut open: Vec<usize> = self.active.values().copied().collect();
        open.sort_unstable();
        for i in open {
            let Some(f) = self.live(i) else { continue };
            let (ts, frame) = (f.ts_last, f.frame_last);
            let ended = f.closed || f.rst[0] || f.rst[1] || (f.fin[0] && f.fin[1]);
            if !ended {
                sink.event(f.meta(), StreamEvent::CaptureEnd, ts, frame);
            }
            self.close(i, ts, frame, sink);
        }
        for i in 0..self.slots.len() {
            self.retire(i);
        }
        self.retiring.clear();
        self.reset.clear();
        self.lru.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records each event: (flow index, what, time, frame).
    #[derive(Default)]
    struct Rec(Vec<(usize, String, i64, u64)>);

    impl StreamSink for Rec {
        fn event(&mut self, flow: FlowMeta, ev: StreamEvent<'_>, ts: i64, frame: u64) {
            let what = match ev {
                StreamEvent::Open => "open".to_string(),
                StreamEvent::Chunk(d, Chunk::Data { bytes, .. }) => {
                    format!("data{d} {}", String::from_utf8_lossy(bytes))
                }
                StreamEvent::Chunk(d, Chunk::Gap { .. }) => format!("gap{d}"),
                StreamEvent::End { dir, .. } => format!("end{dir}"),
                StreamEvent::CaptureEnd => "capture_end".to_string(),
                StreamEvent::Close => "close".to_string(),
            };
            self.0.push((flow.index, what, ts, frame));
        }
    }

    fn seg<'a>(
        port: u16,
        to_server: bool,
        seq: u32,
        flags: &str,
        payload: &'a [u8],
    ) -> Segment<'a> {
        let (c, s) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]));
        let (src, dst, sport, dport) = if to_server {
            (c, s, port, 80)
        } else {
            (s, c, 80, port)
        };
        Segment {
            src,
            dst,
            sport,
            dport,
            seq,
            ack_no: 0,
            syn: flags.contains('S'),
            ack: false,
            fin: flags.contains('F'),
            rst: flags.contains('R'),
            payload,
            wire_len: payload.len() as u32,
        }
    }

    /// A connection ended by a RST takes segments for `RST_LINGER_US` after its last one, then
    /// is closed at that last segment, as at the end of the capture: its state does not wait
    /// for the end of the capture.
    #[test]
    fn a_reset_connection_closes_after_its_linger() {
        let mut t = FlowTable::new(ReassemblyLimits::default());
        let mut rec = Rec::default();
        let s = 1_000_000;
        t.segment(&seg(1000, true, 0, "S", b""), 0, 1, &mut rec);
        t.segment(&seg(1000, true, 1, "", b"GET"), s, 2, &mut rec);
        t.segment(&seg(1000, false, 0, "R", b""), 2 * s, 3, &mut rec);
        // Held back by the network, after the RST: still the stream's.
        t.segment(&seg(1000, true, 4, "", b" /"), 3 * s, 4, &mut rec);
        // Another connection, every second within the linger of the last segment, then past it.
        t.segment(&seg(2000, true, 0, "S", b""), 4 * s, 5, &mut rec);
        for k in 5..=7 {
            t.segment(&seg(2000, true, 1, "", b""), k * s, 5, &mut rec);
        }
        assert!(!rec.0.iter().any(|e| e.1 == "close"));
        t.segment(&seg(2000, true, 1, "", b"x"), 8 * s + 1, 6, &mut rec);
        let first: Vec<_> = rec.0.iter().filter(|e| e.0 == 0).cloned().collect();
        let close = first.iter().find(|e| e.1 == "close").expect("closed");
        assert_eq!((close.2, close.3), (3 * s, 4), "at its last segment");
        assert!(first.iter().any(|e| e.1 == "data0  /"), "{first:?}");
        // After the close, a late segment is not delivered, but said.
        let n = rec.0.len();
        t.segment(&seg(1000, true, 6, "", b"late"), 9 * s, 7, &mut rec);
        assert_eq!(rec.0.len(), n);
        let codes: Vec<_> = t.anomalies.rows.iter().map(|a| (a.code, a.frame)).collect();
        assert_eq!(codes, [(Code::TcpDataAfterClose, Some(7))]);
        t.finish(&mut rec);
        assert_eq!(rec.0.iter().filter(|e| e.1 == "close").count(), 2);
    }

    /// Out-of-order bytes are bounded for all connections at once too: three connections each
    /// held up behind a hole, each under its own limit, reach the table's; the connection that
    /// would add more declares its first hole a gap (said as the table's limit), and what it
    /// held is given back for the others.
    #[test]
    fn out_of_order_bytes_are_bounded_for_all_connections() {
        let limits = ReassemblyLimits {
            max_ooo_bytes: 1000,
            max_ooo_total: 1500,
            ..Default::default()
        };
        let mut t = FlowTable::new(limits);
        let mut rec = Rec::default();
        let data = [b'x'; 450];
        for (k, port) in [1000, 2000, 3000].into_iter().enumerate() {
            let frame = 10 * k as u64;
            t.segment(&seg(port, true, 0, "S", b""), 0, frame + 1, &mut rec);
            // One byte missing at the start, then 450 bytes behind it.
            t.segment(&seg(port, true, 2, "", &data), 0, frame + 2, &mut rec);
        }
        // 3 x (450 + ENTRY_COST) is over 1500: the third connection's hole became a gap.
        let rows: Vec<_> = t
            .anomalies
            .rows
            .iter()
            .map(|a| (a.code, a.frame, a.detail.contains("all connections")))
            .collect();
        assert_eq!(rows, [(Code::TcpOooBufferFull, Some(22), true)]);
        assert!(
            rec.0.iter().any(|e| e.0 == 2 && e.1.starts_with("gap")),
            "{:?}",
            rec.0
        );
        assert!(!rec.0.iter().any(|e| e.0 < 2 && e.1.starts_with("gap")));
        assert_eq!(t.ooo_held.held(), 2 * (450 + reassembly::ENTRY_COST));
        t.finish(&mut rec);
        assert_eq!(t.ooo_held.held(), 0);
    }

    /// A table that sees only a connection's segments (a worker of `--threads N`), its clock
    /// moved by the capture's, makes the same events for it as one that sees every segment:
    /// also when another connection's times jump ahead and back.
    #[test]
    fn the_linger_does_not_depend_on_the_segments_a_table_sees() {
        let s = 1_000_000;
        let segs = [
            (1000, true, 0, "S", &b""[..], 0),
            (1000, true, 1, "", b"GET", s),
            (1000, false, 0, "R", b"", 2 * s),
            (2000, true, 0, "S", b"", 100 * s),
            (1000, true, 4, "", b" /", 2 * s + 1),
            (2000, true, 1, "", b"x", 3 * s),
            (1000, true, 6, "", b" H", 3 * s),
        ];
        let mut all = FlowTable::new(ReassemblyLimits::default());
        let mut one = FlowTable::new(ReassemblyLimits::default());
        let (mut ra, mut ro) = (Rec::default(), Rec::default());
        let mut clock = i64::MIN;
        for (k, &(port, up, seq, flags, payload, ts)) in segs.iter().enumerate() {
            clock = clock_after(clock, ts);
            let frame = k as u64 + 1;
            all.segment(&seg(port, up, seq, flags, payload), ts, frame, &mut ra);
            if port == 1000 {
                let s = seg(port, up, seq, flags, payload);
                one.segment_at(&s, ts, clock, frame, &mut ro);
            }
        }
        all.finish(&mut ra);
        one.finish(&mut ro);
        let of_first = |r: &Rec| -> Vec<(String, i64, u64)> {
            r.0.iter()
                .filter(|e| e.0 == 0)
                .map(|e| (e.1.clone(), e.2, e.3))
                .collect()
        };
        assert_eq!(of_first(&ra), of_first(&ro));
        // One frame stamped 98 s ahead moves the clock by `CLOCK_STEP_US`: the reset connection
        // still takes its late segments.
        let got: Vec<String> = of_first(&ra).into_iter().map(|e| e.0).collect();
        assert!(got.contains(&"data0  /".to_string()) && got.contains(&"data0  H".to_string()));
    }
}
