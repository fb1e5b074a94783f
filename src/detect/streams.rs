//! Checks over the physical connections of each logical stream:
//! `duplicate_event_id`, `id_gap` inside a connection, `concurrent_stream_connections`,
//! `planned_poll` and `idle_cut`
//! (`docs/wire.md`, "Known failure patterns" and "Priming, retry and polling").

use crate::hash::{FastMap as HashMap, FastSet as HashSet};

use super::{flow_id, Finding, Severity};
use crate::http::{EventRec, Exchange};
use crate::jsonrpc::Kind;
use crate::mcp::{Era, Model, StreamKind};

/// JSON-RPC request ids a POST sent (the requests its response stream must answer).
pub(super) fn request_ids(e: &Exchange) -> HashSet<&str> {
    e.req_messages
        .iter()
        .filter(|m| m.kind == Kind::Request)
        .filter_map(|m| m.id.as_deref())
        .collect()
}

/// The id of the first JSON-RPC request a POST sent (compact JSON), for `request_id` columns.
pub(super) fn first_request_id(e: &Exchange) -> Option<String> {
    e.req_messages
        .iter()
        .find(|m| m.kind == Kind::Request)
        .and_then(|m| m.id.as_deref().map(str::to_string))
}

/// For each logical stream, the position in its `connections` of the connection by whose end all
/// its requests were answered; `None` when never (a standalone GET stream always owes more).
/// `responses`: what each exchange delivered ([`super::session::responses`]).
pub(super) fn answered_at(
    model: &Model,
    exchanges: &[Exchange],
    responses: &super::session::Responses<'_>,
) -> Vec<Option<usize>> {
    model
        .streams
        .iter()
        .map(|stream| {
            if stream.kind != StreamKind::Post {
                return None;
            }
            let reqs = request_ids(&exchanges[stream.origin]);
            if reqs.is_empty() {
                return Some(0);
            }
            let mut answered: HashSet<&str> = HashSet::default();
            for (k, &xi) in stream.connections.iter().enumerate() {
                answered.extend(responses[xi].iter().map(|&(id, _, _)| id));
                if reqs.iter().all(|r| answered.contains(r)) {
                    return Some(k);
                }
            }
            None
        })
        .collect()
}

/// Whether stream `st` still owed something when its connection at position `k` ended.
pub(super) fn pending(answered: &[Option<usize>], st: usize, k: usize) -> bool {
    answered.get(st).copied().flatten().is_none_or(|a| k < a)
}

/// The JSON-RPC request id a POST stream answers (compact JSON), for the `request_id` column.
pub(super) fn stream_request_id(
    model: &Model,
    exchanges: &[Exchange],
    st: usize,
) -> Option<String> {
    let stream = &model.streams[st];
    if stream.kind != StreamKind::Post {
        return None;
    }
    first_request_id(&exchanges[stream.origin])
}

/// How long, in µs, an empty answer lasts at most: rmcp closes it at once.
const EMPTY_ANSWER_US: i64 = 1_000_000;

/// A `200 text/event-stream` answer over at once with nothing in it: a zero-length body that ended
/// within a second (rust-sdk #958) — not a poll the server held open.
pub(super) fn empty_answer(e: &Exchange) -> bool {
    e.is_sse
        && e.status() == 200
        && !e.open_at_capture_end
        && e.resp_body_len == 0
        && e.ts_end
            .zip(e.ts_response)
            .is_some_and(|(end, start)| end.saturating_sub(start) < EMPTY_ANSWER_US)
}

