//! Per-resumption checks: `resume_rejected`, `unknown_last_event_id`,
//! `missing_event_id`, `id_regression`, `id_restart`, `id_gap`,
//! `duplicate_delivery` (by event id or progress payload), `app_seq_desync`,
//! `suspect_terminal`, and `resume_ok` when the log continued.

use crate::hash::{FastMap as HashMap, FastSet as HashSet};

use super::proxy::different_backends;
use super::replay::ReplayIndex;
use super::streams::{empty_answer, planned_close, polling_era, retry_after};
use super::{flow_id, Finding, ResumptionResult, Severity, Verdict};
use crate::http::{EventRec, Exchange};
use crate::jsonrpc::{Kind, Short};
use crate::mcp::ids::{self, IdFormat};
use crate::mcp::{Model, Resumption, StreamKind};

type Ev<'a> = (usize, usize, EventRec<'a>);

struct Ctx<'a> {
    session: String,
    e: &'a Exchange,
    leid: &'a str,
}

impl Ctx<'_> {
    fn finding(
        &self,
        kind: &'static str,
        severity: Severity,
        at: Option<EventRec>,
        detail: String,
    ) -> Finding {
        Finding {
            session_id: self.session.clone(),
            kind,
            severity,
            ts: at.map(|ev| ev.sse.ts).unwrap_or_else(|| self.e.ts()),
            flow_id: flow_id(self.e),
            frame: at
                .map(|ev| ev.sse.frame_first)
                .unwrap_or_else(|| self.e.frame()),
            last_event_id: Some(self.leid.to_string()),
            event_id: at
                .and_then(|ev| ev.sse.id.map(str::to_string))
                .filter(|_| at.is_some_and(|ev| ev.sse.has_own_id)),
            request_id: None,
            expected: None,
            observed: None,
            detail,
        }
    }
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Check one resumption; findings are appended to `out`.
#[allow(clippy::too_many_arguments)]
pub(super) fn check(
    model: &Model,
    exchanges: &[Exchange],
    index: usize,
    r: &Resumption,
    session_requests: &HashMap<String, String>,
    tokens: &HashSet<String>,
    app_seq: &[String],
    replays: &ReplayIndex,
    int_ids: &IntIds,
    history: &mut HashMap<usize, History>,
    cursors: &mut HashMap<usize, SessionCursors>,
    inner_gap: bool,
    out: &mut Vec<Finding>,
) -> ResumptionResult {
    let e = &exchanges[r.exchange];
    let ctx = Ctx {
        session: model.sessions[r.session].label(),
        e,
        leid: &r.last_event_id,
    };
    // Every verdict, the early ones included: a resumed connection that lost dense ids inside it
    // (`inner_gap`) lost events, whatever else could or could not be judged.
    let result = |verdict, first: Option<String>, reason: &str| {
        let (verdict, reason) = match verdict {
            Verdict::Resumed | Verdict::Unverifiable if inner_gap => (
                Verdict::Gap,
                format!("{reason}; dense ids skipped inside the resumed connection"),
            ),
            _ => (verdict, reason.to_string()),
        };
        ResumptionResult {
            index,
            verdict,
            first_event_id: first,
            events: e.events.len(),
            reason,
            continuity_unshown: false,
            served_later: None,
        }
    };
    let status = e.status();
    if e.response.is_none() {
        return result(Verdict::Unverifiable, None, "no response captured");
    }
    // A redirect the client followed with the same Last-Event-ID refuses nothing: the request
    // that follows it is a resumption of its own. (One not followed, a login page say, leaves
    // the client without its stream: a refusal.)
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
        let to = e
            .resp_header("location")
            .map(|l| format!(" to {l}"))
            .unwrap_or_default();
        return result(
            Verdict::Unverifiable,
            None,
            &format!(
                "HTTP {status}: redirected{to}, followed by the GET in frame {}",
                exchanges[next.exchange].frame()
            ),
        );
    }
    if status >= 300 {
        let mut f = ctx.finding("resume_rejected", Severity::Info, None, format!(
            "The server answered the resumption GET (frame {}, flow {}) with Last-Event-ID {} by HTTP {} in frame {}: the loss is loud, the client must re-establish.",
            e.frame(), flow_id(e), r.last_event_id, status, e.frame_response.unwrap_or(0)));
        f.ts = e.ts_response.unwrap_or(f.ts);
        f.frame = e.frame_response.unwrap_or(f.frame);
        f.observed = Some(format!("HTTP {status}"));
        out.push(f);
        return result(Verdict::Rejected, None, &format!("HTTP {status}"));
    }
    if r.ambiguous {
        return result(
            Verdict::Unverifiable,
            None,
            "without a session, Last-Event-ID was delivered on several streams of this client",
        );
    }
    let Some(st) = r.stream else {
        // An SSE response of the session, before this request, that lost bytes in the capture
        // could have carried the cursor: then nothing says the client invented it.
        let seen = cursors
            .entry(r.session)
            .or_insert_with(|| SessionCursors::build(model, exchanges, r.session));
        let lost = seen
            .first_lost
            .map(|x| &exchanges[x])
            .filter(|g| g.ts() < e.ts());
        // A session whose first captured request already carried its `Mcp-Session-Id` began
        // before the capture did: a stream before it could have delivered the cursor too —
        // unless the cursor names a stream (by its id's stream part) that the capture saw
        // before this resumption (its own answer continues the stream it names).
        let stream_seen = seen.stream_seen(&r.last_event_id, e.ts());
        let began_before = model.sessions[r.session]
            .exchanges
            .first()
            .map(|&x| &exchanges[x])
            .filter(|g| !stream_seen && g.req_header("mcp-session-id").is_some());
        let mut f = match (lost, began_before) {
            (Some(g), _) => ctx.finding("unknown_last_event_id", Severity::Info, None, format!(
                "The resumption GET (frame {}, flow {}) presented Last-Event-ID {} that no captured stream of this session delivered, but the capture lost bytes of the session's responses before it (flow {}, frames {}–{}), which could have carried it.",
                e.frame(), flow_id(e), r.last_event_id, flow_id(g), g.frame(), g.frame_last.unwrap_or(g.frame()))),
            (None, Some(g)) => ctx.finding("unknown_last_event_id", Severity::Info, None, format!(
                "The resumption GET (frame {}, flow {}) presented Last-Event-ID {} that no captured stream of this session delivered, but the session began before the capture (its first captured request, frame {}, already carried its Mcp-Session-Id): a stream before the capture could have delivered it.",
                e.frame(), flow_id(e), r.last_event_id, g.frame())),
            (None, None) => ctx.finding("unknown_last_event_id", Severity::Warning, None, format!(
                "The resumption GET (frame {}, flow {}) presented Last-Event-ID {} that no captured stream of this session delivered: the capture is incomplete or the client invented a cursor.",
                e.frame(), flow_id(e), r.last_event_id)),
        };
        f.observed = Some("cursor never delivered".into());
        out.push(f);
        return result(
            Verdict::Unverifiable,
            None,
            "Last-Event-ID not delivered on any captured stream",
        );
    };
    if !e.is_sse {
        return result(
            Verdict::Unverifiable,
            None,
            "response is not an event stream",
        );
    }
    let stream = &model.streams[st];
    let Some((cx, ce)) = r.cursor else {
        return result(Verdict::Unverifiable, None, "no cursor");
    };
    // Events the client had on this logical stream before this connection: all of them, until
    // the stream's resumptions have read HISTORY_BUDGET events and connections (a client that
    // polls for hours resumes thousands of times, and each reading of the whole history would
    // make the run quadratic); then the last HISTORY_WINDOW.
    // (Connections are in request order, so the index finds this one at once.)
    let conns = &stream.connections;
    let at = conns.partition_point(|&x| x < r.exchange);
    let earlier = if conns.get(at) == Some(&r.exchange) {
        &conns[..at]
    } else {
        conns
            .iter()
            .position(|&x| x == r.exchange)
            .map_or(&conns[..], |p| &conns[..p])
    };
    let h = history.entry(st).or_default();
    let window = (h.read >= HISTORY_BUDGET).then_some(HISTORY_WINDOW);
    let before: Vec<Ev> = history_positions(earlier, |xi| exchanges[xi].events.len(), window)
        .into_iter()
        .filter_map(|(xi, ei)| Some((xi, ei, exchanges[xi].events.get(ei)?)))
        .filter(|(_, _, ev)| !ev.sse.truncated)
        .collect();
    // Connections count as read too: a loop of empty resumptions reads no event, and each
    // walk over the connections before it would make it quadratic.
    h.read += before.len() as u64 + window.map_or(earlier.len(), |_| 0) as u64;
    if window.is_some() {
        h.windowed += 1;
        h.first_windowed.get_or_insert(r.exchange);
    }
    let result = |verdict, first: Option<String>, reason: &str| match window {
        Some(w) => result(
            verdict,
            first,
            &format!("{reason} (checked against the stream's last {w} events)"),
        ),
        None => result(verdict, first, reason),
    };
    let Some(lpos) = before.iter().rposition(|&(x, i, _)| x == cx && i == ce) else {
        let why = if window.is_some() {
            "cursor older than the events checked"
        } else {
            "cursor not on an earlier connection of the stream"
        };
        return result(Verdict::Unverifiable, None, why);
    };
    let upto: &[Ev] = &before[..=lpos];
    // The application sequences up to L, read once for the checks that need them.
    let upto_series = std::cell::OnceCell::new();
    let upto_series = || upto_series.get_or_init(|| series(upto));
    let l_ev = before[lpos].2;
    let after: Vec<EventRec> = e.events.iter().filter(|ev| !ev.sse.truncated).collect();
    if e.resp_gap || exchanges[cx].resp_gap {
        return result(Verdict::Unverifiable, None, "capture gap in the evidence");
    }
    if after.is_empty() {
        // A connection held open that ended with nothing in it, followed by the client's next
        // connection of the stream with the same Last-Event-ID: nothing was skipped here (the
        // client asks again for everything after L): a quiet poll. The next one is judged.
        // This connection's position among the stream's (found at once: they are in request
        // order), and the next one.
        let pos = if conns.get(at) == Some(&r.exchange) {
            Some(at)
        } else {
            conns.iter().position(|&x| x == r.exchange)
        };
        let again = pos
            .and_then(|p| conns.get(p + 1))
            .filter(|&&x| exchanges[x].resume_cursor() == Some(r.last_event_id.as_str()));
        if let (Some(&x), false) = (again, empty_answer(e)) {
            return result(
                Verdict::Resumed,
                None,
                &format!("no events before the connection ended; the client resumed again from the same Last-Event-ID in frame {}, so nothing was skipped here", exchanges[x].frame()),
            );
        }
        // A POST stream whose request was answered at or before L owes nothing after it: an
        // empty answer is the whole rest of the stream (Python's and rmcp's answer to a resume
        // of a finished stream: python-sdk `src/mcp/server/streamable_http.py`, rust-sdk #958).
        if stream.kind == StreamKind::Post && answered_before(exchanges, stream.origin, upto) {
            return result(
                Verdict::Resumed,
                None,
                "no events on the resumed connection, and none owed: the stream's request was answered at or before the Last-Event-ID",
            );
        }
        // An empty answer over at once (rmcp's to a resume it cannot serve) skipped nothing
        // either when a later resumption from the same Last-Event-ID, after more such answers,
        // is itself resumed: the verdict below stands unless that one is ([`super::run`]).
        let served_later = match (history.get_mut(&st), pos) {
            (Some(h), Some(p)) if empty_answer(e) => h.served_next(conns, exchanges)[p],
            _ => None,
        };
        // A stream the server ended cleanly with nothing in it, while the stream's request was
        // still unanswered: what was pending is gone (rmcp answers a late resume this way).
        let pending =
            stream.kind == StreamKind::Post && !answered_before(exchanges, stream.origin, &before);
        let mut res = if e.resp_complete && pending {
            result(Verdict::Gap, None, "the server ended the resumed stream with no events while its request was unanswered")
        } else {
            result(
                Verdict::Unverifiable,
                None,
                "no events on the resumed connection",
            )
        };
        res.served_later = served_later;
        return res;
    }
    let ids_before: HashSet<&str> = before
        .iter()
        .filter(|(_, _, ev)| ev.sse.has_own_id)
        .filter_map(|(_, _, ev)| ev.sse.id)
        .collect();
    let ids_upto: HashSet<&str> = upto
        .iter()
        .filter(|(_, _, ev)| ev.sse.has_own_id)
        .filter_map(|(_, _, ev)| ev.sse.id)
        .collect();
    let is_msg = |ev: &EventRec| {
        !ev.messages.is_empty() || (!ev.priming && ev.data_len > 0 && ev.parse_error.is_some())
    };
    // The first new event: an inclusive replay that re-sends the cursor event itself (same id,
    // same data — rmcp does) is a duplicate (reported below), not the start of another log.
    let resent_cursor = |ev: &EventRec| {
        ev.sse.id == Some(r.last_event_id.as_str()) && ev.data_hash == l_ev.data_hash
    };
    // Events of another stream or session replayed here (checked before the ids: a foreign id is
    // not the start of another log of this stream).
    let named = model.sessions[r.session].id.is_some();
    // When the first of the stream's earlier connections began (its first captured byte; they
    // are in request order, a headless one, which has none, first).
    let began = earlier.first().and_then(|&x| {
        let c = &exchanges[x];
        c.ts_request
            .or(c.ts_response)
            .or(c.events.get(0).map(|v| v.sse.ts))
    });
    let foreign_stream: Vec<(EventRec, usize, Option<u64>, bool)> = after
        .iter()
        .filter_map(|ev| {
            replays
                .other_stream(model, r.session, st, ev)
                .or_else(|| {
                    // (Whether this client had the events before is unknown: the stream that
                    // delivered them may be another session's, behind the same address.)
                    replays
                        .other_headless(exchanges, st, r.exchange, began?, ev)
                        .map(|(o, f)| (o, Some(f), false))
                })
                .map(|(o, f, twice)| (*ev, o, f, twice))
        })
        .collect();
    // Messages that answer no request of the session are another session's only when the
    // request of the stream resumed was captured: a stream whose start the capture missed
    // (headless, or a response without its request) answers a request the capture did not see.
    let requests_known = exchanges[stream.origin].request.is_some();
    let foreign_session: Vec<(EventRec, &super::replay::Seen)> = if named {
        after
            .iter()
            .filter_map(|ev| {
                replays
                    .other_session(r.session, ev, session_requests, tokens, requests_known)
                    .filter(|s| model.sessions[s.session].id.is_some())
                    .map(|s| (*ev, s))
            })
            .collect()
    } else {
        Vec::new()
    };
    let foreign = |ev: &EventRec| {
        foreign_stream.iter().any(|(f, ..)| f.is(ev))
            || foreign_session.iter().any(|(f, _)| f.is(ev))
    };
    let first = after
        .iter()
        .copied()
        .find(|ev| ev.sse.has_own_id && !ev.priming && !resent_cursor(ev) && !foreign(ev));
    let first_id = first.and_then(|ev| ev.sse.id.map(str::to_string));
    let mut forked = false;
    // Dense ids that skip inside the resumed connection (`streams::dense_id_gaps`): events lost
    // after the boundary, as an app_seq_desync inside it.
    let mut gap = inner_gap;
    let mut id_gapped = false;
    // Where the `id_gap` finding is in `out`, when there is one.
    let mut id_gap_at: Option<usize> = None;
    let mut terminal_suspect = false;
    // A terminal that may be fabricated, where the wire cannot tell (a warning, not a gap).
    let mut unverified = false;
    let mut reasons: Vec<&str> = Vec::new();
    if inner_gap {
        reasons.push("dense ids skipped inside the resumed connection");
    }

    if let Some(&(ev, other, earlier, _)) = foreign_stream.first() {
        // A stream the capture began inside, which no resumption took into a session.
        let unseen = if model.sessions[model.streams[other].session].id.is_none() {
            ", a stream the capture began inside (its session not shown),"
        } else {
            ""
        };
        let mut f = ctx.finding("cross_stream_replay", Severity::Error, Some(ev), format!(
            "The resumption from Last-Event-ID {} (GET in frame {}, flow {}) continues stream S{st} but replayed {} event(s) of another stream, starting in frame {} with an event of stream S{other}{unseen}{}: messages the client handles on the wrong stream, or twice.",
            r.last_event_id, e.frame(), flow_id(e), foreign_stream.len(), ev.sse.frame_first,
            earlier.map(|f| format!(" that stream delivered itself in frame {f}")).unwrap_or_else(|| " (a message of that stream's request)".into())));
        // The request whose stream the replayed events belong to.
        f.request_id = super::streams::stream_request_id(model, exchanges, other);
        f.expected = Some(format!("only events of stream S{st}"));
        f.observed = Some(format!(
            "{} event(s) of stream S{other}",
            foreign_stream.len()
        ));
        out.push(f);
        gap = true;
        reasons.push("replay carried another stream's events");
    }
    if let Some(&(ev, seen)) = foreign_session.first() {
        let other = model.sessions[seen.session].label();
        let mut f = ctx.finding("cross_session_replay", Severity::Error, Some(ev), format!(
            "The resumption from Last-Event-ID {} (GET in frame {}, flow {}) replayed {} event(s) of session {other}, starting in frame {} with the same data {} delivered to that session in frame {}: the event store leaks one session's messages into another.",
            r.last_event_id, e.frame(), flow_id(e), foreign_session.len(), ev.sse.frame_first,
            seen.id.as_deref().map(|i| format!("(id {i})")).unwrap_or_default(), seen.frame));
        f.expected = Some("only this session's events".into());
        f.observed = Some(format!(
            "{} event(s) of session {other}",
            foreign_session.len()
        ));
        out.push(f);
        gap = true;
        reasons.push("replay carried another session's events");
    }

    // missing_event_id: a message on the resumed connection without its own id line.
    if let Some(ev) = after
        .iter()
        .copied()
        .find(|ev| is_msg(ev) && !ev.sse.has_own_id)
    {
        let mut f = ctx.finding("missing_event_id", Severity::Error, Some(ev), format!(
            "The resumed stream (flow {}, frame {}) delivered a message without an id line after Last-Event-ID {}: continuity cannot be proven, so the resume must be treated as a fork.",
            flow_id(e), ev.sse.frame_first, r.last_event_id));
        f.expected = Some("an id on every event after a resume".into());
        f.observed = Some("event without id".into());
        out.push(f);
        forked = true;
        reasons.push("message without id");
    }

    // id_regression: the resumed stream `how` event `id`, `relation` L.
    let regressed = |ev: EventRec, id: &str, how: &str, relation: &str| {
        let mut f = ctx.finding("id_regression", Severity::Error, Some(ev), format!(
            "The resumed stream (GET in frame {}, flow {}) {how} event id {id} in frame {}, {relation} Last-Event-ID {} (delivered in frame {}): the server opened another log instead of continuing this one.",
            e.frame(), flow_id(e), ev.sse.frame_first, r.last_event_id, l_ev.sse.frame_first));
        f.expected = Some(format!("first id after {}", r.last_event_id));
        f.observed = Some(id.to_string());
        f
    };
    let pl = ids::parse(&r.last_event_id);
    let mut continuity_claimed = false;
    // Whether the first id after L shows, by its format's order, that the log went on from L
    // (`None`: ids that cannot show order, or no id).
    let mut ids_go_on: Option<bool> = None;
    // Whether the first id is L's next (for counters that step by one: not one further on, past
    // ids a shared counter spent elsewhere).
    let mut ids_next = false;
    if let (Some(fev), Some(fid)) = (first, first_id.as_deref()) {
        let pf = ids::parse(fid);
        let comparable = pf.format == pl.format
            && pf.format.ordered()
            && pf.prefix == pl.prefix
            && pf.seq.is_some()
            && pl.seq.is_some();
        let (fs, ls) = (pf.seq.unwrap_or(0), pl.seq.unwrap_or(0));
        // Ordinals of the first's format and prefix between L and the first that events before
        // it carried (sorted, each once). Those events with their own id are priming events and
        // other streams' (a re-sent cursor has L's own ordinal): what they carried was delivered.
        let carried = || {
            let mut v: Vec<u128> = after
                .iter()
                .take_while(|ev| !ev.is(&fev))
                .filter_map(|ev| ev.sse.id.filter(|_| ev.sse.has_own_id).map(ids::parse))
                .filter(|p| p.format == pf.format && p.prefix == pf.prefix)
                .filter_map(|p| p.seq.filter(|&n| ls < n && n < fs))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let strict_time = pf.format == IdFormat::TsStore;
        // Ordered formats compare with L itself; opaque ids can only be matched against what the
        // client already had up to L. (Ids re-sent after L by a replay are duplicates, not a regression.)
        let regression = if comparable {
            fs < ls || (fs == ls && !strict_time)
        } else {
            ids_upto.contains(fid)
        };
        // Lowest ordinal the stream had with this prefix: a restart goes back to (or below) it.
        // (Read only when a restart is possible: every id of the stream is parsed.)
        let lowest = || {
            before
                .iter()
                .filter(|(_, _, ev)| ev.sse.has_own_id)
                .filter_map(|(_, _, ev)| ev.sse.id)
                .map(ids::parse)
                .filter(|p| p.format == pf.format && p.prefix == pf.prefix)
                .filter_map(|p| p.seq)
                .min()
        };
        let ordinal = matches!(
            pf.format,
            IdFormat::Integer | IdFormat::Go | IdFormat::Rmcp | IdFormat::CSharp
        );
        let mut restart =
            comparable && ordinal && fs < ls && (fs <= 1 || lowest().is_some_and(|lo| fs <= lo));
        // Prefix formats: ids of another stream that was never seen continue no known stream.
        let pending = stream.kind == StreamKind::Get
            || !answered_before(exchanges, stream.origin, &before[..=lpos]);
        if !restart
            && pf.format == pl.format
            && !pf.prefix.is_empty()
            && pf.prefix != pl.prefix
            && !ids_before.contains(fid)
            && pending
            && matches!(
                pf.format,
                IdFormat::TsStore | IdFormat::Go | IdFormat::Rmcp | IdFormat::CSharp
            )
        {
            restart = true;
        }
        if regression {
            out.push(regressed(fev, fid, "began with", "which is not after"));
            forked = true;
            reasons.push("id regressed");
        }
        if restart {
            let mut f = ctx.finding("id_restart", Severity::Error, Some(fev), format!(
                "The resumed stream (flow {}) restarted its id sequence at {} (frame {}) after Last-Event-ID {}: a fresh log under the same session, so events of the abandoned log are lost.",
                flow_id(e), fid, fev.sse.frame_first, r.last_event_id));
            f.expected = Some(format!("continuation of the stream of {}", r.last_event_id));
            f.observed = Some(format!("new sequence starting at {fid}"));
            out.push(f);
            forked = true;
            reasons.push("id sequence restarted");
        }
        // Plain integers are dense only as far as the stream showed it, and not when an id
        // skipped was used while the stream was away: by a priming event opening the resumed
        // connection, or on another stream (of any session) between the cut and the first
        // resumed event. Then the counter is shared: the Python SDK's integer store counts
        // across streams and sessions (python-sdk `examples/stories/sse_polling/event_store.py`)
        // and primes every resumed connection (`_replay_events`, `streamable_http.py`).
        let skipped_used = || {
            let primed = after
                .iter()
                .take_while(|ev| !ev.is(&fev))
                .filter(|ev| ev.priming && ev.sse.has_own_id)
                .filter_map(|ev| ev.sse.id)
                .map(ids::parse)
                .any(|p| p.format == IdFormat::Integer && p.seq.is_some_and(|n| ls < n && n < fs));
            primed || int_ids.elsewhere(model, exchanges, st, (ls, fs), (l_ev.sse.ts, fev.sse.ts))
        };
        // Or when the application's own regular counter went on by exactly its step across the
        // skip: nothing the application numbered is missing, and a counter shared with streams
        // the capture did not see (the Python v2 store counts across every session) skips ids
        // this way; ids and counter still advance together (docs/resumption.md, "Synthesized
        // continuations").
        let mut app_vouches = false;
        let dense = comparable
            && (pf.format.dense_by_format()
                || (pf.format == IdFormat::Integer
                    && stream_dense(upto)
                    && !(fs > ls + 1 && {
                        let used = skipped_used();
                        app_vouches = !used && app_counter_continues(upto_series(), upto, &after);
                        used || app_vouches
                    })));
        if app_vouches {
            reasons.push("integer ids skipped while the application counter went on by one step (a shared counter)");
        }
        // Ordinals between L and the first message event that priming events of the resumed
        // connection carried were delivered (as cursors), and so were those another stream's
        // events replayed here took (reported as cross_stream_replay).
        let primed: Vec<u128> = if dense && fs > ls + 1 {
            carried()
        } else {
            Vec::new()
        };
        let skipped = (fs.saturating_sub(ls + 1)).saturating_sub(primed.len() as u128);
        // The first ordinal after L that no priming event carried.
        let first_missing = primed
            .iter()
            .fold(ls + 1, |want, &p| if p == want { want + 1 } else { want });
        if !regression && dense && fs > ls + 1 && skipped > 0 {
            let mut f = ctx.finding("id_gap", Severity::Error, Some(fev), format!(
                "The resumed stream (flow {}) went from Last-Event-ID {} to event id {} (frame {}) on a stream whose ids are dense: {} events were never delivered.",
                flow_id(e), r.last_event_id, fid, fev.sse.frame_first, skipped));
            f.expected = Some(format!("{first_missing}"));
            f.observed = Some(fid.to_string());
            id_gap_at = Some(out.len());
            out.push(f);
            gap = true;
            id_gapped = true;
            reasons.push("dense ids skipped");
        }
        continuity_claimed = if comparable {
            if dense {
                // (Ordinals in between that priming events carried were delivered.)
                fs == ls + 1 || (fs > ls && skipped == 0)
            } else {
                fs > ls || (strict_time && fs == ls && !ids_upto.contains(fid))
            }
        } else {
            // Opaque ids: a never-seen id is how a replay looks — unless it belongs to another stream of an ordered format.
            let other_stream =
                pf.format == pl.format && pf.format.ordered() && pf.prefix != pl.prefix;
            !ids_upto.contains(fid) && !other_stream
        };
        if comparable {
            ids_go_on = Some(continuity_claimed);
            ids_next = !(pf.format.dense_by_format() || pf.format == IdFormat::Integer)
                || fs > ls && carried().len() as u128 == fs - ls - 1;
        }
    }

    // A priming event that opens the resumed connection with an ordered id of L's format and
    // prefix but below L: the server started another log (docs/resumption.md, "Forks": the
    // client's cursor then points into the new log's low ids), even when no message follows
    // before the connection ends. (A re-sent cursor, an unordered or other-prefix priming id —
    // Python mints a new uuid after every replay — says nothing.)
    if !forked {
        let primed_low = after
            .iter()
            .copied()
            .take_while(|ev| first.is_none_or(|f| !f.is(ev)))
            .filter(|ev| ev.priming && ev.sse.has_own_id && !resent_cursor(ev) && !foreign(ev))
            .find_map(|ev| {
                let p = ids::parse(ev.sse.id?);
                (p.format == pl.format
                    && p.format.ordered()
                    && p.prefix == pl.prefix
                    && p.seq.zip(pl.seq).is_some_and(|(a, b)| a < b))
                .then_some(ev)
            });
        if let Some(pev) = primed_low {
            let pid = pev.sse.id.unwrap_or_default();
            out.push(regressed(pev, pid, "was primed with", "below"));
            forked = true;
            continuity_claimed = false;
            reasons.push("primed with an id below the cursor");
        }
    }

    // duplicate_delivery on the stream: ids or progress payloads the client already had — up to
    // L. Events the capture shows on the wire after L may never have reached the client's
    // handler (at the server's side of a network they may not have arrived at all, and a reset
    // may discard what the receiver had not read), and a replay that re-sends them is correct —
    // unless their connection was read to its end before the resumption was sent: its response
    // completed, or the client had acknowledged every byte before the server's FIN (answered by
    // its own) or reset (`resp_read`). The client's reader then got them, and a client that
    // resumes from L anyway has a cursor behind what it had (the Python SDK resumes again from
    // its first cursor when a resumed stream breaks): their replay is delivered twice.
    let read_after_l: Vec<&Ev> = before[lpos + 1..]
        .iter()
        .filter(|&&(x, _, ev)| {
            let c = &exchanges[x];
            (c.resp_complete || c.resp_read.is_some())
                && !c.resp_gap
                && !c.client_closed
                && c.ts_end.is_some_and(|t| t <= e.ts())
                && ev.carries_data()
        })
        .collect();
    fn progress_of<'a: 'b, 'b>(evs: impl Iterator<Item = &'b Ev<'a>>) -> HashSet<(Short, u64)> {
        evs.flat_map(|(_, _, ev)| ev.messages.iter())
            .filter_map(|m| Some((m.progress_token.clone()?, m.progress?.to_bits())))
            .collect()
    }
    let progress_before = progress_of(upto.iter());
    let progress_read = progress_of(read_after_l.iter().copied());
    // An id is delivered twice when the same id comes with the same data; an id reused for other
    // data is a restarted sequence (id_restart/id_regression), not a duplicate.
    fn ids_of<'a: 'b, 'b>(evs: impl Iterator<Item = &'b Ev<'a>>) -> HashSet<(&'a str, u64)> {
        evs.filter(|(_, _, ev)| ev.sse.has_own_id)
            .filter_map(|(_, _, ev)| Some((ev.sse.id?, ev.data_hash)))
            .collect()
    }
    let before_by_id = ids_of(upto.iter());
    let ids_read = ids_of(read_after_l.iter().copied());
    let had_id = |ev: &EventRec, set: &HashSet<(&str, u64)>| {
        ev.sse.has_own_id && ev.sse.id.is_some_and(|i| set.contains(&(i, ev.data_hash)))
    };
    let had_progress = |ev: &EventRec, set: &HashSet<(Short, u64)>| {
        ev.messages.iter().any(|m| {
            m.progress_token
                .zip(m.progress)
                .is_some_and(|(t, p)| set.contains(&(t, p.to_bits())))
        })
    };
    // A duplicate only the connections read after L explain: the client's cursor was behind.
    let behind = |ev: &EventRec| {
        (had_id(ev, &ids_read) || had_progress(ev, &progress_read))
            && !had_id(ev, &before_by_id)
            && !had_progress(ev, &progress_before)
    };
    // (A re-sent priming event carries no message: nothing is handled twice.)
    let dup_ids: Vec<EventRec> = after
        .iter()
        .copied()
        .filter(|ev| ev.carries_data() && (had_id(ev, &before_by_id) || had_id(ev, &ids_read)))
        .collect();
    // Progress the client already had: up to L, or earlier on this connection (a replay that
    // hands over to live events re-sends some: typescript-sdk PR #2335 review). An event that
    // repeats an earlier one of the connection with its id and data is `duplicate_event_id`'s.
    let mut progress_here: HashSet<(Short, u64)> = HashSet::default();
    let mut events_here: HashSet<(&str, u64)> = HashSet::default();
    let mut dup_payload: Vec<EventRec> = Vec::new();
    for ev in &after {
        let same_event = ev.sse.has_own_id
            && ev
                .sse
                .id
                .is_some_and(|i| !events_here.insert((i, ev.data_hash)));
        let mut again = false;
        for m in ev.messages.iter() {
            if let (Some(t), Some(p)) = (m.progress_token, m.progress) {
                let key = (t, p.to_bits());
                again |= progress_before.contains(&key)
                    || progress_read.contains(&key)
                    || (!progress_here.insert(key) && !same_event);
            }
        }
        if again {
            dup_payload.push(*ev);
        }
    }
    // Another stream's events that stream also delivered itself (before or after): the client
    // received them twice. (A response received twice is the session's duplicate_delivery.)
    let dup_foreign: Vec<(EventRec, u64)> = foreign_stream
        .iter()
        .filter(|&&(.., twice)| twice)
        .filter_map(|&(ev, _, also, _)| Some((ev, also?)))
        .filter(|(ev, _)| {
            !dup_ids.iter().any(|d| d.is(ev))
                && !dup_payload.iter().any(|d| d.is(ev))
                && ev
                    .messages
                    .iter()
                    .any(|m| !matches!(m.kind, Kind::Response | Kind::Error))
        })
        .collect();
    let duplicated = !dup_ids.is_empty() || !dup_payload.is_empty() || !dup_foreign.is_empty();
    // Progress that starts over: the first value after L of a token is one the client already had,
    // below the token's last value up to L — or below the first the capture saw it have, when
    // the capture began after the call did (progress MUST increase, MCP "Progress"). The log
    // began again (docs/resumption.md, "Forks"), whatever the ids look like — opaque ids cannot
    // show it themselves.
    // The very event the client had (the same id and data) coming first is the log's own replay
    // begun before the cursor — the TS example store sorts the ids of one millisecond by their
    // random suffix (typescript-sdk PR #1978) — not another log: a fresh log has ids of its own.
    if !dup_payload.is_empty() && !forked {
        let mut firsts: Vec<(Short, f64)> = Vec::new();
        let mut seen: HashSet<Short> = HashSet::default();
        // (Events of one body: each at its own offset.)
        let replayed: HashSet<u64> = dup_ids.iter().map(|d| d.sse.offset).collect();
        for ev in &after {
            let own_replay = replayed.contains(&ev.sse.offset);
            for m in ev.messages.iter() {
                if let (Some(t), Some(p)) = (m.progress_token, m.progress) {
                    // (Each token's first value only; `seen` before `own_replay`.)
                    if seen.insert(t.clone()) && !own_replay {
                        firsts.push((t, p));
                    }
                }
            }
        }
        let restarted = firsts.iter().any(|(t, p)| {
            upto_series().iter().any(|(k, vals)| {
                matches!(k, SeqKey::Progress(x) if x == t)
                    && vals.last().is_some_and(|&(last, _)| *p < last)
                    && (progress_before.contains(&(t.clone(), p.to_bits()))
                        || vals.first().is_some_and(|&(first, _)| *p < first))
            })
        });
        if restarted {
            forked = true;
            continuity_claimed = false;
            reasons.push("progress started over: a fresh log");
            // Ids that jumped ahead on a fresh log are another counter's (a replica's own,
            // started elsewhere), not events lost between L and the first id.
            if let Some(i) = id_gap_at.take() {
                out.remove(i);
                reasons.retain(|r| *r != "dense ids skipped");
                reasons.push("its ids jumped ahead of the cursor");
            }
        }
    }
    if duplicated {
        let at = [
            dup_ids.first(),
            dup_payload.first(),
            dup_foreign.first().map(|(ev, _)| ev),
        ]
        .into_iter()
        .flatten()
        .min_by_key(|ev| ev.sse.frame_first)
        .copied();
        let mut what = Vec::new();
        if !dup_ids.is_empty() {
            what.push(format!(
                "{} event(s) with the same id and data",
                dup_ids.len()
            ));
        }
        if !dup_payload.is_empty() {
            what.push(format!("{} progress notification(s)", dup_payload.len()));
        }
        let mut what = match what.is_empty() {
            true => Vec::new(),
            false => vec![format!(
                "again {} it already had on this stream",
                what.join(" and ")
            )],
        };
        if let Some((ev, also)) = dup_foreign.first() {
            what.push(format!(
                "{} event(s) of another stream that stream delivered too (the one in frame {} also in frame {also})",
                dup_foreign.len(),
                ev.sse.frame_first
            ));
        }
        let cursor_behind =
            after_l_text(&read_after_l, &dup_ids, &dup_payload, behind, r, exchanges);
        let mut f = ctx.finding(
            "duplicate_delivery",
            Severity::Error,
            at,
            format!(
            "After resuming from Last-Event-ID {} the client received {}, starting in frame {}.{cursor_behind}",
            r.last_event_id, what.join(", and "), at.map(|ev| ev.sse.frame_first).unwrap_or(0)),
        );
        let foreign_part = match dup_foreign.len() {
            0 => String::new(),
            n => format!(", {n} of another stream"),
        };
        f.observed = Some(format!(
            "{} ids, {} progress payloads{foreign_part} repeated",
            dup_ids.len(),
            dup_payload.len()
        ));
        out.push(f);
    }

    // app_seq_desync: transport claims continuity, the application's counter does not —
    // at the boundary (the first value after L), or inside the resumed connection (a value
    // skipped where a replay hands over to live events, as the Python SDK's race does).
    let mut desynced_tokens: HashSet<Short> = HashSet::default();
    let mut desynced_app: Vec<SeqKey> = Vec::new();
    let mut boundary_desync = false;
    if continuity_claimed && !forked {
        // The values after the cursor, by sequence (read once for all of them).
        let mut later_of: HashMap<&SeqKey, Vec<(f64, EventRec)>> = HashMap::default();
        if !upto_series().is_empty() {
            let keys: HashSet<&SeqKey> = upto_series().iter().map(|(k, _)| k).collect();
            for ev in &after {
                for (k, v) in seq_values(ev) {
                    if let Some(&key) = keys.get(&k) {
                        later_of.entry(key).or_default().push((v, *ev));
                    }
                }
            }
        }
        for (key, vals) in upto_series() {
            let Some(&(last, last_ev)) = vals.last() else {
                continue;
            };
            let steps: Vec<f64> = vals.windows(2).map(|w| w[1].0 - w[0].0).collect();
            let max_step = steps.iter().copied().fold(f64::NAN, f64::max);
            let step = if max_step.is_nan() || max_step <= 0.0 {
                last.abs().max(1.0)
            } else {
                max_step
            };
            // Only a regular counter is held to its step, at the boundary and inside the resumed
            // connection. Progress may otherwise grow by any step (MCP "Progress" fixes none): a
            // series with uneven steps, or too few values to show one, is checked only for
            // values that go back. In a stream the capture began inside (its request not
            // captured), two values are only the tail of a series whose earlier steps are not
            // seen: its step shows in three values at least.
            let regular = regular_step(vals).is_some() && (requests_known || vals.len() >= 3);
            // Values the client had before the cursor, or earlier on this connection.
            let mut here: HashSet<u64> = HashSet::default();
            let seen = |v: f64, here: &HashSet<u64>| {
                here.contains(&v.to_bits()) || vals.iter().any(|(x, _)| x.to_bits() == v.to_bits())
            };
            let later = later_of.remove(key).unwrap_or_default();
            let label = key.label(app_seq);
            let mut prev = (last, last_ev, r.last_event_id.clone());
            // Inside the resumed connection a regular counter is held to its step through the
            // replay (events sent at once) and the step where it hands over to live events,
            // the first after a pause: where the Python SDK's race loses one. Later steps are
            // the tool's own, as on any connection ("arbitrary steps").
            let mut handed_over = false;
            for (i, &(next, ev)) in later.iter().enumerate() {
                if i > 0 && (!regular || handed_over) {
                    break;
                }
                if i > 0 && ev.sse.ts.saturating_sub(prev.1.sse.ts) >= HANDOVER_PAUSE_US {
                    handed_over = true;
                }
                let jumped = regular && next > prev.0 + step * (1.0 + 1e-9);
                // A value the client already had is a replayed duplicate (duplicate_delivery), not a desync.
                let backwards = next <= prev.0 && !seen(next, &here);
                if jumped || backwards {
                    let how = if backwards {
                        "going backwards against"
                    } else {
                        "skipping ahead of"
                    };
                    // The value skipped arrives later on the same connection: the events came
                    // out of order (typescript-sdk PR #1978: the example store's replay sorts ids
                    // of one millisecond by their random suffix), not synthesized or lost.
                    let skipped = ((next - prev.0) / step).round() as i64 - 1;
                    let reordered = jumped
                        && skipped >= 1
                        && (1..=skipped.min(64)).all(|k| {
                            let want = prev.0 + step * k as f64;
                            later[i + 1..]
                                .iter()
                                .any(|(v, _)| (v - want).abs() < 1e-9 * step.max(1.0))
                        });
                    let detail = if reordered {
                        format!(
                            "Across the resume from Last-Event-ID {} {} went from {} (frame {}) to {} (frame {}), and the value(s) it skipped came later on the same connection: the events were delivered out of order, so a client that handles them as they come sees its counter go back.",
                            r.last_event_id, label, fmt_num(prev.0), prev.1.sse.frame_first, fmt_num(next), ev.sse.frame_first)
                    } else if i == 0 {
                        format!(
                            "Across the resume from Last-Event-ID {} {} (next id {}) but {} went from {} (frame {}) to {} (frame {}), {} the stream's usual step of {}: the continuation was synthesized, not replayed.",
                            r.last_event_id, if ids_go_on == Some(true) { if ids_next { "the transport ids continue" } else { "the transport ids go on past it" } } else { "the transport claims a continuation with ids new to the stream" }, first_id.as_deref().unwrap_or("-"), label, fmt_num(prev.0), prev.1.sse.frame_first, fmt_num(next), ev.sse.frame_first, how, fmt_num(step))
                    } else {
                        format!(
                            "Inside the stream resumed from Last-Event-ID {} {} went from {} (event {}, frame {}) to {} (event {}, frame {}), {} the stream's usual step of {}: events in between were never delivered{}.",
                            r.last_event_id, label, fmt_num(prev.0), prev.2, prev.1.sse.frame_first, fmt_num(next), ev.sse.id.unwrap_or("-"), ev.sse.frame_first, how, fmt_num(step),
                            match ids_step(&prev.2, ev.sse.id.unwrap_or("")) {
                                Some(true) => ", although the ids carry on",
                                Some(false) => ", and the ids skip too",
                                None => "",
                            })
                    };
                    let mut f = ctx.finding("app_seq_desync", Severity::Error, Some(ev), detail);
                    // The cursor the client held just before the jump.
                    f.last_event_id = Some(prev.2.clone());
                    f.expected = Some(format!("{} ≤ {}", label, fmt_num(prev.0 + step)));
                    f.observed = Some(fmt_num(next));
                    out.push(f);
                    gap = true;
                    boundary_desync |= i == 0;
                    reasons.push(if reordered {
                        "application sequence out of order"
                    } else {
                        "application sequence jumped"
                    });
                    match key {
                        SeqKey::Progress(t) => {
                            desynced_tokens.insert(t.clone());
                        }
                        SeqKey::App(..) => desynced_app.push(key.clone()),
                    }
                    break;
                }
                here.insert(next.to_bits());
                let id = if ev.sse.has_own_id {
                    ev.sse.id.map(str::to_string).unwrap_or_default()
                } else {
                    prev.2.clone()
                };
                prev = (next, ev, id);
            }
        }
    }

    // suspect_terminal: a final response right after L, without the progress that was under way.
    // After a poll the server planned (MCP 2025-11-25: it closed L's connection cleanly with a
    // `retry` in force, and the client came back in time, maybe through polls that carried
    // nothing), a result right after L is a tool that finished while the client was away, when
    // its progress gave no total or stood one step short of it (a loop reporting each step
    // before doing it), and an application sequence (which has no total) alike. Progress short
    // of a known total, a sequence seen to jump, or another backend answering stays suspect:
    // a backend drained away can end a connection cleanly too (docs/resumption.md, "Terminal
    // provenance").
    // Another backend than the one that delivered L served the resumption.
    let switched = model
        .backend(r.exchange)
        .zip(model.backend(cx))
        .is_some_and(|(now, then)| different_backends(now, then));
    let planned = polling_era(model.sessions[r.session].era)
        && !before[lpos + 1..]
            .iter()
            .any(|(_, _, ev)| ev.sse.has_own_id)
        && before
            .iter()
            .fold(None, |f, (_, _, ev)| retry_after(f, ev))
            .is_some_and(|retry| {
                // L's connection, the polls from the same cursor after it that delivered
                // nothing (no id, no message: Go writes its `event: close` on whichever
                // connection holds the stream), and this one: each ended as planned and was
                // followed in time. (Each run of empty polls is walked by the one resumption
                // after it that carried events: linear.)
                let mut next = r.exchange;
                for &x in earlier.iter().rev() {
                    let (a, b) = (&exchanges[x], &exchanges[next]);
                    if planned_close(a, b, retry).is_none() {
                        return false;
                    }
                    if x == cx {
                        return true;
                    }
                    let delivered = a
                        .events
                        .iter()
                        .any(|ev| ev.sse.has_own_id || !ev.messages.is_empty());
                    if delivered || a.resume_cursor() != Some(r.last_event_id.as_str()) {
                        return false;
                    }
                    next = x;
                }
                false
            })
        && !switched;
    // The request of a stream whose start the capture missed (a headless stream, a response
    // without its request) is not among the session's: it is the one the stream's events answer
    // last, with the one progress token they carry ([`sole_request`]; MCP 2025-11-25, "Sending
    // Messages to the Server": a POST's stream carries the messages of its request, and the
    // standalone GET stream no response). Read over every connection of the stream, once.
    let stream_request = if requests_known {
        None
    } else {
        history
            .entry(st)
            .or_default()
            .sole_request
            .get_or_insert_with(|| {
                sole_request(
                    stream
                        .connections
                        .iter()
                        .flat_map(|&x| exchanges[x].events.iter()),
                )
            })
            .clone()
    };
    // The responses' progress before L, by token, and what came after L before each (progress
    // by token, application values by sequence), message by message: read once for all of
    // them, which one batch may carry by the thousand.
    let before_by_token = std::cell::OnceCell::new();
    let before_of = |token: &str| -> &[(f64, Option<f64>)] {
        before_by_token
            .get_or_init(|| {
                let mut by: HashMap<Short, Vec<(f64, Option<f64>)>> = HashMap::default();
                for x in upto.iter().flat_map(|(_, _, ev)| ev.messages.iter()) {
                    if let (Some(t), Some(p)) = (x.progress_token, x.progress) {
                        by.entry(t).or_default().push((p, x.progress_total));
                    }
                }
                by
            })
            .get(token)
            .map_or(&[][..], Vec::as_slice)
    };
    // The application sequences under way before L, with their last values.
    let under_way = std::cell::OnceCell::new();
    let under_way = || -> &Vec<(SeqKey, f64)> {
        under_way.get_or_init(|| {
            upto_series()
                .iter()
                .filter(|(k, _)| matches!(k, SeqKey::App(..)))
                .filter_map(|(k, vals)| Some((k.clone(), vals.last()?.0)))
                .collect()
        })
    };
    let mut progress_so_far: HashMap<Short, Vec<(f64, Option<f64>)>> = HashMap::default();
    let mut app_so_far: HashMap<usize, usize> = HashMap::default();
    let mut msg_pos = 0usize;
    for ev in after.iter().copied() {
        if ev.messages.is_empty() {
            continue;
        }
        msg_pos += 1;
        if msg_pos > 2 {
            break;
        }
        for m in ev.messages.iter() {
            'response: {
                if !matches!(m.kind, Kind::Response | Kind::Error) {
                    break 'response;
                }
                let Some(rid) = &m.id else { break 'response };
                let captured = session_requests.get(rid.as_str());
                let Some(token) = captured.or(stream_request
                    .as_ref()
                    .filter(|(id, _)| id == rid.as_str())
                    .map(|(_, token)| token))
                else {
                    break 'response;
                };
                let progress_before = before_of(token.as_str());
                // The progress for the request between L and the response, also ahead of it in its
                // own batch (2025-03-26: one event may carry the last notifications and the result).
                let progress_after = progress_so_far
                    .get(token.as_str())
                    .map_or(&[][..], Vec::as_slice);
                // A request the capture did not see is judged only where the capture shows its
                // progress's step and total before L (two values at least, the last with a total)
                // and progress after L: a `retry` that planned the poll, and the earlier values, may
                // be before the capture, and a step or a sequence guessed from one value, or from
                // values without a total, would make a healthy end look cut short.
                if captured.is_none()
                    && (progress_after.is_empty()
                        || progress_before.len() < 2
                        || progress_before.last().is_none_or(|p| p.1.is_none()))
                {
                    break 'response;
                }
                let Some(&(last, total)) = progress_before.last() else {
                    // None of the request's progress reached the client before the cut (say, a cut
                    // right after the priming event), and another backend than the cut connection's
                    // answered the resumption with one progress value past the start, short of its
                    // total, and the result: where the result came from cannot be shown. A replica
                    // without the log invents the value where it guesses the tool stands, then a
                    // result; a replica sharing the log replays a tool that reported first at that
                    // value. The wire cannot tell them apart (the ids may continue in both), so this
                    // is a warning and the resumption unverifiable. A first value of 0 or 1 is a
                    // replay from the start, a JSON-RPC error a tool that failed, and a planned poll
                    // keeps the client away by design (a poll to another backend is no planned
                    // one, so `switched` rules it out): none of them is judged.
                    let first_value = progress_after.first().map(|&(p, _)| p);
                    if let (Some(&(reached, Some(t))), Some(v)) =
                        (progress_after.last(), first_value)
                    {
                        let tol = 1e-9 * t.abs().max(1.0);
                        if m.kind == Kind::Response
                            && switched
                            && v > 1.0 + tol
                            && reached + tol < t
                        {
                            let mut f = ctx.finding("suspect_terminal", Severity::Warning, Some(ev), format!(
                                "The final response to request {} arrived on the resumed stream right after Last-Event-ID {} (event {}, frame {}) while its progress stood at {} of {}, the first progress the client got for it ({} notification(s) in between, none before the cut), and another backend than the cut connection's served it: unless that backend shares the stream's log, the value and the result were made up there; the capture cannot show which.",
                                rid, r.last_event_id, ev.sse.id.unwrap_or("-"), ev.sse.frame_first, fmt_num(reached), fmt_num(t), progress_after.len()));
                            f.request_id = Some(rid.to_string());
                            f.expected =
                                Some("a replay from the request's first progress value".into());
                            f.observed = Some(format!(
                                "response after progress {} of {}",
                                fmt_num(reached),
                                fmt_num(t)
                            ));
                            out.push(f);
                            unverified = true;
                            terminal_suspect = true;
                            reasons.push("terminal result on another backend with its first progress past the start and short of its total");
                            break 'response;
                        }
                    }
                    // No progress for the request: an application sequence under way on the stream
                    // (`/params/app_seq`, `--app-seq`) speaks the same way — a message counter,
                    // with the result at Last-Event-ID + 1 (docs/resumption.md, "Terminal
                    // provenance").
                    // (The values of a sequence between L and the response.)
                    let between = |k: &SeqKey| match k {
                        SeqKey::App(i) => app_so_far.get(i).copied().unwrap_or(0),
                        SeqKey::Progress(_) => 0,
                    };
                    // After a planned poll only a jump counts, as for progress without a total.
                    let Some((key, last)) = under_way()
                        .iter()
                        .find(|(k, _)| desynced_app.contains(k) || (!planned && between(k) == 0))
                    else {
                        break 'response;
                    };
                    let label = key.label(app_seq);
                    let n = between(key);
                    let mut f = ctx.finding("suspect_terminal", Severity::Error, Some(ev), format!(
                        "The final response to request {} arrived on the resumed stream right after Last-Event-ID {} (event {}, frame {}) while {} stood at {} with {} value(s) of it in between: a terminal event not attributable to the original stream.",
                        rid, r.last_event_id, ev.sse.id.unwrap_or("-"), ev.sse.frame_first, label, fmt_num(*last), n));
                    f.request_id = Some(rid.to_string());
                    f.expected = Some(format!("{} continuing from {}", label, fmt_num(*last)));
                    f.observed = Some(format!("response after {n} value(s) of {label}"));
                    out.push(f);
                    gap = true;
                    terminal_suspect = true;
                    reasons.push("terminal result without the application sequence under way");
                    break 'response;
                };
                let desynced = desynced_tokens.contains(token.as_str());
                // The last step the progress took (1 when it took none).
                let step = match progress_before {
                    [.., (a, _), (b, _)] if b > a => b - a,
                    _ => 1.0,
                };
                // (Progress may be fractional: i/n of 1, or a percentage.)
                let near_end = total.is_none_or(|t| last + step + 1e-9 * t.abs().max(1.0) >= t);
                if total.is_some_and(|t| last >= t) || (planned && !desynced && near_end) {
                    break 'response;
                }
                let reached = progress_after
                    .iter()
                    .map(|&(p, _)| p)
                    .fold(f64::NAN, f64::max);
                // The progress went on after L and stopped one step short of its total: a tool that
                // reports each step before doing it ends there (one step past the last value is
                // a genuine continuation).
                // (Only when the progress before L showed its step.)
                let last_step = progress_before.len() >= 2
                    && total.is_some_and(|t| reached + step + 1e-9 * t.abs().max(1.0) >= t);
                let incomplete = progress_after.is_empty()
                    || desynced
                    || total.is_some_and(|t| reached.is_nan() || (reached < t && !last_step));
                // Nothing in between, and the progress stood one step short of its total, or had
                // none: a tool that reports each step before doing it (or gives no total) can end
                // right there, and a replica that invents the result would look the same on the
                // wire (docs/resumption.md, "Terminal provenance"). Suspect, not proven: a
                // warning, the resumption unverifiable — unless another backend than L's is known
                // to have answered (the result cannot come from the log the client was reading; a
                // planned poll was let through above).
                // (One step short only when the progress showed its step: two values at least.)
                let one_short = match total {
                    Some(_) => progress_before.len() >= 2 && near_end,
                    None => true,
                };
                if incomplete && progress_after.is_empty() && !desynced && one_short && !switched {
                    let mut f = ctx.finding("suspect_terminal", Severity::Warning, Some(ev), format!(
                        "The final response to request {} arrived on the resumed stream right after Last-Event-ID {} (event {}, frame {}) with no progress in between, while its progress stood at {}{}: the tool may have finished after that step, or the result was made up; the capture cannot show which.",
                        rid, r.last_event_id, ev.sse.id.unwrap_or("-"), ev.sse.frame_first, fmt_num(last), total.map(|t| format!(" of {}", fmt_num(t))).unwrap_or_else(|| " (no total)".into())));
                    f.request_id = Some(rid.to_string());
                    f.expected = Some(format!("progress continuing from {}", fmt_num(last)));
                    f.observed = Some("response with no progress notification in between".into());
                    out.push(f);
                    unverified = true;
                    terminal_suspect = true;
                    reasons.push("terminal result right after the cut, one step short of the total or without one");
                } else if incomplete {
                    let mut f = ctx.finding("suspect_terminal", Severity::Error, Some(ev), format!(
                        "The final response to request {} arrived on the resumed stream right after Last-Event-ID {} (event {}, frame {}) while its progress stood at {}{} with {} progress notification(s) in between: a terminal event not attributable to the original stream.",
                        rid, r.last_event_id, ev.sse.id.unwrap_or("-"), ev.sse.frame_first, fmt_num(last), total.map(|t| format!(" of {}", fmt_num(t))).unwrap_or_default(), progress_after.len()));
                    f.request_id = Some(rid.to_string());
                    f.expected = Some(format!("progress continuing from {}", fmt_num(last)));
                    f.observed = Some(format!(
                        "response after {} progress notification(s)",
                        progress_after.len()
                    ));
                    out.push(f);
                    gap = true;
                    terminal_suspect = true;
                    reasons.push("terminal result without the progress under way");
                }
            }
            // What this message carries comes before the responses after it.
            if let (Some(t), Some(p)) = (&m.progress_token, m.progress) {
                progress_so_far
                    .entry(t.clone())
                    .or_default()
                    .push((p, m.progress_total));
            }
            for &(i, _) in m.app_seq().iter() {
                *app_so_far.entry(i).or_default() += 1;
            }
        }
    }

    let verdict = if forked {
        Verdict::Forked
    } else if gap {
        Verdict::Gap
    } else if unverified {
        Verdict::Unverifiable
    } else {
        Verdict::Resumed
    };
    // resume_ok speaks of the boundary: the first events after L continue the log. A value
    // lost later inside the resumed connection is its own app_seq_desync (and makes the verdict gap).
    let boundary_ok = !forked
        && !duplicated
        && !boundary_desync
        && !terminal_suspect
        && !id_gapped
        && foreign_stream.is_empty()
        && foreign_session.is_empty();
    // What the boundary was judged by: ordered ids, the application's sequence, or neither.
    let app = !upto_series().is_empty();
    let unshown = boundary_ok && ids_go_on.is_none() && !app;
    let mut reasons_owned: Option<String> = None;
    if boundary_ok {
        let at = first.or(after.first().copied());
        let first_text = first_id
            .as_deref()
            .map(|i| format!(", first id {i}"))
            .unwrap_or_default();
        let mut f = ctx.finding("resume_ok", Severity::Info, at, if unshown {
            format!(
            "The resumption from Last-Event-ID {} (GET in frame {}, flow {}) delivered {} event(s){} with nothing that contradicts a continuation; the ids cannot show order and no application sequence came before the cut, so the continuation is not shown either.",
            r.last_event_id, e.frame(), flow_id(e), after.len(), first_text)
        } else {
            // (A loss after the boundary, inside the resumed connection, is its own finding and
            // makes the verdict gap.)
            let later = if gap {
                "; what went missing later on the resumed connection, past the cursor, is reported on its own"
            } else {
                ""
            };
            format!(
            "The resumption from Last-Event-ID {} (GET in frame {}, flow {}) continued the stream with {} event(s){}{}.",
            r.last_event_id, e.frame(), flow_id(e), after.len(), first_text, later)
        });
        f.observed = first_id.clone();
        out.push(f);
        // The application values after the cut, of a sequence under way before it.
        let app_after = app
            && after.iter().any(|ev| {
                seq_values(ev)
                    .iter()
                    .any(|(k, _)| upto_series().iter().any(|(key, _)| key == k))
            });
        let at = if gap { "at the cursor, " } else { "" };
        let said = match (first.is_some(), ids_go_on, app, app_after) {
            (false, ..) => "no message after the cursor".to_string(),
            (true, Some(true), true, true) => format!("{at}ids and application sequence continue"),
            (true, Some(true), ..) => format!(
                "{at}ids continue; no application value {} the cut to check",
                if app { "after" } else { "before" }
            ),
            (true, Some(false), ..) if reasons.is_empty() => {
                "the first id does not show the log going on from the cursor".to_string()
            }
            (true, Some(false), ..) => String::new(),
            (true, None, true, true) => {
                format!("{at}the application sequence continues; the ids cannot show order")
            }
            (true, None, ..) => "nothing contradicts a continuation, but neither the ids nor an application sequence across the cut can show one".to_string(),
        };
        if !said.is_empty() {
            reasons_owned = Some(said);
        }
    }
    if let Some(said) = reasons_owned.as_deref() {
        reasons.push(said);
    }
    if duplicated {
        reasons.push("events the client already had were delivered again");
    }
    let mut res = result(verdict, first_id, &reasons.join("; "));
    res.continuity_unshown = unshown && verdict == Verdict::Resumed;
    res
}

