//! The failure signatures of real MCP deployments (docs/wire.md, "Known failure patterns"), each
//! proven by a pair of packet-built captures: one that triggers the detector and one, as close as
//! possible, that must not. Real-SDK captures of the same behaviours are in `fixtures/mcp-sdk/`,
//! `fixtures/mcp-faults/` and `fixtures/mcp-rmcp/` (see `tests/manifest.rs`).
//!
//! Findings are compared as the sorted multiset of (kind, severity), so a pair shows exactly what
//! one difference on the wire changes.

mod common;

use common::*;
use serde_json::{json, Value};

const SID: &str = "s1";

#[track_caller]
fn assert_kinds(fs: &[Value], expected: &[(&str, &str)]) {
    let mut want: Vec<(String, String)> = expected
        .iter()
        .map(|(k, s)| (k.to_string(), s.to_string()))
        .collect();
    want.sort();
    let got = kinds_and_severities(fs);
    assert_eq!(
        got,
        want,
        "findings:\n{}",
        fs.iter()
            .map(|f| format!("  {} {}: {}", f["kind"], f["severity"], f["detail"]))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[track_caller]
fn one<'a>(fs: &'a [Value], kind: &str) -> &'a Value {
    let v: Vec<&Value> = fs.iter().filter(|f| f["kind"] == kind).collect();
    assert_eq!(v.len(), 1, "one {kind} expected: {fs:#?}");
    v[0]
}

/// `initialize` → `Mcp-Session-Id: sid`, then `notifications/initialized`, on one connection.
fn handshake_as(cap: &mut Capture, sid: &str) {
    handshake_version(cap, sid, PROTOCOL_VERSION);
}

/// The same, negotiating protocol revision `version`.
fn handshake_version(cap: &mut Capture, sid: &str, version: &str) {
    let mut init = initialize(1);
    init["params"]["protocolVersion"] = json!(version);
    let mut result = initialize_result(1);
    result["result"]["protocolVersion"] = json!(version);
    let mut c = cap.connect();
    c.client(cap, &post(None, &init));
    c.server(cap, &json_response(Some(sid), &result));
    c.client(cap, &post(Some(sid), &initialized()));
    c.server(cap, &accepted());
    c.close(cap);
}

fn token(id: i64) -> Value {
    json!(format!("t{id}"))
}

/// Progress events of request `req` under the given ids, progress 1, 2, … from `from`.
fn progs(req: i64, ids: &[&str], from: u64, total: u64) -> Vec<Ev> {
    ids.iter()
        .enumerate()
        .map(|(i, id)| Ev::id(id, progress(&token(req), from + i as u64, total)))
        .collect()
}

/// A `200 text/event-stream` head plus raw event-stream text in one chunk (no last chunk).
fn raw_sse(text: &str) -> Vec<u8> {
    let mut out = sse_head(None);
    out.extend(chunk(text.as_bytes()));
    out
}

/// A `200 text/event-stream` head, naming `backend` in an `X-Backend` header when given.
fn sse_head_from(backend: Option<&str>) -> Vec<u8> {
    let mut h = sse_head(None);
    if let Some(b) = backend {
        let at = h.len() - 2;
        h.splice(at..at, format!("X-Backend: {b}\r\n").into_bytes());
    }
    h
}

/// A status-only answer with a small text body.
fn status(code: u16, reason: &str) -> Vec<u8> {
    format!("HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\nnot found").into_bytes()
}

// ---------------------------------------------------------------------------
// duplicate_event_id (typescript-sdk PR #2335 review)

fn stream_with_ids(ids: &[&str]) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut evs: Vec<Ev> = ids
        .iter()
        .map(|id| Ev::id(id, progress(&token(2), id.parse::<u64>().unwrap(), 9)))
        .collect();
    evs.push(Ev::id("9", result(2)));
    c.server(&mut cap, &sse_response(None, &evs, true));
    c.close(&mut cap);
    analyze(&cap, &[])
}

#[test]
fn duplicate_event_id_on_one_connection() {
    let fs = stream_with_ids(&["1", "2", "2", "3"]);
    assert_kinds(&fs, &[("duplicate_event_id", "error")]);
    let f = one(&fs, "duplicate_event_id");
    assert_eq!(f["event_id"], "2");
    assert_eq!(f["session_id"], SID);
}

#[test]
fn distinct_event_ids_are_not_duplicates() {
    assert_kinds(&stream_with_ids(&["1", "2", "3"]), &[]);
}

// ---------------------------------------------------------------------------
// id_gap inside a connection (docs/wire.md, "Event-id formats": a dense per-stream ordinal
// that skips is loss)

/// One POST stream whose events carry `ids` in order (notifications/message, so no progress
/// shows the loss), then the result.
fn stream_with_raw_ids(ids: &[&str], result_id: &str) -> Vec<Value> {
    analyze(&raw_ids_capture(ids, result_id), &[])
}

/// The capture of [`stream_with_raw_ids`].
fn raw_ids_capture(ids: &[&str], result_id: &str) -> Capture {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "step"}});
    let mut evs: Vec<Ev> = ids.iter().map(|id| Ev::id(id, log.clone())).collect();
    evs.push(Ev::id(result_id, result(2)));
    c.server(&mut cap, &sse_response(None, &evs, true));
    c.close(&mut cap);
    cap
}

/// A stream that lost events inside its one connection has the verdict `gap` in `streams`, as a
/// stream that lost them at a resumption does; without the skip, `single_connection`.
#[test]
fn a_stream_with_an_id_gap_inside_a_connection_is_a_gap() {
    let go = "RXBPBXMEKNWW3ZTPKOVIOJCAU2";
    let id = |n: u32| format!("{go}_{n}");
    let verdicts = |ids: &[&str]| -> Vec<String> {
        csv_rows(&table_csv(&raw_ids_capture(ids, &id(5)), "streams"))
            .into_iter()
            .map(|r| format!("{} {}", r["kind"], r["verdict"]))
            .collect()
    };
    assert_eq!(verdicts(&[&id(1), &id(2), &id(4)]), ["post gap"]);
    assert_eq!(
        verdicts(&[&id(1), &id(2), &id(3), &id(4)]),
        ["post single_connection"]
    );
}

/// The `id_format` column of `streams`: one format when every id has it, `opaque` when ids of
/// two formats mix (in either order) or any id has none.
#[test]
fn a_stream_id_format_is_opaque_when_formats_mix() {
    let go = "RXBPBXMEKNWW3ZTPKOVIOJCAU2";
    let id = |n: u32| format!("{go}_{n}");
    let format = |ids: &[&str], last: &str| -> String {
        let table = table_csv(&raw_ids_capture(ids, last), "streams");
        csv_column(&table, "id_format").remove(0)
    };
    assert_eq!(format(&[&id(1), &id(2)], &id(3)), "go");
    assert_eq!(format(&["1", "2"], "3"), "integer_dense");
    assert_eq!(format(&["1", "4"], "9"), "integer_sparse");
    assert_eq!(format(&["hello", "there"], "you"), "opaque");
    assert_eq!(format(&[&id(1), "hello"], &id(3)), "opaque");
    assert_eq!(format(&["hello", &id(2)], &id(3)), "opaque");
    assert_eq!(format(&["hello", "2"], "3"), "opaque");
    assert_eq!(format(&["1", "2"], &id(3)), "opaque");
}

