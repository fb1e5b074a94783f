//! `backend_switch`: a resumption was served by another backend than the connection that
//! delivered its `Last-Event-ID` (both known from backend hops or headers,
//! [`crate::mcp::hops`]): replicas without sticky routing or a shared event store, the
//! explanation of most forks (PrefectHQ/fastmcp #482, java-sdk #332). A warning; an error when
//! the resumption forked or lost events. The resumption's own findings of a fork or loss name
//! both backends too ([`Boundary::with_backends`]).

use super::{Check, Found, Rule};
use crate::detect::context::Context;
use crate::detect::facts::boundary::Boundary;
use crate::detect::{flow_id, Finding, Kind, ResumptionResult, Severity, Verdict};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::BackendSwitch,
    severities: &[Severity::Warning, Severity::Error],
    summary: "The resumption was served by another backend than the one that delivered its cursor.",
    checks: &[Check::Verdict(check)],
};

fn check(
    ctx: &Context,
    b: &Boundary,
    result: &ResumptionResult,
    found: &[Found],
) -> Option<Finding> {
    let (now, before) = b.switch?;
    let (cx, _) = b.resumption.cursor?;
    let (e, c) = (b.exchange, &ctx.exchanges[cx]);
    let broken = matches!(result.verdict, Verdict::Forked | Verdict::Gap);
    // The resumption's own checks found events the client already had delivered again: the ids
    // went on from L, but not as the log the client had read (a backend serving its own log
    // from a cursor another one minted, as after a second reconnect into a fork:
    // docs/resumption.md, "Forks").
    let repeated = Found::any(found, Kind::DuplicateDelivery);
    let outcome = match result.verdict {
        Verdict::Forked => ": the other backend did not hold the stream's log and forked it",
        Verdict::Gap => ": events were lost or fabricated across the switch",
        Verdict::Resumed if result.continuity_unshown => {
            "; nothing contradicts a continuation, but nothing shows one either"
        }
        Verdict::Resumed if repeated => {
            "; its ids went on after that event, but it delivered again events the client already had"
        }
        Verdict::Resumed => "; the log continued",
        Verdict::Rejected => ", which refused it",
        Verdict::Unverifiable => "",
    };
    let mut f = Finding::at_exchange(
        b.session.clone(),
        Kind::BackendSwitch,
        if broken { Severity::Error } else { Severity::Warning },
        e,
        format!(
            "The resumption GET (frame {}, flow {}) with Last-Event-ID {} was served by backend {now}, but the connection that delivered that event (flow {}, from frame {}) was served by backend {before}{outcome}.",
            e.frame(),
            flow_id(e),
            b.leid(),
            flow_id(c),
            c.frame(),
        ),
    )
    .cite(e.flow_index, e.frame())
    .cite(c.flow_index, c.frame());
    f.expected = Some(format!("backend {before}"));
    f.observed = Some(format!("backend {now}"));
    Some(f)
}