/// Whether event id `b` is the next after `a` in an ordered format that numbers events densely
/// (same format and prefix): `Some(true)` when it is, `Some(false)` when ids were skipped between
/// them, `None` when the ids cannot tell (unordered formats, other prefixes, plain integers
/// that skip: the counter may be shared).
fn ids_step(a: &str, b: &str) -> Option<bool> {
    let (pa, pb) = (ids::parse(a), ids::parse(b));
    let (x, y) = (pa.seq?, pb.seq?);
    if pa.format != pb.format || pa.prefix != pb.prefix || y <= x {
        return None;
    }
    match pa.format {
        IdFormat::Integer => (y == x + 1).then_some(true),
        f if f.dense_by_format() => Some(y == x + 1),
        _ => None,
    }
}

/// A pause between two events of a resumed connection, in microseconds, that ends its replay:
/// the events after it are live.
const HANDOVER_PAUSE_US: i64 = 200_000;

/// An application sequence: progress per token, or a `--app-seq` pointer (by its index), one
/// counter whichever messages carry it (docs/resumption.md, "Synthesized continuations": a
/// server's message counter goes on across methods).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum SeqKey {
    Progress(Short),
    App(usize),
}

impl SeqKey {
    fn label(&self, app_seq: &[String]) -> String {
        match self {
            SeqKey::Progress(t) => format!("progress (progressToken {t})"),
            SeqKey::App(i) => app_seq.get(*i).cloned().unwrap_or_else(|| "?".into()),
        }
    }
}

