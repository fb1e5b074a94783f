//! The SSE events of one response, kept compactly until the end of the run.
//!
//! Every event of a capture stays in memory until the detectors have run (a resumption may name
//! any earlier event). As Rust structures an event took about 340 bytes (its SSE fields, an
//! inline JSON-RPC message, a heap copy of a long event id); here it takes a 56-byte fixed
//! record plus its message members encoded in one byte buffer and its strings in one text
//! buffer per response (an MCP method name in one byte), about 115 bytes for an MCP event with a
//! UUID-based id. [`EventLog::iter`] gives borrowed views
//! ([`EventRec`]) whose fields have the shapes of the parsed event; their messages are decoded
//! when iterated ([`Messages::iter`]) or read borrowed ([`Messages::refs`]).
//!
//! An event id the same as the previous one's (the last-event-id buffer carries over to events
//! without their own `id:` line) is stored once and referred to, so a long id cannot multiply.

use crate::jsonrpc::{Kind, Message, Rare};
use crate::sse::SseEvent;

/// The events of one response, in order. Strings and messages are stored encoded; nothing is
/// lost: every field of the event's [`SseEvent`] (except `data`, of which a length and hash stay)
/// and of its messages comes back from [`EventLog::iter`].
#[derive(Debug, Clone, Default)]
pub struct EventLog {
    fixed: Vec<Fixed>,
    /// The events' variable parts end to end: varints, flags and numbers (their strings are in
    /// `text`).
    bytes: Vec<u8>,
    /// The events' strings end to end, in the order their variable parts name them: read back
    /// as `&str` without validating the UTF-8 again.
    text: String,
    /// Where the last event id written to `text` is (position, length): an event whose id is
    /// the same (the last-event-id buffer carries over to events without an `id:` line) refers
    /// to it instead of copying it.
    last_id: Option<(usize, usize)>,
    /// Messages of all events.
    messages: u64,
}

/// The fixed-size part of one event.
#[derive(Debug, Clone, Copy)]
struct Fixed {
    offset: u64,
    frame_first: u64,
    frame_last: u64,
    ts: i64,
    data_hash: u64,
    /// Start of the event's variable part in `bytes`.
    start: u64,
    data_len: u32,
    flags: u8,
}

const HAS_OWN_ID: u8 = 1;
const TRUNCATED: u8 = 2;
const PRIMING: u8 = 4;
const HAS_RETRY: u8 = 8;
/// `data_len` is 4 GiB or more: the fixed field holds `u32::MAX`, the length follows `retry`.
const BIG_DATA: u8 = 16;
/// A message of the event is a JSON-RPC response or error.
const HAS_RESPONSE: u8 = 32;
/// A message of the event is a JSON-RPC request.
const HAS_REQUEST: u8 = 64;

/// One SSE event with the JSON-RPC messages of its `data`: a view into an [`EventLog`].
///
/// `data` itself is not kept: its length and a 64-bit hash stay, to compare payloads.
#[derive(Debug, Clone, Copy)]
pub struct EventRec<'a> {
    /// The event's SSE fields (WHATWG HTML §9.2), without `data`.
    pub sse: SseMeta<'a>,
    /// Length of `data`, in bytes.
    pub data_len: usize,
    /// 64-bit hash of `data` ([`crate::hash::hash64`]), to compare payloads.
    pub data_hash: u64,
    /// MCP 2025-11-25 priming event: an id with empty data (a cursor, not a message).
    pub priming: bool,
    /// Messages in `data` (empty for priming events, truncated events and non-JSON data).
    pub messages: Messages<'a>,
    /// Why `data` was not JSON, when it was not.
    pub parse_error: Option<&'a str>,
    /// The event's variable part in its log: its identity.
    var: &'a [u8],
}

/// The fixed fields of one event of an [`EventLog`] ([`EventLog::briefs`]): those of its
/// [`EventRec`] of the same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Brief {
    /// [`SseMeta::ts`].
    pub ts: i64,
    /// [`SseMeta::frame_first`].
    pub frame_first: u64,
    /// [`EventRec::data_hash`].
    pub data_hash: u64,
    /// [`SseMeta::has_own_id`].
    pub has_own_id: bool,
    /// [`SseMeta::truncated`].
    pub truncated: bool,
    /// [`EventRec::priming`].
    pub priming: bool,
    /// Whether [`EventRec::data_len`] is not 0.
    pub has_data: bool,
    /// Whether a message of the event is a JSON-RPC response or error.
    pub has_response: bool,
    /// Whether a message of the event is a JSON-RPC request.
    pub has_request: bool,
}

