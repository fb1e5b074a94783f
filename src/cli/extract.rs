//! `mcpcap extract`: the packets of sessions (every frame of every connection that carried one
//! of their exchanges, handshakes and closes included), of the sessions of findings, or of
//! connections, written to a pcapng file with their original timestamps and link types. The
//! selections combine: the union of their connections is written. Each frame a chosen finding
//! cites gets a comment naming the finding (`opt_comment`). The secrets of the TLS connections
//! written (from `--tls-keylog` or the captures' own) go first, as a Decryption Secrets Block.
//!
//! The captures are read a second time, from the files the `files` table lists, so the frame
//! numbers are those of the tables; a frame belongs to a connection when its TCP addresses are
//! the connection's and its number lies in the connection's frames (`flows`).

use std::collections::{BTreeSet, HashMap};
use std::io::BufWriter;
use std::path::PathBuf;

use anyhow::{anyhow, bail};

use mcpcap::decode::{decode, Decoded};
use mcpcap::detect::Analysis;
use mcpcap::http::Exchange;
use mcpcap::pcapng::PcapngWriter;
use mcpcap::report::tables::FlowsPart;
use mcpcap::report::wireshark::FrameFiles;

use super::at;
use super::read::Capture;

/// What `extract` writes.
#[derive(Debug, Clone)]
pub struct Extract {
    /// The packets chosen: those of the union of the connections these select (one at least).
    pub selections: Vec<Selection>,
    /// The pcapng file written.
    pub out: PathBuf,
}

/// Which packets `extract` writes, and which findings' cited frames get comments.
#[derive(Debug, Clone)]
pub enum Selection {
    /// Those of the session with this `session_id`; its findings.
    Session(String),
    /// Those of the session of the finding with this number (from 1, the `finding` column),
    /// and of the connections it cites; that finding.
    Finding(u64),
    /// Those of the connection with this flow index (`F<index>`); the findings that cite one
    /// of its frames.
    Flow(usize),
}

/// The connections and findings (indices into `findings`) a selection chose.
#[derive(Debug, Default)]
struct Chosen {
    flows: BTreeSet<usize>,
    findings: BTreeSet<usize>,
}

/// A connection to extract: its vantage point, addresses and frame range.
struct Wanted {
    vantage: String,
    ends: [(std::net::IpAddr, u16); 2],
    frames: std::ops::RangeInclusive<u64>,
}

/// Write the extract; returns the number of packets written.
///
/// Errors: a session, finding or flow selected does not exist, a capture was read from standard input (it
/// cannot be read again), a capture cannot be reopened, or the output cannot be written; the
/// message names the path.
pub fn write(
    x: &Extract,
    analysis: &Analysis,
    exchanges: &[Exchange],
    capture: &Capture,
) -> anyhow::Result<u64> {
    let parts: Vec<FlowsPart<'_>> = capture
        .vantages
        .iter()
        .map(|v| FlowsPart {
            vantage: &v.name,
            flows: &v.analyzer.flows,
            client_dir: &v.analyzer.http.client_dir,
            tls: &v.analyzer.http.tls.flows,
            clock_offset_us: 0,
        })
        .collect();
    let files = FrameFiles::new(&parts, &capture.file_rows);
    let mut chosen = Chosen::default();
    for s in &x.selections {
        choose(s, analysis, exchanges, &parts, &mut chosen)?;
    }
    let mut wanted = Vec::new();
    for p in &parts {
        for &i in &chosen.flows {
            if let Some(r) = p.flows.row(i) {
                wanted.push(Wanted {
                    vantage: p.vantage.to_string(),
                    ends: r.ends,
                    frames: r.frame_first..=r.frame_last,
                });
            }
        }
    }
    let comments = comments(&chosen, analysis, &files);
    let tmp = x.out.clone();
    let file = std::fs::File::create(&tmp).map_err(|e| at(&tmp, e))?;
    let mut w = PcapngWriter::new(
        BufWriter::new(file),
        concat!("mcpcap ", env!("CARGO_PKG_VERSION")),
    )
    .map_err(|e| at(&tmp, e))?;
    // The secrets of the TLS connections written, so that Wireshark decrypts the extract as
    // mcpcap did (and only theirs: the key log of the others is not handed on).
    let keylog = extract_secrets(capture, &chosen.flows);
    if !keylog.is_empty() {
        w.tls_secrets(&keylog).map_err(|e| at(&tmp, e))?;
    }
    let mut written = 0u64;
    for row in &capture.file_rows {
        let (Some(first), path) = (row.frame_first, PathBuf::from(&row.file)) else {
            continue;
        };
        if row.file == "-" {
            bail!("extract reads the captures twice: give files, not standard input");
        }
        let mine: Vec<&Wanted> = wanted.iter().filter(|w| w.vantage == row.vantage).collect();
        if mine.is_empty() {
            continue;
        }
        let input = std::fs::File::open(&path).map_err(|e| at(&path, e))?;
        let mut anomalies = mcpcap::anomaly::Anomalies::default();
        let mut failed = None;
        let _ = mcpcap::capture::read_capture(
            std::io::BufReader::new(input),
            first,
            &mut anomalies,
            |f| {
                if failed.is_some()
                    || !mine
                        .iter()
                        .any(|c| takes(c, f.number, f.linktype, f.data, f.orig_len))
                {
                    return;
                }
                let notes: Vec<&str> = comments
                    .get(&(row.vantage.as_str(), f.number))
                    .map(|v| v.iter().map(String::as_str).collect())
                    .unwrap_or_default();
                let linktype = u16::try_from(f.linktype).unwrap_or(0);
                match w.packet(linktype, f.ts, f.data, f.orig_len, &notes) {
                    Ok(()) => written += 1,
                    Err(e) => failed = Some(e),
                }
            },
        )
        .map_err(|e| at(&path, e))?;
        if let Some(e) = failed {
            return Err(at(&x.out, e));
        }
    }
    w.finish().map_err(|e| at(&x.out, e))?;
    Ok(written)
}

