//! `stale_stream_conflict`: the client reopened the standalone GET stream after its connection
//! ended, and the server refused it `409 Conflict` — one GET stream per session (MCP
//! 2025-03-26 … 2025-11-25 "Listening for Messages from the Server") — although no connection
//! of that stream was open on the client's side any more: the server still holds the old one.
//! A proxy that drops the client's side of a stream without closing the server's leaves that
//! zombie behind (typescript-sdk #2098); the client cannot listen again, and what the server
//! sends on the stream goes nowhere.
//!
//! - Only a GET without `Last-Event-ID` answered 409, after every client-facing connection of
//!   the session's standalone stream had ended (none open at the time: that conflict is
//!   rightful).
//! - The detail names the server's leg of the old connection when the capture has it, and
//!   whether it was still open.
//! - Once per session, at the first such refusal, counting them.

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::refusals::said;
use crate::detect::{flow_id, Finding, Kind, Severity};
use crate::http::Exchange;
use crate::mcp::{McpExchange, StreamKind};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::StaleStreamConflict,
    severities: &[Severity::Warning],
    summary: "The client's reopened standalone stream was refused 409 because the server still held the old one, whose client side had ended: a proxy left it open.",
    checks: &[Check::Capture(check)],
};

/// A bare GET (no `Last-Event-ID`) answered 409.
fn bare_conflict(e: &Exchange) -> bool {
    e.method() == "GET" && e.resume_cursor().is_none() && e.status() == 409
}

fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    // Each session's standalone stream (its first).
    let mut get_stream: Vec<Option<usize>> = vec![None; model.sessions.len()];
    for (i, st) in model.streams.iter().enumerate() {
        if st.kind == StreamKind::Get {
            get_stream[st.session].get_or_insert(i);
        }
    }
    for (si, s) in model.sessions.iter().enumerate() {
        if s.id.is_none() {
            continue;
        }
        let Some(st) = get_stream[si].map(|i| &model.streams[i]) else {
            continue;
        };
        // Refusals while no connection of the stream was open on the client's side.
        let stale: Vec<usize> = s
            .exchanges
            .iter()
            .copied()
            .filter(|&x| bare_conflict(&exchanges[x]))
            .filter(|&x| {
                let t = exchanges[x].ts();
                st.connections.iter().all(|&c| {
                    let c = &exchanges[c];
                    c.ts() < t && !c.open_at_capture_end && c.ts_end.is_some_and(|end| end < t)
                })
            })
            .collect();
        let Some(&first) = stale.first() else {
            continue;
        };
        let e = &exchanges[first];
        let Some(&old) = st.connections.last() else {
            continue;
        };
        let o = &exchanges[old];
        let leg = model
            .hops
            .backend_hops
            .get(old)
            .and_then(|h| h.last())
            .map(|&b| {
                let b = &exchanges[b];
                let open = b.open_at_capture_end || b.ts_end.is_none_or(|end| end > e.ts());
                format!(
                    "; its server's leg, flow {}, {}",
                    flow_id(b),
                    if open {
                        "was still open"
                    } else {
                        "had ended too"
                    }
                )
            });
        let said = said(e).map(|t| format!(" (\"{t}\")")).unwrap_or_default();
        let mut f = Finding::at_exchange(
            ctx.label(si),
            Kind::StaleStreamConflict,
            Severity::Warning,
            e,
            format!(
                "The client's GET reopening the standalone stream in frame {} (flow {}) was refused 409{said}, {} such refusal(s) in all, though the stream's last connection (flow {}) had ended in frame {}{}: the server still holds the old stream, which a proxy left open on the server's side, and the client cannot listen again.",
                e.frame(),
                flow_id(e),
                stale.len(),
                flow_id(o),
                o.frame_last.unwrap_or(o.frame()),
                leg.unwrap_or_default(),
            ),
        )
        .at_response(e)
        .cite(e.flow_index, e.frame())
        .cite(o.flow_index, o.frame_last.unwrap_or(o.frame()));
        f.expected = Some("the standalone stream reopened".into());
        f.observed = Some(format!("{} × 409", stale.len()));
        out.push(f);
    }
}
