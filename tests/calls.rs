//! The `calls` table on real captures: what each request asked, how long it took, how it ended,
//! and which findings concern it (columns read by name, from the NDJSON files).

mod common;
use common::{fixture_path, ndjson_table};

use serde_json::Value;

/// The call with request id `id`.
fn call<'a>(calls: &'a [Value], id: &str) -> &'a Value {
    calls
        .iter()
        .find(|c| c["request_id"] == id)
        .unwrap_or_else(|| panic!("no call {id} in {calls:#?}"))
}

#[test]
fn a_healthy_session_has_every_call_answered_with_its_latency_and_progress() {
    let calls = ndjson_table(&[fixture_path("mcp/healthy_ts.pcap")], "calls");
    let methods: Vec<&str> = calls
        .iter()
        .map(|c| c["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        ["initialize", "tools/list", "tools/call", "tools/call"]
    );
    assert!(calls
        .iter()
        .all(|c| c["outcome"] == "result" && c["status"] == 200));
    let count = call(&calls, "3");
    assert_eq!(count["name"], "count");
    assert_eq!(count["stream_id"], "S4");
    assert_eq!(count["frame"], 36);
    assert_eq!(count["frame_response"], 77);
    assert_eq!(count["latency_us"], 1_219_900);
    assert_eq!(count["progress"], 20);
    assert_eq!(count["connections"], 1);
    assert_eq!(count["findings"], Value::Null);
}

#[test]
fn a_lost_response_is_lost_and_names_its_findings() {
    let calls = ndjson_table(&[fixture_path("mcp/lost_response.pcap")], "calls");
    let findings = ndjson_table(&[fixture_path("mcp/lost_response.pcap")], "findings");
    let c = call(&calls, "2");
    assert_eq!(c["outcome"], "lost");
    assert_eq!(c["ts_response"], Value::Null);
    assert_eq!(c["latency_us"], Value::Null);
    // 8 before the cut, 12 on the resumed connection.
    assert_eq!(c["progress"], 20);
    assert_eq!(c["connections"], 2);
    let kinds: Vec<&str> = c["findings"]
        .as_str()
        .unwrap()
        .split(',')
        .map(|n| {
            let f = &findings[n.parse::<usize>().unwrap() - 1];
            assert_eq!(f["finding"], n.parse::<u64>().unwrap());
            f["kind"].as_str().unwrap()
        })
        .collect();
    assert_eq!(kinds, ["lost_response", "resume_ok"]);
}

#[test]
fn a_fork_names_the_fork_findings_on_the_call_it_broke() {
    let calls = ndjson_table(&[fixture_path("mcp/fork_restart.pcap")], "calls");
    let findings = ndjson_table(&[fixture_path("mcp/fork_restart.pcap")], "findings");
    let c = call(&calls, "2");
    // The fabricated log ends with a result: the call looks answered; its findings say otherwise.
    assert_eq!(c["outcome"], "result");
    assert_eq!(c["connections"], 2);
    assert_eq!(c["progress"], 28);
    let mut kinds: Vec<&str> = c["findings"]
        .as_str()
        .unwrap()
        .split(',')
        .map(|n| {
            findings[n.parse::<usize>().unwrap() - 1]["kind"]
                .as_str()
                .unwrap()
        })
        .collect();
    kinds.sort_unstable();
    assert_eq!(
        kinds,
        [
            "backend_switch",
            "duplicate_delivery",
            "id_regression",
            "id_restart"
        ]
    );
}

#[test]
fn requests_with_a_dead_session_id_are_refused_with_their_status() {
    let calls = ndjson_table(&[fixture_path("mcp-sdk/stale_session_ts.pcap")], "calls");
    let refused: Vec<(&str, &Value)> = calls
        .iter()
        .filter(|c| c["outcome"] == "refused")
        .map(|c| (c["request_id"].as_str().unwrap(), &c["status"]))
        .collect();
    assert_eq!(
        refused,
        [
            ("2", &Value::from(404)),
            ("3", &Value::from(404)),
            ("4", &Value::from(404)),
            ("5", &Value::from(404))
        ]
    );
}

#[test]
fn a_response_delivered_twice_is_answered_twice() {
    let calls = ndjson_table(
        &[fixture_path("mcp-faults/cross_stream_replay.pcap")],
        "calls",
    );
    assert_eq!(call(&calls, "3")["outcome"], "answered_twice");
    assert_eq!(call(&calls, "2")["outcome"], "lost");
}

#[test]
fn a_legacy_session_answers_on_its_get_stream() {
    let calls = ndjson_table(
        &[fixture_path("mcp-eras/healthy_legacy_sse_py.pcap")],
        "calls",
    );
    assert!(calls
        .iter()
        .all(|c| c["outcome"] == "result" && c["status"] == 202));
    let count = call(&calls, "4");
    assert_eq!(count["stream_id"], "S0");
    assert_eq!(count["progress"], 5);
}

#[test]
fn a_cancelled_request_is_cancelled() {
    let calls = ndjson_table(
        &[fixture_path("mcp-gen/resume_ok_ts_timeout.pcap")],
        "calls",
    );
    let c = call(&calls, "3");
    assert_eq!(c["outcome"], "cancelled");
    assert_eq!(c["method"], "tools/call");
}
