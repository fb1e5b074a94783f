//! Session-wide checks: `lost_response` (or `response_unverifiable` when capture gaps could
//! hide the response) and `duplicate_delivery` of JSON-RPC responses.

use crate::hash::{FastMap as HashMap, FastSet as HashSet};

use super::{flow_id, Finding, Severity};
use crate::http::Exchange;
use crate::jsonrpc::Kind;
use crate::jsonrpc::Message;
use crate::mcp::{exchange_era, Era, Model, Session};

/// The requests of a session by client, method and params hash ([`Message::params_hash`]):
/// the times they were sent and their exchanges, in time order.
type Sent<'a> =
    HashMap<(Option<std::net::IpAddr>, Option<&'a str>, Option<u64>), Vec<(i64, usize)>>;

/// [`Sent`] of a session's POSTs.
fn sent_of<'a>(s: &Session, exchanges: &'a [Exchange]) -> Sent<'a> {
    let mut index: Sent<'a> = HashMap::default();
    for &x in &s.exchanges {
        let e = &exchanges[x];
        if e.method() != "POST" {
            continue;
        }
        for n in e.req_messages.iter().filter(|n| n.kind == Kind::Request) {
            index
                .entry((e.client, n.method.as_deref(), n.params_hash()))
                .or_default()
                .push((e.ts(), x));
        }
    }
    for v in index.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    index
}

/// Whether the same client sent request `m` of exchange `xi` again (same method and params) after
/// its stream broke and within the reconnect horizon.
fn resent(sent: &Sent<'_>, exchanges: &[Exchange], xi: usize, m: &Message) -> bool {
    let e = &exchanges[xi];
    let broke = e.ts_end.unwrap_or(e.ts());
    let Some(v) = sent.get(&(e.client, m.method.as_deref(), m.params_hash())) else {
        return false;
    };
    v[v.partition_point(|&(t, _)| t < broke)..]
        .iter()
        .take_while(|&&(t, _)| t.saturating_sub(broke) <= RECONNECT_HORIZON_US)
        .any(|&(_, x)| x != xi)
}

/// JSON-RPC responses delivered to the client, per exchange: (id, ts, frame).
pub(super) type Responses<'a> = Vec<Vec<(&'a str, i64, u64)>>;

/// [`Responses`] of every exchange, read once for the detectors that use them.
pub(super) fn responses(exchanges: &[Exchange]) -> Responses<'_> {
    exchanges.iter().map(responses_in).collect()
}

/// JSON-RPC responses delivered to the client in one exchange: (id, ts, frame).
fn responses_in(e: &Exchange) -> Vec<(&str, i64, u64)> {
    let mut v: Vec<(&str, i64, u64)> = Vec::new();
    for m in e
        .resp_messages
        .iter()
        .filter(|m| matches!(m.kind, Kind::Response | Kind::Error))
    {
        if let Some(id) = m.id.as_deref() {
            v.push((
                id,
                e.ts_response.unwrap_or(0),
                e.frame_response.unwrap_or(0),
            ));
        }
    }
    // Only the events with a response are decoded.
    let answering = e
        .events
        .briefs()
        .filter(|(_, b)| b.has_response && !b.truncated)
        .filter_map(|(i, _)| e.events.get(i));
    for ev in answering {
        for m in ev
            .messages
            .refs()
            .filter(|m| matches!(m.kind, Kind::Response | Kind::Error))
        {
            if let Some(id) = m.id {
                v.push((id, ev.sse.ts, ev.sse.frame_first));
            }
        }
    }
    v
}

/// How long after a broken stream a client may still reconnect, in microseconds: beyond the SDKs'
/// reconnect budgets (TS and Python: 2 tries from 1 s; Go: 5 tries with backoff up to 30 s).
pub const RECONNECT_HORIZON_US: i64 = 30_000_000;

