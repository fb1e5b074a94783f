//! Event streams the capture began inside.
//!
//! A capture of a long-lived SSE response (the standalone GET stream, a slow tool call) often
//! starts in its middle: no request or status line, only events, perhaps inside chunked
//! framing (RFC 9112 §7.1). Their events carry the cursors a later resumption names, so they
//! are searched for, not given up. [`sse_start`] and [`SseSearch`] find where such a stream can
//! be read from in a buffer of its bytes (a chunk boundary, or an event start after a blank
//! line; WHATWG HTML "server-sent events" §9.2.6 for the lines); [`HttpLayer`]'s headless
//! search holds a direction's bytes, bounded, while that is undecided, then reads from there
//! as a headless exchange ([`Exchange::headless`]).

use super::framing::{
    self, find_chunk_line, parse_chunk_size, size_line, BodyFrom, ChunkLine, DirParser,
};
use super::{not_http, Exchange, Headless, HttpLayer};
use crate::anomaly::{Anomaly, Code};
use crate::sse::SseParser;
use crate::tcp::{Dir, FlowMeta};

/// Whether `b` could be the inside of a text body (an event stream): no NUL and no control
/// character but TAB, CR and LF. Bytes of 0x80 and above pass (UTF-8 is checked per event).
pub(super) fn plausible_text(b: &[u8]) -> bool {
    b.iter()
        .all(|&c| (c >= 0x20 && c != 0x7f) || matches!(c, b'\t' | b'\r' | b'\n'))
}

/// Whether `b` starts like a line of an event stream (WHATWG HTML §9.2.6): a field this parser
/// knows (`id`, `data`, `event`, `retry`, each followed by a colon) or a comment (`:`).
fn sse_line_start(b: &[u8]) -> bool {
    b.starts_with(b":")
        || [&b"data:"[..], b"id:", b"event:", b"retry:"]
            .iter()
            .any(|f| b.starts_with(f))
}

/// Bytes of an event stream read past a blank line before it is taken as delimited by the
/// close ([`sse_start`]): a chunk boundary further on would show it chunked. Also the largest
/// chunk whose end is waited for.
pub const SSE_DEFER: usize = 32 << 10;

/// Whether `after` starts with a chunk-size line ([`chunk_size_line`]) whose data starts an
/// event line.
fn size_line_then_event(after: &[u8]) -> bool {
    chunk_size_line(after).is_some_and(|(len, _)| sse_line_start(&after[len..]))
}

/// Where an event stream whose start the capture missed can be read from, in `b` (bytes of the
/// body from an arbitrary point inside it; `at_start`: from the first byte the capture has of
/// this direction, or the first after a gap, where a chunk or an event may begin):
/// `Some((offset, framing))`.
///
/// - A chunk boundary (RFC 9112 §7.1): an event's end (a blank line), the CRLF that ends a
///   chunk's data and a chunk-size line whose data starts an event line. Servers write one
///   event per chunk, or a few: when a blank line before an event line comes earlier, with no
///   other size line in between, the stream is read from that event on, inside its chunk.
/// - Without a chunk boundary, a blank line followed by an event line, read until the close:
///   only once [`SSE_DEFER`] bytes past it, or `settled` (no more bytes will come before a gap
///   or the end), show no chunk boundary.
///
/// `None` while `b` holds neither, or a raw start is not settled yet.
pub fn sse_start(b: &[u8], at_start: bool, settled: bool) -> Option<(usize, BodyFrom)> {
    SseSearch::default().search(b, at_start, settled)
}

/// Bytes before the end of what a [`SseSearch`] examined that it examines again: a blank line
/// there may be followed by a size line or an event line that had not arrived.
const SEARCH_OVERLAP: usize = 64;

