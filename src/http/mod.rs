//! HTTP/1.x exchanges over reassembled TCP streams (RFC 9112), and HTTP/2 ones ([`h2`],
//! RFC 9113): each HTTP/2 stream is one exchange, read through the same steps.
//!
//! [`HttpLayer`] is the [`StreamSink`] of the flow table: for each
//! connection it decides which direction carries requests (the SYN sender,
//! else the side whose first bytes are a request line), runs a
//! [`framing::DirParser`] per direction, pairs responses with requests in
//! order (keep-alive, pipelining; interim 1xx responses do not consume a
//! request), feeds `text/event-stream` bodies to the SSE parser as they
//! arrive, and parses JSON bodies and SSE `data` as JSON-RPC.

pub mod coding;
pub mod events;
pub mod framing;
pub mod h2;
mod headless;

use std::collections::HashMap;

use crate::anomaly::{Anomalies, Anomaly, Code};
use crate::jsonrpc::{self, Message};
use crate::sse::{SseEvent, SseLimits, SseParser};
use crate::tcp::{Chunk, Dir, FlowId, FlowMeta, StreamEvent, StreamSink};
pub use framing::{BodyRule, DirParser, Head, HttpEvent, HttpLimits};
use headless::HeadlessScan;
pub use headless::{sse_start, SseSearch};

/// Largest non-SSE body kept for JSON parsing, in bytes (anomaly `http.body_too_large`).
pub const MAX_JSON_BODY: usize = 16 << 20;

pub use events::{Brief, EventLog, EventRec, MessageRef, Messages, SseMeta};

/// How a headless exchange ([`Exchange::headless`]) was entered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Headless {
    /// Bytes of its direction skipped before the reading started (`http.headless_sse`).
    pub skipped: u64,
    /// Time of the last of them, µs since the Unix epoch.
    pub skipped_ts: Option<i64>,
}

/// One request/response exchange (Zeek http.log row).
#[derive(Debug, Clone, Default)]
pub struct Exchange {
    /// Index of the flow.
    pub flow_index: usize,
    /// The client's address (the side that sent the request), when known.
    pub client: Option<std::net::IpAddr>,
    /// The client's port (Zeek `orig_p`), when the client side is known.
    pub client_port: Option<u16>,
    /// The server's address and port (Zeek `resp_h`, `resp_p`), when the client side is known.
    pub server: Option<(std::net::IpAddr, u16)>,
    /// 64-bit hash of the request body as received (bounded like `req_body`; [`crate::hash::hash64`]),
    /// to recognise one request seen at two hops of a proxy.
    pub req_body_hash: u64,
    /// 1-based position of the exchange on its connection (Zeek `trans_depth`).
    pub trans_depth: u32,
    /// The request head, when captured.
    pub request: Option<Head>,
    /// Time of the request's first byte (µs since the Unix epoch).
    pub ts_request: Option<i64>,
    /// Frame of the request's first byte.
    pub frame_request: Option<u64>,
    /// Request body bytes on the wire (after de-chunking).
    pub req_body_len: u64,
    /// Request body while it arrives (bounded by [`MAX_JSON_BODY`]); dropped once parsed.
    pub(crate) req_body: Option<Box<Body>>,
    /// Whether bytes of the request were missing from the capture.
    pub req_gap: bool,
    /// Interim (1xx) status codes received before the final response.
    pub interim: Vec<u16>,
    /// The final response head, when captured.
    pub response: Option<Head>,
    /// Time of the response's first byte.
    pub ts_response: Option<i64>,
    /// Frame of the response's first byte.
    pub frame_response: Option<u64>,
    /// Time the response ended (last byte, or connection close).
    pub ts_end: Option<i64>,
    /// Frame of the response's last byte.
    pub frame_last: Option<u64>,
    /// Time of the response's last head or body byte (µs since the Unix epoch): unlike
    /// `ts_end`, not moved by the connection's close, so `ts_end - ts_last_byte` is how long
    /// the response was idle before it ended.
    pub ts_last_byte: Option<i64>,
    /// Response body bytes after de-chunking.
    pub resp_body_len: u64,
    /// Response body when not SSE, while it arrives (bounded); dropped once parsed.
    pub(crate) resp_body: Option<Box<Body>>,
    /// Whether bytes of the response were missing from the capture.
    pub resp_gap: bool,
    /// Whether the response ended as its framing said (false: cut by close, reset or gap).
    pub resp_complete: bool,
    /// Whether a response cut short was read by the client up to the cut, none of its bytes
    /// missing: the server closed the connection with a FIN and the client then closed its side
    /// with a FIN too, having acknowledged every byte the server sent; or the server reset the
    /// connection after the client had acknowledged every byte it sent. The acknowledgment
    /// shows the bytes reached the client's host, wherever the capture was taken. A socket closed
    /// with unread data sends a reset, not a FIN (RFC 9293 §3.6); data that arrived before a
    /// reset stays readable on Linux and the BSDs, though RFC 9293 §3.10.7.4 lets a receiver
    /// discard it (Windows does). Behind a proxy, the "client" is the proxy.
    pub resp_read: Option<ReadEnd>,
    /// Whether the client ended its side of the connection (its FIN, or a reset it sent) while
    /// this exchange's response was streaming, before the server ended its side — MCP
    /// 2026-07-28's cancellation.
    pub client_closed: bool,
    /// Whether the response is `text/event-stream`.
    pub is_sse: bool,
    /// When the capture began inside this response's body: neither its request nor its head
    /// was captured, and its event stream was found by its own framing
    /// ([`sse_start`]). `ts_response` and `frame_response` are then those of the
    /// segment its reading starts in.
    pub headless: Option<Headless>,
    /// What the response's event stream carried, when it was one.
    pub sse: SseFacts,
    /// The response body was decoded from a content coding.
    pub resp_coded: bool,
    /// The JSON-RPC messages of the JSON bodies.
    pub rpc: RpcFacts,
    /// The start of an error response's body (status 400 or more, not an event stream): up to
    /// [`EXCERPT_CHARS`] characters, UTF-8 (invalid sequences replaced), whitespace runs as one
    /// space, for findings to quote what the server said.
    pub resp_excerpt: Option<String>,
    /// The capture ended while this exchange was still in progress on an open connection:
    /// its response (or more of it) may have come after the capture stopped.
    pub open_at_capture_end: bool,
    /// The HTTP/2 stream identifier of the exchange (RFC 9113 §5.1.1); `None` for HTTP/1.x.
    pub h2_stream: Option<u32>,
    /// How the HTTP/2 stream ended other than by END_STREAM: a RST_STREAM, or a GOAWAY whose
    /// last stream identifier is below it.
    pub h2_end: Option<H2End>,
}

/// How an HTTP/2 stream was ended by a RST_STREAM (RFC 9113 §6.4) or a GOAWAY (§6.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H2End {
    /// Whether the client sent it (else the server).
    pub by_client: bool,
    /// Its error code (RFC 9113 §7: 0x8 CANCEL, 0x7 REFUSED_STREAM, …).
    pub code: u32,
    /// The frame it came in.
    pub frame: u64,
    /// A GOAWAY, not a RST_STREAM.
    pub goaway: bool,
}

impl H2End {
    /// What ended the stream, as the `exchanges` table's `h2_end` says it:
    /// `RST_STREAM CANCEL from client`, `GOAWAY NO_ERROR from server`.
    pub fn describe(&self) -> String {
        format!(
            "{} {} from {}",
            if self.goaway { "GOAWAY" } else { "RST_STREAM" },
            self.code_name(),
            if self.by_client { "client" } else { "server" }
        )
    }

    /// The error code's name (RFC 9113 §7), or its number in hex.
    pub fn code_name(&self) -> String {
        const NAMES: [&str; 14] = [
            "NO_ERROR",
            "PROTOCOL_ERROR",
            "INTERNAL_ERROR",
            "FLOW_CONTROL_ERROR",
            "SETTINGS_TIMEOUT",
            "STREAM_CLOSED",
            "FRAME_SIZE_ERROR",
            "REFUSED_STREAM",
            "CANCEL",
            "COMPRESSION_ERROR",
            "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY",
            "HTTP_1_1_REQUIRED",
        ];
        NAMES
            .get(self.code as usize)
            .map_or_else(|| format!("0x{:x}", self.code), |n| n.to_string())
    }
}

/// What a response's event stream carried (WHATWG HTML "server-sent events" §9.2.6), as the
/// [`crate::sse`] stage parsed it: kept with its exchange, which holds the HTTP facts.
#[derive(Debug, Clone, Default)]
pub struct SseFacts {
    /// SSE events in order (those kept: see `not_kept`).
    pub events: EventLog,
    /// Events of the response parsed but not kept, past the bounds on what is kept
    /// ([`crate::budget::Kept`]); when any, the exchange's `resp_gap` is set too: what rests on
    /// them cannot be judged.
    pub not_kept: u64,
    /// `notifications/progress` events kept, per progress token (compact JSON), in order of
    /// first appearance: counted as the events come, for the `calls` table.
    pub progress_counts: Vec<(crate::text::Short, u64)>,
    /// `data` (trimmed) of the first SSE event that names the stream's session
    /// ([`EventRole::NamesSession`]: for MCP, the legacy transport's `endpoint` event).
    pub session_event: Option<String>,
    /// SSE comment lines.
    pub comments: u64,
}

/// The JSON-RPC 2.0 messages of an exchange's JSON bodies, as [`crate::jsonrpc`] classified
/// them (an event stream's messages are in its [`SseFacts::events`]).
#[derive(Debug, Clone, Default)]
pub struct RpcFacts {
    /// Messages in the request body.
    pub request: Vec<Message>,
    /// The request body was a JSON array: a JSON-RPC batch (allowed by MCP 2025-03-26 only).
    pub request_batch: bool,
    /// Messages in a JSON response body.
    pub response: Vec<Message>,
}

/// A body while it arrives, with its part of the held-bytes budget ([`HttpOptions::held`]):
/// boxed in its exchange, and dropped once parsed (exchanges are kept to the end of the run).
#[derive(Debug, Clone, Default)]
pub(crate) struct Body {
    pub(crate) bytes: Vec<u8>,
    pub(crate) charge: crate::budget::Charge,
}

