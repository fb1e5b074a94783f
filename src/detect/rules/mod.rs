//! The rules: one file per finding kind, each declaring its kind, its severities, the one
//! sentence that explains it (the README's finding table gives the same sentence), and its
//! checks over the facts ([`crate::detect::facts`]). [`RULES`] lists them all.
//!
//! Adding a detector is one file here and one line in [`RULES`].
//!
//! A check runs in one of four phases, in this order, each over the rules in registry order:
//! [`Check::Connections`] on each connection's own events; [`Check::Resumption`] on each
//! resumption's facts, what it finds deciding the resumption's verdict
//! ([`crate::detect::verdict`]); [`Check::Verdict`] once that verdict is known; and
//! [`Check::Capture`] over sessions and streams once every resumption is judged.

mod app_seq_desync;
mod backend_switch;
mod batch_outside_era;
mod buffered_delivery;
mod concurrent_stream_connections;
mod connection_refused;
mod cross_session_replay;
mod cross_stream_replay;
mod cursor_reset_ignored;
mod dead_listen_stream;
mod duplicate_delivery;
mod duplicate_event_id;
mod duplicate_request_id;
mod empty_resume_loop;
mod id_gap;
mod id_regression;
mod id_restart;
mod idle_cut;
mod listen_reconnect_loop;
mod lost_in_transit;
mod lost_response;
mod missing_event_id;
mod nonstandard_session_status;
mod partly_undecrypted;
mod planned_poll;
mod response_unverifiable;
mod resume_ok;
mod resume_orphaned;
mod resume_rejected;
mod resume_without_cursor;
mod session_refused;
mod session_reinitialized;
mod stale_session_reuse;
mod stale_stream_conflict;
mod suspect_terminal;
mod undecrypted_tls;
mod unknown_last_event_id;

use super::context::Context;
use super::facts::boundary::Boundary;
use super::verdict::{Cause, ResumptionResult};
use super::{Finding, Kind, Severity};

/// One rule: a finding kind and how it is found.
pub struct Rule {
    /// The kind it emits.
    pub kind: Kind,
    /// The severities its findings have, the usual first (`error, or warning`).
    pub severities: &'static [Severity],
    /// What a finding of this kind means, in one sentence.
    pub summary: &'static str,
    /// Its checks.
    pub(crate) checks: &'static [Check],
}

/// A check of a rule, by the facts it reads.
pub(crate) enum Check {
    /// Over each connection's own events, before any resumption is judged.
    Connections(fn(&Context, &mut Vec<Finding>)),
    /// Over one resumption's facts and what the rules before it in [`RULES`] found there;
    /// what it finds, with the cause each finding gives, decides the verdict.
    Resumption(fn(&Context, &Boundary, &mut Vec<Found>)),
    /// Over one resumption once its verdict is known.
    Verdict(fn(&Context, &Boundary, &ResumptionResult, &[Found]) -> Option<Finding>),
    /// Over sessions, streams and hops, once every resumption is judged.
    Capture(fn(&Context, &mut Vec<Finding>)),
}

/// A finding at a resumption and what it means for the verdict (`None`: nothing, as for a
/// refusal, whose verdict the opening gives).
pub(crate) struct Found {
    /// The finding.
    pub finding: Finding,
    /// Its cause.
    pub cause: Option<Cause>,
}

impl Found {
    /// A finding with its cause.
    pub(crate) fn new(finding: Finding, cause: Cause) -> Found {
        Found {
            finding,
            cause: Some(cause),
        }
    }

    /// Whether any of `found` is of kind `kind`.
    pub(crate) fn any(found: &[Found], kind: Kind) -> bool {
        found.iter().any(|f| f.finding.kind == kind)
    }
}

/// Every rule, in the order of the README's finding table.
pub static RULES: &[&Rule] = &[
    &id_regression::RULE,
    &id_restart::RULE,
    &missing_event_id::RULE,
    &id_gap::RULE,
    &app_seq_desync::RULE,
    &suspect_terminal::RULE,
    &duplicate_delivery::RULE,
    &lost_response::RULE,
    &session_refused::RULE,
    &duplicate_request_id::RULE,
    &duplicate_event_id::RULE,
    &cross_stream_replay::RULE,
    &cross_session_replay::RULE,
    &lost_in_transit::RULE,
    &backend_switch::RULE,
    &unknown_last_event_id::RULE,
    &connection_refused::RULE,
    &undecrypted_tls::RULE,
    &partly_undecrypted::RULE,
    &resume_without_cursor::RULE,
    &cursor_reset_ignored::RULE,
    &empty_resume_loop::RULE,
    &listen_reconnect_loop::RULE,
    &resume_orphaned::RULE,
    &concurrent_stream_connections::RULE,
    &stale_stream_conflict::RULE,
    &dead_listen_stream::RULE,
    &stale_session_reuse::RULE,
    &nonstandard_session_status::RULE,
    &idle_cut::RULE,
    &buffered_delivery::RULE,
    &response_unverifiable::RULE,
    &resume_rejected::RULE,
    &resume_ok::RULE,
    &session_reinitialized::RULE,
    &batch_outside_era::RULE,
    &planned_poll::RULE,
];

/// The rule of a kind.
pub fn rule(kind: Kind) -> &'static Rule {
    RULES
        .iter()
        .copied()
        .find(|r| r.kind == kind)
        .expect("every kind has its rule (checked by a test)")
}

/// The checks of every rule, in registry order.
pub(crate) fn checks() -> impl Iterator<Item = &'static Check> {
    RULES.iter().flat_map(|r| r.checks.iter())
}

#[cfg(test)]
mod tests {
    use super::{Check, RULES};
    use crate::detect::Kind;

    /// Every kind has exactly one rule, each with a check and one sentence; `resume_ok`, which
    /// reads what the other rules found at a resumption, comes after every other resumption
    /// check.
    #[test]
    fn one_rule_per_kind() {
        for k in Kind::ALL {
            assert_eq!(RULES.iter().filter(|r| r.kind == *k).count(), 1, "{k}");
        }
        assert_eq!(RULES.len(), Kind::ALL.len());
        for r in RULES {
            assert!(
                !r.checks.is_empty() && !r.severities.is_empty(),
                "{}",
                r.kind
            );
            let s = r.summary;
            assert!(s.ends_with('.') && !s[..s.len() - 1].contains(". "), "{s}");
        }
        let resumption: Vec<Kind> = RULES
            .iter()
            .filter(|r| r.checks.iter().any(|c| matches!(c, Check::Resumption(_))))
            .map(|r| r.kind)
            .collect();
        assert_eq!(resumption.last(), Some(&Kind::ResumeOk));
    }
}
