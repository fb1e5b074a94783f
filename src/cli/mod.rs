//! Command line: argument parsing, file handling, exit codes. Nothing else.

mod args;
mod dump;
mod progress;
mod terminal;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::Parser;

use mcpcap::detect::Severity;
use mcpcap::report::{self, tables, Format, Table};
use mcpcap::{Analyzer, Options};

use args::{AnalyzeArgs, Cli, Command, FailOn, FormatArg, SynthArgs};

/// `eprintln!` that cannot panic: standard error may be a closed pipe too
/// (`mcpcap … 2>&1 | head`), and a message that cannot be written is dropped.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Exit status: no finding reached `--fail-on`.
pub const EXIT_OK: i32 = 0;
/// Exit status: a finding reached `--fail-on`.
pub const EXIT_FINDINGS: i32 = 1;
/// Exit status: bad usage or no capture could be read.
pub const EXIT_USAGE: i32 = 2;

fn synth(args: &SynthArgs) -> Result<i32, String> {
    let file =
        std::fs::File::create(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let w = std::io::BufWriter::with_capacity(1 << 20, file);
    let s = mcpcap::synth::write_capture(
        w,
        &mcpcap::synth::SynthOptions {
            bytes: args.bytes,
            seed: args.seed,
            concurrent: args.concurrent,
        },
    )
    .map_err(|e| format!("{}: {e}", args.out.display()))?;
    say!(
        "mcpcap: {}: {} bytes, {} frames, {} sessions, {} events, {} resumptions ({} forks)",
        args.out.display(),
        s.bytes,
        s.frames,
        s.sessions,
        s.events,
        s.resumptions,
        s.forks
    );
    Ok(EXIT_OK)
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
        Command::Synth(a) => {
            return match synth(&a) {
                Ok(code) => code,
                Err(msg) => {
                    say!("mcpcap: {msg}");
                    EXIT_USAGE
                }
            }
        }
    };
    match run(which, &args) {
        Ok(code) => code,
        Err(msg) => {
            say!("mcpcap: {msg}");
            EXIT_USAGE
        }
    }
}

/// Rows of the `events` and `exchanges` tables built at a time when they are written to files
/// or NDJSON: their memory is bounded by this, not by the capture.
const ROWS_PER_PIECE: usize = 1 << 14;

