//! Server-sent events: the `text/event-stream` interpretation of the WHATWG
//! HTML Living Standard, §9.2 "Server-sent events" (event stream
//! interpretation).
//!
//! A sans-IO, streaming parser: body bytes are pushed as they arrive (split
//! anywhere, also between a CR and its LF); events are emitted at the blank
//! line that ends them. Unlike a browser, every event block is reported —
//! also those with empty `data` (MCP 2025-11-25 priming events: a cursor, not
//! a message) — and each event says whether it carried its own `id:` line,
//! since the last-event-id buffer persists across events.

use crate::anomaly::{Anomaly, Code};

/// Limits of the SSE stage.
#[derive(Debug, Clone, Copy)]
pub struct SseLimits {
    /// Longest line, in bytes (anomaly `sse.line_too_long`; the event is skipped).
    pub max_line: usize,
    /// Largest event `data`, in bytes (anomaly `sse.event_too_large`; the event is skipped).
    pub max_event: usize,
}

impl Default for SseLimits {
    fn default() -> Self {
        SseLimits {
            max_line: 1 << 20,
            max_event: 16 << 20,
        }
    }
}

/// One dispatched event block.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SseEvent {
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
    /// The last-event-id buffer after this block (WHATWG: it persists across events).
    pub id: Option<crate::text::Short>,
    /// The `event:` type, if any.
    pub event_type: Option<crate::text::Short>,
    /// The `data` buffer, lines joined with LF, final LF removed.
    pub data: String,
    /// The `retry:` value in milliseconds, if a valid one was present.
    pub retry: Option<u64>,
    /// Set for an event cut by the end of the stream (not dispatched by a browser).
    pub truncated: bool,
}

impl SseEvent {
    /// MCP 2025-11-25 priming event: an id with empty data — a cursor, not a message.
    pub fn is_priming(&self) -> bool {
        self.has_own_id && self.data.trim().is_empty()
    }
}

/// A `data` line being streamed into the data buffer.
#[derive(Debug, Clone, Copy)]
struct Streamed {
    /// Length of the data buffer before the line's value.
    before: usize,
    /// Bytes of the value so far.
    len: usize,
    /// The value's first byte has not come yet (a single leading space is dropped).
    at_value_start: bool,
    /// The value passed the event size limit: it is no longer kept.
    over: bool,
}

/// Streaming event-stream parser for one body.
#[derive(Debug)]
pub struct SseParser {
    limits: SseLimits,
    line: Vec<u8>,
    /// Bytes of the line in progress pushed so far (held in `line`, or streamed into `data`).
    partial: usize,
    /// The line in progress is a `data` field cut by the end of a push: its value goes straight
    /// into `data` as it arrives (the bytes are copied once, not into `line` and then `data`).
    streaming: Option<Streamed>,
    /// Frame that carried the first byte of the line in progress (or being completed).
    line_frame: u64,
    line_too_long: bool,
    pending_cr: bool,
    at_start: bool,
    offset: u64,
    /// After a gap: ignore lines until the next blank line.
    skipping: bool,
    cur: SseEvent,
    cur_started: bool,
    data: Vec<u8>,
    too_large: bool,
    last_event_id: Option<crate::text::Short>,
    /// What `data` and `line` hold past [`FREE_HELD`] bytes, drawn on the stage's held-bytes
    /// budget ([`Self::with_budget`]; none: no such bound).
    charge: crate::budget::Charge,
    /// The budget refused the last growth of `data` or `line` (said in the anomaly).
    over_budget: bool,
    /// Comment lines seen.
    pub comments: u64,
}

/// Bytes of event data and line a parser holds without drawing on the held-bytes budget: most
/// events are smaller, so most never touch it.
const FREE_HELD: usize = 4 << 10;

impl SseParser {
    /// A parser at the start of a body.
    pub fn new(limits: SseLimits) -> Self {
        SseParser {
            limits,
            line: Vec::new(),
            partial: 0,
            streaming: None,
            line_frame: 0,
            line_too_long: false,
            pending_cr: false,
            at_start: true,
            offset: 0,
            skipping: false,
            cur: SseEvent::default(),
            cur_started: false,
            data: Vec::new(),
            too_large: false,
            last_event_id: None,
            charge: crate::budget::Charge::default(),
            over_budget: false,
            comments: 0,
        }
    }

