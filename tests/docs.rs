//! The documentation against the program: README's finding table and `docs/findings.md` list the
//! same kinds with the same severities, every kind the detectors emit is documented, each
//! example sentence is one a fixture really produces, each "fires on" capture fires and each
//! "must not" capture does not; `docs/tables.md` lists exactly the columns every table has; and
//! the links between the pages resolve; `docs/anomalies.md` is the table of anomaly codes, and
//! every code the pages name is one.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap()
}

/// README's finding table, in order: (kind, severity cell, sentence with its full stop).
fn readme_kinds() -> Vec<(String, String, String)> {
    let text = read("README.md");
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("| [`") else {
            continue;
        };
        let (kind, rest) = rest.split_once('`').unwrap();
        let link = format!("](docs/findings.md#{kind}) | ");
        let rest = rest
            .strip_prefix(&link)
            .unwrap_or_else(|| panic!("{kind}: link {line}"));
        let (severity, meaning) = rest.split_once(" | ").unwrap();
        let sentence = meaning
            .strip_suffix(" |")
            .unwrap_or_else(|| panic!("{kind}: a last cell: {line}"));
        out.push((kind.to_string(), severity.to_string(), sentence.to_string()));
    }
    out
}

/// One section of docs/findings.md.
#[derive(Debug, Default)]
struct Section {
    severity: String,
    /// The sentence after the severity.
    summary: String,
    example: Option<(String, String)>,
    fires_on: Vec<String>,
    must_not: Vec<String>,
}

fn findings_doc() -> Vec<(String, Section)> {
    let text = read("docs/findings.md");
    let mut out: Vec<(String, Section)> = Vec::new();
    for part in text.split("\n## `").skip(1) {
        let (kind, body) = part.split_once("`\n").unwrap();
        let mut s = Section::default();
        let body1 = body.replace('\n', " ");
        s.severity = body1
            .trim()
            .strip_prefix("**")
            .and_then(|b| b.split_once("**"))
            .map(|(sev, _)| sev.to_string())
            .unwrap_or_else(|| panic!("{kind}: no severity"));
        // The first paragraph: "**severity** — sentence".
        s.summary = body
            .trim()
            .split("\n\n")
            .next()
            .unwrap()
            .replace('\n', " ")
            .split_once(" — ")
            .map(|(_, t)| t.to_string())
            .unwrap_or_else(|| panic!("{kind}: no sentence after the severity"));
        if let Some(e) = body1.split("Example (`").nth(1) {
            let (fixture, rest) = e.split_once('`').unwrap();
            let quote = rest.split_once(": \"").unwrap().1;
            let quote = quote.split_once('"').unwrap().0;
            s.example = Some((
                fixture.to_string(),
                quote.trim_end_matches('…').trim().to_string(),
            ));
        }
        for (marker, list) in [
            ("Fires on ", &mut s.fires_on),
            ("must not on ", &mut s.must_not),
        ] {
            if let Some(rest) = body1.split(marker).nth(1) {
                let first = rest
                    .split_once('`')
                    .map(|(_, r)| r.split_once('`').unwrap().0);
                list.extend(first.map(str::to_string));
            }
        }
        out.push((kind.to_string(), s));
    }
    out
}

/// The severities of a rule as the finding table writes them: the usual one first.
fn severity_cell(r: &mcpcap::detect::rules::Rule) -> String {
    r.severities
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", or ")
}

#[test]
fn the_finding_table_and_the_reference_page_are_the_registry() {
    let rules = mcpcap::detect::rules::RULES;
    let readme = readme_kinds();
    let kinds: Vec<&str> = rules.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(
        readme.iter().map(|(k, ..)| k.as_str()).collect::<Vec<_>>(),
        kinds,
        "README's finding table, in the registry's order"
    );
    // The reference page groups the kinds by what they judge: the same set.
    let doc: BTreeMap<String, Section> = findings_doc().into_iter().collect();
    let mut sorted = kinds.clone();
    sorted.sort_unstable();
    assert_eq!(
        doc.keys().map(String::as_str).collect::<Vec<_>>(),
        sorted,
        "docs/findings.md against the registry"
    );
    for (r, (_, severity, sentence)) in rules.iter().zip(&readme) {
        let (kind, section) = (r.kind, &doc[r.kind.as_str()]);
        assert_eq!(severity, &severity_cell(r), "{kind}: README severity");
        assert_eq!(sentence, r.summary, "{kind}: README sentence");
        assert_eq!(
            section.severity,
            r.severities[0].as_str(),
            "{kind}: docs severity"
        );
        assert_eq!(
            section.summary, r.summary,
            "{kind}: docs/findings.md sentence"
        );
    }
}