/// Table `name` in pieces: `events` and `exchanges`, which grow with the capture, in
/// [`ROWS_PER_PIECE`] rows; the others whole, from `build`.
fn pieces<'a>(
    name: &str,
    analysis: &'a mcpcap::detect::Analysis,
    exchanges: &'a [mcpcap::http::Exchange],
    flow_parts: &'a [tables::FlowsPart<'a>],
    build: &dyn Fn(&str) -> Table,
) -> Box<dyn Iterator<Item = Table> + 'a> {
    match name {
        "flows" => Box::new(tables::flows_chunks(flow_parts, ROWS_PER_PIECE)),
        "resumptions" => Box::new(tables::resumptions_chunks(
            analysis,
            exchanges,
            ROWS_PER_PIECE,
        )),
        "calls" => Box::new(tables::calls_chunks(analysis, exchanges, ROWS_PER_PIECE)),
        "findings" => Box::new(tables::findings_chunks(analysis, ROWS_PER_PIECE)),
        "events" => Box::new(tables::events_chunks(
            &analysis.model,
            exchanges,
            ROWS_PER_PIECE,
        )),
        "exchanges" => Box::new(tables::exchanges_chunks(
            &analysis.model,
            exchanges,
            ROWS_PER_PIECE,
        )),
        _ => Box::new(std::iter::once(build(name))),
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
    if format == Format::Parquet && args.out.is_none() {
        return Err("--format parquet needs --out DIR".into());
    }
    let options = Options {
        ports: args.ports.clone(),
        app_seq: args.app_seq.clone(),
        ..Default::default()
    };
    let mut named: Vec<(String, PathBuf)> = Vec::new();
    for v in &args.vantage {
        match v.split_once('=') {
            Some((n, f)) if !n.is_empty() && !f.is_empty() => {
                named.push((n.to_string(), PathBuf::from(f)))
            }
            _ => return Err(format!("--vantage {v:?}: expected NAME=FILE")),
        }
    }
    let mut dump = match &args.dump_streams {
        Some(dir) => Some(dump::Dump::new(dir)?),
        None => None,
    };
    let ids = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut inputs = args.captures.clone();
    inputs.extend(named.iter().map(|(_, f)| f.clone()));
    // 0 below: no shards, every stage on this thread: for the stream tap of --dump-streams,
    // and for one thread on one capture file. (Shards number their flows when they finish,
    // which keeps the numbering of several vantage points' interleaved files independent of
    // --threads; one file is one vantage point, numbered alike either way.)
    let threads = match (args.threads, dump.is_some()) {
        (_, true) => 0,
        (1, _) if inputs.len() == 1 => 0,
        (0, _) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        (n, _) => n,
    };
    let mut vantages: Vec<Vantage> = Vec::new();
    let mut read_any = false;
    let mut readable_frames = 0u64;
    let mut capture_anomalies = mcpcap::anomaly::Anomalies::default();
    // `-`: one capture from standard input (`tcpdump -w - | mcpcap analyze -`), read once, so it
    // cannot be ordered among other files.
    // So is a pipe named as a file (a FIFO, `/dev/stdin`, `<(…)`): ordering files reads each
    // one's start first, which would use up a pipe's bytes.
    let stdin = inputs.iter().any(|p| p.as_os_str() == "-");
    let pipe = inputs
        .iter()
        .find(|p| std::fs::metadata(p).is_ok_and(|m| !m.is_file() && !m.is_dir()));
    if stdin && inputs.len() > 1 {
        return Err("standard input (-) is read only as the one capture".into());
    }
    if let (Some(p), true) = (pipe, inputs.len() > 1) {
        return Err(format!(
            "{}: not a regular file (a pipe?): it is read only as the one capture",
            p.display()
        ));
    }
    let order = if stdin || pipe.is_some() {
        vec![(inputs[0].clone(), None)]
    } else {
        capture_order(&inputs)
    };
    let options = Options {
        single_file: order.len() == 1 && named.is_empty(),
        ..options
    };
    let total: u64 = order
        .iter()
        .filter_map(|(p, _)| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let mut progress =
        progress::Progress::new(!args.quiet && std::io::stderr().is_terminal(), total);
    let mut done_bytes = 0u64;
    // Per file read: its row of the `files` table.
    let mut file_rows: Vec<tables::FileRow> = Vec::new();
    for (path, first_ts) in &order {
        let input: Box<dyn std::io::Read + Send> = if stdin {
            Box::new(std::io::stdin())
        } else {
            match std::fs::File::open(path) {
                Ok(f) => Box::new(f),
                Err(e) => {
                    say!("mcpcap: {}: {}", path.display(), e);
                    continue;
                }
            }
        };
        let file = progress::Counting::new(input);
        let read_bytes = file.counter();
        let vi = pick_vantage(
            &mut vantages,
            &named,
            path,
            *first_ts,
            &options,
            &ids,
            threads,
        );
        let v = &mut vantages[vi];
        v.files.push(path.display().to_string());
        let vantage = v.name.clone();
        let analyzer = &mut v.analyzer;
        let first = v.numbered + 1;
        let unsupported_before = analyzer.anomalies.count("capture.unsupported_linktype");
        let (cut_before, segments_before, fragments_before, backwards_before) = (
            analyzer.anomalies.count("capture.snaplen_cut"),
            analyzer.counters.tcp_segments,
            analyzer.anomalies.count("ip.fragment"),
            analyzer.anomalies.count("capture.time_backwards"),
        );
        // No BufReader: the capture reader has its own buffer (`capture::BLOCK_BUFFER`) and reads
        // into it directly; another buffer in front would copy every byte once more.
        let reader = file;
        let mut n = 0u64;
        // The first frame's time (standard input is not read ahead for it).
        let mut first_frame_ts = None;
        // Its earliest and latest frame times (frames need not be in time order: one earlier
        // than the frame before it is an anomaly).
        let mut span = (i64::MAX, i64::MIN);
        let mut prev_ts: Option<i64> = None;
        let res = mcpcap::capture::read_capture(reader, first, &mut capture_anomalies, |f| {
            first_frame_ts.get_or_insert(f.ts);
            span = (span.0.min(f.ts), span.1.max(f.ts));
            if let Some(p) = prev_ts.filter(|&p| f.ts < p) {
                let back = p.saturating_sub(f.ts);
                analyzer
                    .anomalies
                    .add_with("capture.time_backwards", Some(f.number), None, || {
                        format!("{back} µs earlier than the frame before it")
                    });
            }
            prev_ts = Some(f.ts);
            match dump.as_mut() {
                Some(d) => analyzer.frame_tap(&f, d),
                None => analyzer.frame(&f),
            }
            n += 1;
            if n.is_multiple_of(4096) {
                progress.update(
                    done_bytes + read_bytes.load(std::sync::atomic::Ordering::Relaxed),
                    || {
                        let live = analyzer.live();
                        let n = |c: &std::sync::atomic::AtomicU64| {
                            c.load(std::sync::atomic::Ordering::Relaxed)
                        };
                        format!(
                            "{} flows, {} exchanges, {} sessions",
                            n(&live.flows),
                            n(&live.exchanges),
                            n(&live.sessions)
                        )
                    },
                );
            }
        });
        let backwards = analyzer.anomalies.count("capture.time_backwards") - backwards_before;
        if backwards > 0 {
            // Frames are analysed in file order, as Wireshark and Zeek do; sorting is the
            // user's call (`reordercap`).
            say!(
                "mcpcap: {}: {} frames are earlier than the frame before them; frames are analysed in file order (anomaly capture.time_backwards; `reordercap` sorts a capture)",
                path.display(),
                backwards
            );
        }
        let bytes = read_bytes.load(std::sync::atomic::Ordering::Relaxed);
        done_bytes += bytes;
        let frames = res.as_ref().map_or(0, |s| s.frames);
        v.numbered += frames;
        file_rows.push(tables::FileRow {
            file: path.display().to_string(),
            vantage,
            frame_first: (frames > 0).then_some(first),
            frame_last: (frames > 0).then_some(first + frames - 1),
            frames,
            bytes,
            // Times only of frames handed on (a file's numbered frames may all be malformed).
            ts_first: (span.0 <= span.1).then_some(span.0),
            ts_last: (span.0 <= span.1).then_some(span.1),
            stopped: match &res {
                Ok(summary) => summary.truncated.clone(),
                Err(e) => Some(e.to_string()),
            },
        });
        match res {
            Ok(summary) => {
                // A file that stops before its first frame could not be read at all.
                read_any |= summary.frames > 0 || summary.truncated.is_none();
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
                    say!(
                        "mcpcap: {}: unsupported {} ({} of {} frames skipped)",
                        path.display(),
                        which,
                        unsupported,
                        summary.frames
                    );
                }
                let cut = analyzer.anomalies.count("capture.snaplen_cut") - cut_before;
                if cut > 0 {
                    say!(
                        "mcpcap: {}: the snapshot length cut {} of {} TCP segments; their missing payload bytes are gaps (anomaly capture.snaplen_cut)",
                        path.display(),
                        cut,
                        analyzer.counters.tcp_segments - segments_before
                    );
                }
                let fragments = analyzer.anomalies.count("ip.fragment") - fragments_before;
                if fragments > 0 {
                    say!(
                        "mcpcap: {}: {} IP fragments were not reassembled; the TCP data they carry is missing from the streams (anomaly ip.fragment)",
                        path.display(),
                        fragments
                    );
                }
                if let Some(why) = summary.truncated {
                    say!(
                        "mcpcap: {}: {} at byte {}; analysed the {} frames before it",
                        path.display(),
                        why,
                        summary.stopped_at.unwrap_or(0),
                        summary.frames
                    );
                }
            }
            Err(e) => say!("mcpcap: {}: {}", path.display(), e),
        }
        v.last_ts = v.analyzer.counters.ts_last.or(v.last_ts);
        v.ts_first = v.ts_first.or(first_frame_ts);
    }
    let sessions: u64 = vantages
        .iter()
        .map(|v| {
            v.analyzer
                .live()
                .sessions
                .load(std::sync::atomic::Ordering::Relaxed)
        })
        .sum();
    progress.say(format!("analysing {sessions} sessions"));
    let frames: u64 = vantages.iter().map(|v| v.analyzer.counters.frames).sum();
    if !read_any || (readable_frames == 0 && frames > 0) {
        return Ok(EXIT_USAGE);
    }
    let count = |f: fn(&mcpcap::Counters) -> u64| counter_sum(&vantages, f);
    if !options.ports.is_empty() && count(|c| c.filtered) > 0 && count(|c| c.tcp_segments) == 0 {
        let ports: Vec<String> = options.ports.iter().map(u16::to_string).collect();
        say!(
            "mcpcap: no TCP segment has port {} on either side; {} were left out",
            ports.join(" or "),
            count(|c| c.filtered)
        );
    }
    let mut per_vantage: Vec<Vec<mcpcap::http::Exchange>> = vantages
        .iter_mut()
        .map(|v| match dump.as_mut() {
            Some(d) => v.analyzer.finish_tap(d),
            None => v.analyzer.finish(),
        })
        .collect();
    if let Some(d) = dump {
        d.finish(|fi| {
            vantages
                .iter()
                .find_map(|v| {
                    v.analyzer
                        .http
                        .client_dir
                        .get(&fi)
                        .copied()
                        .or_else(|| v.analyzer.flows.row(fi).map(|f| f.client_guess()))
                })
                .unwrap_or(0)
        })?;
    }
    // One clock: each vantage point's times move onto the first one's.
    let offsets = mcpcap::vantage::estimate_offsets(&per_vantage);
    for (ex, off) in per_vantage.iter_mut().zip(&offsets) {
        if let Some(o) = off.offset_us.filter(|o| *o != 0) {
            ex.iter_mut().for_each(|e| e.shift_time(-o));
        }
    }
    // One vantage point's exchanges are already in order (`Analyzer::finish`, its clock not
    // moved); several are merged (one copy) and sorted. Flow ids are unique across vantage
    // points: the key is unique, the order deterministic.
    let exchanges: Vec<mcpcap::http::Exchange> = if per_vantage.len() == 1 {
        per_vantage.pop().unwrap_or_default()
    } else {
        let mut all: Vec<_> = per_vantage.into_iter().flatten().collect();
        all.sort_unstable_by_key(|e| (e.ts(), e.flow_index, e.trans_depth));
        all
    };
    let capture_end = vantages
        .iter()
        .zip(&offsets)
        .filter_map(|(v, o)| Some(v.analyzer.counters.ts_last? - o.offset_us.unwrap_or(0)))
        .max();
    let app_seq = vantages
        .first()
        .map(|v| v.analyzer.app_seq_pointers().to_vec())
        .unwrap_or_default();
    let names: Vec<&str> = match which {
        "flows" | "exchanges" | "events" => vec![which],
        _ => report::TABLE_NAMES.to_vec(),
    };
    let model = mcpcap::model_of(&exchanges, &args.backend_headers);
    // With more than one thread, the two largest tables, which need only the model, are
    // written beside the detectors and the other tables: the events, then the exchanges.
    let exchanges = std::sync::Arc::new(exchanges);
    let beside: Vec<&'static str> = match (format, args.out.as_ref()) {
        (Format::Csv | Format::Parquet | Format::Ndjson, Some(_)) if threads > 1 => {
            ["events", "exchanges"]
                .into_iter()
                .filter(|n| names.contains(n))
                .collect()
        }
        _ => Vec::new(),
    };
    let written_beside = match args.out.as_ref() {
        Some(dir) if !beside.is_empty() => {
            let (ex, m, dir) = (exchanges.clone(), model.clone(), dir.clone());
            let beside = beside.clone();
            Some(std::thread::spawn(move || {
                beside.iter().try_for_each(|&n| {
                    let rows: Box<dyn Iterator<Item = Table>> = match n {
                        "events" => Box::new(tables::events_chunks(&m, &ex, ROWS_PER_PIECE)),
                        _ => Box::new(tables::exchanges_chunks(&m, &ex, ROWS_PER_PIECE)),
                    };
                    write_chunks(n, rows, &dir, format)
                })
            }))
        }
        _ => None,
    };
    let analysis = mcpcap::analyze_model(model, &exchanges, &app_seq, capture_end);
    progress.say(format!(
        "{} sessions, {} findings; writing tables",
        analysis.model.sessions.len(),
        analysis.findings.len()
    ));
    if args.out.is_none() {
        // The tables go to the terminal or stdout: the bar leaves first.
        progress.finish();
    }
    let flow_parts: Vec<tables::FlowsPart> = vantages
        .iter()
        .zip(&offsets)
        .map(|(v, o)| tables::FlowsPart {
            vantage: &v.name,
            flows: &v.analyzer.flows,
            client_dir: &v.analyzer.http.client_dir,
            clock_offset_us: o.offset_us.unwrap_or(0),
        })
        .collect();
    let vantage_rows: Vec<tables::VantageRow> = vantages
        .iter()
        .zip(&offsets)
        .map(|(v, o)| tables::VantageRow {
            name: v.name.clone(),
            files: v.files.clone(),
            frames: v.analyzer.counters.frames,
            flows: v.analyzer.flows.len() as u64,
            ts_first: v.ts_first,
            ts_last: v.analyzer.counters.ts_last,
            offset: *o,
        })
        .collect();
    let mut anomaly_sets: Vec<&mcpcap::anomaly::Anomalies> =
        vec![&capture_anomalies, &analysis.anomalies];
    for v in &vantages {
        anomaly_sets.extend([
            &v.analyzer.anomalies,
            &v.analyzer.flows.anomalies,
            &v.analyzer.http.anomalies,
        ]);
    }
    // Tables are built only when they are written or shown, one at a time.
    let build = |name: &str| -> Table {
        match name {
            "sessions" => tables::sessions(&analysis, &exchanges),
            "streams" => tables::streams(&analysis, &exchanges),
            "resumptions" => tables::resumptions(&analysis, &exchanges),
            "calls" => tables::calls(&analysis, &exchanges),
            "events" => tables::events(&analysis, &exchanges),
            "exchanges" => tables::exchanges(&analysis, &exchanges),
            "flows" => tables::flows(&flow_parts),
            "anomalies" => tables::anomalies(&anomaly_sets),
            "vantages" => tables::vantages(&vantage_rows),
            "files" => tables::files(&file_rows),
            _ => tables::findings(&analysis),
        }
    };
    let selected = || -> Vec<Table> { names.iter().map(|n| build(n)).collect() };
    // Buffered: standard output alone flushes at every line, a write per NDJSON row.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match format {
        // Without --out, CSV goes to standard output: the command's one table (findings for
        // `analyze`), as NDJSON does.
        Format::Csv if args.out.is_none() => {
            let name = if which == "analyze" {
                "findings"
            } else {
                which
            };
            match report::write_chunks_to(
                &mut out,
                pieces(name, &analysis, &exchanges, &flow_parts, &build),
                format,
            ) {
                Err(e) if !report::is_broken_pipe(&e) => return Err(format!("stdout: {e}")),
                _ => {}
            }
        }
        Format::Ndjson if args.out.is_none() => {
            let name = if which == "analyze" {
                "findings"
            } else {
                which
            };
            let tables = pieces(name, &analysis, &exchanges, &flow_parts, &build);
            for t in tables {
                match t.write_ndjson(&mut out) {
                    Ok(()) => {}
                    // The reader went away (`| head`): nothing more to write, not an error.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break,
                    Err(e) => return Err(format!("stdout: {e}")),
                }
            }
        }
        Format::Csv | Format::Parquet | Format::Ndjson => {
            let dir = args.out.as_ref().expect("checked above");
            let write = |n: &str| {
                write_chunks(
                    n,
                    pieces(n, &analysis, &exchanges, &flow_parts, &build),
                    dir,
                    format,
                )
            };
            let mut result = names
                .iter()
                .filter(|n| !beside.contains(n))
                .try_for_each(|n| write(n));
            if let Some(h) = written_beside {
                let r = h.join().unwrap_or_else(|_| {
                    let s = if beside.len() > 1 { "s" } else { "" };
                    Err(format!(
                        "writing the {} table{s} failed",
                        beside.join(" and ")
                    ))
                });
                result = result.and(r);
            }
            result?;
        }
        Format::Table => {
            set_table_style();
            let count = |f: fn(&mcpcap::Counters) -> u64| counter_sum(&vantages, f);
            let flows: usize = vantages.iter().map(|v| v.analyzer.flows.len()).sum();
            let points = if vantages.len() > 1 {
                format!(" from {} vantage points", vantages.len())
            } else {
                String::new()
            };
            if which == "analyze" {
                let s = |n: usize| if n == 1 { "" } else { "s" };
                let (r, f) = (analysis.resumptions.len(), analysis.findings.len());
                let capture_line = format!(
                    "{} frames{points} ({} not TCP, {} left out by --port), {} TCP segments, {} flows, {} exchanges, {r} resumption{}, {f} finding{}, {} anomalies",
                    count(|c| c.frames),
                    count(|c| c.not_tcp),
                    count(|c| c.filtered),
                    count(|c| c.tcp_segments),
                    flows,
                    exchanges.len(),
                    s(r),
                    s(f),
                    anomaly_sets.iter().map(|a| a.total()).sum::<u64>()
                );
                let terminal = std::io::stdout().is_terminal();
                let report = terminal::Report {
                    analysis: &analysis,
                    capture_line,
                    // Several files: where each one's frames are in the `frame` columns.
                    files: (file_rows.len() > 1).then(|| tables::files(&file_rows)),
                    sessions: tables::sessions(&analysis, &exchanges),
                    resumptions: tables::resumptions(&analysis, &exchanges),
                    findings: tables::findings(&analysis),
                    calls: tables::calls(&analysis, &exchanges),
                };
                let style = terminal::Style {
                    color: terminal
                        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                        && std::env::var_os("TERM").is_none_or(|t| t != "dumb"),
                    terminal,
                    all: args.all,
                };
                terminal::render(&mut out, &report, style);
            } else {
                let _ = writeln!(out, "{} frames{points} ({} not TCP, {} left out by --port), {} TCP segments, {} flows, {} exchanges, {} sessions, {} resumptions, {} findings, {} anomalies\n",
                    count(|c| c.frames), count(|c| c.not_tcp), count(|c| c.filtered), count(|c| c.tcp_segments), flows, exchanges.len(), analysis.model.sessions.len(), analysis.resumptions.len(), analysis.findings.len(),
                    anomaly_sets.iter().map(|a| a.total()).sum::<u64>());
                for t in &selected() {
                    let s = report::render(t).map_err(|e| e.to_string())?;
                    let _ = writeln!(out, "{s}");
                }
            }
        }
    }
    match out.flush() {
        Err(e)
            if matches!(format, Format::Ndjson | Format::Csv)
                && e.kind() != std::io::ErrorKind::BrokenPipe =>
        {
            return Err(format!("stdout: {e}"))
        }
        // The terminal table's writes ignore errors as well.
        _ => {}
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
    progress.finish();
    // The process ends right after this: freeing millions of records one by one would only
    // cost time (a tenth of a run), so the largest structures are left to the exit.
    std::mem::forget(analysis);
    std::mem::forget(exchanges);
    std::mem::forget(vantages);
    Ok(if failed { EXIT_FINDINGS } else { EXIT_OK })
}

