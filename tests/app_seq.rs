//! `--app-seq JSON_POINTER`: an application sequence field other than progress. A resumption
//! whose transport ids continue while `params.seq` jumps is `app_seq_desync` only when the
//! pointer is given; `/params/app_seq` is always checked.

mod common;

/// The kinds of the findings, in output order.
fn kinds(cap: &Capture, extra: &[&str]) -> Vec<String> {
    kinds_of(&analyze(cap, extra))
}

use std::process::Command;

use common::*;
use serde_json::{json, Value};

fn note(seq: u64, field: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", field: seq}})
}

/// `initialize` answered with session `s1` and protocol `version`, on its own connection.
fn handshake(cap: &mut Capture, version: &str) {
    let mut c = cap.connect();
    c.client(cap, &post(None, &initialize(0)));
    let mut init = initialize_result(0);
    init["result"]["protocolVersion"] = json!(version);
    c.server(cap, &json_response(Some("s1"), &init));
    c.close(cap);
}

/// A tools/call stream with ids 1..3 (seq 1..3), cut, resumed from 3 with id 4 carrying seq
/// `jump_to` and the result on id 5.
fn capture(field: &str, jump_to: u64) -> Capture {
    capture_resumed(field, Some(jump_to))
}

/// As [`capture`]; with `None` the result comes at once, on id 4.
fn capture_resumed(field: &str, jump_to: Option<u64>) -> Capture {
    let mut cap = Capture::new();
    handshake(&mut cap, PROTOCOL_VERSION);
    let mut call = cap.connect();
    call.client(
        &mut cap,
        &post(
            Some("s1"),
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}),
        ),
    );
    let evs: Vec<Ev> = (1..=3).map(|i| Ev::id(i, note(i, field))).collect();
    call.server(&mut cap, &sse_response(Some("s1"), &evs, false));
    call.server_reset(&mut cap);
    let mut r = cap.connect();
    r.client(&mut cap, &get(Some("s1"), Some("3")));
    let mut evs: Vec<Ev> = jump_to
        .map(|seq| Ev::id(4, note(seq, field)))
        .into_iter()
        .collect();
    evs.push(Ev::id(
        4 + evs.len(),
        json!({"jsonrpc": "2.0", "id": 2, "result": {}}),
    ));
    r.server(&mut cap, &sse_response(Some("s1"), &evs, true));
    r.close(&mut cap);
    cap
}

#[test]
fn custom_pointer_only_when_given() {
    let cap = capture("seq", 9);
    assert_eq!(kinds(&cap, &[]), ["resume_ok"]);
    // A synthesized continuation: the counter jumps and the final result follows at once.
    assert_eq!(
        kinds(&cap, &["--app-seq", "/params/seq"]),
        ["app_seq_desync", "suspect_terminal"]
    );
}

#[test]
fn default_app_seq_field() {
    assert_eq!(
        kinds(&capture("app_seq", 9), &[]),
        ["app_seq_desync", "suspect_terminal"]
    );
    assert_eq!(kinds(&capture("app_seq", 4), &[]), ["resume_ok"]);
}

#[test]
fn result_right_after_the_cursor_while_app_seq_was_under_way() {
    // A terminal result right after Last-Event-ID with none of the counter that was under way
    // in between is suspect (docs/resumption.md, "Terminal provenance") — here the application's
    // counter is `app_seq`, not progress.
    let fs = findings(&capture_resumed("app_seq", None));
    assert_eq!(kinds_of(&fs), ["suspect_terminal"]);
    let f = &fs[0];
    assert_eq!(f["severity"], "error");
    assert_eq!(f["last_event_id"], "3");
    assert_eq!(f["event_id"], "4");
    assert_eq!(f["request_id"], "2");
    // Without an application counter on the stream nothing is under way: a plain resume.
    assert_eq!(kinds(&capture_resumed("other", None), &[]), ["resume_ok"]);
}

