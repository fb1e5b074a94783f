//! `duplicate_request_id`: two requests of a session in flight at once with one JSON-RPC id
//! (JSON-RPC 2.0 §4; typescript-sdk #2433, python-sdk #3060).
//!
//! Positive: `tools/call` id 7 sent again on a second connection while the first still
//! streams; the server writes the first one's progress and the response to the second stream.
//! Negative: id 7 reused after the first was answered.

use crate::common::*;
use serde_json::json;

fn call(id: i64, token: &str) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "count", "arguments": {}, "_meta": {"progressToken": token}}})
}

fn prog_of(token: &str, n: u64) -> Ev {
    Ev::no_id(progress(&json!(token), n, 4))
}

#[test]
fn the_same_id_in_flight_twice() {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut a = cap.connect();
    a.client(&mut cap, &post(Some(SID), &call(7, "a")));
    a.server(&mut cap, &sse_head(None));
    a.server(&mut cap, &chunk(prog_of("a", 1).text().as_bytes()));
    cap.wait(200_000);
    let mut b = cap.connect();
    b.client(&mut cap, &post(Some(SID), &call(7, "b")));
    b.server(&mut cap, &sse_head(None));
    // The server routes by id: the first call's progress and the one response go to the
    // second stream.
    for ev in [
        prog_of("a", 2),
        prog_of("b", 1),
        Ev::no_id(json!({"jsonrpc": "2.0", "id": 7, "result": {"content": []}})),
    ] {
        b.server(&mut cap, &chunk(ev.text().as_bytes()));
    }
    b.server(&mut cap, LAST_CHUNK);
    b.close(&mut cap);
    cap.wait(5_000_000);
    a.server(&mut cap, LAST_CHUNK);
    a.close(&mut cap);
    let fs = analyze(&cap, &[]);
    assert_kinds(
        &fs,
        &[
            ("duplicate_request_id", "error"),
            ("lost_response", "error"),
        ],
    );
    let f = one(&fs, "duplicate_request_id");
    assert_eq!(f["request_id"], "7");
    let detail = f["detail"].as_str().unwrap();
    assert!(detail.contains("with JSON-RPC id 7"), "{detail}");
}

#[test]
fn an_id_reused_after_its_answer() {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    for token in ["a", "b"] {
        c.client(&mut cap, &post(Some(SID), &call(7, token)));
        c.server(
            &mut cap,
            &json_response(
                None,
                &json!({"jsonrpc": "2.0", "id": 7, "result": {"content": []}}),
            ),
        );
        cap.wait(200_000);
    }
    c.close(&mut cap);
    assert_kinds(&analyze(&cap, &[]), &[]);
}
