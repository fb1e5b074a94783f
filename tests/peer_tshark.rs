//! The peer test: mcpcap's reassembled bytes against tshark's Follow-TCP bytes, per
//! stream and direction, for every public capture in `../shared/corpus/public/` whose tshark
//! view is stored in `../shared/corpus/oracle/expected/`. Skipped when ../shared is absent.
//!
//! tshark's Follow TCP joins both sides of a gap with no filler, so mcpcap's bytes are compared
//! with its gaps left out. Accepted differences are listed, with the reason, in
//! `tests/peer_differences.tsv` (capture, stream, direction, reason).

mod oracle;

use std::collections::HashMap;
use std::path::PathBuf;

use oracle::{corpus, endpoint, pair, streams};

use mcpcap::anomaly::Anomalies;
use mcpcap::decode::{decode, Decoded};
use mcpcap::tcp::{Chunk, FlowMeta, FlowTable, ReassemblyLimits, StreamEvent, StreamSink};

/// Delivered bytes of one direction without gap filler, and its gaps as (position in those
/// bytes, length in sequence space).
type DirBytes = (Vec<u8>, Vec<(usize, u64)>);

#[derive(Default)]
struct Bytes {
    /// (flow, dir) → delivered bytes without gap filler, and the gaps as
    /// (position in those bytes, length in sequence space).
    dirs: HashMap<(usize, usize), DirBytes>,
}

impl StreamSink for Bytes {
    fn event(&mut self, flow: FlowMeta, ev: StreamEvent<'_>, _ts: i64, _frame: u64) {
        if let StreamEvent::Chunk(d, c) = ev {
            let e = self.dirs.entry((flow.index, d)).or_default();
            match c {
                Chunk::Data { bytes, .. } => e.0.extend_from_slice(bytes),
                Chunk::Gap { len, .. } => {
                    let at = e.0.len();
                    e.1.push((at, len));
                }
            }
        }
    }
}

/// Which known peer behaviour explains a difference, checked on the bytes themselves.
fn classify(mine: &[u8], gaps: &[(usize, u64)], theirs: &[u8]) -> Option<&'static str> {
    let first_gap = gaps.first()?.0;
    // tshark 4.0 Follow TCP writes `[N bytes missing in capture file]` and a NUL where bytes are
    // missing: the same bytes on both sides, and N equal to our gap length in sequence space.
    if theirs == with_markers(mine, gaps, gaps.len()) {
        return Some("gap_marker");
    }
    // ... and may stop after some marker, emitting nothing of the rest.
    if (1..gaps.len()).any(|k| theirs == with_markers(&mine[..gaps[k].0], gaps, k)) {
        return Some("gap_marker_then_stop");
    }
    // tshark's Follow TCP stops at the first capture gap: its bytes are exactly ours before it.
    if theirs == &mine[..first_gap] {
        return Some("tshark_stops_at_gap");
    }
    // tshark stops at a later gap: its bytes are ours up to that gap.
    if gaps.iter().any(|g| theirs == &mine[..g.0]) {
        return Some("tshark_stops_at_later_gap");
    }
    None
}

/// `mine` with tshark's marker in place of the first `k` gaps.
fn with_markers(mine: &[u8], gaps: &[(usize, u64)], k: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(mine.len() + 40 * k);
    let mut at = 0;
    for &(pos, len) in &gaps[..k] {
        out.extend_from_slice(&mine[at..pos]);
        out.extend_from_slice(format!("[{len} bytes missing in capture file]\0").as_bytes());
        at = pos;
    }
    out.extend_from_slice(&mine[at..]);
    out
}

/// Reassemble one capture with mcpcap's flow table; returns the table and the bytes per direction.
fn reassemble(data: &[u8]) -> (FlowTable, Bytes) {
    let mut table = FlowTable::new(ReassemblyLimits::default());
    let mut sink = Bytes::default();
    let mut anomalies = Anomalies::default();
    let _ = mcpcap::capture::read_capture(data, 1, &mut anomalies, |f| {
        if let Decoded::Tcp(seg) = decode(f.linktype, f.data, f.orig_len) {
            table.segment(&seg, f.ts, f.number, &mut sink);
        }
    });
    table.finish(&mut sink);
    (table, sink)
}

