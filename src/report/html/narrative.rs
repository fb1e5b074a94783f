//! The narrative of one session: sentences in capture-time order, built from the model, that an
//! engineer can paste into a postmortem — which stream opened, how each connection ended and
//! after which event, where the client resumed, what the server answered, what was found.

use super::timeline::{clock, duration};
use super::view::{Conn, SessionView};
use crate::detect::Analysis;
use crate::http::Exchange;
use crate::mcp::StreamKind;
use crate::tcp::FlowId;

/// Sentences per session at most; the rest are counted in a last one.
pub const MAX_SENTENCES: usize = 200;
/// Responses told per connection at most; the rest are counted in one sentence.
const RESPONSES_TOLD: usize = 20;

/// One sentence: its time (µs since the Unix epoch), an order among sentences of one time, its
/// text, and whether it tells of something wrong (shown marked).
#[derive(Debug, Clone, PartialEq)]
pub struct Sentence {
    /// Time of what it tells.
    pub ts: i64,
    /// Order among sentences of the same time (openings, then answers, ends, findings).
    pub rank: u8,
    /// The sentence, without its time.
    pub text: String,
    /// It tells of a finding of severity error or warning, or of a connection cut.
    pub bad: bool,
}

/// The sentences of `view`'s session in time order, each prefixed by its clock time and the time
/// since the one before: `22:24:30.061 (+2.0 ms) — …`.
pub fn sentences(a: &Analysis, ex: &[Exchange], view: &SessionView<'_>) -> Vec<(String, bool)> {
    let mut out: Vec<Sentence> = Vec::new();
    for c in &view.conns {
        opening(a, ex, c, &mut out);
        responses(ex, c, &mut out);
        ending(ex, c, &mut out);
    }
    let mut others_left = 0usize;
    for o in &view.others {
        let e = &ex[o.x];
        let important = super::view::refused(e)
            || e.status() >= 400
            || e.method() == "DELETE"
            || e.rpc
                .request
                .iter()
                .any(|m| m.method.as_deref() == Some("initialize"));
        if important && out.len() > 4 * MAX_SENTENCES {
            others_left += 1;
        } else if important {
            out.push(Sentence {
                ts: e.ts(),
                rank: 0,
                text: format!(
                    "{} (frame {}, flow {}).",
                    o.label,
                    e.frame(),
                    FlowId(e.flow_index)
                ),
                bad: super::view::refused(e),
            });
        }
    }
    if others_left > 0 {
        out.push(Sentence {
            ts: i64::MAX,
            rank: 0,
            text: format!("{others_left} more refused, unanswered or closing requests are not told here (see the exchanges table)."),
            bad: false,
        });
    }
    if view.conns_left_out > 0 {
        out.push(Sentence {
            ts: i64::MAX,
            rank: 0,
            text: format!(
                "{} more connections of this session are not drawn or told here (see the exchanges table).",
                view.conns_left_out
            ),
            bad: false,
        });
    }
    for (n, f) in &view.findings {
        out.push(Sentence {
            ts: f.ts,
            rank: 3,
            text: format!(
                "finding [{n}] {} ({}): {}",
                f.kind.as_str(),
                f.severity.as_str(),
                f.detail
            ),
            bad: f.severity != crate::detect::Severity::Info,
        });
    }
    out.sort_by_key(|x| (x.ts, x.rank));
    let total = out.len();
    let mut lines = Vec::with_capacity(total.min(MAX_SENTENCES + 1));
    let mut prev: Option<i64> = None;
    for s in out.into_iter().take(MAX_SENTENCES) {
        let when = if s.ts == i64::MAX {
            "…".to_string()
        } else {
            let since = match prev {
                Some(p) if s.ts > p => format!(" (+{})", duration(s.ts - p)),
                _ => String::new(),
            };
            prev = Some(s.ts);
            format!("{}{since}", clock(s.ts))
        };
        lines.push((format!("{when} — {}", s.text), s.bad));
    }
    if total > MAX_SENTENCES {
        lines.push((
            format!(
                "… {} more sentences of this session are left out; its findings are all listed below.",
                total - MAX_SENTENCES
            ),
            false,
        ));
    }
    lines
}

