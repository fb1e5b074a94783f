//! HTTP/1.x message framing for one direction of a connection (RFC 9112).
//!
//! A sans-IO state machine: the connection pushes reassembled bytes and gaps;
//! the parser emits [`HttpEvent`]s — heads, body bytes (de-chunked), body
//! gaps and message ends. It holds at most one partial head or chunk-size
//! line (bounded by [`HttpLimits::max_header_bytes`]); body bytes pass
//! through without being buffered. After a gap or malformed framing it
//! resyncs at the next plausible start line.

use crate::anomaly::Code;
use std::mem::MaybeUninit;

/// Limits of the HTTP stage.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    /// Largest request or response head, in bytes (anomaly `http.header_too_long`).
    pub max_header_bytes: usize,
    /// Most headers in one head (anomaly `http.too_many_headers`).
    pub max_headers: usize,
    /// Most bytes a body with a content coding is decoded to (anomaly `http.decoded_too_large`;
    /// the rest of the body is not parsed). A body without one is parsed as it streams, whatever
    /// its length.
    pub max_decoded: u64,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_header_bytes: 256 * 1024,
            max_headers: 256,
            max_decoded: super::coding::MAX_DECODED,
        }
    }
}

/// A parsed request or response head.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Head {
    /// Request method (empty for responses).
    pub method: String,
    /// Request target (empty for responses).
    pub target: String,
    /// Response status code (0 for requests).
    pub status: u16,
    /// Response reason phrase.
    pub reason: String,
    /// HTTP minor version of an HTTP/1.x head (1 for HTTP/1.1); 2 for a head read from
    /// HTTP/2 ([`super::h2`]).
    pub version: u8,
    /// Header names and values end to end (one allocation for all the fields of a head: heads
    /// are kept for every exchange of a capture).
    text: String,
    /// Per field in order: where its name and its value end in `text` (each field starts where
    /// the previous one ended).
    fields: Vec<(usize, usize)>,
    /// Per name of [`KNOWN`]: index + 1 of its first field, 0 when absent, `u8::MAX` when that
    /// field is too far down to index (looked up by scanning).
    known: [u8; KNOWN.len()],
}

/// Header names looked up for every exchange, lower case: their first field is indexed as the
/// head is made, so a lookup does not scan the fields.
const KNOWN: [&str; 10] = [
    "mcp-session-id",
    "last-event-id",
    "content-type",
    "content-encoding",
    "transfer-encoding",
    "upgrade",
    "mcp-protocol-version",
    "host",
    "content-length",
    "mcp-method",
];

/// The index in [`KNOWN`] of `name`, compared case-insensitively.
/// Inlined, so that a lookup by a lower-case literal (every caller's) resolves at compile time.
#[inline(always)]
fn known_index(name: &str) -> Option<usize> {
    match name {
        "mcp-session-id" => Some(0),
        "last-event-id" => Some(1),
        "content-type" => Some(2),
        "content-encoding" => Some(3),
        "transfer-encoding" => Some(4),
        "upgrade" => Some(5),
        "mcp-protocol-version" => Some(6),
        "host" => Some(7),
        "content-length" => Some(8),
        "mcp-method" => Some(9),
        _ => known_index_nocase(name),
    }
}

/// [`known_index`] of a name in any case (as sent).
fn known_index_nocase(name: &str) -> Option<usize> {
    KNOWN
        .iter()
        .position(|k| k.len() == name.len() && k.as_bytes().eq_ignore_ascii_case(name.as_bytes()))
}

impl Head {
    /// Header fields in order, names as sent; values decoded lossily as UTF-8.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        let mut start = 0usize;
        self.fields.iter().map(move |&(n, v)| {
            let field = (
                self.text.get(start..n).unwrap_or(""),
                self.text.get(n..v).unwrap_or(""),
            );
            start = v;
            field
        })
    }

    /// First value of a header, matched case-insensitively (RFC 9110 §5.1).
    /// Inlined, so that a known name given as a literal resolves to its index at compile time.
    #[inline(always)]
    pub fn header(&self, name: &str) -> Option<&str> {
        if let Some(k) = known_index(name) {
            match self.known[k] {
                0 => return None,
                u8::MAX => {}
                i => {
                    let (n, v) = self.fields.get(usize::from(i - 1)).copied()?;
                    return Some(self.text.get(n..v).unwrap_or(""));
                }
            }
        }
        self.scan(name)
    }

    /// [`Head::header`] by a walk over the fields: names not in [`KNOWN`], and known names
    /// that occur past field 254.
    fn scan(&self, name: &str) -> Option<&str> {
        // As `headers().find(..)`, comparing lengths before bytes.
        let mut start = 0usize;
        for &(n, v) in &self.fields {
            let key = self.text.as_bytes().get(start..n).unwrap_or_default();
            if key.len() == name.len() && key.eq_ignore_ascii_case(name.as_bytes()) {
                return Some(self.text.get(n..v).unwrap_or(""));
            }
            start = v;
        }
        None
    }

    /// Append a header field.
    pub fn push_header(&mut self, name: &str, value: &str) {
        if let Some(k) = known_index(name) {
            if self.known[k] == 0 {
                self.known[k] = u8::try_from(self.fields.len() + 1).unwrap_or(u8::MAX);
            }
        }
        self.text.push_str(name);
        let name_end = self.text.len();
        self.text.push_str(value);
        self.fields.push((name_end, self.text.len()));
    }
}

/// What the framing parser reports.
#[derive(Debug)]
pub enum HttpEvent<'a> {
    /// A complete head.
    Head(Head),
    /// Body bytes (transfer coding removed).
    Body(&'a [u8]),
    /// `len` body bytes missing from the capture.
    BodyGap(u64),
    /// The message ended; `complete` is false when it was cut (gap, close, resync).
    End {
        /// Whether the framing said the message was whole.
        complete: bool,
    },
    /// A malformed-input anomaly.
    Anomaly(Code, String),
    /// A client's HTTP/2 connection preface (RFC 9113 §3.4): the direction leaves HTTP/1.x,
    /// and what follows is HTTP/2 frames ([`HttpEvent::Tunnel`]).
    H2Preface,
    /// Bytes after the direction left HTTP/1.x (an upgrade, a tunnel, an HTTP/2 preface), in
    /// the segment that left it: the protocol above decides whether they are read.
    Tunnel(&'a [u8]),
}

/// How the layer above answers a response head: whether it has a body at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyRule {
    /// Frame the body by the headers (RFC 9112 §6.3).
    ByHeaders,
    /// No body (HEAD request, 1xx, 204, 304).
    None,
    /// The connection leaves HTTP (101 Upgrade, 2xx to CONNECT).
    Tunnel,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    Size,
    Data(u64),
    DataEnd,
    Trailer,
    /// A gap took chunk framing (a size line or the CRLF after data): the body goes on, read as
    /// data, up to the next `CRLF chunk-size CRLF`, where the framing is found again.
    Lost,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for the first bytes; the role of the direction is not known.
    Head,
    Length(u64),
    Chunked(Chunk),
    UntilClose,
    /// Looking for the next start line after a gap or malformed input.
    Resync,
    /// The connection left HTTP.
    Tunnel,
}

/// Framing state of one direction.
#[derive(Debug)]
pub struct DirParser {
    /// Whether this direction carries requests (else responses).
    pub is_request: bool,
    state: State,
    buf: Vec<u8>,
    limits: HttpLimits,
    in_message: bool,
    /// In Resync: whether the next byte starts a line.
    line_start: bool,
    /// In Resync: bytes passed over so far without a start line (reported, with the reason the
    /// skipping stopped, as one `http.resync_skipped` anomaly).
    skipped: u64,
    /// HTTP ends on this direction when the message under way ends ([`Self::tunnel_after_message`]).
    tunnel_next: bool,
    /// Bytes of the head in progress at the last attempt to parse it (0: none yet): it is parsed
    /// again only once its end may have arrived, or it grew by half (at least 256 bytes and a
    /// line end, or 4 KiB), so a head that comes a byte at a time is not re-parsed from its
    /// start for every byte, and a long one is parsed a few times, not once per line.
    head_tried: usize,
    /// Bytes of that head already searched for its end (valid while `head_tried` is not 0): each
    /// segment is searched once, however long the head grows between attempts.
    head_searched: usize,
    /// `buf`'s bytes, held from the HTTP stage's budget once [`DirParser::draw_on`] gave one.
    charge: crate::budget::Charge,
}

