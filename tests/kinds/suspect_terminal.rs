//! `suspect_terminal`: a final result right after the cursor without the progress under way
//! (terminal provenance, docs/resumption.md).
//!
//! Positive: a result after a cut while progress stood short of its total (warning one step
//! short, error further); after a planned poll far from the total, a jump or another backend;
//! after a single value of 0.1 of 1; after one invented value on another backend. Negative: a
//! result right after a planned poll one step short; progress batched with the result; results
//! the same backend or no backend gave; an error instead of a result. (Ids that go on while
//! progress jumps and the result follows, both kinds, is in `app_seq_desync`, which its test's
//! name gives first.)

use crate::common::*;
use serde_json::json;

/// A result right after the cut, with nothing in between: one step short of the total is a
/// warning only when the progress showed its step (two values at least). A single value of 0.1
/// of 1 is not "one step short" by a step of 1 nobody saw: it stays an error.
#[test]
fn a_result_after_one_progress_value_is_not_one_step_short() {
    let tenth = Ev::id(1, progress(&token(2), 1, 10));
    let mut tenth = tenth;
    tenth.data["params"]["progress"] = json!(0.1);
    tenth.data["params"]["total"] = json!(1.0);
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &[tenth], End::CutFin);
    resume(&mut cap, "1", &sse_response(None, &[res(2)], true));
    assert_kinds(&findings(&cap), &[("suspect_terminal", "error")]);
    // Two values, one step short of the total: a warning.
    let cap = cut_and_resume(4, End::CutFin, &[res(4)]);
    assert_kinds(&findings(&cap), &[("suspect_terminal", "warning")]);
}

#[test]
fn progress_batched_with_the_result_counts() {
    // One event carries the last progress notifications and the result (a JSON-RPC batch, as
    // 2025-03-26 allows): the progress under way reached its total before the result.
    let batch = json!([
        progress(&token(2), 4, 5),
        progress(&token(2), 5, 5),
        result(2)
    ]);
    let cap = cut_and_resume(5, End::CutFin, &[Ev::id(4, batch)]);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("resume_ok", "info")]);

    // The batch stops at progress 4 of 5 before the result: the progress went on from the
    // cursor by one step and stopped one short of its total, as a tool that reports each step
    // before doing it does (one step past the last value is a genuine continuation).
    let batch = json!([progress(&token(2), 4, 5), result(2)]);
    let cap = cut_and_resume(5, End::CutFin, &[Ev::id(4, batch)]);
    assert_kinds(&findings(&cap), &[("resume_ok", "info")]);

    // Negative: progress 4 of 10 before the result, far short of the total.
    let batch = json!([progress(&token(2), 4, 10), result(2)]);
    let cap = cut_and_resume(10, End::CutFin, &[Ev::id(4, batch)]);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("suspect_terminal", "error")]);
    assert!(one(&fs, "suspect_terminal")["detail"]
        .as_str()
        .unwrap()
        .contains("with 1 progress notification(s) in between"));
}

#[test]
fn a_result_right_after_a_planned_poll_is_no_suspect_terminal() {
    // The tool finished while the client was away, its progress one step short of its total
    // (a loop that reports each step before doing it): the server that closed the stream on its
    // own schedule holds the log.
    let ok = [("planned_poll", "info"), ("resume_ok", "info")];
    assert_kinds(&poll_then_result(PollThenResult::default()), &ok);
    let same = PollThenResult {
        backends: Some(("b1", "b1")),
        ..Default::default()
    };
    assert_kinds(&poll_then_result(same), &ok);
    // Go announces `retry` on its close event after the last id.
    let go = PollThenResult {
        go_close: true,
        ..Default::default()
    };
    assert_kinds(&poll_then_result(go), &ok);
    // Fractional progress one step short (6/7 + 1/7 is 0.9999999999999999 in floating point).
    let sevenths = PollThenResult {
        sevenths: true,
        ..Default::default()
    };
    assert_kinds(&poll_then_result(sevenths), &ok);
    // A quiet poll from the same cursor in between.
    let quiet = PollThenResult {
        quiet: true,
        ..Default::default()
    };
    let two_polls = [
        ("planned_poll", "info"),
        ("planned_poll", "info"),
        ("resume_ok", "info"),
    ];
    assert_kinds(&poll_then_result(quiet), &two_polls);
    // Go writes its close event on the quiet poll too (a poll with an event, which continued
    // the stream: its own resume_ok).
    let go_quiet = PollThenResult {
        quiet: true,
        go_close: true,
        ..Default::default()
    };
    assert_kinds(
        &poll_then_result(go_quiet),
        &[
            ("planned_poll", "info"),
            ("planned_poll", "info"),
            ("resume_ok", "info"),
            ("resume_ok", "info"),
        ],
    );
}

