//! Session keys other than `Mcp-Session-Id`: the legacy HTTP+SSE transport (MCP 2024-11-05,
//! `sessionId` in the `endpoint` event and the POST URL) and stateless servers (no session).
//! Two clients reusing the same JSON-RPC ids must stay apart.

mod common;

use common::*;
use serde_json::{json, Value};

/// The session ids.
fn sessions(cap: &Capture) -> Vec<String> {
    csv_column(&table_csv(cap, "sessions"), "session_id")
}

/// `GET /sse`, answered with the `endpoint` event, then requests POSTed to
/// `/messages?sessionId=…` (202) whose responses arrive on the GET stream.
fn legacy_client(cap: &mut Capture, sid: &str) {
    legacy_session(cap, sid, None);
}

/// [`legacy_client`]; with `ids` the GET carries `Last-Event-ID: ids.0` (an EventSource
/// reconnecting) and the answers carry ids from `ids.1` on.
fn legacy_session(cap: &mut Capture, sid: &str, ids: Option<(&str, u64)>) {
    let mut stream = cap.connect();
    let leid = ids
        .map(|(l, _)| format!("Last-Event-ID: {l}\r\n"))
        .unwrap_or_default();
    stream.client(
        cap,
        format!(
            "GET /sse HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nAccept: text/event-stream\r\n{leid}\r\n"
        )
        .as_bytes(),
    );
    let endpoint = format!("event: endpoint\ndata: /messages?sessionId={sid}\n\n");
    let mut head = sse_head(None);
    head.extend(chunk(endpoint.as_bytes()));
    stream.server(cap, &head);
    for id in 0..2 {
        let body = if id == 0 {
            initialize(0)
        } else {
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        };
        let mut post = cap.connect();
        let b = body.to_string();
        post.client(cap, format!("POST /messages?sessionId={sid} HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}", b.len()).as_bytes());
        post.server(cap, &accepted());
        post.close(cap);
        let id_line = ids
            .map(|(_, from)| format!("id: {}\n", from + id))
            .unwrap_or_default();
        let answer = format!(
            "{id_line}event: message\ndata: {}\n\n",
            json!({"jsonrpc": "2.0", "id": id, "result": {}})
        );
        stream.server(cap, &chunk(answer.as_bytes()));
    }
    stream.server(cap, LAST_CHUNK);
    stream.close(cap);
}

#[test]
fn legacy_sessions_are_keyed_by_query_parameter() {
    let mut cap = Capture::new();
    legacy_client(&mut cap, "aaa");
    legacy_client(&mut cap, "bbb");
    assert_eq!(
        analyze(&cap, &[]),
        Vec::<Value>::new(),
        "two legacy sessions reusing ids 0 and 1 are healthy"
    );
    assert_eq!(sessions(&cap), vec!["aaa".to_string(), "bbb".to_string()]);
}

/// The legacy transport has no resumption: an EventSource that reconnects with Last-Event-ID
/// gets a new `endpoint`, a new session (MCP 2024-11-05 "HTTP with SSE"), not a resumption of
/// the old one.
#[test]
fn a_legacy_reconnect_with_last_event_id_is_a_new_session() {
    let mut cap = Capture::new();
    legacy_session(&mut cap, "aaa", Some(("0", 1)));
    legacy_session(&mut cap, "bbb", Some(("2", 3)));
    assert_eq!(analyze(&cap, &[]), Vec::<Value>::new());
    assert_eq!(sessions(&cap), vec!["aaa".to_string(), "bbb".to_string()]);
}

#[test]
fn stateless_clients_reusing_ids_are_not_duplicates() {
    let mut cap = Capture::new();
    for _ in 0..2 {
        for id in 0..2 {
            let mut c = cap.connect();
            c.client(
                &mut cap,
                &post(
                    None,
                    &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}),
                ),
            );
            c.server(
                &mut cap,
                &json_response(None, &json!({"jsonrpc": "2.0", "id": id, "result": {}})),
            );
            c.close(&mut cap);
        }
    }
    assert_eq!(analyze(&cap, &[]), Vec::<Value>::new());
    assert_eq!(sessions(&cap), vec!["none".to_string()]);
}

