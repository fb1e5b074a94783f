//! `app_seq_desync`: the transport ids claim the log went on across a resumption, but an
//! application sequence under way before the cursor (progress per token, MCP "Progress";
//! `/params/app_seq` or an `--app-seq` field) jumped or went back after it: the continuation
//! was synthesized, not replayed (`docs/resumption.md`, "Synthesized continuations"). Judged
//! at the boundary and inside the resumed connection up to where its replay hands over to live
//! events ([`crate::detect::facts::series::desyncs`]).
//!
//! - Only a regular counter is held to its step; any progress is held to going up.
//! - A value the client already had is a duplicate (`duplicate_delivery`), not a desync.
//! - Skipped values that come later on the connection: delivered out of order, said so.

use super::{Check, Found, Rule};
use crate::detect::context::Context;
use crate::detect::facts::boundary::{Boundary, Events};
use crate::detect::facts::relation::ids_step;
use crate::detect::facts::series::Desync;
use crate::detect::verdict::Cause;
use crate::detect::{fmt_num, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::AppSeqDesync,
    severities: &[Severity::Error],
    summary: "The transport ids claim the log went on, but the application's own counter jumped: the continuation was made up, not replayed.",
    checks: &[Check::Resumption(check)],
};

fn check(ctx: &Context, b: &Boundary, out: &mut Vec<Found>) {
    let Some(ev) = b.events() else { return };
    for d in &ev.desyncs {
        let label = d.key.label(ctx.app_seq);
        let (prev, next) = (d.prev.0, d.next.0);
        let detail = b.with_backends(detail(b, ev, d, &label));
        let mut f = b
            .finding(Kind::AppSeqDesync, Severity::Error, Some(d.next.1), detail)
            .cite(
                b.flow_of(ctx.exchanges, &d.prev.1),
                d.prev.1.sse.frame_first,
            )
            .cite(
                b.flow_of(ctx.exchanges, &d.next.1),
                d.next.1.sse.frame_first,
            );
        // The cursor the client held just before the jump.
        f.last_event_id = Some(d.prev.2.clone());
        f.expected = Some(format!("{label} ≤ {}", fmt_num(prev + d.step)));
        f.observed = Some(fmt_num(next));
        out.push(Found::new(
            f,
            Cause::AppSeq {
                reordered: d.reordered,
            },
        ));
    }
}

/// The sentence of one desync of sequence `label`.
fn detail(b: &Boundary, ev: &Events, d: &Desync, label: &str) -> String {
    let ((prev, prev_ev, prev_id), (next, at)) = (&d.prev, &d.next);
    let (prev, next) = (fmt_num(*prev), fmt_num(*next));
    let how = if d.backwards {
        "going backwards against"
    } else {
        "skipping ahead of"
    };
    let (l, step) = (b.leid(), fmt_num(d.step));
    let (from, to) = (prev_ev.sse.frame_first, at.sse.frame_first);
    if d.reordered {
        format!("Across the resume from Last-Event-ID {l} {label} went from {prev} (frame {from}) to {next} (frame {to}), and the value(s) it skipped came later on the same connection: the events were delivered out of order, so a client that handles them as they come sees its counter go back.")
    } else if d.at_boundary() {
        let ids = match (ev.ids.goes_on, ev.ids.next) {
            (Some(true), true) => "the transport ids continue",
            (Some(true), false) => "the transport ids go on past it",
            _ => "the transport claims a continuation with ids new to the stream",
        };
        let first = ev.first_id.as_deref().unwrap_or("-");
        format!("Across the resume from Last-Event-ID {l} {ids} (next id {first}) but {label} went from {prev} (frame {from}) to {next} (frame {to}), {how} the stream's usual step of {step}: the continuation was synthesized, not replayed.")
    } else {
        let id = at.sse.id.unwrap_or("-");
        let ids = match ids_step(prev_id, at.sse.id.unwrap_or("")) {
            Some(true) => ", although the ids carry on",
            Some(false) => ", and the ids skip too",
            None => "",
        };
        format!("Inside the stream resumed from Last-Event-ID {l} {label} went from {prev} (event {prev_id}, frame {from}) to {next} (event {id}, frame {to}), {how} the stream's usual step of {step}: events in between were never delivered{ids}.")
    }
}
