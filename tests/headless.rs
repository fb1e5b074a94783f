//! Captures that begin inside an SSE response: the stream is read from its first event boundary
//! (`http.headless_sse`), and a resumption that names one of its ids takes it into its session,
//! so the resumption is judged against it. Every cut point, with segments of a few bytes (a cut
//! inside an event, a line, a chunk-size line) and of a whole event.

mod common;

use common::*;
use serde_json::json;

const SID: &str = "headless-session";

/// A session whose tools/call stream delivers progress 1..=5 under ids 1..=5 and is cut; the
/// client resumes (from address `resumer`) with Last-Event-ID 5 and the server answers with
/// `resumed` (id, progress) events, then the result. Returns the capture and the stream's
/// connection (client port).
fn capture(seg: usize, resumed: &[(i64, u64)], resumer: [u8; 4]) -> (Capture, u16) {
    let mut cap = Capture::with_segment_size(seg);
    let token = json!("tok");
    let c = stream(&mut cap);
    let port = c.port;
    c.server_reset(&mut cap);
    let mut evs: Vec<Ev> = resumed
        .iter()
        .map(|&(id, p)| Ev::id(id, progress(&token, p, 10)))
        .collect();
    let last = resumed.last().map_or(6, |&(id, _)| id + 1);
    evs.push(Ev::id(last, result(2)));
    let g = cap.connect_from(resumer);
    resume(&mut cap, g, "5", &evs);
    (cap, port)
}

/// The session's tools/call on a new connection, answered by progress 1..=5 under ids 1..=5
/// and left open.
fn stream(cap: &mut Capture) -> Conn {
    let token = json!("tok");
    let mut c = cap.connect();
    c.client(cap, &post(Some(SID), &tools_call(2, &token)));
    let events: Vec<Ev> = (1..=5u64)
        .map(|i| Ev::id(i, progress(&token, i, 10)))
        .collect();
    c.server(cap, &sse_response(Some(SID), &events, false));
    c
}

/// A resumption of the session (`GET` with Last-Event-ID `cursor`) on a new connection from
/// `conn` (`Capture::connect` or `connect_from`), answered by the whole event stream `evs`.
fn resume(cap: &mut Capture, mut conn: Conn, cursor: &str, evs: &[Ev]) {
    conn.client(cap, &get(Some(SID), Some(cursor)));
    conn.server(cap, &sse_response(Some(SID), evs, true));
    conn.close(cap);
}

/// The capture from frame `k` on (the frames before it not captured).
fn from_frame(cap: &Capture, k: usize) -> Capture {
    let mut c = Capture::new();
    c.frames = cap.frames[k..].to_vec();
    c
}

/// How many of the server's bytes of connection `port` come before frame `k`, and whether the
/// stream is read from there on with the cursor event 5 whole: from before event 4's blank line
/// (the last boundary before event 5), from the line ends before event 5's chunk-size line or
/// that line (a chunk that begins with the capture), or from the line end before its id line or
/// that line (an event that does).
fn offsets(cap: &Capture, port: u16, k: usize) -> (usize, bool) {
    let mut bytes = Vec::new();
    let mut before = 0;
    for (i, f) in cap.frames.iter().enumerate() {
        if f.client_port == port && !f.from_client && f.payload_len > 0 {
            if i < k {
                before += f.payload_len;
            }
            bytes.extend_from_slice(&f.data[f.data.len() - f.payload_len..]);
        }
    }
    let ev5 = bytes
        .windows(6)
        .position(|w| w == b"id: 5\n")
        .expect("event 5");
    // Event 4 ends with "\n\n", then the chunk's CRLF and event 5's size line.
    let end4 = bytes[..ev5]
        .windows(2)
        .rposition(|w| w == b"\n\n")
        .expect("event 4's end");
    // "\n\n", the chunk's CRLF, then event 5's size line: from event 4's blank line up to the
    // size line, the line ends before the size line are skipped.
    let size5 = end4 + 4;
    (before, before <= size5 || (ev5 - 2..=ev5).contains(&before))
}

