//! HTTP/2 connections (RFC 9113) read as exchanges, one per stream.
//!
//! A connection enters HTTP/2 by the client's connection preface (prior knowledge, RFC 9113
//! §3.3, or ALPN `h2` inside TLS: the preface is the first plaintext either way), by a server
//! whose first bytes are its SETTINGS frame (its preface, §3.4; a TLS 1.3 server often sends it
//! before the client's preface is seen), or by a 101 to `Upgrade: h2c` (RFC 7540 §3.2), whose
//! request becomes stream 1. Each direction's bytes go through a [`frame::FrameReader`]; its
//! header blocks (HEADERS or PUSH_PROMISE and their CONTINUATIONs) are decoded by HPACK
//! (RFC 7541, the `loona-hpack` crate) with one dynamic table per direction. A header block the
//! capture lost in part, or that does not decode, leaves that table unknown: every later block
//! of the direction is counted as `h2.headers_undecodable`, never decoded against a wrong table.
//!
//! Every stream is one [`Exchange`] (its `trans_depth` the stream's place on the connection,
//! its `h2_stream` the stream identifier), driven through the same steps as an HTTP/1.x
//! exchange: the request head from the HEADERS, DATA as the body (so an event stream is read
//! by the same SSE stage), END_STREAM as the end of each side. RST_STREAM (§6.4) ends a stream
//! as a reset ends an HTTP/1.x connection: its response is cut, read to the reset when the
//! server sent it, left by the client when the client did. A GOAWAY (§6.8) ends the streams
//! past its last stream identifier unanswered. PRIORITY, PING, WINDOW_UPDATE and frame types
//! RFC 9113 does not define are passed over (§5.5). Trailers end their side; their fields are
//! not kept.

pub mod frame;

use std::collections::BTreeMap;

use super::{on_event, BodyRule, Conn, Ctx, ReadEnd};
use crate::anomaly::Code;
use crate::http::{H2End, Head, HttpEvent, HttpLimits};
use crate::tcp::Dir;
use frame::{flag, kind, FrameEvent, FrameHeader, FrameReader, PREFACE};

/// Most streams of one connection read at once; the frames of streams past it are counted
/// (`h2.too_many_streams`) and not read. Servers commonly allow 100 to 250 (RFC 9113 §6.5.2
/// `SETTINGS_MAX_CONCURRENT_STREAMS`).
pub const MAX_STREAMS: usize = 1024;

/// Largest HPACK dynamic table a direction is decoded with, in bytes (RFC 7541 §4.2: the
/// decoding side's `SETTINGS_HEADER_TABLE_SIZE`, 4,096 by default).
const MAX_TABLE: usize = 1 << 20;

/// Index of a role: the client's direction, the server's.
pub(super) const CLIENT: usize = 0;
pub(super) const SERVER: usize = 1;

/// The HTTP/2 state of a connection.
pub(super) struct H2Conn {
    readers: [FrameReader; 2],
    rest: State,
    /// Capture time (µs) and frame of the last bytes read, for what the close tells.
    last: (i64, u64),
    /// Bytes of the client's connection preface still to come before its frames (after an
    /// upgrade to h2c the client sends it in its direction's new protocol, RFC 9113 §3.4).
    preface_left: usize,
    /// What the frame readers and header blocks hold, drawn on the stage's held-bytes budget
    /// ([`super::HttpOptions::held`]).
    charge: crate::budget::Charge,
}

impl std::fmt::Debug for H2Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2Conn")
            .field("streams", &self.rest.streams.len())
            .finish_non_exhaustive()
    }
}

/// What an [`H2Conn`] keeps besides its frame readers.
struct State {
    hpack: [loona_hpack::Decoder<'static>; 2],
    /// Whether each direction's dynamic table is still known.
    hpack_ok: [bool; 2],
    /// The header block in progress of each direction.
    block: [Option<Block>; 2],
    streams: BTreeMap<u32, Stream>,
    /// The `trans_depth` of the connection's last exchange.
    depth: u32,
    /// The connection's client direction and its two ends, for the streams' exchanges.
    client_dir: Option<Dir>,
    ends: [(std::net::IpAddr, u16); 2],
    limits: HttpLimits,
    /// Bytes handed on before the reader of their direction took over (after the preface or
    /// the 101, in the same segment).
    pub(super) pending: [Vec<u8>; 2],
    /// Streams refused for [`MAX_STREAMS`] (their frames are passed over).
    refused: std::collections::BTreeSet<u32>,
    /// The highest stream id opened, of even ids (the server's) and of odd ids (the client's):
    /// a stream at or below it that is not open is closed (RFC 9113 §5.1.1).
    max_opened: [u32; 2],
    /// Streams closed by a RST_STREAM (the latest [`MAX_STREAMS`]): frames the peer had sent
    /// before it saw the reset are ignored on them without a word (RFC 9113 §5.4.2).
    reset_ids: std::collections::BTreeSet<u32>,
}

/// A header block in progress: HEADERS or PUSH_PROMISE, then CONTINUATIONs (RFC 9113 §4.3).
struct Block {
    stream: u32,
    end_stream: bool,
    /// PUSH_PROMISE: the promised stream.
    promised: Option<u32>,
    bytes: Vec<u8>,
}

/// How far one side of a stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// No head yet.
    Idle,
    /// The head was read; the body may follow.
    Open,
    /// Ended (END_STREAM, a reset, the connection's end), or given up.
    Ended,
}

/// One stream: its exchange, kept in a connection state of its own (one exchange).
struct Stream {
    x: Box<Conn>,
    req: Side,
    resp: Side,
}

impl H2Conn {
    /// The HTTP/2 state of a connection whose client direction is `client_dir`, after `depth`
    /// exchanges of HTTP/1.x.
    pub(super) fn new(conn: &Conn, limits: HttpLimits) -> Box<H2Conn> {
        let decoder = || {
            let mut d = loona_hpack::Decoder::new();
            d.set_max_allowed_table_size(4096);
            d
        };
        Box::new(H2Conn {
            readers: [
                FrameReader::new(limits.max_header_bytes),
                FrameReader::new(limits.max_header_bytes),
            ],
            rest: State {
                hpack: [decoder(), decoder()],
                hpack_ok: [true, true],
                block: [None, None],
                streams: BTreeMap::new(),
                depth: conn.depth,
                client_dir: conn.client_dir,
                ends: conn.ends,
                limits,
                pending: [Vec::new(), Vec::new()],
                refused: Default::default(),
                max_opened: [0, 0],
                reset_ids: Default::default(),
            },
            last: (0, 0),
            preface_left: 0,
            charge: crate::budget::Charge::default(),
        })
    }