#[test]
fn dense_ids_that_skip_inside_a_connection_are_an_id_gap() {
    let go = "RXBPBXMEKNWW3ZTPKOVIOJCAU2";
    let id = |n: u32| format!("{go}_{n}");
    let fs = stream_with_raw_ids(&[&id(1), &id(2), &id(4)], &id(5));
    assert_kinds(&fs, &[("id_gap", "error")]);
    let f = one(&fs, "id_gap");
    assert_eq!(f["last_event_id"], id(2));
    assert_eq!(f["event_id"], id(4));
    assert_eq!(f["expected"], "3");
    // rmcp `<n>/<request>` and C# `b64:b64:<n>` number densely too.
    assert_kinds(
        &stream_with_raw_ids(&["1/2", "2/2", "5/2"], "6/2"),
        &[("id_gap", "error")],
    );
    assert_kinds(
        &stream_with_raw_ids(
            &["c2lk:MQ==:1", "c2lk:MQ==:2", "c2lk:MQ==:4"],
            "c2lk:MQ==:5",
        ),
        &[("id_gap", "error")],
    );
    // Negative: ordinals that never stepped by one on the connection (a `tenant:jobs:<ms>`
    // key has the C# shape).
    assert_kinds(
        &stream_with_raw_ids(
            &["t:jobs:1718000000123", "t:jobs:1718000000190"],
            "t:jobs:1718000000377",
        ),
        &[],
    );
    // rmcp primes every stream with `0`, a plain integer: the request stream after it is walked.
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut body = sse_head(None);
    body.extend(chunk(b"id: 0\ndata: \n\n"));
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "step"}});
    for id in ["0/1", "1/1", "3/1"] {
        body.extend(chunk(Ev::id(id, log.clone()).text().as_bytes()));
    }
    body.extend(chunk(Ev::id("4/1", result(2)).text().as_bytes()));
    body.extend_from_slice(LAST_CHUNK);
    c.server(&mut cap, &body);
    c.close(&mut cap);
    assert_kinds(&analyze(&cap, &[]), &[("id_gap", "error")]);
    // The step from a resumption's cursor is the resumption's: an inclusive replay (rmcp
    // re-sends the cursor event) that then skips is one id_gap, not two.
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "step"}});
    let evs = [Ev::id("1/1", log.clone()), Ev::id("2/1", log.clone())];
    c.server(&mut cap, &sse_response(None, &evs, false));
    c.server_reset(&mut cap);
    resume_with(
        &mut cap,
        "2/1",
        &[
            Ev::id("2/1", log.clone()),
            Ev::id("4/1", log),
            Ev::id("5/1", result(2)),
        ],
    );
    let fs = analyze(&cap, &[]);
    assert_eq!(
        fs.iter().filter(|f| f["kind"] == "id_gap").count(),
        1,
        "{fs:#?}"
    );
    // Negatives: dense ids without a skip; plain integers that skip (a counter shared across
    // streams and sessions); another stream part.
    assert_kinds(&stream_with_raw_ids(&[&id(1), &id(2), &id(3)], &id(4)), &[]);
    assert_kinds(&stream_with_raw_ids(&["1", "2", "5"], "6"), &[]);
    let other = format!("ABCDEFGHIJKLMNOPQRSTUVWXYZ_{}", 7);
    assert_kinds(&stream_with_raw_ids(&[&id(1), &other], &id(2)), &[]);
}

// ---------------------------------------------------------------------------
// cross_stream_replay (modelcontextprotocol/servers #4087)

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

// ---------------------------------------------------------------------------
// cross_session_replay (typescript-sdk #1004 / PR #2109)

/// Sessions s1 and s2 each have a standalone GET stream with TS-store ids. s2's stream delivers
/// two notifications; s1's stream one, then it is cut and resumed; the resumption delivers `replayed`.
fn two_sessions(replayed: &[Ev]) -> Vec<Value> {
    let note = |text: &str| json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": text}});
    let mut cap = Capture::new();
    handshake_as(&mut cap, "s1");
    handshake_as(&mut cap, "s2");
    let mut g1 = cap.connect();
    g1.client(&mut cap, &get(Some("s1"), None));
    let mut g2 = cap.connect();
    g2.client(&mut cap, &get(Some("s2"), None));
    g2.server(
        &mut cap,
        &sse_response(
            None,
            &[
                Ev::id("_GET_stream_1795991032169_k2j9x0ab", note("tick 1")),
                Ev::id("_GET_stream_1795991032300_p0q1r2s3", note("tick 2")),
            ],
            false,
        ),
    );
    g1.server(
        &mut cap,
        &sse_response(
            None,
            &[Ev::id(
                "_GET_stream_1795991032200_aaaa1111",
                note("hello s1"),
            )],
            false,
        ),
    );
    g1.server_close(&mut cap);
    let mut r = cap.connect();
    r.client(
        &mut cap,
        &get(Some("s1"), Some("_GET_stream_1795991032200_aaaa1111")),
    );
    r.server(&mut cap, &sse_response(None, replayed, true));
    r.close(&mut cap);
    g2.close(&mut cap);
    analyze(&cap, &[])
}

#[test]
fn cross_session_replay_of_another_sessions_event() {
    let fs = two_sessions(&[Ev::id(
        "_GET_stream_1795991032300_p0q1r2s3",
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "tick 2"}}),
    )]);
    assert_kinds(&fs, &[("cross_session_replay", "error")]);
    let f = one(&fs, "cross_session_replay");
    assert_eq!(f["session_id"], "s1");
    assert_eq!(f["event_id"], "_GET_stream_1795991032300_p0q1r2s3");
}

#[test]
fn same_message_under_its_own_id_is_not_cross_session() {
    // s1's own stream sends a notification whose body equals one s2 received: bodies alone do
    // not prove a leak when the id is s1's own.
    let fs = two_sessions(&[Ev::id(
        "_GET_stream_1795991032400_bbbb2222",
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "tick 2"}}),
    )]);
    assert_kinds(&fs, &[("resume_ok", "info")]);
}

// ---------------------------------------------------------------------------
// resume_without_cursor (typescript-sdk #2499, modelcontextprotocol/inspector #723)

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

// ---------------------------------------------------------------------------
// empty_resume_loop (rust-sdk #958)

/// The client resumes from id 3 on a new connection and gets progress 4, 5 and the result.
fn resume_from_3(cap: &mut Capture) {
    let mut g = cap.connect();
    g.client(cap, &get(Some(SID), Some("3")));
    let mut rest = progs(2, &["4", "5"], 4, 5);
    rest.push(Ev::id("6", result(2)));
    g.server(cap, &sse_response(None, &rest, true));
    g.close(cap);
}

/// A GET resuming the session's stream from `cursor`, answered by `evs` and closed.
fn resume_with(cap: &mut Capture, cursor: &str, evs: &[Ev]) {
    resume_raw(cap, cursor, &sse_response(None, evs, true));
}

/// A GET resuming the session's stream from `cursor`, answered by the bytes `answer` (head and
/// body) and closed.
fn resume_raw(cap: &mut Capture, cursor: &str, answer: &[u8]) {
    let mut g = cap.connect();
    g.client(cap, &get(Some(SID), Some(cursor)));
    g.server(cap, answer);
    g.close(cap);
}

/// A session whose tools/call stream has delivered ids 1..3 (progress 1..3 of 5) and is still
/// open: the capture and that connection.
fn call_under_way() -> (Capture, Conn) {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    c.server(
        &mut cap,
        &sse_response(None, &progs(2, &["1", "2", "3"], 1, 5), false),
    );
    (cap, c)
}

fn empty_resumes(n: usize) -> Vec<Value> {
    let (mut cap, c) = call_under_way();
    c.server_close(&mut cap);
    for _ in 0..n {
        cap.wait(1_000_000);
        resume_with(&mut cap, "3", &[]);
    }
    analyze(&cap, &[])
}

#[test]
fn an_empty_answer_then_a_resumption_that_carries_the_stream_on() {
    // An empty 200 over at once, then the client resumes again from the same cursor and gets
    // the rest: the empty answer skipped nothing (rust-sdk #958's answer, served elsewhere next).
    let (mut cap, c) = call_under_way();
    c.server_close(&mut cap);
    cap.wait(1_000_000);
    resume_with(&mut cap, "3", &[]);
    cap.wait(1_000_000);
    resume_from_3(&mut cap);
    assert_kinds(&analyze(&cap, &[]), &[("resume_ok", "info")]);
    let rs = table_csv(&cap, "resumptions");
    assert_eq!(rs.matches(",resumed,").count(), 2, "{rs}");
    assert!(!rs.contains(",gap,"), "{rs}");
}

#[test]
fn an_empty_answer_then_a_forked_resumption_stays_a_gap() {
    let (mut cap, c) = call_under_way();
    c.server_close(&mut cap);
    cap.wait(1_000_000);
    resume_with(&mut cap, "3", &[]);
    cap.wait(1_000_000);
    let mut fresh = progs(2, &["1", "2"], 1, 5);
    fresh.push(Ev::id("3", result(2)));
    resume_with(&mut cap, "3", &fresh);
    let rs = table_csv(&cap, "resumptions");
    assert!(rs.contains(",gap,") && rs.contains(",forked,"), "{rs}");
    assert!(!rs.contains(",resumed,"), "{rs}");
}

