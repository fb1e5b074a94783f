//! The `calls` facts: one record per JSON-RPC request of a session (batches split), with its
//! response, its latency and how it ended, read once after the detectors have run so that each
//! call names the findings that concern it.
//!
//! A call is a request the client sent in a POST body (JSON-RPC 2.0 §4.1) or one the server
//! sent on an SSE stream (MCP "Sampling", "Elicitation", "Roots", `ping`). Its response is the
//! first JSON-RPC response or error with its id that reached the other side in the same session
//! after it was sent and before the next request with the same id (a client that reuses an id
//! gets one response per request). Only client-facing observations count: a proxy's backend
//! hop repeats what the client saw.

use crate::hash::FastMap as HashMap;

use super::{Finding, Kind as FindingKind};
use crate::http::Exchange;
use crate::jsonrpc::Kind;
use crate::mcp::Model;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A JSON-RPC result reached the caller.
    Result,
    /// A JSON-RPC error reached the caller.
    Error,
    /// The response reached the caller more than once (a `duplicate_delivery` names it).
    AnsweredTwice,
    /// No response; the client sent `notifications/cancelled` for it (MCP "Cancellation").
    Cancelled,
    /// No JSON-RPC response; the HTTP request was answered with an error status (a 404 for a
    /// session the server no longer knows, a 400, …).
    Refused,
    /// No response, and the wire proves none came (`lost_response`).
    Lost,
    /// No response in the capture, but it may lie outside it (`response_unverifiable`).
    Unverifiable,
    /// No response, and none was owed or none can be asked for: the client ended the session
    /// or closed the stream, re-sent the request (MCP 2026-07-28), or the request was the
    /// server's and the client did not answer it.
    Unanswered,
}

impl Outcome {
    /// Lower-case name, as in the `calls` table.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Result => "result",
            Outcome::Error => "error",
            Outcome::AnsweredTwice => "answered_twice",
            Outcome::Cancelled => "cancelled",
            Outcome::Refused => "refused",
            Outcome::Lost => "lost",
            Outcome::Unverifiable => "unverifiable",
            Outcome::Unanswered => "unanswered",
        }
    }
}

/// One JSON-RPC request and what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Session index ([`Model::sessions`]).
    pub session: usize,
    /// The exchange that carried the request: the POST, or the SSE response of a server request.
    pub exchange: usize,
    /// Logical stream of its response (a POST's SSE stream), or the stream that carried a server
    /// request.
    pub stream: Option<usize>,
    /// `client` for a request the client sent, `server` for one the server sent.
    pub from_server: bool,
    /// `method`.
    pub method: String,
    /// `params.name`, else `params.uri` ([`crate::jsonrpc::Message::target`]).
    pub name: Option<String>,
    /// `id` as compact JSON text.
    pub request_id: String,
    /// When the request was sent (its exchange's request, or its event), µs since the Unix epoch.
    pub ts_request: i64,
    /// Frame of the request (its first frame).
    pub frame: u64,
    /// When its first response reached the caller, µs since the Unix epoch.
    pub ts_response: Option<i64>,
    /// Frame of that response.
    pub frame_response: Option<u64>,
    /// How it ended.
    pub outcome: Outcome,
    /// HTTP status of the exchange that carried a client request (0 when not captured).
    pub status: u16,
    /// `error.code` of an error response.
    pub error_code: Option<i64>,
    /// `notifications/progress` the caller received for its progress token on its stream.
    pub progress: u64,
    /// The progress token the request set (`params._meta.progressToken`, compact JSON).
    pub progress_token: Option<String>,
    /// Physical connections its response stream used (its POST response, then resumptions); 0
    /// for a server request.
    pub connections: u64,
    /// The findings that concern it, as indices into [`super::Analysis::findings`] (the
    /// `findings` table numbers them from 1): those naming its request id in its session, and
    /// those whose evidence lies on a connection of its stream.
    pub findings: Vec<usize>,
}

/// A response that reached its caller: (time, frame, error code when an error).
type Answer = (i64, u64, Option<i64>, bool);

/// The calls of every session, in time order of their requests (then frame and id).
pub fn build(model: &Model, exchanges: &[Exchange], findings: &[Finding]) -> Vec<Call> {
    let mut calls = Vec::new();
    let headless = headless_answers(model, exchanges);
    for si in 0..model.sessions.len() {
        let first = calls.len();
        let seen = read_session(model, exchanges, si, &mut calls);
        let mine = &mut calls[first..];
        count_progress(model, exchanges, mine);
        mine.sort_by(|a, b| {
            (a.ts_request, a.frame, &a.request_id).cmp(&(b.ts_request, b.frame, &b.request_id))
        });
        settle(model, exchanges, si, &seen, &headless, findings, mine);
    }
    link_stream_findings(model, exchanges, findings, &mut calls);
    calls.sort_by(|a, b| {
        (a.ts_request, a.frame, a.session, &a.request_id).cmp(&(
            b.ts_request,
            b.frame,
            b.session,
            &b.request_id,
        ))
    });
    calls
}

