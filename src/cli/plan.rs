//! Arguments → plan: every check of an analysing command's arguments and every decision they
//! imply (format, destination, tables, threads, exit threshold, progress bar, terminal style),
//! made here once, before anything is created or read. [`super::run`] then carries the plan out.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{anyhow, bail};

use mcpcap::capture::SecretsBlock;
use mcpcap::detect::Severity;
use mcpcap::report::{self, Format};
use mcpcap::Options;

use super::args::{AnalyzeArgs, FailOn, FormatArg};
use super::terminal;

/// What an analysing command produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `analyze`: every table, the terminal report, and an exit status by `--fail-on`.
    Analyze,
    /// `flows`, `exchanges`, `events`: the one table of that name (exit 0 once written).
    Table(&'static str),
    /// `report`: the HTML report alone (exit 0 once written).
    Report,
}

impl Mode {
    /// The table written to standard output as CSV or NDJSON: `findings` for `analyze`, else
    /// the command's own table.
    pub fn stdout_table(self) -> &'static str {
        match self {
            Mode::Analyze | Mode::Report => "findings",
            Mode::Table(name) => name,
        }
    }

    /// The tables written to files (or shown, for the single-table commands), in order.
    fn tables(self) -> Vec<&'static str> {
        match self {
            Mode::Analyze => report::TABLE_NAMES.to_vec(),
            Mode::Table(name) => vec![name],
            Mode::Report => Vec::new(),
        }
    }
}

/// The captures of a run, as named on the command line.
#[derive(Debug, Clone)]
pub enum Inputs {
    /// One capture read once, as it comes, never reopened: standard input (`-`, `stdin` true),
    /// or a path that is neither a regular file nor a directory (a FIFO, `/dev/stdin`, `<(…)`):
    /// ordering files reads each one's start first, which would use up a pipe's bytes.
    Stream {
        /// The path as given (`-` for standard input).
        path: PathBuf,
        /// Read standard input rather than open `path`.
        stdin: bool,
    },
    /// Capture files and directories of them (the positional arguments, then the `--vantage`
    /// files), read in time order ([`super::inputs::capture_order`]).
    Files(Vec<PathBuf>),
}

/// Where the tables go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Standard output: the terminal report (`--format table`), or the one table of
    /// [`Mode::stdout_table`] as CSV or NDJSON, or the HAR document.
    Stdout,
    /// One file per table, `<dir>/<table>.<csv|parquet|ndjson>`, or `<dir>/exchanges.har` (the
    /// directory is created if missing).
    Dir(PathBuf),
}

/// Everything an analysing command will do, decided from its arguments.
#[derive(Debug)]
pub struct Plan {
    /// The command.
    pub mode: Mode,
    /// The captures.
    pub inputs: Inputs,
    /// `--vantage NAME=FILE`: (vantage point name, file), in argument order. Every other file
    /// joins a vantage point by time and connections ([`super::read`]).
    pub named: Vec<(String, PathBuf)>,
    /// Output format (never [`Format::Parquet`] with [`Destination::Stdout`]).
    pub format: Format,
    /// Where the tables go ([`Destination::Stdout`] always for [`Format::Table`]).
    pub destination: Destination,
    /// The tables written, in order (file stems).
    pub tables: Vec<&'static str>,
    /// Of `tables`, those written on a thread of their own while the detectors run (`events`
    /// and `exchanges`, which need only the session model): with files and more than one
    /// thread only.
    pub beside: Vec<&'static str>,
    /// Exit [`super::EXIT_FINDINGS`] when a finding of this severity or worse exists; `None`:
    /// never (`--fail-on never`, or a single-table command, which does not judge).
    pub fail_on: Option<Severity>,
    /// Threads for reassembly and HTTP, the reading thread included; 0: no shards, every stage
    /// on the reading thread (for `--dump-streams`, whose tap sees the streams there, and for
    /// `--threads 1` on one input).
    pub threads: usize,
    /// Response header names that identify a backend (`--backend-header`).
    pub backend_headers: Vec<String>,
    /// `--dump-streams DIR`.
    pub dump_streams: Option<PathBuf>,
    /// Show the progress bar (stderr is a terminal, no `--quiet`).
    pub progress: bool,
    /// The progress bar leaves before the output is written (no `--out`: the output is on the
    /// terminal or standard output). With `--format table --out DIR` it stays to the end.
    pub progress_leaves_first: bool,
    /// How the terminal report looks (`--format table` of `analyze`).
    pub style: terminal::Style,
    /// `extract`: the pcapng file to write instead of the tables.
    pub extract: Option<super::extract::Extract>,
    /// The HTML report's file (`analyze --report FILE`, `report --out FILE`).
    pub report: Option<PathBuf>,
    /// What `mcpcap extract` needs after its selection to number frames and findings as this
    /// run does ([`super::extract_args`]), for the report's commands.
    pub extract_args: String,
    /// `--port` and `--app-seq` as [`Options`]; [`Plan::options`] completes them.
    options: Options,
}