/// A stateless `tools/call` (id 7) whose SSE response is reset after one notification.
fn reset_before_response() -> Capture {
    let mut cap = Capture::new();
    let mut c = cap.connect();
    c.client(
        &mut cap,
        &post(
            None,
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}}),
        ),
    );
    c.server(
        &mut cap,
        &sse_response(
            None,
            &[Ev::id(
                1,
                json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}),
            )],
            false,
        ),
    );
    c.server_reset(&mut cap);
    cap
}

/// A stream reset before the response, and then nothing more from the client: whether it would
/// have retried is beyond the capture, so the response is unverifiable, not lost.
#[test]
fn stateless_unanswered_request_at_capture_end_is_unverifiable() {
    let cap = reset_before_response();
    let fs = analyze(&cap, &[]);
    assert_eq!(fs.len(), 1, "{fs:?}");
    assert_eq!(fs[0]["kind"], "response_unverifiable");
    assert_eq!(fs[0]["session_id"], "none");
    assert_eq!(fs[0]["request_id"], "7");
}

/// The same reset stream, but the capture goes on well past any reconnect budget with other
/// traffic and the client never comes back: the response is lost.
#[test]
fn stateless_unanswered_request_long_before_capture_end_is_lost() {
    let mut cap = reset_before_response();
    let fs = analyze_a_minute_later(&mut cap);
    assert_eq!(kinds_of(&fs), ["lost_response"], "{fs:?}");
    assert_eq!(fs[0]["request_id"], "7");
}

/// The findings once the capture has gone on for a minute with other (non-HTTP) traffic.
fn analyze_a_minute_later(cap: &mut Capture) -> Vec<Value> {
    cap.wait(60_000_000);
    let mut other = cap.connect();
    other.client(cap, b"not http at all\r\n");
    other.close(cap);
    analyze(cap, &[])
}

/// Without a session, another client's answer to the same request id is not this one's: the
/// reset request stays lost (docs/wire.md, "Session key without a session id": the key falls
/// back to the flow and the client).
#[test]
fn stateless_loss_is_not_hidden_by_another_clients_answer() {
    let mut cap = reset_before_response();
    let mut b = cap.connect();
    b.client(
        &mut cap,
        &post(
            None,
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}}),
        ),
    );
    b.server(
        &mut cap,
        &json_response(None, &json!({"jsonrpc": "2.0", "id": 7, "result": {}})),
    );
    b.close(&mut cap);
    let fs = analyze_a_minute_later(&mut cap);
    assert_eq!(kinds_of(&fs), ["lost_response"], "{fs:?}");
    assert_eq!(fs[0]["request_id"], "7");
    assert_eq!(fs[0]["flow_id"], "F0");
}

/// The same unanswered request, but the capture lost a segment of a response of the session:
/// the response may have been in it, so the loss is reported as unverifiable, not as an error.
#[test]
fn unanswered_request_behind_a_capture_gap_is_unverifiable() {
    let mut cap = Capture::with_segment_size(40);
    let mut c = cap.connect();
    let port = 50000;
    c.client(
        &mut cap,
        &post(
            None,
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}}),
        ),
    );
    let events: Vec<Ev> = (1..4)
        .map(|i| {
            Ev::id(
                i,
                json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"i": i}}),
            )
        })
        .collect();
    c.server(&mut cap, &sse_response(None, &events, true));
    c.close(&mut cap);
    let data = cap.server_data_frames(port);
    cap.lose(data[data.len() / 2]);
    let fs = analyze(&cap, &[]);
    assert_eq!(fs.len(), 1, "{fs:?}");
    assert_eq!(fs[0]["kind"], "response_unverifiable");
    assert_eq!(fs[0]["severity"], "info");
    assert_eq!(fs[0]["request_id"], "7");
}

