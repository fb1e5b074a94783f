//! Sessions, logical streams and resumptions (MCP Streamable HTTP,
//! revisions 2025-03-26 … 2025-11-25, "Session Management" and
//! "Resumability and Redelivery").
//!
//! A session is every exchange carrying one `Mcp-Session-Id` (any header
//! case) plus the `initialize` exchange whose response assigned it; for the
//! legacy HTTP+SSE transport (2024-11-05) the `sessionId` (`session_id`) query parameter;
//! exchanges with neither (stateless servers) form the session "none". Each SSE response body is
//! one physical connection of a *logical stream*: a POST's response stream or
//! a standalone GET stream. A GET with `Last-Event-ID: L` is a resumption and
//! continues the logical stream on which `L` was last delivered before it (when several streams
//! of the session delivered `L`, one whose last connection was cut there first).

pub mod hops;
pub mod ids;

use crate::anomaly::Code;
use crate::hash::FastMap as HashMap;

use crate::http::{EventRole, Exchange};
pub use ids::{IdFormat, ParsedId};

/// Kind of a logical stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// The SSE response of a POST.
    Post,
    /// A standalone GET stream.
    Get,
    /// Opened by a resumption whose `Last-Event-ID` matched no captured stream.
    Unknown,
}

impl StreamKind {
    /// Name for tables.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamKind::Post => "post",
            StreamKind::Get => "get",
            StreamKind::Unknown => "unknown",
        }
    }
}

/// The protocol revision whose transport rules apply (MCP specification, "Transports" of each
/// revision; see `docs/wire.md`, "Revisions").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Era {
    /// Not negotiated in the capture.
    Unknown,
    /// 2024-11-05, the revision of the legacy HTTP+SSE transport (`endpoint` event,
    /// `?sessionId=`); Streamable HTTP clients may also negotiate it.
    Legacy,
    /// 2025-03-26: Streamable HTTP; JSON-RPC batches allowed.
    V2025_03_26,
    /// 2025-06-18: `MCP-Protocol-Version` header; no batches.
    V2025_06_18,
    /// 2025-11-25: priming events, `retry`, server-initiated close for polling (SEP-1699).
    V2025_11_25,
    /// 2026-07-28: no sessions, no standalone GET, no `Last-Event-ID`; a broken response stream
    /// means the request must be re-sent.
    V2026_07_28,
}

impl Era {
    /// The era of a `protocolVersion` / `MCP-Protocol-Version` value (`YYYY-MM-DD`): the latest
    /// known revision not after it; `Unknown` when the value is not a date.
    pub fn of_version(v: &str) -> Era {
        let v = v.trim();
        let b = v.as_bytes();
        let date = b.len() == 10
            && b.iter().enumerate().all(|(i, c)| {
                if i == 4 || i == 7 {
                    *c == b'-'
                } else {
                    c.is_ascii_digit()
                }
            });
        if !date {
            return Era::Unknown;
        }
        if v >= "2026-07-28" {
            Era::V2026_07_28
        } else if v >= "2025-11-25" {
            Era::V2025_11_25
        } else if v >= "2025-06-18" {
            Era::V2025_06_18
        } else if v >= "2025-03-26" {
            Era::V2025_03_26
        } else {
            Era::Legacy
        }
    }
    /// Name for tables: the revision date, or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Unknown => "unknown",
            Era::Legacy => "2024-11-05",
            Era::V2025_03_26 => "2025-03-26",
            Era::V2025_06_18 => "2025-06-18",
            Era::V2025_11_25 => "2025-11-25",
            Era::V2026_07_28 => "2026-07-28",
        }
    }
    /// Whether the revision has sessions and resumption (everything before 2026-07-28).
    pub fn stateful(self) -> bool {
        self != Era::V2026_07_28
    }
}

