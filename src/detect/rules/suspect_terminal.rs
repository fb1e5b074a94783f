//! `suspect_terminal`: the final response to a call arrived on the resumed stream right after
//! the cursor (in its first two message events) without the progress, or the application
//! sequence, that was under way before the cut: a result the original stream never produced
//! (`docs/resumption.md`, "Terminal provenance").
//!
//! - Progress that had reached its total, or a result after the progress went on to it, is a
//!   tool that finished.
//! - After a planned poll (MCP 2025-11-25: the server closed L's connection cleanly with a
//!   `retry` in force and the client came back in time, on the same backend), a result right
//!   after L is a tool that finished while the client was away when its progress gave no total
//!   or stood one step short of it; progress short of a known total, or a sequence seen to
//!   jump, stays suspect.
//! - No progress in between, one step short of the total or without one: a tool that reports
//!   each step before doing it ends there too — a warning, the resumption unverifiable, unless
//!   another backend served it.
//! - None of the progress before the cut, a first value past the start and short of its total,
//!   then the result, from another backend: the value and the result may be made up there or
//!   replayed from a shared log — a warning.
//! - A request the capture did not see is judged only where the capture shows its progress's
//!   step and total before L and progress after L.

use crate::hash::FastMap as HashMap;
use std::cell::OnceCell;

use super::{Check, Found, Rule};
use crate::detect::context::Context;
use crate::detect::facts::boundary::{Boundary, Events};
use crate::detect::facts::series::SeqKey;
use crate::detect::verdict::{Cause, Terminal};
use crate::detect::{fmt_num, Kind, Severity};
use crate::http::EventRec;
use crate::jsonrpc::{Kind as MessageKind, Message, Short};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::SuspectTerminal,
    severities: &[Severity::Error, Severity::Warning],
    summary: "The final result of a call arrived on the resumed stream right after the cursor with none of the progress that was under way: a result the original stream never produced.",
    checks: &[Check::Resumption(check)],
};

/// Progress values with their totals, in order.
type Values = Vec<(f64, Option<f64>)>;

/// What came before the cut, read on first use: progress by token, and the application
/// sequences under way with their last values.
struct Before<'e, 'a> {
    ev: &'e Events<'a>,
    by_token: OnceCell<HashMap<Short, Values>>,
    under_way: OnceCell<Vec<(SeqKey, f64)>>,
}

impl Before<'_, '_> {
    /// The progress of `token` up to L.
    fn of(&self, token: &str) -> &[(f64, Option<f64>)] {
        self.by_token
            .get_or_init(|| {
                let mut by: HashMap<Short, Values> = HashMap::default();
                for x in self
                    .ev
                    .cut
                    .upto()
                    .iter()
                    .flat_map(|(_, _, ev)| ev.messages.iter())
                {
                    if let (Some(t), Some(p)) = (x.progress_token, x.progress) {
                        by.entry(t).or_default().push((p, x.progress_total));
                    }
                }
                by
            })
            .get(token)
            .map_or(&[][..], Vec::as_slice)
    }

    /// The application sequences under way before L, with their last values.
    fn under_way(&self) -> &[(SeqKey, f64)] {
        self.under_way.get_or_init(|| {
            self.ev
                .cut
                .upto_series()
                .iter()
                .filter(|(k, _)| matches!(k, SeqKey::App(..)))
                .filter_map(|(k, vals)| Some((k.clone(), vals.last()?.0)))
                .collect()
        })
    }
}

/// What came after L before a message: progress by token, and how many values of each
/// application sequence.
#[derive(Default)]
struct SoFar {
    progress: HashMap<Short, Values>,
    app: HashMap<usize, usize>,
}

/// One response judged: the resumption, its events, what came before and after L.
struct Judging<'x, 'a> {
    ctx: &'x Context<'x>,
    b: &'x Boundary<'a>,
    ev: &'x Events<'a>,
    before: &'x Before<'x, 'a>,
    so_far: &'x SoFar,
}

fn check(ctx: &Context, b: &Boundary, out: &mut Vec<Found>) {
    let Some(ev) = b.events() else { return };
    let before = Before {
        ev,
        by_token: OnceCell::new(),
        under_way: OnceCell::new(),
    };
    let mut so_far = SoFar::default();
    // The first two message events after L.
    let firsts = ev
        .cut
        .after
        .iter()
        .copied()
        .filter(|x| !x.messages.is_empty())
        .take(2);
    for x in firsts {
        for m in x.messages.iter() {
            let j = Judging {
                ctx,
                b,
                ev,
                before: &before,
                so_far: &so_far,
            };
            if let Some(found) = j.response(x, &m) {
                out.push(found);
            }
            // What this message carries comes before the responses after it.
            if let (Some(t), Some(p)) = (&m.progress_token, m.progress) {
                so_far
                    .progress
                    .entry(t.clone())
                    .or_default()
                    .push((p, m.progress_total));
            }
            for &(i, _) in m.app_seq().iter() {
                *so_far.app.entry(i).or_default() += 1;
            }
        }
    }
}

