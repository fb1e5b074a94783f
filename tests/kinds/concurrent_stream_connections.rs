//! `concurrent_stream_connections`: two live connections of one logical stream
//! (punkpeye/fastmcp PR #331).
//!
//! Positive: two standalone GET streams open at once; a stalled POST stream resumed while it
//! stays open, keeps delivering, or was live until the resumption. Negative: consecutive GET
//! streams; a stalled stream whose end is seen after its resumption.

use crate::common::*;
use serde_json::{json, Value};

fn two_standalone_gets(overlap: bool) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut a = cap.connect();
    a.client(&mut cap, &get(Some(SID), None));
    a.server(&mut cap, &raw_sse(": ok\n\n"));
    let a = if overlap {
        Some(a)
    } else {
        a.close(&mut cap);
        None
    };
    cap.wait(2_000_000);
    let mut b = cap.connect();
    b.client(&mut cap, &get(Some(SID), None));
    b.server(&mut cap, &raw_sse(": ok\n\n"));
    cap.wait(2_000_000);
    b.close(&mut cap);
    if let Some(a) = a {
        a.close(&mut cap);
    }
    analyze(&cap, &[])
}

#[test]
fn concurrent_standalone_streams() {
    let fs = two_standalone_gets(true);
    assert_kinds(&fs, &[("concurrent_stream_connections", "warning")]);
}

#[test]
fn consecutive_standalone_streams() {
    assert_kinds(&two_standalone_gets(false), &[]);
}

/// What becomes of a stalled POST stream after the client resumed it on a new connection.
#[derive(Clone, Copy)]
enum OldStream {
    /// The client closes it 1.5 s after the resumption ended.
    ClosedLater,
    /// The server resets it 30 s later.
    ResetLater,
    /// It stays open to the end of the capture (punkpeye/fastmcp PR #331: never closed).
    NeverClosed,
    /// It delivers another event after the resumption was answered, then closes.
    EventAfter,
    /// It was live until just before the resumption (an event 50 ms before it), and a proxy's
    /// idle timeout resets it 120 s later.
    LiveUntilResume,
}

fn stalled_then_resumed(old: OldStream) -> Vec<Value> {
    let (mut cap, mut a) = call_under_way();
    cap.wait(10_000_000);
    if let OldStream::LiveUntilResume = old {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}});
        a.server(&mut cap, &chunk(Ev::no_id(note).text().as_bytes()));
        cap.wait(50_000);
    }
    resume_from_3(&mut cap);
    match old {
        OldStream::ClosedLater => {
            cap.wait(1_500_000);
            a.close(&mut cap);
        }
        OldStream::ResetLater => {
            cap.wait(30_000_000);
            a.server_reset(&mut cap);
        }
        OldStream::NeverClosed => {}
        OldStream::LiveUntilResume => {
            cap.wait(120_000_000);
            a.server_reset(&mut cap);
        }
        OldStream::EventAfter => {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}});
            a.server(&mut cap, &chunk(Ev::id("7", note).text().as_bytes()));
            a.close(&mut cap);
        }
    }
    analyze(&cap, &[])
}

#[test]
fn a_stalled_stream_closed_after_its_resumption_is_not_concurrent() {
    // The client gave up on a stalled connection and resumed; the old one's end is seen late
    // (a client that closes it afterwards, a server-side capture of a half-dead socket).
    for old in [OldStream::ClosedLater, OldStream::ResetLater] {
        assert_kinds(&stalled_then_resumed(old), &[("resume_ok", "info")]);
    }
    // Never closed, still delivering, or live until the resumption: two live connections for
    // one stream.
    for old in [
        OldStream::NeverClosed,
        OldStream::EventAfter,
        OldStream::LiveUntilResume,
    ] {
        assert_kinds(
            &stalled_then_resumed(old),
            &[
                ("concurrent_stream_connections", "warning"),
                ("resume_ok", "info"),
            ],
        );
    }
}
