//! Detector scenarios about no one finding kind (each kind's own triggers and non-triggers are
//! in `tests/kinds/`): healthy captures, also with 1-byte, reordered and retransmitted segments,
//! give no finding; bytes after a lost head, HTTP 101 upgrades and bodies cut short or not JSON
//! are said in `anomalies`; the verdicts of sessions and streams and the `id_format` of streams;
//! the history budget of a stream resumed many times; a 2026-07-28 GET is no resumption.
//!
//! Every scenario is one session `s1` (see `common`): `initialize` (the response assigns
//! `Mcp-Session-Id: s1`) and `notifications/initialized` on a first connection, then
//! `tools/call` id 2 (progressToken "t2") whose POST response is an SSE stream, then, when the
//! stream is cut, a resumption GET with `Last-Event-ID` on a new connection.

mod common;

use common::*;
use serde_json::json;

// ---------------------------------------------------------------------------
// Healthy captures and what the anomalies table says

#[test]
fn healthy_has_no_findings() {
    let mut cap = Capture::new();
    healthy(&mut cap);
    let fs = findings(&cap);
    assert_kinds(&fs, &[]);
    // Not vacuous: the six events of the stream were decoded.
    let evs = events_table(&cap);
    let ids: Vec<&str> = evs.iter().filter_map(|e| e["event_id"].as_str()).collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5", "6"], "{evs:?}");
    assert_eq!(exit_status(&cap, "error"), 0);
    assert_eq!(exit_status(&cap, "info"), 0);
}

#[test]
fn healthy_with_one_byte_segments() {
    let mut cap = Capture::with_segment_size(1);
    healthy(&mut cap);
    assert_kinds(&findings(&cap), &[]);
    let evs = events_table(&cap);
    let ids: Vec<&str> = evs.iter().filter_map(|e| e["event_id"].as_str()).collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5", "6"]);
    assert!(
        evs.iter()
            .all(|e| e["truncated"] == false && e["parse_error"].is_null()),
        "{evs:?}"
    );
}

#[test]
fn healthy_with_reordered_and_retransmitted_segments() {
    let mut cap = Capture::with_segment_size(40);
    let port = healthy(&mut cap);
    let data = cap.server_data_frames(port);
    assert!(data.len() > 10, "the stream spans many segments");
    // Two adjacent server segments arrive swapped…
    cap.swap(data[4], data[5]);
    // …and an already delivered one is sent again a few frames later.
    cap.retransmit(data[2], data[7]);
    assert_kinds(&findings(&cap), &[]);
    let evs = events_table(&cap);
    let ids: Vec<&str> = evs.iter().filter_map(|e| e["event_id"].as_str()).collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5", "6"]);
    assert!(
        evs.iter()
            .all(|e| e["truncated"] == false && e["parse_error"].is_null()),
        "{evs:?}"
    );
    // Not vacuous: the flow table saw the reordering and the retransmission.
    let flows = flows_table(&cap);
    let f = flows
        .iter()
        .find(|f| f["orig_p"] == port)
        .expect("tools/call flow");
    assert_eq!(
        (&f["retransmitted"], &f["out_of_order"]),
        (&json!(1), &json!(1)),
        "{f}"
    );
}

#[test]
fn bytes_after_a_lost_response_head_are_counted() {
    // The first segment of a GET's SSE answer (its head and first events) is missing from the
    // capture and nothing after it starts a message: every byte after the gap is counted as
    // skipped, to the byte, not dropped unsaid.
    let mut cap = Capture::with_segment_size(100);
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some("s1"), None));
    let evs: Vec<Ev> = (1..=20)
        .map(|i| Ev::id(i, progress(&json!("t"), i, 20)))
        .collect();
    let body = sse_response(None, &evs, false);
    g.server(&mut cap, &body);
    let port = g.port;
    g.close(&mut cap);
    let first = cap.server_data_frames(port)[0];
    cap.lose(first);
    let a = table_csv(&cap, "anomalies");
    let want = format!(
        "{} bytes skipped to the end of the stream, with no start line",
        body.len() - 100
    );
    assert!(
        csv_column(&a, "detail").iter().any(|d| d.contains(&want)),
        "{want}\n{a}"
    );
}