impl Judging<'_, '_> {
    /// Judge message `m` of event `x` when it is a final response to a known request.
    fn response(&self, x: EventRec, m: &Message) -> Option<Found> {
        if !matches!(m.kind, MessageKind::Response | MessageKind::Error) {
            return None;
        }
        let rid = m.id.as_ref()?;
        let captured = self
            .ctx
            .requests
            .get(&self.b.resumption.session)
            .and_then(|(reqs, _)| reqs.get(rid.as_str()));
        // The request of a stream whose start the capture missed is the one its events answer.
        let token = captured.or(self
            .ev
            .stream_request
            .as_ref()
            .filter(|(id, _)| id == rid.as_str())
            .map(|(_, token)| token))?;
        let before = self.before.of(token.as_str());
        // The progress for the request between L and the response, also ahead of it in its
        // own batch (2025-03-26: one event may carry the last notifications and the result).
        let after = self
            .so_far
            .progress
            .get(token.as_str())
            .map_or(&[][..], Vec::as_slice);
        // A request the capture did not see is judged only where the capture shows its
        // progress's step and total before L (two values at least, the last with a total) and
        // progress after L: a `retry` that planned the poll, and the earlier values, may be
        // before the capture, and a step or a sequence guessed from one value, or from values
        // without a total, would make a healthy end look cut short.
        if captured.is_none()
            && (after.is_empty() || before.len() < 2 || before.last().is_none_or(|p| p.1.is_none()))
        {
            return None;
        }
        match before.last() {
            None => self.without_progress_before(x, m, rid, after),
            Some(&(last, total)) => {
                let desynced =
                    self.ev.desyncs.iter().any(
                        |d| matches!(&d.key, SeqKey::Progress(t) if t.as_str() == token.as_str()),
                    );
                self.with_progress_before(x, rid, before, after, (last, total), desynced)
            }
        }
    }

    /// None of the request's progress reached the client before the cut (say, a cut right
    /// after the priming event).
    fn without_progress_before(
        &self,
        x: EventRec,
        m: &Message,
        rid: &str,
        after: &[(f64, Option<f64>)],
    ) -> Option<Found> {
        // Another backend than the cut connection's answered the resumption with one progress
        // value past the start, short of its total, and the result: where the result came from
        // cannot be shown. A replica without the log invents the value where it guesses the
        // tool stands, then a result; a replica sharing the log replays a tool that reported
        // first at that value. The wire cannot tell them apart (the ids may continue in both),
        // so this is a warning and the resumption unverifiable. A first value of 0 or 1 is a
        // replay from the start, a JSON-RPC error a tool that failed, and a planned poll keeps
        // the client away by design (a poll to another backend is no planned one).
        let first_value = after.first().map(|&(p, _)| p);
        if let (Some(&(reached, Some(t))), Some(v)) = (after.last(), first_value) {
            let tol = 1e-9 * t.abs().max(1.0);
            if m.kind == MessageKind::Response
                && self.b.switch.is_some()
                && v > 1.0 + tol
                && reached + tol < t
            {
                return Some(self.found(
                    x,
                    rid,
                    Terminal::OtherBackend,
                    format!("while its progress stood at {} of {}, the first progress the client got for it ({} notification(s) in between, none before the cut), and another backend than the cut connection's served it: unless that backend shares the stream's log, the value and the result were made up there; the capture cannot show which.", fmt_num(reached), fmt_num(t), after.len()),
                    "a replay from the request's first progress value".into(),
                    format!("response after progress {} of {}", fmt_num(reached), fmt_num(t)),
                ));
            }
        }
        // No progress for the request: an application sequence under way on the stream
        // (`/params/app_seq`, `--app-seq`) speaks the same way — a message counter, with the
        // result at Last-Event-ID + 1 (docs/resumption.md, "Terminal provenance"). (The values
        // of a sequence between L and the response.)
        let between = |k: &SeqKey| match k {
            SeqKey::App(i) => self.so_far.app.get(i).copied().unwrap_or(0),
            SeqKey::Progress(_) => 0,
        };
        // After a planned poll only a jump counts, as for progress without a total.
        let (key, last) = self
            .before
            .under_way()
            .iter()
            .find(|(k, _)| self.ev.desynced(k) || (!self.ev.planned && between(k) == 0))?;
        let label = key.label(self.ctx.app_seq);
        let n = between(key);
        Some(self.found(
            x,
            rid,
            Terminal::NoAppSeq,
            format!("while {label} stood at {} with {n} value(s) of it in between: a terminal event not attributable to the original stream.", fmt_num(*last)),
            format!("{label} continuing from {}", fmt_num(*last)),
            format!("response after {n} value(s) of {label}"),
        ))
    }