    /// The same parser, its event and line buffers bounded also by `budget`, shared with other
    /// connections' buffers (anomaly `sse.memory_budget`; the event is skipped).
    pub fn with_budget(mut self, budget: &std::sync::Arc<crate::budget::Budget>) -> Self {
        self.charge = crate::budget::Charge::new(budget);
        self
    }

    /// Whether `data` and `line` may hold `bytes` in all; sets `over_budget` when not.
    fn may_hold(&mut self, bytes: usize) -> bool {
        let ok = self.charge.hold(bytes.saturating_sub(FREE_HELD));
        self.over_budget |= !ok;
        ok
    }

    /// Give back what `data` and `line` no longer hold.
    fn held_now(&mut self) {
        let n = self.data.len() + self.line.len();
        self.charge.hold(n.saturating_sub(FREE_HELD));
    }

    /// Push body bytes that arrived in `frame` at `ts`. Each event is lent to `out` as it is
    /// dispatched; its `data` and `id` buffers are then reused for the next event.
    pub fn push(
        &mut self,
        mut bytes: &[u8],
        ts: i64,
        frame: u64,
        out: &mut impl FnMut(&SseEvent),
        anomalies: &mut impl FnMut(Anomaly),
    ) {
        if self.at_start {
            // A leading U+FEFF BOM is skipped; it may be split across pushes.
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            let have = self.line.len();
            let take = (BOM.len() - have).min(bytes.len());
            if BOM[have..have + take] == bytes[..take] {
                if have + take == BOM.len() {
                    self.line.clear();
                    self.offset += BOM.len() as u64;
                    bytes = &bytes[take..];
                    self.at_start = false;
                } else {
                    self.line.extend_from_slice(&bytes[..take]);
                    return;
                }
            } else {
                self.at_start = false;
                let partial = std::mem::take(&mut self.line);
                if !partial.is_empty() {
                    self.feed(&partial, ts, frame, out, anomalies);
                }
            }
        }
        self.feed(bytes, ts, frame, out, anomalies);
    }

    fn feed(
        &mut self,
        bytes: &[u8],
        ts: i64,
        frame: u64,
        out: &mut impl FnMut(&SseEvent),
        anomalies: &mut impl FnMut(Anomaly),
    ) {
        let mut i = 0;
        if self.pending_cr && !bytes.is_empty() {
            self.pending_cr = false;
            if bytes[0] == b'\n' {
                i = 1;
                self.offset += 1;
            }
        }
        while i < bytes.len() {
            let rest = &bytes[i..];
            match memchr::memchr2(b'\r', b'\n', rest) {
                Some(n) => {
                    let line_start_offset = self.offset - self.partial as u64;
                    if self.partial == 0 {
                        self.line_frame = frame;
                    }
                    if self.streaming.is_some() {
                        self.stream_part(&rest[..n], anomalies);
                        self.end_stream(frame, anomalies);
                    } else if self.line.is_empty() && n <= self.limits.max_line {
                        self.line_done(&rest[..n], line_start_offset, ts, frame, out, anomalies);
                    } else {
                        self.append_line(&rest[..n], anomalies);
                        let line = std::mem::take(&mut self.line);
                        self.line_done(&line, line_start_offset, ts, frame, out, anomalies);
                        // The room of a long line is given back (see `clear_data`).
                        if line.capacity() <= FREE_HELD {
                            self.line = line;
                            self.line.clear();
                        }
                        self.held_now();
                    }
                    self.line_too_long = false;
                    self.partial = 0;
                    let mut used = n + 1;
                    if rest[n] == b'\r' {
                        if n + 1 < rest.len() {
                            if rest[n + 1] == b'\n' {
                                used += 1;
                            }
                        } else {
                            self.pending_cr = true;
                        }
                    }
                    self.offset += used as u64;
                    i += used;
                }
                None => {
                    if self.partial == 0 {
                        self.line_frame = frame;
                    }
                    if self.streaming.is_some() {
                        self.stream_part(rest, anomalies);
                    } else if self.partial == 0
                        && !self.line_too_long
                        && !self.skipping
                        && rest.len() <= self.limits.max_line
                        && rest.starts_with(b"data:")
                    {
                        self.start_stream(&rest[5..]);
                    } else {
                        self.append_line(rest, anomalies);
                    }
                    self.partial += rest.len();
                    self.offset += rest.len() as u64;
                    i = bytes.len();
                }
            }
        }
    }

