//! Hostile captures at full size: each shape of `tests/shapes/mod.rs` is written to a file and
//! analysed by the release binary with `--threads 1 --format parquet`, under GNU time, which
//! gives peak RSS and seconds. Prints a markdown table (`bench/README.md` keeps the latest).
//!
//!     cargo bench --bench hostile                 # every shape
//!     cargo bench --bench hostile -- syn_flood    # the shapes whose name contains an argument
//!
//! Needs `/usr/bin/time` (GNU time) and a release build (`cargo build --release`; the bench
//! builds it first). The captures go to `$HOSTILE_DIR` (default `~/.cache/mcpcap-hostile`) and
//! are kept for the next run.

#[path = "../tests/shapes/mod.rs"]
mod shapes;

use std::path::{Path, PathBuf};
use std::process::Command;

type Shape = (&'static str, &'static str, fn() -> Vec<u8>);

fn shapes() -> Vec<Shape> {
    vec![
        (
            "batch_gzip_5",
            "5 gzip POSTs, each a 16 MiB batch `[{},…]`",
            || shapes::batch_bomb(5, 16 << 20, false, true),
        ),
        (
            "batch_gzip_12",
            "12 gzip POSTs, each a 16 MiB batch `[{},…]`",
            || shapes::batch_bomb(12, 16 << 20, false, true),
        ),
        (
            "batch_gzip_valid_20",
            "20 gzip POSTs of 16 MiB notification batches",
            || shapes::batch_bomb(20, 16 << 20, true, true),
        ),
        (
            "batch_plain_20",
            "20 uncompressed POSTs of 16 MiB batches",
            || shapes::batch_bomb(20, 16 << 20, false, false),
        ),
        (
            "gzip_events_small",
            "gzip SSE bodies of tiny events (about 0.8 MB)",
            || shapes::gzip_tiny_events(3, 200 << 20),
        ),
        (
            "gzip_events_large",
            "gzip SSE bodies of tiny events (about 10 MB)",
            || shapes::gzip_tiny_events(40, 250 << 20),
        ),
        (
            "deep_json",
            "a tools/call result nested 128 and 100,000 levels",
            || {
                let mut a = shapes::deep_result(128);
                let b = shapes::deep_result(100_000);
                a.extend_from_slice(&b[24..]);
                a
            },
        ),
        (
            "empty_resume_6250",
            "6,250 empty resumptions on one Last-Event-ID",
            || shapes::empty_resume_loop(6_250),
        ),
        ("empty_resume_25000", "25,000 empty resumptions", || {
            shapes::empty_resume_loop(25_000)
        }),
        ("empty_resume_150000", "150,000 empty resumptions", || {
            shapes::empty_resume_loop(150_000)
        }),
        (
            "syn_flood",
            "1,000,000 SYN-only connections, 1 µs apart",
            || shapes::syn_flood(1_000_000, 1),
        ),
        (
            "open_heads",
            "300,000 open connections with 2 KB heads",
            || shapes::open_heads(300_000, 2048),
        ),
        (
            "many_sessions",
            "100,000 sessions (initialize, one call each)",
            || shapes::many_sessions(100_000),
        ),
        (
            "invalid_batches",
            "batches of 1,000,000 values that are no messages",
            || shapes::invalid_batches(1_000_000),
        ),
        ("ooo_flood", "1,000,000 out-of-order segments", || {
            shapes::ooo_flood(1_000_000)
        }),
        ("long_line", "one 1 GB SSE line", || {
            shapes::long_sse_line(1 << 30)
        }),
        ("gzip_bomb", "a JSON body of 10 GiB of zeros, gzip", || {
            shapes::decoding_bomb(10 << 30, "gzip")
        }),
        (
            "brotli_bomb",
            "a JSON body of 10 GiB of zeros, brotli",
            || shapes::decoding_bomb(10 << 30, "br"),
        ),
        ("port_scan", "1,000,000 SYNs answered by RST", || {
            shapes::port_scan(1_000_000)
        }),
    ]
}

/// Seconds and peak RSS (MiB) of one run.
fn measure(bin: &Path, file: &Path, out: &Path) -> (f64, f64, i32) {
    let times = out.with_extension("time");
    let status = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%e %M")
        .arg("-o")
        .arg(&times)
        .arg(bin)
        .args(["analyze", "--threads", "1", "--quiet", "--fail-on", "never"])
        .args(["--format", "parquet", "--out"])
        .arg(out)
        .arg(file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("/usr/bin/time");
    let text = std::fs::read_to_string(&times).unwrap_or_default();
    let last = text.lines().last().unwrap_or("0 0");
    let mut it = last.split_whitespace();
    let secs: f64 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let kib: f64 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0.0);
    (secs, kib / 1024.0, status.code().unwrap_or(-1))
}

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let built = Command::new("cargo")
        .args(["build", "--release", "--quiet"])
        .current_dir(&root)
        .status()
        .is_ok_and(|s| s.success());
    assert!(built, "cargo build --release");
    let bin = target.join("release/mcpcap");
    let dir = std::env::var_os("HOSTILE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/mcpcap-hostile")
        });
    std::fs::create_dir_all(&dir).expect("capture directory");
    println!("| shape | what | capture MB | exit | seconds | peak RSS MB |");
    println!("|---|---|---|---|---|---|");
    for (name, what, make) in shapes() {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let file = dir.join(format!("{name}.pcap"));
        if !file.exists() {
            std::fs::write(&file, make()).expect("write capture");
        }
        let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
        let out = dir.join(format!("{name}.out"));
        let _ = std::fs::remove_dir_all(&out);
        let (secs, mib, code) = measure(&bin, &file, &out);
        println!("| {name} | {what} | {size:.2} | {code} | {secs:.2} | {mib:.0} |");
        let _ = std::fs::remove_dir_all(&out);
    }
}
