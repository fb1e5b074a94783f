//! `stale_session_reuse`: after the server refused a session as unknown (404, or a status it
//! uses instead: [`crate::detect::facts::refusals`]; to any request but a DELETE, and before
//! the client's own successful DELETE), the client kept sending requests from the same address
//! with the dead `Mcp-Session-Id` (MCP 2025-03-26 … 2025-11-25 "Session Management": it MUST
//! start a new session). Those requests were lost: the error loop of python-sdk #1676 /
//! typescript-sdk #1708 and #1476.
//!
//! - A warning also when the client re-initialised later: the requests before it failed; the
//!   detail names the re-initialisation.
//! - Not when a later request with that id got a 2xx: the session was alive somewhere
//!   (`session_refused`).

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::{flow_id, Finding, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::StaleSessionReuse,
    severities: &[Severity::Warning],
    summary: "After the server said its session was gone (404), the client kept sending requests with the dead session id.",
    checks: &[Check::Capture(check)],
};

fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let exchanges = ctx.exchanges;
    for dead in &ctx.dead {
        let Some(&first) = dead.stale.first() else {
            continue;
        };
        let (d, e) = (&exchanges[dead.dead], &exchanges[first]);
        let mut statuses: Vec<u16> = dead.stale.iter().map(|&x| exchanges[x].status()).collect();
        statuses.sort_unstable();
        statuses.dedup();
        let statuses: Vec<String> = statuses
            .iter()
            .map(|&c| match c {
                0 => "none".to_string(),
                c => c.to_string(),
            })
            .collect();
        let reinit = dead.reinit.map(|x| &exchanges[x]);
        let tail = match reinit {
            Some(r) => format!("; it re-initialised only in frame {}", r.frame()),
            None => " and never re-initialised in the capture".to_string(),
        };
        let mut f = Finding::at_exchange(
            ctx.label(dead.session),
            Kind::StaleSessionReuse,
            Severity::Warning,
            e,
            format!(
                "The server answered {} for session {} in frame {} (flow {}), yet the client sent {} more request(s) with that session id from frame {} (answered {}){tail}.",
                d.status(),
                dead.id,
                d.frame_response.unwrap_or(0),
                flow_id(d),
                dead.stale.len(),
                e.frame(),
                statuses.join("/"),
            ),
        )
        .cite(d.flow_index, d.frame_response.unwrap_or(0))
        .cite(e.flow_index, e.frame());
        if let Some(r) = reinit {
            f.add_cite(r.flow_index, r.frame());
        }
        f.expected = Some(format!(
            "initialize without Mcp-Session-Id after the {}",
            d.status()
        ));
        f.observed = Some(format!(
            "{} request(s) with the dead session id",
            dead.stale.len()
        ));
        out.push(f);
    }
}
