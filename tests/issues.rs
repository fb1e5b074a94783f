//! One test per public bug report reproduced in `fixtures/mcp-issues/` (made with the
//! published SDK versions named in its `NOTES.md`): each names the thread, and asserts the
//! findings (kind and severity, sorted) mcpcap must give the session the report is about.

mod common;
use common::*;

/// The findings of `fixtures/mcp-issues/<file>` for session `sid` (`none`: without a session
/// id), as sorted (kind, severity) pairs.
fn kinds(file: &str, sid: &str) -> Vec<(String, String)> {
    let fs = fixture_findings(&format!("mcp-issues/{file}"));
    let fs: Vec<_> = fs.into_iter().filter(|f| f["session_id"] == sid).collect();
    kinds_and_severities(&fs)
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = expected
        .iter()
        .map(|(k, s)| (k.to_string(), s.to_string()))
        .collect();
    v.sort();
    v
}

macro_rules! issue {
    ($name:ident, $file:literal, $sid:literal, [$(($k:literal, $s:literal)),*]) => {
        #[test]
        fn $name() {
            assert_eq!(kinds($file, $sid), pairs(&[$(($k, $s)),*]), "{}", $file);
        }
    };
}

// modelcontextprotocol/modelcontextprotocol PR #325, PrefectHQ/fastmcp #482: no affinity.
issue!(
    spec_pr_325_no_session_affinity_both_legs,
    "lb_no_affinity_py.pcap",
    "5443b2c732274d288242706de934d544",
    [("session_refused", "error")]
);
issue!(
    fastmcp_482_no_session_affinity_client_leg,
    "lb_no_affinity_py_client.pcap",
    "90d637a76029466298901165b981c675",
    [("session_refused", "error")]
);
// python-sdk #1004: a lost session answered 400.
issue!(
    python_sdk_1004_lost_session_answered_400,
    "session_400_py.pcap",
    "63ce5302fb2544258e8597f0b37e93ce",
    [
        ("nonstandard_session_status", "warning"),
        ("stale_session_reuse", "warning")
    ]
);
// typescript-sdk #389: the example server answers 400.
issue!(
    typescript_sdk_389_example_server_answers_400,
    "session_400_ts_example.pcap",
    "00020030-9c98-42cd-a70e-963c7c6957db",
    [
        ("nonstandard_session_status", "warning"),
        ("stale_session_reuse", "warning")
    ]
);
// python-sdk #1676: a client that never re-initialises.
issue!(
    python_sdk_1676_dead_session_reused,
    "stale_session_py.pcap",
    "4004a0ec0ab24599ba7982594a4daaff",
    [("stale_session_reuse", "warning")]
);
// typescript-sdk #1708 / #1476: five 404s before re-initialising are a warning.
issue!(
    typescript_sdk_1708_reuse_before_reinitialize,
    "stale_then_reinit_ts.pcap",
    "72fd2375-bac6-45e0-b339-f5ec67f11ad6",
    [("stale_session_reuse", "warning")]
);
// python-sdk #3441 / #1577: the server died mid-call.
issue!(
    python_sdk_3441_server_died_mid_call,
    "server_died_mid_call_py.pcap",
    "27bbcba0a4f04408bfa0c89e64f9cb7b",
    [
        ("connection_refused", "warning"),
        ("lost_response", "error")
    ]
);
// rust-sdk #958: an empty 200 to each resume, and the response lost.
issue!(
    rust_sdk_958_empty_resume_loop,
    "empty_resume_loop_rmcp.pcap",
    "147edbb5-ca47-4468-86b9-93f2cd5f3397",
    [("empty_resume_loop", "warning"), ("lost_response", "error")]
);
// typescript-sdk #2769: an empty id line ignored.
issue!(
    typescript_sdk_2769_empty_id_ignored,
    "empty_id_reset_ts.pcap",
    "a4bb5191875c4eb1aa996bfa76d3781d",
    [
        ("cursor_reset_ignored", "warning"),
        ("duplicate_delivery", "error")
    ]
);
// typescript-sdk #2433: two requests in flight with one id.
issue!(
    typescript_sdk_2433_duplicate_request_id,
    "dup_request_id_ts.pcap",
    "809626ae-fb85-438d-9d68-a208899921d5",
    [
        ("duplicate_request_id", "error"),
        ("lost_response", "error")
    ]
);
// python-sdk #3060: the same on the Python server.
issue!(
    python_sdk_3060_duplicate_request_id,
    "dup_request_id_py.pcap",
    "3e5619e4d9a94766a652ae158cbd5a8f",
    [
        ("duplicate_request_id", "error"),
        ("lost_response", "error")
    ]
);
// python-sdk #3492: a stateless server's silent standalone GET.
issue!(
    python_sdk_3492_stateless_get_hangs,
    "stateless_get_hang_py.pcap",
    "none",
    [("dead_listen_stream", "warning")]
);
// typescript-sdk #943: a resumed standalone stream orphaned by the example store.
issue!(
    typescript_sdk_943_resumed_stream_orphaned,
    "get_resume_dead_ts.pcap",
    "70d45d2f-33f2-4d23-b512-26d235ea1a52",
    [("resume_orphaned", "warning")]
);
// typescript-sdk #2098: a zombie stream behind a proxy answers reconnects 409.
issue!(
    typescript_sdk_2098_zombie_stream_409,
    "zombie_get_409_ts.pcap",
    "af86df98-6627-4b6e-a38f-a7113ba9940b",
    [
        ("lost_in_transit", "error"),
        ("stale_stream_conflict", "warning")
    ]
);
// python-sdk #3257: the client reopens an empty standalone stream for ever.
issue!(
    python_sdk_3257_listen_reconnect_loop,
    "get_reconnect_loop_py.pcap",
    "c2006e160986409da72923ce7321b9b8",
    [("listen_reconnect_loop", "warning")]
);
// typescript-sdk #2499: a resumed stream broken again, then bare GETs answered 409.
issue!(
    typescript_sdk_2499_resume_without_cursor,
    "resume_without_cursor_409_ts.pcap",
    "d110cfc1-026e-4b13-87b5-39a2f9c3ba30",
    [
        ("lost_response", "error"),
        ("resume_without_cursor", "warning")
    ]
);