/// `duplicate_event_id` (error): one connection delivered two events with the same `id` and the
/// same data — one message handed to the client twice under one cursor (typescript-sdk PR #2335
/// review: an event store written twice by a race between `storeEvent` and a concurrent resume).
/// Duplicates across connections of a stream are judged by the resumption checks.
pub(super) fn duplicate_event_ids(model: &Model, exchanges: &[Exchange], out: &mut Vec<Finding>) {
    for (sti, st) in model.streams.iter().enumerate() {
        for &xi in &st.connections {
            let e = &exchanges[xi];
            // Events by index: only their fixed fields and ids are read, the rest of the two
            // events of a duplicate when there is one.
            let mut seen: HashMap<(&str, u64), usize> =
                HashMap::with_capacity_and_hasher(e.events.len(), Default::default());
            let mut dups: Vec<(usize, usize)> = Vec::new();
            for (ei, ev) in e
                .events
                .briefs()
                .filter(|(_, ev)| ev.carries_data() && ev.has_own_id)
            {
                let Some(id) = e.events.id_of(ei) else {
                    continue;
                };
                match seen.get(&(id, ev.data_hash)) {
                    Some(&first) => dups.push((first, ei)),
                    None => {
                        seen.insert((id, ev.data_hash), ei);
                    }
                }
            }
            let Some((first, again)) = dups
                .first()
                .and_then(|&(a, b)| Some((e.events.get(a)?, e.events.get(b)?)))
            else {
                continue;
            };
            let id = again.sse.id.unwrap_or("");
            let mut f = Finding::at_exchange(
                model.sessions[st.session].label(),
                "duplicate_event_id",
                Severity::Error,
                e,
                format!(
                    "The connection (flow {}, response in frame {}) delivered event id {id} twice with the same data, in frames {} and {}{}: the client handled one message twice under one cursor.",
                    flow_id(e),
                    e.frame_response.unwrap_or(0),
                    first.sse.frame_first,
                    again.sse.frame_first,
                    if dups.len() > 1 { format!(", and {} more event(s) likewise", dups.len() - 1) } else { String::new() }
                ),
            )
            .at_event(&again);
            f.request_id = stream_request_id(model, exchanges, sti);
            f.expected = Some("each event id once per stream".into());
            f.observed = Some(format!("{} repeated event(s)", dups.len()));
            out.push(f);
        }
    }
}