/// The body of `slot`, made when its first bytes come.
fn body(slot: &mut Option<Box<Body>>) -> &mut Body {
    slot.get_or_insert_with(Default::default)
}

impl Exchange {
    /// Whether the first complete SSE events of two responses agree (id and data): the mark of
    /// one response seen at two points. The first events of one (up to four) must come, in
    /// order, among the first events of the other (up to eight), as far as that one goes: a hop
    /// may lose events (`lost_in_transit`) but does not invent or reorder them.
    pub fn same_first_events(&self, other: &Exchange) -> bool {
        fn first(e: &Exchange, n: usize) -> Vec<(Option<&str>, u64)> {
            e.sse
                .events
                .iter()
                .filter(|ev| !ev.sse.truncated)
                .take(n)
                .map(|ev| (ev.sse.id, ev.data_hash))
                .collect()
        }
        // `short` in order within `long`, or `long` ran out first (a cut response).
        fn within(short: &[(Option<&str>, u64)], long: &[(Option<&str>, u64)], full: bool) -> bool {
            let mut rest = long.iter();
            let mut matched = 0;
            for ev in short {
                if rest.by_ref().any(|l| l == ev) {
                    matched += 1;
                } else {
                    break;
                }
            }
            matched == short.len() || (!full && matched == long.len().min(short.len()))
        }
        let (a8, b8) = (first(self, 8), first(other, 8));
        let (a4, b4) = (&a8[..a8.len().min(4)], &b8[..b8.len().min(4)]);
        within(a4, &b8, b8.len() == 8) || within(b4, &a8, a8.len() == 8)
    }

    /// Move every time of the exchange by `delta_us` (a vantage point's clock offset).
    pub fn shift_time(&mut self, delta_us: i64) {
        for t in [
            &mut self.ts_request,
            &mut self.ts_response,
            &mut self.ts_end,
            &mut self.ts_last_byte,
        ]
        .into_iter()
        .flatten()
        {
            *t = t.saturating_add(delta_us);
        }
        self.sse.events.shift_time(delta_us);
    }
    /// The HTTP version of the exchange: `2` for an HTTP/2 stream, else `1.1` or `1.0` from
    /// its request head (or its response's when no request was captured); `None` when neither
    /// head was.
    pub fn http_version(&self) -> Option<&'static str> {
        if self.h2_stream.is_some() {
            return Some("2");
        }
        match self.request.as_ref().or(self.response.as_ref())?.version {
            0 => Some("1.0"),
            2 => Some("2"),
            _ => Some("1.1"),
        }
    }
    /// A request header, case-insensitively.
    #[inline(always)]
    pub fn req_header(&self, name: &str) -> Option<&str> {
        self.request.as_ref().and_then(|h| h.header(name))
    }
    /// A response header, case-insensitively.
    #[inline(always)]
    pub fn resp_header(&self, name: &str) -> Option<&str> {
        self.response.as_ref().and_then(|h| h.header(name))
    }
    /// Request method, or "" when the request was not captured.
    pub fn method(&self) -> &str {
        self.request
            .as_ref()
            .map(|h| h.method.as_str())
            .unwrap_or("")
    }
    /// Final status, or 0.
    pub fn status(&self) -> u16 {
        self.response.as_ref().map(|h| h.status).unwrap_or(0)
    }
    /// The earliest time of the exchange.
    pub fn ts(&self) -> i64 {
        self.ts_request.or(self.ts_response).unwrap_or(0)
    }
    /// The earliest frame of the exchange.
    pub fn frame(&self) -> u64 {
        self.frame_request.or(self.frame_response).unwrap_or(0)
    }
    /// An anomaly `code` whose evidence starts at this exchange (its frame and flow).
    pub(crate) fn anomaly(&self, code: Code, detail: String) -> Anomaly {
        Anomaly::new(
            code,
            Some(self.frame()),
            Some(FlowId(self.flow_index).to_string()),
            detail,
        )
    }
}

/// The codings of a message's body, in the order they were applied, without `identity` and
/// the transfer coding `chunked` that frames it (RFC 9112 §6.1: transfer codings, applied after
/// the content codings of RFC 9110 §8.4): `None` when there are none, else their names joined by
/// ", " (one name is decoded; several in a row are not).
fn body_codings(head: &Head) -> Option<String> {
    let te = head.header("transfer-encoding").unwrap_or("");
    let ce = head.header("content-encoding").unwrap_or("");
    let mut codings: Vec<&str> = ce
        .split(',')
        .chain(te.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("identity"))
        .collect();
    if codings
        .last()
        .is_some_and(|c| c.eq_ignore_ascii_case("chunked"))
        && !te.trim().is_empty()
    {
        codings.pop();
    }
    (!codings.is_empty()).then(|| codings.join(", "))
}

/// Options of the HTTP stage.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// Framing limits.
    pub limits: HttpLimits,
    /// SSE limits.
    pub sse: SseLimits,
    /// JSON pointers to application sequence fields.
    pub app_seq: Vec<String>,
    /// The bytes JSON bodies and SSE events and lines may hold at once, over all connections
    /// of one HTTP stage ([`crate::budget::HELD_LIMIT`] by default). Each [`HttpLayer`] (each
    /// shard of a run) draws on a budget of its own of this limit, so that what is refused does
    /// not depend on how threads interleave.
    pub held: std::sync::Arc<crate::budget::Budget>,
    /// The bounds on the batch elements and events kept to the end of the run (fresh for each
    /// [`HttpLayer`], as `held`).
    pub kept: crate::budget::Kept,
    /// What an SSE event with an `event:` type is to the protocol above HTTP (for MCP,
    /// [`crate::mcp::event_role`]); without it every event is a message.
    pub event_role: Option<EventRoleFn>,
    /// The TLS stage's options: the secrets its connections are decrypted with.
    pub tls: crate::tls::TlsOptions,
}

/// What an SSE event is to the protocol above HTTP ([`HttpOptions::event_role`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventRole {
    /// A message: data that is no JSON-RPC is an `sse.invalid_json` anomaly.
    Message,
    /// A control event of the transport: its data is no message, and no anomaly.
    Control,
    /// A control event that names the stream's session: the first one's data (trimmed) is kept
    /// as the exchange's [`SseFacts::session_event`].
    NamesSession,
}

/// Reads an SSE event's type and its data (trimmed): the event's [`EventRole`].
pub type EventRoleFn = fn(event_type: &str, data: &str) -> EventRole;

/// How a response cut short was read to its end ([`Exchange::resp_read`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadEnd {
    /// The server's FIN, answered by the client's once it had acknowledged every byte.
    Fin,
    /// The server's reset, after the client had acknowledged every byte.
    Reset,
}

/// Where the exchange a server's FIN cut is ([`Conn::fin_cut`]).
#[derive(Debug, Clone, Copy)]
enum FinCut {
    /// Still among the connection's exchanges, by its position on the connection
    /// (`trans_depth`).
    Held(u32),
    /// Emitted, at this index of [`HttpLayer::exchanges`].
    Emitted(usize),
}

#[derive(Debug)]
struct Conn {
    parsers: [Option<DirParser>; 2],
    /// Bytes held while the role of a direction is unknown.
    probe: [Vec<u8>; 2],
    /// A direction whose first bytes were text but no HTTP start, searched for an event stream
    /// the capture began inside ([`HttpLayer::scan_headless`]).
    scan: [Option<Box<HeadlessScan>>; 2],
    client_dir: Option<Dir>,
    exchanges: Vec<Exchange>,
    emitted: usize,
    req_idx: Option<usize>,
    next_resp: usize,
    resp_idx: Option<usize>,
    resp_interim: bool,
    /// The response just read switched protocols for a request that asked to (`Upgrade`, or
    /// CONNECT): the request side leaves HTTP too.
    switched: bool,
    /// The client's direction left HTTP/1.x by an HTTP/2 connection preface, and the server's
    /// was told so.
    left_http: bool,
    /// When response bytes were last lost between two responses (a capture gap, or a head that
    /// could not be read), µs: whole responses may be missing, so the next response head is
    /// paired by time ([`HttpLayer`] docs), and at the close only requests sent by then can
    /// have lost their responses to it.
    resp_lost_at: Option<i64>,
    /// The server's direction has ended (a client's FIN after it is a reply, not a hang-up).
    server_ended: bool,
    /// ... with a FIN, not a reset.
    server_fin: bool,
    /// ... with a reset, after the client had acknowledged every byte the server sent.
    server_reset_acked: bool,
    /// The exchange whose response the server's FIN cut, until the client's own close says
    /// whether it read it to the end ([`Exchange::resp_read`]).
    fin_cut: Option<FinCut>,
    /// The requests sent later than every request after them (index into `exchanges`, request
    /// time in µs), times rising: the latest request sent by a time is the last of those sent by
    /// it, found by a binary search (the pairing by time after a loss, also when request times go
    /// back).
    request_lows: Vec<(usize, i64)>,
    sse: Option<SseParser>,
    depth: u32,
    open_at_end: bool,
    ends: [(std::net::IpAddr, u16); 2],
    /// Content-coding decoder of the response body in progress.
    decoder: Option<coding::BodyDecoder>,
    /// Content-coding decoder of the request body in progress.
    req_decoder: Option<coding::BodyDecoder>,
    /// The response body's coding could not be decoded (corrupt, or a gap in it).
    undecodable: bool,
    /// The connection's HTTP/2 state, once it entered HTTP/2 ([`h2`]).
    h2: Option<Box<h2::H2Conn>>,
}

/// The HTTP stage: a [`StreamSink`] that turns connections into [`Exchange`]s.
#[derive(Debug, Default)]
pub struct HttpLayer {
    /// HTTP state of the open connections that carry HTTP, boxed: the map's slots stay small
    /// (the state is over a kilobyte), also while the map grows.
    conns: crate::hash::FastMap<usize, Box<Conn>>,
    /// Open connections found not to carry HTTP: nothing more is kept for them.
    not_http: crate::hash::FastSet<usize>,
    /// Finished exchanges, in completion order.
    pub exchanges: crate::chunks::Chunks<Exchange>,
    /// Client direction per flow, as decided by SYN or by the HTTP roles.
    pub client_dir: HashMap<usize, Dir>,
    /// Anomalies raised.
    pub anomalies: Anomalies,
    /// Options.
    pub options: HttpOptions,
    /// The TLS stage before this one: every stream event goes through it first
    /// ([`crate::tls::TlsLayer::event`]), and what it hands on is what this stage reads.
    pub tls: crate::tls::TlsLayer,
}