impl Brief {
    /// [`EventRec::carries_data`].
    pub fn carries_data(&self) -> bool {
        !self.truncated && !self.priming && self.has_data
    }
}

/// The fields of a dispatched SSE event block except `data` (see [`SseEvent`] for each).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SseMeta<'a> {
    /// Offset of the event's first byte in the (de-chunked) body, in bytes.
    pub offset: u64,
    /// Frame that carried its first byte.
    pub frame_first: u64,
    /// Frame that carried the blank line ending it.
    pub frame_last: u64,
    /// Time of `frame_last`, microseconds since the Unix epoch.
    pub ts: i64,
    /// Whether the block had its own `id:` line.
    pub has_own_id: bool,
    /// The last-event-id buffer after this block.
    pub id: Option<&'a str>,
    /// The `event:` type, if any.
    pub event_type: Option<&'a str>,
    /// The `retry:` value in milliseconds, if a valid one was present.
    pub retry: Option<u64>,
    /// Set for an event cut by the end of the stream.
    pub truncated: bool,
}

/// The members of a JSON-RPC message most readers need, borrowed (from an [`EventLog`] or a
/// [`Message`]): see [`Message`] for each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MessageRef<'a> {
    /// Request, notification, response, error or invalid.
    pub kind: Kind,
    /// `method`.
    pub method: Option<&'a str>,
    /// `id` as compact JSON text.
    pub id: Option<&'a str>,
    /// `params.progressToken` of `notifications/progress`, as compact JSON text.
    pub progress_token: Option<&'a str>,
    /// `params.progress` of `notifications/progress`.
    pub progress: Option<f64>,
    /// `error.code` of an error.
    pub error_code: Option<i64>,
}

impl<'a> MessageRef<'a> {
    /// The members of `m`, borrowed.
    pub fn of(m: &'a Message) -> MessageRef<'a> {
        MessageRef {
            kind: m.kind,
            method: m.method.as_deref(),
            id: m.id.as_deref(),
            progress_token: m.progress_token.as_deref(),
            progress: m.progress,
            error_code: m.error_code(),
        }
    }
}

/// The JSON-RPC messages of one event, encoded; [`Messages::iter`] decodes them.
#[derive(Clone, Copy)]
pub struct Messages<'a> {
    count: usize,
    bytes: &'a [u8],
    text: &'a str,
}

impl std::fmt::Debug for Messages<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> Messages<'a> {
    /// How many messages.
    pub fn len(&self) -> usize {
        self.count
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// The messages, decoded in order.
    pub fn iter(&self) -> impl Iterator<Item = Message> + 'a {
        let mut r = Reader {
            b: self.bytes,
            t: self.text,
        };
        (0..self.count).map_while(move |_| read_message(&mut r))
    }
    /// The `protocolVersion` of each message that has one ([`Message::protocol_version`]),
    /// borrowed.
    pub fn protocol_versions(&self) -> impl Iterator<Item = &'a str> + 'a {
        let mut r = Reader {
            b: self.bytes,
            t: self.text,
        };
        (0..self.count)
            .map_while(move |_| read_parts(&mut r))
            .filter_map(|p| p.rare?.protocol_version)
    }
    /// Each message's common members, borrowed from the log: nothing is decoded into a
    /// [`Message`] (no allocation).
    pub fn refs(&self) -> impl Iterator<Item = MessageRef<'a>> + 'a {
        let mut r = Reader {
            b: self.bytes,
            t: self.text,
        };
        (0..self.count).map_while(move |_| {
            read_parts(&mut r).map(|p| MessageRef {
                kind: p.kind,
                method: p.method,
                id: p.id,
                progress_token: p.progress_token,
                progress: p.progress,
                error_code: p.rare.as_ref().and_then(|r| r.error_code),
            })
        })
    }
}

impl<'a> EventRec<'a> {
    /// Whether the event carries a payload the client handled: complete (not truncated), not a
    /// priming event, with data.
    pub fn carries_data(&self) -> bool {
        !self.sse.truncated && !self.priming && self.data_len > 0
    }
    /// Whether both are views of the same event of the same log.
    pub fn is(&self, other: &EventRec<'_>) -> bool {
        std::ptr::eq(self.var, other.var)
    }
}

