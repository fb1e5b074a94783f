//! Dense event ids that skip inside one connection: events the server numbered and never sent
//! (`docs/wire.md`, "Event-id formats").

use crate::hash::{FastMap as HashMap, FastSet as HashSet};

use crate::http::{EventRec, Exchange};
use crate::mcp::ids::{self, IdFormat};
use crate::mcp::McpExchange;
use crate::mcp::Model;

/// The first skip of dense ids inside one connection ([`inner_gaps`]).
#[derive(Debug, Clone)]
pub(crate) struct InnerGap<'a> {
    /// The connection (exchange index).
    pub exchange: usize,
    /// Its logical stream and session.
    pub stream: usize,
    pub session: usize,
    /// The highest id before the skip: the resumption's cursor, or an event's.
    pub from: &'a str,
    /// Whether `from` is the resumption's cursor.
    pub from_cursor: bool,
    /// The event that skipped.
    pub at: EventRec<'a>,
    /// How many ordinals in between never came on the connection, and the first of them.
    pub missing: u128,
    pub first_missing: u128,
    /// How many more skips the connection has.
    pub more: usize,
}

/// `id_gap` inside one connection: event ids of a format with a dense per-stream ordinal (Go
/// `<stream>_<n>`, rmcp `<n>/<request>`, C# `…:<n>`) whose ordinal skips forward past the
/// highest one the connection delivered for that stream part, when the ordinals skipped never
/// come later on the connection (a reordered event is not lost). Such a gap is real loss: the
/// server numbered events it never sent (`docs/wire.md`, "Event-id formats"). Guarded, because
/// other stores write ids of the same shapes (a `tenant:jobs:<ms>` key): the stream part must
/// first have stepped by exactly one on the connection. Not judged: connections with bytes missing
/// from the capture (an event lost there is the capture's, not the server's: `sse.gap`); events
/// before the connection's first message event of the stream part (priming events, rmcp's `0`
/// among them, only raise the highest ordinal); and, on a resumed connection, the step from the
/// cursor to its first message event, which the resumption judges. Plain integers may come from
/// a counter shared across streams and sessions, and the other formats show no density. One
/// skip per connection, its first, in order of streams and their connections.
pub(crate) fn inner_gaps<'a>(model: &'a Model, exchanges: &'a [Exchange]) -> Vec<InnerGap<'a>> {
    let mut gaps = Vec::new();
    for (sti, st) in model.streams.iter().enumerate() {
        for &xi in &st.connections {
            let e = &exchanges[xi];
            if e.resp_gap || e.req_gap || !dense_first(e) {
                continue;
            }
            let (skips, parts) = skips(e);
            // A skipped ordinal that came later on the connection was reordered, not lost.
            let real: Vec<(Skip, (u128, u128))> = skips
                .iter()
                .map(|g| (*g, never_came(g, &parts)))
                .filter(|&(_, (n, _))| n > 0)
                .collect();
            let Some(&(g, (missing, first_missing))) = real.first() else {
                continue;
            };
            let Some(at) = e.sse.events.get(g.at) else {
                continue;
            };
            gaps.push(InnerGap {
                exchange: xi,
                stream: sti,
                session: st.session,
                from: g.max_id,
                from_cursor: g.from_cursor,
                at,
                missing,
                first_missing,
                more: real.len() - 1,
            });
        }
    }
    gaps
}

/// One stream part (format and prefix, [`ids::parse`]) on a connection.
struct Part<'a> {
    /// Highest ordinal delivered, and its id (the cursor's, on a resumed connection, until an
    /// event passes it).
    max: u128,
    max_id: &'a str,
    max_is_cursor: bool,
    /// The previous ordinal, for steps of one (replays below `max` step too).
    prev: u128,
    steps: u32,
    /// A message event of the part came (what comes before it is priming, or the
    /// resumption's to judge).
    started: bool,
    /// On a resumed connection, the cursor's ordinal: a message event re-sending it (an
    /// inclusive replay) does not start the part, as the resumption passes over it too.
    cursor: Option<u128>,
    /// Every ordinal delivered, for the skipped ones that come later.
    seen: HashSet<u128>,
}