/// One application sequence up to the cursor: its key, and its values with the events that
/// carried them, in order.
type Series<'a> = (SeqKey, Vec<(f64, EventRec<'a>)>);

/// The application sequences of the events `upto`, in order of their first value.
fn series<'a>(upto: &[Ev<'a>]) -> Vec<Series<'a>> {
    series_of(upto.iter().map(|(_, _, ev)| *ev))
}

/// The application sequences of `events`, in order of their first value (a stream may carry
/// thousands of progress tokens: each value finds its sequence by its key).
fn series_of<'a>(events: impl IntoIterator<Item = EventRec<'a>>) -> Vec<Series<'a>> {
    let mut out: Vec<Series<'a>> = Vec::new();
    let mut index: HashMap<SeqKey, usize> = HashMap::default();
    for ev in events {
        for (key, v) in seq_values(&ev) {
            match index.get(&key) {
                Some(&i) => out[i].1.push((v, ev)),
                None => {
                    index.insert(key.clone(), out.len());
                    out.push((key, vec![(v, ev)]));
                }
            }
        }
    }
    out
}

/// The step of a regular counter: every step the same and positive, with at least two steps or
/// a single step of 1 (a counter that goes on by one); `None` for any other series.
fn regular_step(vals: &[(f64, EventRec)]) -> Option<f64> {
    let first = vals.get(1)?.0 - vals[0].0;
    let even = first > 0.0
        && vals
            .windows(2)
            .all(|w| ((w[1].0 - w[0].0) - first).abs() < 1e-9);
    (even && (vals.len() >= 3 || first == 1.0)).then_some(first)
}

