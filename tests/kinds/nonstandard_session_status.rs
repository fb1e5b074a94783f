//! `nonstandard_session_status`: a session the server does not know refused with another
//! status than 404 (python-sdk #1004, typescript-sdk #389; MCP "Session Management").
//!
//! Positive: `400 Bad Request: No valid session ID provided`, with the client sending the id
//! again. Negatives: the same with 404; a single 400 whose body names no session.

use crate::common::*;
use serde_json::{json, Value};

/// A status `code` whose text body is `body`.
fn answer(code: u16, reason: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// After the handshake, `tools/list` sent `times` times and answered with `response`.
fn refused(response: &[u8], times: usize) -> Vec<Value> {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    for _ in 0..times {
        c.client(&mut cap, &post(Some(SID), &list));
        c.server(&mut cap, response);
        cap.wait(500_000);
    }
    c.close(&mut cap);
    analyze(&cap, &[])
}

#[test]
fn a_lost_session_answered_400() {
    let fs = refused(
        &answer(
            400,
            "Bad Request",
            "Bad Request: No valid session ID provided",
        ),
        3,
    );
    assert_kinds(
        &fs,
        &[
            ("nonstandard_session_status", "warning"),
            ("stale_session_reuse", "warning"),
        ],
    );
    let detail = one(&fs, "nonstandard_session_status")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        detail.starts_with("The server refused session s1 with HTTP 400 \"Bad Request: No valid session ID provided\""),
        "{detail}"
    );
}

#[test]
fn a_lost_session_answered_404_is_standard() {
    let fs = refused(&answer(404, "Not Found", "Session not found"), 3);
    assert_kinds(&fs, &[("stale_session_reuse", "warning")]);
}

/// One 400 about the request itself is a bad request, not a refused session.
#[test]
fn a_single_400_about_the_request_is_no_refusal() {
    let fs = refused(&answer(400, "Bad Request", "Invalid params"), 1);
    assert_kinds(&fs, &[]);
}
