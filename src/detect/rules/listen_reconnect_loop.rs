//! `listen_reconnect_loop`: three or more consecutive standalone GETs of a session without a
//! `Last-Event-ID`, each answered `200 text/event-stream` with an empty body that ended at
//! once ([`empty_answer`]): the server ends the listen stream as soon as it opens it, and the
//! client opens it again for ever (python-sdk #3257, kotlin-sdk #715). Nothing the server
//! means to send outside a request reaches the client. The cursor-less sibling of
//! `empty_resume_loop`.
//!
//! - Only GETs without `Last-Event-ID`: with one, it is `empty_resume_loop`.
//! - Only a run of empty answers in a row; a GET that stayed open breaks the run.

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::streams::empty_answer;
use crate::detect::{Finding, Kind, Severity};
use crate::mcp::McpExchange;

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::ListenReconnectLoop,
    severities: &[Severity::Warning],
    summary: "The client kept reopening the standalone GET stream and each time the server ended it at once, empty: nothing the server sends outside a request can arrive.",
    checks: &[Check::Capture(check)],
};

/// How many empty answers in a row make a loop.
const MIN_EMPTY_GETS: usize = 3;

fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let exchanges = ctx.exchanges;
    for (si, s) in ctx.model.sessions.iter().enumerate() {
        let gets: Vec<usize> = s
            .exchanges
            .iter()
            .copied()
            .filter(|&x| exchanges[x].method() == "GET" && exchanges[x].resume_cursor().is_none())
            .collect();
        // The longest run of consecutive empty answers.
        let mut best: &[usize] = &[];
        let mut start = 0;
        for i in 0..=gets.len() {
            if i == gets.len() || !empty_answer(&exchanges[gets[i]]) {
                if i - start > best.len() {
                    best = &gets[start..i];
                }
                start = i + 1;
            }
        }
        if best.len() < MIN_EMPTY_GETS {
            continue;
        }
        let (a, z) = (&exchanges[best[0]], &exchanges[best[best.len() - 1]]);
        let every = z.ts().saturating_sub(a.ts()) / (best.len() as i64 - 1) / 1000;
        let mut f = Finding::at_exchange(
            ctx.label(si),
            Kind::ListenReconnectLoop,
            Severity::Warning,
            a,
            format!(
                "{} standalone GETs without Last-Event-ID (frames {} to {}, about every {} ms) were each answered 200 with an event stream that ended at once, empty: the client reopens the listen stream in a loop, and nothing the server sends outside a request can reach it.",
                best.len(),
                a.frame(),
                z.frame(),
                every
            ),
        )
        .cite(a.flow_index, a.frame())
        .cite(z.flow_index, z.frame());
        f.expected = Some("a listen stream held open, or 405".into());
        f.observed = Some(format!("{} empty 200 answers", best.len()));
        out.push(f);
    }
}