/// Every application sequence value an event carries.
fn seq_values(ev: &EventRec) -> Vec<(SeqKey, f64)> {
    let mut out = Vec::new();
    for m in ev.messages.iter() {
        push_seq_values(&m, &mut out);
    }
    out
}

/// Append every application sequence value message `m` carries to `out`.
fn push_seq_values(m: &crate::jsonrpc::Message, out: &mut Vec<(SeqKey, f64)>) {
    if let (Some(t), Some(p)) = (&m.progress_token, m.progress) {
        out.push((SeqKey::Progress(t.clone()), p));
    }
    out.extend(m.app_seq().iter().map(|&(i, v)| (SeqKey::App(i), v)));
}

/// Whether the stream's request got its response on the events up to the cursor.
fn answered_before(exchanges: &[Exchange], origin: usize, upto: &[Ev]) -> bool {
    let reqs = super::streams::request_ids(&exchanges[origin]);
    if reqs.is_empty() {
        return false;
    }
    let answered: HashSet<&str> = upto
        .iter()
        .flat_map(|(_, _, ev)| ev.messages.refs())
        .filter(|m| matches!(m.kind, Kind::Response | Kind::Error))
        .filter_map(|m| m.id)
        .collect();
    reqs.iter().all(|r| answered.contains(r))
}

