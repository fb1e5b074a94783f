//! Stages 3–4 on several threads: after decoding, segments are sharded by their address pair
//! (both directions of a connection land on one worker), each worker runs its own flow table and
//! HTTP layer, and at the end the flows are renumbered in order of their first segment — the
//! order one thread numbers them in — so the output is identical to a single-threaded run.
//!
//! The reading thread is one of the shards itself: its share of the flows goes through stages
//! 3–4 at once, straight from the read buffer. For the others, payload bytes are copied once,
//! into the batch sent to their worker: each batch holds its segments' payloads in one buffer,
//! and workers send emptied batches back for reuse, so the steady state allocates nothing per
//! segment.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::anomaly::{Anomaly, Code};
use crate::decode::Segment;
use crate::http::{Exchange, HttpLayer, HttpOptions};
use crate::tcp::{FlowRow, FlowTable, ReassemblyLimits};

/// A decoded segment with its bytes, on its way to a worker.
struct Owned {
    src: IpAddr,
    dst: IpAddr,
    sport: u16,
    dport: u16,
    seq: u32,
    ack_no: u32,
    flags: u8,
    /// Where the payload is in the batch's `bytes`.
    payload: std::ops::Range<usize>,
    wire_len: u32,
    ts: i64,
    /// The capture's clock at this segment: the latest time of every segment read up to it.
    clock: i64,
    frame: u64,
    order: u64,
}

/// Segments for one worker, their payloads in one buffer.
#[derive(Default)]
struct Batch {
    segs: Vec<Owned>,
    bytes: Vec<u8>,
    /// After these segments, the worker's TLS stage decrypts with these secrets
    /// ([`Shards::secrets`]).
    secrets: Option<Arc<crate::tls::keylog::Secrets>>,
}

impl Batch {
    fn new() -> Batch {
        // `bytes` grows to what the traffic needs (at most about BATCH_BYTES) and keeps that
        // capacity as the batch is reused.
        Batch {
            segs: Vec::with_capacity(BATCH),
            bytes: Vec::new(),
            secrets: None,
        }
    }
    fn is_full(&self) -> bool {
        self.segs.len() >= BATCH || self.bytes.len() >= BATCH_BYTES
    }
}

/// Segments per batch.
const BATCH: usize = 512;
/// Payload bytes per batch (a batch is sent once it holds this much).
const BATCH_BYTES: usize = 1 << 19;

struct Done {
    flows: FlowTable,
    http: HttpLayer,
    /// For each local flow, the order of the segment that created it.
    created: Vec<u64>,
}

impl Done {
    fn new(limits: ReassemblyLimits, http: HttpOptions) -> Done {
        Done {
            flows: FlowTable::new(limits),
            http: HttpLayer::new(http),
            created: Vec::new(),
        }
    }
    /// Stages 3–4 for one segment, the `order`-th of the run, read when the capture's clock
    /// stood at `clock` ([`crate::tcp::clock_after`]).
    fn segment(&mut self, seg: &Segment<'_>, ts: i64, clock: i64, frame: u64, order: u64) {
        let before = self.flows.len();
        self.flows.segment_at(seg, ts, clock, frame, &mut self.http);
        while self.created.len() < self.flows.len() && self.flows.len() > before {
            self.created.push(order);
        }
    }
    /// Publish the flows and exchanges made since the counts `counted` (flows, exchanges).
    fn publish(&self, live: &Live, counted: &mut (usize, usize)) {
        let flows = self.flows.len();
        live.flows
            .fetch_add(flows.saturating_sub(counted.0) as u64, Ordering::Relaxed);
        counted.0 = flows;
        if self.http.exchanges.len() > counted.1 {
            live.exchanges_done(self.http.exchanges.iter_from(counted.1));
            counted.1 = self.http.exchanges.len();
        }
    }
}

/// What the workers have made so far, for a progress display: flows, exchanges, and sessions
/// (distinct session keys, [`crate::mcp::session_key_of`]).
#[derive(Debug, Default)]
pub struct Live {
    /// Flows created.
    pub flows: AtomicU64,
    /// Exchanges completed.
    pub exchanges: AtomicU64,
    /// Distinct sessions among the completed exchanges.
    pub sessions: AtomicU64,
    /// Hashes of the session keys seen ([`crate::hash::hash64`]).
    keys: Mutex<crate::hash::FastSet<u64>>,
}

impl Live {
    /// Count newly completed exchanges.
    pub(crate) fn exchanges_done<'a>(&self, new: impl Iterator<Item = &'a crate::http::Exchange>) {
        let mut n = 0u64;
        let keys: Vec<u64> = new
            .inspect(|_| n += 1)
            .filter_map(crate::mcp::session_key_of)
            .map(|k| crate::hash::hash64(k.as_bytes()))
            .collect();
        self.exchanges.fetch_add(n, Ordering::Relaxed);
        if keys.is_empty() {
            return;
        }
        if let Ok(mut set) = self.keys.lock() {
            set.extend(keys);
            self.sessions.store(set.len() as u64, Ordering::Relaxed);
        }
    }
}

