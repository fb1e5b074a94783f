//! Detector scenarios end to end: each test builds a small pcap packet by
//! packet (see `common`), runs the real `mcpcap analyze --format ndjson`
//! on it and asserts the exact multiset of (kind, severity) findings plus
//! their key fields. One capture triggers each detector; the healthy and
//! correctly resumed ones (also with 1-byte, reordered and retransmitted
//! segments) must give no error.
//!
//! Every scenario is one session `s1`: `initialize` (the response assigns
//! `Mcp-Session-Id: s1`) and `notifications/initialized` on a first
//! connection, then `tools/call` id 2 (progressToken "t2") whose POST
//! response is an SSE stream, then, when the stream is cut, a resumption
//! GET with `Last-Event-ID` on a new connection.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use serde_json::{json, Value};

const SID: &str = "s1";

// ---------------------------------------------------------------------------
// Running the binary

/// A capture written to a temporary file, removed on drop.
struct TempPcap(PathBuf);

impl TempPcap {
    fn new(cap: &Capture) -> TempPcap {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "mcpcap-detectors-{}-{}.pcap",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, cap.pcap()).expect("write temp pcap");
        TempPcap(path)
    }
}

impl Drop for TempPcap {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Run `mcpcap <args…> FILE`; returns (exit status, stdout rows as JSON).
fn run(cap: &Capture, args: &[&str]) -> (i32, Vec<Value>) {
    let file = TempPcap::new(cap);
    let out = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(args)
        .arg(&file.0)
        .output()
        .expect("run mcpcap");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty(), "unexpected stderr: {stderr}");
    let rows = String::from_utf8(out.stdout)
        .expect("utf-8 stdout")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (out.status.code().expect("exit code"), rows)
}

/// The findings of a capture (`analyze --fail-on never`, which must exit 0).
fn findings(cap: &Capture) -> Vec<Value> {
    let (code, rows) = run(
        cap,
        &["analyze", "--format", "ndjson", "--fail-on", "never"],
    );
    assert_eq!(code, 0, "--fail-on never must exit 0");
    rows
}

/// Exit status of `analyze --fail-on <level>`.
fn exit_status(cap: &Capture, fail_on: &str) -> i32 {
    run(
        cap,
        &["analyze", "--format", "ndjson", "--fail-on", fail_on],
    )
    .0
}

/// The SSE events table (`events --format ndjson`).
fn events(cap: &Capture) -> Vec<Value> {
    run(cap, &["events", "--format", "ndjson"]).1
}

/// The `resumptions` table as CSV text.
fn resumptions_csv(cap: &Capture) -> String {
    let file = TempPcap::new(cap);
    let out = file.0.with_extension("tables");
    write_csv_tables(&file.0, &out);
    let text = std::fs::read_to_string(out.join("resumptions.csv")).expect("resumptions.csv");
    let _ = std::fs::remove_dir_all(&out);
    text
}

/// Assert exactly this multiset of (kind, severity) findings.
fn assert_kinds(fs: &[Value], expected: &[(&str, &str)]) {
    let mut want: Vec<(String, String)> = expected
        .iter()
        .map(|(k, s)| (k.to_string(), s.to_string()))
        .collect();
    want.sort();
    assert_eq!(kinds_and_severities(fs), want, "findings:\n{}", pretty(fs));
}

/// The only finding of a kind.
fn one<'a>(fs: &'a [Value], kind: &str) -> &'a Value {
    let v: Vec<&Value> = fs.iter().filter(|f| f["kind"] == kind).collect();
    assert_eq!(v.len(), 1, "one {kind} expected:\n{}", pretty(fs));
    v[0]
}

/// Assert the key fields of a finding (`None`: the column is null).
fn assert_keys(
    f: &Value,
    last_event_id: Option<&str>,
    event_id: Option<&str>,
    request_id: Option<&str>,
) {
    let s = |k: &str| f[k].as_str().map(str::to_string);
    assert_eq!(s("session_id").as_deref(), Some(SID), "{f}");
    assert_eq!(
        s("last_event_id").as_deref(),
        last_event_id,
        "last_event_id of {f}"
    );
    assert_eq!(s("event_id").as_deref(), event_id, "event_id of {f}");
    assert_eq!(s("request_id").as_deref(), request_id, "request_id of {f}");
}

