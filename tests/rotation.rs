//! Rotated captures (`tcpdump -C/-G`): a capture split into files, given in any order or as a
//! directory, is one vantage point and gives the same tables as the whole file — flows continue
//! from one file into the next. (Only the `vantages` and `files` tables, which list the files,
//! differ.)

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use mcpcap::report::TABLE_NAMES as TABLES;

/// Split a classic pcap after every `n` records into files `<dir>/part<k>.pcap`.
fn split(pcap: &[u8], n: usize, dir: &Path) -> Vec<PathBuf> {
    let big = pcap[..4] == [0xa1, 0xb2, 0xc3, 0xd4] || pcap[..4] == [0xa1, 0xb2, 0x3c, 0x4d];
    let u32_at = |i: usize| {
        let b = [pcap[i], pcap[i + 1], pcap[i + 2], pcap[i + 3]];
        if big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    std::fs::create_dir_all(dir).unwrap();
    let (header, mut i) = (&pcap[..24], 24);
    let mut parts: Vec<Vec<u8>> = Vec::new();
    let mut count = 0;
    while i + 16 <= pcap.len() {
        let len = 16 + u32_at(i + 8) as usize;
        if count % n == 0 {
            parts.push(header.to_vec());
        }
        parts
            .last_mut()
            .unwrap()
            .extend_from_slice(&pcap[i..i + len]);
        i += len;
        count += 1;
    }
    parts
        .into_iter()
        .enumerate()
        .map(|(k, bytes)| {
            let p = dir.join(format!("part{k:02}.pcap"));
            std::fs::write(&p, bytes).unwrap();
            p
        })
        .collect()
}

/// Every table but `vantages` and `files` (which list the files read) as CSV text; `port`
/// filters.
fn tables(args: &[&Path], out: &Path, port: Option<&str>) -> Vec<String> {
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(["analyze", "--format", "csv", "--fail-on", "never", "--out"])
        .arg(out)
        .args(port.map(|p| vec!["--port", p]).unwrap_or_default())
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    TABLES
        .iter()
        .filter(|t| !matches!(**t, "vantages" | "files"))
        .map(|t| {
            let text = std::fs::read_to_string(out.join(format!("{t}.csv"))).unwrap();
            if *t == "findings" {
                // Its last two columns, `file` and `wireshark_filter`, name the file.
                text.lines().map(|l| without_last_two(l) + "\n").collect()
            } else {
                text
            }
        })
        .collect()
}

/// A CSV line without its last two fields (quotes respected).
fn without_last_two(line: &str) -> String {
    let mut ends = Vec::new();
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => ends.push(i),
            _ => {}
        }
    }
    line[..ends[ends.len() - 2]].to_string()
}

