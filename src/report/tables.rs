//! The tables of a run: findings, sessions, streams, resumptions, events,
//! exchanges, flows and anomalies.

use std::collections::HashMap;

use super::wireshark::FrameFiles;
use super::{Table, Text, Values};
use crate::anomaly::{Anomalies, Anomaly, Code};
use crate::detect::{Analysis, Severity};
use crate::http::{Exchange, MessageRef};
use crate::jsonrpc::Kind;
use crate::tcp::{FlowId, FlowRow, FlowTable};

macro_rules! col {
    // Text goes into one buffer per column (`Text`): each cell's `String` lives only until it is
    // copied there.
    ($name:expr, $kind:ident, $rows:expr, $f:expr) => {
        ($name, Values::$kind($rows.iter().map($f).collect()))
    };
}

fn join<S: AsRef<str>, I: IntoIterator<Item = S>>(it: I) -> Option<String> {
    let mut out: Option<String> = None;
    for v in it {
        match out.as_mut() {
            None => out = Some(v.as_ref().to_string()),
            Some(o) => {
                o.push(',');
                o.push_str(v.as_ref());
            }
        }
    }
    out
}

/// `findings`: one row per finding (notice.log); `files` places each finding's frames in its
/// capture file (the `file` and `wireshark_filter` columns).
pub fn findings(a: &Analysis, files: &FrameFiles<'_>) -> Table {
    findings_rows(a, files, 0..a.findings.len())
}

/// `findings` as tables of at most `rows` rows each (as [`exchanges_chunks`]).
pub fn findings_chunks<'a>(
    a: &'a Analysis,
    files: &'a FrameFiles<'a>,
    rows: usize,
) -> impl Iterator<Item = Table> + 'a {
    pieces(a.findings.len(), rows).map(move |r| findings_rows(a, files, r))
}

/// The `findings` rows of the findings `range` (numbered from 1 over all of them).
fn findings_rows(a: &Analysis, files: &FrameFiles<'_>, range: std::ops::Range<usize>) -> Table {
    let first = range.start as u64 + 1;
    let r = &a.findings[range];
    let located: Vec<_> = r.iter().map(|f| files.locate(f)).collect();
    Table {
        name: "findings",
        columns: vec![
            (
                "finding",
                Values::U64((first..first + r.len() as u64).map(Some).collect()),
            ),
            col!("ts", Ts, r, |f| Some(f.ts)),
            col!("session_id", Str, r, |f| Some(f.session_id.as_str())),
            col!("kind", Str, r, |f| Some(f.kind.as_str())),
            col!("severity", Str, r, |f| Some(
                f.severity.as_str().to_string()
            )),
            col!("flow_id", Str, r, |f| Some(f.flow_id.as_str())),
            col!("frame", U64, r, |f| Some(f.frame)),
            col!("last_event_id", Str, r, |f| f.last_event_id.as_deref()),
            col!("event_id", Str, r, |f| f.event_id.as_deref()),
            col!("request_id", Str, r, |f| f.request_id.as_deref()),
            col!("expected", Str, r, |f| f.expected.as_deref()),
            col!("observed", Str, r, |f| f.observed.as_deref()),
            col!("detail", Str, r, |f| Some(f.detail.as_str())),
            col!("file", Str, located, |l| l.file.as_deref()),
            col!("wireshark_filter", Str, located, |l| Some(
                l.filter.as_str()
            )),
        ],
    }
}

/// `calls`: one row per JSON-RPC request ([`crate::detect::calls`]).
pub fn calls(a: &Analysis, ex: &[Exchange]) -> Table {
    calls_rows(a, ex, 0..a.calls.len())
}

/// `calls` as tables of at most `rows` rows each (as [`exchanges_chunks`]).
pub fn calls_chunks<'a>(
    a: &'a Analysis,
    ex: &'a [Exchange],
    rows: usize,
) -> impl Iterator<Item = Table> + 'a {
    pieces(a.calls.len(), rows).map(move |r| calls_rows(a, ex, r))
}

/// The `calls` rows of the calls `range`.
fn calls_rows(a: &Analysis, ex: &[Exchange], range: std::ops::Range<usize>) -> Table {
    let m = &a.model;
    let r = &a.calls[range];
    Table {
        name: "calls",
        columns: vec![
            col!("ts_request", Ts, r, |c| Some(c.ts_request)),
            col!("session_id", Str, r, |c| Some(
                m.sessions[c.session].label_str()
            )),
            col!("stream_id", Str, r, |c| c.stream.map(|s| format!("S{s}"))),
            col!("flow_id", Str, r, |c| Some(
                FlowId(ex[c.exchange].flow_index).to_string()
            )),
            col!("frame", U64, r, |c| Some(c.frame)),
            col!("direction", Str, r, |c| Some(if c.from_server {
                "server"
            } else {
                "client"
            })),
            col!("method", Str, r, |c| Some(c.method.as_str())),
            col!("name", Str, r, |c| c.name.as_deref()),
            col!("request_id", Str, r, |c| Some(c.request_id.as_str())),
            col!("ts_response", Ts, r, |c| c.ts_response),
            col!("frame_response", U64, r, |c| c.frame_response),
            col!("latency_us", U64, r, |c| c
                .ts_response
                .map(|t| t.saturating_sub(c.ts_request).max(0) as u64)),
            col!("outcome", Str, r, |c| Some(c.outcome.as_str())),
            col!("status", U64, r, |c| (!c.from_server)
                .then_some(c.status as u64)),
            col!("error_code", I64, r, |c| c.error_code),
            col!("progress", U64, r, |c| Some(c.progress)),
            col!("connections", U64, r, |c| Some(c.connections)),
            col!("findings", Str, r, |c| join(
                c.findings.iter().map(|n| (n + 1).to_string())
            )),
        ],
    }
}