/// `lost_response`: a client request of the session that got no response on any stream.
///
/// `healed` holds the connections whose break a resumption healed: it resumed from an event they
/// delivered and was judged `resumed` with the continuation shown. The log went on after the
/// break; whether a response was lost in it is judged from the timing of a cancel (see
/// `raced_progress`).
pub(super) fn lost_responses(
    model: &Model,
    exchanges: &[Exchange],
    responses: &Responses<'_>,
    healed: &crate::hash::FastSet<usize>,
    capture_end: i64,
    out: &mut Vec<Finding>,
) {
    // Responses on headless streams no session could take (the capture began inside them, and
    // no resumption named their ids: the legacy transport's GET stream, whose `endpoint` event
    // went uncaptured, say): by server, client address and id, when. A request from that client
    // to that server answered there after it was sent may have been answered in its session.
    type Key<'a> = (
        Option<(std::net::IpAddr, u16)>,
        Option<std::net::IpAddr>,
        &'a str,
    );
    let mut headless: HashMap<Key<'_>, Vec<i64>> = HashMap::default();
    // ... and when the last byte such a stream skipped before it was read from arrived, by
    // server and client address: a request sent before then may have been answered in those
    // bytes.
    let mut headless_from: HashMap<_, i64> = HashMap::default();
    for (hx, h) in exchanges.iter().enumerate() {
        if let Some(start) = h
            .headless
            .filter(|_| model.sessions[model.exchange_session[hx]].id.is_none())
        {
            if let (1.., Some(t)) = (start.skipped, start.skipped_ts) {
                let from = headless_from.entry((h.server, h.client)).or_insert(t);
                *from = (*from).max(t);
            }
            for &(id, ts, _) in &responses[hx] {
                headless
                    .entry((h.server, h.client, id))
                    .or_default()
                    .push(ts);
            }
        }
    }
    for s in &model.sessions {
        let answered: HashSet<&str> = s
            .exchanges
            .iter()
            .flat_map(|&xi| &responses[xi])
            .map(|(id, _, _)| *id)
            .collect();
        // Responses carried by GETs (a resumption or replay): without a session they cannot be
        // told apart by client.
        let answered_on_get: HashSet<&str> = s
            .exchanges
            .iter()
            .filter(|&&g| exchanges[g].method() == "GET")
            .flat_map(|&g| &responses[g])
            .map(|(id, _, _)| *id)
            .collect();
        // Responses of the session with bytes missing from the capture, which could hide an
        // answer to a request: on its own response or stream, later on its connection
        // (keep-alive), or on a GET stream still open after it was sent (a resumption or
        // replay). A loss that ended before the request was sent, on another POST, could not.
        // Indexed once (the first such exchange of each stream; per flow and among GETs the
        // one that reaches latest), so each request is looked up in constant time.
        let mut gap_stream: HashMap<usize, usize> = HashMap::default();
        let mut gap_flow: HashMap<usize, (i64, usize)> = HashMap::default();
        let mut gap_get: Option<(i64, usize)> = None;
        for &gx in &s.exchanges {
            let g = &exchanges[gx];
            if !g.resp_gap {
                continue;
            }
            if let Some(st) = model.exchange_stream[gx] {
                gap_stream.entry(st).or_insert(gx);
            }
            let f = gap_flow.entry(g.flow_index).or_insert((g.ts(), gx));
            if g.ts() > f.0 {
                *f = (g.ts(), gx);
            }
            if g.method() == "GET" {
                let end = g.ts_end.unwrap_or(i64::MAX);
                if gap_get.is_none_or(|(e, _)| end > e) {
                    gap_get = Some((end, gx));
                }
            }
        }
        let gap_for = |xi: usize| -> Option<&Exchange> {
            let e = &exchanges[xi];
            let gx = e
                .resp_gap
                .then_some(xi)
                .or_else(|| model.exchange_stream[xi].and_then(|st| gap_stream.get(&st).copied()))
                .or_else(|| {
                    gap_flow
                        .get(&e.flow_index)
                        .filter(|(t, _)| *t >= e.ts())
                        .map(|&(_, gx)| gx)
                })
                .or_else(|| gap_get.filter(|(end, _)| *end >= e.ts()).map(|(_, gx)| gx))?;
            Some(&exchanges[gx])
        };
        // On the legacy transport (MCP 2024-11-05 "HTTP with SSE") every response comes on the
        // session's GET stream (the one that got the `endpoint` event): it carries the requests'
        // answers as a POST's own stream does.
        let legacy: Vec<usize> = s
            .exchanges
            .iter()
            .copied()
            .filter(|&g| exchanges[g].endpoint.is_some())
            .collect();
        // ... and so could a resumed stream, or a legacy session's stream, still open when the
        // capture stopped.
        let open_resume = s.exchanges.iter().map(|&xi| &exchanges[xi]).find(|e| {
            e.open_at_capture_end && (e.resume_cursor().is_some() || e.endpoint.is_some())
        });
        // When the client ended the session (DELETE, MCP "Session Management"): what was still
        // streaming then is no longer owed.
        let deleted = s
            .exchanges
            .iter()
            .map(|&xi| &exchanges[xi])
            // Answered 2xx (or not captured): a server MAY refuse with 405, and a 404 ends
            // nothing (MCP "Session Management").
            .filter(|e| {
                e.method() == "DELETE" && (e.response.is_none() || (200..300).contains(&e.status()))
            })
            .map(Exchange::ts)
            .min();
        // Requests the client cancelled, and when (MCP "Cancellation": the receiver should send
        // no response). Without a session, independent clients reuse request ids: a cancel
        // speaks for its own client's request only (docs/wire.md, "Session key without a
        // session id").
        let client_of = |x: usize| s.id.is_none().then_some(exchanges[x].client).flatten();
        let mut cancelled: HashMap<(Option<std::net::IpAddr>, &str), Vec<i64>> = HashMap::default();
        for &xi in &s.exchanges {
            for c in exchanges[xi]
                .req_messages
                .iter()
                .filter_map(|m| m.cancels())
            {
                cancelled
                    .entry((client_of(xi), c))
                    .or_default()
                    .push(exchanges[xi].ts());
            }
        }
        // In time order, so that each request reads only the cancels sent after it.
        for v in cancelled.values_mut() {
            v.sort_unstable();
        }
        // Whether anything of the session came after a time: its latest exchange.
        let last_ts = s.exchanges.iter().map(|&x| exchanges[x].ts()).max();
        // Requests re-sent (2026-07-28), indexed when a request needs it.
        let sent = std::cell::OnceCell::new();
        // The progress times of a stream's connections, read when a cancel needs them.
        let mut paces: HashMap<(usize, usize), ProgressTimes<'_>> = HashMap::default();
        for &xi in &s.exchanges {
            let e = &exchanges[xi];
            if e.method() != "POST" || e.status() >= 300 {
                continue;
            }
            // Without a session, independent clients reuse request ids (docs/wire.md, "Session
            // key without a session id": the key falls back to the flow and the client): the
            // request's own stream answers it, and GETs, which cannot be told apart by client (an
            // unattributed resumption); another client's POST does not.
            let own: Option<HashSet<&str>> = s.id.is_none().then(|| {
                let conns = model.exchange_stream[xi]
                    .map(|st| model.streams[st].connections.as_slice())
                    .unwrap_or(std::slice::from_ref(&xi));
                conns
                    .iter()
                    .chain(std::iter::once(&xi))
                    .flat_map(|&c| &responses[c])
                    .map(|(id, _, _)| *id)
                    .collect()
            });
            let answers = |id: &str| {
                let on_headless = || {
                    headless
                        .get(&(e.server, e.client, id))
                        .is_some_and(|v| v.iter().any(|&t| t >= e.ts()))
                        // (Not a request whose own event stream was captured: it answers
                        // there.)
                        || (!e.is_sse
                            && headless_from
                                .get(&(e.server, e.client))
                                .is_some_and(|&t| t >= e.ts()))
                };
                let in_session = match &own {
                    Some(own) => own.contains(id) || answered_on_get.contains(id),
                    None => answered.contains(id),
                };
                in_session || on_headless()
            };
            // The exchange's protocol era, read once for all its requests (a batch may hold
            // thousands, and reading it walks the response's events).
            let era = std::cell::OnceCell::new();
            for m in e.req_messages.iter().filter(|m| m.kind == Kind::Request) {
                let Some(id) = m.id.as_deref() else { continue };
                if answers(id) {
                    continue;
                }
                // Cancelled while its stream was open and whole (the POST response, a
                // resumption of it after a planned close, or a legacy session's GET stream): no
                // response was due. A cancel sent after a connection of the stream broke — a
                // client's timeout, also after resuming — gives up on a response the break may
                // have lost: still reported, unless the break was healed and the cancel raced
                // the response (below).
                // The connections that could carry its response, and what names them: its
                // logical stream, the legacy session's GET streams, or its own.
                let (conns, conns_key) = match model.exchange_stream[xi] {
                    Some(st) => (model.streams[st].connections.as_slice(), (0, st)),
                    None if !legacy.is_empty() && !e.is_sse => (legacy.as_slice(), (1, 0)),
                    None => (std::slice::from_ref(&xi), (2, xi)),
                };
                let end = |c: usize| exchanges[c].ts_end.unwrap_or(i64::MAX);
                // Until the first break of the stream (of a break not healed, with `heal`).
                let whole_until = |heal: bool| {
                    conns
                        .iter()
                        .filter(|&&c| {
                            !(exchanges[c].resp_complete || (heal && healed.contains(&c)))
                        })
                        .map(|&c| end(c))
                        .min()
                        .unwrap_or(i64::MAX)
                };
                // The first cancel sent after the request, while a connection of the stream was
                // open, and before `until`: for some connection, in [its start, its end], cut at
                // `until` (each a search in the times).
                let cancel_before = |until: i64| {
                    let ts = cancelled.get(&(client_of(xi), id))?;
                    conns
                        .iter()
                        .filter_map(|&c| {
                            let (from, to) = (e.ts().max(exchanges[c].ts()), end(c).min(until));
                            ts.get(ts.partition_point(|&t| t < from))
                                .copied()
                                .filter(|&t| t <= to)
                        })
                        .min()
                };
                if cancel_before(whole_until(false)).is_some() {
                    continue;
                }
                // After a break a resumption healed (it was shown to continue the log), a cancel
                // sent while the stream still went on at its own pace raced the response: the
                // client's timeout came before the server was done, and MCP "Cancellation" lets
                // the server drop the response. Its pace is the request's progress notifications
                // coming live on a connection still open (`raced_progress`). A server that went
                // quiet for longer, or whose resumed connection only replayed what it had, may
                // have answered on the connection that broke and lost the response there (the
                // log a resumption replays need not hold it): still reported.
                if let Some(t) = cancel_before(whole_until(true)) {
                    let times = paces
                        .entry(conns_key)
                        .or_insert_with(|| progress_times(conns, exchanges));
                    if raced_progress(m.request_progress_token(), times, exchanges, t) {
                        continue;
                    }
                }
                // Its response still streaming when the client deleted the session: ended by
                // the client, not lost.
                let streaming_at = |d: i64| {
                    e.response.is_some() && e.ts() <= d && e.ts_end.unwrap_or(i64::MAX) >= d
                };
                if deleted.is_some_and(streaming_at) {
                    continue;
                }
                // A legacy session has no DELETE: the client ends it by closing its GET stream
                // (MCP 2024-11-05 "HTTP with SSE"). A request answered on that stream, sent before
                // the client closed it while the server was still sending, is no longer owed —
                // unless the stream answered something after the request was sent: then the
                // server went on without answering it.
                if std::ptr::eq(conns, legacy.as_slice())
                    && legacy.iter().any(|&g| {
                        let (x, t0) = (&exchanges[g], e.ts());
                        x.client_closed
                            && x.ts_end.is_some_and(|t| t0 <= t)
                            && !responses[g].iter().any(|&(_, t, _)| t > t0)
                    })
                {
                    continue;
                }
                // MCP 2026-07-28 has no resumption: a request whose stream broke must be re-sent,
                // and a re-sent request (same method and params, any id) is judged on its own.
                // There, closing the response stream is how the client cancels (MCP 2026-07-28
                // "Streamable HTTP", "Cancellation").
                if *era.get_or_init(|| exchange_era(e)) == Era::V2026_07_28
                    && (e.client_closed
                        || resent(sent.get_or_init(|| sent_of(s, exchanges)), exchanges, xi, m))
                {
                    continue;
                }
                let method = m.method.clone().unwrap_or_default();
                // A stream that broke without its response, with nothing more of the session in
                // the capture and the capture ending soon after: the client's reconnect may simply
                // not have been captured.
                let broke_at = e.ts_end.unwrap_or(e.ts());
                let followed = last_ts.is_some_and(|t| t > broke_at);
                let broke_unseen = (e.response.is_none() || !e.resp_complete)
                    && !followed
                    && capture_end.saturating_sub(broke_at) < RECONNECT_HORIZON_US;
                let open = if e.open_at_capture_end || broke_unseen {
                    Some(e)
                } else {
                    open_resume
                };
                let (kind, severity, detail) = match (gap_for(xi), open) {
                    // Its own stream broke shortly before the capture ended.
                    (None, Some(o)) if std::ptr::eq(o, e) && !e.open_at_capture_end => (
                        "response_unverifiable",
                        Severity::Info,
                        format!(
                            "Request {id} ({method}), sent in frame {} on flow {}, has no captured response; its stream ended without it in frame {}, shortly before the capture did, and what the client did next (a resumption, a retry) is not in the capture.",
                            e.frame(),
                            flow_id(e),
                            e.frame_last.unwrap_or(e.frame())
                        ),
                    ),
                    (None, Some(o)) => (
                        "response_unverifiable",
                        Severity::Info,
                        format!(
                            "Request {id} ({method}), sent in frame {} on flow {}, has no captured response, but the capture ended while a stream that could carry it was still open or about to be resumed (flow {}, from frame {}).",
                            e.frame(),
                            flow_id(e),
                            flow_id(o),
                            o.frame()
                        ),
                    ),
                    (None, None) => ("lost_response", Severity::Error, format!("Request {id} ({method}), sent in frame {} on flow {}, never received a JSON-RPC response on any stream of the session by the end of the capture.", e.frame(), flow_id(e))),
                    (Some(g), _) => ("response_unverifiable", Severity::Info, format!("Request {id} ({method}), sent in frame {} on flow {}, has no captured response, but the capture lost bytes of the session's responses (flow {}, frames {}–{}), which could hold it.", e.frame(), flow_id(e), flow_id(g), g.frame(), g.frame_last.unwrap_or(g.frame()))),
                };
                out.push(Finding {
                    session_id: s.label(),
                    kind,
                    severity,
                    ts: e.ts(),
                    flow_id: flow_id(e),
                    frame: e.frame(),
                    last_event_id: None,
                    event_id: None,
                    request_id: Some(id.to_string()),
                    expected: Some(format!("a response to request {id} ({method})")),
                    observed: Some("no response on any stream by the end of the capture".into()),
                    detail,
                });
            }
        }
    }
}

