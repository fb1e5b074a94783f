//! One session seen through a proxy: the client↔proxy leg and the proxy↔backend legs of each
//! exchange are one exchange observed at several hops. A capture with both legs gives the same
//! findings as the client leg alone, never a duplicate, and names the backends; a resumption on
//! another backend than its stream's is a `backend_switch`; more identical requests than hop
//! linking compares are said. (The proxy helpers, `through_proxy` and kin, are in `common`; the
//! events lost between the hops, `lost_in_transit`, are in `tests/kinds/lost_in_transit.rs`.)

mod common;

use common::*;
use serde_json::{json, Value};

/// Event `id` carrying progress `n` of 5 for the tools/call 2.
fn prog(id: u64, n: u64) -> Ev {
    Ev::id(id, progress(&json!("t2"), n, 5))
}

/// initialize on b1; tools/call on b1 cut after ids 1..3; the resumption from 3 goes to
/// `resume_on`, which continues (b1: ids 4, 5, result 6) or, without the log, restarts at 1.
fn session(view: View, resume_on: u16) -> Capture {
    let mut cap = Capture::new();
    // initialize answered as an SSE stream on b1, which assigns the session.
    let body = event_chunks(&[Ev::no_id(initialize_result(1))]);
    through_proxy(
        &mut cap,
        view,
        B1,
        &post(None, &initialize(1)),
        Some(SID),
        &body,
        true,
    );
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &initialized()));
    c.server(&mut cap, &accepted());
    c.close(&mut cap);
    let call = post(Some(SID), &tools_call(2, &json!("t2")));
    let first = event_chunks(&[prog(1, 1), prog(2, 2), prog(3, 3)]);
    through_proxy(&mut cap, view, B1, &call, None, &first, false);
    let resumed = if resume_on == B1 {
        vec![prog(4, 4), prog(5, 5), Ev::id(6, result(2))]
    } else {
        vec![prog(1, 4), prog(2, 5), Ev::id(3, result(2))]
    };
    let get3 = get(Some(SID), Some("3"));
    through_proxy(
        &mut cap,
        view,
        resume_on,
        &get3,
        None,
        &event_chunks(&resumed),
        true,
    );
    cap
}

