//! Hostile captures, small versions: each shape of `tests/shapes/mod.rs` runs through the
//! library (with bounds made small where the full size would be slow in a debug build), and must
//! end with the bound's anomaly code, no panic, and no finding that rests on what was dropped: a
//! bound reached makes a judgement unverifiable, never a false alarm. The full sizes, with peak
//! memory and time, are `cargo bench --bench hostile`.

mod shapes;

use std::collections::BTreeMap;

use mcpcap::budget::Kept;
use mcpcap::{Analyzer, Options};

/// What a run concluded: findings (kind, severity), anomaly codes with their counts, calls'
/// outcomes, the number of flows.
struct Run {
    findings: Vec<(String, String)>,
    anomalies: BTreeMap<String, u64>,
    outcomes: Vec<String>,
    flows: usize,
}

fn run_with(pcap: &[u8], kept: Kept) -> Run {
    let mut a = Analyzer::new(Options {
        kept,
        ..Default::default()
    });
    let mut capture = mcpcap::anomaly::Anomalies::default();
    mcpcap::capture::read_capture(pcap, 1, &mut capture, |f| a.frame(&f)).expect("read");
    let exchanges = a.finish();
    let analysis = mcpcap::analyze_exchanges(&exchanges, &[], a.counters.ts_last);
    let mut anomalies = BTreeMap::new();
    for set in [
        &capture,
        &a.anomalies,
        &a.flows.anomalies,
        &a.http.anomalies,
        &analysis.anomalies,
    ] {
        for (code, n) in set.counts.iter() {
            *anomalies.entry(code.to_string()).or_insert(0) += n;
        }
    }
    Run {
        findings: analysis
            .findings
            .iter()
            .map(|f| (f.kind.to_string(), f.severity.as_str().to_string()))
            .collect(),
        anomalies,
        outcomes: analysis
            .calls
            .iter()
            .map(|c| c.outcome.as_str().to_string())
            .collect(),
        flows: a.flows.len(),
    }
}

fn run(pcap: &[u8]) -> Run {
    run_with(pcap, Kept::default())
}

/// No error or warning: nothing wrong was shown.
fn assert_no_alarm(r: &Run) {
    let alarms: Vec<_> = r.findings.iter().filter(|(_, s)| s != "info").collect();
    assert!(alarms.is_empty(), "false alarms: {alarms:?}");
}

#[test]
fn a_batch_bomb_keeps_its_first_elements_and_counts_the_rest() {
    // Two gzip bodies of about 120,000 `{}` each: past the 65,536 elements kept per body.
    let r = run(&shapes::batch_bomb(2, 360_000, false, true));
    assert_eq!(
        r.anomalies.get("jsonrpc.batch_too_large"),
        Some(&2),
        "{:?}",
        r.anomalies
    );
    assert_eq!(r.anomalies.get("jsonrpc.not_a_message"), Some(&2));
    assert_no_alarm(&r);
}

#[test]
fn batch_elements_are_bounded_over_all_bodies_too() {
    // Valid notifications, 1,000 elements kept in all: the later bodies keep none.
    let small = Kept::with_limits(1_000, 256 << 20, 64 << 20);
    let r = run_with(&shapes::batch_bomb(3, 60_000, true, false), small);
    assert_eq!(
        r.anomalies.get("jsonrpc.batch_too_large"),
        Some(&3),
        "{:?}",
        r.anomalies
    );
    assert_no_alarm(&r);
}

#[test]
fn tiny_events_of_coded_bodies_past_their_bound_are_counted_and_unverifiable() {
    // Two gzip SSE bodies of tiny events; the events of decoded bodies may take 256 KiB.
    let small = Kept::with_limits(1 << 20, 256 << 20, 256 << 10);
    let r = run_with(&shapes::gzip_tiny_events(2, 400_000), small);
    assert!(
        r.anomalies.contains_key("sse.events_not_kept"),
        "{:?}",
        r.anomalies
    );
    // The calls' results may be among the events not kept: not lost, unverifiable.
    assert_no_alarm(&r);
    assert!(
        r.findings.iter().all(|(k, _)| k == "response_unverifiable"),
        "{:?}",
        r.findings
    );
    assert_eq!(
        r.outcomes.iter().filter(|o| *o == "unverifiable").count(),
        2,
        "{:?}",
        r.outcomes
    );
    // Without the bound, every event is kept, and the calls are lost (none has a result).
    let all = run(&shapes::gzip_tiny_events(2, 400_000));
    assert!(!all.anomalies.contains_key("sse.events_not_kept"));
}

#[test]
fn a_result_nested_deeper_than_serde_reads_is_an_answer() {
    for depth in [128, 200, 100_000] {
        let r = run(&shapes::deep_result(depth));
        assert_eq!(
            r.anomalies.get("jsonrpc.too_deep"),
            Some(&2),
            "{depth}: {:?}",
            r.anomalies
        );
        assert!(!r.anomalies.contains_key("sse.invalid_json"), "{depth}");
        assert!(
            !r.anomalies.contains_key("http.response_not_json"),
            "{depth}"
        );
        assert!(r.findings.is_empty(), "{depth}: {:?}", r.findings);
        assert_eq!(r.outcomes, ["result", "result", "result"], "{depth}");
    }
    // Just within serde_json's limit: read in full, no anomaly.
    let r = run(&shapes::deep_result(100));
    assert!(!r.anomalies.contains_key("jsonrpc.too_deep"));
}

#[test]
fn an_empty_resumption_loop_is_one_finding() {
    let r = run(&shapes::empty_resume_loop(300));
    assert!(
        r.findings
            .contains(&("empty_resume_loop".into(), "warning".into())),
        "{:?}",
        r.findings
    );
}

#[test]
fn a_syn_flood_is_one_row_per_connection_and_no_finding() {
    let r = run(&shapes::syn_flood(20_000, 1));
    assert_eq!(r.flows, 20_000);
    assert!(r.findings.is_empty());
}

#[test]
fn connections_left_inside_a_head_and_many_sessions_are_no_alarm() {
    let r = run(&shapes::open_heads(2_000, 2048));
    assert_eq!(r.flows, 2_000);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    let r = run(&shapes::many_sessions(200));
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert_eq!(r.outcomes.len(), 400);
    assert!(r.outcomes.iter().all(|o| o == "result"));
}

#[test]
fn batches_of_values_that_are_no_messages_are_counted() {
    let r = run(&shapes::invalid_batches(1_000));
    assert_eq!(
        r.anomalies.get("jsonrpc.not_a_message"),
        Some(&2),
        "{:?}",
        r.anomalies
    );
    assert_no_alarm(&r);
}

#[test]
fn the_shapes_that_held_already_still_hold() {
    let r = run(&shapes::ooo_flood(60_000));
    assert!(
        r.anomalies.contains_key("tcp.ooo_buffer_full"),
        "{:?}",
        r.anomalies
    );
    let r = run(&shapes::long_sse_line(3 << 20));
    assert!(
        r.anomalies.contains_key("sse.line_too_long"),
        "{:?}",
        r.anomalies
    );
    for coding in ["gzip", "br"] {
        let r = run(&shapes::decoding_bomb(300 << 20, coding));
        assert!(
            r.anomalies.contains_key("http.decoded_too_large"),
            "{coding}: {:?}",
            r.anomalies
        );
        // The answer is cut by the bound: not lost, unverifiable.
        assert_no_alarm(&r);
    }
    let r = run(&shapes::port_scan(5_000));
    assert_eq!(r.flows, 5_000);
    assert!(r.findings.is_empty());
}
