//! The postmortem report: one self-contained HTML page (inline CSS, JS and SVG; it fetches
//! nothing, so it opens from disk, offline, attached to a ticket).
//!
//! The page holds, in order: a summary (the capture files, sessions by verdict, findings by kind
//! and severity, and the capture's own quality: bytes missing per flow, anomalies by code); one
//! section per session that is not intact, worst first, with its timeline ([`timeline`]), its
//! narrative ([`narrative`]) and the evidence of each finding (frames, addresses, the Wireshark
//! display filter, the `mcpcap extract` command); the intact sessions as a compact list; and the
//! `sessions`, `resumptions` and `findings` tables, which sort and filter in the page. Every
//! text that comes from the capture is HTML-escaped ([`esc`]); the tables travel as JSON in
//! `<script type="application/json">` elements with `<`, `>` and `&` escaped.
//!
//! Bounded for large captures: at most [`MAX_SECTIONS`] session sections, [`view::MAX_LANES`]
//! lanes and [`narrative::MAX_SENTENCES`] sentences per session, [`MAX_TABLE_ROWS`] rows per
//! table; the page says what it left out.

pub mod narrative;
pub mod timeline;
pub mod view;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use super::tables::{self, FileRow, FlowsPart, SessionRow};
use super::wireshark::FrameFiles;
use super::{Table, Values};
use crate::anomaly::{Anomalies, Code};
use crate::detect::{Analysis, Severity};
use crate::http::Exchange;
use view::SessionView;

/// Sessions given a section of their own at most (worst first); the others are in the table.
pub const MAX_SECTIONS: usize = 300;
/// Rows of a table the page carries at most; the tables written by `analyze` have them all.
pub const MAX_TABLE_ROWS: usize = 20_000;
/// Intact sessions listed by id at most.
const MAX_INTACT_LISTED: usize = 500;

/// What the report is made from.
pub struct Input<'a> {
    /// The detectors' results.
    pub analysis: &'a Analysis,
    /// Every exchange, in time order.
    pub exchanges: &'a [Exchange],
    /// Each vantage point's flows (the `flows` table's parts).
    pub parts: &'a [FlowsPart<'a>],
    /// The capture files read (the `files` table's rows).
    pub files: &'a [FileRow],
    /// Every set of anomalies of the run.
    pub anomalies: &'a [&'a Anomalies],
    /// Where each finding's frames are in its file.
    pub frame_files: &'a FrameFiles<'a>,
    /// The line of counts the terminal report starts with.
    pub capture_line: &'a str,
    /// The arguments `mcpcap extract` needs after its selection to number frames and findings
    /// as this run did (the analysis options and the captures), shell-quoted.
    pub extract_args: &'a str,
}

/// HTML-escape `s` for text and attribute values (`&`, `<`, `>`, `"`, `'`).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than tab and line feed cannot be shown.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// The rank of a session verdict in the report's order (worst first).
fn verdict_rank(v: &str) -> u8 {
    match v {
        "broken" => 0,
        "suspect" => 1,
        "unverifiable" => 2,
        "intact" => 3,
        _ => 4,
    }
}

