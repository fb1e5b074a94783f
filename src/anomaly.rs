//! Counted anomalies: malformed or truncated input that the run survives.
//!
//! Like Zeek's weird.log: each anomaly has a stable dotted code
//! (`tcp.ooo_buffer_full`, `http.bad_chunk_size`, `sse.line_too_long`, …),
//! the frame and flow it concerns when known, and a short detail. The run
//! keeps at most [`MAX_KEPT`] rows but counts every occurrence per code.

use std::collections::BTreeMap;

/// Rows kept in full; past this only the per-code counts grow.
pub const MAX_KEPT: usize = 100_000;

/// One anomaly row.
#[derive(Debug, Clone, PartialEq)]
pub struct Anomaly {
    /// Stable dotted code, e.g. `tcp.overlap_conflict`.
    pub code: &'static str,
    /// Frame number where it was seen, when known.
    pub frame: Option<u64>,
    /// Flow id (`F<n>`) when it concerns one connection.
    pub flow_id: Option<String>,
    /// One-line human detail.
    pub detail: String,
}

impl Anomaly {
    /// Build an anomaly row.
    pub fn new(
        code: &'static str,
        frame: Option<u64>,
        flow_id: Option<String>,
        detail: String,
    ) -> Self {
        Anomaly {
            code,
            frame,
            flow_id,
            detail,
        }
    }
}

/// A bounded collection of anomalies with exact per-code counts.
#[derive(Debug, Default, Clone)]
pub struct Anomalies {
    /// Kept rows, in the order they were raised.
    pub rows: Vec<Anomaly>,
    /// Exact count per code, including rows not kept.
    pub counts: BTreeMap<&'static str, u64>,
}

impl Anomalies {
    /// Record one anomaly.
    pub fn add(&mut self, a: Anomaly) {
        *self.counts.entry(a.code).or_insert(0) += 1;
        if self.rows.len() < MAX_KEPT {
            self.rows.push(a);
        }
    }
    /// Record one anomaly whose detail is written only when its row is kept (for anomalies that
    /// can come with every frame).
    pub fn add_with(
        &mut self,
        code: &'static str,
        frame: Option<u64>,
        flow_id: Option<String>,
        detail: impl FnOnce() -> String,
    ) {
        if self.rows.len() < MAX_KEPT {
            self.add(Anomaly::new(code, frame, flow_id, detail()));
        } else {
            *self.counts.entry(code).or_insert(0) += 1;
        }
    }
    /// Count of every anomaly, kept or not.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// Count of one code.
    pub fn count(&self, code: &str) -> u64 {
        self.counts.get(code).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past the rows kept, a lazy detail is not written, and every occurrence is still counted.
    #[test]
    fn add_with_counts_past_the_rows_kept() {
        let mut a = Anomalies::default();
        let mut written = 0;
        for i in 0..MAX_KEPT + 5 {
            a.add_with("x.y", Some(i as u64), None, || {
                written += 1;
                String::new()
            });
        }
        assert_eq!((a.rows.len(), written), (MAX_KEPT, MAX_KEPT));
        assert_eq!(a.count("x.y"), (MAX_KEPT + 5) as u64);
    }
}