#[test]
fn an_empty_answer_to_a_resume_after_the_result_owes_nothing() {
    // The result (id 4) arrives, the connection is cut before the last chunk, the client
    // resumes from 4 and gets an empty 200 (Python's and rmcp's answer to a finished stream):
    // nothing was owed. From 3, before the result, the same empty answer proves nothing.
    for (cursor, verdict, session) in [
        ("4", "resumed", "intact"),
        ("3", "unverifiable", "unverifiable"),
    ] {
        let (mut cap, mut c) = call_under_way();
        c.server(&mut cap, &chunk(Ev::id("4", result(2)).text().as_bytes()));
        c.server_close(&mut cap);
        cap.wait(1_000_000);
        resume_with(&mut cap, cursor, &[]);
        let rs = table_csv(&cap, "resumptions");
        assert!(rs.contains(&format!(",{verdict},")), "{cursor}: {rs}");
        let ss = table_csv(&cap, "sessions");
        assert!(ss.contains(&format!(",{session}\n")), "{cursor}: {ss}");
    }
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

#[test]
fn an_event_whose_data_is_not_json_is_an_anomaly() {
    // One event with a bare key (not JSON), one with an endpoint URL (the legacy transport's
    // `endpoint` event, not JSON by design): one anomaly, at the first.
    let (mut cap, mut c) = call_under_way();
    c.server(
        &mut cap,
        &chunk(b"id: 4\ndata: {a: 1}\n\nevent: endpoint\ndata: /messages?x=1\n\n"),
    );
    c.close(&mut cap);
    let a = table_csv(&cap, "anomalies");
    assert_eq!(a.matches("sse.invalid_json").count(), 1, "{a}");
    assert!(a.contains("key must be a string"), "{a}");
}

#[test]
fn integer_ids_past_a_priming_jump_do_not_continue_in_the_detail() {
    // Resumed from 3: primed with 100 (ids a shared counter may have spent), then 101 with
    // progress 5 after 3. The desync is reported; the ids went on, they did not continue at 4.
    let (mut cap, c) = call_under_way();
    c.server_close(&mut cap);
    let mut body = sse_head(None);
    body.extend(chunk(b"id: 100\ndata: \n\n"));
    for ev in [
        Ev::id("101", progress(&token(2), 5, 5)),
        Ev::id("102", result(2)),
    ] {
        body.extend(chunk(ev.text().as_bytes()));
    }
    body.extend_from_slice(LAST_CHUNK);
    resume_raw(&mut cap, "3", &body);
    let fs = analyze(&cap, &[]);
    let d = one(&fs, "app_seq_desync")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        d.contains("the transport ids go on past it (next id 101)"),
        "{d}"
    );
}

#[test]
fn empty_resume_loop_of_three() {
    let fs = empty_resumes(3);
    assert_kinds(
        &fs,
        &[("empty_resume_loop", "warning"), ("lost_response", "error")],
    );
    let f = one(&fs, "empty_resume_loop");
    assert_eq!(f["last_event_id"], "3");
    assert!(
        f["detail"].as_str().unwrap().contains("about every 100"),
        "{f}"
    );
}

/// A loop of empty resumptions reads no event, but each resumption walks the connections
/// before it: those count against the history budget too, so that a long loop is not
/// quadratic (2,100 resumptions walk about 2.2 million connections, past the 2^21 budget).
#[test]
fn a_long_empty_resume_loop_spends_the_history_budget() {
    let (mut cap, c) = call_under_way();
    c.server_close(&mut cap);
    for _ in 0..2100 {
        cap.wait(1_000_000);
        resume_with(&mut cap, "3", &[]);
    }
    let anomalies = table_csv(&cap, "anomalies");
    assert!(anomalies.contains("detect.history_window"), "{anomalies}");
}

#[test]
fn two_empty_resumes_are_not_a_loop() {
    assert_kinds(&empty_resumes(2), &[("lost_response", "error")]);
}

// ---------------------------------------------------------------------------
// concurrent_stream_connections (punkpeye/fastmcp PR #331)

fn two_standalone_gets(overlap: bool) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut a = cap.connect();
    a.client(&mut cap, &get(Some(SID), None));
    a.server(&mut cap, &raw_sse(": ok\n\n"));
    let a = if overlap {
        Some(a)
    } else {
        a.close(&mut cap);
        None
    };
    cap.wait(2_000_000);
    let mut b = cap.connect();
    b.client(&mut cap, &get(Some(SID), None));
    b.server(&mut cap, &raw_sse(": ok\n\n"));
    cap.wait(2_000_000);
    b.close(&mut cap);
    if let Some(a) = a {
        a.close(&mut cap);
    }
    analyze(&cap, &[])
}

#[test]
fn concurrent_standalone_streams() {
    let fs = two_standalone_gets(true);
    assert_kinds(&fs, &[("concurrent_stream_connections", "warning")]);
}

#[test]
fn consecutive_standalone_streams() {
    assert_kinds(&two_standalone_gets(false), &[]);
}

/// What becomes of a stalled POST stream after the client resumed it on a new connection.
#[derive(Clone, Copy)]
enum OldStream {
    /// The client closes it 1.5 s after the resumption ended.
    ClosedLater,
    /// The server resets it 30 s later.
    ResetLater,
    /// It stays open to the end of the capture (punkpeye/fastmcp PR #331: never closed).
    NeverClosed,
    /// It delivers another event after the resumption was answered, then closes.
    EventAfter,
    /// It was live until just before the resumption (an event 50 ms before it), and a proxy's
    /// idle timeout resets it 120 s later.
    LiveUntilResume,
}

fn stalled_then_resumed(old: OldStream) -> Vec<Value> {
    let (mut cap, mut a) = call_under_way();
    cap.wait(10_000_000);
    if let OldStream::LiveUntilResume = old {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}});
        a.server(&mut cap, &chunk(Ev::no_id(note).text().as_bytes()));
        cap.wait(50_000);
    }
    resume_from_3(&mut cap);
    match old {
        OldStream::ClosedLater => {
            cap.wait(1_500_000);
            a.close(&mut cap);
        }
        OldStream::ResetLater => {
            cap.wait(30_000_000);
            a.server_reset(&mut cap);
        }
        OldStream::NeverClosed => {}
        OldStream::LiveUntilResume => {
            cap.wait(120_000_000);
            a.server_reset(&mut cap);
        }
        OldStream::EventAfter => {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}});
            a.server(&mut cap, &chunk(Ev::id("7", note).text().as_bytes()));
            a.close(&mut cap);
        }
    }
    analyze(&cap, &[])
}

#[test]
fn a_stalled_stream_closed_after_its_resumption_is_not_concurrent() {
    // The client gave up on a stalled connection and resumed; the old one's end is seen late
    // (a client that closes it afterwards, a server-side capture of a half-dead socket).
    for old in [OldStream::ClosedLater, OldStream::ResetLater] {
        assert_kinds(&stalled_then_resumed(old), &[("resume_ok", "info")]);
    }
    // Never closed, still delivering, or live until the resumption: two live connections for
    // one stream.
    for old in [
        OldStream::NeverClosed,
        OldStream::EventAfter,
        OldStream::LiveUntilResume,
    ] {
        assert_kinds(
            &stalled_then_resumed(old),
            &[
                ("concurrent_stream_connections", "warning"),
                ("resume_ok", "info"),
            ],
        );
    }
}

// ---------------------------------------------------------------------------
// stale_session_reuse and session_reinitialized (python-sdk #1676, typescript-sdk #1708)

fn dead_session(reinitialize: bool) -> Vec<Value> {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &list));
    c.server(&mut cap, &status(404, "Not Found"));
    if reinitialize {
        c.client(&mut cap, &post(None, &initialize(1)));
        c.server(&mut cap, &json_response(Some("s2"), &initialize_result(1)));
        c.client(&mut cap, &post(Some("s2"), &list));
        c.server(
            &mut cap,
            &json_response(
                None,
                &json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}),
            ),
        );
    } else {
        for _ in 0..2 {
            cap.wait(1_000_000);
            c.client(&mut cap, &post(Some(SID), &list));
            c.server(&mut cap, &status(404, "Not Found"));
        }
    }
    c.close(&mut cap);
    analyze(&cap, &[])
}

#[test]
fn stale_session_reuse_without_reinitialize() {
    let fs = dead_session(false);
    assert_kinds(&fs, &[("stale_session_reuse", "warning")]);
    assert_eq!(one(&fs, "stale_session_reuse")["session_id"], SID);
}

