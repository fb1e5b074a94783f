//! The facts of one resumption (a GET with `Last-Event-ID` L, MCP 2025-11-25 "Resumability
//! and Redelivery"), computed once for every rule that judges it: how its answer opened, the
//! events the client had on the stream (`before`, up to L: `upto`), the events on the resumed
//! connection (`after`), and what they show across the cut — foreign events, the first new
//! id and how it relates to L, duplicates, progress that started over, application sequences,
//! the backends on both sides.
//!
//! Everything here is read from the stream's earlier connections, the resumed connection and
//! the capture-wide indices of [`Context`]: the facts of a resumption can be computed once its
//! connection has ended.

use std::cell::OnceCell;

use crate::hash::FastSet as HashSet;

use super::backends::different_backends;
use super::duplicates::{self, Duplicates, ProgressRestart};
use super::history::{history_positions, SessionCursors, HISTORY_BUDGET, HISTORY_WINDOW};
use super::relation::{self, IdFacts};
use super::replay::Seen;
use super::series::{self, Desync, SeqKey, Series};
use super::streams::{answered_before, empty_answer, planned_close, polling_era, retry_after};
use super::{Ev, Walk};
use crate::detect::context::Context;
use crate::detect::{flow_id, Cited, Finding, Kind, Severity};
use crate::http::{EventRec, Exchange};
use crate::mcp::ids;
use crate::mcp::McpExchange;
use crate::mcp::{Resumption, StreamKind};

/// How long after a redirect the client's request that follows it may come, µs.
const FOLLOW_US: i64 = 60_000_000;

/// One resumption and its facts.
pub(crate) struct Boundary<'a> {
    /// Index into `Model::resumptions`.
    pub index: usize,
    /// The resumption.
    pub resumption: &'a Resumption,
    /// The resumed exchange (the GET).
    pub exchange: &'a Exchange,
    /// Its session's label.
    pub session: String,
    /// Dense ids skip inside the resumed connection ([`super::gaps`]): events lost after the
    /// boundary, whatever else can be judged.
    pub inner_gap: bool,
    /// The backends that served the resumption and the connection that delivered L, when
    /// both are known and differ: (now, before).
    pub switch: Option<(&'a str, &'a str)>,
    /// When the stream's history budget was spent: the events of its history read
    /// ([`HISTORY_WINDOW`]).
    pub window: Option<usize>,
    /// How the answer opened, and the events when they could be checked.
    pub opening: Opening<'a>,
}

/// How a resumption's answer opened: an outcome that ends the checks early, or the events.
pub(crate) enum Opening<'a> {
    /// No response captured.
    NoResponse,
    /// A redirect the client followed with the same `Last-Event-ID` (the GET after it is a
    /// resumption of its own): `next` is that GET's frame.
    Redirected {
        status: u16,
        to: Option<&'a str>,
        next: u64,
    },
    /// An error status (or a redirect not followed: a login page leaves the client without
    /// its stream).
    Refused { status: u16 },
    /// Without a session, L was delivered on several streams of this client.
    Ambiguous,
    /// No captured stream of the session delivered L; `lost`: a response of the session before
    /// it lost bytes in the capture; `began_before`: the session's first captured request
    /// already carried its `Mcp-Session-Id` (and L names no stream the capture saw before).
    CursorUnknown {
        lost: Option<&'a Exchange>,
        began_before: Option<&'a Exchange>,
    },
    /// The response is no event stream.
    NotSse,
    /// The resumption has no cursor position.
    NoCursor,
    /// L is not among the events read of the stream's earlier connections (`windowed`: only
    /// the last [`HISTORY_WINDOW`] were).
    CursorNotFound { windowed: bool },
    /// The capture lost bytes of the resumed connection or of L's.
    CaptureGap,
    /// No events on the resumed connection.
    Empty(Empty),
    /// Events to check.
    Events(Box<Events<'a>>),
}

