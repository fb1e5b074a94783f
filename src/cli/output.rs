//! Writing the tables where the [`Plan`] says: one file per table in a directory, the command's
//! one table on standard output as CSV or NDJSON, or the terminal report. The library writes
//! only to a [`Write`]; the directories and files are made here.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{anyhow, bail};

use mcpcap::anomaly::Anomalies;
use mcpcap::detect::Analysis;
use mcpcap::http::Exchange;
use mcpcap::report::har::{self, HarInput};
use mcpcap::report::tables::{self, FlowsPart, VantageRow};
use mcpcap::report::wireshark::FrameFiles;
use mcpcap::report::{self, Format, Table};
use mcpcap::vantage::ClockOffset;

use super::plan::{Destination, Mode, Plan};
use super::read::Capture;
use super::{at, terminal};

/// Rows of the `events` and `exchanges` tables built at a time when they are written to files
/// or NDJSON: their memory is bounded by this, not by the capture.
const ROWS_PER_PIECE: usize = 1 << 14;

/// What the tables are built from, once the detectors have run. Tables are built only when
/// they are written or shown, one at a time.
pub struct Results<'a> {
    /// The detectors' results.
    analysis: &'a Analysis,
    /// Every exchange, in time order.
    exchanges: &'a [Exchange],
    /// What reading the captures gave.
    capture: &'a Capture,
    /// Each vantage point's part of the `flows` table.
    flow_parts: Vec<FlowsPart<'a>>,
    /// Each vantage point's row of the `vantages` table.
    vantage_rows: Vec<VantageRow>,
    /// Every set of anomalies of the run: the capture reader's, the detectors', then each
    /// vantage point's frames', flows' and HTTP's.
    anomaly_sets: Vec<&'a Anomalies>,
    /// Which file each finding's frames are in.
    frame_files: FrameFiles<'a>,
}

impl<'a> Results<'a> {
    /// The results of a run: `offsets` are the vantage points' clock offsets to the first one.
    pub fn new(
        analysis: &'a Analysis,
        exchanges: &'a [Exchange],
        capture: &'a Capture,
        offsets: &[ClockOffset],
    ) -> Results<'a> {
        let vantages = || capture.vantages.iter().zip(offsets);
        let flow_parts: Vec<FlowsPart<'a>> = vantages()
            .map(|(v, o)| FlowsPart {
                vantage: &v.name,
                flows: &v.analyzer.flows,
                client_dir: &v.analyzer.http.client_dir,
                tls: &v.analyzer.http.tls.flows,
                clock_offset_us: o.offset_us.unwrap_or(0),
            })
            .collect();
        let vantage_rows = vantages()
            .map(|(v, o)| VantageRow {
                name: v.name.clone(),
                files: v.files.clone(),
                frames: v.analyzer.counters.frames,
                flows: v.analyzer.flows.len() as u64,
                ts_first: v.ts_first,
                ts_last: v.analyzer.counters.ts_last,
                offset: *o,
            })
            .collect();
        let mut anomaly_sets = vec![&capture.anomalies, &analysis.anomalies];
        for v in &capture.vantages {
            anomaly_sets.extend([
                &v.analyzer.anomalies,
                &v.analyzer.flows.anomalies,
                &v.analyzer.http.anomalies,
            ]);
        }
        let frame_files = FrameFiles::new(&flow_parts, &capture.file_rows);
        Results {
            analysis,
            exchanges,
            capture,
            frame_files,
            flow_parts,
            vantage_rows,
            anomaly_sets,
        }
    }

    /// Table `name` (one of [`report::TABLE_NAMES`]; `findings` for any other name), whole.
    fn build(&self, name: &str) -> Table {
        let (a, ex) = (self.analysis, self.exchanges);
        match name {
            "sessions" => tables::sessions(a, ex),
            "streams" => tables::streams(a, ex),
            "resumptions" => tables::resumptions(a, ex),
            "calls" => tables::calls(a, ex),
            "events" => tables::events(a, ex),
            "exchanges" => tables::exchanges(a, ex),
            "flows" => tables::flows(&self.flow_parts),
            "anomalies" => tables::anomalies(&self.anomaly_sets),
            "vantages" => tables::vantages(&self.vantage_rows),
            "files" => tables::files(&self.capture.file_rows),
            _ => tables::findings(a, &self.frame_files),
        }
    }

    /// Table `name` in pieces: those that grow with the capture (flows, resumptions, calls,
    /// findings, events, exchanges) in [`ROWS_PER_PIECE`] rows; the others whole.
    fn pieces(&self, name: &str) -> Box<dyn Iterator<Item = Table> + '_> {
        let (a, ex) = (self.analysis, self.exchanges);
        match name {
            "flows" => Box::new(tables::flows_chunks(&self.flow_parts, ROWS_PER_PIECE)),
            "resumptions" => Box::new(tables::resumptions_chunks(a, ex, ROWS_PER_PIECE)),
            "calls" => Box::new(tables::calls_chunks(a, ex, ROWS_PER_PIECE)),
            "findings" => Box::new(tables::findings_chunks(
                a,
                &self.frame_files,
                ROWS_PER_PIECE,
            )),
            "events" => Box::new(tables::events_chunks(&a.model, ex, ROWS_PER_PIECE)),
            "exchanges" => Box::new(tables::exchanges_chunks(&a.model, ex, ROWS_PER_PIECE)),
            _ => Box::new(std::iter::once(self.build(name))),
        }
    }

    /// What the HAR document of the exchanges is written from.
    fn har(&self) -> HarInput<'_> {
        HarInput {
            analysis: self.analysis,
            exchanges: self.exchanges,
            flows: &self.flow_parts,
        }
    }

    /// The anomalies of the run, of every set.
    fn anomalies(&self) -> u64 {
        self.anomaly_sets.iter().map(|a| a.total()).sum()
    }
}

