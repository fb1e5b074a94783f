//! A replay that starts *at* the cursor (re-sending the Last-Event-ID event itself, as rmcp's
//! index-based replay does) is one duplicated event, not a fork; a replay whose first event
//! reuses the cursor id for other data is a fork.

mod common;

/// The kinds of the findings, sorted.
fn kinds(cap: &Capture) -> Vec<String> {
    let mut k = kinds_of(&analyze(cap, &[]));
    k.sort();
    k
}

use common::*;
use serde_json::json;

/// ids `<n>/2` (rmcp style) with progress n on the POST stream up to 3, cut; the resumed
/// connection starts with id `first`/progress `first_progress`, then continues to the result.
fn capture(first: u64, first_progress: u64) -> Capture {
    let mut cap = Capture::new();
    let p = |v: u64| progress(&json!(2), v, 100);
    let mut call = cap.connect();
    call.client(&mut cap, &post(Some("s1"), &tools_call(2, &json!(2))));
    let evs: Vec<Ev> = (1..=3).map(|i| Ev::id(format!("{i}/2"), p(i))).collect();
    call.server(&mut cap, &sse_response(Some("s1"), &evs, false));
    call.server_reset(&mut cap);
    let mut r = cap.connect();
    r.client(&mut cap, &get(Some("s1"), Some("3/2")));
    let mut evs = vec![Ev::id(format!("{first}/2"), p(first_progress))];
    evs.extend((4..=5).map(|i| Ev::id(format!("{i}/2"), p(i))));
    evs.push(Ev::id("6/2", result(2)));
    r.server(&mut cap, &sse_response(Some("s1"), &evs, true));
    r.close(&mut cap);
    cap
}

#[test]
fn replay_starting_at_the_cursor_is_a_duplicate() {
    assert_eq!(kinds(&capture(3, 3)), ["duplicate_delivery"]);
}

#[test]
fn cursor_id_reused_for_other_data_is_a_regression() {
    let k = kinds(&capture(3, 9));
    assert!(k.contains(&"id_regression".to_string()), "{k:?}");
}

/// Progress `v` of 100 for request 2.
fn p(v: u64) -> serde_json::Value {
    progress(&json!(2), v, 100)
}

/// A new connection: the tools/call POST of request 2, answered by an SSE stream of `evs` left
/// open (the caller ends it).
fn call_stream(cap: &mut Capture, evs: &[Ev]) -> Conn {
    let mut call = cap.connect();
    call.client(cap, &post(Some("s1"), &tools_call(2, &json!(2))));
    call.server(cap, &sse_response(Some("s1"), evs, false));
    call
}

/// Ids `from..=to`, each with progress of the same value.
fn with_ids(from: u64, to: u64) -> Vec<Ev> {
    (from..=to).map(|i| Ev::id(i, p(i))).collect()
}

/// A GET resuming from 3 on a new connection (the caller sends the answer and ends it).
fn resume_from_3(cap: &mut Capture) -> Conn {
    let mut r = cap.connect();
    r.client(cap, &get(Some("s1"), Some("3")));
    r
}

/// The answer to a resumption from 3: 4 and 5 again, then the result as 6; the client closes.
fn replay_4_5_and_result(cap: &mut Capture, mut r: Conn) {
    let mut evs = with_ids(4, 5);
    evs.push(Ev::id(6, result(2)));
    r.server(cap, &sse_response(Some("s1"), &evs, true));
    r.close(cap);
}

/// A capture taken at the server: events 4 and 5 were on the wire when the connection broke,
/// but the client had processed only up to 3 and resumes from there. Replaying 4 and 5 is the
/// correct behaviour, not a duplicate.
#[test]
fn replay_of_events_sent_after_the_cursor_is_correct() {
    let mut cap = Capture::new();
    call_stream(&mut cap, &with_ids(1, 5)).server_reset(&mut cap);
    let r = resume_from_3(&mut cap);
    replay_4_5_and_result(&mut cap, r);
    assert_eq!(kinds(&cap), ["resume_ok"]);
}

/// A client resumes from `3`; the resumed connection delivers 4 and 5 and is cut (`fin`: the
/// server closes it with a FIN; else it resets it); the client resumes again from `3` and the
/// server replays 4 and 5, then the result.
fn resumed_twice_from_one_cursor(fin: bool) -> Capture {
    resumed_twice(if fin { Cut::Fin } else { Cut::Reset })
}

/// How the first resumed connection ends.
enum Cut {
    /// The server's FIN, answered by the client's.
    Fin,
    /// A reset from the server, before the client acknowledged what the connection carried.
    Reset,
    /// A reset from the server after the client had acknowledged every byte.
    AckedReset,
    /// Both FINs at once: the client's acknowledges nothing of what the resumed connection
    /// carried (its events were still in flight).
    Crossed,
}