/// Two stateless clients on one address run the same call with the same event ids; one resumes.
/// Without a session the cursor cannot be attributed to either stream: unverifiable, no error.
#[test]
fn stateless_resumption_with_ambiguous_cursor_is_unverifiable() {
    let mut cap = Capture::new();
    let ev = |i: u64| {
        Ev::id(
            i,
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t2", "progress": i}}),
        )
    };
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x", "_meta": {"progressToken": "t2"}}});
    let mut a = cap.connect();
    a.client(&mut cap, &post(None, &call));
    a.server(
        &mut cap,
        &sse_response(None, &(1..=3).map(ev).collect::<Vec<_>>(), false),
    );
    a.server_reset(&mut cap);
    let mut b = cap.connect();
    b.client(&mut cap, &post(None, &call));
    let mut evs: Vec<Ev> = (1..=7).map(ev).collect();
    evs.push(Ev::id(8, json!({"jsonrpc": "2.0", "id": 2, "result": {}})));
    b.server(&mut cap, &sse_response(None, &evs, true));
    b.close(&mut cap);
    let mut r = cap.connect();
    r.client(&mut cap, &get(None, Some("3")));
    let mut evs: Vec<Ev> = (4..=7).map(ev).collect();
    evs.push(Ev::id(8, json!({"jsonrpc": "2.0", "id": 2, "result": {}})));
    r.server(&mut cap, &sse_response(None, &evs, true));
    r.close(&mut cap);
    let fs = analyze(&cap, &[]);
    let bad: Vec<&Value> = fs.iter().filter(|f| f["severity"] != "info").collect();
    assert!(bad.is_empty(), "{fs:#?}");
}

/// A gzip-encoded JSON response and a gzip-encoded event stream are decoded before parsing:
/// the responses are seen (no lost_response) and the events are in the events table.
#[test]
fn gzip_encoded_bodies_are_decoded() {
    // The SSE body's gzip as a content coding, or as a transfer coding before chunked (RFC 9112
    // §6.1).
    for sse_codings in [
        "Content-Encoding: gzip\r\nTransfer-Encoding: chunked",
        "Transfer-Encoding: gzip, chunked",
    ] {
        let mut cap = Capture::new();
        let mut c = cap.connect();
        c.client(
            &mut cap,
            &post(
                None,
                &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            ),
        );
        let body = gzip(
            json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}})
                .to_string()
                .as_bytes(),
        );
        let mut resp = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        resp.extend_from_slice(&body);
        c.server(&mut cap, &resp);
        c.client(
        &mut cap,
        &post(
            None,
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}),
        ),
    );
        let events = format!(
            "id: 1\ndata: {}\n\n",
            json!({"jsonrpc": "2.0", "id": 2, "result": {}})
        );
        let body = gzip(events.as_bytes());
        let mut resp =
            format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{sse_codings}\r\n\r\n")
                .into_bytes();
        for part in body.chunks(7) {
            resp.extend(chunk(part));
        }
        resp.extend_from_slice(LAST_CHUNK);
        c.server(&mut cap, &resp);
        c.close(&mut cap);
        assert_eq!(analyze(&cap, &[]), Vec::<Value>::new(), "{sse_codings}");
    }
}

/// `bytes`, gzip-compressed.
fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// `POST /mcp` with `body` gzip-compressed (`Content-Encoding: gzip`).
fn gzip_post(body: &Value) -> Vec<u8> {
    let body = gzip(body.to_string().as_bytes());
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    req
}

/// A gzip-encoded request body is decoded before JSON-RPC parsing.
#[test]
fn gzip_encoded_request_is_decoded() {
    let mut cap = Capture::new();
    let mut c = cap.connect();
    let req = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"});
    c.client(&mut cap, &gzip_post(&req));
    c.server(
        &mut cap,
        &json_response(None, &json!({"jsonrpc": "2.0", "id": 5, "result": {}})),
    );
    c.close(&mut cap);
    let rows = exchanges_table(&cap);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["jsonrpc_methods"], "tools/list");
    assert_eq!(rows[0]["jsonrpc_ids"], "5,5");
    assert_eq!(analyze(&cap, &[]), Vec::<Value>::new());
}

/// The capture's exchanges, read with at most `max` decoded bytes per coded body, and the
/// analyzer that read them (its HTTP anomalies).
fn read_with_max_decoded(
    cap: &Capture,
    max: u64,
) -> (Vec<mcpcap::http::Exchange>, mcpcap::Analyzer) {
    let mut a = mcpcap::Analyzer::new(mcpcap::Options::default());
    a.http.options.limits.max_decoded = max;
    let mut anomalies = mcpcap::anomaly::Anomalies::default();
    mcpcap::capture::read_capture(&cap.pcap()[..], 1, &mut anomalies, |f| a.frame(&f)).unwrap();
    let ex = a.finish();
    (ex, a)
}