/// The era one exchange declares by itself: its `MCP-Protocol-Version` header, a
/// `protocolVersion` in its messages (the `initialize` params or result, or the 2026-07-28
/// `_meta` key), or a 2026-07-28 `Mcp-Method` header.
pub fn exchange_era(e: &Exchange) -> Era {
    let declared = e
        .req_header("mcp-protocol-version")
        .map(str::to_string)
        .or_else(|| {
            // The response's (negotiated) version before the request's (proposed) one.
            e.rpc
                .response
                .iter()
                .filter_map(|m| m.protocol_version())
                .chain(
                    e.sse
                        .events
                        .iter()
                        .flat_map(|ev| ev.messages.protocol_versions()),
                )
                .chain(e.rpc.request.iter().filter_map(|m| m.protocol_version()))
                .next()
                .map(str::to_string)
        });
    match declared.as_deref().map(Era::of_version) {
        Some(era) if era != Era::Unknown => era,
        _ if e.req_header("mcp-method").is_some() => Era::V2026_07_28,
        _ => Era::Unknown,
    }
}

/// One MCP session.
#[derive(Debug, Clone)]
pub struct Session {
    /// `Mcp-Session-Id`, or `None` for exchanges without one.
    pub id: Option<String>,
    /// Indices of its exchanges, in time order.
    pub exchanges: Vec<usize>,
    /// Negotiated protocol version (from `initialize` or `MCP-Protocol-Version`).
    pub protocol_version: Option<String>,
    /// The revision whose rules apply: from the protocol version, else from 2026-07-28
    /// markers, else `Legacy` for a session keyed by the legacy `sessionId`.
    pub era: Era,
    /// The id as shown in tables ([`Session::label`]).
    label: String,
}

impl Session {
    /// A session with no exchanges yet: `incarnation` counts the sessions the server has
    /// assigned the same id, from 1.
    fn new(id: Option<String>, incarnation: u32) -> Session {
        let label = match (&id, incarnation) {
            (None, _) => "none".to_string(),
            (Some(i), 0 | 1) => i.clone(),
            (Some(i), n) => format!("{i}#{n}"),
        };
        Session {
            id,
            exchanges: Vec::new(),
            protocol_version: None,
            era: Era::Unknown,
            label,
        }
    }
    /// The id as shown in tables: the header value, or `none`; `<id>#2`, `#3`… for a session
    /// whose id the server had assigned before (a new `initialize` answered with the same
    /// `Mcp-Session-Id`).
    pub fn label(&self) -> String {
        self.label.clone()
    }
    /// [`Session::label`], borrowed.
    pub fn label_str(&self) -> &str {
        &self.label
    }
}

/// One logical stream: one or more physical SSE connections.
#[derive(Debug, Clone)]
pub struct LogicalStream {
    /// Index of the session.
    pub session: usize,
    /// Exchange that opened it.
    pub origin: usize,
    /// POST, GET or unknown.
    pub kind: StreamKind,
    /// Exchanges whose SSE bodies are its connections, in time order (origin first).
    pub connections: Vec<usize>,
}

/// A GET carrying `Last-Event-ID`.
#[derive(Debug, Clone)]
pub struct Resumption {
    /// Index of the session.
    pub session: usize,
    /// The GET exchange.
    pub exchange: usize,
    /// The `Last-Event-ID` value.
    pub last_event_id: String,
    /// The logical stream it continues, when `L` was delivered on a captured stream of the session.
    pub stream: Option<usize>,
    /// Where `L` was delivered: (exchange, event index).
    pub cursor: Option<(usize, usize)>,
    /// Without a session, `L` was delivered on several streams of the same client address.
    pub ambiguous: bool,
}

/// The session model of a capture.
#[derive(Debug, Clone, Default)]
pub struct Model {
    /// Sessions, in order of first exchange.
    pub sessions: Vec<Session>,
    /// Logical streams, in order of opening.
    pub streams: Vec<LogicalStream>,
    /// Resumptions, in time order.
    pub resumptions: Vec<Resumption>,
    /// Session index of each exchange.
    pub exchange_session: Vec<usize>,
    /// Logical stream of each exchange with an SSE body.
    pub exchange_stream: Vec<Option<usize>>,
    /// Observations of one exchange at several hops or vantage points; only client-facing
    /// exchanges (`hops.primary[i]` is `None`) enter sessions and streams.
    pub hops: hops::Hops,
    /// Limits the model reached (`model.hop_candidates`, `model.deliveries`).
    pub anomalies: crate::anomaly::Anomalies,
}

