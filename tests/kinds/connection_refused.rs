//! `connection_refused`: python-sdk #3441: a server killed mid-call; the client's reconnects are refused SYN → RST.
//!
//! Positive: `fixtures/mcp-issues/server_died_mid_call_py.pcap`, made with the published SDKs. Negative: its twin
//! `fixtures/mcp-issues/lb_sticky_py.pcap`.

use crate::common::*;

#[test]
fn a_server_gone_refuses_the_reconnects() {
    let fs = fixture_findings("mcp-issues/server_died_mid_call_py.pcap");
    let f = one(&fs, "connection_refused");
    assert_eq!(f["severity"], "warning");
    let detail = f["detail"].as_str().unwrap();
    assert!(detail.contains("frames 69→70, 71→72"), "{detail}");
}

#[test]
fn a_server_that_stays_up_refuses_nothing() {
    let fs = fixture_findings("mcp-issues/lb_sticky_py.pcap");
    assert!(!has_kind(&fs, "connection_refused"), "{fs:#?}");
}
