//! # mcpcap
//!
//! Reads packet captures of MCP Streamable HTTP traffic and reports, per
//! session, whether SSE resumption kept the session's event log intact.
//!
//! The pipeline, one module per stage, each a sans-IO state machine fed by
//! `push`-style calls and emitting into a sink:
//!
//! 1. [`capture`] — pcap/pcapng files → [`capture::Frame`]s (constant memory).
//! 2. [`decode`] — link/IP/TCP headers → [`decode::Segment`]s.
//! 3. [`tcp`] — flow table and per-direction reassembly → in-order bytes and gaps.
//! 4. [`tls`] — TLS connections recognised on any port by their records: version, cipher, SNI,
//!    ALPN from the hellos; with a key log their records are opened and the plaintext goes on.
//! 5. [`http`] — HTTP/1.x framing and request/response pairing → [`http::Exchange`]s;
//!    `text/event-stream` bodies go through [`sse`], JSON through [`jsonrpc`]; each response's
//!    events are kept in a compact [`http::EventLog`].
//! 6. [`mcp`] — sessions, logical streams and resumptions from the exchanges; [`mcp::hops`]
//!    makes one exchange of its observations at a proxy's legs or several vantage points.
//! 7. [`detect`] — verdicts and findings per resumption and session.
//! 8. [`report`] — rows → polars tables → terminal, CSV, Parquet, NDJSON; the exchanges also as
//!    a HAR 1.2 document ([`report::har`]).
//!
//! Nothing in the library opens files, reads clocks or prints; [`Analyzer`]
//! ties stages 2–5 together (on worker threads with [`shard`]), [`analyze_exchanges`]
//! stages 6–7 (or [`model_of`] and [`analyze_model`] one at a time). [`vantage`] aligns the
//! clocks of several vantage points; [`synth`] writes large captures for benchmarks; [`pcapng`]
//! writes the packets `mcpcap extract` selects; [`hash`] compares payloads; [`text`] holds short
//! strings.

pub mod anomaly;
pub mod budget;
pub mod capture;
pub mod chunks;
pub mod decode;
pub mod detect;
pub mod hash;
pub mod http;
pub mod jsonrpc;
pub mod mcp;
pub mod pcapng;
pub mod report;
pub mod shard;
pub mod sse;
pub mod synth;
pub mod tcp;
pub mod text;
pub mod tls;
pub mod vantage;

pub use decode::{conn_key, ConnKey};
pub use text::Short;

use crate::anomaly::Code;
use anomaly::{Anomalies, Anomaly};
use capture::Frame;
use decode::Decoded;
use http::{HttpLayer, HttpOptions};
use tcp::{FlowTable, ReassemblyLimits};

/// Options of a run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Keep only TCP connections with one of these ports on either side (empty: all).
    pub ports: Vec<u16>,
    /// JSON pointers to application sequence fields (in addition to progress).
    pub app_seq: Vec<String>,
    /// Reassembly limits.
    pub reassembly: ReassemblyLimits,
    /// The bounds on the batch elements and events each HTTP stage keeps to the end of the run.
    pub kept: budget::Kept,
    /// Read one capture file only: no later file will be checked for continuing this one's
    /// connections ([`Analyzer::continuity`]), so the connections seen are not tracked (in a
    /// flood, 16 bytes each).
    pub single_file: bool,
    /// The TLS stage's options: secrets to decrypt TLS connections with.
    pub tls: tls::TlsOptions,
}

/// Frame-level counters of a run.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// Frames seen.
    pub frames: u64,
    /// TCP segments decoded.
    pub tcp_segments: u64,
    /// Frames that were not TCP.
    pub not_tcp: u64,
    /// TCP segments left out by `--port`.
    pub filtered: u64,
    /// Time of the latest frame, µs since the Unix epoch: where the capture ends.
    pub ts_last: Option<i64>,
}

/// Stages 2–5: frames in, exchanges and flows out.
#[derive(Debug)]
pub struct Analyzer {
    /// The flow table.
    pub flows: FlowTable,
    /// The HTTP layer with its exchanges.
    pub http: HttpLayer,
    /// Frame-level anomalies (decode, capture).
    pub anomalies: Anomalies,
    /// Counters.
    pub counters: Counters,
    options: Options,
    shards: Option<shard::Shards>,
    /// Flows, exchanges and sessions so far, when no workers run (theirs are in `shards`).
    live: shard::Live,
    /// Exchanges already counted in `live`.
    live_exchanges: usize,
    /// Connections seen on this thread (by a 64-bit hash of their address pair, either order:
    /// 16 bytes each in a flood) and whether they are open: what tells a rotated part of this
    /// capture from another capture ([`Analyzer::continuity`]).
    seen: hash::FastMap<u64, bool>,
}