/// What a session's exchanges show of its calls' answers.
#[derive(Default)]
struct Seen<'a> {
    /// Responses by id, in time order: those the server sent (JSON bodies and SSE events)
    /// answer client requests; those in POST bodies answer server requests.
    to_client: HashMap<&'a str, Vec<Answer>>,
    to_server: HashMap<&'a str, Vec<Answer>>,
    /// Cancels the client sent, by request id: when.
    cancels: HashMap<&'a str, Vec<i64>>,
}

/// Read session `si`: its calls (appended to `calls`, outcomes not yet known) and what
/// answers them.
fn read_session<'a>(
    model: &Model,
    exchanges: &'a [Exchange],
    si: usize,
    calls: &mut Vec<Call>,
) -> Seen<'a> {
    let s = &model.sessions[si];
    let mut seen = Seen::default();
    // The legacy transport's GET streams of the session, which carry every answer.
    let legacy: Vec<usize> = s
        .exchanges
        .iter()
        .copied()
        .filter(|&g| exchanges[g].sse.session_event.is_some())
        .collect();
    for &xi in &s.exchanges {
        let e = &exchanges[xi];
        for m in &e.rpc.request {
            if let Some(c) = m.cancels() {
                seen.cancels.entry(c).or_default().push(e.ts());
            }
            match (m.kind, m.id.as_deref()) {
                (Kind::Request, Some(id)) => {
                    calls.push(call(model, exchanges, &legacy, si, xi, m, id))
                }
                (Kind::Response | Kind::Error, Some(id)) => seen
                    .to_server
                    .entry(id)
                    .or_default()
                    .push((e.ts(), e.frame(), m.error_code(), m.kind == Kind::Error)),
                _ => {}
            }
        }
        for m in e.rpc.response.iter() {
            if let (Kind::Response | Kind::Error, Some(id)) = (m.kind, m.id.as_deref()) {
                seen.to_client.entry(id).or_default().push((
                    e.ts_response.unwrap_or(e.ts()),
                    e.frame_response.unwrap_or(e.frame()),
                    m.error_code(),
                    m.kind == Kind::Error,
                ));
            }
        }
        // Only the events that answer or ask are decoded (progress was counted as the events
        // came: `SseFacts::progress_counts`).
        let wanted = e
            .sse
            .events
            .briefs()
            .filter(|(_, b)| !b.truncated && (b.has_response || b.has_request));
        for ev in wanted.filter_map(|(i, _)| e.sse.events.get(i)) {
            for m in ev.messages.refs() {
                match (m.kind, m.id) {
                    (Kind::Response | Kind::Error, Some(id)) => {
                        seen.to_client.entry(id).or_default().push((
                            ev.sse.ts,
                            ev.sse.frame_first,
                            m.error_code,
                            m.kind == Kind::Error,
                        ))
                    }
                    (Kind::Request, Some(id)) => {
                        calls.push(server_call(model, si, xi, &ev, m.method, id))
                    }
                    _ => {}
                }
            }
        }
    }
    for v in seen
        .to_client
        .values_mut()
        .chain(seen.to_server.values_mut())
    {
        v.sort_unstable_by_key(|a| (a.0, a.1));
    }
    seen
}

/// Progress for the token each client request set (MCP "Progress"), on the connections that
/// carry its answer.
fn count_progress(model: &Model, exchanges: &[Exchange], calls: &mut [Call]) {
    for c in calls.iter_mut().filter(|c| !c.from_server) {
        if let Some(t) = c.progress_token.as_deref() {
            let conns: &[usize] = match c.stream {
                Some(st) => &model.streams[st].connections,
                None => std::slice::from_ref(&c.exchange),
            };
            c.progress = conns
                .iter()
                .flat_map(|&x| &exchanges[x].sse.progress_counts)
                .filter(|(k, _)| k == t)
                .map(|(_, n)| n)
                .sum();
        }
    }
}