/// How long after a redirect the client's request that follows it may come, µs.
const FOLLOW_US: i64 = 60_000_000;

/// How much of a stream's history its resumptions have read ([`HISTORY_BUDGET`]).
#[derive(Debug, Default)]
pub(super) struct History {
    /// Events and connections read, summed over the stream's resumptions.
    pub read: u64,
    /// Resumptions checked against only the last [`HISTORY_WINDOW`] events.
    pub windowed: u64,
    /// The exchange of the first of those.
    pub first_windowed: Option<usize>,
    /// When the stream's own request was not captured: the request its events answer, with
    /// its progress token ([`sole_request`]), read once.
    sole_request: Option<Option<(String, String)>>,
    /// For each connection of the stream, the next one with the same `Last-Event-ID` that is
    /// not an empty answer over at once, past only such answers ([`History::served_next`]).
    served_next: Option<Vec<Option<usize>>>,
}

impl History {
    /// For each connection (by position) of `conns`, a stream's connections in request order:
    /// the first later connection, after a run of connections resumed from the same cursor,
    /// that is not an empty answer over at once ([`empty_answer`]), when the run leads to one.
    /// Read once per stream, from the last connection back: a client looping on one cursor
    /// resumes thousands of times.
    fn served_next(&mut self, conns: &[usize], exchanges: &[Exchange]) -> &[Option<usize>] {
        self.served_next.get_or_insert_with(|| {
            let mut next = vec![None; conns.len()];
            for k in (0..conns.len().saturating_sub(1)).rev() {
                let (x, y) = (conns[k], conns[k + 1]);
                let cursor = exchanges[x].resume_cursor();
                if cursor.is_some() && exchanges[y].resume_cursor() == cursor {
                    next[k] = if empty_answer(&exchanges[y]) {
                        next[k + 1]
                    } else {
                        Some(y)
                    };
                }
            }
            next
        })
    }
}