/// Only a body with a content coding is bounded when decoded (`max_decoded`, 256 MiB by
/// default): a plain SSE body is parsed whole, however long, and a gzip one up to the bound,
/// the chunk that crosses it included up to the bound.
#[test]
fn only_coded_bodies_are_bounded_when_decoded() {
    let data = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x".repeat(60)}});
    let events: Vec<Ev> = (1..=40).map(|i| Ev::id(i, data.clone())).collect();
    let text: String = events.iter().map(Ev::text).collect();
    let each = events[9].text().len();
    // (events, of them cut by the bound, http.decoded_too_large anomalies, response_gap)
    let run = |coded: bool| -> (usize, usize, u64, bool) {
        let body = if coded {
            gzip(text.as_bytes())
        } else {
            text.clone().into_bytes()
        };
        let mut cap = Capture::new();
        let mut c = cap.connect();
        c.client(&mut cap, &get(Some("s1"), None));
        let coding = if coded {
            "Content-Encoding: gzip\r\n"
        } else {
            ""
        };
        let mut resp = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{coding}Content-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        resp.extend_from_slice(&body);
        c.server(&mut cap, &resp);
        c.close(&mut cap);
        let (ex, a) = read_with_max_decoded(&cap, 1000);
        assert_eq!(ex.len(), 1);
        let evs = ex[0].sse.events.iter().collect::<Vec<_>>();
        let cut = evs.iter().filter(|e| e.sse.truncated).count();
        (
            evs.len(),
            cut,
            a.http
                .anomalies
                .count(mcpcap::anomaly::Code::HttpDecodedTooLarge),
            ex[0].resp_gap,
        )
    };
    assert!(text.len() > 4000 && each < 200);
    assert_eq!(run(false), (40, 0, 0, false));
    // The whole events in the first 1000 decoded bytes, and the one the bound cut.
    assert_eq!(run(true), (1000 / each + 1, 1, 1, true));
}

/// A request body with a content coding is bounded when decoded as a response's is: a gzip
/// body that decodes past the bound says so (`http.decoded_too_large`), is marked with a gap,
/// and is not read as JSON-RPC; the connection's next request is read as before.
#[test]
fn coded_request_bodies_are_bounded_when_decoded() {
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {"pad": "x".repeat(5000)}}});
    let mut cap = Capture::new();
    let mut c = cap.connect();
    c.client(&mut cap, &gzip_post(&big));
    c.server(&mut cap, &json_response(None, &result(1)));
    c.client(
        &mut cap,
        &post(
            None,
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        ),
    );
    c.server(&mut cap, &json_response(None, &result(2)));
    c.close(&mut cap);
    let (ex, a) = read_with_max_decoded(&cap, 1000);
    assert_eq!(ex.len(), 2);
    assert_eq!(
        a.http
            .anomalies
            .count(mcpcap::anomaly::Code::HttpDecodedTooLarge),
        1
    );
    assert!(ex[0].req_gap);
    assert!(ex[0].rpc.request.is_empty());
    assert!(!ex[1].req_gap);
    assert_eq!(ex[1].rpc.request.len(), 1);
}

