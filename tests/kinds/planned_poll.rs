//! `planned_poll`: MCP 2025-11-25 polling (SEP-1699), a planned close after `retry` and a
//! timely resume.
//!
//! Positive: a POST stream primed with `retry`, closed cleanly (or close-delimited and ended by
//! a FIN), resumed 0.5 s later; polls held open and closed again and again. Negative: a cut
//! (no last chunk), a reset, the same poll before 2025-11-25. Also: the resumptions' verdicts
//! of a quiet poll, and an absurd `retry` that must not overflow.

use crate::common::*;
use serde_json::Value;

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

#[test]
fn no_polling_before_2025_11_25() {
    assert_kinds(&poll(true, "2025-06-18"), &[("resume_ok", "info")]);
}

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

// Asserts the resumptions' verdicts of the quiet poll (its findings are in
// `suspect_terminal::a_result_right_after_a_planned_poll_is_no_suspect_terminal`).

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
    // it: no event after the cursor was shown, so it is no `resumed` (nor a `gap`: nothing was
    // shown skipped; the lost response is the stream's).
    assert_eq!(
        resumption_verdicts(&{
            let (mut cap, c) = call_under_way();
            c.server_close(&mut cap);
            cap.wait(1_000_000);
            resume_with(&mut cap, "3", &[]);
            cap
        }),
        ["unverifiable"]
    );
}

// No kind asserted but that every finding is info: the `retry` of a planned poll.

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