/// Where an event id was delivered: (logical stream, exchange, event index, ts).
type Delivery = (usize, usize, usize, i64);
/// Event id (borrowed from the exchanges) → its deliveries (most ids are delivered once: kept
/// inline, with no allocation per id).
type IdIndex<'a> = HashMap<&'a str, smallvec::SmallVec<[Delivery; 1]>>;

/// Index the event ids exchange `x` delivered as connection of logical stream `st` (`(st, x)`)
/// into `ids`: those of its events with an id of their own, whole, and `wanted` (named by some
/// resumption). An id delivered over and over (ids not unique, a replay loop, rmcp's priming
/// id `0` on every stream) keeps its first delivery, those on cut connections (which a
/// resumption is looked up to prefer) and the latest ones, at most [`MAX_DELIVERIES`], so that
/// each lookup stays short; the deliveries left out are counted in `dropped`, with the first
/// exchange that left one out.
fn index_deliveries<'a>(
    ids: &mut IdIndex<'a>,
    exchanges: &'a [Exchange],
    (st, x): (usize, usize),
    wanted: &crate::hash::FastSet<&str>,
    dropped: &mut (u64, Option<usize>),
) {
    let events = &exchanges[x].sse.events;
    for (ei, ev) in events.briefs() {
        if !ev.has_own_id || ev.truncated {
            continue;
        }
        let Some(id) = events.id_of(ei).filter(|id| wanted.contains(id)) else {
            continue;
        };
        let v = ids.entry(id).or_default();
        if v.len() >= MAX_DELIVERIES {
            let old = (1..v.len())
                .find(|&k| exchanges[v[k].1].resp_complete)
                .unwrap_or(1);
            v.remove(old);
            dropped.0 += 1;
            dropped.1.get_or_insert(x);
        }
        v.push((st, x, ei, ev.ts));
    }
}

/// A resumption's client address, server and Last-Event-ID.
type Asked<'a> = (
    Option<std::net::IpAddr>,
    Option<(std::net::IpAddr, u16)>,
    &'a str,
);

/// The cursors delivered on headless exchanges ([`Exchange::headless`]), for the resumptions
/// that name them: id → (exchange, event index, time of the event), in exchange order.
struct HeadlessIndex<'a> {
    ids: HashMap<&'a str, Vec<(usize, usize, i64)>>,
    /// Every resumption's (client address, server, Last-Event-ID).
    asked: crate::hash::FastSet<Asked<'a>>,
}

impl<'a> HeadlessIndex<'a> {
    /// The ids some request names as its Last-Event-ID (`wanted`) that headless exchanges
    /// delivered with their own `id` line.
    fn build(exchanges: &'a [Exchange], wanted: &crate::hash::FastSet<&str>) -> Self {
        let mut ids: HashMap<&'a str, Vec<(usize, usize, i64)>> = HashMap::default();
        for (hx, e) in exchanges
            .iter()
            .enumerate()
            .filter(|(_, e)| e.headless.is_some())
        {
            for (ei, ev) in e.sse.events.briefs() {
                if !ev.has_own_id || ev.truncated {
                    continue;
                }
                if let Some(id) = e.sse.events.id_of(ei).filter(|id| wanted.contains(id)) {
                    ids.entry(id).or_default().push((hx, ei, ev.ts));
                }
            }
        }
        let asked = exchanges
            .iter()
            .filter(|e| e.method() == "GET")
            .filter_map(|e| Some((e.client, e.server, e.resume_cursor()?)))
            .collect();
        HeadlessIndex { ids, asked }
    }

