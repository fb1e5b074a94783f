//! The verdict of a resumption, from its facts ([`Boundary`]) and what the rules found there.
//!
//! Every verdict is made by [`judge`]: an opening that stops the checks early gives its own
//! verdict; otherwise each finding of a resumption's rules names its [`Cause`], and the worst
//! effect decides: another log (`forked`), then loss or fabrication (`gap`), then what the wire
//! cannot tell (`unverifiable`); without any, `resumed`. The `reason` column lists the causes
//! in the order of [`Cause`]. After every resumption is judged, [`settle`] carries the verdict
//! of a resumption that served the stream over the empty answers before it.

use super::facts::boundary::{Boundary, Empty, Opening};
use super::rules::Found;

/// Verdict of one resumption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The new connection continued the log.
    Resumed,
    /// The server started another log (ids regress, restart, or are missing).
    Forked,
    /// The log continued with events missing or fabricated.
    Gap,
    /// The server refused the resumption with an error status.
    Rejected,
    /// The capture cannot prove either way.
    Unverifiable,
}

impl Verdict {
    /// How bad it is, for the worst of several: another log (4), then loss (3), then what the
    /// capture cannot tell (2), then a loud refusal (1); resumed is 0.
    pub fn badness(self) -> u8 {
        match self {
            Verdict::Forked => 4,
            Verdict::Gap => 3,
            Verdict::Unverifiable => 2,
            Verdict::Rejected => 1,
            Verdict::Resumed => 0,
        }
    }

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Resumed => "resumed",
            Verdict::Forked => "forked",
            Verdict::Gap => "gap",
            Verdict::Rejected => "rejected",
            Verdict::Unverifiable => "unverifiable",
        }
    }
}

/// Per-resumption result.
#[derive(Debug, Clone)]
pub struct ResumptionResult {
    /// Index into `Model::resumptions`.
    pub index: usize,
    /// The verdict.
    pub verdict: Verdict,
    /// First event id on the resumed connection (a message event with its own id).
    pub first_event_id: Option<String>,
    /// Events on the resumed connection.
    pub events: usize,
    /// Why the verdict, in a few words.
    pub reason: String,
    /// Verdict `resumed` with nothing against it, but with ids that cannot show order and no
    /// application sequence before the cut: the continuation is not shown, only not contradicted.
    pub continuity_unshown: bool,
    /// For an empty answer over at once (rust-sdk #958): the exchange of the next resumption
    /// from the same `Last-Event-ID` that was not one. When that one is `resumed`, so is this
    /// one (it skipped nothing: the client asked again for everything after L).
    pub served_later: Option<usize>,
}

/// What a rule's finding at a resumption means for its verdict, and the phrase the `reason`
/// column gives for it. Reasons are listed in the order of the variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Dense ids skipped inside the resumed connection (a fact: `id_gap` inside it).
    InnerGap,
    /// `cross_stream_replay`.
    OtherStream,
    /// `cross_session_replay`.
    OtherSession,
    /// `missing_event_id`.
    NoId,
    /// `id_regression` at the first resumed event.
    Regressed,
    /// `id_restart` by the ids.
    Restarted,
    /// Integer ids skipped where the application's counter went on by one step: a counter the
    /// ids share with other streams (a fact, no effect).
    SharedCounter,
    /// `id_gap` at the cursor.
    DenseSkip,
    /// `id_regression` of a priming event below the cursor.
    PrimedLow,
    /// `id_restart` by progress that started over.
    ProgressRestart,
    /// The ids of a log that started over jumped ahead of the cursor (a fact, no effect).
    IdsJumpedAhead,
    /// `app_seq_desync`.
    AppSeq {
        /// The skipped values came later on the connection: out of order, not lost.
        reordered: bool,
    },
    /// `suspect_terminal`, by how it was judged.
    Terminal(Terminal),
    /// `resume_ok`: the phrase says what the boundary was judged by.
    Continued,
    /// `duplicate_delivery` at the resumption (no effect: the events came, twice).
    Duplicated,
    /// `cursor_reset_ignored` (no effect: the client's cursor, not the server's log).
    CursorReset,
}

