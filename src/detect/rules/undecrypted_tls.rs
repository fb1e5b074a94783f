//! `undecrypted_tls`: TLS connections to a server carried application data that was not
//! decrypted — no secrets for them (`no_keys`), or records that did not open with the secrets
//! given (`failed`) — so whatever MCP they carried is not in any other table
//! ([`crate::tls`]).
//!
//! - One finding per server (address and port), at its first such connection; the detail counts
//!   its connections by reason and names the SNI.
//! - No session: the `session_id` is empty, the flow is the first such connection.

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::{Finding, Kind, Severity};
use crate::tls::{Decrypted, FlowTls};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::UndecryptedTls,
    severities: &[Severity::Warning],
    summary: "TLS connections to a server carried application data that was not decrypted (no key log for them, or keys that did not fit): any MCP inside them is not seen.",
    checks: &[Check::Capture(check)],
};

fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let mut by: BTreeMap<(IpAddr, u16), Vec<&FlowTls>> = BTreeMap::new();
    for t in ctx.tls {
        if t.app_records > 0 && t.decrypted() != Decrypted::Yes {
            if let Some(s) = t.server {
                by.entry(s).or_default().push(t);
            }
        }
    }
    for ((ip, port), conns) in by {
        let Some(first) = conns.iter().min_by_key(|t| (t.first_app, t.flow_index)) else {
            continue;
        };
        let (ts, frame) = first.first_app.unwrap_or((0, 0));
        let no_keys = conns
            .iter()
            .filter(|t| t.decrypted() == Decrypted::NoKeys)
            .count();
        let failed = conns.len() - no_keys;
        let mut why = Vec::new();
        if no_keys > 0 {
            why.push(format!(
                "{no_keys} without secrets in the key log (no_keys)"
            ));
        }
        if failed > 0 {
            why.push(format!(
                "{failed} whose records did not open with the secrets given (failed)"
            ));
        }
        let sni = first
            .sni
            .as_deref()
            .map(|s| format!(" (SNI {s})"))
            .unwrap_or_default();
        let records: u64 = conns.iter().map(|t| t.app_records).sum();
        let detail = format!(
            "{} TLS connection(s) to {ip}:{port}{sni} carried {records} application-data record(s) that were not decrypted: {}. Any MCP inside them is not seen; give the key log with --tls-keylog.",
            conns.len(),
            why.join(", "),
        );
        out.push(Finding {
            expected: Some("decrypted application data".into()),
            observed: Some(format!("{} TLS connection(s) not decrypted", conns.len())),
            ..Finding::at_frame(
                String::new(),
                Kind::UndecryptedTls,
                Severity::Warning,
                (ts, first.flow_index, frame),
                detail,
            )
        });
    }
}
