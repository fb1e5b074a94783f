//! Command line: arguments → plan → execution, as ripgrep does it.
//!
//! - [`args`]: what clap parses (form only);
//! - [`plan`]: an analysing command's arguments checked and resolved into a [`plan::Plan`];
//! - [`run`]: the plan carried out, with [`inputs`] (the files in capture order), [`read`] (the
//!   files into vantage points' analyzers), [`output`] (the tables where they go, files made
//!   here) and [`terminal`] (the terminal report); [`dump`] and [`progress`] serve them;
//! - [`synth`]: the benchmark generator's command.
//!
//! Errors are [`anyhow::Error`]s whose text is the whole one-line message, printed after
//! `mcpcap: ` with exit status [`EXIT_USAGE`].

/// `eprintln!` that cannot panic: standard error may be a closed pipe too
/// (`mcpcap … 2>&1 | head`), and a message that cannot be written is dropped.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod args;
mod dump;
mod extract;
mod inputs;
mod output;
mod plan;
mod progress;
mod read;
mod run;
mod synth;
mod terminal;

use std::fmt::Display;
use std::path::Path;

use clap::Parser;

use args::{Cli, Command};
use plan::{Mode, Plan};

/// Exit status: no finding reached `--fail-on`.
pub const EXIT_OK: i32 = 0;
/// Exit status: a finding reached `--fail-on`.
pub const EXIT_FINDINGS: i32 = 1;
/// Exit status: bad usage or no capture could be read.
pub const EXIT_USAGE: i32 = 2;

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
    let result = match cli.command {
        Command::Analyze(a) => analyze(Mode::Analyze, &a),
        Command::Flows(a) => analyze(Mode::Table("flows"), &a),
        Command::Exchanges(a) => analyze(Mode::Table("exchanges"), &a),
        Command::Events(a) => analyze(Mode::Table("events"), &a),
        Command::Extract(x) => extract(&x),
        Command::Report(a) => report(&a),
        Command::Synth(a) => synth::run(&a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            say!("mcpcap: {e:#}");
            EXIT_USAGE
        }
    }
}

/// An analysing command: its plan, then the run.
fn analyze(mode: Mode, args: &args::AnalyzeArgs) -> anyhow::Result<i32> {
    run::run(&Plan::new(mode, args)?)
}

/// `extract`: the plan of `analyze` for its input options, then the run, writing the pcapng
/// file instead of the tables.
///
/// Errors (one line each): no `--out`, no selection, a `--flow` that is not a flow id.
fn extract(x: &args::ExtractArgs) -> anyhow::Result<i32> {
    let Some(out) = x.out.clone() else {
        anyhow::bail!("extract needs --out FILE.pcapng");
    };
    let mut selections: Vec<extract::Selection> = Vec::new();
    selections.extend(x.finding.iter().map(|&n| extract::Selection::Finding(n)));
    selections.extend(x.session.iter().cloned().map(extract::Selection::Session));
    for f in &x.flow {
        let index = f
            .strip_prefix('F')
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| {
                anyhow::anyhow!("--flow {f}: not a flow id (F<n>, as the tables show it)")
            })?;
        selections.push(extract::Selection::Flow(index));
    }
    if selections.is_empty() {
        anyhow::bail!("extract needs a selection: --finding N, --session ID or --flow F");
    }
    let mut plan = Plan::new(
        Mode::Table("findings"),
        &args::AnalyzeArgs::of_input(x.input.clone()),
    )?;
    plan.destination = plan::Destination::Stdout;
    plan.beside.clear();
    plan.extract = Some(extract::Extract { selections, out });
    run::run(&plan)
}

/// `report`: the plan of `analyze` for its input options, then the run, writing the HTML
/// report to `--out` instead of the tables.
fn report(x: &args::ReportArgs) -> anyhow::Result<i32> {
    let Some(out) = x.out.clone() else {
        anyhow::bail!("report needs --out FILE.html");
    };
    let mut plan = Plan::new(Mode::Report, &args::AnalyzeArgs::of_input(x.input.clone()))?;
    plan.report = Some(out);
    run::run(&plan)
}

/// The arguments after the selection of an `mcpcap extract` command that numbers frames and
/// findings as a run with `args` did: the options that change what is analysed, then the
/// captures, each quoted for a POSIX shell where it needs it.
pub fn extract_args(args: &args::InputArgs) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut opt = |name: &str, v: &dyn Display| {
        words.push(name.to_string());
        words.push(shell_quote(&v.to_string()));
    };
    for p in &args.ports {
        opt("--port", p);
    }
    for p in &args.app_seq {
        opt("--app-seq", p);
    }
    for h in &args.backend_headers {
        opt("--backend-header", h);
    }
    for k in &args.tls_keylog {
        opt("--tls-keylog", &k.display());
    }
    for v in &args.vantage {
        opt("--vantage", v);
    }
    words.extend(
        args.captures
            .iter()
            .map(|c| shell_quote(&c.display().to_string())),
    );
    words.join(" ")
}

/// `s` as one word of a POSIX shell: as it is when it holds only characters no shell treats
/// specially, else in single quotes (a quote inside as `'\''`).
fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The error of an operation on `path` that failed with `e`: `<path>: <e>`, as every message
/// about a file reads. The reason is written into the message rather than kept as a source: a
/// polars error gives its I/O cause both in its text and as its source, so a chain would
/// print it twice.
fn at(path: &Path, e: impl Display) -> anyhow::Error {
    anyhow::anyhow!("{}: {e}", path.display())
}
