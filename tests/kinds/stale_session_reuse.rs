//! `stale_session_reuse`: requests with a session id the server declared gone (python-sdk
//! #1676, typescript-sdk #1708).
//!
//! Positive: the dead id sent twice more after its 404; a dead id still used after another
//! application initialised. Negative: a 404 after the client's own DELETE.

use crate::common::*;
use serde_json::json;

#[test]
fn stale_session_reuse_without_reinitialize() {
    let fs = dead_session(false);
    assert_kinds(&fs, &[("stale_session_reuse", "warning")]);
    assert_eq!(one(&fs, "stale_session_reuse")["session_id"], SID);
}

/// A 404 after the client's own DELETE is the expected answer, not a dead session reused.
#[test]
fn a_404_after_delete_is_expected() {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(
        &mut cap,
        b"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nMcp-Session-Id: s1\r\n\r\n",
    );
    c.server(&mut cap, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    for _ in 0..2 {
        c.client(&mut cap, &post(Some(SID), &list));
        c.server(&mut cap, &status(404, "Not Found"));
    }
    c.close(&mut cap);
    assert_kinds(&analyze(&cap, &[]), &[]);
}

/// Two applications on one address: one keeps using its dead session after the other
/// initialised: the reuse is reported, and the other's session is no re-initialisation of it.
#[test]
fn dead_id_still_used_after_someone_else_initialised() {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &list));
    c.server(&mut cap, &status(404, "Not Found"));
    handshake_as(&mut cap, "s2");
    cap.wait(1_000_000);
    c.client(&mut cap, &post(Some(SID), &list));
    c.server(&mut cap, &status(404, "Not Found"));
    c.close(&mut cap);
    assert_kinds(&analyze(&cap, &[]), &[("stale_session_reuse", "warning")]);
}
