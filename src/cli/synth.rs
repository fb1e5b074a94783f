//! `mcpcap synth`: write a synthetic capture ([`mcpcap::synth`]) to a file and say what it holds.

use std::io::BufWriter;
use std::path::PathBuf;

use super::args::SynthArgs;
use super::{at, EXIT_OK};

/// Write the capture `args` describe to `args.out` (with `--tls`, its key log to `--keylog` or
/// `<out>.keys`); the summary line goes to standard error.
///
/// Errors: a file cannot be created or written (the message names it).
pub fn run(args: &SynthArgs) -> anyhow::Result<i32> {
    let file = std::fs::File::create(&args.out).map_err(|e| at(&args.out, e))?;
    let w = BufWriter::with_capacity(1 << 20, file);
    let opts = mcpcap::synth::SynthOptions {
        bytes: args.bytes,
        seed: args.seed,
        concurrent: args.concurrent,
    };
    let keys_path = args.keylog.clone().unwrap_or_else(|| {
        let mut p = args.out.clone().into_os_string();
        p.push(".keys");
        PathBuf::from(p)
    });
    let s = if args.tls {
        let kf = std::fs::File::create(&keys_path).map_err(|e| at(&keys_path, e))?;
        let mut keys = BufWriter::new(kf);
        // A write error is reported at the capture's path, also when the key log failed.
        mcpcap::synth::write_tls_capture(w, &mut keys, &opts).map_err(|e| at(&args.out, e))?
    } else {
        mcpcap::synth::write_capture(w, &opts).map_err(|e| at(&args.out, e))?
    };
    say!(
        "mcpcap: {}: {} bytes, {} frames, {} sessions, {} events, {} resumptions ({} forks){}",
        args.out.display(),
        s.bytes,
        s.frames,
        s.sessions,
        s.events,
        s.resumptions,
        s.forks,
        if args.tls {
            format!("; TLS 1.3, key log {}", keys_path.display())
        } else {
            String::new()
        }
    );
    Ok(EXIT_OK)
}
