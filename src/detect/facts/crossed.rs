//! Requests of one session in flight at once with the same JSON-RPC id (JSON-RPC 2.0 §4: the
//! id identifies a request until its response; MCP "Requests": the id MUST NOT have been used
//! before by the requestor within the same session). A server that routes responses by id
//! crosses them: the later request takes over the id's routing, the earlier one's progress
//! goes to the later one's stream and its response is never written (typescript-sdk #2433,
//! python-sdk #3060).

use crate::hash::FastMap as HashMap;

use crate::http::Exchange;
use crate::jsonrpc::Kind;
use crate::mcp::Model;

/// Two requests of a session in flight at once with one id.
#[derive(Debug, Clone)]
pub(crate) struct Crossed<'a> {
    /// The session.
    pub session: usize,
    /// The id, compact JSON.
    pub id: &'a str,
    /// The POST of the earlier request, and of the one sent while it was in flight.
    pub first: usize,
    pub second: usize,
    /// Progress notifications for the earlier request's token that came on the later one's
    /// connections.
    pub crossed_progress: usize,
    /// Whether the earlier request got a response with its id on its own connections.
    pub first_answered: bool,
}

/// The connections that carry the answer to the request of POST `x`: its logical stream's,
/// else its own.
fn carriers<'m>(model: &'m Model, x: &'m usize) -> &'m [usize] {
    match model.exchange_stream[*x] {
        Some(st) => &model.streams[st].connections,
        None => std::slice::from_ref(x),
    }
}

/// When the request `id` of POST `x` got its response on its own connections, µs since the
/// Unix epoch.
fn answered_at(model: &Model, exchanges: &[Exchange], x: &usize, id: &str) -> Option<i64> {
    let answers = |m_kind: Kind, m_id: Option<&str>| {
        matches!(m_kind, Kind::Response | Kind::Error) && m_id == Some(id)
    };
    carriers(model, x).iter().find_map(|&c| {
        let e = &exchanges[c];
        if e.rpc
            .response
            .iter()
            .any(|m| answers(m.kind, m.id.as_deref()))
        {
            return e.ts_response;
        }
        e.sse
            .events
            .briefs()
            .filter(|(_, b)| b.has_response && !b.truncated)
            .filter_map(|(i, _)| e.sse.events.get(i))
            .find(|ev| ev.messages.refs().any(|m| answers(m.kind, m.id)))
            .map(|ev| ev.sse.ts)
    })
}

/// The crossed requests of every session with an id (without one, independent clients reuse
/// ids), in session order, then in order of the later request.
pub(crate) fn crossed<'a>(model: &'a Model, exchanges: &'a [Exchange]) -> Vec<Crossed<'a>> {
    let mut out = Vec::new();
    for (si, s) in model.sessions.iter().enumerate() {
        if s.id.is_none() {
            continue;
        }
        // The session's requests by id, in time order: (POST, progress token).
        let mut by_id: HashMap<&str, Vec<(usize, Option<&str>)>> = HashMap::default();
        let mut order: Vec<&str> = Vec::new();
        for &x in &s.exchanges {
            let e = &exchanges[x];
            if e.method() != "POST" {
                continue;
            }
            for m in e.rpc.request.iter().filter(|m| m.kind == Kind::Request) {
                let Some(id) = m.id.as_deref() else { continue };
                let v = by_id.entry(id).or_default();
                if v.is_empty() {
                    order.push(id);
                }
                v.push((x, m.request_progress_token()));
            }
        }
        let mut found: Vec<Crossed> = Vec::new();
        for id in order {
            for w in by_id[id].windows(2) {
                let ((a, token), (b, _)) = (w[0], w[1]);
                let (ea, eb) = (&exchanges[a], &exchanges[b]);
                let answered = answered_at(model, exchanges, &a, id);
                // Still in flight when the later one was sent: not answered yet, and its
                // response stream (or connection) not over.
                let open_until = answered
                    .or(ea.ts_end.filter(|_| !ea.open_at_capture_end))
                    .unwrap_or(i64::MAX);
                if eb.ts() >= open_until || ea.client != eb.client {
                    continue;
                }
                let crossed_progress = token.map_or(0, |t| {
                    carriers(model, &b)
                        .iter()
                        .flat_map(|&c| exchanges[c].sse.events.iter())
                        .filter(|ev| !ev.sse.truncated)
                        .flat_map(|ev| ev.messages.refs())
                        .filter(|m| m.progress_token == Some(t))
                        .count()
                });
                found.push(Crossed {
                    session: si,
                    id,
                    first: a,
                    second: b,
                    crossed_progress,
                    first_answered: answered.is_some(),
                });
            }
        }
        found.sort_by_key(|c| (exchanges[c.second].ts(), c.second));
        out.extend(found);
    }
    out
}
