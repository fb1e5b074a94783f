//! `resume_without_cursor`: a stream that carried event ids broke while it still owed messages
//! (a POST stream without its response, or the standalone GET stream), it was never resumed,
//! and the session's next GET carries no `Last-Event-ID`: the client opened a fresh stream
//! instead of resuming, so whatever the server sent in between is lost to it (typescript-sdk
//! #2499; modelcontextprotocol/inspector #723).
//!
//! - Not after the session was declared dead (404) or ended (DELETE), nor for a cancelled
//!   request (MCP "Cancellation": no response is due).
//! - Not for a stream whose request the capture missed: what it owed is unknown.

use crate::hash::FastMap as HashMap;

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::streams::{describe, pending, stream_request_id};
use crate::detect::{flow_id, Cited, Finding, Kind, Severity};
use crate::mcp::McpExchange;

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::ResumeWithoutCursor,
    severities: &[Severity::Warning],
    summary: "A stream broke while it still owed messages, and the client reconnected without its `Last-Event-ID`, so nothing could be replayed.",
    checks: &[Check::Capture(check)],
};

/// Over the whole capture (the module's rule).
fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    let answered = &ctx.answered;
    // Per stream: the latest resumption that presented its cursor (any answer).
    let mut resumed_latest: Vec<i64> = vec![i64::MIN; model.streams.len()];
    for r in &model.resumptions {
        if let Some(st) = r.stream {
            resumed_latest[st] = resumed_latest[st].max(exchanges[r.exchange].ts());
        }
    }
    // Per session: when it was declared dead (404) or ended (DELETE), and cancelled requests.
    let mut closed_at: Vec<i64> = vec![i64::MAX; model.sessions.len()];
    let mut cancelled: HashMap<(usize, &str), i64> = HashMap::default();
    for (si, s) in model.sessions.iter().enumerate() {
        for &x in &s.exchanges {
            let e = &exchanges[x];
            if e.status() == 404 || e.method() == "DELETE" {
                closed_at[si] = closed_at[si].min(e.ts());
            }
            for m in &e.rpc.request {
                if let Some(c) = m.cancels() {
                    let t = cancelled.entry((si, c)).or_insert(e.ts());
                    *t = (*t).min(e.ts());
                }
            }
        }
    }
    // Per session, its GETs without a cursor (time, exchange), in time order as the session's
    // exchanges are: looked up once per broken stream.
    let mut fresh_gets: HashMap<usize, Vec<(i64, usize)>> = HashMap::default();
    for (sti, st) in model.streams.iter().enumerate() {
        let s = &model.sessions[st.session];
        // A stream whose request the capture missed (it began mid-connection) may have owed
        // nothing: its kind, and what it still owed, are unknown.
        let orphan = st
            .connections
            .first()
            .is_some_and(|&x| exchanges[x].request.is_none());
        if s.id.is_none() || !s.era.stateful() || orphan {
            continue;
        }
        let Some(&last) = st.connections.last() else {
            continue;
        };
        let l = &exchanges[last];
        if l.open_at_capture_end || !pending(answered, sti, st.connections.len() - 1) {
            continue;
        }
        let Some(cursor) = st
            .connections
            .iter()
            .rev()
            .flat_map(|&x| exchanges[x].sse.events.iter().rev())
            .filter(|ev| !ev.sse.truncated && ev.sse.has_own_id)
            .find_map(|ev| ev.sse.id)
        else {
            continue;
        };
        let end = l.ts_end.unwrap_or(l.ts());
        // The client did present the stream's cursor later (even if refused).
        if resumed_latest[sti] > end {
            continue;
        }
        // The first GET after the break that carries no cursor (GETs resuming other streams,
        // e.g. the standalone one broken at the same time, come and go before it).
        let gets = fresh_gets.entry(st.session).or_insert_with(|| {
            s.exchanges
                .iter()
                .filter(|&&x| {
                    let e = &exchanges[x];
                    e.method() == "GET" && e.resume_cursor().is_none()
                })
                .map(|&x| (exchanges[x].ts(), x))
                .collect()
        });
        let Some(g) = gets[gets.partition_point(|&(t, _)| t < end)..]
            .iter()
            .map(|&(_, x)| x)
            .find(|&x| x != last)
        else {
            continue;
        };
        let ge = &exchanges[g];
        // A session already declared dead, or ended by the client, owes nothing more; nor does a
        // request the client cancelled (MCP "Cancellation": no response is due).
        let request = stream_request_id(model, exchanges, sti);
        let cancel = request
            .as_deref()
            .and_then(|r| cancelled.get(&(st.session, r)).copied())
            .unwrap_or(i64::MAX);
        if closed_at[st.session] < ge.ts() || cancel < ge.ts() {
            continue;
        }
        let what = broken_connection(model, exchanges, sti, last);
        let (refused, refused_frames) =
            refusals_after(exchanges, &gets[gets.partition_point(|&(t, _)| t < end)..]);
        let mut f = Finding::at_exchange(
            s.label(),
            Kind::ResumeWithoutCursor,
            Severity::Warning,
            ge,
            format!(
                "The {what} on flow {} ended in frame {} with its last event id {cursor} and without what it still owed; the client's next GET (frame {}, flow {}) carried no Last-Event-ID, so the server could not replay what was sent in between{refused}.",
                flow_id(l),
                l.frame_last.unwrap_or(0),
                ge.frame(),
                flow_id(ge)
            ),
        )
        .cite(l.flow_index, l.frame_last.unwrap_or(0))
        .cite(ge.flow_index, ge.frame());
        for c in refused_frames {
            f.add_cite(c.flow_index, c.frame);
        }
        f.last_event_id = Some(cursor.to_string());
        f.request_id = request;
        f.expected = Some(format!("GET with Last-Event-ID {cursor}"));
        f.observed = Some("GET without Last-Event-ID".into());
        out.push(f);
    }
}

