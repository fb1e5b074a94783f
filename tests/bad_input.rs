//! Bad input: unreadable, empty, truncated and unsupported captures, and no panic on any prefix or corruption.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

fn mcpcap(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(args)
        .output()
        .unwrap()
}

fn tmp(name: &str, bytes: &[u8]) -> PathBuf {
    let p = std::env::temp_dir().join(format!("mcpcap-bad-{}-{name}", std::process::id()));
    std::fs::write(&p, bytes).unwrap();
    p
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/mcp")
            .join(name),
    )
    .unwrap()
}

/// `analyze --format ndjson --fail-on never PATH`: the output and its stderr lines.
fn ndjson_never(path: &std::path::Path) -> (Output, Vec<String>) {
    let o = mcpcap(&[
        "analyze",
        "--format",
        "ndjson",
        "--fail-on",
        "never",
        path.to_str().unwrap(),
    ]);
    let lines = stderr_lines(&o);
    (o, lines)
}

fn stderr_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn not_a_capture_is_one_line_exit_2() {
    let p = tmp("text.pcap", b"this is a text file, not a capture\n");
    let o = mcpcap(&["analyze", "--format", "ndjson", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let lines = stderr_lines(&o);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(p.to_str().unwrap()) && lines[0].contains("not a pcap or pcapng file"),
        "{lines:?}"
    );
}

#[test]
fn missing_and_empty_files() {
    let o = mcpcap(&["analyze", "/nonexistent/x.pcap"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr_lines(&o)[0].contains("/nonexistent/x.pcap"));
    let p = tmp("empty.pcap", b"");
    let o = mcpcap(&["analyze", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr_lines(&o)[0].contains("empty file"));
}

#[test]
fn bad_usage_exit_2() {
    assert_eq!(mcpcap(&["analyze"]).status.code(), Some(2));
    assert_eq!(
        mcpcap(&["analyze", "--format", "xml", "x.pcap"])
            .status
            .code(),
        Some(2)
    );
    let f = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/healthy_ts.pcap");
    let o = mcpcap(&["analyze", "--format", "parquet", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "parquet without --out");
}

#[test]
fn truncated_capture_is_analysed_up_to_the_cut() {
    let bytes = fixture("resume_409.pcap");
    let p = tmp("cut.pcap", &bytes[..9_000]);
    let (o, lines) = ndjson_never(&p);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("file ends inside a block") && lines[0].contains("analysed the"),
        "{lines:?}"
    );
}

/// `analyze --format csv --out <temp dir named by tag>` of `paths` (it must exit 0): its output
/// and the directory of tables (the caller removes it).
fn analyze_csv(paths: &[&std::path::Path], tag: &str) -> (Output, PathBuf) {
    let dir = std::env::temp_dir().join(format!("mcpcap-bad-{}-{tag}", std::process::id()));
    let mut args = vec!["analyze", "--fail-on", "never", "--format", "csv", "--out"];
    args.push(dir.to_str().unwrap());
    args.extend(paths.iter().map(|p| p.to_str().unwrap()));
    let o = mcpcap(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (o, dir)
}

/// `analyze --format csv` of `p` (it must exit 0): its stderr lines and `anomalies.csv`.
fn stderr_and_anomalies(p: &std::path::Path, tag: &str) -> (Vec<String>, String) {
    let (o, dir) = analyze_csv(&[p], tag);
    let anomalies = std::fs::read_to_string(dir.join("anomalies.csv")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (stderr_lines(&o), anomalies)
}

/// A classic little-endian pcap with every frame cut to `snap` bytes (its wire length kept), as
/// `editcap -s` does.
fn with_snaplen(pcap: &[u8], snap: usize) -> Vec<u8> {
    with_snaplen_on(pcap, snap, |_| true)
}

/// [`with_snaplen`] on the frames (numbered from 1) that `cut` picks.
fn with_snaplen_on(pcap: &[u8], snap: usize, cut: impl Fn(usize) -> bool) -> Vec<u8> {
    assert_eq!(
        pcap[..4],
        [0xd4, 0xc3, 0xb2, 0xa1],
        "little-endian classic pcap"
    );
    let mut out = pcap[..24].to_vec();
    out[16..20].copy_from_slice(&(snap as u32).to_le_bytes());
    let (mut at, mut number) = (24, 0);
    while at + 16 <= pcap.len() {
        number += 1;
        let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        let keep = if cut(number) { incl.min(snap) } else { incl };
        out.extend_from_slice(&pcap[at..at + 8]);
        out.extend_from_slice(&(keep as u32).to_le_bytes());
        out.extend_from_slice(&pcap[at + 12..at + 16]);
        out.extend_from_slice(&pcap[at + 16..at + 16 + keep]);
        at += 16 + incl;
    }
    out
}

#[test]
fn snaplen_cut_frames_are_said_and_counted() {
    // A capture cut to 96 bytes a frame: the HTTP heads are gone, so nothing is judged; the
    // run says so on stderr and counts every cut segment, not a silent clean result.
    let p = tmp(
        "snap96.pcap",
        &with_snaplen(&fixture("fork_restart_client.pcap"), 96),
    );
    let run = |p: &PathBuf| stderr_and_anomalies(p, "snapout");
    let (lines, anomalies) = run(&p);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(p.to_str().unwrap())
            && lines[0].contains("the snapshot length cut")
            && lines[0].contains("capture.snaplen_cut"),
        "{lines:?}"
    );
    let cut = common::csv_column(&anomalies, "code")
        .iter()
        .filter(|c| *c == "capture.snaplen_cut")
        .count();
    assert!(cut > 10, "{anomalies}");
    // The whole capture: no such line, no such anomaly.
    let (lines, anomalies) = run(&tmp("whole.pcap", &fixture("fork_restart_client.pcap")));
    assert!(lines.is_empty(), "{lines:?}");
    assert!(!anomalies.contains("capture.snaplen_cut"), "{anomalies}");
}

#[test]
fn frames_out_of_time_order_are_said_and_counted() {
    // The last two records swapped in the file: one frame is earlier than the one before it.
    // Frames are analysed in file order (as Wireshark and Zeek do); the run says so.
    let pcap = fixture("fork_restart_client.pcap");
    let mut records = Vec::new();
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        records.push(&pcap[at..at + 16 + incl]);
        at += 16 + incl;
    }
    let n = records.len();
    records.swap(n - 2, n - 1);
    let mut swapped = pcap[..24].to_vec();
    for r in &records {
        swapped.extend_from_slice(r);
    }
    let p = tmp("swapped.pcap", &swapped);
    let (lines, anomalies) = stderr_and_anomalies(&p, "swapout");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("1 frames are earlier than the frame before them"),
        "{lines:?}"
    );
    let rows: Vec<_> = common::csv_rows(&anomalies)
        .into_iter()
        .filter(|r| r["code"] == "capture.time_backwards")
        .collect();
    assert_eq!(rows.len(), 1, "{anomalies}");
    assert_eq!(rows[0]["frame"], n.to_string(), "{rows:?}");
}

#[test]
fn a_response_head_cut_by_the_snapshot_length_is_unverifiable() {
    // Frame 28 carries the head of the tools/call's SSE response; cut to 300 bytes, the rest of
    // the head is a gap and no head follows on the connection. The response may well have
    // come: the request is unverifiable (info), not a lost response (error).
    let cut = with_snaplen_on(&fixture("resume_ok_ts.pcap"), 300, |n| n == 28);
    let (o, _) = ndjson_never(&tmp("head-cut.pcap", &cut));
    let kinds: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"].to_string())
        .collect();
    assert!(
        kinds.contains(&"\"response_unverifiable\"".to_string()),
        "{kinds:?}"
    );
    assert!(
        !kinds.contains(&"\"lost_response\"".to_string()),
        "{kinds:?}"
    );
}

#[test]
fn a_directory_skips_what_is_not_a_capture_in_one_line() {
    // A folder of captures with notes beside them: the notes are skipped in one line; a file
    // named like a capture that is not one is an error of its own; a subdirectory is skipped in
    // a line of its own; the capture is analysed.
    let dir = std::env::temp_dir().join(format!("mcpcap-bad-{}-dir", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("resume_409.pcap"), fixture("resume_409.pcap")).unwrap();
    std::fs::write(dir.join("NOTES.md"), b"# notes\n").unwrap();
    std::fs::write(dir.join("MANIFEST.json"), b"[]\n").unwrap();
    std::fs::write(dir.join("broken.pcap"), b"not a capture at all\n").unwrap();
    // A subdirectory is not searched, and says so.
    std::fs::create_dir_all(dir.join("older")).unwrap();
    std::fs::write(dir.join("older").join("a.pcap"), fixture("resume_409.pcap")).unwrap();
    let (o, lines) = ndjson_never(&dir);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines.iter().any(|l| l.contains("skipped 1 entry")
            && l.contains("subdirectories are not searched): older")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("broken.pcap") && l.contains("not a pcap or pcapng")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("skipped 2 file(s)") && l.contains("MANIFEST.json, NOTES.md")),
        "{lines:?}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("lost_response"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_capture_that_breaks_before_its_first_frame_is_unreadable() {
    // The pcap header, then a record that claims 4 GB: nothing can be read (exit 2, one line);
    // a header with no record at all is an empty but valid capture (exit 0).
    let whole = fixture("resume_409.pcap");
    let mut b = whole[..24].to_vec();
    b.extend_from_slice(&[
        0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xf0, 0xff, 0xff, 0xff, 0xf0,
    ]);
    b.extend_from_slice(&whole[40..200]);
    let p = tmp("huge-record.pcap", &b);
    let o = mcpcap(&["analyze", "--format", "ndjson", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{:?}", stderr_lines(&o));
    let lines = stderr_lines(&o);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains(p.to_str().unwrap()), "{lines:?}");
    let p = tmp("header-only.pcap", &whole[..24]);
    let o = mcpcap(&["analyze", "--format", "ndjson", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{:?}", stderr_lines(&o));
}

#[test]
fn a_port_that_matches_nothing_is_said() {
    let p = tmp("ports.pcap", &fixture("resume_409.pcap"));
    let o = mcpcap(&[
        "analyze",
        "--port",
        "9999",
        "--format",
        "ndjson",
        p.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let lines = stderr_lines(&o);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("no TCP segment has port 9999") && lines[0].contains("left out"),
        "{lines:?}"
    );
    // A port that matches: no such line.
    let o = mcpcap(&[
        "analyze",
        "--port",
        "3401",
        "--format",
        "ndjson",
        p.to_str().unwrap(),
    ]);
    assert!(stderr_lines(&o).is_empty(), "{:?}", stderr_lines(&o));
}

#[test]
fn standard_input_is_one_capture() {
    // `tcpdump -w - | mcpcap analyze -`: the same findings as from the file; `-` only alone.
    let bytes = fixture("fork_restart.pcap");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(["analyze", "--format", "ndjson", "--fail-on", "never", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&bytes).unwrap();
    }
    let piped = child.wait_with_output().unwrap();
    assert_eq!(piped.status.code(), Some(0));
    let p = tmp("fork.pcap", &bytes);
    let (file, _) = ndjson_never(&p);
    assert!(!piped.stdout.is_empty());
    // The same rows; only the `file` column names the input (`-` for standard input).
    let rows = |out: &[u8], file: &str| -> Vec<serde_json::Value> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                assert_eq!(v["file"], file, "{l}");
                v.as_object_mut().unwrap().remove("file");
                v
            })
            .collect()
    };
    let name = p.file_name().unwrap().to_str().unwrap();
    assert_eq!(rows(&piped.stdout, "-"), rows(&file.stdout, name));
    let o = mcpcap(&["analyze", "-", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr_lines(&o)[0].contains("standard input"),
        "{:?}",
        stderr_lines(&o)
    );
}

#[test]
fn a_closed_pipe_ends_quietly() {
    // `mcpcap events x.pcap | head` and `… 2>&1 | head`: the reader goes away. Output stops with
    // no error message and, above all, no panic (exit 101), also when standard error is the
    // closed pipe too.
    let p = tmp("closed-pipe.pcap", &fixture("fork_restart.pcap"));
    for (cmd, fail_on) in [
        ("events", "never"),
        ("analyze", "never"),
        ("analyze", "error"),
    ] {
        for format in ["ndjson", "table", "csv"] {
            for close_stderr in [false, true] {
                let mut child = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
                    .args([cmd, "--format", format, "--fail-on", fail_on])
                    .arg(&p)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                drop(child.stdout.take());
                if close_stderr {
                    drop(child.stderr.take());
                }
                let o = child.wait_with_output().unwrap();
                let want = if fail_on == "error" { 1 } else { 0 };
                let err = String::from_utf8_lossy(&o.stderr);
                assert_eq!(o.status.code(), Some(want), "{cmd} {format}: {err}");
                assert!(err.is_empty(), "{cmd} {format}: {err}");
            }
        }
    }
}

#[test]
fn unsupported_link_type_named() {
    // pcap header, LINKTYPE 147 (user 0), one 4-byte record.
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&4u16.to_le_bytes());
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&65535u32.to_le_bytes());
    b.extend_from_slice(&147u32.to_le_bytes());
    b.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 1, 2, 3, 4]);
    let p = tmp("lt147.pcap", &b);
    let o = mcpcap(&["analyze", "--format", "ndjson", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "nothing could be read");
    let lines = stderr_lines(&o);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("link type 147"), "{lines:?}");
}

/// Every prefix and many single-byte corruptions of the fixtures go through the whole
/// library pipeline without a panic.
#[test]
fn no_panic_on_prefixes_and_corruption() {
    for name in ["fork_restart_client.pcap", "healthy_py.pcap"] {
        let bytes = fixture(name);
        let mut cases: Vec<Vec<u8>> = (0..bytes.len())
            .step_by(53)
            .map(|n| bytes[..n].to_vec())
            .collect();
        let mut x: u32 = 12345;
        for _ in 0..150 {
            let mut c = bytes.clone();
            for _ in 0..8 {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let i = 24 + (x as usize >> 3) % (c.len() - 24);
                c[i] ^= (x >> 24) as u8 | 1;
            }
            cases.push(c);
        }
        for c in cases {
            let mut a = mcpcap::Analyzer::new(mcpcap::Options::default());
            let mut anomalies = mcpcap::anomaly::Anomalies::default();
            let _ = mcpcap::capture::read_capture(&c[..], 1, &mut anomalies, |f| a.frame(&f));
            let ex = a.finish();
            let analysis = mcpcap::analyze_exchanges(&ex, &[], a.counters.ts_last);
            let _ = mcpcap::report::tables::findings(
                &analysis,
                &mcpcap::report::wireshark::FrameFiles::default(),
            )
            .to_dataframe()
            .unwrap();
        }
    }
}

/// A healthy capture that simply stops — at any point — never yields an error finding: what
/// the capture did not see is unverifiable, not lost.
#[test]
fn healthy_capture_cut_anywhere_has_no_error() {
    for name in ["healthy_ts.pcap", "healthy_py.pcap", "resume_ok_ts.pcap"] {
        let bytes = fixture(name);
        for n in (24..bytes.len()).step_by(97) {
            let mut a = mcpcap::Analyzer::new(mcpcap::Options::default());
            let mut anomalies = mcpcap::anomaly::Anomalies::default();
            let _ = mcpcap::capture::read_capture(&bytes[..n], 1, &mut anomalies, |f| a.frame(&f));
            let ex = a.finish();
            let analysis = mcpcap::analyze_exchanges(
                &ex,
                &["/params/app_seq".to_string()],
                a.counters.ts_last,
            );
            let errors: Vec<_> = analysis
                .findings
                .iter()
                .filter(|f| f.severity != mcpcap::detect::Severity::Info)
                .collect();
            assert!(errors.is_empty(), "{name} cut at {n}: {errors:#?}");
        }
    }
}

/// The frames of a classic little-endian pcap as a pcapng file (one Ethernet interface in
/// microseconds), each frame's timestamp given by `ts(frame index, classic µs)`.
fn as_pcapng(pcap: &[u8], ts: impl Fn(usize, u64) -> u64) -> Vec<u8> {
    let block = |out: &mut Vec<u8>, kind: u32, body: &[u8]| {
        let len = (12 + body.len()) as u32;
        out.extend(kind.to_le_bytes());
        out.extend(len.to_le_bytes());
        out.extend(body);
        out.extend(len.to_le_bytes());
    };
    let mut out = Vec::new();
    let mut shb = 0x1A2B_3C4Du32.to_le_bytes().to_vec();
    shb.extend(1u16.to_le_bytes());
    shb.extend(0u16.to_le_bytes());
    shb.extend((-1i64).to_le_bytes());
    block(&mut out, 0x0A0D_0D0A, &shb);
    let mut idb = 1u16.to_le_bytes().to_vec();
    idb.extend(0u16.to_le_bytes());
    idb.extend(65535u32.to_le_bytes());
    block(&mut out, 1, &idb);
    let (mut at, mut i) = (24, 0);
    while at + 16 <= pcap.len() {
        let word = |k: usize| u32::from_le_bytes(pcap[at + k..at + k + 4].try_into().unwrap());
        let (sec, usec, caplen, origlen) = (word(0), word(4), word(8) as usize, word(12));
        let data = &pcap[at + 16..at + 16 + caplen];
        let t = ts(i, sec as u64 * 1_000_000 + usec as u64);
        let mut epb = 0u32.to_le_bytes().to_vec();
        epb.extend(((t >> 32) as u32).to_le_bytes());
        epb.extend((t as u32).to_le_bytes());
        epb.extend((caplen as u32).to_le_bytes());
        epb.extend(origlen.to_le_bytes());
        epb.extend(data);
        epb.resize(epb.len().next_multiple_of(4), 0);
        block(&mut out, 6, &epb);
        at += 16 + caplen;
        i += 1;
    }
    out
}

/// A pcapng timestamp past the year 9999 (a corrupt `ts_high`) cannot be written as a time:
/// it is counted and taken as the last microsecond of 9999, and every format is written.
#[test]
fn a_timestamp_out_of_range_is_counted_not_fatal() {
    let ng = as_pcapng(&fixture("healthy_ts.pcap"), |i, t| {
        if i == 3 {
            8_300_000_000_000_000_000
        } else {
            t
        }
    });
    let p = tmp("ts-range.pcapng", &ng);
    let (lines, anomalies) = stderr_and_anomalies(&p, "ts-range");
    assert!(lines.iter().all(|l| !l.contains("panicked")), "{lines:?}");
    assert!(
        common::csv_rows(&anomalies)
            .iter()
            .any(|r| r["code"] == "capture.ts_out_of_range" && r["frame"] == "4"),
        "{anomalies}"
    );
    for format in ["table", "ndjson"] {
        let o = mcpcap(&["flows", "--format", format, p.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{format}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = mcpcap(&["events", "--format", "ndjson", p.to_str().unwrap()]);
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("+"),
        "years past 9999"
    );
    let _ = std::fs::remove_file(&p);
}

#[cfg(unix)]
#[test]
fn a_pipe_named_as_a_file_is_read_once_as_the_one_capture() {
    // A FIFO (as `<(…)` or `/dev/stdin` give): its bytes can be read only once, so it is not
    // opened first to be ordered among files; with other files it is refused.
    let dir = std::env::temp_dir().join(format!("mcpcap-bad-{}-fifo", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("live.pcap");
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        return; // no mkfifo here
    }
    let bytes = fixture("resume_409.pcap");
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut w = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            let _ = w.write_all(&bytes);
        })
    };
    let (o, lines) = ndjson_never(&fifo);
    writer.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{lines:?}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("lost_response"));
    let other = tmp("beside-fifo.pcap", &fixture("resume_409.pcap"));
    let o = mcpcap(&["analyze", other.to_str().unwrap(), fifo.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let lines = stderr_lines(&o);
    assert!(
        lines.len() == 1 && lines[0].contains("live.pcap: not a regular file"),
        "{lines:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The blocks of a little-endian pcapng file: (offset, type, length).
fn ng_blocks(ng: &[u8]) -> Vec<(usize, u32, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 8 <= ng.len() {
        let word = |k: usize| u32::from_le_bytes(ng[at + k..at + k + 4].try_into().unwrap());
        let (kind, len) = (word(0), word(4) as usize);
        out.push((at, kind, len));
        at += len;
    }
    out
}

/// A malformed packet block (its captured length runs past its end) in the first of two files
/// of one capture is skipped and counted; it keeps its frame number, so the `files` table maps
/// frames as Wireshark numbers them, and the second file's first frame follows it.
#[test]
fn a_malformed_packet_block_keeps_its_frame_number_across_files() {
    let ng = as_pcapng(&fixture("healthy_ts.pcap"), |_, t| t);
    let blocks = ng_blocks(&ng);
    let epbs: Vec<_> = blocks.iter().filter(|b| b.1 == 6).collect();
    assert!(epbs.len() > 10);
    // The first file: section and interface, then five packet blocks, the third malformed.
    let head_end = epbs[0].0;
    let cut = epbs[5].0;
    let mut a = ng[..cut].to_vec();
    let bad = epbs[2].0;
    a[bad + 20..bad + 24].copy_from_slice(&0xFFF0u32.to_le_bytes());
    let mut b = ng[..head_end].to_vec();
    b.extend_from_slice(&ng[cut..]);
    let (pa, pb) = (tmp("bad-epb-a.pcapng", &a), tmp("bad-epb-b.pcapng", &b));
    let (_, dir) = analyze_csv(&[&pa, &pb], "epb-files");
    let files = std::fs::read_to_string(dir.join("files.csv")).unwrap();
    let rows = common::csv_rows(&files);
    let range = |r: &std::collections::BTreeMap<String, String>| {
        [&r["frame_first"], &r["frame_last"], &r["frames"]].map(|v| v.clone())
    };
    assert_eq!(rows.len(), 2, "{files}");
    assert_eq!(
        rows[0]["vantage"], rows[1]["vantage"],
        "one vantage point: {files}"
    );
    assert_eq!(range(&rows[0]), ["1", "5", "5"], "{files}");
    let rest = (epbs.len() - 5).to_string();
    let last = epbs.len().to_string();
    assert_eq!(range(&rows[1]), ["6".to_string(), last, rest], "{files}");
    let anomalies = std::fs::read_to_string(dir.join("anomalies.csv")).unwrap();
    assert!(
        common::csv_rows(&anomalies)
            .iter()
            .any(|r| r["code"] == "pcapng.bad_block" && r["frame"] == "3"),
        "the third frame, skipped: {anomalies}"
    );
    for p in [&pa, &pb] {
        let _ = std::fs::remove_file(p);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
