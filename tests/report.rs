//! `mcpcap report`: the HTML page of fixture captures, read as text (every finding with its
//! filter and extract command, a timeline and a narrative per session that is not intact, the
//! capture's text escaped) and loaded in headless Chromium (no console message, the tables
//! rendered by the page's script, a screenshot saved for a developer to look at).
//!
//! The browser part is skipped, saying why, when `chromium` is missing, unless
//! `MCPCAP_REQUIRE_READERS` is set.

mod common;
use common::ndjson_table;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The captures the browser loads: a fork behind a proxy with both legs, a lost response, one
/// with many sessions.
const PAGES: [&str; 3] = [
    "mcp/fork_restart.pcap",
    "mcp/lost_response.pcap",
    "mcp-gen/many_sessions.pcap",
];

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mcpcap-report-{}-{name}", std::process::id()))
}

/// `mcpcap report CAPTURE --out OUT`; the run must succeed with nothing on stderr.
fn report(capture: &Path, out: &Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .arg("report")
        .arg(capture)
        .args(["--quiet", "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(out).unwrap()
}

/// HTML-escaped as the page escapes text.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The part of `html` from `start` to the next `end` after it.
fn block<'a>(html: &'a str, start: &str, end: &str) -> &'a str {
    let at = html.find(start).unwrap_or_else(|| panic!("no {start:?}"));
    let rest = &html[at..];
    &rest[..rest[start.len()..]
        .find(end)
        .map_or(rest.len(), |e| e + start.len())]
}

/// Every finding of the capture is on the page with its filter and extract command; every
/// session that is not intact has its section with a timeline and a narrative.
fn check_page(rel: &str, html: &str) {
    let capture = common::fixture_path(rel);
    let findings: Vec<Value> = common::fixture_findings(rel);
    let sessions = ndjson_table(&[&capture], "sessions");
    let not_intact: Vec<&str> = sessions
        .iter()
        .filter(|s| {
            matches!(
                s["verdict"].as_str(),
                Some("broken" | "suspect" | "unverifiable")
            )
        })
        .filter_map(|s| s["session_id"].as_str())
        .collect();
    for f in &findings {
        let n = f["finding"].as_u64().unwrap();
        // Every finding is in the page's findings table, its filter with it; those of sessions
        // not intact have their evidence in the session's section too.
        let filter = f["wireshark_filter"].as_str().unwrap();
        assert!(
            html.contains("\"wireshark_filter\"") && html.contains(filter),
            "{rel}: finding {n}'s filter"
        );
        if !not_intact.contains(&f["session_id"].as_str().unwrap()) {
            continue;
        }
        let div = block(
            html,
            &format!(
                "<div class=\"finding {}\" id=\"f-{n}\">",
                f["severity"].as_str().unwrap()
            ),
            "</div>",
        );
        assert!(
            div.contains(&esc(filter)),
            "{rel}: finding {n} without its filter {filter}"
        );
        assert!(
            div.contains(&esc(f["detail"].as_str().unwrap())),
            "{rel}: finding {n} detail"
        );
        assert!(
            div.contains(&format!(
                "mcpcap extract --finding {n} --out finding-{n}.pcapng {}",
                capture.display()
            )),
            "{rel}: finding {n} without its extract command"
        );
        assert!(
            html.contains(&format!("href=\"#f-{n}\"")),
            "{rel}: finding {n} not marked on a timeline"
        );
    }
    for s in &sessions {
        let label = s["session_id"].as_str().unwrap();
        let verdict = s["verdict"].as_str().unwrap();
        if matches!(verdict, "broken" | "suspect" | "unverifiable") {
            let heading = format!(
                "<code>{}</code> <span class=\"badge {verdict}\">",
                esc(label)
            );
            let at = html
                .find(&heading)
                .unwrap_or_else(|| panic!("{rel}: no section for {label}"));
            let section = block(&html[at..], "<code>", "</section>");
            assert!(
                section.contains("<svg class=\"timeline\""),
                "{rel}: {label} has no timeline"
            );
            assert!(
                section.contains("<ol class=\"narrative\"><li"),
                "{rel}: {label} has no narrative"
            );
        } else {
            let intact = block(html, "<section id=\"intact\">", "</section>");
            assert!(
                intact.contains(&format!("<code>{}</code>", esc(label))),
                "{rel}: {label} not listed"
            );
        }
    }
}