impl EventLog {
    /// Number of events.
    pub fn len(&self) -> usize {
        self.fixed.len()
    }
    /// Whether there are no events.
    pub fn is_empty(&self) -> bool {
        self.fixed.is_empty()
    }
    /// Event `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<EventRec<'_>> {
        (i < self.len()).then(|| self.at(i))
    }
    /// The events in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            log: self,
            range: 0..self.len(),
        }
    }
    fn at(&self, i: usize) -> EventRec<'_> {
        view(&self.fixed[i], self.var(i), &self.text)
    }
    /// The variable part of event `i` (it ends where the next event's starts).
    fn var(&self, i: usize) -> &[u8] {
        let end = self
            .fixed
            .get(i + 1)
            .map_or(self.bytes.len(), |n| n.start as usize);
        self.fixed
            .get(i)
            .and_then(|f| self.bytes.get(f.start as usize..end))
            .unwrap_or(&[])
    }
    /// Append an event: its SSE fields, the length and hash of its data, and what its data
    /// parsed to.
    pub fn push(
        &mut self,
        ev: &SseEvent,
        data_hash: u64,
        priming: bool,
        messages: &[Message],
        parse_error: Option<&str>,
    ) {
        // Logs grow from a first room of 16 events (given back by `shrink_to_fit` when the
        // response ends): fewer reallocations while they are short.
        if self.fixed.capacity() == 0 {
            self.fixed.reserve(16);
            self.bytes.reserve(16 * 24);
            self.text.reserve(16 * 48);
        }
        let start = self.bytes.len() as u64;
        let (b, t) = (&mut self.bytes, &mut self.text);
        // Where the event's strings start in `text`.
        put_varint(b, t.len() as u64);
        match ev.id.as_deref() {
            None => b.push(0),
            Some(id) => match self.last_id {
                Some((pos, len)) if t.get(pos..pos + len) == Some(id) => {
                    b.push(1);
                    put_varint(b, pos as u64);
                    put_varint(b, len as u64);
                }
                _ => {
                    put_varint(b, id.len() as u64 + 2);
                    self.last_id = Some((t.len(), id.len()));
                    t.push_str(id);
                }
            },
        }
        match ev.event_type.as_deref() {
            None => b.push(0),
            Some("message") => b.push(1),
            Some(ty) => {
                b.push(2);
                put_str(b, t, ty);
            }
        }
        put_opt_str(b, t, parse_error);
        if let Some(r) = ev.retry {
            put_varint(b, r);
        }
        let big = u32::try_from(ev.data.len()).is_err();
        if big {
            put_varint(b, ev.data.len() as u64);
        }
        put_varint(b, messages.len() as u64);
        for m in messages {
            put_message(b, t, m);
        }
        self.messages += messages.len() as u64;
        let flags = (ev.has_own_id as u8 * HAS_OWN_ID)
            | (ev.truncated as u8 * TRUNCATED)
            | (priming as u8 * PRIMING)
            | (ev.retry.is_some() as u8 * HAS_RETRY)
            | (big as u8 * BIG_DATA)
            | (messages
                .iter()
                .any(|m| matches!(m.kind, Kind::Response | Kind::Error)) as u8
                * HAS_RESPONSE)
            | (messages.iter().any(|m| m.kind == Kind::Request) as u8 * HAS_REQUEST);
        self.fixed.push(Fixed {
            offset: ev.offset,
            frame_first: ev.frame_first,
            frame_last: ev.frame_last,
            ts: ev.ts,
            data_hash,
            start,
            data_len: u32::try_from(ev.data.len()).unwrap_or(u32::MAX),
            flags,
        });
    }
    /// The ids of the events that had their own `id:` line, in order, each with whether the
    /// event was truncated: only the id is read of each event.
    pub fn own_ids(&self) -> impl Iterator<Item = (bool, &str)> + '_ {
        self.fixed.iter().enumerate().filter_map(|(i, f)| {
            if f.flags & HAS_OWN_ID == 0 {
                return None;
            }
            Some((f.flags & TRUNCATED != 0, self.id_of(i)?))
        })
    }
    /// The last-event-id buffer after event `i` (its [`SseMeta::id`]), read alone.
    pub fn id_of(&self, i: usize) -> Option<&str> {
        let mut r = Reader {
            b: self.var(i),
            t: "",
        };
        r.t = self.text.get(r.varint()? as usize..)?;
        read_id(&mut r, &self.text)
    }
    /// Each event's index and fixed fields, in order, read without decoding the rest: for
    /// passes that look at most events only to skip them ([`EventLog::get`] reads one whole).
    pub fn briefs(&self) -> impl Iterator<Item = (usize, Brief)> + '_ {
        self.fixed.iter().enumerate().map(|(i, f)| {
            (
                i,
                Brief {
                    ts: f.ts,
                    frame_first: f.frame_first,
                    data_hash: f.data_hash,
                    has_own_id: f.flags & HAS_OWN_ID != 0,
                    truncated: f.flags & TRUNCATED != 0,
                    priming: f.flags & PRIMING != 0,
                    has_data: f.data_len > 0,
                    has_response: f.flags & HAS_RESPONSE != 0,
                    has_request: f.flags & HAS_REQUEST != 0,
                },
            )
        })
    }
    /// Number of messages of all events.
    pub fn message_count(&self) -> u64 {
        self.messages
    }
    /// Bytes the log's records take (fixed parts, variable parts, strings), not counting spare
    /// capacity.
    pub fn bytes_used(&self) -> usize {
        self.fixed.len() * std::mem::size_of::<Fixed>() + self.bytes.len() + self.text.len()
    }
    /// Remove the last event (one pushed and then not kept), as if it had not been pushed.
    pub fn pop(&mut self) {
        let Some(i) = self.len().checked_sub(1) else {
            return;
        };
        let (start, text_at, n) = {
            let var = self.var(i);
            let text_at = Reader { b: var, t: "" }.varint().unwrap_or(0) as usize;
            (
                self.fixed[i].start as usize,
                text_at,
                self.at(i).messages.len() as u64,
            )
        };
        self.fixed.pop();
        self.bytes.truncate(start);
        self.text.truncate(text_at.min(self.text.len()));
        self.messages -= n.min(self.messages);
        if self
            .last_id
            .is_some_and(|(pos, len)| pos + len > self.text.len())
        {
            self.last_id = None;
        }
    }
    /// Give back spare capacity (the log is kept until the end of the run).
    pub fn shrink_to_fit(&mut self) {
        self.fixed.shrink_to_fit();
        self.bytes.shrink_to_fit();
        self.text.shrink_to_fit();
    }
    /// Move every event's time by `delta_us`.
    pub fn shift_time(&mut self, delta_us: i64) {
        for f in &mut self.fixed {
            f.ts = f.ts.saturating_add(delta_us);
        }
    }
}