/// Write one table given as consecutive pieces to `<dir>/<name>.<ext>` (`dir` created if
/// missing), one piece in memory at a time ([`report::write_chunks_to`]).
///
/// Errors: the directory or the file cannot be created or written (message names the path).
fn write_chunks(
    name: &str,
    chunks: impl IntoIterator<Item = Table>,
    dir: &std::path::Path,
    format: Format,
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let ext = match format {
        Format::Csv => "csv",
        Format::Ndjson => "ndjson",
        _ => "parquet",
    };
    let path = dir.join(format!("{name}.{ext}"));
    // Buffered: the Parquet writer's metadata (Thrift) comes in writes of a few bytes each.
    let mut file = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?,
    );
    report::write_chunks_to(&mut file, chunks, format)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.flush().map_err(|e| format!("{}: {e}", path.display()))
}

/// The address pairs of the first `n` TCP segments of a capture file: (pair, SYN without ACK,
/// carries data). Empty when the file cannot be read.
fn first_segments(path: &std::path::Path, n: usize) -> Vec<(mcpcap::ConnKey, bool, bool)> {
    let mut out = Vec::new();
    let Ok(file) = std::fs::File::open(path) else {
        return out;
    };
    let mut anomalies = mcpcap::anomaly::Anomalies::default();
    let _ = mcpcap::capture::read_capture_while(
        std::io::BufReader::new(file),
        1,
        &mut anomalies,
        |f| {
            if let mcpcap::decode::Decoded::Tcp(seg) =
                mcpcap::decode::decode(f.linktype, f.data, f.orig_len)
            {
                out.push((
                    mcpcap::conn_key(&seg),
                    seg.syn && !seg.ack,
                    seg.wire_len > 0,
                ));
            }
            out.len() < n
        },
    );
    out
}