#[test]
fn after_a_101_the_client_side_is_not_http_either() {
    // A WebSocket upgrade: the client's frames after the 101 are another protocol, not a bad
    // request head and skipped bytes.
    let mut cap = Capture::new();
    let mut c = cap.connect();
    c.client(
        &mut cap,
        b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    );
    c.server(
        &mut cap,
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    );
    c.client(
        &mut cap,
        &[0x81, 0x85, 1, 2, 3, 4, b'h', b'e', b'l', b'l', b'o'],
    );
    c.server(&mut cap, &[0x81, 0x02, b'h', b'i']);
    c.close(&mut cap);
    let a = table_csv(&cap, "anomalies");
    assert_eq!(csv_column(&a, "code"), ["http.upgrade"], "{a}");
}

#[test]
fn a_101_leaves_http_only_after_the_request_and_only_for_an_upgrade() {
    // An h2c upgrade whose JSON body is still arriving when the 101 comes (the body is sent
    // whole first), and a 101 to a request that did not ask to upgrade, after which the
    // client goes on in HTTP: both requests are read whole, and the second request too.
    let body = serde_json::to_vec(&initialize(1)).unwrap();
    for upgrade in [true, false] {
        let mut cap = Capture::new();
        let mut c = cap.connect();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: x\r\n{}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            if upgrade { "Upgrade: h2c\r\nConnection: Upgrade\r\n" } else { "" },
            body.len()
        );
        let mut first = head.into_bytes();
        first.extend_from_slice(&body[..20]);
        c.client(&mut cap, &first);
        c.server(
            &mut cap,
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
        );
        c.client(&mut cap, &body[20..]);
        if !upgrade {
            c.client(&mut cap, &post(None, &tools_call(2, &json!(2))));
        }
        c.close(&mut cap);
        let ex = exchanges_table(&cap);
        let methods: Vec<&str> = ex
            .iter()
            .filter_map(|e| e["jsonrpc_methods"].as_str())
            .collect();
        let want: &[&str] = if upgrade {
            &["initialize"]
        } else {
            &["initialize", "tools/call"]
        };
        assert_eq!(methods, want, "upgrade {upgrade}: {ex:#?}");
        let anomalies = table_csv(&cap, "anomalies");
        assert!(!anomalies.contains("bad_head"), "upgrade {upgrade}");
        // A 101 that switches to h2c is read on; one to a request that did not ask is said.
        assert_eq!(anomalies.contains("http.upgrade"), !upgrade, "{anomalies}");
    }
}

/// A JSON response cut short says why it was not parsed: bytes the capture missed, the
/// connection ending before the body's framing did, or the capture ending first.
#[test]
fn an_incomplete_json_body_says_why() {
    let detail = |end: &str| -> Vec<String> {
        let mut cap = Capture::new();
        handshake(&mut cap);
        let mut c = cap.connect();
        c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
        c.server(
            &mut cap,
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"jsonrpc\":\"2.0\",",
        );
        if end == "reset" {
            c.server_reset(&mut cap);
        }
        csv_rows(&table_csv(&cap, "anomalies"))
            .into_iter()
            .filter(|r| r["code"] == "http.json_incomplete")
            .map(|r| r["detail"].clone())
            .collect()
    };
    assert_eq!(
        detail("reset"),
        ["JSON body cut short (the connection ended before its framing did); not parsed"]
    );
    assert_eq!(
        detail("open"),
        ["JSON body cut by the end of the capture; not parsed"]
    );
}

