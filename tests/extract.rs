//! `mcpcap extract`: the pcapng file it writes, read by tshark (frame count, timestamps,
//! comments on the cited frames) and analysed again by mcpcap (the same findings).
//!
//! Skipped, saying why, when tshark is missing, unless `MCPCAP_REQUIRE_READERS` is set.

mod common;
use common::ndjson_table;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mcpcap-extract-{}-{name}", std::process::id()))
}

fn extract(capture: &Path, select: &[&str], out: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .arg("extract")
        .arg(capture)
        .args(select)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `tshark -r file -T fields -e <field>`, one line per frame.
fn tshark(file: &Path, field: &str) -> Vec<String> {
    let o = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-T", "fields", "-e", field])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// (kind, severity, session_id, last_event_id, event_id, request_id) of each finding of
/// `session`.
fn judged(findings: &[Value], session: &str) -> BTreeSet<String> {
    findings
        .iter()
        .filter(|f| f["session_id"] == session)
        .map(|f| {
            format!(
                "{} {} {} {} {} {}",
                f["kind"],
                f["severity"],
                f["session_id"],
                f["last_event_id"],
                f["event_id"],
                f["request_id"]
            )
        })
        .collect()
}

#[test]
fn a_session_extract_has_its_connections_comments_and_findings() {
    if !common::have_all(&["tshark"]) {
        return;
    }
    let cap = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/fork_restart.pcap");
    let findings = ndjson_table(&[&cap], "findings");
    let session = findings[0]["session_id"].as_str().unwrap().to_string();
    // Every frame of every connection that carried an exchange of the session.
    let flows: HashSet<String> = ndjson_table(&[&cap], "exchanges")
        .iter()
        .filter(|e| e["session_id"] == session.as_str())
        .map(|e| e["flow_id"].as_str().unwrap().to_string())
        .collect();
    let packets: u64 = ndjson_table(&[&cap], "flows")
        .iter()
        .filter(|f| flows.contains(f["flow_id"].as_str().unwrap()))
        .map(|f| f["orig_pkts"].as_u64().unwrap() + f["resp_pkts"].as_u64().unwrap())
        .sum();
    let out = tmp("session.pcapng");
    extract(&cap, &["--session", &session], &out);
    let numbers = tshark(&out, "frame.number");
    assert_eq!(numbers.len() as u64, packets);
    assert!(packets > 20, "{packets}");
    // Original timestamps: the first frame of the extract is the first frame of its flows.
    let first_ts = tshark(&out, "frame.time_epoch")[0].clone();
    let ts_first = ndjson_table(&[&cap], "flows")
        .iter()
        .filter(|f| flows.contains(f["flow_id"].as_str().unwrap()))
        .map(|f| f["ts_first"].as_str().unwrap().to_string())
        .min()
        .unwrap();
    // `2026-11-29T22:24:28.002096Z` against `1796077468.002096000`: the microseconds agree.
    assert_eq!(
        &first_ts[first_ts.find('.').unwrap() + 1..][..6],
        &ts_first[20..26],
        "{first_ts} {ts_first}"
    );
    // A comment on each cited frame, naming every finding of the session.
    let comments: Vec<String> = tshark(&out, "frame.comment")
        .into_iter()
        .filter(|c| !c.is_empty())
        .collect();
    assert!(!comments.is_empty());
    let all = comments.join("\n");
    for (k, f) in findings.iter().enumerate() {
        if f["session_id"] == session.as_str() {
            let name = format!("mcpcap finding {}: {}", k + 1, f["kind"].as_str().unwrap());
            assert!(all.contains(&name), "{name} not in {all}");
        }
    }
    // Analysed again: the same findings.
    let again = ndjson_table(&[&out], "findings");
    assert_eq!(judged(&again, &session), judged(&findings, &session));
}

#[test]
fn a_finding_extract_comments_only_that_findings_frames() {
    if !common::have_all(&["tshark"]) {
        return;
    }
    let cap = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/fork_restart.pcap");
    let findings = ndjson_table(&[&cap], "findings");
    let out = tmp("finding.pcapng");
    extract(&cap, &["--finding", "1"], &out);
    let comments: Vec<String> = tshark(&out, "frame.comment")
        .into_iter()
        .filter(|c| !c.is_empty())
        .collect();
    let want = format!(
        "mcpcap finding 1: {} ({})",
        findings[0]["kind"].as_str().unwrap(),
        findings[0]["severity"].as_str().unwrap()
    );
    // The finding's frames: its filter's frames (the fixture is one file).
    let filter = findings[0]["wireshark_filter"].as_str().unwrap();
    let cited = filter.matches(',').count() + 1;
    assert_eq!(comments, vec![want; cited], "{filter}");
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(["extract", "--finding", "99"])
        .arg(&cap)
        .arg("--out")
        .arg(tmp("none.pcapng"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no finding 99"));
}

/// A display filter selecting the frames of the connections `ids` (`flow_id`s) of `flows`.
fn flows_filter(flows: &[Value], ids: &BTreeSet<String>) -> String {
    let one = |f: &Value| {
        format!(
            "(ip.addr == {} && ip.addr == {} && tcp.port == {} && tcp.port == {})",
            f["orig_h"].as_str().unwrap(),
            f["resp_h"].as_str().unwrap(),
            f["orig_p"],
            f["resp_p"]
        )
    };
    let parts: Vec<String> = flows
        .iter()
        .filter(|f| ids.contains(f["flow_id"].as_str().unwrap()))
        .map(one)
        .collect();
    assert_eq!(parts.len(), ids.len(), "{ids:?}");
    parts.join(" || ")
}

/// tshark's hex dump of the frames of `file` that `filter` selects (all without one), in order.
fn hex(file: &Path, filter: Option<&str>) -> String {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(file).arg("-x");
    if let Some(f) = filter {
        cmd.args(["-Y", f]);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The distinct comments of `file`'s frames (tshark joins a frame's comments with commas).
fn comment_set(file: &Path) -> BTreeSet<String> {
    tshark(file, "frame.comment")
        .iter()
        .flat_map(|c| c.split(','))
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

/// The comment naming finding `f` (a row of `findings`).
fn comment_of(f: &Value) -> String {
    format!(
        "mcpcap finding {}: {} ({})",
        f["finding"],
        f["kind"].as_str().unwrap(),
        f["severity"].as_str().unwrap()
    )
}

/// The findings citing one of `frames` (their filters list every cited frame: one file).
fn citing<'a>(findings: &'a [Value], frames: &BTreeSet<u64>) -> Vec<&'a Value> {
    findings
        .iter()
        .filter(|f| {
            let filter = f["wireshark_filter"].as_str().unwrap();
            let inner = &filter["frame.number in {".len()..filter.len() - 1];
            inner
                .split(", ")
                .any(|n| frames.contains(&n.parse::<u64>().unwrap()))
        })
        .collect()
}

#[test]
fn a_flow_extract_is_that_connections_frames_byte_for_byte() {
    if !common::have_all(&["tshark"]) {
        return;
    }
    let cap = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/fork_restart.pcap");
    let findings = ndjson_table(&[&cap], "findings");
    let flows = ndjson_table(&[&cap], "flows");
    // The connection of the first finding's first evidence, and one no finding names first.
    for id in ["F0", "F1"] {
        let out = tmp(&format!("flow-{id}.pcapng"));
        extract(&cap, &["--flow", id], &out);
        let filter = flows_filter(&flows, &BTreeSet::from([id.to_string()]));
        let row = flows.iter().find(|f| f["flow_id"] == id).unwrap();
        let packets = row["orig_pkts"].as_u64().unwrap() + row["resp_pkts"].as_u64().unwrap();
        assert_eq!(tshark(&out, "frame.number").len() as u64, packets, "{id}");
        assert_eq!(hex(&out, None), hex(&cap, Some(&filter)), "{id}");
        // Comments: the findings that cite a frame of the connection, each of them.
        let want: BTreeSet<String> = citing(&findings, &common::tshark_frames(&cap, &filter))
            .into_iter()
            .map(comment_of)
            .collect();
        assert_eq!(comment_set(&out), want, "{id}");
        assert_eq!(!want.is_empty(), id == "F0", "{id}: {want:?}");
    }
    let run = |flow: &str| {
        Command::new(env!("CARGO_BIN_EXE_mcpcap"))
            .args(["extract", "--flow", flow])
            .arg(&cap)
            .arg("--out")
            .arg(tmp("none.pcapng"))
            .output()
            .unwrap()
    };
    for (flow, says) in [
        ("F99", "no flow F99 in the capture"),
        ("X3", "--flow X3: not a flow id"),
    ] {
        let o = run(flow);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flow}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn selections_combine_into_the_union_of_their_connections() {
    if !common::have_all(&["tshark"]) {
        return;
    }
    let cap = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-gen/many_sessions.pcap");
    let findings = ndjson_table(&[&cap], "findings");
    let exchanges = ndjson_table(&[&cap], "exchanges");
    let flows = ndjson_table(&[&cap], "flows");
    let session = findings[0]["session_id"].as_str().unwrap();
    let flows_of = |s: &str| -> BTreeSet<String> {
        exchanges
            .iter()
            .filter(|e| e["session_id"] == s)
            .map(|e| e["flow_id"].as_str().unwrap().to_string())
            .collect()
    };
    // A connection of another session, and a third session whole.
    let other = findings[1]["session_id"].as_str().unwrap();
    let third = findings[2]["session_id"].as_str().unwrap();
    assert!(session != other && other != third && session != third);
    let flow = flows_of(other).into_iter().next().unwrap();
    let out = tmp("union.pcapng");
    extract(
        &cap,
        &["--finding", "1", "--flow", &flow, "--session", third],
        &out,
    );
    let mut union = flows_of(session);
    union.insert(flow.clone());
    union.extend(flows_of(third));
    let filter = flows_filter(&flows, &union);
    assert_eq!(hex(&out, None), hex(&cap, Some(&filter)));
    // Comments: finding 1, those citing the connection, and those of the third session.
    let mut want: BTreeSet<String> = citing(
        &findings,
        &common::tshark_frames(&cap, &flows_filter(&flows, &BTreeSet::from([flow.clone()]))),
    )
    .into_iter()
    .map(comment_of)
    .collect();
    want.insert(comment_of(&findings[0]));
    want.extend(
        findings
            .iter()
            .filter(|f| f["session_id"] == third)
            .map(comment_of),
    );
    assert_eq!(comment_set(&out), want);
    // Without a selection: one line, exit 2.
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .arg("extract")
        .arg(&cap)
        .arg("--out")
        .arg(tmp("none.pcapng"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("extract needs a selection"), "{err}");
}

#[test]
fn extract_help_shows_only_what_applies_to_extract() {
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(["extract", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    for absent in [
        "--format",
        "--all",
        "--fail-on",
        "--dump-streams",
        "csv/parquet",
    ] {
        assert!(!help.contains(absent), "{absent} in {help}");
    }
    for present in [
        "--out <FILE.pcapng>",
        "--finding <N>",
        "--session <ID>",
        "--flow <F>",
        "--tls-keylog",
    ] {
        assert!(help.contains(present), "{present} not in {help}");
    }
}

/// The Decryption Secrets Blocks of a pcapng file written on this machine: the key log text of
/// each (pcapng §4.7: type 0x0A, secrets type, length, data).
fn secrets_blocks(file: &Path) -> Vec<String> {
    let b = std::fs::read(file).unwrap();
    let u32_at = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().unwrap());
    let (mut at, mut out) = (0, Vec::new());
    while at + 12 <= b.len() {
        let (kind, len) = (u32_at(at), u32_at(at + 4) as usize);
        if kind == 0x0A {
            assert_eq!(u32_at(at + 8), 0x544c_534b, "a TLS key log");
            let n = u32_at(at + 12) as usize;
            out.push(String::from_utf8(b[at + 16..at + 16 + n].to_vec()).unwrap());
        }
        at += len.max(12);
    }
    out
}

/// An extract of a TLS capture carries the secrets of its connections, and only theirs: mcpcap
/// and tshark read it decrypted without the key log, and a one-connection extract holds that
/// connection's lines alone.
#[test]
fn a_tls_extract_carries_the_secrets_of_its_connections() {
    let cap = common::fixture_path("mcp-h2/h2_fork_client.pcap");
    let keys = common::fixture_path("mcp-h2/h2_fork_client.keys");
    let keylog = std::fs::read_to_string(&keys).unwrap();
    let keys_arg = keys.to_str().unwrap();
    let whole = tmp("tls-session.pcapng");
    extract(&cap, &["--finding", "1", "--tls-keylog", keys_arg], &whole);
    let blocks = secrets_blocks(&whole);
    assert_eq!(blocks.len(), 1);
    let mut lines: Vec<&str> = blocks[0].lines().collect();
    // (EXPORTER_SECRET decrypts nothing; it is not kept.)
    let decrypting = |l: &&str| !l.trim().is_empty() && !l.starts_with("EXPORTER_SECRET");
    let mut want: Vec<&str> = keylog.lines().filter(decrypting).collect();
    lines.sort_unstable();
    want.sort_unstable();
    assert_eq!(
        lines, want,
        "both connections' secrets, as the key log has them"
    );
    assert_eq!(want.len(), 8);
    // Read again without the key log: the same findings.
    let before = ndjson_table(
        &[cap.clone(), "--tls-keylog".into(), keys.clone()],
        "findings",
    );
    let after = ndjson_table(std::slice::from_ref(&whole), "findings");
    let session = before[0]["session_id"].as_str().unwrap();
    assert_eq!(judged(&after, session), judged(&before, session));
    assert!(!judged(&after, session).is_empty());
    // One connection: its four TLS 1.3 traffic secrets alone.
    let one = tmp("tls-flow.pcapng");
    extract(&cap, &["--flow", "F1", "--tls-keylog", keys_arg], &one);
    let blocks = secrets_blocks(&one);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].lines().count(), 4, "{}", blocks[0]);
    let random = blocks[0].split_whitespace().nth(1).unwrap();
    assert!(blocks[0].lines().all(|l| l.contains(random)));
    assert_eq!(
        keylog
            .lines()
            .filter(decrypting)
            .filter(|l| l.contains(random))
            .count(),
        4
    );
    // Without keys, no block.
    let plain = tmp("tls-nokeys.pcapng");
    extract(
        &common::fixture_path("mcp/fork_restart_client.pcap"),
        &["--finding", "1"],
        &plain,
    );
    assert!(secrets_blocks(&plain).is_empty());
    if common::have_all(&["tshark"]) {
        // tshark decrypts the extract's HTTP/2 with the block alone.
        let heads = tshark(&whole, "http2.header.value");
        assert!(heads
            .iter()
            .any(|h| h.contains("f87ae386a28e4720a3d9d128f1fae0dc")));
    }
    for f in [whole, one, plain] {
        let _ = std::fs::remove_file(f);
    }
}