/// A 64-bit hash of an address pair.
fn key_hash(k: &ConnKey) -> u64 {
    use std::hash::BuildHasher;
    // A fixed seed: the same pair hashes alike in every analyzer of a run.
    foldhash::fast::FixedState::with_seed(0x6d63_7063_6170).hash_one(k)
}

/// Note a segment in an analyzer's `seen` connections: a SYN without ACK opens its connection,
/// a FIN or RST closes it.
fn see(seen: &mut hash::FastMap<u64, bool>, seg: &decode::Segment<'_>) {
    let open = !(seg.fin || seg.rst);
    let k = key_hash(&conn_key(seg));
    if seg.syn && !seg.ack {
        seen.insert(k, true);
    } else {
        *seen.entry(k).or_insert(open) &= open;
    }
}

/// How the first segments of a file relate to the connections an analyzer has seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Continuity {
    /// Segments of connections still open here.
    pub open: usize,
    /// Data segments of connections that ended here.
    pub closed: usize,
    /// Data segments (no SYN) of connections never seen here.
    pub unknown: usize,
    /// Whether any connection is still open here.
    pub any_open: bool,
}

impl Continuity {
    /// Whether the file plausibly continues this capture (a rotated part): it does not carry data
    /// of connections that ended here without any of those still open, nor only data of unknown
    /// connections while connections are still open here.
    pub fn continues(&self) -> bool {
        !(self.closed > 0 && self.open == 0 || self.any_open && self.open == 0 && self.unknown > 0)
    }
}

impl Analyzer {
    /// A new analyzer whose flow indices come from `ids`, shared with the analyzers of other
    /// vantage points of the same analysis (so `F<n>` is unique across them).
    pub fn with_flow_ids(
        options: Options,
        ids: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) -> Self {
        let mut a = Analyzer::new(options);
        a.flows = FlowTable::with_ids(a.flows.limits, ids);
        a
    }

    /// A new analyzer.
    pub fn new(options: Options) -> Self {
        let mut app_seq = options.app_seq.clone();
        if !app_seq.iter().any(|p| p == "/params/app_seq") {
            app_seq.push("/params/app_seq".to_string());
        }
        Analyzer {
            flows: FlowTable::new(options.reassembly),
            http: HttpLayer::new(HttpOptions {
                app_seq,
                kept: options.kept.clone(),
                event_role: Some(mcp::event_role),
                tls: options.tls.clone(),
                ..Default::default()
            }),
            anomalies: Anomalies::default(),
            counters: Counters::default(),
            options,
            shards: None,
            live: Default::default(),
            live_exchanges: 0,
            seen: Default::default(),
        }
    }

    /// How the given first segments of another file — (address pair, SYN without ACK, carries
    /// data) — relate to the connections seen here.
    pub fn continuity(&self, first: &[(ConnKey, bool, bool)]) -> Continuity {
        let mut c = Continuity {
            any_open: self.seen.values().any(|&open| open),
            ..Default::default()
        };
        for (k, syn, data) in first {
            match self.seen.get(&key_hash(k)) {
                Some(true) => c.open += 1,
                Some(false) if *data => c.closed += 1,
                None if *data && !*syn => c.unknown += 1,
                _ => {}
            }
        }
        c
    }

    /// Run stages 3–5 in `workers` shards (at least one): this thread's own and `workers - 1`
    /// worker threads ([`shard::Shards`]). Whatever their number, flows are then numbered when
    /// the analyzer finishes, in order of their first segment, so that several analyzers sharing
    /// flow indices number alike for any worker count.
    pub fn with_workers(mut self, workers: usize) -> Self {
        self.shards = Some(shard::Shards::new(
            workers.max(1),
            self.flows.limits,
            self.http.options.clone(),
        ));
        self
    }

    /// Flows, exchanges and sessions made so far (for a progress display; final counts come
    /// from [`Analyzer::finish`]).
    pub fn live(&self) -> &shard::Live {
        match &self.shards {
            Some(s) => &s.live,
            None => &self.live,
        }
    }

    /// The application sequence pointers in use (index = `Message::app_seq` index).
    pub fn app_seq_pointers(&self) -> &[String] {
        &self.http.options.app_seq
    }

