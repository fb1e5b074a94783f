//! SSE parsing: the same events whether the input arrives whole or split at any byte.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcpcap::sse::{SseEvent, SseLimits, SseParser};

fn run(parts: &[&[u8]]) -> Vec<SseEvent> {
    let mut p = SseParser::new(SseLimits { max_line: 256, max_event: 1024 });
    let mut evs = Vec::new();
    for part in parts {
        p.push(part, 0, 0, &mut |e| evs.push(e.clone()), &mut |_| {});
    }
    p.finish(0, 0, &mut |e| evs.push(e.clone()), &mut |_| {});
    evs
}

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let cut = data[0] as usize % data.len();
    let input = &data[1..];
    let cut = cut.min(input.len());
    assert_eq!(run(&[input]), run(&[&input[..cut], &input[cut..]]));
});
