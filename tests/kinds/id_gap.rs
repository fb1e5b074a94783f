//! `id_gap`: event ids that count one by one skipped, so events between them were never
//! delivered; judged at a resumption's cursor and inside each connection (docs/wire.md,
//! "Event-id formats").
//!
//! Positive: integer ids 3 → 6 with progress skipping too; ids skipped after the progress
//! reached its total; Go, rmcp and C# ordinals that skip inside a connection or at a
//! resumption. Negative: integer ids skipped while progress goes on by one, or by a counter
//! shared with other streams and sessions; a fork whose ids jump ahead (an `id_restart`);
//! dense ids without a skip; reordered events.

use crate::common::*;
use serde_json::{json, Value};

#[test]
fn id_gap() {
    // Ids jump 3 → 6 and progress with them (3 → 6 of 7): events 4 and 5 were lost.
    let mut resumed = prog_range(6..=7, 6, 7);
    resumed.push(res(8));
    let cap = cut_and_resume(7, End::CutRst, &resumed);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("id_gap", "error")]);
    let f = one(&fs, "id_gap");
    assert_keys(f, Some("3"), Some("6"), None);
    assert_eq!(f["expected"], "4");
    assert_eq!(f["observed"], "6");
    assert_eq!(exit_status(&cap, "error"), 1);
}

#[test]
fn integer_ids_skipped_while_progress_goes_on_by_one() {
    // Ids jump 3 → 6 while progress continues 3 → 4: nothing the application numbered is
    // missing. A counter shared with sessions the capture did not see (the Python SDK's v2
    // store counts across all of them) skips ids this way (python-sdk
    // `examples/stories/sse_polling/event_store.py`).
    let mut resumed = prog_range(6..=7, 4, 5);
    resumed.push(res(8));
    let cap = cut_and_resume(5, End::CutRst, &resumed);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("resume_ok", "info")]);
    let rs = table_csv(&cap, "resumptions");
    let rows = csv_rows(&rs);
    assert_eq!(rows.len(), 1, "{rs}");
    assert!(
        rows[0]["verdict"] == "resumed"
            && rows[0]["reason"].contains("application counter went on by one step"),
        "{rs}"
    );
    // Negative: the same skip with progress 3 → 5, a step of one missed, is a gap (`id_gap`).
    let mut resumed = prog_range(6..=7, 5, 6);
    resumed.push(res(8));
    let cap = cut_and_resume(6, End::CutRst, &resumed);
    assert_kinds(&findings(&cap), &[("id_gap", "error")]);
    // Negative: log messages between the progress notifications (ids 1..5: progress 1, log, 2,
    // log, 3); id 6, skipped, would have been a log message, which the progress cannot vouch
    // for.
    let mut cap = Capture::new();
    handshake(&mut cap);
    let before = vec![
        prog(1, 1, 5),
        Ev::id(2, log_message()),
        prog(3, 2, 5),
        Ev::id(4, log_message()),
        prog(5, 3, 5),
    ];
    tools_call_stream(&mut cap, &before, End::CutRst);
    resume(
        &mut cap,
        "5",
        &sse_response(None, &[prog(7, 4, 5), prog(8, 5, 5), res(9)], true),
    );
    assert_kinds(&findings(&cap), &[("id_gap", "error")]);
}

#[test]
fn integer_ids_skipped_after_the_progress_reached_its_total_are_an_id_gap() {
    // Progress 1..3 of 3 on ids 1..3, cut; the result comes on id 6. A finished progress says
    // nothing of ids 4 and 5: log notifications carry no sequence, and nothing in the capture
    // shows a counter shared with other streams.
    let cap = cut_and_resume(3, End::CutRst, &[res(6)]);
    assert_kinds(&findings(&cap), &[("id_gap", "error")]);
}

// Named after `id_gap`, whose negative it is; it asserts the `id_restart` the fork is instead.