impl HttpLayer {
    /// A layer with the given options.
    pub fn new(mut options: HttpOptions) -> Self {
        options.held = crate::budget::Budget::new(options.held.limit());
        options.kept = options.kept.fresh();
        HttpLayer {
            tls: crate::tls::TlsLayer::new(options.tls.clone()),
            options,
            ..Default::default()
        }
    }
}

const PROBE_BYTES: usize = 8;

impl Conn {
    /// A new exchange at the next position on this connection (its depth already counted),
    /// with the connection's ends when the client side is known.
    fn new_exchange(&self, fi: usize) -> Exchange {
        Exchange {
            flow_index: fi,
            client: self.client_dir.map(|d| self.ends[d].0),
            client_port: self.client_dir.map(|d| self.ends[d].1),
            server: self.client_dir.map(|d| self.ends[1 - d.min(1)]),
            trans_depth: self.depth,
            ..Default::default()
        }
    }

    /// The HTTP state of a connection before its first byte: with both parsers when a SYN told
    /// the client (direction 0), else with its roles still to be probed.
    fn new(flow: &FlowMeta, limits: HttpLimits) -> Conn {
        let mut conn = Conn::new_blank(flow.ends);
        if flow.client_by_syn {
            conn.client_dir = Some(0);
            conn.parsers = [
                Some(DirParser::new(true, limits)),
                Some(DirParser::new(false, limits)),
            ];
        }
        conn
    }

    /// The HTTP state of a connection between `ends`, roles unknown and no parsers (an HTTP/2
    /// stream's exchange is kept in one of these).
    fn new_blank(ends: [(std::net::IpAddr, u16); 2]) -> Conn {
        Conn {
            parsers: [None, None],
            probe: [Vec::new(), Vec::new()],
            scan: [None, None],
            client_dir: None,
            exchanges: Vec::new(),
            emitted: 0,
            req_idx: None,
            next_resp: 0,
            resp_idx: None,
            resp_interim: false,
            switched: false,
            left_http: false,
            resp_lost_at: None,
            server_ended: false,
            server_fin: false,
            server_reset_acked: false,
            fin_cut: None,
            request_lows: Vec::new(),
            sse: None,
            depth: 0,
            open_at_end: false,
            ends,
            decoder: None,
            req_decoder: None,
            undecodable: false,
            h2: None,
        }
    }
}

impl StreamSink for HttpLayer {
    /// The event goes through the TLS stage, which hands this stage what it reads: the event
    /// itself for a connection that is not TLS, the plaintext of one that is.
    fn event(&mut self, flow: FlowMeta, ev: StreamEvent<'_>, ts: i64, frame: u64) {
        if self.tls.passes_through(flow.index, &ev) {
            return self.plain_event(flow, ev, ts, frame);
        }
        let mut tls = std::mem::take(&mut self.tls);
        tls.event(flow, ev, ts, frame, &mut Plain(self));
        if !tls.anomalies.counts.is_empty() {
            self.anomalies.absorb(std::mem::take(&mut tls.anomalies));
        }
        self.tls = tls;
    }
}

/// The HTTP stage as the TLS stage's sink: what it hands on.
struct Plain<'a>(&'a mut HttpLayer);

impl StreamSink for Plain<'_> {
    fn event(&mut self, flow: FlowMeta, ev: StreamEvent<'_>, ts: i64, frame: u64) {
        self.0.plain_event(flow, ev, ts, frame);
    }
}

impl HttpLayer {
    /// One stream event of a connection's (plaintext) bytes.
    fn plain_event(&mut self, flow: FlowMeta, ev: StreamEvent<'_>, ts: i64, frame: u64) {
        let fi = flow.index;
        match ev {
            StreamEvent::Open => {
                // The connection's HTTP state is made with its first byte (a SYN flood or a
                // scan opens many connections that carry none).
                if flow.client_by_syn {
                    self.client_dir.insert(fi, 0);
                }
            }
            StreamEvent::Chunk(d, chunk) => {
                if !self.not_http.is_empty() && self.not_http.contains(&fi) {
                    return;
                }
                let limits = self.options.limits;
                self.conns
                    .entry(fi)
                    .or_insert_with(|| Box::new(Conn::new(&flow, limits)));
                match chunk {
                    Chunk::Data { bytes, .. } => self.on_data(&flow, d, bytes, ts, frame),
                    Chunk::Gap { len, .. } => self.on_gap(&flow, d, len, ts, frame),
                }
            }
            StreamEvent::End {
                dir,
                fin,
                reset,
                peer_acked,
                acked_by_peer,
            } => {
                let end = DirEnd {
                    fin,
                    reset,
                    peer_acked,
                    acked_by_peer,
                };
                self.on_end(&flow, dir, end, ts, frame);
            }
            StreamEvent::CaptureEnd => {
                if let Some(conn) = self.conns.get_mut(&fi) {
                    conn.open_at_end = true;
                }
            }
            StreamEvent::Close => self.on_close(&flow),
        }
    }
}

/// How a direction ended ([`StreamEvent::End`]).
#[derive(Debug, Clone, Copy)]
struct DirEnd {
    fin: bool,
    reset: bool,
    peer_acked: bool,
    acked_by_peer: bool,
}

impl HttpLayer {
    /// Bytes of direction `d`: to its parser, or, while its role is unknown, held and probed
    /// (a request or status line decides both directions' roles), or searched for an event
    /// stream the capture began inside.
    fn on_data(&mut self, flow: &FlowMeta, d: Dir, bytes: &[u8], ts: i64, frame: u64) {
        let fi = flow.index;
        let Some(conn) = self.conns.get_mut(&fi) else {
            return;
        };
        if let Some(r) = conn.h2_role(d) {
            return self.with_h2(fi, ts, frame, |h2, cx| h2.push(r, bytes, cx));
        }
        if conn.h2.is_none()
            && conn.client_dir == Some(1 - d)
            && conn.depth == 0
            && conn.parsers[d].as_ref().is_some_and(|p| p.outside_body())
            && h2::frame::starts_like_server_preface(bytes)
        {
            // The server's preface before the client's (a TLS 1.3 server sends its SETTINGS
            // with its Finished): the connection is HTTP/2 from here.
            conn.h2 = Some(h2::H2Conn::new(conn, self.options.limits));
            conn.leave_http(d);
            return self.with_h2(fi, ts, frame, |h2, cx| h2.push(h2::SERVER, bytes, cx));
        }
        if conn.parsers[d].is_some() {
            self.push(fi, d, bytes, ts, frame);
            return;
        }
        if conn.scan[d].is_some() {
            self.scan_headless(flow, d, bytes, ts, frame);
            return;
        }
        conn.probe[d].extend_from_slice(bytes);
        let p = &conn.probe[d];
        if conn.client_dir.is_none() && h2::frame::starts_like_server_preface(p) {
            // No SYN told the roles, and this side speaks HTTP/2 first: the server.
            return self.h2_server_first(flow, d, ts, frame);
        }
        let role = if framing::looks_like_request(p) || framing::looks_like_h2_preface(p) {
            Some(true)
        } else if framing::looks_like_response(p) {
            Some(false)
        } else if p.len() < 9 && p.first() == Some(&0) {
            // (Perhaps a server's SETTINGS, whose 9-byte header is not all here yet: its
            // length, at most 16,384, begins with a zero byte.)
            return;
        } else if p.len() >= PROBE_BYTES {
            None
        } else {
            return;
        };
        match role {
            Some(is_req) => self.start_parsers(flow, d, is_req, ts, frame),
            // Text that is no HTTP start, on a side no SYN named the client's: maybe an event
            // stream the capture began inside.
            None if self.client_dir.get(&fi) != Some(&d) && headless::plausible_text(p) => {
                let held = std::mem::take(&mut conn.probe[d]);
                conn.scan[d] = Some(HeadlessScan::new(frame, &self.options.held));
                self.scan_headless(flow, d, &held, ts, frame);
            }
            None => self.give_up(flow, not_http(flow, frame)),
        }
    }

    /// Direction `d`, its role unknown, began with an HTTP/2 server's SETTINGS: it is the
    /// server's, the connection HTTP/2, and what it held is read as frames.
    fn h2_server_first(&mut self, flow: &FlowMeta, d: Dir, ts: i64, frame: u64) {
        let fi = flow.index;
        let limits = self.options.limits;
        let Some(conn) = self.conns.get_mut(&fi) else {
            return;
        };
        conn.client_dir = Some(1 - d);
        self.client_dir.insert(fi, 1 - d);
        let mut server = DirParser::new(false, limits);
        let _ = server.tunnel_after_message();
        conn.parsers[d] = Some(server);
        conn.parsers[1 - d] = Some(DirParser::new(true, limits));
        conn.h2 = Some(h2::H2Conn::new(conn, limits));
        let held = std::mem::take(&mut conn.probe[d]);
        let other = std::mem::take(&mut conn.probe[1 - d]);
        self.with_h2(fi, ts, frame, |h2, cx| h2.push(h2::SERVER, &held, cx));
        if !other.is_empty() {
            self.push(fi, 1 - d, &other, ts, frame);
        }
    }

