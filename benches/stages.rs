//! Per-stage benchmarks (criterion) on fixture captures: capture reading, the whole pipeline up
//! to exchanges (decode, reassembly, HTTP, SSE, JSON-RPC), and session analysis. Throughput is
//! reported in bytes of capture. Run with `cargo bench`.

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mcpcap::{Analyzer, Options};

fn fixture() -> Vec<u8> {
    // A generated capture big enough to measure, made in memory from a fixed seed.
    let mut v = Vec::new();
    mcpcap::synth::write_capture(
        &mut v,
        &mcpcap::synth::SynthOptions {
            bytes: 8 << 20,
            seed: 1,
            concurrent: 32,
        },
    )
    .expect("synth");
    v
}

fn exchanges(bytes: &[u8]) -> (Vec<mcpcap::http::Exchange>, Option<i64>) {
    let mut a = Analyzer::new(Options::default());
    let mut anomalies = mcpcap::anomaly::Anomalies::default();
    mcpcap::capture::read_capture(bytes, 1, &mut anomalies, |f| a.frame(&f)).expect("read");
    (a.finish(), a.counters.ts_last)
}

fn stages(c: &mut Criterion) {
    let bytes = fixture();
    let real = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-gen/many_sessions.pcap"),
    )
    .expect("fixture");
    let mut g = c.benchmark_group("stages");
    g.sample_size(10);
    for (name, data) in [("synth", &bytes), ("many_sessions", &real)] {
        g.throughput(Throughput::Bytes(data.len() as u64));
        g.bench_function(format!("read/{name}"), |b| {
            b.iter(|| {
                let mut n = 0u64;
                let mut anomalies = mcpcap::anomaly::Anomalies::default();
                mcpcap::capture::read_capture(&data[..], 1, &mut anomalies, |f| {
                    n += f.data.len() as u64
                })
                .expect("read");
                n
            })
        });
        g.bench_function(format!("exchanges/{name}"), |b| {
            b.iter(|| exchanges(data).0.len())
        });
        let (ex, end) = exchanges(data);
        g.bench_function(format!("analyze/{name}"), |b| {
            b.iter(|| mcpcap::analyze_exchanges(&ex, &[], end).findings.len())
        });
    }
    g.finish();
}

/// JSON-RPC classification of one SSE `data` text (the fast path), per shape: a result whose
/// text has few escapes, one whose text is JSON with an escape every few bytes, and a progress
/// notification. Throughput in bytes of JSON.
fn jsonrpc(c: &mut Criterion) {
    let prose = "All work and no play makes Jack a dull boy. ".repeat(40);
    let json_text = serde_json::to_string(
        &(0..40)
            .map(|i| serde_json::json!({"id": i, "name": format!("item {i}"), "tags": ["a", "b"]}))
            .collect::<Vec<_>>(),
    )
    .expect("json");
    let result = |text: &str| {
        serde_json::json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": text}]}})
            .to_string()
    };
    let shapes = [
        ("result_prose", result(&prose)),
        ("result_json_text", result(&json_text)),
        (
            "progress",
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t-17","progress":3,"total":10}}"#
                .to_string(),
        ),
    ];
    let mut g = c.benchmark_group("jsonrpc");
    for (name, text) in &shapes {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(*name, |b| {
            b.iter(|| mcpcap::jsonrpc::parse_str(text, &[]).map(|m| m.len()))
        });
    }
    g.finish();
}

criterion_group!(benches, stages, jsonrpc);
criterion_main!(benches);