/// One session's row of the `sessions` table.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    /// The session's label ([`crate::mcp::Session::label`]).
    pub label: String,
    /// Negotiated protocol version.
    pub protocol_version: Option<String>,
    /// The revision whose rules apply.
    pub era: &'static str,
    /// Time of its first exchange, µs since the Unix epoch.
    pub ts_first: Option<i64>,
    /// Time its last exchange ended, µs since the Unix epoch.
    pub ts_last: Option<i64>,
    /// Exchanges.
    pub exchanges: u64,
    /// TCP connections that carried them.
    pub flows: u64,
    /// Logical streams.
    pub streams: u64,
    /// Resumptions.
    pub resumptions: u64,
    /// Findings of severity error.
    pub errors: u64,
    /// Findings of severity warning.
    pub warnings: u64,
    /// Findings of severity info.
    pub infos: u64,
    /// `broken` (an error finding), `suspect` (a warning), `not_mcp` (no JSON-RPC message or SSE
    /// event), `unverifiable` (a resumption or response the capture cannot judge), `intact`.
    pub verdict: &'static str,
}

/// The `sessions` rows, one per session of the model, in its order.
pub fn session_rows(a: &Analysis, ex: &[Exchange]) -> Vec<SessionRow> {
    let m = &a.model;
    // Grouped once (a scan of every finding, stream and resumption per session is quadratic on
    // captures of many sessions).
    let mut by_label: HashMap<&str, Vec<&crate::detect::Finding>> = HashMap::new();
    for f in &a.findings {
        by_label.entry(f.session_id.as_str()).or_default().push(f);
    }
    let mut streams_of = vec![0u64; m.sessions.len()];
    for st in &m.streams {
        if let Some(n) = streams_of.get_mut(st.session) {
            *n += 1;
        }
    }
    let mut resumptions_of = vec![0u64; m.sessions.len()];
    // Sessions with a resumption the capture could not judge.
    let mut unjudged = vec![false; m.sessions.len()];
    for r in &a.resumptions {
        let si = m.resumptions[r.index].session;
        if let Some(n) = resumptions_of.get_mut(si) {
            *n += 1;
        }
        // A redirect the client followed is no resumption of its own: the GET that follows is.
        let redirect = (300..400).contains(&ex[m.resumptions[r.index].exchange].status());
        if r.verdict == crate::detect::Verdict::Unverifiable && !redirect {
            if let Some(u) = unjudged.get_mut(si) {
                *u = true;
            }
        }
    }
    m.sessions
        .iter()
        .enumerate()
        .map(|(si, s)| {
            let label = s.label();
            let fs: &[&crate::detect::Finding] =
                by_label.get(label.as_str()).map_or(&[], Vec::as_slice);
            let count = |sev| fs.iter().filter(|f| f.severity == sev).count() as u64;
            let mut flows: Vec<usize> = s.exchanges.iter().map(|&x| ex[x].flow_index).collect();
            flows.sort_unstable();
            flows.dedup();
            let streams = streams_of[si];
            let resumptions = resumptions_of[si];
            let worst = fs.iter().map(|f| f.severity).max();
            // HTTP without a JSON-RPC message or an SSE event anywhere is no MCP session:
            // nothing to call intact.
            let mcp = s.exchanges.iter().any(|&x| {
                let e = &ex[x];
                !e.rpc.request.is_empty() || !e.rpc.response.is_empty() || !e.sse.events.is_empty()
            });
            // A request whose response the capture may not hold, or a resumption it could not
            // judge: nothing wrong was seen, but not everything could be.
            // So is an SSE response whose request the capture lost: a resumption, maybe, whose
            // cursor is unknown.
            let orphan = s
                .exchanges
                .iter()
                .any(|&x| ex[x].request.is_none() && !ex[x].sse.events.is_empty());
            // A request without a response that may lie outside the capture, or traffic to the
            // session's server that was not decrypted, says why.
            let unverifiable = unjudged[si]
                || orphan
                || fs.iter().any(|f| {
                    matches!(
                        f.kind,
                        crate::detect::Kind::ResponseUnverifiable
                            | crate::detect::Kind::PartlyUndecrypted
                    )
                });
            let verdict = match worst {
                Some(Severity::Error) => "broken",
                Some(Severity::Warning) => "suspect",
                _ if !mcp => "not_mcp",
                _ if unverifiable => "unverifiable",
                _ => "intact",
            };
            let ts_first = s.exchanges.iter().map(|&x| ex[x].ts()).min();
            let ts_last = s
                .exchanges
                .iter()
                .filter_map(|&x| ex[x].ts_end.or(ex[x].ts_request))
                .max();
            SessionRow {
                label,
                protocol_version: s.protocol_version.clone(),
                era: s.era.as_str(),
                ts_first,
                ts_last,
                exchanges: s.exchanges.len() as u64,
                flows: flows.len() as u64,
                streams,
                resumptions,
                errors: count(Severity::Error),
                warnings: count(Severity::Warning),
                infos: count(Severity::Info),
                verdict,
            }
        })
        .collect()
}

/// `sessions`: one row per session.
pub fn sessions(a: &Analysis, ex: &[Exchange]) -> Table {
    sessions_table(&session_rows(a, ex))
}

