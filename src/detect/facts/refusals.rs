//! Requests a server refused as for a session it does not know (MCP 2025-03-26 … 2025-11-25
//! "Session Management": a server that does not know a session id MUST answer 404, and a
//! client that gets 404 MUST start a new session), and the other statuses servers answer with
//! instead (the Python SDK before 1.26: 400 "No valid session ID provided", python-sdk #1004;
//! the TypeScript example server: 400, typescript-sdk #389).

use crate::http::Exchange;
use crate::mcp::{Model, Session};

/// The refusals of one session (a stateful session with an id, refused at least once).
#[derive(Debug, Clone)]
pub(crate) struct Refusals {
    /// The session.
    pub session: usize,
    /// Its `Mcp-Session-Id`.
    pub id: String,
    /// The requests carrying the id that were refused (none is a DELETE, none after the
    /// client's own successful DELETE), in time order.
    pub refused: Vec<usize>,
    /// The requests carrying the id from the client of the first refusal that were answered
    /// 2xx after it: the session was alive, somewhere.
    pub served_after: Vec<usize>,
    /// Every request carrying the id answered 2xx.
    pub served: Vec<usize>,
    /// The first refusal with another status than 404.
    pub nonstandard: Option<usize>,
    /// When the client itself ended the session (a DELETE answered 2xx), µs since the Unix
    /// epoch.
    pub deleted: Option<i64>,
}

/// The statuses other than 404 that servers answer a session they do not know with (and that
/// mean something else too: only read as a session refusal where [`nonstandard_refusal`] says).
const OTHER_STATUSES: [u16; 4] = [400, 401, 403, 410];

/// Whether the start of `e`'s error body names a session ("Session not found", "No valid
/// session ID provided", "Invalid or missing session ID").
fn names_session(e: &Exchange) -> bool {
    e.resp_excerpt
        .as_deref()
        .is_some_and(|t| t.to_ascii_lowercase().contains("session"))
}

/// The refusals of every stateful session with an id, in session order.
pub(crate) fn refusals(model: &Model, exchanges: &[Exchange]) -> Vec<Refusals> {
    let mut out = Vec::new();
    for (si, s) in model.sessions.iter().enumerate() {
        if let Some(r) = session_refusals(exchanges, si, s) {
            out.push(r);
        }
    }
    out
}

/// The refusals of session `si`, when it has any.
fn session_refusals(exchanges: &[Exchange], si: usize, s: &Session) -> Option<Refusals> {
    let sid = s.id.as_deref()?;
    if !s.era.stateful() {
        return None;
    }
    let carries = |e: &Exchange| e.req_header("mcp-session-id") == Some(sid);
    let own: Vec<usize> = s
        .exchanges
        .iter()
        .copied()
        .filter(|&x| carries(&exchanges[x]))
        .collect();
    // After the client's own successful DELETE a 404 is the expected answer.
    let deleted = own
        .iter()
        .map(|&x| &exchanges[x])
        .filter(|e| e.method() == "DELETE" && (200..300).contains(&e.status()))
        .map(Exchange::ts)
        .min();
    let before_delete = |e: &Exchange| e.method() != "DELETE" && deleted.is_none_or(|d| e.ts() < d);
    let served = |e: &Exchange| (200..300).contains(&e.status());
    // A session the capture saw assigned (its initialize answered with the id) or served.
    let known_at = s
        .exchanges
        .iter()
        .map(|&x| &exchanges[x])
        .find(|e| served(e) && (carries(e) || e.resp_header("mcp-session-id") == Some(sid)))
        .map(Exchange::ts);
    let other: Vec<usize> = own
        .iter()
        .copied()
        .filter(|&x| {
            let e = &exchanges[x];
            OTHER_STATUSES.contains(&e.status())
                && before_delete(e)
                && known_at.is_some_and(|t| t <= e.ts())
        })
        .collect();
    let other_ok = nonstandard_refusal(exchanges, &own, &other);
    let refused: Vec<usize> = own
        .iter()
        .copied()
        .filter(|&x| {
            let e = &exchanges[x];
            before_delete(e) && (e.status() == 404 || (other_ok && other.contains(&x)))
        })
        .collect();
    let &first = refused.first()?;
    let f = &exchanges[first];
    let t = f.ts_response.unwrap_or(f.ts());
    let served_after = own
        .iter()
        .copied()
        .filter(|&x| {
            let e = &exchanges[x];
            x != first && e.ts() > t && e.client == f.client && served(e)
        })
        .collect();
    Some(Refusals {
        session: si,
        id: sid.to_string(),
        served: own
            .iter()
            .copied()
            .filter(|&x| served(&exchanges[x]))
            .collect(),
        nonstandard: refused
            .iter()
            .copied()
            .find(|&x| exchanges[x].status() != 404),
        refused,
        served_after,
        deleted,
    })
}

/// Whether the session's answers with another status than 404 (`other`, among its requests
/// `own`) refuse the session: their body names a session, or there are two or more of them
/// and nothing carrying the id was served after the first (a 400 for one bad request in a live
/// session is no refusal). A 401 or 403 counts only by its body: it is an authentication's
/// answer too.
fn nonstandard_refusal(exchanges: &[Exchange], own: &[usize], other: &[usize]) -> bool {
    let Some(&first) = other.first() else {
        return false;
    };
    if other.iter().any(|&x| names_session(&exchanges[x])) {
        return true;
    }
    let t = exchanges[first].ts();
    let served_later = own.iter().any(|&x| {
        let e = &exchanges[x];
        e.ts() > t && (200..300).contains(&e.status())
    });
    other.len() >= 2
        && !served_later
        && other
            .iter()
            .all(|&x| matches!(exchanges[x].status(), 400 | 410))
}

/// What a refusal's body said, to quote: the JSON-RPC error's `message` when the body is one
/// (JSON-RPC 2.0 §5.1), else the start of the body ([`Exchange::resp_excerpt`]).
pub(crate) fn said(e: &Exchange) -> Option<String> {
    let text = e.resp_excerpt.as_deref()?;
    let message = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string));
    Some(message.unwrap_or_else(|| text.to_string()))
}