/// Iterator over an [`EventLog`]'s events ([`EventLog::iter`]).
#[derive(Clone)]
pub struct Iter<'a> {
    log: &'a EventLog,
    range: std::ops::Range<usize>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = EventRec<'a>;
    fn next(&mut self) -> Option<EventRec<'a>> {
        self.range.next().map(|i| self.log.at(i))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.range.next_back().map(|i| self.log.at(i))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a EventLog {
    type Item = EventRec<'a>;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The event id at the start of an event's variable part (`all`: the log's whole text, which a
/// carried-over id refers into).
fn read_id<'a>(r: &mut Reader<'a>, all: &'a str) -> Option<&'a str> {
    match r.varint() {
        Some(0) | None => None,
        Some(1) => {
            let (pos, len) = (r.varint(), r.varint());
            pos.zip(len)
                .and_then(|(p, l)| all.get(p as usize..(p as usize).checked_add(l as usize)?))
        }
        Some(n) => r.text(n as usize - 2),
    }
}

/// The event with fixed part `f` and variable part `var`, in the log whose text is `all`.
fn view<'a>(f: &Fixed, var: &'a [u8], all: &'a str) -> EventRec<'a> {
    let mut r = Reader { b: var, t: "" };
    r.t = r
        .varint()
        .and_then(|at| all.get(at as usize..))
        .unwrap_or("");
    let id = read_id(&mut r, all);
    let event_type = match r.byte() {
        Some(1) => Some("message"),
        Some(2) => r.str(),
        _ => None,
    };
    let parse_error = r.opt_str();
    let retry = if f.flags & HAS_RETRY != 0 {
        r.varint()
    } else {
        None
    };
    let data_len = if f.flags & BIG_DATA != 0 {
        r.varint().unwrap_or(u64::from(f.data_len)) as usize
    } else {
        f.data_len as usize
    };
    let count = r.varint().unwrap_or(0) as usize;
    EventRec {
        sse: SseMeta {
            offset: f.offset,
            frame_first: f.frame_first,
            frame_last: f.frame_last,
            ts: f.ts,
            has_own_id: f.flags & HAS_OWN_ID != 0,
            id,
            event_type,
            retry,
            truncated: f.flags & TRUNCATED != 0,
        },
        data_len,
        data_hash: f.data_hash,
        priming: f.flags & PRIMING != 0,
        messages: Messages {
            count,
            bytes: r.b,
            text: r.t,
        },
        parse_error,
        var,
    }
}

// Encoding: LEB128 varints; strings as a varint length, their text appended to the log's
// `text`; an optional string as 0 (absent) or length + 1; f64 as its 8 IEEE 754 bytes (exact,
// -0.0 and all). A method of [`METHODS`] is its index + 1, any other 0 then the string. An
// event's variable part starts with where its strings start in `text`, then its id: 0 (none), 1
// then position and length in `text` (the previous event's id, carried over), or its length + 2.

fn put_varint(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

fn put_str(b: &mut Vec<u8>, t: &mut String, s: &str) {
    put_varint(b, s.len() as u64);
    t.push_str(s);
}

fn put_opt_str(b: &mut Vec<u8>, t: &mut String, s: Option<&str>) {
    match s {
        None => b.push(0),
        Some(s) => {
            put_varint(b, s.len() as u64 + 1);
            t.push_str(s);
        }
    }
}

/// The methods of MCP 2025-11-25 (and 2026-07-28's tasks): an event names one of them in one
/// byte instead of copying it (`notifications/progress`, 22 bytes, is on most events).
const METHODS: [&str; 31] = [
    "notifications/progress",
    "notifications/message",
    "notifications/cancelled",
    "notifications/initialized",
    "notifications/resources/updated",
    "notifications/resources/list_changed",
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/roots/list_changed",
    "notifications/elicitation/complete",
    "notifications/tasks/status",
    "initialize",
    "ping",
    "tools/call",
    "tools/list",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
];

fn put_method(b: &mut Vec<u8>, t: &mut String, m: &str) {
    match METHODS.iter().position(|k| *k == m) {
        Some(i) => put_varint(b, i as u64 + 1),
        None => {
            b.push(0);
            put_str(b, t, m);
        }
    }
}

const M_METHOD: u8 = 1;
const M_ID: u8 = 2;
const M_TOKEN: u8 = 4;
const M_PROGRESS: u8 = 8;
const M_TOTAL: u8 = 16;
const M_RARE: u8 = 32;

const R_RPT: u8 = 1;
const R_VERSION: u8 = 2;
const R_PARAMS: u8 = 4;
const R_CANCELS: u8 = 8;
const R_TARGET: u8 = 16;
const R_ERROR_CODE: u8 = 32;

fn kind_code(k: Kind) -> u8 {
    match k {
        Kind::Request => 0,
        Kind::Notification => 1,
        Kind::Response => 2,
        Kind::Error => 3,
        Kind::Invalid => 4,
    }
}

fn put_message(b: &mut Vec<u8>, t: &mut String, m: &Message) {
    b.push(kind_code(m.kind));
    let bits = (m.method.is_some() as u8 * M_METHOD)
        | (m.id.is_some() as u8 * M_ID)
        | (m.progress_token.is_some() as u8 * M_TOKEN)
        | (m.progress.is_some() as u8 * M_PROGRESS)
        | (m.progress_total.is_some() as u8 * M_TOTAL)
        | (m.rare.is_some() as u8 * M_RARE);
    b.push(bits);
    if let Some(s) = &m.method {
        put_method(b, t, s);
    }
    for s in [&m.id, &m.progress_token].into_iter().flatten() {
        put_str(b, t, s);
    }
    for v in [m.progress, m.progress_total].into_iter().flatten() {
        b.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    if let Some(r) = &m.rare {
        let bits = (r.request_progress_token.is_some() as u8 * R_RPT)
            | (r.protocol_version.is_some() as u8 * R_VERSION)
            | (r.params_hash.is_some() as u8 * R_PARAMS)
            | (r.cancels.is_some() as u8 * R_CANCELS)
            | (r.target.is_some() as u8 * R_TARGET)
            | (r.error_code.is_some() as u8 * R_ERROR_CODE);
        b.push(bits);
        for s in [&r.request_progress_token, &r.protocol_version]
            .into_iter()
            .flatten()
        {
            put_str(b, t, s);
        }
        if let Some(h) = r.params_hash {
            b.extend_from_slice(&h.to_le_bytes());
        }
        for s in [&r.cancels, &r.target].into_iter().flatten() {
            put_str(b, t, s);
        }
        if let Some(c) = r.error_code {
            b.extend_from_slice(&c.to_le_bytes());
        }
        put_varint(b, r.app_seq.len() as u64);
        for (i, v) in &r.app_seq {
            put_varint(b, *i as u64);
            b.extend_from_slice(&v.to_bits().to_le_bytes());
        }
    }
}

/// Reads what the `put_*` functions wrote; `None` on bytes it did not write (never happens on a
/// log's own bytes, but a view must not panic).
struct Reader<'a> {
    /// The variable part from here on.
    b: &'a [u8],
    /// The strings from here on.
    t: &'a str,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.b.split_first()?;
        self.b = rest;
        Some(b)
    }
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.b.len() {
            return None;
        }
        let (a, rest) = self.b.split_at(n);
        self.b = rest;
        Some(a)
    }
    /// The next `n` bytes of text.
    fn text(&mut self, n: usize) -> Option<&'a str> {
        let s = self.t.get(..n)?;
        self.t = self.t.get(n..)?;
        Some(s)
    }
    fn str(&mut self) -> Option<&'a str> {
        let n = self.varint()? as usize;
        self.text(n)
    }
    fn opt_str(&mut self) -> Option<&'a str> {
        let n = self.varint()? as usize;
        if n == 0 {
            return None;
        }
        self.text(n - 1)
    }
    fn method(&mut self) -> Option<&'a str> {
        match self.varint()? {
            0 => self.str(),
            i => METHODS.get(i as usize - 1).copied(),
        }
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