/// What an empty resumed connection means.
pub(crate) enum Empty {
    /// Held open and ended with nothing in it, followed by the client's next connection of the
    /// stream with the same `Last-Event-ID` (frame `next_frame`): a quiet poll, nothing
    /// skipped here; the next one is judged.
    AskedAgain { next_frame: u64 },
    /// A POST stream whose request was answered at or before L owes nothing after it
    /// (python-sdk `src/mcp/server/streamable_http.py`, rust-sdk #958).
    NothingOwed,
    /// Ended cleanly while the stream's request was still unanswered (rmcp answers a resume
    /// it cannot serve this way, rust-sdk #958): no event after L was shown, so none was shown
    /// skipped; whether the response ever came is the stream's to say.
    EndedPending { served_later: Option<usize> },
    /// Nothing to judge by.
    Nothing { served_later: Option<usize> },
}

/// The stream around the cursor: what the client had and what the resumed connection brought.
pub(crate) struct Cut<'a> {
    /// The cursor L.
    pub leid: &'a str,
    /// The logical stream.
    pub stream: usize,
    pub kind: StreamKind,
    /// The exchange that opened the stream (its POST, or the first GET).
    pub origin: usize,
    /// The stream's connections before the resumed one, in request order.
    pub earlier: &'a [usize],
    /// The connection that delivered L.
    pub cursor_exchange: usize,
    /// The events the client had on the stream before this connection (within the history
    /// window), as (connection, index, event); L is at `lpos`.
    pub before: Vec<Ev<'a>>,
    pub lpos: usize,
    /// The resumed connection's events (truncated ones left out).
    pub after: Vec<EventRec<'a>>,
    /// Own ids the client had before this connection, and up to L.
    pub ids_before: HashSet<&'a str>,
    pub ids_upto: HashSet<&'a str>,
    /// The request of the stream was captured (not a stream the capture began inside).
    pub requests_known: bool,
    /// The application sequences up to L, read on first use.
    upto_series: OnceCell<Vec<Series<'a>>>,
}

impl<'a> Cut<'a> {
    /// The events up to and including L.
    pub(crate) fn upto(&self) -> &[Ev<'a>] {
        &self.before[..=self.lpos]
    }

    /// The event L.
    pub(crate) fn l_ev(&self) -> EventRec<'a> {
        self.before[self.lpos].2
    }

    /// The application sequences up to L, in order of their first value.
    pub(crate) fn upto_series(&self) -> &[Series<'a>] {
        self.upto_series.get_or_init(|| series::series(self.upto()))
    }

    /// An application sequence came before the cut.
    pub(crate) fn app(&self) -> bool {
        !self.upto_series().is_empty()
    }

    /// A sequence under way before the cut has a value after it.
    pub(crate) fn app_after(&self) -> bool {
        self.app()
            && self.after.iter().any(|ev| {
                series::seq_values(ev)
                    .iter()
                    .any(|(k, _)| self.upto_series().iter().any(|(key, _)| key == k))
            })
    }

    /// An inclusive replay's copy of L itself (same id, same data — rmcp sends it): a
    /// duplicate, not the start of another log.
    pub(crate) fn resent_cursor(&self, ev: &EventRec) -> bool {
        ev.sse.id == Some(self.leid) && ev.data_hash == self.l_ev().data_hash
    }
}

/// An event of another stream on the resumed connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ForeignEvent<'a> {
    /// The event.
    pub ev: EventRec<'a>,
    /// The stream it belongs to.
    pub stream: usize,
    /// The frame where that stream delivered it itself, when it did.
    pub delivered: Option<Cited>,
    /// Whether the client received it twice (that stream delivered it too, to this client).
    pub twice: bool,
}