    fn append_line(&mut self, part: &[u8], anomalies: &mut impl FnMut(Anomaly)) {
        if self.line_too_long {
            return;
        }
        if self.line.len() + part.len() > self.limits.max_line
            || !self.may_hold(self.data.len() + self.line.len() + part.len())
        {
            self.too_long(anomalies);
            return;
        }
        self.line.extend_from_slice(part);
    }

    /// The line in progress passed the length limit: it and its event are skipped.
    fn too_long(&mut self, anomalies: &mut impl FnMut(Anomaly)) {
        anomalies(if std::mem::take(&mut self.over_budget) {
            self.budget_anomaly(None)
        } else {
            Anomaly::new(
                Code::SseLineTooLong,
                None,
                None,
                format!(
                    "line longer than {} bytes; event skipped",
                    self.limits.max_line
                ),
            )
        });
        self.line_too_long = true;
        self.streaming = None;
        self.line = Vec::new();
        self.skipping = true;
        self.reset_event();
    }

    /// A `data` line starts at the end of a push (`value`: what follows its colon so far): what
    /// [`Self::line_done`] does at the start of a data line, then the value into `data`.
    fn start_stream(&mut self, value: &[u8]) {
        if !self.cur_started {
            self.cur_started = true;
            self.cur.offset = self.offset;
            self.cur.frame_first = self.line_frame;
        }
        self.streaming = Some(Streamed {
            before: self.data.len(),
            len: 0,
            at_value_start: true,
            over: false,
        });
        self.stream_value(value);
    }

    /// More of a streamed data line (not its end of line), with the line length limit of
    /// [`Self::append_line`].
    fn stream_part(&mut self, part: &[u8], anomalies: &mut impl FnMut(Anomaly)) {
        if self.partial + part.len() > self.limits.max_line {
            self.too_long(anomalies);
            return;
        }
        self.stream_value(part);
    }

    fn stream_value(&mut self, mut v: &[u8]) {
        let Some(s) = self.streaming.as_mut() else {
            return;
        };
        if s.at_value_start && !v.is_empty() {
            s.at_value_start = false;
            v = v.strip_prefix(b" ").unwrap_or(v);
        }
        s.len += v.len();
        if s.over || self.too_large {
            return;
        }
        // The check `line_done` makes on a whole value (and its LF).
        let held = s.before + s.len + 1 + self.line.len();
        if s.before + s.len + 1 > self.limits.max_event || !self.may_hold(held) {
            let Some(s) = self.streaming.as_mut() else {
                return;
            };
            s.over = true;
            self.data.truncate(s.before);
            return;
        }
        self.data.extend_from_slice(v);
    }

    /// The end of a streamed data line: what [`Self::line_done`] does after the value is known.
    fn end_stream(&mut self, frame: u64, anomalies: &mut impl FnMut(Anomaly)) {
        let Some(s) = self.streaming.take() else {
            return;
        };
        if s.over {
            self.too_large(frame, anomalies);
            return;
        }
        self.data.push(b'\n');
    }

    /// A data value would take the event past its size limit: the event is skipped (said once).
    fn too_large(&mut self, frame: u64, anomalies: &mut impl FnMut(Anomaly)) {
        let over_budget = std::mem::take(&mut self.over_budget);
        if !self.too_large {
            anomalies(if over_budget {
                self.budget_anomaly(Some(frame))
            } else {
                Anomaly::new(
                    Code::SseEventTooLarge,
                    Some(frame),
                    None,
                    format!(
                        "event data over {} bytes; event skipped",
                        self.limits.max_event
                    ),
                )
            });
        }
        self.too_large = true;
        // What the skipped event held is given back now, not at its end.
        self.clear_data();
        self.held_now();
    }

    /// Empty `data`; room a large event grew is given back to the allocator, not kept (the
    /// budget counts bytes held, and room kept would be held uncounted).
    fn clear_data(&mut self) {
        if self.data.capacity() > FREE_HELD {
            self.data = Vec::new();
        } else {
            self.data.clear();
        }
    }