    /// A connection upgraded to h2c by a 101 (RFC 7540 §3.2): its upgrade request, already
    /// read, is stream 1, whose response comes as HTTP/2 frames.
    pub(super) fn upgraded(conn: &mut Conn, limits: HttpLimits) -> Box<H2Conn> {
        let mut h2 = H2Conn::new(conn, limits);
        h2.preface_left = PREFACE.len();
        let at = conn.next_resp;
        if conn.req_idx.is_none() && at + 1 == conn.exchanges.len() {
            let mut e = conn.exchanges.pop().unwrap_or_default();
            // The client's settings, in force from the 101 (RFC 7540 §3.2.1).
            if let Some(v) = e.req_header("http2-settings").and_then(base64url) {
                h2.rest.settings(CLIENT, &v);
            }
            e.h2_stream = Some(1);
            let mut x = h2.rest.stream_conn();
            x.depth = e.trans_depth;
            x.exchanges.push(e);
            x.req_idx = None;
            h2.rest.streams.insert(
                1,
                Stream {
                    x,
                    req: Side::Ended,
                    resp: Side::Idle,
                },
            );
        }
        h2
    }

    /// Hand on bytes read before the reader of role `r` took over.
    pub(super) fn hold(&mut self, r: usize, bytes: &[u8]) {
        self.rest.pending[r].extend_from_slice(bytes);
    }

    /// Bytes of role `r` (0 the client's, 1 the server's), pending ones first.
    pub(super) fn push(&mut self, r: usize, bytes: &[u8], cx: &mut Ctx<'_>) {
        self.last = (cx.ts, cx.frame);
        let pending = std::mem::take(&mut self.rest.pending[r]);
        for mut b in [&pending[..], bytes] {
            if r == CLIENT && self.preface_left > 0 && !b.is_empty() {
                b = self.preface(b, cx);
            }
            if b.is_empty() {
                continue;
            }
            let rest = &mut self.rest;
            self.readers[r].push(b, &mut |ev| rest.on_frame(r, ev, cx));
        }
        self.charge_held(r, cx);
    }

    /// What the connection holds at once, charged to the stage's budget: refused, the
    /// direction `r` that pushed is not read further (`http.memory_budget`), and its open
    /// streams are cut there.
    fn charge_held(&mut self, r: usize, cx: &mut Ctx<'_>) {
        self.charge.draw_on(&cx.opts.held);
        let held = self.held();
        if self.charge.hold(held) {
            return;
        }
        cx.anomaly(
            Code::HttpMemoryBudget,
            format!(
                "{held} bytes of HTTP/2 frames and header blocks not kept: the bytes held at once for the connections of one thread reached their bound; the {} direction is not read further",
                if r == CLIENT { "client's" } else { "server's" }
            ),
        );
        self.readers[r].abandon();
        self.rest.stop(r, cx);
        let _ = self.charge.hold(self.held());
    }

    /// Bytes held: of frames in progress, and of header blocks.
    fn held(&self) -> usize {
        let blocks: usize = self
            .rest
            .block
            .iter()
            .flatten()
            .map(|b| b.bytes.len())
            .sum();
        self.readers[0].held() + self.readers[1].held() + blocks
    }

    /// The client's bytes `b` where its preface is awaited: what follows the preface in them.
    /// Bytes that are no preface are said, and read as frames.
    fn preface<'b>(&mut self, b: &'b [u8], cx: &mut Ctx<'_>) -> &'b [u8] {
        let at = PREFACE.len() - self.preface_left;
        let n = self.preface_left.min(b.len());
        if b[..n] != PREFACE[at..at + n] {
            self.preface_left = 0;
            cx.anomaly(
                Code::H2BadFrame,
                "the client's bytes after the upgrade to h2c are no connection preface".into(),
            );
            return b;
        }
        self.preface_left -= n;
        &b[n..]
    }

    /// `len` bytes of role `r` missing from the capture.
    pub(super) fn gap(&mut self, r: usize, len: u64, cx: &mut Ctx<'_>) {
        if r == CLIENT && self.preface_left > 0 {
            // (A gap in the preface: its bytes are taken as the preface's.)
            let n = self
                .preface_left
                .min(usize::try_from(len).unwrap_or(usize::MAX));
            self.preface_left -= n;
            let len = len - n as u64;
            if len > 0 {
                let rest = &mut self.rest;
                self.readers[r].gap(len, &mut |ev| rest.on_frame(r, ev, cx));
            }
            return;
        }
        let rest = &mut self.rest;
        self.readers[r].gap(len, &mut |ev| rest.on_frame(r, ev, cx));
    }

    /// Role `r`'s direction ended (its FIN or reset); `read`: how the other side read it to
    /// its end, when it acknowledged every byte ([`ReadEnd`]); `open_at_end`: the capture ended
    /// first.
    pub(super) fn end(
        &mut self,
        r: usize,
        read: Option<ReadEnd>,
        open_at_end: bool,
        cx: &mut Ctx<'_>,
    ) {
        self.last = (cx.ts, cx.frame);
        if self.readers[r].mid_frame() && !self.readers[r].is_lost() && !open_at_end {
            cx.anomaly(
                Code::H2BadFrame,
                format!(
                    "the {} direction ended inside a frame",
                    if r == CLIENT { "client's" } else { "server's" }
                ),
            );
        }
        self.rest.end_all(r, read, open_at_end, cx);
    }

    /// The connection is closed: what its streams hold becomes exchanges.
    pub(super) fn close(&mut self, open_at_end: bool, cx: &mut Ctx<'_>) {
        (cx.ts, cx.frame) = self.last;
        for r in [CLIENT, SERVER] {
            if self.readers[r].skipped > 0 {
                cx.anomaly(
                    Code::H2FramingLost,
                    format!(
                        "{} bytes of the {} direction not read after its reading stopped (frame boundaries lost, or the held-bytes bound)",
                        self.readers[r].skipped,
                        if r == CLIENT { "client's" } else { "server's" }
                    ),
                );
            }
            self.rest.end_all(r, None, open_at_end, cx);
        }
        let ids: Vec<u32> = self.rest.streams.keys().copied().collect();
        for id in ids {
            self.rest.finish(id, true, cx);
        }
    }
}

