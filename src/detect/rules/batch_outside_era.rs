//! `batch_outside_era`: a POST carried a JSON-RPC batch (a JSON array, JSON-RPC 2.0 §6) in a
//! session whose protocol revision is not 2025-03-26, the only one that allows batches
//! (2025-06-18 removed them; the Go SDK answers 400). Reported once per session, at the first
//! batch.

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::{flow_id, Finding, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::BatchOutsideEra,
    severities: &[Severity::Info],
    summary: "A POST carried a JSON-RPC batch in a session whose protocol revision has no batches.",
    checks: &[Check::Capture(check)],
};

/// Over the whole capture (the module's rule).
fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    for s in &model.sessions {
        if matches!(
            s.era,
            crate::mcp::Era::Unknown | crate::mcp::Era::V2025_03_26
        ) {
            continue;
        }
        let batches: Vec<usize> = s
            .exchanges
            .iter()
            .copied()
            .filter(|&x| exchanges[x].rpc.request_batch && exchanges[x].method() == "POST")
            .collect();
        let Some(&first) = batches.first() else {
            continue;
        };
        let e = &exchanges[first];
        let mut f = Finding::at_exchange(
            s.label(),
            Kind::BatchOutsideEra,
            Severity::Info,
            e,
            format!(
                "The POST in frame {} (flow {}) carried a JSON-RPC batch of {} message(s) in a session of protocol revision {}, which has no batches (only 2025-03-26 allowed them){}; the server answered {}.",
                e.frame(),
                flow_id(e),
                e.rpc.request.len(),
                s.era.as_str(),
                if batches.len() > 1 { format!("; {} such POSTs in all", batches.len()) } else { String::new() },
                match e.status() { 0 => "nothing captured".to_string(), c => format!("HTTP {c}") }
            ),
        )
        .cite(e.flow_index, e.frame());
        f.expected = Some("one JSON-RPC message per POST".into());
        f.observed = Some(format!("a batch of {}", e.rpc.request.len()));
        out.push(f);
    }
}
