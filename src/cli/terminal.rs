//! `analyze --format table`: the answer for a postmortem, worst first.
//!
//! One verdict line; the sessions, broken first, then suspect, unverifiable, intact (more than
//! [`INTACT_SHOWN`] intact sessions collapse into one line on a terminal unless `--all`); then,
//! per session that is not intact, its findings, its resumptions, and its slowest and failed
//! calls. Long ids are shortened here only (the files keep them whole), and severities and
//! verdicts are coloured on a terminal unless `NO_COLOR` is set.

use std::io::Write;

use mcpcap::detect::{Analysis, Severity};
use mcpcap::report::{format_ts, Table, Values};

/// Intact sessions listed one by one on a terminal without `--all`.
pub const INTACT_SHOWN: usize = 20;

/// How the output looks.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// ANSI colours.
    pub color: bool,
    /// Standard output is a terminal: long lists collapse.
    pub terminal: bool,
    /// `--all`: nothing collapses.
    pub all: bool,
}

impl Style {
    /// `s` in the ANSI colour `code` (SGR parameters), when colours are on.
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    /// A severity in its colour: errors bold red, warnings yellow, the rest cyan.
    fn severity(&self, s: &str) -> String {
        let code = match s {
            "error" => "1;31",
            "warning" => "33",
            _ => "36",
        };
        self.paint(code, s)
    }
    /// A verdict in its colour: broken bold red, suspect yellow, unverifiable cyan, intact green.
    fn verdict(&self, v: &str) -> String {
        let code = match v {
            "broken" | "forked" | "gap" => "1;31",
            "suspect" => "33",
            "unverifiable" => "36",
            "intact" | "resumed" => "32",
            _ => "0",
        };
        self.paint(code, v)
    }
}

/// An id for the terminal: more than 16 characters become the first 8, `…` and the last 4.
pub fn short(s: &str) -> String {
    let n = s.chars().count();
    if n <= 16 {
        return s.to_string();
    }
    let head: String = s.chars().take(8).collect();
    let tail: String = s.chars().skip(n - 4).collect();
    format!("{head}…{tail}")
}

/// The rank of a session verdict, worst first.
fn rank(verdict: &str) -> u8 {
    match verdict {
        "broken" => 0,
        "suspect" => 1,
        "unverifiable" => 2,
        "intact" => 3,
        _ => 4,
    }
}

/// A cell of `t` as text for the terminal (`""` when missing): times as
/// `2026-11-29 22:24:30.063117`, ids shortened.
fn cell(t: &Table, col: &str, i: usize) -> String {
    let Some((_, v)) = t.columns.iter().find(|(c, _)| *c == col) else {
        return String::new();
    };
    let shorten = col.ends_with("session_id") || col.ends_with("event_id");
    match v {
        Values::Str(x) => x
            .get(i)
            .map(|s| if shorten { short(s) } else { s.to_string() })
            .unwrap_or_default(),
        Values::I64(x) => x[i].map(|n| n.to_string()).unwrap_or_default(),
        Values::U64(x) => x[i].map(|n| n.to_string()).unwrap_or_default(),
        Values::F64(x) => x[i].map(|n| n.to_string()).unwrap_or_default(),
        Values::Bool(x) => x[i].map(|b| b.to_string()).unwrap_or_default(),
        Values::Ts(x) => x[i]
            .map(|t| {
                format_ts(t)
                    .replace('T', " ")
                    .trim_end_matches('Z')
                    .to_string()
            })
            .unwrap_or_default(),
    }
}

