//! `missing_event_id`: a message on a resumed connection without an `id:` line of its own
//! (WHATWG "server-sent events": the last event ID then stays the previous one). Nothing proves
//! it continues the log, so the resumption counts as a fork (`docs/resumption.md`, "Forks").

use super::{Check, Found, Rule};
use crate::detect::context::Context;
use crate::detect::facts::boundary::Boundary;
use crate::detect::verdict::Cause;
use crate::detect::{flow_id, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::MissingEventId,
    severities: &[Severity::Error],
    summary: "A message arrived on a resumed stream without an `id:` line, so nothing proves it continues the log.",
    checks: &[Check::Resumption(check)],
};

fn check(_: &Context, b: &Boundary, out: &mut Vec<Found>) {
    let Some(at) = b.events().and_then(|ev| ev.missing_id) else {
        return;
    };
    let detail = format!(
        "The resumed stream (flow {}, frame {}) delivered a message without an id line after Last-Event-ID {}: continuity cannot be proven, so the resume must be treated as a fork.",
        flow_id(b.exchange),
        at.sse.frame_first,
        b.leid()
    );
    let mut f = b
        .finding(
            Kind::MissingEventId,
            Severity::Error,
            Some(at),
            b.with_backends(detail),
        )
        .cite(b.exchange.flow_index, at.sse.frame_first);
    f.expected = Some("an id on every event after a resume".into());
    f.observed = Some("event without id".into());
    out.push(Found::new(f, Cause::NoId));
}
