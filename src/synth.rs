//! A generator of large, realistic MCP Streamable HTTP captures for benchmarks, deterministic
//! from a seed (`mcpcap synth`).
//!
//! Many sessions run at once, each on two lanes: the standalone GET stream (long, chunked, with
//! notifications and keep-alive comments) and a keep-alive POST connection carrying `initialize`,
//! `notifications/initialized` and `tools/call`s — answered by JSON or by chunked SSE streams of
//! progress notifications and the result. Some POST streams are cut by the server and resumed
//! with `GET` + `Last-Event-ID` on a new connection; a few resumptions land on a replica without
//! the stream's log, which opens a fresh one numbered from 1 and runs the call again (a fork:
//! docs/resumption.md, "Forks"). SSE events carry 100 B–3 KB; TCP segments at most 1 KB of
//! payload; the receiver ACKs every second segment; a small share of segments is retransmitted or
//! delivered out of order. The output is a classic little-endian pcap (Ethernet, µs), written as
//! it is generated (constant memory).
//!
//! [`write_tls_capture`] writes the same traffic with every connection in TLS 1.3 ([`tls`]),
//! and the NSS key log that decrypts it.

mod tls;

use std::collections::VecDeque;
use std::io::{self, Write};

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct SynthOptions {
    /// Stop once at least this many bytes were written.
    pub bytes: u64,
    /// Seed of the pseudo-random choices.
    pub seed: u64,
    /// Sessions running at once.
    pub concurrent: usize,
}

impl Default for SynthOptions {
    fn default() -> Self {
        SynthOptions {
            bytes: 100 << 20,
            seed: 1,
            concurrent: 64,
        }
    }
}

/// What was generated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SynthSummary {
    /// Bytes written.
    pub bytes: u64,
    /// Frames written.
    pub frames: u64,
    /// Sessions started.
    pub sessions: u64,
    /// SSE events written (counted with the message that carries them once it is begun: the last
    /// messages may be cut by the end of the capture).
    pub events: u64,
    /// Resumptions written (of which `forks` are answered by a fresh log).
    pub resumptions: u64,
    /// Resumptions answered by a fresh log.
    pub forks: u64,
}

/// SplitMix64: small, fast, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

const MSS: usize = 1000;
const SERVER: [u8; 4] = [10, 0, 0, 1];
const PORT: u16 = 3000;

/// One message of a connection: who sends it, its bytes, a pause before it (µs), and what it
/// adds to the summary once it is written.
struct Msg {
    from_client: bool,
    bytes: Vec<u8>,
    pause_us: u64,
    tally: Tally,
}

/// What a message carries, for [`SynthSummary`]: SSE events, and whether it opens a resumed
/// stream (and a forked one).
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    events: u64,
    resumption: bool,
    fork: bool,
}

impl Tally {
    fn events(events: u64) -> Tally {
        Tally {
            events,
            ..Tally::default()
        }
    }
}

/// One TCP connection to play: its messages, then an orderly close (or a server FIN mid-stream).
struct ConnScript {
    msgs: VecDeque<Msg>,
}

/// A connection being played, segment by segment.
struct Playing {
    client: [u8; 4],
    /// The connection's TLS (`--tls`).
    tls: Option<Box<tls::ConnTls>>,
    cport: u16,
    seq: [u32; 2],
    /// Segments queued: (from_client, flags, payload).
    queue: VecDeque<(bool, u8, Vec<u8>)>,
    unacked: [u32; 2],
    script: ConnScript,
    opened: bool,
    closed: bool,
    wait_until: u64,
}

const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;

/// One lane of a session: connections played one after the other.
struct Lane {
    conns: VecDeque<ConnScript>,
    playing: Option<Playing>,
    client: [u8; 4],
}

struct Writer<'k, W: Write> {
    w: W,
    now: u64,
    summary: SynthSummary,
    /// Where the key log goes, when the connections are TLS.
    keylog: Option<&'k mut dyn Write>,
    /// Bytes written that the cleartext capture does not have: TLS handshakes and record
    /// overheads (the size target counts without them).
    extra: u64,
}

