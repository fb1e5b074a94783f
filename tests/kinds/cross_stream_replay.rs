//! `cross_stream_replay`: a resumption replayed another stream's events
//! (modelcontextprotocol/servers #4087).
//!
//! Positive: call 2's resumption carries call 3's progress or result (under its id, or
//! renumbered into call 2's ids, or before call 3's own stream delivers it); a resumed
//! standalone GET stream replays a tool call's result. Negative: the resumption replays only its
//! own stream; a task's progress on the stream of its `tasks/result` request.

use crate::common::*;
use serde_json::{json, Value};

/// Another stream's events, which the client then has twice.
const CROSS_STREAM_TWICE: &[(&str, &str)] = &[
    ("cross_stream_replay", "error"),
    ("duplicate_delivery", "error"),
];

/// Two tool calls on two POST streams: call 2 (ids 1..3, cut), call 3 (ids 10..12, answered on
/// 13). The resumption of call 2's stream from 3 gets `foreign` first, then 4, 5 and call 2's result.
fn two_streams_resumed(foreign: Option<Ev>) -> Vec<Value> {
    let mut evs: Vec<Ev> = foreign.into_iter().collect();
    evs.extend(progs(2, &["4", "5"], 4, 5));
    evs.push(Ev::id("6", result(2)));
    two_streams_resumed_with(evs)
}

#[test]
fn cross_stream_replay_of_another_posts_event() {
    // (The client had it from call 3's stream: it now has it twice.)
    let fs = two_streams_resumed(Some(Ev::id("11", progress(&token(3), 2, 3))));
    assert_kinds(&fs, CROSS_STREAM_TWICE);
    let f = one(&fs, "cross_stream_replay");
    assert_eq!(f["last_event_id"], "3");
    assert_eq!(f["event_id"], "11");
}

#[test]
fn cross_stream_replay_of_another_posts_response() {
    // The replay carries call 3's result, which belongs to the other POST stream (and which
    // the client then has twice).
    let fs = two_streams_resumed(Some(Ev::id("13", result(3))));
    assert_kinds(&fs, CROSS_STREAM_TWICE);
}

#[test]
fn another_streams_progress_renumbered_into_the_replay() {
    // The store files call 3's progress 2 of 3 (delivered on its own stream as id 11) under
    // call 2's stream with that stream's next id: the ids go on, the message is another
    // stream's, and the client now has it twice.
    let fs = two_streams_resumed_with(vec![
        Ev::id("4", progress(&token(3), 2, 3)),
        Ev::id("5", progress(&token(2), 4, 5)),
        Ev::id("6", progress(&token(2), 5, 5)),
        Ev::id("7", result(2)),
    ]);
    assert_kinds(&fs, CROSS_STREAM_TWICE);
    assert_eq!(one(&fs, "cross_stream_replay")["event_id"], "4");
    let d = one(&fs, "duplicate_delivery")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(d.contains("1 event(s) of another stream"), "{d}");
    // Without ids that skip: the renumbered event took the ordinal 4.
    assert!(fs.iter().all(|f| f["kind"] != "id_gap"), "{fs:#?}");
}

/// Calls 2 and 3 on two POST connections (a, b); a has delivered ids 1..3 (progress 1..3 of 5).
fn two_calls() -> (Capture, Conn, Conn) {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut a = cap.connect();
    a.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut b = cap.connect();
    b.client(&mut cap, &post(Some(SID), &tools_call(3, &token(3))));
    a.server(
        &mut cap,
        &sse_response(None, &progs(2, &["1", "2", "3"], 1, 5), false),
    );
    (cap, a, b)
}