/// The connection of stream `sti` that broke, `last`, named for the detail: the stream's
/// request itself ("POST response stream", "standalone GET stream") or, when the stream was
/// resumed before, "resumption GET (Last-Event-ID …) of the POST response stream".
fn broken_connection(
    model: &crate::mcp::Model,
    exchanges: &[crate::http::Exchange],
    sti: usize,
    last: usize,
) -> String {
    let st = &model.streams[sti];
    let stream = if st.kind == crate::mcp::StreamKind::Post {
        "POST response stream"
    } else {
        "standalone GET stream"
    };
    if st.connections.first() == Some(&last) {
        stream.to_string()
    } else {
        format!("{} of the {stream}", describe(&exchanges[last]))
    }
}

/// How the session's GETs without a cursor after the break (`gets`: time, exchange) were
/// answered, when the server refused them (a status of 400 or more, e.g. typescript-sdk's 409
/// Conflict while it still holds the standalone stream, typescript-sdk #2499): ", and 3 GETs
/// without a cursor (frames 61..70) were answered 409"; empty when none was refused. With it,
/// the frames it names (the first and last refused GET).
fn refusals_after(
    exchanges: &[crate::http::Exchange],
    gets: &[(i64, usize)],
) -> (String, Vec<Cited>) {
    let refused: Vec<&crate::http::Exchange> = gets
        .iter()
        .map(|&(_, x)| &exchanges[x])
        .filter(|e| e.status() >= 400)
        .collect();
    let (Some(first), Some(last)) = (refused.first(), refused.last()) else {
        return (String::new(), Vec::new());
    };
    let mut statuses: Vec<u16> = refused.iter().map(|e| e.status()).collect();
    statuses.sort_unstable();
    statuses.dedup();
    let statuses: Vec<String> = statuses.iter().map(u16::to_string).collect();
    let frames = if refused.len() == 1 {
        format!("frame {}", first.frame())
    } else {
        format!("frames {}..{}", first.frame(), last.frame())
    };
    let (n, were) = match refused.len() {
        1 => ("1 GET".to_string(), "was"),
        k => (format!("{k} GETs"), "were"),
    };
    let text = format!(
        ", and {n} without a cursor ({frames}) {were} answered {}",
        statuses.join("/")
    );
    let cited = [first, last].map(|e| Cited {
        flow_index: e.flow_index,
        frame: e.frame(),
    });
    (text, cited.to_vec())
}