    /// The anomaly of an event or line the held-bytes budget refused.
    fn budget_anomaly(&self, frame: Option<u64>) -> Anomaly {
        Anomaly::new(
            Code::SseMemoryBudget,
            frame,
            None,
            "the JSON bodies and SSE events held at once for the connections of one thread reached their budget; event skipped".into(),
        )
    }

    fn reset_event(&mut self) {
        self.cur = SseEvent::default();
        self.cur_started = false;
        self.clear_data();
        self.too_large = false;
        self.over_budget = false;
        self.held_now();
    }

    fn line_done(
        &mut self,
        line: &[u8],
        line_offset: u64,
        ts: i64,
        frame: u64,
        out: &mut impl FnMut(&SseEvent),
        anomalies: &mut impl FnMut(Anomaly),
    ) {
        if self.line_too_long {
            return;
        }
        if line.is_empty() {
            if self.skipping {
                self.skipping = false;
                self.reset_event();
                return;
            }
            if self.cur_started {
                self.dispatch(ts, frame, false, out);
            }
            return;
        }
        if self.skipping {
            return;
        }
        if line[0] == b':' {
            self.comments += 1;
            return;
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        // Only known fields make an event block; unknown ones are ignored (WHATWG).
        if !self.cur_started && matches!(name, b"data" | b"event" | b"id" | b"retry") {
            self.cur_started = true;
            self.cur.offset = line_offset;
            // The frame of the line's first byte, which may be before the one that ended it.
            self.cur.frame_first = self.line_frame;
        }
        match name {
            b"data" => {
                if self.too_large {
                    // The event is skipped already: its data is not kept.
                    return;
                }
                if self.data.len() + value.len() + 1 > self.limits.max_event
                    || !self.may_hold(self.data.len() + value.len() + 1 + self.line.len())
                {
                    self.too_large(frame, anomalies);
                    return;
                }
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"event" => {
                self.cur.event_type = Some(crate::text::Short::from(crate::text::lossy(value)))
            }
            b"id" => {
                if memchr::memchr(0, value).is_none() {
                    self.cur.has_own_id = true;
                    let id = crate::text::lossy(value);
                    match &mut self.last_event_id {
                        // The buffer's room is reused (ids are mostly alike in length).
                        Some(last) => {
                            last.clear();
                            last.push_str(&id);
                        }
                        None => self.last_event_id = Some(crate::text::Short::from(id)),
                    }
                } else {
                    anomalies(Anomaly::new(
                        Code::SseIdWithNul,
                        Some(frame),
                        None,
                        "id field containing NUL ignored".into(),
                    ));
                }
            }
            b"retry" if !value.is_empty() && value.iter().all(|b| b.is_ascii_digit()) => {
                self.cur.retry = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok());
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, ts: i64, frame: u64, truncated: bool, out: &mut impl FnMut(&SseEvent)) {
        if self.too_large {
            self.reset_event();
            return;
        }
        let mut ev = std::mem::take(&mut self.cur);
        if self.data.last() == Some(&b'\n') {
            self.data.pop();
        }
        // Valid UTF-8 (the norm) moves the buffer; otherwise replacement characters.
        let data = std::mem::take(&mut self.data);
        ev.data = if simdutf8::basic::from_utf8(&data).is_ok() {
            // SAFETY: the bytes were just validated as UTF-8 (simdutf8, the check `from_utf8`
            // makes, with SIMD: one pass over every byte of every event).
            unsafe { String::from_utf8_unchecked(data) }
        } else {
            String::from_utf8_lossy(&data).into_owned()
        };
        ev.id = self.last_event_id.take();
        ev.frame_last = frame;
        ev.ts = ts;
        ev.truncated = truncated;
        self.reset_event();
        out(&ev);
        // The buffers come back: no allocation per event. (A buffer a large event grew is not
        // kept for the rest of the stream.)
        self.last_event_id = ev.id.take();
        let mut data = std::mem::take(&mut ev.data).into_bytes();
        if data.capacity() <= 64 << 10 {
            data.clear();
            self.data = data;
        }
    }

    /// `len` bytes of the body are missing: drop the event in progress and resume after the next blank line.
    pub fn gap(&mut self, len: u64, frame: u64, anomalies: &mut impl FnMut(Anomaly)) {
        anomalies(Anomaly::new(
            Code::SseGap,
            Some(frame),
            None,
            format!("{len} bytes missing inside an event stream; resuming at the next blank line"),
        ));
        // Bytes of a BOM held at the body's start were not counted yet; the line in progress is
        // dropped with the event, so its length limit no longer applies.
        if self.at_start {
            self.offset += self.line.len() as u64;
        }
        self.offset += len;
        self.line.clear();
        self.partial = 0;
        self.streaming = None;
        self.line_too_long = false;
        self.pending_cr = false;
        self.at_start = false;
        self.reset_event();
        self.skipping = true;
    }

    /// The body is entered in the middle of an event (a stream the capture began inside, read
    /// from a chunk boundary that does not follow an event's end): what comes before the next
    /// blank line is the rest of an event whose start was not captured, and is passed over.
    ///
    /// `after_cr`: the bytes before ended with a CR, so a LF first is that line's end, not a
    /// blank line.
    pub fn start_inside_event(&mut self, after_cr: bool) {
        self.at_start = false;
        self.skipping = true;
        self.pending_cr = after_cr;
    }

    /// End of the body: an event in progress is reported as truncated.
    pub fn finish(
        &mut self,
        ts: i64,
        frame: u64,
        out: &mut impl FnMut(&SseEvent),
        anomalies: &mut impl FnMut(Anomaly),
    ) {
        if self.at_start && !self.line.is_empty() {
            self.at_start = false;
            let partial = std::mem::take(&mut self.line);
            self.feed(&partial, ts, frame, out, anomalies);
        }
        // A data line cut by the end ends here, as a line held in `line` does below.
        self.end_stream(frame, anomalies);
        if !self.line.is_empty() && !self.line_too_long && !self.skipping {
            let line = std::mem::take(&mut self.line);
            let off = self.offset - line.len() as u64;
            self.line_done(&line, off, ts, frame, out, anomalies);
        }
        self.line.clear();
        self.partial = 0;
        if self.cur_started && !self.skipping {
            self.dispatch(ts, frame, true, out);
        }
        self.reset_event();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8], splits: &[usize]) -> Vec<SseEvent> {
        let mut p = SseParser::new(SseLimits::default());
        let mut evs = Vec::new();
        let mut last = 0;
        for (k, &s) in splits
            .iter()
            .chain(std::iter::once(&input.len()))
            .enumerate()
        {
            p.push(
                &input[last..s],
                0,
                k as u64,
                &mut |e| evs.push(e.clone()),
                &mut |_| {},
            );
            last = s;
        }
        p.finish(0, 0, &mut |e| evs.push(e.clone()), &mut |_| {});
        // Frame numbers depend on the split; compare the rest.
        for e in &mut evs {
            e.frame_first = 0;
            e.frame_last = 0;
        }
        evs
    }

    /// Two parsers share a budget of 8 KiB past their free 4 KiB each: an event of 9 KiB in one
    /// is skipped, whole or split at any byte, while the other's small events go through; the
    /// bytes come back when the event ends.
    #[test]
    fn a_shared_budget_skips_an_event_past_it() {
        let big = format!(
            "id: 1\ndata: {}\n\nid: 2\ndata: ok\n\n",
            "x".repeat(13 << 10)
        );
        let big = big.as_bytes();
        for split in (0..big.len()).step_by(997).chain([1, 6, big.len() - 1]) {
            let budget = crate::budget::Budget::new(8 << 10);
            let mut a = SseParser::new(SseLimits::default()).with_budget(&budget);
            let mut b = SseParser::new(SseLimits::default()).with_budget(&budget);
            let (mut evs, mut anomalies) = (Vec::new(), Vec::new());
            for part in [&big[..split], &big[split..]] {
                a.push(part, 0, 1, &mut |e| evs.push(e.clone()), &mut |x| {
                    anomalies.push(x.code)
                });
                b.push(
                    b"data: {}\n\n",
                    0,
                    1,
                    &mut |e| evs.push(e.clone()),
                    &mut |x| anomalies.push(x.code),
                );
            }
            let ids: Vec<_> = evs.iter().map(|e| e.id.as_deref().unwrap_or("-")).collect();
            assert_eq!(
                ids.iter().filter(|i| **i == "1").count(),
                0,
                "split {split}"
            );
            assert!(ids.contains(&"2"), "split {split}: {ids:?}");
            assert_eq!(
                ids.iter().filter(|i| **i == "-").count(),
                2,
                "split {split}"
            );
            assert_eq!(anomalies, [Code::SseMemoryBudget], "split {split}");
            assert_eq!(budget.held(), 0, "split {split}");
        }
    }

    // Python SDK (sse-starlette) style: CRLF, priming event, comment.
    const PY: &[u8] = b"\xEF\xBB\xBFid: a\r\ndata: \r\nretry: 3000\r\n\r\n: ping - 2026\r\n\r\nid: b\r\nevent: message\r\ndata: {\"x\":1}\r\n\r\ndata: line1\rdata: line2\r\r";
    // TS SDK style: LF, `event` first.
    const TS: &[u8] =
        b"event: message\nid: s_1_x\ndata: {\"jsonrpc\":\"2.0\"}\n\nid: s_2\ndata: cut";

    #[test]
    fn python_crlf() {
        let evs = run(PY, &[]);
        assert_eq!(evs.len(), 3);
        assert!(evs[0].is_priming());
        assert_eq!(evs[0].retry, Some(3000));
        assert_eq!(evs[0].offset, 3);
        assert_eq!(evs[1].id.as_deref(), Some("b"));
        assert_eq!(evs[1].data, "{\"x\":1}");
        assert!(!evs[2].has_own_id);
        assert_eq!(evs[2].id.as_deref(), Some("b"), "last-event-id persists");
        assert_eq!(evs[2].data, "line1\nline2");
    }

    #[test]
    fn ts_lf_and_truncation() {
        let evs = run(TS, &[]);
        assert_eq!(evs.len(), 2);
        assert_eq!(evs[0].event_type.as_deref(), Some("message"));
        assert!(!evs[0].truncated);
        assert!(evs[1].truncated);
        assert_eq!(evs[1].data, "cut");
    }

    #[test]
    fn every_split_same_output() {
        for input in [PY, TS] {
            let whole = run(input, &[]);
            for i in 0..=input.len() {
                assert_eq!(run(input, &[i]), whole, "split at {i}");
                for j in i..=input.len() {
                    assert_eq!(run(input, &[i, j]), whole, "split at {i},{j}");
                }
            }
            let bytewise: Vec<usize> = (1..input.len()).collect();
            assert_eq!(run(input, &bytewise), whole);
        }
    }

    /// Found by the `sse` fuzz target: a line over the limit that arrives whole was parsed,
    /// while the same line split across pushes was skipped.
    #[test]
    fn long_line_whole_or_split() {
        let mut input = vec![b'H'; 257];
        input.extend_from_slice(b"\nx");
        let run = |parts: &[&[u8]]| {
            let mut p = SseParser::new(SseLimits {
                max_line: 256,
                max_event: 1024,
            });
            let mut evs = Vec::new();
            for part in parts {
                p.push(part, 0, 0, &mut |e| evs.push(e.clone()), &mut |_| {});
            }
            p.finish(0, 0, &mut |e| evs.push(e.clone()), &mut |_| {});
            evs
        };
        assert_eq!(run(&[&input]), run(&[&input[..72], &input[72..]]));
        assert!(run(&[&input]).is_empty());
        // Unknown fields alone make no event block.
        assert!(run(&[b"foo: bar\n\n"]).is_empty());
    }

    #[test]
    fn gap_resyncs_at_blank_line() {
        let mut p = SseParser::new(SseLimits::default());
        let mut evs = Vec::new();
        p.push(
            b"id: 1\ndata: a",
            0,
            1,
            &mut |e| evs.push(e.clone()),
            &mut |_| {},
        );
        p.gap(10, 2, &mut |_| {});
        p.push(
            b"rest of it\n\nid: 3\ndata: c\n\n",
            0,
            3,
            &mut |e| evs.push(e.clone()),
            &mut |_| {},
        );
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0].id.as_deref(), Some("3"));
    }