#[test]
fn each_reference_section_holds_to_its_captures() {
    let mut cache: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut checked = 0;
    for (kind, s) in findings_doc() {
        let mut of = |f: &str| -> Vec<Value> {
            cache
                .entry(f.to_string())
                .or_insert_with(|| common::fixture_findings(f.strip_prefix("fixtures/").unwrap()))
                .clone()
        };
        let has = |fs: &[Value]| fs.iter().any(|f| f["kind"] == kind.as_str());
        for f in s.fires_on.iter().filter(|f| f.starts_with("fixtures/")) {
            assert!(has(&of(f)), "{kind} must fire on {f}");
            checked += 1;
        }
        for f in s.must_not.iter().filter(|f| f.starts_with("fixtures/")) {
            assert!(!has(&of(f)), "{kind} must not fire on {f}");
            checked += 1;
        }
        if let Some((f, quote)) = s
            .example
            .as_ref()
            .filter(|(f, _)| f.starts_with("fixtures/"))
        {
            let fs = of(f);
            // The quote's pieces between ellipses, in order, the first at the start.
            let quoted = |detail: &str| {
                let mut at = 0;
                quote
                    .split('…')
                    .map(str::trim)
                    .enumerate()
                    .all(|(i, piece)| match detail[at..].find(piece) {
                        Some(k) if i > 0 || k == 0 => {
                            at += k + piece.len();
                            true
                        }
                        _ => false,
                    })
            };
            assert!(
                fs.iter()
                    .any(|x| x["kind"] == kind.as_str() && quoted(x["detail"].as_str().unwrap())),
                "{kind}: the example is not a detail {f} produces: {quote}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 60, "{checked} checks");
}

#[test]
fn the_tables_page_lists_every_column() {
    let text = read("docs/tables.md");
    let mut doc: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut table = None;
    for line in text.lines() {
        if let Some(t) = line.strip_prefix("## `").and_then(|l| l.strip_suffix('`')) {
            table = Some(t.to_string());
            doc.insert(t.to_string(), Vec::new());
        } else if let (Some(t), Some(rest)) = (&table, line.strip_prefix("| `")) {
            let col = rest.split('`').next().unwrap();
            doc.get_mut(t).unwrap().push(col.to_string());
        }
    }
    let out = std::env::temp_dir().join(format!("mcpcap-docs-{}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(["analyze", "--format", "csv", "--fail-on", "never", "--out"])
        .arg(&out)
        .arg(root().join("fixtures/mcp/fork_restart.pcap"))
        .output()
        .unwrap();
    assert!(o.status.success());
    let names: BTreeSet<String> = mcpcap::report::TABLE_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(doc.keys().cloned().collect::<BTreeSet<_>>(), names);
    for t in mcpcap::report::TABLE_NAMES {
        let csv = std::fs::read_to_string(out.join(format!("{t}.csv"))).unwrap();
        let header = common::csv_header(&csv);
        assert_eq!(header, doc[t], "docs/tables.md, table {t}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Relative links of a Markdown file: (target path, anchor).
fn links(file: &Path) -> Vec<(String, Option<String>)> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut out = Vec::new();
    for part in text.split("](").skip(1) {
        let target = part.split(')').next().unwrap();
        if target.starts_with("http") || target.contains(' ') {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p.to_string(), Some(a.to_string())),
            None => (target.to_string(), None),
        };
        out.push((path, anchor));
    }
    out
}

/// GitHub's anchor of a heading: lower case, spaces to `-`, other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn links_between_the_pages_resolve() {
    let mut pages = vec![root().join("README.md"), root().join("bench/README.md")];
    for e in std::fs::read_dir(root().join("docs")).unwrap() {
        pages.push(e.unwrap().path());
    }
    for page in &pages {
        for (path, a) in links(page) {
            let target = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(&path)
            };
            assert!(target.exists(), "{}: link to {path}", page.display());
            if let Some(a) = a {
                let text = std::fs::read_to_string(&target).unwrap();
                let anchors: Vec<String> = text
                    .lines()
                    .filter_map(|l| {
                        l.trim_start_matches('#')
                            .strip_prefix(' ')
                            .filter(|_| l.starts_with('#'))
                    })
                    .map(anchor)
                    .collect();
                assert!(
                    anchors.contains(&a),
                    "{}: anchor #{a} in {path}",
                    page.display()
                );
            }
        }
    }
}

/// `docs/anomalies.md` lists every anomaly code, in the order of [`Code::ALL`], with its one
/// sentence; and every dotted code the README and the reference pages name in backticks is one
/// the program has.
#[test]
fn the_anomaly_page_is_the_code_table() {
    use mcpcap::anomaly::Code;
    let page: Vec<(String, String)> = read("docs/anomalies.md")
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| {
            let (code, rest) = l.split_once("` | ")?;
            Some((code.to_string(), rest.strip_suffix(" |")?.to_string()))
        })
        .collect();
    let table: Vec<(String, String)> = Code::ALL
        .iter()
        .map(|c| (c.as_str().to_string(), c.doc().to_string()))
        .collect();
    assert_eq!(page, table);
    let stages = [
        "capture", "pcap", "pcapng", "decode", "ip", "tcp", "http", "sse", "jsonrpc", "model",
        "detect", "internal", "anomaly",
    ];
    let mut pages = vec!["README.md".to_string()];
    for e in std::fs::read_dir(root().join("docs")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            pages.push(format!("docs/{name}"));
        }
    }
    for page in pages {
        let text = read(&page);
        for (k, part) in text.split('`').enumerate() {
            let Some((stage, what)) = part.split_once('.') else {
                continue;
            };
            let dotted = k % 2 == 1
                && stages.contains(&stage)
                && !what.is_empty()
                && what != "log" // Zeek's http.log, not a code
                && what
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if dotted {
                assert!(
                    Code::from_name(part).is_some(),
                    "{page} names `{part}`, no anomaly code"
                );
            }
        }
    }
}