/// The response, outcome and findings of each call of session `si` (`calls`, in time order).
fn settle(
    model: &Model,
    exchanges: &[Exchange],
    si: usize,
    seen: &Seen,
    headless: &HeadlessAnswers,
    findings: &[Finding],
    calls: &mut [Call],
) {
    // The next request of each id on each side, for the end of its response window.
    let mut next_of: Vec<i64> = vec![i64::MAX; calls.len()];
    let mut later: HashMap<(bool, &str), i64> = HashMap::default();
    for (k, c) in calls.iter().enumerate().rev() {
        if let Some(&t) = later.get(&(c.from_server, c.request_id.as_str())) {
            next_of[k] = t;
        }
        later.insert((c.from_server, c.request_id.as_str()), c.ts_request);
    }
    let label = model.sessions[si].label_str();
    // Findings of the session by request id.
    let mut by_request: HashMap<&str, Vec<usize>> = HashMap::default();
    for (n, f) in findings
        .iter()
        .enumerate()
        .filter(|(_, f)| f.session_id == label)
    {
        if let Some(r) = f.request_id.as_deref() {
            by_request.entry(r).or_default().push(n);
        }
    }
    for (k, c) in calls.iter_mut().enumerate() {
        let next = next_of[k];
        let named: &[usize] = by_request
            .get(c.request_id.as_str())
            .map_or(&[], Vec::as_slice);
        outcome(exchanges, seen, headless, findings, named, next, c);
        c.findings = named
            .iter()
            .copied()
            .filter(|&n| findings[n].ts >= c.ts_request && findings[n].ts < next)
            .collect();
    }
}

/// How call `c` ended, given the findings that name its request id (`named`) and the time of
/// the next request with its id (`next`, which ends its response window).
fn outcome(
    exchanges: &[Exchange],
    seen: &Seen,
    headless: &HeadlessAnswers,
    findings: &[Finding],
    named: &[usize],
    next: i64,
    c: &mut Call,
) {
    let answers = if c.from_server {
        &seen.to_server
    } else {
        &seen.to_client
    };
    let window = |a: &&Answer| a.0 >= c.ts_request && a.0 < next;
    let got: Option<&Answer> = answers
        .get(c.request_id.as_str())
        .and_then(|v| v.iter().find(window));
    let kind_named = |kind: FindingKind| named.iter().any(|&n| findings[n].kind == kind);
    if let Some(&(ts, frame, code, is_error)) = got {
        c.ts_response = Some(ts);
        c.frame_response = Some(frame);
        c.error_code = code;
        c.outcome = match (kind_named(FindingKind::DuplicateDelivery), is_error) {
            (true, _) => Outcome::AnsweredTwice,
            (false, true) => Outcome::Error,
            (false, false) => Outcome::Result,
        };
        return;
    }
    let cancelled = !c.from_server
        && seen
            .cancels
            .get(c.request_id.as_str())
            .is_some_and(|v| v.iter().any(|&t| t >= c.ts_request && t < next));
    let elsewhere = (!c.from_server)
        .then(|| {
            let e = &exchanges[c.exchange];
            headless
                .get(&(e.server, e.client, c.request_id.as_str()))?
                .iter()
                .find(|a| a.0 >= c.ts_request)
        })
        .flatten();
    c.outcome = if kind_named(FindingKind::LostResponse) {
        Outcome::Lost
    } else if kind_named(FindingKind::ResponseUnverifiable) {
        Outcome::Unverifiable
    } else if let Some(&(ts, frame, code, is_error)) = elsewhere {
        c.ts_response = Some(ts);
        c.frame_response = Some(frame);
        c.error_code = code;
        if is_error {
            Outcome::Error
        } else {
            Outcome::Result
        }
    } else if cancelled {
        Outcome::Cancelled
    } else if c.status >= 400 {
        Outcome::Refused
    } else {
        Outcome::Unanswered
    };
}

/// Responses by (server, client address, id): see [`headless_answers`].
type HeadlessAnswers<'a> = HashMap<
    (
        Option<(std::net::IpAddr, u16)>,
        Option<std::net::IpAddr>,
        &'a str,
    ),
    Vec<Answer>,
>;

/// Responses on event streams the capture began inside that no session took (no header names
/// their session: the legacy transport's GET stream without its `endpoint` event), by server,
/// client address and id: a request from that client to that server, answered there after it
/// was sent, was answered in its session (as `lost_response` reads them).
fn headless_answers<'a>(model: &Model, exchanges: &'a [Exchange]) -> HeadlessAnswers<'a> {
    let mut out: HashMap<_, Vec<Answer>> = HashMap::default();
    for (hx, h) in exchanges.iter().enumerate() {
        if h.headless.is_none() || model.sessions[model.exchange_session[hx]].id.is_some() {
            continue;
        }
        for ev in h.sse.events.iter().filter(|ev| !ev.sse.truncated) {
            for m in ev.messages.refs() {
                if let (Kind::Response | Kind::Error, Some(id)) = (m.kind, m.id) {
                    out.entry((h.server, h.client, id)).or_default().push((
                        ev.sse.ts,
                        ev.sse.frame_first,
                        m.error_code,
                        m.kind == Kind::Error,
                    ));
                }
            }
        }
    }
    out
}