impl<W: Write> Writer<'_, W> {
    fn header(&mut self) -> io::Result<()> {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&262_144u32.to_le_bytes());
        h.extend_from_slice(&1u32.to_le_bytes());
        self.w.write_all(&h)?;
        self.summary.bytes += 24;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn frame(
        &mut self,
        src: ([u8; 4], u16),
        dst: ([u8; 4], u16),
        seq: u32,
        ack: u32,
        flags: u8,
        payload: &[u8],
    ) -> io::Result<()> {
        let tcp_len = 20 + payload.len();
        let ip_len = 20 + tcp_len;
        let mut f = Vec::with_capacity(14 + ip_len);
        f.extend_from_slice(&[0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00]);
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = 6;
        ip[12..16].copy_from_slice(&src.0);
        ip[16..20].copy_from_slice(&dst.0);
        let mut sum: u32 = ip
            .chunks(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]) as u32)
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        f.extend_from_slice(&ip);
        f.extend_from_slice(&src.1.to_be_bytes());
        f.extend_from_slice(&dst.1.to_be_bytes());
        f.extend_from_slice(&seq.to_be_bytes());
        f.extend_from_slice(&ack.to_be_bytes());
        f.push(0x50);
        f.push(flags);
        f.extend_from_slice(&65535u16.to_be_bytes());
        f.extend_from_slice(&[0, 0, 0, 0]);
        f.extend_from_slice(payload);
        let mut rec = Vec::with_capacity(16);
        rec.extend_from_slice(&((self.now / 1_000_000) as u32).to_le_bytes());
        rec.extend_from_slice(&((self.now % 1_000_000) as u32).to_le_bytes());
        rec.extend_from_slice(&(f.len() as u32).to_le_bytes());
        rec.extend_from_slice(&(f.len() as u32).to_le_bytes());
        self.w.write_all(&rec)?;
        self.w.write_all(&f)?;
        self.summary.bytes += (rec.len() + f.len()) as u64;
        self.summary.frames += 1;
        if self.keylog.is_some() && !payload.is_empty() {
            self.extra += tls::RECORD_OVERHEAD as u64;
        }
        Ok(())
    }
}

/// Text of `lo..=hi` pseudo-random lowercase letters.
fn filler(rng: &mut Rng, lo: u64, hi: u64) -> String {
    let n = rng.range(lo, hi) as usize;
    let seed = rng.next();
    (0..n)
        .map(|i| (b'a' + ((seed >> (i % 60)) as u8 ^ i as u8) % 26) as char)
        .collect()
}

fn http_post(sid: Option<&str>, body: &str) -> Vec<u8> {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: mcp.example:3000\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n{}Content-Length: {}\r\n\r\n{}",
        sid.map(|s| format!("Mcp-Session-Id: {s}\r\n")).unwrap_or_default(),
        body.len(),
        body
    )
    .into_bytes()
}

fn http_get(sid: &str, last_event_id: Option<&str>) -> Vec<u8> {
    format!(
        "GET /mcp HTTP/1.1\r\nHost: mcp.example:3000\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {sid}\r\n{}\r\n",
        last_event_id.map(|l| format!("Last-Event-ID: {l}\r\n")).unwrap_or_default()
    )
    .into_bytes()
}

const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n";

fn chunk(data: &str) -> Vec<u8> {
    let mut v = format!("{:x}\r\n", data.len()).into_bytes();
    v.extend_from_slice(data.as_bytes());
    v.extend_from_slice(b"\r\n");
    v
}

fn json_response(sid: Option<&str>, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{}Content-Length: {}\r\n\r\n{}",
        sid.map(|s| format!("Mcp-Session-Id: {s}\r\n"))
            .unwrap_or_default(),
        body.len(),
        body
    )
    .into_bytes()
}

/// A message of `bytes` from the client (`from_client`) or the server, sent `pause_us` after the
/// one before it, adding nothing to the summary.
fn msg(from_client: bool, bytes: Vec<u8>, pause_us: u64) -> Msg {
    Msg {
        from_client,
        bytes,
        pause_us,
        tally: Tally::default(),
    }
}

impl Msg {
    /// The message, adding `tally` to the summary once it is written.
    fn with(self, tally: Tally) -> Msg {
        Msg { tally, ..self }
    }
}

/// The scripts of one session: (standalone GET lane, POST lane). The session's id comes first
/// from `rng`, then the POST lane's choices, then the GET lane's: the order is part of what a
/// seed generates.
fn session(rng: &mut Rng, n: u64) -> (VecDeque<ConnScript>, VecDeque<ConnScript>) {
    let sid = format!("{:016x}{:016x}", rng.next(), n);
    let posts = post_lane(rng, &sid);
    let get = get_lane(rng, &sid);
    (get, posts)
}

