//! Session life-cycle checks: `stale_session_reuse` and `session_reinitialized` after a 404,
//! `resume_without_cursor`, and `empty_resume_loop` (`docs/wire.md`, "Known failure patterns":
//! typescript-sdk #2499, inspector #723, rust-sdk #958, python-sdk #1676, typescript-sdk #1708;
//! MCP 2025-03-26 … 2025-11-25 "Session Management": a client that receives 404 for its
//! session MUST start a new session with an `initialize` request without a session id).

use crate::hash::{FastMap as HashMap, FastSet as HashSet};

use super::streams::{empty_answer, pending};
use super::{flow_id, Finding, Severity};
use crate::http::Exchange;
use crate::mcp::{is_initialize, Model};

/// `stale_session_reuse` and `session_reinitialized`.
///
/// For each session the server answered 404 (to any request but a DELETE, and before the client's
/// own successful DELETE): the later requests from the same client address that still carry the
/// dead `Mcp-Session-Id` are `stale_session_reuse` — info when the client then re-initialised and
/// the dead id stopped (it recovered), else a warning (the error loop of python-sdk #1676 /
/// typescript-sdk #1708). When some later request with that id is answered 2xx the session was
/// not dead (replicas without sticky routing, reported by `backend_switch` where backends are
/// known) and nothing is reported here. The first `initialize` from that address after the 404
/// that obtained another session id, after which the dead id is no longer used, is
/// `session_reinitialized` (info), reported on the new session. Clients are told apart by address
/// only: applications sharing one address count as one client.
pub(super) fn dead_sessions(model: &Model, exchanges: &[Exchange], out: &mut Vec<Finding>) {
    let mut linked: HashSet<usize> = HashSet::default();
    // The initializes of each client address, in order of (time, index).
    let mut initializes: HashMap<Option<std::net::IpAddr>, Vec<(i64, usize)>> = HashMap::default();
    for x in (0..exchanges.len())
        .filter(|&x| model.hops.primary[x].is_none() && is_initialize(&exchanges[x]))
    {
        initializes
            .entry(exchanges[x].client)
            .or_default()
            .push((exchanges[x].ts(), x));
    }
    for v in initializes.values_mut() {
        v.sort_unstable();
    }
    for (si, s) in model.sessions.iter().enumerate() {
        let Some(sid) = s.id.as_deref() else { continue };
        if !s.era.stateful() {
            continue;
        }
        let carries = |e: &Exchange| e.req_header("mcp-session-id") == Some(sid);
        // After the client's own successful DELETE a 404 is the expected answer.
        let deleted = s
            .exchanges
            .iter()
            .map(|&x| &exchanges[x])
            .filter(|e| e.method() == "DELETE" && (200..300).contains(&e.status()))
            .map(|e| e.ts())
            .min()
            .unwrap_or(i64::MAX);
        let Some(&dead) = s.exchanges.iter().find(|&&x| {
            let e = &exchanges[x];
            carries(e) && e.status() == 404 && e.method() != "DELETE" && e.ts() < deleted
        }) else {
            continue;
        };
        let d = &exchanges[dead];
        let t404 = d.ts_response.unwrap_or(d.ts());
        // The client's next initialize that started another session.
        let reinit = initializes.get(&d.client).and_then(|v| {
            v[v.partition_point(|&(t, _)| t <= t404)..]
                .iter()
                .map(|&(_, x)| x)
                .find(|&x| {
                    model.exchange_session[x] != si
                        && model.sessions[model.exchange_session[x]].id.is_some()
                })
        });
        let reinit_ts = reinit.map(|x| exchanges[x].ts()).unwrap_or(i64::MAX);
        let later: Vec<usize> = s
            .exchanges
            .iter()
            .copied()
            .filter(|&x| {
                let e = &exchanges[x];
                x != dead && e.ts() > t404 && e.client == d.client && carries(e)
            })
            .collect();
        let revived = later
            .iter()
            .any(|&x| (200..300).contains(&exchanges[x].status()));
        if revived {
            continue;
        }
        let stale: Vec<usize> = later
            .iter()
            .copied()
            .filter(|&x| exchanges[x].method() != "DELETE" && exchanges[x].ts() < deleted)
            .collect();
        // Requests with the dead id after the re-initialise: not this client's recovery (another
        // application on the same address initialised), so no link and no all-clear.
        let after_reinit = stale.iter().any(|&x| exchanges[x].ts() > reinit_ts);
        let reinit = reinit.filter(|_| !after_reinit);
        if let Some(&first) = stale.first() {
            let e = &exchanges[first];
            let statuses: Vec<String> = {
                let mut v: Vec<u16> = stale.iter().map(|&x| exchanges[x].status()).collect();
                v.sort_unstable();
                v.dedup();
                v.iter()
                    .map(|c| {
                        if *c == 0 {
                            "none".to_string()
                        } else {
                            c.to_string()
                        }
                    })
                    .collect()
            };
            let (severity, tail) = match reinit {
                Some(x) => (
                    Severity::Info,
                    format!("; it re-initialised only in frame {}", exchanges[x].frame()),
                ),
                None => (
                    Severity::Warning,
                    " and never re-initialised in the capture".to_string(),
                ),
            };
            let mut f = Finding::at_exchange(
                s.label(),
                "stale_session_reuse",
                severity,
                e,
                format!(
                    "The server answered 404 for session {sid} in frame {} (flow {}), yet the client sent {} more request(s) with that session id from frame {} (answered {}){tail}.",
                    d.frame_response.unwrap_or(0),
                    flow_id(d),
                    stale.len(),
                    e.frame(),
                    statuses.join("/"),
                ),
            );
            f.expected = Some("initialize without Mcp-Session-Id after a 404".into());
            f.observed = Some(format!(
                "{} request(s) with the dead session id",
                stale.len()
            ));
            out.push(f);
        }
        if let Some(x) = reinit {
            if !linked.insert(x) {
                continue;
            }
            let e = &exchanges[x];
            let new = &model.sessions[model.exchange_session[x]];
            let mut f = Finding::at_exchange(
                new.label(),
                "session_reinitialized",
                Severity::Info,
                e,
                format!(
                    "The client re-initialised in frame {} (flow {}) and obtained session {}, {} ms after the server answered 404 for session {sid} in frame {}.",
                    e.frame(),
                    flow_id(e),
                    new.label(),
                    e.ts().saturating_sub(t404) / 1000,
                    d.frame_response.unwrap_or(0)
                ),
            );
            f.request_id = e
                .req_messages
                .iter()
                .find(|m| m.method.as_deref() == Some("initialize"))
                .and_then(|m| m.id.as_deref().map(str::to_string));
            f.expected = Some(format!("a new session replacing {sid}"));
            f.observed = Some(new.label());
            out.push(f);
        }
    }
}

