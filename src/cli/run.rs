//! Carrying out a [`Plan`]: read the captures, finish the analyzers, put the vantage points on
//! one clock, run the detectors, write the tables, and judge the findings.

use mcpcap::anomaly::Code;
use std::path::PathBuf;
use std::sync::Arc;

use mcpcap::http::Exchange;
use mcpcap::vantage::ClockOffset;

use super::dump::Dump;
use super::output::{self, Results};
use super::plan::{Inputs, Plan};
use super::progress::Progress;
use super::read::{self, Capture};
use super::{inputs, EXIT_FINDINGS, EXIT_OK, EXIT_USAGE};

/// Run an analysing command; returns its exit status.
///
/// Errors: `--dump-streams` or `--out` cannot be created or written, or standard output fails
/// (not a closed pipe); the message names the path. A capture that cannot be read is said on
/// its own line and left out; when none can be read the status is [`EXIT_USAGE`].
pub fn run(plan: &Plan) -> anyhow::Result<i32> {
    let mut dump = plan.dump_streams.as_deref().map(Dump::new).transpose()?;
    // The secrets of Decryption Secrets Blocks are read from each file's start first: the
    // workers decrypt with secrets fixed before they start.
    let (order, secrets, stream) = match &plan.inputs {
        Inputs::Stream { path, stdin } => {
            let (secrets, stream) = match read::open(path, *stdin) {
                Some(input) => {
                    let (s, input) = inputs::stream_head(input);
                    (s, Some(input))
                }
                None => (Vec::new(), None),
            };
            (vec![(path.clone(), None)], secrets, stream)
        }
        Inputs::Files(files) => {
            let (order, secrets) = inputs::capture_order(files);
            (order, secrets, None)
        }
    };
    let options = plan.options(order.len(), &secrets);
    let mut progress = Progress::new(plan.progress, total_bytes(&order));
    let mut capture = read::read_all(plan, &order, stream, &options, dump.as_mut(), &mut progress);
    progress.say(format!("analysing {} sessions", capture.live_sessions()));
    if capture.unreadable() {
        return Ok(EXIT_USAGE);
    }
    if !options.ports.is_empty() {
        note_no_port(&options.ports, &capture);
    }
    let merged = merge(&mut capture, dump)?;
    let model = mcpcap::model_of(&merged.exchanges, &plan.backend_headers);
    let exchanges = Arc::new(merged.exchanges);
    let beside = output::spawn_beside(plan, &model, &exchanges);
    let refused = refused_connects(&capture.vantages, &merged.offsets, &exchanges);
    // On the first vantage point's clock, as the exchanges are.
    let tls: Vec<mcpcap::tls::FlowTls> = capture
        .vantages
        .iter()
        .zip(&merged.offsets)
        .flat_map(|(v, o)| {
            let shift = o.offset_us.unwrap_or(0);
            v.analyzer.http.tls.flows.values().map(move |t| {
                let mut t = t.clone();
                t.shift_time(-shift);
                t
            })
        })
        .collect();
    let mut analysis = mcpcap::analyze_model(
        model,
        &exchanges,
        &merged.app_seq,
        merged.capture_end,
        &refused.kept,
        &tls,
    );
    if refused.not_kept > 0 {
        analysis.anomalies.add(mcpcap::anomaly::Anomaly::new(
            Code::DetectRefusedConnects,
            None,
            None,
            format!(
                "{} refused connection attempts to the servers of the capture's exchanges were not kept past the first {MAX_REFUSED_CONNECTS}: connection_refused reads only those",
                refused.not_kept
            ),
        ));
    }
    let tls = super::terminal::undecrypted_tls(&analysis);
    if tls > 0 {
        say!(
            "mcpcap: {tls} TLS connection(s) carried application data that was not decrypted: any MCP inside them is not seen (--tls-keylog FILE decrypts them)"
        );
    }
    progress.say(format!(
        "{} sessions, {} findings; writing tables",
        analysis.model.sessions.len(),
        analysis.findings.len()
    ));
    if plan.progress_leaves_first {
        // The tables go to the terminal or stdout: the bar leaves first.
        progress.finish();
    }
    if let Some(x) = &plan.extract {
        let n = super::extract::write(x, &analysis, &exchanges, &capture)?;
        progress.finish();
        say!("{n} packets written to {}", x.out.display());
        return Ok(EXIT_OK);
    }
    let results = Results::new(&analysis, &exchanges, &capture, &merged.offsets);
    if let Some(path) = &plan.report {
        output::write_report(plan, &results, path)?;
    }
    if plan.mode != super::plan::Mode::Report {
        output::write(plan, &results, beside)?;
    }
    drop(results);
    // Only `analyze` judges (`Plan::fail_on`).
    let failed = plan
        .fail_on
        .is_some_and(|t| analysis.findings.iter().any(|f| f.severity >= t));
    progress.finish();
    // The process ends right after this: freeing millions of records one by one would only
    // cost time (a tenth of a run), so the largest structures are left to the exit.
    std::mem::forget(analysis);
    std::mem::forget(exchanges);
    std::mem::forget(capture);
    Ok(if failed { EXIT_FINDINGS } else { EXIT_OK })
}

/// How many refused connection attempts are kept for the detectors (about 70 bytes each).
const MAX_REFUSED_CONNECTS: usize = 65_536;