/// The search [`sse_start`] makes, kept while bytes are appended to the searched buffer, so
/// that each byte is examined a bounded number of times however the bytes arrive.
#[derive(Debug, Default, Clone)]
pub struct SseSearch {
    /// Bytes of the buffer examined for blank lines.
    done: usize,
    /// The first event start after a blank line.
    raw: Option<usize>,
    /// Bytes examined for chunk-size lines (for `sized`).
    sized_done: usize,
    /// A line of hex digits between CRLFs was seen: chunk framing whose boundaries do not
    /// follow event ends (a buffering proxy), which a raw reading would splice into events.
    sized: bool,
    /// Bytes examined for chunk-size lines anywhere (not only after event ends).
    chained_done: usize,
    /// Chunk-size lines found whose chunk's end has not arrived: the first whose end is another
    /// size line starts the chunks (at most [`MAX_PENDING_SIZES`]).
    pending: Vec<usize>,
    /// The first byte was examined for a size line.
    first_done: bool,
}

/// Chunk-size lines waiting for their chunk's end ([`SseSearch`]).
const MAX_PENDING_SIZES: usize = 64;

/// The chunk-size line at the start of `x` ([`size_line`], whole): its length (CRLF included)
/// and the chunk's size.
fn chunk_size_line(x: &[u8]) -> Option<(usize, usize)> {
    if size_line(x) != Some(true) {
        return None;
    }
    let eol = memchr::memchr(b'\n', x)?;
    let size = parse_chunk_size(&x[..eol - 1])?;
    Some((eol + 1, usize::try_from(size).ok()?))
}

impl SseSearch {
    /// [`sse_start`] of `b`, the buffer this search examined before with bytes appended since.
    pub fn search(&mut self, b: &[u8], at_start: bool, settled: bool) -> Option<(usize, BodyFrom)> {
        // At the first byte (after the line ends of the event or chunk before, if those came
        // first), a chunk-size line may be the end of a longer one: it counts once the chunk it
        // announces ends where it says (its CRLF is there).
        let lead = if at_start {
            b.iter()
                .take(3)
                .take_while(|&&c| c == b'\r' || c == b'\n')
                .count()
        } else {
            0
        };
        // (Its data must begin with an event's first line: a `data:` line there may be the
        // middle of an event, whose id went before; such a chunk is read by `chained`, past the
        // event in progress.)
        let at_first = chunk_size_line(&b[lead..])
            .filter(|&(len, _)| at_start && first_line(&b[lead + len..]));
        if let Some((len, size)) = at_first {
            match b[lead + len..].get(size..) {
                Some(end) if (end.len() >= 2 || settled) && end.starts_with(b"\r\n") => {
                    return Some((lead, BodyFrom::ChunkSize));
                }
                Some(end) if end.len() >= 2 || settled => {}
                // Not all of the chunk yet.
                _ if !settled && size <= SSE_DEFER => return None,
                _ => {}
            }
        }
        // Whether the LF at `nl` ends a blank line: an event's end.
        let blank =
            |nl: usize| (nl >= 1 && b[nl - 1] == b'\n') || (nl >= 3 && &b[nl - 3..nl] == b"\r\n\r");
        let from = self.done.saturating_sub(SEARCH_OVERLAP).min(b.len());
        let mut chunk = None;
        for nl in memchr::memchr_iter(b'\n', &b[from..]).map(|i| i + from) {
            if !blank(nl) {
                continue;
            }
            let rest = &b[nl + 1..];
            if rest.strip_prefix(b"\r\n").is_some_and(size_line_then_event) {
                chunk = Some(nl + 3);
                break;
            }
            if self.raw.is_none() && sse_line_start(rest) {
                self.raw = Some(nl + 1);
            }
        }
        self.done = b.len();
        let raw = (at_start && first_line(&b[lead..]))
            .then_some(lead)
            .or(self.raw);
        if !self.sized {
            let from = self.sized_done.saturating_sub(SEARCH_OVERLAP).min(b.len());
            self.sized = size_line_in(&b[from..]);
            self.sized_done = b.len();
        }
        let found = match (raw, chunk) {
            (Some(r), Some(c)) if r < c && !size_line_in(&b[r..c - 2]) => {
                Some((r, BodyFrom::ChunkData((c - 2 - r) as u64)))
            }
            (_, Some(c)) => Some((c, BodyFrom::ChunkSize)),
            (Some(r), None) if !self.sized && (settled || b.len() - r >= SSE_DEFER) => {
                Some((r, BodyFrom::Raw))
            }
            _ => None,
        };
        // Chunks that end inside events, when their framing shows before that.
        let chained = self
            .sized
            .then(|| self.chained(b, at_start.then_some(lead)))
            .flatten();
        match (found, chained) {
            (Some(f), Some(c)) if c.0 < f.0 => Some(c),
            (None, c) => c,
            (f, _) => f,
        }
    }

