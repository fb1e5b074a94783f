//! `id_restart`: the resumed stream's log began again under the same session, so what the
//! old log still held is lost (`docs/resumption.md`, "Forks": a replica without the buffer
//! starts a fresh log). Shown by the ids where their format can show it — an ordinal back at
//! the stream's start, or the prefix of a stream never seen while this one still owed
//! messages — and, for every id format, by progress that started over: the first value of a
//! token after the cursor is one the client already had, below where it stood (MCP
//! "Progress": the value MUST increase).

use super::{Check, Found, Rule};
use crate::detect::context::Context;
use crate::detect::facts::boundary::{Boundary, Events};
use crate::detect::facts::duplicates::ProgressRestart;
use crate::detect::facts::relation::Relation;
use crate::detect::facts::series::SeqKey;
use crate::detect::verdict::Cause;
use crate::detect::{flow_id, fmt_num, Finding, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::IdRestart,
    severities: &[Severity::Error],
    summary: "The resumed stream's log began again, as its ids or its progress show: a fresh log under the same session, so what the old log still held is lost.",
    checks: &[Check::Resumption(check)],
};

fn check(ctx: &Context, b: &Boundary, out: &mut Vec<Found>) {
    let Some(ev) = b.events() else { return };
    if let (true, Some(first), Some(id)) = (ev.ids.restarted, ev.first, ev.first_id.as_deref()) {
        let detail = format!(
            "The resumed stream (flow {}) restarted its id sequence at {id} (frame {}) after Last-Event-ID {}: a fresh log under the same session, so events of the abandoned log are lost.",
            flow_id(b.exchange),
            first.sse.frame_first,
            b.leid()
        );
        let mut f = b
            .finding(
                Kind::IdRestart,
                Severity::Error,
                Some(first),
                b.with_backends(detail),
            )
            .cite(b.exchange.flow_index, first.sse.frame_first);
        f.expected = Some(format!("continuation of the stream of {}", b.leid()));
        f.observed = Some(format!("new sequence starting at {id}"));
        out.push(Found::new(f, Cause::Restarted));
    }
    if let Some(p) = &ev.progress_restart {
        out.push(Found::new(
            by_progress(ctx, b, ev, p),
            Cause::ProgressRestart,
        ));
    }
}

/// The finding of a log shown to start over by its progress (`p`).
fn by_progress(ctx: &Context, b: &Boundary, ev: &Events, p: &ProgressRestart) -> Finding {
    let label = SeqKey::Progress(p.token.clone()).label(ctx.app_seq);
    let ids = match (ev.ids.relation, ev.first_id.as_deref()) {
        (Relation::Ordered { .. }, Some(id)) => format!(
            "; its event ids went on from {} to {id}, numbered by the new log",
            b.leid()
        ),
        (Relation::Unordered | Relation::OtherPart, Some(id)) => {
            format!("; its event ids (the first {id}) cannot show the restart themselves")
        }
        _ => String::new(),
    };
    let detail = format!(
        "The resumed stream (flow {}) started its log over after Last-Event-ID {}: {label} began again at {} (frame {}), below the {} it had reached before the cut{ids}: a fresh log under the same session, so events of the abandoned log are lost.",
        flow_id(b.exchange),
        b.leid(),
        fmt_num(p.value),
        p.ev.sse.frame_first,
        fmt_num(p.last)
    );
    let mut f = b
        .finding(
            Kind::IdRestart,
            Severity::Error,
            Some(p.ev),
            b.with_backends(detail),
        )
        .cite(b.exchange.flow_index, p.ev.sse.frame_first);
    f.expected = Some(format!("continuation of the stream of {}", b.leid()));
    f.observed = Some(format!("{label} started over at {}", fmt_num(p.value)));
    f
}
