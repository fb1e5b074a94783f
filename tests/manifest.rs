//! Every capture of the MCP corpus against its MANIFEST.json expectations.
//!
//! Runs the real binary on each capture listed in `MANIFEST.json` — from
//! `../shared/corpus/mcp/` when it exists (CI has it) and always from the
//! copy in `fixtures/mcp/` — and asserts, per session, exactly the expected
//! finding kinds (with their event ids), and no other error or warning than
//! the expected and the `also_acceptable` ones. Where the capture also holds
//! the backend legs of a proxy, the client-facing ports are passed with `--port`,
//! unless the entry says `"needs_both_legs": true` (a detector comparing the legs), and its
//! key log with `--tls-keylog` when the entry names one (`"tls_keylog"`);
//! and the same findings must come out without `--port`, the backend legs being
//! recognised as hops of the client's exchanges.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn run(dir: &Path, entry: &Value) -> Vec<Value> {
    run_ports(dir, entry, true)
}

/// Run the binary on one capture; with `filter`, pass the client-facing ports as `--port` when the
/// capture also holds other legs.
fn run_ports(dir: &Path, entry: &Value, filter: bool) -> Vec<Value> {
    let file = dir.join(entry["file"].as_str().unwrap());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpcap"));
    cmd.args(["analyze", "--format", "ndjson", "--fail-on", "never"]);
    let ports: Vec<u64> = entry["ports"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    let client: Vec<u64> = entry["client_facing_ports"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    // `needs_both_legs`: the finding compares a proxy's two legs (buffered_delivery).
    let both = entry["needs_both_legs"].as_bool().unwrap_or(false);
    if filter && ports.len() > client.len() && !both {
        for p in &client {
            cmd.args(["--port", &p.to_string()]);
        }
    }
    // `tls_keylog`: the capture's key log, beside it.
    if let Some(keys) = entry.get("tls_keylog").and_then(Value::as_str) {
        cmd.arg("--tls-keylog").arg(dir.join(keys));
    }
    cmd.arg(&file);
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // Nothing on stderr but the note that TLS was not decrypted (a capture without its keys).
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .all(|l| l.contains("carried application data that was not decrypted")),
        "{}: unexpected stderr {stderr}",
        file.display(),
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The manifest's value of a detail as a finding column would show it (ids are strings, request ids compact JSON).
fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Findings the wire proves that a manifest of `../shared/corpus/mcp` predates (its copy in
/// `fixtures/mcp/` lists them): (capture, kind, why).
const NEWER_THAN_MANIFEST: &[(&str, &str, &str)] = &[(
    "json_mode.pcap",
    "dead_listen_stream",
    "the stateless TS SDK server answers the standalone GET 200 and never writes to it",
)];

fn check_dir(dir: &Path) -> usize {
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("MANIFEST.json")).unwrap()).unwrap();
    let mut checked = 0;
    for entry in manifest.as_array().unwrap() {
        let name = entry["file"].as_str().unwrap();
        let findings = run(dir, entry);
        // `--port` is not needed: the legs of a proxy are one exchange's hops.
        let ports = entry["ports"].as_array().map_or(0, Vec::len);
        let client = entry["client_facing_ports"].as_array().map_or(0, Vec::len);
        if ports > client {
            let unfiltered = run_ports(dir, entry, false);
            let kinds = |fs: &[Value]| {
                let mut v: Vec<(String, String, String)> = fs
                    .iter()
                    .map(|f| {
                        (
                            f["session_id"].to_string(),
                            f["kind"].to_string(),
                            f["last_event_id"].to_string(),
                        )
                    })
                    .collect();
                v.sort();
                v
            };
            assert_eq!(
                kinds(&findings),
                kinds(&unfiltered),
                "{name}: findings differ with and without --port"
            );
        }
        for session in entry["sessions"].as_array().unwrap() {
            let sid = session["session_id"].as_str().unwrap_or("none");
            let got: Vec<&Value> = findings.iter().filter(|f| f["session_id"] == sid).collect();
            let expected: Vec<&Value> = session["expected"].as_array().unwrap().iter().collect();
            let mut acceptable: Vec<&str> = session
                .get("also_acceptable")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|e| e["kind"].as_str()).collect())
                .unwrap_or_default();
            acceptable.extend(
                NEWER_THAN_MANIFEST
                    .iter()
                    .filter(|(file, ..)| *file == name)
                    .map(|&(_, kind, _)| kind),
            );
            let mut want: BTreeMap<&str, usize> = BTreeMap::new();
            for e in &expected {
                *want.entry(e["kind"].as_str().unwrap()).or_default() += 1;
            }
            // Exactly the expected count of each expected kind, plus at most as many more as
            // `also_acceptable` lists of that kind.
            for (kind, n) in &want {
                let have = got.iter().filter(|f| f["kind"] == *kind).count();
                let extra = acceptable.iter().filter(|k| *k == kind).count();
                assert!(have >= *n && have <= n + extra, "{name} session {sid}: {kind}: {have} found, {n} expected (+{extra} acceptable): {got:#?}");
            }
            // Each expected finding's ids match one finding of its kind.
            for e in &expected {
                let d = &e["details"];
                let matches = got.iter().any(|f| {
                    f["kind"] == e["kind"]
                        && d.get("last_event_id")
                            .or(d.get("resume_last_event_id"))
                            .is_none_or(|l| f["last_event_id"] == *l)
                        && d.get("first_event_id")
                            .or(d.get("event_id"))
                            .is_none_or(|i| f["event_id"] == *i)
                        && d.get("request_id")
                            .is_none_or(|r| f["request_id"] == Value::String(as_text(r)))
                        && e.get("severity").is_none_or(|s| f["severity"] == *s)
                });
                assert!(
                    matches,
                    "{name} session {sid}: no finding matches {e:#}\ngot {got:#?}"
                );
            }
            // No other error or warning.
            for f in &got {
                let kind = f["kind"].as_str().unwrap();
                if f["severity"] != "info" {
                    assert!(
                        want.contains_key(kind) || acceptable.contains(&kind),
                        "{name} session {sid}: unexpected {kind}: {f:#}"
                    );
                }
            }
            checked += 1;
        }
        // No error or warning outside the manifest's sessions.
        let sessions: Vec<&str> = entry["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["session_id"].as_str().unwrap_or("none"))
            .collect();
        for f in &findings {
            if f["severity"] != "info" {
                assert!(
                    sessions.contains(&f["session_id"].as_str().unwrap()),
                    "{name}: finding in an unlisted session: {f:#}"
                );
            }
        }
    }
    checked
}

#[test]
fn fixtures_manifest() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp");
    let n = check_dir(&dir);
    assert!(n >= 9, "only {n} sessions checked");
}

