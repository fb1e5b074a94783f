//! `id_regression`: a resumed stream began with an event the client already had (the server
//! opened another log).
//!
//! Positive: a fork that only primes the resumed connection with an id at or below the cursor;
//! `fixtures/mcp/fork_restart_client.pcap`. Negative: a priming id above the cursor with the
//! replay after it; `fixtures/mcp/resume_ok_ts.pcap`. (A fork whose ids restart, which is an
//! `id_regression` too, is in `id_restart`; the cursor id reused for other data is in
//! `tests/inclusive_replay.rs`.)

use crate::common::*;

#[test]
fn fork_that_only_primes_is_a_regression() {
    // A fork: the replica without the buffer opens a fresh log. Here it only primes the resumed
    // connection (`id: 1`, empty data, `retry`) and closes it; the client's cursor regresses to
    // 1 and its next resumption gets the result as id 2. The first resumption is the fork.
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &prog_range(7..=12, 1, 10), End::CutFin);
    let mut body = sse_head(None);
    body.extend(chunk(b"id: 1\nretry: 500\ndata: \n\n"));
    body.extend_from_slice(LAST_CHUNK);
    resume(&mut cap, "12", &body);
    resume(&mut cap, "1", &sse_response(None, &[res(2)], true));
    let fs = findings(&cap);
    let f = one(&fs, "id_regression");
    assert_keys(f, Some("12"), Some("1"), None);
    assert_eq!(f["observed"], "1");
    assert!(
        !fs.iter()
            .any(|f| f["kind"] == "resume_ok" && f["last_event_id"] == "12"),
        "{}",
        pretty(&fs)
    );

    // Negative: a priming event above the cursor (a new priming id after a replay, as the
    // Python SDK mints) with the replay after it is a resume.
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &prog_range(7..=9, 1, 5), End::CutFin);
    let mut body = sse_head(None);
    for ev in [prog(10, 4, 5), prog(11, 5, 5)] {
        body.extend(chunk(ev.text().as_bytes()));
    }
    body.extend(chunk(b"id: 12\ndata: \n\n"));
    body.extend(chunk(res(13).text().as_bytes()));
    body.extend_from_slice(LAST_CHUNK);
    resume(&mut cap, "9", &body);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("resume_ok", "info")]);
}

/// `fixtures/mcp/fork_restart_client.pcap`: the replica without the log answers the resumption
/// from 9 with ids from 1 (its MANIFEST entry).
#[test]
fn fires_on_fork_restart_client() {
    let fs = fixture_findings("mcp/fork_restart_client.pcap");
    let f = one(&fs, "id_regression");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["frame"], 52);
    assert_eq!(f["last_event_id"], "9");
    assert_eq!(f["event_id"], "1");
    assert_eq!(f["observed"], "1");
}

/// Negative: `fixtures/mcp/resume_ok_ts.pcap` (a TS SDK resumption that continues the log), the capture `docs/findings.md` names as one it must
/// not fire on.
#[test]
fn not_on_resume_ok_ts() {
    let fs = fixture_findings("mcp/resume_ok_ts.pcap");
    assert!(!has_kind(&fs, "id_regression"), "{}", pretty(&fs));
}