#[test]
fn an_event_whose_data_is_not_json_is_an_anomaly() {
    // One event with a bare key (not JSON), one with an endpoint URL (the legacy transport's
    // `endpoint` event, not JSON by design): one anomaly, at the first.
    let (mut cap, mut c) = call_under_way();
    c.server(
        &mut cap,
        &chunk(b"id: 4\ndata: {a: 1}\n\nevent: endpoint\ndata: /messages?x=1\n\n"),
    );
    c.close(&mut cap);
    let a = table_csv(&cap, "anomalies");
    let invalid: Vec<_> = csv_rows(&a)
        .into_iter()
        .filter(|r| r["code"] == "sse.invalid_json")
        .collect();
    assert_eq!(invalid.len(), 1, "{a}");
    assert!(invalid[0]["detail"].contains("key must be a string"), "{a}");
}

// ---------------------------------------------------------------------------
// Verdicts of sessions, streams and resumptions

/// A resumption whose request the capture lost (its GET segment missing) leaves an SSE response
/// without a request: its cursor is unknown, so the session is `unverifiable`, not `intact`.
#[test]
fn an_sse_response_without_its_request_makes_the_session_unverifiable() {
    let verdict = |lose_request: bool| {
        let mut cap = Capture::new();
        handshake(&mut cap);
        tools_call_stream(&mut cap, &prog_range(1..=3, 1, 5), End::CutFin);
        let mut resumed = prog_range(4..=5, 4, 5);
        resumed.push(res(6));
        let mut c = cap.connect();
        let at = cap.frames.len();
        c.client(&mut cap, &get(Some(SID), Some("3")));
        if lose_request {
            // The request's one data segment.
            cap.lose(at);
        }
        // The server names the session on its answer, as the Python and C# SDKs do.
        c.server(&mut cap, &sse_response(Some(SID), &resumed, true));
        c.close(&mut cap);
        let sessions = table_csv(&cap, "sessions");
        csv_column(&sessions, "verdict").remove(0)
    };
    assert_eq!(verdict(false), "intact");
    assert_eq!(verdict(true), "unverifiable");
}

/// The `streams` verdict is its worst resumption's: a first resumption the capture cannot judge
/// (answered with JSON, not an event stream), then a second one answered by a fresh log (ids
/// from 1 again), is `forked`, not `unverifiable`.
#[test]
fn a_stream_verdict_is_its_worst_resumption() {
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &prog_range(1..=3, 1, 10), End::CutFin);
    resume(
        &mut cap,
        "3",
        &json_response(Some(SID), &json!({"jsonrpc": "2.0", "method": "x"})),
    );
    resume(
        &mut cap,
        "3",
        &sse_response(None, &prog_range(1..=2, 1, 10), true),
    );
    let rs = table_csv(&cap, "resumptions");
    assert!(
        column_has(&rs, "verdict", "unverifiable") && column_has(&rs, "verdict", "forked"),
        "{rs}"
    );
    let streams = table_csv(&cap, "streams");
    let post: Vec<_> = csv_rows(&streams)
        .into_iter()
        .filter(|r| r["kind"] == "post")
        .collect();
    assert_eq!(post.len(), 1, "{streams}");
    assert_eq!(post[0]["verdict"], "forked", "{streams}");
}

/// The `id_format` column of `streams`: one format when every id has it, `opaque` when ids of
/// two formats mix (in either order) or any id has none.
#[test]
fn a_stream_id_format_is_opaque_when_formats_mix() {
    let go = "RXBPBXMEKNWW3ZTPKOVIOJCAU2";
    let id = |n: u32| format!("{go}_{n}");
    let format = |ids: &[&str], last: &str| -> String {
        let table = table_csv(&raw_ids_capture(ids, last), "streams");
        csv_column(&table, "id_format").remove(0)
    };
    assert_eq!(format(&[&id(1), &id(2)], &id(3)), "go");
    assert_eq!(format(&["1", "2"], "3"), "integer_dense");
    assert_eq!(format(&["1", "4"], "9"), "integer_sparse");
    assert_eq!(format(&["hello", "there"], "you"), "opaque");
    assert_eq!(format(&[&id(1), "hello"], &id(3)), "opaque");
    assert_eq!(format(&["hello", &id(2)], &id(3)), "opaque");
    assert_eq!(format(&["hello", "2"], "3"), "opaque");
    assert_eq!(format(&["1", "2"], &id(3)), "opaque");
}