/// The `sessions` table of `rows` ([`session_rows`]).
pub fn sessions_table(rows: &[SessionRow]) -> Table {
    Table {
        name: "sessions",
        columns: vec![
            col!("session_id", Str, rows, |r| Some(r.label.as_str())),
            col!("protocol_version", Str, rows, |r| r
                .protocol_version
                .as_deref()),
            col!("era", Str, rows, |r| Some(r.era)),
            col!("ts_first", Ts, rows, |r| r.ts_first),
            col!("ts_last", Ts, rows, |r| r.ts_last),
            col!("exchanges", U64, rows, |r| Some(r.exchanges)),
            col!("flows", U64, rows, |r| Some(r.flows)),
            col!("streams", U64, rows, |r| Some(r.streams)),
            col!("resumptions", U64, rows, |r| Some(r.resumptions)),
            col!("errors", U64, rows, |r| Some(r.errors)),
            col!("warnings", U64, rows, |r| Some(r.warnings)),
            col!("infos", U64, rows, |r| Some(r.infos)),
            col!("verdict", Str, rows, |r| Some(r.verdict)),
        ],
    }
}

/// The resumption results of each logical stream, by stream index, in the order of
/// [`Analysis::resumptions`].
fn resumptions_by_stream(a: &Analysis) -> Vec<Vec<&crate::detect::ResumptionResult>> {
    let m = &a.model;
    let mut res_of: Vec<Vec<&crate::detect::ResumptionResult>> = vec![Vec::new(); m.streams.len()];
    for r in &a.resumptions {
        if let Some(v) = m.resumptions[r.index]
            .stream
            .and_then(|i| res_of.get_mut(i))
        {
            v.push(r);
        }
    }
    res_of
}

/// The verdict of a logical stream (the `streams` table's `verdict`) from its resumptions'
/// results `res`: the worst resumption's; a stream that lost events inside a connection, with
/// nothing worse at a resumption, is a `gap` too; `single_connection` without resumptions.
fn stream_verdict(
    a: &Analysis,
    st: &crate::mcp::LogicalStream,
    res: &[&crate::detect::ResumptionResult],
) -> &'static str {
    // (By `Verdict::badness`, one value per verdict.)
    let worst = res
        .iter()
        .map(|r| r.verdict)
        .filter(|v| !matches!(v, crate::detect::Verdict::Resumed))
        .max_by_key(|v| v.badness());
    match worst {
        None if st.connections.iter().any(|x| a.id_gapped.contains(x)) => {
            crate::detect::Verdict::Gap.as_str()
        }
        _ => worst
            .or(res.first().map(|r| r.verdict))
            .map_or("single_connection", |v| v.as_str()),
    }
}

/// The `verdict` column of the `streams` table: one value per logical stream, by stream index
/// (`S<n>` is index `n`).
pub fn stream_verdicts(a: &Analysis) -> Vec<&'static str> {
    let res_of = resumptions_by_stream(a);
    a.model
        .streams
        .iter()
        .zip(&res_of)
        .map(|(st, res)| stream_verdict(a, st, res))
        .collect()
}

/// `streams`: one row per logical stream.
pub fn streams(a: &Analysis, ex: &[Exchange]) -> Table {
    let m = &a.model;
    // Resumption results per stream, grouped once.
    let res_of = resumptions_by_stream(a);
    let rows: Vec<_> = m
        .streams
        .iter()
        .enumerate()
        .map(|(i, st)| {
            let o = &ex[st.origin];
            let events: u64 = st
                .connections
                .iter()
                .map(|&x| ex[x].sse.events.len() as u64)
                .sum();
            let messages: u64 = st
                .connections
                .iter()
                .map(|&x| ex[x].sse.events.message_count())
                .sum();
            let res = &res_of[i];
            let verdict = stream_verdict(a, st, res);
            let req_ids = join(
                o.rpc
                    .request
                    .iter()
                    .filter(|m| m.kind == Kind::Request)
                    .filter_map(|m| m.id.as_deref().map(str::to_string)),
            );
            (
                format!("S{i}"),
                m.sessions[st.session].label(),
                st.kind.as_str(),
                FlowId(o.flow_index).to_string(),
                o.trans_depth as u64,
                o.ts(),
                req_ids,
                m.stream_id_format_label(i, ex),
                st.connections.len() as u64,
                events,
                messages,
                res.len() as u64,
                verdict,
                {
                    let mut b: Vec<&str> = Vec::new();
                    for &x in &st.connections {
                        if let Some(n) = m.backend(x) {
                            if !b.contains(&n) {
                                b.push(n);
                            }
                        }
                    }
                    (!b.is_empty()).then(|| b.join(","))
                },
            )
        })
        .collect();
    Table {
        name: "streams",
        columns: vec![
            col!("stream_id", Str, rows, |r| Some(r.0.as_str())),
            col!("session_id", Str, rows, |r| Some(r.1.as_str())),
            col!("kind", Str, rows, |r| Some(r.2)),
            col!("flow_id", Str, rows, |r| Some(r.3.as_str())),
            col!("trans_depth", U64, rows, |r| Some(r.4)),
            col!("ts", Ts, rows, |r| Some(r.5)),
            col!("request_ids", Str, rows, |r| r.6.as_deref()),
            col!("id_format", Str, rows, |r| Some(r.7)),
            col!("connections", U64, rows, |r| Some(r.8)),
            col!("events", U64, rows, |r| Some(r.9)),
            col!("messages", U64, rows, |r| Some(r.10)),
            col!("resumptions", U64, rows, |r| Some(r.11)),
            col!("verdict", Str, rows, |r| Some(r.12)),
            col!("backend", Str, rows, |r| r.13.as_deref()),
        ],
    }
}

/// `resumptions`: one row per GET with `Last-Event-ID`.
pub fn resumptions(a: &Analysis, ex: &[Exchange]) -> Table {
    resumptions_rows(a, ex, 0..a.resumptions.len())
}

