//! `empty_resume_loop`: resumptions from one cursor answered empty, again and again (rust-sdk
//! #958).
//!
//! Positive: three empty answers from cursor 3 a second apart; a loop of 2,100 that spends the
//! history budget. Negative: two empty answers; one empty answer followed by a resumption that
//! carries the stream on, or by a forked one, or after the result (these three assert the
//! resumptions' verdicts).

use crate::common::*;
use serde_json::Value;

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
    assert!(
        column_has(&anomalies, "code", "detect.history_window"),
        "{anomalies}"
    );
}

#[test]
fn two_empty_resumes_are_not_a_loop() {
    assert_kinds(&empty_resumes(2), &[("lost_response", "error")]);
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
    let verdicts = csv_column(&rs, "verdict");
    assert_eq!(
        verdicts.iter().filter(|v| *v == "resumed").count(),
        2,
        "{rs}"
    );
    assert!(!verdicts.iter().any(|v| v == "gap"), "{rs}");
}

#[test]
fn an_empty_answer_then_a_forked_resumption_is_not_resumed() {
    // The empty answer showed no event after the cursor (unverifiable, not a gap); the fork
    // after it is the failure.
    let (mut cap, c) = call_under_way();
    c.server_close(&mut cap);
    cap.wait(1_000_000);
    resume_with(&mut cap, "3", &[]);
    cap.wait(1_000_000);
    let mut fresh = progs(2, &["1", "2"], 1, 5);
    fresh.push(Ev::id("3", result(2)));
    resume_with(&mut cap, "3", &fresh);
    let rs = table_csv(&cap, "resumptions");
    assert!(
        column_has(&rs, "verdict", "unverifiable") && column_has(&rs, "verdict", "forked"),
        "{rs}"
    );
    assert!(!column_has(&rs, "verdict", "resumed"), "{rs}");
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
        assert!(column_has(&rs, "verdict", verdict), "{cursor}: {rs}");
        let ss = table_csv(&cap, "sessions");
        assert!(column_has(&ss, "verdict", session), "{cursor}: {ss}");
    }
}