/// The POST lane of session `sid`: initialize, initialized, then 2 to 8 calls on one keep-alive
/// connection (a cut stream moves the rest of the lane to new connections after its
/// resumption), then DELETE.
fn post_lane(rng: &mut Rng, sid: &str) -> VecDeque<ConnScript> {
    let mut posts = VecDeque::new();
    let mut conn = handshake(sid);
    for id in 1..=rng.range(2, 8) {
        call(rng, sid, id, &mut conn, &mut posts);
    }
    // The session ends with DELETE.
    conn.push_back(msg(
        true,
        format!("DELETE /mcp HTTP/1.1\r\nHost: mcp.example:3000\r\nMcp-Session-Id: {sid}\r\n\r\n")
            .into_bytes(),
        rng.range(1_000, 10_000),
    ));
    conn.push_back(msg(
        false,
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_vec(),
        500,
    ));
    posts.push_back(ConnScript { msgs: conn });
    posts
}

/// `initialize` and its result (which gives the session id `sid`), then
/// `notifications/initialized` and its 202.
fn handshake(sid: &str) -> VecDeque<Msg> {
    let mut first = VecDeque::new();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"synth","version":"1"}}}"#;
    first.push_back(msg(true, http_post(None, init), 0));
    let init_result = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"synth","version":"1"}}}"#;
    first.push_back(msg(false, json_response(Some(sid), init_result), 2_000));
    first.push_back(msg(
        true,
        http_post(
            Some(sid),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ),
        500,
    ));
    first.push_back(msg(
        false,
        b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_vec(),
        500,
    ));
    first
}

/// `tools/call` number `id` of session `sid` on connection `conn`, answered by JSON (30%) or by
/// an SSE stream ([`sse_answer`]), which may move the lane to new connections (`posts` gets
/// the connections done).
fn call(
    rng: &mut Rng,
    sid: &str,
    id: u64,
    conn: &mut VecDeque<Msg>,
    posts: &mut VecDeque<ConnScript>,
) {
    let arg = filler(rng, 10, 400);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"work","arguments":{{"q":"{arg}"}},"_meta":{{"progressToken":{id}}}}}}}"#
    );
    conn.push_back(msg(
        true,
        http_post(Some(sid), &body),
        rng.range(1_000, 50_000),
    ));
    let result = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
        filler(rng, 50, 1500)
    );
    if rng.chance(0.3) {
        conn.push_back(msg(
            false,
            json_response(None, &result),
            rng.range(1_000, 20_000),
        ));
        return;
    }
    sse_answer(rng, sid, id, &result, conn, posts);
}

/// The events of one call's SSE stream: `<sid>-<id>_<k>`, progress `k` of `steps`.
struct Stream {
    /// Event id prefix, `<sid>-<id>`.
    prefix: String,
    /// The call's request id, also its progress token.
    id: u64,
    /// Progress notifications before the result.
    steps: u64,
}

impl Stream {
    /// Event `k` of the stream carrying `data`.
    fn event(&self, k: u64, data: &str) -> String {
        format!("id: {}_{k}\nevent: message\ndata: {data}\n\n", self.prefix)
    }

    /// Progress notification `k` with message `text`.
    fn progress(&self, k: u64, text: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{},"progress":{k},"total":{},"message":"{text}"}}}}"#,
            self.id, self.steps
        )
    }
}

/// The SSE answer to call `id` of session `sid` on `conn`: a priming event, progress, the
/// `result`. The server cuts 8% of the streams; `conn` then goes to `posts`, followed by the
/// connection the client resumes on ([`resume`]), and the lane's later messages start a new
/// connection.
fn sse_answer(
    rng: &mut Rng,
    sid: &str,
    id: u64,
    result: &str,
    conn: &mut VecDeque<Msg>,
    posts: &mut VecDeque<ConnScript>,
) {
    let steps = rng.range(3, 40);
    let stream = Stream {
        prefix: format!("{sid}-{id}"),
        id,
        steps,
    };
    let mut events: Vec<String> = vec![format!("id: {}_0\nretry: 1000\ndata: \n\n", stream.prefix)];
    for k in 1..=steps {
        let text = filler(rng, 40, 2900);
        events.push(stream.event(k, &stream.progress(k, &text)));
    }
    events.push(stream.event(steps + 1, result));
    let cut = rng.chance(0.08);
    let cut_at = if cut {
        rng.range(2, steps) as usize
    } else {
        events.len()
    };
    let mut head = SSE_HEAD.as_bytes().to_vec();
    head.extend(chunk(&events[0]));
    conn.push_back(msg(false, head, rng.range(500, 5_000)).with(Tally::events(1)));
    for e in &events[1..cut_at] {
        conn.push_back(msg(false, chunk(e), rng.range(2_000, 30_000)).with(Tally::events(1)));
    }
    if !cut {
        conn.push_back(msg(false, b"0\r\n\r\n".to_vec(), 100));
        return;
    }
    // The server cuts the stream; the client resumes on a new connection.
    posts.push_back(ConnScript {
        msgs: std::mem::take(conn),
    });
    posts.push_back(resume(rng, sid, &stream, &events, cut_at, result));
}

