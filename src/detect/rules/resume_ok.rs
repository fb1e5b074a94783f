//! `resume_ok`: the resumption continued the log at the cursor — nothing forked, nothing was
//! delivered twice, no sequence broke at the boundary, no suspect result, no dense id skipped
//! at the cursor and no foreign event (MCP 2025-11-25 "Resumability and Redelivery"). It
//! speaks of the boundary: a value lost later inside the resumed connection is its own
//! finding (and makes the verdict `gap`).
//!
//! - With ids that cannot show order and no application sequence before the cut, the
//!   continuation is not shown, only not contradicted: the finding says so.

use super::{Check, Found, Rule};
use crate::detect::context::Context;
use crate::detect::facts::boundary::Boundary;
use crate::detect::verdict::{self, Cause};
use crate::detect::{flow_id, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::ResumeOk,
    severities: &[Severity::Info],
    summary: "The resumption continued the log at the cursor.",
    checks: &[Check::Resumption(check)],
};

fn check(_: &Context, b: &Boundary, out: &mut Vec<Found>) {
    let Some(ev) = b.events() else { return };
    let broken = verdict::forks(out)
        || Found::any(out, Kind::DuplicateDelivery)
        || Found::any(out, Kind::SuspectTerminal)
        || Found::any(out, Kind::IdGap)
        || ev.desyncs.iter().any(|d| d.at_boundary())
        || !ev.foreign_stream.is_empty()
        || !ev.foreign_session.is_empty();
    if broken {
        return;
    }
    let e = b.exchange;
    let n = ev.cut.after.len();
    let first_text = ev
        .first_id
        .as_deref()
        .map(|i| format!(", first id {i}"))
        .unwrap_or_default();
    let head = format!(
        "The resumption from Last-Event-ID {} (GET in frame {}, flow {})",
        b.leid(),
        e.frame(),
        flow_id(e)
    );
    let detail = if ev.ids.goes_on.is_none() && !ev.cut.app() {
        format!("{head} delivered {n} event(s){first_text} with nothing that contradicts a continuation; the ids cannot show order and no application sequence came before the cut, so the continuation is not shown either.")
    } else {
        // (A loss after the boundary, inside the resumed connection, is its own finding.)
        let later = if b.inner_gap || verdict::gaps(out) {
            "; what went missing later on the resumed connection, past the cursor, is reported on its own"
        } else {
            ""
        };
        format!("{head} continued the stream with {n} event(s){first_text}{later}.")
    };
    let at = ev.first.or(ev.cut.after.first().copied());
    let mut f = b
        .finding(Kind::ResumeOk, Severity::Info, at, detail)
        .cite(e.flow_index, e.frame());
    f.observed = ev.first_id.clone();
    out.push(Found::new(f, Cause::Continued));
}