    /// After a gap, offsets count the bytes of a partial BOM before it, and a line that was over
    /// the length limit before it does not hide the next event (both as with an ordinary line).
    #[test]
    fn gap_after_partial_bom_or_long_line() {
        let events = |limits: SseLimits, first: &[u8]| {
            let mut p = SseParser::new(limits);
            let mut evs = Vec::new();
            p.push(first, 0, 1, &mut |e| evs.push(e.clone()), &mut |_| {});
            p.gap(2, 2, &mut |_| {});
            p.push(
                b"\n\ndata: x\n\n",
                0,
                3,
                &mut |e| evs.push(e.clone()),
                &mut |_| {},
            );
            evs.iter()
                .map(|e| (e.offset, e.data.clone()))
                .collect::<Vec<_>>()
        };
        let d = SseLimits::default();
        assert_eq!(events(d, b"\xEF\xBB"), events(d, b"ab"));
        assert_eq!(events(d, b"ab"), [(6, "x".to_string())]);
        let short = SseLimits {
            max_line: 8,
            ..SseLimits::default()
        };
        assert_eq!(
            events(short, b"data: 0123456789").len(),
            events(short, b"data: 01").len()
        );
        assert_eq!(events(short, b"data: 01").len(), 1);
    }

    /// `frame_first` is the frame of the event's first byte, also when its first line ends in a
    /// later frame; `frame_last` the frame of the blank line.
    #[test]
    fn frames_of_first_and_last_byte() {
        let mut p = SseParser::new(SseLimits::default());
        let mut evs = Vec::new();
        for (frame, part) in [
            (1, &b"data: x\n\nid"[..]),
            (2, b": 7\nda"),
            (3, b"ta: y\n"),
            (4, b"\n"),
        ] {
            p.push(part, 0, frame, &mut |e| evs.push(e.clone()), &mut |_| {});
        }
        let frames: Vec<(u64, u64)> = evs.iter().map(|e| (e.frame_first, e.frame_last)).collect();
        assert_eq!(frames, [(1, 1), (1, 4)]);
        assert_eq!(evs[1].offset, 9);
    }