/// A frame-level counter summed over the vantage points.
fn counter_sum(vantages: &[Vantage], f: fn(&mcpcap::Counters) -> u64) -> u64 {
    vantages.iter().map(|v| f(&v.analyzer.counters)).sum()
}

/// One vantage point being read: its files feed one analyzer, in time order.
struct Vantage {
    name: String,
    explicit: bool,
    files: Vec<String>,
    analyzer: Analyzer,
    /// Frames numbered in its files so far (some not handed to the analyzer: a malformed block,
    /// a packet of an unknown interface): the next file's first frame follows them.
    numbered: u64,
    ts_first: Option<i64>,
    last_ts: Option<i64>,
}

/// The vantage point a file belongs to: the one `--vantage` names; else the automatic one whose
/// last frame is the latest not after the file's first and whose connections the file continues
/// (a rotated part: see [`mcpcap::Continuity`]); else a new one (the file overlaps every vantage
/// point so far, or carries other connections).
fn pick_vantage(
    vantages: &mut Vec<Vantage>,
    named: &[(String, PathBuf)],
    path: &std::path::Path,
    first_ts: Option<i64>,
    options: &Options,
    ids: &std::sync::Arc<std::sync::atomic::AtomicUsize>,
    threads: usize,
) -> usize {
    let explicit = named
        .iter()
        .find(|(_, f)| f == path)
        .map(|(n, _)| n.clone());
    let found = match &explicit {
        Some(n) => vantages.iter().position(|v| &v.name == n),
        None => {
            // Candidates by time (the latest first); a rotated part also shares connections.
            let mut cands: Vec<usize> = (0..vantages.len())
                .filter(|&i| !vantages[i].explicit)
                .filter(|&i| match (vantages[i].last_ts, first_ts) {
                    (Some(l), Some(f)) => l <= f,
                    _ => true,
                })
                .collect();
            cands.sort_by_key(|&i| (std::cmp::Reverse(vantages[i].last_ts), i));
            let first = if cands.is_empty() {
                Vec::new()
            } else {
                first_segments(path, 200)
            };
            cands
                .into_iter()
                .find(|&i| vantages[i].analyzer.continuity(&first).continues())
        }
    };
    if let Some(i) = found {
        if vantages[i].ts_first.is_none() {
            vantages[i].ts_first = first_ts;
        }
        return i;
    }
    // Automatic names follow the order of first frames, so rotating a capture renames nothing.
    let name = explicit
        .clone()
        .unwrap_or_else(|| format!("v{}", vantages.len() + 1));
    vantages.push(Vantage {
        name,
        explicit: explicit.is_some(),
        files: Vec::new(),
        numbered: 0,
        // `threads` 0: every stage on this thread (see `run`); else shards (this thread's own
        // and `threads - 1` workers), even for one thread: flows of every vantage point are
        // then numbered alike for any --threads.
        analyzer: if threads == 0 {
            Analyzer::with_flow_ids(options.clone(), ids.clone())
        } else {
            Analyzer::with_flow_ids(options.clone(), ids.clone()).with_workers(threads)
        },
        ts_first: first_ts,
        last_ts: None,
    });
    vantages.len() - 1
}

