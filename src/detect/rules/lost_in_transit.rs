//! `lost_in_transit`: events a backend hop of an SSE response carried that neither the
//! client-facing hop nor any other client-facing exchange of the session delivered (no replay
//! made up for them) — lost between the hops, e.g. in a proxy that cut the client's connection
//! while the backend went on (typescript-sdk #2098). The finding names the hop where they
//! vanished. Not judged when the client-facing copy has capture gaps.
//!
//! - Events are matched by their data, counted: a notice the backend sent twice must reach
//!   the client twice, with or without event ids.
//! - Another client-facing exchange of the session makes up for one only when it delivered the
//!   same data at or after the time the backend sent it (a replay), not before.

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::streams::first_request_id;
use crate::detect::{flow_id, Finding, Kind, Severity};
use crate::hash::FastMap as HashMap;
use crate::http::{EventRec, Exchange};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::LostInTransit,
    severities: &[Severity::Error],
    summary: "Events the backend sent never reached the client: they vanished at a proxy.",
    checks: &[Check::Capture(check)],
};

/// Where a session's client-facing exchanges delivered each event data: data hash → the
/// (exchange, time) of every delivery.
type Deliveries = HashMap<u64, Vec<(usize, i64)>>;

/// The events of backend hop `backend` that its client-facing hop `a` did not deliver, counted
/// by data (an event the backend sent twice must arrive twice), and that no other client-facing
/// exchange of the session delivered at or after the time the backend sent it (a replay).
fn lost_events<'a>(
    exchanges: &'a [Exchange],
    a: usize,
    backend: usize,
    delivered: &Deliveries,
) -> Vec<EventRec<'a>> {
    let mut at_client: HashMap<u64, usize> = HashMap::default();
    for ev in exchanges[a]
        .sse
        .events
        .iter()
        .filter(EventRec::carries_data)
    {
        *at_client.entry(ev.data_hash).or_default() += 1;
    }
    exchanges[backend]
        .sse
        .events
        .iter()
        .filter(EventRec::carries_data)
        .filter(|ev| match at_client.get_mut(&ev.data_hash) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .filter(|ev| {
            !delivered
                .get(&ev.data_hash)
                .is_some_and(|d| d.iter().any(|&(x, ts)| x != a && ts >= ev.sse.ts))
        })
        .collect()
}

/// Over the whole capture (the module's rule).
fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    let mut delivered: HashMap<usize, Deliveries> = HashMap::default();
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
            let mut d = Deliveries::default();
            for &x in &model.sessions[si].exchanges {
                for ev in exchanges[x]
                    .sse
                    .events
                    .iter()
                    .filter(EventRec::carries_data)
                {
                    d.entry(ev.data_hash).or_default().push((x, ev.sse.ts));
                }
            }
            d
        });
        let lost = lost_events(exchanges, a, backend, seen);
        let Some(&first) = lost.first() else { continue };
        // The hop nearest the client that still carried the first lost event.
        let chain: Vec<usize> = std::iter::once(a).chain(hops.iter().copied()).collect();
        let none = Deliveries::default();
        let last_seen = chain
            .iter()
            .copied()
            .find(|&h| {
                h == backend
                    || !lost_events(exchanges, h, backend, &none)
                        .iter()
                        .any(|ev| ev.sse.offset == first.sse.offset)
            })
            .unwrap_or(backend);
        let pos = chain.iter().position(|&h| h == last_seen).unwrap_or(0);
        let toward_client = chain[pos.saturating_sub(1)];
        let b = &exchanges[backend];
        let mut f = Finding::at_exchange(
            model.sessions[si].label(),
            Kind::LostInTransit,
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
        .at_event(&first)
        .cite(b.flow_index, first.sse.frame_first);
        f.request_id = first_request_id(ea);
        f.expected = Some("every event the backend sent reaches the client".into());
        f.observed = Some(format!("{} event(s) lost between hops", lost.len()));
        out.push(f);
    }
}