fn pretty(fs: &[Value]) -> String {
    fs.iter()
        .map(|f| {
            format!(
                "  {} {} leid={} eid={} rid={}: {}",
                f["kind"],
                f["severity"],
                f["last_event_id"],
                f["event_id"],
                f["request_id"],
                f["detail"]
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------
// Scenario building blocks

/// How the server ends the tools/call POST stream.
#[derive(Clone, Copy)]
enum End {
    /// Last chunk, then an orderly close by the client.
    Complete,
    /// FIN from the server without the last chunk.
    CutFin,
    /// RST from the server without the last chunk.
    CutRst,
}

fn token() -> Value {
    json!("t2")
}

/// Event `id` carrying progress `n` of `total` for the tools/call.
fn prog(id: impl ToString, n: u64, total: u64) -> Ev {
    Ev::id(id, progress(&token(), n, total))
}

/// Event `id` carrying the tools/call result.
fn res(id: impl ToString) -> Ev {
    Ev::id(id, result(2))
}

/// Events `ids[i]` with progress `from + i` of `total`.
fn progs(ids: std::ops::RangeInclusive<u64>, from: u64, total: u64) -> Vec<Ev> {
    ids.enumerate()
        .map(|(i, id)| prog(id, from + i as u64, total))
        .collect()
}

/// `initialize` → `Mcp-Session-Id: s1`, then `notifications/initialized` → 202, on one connection.
fn handshake(cap: &mut Capture) {
    let mut c = cap.connect();
    c.client(cap, &post(None, &initialize(1)));
    c.server(cap, &json_response(Some(SID), &initialize_result(1)));
    c.client(cap, &post(Some(SID), &initialized()));
    c.server(cap, &accepted());
    c.close(cap);
}

/// `tools/call` id 2 answered by an SSE stream of `events`; returns the client port.
fn tools_call_stream(cap: &mut Capture, events: &[Ev], end: End) -> u16 {
    let mut c = tools_call_conn(cap);
    let port = c.port;
    c.server(
        cap,
        &sse_response(None, events, matches!(end, End::Complete)),
    );
    match end {
        End::Complete => c.close(cap),
        End::CutFin => c.server_close(cap),
        End::CutRst => c.server_reset(cap),
    }
    port
}

/// A new connection carrying the `tools/call` request 2 (the response is the caller's).
fn tools_call_conn(cap: &mut Capture) -> Conn {
    let mut c = cap.connect();
    c.client(cap, &post(Some(SID), &tools_call(2, &token())));
    c
}

/// A GET with `Last-Event-ID` on a new connection, answered by `response`; the client closes.
fn resume(cap: &mut Capture, last_event_id: &str, response: &[u8]) {
    let mut c = cap.connect();
    c.client(cap, &get(Some(SID), Some(last_event_id)));
    c.server(cap, response);
    c.close(cap);
}

/// The healthy session: progress 1..5 on ids 1..5, the result on id 6.
fn healthy(cap: &mut Capture) -> u16 {
    handshake(cap);
    let mut evs = progs(1..=5, 1, 5);
    evs.push(res(6));
    tools_call_stream(cap, &evs, End::Complete)
}

/// The POST stream is cut after ids 1..3 (progress 1..3 of `total`); the client
/// resumes with `Last-Event-ID: 3` and gets `resumed` on a complete SSE response.
fn cut_and_resume(total: u64, cut: End, resumed: &[Ev]) -> Capture {
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &progs(1..=3, 1, total), cut);
    resume(&mut cap, "3", &sse_response(None, resumed, true));
    cap
}

// ---------------------------------------------------------------------------
// Healthy captures: no findings

#[test]
fn healthy_has_no_findings() {
    let mut cap = Capture::new();
    healthy(&mut cap);
    let fs = findings(&cap);
    assert_kinds(&fs, &[]);
    // Not vacuous: the six events of the stream were decoded.
    let evs = events(&cap);
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
    let evs = events(&cap);
    let ids: Vec<&str> = evs.iter().filter_map(|e| e["event_id"].as_str()).collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5", "6"]);
    assert!(
        evs.iter()
            .all(|e| e["truncated"] == false && e["parse_error"].is_null()),
        "{evs:?}"
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
    assert!(a.contains(&want), "{want}\n{a}");
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
    assert_eq!(a.lines().count(), 2, "{a}");
    assert!(a.contains("http.upgrade"), "{a}");
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
        assert!(
            !table_csv(&cap, "anomalies").contains("bad_head"),
            "upgrade {upgrade}"
        );
    }
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
    let evs = events(&cap);
    let ids: Vec<&str> = evs.iter().filter_map(|e| e["event_id"].as_str()).collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5", "6"]);
    assert!(
        evs.iter()
            .all(|e| e["truncated"] == false && e["parse_error"].is_null()),
        "{evs:?}"
    );
    // Not vacuous: the flow table saw the reordering and the retransmission.
    let (_, flows) = run(&cap, &["flows", "--format", "ndjson"]);
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

// ---------------------------------------------------------------------------
// Resumptions

#[test]
fn resume_ok() {
    let mut resumed = progs(4..=5, 4, 5);
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
fn id_gap() {
    // Ids jump 3 → 6 and progress with them (3 → 6 of 7): events 4 and 5 were lost.
    let mut resumed = progs(6..=7, 6, 7);
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
    let mut resumed = progs(6..=7, 4, 5);
    resumed.push(res(8));
    let cap = cut_and_resume(5, End::CutRst, &resumed);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("resume_ok", "info")]);
    let rs = resumptions_csv(&cap);
    assert_eq!(rs.lines().count(), 2, "{rs}");
    assert!(rs.contains(",resumed,") && rs.contains("application counter went on by one step"));
    // Negative: the same skip with progress 3 → 5, a step of one missed, is a gap (`id_gap`).
    let mut resumed = progs(6..=7, 5, 6);
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

#[test]
fn fork_restarts_ids() {
    // The resumed stream replays ids 1..3 (progress 1..3) and goes on.
    let mut resumed = progs(1..=5, 1, 5);
    resumed.push(res(6));
    let cap = cut_and_resume(5, End::CutFin, &resumed);
    let fs = findings(&cap);
    assert_kinds(
        &fs,
        &[
            ("duplicate_delivery", "error"),
            ("id_regression", "error"),
            ("id_restart", "error"),
        ],
    );
    assert_keys(one(&fs, "id_regression"), Some("3"), Some("1"), None);
    assert_keys(one(&fs, "id_restart"), Some("3"), Some("1"), None);
    assert_keys(one(&fs, "duplicate_delivery"), Some("3"), Some("1"), None);
    assert_eq!(exit_status(&cap, "error"), 1);
}

/// A replay that hands over to live events re-sends some of its own (typescript-sdk PR #2335
/// review): inside the resumed connection, progress 4, 5 come again under fresh ids. The client has
/// them twice (duplicate_delivery); nothing was lost, so no app_seq_desync and no `gap`.
#[test]
fn progress_re_sent_inside_the_resumed_connection_is_a_duplicate_delivery() {
    let mut resumed = progs(4..=5, 4, 9);
    resumed.extend(progs(6..=12, 4, 9));
    resumed.push(res(13));
    let cap = cut_and_resume(9, End::CutFin, &resumed);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("duplicate_delivery", "error")]);
    // The first value the client had already: progress 4 again, on id 6.
    assert_keys(one(&fs, "duplicate_delivery"), Some("3"), Some("6"), None);
    let rs = resumptions_csv(&cap);
    assert!(
        rs.contains(",resumed,")
            && rs.contains("events the client already had were delivered again"),
        "{rs}"
    );
    // The same events re-sent with their ids and data are one connection's duplicate ids, said
    // once, by duplicate_event_id.
    let mut resumed = progs(4..=5, 4, 9);
    resumed.extend(progs(4..=9, 4, 9));
    resumed.push(res(10));
    let fs = findings(&cut_and_resume(9, End::CutFin, &resumed));
    assert_kinds(
        &fs,
        &[("duplicate_event_id", "error"), ("resume_ok", "info")],
    );
    // Negative: a loss after the re-sent values is still a loss.
    let mut resumed = progs(4..=5, 4, 9);
    resumed.extend(progs(6..=7, 4, 9));
    resumed.extend(progs(8..=9, 8, 9));
    resumed.push(res(10));
    let fs = findings(&cut_and_resume(9, End::CutFin, &resumed));
    assert_kinds(
        &fs,
        &[("app_seq_desync", "error"), ("duplicate_delivery", "error")],
    );
}

#[test]
fn a_fork_whose_ids_jump_ahead_is_no_id_gap() {
    // The replica numbers its own log from 100: ids 101.. carry progress 1..5 again. The ids
    // skipped are another counter's, not 97 events lost.
    let mut resumed = progs(101..=105, 1, 5);
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
    let rs = resumptions_csv(&cap);
    assert!(
        rs.contains(",forked,") && rs.contains("its ids jumped ahead of the cursor"),
        "{rs}"
    );
}

#[test]
fn app_seq_desync_and_suspect_terminal() {
    // Ids continue 3 → 4, but progress jumps 3 → 9 of 10 and the result follows at once.
    let resumed = vec![prog(4, 9, 10), res(5)];
    let cap = cut_and_resume(10, End::CutFin, &resumed);
    let fs = findings(&cap);
    assert_kinds(
        &fs,
        &[("app_seq_desync", "error"), ("suspect_terminal", "error")],
    );
    let f = one(&fs, "app_seq_desync");
    assert_keys(f, Some("3"), Some("4"), None);
    assert_eq!(f["observed"], "9");
    assert_keys(
        one(&fs, "suspect_terminal"),
        Some("3"),
        Some("5"),
        Some("2"),
    );
}

/// A result right after the cut, with nothing in between: one step short of the total is a
/// warning only when the progress showed its step (two values at least). A single value of 0.1
/// of 1 is not "one step short" by a step of 1 nobody saw: it stays an error.
#[test]
fn a_result_after_one_progress_value_is_not_one_step_short() {
    let tenth = Ev::id(1, progress(&token(), 1, 10));
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
        progress(&token(), 4, 5),
        progress(&token(), 5, 5),
        result(2)
    ]);
    let cap = cut_and_resume(5, End::CutFin, &[Ev::id(4, batch)]);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("resume_ok", "info")]);

    // The batch stops at progress 4 of 5 before the result: the progress went on from the
    // cursor by one step and stopped one short of its total, as a tool that reports each step
    // before doing it does (one step past the last value is a genuine continuation).
    let batch = json!([progress(&token(), 4, 5), result(2)]);
    let cap = cut_and_resume(5, End::CutFin, &[Ev::id(4, batch)]);
    assert_kinds(&findings(&cap), &[("resume_ok", "info")]);

    // Negative: progress 4 of 10 before the result, far short of the total.
    let batch = json!([progress(&token(), 4, 10), result(2)]);
    let cap = cut_and_resume(10, End::CutFin, &[Ev::id(4, batch)]);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("suspect_terminal", "error")]);
    assert!(one(&fs, "suspect_terminal")["detail"]
        .as_str()
        .unwrap()
        .contains("with 1 progress notification(s) in between"));
}

