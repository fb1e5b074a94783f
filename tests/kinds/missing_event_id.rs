//! `missing_event_id`: a message on a resumed stream without an `id:` line.
//!
//! Positive: a progress event without an id between ids 4 and 5 of the resumed connection.
//! Negative: `fixtures/mcp/resume_ok_ts.pcap`, whose every resumed message has its id (its
//! priming events are cursors, not messages).

use crate::common::*;

#[test]
fn missing_event_id() {
    // Id 4, then a progress event without an id line, then the result on id 5.
    let resumed = vec![prog(4, 4, 5), Ev::no_id(progress(&token(2), 5, 5)), res(5)];
    let cap = cut_and_resume(5, End::CutFin, &resumed);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("missing_event_id", "error")]);
    assert_keys(one(&fs, "missing_event_id"), Some("3"), None, None);
}

/// Negative: `fixtures/mcp/resume_ok_ts.pcap` (a TS SDK resumption, every message with its id), the capture `docs/findings.md` names as one it must
/// not fire on.
#[test]
fn not_on_resume_ok_ts() {
    let fs = fixture_findings("mcp/resume_ok_ts.pcap");
    assert!(!has_kind(&fs, "missing_event_id"), "{}", pretty(&fs));
}
