//! Detectors: a verdict per resumption and findings per session.
//!
//! The decision rules are those of `docs/resumption.md`: on a
//! resumption the first event id on the new connection is checked against
//! the client's cursor `L` (a fork: it was already delivered, or the id
//! sequence restarts, or it carries no id), and the transport id and the
//! application's own counter (`notifications/progress` per progressToken, or
//! `--app-seq` pointers) must advance together; a terminal result right
//! after `L` with none of the progress that was under way is suspect.
//! Event ids are compared only as their format allows ([`crate::mcp::ids`]).
//!
//! Beyond them, the failure signatures real SDKs and deployments are known to
//! produce (`docs/wire.md`, "Known failure patterns"; a public report of each in
//! parentheses, repositories under modelcontextprotocol/ unless named):
//!
//! | module | kinds |
//! |---|---|
//! | `resume` | `resume_ok`, `resume_rejected`, `unknown_last_event_id`, `missing_event_id`, `id_regression`, `id_restart`, `id_gap`, `duplicate_delivery`, `app_seq_desync`, `suspect_terminal`, `cross_stream_replay` (servers #4087), `cross_session_replay` (typescript-sdk #1004) |
//! | `session` | `lost_response`, `response_unverifiable`, `duplicate_delivery` of responses |
//! | `streams` | `duplicate_event_id` (typescript-sdk PR #2335), `concurrent_stream_connections` (punkpeye/fastmcp PR #331), `planned_poll` (2025-11-25 polling), `idle_cut` (cloudflare/agents #1583, open-webui/mcpo #73) |
//! | `lifecycle` | `stale_session_reuse` and `session_reinitialized` (python-sdk #1676, typescript-sdk #1708), `resume_without_cursor` (typescript-sdk #2499, inspector #723), `empty_resume_loop` (rust-sdk #958), `batch_outside_era` |
//! | `proxy` | `buffered_delivery` (java-sdk PR #848), `backend_switch` (PrefectHQ/fastmcp #482), `lost_in_transit` |
//!
//! Each finding names in `detail` what happened, in one sentence, and the
//! frames that prove it.

pub mod calls;
mod lifecycle;
mod proxy;
mod replay;
mod resume;
mod session;
mod streams;

use crate::http::Exchange;
use crate::mcp::Model;

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
    /// Stable kind name, e.g. `id_regression`.
    pub kind: &'static str,
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
}

impl Finding {
    /// A finding whose evidence starts at exchange `e` (its request, else its response).
    pub(crate) fn at_exchange(
        session_id: String,
        kind: &'static str,
        severity: Severity,
        e: &Exchange,
        detail: String,
    ) -> Finding {
        Finding {
            session_id,
            kind,
            severity,
            ts: e.ts(),
            flow_id: flow_id(e),
            frame: e.frame(),
            last_event_id: e.req_header("last-event-id").map(str::to_string),
            event_id: None,
            request_id: None,
            expected: None,
            observed: None,
            detail,
        }
    }
    /// The same finding, its evidence starting at event `ev` instead.
    pub(crate) fn at_event(mut self, ev: &crate::http::EventRec) -> Finding {
        self.ts = ev.sse.ts;
        self.frame = ev.sse.frame_first;
        self.event_id = ev.sse.id.map(str::to_string).filter(|_| ev.sse.has_own_id);
        self
    }
}

/// Verdict of one resumption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The new connection continued the log.
    Resumed,
    /// The server started another log (ids regress, restart, or are missing).
    Forked,
    /// The log continued with events missing or fabricated.
    Gap,
    /// The server refused the resumption with an error status.
    Rejected,
    /// The capture cannot prove either way.
    Unverifiable,
}

impl Verdict {
    /// How bad it is, for the worst of several: another log (4), then loss (3), then what the
    /// capture cannot tell (2), then a loud refusal (1); resumed is 0.
    pub fn badness(self) -> u8 {
        match self {
            Verdict::Forked => 4,
            Verdict::Gap => 3,
            Verdict::Unverifiable => 2,
            Verdict::Rejected => 1,
            Verdict::Resumed => 0,
        }
    }

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Resumed => "resumed",
            Verdict::Forked => "forked",
            Verdict::Gap => "gap",
            Verdict::Rejected => "rejected",
            Verdict::Unverifiable => "unverifiable",
        }
    }
}

/// Per-resumption result.
#[derive(Debug, Clone)]
pub struct ResumptionResult {
    /// Index into `Model::resumptions`.
    pub index: usize,
    /// The verdict.
    pub verdict: Verdict,
    /// First event id on the resumed connection (a message event with its own id).
    pub first_event_id: Option<String>,
    /// Events on the resumed connection.
    pub events: usize,
    /// Why the verdict, in a few words.
    pub reason: String,
    /// Verdict `resumed` with nothing against it, but with ids that cannot show order and no
    /// application sequence before the cut: the continuation is not shown, only not contradicted.
    pub continuity_unshown: bool,
    /// For an empty answer over at once (rust-sdk #958): the exchange of the next resumption
    /// from the same `Last-Event-ID` that was not one. When that one is `resumed`, so is this
    /// one (it skipped nothing: the client asked again for everything after L).
    pub served_later: Option<usize>,
}

/// Everything the detectors concluded.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    /// The session model.
    pub model: Model,
    /// One result per resumption.
    pub resumptions: Vec<ResumptionResult>,
    /// Findings, ordered by time, session and kind.
    pub findings: Vec<Finding>,
    /// Limits the model and the detectors reached (`model.hop_candidates`, `model.deliveries`,
    /// `detect.history_window`).
    pub anomalies: crate::anomaly::Anomalies,
    /// The exchanges (indices into the exchanges) whose SSE events skipped dense ids inside the
    /// connection: an `id_gap` not at a resumption's cursor. Their streams' verdict is `gap`.
    pub id_gapped: crate::hash::FastSet<usize>,
    /// Every JSON-RPC request and what became of it ([`calls::build`]).
    pub calls: Vec<calls::Call>,
}