#[test]
fn missing_event_id() {
    // Id 4, then a progress event without an id line, then the result on id 5.
    let resumed = vec![prog(4, 4, 5), Ev::no_id(progress(&token(), 5, 5)), res(5)];
    let cap = cut_and_resume(5, End::CutFin, &resumed);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("missing_event_id", "error")]);
    assert_keys(one(&fs, "missing_event_id"), Some("3"), None, None);
}

#[test]
fn resume_rejected_and_lost_response() {
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &progs(1..=3, 1, 5), End::CutFin);
    resume(&mut cap, "3", &conflict());
    let fs = findings(&cap);
    assert_kinds(
        &fs,
        &[("lost_response", "error"), ("resume_rejected", "info")],
    );
    let f = one(&fs, "resume_rejected");
    assert_keys(f, Some("3"), None, None);
    assert_eq!(f["observed"], "HTTP 409");
    assert_keys(one(&fs, "lost_response"), None, None, Some("2"));
}

#[test]
fn a_response_with_an_unreadable_head_is_unverifiable_not_lost() {
    // The server answered, but its head does not parse (a field without a colon): the response
    // exists, whatever it said, so the request is unverifiable (info), not lost (error).
    let mut cap = Capture::new();
    handshake(&mut cap);
    let mut c = tools_call_conn(&mut cap);
    let mut body =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nno colon here\r\n\r\n".to_vec();
    body.extend_from_slice(res(1).text().as_bytes());
    c.server(&mut cap, &body);
    c.server_close(&mut cap);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("response_unverifiable", "info")]);
    // Nothing wrong was seen, but not everything could be: the session is not called intact.
    let sessions = table_csv(&cap, "sessions");
    let verdicts = csv_column(&sessions, "verdict");
    assert_eq!(verdicts, ["unverifiable"], "{sessions}");
}

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
    tools_call_stream(&mut cap, &progs(1..=3, 1, 5), End::Complete);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("lost_response", "error")]);
    assert_keys(one(&fs, "lost_response"), None, None, Some("2"));
}

