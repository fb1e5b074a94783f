//! Detectors: a verdict per resumption and findings per session, as facts and rules.
//!
//! The facts ([`facts`]) are computed once from the session model and the exchanges: for each
//! resumption its [`facts::boundary::Boundary`] (the cursor L and where it was delivered, the
//! events the client had, the resumed connection's events, how the first new id relates to L,
//! duplicates, application sequences across the cut, backends), and per stream, connection
//! and session what several rules read ([`context::Context`]). The rules ([`rules`]) are one
//! file per finding kind, listed in [`rules::RULES`]; each reads the facts and emits findings.
//! A resumption's verdict follows from its facts and what its rules found
//! ([`verdict::judge`]). The decision rules are those of `docs/resumption.md`; each kind is
//! explained on `docs/findings.md`.

pub mod calls;
mod connects;
pub(crate) mod context;
pub(crate) mod facts;
mod finding;
mod kind;
pub mod rules;
pub(crate) mod verdict;

pub use connects::RefusedConnect;
pub(crate) use finding::{flow_id, fmt_num};
pub use finding::{Cited, Finding, Severity};
pub use kind::Kind;
pub use verdict::{ResumptionResult, Verdict};

use crate::anomaly::Code;
use crate::hash::FastSet;
use crate::http::Exchange;
use crate::mcp::Model;
use context::Context;
use facts::history::{HISTORY_BUDGET, HISTORY_WINDOW};
use facts::Walk;
use rules::Check;

/// Everything the detectors concluded.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    /// The session model.
    pub model: Model,
    /// One result per resumption.
    pub resumptions: Vec<ResumptionResult>,
    /// Findings, ordered by time, session, kind and frame (then as the rules found them).
    pub findings: Vec<Finding>,
    /// Limits the model and the detectors reached (`model.hop_candidates`, `model.deliveries`,
    /// `detect.history_window`).
    pub anomalies: crate::anomaly::Anomalies,
    /// The exchanges (indices into the exchanges) whose SSE events skipped dense ids inside the
    /// connection: an `id_gap` not at a resumption's cursor. Their streams' verdict is `gap`.
    pub id_gapped: FastSet<usize>,
    /// Every JSON-RPC request and what became of it ([`calls::build`]).
    pub calls: Vec<calls::Call>,
}

/// Run every rule over `model` and its `exchanges` (`app_seq`: the `--app-seq` pointers;
/// `capture_end`: time of the capture's last frame, µs since the Unix epoch; `refused`: the
/// capture's refused connection attempts, in time order; `tls`: the capture's TLS connections).
pub fn run(
    model: Model,
    exchanges: &[Exchange],
    app_seq: &[String],
    capture_end: i64,
    refused: &[RefusedConnect],
    tls: &[crate::tls::FlowTls],
) -> Analysis {
    let mut findings = Vec::new();
    let mut walk = Walk::default();
    let (results, id_gapped) = {
        let mut ctx = Context::new(&model, exchanges, app_seq, capture_end, refused, tls);
        for check in rules::checks() {
            if let Check::Connections(f) = check {
                f(&ctx, &mut findings);
            }
        }
        let mut results = Vec::with_capacity(model.resumptions.len());
        for i in 0..model.resumptions.len() {
            results.push(judge_resumption(&ctx, &mut walk, i, &mut findings));
        }
        verdict::settle(
            &mut results,
            |i| model.resumptions[i].exchange,
            |x| exchanges[x].frame(),
        );
        ctx.judged(&results);
        for check in rules::checks() {
            if let Check::Capture(f) = check {
                f(&ctx, &mut findings);
            }
        }
        (results, ctx.inner_gapped.clone())
    };
    for f in &mut findings {
        f.settle_cited();
    }
    findings.sort_by(|a, b| {
        (a.ts, &a.session_id, a.kind, a.frame).cmp(&(b.ts, &b.session_id, b.kind, b.frame))
    });
    let mut model = model;
    let mut anomalies = std::mem::take(&mut model.anomalies);
    history_anomalies(&walk, exchanges, &mut anomalies);
    let calls = calls::build(&model, exchanges, &findings);
    Analysis {
        model,
        resumptions: results,
        findings,
        anomalies,
        id_gapped,
        calls,
    }
}

/// Judge resumption `index`: its facts, its rules, its verdict; findings go to `out`.
fn judge_resumption(
    ctx: &Context,
    walk: &mut Walk,
    index: usize,
    out: &mut Vec<Finding>,
) -> ResumptionResult {
    let b = facts::boundary::boundary(ctx, walk, index);
    let mut found = Vec::new();
    for check in rules::checks() {
        if let Check::Resumption(f) = check {
            f(ctx, &b, &mut found);
        }
    }
    let result = verdict::judge(&b, &found);
    let explained: Vec<Finding> = rules::checks()
        .filter_map(|check| match check {
            Check::Verdict(f) => f(ctx, &b, &result, &found),
            _ => None,
        })
        .collect();
    out.extend(found.into_iter().map(|f| f.finding));
    out.extend(explained);
    result
}

/// The history limit, said once per stream whose resumptions it cut.
fn history_anomalies(
    walk: &Walk,
    exchanges: &[Exchange],
    anomalies: &mut crate::anomaly::Anomalies,
) {
    let mut cut: Vec<(usize, &facts::history::History)> = walk
        .history
        .iter()
        .filter(|(_, h)| h.windowed > 0)
        .map(|(&st, h)| (st, h))
        .collect();
    cut.sort_unstable_by_key(|&(st, _)| st);
    for (st, h) in cut {
        let e = h.first_windowed.map(|x| &exchanges[x]);
        anomalies.add(crate::anomaly::Anomaly::new(
            Code::DetectHistoryWindow,
            e.map(|e| e.frame()),
            e.map(flow_id),
            format!(
                "stream S{st}: its resumptions had read {HISTORY_BUDGET} events of its history; {} resumption(s) from here on were checked against the stream's last {HISTORY_WINDOW} events only",
                h.windowed,
            ),
        ));
    }
}
