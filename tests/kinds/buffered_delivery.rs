//! `buffered_delivery`: a proxy that held the stream and released it in bursts (nginx
//! `proxy_buffering`: java-sdk PR #848).
//!
//! Positive: both legs of a proxy, six events 100 ms apart upstream arrive downstream in one
//! write 1 s later. Negative: the same events forwarded one by one, and the burst when the
//! response says `X-Accel-Buffering: no`.

use crate::common::*;
use serde_json::Value;

/// The backend behind the proxy of these scenarios (the proxy listens on `SERVER_PORT`).
const BACKEND_PORT: u16 = 3301;

/// A proxy's two legs of one tools/call: upstream the server sends six progress events 100 ms
/// apart; downstream they arrive one by one (`buffered` false) or all in one write 1 s later.
fn proxied(buffered: bool, accel_no: bool) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let evs = progs(2, &["1", "2", "3", "4", "5", "6"], 1, 6);
    let head = if accel_no {
        let mut h = sse_head(None);
        let at = h.len() - 2;
        h.splice(at..at, b"X-Accel-Buffering: no\r\n".iter().copied());
        h
    } else {
        sse_head(None)
    };
    let mut down = cap.connect();
    down.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut up = cap.connect_to(BACKEND_PORT);
    up.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    up.server(&mut cap, &sse_head(None));
    down.server(&mut cap, &head);
    for ev in &evs {
        cap.wait(100_000);
        up.server(&mut cap, &chunk(ev.text().as_bytes()));
        if !buffered {
            down.server(&mut cap, &chunk(ev.text().as_bytes()));
        }
    }
    let fin = Ev::id("7", result(2));
    up.server(&mut cap, &chunk(fin.text().as_bytes()));
    up.server(&mut cap, LAST_CHUNK);
    up.close(&mut cap);
    cap.wait(1_000_000);
    let mut rest = Vec::new();
    if buffered {
        for ev in &evs {
            rest.extend(ev.text().into_bytes());
        }
    }
    rest.extend(fin.text().into_bytes());
    down.server(&mut cap, &chunk(&rest));
    down.server(&mut cap, LAST_CHUNK);
    down.close(&mut cap);
    analyze(&cap, &[])
}

#[test]
fn buffered_delivery_behind_a_proxy() {
    let fs = proxied(true, false);
    assert_kinds(&fs, &[("buffered_delivery", "warning")]);
    let f = one(&fs, "buffered_delivery");
    assert_eq!(f["event_id"], "1");
}

#[test]
fn prompt_delivery_or_accel_buffering_no() {
    assert_kinds(&proxied(false, false), &[]);
    assert_kinds(&proxied(true, true), &[]);
}
