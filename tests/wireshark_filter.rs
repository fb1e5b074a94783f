//! The `file` and `wireshark_filter` columns of `findings`, checked with tshark itself: for every
//! finding of the captures of `fixtures/mcp` and `fixtures/mcp-issues` (each alone), of a
//! capture with a second vantage point, and of a capture rotated into several files, tshark
//! reading the finding's `file` with its filter shows exactly the frames the filter lists, and
//! among them the finding's `frame` in that file's numbering.
//!
//! Skipped, saying why, when tshark or editcap is missing, unless `MCPCAP_REQUIRE_READERS` is
//! set (`.ci/run` installs tshark).

mod common;
use common::ndjson_table;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Check every finding of `captures`; returns how many findings cite more than one frame.
fn check(captures: &[PathBuf], tag: &str) -> usize {
    let files = ndjson_table(captures, "files");
    let by_name: HashMap<String, PathBuf> = captures
        .iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                p.clone(),
            )
        })
        .collect();
    let mut several = 0;
    for f in ndjson_table(captures, "findings") {
        let name = f["file"].as_str().unwrap_or_else(|| panic!("no file: {f}"));
        let path = &by_name[name];
        let filter = f["wireshark_filter"].as_str().unwrap();
        let want = common::filter_frames(filter);
        assert_eq!(
            common::tshark_frames(path, filter),
            want,
            "{tag} finding {f}"
        );
        // The finding's own frame, in the file's numbering (files table).
        let frame = f["frame"].as_u64().unwrap();
        let first = files
            .iter()
            .find(|r| {
                Path::new(r["file"].as_str().unwrap()).file_name().unwrap()
                    == std::ffi::OsStr::new(name)
                    && r["frame_first"].as_u64().unwrap() <= frame
                    && frame <= r["frame_last"].as_u64().unwrap()
            })
            .unwrap_or_else(|| panic!("{tag}: frame {frame} in no file"))["frame_first"]
            .as_u64()
            .unwrap();
        assert!(want.contains(&(frame - first + 1)), "{tag} finding {f}");
        several += usize::from(want.len() > 1);
    }
    several
}

fn captures_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    v.sort();
    v
}

#[test]
fn tshark_shows_exactly_the_frames_each_finding_cites() {
    if !common::have_all(&["tshark", "editcap"]) {
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut several = 0;
    for dir in ["mcp", "mcp-issues"] {
        for cap in captures_in(&root.join(dir)) {
            let tag = cap.file_stem().unwrap().to_string_lossy().into_owned();
            several += check(std::slice::from_ref(&cap), &tag);
        }
    }
    // Two vantage points: each finding's frames within the file of its flow.
    let two = [
        root.join("mcp/fork_restart.pcap"),
        root.join("mcp/fork_restart_client.pcap"),
    ];
    several += check(&two, "two-vantages");
    // Rotated: editcap -c splits into files of 40 frames, numbered from 1 in each.
    let split = std::env::temp_dir().join(format!("mcpcap-wsfilter-{}-split", std::process::id()));
    std::fs::create_dir_all(&split).unwrap();
    let o = Command::new("editcap")
        .args(["-c", "40"])
        .arg(root.join("mcp/fork_restart.pcap"))
        .arg(split.join("part.pcap"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let parts = captures_in(&split);
    assert!(parts.len() > 3, "{parts:?}");
    several += check(&parts, "rotated");
    let _ = std::fs::remove_dir_all(&split);
    assert!(several > 10, "only {several} findings cite several frames");
}
