//! The client requests that got no JSON-RPC response on any stream of their session, and why
//! the capture cannot show one (`lost_response`, `response_unverifiable`): every exception
//! below is a reason a response was not owed, or may lie outside the capture.

use crate::hash::{FastMap as HashMap, FastSet as HashSet};

use super::responses::Responses;
use crate::detect::context::Context;
use crate::http::Exchange;
use crate::jsonrpc::{Kind, Message};
use crate::mcp::McpExchange;
use crate::mcp::{exchange_era, Era, Model, Session};

/// A client request without a captured response.
#[derive(Debug, Clone)]
pub(crate) struct Unanswered<'a> {
    /// The session.
    pub session: usize,
    /// The POST that carried the request.
    pub exchange: usize,
    /// The request's id (compact JSON) and method.
    pub id: &'a str,
    pub method: String,
    /// Why no response was seen.
    pub why: Why<'a>,
    /// Another request with its id was in flight with it ([`super::crossed`]), whose stream
    /// may carry a response with this id.
    pub crossed: bool,
}

/// Why a request has no captured response.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Why<'a> {
    /// Nothing in or around the capture could hold it: lost.
    Nothing,
    /// Its event stream broke without it, shortly before the capture ended, and carried no
    /// event id: no resumption could bring it, whatever the client did next (lost).
    Unresumable,
    /// The capture lost bytes of the session's responses (this exchange) that could hold it.
    CaptureLost(&'a Exchange),
    /// Its own stream broke shortly before the capture ended, and what the client did next is
    /// not in the capture.
    BrokeAtEnd,
    /// A stream that could carry it (this exchange) was still open, or about to be resumed,
    /// when the capture ended.
    StreamOpen(&'a Exchange),
}

/// The requests of every session without a captured response, in session and request order.
///
/// `healed` holds the connections whose break a resumption healed: it resumed from an event
/// they delivered and was judged `resumed` with the continuation shown. The log went on after
/// the break; whether a response was lost in it is judged from the timing of a cancel (see
/// [`raced_progress`]).
pub(crate) fn unanswered<'a>(ctx: &Context<'a>, healed: &HashSet<usize>) -> Vec<Unanswered<'a>> {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    let headless = Headless::build(model, exchanges, &ctx.responses);
    let mut out = Vec::new();
    for si in 0..model.sessions.len() {
        let mut view = SessionView::new(model, exchanges, &ctx.responses, si);
        view.crossed = ctx
            .crossed
            .iter()
            .filter(|c| c.session == si)
            .flat_map(|c| [c.first, c.second])
            .collect();
        for &xi in &model.sessions[si].exchanges {
            let e = &exchanges[xi];
            if e.method() != "POST" || e.status() >= 300 {
                continue;
            }
            view.requests_of(xi, &headless, healed, ctx.capture_end, &mut out);
        }
    }
    out
}

/// Responses on headless streams no session could take (the capture began inside them, and no
/// resumption named their ids: the legacy transport's GET stream, whose `endpoint` event went
/// uncaptured, say): a request from that client to that server answered there after it was
/// sent may have been answered in its session.
struct Headless<'a> {
    /// By server, client address and id: when.
    answers: HashMap<HeadlessKey<'a>, Vec<i64>>,
    /// By server and client address: when the last byte such a stream skipped before it was
    /// read from arrived (a request sent before then may have been answered in those bytes).
    from: HashMap<Ends, i64>,
}

/// A server (address and port) and a client address.
type Ends = (Option<(std::net::IpAddr, u16)>, Option<std::net::IpAddr>);

/// A server, a client address and a request id.
type HeadlessKey<'a> = (
    Option<(std::net::IpAddr, u16)>,
    Option<std::net::IpAddr>,
    &'a str,
);

impl<'a> Headless<'a> {
    fn build(model: &Model, exchanges: &[Exchange], responses: &Responses<'a>) -> Self {
        let mut out = Headless {
            answers: HashMap::default(),
            from: HashMap::default(),
        };
        for (hx, h) in exchanges.iter().enumerate() {
            let Some(start) = h
                .headless
                .filter(|_| model.sessions[model.exchange_session[hx]].id.is_none())
            else {
                continue;
            };
            if let (1.., Some(t)) = (start.skipped, start.skipped_ts) {
                let from = out.from.entry((h.server, h.client)).or_insert(t);
                *from = (*from).max(t);
            }
            for &(id, ts, _) in &responses[hx] {
                out.answers
                    .entry((h.server, h.client, id))
                    .or_default()
                    .push(ts);
            }
        }
        out
    }

