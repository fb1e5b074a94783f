//! `partly_undecrypted`: a session whose server also carried, during it, TLS connections that
//! were not decrypted is `unverifiable`, not `intact`.
//!
//! Positive: `fixtures/mcp-tls/tls13_partial_dsb.pcapng` (Python SDK through a TLS 1.3 proxy,
//! its key log embedded without the secrets of the tools/list connection). Negative: the same
//! capture with the whole key log (`tls13_dsb.pcapng`), its cleartext twin, and the capture
//! without any key log (no session at all to judge).

use crate::common::*;

#[test]
fn a_session_with_one_connection_not_decrypted_is_unverifiable() {
    let fs = fixture_findings("mcp-tls/tls13_partial_dsb.pcapng");
    let f = one(&fs, "partly_undecrypted");
    assert_eq!(f["severity"], "info");
    assert_eq!(f["session_id"], "7ba24b7ed5ef44d3901da67316792f88");
    assert_eq!(f["flow_id"], "F3");
    assert_eq!(f["frame"], 57);
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail
            .contains("F3 to 127.0.0.1:3443 (no_keys, 5 application-data record(s), frames 57–61)"),
        "{detail}"
    );
    // The verdict says so.
    let out = std::env::temp_dir().join(format!("mcpcap-partly-{}", std::process::id()));
    write_csv_tables(&fixture_path("mcp-tls/tls13_partial_dsb.pcapng"), &out);
    let sessions = csv_rows(&std::fs::read_to_string(out.join("sessions.csv")).unwrap());
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0]["verdict"], "unverifiable");
    assert_eq!(sessions[0]["infos"], "1");
}

#[test]
fn every_connection_decrypted_or_none_in_tls_is_not() {
    for f in [
        "mcp-tls/tls13_dsb.pcapng",
        "mcp-tls/tls13_clear.pcap",
        "mcp-tls/tls13.pcap",
    ] {
        let fs = fixture_findings(f);
        assert!(!has_kind(&fs, "partly_undecrypted"), "{f}: {fs:#?}");
    }
}