/// How a `suspect_terminal` was judged ([`Cause::Terminal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terminal {
    /// Another backend served a result after a first progress value past the start (a warning).
    OtherBackend,
    /// No value of the application sequence under way came before the result (an error).
    NoAppSeq,
    /// No progress in between, one step short of the total or without one (a warning).
    OneShort,
    /// The progress under way did not go on to the result (an error).
    NoProgress,
}

/// What a cause does to the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Effect {
    None,
    Unverified,
    Gap,
    Fork,
}

impl Cause {
    /// Position in the reason list (the variant's place; data does not reorder).
    fn rank(self) -> u8 {
        match self {
            Cause::InnerGap => 0,
            Cause::OtherStream => 1,
            Cause::OtherSession => 2,
            Cause::NoId => 3,
            Cause::Regressed => 4,
            Cause::Restarted => 5,
            Cause::SharedCounter => 6,
            Cause::DenseSkip => 7,
            Cause::PrimedLow => 8,
            Cause::ProgressRestart => 9,
            Cause::IdsJumpedAhead => 10,
            Cause::AppSeq { .. } => 11,
            Cause::Terminal(_) => 12,
            Cause::Continued => 13,
            Cause::Duplicated => 14,
            Cause::CursorReset => 15,
        }
    }

    fn effect(self) -> Effect {
        match self {
            Cause::NoId | Cause::Regressed | Cause::Restarted => Effect::Fork,
            Cause::PrimedLow | Cause::ProgressRestart => Effect::Fork,
            Cause::InnerGap | Cause::OtherStream | Cause::OtherSession | Cause::DenseSkip => {
                Effect::Gap
            }
            Cause::AppSeq { .. } => Effect::Gap,
            Cause::Terminal(Terminal::NoAppSeq | Terminal::NoProgress) => Effect::Gap,
            Cause::Terminal(Terminal::OtherBackend | Terminal::OneShort) => Effect::Unverified,
            Cause::SharedCounter | Cause::IdsJumpedAhead => Effect::None,
            Cause::Continued | Cause::Duplicated | Cause::CursorReset => Effect::None,
        }
    }

    /// The phrase of the `reason` column (`Continued` has its own: [`judged_by`]).
    fn phrase(self) -> &'static str {
        match self {
            Cause::InnerGap => "dense ids skipped inside the resumed connection",
            Cause::OtherStream => "replay carried another stream's events",
            Cause::OtherSession => "replay carried another session's events",
            Cause::NoId => "message without id",
            Cause::Regressed => "id regressed",
            Cause::Restarted => "id sequence restarted",
            Cause::SharedCounter => "integer ids skipped while the application counter went on by one step (a shared counter)",
            Cause::DenseSkip => "dense ids skipped",
            Cause::PrimedLow => "primed with an id below the cursor",
            Cause::ProgressRestart => "progress started over: a fresh log",
            Cause::IdsJumpedAhead => "its ids jumped ahead of the cursor",
            Cause::AppSeq { reordered: true } => "application sequence out of order",
            Cause::AppSeq { reordered: false } => "application sequence jumped",
            Cause::Terminal(Terminal::OtherBackend) => "terminal result on another backend with its first progress past the start and short of its total",
            Cause::Terminal(Terminal::NoAppSeq) => {
                "terminal result without the application sequence under way"
            }
            Cause::Terminal(Terminal::OneShort) => {
                "terminal result right after the cut, one step short of the total or without one"
            }
            Cause::Terminal(Terminal::NoProgress) => "terminal result without the progress under way",
            Cause::Continued => "",
            Cause::Duplicated => "events the client already had were delivered again",
            Cause::CursorReset => "the client resumed from a cursor an empty id had reset",
        }
    }
}

/// Whether a cause among `found` is another log (a `forked` verdict; for the rules that read
/// what others found: `resume_ok`).
pub(crate) fn forks(found: &[Found]) -> bool {
    found
        .iter()
        .any(|f| f.cause.is_some_and(|c| c.effect() == Effect::Fork))
}