/// Write the report of `input` to `w`.
///
/// Errors: those of `w`.
pub fn write(w: &mut impl Write, input: &Input<'_>) -> io::Result<()> {
    let (a, ex) = (input.analysis, input.exchanges);
    let rows = tables::session_rows(a, ex);
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| {
        let r = &rows[i];
        (
            verdict_rank(r.verdict),
            std::cmp::Reverse((r.errors, r.warnings)),
            r.ts_first,
            i,
        )
    });
    let title = match input.files {
        [] => "capture".to_string(),
        [f] => f.file.clone(),
        [f, rest @ ..] => format!("{} and {} more", f.file, rest.len()),
    };
    let mut page = String::with_capacity(1 << 16);
    let _ = write!(
        page,
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>mcpcap report: {}</title><style>{}</style></head><body><header><h1>mcpcap postmortem report</h1><p class="files">{}</p></header><main>"#,
        esc(&title),
        include_str!("page.css"),
        esc(&input
            .files
            .iter()
            .map(|f| f.file.as_str())
            .collect::<Vec<_>>()
            .join(", "))
    );
    summary(&mut page, input, &rows);
    w.write_all(page.as_bytes())?;
    page.clear();
    sections(w, input, &rows, &order)?;
    intact(&mut page, &rows, &order);
    page.push_str("<section id=\"tables\"><h2>Tables</h2><p class=\"note\">Click a column to sort; type to filter. The same tables, whole, are written by <code>mcpcap analyze --format csv --out DIR</code>.</p>");
    let findings = tables::findings(a, input.frame_files);
    for t in [
        tables::sessions_table(&rows),
        tables::resumptions(a, ex),
        findings,
    ] {
        table_data(&mut page, &t);
    }
    page.push_str("</section></main><footer>Made by mcpcap from the capture alone; times are capture times, UTC.</footer><script>");
    page.push_str(include_str!("page.js"));
    page.push_str("</script></body></html>\n");
    w.write_all(page.as_bytes())
}

/// The summary: files, sessions by verdict, findings by kind and severity, capture quality.
fn summary(page: &mut String, input: &Input<'_>, rows: &[SessionRow]) {
    let a = input.analysis;
    page.push_str("<section id=\"summary\"><h2>Summary</h2>");
    let _ = write!(page, "<p class=\"counts\">{}</p>", esc(input.capture_line));
    if !input.files.is_empty() {
        page.push_str("<table class=\"plain\"><thead><tr><th>file</th><th>vantage</th><th>frames</th><th>first frame time</th><th>last frame time</th></tr></thead><tbody>");
        for f in input.files {
            let frames = match (f.frame_first, f.frame_last) {
                (Some(x), Some(y)) => format!("{x}..{y}"),
                _ => "none".to_string(),
            };
            let t = |v: Option<i64>| v.map(super::format_ts).unwrap_or_default();
            let _ = write!(
                page,
                "<tr><td>{}</td><td>{}</td><td>{frames}</td><td>{}</td><td>{}</td></tr>",
                esc(&f.file),
                esc(&f.vantage),
                t(f.ts_first),
                t(f.ts_last)
            );
        }
        page.push_str("</tbody></table>");
    }
    let mut by_verdict: BTreeMap<u8, (&str, usize)> = BTreeMap::new();
    for r in rows {
        by_verdict
            .entry(verdict_rank(r.verdict))
            .or_insert((r.verdict, 0))
            .1 += 1;
    }
    page.push_str("<h3>Sessions</h3><p class=\"verdicts\">");
    if rows.is_empty() {
        page.push_str("No MCP session in the capture.");
    }
    for (v, n) in by_verdict.values() {
        let _ = write!(page, "<span class=\"badge {v}\">{n} {v}</span> ");
    }
    page.push_str("</p>");
    let mut kinds: BTreeMap<(std::cmp::Reverse<Severity>, &str), (usize, &str)> = BTreeMap::new();
    for f in &a.findings {
        kinds
            .entry((std::cmp::Reverse(f.severity), f.kind.as_str()))
            .or_insert((0, f.kind.doc()))
            .0 += 1;
    }
    page.push_str("<h3>Findings</h3>");
    if kinds.is_empty() {
        page.push_str("<p>No findings.</p>");
    } else {
        page.push_str("<table class=\"plain\"><thead><tr><th>kind</th><th>severity</th><th>count</th><th>meaning</th></tr></thead><tbody>");
        for ((sev, kind), (n, doc)) in &kinds {
            let sev = sev.0.as_str();
            let _ = write!(
                page,
                "<tr><td><code>{kind}</code></td><td><span class=\"sev {sev}\">{sev}</span></td><td>{n}</td><td>{}</td></tr>",
                esc(doc)
            );
        }
        page.push_str("</tbody></table>");
    }
    quality(page, input);
    page.push_str("</section>");
}

