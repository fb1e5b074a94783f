//! `resume_orphaned`: typescript-sdk #943: the resumed standalone GET is registered under another stream id and carries nothing.
//!
//! Positive: `fixtures/mcp-issues/get_resume_dead_ts.pcap`, made with the published SDKs. Negative: its twin
//! `fixtures/mcp-issues/get_resume_ok_ts.pcap`.

use crate::common::*;

#[test]
fn a_resumed_standalone_stream_the_server_no_longer_writes_to() {
    let fs = fixture_findings("mcp-issues/get_resume_dead_ts.pcap");
    let f = one(&fs, "resume_orphaned");
    assert_eq!(f["severity"], "warning");
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains("the same request as the one in frame"),
        "{detail}"
    );
}

#[test]
fn a_resumed_stream_that_carries_the_notices() {
    let fs = fixture_findings("mcp-issues/get_resume_ok_ts.pcap");
    assert!(!has_kind(&fs, "resume_orphaned"), "{fs:#?}");
}
