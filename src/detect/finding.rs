//! A finding (a row of the `findings` table, Zeek's `notice.log`) and its severity.

use super::Kind;
use crate::http::{EventRec, Exchange};

/// Severity of a finding (Zeek notice style).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Expected, healthy or correct-but-notable behaviour.
    Info,
    /// Suspicious or incomplete evidence.
    Warning,
    /// Messages were lost, duplicated or fabricated.
    Error,
}

impl Severity {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One finding (a notice.log row).
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// Session label (`Mcp-Session-Id` or `none`).
    pub session_id: String,
    /// Its kind ([`Kind::as_str`] is the `kind` column).
    pub kind: Kind,
    /// Severity.
    pub severity: Severity,
    /// Time of the first evidence, µs since the Unix epoch.
    pub ts: i64,
    /// Flow of the first evidence.
    pub flow_id: String,
    /// First frame of the evidence.
    pub frame: u64,
    /// The `Last-Event-ID` of the resumption concerned.
    pub last_event_id: Option<String>,
    /// The event id concerned.
    pub event_id: Option<String>,
    /// The JSON-RPC request id concerned (compact JSON).
    pub request_id: Option<String>,
    /// What a continuous log would have shown.
    pub expected: Option<String>,
    /// What the capture shows.
    pub observed: Option<String>,
    /// One sentence a postmortem can quote, naming the frames that prove it.
    pub detail: String,
    /// Every frame `detail` names (both ends of a range), and the first evidence (`flow_id`,
    /// `frame`): each once, ascending by flow, then frame.
    pub cited: Vec<Cited>,
}

/// A frame a finding cites, with the flow it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cited {
    /// Index of the flow (`F<index>` in every table). Flows are indexed globally, across
    /// vantage points.
    pub flow_index: usize,
    /// Frame number, in the numbering of the vantage point the flow belongs to (the tables'
    /// `frame` columns; from 1).
    pub frame: u64,
}

impl Finding {
    /// A finding whose evidence starts at exchange `e` (its request, else its response).
    pub(crate) fn at_exchange(
        session_id: String,
        kind: Kind,
        severity: Severity,
        e: &Exchange,
        detail: String,
    ) -> Finding {
        Finding {
            last_event_id: e.req_header("last-event-id").map(str::to_string),
            ..Finding::at_frame(
                session_id,
                kind,
                severity,
                (e.ts(), e.flow_index, e.frame()),
                detail,
            )
        }
    }

    /// A finding whose evidence starts at `(ts, flow index, frame)`, with no exchange behind it
    /// (a connection, a TLS record); its other fields empty.
    pub(crate) fn at_frame(
        session_id: String,
        kind: Kind,
        severity: Severity,
        (ts, flow_index, frame): (i64, usize, u64),
        detail: String,
    ) -> Finding {
        Finding {
            session_id,
            kind,
            severity,
            ts,
            flow_id: crate::tcp::FlowId(flow_index).to_string(),
            frame,
            last_event_id: None,
            event_id: None,
            request_id: None,
            expected: None,
            observed: None,
            detail,
            cited: Vec::new(),
        }
    }

    /// The same finding, citing frame `frame` of flow `flow_index` too (a frame its detail
    /// names).
    pub(crate) fn cite(mut self, flow_index: usize, frame: u64) -> Finding {
        self.add_cite(flow_index, frame);
        self
    }

    /// Cite frame `frame` of flow `flow_index` too (see [`Finding::cite`]).
    pub(crate) fn add_cite(&mut self, flow_index: usize, frame: u64) {
        self.cited.push(Cited { flow_index, frame });
    }

    /// Make [`Finding::cited`] what it promises once the rules are done: the first evidence
    /// added, frame 0 (written where a frame was not captured; frames count from 1) left out,
    /// sorted and deduplicated.
    pub(crate) fn settle_cited(&mut self) {
        let first = self
            .flow_id
            .strip_prefix('F')
            .and_then(|n| n.parse::<usize>().ok());
        if let Some(flow_index) = first {
            self.add_cite(flow_index, self.frame);
        }
        self.cited.retain(|c| c.frame != 0);
        self.cited.sort_unstable();
        self.cited.dedup();
    }

    /// The same finding, its evidence starting at event `ev` instead.
    pub(crate) fn at_event(mut self, ev: &EventRec) -> Finding {
        self.ts = ev.sse.ts;
        self.frame = ev.sse.frame_first;
        self.event_id = ev.sse.id.map(str::to_string).filter(|_| ev.sse.has_own_id);
        self
    }

    /// The same finding, its evidence starting at the response of `e` (when captured).
    pub(crate) fn at_response(mut self, e: &Exchange) -> Finding {
        self.ts = e.ts_response.unwrap_or(self.ts);
        self.frame = e.frame_response.unwrap_or(self.frame);
        self
    }
}

/// `F<n>` for a flow index.
pub(crate) fn flow_id(e: &Exchange) -> String {
    crate::tcp::FlowId(e.flow_index).to_string()
}

/// A number as a person writes it: an integer without a fraction, else as it is.
pub(crate) fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}
