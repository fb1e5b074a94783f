//! The same tables, with the same snake_case columns and rows, in every output format.

mod common;

use std::path::PathBuf;
use std::process::Command;

use polars::prelude::*;

use mcpcap::report::TABLE_NAMES as TABLES;

fn run(args: &[&str], out: Option<&PathBuf>) -> (i32, String) {
    let capture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/fork_restart_client.pcap");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpcap"));
    cmd.arg("analyze").args(args);
    if let Some(o) = out {
        cmd.arg("--out").arg(o);
    }
    let o = cmd.arg(capture).output().unwrap();
    (
        o.status.code().unwrap(),
        String::from_utf8(o.stdout).unwrap(),
    )
}

#[test]
fn csv_parquet_ndjson_agree() {
    let base = std::env::temp_dir().join(format!("mcpcap-formats-{}", std::process::id()));
    let (csv_dir, pq_dir) = (base.join("csv"), base.join("parquet"));
    assert_eq!(
        run(&["--format", "csv"], Some(&csv_dir)).0,
        1,
        "error findings → exit 1"
    );
    assert_eq!(run(&["--format", "parquet"], Some(&pq_dir)).0, 1);
    for t in TABLES {
        let csv = CsvReadOptions::default()
            .with_has_header(true)
            .try_into_reader_with_file_path(Some(csv_dir.join(format!("{t}.csv"))))
            .unwrap()
            .finish()
            .unwrap();
        let pq =
            ParquetReader::new(std::fs::File::open(pq_dir.join(format!("{t}.parquet"))).unwrap())
                .finish()
                .unwrap();
        assert_eq!(csv.get_column_names(), pq.get_column_names(), "{t}");
        assert_eq!(csv.height(), pq.height(), "{t}");
        for name in csv.get_column_names() {
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{t}.{name} is not snake_case"
            );
        }
    }
    let findings =
        ParquetReader::new(std::fs::File::open(pq_dir.join("findings.parquet")).unwrap())
            .finish()
            .unwrap();
    let kind = findings.column("kind").unwrap().str().unwrap().clone();
    let kinds: Vec<String> = (0..kind.len())
        .map(|i| kind.get(i).unwrap().to_string())
        .collect();
    assert_eq!(
        kinds,
        [
            "backend_switch",
            "duplicate_delivery",
            "id_regression",
            "id_restart"
        ]
    );
    // NDJSON: the findings table, same keys in the same order.
    let (code, ndjson) = run(&["--format", "ndjson", "--fail-on", "never"], None);
    assert_eq!(code, 0);
    let rows: Vec<serde_json::Map<String, serde_json::Value>> = ndjson
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), findings.height());
    let keys: Vec<&str> = rows[0].keys().map(String::as_str).collect();
    let cols: Vec<&str> = findings
        .get_column_names()
        .iter()
        .map(|c| c.as_str())
        .collect();
    assert_eq!(keys, cols);
    assert_eq!(rows[1]["event_id"], "1");
    assert_eq!(rows[1]["last_event_id"], "9");
    // CSV without --out: the findings table on standard output, as the file has it.
    let (code, csv) = run(&["--format", "csv", "--fail-on", "never"], None);
    assert_eq!(code, 0);
    assert_eq!(
        csv,
        std::fs::read_to_string(csv_dir.join("findings.csv")).unwrap()
    );
    let _ = std::fs::remove_dir_all(&base);
}