/// The connection resuming `stream` of session `sid` after the server cut it before
/// `events[cut_at]`: `GET` with `Last-Event-ID`, answered by the rest of the events — or, one
/// time in ten, by a replica without the stream's log (a fork), which opens a fresh one under
/// the same stream, numbered from 1, and runs the call (ending in `result`) again from its
/// start.
fn resume(
    rng: &mut Rng,
    sid: &str,
    stream: &Stream,
    events: &[String],
    cut_at: usize,
    result: &str,
) -> ConnScript {
    let last = format!("{}_{}", stream.prefix, cut_at - 1);
    let mut resume = VecDeque::new();
    resume.push_back(msg(
        true,
        http_get(sid, Some(&last)),
        rng.range(200_000, 1_200_000),
    ));
    let mut body = SSE_HEAD.as_bytes().to_vec();
    let mut tally = Tally {
        resumption: true,
        ..Tally::default()
    };
    if rng.chance(0.1) {
        tally.fork = true;
        for k in 1..=stream.steps {
            let text = filler(rng, 40, 2900);
            body.extend(chunk(&stream.event(k, &stream.progress(k, &text))));
        }
        body.extend(chunk(&stream.event(stream.steps + 1, result)));
        tally.events = stream.steps + 1;
    } else {
        for e in &events[cut_at..] {
            body.extend(chunk(e));
        }
        tally.events = (events.len() - cut_at) as u64;
    }
    body.extend_from_slice(b"0\r\n\r\n");
    resume.push_back(msg(false, body, rng.range(500, 5_000)).with(tally));
    ConnScript { msgs: resume }
}

/// The GET lane of session `sid`: the standalone stream with 5 to 60 notifications and
/// keep-alive comments.
fn get_lane(rng: &mut Rng, sid: &str) -> VecDeque<ConnScript> {
    let mut get = VecDeque::new();
    let mut g = VecDeque::new();
    g.push_back(msg(true, http_get(sid, None), 5_000));
    let mut body = SSE_HEAD.as_bytes().to_vec();
    body.extend(chunk(": ok\n\n"));
    g.push_back(msg(false, body, 1_000));
    for k in 1..=rng.range(5, 60) {
        let text = filler(rng, 60, 2900);
        let e = format!(
            "id: {sid}-get_{k}\nevent: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"info\",\"data\":\"{text}\"}}}}\n\n"
        );
        g.push_back(msg(false, chunk(&e), rng.range(5_000, 80_000)).with(Tally::events(1)));
        if rng.chance(0.1) {
            g.push_back(msg(false, chunk(": keepalive\n\n"), 15_000));
        }
    }
    g.push_back(msg(false, b"0\r\n\r\n".to_vec(), 1_000));
    get.push_back(ConnScript { msgs: g });
    get
}

/// Generate a capture into `w` (see the module docs).
///
/// Errors: those of writing to `w`.
pub fn write_capture<W: Write>(w: W, opts: &SynthOptions) -> io::Result<SynthSummary> {
    generate(w, None, opts)
}

/// Generate the capture [`write_capture`] makes from `opts` with every TCP connection in TLS
/// 1.3 (TLS_AES_128_GCM_SHA256, one record per segment: [`tls`]), and its NSS key log into
/// `keylog` (four lines per connection). The same frames carry the same plaintext at the same
/// times; a connection's handshake adds three frames after the TCP handshake, at its time.
/// `opts.bytes` counts the capture without the TLS bytes (handshakes, 22 bytes a record), so
/// the capture ends where the cleartext one does and is that much larger.
///
/// Errors: those of writing to `w` or `keylog`.
pub fn write_tls_capture<W: Write>(
    w: W,
    keylog: &mut dyn Write,
    opts: &SynthOptions,
) -> io::Result<SynthSummary> {
    generate(w, Some(keylog), opts)
}

