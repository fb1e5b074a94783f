//! `batch_outside_era`: a JSON-RPC batch in a session whose protocol revision has none (only
//! MCP 2025-03-26 had batches).
//!
//! Positive: a batch of two in a 2025-06-18 session. Negative: the same batch in a 2025-03-26
//! session.

use crate::common::*;
use serde_json::{json, Value};

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