#[test]
fn a_fork_whose_ids_jump_ahead_is_no_id_gap() {
    // The replica numbers its own log from 100: ids 101.. carry progress 1..5 again. The ids
    // skipped are another counter's, not 97 events lost.
    let mut resumed = prog_range(101..=105, 1, 5);
    resumed.push(res(106));
    let cap = cut_and_resume(5, End::CutFin, &resumed);
    let fs = findings(&cap);
    assert_kinds(
        &fs,
        &[("duplicate_delivery", "error"), ("id_restart", "error")],
    );
    assert!(
        one(&fs, "id_restart")["detail"].as_str().is_some_and(|d| d
            .contains("progress (progressToken \"t2\") began again at 1 (")
            && d.contains("its event ids went on from 3 to 101")),
        "{}",
        pretty(&fs)
    );
    let rs = table_csv(&cap, "resumptions");
    assert!(
        csv_rows(&rs).iter().any(|r| r["verdict"] == "forked"
            && r["reason"].contains("its ids jumped ahead of the cursor")),
        "{rs}"
    );
}

#[test]
fn shared_integer_counter_is_not_a_gap() {
    // One counter for every stream of the session (the Python SDK's integer store): the POST
    // stream has ids 1..3, id 4 goes to the standalone GET stream while the POST stream is cut,
    // and the resumption goes on at 5. Nothing was lost (docs/wire.md, "Event-id formats").
    let mut cap = Capture::new();
    handshake(&mut cap);
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), None));
    tools_call_stream(&mut cap, &prog_range(1..=3, 1, 5), End::CutFin);
    g.server(
        &mut cap,
        &sse_response(None, &[Ev::id(4, log_message())], false),
    );
    let resumed = vec![prog(5, 4, 5), prog(6, 5, 5), res(7)];
    resume(&mut cap, "3", &sse_response(None, &resumed, true));
    g.close(&mut cap);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("resume_ok", "info")]);
    assert_keys(one(&fs, "resume_ok"), Some("3"), Some("5"), None);
    // The same resumption without id 4 anywhere else is a gap (`id_gap` above).
}

/// The POST stream is cut after ids 1..3; `between` runs while it is away; the client resumes
/// from 3 and gets `resumed`.
fn integer_resume(between: impl FnOnce(&mut Capture), resumed: &[u8]) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &prog_range(1..=3, 1, 5), End::CutFin);
    between(&mut cap);
    resume(&mut cap, "3", resumed);
    findings(&cap)
}

#[test]
fn shared_integer_counter_across_sessions_and_priming() {
    // The counter is shared by every session of the store: id 4 goes to session s2's stream
    // while s1's stream is away.
    let other_session = |cap: &mut Capture| {
        let mut g = cap.connect();
        g.client(cap, &get(Some("s2"), None));
        g.server(cap, &sse_response(None, &[Ev::id(4, log_message())], true));
        g.close(cap);
    };
    let resumed = sse_response(None, &[prog(5, 4, 5), prog(6, 5, 5), res(7)], true);
    let fs = integer_resume(other_session, &resumed);
    assert_kinds(&fs, &[("resume_ok", "info")]);

    // The Python SDK primes every resumed connection with a new id from the counter: 4 is the
    // priming event, the replay goes on at 5.
    let mut body = sse_head(None);
    body.extend(chunk(b"id: 4\ndata: \n\n"));
    for ev in [prog(5, 4, 5), prog(6, 5, 5), res(7)] {
        body.extend(chunk(ev.text().as_bytes()));
    }
    body.extend_from_slice(LAST_CHUNK);
    let fs = integer_resume(|_| {}, &body);
    assert_kinds(&fs, &[("resume_ok", "info")]);

    // Negative: id 4 went to another stream before the cut, not while the stream was away (a
    // counter per stream), and progress skips 4: still a gap.
    let resumed = sse_response(None, &[prog(5, 5, 6), prog(6, 6, 6), res(7)], true);
    let mut cap = Capture::new();
    handshake(&mut cap);
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), None));
    g.server(
        &mut cap,
        &sse_response(None, &[Ev::id(4, log_message())], false),
    );
    tools_call_stream(&mut cap, &prog_range(1..=3, 1, 5), End::CutFin);
    resume(&mut cap, "3", &resumed);
    g.close(&mut cap);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("id_gap", "error")]);
}