#[test]
fn session_reinitialized_after_404() {
    let fs = dead_session(true);
    assert_kinds(&fs, &[("session_reinitialized", "info")]);
    let f = one(&fs, "session_reinitialized");
    assert_eq!(f["session_id"], "s2");
    assert_eq!(f["request_id"], "1");
}

// ---------------------------------------------------------------------------
// idle_cut (cloudflare/agents #1583, mckinsey/agents-at-scale-ark #1941, open-webui/mcpo #73)

/// Standalone GET streams, each cut by the server side after `idle` µs of silence, then reopened.
fn cut_gets(idles: &[i64]) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    for &idle in idles {
        let mut g = cap.connect();
        g.client(&mut cap, &get(Some(SID), None));
        g.server(&mut cap, &raw_sse(": ok\n\n"));
        cap.wait(idle);
        g.server_close(&mut cap);
    }
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), None));
    g.server(&mut cap, &raw_sse(": ok\n\n"));
    analyze(&cap, &[])
}

#[test]
fn idle_cut_at_a_fixed_age() {
    let fs = cut_gets(&[5_000_000, 5_000_000, 5_000_000]);
    assert_kinds(&fs, &[("idle_cut", "warning")]);
    let f = one(&fs, "idle_cut");
    assert!(
        f["observed"]
            .as_str()
            .unwrap()
            .contains("3 cuts at idle time 5.0 s"),
        "{f}"
    );
}

#[test]
fn cuts_at_different_ages_are_not_idle_cuts() {
    assert_kinds(&cut_gets(&[1_500_000, 4_000_000, 9_000_000]), &[]);
}

// ---------------------------------------------------------------------------
// buffered_delivery (nginx `proxy_buffering`: java-sdk PR #848)

/// The backend behind the proxy of these scenarios (the proxy listens on `SERVER_PORT`).
const BACKEND_PORT: u16 = 3301;

/// A proxy's two legs of one tools/call: upstream the server sends six progress events 100 ms
/// apart; downstream they arrive one by one (`buffered` false) or all in one write 1 s later.
fn proxied(buffered: bool, accel_no: bool) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let evs = progs(2, &["1", "2", "3", "4", "5", "6"], 1, 6);
    let head = if accel_no {
        let mut h = sse_head(None);
        let at = h.len() - 2;
        h.splice(at..at, b"X-Accel-Buffering: no\r\n".iter().copied());
        h
    } else {
        sse_head(None)
    };
    let mut down = cap.connect();
    down.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut up = cap.connect_to(BACKEND_PORT);
    up.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    up.server(&mut cap, &sse_head(None));
    down.server(&mut cap, &head);
    for ev in &evs {
        cap.wait(100_000);
        up.server(&mut cap, &chunk(ev.text().as_bytes()));
        if !buffered {
            down.server(&mut cap, &chunk(ev.text().as_bytes()));
        }
    }
    let fin = Ev::id("7", result(2));
    up.server(&mut cap, &chunk(fin.text().as_bytes()));
    up.server(&mut cap, LAST_CHUNK);
    up.close(&mut cap);
    cap.wait(1_000_000);
    let mut rest = Vec::new();
    if buffered {
        for ev in &evs {
            rest.extend(ev.text().into_bytes());
        }
    }
    rest.extend(fin.text().into_bytes());
    down.server(&mut cap, &chunk(&rest));
    down.server(&mut cap, LAST_CHUNK);
    down.close(&mut cap);
    analyze(&cap, &[])
}

#[test]
fn buffered_delivery_behind_a_proxy() {
    let fs = proxied(true, false);
    assert_kinds(&fs, &[("buffered_delivery", "warning")]);
    let f = one(&fs, "buffered_delivery");
    assert_eq!(f["event_id"], "1");
}

#[test]
fn prompt_delivery_or_accel_buffering_no() {
    assert_kinds(&proxied(false, false), &[]);
    assert_kinds(&proxied(true, true), &[]);
}

// ---------------------------------------------------------------------------
// planned_poll (MCP 2025-11-25, SEP-1699)

/// How the polled POST response ends.
#[derive(Clone, Copy)]
enum PollEnd {
    /// Chunked, with its last chunk, then the server's FIN.
    LastChunk,
    /// Chunked, without its last chunk: cut by the server's FIN.
    Cut,
    /// Without chunking or length (delimited by the close, RFC 9112 §6.3): the server's FIN.
    CloseFin,
    /// Delimited by the close, but the server resets the connection: an abort.
    CloseRst,
}

fn poll(clean_close: bool, version: &str) -> Vec<Value> {
    poll_ended(
        if clean_close {
            PollEnd::LastChunk
        } else {
            PollEnd::Cut
        },
        version,
    )
}

fn poll_ended(end: PollEnd, version: &str) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake_version(&mut cap, SID, version);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let chunked = matches!(end, PollEnd::LastChunk | PollEnd::Cut);
    let mut body = if chunked {
        sse_head(None)
    } else {
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n".to_vec()
    };
    let frame = |text: &[u8]| if chunked { chunk(text) } else { text.to_vec() };
    body.extend(frame(b"id: 0\nretry: 500\ndata: \n\n"));
    for ev in progs(2, &["1", "2", "3"], 1, 5) {
        body.extend(frame(ev.text().as_bytes()));
    }
    if matches!(end, PollEnd::LastChunk) {
        body.extend_from_slice(LAST_CHUNK);
    }
    c.server(&mut cap, &body);
    match end {
        PollEnd::CloseRst => c.server_reset(&mut cap),
        _ => c.server_close(&mut cap),
    }
    cap.wait(500_000);
    resume_from_3(&mut cap);
    analyze(&cap, &[])
}

#[test]
fn planned_poll_after_retry_and_clean_close() {
    let fs = poll(true, "2025-11-25");
    assert_kinds(&fs, &[("planned_poll", "info"), ("resume_ok", "info")]);
    assert_eq!(one(&fs, "planned_poll")["last_event_id"], "3");
}

#[test]
fn a_cut_is_not_a_planned_poll() {
    assert_kinds(&poll(false, "2025-11-25"), &[("resume_ok", "info")]);
}

#[test]
fn a_close_delimited_stream_polls_only_when_closed_in_order() {
    // The body has no length: the server's FIN ends it whole, a reset aborts it.
    let fs = poll_ended(PollEnd::CloseFin, "2025-11-25");
    assert_kinds(&fs, &[("planned_poll", "info"), ("resume_ok", "info")]);
    let fs = poll_ended(PollEnd::CloseRst, "2025-11-25");
    assert_kinds(&fs, &[("resume_ok", "info")]);
}

/// A poll during a tool call whose result is the first event after the cursor.
#[derive(Clone, Copy)]
struct PollThenResult<'a> {
    /// How the first connection ends (after progress 1..3 of `total`, ids 1..3).
    end: PollEnd,
    /// The backend of each connection, in an `X-Backend` header.
    backends: Option<(&'a str, &'a str)>,
    /// Progress 5 before the result, skipping 4.
    jump: bool,
    /// The progress total.
    total: u64,
    /// A poll held 5 s that carries nothing and ends cleanly, before the one with the result.
    quiet: bool,
    /// `retry` on a Go-style `event: close` after the last progress, not on the priming event.
    go_close: bool,
    /// Progress as fractions of 1 (4/7, 5/7, 6/7 of 1.0) instead of 1..3 of `total`.
    sevenths: bool,
}

impl Default for PollThenResult<'_> {
    fn default() -> Self {
        PollThenResult {
            end: PollEnd::LastChunk,
            backends: None,
            jump: false,
            total: 4,
            quiet: false,
            go_close: false,
            sevenths: false,
        }
    }
}

/// The client comes back 0.5 s after each close with Last-Event-ID 3; the result is id 4 (5
/// with `jump`). The findings.
fn poll_then_result(p: PollThenResult) -> Vec<Value> {
    analyze(&poll_capture(p), &[])
}