    /// Decrypt with the secrets of NSS key log `text` too, from this point of the frames on:
    /// TLS connections whose ServerHello comes later (a pcapng Decryption Secrets Block after
    /// the first packet, draft-ietf-opsawg-pcapng §4.7). Text without secrets changes nothing.
    pub fn add_key_log(&mut self, text: &str) {
        let mut secrets = self
            .options
            .tls
            .secrets
            .as_deref()
            .cloned()
            .unwrap_or_default();
        secrets.add_keylog(text);
        if secrets.is_empty() {
            return;
        }
        let secrets = std::sync::Arc::new(secrets);
        self.options.tls.secrets = Some(secrets.clone());
        self.http.tls.options.secrets = Some(secrets.clone());
        if let Some(s) = self.shards.as_mut() {
            s.secrets(secrets);
        }
    }

    /// Process one frame.
    pub fn frame(&mut self, f: &Frame<'_>) {
        self.frame_tap(f, &mut tcp::NoSink);
    }

    /// Process one frame; `tap` also receives every stream event (e.g. to dump the bytes).
    pub fn frame_tap(&mut self, f: &Frame<'_>, tap: &mut impl tcp::StreamSink) {
        self.counters.frames += 1;
        self.counters.ts_last = Some(self.counters.ts_last.map_or(f.ts, |t| t.max(f.ts)));
        match decode::decode(f.linktype, f.data, f.orig_len) {
            Decoded::Tcp(seg) => {
                if !self.options.ports.is_empty()
                    && !self.options.ports.contains(&seg.sport)
                    && !self.options.ports.contains(&seg.dport)
                {
                    self.counters.filtered += 1;
                    return;
                }
                self.counters.tcp_segments += 1;
                let missing = (seg.wire_len as usize).saturating_sub(seg.payload.len());
                if missing > 0 {
                    self.anomalies
                        .add_with(Code::CaptureSnaplenCut, Some(f.number), None, || {
                            format!(
                                "frame captured to {} of {} bytes: the last {missing} bytes of its TCP payload are a gap",
                                f.data.len(),
                                f.orig_len
                            )
                        });
                }
                let track = !self.options.single_file;
                match self.shards.as_mut() {
                    Some(s) => {
                        if track {
                            see(&mut self.seen, &seg);
                        }
                        s.segment(&seg, f.ts, f.number)
                    }
                    None => {
                        let known = self.flows.segment(
                            &seg,
                            f.ts,
                            f.number,
                            &mut tcp::Tee(&mut self.http, tap),
                        );
                        // A connection the flow table knew has been seen here, and only SYN, FIN
                        // and RST change whether it is open: other segments leave `seen` as is.
                        if track && (!known || seg.syn || seg.fin || seg.rst) {
                            see(&mut self.seen, &seg);
                        }
                        let done = &self.http.exchanges;
                        if done.len() > self.live_exchanges {
                            self.live
                                .exchanges_done(done.iter_from(self.live_exchanges));
                            self.live_exchanges = done.len();
                        }
                        self.live.flows.store(
                            self.flows.len() as u64,
                            std::sync::atomic::Ordering::Relaxed,
                        );
                    }
                }
            }
            Decoded::NotTcp => self.counters.not_tcp += 1,
            Decoded::Fragment => {
                self.counters.not_tcp += 1;
                self.anomalies.add(Anomaly::new(
                    Code::IpFragment,
                    Some(f.number),
                    None,
                    "IP fragment (not reassembled)".into(),
                ));
            }
            Decoded::UnsupportedLink(lt) => {
                self.counters.not_tcp += 1;
                self.anomalies.add(Anomaly::new(
                    Code::CaptureUnsupportedLinktype,
                    Some(f.number),
                    None,
                    format!("link type {lt}"),
                ));
            }
            Decoded::Malformed(code, detail) => {
                self.counters.not_tcp += 1;
                self.anomalies
                    .add(Anomaly::new(code, Some(f.number), None, detail));
            }
        }
    }

    /// End of capture: close every connection and return the exchanges in time order.
    pub fn finish(&mut self) -> Vec<http::Exchange> {
        self.finish_tap(&mut tcp::NoSink)
    }

    /// As [`Analyzer::finish`], with the events of the closing connections also given to `tap`.
    pub fn finish_tap(&mut self, tap: &mut impl tcp::StreamSink) -> Vec<http::Exchange> {
        let mut ex = match self.shards.take() {
            Some(s) => s.finish(&mut self.flows, &mut self.http),
            None => {
                self.flows.finish(&mut tcp::Tee(&mut self.http, tap));
                std::mem::take(&mut self.http.exchanges).into_vec()
            }
        };
        sort_by_time(&mut ex);
        ex
    }
}