/// Start writing the tables of [`Plan::beside`] on a thread of their own, from the session
/// `model` and the `exchanges` alone (before the detectors run); `None` when there are none.
/// The thread returns what [`write_file`] returns for the first that fails.
pub fn spawn_beside(
    plan: &Plan,
    model: &mcpcap::mcp::Model,
    exchanges: &Arc<Vec<Exchange>>,
) -> Option<JoinHandle<anyhow::Result<()>>> {
    let Destination::Dir(dir) = &plan.destination else {
        return None;
    };
    if plan.beside.is_empty() {
        return None;
    }
    let (ex, m, dir) = (exchanges.clone(), model.clone(), dir.clone());
    let (beside, format) = (plan.beside.clone(), plan.format);
    Some(std::thread::spawn(move || {
        beside.iter().try_for_each(|&n| {
            let rows: Box<dyn Iterator<Item = Table>> = match n {
                "events" => Box::new(tables::events_chunks(&m, &ex, ROWS_PER_PIECE)),
                _ => Box::new(tables::exchanges_chunks(&m, &ex, ROWS_PER_PIECE)),
            };
            write_file(n, rows, &dir, format)
        })
    }))
}

/// Write the tables of `plan` from `results`; `beside` is the thread of [`spawn_beside`], joined
/// once the others are written.
///
/// Errors: a file cannot be created or written (the message names it), standard output fails
/// other than by a closed pipe (`stdout: …`), a table cannot be rendered for the terminal, or
/// the thread writing tables beside failed.
pub fn write(
    plan: &Plan,
    results: &Results<'_>,
    beside: Option<JoinHandle<anyhow::Result<()>>>,
) -> anyhow::Result<()> {
    // Buffered: standard output alone flushes at every line, a write per NDJSON row.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let table = plan.mode.stdout_table();
    match (&plan.destination, plan.format) {
        (Destination::Dir(dir), Format::Har) => har_file(results, dir)?,
        (Destination::Stdout, Format::Har) => match har::write_har(&mut out, results.har()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => bail!("stdout: {e}"),
            _ => {}
        },
        (Destination::Dir(dir), format) => files(plan, results, dir, format, beside)?,
        (Destination::Stdout, Format::Table) => show(plan, results, &mut out)?,
        // Without --out, CSV goes to standard output: the command's one table (findings for
        // `analyze`), as NDJSON does.
        (Destination::Stdout, Format::Csv) => {
            match report::write_chunks_to(&mut out, results.pieces(table), Format::Csv) {
                Err(e) if !report::is_broken_pipe(&e) => bail!("stdout: {e}"),
                _ => {}
            }
        }
        // Parquet is never on standard output (`Plan::new` refuses it).
        (Destination::Stdout, Format::Ndjson | Format::Parquet) => {
            for t in results.pieces(table) {
                match t.write_ndjson(&mut out) {
                    Ok(()) => {}
                    // The reader went away (`| head`): nothing more to write, not an error.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break,
                    Err(e) => bail!("stdout: {e}"),
                }
            }
        }
    }
    match out.flush() {
        Err(e)
            if matches!(plan.format, Format::Ndjson | Format::Csv | Format::Har)
                && e.kind() != std::io::ErrorKind::BrokenPipe =>
        {
            bail!("stdout: {e}")
        }
        // The terminal table's writes ignore errors as well.
        _ => Ok(()),
    }
}

