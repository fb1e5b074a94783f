//! One session seen through a proxy: the client↔proxy leg and the proxy↔backend legs of each
//! exchange are one exchange observed at several hops. A capture with both legs gives the same
//! findings as the client leg alone, never a duplicate, and names the backends; a resumption on
//! another backend than its stream's is a `backend_switch`.

mod common;

use common::*;
use serde_json::{json, Value};

const SID: &str = "s1";
const B1: u16 = 3301;
const B2: u16 = 3302;

/// How the capture sees the proxy.
#[derive(Clone, Copy, PartialEq)]
enum View {
    /// Only the client↔proxy connections; responses name their backend in `X-Backend`.
    ClientLeg,
    /// Both legs; no backend header.
    BothLegs,
}

/// Head of a `200 text/event-stream` chunked response, assigning `session` and naming
/// `backend` when asked.
fn head(session: Option<&str>, backend: Option<&str>) -> Vec<u8> {
    let mut h = sse_head(session);
    if let Some(b) = backend {
        let at = h.len() - 2;
        h.splice(at..at, format!("X-Backend: {b}\r\n").into_bytes());
    }
    h
}

/// One exchange through the proxy: `request` from the client, forwarded to `backend`, whose
/// response body `body` (after the SSE head) goes back; `complete` ends it with the last chunk,
/// else both legs are closed by their servers.
fn through_proxy(
    cap: &mut Capture,
    view: View,
    backend: u16,
    request: &[u8],
    session: Option<&str>,
    body: &[u8],
    complete: bool,
) {
    let name = if backend == B1 { "b1" } else { "b2" };
    let mut c = cap.connect();
    c.client(cap, request);
    let mut up = (view == View::BothLegs).then(|| {
        let mut u = cap.connect_to(backend);
        u.client(cap, request);
        u.server(cap, &head(session, None));
        u.server(cap, body);
        if complete {
            u.server(cap, LAST_CHUNK);
        }
        u
    });
    c.server(
        cap,
        &head(session, (view == View::ClientLeg).then_some(name)),
    );
    c.server(cap, body);
    if complete {
        c.server(cap, LAST_CHUNK);
        c.close(cap);
        if let Some(u) = up.take() {
            u.close(cap);
        }
    } else {
        if let Some(u) = up.take() {
            u.server_close(cap);
        }
        c.server_close(cap);
    }
}

fn events(evs: &[Ev]) -> Vec<u8> {
    evs.iter()
        .flat_map(|e| chunk(e.text().as_bytes()))
        .collect()
}

fn prog(id: u64, n: u64) -> Ev {
    Ev::id(id, progress(&json!("t2"), n, 5))
}

/// initialize on b1; tools/call on b1 cut after ids 1..3; the resumption from 3 goes to
/// `resume_on`, which continues (b1: ids 4, 5, result 6) or, without the log, restarts at 1.
fn session(view: View, resume_on: u16) -> Capture {
    let mut cap = Capture::new();
    // initialize answered as an SSE stream on b1, which assigns the session.
    let body = events(&[Ev::no_id(initialize_result(1))]);
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
    let first = events(&[prog(1, 1), prog(2, 2), prog(3, 3)]);
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
        &events(&resumed),
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

/// Both legs of a tools/call: the backend sends ids 1..3 and the result, the proxy forwards only
/// ids 1..2 and cuts the client's connection; with `resume`, the client comes back from 2 and the
/// (same) backend replays 3 and the result.
fn cut_in_the_proxy(resume: bool) -> Vec<Value> {
    let mut cap = Capture::new();
    let body = events(&[Ev::no_id(initialize_result(1))]);
    through_proxy(
        &mut cap,
        View::BothLegs,
        B1,
        &post(None, &initialize(1)),
        Some(SID),
        &body,
        true,
    );
    let call = post(Some(SID), &tools_call(2, &json!("t2")));
    let mut c = cap.connect();
    c.client(&mut cap, &call);
    let mut u = cap.connect_to(B1);
    u.client(&mut cap, &call);
    u.server(&mut cap, &head(None, None));
    c.server(&mut cap, &head(None, None));
    let p3 = |id: u64| Ev::id(id, progress(&json!("t2"), id, 3));
    let all = [p3(1), p3(2), p3(3), Ev::id(4, result(2))];
    u.server(&mut cap, &events(&all));
    u.server(&mut cap, LAST_CHUNK);
    c.server(&mut cap, &events(&all[..2]));
    c.server_close(&mut cap);
    u.close(&mut cap);
    if resume {
        let get2 = get(Some(SID), Some("2"));
        through_proxy(
            &mut cap,
            View::BothLegs,
            B1,
            &get2,
            None,
            &events(&all[2..]),
            true,
        );
    }
    // The session goes on well after (nothing more of it was owed).
    cap.wait(40_000_000);
    let mut l = cap.connect();
    l.client(
        &mut cap,
        &post(
            Some(SID),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ),
    );
    l.server(&mut cap, &accepted());
    l.close(&mut cap);
    analyze(&cap, &[])
}

#[test]
fn events_lost_between_the_hops() {
    let fs = cut_in_the_proxy(false);
    assert_eq!(
        kinds_and_severities(&fs),
        vec![
            ("lost_in_transit".to_string(), "error".to_string()),
            ("lost_response".to_string(), "error".to_string())
        ],
        "{fs:#?}"
    );
    let f = fs.iter().find(|f| f["kind"] == "lost_in_transit").unwrap();
    assert_eq!(f["event_id"], "3");
    assert!(
        f["detail"]
            .as_str()
            .unwrap()
            .starts_with("2 event(s) left backend 127.0.0.1:3301"),
        "{f}"
    );
}

#[test]
fn events_replayed_after_the_cut_are_not_lost() {
    let fs = cut_in_the_proxy(true);
    assert_eq!(
        kinds_and_severities(&fs),
        vec![("resume_ok".to_string(), "info".to_string())],
        "{fs:#?}"
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
    u.server(&mut cap, &head(Some(SID), None));
    c.server(&mut cap, &head(Some(SID), None));
    let p3 = |id: u64| Ev::id(id, progress(&json!("t2"), id, 3));
    let all = [p3(1), p3(2), p3(3), Ev::id(4, result(2))];
    u.server(&mut cap, &events(&all));
    u.server(&mut cap, LAST_CHUNK);
    c.server(&mut cap, &events(&[p3(1), p3(3), Ev::id(4, result(2))]));
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
    let body = events(&[Ev::id("i0", initialize_result(1))]);
    let mut c = cap.connect();
    // (The client's request is not in the capture.)
    let mut u = cap.connect_to(B1);
    u.client(&mut cap, &post(None, &initialize(1)));
    u.server(&mut cap, &head(Some(SID), None));
    u.server(&mut cap, &body);
    u.server(&mut cap, LAST_CHUNK);
    c.server(&mut cap, &head(Some(SID), None));
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
        &events(&[Ev::id(
            1,
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
        )]),
        true,
    );
    let fs = analyze(&cap, &[]);
    assert!(fs.is_empty(), "{fs:#?}");
}