/// `id_gap` inside one connection: event ids of a format with a dense per-stream ordinal (Go
/// `<stream>_<n>`, rmcp `<n>/<request>`, C# `…:<n>`) whose ordinal skips forward past the
/// highest one the connection delivered for that stream part, when the ordinals skipped never
/// come later on the connection (a reordered event is not lost). Such a gap is real loss: the
/// server numbered events it never sent (`docs/wire.md`, "Event-id formats"). Guarded, because
/// other stores write ids of the same shapes (a `tenant:jobs:<ms>` key): the stream part must
/// first have stepped by exactly one on the connection. Not judged: connections with bytes missing
/// from the capture (an event lost there is the capture's, not the server's: `sse.gap`); events
/// before the connection's first message event of the stream part (priming events, rmcp's `0`
/// among them, only raise the highest ordinal); and, on a resumed connection, the step from the
/// cursor to its first message event, which the resumption judges. Plain integers may come from
/// a counter shared across streams and sessions, and the other formats show no density. One
/// finding per connection, at its first skip. Returns the exchanges that got one, for the
/// verdicts of their resumptions.
pub(super) fn dense_id_gaps(
    model: &Model,
    exchanges: &[Exchange],
    out: &mut Vec<Finding>,
) -> HashSet<usize> {
    use crate::mcp::ids::{self, IdFormat};
    /// One stream part on a connection.
    struct Part<'a> {
        /// Highest ordinal delivered, and its id (the cursor's, on a resumed connection, until
        /// an event passes it).
        max: u128,
        max_id: &'a str,
        max_is_cursor: bool,
        /// The previous ordinal, for steps of one (replays below `max` step too).
        prev: u128,
        steps: u32,
        /// A message event of the part came (what comes before it is priming, or the
        /// resumption's to judge).
        started: bool,
        /// On a resumed connection, the cursor's ordinal: a message event re-sending it (an
        /// inclusive replay) does not start the part, as the resumption passes over it too.
        cursor: Option<u128>,
        /// Every ordinal delivered, for the skipped ones that come later.
        seen: HashSet<u128>,
    }
    /// A skip: its stream part, the highest ordinal before it and its id (the cursor's or an
    /// event's), the event that skipped, and how many ordinals it passed.
    #[derive(Clone, Copy)]
    struct Skip<'a> {
        key: (IdFormat, &'a str),
        max: u128,
        max_id: &'a str,
        from_cursor: bool,
        at: usize,
        missing: u128,
    }
    let mut gapped = HashSet::default();
    for (sti, st) in model.streams.iter().enumerate() {
        for &xi in &st.connections {
            let e = &exchanges[xi];
            if e.resp_gap || e.req_gap {
                continue;
            }
            let own = || {
                e.events
                    .briefs()
                    .filter(|(_, b)| b.has_own_id && !b.truncated)
            };
            // Only a connection whose first id past its priming has a dense format is walked.
            let dense_first = own()
                .find(|(_, b)| !b.priming)
                .and_then(|(i, _)| e.events.id_of(i))
                .is_some_and(|id| ids::parse(id).format.dense_by_format());
            if !dense_first {
                continue;
            }
            let mut parts: HashMap<(IdFormat, &str), Part> = HashMap::default();
            // The resumption's cursor: its stream part starts there.
            if let Some(cursor) = e.resume_cursor() {
                let p = ids::parse(cursor);
                if let Some(n) = p.seq.filter(|_| p.format.dense_by_format()) {
                    parts.insert(
                        (p.format, p.prefix),
                        Part {
                            max: n,
                            max_id: cursor,
                            max_is_cursor: true,
                            prev: n,
                            steps: 0,
                            started: false,
                            cursor: Some(n),
                            seen: HashSet::default(),
                        },
                    );
                }
            }
            let mut gaps: Vec<Skip> = Vec::new();
            for (i, b) in own() {
                let Some(id) = e.events.id_of(i) else {
                    continue;
                };
                let p = ids::parse(id);
                let Some(n) = p.seq.filter(|_| p.format.dense_by_format()) else {
                    continue;
                };
                let key = (p.format, p.prefix);
                let Some(part) = parts.get_mut(&key) else {
                    parts.insert(
                        key,
                        Part {
                            max: n,
                            max_id: id,
                            max_is_cursor: false,
                            prev: n,
                            steps: 0,
                            started: !b.priming,
                            cursor: None,
                            seen: [n].into_iter().collect(),
                        },
                    );
                    continue;
                };
                part.seen.insert(n);
                // A priming event before the part's first message event is a cursor: the next
                // ordinal (C# primes a resumed connection with it) steps on; one further ahead
                // of the replay that follows only counts as delivered.
                if b.priming && !part.started && n != part.prev + 1 {
                    continue;
                }
                if part.started && n > part.max + 1 && part.steps >= 1 {
                    gaps.push(Skip {
                        key,
                        max: part.max,
                        max_id: part.max_id,
                        from_cursor: part.max_is_cursor,
                        at: i,
                        missing: n - part.max - 1,
                    });
                }
                if n == part.prev + 1 {
                    part.steps += 1;
                }
                part.started |= !b.priming && part.cursor != Some(n);
                part.prev = n;
                if n > part.max {
                    (part.max, part.max_id, part.max_is_cursor) = (n, id, false);
                }
            }
            // A skipped ordinal that came later on the connection was reordered, not lost. Per
            // skip: how many of its ordinals never came on the connection, and the first of them
            // (past 1024 ordinals, all of them are taken as lost).
            let never = |g: &Skip| {
                let part = parts.get(&g.key);
                if g.missing > 1024 {
                    return (g.missing, g.max + 1);
                }
                let absent: Vec<u128> = (1..=g.missing)
                    .map(|k| g.max + k)
                    .filter(|o| !part.is_some_and(|q| q.seen.contains(o)))
                    .collect();
                (
                    absent.len() as u128,
                    absent.first().copied().unwrap_or(g.max + 1),
                )
            };
            let real: Vec<(Skip, (u128, u128))> = gaps
                .iter()
                .map(|g| (*g, never(g)))
                .filter(|&(_, (n, _))| n > 0)
                .collect();
            let Some(&(g, (missing, first_missing))) = real.first() else {
                continue;
            };
            let (max_id, from_cursor, at) = (g.max_id, g.from_cursor, g.at);
            let Some(after) = e.events.get(at) else {
                continue;
            };
            let to = after.sse.id.unwrap_or("");
            let mut f = Finding::at_exchange(
                model.sessions[st.session].label(),
                "id_gap",
                Severity::Error,
                e,
                format!(
                    "The connection (flow {}, response in frame {}) went from {} {max_id} to event id {to} (frame {}) on a stream part whose ordinals had stepped by one: {missing} event(s) numbered in between were never delivered{}.",
                    flow_id(e),
                    e.frame_response.unwrap_or(0),
                    if from_cursor { "the resumption's cursor" } else { "event id" },
                    after.sse.frame_first,
                    if real.len() > 1 { format!(", and the ids skip {} more time(s) on this connection", real.len() - 1) } else { String::new() }
                ),
            )
            .at_event(&after);
            f.last_event_id = Some(max_id.to_string());
            f.request_id = stream_request_id(model, exchanges, sti);
            f.expected = Some(first_missing.to_string());
            f.observed = Some(to.to_string());
            out.push(f);
            gapped.insert(xi);
        }
    }
    gapped
}

