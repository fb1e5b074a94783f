//! `buffered_delivery`: a proxy that holds an SSE response and releases it in bursts (nginx
//! `proxy_buffering`, java-sdk PR #848; MCP 2026-07-28 "Streamable HTTP", "Receiving Messages"
//! advises `X-Accel-Buffering: no`). Judged only where the capture holds both legs of the
//! response: the same events seen upstream spread out, and downstream late and together.
//!
//! `backend_switch`: a resumption served by another backend than the connection that delivered
//! its `Last-Event-ID` (replicas without sticky routing or a shared event store:
//! PrefectHQ/fastmcp #482, java-sdk #332) — the explanation of most forks.

use super::{flow_id, Finding, ResumptionResult, Severity, Verdict};
use crate::http::{EventRec, Exchange};
use crate::mcp::Model;
use crate::mcp::Resumption;

/// Events in one downstream burst that make a finding.
const MIN_BURST: usize = 3;
/// Upstream spread of a burst's events, µs: they were produced apart.
const MIN_SPREAD_US: i64 = 200_000;
/// Delay of the burst's oldest event behind its upstream copy, µs: "far behind production".
const MIN_LAG_US: i64 = 500_000;

fn messages(e: &Exchange) -> Vec<EventRec<'_>> {
    e.events.iter().filter(|ev| ev.carries_data()).collect()
}

/// `buffered_delivery` (warning): a client-facing SSE response and its backend hop
/// ([`crate::mcp::hops`]) carry the same events in the same order; on the client-facing leg at least three events
/// arrive in one frame although upstream they were at least 0.2 s apart, and the oldest of them
/// arrives at least 0.5 s after it left the server; neither leg's response has
/// `X-Accel-Buffering: no` (nginx strips it from the downstream response).
pub(super) fn buffered_delivery(model: &Model, exchanges: &[Exchange], out: &mut Vec<Finding>) {
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
        "buffered_delivery",
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
    .at_event(&md[s]);
    f.request_id = super::streams::first_request_id(d);
    f.expected = Some("events forwarded as the server sends them".into());
    f.observed = Some(format!(
        "{} events in one burst, up to {} ms late",
        e - s,
        ms(max_lag)
    ));
    out.push(f);
}

/// `backend_switch`: resumption `r` was served by a backend other than the one that delivered its
/// `Last-Event-ID` (both known from backend hops or headers, [`crate::mcp::hops`]). A warning; an
/// error when the resumption forked or lost events. The findings the resumption's own checks
/// added (from index `first` of `out`) that report a fork also name both backends.
pub(super) fn backend_switch(
    model: &Model,
    exchanges: &[Exchange],
    r: &Resumption,
    result: &ResumptionResult,
    first: usize,
    out: &mut Vec<Finding>,
) {
    let Some((cx, _)) = r.cursor else { return };
    let (Some(now), Some(before)) = (model.backend(r.exchange), model.backend(cx)) else {
        return;
    };
    if !different_backends(now, before) {
        return;
    }
    let e = &exchanges[r.exchange];
    let c = &exchanges[cx];
    let tail = format!(
        " The resumption was served by backend {now}; the stream's events up to Last-Event-ID {} came from backend {before}.",
        r.last_event_id
    );
    for f in out[first..].iter_mut() {
        if matches!(
            f.kind,
            "id_regression"
                | "id_restart"
                | "missing_event_id"
                | "id_gap"
                | "app_seq_desync"
                | "suspect_terminal"
        ) {
            f.detail.push_str(&tail);
        }
    }
    let broken = matches!(result.verdict, Verdict::Forked | Verdict::Gap);
    // The resumption's own checks found events the client already had delivered again: the ids
    // went on from L, but not as the log the client had read (a backend serving its own log
    // from a cursor another one minted, as after a second reconnect into a fork:
    // docs/resumption.md, "Forks").
    let repeated = out[first..].iter().any(|f| f.kind == "duplicate_delivery");
    let mut f = Finding::at_exchange(
        model.sessions[r.session].label(),
        "backend_switch",
        if broken { Severity::Error } else { Severity::Warning },
        e,
        format!(
            "The resumption GET (frame {}, flow {}) with Last-Event-ID {} was served by backend {now}, but the connection that delivered that event (flow {}, from frame {}) was served by backend {before}{}.",
            e.frame(),
            flow_id(e),
            r.last_event_id,
            flow_id(c),
            c.frame(),
            match result.verdict {
                Verdict::Forked => ": the other backend did not hold the stream's log and forked it",
                Verdict::Gap => ": events were lost or fabricated across the switch",
                Verdict::Resumed if result.continuity_unshown => {
                    "; nothing contradicts a continuation, but nothing shows one either"
                }
                Verdict::Resumed if repeated => {
                    "; its ids went on after that event, but it delivered again events the client already had"
                }
                Verdict::Resumed => "; the log continued",
                Verdict::Rejected => ", which refused it",
                Verdict::Unverifiable => "",
            }
        ),
    );
    f.expected = Some(format!("backend {before}"));
    f.observed = Some(format!("backend {now}"));
    out.push(f);
}