/// The capture of [`poll_then_result`].
fn poll_capture(p: PollThenResult) -> Capture {
    let mut cap = Capture::new();
    handshake_version(&mut cap, SID, "2025-11-25");
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut body = sse_head_from(p.backends.map(|b| b.0));
    if p.go_close {
        body.extend(chunk(b"event: prime\nid: 0\ndata: \n\n"));
    } else {
        body.extend(chunk(b"id: 0\nretry: 500\ndata: \n\n"));
    }
    let mut first = progs(2, &["1", "2", "3"], 1, p.total);
    if p.sevenths {
        for (ev, i) in first.iter_mut().zip(4..) {
            ev.data["params"]["progress"] = json!(f64::from(i) / 7.0);
            ev.data["params"]["total"] = json!(1.0);
        }
    }
    for ev in first {
        body.extend(chunk(ev.text().as_bytes()));
    }
    if p.go_close {
        body.extend(chunk(b"event: close\nretry: 500\ndata: \n\n"));
    }
    if matches!(p.end, PollEnd::LastChunk) {
        body.extend_from_slice(LAST_CHUNK);
    }
    c.server(&mut cap, &body);
    match p.end {
        PollEnd::CloseRst => c.server_reset(&mut cap),
        _ => c.server_close(&mut cap),
    }
    cap.wait(500_000);
    if p.quiet {
        let mut q = cap.connect();
        q.client(&mut cap, &get(Some(SID), Some("3")));
        q.server(&mut cap, &sse_head_from(p.backends.map(|b| b.0)));
        cap.wait(5_000_000);
        if p.go_close {
            // Go closes whichever connection holds the stream the same way.
            q.server(&mut cap, &chunk(b"event: close\nretry: 500\ndata: \n\n"));
        }
        q.server(&mut cap, LAST_CHUNK);
        q.server_close(&mut cap);
        cap.wait(500_000);
    }
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), Some("3")));
    let mut answer = sse_head_from(p.backends.map(|b| b.1));
    let mut rest = vec![Ev::id("4", result(2))];
    if p.jump {
        rest.insert(0, Ev::id("4", progress(&token(2), 5, p.total)));
        rest[1] = Ev::id("5", result(2));
    }
    for ev in rest {
        answer.extend(chunk(ev.text().as_bytes()));
    }
    answer.extend_from_slice(LAST_CHUNK);
    g.server(&mut cap, &answer);
    g.close(&mut cap);
    cap
}

#[test]
fn a_result_right_after_a_planned_poll_is_no_suspect_terminal() {
    // The tool finished while the client was away, its progress one step short of its total
    // (a loop that reports each step before doing it): the server that closed the stream on its
    // own schedule holds the log.
    let ok = [("planned_poll", "info"), ("resume_ok", "info")];
    assert_kinds(&poll_then_result(PollThenResult::default()), &ok);
    let same = PollThenResult {
        backends: Some(("b1", "b1")),
        ..Default::default()
    };
    assert_kinds(&poll_then_result(same), &ok);
    // Go announces `retry` on its close event after the last id.
    let go = PollThenResult {
        go_close: true,
        ..Default::default()
    };
    assert_kinds(&poll_then_result(go), &ok);
    // Fractional progress one step short (6/7 + 1/7 is 0.9999999999999999 in floating point).
    let sevenths = PollThenResult {
        sevenths: true,
        ..Default::default()
    };
    assert_kinds(&poll_then_result(sevenths), &ok);
    // A quiet poll from the same cursor in between.
    let quiet = PollThenResult {
        quiet: true,
        ..Default::default()
    };
    let two_polls = [
        ("planned_poll", "info"),
        ("planned_poll", "info"),
        ("resume_ok", "info"),
    ];
    assert_kinds(&poll_then_result(quiet), &two_polls);
    // Go writes its close event on the quiet poll too (a poll with an event, which continued
    // the stream: its own resume_ok).
    let go_quiet = PollThenResult {
        quiet: true,
        go_close: true,
        ..Default::default()
    };
    assert_kinds(
        &poll_then_result(go_quiet),
        &[
            ("planned_poll", "info"),
            ("planned_poll", "info"),
            ("resume_ok", "info"),
            ("resume_ok", "info"),
        ],
    );
}

#[test]
fn a_result_right_after_a_cut_a_jump_or_on_another_backend_is_suspect() {
    // Terminal provenance (docs/resumption.md): the connection was cut, not closed as planned, and
    // the progress stood one step short of its total: a tool reporting each step before doing it
    // ends there, a replica inventing the result looks the same. Suspect, not proven.
    let cut = PollThenResult {
        end: PollEnd::Cut,
        ..Default::default()
    };
    assert_kinds(&poll_then_result(cut), &[("suspect_terminal", "warning")]);
    // Cut with the progress far from its total: work was left, and the result came at once.
    let cut_far = PollThenResult {
        end: PollEnd::Cut,
        total: 6,
        ..Default::default()
    };
    assert_kinds(&poll_then_result(cut_far), &[("suspect_terminal", "error")]);
    // Closed cleanly, but the progress stood far from its total: a drain can close cleanly too.
    let far = PollThenResult {
        total: 6,
        ..Default::default()
    };
    assert_kinds(
        &poll_then_result(far),
        &[("planned_poll", "info"), ("suspect_terminal", "error")],
    );
    // Planned, but the progress jumped before the result (a synthesized continuation).
    let jump = PollThenResult {
        jump: true,
        total: 6,
        ..Default::default()
    };
    assert_kinds(
        &poll_then_result(jump),
        &[
            ("planned_poll", "info"),
            ("app_seq_desync", "error"),
            ("suspect_terminal", "error"),
        ],
    );
    // Planned, but another replica answered the poll.
    let other = PollThenResult {
        backends: Some(("b1", "b2")),
        ..Default::default()
    };
    assert_kinds(
        &poll_then_result(other),
        &[
            ("planned_poll", "info"),
            ("suspect_terminal", "error"),
            ("backend_switch", "error"),
        ],
    );
}

/// rmcp opens every stream with the priming id `0` (rust-sdk #791). A stream cut right after
/// it, then 300 other calls, then the client resumes with Last-Event-ID 0: the resumption is
/// linked to the cut stream, however many other streams delivered `0` before and since.
#[test]
fn a_cursor_delivered_on_hundreds_of_streams_still_finds_the_cut_one() {
    let mut cap = Capture::new();
    handshake_version(&mut cap, SID, "2025-11-25");
    let call = |cap: &mut Capture, id: i64| {
        let mut k = cap.connect();
        k.client(cap, &post(Some(SID), &tools_call(id, &token(id))));
        let mut body = sse_head(None);
        body.extend(chunk(b"id: 0\nretry: 3000\ndata: \n\n"));
        body.extend(chunk(Ev::id("1", result(id)).text().as_bytes()));
        body.extend_from_slice(LAST_CHUNK);
        k.server(cap, &body);
        k.close(cap);
    };
    // An earlier call delivered `0` first.
    call(&mut cap, 1000);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut body = sse_head(None);
    body.extend(chunk(b"id: 0\nretry: 3000\ndata: \n\n"));
    c.server(&mut cap, &body);
    c.server_reset(&mut cap);
    for id in 3..303 {
        call(&mut cap, id);
    }
    resume_with(&mut cap, "0", &[Ev::id("1", result(2))]);
    assert_kinds(&analyze(&cap, &[]), &[("resume_ok", "info")]);
    // The deliveries left out of the lookup are said.
    assert!(table_csv(&cap, "anomalies").contains("model.deliveries"));
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
    assert!(flood(1100).contains("model.hop_candidates"));
    assert!(!flood(200).contains("model.hop_candidates"));
}

/// The `verdict` column of the `resumptions` table, in order.
fn resumption_verdicts(cap: &Capture) -> Vec<String> {
    csv_column(&table_csv(cap, "resumptions"), "verdict")
}

#[test]
fn a_quiet_poll_skips_nothing() {
    // The tool is quiet for 5 s: the server holds a poll that long, ends it with nothing in it,
    // and the client polls again from the same cursor, which goes on (the findings are in
    // `a_result_right_after_a_planned_poll_is_no_suspect_terminal`).
    let quiet = PollThenResult {
        quiet: true,
        ..Default::default()
    };
    assert_eq!(
        resumption_verdicts(&poll_capture(quiet)),
        ["resumed", "resumed"]
    );

    // Negative: the empty answer rmcp gives a late resume, closed at once, and nothing after
    // it: what the request still owed is gone.
    assert_eq!(
        resumption_verdicts(&{
            let (mut cap, c) = call_under_way();
            c.server_close(&mut cap);
            cap.wait(1_000_000);
            resume_with(&mut cap, "3", &[]);
            cap
        }),
        ["gap"]
    );
}