/// Rows `rows` of `t`, columns `cols`, aligned under a header, each line indented by `indent`;
/// `paint` may colour a cell after it is padded (so colours do not shift the columns).
fn grid(
    out: &mut impl Write,
    t: &Table,
    cols: &[&str],
    rows: &[usize],
    indent: &str,
    paint: &dyn Fn(&str, &str) -> String,
) {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|&i| cols.iter().map(|c| cell(t, c, i)).collect())
        .collect();
    let width: Vec<usize> = cols
        .iter()
        .enumerate()
        .map(|(k, c)| {
            cells
                .iter()
                .map(|r| r[k].chars().count())
                .chain([c.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |vals: &[String], painted: bool| {
        let mut s = String::from(indent);
        for (k, v) in vals.iter().enumerate() {
            let pad = " ".repeat(width[k] - v.chars().count());
            let shown = if painted {
                paint(cols[k], v)
            } else {
                v.clone()
            };
            s.push_str(&shown);
            if k + 1 < vals.len() {
                s.push_str(&pad);
                s.push_str("  ");
            }
        }
        s
    };
    let head: Vec<String> = cols.iter().map(|c| c.to_string()).collect();
    let _ = writeln!(out, "{}", line(&head, false));
    for r in &cells {
        let _ = writeln!(out, "{}", line(r, true));
    }
}

/// Full text values of column `col` of `t`.
fn texts(t: &Table, col: &str) -> Vec<String> {
    (0..t.height()).map(|i| raw(t, col, i)).collect()
}

/// The full (not shortened) text of a cell.
fn raw(t: &Table, col: &str, i: usize) -> String {
    match t.columns.iter().find(|(c, _)| *c == col) {
        Some((_, Values::Str(x))) => x.get(i).unwrap_or("").to_string(),
        _ => cell(t, col, i),
    }
}

/// The one-line verdict: `3 of 60 sessions broken (2 forked resumptions, 1 lost response), 1
/// suspect, 56 intact`.
pub fn verdict_line(a: &Analysis, sessions: &Table, style: Style) -> String {
    let verdicts: Vec<String> = (0..sessions.height())
        .map(|i| raw(sessions, "verdict", i))
        .collect();
    let count = |v: &str| verdicts.iter().filter(|x| *x == v).count();
    let total = verdicts.iter().filter(|v| *v != "not_mcp").count();
    // What broke them, in the user's terms: forked resumptions from their verdicts, then the
    // other error kinds.
    let broken: std::collections::HashSet<String> = (0..sessions.height())
        .filter(|&i| verdicts[i] == "broken")
        .map(|i| raw(sessions, "session_id", i))
        .collect();
    let forks = a
        .resumptions
        .iter()
        .filter(|r| r.verdict == mcpcap::detect::Verdict::Forked)
        .filter(|r| {
            broken.contains(a.model.sessions[a.model.resumptions[r.index].session].label_str())
        })
        .count();
    let mut why: Vec<String> = Vec::new();
    if forks > 0 {
        why.push(plural(forks, "forked resumption", "forked resumptions"));
    }
    let mut kinds: std::collections::BTreeMap<&str, usize> = Default::default();
    for f in a
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error && broken.contains(&f.session_id))
    {
        if !matches!(
            f.kind.as_str(),
            "id_regression" | "id_restart" | "missing_event_id" | "backend_switch"
        ) {
            *kinds.entry(f.kind.as_str()).or_default() += 1;
        }
    }
    for (k, n) in kinds {
        why.push(plural(n, &noun(k, false), &noun(k, true)));
    }
    let mut parts = vec![format!(
        "{} of {} session{} {}{}",
        count("broken"),
        total,
        if total == 1 { "" } else { "s" },
        style.verdict("broken"),
        if why.is_empty() {
            String::new()
        } else {
            format!(" ({})", why.join(", "))
        }
    )];
    for v in ["suspect", "unverifiable", "intact"] {
        parts.push(format!("{} {}", count(v), style.verdict(v)));
    }
    if count("not_mcp") > 0 {
        parts.push(format!("{} not MCP", count("not_mcp")));
    }
    let tls = undecrypted_tls(a);
    if tls > 0 {
        parts.push(format!(
            "{} not decrypted (MCP inside not seen)",
            plural(tls, "TLS connection", "TLS connections")
        ));
    }
    parts.join(", ")
}

/// How many TLS connections with application data were not decrypted (the `undecrypted_tls`
/// findings' `observed` counts).
pub fn undecrypted_tls(a: &Analysis) -> usize {
    a.findings
        .iter()
        .filter(|f| f.kind == mcpcap::detect::Kind::UndecryptedTls)
        .filter_map(|f| {
            f.observed
                .as_deref()?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .sum()
}

/// `n` and the noun for that many ([`mcpcap::text::plural`]).
fn plural(n: usize, one: &str, many: &str) -> String {
    mcpcap::text::plural(n as u64, one, many)
}

/// A finding kind as a noun for the verdict line.
fn noun(kind: &str, many: bool) -> String {
    let (one, more) = match kind {
        "lost_response" => ("lost response", "lost responses"),
        "duplicate_delivery" => ("duplicate delivery", "duplicate deliveries"),
        "app_seq_desync" => ("synthesized continuation", "synthesized continuations"),
        "suspect_terminal" => ("suspect result", "suspect results"),
        "id_gap" => ("id gap", "id gaps"),
        "cross_stream_replay" => ("cross-stream replay", "cross-stream replays"),
        "cross_session_replay" => ("cross-session replay", "cross-session replays"),
        "duplicate_event_id" => ("event written twice", "events written twice"),
        "lost_in_transit" => ("loss in transit", "losses in transit"),
        other => return other.to_string(),
    };
    (if many { more } else { one }).to_string()
}

/// What [`render`] needs of the run.
pub struct Report<'a> {
    /// The detectors' results.
    pub analysis: &'a Analysis,
    /// The first line: frames, flows, exchanges… of the capture.
    pub capture_line: String,
    /// `files`, when there were several.
    pub files: Option<Table>,
    /// The tables shown.
    pub sessions: Table,
    /// See `sessions`.
    pub resumptions: Table,
    /// See `sessions`.
    pub findings: Table,
    /// See `sessions`.
    pub calls: Table,
}

/// Write the report: the verdict line, the capture line and (several files) the files; the
/// sessions worst first; each session that is not intact with its findings, resumptions and
/// (broken or suspect) its failed and slowest calls; then how many info findings the collapsed
/// intact sessions have. Write errors are ignored.
pub fn render(out: &mut impl Write, r: &Report<'_>, style: Style) {
    head(out, r, style);
    let order = SessionOrder::of(&r.sessions, style);
    sessions(out, &r.sessions, &order, style);
    // Per session: its findings, resumptions and calls.
    let of = Sessions {
        findings: texts(&r.findings, "session_id"),
        resumptions: texts(&r.resumptions, "session_id"),
        calls: texts(&r.calls, "session_id"),
    };
    for &i in &order.listed {
        session(out, r, &of, i, style);
    }
    if order.collapse {
        let hidden = order
            .intact
            .iter()
            .map(|&i| raw(&r.sessions, "session_id", i))
            .map(|sid| of.findings.iter().filter(|x| **x == sid).count())
            .sum::<usize>();
        if hidden > 0 {
            let _ = writeln!(
                out,
                "\n{hidden} info findings of intact sessions not shown (--all shows them)"
            );
        }
    }
}

/// The verdict line, the capture line, and the files when there are several.
fn head(out: &mut impl Write, r: &Report<'_>, style: Style) {
    let _ = writeln!(out, "{}", verdict_line(r.analysis, &r.sessions, style));
    let _ = writeln!(out, "{}\n", r.capture_line);
    if let Some(f) = &r.files {
        let _ = writeln!(out, "files");
        let rows: Vec<usize> = (0..f.height()).collect();
        grid(
            out,
            f,
            &["file", "vantage", "frame_first", "frame_last", "frames"],
            &rows,
            "  ",
            &|_, v| v.to_string(),
        );
        let _ = writeln!(out);
    }
}

/// The rows of the sessions table in the order shown.
struct SessionOrder {
    /// Rows listed: worst verdict first (then in table order), without the intact ones when
    /// they collapse.
    listed: Vec<usize>,
    /// Rows of intact sessions, in the order shown.
    intact: Vec<usize>,
    /// Whether the intact sessions collapse into one line: more than [`INTACT_SHOWN`] of them
    /// on a terminal without `--all`.
    collapse: bool,
}

impl SessionOrder {
    /// The order of sessions table `s` in `style`.
    fn of(s: &Table, style: Style) -> SessionOrder {
        let mut order: Vec<usize> = (0..s.height()).collect();
        order.sort_by_key(|&i| (rank(&raw(s, "verdict", i)), i));
        let intact: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| raw(s, "verdict", i) == "intact")
            .collect();
        let collapse = style.terminal && !style.all && intact.len() > INTACT_SHOWN;
        let listed: Vec<usize> = order
            .iter()
            .copied()
            .filter(|i| !(collapse && intact.contains(i)))
            .collect();
        SessionOrder {
            listed,
            intact,
            collapse,
        }
    }
}

/// The sessions, worst first, as `order` lists them; collapsed intact ones as one line.
fn sessions(out: &mut impl Write, s: &Table, order: &SessionOrder, style: Style) {
    let _ = writeln!(out, "sessions, worst first");
    if order.listed.is_empty() && !order.collapse {
        let _ = writeln!(out, "  (none)");
    } else {
        grid(
            out,
            s,
            &[
                "verdict",
                "session_id",
                "protocol_version",
                "ts_first",
                "exchanges",
                "streams",
                "resumptions",
                "errors",
                "warnings",
            ],
            &order.listed,
            "  ",
            &|c, v| verdict_cell(style, c, v),
        );
    }
    if order.collapse {
        let _ = writeln!(
            out,
            "  … and {} intact sessions (--all lists them)",
            order.intact.len()
        );
    }
}

/// The full session id of each row of the findings, resumptions and calls tables.
struct Sessions {
    /// Per row of the findings.
    findings: Vec<String>,
    /// Per row of the resumptions.
    resumptions: Vec<String>,
    /// Per row of the calls.
    calls: Vec<String>,
}

/// Row `i` of the sessions table under its own heading, unless it is intact without findings
/// or not MCP: its findings, its resumptions and, broken or suspect, its failed and slowest
/// calls (`of`: the session of each of their rows).
fn session(out: &mut impl Write, r: &Report<'_>, of: &Sessions, i: usize, style: Style) {
    let s = &r.sessions;
    let verdict = raw(s, "verdict", i);
    let sid = raw(s, "session_id", i);
    let findings: Vec<usize> = (0..r.findings.height())
        .filter(|&k| of.findings[k] == sid)
        .collect();
    if verdict == "intact" && findings.is_empty() || verdict == "not_mcp" {
        return;
    }
    let n = |c: &str| cell(s, c, i).parse::<usize>().unwrap_or(0);
    let _ = writeln!(
        out,
        "\n{} session {} ({}, {})",
        style.verdict(&verdict),
        raw(s, "session_id", i),
        plural(n("exchanges"), "exchange", "exchanges"),
        plural(n("resumptions"), "resumption", "resumptions")
    );
    for &k in &findings {
        let f = &r.findings;
        let _ = writeln!(
            out,
            "  [{}] {} {} (frame {}, {}): {}",
            cell(f, "finding", k),
            style.severity(&raw(f, "severity", k)),
            raw(f, "kind", k),
            cell(f, "frame", k),
            cell(f, "flow_id", k),
            raw(f, "detail", k)
        );
        let file = raw(f, "file", k);
        let _ = writeln!(
            out,
            "      wireshark{}{}: {}",
            if file.is_empty() { "" } else { " " },
            file,
            raw(f, "wireshark_filter", k)
        );
    }
    let res: Vec<usize> = (0..r.resumptions.height())
        .filter(|&k| of.resumptions[k] == sid)
        .collect();
    if !res.is_empty() {
        let _ = writeln!(out, "  resumptions");
        grid(
            out,
            &r.resumptions,
            &[
                "ts",
                "flow_id",
                "frame",
                "last_event_id",
                "stream_id",
                "status",
                "first_event_id",
                "events",
                "verdict",
            ],
            &res,
            "    ",
            &|c, v| verdict_cell(style, c, v),
        );
    }
    if matches!(verdict.as_str(), "broken" | "suspect") {
        let rows = slow_and_failed(&r.calls, &of.calls, &sid);
        calls(out, &r.calls, &rows, style);
    }
}

/// Rows `rows` of the calls table under their heading (nothing without rows); an outcome other
/// than a result in red.
fn calls(out: &mut impl Write, calls: &Table, rows: &[usize], style: Style) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "  calls: failed, then the slowest");
    grid(
        out,
        calls,
        &[
            "ts_request",
            "flow_id",
            "frame",
            "method",
            "name",
            "request_id",
            "outcome",
            "latency_us",
            "progress",
            "connections",
            "findings",
        ],
        rows,
        "    ",
        &|c, v| match (c, v) {
            ("outcome", "result") => v.to_string(),
            ("outcome", _) => style.paint("1;31", v),
            _ => v.to_string(),
        },
    );
}

