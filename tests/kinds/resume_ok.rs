//! `resume_ok`: a resumption that continued the log at the cursor.
//!
//! Positive: ids and progress go on 3 → 4; TS example-store string ids; per-stream ids that a
//! later stream delivers too; an rmcp priming cursor `0` delivered on hundreds of streams; uuid
//! ids after a cut at the priming event (which the detail says it cannot show). Negative:
//! `fixtures/mcp/fork_restart_client.pcap`, a fork.

use crate::common::*;
use serde_json::json;

#[test]
fn resume_ok() {
    let mut resumed = prog_range(4..=5, 4, 5);
    resumed.push(res(6));
    let cap = cut_and_resume(5, End::CutFin, &resumed);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("resume_ok", "info")]);
    assert_keys(one(&fs, "resume_ok"), Some("3"), Some("4"), None);
    assert_eq!(exit_status(&cap, "error"), 0);
    assert_eq!(exit_status(&cap, "warning"), 0);
    assert_eq!(exit_status(&cap, "info"), 1);
}

#[test]
fn string_ids_resumed_correctly() {
    // TS SDK example-store ids `<stream>_<epoch-ms>_<rand>`: ordered by time, not dense.
    let ids = [
        "abc_1795991032169_k2j9x0ab",
        "abc_1795991032171_p0q1r2s3",
        "abc_1795991032180_x9y8z7w6",
        "abc_1795991033004_m3n4b5v6",
        "abc_1795991033950_a1s2d3f4",
        "abc_1795991034012_q7w8e9r0",
    ];
    let mut cap = Capture::new();
    handshake(&mut cap);
    let first: Vec<Ev> = (0..3).map(|i| prog(ids[i], i as u64 + 1, 5)).collect();
    tools_call_stream(&mut cap, &first, End::CutFin);
    let resumed = vec![prog(ids[3], 4, 5), prog(ids[4], 5, 5), res(ids[5])];
    resume(&mut cap, ids[2], &sse_response(None, &resumed, true));
    let fs = findings(&cap);
    assert_kinds(&fs, &[("resume_ok", "info")]);
    assert_keys(one(&fs, "resume_ok"), Some(ids[2]), Some(ids[3]), None);
}

#[test]
fn id_delivered_on_two_streams_links_the_cut_one() {
    // Ids counted per stream (not unique in the session, rust-sdk #791): request 2's stream
    // delivers 1, 2 and is cut; request 3's stream then delivers 1, 2 and its result as 3, and
    // ends. The GET with Last-Event-ID 2 resumes the broken stream of request 2 — not the most
    // recent one to deliver id 2.
    let t3 = json!("t3");
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &prog_range(1..=2, 1, 3), End::CutFin);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(3, &t3)));
    let evs = vec![
        Ev::id(1, progress(&t3, 1, 2)),
        Ev::id(2, progress(&t3, 2, 2)),
        Ev::id(3, result(3)),
    ];
    c.server(&mut cap, &sse_response(None, &evs, true));
    c.close(&mut cap);
    resume(
        &mut cap,
        "2",
        &sse_response(None, &[prog(3, 3, 3), res(4)], true),
    );
    let fs = findings(&cap);
    assert_kinds(&fs, &[("resume_ok", "info")]);
    assert_keys(one(&fs, "resume_ok"), Some("2"), Some("3"), None);
}

/// rmcp opens every stream with the priming id `0` (rust-sdk #791). A stream cut right after
/// it, then 300 other calls, then the client resumes with Last-Event-ID 0: the resumption is
/// linked to the cut stream, however many other streams delivered `0` before and since.
#[test]
fn a_cursor_delivered_on_hundreds_of_streams_still_finds_the_cut_one() {
    let mut cap = Capture::new();
    handshake_version(&mut cap, SID, "2025-11-25");
    let call = |cap: &mut Capture, id: i64| {
        let mut k = cap.connect();
        k.client(cap, &post(Some(SID), &tools_call(id, &token(id))));
        let mut body = sse_head(None);
        body.extend(chunk(b"id: 0\nretry: 3000\ndata: \n\n"));
        body.extend(chunk(Ev::id("1", result(id)).text().as_bytes()));
        body.extend_from_slice(LAST_CHUNK);
        k.server(cap, &body);
        k.close(cap);
    };
    // An earlier call delivered `0` first.
    call(&mut cap, 1000);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut body = sse_head(None);
    body.extend(chunk(b"id: 0\nretry: 3000\ndata: \n\n"));
    c.server(&mut cap, &body);
    c.server_reset(&mut cap);
    for id in 3..303 {
        call(&mut cap, id);
    }
    resume_with(&mut cap, "0", &[Ev::id("1", result(2))]);
    assert_kinds(&analyze(&cap, &[]), &[("resume_ok", "info")]);
    // The deliveries left out of the lookup are said.
    assert!(column_has(
        &table_csv(&cap, "anomalies"),
        "code",
        "model.deliveries"
    ));
}

/// uuid4 ids (the Python SDK's example store) show no order, and a cut right after the priming
/// event leaves no application sequence before it: `resume_ok` says the continuation is not
/// contradicted, not that it is shown. Integer ids show it.
#[test]
fn a_resume_with_unordered_ids_and_nothing_before_the_cut_is_not_shown_to_continue() {
    let uuid = |n: u32| format!("7c9e6679-7425-40de-944b-e07fc1f9{n:04x}");
    let mut evs: Vec<Ev> = (1..=3)
        .map(|k| Ev::id(uuid(k), progress(&token(2), k.into(), 3)))
        .collect();
    evs.push(Ev::id(uuid(4), result(2)));
    let fs = cut_at_priming_id_then(&uuid(0), None, &evs);
    assert_kinds(&fs, &[("resume_ok", "info")]);
    let detail = one(&fs, "resume_ok")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        detail.contains("the continuation is not shown either"),
        "{detail}"
    );

    let mut evs = progs(2, &["2", "3", "4"], 1, 3);
    evs.push(Ev::id("5", result(2)));
    let fs = cut_at_priming_then(&evs);
    let detail = one(&fs, "resume_ok")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(detail.contains("continued the stream"), "{detail}");
}

/// Negative: `fixtures/mcp/fork_restart_client.pcap` (a fork on another backend), the capture `docs/findings.md` names as one it must
/// not fire on.
#[test]
fn not_on_fork_restart_client() {
    let fs = fixture_findings("mcp/fork_restart_client.pcap");
    assert!(!has_kind(&fs, "resume_ok"), "{}", pretty(&fs));
}
