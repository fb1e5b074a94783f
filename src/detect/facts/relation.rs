//! How the first resumed event id relates to the cursor L, as its format allows
//! ([`crate::mcp::ids`]; `docs/resumption.md`, "Forks" and "Event-id formats").

use super::boundary::Cut;
use super::series::app_counter_continues;
use super::streams::answered_before;
use super::Ev;
use crate::detect::context::Context;
use crate::http::{EventRec, Exchange};
use crate::mcp::ids::{self, IdFormat};
use crate::mcp::{Model, StreamKind};

/// How the first new id relates to L.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Relation {
    /// No message event after L with an id of its own.
    #[default]
    NoId,
    /// The same ordered format and stream part as L: their ordinals compare.
    Ordered {
        /// L's ordinal and the first id's.
        cursor: u128,
        first: u128,
    },
    /// L's ordered format, another stream part (prefix): another stream's ids.
    OtherPart,
    /// Ids that show no order against L (opaque, another format): the client either had the
    /// first id already or not.
    Unordered,
}

/// A dense skip at the cursor: ordinals between L and the first id that no event carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdSkip {
    /// How many were never delivered.
    pub lost: u128,
    /// The first of them.
    pub first_missing: u128,
}

/// What the first new id shows ([`relate`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct IdFacts {
    /// How it relates to L.
    pub relation: Relation,
    /// It is not after L (ordered ids), or the client had it up to L (opaque ids): the server
    /// opened another log.
    pub regressed: bool,
    /// The id sequence began again: an ordinal back at (or below) the stream's first, or a
    /// stream part never seen while the stream still owed messages.
    pub restarted: bool,
    /// Integer ids skipped while the application's regular counter went on by exactly its
    /// step: a counter shared with streams the capture did not see (the Python v2 store counts
    /// across every session), not a loss.
    pub shared_counter: bool,
    /// Dense ids skipped at the cursor (ids that step by one: by their format, or plain
    /// integers the stream showed dense).
    pub gap: Option<IdSkip>,
    /// The ids claim the log went on (what the application sequences are checked against).
    pub claims_continuity: bool,
    /// For ordered ids: whether they show the log going on from L (`None`: ids that cannot
    /// show order, or no id).
    pub goes_on: Option<bool>,
    /// The first id is L's next (for counters that step by one: not further on, past ids a
    /// shared counter spent elsewhere).
    pub next: bool,
}