#[test]
fn bad_pointer_is_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(["analyze", "--app-seq", "params.seq", "x.pcap"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Progress 1..3 on the POST stream (ids 1..3), cut; the resumed connection carries ids 4.. with
/// the given progress values, then the result.
fn progress_capture(before: &[u64], after: &[u64]) -> Capture {
    progress_capture_paced(before, &[after])
}

/// The Python SDK's replay→live race: the resumption itself is fine (resume_ok), but one value
/// goes missing later inside the resumed connection. The finding names the cursor the client
/// held before the jump (the event with progress 5) and the event after it.
#[test]
fn value_lost_inside_the_resumed_connection() {
    let fs = findings(&progress_capture(&[1, 2, 3], &[4, 5, 7, 8]));
    let mut kinds: Vec<&str> = fs.iter().map(|f| f["kind"].as_str().unwrap()).collect();
    kinds.sort();
    assert_eq!(kinds, ["app_seq_desync", "resume_ok"], "{fs:#?}");
    let ok = fs.iter().find(|f| f["kind"] == "resume_ok").unwrap();
    let desync = fs.iter().find(|f| f["kind"] == "app_seq_desync").unwrap();
    assert_eq!(ok["event_id"], "4");
    // It says the loss past the cursor is reported on its own.
    let said = ok["detail"].as_str().unwrap();
    assert!(
        said.contains("past the cursor, is reported on its own"),
        "{said}"
    );
    assert_eq!(desync["last_event_id"], "5");
    assert_eq!(desync["event_id"], "6");
    assert_eq!(desync["observed"], "7");
}

/// Progress may grow by any step (MCP "Progress" fixes none): a series whose steps before the cut
/// were uneven, or a single step other than 1, is not held to a step — only a value that goes back
/// is a desync. A regular counter is held to its step at the boundary (docs/resumption.md,
/// "Synthesized continuations").
#[test]
fn irregular_progress_is_only_checked_for_going_back() {
    let kinds = |before: &[u64], after: &[u64]| -> Vec<String> {
        let fs = findings(&progress_capture(before, after));
        let mut k: Vec<String> = fs
            .iter()
            .map(|f| f["kind"].as_str().unwrap().to_string())
            .collect();
        k.sort();
        k
    };
    assert_eq!(kinds(&[1, 2, 4], &[5, 7, 11]), ["resume_ok"]);
    assert_eq!(kinds(&[1, 2, 4], &[9, 10]), ["resume_ok"]);
    // One step of 15 (bytes, percent), or a single value: the next may be any larger one.
    assert_eq!(kinds(&[10, 25], &[60, 100]), ["resume_ok"]);
    assert_eq!(kinds(&[10], &[25, 100]), ["resume_ok"]);
    assert_eq!(kinds(&[1024], &[4096, 100_000]), ["resume_ok"]);
    // Going back to a value never delivered is a desync whatever the steps.
    assert_eq!(kinds(&[1, 2, 4], &[3, 5]), ["app_seq_desync"]);
    // Regular counters: two equal steps, or one step of exactly 1.
    assert_eq!(kinds(&[5, 10, 15], &[40, 45]), ["app_seq_desync"]);
    assert_eq!(kinds(&[1, 2], &[9, 10]), ["app_seq_desync"]);
    assert_eq!(kinds(&[5, 10, 15], &[20, 25]), ["resume_ok"]);
}

/// typescript-sdk PR #1978: a replay that delivers the events out of order (progress 6, 5, 4 after
/// 3) is told apart from a synthesized jump (6, 7): the values skipped come later on the same
/// connection.
#[test]
fn replay_out_of_order_is_said_so() {
    let detail = |after: &[u64]| -> String {
        let fs = findings(&progress_capture(&[1, 2, 3], after));
        assert_eq!(kinds_of(&fs), ["app_seq_desync"], "{fs:#?}");
        fs[0]["detail"].as_str().unwrap().to_string()
    };
    let reordered = detail(&[6, 5, 4]);
    assert!(reordered.contains("delivered out of order"), "{reordered}");
    let jumped = detail(&[6, 7]);
    assert!(jumped.contains("synthesized"), "{jumped}");
    assert!(!jumped.contains("out of order"), "{jumped}");
}

/// [`progress_capture`] with the resumed connection's events sent in bursts: `after[k]` is sent
/// at once, a pause of 500 ms before each burst but the first.
fn progress_capture_paced(before: &[u64], after: &[&[u64]]) -> Capture {
    let mut cap = Capture::new();
    let mut call = cap.connect();
    call.client(&mut cap, &post(Some("s1"), &tools_call(2, &json!(2))));
    let p = |v: u64| progress(&json!(2), v, 100);
    let evs: Vec<Ev> = before
        .iter()
        .enumerate()
        .map(|(i, &v)| Ev::id(i + 1, p(v)))
        .collect();
    call.server(&mut cap, &sse_response(Some("s1"), &evs, false));
    call.server_reset(&mut cap);
    let mut r = cap.connect();
    r.client(&mut cap, &get(Some("s1"), Some(&before.len().to_string())));
    r.server(&mut cap, &sse_head(Some("s1")));
    let mut id = before.len();
    for (k, burst) in after.iter().enumerate() {
        if k > 0 {
            cap.wait(500_000);
        }
        let text: String = burst
            .iter()
            .map(|&v| {
                id += 1;
                Ev::id(id, p(v)).text()
            })
            .collect();
        r.server(&mut cap, &chunk(text.as_bytes()));
    }
    r.server(
        &mut cap,
        &chunk(Ev::id(id + 1, result(2)).text().as_bytes()),
    );
    r.server(&mut cap, LAST_CHUNK);
    r.close(&mut cap);
    cap
}

/// Inside the resumed connection a regular counter is held to its step through the replay and
/// the step to the first live event (where the Python SDK's race loses one); later steps are
/// the tool's own, as on a connection never cut (any step, MCP "Progress").
#[test]
fn only_the_handover_to_live_events_is_held_to_the_step() {
    let kinds = |after: &[&[u64]]| {
        let mut k = kinds_of(&findings(&progress_capture_paced(&[1, 2, 3], after)));
        k.sort();
        k
    };
    // A later live jump is the tool's.
    assert_eq!(kinds(&[&[4, 5], &[6], &[7], &[20]]), ["resume_ok"]);
    // A value lost where the replay hands over to live events.
    assert_eq!(
        kinds(&[&[4, 5], &[7], &[8]]),
        ["app_seq_desync", "resume_ok"]
    );
    // A value lost inside the replay.
    assert_eq!(kinds(&[&[4, 6], &[7]]), ["app_seq_desync", "resume_ok"]);
}

/// An `--app-seq` field is one counter whichever messages carry it (docs/resumption.md,
/// "Synthesized continuations"): values that go on across methods after the resume are no desync; a
/// value skipped is.
#[test]
fn an_app_seq_shared_by_two_methods_is_one_counter() {
    let run = |after: &[(&str, u64)]| {
        let mut cap = Capture::new();
        handshake(&mut cap, PROTOCOL_VERSION);
        let mut call = cap.connect();
        call.client(&mut cap, &post(Some("s1"), &tools_call(2, &json!(2))));
        let note = |method: &str, seq: u64| json!({"jsonrpc": "2.0", "method": method, "params": {"seq": seq}});
        let evs: Vec<Ev> = (1..=3)
            .map(|i| Ev::id(i, note("notifications/message", i)))
            .collect();
        call.server(&mut cap, &sse_response(Some("s1"), &evs, false));
        call.server_reset(&mut cap);
        let mut r = cap.connect();
        r.client(&mut cap, &get(Some("s1"), Some("3")));
        let mut evs: Vec<Ev> = after
            .iter()
            .enumerate()
            .map(|(i, &(m, v))| Ev::id(4 + i, note(m, v)))
            .collect();
        evs.push(Ev::id(4 + after.len(), result(2)));
        r.server(&mut cap, &sse_response(Some("s1"), &evs, true));
        r.close(&mut cap);
        kinds(&cap, &["--app-seq", "/params/seq"])
    };
    assert_eq!(
        run(&[
            ("notifications/resources/updated", 4),
            ("notifications/message", 5)
        ]),
        ["resume_ok"]
    );
    assert!(run(&[
        ("notifications/resources/updated", 4),
        ("notifications/message", 7)
    ])
    .contains(&"app_seq_desync".to_string()));
}

/// One session, `n` tools/calls (tokens `tok0`…) answered on a GET stream that carries their
/// progress 1, 2 and 3 of 10 (ids 1…3n), is cut, and resumed from the last: every token goes on
/// at 4 but token `jumper`, which goes to 6. Each token is its own sequence: only that one is
/// out of step.
#[test]
fn many_progress_tokens_each_held_to_its_own_step() {
    let n = 400;
    let jumper = 137;
    let mut cap = Capture::new();
    handshake(&mut cap, PROTOCOL_VERSION);
    let tok = |k: usize| json!(format!("tok{k}"));
    for k in 0..n {
        let mut c = cap.connect();
        c.client(
            &mut cap,
            &post(Some("s1"), &tools_call(k as i64 + 1, &tok(k))),
        );
        c.server(&mut cap, &accepted());
        c.close(&mut cap);
    }
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some("s1"), None));
    let before: Vec<Ev> = (1..=3u64)
        .flat_map(|p| (0..n).map(move |k| (p, k)))
        .enumerate()
        .map(|(i, (p, k))| Ev::id(i + 1, progress(&tok(k), p, 10)))
        .collect();
    g.server(&mut cap, &sse_response(Some("s1"), &before, false));
    g.server_reset(&mut cap);
    let mut r = cap.connect();
    r.client(&mut cap, &get(Some("s1"), Some(&(3 * n).to_string())));
    let after: Vec<Ev> = (0..n)
        .map(|k| {
            let p = if k == jumper { 6 } else { 4 };
            Ev::id(3 * n + k + 1, progress(&tok(k), p, 10))
        })
        .collect();
    r.server(&mut cap, &sse_response(Some("s1"), &after, true));
    r.close(&mut cap);
    let fs = findings(&cap);
    let desync: Vec<&Value> = fs
        .iter()
        .filter(|f| f["kind"] == "app_seq_desync")
        .collect();
    assert_eq!(desync.len(), 1, "{fs:#?}");
    let detail = desync[0]["detail"].as_str().unwrap();
    assert!(detail.contains(&format!("\"tok{jumper}\"")), "{detail}");
}