/// What a session's resumptions with a cursor no captured stream delivered ask of it, read
/// once per session: a client looping on an unknown `Last-Event-ID` in a session with many
/// events would otherwise read all of them once per resumption.
#[derive(Debug, Default)]
pub(super) struct SessionCursors {
    /// The session's first exchange (in time order) whose SSE response lost bytes.
    first_lost: Option<usize>,
    /// For each stream part of the session's event ids (by format, then prefix:
    /// [`ids::parse`]), the time (microseconds since the Unix epoch) of the first exchange
    /// that delivered one.
    streams: HashMap<IdFormat, HashMap<String, i64>>,
}

impl SessionCursors {
    /// Read session `session`'s exchanges (in time order, as the model keeps them).
    fn build(model: &Model, exchanges: &[Exchange], session: usize) -> Self {
        let mut out = SessionCursors::default();
        for &x in &model.sessions[session].exchanges {
            let g = &exchanges[x];
            if out.first_lost.is_none() && g.resp_gap && g.is_sse {
                out.first_lost = Some(x);
            }
            let mut last: Option<&str> = None;
            for id in g.events.iter().filter_map(|ev| ev.sse.id) {
                if last == Some(id) {
                    continue;
                }
                last = Some(id);
                let p = ids::parse(id);
                if p.prefix.is_empty() {
                    continue;
                }
                // (The first exchange to deliver one is the earliest: they are in time order.)
                let parts = out.streams.entry(p.format).or_default();
                if !parts.contains_key(p.prefix) {
                    parts.insert(p.prefix.to_string(), g.ts());
                }
            }
        }
        out
    }

