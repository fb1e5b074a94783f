//! `session_reinitialized`: a new session after a 404, the correct recovery (python-sdk #1676,
//! typescript-sdk #1708).
//!
//! Positive: after the 404 the client initialises `s2` and lists there. Negative:
//! `fixtures/mcp-sdk/stale_session_ts.pcap`, a client that keeps the dead id (and the
//! `stale_session_reuse` scenarios, where another client's session is no re-initialisation).

use crate::common::*;

#[test]
fn session_reinitialized_after_404() {
    let fs = dead_session(true);
    assert_kinds(&fs, &[("session_reinitialized", "info")]);
    let f = one(&fs, "session_reinitialized");
    assert_eq!(f["session_id"], "s2");
    assert_eq!(f["request_id"], "1");
}

/// Negative: `fixtures/mcp-sdk/stale_session_ts.pcap` (a TS client that keeps the dead session id), the capture `docs/findings.md` names as one it must
/// not fire on.
#[test]
fn not_on_stale_session_ts() {
    let fs = fixture_findings("mcp-sdk/stale_session_ts.pcap");
    assert!(!has_kind(&fs, "session_reinitialized"), "{}", pretty(&fs));
}