fn generate<W: Write>(
    w: W,
    keylog: Option<&mut dyn Write>,
    opts: &SynthOptions,
) -> io::Result<SynthSummary> {
    let mut rng = Rng(opts.seed);
    let mut out = Writer {
        w,
        now: 1_767_225_600_000_000,
        summary: SynthSummary::default(),
        keylog,
        extra: 0,
    };
    out.header()?;
    let mut lanes: Vec<Lane> = Vec::new();
    let mut next_port: u32 = 0;
    let mut conns: u64 = 0;
    while out.summary.bytes - out.extra < opts.bytes {
        // Keep `concurrent` sessions running (two lanes each).
        while lanes.len() < opts.concurrent.max(1) * 2 {
            let n = out.summary.sessions;
            out.summary.sessions += 1;
            let client = [10, 1 + (n >> 16) as u8, (n >> 8) as u8, n as u8];
            let (get, posts) = session(&mut rng, n);
            lanes.push(Lane {
                conns: posts,
                playing: None,
                client,
            });
            lanes.push(Lane {
                conns: get,
                playing: None,
                client,
            });
        }
        // The lane whose next segment is due first (ties: the lowest index).
        let i = (0..lanes.len())
            .min_by_key(|&i| lanes[i].playing.as_ref().map_or(0, |p| p.wait_until))
            .unwrap_or(0);
        let lane = &mut lanes[i];
        if lane.playing.is_none() {
            match lane.conns.pop_front() {
                Some(script) => {
                    next_port = next_port.wrapping_add(1);
                    conns += 1;
                    let tls = out
                        .keylog
                        .is_some()
                        .then(|| Box::new(tls::connection(opts.seed, conns)));
                    lane.playing = Some(Playing {
                        client: lane.client,
                        tls,
                        cport: 10_000 + (next_port % 50_000) as u16,
                        seq: [rng.next() as u32, rng.next() as u32],
                        queue: VecDeque::new(),
                        unacked: [0, 0],
                        script,
                        opened: false,
                        closed: false,
                        wait_until: out.now,
                    });
                }
                None => {
                    lanes.swap_remove(i);
                    continue;
                }
            }
        }
        let Some(p) = lanes[i].playing.as_mut() else {
            continue;
        };
        out.now = out.now.max(p.wait_until) + rng.range(5, 40);
        if step(p, &mut out, &mut rng)? {
            lanes[i].playing = None;
        }
    }
    out.w.flush()?;
    if let Some(k) = out.keylog.as_mut() {
        k.flush()?;
    }
    Ok(out.summary)
}