/// `resume_without_cursor` (warning): a stream that carried event ids broke while it still owed
/// messages (a POST stream without its response, or the standalone GET stream), it was never
/// resumed, and the session's next GET carries no `Last-Event-ID`: the client opened a fresh
/// stream instead of resuming, so whatever the server sent in between is lost to it
/// (typescript-sdk #2499; modelcontextprotocol/inspector #723).
pub(super) fn resumes_without_cursor(
    model: &Model,
    exchanges: &[Exchange],
    answered: &[Option<usize>],
    out: &mut Vec<Finding>,
) {
    // Per stream: the latest resumption that presented its cursor (any answer).
    let mut resumed_latest: Vec<i64> = vec![i64::MIN; model.streams.len()];
    for r in &model.resumptions {
        if let Some(st) = r.stream {
            resumed_latest[st] = resumed_latest[st].max(exchanges[r.exchange].ts());
        }
    }
    // Per session: when it was declared dead (404) or ended (DELETE), and cancelled requests.
    let mut closed_at: Vec<i64> = vec![i64::MAX; model.sessions.len()];
    let mut cancelled: HashMap<(usize, &str), i64> = HashMap::default();
    for (si, s) in model.sessions.iter().enumerate() {
        for &x in &s.exchanges {
            let e = &exchanges[x];
            if e.status() == 404 || e.method() == "DELETE" {
                closed_at[si] = closed_at[si].min(e.ts());
            }
            for m in &e.req_messages {
                if let Some(c) = m.cancels() {
                    let t = cancelled.entry((si, c)).or_insert(e.ts());
                    *t = (*t).min(e.ts());
                }
            }
        }
    }
    // Per session, its GETs without a cursor (time, exchange), in time order as the session's
    // exchanges are: looked up once per broken stream.
    let mut fresh_gets: HashMap<usize, Vec<(i64, usize)>> = HashMap::default();
    for (sti, st) in model.streams.iter().enumerate() {
        let s = &model.sessions[st.session];
        // A stream whose request the capture missed (it began mid-connection) may have owed
        // nothing: its kind, and what it still owed, are unknown.
        let orphan = st
            .connections
            .first()
            .is_some_and(|&x| exchanges[x].request.is_none());
        if s.id.is_none() || !s.era.stateful() || orphan {
            continue;
        }
        let Some(&last) = st.connections.last() else {
            continue;
        };
        let l = &exchanges[last];
        if l.open_at_capture_end || !pending(answered, sti, st.connections.len() - 1) {
            continue;
        }
        let Some(cursor) = st
            .connections
            .iter()
            .rev()
            .flat_map(|&x| exchanges[x].events.iter().rev())
            .filter(|ev| !ev.sse.truncated && ev.sse.has_own_id)
            .find_map(|ev| ev.sse.id)
        else {
            continue;
        };
        let end = l.ts_end.unwrap_or(l.ts());
        // The client did present the stream's cursor later (even if refused).
        if resumed_latest[sti] > end {
            continue;
        }
        // The first GET after the break that carries no cursor (GETs resuming other streams,
        // e.g. the standalone one broken at the same time, come and go before it).
        let gets = fresh_gets.entry(st.session).or_insert_with(|| {
            s.exchanges
                .iter()
                .filter(|&&x| {
                    let e = &exchanges[x];
                    e.method() == "GET" && e.resume_cursor().is_none()
                })
                .map(|&x| (exchanges[x].ts(), x))
                .collect()
        });
        let Some(g) = gets[gets.partition_point(|&(t, _)| t < end)..]
            .iter()
            .map(|&(_, x)| x)
            .find(|&x| x != last)
        else {
            continue;
        };
        let ge = &exchanges[g];
        // A session already declared dead, or ended by the client, owes nothing more; nor does a
        // request the client cancelled (MCP "Cancellation": no response is due).
        let request = super::streams::stream_request_id(model, exchanges, sti);
        let cancel = request
            .as_deref()
            .and_then(|r| cancelled.get(&(st.session, r)).copied())
            .unwrap_or(i64::MAX);
        if closed_at[st.session] < ge.ts() || cancel < ge.ts() {
            continue;
        }
        let mut f = Finding::at_exchange(
            s.label(),
            "resume_without_cursor",
            Severity::Warning,
            ge,
            format!(
                "The {} on flow {} ended in frame {} with its last event id {cursor} and without what it still owed; the client's next GET (frame {}, flow {}) carried no Last-Event-ID, so the server could not replay what was sent in between.",
                if st.kind == crate::mcp::StreamKind::Post {
                    "POST response stream"
                } else {
                    "standalone GET stream"
                },
                flow_id(l),
                l.frame_last.unwrap_or(0),
                ge.frame(),
                flow_id(ge)
            ),
        );
        f.last_event_id = Some(cursor.to_string());
        f.request_id = request;
        f.expected = Some(format!("GET with Last-Event-ID {cursor}"));
        f.observed = Some("GET without Last-Event-ID".into());
        out.push(f);
    }
}