/// A resumption that delivers only a fresh priming event (the Python SDK primes every
/// resumed connection) says so, and claims nothing of ids or application sequence.
#[test]
fn a_resumption_with_no_message_says_so() {
    let (mut cap, c) = call_under_way();
    c.server_reset(&mut cap);
    resume(&mut cap, "3", &raw_sse("id: 4\ndata: \n\n"));
    let rs = table_csv(&cap, "resumptions");
    assert!(
        column_has(&rs, "reason", "no message after the cursor"),
        "{rs}"
    );
}

// ---------------------------------------------------------------------------
// Limits and revisions

#[test]
fn a_stream_resumed_past_the_history_budget_says_so() {
    // A standalone stream polled again and again, 1024 events a poll: once its resumptions have
    // read 2^21 events of history, the later ones are checked against its last 256 events,
    // which the anomalies table says once for the stream (and each resumption's reason).
    let mut cap = Capture::new();
    handshake(&mut cap);
    let mut next = 1u64;
    let mut last = None::<String>;
    for _ in 0..70 {
        let mut c = cap.connect();
        c.client(&mut cap, &get(Some(SID), last.as_deref()));
        let evs: Vec<Ev> = (next..next + 1024)
            .map(|k| Ev::id(k, log_message()))
            .collect();
        next += 1024;
        last = Some((next - 1).to_string());
        c.server(&mut cap, &sse_response(None, &evs, true));
        c.close(&mut cap);
    }
    let pcap = temp_path("budget", "pcap");
    std::fs::write(&pcap, cap.pcap()).unwrap();
    let out = temp_path("budget", "out");
    write_csv_tables(&pcap, &out);
    let anomalies = std::fs::read_to_string(out.join("anomalies.csv")).unwrap();
    let cut: Vec<String> = csv_rows(&anomalies)
        .into_iter()
        .filter(|r| r["code"] == "detect.history_window")
        .map(|r| r["detail"].clone())
        .collect();
    assert_eq!(cut.len(), 1, "{anomalies}");
    let resumptions = std::fs::read_to_string(out.join("resumptions.csv")).unwrap();
    let rows = csv_rows(&resumptions);
    assert_eq!(rows.len(), 69);
    let windowed = rows
        .iter()
        .filter(|r| r["reason"].contains("checked against the stream's last 256 events"))
        .count();
    // Poll k reads the k·1024 events before it: past 2^21 from the 65th resumption on.
    assert_eq!(windowed, 69 - 64, "{resumptions}");
    assert!(
        cut[0].contains(&format!("{windowed} resumption(s)")),
        "{}",
        cut[0]
    );
    // Every resumption, windowed or not, still continues the stream.
    assert!(
        rows.iter().all(|r| r["verdict"] == "resumed"),
        "{resumptions}"
    );
    let _ = std::fs::remove_file(&pcap);
    let _ = std::fs::remove_dir_all(&out);
}

/// MCP 2026-07-28 has no resumption ("Streamable HTTP", "Receiving Messages"): a GET with
/// `Last-Event-ID` from a client that declares it, answered 405, is no resumption to judge.
#[test]
fn a_2026_07_28_get_with_last_event_id_is_no_resumption() {
    let mut cap = Capture::new();
    let mut c = cap.connect();
    c.client(
        &mut cap,
        b"GET /mcp HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nLast-Event-ID: 5\r\n\r\n",
    );
    c.server(
        &mut cap,
        b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n",
    );
    c.close(&mut cap);
    assert_kinds(&findings(&cap), &[]);
    let rs = table_csv(&cap, "resumptions");
    assert!(
        !csv_header(&rs).is_empty() && csv_rows(&rs).is_empty(),
        "header only: {rs}"
    );
}