#[test]
fn every_finding_and_every_broken_session_is_on_the_page() {
    for rel in PAGES
        .iter()
        .chain(&["mcp/resume_409.pcap", "mcp-cut/many_sessions_cut.pcap"])
    {
        let out = tmp(&rel.replace('/', "_"));
        let html = report(&common::fixture_path(rel), &out.with_extension("html"));
        check_page(rel, &html);
        // Self-contained: nothing fetched.
        for attr in ["src=\"http", "href=\"http", "@import", "url(http"] {
            assert!(!html.contains(attr), "{rel}: the page fetches {attr}");
        }
        let _ = std::fs::remove_file(out.with_extension("html"));
    }
}

/// What a newcomer must see on the fork's page without reading a table: which stream broke,
/// where it resumed, which backend forked it, which messages came twice.
#[test]
fn the_fork_is_told_in_sentences() {
    let rel = "mcp/fork_restart.pcap";
    let out = tmp("fork.html");
    let html = report(&common::fixture_path(rel), &out);
    let narrative = block(&html, "<ol class=\"narrative\">", "</ol>");
    for said in [
        "POST tools/call (id 2) opened stream S2 (frame 75, flow F2, client port 50356), served by backend 127.0.0.1:3301 (b1): 8 events (ids 2..9).",
        "S2&#39;s connection on flow F2, after event 9, was closed by the server side (FIN) before its response was complete (frame 120).",
        "the client resumed stream S2 with Last-Event-ID 9 (frame 123, flow F0, client port 50352). Backend 127.0.0.1:3302 (b2) answered 200 with 21 events (ids 1..21), though event 9 had come from backend 127.0.0.1:3301 (b1). Verdict: forked (",
        "the response to request 2 arrived on S2&#39;s connection F0 (frame 216, event id 21).",
        "finding [2] duplicate_delivery (error): After resuming from Last-Event-ID 9 the client received again 8 progress notification(s) it already had on this stream",
    ] {
        assert!(narrative.contains(said), "the narrative does not say {said:?}:\n{narrative}");
    }
    let headline = block(&html, "<p class=\"headline\">", "</p>");
    assert!(headline.contains("Stream S2 was closed by the server side (FIN) before its response was complete (frame 120); the client resumed it with Last-Event-ID 9 (frame 123, flow F0) and backend 127.0.0.1:3302 (b2) answered 200: verdict forked"), "{headline}");
    // The timeline: an arrow from event 9 to the resumption, its verdict on it.
    let svg = block(&html, "<svg class=\"timeline\"", "</svg>");
    assert!(svg.contains(
        "<g class=\"resume bad\"><title>resumed with Last-Event-ID 9 (frame 123): forked"
    ));
    assert!(svg.contains("Last-Event-ID 9 → forked"));
    assert!(svg.contains("FIN · frame 120"));
    assert_eq!(
        svg.matches("<g class=\"conn\"").count(),
        4,
        "four connections: S0, S1, S2 and its resumption"
    );
    // Hovering an event tells its id and frame.
    assert!(
        svg.contains("<title>event id 9 · frame 115 · "),
        "event 9's title"
    );
    // Each extract command, run as the page writes it, carves a capture on which mcpcap finds
    // the finding again.
    let dir = tmp("extracts");
    std::fs::create_dir_all(&dir).unwrap();
    let mut commands = 0;
    for code in html.split("<code class=\"extract\">").skip(1) {
        let command = &code[..code.find("</code>").unwrap()];
        let words: Vec<&str> = command.split_whitespace().collect();
        assert_eq!(words[..2], ["mcpcap", "extract"], "{command}");
        let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
            .args(&words[1..])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{command}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let n: usize = words[3].parse().unwrap();
        let kind = block(&html, &format!("id=\"f-{n}\">"), "</div>")
            .split("<code>")
            .nth(1)
            .and_then(|k| k.split("</code>").next())
            .unwrap()
            .to_string();
        let again = ndjson_table(&[dir.join(words[5])], "findings");
        assert!(
            again.iter().any(|f| f["kind"] == kind.as_str()),
            "{command}: no {kind} on the extract"
        );
        commands += 1;
    }
    assert_eq!(commands, 4);
    let _ = std::fs::remove_dir_all(dir);
    connection_filters_select_the_connections(&html, &common::fixture_path(rel));
    let _ = std::fs::remove_file(out);
}

