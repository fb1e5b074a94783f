//! `duplicate_delivery`: the client received the same event, progress notification or
//! response more than once. Judged at each resumption — events and progress it already had,
//! up to the cursor or on connections it had read to their end, and another stream's events
//! that stream delivered too ([`crate::detect::facts::duplicates`]) — and per session for
//! JSON-RPC responses (JSON-RPC 2.0 §5: one response per request).
//!
//! - A re-sent priming event carries no message: nothing is handled twice.
//! - An id reused for other data is another log (`id_restart`, `id_regression`), not this.
//! - A response whose copies cannot be paired (its request not captured, another hop's copy,
//!   the same connection from another vantage point) is one delivery.
//! - A request id reused by the client gets one response per request.

use crate::hash::{FastMap as HashMap, FastSet as HashSet};

use super::{Check, Found, Rule};
use crate::detect::context::Context;
use crate::detect::facts::boundary::Boundary;
use crate::detect::facts::duplicates::Duplicates;
use crate::detect::facts::Ev;
use crate::detect::verdict::Cause;
use crate::detect::{flow_id, Cited, Finding, Kind, Severity};
use crate::http::Exchange;
use crate::jsonrpc::{Kind as MessageKind, Short};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::DuplicateDelivery,
    severities: &[Severity::Error],
    summary:
        "The client received the same event, progress notification or response more than once.",
    checks: &[
        Check::Resumption(at_resumption),
        Check::Capture(responses_twice),
    ],
};

/// Frames of repeated events a finding names at most.
const REPEATS_NAMED: usize = 10;