/// The facts of a resumed connection with events.
pub(crate) struct Events<'a> {
    /// The stream around the cursor.
    pub cut: Cut<'a>,
    /// Events of another stream of the session (or of a headless stream) replayed here.
    pub foreign_stream: Vec<ForeignEvent<'a>>,
    /// Events of another session replayed here, with where that session had them.
    pub foreign_session: Vec<(EventRec<'a>, &'a Seen)>,
    /// The first new event: a message event with its own id that is no priming event, no
    /// re-sent cursor and no foreign event; and its id.
    pub first: Option<EventRec<'a>>,
    pub first_id: Option<String>,
    /// The first message without an id line of its own.
    pub missing_id: Option<EventRec<'a>>,
    /// How the first id relates to L.
    pub ids: IdFacts,
    /// A priming event before the first new event with an ordered id of L's format and prefix
    /// below L: the server started another log (docs/resumption.md, "Forks").
    pub primed_low: Option<EventRec<'a>>,
    /// What the client got again.
    pub dups: Duplicates<'a>,
    /// Progress started over: the log began again whatever the ids look like (only where
    /// nothing before it showed the fork).
    pub progress_restart: Option<ProgressRestart<'a>>,
    /// The application sequences that broke after L (only where the ids claim a continuation
    /// and nothing forked).
    pub desyncs: Vec<Desync<'a>>,
    /// The client was away by the server's plan (MCP 2025-11-25 polling: L's connection, and
    /// the empty polls after it, ended cleanly with a `retry` in force and were followed in
    /// time), on the same backend.
    pub planned: bool,
    /// For a stream whose request was not captured: the request its events answer and its
    /// progress token ([`super::history::sole_request`]).
    pub stream_request: Option<(String, String)>,
}

impl<'a> Events<'a> {
    /// Whether `ev` is an event of another stream or session.
    pub(crate) fn foreign(&self, ev: &EventRec) -> bool {
        self.foreign_stream.iter().any(|f| f.ev.is(ev))
            || self.foreign_session.iter().any(|(f, _)| f.is(ev))
    }

    /// The first resumed event shows another log: a message without an id, an id that
    /// regressed or restarted.
    pub(crate) fn forked_at_first(&self) -> bool {
        self.missing_id.is_some() || self.ids.regressed || self.ids.restarted
    }

    /// [`Events::primed_low`] when nothing before it showed the fork.
    pub(crate) fn primed_fork(&self) -> Option<EventRec<'a>> {
        self.primed_low.filter(|_| !self.forked_at_first())
    }

    /// Another log, by whatever fact shows it.
    pub(crate) fn forked(&self) -> bool {
        self.forked_at_first() || self.primed_low.is_some() || self.progress_restart.is_some()
    }

    /// The progress tokens and application sequences seen to break.
    pub(crate) fn desynced(&self, key: &SeqKey) -> bool {
        self.desyncs.iter().any(|d| &d.key == key)
    }
}

impl<'a> Boundary<'a> {
    /// A finding of this resumption, its evidence at event `at` (else the GET).
    pub(crate) fn finding(
        &self,
        kind: Kind,
        severity: Severity,
        at: Option<EventRec>,
        detail: String,
    ) -> Finding {
        let e = self.exchange;
        Finding {
            session_id: self.session.clone(),
            kind,
            severity,
            ts: at.map(|ev| ev.sse.ts).unwrap_or_else(|| e.ts()),
            flow_id: flow_id(e),
            frame: at.map(|ev| ev.sse.frame_first).unwrap_or_else(|| e.frame()),
            last_event_id: Some(self.resumption.last_event_id.clone()),
            event_id: at
                .and_then(|ev| ev.sse.id.map(str::to_string))
                .filter(|_| at.is_some_and(|ev| ev.sse.has_own_id)),
            request_id: None,
            expected: None,
            observed: None,
            detail,
            cited: Vec::new(),
        }
    }

    /// The flow of event `ev` of this resumption's stream: that of the connection before the
    /// cursor that delivered it, else the resumed connection's.
    pub(crate) fn flow_of(&self, exchanges: &[Exchange], ev: &EventRec) -> usize {
        self.events()
            .and_then(|e| e.cut.before.iter().find(|b| b.2.is(ev)))
            .map_or(self.exchange.flow_index, |b| exchanges[b.0].flow_index)
    }

    /// `detail`, with the backends named when another backend served the resumption (the
    /// explanation of most forks: PrefectHQ/fastmcp #482).
    pub(crate) fn with_backends(&self, mut detail: String) -> String {
        if let Some((now, before)) = self.switch {
            detail.push_str(&format!(
                " The resumption was served by backend {now}; the stream's events up to Last-Event-ID {} came from backend {before}.",
                self.resumption.last_event_id
            ));
        }
        detail
    }

    /// The events, when the resumption got that far.
    pub(crate) fn events(&self) -> Option<&Events<'a>> {
        match &self.opening {
            Opening::Events(ev) => Some(ev),
            _ => None,
        }
    }

    /// `Last-Event-ID`.
    pub(crate) fn leid(&self) -> &'a str {
        &self.resumption.last_event_id
    }
}

