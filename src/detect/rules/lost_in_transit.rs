//! `lost_in_transit`: events a backend hop of an SSE response carried that neither the
//! client-facing hop nor any other client-facing exchange of the session delivered (no replay
//! made up for them) — lost between the hops, e.g. in a proxy that cut the client's connection
//! while the backend went on. The finding names the hop where they vanished. Not judged when
//! the client-facing copy has capture gaps.

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::streams::first_request_id;
use crate::detect::{flow_id, Finding, Kind, Severity};
use crate::http::EventRec;

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::LostInTransit,
    severities: &[Severity::Error],
    summary: "Events the backend sent never reached the client: they vanished at a proxy.",
    checks: &[Check::Capture(check)],
};

/// Over the whole capture (the module's rule).
fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
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
        .at_event(&first);
        f.request_id = first_request_id(ea);
        f.expected = Some("every event the backend sent reaches the client".into());
        f.observed = Some(format!("{} event(s) lost between hops", lost.len()));
        out.push(f);
    }
}