/// `resumptions` as tables of at most `rows` rows each (as [`exchanges_chunks`]): a client
/// looping on one cursor resumes hundreds of thousands of times.
pub fn resumptions_chunks<'a>(
    a: &'a Analysis,
    ex: &'a [Exchange],
    rows: usize,
) -> impl Iterator<Item = Table> + 'a {
    pieces(a.resumptions.len(), rows).map(move |r| resumptions_rows(a, ex, r))
}

/// The `resumptions` rows of the resumptions `range`.
fn resumptions_rows(a: &Analysis, ex: &[Exchange], range: std::ops::Range<usize>) -> Table {
    let m = &a.model;
    let rows: Vec<_> = a.resumptions[range]
        .iter()
        .map(|r| {
            let res = &m.resumptions[r.index];
            let e = &ex[res.exchange];
            (
                e.ts(),
                m.sessions[res.session].label(),
                FlowId(e.flow_index).to_string(),
                e.frame(),
                res.last_event_id.clone(),
                res.stream.map(|s| format!("S{s}")),
                e.status() as u64,
                r.first_event_id.clone(),
                r.events as u64,
                r.verdict.as_str(),
                r.reason.clone(),
                m.backend(res.exchange).map(str::to_string),
                res.cursor
                    .and_then(|(cx, _)| m.backend(cx))
                    .map(str::to_string),
            )
        })
        .collect();
    Table {
        name: "resumptions",
        columns: vec![
            col!("ts", Ts, rows, |r| Some(r.0)),
            col!("session_id", Str, rows, |r| Some(r.1.as_str())),
            col!("flow_id", Str, rows, |r| Some(r.2.as_str())),
            col!("frame", U64, rows, |r| Some(r.3)),
            col!("last_event_id", Str, rows, |r| Some(r.4.as_str())),
            col!("stream_id", Str, rows, |r| r.5.as_deref()),
            col!("status", U64, rows, |r| Some(r.6)),
            col!("first_event_id", Str, rows, |r| r.7.as_deref()),
            col!("events", U64, rows, |r| Some(r.8)),
            col!("verdict", Str, rows, |r| Some(r.9)),
            col!("reason", Str, rows, |r| Some(r.10.as_str())),
            col!("backend", Str, rows, |r| r.11.as_deref()),
            col!("cursor_backend", Str, rows, |r| r.12.as_deref()),
        ],
    }
}

/// `events`: one row per SSE event.
pub fn events(a: &Analysis, ex: &[Exchange]) -> Table {
    pieces_of_events(&a.model, ex, usize::MAX, usize::MAX)
        .next()
        .unwrap_or_else(|| events_table(&a.model, ex, &[]))
}

/// Text of the events' own strings (ids, types, parse errors) in one piece of the `events`
/// table, in bytes, before the piece ends early: a long event id repeated on every event (the
/// last-event-id buffer carries over) must not make one piece of 16384 rows gigabytes long.
const PIECE_TEXT_BYTES: usize = 64 << 20;

/// `events` as tables of at most `rows` rows each (fewer when their ids, types and parse errors
/// pass 64 MiB), in row order: the largest table is built and written piece by
/// piece, so its memory is bounded by the piece, not by the capture. Always at least one table
/// (empty when there are no events). The table needs only the session model (`m`), not the
/// detectors' results: it can be written while they run.
pub fn events_chunks<'a>(
    m: &'a crate::mcp::Model,
    ex: &'a [Exchange],
    rows: usize,
) -> impl Iterator<Item = Table> + 'a {
    pieces_of_events(m, ex, rows, PIECE_TEXT_BYTES)
}

/// Rows reserved ahead for a piece of the `events` table (the pieces the CLI asks for are this
/// size; a larger piece grows as it is filled).
const ROWS_HINT: usize = 1 << 14;

/// [`events_chunks`] with pieces cut at `rows` rows or `text_cap` bytes of the events' strings.
fn pieces_of_events<'a>(
    m: &'a crate::mcp::Model,
    ex: &'a [Exchange],
    rows: usize,
    text_cap: usize,
) -> impl Iterator<Item = Table> + 'a {
    let rows = rows.max(1);
    // The (exchange, event) pairs of each piece are gathered as the pieces are made, from where
    // the previous piece stopped.
    let mut at = (0usize, 0usize);
    let mut first = true;
    std::iter::from_fn(move || {
        let mut evs: Vec<(usize, crate::http::EventRec)> = Vec::with_capacity(rows.min(ROWS_HINT));
        let mut text = 0usize;
        while evs.len() < rows && text < text_cap && at.0 < ex.len() {
            match ex[at.0].sse.events.get(at.1) {
                Some(ev) => {
                    text += [ev.sse.id, ev.sse.event_type, ev.parse_error]
                        .iter()
                        .flatten()
                        .map(|t| t.len())
                        .sum::<usize>();
                    evs.push((at.0, ev));
                    at.1 += 1;
                }
                None => at = (at.0 + 1, 0),
            }
        }
        // The first piece is made even without events (the table's columns are written).
        let was_first = std::mem::take(&mut first);
        if evs.is_empty() && !was_first {
            return None;
        }
        Some(events_table(m, ex, &evs))
    })
}

