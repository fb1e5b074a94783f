//! Where replayed events came from: `cross_stream_replay` and `cross_session_replay`
//! (modelcontextprotocol/servers #4087: a store that replays every later event of the session;
//! typescript-sdk #1004 / PR #2109: one store shared by all sessions).
//!
//! MCP 2025-11-25 "Resumability and Redelivery": a server "MUST NOT replay messages that would
//! have been delivered on a different stream". A resumed connection that carries an event first
//! delivered on another stream of the session (same id and data), or the response to a request
//! another POST stream owns, replays the wrong stream; one that carries another session's events
//! leaks them across sessions.
//!
//! The index holds only what the resumed connections need: first the (session, id, data) keys
//! and data hashes of every event on a resumed connection are collected, then one pass over all
//! streams records where those were delivered — memory grows with the replays, not the capture.

use crate::hash::{FastMap as HashMap, FastSet as HashSet};

use crate::detect::Cited;
use crate::http::{EventRec, Exchange};
use crate::jsonrpc::{Kind, Short};
use crate::mcp::ids::{self, IdFormat};
use crate::mcp::McpExchange;
use crate::mcp::{Model, StreamKind};

/// One delivery of an event's data.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    /// Session index.
    pub session: usize,
    /// Logical stream index.
    pub stream: usize,
    /// Time of the delivery, µs since the Unix epoch.
    pub ts: i64,
    /// First frame of the event.
    pub frame: u64,
    /// Flow of the connection that delivered it.
    pub flow_index: usize,
    /// The event's own id.
    pub id: Option<String>,
    /// Whether the delivery was on a resumed connection (a GET with `Last-Event-ID`), which may
    /// itself be a replay of the wrong stream.
    pub resumed: bool,
}

impl Seen {
    /// The frame of the delivery, with its flow.
    pub(crate) fn cited(&self) -> Cited {
        Cited {
            flow_index: self.flow_index,
            frame: self.frame,
        }
    }
}

/// Deliveries of the events that resumed connections carry.
#[derive(Debug, Default)]
pub(crate) struct ReplayIndex {
    /// (session, data hash) → deliveries in that session, for sessions with resumptions.
    own: HashMap<(usize, u64), Vec<Seen>>,
    /// data hash → the first delivery in each of at most [`MAX_SESSIONS_PER_HASH`] sessions.
    first_by_session: HashMap<u64, Vec<Seen>>,
    request_stream: HashMap<(usize, Short), Vec<usize>>,
    /// (session, progress token of a request, `params._meta.progressToken`) → the POST streams
    /// of the requests that issued it.
    token_stream: HashMap<(usize, Short), Vec<usize>>,
    /// data hash → deliveries under an id on headless connections no resumption adopted (the
    /// capture began inside them, and no header names their session), with the exchange:
    /// at most [`MAX_OWN`] per hash.
    headless: HashMap<u64, Vec<(Seen, usize)>>,
}

/// Deliveries kept per (session, data): enough to find one on another stream.
const MAX_OWN: usize = 16;
/// Sessions kept per data hash: common payloads (identical progress bodies, broadcast
/// notifications) would otherwise grow with the capture.
const MAX_SESSIONS_PER_HASH: usize = 8;

/// Whether an id format carries a part unique to its stream or session (so an equal id in another
/// session is the same event, not a coincidence of counters).
fn unique_ids(id: &str) -> bool {
    let p = ids::parse(id);
    match p.format {
        // Counters restart per stream or session (Redis `<ms>-<seq>` streams per session give
        // one broadcast the same id everywhere).
        IdFormat::Integer | IdFormat::Rmcp | IdFormat::Opaque | IdFormat::Redis => false,
        IdFormat::Go => !p.prefix.is_empty(),
        _ => true,
    }
}

