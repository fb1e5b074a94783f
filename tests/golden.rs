//! Golden tables: every table of every capture listed in a `fixtures/mcp*/MANIFEST.json`, as CSV, compared with
//! `tests/golden/<capture>/<table>.csv`. Regenerate with `MCPCAP_REGEN=1 cargo test --test golden`
//! and review the diff.

use std::path::PathBuf;
use std::process::Command;

use mcpcap::report::TABLE_NAMES as TABLES;

#[test]
fn fixture_tables_match_golden() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let regen = std::env::var_os("MCPCAP_REGEN").is_some();
    let mut compared = 0;
    let mut stems = std::collections::BTreeSet::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("fixtures"))
        .unwrap()
        .map(|d| d.unwrap().path())
        .filter(|d| d.join("MANIFEST.json").exists())
        .collect();
    dirs.sort();
    for dir in dirs {
        let manifest: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(root.join(&dir).join("MANIFEST.json")).unwrap(),
        )
        .unwrap();
        for entry in manifest.as_array().unwrap() {
            let file = entry["file"].as_str().unwrap();
            let stem = file.trim_end_matches(".pcapng").trim_end_matches(".pcap");
            assert!(stems.insert(stem.to_string()), "two fixtures named {stem}");
            let out =
                std::env::temp_dir().join(format!("mcpcap-golden-{}-{stem}", std::process::id()));
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpcap"));
            cmd.args(["analyze", "--format", "csv", "--fail-on", "never", "--out"])
                .arg(&out);
            let ports = entry["ports"].as_array().unwrap().len();
            let client = entry["client_facing_ports"].as_array().unwrap();
            if ports > client.len() && !entry["needs_both_legs"].as_bool().unwrap_or(false) {
                for p in client {
                    cmd.args(["--port", &p.to_string()]);
                }
            }
            // Relative to the crate, as the `vantages` table shows the path given.
            cmd.current_dir(&root)
                .arg(dir.strip_prefix(&root).unwrap_or(&dir).join(file));
            let o = cmd.output().unwrap();
            assert_eq!(
                o.status.code(),
                Some(0),
                "{file}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            for t in TABLES {
                let got = std::fs::read_to_string(out.join(format!("{t}.csv"))).unwrap();
                let golden = root
                    .join("tests/golden")
                    .join(stem)
                    .join(format!("{t}.csv"));
                if regen {
                    std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
                    std::fs::write(&golden, &got).unwrap();
                } else {
                    let want = std::fs::read_to_string(&golden).unwrap_or_else(|_| {
                        panic!("missing {}; run with MCPCAP_REGEN=1", golden.display())
                    });
                    assert_eq!(
                        got,
                        want,
                        "{file}: table {t} differs from {}",
                        golden.display()
                    );
                }
                compared += 1;
            }
            let _ = std::fs::remove_dir_all(&out);
        }
    }
    // fixtures/mcp (9), mcp-gen (11), mcp-rmcp (4), mcp-sdk and mcp-faults.
    assert!(
        compared >= (9 + 11 + 4) * TABLES.len(),
        "{compared} tables compared"
    );
}
