//! `empty_resume_loop`: three or more consecutive resumption GETs of a session with the
//! identical `Last-Event-ID`, each answered `200 text/event-stream` with an empty body that
//! ended within a second (not a poll the server held open): the server neither replays nor
//! refuses, and the client retries for ever (rust-sdk #958). Whatever the stream still owed
//! never arrives.

use crate::hash::FastMap as HashMap;

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::streams::empty_answer;
use crate::detect::{Finding, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::EmptyResumeLoop,
    severities: &[Severity::Warning],
    summary: "The client kept resuming from the same cursor and each time got an empty stream: nothing it is owed arrives.",
    checks: &[Check::Capture(check)],
};

/// How many empty answers to one `Last-Event-ID` make a loop.
const MIN_EMPTY_RESUMES: usize = 3;

/// Over the whole capture (the module's rule).
fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    let empty = |x: usize| empty_answer(&exchanges[x]);
    // Resumptions by (session, Last-Event-ID), in time order.
    let mut by_cursor: Vec<((usize, &str), Vec<usize>)> = Vec::new();
    let mut index: HashMap<(usize, &str), usize> = Default::default();
    for r in &model.resumptions {
        let key = (r.session, r.last_event_id.as_str());
        let i = *index.entry(key).or_insert_with(|| {
            by_cursor.push((key, Vec::new()));
            by_cursor.len() - 1
        });
        by_cursor[i].1.push(r.exchange);
    }
    for ((session, cursor), same) in &by_cursor {
        // The longest run of consecutive empty answers.
        let mut best: &[usize] = &[];
        let mut start = 0;
        for i in 0..=same.len() {
            if i == same.len() || !empty(same[i]) {
                if i - start > best.len() {
                    best = &same[start..i];
                }
                start = i + 1;
            }
        }
        if best.len() < MIN_EMPTY_RESUMES {
            continue;
        }
        let (a, z) = (&exchanges[best[0]], &exchanges[best[best.len() - 1]]);
        let every = z.ts().saturating_sub(a.ts()) / (best.len() as i64 - 1) / 1000;
        let mut f = Finding::at_exchange(
            model.sessions[*session].label(),
            Kind::EmptyResumeLoop,
            Severity::Warning,
            a,
            format!(
                "{} resumption GETs with Last-Event-ID {} (frames {} to {}, about every {} ms) were each answered 200 with an empty event stream: the server neither replays nor refuses, and nothing the stream owed arrives.",
                best.len(),
                cursor,
                a.frame(),
                z.frame(),
                every
            ),
        )
        .cite(a.flow_index, a.frame())
        .cite(z.flow_index, z.frame());
        f.expected = Some("a replay, or an error status".into());
        f.observed = Some(format!("{} empty 200 answers", best.len()));
        out.push(f);
    }
}
