//! `cursor_reset_ignored`: typescript-sdk #2769: an empty `id:` line resets the cursor, and the client resumes from the older one.
//!
//! Positive: `fixtures/mcp-issues/empty_id_reset_ts.pcap`, made with the published SDKs. Negative: its twin
//! `fixtures/mcp-issues/empty_id_none_ts.pcap`.

use crate::common::*;

#[test]
fn an_empty_id_then_a_resume_from_the_older_cursor() {
    let fs = fixture_findings("mcp-issues/empty_id_reset_ts.pcap");
    let f = one(&fs, "cursor_reset_ignored");
    assert_eq!(f["severity"], "warning");
    let detail = f["detail"].as_str().unwrap();
    assert!(detail.contains("an empty id line"), "{detail}");
}

#[test]
fn every_event_with_its_id_is_resumed_rightly() {
    let fs = fixture_findings("mcp-issues/empty_id_none_ts.pcap");
    assert!(!has_kind(&fs, "cursor_reset_ignored"), "{fs:#?}");
}
