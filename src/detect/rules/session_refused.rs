//! `session_refused`: requests carrying a session's id were refused as for an unknown session
//! (404, or a status a server uses instead) while other requests of the same session were
//! served: the session lives on one server and the requests reach others — replicas with
//! in-memory sessions behind a balancer without session affinity
//! (modelcontextprotocol/modelcontextprotocol PR #325, PrefectHQ/fastmcp #482). Each refused
//! request is lost to the client, and a client that re-initialises on 404 lands on another
//! replica again.
//!
//! - Only where something carrying the id was served after the first refusal: a session no
//!   one serves any more is `stale_session_reuse`.
//! - The refusing and serving backends are named where the capture knows them (backend hops,
//!   backend headers).
//! - Refusals that alternate with successes are the mark of a balancer spreading the session's
//!   requests: the detail says so.

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::refusals::{said, Refusals};
use crate::detect::{flow_id, Finding, Kind, Severity};
use crate::http::Exchange;

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::SessionRefused,
    severities: &[Severity::Error],
    summary: "Some requests of a live session were refused as for an unknown session while others were served: its requests reach servers that do not have it.",
    checks: &[Check::Capture(check)],
};

fn check(ctx: &Context, out: &mut Vec<Finding>) {
    for r in ctx.refusals.iter().filter(|r| !r.served_after.is_empty()) {
        out.push(finding(ctx, r));
    }
}

/// Requests named by their JSON-RPC methods (or the HTTP method when they carry none), with
/// how many of each, in order of first appearance: `tools/list ×7, notifications/initialized`.
pub(crate) fn methods(exchanges: &[Exchange], xs: &[usize]) -> String {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for &x in xs {
        let e = &exchanges[x];
        let names: Vec<&str> = e
            .rpc
            .request
            .iter()
            .filter_map(|m| m.method.as_deref())
            .collect();
        let name = if names.is_empty() {
            e.method().to_string()
        } else {
            names.join("+")
        };
        match seen.iter_mut().find(|(n, _)| *n == name) {
            Some((_, k)) => *k += 1,
            None => seen.push((name, 1)),
        }
    }
    seen.iter()
        .map(|(n, k)| match k {
            1 => n.clone(),
            k => format!("{n} ×{k}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The distinct backends of exchanges `xs` (in order), when the capture knows them.
fn backends<'a>(ctx: &'a Context, xs: &[usize]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for &x in xs {
        if let Some(b) = ctx.model.backend(x) {
            if !out.contains(&b) {
                out.push(b);
            }
        }
    }
    out
}

/// How often the session's answers switch between refused and served, in time order.
fn switches(r: &Refusals, exchanges: &[Exchange]) -> usize {
    let mut all: Vec<(i64, bool)> = r
        .refused
        .iter()
        .map(|&x| (exchanges[x].ts(), true))
        .chain(r.served_after.iter().map(|&x| (exchanges[x].ts(), false)))
        .collect();
    all.sort_unstable();
    all.windows(2).filter(|w| w[0].1 != w[1].1).count()
}

fn finding(ctx: &Context, r: &Refusals) -> Finding {
    let exchanges = ctx.exchanges;
    let first = &exchanges[r.refused[0]];
    let statuses = {
        let mut v: Vec<u16> = r.refused.iter().map(|&x| exchanges[x].status()).collect();
        v.sort_unstable();
        v.dedup();
        v.iter().map(u16::to_string).collect::<Vec<_>>().join("/")
    };
    let said = said(first).map(|t| format!(" \"{t}\"")).unwrap_or_default();
    let by = |xs: &[usize]| match backends(ctx, xs).as_slice() {
        [] => String::new(),
        bs => format!(" by {}", bs.join(", ")),
    };
    let cause = if switches(r, exchanges) >= 2 {
        "refusals alternate with successes: the session's requests are spread over servers that do not share it (no session affinity)"
    } else {
        "the session lives on a server these requests did not reach"
    };
    let mut f = Finding::at_exchange(
        ctx.label(r.session),
        Kind::SessionRefused,
        Severity::Error,
        first,
        format!(
            "{} request(s) of session {} ({}) were refused HTTP {statuses}{said}{}, the first in frame {} (flow {}), while {} other(s) ({}) were served{}; {cause}, and each refused request is lost to the client.",
            r.refused.len(),
            r.id,
            methods(exchanges, &r.refused),
            by(&r.refused),
            first.frame_response.unwrap_or(first.frame()),
            flow_id(first),
            r.served.len(),
            methods(exchanges, &r.served),
            by(&r.served),
        ),
    )
    .at_response(first)
    .cite(first.flow_index, first.frame_response.unwrap_or(first.frame()));
    f.request_id = first
        .rpc
        .request
        .iter()
        .find_map(|m| m.id.as_deref().map(str::to_string));
    f.expected = Some("every request of a live session served".into());
    f.observed = Some(format!(
        "{} refused, {} served",
        r.refused.len(),
        r.served.len()
    ));
    f
}
