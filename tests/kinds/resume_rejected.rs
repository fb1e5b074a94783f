//! `resume_rejected`: a resumption refused with an error status.
//!
//! Positive: a resumption answered 409; a redirect the client never follows. Negative: a
//! redirect the client follows with the same cursor (also with other sessions resuming in
//! between).

use crate::common::*;

#[test]
fn resume_rejected_and_lost_response() {
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &prog_range(1..=3, 1, 5), End::CutFin);
    resume(&mut cap, "3", &conflict());
    let fs = findings(&cap);
    assert_kinds(
        &fs,
        &[("lost_response", "error"), ("resume_rejected", "info")],
    );
    let f = one(&fs, "resume_rejected");
    assert_keys(f, Some("3"), None, None);
    assert_eq!(f["observed"], "HTTP 409");
    assert_keys(one(&fs, "lost_response"), None, None, Some("2"));
}

/// A call under way whose stream is reset, and a resumption GET with Last-Event-ID 3 answered
/// by the status line `status`, a `Location` and no body.
fn redirected(status: &str, location: &str) -> Capture {
    let (mut cap, c) = call_under_way();
    c.server_reset(&mut cap);
    cap.wait(1_000_000);
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), Some("3")));
    g.server(
        &mut cap,
        format!("HTTP/1.1 {status}\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n")
            .as_bytes(),
    );
    g.close(&mut cap);
    cap
}

#[test]
fn a_redirected_resumption_is_no_rejection() {
    // The client follows the redirect with the same cursor and the stream goes on there.
    let mut cap = redirected("307 Temporary Redirect", "/mcp/v2");
    resume_from_3(&mut cap);
    assert_kinds(&analyze(&cap, &[]), &[("resume_ok", "info")]);
    assert_eq!(resumption_verdicts(&cap), ["unverifiable", "resumed"]);
    // The redirect is no resumption the capture failed to judge: the session is intact.
    let sessions = table_csv(&cap, "sessions");
    assert!(
        csv_column(&sessions, "verdict")
            .iter()
            .all(|v| v == "intact"),
        "{sessions}"
    );

    // Other sessions resuming in between (a proxy restart cuts every client at once) do not
    // hide the follow.
    let mut cap = redirected("307 Temporary Redirect", "/mcp/v2");
    for _ in 0..70 {
        let mut o = cap.connect();
        o.client(&mut cap, &get(Some("other"), Some("x")));
        o.server(&mut cap, &sse_response(Some("other"), &[], true));
        o.close(&mut cap);
    }
    resume_from_3(&mut cap);
    let fs = analyze(&cap, &[]);
    assert!(
        !kinds_of(&fs).contains(&"resume_rejected".to_string()),
        "{fs:#?}"
    );
    assert_eq!(resumption_verdicts(&cap)[0], "unverifiable");

    // Negative: a redirect the client never follows (to a login page, say) leaves it without
    // its stream: refused.
    let cap = redirected("302 Found", "/login");
    let fs = analyze(&cap, &[]);
    assert!(
        kinds_of(&fs).contains(&"resume_rejected".to_string()),
        "{fs:#?}"
    );
    assert_eq!(resumption_verdicts(&cap), ["rejected"]);
}