#[test]
fn a_result_right_after_a_cut_a_jump_or_on_another_backend_is_suspect() {
    // Terminal provenance (docs/resumption.md): the connection was cut, not closed as planned, and
    // the progress stood one step short of its total: a tool reporting each step before doing it
    // ends there, a replica inventing the result looks the same. Suspect, not proven.
    let cut = PollThenResult {
        end: PollEnd::Cut,
        ..Default::default()
    };
    assert_kinds(&poll_then_result(cut), &[("suspect_terminal", "warning")]);
    // Cut with the progress far from its total: work was left, and the result came at once.
    let cut_far = PollThenResult {
        end: PollEnd::Cut,
        total: 6,
        ..Default::default()
    };
    assert_kinds(&poll_then_result(cut_far), &[("suspect_terminal", "error")]);
    // Closed cleanly, but the progress stood far from its total: a drain can close cleanly too.
    let far = PollThenResult {
        total: 6,
        ..Default::default()
    };
    assert_kinds(
        &poll_then_result(far),
        &[("planned_poll", "info"), ("suspect_terminal", "error")],
    );
    // Planned, but the progress jumped before the result (a synthesized continuation).
    let jump = PollThenResult {
        jump: true,
        total: 6,
        ..Default::default()
    };
    assert_kinds(
        &poll_then_result(jump),
        &[
            ("planned_poll", "info"),
            ("app_seq_desync", "error"),
            ("suspect_terminal", "error"),
        ],
    );
    // Planned, but another replica answered the poll.
    let other = PollThenResult {
        backends: Some(("b1", "b2")),
        ..Default::default()
    };
    assert_kinds(
        &poll_then_result(other),
        &[
            ("planned_poll", "info"),
            ("suspect_terminal", "error"),
            ("backend_switch", "error"),
        ],
    );
}

/// Terminal provenance (docs/resumption.md) when nothing of the application sequence came before
/// the cut: another replica, without the log, sends one invented progress value, half-way, and the
/// result. A replica sharing the log would send the same when the tool reported first at that
/// value, so this is a warning and the resumption unverifiable.
#[test]
fn a_result_after_an_invented_first_progress_on_another_backend_is_a_suspect_terminal() {
    let mut evs = progs(2, &["2"], 10, 20);
    evs.push(Ev::id("3", result(2)));
    let fs = cut_at_priming_id_then("1", Some(("b1", "b2")), &evs);
    assert_kinds(
        &fs,
        &[
            ("backend_switch", "warning"),
            ("suspect_terminal", "warning"),
        ],
    );
    let f = one(&fs, "suspect_terminal");
    assert_eq!(f["observed"], "response after progress 10 of 20");
    assert!(f["detail"]
        .as_str()
        .unwrap()
        .contains("none before the cut"));

    // Negative: the same backend, which holds the log (a tool that reports one value and ends).
    let fs = cut_at_priming_id_then("1", Some(("b1", "b1")), &evs);
    assert_kinds(&fs, &[("resume_ok", "info")]);
    // Negative: no backend named (nothing tells a replica from the original).
    assert_kinds(&cut_at_priming_then(&evs), &[("resume_ok", "info")]);
    // Negative: another backend replays from the first value (1 of 20: a tool that ended early,
    // or a shared store).
    let mut early = progs(2, &["2"], 1, 20);
    early.push(Ev::id("3", result(2)));
    assert_kinds(
        &cut_at_priming_id_then("1", Some(("b1", "b2")), &early),
        &[("backend_switch", "warning"), ("resume_ok", "info")],
    );
    // Negative: the tool failed (a JSON-RPC error, not a result).
    let mut failed = progs(2, &["2"], 10, 20);
    failed.push(Ev::id(
        "3",
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "tool failed"}}),
    ));
    assert_kinds(
        &cut_at_priming_id_then("1", Some(("b1", "b2")), &failed),
        &[("backend_switch", "warning"), ("resume_ok", "info")],
    );
    // Negative: the replay carries the progress from its first value to its total.
    let mut evs = progs(2, &["2", "3", "4"], 1, 3);
    evs.push(Ev::id("5", result(2)));
    assert_kinds(&cut_at_priming_then(&evs), &[("resume_ok", "info")]);
    // Negative: the result alone, with no progress to judge by.
    assert_kinds(
        &cut_at_priming_then(&[Ev::id("2", result(2))]),
        &[("resume_ok", "info")],
    );
}
