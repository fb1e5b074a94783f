//! `cross_stream_replay`: a resumed connection carried events of another stream of the
//! session (the same id and data that stream delivered, or the response to a request another
//! POST stream owns). MCP 2025-11-25 "Resumability and Redelivery": a server "MUST NOT replay
//! messages that would have been delivered on a different stream" (modelcontextprotocol/servers
//! #4087: a store that replays every later event of the session).

use super::{Check, Found, Rule};
use crate::detect::context::Context;
use crate::detect::facts::boundary::Boundary;
use crate::detect::facts::streams::stream_request_id;
use crate::detect::verdict::Cause;
use crate::detect::{flow_id, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::CrossStreamReplay,
    severities: &[Severity::Error],
    summary: "A resumption replayed events of another stream of the session, which the client handles on the wrong stream or twice.",
    checks: &[Check::Resumption(check)],
};

fn check(ctx: &Context, b: &Boundary, out: &mut Vec<Found>) {
    let Some(ev) = b.events() else { return };
    let Some(first) = ev.foreign_stream.first() else {
        return;
    };
    let (model, e, st, other) = (ctx.model, b.exchange, ev.cut.stream, first.stream);
    let n = ev.foreign_stream.len();
    // A stream the capture began inside, which no resumption took into a session.
    let unseen = if model.sessions[model.streams[other].session].id.is_none() {
        ", a stream the capture began inside (its session not shown),"
    } else {
        ""
    };
    let whence = first
        .delivered
        .map(|c| format!(" that stream delivered itself in frame {}", c.frame))
        .unwrap_or_else(|| " (a message of that stream's request)".into());
    let mut f = b.finding(
        Kind::CrossStreamReplay,
        Severity::Error,
        Some(first.ev),
        format!(
            "The resumption from Last-Event-ID {} (GET in frame {}, flow {}) continues stream S{st} but replayed {n} event(s) of another stream, starting in frame {} with an event of stream S{other}{unseen}{whence}: messages the client handles on the wrong stream, or twice.",
            b.leid(),
            e.frame(),
            flow_id(e),
            first.ev.sse.frame_first
        ),
    )
    .cite(e.flow_index, e.frame())
    .cite(e.flow_index, first.ev.sse.frame_first);
    if let Some(c) = first.delivered {
        f.add_cite(c.flow_index, c.frame);
    }
    // The request whose stream the replayed events belong to.
    f.request_id = stream_request_id(model, ctx.exchanges, other);
    f.expected = Some(format!("only events of stream S{st}"));
    f.observed = Some(format!("{n} event(s) of stream S{other}"));
    out.push(Found::new(f, Cause::OtherStream));
}
