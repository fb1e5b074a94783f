//! `resume_rejected`: the server answered a resumption GET with an error status (or a
//! redirect the client did not follow). The loss is loud: the client knows it must
//! re-establish its state (MCP 2025-11-25 "Resumability and Redelivery").

use super::{Check, Found, Rule};
use crate::detect::context::Context;
use crate::detect::facts::boundary::{Boundary, Opening};
use crate::detect::{flow_id, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::ResumeRejected,
    severities: &[Severity::Info],
    summary: "The server refused the resumption with an error status: a loud loss, which the client can act on.",
    checks: &[Check::Resumption(check)],
};

fn check(_: &Context, b: &Boundary, out: &mut Vec<Found>) {
    let Opening::Refused { status } = b.opening else {
        return;
    };
    let e = b.exchange;
    let mut f = b.finding(
        Kind::ResumeRejected,
        Severity::Info,
        None,
        format!(
            "The server answered the resumption GET (frame {}, flow {}) with Last-Event-ID {} by HTTP {} in frame {}: the loss is loud, the client must re-establish.",
            e.frame(),
            flow_id(e),
            b.leid(),
            status,
            e.frame_response.unwrap_or(0)
        ),
    )
    .at_response(e)
    .cite(e.flow_index, e.frame())
    .cite(e.flow_index, e.frame_response.unwrap_or(0));
    f.observed = Some(format!("HTTP {status}"));
    out.push(Found {
        finding: f,
        cause: None,
    });
}
