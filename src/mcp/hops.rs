//! One HTTP exchange seen at several hops (a proxy's client and backend legs) or by several
//! vantage points: observations of one exchange, never duplicates.
//!
//! A proxy receives the request, forwards it, receives the backend's response and forwards that:
//! so a backend observation has the same method, `Mcp-Session-Id`,
//! `Last-Event-ID` and request body as the client-facing one, was sent after the client's request
//! and before the proxy's response began, and its response began no later than the proxy's. The
//! earliest observation of a chain is the client-facing hop — what the client received; the others
//! say which backend (`resp_h:resp_p`) produced the events. The same connection seen by two
//! vantage points (same 5-tuple) is one observation too; the copy with fewer capture gaps is kept.
//!
//! Backends are named by the deepest backend hop's `resp_h:resp_p` when it was captured, else by
//! a backend-identifying response header (`X-Backend`, `X-Served-By`, `X-Upstream`, or the
//! names given).

use crate::anomaly::Code;
use crate::hash::FastMap as HashMap;

use crate::http::Exchange;

/// Response headers that name the backend, checked in this order after any given by the user.
/// (`Via` names the proxies on the way, not the backend: give it with `--backend-header` where a
/// tier of proxies is what tells the backends apart.)
pub const BACKEND_HEADERS: [&str; 3] = ["x-backend", "x-served-by", "x-upstream"];

/// How exchanges relate across hops.
#[derive(Debug, Clone, Default)]
pub struct Hops {
    /// For each exchange: the client-facing exchange it is another observation of, or `None`.
    pub primary: Vec<Option<usize>>,
    /// For each exchange: its backend hops (for a client-facing one), in request order.
    pub backend_hops: Vec<Vec<usize>>,
    /// For each exchange: the backend that produced its response, when known.
    pub backend: Vec<Option<String>>,
    /// Limits the linking reached (`model.hop_candidates`).
    pub anomalies: crate::anomaly::Anomalies,
}

/// The later observations of the same request, on other connections, one observation is
/// compared with, at most: a copy or a forwarded request follows within milliseconds, after a
/// burst of identical ones at most; thousands of identical requests inside the window
/// (stateless clients sending the same bytes) would make the pairing quadratic.
const MAX_CANDIDATES: usize = 1024;

/// How long after the client's request a proxy may still forward it, µs (it takes milliseconds;
/// the window bounds the search among many identical requests).
const FORWARD_WINDOW_US: i64 = 10_000_000;

/// Microseconds two observations of one instant at one vantage point may differ by.
const JITTER_US: i64 = 2_000;

fn path(target: &str) -> &str {
    // An absolute-form target (proxy requests) carries scheme and authority.
    let t = target
        .strip_prefix("http://")
        .or_else(|| target.strip_prefix("https://"))
        .map(|rest| rest.find('/').map_or("/", |i| &rest[i..]))
        .unwrap_or(target);
    t
}

/// (method, `Mcp-Session-Id`, `Last-Event-ID`, request body hash).
pub(crate) type RequestKey<'a> = (&'a str, Option<&'a str>, Option<&'a str>, u64);

/// The identity of a request across hops (and vantage points, [`crate::vantage`]). The path is left out: proxies rewrite it
/// (`location /api/mcp { proxy_pass http://b/mcp; }`); the same-connection copies of two vantage
/// points also compare it ([`same_request`]).
pub(crate) fn key(e: &Exchange) -> Option<RequestKey<'_>> {
    let h = e.request.as_ref()?;
    Some((
        h.method.as_str(),
        e.req_header("mcp-session-id"),
        e.req_header("last-event-id"),
        e.req_body_hash,
    ))
}

/// Where each member of a group of identical requests (in time order) is followed by one on
/// another flow: `next_other[k]` is the first position after `k` whose flow is not `k`'s.
fn next_on_other_flow(exchanges: &[Exchange], members: &[usize]) -> Vec<usize> {
    let flow = |k: usize| exchanges[members[k]].flow_index;
    let mut next_other = vec![members.len(); members.len()];
    for k in (0..members.len().saturating_sub(1)).rev() {
        next_other[k] = if flow(k + 1) != flow(k) {
            k + 1
        } else {
            next_other[k + 1]
        };
    }
    next_other
}

