//! `dead_listen_stream`: in a session without an `Mcp-Session-Id` (a stateless server), the
//! standalone GET was answered `200 text/event-stream` and then carried not one byte — no
//! event, no comment — for a second or more. Without a session the server has nothing to send
//! on it, and MCP 2025-03-26 … 2025-11-25 "Listening for Messages from the Server" has a
//! server that offers no such stream answer `405 Method Not Allowed`; a client waiting on this
//! one waits for ever (python-sdk #3492, #2474).
//!
//! - Only without a session id: a stateful session's quiet GET stream can still carry what
//!   the server sends later.
//! - Only when it stayed silent a second or more (`DEAD_AFTER_US`), to the end of the
//!   connection or of the capture.
//! - Once per session, naming how many such GETs it had.

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::{flow_id, Finding, Kind, Severity};
use crate::http::Exchange;
use crate::mcp::McpExchange;

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::DeadListenStream,
    severities: &[Severity::Warning],
    summary: "A stateless server answered the standalone GET with an event stream it never wrote to, where it should answer 405: the client waits on a stream that can carry nothing.",
    checks: &[Check::Capture(check)],
};

/// How long a standalone GET stream must stay silent, µs.
const DEAD_AFTER_US: i64 = 1_000_000;

/// How long `e`'s answer lasted without a byte, µs, when it is a silent standalone event stream:
/// to its end, or to the end of the capture.
fn silent_for(e: &Exchange, capture_end: i64) -> Option<i64> {
    let standalone = e.method() == "GET" && e.resume_cursor().is_none();
    if !(standalone && e.is_sse && e.status() == 200) {
        return None;
    }
    if e.resp_body_len != 0 || e.sse.comments != 0 || !e.sse.events.is_empty() || e.resp_gap {
        return None;
    }
    let start = e.ts_response?;
    let end = e.ts_end.unwrap_or(capture_end);
    Some(end.saturating_sub(start)).filter(|&d| d >= DEAD_AFTER_US)
}

fn check(ctx: &Context, out: &mut Vec<Finding>) {
    for (si, s) in ctx.model.sessions.iter().enumerate() {
        if s.id.is_some() {
            continue;
        }
        let dead: Vec<(usize, i64)> = s
            .exchanges
            .iter()
            .filter_map(|&x| Some((x, silent_for(&ctx.exchanges[x], ctx.capture_end)?)))
            .collect();
        let Some(&(x, lasted)) = dead.first() else {
            continue;
        };
        let e = &ctx.exchanges[x];
        let ended = if e.open_at_capture_end || e.ts_end.is_none() {
            "to the end of the capture".to_string()
        } else if e.client_closed {
            format!(
                "until the client closed it (frame {})",
                e.frame_last.unwrap_or(e.frame())
            )
        } else {
            format!(
                "until it ended in frame {}",
                e.frame_last.unwrap_or(e.frame())
            )
        };
        let more = match dead.len() {
            1 => String::new(),
            n => format!(" ({n} such GETs in the session)"),
        };
        let mut f = Finding::at_exchange(
            ctx.label(si),
            Kind::DeadListenStream,
            Severity::Warning,
            e,
            format!(
                "The server answered the standalone GET of a session without an Mcp-Session-Id 200 text/event-stream in frame {} (flow {}) and wrote nothing on it for {} ms, {ended}{more}: a stateless server has nothing to send there, and MCP \"Listening for Messages from the Server\" has a server without such a stream answer 405.",
                e.frame_response.unwrap_or(e.frame()),
                flow_id(e),
                lasted / 1000,
            ),
        )
        .at_response(e)
        .cite(e.flow_index, e.frame_response.unwrap_or(e.frame()));
        if !(e.open_at_capture_end || e.ts_end.is_none()) {
            f.add_cite(e.flow_index, e.frame_last.unwrap_or(e.frame()));
        }
        f.expected = Some("405, or events on the stream".into());
        f.observed = Some(format!("200 and no byte in {} ms", lasted / 1000));
        out.push(f);
    }
}
