//! A finding cites as data (`Finding::cited`) exactly the frames its `detail` names, and its
//! first evidence: checked for every finding of every capture under `fixtures/`, each read
//! alone (the TLS captures with their key logs). One file of one vantage point holds every
//! frame then, so the `wireshark_filter` column, built from the citations, lists them all in
//! the tables' numbering; the frames the sentence names are read from it as a person reads
//! them ("frame 12", "frames 42 and 44", "frames 20, 33, 43", "frames 67–101", "frames 49..53",
//! "frames 25 to 106", "frames 27→28, 29→30": a range names its two ends). Frame 0 stands for a
//! frame not captured and is no citation.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The frame numbers a sentence names after the word `frame` or `frames`.
fn named(detail: &str) -> BTreeSet<u64> {
    const SEPARATORS: [&str; 8] = [", and ", ", ", " and ", " to ", "..", "–", "→", "-"];
    let mut out = BTreeSet::new();
    let mut rest = detail;
    while let Some(at) = rest.find("frame") {
        let word_start = rest[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric() && c != '_');
        rest = &rest[at + "frame".len()..];
        if !word_start {
            continue;
        }
        let Some(mut list) = rest.strip_prefix("s ").or_else(|| rest.strip_prefix(' ')) else {
            continue;
        };
        loop {
            let digits = list.bytes().take_while(u8::is_ascii_digit).count();
            let Ok(n) = list[..digits].parse::<u64>() else {
                break;
            };
            out.insert(n);
            list = &list[digits..];
            let next = SEPARATORS.iter().find_map(|s| {
                list.strip_prefix(s)
                    .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))
            });
            match next {
                Some(r) => list = r,
                None => break,
            }
        }
        rest = list;
    }
    out.remove(&0);
    out
}

/// Every pcap under `dir`, sorted.
fn captures(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            captures(&p, out);
        } else if p.extension().is_some_and(|e| e == "pcap" || e == "pcapng") {
            out.push(p);
        }
    }
}

/// The findings of `capture` read alone, with its key log (`<name>.keys`) when it has one.
fn findings(capture: &Path) -> Vec<Value> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpcap"));
    cmd.args(["analyze", "--format", "ndjson", "--fail-on", "never"]);
    let keys = capture.with_extension("keys");
    if keys.exists() {
        cmd.arg("--tls-keylog").arg(&keys);
    }
    let o = cmd.arg(capture).output().expect("run mcpcap");
    assert!(
        o.status.success(),
        "{}: {}",
        capture.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect()
}

#[test]
fn every_frame_a_detail_names_is_cited_and_nothing_else() {
    let mut all = Vec::new();
    captures(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
        &mut all,
    );
    assert!(all.len() > 50, "{} captures", all.len());
    let (mut checked, mut several) = (0, 0);
    for capture in &all {
        for f in findings(capture) {
            let detail = f["detail"].as_str().unwrap();
            let frame = f["frame"].as_u64().unwrap();
            let cited = common::filter_frames(f["wireshark_filter"].as_str().unwrap());
            let names = named(detail);
            let at = format!("{} {}: {detail}", capture.display(), f["kind"]);
            assert!(
                cited.contains(&frame),
                "first evidence {frame} not cited: {at}"
            );
            assert!(
                names.is_subset(&cited),
                "named {names:?}, cited {cited:?}: {at}"
            );
            let extra: Vec<&u64> = cited
                .iter()
                .filter(|n| **n != frame && !names.contains(n))
                .collect();
            assert!(extra.is_empty(), "cited {extra:?} not named: {at}");
            checked += 1;
            several += usize::from(cited.len() > 1);
        }
    }
    assert!(
        checked > 100 && several > 50,
        "{checked} findings, {several}"
    );
}

#[test]
fn the_reader_of_sentences_takes_lists_and_ranges() {
    let set = |v: &[u64]| v.iter().copied().collect::<BTreeSet<u64>>();
    assert_eq!(
        named("in frames 42 and 44: the client; frame 30) delivered"),
        set(&[30, 42, 44])
    );
    assert_eq!(
        named("(frames 27→28, 29→30, over 101 ms"),
        set(&[27, 28, 29, 30])
    );
    assert_eq!(
        named("(flow F7, frames 67–101) in frame 105"),
        set(&[67, 101, 105])
    );
    assert_eq!(named("(frames 49..53) were answered 409"), set(&[49, 53]));
    assert_eq!(
        named("frame_first 3, frames, frame x, reframe 4, frame 0"),
        set(&[])
    );
}
