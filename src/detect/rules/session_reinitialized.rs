//! `session_reinitialized`: after a 404 (or a status a server uses instead) for its session the client sent `initialize` from the
//! same address, obtained another session id, and stopped using the dead one: the correct
//! recovery (MCP 2025-03-26 … 2025-11-25 "Session Management"). Reported on the new session,
//! once per `initialize`.

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::{flow_id, Finding, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::SessionReinitialized,
    severities: &[Severity::Info],
    summary: "After a 404 the client started a new session and stopped using the old id: the correct recovery.",
    checks: &[Check::Capture(check)],
};

fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    for dead in ctx.dead.iter().filter(|d| d.first_link) {
        let Some(x) = dead.reinit else { continue };
        let (d, e) = (&exchanges[dead.dead], &exchanges[x]);
        let new = &model.sessions[model.exchange_session[x]];
        let mut f = Finding::at_exchange(
            new.label(),
            Kind::SessionReinitialized,
            Severity::Info,
            e,
            format!(
                "The client re-initialised in frame {} (flow {}) and obtained session {}, {} ms after the server answered {} for session {} in frame {}.",
                e.frame(),
                flow_id(e),
                new.label(),
                e.ts().saturating_sub(dead.t404) / 1000,
                d.status(),
                dead.id,
                d.frame_response.unwrap_or(0)
            ),
        )
        .cite(e.flow_index, e.frame())
        .cite(d.flow_index, d.frame_response.unwrap_or(0));
        f.request_id = e
            .rpc
            .request
            .iter()
            .find(|m| m.method.as_deref() == Some("initialize"))
            .and_then(|m| m.id.as_deref().map(str::to_string));
        f.expected = Some(format!("a new session replacing {}", dead.id));
        f.observed = Some(new.label());
        out.push(f);
    }
}