/// The capture's tables `resumptions`, `findings` and `anomalies`, from one run.
fn tables(cap: &Capture) -> [String; 3] {
    let pcap = temp_path("headless", "pcap");
    let out = temp_path("headless", "d");
    std::fs::write(&pcap, cap.pcap()).unwrap();
    write_csv_tables(&pcap, &out);
    let read = |t: &str| std::fs::read_to_string(out.join(format!("{t}.csv"))).unwrap();
    let got = [read("resumptions"), read("findings"), read("anomalies")];
    let _ = std::fs::remove_file(&pcap);
    let _ = std::fs::remove_dir_all(&out);
    got
}

/// The verdict of the capture's one resumption, the findings' (kind, severity), sorted, and
/// the anomalies table.
fn resumption(cap: &Capture) -> (String, Vec<(String, String)>, String) {
    let [resumptions, findings, anomalies] = tables(cap);
    let rows = csv_rows(&resumptions);
    assert_eq!(rows.len(), 1, "{resumptions}");
    let verdict = rows[0]["verdict"].clone();
    let mut kinds: Vec<(String, String)> = csv_rows(&findings)
        .into_iter()
        .map(|f| (f["kind"].clone(), f["severity"].clone()))
        .collect();
    kinds.sort();
    (verdict, kinds, anomalies)
}

/// The resumption took no stream: unverifiable, its cursor unknown (an info: the session began
/// before the capture), and nothing else said.
fn assert_cursor_unknown(verdict: &str, kinds: &[(String, String)]) {
    assert_eq!(verdict, "unverifiable");
    assert_eq!(
        kinds,
        [("unknown_last_event_id".to_string(), "info".to_string())]
    );
}

/// A fork (the resumed stream restarts at id 1, progress 1): proven whenever the capture began
/// early enough to hold the cursor event whole after a boundary; otherwise the cursor is unknown
/// (an info, the session began before the capture). Never another error.
#[test]
fn fork_proven_from_a_stream_the_capture_began_inside() {
    for seg in [1, 3, 7, 40, 1000] {
        let (full, port) = capture(seg, &[(1, 1), (2, 2)], [127, 0, 0, 1]);
        let first = full
            .frames
            .iter()
            .position(|f| f.client_port == port && !f.from_client && f.payload_len > 0)
            .unwrap();
        let reset = full
            .frames
            .iter()
            .rposition(|f| f.client_port == port && !f.from_client)
            .unwrap();
        for k in first..reset {
            let cap = from_frame(&full, k);
            let (verdict, kinds, anomalies) = resumption(&cap);
            let (before, whole) = offsets(&full, port, k);
            let ctx = format!("segments of {seg}, capture from frame {k} (byte {before})");
            if whole {
                assert_eq!(verdict, "forked", "{ctx}: {kinds:?}\n{anomalies}");
                assert!(
                    kinds.contains(&("id_regression".into(), "error".into())),
                    "{ctx}: {kinds:?}"
                );
                // (From the head on, the response is read as any other.)
                assert_eq!(
                    anomalies.contains("http.headless_sse"),
                    before > 0,
                    "{ctx}: {anomalies}"
                );
            } else {
                assert_eq!(verdict, "unverifiable", "{ctx}: {kinds:?}\n{anomalies}");
            }
            for (kind, sev) in &kinds {
                assert!(
                    sev == "info"
                        || ["id_regression", "id_restart", "duplicate_delivery"]
                            .contains(&kind.as_str()),
                    "{ctx}: {kind} {sev}"
                );
            }
        }
    }
}

/// A healthy resumption (ids and progress go on at 6) of a stream the capture began inside:
/// resumed or unverifiable, never an error or warning, wherever the capture began.
#[test]
fn healthy_resumption_of_a_stream_the_capture_began_inside() {
    for seg in [2, 11, 1000] {
        let (full, port) = capture(seg, &[(6, 6), (7, 7)], [127, 0, 0, 1]);
        let first = full
            .frames
            .iter()
            .position(|f| f.client_port == port && !f.from_client && f.payload_len > 0)
            .unwrap();
        for k in first..full.frames.len() / 2 {
            let cap = from_frame(&full, k);
            let (verdict, kinds, _) = resumption(&cap);
            let (_, whole) = offsets(&full, port, k);
            let want = if whole { "resumed" } else { "unverifiable" };
            assert_eq!(
                verdict, want,
                "segments of {seg}, from frame {k}: {kinds:?}"
            );
            assert!(
                kinds.iter().all(|(_, s)| s == "info"),
                "segments of {seg}, from frame {k}: {kinds:?}"
            );
        }
    }
}

