//! What every rule reads: the session model, the exchanges, and the indices over them that
//! several rules need, each built once.

use crate::hash::{FastMap, FastSet};

use super::facts::crossed::{self, Crossed};
use super::facts::dead::{self, DeadSession};
use super::facts::gaps::{self, InnerGap};
use super::facts::history::requests_of_session;
use super::facts::refusals::{self, Refusals};
use super::facts::relation::IntIds;
use super::facts::replay::ReplayIndex;
use super::facts::responses::{self, Responses};
use super::facts::streams;
use super::facts::unanswered::{self, Unanswered};
use super::{ResumptionResult, Verdict};
use crate::detect::RefusedConnect;
use crate::http::Exchange;
use crate::mcp::Model;

/// A session's client requests: JSON-RPC id → progress token (the `_meta.progressToken`, else
/// the id), both compact JSON, and the set of those tokens.
pub(crate) type Requests = (FastMap<String, String>, FastSet<String>);

/// The capture as the rules see it.
pub(crate) struct Context<'a> {
    /// The session model.
    pub model: &'a Model,
    /// Every exchange, indexed as the model indexes them.
    pub exchanges: &'a [Exchange],
    /// The `--app-seq` JSON pointers, by index ([`crate::jsonrpc::Message::app_seq`]).
    pub app_seq: &'a [String],
    /// Time of the capture's last frame, µs since the Unix epoch.
    pub capture_end: i64,
    /// Where the events that resumed connections carry were delivered.
    pub replays: ReplayIndex,
    /// Every stream's plain-integer ids, read on first use.
    pub int_ids: IntIds,
    /// The client requests of each session that has a resumption.
    pub requests: FastMap<usize, Requests>,
    /// The connections whose dense ids skip inside them, in stream order, and their exchanges.
    pub inner_gaps: Vec<InnerGap<'a>>,
    pub inner_gapped: FastSet<usize>,
    /// The JSON-RPC responses each exchange delivered.
    pub responses: Responses<'a>,
    /// Per logical stream, the position of the connection by whose end its requests were all
    /// answered ([`streams::answered_at`]).
    pub answered: Vec<Option<usize>>,
    /// The sessions whose requests the server refused as unknown, and those of them it had
    /// lost (nothing served them after), with what the client did next.
    pub refusals: Vec<Refusals>,
    pub dead: Vec<DeadSession>,
    /// Requests of a session in flight at once with one id.
    pub crossed: Vec<Crossed<'a>>,
    /// Requests without a captured response; empty until [`Context::judged`].
    pub unanswered: Vec<Unanswered<'a>>,
    /// The capture's refused connection attempts, in time order.
    pub refused: &'a [RefusedConnect],
    /// The capture's TLS connections ([`crate::tls::FlowTls`]).
    pub tls: &'a [crate::tls::FlowTls],
}

impl<'a> Context<'a> {
    /// Build the indices over `model` and its `exchanges`.
    pub(crate) fn new(
        model: &'a Model,
        exchanges: &'a [Exchange],
        app_seq: &'a [String],
        capture_end: i64,
        refused: &'a [RefusedConnect],
        tls: &'a [crate::tls::FlowTls],
    ) -> Context<'a> {
        let mut requests: FastMap<usize, Requests> = FastMap::default();
        for r in &model.resumptions {
            requests.entry(r.session).or_insert_with(|| {
                let reqs = requests_of_session(model, exchanges, r.session);
                let tokens = reqs.values().cloned().collect();
                (reqs, tokens)
            });
        }
        let responses = responses::responses(exchanges);
        let answered = streams::answered_at(model, exchanges, &responses);
        let inner_gaps = gaps::inner_gaps(model, exchanges);
        let refusals = refusals::refusals(model, exchanges);
        Context {
            model,
            exchanges,
            app_seq,
            capture_end,
            refused,
            tls,
            replays: ReplayIndex::build(model, exchanges),
            int_ids: IntIds::default(),
            requests,
            inner_gapped: inner_gaps.iter().map(|g| g.exchange).collect(),
            inner_gaps,
            responses,
            answered,
            dead: dead::dead_sessions(model, exchanges, &refusals),
            refusals,
            crossed: crossed::crossed(model, exchanges),
            unanswered: Vec::new(),
        }
    }

    /// Once every resumption is judged: the requests without a captured response, read with
    /// the connections whose break a resumption was shown to heal (judged `resumed` with the
    /// continuation shown: nothing was lost there).
    pub(crate) fn judged(&mut self, results: &[ResumptionResult]) {
        let healed: FastSet<usize> = results
            .iter()
            .filter(|o| o.verdict == Verdict::Resumed && !o.continuity_unshown)
            .filter_map(|o| self.model.resumptions[o.index].cursor.map(|(x, _)| x))
            .collect();
        self.unanswered = unanswered::unanswered(self, &healed);
    }

    /// The label of session `si` (`Mcp-Session-Id`, or `none`).
    pub(crate) fn label(&self, si: usize) -> String {
        self.model.sessions[si].label()
    }
}