impl State {
    /// A connection state for one stream's exchange.
    fn stream_conn(&self) -> Box<Conn> {
        let mut x = Box::new(Conn::new_blank(self.ends));
        x.client_dir = self.client_dir;
        x
    }

    /// One frame event of role `r`.
    fn on_frame(&mut self, r: usize, ev: FrameEvent<'_>, cx: &mut Ctx<'_>) {
        match ev {
            FrameEvent::Frame(h, payload) => self.frame(r, h, payload, cx),
            FrameEvent::TooLong(h) | FrameEvent::Cut(h) => {
                let cut = matches!(ev, FrameEvent::Cut(_));
                if !cut {
                    cx.anomaly(
                        Code::H2FrameTooLong,
                        format!(
                            "{} frame of {} bytes on stream {} passed over",
                            kind_name(h.kind),
                            h.len,
                            h.stream
                        ),
                    );
                }
                if matches!(
                    h.kind,
                    kind::HEADERS | kind::CONTINUATION | kind::PUSH_PROMISE
                ) {
                    if cut {
                        cx.anomaly(
                            Code::H2HeadersUndecodable,
                            format!(
                                "header block of stream {}: bytes of it lost to a capture gap",
                                h.stream
                            ),
                        );
                    }
                    self.block_lost(r, h.stream, cx);
                }
            }
            FrameEvent::Data(h, bytes) => self.side_event(r, h.stream, HttpEvent::Body(bytes), cx),
            FrameEvent::DataGap(h, len) => {
                self.side_event(r, h.stream, HttpEvent::BodyGap(len), cx)
            }
            FrameEvent::DataEnd(h) => {
                self.expect_no_block(r, cx);
                if h.stream == 0 {
                    cx.anomaly(Code::H2BadFrame, "DATA frame on stream 0".into());
                } else if !self.streams.contains_key(&h.stream) && !self.closed(h.stream) {
                    if !self.refused.contains(&h.stream) {
                        cx.anomaly(
                            Code::H2BadFrame,
                            format!("DATA frame on stream {}, never opened", h.stream),
                        );
                    }
                } else if h.has(flag::END_STREAM) {
                    self.end_side(r, h.stream, true, cx);
                }
            }
            FrameEvent::BadPadding(h) => cx.anomaly(
                Code::H2BadFrame,
                format!(
                    "DATA frame of stream {} with a pad length past its payload",
                    h.stream
                ),
            ),
            FrameEvent::Lost(len) => self.lost(r, len, cx),
            FrameEvent::Resynced(skipped) => {
                if skipped > 0 {
                    self.gap_all(r, skipped, cx);
                }
            }
        }
    }

