//! `response_unverifiable`: a request has no captured response, but the response may lie in
//! bytes or time the capture does not hold ([`crate::detect::facts::unanswered::Why`]): the
//! capture lost bytes of the session's responses that could carry it, a stream that could
//! carry it was still open (or about to be resumed) when the capture ended, or its own stream
//! broke shortly before the capture ended and what the client did next is not in it.

use super::lost_response::unanswered_finding;
use super::{Check, Rule};
use crate::detect::context::Context;
use crate::detect::facts::unanswered::Why;
use crate::detect::{flow_id, Finding, Kind, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    kind: Kind::ResponseUnverifiable,
    severities: &[Severity::Info],
    summary: "A request has no captured response, but the response may lie in bytes or time the capture does not hold.",
    checks: &[Check::Capture(check)],
};

fn check(ctx: &Context, out: &mut Vec<Finding>) {
    for u in &ctx.unanswered {
        let e = &ctx.exchanges[u.exchange];
        let head = format!(
            "Request {} ({}), sent in frame {} on flow {}, has no captured response",
            u.id,
            u.method,
            e.frame(),
            flow_id(e)
        );
        let mut cited = vec![(e.flow_index, e.frame())];
        let detail = match u.why {
            Why::Nothing | Why::Unresumable => continue,
            Why::BrokeAtEnd => {
                cited.push((e.flow_index, e.frame_last.unwrap_or(e.frame())));
                format!(
                "{head}; its stream ended without it in frame {}, shortly before the capture did, and what the client did next (a resumption, a retry) is not in the capture.",
                e.frame_last.unwrap_or(e.frame())
            )
            }
            Why::StreamOpen(o) => {
                cited.push((o.flow_index, o.frame()));
                format!(
                "{head}, but the capture ended while a stream that could carry it was still open or about to be resumed (flow {}, from frame {}).",
                flow_id(o),
                o.frame()
            )
            }
            Why::CaptureLost(g) => {
                cited.push((g.flow_index, g.frame()));
                cited.push((g.flow_index, g.frame_last.unwrap_or(g.frame())));
                format!(
                "{head}, but the capture lost bytes of the session's responses (flow {}, frames {}–{}), which could hold it.",
                flow_id(g),
                g.frame(),
                g.frame_last.unwrap_or(g.frame())
            )
            }
        };
        out.push(unanswered_finding(
            ctx,
            u,
            (Kind::ResponseUnverifiable, Severity::Info),
            detail,
            &cited,
        ));
    }
}
