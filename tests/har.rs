//! `mcpcap exchanges --format har`: the HAR 1.2 document against the tables of the same run
//! (one entry per `exchanges` row in order, its times, its session's page, its stream's verdict,
//! the `events` table's rows as `_sseEvents`), on a cleartext capture with a fork, one whose
//! stream lost a response, a TLS 1.3 capture read with its key log, and one that begins inside
//! responses; and every document validated against the HAR 1.2 JSON Schema in
//! `tests/har/har-1.2.schema.json` with Python's `jsonschema` (`tests/har/check.py`).
//!
//! The validator is a Python package: `.ci/run` installs it in the readers' virtual environment
//! and names its interpreter in `MCPCAP_READERS_PYTHON` (and sets `MCPCAP_REQUIRE_READERS`, so
//! that CI fails rather than skips). Elsewhere the test looks for that environment in
//! `~/.cache/mcpcap-venv`, then for `python3` with the package, and says so when it skips.

mod common;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The captures (and the options they are read with): (name, arguments).
fn cases() -> Vec<(&'static str, Vec<OsString>)> {
    let f = |rel: &str| root().join(rel).into_os_string();
    vec![
        ("fork_restart", vec![f("fixtures/mcp/fork_restart.pcap")]),
        ("lost_response", vec![f("fixtures/mcp/lost_response.pcap")]),
        (
            "tls13",
            vec![
                "--tls-keylog".into(),
                f("fixtures/mcp-tls/tls13.keys"),
                f("fixtures/mcp-tls/tls13.pcap"),
            ],
        ),
        (
            "resume_ok_ts_cut",
            vec![f("fixtures/mcp-cut/resume_ok_ts_cut.pcap")],
        ),
    ]
}

fn mcpcap(args: &[OsString]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(args)
        .output()
        .expect("run mcpcap")
}