/// `lost_in_transit` (error): events a backend hop of an SSE response carried that neither the
/// client-facing hop nor any other client-facing exchange of the session delivered (no replay made
/// up for them) — lost between the hops, e.g. in a proxy that cut the client's connection while
/// the backend went on. The finding names the hop where they vanished. Not judged when the
/// client-facing copy has capture gaps.
pub(super) fn lost_in_transit(model: &Model, exchanges: &[Exchange], out: &mut Vec<Finding>) {
    use crate::hash::{FastMap as HashMap, FastSet as HashSet};
    let message = |ev: &EventRec| ev.carries_data();
    let mut delivered: HashMap<usize, HashSet<u64>> = HashMap::default();
    for (a, hops) in model.hops.backend_hops.iter().enumerate() {
        let ea = &exchanges[a];
        let Some(&backend) = hops.last() else {
            continue;
        };
        if !ea.is_sse || ea.resp_gap || ea.open_at_capture_end {
            continue;
        }
        let si = model.exchange_session[a];
        let seen = delivered.entry(si).or_insert_with(|| {
            model.sessions[si]
                .exchanges
                .iter()
                .flat_map(|&x| exchanges[x].events.iter())
                .filter(message)
                .map(|ev| ev.data_hash)
                .collect()
        });
        let lost: Vec<EventRec> = exchanges[backend]
            .events
            .iter()
            .filter(message)
            .filter(|ev| !seen.contains(&ev.data_hash))
            .collect();
        let Some(&first) = lost.first() else { continue };
        // The hop nearest the client that still carried the first lost event.
        let chain: Vec<usize> = std::iter::once(a).chain(hops.iter().copied()).collect();
        let last_seen = chain
            .iter()
            .copied()
            .find(|&h| {
                exchanges[h]
                    .events
                    .iter()
                    .any(|ev| ev.data_hash == first.data_hash && !ev.sse.truncated)
            })
            .unwrap_or(backend);
        let pos = chain.iter().position(|&h| h == last_seen).unwrap_or(0);
        let toward_client = chain[pos.saturating_sub(1)];
        let b = &exchanges[backend];
        let mut f = Finding::at_exchange(
            model.sessions[si].label(),
            "lost_in_transit",
            Severity::Error,
            b,
            format!(
                "{} event(s) left backend {} on flow {} (first in frame {}) but never reached the client: the last hop that carried them is flow {}, the next hop toward the client (flow {}) did not, and no other stream of the session delivered them.",
                lost.len(),
                model.backend(a).unwrap_or("?"),
                flow_id(b),
                first.sse.frame_first,
                flow_id(&exchanges[last_seen]),
                flow_id(&exchanges[toward_client]),
            ),
        )
        .at_event(&first);
        f.request_id = super::streams::first_request_id(ea);
        f.expected = Some("every event the backend sent reaches the client".into());
        f.observed = Some(format!("{} event(s) lost between hops", lost.len()));
        out.push(f);
    }
}

/// A backend label split into (address, name): `ip:port (name)`, `ip:port` or `name`
/// ([`crate::mcp::hops`]).
fn backend_parts(label: &str) -> (Option<&str>, Option<&str>) {
    if let Some((addr, rest)) = label.split_once(" (") {
        return (Some(addr), rest.strip_suffix(')'));
    }
    if label.parse::<std::net::SocketAddr>().is_ok() {
        (Some(label), None)
    } else {
        (None, Some(label))
    }
}

/// Whether two backend labels name different backends: names compared when both have one, else
/// addresses; a name against a bare address proves nothing.
pub(super) fn different_backends(a: &str, b: &str) -> bool {
    let ((aa, an), (ba, bn)) = (backend_parts(a), backend_parts(b));
    match (an, bn, aa, ba) {
        (Some(x), Some(y), ..) => x != y,
        (_, _, Some(x), Some(y)) => x != y,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::different_backends;

    #[test]
    fn backend_labels() {
        assert!(different_backends("b1", "b2"));
        assert!(!different_backends("b1", "127.0.0.1:3301 (b1)"));
        assert!(different_backends(
            "127.0.0.1:3301 (b1)",
            "127.0.0.1:3302 (b2)"
        ));
        assert!(different_backends("127.0.0.1:3301", "127.0.0.1:3302"));
        assert!(!different_backends("b1", "127.0.0.1:3302"));
    }
}
