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

fn tshark_missing() -> bool {
    let ok = Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var_os("MCPCAP_REQUIRE_READERS").is_some() {
            panic!("MCPCAP_REQUIRE_READERS is set, but tshark is not found");
        }
        eprintln!("skipped: tshark not found (apt-get install tshark)");
    }
    !ok
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
    if tshark_missing() {
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
    if tshark_missing() {
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
