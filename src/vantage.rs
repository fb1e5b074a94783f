//! Several vantage points of one incident: a capture on the client, one on the load balancer,
//! one per replica. Each is reassembled on its own (its own flow table, its own clock); their
//! exchanges are then merged, and [`crate::mcp::hops`] recognises one exchange seen at several
//! points. Clocks differ between machines, so the offset of each vantage point to the first is
//! estimated from exchanges seen at both and removed before the exchanges are merged.
//!
//! The estimate is the median, over exchanges of vantage `k` that have a twin at vantage 0 (same
//! method, `Mcp-Session-Id`, `Last-Event-ID` and request body), of the difference of their times:
//! of the request times for twins on the same connection (same 5-tuple), used when there are any;
//! else, for twins at adjacent hops, the mean of the request and response differences, where the
//! proxy's forwarding delay on the way in and on the way out cancel. Offsets are estimated
//! against the first vantage point only.

use crate::hash::FastMap as HashMap;

use crate::http::Exchange;

/// The clock offset of one vantage point to the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClockOffset {
    /// Its clock minus the first vantage point's, in microseconds; `None` when no exchange was
    /// seen at both (then its times are left as captured).
    pub offset_us: Option<i64>,
    /// How many twin exchanges the estimate rests on.
    pub pairs: usize,
    /// Whether the twins were the same connection (exact) rather than adjacent hops.
    pub same_connection: bool,
}

use crate::mcp::hops::{key, RequestKey as Key};

/// Largest offset considered, µs: twins further apart are different exchanges.
const MAX_OFFSET_US: i64 = 3_600_000_000;

fn median(mut v: Vec<i64>) -> Option<i64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    Some(v[v.len() / 2])
}

/// Estimate the clock offset of every vantage point (index 0 is the reference: offset 0).
pub fn estimate_offsets(vantages: &[Vec<Exchange>]) -> Vec<ClockOffset> {
    let mut out = vec![ClockOffset::default(); vantages.len()];
    let Some(reference) = vantages.first() else {
        return out;
    };
    out[0] = ClockOffset {
        offset_us: Some(0),
        pairs: 0,
        same_connection: true,
    };
    if vantages.len() < 2 {
        return out;
    }
    // Reference exchanges by key, sorted by request time.
    let mut by_key: HashMap<Key, Vec<(i64, usize)>> = HashMap::default();
    for (i, e) in reference.iter().enumerate() {
        if let (Some(k), Some(t)) = (key(e), e.ts_request) {
            by_key.entry(k).or_default().push((t, i));
        }
    }
    for v in by_key.values_mut() {
        v.sort_unstable();
    }
    for (k, exchanges) in vantages.iter().enumerate().skip(1) {
        let (mut same, mut hop) = (Vec::new(), Vec::new());
        for e in exchanges {
            let (Some(kk), Some(t)) = (key(e), e.ts_request) else {
                continue;
            };
            let Some(cands) = by_key.get(&kk) else {
                continue;
            };
            // The nearest twin in time.
            let at = cands.partition_point(|(ct, _)| *ct < t);
            let nearest = [at.checked_sub(1), Some(at)]
                .into_iter()
                .flatten()
                .filter_map(|i| cands.get(i))
                .min_by_key(|(ct, _)| t.saturating_sub(*ct).saturating_abs());
            let Some(&(ct, ci)) = nearest else { continue };
            let d = t.saturating_sub(ct);
            if d.saturating_abs() > MAX_OFFSET_US {
                continue;
            }
            let r = &reference[ci];
            if r.client.is_some()
                && (r.client, r.client_port, r.server) == (e.client, e.client_port, e.server)
            {
                same.push(d);
            } else {
                // Adjacent hops: the backend's request comes after the client's by the forwarding
                // delay, its answer before the proxy's by about as much; the middle cancels both.
                let mid = match (r.ts_response, e.ts_response) {
                    (Some(rr), Some(er)) => d.saturating_add(er.saturating_sub(rr)) / 2,
                    _ => d,
                };
                hop.push(mid);
            }
        }
        out[k] = if !same.is_empty() {
            ClockOffset {
                pairs: same.len(),
                offset_us: median(same),
                same_connection: true,
            }
        } else {
            ClockOffset {
                pairs: hop.len(),
                offset_us: median(hop),
                same_connection: false,
            }
        };
    }
    out
}