/// How many empty answers to one `Last-Event-ID` make a loop.
const MIN_EMPTY_RESUMES: usize = 3;

/// `empty_resume_loop` (warning): three or more consecutive resumption GETs of a session with the
/// identical `Last-Event-ID`, each answered `200 text/event-stream` with an empty body that ended
/// within a second (not a poll the server held open): the server
/// neither replays nor refuses, and the client retries for ever (rust-sdk #958). Whatever the
/// stream still owed never arrives.
pub(super) fn empty_resume_loops(model: &Model, exchanges: &[Exchange], out: &mut Vec<Finding>) {
    let empty = |x: usize| empty_answer(&exchanges[x]);
    // Resumptions by (session, Last-Event-ID), in time order.
    let mut by_cursor: Vec<((usize, &str), Vec<usize>)> = Vec::new();
    let mut index: HashMap<(usize, &str), usize> = Default::default();
    for r in &model.resumptions {
        let key = (r.session, r.last_event_id.as_str());
        let i = *index.entry(key).or_insert_with(|| {
            by_cursor.push((key, Vec::new()));
            by_cursor.len() - 1
        });
        by_cursor[i].1.push(r.exchange);
    }
    for ((session, cursor), same) in &by_cursor {
        // The longest run of consecutive empty answers.
        let mut best: &[usize] = &[];
        let mut start = 0;
        for i in 0..=same.len() {
            if i == same.len() || !empty(same[i]) {
                if i - start > best.len() {
                    best = &same[start..i];
                }
                start = i + 1;
            }
        }
        if best.len() < MIN_EMPTY_RESUMES {
            continue;
        }
        let (a, z) = (&exchanges[best[0]], &exchanges[best[best.len() - 1]]);
        let every = z.ts().saturating_sub(a.ts()) / (best.len() as i64 - 1) / 1000;
        let mut f = Finding::at_exchange(
            model.sessions[*session].label(),
            "empty_resume_loop",
            Severity::Warning,
            a,
            format!(
                "{} resumption GETs with Last-Event-ID {} (frames {} to {}, about every {} ms) were each answered 200 with an empty event stream: the server neither replays nor refuses, and nothing the stream owed arrives.",
                best.len(),
                cursor,
                a.frame(),
                z.frame(),
                every
            ),
        );
        f.expected = Some("a replay, or an error status".into());
        f.observed = Some(format!("{} empty 200 answers", best.len()));
        out.push(f);
    }
}