/// The `events` rows of `evs` ((exchange index, event) pairs).
fn events_table(
    m: &crate::mcp::Model,
    ex: &[Exchange],
    evs: &[(usize, crate::http::EventRec)],
) -> Table {
    // Columns are made straight from the events; text goes into one buffer per column (no
    // allocation per cell: this is the largest table).
    let text = |f: &dyn Fn(&(usize, crate::http::EventRec), &mut String) -> bool| {
        let mut t = Text::with_capacity(evs.len());
        for e in evs {
            t.push_with(|buf| f(e, buf));
        }
        Values::Str(t)
    };
    let put = |buf: &mut String, v: Option<&str>| v.map(|v| buf.push_str(v)).is_some();
    // The columns from the events' messages, each event's messages decoded once: the messages'
    // kinds, methods and ids comma-separated, the first progress token and value.
    let mut kinds = Text::with_capacity(evs.len());
    let mut methods = Text::with_capacity(evs.len());
    let mut ids = Text::with_capacity(evs.len());
    let mut tokens = Text::with_capacity(evs.len());
    let mut progress: Vec<Option<f64>> = Vec::with_capacity(evs.len());
    // The columns of the event's exchange: written once per exchange, copied for each of its
    // events.
    let mut sessions = Text::with_capacity(evs.len());
    let mut streams = Text::with_capacity(evs.len());
    let mut flows = Text::with_capacity(evs.len());
    let mut of: Option<(usize, Option<&str>, Option<String>, String)> = None;
    for &(xi, _) in evs {
        if of.as_ref().is_none_or(|o| o.0 != xi) {
            of = Some((
                xi,
                m.sessions
                    .get(m.exchange_session[xi])
                    .map(|s| s.label_str()),
                m.exchange_stream[xi].map(|s| format!("S{s}")),
                FlowId(ex[xi].flow_index).to_string(),
            ));
        }
        if let Some((_, session, stream, flow)) = &of {
            sessions.push(*session);
            streams.push(stream.as_deref());
            flows.push(Some(flow));
        }
    }
    let mut msgs: Vec<MessageRef> = Vec::new();
    for (_, ev) in evs {
        msgs.clear();
        msgs.extend(ev.messages.refs());
        // The messages' values of `f`, comma-separated (no cell when there are none).
        fn joined<'a>(
            t: &mut Text,
            msgs: &[MessageRef<'a>],
            f: fn(&MessageRef<'a>) -> Option<&'a str>,
        ) {
            t.push_with(|buf| {
                let mut any = false;
                for v in msgs.iter().filter_map(f) {
                    if any {
                        buf.push(',');
                    }
                    buf.push_str(v);
                    any = true;
                }
                any
            })
        }
        joined(&mut kinds, &msgs, |m| Some(m.kind.as_str()));
        joined(&mut methods, &msgs, |m| m.method);
        joined(&mut ids, &msgs, |m| m.id);
        tokens.push(msgs.iter().find_map(|m| m.progress_token));
        progress.push(msgs.iter().find_map(|m| m.progress));
    }
    Table {
        name: "events",
        columns: vec![
            col!("ts", Ts, evs, |(_, ev)| Some(ev.sse.ts)),
            ("session_id", Values::Str(sessions)),
            ("stream_id", Values::Str(streams)),
            ("flow_id", Values::Str(flows)),
            col!("trans_depth", U64, evs, |(xi, _)| Some(
                ex[*xi].trans_depth as u64
            )),
            col!("frame_first", U64, evs, |(_, ev)| Some(ev.sse.frame_first)),
            col!("frame_last", U64, evs, |(_, ev)| Some(ev.sse.frame_last)),
            col!("offset", U64, evs, |(_, ev)| Some(ev.sse.offset)),
            col!("has_own_id", Bool, evs, |(_, ev)| Some(ev.sse.has_own_id)),
            ("event_id", text(&|(_, ev), b| put(b, ev.sse.id))),
            ("event_type", text(&|(_, ev), b| put(b, ev.sse.event_type))),
            col!("data_len", U64, evs, |(_, ev)| Some(ev.data_len as u64)),
            col!("retry", U64, evs, |(_, ev)| ev.sse.retry),
            col!("priming", Bool, evs, |(_, ev)| Some(ev.priming)),
            col!("truncated", Bool, evs, |(_, ev)| Some(ev.sse.truncated)),
            ("jsonrpc_kinds", Values::Str(kinds)),
            ("jsonrpc_methods", Values::Str(methods)),
            ("jsonrpc_ids", Values::Str(ids)),
            ("progress_token", Values::Str(tokens)),
            ("progress", Values::F64(progress)),
            ("parse_error", text(&|(_, ev), b| put(b, ev.parse_error))),
        ],
    }
}

/// `exchanges`: one row per HTTP request/response (http.log).
pub fn exchanges(a: &Analysis, ex: &[Exchange]) -> Table {
    exchanges_rows(&a.model, ex, 0..ex.len())
}

/// `exchanges` as tables of at most `rows` rows each, in row order (as [`events_chunks`]).
/// Always at least one table. Like the events, they need only the session model `m`, not the
/// detectors' results.
pub fn exchanges_chunks<'a>(
    m: &'a crate::mcp::Model,
    ex: &'a [Exchange],
    rows: usize,
) -> impl Iterator<Item = Table> + 'a {
    pieces(ex.len(), rows).map(move |r| exchanges_rows(m, ex, r))
}

/// Row ranges of at most `rows` rows covering `0..len`; one empty range when `len` is 0, so a
/// table without rows is still written with its columns.
fn pieces(len: usize, rows: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let rows = rows.max(1);
    (0..len.max(1))
        .step_by(rows)
        .map(move |i| i..len.min(i.saturating_add(rows)))
}

