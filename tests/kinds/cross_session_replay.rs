//! `cross_session_replay`: a resumption replayed another session's events (typescript-sdk #1004
//! / PR #2109).
//!
//! Positive: s1's resumed GET stream carries an event s2's stream delivered, under s2's id.
//! Negative: the same body under s1's own id; per-session Redis-style ids that repeat one
//! broadcast's id in every session.

use crate::common::*;
use serde_json::{json, Value};

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
