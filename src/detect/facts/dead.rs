//! Sessions the server declared gone (404, or a status it uses instead) and what the client did
//! next (MCP 2025-03-26 …
//! 2025-11-25 "Session Management": a client that receives 404 for its session MUST start a
//! new session with an `initialize` request without a session id).

use crate::hash::{FastMap as HashMap, FastSet as HashSet};

use super::refusals::Refusals;
use crate::http::Exchange;
use crate::mcp::{is_initialize, Model};

/// A session the server answered 404 and that no later 2xx revived.
#[derive(Debug, Clone)]
pub(crate) struct DeadSession {
    /// The session.
    pub session: usize,
    /// Its `Mcp-Session-Id`.
    pub id: String,
    /// The exchange refused (the first, to any request but a DELETE, before the client's own
    /// successful DELETE).
    pub dead: usize,
    /// When the refusal came, µs since the Unix epoch.
    pub t404: i64,
    /// The later requests from the same client address that still carried the dead id (no
    /// DELETE, none after the client's own successful DELETE), in time order.
    pub stale: Vec<usize>,
    /// The client's first `initialize` after the 404 that obtained another session id, after
    /// which the dead id was no longer used.
    pub reinit: Option<usize>,
    /// Whether this is the first dead session that `reinit` recovers from (an initialize is
    /// reported once).
    pub first_link: bool,
}

/// The dead sessions of the capture, in session order: those refused ([`Refusals`]) that
/// nothing served after their first refusal.
///
/// Clients are told apart by address only: applications sharing one address count as one
/// client. A session served after a refusal was not dead: some server had it
/// (`session_refused`).
pub(crate) fn dead_sessions(
    model: &Model,
    exchanges: &[Exchange],
    refusals: &[Refusals],
) -> Vec<DeadSession> {
    let mut linked: HashSet<usize> = HashSet::default();
    // The initializes of each client address, in order of (time, index).
    let mut initializes: HashMap<Option<std::net::IpAddr>, Vec<(i64, usize)>> = HashMap::default();
    for x in (0..exchanges.len())
        .filter(|&x| model.hops.primary[x].is_none() && is_initialize(&exchanges[x]))
    {
        initializes
            .entry(exchanges[x].client)
            .or_default()
            .push((exchanges[x].ts(), x));
    }
    for v in initializes.values_mut() {
        v.sort_unstable();
    }
    let mut out = Vec::new();
    for r in refusals.iter().filter(|r| r.served_after.is_empty()) {
        if let Some(mut d) = dead_session(model, exchanges, r, &initializes) {
            d.first_link = d.reinit.is_some_and(|x| linked.insert(x));
            out.push(d);
        }
    }
    out
}

/// The session of refusals `r` as a dead one ([`DeadSession`]; `first_link` unset).
fn dead_session(
    model: &Model,
    exchanges: &[Exchange],
    r: &Refusals,
    initializes: &HashMap<Option<std::net::IpAddr>, Vec<(i64, usize)>>,
) -> Option<DeadSession> {
    let (si, sid) = (r.session, r.id.as_str());
    let s = &model.sessions[si];
    let carries = |e: &Exchange| e.req_header("mcp-session-id") == Some(sid);
    let deleted = r.deleted.unwrap_or(i64::MAX);
    let dead = *r.refused.first()?;
    let d = &exchanges[dead];
    let t404 = d.ts_response.unwrap_or(d.ts());
    // The client's next initialize that started another session.
    let reinit = initializes.get(&d.client).and_then(|v| {
        v[v.partition_point(|&(t, _)| t <= t404)..]
            .iter()
            .map(|&(_, x)| x)
            .find(|&x| {
                model.exchange_session[x] != si
                    && model.sessions[model.exchange_session[x]].id.is_some()
            })
    });
    let reinit_ts = reinit.map(|x| exchanges[x].ts()).unwrap_or(i64::MAX);
    let stale: Vec<usize> = s
        .exchanges
        .iter()
        .copied()
        .filter(|&x| {
            let e = &exchanges[x];
            x != dead
                && e.ts() > t404
                && e.client == d.client
                && carries(e)
                && e.method() != "DELETE"
                && e.ts() < deleted
        })
        .collect();
    // Requests with the dead id after the re-initialise: not this client's recovery (another
    // application on the same address initialised), so no link and no all-clear.
    let after_reinit = stale.iter().any(|&x| exchanges[x].ts() > reinit_ts);
    Some(DeadSession {
        session: si,
        id: sid.to_string(),
        dead,
        t404,
        stale,
        reinit: reinit.filter(|_| !after_reinit),
        first_link: false,
    })
}
