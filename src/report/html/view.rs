//! What the report shows of one session, gathered once from the model for its timeline and
//! its narrative: the session's connections (each SSE response of it is one), how each ended,
//! its other exchanges, its resumptions and its findings.

use std::collections::HashMap;

use crate::detect::{Analysis, Finding};
use crate::http::{EventRec, Exchange};
use crate::mcp::StreamKind;
use crate::report::tables::FlowsPart;
use crate::tcp::{FlowId, FlowRow};

/// Connections drawn per session at most: a client looping on one cursor opens thousands.
/// Beyond it the first [`KEEP_FIRST`], the last [`KEEP_LAST`] and those findings cite stay.
pub const MAX_LANES: usize = 40;
const KEEP_FIRST: usize = 20;
const KEEP_LAST: usize = 10;

/// How a connection's response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// As its framing said (its last chunk, its length, or the close that ends it).
    Complete,
    /// Reset by the server's side (the server, or the proxy in front of it).
    ServerReset,
    /// Reset by the client's side.
    ClientReset,
    /// Closed by the server side's FIN before the response was complete.
    ServerFin,
    /// Closed by the client while the response was streaming.
    ClientClose,
    /// Bytes of it are missing from the capture.
    Gap,
    /// Still open when the capture ended.
    Open,
    /// Cut short, with no close or reset captured.
    Cut,
    /// An HTTP/2 stream reset by the server's side (RST_STREAM).
    ServerStreamReset,
    /// An HTTP/2 stream past the last stream identifier of a GOAWAY: not processed.
    GoAway,
    /// An HTTP/2 stream reset by the client (RST_STREAM).
    ClientStreamReset,
}

impl End {
    /// The short label drawn at the connection's end.
    pub fn label(self) -> &'static str {
        match self {
            End::Complete => "end",
            End::ServerReset => "RST",
            End::ClientReset => "RST (client)",
            End::ServerFin => "FIN",
            End::ClientClose => "closed by client",
            End::Gap => "capture gap",
            End::Open => "open at capture end",
            End::Cut => "cut",
            End::ServerStreamReset => "RST_STREAM",
            End::ClientStreamReset => "RST_STREAM (client)",
            End::GoAway => "GOAWAY",
        }
    }

    /// What happened to the connection, as a verb phrase for the narrative.
    pub fn phrase(self) -> &'static str {
        match self {
            End::Complete => "ended normally",
            End::ServerReset => "was cut by a RST from the server side",
            End::ClientReset => "was reset by the client",
            End::ServerFin => {
                "was closed by the server side (FIN) before its response was complete"
            }
            End::ClientClose => "was closed by the client",
            End::Gap => "lost bytes to a capture gap",
            End::Open => "was still open when the capture ended",
            End::Cut => "ended before its response was complete",
            End::ServerStreamReset => {
                "was cut by an HTTP/2 RST_STREAM from the server side (its connection stayed open)"
            }
            End::ClientStreamReset => "was reset by the client (HTTP/2 RST_STREAM)",
            End::GoAway => "was not processed: it is past the last stream of an HTTP/2 GOAWAY",
        }
    }

    /// Whether the connection ended other than as its framing said.
    pub fn is_cut(self) -> bool {
        !matches!(self, End::Complete | End::Open)
    }
}

/// One connection of a session: an exchange with an SSE response (a lane of the timeline).
#[derive(Debug, Clone)]
pub struct Conn {
    /// The exchange.
    pub x: usize,
    /// Its logical stream, `S<n>`.
    pub stream: Option<usize>,
    /// The resumption it is (index into `Model::resumptions` and `Analysis::resumptions`).
    pub resumption: Option<usize>,
    /// What it is, in a few words: `S2 POST tools/call 2`, `S1 GET`, `S2 resume from 9`.
    pub label: String,
    /// Its flow, client port and server: `F3 :51234 → 10.0.0.1:3300`.
    pub sub: String,
    /// The backend that served it, when known: `backend 10.0.0.2:3302 (b2)`.
    pub backend: Option<String>,
    /// When it began and ended, µs since the Unix epoch (the capture's end when still open).
    pub start: i64,
    /// See `start`.
    pub end: i64,
    /// How it ended.
    pub how: End,
    /// The frame of its end: the RST or FIN when one ended it, else its response's last frame.
    pub end_frame: u64,
}

