//! `cross_session_replay`: a resumed connection carried events another session received
//! first (the same data, under an id unique to its stream or session, or messages that answer
//! no request of this session): one event store shared by all sessions leaks their messages
//! (typescript-sdk #1004 / PR #2109).

use super::{Check, Found, Rule};
use crate::detect::context::Context;
use crate::detect::facts::boundary::Boundary;
use crate::detect::verdict::Cause;
use crate::detect::{flow_id, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::CrossSessionReplay,
    severities: &[Severity::Error],
    summary: "A resumption replayed another session's events: the event store leaks messages between sessions.",
    checks: &[Check::Resumption(check)],
};

fn check(ctx: &Context, b: &Boundary, out: &mut Vec<Found>) {
    let Some(ev) = b.events() else { return };
    let Some(&(at, seen)) = ev.foreign_session.first() else {
        return;
    };
    let e = b.exchange;
    let other = ctx.label(seen.session);
    let n = ev.foreign_session.len();
    let mut f = b.finding(
        Kind::CrossSessionReplay,
        Severity::Error,
        Some(at),
        format!(
            "The resumption from Last-Event-ID {} (GET in frame {}, flow {}) replayed {n} event(s) of session {other}, starting in frame {} with the same data {} delivered to that session in frame {}: the event store leaks one session's messages into another.",
            b.leid(),
            e.frame(),
            flow_id(e),
            at.sse.frame_first,
            seen.id.as_deref().map(|i| format!("(id {i})")).unwrap_or_default(),
            seen.frame
        ),
    )
    .cite(e.flow_index, e.frame())
    .cite(e.flow_index, at.sse.frame_first)
    .cite(seen.flow_index, seen.frame);
    f.expected = Some("only this session's events".into());
    f.observed = Some(format!("{n} event(s) of session {other}"));
    out.push(Found::new(f, Cause::OtherSession));
}