/// One encoded message, its strings borrowed from the log: what [`read_message`] and
/// [`Messages::refs`] read.
struct Parts<'a> {
    kind: Kind,
    method: Option<&'a str>,
    id: Option<&'a str>,
    progress_token: Option<&'a str>,
    progress: Option<f64>,
    progress_total: Option<f64>,
    rare: Option<RareParts<'a>>,
}

struct RareParts<'a> {
    request_progress_token: Option<&'a str>,
    protocol_version: Option<&'a str>,
    params_hash: Option<u64>,
    cancels: Option<&'a str>,
    target: Option<&'a str>,
    error_code: Option<i64>,
    /// Number of (pointer index, value) pairs, and their encoding.
    app_seq: (usize, &'a [u8]),
}

fn read_parts<'a>(r: &mut Reader<'a>) -> Option<Parts<'a>> {
    let kind = match r.byte()? {
        0 => Kind::Request,
        1 => Kind::Notification,
        2 => Kind::Response,
        3 => Kind::Error,
        _ => Kind::Invalid,
    };
    let bits = r.byte()?;
    let method = if bits & M_METHOD != 0 {
        Some(r.method()?)
    } else {
        None
    };
    let mut s = |bit: u8| -> Option<Option<&'a str>> {
        Some(if bits & bit != 0 {
            Some(r.str()?)
        } else {
            None
        })
    };
    let (id, progress_token) = (s(M_ID)?, s(M_TOKEN)?);
    let mut f = |bit: u8| -> Option<Option<f64>> {
        Some(if bits & bit != 0 {
            Some(f64::from_bits(r.u64()?))
        } else {
            None
        })
    };
    let (progress, progress_total) = (f(M_PROGRESS)?, f(M_TOTAL)?);
    let rare = if bits & M_RARE != 0 {
        let rb = r.byte()?;
        let mut s = |bit: u8| -> Option<Option<&'a str>> {
            Some(if rb & bit != 0 { Some(r.str()?) } else { None })
        };
        let (request_progress_token, protocol_version) = (s(R_RPT)?, s(R_VERSION)?);
        let params_hash = if rb & R_PARAMS != 0 {
            Some(r.u64()?)
        } else {
            None
        };
        let mut opt_str = |bit: u8| -> Option<Option<&'a str>> {
            Some(if rb & bit != 0 { Some(r.str()?) } else { None })
        };
        let (cancels, target) = (opt_str(R_CANCELS)?, opt_str(R_TARGET)?);
        let error_code = if rb & R_ERROR_CODE != 0 {
            Some(r.u64()? as i64)
        } else {
            None
        };
        let n = r.varint()? as usize;
        let start = r.b;
        for _ in 0..n {
            r.varint()?;
            r.u64()?;
        }
        let used = start.len() - r.b.len();
        Some(RareParts {
            request_progress_token,
            protocol_version,
            params_hash,
            cancels,
            target,
            error_code,
            app_seq: (n, &start[..used]),
        })
    } else {
        None
    };
    Some(Parts {
        kind,
        method,
        id,
        progress_token,
        progress,
        progress_total,
        rare,
    })
}

