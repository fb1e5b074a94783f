//! `app_seq_desync`: the transport ids went on across a resumption while the application's
//! counter (progress, `params.app_seq`) jumped.
//!
//! Positive: ids continue 3 → 4 while progress jumps 3 → 9 of 10; a priming jump to 100 with
//! progress 5 after 3; `fixtures/mcp/synth_replay.pcap`. Negative:
//! `fixtures/mcp-gen/resume_ok_py.pcap`, a resumption whose progress goes on by one. (The
//! `--app-seq` pointer and the step rules are in `tests/app_seq.rs`.)

use crate::common::*;

// About `app_seq_desync` and `suspect_terminal` both: here, the kind its name gives first.

#[test]
fn app_seq_desync_and_suspect_terminal() {
    // Ids continue 3 → 4, but progress jumps 3 → 9 of 10 and the result follows at once.
    let resumed = vec![prog(4, 9, 10), res(5)];
    let cap = cut_and_resume(10, End::CutFin, &resumed);
    let fs = findings(&cap);
    assert_kinds(
        &fs,
        &[("app_seq_desync", "error"), ("suspect_terminal", "error")],
    );
    let f = one(&fs, "app_seq_desync");
    assert_keys(f, Some("3"), Some("4"), None);
    assert_eq!(f["observed"], "9");
    assert_keys(
        one(&fs, "suspect_terminal"),
        Some("3"),
        Some("5"),
        Some("2"),
    );
}

#[test]
fn integer_ids_past_a_priming_jump_do_not_continue_in_the_detail() {
    // Resumed from 3: primed with 100 (ids a shared counter may have spent), then 101 with
    // progress 5 after 3. The desync is reported; the ids went on, they did not continue at 4.
    let (mut cap, c) = call_under_way();
    c.server_close(&mut cap);
    let mut body = sse_head(None);
    body.extend(chunk(b"id: 100\ndata: \n\n"));
    for ev in [
        Ev::id("101", progress(&token(2), 5, 5)),
        Ev::id("102", result(2)),
    ] {
        body.extend(chunk(ev.text().as_bytes()));
    }
    body.extend_from_slice(LAST_CHUNK);
    resume(&mut cap, "3", &body);
    let fs = analyze(&cap, &[]);
    let d = one(&fs, "app_seq_desync")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        d.contains("the transport ids go on past it (next id 101)"),
        "{d}"
    );
}

/// `fixtures/mcp/synth_replay.pcap`: a replica synthesised the continuation, progress 17 → 30
/// while the ids went on 18 → 19 (its MANIFEST entry).
#[test]
fn fires_on_synth_replay() {
    let fs = fixture_findings("mcp/synth_replay.pcap");
    let f = one(&fs, "app_seq_desync");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["last_event_id"], "18");
    assert_eq!(f["event_id"], "19");
    assert_eq!(f["observed"], "30");
}

/// Negative: `fixtures/mcp-gen/resume_ok_py.pcap` (a Python SDK resumption whose progress goes on by one), the capture `docs/findings.md` names as one it must
/// not fire on.
#[test]
fn not_on_resume_ok_py() {
    let fs = fixture_findings("mcp-gen/resume_ok_py.pcap");
    assert!(!has_kind(&fs, "app_seq_desync"), "{}", pretty(&fs));
}