    /// A chunk-size line (after a CRLF, or at `first`, the first byte after line ends) whose
    /// chunk ends, CRLF, at another size line: chunk framing shown by two boundaries in a row,
    /// wherever they fall in the events.
    fn chained(&mut self, b: &[u8], first: Option<usize>) -> Option<(usize, BodyFrom)> {
        // The first byte's size line, once its line is whole (before any later one).
        if let Some(f) = first.filter(|_| !self.first_done) {
            let rest = &b[f..];
            if rest.len() >= 40 || rest.contains(&b'\n') {
                self.first_done = true;
                if chunk_size_line(rest).is_some() {
                    self.pending.insert(0, f);
                }
            }
        }
        let from = self
            .chained_done
            .saturating_sub(SEARCH_OVERLAP)
            .min(b.len());
        for i in memchr::memmem::find_iter(&b[from..], b"\r\n").map(|i| i + from) {
            let p = i + 2;
            if self.pending.last().is_some_and(|&l| l >= p) {
                continue;
            }
            if self.pending.len() < MAX_PENDING_SIZES && chunk_size_line(&b[p..]).is_some() {
                self.pending.push(p);
            }
        }
        self.chained_done = b.len();
        let mut found = None;
        self.pending.retain(|&p| {
            if found.is_some() {
                return true;
            }
            let Some((len, size)) = chunk_size_line(&b[p..]) else {
                return false;
            };
            let end = p + len + size;
            match b.get(end..end + 2) {
                // Not there yet (a chunk larger than what is held never is).
                None => size <= SSE_DEFER,
                Some(crlf) if crlf == b"\r\n" => match b.get(end + 2..) {
                    Some(next) if chunk_size_line(next).is_some() && size > 0 => {
                        found = Some(p);
                        true
                    }
                    // The next size line incomplete yet.
                    Some(next) => next.len() < 40 && !next.contains(&b'\n'),
                    None => true,
                },
                Some(_) => false,
            }
        });
        found.map(|p| (p, BodyFrom::ChunkSizeInEvent))
    }

    /// `n` bytes were dropped from the front of the searched buffer.
    pub fn shift(&mut self, n: usize) {
        self.done = self.done.saturating_sub(n);
        self.sized_done = self.sized_done.saturating_sub(n);
        self.chained_done = self.chained_done.saturating_sub(n);
        self.raw = self.raw.and_then(|r| r.checked_sub(n));
        self.pending.retain(|&p| p >= n);
        for p in &mut self.pending {
            *p -= n;
        }
    }
}

/// Whether `x` starts with an event's first line (its id or type): a `data:` or `retry:` line
/// may be the middle of an event, and a colon the middle of any line.
fn first_line(x: &[u8]) -> bool {
    [&b"id:"[..], b"event:"].iter().any(|f| x.starts_with(f))
}

/// Whether `x` holds a chunk-size line after a CRLF ([`find_chunk_line`]).
fn size_line_in(x: &[u8]) -> bool {
    matches!(find_chunk_line(x, false), ChunkLine::At(_))
}

