//! `lost_response`: a client request of the session got no JSON-RPC response on any stream by
//! the end of the capture (JSON-RPC 2.0 §5: the server MUST reply to a request), and nothing in
//! or around the capture could hold one ([`crate::detect::facts::unanswered`]).
//!
//! - Not when the request was cancelled while its stream was whole, or raced a healed
//!   stream's response at its own pace (MCP "Cancellation").
//! - Not when the client deleted the session, or closed the legacy stream, while it streamed.
//! - Not in MCP 2026-07-28 when the client closed the stream or re-sent the request.
//! - `response_unverifiable` instead where the capture lost bytes, or ended, around it — but
//!   not for an event stream without event ids that broke: it cannot be resumed (python-sdk
//!   #3441).

use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::unanswered::{Unanswered, Why};
use crate::detect::{flow_id, Finding, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::LostResponse,
    severities: &[Severity::Error],
    summary: "A request of the session never got its JSON-RPC response on any stream by the end of the capture.",
    checks: &[Check::Capture(check)],
};

fn check(ctx: &Context, out: &mut Vec<Finding>) {
    for u in &ctx.unanswered {
        let e = &ctx.exchanges[u.exchange];
        let head = format!(
            "Request {} ({}), sent in frame {} on flow {}, never received a JSON-RPC response",
            u.id,
            u.method,
            e.frame(),
            flow_id(e)
        );
        let mut cited = vec![(e.flow_index, e.frame())];
        let detail = match u.why {
            Why::Nothing if u.crossed => format!(
                "{head} on its own stream by the end of the capture: another request with its id was in flight at once, and the response with that id came only on that one's stream."
            ),
            Why::Nothing => {
                format!("{head} on any stream of the session by the end of the capture.")
            }
            Why::Unresumable => {
                cited.push((e.flow_index, e.frame_last.unwrap_or(e.frame())));
                format!(
                    "{head}: its event stream ended without it in frame {} and carried no event id, so no resumption could bring it.",
                    e.frame_last.unwrap_or(e.frame())
                )
            }
            _ => continue,
        };
        out.push(unanswered_finding(
            ctx,
            u,
            (Kind::LostResponse, Severity::Error),
            detail,
            &cited,
        ));
    }
}

/// The finding of request `u` (`lost_response` or `response_unverifiable`).
pub(super) fn unanswered_finding(
    ctx: &Context,
    u: &Unanswered,
    (kind, severity): (Kind, Severity),
    detail: String,
    cited: &[(usize, u64)],
) -> Finding {
    let e = &ctx.exchanges[u.exchange];
    let mut f = Finding {
        session_id: ctx.label(u.session),
        kind,
        severity,
        ts: e.ts(),
        flow_id: flow_id(e),
        frame: e.frame(),
        last_event_id: None,
        event_id: None,
        request_id: Some(u.id.to_string()),
        expected: Some(format!("a response to request {} ({})", u.id, u.method)),
        observed: Some("no response on any stream by the end of the capture".into()),
        detail,
        cited: Vec::new(),
    };
    for &(flow_index, frame) in cited {
        f.add_cite(flow_index, frame);
    }
    f
}
