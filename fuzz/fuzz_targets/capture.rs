//! Any bytes as a capture file, through the whole pipeline: no panic, bounded memory.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut a = mcpcap::Analyzer::new(mcpcap::Options::default());
    let mut anomalies = mcpcap::anomaly::Anomalies::default();
    let _ = mcpcap::capture::read_capture(data, 1, &mut anomalies, |f| a.frame(&f));
    let ex = a.finish();
    let _ = mcpcap::analyze_exchanges(&ex, &[], a.counters.ts_last);
});
