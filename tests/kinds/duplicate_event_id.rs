//! `duplicate_event_id`: one connection delivered one event (same id, same data) twice
//! (typescript-sdk PR #2335 review).
//!
//! Positive: ids 1, 2, 2, 3 on one POST stream. Negative: ids 1, 2, 3.

use crate::common::*;
use serde_json::Value;

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