    /// Whether request `id` of exchange `e` may have been answered on a headless stream.
    fn may_answer(&self, e: &Exchange, id: &str) -> bool {
        self.answers
            .get(&(e.server, e.client, id))
            .is_some_and(|v| v.iter().any(|&t| t >= e.ts()))
            // (Not a request whose own event stream was captured: it answers there.)
            || (!e.is_sse
                && self
                    .from
                    .get(&(e.server, e.client))
                    .is_some_and(|&t| t >= e.ts()))
    }
}

/// What one session shows about its requests' answers, read once per session.
struct SessionView<'v, 'a> {
    model: &'a Model,
    exchanges: &'a [Exchange],
    responses: &'v Responses<'a>,
    /// The session and its index.
    s: &'a Session,
    si: usize,
    /// Ids answered anywhere in the session, and on its GETs (a resumption or replay: without
    /// a session they cannot be told apart by client).
    answered: HashSet<&'a str>,
    answered_on_get: HashSet<&'a str>,
    /// Responses of the session with bytes missing from the capture, indexed once: the first
    /// such exchange of each stream; per flow and among GETs the one that reaches latest.
    gap_stream: HashMap<usize, usize>,
    gap_flow: HashMap<usize, (i64, usize)>,
    gap_get: Option<(i64, usize)>,
    /// On the legacy transport (MCP 2024-11-05 "HTTP with SSE") every response comes on the
    /// session's GET stream (the one that got the `endpoint` event).
    legacy: Vec<usize>,
    /// A resumed stream, or a legacy session's stream, still open when the capture stopped.
    open_resume: Option<&'a Exchange>,
    /// When the client ended the session (DELETE, MCP "Session Management").
    deleted: Option<i64>,
    /// Requests the client cancelled, and when, in time order (MCP "Cancellation"); by client
    /// without a session.
    cancelled: HashMap<(Option<std::net::IpAddr>, &'a str), Vec<i64>>,
    /// The session's latest exchange.
    last_ts: Option<i64>,
    /// Requests re-sent (2026-07-28), indexed when a request needs it.
    sent: std::cell::OnceCell<Sent<'a>>,
    /// The session's POSTs that sent a request while another with its id was in flight, or
    /// were in flight when one was sent ([`super::crossed`]).
    crossed: HashSet<usize>,
    /// The progress times of a stream's connections, read when a cancel needs them.
    paces: std::cell::RefCell<HashMap<(usize, usize), ProgressTimes<'a>>>,
}

impl<'v, 'a> SessionView<'v, 'a> {
    /// Read session `si` once.
    fn new(
        model: &'a Model,
        exchanges: &'a [Exchange],
        responses: &'v Responses<'a>,
        si: usize,
    ) -> Self {
        let s = &model.sessions[si];
        let of = |xs: &mut dyn Iterator<Item = &usize>| -> HashSet<&'a str> {
            xs.flat_map(|&xi| &responses[xi])
                .map(|(id, _, _)| *id)
                .collect()
        };
        let answered = of(&mut s.exchanges.iter());
        let answered_on_get = of(&mut s
            .exchanges
            .iter()
            .filter(|&&g| exchanges[g].method() == "GET"));
        let mut view = SessionView {
            model,
            exchanges,
            responses,
            s,
            si,
            answered,
            answered_on_get,
            gap_stream: HashMap::default(),
            gap_flow: HashMap::default(),
            gap_get: None,
            legacy: s
                .exchanges
                .iter()
                .copied()
                .filter(|&g| exchanges[g].sse.session_event.is_some())
                .collect(),
            // (A stream the client had hung up on carries nothing more to it: an HTTP/2 server
            // may leave it open after the client's FIN.)
            open_resume: s.exchanges.iter().map(|&xi| &exchanges[xi]).find(|e| {
                e.open_at_capture_end
                    && !e.client_closed
                    && (e.resume_cursor().is_some() || e.sse.session_event.is_some())
            }),
            deleted: s
                .exchanges
                .iter()
                .map(|&xi| &exchanges[xi])
                // Answered 2xx (or not captured): a server MAY refuse with 405, and a 404 ends
                // nothing (MCP "Session Management").
                .filter(|e| {
                    e.method() == "DELETE"
                        && (e.response.is_none() || (200..300).contains(&e.status()))
                })
                .map(Exchange::ts)
                .min(),
            cancelled: HashMap::default(),
            last_ts: s.exchanges.iter().map(|&x| exchanges[x].ts()).max(),
            sent: std::cell::OnceCell::new(),
            paces: Default::default(),
            crossed: HashSet::default(),
        };
        view.index_gaps();
        view.index_cancels();
        view
    }

