//! `id_restart`: a resumed stream's log began again, as its ids or its progress show.
//!
//! Positive: the resumption replays ids 1..3 and goes on; uuid ids under which progress starts
//! over. Negative: uuid ids whose replay re-sends the cursor's progress once and goes on;
//! `fixtures/mcp/resume_ok_ts.pcap`. (A fork whose ids jump ahead is in `id_gap`, whose
//! negative it is.)

use crate::common::*;

// Named after the restart; it asserts the id_regression and duplicate_delivery of the same fork.

#[test]
fn fork_restarts_ids() {
    // The resumed stream replays ids 1..3 (progress 1..3) and goes on.
    let mut resumed = prog_range(1..=5, 1, 5);
    resumed.push(res(6));
    let cap = cut_and_resume(5, End::CutFin, &resumed);
    let fs = findings(&cap);
    assert_kinds(
        &fs,
        &[
            ("duplicate_delivery", "error"),
            ("id_regression", "error"),
            ("id_restart", "error"),
        ],
    );
    assert_keys(one(&fs, "id_regression"), Some("3"), Some("1"), None);
    assert_keys(one(&fs, "id_restart"), Some("3"), Some("1"), None);
    assert_keys(one(&fs, "duplicate_delivery"), Some("3"), Some("1"), None);
    assert_eq!(exit_status(&cap, "error"), 1);
}

#[test]
fn opaque_ids_with_progress_starting_over_are_a_fork() {
    // uuid ids (Python example store): the resumed connection re-runs the call under new ids,
    // progress 1, 2, … again. The ids cannot show the restart; the application counter does
    // (an id sequence that starts again is a fork: docs/resumption.md, "Forks").
    let uuid = |n: u64| format!("6f1c2a4e-0b7d-4c1e-9a3f-{n:012}");
    let mut cap = Capture::new();
    handshake(&mut cap);
    let first: Vec<Ev> = (1..=3).map(|i| prog(uuid(i), i, 5)).collect();
    tools_call_stream(&mut cap, &first, End::CutFin);
    let mut resumed: Vec<Ev> = (1..=5).map(|i| prog(uuid(100 + i), i, 5)).collect();
    resumed.push(res(uuid(106)));
    resume(&mut cap, &uuid(3), &sse_response(None, &resumed, true));
    // The same finding names the fork as for ids that show it themselves, with no backend to
    // explain it.
    let fs = findings(&cap);
    assert_kinds(
        &fs,
        &[("duplicate_delivery", "error"), ("id_restart", "error")],
    );
    let f = one(&fs, "id_restart");
    assert_eq!(f["event_id"], uuid(101).as_str(), "{}", pretty(&fs));
    assert!(f["detail"]
        .as_str()
        .is_some_and(|d| d.contains("cannot show the restart themselves")));
    let rs = table_csv(&cap, "resumptions");
    assert!(
        csv_rows(&rs)
            .iter()
            .any(|r| r["verdict"] == "forked" && r["reason"].contains("progress started over")),
        "{rs}"
    );

    // Negative: the replay re-sends the cursor's progress once (as an inclusive replay does),
    // then goes on: a duplicate, not a fresh log.
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &first, End::CutFin);
    let mut resumed: Vec<Ev> = (3..=5).map(|i| prog(uuid(100 + i), i, 5)).collect();
    resumed.push(res(uuid(106)));
    resume(&mut cap, &uuid(3), &sse_response(None, &resumed, true));
    assert_kinds(&findings(&cap), &[("duplicate_delivery", "error")]);
    let rs = table_csv(&cap, "resumptions");
    assert!(
        column_has(&rs, "verdict", "resumed") && !rs.contains("started over"),
        "{rs}"
    );
}

/// Negative: `fixtures/mcp/resume_ok_ts.pcap` (a TS SDK resumption that continues the log), the capture `docs/findings.md` names as one it must
/// not fire on.
#[test]
fn not_on_resume_ok_ts() {
    let fs = fixture_findings("mcp/resume_ok_ts.pcap");
    assert!(!has_kind(&fs, "id_restart"), "{}", pretty(&fs));
}