/// Whether a cause among `found` is a loss or fabrication (a `gap`).
pub(crate) fn gaps(found: &[Found]) -> bool {
    found
        .iter()
        .any(|f| f.cause.is_some_and(|c| c.effect() == Effect::Gap))
}

/// The verdict of resumption `b` given what its rules `found`.
pub(crate) fn judge(b: &Boundary, found: &[Found]) -> ResumptionResult {
    let e = b.exchange;
    let (verdict, reason, first, unshown) = match &b.opening {
        Opening::Events(ev) => {
            let (verdict, reason) = from_causes(b, found);
            let unshown = found.iter().any(|f| f.cause == Some(Cause::Continued))
                && ev.ids.goes_on.is_none()
                && !ev.cut.app();
            (verdict, reason, ev.first_id.clone(), unshown)
        }
        opening => {
            let (verdict, reason) = early(opening);
            (verdict, reason, None, false)
        }
    };
    let reason = match b.window {
        Some(w) => format!("{reason} (checked against the stream's last {w} events)"),
        None => reason,
    };
    // A resumed connection that lost dense ids inside it lost events, whatever else could or
    // could not be judged.
    let (verdict, reason) = match verdict {
        Verdict::Resumed | Verdict::Unverifiable if b.inner_gap => (
            Verdict::Gap,
            format!("{reason}; dense ids skipped inside the resumed connection"),
        ),
        _ => (verdict, reason),
    };
    let served_later = match &b.opening {
        Opening::Empty(Empty::EndedPending { served_later } | Empty::Nothing { served_later }) => {
            *served_later
        }
        _ => None,
    };
    ResumptionResult {
        index: b.index,
        verdict,
        first_event_id: first,
        events: e.sse.events.len(),
        reason,
        continuity_unshown: unshown && verdict == Verdict::Resumed,
        served_later,
    }
}

/// The verdict and reason of an opening that ends the checks before the events.
fn early(opening: &Opening) -> (Verdict, String) {
    let unverifiable = |why: &str| (Verdict::Unverifiable, why.to_string());
    match opening {
        Opening::NoResponse => unverifiable("no response captured"),
        Opening::Redirected { status, to, next } => unverifiable(&format!(
            "HTTP {status}: redirected{}, followed by the GET in frame {next}",
            to.map(|l| format!(" to {l}")).unwrap_or_default()
        )),
        Opening::Refused { status } => (Verdict::Rejected, format!("HTTP {status}")),
        Opening::Ambiguous => unverifiable(
            "without a session, Last-Event-ID was delivered on several streams of this client",
        ),
        Opening::CursorUnknown { .. } => {
            unverifiable("Last-Event-ID not delivered on any captured stream")
        }
        Opening::NotSse => unverifiable("response is not an event stream"),
        Opening::NoCursor => unverifiable("no cursor"),
        Opening::CursorNotFound { windowed: true } => {
            unverifiable("cursor older than the events checked")
        }
        Opening::CursorNotFound { windowed: false } => {
            unverifiable("cursor not on an earlier connection of the stream")
        }
        Opening::CaptureGap => unverifiable("capture gap in the evidence"),
        Opening::Empty(Empty::AskedAgain { next_frame }) => (
            Verdict::Resumed,
            format!("no events before the connection ended; the client resumed again from the same Last-Event-ID in frame {next_frame}, so nothing was skipped here"),
        ),
        Opening::Empty(Empty::NothingOwed) => (
            Verdict::Resumed,
            "no events on the resumed connection, and none owed: the stream's request was answered at or before the Last-Event-ID".to_string(),
        ),
        // Nothing after L was shown, so nothing was shown skipped: what the empty answer cost
        // is the stream's (lost_response, empty_resume_loop), not this resumption's gap.
        Opening::Empty(Empty::EndedPending { .. }) => unverifiable(
            "the server ended the resumed stream with no events while its request was unanswered: no event after the Last-Event-ID was shown, and none shown skipped",
        ),
        Opening::Empty(Empty::Nothing { .. }) => unverifiable("no events on the resumed connection"),
        Opening::Events(_) => unreachable!("judged from its causes"),
    }
}