/// End of a connection for overlap tests: its last byte or close, or never when the capture
/// ended with it open.
fn conn_end(e: &Exchange) -> i64 {
    if e.open_at_capture_end {
        i64::MAX
    } else {
        e.ts_end.unwrap_or(e.ts())
    }
}

/// How long a connection must have been silent before a resumption for the resumption to be
/// taken as the client giving up on it, in microseconds.
const STALLED_US: i64 = 1_000_000;

/// Whether `b` is a resumption (`Last-Event-ID`) that replaced `a`: `a` had been silent for
/// [`STALLED_US`] when `b` was sent, carried nothing after, and was closed before the capture
/// ended — a stalled connection the client gave up on and whose end came late (a timeout, a
/// half-dead socket), not two live ones. A connection live until the resumption stays
/// concurrent, however it ended later (punkpeye/fastmcp PR #331: the first connection stops
/// receiving bytes).
fn replaced(a: &Exchange, b: &Exchange) -> bool {
    let last_byte = a.ts_last_byte.or(a.ts_response).unwrap_or(a.ts());
    b.resume_cursor().is_some()
        && !a.open_at_capture_end
        && last_byte.saturating_add(STALLED_US) <= b.ts()
}

/// `concurrent_stream_connections` (warning): two connections of one logical stream — or two
/// standalone GET streams of one session, which the SDKs keep to one (409) — both answered `200`
/// and live at the same time (punkpeye/fastmcp PR #331: a replayed stream silently replaces a
/// live one; rmcp's silent "shadow" GET, rust-sdk
/// `crates/rmcp/src/transport/streamable_http_server/session/local.rs`). Messages go to one of
/// them; the other starves without being closed.
pub(super) fn concurrent_connections(
    model: &Model,
    exchanges: &[Exchange],
    out: &mut Vec<Finding>,
) {
    // Groups of connections that must not overlap: each logical stream, and per session all
    // standalone GET streams together.
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut standalone: HashMap<usize, Vec<usize>> = HashMap::default();
    for st in &model.streams {
        let s = &model.sessions[st.session];
        if s.id.is_none() || !s.era.stateful() {
            continue;
        }
        if st.kind == StreamKind::Get {
            standalone
                .entry(st.session)
                .or_default()
                .extend(st.connections.iter().copied());
        } else {
            groups.push((st.session, st.connections.clone()));
        }
    }
    let mut sessions: Vec<_> = standalone.into_iter().collect();
    sessions.sort_unstable();
    groups.extend(sessions);
    for (session, mut conns) in groups {
        conns.sort_by_key(|&x| (exchanges[x].ts_response.unwrap_or(i64::MAX), x));
        // The connection with the latest end so far: if any earlier one overlaps the next, it does.
        let mut live: Option<usize> = None;
        let mut first: Option<(usize, usize)> = None;
        let mut overlaps = 0usize;
        for &bx in &conns {
            let b = &exchanges[bx];
            let start = b.ts_response.unwrap_or(i64::MAX);
            if let Some(ax) = live {
                let a = &exchanges[ax];
                if conn_end(a) > start && !replaced(a, b) {
                    overlaps += 1;
                    first.get_or_insert((ax, bx));
                }
            }
            if live.is_none_or(|ax| conn_end(b) >= conn_end(&exchanges[ax])) {
                live = Some(bx);
            }
        }
        if let Some((ax, bx)) = first {
            let mut f = concurrent_finding(model, session, &exchanges[ax], &exchanges[bx]);
            if overlaps > 1 {
                f.detail.push_str(&format!(
                    " ({overlaps} connections of this stream opened while another was live.)"
                ));
            }
            out.push(f);
        }
    }
}