/// The `jsonrpc_methods` and `jsonrpc_ids` of the `exchanges` table for `e`: the distinct
/// methods of its messages (request, JSON response, then SSE events) in order of first
/// appearance, and the ids of its requests and responses, each comma-separated (`None` when
/// there are none).
pub(super) fn methods_and_ids(e: &Exchange) -> (Option<String>, Option<String>) {
    // Every message of the exchange, borrowed.
    let msgs = e
        .rpc
        .request
        .iter()
        .chain(e.rpc.response.iter())
        .map(MessageRef::of)
        .chain(e.sse.events.iter().flat_map(|v| v.messages.refs()));
    // Distinct methods (a long stream repeats its notifications thousands of times; the events
    // table has them one by one) and ids, from one pass over the messages.
    let mut seen = crate::hash::FastSet::default();
    let (mut methods, mut ids) = (Vec::new(), Vec::new());
    // The previous message's method: a run of one method is not hashed again.
    let mut last = None;
    for m in msgs {
        if m.method != last {
            last = m.method;
            if let Some(method) = m.method.filter(|x| seen.insert(*x)) {
                methods.push(method);
            }
        }
        if m.kind != Kind::Notification {
            ids.extend(m.id);
        }
    }
    (join(methods), join(ids))
}

/// The `exchanges` rows of the exchanges `range` (indices into `ex`).
fn exchanges_rows(m: &crate::mcp::Model, ex: &[Exchange], range: std::ops::Range<usize>) -> Table {
    let r: Vec<(usize, &Exchange)> = ex
        .get(range.clone())
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(k, e)| (range.start + k, e))
        .collect();
    let (methods, ids): (Vec<Option<String>>, Vec<Option<String>>) =
        r.iter().map(|(_, e)| methods_and_ids(e)).unzip();
    Table {
        name: "exchanges",
        columns: vec![
            col!("ts", Ts, r, |(_, e)| Some(e.ts())),
            col!("flow_id", Str, r, |(_, e)| Some(format!(
                "F{}",
                e.flow_index
            ))),
            col!("trans_depth", U64, r, |(_, e)| Some(e.trans_depth as u64)),
            col!("http_version", Str, r, |(_, e)| e.http_version()),
            col!("h2_stream_id", U64, r, |(_, e)| e.h2_stream.map(u64::from)),
            col!("session_id", Str, r, |(i, _)| Some(
                m.sessions[m.exchange_session[*i]].label_str()
            )),
            col!("hop_of", Str, r, |(i, _)| m.hops.primary[*i].map(
                |p| format!("{}#{}", FlowId(ex[p].flow_index), ex[p].trans_depth)
            )),
            col!("backend", Str, r, |(i, _)| m.backend(*i)),
            col!("ts_request", Ts, r, |(_, e)| e.ts_request),
            col!("ts_response", Ts, r, |(_, e)| e.ts_response),
            col!("ts_end", Ts, r, |(_, e)| e.ts_end),
            col!("method", Str, r, |(_, e)| e
                .request
                .as_ref()
                .map(|h| h.method.as_str())),
            col!("target", Str, r, |(_, e)| e
                .request
                .as_ref()
                .map(|h| h.target.as_str())),
            col!("host", Str, r, |(_, e)| e.req_header("host")),
            col!("status", U64, r, |(_, e)| e
                .response
                .as_ref()
                .map(|h| h.status as u64)),
            col!("info_code", Str, r, |(_, e)| join(
                e.interim.iter().map(|c| c.to_string())
            )),
            col!("content_type", Str, r, |(_, e)| e
                .resp_header("content-type")),
            col!("content_encoding", Str, r, |(_, e)| e
                .resp_header("content-encoding")),
            col!("transfer_encoding", Str, r, |(_, e)| e
                .resp_header("transfer-encoding")),
            col!("upgrade", Str, r, |(_, e)| e
                .resp_header("upgrade")
                .or_else(|| e.req_header("upgrade"))),
            col!("request_body_len", U64, r, |(_, e)| Some(e.req_body_len)),
            col!("response_body_len", U64, r, |(_, e)| Some(e.resp_body_len)),
            col!("mcp_session_id", Str, r, |(_, e)| {
                crate::mcp::session_id_of(e)
            }),
            col!("last_event_id", Str, r, |(_, e)| e
                .req_header("last-event-id")),
            col!("mcp_protocol_version", Str, r, |(_, e)| e
                .req_header("mcp-protocol-version")),
            (
                "jsonrpc_methods",
                Values::Str(methods.into_iter().collect()),
            ),
            ("jsonrpc_ids", Values::Str(ids.into_iter().collect())),
            col!("sse_events", U64, r, |(_, e)| Some(
                e.sse.events.len() as u64
            )),
            col!("sse_comments", U64, r, |(_, e)| Some(e.sse.comments)),
            col!("request_gap", Bool, r, |(_, e)| Some(e.req_gap)),
            col!("response_gap", Bool, r, |(_, e)| Some(e.resp_gap)),
            col!("response_complete", Bool, r, |(_, e)| Some(e.resp_complete)),
            col!("open_at_capture_end", Bool, r, |(_, e)| Some(
                e.open_at_capture_end
            )),
            col!("h2_end", Str, r, |(_, e)| e.h2_end.map(|x| x.describe())),
            col!("frame_first", U64, r, |(_, e)| Some(e.frame())),
            col!("frame_last", U64, r, |(_, e)| e
                .frame_last
                .or(e.frame_request)),
        ],
    }
}

/// The flows of one vantage point, for [`flows`].
#[derive(Debug, Clone, Copy)]
pub struct FlowsPart<'a> {
    /// Name of the vantage point.
    pub vantage: &'a str,
    /// Its flows.
    pub flows: &'a FlowTable,
    /// Client direction of each flow index, where HTTP told it.
    pub client_dir: &'a HashMap<usize, usize>,
    /// What the TLS stage learnt of its TLS connections, by flow index.
    pub tls: &'a std::collections::BTreeMap<usize, crate::tls::FlowTls>,
    /// Its clock offset to the first vantage point, µs (subtracted from its times).
    pub clock_offset_us: i64,
}