/// Run every detector.
/// `capture_end`: time of the capture's last frame, µs since the Unix epoch.
pub fn run(model: Model, exchanges: &[Exchange], app_seq: &[String], capture_end: i64) -> Analysis {
    let mut findings = Vec::new();
    let mut results = Vec::new();
    // Client requests per session (id → progress token) and their progress tokens, built once
    // for every resumption.
    type Requests = (
        crate::hash::FastMap<String, String>,
        crate::hash::FastSet<String>,
    );
    let mut requests: crate::hash::FastMap<usize, Requests> = Default::default();
    let replays = replay::ReplayIndex::build(&model, exchanges);
    let int_ids = resume::IntIds::default();
    let mut history: crate::hash::FastMap<usize, resume::History> = Default::default();
    let mut cursors: crate::hash::FastMap<usize, resume::SessionCursors> = Default::default();
    // Connections whose dense ids skip inside them: a resumption there lost events after its
    // boundary, as an app_seq_desync inside it says.
    let gapped = streams::dense_id_gaps(&model, exchanges, &mut findings);
    for (i, r) in model.resumptions.iter().enumerate() {
        let (reqs, tokens) = requests.entry(r.session).or_insert_with(|| {
            let reqs = resume::requests_of_session(&model, exchanges, r.session);
            let tokens = reqs.values().cloned().collect();
            (reqs, tokens)
        });
        let first = findings.len();
        let result = resume::check(
            &model,
            exchanges,
            i,
            r,
            reqs,
            tokens,
            app_seq,
            &replays,
            &int_ids,
            &mut history,
            &mut cursors,
            gapped.contains(&r.exchange),
            &mut findings,
        );
        proxy::backend_switch(&model, exchanges, r, &result, first, &mut findings);
        results.push(result);
    }
    // Empty answers followed by a resumption from the same cursor that carried the stream on
    // (the exchanges of resumed resumptions, gathered once: a client may loop for thousands).
    let resumed_at: crate::hash::FastSet<usize> = results
        .iter()
        .filter(|o| o.verdict == Verdict::Resumed)
        .map(|o| model.resumptions[o.index].exchange)
        .collect();
    for res in &mut results {
        if let Some(x) = res.served_later.filter(|x| resumed_at.contains(x)) {
            res.verdict = Verdict::Resumed;
            res.reason = format!("the server answered with an empty stream and closed it; the client resumed again from the same Last-Event-ID in frame {}, which carried the stream on, so nothing was skipped here", exchanges[x].frame());
        }
    }
    // Read once for the detectors that need them: the responses each exchange delivered, and
    // when each stream's requests were all answered.
    let responses = session::responses(exchanges);
    let answered = streams::answered_at(&model, exchanges, &responses);
    // Broken connections a resumption was shown to continue from: nothing was lost there.
    let healed: crate::hash::FastSet<usize> = results
        .iter()
        .filter(|o| o.verdict == Verdict::Resumed && !o.continuity_unshown)
        .filter_map(|o| model.resumptions[o.index].cursor.map(|(x, _)| x))
        .collect();
    session::lost_responses(
        &model,
        exchanges,
        &responses,
        &healed,
        capture_end,
        &mut findings,
    );
    session::duplicate_responses(&model, exchanges, &responses, &mut findings);
    streams::duplicate_event_ids(&model, exchanges, &mut findings);
    streams::concurrent_connections(&model, exchanges, &mut findings);
    streams::planned_polls(&model, exchanges, &answered, &mut findings);
    streams::idle_cuts(&model, exchanges, &answered, &mut findings);
    lifecycle::dead_sessions(&model, exchanges, &mut findings);
    lifecycle::resumes_without_cursor(&model, exchanges, &answered, &mut findings);
    lifecycle::empty_resume_loops(&model, exchanges, &mut findings);
    lifecycle::batches_outside_era(&model, exchanges, &mut findings);
    proxy::buffered_delivery(&model, exchanges, &mut findings);
    proxy::lost_in_transit(&model, exchanges, &mut findings);
    findings.sort_by(|a, b| {
        (a.ts, &a.session_id, a.kind, a.frame).cmp(&(b.ts, &b.session_id, b.kind, b.frame))
    });
    // The model's limits, and the history limit, said once per stream it cut.
    let mut model = model;
    let mut anomalies = std::mem::take(&mut model.anomalies);
    let mut cut: Vec<(usize, &resume::History)> = history
        .iter()
        .filter(|(_, h)| h.windowed > 0)
        .map(|(&st, h)| (st, h))
        .collect();
    cut.sort_unstable_by_key(|&(st, _)| st);
    for (st, h) in cut {
        let e = h.first_windowed.map(|x| &exchanges[x]);
        anomalies.add(crate::anomaly::Anomaly::new(
            "detect.history_window",
            e.map(|e| e.frame()),
            e.map(flow_id),
            format!(
                "stream S{st}: its resumptions had read {} events of its history; {} resumption(s) from here on were checked against the stream's last {} events only",
                resume::HISTORY_BUDGET,
                h.windowed,
                resume::HISTORY_WINDOW
            ),
        ));
    }
    let calls = calls::build(&model, exchanges, &findings);
    Analysis {
        model,
        resumptions: results,
        findings,
        anomalies,
        id_gapped: gapped,
        calls,
    }
}

/// `F<n>` for a flow index.
pub(crate) fn flow_id(e: &Exchange) -> String {
    crate::tcp::FlowId(e.flow_index).to_string()
}