    /// The headless exchange whose event with id `leid` the resumption `r` resumes from:
    /// one not taken by another session, from the same client address, whose last event with
    /// an id before `r` was sent is that one (a client resumes from the last event it got: an
    /// earlier id there is another client's cursor, behind the same address); when several
    /// exchanges qualify, the only one from the server `r` was sent to. One from another server
    /// (a client sent to another replica) qualifies only if it delivered nothing after `r` was
    /// sent and no resumption from that client asked its own server for `leid`. `None` when
    /// none, or no single one.
    fn find(
        &self,
        exchanges: &[Exchange],
        r: &Exchange,
        leid: &str,
        adopted: &crate::hash::FastSet<usize>,
    ) -> Option<(usize, usize, i64)> {
        let v = self.ids.get(leid)?;
        let fit = |&&(hx, ei, ts): &&(usize, usize, i64)| {
            let h = &exchanges[hx];
            !adopted.contains(&hx)
                && ts <= r.ts()
                && h.client.is_some()
                && h.client == r.client
                && !h
                    .sse
                    .events
                    .briefs()
                    .skip(ei + 1)
                    .any(|(_, b)| b.has_own_id && !b.truncated && b.ts <= r.ts())
                && (h.server == r.server
                    || (!h.sse.events.briefs().any(|(_, b)| b.ts > r.ts())
                        && !self.asked.contains(&(r.client, h.server, leid))))
        };
        let same_server = |d: &&(usize, usize, i64)| {
            exchanges[d.0].server.is_some() && exchanges[d.0].server == r.server
        };
        // The last fitting delivery of the first exchange that fits, among those from `r`'s
        // server or the others, and whether another exchange fits too (the search stops there:
        // a client may loop on an id that many streams delivered).
        let first_fit = |same: bool| {
            let mut found: Option<(usize, usize, i64)> = None;
            for &d in v.iter().filter(|d| same_server(d) == same).filter(fit) {
                match found {
                    Some(f) if f.0 != d.0 => return (found, true),
                    _ => found = Some(d),
                }
            }
            (found, false)
        };
        // One exchange fits: it. Several: the only one from `r`'s server, if there is one.
        match first_fit(true) {
            (_, true) => None,
            (Some(here), false) => Some(here),
            (None, false) => match first_fit(false) {
                (Some(there), false) => Some(there),
                _ => None,
            },
        }
    }
}

/// The model while it is built ([`Model::build`]): the exchanges read in order, each into its
/// session, stream and resumption.
struct Builder<'a> {
    exchanges: &'a [Exchange],
    m: Model,
    /// Per session key: its sessions so far.
    by_id: HashMap<Option<String>, Incarnations>,
    /// Per session: event id → deliveries. Without a session, the cursor index is per client
    /// address: unrelated stateless clients reuse the same ids. Ids are borrowed from the
    /// exchanges, not copied.
    delivered: HashMap<(usize, Option<std::net::IpAddr>), IdIndex<'a>>,
    /// Only the ids some request names as its Last-Event-ID are looked up: the index keeps
    /// those alone (a few per resumption), not every event of the capture.
    wanted: crate::hash::FastSet<&'a str>,
    /// Deliveries dropped from the index, and the exchange of the first.
    dropped: (u64, Option<usize>),
    /// Headless exchanges by the ids they delivered, and those a resumption took.
    headless: HeadlessIndex<'a>,
    adopted: crate::hash::FastSet<usize>,
}

impl<'a> Builder<'a> {
    fn new(exchanges: &'a [Exchange], hops: hops::Hops) -> Self {
        let wanted: crate::hash::FastSet<&str> =
            exchanges.iter().filter_map(|e| e.resume_cursor()).collect();
        Builder {
            exchanges,
            m: Model {
                exchange_session: vec![0; exchanges.len()],
                exchange_stream: vec![None; exchanges.len()],
                hops,
                ..Default::default()
            },
            by_id: HashMap::default(),
            delivered: HashMap::default(),
            headless: HeadlessIndex::build(exchanges, &wanted),
            wanted,
            dropped: (0, None),
            adopted: Default::default(),
        }
    }

