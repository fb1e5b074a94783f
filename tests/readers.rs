//! The tables as analysts' tools read them: every table of three fixtures (one with sixty
//! sessions, one with a proxy's two legs, one with anomalies) written as CSV, Parquet and NDJSON,
//! then read by DuckDB, pyarrow, pandas, polars, DataFusion, Python's `csv` module and `jq`
//! (`tests/readers/check.py`): row counts, filters on a text, an integer and a timestamp column,
//! two joins, and the column types `docs/tables.md` gives, all against the CSV.
//!
//! The readers are Python packages: `.ci/run` installs them in a virtual environment and names
//! its interpreter in `MCPCAP_READERS_PYTHON` (and sets `MCPCAP_REQUIRE_READERS`, so that CI
//! fails rather than skips). Elsewhere the test looks for that environment in
//! `~/.cache/mcpcap-venv`, then for `python3` with the packages, and says so when it skips.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

const FIXTURES: [&str; 4] = [
    "fixtures/mcp/fork_restart.pcap",
    "fixtures/mcp-gen/many_sessions.pcap",
    "fixtures/mcp-cut/many_sessions_cut.pcap",
    // HTTP/2 over TLS (secrets embedded) and HTTP/1.1 legs: every exchanges column has values.
    "fixtures/mcp-h2/h2_fork_dsb.pcapng",
];

/// A Python interpreter with the readers, and `jq`; `Err` names what is missing.
fn readers() -> Result<PathBuf, String> {
    if !common::have("jq") {
        return Err("jq".into());
    }
    common::python_with("duckdb, pyarrow, pandas, polars, datafusion")
}

#[test]
fn every_reader_gets_every_table_right() {
    let py = match readers() {
        Ok(p) => p,
        Err(missing) => return common::skip_without(&missing),
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for fixture in FIXTURES {
        let stem = Path::new(fixture).file_stem().unwrap().to_string_lossy();
        let base =
            std::env::temp_dir().join(format!("mcpcap-readers-{}-{stem}", std::process::id()));
        for format in ["csv", "parquet", "ndjson"] {
            let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
                .args(["analyze", "--fail-on", "never", "--format", format, "--out"])
                .arg(base.join(format))
                .arg(root.join(fixture))
                .output()
                .unwrap();
            assert_eq!(
                o.status.code(),
                Some(0),
                "{fixture} {format}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let o = Command::new(&py)
            .arg(root.join("tests/readers/check.py"))
            .arg(&base)
            .arg(root.join("docs/tables.md"))
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{fixture}:\n{out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        eprint!("{fixture}: {out}");
        let _ = std::fs::remove_dir_all(&base);
    }
}