/// The fork over HTTP/2 and TLS (the key log embedded): the cut is the server's RST_STREAM on
/// a connection that stayed open, the lanes name their HTTP/2 streams, and the resumption on a
/// new stream of another connection is told as over HTTP/1.1.
#[test]
fn the_http2_fork_tells_its_stream_reset() {
    let out = tmp("h2-fork.html");
    let html = report(
        &common::fixture_path("mcp-h2/h2_fork_client_dsb.pcapng"),
        &out,
    );
    let narrative = block(&html, "<ol class=\"narrative\">", "</ol>");
    for said in [
        "POST tools/call (id 2) opened stream S2 (frame 43, flow F1, client port 43106), served by backend b1: 8 events (ids 2..9).",
        "S2&#39;s connection on flow F1, after event 9, was cut by an HTTP/2 RST_STREAM from the server side (its connection stayed open) (frame 62).",
        "the client resumed stream S2 with Last-Event-ID 9 (frame 64, flow F0, client port 43102). Backend b2 answered 200 with 21 events (ids 1..21), though event 9 had come from backend b1. Verdict: forked (",
    ] {
        assert!(narrative.contains(said), "the narrative does not say {said:?}:\n{narrative}");
    }
    let svg = block(&html, "<svg class=\"timeline\"", "</svg>");
    assert!(svg.contains("RST_STREAM · frame 62"), "{svg}");
    assert!(svg.contains("F1 :43106 h2 stream 3 → 127.0.0.1:3500"));
    assert!(svg.contains("F0 :43102 h2 stream 7 → 127.0.0.1:3500"));
    let _ = std::fs::remove_file(out);
}

/// Each finding's connections filter, run by tshark on the capture, selects exactly the packets
/// of the connections the finding cites (their `orig_pkts + resp_pkts` in the flows table).
fn connection_filters_select_the_connections(html: &str, capture: &Path) {
    if !common::have_all(&["tshark"]) {
        return;
    }
    let flows = ndjson_table(&[capture], "flows");
    let mut checked = 0;
    for div in html.split("<div class=\"finding ").skip(1) {
        let marker = "<code class=\"conn-filter\">";
        let Some(at) = div.find(marker) else {
            continue;
        };
        let filter = &div[at + marker.len()..];
        let filter = filter[..filter.find("</code>").unwrap()].replace("&amp;", "&");
        let selected = common::tshark_frames(capture, &filter).len() as u64;
        let connections = block(div, "<dt>connections</dt><dd>", "</dd>");
        let expected: u64 = flows
            .iter()
            .filter(|f| connections.contains(&format!("{} ", f["flow_id"].as_str().unwrap())))
            .map(|f| f["orig_pkts"].as_u64().unwrap() + f["resp_pkts"].as_u64().unwrap())
            .sum();
        assert_eq!(selected, expected, "{filter}");
        checked += 1;
    }
    assert!(checked > 0, "no connections filter on the page");
}

/// Text from the capture is escaped: a session id and an error body carrying markup.
#[test]
fn capture_text_is_escaped() {
    use common::{accepted, post, Capture};
    let evil = "<img src=x onerror=alert(1)>";
    let mut cap = Capture::new();
    common::handshake_as(&mut cap, evil);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(evil), &serde_json::json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}})));
    c.server(&mut cap, &accepted());
    c.close(&mut cap);
    let pcap = tmp("evil.pcap");
    std::fs::write(&pcap, cap.pcap()).unwrap();
    let html = report(&pcap, &tmp("evil.html"));
    assert!(!html.contains(evil), "unescaped capture text on the page");
    assert!(
        html.contains(&esc(evil)) || html.contains("\\u003cimg"),
        "the session id is shown"
    );
    let _ = std::fs::remove_file(pcap);
    let _ = std::fs::remove_file(tmp("evil.html"));
}

/// `analyze --report FILE` writes the same page beside its tables.
#[test]
fn analyze_writes_the_report_beside_its_tables() {
    let rel = "mcp/fork_restart.pcap";
    let page = tmp("beside.html");
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args([
            "analyze",
            "--quiet",
            "--format",
            "ndjson",
            "--fail-on",
            "never",
            "--report",
        ])
        .arg(&page)
        .arg(common::fixture_path(rel))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).lines().count(),
        4,
        "the findings on stdout"
    );
    let alone = report(&common::fixture_path(rel), &tmp("alone.html"));
    assert_eq!(std::fs::read_to_string(&page).unwrap(), alone);
    let _ = std::fs::remove_file(page);
    let _ = std::fs::remove_file(tmp("alone.html"));
    // `report` needs its file.
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .arg("report")
        .arg(common::fixture_path(rel))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim(),
        "mcpcap: report needs --out FILE.html"
    );
}

