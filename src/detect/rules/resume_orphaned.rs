//! `resume_orphaned`: a resumption of the standalone GET stream was answered `200` and then
//! carried no message while the session went on, although the server was shown to write
//! there: a request that, earlier, sent notifications on the standalone stream while it ran was
//! made again (same method, same params) while the resumed connection was open, and was
//! answered with no notification on any connection. The server registered the resumed
//! connection under another stream and writes the stream's messages nowhere
//! (typescript-sdk #943, #2560: the example event store's `''` stream id).
//!
//! - Only a resumption answered `200 text/event-stream` whose connection carried no message
//!   event, and lasted past the repeated request's answer.
//! - Only where the same request, before the cut, had notifications on the stream's earlier
//!   connections while it ran: what the server does for that request is known.
//! - Once per resumption, at the repeated request.

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::{flow_id, Finding, Kind, Severity};
use crate::http::Exchange;
use crate::jsonrpc::Kind as Rpc;
use crate::mcp::{Resumption, StreamKind};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::ResumeOrphaned,
    severities: &[Severity::Warning],
    summary: "A resumed standalone stream stayed silent while a request that had sent notifications on it ran again without them: the server no longer writes to it.",
    checks: &[Check::Capture(check)],
};

/// A request: its method and params hash (`_meta` left out).
type Request<'a> = (&'a str, u64);

/// The requests `e` carries.
fn requests(e: &Exchange) -> impl Iterator<Item = Request<'_>> {
    e.rpc
        .request
        .iter()
        .filter(|m| m.kind == Rpc::Request)
        .filter_map(|m| Some((m.method.as_deref()?, m.params_hash()?)))
}

/// The span of an exchange, request to the end of its response, µs.
fn span(e: &Exchange) -> Option<(i64, i64)> {
    Some((e.ts_request?, e.ts_end?))
}

/// Notifications among `xs`' events within `[from, to]`.
fn notifications_in(exchanges: &[Exchange], xs: &[usize], (from, to): (i64, i64)) -> usize {
    xs.iter()
        .flat_map(|&x| exchanges[x].sse.events.iter())
        .filter(|ev| ev.sse.ts >= from && ev.sse.ts <= to)
        .map(|ev| {
            ev.messages
                .iter()
                .filter(|m| m.kind == Rpc::Notification)
                .count()
        })
        .sum()
}

/// A resumption answered 200 with an event stream that carried no message.
fn silent_resumption(e: &Exchange) -> bool {
    e.status() == 200 && e.is_sse && e.sse.events.iter().all(|ev| ev.messages.is_empty())
}

fn check(ctx: &Context, out: &mut Vec<Finding>) {
    for r in &ctx.model.resumptions {
        if let Some(f) = orphaned(ctx, r) {
            out.push(f);
        }
    }
}

/// The finding for resumption `r`, when it is orphaned.
fn orphaned(ctx: &Context, r: &Resumption) -> Option<Finding> {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    let st = &model.streams[r.stream?];
    let g = &exchanges[r.exchange];
    if st.kind != StreamKind::Get || !silent_resumption(g) {
        return None;
    }
    let open_from = g.ts_response?;
    let open_to = if g.open_at_capture_end {
        i64::MAX
    } else {
        g.ts_end?
    };
    let earlier: Vec<usize> = st
        .connections
        .iter()
        .copied()
        .filter(|&x| exchanges[x].ts() < g.ts())
        .collect();
    let session = &model.sessions[r.session];
    // Requests that sent notifications on the stream while they ran, before the resumption.
    let mut known: Vec<(Request, usize, usize)> = Vec::new();
    for &x in session
        .exchanges
        .iter()
        .filter(|&&x| exchanges[x].ts() < g.ts())
    {
        let Some(sp) = span(&exchanges[x]) else {
            continue;
        };
        let n = notifications_in(exchanges, &earlier, sp);
        if n > 0 {
            known.extend(requests(&exchanges[x]).map(|q| (q, x, n)));
        }
    }
    // The same request again, answered while the resumed connection was open, with none.
    session.exchanges.iter().find_map(|&x| {
        let e = &exchanges[x];
        let (from, to) = span(e)?;
        if from < open_from || to > open_to || !e.resp_complete {
            return None;
        }
        let &(_, before, n) = requests(e).find_map(|q| known.iter().find(|k| k.0 == q))?;
        if notifications_in(exchanges, &session.exchanges, (from, to)) > 0 {
            return None;
        }
        let method = requests(e).next().map_or("", |q| q.0);
        let mut f = Finding::at_exchange(
            ctx.label(r.session),
            Kind::ResumeOrphaned,
            Severity::Warning,
            e,
            format!(
                "The resumption GET with Last-Event-ID {} (frame {}, flow {}) was answered 200 and then carried no message, though the session went on: {method} in frame {} (flow {}), the same request as the one in frame {} that sent {n} notification(s) on the standalone stream while it ran, was answered in frame {} with none on any connection. The server no longer writes to the resumed connection, and what it sends there is lost.",
                r.last_event_id,
                g.frame(),
                flow_id(g),
                e.frame(),
                flow_id(e),
                exchanges[before].frame(),
                e.frame_last.unwrap_or(e.frame()),
            ),
        )
        .cite(g.flow_index, g.frame())
        .cite(e.flow_index, e.frame())
        .cite(exchanges[before].flow_index, exchanges[before].frame())
        .cite(e.flow_index, e.frame_last.unwrap_or(e.frame()));
        f.last_event_id = Some(r.last_event_id.clone());
        f.expected = Some(format!("the {n} notification(s) on the resumed stream"));
        f.observed = Some("none".into());
        Some(f)
    })
}