fn read_message(r: &mut Reader<'_>) -> Option<Message> {
    let p = read_parts(r)?;
    let rare = match p.rare {
        Some(x) => {
            let mut ar = Reader {
                b: x.app_seq.1,
                t: "",
            };
            let mut app_seq = Vec::with_capacity(x.app_seq.0);
            for _ in 0..x.app_seq.0 {
                app_seq.push((ar.varint()? as usize, f64::from_bits(ar.u64()?)));
            }
            Some(Box::new(Rare {
                request_progress_token: x.request_progress_token.map(str::to_string),
                protocol_version: x.protocol_version.map(str::to_string),
                params_hash: x.params_hash,
                cancels: x.cancels.map(str::to_string),
                app_seq,
                target: x.target.map(str::to_string),
                error_code: x.error_code,
            }))
        }
        None => None,
    };
    Some(Message {
        kind: p.kind,
        method: p.method.map(crate::text::Short::from),
        id: p.id.map(crate::text::Short::from),
        progress_token: p.progress_token.map(crate::text::Short::from),
        progress: p.progress,
        progress_total: p.progress_total,
        rare,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn opt_text() -> impl Strategy<Value = Option<String>> {
        // Empty, short (inline `Short`), long (heap), multi-byte.
        prop::option::of(prop_oneof![
            Just(String::new()),
            "[a-z0-9_/-]{1,10}",
            "[a-f0-9-]{30,60}",
            "[é☃🙂 a\"\\\\]{1,8}",
            Just("notifications/progress".to_string()),
            Just("tasks/cancel".to_string()),
        ])
    }

    fn num() -> impl Strategy<Value = Option<f64>> {
        prop::option::of(prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(1e300),
            Just(f64::MIN_POSITIVE),
            -1e6f64..1e6,
        ])
    }

    fn kind() -> impl Strategy<Value = Kind> {
        prop_oneof![
            Just(Kind::Request),
            Just(Kind::Notification),
            Just(Kind::Response),
            Just(Kind::Error),
            Just(Kind::Invalid),
        ]
    }

    fn rare() -> impl Strategy<Value = Option<Box<Rare>>> {
        (
            opt_text(),
            opt_text(),
            prop::option::of(any::<u64>()),
            opt_text(),
            prop::collection::vec((0usize..1000, -1e9f64..1e9), 0..3),
            opt_text(),
            prop::option::of(any::<i64>()),
        )
            .prop_map(|(a, b, c, d, e, f, g)| {
                Rare {
                    request_progress_token: a,
                    protocol_version: b,
                    params_hash: c,
                    cancels: d,
                    app_seq: e,
                    target: f,
                    error_code: g,
                }
                .boxed()
            })
    }

    fn message() -> impl Strategy<Value = Message> {
        (
            kind(),
            opt_text(),
            opt_text(),
            opt_text(),
            num(),
            num(),
            rare(),
        )
            .prop_map(
                |(kind, method, id, token, progress, progress_total, rare)| Message {
                    kind,
                    method: method.map(Into::into),
                    id: id.map(Into::into),
                    progress_token: token.map(Into::into),
                    progress,
                    progress_total,
                    rare,
                },
            )
    }

    type Input = (SseEvent, u64, bool, Vec<Message>, Option<String>);

    fn event() -> impl Strategy<Value = Input> {
        (
            (any::<u64>(), any::<u64>(), any::<u64>(), any::<i64>()),
            (any::<bool>(), any::<bool>(), any::<bool>()),
            // Often the same id again (carried over to events without an `id:` line).
            prop_oneof![
                opt_text(),
                Just(Some("9f3e2d1c-0000-4a4a-8b8b-123456789abc_7".to_string())),
            ],
            prop::option::of(prop_oneof![
                Just("message".to_string()),
                Just(String::new()),
                "[a-z]{1,12}"
            ]),
            prop::option::of(any::<u64>()),
            ".{0,40}",
            any::<u64>(),
            prop::collection::vec(message(), 0..3),
            opt_text(),
        )
            .prop_map(
                |(
                    (offset, ff, fl, ts),
                    (own, trunc, priming),
                    id,
                    ty,
                    retry,
                    data,
                    hash,
                    msgs,
                    err,
                )| {
                    let ev = SseEvent {
                        offset,
                        frame_first: ff,
                        frame_last: fl,
                        ts,
                        has_own_id: own,
                        id: id.map(Into::into),
                        event_type: ty.map(Into::into),
                        data,
                        retry,
                        truncated: trunc,
                    };
                    (ev, hash, priming, msgs, err)
                },
            )
    }

    fn same_message(a: &Message, b: &Message) -> bool {
        // f64 members compared bit for bit (-0.0 and 0.0 differ).
        let bits = |v: Option<f64>| v.map(f64::to_bits);
        a.kind == b.kind
            && a.method == b.method
            && a.id == b.id
            && a.progress_token == b.progress_token
            && bits(a.progress) == bits(b.progress)
            && bits(a.progress_total) == bits(b.progress_total)
            && a.rare == b.rare
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// Every field of every event comes back from the log as it went in, in order, by
        /// iteration (both ways) and by index.
        #[test]
        fn log_gives_back_what_was_pushed(input in prop::collection::vec(event(), 0..12)) {
            let mut log = EventLog::default();
            for (ev, hash, priming, msgs, err) in &input {
                log.push(ev, *hash, *priming, msgs, err.as_deref());
            }
            log.shrink_to_fit();
            prop_assert_eq!(log.len(), input.len());
            prop_assert_eq!(log.iter().len(), input.len());
            let back: Vec<EventRec> = log.iter().rev().collect();
            for (i, (ev, hash, priming, msgs, err)) in input.iter().enumerate() {
                let v = log.get(i).unwrap();
                prop_assert!(v.is(&back[input.len() - 1 - i]));
                prop_assert_eq!(v.sse, SseMeta {
                    offset: ev.offset,
                    frame_first: ev.frame_first,
                    frame_last: ev.frame_last,
                    ts: ev.ts,
                    has_own_id: ev.has_own_id,
                    id: ev.id.as_deref(),
                    event_type: ev.event_type.as_deref(),
                    retry: ev.retry,
                    truncated: ev.truncated,
                });
                prop_assert_eq!(v.data_len, ev.data.len());
                prop_assert_eq!(v.data_hash, *hash);
                prop_assert_eq!(v.priming, *priming);
                prop_assert_eq!(v.parse_error, err.as_deref());
                prop_assert_eq!(v.messages.len(), msgs.len());
                let versions: Vec<&str> = v.messages.protocol_versions().collect();
                let want_versions: Vec<&str> =
                    msgs.iter().filter_map(|m| m.protocol_version()).collect();
                prop_assert_eq!(versions, want_versions);
                let refs: Vec<MessageRef> = v.messages.refs().collect();
                let want: Vec<MessageRef> = msgs.iter().map(MessageRef::of).collect();
                prop_assert_eq!(refs.len(), want.len());
                for (a, b) in refs.iter().zip(&want) {
                    prop_assert!(
                        a.progress.map(f64::to_bits) == b.progress.map(f64::to_bits)
                            && (a.kind, a.method, a.id, a.progress_token)
                                == (b.kind, b.method, b.id, b.progress_token)
                    );
                }
                let got: Vec<Message> = v.messages.iter().collect();
                prop_assert_eq!(got.len(), msgs.len());
                for (g, m) in got.iter().zip(msgs) {
                    prop_assert!(same_message(g, m), "{:?} != {:?}", g, m);
                }
                if i > 0 {
                    prop_assert!(!v.is(&log.get(i - 1).unwrap()));
                }
            }
            prop_assert!(log.get(input.len()).is_none());
            for (i, b) in log.briefs() {
                let v = log.get(i).unwrap();
                prop_assert_eq!(b, Brief {
                    ts: v.sse.ts,
                    frame_first: v.sse.frame_first,
                    data_hash: v.data_hash,
                    has_own_id: v.sse.has_own_id,
                    truncated: v.sse.truncated,
                    priming: v.priming,
                    has_data: v.data_len > 0,
                    has_response: v
                        .messages
                        .refs()
                        .any(|m| matches!(m.kind, Kind::Response | Kind::Error)),
                    has_request: v.messages.refs().any(|m| m.kind == Kind::Request),
                });
                prop_assert_eq!(b.carries_data(), v.carries_data());
                prop_assert_eq!(log.id_of(i), v.sse.id);
            }
            prop_assert_eq!(log.briefs().count(), input.len());
            let messages: usize = input.iter().map(|(_, _, _, m, _)| m.len()).sum();
            prop_assert_eq!(log.message_count(), messages as u64);
            let own: Vec<(bool, &str)> = input
                .iter()
                .filter(|(ev, ..)| ev.has_own_id)
                .filter_map(|(ev, ..)| Some((ev.truncated, ev.id.as_deref()?)))
                .collect();
            prop_assert_eq!(log.own_ids().collect::<Vec<_>>(), own);
        }
    }

    /// An id carried over to events without an `id:` line is stored once, however long.
    #[test]
    fn carried_over_id_is_stored_once() {
        let mut log = EventLog::default();
        let long = "x".repeat(100_000);
        for i in 0..1000 {
            let ev = SseEvent {
                has_own_id: i == 0,
                id: Some(long.as_str().into()),
                data: "d".into(),
                ..Default::default()
            };
            log.push(&ev, 0, false, &[], None);
        }
        let stored = log.bytes.len() + log.text.len();
        assert!(stored < long.len() + 1000 * 16, "{stored}");
        assert!(log.iter().all(|e| e.sse.id == Some(long.as_str())));
        assert!(log
            .iter()
            .enumerate()
            .all(|(i, e)| e.sse.has_own_id == (i == 0)));
    }

    #[test]
    fn time_shift_moves_every_event() {
        let mut log = EventLog::default();
        for ts in [10, 20] {
            let ev = SseEvent {
                ts,
                ..Default::default()
            };
            log.push(&ev, 0, false, &[], None);
        }
        log.shift_time(-5);
        let ts: Vec<i64> = log.iter().map(|e| e.sse.ts).collect();
        assert_eq!(ts, [5, 15]);
    }
}
