//! `id_regression`: the resumed stream began with an event id that is not after the cursor L
//! (an ordered id at or below L's, an opaque id the client already had up to L), or a priming
//! event opened it with an ordered id of L's stream below L: the server opened another log
//! instead of continuing this one (`docs/resumption.md`, "Forks").

use super::{Check, Found, Rule};
use crate::detect::context::Context;
use crate::detect::facts::boundary::Boundary;
use crate::detect::verdict::Cause;
use crate::detect::{flow_id, Cited, Finding, Kind, Severity};
use crate::http::EventRec;

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::IdRegression,
    severities: &[Severity::Error],
    summary: "The resumed stream began with an event the client already had: the server opened another log instead of continuing this one.",
    checks: &[Check::Resumption(check)],
};

fn check(ctx: &Context, b: &Boundary, out: &mut Vec<Found>) {
    let Some(ev) = b.events() else { return };
    let l_frame = Cited {
        flow_index: ctx.exchanges[ev.cut.before[ev.cut.lpos].0].flow_index,
        frame: ev.cut.l_ev().sse.frame_first,
    };
    if let (true, Some(first), Some(id)) = (ev.ids.regressed, ev.first, ev.first_id.as_deref()) {
        let f = regressed(b, l_frame, first, id, "began with", "which is not after");
        out.push(Found::new(f, Cause::Regressed));
    }
    // A priming event below the cursor, where the first event did not already show the fork.
    if let Some(primed) = ev.primed_fork() {
        let id = primed.sse.id.unwrap_or_default();
        let f = regressed(b, l_frame, primed, id, "was primed with", "below");
        out.push(Found::new(f, Cause::PrimedLow));
    }
}

/// The finding: the resumed stream `how` event id `id` (event `at`), `relation` L (delivered
/// in frame `l_frame`).
fn regressed(
    b: &Boundary,
    l_frame: Cited,
    at: EventRec,
    id: &str,
    how: &str,
    relation: &str,
) -> Finding {
    let e = b.exchange;
    let detail = format!(
        "The resumed stream (GET in frame {}, flow {}) {how} event id {id} in frame {}, {relation} Last-Event-ID {} (delivered in frame {}): the server opened another log instead of continuing this one.",
        e.frame(),
        flow_id(e),
        at.sse.frame_first,
        b.leid(),
        l_frame.frame
    );
    let mut f = b
        .finding(
            Kind::IdRegression,
            Severity::Error,
            Some(at),
            b.with_backends(detail),
        )
        .cite(e.flow_index, e.frame())
        .cite(e.flow_index, at.sse.frame_first)
        .cite(l_frame.flow_index, l_frame.frame);
    f.expected = Some(format!("first id after {}", b.leid()));
    f.observed = Some(id.to_string());
    f
}