    /// Whether an exchange of the session that began before `before` delivered an event id of
    /// the stream `cursor` names (by its stream part; never for a format without one).
    fn stream_seen(&self, cursor: &str, before: i64) -> bool {
        let c = ids::parse(cursor);
        !c.prefix.is_empty()
            && self
                .streams
                .get(&c.format)
                .and_then(|parts| parts.get(c.prefix))
                .is_some_and(|&t| t < before)
    }
}

/// Events (and connections) of a stream's history its resumptions read in full (per stream,
/// summed over them) before each reads only the last [`HISTORY_WINDOW`].
pub(super) const HISTORY_BUDGET: u64 = 1 << 21;
/// Events of the history a resumption reads once the stream's budget is spent.
pub(super) const HISTORY_WINDOW: usize = 256;

/// The (connection, event index) positions of a stream's history before a resumption: every
/// event of the `earlier` connections (`len(c)` events in connection `c`), in order; with a
/// `window`, only the last `window` of them, walking back over at most `window` connections.
fn history_positions(
    earlier: &[usize],
    len: impl Fn(usize) -> usize,
    window: Option<usize>,
) -> Vec<(usize, usize)> {
    match window {
        None => earlier
            .iter()
            .flat_map(|&c| (0..len(c)).map(move |i| (c, i)))
            .collect(),
        Some(w) => {
            let mut v: Vec<(usize, usize)> = earlier
                .iter()
                .rev()
                .take(w)
                .flat_map(|&c| (0..len(c)).rev().map(move |i| (c, i)))
                .take(w)
                .collect();
            v.reverse();
            v
        }
    }
}

/// Whether some regular application counter of the stream (progress per token, or an
/// `--app-seq` field: at least two equal steps, or one step of 1) has its first value after the
/// cut exactly one step past its last value up to the cursor — a counter that every message
/// event up to the cursor, and the first one after it, carried: then an event lost in the skip
/// would have shown as a skip of the counter too. (A progress that had reached its total says
/// nothing of the events between it and the result: log notifications carry no sequence.)
fn app_counter_continues(series: &[Series], upto: &[Ev], after: &[EventRec]) -> bool {
    series.iter().any(|(key, vals)| {
        let (Some(&(last, _)), Some(step)) = (vals.last(), regular_step(vals)) else {
            return false;
        };
        let carries = |ev: &EventRec| seq_values(ev).iter().any(|(k, _)| k == key);
        let every_before = upto
            .iter()
            .filter(|(_, _, ev)| !ev.messages.is_empty())
            .all(|(_, _, ev)| carries(ev));
        let first_after = after.iter().find(|ev| !ev.messages.is_empty());
        if !every_before || !first_after.is_some_and(carries) {
            return false;
        }
        let next = after
            .iter()
            .flat_map(|ev| seq_values(ev))
            .find(|(k, _)| k == key)
            .map(|(_, v)| v);
        next.is_some_and(|n| (n - (last + step)).abs() < 1e-9)
    })
}

