//! `cursor_reset_ignored`: the client resumed from a `Last-Event-ID` although, after that
//! event, it had read an event whose `id:` line was empty. WHATWG "server-sent events"
//! (§9.2.6, "id" field): an empty id sets the last event ID buffer to the empty string, and a
//! reconnection then sends no `Last-Event-ID` at all; a client that keeps the older cursor
//! (typescript-sdk #2769) is replayed what it already had.
//!
//! - Only when the last event with an `id:` line the client read after L had an empty one:
//!   a later non-empty id is a cursor of its own (`duplicate_delivery` says when the client
//!   resumed behind it).
//! - No effect on the verdict: what the replay repeated is `duplicate_delivery`'s.

use super::{Check, Found, Rule};
use crate::detect::context::Context;
use crate::detect::facts::boundary::Boundary;
use crate::detect::verdict::Cause;
use crate::detect::{flow_id, Kind, Severity};
use crate::http::EventRec;

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::CursorResetIgnored,
    severities: &[Severity::Warning],
    summary: "The client resumed from an older Last-Event-ID although an event with an empty `id:` had since reset its cursor.",
    checks: &[Check::Resumption(check)],
};

/// The event with an empty `id:` line that reset the cursor after L: the last event with an
/// `id:` line the client read after L on the stream, when its id is empty.
pub(crate) fn reset_after_l<'a>(b: &Boundary<'a>) -> Option<EventRec<'a>> {
    let cut = &b.events()?.cut;
    let last = cut.before[cut.lpos + 1..]
        .iter()
        .rev()
        .find(|ev| ev.2.sse.has_own_id)?;
    (last.2.sse.id == Some("")).then_some(last.2)
}

fn check(ctx: &Context, b: &Boundary, out: &mut Vec<Found>) {
    let Some(reset) = reset_after_l(b) else {
        return;
    };
    let cut = &b.events().expect("reset_after_l read the events").cut;
    let detail = format!(
        "The client resumed with Last-Event-ID {} in frame {} (flow {}), although after that event it had read one with an empty id line (frame {}, flow {}), which resets the last event ID: the reconnection should have carried no Last-Event-ID, and the server replays from the stale cursor.",
        b.leid(),
        b.exchange.frame(),
        flow_id(b.exchange),
        reset.sse.frame_first,
        flow_id(&ctx.exchanges[cut.cursor_exchange]),
    );
    let reset_flow = b.flow_of(ctx.exchanges, &reset);
    let mut f = b
        .finding(Kind::CursorResetIgnored, Severity::Warning, None, detail)
        .cite(b.exchange.flow_index, b.exchange.frame())
        .cite(reset_flow, reset.sse.frame_first);
    f.event_id = Some(String::new());
    f.expected = Some("no Last-Event-ID after an empty id line".into());
    f.observed = Some(format!("Last-Event-ID {}", b.leid()));
    out.push(Found::new(f, Cause::CursorReset));
}