fn concurrent_finding(model: &Model, session: usize, a: &Exchange, b: &Exchange) -> Finding {
    let ended = if a.open_at_capture_end {
        "was still open when the capture ended".to_string()
    } else {
        format!("ended only at frame {}", a.frame_last.unwrap_or(0))
    };
    let mut f = Finding::at_exchange(
        model.sessions[session].label(),
        "concurrent_stream_connections",
        Severity::Warning,
        b,
        format!(
            "Two connections served one logical stream at once: the {} on flow {} (answered in frame {}) {}, while the {} on flow {} was answered 200 in frame {}; messages go to one of them and the other starves.",
            describe(a),
            flow_id(a),
            a.frame_response.unwrap_or(0),
            ended,
            describe(b),
            flow_id(b),
            b.frame_response.unwrap_or(0)
        ),
    );
    f.ts = b.ts_response.unwrap_or(f.ts);
    f.frame = b.frame_response.unwrap_or(f.frame);
    f.expected = Some("one live connection per stream".into());
    f.observed = Some(format!("{} and {} live together", flow_id(a), flow_id(b)));
    f
}

fn describe(e: &Exchange) -> String {
    match (e.method(), e.resume_cursor()) {
        ("GET", Some(l)) => format!("resumption GET (Last-Event-ID {l})"),
        ("GET", None) => "standalone GET".into(),
        (m, _) => format!("{m} response stream"),
    }
}

/// Whether MCP 2025-11-25 polling can exist in a session of this revision (not before it, and not
/// without sessions, 2026-07-28; an unknown revision may poll).
pub(super) fn polling_era(era: Era) -> bool {
    era.stateful() && (era == Era::Unknown || era >= Era::V2025_11_25)
}

/// The `retry` (ms, at most an hour) in force after event `ev`, given the one before: SSE clients
/// keep the last one announced; Go's `event: close` without one counts as 0.
pub(super) fn retry_after(in_force: Option<u64>, ev: &EventRec) -> Option<u64> {
    match ev.sse.retry {
        Some(r) => Some(r.min(3_600_000)),
        None if ev.sse.event_type == Some("close") && in_force.is_none() => Some(0),
        None => in_force,
    }
}

/// When the server ended connection `a` as a planned poll does and the client's next connection
/// `b` of the stream came back in time: the delay in µs from `a`'s end to `b`.
///
/// `a` must have ended cleanly (its body closed as framed, before the capture's end), not as an
/// empty answer closed at once, and `b` must follow within three times `retry_ms` plus a second
/// ("about retry ms later": clients add backoff and jitter). Whether `b` presented the stream's
/// cursor, and whether the stream still owed its response, is for the caller.
pub(super) fn planned_close(a: &Exchange, b: &Exchange, retry_ms: u64) -> Option<i64> {
    if !a.resp_complete || a.open_at_capture_end || empty_answer(a) {
        return None;
    }
    let end = a.ts_end.unwrap_or(a.ts());
    let delay = b.ts().saturating_sub(end);
    let budget = 3 * retry_ms as i64 * 1000 + 1_000_000;
    (0..=budget).contains(&delay).then_some(delay)
}