    /// A whole frame other than DATA.
    fn frame(&mut self, r: usize, h: FrameHeader, p: &[u8], cx: &mut Ctx<'_>) {
        if h.kind != kind::CONTINUATION {
            self.expect_no_block(r, cx);
        }
        // Connection frames on a stream, stream frames on the connection (RFC 9113 §6).
        let on_conn = matches!(h.kind, kind::SETTINGS | kind::PING | kind::GOAWAY);
        let on_stream = matches!(h.kind, kind::RST_STREAM | kind::PRIORITY);
        if (on_conn && h.stream != 0) || (on_stream && h.stream == 0) {
            cx.anomaly(
                Code::H2BadFrame,
                format!("{} frame on stream {}", kind_name(h.kind), h.stream),
            );
            return;
        }
        match h.kind {
            kind::HEADERS | kind::PUSH_PROMISE => self.block_start(r, h, p, cx),
            kind::CONTINUATION => match self.block[r].as_mut() {
                Some(b) if b.stream == h.stream => {
                    if b.bytes.len() + p.len() > self.limits.max_header_bytes {
                        self.block[r] = None;
                        cx.anomaly(
                            Code::H2FrameTooLong,
                            format!("header block of stream {} over the bound", h.stream),
                        );
                        self.block_lost(r, h.stream, cx);
                    } else {
                        b.bytes.extend_from_slice(p);
                        if h.has(flag::END_HEADERS) {
                            self.block_end(r, cx);
                        }
                    }
                }
                _ => {
                    cx.anomaly(
                        Code::H2BadFrame,
                        format!("CONTINUATION of stream {} without its HEADERS", h.stream),
                    );
                    self.block_lost(r, h.stream, cx);
                }
            },
            kind::RST_STREAM => {
                let code = p
                    .get(..4)
                    .map_or(0, |c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
                self.reset(r, h.stream, code, false, cx);
            }
            kind::GOAWAY => {
                let last = p
                    .get(..4)
                    .map_or(u32::MAX, |c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
                    & 0x7fff_ffff;
                let code = p
                    .get(4..8)
                    .map_or(0, |c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
                // The streams the receiver opened past `last` were not processed (§6.8).
                let parity = if r == SERVER { 1 } else { 0 };
                let past: Vec<u32> = self
                    .streams
                    .range(last.saturating_add(1)..)
                    .map(|(&id, _)| id)
                    .filter(|id| id % 2 == parity)
                    .collect();
                for id in past {
                    self.reset(r, id, code, true, cx);
                }
            }
            kind::SETTINGS if !h.has(flag::ACK) => self.settings(r, p),
            _ => {}
        }
    }

    /// The SETTINGS parameters `p` of role `r` (RFC 9113 §6.5.1): SETTINGS_HEADER_TABLE_SIZE
    /// bounds the dynamic table of the other direction's blocks (never below the initial
    /// 4,096 the other side may use until it has seen the setting, at most [`MAX_TABLE`]).
    fn settings(&mut self, r: usize, p: &[u8]) {
        for s in p.chunks_exact(6) {
            if u16::from_be_bytes([s[0], s[1]]) == 0x1 {
                let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]) as usize;
                self.hpack[1 - r].set_max_allowed_table_size(v.clamp(4096, MAX_TABLE));
            }
        }
    }

    /// A header block that is not continued is cut by any other frame (RFC 9113 §6.10).
    fn expect_no_block(&mut self, r: usize, cx: &mut Ctx<'_>) {
        if let Some(b) = self.block[r].take() {
            cx.anomaly(
                Code::H2BadFrame,
                format!(
                    "header block of stream {} cut by another frame before END_HEADERS",
                    b.stream
                ),
            );
            self.block_lost(r, b.stream, cx);
        }
    }

    /// A HEADERS or PUSH_PROMISE frame: its fragment, padding and priority removed.
    fn block_start(&mut self, r: usize, h: FrameHeader, p: &[u8], cx: &mut Ctx<'_>) {
        let mut at = 0usize;
        let mut end = p.len();
        if h.has(flag::PADDED) {
            let pad = usize::from(p.first().copied().unwrap_or(0));
            at = 1;
            end = end.saturating_sub(pad);
        }
        let mut promised = None;
        if h.kind == kind::PUSH_PROMISE {
            promised = p
                .get(at..at + 4)
                .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) & 0x7fff_ffff);
            at += 4;
        } else if h.has(flag::PRIORITY) {
            at += 5;
        }
        if at > end || h.stream == 0 || (h.kind == kind::PUSH_PROMISE && promised.is_none()) {
            cx.anomaly(
                Code::H2BadFrame,
                format!(
                    "{} frame of stream {} too short for its padding and fields",
                    kind_name(h.kind),
                    h.stream
                ),
            );
            self.block_lost(r, h.stream, cx);
            return;
        }
        self.block[r] = Some(Block {
            stream: h.stream,
            end_stream: h.kind == kind::HEADERS && h.has(flag::END_STREAM),
            promised,
            bytes: p[at..end].to_vec(),
        });
        if h.has(flag::END_HEADERS) {
            self.block_end(r, cx);
        }
    }

    /// A header block lost (cut by the capture, over the bound, malformed): the dynamic table
    /// of its direction is unknown from here on, and the head of its stream is unknown.
    fn block_lost(&mut self, r: usize, stream: u32, cx: &mut Ctx<'_>) {
        self.block[r] = None;
        self.hpack_ok[r] = false;
        self.head_unknown(r, stream, cx);
    }

    /// A header block is whole: decoded, and applied to its stream.
    fn block_end(&mut self, r: usize, cx: &mut Ctx<'_>) {
        let Some(b) = self.block[r].take() else {
            return;
        };
        let request = r == CLIENT || b.promised.is_some();
        let decoded = if self.hpack_ok[r] {
            match decode(&mut self.hpack[r], &b.bytes, request, &self.limits) {
                Ok(d) => Some(d),
                Err(Undecoded::Hpack(why)) => {
                    self.hpack_ok[r] = false;
                    cx.anomaly(
                        Code::H2HeadersUndecodable,
                        format!("header block of stream {}: {why}", b.stream),
                    );
                    None
                }
                Err(Undecoded::Head(why)) => {
                    // (Decoded: the table is in step; only this head is unknown.)
                    cx.anomaly(
                        Code::H2BadFrame,
                        format!("header block of stream {}: {why}", b.stream),
                    );
                    None
                }
            }
        } else {
            cx.anomaly(
                Code::H2HeadersUndecodable,
                format!(
                    "header block of stream {}: the dynamic table was lost with an earlier block",
                    b.stream
                ),
            );
            None
        };
        if let Some(d) = decoded.as_ref().filter(|d| d.dropped > 0) {
            cx.anomaly(
                Code::HttpTooManyHeaders,
                format!(
                    "header block of stream {}: {} fields past the bounds on a head ({} fields, {} bytes) not kept",
                    b.stream, d.dropped, self.limits.max_headers, self.limits.max_header_bytes
                ),
            );
        }
        self.apply_block(r, b, decoded, cx);
    }

    /// A decoded header block (`None`: unknown) applied to its stream: a request or response
    /// head, trailers, or a promised request.
    fn apply_block(&mut self, r: usize, b: Block, decoded: Option<Decoded>, cx: &mut Ctx<'_>) {
        if let Some(promised) = b.promised {
            // A pushed request: the server's promise is its head (RFC 9113 §8.4).
            match decoded {
                Some(d) if r == SERVER && !d.plain && self.open(promised, cx) => {
                    self.request_head(promised, d.head, true, cx);
                }
                Some(_) if r == CLIENT => cx.anomaly(
                    Code::H2BadFrame,
                    format!("PUSH_PROMISE from the client on stream {}", b.stream),
                ),
                _ => {}
            }
            return;
        }
        let open = |s: &Stream| if r == CLIENT { s.req } else { s.resp } == Side::Open;
        match decoded {
            // Trailers: they end their side (their fields are not kept).
            Some(d) if d.plain => {
                if !self.streams.get(&b.stream).is_some_and(open) {
                    cx.anomaly(
                        Code::H2BadFrame,
                        format!(
                            "header block of stream {} without pseudo-header fields, and no message to end",
                            b.stream
                        ),
                    );
                } else if b.end_stream {
                    self.end_side(r, b.stream, true, cx);
                }
            }
            Some(_) if r == CLIENT && b.stream.is_multiple_of(2) => cx.anomaly(
                Code::H2BadFrame,
                format!("a request on stream {}, an even (server) id", b.stream),
            ),
            Some(d) if r == CLIENT => {
                if self.open(b.stream, cx) {
                    self.request_head(b.stream, d.head, b.end_stream, cx);
                }
            }
            Some(d) => {
                if self.open(b.stream, cx) {
                    self.response_head(b.stream, d.head, b.end_stream, cx);
                }
            }
            None => {
                self.head_unknown(r, b.stream, cx);
                if b.end_stream {
                    self.end_side(r, b.stream, true, cx);
                }
            }
        }
    }

    /// The stream `id`, opened if new (bounded by [`MAX_STREAMS`]); false when refused.
    fn open(&mut self, id: u32, cx: &mut Ctx<'_>) -> bool {
        if self.streams.contains_key(&id) {
            return true;
        }
        if self.refused.contains(&id) {
            return false;
        }
        if self.closed(id) {
            if !self.reset_ids.contains(&id) {
                cx.anomaly(
                    Code::H2BadFrame,
                    format!("a header block on stream {id}, which had closed"),
                );
            }
            return false;
        }
        self.max_opened[(id % 2) as usize] = id;
        if self.streams.len() >= MAX_STREAMS {
            if self.refused.len() < MAX_STREAMS {
                self.refused.insert(id);
            }
            cx.anomaly(
                Code::H2TooManyStreams,
                format!("stream {id} not read: {MAX_STREAMS} streams are open"),
            );
            return false;
        }
        let x = self.stream_conn();
        self.streams.insert(
            id,
            Stream {
                x,
                req: Side::Idle,
                resp: Side::Idle,
            },
        );
        true
    }

    /// Whether stream `id` was opened and is closed now.
    fn closed(&self, id: u32) -> bool {
        !self.streams.contains_key(&id) && id <= self.max_opened[(id % 2) as usize]
    }

    /// The request head of stream `id`.
    fn request_head(&mut self, id: u32, head: Head, end_stream: bool, cx: &mut Ctx<'_>) {
        let depth = self.depth;
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        if s.req != Side::Idle {
            // Trailers (RFC 9113 §8.1): they end the request.
            if end_stream {
                self.end_side(CLIENT, id, true, cx);
            }
            return;
        }
        self.depth += 1;
        s.x.depth = depth;
        cx.is_request = true;
        on_event(&mut s.x, HttpEvent::Head(head), cx);
        if let Some(e) = s.x.exchanges.last_mut() {
            e.h2_stream = Some(id);
        }
        s.req = Side::Open;
        if end_stream {
            self.end_side(CLIENT, id, true, cx);
        }
    }

    /// A response head (final, interim, or trailers) of stream `id`.
    fn response_head(&mut self, id: u32, head: Head, end_stream: bool, cx: &mut Ctx<'_>) {
        let depth = self.depth;
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        if s.resp == Side::Open {
            if end_stream {
                self.end_side(SERVER, id, true, cx);
            }
            return;
        }
        if s.resp == Side::Ended {
            return;
        }
        let interim = (100..200).contains(&head.status);
        cx.is_request = false;
        if s.x.exchanges.len() <= s.x.next_resp {
            // No request read for it: its exchange begins here.
            self.depth += 1;
            s.x.depth = depth;
        }
        let rule = on_event(&mut s.x, HttpEvent::Head(head), cx);
        if let Some(e) = s.x.exchanges.last_mut() {
            e.h2_stream = Some(id);
        }
        if interim {
            on_event(&mut s.x, HttpEvent::End { complete: true }, cx);
            return;
        }
        s.resp = Side::Open;
        if end_stream || rule == BodyRule::None {
            self.end_side(SERVER, id, end_stream, cx);
        }
    }

    /// The head of role `r` on stream `id` is unknown: a request is marked cut; a response
    /// is marked as lost, and its DATA passed over.
    fn head_unknown(&mut self, r: usize, id: u32, cx: &mut Ctx<'_>) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        if r == CLIENT && s.req == Side::Idle {
            s.req = Side::Ended;
        } else if r == SERVER && s.resp == Side::Idle {
            s.resp = Side::Ended;
            if let Some(e) = s.x.exchanges.get_mut(s.x.next_resp) {
                e.resp_gap = true;
            }
        }
        self.maybe_finish(id, cx);
    }

    /// A body event of role `r` on stream `id`.
    fn side_event(&mut self, r: usize, id: u32, ev: HttpEvent<'_>, cx: &mut Ctx<'_>) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let side = if r == CLIENT { s.req } else { s.resp };
        if side != Side::Open {
            return;
        }
        cx.is_request = r == CLIENT;
        on_event(&mut s.x, ev, cx);
    }

    /// Role `r`'s side of stream `id` ended: whole (END_STREAM) or cut.
    fn end_side(&mut self, r: usize, id: u32, complete: bool, cx: &mut Ctx<'_>) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let side = if r == CLIENT { &mut s.req } else { &mut s.resp };
        if *side == Side::Open {
            cx.is_request = r == CLIENT;
            on_event(&mut s.x, HttpEvent::End { complete }, cx);
        }
        *side = Side::Ended;
        self.maybe_finish(id, cx);
    }

    /// RST_STREAM (or a GOAWAY past the stream, `goaway`) from role `r` on stream `id` with
    /// error `code`: what is open of the stream ends cut.
    fn reset(&mut self, r: usize, id: u32, code: u32, goaway: bool, cx: &mut Ctx<'_>) {
        let frame = cx.frame;
        if !goaway {
            self.reset_ids.insert(id);
            if self.reset_ids.len() > MAX_STREAMS {
                self.reset_ids.pop_first();
            }
        }
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let streaming = s.resp == Side::Open;
        // A server that answered whole may stop the rest of the request with NO_ERROR (RFC
        // 9113 §8.1): the request is what it needed, not one the capture cut.
        let answered = r == SERVER && code == 0 && s.resp == Side::Ended;
        if let Some(e) = s.x.exchanges.get_mut(s.x.emitted) {
            e.h2_end = Some(H2End {
                by_client: r == CLIENT,
                code,
                frame,
                goaway,
            });
            if r == CLIENT && streaming && e.request.is_some() {
                e.client_closed = true;
            }
            if r == SERVER && streaming && !e.resp_gap {
                // Frames arrive in order: the client's HTTP/2 stack read the DATA before it.
                e.resp_read = Some(ReadEnd::Reset);
            }
        }
        self.end_side(CLIENT, id, answered, cx);
        self.end_side(SERVER, id, false, cx);
    }

    /// A gap of `len` bytes took role `r`'s framing (the reader looks for it again): the
    /// direction's header compression is lost from here on, and every open side of it has a
    /// gap, since the bytes lost may be any stream's.
    fn lost(&mut self, r: usize, len: u64, cx: &mut Ctx<'_>) {
        self.block[r] = None;
        self.hpack_ok[r] = false;
        cx.anomaly(
            Code::H2FramingLost,
            format!(
                "a gap of {len} bytes took the frame boundaries of the {} direction; its later header blocks are not decoded",
                if r == CLIENT { "client's" } else { "server's" }
            ),
        );
        self.gap_all(r, len, cx);
    }

    /// `len` bytes of role `r` not read (lost, or passed over to find the framing again), of
    /// no known stream: a gap in every open side of the direction.
    fn gap_all(&mut self, r: usize, len: u64, cx: &mut Ctx<'_>) {
        let ids: Vec<u32> = self.streams.keys().copied().collect();
        for id in ids {
            self.side_event(r, id, HttpEvent::BodyGap(len), cx);
            if let Some(s) = self.streams.get_mut(&id) {
                if r == SERVER && s.resp == Side::Idle {
                    if let Some(e) = s.x.exchanges.get_mut(s.x.next_resp) {
                        e.resp_gap = true;
                    }
                }
            }
        }
    }

    /// Role `r`'s direction is not read further: its open sides end cut.
    fn stop(&mut self, r: usize, cx: &mut Ctx<'_>) {
        self.block[r] = None;
        self.hpack_ok[r] = false;
        self.gap_all(r, 0, cx);
        let ids: Vec<u32> = self.streams.keys().copied().collect();
        for id in ids {
            self.end_side(r, id, false, cx);
        }
    }

    /// Role `r`'s direction ended: what is open of it ends cut.
    fn end_all(&mut self, r: usize, read: Option<ReadEnd>, open_at_end: bool, cx: &mut Ctx<'_>) {
        let ids: Vec<u32> = self.streams.keys().copied().collect();
        for id in ids {
            let Some(s) = self.streams.get_mut(&id) else {
                continue;
            };
            s.x.open_at_end = open_at_end;
            let open = if r == CLIENT { s.req } else { s.resp } == Side::Open;
            if r == SERVER && open && !open_at_end {
                if let Some(e) = s.x.exchanges.get_mut(s.x.emitted) {
                    if !e.resp_gap {
                        e.resp_read = read;
                    }
                }
            }
            if r == CLIENT && !open_at_end && s.resp == Side::Open {
                if let Some(e) = s.x.exchanges.get_mut(s.x.emitted) {
                    e.client_closed |= e.request.is_some();
                }
            }
            self.end_side(r, id, false, cx);
        }
    }

    /// A stream whose both sides ended is done.
    fn maybe_finish(&mut self, id: u32, cx: &mut Ctx<'_>) {
        if self
            .streams
            .get(&id)
            .is_some_and(|s| s.req == Side::Ended && s.resp == Side::Ended)
        {
            self.finish(id, false, cx);
        }
    }

    /// Stream `id`'s exchange goes out, with what it holds (`closing`: the connection closed).
    fn finish(&mut self, id: u32, closing: bool, cx: &mut Ctx<'_>) {
        let Some(mut s) = self.streams.remove(&id) else {
            return;
        };
        let open_at_end = s.x.open_at_end;
        for mut e in s.x.exchanges.drain(s.x.emitted..) {
            (e.req_body, e.resp_body) = (None, None);
            e.open_at_capture_end |= closing && open_at_end && !e.resp_complete;
            if e.request.is_some() || e.response.is_some() {
                cx.done.push(e);
            }
        }
    }
}