/// What went wrong in `view`'s session, in one or two sentences for the top of its section:
/// each resumption that did not continue its stream (how the stream's connection had ended,
/// where the client resumed, what the server did), else the kinds of its findings.
pub fn headline(a: &Analysis, ex: &[Exchange], view: &SessionView<'_>) -> String {
    let m = &a.model;
    let mut told = Vec::new();
    for &k in &view.resumptions {
        let r = &a.resumptions[k];
        if r.verdict == crate::detect::Verdict::Resumed || told.len() == 2 {
            continue;
        }
        let res = &m.resumptions[r.index];
        let e = &ex[res.exchange];
        let st = res
            .stream
            .map_or("A stream".to_string(), |s| format!("Stream S{s}"));
        let cut = res
            .cursor
            .and_then(|(cx, _)| view.conns.iter().find(|c| c.x == cx))
            .filter(|c| c.how.is_cut())
            .map(|c| format!(" {} (frame {});", c.how.phrase(), c.end_frame))
            .unwrap_or_default();
        let by = m
            .backend(res.exchange)
            .map(|b| format!("backend {b}"))
            .unwrap_or_else(|| "the server".to_string());
        told.push(format!(
            "{st}{cut} the client resumed it with Last-Event-ID {} (frame {}, flow {}) and {by} answered {}: verdict {} ({}).",
            res.last_event_id,
            e.frame(),
            FlowId(e.flow_index),
            e.status(),
            r.verdict.as_str(),
            r.reason
        ));
    }
    let mut kinds: Vec<&str> = view
        .findings
        .iter()
        .filter(|(_, f)| f.severity != crate::detect::Severity::Info)
        .map(|(_, f)| f.kind.as_str())
        .collect();
    kinds.dedup();
    // Without a resumption to tell, the worst finding's own sentence says what went wrong.
    let worst = view
        .findings
        .iter()
        .max_by_key(|(n, f)| (f.severity, std::cmp::Reverse(*n)))
        .filter(|(_, f)| told.is_empty() && f.severity != crate::detect::Severity::Info);
    if let Some((n, f)) = worst {
        told.push(format!("[{n}] {}", f.detail));
    }
    if !kinds.is_empty() {
        told.push(format!("Findings: {}.", kinds.join(", ")));
    }
    told.join(" ")
}

/// The ids of the events of exchange `x` with an id of their own: `ids 1..9`, `id 4`, or none.
fn id_range(ex: &[Exchange], x: usize) -> Option<String> {
    let mut ids = ex[x]
        .sse
        .events
        .iter()
        .filter(|ev| ev.sse.has_own_id && !ev.priming)
        .filter_map(|ev| ev.sse.id.map(str::to_string));
    let first = ids.next()?;
    Some(match ids.next_back() {
        Some(last) if last != first => format!("ids {first}..{last}"),
        _ => format!("id {first}"),
    })
}