/// Capture quality: flows with bytes missing, anomalies by code.
fn quality(page: &mut String, input: &Input<'_>) {
    page.push_str("<h3>Capture quality</h3>");
    let mut missing = Vec::new();
    let mut flows = 0usize;
    for p in input.parts {
        for f in p.flows.rows() {
            flows += 1;
            if f.missed[0] + f.missed[1] > 0 {
                let c = p
                    .client_dir
                    .get(&f.index)
                    .copied()
                    .unwrap_or_else(|| f.client_guess());
                missing.push((f, c, p.vantage));
            }
        }
    }
    if missing.is_empty() {
        let _ = write!(page, "<p>No bytes are missing from any of the {flows} TCP connections: what the capture shows can be judged whole.</p>");
    } else {
        let _ = write!(
            page,
            "<p class=\"warn\">{} of {flows} TCP connections miss bytes: what those bytes carried cannot be judged.</p><table class=\"plain\"><thead><tr><th>flow</th><th>vantage</th><th>client</th><th>server</th><th>client bytes missing</th><th>server bytes missing</th></tr></thead><tbody>",
            missing.len()
        );
        for (f, c, v) in missing.iter().take(200) {
            let end = |d: usize| format!("{}:{}", f.ends[d].0, f.ends[d].1);
            let _ = write!(
                page,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                f.flow_id(),
                esc(v),
                end(*c),
                end(1 - c),
                f.missed[*c],
                f.missed[1 - c]
            );
        }
        page.push_str("</tbody></table>");
        if missing.len() > 200 {
            let _ = write!(
                page,
                "<p class=\"note\">{} more in the flows table.</p>",
                missing.len() - 200
            );
        }
    }
    let mut counts: BTreeMap<Code, u64> = BTreeMap::new();
    for set in input.anomalies {
        for (c, n) in &set.counts {
            *counts.entry(*c).or_insert(0) += n;
        }
    }
    if counts.is_empty() {
        page.push_str("<p>No anomalies: every packet, header, record and event was read.</p>");
    } else {
        page.push_str("<table class=\"plain\"><thead><tr><th>anomaly</th><th>count</th><th>meaning</th></tr></thead><tbody>");
        for (c, n) in &counts {
            let _ = write!(
                page,
                "<tr><td><code>{}</code></td><td>{n}</td><td>{}</td></tr>",
                c.as_str(),
                esc(c.doc())
            );
        }
        page.push_str("</tbody></table>");
    }
}

/// One section per session that is not intact, worst first, written as each is made.
fn sections(
    w: &mut impl Write,
    input: &Input<'_>,
    rows: &[SessionRow],
    order: &[usize],
) -> io::Result<()> {
    let (a, ex) = (input.analysis, input.exchanges);
    let index = view::Index::new(a, ex);
    let bad: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| verdict_rank(rows[i].verdict) < 3)
        .collect();
    let mut page = String::with_capacity(1 << 16);
    page.push_str("<section id=\"sessions\"><h2>Sessions that are not intact</h2>");
    if bad.is_empty() {
        page.push_str("<p>Every session is intact.</p>");
    } else {
        page.push_str("<ol class=\"toc\">");
        for &i in bad.iter().take(MAX_SECTIONS) {
            let r = &rows[i];
            let _ = write!(
                page,
                "<li><a href=\"#s-{i}\">{}</a> <span class=\"badge {}\">{}</span> {} errors, {} warnings</li>",
                esc(&r.label),
                r.verdict,
                r.verdict,
                r.errors,
                r.warnings
            );
        }
        page.push_str("</ol>");
        if bad.len() > MAX_SECTIONS {
            let _ = write!(page, "<p class=\"note\">{} more sessions that are not intact are in the sessions table below; the sections show the {MAX_SECTIONS} worst.</p>", bad.len() - MAX_SECTIONS);
        }
    }
    w.write_all(page.as_bytes())?;
    for &i in bad.iter().take(MAX_SECTIONS) {
        page.clear();
        let view = SessionView::new(a, ex, input.parts, i, &index);
        session_section(&mut page, input, &rows[i], &view);
        w.write_all(page.as_bytes())?;
    }
    w.write_all(b"</section>")
}

