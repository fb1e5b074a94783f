//! The command line as clap parses it: the subcommands and their arguments, checked for form
//! only. What they mean together is decided in [`super::plan`].
//!
//! The types here carry `//` comments, not doc comments, where they had none: clap turns doc
//! comments into help text.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

// The whole command line.
#[derive(Parser, Debug)]
#[command(
    name = "mcpcap",
    version,
    about = "Find lost, duplicated and fabricated MCP messages across SSE resumptions in packet captures"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// The subcommands; each doc comment below is its help text.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Reassemble, decode and judge every MCP session in the captures.
    Analyze(AnalyzeArgs),
    /// Print or write the flows table (one row per TCP connection).
    Flows(AnalyzeArgs),
    /// Print or write the exchanges table (one row per HTTP request/response).
    Exchanges(AnalyzeArgs),
    /// Print or write the events table (one row per SSE event).
    Events(AnalyzeArgs),
    /// Write the packets of sessions, findings' sessions or flows to a pcapng file
    /// (`--out FILE.pcapng`), with a comment on each frame a finding cites and the TLS secrets
    /// of the connections written.
    Extract(ExtractArgs),
    /// Write the postmortem report of the captures as one self-contained HTML file
    /// (`--out FILE.html`): a timeline, a narrative and the evidence of every session that is
    /// not intact.
    Report(ReportArgs),
    /// Write a large synthetic capture for benchmarks (deterministic from the seed).
    Synth(SynthArgs),
}

// `mcpcap synth`.
#[derive(clap::Args, Debug)]
pub struct SynthArgs {
    /// Output pcap file.
    #[arg(long, short)]
    pub out: PathBuf,
    /// Size to reach, in bytes (suffixes K, M, G: powers of 1024).
    #[arg(long, default_value = "100M", value_parser = parse_size)]
    pub bytes: u64,
    /// Seed of the pseudo-random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Sessions running at once.
    #[arg(long, default_value_t = 64)]
    pub concurrent: usize,
    /// Every connection in TLS 1.3 (TLS_AES_128_GCM_SHA256), with its secrets in an NSS key
    /// log (`--keylog`, else `<out>.keys`); `--bytes` then counts the capture without the TLS
    /// bytes, so it carries the traffic of the cleartext capture of the same seed.
    #[arg(long)]
    pub tls: bool,
    /// Where `--tls` writes the key log (default: the output path with `.keys` appended).
    #[arg(long, value_name = "FILE", requires = "tls")]
    pub keylog: Option<PathBuf>,
}

/// A size in bytes: a number with an optional suffix K, M or G (powers of 1024, either case).
///
/// Errors: the number does not parse, or the size does not fit in a `u64`; the message quotes
/// the value (clap prefixes it with the argument).
fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim()
        .parse::<u64>()
        .map_err(|e| format!("{s:?}: {e}"))?
        .checked_mul(mult)
        .ok_or_else(|| format!("{s:?}: too large"))
}

// `mcpcap extract`: the input options of `analyze`, the file written, and which packets (the
// selections are repeatable and combined: the union of the connections they involve).
#[derive(clap::Args, Debug)]
pub struct ExtractArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// The pcapng file to write (replaced if it exists).
    #[arg(long, value_name = "FILE.pcapng")]
    pub out: Option<PathBuf>,
    /// A finding (its number, `[n]` in the report, the `finding` column): the packets of its
    /// session, with comments on the frames it cites (repeatable).
    #[arg(long, value_name = "N")]
    pub finding: Vec<u64>,
    /// A session (its `session_id`, as the tables show it): the packets of every connection
    /// that carried one of its exchanges, with comments on the frames its findings cite
    /// (repeatable).
    #[arg(long, value_name = "ID")]
    pub session: Vec<String>,
    /// A TCP connection (its `flow_id`, `F3`, as the tables show it): its packets, with
    /// comments on the frames cited by the findings that cite one of its frames (repeatable).
    #[arg(long, value_name = "F")]
    pub flow: Vec<String>,
}

// `mcpcap report`: the input options of `analyze` and the page written.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// The HTML file to write (replaced if it exists).
    #[arg(long, value_name = "FILE.html")]
    pub out: Option<PathBuf>,
}

// `--format`.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum FormatArg {
    Table,
    Csv,
    Parquet,
    Ndjson,
    Har,
}

// `--fail-on`.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum FailOn {
    Error,
    Warning,
    Info,
    Never,
}

// The arguments of `analyze`, `flows`, `exchanges` and `events`: the input options, and what
// is written.
#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// With `--format table` on a terminal: list every intact session and its findings (more
    /// than 20 collapse into one line otherwise).
    #[arg(long)]
    pub all: bool,
    /// Output format (default: table on a terminal, ndjson otherwise); `har` (`exchanges`
    /// only): the exchanges as a HAR 1.2 document.
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Directory for csv/parquet files (one file per table); without it, csv writes the one
    /// table of the command (findings for `analyze`) to standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the postmortem report, one self-contained HTML file (as `mcpcap report`).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Exit 1 when a finding of this severity or worse exists.
    #[arg(long, value_enum, default_value = "error")]
    pub fail_on: FailOn,
    /// Write each direction's reassembled bytes to DIR/<flow_id>.orig.bin and .resp.bin
    /// (gaps are holes of the missing length, so file offsets are stream offsets). Runs on
    /// one thread.
    #[arg(long = "dump-streams", value_name = "DIR")]
    pub dump_streams: Option<PathBuf>,
}

impl AnalyzeArgs {
    /// The arguments of an analysis that writes no tables of its own (`extract`, `report`):
    /// `input`, and the defaults of the rest.
    pub fn of_input(input: InputArgs) -> AnalyzeArgs {
        AnalyzeArgs {
            input,
            all: false,
            format: None,
            out: None,
            report: None,
            fail_on: FailOn::Error,
            dump_streams: None,
        }
    }
}

// The input options of every analysing command: what is read, and how.
#[derive(clap::Args, Debug, Clone)]
pub struct InputArgs {
    /// Capture files (pcap or pcapng) or directories of them, or `-` for one capture on standard
    /// input. Files whose times follow each other are one vantage point (rotation); files whose
    /// times overlap are separate vantage points.
    #[arg(required_unless_present = "vantage")]
    pub captures: Vec<PathBuf>,
    /// Threads for reassembly and HTTP, the reading thread included (flows sharded after
    /// decoding); 0: all cores. The output is the same for any value.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// No progress bar (it is shown only on a terminal, for runs over a second).
    #[arg(long, short)]
    pub quiet: bool,
    /// Put FILE in vantage point NAME (repeatable; several files of one NAME are rotated parts).
    /// Other vantage points are named v1, v2, … in order of their first frame.
    #[arg(long = "vantage", value_name = "NAME=FILE")]
    pub vantage: Vec<String>,
    /// Keep only TCP connections with this port on either side (repeatable).
    #[arg(long = "port")]
    pub ports: Vec<u16>,
    /// JSON pointer to an application sequence field in JSON-RPC messages (repeatable).
    #[arg(long = "app-seq")]
    pub app_seq: Vec<String>,
    /// Response header naming the backend that served a response (repeatable; checked before
    /// X-Backend, X-Served-By and X-Upstream).
    #[arg(long = "backend-header", value_name = "NAME")]
    pub backend_headers: Vec<String>,
    /// TLS key log in the NSS format (SSLKEYLOGFILE; repeatable): TLS connections whose
    /// secrets it holds are decrypted and read as cleartext.
    #[arg(long = "tls-keylog", value_name = "FILE")]
    pub tls_keylog: Vec<PathBuf>,
}