/// An exchange of the session that is no connection of the timeline (a JSON response, a 202,
/// a DELETE): a marker on the timeline's request lane.
#[derive(Debug, Clone)]
pub struct Other {
    /// The exchange.
    pub x: usize,
    /// `POST initialize → 200`.
    pub label: String,
}

/// Everything the report shows of one session.
#[derive(Debug, Clone)]
pub struct SessionView<'a> {
    /// Index of the session in the model.
    pub session: usize,
    /// Connections drawn, in time order.
    pub conns: Vec<Conn>,
    /// Connections of the session left out of the drawing (over [`MAX_LANES`]).
    pub conns_left_out: usize,
    /// Its other exchanges, in time order.
    pub others: Vec<Other>,
    /// Its findings, each with its number from 1.
    pub findings: Vec<(usize, &'a Finding)>,
    /// Its resumptions (indices into `Analysis::resumptions`), in time order.
    pub resumptions: Vec<usize>,
}

/// The capture's end when nothing later is known: the latest time of any exchange.
pub fn capture_end(exchanges: &[Exchange]) -> i64 {
    exchanges
        .iter()
        .filter_map(|e| e.ts_end.or(e.ts_response).or(e.ts_request))
        .max()
        .unwrap_or(0)
}

/// The row of flow `index` and its client's direction, from whichever vantage point has it.
pub fn flow_row(parts: &[FlowsPart<'_>], index: usize) -> Option<(FlowRow, usize)> {
    parts.iter().find_map(|p| {
        let row = p.flows.row(index)?;
        let client = p
            .client_dir
            .get(&index)
            .copied()
            .unwrap_or_else(|| row.client_guess());
        Some((row, client))
    })
}

/// How exchange `e` ended and the frame of its end (`flow`: its flow's row and client
/// direction).
pub fn how_it_ended(e: &Exchange, flow: Option<&(FlowRow, usize)>) -> (End, u64) {
    let last = e.frame_last.unwrap_or_else(|| e.frame());
    let at = |f: u64| if f >= e.frame() && f != 0 { f } else { last };
    if e.open_at_capture_end {
        return (End::Open, last);
    }
    if e.resp_complete {
        return (End::Complete, last);
    }
    if let Some(h) = e.h2_end {
        let how = match (h.goaway, h.by_client) {
            (true, _) => End::GoAway,
            (false, true) => End::ClientStreamReset,
            (false, false) => End::ServerStreamReset,
        };
        return (how, at(h.frame));
    }
    let Some((row, c)) = flow else {
        return (if e.resp_gap { End::Gap } else { End::Cut }, last);
    };
    let (c, s) = (*c, 1 - *c);
    if row.rst[s] {
        (End::ServerReset, at(row.end_frame[s]))
    } else if row.rst[c] {
        (End::ClientReset, at(row.end_frame[c]))
    } else if e.resp_gap {
        (End::Gap, last)
    } else if e.client_closed {
        (End::ClientClose, at(row.end_frame[c]))
    } else if row.fin[s] {
        (End::ServerFin, at(row.end_frame[s]))
    } else {
        (End::Cut, last)
    }
}

/// Whether exchange `e` was refused or went unanswered: no response captured, or a status of
/// 400 or more — but for a 405 to a GET, which a server without a standalone GET stream answers
/// (MCP 2025-11-25 "Listening for Messages from the Server").
pub fn refused(e: &Exchange) -> bool {
    match e.status() {
        0 => true,
        405 if e.method() == "GET" => false,
        s => s >= 400,
    }
}

/// The JSON-RPC method and id of exchange `e`'s first message: `tools/call (id 2)`.
pub fn request_words(e: &Exchange) -> Option<String> {
    let m = e.rpc.request.first()?;
    Some(match (m.method.as_deref(), m.id.as_deref()) {
        (Some(method), Some(id)) => format!("{method} (id {id})"),
        (Some(method), None) => method.to_string(),
        (None, _) => return None,
    })
}

/// What an event carries, in a few words: `response 2`, `notifications/progress 3/10`,
/// `priming`, `not JSON`.
pub fn event_words(ev: &EventRec<'_>) -> String {
    use crate::jsonrpc::Kind;
    if ev.priming {
        return "priming event (a cursor, no message)".to_string();
    }
    if ev.sse.truncated {
        return "cut short by the end of the stream".to_string();
    }
    if let Some(err) = ev.parse_error {
        return format!("data not JSON ({err})");
    }
    let words: Vec<String> = ev
        .messages
        .refs()
        .map(|m| match m.kind {
            Kind::Response => format!("response to {}", m.id.unwrap_or("?")),
            Kind::Error => format!(
                "error {} to {}",
                m.error_code.map_or("?".to_string(), |c| c.to_string()),
                m.id.unwrap_or("?")
            ),
            Kind::Request => format!("request {} {}", m.method.unwrap_or("?"), m.id.unwrap_or("")),
            Kind::Notification => match m.progress {
                Some(p) => format!(
                    "{} {}",
                    m.method.unwrap_or("notification"),
                    crate::detect::fmt_num(p)
                ),
                None => m.method.unwrap_or("notification").to_string(),
            },
            Kind::Invalid => "JSON, not JSON-RPC".to_string(),
        })
        .collect();
    if words.is_empty() {
        "no message".to_string()
    } else {
        words.join(", ")
    }
}

/// The timeline's tick class of an event: `resp` (a response or error), `req` (a request),
/// `prog` (progress), `prime` (priming), `bad` (cut or not JSON), `msg` (anything else).
pub fn event_class(ev: &EventRec<'_>) -> &'static str {
    use crate::jsonrpc::Kind;
    if ev.priming {
        return "prime";
    }
    if ev.sse.truncated || ev.parse_error.is_some() {
        return "bad";
    }
    let mut class = "msg";
    for m in ev.messages.refs() {
        match m.kind {
            Kind::Response | Kind::Error => return "resp",
            Kind::Request => class = "req",
            Kind::Notification if m.progress.is_some() && class == "msg" => class = "prog",
            _ => {}
        }
    }
    class
}

/// What every session's view looks up, computed once for the report.
#[derive(Debug, Clone, Default)]
pub struct Index<'l> {
    /// The findings of each session label, by their index in `Analysis::findings`.
    pub by_session: HashMap<&'l str, Vec<usize>>,
    /// The resumption (index into `Analysis::resumptions`) each resuming exchange is.
    pub resumption_of: HashMap<usize, usize>,
    /// The capture's end ([`capture_end`]).
    pub end_of_capture: i64,
}

impl<'l> Index<'l> {
    /// The index of `a`'s findings and resumptions over `ex`.
    pub fn new(a: &'l Analysis, ex: &[Exchange]) -> Index<'l> {
        let mut by_session: HashMap<&str, Vec<usize>> = HashMap::new();
        for (k, f) in a.findings.iter().enumerate() {
            by_session.entry(f.session_id.as_str()).or_default().push(k);
        }
        let resumption_of = a
            .resumptions
            .iter()
            .enumerate()
            .map(|(k, r)| (a.model.resumptions[r.index].exchange, k))
            .collect();
        Index {
            by_session,
            resumption_of,
            end_of_capture: capture_end(ex),
        }
    }
}

impl<'a> SessionView<'a> {
    /// The view of session `si`.
    pub fn new(
        a: &'a Analysis,
        ex: &[Exchange],
        parts: &[FlowsPart<'_>],
        si: usize,
        index: &Index<'_>,
    ) -> SessionView<'a> {
        let m = &a.model;
        let s = &m.sessions[si];
        let (resumption_of, end_of_capture) = (&index.resumption_of, index.end_of_capture);
        let findings: Vec<(usize, &Finding)> = index
            .by_session
            .get(s.label_str())
            .into_iter()
            .flatten()
            .map(|&k| (k + 1, &a.findings[k]))
            .collect();
        let resumptions: Vec<usize> = s
            .exchanges
            .iter()
            .filter_map(|x| resumption_of.get(x).copied())
            .collect();
        let mut flows: HashMap<usize, Option<(FlowRow, usize)>> = HashMap::new();
        let mut conns = Vec::new();
        let mut others = Vec::new();
        for &x in &s.exchanges {
            let e = &ex[x];
            if !e.is_sse && e.sse.events.is_empty() {
                let status = match e.status() {
                    0 => "no response".to_string(),
                    n => n.to_string(),
                };
                let what = request_words(e)
                    .map(|w| format!(" {w}"))
                    .unwrap_or_default();
                others.push(Other {
                    x,
                    label: format!("{}{what} → {status}", e.method()),
                });
                continue;
            }
            let flow = flows
                .entry(e.flow_index)
                .or_insert_with(|| flow_row(parts, e.flow_index));
            let (how, end_frame) = how_it_ended(e, flow.as_ref());
            conns.push(conn(
                a,
                ex,
                x,
                resumption_of.get(&x).copied(),
                how,
                end_frame,
                end_of_capture,
            ));
        }
        let (conns, conns_left_out) = keep_lanes(conns, ex, &findings);
        SessionView {
            session: si,
            conns,
            conns_left_out,
            others,
            findings,
            resumptions,
        }
    }
}

/// Connection `x` of the timeline (`r`: the resumption it is).
fn conn(
    a: &Analysis,
    ex: &[Exchange],
    x: usize,
    r: Option<usize>,
    how: End,
    end_frame: u64,
    end_of_capture: i64,
) -> Conn {
    let m = &a.model;
    let e = &ex[x];
    let stream = m.exchange_stream.get(x).copied().flatten();
    let st = stream.map_or("S?".to_string(), |s| format!("S{s}"));
    let origin = stream.is_some_and(|s| m.streams[s].origin == x);
    let label = match (r, stream) {
        (Some(k), _) => format!(
            "{st} resume after {}",
            m.resumptions[a.resumptions[k].index].last_event_id
        ),
        (None, Some(s)) if origin && m.streams[s].kind == StreamKind::Post => {
            let what = request_words(e).unwrap_or_default();
            format!("{st} POST {what}")
        }
        (None, Some(s)) if origin && m.streams[s].kind == StreamKind::Get => format!("{st} GET"),
        _ => format!("{st} {}", e.method()),
    };
    let port = e.client_port.map(|p| format!(" :{p}")).unwrap_or_default();
    let port = match e.h2_stream {
        Some(id) => format!("{port} h2 stream {id}"),
        None => port,
    };
    let server = e
        .server
        .map(|(ip, p)| format!(" → {ip}:{p}"))
        .unwrap_or_default();
    let backend = m.backend(x).map(|b| format!("backend {b}"));
    let start = e.ts();
    let end = if how == End::Open {
        end_of_capture.max(start)
    } else {
        e.ts_end.or(e.ts_last_byte).unwrap_or(start).max(start)
    };
    Conn {
        x,
        stream,
        resumption: r,
        label,
        sub: format!("{}{port}{server}", FlowId(e.flow_index)),
        backend,
        start,
        end,
        how,
        end_frame,
    }
}

/// At most [`MAX_LANES`] of `conns`: the first, the last and those a finding cites by frame.
fn keep_lanes(
    conns: Vec<Conn>,
    ex: &[Exchange],
    findings: &[(usize, &Finding)],
) -> (Vec<Conn>, usize) {
    if conns.len() <= MAX_LANES {
        return (conns, 0);
    }
    let n = conns.len();
    let cited = |c: &Conn| {
        let e = &ex[c.x];
        let (lo, hi) = (
            e.frame(),
            e.frame_last.unwrap_or(e.frame()).max(c.end_frame),
        );
        findings.iter().any(|(_, f)| {
            f.cited
                .iter()
                .any(|k| k.flow_index == e.flow_index && (lo..=hi).contains(&k.frame))
        })
    };
    let mut kept = 0;
    let mut out = Vec::with_capacity(MAX_LANES);
    for (i, c) in conns.into_iter().enumerate() {
        let keep =
            i < KEEP_FIRST || i + KEEP_LAST >= n || (kept < MAX_LANES - KEEP_LAST && cited(&c));
        if keep && out.len() < MAX_LANES {
            out.push(c);
            kept += 1;
        }
    }
    let left = n - out.len();
    (out, left)
}
