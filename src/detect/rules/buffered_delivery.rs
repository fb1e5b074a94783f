//! `buffered_delivery`: a proxy holds an SSE response and releases it in bursts (nginx
//! `proxy_buffering`, java-sdk PR #848; MCP 2026-07-28 "Streamable HTTP", "Receiving Messages"
//! advises `X-Accel-Buffering: no`). Judged only where the capture holds both legs of the
//! response: the same events seen upstream spread out, and downstream late and together.
//!
//! - A client-facing SSE response and its backend hop ([`crate::mcp::hops`]) carry the same
//!   events in the same order.
//! - On the client-facing leg at least [`MIN_BURST`] events arrive in one frame although
//!   upstream they were [`MIN_SPREAD_US`] apart, the oldest [`MIN_LAG_US`] after it left the
//!   server.
//! - Not when either leg's response has `X-Accel-Buffering: no` (nginx strips it from the
//!   downstream response).

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::streams::first_request_id;
use crate::detect::{flow_id, Finding, Kind, Severity};
use crate::http::{EventRec, Exchange};
use crate::mcp::Model;

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::BufferedDelivery,
    severities: &[Severity::Warning],
    summary: "A proxy held the stream: events the server sent apart reached the client together and late.",
    checks: &[Check::Capture(check)],
};

/// Events in one downstream burst that make a finding.
const MIN_BURST: usize = 3;
/// Upstream spread of a burst's events, µs: they were produced apart.
const MIN_SPREAD_US: i64 = 200_000;
/// Delay of the burst's oldest event behind its upstream copy, µs: "far behind production".
const MIN_LAG_US: i64 = 500_000;

/// The events of `e` that carry data.
fn messages(e: &Exchange) -> Vec<EventRec<'_>> {
    e.sse.events.iter().filter(|ev| ev.carries_data()).collect()
}

/// Over the whole capture (the module's rule).
fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    for (a, hops) in model.hops.backend_hops.iter().enumerate() {
        if !exchanges[a].is_sse {
            continue;
        }
        // The hop nearest the client that carries the events.
        if let Some(&b) = hops.iter().find(|&&b| exchanges[b].is_sse) {
            check_pair(model, exchanges, a, b, out);
        }
    }
}

fn check_pair(model: &Model, exchanges: &[Exchange], a: usize, b: usize, out: &mut Vec<Finding>) {
    let (ma, mb) = (messages(&exchanges[a]), messages(&exchanges[b]));
    let n = ma
        .iter()
        .zip(&mb)
        .take_while(|(x, y)| x.data_hash == y.data_hash && x.sse.id == y.sse.id)
        .count();
    if n < MIN_BURST {
        return;
    }
    let lag_sum: i128 = (0..n)
        .map(|k| i128::from(mb[k].sse.ts) - i128::from(ma[k].sse.ts))
        .sum();
    // Downstream is the leg whose copies arrive later.
    let (up, down, mu, md) = if lag_sum >= 0 {
        (a, b, &ma, &mb)
    } else {
        (b, a, &mb, &ma)
    };
    let d = &exchanges[down];
    // nginx consumes the header: the server's (upstream) response is where it shows.
    let accel_no = |e: &Exchange| {
        e.resp_header("x-accel-buffering")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("no"))
    };
    if accel_no(d) || accel_no(&exchanges[up]) {
        return;
    }
    // Bursts: runs of events completed by the same downstream frame.
    let mut best: Option<(usize, usize)> = None;
    let mut k = 0;
    while k < n {
        let mut j = k + 1;
        while j < n && md[j].sse.frame_last == md[k].sse.frame_last {
            j += 1;
        }
        let spread = mu[j - 1].sse.ts.saturating_sub(mu[k].sse.ts);
        let lag = md[k].sse.ts.saturating_sub(mu[k].sse.ts);
        if j - k >= MIN_BURST
            && spread >= MIN_SPREAD_US
            && lag >= MIN_LAG_US
            && best.is_none_or(|(s, e)| j - k > e - s)
        {
            best = Some((k, j));
        }
        k = j;
    }
    let Some((s, e)) = best else { return };
    let bursts = {
        let mut frames: Vec<u64> = md[..n].iter().map(|ev| ev.sse.frame_last).collect();
        frames.dedup();
        frames.len()
    };
    let max_lag = (0..n)
        .map(|k| md[k].sse.ts.saturating_sub(mu[k].sse.ts))
        .max()
        .unwrap_or(0);
    let u = &exchanges[up];
    let ms = |us: i64| us / 1000;
    let mut f = Finding::at_exchange(
        model.sessions[model.exchange_session[down]].label(),
        Kind::BufferedDelivery,
        Severity::Warning,
        d,
        format!(
            "{} events that left the server over {} ms (flow {}, frames {}–{}) reached the client together in frame {} (flow {}), up to {} ms late; the {n} events seen on both legs arrived downstream in {bursts} burst(s), and the response has no X-Accel-Buffering: no — a proxy is buffering the stream.",
            e - s,
            ms(mu[e - 1].sse.ts.saturating_sub(mu[s].sse.ts)),
            flow_id(u),
            mu[s].sse.frame_first,
            mu[e - 1].sse.frame_first,
            md[s].sse.frame_last,
            flow_id(d),
            ms(max_lag),
        ),
    )
    .at_event(&md[s])
    .cite(u.flow_index, mu[s].sse.frame_first)
    .cite(u.flow_index, mu[e - 1].sse.frame_first)
    .cite(d.flow_index, md[s].sse.frame_last);
    f.request_id = first_request_id(d);
    f.expected = Some("events forwarded as the server sends them".into());
    f.observed = Some(format!(
        "{} events in one burst, up to {} ms late",
        e - s,
        ms(max_lag)
    ));
    out.push(f);
}