/// `duplicate_delivery` by JSON-RPC response id: the client received the response to one request twice.
pub(super) fn duplicate_responses(
    model: &Model,
    exchanges: &[Exchange],
    responses: &Responses<'_>,
    out: &mut Vec<Finding>,
) {
    for s in &model.sessions {
        // The times each request id was sent, in order: a client that reuses an id (MCP forbids
        // it within a session, but it happens) gets one response per request, none twice.
        let mut requests: HashMap<&str, Vec<i64>> = HashMap::default();
        for &xi in &s.exchanges {
            for m in exchanges[xi]
                .req_messages
                .iter()
                .filter(|m| m.kind == Kind::Request)
            {
                if let Some(id) = m.id.as_deref() {
                    requests.entry(id).or_default().push(exchanges[xi].ts());
                }
            }
        }
        for v in requests.values_mut() {
            v.sort_unstable();
        }
        // Per id: the first copy of its latest response (time, frame, exchange) and how many
        // responses it has had.
        let mut seen: HashMap<&str, (i64, u64, usize, usize)> = HashMap::default();
        for &xi in &s.exchanges {
            // Without a session, independent clients reuse request ids: compare within one exchange only.
            if s.id.is_none() {
                seen.clear();
            }
            for (id, ts, frame) in &responses[xi] {
                let (id, ts, frame) = (*id, *ts, *frame);
                let Some(sent) = requests.get(id) else {
                    continue;
                };
                match seen.get(id) {
                    None => {
                        seen.insert(id, (ts, frame, xi, 1));
                    }
                    // A response whose request the capture missed (it began mid-connection),
                    // from another server endpoint than the other copy (another hop's), or on
                    // the same connection seen from another vantage point (same endpoints,
                    // another flow): a copy that could not be paired without its request, not
                    // a second delivery. The copy with a request speaks for both.
                    Some(&(_, _, fx, _))
                        if (exchanges[xi].request.is_none() || exchanges[fx].request.is_none())
                            && {
                                let (a, b) = (&exchanges[xi], &exchanges[fx]);
                                a.server != b.server
                                    || (a.flow_index != b.flow_index
                                        && (a.client, a.client_port) == (b.client, b.client_port))
                            } =>
                    {
                        if exchanges[fx].request.is_none() {
                            if let Some(v) = seen.get_mut(id) {
                                (v.0, v.1, v.2) = (ts, frame, xi);
                            }
                        }
                    }
                    // The id was sent again before this response: the answer to that request.
                    Some(&(_, _, _, n)) if sent.partition_point(|&t| t <= ts) > n => {
                        seen.insert(id, (ts, frame, xi, n + 1));
                    }
                    Some(&(_, first_frame, _, _)) => {
                        let e = &exchanges[xi];
                        out.push(Finding {
                            session_id: s.label(),
                            kind: "duplicate_delivery",
                            severity: Severity::Error,
                            ts,
                            flow_id: flow_id(e),
                            frame,
                            last_event_id: e.req_header("last-event-id").map(str::to_string),
                            event_id: None,
                            request_id: Some(id.to_string()),
                            expected: Some("one response per request".into()),
                            observed: Some("a second response".into()),
                            // Exchanges are in order of their start: the copy on the later one may have come first.
                            detail: format!("The response to request {id} reached the client twice: first in frame {}, again in frame {} (flow {}).", first_frame.min(frame), first_frame.max(frame), flow_id(e)),
                        });
                    }
                }
            }
        }
    }
}