/// `mcpcap <command> --format <format> ARGS`, which must succeed: its standard output.
fn stdout(command: &str, format: &str, args: &[OsString]) -> String {
    let mut all: Vec<OsString> = vec![command.into(), "--format".into(), format.into()];
    all.extend_from_slice(args);
    let o = mcpcap(&all);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{command} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The HAR document of `mcpcap exchanges --format har ARGS`.
fn har(args: &[OsString]) -> Value {
    serde_json::from_str(&stdout("exchanges", "har", args)).expect("the HAR document is JSON")
}

/// The rows of the single-table command `command` (`exchanges`, `events`) as NDJSON.
fn rows(command: &str, args: &[OsString]) -> Vec<Value> {
    stdout(command, "ndjson", args)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn entries(h: &Value) -> &Vec<Value> {
    h["log"]["entries"].as_array().expect("log.entries")
}

/// Microseconds since the Unix epoch of `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
fn us(ts: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| ts[r].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    // Days from the civil date (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19);
    secs * 1_000_000 + n(20..26)
}

/// `to - from` of two table times, in milliseconds.
fn ms(from: &Value, to: &Value) -> f64 {
    (us(to.as_str().unwrap()) - us(from.as_str().unwrap())) as f64 / 1000.0
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn the_date_parser_of_this_test_is_right() {
    assert_eq!(us("1970-01-01T00:00:00.000001Z"), 1);
    assert_eq!(us("2026-11-29T22:23:52.169000Z"), 1_795_991_032_169_000);
}

#[test]
fn every_entry_is_its_exchanges_row_in_order() {
    for (name, args) in cases() {
        let h = har(&args);
        let log = &h["log"];
        assert_eq!(log["version"], "1.2");
        assert_eq!(log["creator"]["name"], "mcpcap");
        assert_eq!(log["creator"]["version"], env!("CARGO_PKG_VERSION"));
        let rows = rows("exchanges", &args);
        let es = entries(&h);
        assert!(!rows.is_empty(), "{name}: exchanges");
        assert_eq!(es.len(), rows.len(), "{name}: one entry per exchange");
        for (e, r) in es.iter().zip(&rows) {
            let at = format!("{name} {}#{}", r["flow_id"], r["trans_depth"]);
            let mcp = &e["_mcp"];
            assert_eq!(e["connection"], r["flow_id"], "{at}");
            assert_eq!(mcp["flow_id"], r["flow_id"], "{at}");
            assert_eq!(mcp["trans_depth"], r["trans_depth"], "{at}");
            assert_eq!(mcp["session_id"], r["session_id"], "{at}");
            assert_eq!(e["pageref"], r["session_id"], "{at}");
            assert_eq!(mcp["frame_first"], r["frame_first"], "{at}");
            assert_eq!(mcp["frame_last"], r["frame_last"], "{at}");
            assert_eq!(mcp["jsonrpc_methods"], r["jsonrpc_methods"], "{at}");
            assert_eq!(mcp["jsonrpc_ids"], r["jsonrpc_ids"], "{at}");
            assert_eq!(mcp["sse_events"], r["sse_events"], "{at}");
            assert_eq!(e["startedDateTime"], r["ts"], "{at}");
            let (req, resp) = (&e["request"], &e["response"]);
            assert_eq!(req["method"], r["method"].as_str().unwrap_or(""), "{at}");
            assert_eq!(resp["status"], r["status"].as_u64().unwrap_or(0), "{at}");
            let mime = r["content_type"].as_str().unwrap_or("");
            assert_eq!(resp["content"]["mimeType"], mime, "{at}");
            let url = req["url"].as_str().unwrap();
            if let (Some(host), Some(target)) = (r["host"].as_str(), r["target"].as_str()) {
                assert!(url.ends_with(&format!("://{host}{target}")), "{at}: {url}");
                assert_eq!(req["bodySize"], r["request_body_len"], "{at}");
                assert_eq!(req["httpVersion"], "HTTP/1.1", "{at}");
            }
            if r["status"].is_u64() {
                assert_eq!(resp["bodySize"], r["response_body_len"], "{at}");
            }
            // Timings from the table's times, in ms; `time` is their sum.
            let t = &e["timings"];
            let (send, wait, receive) = (
                t["send"].as_f64().unwrap(),
                t["wait"].as_f64().unwrap(),
                t["receive"].as_f64().unwrap(),
            );
            let (req_ts, resp_ts, end) = (&r["ts_request"], &r["ts_response"], &r["ts_end"]);
            match (req_ts.is_string(), resp_ts.is_string()) {
                (true, true) => {
                    assert!(close(send, 0.0), "{at}");
                    assert!(close(wait, ms(req_ts, resp_ts)), "{at}: wait {wait}");
                }
                (false, true) => assert!(close(send, -1.0) && close(wait, -1.0), "{at}"),
                _ => assert!(close(wait, -1.0) && close(receive, -1.0), "{at}"),
            }
            if resp_ts.is_string() && end.is_string() {
                assert!(close(receive, ms(resp_ts, end)), "{at}: receive {receive}");
            }
            let sum: f64 = [send, wait, receive].iter().filter(|v| **v >= 0.0).sum();
            assert!(close(e["time"].as_f64().unwrap(), sum), "{at}: time");
            for k in ["blocked", "dns", "connect", "ssl"] {
                assert_eq!(t[k], -1.0, "{at}: {k}");
            }
        }
    }
}

/// The `events` table's rows of each exchange, by `flow_id#trans_depth`, in order.
fn events_by_exchange(args: &[OsString]) -> BTreeMap<String, Vec<Value>> {
    let mut by: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for r in rows("events", args) {
        let key = format!("{}#{}", r["flow_id"].as_str().unwrap(), r["trans_depth"]);
        by.entry(key).or_default().push(r);
    }
    by
}

#[test]
fn sse_events_are_the_events_tables_rows() {
    // The columns `_sseEvents` items have, as the events table has them.
    const SAME: [&str; 16] = [
        "ts",
        "frame_first",
        "frame_last",
        "offset",
        "has_own_id",
        "event_id",
        "event_type",
        "data_len",
        "retry",
        "priming",
        "truncated",
        "jsonrpc_kinds",
        "jsonrpc_methods",
        "jsonrpc_ids",
        "progress_token",
        "parse_error",
    ];
    for (name, args) in cases() {
        let h = har(&args);
        let mut by = events_by_exchange(&args);
        let total: usize = by.values().map(Vec::len).sum();
        assert!(total > 0, "{name}: events");
        let mut seen = 0;
        for e in entries(&h) {
            let key = format!(
                "{}#{}",
                e["connection"].as_str().unwrap(),
                e["_mcp"]["trans_depth"]
            );
            let want = by.remove(&key).unwrap_or_default();
            let got = e["_sseEvents"].as_array().cloned().unwrap_or_default();
            assert_eq!(got.len(), want.len(), "{name} {key}: events");
            for (g, w) in got.iter().zip(&want) {
                for k in SAME {
                    assert_eq!(g[k], w[k], "{name} {key} {k}");
                }
                assert_eq!(
                    g["progress"].as_f64(),
                    w["progress"].as_f64(),
                    "{name} {key}"
                );
                assert_eq!(g["stream_id"], Value::Null, "in _mcp, not repeated");
                assert_eq!(w["stream_id"], e["_mcp"]["stream_id"], "{name} {key}");
            }
            seen += got.len();
        }
        assert_eq!(seen, total, "{name}: every event is in an entry");
    }
}

#[test]
fn a_forked_stream_and_its_session_as_the_tables_give_them() {
    let args = &cases()[0].1;
    let h = har(args);
    let fixture = root().join("fixtures/mcp/fork_restart.pcap");
    let streams = common::ndjson_table(&[&fixture], "streams");
    let sessions = common::ndjson_table(&[&fixture], "sessions");
    // One page per session, its id the session's, started at its first exchange.
    let pages = h["log"]["pages"].as_array().unwrap();
    assert_eq!(pages.len(), sessions.len());
    for (p, s) in pages.iter().zip(&sessions) {
        assert_eq!(p["id"], s["session_id"]);
        assert_eq!(p["startedDateTime"], s["ts_first"]);
        assert_eq!(p["_verdict"], s["verdict"]);
        assert_eq!(p["_protocol_version"], s["protocol_version"]);
        assert_eq!(p["pageTimings"]["onLoad"], -1);
    }
    let sid = "94c9382d3c5d4ba5804e12128cde7174";
    assert_eq!(pages[0]["_verdict"], "broken");
    let es = entries(&h);
    // The session's 7 exchanges, and the proxy's legs of 7 of them (`hop_of`).
    let of_session = |hop: bool| {
        es.iter()
            .filter(|e| e["pageref"] == sid && e["_mcp"]["hop_of"].is_string() == hop)
            .count()
    };
    assert_eq!((of_session(false), of_session(true)), (7, 7));
    // Every entry of a stream has the streams table's verdict.
    let verdict: BTreeMap<&str, &Value> = streams
        .iter()
        .map(|s| (s["stream_id"].as_str().unwrap(), &s["verdict"]))
        .collect();
    for e in es {
        match e["_mcp"]["stream_id"].as_str() {
            Some(s) => assert_eq!(&e["_mcp"]["verdict"], verdict[s], "{s}"),
            None => assert_eq!(e["_mcp"]["verdict"], Value::Null),
        }
    }
    // S2 forked: its two connections carry its 29 events; ids as the events table has them.
    let s2: Vec<&Value> = es
        .iter()
        .filter(|e| e["_mcp"]["stream_id"] == "S2")
        .collect();
    assert_eq!(s2.len(), 2);
    assert!(s2.iter().all(|e| e["_mcp"]["verdict"] == "forked"));
    let ids: Vec<&Value> = s2
        .iter()
        .flat_map(|e| e["_sseEvents"].as_array().unwrap())
        .map(|ev| &ev["event_id"])
        .collect();
    let table: Vec<Value> = rows("events", args)
        .into_iter()
        .filter(|r| r["stream_id"] == "S2")
        .map(|r| r["event_id"].clone())
        .collect();
    assert_eq!(ids.len(), 29);
    assert_eq!(ids, table.iter().collect::<Vec<_>>());
    // The SSE response: its body is not kept, its headers are as sent.
    let get = s2[1];
    assert_eq!(get["request"]["method"], "GET");
    assert_eq!(get["response"]["content"]["mimeType"], "text/event-stream");
    assert!(get["response"]["content"].get("text").is_none());
    let last = get["_mcp"]["last_event_id"].as_str().unwrap();
    assert!(get["request"]["headers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| h["name"]
            .as_str()
            .unwrap()
            .eq_ignore_ascii_case("last-event-id")
            && h["value"] == last));
    // A POST: its body's type, no text.
    let post = &es[0];
    assert_eq!(post["request"]["method"], "POST");
    assert_eq!(post["request"]["postData"]["mimeType"], "application/json");
    assert!(post["request"]["postData"].get("text").is_none());
    assert_eq!(post["serverIPAddress"], "127.0.0.1");
}

#[test]
fn tls_connections_are_https_and_their_clear_leg_http() {
    let h = har(&cases()[2].1);
    let es = entries(&h);
    assert!(!es.is_empty());
    for e in es {
        let url = e["request"]["url"].as_str().unwrap();
        assert!(url.starts_with("https://"), "{url}");
        assert_eq!(e["_tls"]["sni"], "localhost");
        assert_eq!(e["_tls"]["alpn"], "http/1.1");
    }
    let clear = har(&[root()
        .join("fixtures/mcp-tls/tls13_clear.pcap")
        .into_os_string()]);
    let es = entries(&clear);
    assert!(!es.is_empty());
    for e in es {
        assert!(e["request"]["url"].as_str().unwrap().starts_with("http://"));
        assert!(e.get("_tls").is_none());
    }
}

/// A session whose `tools/call` POST is never answered: the capture ends while it is awaited.
fn unanswered_capture() -> PathBuf {
    let mut cap = common::Capture::new();
    common::handshake(&mut cap);
    let _open = common::tools_call_conn(&mut cap);
    let path = common::temp_path("har-unanswered", "pcap");
    std::fs::write(&path, cap.pcap()).unwrap();
    path
}

#[test]
fn what_the_capture_lacks_is_minus_one_not_invented() {
    let path = unanswered_capture();
    let h = har(&[path.clone().into_os_string()]);
    let last = entries(&h).last().unwrap().clone();
    assert_eq!(last["request"]["method"], "POST");
    assert_eq!(last["response"]["status"], 0);
    assert_eq!(last["response"]["bodySize"], -1);
    assert_eq!(last["response"]["headers"], serde_json::json!([]));
    assert_eq!(last["timings"]["send"], 0.0);
    assert_eq!(last["timings"]["wait"], -1.0);
    assert_eq!(last["timings"]["receive"], -1.0);
    assert_eq!(last["time"], 0.0);
    assert_eq!(last["_mcp"]["open_at_capture_end"], true);
    assert!(last["response"]["comment"]
        .as_str()
        .unwrap()
        .contains("capture ended"));
    let _ = std::fs::remove_file(&path);
    // A capture that begins inside responses: no request, no send or wait.
    let h = har(&cases()[3].1);
    let headless: Vec<&Value> = entries(&h)
        .iter()
        .filter(|e| e["request"]["method"] == "")
        .collect();
    assert!(!headless.is_empty());
    for e in headless {
        assert_eq!(e["request"]["bodySize"], -1);
        assert_eq!(e["timings"]["send"], -1.0);
        assert_eq!(e["timings"]["wait"], -1.0);
        assert!(e["timings"]["receive"].as_f64().unwrap() >= 0.0);
        assert!(e["request"]["url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"));
    }
}

#[test]
fn har_is_for_exchanges_only() {
    let cap = root().join("fixtures/mcp/fork_restart.pcap");
    for command in ["analyze", "events", "flows"] {
        let o = mcpcap(&[
            command.into(),
            "--format".into(),
            "har".into(),
            cap.clone().into_os_string(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{command}");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            "mcpcap: --format har is for `mcpcap exchanges` only\n",
            "{command}"
        );
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn with_out_the_document_is_dir_exchanges_har() {
    let args = &cases()[0].1;
    let dir = common::temp_path("har-out", "d");
    let mut all: Vec<OsString> = vec![
        "exchanges".into(),
        "--format".into(),
        "har".into(),
        "--out".into(),
        dir.clone().into_os_string(),
    ];
    all.extend_from_slice(args);
    let o = mcpcap(&all);
    assert_eq!(o.status.code(), Some(0));
    let file = std::fs::read_to_string(dir.join("exchanges.har")).unwrap();
    assert_eq!(file, stdout("exchanges", "har", args));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Python interpreter with `jsonschema`; the reason when there is none.
fn validator() -> Result<PathBuf, String> {
    common::python_with("jsonschema")
}

/// Run `tests/har/check.py` on `files`: (success, its output).
fn check(py: &Path, files: &[PathBuf]) -> (bool, String) {
    let o = Command::new(py)
        .arg(root().join("tests/har/check.py"))
        .arg(root().join("tests/har/har-1.2.schema.json"))
        .args(files)
        .output()
        .unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), out)
}

#[test]
fn every_document_is_valid_har_1_2() {
    let py = match validator() {
        Ok(p) => p,
        Err(missing) => return common::skip_without(&missing),
    };
    let unanswered = unanswered_capture();
    let mut all = cases();
    all.push(("unanswered", vec![unanswered.clone().into_os_string()]));
    let mut files = Vec::new();
    for (name, args) in &all {
        let path = common::temp_path(&format!("har-{name}"), "har");
        std::fs::write(&path, stdout("exchanges", "har", args)).unwrap();
        files.push(path);
    }
    let (ok, out) = check(&py, &files);
    assert!(ok, "{out}");
    eprint!("{out}");
    // The schema is no formality: an entry without its URL, or with a member HAR does not
    // define, is refused.
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    let entry = &mut doc["log"]["entries"][0];
    entry["request"].as_object_mut().unwrap().remove("url");
    entry["response"]["redirectUrl"] = "".into();
    let broken = common::temp_path("har-broken", "har");
    std::fs::write(&broken, doc.to_string()).unwrap();
    let (ok, out) = check(&py, std::slice::from_ref(&broken));
    assert!(!ok, "{out}");
    assert!(out.contains("'url' is a required property"), "{out}");
    assert!(out.contains("redirectUrl"), "{out}");
    for f in files.iter().chain([&broken, &unanswered]) {
        let _ = std::fs::remove_file(f);
    }
}