    /// Index the session's responses with bytes missing from the capture, which could hide an
    /// answer to a request: on its own response or stream, later on its connection
    /// (keep-alive), or on a GET stream still open after it was sent (a resumption or replay).
    /// A loss that ended before the request was sent, on another POST, could not.
    fn index_gaps(&mut self) {
        for &gx in &self.s.exchanges {
            let g = &self.exchanges[gx];
            if !g.resp_gap {
                continue;
            }
            if let Some(st) = self.model.exchange_stream[gx] {
                self.gap_stream.entry(st).or_insert(gx);
            }
            let f = self.gap_flow.entry(g.flow_index).or_insert((g.ts(), gx));
            if g.ts() > f.0 {
                *f = (g.ts(), gx);
            }
            if g.method() == "GET" {
                let end = g.ts_end.unwrap_or(i64::MAX);
                if self.gap_get.is_none_or(|(e, _)| end > e) {
                    self.gap_get = Some((end, gx));
                }
            }
        }
    }

    /// Index the requests the client cancelled. Without a session, independent clients reuse
    /// request ids: a cancel speaks for its own client's request only (docs/wire.md, "Session
    /// key without a session id").
    fn index_cancels(&mut self) {
        for &xi in &self.s.exchanges {
            for c in self.exchanges[xi]
                .rpc
                .request
                .iter()
                .filter_map(|m| m.cancels())
            {
                self.cancelled
                    .entry((self.client_of(xi), c))
                    .or_default()
                    .push(self.exchanges[xi].ts());
            }
        }
        // In time order, so that each request reads only the cancels sent after it.
        for v in self.cancelled.values_mut() {
            v.sort_unstable();
        }
    }

    /// The client of exchange `x` where requests ids are per client (no session id).
    fn client_of(&self, x: usize) -> Option<std::net::IpAddr> {
        self.s
            .id
            .is_none()
            .then_some(self.exchanges[x].client)
            .flatten()
    }

