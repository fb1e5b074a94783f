//! `duplicate_event_id`: one connection delivered two events with the same `id` and the same
//! data — one message handed to the client twice under one cursor (typescript-sdk PR #2335
//! review: an event store written twice by a race between `storeEvent` and a concurrent
//! resume). Duplicates across connections of a stream are the resumption's
//! (`duplicate_delivery`).

use crate::hash::FastMap as HashMap;

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::streams::stream_request_id;
use crate::detect::{flow_id, Finding, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::DuplicateEventId,
    severities: &[Severity::Error],
    summary: "One connection delivered two events with the same id and the same data: an event store written twice.",
    checks: &[Check::Capture(check)],
};

/// Over the whole capture (the module's rule).
fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    for (sti, st) in model.streams.iter().enumerate() {
        for &xi in &st.connections {
            let e = &exchanges[xi];
            // Events by index: only their fixed fields and ids are read, the rest of the two
            // events of a duplicate when there is one.
            let mut seen: HashMap<(&str, u64), usize> =
                HashMap::with_capacity_and_hasher(e.sse.events.len(), Default::default());
            let mut dups: Vec<(usize, usize)> = Vec::new();
            for (ei, ev) in e
                .sse
                .events
                .briefs()
                .filter(|(_, ev)| ev.carries_data() && ev.has_own_id)
            {
                let Some(id) = e.sse.events.id_of(ei) else {
                    continue;
                };
                match seen.get(&(id, ev.data_hash)) {
                    Some(&first) => dups.push((first, ei)),
                    None => {
                        seen.insert((id, ev.data_hash), ei);
                    }
                }
            }
            let Some((first, again)) = dups
                .first()
                .and_then(|&(a, b)| Some((e.sse.events.get(a)?, e.sse.events.get(b)?)))
            else {
                continue;
            };
            let id = again.sse.id.unwrap_or("");
            let mut f = Finding::at_exchange(
                model.sessions[st.session].label(),
                Kind::DuplicateEventId,
                Severity::Error,
                e,
                format!(
                    "The connection (flow {}, response in frame {}) delivered event id {id} twice with the same data, in frames {} and {}{}: the client handled one message twice under one cursor.",
                    flow_id(e),
                    e.frame_response.unwrap_or(0),
                    first.sse.frame_first,
                    again.sse.frame_first,
                    if dups.len() > 1 { format!(", and {} more event(s) likewise", dups.len() - 1) } else { String::new() }
                ),
            )
            .at_event(&again)
            .cite(e.flow_index, e.frame_response.unwrap_or(0))
            .cite(e.flow_index, first.sse.frame_first)
            .cite(e.flow_index, again.sse.frame_first);
            f.request_id = stream_request_id(model, exchanges, sti);
            f.expected = Some("each event id once per stream".into());
            f.observed = Some(format!("{} repeated event(s)", dups.len()));
            out.push(f);
        }
    }
}
