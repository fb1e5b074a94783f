//! `duplicate_delivery`: the same event, progress or response delivered twice.
//!
//! Positive: progress re-sent under fresh ids inside the resumed connection; the result again
//! after a resumption; a second JSON response of the same server without its request; a request
//! answered twice. Negative: a resent priming event; a reused request id answered once per
//! request. (Inclusive replays are in `tests/inclusive_replay.rs`; forks that also duplicate
//! are in `id_restart`.)

use crate::common::*;

/// A replay that hands over to live events re-sends some of its own (typescript-sdk PR #2335
/// review): inside the resumed connection, progress 4, 5 come again under fresh ids. The client has
/// them twice (duplicate_delivery); nothing was lost, so no app_seq_desync and no `gap`.
#[test]
fn progress_re_sent_inside_the_resumed_connection_is_a_duplicate_delivery() {
    let mut resumed = prog_range(4..=5, 4, 9);
    resumed.extend(prog_range(6..=12, 4, 9));
    resumed.push(res(13));
    let cap = cut_and_resume(9, End::CutFin, &resumed);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("duplicate_delivery", "error")]);
    // The first value the client had already: progress 4 again, on id 6.
    assert_keys(one(&fs, "duplicate_delivery"), Some("3"), Some("6"), None);
    let rs = table_csv(&cap, "resumptions");
    assert!(
        csv_rows(&rs).iter().any(|r| r["verdict"] == "resumed"
            && r["reason"].contains("events the client already had were delivered again")),
        "{rs}"
    );
    // The same events re-sent with their ids and data are one connection's duplicate ids, said
    // once, by duplicate_event_id.
    let mut resumed = prog_range(4..=5, 4, 9);
    resumed.extend(prog_range(4..=9, 4, 9));
    resumed.push(res(10));
    let fs = findings(&cut_and_resume(9, End::CutFin, &resumed));
    assert_kinds(
        &fs,
        &[("duplicate_event_id", "error"), ("resume_ok", "info")],
    );
    // Negative: a loss after the re-sent values is still a loss.
    let mut resumed = prog_range(4..=5, 4, 9);
    resumed.extend(prog_range(6..=7, 4, 9));
    resumed.extend(prog_range(8..=9, 8, 9));
    resumed.push(res(10));
    let fs = findings(&cut_and_resume(9, End::CutFin, &resumed));
    assert_kinds(
        &fs,
        &[("app_seq_desync", "error"), ("duplicate_delivery", "error")],
    );
}

#[test]
fn duplicate_response() {
    // The POST stream delivers progress 1..5 and the result on id 6, then is cut
    // before its last chunk; the resumed stream continues at id 7 — with the
    // result of request 2 again. The ids continue (resume_ok); the response is doubled.
    let mut cap = Capture::new();
    handshake(&mut cap);
    let mut evs = prog_range(1..=5, 1, 5);
    evs.push(res(6));
    tools_call_stream(&mut cap, &evs, End::CutFin);
    resume(&mut cap, "6", &sse_response(None, &[res(7)], true));
    let fs = findings(&cap);
    assert_kinds(
        &fs,
        &[("duplicate_delivery", "error"), ("resume_ok", "info")],
    );
    assert_keys(one(&fs, "duplicate_delivery"), Some("6"), None, Some("2"));
    assert_keys(one(&fs, "resume_ok"), Some("6"), Some("7"), None);
}

#[test]
fn a_second_response_without_its_request_from_the_same_server_is_a_duplicate() {
    // The capture missed the request of the second connection, but its response comes from the
    // same server endpoint as the first answer: not another hop's copy, a second delivery.
    let mut cap = Capture::new();
    healthy(&mut cap);
    let mut c = cap.connect();
    c.server(&mut cap, &json_response(Some(SID), &result(2)));
    c.close(&mut cap);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("duplicate_delivery", "error")]);
    assert_keys(one(&fs, "duplicate_delivery"), None, None, Some("2"));
}

/// A client that reuses a request id (MCP forbids it within a session) gets one response per
/// request: nothing reached it twice. The same id answered twice for one request still is a
/// duplicate.
#[test]
fn a_reused_request_id_answered_once_per_request_is_no_duplicate() {
    let call = |cap: &mut Capture, answers: usize| {
        let mut c = cap.connect();
        c.client(cap, &post(Some(SID), &tools_call(2, &token(2))));
        for _ in 0..answers {
            c.server(cap, &json_response(Some(SID), &result(2)));
        }
        c.close(cap);
    };
    let mut cap = Capture::new();
    handshake(&mut cap);
    call(&mut cap, 1);
    cap.wait(1_000_000);
    call(&mut cap, 1);
    assert_kinds(&findings(&cap), &[]);
    // Negative: the second request is answered twice.
    let mut cap = Capture::new();
    handshake(&mut cap);
    call(&mut cap, 1);
    cap.wait(1_000_000);
    call(&mut cap, 2);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("duplicate_delivery", "error")]);
    assert_keys(one(&fs, "duplicate_delivery"), None, None, Some("2"));
}

#[test]
fn resent_priming_event_is_not_a_duplicate() {
    // rmcp-style ids `<n>/<request>`: the cursor is the priming event 0/2 (empty data); the
    // replay starts at the cursor (inclusive) and re-sends it before 1/2 and 2/2. No message
    // reached the client twice.
    let mut cap = Capture::new();
    handshake(&mut cap);
    let mut c = tools_call_conn(&mut cap);
    let mut body = sse_head(None);
    body.extend(chunk(b"id: 0/2\nretry: 1000\ndata: \n\n"));
    c.server(&mut cap, &body);
    c.server_close(&mut cap);
    let mut body = sse_head(None);
    body.extend(chunk(b"id: 0/2\ndata: \n\n"));
    for ev in [prog("1/2", 1, 1), res("2/2")] {
        body.extend(chunk(ev.text().as_bytes()));
    }
    body.extend_from_slice(LAST_CHUNK);
    resume(&mut cap, "0/2", &body);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("resume_ok", "info")]);
    assert_keys(one(&fs, "resume_ok"), Some("0/2"), Some("1/2"), None);
}
