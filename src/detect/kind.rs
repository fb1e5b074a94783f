//! Finding kinds: one variant per kind, with its stable name (the `kind` column of the
//! `findings` table, Zeek's `notice.log` `note`). The rule that emits each kind is in
//! `src/detect/rules/<name>.rs`; what each means is on `docs/findings.md`.

use std::fmt;

macro_rules! kinds {
    ($($(#[doc = $doc:literal])* $variant:ident => $name:literal,)*) => {
        /// A finding kind ([`Kind::as_str`] gives its stable name).
        ///
        /// Ordered by name, as the `findings` table sorts rows of one time, session and frame.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Kind {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Kind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [Kind] = &[$(Kind::$variant,)*];

            /// The stable snake_case name, e.g. `id_regression`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Kind::$variant => $name,)*
                }
            }

            /// What the kind means, in one sentence (its doc comment, as docs/findings.md
            /// lists it).
            pub fn doc(self) -> &'static str {
                match self {
                    $(Kind::$variant => concat!($($doc),*).trim(),)*
                }
            }

            /// The kind of a stable name; `None` for a name that is no kind.
            pub fn from_name(name: &str) -> Option<Kind> {
                match name {
                    $($name => Some(Kind::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

kinds! {
    /// A resumed stream began with an event the client already had.
    IdRegression => "id_regression",
    /// A resumed stream's log began again: a new id sequence, or progress from its start.
    IdRestart => "id_restart",
    /// A message on a resumed stream without an `id:` line.
    MissingEventId => "missing_event_id",
    /// Dense event ids skipped.
    IdGap => "id_gap",
    /// Transport ids went on while the application's counter jumped.
    AppSeqDesync => "app_seq_desync",
    /// A final result right after the cursor without the progress under way.
    SuspectTerminal => "suspect_terminal",
    /// The same event, progress or response delivered twice.
    DuplicateDelivery => "duplicate_delivery",
    /// A request never answered.
    LostResponse => "lost_response",
    /// One connection delivered one event twice.
    DuplicateEventId => "duplicate_event_id",
    /// A resumption replayed another stream's events.
    CrossStreamReplay => "cross_stream_replay",
    /// A resumption replayed another session's events.
    CrossSessionReplay => "cross_session_replay",
    /// Events a backend sent vanished between hops.
    LostInTransit => "lost_in_transit",
    /// A resumption served by another backend than its cursor's.
    BackendSwitch => "backend_switch",
    /// A cursor no captured stream delivered.
    UnknownLastEventId => "unknown_last_event_id",
    /// A broken stream reopened without its cursor.
    ResumeWithoutCursor => "resume_without_cursor",
    /// A resumption from a cursor an empty `id:` line had reset.
    CursorResetIgnored => "cursor_reset_ignored",
    /// Resumptions from one cursor answered empty, again and again.
    EmptyResumeLoop => "empty_resume_loop",
    /// A stateless server's standalone GET stream that never carried a byte.
    DeadListenStream => "dead_listen_stream",
    /// Standalone GETs answered empty and over at once, again and again.
    ListenReconnectLoop => "listen_reconnect_loop",
    /// New connections to the server of a broken stream refused with RST.
    ConnectionRefused => "connection_refused",
    /// A resumed standalone stream the server no longer writes to.
    ResumeOrphaned => "resume_orphaned",
    /// A reopened standalone stream refused 409 while the server held a stale one.
    StaleStreamConflict => "stale_stream_conflict",
    /// Two live connections of one logical stream.
    ConcurrentStreamConnections => "concurrent_stream_connections",
    /// Requests with a session id the server declared gone.
    StaleSessionReuse => "stale_session_reuse",
    /// SSE connections cut at one idle time or age.
    IdleCut => "idle_cut",
    /// A proxy that held the stream and released it in bursts.
    BufferedDelivery => "buffered_delivery",
    /// A request whose response may lie outside the capture.
    ResponseUnverifiable => "response_unverifiable",
    /// A resumption refused with an error status.
    ResumeRejected => "resume_rejected",
    /// A resumption that continued the log.
    ResumeOk => "resume_ok",
    /// A new session after a 404: the correct recovery.
    SessionReinitialized => "session_reinitialized",
    /// A JSON-RPC batch in a revision without batches.
    BatchOutsideEra => "batch_outside_era",
    /// MCP 2025-11-25 polling: a planned close and a timely resume.
    PlannedPoll => "planned_poll",
    /// Requests of a live session refused as for an unknown one.
    SessionRefused => "session_refused",
    /// An unknown session refused with another status than 404.
    NonstandardSessionStatus => "nonstandard_session_status",
    /// Two requests in flight with one JSON-RPC id.
    DuplicateRequestId => "duplicate_request_id",
    /// TLS application data that was not decrypted.
    UndecryptedTls => "undecrypted_tls",
    /// A session partly inside TLS connections that were not decrypted.
    PartlyUndecrypted => "partly_undecrypted",
}

impl PartialOrd for Kind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Kind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Kind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::Kind;

    /// Names are unique snake_case, each read back to its kind, and order follows the names.
    #[test]
    fn names_round_trip_and_order_by_name() {
        let mut names: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        for (k, n) in Kind::ALL.iter().zip(&names) {
            assert_eq!(Kind::from_name(n), Some(*k));
            assert!(
                n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{n}"
            );
        }
        let mut by_kind = Kind::ALL.to_vec();
        by_kind.sort();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Kind::ALL.len());
        assert_eq!(
            by_kind.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
            names
        );
        assert_eq!(Kind::from_name("no_such_kind"), None);
    }
}