/// The section of one session: heading, timeline, narrative, findings with their evidence.
fn session_section(page: &mut String, input: &Input<'_>, r: &SessionRow, view: &SessionView<'_>) {
    let (a, ex) = (input.analysis, input.exchanges);
    let span = match (r.ts_first, r.ts_last) {
        (Some(x), Some(y)) => format!("{} to {}", super::format_ts(x), super::format_ts(y)),
        _ => String::new(),
    };
    let _ = write!(
        page,
        "<section class=\"session\" id=\"s-{}\" data-verdict=\"{}\"><h3>Session <code>{}</code> <span class=\"badge {}\">{}</span></h3><p class=\"meta\">{span} · protocol {} · {} on {} · {} · {} · {}, {}</p>",
        view.session,
        r.verdict,
        esc(&r.label),
        r.verdict,
        r.verdict,
        esc(r.protocol_version.as_deref().unwrap_or("unknown")),
        count(r.exchanges, "exchange"),
        count(r.flows, "connection"),
        count(r.streams, "stream"),
        count(r.resumptions, "resumption"),
        count(r.errors, "error"),
        count(r.warnings, "warning")
    );
    let _ = write!(
        page,
        "<p class=\"headline\">{}</p>",
        esc(&narrative::headline(a, ex, view))
    );
    page.push_str("<figure>");
    page.push_str(&timeline::svg(a, ex, view));
    legend(page, ex, view);
    page.push_str("<h4>What happened</h4><ol class=\"narrative\">");
    for (line, bad) in narrative::sentences(a, ex, view) {
        let class = if bad { " class=\"bad\"" } else { "" };
        let _ = write!(page, "<li{class}>{}</li>", esc(&line));
    }
    page.push_str("</ol>");
    if !view.findings.is_empty() {
        page.push_str("<h4>Findings and their evidence</h4>");
    }
    for (n, f) in &view.findings {
        evidence(page, input, *n, f);
    }
    page.push_str("</section>");
}

/// The timeline's legend: the kinds of event its ticks show, the arrows, the finding marks.
fn legend(page: &mut String, ex: &[Exchange], view: &SessionView<'_>) {
    let mut present: Vec<&str> = Vec::new();
    for c in &view.conns {
        for ev in ex[c.x].sse.events.iter() {
            let class = view::event_class(&ev);
            if !present.contains(&class) {
                present.push(class);
            }
        }
    }
    page.push_str("<figcaption>");
    for (class, what) in [
        ("resp", "response"),
        ("prog", "progress"),
        ("msg", "other message"),
        ("req", "request from the server"),
        ("prime", "priming event (a cursor)"),
        ("bad", "cut short or not JSON"),
    ] {
        if present.contains(&class) {
            let _ = write!(page, "<span class=\"key {class}\"></span>{what} ");
        }
    }
    if !view.resumptions.is_empty() {
        page.push_str("· arrow: from the event a Last-Event-ID names to the connection that resumed (green resumed, orange unverifiable or rejected, dashed red forked or gap) ");
    }
    page.push_str("· <span class=\"key fmark\"></span>finding number, on the frames it cites (click for its evidence) · hover any mark for its frame</figcaption></figure>");
}

/// `n` and `word`, with an `s` unless `n` is 1: `1 stream`, `2 streams`.
fn count(n: u64, word: &str) -> String {
    crate::text::plural(n, word, &format!("{word}s"))
}