/// Frame numbers as a list: `135, 141, 147`.
fn join(frames: &[u64]) -> String {
    frames
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// At a resumption: what its connection delivered again.
fn at_resumption(ctx: &Context, b: &Boundary, out: &mut Vec<Found>) {
    let Some(ev) = b.events() else { return };
    let d = &ev.dups;
    if !d.any() {
        return;
    }
    let at = [
        d.ids.first(),
        d.payload.first(),
        d.foreign.first().map(|(ev, _)| ev),
    ]
    .into_iter()
    .flatten()
    .min_by_key(|ev| ev.sse.frame_first)
    .copied();
    let mut what = Vec::new();
    if !d.ids.is_empty() {
        what.push(format!(
            "{} event(s) with the same id and data",
            d.ids.len()
        ));
    }
    if !d.payload.is_empty() {
        what.push(format!("{} progress notification(s)", d.payload.len()));
    }
    let mut what = match what.is_empty() {
        true => Vec::new(),
        false => vec![format!(
            "again {} it already had on this stream",
            what.join(" and ")
        )],
    };
    if let Some((ev, also)) = d.foreign.first() {
        what.push(format!(
            "{} event(s) of another stream that stream delivered too (the one in frame {} also in frame {})",
            d.foreign.len(),
            ev.sse.frame_first,
            also.frame
        ));
    }
    let (cursor_behind, original) = after_l_text(d, b.leid(), ctx.exchanges);
    // The frames of the repeated events on this connection, the first few named (and cited) so
    // that the evidence selects the repeats, not only the first.
    let mut repeats: Vec<u64> = d
        .ids
        .iter()
        .chain(&d.payload)
        .map(|ev| ev.sse.frame_first)
        .collect();
    repeats.sort_unstable();
    repeats.dedup();
    let named = &repeats[..repeats.len().min(REPEATS_NAMED)];
    let listed = match (named.len(), repeats.len() - named.len()) {
        (0 | 1, _) => String::new(),
        (_, 0) => format!(" (repeats in frames {})", join(named)),
        (_, more) => format!(
            " (repeats in frames {}, {more} more after them)",
            join(named)
        ),
    };
    let mut f = b.finding(
        Kind::DuplicateDelivery,
        Severity::Error,
        at,
        format!(
            "After resuming from Last-Event-ID {} the client received {}, starting in frame {}{listed}.{cursor_behind}",
            b.leid(),
            what.join(", and "),
            at.map(|ev| ev.sse.frame_first).unwrap_or(0)
        ),
    )
    .cite(b.exchange.flow_index, at.map(|ev| ev.sse.frame_first).unwrap_or(0));
    if named.len() > 1 {
        for &fr in named {
            f.add_cite(b.exchange.flow_index, fr);
        }
    }
    if let Some((ev, also)) = d.foreign.first() {
        f.add_cite(b.exchange.flow_index, ev.sse.frame_first);
        f.add_cite(also.flow_index, also.frame);
    }
    if let Some(c) = original {
        f.add_cite(c.flow_index, c.frame);
    }
    let foreign_part = match d.foreign.len() {
        0 => String::new(),
        n => format!(", {n} of another stream"),
    };
    f.observed = Some(format!(
        "{} ids, {} progress payloads{foreign_part} repeated",
        d.ids.len(),
        d.payload.len()
    ));
    out.push(Found::new(f, Cause::Duplicated));
}

/// What the finding says of duplicates only the events read after L explain (`behind`): how
/// many the client had read there with ids of their own (its Last-Event-ID was behind what it
/// had) and without (its cursor rightly stayed at L, and the server replayed them), and the
/// first connection that delivered them; with the frame it names there. Empty (and `None`)
/// when there are none.
fn after_l_text(d: &Duplicates, leid: &str, exchanges: &[Exchange]) -> (String, Option<Cited>) {
    let (read_after_l, dup_ids, dup_payload) = (&d.read_after_l, &d.ids, &d.payload);
    // The first event read after L of each id (with its data) and of each progress value.
    let mut by_id: HashMap<(&str, u64), &Ev> = HashMap::default();
    let mut by_progress: HashMap<(Short, u64), &Ev> = HashMap::default();
    for ev in read_after_l {
        if let Some(id) = ev.2.sse.id.filter(|_| ev.2.sse.has_own_id) {
            by_id.entry((id, ev.2.data_hash)).or_insert(ev);
        }
        for m in ev.2.messages.iter() {
            if let (Some(t), Some(p)) = (m.progress_token, m.progress) {
                by_progress.entry((t, p.to_bits())).or_insert(ev);
            }
        }
    }
    // Each duplicate once (events of one body: each at its own offset), with the event it
    // repeats.
    let mut seen: HashSet<u64> = HashSet::default();
    let mut originals: Vec<&Ev> = Vec::new();
    for ev in dup_ids.iter().chain(dup_payload) {
        if !d.behind(ev) || !seen.insert(ev.sse.offset) {
            continue;
        }
        let by_its_id = ev
            .sse
            .id
            .filter(|_| ev.sse.has_own_id)
            .and_then(|id| by_id.get(&(id, ev.data_hash)));
        let by_its_progress = || {
            ev.messages.iter().find_map(|m| {
                let key = (m.progress_token?, m.progress?.to_bits());
                by_progress.get(&key)
            })
        };
        if let Some(&o) = by_its_id.or_else(by_its_progress) {
            originals.push(o);
        }
    }
    let Some(&&(x, _, first)) = originals.iter().min_by_key(|o| o.2.sse.frame_first) else {
        return (String::new(), None);
    };
    let own = originals.iter().filter(|o| o.2.sse.has_own_id).count();
    // An empty `id:` line resets the cursor (WHATWG "server-sent events"): no id of its own.
    let reset = originals
        .iter()
        .filter(|o| o.2.sse.has_own_id && o.2.sse.id == Some(""))
        .count();
    let own = own - reset;
    let mut parts = Vec::new();
    if reset > 0 {
        parts.push(format!(
            "{reset} it had read after {leid} in events with an empty id line, which resets the last event ID (the client should then have resumed without one: cursor_reset_ignored)"
        ));
    }
    if own > 0 {
        parts.push(format!(
            "{own} it had already read after {} in events with ids of their own, so its Last-Event-ID was behind what it had (a client that resumes from an older cursor than its last event gets those events again)",
            leid
        ));
    }
    if originals.len() > own + reset {
        parts.push(format!(
            "{} it had read after {} in events without an id of their own (its cursor rightly stayed at {}), and the server replayed them",
            originals.len() - own - reset,
            leid,
            leid
        ));
    }
    let text = format!(
        " Of these, {}: on flow {} (from frame {}), a connection read to its end ({}).",
        parts.join("; and "),
        flow_id(&exchanges[x]),
        first.sse.frame_first,
        match (exchanges[x].resp_complete, exchanges[x].resp_read) {
            (true, _) => "its response complete",
            (false, Some(crate::http::ReadEnd::Reset)) => {
                "the server reset it after the client had acknowledged every byte"
            }
            _ => "the server closed it with a FIN, and the client answered with its own",
        }
    );
    let cited = Cited {
        flow_index: exchanges[x].flow_index,
        frame: first.sse.frame_first,
    };
    (text, Some(cited))
}

/// By JSON-RPC response id, per session: the client received the response to one request
/// twice.
fn responses_twice(ctx: &Context, out: &mut Vec<Finding>) {
    let (model, exchanges, responses) = (ctx.model, ctx.exchanges, &ctx.responses);
    for s in &model.sessions {
        // The times each request id was sent, in order: a client that reuses an id (MCP forbids
        // it within a session, but it happens) gets one response per request, none twice.
        let mut requests: HashMap<&str, Vec<i64>> = HashMap::default();
        for &xi in &s.exchanges {
            for m in exchanges[xi]
                .rpc
                .request
                .iter()
                .filter(|m| m.kind == MessageKind::Request)
            {
                if let Some(id) = m.id.as_deref() {
                    requests.entry(id).or_default().push(exchanges[xi].ts());
                }
            }
        }
        for v in requests.values_mut() {
            v.sort_unstable();
        }
        // Per id: the first copy of its latest response (time, frame, exchange) and how many
        // responses it has had.
        let mut seen: HashMap<&str, (i64, u64, usize, usize)> = HashMap::default();
        for &xi in &s.exchanges {
            // Without a session, independent clients reuse request ids: compare within one exchange only.
            if s.id.is_none() {
                seen.clear();
            }
            for (id, ts, frame) in &responses[xi] {
                let (id, ts, frame) = (*id, *ts, *frame);
                let Some(sent) = requests.get(id) else {
                    continue;
                };
                match seen.get(id) {
                    None => {
                        seen.insert(id, (ts, frame, xi, 1));
                    }
                    // A response whose request the capture missed (it began mid-connection),
                    // from another server endpoint than the other copy (another hop's), or on
                    // the same connection seen from another vantage point (same endpoints,
                    // another flow): a copy that could not be paired without its request, not
                    // a second delivery. The copy with a request speaks for both.
                    Some(&(_, _, fx, _))
                        if (exchanges[xi].request.is_none() || exchanges[fx].request.is_none())
                            && {
                                let (a, b) = (&exchanges[xi], &exchanges[fx]);
                                a.server != b.server
                                    || (a.flow_index != b.flow_index
                                        && (a.client, a.client_port) == (b.client, b.client_port))
                            } =>
                    {
                        if exchanges[fx].request.is_none() {
                            if let Some(v) = seen.get_mut(id) {
                                (v.0, v.1, v.2) = (ts, frame, xi);
                            }
                        }
                    }
                    // The id was sent again before this response: the answer to that request.
                    Some(&(_, _, _, n)) if sent.partition_point(|&t| t <= ts) > n => {
                        seen.insert(id, (ts, frame, xi, n + 1));
                    }
                    Some(&(_, first_frame, fx, _)) => {
                        let e = &exchanges[xi];
                        out.push(Finding {
                            session_id: s.label(),
                            kind: Kind::DuplicateDelivery,
                            severity: Severity::Error,
                            ts,
                            flow_id: flow_id(e),
                            frame,
                            last_event_id: e.req_header("last-event-id").map(str::to_string),
                            event_id: None,
                            request_id: Some(id.to_string()),
                            expected: Some("one response per request".into()),
                            observed: Some("a second response".into()),
                            // Exchanges are in order of their start: the copy on the later one may have come first.
                            detail: format!("The response to request {id} reached the client twice: first in frame {}, again in frame {} (flow {}).", first_frame.min(frame), first_frame.max(frame), flow_id(e)),
                            cited: vec![
                                Cited { flow_index: exchanges[fx].flow_index, frame: first_frame },
                                Cited { flow_index: e.flow_index, frame },
                            ],
                        });
                    }
                }
            }
        }
    }
}