    /// Read exchange `xi` into its session, its stream and, for a resumption, the stream it
    /// resumes.
    fn add(&mut self, xi: usize) {
        let e = &self.exchanges[xi];
        let sid = session_key_of(e);
        let si = self.session_of(e, &sid);
        self.m.exchange_session[xi] = si;
        let index_key = (si, if sid.is_none() { e.client } else { None });
        let s = &mut self.m.sessions[si];
        s.exchanges.push(xi);
        note_session(s, e, sid.is_some());
        let sse_ok = e.is_sse && (e.headless.is_some() || (200..300).contains(&e.status()));
        let stream = match (e.method(), e.resume_cursor()) {
            ("GET", Some(l)) => self.resumption(xi, si, index_key, sid.is_none(), l, sse_ok),
            ("POST", _) if sse_ok => Some(self.m.new_stream(si, xi, StreamKind::Post)),
            ("GET", None) if sse_ok => Some(self.m.new_stream(si, xi, StreamKind::Get)),
            ("", _) if sse_ok => Some(self.m.new_stream(si, xi, StreamKind::Unknown)),
            _ => None,
        };
        self.m.exchange_stream[xi] = stream;
        if let Some(st) = stream {
            self.index(index_key, st, xi);
        }
    }

    /// Index the ids connection `x` of stream `st` delivered, under `key`.
    fn index(&mut self, key: (usize, Option<std::net::IpAddr>), st: usize, x: usize) {
        index_deliveries(
            self.delivered.entry(key).or_default(),
            self.exchanges,
            (st, x),
            &self.wanted,
            &mut self.dropped,
        );
    }

    /// The session of exchange `e` (session key `sid`).
    ///
    /// An `initialize` the server answers with an id an earlier `initialize` was given starts
    /// another session under that id (MCP "Session Management": the session begins at the
    /// response that assigns it): counter ids after a restart, ids derived from the user.
    /// Request ids start again there; the two are not one session. Each client (by address)
    /// goes on in the session it was given last, so two clients given one id at once keep
    /// theirs. (Only after an assignment: in a capture whose clock steps back, a session's
    /// first exchanges can sort ahead of its own `initialize`.)
    fn session_of(&mut self, e: &Exchange, sid: &Option<String>) -> usize {
        let assigns = sid.is_some()
            && is_initialize(e)
            && (200..300).contains(&e.status())
            && e.resp_header("mcp-session-id").is_some();
        let sessions = &mut self.m.sessions;
        let inc = self.by_id.entry(sid.clone()).or_insert_with(|| {
            sessions.push(Session::new(sid.clone(), 1));
            Incarnations {
                latest: sessions.len() - 1,
                count: 1,
                assigned: false,
                by_client: HashMap::default(),
            }
        });
        if assigns && inc.assigned {
            inc.count += 1;
            sessions.push(Session::new(sid.clone(), inc.count));
            inc.latest = sessions.len() - 1;
        }
        if assigns {
            inc.assigned = true;
            inc.by_client.insert(e.client, inc.latest);
        }
        inc.by_client.get(&e.client).copied().unwrap_or(inc.latest)
    }

    /// Resumption GET `xi` of session `si` with `Last-Event-ID` `l` (`no_session`: the session
    /// has no id): linked to the stream that delivered L, or to a headless connection that did
    /// (taken into the session). Its logical stream, when its answer is an event stream
    /// (`sse_ok`).
    fn resumption(
        &mut self,
        xi: usize,
        si: usize,
        index_key: (usize, Option<std::net::IpAddr>),
        no_session: bool,
        l: &str,
        sse_ok: bool,
    ) -> Option<usize> {
        let (exchanges, e) = (self.exchanges, &self.exchanges[xi]);
        // Link to the stream that delivered L most recently before this request — preferring,
        // when several streams delivered it (ids that are not unique in the session, rust-sdk
        // #791), one whose last connection so far delivered it and was cut: a client resumes a
        // broken stream.
        let streams = &self.m.streams;
        let broken = |d: &(usize, usize, usize, i64)| {
            !exchanges[d.1].resp_complete
                && streams
                    .get(d.0)
                    .is_some_and(|st| st.connections.last() == Some(&d.1))
        };
        let deliveries = self.delivered.get(&index_key).and_then(|ids| ids.get(l));
        let found = deliveries
            .and_then(|v| {
                v.iter()
                    .filter(|d| d.3 <= e.ts())
                    .max_by_key(|d| (broken(d), d.3))
                    .or(v.last())
            })
            .copied();
        // Without a session, the same id on several streams of one client address cannot be
        // attributed: the resumption stays unlinked (and ambiguous).
        let ambiguous = no_session && deliveries.is_some_and(|v| v.iter().any(|d| d.0 != v[0].0));
        // Not delivered on a stream of the session: on a headless one, maybe.
        let found = match found {
            None if !ambiguous => self.adopt_headless(e, l, si, index_key),
            found => found,
        };
        let (stream, cursor) = match found {
            Some((st, dx, ei, _)) if !ambiguous => (Some(st), Some((dx, ei))),
            _ => (None, None),
        };
        self.m.resumptions.push(Resumption {
            session: si,
            exchange: xi,
            last_event_id: l.to_string(),
            stream,
            cursor,
            ambiguous,
        });
        if !sse_ok {
            return None;
        }
        match stream {
            Some(st) => {
                self.m.streams[st].connections.push(xi);
                Some(st)
            }
            None => Some(self.m.new_stream(si, xi, StreamKind::Unknown)),
        }
    }

