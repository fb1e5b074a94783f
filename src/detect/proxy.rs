//! `buffered_delivery`: a proxy that holds an SSE response and releases it in bursts (the
//! project's wire reference §7 #16: nginx `proxy_buffering`; MCP 2026-07-28 "Streamable HTTP"
//! advises `X-Accel-Buffering: no`). Judged only where the capture holds both legs of the
//! response: the same events seen upstream spread out, and downstream late and together.

use std::collections::HashMap;

use super::streams::mirrored;
use super::{flow_id, Finding, Severity};
use crate::http::{EventRec, Exchange};
use crate::mcp::Model;

/// Events in one downstream burst that make a finding.
const MIN_BURST: usize = 3;
/// Upstream spread of a burst's events, µs: they were produced apart.
const MIN_SPREAD_US: i64 = 200_000;
/// Delay of the burst's oldest event behind its upstream copy, µs: "far behind production".
const MIN_LAG_US: i64 = 500_000;

fn messages(e: &Exchange) -> Vec<&EventRec> {
    e.events
        .iter()
        .filter(|ev| !ev.sse.truncated && ev.data_len > 0 && !ev.priming)
        .collect()
}

/// `buffered_delivery` (warning): two SSE responses on different flows carry the same events in
/// the same order (a proxy's upstream and downstream legs); on the later leg at least three events
/// arrive in one frame although upstream they were at least 0.2 s apart, and the oldest of them
/// arrives at least 0.5 s after it left the server; neither leg's response has
/// `X-Accel-Buffering: no` (nginx strips it from the downstream response).
pub(super) fn buffered_delivery(model: &Model, exchanges: &[Exchange], out: &mut Vec<Finding>) {
    // Candidate pairs: SSE responses keyed by their first three message events.
    let mut by_start: HashMap<[u64; 3], Vec<usize>> = HashMap::new();
    for (xi, e) in exchanges.iter().enumerate() {
        if !e.is_sse {
            continue;
        }
        let m = messages(e);
        if m.len() >= MIN_BURST {
            by_start
                .entry([m[0].data_hash, m[1].data_hash, m[2].data_hash])
                .or_default()
                .push(xi);
        }
    }
    let mut groups: Vec<Vec<usize>> = by_start.into_values().filter(|v| v.len() > 1).collect();
    groups.sort_unstable();
    for g in groups {
        for (i, &a) in g.iter().enumerate() {
            for &b in &g[i + 1..] {
                let (ea, eb) = (&exchanges[a], &exchanges[b]);
                if ea.flow_index == eb.flow_index
                    || model.exchange_session[a] != model.exchange_session[b]
                    || !mirrored_request(ea, eb)
                {
                    continue;
                }
                check_pair(model, exchanges, a, b, out);
            }
        }
    }
}

/// Same request line and `Last-Event-ID`, sent within 1 s (a proxy forwards at once).
fn mirrored_request(a: &Exchange, b: &Exchange) -> bool {
    let head = |e: &Exchange| {
        e.request
            .as_ref()
            .map(|h| (h.method.clone(), h.target.clone()))
    };
    head(a) == head(b)
        && a.req_header("last-event-id") == b.req_header("last-event-id")
        && (a.ts() - b.ts()).abs() < 1_000_000
        || mirrored(a, b)
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
    let lag_sum: i64 = (0..n).map(|k| mb[k].sse.ts - ma[k].sse.ts).sum();
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
        let spread = mu[j - 1].sse.ts - mu[k].sse.ts;
        let lag = md[k].sse.ts - mu[k].sse.ts;
        if j - k >= MIN_BURST && spread >= MIN_SPREAD_US && lag >= MIN_LAG_US
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
    let max_lag = (0..n).map(|k| md[k].sse.ts - mu[k].sse.ts).max().unwrap_or(0);
    let u = &exchanges[up];
    let ms = |us: i64| us / 1000;
    let mut f = Finding::at_exchange(
        model.sessions[model.exchange_session[down]].label(),
        "buffered_delivery",
        Severity::Warning,
        d,
        format!(
            "{} events that left the server over {} ms (flow {}, frames {}–{}) reached the client together in frame {} (flow {}), up to {} ms late; the {n} events seen on both legs arrived downstream in {bursts} burst(s), and the response has no X-Accel-Buffering: no — a proxy is buffering the stream.",
            e - s,
            ms(mu[e - 1].sse.ts - mu[s].sse.ts),
            flow_id(u),
            mu[s].sse.frame_first,
            mu[e - 1].sse.frame_first,
            md[s].sse.frame_last,
            flow_id(d),
            ms(max_lag),
        ),
    )
    .at_event(md[s]);
    f.request_id = d
        .req_messages
        .iter()
        .find(|m| m.kind == crate::jsonrpc::Kind::Request)
        .and_then(|m| m.id.clone());
    f.expected = Some("events forwarded as the server sends them".into());
    f.observed = Some(format!("{} events in one burst, up to {} ms late", e - s, ms(max_lag)));
    out.push(f);
}