/// `flows`, `exchanges` and `events --format csv` without `--out` print their table.
#[test]
fn single_tables_as_csv_on_standard_output() {
    let capture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/fork_restart_client.pcap");
    let dir = std::env::temp_dir().join(format!("mcpcap-csv-stdout-{}", std::process::id()));
    for table in ["flows", "exchanges", "events"] {
        let stdout = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
            .args([table, "--format", "csv"])
            .arg(&capture)
            .output()
            .unwrap();
        assert_eq!(stdout.status.code(), Some(0));
        let file = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
            .args([table, "--format", "csv", "--out"])
            .arg(&dir)
            .arg(&capture)
            .output()
            .unwrap();
        assert_eq!(file.status.code(), Some(0));
        let written = std::fs::read_to_string(dir.join(format!("{table}.csv"))).unwrap();
        assert!(written.lines().count() > 1, "{table}");
        assert_eq!(
            String::from_utf8(stdout.stdout).unwrap(),
            written,
            "{table}"
        );
    }
    // Parquet still needs a directory.
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(["flows", "--format", "parquet"])
        .arg(&capture)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Times are UTC in every format: Parquet timestamps carry the zone, CSV and NDJSON write the
/// same `…Z` text; and the terminal table (which polars formats without zones) prints.
#[test]
fn times_are_utc_everywhere_and_the_terminal_table_prints() {
    let base = std::env::temp_dir().join(format!("mcpcap-times-{}", std::process::id()));
    let (csv_dir, pq_dir) = (base.join("csv"), base.join("parquet"));
    run(&["--format", "csv"], Some(&csv_dir));
    run(&["--format", "parquet"], Some(&pq_dir));
    let pq = ParquetReader::new(std::fs::File::open(pq_dir.join("findings.parquet")).unwrap())
        .finish()
        .unwrap();
    assert_eq!(
        pq.column("ts").unwrap().dtype(),
        &DataType::Datetime(TimeUnit::Microseconds, Some(TimeZone::UTC))
    );
    let csv = std::fs::read_to_string(csv_dir.join("findings.csv")).unwrap();
    let first_ts = common::csv_column(&csv, "ts").remove(0);
    assert_eq!(first_ts, "2026-11-29T22:24:30.063117Z");
    let (_, ndjson) = run(&["--format", "ndjson", "--fail-on", "never"], None);
    let row: serde_json::Value = serde_json::from_str(ndjson.lines().next().unwrap()).unwrap();
    assert_eq!(row["ts"], first_ts);
    let (code, table) = run(&["--format", "table"], None);
    assert_eq!(code, 1);
    assert!(
        table.starts_with("1 of 1 session broken")
            && table.contains("[4] error id_restart (frame 52, F0)")
            && table.contains("2026-11-29 22:24:30.063117"),
        "{table}"
    );
    let _ = std::fs::remove_dir_all(&base);
}

/// The events and exchanges tables written in pieces (as the CLI does, to bound memory) equal
/// the tables written whole, in CSV and Parquet: one header, every row once, in order.
#[test]
fn tables_in_pieces_equal_tables_whole() {
    use mcpcap::report::{tables, write_chunks_to, Format, Table};
    use std::io::Write as _;
    let bytes = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/fork_restart_client.pcap"),
    )
    .unwrap();
    let mut a = mcpcap::Analyzer::new(mcpcap::Options::default());
    let mut anomalies = mcpcap::anomaly::Anomalies::default();
    mcpcap::capture::read_capture(&bytes[..], 1, &mut anomalies, |f| a.frame(&f)).unwrap();
    let ex = a.finish();
    let analysis = mcpcap::analyze_exchanges(&ex, &[], a.counters.ts_last);
    let base = std::env::temp_dir().join(format!("mcpcap-pieces-{}", std::process::id()));
    for name in ["events", "exchanges"] {
        let (whole, pieces): (_, Vec<_>) = if name == "events" {
            (
                tables::events(&analysis, &ex),
                tables::events_chunks(&analysis.model, &ex, 3).collect(),
            )
        } else {
            (
                tables::exchanges(&analysis, &ex),
                tables::exchanges_chunks(&analysis.model, &ex, 3).collect(),
            )
        };
        assert!(whole.height() > 5, "fixture has {name}");
        assert_eq!(pieces.len(), whole.height().div_ceil(3));
        for format in [Format::Csv, Format::Parquet] {
            let (one, many) = (base.join("one"), base.join("many"));
            let ext = if format == Format::Csv {
                "csv"
            } else {
                "parquet"
            };
            let write = |dir: &PathBuf, pieces: Vec<Table>| {
                std::fs::create_dir_all(dir).unwrap();
                let file = std::fs::File::create(dir.join(format!("{name}.{ext}"))).unwrap();
                let mut file = std::io::BufWriter::new(file);
                write_chunks_to(&mut file, pieces, format).unwrap();
                file.flush().unwrap();
            };
            write(&one, vec![whole.clone()]);
            write(&many, pieces.clone());
            let read = |dir: &PathBuf| {
                let path = dir.join(format!("{name}.{ext}"));
                if format == Format::Csv {
                    CsvReadOptions::default()
                        .with_has_header(true)
                        .try_into_reader_with_file_path(Some(path))
                        .unwrap()
                        .finish()
                        .unwrap()
                } else {
                    ParquetReader::new(std::fs::File::open(path).unwrap())
                        .finish()
                        .unwrap()
                }
            };
            let (x, y) = (read(&one), read(&many));
            assert_eq!(x.height(), whole.height());
            assert!(
                x.equals_missing(&y),
                "{name}.{ext}: pieces differ from whole"
            );
            if format == Format::Csv {
                assert_eq!(
                    std::fs::read(one.join(format!("{name}.csv"))).unwrap(),
                    std::fs::read(many.join(format!("{name}.csv"))).unwrap()
                );
            }
        }
    }
    // Nothing: one empty piece, so the file still has its columns.
    let none = mcpcap::analyze_exchanges(&[], &[], None);
    for pieces in [
        tables::events_chunks(&none.model, &[], 3).collect::<Vec<_>>(),
        tables::exchanges_chunks(&none.model, &[], 3).collect(),
    ] {
        assert_eq!(pieces.len(), 1);
        assert_eq!(pieces[0].height(), 0);
        assert!(!pieces[0].columns.is_empty());
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// `--format table` on the generator's captures (27 sessions, 8 broken): the verdict line first,
/// then the sessions worst first, then each broken session's findings under it; no colour when
/// piped.
#[test]
fn the_terminal_report_puts_broken_sessions_first() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(["analyze", "--format", "table", "--quiet"])
        .arg(root.join("fixtures/mcp-gen"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(!text.contains('\x1b'), "colour in a pipe");
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("8 of 27 sessions broken ("), "{first}");
    assert!(
        first.ends_with(", 0 suspect, 0 unverifiable, 19 intact"),
        "{first}"
    );
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("sessions, worst first"))
        .skip(2)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(table.len(), 27);
    assert!(table[..8].iter().all(|v| *v == "broken"), "{table:?}");
    assert!(table[8..].iter().all(|v| *v == "intact"), "{table:?}");
    // The first section after the table is a broken session with its findings.
    let section = text
        .split("\n\n")
        .find(|s| s.contains(" session "))
        .unwrap();
    assert!(section.starts_with("broken session "), "{section}");
    assert!(
        section.contains("\n  [2] error backend_switch (frame 259, F8): "),
        "{section}"
    );
}