/// For the member at position `i`: the later members on other flows than its own, in order. A
/// copy or a forwarded request is on another connection; runs of the member's own flow (a
/// client repeating one request on a keep-alive connection) are skipped at once.
fn later_on_other_flows<'a>(
    exchanges: &'a [Exchange],
    members: &'a [usize],
    next_other: &'a [usize],
    i: usize,
) -> impl Iterator<Item = usize> + 'a {
    let flow = move |k: usize| exchanges[members[k]].flow_index;
    let own = flow(i);
    let mut j = i + 1;
    std::iter::from_fn(move || {
        while j < members.len() && flow(j) == own {
            j = next_other[j];
        }
        let k = j;
        j += 1;
        members.get(k).copied()
    })
}

/// The same request line (for copies of one connection).
fn same_request(a: &Exchange, b: &Exchange) -> bool {
    match (&a.request, &b.request) {
        (Some(x), Some(y)) => path(&x.target) == path(&y.target),
        _ => false,
    }
}

fn same_connection(a: &Exchange, b: &Exchange) -> bool {
    a.client.is_some()
        && (a.client, a.client_port) == (b.client, b.client_port)
        && a.server.is_some()
        && a.server == b.server
}

/// Whether `b` can be the backend hop of client-facing `a`.
fn forwards(a: &Exchange, b: &Exchange) -> bool {
    let (Some(ra), Some(rb)) = (a.ts_request, b.ts_request) else {
        return false;
    };
    if a.flow_index == b.flow_index || a.server == b.server {
        return false;
    }
    // Sent after the client's request, before the proxy's answer began.
    let answer = a.ts_response.unwrap_or(i64::MAX);
    if rb.saturating_add(JITTER_US) < ra || rb > answer.saturating_add(JITTER_US) {
        return false;
    }
    // The backend's answer began no later than the proxy's.
    let timely = match (a.ts_response, b.ts_response) {
        (Some(pa), Some(pb)) => pb <= pa.saturating_add(JITTER_US),
        (Some(_), None) => true,
        (None, _) => true,
    };
    timely && same_answer(a, b)
}

/// Whether two observations carry the same answer, as far as both were captured: the status, the
/// `Mcp-Session-Id` it assigns, the JSON-RPC messages of a JSON body, the first SSE events. Two
/// real exchanges with the same request (one client asking two servers, two clients asking one
/// proxy) differ here.
fn same_answer(a: &Exchange, b: &Exchange) -> bool {
    if a.response.is_none() || b.response.is_none() {
        return true;
    }
    if a.status() != b.status() || a.is_sse != b.is_sse {
        return false;
    }
    if let (Some(x), Some(y)) = (
        a.resp_header("mcp-session-id"),
        b.resp_header("mcp-session-id"),
    ) {
        if x != y {
            return false;
        }
    }
    fn msgs(e: &Exchange) -> Vec<(Option<&str>, Option<&str>)> {
        e.rpc
            .response
            .iter()
            .map(|m| (m.id.as_deref(), m.method.as_deref()))
            .collect()
    }
    if !a.rpc.response.is_empty() && !b.rpc.response.is_empty() && msgs(a) != msgs(b) {
        return false;
    }
    a.same_first_events(b)
}