/// Capacity of a direction's buffer (bytes) kept when it is mostly empty ([`DirParser::push`]).
const BUF_KEEP: usize = 64 << 10;

const METHODS: [&[u8]; 9] = [
    b"GET ",
    b"POST ",
    b"PUT ",
    b"DELETE ",
    b"HEAD ",
    b"OPTIONS ",
    b"PATCH ",
    b"CONNECT ",
    b"TRACE ",
];

/// Whether `b` (at least 8 bytes) starts like a client's HTTP/2 connection preface
/// (RFC 9113 §3.4).
pub fn looks_like_h2_preface(b: &[u8]) -> bool {
    use super::h2::frame::PREFACE;
    b.len() >= 8 && PREFACE.starts_with(&b[..b.len().min(PREFACE.len())])
}

/// Whether `b` starts like a request line (a known method and a space).
pub fn looks_like_request(b: &[u8]) -> bool {
    METHODS.iter().any(|m| b.starts_with(m))
}

/// Whether `b` starts like a status line.
pub fn looks_like_response(b: &[u8]) -> bool {
    b.starts_with(b"HTTP/1.")
}

/// How a body entered in its middle is framed from where [`super::sse_start`] found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFrom {
    /// At a chunk-size line (RFC 9112 §7.1).
    ChunkSize,
    /// Inside a chunk's data, this many bytes before its end (then its CRLF).
    ChunkData(u64),
    /// Delimited by the close.
    Raw,
    /// At a chunk-size line that does not follow an event's end (a buffering proxy ends chunks
    /// anywhere): the chunks are read from it on, the event in progress there passed over.
    ChunkSizeInEvent,
}

impl DirParser {
    /// A parser for a direction carrying requests (`is_request`) or responses.
    pub fn new(is_request: bool, limits: HttpLimits) -> Self {
        DirParser {
            is_request,
            state: State::Head,
            buf: Vec::new(),
            limits,
            in_message: false,
            line_start: false,
            skipped: 0,
            tunnel_next: false,
            head_tried: 0,
            head_searched: 0,
            charge: Default::default(),
        }
    }

    /// Hold the bytes this direction keeps of a head or line (at most
    /// [`HttpLimits::max_header_bytes`]) from `budget`, shared by the connections of one HTTP
    /// stage: past it they are dropped, `http.memory_budget`, and the parser looks for the next
    /// start line.
    pub fn draw_on(&mut self, budget: &std::sync::Arc<crate::budget::Budget>) {
        self.charge.draw_on(budget);
    }

    /// A response parser that starts inside a body whose head the capture missed (an event
    /// stream found by [`super::sse_start`]), framed as `from` says.
    pub fn in_body(from: BodyFrom, limits: HttpLimits) -> Self {
        DirParser {
            state: match from {
                BodyFrom::ChunkSize | BodyFrom::ChunkSizeInEvent => State::Chunked(Chunk::Size),
                BodyFrom::ChunkData(0) => State::Chunked(Chunk::DataEnd),
                BodyFrom::ChunkData(n) => State::Chunked(Chunk::Data(n)),
                BodyFrom::Raw => State::UntilClose,
            },
            in_message: true,
            ..DirParser::new(false, limits)
        }
    }

    /// Report the bytes skipped in Resync, if any; `why` says where the skipping stopped. The
    /// bytes kept back as a possible split start line (in `buf`) are counted when `held`.
    fn report_skipped(
        &mut self,
        why: &str,
        held: bool,
        out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule,
    ) {
        if held && self.state == State::Resync {
            self.skipped += self.buf.len() as u64;
        }
        if self.skipped > 0 {
            out(HttpEvent::Anomaly(
                Code::HttpResyncSkipped,
                format!("{} bytes skipped {why}", self.skipped),
            ));
            self.skipped = 0;
        }
    }

    /// Push in-order bytes. `on_head` is asked, for a response head, whether it has a body.
    pub fn push(&mut self, data: &[u8], out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule) {
        if self.buf.is_empty() {
            let n = self.parse(data, out);
            if n < data.len() {
                self.buf.extend_from_slice(&data[n..]);
            }
        } else {
            let mut buf = std::mem::take(&mut self.buf);
            buf.extend_from_slice(data);
            let n = self.parse(&buf, out);
            buf.drain(..n);
            self.buf = buf;
        }
        if self.buf.len() > self.limits.max_header_bytes {
            let code = if self.state == State::Head {
                Code::HttpHeaderTooLong
            } else {
                Code::HttpBadFraming
            };
            let detail = format!("{} bytes without a complete line or head", self.buf.len());
            self.drop_held(code, detail, out);
        }
        if !self.charge.hold(self.buf.len()) {
            let detail = format!(
                "{} bytes of a head or line not kept: the bytes held at once for the connections of one thread reached their bound",
                self.buf.len()
            );
            self.drop_held(Code::HttpMemoryBudget, detail, out);
        }
        // A long head or line leaves a large buffer behind: given back once mostly empty, so
        // that connections left open after one do not each keep it.
        if self.buf.capacity() > BUF_KEEP && self.buf.len() <= self.buf.capacity() / 4 {
            self.buf.shrink_to(self.buf.len().max(BUF_KEEP / 2));
        }
    }

    /// Drop the bytes held of a head or line (anomaly `code`, `detail`) and look for the next
    /// start line, from the next byte if the dropped bytes ended a line.
    fn drop_held(
        &mut self,
        code: Code,
        detail: String,
        out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule,
    ) {
        out(HttpEvent::Anomaly(code, detail));
        let line_start = self.buf.last() == Some(&b'\n');
        self.buf.clear();
        self.charge.hold(0);
        self.head_tried = 0;
        self.enter_resync(out);
        self.line_start = line_start;
    }

    /// End HTTP on this direction once the message under way (if any) ends, because the other
    /// direction left it: the request side once its response switched protocols (RFC 9110
    /// §7.8, §9.3.6; a request's body is sent whole before the new protocol, RFC 9113 §3.2 of
    /// h2c). Bytes held back (the start of what would have been the next head) belong to the
    /// other protocol.
    /// Returns the bytes held back, for the protocol above to read.
    pub fn tunnel_after_message(&mut self) -> Vec<u8> {
        if self.in_message {
            self.tunnel_next = true;
            Vec::new()
        } else {
            self.head_tried = 0;
            self.state = State::Tunnel;
            self.charge.hold(0);
            std::mem::take(&mut self.buf)
        }
    }

    /// Whether the direction has left HTTP/1.x (an upgrade, a tunnel, an HTTP/2 preface): what
    /// follows is not parsed.
    pub fn left_http(&self) -> bool {
        self.state == State::Tunnel
    }

    /// Whether no message body is under way: between messages, or inside a head (a gap here
    /// loses a head, and with it the message it began).
    pub fn outside_body(&self) -> bool {
        matches!(self.state, State::Head | State::Resync) && !self.in_message
    }

    /// A head left unfinished (at a gap or the end of the stream): parsed once more, so that a
    /// head that is bad says so (`http.bad_head`), else counted as `http.partial_head`.
    fn unfinished_head(&mut self, why: &str, out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule) {
        let buf = std::mem::take(&mut self.buf);
        let bad = matches!(
            self.parse_head(&buf, &mut |e| match e {
                HttpEvent::Anomaly(..) => out(e),
                _ => BodyRule::ByHeaders,
            }),
            HeadResult::Bad
        );
        if !bad {
            out(HttpEvent::Anomaly(
                Code::HttpPartialHead,
                format!("{} bytes of an unfinished head {why}", buf.len()),
            ));
        }
    }