/// `flows`: one row per TCP connection (conn.log), for every vantage point.
pub fn flows(parts: &[FlowsPart<'_>]) -> Table {
    flows_chunks(parts, usize::MAX)
        .next()
        .unwrap_or_else(|| flows_table(Vec::new()))
}

/// `flows` as tables of at most `rows` rows each, in row order (as [`events_chunks`]): a
/// flood of connections is written a piece at a time. Always at least one table.
pub fn flows_chunks<'a>(
    parts: &'a [FlowsPart<'a>],
    rows: usize,
) -> impl Iterator<Item = Table> + 'a {
    let rows = rows.max(1);
    let mut all = parts.iter().flat_map(|p| {
        p.flows.rows().map(move |f| {
            let client = p
                .client_dir
                .get(&f.index)
                .copied()
                .unwrap_or_else(|| f.client_guess());
            let tls = p.tls.get(&f.index);
            (f, client, p.vantage, p.clock_offset_us, tls)
        })
    });
    let mut first = true;
    std::iter::from_fn(move || {
        let piece: Vec<_> = all.by_ref().take(rows).collect();
        if piece.is_empty() && !std::mem::take(&mut first) {
            return None;
        }
        first = false;
        Some(flows_table(piece))
    })
}

/// One `flows` row: (row, client direction, vantage point, clock offset, TLS).
type FlowsRow<'a> = (
    FlowRow,
    usize,
    &'a str,
    i64,
    Option<&'a crate::tls::FlowTls>,
);

/// The `flows` rows of `rows`. The TLS columns are empty for a connection that is not TLS.
fn flows_table(rows: Vec<FlowsRow<'_>>) -> Table {
    Table {
        name: "flows",
        columns: vec![
            col!("flow_id", Str, rows, |(f, ..)| Some(f.flow_id())),
            col!("vantage", Str, rows, |(_, _, v, ..)| Some(v)),
            col!("ts_first", Ts, rows, |(f, _, _, o, _)| Some(f.ts_first - o)),
            col!("ts_last", Ts, rows, |(f, _, _, o, _)| Some(f.ts_last - o)),
            col!("orig_h", Str, rows, |(f, c, ..)| Some(
                f.ends[*c].0.to_string()
            )),
            col!("orig_p", U64, rows, |(f, c, ..)| Some(f.ends[*c].1 as u64)),
            col!("resp_h", Str, rows, |(f, c, ..)| Some(
                f.ends[1 - *c].0.to_string()
            )),
            col!("resp_p", U64, rows, |(f, c, ..)| Some(
                f.ends[1 - *c].1 as u64
            )),
            col!("orig_pkts", U64, rows, |(f, c, ..)| Some(f.packets[*c])),
            col!("resp_pkts", U64, rows, |(f, c, ..)| Some(f.packets[1 - *c])),
            col!("orig_bytes", U64, rows, |(f, c, ..)| Some(f.wire_bytes[*c])),
            col!("resp_bytes", U64, rows, |(f, c, ..)| Some(
                f.wire_bytes[1 - *c]
            )),
            col!("orig_missed_bytes", U64, rows, |(f, c, ..)| Some(
                f.missed[*c]
            )),
            col!("resp_missed_bytes", U64, rows, |(f, c, ..)| Some(
                f.missed[1 - *c]
            )),
            col!("retransmitted", U64, rows, |(f, ..)| Some(
                f.retransmitted[0] + f.retransmitted[1]
            )),
            col!("out_of_order", U64, rows, |(f, ..)| Some(
                f.out_of_order[0] + f.out_of_order[1]
            )),
            col!("syn", Bool, rows, |(f, ..)| Some(f.syn[0] || f.syn[1])),
            col!("fin", Bool, rows, |(f, ..)| Some(f.fin[0] || f.fin[1])),
            col!("rst", Bool, rows, |(f, ..)| Some(f.rst[0] || f.rst[1])),
            col!("history", Str, rows, |(f, c, ..)| Some(
                f.history_string(*c)
            )),
            col!("tls_version", Str, rows, |r| r
                .4
                .and_then(|t| t.version_name())),
            col!("tls_cipher", Str, rows, |r| r
                .4
                .and_then(|t| t.cipher_name())),
            col!("sni", Str, rows, |r| r.4.and_then(|t| t.sni.clone())),
            col!("alpn", Str, rows, |r| r.4.and_then(|t| t.alpn.clone())),
            col!("decrypted", Str, rows, |r| r
                .4
                .map(|t| t.decrypted().as_str())),
        ],
    }
}

/// One capture file's row for [`files`].
#[derive(Debug, Clone)]
pub struct FileRow {
    /// The path as given (`-` for standard input).
    pub file: String,
    /// The vantage point it was read into.
    pub vantage: String,
    /// Frame numbers of its first and last frame in the numbering of its vantage point (the
    /// numbering every `frame` column uses: frames of a vantage point's files run on in the
    /// order they were read); `None` without frames.
    pub frame_first: Option<u64>,
    /// See `frame_first`.
    pub frame_last: Option<u64>,
    /// Frames read.
    pub frames: u64,
    /// Bytes read from the file.
    pub bytes: u64,
    /// Time of its first and last frame, µs since the Unix epoch (its own clock).
    pub ts_first: Option<i64>,
    /// See `ts_first`.
    pub ts_last: Option<i64>,
    /// Why reading stopped before the end of the file (a cut or damaged record), if it did.
    pub stopped: Option<String>,
}