/// `planned_poll` (info): the server ended a connection cleanly (the body closed as framed, not
/// cut) with a `retry` in force (announced on it or earlier on the stream) and before the
/// stream's response, and the client came back within three times `retry` plus a second with a
/// GET whose `Last-Event-ID` is the stream's cursor — MCP 2025-11-25 "Resumability and
/// Redelivery" polling (SEP-1699), not a failure.
pub(super) fn planned_polls(
    model: &Model,
    exchanges: &[Exchange],
    answered: &[Option<usize>],
    out: &mut Vec<Finding>,
) {
    for (si, st) in model.streams.iter().enumerate() {
        // Polling exists from 2025-11-25 on (and not at all without sessions, 2026-07-28); earlier
        // a clean close before the response is no plan.
        if !polling_era(model.sessions[st.session].era) {
            continue;
        }
        // The stream's state as each connection ends: the `retry` in force (SSE clients keep the
        // last one; Go's `event: close` without one counts as 0) and the cursor (its last id).
        let mut in_force: Option<u64> = None;
        let mut last: Option<&str> = None;
        for (k, w) in st.connections.windows(2).enumerate() {
            let (a, b) = (&exchanges[w[0]], &exchanges[w[1]]);
            for ev in &a.events {
                in_force = retry_after(in_force, &ev);
                if !ev.sse.truncated && ev.sse.has_own_id {
                    last = ev.sse.id.or(last);
                }
            }
            let Some(retry) = in_force else {
                continue;
            };
            if !pending(answered, si, k) {
                continue;
            }
            let (Some(l), Some(cursor)) = (b.resume_cursor(), last) else {
                continue;
            };
            let Some(delay) = planned_close(a, b, retry).filter(|_| l == cursor) else {
                continue;
            };
            let end = a.ts_end.unwrap_or(a.ts());
            let mut f = Finding::at_exchange(
                model.sessions[st.session].label(),
                "planned_poll",
                Severity::Info,
                a,
                format!(
                    "The server closed the {} on flow {} cleanly in frame {} with retry {} ms in force, before the stream's response; the client polled back {} ms later with Last-Event-ID {} (frame {}, flow {}): planned polling, not a failure.",
                    describe(a),
                    flow_id(a),
                    a.frame_last.unwrap_or(0),
                    retry,
                    delay / 1000,
                    l,
                    b.frame(),
                    flow_id(b)
                ),
            );
            f.ts = end;
            f.frame = a.frame_last.unwrap_or(f.frame);
            f.last_event_id = Some(l.to_string());
            // The first event the poll delivered: the proof that the log went on.
            f.event_id = b
                .events
                .iter()
                .find(|ev| ev.sse.has_own_id && !ev.priming && !ev.sse.truncated)
                .and_then(|ev| ev.sse.id.map(str::to_string));
            f.request_id = stream_request_id(model, exchanges, si);
            f.expected = Some(format!(
                "a GET with Last-Event-ID {l} about {retry} ms later"
            ));
            f.observed = Some(format!("GET after {} ms", delay / 1000));
            out.push(f);
        }
    }
}