/// The files of the run in capture order, each with its first frame's time: directories expand
/// to the files in them (by name), and files are read in order of their first frame's time, so
/// that rotated files (`tcpdump -C/-G`) given in any order continue one vantage point. A file
/// that cannot be opened or is not a capture gets its one-line message here and is left out;
/// a file named twice is read once.
fn capture_order(args: &[PathBuf]) -> Vec<(PathBuf, Option<i64>)> {
    // Each file with the directory it was found in (`None`: named itself).
    let mut files: Vec<(PathBuf, Option<usize>)> = Vec::new();
    let dirs: Vec<&PathBuf> = args.iter().filter(|p| p.is_dir()).collect();
    for p in args {
        if p.is_dir() {
            match std::fs::read_dir(p) {
                Ok(rd) => {
                    let (mut inside, mut other): (Vec<PathBuf>, Vec<PathBuf>) = rd
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .partition(|f| f.is_file());
                    inside.sort();
                    // Subdirectories are not searched, nor pipes or sockets read: said, not
                    // dropped silently.
                    if !other.is_empty() {
                        other.sort();
                        let names: Vec<String> = other
                            .iter()
                            .map(|f| {
                                f.file_name()
                                    .map(|n| n.to_string_lossy().into_owned())
                                    .unwrap_or_default()
                            })
                            .collect();
                        say!(
                            "mcpcap: {}: skipped {} entr{} that {} not regular files (subdirectories are not searched): {}",
                            p.display(),
                            names.len(),
                            if names.len() == 1 { "y" } else { "ies" },
                            if names.len() == 1 { "is" } else { "are" },
                            names.join(", ")
                        );
                    }
                    if inside.is_empty() {
                        say!("mcpcap: {}: directory holds no files", p.display());
                    }
                    let d = dirs.iter().position(|x| *x == p);
                    files.extend(inside.into_iter().map(|f| (f, d)));
                }
                Err(e) => say!("mcpcap: {}: {}", p.display(), e),
            }
        } else {
            files.push((p.clone(), None));
        }
    }
    let mut seen = std::collections::HashSet::new();
    files.retain(|(f, _)| seen.insert(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone())));
    let mut keyed: Vec<(i64, usize, PathBuf)> = Vec::new();
    // Files of a directory that are not captures and do not claim to be (notes, manifests): one
    // line per directory instead of an error each.
    let mut skipped: Vec<Vec<String>> = vec![Vec::new(); dirs.len()];
    for (i, (f, dir)) in files.into_iter().enumerate() {
        let first = std::fs::File::open(&f)
            .map_err(|e| e.to_string())
            .and_then(|file| {
                mcpcap::capture::first_timestamp(std::io::BufReader::new(file)).map_err(|e| match (
                    &e, dir,
                ) {
                    (mcpcap::capture::CaptureError::NotACapture, Some(d)) if !capture_name(&f) => {
                        skipped[d].push(
                            f.file_name()
                                .map(|n| n.to_string_lossy().into_owned())
                                .unwrap_or_default(),
                        );
                        String::new()
                    }
                    _ => e.to_string(),
                })
            });
        match first {
            Ok(ts) => keyed.push((ts.unwrap_or(i64::MIN), i, f)),
            Err(e) if e.is_empty() => {}
            Err(e) => say!("mcpcap: {}: {}", f.display(), e),
        }
    }
    for (d, names) in dirs.iter().zip(&skipped) {
        if !names.is_empty() {
            say!(
                "mcpcap: {}: skipped {} file(s) that are not pcap or pcapng: {}",
                d.display(),
                names.len(),
                names.join(", ")
            );
        }
    }
    keyed.sort_by_key(|(ts, i, _)| (*ts, *i));
    keyed
        .into_iter()
        .map(|(ts, _, f)| (f, (ts != i64::MIN).then_some(ts)))
        .collect()
}

/// Whether a file name says it is a capture (`.pcap`, `.pcapng`, `.cap`, `.dmp`, and rotated
/// parts like `trace.pcap1` or `trace.pcap.2`): such a file that cannot be read is an error.
fn capture_name(f: &std::path::Path) -> bool {
    let name = f
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    [".pcap", ".pcapng", ".cap", ".dmp"].iter().any(|ext| {
        name.match_indices(ext).any(|(i, _)| {
            name[i + ext.len()..]
                .trim_start_matches('.')
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
    })
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

#[cfg(test)]
mod tests {
    use super::capture_name;

    #[test]
    fn capture_names() {
        for yes in [
            "a.pcap",
            "A.PCAPNG",
            "x.cap",
            "win.dmp",
            "trace.pcap1",
            "trace.pcap.12",
            "dir/y.pcap",
        ] {
            assert!(capture_name(std::path::Path::new(yes)), "{yes}");
        }
        for no in [
            "MANIFEST.json",
            "NOTES.md",
            "a.pcap.txt",
            "capture",
            "x.pcapx",
        ] {
            assert!(!capture_name(std::path::Path::new(no)), "{no}");
        }
    }
}