    /// The exchange whose lost bytes could hold the answer to a request of exchange `xi`.
    fn gap_for(&self, xi: usize) -> Option<&'a Exchange> {
        let e = &self.exchanges[xi];
        let gx = e
            .resp_gap
            .then_some(xi)
            .or_else(|| {
                self.model.exchange_stream[xi].and_then(|st| self.gap_stream.get(&st).copied())
            })
            .or_else(|| {
                self.gap_flow
                    .get(&e.flow_index)
                    .filter(|(t, _)| *t >= e.ts())
                    .map(|&(_, gx)| gx)
            })
            .or_else(|| {
                self.gap_get
                    .filter(|(end, _)| *end >= e.ts())
                    .map(|(_, gx)| gx)
            })?;
        Some(&self.exchanges[gx])
    }

    /// The requests of POST `xi` without a response, appended to `out`.
    fn requests_of(
        &self,
        xi: usize,
        headless: &Headless,
        healed: &HashSet<usize>,
        capture_end: i64,
        out: &mut Vec<Unanswered<'a>>,
    ) {
        let (model, exchanges) = (self.model, self.exchanges);
        let e = &exchanges[xi];
        // Without a session, independent clients reuse request ids (docs/wire.md, "Session key
        // without a session id": the key falls back to the flow and the client): the request's
        // own stream answers it, and GETs, which cannot be told apart by client (an
        // unattributed resumption); another client's POST does not.
        // So do two requests in flight at once with one id: each is answered on its own
        // stream or not at all ([`super::crossed`]).
        let crossed = self.crossed.contains(&xi);
        let own: Option<HashSet<&str>> = (self.s.id.is_none() || crossed).then(|| {
            let conns = model.exchange_stream[xi]
                .map(|st| model.streams[st].connections.as_slice())
                .unwrap_or(std::slice::from_ref(&xi));
            conns
                .iter()
                .chain(std::iter::once(&xi))
                .flat_map(|&c| &self.responses[c])
                .map(|(id, _, _)| *id)
                .collect()
        });
        // The exchange's protocol era, read once for all its requests (a batch may hold
        // thousands, and reading it walks the response's events).
        let era = std::cell::OnceCell::new();
        for m in e.rpc.request.iter().filter(|m| m.kind == Kind::Request) {
            let Some(id) = m.id.as_deref() else { continue };
            let in_session = match &own {
                Some(own) => own.contains(id) || (!crossed && self.answered_on_get.contains(id)),
                None => self.answered.contains(id),
            };
            if in_session
                || headless.may_answer(e, id)
                || self.not_owed(xi, m, id, healed)
                || (*era.get_or_init(|| exchange_era(e)) == Era::V2026_07_28
                    && self.resent_or_closed(xi, m))
            {
                continue;
            }
            out.push(Unanswered {
                session: self.si,
                exchange: xi,
                id,
                method: m.method.as_deref().unwrap_or_default().to_string(),
                why: self.why(xi, capture_end),
                crossed,
            });
        }
    }

    /// Whether the response to request `m` (id `id`) of POST `xi` was no longer owed: the
    /// client cancelled it in time, deleted the session while it streamed, or closed the
    /// legacy stream that would carry it.
    fn not_owed(&self, xi: usize, m: &Message, id: &str, healed: &HashSet<usize>) -> bool {
        let (model, exchanges) = (self.model, self.exchanges);
        let e = &exchanges[xi];
        // The connections that could carry its response, and what names them: its logical
        // stream, the legacy session's GET streams, or its own.
        let own = [xi];
        let (conns, conns_key): (&[usize], _) = match model.exchange_stream[xi] {
            Some(st) => (&model.streams[st].connections, (0, st)),
            None if !self.legacy.is_empty() && !e.is_sse => (&self.legacy, (1, 0)),
            None => (&own, (2, xi)),
        };
        if self.cancelled_in_time(xi, m, id, conns, conns_key, healed) {
            return true;
        }
        // Its response still streaming when the client deleted the session: ended by the
        // client, not lost.
        let streaming_at =
            |d: i64| e.response.is_some() && e.ts() <= d && e.ts_end.unwrap_or(i64::MAX) >= d;
        if self.deleted.is_some_and(streaming_at) {
            return true;
        }
        // A legacy session has no DELETE: the client ends it by closing its GET stream (MCP
        // 2024-11-05 "HTTP with SSE"). A request answered on that stream, sent before the
        // client closed it while the server was still sending, is no longer owed — unless the
        // stream answered something after the request was sent: then the server went on
        // without answering it.
        conns_key.0 == 1
            && self.legacy.iter().any(|&g| {
                let (x, t0) = (&exchanges[g], e.ts());
                x.client_closed
                    && x.ts_end.is_some_and(|t| t0 <= t)
                    && !self.responses[g].iter().any(|&(_, t, _)| t > t0)
            })
    }

    /// Whether the client cancelled request `m` (id `id`) of POST `xi` while its stream
    /// (connections `conns`, named `conns_key`) was open and whole — the POST response, a
    /// resumption of it after a planned close, or a legacy session's GET stream: no response
    /// was due (MCP "Cancellation"). A cancel sent after a connection of the stream broke — a
    /// client's timeout, also after resuming — gives up on a response the break may have lost:
    /// still reported, unless the break was healed and the cancel raced the response.
    fn cancelled_in_time(
        &self,
        xi: usize,
        m: &Message,
        id: &str,
        conns: &[usize],
        conns_key: (usize, usize),
        healed: &HashSet<usize>,
    ) -> bool {
        let exchanges = self.exchanges;
        let e = &exchanges[xi];
        let end = |c: usize| exchanges[c].ts_end.unwrap_or(i64::MAX);
        // Until the first break of the stream (of a break not healed, with `heal`).
        let whole_until = |heal: bool| {
            conns
                .iter()
                .filter(|&&c| !(exchanges[c].resp_complete || (heal && healed.contains(&c))))
                .map(|&c| end(c))
                .min()
                .unwrap_or(i64::MAX)
        };
        // The first cancel sent after the request, while a connection of the stream was open,
        // and before `until`: for some connection, in [its start, its end], cut at `until`
        // (each a search in the times).
        let cancel_before = |until: i64| {
            let ts = self.cancelled.get(&(self.client_of(xi), id))?;
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
            return true;
        }
        // After a break a resumption healed (it was shown to continue the log), a cancel sent
        // while the stream still went on at its own pace raced the response: the client's
        // timeout came before the server was done, and MCP "Cancellation" lets the server drop
        // the response. Its pace is the request's progress notifications coming live on a
        // connection still open (`raced_progress`). A server that went quiet for longer, or
        // whose resumed connection only replayed what it had, may have answered on the
        // connection that broke and lost the response there (the log a resumption replays need
        // not hold it): still reported.
        let Some(t) = cancel_before(whole_until(true)) else {
            return false;
        };
        let mut paces = self.paces.borrow_mut();
        let times = paces
            .entry(conns_key)
            .or_insert_with(|| progress_times(conns, exchanges));
        raced_progress(m.request_progress_token(), times, exchanges, t)
    }

    /// MCP 2026-07-28 has no resumption: a request whose stream broke must be re-sent, and a
    /// re-sent request (same method and params, any id) is judged on its own. There, closing
    /// the response stream is how the client cancels (MCP 2026-07-28 "Streamable HTTP",
    /// "Cancellation").
    fn resent_or_closed(&self, xi: usize, m: &Message) -> bool {
        self.exchanges[xi].client_closed
            || resent(
                self.sent.get_or_init(|| sent_of(self.s, self.exchanges)),
                self.exchanges,
                xi,
                m,
            )
    }

    /// Whether the stream of POST `xi` (its connections) delivered an event with an id of its
    /// own: a cursor to resume from.
    fn stream_has_ids(&self, xi: usize) -> bool {
        let own = [xi];
        let conns: &[usize] = match self.model.exchange_stream[xi] {
            Some(st) => &self.model.streams[st].connections,
            None => &own,
        };
        conns.iter().any(|&c| {
            self.exchanges[c]
                .sse
                .events
                .briefs()
                .any(|(_, b)| b.has_own_id && !b.truncated)
        })
    }

    /// Why POST `xi` shows no response (`capture_end`: the capture's last frame, µs).
    fn why(&self, xi: usize, capture_end: i64) -> Why<'a> {
        let e = &self.exchanges[xi];
        // A stream that broke without its response, with nothing more of the session in the
        // capture and the capture ending soon after: the client's reconnect may simply not
        // have been captured.
        // An event stream without event ids cannot be resumed (MCP 2025-11-25 "Resumability
        // and Redelivery"): nothing the client does next can bring its response (python-sdk
        // #3441: the server died mid-call).
        let broke_at = e.ts_end.unwrap_or(e.ts());
        let followed = self.last_ts.is_some_and(|t| t > broke_at);
        let broke_late = (e.response.is_none() || !e.resp_complete)
            && !followed
            && capture_end.saturating_sub(broke_at) < RECONNECT_HORIZON_US;
        let unresumable =
            broke_late && e.is_sse && e.response.is_some() && !self.stream_has_ids(xi);
        let broke_unseen = broke_late && !unresumable;
        let open = if e.open_at_capture_end || broke_unseen {
            Some(e)
        } else {
            self.open_resume
        };
        match (self.gap_for(xi), open) {
            (None, Some(o)) if std::ptr::eq(o, e) && !e.open_at_capture_end => Why::BrokeAtEnd,
            (None, Some(o)) => Why::StreamOpen(o),
            (None, None) if unresumable => Why::Unresumable,
            (None, None) => Why::Nothing,
            (Some(g), _) => Why::CaptureLost(g),
        }
    }
}

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
        for n in e.rpc.request.iter().filter(|n| n.kind == Kind::Request) {
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

/// How long after a broken stream a client may still reconnect, in microseconds: beyond the SDKs'
/// reconnect budgets (TS and Python: 2 tries from 1 s; Go: 5 tries with backoff up to 30 s).
pub const RECONNECT_HORIZON_US: i64 = 30_000_000;

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
        for ev in exchanges[c]
            .sse
            .events
            .iter()
            .filter(|ev| !ev.sse.truncated)
        {
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
