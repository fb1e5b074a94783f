//! `session_refused`: requests of a live session refused as for an unknown session while
//! others were served (modelcontextprotocol/modelcontextprotocol PR #325, PrefectHQ/fastmcp
//! #482: replicas behind a balancer without session affinity).
//!
//! Positive: `tools/list` refused 404 "Session not found" while `tools/call` is served, in
//! turn. Negative: every request after the first 404 refused too (`stale_session_reuse`).

use crate::common::*;
use serde_json::{json, Value};

/// `404` with the JSON-RPC error body the Python SDK writes for a session it does not have.
fn session_not_found() -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Session not found"}}).to_string();
    format!(
        "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A session whose `tools/list` requests (ids 2, 4) are refused and whose `tools/call`
/// requests (ids 3, 5) are served — or refused too, when `served` is false.
fn alternating(served: bool) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    for id in [2, 4] {
        let list = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
        c.client(&mut cap, &post(Some(SID), &list));
        c.server(&mut cap, &session_not_found());
        cap.wait(100_000);
        let call = json!({"jsonrpc": "2.0", "id": id + 1, "method": "tools/call", "params": {"name": "whoami"}});
        c.client(&mut cap, &post(Some(SID), &call));
        if served {
            let r = json!({"jsonrpc": "2.0", "id": id + 1, "result": {"content": []}});
            c.server(&mut cap, &json_response(None, &r));
        } else {
            c.server(&mut cap, &session_not_found());
        }
        cap.wait(100_000);
    }
    c.close(&mut cap);
    analyze(&cap, &[])
}

#[test]
fn refusals_between_successes_are_a_refused_session() {
    let fs = alternating(true);
    assert_kinds(&fs, &[("session_refused", "error")]);
    let f = one(&fs, "session_refused");
    assert_eq!(f["session_id"], SID);
    assert_eq!(f["request_id"], "2");
    let detail = f["detail"].as_str().unwrap();
    assert!(detail.starts_with("2 request(s) of session s1 (tools/list ×2) were refused HTTP 404 \"Session not found\""), "{detail}");
    assert!(
        detail.contains("while 3 other(s) (notifications/initialized, tools/call ×2) were served"),
        "{detail}"
    );
    assert!(detail.contains("no session affinity"), "{detail}");
}

/// Nothing served after the first refusal: the session is gone, not spread over servers.
#[test]
fn a_session_refused_from_then_on_is_stale_reuse() {
    let fs = alternating(false);
    assert_kinds(&fs, &[("stale_session_reuse", "warning")]);
}