/// Why a header block gave no head.
enum Undecoded {
    /// HPACK could not decode it: the direction's dynamic table is unknown from here on.
    Hpack(String),
    /// It decoded (the table is in step) but is no valid head: a pseudo-header missing or bad.
    Head(String),
}

/// What one header block decoded to.
struct Decoded {
    head: Head,
    /// Whether it had no pseudo-header: trailers (RFC 9113 §8.1), when its side is open.
    plain: bool,
    /// Fields not kept past the bounds on a head (count, bytes).
    dropped: usize,
}

/// Decode a header block. A request's head (`request`) takes `:method`, `:path` (a CONNECT's
/// `:authority`) and `:authority` (as `host` when no `host` field is sent), a response's
/// `:status` (RFC 9113 §8.3); other pseudo-header fields are not kept, and regular fields are
/// kept in order, at most [`HttpLimits::max_headers`] of them and
/// [`HttpLimits::max_header_bytes`] in all (each counted as RFC 7541 §4.1 sizes an entry:
/// name, value and 32), so that an entry of the dynamic table referenced again and again does
/// not grow a head without bound. The whole block is decoded either way, keeping the table in
/// step. A block without pseudo-header fields is trailers (`plain`), and not checked as a head.
fn decode(
    dec: &mut loona_hpack::Decoder<'static>,
    block: &[u8],
    request: bool,
    limits: &HttpLimits,
) -> Result<Decoded, Undecoded> {
    let mut head = Head::default();
    let (mut authority, mut bad) = (None, None);
    let (mut fields, mut bytes, mut dropped, mut pseudo) = (0usize, 0usize, 0usize, false);
    dec.decode_with_cb(block, |name, value| {
        if name.first() == Some(&b':') {
            pseudo = true;
        }
        let size = name.len() + value.len() + 32;
        if name.first() != Some(&b':') {
            fields += 1;
            bytes += size;
            if fields > limits.max_headers || bytes > limits.max_header_bytes {
                dropped += 1;
                return;
            }
        } else if size > limits.max_header_bytes {
            bad = Some("a pseudo-header field over the bound on a head".to_string());
            return;
        }
        let name = String::from_utf8_lossy(&name);
        let value = String::from_utf8_lossy(&value);
        match &*name {
            ":method" => head.method = value.into_owned(),
            ":path" => head.target = value.into_owned(),
            ":authority" => authority = Some(value.into_owned()),
            ":status" => match value.parse::<u16>() {
                Ok(s) if (100..1000).contains(&s) => head.status = s,
                _ => bad = Some(format!(":status {value:?} is no status code")),
            },
            n if n.starts_with(':') => {}
            n => head.push_header(n, &value),
        }
    })
    .map_err(|e| Undecoded::Hpack(format!("HPACK: {e}")))?;
    if let Some(why) = bad {
        return Err(Undecoded::Head(why));
    }
    let plain = !pseudo;
    if request && !plain {
        if head.method.is_empty() {
            return Err(Undecoded::Head("request without :method".into()));
        }
        if let Some(a) = authority {
            if head.method == "CONNECT" && head.target.is_empty() {
                head.target = a.clone();
            }
            if head.header("host").is_none() {
                head.push_header("host", &a);
            }
        }
    } else if !request && !plain && head.status == 0 {
        return Err(Undecoded::Head("response without :status".into()));
    }
    head.version = 2;
    Ok(Decoded {
        head,
        plain,
        dropped,
    })
}