/// The facts of resumption `index`; `walk` keeps what the stream's resumptions have read.
pub(crate) fn boundary<'a>(ctx: &'a Context<'a>, walk: &mut Walk, index: usize) -> Boundary<'a> {
    let r = &ctx.model.resumptions[index];
    let e = &ctx.exchanges[r.exchange];
    let switch = r.cursor.and_then(|(cx, _)| {
        let (now, before) = (ctx.model.backend(r.exchange)?, ctx.model.backend(cx)?);
        different_backends(now, before).then_some((now, before))
    });
    let (opening, window) = opening(ctx, walk, index, switch.is_some());
    Boundary {
        index,
        resumption: r,
        exchange: e,
        session: ctx.label(r.session),
        inner_gap: ctx.inner_gapped.contains(&r.exchange),
        switch,
        window,
        opening,
    }
}

/// How resumption `index` opened, and the history window when its stream's budget was spent.
fn opening<'a>(
    ctx: &'a Context<'a>,
    walk: &mut Walk,
    index: usize,
    switched: bool,
) -> (Opening<'a>, Option<usize>) {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    let r = &model.resumptions[index];
    let e = &exchanges[r.exchange];
    let status = e.status();
    if e.response.is_none() {
        return (Opening::NoResponse, None);
    }
    // A redirect the client followed with the same Last-Event-ID refuses nothing.
    let followed = || {
        let until = e.ts_end.unwrap_or(e.ts()).saturating_add(FOLLOW_US);
        model.resumptions[index + 1..]
            .iter()
            .take_while(|o| exchanges[o.exchange].ts() <= until)
            .find(|o| o.session == r.session && o.last_event_id == r.last_event_id)
    };
    if let Some(next) = matches!(status, 301 | 302 | 303 | 307 | 308)
        .then(followed)
        .flatten()
    {
        let next = exchanges[next.exchange].frame();
        let to = e.resp_header("location");
        return (Opening::Redirected { status, to, next }, None);
    }
    if status >= 300 {
        return (Opening::Refused { status }, None);
    }
    if r.ambiguous {
        return (Opening::Ambiguous, None);
    }
    let Some(st) = r.stream else {
        return (cursor_unknown(ctx, walk, r), None);
    };
    if !e.is_sse {
        return (Opening::NotSse, None);
    }
    let Some((cx, ce)) = r.cursor else {
        return (Opening::NoCursor, None);
    };
    let (earlier, before, window) = read_history(ctx, walk, r, st);
    let Some(lpos) = before.iter().rposition(|&(x, i, _)| x == cx && i == ce) else {
        let windowed = window.is_some();
        return (Opening::CursorNotFound { windowed }, window);
    };
    let after: Vec<EventRec> = e.sse.events.iter().filter(|ev| !ev.sse.truncated).collect();
    if e.resp_gap || exchanges[cx].resp_gap {
        return (Opening::CaptureGap, window);
    }
    let stream = &model.streams[st];
    let own_ids = |evs: &[Ev<'a>]| -> HashSet<&'a str> {
        evs.iter()
            .filter(|(_, _, ev)| ev.sse.has_own_id)
            .filter_map(|(_, _, ev)| ev.sse.id)
            .collect()
    };
    let cut = Cut {
        leid: &r.last_event_id,
        stream: st,
        kind: stream.kind,
        origin: stream.origin,
        earlier,
        cursor_exchange: cx,
        ids_before: if after.is_empty() {
            HashSet::default()
        } else {
            own_ids(&before)
        },
        ids_upto: if after.is_empty() {
            HashSet::default()
        } else {
            own_ids(&before[..=lpos])
        },
        before,
        lpos,
        after,
        requests_known: exchanges[stream.origin].request.is_some(),
        upto_series: OnceCell::new(),
    };
    if cut.after.is_empty() {
        return (Opening::Empty(empty(ctx, walk, r, &cut)), window);
    }
    let events = events(ctx, walk, r, cut, switched);
    (Opening::Events(Box::new(events)), window)
}

/// A resumption whose cursor no captured stream of the session delivered.
fn cursor_unknown<'a>(ctx: &'a Context<'a>, walk: &mut Walk, r: &Resumption) -> Opening<'a> {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    let e = &exchanges[r.exchange];
    // An SSE response of the session, before this request, that lost bytes in the capture
    // could have carried the cursor: then nothing says the client invented it.
    let seen = walk
        .cursors
        .entry(r.session)
        .or_insert_with(|| SessionCursors::build(model, exchanges, r.session));
    let lost = seen
        .first_lost
        .map(|x| &exchanges[x])
        .filter(|g| g.ts() < e.ts());
    // A session whose first captured request already carried its `Mcp-Session-Id` began
    // before the capture did: a stream before it could have delivered the cursor too — unless
    // the cursor names a stream (by its id's stream part) that the capture saw before this
    // resumption (its own answer continues the stream it names).
    let stream_seen = seen.stream_seen(&r.last_event_id, e.ts());
    let began_before = model.sessions[r.session]
        .exchanges
        .first()
        .map(|&x| &exchanges[x])
        .filter(|g| !stream_seen && g.req_header("mcp-session-id").is_some());
    Opening::CursorUnknown { lost, began_before }
}

/// The events the client had on stream `st` before resumption `r`'s connection: all of them,
/// until the stream's resumptions have read [`HISTORY_BUDGET`] events and connections; then
/// the last [`HISTORY_WINDOW`] (returned as the window). Also the stream's earlier connections.
fn read_history<'a>(
    ctx: &'a Context<'a>,
    walk: &mut Walk,
    r: &Resumption,
    st: usize,
) -> (&'a [usize], Vec<Ev<'a>>, Option<usize>) {
    let exchanges = ctx.exchanges;
    // (Connections are in request order, so the index finds this one at once.)
    let conns = &ctx.model.streams[st].connections;
    let at = conns.partition_point(|&x| x < r.exchange);
    let earlier = if conns.get(at) == Some(&r.exchange) {
        &conns[..at]
    } else {
        conns
            .iter()
            .position(|&x| x == r.exchange)
            .map_or(&conns[..], |p| &conns[..p])
    };
    let h = walk.history.entry(st).or_default();
    let window = (h.read >= HISTORY_BUDGET).then_some(HISTORY_WINDOW);
    let before: Vec<Ev> = history_positions(earlier, |xi| exchanges[xi].sse.events.len(), window)
        .into_iter()
        .filter_map(|(xi, ei)| Some((xi, ei, exchanges[xi].sse.events.get(ei)?)))
        .filter(|(_, _, ev)| !ev.sse.truncated)
        .collect();
    // Connections count as read too: a loop of empty resumptions reads no event, and each
    // walk over the connections before it would make it quadratic.
    h.read += before.len() as u64 + window.map_or(earlier.len(), |_| 0) as u64;
    if window.is_some() {
        h.windowed += 1;
        h.first_windowed.get_or_insert(r.exchange);
    }
    (earlier, before, window)
}