/// Write every table of `plan` but those written beside to `dir` as `format`, then join the
/// thread writing the others (`beside`). The first error is returned.
fn files(
    plan: &Plan,
    results: &Results<'_>,
    dir: &Path,
    format: Format,
    beside: Option<JoinHandle<anyhow::Result<()>>>,
) -> anyhow::Result<()> {
    let result = plan
        .tables
        .iter()
        .filter(|n| !plan.beside.contains(n))
        .try_for_each(|n| write_file(n, results.pieces(n), dir, format));
    let Some(h) = beside else {
        return result;
    };
    let r = h.join().unwrap_or_else(|_| {
        let s = if plan.beside.len() > 1 { "s" } else { "" };
        Err(anyhow!(
            "writing the {} table{s} failed",
            plan.beside.join(" and ")
        ))
    });
    result.and(r)
}

/// Write the HAR document of the exchanges to `<dir>/exchanges.har`, creating `dir` if missing.
///
/// Errors: the directory or the file cannot be created or written; the message names the path.
fn har_file(results: &Results<'_>, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| at(dir, e))?;
    let path = dir.join("exchanges.har");
    let file = std::fs::File::create(&path).map_err(|e| at(&path, e))?;
    let mut file = std::io::BufWriter::with_capacity(1 << 20, file);
    har::write_har(&mut file, results.har()).map_err(|e| at(&path, e))?;
    file.flush().map_err(|e| at(&path, e))
}

/// Write one table given as consecutive pieces to `<dir>/<name>.<ext>` (`csv`, `ndjson`, or
/// `parquet` for [`Format::Parquet`]), creating `dir` if missing; one piece is in memory at a
/// time ([`report::write_chunks_to`]).
///
/// Errors: the directory or the file cannot be created or written; the message names the path.
fn write_file(
    name: &str,
    chunks: impl IntoIterator<Item = Table>,
    dir: &Path,
    format: Format,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| at(dir, e))?;
    let ext = match format {
        Format::Csv => "csv",
        Format::Ndjson => "ndjson",
        _ => "parquet",
    };
    let path = dir.join(format!("{name}.{ext}"));
    // Buffered: the Parquet writer's metadata (Thrift) comes in writes of a few bytes each.
    let file = std::fs::File::create(&path).map_err(|e| at(&path, e))?;
    let mut file = std::io::BufWriter::with_capacity(1 << 20, file);
    report::write_chunks_to(&mut file, chunks, format).map_err(|e| at(&path, e))?;
    file.flush().map_err(|e| at(&path, e))
}