/// `batch_outside_era` (info): a POST carried a JSON-RPC batch (a JSON array) in a session whose
/// protocol revision is not 2025-03-26, the only one that allows batches (2025-06-18 removed
/// them; the Go SDK answers 400). Reported once per session, at the first batch.
pub(super) fn batches_outside_era(model: &Model, exchanges: &[Exchange], out: &mut Vec<Finding>) {
    for s in &model.sessions {
        if matches!(
            s.era,
            crate::mcp::Era::Unknown | crate::mcp::Era::V2025_03_26
        ) {
            continue;
        }
        let batches: Vec<usize> = s
            .exchanges
            .iter()
            .copied()
            .filter(|&x| exchanges[x].req_batch && exchanges[x].method() == "POST")
            .collect();
        let Some(&first) = batches.first() else {
            continue;
        };
        let e = &exchanges[first];
        let mut f = Finding::at_exchange(
            s.label(),
            "batch_outside_era",
            Severity::Info,
            e,
            format!(
                "The POST in frame {} (flow {}) carried a JSON-RPC batch of {} message(s) in a session of protocol revision {}, which has no batches (only 2025-03-26 allowed them){}; the server answered {}.",
                e.frame(),
                flow_id(e),
                e.req_messages.len(),
                s.era.as_str(),
                if batches.len() > 1 { format!("; {} such POSTs in all", batches.len()) } else { String::new() },
                match e.status() { 0 => "nothing captured".to_string(), c => format!("HTTP {c}") }
            ),
        );
        f.expected = Some("one JSON-RPC message per POST".into());
        f.observed = Some(format!("a batch of {}", e.req_messages.len()));
        out.push(f);
    }
}