    /// `len` bytes are missing from the capture.
    pub fn gap(&mut self, len: u64, out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule) {
        self.head_tried = 0;
        match self.state {
            State::Length(rem) if len < rem => {
                out(HttpEvent::BodyGap(len));
                self.state = State::Length(rem - len);
            }
            State::Length(rem) if len == rem => {
                out(HttpEvent::BodyGap(len));
                self.end_message(false, out);
            }
            State::Chunked(Chunk::Data(rem)) if len <= rem => {
                out(HttpEvent::BodyGap(len));
                self.state = State::Chunked(if len == rem {
                    Chunk::DataEnd
                } else {
                    Chunk::Data(rem - len)
                });
            }
            // Exactly the CRLF after a chunk's data is missing (its CR may be held from the
            // segment before): no body byte was lost.
            State::Chunked(Chunk::DataEnd)
                if len as usize + self.buf.len() == 2 && self.buf.iter().all(|&b| b == b'\r') =>
            {
                self.buf.clear();
                self.state = State::Chunked(Chunk::Size);
            }
            // The gap took framing of a chunked body (past the chunk's data, or in a size line
            // or the CRLF after data): where the next chunk starts is found again in the bytes
            // after it. A long SSE stream has no next start line to wait for.
            State::Chunked(Chunk::Data(_) | Chunk::DataEnd | Chunk::Size | Chunk::Lost) => {
                // A gap that began where a size line begins (a segment that was one chunk, or
                // the body's end) most likely ends where one begins too, or the next message's
                // start line: the bytes after it may start with either. Begun anywhere else,
                // it ends at no known place.
                self.line_start = self.state == State::Chunked(Chunk::Size) && self.buf.is_empty();
                out(HttpEvent::BodyGap(len));
                self.buf.clear();
                self.state = State::Chunked(Chunk::Lost);
            }
            State::UntilClose => {
                out(HttpEvent::BodyGap(len));
            }
            State::Tunnel => {}
            State::Resync => {
                // Still looking for a start line: the bytes passed over end at the gap; after
                // it, as before it, a start line is looked for after a line end.
                self.report_skipped("before a gap, with no start line", true, out);
                self.buf.clear();
                self.line_start = false;
            }
            State::Head if !self.in_message && self.buf.is_empty() => {
                // The gap began where a message ended, so whole messages may be missing; the
                // bytes after it may well begin the next message, and a start line is accepted
                // right there.
                self.state = State::Resync;
                self.line_start = true;
            }
            _ => {
                if self.in_message {
                    out(HttpEvent::BodyGap(len));
                }
                if self.state == State::Head && !self.buf.is_empty() {
                    // The head cut by the gap: its bytes are counted, not dropped unsaid.
                    self.unfinished_head("before a gap", out);
                }
                self.buf.clear();
                self.enter_resync(out);
            }
        }
    }

    /// The direction ended: `orderly` by its FIN, else by a reset. A body delimited by the close
    /// (RFC 9112 §6.3 rule 8) is whole only after an orderly close.
    pub fn end(&mut self, orderly: bool, out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule) {
        self.head_tried = 0;
        match self.state {
            State::UntilClose => self.end_message(orderly, out),
            _ if self.in_message => self.end_message(false, out),
            State::Head if !self.buf.is_empty() => self.unfinished_head("at end of stream", out),
            // (In a tunnel only what was skipped before the other direction entered it.)
            State::Resync | State::Tunnel => {
                self.report_skipped("to the end of the stream, with no start line", true, out)
            }
            _ => {}
        }
        self.buf.clear();
        self.state = State::Head;
    }

    fn enter_resync(&mut self, out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule) {
        if self.in_message {
            self.end_message(false, out);
        }
        self.state = State::Resync;
        self.line_start = false;
    }

    fn end_message(&mut self, complete: bool, out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule) {
        self.in_message = false;
        self.state = if std::mem::take(&mut self.tunnel_next) {
            State::Tunnel
        } else {
            State::Head
        };
        out(HttpEvent::End { complete });
    }

    /// Parse as much of `input` as possible; returns the bytes consumed.
    ///
    /// One step per state ([`Step`]): each reads from where the last one stopped and says how
    /// far it got and whether the bytes so far are all it can use now.
    fn parse(&mut self, input: &[u8], out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule) -> usize {
        let mut pos = 0;
        loop {
            let rest = &input[pos..];
            let step = match self.state {
                State::Tunnel => {
                    if !rest.is_empty() {
                        out(HttpEvent::Tunnel(rest));
                    }
                    Step::Stop(rest.len())
                }
                State::Resync => self.resync_step(rest, out),
                State::Head => self.head_step(rest, out),
                State::Length(rem) => self.length_step(rem, rest, out),
                State::UntilClose => {
                    if !rest.is_empty() {
                        out(HttpEvent::Body(rest));
                    }
                    Step::Stop(rest.len())
                }
                State::Chunked(Chunk::Data(rem)) => self.chunk_data_step(rem, rest, out),
                State::Chunked(Chunk::DataEnd) => self.chunk_end_step(rest, out),
                State::Chunked(Chunk::Size) => self.chunk_size_step(rest, out),
                State::Chunked(Chunk::Lost) => self.chunk_lost_step(rest, out),
                State::Chunked(Chunk::Trailer) => self.trailer_step(rest, out),
            };
            match step {
                Step::Advance(n) => pos += n,
                Step::Stop(n) => return pos + n,
            }
        }
    }

    /// Resync: pass over bytes up to the next start line at a line start.
    fn resync_step(&mut self, rest: &[u8], out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule) -> Step {
        match find_start_line(rest, self.is_request, self.line_start) {
            Some(i) => {
                self.skipped += i as u64;
                self.report_skipped("to the next start line", false, out);
                self.state = State::Head;
                Step::Advance(i)
            }
            None => {
                // Keep the start of the last line, short enough to be a split start line;
                // anything else cannot begin a message.
                const KEEP: usize = 16;
                let (tail, at_start) = match memchr::memrchr(b'\n', rest) {
                    Some(nl) => (&rest[nl + 1..], true),
                    None => (rest, self.line_start),
                };
                let keep = if at_start && tail.len() <= KEEP {
                    tail.len()
                } else {
                    0
                };
                self.line_start = keep > 0 || rest.last() == Some(&b'\n');
                self.skipped += (rest.len() - keep) as u64;
                Step::Stop(rest.len() - keep)
            }
        }
    }

    /// Head: a message head, parsed once its end may have arrived.
    fn head_step(&mut self, rest: &[u8], out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule) -> Step {
        if rest.is_empty() {
            return Step::Stop(0);
        }
        // Tolerate stray CRLFs between messages (RFC 9112 §2.2).
        if rest[0] == b'\r' || rest[0] == b'\n' {
            return Step::Advance(1);
        }
        if self.is_request && rest[0] == b'P' {
            if let Some(step) = self.h2_preface(rest, out) {
                return step;
            }
        }
        if self.head_tried > 0 && rest.len() >= self.head_searched {
            // (The bytes searched before, less the 2 that could begin a blank line.)
            let tail = &rest[self.head_searched.saturating_sub(2)..];
            let ended = memchr::memmem::find(tail, b"\n\n").is_some()
                || memchr::memmem::find(tail, b"\n\r\n").is_some();
            let grown = rest.len() - self.head_tried;
            let half = self.head_tried / 2;
            let new_line = grown >= half.max(256) && memchr::memchr(b'\n', tail).is_some();
            if !ended && !new_line && grown < half.max(4096) {
                self.head_searched = rest.len();
                return Step::Stop(0);
            }
        }
        match self.parse_head(rest, out) {
            HeadResult::Partial => {
                self.head_tried = rest.len();
                self.head_searched = rest.len();
                Step::Stop(0)
            }
            HeadResult::Bad => {
                self.head_tried = 0;
                self.state = State::Resync;
                self.line_start = false;
                self.skipped += 1;
                Step::Advance(1)
            }
            HeadResult::Done(n) => {
                self.head_tried = 0;
                Step::Advance(n)
            }
        }
    }

