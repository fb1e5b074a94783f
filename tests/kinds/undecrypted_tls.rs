//! `undecrypted_tls`: MCP over TLS without its key log — nothing of it is seen, and that is said.
//!
//! Positive: `fixtures/mcp-tls/tls13.pcap` (Python SDK through a TLS 1.3 proxy), read without
//! its key log. Negative: its cleartext twin `fixtures/mcp-tls/tls13_clear.pcap`.

use crate::common::*;

#[test]
fn tls_without_its_key_log_is_undecrypted() {
    let fs = fixture_findings("mcp-tls/tls13.pcap");
    let f = one(&fs, "undecrypted_tls");
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["session_id"], "");
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("7 TLS connection(s) to 127.0.0.1:3443 (SNI localhost)"),
        "{detail}"
    );
}

#[test]
fn the_same_traffic_in_the_clear_is_not() {
    let fs = fixture_findings("mcp-tls/tls13_clear.pcap");
    assert!(!has_kind(&fs, "undecrypted_tls"), "{fs:#?}");
}