/// The verdict and reason of a resumption whose events were checked: its causes, those the
/// facts give and those its rules found, by their effects.
fn from_causes(b: &Boundary, found: &[Found]) -> (Verdict, String) {
    let Opening::Events(ev) = &b.opening else {
        unreachable!("called for events only");
    };
    let mut causes: Vec<Cause> = Vec::new();
    if b.inner_gap {
        causes.push(Cause::InnerGap);
    }
    if ev.ids.shared_counter {
        causes.push(Cause::SharedCounter);
    }
    if ev.progress_restart.is_some() && ev.ids.gap.is_some() {
        causes.push(Cause::IdsJumpedAhead);
    }
    causes.extend(found.iter().filter_map(|f| f.cause));
    causes.sort_by_key(|c| c.rank());
    let worst = causes
        .iter()
        .map(|c| c.effect())
        .max()
        .unwrap_or(Effect::None);
    let verdict = match worst {
        Effect::Fork => Verdict::Forked,
        Effect::Gap => Verdict::Gap,
        Effect::Unverified => Verdict::Unverifiable,
        Effect::None => Verdict::Resumed,
    };
    let mut phrases: Vec<String> = Vec::new();
    for c in causes {
        match c {
            Cause::Continued => {
                phrases.extend(judged_by(ev, phrases.is_empty(), worst == Effect::Gap));
            }
            c => phrases.push(c.phrase().to_string()),
        }
    }
    (verdict, phrases.join("; "))
}

/// What a boundary found continued was judged by: ordered ids, the application's sequence, or
/// neither (`first_reason`: no reason comes before it; `gap`: events were lost past the
/// cursor). `None` when the reasons before it say it.
fn judged_by(ev: &super::facts::boundary::Events, first_reason: bool, gap: bool) -> Option<String> {
    let (app, app_after) = (ev.cut.app(), ev.cut.app_after());
    let at = if gap { "at the cursor, " } else { "" };
    Some(match (ev.first.is_some(), ev.ids.goes_on, app, app_after) {
        (false, ..) => "no message after the cursor".to_string(),
        (true, Some(true), true, true) => format!("{at}ids and application sequence continue"),
        (true, Some(true), ..) => format!(
            "{at}ids continue; no application value {} the cut to check",
            if app { "after" } else { "before" }
        ),
        (true, Some(false), ..) if first_reason => {
            "the first id does not show the log going on from the cursor".to_string()
        }
        (true, Some(false), ..) => return None,
        (true, None, true, true) => {
            format!("{at}the application sequence continues; the ids cannot show order")
        }
        (true, None, ..) => "nothing contradicts a continuation, but neither the ids nor an application sequence across the cut can show one".to_string(),
    })
}

/// Once every resumption is judged: an empty answer over at once whose stream a later
/// resumption from the same `Last-Event-ID` carried on (`served_later`, judged `resumed`)
/// skipped nothing: it is `resumed` too (the client asked again for everything after L).
/// `frame_of`: the first frame of an exchange.
pub(crate) fn settle(
    results: &mut [ResumptionResult],
    exchange_of: impl Fn(usize) -> usize,
    frame_of: impl Fn(usize) -> u64,
) {
    // (The exchanges of resumed resumptions, gathered once: a client may loop for thousands.)
    let resumed_at: crate::hash::FastSet<usize> = results
        .iter()
        .filter(|o| o.verdict == Verdict::Resumed)
        .map(|o| exchange_of(o.index))
        .collect();
    for res in results {
        if let Some(x) = res.served_later.filter(|x| resumed_at.contains(x)) {
            res.verdict = Verdict::Resumed;
            res.reason = format!("the server answered with an empty stream and closed it; the client resumed again from the same Last-Event-ID in frame {}, which carried the stream on, so nothing was skipped here", frame_of(x));
        }
    }
}