/// A resumption from another client address does not take the headless stream that delivered
/// its Last-Event-ID: the cursor stays unknown.
#[test]
fn another_client_does_not_take_a_headless_stream() {
    let (cap, port) = capture(100, &[(1, 1)], [127, 0, 0, 2]);
    // From the stream's third server segment on: inside event 1, before the others.
    let cut = from_frame(&cap, cap.server_data_frames(port)[2]);
    let (verdict, kinds, anomalies) = resumption(&cut);
    assert!(
        column_has(&anomalies, "code", "http.headless_sse"),
        "{anomalies}"
    );
    assert_cursor_unknown(&verdict, &kinds);
}

/// Text that is not an event stream, in a connection the capture began inside, is given up as
/// before (`http.not_http` at its first frame), and binary bytes at once.
#[test]
fn text_that_is_no_event_stream_is_not_http() {
    for junk in [
        &b"220 mail.example ESMTP ready\r\n250 OK\r\n\r\nQUIT\r\n"[..],
        &b"\x00\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"[..],
    ] {
        let mut cap = Capture::new();
        let mut c = cap.connect();
        c.server(&mut cap, junk);
        c.close(&mut cap);
        // Without the handshake: no SYN tells the roles.
        let cut = from_frame(&cap, 3);
        let anomalies = table_csv(&cut, "anomalies");
        let rows = csv_rows(&anomalies);
        assert_eq!(rows.len(), 1, "{anomalies}");
        assert!(
            rows[0]["code"] == "http.not_http" && rows[0]["frame"] == "1",
            "{anomalies}"
        );
    }
}

/// The start of a TLS record (a ClientHello cut short) is the TLS stage's, not HTTP's: the
/// connection is TLS, and its record cut by the end of the connection is counted.
#[test]
fn a_tls_record_start_is_tls_not_http() {
    let mut cap = Capture::new();
    let mut c = cap.connect();
    c.server(&mut cap, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03");
    c.close(&mut cap);
    let cut = from_frame(&cap, 3);
    let anomalies = table_csv(&cut, "anomalies");
    let rows = csv_rows(&anomalies);
    assert_eq!(rows.len(), 1, "{anomalies}");
    assert_eq!(rows[0]["code"], "tls.truncated_record", "{anomalies}");
}

/// A resumption sent to another server (a replica behind a balancer) takes the headless stream
/// that delivered its Last-Event-ID only if that stream went quiet before it: one that goes on
/// delivering is another client's stream, alive, whatever its last id was.
#[test]
fn another_server_takes_a_headless_stream_only_once_quiet() {
    for goes_on in [false, true] {
        let mut cap = Capture::with_segment_size(100);
        let token = json!("tok");
        let c = stream(&mut cap);
        let port = c.port;
        let c = if goes_on {
            Some(c)
        } else {
            c.server_reset(&mut cap);
            None
        };
        // The rest of the call: progress 6 to 10, then its result.
        let mut evs: Vec<Ev> = (6..=10u64)
            .map(|i| Ev::id(i, progress(&token, i, 10)))
            .collect();
        evs.push(Ev::id(11, result(2)));
        let g = cap.connect_to(SERVER_PORT + 1);
        resume(&mut cap, g, "5", &evs);
        if let Some(mut c) = c {
            c.server(
                &mut cap,
                &chunk(Ev::id(6, progress(&token, 6, 10)).text().as_bytes()),
            );
            c.server_reset(&mut cap);
        }
        let cut = from_frame(&cap, cap.server_data_frames(port)[2]);
        let (verdict, kinds, anomalies) = resumption(&cut);
        assert!(
            column_has(&anomalies, "code", "http.headless_sse"),
            "{anomalies}"
        );
        let want = if goes_on { "unverifiable" } else { "resumed" };
        assert_eq!(verdict, want, "goes on: {goes_on}: {kinds:?}");
        assert!(kinds.iter().all(|(_, s)| s == "info"), "{kinds:?}");
    }
}

/// A stream whose chunks end inside events (a buffering proxy writes them so) is read from the
/// first chunk boundary that the next one confirms, past the event in progress there; the fork
/// is proven from it.
#[test]
fn chunks_ending_inside_events_are_read() {
    let mut cap = Capture::with_segment_size(50);
    let token = json!("tok");
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token)));
    let text: Vec<u8> = (1..=5u64)
        .flat_map(|i| Ev::id(i, progress(&token, i, 10)).text().into_bytes())
        .collect();
    let mut body = sse_head(Some(SID));
    for piece in text.chunks(37) {
        body.extend(chunk(piece));
    }
    c.server(&mut cap, &body);
    let port = c.port;
    c.server_reset(&mut cap);
    let evs = [Ev::id(1, progress(&token, 1, 10)), Ev::id(2, result(2))];
    let g = cap.connect();
    resume(&mut cap, g, "5", &evs);
    let cut = from_frame(&cap, cap.server_data_frames(port)[3]);
    let (verdict, kinds, anomalies) = resumption(&cut);
    assert!(
        csv_column(&anomalies, "detail")
            .iter()
            .any(|d| d.contains("chunks ending inside events")),
        "{anomalies}"
    );
    assert!(!anomalies.contains("sse.invalid_json"), "{anomalies}");
    assert_eq!(verdict, "forked", "{kinds:?}\n{anomalies}");
}