    /// The probe of direction `d` found a request (`is_req`) or a response: both directions
    /// get their parsers, and what each held is parsed.
    fn start_parsers(&mut self, flow: &FlowMeta, d: Dir, is_req: bool, ts: i64, frame: u64) {
        let fi = flow.index;
        let limits = self.options.limits;
        let Some(conn) = self.conns.get_mut(&fi) else {
            return;
        };
        let client = if is_req { d } else { 1 - d };
        conn.client_dir = Some(client);
        self.client_dir.insert(fi, client);
        conn.parsers[d] = Some(DirParser::new(is_req, limits));
        if conn.parsers[1 - d].is_none() {
            conn.parsers[1 - d] = Some(DirParser::new(!is_req, limits));
        }
        let held = std::mem::take(&mut conn.probe[d]);
        let searched = conn.scan[1 - d].take();
        if let Some(sc) = searched {
            // The other side: the client's when this one answers.
            self.skipped_search(flow, !is_req, &sc, frame);
        }
        self.push(fi, d, &held, ts, frame);
        let other = self
            .conns
            .get_mut(&fi)
            .map(|c| std::mem::take(&mut c.probe[1 - d]))
            .unwrap_or_default();
        if !other.is_empty() {
            self.push(fi, 1 - d, &other, ts, frame);
        }
    }

    /// `len` bytes of direction `d` missing from the capture.
    fn on_gap(&mut self, flow: &FlowMeta, d: Dir, len: u64, ts: i64, frame: u64) {
        let fi = flow.index;
        if let Some(r) = self.h2_role(fi, d) {
            return self.with_h2(fi, ts, frame, |h2, cx| h2.gap(r, len, cx));
        }
        let searching = self
            .conns
            .get(&fi)
            .is_some_and(|c| c.parsers[d].is_none() && c.scan[d].is_some());
        // What was held is read if an event stream starts in it; else the search goes on after
        // the gap, where a chunk or an event may begin.
        if searching && !self.settle_headless(flow, d) {
            if let Some(sc) = self.conns.get_mut(&fi).and_then(|c| c.scan[d].as_mut()) {
                sc.clear();
            }
            return;
        }
        let Some(conn) = self.conns.get_mut(&fi) else {
            return;
        };
        if conn.parsers[d].is_none() {
            conn.probe[d].clear();
            return;
        }
        if conn.client_dir.is_some_and(|c| c != d)
            && conn.parsers[d].as_ref().is_some_and(|p| p.outside_body())
        {
            conn.resp_lost_at = conn.resp_lost_at.max(Some(ts));
        }
        self.with_parser(fi, d, ts, frame, |p, out| p.gap(len, out));
    }

    /// Direction `d` ended (`end`: FIN or reset, and what was acknowledged): how the server's
    /// end and the client's reply to it bear on the response they cut, then the parser's end.
    fn on_end(&mut self, flow: &FlowMeta, d: Dir, end: DirEnd, ts: i64, frame: u64) {
        let fi = flow.index;
        // A direction that ends while searched: read from where an event stream starts in what
        // it held, else given up.
        if let Some(at) = self
            .conns
            .get(&fi)
            .and_then(|c| c.scan[d].as_ref())
            .map(|sc| sc.frame)
        {
            if !self.settle_headless(flow, d) {
                self.give_up(flow, not_http(flow, at));
                return;
            }
        }
        if let Some(r) = self.h2_role(fi, d) {
            let open = self.conns.get(&fi).is_some_and(|c| c.open_at_end);
            // The other side acknowledged every byte: read to the FIN or the reset.
            let read = end.acked_by_peer.then_some(if end.reset {
                ReadEnd::Reset
            } else {
                ReadEnd::Fin
            });
            self.with_h2(fi, ts, frame, |h2, cx| h2.end(r, read, open, cx));
        }
        self.note_end(fi, d, end);
        let Some(conn) = self.conns.get(&fi).filter(|c| c.parsers[d].is_some()) else {
            return;
        };
        // A body delimited by the close is cut by a reset; at the end of the capture it is
        // taken as it stands (what followed is unknown either way).
        let orderly = end.fin || conn.open_at_end;
        let before = self.exchanges.len();
        self.with_parser(fi, d, ts, frame, |p, out| p.end(orderly, out));
        // The exchange the server's FIN cut, if emitted now: where it went.
        let exchanges = &self.exchanges;
        if let Some(conn) = self.conns.get_mut(&fi) {
            if let Some(FinCut::Held(depth)) = conn.fin_cut {
                if let Some(k) = exchanges
                    .iter_from(before)
                    .position(|e| e.flow_index == fi && e.trans_depth == depth)
                {
                    conn.fin_cut = Some(FinCut::Emitted(before + k));
                }
            }
        }
    }

    /// What the end of direction `d` tells before its parser ends: the server's end is noted;
    /// the client's FIN in reply to it, with every byte before acknowledged, says the client
    /// read the response the server's FIN cut; the client hanging up first marks the
    /// streaming response it left.
    fn note_end(&mut self, fi: usize, d: Dir, end: DirEnd) {
        let Some(conn) = self.conns.get_mut(&fi) else {
            return;
        };
        if conn.client_dir.is_some_and(|c| c != d) {
            conn.server_ended = true;
            conn.server_fin = end.fin && !end.reset;
            conn.server_reset_acked = end.reset && end.acked_by_peer;
        } else if conn.client_dir == Some(d) && conn.server_ended {
            match conn
                .fin_cut
                .take()
                .filter(|_| end.fin && !end.reset && end.peer_acked)
            {
                Some(FinCut::Held(depth)) => {
                    if let Some(e) = conn.exchanges.iter_mut().find(|e| e.trans_depth == depth) {
                        e.resp_read = Some(ReadEnd::Fin);
                    }
                }
                Some(FinCut::Emitted(i)) => {
                    if let Some(e) = self.exchanges.get_mut(i) {
                        e.resp_read = Some(ReadEnd::Fin);
                    }
                }
                None => {}
            }
        } else if conn.client_dir == Some(d) && (end.fin || end.reset) && !conn.server_ended {
            // The client hung up on a response that was streaming (not one that never began,
            // and not in reply to the server's own close).
            if let Some(e) = conn.resp_idx.and_then(|i| conn.exchanges.get_mut(i)) {
                if !e.resp_complete && e.request.is_some() && e.response.is_some() {
                    e.client_closed = true;
                }
            }
        }
    }

    /// The connection is closed: what it still holds is emitted.
    fn on_close(&mut self, flow: &FlowMeta) {
        let fi = flow.index;
        self.not_http.remove(&fi);
        let Some(mut conn) = self.conns.remove(&fi) else {
            return;
        };
        if let Some(mut h2) = conn.h2.take() {
            let mut done: Vec<Exchange> = Vec::new();
            let mut cx = Ctx::new(fi, 0, 0, &self.options, &mut self.anomalies, &mut done);
            h2.close(conn.open_at_end, &mut cx);
            self.exchanges.extend(done);
        }
        // A search for an event stream that never ended in one (its direction did not end
        // first): the connection was not HTTP.
        if conn.parsers.iter().all(Option::is_none) {
            if let Some(at) = conn.scan.iter().flatten().map(|sc| sc.frame).min() {
                self.anomalies.add(not_http(flow, at));
            }
        }
        // Requests never answered stay as exchanges without a response; when the capture lost
        // response bytes after the last response began (no later head told whose they were),
        // their responses may be in that gap.
        let lost = conn.resp_lost_at;
        for mut e in conn.exchanges.drain(conn.emitted..) {
            // A body still held here was never parsed (its message did not end): its bytes go,
            // and its part of the held-bytes budget with them.
            (e.req_body, e.resp_body) = (None, None);
            e.open_at_capture_end |= conn.open_at_end;
            if e.response.is_none() && lost.is_some_and(|at| e.ts_request.is_some_and(|t| t <= at))
            {
                e.resp_gap = true;
            }
            self.exchanges.push(e);
        }
    }

    fn push(&mut self, fi: usize, d: Dir, bytes: &[u8], ts: i64, frame: u64) {
        self.with_parser(fi, d, ts, frame, |p, out| p.push(bytes, out));
    }

    /// The connection is not read further, for the reason `why` says (`http.not_http`: it
    /// does not carry HTTP/1.x, as its first bytes showed): nothing more is kept for it.
    fn give_up(&mut self, flow: &FlowMeta, why: Anomaly) {
        self.conns.remove(&flow.index);
        self.not_http.insert(flow.index);
        self.anomalies.add(why);
    }