/// The facts of the first new event `first` (id `first_id`) against the cut's cursor.
pub(crate) fn relate(
    ctx: &Context,
    cut: &Cut,
    first: Option<EventRec>,
    first_id: Option<&str>,
) -> IdFacts {
    let mut out = IdFacts::default();
    let (Some(fev), Some(fid)) = (first, first_id) else {
        return out;
    };
    let pl = ids::parse(cut.leid);
    let pf = ids::parse(fid);
    let comparable = pf.format == pl.format
        && pf.format.ordered()
        && pf.prefix == pl.prefix
        && pf.seq.is_some()
        && pl.seq.is_some();
    let (fs, ls) = (pf.seq.unwrap_or(0), pl.seq.unwrap_or(0));
    let other_part = pf.format == pl.format && pf.format.ordered() && pf.prefix != pl.prefix;
    out.relation = match (comparable, other_part) {
        (true, _) => Relation::Ordered {
            cursor: ls,
            first: fs,
        },
        (false, true) => Relation::OtherPart,
        (false, false) => Relation::Unordered,
    };
    // Ordinals of the first's format and prefix between L and the first that events before it
    // carried (sorted, each once). Those events with their own id are priming events and other
    // streams' (a re-sent cursor has L's own ordinal): what they carried was delivered.
    let carried = || {
        let mut v: Vec<u128> = cut
            .after
            .iter()
            .take_while(|ev| !ev.is(&fev))
            .filter_map(|ev| ev.sse.id.filter(|_| ev.sse.has_own_id).map(ids::parse))
            .filter(|p| p.format == pf.format && p.prefix == pf.prefix)
            .filter_map(|p| p.seq.filter(|&n| ls < n && n < fs))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let strict_time = pf.format == IdFormat::TsStore;
    // Ordered formats compare with L itself; opaque ids can only be matched against what the
    // client already had up to L. (Ids re-sent after L by a replay are duplicates, not a
    // regression.)
    out.regressed = if comparable {
        fs < ls || (fs == ls && !strict_time)
    } else {
        cut.ids_upto.contains(fid)
    };
    out.restarted = restarted(ctx, cut, &pl, &pf, fid, comparable);
    // Plain integers are dense only as far as the stream showed it (and see `shared_counter`).
    let mut app_vouches = false;
    let dense = comparable
        && (pf.format.dense_by_format()
            || (pf.format == IdFormat::Integer
                && stream_dense(cut.upto())
                && !(fs > ls + 1 && {
                    let used = skipped_used(ctx, cut, fev, (ls, fs));
                    app_vouches =
                        !used && app_counter_continues(cut.upto_series(), cut.upto(), &cut.after);
                    used || app_vouches
                })));
    out.shared_counter = app_vouches;
    // Ordinals between L and the first message event that priming events of the resumed
    // connection carried were delivered (as cursors), and so were those another stream's
    // events replayed here took (reported as cross_stream_replay).
    let primed: Vec<u128> = if dense && fs > ls + 1 {
        carried()
    } else {
        Vec::new()
    };
    let skipped = (fs.saturating_sub(ls + 1)).saturating_sub(primed.len() as u128);
    // The first ordinal after L that no priming event carried.
    let first_missing = primed
        .iter()
        .fold(ls + 1, |want, &p| if p == want { want + 1 } else { want });
    if !out.regressed && dense && fs > ls + 1 && skipped > 0 {
        out.gap = Some(IdSkip {
            lost: skipped,
            first_missing,
        });
    }
    out.claims_continuity = if comparable {
        if dense {
            // (Ordinals in between that priming events carried were delivered.)
            fs == ls + 1 || (fs > ls && skipped == 0)
        } else {
            fs > ls || (strict_time && fs == ls && !cut.ids_upto.contains(fid))
        }
    } else {
        // Opaque ids: a never-seen id is how a replay looks — unless it belongs to another
        // stream of an ordered format.
        !cut.ids_upto.contains(fid) && !other_part
    };
    if comparable {
        out.goes_on = Some(out.claims_continuity);
        out.next = !(pf.format.dense_by_format() || pf.format == IdFormat::Integer)
            || fs > ls && carried().len() as u128 == fs - ls - 1;
    }
    out
}

/// Whether the first id `pf` (text `fid`) began the id sequence again after L (`pl`): an
/// ordinal format (integers, Go, rmcp, C#) back below L at the start (1 or less) or at or
/// below the lowest the stream had; or, for formats whose prefix names the stream (TS store,
/// Go, rmcp, C#), another prefix never seen on the stream while it still owed messages — ids
/// of another stream that was never seen continue no known stream.
fn restarted(
    ctx: &Context,
    cut: &Cut,
    pl: &ids::ParsedId,
    pf: &ids::ParsedId,
    fid: &str,
    comparable: bool,
) -> bool {
    let (fs, ls) = (pf.seq.unwrap_or(0), pl.seq.unwrap_or(0));
    // Lowest ordinal the stream had with this prefix: a restart goes back to (or below) it.
    // (Read only when a restart is possible: every id of the stream is parsed.)
    let lowest = || {
        cut.before
            .iter()
            .filter(|(_, _, ev)| ev.sse.has_own_id)
            .filter_map(|(_, _, ev)| ev.sse.id)
            .map(ids::parse)
            .filter(|p| p.format == pf.format && p.prefix == pf.prefix)
            .filter_map(|p| p.seq)
            .min()
    };
    let ordinal = matches!(
        pf.format,
        IdFormat::Integer | IdFormat::Go | IdFormat::Rmcp | IdFormat::CSharp
    );
    if comparable && ordinal && fs < ls && (fs <= 1 || lowest().is_some_and(|lo| fs <= lo)) {
        return true;
    }
    let pending =
        cut.kind == StreamKind::Get || !answered_before(ctx.exchanges, cut.origin, cut.upto());
    pf.format == pl.format
        && !pf.prefix.is_empty()
        && pf.prefix != pl.prefix
        && !cut.ids_before.contains(fid)
        && pending
        && matches!(
            pf.format,
            IdFormat::TsStore | IdFormat::Go | IdFormat::Rmcp | IdFormat::CSharp
        )
}

/// Whether an integer id skipped between L (`ids.0`) and the first new event `fev`
/// (`ids.1`) was used while the stream was away: by a priming event opening the resumed
/// connection, or on another stream (of any session) between the cut and the first resumed
/// event. Then the counter is shared: the Python SDK's integer store counts across streams and
/// sessions (python-sdk `examples/stories/sse_polling/event_store.py`) and primes every resumed
/// connection (`_replay_events`, `streamable_http.py`).
fn skipped_used(ctx: &Context, cut: &Cut, fev: EventRec, (ls, fs): (u128, u128)) -> bool {
    let primed = cut
        .after
        .iter()
        .take_while(|ev| !ev.is(&fev))
        .filter(|ev| ev.priming && ev.sse.has_own_id)
        .filter_map(|ev| ev.sse.id)
        .map(ids::parse)
        .any(|p| p.format == IdFormat::Integer && p.seq.is_some_and(|n| ls < n && n < fs));
    primed
        || ctx.int_ids.elsewhere(
            ctx.model,
            ctx.exchanges,
            cut.stream,
            (ls, fs),
            (cut.l_ev().sse.ts, fev.sse.ts),
        )
}

/// Whether event id `b` is the next after `a` in an ordered format that numbers events densely
/// (same format and prefix): `Some(true)` when it is, `Some(false)` when ids were skipped between
/// them, `None` when the ids cannot tell (unordered formats, other prefixes, plain integers
/// that skip: the counter may be shared).
pub(crate) fn ids_step(a: &str, b: &str) -> Option<bool> {
    let (pa, pb) = (ids::parse(a), ids::parse(b));
    let (x, y) = (pa.seq?, pb.seq?);
    if pa.format != pb.format || pa.prefix != pb.prefix || y <= x {
        return None;
    }
    match pa.format {
        IdFormat::Integer => (y == x + 1).then_some(true),
        f if f.dense_by_format() => Some(y == x + 1),
        _ => None,
    }
}

/// The sequence numbers of the stream's own ids up to the cursor (priming events included) step
/// by exactly one, at least twice (one step could be a shared counter that another stream did
/// not happen to take from).
fn stream_dense(upto: &[Ev]) -> bool {
    let seqs: Vec<u128> = upto
        .iter()
        .filter(|(_, _, ev)| ev.sse.has_own_id)
        .filter_map(|(_, _, ev)| ev.sse.id)
        .filter_map(|i| ids::parse(i).seq)
        .collect();
    seqs.len() >= 3 && seqs.windows(2).all(|w| w[1] == w[0] + 1)
}

/// The plain-integer event ids of every stream of the capture, sorted: (id, time µs, stream).
/// Built on first use: only a resumption that skips integer ids needs it.
#[derive(Debug, Default)]
pub(crate) struct IntIds(std::cell::OnceCell<Vec<(u128, i64, usize)>>);

impl IntIds {
    fn all(&self, model: &Model, exchanges: &[Exchange]) -> &[(u128, i64, usize)] {
        self.0.get_or_init(|| {
            let mut v = Vec::new();
            for (sti, st) in model.streams.iter().enumerate() {
                for &xi in &st.connections {
                    for ev in exchanges[xi].sse.events.iter() {
                        if !ev.sse.has_own_id || ev.sse.truncated {
                            continue;
                        }
                        let p = ev.sse.id.map(ids::parse);
                        if let Some(n) = p
                            .filter(|p| p.format == IdFormat::Integer)
                            .and_then(|p| p.seq)
                        {
                            v.push((n, ev.sse.ts, sti));
                        }
                    }
                }
            }
            v.sort_unstable();
            v
        })
    }

    /// Whether a stream other than `stream` carried an id strictly between `ids.0` and `ids.1`,
    /// delivered within the time window `during` (µs, inclusive).
    fn elsewhere(
        &self,
        model: &Model,
        exchanges: &[Exchange],
        stream: usize,
        ids: (u128, u128),
        during: (i64, i64),
    ) -> bool {
        let all = self.all(model, exchanges);
        let start = all.partition_point(|e| e.0 <= ids.0);
        all[start..]
            .iter()
            .take_while(|e| e.0 < ids.1)
            .any(|&(_, ts, st)| st != stream && during.0 <= ts && ts <= during.1)
    }
}