/// The connection that broke last was the resumption GET, not the POST: the detail names it,
/// and says how the cursor-less GETs after it were answered (409, frames 49 and 53).
#[test]
fn typescript_sdk_2499_detail_names_the_resumption_and_the_409s() {
    let fs = fixture_findings("mcp-issues/resume_without_cursor_409_ts.pcap");
    let f = fs
        .iter()
        .find(|f| f["kind"] == "resume_without_cursor")
        .expect("resume_without_cursor");
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("The resumption GET (Last-Event-ID 7a92696a-3d52-4add-b2c4-3da13f7a4895_1796000050585_ab4wlyjg) of the POST response stream on flow F1 ended in frame 43"),
        "{detail}"
    );
    assert!(
        detail.ends_with("and 2 GETs without a cursor (frames 49..53) were answered 409."),
        "{detail}"
    );
}

/// rust-sdk #958: each empty 200 to the resume showed no event after the cursor, so none is a
/// `gap`; the loss is the stream's (`lost_response`) and the loop's (`empty_resume_loop`).
#[test]
fn rust_sdk_958_empty_answers_are_not_gaps() {
    let out = temp_path("rmcp958", "d");
    write_csv_tables(
        &fixture_path("mcp-issues/empty_resume_loop_rmcp.pcap"),
        &out,
    );
    let text = std::fs::read_to_string(out.join("resumptions.csv")).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    let verdicts = csv_column(&text, "verdict");
    assert_eq!(verdicts.len(), 8, "{text}");
    assert!(verdicts.iter().all(|v| v == "unverifiable"), "{verdicts:?}");
}