/// The stream parts of one connection, by format and prefix.
type Parts<'a> = HashMap<(IdFormat, &'a str), Part<'a>>;

/// A skip: its stream part, the highest ordinal before it and its id (the cursor's or an
/// event's), the event that skipped (its index), and how many ordinals it passed.
#[derive(Clone, Copy)]
struct Skip<'a> {
    key: (IdFormat, &'a str),
    max: u128,
    max_id: &'a str,
    from_cursor: bool,
    at: usize,
    missing: u128,
}

/// Whether the connection's first own id past its priming has a dense format: only such a
/// connection is walked.
fn dense_first(e: &Exchange) -> bool {
    e.sse
        .events
        .briefs()
        .filter(|(_, b)| b.has_own_id && !b.truncated)
        .find(|(_, b)| !b.priming)
        .and_then(|(i, _)| e.sse.events.id_of(i))
        .is_some_and(|id| ids::parse(id).format.dense_by_format())
}

/// Every skip of dense ids on connection `e`, in order, and its stream parts as they ended.
fn skips(e: &Exchange) -> (Vec<Skip<'_>>, Parts<'_>) {
    let mut parts: Parts = HashMap::default();
    // The resumption's cursor: its stream part starts there.
    if let Some(cursor) = e.resume_cursor() {
        let p = ids::parse(cursor);
        if let Some(n) = p.seq.filter(|_| p.format.dense_by_format()) {
            parts.insert(
                (p.format, p.prefix),
                Part {
                    max: n,
                    max_id: cursor,
                    max_is_cursor: true,
                    prev: n,
                    steps: 0,
                    started: false,
                    cursor: Some(n),
                    seen: HashSet::default(),
                },
            );
        }
    }
    let mut skips: Vec<Skip> = Vec::new();
    let own = e
        .sse
        .events
        .briefs()
        .filter(|(_, b)| b.has_own_id && !b.truncated);
    for (i, b) in own {
        let Some(id) = e.sse.events.id_of(i) else {
            continue;
        };
        let p = ids::parse(id);
        let Some(n) = p.seq.filter(|_| p.format.dense_by_format()) else {
            continue;
        };
        let key = (p.format, p.prefix);
        let Some(part) = parts.get_mut(&key) else {
            parts.insert(
                key,
                Part {
                    max: n,
                    max_id: id,
                    max_is_cursor: false,
                    prev: n,
                    steps: 0,
                    started: !b.priming,
                    cursor: None,
                    seen: [n].into_iter().collect(),
                },
            );
            continue;
        };
        part.seen.insert(n);
        // A priming event before the part's first message event is a cursor: the next ordinal
        // (C# primes a resumed connection with it) steps on; one further ahead of the replay
        // that follows only counts as delivered.
        if b.priming && !part.started && n != part.prev + 1 {
            continue;
        }
        if part.started && n > part.max + 1 && part.steps >= 1 {
            skips.push(Skip {
                key,
                max: part.max,
                max_id: part.max_id,
                from_cursor: part.max_is_cursor,
                at: i,
                missing: n - part.max - 1,
            });
        }
        if n == part.prev + 1 {
            part.steps += 1;
        }
        part.started |= !b.priming && part.cursor != Some(n);
        part.prev = n;
        if n > part.max {
            (part.max, part.max_id, part.max_is_cursor) = (n, id, false);
        }
    }
    (skips, parts)
}

/// How many ordinals of skip `g` never came on the connection, and the first of them (past
/// 1024 ordinals, all of them are taken as lost).
fn never_came(g: &Skip, parts: &Parts) -> (u128, u128) {
    let part = parts.get(&g.key);
    if g.missing > 1024 {
        return (g.missing, g.max + 1);
    }
    let absent: Vec<u128> = (1..=g.missing)
        .map(|k| g.max + k)
        .filter(|o| !part.is_some_and(|q| q.seen.contains(o)))
        .collect();
    (
        absent.len() as u128,
        absent.first().copied().unwrap_or(g.max + 1),
    )
}
