//! The HTML report at scale: a capture of 10,000 sessions (every 50th forked: 200 broken
//! sessions with their sections) from `tests/shapes/mod.rs`, reported by the release binary;
//! prints the page's size, the time `mcpcap report` took, and how long headless Chromium takes
//! to load the page and run its script (`--dump-dom`, less the time it takes on an empty page).
//! `bench/README.md` keeps the latest run.
//!
//!     cargo bench --bench report
//!
//! Runs the binary Cargo builds with the bench (`CARGO_BIN_EXE_mcpcap`, optimized) and needs
//! `chromium` for the load time. The capture and the page go to `$HOSTILE_DIR` (default
//! `~/.cache/mcpcap-hostile`).

#[path = "../tests/shapes/mod.rs"]
mod shapes;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Seconds `chromium --headless --dump-dom` takes on `page`, best of three.
fn load_seconds(page: &Path) -> Option<f64> {
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let o = Command::new("chromium")
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
            .arg(format!("file://{}", page.display()))
            .output()
            .ok()?;
        if !o.status.success() {
            return None;
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    Some(best)
}

fn main() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_mcpcap"));
    let dir = std::env::var_os("HOSTILE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/mcpcap-hostile")
        });
    std::fs::create_dir_all(&dir).expect("capture directory");
    let capture = dir.join("report_10000_sessions.pcap");
    std::fs::write(&capture, shapes::many_sessions_forked(10_000, 50)).expect("write capture");
    let page = dir.join("report_10000_sessions.html");
    let t = Instant::now();
    let ok = Command::new(&bin)
        .args(["report", "--quiet", "--out"])
        .arg(&page)
        .arg(&capture)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mcpcap report");
    let secs = t.elapsed().as_secs_f64();
    let mb = |p: &Path| std::fs::metadata(p).map_or(0.0, |m| m.len() as f64 / 1e6);
    let empty = dir.join("empty.html");
    std::fs::write(&empty, "<!doctype html><title>empty</title>").expect("write empty page");
    let load = match (load_seconds(&page), load_seconds(&empty)) {
        (Some(p), Some(e)) => format!("{:.2}", (p - e).max(0.0)),
        _ => "no chromium".to_string(),
    };
    println!("| capture | capture MB | report seconds | page MB | page load seconds |");
    println!("|---|---|---|---|---|");
    println!(
        "| 10,000 sessions, 200 forked | {:.1} | {secs:.2} | {:.2} | {load} |",
        mb(&capture),
        mb(&page)
    );
}
