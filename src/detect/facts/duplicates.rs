//! What a resumed connection delivered again that the client already had: events by id and
//! data, progress payloads, and another stream's events that stream delivered too.
//!
//! The client had the events up to L. Events the capture shows on the wire after L may never
//! have reached the client's handler (at the server's side of a network they may not have
//! arrived at all, and a reset may discard what the receiver had not read), and a replay that
//! re-sends them is correct — unless their connection was read to its end before the
//! resumption was sent: its response completed, or the client had acknowledged every byte
//! before the server's FIN (answered by its own) or reset (`resp_read`). The client's reader
//! then got them, and a client that resumes from L anyway has a cursor behind what it had (the
//! Python SDK resumes again from its first cursor when a resumed stream breaks): their replay
//! is delivered twice.

use crate::hash::FastSet as HashSet;

use super::boundary::{Cut, ForeignEvent};
use super::series::SeqKey;
use super::Ev;
use crate::detect::context::Context;
use crate::detect::Cited;
use crate::http::EventRec;
use crate::jsonrpc::{Kind, Short};
use crate::mcp::Resumption;

/// A progress value of a token: (token, value bits).
type ProgressKey = (Short, u64);

/// The duplicates of one resumed connection.
#[derive(Debug, Default)]
pub(crate) struct Duplicates<'a> {
    /// Events after L on connections read to their end before the resumption was sent.
    pub read_after_l: Vec<Ev<'a>>,
    /// Progress values the client had up to L, and on those connections.
    pub progress_before: HashSet<ProgressKey>,
    pub progress_read: HashSet<ProgressKey>,
    /// Own ids with their data hash the client had up to L, and on those connections.
    pub before_by_id: HashSet<(&'a str, u64)>,
    pub ids_read: HashSet<(&'a str, u64)>,
    /// Events re-sent with the same id and data (a re-sent priming event carries no message:
    /// nothing is handled twice).
    pub ids: Vec<EventRec<'a>>,
    /// Events whose progress the client already had: up to L, or earlier on this connection (a
    /// replay that hands over to live events re-sends some: typescript-sdk PR #2335 review). An
    /// event that repeats an earlier one of the connection with its id and data is
    /// `duplicate_event_id`'s.
    pub payload: Vec<EventRec<'a>>,
    /// Another stream's events that stream also delivered itself (before or after), with the
    /// frame where it did: the client received them twice. (A response received twice is the
    /// session's `duplicate_delivery`.)
    pub foreign: Vec<(EventRec<'a>, Cited)>,
}

impl Duplicates<'_> {
    /// Anything delivered again.
    pub(crate) fn any(&self) -> bool {
        !self.ids.is_empty() || !self.payload.is_empty() || !self.foreign.is_empty()
    }

    /// A duplicate only the connections read after L explain: the client's cursor was behind.
    pub(crate) fn behind(&self, ev: &EventRec) -> bool {
        (had_id(ev, &self.ids_read) || had_progress(ev, &self.progress_read))
            && !had_id(ev, &self.before_by_id)
            && !had_progress(ev, &self.progress_before)
    }
}

/// Whether event `ev` has its own id with its data in `set`.
fn had_id(ev: &EventRec, set: &HashSet<(&str, u64)>) -> bool {
    ev.sse.has_own_id && ev.sse.id.is_some_and(|i| set.contains(&(i, ev.data_hash)))
}

/// Whether a message of `ev` carries a progress value in `set`.
fn had_progress(ev: &EventRec, set: &HashSet<ProgressKey>) -> bool {
    ev.messages.iter().any(|m| {
        m.progress_token
            .zip(m.progress)
            .is_some_and(|(t, p)| set.contains(&(t, p.to_bits())))
    })
}

fn progress_of<'a: 'b, 'b>(evs: impl Iterator<Item = &'b Ev<'a>>) -> HashSet<ProgressKey> {
    evs.flat_map(|(_, _, ev)| ev.messages.iter())
        .filter_map(|m| Some((m.progress_token.clone()?, m.progress?.to_bits())))
        .collect()
}

/// An id is delivered twice when the same id comes with the same data; an id reused for other
/// data is a restarted sequence (id_restart/id_regression), not a duplicate.
fn ids_of<'a: 'b, 'b>(evs: impl Iterator<Item = &'b Ev<'a>>) -> HashSet<(&'a str, u64)> {
    evs.filter(|(_, _, ev)| ev.sse.has_own_id)
        .filter_map(|(_, _, ev)| Some((ev.sse.id?, ev.data_hash)))
        .collect()
}

