//! `idle_cut`: three or more SSE connections of a session were cut — ended by a close, reset or
//! gap before their framing said so (a planned poll ends cleanly), while the stream still owed
//! messages and before the session's DELETE — at the same idle time (no byte for that long) or
//! at the same age, within 10 % or 0.3 s and at least 1 s: the idle or age timeout of a proxy,
//! CDN or client (cloudflare/agents #1583, mckinsey/agents-at-scale-ark #1941,
//! open-webui/mcpo #73). Messages produced while the client reconnects may be lost.

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::streams::pending;
use crate::detect::{Finding, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::IdleCut,
    severities: &[Severity::Warning],
    summary: "Several SSE connections of a session were cut at the same idle time or age: a proxy, CDN or client timeout is ending them.",
    checks: &[Check::Capture(check)],
};

/// Over the whole capture (the module's rule).
fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let (model, exchanges) = (ctx.model, ctx.exchanges);
    let answered = &ctx.answered;
    let mut by_session: Vec<Vec<usize>> = vec![Vec::new(); model.sessions.len()];
    for (sti, st) in model.streams.iter().enumerate() {
        by_session[st.session].push(sti);
    }
    for (si, s) in model.sessions.iter().enumerate() {
        if s.id.is_none() || !s.era.stateful() {
            continue;
        }
        let deleted_at = s
            .exchanges
            .iter()
            .map(|&x| &exchanges[x])
            .filter(|e| e.method() == "DELETE")
            .map(|e| e.ts())
            .min()
            .unwrap_or(i64::MAX);
        // (idle µs, age µs, exchange)
        let mut cuts: Vec<(i64, i64, usize)> = Vec::new();
        for &sti in &by_session[si] {
            for (k, &xi) in model.streams[sti].connections.iter().enumerate() {
                let e = &exchanges[xi];
                let (Some(end), Some(last), Some(start)) =
                    (e.ts_end, e.ts_last_byte, e.ts_response)
                else {
                    continue;
                };
                if e.open_at_capture_end
                    || e.resp_complete
                    || end >= deleted_at
                    || !pending(answered, sti, k)
                {
                    continue;
                }
                cuts.push((end.saturating_sub(last), end.saturating_sub(start), xi));
            }
        }
        if cuts.len() < MIN_CUTS {
            continue;
        }
        let idle = densest(cuts.iter().map(|c| c.0).collect());
        let age = densest(cuts.iter().map(|c| c.1).collect());
        // The pattern with more cuts; idle time first.
        let (basis, (value, tol)) = match (idle, age) {
            (Some(i), Some(a)) if a.2 > i.2 => ("age", (a.0, a.1)),
            (Some(i), _) => ("idle time", (i.0, i.1)),
            (None, Some(a)) => ("age", (a.0, a.1)),
            (None, None) => continue,
        };
        let pick = |c: &(i64, i64, usize)| if basis == "age" { c.1 } else { c.0 };
        let mut same: Vec<&(i64, i64, usize)> = cuts
            .iter()
            .filter(|c| pick(c).saturating_sub(value).saturating_abs() <= tol)
            .collect();
        same.sort_by_key(|c| (exchanges[c.2].ts(), c.2));
        let Some(&&(_, _, first)) = same.first() else {
            continue;
        };
        let first = &exchanges[first];
        let frames: Vec<String> = same
            .iter()
            .take(6)
            .map(|c| exchanges[c.2].frame_last.unwrap_or(0).to_string())
            .collect();
        let secs = |us: i64| format!("{:.1}", us as f64 / 1e6);
        let ages: Vec<i64> = same.iter().map(|c| c.1).collect();
        let idles: Vec<i64> = same.iter().map(|c| c.0).collect();
        let range = |v: &[i64]| {
            format!(
                "{}–{} s",
                secs(*v.iter().min().unwrap_or(&0)),
                secs(*v.iter().max().unwrap_or(&0))
            )
        };
        let mut f = Finding::at_exchange(
            s.label(),
            Kind::IdleCut,
            Severity::Warning,
            first,
            format!(
                "{} SSE connections of the session were cut before their end, each at the same {basis} of about {} s (idle {}, age {}; cuts in frames {}{}): a timeout between client and server ends these streams, and what the server sends while the client reconnects can be lost.",
                same.len(),
                secs(value),
                range(&idles),
                range(&ages),
                frames.join(", "),
                if same.len() > frames.len() { ", …" } else { "" }
            ),
        );
        for c in same.iter().take(6) {
            let e = &exchanges[c.2];
            f.add_cite(e.flow_index, e.frame_last.unwrap_or(0));
        }
        f.ts = first.ts_end.unwrap_or(f.ts);
        f.frame = first.frame_last.unwrap_or(f.frame);
        f.expected =
            Some("streams kept open (keep-alive comments) or closed cleanly with retry".into());
        f.observed = Some(format!("{} cuts at {basis} {} s", same.len(), secs(value)));
        out.push(f);
    }
}

/// Smallest idle time or age, in µs, that `idle_cut` treats as a timeout.
const MIN_IDLE_US: i64 = 1_000_000;
/// How many cuts at one idle time or age make a pattern.
const MIN_CUTS: usize = 3;

/// The densest cluster of values: (centre, tolerance, size) — the value with the most others within
/// 10 % (at least 0.3 s) of it, when there are `MIN_CUTS` and it is at least `MIN_IDLE_US`.
fn densest(mut v: Vec<i64>) -> Option<(i64, i64, usize)> {
    v.sort_unstable();
    let tol = |x: i64| (x / 10).max(300_000);
    let mut best: Option<(i64, i64, usize)> = None;
    let (mut lo, mut hi) = (0usize, 0usize);
    for &x in &v {
        let t = tol(x);
        while v[lo] < x.saturating_sub(t) {
            lo += 1;
        }
        hi = hi.max(lo);
        while hi < v.len() && v[hi] <= x.saturating_add(t) {
            hi += 1;
        }
        let n = hi - lo;
        if best.is_none_or(|b| n > b.2) {
            best = Some((x, t, n));
        }
    }
    best.filter(|b| b.2 >= MIN_CUTS && b.0 >= MIN_IDLE_US)
}
