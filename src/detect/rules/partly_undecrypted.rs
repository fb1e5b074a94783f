//! `partly_undecrypted`: a session's exchanges went to a server that, within the session's time
//! span, also carried TLS connections whose application data was not decrypted (no secrets for
//! them, or records that did not open: [`crate::tls::Decrypted`]). Part of the session may be
//! inside them, so nothing seen shows it whole: its verdict is `unverifiable`, not `intact`.
//!
//! - Server: the address and port of the session's exchanges ([`crate::http::Exchange::server`]).
//! - Time span: the session's, as the sessions table gives it (first exchange's start to the
//!   last exchange's end); a connection overlaps it when its application-data records, first to
//!   last, do. A session whose `initialize` is not among its exchanges may have begun earlier:
//!   its span is open at the start ([`crate::mcp::is_initialize`]).
//! - One finding per session, at the first such connection's first application-data record;
//!   the detail names every such connection. Captures without TLS never have one.

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::{Finding, Kind, Severity};
use crate::tcp::FlowId;
use crate::tls::FlowTls;
use std::collections::{BTreeMap, BTreeSet};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::PartlyUndecrypted,
    severities: &[Severity::Info],
    summary: "A session's server carried, during the session, TLS connections whose application data was not decrypted: part of the session may be in them, so it cannot be shown whole.",
    checks: &[Check::Capture(check)],
};

fn check(ctx: &Context, out: &mut Vec<Finding>) {
    // By server, so that each session looks up only its own servers' connections.
    let mut hidden: BTreeMap<(std::net::IpAddr, u16), Vec<&FlowTls>> = BTreeMap::new();
    for t in ctx.tls.iter().filter(|t| t.undecrypted()) {
        if let Some(sv) = t.server {
            hidden.entry(sv).or_default().push(t);
        }
    }
    if hidden.is_empty() {
        return;
    }
    for (si, s) in ctx.model.sessions.iter().enumerate() {
        let ex = || s.exchanges.iter().map(|&x| &ctx.exchanges[x]);
        let servers: BTreeSet<_> = ex().filter_map(|e| e.server).collect();
        let (Some(first), Some(hi)) = (
            ex().map(|e| e.ts()).min(),
            ex().filter_map(|e| e.ts_end.or(e.ts_request)).max(),
        ) else {
            continue;
        };
        let opened = ex().any(crate::mcp::is_initialize);
        let lo = if opened { first } else { i64::MIN };
        let mut during: Vec<&FlowTls> = servers
            .iter()
            .filter_map(|sv| hidden.get(sv))
            .flatten()
            .copied()
            .filter(|t| match (t.first_app, t.last_app) {
                (Some((first, _)), Some((last, _))) => first <= hi && last >= lo,
                _ => false,
            })
            .collect();
        if during.is_empty() {
            continue;
        }
        during.sort_by_key(|t| (t.first_app, t.flow_index));
        out.push(finding(ctx.label(si), &during, opened));
    }
}

/// The finding of session `label` over the connections `during` (at least one, in order);
/// `opened`: its `initialize` was seen.
fn finding(label: String, during: &[&FlowTls], opened: bool) -> Finding {
    let first = during[0];
    let (ts, frame) = first.first_app.unwrap_or((0, 0));
    let named: Vec<String> = during
        .iter()
        .map(|t| {
            let (ip, port) = t.server.map_or((None, 0), |(i, p)| (Some(i), p));
            format!(
                "{} to {}:{port} ({}, {} application-data record(s), frames {}–{})",
                FlowId(t.flow_index),
                ip.map_or("?".into(), |i| i.to_string()),
                t.decrypted().as_str(),
                t.app_records,
                t.first_app.map_or(0, |a| a.1),
                t.last_app.map_or(0, |a| a.1),
            )
        })
        .collect();
    let detail = format!(
        "{}, {} TLS connection(s) to the same server carried application data that was not decrypted: {}. Requests, responses or events of the session may be inside them (no_keys: no secrets for the connection; failed: records did not open with them), so the session cannot be shown whole.",
        if opened {
            "While the session's exchanges went to its server"
        } else {
            "Up to the session's last exchange with its server (its initialize is not seen: it may have begun earlier)"
        },
        during.len(),
        named.join("; ")
    );
    let mut f = Finding {
        expected: Some("every connection to the session's server read".into()),
        observed: Some(format!(
            "{} TLS connection(s) to it not decrypted during the session",
            during.len()
        )),
        ..Finding::at_frame(
            label,
            Kind::PartlyUndecrypted,
            Severity::Info,
            (ts, first.flow_index, frame),
            detail,
        )
    };
    for t in during {
        for (_, fr) in [t.first_app, t.last_app].into_iter().flatten() {
            f.add_cite(t.flow_index, fr);
        }
    }
    f
}