/// The progress notifications of a stream's connections, by progress token (compact JSON
/// text): (time in µs since the Unix epoch, connection, `progress` value, the highest value
/// before it) in time order. Read once per stream, for [`raced_progress`].
type ProgressTimes<'a> = HashMap<&'a str, Vec<(i64, usize, f64, f64)>>;

/// How many of the notifications before a cancel [`raced_progress`] reads: the pace is the
/// server's recent one, and each request costs the same however long its stream.
const PACE_WINDOW: usize = 64;

fn progress_times<'a>(conns: &[usize], exchanges: &'a [Exchange]) -> ProgressTimes<'a> {
    let mut by_token: ProgressTimes<'a> = HashMap::default();
    for &c in conns {
        for ev in exchanges[c].events.iter().filter(|ev| !ev.sse.truncated) {
            for m in ev.messages.refs() {
                if let (Some("notifications/progress"), Some(t), Some(v)) =
                    (m.method, m.progress_token, m.progress)
                {
                    by_token
                        .entry(t)
                        .or_default()
                        .push((ev.sse.ts, c, v, f64::NEG_INFINITY));
                }
            }
        }
    }
    for v in by_token.values_mut() {
        v.sort_by_key(|&(ts, ..)| ts);
        let mut high = f64::NEG_INFINITY;
        for n in v.iter_mut() {
            n.3 = high;
            high = high.max(n.2);
        }
    }
    by_token
}