/// The refused connection attempts kept for the detectors, and how many were not.
struct Refused {
    kept: Vec<mcpcap::detect::RefusedConnect>,
    not_kept: u64,
}

/// The refused connection attempts ([`mcpcap::detect::RefusedConnect::of`]) of every vantage
/// point to a server of `exchanges`, on the first vantage point's clock, in time order; at most
/// [`MAX_REFUSED_CONNECTS`], the earliest.
fn refused_connects(
    vantages: &[read::Vantage],
    offsets: &[ClockOffset],
    exchanges: &[Exchange],
) -> Refused {
    let servers: std::collections::HashSet<(std::net::IpAddr, u16)> =
        exchanges.iter().filter_map(|e| e.server).collect();
    let mut kept = Vec::new();
    for (v, o) in vantages.iter().zip(offsets) {
        let shift = o.offset_us.unwrap_or(0);
        kept.extend(
            v.analyzer
                .flows
                .rows()
                .filter_map(|row| mcpcap::detect::RefusedConnect::of(&row))
                .filter(|r| servers.contains(&r.server))
                .map(|mut r| {
                    r.ts -= shift;
                    r
                }),
        );
    }
    kept.sort_unstable_by_key(|r| (r.ts, r.flow_index));
    let not_kept = kept.len().saturating_sub(MAX_REFUSED_CONNECTS) as u64;
    kept.truncate(MAX_REFUSED_CONNECTS);
    Refused { kept, not_kept }
}

/// The bytes of the files of `order`, for the progress bar (0 for what cannot be measured:
/// standard input, a pipe).
fn total_bytes(order: &[(PathBuf, Option<i64>)]) -> u64 {
    order
        .iter()
        .filter_map(|(p, _)| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// Say so when `--port` left out every TCP segment of a capture that had some.
fn note_no_port(ports: &[u16], capture: &Capture) {
    let filtered = capture.count(|c| c.filtered);
    if filtered > 0 && capture.count(|c| c.tcp_segments) == 0 {
        let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
        say!(
            "mcpcap: no TCP segment has port {} on either side; {} were left out",
            ports.join(" or "),
            filtered
        );
    }
}

/// The exchanges of every vantage point on one clock, and what the detectors need with them.
struct Merged {
    /// Every exchange, in time order (then flow, then position on the flow).
    exchanges: Vec<Exchange>,
    /// Each vantage point's clock offset to the first one's.
    offsets: Vec<ClockOffset>,
    /// Time of the capture's last frame on the first vantage point's clock, µs.
    capture_end: Option<i64>,
    /// The application sequence pointers in use.
    app_seq: Vec<String>,
}

/// Finish every vantage point's analyzer (the dump, when there is one, gets the closing
/// connections' bytes and its files their final names), move each one's times onto the first
/// one's clock, and merge their exchanges.
///
/// Errors: the dump's files cannot be written or renamed.
fn merge(capture: &mut Capture, mut dump: Option<Dump>) -> anyhow::Result<Merged> {
    let vantages = &mut capture.vantages;
    let mut per_vantage: Vec<Vec<Exchange>> = vantages
        .iter_mut()
        .map(|v| match dump.as_mut() {
            Some(d) => v.analyzer.finish_tap(d),
            None => v.analyzer.finish(),
        })
        .collect();
    if let Some(d) = dump {
        finish_dump(d, vantages)?;
    }
    // One clock: each vantage point's times move onto the first one's.
    let offsets = mcpcap::vantage::estimate_offsets(&per_vantage);
    for (ex, off) in per_vantage.iter_mut().zip(&offsets) {
        if let Some(o) = off.offset_us.filter(|o| *o != 0) {
            ex.iter_mut().for_each(|e| e.shift_time(-o));
        }
    }
    // One vantage point's exchanges are already in order (`Analyzer::finish`, its clock not
    // moved); several are merged (one copy) and sorted. Flow ids are unique across vantage
    // points: the key is unique, the order deterministic.
    let exchanges: Vec<Exchange> = if per_vantage.len() == 1 {
        per_vantage.pop().unwrap_or_default()
    } else {
        let mut all: Vec<_> = per_vantage.into_iter().flatten().collect();
        all.sort_unstable_by_key(|e| (e.ts(), e.flow_index, e.trans_depth));
        all
    };
    let capture_end = vantages
        .iter()
        .zip(&offsets)
        .filter_map(|(v, o)| Some(v.analyzer.counters.ts_last? - o.offset_us.unwrap_or(0)))
        .max();
    let app_seq = vantages
        .first()
        .map(|v| v.analyzer.app_seq_pointers().to_vec())
        .unwrap_or_default();
    Ok(Merged {
        exchanges,
        offsets,
        capture_end,
        app_seq,
    })
}

/// Close the dump's files and name each by the side that sent it: the client's direction of a
/// flow as HTTP told it, else as the flow table guesses it, in whichever vantage point has the
/// flow.
///
/// Errors: a file could not be written or renamed.
fn finish_dump(dump: Dump, vantages: &[read::Vantage]) -> anyhow::Result<()> {
    dump.finish(|fi| {
        vantages
            .iter()
            .find_map(|v| {
                v.analyzer
                    .http
                    .client_dir
                    .get(&fi)
                    .copied()
                    .or_else(|| v.analyzer.flows.row(fi).map(|f| f.client_guess()))
            })
            .unwrap_or(0)
    })
}
