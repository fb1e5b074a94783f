//! The event log: events parsed from the input go into a log, some taken out again at once (as
//! an event past a bound is), and the log reads back exactly the events kept, with their
//! messages, in order.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcpcap::http::EventLog;
use mcpcap::sse::{SseEvent, SseLimits, SseParser};

fuzz_target!(|data: &[u8]| {
    let Some((&mask, input)) = data.split_first() else { return };
    let mut p = SseParser::new(SseLimits { max_line: 4096, max_event: 65536 });
    let mut evs: Vec<SseEvent> = Vec::new();
    p.push(input, 0, 0, &mut |e| evs.push(e.clone()), &mut |_| {});
    p.finish(0, 0, &mut |e| evs.push(e.clone()), &mut |_| {});
    let mut log = EventLog::default();
    let mut kept: Vec<(Option<String>, usize)> = Vec::new();
    for (k, ev) in evs.iter().enumerate() {
        let msgs = mcpcap::jsonrpc::parse_bounded(&ev.data, &[], 3)
            .map(|p| p.messages.into_vec())
            .unwrap_or_default();
        let before = log.bytes_used();
        log.push(ev, 0, false, &msgs, None);
        assert!(log.bytes_used() >= before);
        if mask >> (k % 8) & 1 == 1 {
            log.pop();
            assert_eq!(log.bytes_used(), before);
        } else {
            kept.push((ev.id.as_deref().map(str::to_string), msgs.len()));
        }
    }
    let got: Vec<(Option<String>, usize)> = log
        .iter()
        .map(|e| (e.sse.id.map(str::to_string), e.messages.len()))
        .collect();
    assert_eq!(got, kept);
    assert_eq!(log.message_count(), kept.iter().map(|k| k.1 as u64).sum::<u64>());
});