/// The sentence of connection `c`'s start: a stream opened, or a resumption and its answer.
fn opening(a: &Analysis, ex: &[Exchange], c: &Conn, out: &mut Vec<Sentence>) {
    let m = &a.model;
    let e = &ex[c.x];
    let st = c
        .stream
        .map_or("an unknown stream".to_string(), |s| format!("stream S{s}"));
    let port = e
        .client_port
        .map(|p| format!(", client port {p}"))
        .unwrap_or_default();
    let at = format!("frame {}, flow {}{port}", e.frame(), FlowId(e.flow_index));
    let served = m
        .backend(c.x)
        .map(|b| format!("backend {b}"))
        .unwrap_or_else(|| "the server".to_string());
    let events = e.sse.events.len();
    let ids = id_range(ex, c.x)
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let text = match c.resumption {
        Some(k) => {
            let r = &a.resumptions[k];
            let res = &m.resumptions[r.index];
            let cursor_from = res
                .cursor
                .and_then(|(cx, _)| m.backend(cx))
                .filter(|b| Some(*b) != m.backend(c.x))
                .map(|b| {
                    format!(
                        ", though event {} had come from backend {b}",
                        res.last_event_id
                    )
                })
                .unwrap_or_default();
            format!(
                "the client resumed {st} with Last-Event-ID {} ({at}). {} answered {} with {events} event{}{ids}{cursor_from}. Verdict: {} ({}).",
                res.last_event_id,
                capitalized(&served),
                e.status(),
                if events == 1 { "" } else { "s" },
                r.verdict.as_str(),
                r.reason
            )
        }
        None => {
            let what = match c.stream.map(|s| m.streams[s].kind) {
                Some(StreamKind::Post) if c.stream.is_some_and(|s| m.streams[s].origin == c.x) => {
                    let req =
                        super::view::request_words(e).unwrap_or_else(|| "a request".to_string());
                    format!("POST {req} opened {st}")
                }
                Some(StreamKind::Get) if c.stream.is_some_and(|s| m.streams[s].origin == c.x) => {
                    format!("the client opened the standalone GET {st}")
                }
                _ => format!(
                    "{} {} joined {st}",
                    e.method(),
                    e.req_header("last-event-id").unwrap_or("")
                ),
            };
            format!(
                "{what} ({at}), served by {served}: {events} event{}{ids}.",
                if events == 1 { "" } else { "s" }
            )
        }
    };
    out.push(Sentence {
        ts: c.start,
        rank: 1,
        text,
        bad: false,
    });
}

/// `s` with its first letter in upper case.
fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The sentences of the responses connection `c` delivered: which request each answered, in
/// which frame (a call's outcome, or a response delivered twice, is told where it happened).
fn responses(ex: &[Exchange], c: &Conn, out: &mut Vec<Sentence>) {
    use crate::jsonrpc::Kind;
    let e = &ex[c.x];
    let st = c.stream.map_or(String::new(), |s| format!(" S{s}'s"));
    let (mut told, mut more, mut last_ts) = (0usize, 0usize, 0i64);
    for ev in e.sse.events.iter() {
        for m in ev.messages.refs() {
            let what = match m.kind {
                Kind::Response => "the response",
                Kind::Error => "an error response",
                _ => continue,
            };
            if told == RESPONSES_TOLD {
                more += 1;
                last_ts = ev.sse.ts;
                continue;
            }
            told += 1;
            let id = m.id.unwrap_or("?");
            out.push(Sentence {
                ts: ev.sse.ts,
                rank: 2,
                text: format!(
                    "{what} to request {id} arrived on{st} connection {} (frame {}, event id {}).",
                    FlowId(e.flow_index),
                    ev.sse.frame_first,
                    ev.sse.id.filter(|_| ev.sse.has_own_id).unwrap_or("none")
                ),
                bad: false,
            });
        }
    }
    if more > 0 {
        out.push(Sentence {
            ts: last_ts,
            rank: 2,
            text: format!(
                "{more} more responses arrived on{st} connection {} (see the calls table).",
                FlowId(e.flow_index)
            ),
            bad: false,
        });
    }
}

/// The sentence of connection `c`'s end, when it ended other than as its framing said.
fn ending(ex: &[Exchange], c: &Conn, out: &mut Vec<Sentence>) {
    if !c.how.is_cut() {
        return;
    }
    let e = &ex[c.x];
    let last = e
        .sse
        .events
        .iter()
        .filter(|ev| ev.sse.has_own_id)
        .filter_map(|ev| ev.sse.id.map(str::to_string))
        .next_back();
    let after = match last {
        Some(id) => format!("after event {id}"),
        None if e.sse.events.is_empty() => "before any event".to_string(),
        None => format!("after {} events without ids", e.sse.events.len()),
    };
    let st = c.stream.map_or("the".to_string(), |s| format!("S{s}'s"));
    out.push(Sentence {
        ts: c.end,
        rank: 2,
        text: format!(
            "{st} connection on flow {}, {after}, {} (frame {}).",
            FlowId(e.flow_index),
            c.how.phrase(),
            c.end_frame
        ),
        bad: true,
    });
}