/// [`resumed_twice_from_one_cursor`], with the first resumed connection ending as `cut` says.
fn resumed_twice(cut: Cut) -> Capture {
    let mut cap = Capture::new();
    call_stream(&mut cap, &with_ids(1, 3)).server_close(&mut cap);
    cap.wait(1_000_000);
    let mut r = resume_from_3(&mut cap);
    let body = sse_response(Some("s1"), &with_ids(4, 5), false);
    r.server(&mut cap, &body);
    match cut {
        Cut::Fin => r.server_close(&mut cap),
        Cut::Reset => r.server_reset(&mut cap),
        Cut::AckedReset => {
            r.client_ack(&mut cap);
            r.server_reset(&mut cap)
        }
        Cut::Crossed => r.close_crossed(&mut cap, body.len() as u32),
    }
    cap.wait(1_000_000);
    let again = resume_from_3(&mut cap);
    replay_4_5_and_result(&mut cap, again);
    cap
}

/// The resumed connection was closed with a FIN: the client's reader got 4 and 5 (it reads to
/// the end of the connection), so resuming from 3 again was a cursor behind what it had, and the
/// replay delivered them twice (the Python SDK's second resumption after a read error).
#[test]
fn a_cursor_behind_a_connection_read_to_its_end_gets_a_duplicate() {
    let fs = analyze(&resumed_twice_from_one_cursor(true), &[]);
    let dup: Vec<&serde_json::Value> = fs
        .iter()
        .filter(|f| f["kind"] == "duplicate_delivery")
        .collect();
    assert_eq!(dup.len(), 1, "{fs:#?}");
    assert_eq!(dup[0]["event_id"], "4");
    assert_eq!(dup[0]["observed"], "2 ids, 2 progress payloads repeated");
    let detail = dup[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("Of these, 2 it had already read after 3 in events with ids of their own, so its Last-Event-ID was behind what it had")
            && detail.contains("a connection read to its end (the server closed it with a FIN, and the client answered with its own)"),
        "{detail}"
    );
}

/// The resumed connection was reset before the client acknowledged 4 and 5: they may never have
/// reached the client's reader, and their replay from 3 is correct.
#[test]
fn a_cursor_behind_a_reset_connection_is_not_a_duplicate() {
    assert_eq!(
        kinds(&resumed_twice_from_one_cursor(false)),
        ["resume_ok", "resume_ok"]
    );
}

/// The server reset the resumed connection after the client had acknowledged 4 and 5: they
/// reached the client's host, where data that arrived before a reset stays readable (Linux, the
/// BSDs), and the Python SDK resumes from its first cursor after the reset: a duplicate.
#[test]
fn a_cursor_behind_an_acknowledged_reset_connection_gets_a_duplicate() {
    let fs = analyze(&resumed_twice(Cut::AckedReset), &[]);
    let dup: Vec<&serde_json::Value> = fs
        .iter()
        .filter(|f| f["kind"] == "duplicate_delivery")
        .collect();
    assert_eq!(dup.len(), 1, "{fs:#?}");
    let detail = dup[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("(the server reset it after the client had acknowledged every byte)"),
        "{detail}"
    );
}

/// The server's FIN crossed the client's, which acknowledged nothing the resumed connection
/// carried: the client's host may never have had 4 and 5, and their replay is correct.
#[test]
fn a_cursor_behind_a_connection_whose_close_crossed_is_not_a_duplicate() {
    assert_eq!(
        kinds(&resumed_twice(Cut::Crossed)),
        ["resume_ok", "resume_ok"]
    );
}

/// The POST stream is still open when the client resumes from 3 (it gave up on a connection it
/// judged stale); the server closes the POST with a FIN only afterwards. At the resumption the
/// client had not read that connection to its end: the replay of 4 and 5 is no duplicate.
#[test]
fn a_connection_still_open_at_the_resumption_was_not_read_to_its_end() {
    let mut cap = Capture::new();
    let call = call_stream(&mut cap, &with_ids(1, 5));
    cap.wait(1_000_000);
    let r = resume_from_3(&mut cap);
    cap.wait(1_000);
    call.server_close(&mut cap);
    replay_4_5_and_result(&mut cap, r);
    assert_eq!(kinds(&cap), ["resume_ok"]);
}

/// After id 3, progress 4 and 5 come without an id of their own and the connection ends with
/// the server's FIN, answered by the client's: its cursor rightly stays at 3, and the server's
/// replay of 4 and 5 (now with ids) delivers them twice. The finding says the cursor was right.
#[test]
fn events_without_ids_read_after_the_cursor_and_replayed_are_duplicates() {
    let mut cap = Capture::new();
    let mut evs = with_ids(1, 3);
    evs.extend((4..=5).map(|i| Ev::no_id(p(i))));
    call_stream(&mut cap, &evs).server_close(&mut cap);
    cap.wait(1_000_000);
    let r = resume_from_3(&mut cap);
    replay_4_5_and_result(&mut cap, r);
    let fs = analyze(&cap, &[]);
    assert_eq!(kinds_of(&fs), ["duplicate_delivery"]);
    let detail = fs[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("Of these, 2 it had read after 3 in events without an id of their own (its cursor rightly stayed at 3), and the server replayed them"),
        "{detail}"
    );
}