#[test]
fn split_capture_gives_the_same_tables() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let whole = root.join("fixtures/mcp/fork_restart.pcap");
    let base = std::env::temp_dir().join(format!("mcpcap-rotation-{}", std::process::id()));
    let parts = split(&std::fs::read(&whole).unwrap(), 40, &base.join("parts"));
    assert!(parts.len() >= 5);
    // The client leg alone, and both legs of the proxy.
    for port in [Some("3300"), None] {
        let expected = tables(&[&whole], &base.join("whole"), port);
        // Reversed order on the command line.
        let reversed: Vec<&Path> = parts.iter().rev().map(PathBuf::as_path).collect();
        assert_eq!(tables(&reversed, &base.join("rev"), port), expected);
        // The directory.
        assert_eq!(
            tables(&[&base.join("parts")], &base.join("dir"), port),
            expected
        );
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// The times of a classic little-endian microsecond pcap's records, as the tables write them.
fn record_times(pcap: &[u8]) -> Vec<String> {
    assert_eq!(pcap[..4], [0xd4, 0xc3, 0xb2, 0xa1]);
    let u32_at = |i: usize| u32::from_le_bytes([pcap[i], pcap[i + 1], pcap[i + 2], pcap[i + 3]]);
    let (mut i, mut out) = (24, Vec::new());
    while i + 16 <= pcap.len() {
        let us = i64::from(u32_at(i)) * 1_000_000 + i64::from(u32_at(i + 4));
        out.push(mcpcap::report::format_ts(us));
        i += 16 + u32_at(i + 8) as usize;
    }
    out
}

/// `files` says where each file's frames are in the `frame` columns: the ranges run on in the
/// order read, and frame `n` is record `n - frame_first + 1` of the file whose range holds it.
#[test]
fn files_table_maps_frames_to_files() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let whole = std::fs::read(root.join("fixtures/mcp/fork_restart.pcap")).unwrap();
    let base = std::env::temp_dir().join(format!("mcpcap-files-{}", std::process::id()));
    let parts = split(&whole, 40, &base.join("parts"));
    let out = base.join("out");
    // Reversed on the command line: they are read in time order.
    let reversed: Vec<&Path> = parts.iter().rev().map(PathBuf::as_path).collect();
    tables(&reversed, &out, None);
    let csv = |t: &str| -> Vec<BTreeMap<String, String>> {
        let text = std::fs::read_to_string(out.join(format!("{t}.csv"))).unwrap();
        assert!(!text.contains('"'), "{t}: quoted cells");
        let (header, records) = common::csv_records(&text);
        for r in &records {
            assert_eq!(r.len(), header.len());
        }
        common::csv_rows(&text)
    };
    let files = csv("files");
    assert_eq!(files.len(), parts.len());
    let mut next = 1u64;
    let mut ranges = Vec::new();
    for (row, part) in files.iter().zip(&parts) {
        assert_eq!(row["file"], part.display().to_string());
        assert_eq!(row["vantage"], "v1");
        let bytes = std::fs::read(part).unwrap();
        let times = record_times(&bytes);
        let (first, last, frames): (u64, u64, u64) = (
            row["frame_first"].parse().unwrap(),
            row["frame_last"].parse().unwrap(),
            row["frames"].parse().unwrap(),
        );
        assert_eq!(
            (first, last, frames),
            (next, next + frames - 1, times.len() as u64)
        );
        assert_eq!(row["bytes"], bytes.len().to_string());
        assert_eq!(row["stopped"], "");
        next = last + 1;
        ranges.push((first, last, times));
    }
    // Every event's last frame, looked up in its file, has the event's time.
    let events = csv("events");
    assert!(events.len() > 20);
    let mut across = 0;
    for ev in &events {
        let frame: u64 = ev["frame_last"].parse().unwrap();
        let (first, _, times) = ranges
            .iter()
            .find(|(f, l, _)| (*f..=*l).contains(&frame))
            .expect("a file holds every frame");
        assert_eq!(times[(frame - first) as usize], ev["ts"], "frame {frame}");
        across += usize::from(*first > 1);
    }
    assert!(across > 0, "events in later files");
    let _ = std::fs::remove_dir_all(&base);
}

/// `flows --dump-streams`: one file per direction named by the side that sent it; with no
/// retransmission and no gap, each file holds exactly the direction's payload bytes.
#[test]
fn dump_streams_writes_each_direction() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("mcpcap-dump-{}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(["flows", "--format", "csv", "--out"])
        .arg(&out)
        .arg("--dump-streams")
        .arg(out.join("streams"))
        .arg(root.join("fixtures/mcp/resume_409.pcap"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    let mut flows = 0;
    for row in common::csv_rows(&csv) {
        assert_eq!(row["retransmitted"], "0");
        let id = &row["flow_id"];
        for side in ["orig", "resp"] {
            let bytes: u64 = row[&format!("{side}_bytes")].parse().unwrap();
            let file = out.join("streams").join(format!("{id}.{side}.bin"));
            let len = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
            assert_eq!(len, bytes, "{}", file.display());
        }
        let orig = std::fs::read(out.join("streams").join(format!("{id}.orig.bin"))).unwrap();
        assert!(
            orig.starts_with(b"POST ") || orig.starts_with(b"GET ") || orig.starts_with(b"DELETE "),
            "{id}"
        );
        flows += 1;
    }
    assert_eq!(flows, 3);
    let _ = std::fs::remove_dir_all(&out);
}