/// The request `m` (id `id`) the client sent in exchange `xi` of session `si`, its outcome not
/// yet known.
fn call(
    model: &Model,
    exchanges: &[Exchange],
    legacy: &[usize],
    si: usize,
    xi: usize,
    m: &crate::jsonrpc::Message,
    id: &str,
) -> Call {
    let e = &exchanges[xi];
    let stream = model.exchange_stream[xi];
    // The connections that carry its answer: its stream's; on the legacy transport
    // (2024-11-05), the session's GET stream that got the `endpoint` event; else its own.
    let conns: &[usize] = match stream {
        Some(st) => &model.streams[st].connections,
        None if !e.is_sse && !legacy.is_empty() => legacy,
        None => std::slice::from_ref(&xi),
    };
    // A legacy request's answer comes on the session's GET stream: that is its stream.
    let stream = stream.or_else(|| {
        std::ptr::eq(conns, legacy)
            .then(|| legacy.first().and_then(|&g| model.exchange_stream[g]))
            .flatten()
    });
    Call {
        session: si,
        exchange: xi,
        stream,
        from_server: false,
        method: m.method.as_deref().unwrap_or("").to_string(),
        name: m.target().map(str::to_string),
        request_id: id.to_string(),
        ts_request: e.ts_request.unwrap_or(e.ts()),
        frame: e.frame_request.unwrap_or(e.frame()),
        ts_response: None,
        frame_response: None,
        outcome: Outcome::Unanswered,
        status: e.status(),
        error_code: None,
        progress: 0,
        progress_token: m.request_progress_token().map(str::to_string),
        connections: if e.response.is_some() || stream.is_some() || conns.len() > 1 {
            conns.len() as u64
        } else {
            0
        },
        findings: Vec::new(),
    }
}

/// A request the server sent on the SSE response of exchange `xi` (`method`, id `id`), at
/// event `ev`.
fn server_call(
    model: &Model,
    si: usize,
    xi: usize,
    ev: &crate::http::EventRec<'_>,
    method: Option<&str>,
    id: &str,
) -> Call {
    Call {
        session: si,
        exchange: xi,
        stream: model.exchange_stream[xi],
        from_server: true,
        method: method.unwrap_or("").to_string(),
        name: None,
        request_id: id.to_string(),
        ts_request: ev.sse.ts,
        frame: ev.sse.frame_first,
        ts_response: None,
        frame_response: None,
        outcome: Outcome::Unanswered,
        status: 0,
        error_code: None,
        progress: 0,
        progress_token: None,
        connections: 0,
        findings: Vec::new(),
    }
}

/// Adds to each call the findings whose evidence (flow and frame) lies on a connection of its
/// response stream: a resumption's findings concern the call whose stream it resumed.
fn link_stream_findings(
    model: &Model,
    exchanges: &[Exchange],
    findings: &[Finding],
    calls: &mut [Call],
) {
    // Client calls by stream.
    let mut of_stream: HashMap<usize, Vec<usize>> = HashMap::default();
    for (k, c) in calls.iter().enumerate() {
        if let (false, Some(st)) = (c.from_server, c.stream) {
            of_stream.entry(st).or_default().push(k);
        }
    }
    if of_stream.is_empty() {
        return;
    }
    // The connections of those streams by flow: (first frame, last frame, stream).
    let mut by_flow: HashMap<String, Vec<(u64, u64, usize)>> = HashMap::default();
    for &st in of_stream.keys() {
        for &c in &model.streams[st].connections {
            let e = &exchanges[c];
            by_flow.entry(super::flow_id(e)).or_default().push((
                e.frame(),
                e.frame_last.unwrap_or(e.frame()),
                st,
            ));
        }
    }
    for (n, f) in findings.iter().enumerate() {
        let Some(spans) = by_flow.get(&f.flow_id) else {
            continue;
        };
        for &(a, b, st) in spans {
            if f.frame < a || f.frame > b {
                continue;
            }
            for &k in &of_stream[&st] {
                let c = &mut calls[k];
                if model.sessions[c.session].label_str() == f.session_id && !c.findings.contains(&n)
                {
                    c.findings.push(n);
                }
            }
        }
    }
    for c in calls.iter_mut() {
        c.findings.sort_unstable();
    }
}