    /// A headless connection that delivered `l` before resumption `e`, taken into session `si`
    /// as a stream of its own (whose later resumptions find its ids as any of the session's):
    /// (stream, exchange, event index, time), as a delivery.
    fn adopt_headless(
        &mut self,
        e: &Exchange,
        l: &str,
        si: usize,
        index_key: (usize, Option<std::net::IpAddr>),
    ) -> Option<(usize, usize, usize, i64)> {
        let (hx, ei, ts) = self.headless.find(self.exchanges, e, l, &self.adopted)?;
        self.adopted.insert(hx);
        self.m.exchange_session[hx] = si;
        let list = &mut self.m.sessions[si].exchanges;
        let at = list.partition_point(|&x| x < hx);
        list.insert(at, hx);
        let st = self.m.new_stream(si, hx, StreamKind::Unknown);
        self.m.exchange_stream[hx] = Some(st);
        self.index(index_key, st, hx);
        Some((st, hx, ei, ts))
    }

    /// The model, once every exchange is read.
    fn finish(self) -> Model {
        let (exchanges, mut m) = (self.exchanges, self.m);
        // Headless exchanges read last are in their sessions' lists out of order.
        for s in &mut m.sessions {
            if !s.exchanges.is_sorted() {
                s.exchanges.sort_unstable();
            }
        }
        // Other observations belong to the session of the exchange they observe.
        for xi in 0..exchanges.len() {
            if let Some(p) = m.hops.primary.get(xi).copied().flatten() {
                m.exchange_session[xi] = m.exchange_session[p];
            }
        }
        m.anomalies = std::mem::take(&mut m.hops.anomalies);
        if let (n, Some(x)) = self.dropped {
            m.anomalies.add(exchanges[x].anomaly(
                Code::ModelDeliveries,
                format!(
                    "event ids delivered more than {MAX_DELIVERIES} times: {n} of their deliveries (on connections that ended cleanly, the oldest first) were left out of the Last-Event-ID lookup"
                ),
            ));
        }
        m
    }
}

/// The protocol version and revision of session `s`, from exchange `e` when not yet known
/// (`named`: the session has a key).
fn note_session(s: &mut Session, e: &Exchange, named: bool) {
    if s.protocol_version.is_none() {
        s.protocol_version = e
            .rpc
            .response
            .iter()
            .filter_map(|m| m.protocol_version())
            .chain(
                e.sse
                    .events
                    .iter()
                    .flat_map(|ev| ev.messages.protocol_versions()),
            )
            .next()
            .map(str::to_string)
            .or_else(|| e.req_header("mcp-protocol-version").map(str::to_string));
    }
    if s.era == Era::Unknown {
        s.era = match exchange_era(e) {
            Era::Unknown if named && session_id_of(e).is_none() => Era::Legacy,
            era => era,
        };
    }
}

/// The sessions that one session key has named, while the model is built.
struct Incarnations {
    /// The latest of them.
    latest: usize,
    /// How many.
    count: u32,
    /// Whether an `initialize` response assigned the key.
    assigned: bool,
    /// The session each client address was given last.
    by_client: HashMap<Option<std::net::IpAddr>, usize>,
}

/// Deliveries of one event id kept for the lookup of a Last-Event-ID: the first, those on cut
/// connections, and the latest.
const MAX_DELIVERIES: usize = 256;