/// Two tools/calls on concurrent streams the capture began inside; the first is cut, and its
/// resumption replays the second stream's events (same ids, same data) before its own: the
/// server-everything event store's fault (`fixtures/mcp-faults/cross_stream_replay.pcap`). The
/// second stream is in no session (nothing names it), yet it was open while the first was, by
/// the same client: a `cross_stream_replay`. The same stream from another client address is
/// another client's, and nothing is said.
#[test]
fn replay_of_a_concurrent_headless_stream_is_cross_stream() {
    for other_client in [false, true] {
        let mut cap = Capture::new();
        let (ta, tb) = (json!("a"), json!("b"));
        let uuid = |n: u64| format!("00000000-0000-4000-8000-{n:012}");
        let ev =
            |n: u64, token: &serde_json::Value, p: u64| Ev::id(uuid(n), progress(token, p, 10));
        let mut a = cap.connect();
        a.client(&mut cap, &post(Some(SID), &tools_call(2, &ta)));
        let mut b = if other_client {
            cap.connect_from([127, 0, 0, 9])
        } else {
            cap.connect()
        };
        b.client(&mut cap, &post(Some(SID), &tools_call(3, &tb)));
        a.server(&mut cap, &sse_response(Some(SID), &[ev(1, &ta, 1)], false));
        b.server(&mut cap, &sse_response(Some(SID), &[ev(11, &tb, 1)], false));
        // The capture begins here: inside both streams.
        let cut_at = cap.frames.len();
        a.server(&mut cap, &chunk(ev(2, &ta, 2).text().as_bytes()));
        b.server(&mut cap, &chunk(ev(12, &tb, 2).text().as_bytes()));
        let done = Ev::id(uuid(13), result(3));
        b.server(&mut cap, &chunk(done.text().as_bytes()));
        b.server(&mut cap, LAST_CHUNK);
        b.close(&mut cap);
        a.server_reset(&mut cap);
        let replay = [
            ev(12, &tb, 2),
            Ev::id(uuid(13), result(3)),
            ev(3, &ta, 3),
            Ev::id(uuid(4), result(2)),
        ];
        let g = cap.connect();
        resume(&mut cap, g, &uuid(2), &replay);
        let cut = from_frame(&cap, cut_at);
        let (verdict, kinds, anomalies) = resumption(&cut);
        assert_eq!(
            anomalies.matches("http.headless_sse").count(),
            2,
            "{anomalies}"
        );
        let cross = kinds.iter().any(|(k, _)| k == "cross_stream_replay");
        assert_eq!(
            cross, !other_client,
            "other client: {other_client}: {kinds:?}"
        );
        if !other_client {
            assert_eq!(verdict, "gap");
        }
    }
}