fn backend_switch(fs: &[Value]) -> String {
    fs.iter()
        .find(|f| f["kind"] == "backend_switch")
        .map(|f| f["detail"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

#[test]
fn fork_on_another_backend_same_findings_from_either_view() {
    let client = analyze(&session(View::ClientLeg, B2), &[]);
    let both = analyze(&session(View::BothLegs, B2), &[]);
    let want = vec![
        ("backend_switch".to_string(), "error".to_string()),
        ("id_regression".to_string(), "error".to_string()),
        ("id_restart".to_string(), "error".to_string()),
    ];
    assert_eq!(kinds_and_severities(&client), want, "{client:#?}");
    assert_eq!(kinds_and_severities(&both), want, "{both:#?}");
    // The header names the backends on the client leg; the backend hop names them by address.
    let d = backend_switch(&client);
    assert!(d.contains("backend b2") && d.contains("backend b1"), "{d}");
    let d = backend_switch(&both);
    assert!(
        d.contains("127.0.0.1:3302") && d.contains("127.0.0.1:3301"),
        "{d}"
    );
    // The fork itself says which backend forked the log.
    let fork = both.iter().find(|f| f["kind"] == "id_regression").unwrap();
    assert!(
        fork["detail"]
            .as_str()
            .unwrap()
            .contains("served by backend 127.0.0.1:3302"),
        "{fork}"
    );
}

#[test]
fn resume_on_the_same_backend() {
    for view in [View::ClientLeg, View::BothLegs] {
        let fs = analyze(&session(view, B1), &[]);
        assert_eq!(
            kinds_and_severities(&fs),
            vec![("resume_ok".to_string(), "info".to_string())],
            "{fs:#?}"
        );
    }
}

#[test]
fn backend_legs_are_hops_not_exchanges_of_their_own() {
    let rows = exchanges_table(&session(View::BothLegs, B2));
    // Client leg: initialize, initialized, tools/call, resumption; backend legs: three hops.
    assert_eq!(rows.len(), 7, "{rows:#?}");
    let hops: Vec<&Value> = rows.iter().filter(|r| !r["hop_of"].is_null()).collect();
    assert_eq!(hops.len(), 3, "{rows:#?}");
    assert!(rows.iter().all(|r| r["session_id"] == SID), "{rows:#?}");
    // Every client-leg SSE exchange names its backend; the hops point at their client leg.
    let backends: Vec<&str> = rows
        .iter()
        .filter(|r| r["hop_of"].is_null() && r["content_type"] == "text/event-stream")
        .map(|r| r["backend"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(
        backends,
        ["127.0.0.1:3301", "127.0.0.1:3301", "127.0.0.1:3302"]
    );
}

/// Both legs of a tools/call: the backend sends ids 1..3 and the result; the proxy forwards
/// all but id 2. The client's exchange is still the backend's, seen at two hops: one lost event
/// (`lost_in_transit`), not a second delivery of the result.
#[test]
fn an_event_dropped_mid_stream_by_the_proxy() {
    let mut cap = Capture::new();
    let call = post(Some(SID), &tools_call(2, &json!("t2")));
    let mut c = cap.connect();
    c.client(&mut cap, &call);
    let mut u = cap.connect_to(B1);
    u.client(&mut cap, &call);
    u.server(&mut cap, &sse_head_from(Some(SID), None));
    c.server(&mut cap, &sse_head_from(Some(SID), None));
    let p3 = |id: u64| Ev::id(id, progress(&json!("t2"), id, 3));
    let all = [p3(1), p3(2), p3(3), Ev::id(4, result(2))];
    u.server(&mut cap, &event_chunks(&all));
    u.server(&mut cap, LAST_CHUNK);
    c.server(
        &mut cap,
        &event_chunks(&[p3(1), p3(3), Ev::id(4, result(2))]),
    );
    c.server(&mut cap, LAST_CHUNK);
    u.close(&mut cap);
    c.close(&mut cap);
    let fs = analyze(&cap, &[]);
    assert_eq!(
        kinds_and_severities(&fs),
        vec![("lost_in_transit".to_string(), "error".to_string())],
        "{fs:#?}"
    );
    assert_eq!(fs[0]["event_id"], "2", "{fs:#?}");
}

/// One client asks two MCP servers the same thing at once: two exchanges, not one seen twice
/// (their answers differ: each server assigns its own session).
#[test]
fn same_request_to_two_servers_is_two_exchanges() {
    let mut cap = Capture::new();
    let mut a = cap.connect_to(3000);
    a.client(&mut cap, &post(None, &initialize(1)));
    let mut b = cap.connect_to(4000);
    b.client(&mut cap, &post(None, &initialize(1)));
    b.server(&mut cap, &json_response(Some("sB"), &initialize_result(1)));
    a.server(&mut cap, &json_response(Some("sA"), &initialize_result(1)));
    a.close(&mut cap);
    b.close(&mut cap);
    let rows = exchanges_table(&cap);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert!(rows.iter().all(|r| r["hop_of"].is_null()), "{rows:#?}");
    let mut sessions: Vec<&str> = rows
        .iter()
        .map(|r| r["session_id"].as_str().unwrap())
        .collect();
    sessions.sort_unstable();
    assert_eq!(sessions, ["sA", "sB"]);
}

/// The capture began after the client sent `initialize` to the proxy: that leg shows only the
/// response, so it cannot be paired with the backend leg, which has both. The unpaired response
/// is not a second delivery of the initialize result, and the stream it opened, whose request is
/// unknown, is not blamed for a later GET without a cursor.
#[test]
fn a_capture_that_begins_after_a_request() {
    let mut cap = Capture::new();
    let body = event_chunks(&[Ev::id("i0", initialize_result(1))]);
    let mut c = cap.connect();
    // (The client's request is not in the capture.)
    let mut u = cap.connect_to(B1);
    u.client(&mut cap, &post(None, &initialize(1)));
    u.server(&mut cap, &sse_head_from(Some(SID), None));
    u.server(&mut cap, &body);
    u.server(&mut cap, LAST_CHUNK);
    c.server(&mut cap, &sse_head_from(Some(SID), None));
    c.server(&mut cap, &body);
    c.server(&mut cap, LAST_CHUNK);
    c.close(&mut cap);
    u.close(&mut cap);
    // The standalone GET, without a cursor (nothing was delivered on a GET before).
    through_proxy(
        &mut cap,
        View::BothLegs,
        B1,
        &get(Some(SID), None),
        None,
        &event_chunks(&[Ev::id(
            1,
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
        )]),
        true,
    );
    let fs = analyze(&cap, &[]);
    assert!(fs.is_empty(), "{fs:#?}");
}

/// More identical requests inside a proxy's forwarding window than hop linking compares (1,100
/// stateless clients sending the same body within 10 s): the limit is said, not silent.
#[test]
fn a_flood_of_identical_requests_says_the_hop_limit() {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}});
    let flood = |n: usize| {
        let mut cap = Capture::new();
        for _ in 0..n {
            let mut c = cap.connect();
            c.client(&mut cap, &post(None, &body));
            c.server(&mut cap, &json_response(None, &answer));
            c.close(&mut cap);
        }
        table_csv(&cap, "anomalies")
    };
    assert!(column_has(&flood(1100), "code", "model.hop_candidates"));
    assert!(!flood(200).contains("model.hop_candidates"));
}
