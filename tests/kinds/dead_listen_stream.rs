//! `dead_listen_stream`: python-sdk #3492: a stateless server answers the standalone GET 200 and never writes to it.
//!
//! Positive: `fixtures/mcp-issues/stateless_get_hang_py.pcap`, made with the published SDKs. Negative: its twin
//! `fixtures/mcp-issues/stateless_get_405_ts.pcap`.

use crate::common::*;

#[test]
fn a_stateless_get_answered_200_and_silent() {
    let fs = fixture_findings("mcp-issues/stateless_get_hang_py.pcap");
    let f = one(&fs, "dead_listen_stream");
    assert_eq!(f["severity"], "warning");
    let detail = f["detail"].as_str().unwrap();
    assert!(detail.contains("wrote nothing on it"), "{detail}");
}

#[test]
fn a_stateless_get_answered_405() {
    let fs = fixture_findings("mcp-issues/stateless_get_405_ts.pcap");
    assert!(!has_kind(&fs, "dead_listen_stream"), "{fs:#?}");
}
