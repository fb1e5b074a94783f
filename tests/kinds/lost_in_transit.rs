//! `lost_in_transit`: events a backend sent that vanished between hops, never reaching the
//! client.
//!
//! Positive: both legs of a proxy that forwards ids 1..2 of the backend's 1..3 and the result,
//! then cuts the client's connection. Negative: the same, the client resuming from 2 and the
//! backend replaying the rest. (Moved from `tests/hops.rs`, which keeps an event dropped
//! mid-stream and the other proxy scenarios.)

use crate::common::*;
use serde_json::{json, Value};

/// Both legs of a tools/call: the backend sends ids 1..3 and the result, the proxy forwards only
/// ids 1..2 and cuts the client's connection; with `resume`, the client comes back from 2 and the
/// (same) backend replays 3 and the result.
fn cut_in_the_proxy(resume: bool) -> Vec<Value> {
    let mut cap = Capture::new();
    let body = event_chunks(&[Ev::no_id(initialize_result(1))]);
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
    u.server(&mut cap, &sse_head_from(None, None));
    c.server(&mut cap, &sse_head_from(None, None));
    let p3 = |id: u64| Ev::id(id, progress(&json!("t2"), id, 3));
    let all = [p3(1), p3(2), p3(3), Ev::id(4, result(2))];
    u.server(&mut cap, &event_chunks(&all));
    u.server(&mut cap, LAST_CHUNK);
    c.server(&mut cap, &event_chunks(&all[..2]));
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
            &event_chunks(&all[2..]),
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