/// Real SDK versions reproducing public bug reports (`fixtures/gen/issues/`): sessions refused
/// behind a balancer without affinity, lost sessions answered 400, a server killed mid-call,
/// crossed request ids, stateless and orphaned listen streams, a zombie stream behind a proxy,
/// and their negatives; every expected finding with its severity.
#[test]
fn issue_fixtures_manifest() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-issues");
    let n = check_dir(&dir);
    assert!(n >= 23, "only {n} sessions checked");
}

/// More captures made with the corpus generator (`../shared/corpus/mcp/gen`, same versions):
/// Python and TS SDK resumptions at other cut points, two runs where the Python SDK lost a
/// progress notification between replay and live tail, ten concurrent TS sessions with three
/// cuts, a server restart answered by 404s, a fork followed by a second reconnect to the
/// original replica, loss and reordering between two network namespaces, the 2026-07-28
/// (sessionless) protocol, a TS call that times out after one clean resumption (its cancel races
/// the result), and the Python client resuming twice from one cursor after its resumed stream
/// broke (the replay delivered twice).
#[test]
fn generated_fixtures_manifest() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-gen");
    let n = check_dir(&dir);
    assert!(n >= 20, "only {n} sessions checked");
}

/// Captures of the official Rust SDK (rmcp 3.11.0) made for this project: healthy, a resumption
/// whose replay re-sends the cursor event, a server restart answered by 404s, and a late resume
/// answered by an empty 200 stream. Expectations written from the wire, event by event.
#[test]
fn rmcp_fixtures_manifest() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-rmcp");
    assert_eq!(check_dir(&dir), 4);
}

