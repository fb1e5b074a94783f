//! Cost against input size on the shapes that once made the analysis quadratic (the cost must
//! grow linearly with the capture). Each shape is built at `n` and `4n` (with the test
//! captures' builder, or `tests/shapes` for a client resuming thousands of times from one
//! `Last-Event-ID`, each answered by an empty stream) and run through the whole pipeline in memory; throughput is reported in
//! the shape's own elements (resumptions, tokens, results, requests, streams, head bytes), so
//! a linear cost shows the same elements per second at both sizes. Run with
//! `cargo bench --bench scaling`.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/shapes/mod.rs"]
mod shapes;

use common::*;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mcpcap::{Analyzer, Options};
use serde_json::{json, Value};

const S: Option<&str> = Some("sess-1");

fn handshake(cap: &mut Capture) {
    let mut c = cap.connect();
    c.client(cap, &post(None, &initialize(0)));
    c.server(cap, &json_response(S, &initialize_result(0)));
    c.close(cap);
}

/// Events as consecutive chunks of an SSE body already under way.
fn chunks(evs: &[Ev]) -> Vec<u8> {
    evs.iter()
        .flat_map(|e| chunk(e.text().as_bytes()))
        .collect()
}

/// A GET stream of `10 n` events with Go ids, then `n` resumptions from a cursor no stream
/// delivered (a client looping on it).
fn unknown_cursor_loop(n: usize) -> Capture {
    let mut cap = Capture::new();
    handshake(&mut cap);
    let mut g = cap.connect();
    g.client(&mut cap, &get(S, None));
    let evs: Vec<Ev> = (0..10 * n)
        .map(|i| {
            let m = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": i}});
            Ev::id(format!("KX3ABCDEFGHIJKLMNOPQRSTUV7_{i}"), m)
        })
        .collect();
    g.server(&mut cap, &sse_response(S, &evs, true));
    g.close(&mut cap);
    for _ in 0..n {
        let mut r = cap.connect();
        r.client(&mut cap, &get(S, Some("ZZ3ABCDEFGHIJKLMNOPQRSTUV7_5")));
        r.server(&mut cap, &sse_response(S, &[], true));
        r.close(&mut cap);
    }
    cap
}

/// `n` tools/calls whose progress (1 of 3) a GET stream carries, cut; the resumption carries
/// their progress 2 of 3.
fn many_tokens(n: usize) -> Capture {
    let mut cap = Capture::new();
    handshake(&mut cap);
    let mut g = cap.connect();
    g.client(&mut cap, &get(S, None));
    g.server(&mut cap, &sse_head(S));
    let tok = |k: usize| json!(format!("tok{k}"));
    for k in 0..n {
        let mut c = cap.connect();
        c.client(&mut cap, &post(S, &tools_call(k as i64 + 1, &tok(k))));
        c.server(&mut cap, &accepted());
        c.close(&mut cap);
        g.server(&mut cap, &chunks(&[Ev::id(k + 1, progress(&tok(k), 1, 3))]));
    }
    g.server_close(&mut cap);
    let mut r = cap.connect();
    r.client(&mut cap, &get(S, Some(&n.to_string())));
    let evs: Vec<Ev> = (0..n)
        .map(|k| Ev::id(n + k + 1, progress(&tok(k), 2, 3)))
        .collect();
    r.server(&mut cap, &sse_response(S, &evs, true));
    r.close(&mut cap);
    cap
}

/// One SSE event whose `data` is a JSON array of `msgs`, a message per line.
fn batch_event(id: &str, msgs: &[Value]) -> Vec<u8> {
    let lines: Vec<String> = msgs.iter().map(|m| format!("data: {m}")).collect();
    let text = format!(
        "id: {id}\nevent: message\ndata: [\n{}\ndata: ]\n\n",
        lines.join(",\n")
    );
    chunk(text.as_bytes())
}

/// A batch of `n` tools/calls: their progress in one event, cut; the resumption answers them
/// all in one batch event.
fn result_batch(n: usize) -> Capture {
    let mut cap = Capture::new();
    handshake(&mut cap);
    let calls: Vec<Value> = (1..=n as i64).map(|i| tools_call(i, &json!(i))).collect();
    let mut c = cap.connect();
    c.client(&mut cap, &post(S, &Value::Array(calls)));
    let progs: Vec<Value> = (1..=n as i64).map(|i| progress(&json!(i), 1, 2)).collect();
    let mut body = sse_head(S);
    body.extend(batch_event("1", &progs));
    c.server(&mut cap, &body);
    c.server_close(&mut cap);
    let results: Vec<Value> = (1..=n as i64).map(result).collect();
    let mut r = cap.connect();
    r.client(&mut cap, &get(S, Some("1")));
    let mut body = sse_head(S);
    body.extend(batch_event("2", &results));
    body.extend_from_slice(LAST_CHUNK);
    r.server(&mut cap, &body);
    r.close(&mut cap);
    cap
}

