//! `nonstandard_session_status`: a server refused a request carrying a session id it does not
//! know with another status than 404. MCP 2025-03-26 … 2025-11-25 "Session Management": the
//! server MUST answer 404, and the client MUST start a new session on 404 — on 400 (the Python
//! SDK before 1.26, python-sdk #1004; the TypeScript example server, typescript-sdk #389) a
//! client keeps its dead session and every later request fails.
//!
//! - A 400 or 410 counts when its body names a session, or when two or more requests were
//!   refused so and nothing carrying the id was served after; a 401 or 403 only by its body.
//! - Reported once per session, at the first such answer, whichever client it had.

use super::session_refused::methods;
use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::refusals::said;
use crate::detect::{flow_id, Finding, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::NonstandardSessionStatus,
    severities: &[Severity::Warning],
    summary: "The server refused an unknown session with another status than 404, so the client is not told to start a new session.",
    checks: &[Check::Capture(check)],
};

fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let exchanges = ctx.exchanges;
    for r in &ctx.refusals {
        let Some(x) = r.nonstandard else { continue };
        let e = &exchanges[x];
        let alike: Vec<usize> = r
            .refused
            .iter()
            .copied()
            .filter(|&y| exchanges[y].status() == e.status())
            .collect();
        let said = said(e).map(|t| format!(" \"{t}\"")).unwrap_or_default();
        let mut f = Finding::at_exchange(
            ctx.label(r.session),
            Kind::NonstandardSessionStatus,
            Severity::Warning,
            e,
            format!(
                "The server refused session {} with HTTP {}{said} in frame {} (flow {}), {} request(s) in all ({}), where MCP \"Session Management\" requires 404 for a session it does not have: a client starts a new session on 404 only, so this one stays with a dead session.",
                r.id,
                e.status(),
                e.frame_response.unwrap_or(e.frame()),
                flow_id(e),
                alike.len(),
                methods(exchanges, &alike),
            ),
        )
        .at_response(e)
        .cite(e.flow_index, e.frame_response.unwrap_or(e.frame()));
        f.expected = Some("HTTP 404 for an unknown session".into());
        f.observed = Some(format!("HTTP {}", e.status()));
        out.push(f);
    }
}