/// The most bytes of a direction searched for the start of an event stream the capture began
/// inside (an event larger than this before the first boundary gives the connection up).
const HEADLESS_MAX: u64 = 256 << 10;

/// The most bytes held while searching (older segments beyond it are dropped, counted as
/// skipped): an event start needs at most [`SSE_DEFER`] bytes after it to be decided.
const HEADLESS_HOLD: usize = 64 << 10;

/// The search of one direction for an event stream the capture began inside.
#[derive(Debug, Default)]
pub(super) struct HeadlessScan {
    /// The bytes searched and not yet decided, end to end.
    held: Vec<u8>,
    /// Where each segment of `held` starts in it, with its time and frame, in order.
    marks: Vec<(usize, i64, u64)>,
    /// The search over `held`, carried from segment to segment.
    search: SseSearch,
    /// Bytes searched and dropped (from `held`, or before a gap), and the time of the last.
    dropped: u64,
    dropped_ts: Option<i64>,
    /// Bytes searched so far.
    scanned: u64,
    /// `held` begins at the direction's first captured byte, or the first after a gap: a chunk
    /// or an event may begin there.
    at_start: bool,
    /// The frame that showed the direction does not start with an HTTP message (the frame of
    /// `http.not_http` if the search fails).
    pub(super) frame: u64,
    /// `held`'s allocation (its capacity: a buffer trimmed keeps it), held from the HTTP
    /// stage's budget.
    charge: crate::budget::Charge,
}

impl HeadlessScan {
    /// The search of a direction whose first bytes, in `frame`, were text but no HTTP start;
    /// what it holds is drawn from `budget`.
    pub(super) fn new(frame: u64, budget: &std::sync::Arc<crate::budget::Budget>) -> Box<Self> {
        Box::new(HeadlessScan {
            at_start: true,
            frame,
            charge: crate::budget::Charge::new(budget),
            ..Default::default()
        })
    }

    /// Where the held bytes can be read from ([`framing::sse_start`]).
    fn start(&mut self, settled: bool) -> Option<(usize, framing::BodyFrom)> {
        self.search.search(&self.held, self.at_start, settled)
    }

    /// Past [`HEADLESS_HOLD`] bytes held, drop the oldest segments down to half of it (the
    /// newest is kept whole), so that each byte is moved a bounded number of times.
    fn trim(&mut self) {
        if self.held.len() <= HEADLESS_HOLD {
            return;
        }
        let mut k = 0;
        while self.held.len() - self.marks.get(k).map_or(0, |m| m.0) > HEADLESS_HOLD / 2
            && k + 1 < self.marks.len()
        {
            k += 1;
        }
        let n = self.marks.get(k).map_or(0, |m| m.0);
        if n > 0 {
            self.dropped_ts = k
                .checked_sub(1)
                .and_then(|j| self.marks.get(j))
                .map(|m| m.1);
            self.held.drain(..n);
            self.marks.drain(..k);
            for m in &mut self.marks {
                m.0 -= n;
            }
            self.search.shift(n);
            self.dropped += n as u64;
            self.at_start = false;
        }
    }

    /// Forget what is held (a gap follows it): the search starts again after the gap.
    pub(super) fn clear(&mut self) {
        if let Some(m) = self.marks.last() {
            self.dropped_ts = Some(m.1);
        }
        self.dropped += self.held.len() as u64;
        self.held.clear();
        self.marks.clear();
        self.search = SseSearch::default();
        self.at_start = true;
    }
}

impl HttpLayer {
    /// The bytes one side (the `client`'s or the server's) sent before the roles were known,
    /// searched for an event stream in vain: counted, as the bytes a resync skips are.
    pub(super) fn skipped_search(
        &mut self,
        flow: &FlowMeta,
        client: bool,
        sc: &HeadlessScan,
        frame: u64,
    ) {
        let side = if client { "client" } else { "server" };
        self.anomalies.add(Anomaly::new(
            Code::HttpResyncSkipped,
            Some(sc.frame),
            Some(flow.flow_id()),
            format!(
                "{} bytes skipped: the capture began inside a message of the {side}, read from its next message on (roles known in frame {frame})",
                sc.scanned
            ),
        ));
    }