/// A cell `v` of column `c` as shown: coloured by its verdict in the `verdict` column.
fn verdict_cell(style: Style, c: &str, v: &str) -> String {
    if c == "verdict" {
        style.verdict(v)
    } else {
        v.to_string()
    }
}

/// Calls of session `sid` that did not end with a result, then the three slowest that did.
fn slow_and_failed(calls: &Table, c_sessions: &[String], sid: &str) -> Vec<usize> {
    let mine: Vec<usize> = (0..calls.height())
        .filter(|&k| c_sessions[k] == sid)
        .collect();
    let mut failed: Vec<usize> = mine
        .iter()
        .copied()
        .filter(|&k| raw(calls, "outcome", k) != "result")
        .collect();
    let mut ok: Vec<(u64, usize)> = mine
        .iter()
        .copied()
        .filter(|&k| raw(calls, "outcome", k) == "result")
        .map(|k| (cell(calls, "latency_us", k).parse().unwrap_or(0), k))
        .collect();
    ok.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    failed.truncate(10);
    failed.extend(ok.iter().take(3).map(|&(_, k)| k));
    failed
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpcap::report::Text;

    /// A sessions table of `broken` broken and `intact` intact sessions, intact first.
    fn sessions(broken: usize, intact: usize) -> Table {
        let n = broken + intact;
        let verdicts: Text = (0..n)
            .map(|i| Some(if i < intact { "intact" } else { "broken" }))
            .collect();
        let ids: Text = (0..n)
            .map(|i| Some(format!("session-{i:04}-abcdefghijkl")))
            .collect();
        let count = |v: u64| Values::U64(vec![Some(v); n]);
        Table {
            name: "sessions",
            columns: vec![
                ("session_id", Values::Str(ids)),
                (
                    "protocol_version",
                    Values::Str((0..n).map(|_| Some("2025-11-25")).collect()),
                ),
                ("ts_first", Values::Ts(vec![Some(0); n])),
                ("exchanges", count(3)),
                ("streams", count(1)),
                ("resumptions", count(0)),
                ("errors", count(0)),
                ("warnings", count(0)),
                ("verdict", Values::Str(verdicts)),
            ],
        }
    }

    /// A table `name` with text columns `cols` and no rows.
    fn empty(name: &'static str, cols: &[&'static str]) -> Table {
        Table {
            name,
            columns: cols
                .iter()
                .map(|c| (*c, Values::Str(Text::default())))
                .collect(),
        }
    }

    /// The report of sessions table `s` (no findings, resumptions or calls) in `style`.
    fn render_text(s: Table, style: Style) -> String {
        let a = Analysis::default();
        let r = Report {
            analysis: &a,
            capture_line: "capture".into(),
            files: None,
            sessions: s,
            resumptions: empty("resumptions", &["session_id"]),
            findings: empty("findings", &["session_id"]),
            calls: empty("calls", &["session_id"]),
        };
        let mut out = Vec::new();
        render(&mut out, &r, style);
        String::from_utf8(out).unwrap()
    }

    const TERMINAL: Style = Style {
        color: false,
        terminal: true,
        all: false,
    };

    #[test]
    fn broken_sessions_come_first_and_many_intact_ones_collapse_on_a_terminal() {
        let text = render_text(sessions(2, 25), TERMINAL);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "2 of 27 sessions broken, 0 suspect, 0 unverifiable, 25 intact"
        );
        let at = lines
            .iter()
            .position(|l| l.starts_with("sessions"))
            .unwrap();
        assert!(lines[at + 2].trim_start().starts_with("broken"), "{text}");
        assert!(lines[at + 3].trim_start().starts_with("broken"), "{text}");
        assert_eq!(
            lines[at + 4],
            "  … and 25 intact sessions (--all lists them)"
        );
        assert!(!text.contains("intact   session"), "{text}");
        // Ids are shortened here only.
        assert!(lines[at + 2].contains("session-…ijkl"), "{text}");
    }

    #[test]
    fn all_intact_sessions_are_listed_with_all_or_when_piped() {
        for style in [
            Style {
                all: true,
                ..TERMINAL
            },
            Style {
                terminal: false,
                ..TERMINAL
            },
        ] {
            let text = render_text(sessions(1, 25), style);
            assert_eq!(text.matches("  intact").count(), 25, "{text}");
            assert!(!text.contains("--all lists them"));
        }
        // Twenty are listed on a terminal too.
        assert_eq!(
            render_text(sessions(0, 20), TERMINAL)
                .matches("  intact")
                .count(),
            20
        );
    }

    #[test]
    fn colour_only_when_asked() {
        let plain = Style {
            color: false,
            ..TERMINAL
        };
        assert_eq!(plain.severity("error"), "error");
        let coloured = Style {
            color: true,
            ..TERMINAL
        };
        assert_eq!(coloured.severity("error"), "\x1b[1;31merror\x1b[0m");
        assert!(render_text(sessions(1, 1), plain)
            .bytes()
            .all(|b| b != 0x1b));
    }

    #[test]
    fn long_ids_are_shortened_to_their_ends() {
        assert_eq!(short("9"), "9");
        assert_eq!(short("0123456789abcdef"), "0123456789abcdef");
        assert_eq!(short("94c9382d3c5d4ba5804e12128cde7174"), "94c9382d…7174");
        assert_eq!(
            short("é".repeat(20).as_str()),
            format!("{}…{}", "é".repeat(8), "é".repeat(4))
        );
    }
}
