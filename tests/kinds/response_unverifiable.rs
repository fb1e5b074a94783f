//! `response_unverifiable`: a request without a captured response that may lie outside the
//! capture.
//!
//! Positive: a response whose head does not parse (it exists, whatever it said). Negative:
//! `fixtures/mcp/healthy_ts.pcap`, every request answered. (Requests cut by the capture's end
//! or gaps are in `tests/sessions.rs`.)

use crate::common::*;

#[test]
fn a_response_with_an_unreadable_head_is_unverifiable_not_lost() {
    // The server answered, but its head does not parse (a field without a colon): the response
    // exists, whatever it said, so the request is unverifiable (info), not lost (error).
    let mut cap = Capture::new();
    handshake(&mut cap);
    let mut c = tools_call_conn(&mut cap);
    let mut body =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nno colon here\r\n\r\n".to_vec();
    body.extend_from_slice(res(1).text().as_bytes());
    c.server(&mut cap, &body);
    c.server_close(&mut cap);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("response_unverifiable", "info")]);
    // Nothing wrong was seen, but not everything could be: the session is not called intact.
    let sessions = table_csv(&cap, "sessions");
    let verdicts = csv_column(&sessions, "verdict");
    assert_eq!(verdicts, ["unverifiable"], "{sessions}");
}

/// Negative: `fixtures/mcp/healthy_ts.pcap` (every request answered), the capture `docs/findings.md` names as one it must
/// not fire on.
#[test]
fn not_on_healthy_ts() {
    let fs = fixture_findings("mcp/healthy_ts.pcap");
    assert!(!has_kind(&fs, "response_unverifiable"), "{}", pretty(&fs));
}
