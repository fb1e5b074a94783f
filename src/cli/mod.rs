//! Command line: argument parsing, file handling, exit codes. Nothing else.

mod dump;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use mcpcap::detect::Severity;
use mcpcap::report::{self, tables, Format, Table};
use mcpcap::{Analyzer, Options};

/// Exit status: no finding reached `--fail-on`.
pub const EXIT_OK: i32 = 0;
/// Exit status: a finding reached `--fail-on`.
pub const EXIT_FINDINGS: i32 = 1;
/// Exit status: bad usage or no capture could be read.
pub const EXIT_USAGE: i32 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "mcpcap",
    version,
    about = "Find lost, duplicated and fabricated MCP messages across SSE resumptions in packet captures"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Reassemble, decode and judge every MCP session in the captures.
    Analyze(AnalyzeArgs),
    /// Print or write the flows table (one row per TCP connection).
    Flows(AnalyzeArgs),
    /// Print or write the exchanges table (one row per HTTP request/response).
    Exchanges(AnalyzeArgs),
    /// Print or write the events table (one row per SSE event).
    Events(AnalyzeArgs),
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum FormatArg {
    Table,
    Csv,
    Parquet,
    Ndjson,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum FailOn {
    Error,
    Warning,
    Info,
    Never,
}

#[derive(clap::Args, Debug)]
struct AnalyzeArgs {
    /// Capture files (pcap or pcapng), read in order as one capture.
    #[arg(required = true)]
    captures: Vec<PathBuf>,
    /// Output format (default: table on a terminal, ndjson otherwise).
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Directory for csv/parquet files (one file per table).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Exit 1 when a finding of this severity or worse exists.
    #[arg(long, value_enum, default_value = "error")]
    fail_on: FailOn,
    /// Keep only TCP connections with this port on either side (repeatable).
    #[arg(long = "port")]
    ports: Vec<u16>,
    /// JSON pointer to an application sequence field in JSON-RPC messages (repeatable).
    #[arg(long = "app-seq")]
    app_seq: Vec<String>,
    /// Response header naming the backend that served a response (repeatable; checked before
    /// X-Backend, X-Served-By, X-Upstream and Via).
    #[arg(long = "backend-header", value_name = "NAME")]
    backend_headers: Vec<String>,
    /// Write each direction's reassembled bytes to DIR/<flow_id>.orig.bin and .resp.bin
    /// (gaps are holes of the missing length, so file offsets are stream offsets).
    #[arg(long = "dump-streams", value_name = "DIR")]
    dump_streams: Option<PathBuf>,
}

/// Run the command line; returns the exit status.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
            let _ = e.print();
            return code;
        }
    };
    let (which, args) = match cli.command {
        Command::Analyze(a) => ("analyze", a),
        Command::Flows(a) => ("flows", a),
        Command::Exchanges(a) => ("exchanges", a),
        Command::Events(a) => ("events", a),
    };
    match run(which, &args) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("mcpcap: {msg}");
            EXIT_USAGE
        }
    }
}