/// The key log lines of the chosen connections that are TLS with secrets, in flow order.
fn extract_secrets(capture: &Capture, flows: &BTreeSet<usize>) -> String {
    let mut out = String::new();
    // (One connection seen at two vantage points has one random, and its lines once.)
    let mut written = BTreeSet::new();
    for v in &capture.vantages {
        let Some(secrets) = v.analyzer.http.tls.options.secrets.as_deref() else {
            continue;
        };
        for i in flows {
            let tls = v.analyzer.http.tls.flows.get(i);
            if let Some(random) = tls.and_then(|t| t.client_random) {
                if written.insert(random) {
                    out.push_str(&secrets.keylog_lines(&random));
                }
            }
        }
    }
    out
}

/// Whether frame `number` is a segment of connection `w`.
fn takes(w: &Wanted, number: u64, linktype: i32, data: &[u8], orig_len: u32) -> bool {
    if !w.frames.contains(&number) {
        return false;
    }
    match decode(linktype, data, orig_len) {
        Decoded::Tcp(s) => {
            let (a, b) = ((s.src, s.sport), (s.dst, s.dport));
            (a, b) == (w.ends[0], w.ends[1]) || (b, a) == (w.ends[0], w.ends[1])
        }
        _ => false,
    }
}

/// Add what selection `s` chooses to `chosen`.
///
/// Errors: the finding, session or flow does not exist (one line, naming the table to look in).
fn choose(
    s: &Selection,
    analysis: &Analysis,
    exchanges: &[Exchange],
    parts: &[FlowsPart<'_>],
    chosen: &mut Chosen,
) -> anyhow::Result<()> {
    let m = &analysis.model;
    let of_session = |session: &str| -> BTreeSet<usize> {
        exchanges
            .iter()
            .enumerate()
            .filter(|(i, _)| m.sessions[m.exchange_session[*i]].label_str() == session)
            .map(|(_, e)| e.flow_index)
            .collect()
    };
    match s {
        Selection::Finding(n) => {
            let k = (*n as usize).wrapping_sub(1);
            let f = analysis.findings.get(k).ok_or_else(|| {
                anyhow!(
                    "no finding {n} (the capture has {})",
                    analysis.findings.len()
                )
            })?;
            chosen.flows.extend(of_session(&f.session_id));
            chosen.flows.extend(f.cited.iter().map(|c| c.flow_index));
            chosen.findings.insert(k);
        }
        Selection::Session(session) => {
            let flows = of_session(session);
            if flows.is_empty() {
                bail!("no session {session} in the capture (see the sessions table)");
            }
            chosen.flows.extend(flows);
            chosen.findings.extend(
                (0..analysis.findings.len())
                    .filter(|&k| analysis.findings[k].session_id == *session),
            );
        }
        Selection::Flow(i) => {
            if !parts.iter().any(|p| p.flows.row(*i).is_some()) {
                bail!("no flow F{i} in the capture (see the flows table)");
            }
            chosen.flows.insert(*i);
            chosen
                .findings
                .extend((0..analysis.findings.len()).filter(|&k| {
                    analysis.findings[k]
                        .cited
                        .iter()
                        .any(|c| c.flow_index == *i)
                }));
        }
    }
    Ok(())
}

/// The comment of each frame the `chosen` findings cite, by (vantage point, frame): `mcpcap
/// finding <n>: <kind> (<severity>)`, one per finding citing it, in the findings' order.
fn comments<'a>(
    chosen: &Chosen,
    analysis: &'a Analysis,
    files: &'a FrameFiles<'_>,
) -> HashMap<(&'a str, u64), Vec<String>> {
    let mut by_frame: HashMap<(&str, u64), Vec<String>> = HashMap::new();
    for &k in &chosen.findings {
        let (n, f) = (k as u64 + 1, &analysis.findings[k]);
        for c in &f.cited {
            by_frame
                .entry((files.vantage_of(c.flow_index).unwrap_or(""), c.frame))
                .or_default()
                .push(format!(
                    "mcpcap finding {n}: {} ({})",
                    f.kind.as_str(),
                    f.severity.as_str()
                ));
        }
    }
    by_frame
}