/// A call under way whose stream is reset, and a resumption GET with Last-Event-ID 3 answered
/// by the status line `status`, a `Location` and no body.
fn redirected(status: &str, location: &str) -> Capture {
    let (mut cap, c) = call_under_way();
    c.server_reset(&mut cap);
    cap.wait(1_000_000);
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), Some("3")));
    g.server(
        &mut cap,
        format!("HTTP/1.1 {status}\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n")
            .as_bytes(),
    );
    g.close(&mut cap);
    cap
}

#[test]
fn a_redirected_resumption_is_no_rejection() {
    // The client follows the redirect with the same cursor and the stream goes on there.
    let mut cap = redirected("307 Temporary Redirect", "/mcp/v2");
    resume_from_3(&mut cap);
    assert_kinds(&analyze(&cap, &[]), &[("resume_ok", "info")]);
    assert_eq!(resumption_verdicts(&cap), ["unverifiable", "resumed"]);
    // The redirect is no resumption the capture failed to judge: the session is intact.
    let sessions = table_csv(&cap, "sessions");
    assert!(
        sessions.lines().skip(1).all(|l| l.ends_with(",intact")),
        "{sessions}"
    );

    // Other sessions resuming in between (a proxy restart cuts every client at once) do not
    // hide the follow.
    let mut cap = redirected("307 Temporary Redirect", "/mcp/v2");
    for _ in 0..70 {
        let mut o = cap.connect();
        o.client(&mut cap, &get(Some("other"), Some("x")));
        o.server(&mut cap, &sse_response(Some("other"), &[], true));
        o.close(&mut cap);
    }
    resume_from_3(&mut cap);
    let fs = analyze(&cap, &[]);
    assert!(
        !kinds_of(&fs).contains(&"resume_rejected".to_string()),
        "{fs:#?}"
    );
    assert_eq!(resumption_verdicts(&cap)[0], "unverifiable");

    // Negative: a redirect the client never follows (to a login page, say) leaves it without
    // its stream: refused.
    let cap = redirected("302 Found", "/login");
    let fs = analyze(&cap, &[]);
    assert!(
        kinds_of(&fs).contains(&"resume_rejected".to_string()),
        "{fs:#?}"
    );
    assert_eq!(resumption_verdicts(&cap), ["rejected"]);
}

#[test]
fn no_polling_before_2025_11_25() {
    assert_kinds(&poll(true, "2025-06-18"), &[("resume_ok", "info")]);
}

// ---------------------------------------------------------------------------
// MCP 2026-07-28: no sessions; a broken stream means the request must be re-sent

fn post_2026(id: i64) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "count", "arguments": {"n": 5},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "progressToken": id}}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn modern(resend: bool) -> Vec<Value> {
    modern_ended(resend, false)
}

/// [`modern`]; with `client_closes` the client, not the server, closes the first stream.
fn modern_ended(resend: bool, client_closes: bool) -> Vec<Value> {
    let mut cap = Capture::new();
    let mut c = cap.connect();
    c.client(&mut cap, &post_2026(4));
    let evs: Vec<Ev> = (1..=2)
        .map(|p| Ev::no_id(progress(&json!(4), p, 5)))
        .collect();
    c.server(&mut cap, &sse_response(None, &evs, false));
    if client_closes {
        c.close(&mut cap);
    } else {
        c.server_close(&mut cap);
    }
    if resend {
        let mut d = cap.connect();
        d.client(&mut cap, &post_2026(5));
        let mut evs: Vec<Ev> = (1..=5)
            .map(|p| Ev::no_id(progress(&json!(5), p, 5)))
            .collect();
        evs.push(Ev::no_id(result(5)));
        d.server(&mut cap, &sse_response(None, &evs, true));
        d.close(&mut cap);
    }
    // The client goes on working well after the broken stream: a re-send would have been seen.
    cap.wait(40_000_000);
    tools_list_answered(&mut cap, None, 6);
    analyze(&cap, &[])
}

/// A `tools/list` (request `id`, in `session`) answered at once, on a new connection.
fn tools_list_answered(cap: &mut Capture, session: Option<&str>, id: i64) {
    let mut l = cap.connect();
    l.client(
        cap,
        &post(
            session,
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}),
        ),
    );
    l.server(
        cap,
        &json_response(
            None,
            &json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}),
        ),
    );
    l.close(cap);
}

#[test]
fn modern_request_neither_answered_nor_resent() {
    let fs = modern(false);
    assert_kinds(&fs, &[("lost_response", "error")]);
    assert_eq!(one(&fs, "lost_response")["request_id"], "4");
}

#[test]
fn modern_request_resent_after_a_broken_stream() {
    assert_kinds(&modern(true), &[]);
}

#[test]
fn modern_stream_closed_by_the_client_is_a_cancellation() {
    // 2026-07-28: closing the response stream is how the client cancels (MCP 2026-07-28
    // "Streamable HTTP", "Cancellation").
    assert_kinds(&modern_ended(false, true), &[]);
    // Negative: the server closes without answering at all; the client's FIN only replies.
    let mut cap = Capture::new();
    let mut c = cap.connect();
    c.client(&mut cap, &post_2026(4));
    cap.wait(2_000_000);
    c.server_close(&mut cap);
    cap.wait(40_000_000);
    let mut l = cap.connect();
    l.client(&mut cap, &post_2026(5));
    l.server(&mut cap, &json_response(None, &result(5)));
    l.close(&mut cap);
    let fs = analyze(&cap, &[]);
    assert_kinds(&fs, &[("lost_response", "error")]);
    assert_eq!(one(&fs, "lost_response")["request_id"], "4");
}

/// A tools/call streaming progress when the client DELETEs the session on another connection;
/// the server then ends the stream. With `cut_first` the server had cut the stream before.
fn deleted_while_streaming(cut_first: bool) -> Vec<Value> {
    deleted_while_streaming_answered(cut_first, 200)
}

/// [`deleted_while_streaming`], the DELETE answered with `status`.
fn deleted_while_streaming_answered(cut_first: bool, status: u16) -> Vec<Value> {
    let (mut cap, c) = call_under_way();
    let c = if cut_first {
        c.server_close(&mut cap);
        cap.wait(5_000_000);
        None
    } else {
        Some(c)
    };
    let mut d = cap.connect();
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nMcp-Session-Id: {SID}\r\nContent-Length: 0\r\n\r\n"
    );
    d.client(&mut cap, delete.as_bytes());
    d.server(
        &mut cap,
        format!("HTTP/1.1 {status} Whatever\r\nContent-Length: 0\r\n\r\n").as_bytes(),
    );
    d.close(&mut cap);
    if let Some(c) = c {
        c.server_close(&mut cap);
    }
    cap.wait(60_000_000);
    if status >= 300 {
        // The session goes on: the client's next request is answered.
        tools_list_answered(&mut cap, Some(SID), 9);
    }
    analyze(&cap, &[])
}

#[test]
fn a_request_in_flight_when_the_session_is_deleted_is_not_lost() {
    assert_kinds(&deleted_while_streaming(false), &[]);
    // Negative: the server refused to end the session (405, MCP "Session Management").
    assert_kinds(
        &deleted_while_streaming_answered(false, 405),
        &[("lost_response", "error")],
    );
    // Negative: the stream broke before the client ended the session.
    assert_kinds(
        &deleted_while_streaming(true),
        &[("lost_response", "error")],
    );
}

// ---------------------------------------------------------------------------
// Review probes: healthy look-alikes and variants of the signatures

/// MCP 2025-11-25 polling by a server that holds each poll open and then closes it cleanly
/// (TS `closeSSEStream`): the priming `retry` stays in force for the stream. Not an idle cut,
/// not an empty-resume loop.
#[test]
fn repeated_polls_held_open_are_healthy() {
    let mut cap = Capture::new();
    handshake_version(&mut cap, SID, "2025-11-25");
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut body = sse_head(None);
    body.extend(chunk(b"id: 0\nretry: 500\ndata: \n\n"));
    body.extend(chunk(
        Ev::id("1", progress(&token(2), 1, 2)).text().as_bytes(),
    ));
    body.extend_from_slice(LAST_CHUNK);
    c.server(&mut cap, &body);
    for _ in 0..3 {
        cap.wait(500_000);
        let mut g = cap.connect();
        g.client(&mut cap, &get(Some(SID), Some("1")));
        g.server(&mut cap, &sse_head(None));
        cap.wait(5_000_000);
        g.server(&mut cap, LAST_CHUNK);
        g.close(&mut cap);
    }
    cap.wait(500_000);
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), Some("1")));
    g.server(
        &mut cap,
        &sse_response(
            None,
            &[
                Ev::id("2", progress(&token(2), 2, 2)),
                Ev::id("3", result(2)),
            ],
            true,
        ),
    );
    g.close(&mut cap);
    c.close(&mut cap);
    let fs = analyze(&cap, &[]);
    let bad: Vec<&Value> = fs.iter().filter(|f| f["severity"] != "info").collect();
    assert!(bad.is_empty(), "{bad:#?}");
    assert_eq!(
        fs.iter().filter(|f| f["kind"] == "planned_poll").count(),
        4,
        "{fs:#?}"
    );
}

