//! `id_gap`: event ids that count one by one skipped, so events between them were never
//! delivered (`docs/wire.md`, "Event-id formats"). Judged at a resumption's cursor (the first
//! new id against L) and inside each connection ([`crate::detect::facts::gaps`]).
//!
//! - Dense by format: Go `<stream>_<n>`, rmcp `<n>/<request>`, C# `…:<n>`; plain integers only
//!   where the stream showed them dense and no other stream used the ids skipped.
//! - Ordinals that priming events of the resumed connection carried were delivered.
//! - Not at a log that started over ([`super::id_restart`]): its ids are a counter of its own.

use super::{Check, Found, Rule};
use crate::detect::context::Context;
use crate::detect::facts::boundary::Boundary;
use crate::detect::facts::streams::stream_request_id;
use crate::detect::verdict::Cause;
use crate::detect::{flow_id, Finding, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::IdGap,
    severities: &[Severity::Error],
    summary: "Event ids that count one by one skipped: events between them were never delivered.",
    checks: &[Check::Connections(inside), Check::Resumption(at_cursor)],
};

/// At the cursor.
fn at_cursor(_: &Context, b: &Boundary, out: &mut Vec<Found>) {
    let Some(ev) = b.events() else { return };
    let (Some(gap), Some(first), Some(id)) = (ev.ids.gap, ev.first, ev.first_id.as_deref()) else {
        return;
    };
    // Ids that jumped ahead on a fresh log are another counter's (a replica's own, started
    // elsewhere), not events lost between L and the first id.
    if ev.progress_restart.is_some() {
        return;
    }
    let detail = format!(
        "The resumed stream (flow {}) went from Last-Event-ID {} to event id {id} (frame {}) on a stream whose ids are dense: {} events were never delivered.",
        flow_id(b.exchange),
        b.leid(),
        first.sse.frame_first,
        gap.lost
    );
    let mut f = b
        .finding(
            Kind::IdGap,
            Severity::Error,
            Some(first),
            b.with_backends(detail),
        )
        .cite(b.exchange.flow_index, first.sse.frame_first);
    f.expected = Some(format!("{}", gap.first_missing));
    f.observed = Some(id.to_string());
    out.push(Found::new(f, Cause::DenseSkip));
}

/// Inside each connection.
fn inside(ctx: &Context, out: &mut Vec<Finding>) {
    for g in &ctx.inner_gaps {
        let e = &ctx.exchanges[g.exchange];
        let to = g.at.sse.id.unwrap_or("");
        let mut f = Finding::at_exchange(
            ctx.label(g.session),
            Kind::IdGap,
            Severity::Error,
            e,
            format!(
                "The connection (flow {}, response in frame {}) went from {} {} to event id {to} (frame {}) on a stream part whose ordinals had stepped by one: {} event(s) numbered in between were never delivered{}.",
                flow_id(e),
                e.frame_response.unwrap_or(0),
                if g.from_cursor { "the resumption's cursor" } else { "event id" },
                g.from,
                g.at.sse.frame_first,
                g.missing,
                if g.more > 0 {
                    format!(", and the ids skip {} more time(s) on this connection", g.more)
                } else {
                    String::new()
                }
            ),
        )
        .at_event(&g.at)
        .cite(e.flow_index, e.frame_response.unwrap_or(0))
        .cite(e.flow_index, g.at.sse.frame_first);
        f.last_event_id = Some(g.from.to_string());
        f.request_id = stream_request_id(ctx.model, ctx.exchanges, g.stream);
        f.expected = Some(g.first_missing.to_string());
        f.observed = Some(to.to_string());
        out.push(f);
    }
}