/// The longest a cancel may come after the latest progress notification and still be taken as
/// racing the response, in microseconds, whatever the pace.
pub const RACE_WINDOW_MAX_US: i64 = 10_000_000;

/// Whether a cancel sent at `t` (µs since the Unix epoch) came while the server was still
/// working on the request (progress token `token`) at its own pace.
///
/// The pace is the median interval between the request's progress notifications that followed
/// one another on one connection, a millisecond or more apart (a replay comes in a burst: it
/// shows no pace), over at least two such intervals. The latest notification before `t` must have
/// come live on a connection still open at `t`: at least half that pace after the one before it
/// on that connection, with a value above every value the stream showed before (progress MUST
/// increase, MCP "Progress": a value seen again is a replay). And `t` must be within twice the
/// pace of it, at most [`RACE_WINDOW_MAX_US`]. A resumed connection that only replayed what the
/// log held, even slowly, shows nothing live unless two of its values came a pace apart. Only the
/// last [`PACE_WINDOW`] notifications before `t` are read for the pace.
fn raced_progress(
    token: Option<&str>,
    times: &ProgressTimes<'_>,
    exchanges: &[Exchange],
    t: i64,
) -> bool {
    let Some(list) = token.and_then(|k| times.get(k)) else {
        return false;
    };
    let upto = &list[..list.partition_point(|&(ts, ..)| ts <= t)];
    let Some((&(latest, conn, value, high), _)) = upto.split_last() else {
        return false;
    };
    // (The recent ones only.)
    let upto = &upto[upto.len().saturating_sub(PACE_WINDOW)..];
    let earlier = &upto[..upto.len() - 1];
    if exchanges[conn].ts_end.is_some_and(|end| end < t) {
        return false;
    }
    // Intervals between notifications that followed one another on one connection (the list is
    // in time order; connections may interleave).
    let mut prev_on: HashMap<usize, i64> = HashMap::default();
    let mut steps: Vec<i64> = Vec::new();
    for &(ts, c, ..) in upto {
        if let Some(p) = prev_on.insert(c, ts) {
            let step = ts.saturating_sub(p);
            if step >= 1_000 {
                steps.push(step);
            }
        }
    }
    if steps.len() < 2 {
        return false;
    }
    steps.sort_unstable();
    let pace = steps[steps.len() / 2];
    let Some(&(before_latest, ..)) = earlier.iter().rev().find(|&&(_, c, ..)| c == conn) else {
        return false;
    };
    value > high
        && latest.saturating_sub(before_latest) >= pace / 2
        && t.saturating_sub(latest) <= pace.saturating_mul(2).min(RACE_WINDOW_MAX_US)
}