/// `--format table`: for `analyze` the terminal report ([`terminal::render`]); for the
/// single-table commands a line of counts, then the table as polars renders it.
///
/// Errors: a table cannot be rendered ([`report::RenderError`]). Write errors are ignored.
fn show(plan: &Plan, results: &Results<'_>, out: &mut impl Write) -> anyhow::Result<()> {
    set_table_style();
    let c = results.capture;
    let (a, ex) = (results.analysis, results.exchanges);
    if plan.mode == Mode::Analyze {
        let capture_line = capture_line(results);
        let report = terminal::Report {
            analysis: a,
            capture_line,
            // Several files: where each one's frames are in the `frame` columns.
            files: (c.file_rows.len() > 1).then(|| tables::files(&c.file_rows)),
            sessions: tables::sessions(a, ex),
            resumptions: tables::resumptions(a, ex),
            findings: tables::findings(a, &results.frame_files),
            calls: tables::calls(a, ex),
        };
        terminal::render(out, &report, plan.style);
        return Ok(());
    }
    let _ = writeln!(
        out,
        "{}, {} sessions, {} resumptions, {} findings, {} anomalies\n",
        traffic_counts(results),
        a.model.sessions.len(),
        a.resumptions.len(),
        a.findings.len(),
        results.anomalies()
    );
    for name in &plan.tables {
        let s = report::render(&results.build(name))?;
        let _ = writeln!(out, "{s}");
    }
    Ok(())
}

/// What every line of counts starts with: frames, vantage points, segments, flows, exchanges.
fn traffic_counts(results: &Results<'_>) -> String {
    let c = results.capture;
    let count = |f: fn(&mcpcap::Counters) -> u64| c.count(f);
    let flows: usize = c.vantages.iter().map(|v| v.analyzer.flows.len()).sum();
    let points = if c.vantages.len() > 1 {
        format!(" from {} vantage points", c.vantages.len())
    } else {
        String::new()
    };
    format!(
        "{} frames{points} ({} not TCP, {} left out by --port), {} TCP segments, {} flows, {} exchanges",
        count(|c| c.frames),
        count(|c| c.not_tcp),
        count(|c| c.filtered),
        count(|c| c.tcp_segments),
        flows,
        results.exchanges.len(),
    )
}

/// The line of counts the terminal report and the HTML report start with.
fn capture_line(results: &Results<'_>) -> String {
    let s = |n: usize| if n == 1 { "" } else { "s" };
    let (r, f) = (
        results.analysis.resumptions.len(),
        results.analysis.findings.len(),
    );
    format!(
        "{}, {r} resumption{}, {f} finding{}, {} anomalies",
        traffic_counts(results),
        s(r),
        s(f),
        results.anomalies()
    )
}

/// Write the HTML report of `results` to `path` ([`mcpcap::report::html`]).
///
/// Errors: the file cannot be created or written; the message names it.
pub fn write_report(plan: &Plan, results: &Results<'_>, path: &Path) -> anyhow::Result<()> {
    let line = capture_line(results);
    let input = mcpcap::report::html::Input {
        analysis: results.analysis,
        exchanges: results.exchanges,
        parts: &results.flow_parts,
        files: &results.capture.file_rows,
        anomalies: &results.anomaly_sets,
        frame_files: &results.frame_files,
        capture_line: &line,
        extract_args: &plan.extract_args,
    };
    let file = std::fs::File::create(path).map_err(|e| at(path, e))?;
    let mut file = std::io::BufWriter::with_capacity(1 << 20, file);
    mcpcap::report::html::write(&mut file, &input).map_err(|e| at(path, e))?;
    file.flush().map_err(|e| at(path, e))
}

/// polars reads its display settings from the environment: set them (where the user has not)
/// before the first table is rendered.
fn set_table_style() {
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