impl Plan {
    /// Check the arguments of `mode` and decide what the run does.
    ///
    /// Errors (the one-line message, in this order of checks): an `--app-seq` that is not a
    /// JSON pointer, `--format har` for a command other than `exchanges`, `--format parquet`
    /// without `--out`, a `--vantage` that is not `NAME=FILE`,
    /// standard input or a pipe among other captures.
    pub fn new(mode: Mode, args: &AnalyzeArgs) -> anyhow::Result<Plan> {
        let input = &args.input;
        check_app_seq(&input.app_seq)?;
        let format = format(args.format);
        if format == Format::Har && mode != Mode::Table("exchanges") {
            bail!("--format har is for `mcpcap exchanges` only");
        }
        if format == Format::Parquet && args.out.is_none() {
            bail!("--format parquet needs --out DIR");
        }
        let named = named(&input.vantage)?;
        let mut paths = input.captures.clone();
        paths.extend(named.iter().map(|(_, f)| f.clone()));
        let threads = threads(input.threads, paths.len(), args.dump_streams.is_some());
        let inputs = inputs(paths)?;
        let destination = match &args.out {
            Some(dir) if format != Format::Table && mode != Mode::Report => {
                Destination::Dir(dir.clone())
            }
            _ => Destination::Stdout,
        };
        let tables = mode.tables();
        Ok(Plan {
            mode,
            inputs,
            named,
            format,
            // The HAR document needs the detectors' verdicts: it is written after them.
            beside: match format {
                Format::Har => Vec::new(),
                _ => beside(&tables, &destination, threads),
            },
            destination,
            tables,
            fail_on: match mode {
                Mode::Analyze => threshold(args.fail_on),
                Mode::Table(_) | Mode::Report => None,
            },
            threads,
            backend_headers: input.backend_headers.clone(),
            dump_streams: args.dump_streams.clone(),
            progress: !input.quiet && std::io::stderr().is_terminal(),
            progress_leaves_first: args.out.is_none(),
            style: style(args.all),
            extract: None,
            report: args.report.clone(),
            extract_args: super::extract_args(&args.input),
            options: Options {
                ports: input.ports.clone(),
                app_seq: input.app_seq.clone(),
                tls: mcpcap::tls::TlsOptions {
                    secrets: keylogs(&input.tls_keylog)?,
                },
                ..Default::default()
            },
        })
    }

    /// The analyzers' options, once the inputs are known to be `files` capture files: with one
    /// file and no `--vantage`, no later file can continue its connections, so they are not
    /// tracked ([`Options::single_file`]). The TLS key logs of the files' Decryption Secrets
    /// Blocks (`embedded`, pcapng spec §4.7) join those of `--tls-keylog`.
    pub fn options(&self, files: usize, embedded: &[SecretsBlock]) -> Options {
        let mut options = Options {
            single_file: files == 1 && self.named.is_empty(),
            ..self.options.clone()
        };
        let logs: Vec<&SecretsBlock> = embedded
            .iter()
            .filter(|b| b.secrets_type == mcpcap::capture::SECRETS_TLS_KEY_LOG)
            .collect();
        if !logs.is_empty() {
            let mut secrets = options.tls.secrets.as_deref().cloned().unwrap_or_default();
            for b in logs {
                secrets.add_keylog(&String::from_utf8_lossy(&b.data));
            }
            if !secrets.is_empty() {
                options.tls.secrets = Some(std::sync::Arc::new(secrets));
            }
        }
        options
    }
}

/// The secrets of every `--tls-keylog` file; `None` without any. Errors: a file that cannot be
/// read, or one without a single line of secrets.
fn keylogs(
    files: &[PathBuf],
) -> anyhow::Result<Option<std::sync::Arc<mcpcap::tls::keylog::Secrets>>> {
    if files.is_empty() {
        return Ok(None);
    }
    let mut secrets = mcpcap::tls::keylog::Secrets::default();
    for f in files {
        let text =
            std::fs::read(f).map_err(|e| anyhow::anyhow!("--tls-keylog {}: {e}", f.display()))?;
        secrets.add_keylog(&String::from_utf8_lossy(&text));
    }
    if secrets.is_empty() {
        bail!("--tls-keylog: no TLS secrets in the key log (NSS key log format)");
    }
    Ok(Some(std::sync::Arc::new(secrets)))
}