/// What an empty resumed connection means ([`Empty`]).
fn empty(ctx: &Context, walk: &mut Walk, r: &Resumption, cut: &Cut) -> Empty {
    let exchanges = ctx.exchanges;
    let e = &exchanges[r.exchange];
    let conns = &ctx.model.streams[cut.stream].connections;
    // This connection's position among the stream's (found at once: they are in request
    // order), and the next one.
    let at = conns.partition_point(|&x| x < r.exchange);
    let pos = if conns.get(at) == Some(&r.exchange) {
        Some(at)
    } else {
        conns.iter().position(|&x| x == r.exchange)
    };
    let again = pos
        .and_then(|p| conns.get(p + 1))
        .filter(|&&x| exchanges[x].resume_cursor() == Some(r.last_event_id.as_str()));
    if let (Some(&x), false) = (again, empty_answer(e)) {
        return Empty::AskedAgain {
            next_frame: exchanges[x].frame(),
        };
    }
    if cut.kind == StreamKind::Post && answered_before(exchanges, cut.origin, cut.upto()) {
        return Empty::NothingOwed;
    }
    // An empty answer over at once (rmcp's to a resume it cannot serve) skipped nothing either
    // when a later resumption from the same Last-Event-ID, after more such answers, is itself
    // resumed ([`crate::detect::verdict::settle`]).
    let served_later = match (walk.history.get_mut(&cut.stream), pos) {
        (Some(h), Some(p)) if empty_answer(e) => h.served_next(conns, exchanges)[p],
        _ => None,
    };
    let pending =
        cut.kind == StreamKind::Post && !answered_before(exchanges, cut.origin, &cut.before);
    if e.resp_complete && pending {
        Empty::EndedPending { served_later }
    } else {
        Empty::Nothing { served_later }
    }
}

