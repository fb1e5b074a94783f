//! `backend_switch`: a resumption served by another backend than the one that delivered its
//! cursor.
//!
//! Positive: `fixtures/mcp/fork_restart_client.pcap` (the resumption from 9 went to b2, the
//! cursor came from b1); the backend-switch findings of `suspect_terminal` and `hops.rs` also
//! assert it. Negative: `fixtures/mcp/resume_ok_ts.pcap`, one server throughout.

use crate::common::*;

/// `fixtures/mcp/fork_restart_client.pcap`: the client leg of a fork behind nginx, backends
/// named in `X-Backend`.
#[test]
fn fires_on_fork_restart_client() {
    let fs = fixture_findings("mcp/fork_restart_client.pcap");
    let f = one(&fs, "backend_switch");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["frame"], 49);
    assert_eq!(f["last_event_id"], "9");
    assert_eq!(f["expected"], "backend b1");
    assert_eq!(f["observed"], "backend b2");
    assert!(
        f["detail"]
            .as_str()
            .unwrap()
            .contains("was served by backend b2"),
        "{f}"
    );
}

/// Negative: `fixtures/mcp/resume_ok_ts.pcap` (a TS SDK resumption on the one server), the capture `docs/findings.md` names as one it must
/// not fire on.
#[test]
fn not_on_resume_ok_ts() {
    let fs = fixture_findings("mcp/resume_ok_ts.pcap");
    assert!(!has_kind(&fs, "backend_switch"), "{}", pretty(&fs));
}
