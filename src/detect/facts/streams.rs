//! Facts of logical streams and their connections that several rules read: what a stream's
//! request asked, when it was answered, how its connections ended (MCP 2025-11-25 "Sending
//! Messages to the Server", "Resumability and Redelivery").

use crate::hash::FastSet as HashSet;

use crate::http::{EventRec, Exchange};
use crate::jsonrpc::Kind;
use crate::mcp::McpExchange;
use crate::mcp::{Era, Model, StreamKind};

/// JSON-RPC request ids a POST sent (the requests its response stream must answer).
pub(crate) fn request_ids(e: &Exchange) -> HashSet<&str> {
    e.rpc
        .request
        .iter()
        .filter(|m| m.kind == Kind::Request)
        .filter_map(|m| m.id.as_deref())
        .collect()
}

/// The id of the first JSON-RPC request a POST sent (compact JSON), for `request_id` columns.
pub(crate) fn first_request_id(e: &Exchange) -> Option<String> {
    e.rpc
        .request
        .iter()
        .find(|m| m.kind == Kind::Request)
        .and_then(|m| m.id.as_deref().map(str::to_string))
}

/// For each logical stream, the position in its `connections` of the connection by whose end all
/// its requests were answered; `None` when never (a standalone GET stream always owes more).
/// `responses`: what each exchange delivered ([`super::responses::responses`]).
pub(crate) fn answered_at(
    model: &Model,
    exchanges: &[Exchange],
    responses: &super::responses::Responses<'_>,
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
pub(crate) fn pending(answered: &[Option<usize>], st: usize, k: usize) -> bool {
    answered.get(st).copied().flatten().is_none_or(|a| k < a)
}

/// The JSON-RPC request id a POST stream answers (compact JSON), for the `request_id` column.
pub(crate) fn stream_request_id(
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
pub(crate) fn empty_answer(e: &Exchange) -> bool {
    e.is_sse
        && e.status() == 200
        && !e.open_at_capture_end
        && e.resp_body_len == 0
        && e.ts_end
            .zip(e.ts_response)
            .is_some_and(|(end, start)| end.saturating_sub(start) < EMPTY_ANSWER_US)
}

/// A connection as a finding names it: a resumption GET with its cursor, the standalone GET,
/// or a POST's response stream.
pub(crate) fn describe(e: &Exchange) -> String {
    match (e.method(), e.resume_cursor()) {
        ("GET", Some(l)) => format!("resumption GET (Last-Event-ID {l})"),
        ("GET", None) => "standalone GET".into(),
        (m, _) => format!("{m} response stream"),
    }
}

/// Whether MCP 2025-11-25 polling can exist in a session of this revision (not before it, and not
/// without sessions, 2026-07-28; an unknown revision may poll).
pub(crate) fn polling_era(era: Era) -> bool {
    era.stateful() && (era == Era::Unknown || era >= Era::V2025_11_25)
}

/// The `retry` (ms, at most an hour) in force after event `ev`, given the one before: SSE clients
/// keep the last one announced; Go's `event: close` without one counts as 0.
pub(crate) fn retry_after(in_force: Option<u64>, ev: &EventRec) -> Option<u64> {
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
pub(crate) fn planned_close(a: &Exchange, b: &Exchange, retry_ms: u64) -> Option<i64> {
    if !a.resp_complete || a.open_at_capture_end || empty_answer(a) {
        return None;
    }
    let end = a.ts_end.unwrap_or(a.ts());
    let delay = b.ts().saturating_sub(end);
    let budget = 3 * retry_ms as i64 * 1000 + 1_000_000;
    (0..=budget).contains(&delay).then_some(delay)
}

/// Whether the request of the stream opened by exchange `origin` got its response on the
/// events `upto` (a stream's history up to its cursor).
pub(crate) fn answered_before(exchanges: &[Exchange], origin: usize, upto: &[super::Ev]) -> bool {
    let reqs = request_ids(&exchanges[origin]);
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