/// Each `--app-seq` is empty (the whole message) or a JSON pointer (RFC 6901).
fn check_app_seq(pointers: &[String]) -> anyhow::Result<()> {
    match pointers
        .iter()
        .find(|p| !p.is_empty() && !p.starts_with('/'))
    {
        Some(p) => bail!("--app-seq {p:?}: a JSON pointer starts with '/' (RFC 6901)"),
        None => Ok(()),
    }
}

/// `--format`, or by default the terminal report on a terminal and NDJSON otherwise.
fn format(arg: Option<FormatArg>) -> Format {
    match arg {
        Some(FormatArg::Table) => Format::Table,
        Some(FormatArg::Csv) => Format::Csv,
        Some(FormatArg::Parquet) => Format::Parquet,
        Some(FormatArg::Ndjson) => Format::Ndjson,
        Some(FormatArg::Har) => Format::Har,
        None if std::io::stdout().is_terminal() => Format::Table,
        None => Format::Ndjson,
    }
}

/// The `--vantage NAME=FILE` arguments as (name, file); neither side may be empty.
fn named(args: &[String]) -> anyhow::Result<Vec<(String, PathBuf)>> {
    args.iter()
        .map(|v| match v.split_once('=') {
            Some((n, f)) if !n.is_empty() && !f.is_empty() => Ok((n.to_string(), PathBuf::from(f))),
            _ => Err(anyhow!("--vantage {v:?}: expected NAME=FILE")),
        })
        .collect()
}

/// The threads of the run (see [`Plan::threads`]) from `--threads` (0: all cores), the number
/// of inputs named, and whether `--dump-streams` is given.
///
/// Shards number their flows when they finish, which keeps the numbering of several vantage
/// points' interleaved files independent of `--threads`; one file is one vantage point,
/// numbered alike either way, so `--threads 1` on it needs no shard.
fn threads(arg: usize, inputs: usize, dump: bool) -> usize {
    match (arg, dump) {
        (_, true) => 0,
        (1, _) if inputs == 1 => 0,
        (0, _) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        (n, _) => n,
    }
}

/// The inputs as a stream (`-` or a pipe, which must then be the only input) or as files.
fn inputs(paths: Vec<PathBuf>) -> anyhow::Result<Inputs> {
    let stdin = paths.iter().any(|p| p.as_os_str() == "-");
    let pipe = paths
        .iter()
        .find(|p| std::fs::metadata(p).is_ok_and(|m| !m.is_file() && !m.is_dir()));
    if stdin && paths.len() > 1 {
        bail!("standard input (-) is read only as the one capture");
    }
    if let (Some(p), true) = (pipe, paths.len() > 1) {
        bail!(
            "{}: not a regular file (a pipe?): it is read only as the one capture",
            p.display()
        );
    }
    let stream = stdin || pipe.is_some();
    Ok(match paths.first() {
        Some(path) if stream => Inputs::Stream {
            path: path.clone(),
            stdin,
        },
        _ => Inputs::Files(paths),
    })
}

/// The tables written beside the detectors (see [`Plan::beside`]): the events, then the
/// exchanges, of those the command writes.
fn beside(tables: &[&'static str], destination: &Destination, threads: usize) -> Vec<&'static str> {
    match destination {
        Destination::Dir(_) if threads > 1 => ["events", "exchanges"]
            .into_iter()
            .filter(|n| tables.contains(n))
            .collect(),
        _ => Vec::new(),
    }
}

/// The severity `--fail-on` names (`None` for `never`).
fn threshold(fail_on: FailOn) -> Option<Severity> {
    match fail_on {
        FailOn::Error => Some(Severity::Error),
        FailOn::Warning => Some(Severity::Warning),
        FailOn::Info => Some(Severity::Info),
        FailOn::Never => None,
    }
}

/// The terminal report's style: colour on a terminal unless `NO_COLOR` is set (not empty) or
/// `TERM` is `dumb`; `all` is `--all`.
fn style(all: bool) -> terminal::Style {
    let terminal = std::io::stdout().is_terminal();
    terminal::Style {
        color: terminal
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            && std::env::var_os("TERM").is_none_or(|t| t != "dumb"),
        terminal,
        all,
    }
}