/// A 2025-03-26 batch of `n` tools/calls whose progress (1 of 2) came before the cut, and whose
/// results come in one batch right after it: a result whose own progress reached 2 of 2 ahead
/// of it in the batch is whole; one whose progress comes only after it, or not at all, is a
/// terminal event without the progress under way. Each result is judged by what came before it.
#[test]
fn a_batch_of_results_is_judged_result_by_result() {
    let n: i64 = 300;
    let mut cap = Capture::new();
    handshake(&mut cap, "2025-03-26");
    let calls: Vec<Value> = (1..=n).map(|i| tools_call(i, &json!(i))).collect();
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some("s1"), &Value::Array(calls)));
    let first: Vec<Value> = (1..=n).map(|i| progress(&json!(i), 1, 2)).collect();
    c.server(
        &mut cap,
        &sse_response(Some("s1"), &[Ev::id(1, Value::Array(first))], false),
    );
    c.server_reset(&mut cap);
    // Even calls: progress 2 of 2, then the result. Odd calls: the result, then progress 2 of 2.
    let mut batch = Vec::new();
    for i in 1..=n {
        if i % 2 == 0 {
            batch.push(progress(&json!(i), 2, 2));
            batch.push(result(i));
        } else {
            batch.push(result(i));
            batch.push(progress(&json!(i), 2, 2));
        }
    }
    let mut r = cap.connect();
    r.client(&mut cap, &get(Some("s1"), Some("1")));
    r.server(
        &mut cap,
        &sse_response(Some("s1"), &[Ev::id(2, Value::Array(batch))], true),
    );
    r.close(&mut cap);
    let fs = findings(&cap);
    let mut suspect: Vec<i64> = fs
        .iter()
        .filter(|f| f["kind"] == "suspect_terminal")
        .map(|f| f["request_id"].as_str().unwrap().parse().unwrap())
        .collect();
    suspect.sort();
    let odd: Vec<i64> = (1..=n).filter(|i| i % 2 == 1).collect();
    assert_eq!(suspect, odd);
}
