//! `concurrent_stream_connections`: two connections of one logical stream — or two standalone
//! GET streams of one session, which the SDKs keep to one (409) — both answered `200` and live
//! at the same time (punkpeye/fastmcp PR #331: a replayed stream silently replaces a live one;
//! rmcp's silent "shadow" GET, rust-sdk
//! `crates/rmcp/src/transport/streamable_http_server/session/local.rs`). Messages go to one of
//! them; the other starves without being closed.
//!
//! - Not a stalled connection a resumption replaced ([`replaced`]).
//! - Only in sessions with an id and a stateful protocol revision.

use crate::hash::FastMap as HashMap;

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::streams::describe;
use crate::detect::{flow_id, Finding, Kind, Severity};
use crate::http::Exchange;
use crate::mcp::McpExchange;
use crate::mcp::{Model, StreamKind};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::ConcurrentStreamConnections,
    severities: &[Severity::Warning],
    summary: "Two connections of one logical stream were live at once: messages go to one and the other starves.",
    checks: &[Check::Capture(check)],
};

/// Over the whole capture (the module's rule).
fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    // Groups of connections that must not overlap: each logical stream, and per session all
    // standalone GET streams together.
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut standalone: HashMap<usize, Vec<usize>> = HashMap::default();
    for st in &model.streams {
        let s = &model.sessions[st.session];
        if s.id.is_none() || !s.era.stateful() {
            continue;
        }
        if st.kind == StreamKind::Get {
            standalone
                .entry(st.session)
                .or_default()
                .extend(st.connections.iter().copied());
        } else {
            groups.push((st.session, st.connections.clone()));
        }
    }
    let mut sessions: Vec<_> = standalone.into_iter().collect();
    sessions.sort_unstable();
    groups.extend(sessions);
    for (session, mut conns) in groups {
        conns.sort_by_key(|&x| (exchanges[x].ts_response.unwrap_or(i64::MAX), x));
        // The connection with the latest end so far: if any earlier one overlaps the next, it does.
        let mut live: Option<usize> = None;
        let mut first: Option<(usize, usize)> = None;
        let mut overlaps = 0usize;
        for &bx in &conns {
            let b = &exchanges[bx];
            let start = b.ts_response.unwrap_or(i64::MAX);
            if let Some(ax) = live {
                let a = &exchanges[ax];
                if conn_end(a) > start && !replaced(a, b) {
                    overlaps += 1;
                    first.get_or_insert((ax, bx));
                }
            }
            if live.is_none_or(|ax| conn_end(b) >= conn_end(&exchanges[ax])) {
                live = Some(bx);
            }
        }
        if let Some((ax, bx)) = first {
            let mut f = concurrent_finding(model, session, &exchanges[ax], &exchanges[bx]);
            if overlaps > 1 {
                f.detail.push_str(&format!(
                    " ({overlaps} connections of this stream opened while another was live.)"
                ));
            }
            out.push(f);
        }
    }
}

/// The finding for connection `b` opened while `a` was live.
fn concurrent_finding(model: &Model, session: usize, a: &Exchange, b: &Exchange) -> Finding {
    let ended = if a.open_at_capture_end {
        "was still open when the capture ended".to_string()
    } else {
        format!("ended only at frame {}", a.frame_last.unwrap_or(0))
    };
    let mut f = Finding::at_exchange(
        model.sessions[session].label(),
        Kind::ConcurrentStreamConnections,
        Severity::Warning,
        b,
        format!(
            "Two connections served one logical stream at once: the {} on flow {} (answered in frame {}) {}, while the {} on flow {} was answered 200 in frame {}; messages go to one of them and the other starves.",
            describe(a),
            flow_id(a),
            a.frame_response.unwrap_or(0),
            ended,
            describe(b),
            flow_id(b),
            b.frame_response.unwrap_or(0)
        ),
    )
    .cite(a.flow_index, a.frame_response.unwrap_or(0))
    .cite(b.flow_index, b.frame_response.unwrap_or(0));
    if !a.open_at_capture_end {
        f.add_cite(a.flow_index, a.frame_last.unwrap_or(0));
    }
    f.ts = b.ts_response.unwrap_or(f.ts);
    f.frame = b.frame_response.unwrap_or(f.frame);
    f.expected = Some("one live connection per stream".into());
    f.observed = Some(format!("{} and {} live together", flow_id(a), flow_id(b)));
    f
}

/// End of a connection for overlap tests: its last byte or close, or never when the capture
/// ended with it open.
fn conn_end(e: &Exchange) -> i64 {
    if e.open_at_capture_end {
        i64::MAX
    } else {
        e.ts_end.unwrap_or(e.ts())
    }
}

/// How long a connection must have been silent before a resumption for the resumption to be
/// taken as the client giving up on it, in microseconds.
const STALLED_US: i64 = 1_000_000;

/// Whether `b` is a resumption (`Last-Event-ID`) that replaced `a`: `a` had been silent for
/// [`STALLED_US`] when `b` was sent, carried nothing after, and was closed before the capture
/// ended — a stalled connection the client gave up on and whose end came late (a timeout, a
/// half-dead socket), not two live ones. A connection live until the resumption stays
/// concurrent, however it ended later (punkpeye/fastmcp PR #331: the first connection stops
/// receiving bytes).
fn replaced(a: &Exchange, b: &Exchange) -> bool {
    let last_byte = a.ts_last_byte.or(a.ts_response).unwrap_or(a.ts());
    b.resume_cursor().is_some()
        && !a.open_at_capture_end
        && last_byte.saturating_add(STALLED_US) <= b.ts()
}