/// The `Mcp-Session-Id` of an exchange: the request's, else the one its response assigned.
pub fn session_id_of(e: &Exchange) -> Option<&str> {
    e.req_header("mcp-session-id")
        .or_else(|| e.resp_header("mcp-session-id"))
        .filter(|s| !s.is_empty())
}

/// What an SSE event with a type is in MCP ([`crate::http::HttpOptions::event_role`]): the
/// legacy transport's `endpoint` event (MCP 2024-11-05 "HTTP with SSE": the URL the client
/// posts to) is a control event, and names the stream's session when its URL carries one
/// ([`query_session_id`]); any other event is a message.
pub fn event_role(event_type: &str, data: &str) -> EventRole {
    match event_type {
        "endpoint" if query_session_id(data).is_some() => EventRole::NamesSession,
        "endpoint" => EventRole::Control,
        _ => EventRole::Message,
    }
}

/// MCP's reading of an exchange: what its HTTP facts mean to the protocol.
pub trait McpExchange {
    /// The request's `Last-Event-ID` as a resumption cursor: `None` on the legacy transport
    /// (2024-11-05), where a GET that gets an `endpoint` event opens a new session whatever
    /// cursor an EventSource sent (MCP 2024-11-05 "HTTP with SSE"), and on a request that
    /// declares MCP 2026-07-28 or later (`MCP-Protocol-Version`), which has no resumption (MCP
    /// 2026-07-28 "Streamable HTTP", "Receiving Messages").
    fn resume_cursor(&self) -> Option<&str>;
}

impl McpExchange for Exchange {
    fn resume_cursor(&self) -> Option<&str> {
        let stateless = self
            .req_header("mcp-protocol-version")
            .is_some_and(|v| Era::of_version(v) == Era::V2026_07_28);
        self.req_header("last-event-id")
            .filter(|_| self.sse.session_event.is_none() && !stateless)
    }
}

/// The `sessionId` (or Python SDK `session_id`) query parameter of a URL or path (legacy
/// HTTP+SSE transport, MCP 2024-11-05).
pub(crate) fn query_session_id(target: &str) -> Option<&str> {
    let q = target.split_once('?')?.1;
    // `sessionId` (TS SDK, spec examples) or `session_id` (Python SDK).
    q.split('&')
        .find_map(|kv| {
            kv.strip_prefix("sessionId=")
                .or_else(|| kv.strip_prefix("session_id="))
        })
        .map(|v| v.split('#').next().unwrap_or(v))
        .filter(|v| !v.is_empty())
}

/// Whether an exchange is a client's `initialize` POST outside any session (no `Mcp-Session-Id`
/// on the request): MCP "Lifecycle", initialization.
pub fn is_initialize(e: &Exchange) -> bool {
    e.method() == "POST"
        && e.req_header("mcp-session-id").is_none()
        && e.rpc.request.iter().any(|m| {
            m.kind == crate::jsonrpc::Kind::Request && m.method.as_deref() == Some("initialize")
        })
}

/// The session key of an exchange: `Mcp-Session-Id`; else, for the legacy HTTP+SSE transport
/// (2024-11-05), the `sessionId` query parameter of the POST target or of the GET stream's
/// `endpoint` event; else none.
pub fn session_key_of(e: &Exchange) -> Option<String> {
    if let Some(s) = session_id_of(e) {
        return Some(s.to_string());
    }
    if let Some(s) = e.request.as_ref().and_then(|h| query_session_id(&h.target)) {
        return Some(s.to_string());
    }
    e.sse
        .session_event
        .as_deref()
        .and_then(query_session_id)
        .map(str::to_string)
}

impl Model {
    /// Build the model from exchanges sorted by time and their hops ([`hops::link`]).
    pub fn build(exchanges: &[Exchange], hops: hops::Hops) -> Model {
        let mut b = Builder::new(exchanges, hops);
        // Headless exchanges (the capture began inside their event stream: no header names
        // their session) wait: a resumption that names an id one of them delivered takes it
        // into its session, as the earlier connection of the stream it resumes. Those no
        // resumption names are read last, as exchanges without a session.
        for (pass, xi) in (0..exchanges.len())
            .map(|xi| (0, xi))
            .chain((0..exchanges.len()).map(|xi| (1, xi)))
        {
            let e = &exchanges[xi];
            if (pass == 0) == e.headless.is_some() || b.adopted.contains(&xi) {
                continue;
            }
            if b.m.hops.primary.get(xi).is_some_and(Option::is_some) {
                continue;
            }
            b.add(xi);
        }
        b.finish()
    }

