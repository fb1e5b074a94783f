//! `unknown_last_event_id`: a cursor no captured stream of the session delivered.
//!
//! Positive: a resumption from 999 (warning); info when the session began before the capture
//! (unless the cursor names a stream the capture saw) or when the capture lost bytes before it.
//! Negative: `fixtures/mcp/resume_ok_ts.pcap`, a cursor its stream delivered.

use crate::common::*;

#[test]
fn unknown_last_event_id() {
    let mut cap = Capture::new();
    healthy(&mut cap);
    resume(&mut cap, "999", &sse_response(None, &[], true));
    let fs = findings(&cap);
    assert_kinds(&fs, &[("unknown_last_event_id", "warning")]);
    assert_keys(one(&fs, "unknown_last_event_id"), Some("999"), None, None);
    assert_eq!(exit_status(&cap, "error"), 0);
    assert_eq!(exit_status(&cap, "warning"), 1);
}

/// A session whose first captured request already carried its `Mcp-Session-Id` began before
/// the capture: a cursor no captured stream delivered could have come from before it (info).
#[test]
fn an_unknown_cursor_of_a_session_older_than_the_capture_is_info() {
    let mut cap = Capture::new();
    resume(&mut cap, "999", &sse_response(None, &[], true));
    let fs = findings(&cap);
    assert_kinds(&fs, &[("unknown_last_event_id", "info")]);
    assert!(fs[0]["detail"]
        .as_str()
        .unwrap()
        .contains("the session began before the capture"));
    // Unless the cursor names a stream the capture saw (Go ids: its stream part): a warning.
    let go = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut cap = Capture::new();
    let evs: Vec<Ev> = (1..=3)
        .map(|i| Ev::id(format!("{go}_{i}"), progress(&token(2), i, 10)))
        .collect();
    tools_call_stream(&mut cap, &evs, End::CutFin);
    resume(&mut cap, &format!("{go}_7"), &sse_response(None, &[], true));
    assert_kinds(
        &findings(&cap),
        &[
            ("lost_response", "error"),
            ("unknown_last_event_id", "warning"),
        ],
    );
    // A stream seen only after the resumption says nothing of the cursor before it: info (the
    // call, cut at the capture's end, is unverifiable).
    let mut cap = Capture::new();
    resume(&mut cap, &format!("{go}_7"), &sse_response(None, &[], true));
    tools_call_stream(&mut cap, &evs, End::CutFin);
    assert_kinds(
        &findings(&cap),
        &[
            ("response_unverifiable", "info"),
            ("unknown_last_event_id", "info"),
        ],
    );
    // A client looping on the cursor: each resumption is judged alike (the session's streams
    // are read once for all of them, not once each).
    let mut cap = Capture::new();
    tools_call_stream(&mut cap, &evs, End::CutFin);
    for _ in 0..40 {
        resume(&mut cap, &format!("{go}_7"), &sse_response(None, &[], true));
    }
    resume(
        &mut cap,
        "OTHERSTREAMABCDEFGHIJKLMNO_7",
        &sse_response(None, &[], true),
    );
    let fs = findings(&cap);
    let unknown: Vec<&str> = fs
        .iter()
        .filter(|f| f["kind"] == "unknown_last_event_id")
        .map(|f| f["severity"].as_str().unwrap())
        .collect();
    assert_eq!(unknown.len(), 41);
    assert!(unknown[..40].iter().all(|s| *s == "warning"));
    assert_eq!(unknown[40], "info");
}

/// A cursor the capture could have lost (a response of the session missed bytes before the
/// resumption) is not said to be invented: `unknown_last_event_id` is info, not a warning.
#[test]
fn an_unknown_cursor_after_a_capture_gap_is_info() {
    let mut cap = Capture::with_segment_size(60);
    handshake(&mut cap);
    let port = tools_call_stream(&mut cap, &prog_range(1..=3, 1, 5), End::CutFin);
    let data = cap.server_data_frames(port);
    // The segment with the end of the stream (event 3) is not in the capture; its FIN is.
    cap.lose(*data.last().unwrap());
    let mut resumed = prog_range(4..=5, 4, 5);
    resumed.push(res(6));
    resume(&mut cap, "3", &sse_response(None, &resumed, true));
    let fs = findings(&cap);
    assert_kinds(&fs, &[("unknown_last_event_id", "info")]);
    assert!(fs[0]["detail"]
        .as_str()
        .unwrap()
        .contains("the capture lost bytes"));
}

/// Negative: `fixtures/mcp/resume_ok_ts.pcap` (a cursor its stream delivered), the capture `docs/findings.md` names as one it must
/// not fire on.
#[test]
fn not_on_resume_ok_ts() {
    let fs = fixture_findings("mcp/resume_ok_ts.pcap");
    assert!(!has_kind(&fs, "unknown_last_event_id"), "{}", pretty(&fs));
}