/// A tools/call stream the capture began inside, whose request was not captured: its request is
/// the one its events answer, with the one progress token they carry. A resumption whose
/// progress jumps ahead and ends in the result made the result up (`suspect_terminal`, as with
/// the request captured). A result right after the Last-Event-ID, with no progress in between,
/// is judged only with the request captured: whether a `retry` planned the poll, and the
/// progress step, may be before the capture.
#[test]
fn made_up_result_on_a_stream_the_capture_began_inside() {
    for (resumed, made_up) in [(&[(6, 9)][..], true), (&[][..], false)] {
        let (full, port) = capture(100, resumed, [127, 0, 0, 1]);
        let (_, kinds, _) = resumption(&full);
        assert!(
            kinds.iter().any(|(k, _)| k == "suspect_terminal"),
            "{kinds:?}"
        );
        // From the stream's third server segment on: inside event 1, before the others.
        let cut = from_frame(&full, full.server_data_frames(port)[2]);
        let (_, kinds, anomalies) = resumption(&cut);
        assert!(
            column_has(&anomalies, "code", "http.headless_sse"),
            "{anomalies}"
        );
        let suspect: Vec<&(String, String)> = kinds
            .iter()
            .filter(|(k, _)| k == "suspect_terminal")
            .collect();
        if made_up {
            assert_eq!(suspect, [&("suspect_terminal".into(), "error".into())]);
        } else {
            assert!(suspect.is_empty(), "{kinds:?}");
        }
    }
}

/// A healthy call: the tools/call stream delivers progress `before` (of `total`, under ids 1,
/// 2, …) and is cut; the resumption from its last id delivers progress `after`, then the
/// result. Asserts the resumption `resumed` in the full capture, and nothing but infos in every
/// capture that begins inside the stream.
fn healthy_at_every_cut(before: &[u64], after: &[u64], total: u64) {
    let mut cap = Capture::with_segment_size(100);
    let token = json!("tok");
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token)));
    let id = |i: usize| i as u64 + 1;
    let events: Vec<Ev> = before
        .iter()
        .enumerate()
        .map(|(i, &p)| Ev::id(id(i), progress(&token, p, total)))
        .collect();
    c.server(&mut cap, &sse_response(Some(SID), &events, false));
    let port = c.port;
    c.server_reset(&mut cap);
    let mut evs: Vec<Ev> = after
        .iter()
        .enumerate()
        .map(|(i, &p)| Ev::id(id(before.len() + i), progress(&token, p, total)))
        .collect();
    evs.push(Ev::id(id(before.len() + after.len()), result(2)));
    let g = cap.connect();
    resume(&mut cap, g, &before.len().to_string(), &evs);
    let (verdict, kinds, _) = resumption(&cap);
    assert_eq!(verdict, "resumed", "{kinds:?}");
    for &k in &cap.server_data_frames(port)[1..] {
        let (_, kinds, _) = resumption(&from_frame(&cap, k));
        assert!(
            kinds.iter().all(|(_, s)| s == "info"),
            "cut at frame {k}: {kinds:?}"
        );
    }
}

/// A call that reports each step before doing it (progress 1, 2, 3 of 5, cut, then 4 of 5 and
/// the result) ends one step short of its total: healthy, as the full capture shows by the step
/// of its values. A capture that began inside the stream may hold only the last value before
/// the cut, and so not the step: nothing is said there either.
#[test]
fn one_step_short_is_healthy_at_every_cut() {
    healthy_at_every_cut(&[1, 2, 3], &[4], 5);
}

/// Progress with uneven steps (1, 3, 6, 7 of 10), cut, then resumed at 10 and the result: a
/// healthy call. A capture that began inside the stream may see only the tail (6, 7): one step
/// of 1 there is no counter's step (its earlier steps are not seen), so no `app_seq_desync`.
#[test]
fn two_values_of_a_stream_the_capture_began_inside_show_no_step() {
    healthy_at_every_cut(&[1, 3, 6, 7], &[10], 10);
}

/// A headless stream that delivered the resumption's cursor more times than the lookup keeps
/// (a server that repeats one id: 300 events under id `7`) is taken as any stream is: the
/// deliveries left out are said (`model.deliveries`), not silently dropped.
#[test]
fn a_headless_stream_repeating_the_cursor_says_the_deliveries_left_out() {
    let mut cap = Capture::with_segment_size(1000);
    let token = json!("tok");
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token)));
    let events: Vec<Ev> = (1..=300u64)
        .map(|i| Ev::id(7, progress(&token, i, 400)))
        .collect();
    c.server(&mut cap, &sse_response(Some(SID), &events, false));
    let port = c.port;
    c.server_reset(&mut cap);
    let resumed = [Ev::id(8, progress(&token, 301, 400)), Ev::id(9, result(2))];
    let g = cap.connect();
    resume(&mut cap, g, "7", &resumed);
    // From the stream's second server segment on: inside its first events.
    let cut = from_frame(&cap, cap.server_data_frames(port)[1]);
    let (verdict, _, anomalies) = resumption(&cut);
    assert!(
        column_has(&anomalies, "code", "http.headless_sse"),
        "{anomalies}"
    );
    assert!(
        column_has(&anomalies, "code", "model.deliveries"),
        "{anomalies}"
    );
    assert_ne!(verdict, "unverifiable", "the resumption found its stream");
}