    fn with_parser(
        &mut self,
        fi: usize,
        d: Dir,
        ts: i64,
        frame: u64,
        f: impl FnOnce(&mut DirParser, &mut dyn FnMut(HttpEvent<'_>) -> BodyRule),
    ) {
        let Some(conn) = self.conns.get_mut(&fi) else {
            return;
        };
        let Some(mut parser) = conn.parsers[d].take() else {
            return;
        };
        let is_request = parser.is_request;
        let opts = &self.options;
        // (What the parser holds of a head or line counts against the held-bytes budget.)
        parser.draw_on(&opts.held);
        let mut done: Vec<Exchange> = Vec::new();
        {
            let mut cx = Ctx::new(fi, ts, frame, opts, &mut self.anomalies, &mut done);
            cx.is_request = is_request;
            let mut out = |ev: HttpEvent<'_>| -> BodyRule { on_event(conn, ev, &mut cx) };
            f(&mut parser, &mut out);
        }
        if is_request && parser.left_http() && !conn.left_http {
            // The client spoke HTTP/2 from its first byte: the server's side is HTTP/2 too.
            conn.left_http = true;
            conn.leave_http(1 - d);
        }
        if !is_request && std::mem::take(&mut conn.switched) {
            // A 101 to an upgrade (or a 2xx to CONNECT) ends HTTP in both directions: what the
            // client sends after its request belongs to the other protocol too (the
            // `http.upgrade` anomaly says so, unless it is HTTP/2, read on).
            conn.leave_http(1 - d);
        }
        conn.parsers[d] = Some(parser);
        let h2 = conn.h2.is_some();
        self.exchanges.extend(done);
        // Bytes after the switch to HTTP/2 in the same segment, read now.
        if h2 {
            for r in [h2::CLIENT, h2::SERVER] {
                self.with_h2(fi, ts, frame, |h2, cx| h2.push(r, &[], cx));
            }
        }
    }

    /// Run `f` on connection `fi`'s HTTP/2 state with the stage's context; the exchanges it
    /// finishes are emitted.
    fn with_h2(
        &mut self,
        fi: usize,
        ts: i64,
        frame: u64,
        f: impl FnOnce(&mut h2::H2Conn, &mut Ctx<'_>),
    ) {
        let Some(conn) = self.conns.get_mut(&fi) else {
            return;
        };
        let Some(mut h2) = conn.h2.take() else {
            return;
        };
        let mut done: Vec<Exchange> = Vec::new();
        {
            let mut cx = Ctx::new(fi, ts, frame, &self.options, &mut self.anomalies, &mut done);
            f(&mut h2, &mut cx);
        }
        conn.h2 = Some(h2);
        self.exchanges.extend(done);
    }

    /// Whether direction `d` of connection `fi` is read as HTTP/2, and its role there.
    fn h2_role(&self, fi: usize, d: Dir) -> Option<usize> {
        self.conns.get(&fi)?.h2_role(d)
    }
}

impl Conn {
    /// Whether direction `d` is read as HTTP/2, and its role there.
    fn h2_role(&self, d: Dir) -> Option<usize> {
        self.h2.as_ref()?;
        if !self.parsers[d].as_ref().is_none_or(|p| p.left_http()) {
            return None;
        }
        Some(self.role(d))
    }

    /// The HTTP/2 role of direction `d` ([`h2::CLIENT`] or [`h2::SERVER`]).
    fn role(&self, d: Dir) -> usize {
        if self.client_dir == Some(d) {
            h2::CLIENT
        } else {
            h2::SERVER
        }
    }

    /// Direction `d` leaves HTTP/1.x once its message under way ends
    /// ([`DirParser::tunnel_after_message`]); what its parser held goes to HTTP/2, when the
    /// connection entered it.
    fn leave_http(&mut self, d: Dir) {
        let role = self.role(d);
        if let Some(p) = self.parsers[d].as_mut() {
            let held = p.tunnel_after_message();
            if let Some(h2) = self.h2.as_mut() {
                h2.hold(role, &held);
            }
        }
    }
}

/// What every step of [`on_event`] needs besides the connection: where the event came from
/// (flow, direction role, capture time and frame), the options, and where anomalies and
/// finished exchanges go.
struct Ctx<'a> {
    fi: usize,
    is_request: bool,
    ts: i64,
    frame: u64,
    opts: &'a HttpOptions,
    anomalies: &'a mut Anomalies,
    flow_id: FlowId,
    done: &'a mut Vec<Exchange>,
}

impl<'a> Ctx<'a> {
    /// The context of flow `fi` at capture time `ts` (µs) and `frame`, of the response side
    /// until a step says otherwise.
    fn new(
        fi: usize,
        ts: i64,
        frame: u64,
        opts: &'a HttpOptions,
        anomalies: &'a mut Anomalies,
        done: &'a mut Vec<Exchange>,
    ) -> Ctx<'a> {
        Ctx {
            fi,
            is_request: false,
            ts,
            frame,
            opts,
            anomalies,
            flow_id: FlowId(fi),
            done,
        }
    }

    fn anomaly(&mut self, code: Code, detail: String) {
        self.anomalies.add(Anomaly::new(
            code,
            Some(self.frame),
            Some(self.flow_id.to_string()),
            detail,
        ));
    }
}

/// One framing event of a direction, applied to its connection's exchanges: the sink of
/// [`DirParser`], answering how the body of a head just read is framed.
fn on_event(conn: &mut Conn, ev: HttpEvent<'_>, cx: &mut Ctx<'_>) -> BodyRule {
    match ev {
        HttpEvent::Anomaly(code, detail) => {
            // A response head that cannot be read still began a response: whose it was is told
            // by the next head, or at the close (as for response bytes lost to the capture).
            if !cx.is_request
                && matches!(
                    code,
                    Code::HttpBadHead | Code::HttpTooManyHeaders | Code::HttpHeaderTooLong
                )
            {
                conn.resp_lost_at = conn.resp_lost_at.max(Some(cx.ts));
            }
            cx.anomaly(code, detail);
            BodyRule::ByHeaders
        }
        HttpEvent::Head(head) if cx.is_request => on_request_head(conn, head, cx),
        HttpEvent::Head(head) => on_response_head(conn, head, cx),
        HttpEvent::Body(bytes) if cx.is_request => {
            on_request_body(conn, bytes, cx);
            BodyRule::ByHeaders
        }
        HttpEvent::Body(bytes) => {
            on_response_body(conn, bytes, cx);
            BodyRule::ByHeaders
        }
        HttpEvent::BodyGap(len) => {
            on_body_gap(conn, len, cx);
            BodyRule::ByHeaders
        }
        HttpEvent::H2Preface => {
            if conn.h2.is_none() {
                conn.h2 = Some(h2::H2Conn::new(conn, cx.opts.limits));
            }
            BodyRule::ByHeaders
        }
        HttpEvent::Tunnel(bytes) => {
            if let Some(h2) = conn.h2.as_mut() {
                h2.hold(usize::from(!cx.is_request), bytes);
            }
            BodyRule::ByHeaders
        }
        HttpEvent::End { complete } => {
            if cx.is_request {
                on_request_end(conn, complete, cx);
            } else if conn.resp_interim {
                conn.resp_interim = false;
            } else if let Some(i) = conn.resp_idx.take() {
                on_response_end(conn, i, complete, cx);
            }
            BodyRule::ByHeaders
        }
    }
}

/// A request head: a new exchange on the connection, awaiting its response.
fn on_request_head(conn: &mut Conn, head: Head, cx: &mut Ctx<'_>) -> BodyRule {
    let ts = cx.ts;
    conn.depth += 1;
    if conn.next_resp >= conn.exchanges.len() {
        // None waiting: the earlier requests cannot be paired any more.
        conn.request_lows.clear();
    }
    while conn.request_lows.last().is_some_and(|&(_, t)| t >= ts) {
        conn.request_lows.pop();
    }
    conn.request_lows.push((conn.exchanges.len(), ts));
    conn.exchanges.push(Exchange {
        request: Some(head),
        ts_request: Some(ts),
        frame_request: Some(cx.frame),
        ..conn.new_exchange(cx.fi)
    });
    conn.req_idx = Some(conn.exchanges.len() - 1);
    conn.req_decoder = None;
    let enc = conn
        .exchanges
        .last()
        .and_then(|e| e.req_header("content-encoding"))
        .map(str::to_string);
    if let Some(enc) = enc {
        let opts = cx.opts;
        conn.req_decoder =
            coding::BodyDecoder::for_encoding(&enc, opts.limits.max_decoded, &opts.held);
        if conn.req_decoder.is_none() && !enc.trim().eq_ignore_ascii_case("identity") {
            cx.anomaly(
                Code::HttpContentEncodingUnsupported,
                format!("request Content-Encoding {enc} not decoded"),
            );
            if let Some(e) = conn.exchanges.last_mut() {
                e.req_gap = true;
            }
        }
    }
    BodyRule::ByHeaders
}

/// A response head: an interim 1xx is noted on the request it answers; a final one is paired
/// with the oldest request awaiting an answer (after a capture gap, with the latest request
/// sent by then), and sets up the body's decoding and SSE parsing.
fn on_response_head(conn: &mut Conn, head: Head, cx: &mut Ctx<'_>) -> BodyRule {
    let status = head.status;
    let h2c = |h: Option<&str>| h.is_some_and(|u| u.trim().eq_ignore_ascii_case("h2c"));
    // (Only to a request that asked for h2c: a client not asking goes on in HTTP/1.1.)
    let asked = conn.exchanges.get(conn.next_resp).is_some_and(|e| {
        e.req_header("upgrade")
            .is_some_and(|u| u.split(',').any(|p| p.trim().eq_ignore_ascii_case("h2c")))
    });
    if status == 101 && !(conn.h2.is_none() && asked && h2c(head.header("upgrade"))) {
        // Recorded by name: after a 101 the connection leaves HTTP/1.x (WebSocket, …).
        let up = head.header("upgrade").unwrap_or("an unnamed protocol");
        cx.anomaly(
            Code::HttpUpgrade,
            format!("connection upgraded to {up}; HTTP parsing ends"),
        );
    } else if status == 101 {
        // An upgrade to h2c (RFC 7540 §3.2): the 101 is interim, and the request's final
        // response comes on HTTP/2 stream 1.
        if let Some(e) = conn.exchanges.get_mut(conn.next_resp) {
            e.interim.push(101);
        }
        conn.resp_interim = true;
        conn.switched = true;
        conn.h2 = Some(h2::H2Conn::upgraded(conn, cx.opts.limits));
        return BodyRule::Tunnel;
    }
    if (100..200).contains(&status) && status != 101 {
        conn.resp_interim = true;
        if let Some(e) = conn.exchanges.get_mut(conn.next_resp) {
            e.interim.push(status);
        }
        return BodyRule::None;
    }
    conn.resp_interim = false;
    if conn.resp_lost_at.take().is_some() {
        pair_after_gap(conn, cx);
    }
    let idx = if conn.next_resp < conn.exchanges.len() {
        conn.next_resp
    } else {
        // A response without a captured request (one-sided capture, mid-stream start).
        conn.depth += 1;
        let e = conn.new_exchange(cx.fi);
        conn.exchanges.push(e);
        conn.exchanges.len() - 1
    };
    conn.next_resp = idx + 1;
    conn.resp_idx = Some(idx);
    let (opts, ts, frame) = (cx.opts, cx.ts, cx.frame);
    let e = &mut conn.exchanges[idx];
    let method = e.method().to_string();
    let ct = head
        .header("content-type")
        .unwrap_or("")
        .to_ascii_lowercase();
    e.is_sse = ct.starts_with("text/event-stream");
    conn.decoder = None;
    conn.undecodable = false;
    if let Some(enc) = body_codings(&head) {
        conn.decoder = coding::BodyDecoder::for_encoding(&enc, opts.limits.max_decoded, &opts.held);
        e.resp_coded = conn.decoder.is_some();
        if conn.decoder.is_none() {
            conn.undecodable = true;
            cx.anomaly(
                Code::HttpContentEncodingUnsupported,
                match head.header("content-encoding") {
                    Some(ce) if ce.trim() == enc => format!("Content-Encoding {enc} not decoded"),
                    _ => format!(
                        "body codings {enc} (Content-Encoding, then Transfer-Encoding) not decoded"
                    ),
                },
            );
        }
    }
    e.response = Some(head);
    e.ts_response = Some(ts);
    e.frame_response = Some(frame);
    e.ts_end = Some(ts);
    e.ts_last_byte = Some(ts);
    e.frame_last = Some(frame);
    conn.sse = if e.is_sse {
        Some(SseParser::new(opts.sse).with_budget(&opts.held))
    } else {
        None
    };
    if method == "HEAD" {
        BodyRule::None
    } else if status == 101 || (method == "CONNECT" && (200..300).contains(&status)) {
        conn.switched = method == "CONNECT" || e.req_header("upgrade").is_some();
        BodyRule::Tunnel
    } else {
        BodyRule::ByHeaders
    }
}

/// Responses were lost in a capture gap: the response just begun answers the latest request
/// sent before it (a client that does not pipeline sends the next request only after the
/// previous answer); the requests skipped lost their responses to the capture.
fn pair_after_gap(conn: &mut Conn, cx: &mut Ctx<'_>) {
    // The latest request sent by now: every request after it was sent later, so it is the
    // last of `request_lows` sent by now (if it still awaits a response).
    let sent = conn.request_lows.partition_point(|&(_, t)| t <= cx.ts);
    let latest = sent
        .checked_sub(1)
        .map(|k| conn.request_lows[k].0)
        .filter(|&i| i >= conn.next_resp && i < conn.exchanges.len());
    let Some(latest) = latest else {
        return;
    };
    for i in conn.next_resp..latest {
        conn.exchanges[i].resp_gap = true;
    }
    if latest > conn.next_resp {
        cx.anomaly(
            Code::HttpResponsesLostInGap,
            format!(
                "{} response(s) lost in a capture gap; this one is paired with the request in frame {}",
                latest - conn.next_resp,
                conn.exchanges[latest].frame_request.unwrap_or(0)
            ),
        );
    }
    conn.next_resp = latest;
}

/// Request body bytes: decoded when coded, kept (bounded) for JSON parsing at its end.
fn on_request_body(conn: &mut Conn, bytes: &[u8], cx: &mut Ctx<'_>) {
    let Some(e) = conn.req_idx.and_then(|i| conn.exchanges.get_mut(i)) else {
        return;
    };
    let (opts, frame, flow_id) = (cx.opts, cx.frame, cx.flow_id);
    e.req_body_len += bytes.len() as u64;
    match conn.req_decoder.as_mut() {
        Some(d) => match d.push(bytes) {
            Ok(v) => {
                let full = d.full();
                if keep_decoded_request(e, &v, full, opts, cx.anomalies, frame, flow_id) {
                    conn.req_decoder = None;
                }
            }
            Err(err) => {
                cx.anomalies.add(not_decoded(&err, true, d, frame, flow_id));
                conn.req_decoder = None;
                e.req_gap = true;
            }
        },
        None if e.req_gap => {}
        None => {
            let b = body(&mut e.req_body);
            append_bounded(
                &mut b.bytes,
                &mut b.charge,
                opts,
                bytes,
                cx.anomalies,
                frame,
                flow_id,
            )
        }
    }
}

/// Response body bytes: decoded when coded (bounded: a compression bomb stops at the bound,
/// and the bytes up to it are parsed), then into the SSE parser or kept for JSON parsing.
fn on_response_body(conn: &mut Conn, bytes: &[u8], cx: &mut Ctx<'_>) {
    let Some(i) = conn.resp_idx else {
        return;
    };
    let (opts, ts, frame, flow_id) = (cx.opts, cx.ts, cx.frame, cx.flow_id);
    let e = &mut conn.exchanges[i];
    e.resp_body_len += bytes.len() as u64;
    e.ts_end = Some(ts);
    e.ts_last_byte = Some(ts);
    e.frame_last = Some(frame);
    let decoded;
    // An event stream of a coded body whose events can no longer be kept (the bound on
    // decoded events is spent, and it has reached it): decoding the rest would only count
    // them. It is given up, its rest a gap.
    if conn.decoder.is_some() && e.is_sse && e.sse.not_kept > 0 {
        conn.decoder = None;
        conn.undecodable = true;
    }
    let bytes: &[u8] = match conn.decoder.as_mut() {
        Some(d) => match d.push(bytes) {
            Ok(v) => {
                if d.full() {
                    cx.anomalies
                        .add(decoded_too_large(opts, frame, flow_id, false));
                    conn.decoder = None;
                    conn.undecodable = true;
                    e.resp_gap = true;
                }
                decoded = v;
                &decoded
            }
            Err(err) => {
                cx.anomalies
                    .add(not_decoded(&err, false, d, frame, flow_id));
                conn.decoder = None;
                conn.undecodable = true;
                e.resp_gap = true;
                &[]
            }
        },
        None if conn.undecodable => &[],
        None => bytes,
    };
    feed_body(
        &mut conn.sse,
        e,
        bytes,
        ts,
        frame,
        opts,
        cx.anomalies,
        flow_id,
    );
}

/// Body bytes the capture lost: the message has a gap; a coded body is not decoded past it;
/// an event stream is told, so that the event it cut is not taken whole.
fn on_body_gap(conn: &mut Conn, len: u64, cx: &mut Ctx<'_>) {
    if cx.is_request {
        if let Some(e) = conn.req_idx.and_then(|i| conn.exchanges.get_mut(i)) {
            e.req_gap = true;
        }
        conn.req_decoder = None;
        return;
    }
    let Some(i) = conn.resp_idx else {
        return;
    };
    conn.exchanges[i].resp_gap = true;
    if conn.decoder.take().is_some() {
        // A compressed stream cannot be decoded past missing bytes.
        conn.undecodable = true;
        cx.anomaly(
            Code::HttpCodingGap,
            format!("{len} bytes missing inside an encoded body; the rest is not decoded"),
        );
    }
    if let Some(sse) = conn.sse.as_mut() {
        let (frame, flow_id, anomalies) = (cx.frame, cx.flow_id, &mut *cx.anomalies);
        sse.gap(len, frame, &mut |mut a| {
            a.flow_id = Some(flow_id.to_string());
            anomalies.add(a)
        });
    }
}

/// The end of a request: its body decoded to the end, hashed and parsed as JSON-RPC.
fn on_request_end(conn: &mut Conn, complete: bool, cx: &mut Ctx<'_>) {
    let Some(e) = conn.req_idx.take().and_then(|i| conn.exchanges.get_mut(i)) else {
        return;
    };
    let (opts, frame, flow_id) = (cx.opts, cx.frame, cx.flow_id);
    if !complete {
        e.req_gap = true;
    }
    if let Some(mut d) = conn.req_decoder.take() {
        let (rest, ended) = d.finish();
        keep_decoded_request(e, &rest, d.full(), opts, cx.anomalies, frame, flow_id);
        if ended.is_err() {
            e.req_gap = true;
        }
    }
    // Taken out of the exchange: its held bytes are given back when it goes.
    let req = e.req_body.take().unwrap_or_default();
    e.req_body_hash = crate::hash::hash64(&req.bytes);
    e.rpc.request_batch = req
        .bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'[');
    e.req_gap |= finish_json(
        &req.bytes,
        not_kept(e.req_gap, &req.charge),
        opts,
        &mut e.rpc.request,
        cx.anomalies,
        frame,
        flow_id,
        Code::HttpRequestNotJson,
    );
}

