//! The JSON-RPC responses each exchange delivered to the client, read once for the rules and
//! facts that need them (JSON-RPC 2.0 §5; MCP "Sending Messages to the Server": in a JSON body
//! or as SSE events).

use crate::http::Exchange;
use crate::jsonrpc::Kind;

/// JSON-RPC responses delivered to the client, per exchange: (id, ts, frame).
pub(crate) type Responses<'a> = Vec<Vec<(&'a str, i64, u64)>>;

/// [`Responses`] of every exchange, read once for the detectors that use them.
pub(crate) fn responses(exchanges: &[Exchange]) -> Responses<'_> {
    exchanges.iter().map(responses_in).collect()
}

/// JSON-RPC responses delivered to the client in one exchange: (id, ts, frame).
fn responses_in(e: &Exchange) -> Vec<(&str, i64, u64)> {
    let mut v: Vec<(&str, i64, u64)> = Vec::new();
    for m in e
        .rpc
        .response
        .iter()
        .filter(|m| matches!(m.kind, Kind::Response | Kind::Error))
    {
        if let Some(id) = m.id.as_deref() {
            v.push((
                id,
                e.ts_response.unwrap_or(0),
                e.frame_response.unwrap_or(0),
            ));
        }
    }
    // Only the events with a response are decoded.
    let answering = e
        .sse
        .events
        .briefs()
        .filter(|(_, b)| b.has_response && !b.truncated)
        .filter_map(|(i, _)| e.sse.events.get(i));
    for ev in answering {
        for m in ev
            .messages
            .refs()
            .filter(|m| matches!(m.kind, Kind::Response | Kind::Error))
        {
            if let Some(id) = m.id {
                v.push((id, ev.sse.ts, ev.sse.frame_first));
            }
        }
    }
    v
}
