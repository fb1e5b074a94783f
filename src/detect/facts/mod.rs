//! Facts: what the rules judge by, each computed once from the session model and the
//! exchanges — per resumption ([`boundary`]), per stream and connection ([`streams`],
//! [`gaps`]), per session ([`unanswered`], [`dead`]) — and the indices over the capture they
//! read ([`replay`], [`responses`], [`history`]).

pub(crate) mod backends;
pub(crate) mod boundary;
pub(crate) mod crossed;
pub(crate) mod dead;
pub(crate) mod duplicates;
pub(crate) mod gaps;
pub(crate) mod history;
pub(crate) mod refusals;
pub(crate) mod relation;
pub(crate) mod replay;
pub(crate) mod responses;
pub(crate) mod series;
pub(crate) mod streams;
pub(crate) mod unanswered;

use crate::hash::FastMap;
use crate::http::EventRec;

/// One event of a stream's history: (connection, index of the event on it, the event).
pub(crate) type Ev<'a> = (usize, usize, EventRec<'a>);

/// What the resumptions of a capture have read so far, kept from one to the next (they are
/// judged in order): per stream its history read ([`history::History`]), per session the
/// cursors its streams delivered ([`history::SessionCursors`]).
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// By stream.
    pub history: FastMap<usize, history::History>,
    /// By session.
    pub cursors: FastMap<usize, history::SessionCursors>,
}