/// One finding with its evidence: frames, its connections' addresses, the filters of its frames
/// and of its connections, the extract command.
fn evidence(page: &mut String, input: &Input<'_>, n: usize, f: &crate::detect::Finding) {
    let sev = f.severity.as_str();
    let located = input.frame_files.locate(f);
    // The cited frames in frame order, each with its flow when that is not the finding's own.
    let mut cited = f.cited.clone();
    cited.sort_by_key(|c| (c.frame, c.flow_index));
    let list: Vec<String> = cited
        .iter()
        .map(|c| {
            let flow = crate::tcp::FlowId(c.flow_index).to_string();
            if flow == f.flow_id {
                c.frame.to_string()
            } else {
                format!("{} ({flow})", c.frame)
            }
        })
        .collect();
    let mut flows: Vec<usize> = f.cited.iter().map(|c| c.flow_index).collect();
    flows.dedup();
    let own = f
        .cited
        .first()
        .and_then(|c| input.frame_files.vantage_of(c.flow_index));
    let mut described = Vec::new();
    let mut clauses = Vec::new();
    for &fi in &flows {
        let Some((row, c)) = view::flow_row(input.parts, fi) else {
            continue;
        };
        let (client, server) = (row.ends[c], row.ends[1 - c]);
        described.push(format!(
            "{} {}:{} → {}:{}",
            crate::tcp::FlowId(fi),
            client.0,
            client.1,
            server.0,
            server.1
        ));
        if input.frame_files.vantage_of(fi) == own {
            clauses.push(connection_filter(client, server));
        }
    }
    let _ = write!(
        page,
        "<div class=\"finding {sev}\" id=\"f-{n}\"><p class=\"head\"><span class=\"num\">[{n}]</span> <code>{}</code> <span class=\"sev {sev}\">{sev}</span> <span class=\"meaning\">{}</span></p><p class=\"detail\">{}</p><dl><dt>frames</dt><dd>{}</dd><dt>connections</dt><dd>{}</dd>",
        f.kind.as_str(),
        esc(f.kind.doc()),
        esc(&f.detail),
        list.join(", "),
        esc(&described.join("; "))
    );
    if let Some(file) = &located.file {
        let _ = write!(page, "<dt>file</dt><dd>{}</dd>", esc(file));
    }
    let _ = write!(
        page,
        "<dt>Wireshark filter</dt><dd><code class=\"filter\">{}</code> <button class=\"copy\" type=\"button\">copy</button></dd>",
        esc(&located.filter)
    );
    if !clauses.is_empty() {
        let _ = write!(
            page,
            "<dt>its connections</dt><dd><code class=\"conn-filter\">{}</code> <button class=\"copy\" type=\"button\">copy</button></dd>",
            esc(&clauses.join(" || "))
        );
    }
    let _ = write!(
        page,
        "<dt>extract</dt><dd><code class=\"extract\">mcpcap extract --finding {n} --out finding-{n}.pcapng {}</code> <button class=\"copy\" type=\"button\">copy</button></dd></dl></div>",
        esc(input.extract_args)
    );
}

/// A Wireshark display filter for one TCP connection by its addresses and ports (wireshark-
/// filter(4): `ip.addr`/`ipv6.addr` and `tcp.port` match either side): `(ip.addr == 10.0.0.1 &&
/// ip.addr == 10.0.0.2 && tcp.port == 50352 && tcp.port == 3300)`. A port reused later by
/// another connection between the same hosts is selected too.
fn connection_filter(a: (std::net::IpAddr, u16), b: (std::net::IpAddr, u16)) -> String {
    let field = if a.0.is_ipv6() {
        "ipv6.addr"
    } else {
        "ip.addr"
    };
    let mut terms = vec![format!("{field} == {}", a.0)];
    if b.0 != a.0 {
        terms.push(format!("{field} == {}", b.0));
    }
    terms.push(format!("tcp.port == {}", a.1));
    if b.1 != a.1 {
        terms.push(format!("tcp.port == {}", b.1));
    }
    format!("({})", terms.join(" && "))
}