/// One POST stream whose events carry `ids` in order (notifications/message, so no progress
/// shows the loss), then the result.
fn stream_with_raw_ids(ids: &[&str], result_id: &str) -> Vec<Value> {
    analyze(&raw_ids_capture(ids, result_id), &[])
}

#[test]
fn dense_ids_that_skip_inside_a_connection_are_an_id_gap() {
    let go = "RXBPBXMEKNWW3ZTPKOVIOJCAU2";
    let id = |n: u32| format!("{go}_{n}");
    let fs = stream_with_raw_ids(&[&id(1), &id(2), &id(4)], &id(5));
    assert_kinds(&fs, &[("id_gap", "error")]);
    let f = one(&fs, "id_gap");
    assert_eq!(f["last_event_id"], id(2));
    assert_eq!(f["event_id"], id(4));
    assert_eq!(f["expected"], "3");
    // rmcp `<n>/<request>` and C# `b64:b64:<n>` number densely too.
    assert_kinds(
        &stream_with_raw_ids(&["1/2", "2/2", "5/2"], "6/2"),
        &[("id_gap", "error")],
    );
    assert_kinds(
        &stream_with_raw_ids(
            &["c2lk:MQ==:1", "c2lk:MQ==:2", "c2lk:MQ==:4"],
            "c2lk:MQ==:5",
        ),
        &[("id_gap", "error")],
    );
    // Negative: ordinals that never stepped by one on the connection (a `tenant:jobs:<ms>`
    // key has the C# shape).
    assert_kinds(
        &stream_with_raw_ids(
            &["t:jobs:1718000000123", "t:jobs:1718000000190"],
            "t:jobs:1718000000377",
        ),
        &[],
    );
    // rmcp primes every stream with `0`, a plain integer: the request stream after it is walked.
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut body = sse_head(None);
    body.extend(chunk(b"id: 0\ndata: \n\n"));
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "step"}});
    for id in ["0/1", "1/1", "3/1"] {
        body.extend(chunk(Ev::id(id, log.clone()).text().as_bytes()));
    }
    body.extend(chunk(Ev::id("4/1", result(2)).text().as_bytes()));
    body.extend_from_slice(LAST_CHUNK);
    c.server(&mut cap, &body);
    c.close(&mut cap);
    assert_kinds(&analyze(&cap, &[]), &[("id_gap", "error")]);
    // The step from a resumption's cursor is the resumption's: an inclusive replay (rmcp
    // re-sends the cursor event) that then skips is one id_gap, not two.
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "step"}});
    let evs = [Ev::id("1/1", log.clone()), Ev::id("2/1", log.clone())];
    c.server(&mut cap, &sse_response(None, &evs, false));
    c.server_reset(&mut cap);
    resume_with(
        &mut cap,
        "2/1",
        &[
            Ev::id("2/1", log.clone()),
            Ev::id("4/1", log),
            Ev::id("5/1", result(2)),
        ],
    );
    let fs = analyze(&cap, &[]);
    assert_eq!(
        fs.iter().filter(|f| f["kind"] == "id_gap").count(),
        1,
        "{fs:#?}"
    );
    // Negatives: dense ids without a skip; plain integers that skip (a counter shared across
    // streams and sessions); another stream part.
    assert_kinds(&stream_with_raw_ids(&[&id(1), &id(2), &id(3)], &id(4)), &[]);
    assert_kinds(&stream_with_raw_ids(&["1", "2", "5"], "6"), &[]);
    let other = format!("ABCDEFGHIJKLMNOPQRSTUVWXYZ_{}", 7);
    assert_kinds(&stream_with_raw_ids(&[&id(1), &other], &id(2)), &[]);
}

