//! `idle_cut`: SSE connections cut at one idle time or one age (cloudflare/agents #1583,
//! mckinsey/agents-at-scale-ark #1941, open-webui/mcpo #73).
//!
//! Positive: three GET streams cut after 5 s of silence; three cut at age 30 s despite
//! keep-alives. Negative: cuts after 1.5, 4 and 9 s.

use crate::common::*;
use serde_json::Value;

/// Standalone GET streams, each cut by the server side after `idle` µs of silence, then reopened.
fn cut_gets(idles: &[i64]) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    for &idle in idles {
        let mut g = cap.connect();
        g.client(&mut cap, &get(Some(SID), None));
        g.server(&mut cap, &raw_sse(": ok\n\n"));
        cap.wait(idle);
        g.server_close(&mut cap);
    }
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), None));
    g.server(&mut cap, &raw_sse(": ok\n\n"));
    analyze(&cap, &[])
}

#[test]
fn idle_cut_at_a_fixed_age() {
    let fs = cut_gets(&[5_000_000, 5_000_000, 5_000_000]);
    assert_kinds(&fs, &[("idle_cut", "warning")]);
    let f = one(&fs, "idle_cut");
    assert!(
        f["observed"]
            .as_str()
            .unwrap()
            .contains("3 cuts at idle time 5.0 s"),
        "{f}"
    );
}

#[test]
fn cuts_at_different_ages_are_not_idle_cuts() {
    assert_kinds(&cut_gets(&[1_500_000, 4_000_000, 9_000_000]), &[]);
}

/// Standalone GET streams with keep-alives cut at the same age (a client timeout,
/// mckinsey/agents-at-scale-ark #1941): the idle time before each cut differs, the age does not.
#[test]
fn idle_cut_at_a_fixed_age_despite_keepalives() {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    for quiet in [2_000_000, 9_000_000, 5_000_000] {
        let mut g = cap.connect();
        g.client(&mut cap, &get(Some(SID), None));
        g.server(&mut cap, &raw_sse(": ok\n\n"));
        cap.wait(30_000_000 - quiet);
        g.server(&mut cap, &chunk(b": keepalive\n\n"));
        cap.wait(quiet);
        g.close(&mut cap);
    }
    let fs = analyze(&cap, &[]);
    assert_kinds(&fs, &[("idle_cut", "warning")]);
    assert!(
        one(&fs, "idle_cut")["observed"]
            .as_str()
            .unwrap()
            .contains("at age 30.0 s"),
        "{fs:#?}"
    );
}