/// Workers running stages 3–4.
pub struct Shards {
    senders: Vec<SyncSender<Batch>>,
    handles: Vec<JoinHandle<Done>>,
    batches: Vec<Batch>,
    /// Emptied batches the workers sent back.
    spare: Receiver<Batch>,
    order: u64,
    /// The capture's clock ([`crate::tcp::clock_after`] over every segment so far).
    clock: i64,
    /// The reading thread's own shard.
    local: Done,
    /// Flows and exchanges of `local` already counted in `live`.
    local_counted: (usize, usize),
    /// What the shards have made so far.
    pub live: Arc<Live>,
}

fn worker(
    rx: Receiver<Batch>,
    back: SyncSender<Batch>,
    limits: ReassemblyLimits,
    http: HttpOptions,
    live: Arc<Live>,
) -> Done {
    let mut d = Done::new(limits, http);
    // Flows and exchanges already counted in `live`.
    let mut counted = (0, 0);
    for mut batch in rx {
        for s in &batch.segs {
            let seg = Segment {
                src: s.src,
                dst: s.dst,
                sport: s.sport,
                dport: s.dport,
                seq: s.seq,
                ack_no: s.ack_no,
                syn: s.flags & 1 != 0,
                ack: s.flags & 2 != 0,
                fin: s.flags & 4 != 0,
                rst: s.flags & 8 != 0,
                payload: batch.bytes.get(s.payload.clone()).unwrap_or_default(),
                wire_len: s.wire_len,
            };
            d.segment(&seg, s.ts, s.clock, s.frame, s.order);
        }
        if let Some(s) = batch.secrets.take() {
            d.http.tls.options.secrets = Some(s);
        }
        d.publish(&live, &mut counted);
        batch.segs.clear();
        batch.bytes.clear();
        // Full: the reader has enough spares, this one is dropped.
        let _ = back.try_send(batch);
    }
    d.flows.finish(&mut d.http);
    d
}

/// Batches queued per worker.
const QUEUE: usize = 8;

impl std::fmt::Debug for Shards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shards")
            .field("workers", &self.senders.len())
            .field("segments", &self.order)
            .finish()
    }
}