/// Per-session Redis-style streams give one broadcast the same `<ms>-<seq>` id in every session:
/// a session's own copy replayed is no leak from another.
#[test]
fn redis_ids_are_not_unique_across_sessions() {
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    let mut cap = Capture::new();
    handshake_as(&mut cap, "s1");
    handshake_as(&mut cap, "s2");
    let mut g1 = cap.connect();
    g1.client(&mut cap, &get(Some("s1"), None));
    let mut g2 = cap.connect();
    g2.client(&mut cap, &get(Some("s2"), None));
    let hello = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}});
    g1.server(
        &mut cap,
        &sse_response(None, &[Ev::id("1795991032000-0", hello)], false),
    );
    g2.server(
        &mut cap,
        &sse_response(None, &[Ev::id("1795991033000-0", changed.clone())], false),
    );
    g1.server_close(&mut cap);
    let mut r = cap.connect();
    r.client(&mut cap, &get(Some("s1"), Some("1795991032000-0")));
    r.server(
        &mut cap,
        &sse_response(None, &[Ev::id("1795991033000-0", changed)], true),
    );
    r.close(&mut cap);
    g2.close(&mut cap);
    assert_kinds(&analyze(&cap, &[]), &[("resume_ok", "info")]);
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

/// Standalone GET streams with keep-alives cut at the same age (a client timeout,
/// mckinsey/agents-at-scale-ark #1941): the idle time before each cut differs, the age does not.
#[test]
fn idle_cut_at_a_fixed_age_despite_keepalives() {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    for quiet in [2_000_000, 9_000_000, 5_000_000] {
        let mut g = cap.connect();
        g.client(&mut cap, &get(Some(SID), None));
        g.server(&mut cap, &raw_sse(": ok\n\n"));
        cap.wait(30_000_000 - quiet);
        g.server(&mut cap, &chunk(b": keepalive\n\n"));
        cap.wait(quiet);
        g.close(&mut cap);
    }
    let fs = analyze(&cap, &[]);
    assert_kinds(&fs, &[("idle_cut", "warning")]);
    assert!(
        one(&fs, "idle_cut")["observed"]
            .as_str()
            .unwrap()
            .contains("at age 30.0 s"),
        "{fs:#?}"
    );
}

/// An absurd `retry` (beyond any clock) must not overflow.
#[test]
fn absurd_retry_does_not_overflow() {
    let mut cap = Capture::new();
    handshake_version(&mut cap, SID, "2025-11-25");
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut body = sse_head(None);
    body.extend(chunk(b"id: 0\nretry: 4000000000000000000\ndata: \n\n"));
    body.extend_from_slice(LAST_CHUNK);
    c.server(&mut cap, &body);
    resume_with(&mut cap, "0", &[Ev::id("1", result(2))]);
    c.close(&mut cap);
    let fs = analyze(&cap, &[]);
    assert!(fs.iter().all(|f| f["severity"] == "info"), "{fs:#?}");
}

// ---------------------------------------------------------------------------
// batch_outside_era (MCP 2025-03-26 only)

fn batch_in(version: &str) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake_version(&mut cap, SID, version);
    let batch = json!([
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "prompts/list"}
    ]);
    let answers = json!([
        {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}},
        {"jsonrpc": "2.0", "id": 3, "result": {"prompts": []}}
    ]);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &batch));
    c.server(&mut cap, &json_response(None, &answers));
    c.close(&mut cap);
    analyze(&cap, &[])
}

#[test]
fn batch_outside_2025_03_26() {
    let fs = batch_in("2025-06-18");
    assert_kinds(&fs, &[("batch_outside_era", "info")]);
    assert!(one(&fs, "batch_outside_era")["detail"]
        .as_str()
        .unwrap()
        .contains("batch of 2"));
}

#[test]
fn batch_in_2025_03_26() {
    assert_kinds(&batch_in("2025-03-26"), &[]);
}

/// A POST stream cut right after its priming event (2025-11-25), resumed from the priming id.
/// The resumed stream carries `resumed` for request 2, whose progress the client never saw
/// before the cut.
fn cut_at_priming_then(resumed: &[Ev]) -> Vec<Value> {
    cut_at_priming_id_then("1", None, resumed)
}

/// [`cut_at_priming_then`] with priming id `priming`, and with `backends` (the cut connection's,
/// the resumption's) named in `X-Backend` headers.
fn cut_at_priming_id_then(
    priming: &str,
    backends: Option<(&str, &str)>,
    resumed: &[Ev],
) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake_version(&mut cap, SID, "2025-11-25");
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut body = sse_head_from(backends.map(|b| b.0));
    body.extend(chunk(format!("id: {priming}\ndata: \n\n").as_bytes()));
    c.server(&mut cap, &body);
    c.server_reset(&mut cap);
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), Some(priming)));
    let mut body = sse_head_from(backends.map(|b| b.1));
    for ev in resumed {
        body.extend(chunk(ev.text().as_bytes()));
    }
    body.extend_from_slice(LAST_CHUNK);
    g.server(&mut cap, &body);
    g.close(&mut cap);
    analyze(&cap, &[])
}

/// Terminal provenance (docs/resumption.md) when nothing of the application sequence came before
/// the cut: another replica, without the log, sends one invented progress value, half-way, and the
/// result. A replica sharing the log would send the same when the tool reported first at that
/// value, so this is a warning and the resumption unverifiable.
#[test]
fn a_result_after_an_invented_first_progress_on_another_backend_is_a_suspect_terminal() {
    let mut evs = progs(2, &["2"], 10, 20);
    evs.push(Ev::id("3", result(2)));
    let fs = cut_at_priming_id_then("1", Some(("b1", "b2")), &evs);
    assert_kinds(
        &fs,
        &[
            ("backend_switch", "warning"),
            ("suspect_terminal", "warning"),
        ],
    );
    let f = one(&fs, "suspect_terminal");
    assert_eq!(f["observed"], "response after progress 10 of 20");
    assert!(f["detail"]
        .as_str()
        .unwrap()
        .contains("none before the cut"));

    // Negative: the same backend, which holds the log (a tool that reports one value and ends).
    let fs = cut_at_priming_id_then("1", Some(("b1", "b1")), &evs);
    assert_kinds(&fs, &[("resume_ok", "info")]);
    // Negative: no backend named (nothing tells a replica from the original).
    assert_kinds(&cut_at_priming_then(&evs), &[("resume_ok", "info")]);
    // Negative: another backend replays from the first value (1 of 20: a tool that ended early,
    // or a shared store).
    let mut early = progs(2, &["2"], 1, 20);
    early.push(Ev::id("3", result(2)));
    assert_kinds(
        &cut_at_priming_id_then("1", Some(("b1", "b2")), &early),
        &[("backend_switch", "warning"), ("resume_ok", "info")],
    );
    // Negative: the tool failed (a JSON-RPC error, not a result).
    let mut failed = progs(2, &["2"], 10, 20);
    failed.push(Ev::id(
        "3",
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "tool failed"}}),
    ));
    assert_kinds(
        &cut_at_priming_id_then("1", Some(("b1", "b2")), &failed),
        &[("backend_switch", "warning"), ("resume_ok", "info")],
    );
    // Negative: the replay carries the progress from its first value to its total.
    let mut evs = progs(2, &["2", "3", "4"], 1, 3);
    evs.push(Ev::id("5", result(2)));
    assert_kinds(&cut_at_priming_then(&evs), &[("resume_ok", "info")]);
    // Negative: the result alone, with no progress to judge by.
    assert_kinds(
        &cut_at_priming_then(&[Ev::id("2", result(2))]),
        &[("resume_ok", "info")],
    );
}

