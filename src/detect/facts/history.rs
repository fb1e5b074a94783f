//! What a stream's resumptions read of its history, and the bounds on it: a client that polls
//! for hours resumes thousands of times, and each reading of the whole history would make the
//! run quadratic.

use crate::hash::FastMap as HashMap;

use super::streams::empty_answer;
use crate::http::{EventRec, Exchange};
use crate::jsonrpc::Kind;
use crate::mcp::ids::{self, IdFormat};
use crate::mcp::McpExchange;
use crate::mcp::Model;

/// How much of a stream's history its resumptions have read ([`HISTORY_BUDGET`]).
#[derive(Debug, Default)]
pub(crate) struct History {
    /// Events and connections read, summed over the stream's resumptions.
    pub read: u64,
    /// Resumptions checked against only the last [`HISTORY_WINDOW`] events.
    pub windowed: u64,
    /// The exchange of the first of those.
    pub first_windowed: Option<usize>,
    /// When the stream's own request was not captured: the request its events answer, with
    /// its progress token ([`sole_request`]), read once.
    pub(crate) sole_request: Option<Option<(String, String)>>,
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
    pub(crate) fn served_next(
        &mut self,
        conns: &[usize],
        exchanges: &[Exchange],
    ) -> &[Option<usize>] {
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
pub(crate) struct SessionCursors {
    /// The session's first exchange (in time order) whose SSE response lost bytes.
    pub(crate) first_lost: Option<usize>,
    /// For each stream part of the session's event ids (by format, then prefix:
    /// [`ids::parse`]), the time (microseconds since the Unix epoch) of the first exchange
    /// that delivered one.
    streams: HashMap<IdFormat, HashMap<String, i64>>,
}

impl SessionCursors {
    /// Read session `session`'s exchanges (in time order, as the model keeps them).
    pub(crate) fn build(model: &Model, exchanges: &[Exchange], session: usize) -> Self {
        let mut out = SessionCursors::default();
        for &x in &model.sessions[session].exchanges {
            let g = &exchanges[x];
            if out.first_lost.is_none() && g.resp_gap && g.is_sse {
                out.first_lost = Some(x);
            }
            let mut last: Option<&str> = None;
            for id in g.sse.events.iter().filter_map(|ev| ev.sse.id) {
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
    pub(crate) fn stream_seen(&self, cursor: &str, before: i64) -> bool {
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
pub(crate) const HISTORY_BUDGET: u64 = 1 << 21;
/// Events of the history a resumption reads once the stream's budget is spent.
pub(crate) const HISTORY_WINDOW: usize = 256;

/// The (connection, event index) positions of a stream's history before a resumption: every
/// event of the `earlier` connections (`len(c)` events in connection `c`), in order; with a
/// `window`, only the last `window` of them, walking back over at most `window` connections.
pub(crate) fn history_positions(
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

/// The one request a stream's events answer and the one progress token they carry, as
/// (JSON-RPC id, progress token), both as compact JSON text; `None` unless the events hold
/// exactly one response or error id, as their last message (a server closes a POST's stream
/// once it has answered, MCP 2025-11-25 "Sending Messages to the Server": a response before
/// other messages is a batch's, whose other answer the capture may not hold), and exactly one
/// `notifications/progress` token.
pub(crate) fn sole_request<'a>(
    events: impl IntoIterator<Item = EventRec<'a>>,
) -> Option<(String, String)> {
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
pub(crate) fn requests_of_session(
    model: &Model,
    exchanges: &[Exchange],
    session: usize,
) -> HashMap<String, String> {
    let mut out = HashMap::default();
    for &xi in &model.sessions[session].exchanges {
        for m in exchanges[xi]
            .rpc
            .request
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
