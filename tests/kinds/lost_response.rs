//! `lost_response`: a request never answered.
//!
//! Positive: a stream that ends cleanly without its result while a loss elsewhere cannot hold
//! it; a cancel after a refused resumption; a cancel long after a healed break went quiet; a
//! 2026-07-28 request neither answered nor re-sent, or whose stream the server closed. Negative:
//! a cancelled request; a cancel racing the response of a healed break; a 2026-07-28 request
//! re-sent, or whose stream the client closed; a request in flight when the session is
//! deleted.

use crate::common::*;
use serde_json::{json, Value};

#[test]
fn a_loss_elsewhere_in_the_session_does_not_excuse_a_lost_response() {
    // The 202 answering notifications/initialized has an unreadable head; later, on another
    // connection, the tools/call stream ends cleanly without its result. The earlier loss could
    // not hold that result: still a lost response.
    let mut cap = Capture::new();
    let mut c = cap.connect();
    c.client(&mut cap, &post(None, &initialize(1)));
    c.server(&mut cap, &json_response(Some(SID), &initialize_result(1)));
    c.client(&mut cap, &post(Some(SID), &initialized()));
    c.server(
        &mut cap,
        b"HTTP/1.1 202 Accepted\r\nno colon here\r\nContent-Length: 0\r\n\r\n",
    );
    c.close(&mut cap);
    cap.wait(1_000_000);
    tools_call_stream(&mut cap, &prog_range(1..=3, 1, 5), End::Complete);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("lost_response", "error")]);
    assert_keys(one(&fs, "lost_response"), None, None, Some("2"));
}

/// The client POSTs `notifications/cancelled` for request 2 on a new connection (202).
fn cancel(cap: &mut Capture) {
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}});
    let mut n = cap.connect();
    n.client(cap, &post(Some(SID), &cancel));
    n.server(cap, &accepted());
    n.close(cap);
}

#[test]
fn cancelled_request_is_not_a_lost_response() {
    // The client cancels request 2 while its stream is open; the server ends the stream
    // without a response, as MCP "Cancellation" asks. No response was due.
    let mut cap = Capture::new();
    handshake(&mut cap);
    let mut c = tools_call_conn(&mut cap);
    c.server(
        &mut cap,
        &sse_response(None, &prog_range(1..=2, 1, 5), false),
    );
    cancel(&mut cap);
    c.server(&mut cap, LAST_CHUNK);
    c.close(&mut cap);
    assert_kinds(&findings(&cap), &[]);

    // Polling (2025-11-25): the server closes the POST stream on purpose after priming, the
    // client resumes, and cancels while the resumed stream is open. No response was due.
    let mut cap = Capture::new();
    handshake(&mut cap);
    let mut c = tools_call_conn(&mut cap);
    let mut body = sse_head(None);
    body.extend(chunk(b"id: 1\nretry: 100\ndata: \n\n"));
    body.extend(chunk(prog(2, 1, 5).text().as_bytes()));
    body.extend_from_slice(LAST_CHUNK);
    c.server(&mut cap, &body);
    c.close(&mut cap);
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), Some("2")));
    g.server(&mut cap, &sse_response(None, &[prog(3, 2, 5)], false));
    cancel(&mut cap);
    g.server(&mut cap, LAST_CHUNK);
    g.close(&mut cap);
    let fs = findings(&cap);
    assert!(
        !fs.iter().any(|f| f["kind"] == "lost_response"),
        "{}",
        pretty(&fs)
    );

    // A cancel sent after the stream broke and the resumption was refused (a client's
    // timeout) gives up on a response the break lost: still `lost_response`.
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &prog_range(1..=3, 1, 5), End::CutFin);
    resume(&mut cap, "3", &conflict());
    cancel(&mut cap);
    let fs = findings(&cap);
    assert_kinds(
        &fs,
        &[("lost_response", "error"), ("resume_rejected", "info")],
    );
}

/// The call's stream is cut with a FIN after progress 3 of 8 (ids 1..3, one a second); the
/// client resumes from 3 and the server goes on at the same pace with progress 4..6 (ids 4..6),
/// the stream left open. The client cancels request 2 `quiet_us` after progress 6, then the server
/// ends the stream without a response and the client closes.
fn cancel_after_healed_break(quiet_us: i64) -> Vec<Value> {
    cancel_after_resumption(quiet_us, 3)
}