    /// The request's progress stood at `last` (of `total`) before the cut.
    fn with_progress_before(
        &self,
        x: EventRec,
        rid: &str,
        before: &[(f64, Option<f64>)],
        after: &[(f64, Option<f64>)],
        (last, total): (f64, Option<f64>),
        desynced: bool,
    ) -> Option<Found> {
        // The last step the progress took (1 when it took none).
        let step = match before {
            [.., (a, _), (b, _)] if b > a => b - a,
            _ => 1.0,
        };
        // (Progress may be fractional: i/n of 1, or a percentage.)
        let near_end = total.is_none_or(|t| last + step + 1e-9 * t.abs().max(1.0) >= t);
        if total.is_some_and(|t| last >= t) || (self.ev.planned && !desynced && near_end) {
            return None;
        }
        let reached = after.iter().map(|&(p, _)| p).fold(f64::NAN, f64::max);
        // The progress went on after L and stopped one step short of its total: a tool that
        // reports each step before doing it ends there (one step past the last value is a
        // genuine continuation). (Only when the progress before L showed its step.)
        let last_step = before.len() >= 2
            && total.is_some_and(|t| reached + step + 1e-9 * t.abs().max(1.0) >= t);
        let incomplete = after.is_empty()
            || desynced
            || total.is_some_and(|t| reached.is_nan() || (reached < t && !last_step));
        if !incomplete {
            return None;
        }
        // Nothing in between, and the progress stood one step short of its total, or had
        // none: the tool can end right there, and a replica that invents the result would look
        // the same on the wire. Suspect, not proven — unless another backend than L's is
        // known to have answered (the result cannot come from the log the client was reading;
        // a planned poll was let through above). (One step short only when the progress
        // showed its step: two values at least.)
        let one_short = match total {
            Some(_) => before.len() >= 2 && near_end,
            None => true,
        };
        let of_total = total.map(|t| format!(" of {}", fmt_num(t)));
        if after.is_empty() && !desynced && one_short && self.b.switch.is_none() {
            return Some(self.found(
                x,
                rid,
                Terminal::OneShort,
                format!("with no progress in between, while its progress stood at {}{}: the tool may have finished after that step, or the result was made up; the capture cannot show which.", fmt_num(last), of_total.unwrap_or_else(|| " (no total)".into())),
                format!("progress continuing from {}", fmt_num(last)),
                "response with no progress notification in between".into(),
            ));
        }
        Some(self.found(
            x,
            rid,
            Terminal::NoProgress,
            format!("while its progress stood at {}{} with {} progress notification(s) in between: a terminal event not attributable to the original stream.", fmt_num(last), of_total.unwrap_or_default(), after.len()),
            format!("progress continuing from {}", fmt_num(last)),
            format!("response after {} progress notification(s)", after.len()),
        ))
    }

    /// The finding for the response to `rid` in event `x`: its sentence goes on with `rest`.
    fn found(
        &self,
        x: EventRec,
        rid: &str,
        how: Terminal,
        rest: String,
        expected: String,
        observed: String,
    ) -> Found {
        let severity = match how {
            Terminal::OtherBackend | Terminal::OneShort => Severity::Warning,
            Terminal::NoAppSeq | Terminal::NoProgress => Severity::Error,
        };
        let detail = format!(
            "The final response to request {rid} arrived on the resumed stream right after Last-Event-ID {} (event {}, frame {}) {rest}",
            self.b.leid(),
            x.sse.id.unwrap_or("-"),
            x.sse.frame_first
        );
        let mut f = self
            .b
            .finding(
                Kind::SuspectTerminal,
                severity,
                Some(x),
                self.b.with_backends(detail),
            )
            .cite(self.b.exchange.flow_index, x.sse.frame_first);
        f.request_id = Some(rid.to_string());
        f.expected = Some(expected);
        f.observed = Some(observed);
        Found::new(f, Cause::Terminal(how))
    }
}