impl ReplayIndex {
    /// Index every delivery of the data carried by resumed connections.
    pub(crate) fn build(model: &Model, exchanges: &[Exchange]) -> ReplayIndex {
        let mut wanted: HashSet<u64> = HashSet::default();
        let mut sessions: HashSet<usize> = HashSet::default();
        for r in &model.resumptions {
            let e = &exchanges[r.exchange];
            wanted.extend(
                e.sse
                    .events
                    .iter()
                    .filter(|ev| ev.carries_data())
                    .map(|ev| ev.data_hash),
            );
            sessions.insert(r.session);
        }
        let mut idx = ReplayIndex::default();
        if wanted.is_empty() {
            return idx;
        }
        for (sti, st) in model.streams.iter().enumerate() {
            for &xi in &st.connections {
                let log = &exchanges[xi].sse.events;
                let resumed = exchanges[xi].resume_cursor().is_some();
                // Most events carry data no resumption delivered: skipped on their fixed fields.
                let unadopted =
                    exchanges[xi].headless.is_some() && model.sessions[st.session].id.is_none();
                for (ei, ev) in log.briefs() {
                    if !ev.carries_data() || !wanted.contains(&ev.data_hash) {
                        continue;
                    }
                    let seen = || Seen {
                        session: st.session,
                        stream: sti,
                        ts: ev.ts,
                        frame: ev.frame_first,
                        flow_index: exchanges[xi].flow_index,
                        id: log.id_of(ei).map(str::to_string).filter(|_| ev.has_own_id),
                        resumed,
                    };
                    if sessions.contains(&st.session) {
                        let v = idx.own.entry((st.session, ev.data_hash)).or_default();
                        if v.len() < MAX_OWN {
                            v.push(seen());
                        }
                    }
                    if unadopted && ev.has_own_id {
                        let v = idx.headless.entry(ev.data_hash).or_default();
                        if v.len() < MAX_OWN {
                            v.push((seen(), xi));
                        }
                    }
                    let v = idx.first_by_session.entry(ev.data_hash).or_default();
                    if v.len() < MAX_SESSIONS_PER_HASH && v.iter().all(|s| s.session != st.session)
                    {
                        v.push(seen());
                    }
                }
            }
            if st.kind == StreamKind::Post && sessions.contains(&st.session) {
                for m in exchanges[st.origin]
                    .rpc
                    .request
                    .iter()
                    .filter(|m| m.kind == Kind::Request)
                {
                    if let Some(id) = &m.id {
                        idx.request_stream
                            .entry((st.session, id.clone()))
                            .or_default()
                            .push(sti);
                    }
                    if let Some(t) = m
                        .rare
                        .as_ref()
                        .and_then(|r| r.request_progress_token.as_deref())
                    {
                        idx.token_stream
                            .entry((st.session, Short::from(t)))
                            .or_default()
                            .push(sti);
                    }
                }
            }
        }
        idx
    }

    /// Evidence that `ev`, on a resumed connection of stream `st` in `session`, belongs to another
    /// stream of the session: the same id and data delivered there (earlier, or later on one of
    /// that stream's own connections, not a resumed one, which may itself be a wrong replay); a
    /// response to a request another POST stream owns; or progress for a token only another POST
    /// stream's request issued (its ids may be new: a store that files another stream's messages
    /// under this one re-numbers them, when that stream delivered the same data itself — a
    /// task's progress may come on the stream of its `tasks/result`). A later delivery counts
    /// only under an id unique to its stream ([`unique_ids`]). Returns (other stream, the frame
    /// where that stream also delivered the same data, when it did, and whether the client
    /// surely had the message twice: the same message by its unique id, its progress token or
    /// its response id, not only an equal id and data).
    pub(crate) fn other_stream(
        &self,
        model: &Model,
        session: usize,
        st: usize,
        ev: &EventRec,
    ) -> Option<(usize, Option<Cited>, bool)> {
        if !ev.carries_data() {
            return None;
        }
        // (A proxy's other leg is no stream of its own: hops are not in the model.)
        let other = |o: usize| o != st;
        let id = ev.sse.id.filter(|_| ev.sse.has_own_id);
        let delivered = self.own.get(&(session, ev.data_hash));
        // The other POST stream that owns `key` in `map`, when this one does not.
        let owner = |map: &HashMap<(usize, Short), Vec<usize>>, key: &Short| {
            // The request must belong to other streams only (a proxy's two legs both send it).
            let owners = map.get(&(session, key.clone()))?;
            owners
                .iter()
                .all(|&o| other(o))
                .then(|| owners.first().copied())?
        };
        let unique = id.is_some_and(unique_ids);
        if let Some(seen) = delivered.and_then(|v| {
            v.iter().find(|s| {
                other(s.stream)
                    && (s.ts < ev.sse.ts || !s.resumed && unique)
                    && s.id.as_deref() == id
                    && id.is_some()
            })
        }) {
            // The same message surely: by an id unique to its stream, or by progress of a token
            // that stream's request issued.
            let sure = unique
                || ev.messages.iter().any(|m| {
                    m.progress_token
                        .as_ref()
                        .and_then(|t| owner(&self.token_stream, t))
                        == Some(seen.stream)
                });
            return Some((seen.stream, Some(seen.cited()), sure));
        }
        // Responses and progress belong to their request's POST stream; the standalone GET
        // stream never carries a response (MCP "Listening for Messages from the Server"), and
        // may carry progress the server could not send on a stream that was gone.
        let kind = model.streams[st].kind;
        if kind == StreamKind::Unknown {
            return None;
        }
        // Where stream `o` delivered the same data itself.
        let also =
            |o: usize| delivered.and_then(|v| v.iter().find(|s| s.stream == o && !s.resumed));
        ev.messages.iter().find_map(|m| match m.kind {
            Kind::Response | Kind::Error => {
                let o = owner(&self.request_stream, m.id.as_ref()?)?;
                let also = also(o).map(Seen::cited);
                Some((o, also, also.is_some()))
            }
            _ if kind == StreamKind::Post => {
                let o = owner(&self.token_stream, m.progress_token.as_ref()?)?;
                Some((o, Some(also(o)?.cited()), true))
            }
            _ => None,
        })
    }