    /// The backend that served exchange `xi`, when known.
    pub fn backend(&self, xi: usize) -> Option<&str> {
        self.hops.backend.get(xi).and_then(|b| b.as_deref())
    }

    fn new_stream(&mut self, session: usize, origin: usize, kind: StreamKind) -> usize {
        self.streams.push(LogicalStream {
            session,
            origin,
            kind,
            connections: vec![origin],
        });
        self.streams.len() - 1
    }

    /// The `id_format` column of a stream: the name of the format every id it carried shares
    /// (`opaque` when they mix formats), and for plain integers whether the
    /// stream's own ids stepped by one (`integer_dense`) or not (`integer_sparse`, e.g. a
    /// counter shared by the whole server), or just `integer` when one id cannot tell; `none`
    /// when the stream carried no id.
    pub fn stream_id_format_label(&self, st: usize, exchanges: &[Exchange]) -> &'static str {
        // One pass over the stream's own ids: the format, and (for plain integers, read as they
        // come: a stream may carry millions of ids) whether its forward steps were all by one.
        // Replays repeat or go back; density is judged on the forward steps only.
        let mut fmt: Option<IdFormat> = None;
        let (mut prev, mut forward, mut dense) = (None::<u128>, false, true);
        let own = self.streams[st]
            .connections
            .iter()
            .flat_map(|&x| exchanges[x].sse.events.own_ids());
        for (truncated, id) in own {
            let p = ids::parse(id);
            match fmt {
                None => fmt = Some(p.format),
                Some(g) if g != p.format => return IdFormat::Opaque.as_str(),
                _ => {}
            }
            // Opaque ids, or ids of any other format after them, make the stream opaque.
            if p.format == IdFormat::Opaque {
                return IdFormat::Opaque.as_str();
            }
            if truncated {
                continue;
            }
            if let Some(seq) = p.seq.filter(|_| p.format == IdFormat::Integer) {
                if let Some(q) = prev.filter(|&q| seq > q) {
                    forward = true;
                    dense &= seq - q == 1;
                }
                prev = Some(seq);
            }
        }
        match fmt {
            None => "none",
            Some(IdFormat::Integer) => match (forward, dense) {
                (false, _) => "integer",
                (true, true) => "integer_dense",
                (true, false) => "integer_sparse",
            },
            Some(f) => f.as_str(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{query_session_id, Era};

    #[test]
    fn legacy_session_query_parameter() {
        assert_eq!(query_session_id("/messages?sessionId=abc"), Some("abc"));
        assert_eq!(
            query_session_id("/messages/?session_id=9f3e&x=1"),
            Some("9f3e")
        );
        assert_eq!(query_session_id("/messages?other=1"), None);
        assert_eq!(query_session_id("/messages?sessionId="), None);
    }

    #[test]
    fn era_of_version() {
        assert_eq!(Era::of_version("2024-11-05"), Era::Legacy);
        assert_eq!(Era::of_version("2025-03-26"), Era::V2025_03_26);
        assert_eq!(Era::of_version("2025-06-18"), Era::V2025_06_18);
        assert_eq!(Era::of_version("2025-11-25"), Era::V2025_11_25);
        assert_eq!(Era::of_version("2026-01-01"), Era::V2025_11_25);
        assert_eq!(Era::of_version("2026-07-28"), Era::V2026_07_28);
        assert_eq!(Era::of_version("2027-01-01"), Era::V2026_07_28);
        assert_eq!(Era::of_version("DRAFT-2026-v1"), Era::Unknown);
        assert_eq!(Era::of_version(""), Era::Unknown);
        assert!(!Era::V2026_07_28.stateful() && Era::Legacy.stateful());
    }
}