    /// Length: `rem` more bytes of a body framed by Content-Length.
    fn length_step(
        &mut self,
        rem: u64,
        rest: &[u8],
        out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule,
    ) -> Step {
        let Some((n, left)) = body_bytes(rem, rest, out) else {
            return Step::Stop(0);
        };
        if left == 0 {
            self.end_message(true, out);
        } else {
            self.state = State::Length(left);
        }
        Step::Advance(n)
    }

    /// Chunk data: `rem` more bytes of the current chunk.
    fn chunk_data_step(
        &mut self,
        rem: u64,
        rest: &[u8],
        out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule,
    ) -> Step {
        let Some((n, left)) = body_bytes(rem, rest, out) else {
            return Step::Stop(0);
        };
        self.state = State::Chunked(if left == 0 {
            Chunk::DataEnd
        } else {
            Chunk::Data(left)
        });
        Step::Advance(n)
    }

    /// The CRLF after chunk data (a bare LF tolerated; anything else named and passed over).
    fn chunk_end_step(
        &mut self,
        rest: &[u8],
        out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule,
    ) -> Step {
        if rest.len() < 2 {
            if rest.first() == Some(&b'\n') {
                self.state = State::Chunked(Chunk::Size);
                return Step::Advance(1);
            }
            return Step::Stop(0);
        }
        let n = if &rest[..2] == b"\r\n" {
            2
        } else if rest[0] == b'\n' {
            1
        } else {
            out(HttpEvent::Anomaly(
                Code::HttpBadChunkEnd,
                "chunk data not followed by CRLF".into(),
            ));
            0
        };
        self.state = State::Chunked(Chunk::Size);
        Step::Advance(n)
    }

    /// A chunk-size line (RFC 9112 §7.1).
    fn chunk_size_step(
        &mut self,
        rest: &[u8],
        out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule,
    ) -> Step {
        let Some(nl) = memchr::memchr(b'\n', rest) else {
            return Step::Stop(0);
        };
        let line = trim_cr(&rest[..nl]);
        match parse_chunk_size(line) {
            Some(0) => self.state = State::Chunked(Chunk::Trailer),
            Some(n) => self.state = State::Chunked(Chunk::Data(n)),
            None => {
                out(HttpEvent::Anomaly(
                    Code::HttpBadChunkSize,
                    format!(
                        "chunk-size line {:?}",
                        String::from_utf8_lossy(&line[..line.len().min(32)])
                    ),
                ));
                self.enter_resync(out);
            }
        }
        Step::Advance(nl + 1)
    }

    /// Chunked framing lost to a gap: data up to the next `CRLF chunk-size CRLF`, or up to a
    /// start line that shows the body ended in the gap.
    fn chunk_lost_step(
        &mut self,
        rest: &[u8],
        out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule,
    ) -> Step {
        let chunk = find_chunk_line(rest, self.line_start);
        // The body's end may have been in the gap: a start line at a line start before the next
        // chunk begins the next message.
        let start = find_start_line(rest, self.is_request, self.line_start)
            .filter(|&h| !matches!(chunk, ChunkLine::At(i) if i.saturating_sub(2) < h));
        if let Some(h) = start {
            if h > 0 {
                out(HttpEvent::Body(&rest[..h]));
            }
            out(HttpEvent::Anomaly(
                Code::HttpChunkResync,
                format!("a start line {h} bytes after a gap in chunked framing ends the body"),
            ));
            self.end_message(false, out);
            return Step::Advance(h);
        }
        match chunk {
            ChunkLine::At(i) => {
                // Before it, the tail of a chunk's data, then the CRLF that ended it (none when
                // the size line starts the bytes after the gap).
                let data = i.saturating_sub(2);
                if data > 0 {
                    out(HttpEvent::Body(&rest[..data]));
                }
                out(HttpEvent::Anomaly(
                    Code::HttpChunkResync,
                    format!("chunked framing found again after a gap, {data} bytes on"),
                ));
                self.state = State::Chunked(Chunk::Size);
                Step::Advance(i)
            }
            // What may begin a size line, or a start line split here, is kept for the next
            // bytes; the rest is data.
            ChunkLine::From(k) => {
                const KEEP: usize = 16;
                let line = match memchr::memrchr(b'\n', rest) {
                    Some(nl) if rest.len() - (nl + 1) <= KEEP => nl + 1,
                    None if self.line_start && rest.len() <= KEEP => 0,
                    _ => rest.len(),
                };
                let keep = k.min(line);
                if keep > 0 {
                    out(HttpEvent::Body(&rest[..keep]));
                    self.line_start = rest[keep - 1] == b'\n';
                }
                Step::Stop(keep)
            }
        }
    }

    /// Trailer fields after the last chunk, up to the blank line that ends the message.
    fn trailer_step(
        &mut self,
        rest: &[u8],
        out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule,
    ) -> Step {
        let Some(nl) = memchr::memchr(b'\n', rest) else {
            return Step::Stop(0);
        };
        if trim_cr(&rest[..nl]).is_empty() {
            self.end_message(true, out);
        }
        Step::Advance(nl + 1)
    }

    fn parse_head(
        &mut self,
        rest: &[u8],
        out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule,
    ) -> HeadResult {
        // Most heads have a few fields: their slots are on the stack, left uninitialised
        // (httparse writes each before it is read). Only a head with more fields than that is
        // parsed again with room for `max_headers` on the heap.
        let mut few = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; FEW_HEADERS];
        let max = self.limits.max_headers;
        let parsed = match parse_fields(self.is_request, rest, &mut few[..max.min(FEW_HEADERS)]) {
            Err(httparse::Error::TooManyHeaders) if max > FEW_HEADERS => {
                let mut many = Vec::with_capacity(max);
                many.resize_with(max, MaybeUninit::uninit);
                parse_fields(self.is_request, rest, &mut many)
            }
            other => other,
        };
        let (head, n) = match parsed {
            Ok(Some(done)) => done,
            Ok(None) => return HeadResult::Partial,
            Err(e) => return self.bad_head(e, out),
        };
        // RFC 9112 §6.3: chunked framing applies when chunked is the final transfer coding.
        let te_chunked = head.header("transfer-encoding").is_some_and(|v| {
            v.rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"))
        });
        let cl = head
            .header("content-length")
            .map(|v| v.trim().parse::<u64>());
        // RFC 9112 §6.3: Transfer-Encoding overrides Content-Length; both, or several different
        // Content-Length values, are a framing conflict (a smuggling signature) worth a row.
        let lengths: Vec<&str> = head
            .headers()
            .filter(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.trim())
            .collect();
        if te_chunked && !lengths.is_empty() {
            out(HttpEvent::Anomaly(
                Code::HttpConflictingFraming,
                "both Transfer-Encoding: chunked and Content-Length; chunked wins".into(),
            ));
        } else if lengths.windows(2).any(|w| w[0] != w[1]) {
            out(HttpEvent::Anomaly(
                Code::HttpConflictingFraming,
                format!("several Content-Length values {lengths:?}; the first is used"),
            ));
        }
        let is_request = self.is_request;
        let status = head.status;
        self.in_message = true;
        let rule = out(HttpEvent::Head(head));
        self.state = if is_request {
            // RFC 9112 §6.3: a request without framing headers has no body.
            if te_chunked {
                State::Chunked(Chunk::Size)
            } else {
                match cl {
                    Some(Ok(0)) | None => State::Head,
                    Some(Ok(n)) => State::Length(n),
                    Some(Err(_)) => {
                        out(HttpEvent::Anomaly(
                            Code::HttpBadContentLength,
                            "unparsable Content-Length".into(),
                        ));
                        State::Head
                    }
                }
            }
        } else if rule == BodyRule::Tunnel {
            State::Tunnel
        } else if rule == BodyRule::None
            || (100..200).contains(&status)
            || status == 204
            || status == 304
        {
            State::Head
        } else if te_chunked {
            State::Chunked(Chunk::Size)
        } else {
            match cl {
                Some(Ok(0)) => State::Head,
                Some(Ok(n)) => State::Length(n),
                Some(Err(_)) => {
                    out(HttpEvent::Anomaly(
                        Code::HttpBadContentLength,
                        "unparsable Content-Length".into(),
                    ));
                    State::UntilClose
                }
                None => State::UntilClose,
            }
        };
        if self.state == State::Head {
            self.end_message(true, out);
        }
        if self.state == State::Tunnel {
            // The HTTP message ends here; what follows is another protocol.
            self.in_message = false;
            out(HttpEvent::End { complete: true });
        }
        HeadResult::Done(n)
    }

    /// A client's HTTP/2 connection preface (RFC 9113 §3.4) where a request head would begin:
    /// the direction leaves HTTP/1.x ([`HttpEvent::H2Preface`]), the bytes after the preface
    /// handed on as [`HttpEvent::Tunnel`]; `None` when `rest` is no preface (nor the start of
    /// one).
    fn h2_preface(
        &mut self,
        rest: &[u8],
        out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule,
    ) -> Option<Step> {
        use super::h2::frame::PREFACE;
        if rest.len() < PREFACE.len() {
            return PREFACE.starts_with(rest).then_some(Step::Stop(0));
        }
        if !rest.starts_with(PREFACE) {
            return None;
        }
        out(HttpEvent::H2Preface);
        self.head_tried = 0;
        self.state = State::Tunnel;
        Some(Step::Advance(PREFACE.len()))
    }

    fn bad_head(
        &mut self,
        e: httparse::Error,
        out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule,
    ) -> HeadResult {
        let code = if e == httparse::Error::TooManyHeaders {
            Code::HttpTooManyHeaders
        } else {
            Code::HttpBadHead
        };
        out(HttpEvent::Anomaly(code, format!("{e}")));
        HeadResult::Bad
    }
}