#[test]
fn shared_corpus_manifest() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/mcp");
    if !dir.join("MANIFEST.json").exists() {
        eprintln!("../shared/corpus/mcp not present; skipped");
        return;
    }
    let n = check_dir(&dir);
    assert!(n >= 9, "only {n} sessions checked");
}

/// Real-SDK captures of the failure signatures and their negatives (`fixtures/gen/ts-py/`):
/// planned polling by the TS and Python SDK servers, a TS client reusing a dead session and one
/// re-initialising, nginx idle cuts and keep-alives, nginx buffering with both legs captured, the
/// TS client's resume without cursor, and a broken 2026-07-28 stream.
#[test]
fn sdk_fixtures_manifest() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-sdk");
    assert!(check_dir(&dir) >= 10);
}

/// Fault-injection captures (`fixtures/gen/faults/`, `fixtures/gen/rmcp/`): an event written
/// twice, the "everything" server replaying another stream, a store shared across sessions, rmcp's
/// empty-resume loop and shadow GET stream, and their negatives.
#[test]
fn fault_fixtures_manifest() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-faults");
    assert!(check_dir(&dir) >= 7);
}

/// Healthy traffic of every protocol revision (`fixtures/gen/eras/`): the legacy HTTP+SSE
/// transport (Python and TS SDKs), Streamable HTTP negotiated at 2024-11-05, 2025-03-26,
/// 2025-06-18 and 2025-11-25, and a stateless server — no error or warning on any.
#[test]
fn era_fixtures_manifest() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-eras");
    assert!(check_dir(&dir) >= 10);
}

/// The faulty server with the event-id formats of real SDK stores (`fixtures/gen/idfmt`): a
/// synthesized continuation after a cut at the priming event (uuid4 and Go ids), a synthesized
/// continuation with a fabricated result (rmcp and Redis-style ids), forks (Java ids, which cannot
/// show order; C# ids, which restart; integers that jump ahead), a plain resumption (TS ids), a 409
/// (Go) and a lost response (C#).
#[test]
fn id_format_fixtures_manifest() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-idfmt");
    assert!(check_dir(&dir) >= 10);
}

/// Captures that begin in the middle of SSE responses (`fixtures/mcp-cut/`, other fixtures with
/// their first frames removed): forks (integer ids, and Java ids whose fresh log shows only in
/// progress that starts over), a synthesized continuation (with its made-up result), a
/// cross-session replay and a cross-stream replay proven from streams whose requests and heads
/// were not captured, and their negatives — a healthy
/// resumption, sessions sending byte-identical progress, the legacy transport's GET stream
/// without its `endpoint` event.
#[test]
fn cut_fixtures_manifest() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-cut");
    assert!(check_dir(&dir) >= 12);
}

/// MCP over TLS (`fixtures/gen/tls/`, `fixtures/gen/h2/`): the Python SDK behind a TLS proxy
/// (TLS 1.3 and 1.2), the TS SDK server on Node https with a resumption, each with its key log,
/// its embedded-secrets copy and its cleartext twin; without keys nothing of MCP is seen and
/// the `undecrypted_tls` warning is the only one.
#[test]
fn tls_fixtures_manifest() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-tls");
    assert!(check_dir(&dir) >= 7);
}

/// HTTP/2 through nginx (`fixtures/gen/h2/`): TLS 1.3 with ALPN h2 on the client leg, the TS
/// SDK client over undici, the fork scenario (both legs, and the client leg alone: the fork is
/// seen from the client's side, its resumption a new stream of another open connection) and a
/// healthy session; with the key log and from the embedded secrets.
#[test]
fn h2_fixtures_manifest() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-h2");
    assert_eq!(check_dir(&dir), 6);
}

/// HTTP/2 from the Python SDK on hypercorn (`fixtures/gen/h2py/`): h2c by prior knowledge, h2
/// over TLS, curl's h2c upgrades (one answered in HTTP/1.1), a reset stream resumed on a new
/// stream of the same connection, a planned poll, a lost response, and the HTTP/1.1 twin.
#[test]
fn h2py_fixtures_manifest() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-h2py");
    assert!(check_dir(&dir) >= 9);
}