fn run(which: &str, args: &AnalyzeArgs) -> Result<i32, String> {
    for p in &args.app_seq {
        if !p.is_empty() && !p.starts_with('/') {
            return Err(format!(
                "--app-seq {p:?}: a JSON pointer starts with '/' (RFC 6901)"
            ));
        }
    }
    let format = match args.format {
        Some(FormatArg::Table) => Format::Table,
        Some(FormatArg::Csv) => Format::Csv,
        Some(FormatArg::Parquet) => Format::Parquet,
        Some(FormatArg::Ndjson) => Format::Ndjson,
        None if std::io::stdout().is_terminal() => Format::Table,
        None => Format::Ndjson,
    };
    if matches!(format, Format::Csv | Format::Parquet) && args.out.is_none() {
        return Err("--format csv/parquet needs --out DIR".into());
    }
    let mut analyzer = Analyzer::new(Options {
        ports: args.ports.clone(),
        app_seq: args.app_seq.clone(),
        ..Default::default()
    });
    let mut dump = match &args.dump_streams {
        Some(dir) => Some(dump::Dump::new(dir)?),
        None => None,
    };
    let mut read_any = false;
    let mut readable_frames = 0u64;
    let mut capture_anomalies = mcpcap::anomaly::Anomalies::default();
    for path in &capture_order(&args.captures) {
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("mcpcap: {}: {}", path.display(), e);
                continue;
            }
        };
        let first = analyzer.counters.frames + 1;
        let unsupported_before = analyzer.anomalies.count("capture.unsupported_linktype");
        let reader = std::io::BufReader::with_capacity(1 << 20, file);
        let res = mcpcap::capture::read_capture(reader, first, &mut capture_anomalies, |f| {
            match dump.as_mut() {
                Some(d) => analyzer.frame_tap(&f, d),
                None => analyzer.frame(&f),
            }
        });
        match res {
            Ok(summary) => {
                read_any = true;
                let unsupported =
                    analyzer.anomalies.count("capture.unsupported_linktype") - unsupported_before;
                readable_frames += summary.frames - unsupported;
                if unsupported > 0 {
                    let which = analyzer
                        .anomalies
                        .rows
                        .iter()
                        .rev()
                        .find(|a| a.code == "capture.unsupported_linktype")
                        .map(|a| a.detail.clone())
                        .unwrap_or_default();
                    eprintln!(
                        "mcpcap: {}: unsupported {} ({} of {} frames skipped)",
                        path.display(),
                        which,
                        unsupported,
                        summary.frames
                    );
                }
                if let Some(why) = summary.truncated {
                    eprintln!(
                        "mcpcap: {}: {} at byte {}; analysed the {} frames before it",
                        path.display(),
                        why,
                        summary.stopped_at.unwrap_or(0),
                        summary.frames
                    );
                }
            }
            Err(e) => eprintln!("mcpcap: {}: {}", path.display(), e),
        }
    }
    if !read_any || (readable_frames == 0 && analyzer.counters.frames > 0) {
        return Ok(EXIT_USAGE);
    }
    let exchanges = match dump.as_mut() {
        Some(d) => analyzer.finish_tap(d),
        None => analyzer.finish(),
    };
    if let Some(d) = dump {
        let flows = &analyzer.flows.flows;
        let client = &analyzer.http.client_dir;
        d.finish(|fi| {
            client
                .get(&fi)
                .copied()
                .unwrap_or_else(|| flows[fi].client_guess())
        })?;
    }
    let app_seq = analyzer.app_seq_pointers().to_vec();
    let analysis = mcpcap::analyze_exchanges_with(
        &exchanges,
        &app_seq,
        analyzer.counters.ts_last,
        &args.backend_headers,
    );
    let findings_t = tables::findings(&analysis);
    let all = || -> Vec<Table> {
        vec![
            tables::sessions(&analysis, &exchanges),
            tables::streams(&analysis, &exchanges),
            tables::resumptions(&analysis, &exchanges),
            findings_t.clone(),
            tables::events(&analysis, &exchanges),
            tables::exchanges(&analysis, &exchanges),
            tables::flows(&analyzer.flows.flows, &analyzer.http.client_dir),
            tables::anomalies(&[
                &capture_anomalies,
                &analyzer.anomalies,
                &analyzer.flows.anomalies,
                &analyzer.http.anomalies,
            ]),
        ]
    };
    // Tables are built only when they are written or shown.
    let selected = || -> Vec<Table> {
        match which {
            "flows" => vec![tables::flows(
                &analyzer.flows.flows,
                &analyzer.http.client_dir,
            )],
            "exchanges" => vec![tables::exchanges(&analysis, &exchanges)],
            "events" => vec![tables::events(&analysis, &exchanges)],
            _ => all(),
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match format {
        Format::Csv | Format::Parquet => {
            let dir = args.out.as_ref().expect("checked above");
            report::write_files(&selected(), dir, format)?;
        }
        Format::Ndjson => {
            let t = if which == "analyze" {
                findings_t.clone()
            } else {
                selected().remove(0)
            };
            t.write_ndjson(&mut out)
                .map_err(|e| format!("stdout: {e}"))?;
        }
        Format::Table => {
            set_table_style();
            let c = &analyzer.counters;
            let _ = writeln!(out, "{} frames ({} not TCP, {} left out by --port), {} TCP segments, {} flows, {} exchanges, {} sessions, {} resumptions, {} findings, {} anomalies\n",
                c.frames, c.not_tcp, c.filtered, c.tcp_segments, analyzer.flows.flows.len(), exchanges.len(), analysis.model.sessions.len(), analysis.resumptions.len(), analysis.findings.len(),
                [&capture_anomalies, &analyzer.anomalies, &analyzer.flows.anomalies, &analyzer.http.anomalies].iter().map(|a| a.total()).sum::<u64>());
            let shown: Vec<Table> = if which == "analyze" {
                vec![
                    select(
                        &tables::sessions(&analysis, &exchanges),
                        &[
                            "session_id",
                            "protocol_version",
                            "ts_first",
                            "exchanges",
                            "streams",
                            "resumptions",
                            "errors",
                            "warnings",
                            "verdict",
                        ],
                    ),
                    select(
                        &tables::resumptions(&analysis, &exchanges),
                        &[
                            "ts",
                            "session_id",
                            "flow_id",
                            "frame",
                            "last_event_id",
                            "stream_id",
                            "status",
                            "first_event_id",
                            "events",
                            "verdict",
                        ],
                    ),
                    select(
                        &findings_t,
                        &[
                            "ts",
                            "session_id",
                            "kind",
                            "severity",
                            "flow_id",
                            "frame",
                            "last_event_id",
                            "event_id",
                            "request_id",
                        ],
                    ),
                ]
            } else {
                selected()
            };
            for t in &shown {
                let s = report::render(t)?;
                let _ = writeln!(out, "{s}");
            }
            if which == "analyze" {
                for (i, f) in analysis.findings.iter().enumerate() {
                    let _ = writeln!(
                        out,
                        "[{}] {} {} ({}): {}",
                        i + 1,
                        f.severity.as_str(),
                        f.kind,
                        f.session_id,
                        f.detail
                    );
                }
            }
        }
    }
    let threshold = match args.fail_on {
        FailOn::Error => Some(Severity::Error),
        FailOn::Warning => Some(Severity::Warning),
        FailOn::Info => Some(Severity::Info),
        FailOn::Never => None,
    };
    // Only `analyze` judges; the single-table commands exit 0 once they have written their table.
    let failed = which == "analyze"
        && threshold.is_some_and(|t| analysis.findings.iter().any(|f| f.severity >= t));
    Ok(if failed { EXIT_FINDINGS } else { EXIT_OK })
}

/// The files of the run in capture order: directories expand to the files in them (by name),
/// and files are read in order of their first frame's time, so that rotated files
/// (`tcpdump -C/-G`) given in any order form one capture. A file that cannot be opened or is
/// not a capture gets its one-line message here and is left out.
fn capture_order(args: &[PathBuf]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = Vec::new();
    for p in args {
        if p.is_dir() {
            match std::fs::read_dir(p) {
                Ok(rd) => {
                    let mut inside: Vec<PathBuf> = rd
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|f| f.is_file())
                        .collect();
                    inside.sort();
                    if inside.is_empty() {
                        eprintln!("mcpcap: {}: directory holds no files", p.display());
                    }
                    files.extend(inside);
                }
                Err(e) => eprintln!("mcpcap: {}: {}", p.display(), e),
            }
        } else {
            files.push(p.clone());
        }
    }
    let mut keyed: Vec<(i64, usize, PathBuf)> = Vec::new();
    for (i, f) in files.into_iter().enumerate() {
        let first = std::fs::File::open(&f)
            .map_err(|e| e.to_string())
            .and_then(|file| {
                mcpcap::capture::first_timestamp(std::io::BufReader::new(file))
                    .map_err(|e| e.to_string())
            });
        match first {
            Ok(ts) => keyed.push((ts.unwrap_or(i64::MIN), i, f)),
            Err(e) => eprintln!("mcpcap: {}: {}", f.display(), e),
        }
    }
    keyed.sort_by_key(|(ts, i, _)| (*ts, *i));
    keyed.into_iter().map(|(_, _, f)| f).collect()
}

fn select(t: &Table, names: &[&str]) -> Table {
    Table {
        name: t.name,
        columns: names
            .iter()
            .filter_map(|n| t.columns.iter().find(|(c, _)| c == n).cloned())
            .collect(),
    }
}

fn set_table_style() {
    // polars reads its display settings from the environment; set them before the first table.
    for (k, v) in [
        ("POLARS_FMT_MAX_ROWS", "-1"),
        ("POLARS_FMT_MAX_COLS", "-1"),
        ("POLARS_FMT_STR_LEN", "400"),
        ("POLARS_FMT_TABLE_HIDE_COLUMN_DATA_TYPES", "1"),
        ("POLARS_FMT_TABLE_HIDE_DATAFRAME_SHAPE_INFORMATION", "1"),
        ("POLARS_FMT_TABLE_ROUNDED_CORNERS", "1"),
        ("POLARS_TABLE_WIDTH", "220"),
    ] {
        if std::env::var_os(k).is_none() {
            // SAFETY: single-threaded at this point; no other thread reads the environment.
            unsafe { std::env::set_var(k, v) };
        }
    }
}