/// uuid4 ids (the Python SDK's example store) show no order, and a cut right after the priming
/// event leaves no application sequence before it: `resume_ok` says the continuation is not
/// contradicted, not that it is shown. Integer ids show it.
#[test]
fn a_resume_with_unordered_ids_and_nothing_before_the_cut_is_not_shown_to_continue() {
    let uuid = |n: u32| format!("7c9e6679-7425-40de-944b-e07fc1f9{n:04x}");
    let mut evs: Vec<Ev> = (1..=3)
        .map(|k| Ev::id(uuid(k), progress(&token(2), k.into(), 3)))
        .collect();
    evs.push(Ev::id(uuid(4), result(2)));
    let fs = cut_at_priming_id_then(&uuid(0), None, &evs);
    assert_kinds(&fs, &[("resume_ok", "info")]);
    let detail = one(&fs, "resume_ok")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        detail.contains("the continuation is not shown either"),
        "{detail}"
    );

    let mut evs = progs(2, &["2", "3", "4"], 1, 3);
    evs.push(Ev::id("5", result(2)));
    let fs = cut_at_priming_then(&evs);
    let detail = one(&fs, "resume_ok")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(detail.contains("continued the stream"), "{detail}");
}

/// A resumption that delivers only a fresh priming event (the Python SDK primes every
/// resumed connection) says so, and claims nothing of ids or application sequence.
#[test]
fn a_resumption_with_no_message_says_so() {
    let (mut cap, c) = call_under_way();
    c.server_reset(&mut cap);
    resume_raw(&mut cap, "3", &raw_sse("id: 4\ndata: \n\n"));
    let rs = table_csv(&cap, "resumptions");
    assert!(rs.contains(",no message after the cursor,"), "{rs}");
}

/// A tools/call POST stream carrying `first` (Go ids `G_<n>`; `None` data: a priming event),
/// cut by a reset, then a resumption from `cursor` carrying `resumed`; the last event of each is
/// whatever the caller gives (the result included). The capture.
fn go_stream_resumed(first: &[(u32, bool)], cursor: u32, resumed: &[(u32, bool)]) -> Capture {
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "step"}});
    let body = |evs: &[(u32, bool)]| {
        let mut b = sse_head(None);
        for &(n, data) in evs {
            let text = if data {
                Ev::id(format!("KX3ABCDEFGHIJKLMNOPQRSTUV7_{n}"), log.clone()).text()
            } else {
                format!("id: KX3ABCDEFGHIJKLMNOPQRSTUV7_{n}\ndata: \n\n")
            };
            b.extend(chunk(text.as_bytes()));
        }
        b
    };
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    c.server(&mut cap, &body(first));
    if resumed.is_empty() {
        c.server(&mut cap, LAST_CHUNK);
        c.close(&mut cap);
        return cap;
    }
    c.server_reset(&mut cap);
    let mut g = cap.connect();
    let cursor = format!("KX3ABCDEFGHIJKLMNOPQRSTUV7_{cursor}");
    g.client(&mut cap, &get(Some(SID), Some(&cursor)));
    let mut b = body(resumed);
    b.extend_from_slice(LAST_CHUNK);
    g.server(&mut cap, &b);
    g.close(&mut cap);
    cap
}

/// The in-connection `id_gap` against the resumption's: one finding per skip, replays below the
/// cursor count, reordered events are not lost, and a resumption whose connection lost events
/// inside it is a `gap`.
#[test]
fn dense_id_gaps_inside_and_at_a_resumption() {
    let id_gaps = |cap: &Capture| {
        analyze(cap, &[])
            .iter()
            .filter(|f| f["kind"] == "id_gap")
            .count()
    };
    // A priming event opens the resumed connection ahead of the cursor, then an event skips:
    // one finding, the resumption's.
    let cap = go_stream_resumed(
        &[(1, true), (2, true)],
        2,
        &[(3, false), (5, true), (6, true)],
    );
    assert_eq!(id_gaps(&cap), 1);
    // A replay from below the cursor, then a skip past it: found inside the connection.
    let cap = go_stream_resumed(
        &[(1, true), (2, true), (3, true), (4, true)],
        4,
        &[(2, true), (3, true), (4, true), (6, true), (7, true)],
    );
    assert_eq!(id_gaps(&cap), 1);
    assert!(table_csv(&cap, "resumptions").contains(",forked,"));
    // The priming event carried the ordinal after the cursor: nothing was skipped at the
    // boundary (3 came as a cursor, 4 as a message).
    let cap = go_stream_resumed(
        &[(1, true), (2, true)],
        2,
        &[(3, false), (4, true), (5, true)],
    );
    assert_eq!(id_gaps(&cap), 0);
    assert!(table_csv(&cap, "resumptions").contains(",resumed,"));
    // C# primes a resumed connection with the next ordinal: a loss after it is still found.
    let cap = go_stream_resumed(
        &[(1, true), (2, true)],
        2,
        &[(3, false), (4, true), (6, true), (7, true)],
    );
    assert_eq!(id_gaps(&cap), 1);
    // At the boundary, an ordinal a priming event carried is not counted as lost: 4 is.
    let cap = go_stream_resumed(
        &[(1, true), (2, true)],
        2,
        &[(3, false), (5, true), (6, true)],
    );
    let fs = analyze(&cap, &[]);
    let gap = fs
        .iter()
        .find(|f| f["kind"] == "id_gap")
        .expect("an id_gap");
    assert_eq!(gap["expected"], "4");
    assert!(gap["detail"]
        .as_str()
        .unwrap()
        .contains(": 1 events were never delivered"));
    // A resumption the rules cannot judge (its cursor was never delivered) whose connection
    // lost dense ids inside it is still a gap.
    let cap = go_stream_resumed(
        &[(1, true), (2, true)],
        0,
        &[(1, true), (2, true), (4, true), (5, true)],
    );
    let rs = table_csv(&cap, "resumptions");
    assert!(
        rs.contains(",gap,") && rs.contains("dense ids skipped inside the resumed connection"),
        "{rs}"
    );
    // A priming event far ahead of the replay that follows it does not hide a replayed event
    // lost: 4 between 3 and 5.
    let cap = go_stream_resumed(
        &[(1, true), (2, true)],
        2,
        &[(6, false), (3, true), (5, true), (7, true)],
    );
    assert_eq!(id_gaps(&cap), 1);
    // Replays that stay below the cursor, then a skip past it: the detail names the cursor,
    // which this connection did not carry.
    let cap = go_stream_resumed(
        &[(1, true), (2, true), (3, true), (4, true)],
        4,
        &[(2, true), (3, true), (6, true), (7, true)],
    );
    let fs = analyze(&cap, &[]);
    let gap = fs
        .iter()
        .find(|f| f["kind"] == "id_gap")
        .expect("an id_gap");
    assert!(
        gap["detail"]
            .as_str()
            .unwrap()
            .contains("went from the resumption's cursor"),
        "{gap:#}"
    );
    assert_eq!(gap["expected"], "5");
    // A priming event with the next ordinal, the cursor event re-sent, then a skip: one
    // finding, the resumption's (the re-sent cursor does not start the part).
    let cap = go_stream_resumed(
        &[(1, true), (2, true), (3, true)],
        3,
        &[(4, false), (3, true), (6, true), (7, true)],
    );
    assert_eq!(id_gaps(&cap), 1);
    // Reordered and lost on one connection: 3 comes late, 4 never; 4 is the one expected.
    let cap = go_stream_resumed(
        &[
            (0, true),
            (1, true),
            (2, true),
            (5, true),
            (3, true),
            (6, true),
        ],
        0,
        &[],
    );
    let fs = analyze(&cap, &[]);
    let gap = fs
        .iter()
        .find(|f| f["kind"] == "id_gap")
        .expect("an id_gap");
    assert_eq!(gap["expected"], "4");
    // Reordered, not lost: 4 comes after 5 on the same connection.
    let cap = go_stream_resumed(
        &[(1, true), (2, true), (4, true), (3, true), (5, true)],
        0,
        &[],
    );
    assert_eq!(id_gaps(&cap), 0);
    // The boundary continues (3 after 2), then 4 is lost inside the resumed connection: the
    // resumption is a gap, not resumed.
    let cap = go_stream_resumed(
        &[(1, true), (2, true)],
        2,
        &[(3, true), (5, true), (6, true)],
    );
    assert_eq!(id_gaps(&cap), 1);
    let rs = table_csv(&cap, "resumptions");
    assert!(
        rs.contains(",gap,") && rs.contains("dense ids skipped inside the resumed connection"),
        "{rs}"
    );
}