/// A batch of `n` tools/calls sharing one progress token: `n` progress values, a reset, a
/// resumption that goes on live, then one batch of `n` cancels (each request's cancel judged
/// against the shared token's progress).
fn cancelled_batch(n: usize) -> Capture {
    let mut cap = Capture::new();
    handshake(&mut cap);
    let token = json!("tok");
    let step = |i: usize| progress(&token, i as u64, 10 * n as u64);
    let calls: Vec<Value> = (1..=n as i64).map(|i| tools_call(i, &token)).collect();
    let mut c = cap.connect();
    c.client(&mut cap, &post(S, &Value::Array(calls)));
    let mut body = sse_head(S);
    body.extend(chunks(
        &(1..=n).map(|i| Ev::id(i, step(i))).collect::<Vec<_>>(),
    ));
    c.server(&mut cap, &body);
    c.server_reset(&mut cap);
    cap.wait(500_000);
    let mut r = cap.connect();
    r.client(&mut cap, &get(S, Some(&n.to_string())));
    r.server(&mut cap, &sse_head(S));
    for i in n + 1..=n + 3 {
        cap.wait(2_000);
        r.server(&mut cap, &chunks(&[Ev::id(i, step(i))]));
    }
    let cancels: Vec<Value> = (1..=n as i64)
        .map(|i| json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}}))
        .collect();
    let mut k = cap.connect();
    k.client(&mut cap, &post(S, &Value::Array(cancels)));
    k.server(&mut cap, &accepted());
    k.close(&mut cap);
    r.close(&mut cap);
    cap
}

/// `n` streams the capture began inside, all with ids 1.., each resumed from `4` while they
/// still deliver.
fn headless_shared_ids(n: usize) -> Capture {
    let mut cap = Capture::new();
    let mut conns = Vec::new();
    for k in 0..n {
        let id = k as i64 + 1;
        let mut c = cap.connect();
        c.client(&mut cap, &post(S, &tools_call(id, &json!(id))));
        c.server(&mut cap, &sse_head(S));
        conns.push(c);
    }
    let begins = cap.frames.len();
    let steps = |k: usize, from: u64, to: u64| -> Vec<Ev> {
        (from..=to)
            .map(|i| Ev::id(i, progress(&json!(k as i64 + 1), i, 30)))
            .collect()
    };
    for (k, c) in conns.iter_mut().enumerate() {
        c.server(&mut cap, &chunks(&steps(k, 1, 4)));
    }
    for k in 0..n {
        let mut r = cap.connect();
        r.client(&mut cap, &get(S, Some("4")));
        r.server(&mut cap, &sse_response(S, &steps(k, 5, 6), true));
        r.close(&mut cap);
    }
    for (k, c) in conns.iter_mut().enumerate() {
        c.server(&mut cap, &chunks(&steps(k, 5, 24)));
    }
    for c in conns {
        c.server_close(&mut cap);
    }
    cap.frames.drain(..begins);
    cap
}

/// 20 requests, each with `n` KB of header lines, in 100-byte segments.
fn long_heads(n: usize) -> Capture {
    let mut cap = Capture::with_segment_size(100);
    handshake(&mut cap);
    let pad: String = (0..n)
        .map(|i| format!("X-Pad-{i:05}: {}\r\n", "p".repeat(1000 - 16)))
        .collect();
    for k in 0..20 {
        let body = tools_call(k + 1, &json!(k)).to_string();
        let req = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nContent-Type: application/json\r\nMcp-Session-Id: sess-1\r\n{pad}Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut c = cap.connect();
        c.client(&mut cap, req.as_bytes());
        c.server(&mut cap, &json_response(S, &result(k + 1)));
        c.close(&mut cap);
    }
    cap
}

/// Read, reassemble, parse and analyze a capture in memory; the number of findings.
fn analyze(bytes: &[u8]) -> usize {
    let mut a = Analyzer::new(Options::default());
    let mut anomalies = mcpcap::anomaly::Anomalies::default();
    mcpcap::capture::read_capture(bytes, 1, &mut anomalies, |f| a.frame(&f)).expect("read");
    let exchanges = a.finish();
    mcpcap::analyze_exchanges(&exchanges, &[], a.counters.ts_last)
        .findings
        .len()
}

fn scaling(c: &mut Criterion) {
    type Shape = (&'static str, fn(usize) -> Capture, usize, u64);
    // (name, builder, n, elements per n)
    let shapes: [Shape; 6] = [
        ("unknown_cursor_loop", unknown_cursor_loop, 1000, 1),
        ("many_tokens", many_tokens, 1000, 1),
        ("result_batch", result_batch, 1000, 1),
        ("cancelled_batch", cancelled_batch, 2000, 1),
        ("headless_shared_ids", headless_shared_ids, 300, 1),
        ("long_heads", long_heads, 60, 1000),
    ];
    let mut g = c.benchmark_group("scaling");
    g.sample_size(10);
    for (name, build, n, per) in shapes {
        for m in [1, 4] {
            let bytes = build(n * m).pcap();
            g.throughput(Throughput::Elements((n * m) as u64 * per));
            g.bench_function(format!("{name}/{}", n * m), |b| b.iter(|| analyze(&bytes)));
        }
    }
    // Shapes written straight to pcap bytes (`tests/shapes`).
    type Bytes = (&'static str, fn(usize) -> Vec<u8>, usize);
    let raw: [Bytes; 1] = [("empty_resume_loop", |n| shapes::empty_resume_loop(n), 6250)];
    for (name, build, n) in raw {
        for m in [1, 4] {
            let bytes = build(n * m);
            g.throughput(Throughput::Elements((n * m) as u64));
            g.bench_function(format!("{name}/{}", n * m), |b| b.iter(|| analyze(&bytes)));
        }
    }
    g.finish();
}

criterion_group!(benches, scaling);
criterion_main!(benches);