/// Accepted differences: (capture, stream, direction or `counts`) → reason.
fn accepted() -> HashMap<(String, String, String), String> {
    std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peer_differences.tsv"),
    )
    .unwrap_or_default()
    .lines()
    .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    .filter_map(|l| {
        let c: Vec<&str> = l.splitn(4, '\t').collect();
        (c.len() == 4).then(|| {
            (
                (c[0].to_string(), c[1].to_string(), c[2].to_string()),
                c[3].to_string(),
            )
        })
    })
    .collect()
}

/// The flows table's packets and bytes per direction against tshark's per-stream counts
/// (`-z conv,tcp` style: every packet, tcp.len summed with retransmissions).
#[test]
fn flow_counts_match_tshark() {
    let accepted = accepted();
    let (mut streams_checked, mut explained, mut mismatches) = (0, 0, Vec::new());
    for (name, dir, data) in corpus() {
        let (table, _) = reassemble(&data);
        let mut rows = streams(&dir);
        let flows = pair(&table, &mut rows);
        for (row, flow) in rows.iter().zip(flows) {
            let Some(fi) = flow else {
                mismatches.push(format!("{name} stream {}: no mcpcap flow", row.stream));
                continue;
            };
            let f = table.row(fi).expect("a flow of the table");
            let a = if endpoint(f.ends[0].0, f.ends[0].1) == row.a {
                0
            } else {
                1
            };
            let ours = (
                [f.packets[a], f.packets[1 - a]],
                [f.wire_bytes[a], f.wire_bytes[1 - a]],
            );
            streams_checked += 1;
            if ours != (row.packets, row.bytes) {
                if accepted.contains_key(&(name.clone(), row.stream.clone(), "counts".to_string()))
                {
                    explained += 1;
                    continue;
                }
                mismatches.push(format!("{name} stream {}: mcpcap packets {:?} bytes {:?}, tshark packets {:?} bytes {:?}", row.stream, ours.0, ours.1, row.packets, row.bytes));
            }
        }
    }
    println!(
        "flow counts: {streams_checked} streams checked, {explained} explained, {} differ",
        mismatches.len()
    );
    for m in &mismatches {
        println!("COUNT\t{m}");
    }
    assert!(mismatches.is_empty());
}

#[test]
fn reassembly_matches_tshark_follow_tcp() {
    let accepted = accepted();
    let (mut compared, mut identical, mut explained, mut differing) = (0, 0, 0, 0);
    let mut report = Vec::new();
    for (name, dir, data) in corpus() {
        let (table, sink) = reassemble(&data);
        let mut rows = streams(&dir);
        let flows = pair(&table, &mut rows);
        for (row, flow) in rows.iter().zip(flows) {
            for (label, from) in [("a2b", &row.a), ("b2a", &row.b)] {
                let theirs = std::fs::read(
                    dir.join("payload")
                        .join(format!("stream_{}.{label}.bin", row.stream)),
                )
                .unwrap_or_default();
                let (mine, gaps) = match flow {
                    Some(fi) => {
                        let f = table.row(fi).expect("a flow of the table");
                        let d = if endpoint(f.ends[0].0, f.ends[0].1) == *from {
                            0
                        } else {
                            1
                        };
                        sink.dirs.get(&(fi, d)).cloned().unwrap_or_default()
                    }
                    None => (Vec::new(), Vec::new()),
                };
                if theirs.is_empty() && mine.is_empty() {
                    continue;
                }
                compared += 1;
                if mine == theirs {
                    identical += 1;
                    continue;
                }
                let rule = classify(&mine, &gaps, &theirs);
                let k = (name.clone(), row.stream.clone(), label.to_string());
                match (accepted.get(&k), rule) {
                    (Some(reason), Some(r)) if reason.starts_with(r) => explained += 1,
                    _ => {
                        differing += 1;
                        let common = mine.iter().zip(&theirs).take_while(|(x, y)| x == y).count();
                        let gap_total: u64 = gaps.iter().map(|g| g.1).sum();
                        report.push(format!(
                            "{name}\t{}\t{label}\t{}\tmcpcap {} bytes (+{gap_total} in {} gaps, first at {:?}), tshark {} bytes (lost_segment {}), first difference at {common}",
                            row.stream,
                            rule.unwrap_or("?"),
                            mine.len(),
                            gaps.len(),
                            gaps.first().map(|g| g.0),
                            theirs.len(),
                            row.lost
                        ));
                    }
                }
            }
        }
    }
    println!("peer test: {compared} streams compared, {identical} identical, {explained} explained, {differing} differing");
    for r in &report {
        println!("DIFF\t{r}");
    }
    assert_eq!(differing, 0, "unexplained differences (see DIFF lines)");
}