/// The end of response `i`: how it ended (complete, cut by a FIN or reset the client read up
/// to, open at the capture's end), its last SSE event or its JSON body, then the finished
/// prefix of the connection's exchanges is emitted.
fn on_response_end(conn: &mut Conn, i: usize, complete: bool, cx: &mut Ctx<'_>) {
    let (opts, ts, frame, flow_id) = (cx.opts, cx.ts, cx.frame, cx.flow_id);
    // The decoder's last bytes go through the body path first.
    if let Some(mut d) = conn.decoder.take() {
        let (rest, ended) = d.finish();
        if let Some(e) = conn.exchanges.get_mut(i) {
            if !rest.is_empty() {
                feed_body(
                    &mut conn.sse,
                    e,
                    &rest,
                    ts,
                    frame,
                    opts,
                    cx.anomalies,
                    flow_id,
                );
            }
            if d.full() {
                cx.anomalies
                    .add(decoded_too_large(opts, frame, flow_id, false));
                e.resp_gap = true;
            }
        }
        if let (Err(err), true) = (ended, complete) {
            cx.anomaly(
                Code::HttpBadContentCoding,
                format!("{d:?} body ends badly: {err}"),
            );
        }
    }
    let e = &mut conn.exchanges[i];
    e.resp_complete = complete;
    e.open_at_capture_end = !complete && conn.open_at_end;
    if !complete && !conn.open_at_end && !e.resp_gap {
        if conn.server_fin {
            conn.fin_cut = Some(FinCut::Held(e.trans_depth));
        } else if conn.server_reset_acked {
            e.resp_read = Some(ReadEnd::Reset);
        }
    }
    e.ts_end = Some(ts);
    e.frame_last = Some(frame);
    if let Some(mut sse) = conn.sse.take() {
        feed_sse(&mut sse, None, e, ts, frame, opts, cx.anomalies, flow_id);
        e.sse.comments = sse.comments;
        // Kept until the end of the run: no spare capacity.
        e.sse.events.shrink_to_fit();
    } else {
        finish_response_body(e, complete, cx);
    }
    // Emit the finished prefix of the connection's exchanges.
    while conn.emitted < conn.exchanges.len()
        && conn.emitted < conn.next_resp
        && conn.resp_idx != Some(conn.emitted)
        && conn.req_idx != Some(conn.emitted)
    {
        cx.done
            .push(std::mem::take(&mut conn.exchanges[conn.emitted]));
        conn.emitted += 1;
    }
    compact(conn);
}

