//! `planned_poll`: the server ended a connection cleanly (the body closed as framed, not cut)
//! with a `retry` in force (announced on it or earlier on the stream) and before the stream's
//! response, and the client came back within three times `retry` plus a second with a GET
//! whose `Last-Event-ID` is the stream's cursor — MCP 2025-11-25 "Resumability and
//! Redelivery" polling (SEP-1699), not a failure.
//!
//! - Only from revision 2025-11-25 on (and never without sessions, 2026-07-28).
//! - Not an empty answer closed at once ([`crate::detect::facts::streams::empty_answer`]).

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::streams::{
    describe, pending, planned_close, polling_era, retry_after, stream_request_id,
};
use crate::detect::{flow_id, Finding, Kind, Severity};
use crate::mcp::McpExchange;

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::PlannedPoll,
    severities: &[Severity::Info],
    summary: "The server closed a stream on purpose before its response and the client polled back with the cursor in time: MCP 2025-11-25 polling, not a failure.",
    checks: &[Check::Capture(check)],
};

/// Over the whole capture (the module's rule).
fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    let answered = &ctx.answered;
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
            for ev in &a.sse.events {
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
                Kind::PlannedPoll,
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
            )
            .cite(a.flow_index, a.frame_last.unwrap_or(0))
            .cite(b.flow_index, b.frame());
            f.ts = end;
            f.frame = a.frame_last.unwrap_or(f.frame);
            f.last_event_id = Some(l.to_string());
            // The first event the poll delivered: the proof that the log went on.
            f.event_id = b
                .sse
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