/// Deliver up to `rem` body bytes of `rest`: how many were delivered and how many the body (or
/// chunk) still owes; `None` when `rest` is empty.
fn body_bytes(
    rem: u64,
    rest: &[u8],
    out: &mut dyn FnMut(HttpEvent<'_>) -> BodyRule,
) -> Option<(usize, u64)> {
    if rest.is_empty() {
        return None;
    }
    let n = (rem.min(rest.len() as u64)) as usize;
    out(HttpEvent::Body(&rest[..n]));
    Some((n, rem - n as u64))
}

/// How far one step of [`DirParser::parse`] got.
enum Step {
    /// It consumed this many bytes; the next step reads on.
    Advance(usize),
    /// It consumed this many bytes and needs more input before going on.
    Stop(usize),
}

enum HeadResult {
    Partial,
    Bad,
    Done(usize),
}

/// Header slots kept on the stack for one head (the rest of `max_headers` only when needed).
const FEW_HEADERS: usize = 64;

/// Parse a request head (`is_request`) or a response head from `rest` into a [`Head`], with
/// `slots` for its fields: `Ok(None)` while incomplete, `Ok(Some((head, length)))` when complete.
///
/// Requests are parsed strictly (RFC 9112 §3); a recipient of a response keeps what an older
/// sender wrote: obs-fold (RFC 9112 §5.2, its value unfolded), spaces before a header's colon,
/// runs of spaces in the status line.
///
/// Errors: httparse's, `TooManyHeaders` when the fields do not fit `slots`.
fn parse_fields<'b>(
    is_request: bool,
    rest: &'b [u8],
    slots: &mut [MaybeUninit<httparse::Header<'b>>],
) -> Result<Option<(Head, usize)>, httparse::Error> {
    let mut head = Head::default();
    if is_request {
        let mut req = httparse::Request::new(&mut []);
        match httparse::ParserConfig::default()
            .parse_request_with_uninit_headers(&mut req, rest, slots)?
        {
            httparse::Status::Complete(n) => {
                head.method = req.method.unwrap_or("").to_string();
                head.target = req.path.unwrap_or("").to_string();
                head.version = req.version.unwrap_or(1);
                set_headers(&mut head, req.headers);
                Ok(Some((head, n)))
            }
            httparse::Status::Partial => Ok(None),
        }
    } else {
        let mut resp = httparse::Response::new(&mut []);
        let lenient = httparse::ParserConfig::default()
            .allow_obsolete_multiline_headers_in_responses(true)
            .allow_spaces_after_header_name_in_responses(true)
            .allow_multiple_spaces_in_response_status_delimiters(true)
            .clone();
        match lenient.parse_response_with_uninit_headers(&mut resp, rest, slots)? {
            httparse::Status::Complete(n) => {
                head.status = resp.code.unwrap_or(0);
                head.reason = resp.reason.unwrap_or("").to_string();
                head.version = resp.version.unwrap_or(1);
                set_headers(&mut head, resp.headers);
                Ok(Some((head, n)))
            }
            httparse::Status::Partial => Ok(None),
        }
    }
}

/// Copy the parsed header fields into `head`; values decoded lossily as UTF-8.
fn set_headers(head: &mut Head, h: &[httparse::Header<'_>]) {
    head.text
        .reserve_exact(h.iter().map(|f| f.name.len() + f.value.len()).sum());
    head.fields.reserve_exact(h.len());
    for f in h {
        let value = crate::text::lossy(f.value);
        if value.contains(['\r', '\n']) {
            head.push_header(f.name, &unfold(&value));
        } else {
            head.push_header(f.name, &value);
        }
    }
}

/// A header value with each obs-fold (CRLF or LF followed by spaces or tabs) replaced by one
/// space (RFC 9112 §5.2).
fn unfold(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' || c == '\n' {
            while chars
                .next_if(|n| matches!(n, '\r' | '\n' | ' ' | '\t'))
                .is_some()
            {}
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

fn trim_cr(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

/// RFC 9112 §7.1: chunk-size in hex, optionally followed by `;ext`.
pub(super) fn parse_chunk_size(line: &[u8]) -> Option<u64> {
    let end = line
        .iter()
        .position(|&b| b == b';' || b == b' ' || b == b'\t')
        .unwrap_or(line.len());
    let hex = &line[..end];
    if hex.is_empty() || hex.len() > 15 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in hex {
        let d = (b as char).to_digit(16)? as u64;
        v = v * 16 + d;
    }
    Some(v)
}

/// Where [`find_chunk_line`] stands.
pub(super) enum ChunkLine {
    /// A chunk-size line starts at this index: 0, or after a CRLF (at index - 2).
    At(usize),
    /// None before this index; from it on, the bytes may begin one.
    From(usize),
}

/// Whether `line` begins with a chunk-size line (`chunk-size [; ext] CRLF`, at most 80 bytes):
/// `Some(true)` when it does, `Some(false)` when it runs out while it still may.
pub(super) fn size_line(line: &[u8]) -> Option<bool> {
    const MAX_LINE: usize = 80;
    let digits = line.iter().take_while(|c| c.is_ascii_hexdigit()).count();
    match line.get(digits) {
        None if digits <= 15 => Some(false),
        Some(b';' | b' ' | b'\t' | b'\r') if (1..=15).contains(&digits) => {
            match memchr::memchr(b'\n', &line[digits..]) {
                Some(nl) if digits + nl < MAX_LINE && line[digits + nl - 1] == b'\r' => Some(true),
                None if line.len() < MAX_LINE => Some(false),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The first `CRLF chunk-size [; ext] CRLF` in `b` (RFC 9112 §7.1: the end of a chunk's data and
/// the next size line), or a size line at its start when `at_line_start`.
pub(super) fn find_chunk_line(b: &[u8], at_line_start: bool) -> ChunkLine {
    if at_line_start {
        match size_line(b) {
            Some(true) => return ChunkLine::At(0),
            Some(false) => return ChunkLine::From(0),
            None => {}
        }
    }
    let mut from = 0;
    while let Some(k) = memchr::memmem::find(&b[from..], b"\r\n").map(|k| from + k) {
        match size_line(&b[k + 2..]) {
            Some(true) => return ChunkLine::At(k + 2),
            Some(false) => return ChunkLine::From(k),
            None => {}
        }
        from = k + 1;
    }
    // A CR at the very end may begin the CRLF.
    ChunkLine::From(if b.last() == Some(&b'\r') {
        b.len() - 1
    } else {
        b.len()
    })
}

/// The first line start in `b` that looks like a start line; `b[0]` counts as a line start
/// only when `first_at_line_start`.
fn find_start_line(b: &[u8], is_request: bool, first_at_line_start: bool) -> Option<usize> {
    let mut i = 0;
    while i < b.len() {
        let at_line_start = if i == 0 {
            first_at_line_start
        } else {
            b[i - 1] == b'\n'
        };
        if at_line_start {
            let r = &b[i..];
            if (is_request && looks_like_request(r)) || (!is_request && looks_like_response(r)) {
                return Some(i);
            }
        }
        match memchr::memchr(b'\n', &b[i..]) {
            Some(n) => i += n + 1,
            None => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_in_any_case() {
        for (i, k) in KNOWN.iter().enumerate() {
            assert_eq!(known_index(k), Some(i));
            assert_eq!(known_index(&k.to_uppercase()), Some(i));
        }
        assert_eq!(known_index("x-backend"), None);
    }

    #[derive(Debug, PartialEq)]
    enum Ev {
        Head(u16, String),
        Body(Vec<u8>),
        End(bool),
    }

    fn run(is_request: bool, input: &[u8], splits: &[usize]) -> Vec<Ev> {
        let mut p = DirParser::new(is_request, HttpLimits::default());
        let mut evs: Vec<Ev> = Vec::new();
        let mut out = |e: HttpEvent<'_>| {
            match e {
                HttpEvent::Head(h) => evs.push(Ev::Head(h.status, h.method.clone())),
                HttpEvent::Body(b) => match evs.last_mut() {
                    Some(Ev::Body(v)) => v.extend_from_slice(b),
                    _ => evs.push(Ev::Body(b.to_vec())),
                },
                HttpEvent::End { complete } => evs.push(Ev::End(complete)),
                _ => {}
            }
            BodyRule::ByHeaders
        };
        let mut last = 0;
        for &s in splits.iter().chain(std::iter::once(&input.len())) {
            p.push(&input[last..s], &mut out);
            last = s;
        }
        p.end(true, &mut out);
        evs
    }

    /// A gap that takes chunk framing (a size line, the CRLF after data, or past a chunk's end)
    /// does not end a chunked body: the framing is found again at the next `CRLF size CRLF`, and
    /// the bytes between are delivered as data, however the input is split.
    #[test]
    fn chunk_framing_is_found_again_after_a_gap() {
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        let body = b"5\r\nhello\r\n6;x=1\r\n world\r\n3\r\n!!!\r\n0\r\n\r\n";
        // (bytes of the body kept before the gap, bytes lost, what is delivered after it, body
        // bytes said lost)
        let cases: [(usize, usize, &[u8], u64); 8] = [
            // The CRLF after "hello": nothing of the data lost.
            (8, 2, b" world!!!", 0),
            // Its LF alone, the CR held from before the gap: nothing lost either.
            (9, 1, b" world!!!", 0),
            // The LF and the next size line's first byte: the rest of that line is read as data.
            (9, 2, b";x=1\r\n world!!!", 2),
            // The size line of the second chunk: its data is read on to the next size line.
            (10, 7, b" world!!!", 7),
            // From inside "hello" to inside " world": the rest of " world", then "!!!".
            (6, 12, b"world!!!", 12),
            // The second chunk whole and the third's size line: its data follows the gap.
            (10, 18, b"!!!", 18),
            // Up to the CRLF before the last chunk.
            (10, 21, b"", 21),
            // A whole chunk, from its size line to the next one (one segment = one chunk): the
            // next chunk's size line starts the bytes after the gap.
            (10, 15, b"!!!", 15),
        ];
        for (keep, lost, after, said) in cases {
            let rest = &body[keep + lost..];
            for split in 0..=rest.len() {
                let mut p = DirParser::new(false, HttpLimits::default());
                let got = std::cell::RefCell::new(Vec::new());
                let (mut gaps, mut ends) = (0u64, Vec::new());
                let mut out = |e: HttpEvent<'_>| {
                    match e {
                        HttpEvent::Body(b) => got.borrow_mut().extend_from_slice(b),
                        HttpEvent::BodyGap(n) => gaps += n,
                        HttpEvent::End { complete } => ends.push(complete),
                        _ => {}
                    }
                    BodyRule::ByHeaders
                };
                p.push(head, &mut out);
                p.push(&body[..keep], &mut out);
                let before = got.borrow().len();
                p.gap(lost as u64, &mut out);
                p.push(&rest[..split], &mut out);
                p.push(&rest[split..], &mut out);
                assert_eq!(
                    &got.borrow()[before..],
                    after,
                    "keep {keep} lost {lost} split {split}"
                );
                assert_eq!(ends, [true], "keep {keep} lost {lost} split {split}");
                assert_eq!(gaps, said, "keep {keep} lost {lost} split {split}");
            }
        }
    }

    /// A gap that took the end of a chunked body: the next response's start line, split
    /// anywhere, ends it (incomplete) and is parsed.
    #[test]
    fn a_start_line_after_a_chunk_framing_gap_ends_the_body() {
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel";
        let rest = b"lo\r\nHTTP/1.1 204 No Content\r\n\r\n";
        // The gap took the body's end exactly: the next message starts the bytes after it.
        for split in 0..=27 {
            let mut p = DirParser::new(false, HttpLimits::default());
            let mut evs = Vec::new();
            let mut out = |e: HttpEvent<'_>| {
                match e {
                    HttpEvent::Head(h) => evs.push(format!("head {}", h.status)),
                    HttpEvent::End { complete } => evs.push(format!("end {complete}")),
                    _ => {}
                }
                BodyRule::ByHeaders
            };
            p.push(head, &mut out);
            p.push(b"lo\r\n", &mut out);
            // The last chunk, `0 CRLF CRLF`.
            p.gap(5, &mut out);
            p.push(&rest[4..4 + split], &mut out);
            p.push(&rest[4 + split..], &mut out);
            assert_eq!(
                evs,
                ["head 200", "end false", "head 204", "end true"],
                "split {split}"
            );
        }
        for split in 0..=rest.len() {
            let mut p = DirParser::new(false, HttpLimits::default());
            let mut evs = Vec::new();
            let mut out = |e: HttpEvent<'_>| {
                match e {
                    HttpEvent::Head(h) => evs.push(format!("head {}", h.status)),
                    HttpEvent::Body(b) => evs.push(String::from_utf8_lossy(b).into_owned()),
                    HttpEvent::End { complete } => evs.push(format!("end {complete}")),
                    _ => {}
                }
                BodyRule::ByHeaders
            };
            p.push(head, &mut out);
            p.gap(9, &mut out);
            p.push(&rest[..split], &mut out);
            p.push(&rest[split..], &mut out);
            let body: String = evs[1..evs.len() - 3].concat();
            assert_eq!(body, "hel".to_string() + "lo\r\n", "split {split}");
            assert_eq!(
                evs[evs.len() - 3..],
                ["end false", "head 204", "end true"],
                "split {split}"
            );
        }
    }

    /// A head that comes a byte at a time gives the same head; one left unfinished at a gap or
    /// at the end is counted, as bad when it is.
    #[test]
    fn heads_in_single_bytes_and_unfinished_heads() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Long: ".to_vec();
        let mut input = head.clone();
        input.extend(std::iter::repeat_n(b'a', 10_000));
        input.extend_from_slice(b"\r\n\r\nok");
        let mut p = DirParser::new(false, HttpLimits::default());
        let (mut heads, mut body) = (Vec::new(), Vec::new());
        for b in &input {
            p.push(std::slice::from_ref(b), &mut |e| {
                match e {
                    HttpEvent::Head(h) => heads.push(h.header("x-long").map(str::len)),
                    HttpEvent::Body(b) => body.extend_from_slice(b),
                    _ => {}
                }
                BodyRule::ByHeaders
            });
        }
        assert_eq!(heads, [Some(10_000)]);
        assert_eq!(body, b"ok");
        let codes = |input: &[u8], then_gap: bool| {
            let mut p = DirParser::new(false, HttpLimits::default());
            let mut codes = Vec::new();
            let mut out = |e: HttpEvent<'_>| {
                if let HttpEvent::Anomaly(c, _) = e {
                    codes.push(c);
                }
                BodyRule::ByHeaders
            };
            for b in input {
                p.push(std::slice::from_ref(b), &mut out);
            }
            if then_gap {
                p.gap(10, &mut out);
            } else {
                p.end(true, &mut out);
            }
            codes
        };
        assert_eq!(codes(&head, true), [Code::HttpPartialHead]);
        assert_eq!(codes(&head, false), [Code::HttpPartialHead]);
        assert_eq!(
            codes(b"HTTP/1.1 200 OK\r\nBad Name: x\r\n", false),
            [Code::HttpBadHead]
        );
    }

    #[test]
    fn obs_fold_in_a_response_is_unfolded() {
        let input = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Folded: first\r\n  second line\r\nContent-Length: 2\r\n\r\nok";
        let mut p = DirParser::new(false, HttpLimits::default());
        let mut heads = Vec::new();
        let mut body = Vec::new();
        p.push(input, &mut |e| {
            match e {
                HttpEvent::Head(h) => heads.push(h),
                HttpEvent::Body(b) => body.extend_from_slice(b),
                _ => {}
            }
            BodyRule::ByHeaders
        });
        assert_eq!(heads.len(), 1);
        assert_eq!(heads[0].header("x-folded"), Some("first second line"));
        assert_eq!(heads[0].header("content-type"), Some("text/event-stream"));
        assert_eq!(body, b"ok");
    }

    #[test]
    fn header_lookup_indexed_equals_scan() {
        // First field of a name wins, any case; names past the index (field 255 on) are found by
        // scanning; an indexed name that is absent is absent.
        let mut h = Head::default();
        h.push_header("X-Other", "0");
        h.push_header("MCP-Session-Id", "abc");
        h.push_header("mcp-session-id", "second");
        h.push_header("Content-Type", "text/event-stream");
        for i in 0..300 {
            h.push_header(&format!("X-{i}"), "v");
        }
        h.push_header("Last-Event-ID", "late");
        h.push_header("host", "h");
        let scan = |name: &str| {
            h.headers()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v)
        };
        for name in KNOWN.iter().copied().chain(["x-other", "X-299", "nope"]) {
            for n in [name.to_string(), name.to_ascii_uppercase()] {
                assert_eq!(h.header(&n), scan(&n), "{n}");
            }
        }
        assert_eq!(h.header("mcp-session-id"), Some("abc"));
        assert_eq!(h.header("last-event-id"), Some("late"));
        assert_eq!(h.header("upgrade"), None);
    }

    const RESP: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\n\r\ntail";

    #[test]
    fn responses_every_split() {
        let whole = run(false, RESP, &[]);
        assert_eq!(
            whole,
            vec![
                Ev::Head(200, String::new()),
                Ev::Body(b"hello world".to_vec()),
                Ev::End(true),
                Ev::Head(202, String::new()),
                Ev::End(true),
                Ev::Head(200, String::new()),
                Ev::Body(b"abc".to_vec()),
                Ev::End(true),
                Ev::Head(200, String::new()),
                Ev::Body(b"tail".to_vec()),
                Ev::End(true),
            ]
        );
        for i in 0..=RESP.len() {
            assert_eq!(run(false, RESP, &[i]), whole, "split at {i}");
        }
        let bytewise: Vec<usize> = (1..RESP.len()).collect();
        assert_eq!(run(false, RESP, &bytewise), whole);
    }

    #[test]
    fn requests_keepalive() {
        let req = b"POST /mcp HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}GET /mcp HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n";
        let whole = run(true, req, &[]);
        assert_eq!(
            whole,
            vec![
                Ev::Head(0, "POST".into()),
                Ev::Body(b"{}".to_vec()),
                Ev::End(true),
                Ev::Head(0, "GET".into()),
                Ev::End(true)
            ]
        );
        for i in 0..=req.len() {
            assert_eq!(run(true, req, &[i]), whole, "split at {i}");
        }
    }

    /// A long head that comes in small segments is parsed a few times as it grows, not once
    /// per line: it gives the same messages and anomalies as when it comes whole, whether it is
    /// good or has a bad line far from its start (found later, with the same outcome).
    #[test]
    fn long_heads_in_small_segments() {
        let head = |bad_at: Option<usize>| {
            let mut h = String::from("POST /mcp HTTP/1.1\r\n");
            for i in 0..250 {
                if Some(i) == bad_at {
                    h.push_str("this line has no colon and no place in a head\r\n");
                }
                h.push_str(&format!("X-Pad-{i}: {}\r\n", "p".repeat(800)));
            }
            h.push_str("Content-Length: 2\r\n\r\n{}\r\nGET /mcp HTTP/1.1\r\n\r\n");
            h.into_bytes()
        };
        let run = |input: &[u8], piece: usize| {
            let mut p = DirParser::new(true, HttpLimits::default());
            let mut got: Vec<String> = Vec::new();
            let mut body = 0;
            let mut out = |e: HttpEvent<'_>| {
                if let HttpEvent::Body(b) = e {
                    body += b.len();
                    return BodyRule::ByHeaders;
                }
                if body > 0 {
                    got.push(format!("body {body}"));
                    body = 0;
                }
                got.push(match e {
                    HttpEvent::Head(h) => format!("head {} {}", h.method, h.headers().count()),
                    HttpEvent::End { complete } => format!("end {complete}"),
                    HttpEvent::Anomaly(code, detail) => format!("{code}: {detail}"),
                    _ => "other".into(),
                });
                BodyRule::ByHeaders
            };
            for c in input.chunks(piece) {
                p.push(c, &mut out);
            }
            p.end(true, &mut out);
            got
        };
        for bad_at in [None, Some(0), Some(120)] {
            let input = head(bad_at);
            let whole = run(&input, input.len());
            assert!(
                whole.iter().any(|e| e == "head GET 0"),
                "{bad_at:?}: {whole:?}"
            );
            assert_eq!(
                whole.iter().any(|e| e.starts_with("head POST")),
                bad_at.is_none(),
                "{bad_at:?}: {whole:?}"
            );
            for piece in [1, 100, 1460] {
                assert_eq!(run(&input, piece), whole, "{bad_at:?} in pieces of {piece}");
            }
        }
    }

    /// A long head held across segments leaves no large buffer behind once it is parsed, nor
    /// once it is dropped as too long: an open connection keeps little.
    #[test]
    fn a_long_head_leaves_no_large_buffer() {
        let pad = "p".repeat(900);
        let mut head = String::from("POST /mcp HTTP/1.1\r\n");
        for i in 0..200 {
            head.push_str(&format!("X-Pad-{i}: {pad}\r\n"));
        }
        let done = format!("{head}Content-Length: 0\r\n\r\n");
        let mut too_long = head.clone();
        while too_long.len() <= HttpLimits::default().max_header_bytes {
            too_long.push_str(&format!("X-More: {pad}\r\n"));
        }
        for input in [done, too_long] {
            let mut p = DirParser::new(true, HttpLimits::default());
            for c in input.as_bytes().chunks(1000) {
                p.push(c, &mut |_| BodyRule::ByHeaders);
            }
            assert!(p.buf.capacity() <= BUF_KEEP, "{}", p.buf.capacity());
        }
    }

    /// The bytes a direction keeps of a head in progress are held from the budget its stage's
    /// connections share: a head that does not fit is dropped (`http.memory_budget`) and the
    /// parser reads on from the next start line; a parsed head gives its bytes back.
    #[test]
    fn partial_heads_are_held_from_the_budget() {
        let budget = crate::budget::Budget::new(3000);
        let codes = |p: &mut DirParser, bytes: &[u8]| {
            let mut got = Vec::new();
            p.push(bytes, &mut |e| {
                match e {
                    HttpEvent::Anomaly(code, _) => got.push(code.to_string()),
                    HttpEvent::Head(h) => got.push(format!("head {}", h.method)),
                    _ => {}
                }
                BodyRule::ByHeaders
            });
            got
        };
        let partial = format!("POST /mcp HTTP/1.1\r\nX-Pad: {}\r\n", "p".repeat(2000));
        let mut a = DirParser::new(true, HttpLimits::default());
        a.draw_on(&budget);
        assert!(codes(&mut a, partial.as_bytes()).is_empty());
        assert_eq!(budget.held(), partial.len());
        let mut b = DirParser::new(true, HttpLimits::default());
        b.draw_on(&budget);
        assert_eq!(codes(&mut b, partial.as_bytes()), ["http.memory_budget"]);
        assert_eq!(budget.held(), partial.len());
        // The first head ends: its bytes are given back; the second direction reads on.
        assert_eq!(codes(&mut a, b"\r\n"), ["head POST"]);
        assert_eq!(budget.held(), 0);
        let next = codes(&mut b, b"GET /mcp HTTP/1.1\r\n\r\n");
        assert_eq!(
            next.last().map(String::as_str),
            Some("head GET"),
            "{next:?}"
        );
    }

    /// A head with more fields than the stack holds is parsed whole from the heap (up to
    /// `max_headers`), and one past `max_headers` is refused, as before.
    #[test]
    fn heads_past_the_stack_slots() {
        let head = |n: usize| {
            let mut h = String::from("HTTP/1.1 200 OK\r\n");
            for i in 0..n {
                h.push_str(&format!("X-F{i}: v{i}\r\n"));
            }
            h.push_str("Content-Length: 0\r\n\r\n");
            h.into_bytes()
        };
        for n in [FEW_HEADERS - 2, FEW_HEADERS - 1, FEW_HEADERS, 200, 255] {
            let mut p = DirParser::new(false, HttpLimits::default());
            let mut got = None;
            p.push(&head(n), &mut |e| {
                if let HttpEvent::Head(h) = e {
                    got = Some(h);
                }
                BodyRule::ByHeaders
            });
            let h = got.unwrap_or_else(|| panic!("{n} fields: no head"));
            assert_eq!(h.headers().count(), n + 1, "{n} fields");
            assert_eq!(h.header("x-f0"), Some("v0"));
            assert_eq!(
                h.header(&format!("X-F{}", n - 1)),
                Some(format!("v{}", n - 1).as_str())
            );
            assert_eq!(h.header("content-length"), Some("0"));
        }
        let mut p = DirParser::new(false, HttpLimits::default());
        let mut codes = Vec::new();
        p.push(&head(256), &mut |e| {
            if let HttpEvent::Anomaly(c, _) = e {
                codes.push(c);
            }
            BodyRule::ByHeaders
        });
        assert_eq!(codes, [Code::HttpTooManyHeaders]);
    }

    /// A parser started inside a chunked body reads its chunks on, and the messages after it.
    #[test]
    fn a_parser_started_inside_a_body() {
        let mut p = DirParser::in_body(BodyFrom::ChunkSize, HttpLimits::default());
        let mut evs = Vec::new();
        p.push(
            b"5\r\nhello\r\n0\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
            &mut |e| {
                evs.push(match e {
                    HttpEvent::Head(h) => format!("head {}", h.status),
                    HttpEvent::Body(b) => format!("body {}", String::from_utf8_lossy(b)),
                    HttpEvent::End { complete } => format!("end {complete}"),
                    other => format!("{other:?}"),
                });
                BodyRule::ByHeaders
            },
        );
        assert_eq!(
            evs,
            ["body hello", "end true", "head 204", "end true"].map(String::from)
        );
    }

    #[test]
    fn garbage_resyncs() {
        let input = b"garbage\r\nHTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(
            run(false, input, &[]),
            vec![Ev::Head(204, String::new()), Ev::End(true)]
        );
    }

    /// After a gap, a method name in the middle of a line (split across pushes) is not a start line.
    #[test]
    fn resync_ignores_mid_line_methods() {
        let mut p = DirParser::new(true, HttpLimits::default());
        let heads = std::cell::Cell::new(0);
        let mut out = |e: HttpEvent<'_>| {
            if let HttpEvent::Head(_) = e {
                heads.set(heads.get() + 1);
            }
            BodyRule::ByHeaders
        };
        p.push(
            b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            &mut out,
        );
        p.gap(5, &mut out);
        p.push(b"yyyyyyyyyyyyGET /x H", &mut out);
        p.push(b"TTP/1.1\r\n\r\n", &mut out);
        assert_eq!(heads.get(), 1);
        // A real start line after a newline, split across pushes, is found.
        p.push(b"zz\r\nGE", &mut out);
        p.push(b"T /b HTTP/1.1\r\n\r\n", &mut out);
        assert_eq!(heads.get(), 2);
    }

    /// An HTTP/2 connection preface, split anywhere, is told once and what follows it is handed
    /// on as it came, not parsed as HTTP/1.x: no anomaly, no head, no resync.
    #[test]
    fn an_h2_preface_split_anywhere_is_said_once() {
        let mut input = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        // A SETTINGS frame, then a HEADERS frame of binary bytes.
        input.extend_from_slice(&[
            0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 5, 1, 5, 0, 0, 0, 1, 0x82, 0x86, 0x84, 0x41, 0x8a,
        ]);
        for at in 0..=input.len() {
            let codes = std::cell::RefCell::new(Vec::new());
            let heads = std::cell::Cell::new(0);
            let prefaces = std::cell::Cell::new(0);
            let after = std::cell::RefCell::new(Vec::new());
            let mut p = DirParser::new(true, HttpLimits::default());
            let mut out = |e: HttpEvent<'_>| {
                match e {
                    HttpEvent::Anomaly(code, _) => codes.borrow_mut().push(code),
                    HttpEvent::Head(_) => heads.set(heads.get() + 1),
                    HttpEvent::H2Preface => prefaces.set(prefaces.get() + 1),
                    HttpEvent::Tunnel(b) => after.borrow_mut().extend_from_slice(b),
                    _ => {}
                }
                BodyRule::ByHeaders
            };
            p.push(&input[..at], &mut out);
            p.push(&input[at..], &mut out);
            assert!(p.left_http(), "split at {at}");
            p.end(true, &mut out);
            assert_eq!(*codes.borrow(), [], "split at {at}");
            assert_eq!((heads.get(), prefaces.get()), (0, 1));
            assert_eq!(*after.borrow(), input[24..], "split at {at}");
        }
        // "PRI" alone is no preface: a request head of that method is read as one.
        assert_eq!(
            run(true, b"PRI /x HTTP/1.1\r\nHost: h\r\n\r\n", &[2])[0],
            Ev::Head(0, "PRI".into())
        );
    }

    #[test]
    fn conflicting_framing_and_upgrade_are_named() {
        let codes = std::cell::RefCell::new(Vec::new());
        let mut p = DirParser::new(false, HttpLimits::default());
        let mut out = |e: HttpEvent<'_>| {
            if let HttpEvent::Anomaly(code, _) = e {
                codes.borrow_mut().push(code);
            }
            BodyRule::ByHeaders
        };
        p.push(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", &mut out);
        p.push(
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc",
            &mut out,
        );
        assert_eq!(
            *codes.borrow(),
            [Code::HttpConflictingFraming, Code::HttpConflictingFraming]
        );
    }

    #[test]
    fn chunk_size_parse() {
        assert_eq!(parse_chunk_size(b"1a;foo=bar"), Some(26));
        assert_eq!(parse_chunk_size(b"zz"), None);
        assert_eq!(parse_chunk_size(b"ffffffffffffffffff"), None);
    }
}
