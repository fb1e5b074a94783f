//! Application sequences: `notifications/progress` per progressToken (MCP "Progress": the value
//! MUST increase) and `--app-seq` fields, and how they go on across a resumption's cursor
//! (`docs/resumption.md`, "Synthesized continuations").

use crate::hash::{FastMap as HashMap, FastSet as HashSet};

use super::Ev;
use crate::http::EventRec;
use crate::jsonrpc::Short;

/// A pause between two events of a resumed connection, in microseconds, that ends its replay:
/// the events after it are live.
pub(crate) const HANDOVER_PAUSE_US: i64 = 200_000;

/// An application sequence: progress per token, or a `--app-seq` pointer (by its index), one
/// counter whichever messages carry it (docs/resumption.md, "Synthesized continuations": a
/// server's message counter goes on across methods).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum SeqKey {
    Progress(Short),
    App(usize),
}

impl SeqKey {
    pub(crate) fn label(&self, app_seq: &[String]) -> String {
        match self {
            SeqKey::Progress(t) => format!("progress (progressToken {t})"),
            SeqKey::App(i) => app_seq.get(*i).cloned().unwrap_or_else(|| "?".into()),
        }
    }
}

/// One application sequence up to the cursor: its key, and its values with the events that
/// carried them, in order.
pub(crate) type Series<'a> = (SeqKey, Vec<(f64, EventRec<'a>)>);

/// The application sequences of the events `upto`, in order of their first value.
pub(crate) fn series<'a>(upto: &[Ev<'a>]) -> Vec<Series<'a>> {
    series_of(upto.iter().map(|(_, _, ev)| *ev))
}

/// The application sequences of `events`, in order of their first value (a stream may carry
/// thousands of progress tokens: each value finds its sequence by its key).
pub(crate) fn series_of<'a>(events: impl IntoIterator<Item = EventRec<'a>>) -> Vec<Series<'a>> {
    let mut out: Vec<Series<'a>> = Vec::new();
    let mut index: HashMap<SeqKey, usize> = HashMap::default();
    for ev in events {
        for (key, v) in seq_values(&ev) {
            match index.get(&key) {
                Some(&i) => out[i].1.push((v, ev)),
                None => {
                    index.insert(key.clone(), out.len());
                    out.push((key, vec![(v, ev)]));
                }
            }
        }
    }
    out
}

/// The step of a regular counter: every step the same and positive, with at least two steps or
/// a single step of 1 (a counter that goes on by one); `None` for any other series.
pub(crate) fn regular_step(vals: &[(f64, EventRec)]) -> Option<f64> {
    let first = vals.get(1)?.0 - vals[0].0;
    let even = first > 0.0
        && vals
            .windows(2)
            .all(|w| ((w[1].0 - w[0].0) - first).abs() < 1e-9);
    (even && (vals.len() >= 3 || first == 1.0)).then_some(first)
}

/// Every application sequence value an event carries.
pub(crate) fn seq_values(ev: &EventRec) -> Vec<(SeqKey, f64)> {
    let mut out = Vec::new();
    for m in ev.messages.iter() {
        push_seq_values(&m, &mut out);
    }
    out
}

/// Append every application sequence value message `m` carries to `out`.
pub(crate) fn push_seq_values(m: &crate::jsonrpc::Message, out: &mut Vec<(SeqKey, f64)>) {
    if let (Some(t), Some(p)) = (&m.progress_token, m.progress) {
        out.push((SeqKey::Progress(t.clone()), p));
    }
    out.extend(m.app_seq().iter().map(|&(i, v)| (SeqKey::App(i), v)));
}

/// Whether some regular application counter of the stream (progress per token, or an
/// `--app-seq` field: at least two equal steps, or one step of 1) has its first value after the
/// cut exactly one step past its last value up to the cursor — a counter that every message
/// event up to the cursor, and the first one after it, carried: then an event lost in the skip
/// would have shown as a skip of the counter too. (A progress that had reached its total says
/// nothing of the events between it and the result: log notifications carry no sequence.)
pub(crate) fn app_counter_continues(series: &[Series], upto: &[Ev], after: &[EventRec]) -> bool {
    series.iter().any(|(key, vals)| {
        let (Some(&(last, _)), Some(step)) = (vals.last(), regular_step(vals)) else {
            return false;
        };
        let carries = |ev: &EventRec| seq_values(ev).iter().any(|(k, _)| k == key);
        let every_before = upto
            .iter()
            .filter(|(_, _, ev)| !ev.messages.is_empty())
            .all(|(_, _, ev)| carries(ev));
        let first_after = after.iter().find(|ev| !ev.messages.is_empty());
        if !every_before || !first_after.is_some_and(carries) {
            return false;
        }
        let next = after
            .iter()
            .flat_map(|ev| seq_values(ev))
            .find(|(k, _)| k == key)
            .map(|(_, v)| v);
        next.is_some_and(|n| (n - (last + step)).abs() < 1e-9)
    })
}

