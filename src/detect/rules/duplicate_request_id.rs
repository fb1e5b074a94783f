//! `duplicate_request_id`: two requests of one session were in flight at once with the same
//! JSON-RPC id ([`crate::detect::facts::crossed`]). JSON-RPC 2.0 §4 makes the id the one thing
//! that pairs a response with its request, and MCP "Requests" forbids reusing it within a
//! session; a server that routes by id crosses the two (typescript-sdk #2433, python-sdk
//! #3060): the earlier request's progress goes to the later one's stream and its response is
//! never written.
//!
//! - Only in sessions with an id: without one, independent clients reuse ids.
//! - Not for an id reused after its request was answered, or its stream was over.
//! - The lost response is `lost_response`'s: each of the two is answered on its own stream or
//!   not at all.

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::{flow_id, Finding, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::DuplicateRequestId,
    severities: &[Severity::Error],
    summary: "Two requests of one session were in flight at once with the same JSON-RPC id, so the server could not tell their messages apart.",
    checks: &[Check::Capture(check)],
};

fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let exchanges = ctx.exchanges;
    for c in &ctx.crossed {
        let (a, b) = (&exchanges[c.first], &exchanges[c.second]);
        let method = |e: &crate::http::Exchange| {
            e.rpc
                .request
                .iter()
                .find(|m| m.id.as_deref() == Some(c.id))
                .and_then(|m| m.method.as_deref())
                .unwrap_or("?")
                .to_string()
        };
        let mut what = Vec::new();
        if c.crossed_progress > 0 {
            what.push(format!(
                "{} progress notification(s) of the first came on the second's stream",
                c.crossed_progress
            ));
        }
        if !c.first_answered {
            what.push("the first never got its response".to_string());
        }
        let outcome = match what.is_empty() {
            true => String::new(),
            false => format!(": {}", what.join(", and ")),
        };
        let mut f = Finding::at_exchange(
            ctx.label(c.session),
            Kind::DuplicateRequestId,
            Severity::Error,
            b,
            format!(
                "Two requests of session {} were in flight at once with JSON-RPC id {}: {} in frame {} (flow {}) and {} in frame {} (flow {}), sent {} ms later, before the first was answered{outcome}.",
                ctx.label(c.session),
                c.id,
                method(a),
                a.frame(),
                flow_id(a),
                method(b),
                b.frame(),
                flow_id(b),
                b.ts().saturating_sub(a.ts()) / 1000,
            ),
        )
        .cite(a.flow_index, a.frame())
        .cite(b.flow_index, b.frame());
        f.request_id = Some(c.id.to_string());
        f.expected = Some("one request in flight per id".into());
        f.observed = Some(format!("two requests with id {}", c.id));
        out.push(f);
    }
}