/// A client that reuses a request id (MCP forbids it within a session) gets one response per
/// request: nothing reached it twice. The same id answered twice for one request still is a
/// duplicate.
#[test]
fn a_reused_request_id_answered_once_per_request_is_no_duplicate() {
    let call = |cap: &mut Capture, answers: usize| {
        let mut c = cap.connect();
        c.client(cap, &post(Some(SID), &tools_call(2, &token())));
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

#[test]
fn unknown_last_event_id() {
    let mut cap = Capture::new();
    healthy(&mut cap);
    resume(&mut cap, "999", &sse_response(None, &[], true));
    let fs = findings(&cap);
    assert_kinds(&fs, &[("unknown_last_event_id", "warning")]);
    assert_keys(one(&fs, "unknown_last_event_id"), Some("999"), None, None);
    assert_eq!(exit_status(&cap, "error"), 0);
    assert_eq!(exit_status(&cap, "warning"), 1);
}

/// A session whose first captured request already carried its `Mcp-Session-Id` began before
/// the capture: a cursor no captured stream delivered could have come from before it (info).
#[test]
fn an_unknown_cursor_of_a_session_older_than_the_capture_is_info() {
    let mut cap = Capture::new();
    resume(&mut cap, "999", &sse_response(None, &[], true));
    let fs = findings(&cap);
    assert_kinds(&fs, &[("unknown_last_event_id", "info")]);
    assert!(fs[0]["detail"]
        .as_str()
        .unwrap()
        .contains("the session began before the capture"));
    // Unless the cursor names a stream the capture saw (Go ids: its stream part): a warning.
    let go = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut cap = Capture::new();
    let evs: Vec<Ev> = (1..=3)
        .map(|i| Ev::id(format!("{go}_{i}"), progress(&token(), i, 10)))
        .collect();
    tools_call_stream(&mut cap, &evs, End::CutFin);
    resume(&mut cap, &format!("{go}_7"), &sse_response(None, &[], true));
    assert_kinds(
        &findings(&cap),
        &[
            ("lost_response", "error"),
            ("unknown_last_event_id", "warning"),
        ],
    );
    // A stream seen only after the resumption says nothing of the cursor before it: info (the
    // call, cut at the capture's end, is unverifiable).
    let mut cap = Capture::new();
    resume(&mut cap, &format!("{go}_7"), &sse_response(None, &[], true));
    tools_call_stream(&mut cap, &evs, End::CutFin);
    assert_kinds(
        &findings(&cap),
        &[
            ("response_unverifiable", "info"),
            ("unknown_last_event_id", "info"),
        ],
    );
    // A client looping on the cursor: each resumption is judged alike (the session's streams
    // are read once for all of them, not once each).
    let mut cap = Capture::new();
    tools_call_stream(&mut cap, &evs, End::CutFin);
    for _ in 0..40 {
        resume(&mut cap, &format!("{go}_7"), &sse_response(None, &[], true));
    }
    resume(
        &mut cap,
        "OTHERSTREAMABCDEFGHIJKLMNO_7",
        &sse_response(None, &[], true),
    );
    let fs = findings(&cap);
    let unknown: Vec<&str> = fs
        .iter()
        .filter(|f| f["kind"] == "unknown_last_event_id")
        .map(|f| f["severity"].as_str().unwrap())
        .collect();
    assert_eq!(unknown.len(), 41);
    assert!(unknown[..40].iter().all(|s| *s == "warning"));
    assert_eq!(unknown[40], "info");
}

/// A cursor the capture could have lost (a response of the session missed bytes before the
/// resumption) is not said to be invented: `unknown_last_event_id` is info, not a warning.
#[test]
fn an_unknown_cursor_after_a_capture_gap_is_info() {
    let mut cap = Capture::with_segment_size(60);
    handshake(&mut cap);
    let port = tools_call_stream(&mut cap, &progs(1..=3, 1, 5), End::CutFin);
    let data = cap.server_data_frames(port);
    // The segment with the end of the stream (event 3) is not in the capture; its FIN is.
    cap.lose(*data.last().unwrap());
    let mut resumed = progs(4..=5, 4, 5);
    resumed.push(res(6));
    resume(&mut cap, "3", &sse_response(None, &resumed, true));
    let fs = findings(&cap);
    assert_kinds(&fs, &[("unknown_last_event_id", "info")]);
    assert!(fs[0]["detail"]
        .as_str()
        .unwrap()
        .contains("the capture lost bytes"));
}

#[test]
fn duplicate_response() {
    // The POST stream delivers progress 1..5 and the result on id 6, then is cut
    // before its last chunk; the resumed stream continues at id 7 — with the
    // result of request 2 again. The ids continue (resume_ok); the response is doubled.
    let mut cap = Capture::new();
    handshake(&mut cap);
    let mut evs = progs(1..=5, 1, 5);
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
fn opaque_ids_with_progress_starting_over_are_a_fork() {
    // uuid ids (Python example store): the resumed connection re-runs the call under new ids,
    // progress 1, 2, … again. The ids cannot show the restart; the application counter does
    // (an id sequence that starts again is a fork: docs/resumption.md, "Forks").
    let uuid = |n: u64| format!("6f1c2a4e-0b7d-4c1e-9a3f-{n:012}");
    let mut cap = Capture::new();
    handshake(&mut cap);
    let first: Vec<Ev> = (1..=3).map(|i| prog(uuid(i), i, 5)).collect();
    tools_call_stream(&mut cap, &first, End::CutFin);
    let mut resumed: Vec<Ev> = (1..=5).map(|i| prog(uuid(100 + i), i, 5)).collect();
    resumed.push(res(uuid(106)));
    resume(&mut cap, &uuid(3), &sse_response(None, &resumed, true));
    // The same finding names the fork as for ids that show it themselves, with no backend to
    // explain it.
    let fs = findings(&cap);
    assert_kinds(
        &fs,
        &[("duplicate_delivery", "error"), ("id_restart", "error")],
    );
    let f = one(&fs, "id_restart");
    assert_eq!(f["event_id"], uuid(101).as_str(), "{}", pretty(&fs));
    assert!(f["detail"]
        .as_str()
        .is_some_and(|d| d.contains("cannot show the restart themselves")));
    let rs = resumptions_csv(&cap);
    assert!(
        rs.contains(",forked,") && rs.contains("progress started over"),
        "{rs}"
    );

    // Negative: the replay re-sends the cursor's progress once (as an inclusive replay does),
    // then goes on: a duplicate, not a fresh log.
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &first, End::CutFin);
    let mut resumed: Vec<Ev> = (3..=5).map(|i| prog(uuid(100 + i), i, 5)).collect();
    resumed.push(res(uuid(106)));
    resume(&mut cap, &uuid(3), &sse_response(None, &resumed, true));
    assert_kinds(&findings(&cap), &[("duplicate_delivery", "error")]);
    let rs = resumptions_csv(&cap);
    assert!(
        rs.contains(",resumed,") && !rs.contains("started over"),
        "{rs}"
    );
}

/// `notifications/message` on the standalone stream.
fn log_message() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}})
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
    tools_call_stream(&mut cap, &progs(1..=3, 1, 5), End::CutFin);
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
    tools_call_stream(&mut cap, &progs(1..=3, 1, 5), End::CutFin);
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
    tools_call_stream(&mut cap, &progs(1..=3, 1, 5), End::CutFin);
    resume(&mut cap, "3", &resumed);
    g.close(&mut cap);
    let fs = findings(&cap);
    assert_kinds(&fs, &[("id_gap", "error")]);
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
    c.server(&mut cap, &sse_response(None, &progs(1..=2, 1, 5), false));
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
    tools_call_stream(&mut cap, &progs(1..=3, 1, 5), End::CutFin);
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
    for ev in progs(1..=3, 1, 8) {
        cap.wait(1_000_000);
        c.server(&mut cap, &chunk(ev.text().as_bytes()));
    }
    c.server_close(&mut cap);
    cap.wait(1_000_000);
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), Some("3")));
    g.server(&mut cap, &sse_head(None));
    if live > 0 {
        for ev in progs(4..=3 + live, 4, 8) {
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

#[test]
fn fork_that_only_primes_is_a_regression() {
    // A fork: the replica without the buffer opens a fresh log. Here it only primes the resumed
    // connection (`id: 1`, empty data, `retry`) and closes it; the client's cursor regresses to
    // 1 and its next resumption gets the result as id 2. The first resumption is the fork.
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &progs(7..=12, 1, 10), End::CutFin);
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
    tools_call_stream(&mut cap, &progs(7..=9, 1, 5), End::CutFin);
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

#[test]
fn id_delivered_on_two_streams_links_the_cut_one() {
    // Ids counted per stream (not unique in the session, rust-sdk #791): request 2's stream
    // delivers 1, 2 and is cut; request 3's stream then delivers 1, 2 and its result as 3, and
    // ends. The GET with Last-Event-ID 2 resumes the broken stream of request 2 — not the most
    // recent one to deliver id 2.
    let t3 = json!("t3");
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &progs(1..=2, 1, 3), End::CutFin);
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
    let cut: Vec<&str> = anomalies
        .lines()
        .filter(|l| l.starts_with("detect.history_window,"))
        .collect();
    assert_eq!(cut.len(), 1, "{anomalies}");
    let resumptions = std::fs::read_to_string(out.join("resumptions.csv")).unwrap();
    let rows: Vec<&str> = resumptions.lines().skip(1).collect();
    assert_eq!(rows.len(), 69);
    let windowed = rows
        .iter()
        .filter(|l| l.contains("checked against the stream's last 256 events"))
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
        rows.iter().all(|l| l.contains(",resumed,")),
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
    assert_eq!(resumptions_csv(&cap).lines().count(), 1, "header only");
}

/// A JSON response cut short says why it was not parsed: bytes the capture missed, the
/// connection ending before the body's framing did, or the capture ending first.
#[test]
fn an_incomplete_json_body_says_why() {
    let detail = |end: &str| -> Vec<String> {
        let mut cap = Capture::new();
        handshake(&mut cap);
        let mut c = cap.connect();
        c.client(&mut cap, &post(Some(SID), &tools_call(2, &token())));
        c.server(
            &mut cap,
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"jsonrpc\":\"2.0\",",
        );
        if end == "reset" {
            c.server_reset(&mut cap);
        }
        table_csv(&cap, "anomalies")
            .lines()
            .filter_map(|l| l.strip_prefix("http.json_incomplete,"))
            .map(|l| l.splitn(3, ',').nth(2).unwrap_or_default().to_string())
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

/// A resumption whose request the capture lost (its GET segment missing) leaves an SSE response
/// without a request: its cursor is unknown, so the session is `unverifiable`, not `intact`.
#[test]
fn an_sse_response_without_its_request_makes_the_session_unverifiable() {
    let verdict = |lose_request: bool| {
        let mut cap = Capture::new();
        handshake(&mut cap);
        tools_call_stream(&mut cap, &progs(1..=3, 1, 5), End::CutFin);
        let mut resumed = progs(4..=5, 4, 5);
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
    tools_call_stream(&mut cap, &progs(1..=3, 1, 10), End::CutFin);
    resume(
        &mut cap,
        "3",
        &json_response(Some(SID), &json!({"jsonrpc": "2.0", "method": "x"})),
    );
    resume(
        &mut cap,
        "3",
        &sse_response(None, &progs(1..=2, 1, 10), true),
    );
    let rs = table_csv(&cap, "resumptions");
    assert!(
        rs.contains(",unverifiable,") && rs.contains(",forked,"),
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
