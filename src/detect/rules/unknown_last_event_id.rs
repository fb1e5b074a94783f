//! `unknown_last_event_id`: a resumption presented a `Last-Event-ID` that no captured stream
//! of its session delivered. A warning: the capture is incomplete or the client invented a
//! cursor — an info when the capture itself could explain it (it lost bytes of the session's
//! responses before, or the session began before the capture).

use super::{Check, Found, Rule};
use crate::detect::context::Context;
use crate::detect::facts::boundary::{Boundary, Opening};
use crate::detect::{flow_id, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::UnknownLastEventId,
    severities: &[Severity::Warning, Severity::Info],
    summary: "The client resumed from a cursor that no captured stream of its session delivered.",
    checks: &[Check::Resumption(check)],
};

fn check(_: &Context, b: &Boundary, out: &mut Vec<Found>) {
    let Opening::CursorUnknown { lost, began_before } = b.opening else {
        return;
    };
    let e = b.exchange;
    let head = format!(
        "The resumption GET (frame {}, flow {}) presented Last-Event-ID {} that no captured stream of this session delivered",
        e.frame(),
        flow_id(e),
        b.leid()
    );
    // The exchange the detail names besides the GET, and whether as a range of frames.
    let other = lost.map(|g| (g, true)).or(began_before.map(|g| (g, false)));
    let (severity, detail) = match (lost, began_before) {
        (Some(g), _) => (
            Severity::Info,
            format!(
                "{head}, but the capture lost bytes of the session's responses before it (flow {}, frames {}–{}), which could have carried it.",
                flow_id(g),
                g.frame(),
                g.frame_last.unwrap_or(g.frame())
            ),
        ),
        (None, Some(g)) => (
            Severity::Info,
            format!(
                "{head}, but the session began before the capture (its first captured request, frame {}, already carried its Mcp-Session-Id): a stream before the capture could have delivered it.",
                g.frame()
            ),
        ),
        (None, None) => (
            Severity::Warning,
            format!("{head}: the capture is incomplete or the client invented a cursor."),
        ),
    };
    let mut f = b
        .finding(Kind::UnknownLastEventId, severity, None, detail)
        .cite(e.flow_index, e.frame());
    if let Some((g, range)) = other {
        f.add_cite(g.flow_index, g.frame());
        if range {
            f.add_cite(g.flow_index, g.frame_last.unwrap_or(g.frame()));
        }
    }
    f.observed = Some("cursor never delivered".into());
    out.push(Found {
        finding: f,
        cause: None,
    });
}