/// Link the observations of each exchange. `exchanges` are in time order; `backend_headers` are
/// extra response header names (lower case) that name the backend.
pub fn link(exchanges: &[Exchange], backend_headers: &[String]) -> Hops {
    let n = exchanges.len();
    let mut hops = Hops {
        primary: vec![None; n],
        backend_hops: vec![Vec::new(); n],
        backend: vec![None; n],
        anomalies: Default::default(),
    };
    let mut groups: HashMap<_, Vec<usize>> = HashMap::default();
    for (i, e) in exchanges.iter().enumerate() {
        if let Some(k) = key(e) {
            groups.entry(k).or_default().push(i);
        }
    }
    let mut keys: Vec<_> = groups.into_iter().collect();
    keys.sort_by_key(|(_, v)| v[0]);
    for (_, members) in keys.iter().filter(|(_, v)| v.len() > 1) {
        let next_other = next_on_other_flow(exchanges, members);
        let others = |i| later_on_other_flows(exchanges, members, &next_other, i);
        // Whether the candidate after the last one compared with member `i` (`next`) was still
        // within `window` µs of it: the limit cut it off.
        let capped = |i: usize, next: Option<usize>, window: i64| {
            let end = exchanges[members[i]].ts().saturating_add(window);
            next.is_some_and(|b| exchanges[b].ts() <= end)
        };
        let mut cut: Vec<usize> = Vec::new();
        // The same connection seen twice (two vantage points): keep the better copy.
        for (i, &a) in members.iter().enumerate() {
            if hops.primary[a].is_some() {
                continue;
            }
            let mut within = true;
            let mut cands = others(i);
            for b in cands.by_ref().take(MAX_CANDIDATES) {
                let (ea, eb) = (&exchanges[a], &exchanges[b]);
                // Members are in time order: nothing later than a second can be a copy.
                if eb.ts() > ea.ts().saturating_add(1_000_000) {
                    within = false;
                    break;
                }
                if hops.primary[b].is_none()
                    && same_connection(ea, eb)
                    && same_request(ea, eb)
                    && ea.ts().saturating_sub(eb.ts()).saturating_abs() < 1_000_000
                    && ea.flow_index != eb.flow_index
                {
                    hops.primary[b] = Some(a);
                }
            }
            if within && capped(i, cands.next(), 1_000_000) {
                cut.push(a);
            }
        }
        // Proxy chains: each observation forwards to the next.
        for (i, &a) in members.iter().enumerate() {
            if hops.primary[a].is_some() {
                continue;
            }
            let mut last = a;
            let mut within = true;
            let mut cands = others(i);
            for b in cands.by_ref().take(MAX_CANDIDATES) {
                // A proxy forwards within the window (and before its answer, see `forwards`).
                if exchanges[b].ts() > exchanges[a].ts().saturating_add(FORWARD_WINDOW_US) {
                    within = false;
                    break;
                }
                if hops.primary[b].is_some() {
                    continue;
                }
                if forwards(&exchanges[last], &exchanges[b])
                    || forwards(&exchanges[a], &exchanges[b])
                {
                    hops.primary[b] = Some(a);
                    hops.backend_hops[a].push(b);
                    last = b;
                }
            }
            if within && capped(i, cands.next(), FORWARD_WINDOW_US) {
                cut.push(a);
            }
        }
        // Said once per group of identical requests the limit cut.
        cut.sort_unstable();
        cut.dedup();
        if let Some(&first) = cut.first() {
            hops.anomalies.add(exchanges[first].anomaly(
                Code::ModelHopCandidates,
                format!(
                    "{} of {} identical requests were compared with only the next {MAX_CANDIDATES} on other connections: a copy or forwarded request beyond them is not linked as a hop",
                    cut.len(),
                    members.len()
                ),
            ));
        }
    }
    // Where copies of one connection differ in capture gaps, the most complete one speaks: chosen
    // once per group, every other copy points at it.
    let mut copies: HashMap<usize, Vec<usize>> = HashMap::default();
    for b in 0..n {
        if let Some(a) = hops.primary[b] {
            if same_connection(&exchanges[a], &exchanges[b]) {
                copies.entry(a).or_default().push(b);
            }
        }
    }
    let mut groups: Vec<(usize, Vec<usize>)> = copies.into_iter().collect();
    groups.sort_unstable();
    for (a, others) in groups {
        let gaps = |x: usize| {
            let e = &exchanges[x];
            (u8::from(e.resp_gap) + u8::from(e.req_gap), x)
        };
        let best = std::iter::once(a)
            .chain(others.iter().copied())
            .min_by_key(|&x| gaps(x))
            .unwrap_or(a);
        if best == a {
            continue;
        }
        hops.primary[best] = None;
        for x in std::iter::once(a).chain(others.iter().copied()) {
            if x != best {
                hops.primary[x] = Some(best);
            }
        }
        hops.backend_hops[best] = std::mem::take(&mut hops.backend_hops[a]);
        for h in hops.backend_hops[best].clone() {
            hops.primary[h] = Some(best);
        }
    }
    for (i, e) in exchanges.iter().enumerate() {
        let own = header_backend(e, backend_headers);
        hops.backend[i] = match hops.backend_hops[i].last() {
            Some(&b) => {
                let named = header_backend(&exchanges[b], backend_headers).or(own);
                match (exchanges[b].server, named) {
                    (Some(addr), Some(name)) => {
                        Some(format!("{} ({name})", std::net::SocketAddr::from(addr)))
                    }
                    (Some(addr), None) => Some(std::net::SocketAddr::from(addr).to_string()),
                    (None, named) => named,
                }
            }
            None => own,
        };
    }
    hops
}

/// The backend a response names in one of the backend headers.
fn header_backend(e: &Exchange, extra: &[String]) -> Option<String> {
    extra
        .iter()
        .map(String::as_str)
        .chain(BACKEND_HEADERS)
        .find_map(|h| e.resp_header(h))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}