/// Where the screenshots go: `<target>/tmp/report-screenshots/`.
fn screenshot_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Run headless Chromium on `page` with `args`: its stdout and stderr.
fn browse(bin: &str, page: &Path, args: &[&str]) -> (String, String) {
    let o = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn chromium_renders_each_page_without_a_console_message() {
    let Some(bin) = chromium() else {
        common::skip_without("chromium");
        return;
    };
    for rel in PAGES {
        let name = Path::new(rel)
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let page = screenshot_dir().join(format!("{name}.html"));
        report(&common::fixture_path(rel), &page);
        let (dom, log) = browse(bin, &page, &["--dump-dom"]);
        let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
        assert!(console.is_empty(), "{rel}: console messages {console:?}");
        // The page's script turned every table's JSON into rows.
        let sessions = ndjson_table(&[common::fixture_path(rel)], "sessions");
        for t in ["sessions", "resumptions", "findings"] {
            let div = block(
                &dom,
                &format!("<div class=\"tbl\" data-table=\"{t}\">"),
                "</table>",
            );
            assert!(
                div.contains("<thead><tr><th"),
                "{rel}: table {t} not rendered"
            );
            assert!(
                div.contains("rows</span>"),
                "{rel}: table {t} has no row count"
            );
        }
        let body_rows = block(
            &dom,
            "<div class=\"tbl\" data-table=\"sessions\">",
            "</table>",
        )
        .matches("<tr><td")
        .count();
        assert_eq!(
            body_rows,
            sessions.len().min(100),
            "{rel}: rows of the sessions table"
        );
        let broken = sessions
            .iter()
            .filter(|s| {
                matches!(
                    s["verdict"].as_str(),
                    Some("broken" | "suspect" | "unverifiable")
                )
            })
            .count();
        assert_eq!(
            dom.matches("<svg class=\"timeline\"").count(),
            broken,
            "{rel}: a timeline per session not intact"
        );
        let shot = screenshot_dir().join(format!("{name}.png"));
        let arg = format!("--screenshot={}", shot.display());
        browse(bin, &page, &[&arg, "--window-size=1300,2400"]);
        let png = std::fs::read(&shot).unwrap();
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 20_000,
            "{rel}: screenshot"
        );
        eprintln!("{rel}: screenshot {}", shot.display());
    }
}

/// A session that polls thousands of times stays a bounded section: one request mark per pixel,
/// at most the narrative's sentences, a small page.
#[test]
fn a_session_of_thousands_of_requests_stays_bounded() {
    use common::{conflict, post, sse_response, Capture, Ev};
    let sid = "poller";
    let mut cap = Capture::new();
    common::handshake_as(&mut cap, sid);
    let mut c = cap.connect();
    for k in 0..3000 {
        cap.wait(1_000);
        c.client(&mut cap, &post(Some(sid), &serde_json::json!({"jsonrpc":"2.0","method":"notifications/poll","params":{"k":k}})));
        c.server(&mut cap, &conflict());
    }
    let mut s = cap.connect();
    s.client(&mut cap, &post(Some(sid), &serde_json::json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}})));
    s.server(&mut cap, &sse_response(Some(sid), &[Ev::id(1, serde_json::json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}))], false));
    s.server_reset(&mut cap);
    c.close(&mut cap);
    let pcap = tmp("poller.pcap");
    std::fs::write(&pcap, cap.pcap()).unwrap();
    let html = report(&pcap, &tmp("poller.html"));
    let section = block(&html, "<section class=\"session\"", "</section>");
    let marks = section.matches("<circle class=\"req-mark").count();
    assert!((1..=1200).contains(&marks), "{marks} request marks");
    assert!(
        section.contains("more exchanges here)"),
        "marks count what they stand for"
    );
    let told = block(section, "<ol class=\"narrative\">", "</ol>")
        .matches("<li")
        .count();
    assert!(told <= 201, "{told} sentences");
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
    let _ = std::fs::remove_file(pcap);
    let _ = std::fs::remove_file(tmp("poller.html"));
}