/// A response body that was not an event stream, at its end: the start of an error body
/// kept, a JSON body parsed as JSON-RPC (unless it was cut or not kept whole).
fn finish_response_body(e: &mut Exchange, complete: bool, cx: &mut Ctx<'_>) {
    let ct = e
        .resp_header("content-type")
        .unwrap_or("")
        .to_ascii_lowercase();
    let resp = e.resp_body.take().unwrap_or_default();
    if e.status() >= 400 {
        e.resp_excerpt = excerpt(&resp.bytes);
    }
    if !ct.contains("json") {
        return;
    }
    let cut = if let Some(why) = not_kept(e.resp_gap, &resp.charge) {
        Some(why)
    } else if e.open_at_capture_end {
        Some("JSON body cut by the end of the capture; not parsed")
    } else {
        (!complete).then_some(
            "JSON body cut short (the connection ended before its framing did); not parsed",
        )
    };
    e.resp_gap |= finish_json(
        &resp.bytes,
        cut,
        cx.opts,
        &mut e.rpc.response,
        cx.anomalies,
        cx.frame,
        cx.flow_id,
        Code::HttpResponseNotJson,
    );
}

/// How much of an error response's body [`Exchange::resp_excerpt`] keeps, in characters.
pub const EXCERPT_CHARS: usize = 160;

/// The start of a body as [`Exchange::resp_excerpt`] keeps it; `None` when it is empty.
fn excerpt(bytes: &[u8]) -> Option<String> {
    let head = &bytes[..bytes.len().min(EXCERPT_CHARS * 4)];
    let text = crate::text::lossy(head);
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out: String = words.join(" ").chars().take(EXCERPT_CHARS).collect();
    out.retain(|c| !c.is_control());
    (!out.is_empty()).then_some(out)
}

/// Give back the emitted prefix of a connection's exchanges once it is half the list (at least
/// 32): a keep-alive connection carrying many exchanges then holds only those not yet emitted,
/// not an emptied record of each one before them. Indices into the list move with it.
fn compact(conn: &mut Conn) {
    let n = conn.emitted;
    if n < 32 || n * 2 < conn.exchanges.len() {
        return;
    }
    conn.exchanges.drain(..n);
    conn.request_lows.retain(|&(i, _)| i >= n);
    conn.request_lows.iter_mut().for_each(|(i, _)| *i -= n);
    conn.emitted = 0;
    conn.next_resp = conn.next_resp.saturating_sub(n);
    conn.req_idx = conn.req_idx.and_then(|i| i.checked_sub(n));
    conn.resp_idx = conn.resp_idx.and_then(|i| i.checked_sub(n));
}

/// Response body bytes (decoded when the body has a content coding) into the SSE parser, or
/// kept (bounded) for JSON parsing at the end of the body.
#[allow(clippy::too_many_arguments)]
fn feed_body(
    sse: &mut Option<SseParser>,
    e: &mut Exchange,
    bytes: &[u8],
    ts: i64,
    frame: u64,
    opts: &HttpOptions,
    anomalies: &mut Anomalies,
    flow_id: FlowId,
) {
    match sse.as_mut() {
        Some(sse) => feed_sse(sse, Some(bytes), e, ts, frame, opts, anomalies, flow_id),
        None => {
            let b = body(&mut e.resp_body);
            append_bounded(
                &mut b.bytes,
                &mut b.charge,
                opts,
                bytes,
                anomalies,
                frame,
                flow_id,
            )
        }
    }
}

/// How an anomaly's detail names a body: "request " for a request's, nothing for a response's.
fn body_of(request: bool) -> &'static str {
    if request {
        "request "
    } else {
        ""
    }
}

/// The `http.decoded_too_large` anomaly of a request's or a response's body that reached
/// [`HttpLimits::max_decoded`] decoded bytes.
fn decoded_too_large(opts: &HttpOptions, frame: u64, flow_id: FlowId, request: bool) -> Anomaly {
    let what = body_of(request);
    Anomaly::new(
        Code::HttpDecodedTooLarge,
        Some(frame),
        Some(flow_id.to_string()),
        format!(
            "decoded {what}body over {} bytes; the rest is not parsed",
            opts.limits.max_decoded
        ),
    )
}

/// The anomaly of a request's or a response's body that stopped decoding:
/// `http.bad_content_coding`, or `http.memory_budget` when a `br` window did not fit the
/// held-bytes budget.
fn not_decoded(
    err: &coding::DecodeError,
    request: bool,
    d: &coding::BodyDecoder,
    frame: u64,
    flow_id: FlowId,
) -> Anomaly {
    let what = body_of(request);
    let (code, detail) = match err {
        coding::DecodeError::Bad(e) => (
            Code::HttpBadContentCoding,
            format!("{what}{d:?} body does not decode: {e}"),
        ),
        coding::DecodeError::Budget(n) => (
            Code::HttpMemoryBudget,
            format!("{what}{d:?} body not decoded: its {n}-byte window is more than the bytes held at once for the connections of one thread have room for"),
        ),
    };
    Anomaly::new(code, Some(frame), Some(flow_id.to_string()), detail)
}

/// Decoded request body bytes `v` into `e`'s kept body ([`append_bounded`]); when the decoder
/// reached its bound (`full`), says so (`http.decoded_too_large`) and marks the body cut.
/// Returns `full`: the caller drops the decoder.
fn keep_decoded_request(
    e: &mut Exchange,
    v: &[u8],
    full: bool,
    opts: &HttpOptions,
    anomalies: &mut Anomalies,
    frame: u64,
    flow_id: FlowId,
) -> bool {
    let b = body(&mut e.req_body);
    append_bounded(
        &mut b.bytes,
        &mut b.charge,
        opts,
        v,
        anomalies,
        frame,
        flow_id,
    );
    if full {
        anomalies.add(decoded_too_large(opts, frame, flow_id, true));
        e.req_gap = true;
    }
    full
}

fn append_bounded(
    buf: &mut Vec<u8>,
    charge: &mut crate::budget::Charge,
    opts: &HttpOptions,
    bytes: &[u8],
    anomalies: &mut Anomalies,
    frame: u64,
    flow_id: FlowId,
) {
    if charge.refused() {
        return;
    }
    let keep = bytes.len().min(MAX_JSON_BODY.saturating_sub(buf.len()));
    if keep < bytes.len() && buf.len() < MAX_JSON_BODY {
        anomalies.add(Anomaly::new(
            Code::HttpBodyTooLarge,
            Some(frame),
            Some(flow_id.to_string()),
            format!("body over {MAX_JSON_BODY} bytes not kept for JSON parsing"),
        ));
    }
    if keep == 0 {
        return;
    }
    charge.draw_on(&opts.held);
    if !charge.hold(buf.len() + keep) {
        anomalies.add(Anomaly::new(
            Code::HttpMemoryBudget,
            Some(frame),
            Some(flow_id.to_string()),
            format!(
                "the JSON bodies and SSE events held at once for the connections of one thread reached {} bytes; this body is not kept",
                opts.held.limit()
            ),
        ));
        *buf = Vec::new();
        charge.hold(0);
        return;
    }
    buf.extend_from_slice(&bytes[..keep]);
}

/// The `http.json_incomplete` detail of a body not kept whole: lost in the capture, or given
/// up at the held-bytes budget.
fn not_kept(gap: bool, charge: &crate::budget::Charge) -> Option<&'static str> {
    if gap {
        Some(LOST_IN_CAPTURE)
    } else if charge.refused() {
        Some(OVER_BUDGET)
    } else {
        None
    }
}

/// The `http.json_incomplete` detail of a body given up at the held-bytes budget.
const OVER_BUDGET: &str = "JSON body not kept whole (held-bytes budget); not parsed";

/// The `http.json_incomplete` detail of a body whose bytes the capture missed.
const LOST_IN_CAPTURE: &str = "JSON body lost bytes in the capture; not parsed";

/// Parse a whole JSON body into `out`; `incomplete` is why it is not whole (the detail of an
/// `http.json_incomplete` anomaly, and no parse). Returns whether messages of it were not kept
/// (a batch past its bounds): what rests on them cannot be judged.
#[allow(clippy::too_many_arguments)]
fn finish_json(
    body: &[u8],
    incomplete: Option<&'static str>,
    opts: &HttpOptions,
    out: &mut Vec<Message>,
    anomalies: &mut Anomalies,
    frame: u64,
    flow_id: FlowId,
    code: Code,
) -> bool {
    if body.iter().all(u8::is_ascii_whitespace) {
        return false;
    }
    if let Some(why) = incomplete {
        anomalies.add(Anomaly::new(
            Code::HttpJsonIncomplete,
            Some(frame),
            Some(flow_id.to_string()),
            why.into(),
        ));
        return false;
    }
    let parsed = match simdutf8::basic::from_utf8(body) {
        Ok(text) => parse_kept(text, opts),
        // serde_json's message for text that is not UTF-8.
        Err(_) => jsonrpc::parse_value(body, &opts.app_seq).map(|ms| jsonrpc::Parsed {
            messages: ms.into(),
            ..Default::default()
        }),
    };
    match parsed {
        Ok(p) => {
            let dropped = p.dropped > 0;
            parsed_anomalies(&Notes::of(&p), "the body", anomalies, frame, flow_id);
            *out = p.messages.into_vec();
            dropped
        }
        Err(e) => {
            anomalies.add(Anomaly::new(
                code,
                Some(frame),
                Some(flow_id.to_string()),
                e,
            ));
            false
        }
    }
}

/// What a body or an event's data parsed to, past its messages: what [`parsed_anomalies`]
/// says.
#[derive(Debug, Clone, Copy, Default)]
struct Notes {
    batch: bool,
    kept: usize,
    dropped: usize,
    invalid: usize,
    too_deep: usize,
}

impl Notes {
    fn of(p: &jsonrpc::Parsed) -> Notes {
        Notes {
            batch: p.batch,
            kept: p.messages.len(),
            dropped: p.dropped,
            invalid: p.invalid,
            too_deep: p.too_deep,
        }
    }
}

/// [`jsonrpc::parse_bounded`] within the bounds on batch elements: at most
/// [`jsonrpc::MAX_BATCH`] of one batch, and what is left of the stage's
/// [`crate::budget::BATCH_KEPT_LIMIT`], which the elements kept then take.
fn parse_kept(text: &str, opts: &HttpOptions) -> Result<jsonrpc::Parsed, String> {
    let room = &opts.kept.batch_elements;
    let p = jsonrpc::parse_bounded(text, &opts.app_seq, jsonrpc::MAX_BATCH.min(room.room()))?;
    if p.batch {
        room.take(p.messages.len());
    }
    Ok(p)
}