/// Play one segment of connection `p`; returns true when it is over.
fn step<W: Write>(p: &mut Playing, out: &mut Writer<W>, rng: &mut Rng) -> io::Result<bool> {
    let c = (p.client, p.cport);
    let s = (SERVER, PORT);
    if !p.opened {
        p.opened = true;
        out.frame(c, s, p.seq[0], 0, SYN, &[])?;
        out.frame(s, c, p.seq[1], p.seq[0].wrapping_add(1), SYN | ACK, &[])?;
        p.seq[0] = p.seq[0].wrapping_add(1);
        p.seq[1] = p.seq[1].wrapping_add(1);
        out.frame(c, s, p.seq[0], p.seq[1], ACK, &[])?;
        if p.tls.is_some() {
            tls_handshake(p, out)?;
        }
        return Ok(false);
    }
    if p.queue.is_empty() {
        match p.script.msgs.pop_front() {
            Some(m) => {
                p.wait_until = out.now + m.pause_us;
                out.summary.events += m.tally.events;
                out.summary.resumptions += u64::from(m.tally.resumption);
                out.summary.forks += u64::from(m.tally.fork);
                for part in m.bytes.chunks(MSS) {
                    let data = match p.tls.as_mut() {
                        Some(t) => {
                            let mut r = Vec::with_capacity(part.len() + tls::RECORD_OVERHEAD);
                            t.app[usize::from(!m.from_client)].seal(23, part, &mut r);
                            r
                        }
                        None => part.to_vec(),
                    };
                    p.queue.push_back((m.from_client, PSH | ACK, data));
                }
                return Ok(false);
            }
            None if !p.closed => {
                p.closed = true;
                let (a, b) = (p.seq[0], p.seq[1]);
                out.frame(c, s, a, b, FIN | ACK, &[])?;
                out.frame(s, c, b, a.wrapping_add(1), FIN | ACK, &[])?;
                out.frame(c, s, a.wrapping_add(1), b.wrapping_add(1), ACK, &[])?;
                return Ok(true);
            }
            None => return Ok(true),
        }
    }
    let Some((from_client, flags, data)) = p.queue.pop_front() else {
        return Ok(false);
    };
    let d = usize::from(!from_client);
    let (src, dst) = if from_client { (c, s) } else { (s, c) };
    // Now and then a segment overtakes the one before it (both are sent).
    if rng.chance(0.004) {
        if let Some((fc2, fl2, d2)) = p.queue.pop_front() {
            if fc2 == from_client {
                let seq2 = p.seq[d].wrapping_add(data.len() as u32);
                out.frame(src, dst, seq2, p.seq[1 - d], fl2, &d2)?;
                out.frame(src, dst, p.seq[d], p.seq[1 - d], flags, &data)?;
                p.seq[d] = seq2.wrapping_add(d2.len() as u32);
                p.unacked[d] += 2;
                ack(p, d, out)?;
                return Ok(false);
            }
            p.queue.push_front((fc2, fl2, d2));
        }
    }
    out.frame(src, dst, p.seq[d], p.seq[1 - d], flags, &data)?;
    if rng.chance(0.004) {
        // Retransmitted.
        out.frame(src, dst, p.seq[d], p.seq[1 - d], flags, &data)?;
    }
    p.seq[d] = p.seq[d].wrapping_add(data.len() as u32);
    p.unacked[d] += 1;
    if p.unacked[d] >= 2 || p.queue.is_empty() {
        ack(p, d, out)?;
    }
    Ok(false)
}

/// The TLS handshake of `p` right after its TCP handshake, at the same time and without
/// pseudo-random choices (the capture's other choices stay those of the cleartext one): the
/// ClientHello, the server's flight, the client's Finished, each in its own segment; and the
/// connection's key log lines. Its bytes count as [`Writer::extra`].
fn tls_handshake<W: Write>(p: &mut Playing, out: &mut Writer<W>) -> io::Result<()> {
    let Some(t) = p.tls.as_ref() else {
        return Ok(());
    };
    if let Some(k) = out.keylog.as_mut() {
        k.write_all(t.keylog.as_bytes())?;
    }
    let (c, s) = ((p.client, p.cport), (SERVER, PORT));
    let before = (out.summary.bytes, out.extra);
    let flights = [
        (0, &t.client_hello),
        (1, &t.server_flight),
        (0, &t.client_finished),
    ];
    for (d, bytes) in flights {
        for part in bytes.chunks(MSS) {
            let (src, dst) = if d == 0 { (c, s) } else { (s, c) };
            out.frame(src, dst, p.seq[d], p.seq[1 - d], PSH | ACK, part)?;
            p.seq[d] = p.seq[d].wrapping_add(part.len() as u32);
        }
    }
    out.extra = before.1 + (out.summary.bytes - before.0);
    Ok(())
}

/// The receiver of direction `d` acknowledges everything so far.
fn ack<W: Write>(p: &mut Playing, d: usize, out: &mut Writer<W>) -> io::Result<()> {
    let c = (p.client, p.cport);
    let s = (SERVER, PORT);
    let (src, dst) = if d == 0 { (s, c) } else { (c, s) };
    p.unacked[d] = 0;
    out.frame(src, dst, p.seq[1 - d], p.seq[d], ACK, &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_sized() {
        let opts = SynthOptions {
            bytes: 300_000,
            seed: 7,
            concurrent: 4,
        };
        let mut a = Vec::new();
        let sa = write_capture(&mut a, &opts).unwrap();
        let mut b = Vec::new();
        write_capture(&mut b, &opts).unwrap();
        assert_eq!(a, b);
        assert!(a.len() as u64 >= opts.bytes && sa.bytes == a.len() as u64);
        assert!(sa.frames > 100 && sa.events > 10 && sa.sessions >= 4);
    }
}