/// The duplicates of resumption `r` (foreign events `foreign_stream`).
pub(crate) fn duplicates<'a>(
    ctx: &Context<'a>,
    cut: &Cut<'a>,
    r: &Resumption,
    foreign_stream: &[ForeignEvent<'a>],
) -> Duplicates<'a> {
    let e = &ctx.exchanges[r.exchange];
    let read_after_l: Vec<Ev<'a>> = cut.before[cut.lpos + 1..]
        .iter()
        .filter(|&&(x, _, ev)| {
            let c = &ctx.exchanges[x];
            (c.resp_complete || c.resp_read.is_some())
                && !c.resp_gap
                && !c.client_closed
                && c.ts_end.is_some_and(|t| t <= e.ts())
                && ev.carries_data()
        })
        .copied()
        .collect();
    let mut d = Duplicates {
        progress_before: progress_of(cut.upto().iter()),
        progress_read: progress_of(read_after_l.iter()),
        before_by_id: ids_of(cut.upto().iter()),
        ids_read: ids_of(read_after_l.iter()),
        read_after_l,
        ..Duplicates::default()
    };
    d.ids = cut
        .after
        .iter()
        .copied()
        .filter(|ev| ev.carries_data() && (had_id(ev, &d.before_by_id) || had_id(ev, &d.ids_read)))
        .collect();
    d.payload = repeated_progress(&cut.after, &d);
    d.foreign = foreign_stream
        .iter()
        .filter(|f| f.twice)
        .filter_map(|f| Some((f.ev, f.delivered?)))
        .filter(|(ev, _)| {
            !d.ids.iter().any(|x| x.is(ev))
                && !d.payload.iter().any(|x| x.is(ev))
                && ev
                    .messages
                    .iter()
                    .any(|m| !matches!(m.kind, Kind::Response | Kind::Error))
        })
        .collect();
    d
}

/// The events of `after` whose progress the client already had ([`Duplicates::payload`]).
fn repeated_progress<'a>(after: &[EventRec<'a>], d: &Duplicates) -> Vec<EventRec<'a>> {
    let mut progress_here: HashSet<ProgressKey> = HashSet::default();
    let mut events_here: HashSet<(&str, u64)> = HashSet::default();
    let mut out: Vec<EventRec> = Vec::new();
    for ev in after {
        let same_event = ev.sse.has_own_id
            && ev
                .sse
                .id
                .is_some_and(|i| !events_here.insert((i, ev.data_hash)));
        let mut again = false;
        for m in ev.messages.iter() {
            if let (Some(t), Some(p)) = (m.progress_token, m.progress) {
                let key = (t, p.to_bits());
                again |= d.progress_before.contains(&key)
                    || d.progress_read.contains(&key)
                    || (!progress_here.insert(key) && !same_event);
            }
        }
        if again {
            out.push(*ev);
        }
    }
    out
}

/// Progress that started over after L ([`progress_restart`]).
#[derive(Debug, Clone)]
pub(crate) struct ProgressRestart<'a> {
    /// The event that carried the first value of the token after L.
    pub ev: EventRec<'a>,
    /// The token, that value, and the token's last value up to L.
    pub token: Short,
    pub value: f64,
    pub last: f64,
}

/// Whether the progress re-sent after L started over: the first value after L of a token is
/// one the client already had, below the token's last value up to L — or below the first the
/// capture saw it have, when the capture began after the call did (progress MUST increase, MCP
/// "Progress"). The log began again (docs/resumption.md, "Forks"), whatever the ids look like:
/// opaque ids cannot show it themselves. The first such value, in the order of the events.
///
/// The very event the client had (the same id and data) coming first is the log's own replay
/// begun before the cursor — the TS example store sorts the ids of one millisecond by their
/// random suffix (typescript-sdk PR #1978) — not another log: a fresh log has ids of its own.
pub(crate) fn progress_restart<'a>(cut: &Cut<'a>, d: &Duplicates) -> Option<ProgressRestart<'a>> {
    // (Events of one body: each at its own offset.)
    let replayed: HashSet<u64> = d.ids.iter().map(|x| x.sse.offset).collect();
    let mut seen: HashSet<Short> = HashSet::default();
    for ev in &cut.after {
        let own_replay = replayed.contains(&ev.sse.offset);
        for m in ev.messages.iter() {
            let (Some(t), Some(p)) = (m.progress_token, m.progress) else {
                continue;
            };
            // (Each token's first value only; `seen` before `own_replay`.)
            if !seen.insert(t.clone()) || own_replay {
                continue;
            }
            let last = cut.upto_series().iter().find_map(|(k, vals)| {
                let (first, last) = (vals.first()?.0, vals.last()?.0);
                (matches!(k, SeqKey::Progress(x) if *x == t)
                    && p < last
                    && (d.progress_before.contains(&(t.clone(), p.to_bits())) || p < first))
                    .then_some(last)
            });
            if let Some(last) = last {
                return Some(ProgressRestart {
                    ev: *ev,
                    token: t,
                    value: p,
                    last,
                });
            }
        }
    }
    None
}