/// As [`cancel_after_healed_break`] with `live` progress values on the resumed connection, one a
/// second from 4; with none, the resumed connection only replays progress 4 at once and then
/// stays quiet until the cancel.
fn cancel_after_resumption(quiet_us: i64, live: u64) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake(&mut cap);
    let mut c = tools_call_conn(&mut cap);
    c.server(&mut cap, &sse_head(None));
    for ev in prog_range(1..=3, 1, 8) {
        cap.wait(1_000_000);
        c.server(&mut cap, &chunk(ev.text().as_bytes()));
    }
    c.server_close(&mut cap);
    cap.wait(1_000_000);
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), Some("3")));
    g.server(&mut cap, &sse_head(None));
    if live > 0 {
        for ev in prog_range(4..=3 + live, 4, 8) {
            cap.wait(1_000_000);
            g.server(&mut cap, &chunk(ev.text().as_bytes()));
        }
    } else {
        g.server(&mut cap, &chunk(prog(4, 4, 8).text().as_bytes()));
    }
    cap.wait(quiet_us);
    cancel(&mut cap);
    g.server(&mut cap, LAST_CHUNK);
    g.close(&mut cap);
    findings(&cap)
}

#[test]
fn a_cancel_racing_the_response_after_a_healed_break_is_not_a_loss() {
    // The resumption continued the log (ids and progress go on), and the cancel came 0.6 s after
    // the last progress, within the server's 1 s pace: the client's timeout came before the
    // server was done, and the server rightly sent no response (the TS SDK's 30 s timeout on a
    // longer call, resumed once).
    let fs = cancel_after_healed_break(600_000);
    assert_kinds(&fs, &[("resume_ok", "info")]);
    // The same cancel 5 s after the last progress, at a 1 s pace: the server had gone quiet, its
    // response lost on the connection that broke (a log that does not keep responses, as
    // fixtures/mcp/lost_response.pcap): still lost.
    let fs = cancel_after_healed_break(5_000_000);
    assert_kinds(&fs, &[("lost_response", "error"), ("resume_ok", "info")]);
    // Two progress values on the resumed connection, a second apart: the pace is the stream's
    // own, shown before the break too (the corpus generator's lostresp server at 1.5 s steps,
    // the client's timeout coming 0.5 s after the resumption's second value).
    let fs = cancel_after_resumption(600_000, 2);
    assert_kinds(&fs, &[("resume_ok", "info")]);
    // One value only, a second after the connection opened: a store that replays slowly looks
    // the same, so nothing shows the server still at work: still lost.
    let fs = cancel_after_resumption(600_000, 1);
    assert_kinds(&fs, &[("lost_response", "error"), ("resume_ok", "info")]);
    // A resumed connection that only replayed what the log held (progress 4 at once) shows no
    // pace of its own: the server may have finished and lost the response on the connection
    // that broke. A cancel 0.6 s later is still a loss, as one a minute later is.
    for quiet in [600_000, 60_000_000] {
        let fs = cancel_after_resumption(quiet, 0);
        assert_kinds(&fs, &[("lost_response", "error"), ("resume_ok", "info")]);
    }
}

// MCP 2026-07-28: no sessions; a broken stream means the request must be re-sent.

fn post_2026(id: i64) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "count", "arguments": {"n": 5},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "progressToken": id}}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn modern(resend: bool) -> Vec<Value> {
    modern_ended(resend, false)
}