/// A keep-alive connection whose middle response was lost whole in a capture gap: the next
/// response is paired with the request it answers (the latest one sent before it), not with the
/// request whose response is missing; that one is marked as lost to a gap.
#[test]
fn response_lost_whole_in_a_gap_does_not_shift_the_pairing() {
    let list = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
    let answer = |id: i64| json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [], "n": id}});
    let mut cap = Capture::new();
    let mut c = cap.connect();
    let port = c.port;
    for id in 1..=3 {
        c.client(&mut cap, &post(Some("s1"), &list(id)));
        c.server(&mut cap, &json_response(Some("s1"), &answer(id)));
    }
    c.close(&mut cap);
    let middle = cap.server_data_frames(port)[1];
    cap.lose(middle);
    let rows = exchanges_table(&cap);
    // jsonrpc_ids: the request's id and the response's.
    let view: Vec<(String, Value, bool)> = rows
        .iter()
        .map(|r| {
            (
                r["jsonrpc_ids"].as_str().unwrap_or("").to_string(),
                r["status"].clone(),
                r["response_gap"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        view,
        [
            ("1,1".to_string(), json!(200), false),
            ("2".to_string(), Value::Null, true),
            ("3,3".to_string(), json!(200), false),
        ]
    );
}

/// Pipelined requests whose capture times go back (two clocks, or a capture that reorders), then
/// responses lost whole in a gap: the next response read is paired with the latest request sent
/// before it by time, whichever its place in the stream (`late` is the request stamped after
/// the responses); the requests skipped lost their responses to the gap.
#[test]
fn pairing_after_a_loss_reads_request_times_out_of_order() {
    let list = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
    let answer = |id: i64| json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [], "n": id}});
    let view = |late: i64| -> Vec<(String, bool)> {
        let mut cap = Capture::new();
        let mut c = cap.connect();
        let port = c.port;
        for id in 1..=3 {
            if id == late {
                cap.wait(50_000);
            }
            c.client(&mut cap, &post(Some("s1"), &list(id)));
            if id == late {
                cap.wait(-52_000);
            }
        }
        for id in 1..=3 {
            c.server(&mut cap, &json_response(Some("s1"), &answer(id)));
        }
        c.close(&mut cap);
        // The first two responses are lost; the third is read.
        let lost = cap.server_data_frames(port);
        cap.lose(lost[1]);
        cap.lose(lost[0]);
        let pcap = temp_path("order", "pcap");
        std::fs::write(&pcap, cap.pcap()).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpcap"))
            .args(["exchanges", "--format", "ndjson"])
            .arg(&pcap)
            .output()
            .unwrap();
        let _ = std::fs::remove_file(&pcap);
        assert!(out.status.success());
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let r: Value = serde_json::from_str(l).unwrap();
                (
                    r["jsonrpc_ids"].as_str().unwrap_or("").to_string(),
                    r["response_gap"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    // Request 1 stamped last: the response is request 3's. (Rows are in time order.)
    assert_eq!(
        view(1),
        [
            ("2".to_string(), true),
            ("3,3".to_string(), false),
            ("1".to_string(), true),
        ]
    );
    // Request 3 stamped after the response: it answers request 2, the latest sent by then.
    assert_eq!(
        view(3),
        [
            ("1".to_string(), true),
            ("2,3".to_string(), false),
            ("3".to_string(), false),
        ]
    );
}

/// HTTP that carries no JSON-RPC message and no SSE event is no MCP session: its group is
/// `not_mcp`, not `intact`. A stateless MCP exchange beside it stays `intact`.
#[test]
fn plain_http_is_not_an_mcp_session() {
    let verdicts =
        |cap: &Capture| -> Vec<String> { csv_column(&table_csv(cap, "sessions"), "verdict") };
    let mut cap = Capture::new();
    let mut c = cap.connect();
    c.client(
        &mut cap,
        b"GET /index.html HTTP/1.1\r\nHost: example.org\r\n\r\n",
    );
    c.server(
        &mut cap,
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nhello",
    );
    c.close(&mut cap);
    assert_eq!(verdicts(&cap), ["not_mcp"]);
    let mut c = cap.connect();
    c.client(&mut cap, &post(None, &initialize(1)));
    c.server(&mut cap, &json_response(None, &initialize_result(1)));
    c.close(&mut cap);
    assert_eq!(verdicts(&cap), ["intact"]);
}

/// One client's session under `sid`: initialize (answered with `sid`), a tools/call with id 2
/// answered on its SSE stream (or, unless `answered`, cut before its result), and a DELETE.
fn session_with_call(cap: &mut Capture, sid: &str, answered: bool) {
    let mut c = cap.connect();
    c.client(cap, &post(None, &initialize(1)));
    c.server(cap, &json_response(Some(sid), &initialize_result(1)));
    c.client(cap, &post(Some(sid), &initialized()));
    c.server(cap, &accepted());
    c.close(cap);
    let mut call = cap.connect();
    call.client(cap, &post(Some(sid), &tools_call(2, &json!("t2"))));
    let mut events = vec![Ev::id(1, progress(&json!("t2"), 1, 2))];
    if answered {
        events.push(Ev::id(2, result(2)));
    }
    call.server(cap, &sse_response(None, &events, answered));
    if answered {
        call.close(cap);
    } else {
        call.server_reset(cap);
    }
    cap.wait(40_000_000);
    let mut d = cap.connect();
    d.client(
        cap,
        format!("DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nMcp-Session-Id: {sid}\r\nContent-Length: 0\r\n\r\n").as_bytes(),
    );
    d.server(cap, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    d.close(cap);
}

/// A server that assigns an id again (counter ids after a restart, ids derived from the user)
/// starts another session under it at the `initialize` answered with it: request ids start
/// again there, so the same ids answered in both are no duplicate delivery, and an answer in
/// the first does not hide a loss in the second.
#[test]
fn an_id_assigned_again_is_another_session() {
    let mut cap = Capture::new();
    session_with_call(&mut cap, "sess-1", true);
    cap.wait(1_000_000);
    session_with_call(&mut cap, "sess-1", true);
    assert_eq!(sessions(&cap), ["sess-1", "sess-1#2"]);
    assert_eq!(kinds_of(&analyze(&cap, &[])), Vec::<String>::new());

    let mut cap = Capture::new();
    session_with_call(&mut cap, "sess-1", true);
    cap.wait(1_000_000);
    session_with_call(&mut cap, "sess-1", false);
    let fs = analyze(&cap, &[]);
    assert_eq!(kinds_of(&fs), ["lost_response"]);
    assert_eq!(fs[0]["session_id"], "sess-1#2");
}

/// Two clients given the same id at once (an id derived from the user): each goes on in the
/// session it was given, so the first client's resumption finds its stream.
#[test]
fn two_clients_given_one_id_keep_their_sessions() {
    let sid = "user-alice";
    let b_ip = [10, 0, 0, 2];
    let mut cap = Capture::new();
    for ip in [None, Some(b_ip)] {
        let mut c = match ip {
            None => cap.connect(),
            Some(ip) => cap.connect_from(ip),
        };
        c.client(&mut cap, &post(None, &initialize(0)));
        c.server(&mut cap, &json_response(Some(sid), &initialize_result(0)));
        c.close(&mut cap);
    }
    // A's call is cut after progress 1; B's call is answered.
    let mut a = cap.connect();
    a.client(&mut cap, &post(Some(sid), &tools_call(1, &json!("t1"))));
    a.server(
        &mut cap,
        &sse_response(None, &[Ev::id(1, progress(&json!("t1"), 1, 2))], false),
    );
    a.server_reset(&mut cap);
    let mut b = cap.connect_from(b_ip);
    b.client(&mut cap, &post(Some(sid), &tools_call(1, &json!("t1"))));
    b.server(&mut cap, &sse_response(None, &[Ev::id(7, result(1))], true));
    b.close(&mut cap);
    // A resumes.
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(sid), Some("1")));
    g.server(
        &mut cap,
        &sse_response(
            None,
            &[
                Ev::id(2, progress(&json!("t1"), 2, 2)),
                Ev::id(3, result(1)),
            ],
            true,
        ),
    );
    g.close(&mut cap);
    let fs = analyze(&cap, &[]);
    assert_eq!(kinds_of(&fs), ["resume_ok"], "{fs:#?}");
    assert_eq!(fs[0]["session_id"], sid);
    assert_eq!(sessions(&cap), [sid, "user-alice#2"]);
}

/// How the legacy GET stream of [`legacy_call`] ends.
#[derive(Clone, Copy, PartialEq)]
enum LegacyEnd {
    /// The server ends it cleanly, without the answer.
    Clean,
    /// It is still open when the capture stops.
    Open,
    /// The server resets it, before the client cancels.
    ResetBeforeCancel,
    /// The client closes it while the server is still sending: the end of the legacy session.
    ClientCloses,
    /// A later request is answered on it, then the client closes it.
    LaterAnsweredThenClientCloses,
}

/// A legacy (2024-11-05) session: `GET /sse`, then `tools/call` id 2 POSTed (202), whose answer
/// never comes on the GET stream; a log event comes instead. With `cancel`, the client POSTs
/// `notifications/cancelled` for request 2.
fn legacy_call(cancel: bool, end: LegacyEnd) -> Vec<(String, String)> {
    let sid = "aaa";
    let mut cap = Capture::new();
    let mut stream = cap.connect();
    stream.client(
        &mut cap,
        b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nAccept: text/event-stream\r\n\r\n",
    );
    let mut head = sse_head(None);
    head.extend(chunk(
        format!("event: endpoint\ndata: /messages?sessionId={sid}\n\n").as_bytes(),
    ));
    stream.server(&mut cap, &head);
    let send = |cap: &mut Capture, body: &Value| {
        let mut post = cap.connect();
        let b = body.to_string();
        post.client(cap, format!("POST /messages?sessionId={sid} HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}", b.len()).as_bytes());
        post.server(cap, &accepted());
        post.close(cap);
    };
    send(&mut cap, &tools_call(2, &json!(2)));
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}});
    stream.server(
        &mut cap,
        &chunk(format!("event: message\ndata: {log}\n\n").as_bytes()),
    );
    let cancelled =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}});
    if end == LegacyEnd::ResetBeforeCancel {
        stream.server_reset(&mut cap);
        cap.wait(100_000);
        if cancel {
            send(&mut cap, &cancelled);
        }
    } else {
        cap.wait(100_000);
        if cancel {
            send(&mut cap, &cancelled);
        }
        cap.wait(100_000);
        stream.server(
            &mut cap,
            &chunk(format!("event: message\ndata: {log}\n\n").as_bytes()),
        );
        match end {
            LegacyEnd::Clean => {
                stream.server(&mut cap, LAST_CHUNK);
                stream.close(&mut cap);
            }
            LegacyEnd::ClientCloses => stream.close(&mut cap),
            LegacyEnd::LaterAnsweredThenClientCloses => {
                send(
                    &mut cap,
                    &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
                );
                let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {}});
                stream.server(
                    &mut cap,
                    &chunk(format!("event: message\ndata: {answer}\n\n").as_bytes()),
                );
                stream.close(&mut cap);
            }
            _ => {}
        }
    }
    analyze(&cap, &[])
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap_or_default().to_string(),
                f["request_id"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// On the legacy transport the answers come on the GET stream (MCP 2024-11-05 "HTTP with SSE"): a
/// request cancelled while that stream was open and whole was owed nothing, nor one pending when
/// the client closed that stream (how a legacy session ends); one whose answer could still come on
/// it when the capture stopped is unverifiable; a cancel after the stream broke does not excuse the
/// loss.
#[test]
fn legacy_requests_are_judged_on_the_session_stream() {
    let pair = |k: &str| vec![(k.to_string(), "2".to_string())];
    assert_eq!(legacy_call(true, LegacyEnd::Clean), vec![]);
    assert_eq!(legacy_call(false, LegacyEnd::Clean), pair("lost_response"));
    assert_eq!(legacy_call(true, LegacyEnd::Open), vec![]);
    assert_eq!(
        legacy_call(false, LegacyEnd::Open),
        pair("response_unverifiable")
    );
    assert_eq!(
        legacy_call(true, LegacyEnd::ResetBeforeCancel),
        pair("lost_response")
    );
    // The client ending the session by closing its stream, as a DELETE would.
    assert_eq!(legacy_call(false, LegacyEnd::ClientCloses), vec![]);
    // Unless the server answered a later request first: it went on without this one.
    assert_eq!(
        legacy_call(false, LegacyEnd::LaterAnsweredThenClientCloses),
        pair("lost_response")
    );
}

/// Without a session, a cancel speaks for its own client's request only: another client's
/// cancel of the same id does not excuse a lost response (docs/wire.md, "Session key without a
/// session id").
#[test]
fn a_stateless_cancel_does_not_excuse_another_clients_request() {
    let run = |cancel_from: [u8; 4]| {
        let mut cap = Capture::new();
        let mut a = cap.connect_from([10, 0, 0, 1]);
        a.client(&mut cap, &post(None, &tools_call(1, &json!(1))));
        let mut b = cap.connect_from([10, 0, 0, 5]);
        b.client(&mut cap, &post(None, &tools_call(1, &json!(1))));
        b.server(
            &mut cap,
            &json_response(None, &json!({"jsonrpc": "2.0", "id": 1, "result": {}})),
        );
        b.close(&mut cap);
        let mut c = cap.connect_from(cancel_from);
        c.client(
            &mut cap,
            &post(
                None,
                &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
            ),
        );
        c.server(&mut cap, &accepted());
        c.close(&mut cap);
        // Client .1's stream ends cleanly without its result.
        a.server(&mut cap, &sse_response(None, &[], true));
        a.close(&mut cap);
        kinds_of(&analyze(&cap, &[]))
    };
    assert_eq!(run([10, 0, 0, 5]), ["lost_response"]);
    assert_eq!(run([10, 0, 0, 1]), Vec::<String>::new());
}
