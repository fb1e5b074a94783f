//! `connection_refused`: after a stream of the session broke, the client's new connections to
//! its server were refused — SYN answered by RST ([`crate::detect::RefusedConnect`]): the
//! server process is gone (python-sdk #3441, #1577: a server killed mid-call). Whatever the
//! broken stream still owed cannot come from it, and the client's reconnects fail below HTTP,
//! where no status says why.
//!
//! - Only attempts from the address of the session's client to the address and port of the
//!   server of the broken stream, after it broke and before that server served anything again.
//! - Once per session, at the first refused attempt; the detail counts them and says how long
//!   they went on.

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::streams::describe;
use crate::detect::{flow_id, Finding, Kind, RefusedConnect, Severity};
use std::net::IpAddr;

use crate::hash::FastMap as HashMap;
use crate::http::Exchange;
use crate::tcp::FlowId;

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::ConnectionRefused,
    severities: &[Severity::Warning],
    summary: "After a stream of the session broke, the client's new connections to its server were refused (SYN answered by RST): the server process was gone.",
    checks: &[Check::Capture(check)],
};

/// A response that broke: it began, then ended before its end (no last chunk, body short of
/// its length, reset) while the capture still ran.
fn broke(e: &Exchange) -> bool {
    e.response.is_some() && !e.resp_complete && !e.open_at_capture_end && e.ts_end.is_some()
}

/// When each server answered, µs, sorted: to find when one answered again after a break.
type Answered = HashMap<(IpAddr, u16), Vec<i64>>;

fn answered(exchanges: &[Exchange]) -> Answered {
    let mut by: Answered = HashMap::default();
    for e in exchanges {
        if let (Some(server), Some(t)) = (e.server, e.ts_response) {
            by.entry(server).or_default().push(t);
        }
    }
    by.values_mut().for_each(|v| v.sort_unstable());
    by
}

/// The refused attempts after broken exchange `b` of the session: from its client's address to
/// its server, after it broke and before that server answered anything again (`refused` is in
/// time order).
fn refused_after<'a>(
    ctx: &'a Context,
    answered: &Answered,
    b: &Exchange,
) -> Vec<&'a RefusedConnect> {
    let (Some(client), Some(server), Some(end)) = (b.client, b.server, b.ts_end) else {
        return Vec::new();
    };
    let back = answered
        .get(&server)
        .and_then(|ts| ts.get(ts.partition_point(|&t| t <= end)).copied())
        .unwrap_or(i64::MAX);
    let from = ctx.refused.partition_point(|r| r.ts < end);
    ctx.refused[from..]
        .iter()
        .take_while(|r| r.ts < back)
        .filter(|r| r.client.0 == client && r.server == server)
        .collect()
}

fn check(ctx: &Context, out: &mut Vec<Finding>) {
    if ctx.refused.is_empty() {
        return;
    }
    let exchanges = ctx.exchanges;
    let answered = answered(exchanges);
    for (si, s) in ctx.model.sessions.iter().enumerate() {
        // The last stream to break before refused attempts followed.
        let Some((e, refused)) = s
            .exchanges
            .iter()
            .map(|&x| &exchanges[x])
            .filter(|e| broke(e))
            .map(|e| (e, refused_after(ctx, &answered, e)))
            .filter(|(_, r)| !r.is_empty())
            .max_by_key(|(e, _)| (e.ts_end, e.frame_last))
        else {
            continue;
        };
        let (Some(server), Some(end)) = (e.server, e.ts_end) else {
            continue;
        };
        let (first, last) = (refused[0], refused[refused.len() - 1]);
        let frames: Vec<String> = refused
            .iter()
            .take(4)
            .map(|r| format!("{}→{}", r.frame_syn, r.frame_rst))
            .collect();
        let more = if refused.len() > 4 { ", …" } else { "" };
        let mut f = Finding::at_exchange(
            ctx.label(si),
            Kind::ConnectionRefused,
            Severity::Warning,
            e,
            format!(
                "After the {} on flow {} broke in frame {}, the client's {} connection attempt(s) to {}:{} were refused, SYN answered by RST (frames {}{more}, over {} ms, the first {} ms after the break): the server was no longer listening, so nothing the stream owed could come.",
                describe(e),
                flow_id(e),
                e.frame_last.unwrap_or(e.frame()),
                refused.len(),
                server.0,
                server.1,
                frames.join(", "),
                (last.ts - first.ts) / 1000,
                (first.ts - end) / 1000,
            ),
        )
        .cite(e.flow_index, e.frame_last.unwrap_or(e.frame()));
        for r in refused.iter().take(4) {
            f.add_cite(r.flow_index, r.frame_syn);
            f.add_cite(r.flow_index, r.frame_rst);
        }
        f.ts = first.ts;
        f.frame = first.frame_syn;
        f.flow_id = FlowId(first.flow_index).to_string();
        f.expected = Some("a server accepting the reconnection".into());
        f.observed = Some(format!("{} SYN answered by RST", refused.len()));
        out.push(f);
    }
}
