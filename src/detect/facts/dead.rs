//! Sessions the server declared gone (404) and what the client did next (MCP 2025-03-26 …
//! 2025-11-25 "Session Management": a client that receives 404 for its session MUST start a
//! new session with an `initialize` request without a session id).

use crate::hash::{FastMap as HashMap, FastSet as HashSet};

use crate::http::Exchange;
use crate::mcp::{is_initialize, Model};

/// A session the server answered 404 and that no later 2xx revived.
#[derive(Debug, Clone)]
pub(crate) struct DeadSession {
    /// The session.
    pub session: usize,
    /// Its `Mcp-Session-Id`.
    pub id: String,
    /// The exchange answered 404 (the first, to any request but a DELETE, before the client's
    /// own successful DELETE).
    pub dead: usize,
    /// When the 404 came, µs since the Unix epoch.
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

/// The dead sessions of the capture, in session order.
///
/// Clients are told apart by address only: applications sharing one address count as one
/// client. A session whose id a later request got a 2xx answer for was not dead (replicas
/// without sticky routing, reported by `backend_switch` where backends are known).
pub(crate) fn dead_sessions(model: &Model, exchanges: &[Exchange]) -> Vec<DeadSession> {
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
    for si in 0..model.sessions.len() {
        if let Some(mut d) = dead_session(model, exchanges, si, &initializes) {
            d.first_link = d.reinit.is_some_and(|x| linked.insert(x));
            out.push(d);
        }
    }
    out
}

/// Session `si` when the server declared it dead ([`DeadSession`]; `first_link` unset).
fn dead_session(
    model: &Model,
    exchanges: &[Exchange],
    si: usize,
    initializes: &HashMap<Option<std::net::IpAddr>, Vec<(i64, usize)>>,
) -> Option<DeadSession> {
    let s = &model.sessions[si];
    let sid = s.id.as_deref()?;
    if !s.era.stateful() {
        return None;
    }
    let carries = |e: &Exchange| e.req_header("mcp-session-id") == Some(sid);
    // After the client's own successful DELETE a 404 is the expected answer.
    let deleted = s
        .exchanges
        .iter()
        .map(|&x| &exchanges[x])
        .filter(|e| e.method() == "DELETE" && (200..300).contains(&e.status()))
        .map(|e| e.ts())
        .min()
        .unwrap_or(i64::MAX);
    let &dead = s.exchanges.iter().find(|&&x| {
        let e = &exchanges[x];
        carries(e) && e.status() == 404 && e.method() != "DELETE" && e.ts() < deleted
    })?;
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
    let later: Vec<usize> = s
        .exchanges
        .iter()
        .copied()
        .filter(|&x| {
            let e = &exchanges[x];
            x != dead && e.ts() > t404 && e.client == d.client && carries(e)
        })
        .collect();
    if later
        .iter()
        .any(|&x| (200..300).contains(&exchanges[x].status()))
    {
        return None;
    }
    let stale: Vec<usize> = later
        .into_iter()
        .filter(|&x| exchanges[x].method() != "DELETE" && exchanges[x].ts() < deleted)
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
