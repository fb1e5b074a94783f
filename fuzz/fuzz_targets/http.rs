//! HTTP/1.x framing of one direction (first byte picks requests or responses; the rest is split
//! at a second byte's position): no panic, and body bytes never exceed the input.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcpcap::http::{BodyRule, DirParser, HttpEvent, HttpLimits};

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let mut p = DirParser::new(data[0] & 1 == 0, HttpLimits::default());
    let input = &data[2..];
    let cut = (data[1] as usize).min(input.len());
    let mut body = 0usize;
    let mut out = |e: HttpEvent<'_>| {
        if let HttpEvent::Body(b) = e {
            body += b.len();
        }
        BodyRule::ByHeaders
    };
    p.push(&input[..cut], &mut out);
    p.gap(3, &mut out);
    p.push(&input[cut..], &mut out);
    p.end(data[1] & 0x80 != 0, &mut out);
    assert!(body <= input.len());
});