/// The sequence numbers of the stream's own ids up to the cursor (priming events included) step
/// by exactly one, at least twice (one step could be a shared counter that another stream did
/// not happen to take from).
fn stream_dense(upto: &[Ev]) -> bool {
    let seqs: Vec<u128> = upto
        .iter()
        .filter(|(_, _, ev)| ev.sse.has_own_id)
        .filter_map(|(_, _, ev)| ev.sse.id)
        .filter_map(|i| ids::parse(i).seq)
        .collect();
    seqs.len() >= 3 && seqs.windows(2).all(|w| w[1] == w[0] + 1)
}

/// The plain-integer event ids of every stream of the capture, sorted: (id, time µs, stream).
/// Built on first use: only a resumption that skips integer ids needs it.
#[derive(Debug, Default)]
pub(super) struct IntIds(std::cell::OnceCell<Vec<(u128, i64, usize)>>);

impl IntIds {
    fn all(&self, model: &Model, exchanges: &[Exchange]) -> &[(u128, i64, usize)] {
        self.0.get_or_init(|| {
            let mut v = Vec::new();
            for (sti, st) in model.streams.iter().enumerate() {
                for &xi in &st.connections {
                    for ev in exchanges[xi].events.iter() {
                        if !ev.sse.has_own_id || ev.sse.truncated {
                            continue;
                        }
                        let p = ev.sse.id.map(ids::parse);
                        if let Some(n) = p
                            .filter(|p| p.format == IdFormat::Integer)
                            .and_then(|p| p.seq)
                        {
                            v.push((n, ev.sse.ts, sti));
                        }
                    }
                }
            }
            v.sort_unstable();
            v
        })
    }

    /// Whether a stream other than `stream` carried an id strictly between `ids.0` and `ids.1`,
    /// delivered within the time window `during` (µs, inclusive).
    fn elsewhere(
        &self,
        model: &Model,
        exchanges: &[Exchange],
        stream: usize,
        ids: (u128, u128),
        during: (i64, i64),
    ) -> bool {
        let all = self.all(model, exchanges);
        let start = all.partition_point(|e| e.0 <= ids.0);
        all[start..]
            .iter()
            .take_while(|e| e.0 < ids.1)
            .any(|&(_, ts, st)| st != stream && during.0 <= ts && ts <= during.1)
    }
}

/// The one request a stream's events answer and the one progress token they carry, as
/// (JSON-RPC id, progress token), both as compact JSON text; `None` unless the events hold
/// exactly one response or error id, as their last message (a server closes a POST's stream
/// once it has answered, MCP 2025-11-25 "Sending Messages to the Server": a response before
/// other messages is a batch's, whose other answer the capture may not hold), and exactly one
/// `notifications/progress` token.
fn sole_request<'a>(events: impl IntoIterator<Item = EventRec<'a>>) -> Option<(String, String)> {
    let (mut id, mut token): (Option<&str>, Option<&str>) = (None, None);
    let mut answered_last = false;
    for ev in events {
        for m in ev.messages.refs() {
            answered_last = matches!(m.kind, Kind::Response | Kind::Error);
            let (slot, v) = if answered_last {
                (&mut id, m.id)
            } else {
                (&mut token, m.progress_token)
            };
            match (v, *slot) {
                (None, _) => {}
                (Some(v), None) => *slot = Some(v),
                (Some(v), Some(s)) if v == s => {}
                _ => return None,
            }
        }
    }
    answered_last.then_some(())?;
    Some((id?.to_string(), token?.to_string()))
}

/// Client requests of a session: JSON-RPC id → progress token (the `_meta.progressToken`, else the id).
pub(super) fn requests_of_session(
    model: &Model,
    exchanges: &[Exchange],
    session: usize,
) -> HashMap<String, String> {
    let mut out = HashMap::default();
    for &xi in &model.sessions[session].exchanges {
        for m in exchanges[xi]
            .req_messages
            .iter()
            .filter(|m| m.kind == Kind::Request)
        {
            if let Some(id) = &m.id {
                out.insert(
                    id.to_string(),
                    m.request_progress_token()
                        .unwrap_or(id.as_str())
                        .to_string(),
                );
            }
        }
    }
    out
}

/// What the finding says of duplicates only the events read after L explain (`behind`): how
/// many the client had read there with ids of their own (its Last-Event-ID was behind what it
/// had) and without (its cursor rightly stayed at L, and the server replayed them), and the
/// first connection that delivered them. Empty when there are none.
fn after_l_text(
    read_after_l: &[&Ev],
    dup_ids: &[EventRec],
    dup_payload: &[EventRec],
    behind: impl Fn(&EventRec) -> bool,
    r: &Resumption,
    exchanges: &[Exchange],
) -> String {
    // The first event read after L of each id (with its data) and of each progress value.
    let mut by_id: HashMap<(&str, u64), &Ev> = HashMap::default();
    let mut by_progress: HashMap<(Short, u64), &Ev> = HashMap::default();
    for &ev in read_after_l {
        if let Some(id) = ev.2.sse.id.filter(|_| ev.2.sse.has_own_id) {
            by_id.entry((id, ev.2.data_hash)).or_insert(ev);
        }
        for m in ev.2.messages.iter() {
            if let (Some(t), Some(p)) = (m.progress_token, m.progress) {
                by_progress.entry((t, p.to_bits())).or_insert(ev);
            }
        }
    }
    // Each duplicate once (events of one body: each at its own offset), with the event it
    // repeats.
    let mut seen: HashSet<u64> = HashSet::default();
    let mut originals: Vec<&Ev> = Vec::new();
    for ev in dup_ids.iter().chain(dup_payload) {
        if !behind(ev) || !seen.insert(ev.sse.offset) {
            continue;
        }
        let by_its_id = ev
            .sse
            .id
            .filter(|_| ev.sse.has_own_id)
            .and_then(|id| by_id.get(&(id, ev.data_hash)));
        let by_its_progress = || {
            ev.messages.iter().find_map(|m| {
                let key = (m.progress_token?, m.progress?.to_bits());
                by_progress.get(&key)
            })
        };
        if let Some(&o) = by_its_id.or_else(by_its_progress) {
            originals.push(o);
        }
    }
    let Some(&&(x, _, first)) = originals.iter().min_by_key(|o| o.2.sse.frame_first) else {
        return String::new();
    };
    let own = originals.iter().filter(|o| o.2.sse.has_own_id).count();
    let mut parts = Vec::new();
    if own > 0 {
        parts.push(format!(
            "{own} it had already read after {} in events with ids of their own, so its Last-Event-ID was behind what it had (a client that resumes from an older cursor than its last event gets those events again)",
            r.last_event_id
        ));
    }
    if originals.len() > own {
        parts.push(format!(
            "{} it had read after {} in events without an id of their own (its cursor rightly stayed at {}), and the server replayed them",
            originals.len() - own,
            r.last_event_id,
            r.last_event_id
        ));
    }
    format!(
        " Of these, {}: on flow {} (from frame {}), a connection read to its end ({}).",
        parts.join("; and "),
        flow_id(&exchanges[x]),
        first.sse.frame_first,
        match (exchanges[x].resp_complete, exchanges[x].resp_read) {
            (true, _) => "its response complete",
            (false, Some(crate::http::ReadEnd::Reset)) => {
                "the server reset it after the client had acknowledged every byte"
            }
            _ => "the server closed it with a FIN, and the client answered with its own",
        }
    )
}

#[cfg(test)]
mod tests {
    use super::{history_positions, sole_request};
    use crate::http::EventLog;
    use crate::sse::SseEvent;

    /// A log of one event per JSON text.
    fn log_of(data: &[&str]) -> EventLog {
        let mut log = EventLog::default();
        for d in data {
            let msgs = crate::jsonrpc::parse(d.as_bytes(), &[]).unwrap();
            log.push(&SseEvent::default(), 0, false, &msgs, None);
        }
        log
    }

    const P1: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t1","progress":1}}"#;
    const P2: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t2","progress":1}}"#;
    const R7: &str = r#"{"jsonrpc":"2.0","id":7,"result":{}}"#;
    const R8: &str = r#"{"jsonrpc":"2.0","id":8,"result":{}}"#;
    const LOG: &str = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#;

    #[test]
    fn sole_request_of_a_stream() {
        let one = log_of(&[P1, LOG, P1, R7]);
        assert_eq!(
            sole_request(one.iter()),
            Some(("7".into(), "\"t1\"".into()))
        );
        // Two tokens, two answered requests, no answer, no progress, an answer before other
        // messages (a batch's): no request is read off.
        for data in [
            &[P1, P2, R7][..],
            &[P1, R7, R8],
            &[P1, P1],
            &[LOG, R7],
            &[P1, R7, P1],
        ] {
            let log = log_of(data);
            assert_eq!(sole_request(log.iter()), None);
        }
    }

    #[test]
    fn history_whole_or_last_window() {
        // Connections 10, 11, 12 with 3, 0 and 2 events.
        let len = |c: usize| match c {
            10 => 3,
            12 => 2,
            _ => 0,
        };
        let all = history_positions(&[10, 11, 12], len, None);
        assert_eq!(all, [(10, 0), (10, 1), (10, 2), (12, 0), (12, 1)]);
        assert_eq!(
            history_positions(&[10, 11, 12], len, Some(3)),
            [(10, 2), (12, 0), (12, 1)]
        );
        assert_eq!(history_positions(&[10, 11, 12], len, Some(1)), [(12, 1)]);
        assert_eq!(history_positions(&[10, 11, 12], len, Some(99)), all);
        // At most `window` connections are walked, however empty.
        assert_eq!(history_positions(&[10, 11, 11, 11], len, Some(2)), []);
        assert!(history_positions(&[], len, None).is_empty());
    }
}