/// A stream that lost events inside its one connection has the verdict `gap` in `streams`, as a
/// stream that lost them at a resumption does; without the skip, `single_connection`.
#[test]
fn a_stream_with_an_id_gap_inside_a_connection_is_a_gap() {
    let go = "RXBPBXMEKNWW3ZTPKOVIOJCAU2";
    let id = |n: u32| format!("{go}_{n}");
    let verdicts = |ids: &[&str]| -> Vec<String> {
        csv_rows(&table_csv(&raw_ids_capture(ids, &id(5)), "streams"))
            .into_iter()
            .map(|r| format!("{} {}", r["kind"], r["verdict"]))
            .collect()
    };
    assert_eq!(verdicts(&[&id(1), &id(2), &id(4)]), ["post gap"]);
    assert_eq!(
        verdicts(&[&id(1), &id(2), &id(3), &id(4)]),
        ["post single_connection"]
    );
}

/// A tools/call POST stream carrying `first` (Go ids `G_<n>`; `None` data: a priming event),
/// cut by a reset, then a resumption from `cursor` carrying `resumed`; the last event of each is
/// whatever the caller gives (the result included). The capture.
fn go_stream_resumed(first: &[(u32, bool)], cursor: u32, resumed: &[(u32, bool)]) -> Capture {
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "step"}});
    let body = |evs: &[(u32, bool)]| {
        let mut b = sse_head(None);
        for &(n, data) in evs {
            let text = if data {
                Ev::id(format!("KX3ABCDEFGHIJKLMNOPQRSTUV7_{n}"), log.clone()).text()
            } else {
                format!("id: KX3ABCDEFGHIJKLMNOPQRSTUV7_{n}\ndata: \n\n")
            };
            b.extend(chunk(text.as_bytes()));
        }
        b
    };
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    c.server(&mut cap, &body(first));
    if resumed.is_empty() {
        c.server(&mut cap, LAST_CHUNK);
        c.close(&mut cap);
        return cap;
    }
    c.server_reset(&mut cap);
    let mut g = cap.connect();
    let cursor = format!("KX3ABCDEFGHIJKLMNOPQRSTUV7_{cursor}");
    g.client(&mut cap, &get(Some(SID), Some(&cursor)));
    let mut b = body(resumed);
    b.extend_from_slice(LAST_CHUNK);
    g.server(&mut cap, &b);
    g.close(&mut cap);
    cap
}