    /// Evidence that `ev`, on the resumed connection `resumed` of stream `st`, was first delivered
    /// on a headless connection no resumption adopted (the capture began inside it; no header
    /// names its session): the same data under the same id, of a format unique to its stream
    /// ([`unique_ids`]), delivered earlier by the same server to the same client address, on a
    /// connection still open after `began` (µs since the Unix epoch), when the first of `st`'s
    /// earlier connections began. That connection began before the capture did, so the two
    /// were open at once: it is another stream, not an earlier connection of this one (a client
    /// resumes a stream once its connection is gone). Returns that connection's stream and the
    /// frame of its delivery.
    pub(crate) fn other_headless(
        &self,
        exchanges: &[Exchange],
        st: usize,
        resumed: usize,
        began: i64,
        ev: &EventRec,
    ) -> Option<(usize, Cited)> {
        let candidates = self.headless.get(&ev.data_hash)?;
        let id = ev
            .sse
            .id
            .filter(|&id| ev.carries_data() && ev.sse.has_own_id && unique_ids(id))?;
        let e = &exchanges[resumed];
        let (seen, _) = candidates.iter().find(|(s, hx)| {
            let h = &exchanges[*hx];
            s.stream != st
                && s.ts < ev.sse.ts
                && s.id.as_deref() == Some(id)
                && h.client == e.client
                && h.server == e.server
                && h.ts_last_byte.or(h.ts_end).is_some_and(|end| began < end)
        })?;
        Some((seen.stream, seen.cited()))
    }

    /// Evidence that `ev`, on a resumed connection of `session`, is another session's event: the
    /// same data delivered earlier in another session, and either under the same id of a format
    /// unique per stream or session, or with messages that do not belong to this session (a
    /// response to a request it never sent, progress for a token it never issued) — the latter
    /// only when `requests_known`: the capture saw the request of the stream resumed (else the
    /// stream may answer a request sent before the capture, with data another session's
    /// identical call also got).
    pub(crate) fn other_session(
        &self,
        session: usize,
        ev: &EventRec,
        session_requests: &HashMap<String, String>,
        tokens: &HashSet<String>,
        requests_known: bool,
    ) -> Option<&Seen> {
        if !ev.carries_data() {
            return None;
        }
        let seen = self.first_by_session.get(&ev.data_hash)?;
        let id = ev.sse.id.filter(|_| ev.sse.has_own_id);
        let foreign_message = requests_known
            && !ev.messages.is_empty()
            && ev.messages.iter().all(|m| match m.kind {
                Kind::Response | Kind::Error => {
                    m.id.as_deref()
                        .is_some_and(|i| !session_requests.contains_key(i))
                }
                _ => m
                    .progress_token
                    .as_deref()
                    .is_some_and(|t| !tokens.contains(t)),
            });
        seen.iter().find(|s| {
            s.session != session
                && s.ts < ev.sse.ts
                && (foreign_message
                    || (id.is_some() && s.id.as_deref() == id && id.is_some_and(unique_ids)))
        })
    }
}