impl Shards {
    /// `n` shards (at least one): the reading thread's own, and `n - 1` worker threads. A worker
    /// the system cannot start is left out (its share goes to the others).
    pub fn new(n: usize, limits: ReassemblyLimits, http: HttpOptions) -> Shards {
        let n = n.max(1) - 1;
        let mut senders = Vec::with_capacity(n);
        let mut handles = Vec::with_capacity(n);
        let (back, spare) = sync_channel::<Batch>(QUEUE * n);
        let live = Arc::new(Live::default());
        for _ in 0..n {
            let (tx, rx) = sync_channel::<Batch>(QUEUE);
            let opts = http.clone();
            let back = back.clone();
            let live = live.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("mcpcap-shard-{}", handles.len()))
                .spawn(move || worker(rx, back, limits, opts, live));
            if let Ok(h) = spawned {
                senders.push(tx);
                handles.push(h);
            }
        }
        Shards {
            batches: (0..handles.len()).map(|_| Batch::new()).collect(),
            senders,
            handles,
            spare,
            order: 0,
            clock: i64::MIN,
            local: Done::new(limits, http),
            local_counted: (0, 0),
            live,
        }
    }

    /// Hand one segment to its shard: the reading thread's own (processed at once), or a
    /// worker's batch.
    pub fn segment(&mut self, seg: &Segment<'_>, ts: i64, frame: u64) {
        use std::hash::{Hash, Hasher};
        let mut h = crate::hash::FastHasher::default();
        crate::decode::conn_key(seg).hash(&mut h);
        self.order += 1;
        self.clock = crate::tcp::clock_after(self.clock, ts);
        // The reading thread also decodes every frame: it takes one share of the flows where a
        // worker takes two.
        let slot = (h.finish() % (2 * self.senders.len() as u64 + 1)) as usize;
        if slot == 0 {
            self.local.segment(seg, ts, self.clock, frame, self.order);
            if self.order.is_multiple_of(1024) {
                self.local.publish(&self.live, &mut self.local_counted);
            }
            return;
        }
        let w = (slot - 1) / 2;
        let b = &mut self.batches[w];
        let start = b.bytes.len();
        b.bytes.extend_from_slice(seg.payload);
        b.segs.push(Owned {
            src: seg.src,
            dst: seg.dst,
            sport: seg.sport,
            dport: seg.dport,
            seq: seg.seq,
            ack_no: seg.ack_no,
            flags: u8::from(seg.syn)
                | u8::from(seg.ack) << 1
                | u8::from(seg.fin) << 2
                | u8::from(seg.rst) << 3,
            payload: start..b.bytes.len(),
            wire_len: seg.wire_len,
            ts,
            clock: self.clock,
            frame,
            order: self.order,
        });
        if b.is_full() {
            let next = self.spare.try_recv().unwrap_or_else(|_| Batch::new());
            let full = std::mem::replace(b, next);
            // A worker that died (a panic) drops its channel: its flows are lost, not the run.
            let _ = self.senders[w].send(full);
        }
    }

    /// From here on, every shard's TLS stage decrypts with `secrets` (a pcapng Decryption
    /// Secrets Block among the frames): the reading thread's at once, each worker's once it has
    /// the segments handed to it so far (its batch goes now, carrying them). Connections whose
    /// ServerHello comes later are decrypted with them, whatever the number of workers.
    pub fn secrets(&mut self, secrets: Arc<crate::tls::keylog::Secrets>) {
        self.local.http.tls.options.secrets = Some(secrets.clone());
        for (w, b) in self.batches.iter_mut().enumerate() {
            let next = self.spare.try_recv().unwrap_or_else(|_| Batch::new());
            let mut batch = std::mem::replace(b, next);
            batch.secrets = Some(secrets.clone());
            let _ = self.senders[w].send(batch);
        }
    }

    /// Finish every worker and merge their results into `flows` and `http`, numbering the flows
    /// in order of their first segment from the indices `flows` reserves for them. Returns every
    /// exchange (`http`'s own and the workers'), in no particular order.
    pub fn finish(self, flows: &mut FlowTable, http: &mut HttpLayer) -> Vec<Exchange> {
        let Shards {
            senders,
            handles,
            batches,
            mut local,
            ..
        } = self;
        for (tx, b) in senders.iter().zip(batches) {
            if !b.segs.is_empty() {
                let _ = tx.send(b);
            }
        }
        drop(senders);
        local.flows.finish(&mut local.http);
        let mut done: Vec<Done> = vec![local];
        for h in handles {
            match h.join() {
                Ok(d) => done.push(d),
                // A worker that panicked lost its flows: said, not silently dropped.
                Err(_) => http.anomalies.add(Anomaly::new(
                    Code::InternalWorkerFailed,
                    None,
                    None,
                    "a reassembly worker failed; the flows it held are missing".into(),
                )),
            }
        }
        // (order, worker, local index) → new index.
        let mut all: Vec<(u64, usize, usize)> = Vec::new();
        for (w, d) in done.iter().enumerate() {
            for (i, &o) in d.created.iter().enumerate() {
                all.push((o, w, i));
            }
        }
        all.sort_unstable();
        let base = flows.reserve_ids(all.len());
        let mut map: Vec<Vec<usize>> = done.iter().map(|d| vec![0; d.flows.len()]).collect();
        for (k, &(_, w, i)) in all.iter().enumerate() {
            if let Some(slot) = map[w].get_mut(i) {
                *slot = base + k;
            }
        }
        let remap = |w: usize, fi: usize| map[w].get(fi).copied().unwrap_or(fi);
        let remap_id = |w: usize, id: &Option<String>| {
            id.as_deref()
                .and_then(|s| s.strip_prefix('F'))
                .and_then(|n| n.parse::<usize>().ok())
                .map(|n| crate::tcp::FlowId(remap(w, n)).to_string())
                .or_else(|| id.clone())
        };
        let mut merged: Vec<(usize, FlowRow)> = Vec::new();
        // Exchanges are much of a run's memory: they move into one vector of their exact number,
        // each worker's chunks freed as they are moved (`Chunks::move_into`).
        let total: usize = done.iter().map(|d| d.http.exchanges.len()).sum();
        let mut all = std::mem::take(&mut http.exchanges).into_vec();
        all.reserve_exact(total);
        for (w, d) in done.iter_mut().enumerate() {
            std::mem::take(&mut d.http.exchanges).move_into(&mut all, |mut e| {
                e.flow_index = remap(w, e.flow_index);
                e
            });
        }
        let mut anomalies: Vec<Anomaly> = Vec::new();
        for (w, d) in done.into_iter().enumerate() {
            let mut table = d.flows;
            let flow_anomalies = std::mem::take(&mut table.anomalies);
            for (i, mut f) in table.into_rows().into_iter().enumerate() {
                f.index = remap(w, i);
                merged.push((f.index, f));
            }
            for (fi, dir) in d.http.client_dir {
                http.client_dir.insert(remap(w, fi), dir);
            }
            for (fi, mut t) in d.http.tls.flows {
                t.flow_index = remap(w, fi);
                http.tls.flows.insert(t.flow_index, t);
            }
            for set in [flow_anomalies, d.http.anomalies] {
                for (code, n) in set.counts {
                    *http.anomalies.counts.entry(code).or_insert(0) += n;
                }
                for mut a in set.rows {
                    a.flow_id = remap_id(w, &a.flow_id);
                    anomalies.push(a);
                }
            }
        }
        merged.sort_by_key(|(i, _)| *i);
        flows.extend_rows(merged.into_iter().map(|(_, f)| f));
        anomalies.sort_by(|a, b| (a.frame, &a.flow_id, a.code).cmp(&(b.frame, &b.flow_id, b.code)));
        for a in anomalies {
            if http.anomalies.rows.len() < crate::anomaly::MAX_KEPT {
                http.anomalies.rows.push(a);
            }
        }
        all
    }
}