/// Forty streams the capture began inside (after their heads), from one client address, all
/// delivering ids 1..=5:
/// a resumption from that address naming `5` cannot tell which it resumes, and takes none (the
/// cursor stays unknown). When only one of them went to the server the resumption is sent to
/// (the others to another, quiet before it), that one is taken.
#[test]
fn of_many_headless_streams_with_one_cursor_only_a_single_fit_is_taken() {
    for one_here in [false, true] {
        let mut cap = Capture::with_segment_size(100);
        let token = json!("tok");
        let mut conns = Vec::new();
        for k in 0..40 {
            let port = if one_here && k > 0 { 3001 } else { 3000 };
            let mut c = cap.connect_to(port);
            c.client(&mut cap, &post(Some(SID), &tools_call(2, &token)));
            c.server(&mut cap, &sse_head(Some(SID)));
            conns.push(c);
        }
        // The capture begins here: after every request and response head.
        let begins = cap.frames.len();
        let events: Vec<u8> = (1..=5u64)
            .flat_map(|i| chunk(Ev::id(i, progress(&token, i, 10)).text().as_bytes()))
            .collect();
        for c in &mut conns {
            c.server(&mut cap, &events);
        }
        for c in conns {
            c.server_reset(&mut cap);
        }
        let mut evs: Vec<Ev> = (6..=10u64)
            .map(|i| Ev::id(i, progress(&token, i, 10)))
            .collect();
        evs.push(Ev::id(11, result(2)));
        let g = cap.connect();
        resume(&mut cap, g, "5", &evs);
        let cut = from_frame(&cap, begins);
        let (verdict, kinds, anomalies) = resumption(&cut);
        assert!(
            column_has(&anomalies, "code", "http.headless_sse"),
            "{anomalies}"
        );
        if one_here {
            assert_eq!(verdict, "resumed", "{kinds:?}");
        } else {
            assert_cursor_unknown(&verdict, &kinds);
        }
    }
}

/// The searches for an event stream in connections the capture began inside hold their bytes
/// from the budget the HTTP stage's connections share: past it a search is given up
/// (`http.memory_budget`), and the others go on.
#[test]
fn searches_for_a_headless_stream_are_held_from_the_budget() {
    let mut cap = Capture::new();
    let text: Vec<u8> = (0..400)
        .flat_map(|i| format!("line {i} of text that is no event stream\n").into_bytes())
        .collect();
    let mut conns = Vec::new();
    for _ in 0..3 {
        conns.push(cap.connect());
    }
    let begins = cap.frames.len();
    for c in &mut conns {
        c.server(&mut cap, &text);
    }
    let cut = from_frame(&cap, begins);
    let count = |budget: usize| {
        let mut a = mcpcap::Analyzer::new(mcpcap::Options::default());
        a.http.options.held = mcpcap::budget::Budget::new(budget);
        let mut anomalies = mcpcap::anomaly::Anomalies::default();
        mcpcap::capture::read_capture(&cut.pcap()[..], 1, &mut anomalies, |f| a.frame(&f)).unwrap();
        a.finish();
        (
            a.http
                .anomalies
                .count(mcpcap::anomaly::Code::HttpMemoryBudget),
            a.http.anomalies.count(mcpcap::anomaly::Code::HttpNotHttp),
        )
    };
    // Room for all three searches: each is given up only when it finds no stream.
    assert_eq!(count(1 << 20), (0, 3));
    // Room for one or two (each holds its 16 KB of text, in a buffer of at most twice that):
    // the others are given up at the budget.
    let (refused, searched) = count(2 * (16 << 10) + 1000);
    assert!((1..=2).contains(&refused) && refused + searched == 3);
    // Room for none: a first segment (1000 bytes) is more than the budget.
    assert_eq!(count(500), (3, 0));
}
