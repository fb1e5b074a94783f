//! `mcpcap synth`: write a synthetic capture ([`mcpcap::synth`]) to a file and say what it holds.

use super::args::SynthArgs;
use super::{at, EXIT_OK};

/// Write the capture `args` describe to `args.out`; the summary line goes to standard error.
///
/// Errors: the file cannot be created or written (the message names it).
pub fn run(args: &SynthArgs) -> anyhow::Result<i32> {
    let file = std::fs::File::create(&args.out).map_err(|e| at(&args.out, e))?;
    let w = std::io::BufWriter::with_capacity(1 << 20, file);
    let s = mcpcap::synth::write_capture(
        w,
        &mcpcap::synth::SynthOptions {
            bytes: args.bytes,
            seed: args.seed,
            concurrent: args.concurrent,
        },
    )
    .map_err(|e| at(&args.out, e))?;
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