    /// Search direction `d` of a connection whose first bytes were text but no HTTP start for
    /// an event stream the capture began inside ([`sse_start`]), `bytes` at a time:
    /// the capture of a long-lived SSE response (the standalone GET stream, a slow tool call)
    /// often starts in its middle, and its events carry the cursors a later resumption names.
    ///
    /// Segments are held (at most [`HEADLESS_HOLD`] bytes) until a start is found, then read
    /// from it with their own times and frames. A non-text byte, or [`HEADLESS_MAX`] bytes
    /// without a start, gives the connection up (`http.not_http`, as a failed probe does).
    pub(super) fn scan_headless(
        &mut self,
        flow: &FlowMeta,
        d: Dir,
        bytes: &[u8],
        ts: i64,
        frame: u64,
    ) {
        let Some(sc) = self
            .conns
            .get_mut(&flow.index)
            .and_then(|c| c.scan[d].as_mut())
        else {
            return;
        };
        sc.scanned += bytes.len() as u64;
        if !plausible_text(bytes) || sc.scanned > HEADLESS_MAX {
            let at = sc.frame;
            self.give_up(flow, not_http(flow, at));
            return;
        }
        sc.marks.push((sc.held.len(), ts, frame));
        sc.held.extend_from_slice(bytes);
        match sc.start(false) {
            Some(start) => self.read_headless(flow, d, start),
            None => {
                sc.trim();
                // What the searches of all connections hold at once is bounded: past it this
                // one is given up, as one that searched too long is.
                if !sc.charge.hold(sc.held.capacity()) {
                    let why = Anomaly::new(
                        Code::HttpMemoryBudget,
                        Some(sc.frame),
                        Some(flow.flow_id()),
                        format!("the search for an event stream the capture began inside held {} bytes when the bytes held at once for the connections of one thread reached their bound; the connection is not read", sc.held.len()),
                    );
                    self.give_up(flow, why);
                }
            }
        }
    }

    /// No more bytes will come to the search of direction `d` before a gap or its end: read
    /// the held bytes if an event stream starts in them. Whether it did.
    pub(super) fn settle_headless(&mut self, flow: &FlowMeta, d: Dir) -> bool {
        let start = self
            .conns
            .get_mut(&flow.index)
            .and_then(|c| c.scan[d].as_mut())
            .and_then(|sc| sc.start(true));
        match start {
            Some(start) => {
                self.read_headless(flow, d, start);
                true
            }
            None => false,
        }
    }