/// The intact sessions (and those that are no MCP), as a compact list.
fn intact(page: &mut String, rows: &[SessionRow], order: &[usize]) {
    let ok: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| verdict_rank(rows[i].verdict) >= 3)
        .collect();
    page.push_str("<section id=\"intact\"><h2>Intact sessions</h2>");
    if ok.is_empty() {
        page.push_str("<p>None.</p></section>");
        return;
    }
    let _ = write!(
        page,
        "<details><summary>{} sessions intact or without MCP</summary><ul class=\"compact\">",
        ok.len()
    );
    for &i in ok.iter().take(MAX_INTACT_LISTED) {
        let r = &rows[i];
        let _ = write!(
            page,
            "<li><code>{}</code> {} · {} exchanges · {} streams · {} resumptions</li>",
            esc(&r.label),
            r.verdict,
            r.exchanges,
            r.streams,
            r.resumptions
        );
    }
    page.push_str("</ul>");
    if ok.len() > MAX_INTACT_LISTED {
        let _ = write!(
            page,
            "<p class=\"note\">{} more in the sessions table.</p>",
            ok.len() - MAX_INTACT_LISTED
        );
    }
    page.push_str("</details></section>");
}

/// Table `t` as a JSON island the page's script turns into a sortable, filterable table.
fn table_data(page: &mut String, t: &Table) {
    let height = t.height();
    let shown = height.min(MAX_TABLE_ROWS);
    let columns: Vec<&str> = t.columns.iter().map(|(n, _)| *n).collect();
    let mut rows: Vec<serde_json::Value> = Vec::with_capacity(shown);
    for i in 0..shown {
        let row: Vec<serde_json::Value> = t.columns.iter().map(|(_, v)| cell(v, i)).collect();
        rows.push(serde_json::Value::Array(row));
    }
    let json =
        serde_json::json!({ "name": t.name, "columns": columns, "rows": rows, "total": height });
    let text = json
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    let _ = write!(
        page,
        "<h3 id=\"table-{0}\">{0} <span class=\"note\">({1})</span></h3><div class=\"tbl\" data-table=\"{0}\"><script type=\"application/json\">{text}</script><noscript>The tables need JavaScript; they are also written by <code>mcpcap analyze --format csv</code>.</noscript></div>",
        t.name,
        count(height as u64, "row")
    );
    if height > shown {
        let _ = write!(
            page,
            "<p class=\"note\">The page holds the first {shown} rows of {height}.</p>"
        );
    }
}

/// Cell `i` of a column as JSON (times as the tables' ISO 8601 text).
fn cell(v: &Values, i: usize) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Values::Str(x) => x
            .get(i)
            .map_or(Value::Null, |s| Value::String(s.to_string())),
        Values::I64(x) => x[i].map_or(Value::Null, Into::into),
        Values::U64(x) => x[i].map_or(Value::Null, Into::into),
        Values::F64(x) => x[i]
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Values::Bool(x) => x[i].map_or(Value::Null, Into::into),
        Values::Ts(x) => x[i].map_or(Value::Null, |t| {
            Value::String(super::format_ts(crate::capture::clamp_ts(t)))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_controls_are_escaped() {
        assert_eq!(
            esc("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(esc("a\u{1b}[31mb\nc"), "a\u{fffd}[31mb\nc");
    }

    #[test]
    fn worst_verdicts_come_first() {
        let mut v = ["intact", "not_mcp", "unverifiable", "broken", "suspect"];
        v.sort_by_key(|s| verdict_rank(s));
        assert_eq!(
            v,
            ["broken", "suspect", "unverifiable", "intact", "not_mcp"]
        );
    }
}