/// The bytes of unpadded base64url text (RFC 4648 §5), as `HTTP2-Settings` carries them;
/// `None` for text that is not (padding is allowed).
fn base64url(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.trim().trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// The name of a frame type (RFC 9113 §6).
fn kind_name(k: u8) -> &'static str {
    match k {
        kind::DATA => "DATA",
        kind::HEADERS => "HEADERS",
        kind::PRIORITY => "PRIORITY",
        kind::RST_STREAM => "RST_STREAM",
        kind::SETTINGS => "SETTINGS",
        kind::PUSH_PROMISE => "PUSH_PROMISE",
        kind::PING => "PING",
        kind::GOAWAY => "GOAWAY",
        kind::WINDOW_UPDATE => "WINDOW_UPDATE",
        kind::CONTINUATION => "CONTINUATION",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::frame::{flag, kind};
    use crate::anomaly::Code;
    use crate::http::{HttpLayer, HttpOptions, ReadEnd};
    use crate::tcp::{Chunk, FlowMeta, StreamEvent, StreamSink};
    use std::net::{IpAddr, Ipv4Addr};

    fn frame(k: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut v = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        v.extend([k, flags]);
        v.extend(stream.to_be_bytes());
        v.extend(payload);
        v
    }

    /// A header block of literal fields without indexing (RFC 7541 §6.2.2), no Huffman.
    fn block(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut v = Vec::new();
        for (n, val) in fields {
            v.push(0);
            v.push(n.len() as u8);
            v.extend(n.as_bytes());
            v.push(val.len() as u8);
            v.extend(val.as_bytes());
        }
        v
    }

    use super::frame::PREFACE;

    /// One connection with a SYN: the client's bytes and the server's, pushed turn by turn,
    /// then the given ends.
    fn run(turns: &[(usize, Vec<u8>)], options: HttpOptions) -> HttpLayer {
        run_flow(turns, options, true)
    }

    /// [`run`], with or without a SYN telling the client (direction 0).
    fn run_flow(turns: &[(usize, Vec<u8>)], options: HttpOptions, syn: bool) -> HttpLayer {
        let a = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let flow = FlowMeta {
            index: 0,
            ends: [(a, 40000), (a, 80)],
            client_by_syn: syn,
        };
        let mut http = HttpLayer::new(options);
        http.event(flow, StreamEvent::Open, 0, 0);
        let mut off = [0u64; 2];
        for (i, (d, bytes)) in turns.iter().enumerate() {
            let ev = StreamEvent::Chunk(
                *d,
                Chunk::Data {
                    offset: off[*d],
                    bytes,
                },
            );
            off[*d] += bytes.len() as u64;
            http.event(flow, ev, 1000 + i as i64, 1 + i as u64);
        }
        let n = turns.len() as u64 + 1;
        for dir in [0, 1] {
            let end = StreamEvent::End {
                dir,
                fin: true,
                reset: false,
                peer_acked: true,
                acked_by_peer: true,
            };
            http.event(flow, end, 5000, n + dir as u64);
        }
        http.event(flow, StreamEvent::Close, 5000, n + 2);
        http
    }

    fn request(stream: u32) -> Vec<u8> {
        let mut v = frame(
            kind::HEADERS,
            flag::END_HEADERS,
            stream,
            &block(&[
                (":method", "POST"),
                (":path", "/mcp"),
                (":authority", "mcp.example"),
                ("content-type", "application/json"),
                ("mcp-session-id", "s1"),
            ]),
        );
        v.extend(frame(
            kind::DATA,
            flag::END_STREAM,
            stream,
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count"}}"#,
        ));
        v
    }

    fn sse_head(stream: u32) -> Vec<u8> {
        frame(
            kind::HEADERS,
            flag::END_HEADERS,
            stream,
            &block(&[(":status", "200"), ("content-type", "text/event-stream")]),
        )
    }

    const EVENT: &[u8] =
        b"id: 7\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n";

    #[test]
    fn a_stream_is_an_exchange_with_its_event_stream() {
        let settings = frame(kind::SETTINGS, 0, 0, &[]);
        let mut client = PREFACE.to_vec();
        client.extend(&settings);
        client.extend(request(1));
        let mut server = settings.clone();
        server.extend(sse_head(1));
        server.extend(frame(kind::DATA, 0, 1, EVENT));
        server.extend(frame(kind::DATA, flag::END_STREAM, 1, b""));
        let http = run(&[(0, client), (1, server)], HttpOptions::default());
        let ex: Vec<_> = http.exchanges.iter().collect();
        assert_eq!(ex.len(), 1);
        let e = ex[0];
        assert_eq!(
            (e.h2_stream, e.trans_depth, e.method()),
            (Some(1), 1, "POST")
        );
        assert_eq!(e.http_version(), Some("2"));
        assert_eq!(e.req_header("host"), Some("mcp.example"));
        assert_eq!(e.req_header("mcp-session-id"), Some("s1"));
        assert_eq!((e.status(), e.is_sse, e.resp_complete), (200, true, true));
        assert_eq!(e.sse.events.len(), 1);
        assert_eq!(e.rpc.request[0].method.as_deref(), Some("tools/call"));
        assert!(
            http.anomalies.counts.is_empty(),
            "{:?}",
            http.anomalies.counts
        );
    }

    /// No SYN was captured, and the server's SETTINGS come first (here in direction 0, as
    /// when the capture saw the server's packet first): it is taken as the server.
    #[test]
    fn a_server_speaking_first_without_a_syn_is_the_server() {
        let settings = frame(kind::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]);
        let mut server = settings.clone();
        server.extend(sse_head(1));
        server.extend(frame(kind::DATA, flag::END_STREAM, 1, EVENT));
        let mut client = PREFACE.to_vec();
        client.extend(&settings);
        client.extend(request(1));
        // The server's SETTINGS come in two pieces, the first shorter than a frame header.
        let turns = [
            (0, server[..4].to_vec()),
            (0, server[4..9 + 6].to_vec()),
            (1, client),
            (0, server[9 + 6..].to_vec()),
        ];
        let http = run_flow(&turns, HttpOptions::default(), false);
        let ex: Vec<_> = http.exchanges.iter().collect();
        assert_eq!(ex.len(), 1);
        assert_eq!((ex[0].method(), ex[0].status()), ("POST", 200));
        assert_eq!(ex[0].client_port, Some(80), "the client is direction 1");
        assert!(ex[0].resp_complete);
        assert!(
            http.anomalies.counts.is_empty(),
            "{:?}",
            http.anomalies.counts
        );
        // The client's preface first, still without a SYN: the same.
        let turns = [(1, turns[2].1.clone()), (0, server)];
        let http = run_flow(&turns, HttpOptions::default(), false);
        let ex: Vec<_> = http.exchanges.iter().collect();
        assert_eq!(ex.len(), 1);
        assert_eq!(
            (ex[0].method(), ex[0].status(), ex[0].client_port),
            ("POST", 200, Some(80))
        );
    }

    #[test]
    fn a_server_reset_cuts_the_stream_and_the_connection_goes_on() {
        let mut client = PREFACE.to_vec();
        client.extend(request(1));
        let mut server = sse_head(1);
        server.extend(frame(kind::DATA, 0, 1, EVENT));
        // RST_STREAM INTERNAL_ERROR (0x2) on stream 1; stream 3 goes on whole.
        server.extend(frame(kind::RST_STREAM, 0, 1, &2u32.to_be_bytes()));
        let mut later = request(3);
        later.extend(frame(kind::RST_STREAM, 0, 5, &8u32.to_be_bytes()));
        let mut answer = sse_head(3);
        answer.extend(frame(kind::DATA, flag::END_STREAM, 3, EVENT));
        let turns = [(0, client), (1, server), (0, later), (1, answer)];
        let http = run(&turns, HttpOptions::default());
        let mut ex: Vec<_> = http.exchanges.iter().collect();
        ex.sort_by_key(|e| e.h2_stream);
        assert_eq!(ex.len(), 2);
        let cut = ex[0];
        assert!(!cut.resp_complete && !cut.open_at_capture_end);
        assert_eq!(cut.resp_read, Some(ReadEnd::Reset));
        let end = cut.h2_end.unwrap();
        assert_eq!(end.describe(), "RST_STREAM INTERNAL_ERROR from server");
        assert_eq!(end.frame, 2);
        assert_eq!(cut.sse.events.len(), 1);
        assert!(ex[1].resp_complete && ex[1].h2_end.is_none());
        assert_eq!(ex[1].trans_depth, 2);
    }

    /// A server that answered whole stops the rest of the request with RST_STREAM NO_ERROR
    /// (RFC 9113 §8.1): the request is not taken as cut.
    #[test]
    fn a_reset_after_a_whole_answer_leaves_the_request_whole() {
        let mut client = PREFACE.to_vec();
        let mut req = request(1);
        // The request's DATA without END_STREAM (its flags byte): the client would go on.
        let body = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count"}}"#;
        let data_at = req.len() - 9 - body.len();
        req[data_at + 4] = 0;
        client.extend(req);
        let mut server = sse_head(1);
        server.extend(frame(kind::DATA, flag::END_STREAM, 1, EVENT));
        server.extend(frame(kind::RST_STREAM, 0, 1, &0u32.to_be_bytes()));
        let http = run(&[(0, client), (1, server)], HttpOptions::default());
        let ex: Vec<_> = http.exchanges.iter().collect();
        assert_eq!(ex.len(), 1);
        assert!(!ex[0].req_gap && ex[0].resp_complete);
        assert_eq!(ex[0].rpc.request.len(), 1);
        assert_eq!(
            ex[0].h2_end.unwrap().describe(),
            "RST_STREAM NO_ERROR from server"
        );
        assert!(
            http.anomalies.counts.is_empty(),
            "{:?}",
            http.anomalies.counts
        );
    }

    #[test]
    fn a_goaway_ends_the_streams_past_its_last_id_unanswered() {
        let mut client = PREFACE.to_vec();
        client.extend(request(1));
        client.extend(request(3));
        let mut server = sse_head(1);
        // GOAWAY: last stream 1, NO_ERROR.
        let mut goaway = 1u32.to_be_bytes().to_vec();
        goaway.extend(0u32.to_be_bytes());
        server.extend(frame(kind::GOAWAY, 0, 0, &goaway));
        server.extend(frame(kind::DATA, flag::END_STREAM, 1, EVENT));
        let http = run(&[(0, client), (1, server)], HttpOptions::default());
        let mut ex: Vec<_> = http.exchanges.iter().collect();
        ex.sort_by_key(|e| e.h2_stream);
        assert_eq!(ex.len(), 2);
        assert!(ex[0].resp_complete);
        assert!(ex[1].response.is_none());
        assert_eq!(
            ex[1].h2_end.unwrap().describe(),
            "GOAWAY NO_ERROR from server"
        );
    }

    #[test]
    fn a_header_block_cut_by_a_gap_leaves_later_blocks_undecodable() {
        let mut client = PREFACE.to_vec();
        let first = request(1);
        // The HEADERS frame's payload loses 4 bytes to a gap (the framing is kept).
        client.extend(&first[..12]);
        let a = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let flow = FlowMeta {
            index: 0,
            ends: [(a, 40000), (a, 80)],
            client_by_syn: true,
        };
        let mut http = HttpLayer::new(HttpOptions::default());
        http.event(flow, StreamEvent::Open, 0, 0);
        let n = client.len() as u64;
        let data = StreamEvent::Chunk(
            0,
            Chunk::Data {
                offset: 0,
                bytes: &client,
            },
        );
        http.event(flow, data, 1, 1);
        let gap = StreamEvent::Chunk(0, Chunk::Gap { offset: n, len: 4 });
        http.event(flow, gap, 2, 2);
        let mut rest = first[16..].to_vec();
        rest.extend(request(3));
        let data = StreamEvent::Chunk(
            0,
            Chunk::Data {
                offset: n + 4,
                bytes: &rest,
            },
        );
        http.event(flow, data, 3, 3);
        http.event(flow, StreamEvent::Close, 4, 4);
        // Stream 3's block is literal, but after a lost block the table is unknown: it is
        // not decoded (it could index entries the lost block added).
        assert_eq!(http.anomalies.count(Code::H2HeadersUndecodable), 2);
        assert_eq!(http.exchanges.iter().count(), 0);
    }

    #[test]
    fn http2_settings_are_base64url() {
        // SETTINGS_HEADER_TABLE_SIZE 65536, SETTINGS_ENABLE_PUSH 0 (curl's header).
        assert_eq!(
            super::base64url("AAEAAQAAAAIAAAAA").unwrap(),
            [0, 1, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0]
        );
        assert_eq!(
            super::base64url("AAMAAABkAAQAoAAAAAIAAAAA").unwrap().len(),
            18
        );
        assert!(super::base64url("not base64!").is_none());
    }

    #[test]
    fn frames_over_the_held_bytes_budget_stop_the_direction() {
        let options = HttpOptions {
            held: crate::budget::Budget::new(2048),
            ..HttpOptions::default()
        };
        // A header block of 6 KiB in CONTINUATION frames, never ended.
        let mut client = PREFACE.to_vec();
        client.extend(frame(kind::HEADERS, 0, 1, &[0x82; 2000]));
        for _ in 0..2 {
            client.extend(frame(kind::CONTINUATION, 0, 1, &[0x82; 2000]));
        }
        let http = run(&[(0, client)], options);
        assert_eq!(http.anomalies.count(Code::HttpMemoryBudget), 1);
    }
}