/// The anomalies of what a body or an event's data parsed to (`what` names it): elements not
/// kept (`jsonrpc.batch_too_large`), batch elements that are no JSON-RPC message
/// (`jsonrpc.not_a_message`), messages nested past serde_json's 128 levels
/// (`jsonrpc.too_deep`).
fn parsed_anomalies(p: &Notes, what: &str, anomalies: &mut Anomalies, frame: u64, flow_id: FlowId) {
    let n = p.kept + p.dropped;
    let mut add = |code: Code, detail: String| {
        anomalies.add(Anomaly::new(
            code,
            Some(frame),
            Some(flow_id.to_string()),
            detail,
        ))
    };
    if p.dropped > 0 {
        add(
            Code::JsonrpcBatchTooLarge,
            format!(
                "{what} is a batch of {n} elements: the first {} kept as messages, the other {} only checked and counted (at most {} a batch, {} in all per thread)",
                p.kept,
                p.dropped,
                jsonrpc::MAX_BATCH,
                crate::budget::BATCH_KEPT_LIMIT
            ),
        );
    }
    // (A single JSON value that is no JSON-RPC message is another API's body, not an anomaly:
    // it shows as an `invalid` message in the tables.)
    if p.invalid > 0 && p.batch {
        add(
            Code::JsonrpcNotAMessage,
            format!(
                "{} of the {} elements of {what}'s batch are valid JSON but no JSON-RPC message",
                p.invalid, p.kept
            ),
        );
    }
    if p.too_deep > 0 {
        add(
            Code::JsonrpcTooDeep,
            format!(
                "{} message(s) of {what} nested past 128 levels: read from their top-level members (method, id, result, error), the rest not checked",
                p.too_deep
            ),
        );
    }
}

/// Most events one response keeps: past them events are parsed and counted, not kept
/// (`sse.events_not_kept`).
pub const MAX_EVENTS_PER_RESPONSE: usize = 1 << 20;

/// What became of one event [`push_event`] was given.
#[derive(Debug, Default)]
struct Pushed {
    /// Why its data is not JSON, when it is not (a malformed event: `sse.invalid_json`).
    parse_error: Option<String>,
    /// What its data parsed to, for [`parsed_anomalies`].
    parsed: Option<Notes>,
    /// The event was not kept: a bound on the events kept was reached.
    not_kept: bool,
}

/// Parse an event's `data` as JSON-RPC and append the event to the log, within the bounds on
/// what is kept ([`MAX_EVENTS_PER_RESPONSE`], [`crate::budget::Kept`]; `coded`: the body was
/// decoded from a content coding); an event that names the stream's session keeps its `data`
/// ([`HttpOptions::event_role`]).
fn push_event(
    events: &mut EventLog,
    session_event: &mut Option<String>,
    progress: &mut Vec<(crate::text::Short, u64)>,
    ev: &SseEvent,
    opts: &HttpOptions,
    coded: bool,
) -> Pushed {
    let kept = &opts.kept;
    // A record takes at least its fixed part: with no room for that, nothing is parsed.
    let full = events.len() >= MAX_EVENTS_PER_RESPONSE
        || kept.event_bytes.room() < 64
        || (coded && kept.decoded_event_bytes.room() < 64);
    if full {
        return Pushed {
            not_kept: true,
            ..Default::default()
        };
    }
    let (data_hash, priming) = (crate::hash::hash64(ev.data.as_bytes()), ev.is_priming());
    let mut out = Pushed::default();
    let messages = if ev.data.trim().is_empty() || ev.truncated {
        smallvec::SmallVec::new()
    } else {
        match parse_kept(&ev.data, opts) {
            Ok(p) => {
                out.parsed = Some(Notes::of(&p));
                p.messages
            }
            Err(e) => {
                out.parse_error = Some(e);
                smallvec::SmallVec::new()
            }
        }
    };
    let role = match (ev.event_type.as_deref(), opts.event_role) {
        (Some(t), Some(role)) => role(t, ev.data.trim()),
        _ => EventRole::Message,
    };
    if session_event.is_none() && role == EventRole::NamesSession {
        *session_event = Some(ev.data.trim().to_string());
    }
    let before = events.bytes_used();
    events.push(
        ev,
        data_hash,
        priming,
        &messages,
        out.parse_error.as_deref(),
    );
    let cost = events.bytes_used().saturating_sub(before);
    let room =
        kept.event_bytes.room() >= cost && (!coded || kept.decoded_event_bytes.room() >= cost);
    if room {
        kept.event_bytes.take(cost);
        if coded {
            kept.decoded_event_bytes.take(cost);
        }
        for m in &messages {
            if let (Some("notifications/progress"), Some(t)) =
                (m.method.as_deref(), m.progress_token.as_deref())
            {
                match progress.iter_mut().find(|(k, _)| k == t) {
                    Some((_, n)) => *n += 1,
                    None => progress.push((t.into(), 1)),
                }
            }
        }
    } else {
        events.pop();
        out.not_kept = true;
    }
    if role != EventRole::Message {
        out.parse_error = None;
    }
    out
}

/// Push `bytes` of exchange `e`'s response body into its SSE parser, or end the body (`None`):
/// each event goes into the exchange's log (one whose data is not JSON-RPC is also an
/// `sse.invalid_json` anomaly), each anomaly with the frame, when it names none, and the flow.
#[allow(clippy::too_many_arguments)]
fn feed_sse(
    sse: &mut SseParser,
    bytes: Option<&[u8]>,
    e: &mut Exchange,
    ts: i64,
    frame: u64,
    opts: &HttpOptions,
    anomalies: &mut Anomalies,
    flow_id: FlowId,
) {
    let coded = e.resp_coded;
    let (events, session_event, counts) = (
        &mut e.sse.events,
        &mut e.sse.session_event,
        &mut e.sse.progress_counts,
    );
    let mut pushed = Vec::new();
    let mut out = |ev: &SseEvent| {
        let p = push_event(events, session_event, counts, ev, opts, coded);
        if p.parse_error.is_some() || p.not_kept || p.parsed.as_ref().is_some_and(noteworthy) {
            pushed.push((ev.frame_first, p));
        }
    };
    let mut an = |mut a: Anomaly| {
        a.frame = a.frame.or(Some(frame));
        a.flow_id = Some(flow_id.to_string());
        anomalies.add(a)
    };
    match bytes {
        Some(bytes) => sse.push(bytes, ts, frame, &mut out, &mut an),
        None => sse.finish(ts, frame, &mut out, &mut an),
    }
    for (at, p) in pushed {
        if let Some(why) = p.parse_error {
            bad_event(anomalies, flow_id, (at, why));
        }
        if let Some(parsed) = &p.parsed {
            parsed_anomalies(parsed, "an event's data", anomalies, at, flow_id);
            if parsed.dropped > 0 {
                e.resp_gap = true;
            }
        }
        if p.not_kept {
            if e.sse.not_kept == 0 {
                anomalies.add(Anomaly::new(
                    Code::SseEventsNotKept,
                    Some(at),
                    Some(flow_id.to_string()),
                    format!(
                        "events of this response from here on are not kept (the rest of a content-coded body is not decoded): a bound on the events kept was reached (at most {MAX_EVENTS_PER_RESPONSE} a response, {} MiB of event records per thread, {} MiB for content-coded bodies); what rests on them is unverifiable",
                        opts.kept.event_bytes.limit() >> 20,
                        opts.kept.decoded_event_bytes.limit() >> 20
                    ),
                ));
            }
            e.sse.not_kept += 1;
            e.resp_gap = true;
        }
    }
}

/// Whether what an event's data parsed to calls for an anomaly ([`parsed_anomalies`]).
fn noteworthy(p: &Notes) -> bool {
    p.dropped > 0 || (p.batch && p.invalid > 0) || p.too_deep > 0
}

/// `http.not_http`: the connection's first bytes (in frame `at`) are no HTTP/1.x message.
pub(super) fn not_http(flow: &FlowMeta, at: u64) -> Anomaly {
    Anomaly::new(
        Code::HttpNotHttp,
        Some(at),
        Some(flow.flow_id()),
        "connection does not start with an HTTP/1.x message".into(),
    )
}

/// The anomaly of an event whose data is not JSON-RPC: `(frame, why)`, its first frame and the
/// reason.
fn bad_event(anomalies: &mut Anomalies, flow_id: FlowId, (frame, why): (u64, String)) {
    anomalies.add(Anomaly::new(
        Code::SseInvalidJson,
        Some(frame),
        Some(flow_id.to_string()),
        format!("event data is not a JSON-RPC message: {why}"),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JSON body that would take the held bytes past the budget is given up whole: its bytes
    /// are given back at once, later bytes are not kept, and it is not parsed.
    #[test]
    fn a_body_past_the_held_budget_is_given_up() {
        let opts = HttpOptions {
            held: crate::budget::Budget::new(100),
            ..Default::default()
        };
        let (mut buf, mut charge) = (Vec::new(), crate::budget::Charge::default());
        let mut an = Anomalies::default();
        let mut add = |buf: &mut Vec<u8>, charge: &mut crate::budget::Charge, bytes: &[u8]| {
            append_bounded(buf, charge, &opts, bytes, &mut an, 1, FlowId(0));
        };
        add(&mut buf, &mut charge, &[b' '; 60]);
        assert_eq!((buf.len(), opts.held.held()), (60, 60));
        assert_eq!(not_kept(false, &charge), None);
        add(&mut buf, &mut charge, &[b' '; 60]);
        assert_eq!((buf.len(), opts.held.held()), (0, 0));
        add(&mut buf, &mut charge, b"{}");
        assert!(buf.is_empty());
        assert_eq!(an.count(Code::HttpMemoryBudget), 1);
        assert_eq!(not_kept(false, &charge), Some(OVER_BUDGET));
        assert_eq!(not_kept(true, &charge), Some(LOST_IN_CAPTURE));
    }
}