/// `files`: one row per capture file read, in the order read (as capinfos): where its frames
/// are in the vantage point's numbering. Frame `n` of a table is frame `n - frame_first + 1`
/// of the file whose range holds it, which is the number Wireshark shows for that file.
pub fn files(rows: &[FileRow]) -> Table {
    Table {
        name: "files",
        columns: vec![
            col!("file", Str, rows, |r| Some(r.file.as_str())),
            col!("vantage", Str, rows, |r| Some(r.vantage.as_str())),
            col!("frame_first", U64, rows, |r| r.frame_first),
            col!("frame_last", U64, rows, |r| r.frame_last),
            col!("frames", U64, rows, |r| Some(r.frames)),
            col!("bytes", U64, rows, |r| Some(r.bytes)),
            col!("ts_first", Ts, rows, |r| r.ts_first),
            col!("ts_last", Ts, rows, |r| r.ts_last),
            col!("stopped", Str, rows, |r| r.stopped.as_deref()),
        ],
    }
}

/// One vantage point's row for [`vantages`].
#[derive(Debug, Clone)]
pub struct VantageRow {
    /// Name (`--vantage NAME=…`, else `v<n>` in order of first frames).
    pub name: String,
    /// Its files, in the order read.
    pub files: Vec<String>,
    /// Frames read.
    pub frames: u64,
    /// Flows.
    pub flows: u64,
    /// Time of its first and last frame on its own clock, µs since the Unix epoch.
    pub ts_first: Option<i64>,
    /// See `ts_first`.
    pub ts_last: Option<i64>,
    /// Its clock offset to the first vantage point.
    pub offset: crate::vantage::ClockOffset,
}

/// `vantages`: one row per vantage point (a capture file, or files rotated from one place).
pub fn vantages(rows: &[VantageRow]) -> Table {
    Table {
        name: "vantages",
        columns: vec![
            col!("vantage", Str, rows, |r| Some(r.name.as_str())),
            col!("files", Str, rows, |r| Some(r.files.join(","))),
            col!("frames", U64, rows, |r| Some(r.frames)),
            col!("flows", U64, rows, |r| Some(r.flows)),
            col!("ts_first", Ts, rows, |r| r.ts_first),
            col!("ts_last", Ts, rows, |r| r.ts_last),
            col!("clock_offset_us", I64, rows, |r| r.offset.offset_us),
            col!("offset_pairs", U64, rows, |r| Some(r.offset.pairs as u64)),
            col!("offset_basis", Str, rows, |r| Some(
                match (r.offset.offset_us, r.offset.pairs, r.offset.same_connection) {
                    (None, ..) => "none",
                    (Some(_), 0, _) => "reference",
                    (Some(_), _, true) => "same_connection",
                    (Some(_), _, false) => "adjacent_hop",
                }
                .to_string()
            )),
        ],
    }
}

/// `anomalies`: one row per counted anomaly (weird.log). Past the rows a run keeps
/// ([`crate::anomaly::MAX_KEPT`] per stage), one last row, code `anomaly.not_listed` (no frame,
/// no flow), says how many more were counted, by code.
pub fn anomalies(sets: &[&Anomalies]) -> Table {
    // In frame order (then flow and code), whichever thread raised them.
    let mut rows: Vec<_> = sets.iter().flat_map(|s| s.rows.iter()).collect();
    rows.sort_by(|a, b| (a.frame, &a.flow_id, a.code).cmp(&(b.frame, &b.flow_id, b.code)));
    let mut unlisted: std::collections::BTreeMap<Code, u64> = std::collections::BTreeMap::new();
    for (&code, n) in sets.iter().flat_map(|s| s.counts.iter()) {
        *unlisted.entry(code).or_insert(0) += n;
    }
    for a in &rows {
        if let Some(n) = unlisted.get_mut(&a.code) {
            *n = n.saturating_sub(1);
        }
    }
    unlisted.retain(|_, n| *n > 0);
    let summary = (!unlisted.is_empty()).then(|| {
        let total: u64 = unlisted.values().sum();
        let by_code: Vec<String> = unlisted.iter().map(|(c, n)| format!("{c} {n}")).collect();
        Anomaly::new(
            Code::AnomalyNotListed,
            None,
            None,
            format!(
                "{total} more anomalies counted but not listed (rows kept per stage: {}): {}",
                crate::anomaly::MAX_KEPT,
                by_code.join(", ")
            ),
        )
    });
    rows.extend(summary.as_ref());
    Table {
        name: "anomalies",
        columns: vec![
            col!("code", Str, rows, |a| Some(a.code.as_str())),
            col!("frame", U64, rows, |a| a.frame),
            col!("flow_id", Str, rows, |a| a.flow_id.as_deref()),
            col!("detail", Str, rows, |a| Some(a.detail.as_str())),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anomaly::MAX_KEPT;

    /// Past the rows kept, the table ends with one row that counts the others, by code.
    #[test]
    fn anomalies_past_the_rows_kept_are_counted_in_a_last_row() {
        let mut a = Anomalies::default();
        for i in 0..MAX_KEPT + 3 {
            a.add_with(Code::SseGap, Some(i as u64), None, String::new);
        }
        let mut b = Anomalies::default();
        b.add(Anomaly::new(
            Code::TcpFlowEvicted,
            Some(1),
            None,
            String::new(),
        ));
        let t = anomalies(&[&a, &b]);
        assert_eq!(t.height(), MAX_KEPT + 2);
        let Values::Str(code) = &t.columns[0].1 else {
            panic!("code is text")
        };
        let Values::Str(detail) = &t.columns[3].1 else {
            panic!("detail is text")
        };
        assert_eq!(code.get(MAX_KEPT + 1), Some("anomaly.not_listed"));
        assert_eq!(
            detail.get(MAX_KEPT + 1),
            Some(
                "3 more anomalies counted but not listed (rows kept per stage: 100000): sse.gap 3"
            )
        );
        // Everything listed: no such row.
        assert_eq!(anomalies(&[&b]).height(), 1);
    }
}
