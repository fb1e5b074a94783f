//! `listen_reconnect_loop`: python-sdk #3257: every standalone GET answered 200 and ended at once, empty, reopened every second.
//!
//! Positive: `fixtures/mcp-issues/get_reconnect_loop_py.pcap`, made with the published SDKs. Negative: its twin
//! `fixtures/mcp-issues/get_resume_ok_ts.pcap`.

use crate::common::*;

#[test]
fn standalone_gets_answered_empty_again_and_again() {
    let fs = fixture_findings("mcp-issues/get_reconnect_loop_py.pcap");
    let f = one(&fs, "listen_reconnect_loop");
    assert_eq!(f["severity"], "warning");
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains("6 standalone GETs without Last-Event-ID"),
        "{detail}"
    );
}

#[test]
fn a_listen_stream_held_open_is_no_loop() {
    let fs = fixture_findings("mcp-issues/get_resume_ok_ts.pcap");
    assert!(!has_kind(&fs, "listen_reconnect_loop"), "{fs:#?}");
}