/// Where an application sequence under way before the cursor broke after it: at the boundary
/// (its first value after L) or inside the resumed connection (a value skipped where a replay
/// hands over to live events, as the Python SDK's race does).
#[derive(Debug, Clone)]
pub(crate) struct Desync<'a> {
    /// The sequence.
    pub key: SeqKey,
    /// Position of the breaking value among the sequence's values after the cursor (0: the
    /// first, at the boundary).
    pub index: usize,
    /// The value before it, the event that carried it, and the cursor the client held then
    /// (its last own id, L at first).
    pub prev: (f64, EventRec<'a>, String),
    /// The breaking value and its event.
    pub next: (f64, EventRec<'a>),
    /// The sequence's usual step (its largest before the cursor; its last value, at least 1,
    /// when it took none).
    pub step: f64,
    /// It went back to a value the client had not had (else it jumped ahead of the step).
    pub backwards: bool,
    /// The values it skipped came later on the same connection: out of order, not lost
    /// (typescript-sdk PR #1978: the example store's replay sorts ids of one millisecond by
    /// their random suffix).
    pub reordered: bool,
}

impl Desync<'_> {
    /// At the boundary: the first value after the cursor.
    pub(crate) fn at_boundary(&self) -> bool {
        self.index == 0
    }
}

/// The desyncs of the sequences `upto` (the series up to the cursor) against the events
/// `after` it: per sequence its first break, if any.
///
/// Only a regular counter ([`regular_step`]) is held to its step, at the boundary and inside
/// the resumed connection; progress may otherwise grow by any step (MCP "Progress" fixes
/// none): a series with uneven steps, or too few values to show one, is checked only for values
/// that go back. In a stream the capture began inside (`requests_known` false), two values are
/// only the tail of a series whose earlier steps are not seen: its step shows in three values
/// at least. Inside the resumed connection a regular counter is held to its step through the
/// replay (events sent at once) and the step where it hands over to live events, the first
/// after a pause of [`HANDOVER_PAUSE_US`]: later steps are the tool's own.
pub(crate) fn desyncs<'a>(
    upto: &[Series<'a>],
    after: &[EventRec<'a>],
    cursor: &str,
    requests_known: bool,
) -> Vec<Desync<'a>> {
    // The values after the cursor, by sequence (read once for all of them).
    let mut later_of: HashMap<&SeqKey, Vec<(f64, EventRec)>> = HashMap::default();
    if !upto.is_empty() {
        let keys: HashSet<&SeqKey> = upto.iter().map(|(k, _)| k).collect();
        for ev in after {
            for (k, v) in seq_values(ev) {
                if let Some(&key) = keys.get(&k) {
                    later_of.entry(key).or_default().push((v, *ev));
                }
            }
        }
    }
    let mut out = Vec::new();
    for (key, vals) in upto {
        let later = later_of.remove(key).unwrap_or_default();
        if let Some(d) = first_break(key, vals, &later, cursor, requests_known) {
            out.push(d);
        }
    }
    out
}

/// The first break of one sequence (values `vals` up to the cursor, `later` after it).
fn first_break<'a>(
    key: &SeqKey,
    vals: &[(f64, EventRec<'a>)],
    later: &[(f64, EventRec<'a>)],
    cursor: &str,
    requests_known: bool,
) -> Option<Desync<'a>> {
    let &(last, last_ev) = vals.last()?;
    let max_step = vals
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .fold(f64::NAN, f64::max);
    let step = if max_step.is_nan() || max_step <= 0.0 {
        last.abs().max(1.0)
    } else {
        max_step
    };
    let regular = regular_step(vals).is_some() && (requests_known || vals.len() >= 3);
    // Values the client had before the cursor, or earlier on this connection.
    let mut here: HashSet<u64> = HashSet::default();
    let seen = |v: f64, here: &HashSet<u64>| {
        here.contains(&v.to_bits()) || vals.iter().any(|(x, _)| x.to_bits() == v.to_bits())
    };
    let mut prev = (last, last_ev, cursor.to_string());
    let mut handed_over = false;
    for (i, &(next, ev)) in later.iter().enumerate() {
        if i > 0 && (!regular || handed_over) {
            break;
        }
        if i > 0 && ev.sse.ts.saturating_sub(prev.1.sse.ts) >= HANDOVER_PAUSE_US {
            handed_over = true;
        }
        let jumped = regular && next > prev.0 + step * (1.0 + 1e-9);
        // A value the client already had is a replayed duplicate (duplicate_delivery), not a
        // desync.
        let backwards = next <= prev.0 && !seen(next, &here);
        if jumped || backwards {
            let skipped = ((next - prev.0) / step).round() as i64 - 1;
            let reordered = jumped
                && skipped >= 1
                && (1..=skipped.min(64)).all(|k| {
                    let want = prev.0 + step * k as f64;
                    later[i + 1..]
                        .iter()
                        .any(|(v, _)| (v - want).abs() < 1e-9 * step.max(1.0))
                });
            return Some(Desync {
                key: key.clone(),
                index: i,
                prev,
                next: (next, ev),
                step,
                backwards,
                reordered,
            });
        }
        here.insert(next.to_bits());
        let id = if ev.sse.has_own_id {
            ev.sse.id.map(str::to_string).unwrap_or_default()
        } else {
            prev.2.clone()
        };
        prev = (next, ev, id);
    }
    None
}