/// `idle_cut` (warning): three or more SSE connections of a session were cut — ended by a close,
/// reset or gap before their framing said so (a planned poll ends cleanly), while the stream still
/// owed messages and before the session's DELETE — at the same idle time (no byte for that long)
/// or at the same age, within 10 % or 0.3 s and at least 1 s: the idle or age timeout of a
/// proxy, CDN or client (cloudflare/agents #1583, mckinsey/agents-at-scale-ark #1941,
/// open-webui/mcpo #73). Messages produced while the client
/// reconnects may be lost.
pub(super) fn idle_cuts(
    model: &Model,
    exchanges: &[Exchange],
    answered: &[Option<usize>],
    out: &mut Vec<Finding>,
) {
    let mut by_session: Vec<Vec<usize>> = vec![Vec::new(); model.sessions.len()];
    for (sti, st) in model.streams.iter().enumerate() {
        by_session[st.session].push(sti);
    }
    for (si, s) in model.sessions.iter().enumerate() {
        if s.id.is_none() || !s.era.stateful() {
            continue;
        }
        let deleted_at = s
            .exchanges
            .iter()
            .map(|&x| &exchanges[x])
            .filter(|e| e.method() == "DELETE")
            .map(|e| e.ts())
            .min()
            .unwrap_or(i64::MAX);
        // (idle µs, age µs, exchange)
        let mut cuts: Vec<(i64, i64, usize)> = Vec::new();
        for &sti in &by_session[si] {
            for (k, &xi) in model.streams[sti].connections.iter().enumerate() {
                let e = &exchanges[xi];
                let (Some(end), Some(last), Some(start)) =
                    (e.ts_end, e.ts_last_byte, e.ts_response)
                else {
                    continue;
                };
                if e.open_at_capture_end
                    || e.resp_complete
                    || end >= deleted_at
                    || !pending(answered, sti, k)
                {
                    continue;
                }
                cuts.push((end.saturating_sub(last), end.saturating_sub(start), xi));
            }
        }
        if cuts.len() < MIN_CUTS {
            continue;
        }
        let idle = densest(cuts.iter().map(|c| c.0).collect());
        let age = densest(cuts.iter().map(|c| c.1).collect());
        // The pattern with more cuts; idle time first.
        let (basis, (value, tol)) = match (idle, age) {
            (Some(i), Some(a)) if a.2 > i.2 => ("age", (a.0, a.1)),
            (Some(i), _) => ("idle time", (i.0, i.1)),
            (None, Some(a)) => ("age", (a.0, a.1)),
            (None, None) => continue,
        };
        let pick = |c: &(i64, i64, usize)| if basis == "age" { c.1 } else { c.0 };
        let mut same: Vec<&(i64, i64, usize)> = cuts
            .iter()
            .filter(|c| pick(c).saturating_sub(value).saturating_abs() <= tol)
            .collect();
        same.sort_by_key(|c| (exchanges[c.2].ts(), c.2));
        let Some(&&(_, _, first)) = same.first() else {
            continue;
        };
        let first = &exchanges[first];
        let frames: Vec<String> = same
            .iter()
            .take(6)
            .map(|c| exchanges[c.2].frame_last.unwrap_or(0).to_string())
            .collect();
        let secs = |us: i64| format!("{:.1}", us as f64 / 1e6);
        let ages: Vec<i64> = same.iter().map(|c| c.1).collect();
        let idles: Vec<i64> = same.iter().map(|c| c.0).collect();
        let range = |v: &[i64]| {
            format!(
                "{}–{} s",
                secs(*v.iter().min().unwrap_or(&0)),
                secs(*v.iter().max().unwrap_or(&0))
            )
        };
        let mut f = Finding::at_exchange(
            s.label(),
            "idle_cut",
            Severity::Warning,
            first,
            format!(
                "{} SSE connections of the session were cut before their end, each at the same {basis} of about {} s (idle {}, age {}; cuts in frames {}{}): a timeout between client and server ends these streams, and what the server sends while the client reconnects can be lost.",
                same.len(),
                secs(value),
                range(&idles),
                range(&ages),
                frames.join(", "),
                if same.len() > frames.len() { ", …" } else { "" }
            ),
        );
        f.ts = first.ts_end.unwrap_or(f.ts);
        f.frame = first.frame_last.unwrap_or(f.frame);
        f.expected =
            Some("streams kept open (keep-alive comments) or closed cleanly with retry".into());
        f.observed = Some(format!("{} cuts at {basis} {} s", same.len(), secs(value)));
        out.push(f);
    }
}

/// Smallest idle time or age, in µs, that `idle_cut` treats as a timeout.
const MIN_IDLE_US: i64 = 1_000_000;
/// How many cuts at one idle time or age make a pattern.
const MIN_CUTS: usize = 3;

/// The densest cluster of values: (centre, tolerance, size) — the value with the most others within
/// 10 % (at least 0.3 s) of it, when there are `MIN_CUTS` and it is at least `MIN_IDLE_US`.
fn densest(mut v: Vec<i64>) -> Option<(i64, i64, usize)> {
    v.sort_unstable();
    let tol = |x: i64| (x / 10).max(300_000);
    let mut best: Option<(i64, i64, usize)> = None;
    let (mut lo, mut hi) = (0usize, 0usize);
    for &x in &v {
        let t = tol(x);
        while v[lo] < x.saturating_sub(t) {
            lo += 1;
        }
        hi = hi.max(lo);
        while hi < v.len() && v[hi] <= x.saturating_add(t) {
            hi += 1;
        }
        let n = hi - lo;
        if best.is_none_or(|b| n > b.2) {
            best = Some((x, t, n));
        }
    }
    best.filter(|b| b.2 >= MIN_CUTS && b.0 >= MIN_IDLE_US)
}
