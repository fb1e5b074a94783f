//! The finding kinds, one module per kind (`tests/kinds/<kind>.rs`, named as
//! `mcpcap::detect::Kind::as_str` names it, as its rule is `src/detect/rules/<kind>.rs`). Each
//! module holds its kind's triggers and non-triggers: packet-built captures (see `common`) on
//! which it must fire, with the finding's key fields, and look-alikes on which it must not, and
//! where `docs/findings.md` names one, the fixture capture of `fixtures/`.
//!
//! Findings are compared as the sorted multiset of (kind, severity), so a pair of captures
//! shows exactly what one difference on the wire changes. Real-SDK captures of the same
//! behaviours are checked against their `MANIFEST.json` in `tests/manifest.rs`.

#[path = "../common/mod.rs"]
mod common;

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

/// A module here for every kind, and a kind for every module.
#[test]
fn one_module_per_kind() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kinds");
    let mut modules: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".rs")
                .filter(|n| *n != "main")
                .map(str::to_string)
        })
        .collect();
    modules.sort_unstable();
    let mut kinds: Vec<&str> = mcpcap::detect::Kind::ALL
        .iter()
        .map(|k| k.as_str())
        .collect();
    kinds.sort_unstable();
    assert_eq!(modules, kinds);
}