    /// A `data` line cut by the end of a push goes straight into the data buffer (its bytes are
    /// copied once); the line buffer holds nothing of it.
    #[test]
    fn a_split_data_line_is_not_held_twice() {
        let mut p = SseParser::new(SseLimits::default());
        let mut evs = Vec::new();
        p.push(
            b"id: 1\ndata: {\"a\":",
            0,
            1,
            &mut |e| evs.push(e.clone()),
            &mut |_| {},
        );
        assert!(p.line.is_empty() && p.data == b"{\"a\":");
        p.push(b"1}", 0, 2, &mut |e| evs.push(e.clone()), &mut |_| {});
        assert!(p.line.is_empty() && p.data == b"{\"a\":1}");
        p.push(b"\n\n", 0, 3, &mut |e| evs.push(e.clone()), &mut |_| {});
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0].data, "{\"a\":1}");
        assert_eq!((evs[0].frame_first, evs[0].frame_last), (1, 3));
    }

    /// Under small limits, every split of the input gives the same events and the same
    /// anomalies as the whole input: lines and data values over the limits, streamed or not.
    #[test]
    fn every_split_same_output_at_the_limits() {
        let input: &[u8] =
            b"data: 0123456789ab\n\nid: 7\ndata: abc\ndata:  de\n\ndata: 0123456789012345678901234\n\ndata: ok\n\ndata: cut";
        let limits = SseLimits {
            max_line: 24,
            max_event: 12,
        };
        let run = |splits: &[usize]| {
            let mut p = SseParser::new(limits);
            let (mut evs, mut codes) = (Vec::new(), Vec::new());
            let mut last = 0;
            for &s in splits.iter().chain(std::iter::once(&input.len())) {
                p.push(
                    &input[last..s],
                    0,
                    0,
                    &mut |e| evs.push(e.clone()),
                    &mut |a| codes.push(a.code),
                );
                last = s;
            }
            p.finish(0, 0, &mut |e| evs.push(e.clone()), &mut |a| {
                codes.push(a.code)
            });
            (evs, codes)
        };
        let whole = run(&[]);
        let data: Vec<&str> = whole.0.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data, ["abc\n de", "ok", "cut"]);
        assert_eq!(whole.1, [Code::SseEventTooLarge, Code::SseLineTooLong]);
        for i in 0..=input.len() {
            for j in i..=input.len() {
                assert_eq!(run(&[i, j]), whole, "split at {i},{j}");
            }
        }
    }
}