    /// Direction `d`'s search found an event stream at `offset` of its held bytes: the
    /// direction is the server's, a headless exchange ([`Exchange::headless`]) reads its events
    /// from there, and the bytes before it are counted in one `http.headless_sse` anomaly.
    fn read_headless(
        &mut self,
        flow: &FlowMeta,
        d: Dir,
        (offset, from): (usize, framing::BodyFrom),
    ) {
        let fi = flow.index;
        let limits = self.options.limits;
        let Some(conn) = self.conns.get_mut(&fi) else {
            return;
        };
        let Some(sc) = conn.scan[d].take() else {
            return;
        };
        // The segment the start is in gives the exchange's first time and frame.
        let seg = sc
            .marks
            .partition_point(|m| m.0 <= offset)
            .saturating_sub(1);
        let (_, t0, f0) = sc.marks.get(seg).copied().unwrap_or_default();
        let skipped = sc.dropped + offset as u64;
        // The time of the last byte skipped: of the segment before the start, or the last
        // dropped.
        let skipped_ts = match offset.checked_sub(1) {
            Some(last) => {
                let k = sc.marks.partition_point(|m| m.0 <= last).saturating_sub(1);
                sc.marks.get(k).map(|m| m.1)
            }
            None => sc.dropped_ts,
        };
        let client = 1 - d;
        conn.client_dir = Some(client);
        self.client_dir.insert(fi, client);
        conn.depth += 1;
        conn.exchanges.push(Exchange {
            flow_index: fi,
            client: Some(conn.ends[client].0),
            client_port: Some(conn.ends[client].1),
            server: Some(conn.ends[d]),
            trans_depth: conn.depth,
            is_sse: true,
            headless: Some(Headless {
                skipped,
                skipped_ts,
            }),
            ts_response: Some(t0),
            frame_response: Some(f0),
            ts_end: Some(t0),
            ts_last_byte: Some(t0),
            frame_last: Some(f0),
            ..Default::default()
        });
        let idx = conn.exchanges.len() - 1;
        conn.next_resp = idx + 1;
        conn.resp_idx = Some(idx);
        let mut sse = SseParser::new(self.options.sse).with_budget(&self.options.held);
        if from == framing::BodyFrom::ChunkSizeInEvent {
            // The chunk before ended with a CR when a CR precedes its CRLF.
            let after_cr = offset >= 3 && sc.held[offset - 3] == b'\r';
            sse.start_inside_event(after_cr);
        }
        conn.sse = Some(sse);
        conn.decoder = None;
        conn.undecodable = false;
        conn.parsers[d] = Some(DirParser::in_body(from, limits));
        if conn.parsers[client].is_none() {
            conn.parsers[client] = Some(DirParser::new(true, limits));
        }
        let other = std::mem::take(&mut conn.probe[client]);
        let searched = conn.scan[client].take();
        let framing = match from {
            framing::BodyFrom::Raw => "delimited by the close",
            framing::BodyFrom::ChunkSizeInEvent => {
                "chunked, its chunks ending inside events: the event in progress at the first chunk boundary passed over too"
            }
            _ => "chunked",
        };
        self.anomalies.add(Anomaly::new(
            Code::HttpHeadlessSse,
            Some(f0),
            Some(flow.flow_id()),
            format!(
                "the capture began inside an event stream ({framing}, no request or response head captured): {skipped} bytes before its first event skipped, its events read from frame {f0} on"
            ),
        ));
        if let Some(sc) = searched {
            self.skipped_search(flow, true, &sc, f0);
        }
        for (k, &(at, t, f)) in sc.marks.iter().enumerate().skip(seg) {
            let end = sc.marks.get(k + 1).map_or(sc.held.len(), |m| m.0);
            self.push(fi, d, &sc.held[at.max(offset)..end], t, f);
        }
        if !other.is_empty() {
            let (_, t, f) = sc.marks.last().copied().unwrap_or_default();
            self.push(fi, client, &other, t, f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where an event stream entered in its middle is read from: the first chunk boundary that
    /// follows an event's end (or an earlier event start inside that chunk), else, once settled,
    /// the first blank line before an event line; nothing inside an event, and nothing from text
    /// that is no event stream.
    #[test]
    fn event_stream_found_from_its_middle() {
        use BodyFrom::*;
        let start = |b: &[u8]| sse_start(b, false, false);
        let settled = |b: &[u8]| sse_start(b, false, true);
        // Chunked: the size line after an event's end and the chunk's CRLF.
        let b = b"ss\":3}}\n\n\r\n1c\r\nid: 4\ndata: {\"a\":4}\n\n\r\n";
        let at = b.windows(4).position(|w| w == b"1c\r\n").unwrap();
        assert_eq!(start(b), Some((at, ChunkSize)));
        // With CRLF line ends and a chunk extension.
        assert_eq!(
            start(b"x\r\n\r\n\r\n2A;ext=1\r\nid: 5\r\n"),
            Some((7, ChunkSize))
        );
        // A chunk boundary inside an event (after a line, not a blank one) is no start.
        assert_eq!(settled(b"data: x\n\r\n1a\r\nid: 5\n"), None);
        // Several events in one chunk: read from the first event start, inside the chunk, up to
        // the chunk's end.
        let b = b"a\n\nid: 1\ndata: 1\n\n\r\n10\r\nid: 2\n";
        let at = b.windows(4).position(|w| w == b"10\r\n").unwrap();
        assert_eq!(start(b), Some((3, ChunkData((at - 2 - 3) as u64))));
        // Raw: a blank line, then an event line (LF and CRLF), once settled or SSE_DEFER bytes
        // past it show no chunk boundary.
        let b = b"tail\"}\n\nid: 7\ndata: {}\n\n";
        assert_eq!(start(b), None);
        assert_eq!(settled(b), Some((8, Raw)));
        assert_eq!(settled(b"a\r\n\r\n: ping\r\n"), Some((5, Raw)));
        let mut long = b"x\n\n".to_vec();
        while long.len() < 3 + SSE_DEFER {
            long.extend_from_slice(b"id: 9\ndata: {}\n\n");
        }
        assert_eq!(start(&long), Some((3, Raw)));
        // At the direction's first byte (or after a gap) a chunk or an event may begin.
        // A size line there counts once its chunk ends where it says: "9" may be the end of
        // "79".
        let chunk = b"7\r\nid: 4\n\n\r\n";
        assert_eq!(sse_start(chunk, true, false), Some((0, ChunkSize)));
        assert_eq!(sse_start(&chunk[..8], true, false), None);
        assert_eq!(
            sse_start(b"9\r\nid: 1\nevent: message\n\n", true, true),
            None
        );
        assert_eq!(sse_start(b"id: 4\ndata: x\n\n", true, true), Some((0, Raw)));
        assert_eq!(sse_start(b"data: x\n\n", true, true), None);
        // The line ends of the event and the chunk before may come first.
        for lead in [&b"\n"[..], b"\r\n", b"\n\r\n", b"\r"] {
            let mut b = lead.to_vec();
            b.extend_from_slice(chunk);
            assert_eq!(
                sse_start(&b, true, false),
                Some((lead.len(), ChunkSize)),
                "{lead:?}"
            );
            let mut b = lead.to_vec();
            b.extend_from_slice(b"id: 4\ndata: x\n\n");
            assert_eq!(
                sse_start(&b, true, true),
                Some((lead.len(), Raw)),
                "{lead:?}"
            );
        }
        // The rest of a line cut after its field name is no comment that starts an event.
        assert_eq!(sse_start(b": {\"a\":1}\n\n", true, true), None);
        assert_eq!(sse_start(chunk, false, true), None);
        // Not an event stream: text without event lines, a blank line before something else.
        assert_eq!(settled(b"hello world\n\nsomething else\n"), None);
        assert_eq!(settled(b"data without a blank line\nid: 3\n"), None);
        assert_eq!(settled(b""), None);
        // Text or not.
        assert!(plausible_text(b"id: 1\r\ndata: {\"\xc3\xa9\"}\t\n"));
        assert!(!plausible_text(b"id: 1\0"));
        assert!(!plausible_text(b"\x16\x03\x01\x02\x00"));
        assert!(!plausible_text(b"\x7f"));
    }

    /// The search carried from segment to segment finds what one search of the whole buffer
    /// finds, however the bytes arrive; a raw start is refused when chunk-size lines follow it
    /// (chunk boundaries inside events: a buffering proxy).
    #[test]
    fn search_carried_over_segments() {
        let streams: [&[u8]; 5] = [
            b"ss\":3}}\n\n\r\n1c\r\nid: 4\ndata: {\"a\":4}\n\n\r\n",
            b"a\n\nid: 1\ndata: 1\n\n\r\n10\r\nid: 2\n",
            b"x\r\n\r\nid: 7\r\ndata: {}\r\n\r\n: ping\r\n\r\n",
            b"7\r\nid: 4\n\n\r\n9\r\nid: 5\n\n\r\n",
            b"tail\n\nid: 7\ndata: {\"x\":1}\n\n\r\n40\r\n{\"y\":2}\n\nid: 8\n",
        ];
        for b in streams {
            for at_start in [false, true] {
                for settled in [false, true] {
                    let whole = sse_start(b, at_start, settled);
                    for step in 1..b.len() {
                        let mut s = SseSearch::default();
                        let mut got = None;
                        for end in (step..b.len()).step_by(step).chain([b.len()]) {
                            got = s.search(&b[..end], at_start, end == b.len() && settled);
                            if got.is_some() {
                                break;
                            }
                        }
                        assert_eq!(
                            got,
                            whole,
                            "{:?} in steps of {step}",
                            String::from_utf8_lossy(b)
                        );
                    }
                }
            }
        }
        // The last stream's chunk boundary is inside an event: never read raw.
        assert_eq!(sse_start(streams[4], false, true), None);
    }

    /// Chunks that end inside events (a buffering proxy): read from the first size line whose
    /// chunk ends at another size line, once that one has arrived.
    #[test]
    fn chunks_ending_inside_events() {
        // Events 1..=n in chunks of `size` bytes, wherever they fall.
        let chunked = |n: u32, size: usize| {
            let text: Vec<u8> = (1..=n)
                .flat_map(|i| format!("id: {i}\ndata: {{\"n\":{i}}}\n\n").into_bytes())
                .collect();
            let mut body = Vec::new();
            for c in text.chunks(size) {
                body.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
                body.extend_from_slice(c);
                body.extend_from_slice(b"\r\n");
            }
            body
        };
        let body = chunked(6, 23);
        // From inside the first chunk's data: the second chunk's size line starts the reading.
        let b = &body[9..];
        let at = b.windows(4).position(|w| w == b"\r\n17").unwrap() + 2;
        assert_eq!(
            sse_start(b, false, false),
            Some((at, BodyFrom::ChunkSizeInEvent))
        );
        // Not before the chunk after it has begun.
        let next = at + 4 + 23 + 2;
        assert_eq!(sse_start(&b[..next], false, true), None);
        assert_eq!(
            sse_start(&b[..next + 4], false, false),
            Some((at, BodyFrom::ChunkSizeInEvent))
        );
        // Carried over segments, the same.
        let mut s = SseSearch::default();
        let got = (1..=b.len()).find_map(|end| s.search(&b[..end], false, false));
        assert_eq!(got, Some((at, BodyFrom::ChunkSizeInEvent)));
        // A size line at the first byte (a proxy writes each chunk at a segment's start), after
        // the line ends before it or not, byte by byte.
        // (ChunkSize when its data begins with an event, ChunkSizeInEvent when inside one.)
        let starts: Vec<usize> = body
            .windows(4)
            .enumerate()
            .filter(|(_, w)| w == b"\r\n17")
            .map(|(i, _)| i + 2)
            .collect();
        assert!(starts.len() > 3);
        for &at in &starts[..starts.len() - 2] {
            let want = if body[at + 4..].starts_with(b"id:") {
                BodyFrom::ChunkSize
            } else {
                BodyFrom::ChunkSizeInEvent
            };
            for lead in [0, 2] {
                let b = &body[at - lead..];
                let mut s = SseSearch::default();
                let got = (1..=b.len()).find_map(|end| s.search(&b[..end], true, false));
                assert_eq!(got, Some((lead, want)), "chunk at {at}, lead {lead}");
            }
        }
        // Chunks larger than 8 KiB: never read raw, read chunked once one ends at the next.
        let body = chunked(2000, 9000);
        let b = &body[100..];
        let at = b.windows(6).position(|w| w == b"\r\n2328").unwrap() + 2;
        assert_eq!(sse_start(&b[..at + 1000], false, false), None);
        assert_eq!(
            sse_start(b, false, false),
            Some((at, BodyFrom::ChunkSizeInEvent))
        );
    }
}