/// As [`two_streams_resumed`], with `replay` as the whole answer to the resumption from 3.
fn two_streams_resumed_with(replay: Vec<Ev>) -> Vec<Value> {
    let (mut cap, a, mut b) = two_calls();
    let mut bevs = progs(3, &["10", "11", "12"], 1, 3);
    bevs.push(Ev::id("13", result(3)));
    b.server(&mut cap, &sse_response(None, &bevs, true));
    b.close(&mut cap);
    a.server_close(&mut cap);
    let mut r = cap.connect();
    r.client(&mut cap, &get(Some(SID), Some("3")));
    r.server(&mut cap, &sse_response(None, &replay, true));
    r.close(&mut cap);
    analyze(&cap, &[])
}

#[test]
fn another_streams_events_replayed_before_that_stream_delivers_them() {
    // Call 3's stream has delivered id 10 when call 2's resumption carries its 11 and 12; its
    // own connection delivers them afterwards. Both are another stream's, delivered twice — not
    // a fresh log of call 2's stream.
    let (mut cap, a, mut b) = two_calls();
    let bevs = progs(3, &["10", "11", "12"], 1, 3);
    b.server(&mut cap, &sse_response(None, &bevs[..1], false));
    a.server_close(&mut cap);
    let mut r = cap.connect();
    r.client(&mut cap, &get(Some(SID), Some("3")));
    let mut evs = bevs[1..].to_vec();
    evs.extend(progs(2, &["4", "5"], 4, 5));
    evs.push(Ev::id("6", result(2)));
    r.server(&mut cap, &sse_response(None, &evs, true));
    r.close(&mut cap);
    let mut rest: Vec<u8> = Vec::new();
    for ev in &bevs[1..] {
        rest.extend(chunk(ev.text().as_bytes()));
    }
    rest.extend(chunk(Ev::id("13", result(3)).text().as_bytes()));
    rest.extend(chunk(b""));
    b.server(&mut cap, &rest);
    b.close(&mut cap);
    let fs = analyze(&cap, &[]);
    assert_kinds(&fs, CROSS_STREAM_TWICE);
    assert_eq!(
        one(&fs, "cross_stream_replay")["observed"],
        "2 event(s) of stream S1"
    );
}

#[test]
fn replay_of_its_own_stream_only() {
    assert_kinds(&two_streams_resumed(None), &[("resume_ok", "info")]);
}

/// A resumed standalone GET stream that replays a tool call's result (servers #4087).
#[test]
fn response_replayed_on_the_standalone_stream() {
    let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}});
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), None));
    g.server(&mut cap, &sse_response(None, &[Ev::id("g1", note)], false));
    g.server_close(&mut cap);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut evs = progs(2, &["1", "2"], 1, 2);
    evs.push(Ev::id("3", result(2)));
    c.server(&mut cap, &sse_response(None, &evs, true));
    c.close(&mut cap);
    resume_with(&mut cap, "g1", &[Ev::id("g2", result(2))]);
    let fs = analyze(&cap, &[]);
    assert!(
        fs.iter().any(|f| f["kind"] == "cross_stream_replay"),
        "{fs:#?}"
    );
}

#[test]
fn a_tasks_progress_on_the_stream_of_its_result_request_is_its_own() {
    // MCP 2025-11-25 "Tasks" (the progress token lives as long as the task): call 2
    // answers at once with its task; the `tasks/result` request's stream carries call 2's
    // progress, is cut and resumed. Nothing there belongs to another stream.
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut a = cap.connect();
    a.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    a.server(
        &mut cap,
        &sse_response(None, &[Ev::id("1", result(2))], true),
    );
    a.close(&mut cap);
    let mut b = cap.connect();
    let wait =
        json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": "t-1"}});
    b.client(&mut cap, &post(Some(SID), &wait));
    b.server(
        &mut cap,
        &sse_response(None, &progs(2, &["10", "11"], 1, 4), false),
    );
    b.server_close(&mut cap);
    let mut rest = progs(2, &["12", "13"], 3, 4);
    rest.push(Ev::id("14", result(3)));
    resume_with(&mut cap, "11", &rest);
    assert_kinds(&analyze(&cap, &[]), &[("resume_ok", "info")]);
}
