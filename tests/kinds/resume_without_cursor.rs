//! `resume_without_cursor`: a broken stream reopened without its cursor (typescript-sdk #2499,
//! modelcontextprotocol/inspector #723).
//!
//! Positive: after the tools/call stream is cut the client's GET has no `Last-Event-ID`; the
//! same behind another stream's resumption. Negative: the GET with the cursor; a fresh GET after
//! a complete stream or after the request was cancelled.

use crate::common::*;
use serde_json::{json, Value};

/// The tools/call stream (ids 1..3) is cut; the client's next GET carries `last_event_id`.
fn cut_then_get(last_event_id: Option<&str>, complete_first: bool) -> Vec<Value> {
    cut_then_get_with(last_event_id, complete_first, false)
}

/// The same; with `cancel`, the client first cancels the tools/call (`notifications/cancelled`).
fn cut_then_get_with(
    last_event_id: Option<&str>,
    complete_first: bool,
    cancel: bool,
) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut evs = progs(2, &["1", "2", "3"], 1, 5);
    if complete_first {
        evs.push(Ev::id("4", result(2)));
    }
    c.server(&mut cap, &sse_response(None, &evs, complete_first));
    if complete_first {
        c.close(&mut cap);
    } else {
        c.server_close(&mut cap);
    }
    if cancel {
        let mut n = cap.connect();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "timeout"}});
        n.client(&mut cap, &post(Some(SID), &note));
        n.server(&mut cap, &accepted());
        n.close(&mut cap);
    }
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), last_event_id));
    let rest = if last_event_id.is_some() {
        let mut v = progs(2, &["4", "5"], 4, 5);
        v.push(Ev::id("6", result(2)));
        v
    } else {
        Vec::new()
    };
    g.server(
        &mut cap,
        &sse_response(None, &rest, last_event_id.is_some()),
    );
    g.close(&mut cap);
    analyze(&cap, &[])
}

#[test]
fn resume_without_cursor_after_a_cut_stream() {
    let fs = cut_then_get(None, false);
    assert_kinds(
        &fs,
        &[
            ("resume_without_cursor", "warning"),
            ("lost_response", "error"),
        ],
    );
    assert_eq!(one(&fs, "resume_without_cursor")["last_event_id"], "3");
}

#[test]
fn resume_with_cursor_or_after_a_complete_stream() {
    assert_kinds(&cut_then_get(Some("3"), false), &[("resume_ok", "info")]);
    assert_kinds(&cut_then_get(None, true), &[]);
    // A cancelled request is owed nothing: a fresh GET after it is no lost cursor (the response
    // that never came is still reported).
    assert_kinds(
        &cut_then_get_with(None, false, true),
        &[("lost_response", "error")],
    );
}

/// The standalone GET stream and a POST stream break together; the GET stream is resumed with
/// its cursor first, then the POST stream is reopened without one.
#[test]
fn resume_without_cursor_behind_another_streams_resume() {
    let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}});
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), None));
    g.server(&mut cap, &sse_response(None, &[Ev::id("g1", note)], false));
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    c.server(
        &mut cap,
        &sse_response(None, &progs(2, &["1", "2"], 1, 5), false),
    );
    g.server_close(&mut cap);
    c.server_close(&mut cap);
    let mut r = cap.connect();
    r.client(&mut cap, &get(Some(SID), Some("g1")));
    r.server(&mut cap, &sse_head(None));
    let mut n = cap.connect();
    n.client(&mut cap, &get(Some(SID), None));
    n.server(&mut cap, &conflict());
    n.close(&mut cap);
    r.close(&mut cap);
    let fs = analyze(&cap, &[]);
    assert!(
        fs.iter()
            .any(|f| f["kind"] == "resume_without_cursor" && f["last_event_id"] == "2"),
        "{fs:#?}"
    );
}