/// The facts of a resumed connection with events.
fn events<'a>(
    ctx: &'a Context<'a>,
    walk: &mut Walk,
    r: &Resumption,
    cut: Cut<'a>,
    switched: bool,
) -> Events<'a> {
    let (foreign_stream, foreign_session) = foreign(ctx, r, &cut);
    let mut ev = Events {
        foreign_stream,
        foreign_session,
        first: None,
        first_id: None,
        missing_id: None,
        ids: IdFacts::default(),
        primed_low: None,
        dups: Duplicates::default(),
        progress_restart: None,
        desyncs: Vec::new(),
        planned: false,
        stream_request: None,
        cut,
    };
    let cut = &ev.cut;
    ev.first = cut
        .after
        .iter()
        .copied()
        .find(|x| x.sse.has_own_id && !x.priming && !cut.resent_cursor(x) && !ev.foreign(x));
    ev.first_id = ev.first.and_then(|x| x.sse.id.map(str::to_string));
    let is_msg = |x: &EventRec| {
        !x.messages.is_empty() || (!x.priming && x.data_len > 0 && x.parse_error.is_some())
    };
    ev.missing_id = cut
        .after
        .iter()
        .copied()
        .find(|x| is_msg(x) && !x.sse.has_own_id);
    ev.ids = relation::relate(ctx, cut, ev.first, ev.first_id.as_deref());
    ev.primed_low = primed_low(&ev);
    ev.dups = duplicates::duplicates(ctx, &ev.cut, r, &ev.foreign_stream);
    if !ev.dups.payload.is_empty() && !ev.forked_at_first() && ev.primed_low.is_none() {
        ev.progress_restart = duplicates::progress_restart(&ev.cut, &ev.dups);
    }
    if ev.ids.claims_continuity && !ev.forked() {
        ev.desyncs = series::desyncs(
            ev.cut.upto_series(),
            &ev.cut.after,
            ev.cut.leid,
            ev.cut.requests_known,
        );
    }
    ev.planned = planned(ctx, r, &ev.cut, switched);
    if !ev.cut.requests_known {
        ev.stream_request = stream_request(ctx, walk, ev.cut.stream);
    }
    ev
}

