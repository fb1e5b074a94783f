//! `stale_stream_conflict`: typescript-sdk #2098: a proxy drops the client side of the GET stream and the server answers the reconnects 409.
//!
//! Positive: `fixtures/mcp-issues/zombie_get_409_ts.pcap`, made with the published SDKs. Negative: its twin
//! `fixtures/mcp-issues/get_resume_ok_ts.pcap`.

use crate::common::*;

#[test]
fn a_reconnect_refused_409_while_the_server_holds_a_zombie() {
    let fs = fixture_findings("mcp-issues/zombie_get_409_ts.pcap");
    let f = one(&fs, "stale_stream_conflict");
    assert_eq!(f["severity"], "warning");
    let detail = f["detail"].as_str().unwrap();
    assert!(detail.contains("2 such refusal(s) in all"), "{detail}");
}

#[test]
fn a_reconnect_the_server_accepts() {
    let fs = fixture_findings("mcp-issues/get_resume_ok_ts.pcap");
    assert!(!has_kind(&fs, "stale_stream_conflict"), "{fs:#?}");
}