/// The in-connection `id_gap` against the resumption's: one finding per skip, replays below the
/// cursor count, reordered events are not lost, and a resumption whose connection lost events
/// inside it is a `gap`.
#[test]
fn dense_id_gaps_inside_and_at_a_resumption() {
    let id_gaps = |cap: &Capture| {
        analyze(cap, &[])
            .iter()
            .filter(|f| f["kind"] == "id_gap")
            .count()
    };
    // A priming event opens the resumed connection ahead of the cursor, then an event skips:
    // one finding, the resumption's.
    let cap = go_stream_resumed(
        &[(1, true), (2, true)],
        2,
        &[(3, false), (5, true), (6, true)],
    );
    assert_eq!(id_gaps(&cap), 1);
    // A replay from below the cursor, then a skip past it: found inside the connection.
    let cap = go_stream_resumed(
        &[(1, true), (2, true), (3, true), (4, true)],
        4,
        &[(2, true), (3, true), (4, true), (6, true), (7, true)],
    );
    assert_eq!(id_gaps(&cap), 1);
    assert_eq!(resumption_verdicts(&cap), ["forked"]);
    // The priming event carried the ordinal after the cursor: nothing was skipped at the
    // boundary (3 came as a cursor, 4 as a message).
    let cap = go_stream_resumed(
        &[(1, true), (2, true)],
        2,
        &[(3, false), (4, true), (5, true)],
    );
    assert_eq!(id_gaps(&cap), 0);
    assert_eq!(resumption_verdicts(&cap), ["resumed"]);
    // C# primes a resumed connection with the next ordinal: a loss after it is still found.
    let cap = go_stream_resumed(
        &[(1, true), (2, true)],
        2,
        &[(3, false), (4, true), (6, true), (7, true)],
    );
    assert_eq!(id_gaps(&cap), 1);
    // At the boundary, an ordinal a priming event carried is not counted as lost: 4 is.
    let cap = go_stream_resumed(
        &[(1, true), (2, true)],
        2,
        &[(3, false), (5, true), (6, true)],
    );
    let fs = analyze(&cap, &[]);
    let gap = fs
        .iter()
        .find(|f| f["kind"] == "id_gap")
        .expect("an id_gap");
    assert_eq!(gap["expected"], "4");
    assert!(gap["detail"]
        .as_str()
        .unwrap()
        .contains(": 1 events were never delivered"));
    // A resumption the rules cannot judge (its cursor was never delivered) whose connection
    // lost dense ids inside it is still a gap.
    let cap = go_stream_resumed(
        &[(1, true), (2, true)],
        0,
        &[(1, true), (2, true), (4, true), (5, true)],
    );
    let rs = table_csv(&cap, "resumptions");
    assert!(
        csv_rows(&rs).iter().any(|r| r["verdict"] == "gap"
            && r["reason"].contains("dense ids skipped inside the resumed connection")),
        "{rs}"
    );
    // A priming event far ahead of the replay that follows it does not hide a replayed event
    // lost: 4 between 3 and 5.
    let cap = go_stream_resumed(
        &[(1, true), (2, true)],
        2,
        &[(6, false), (3, true), (5, true), (7, true)],
    );
    assert_eq!(id_gaps(&cap), 1);
    // Replays that stay below the cursor, then a skip past it: the detail names the cursor,
    // which this connection did not carry.
    let cap = go_stream_resumed(
        &[(1, true), (2, true), (3, true), (4, true)],
        4,
        &[(2, true), (3, true), (6, true), (7, true)],
    );
    let fs = analyze(&cap, &[]);
    let gap = fs
        .iter()
        .find(|f| f["kind"] == "id_gap")
        .expect("an id_gap");
    assert!(
        gap["detail"]
            .as_str()
            .unwrap()
            .contains("went from the resumption's cursor"),
        "{gap:#}"
    );
    assert_eq!(gap["expected"], "5");
    // A priming event with the next ordinal, the cursor event re-sent, then a skip: one
    // finding, the resumption's (the re-sent cursor does not start the part).
    let cap = go_stream_resumed(
        &[(1, true), (2, true), (3, true)],
        3,
        &[(4, false), (3, true), (6, true), (7, true)],
    );
    assert_eq!(id_gaps(&cap), 1);
    // Reordered and lost on one connection: 3 comes late, 4 never; 4 is the one expected.
    let cap = go_stream_resumed(
        &[
            (0, true),
            (1, true),
            (2, true),
            (5, true),
            (3, true),
            (6, true),
        ],
        0,
        &[],
    );
    let fs = analyze(&cap, &[]);
    let gap = fs
        .iter()
        .find(|f| f["kind"] == "id_gap")
        .expect("an id_gap");
    assert_eq!(gap["expected"], "4");
    // Reordered, not lost: 4 comes after 5 on the same connection.
    let cap = go_stream_resumed(
        &[(1, true), (2, true), (4, true), (3, true), (5, true)],
        0,
        &[],
    );
    assert_eq!(id_gaps(&cap), 0);
    // The boundary continues (3 after 2), then 4 is lost inside the resumed connection: the
    // resumption is a gap, not resumed.
    let cap = go_stream_resumed(
        &[(1, true), (2, true)],
        2,
        &[(3, true), (5, true), (6, true)],
    );
    assert_eq!(id_gaps(&cap), 1);
    let rs = table_csv(&cap, "resumptions");
    assert!(
        csv_rows(&rs).iter().any(|r| r["verdict"] == "gap"
            && r["reason"].contains("dense ids skipped inside the resumed connection")),
        "{rs}"
    );
}