/// Events of another stream or session replayed on the resumed connection (checked before
/// the ids: a foreign id is not the start of another log of this stream).
#[allow(clippy::type_complexity)]
fn foreign<'a>(
    ctx: &'a Context<'a>,
    r: &Resumption,
    cut: &Cut<'a>,
) -> (Vec<ForeignEvent<'a>>, Vec<(EventRec<'a>, &'a Seen)>) {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    // When the first of the stream's earlier connections began (its first captured byte; they
    // are in request order, a headless one, which has none, first).
    let began = cut.earlier.first().and_then(|&x| {
        let c = &exchanges[x];
        c.ts_request
            .or(c.ts_response)
            .or(c.sse.events.get(0).map(|v| v.sse.ts))
    });
    let foreign_stream = cut
        .after
        .iter()
        .filter_map(|ev| {
            ctx.replays
                .other_stream(model, r.session, cut.stream, ev)
                .or_else(|| {
                    // (Whether this client had the events before is unknown: the stream that
                    // delivered them may be another session's, behind the same address.)
                    ctx.replays
                        .other_headless(exchanges, cut.stream, r.exchange, began?, ev)
                        .map(|(o, f)| (o, Some(f), false))
                })
                .map(|(stream, delivered, twice)| ForeignEvent {
                    ev: *ev,
                    stream,
                    delivered,
                    twice,
                })
        })
        .collect();
    // Messages that answer no request of the session are another session's only when the
    // request of the stream resumed was captured: a stream whose start the capture missed
    // (headless, or a response without its request) answers a request the capture did not see.
    let foreign_session = match ctx.requests.get(&r.session) {
        Some((reqs, tokens)) if model.sessions[r.session].id.is_some() => cut
            .after
            .iter()
            .filter_map(|ev| {
                ctx.replays
                    .other_session(r.session, ev, reqs, tokens, cut.requests_known)
                    .filter(|s| model.sessions[s.session].id.is_some())
                    .map(|s| (*ev, s))
            })
            .collect(),
        _ => Vec::new(),
    };
    (foreign_stream, foreign_session)
}

/// A priming event that opens the resumed connection with an ordered id of L's format and
/// prefix but below L: the server started another log (docs/resumption.md, "Forks": the
/// client's cursor then points into the new log's low ids), even when no message follows
/// before the connection ends. (A re-sent cursor, an unordered or other-prefix priming id —
/// Python mints a new uuid after every replay — says nothing.)
fn primed_low<'a>(ev: &Events<'a>) -> Option<EventRec<'a>> {
    let cut = &ev.cut;
    let pl = ids::parse(cut.leid);
    cut.after
        .iter()
        .copied()
        .take_while(|x| ev.first.is_none_or(|f| !f.is(x)))
        .filter(|x| x.priming && x.sse.has_own_id && !cut.resent_cursor(x) && !ev.foreign(x))
        .find_map(|x| {
            let p = ids::parse(x.sse.id?);
            (p.format == pl.format
                && p.format.ordered()
                && p.prefix == pl.prefix
                && p.seq.zip(pl.seq).is_some_and(|(a, b)| a < b))
            .then_some(x)
        })
}

/// Whether the client was away by the server's plan: after a poll the server planned (MCP
/// 2025-11-25: it closed L's connection cleanly with a `retry` in force, and the client came
/// back in time, maybe through polls that carried nothing), on the same backend (a backend
/// drained away can end a connection cleanly too: docs/resumption.md, "Terminal provenance").
fn planned(ctx: &Context, r: &Resumption, cut: &Cut, switched: bool) -> bool {
    let exchanges = ctx.exchanges;
    if switched
        || !polling_era(ctx.model.sessions[r.session].era)
        || cut.before[cut.lpos + 1..]
            .iter()
            .any(|(_, _, ev)| ev.sse.has_own_id)
    {
        return false;
    }
    let Some(retry) = cut
        .before
        .iter()
        .fold(None, |f, (_, _, ev)| retry_after(f, ev))
    else {
        return false;
    };
    // L's connection, the polls from the same cursor after it that delivered nothing (no id,
    // no message: Go writes its `event: close` on whichever connection holds the stream), and
    // this one: each ended as planned and was followed in time. (Each run of empty polls is
    // walked by the one resumption after it that carried events: linear.)
    let mut next = r.exchange;
    for &x in cut.earlier.iter().rev() {
        let (a, b) = (&exchanges[x], &exchanges[next]);
        if planned_close(a, b, retry).is_none() {
            return false;
        }
        if x == cut.cursor_exchange {
            return true;
        }
        let delivered = a
            .sse
            .events
            .iter()
            .any(|ev| ev.sse.has_own_id || !ev.messages.is_empty());
        if delivered || a.resume_cursor() != Some(r.last_event_id.as_str()) {
            return false;
        }
        next = x;
    }
    false
}

/// The request of a stream whose start the capture missed (a headless stream, a response
/// without its request): the one the stream's events answer last, with the one progress token
/// they carry ([`super::history::sole_request`]; MCP 2025-11-25, "Sending Messages to the
/// Server": a POST's stream carries the messages of its request, and the standalone GET stream
/// no response). Read over every connection of the stream, once.
fn stream_request(ctx: &Context, walk: &mut Walk, st: usize) -> Option<(String, String)> {
    walk.history
        .entry(st)
        .or_default()
        .sole_request
        .get_or_insert_with(|| {
            super::history::sole_request(
                ctx.model.streams[st]
                    .connections
                    .iter()
                    .flat_map(|&x| ctx.exchanges[x].sse.events.iter()),
            )
        })
        .clone()
}