/// Sorts exchanges by (time, flow, position on the flow): a key that is unique, so the order is
/// deterministic. The keys are sorted with their indices, then the exchanges are moved into
/// place once each (by the permutation's cycles): an exchange is about 800 bytes, and sorting
/// them directly moved each many times.
fn sort_by_time(ex: &mut [http::Exchange]) {
    let mut keyed: Vec<((i64, usize, u32), usize)> = ex
        .iter()
        .enumerate()
        .map(|(i, e)| ((e.ts(), e.flow_index, e.trans_depth), i))
        .collect();
    keyed.sort_unstable();
    // `from[k]`: where the exchange that belongs at `k` is now; `k` once placed.
    let mut from: Vec<usize> = keyed.into_iter().map(|(_, i)| i).collect();
    for start in 0..from.len() {
        let mut k = start;
        while from[k] != start {
            let next = from[k];
            ex.swap(k, next);
            from[k] = k;
            k = next;
        }
        from[k] = k;
    }
}

/// Stages 6–7: build the session model and run the detectors. `capture_end` is the time of the
/// capture's last frame (µs since the Unix epoch, [`Counters::ts_last`]); without it, the end
/// of the last exchange stands in.
pub fn analyze_exchanges(
    exchanges: &[http::Exchange],
    app_seq: &[String],
    capture_end: Option<i64>,
) -> detect::Analysis {
    analyze_exchanges_with(exchanges, app_seq, capture_end, &[])
}

/// As [`analyze_exchanges`]; `backend_headers` are response header names (any case) that name
/// the backend, checked before `X-Backend`, `X-Served-By` and `X-Upstream`.
pub fn analyze_exchanges_with(
    exchanges: &[http::Exchange],
    app_seq: &[String],
    capture_end: Option<i64>,
    backend_headers: &[String],
) -> detect::Analysis {
    analyze_model(
        model_of(exchanges, backend_headers),
        exchanges,
        app_seq,
        capture_end,
        &[],
        &[],
    )
}

/// Stage 7 alone: the detectors, on the `model` [`model_of`] made of `exchanges`, with the
/// capture's refused connection attempts (`refused`, in time order:
/// [`detect::RefusedConnect::of`] each flow row) and its TLS connections (`tls`:
/// [`tls::TlsLayer::flows`] of each vantage point); other arguments as [`analyze_exchanges`].
pub fn analyze_model(
    model: mcp::Model,
    exchanges: &[http::Exchange],
    app_seq: &[String],
    capture_end: Option<i64>,
    refused: &[detect::RefusedConnect],
    tls: &[tls::FlowTls],
) -> detect::Analysis {
    let end = capture_end.unwrap_or_else(|| {
        exchanges
            .iter()
            .filter_map(|e| e.ts_end.or(e.ts_request))
            .max()
            .unwrap_or(0)
    });
    detect::run(model, exchanges, app_seq, end, refused, tls)
}

/// Stage 6 alone: the session model of `exchanges` (sorted by time), with their hops
/// ([`mcp::hops::link`]; `backend_headers` name response headers that identify the backend).
pub fn model_of(exchanges: &[http::Exchange], backend_headers: &[String]) -> mcp::Model {
    let headers: Vec<String> = backend_headers
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect();
    mcp::Model::build(exchanges, mcp::hops::link(exchanges, &headers))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The permutation puts the exchanges where sorting them directly does: keys with equal
        /// times and flows, exchanges already in place, cycles of every length.
        #[test]
        fn sort_by_time_is_a_sort(keys in prop::collection::vec((0i64..6, 0usize..5), 0..60)) {
            let mut ex: Vec<super::http::Exchange> = keys
                .iter()
                .enumerate()
                .map(|(i, &(ts, flow))| super::http::Exchange {
                    ts_request: Some(ts),
                    flow_index: flow,
                    trans_depth: i as u32,
                    ..Default::default()
                })
                .collect();
            let mut want = ex.clone();
            want.sort_by_key(|e| (e.ts(), e.flow_index, e.trans_depth));
            super::sort_by_time(&mut ex);
            let key = |v: &[super::http::Exchange]| -> Vec<(i64, usize, u32)> {
                v.iter().map(|e| (e.ts(), e.flow_index, e.trans_depth)).collect()
            };
            prop_assert_eq!(key(&ex), key(&want));
        }
    }
}