/// [`modern`]; with `client_closes` the client, not the server, closes the first stream.
fn modern_ended(resend: bool, client_closes: bool) -> Vec<Value> {
    let mut cap = Capture::new();
    let mut c = cap.connect();
    c.client(&mut cap, &post_2026(4));
    let evs: Vec<Ev> = (1..=2)
        .map(|p| Ev::no_id(progress(&json!(4), p, 5)))
        .collect();
    c.server(&mut cap, &sse_response(None, &evs, false));
    if client_closes {
        c.close(&mut cap);
    } else {
        c.server_close(&mut cap);
    }
    if resend {
        let mut d = cap.connect();
        d.client(&mut cap, &post_2026(5));
        let mut evs: Vec<Ev> = (1..=5)
            .map(|p| Ev::no_id(progress(&json!(5), p, 5)))
            .collect();
        evs.push(Ev::no_id(result(5)));
        d.server(&mut cap, &sse_response(None, &evs, true));
        d.close(&mut cap);
    }
    // The client goes on working well after the broken stream: a re-send would have been seen.
    cap.wait(40_000_000);
    tools_list_answered(&mut cap, None, 6);
    analyze(&cap, &[])
}

/// A `tools/list` (request `id`, in `session`) answered at once, on a new connection.
fn tools_list_answered(cap: &mut Capture, session: Option<&str>, id: i64) {
    let mut l = cap.connect();
    l.client(
        cap,
        &post(
            session,
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}),
        ),
    );
    l.server(
        cap,
        &json_response(
            None,
            &json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}),
        ),
    );
    l.close(cap);
}

#[test]
fn modern_request_neither_answered_nor_resent() {
    let fs = modern(false);
    assert_kinds(&fs, &[("lost_response", "error")]);
    assert_eq!(one(&fs, "lost_response")["request_id"], "4");
}

#[test]
fn modern_request_resent_after_a_broken_stream() {
    assert_kinds(&modern(true), &[]);
}

#[test]
fn modern_stream_closed_by_the_client_is_a_cancellation() {
    // 2026-07-28: closing the response stream is how the client cancels (MCP 2026-07-28
    // "Streamable HTTP", "Cancellation").
    assert_kinds(&modern_ended(false, true), &[]);
    // Negative: the server closes without answering at all; the client's FIN only replies.
    let mut cap = Capture::new();
    let mut c = cap.connect();
    c.client(&mut cap, &post_2026(4));
    cap.wait(2_000_000);
    c.server_close(&mut cap);
    cap.wait(40_000_000);
    let mut l = cap.connect();
    l.client(&mut cap, &post_2026(5));
    l.server(&mut cap, &json_response(None, &result(5)));
    l.close(&mut cap);
    let fs = analyze(&cap, &[]);
    assert_kinds(&fs, &[("lost_response", "error")]);
    assert_eq!(one(&fs, "lost_response")["request_id"], "4");
}

/// A tools/call streaming progress when the client DELETEs the session on another connection;
/// the server then ends the stream. With `cut_first` the server had cut the stream before.
fn deleted_while_streaming(cut_first: bool) -> Vec<Value> {
    deleted_while_streaming_answered(cut_first, 200)
}

/// [`deleted_while_streaming`], the DELETE answered with `status`.
fn deleted_while_streaming_answered(cut_first: bool, status: u16) -> Vec<Value> {
    let (mut cap, c) = call_under_way();
    let c = if cut_first {
        c.server_close(&mut cap);
        cap.wait(5_000_000);
        None
    } else {
        Some(c)
    };
    let mut d = cap.connect();
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nMcp-Session-Id: {SID}\r\nContent-Length: 0\r\n\r\n"
    );
    d.client(&mut cap, delete.as_bytes());
    d.server(
        &mut cap,
        format!("HTTP/1.1 {status} Whatever\r\nContent-Length: 0\r\n\r\n").as_bytes(),
    );
    d.close(&mut cap);
    if let Some(c) = c {
        c.server_close(&mut cap);
    }
    cap.wait(60_000_000);
    if status >= 300 {
        // The session goes on: the client's next request is answered.
        tools_list_answered(&mut cap, Some(SID), 9);
    }
    analyze(&cap, &[])
}

#[test]
fn a_request_in_flight_when_the_session_is_deleted_is_not_lost() {
    assert_kinds(&deleted_while_streaming(false), &[]);
    // Negative: the server refused to end the session (405, MCP "Session Management").
    assert_kinds(
        &deleted_while_streaming_answered(false, 405),
        &[("lost_response", "error")],
    );
    // Negative: the stream broke before the client ended the session.
    assert_kinds(
        &deleted_while_streaming(true),
        &[("lost_response", "error")],
    );
}
