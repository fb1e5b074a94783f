//! Test support: builds small classic-pcap captures of MCP Streamable HTTP
//! traffic packet by packet.
//!
//! * [`Capture`] collects Ethernet frames (one per TCP segment) from any
//!   number of [`Conn`]s, interleaved in call order, and serialises them as a
//!   classic pcap file (magic `0xa1b2c3d4`, link type 1, µs timestamps,
//!   +1 ms per frame).
//! * [`Conn`] is one TCP connection 127.0.0.1:ephemeral → 127.0.0.1:3000:
//!   three-way handshake, data split into segments with correct seq/ack
//!   numbers, and FIN/ACK or RST teardown.
//! * `post`, `get`, `sse_response`, `json_response`, … format HTTP/1.1 messages;
//!   `initialize`, `tools_call`, `progress`, `result`, … JSON-RPC messages.
//! * `analyze`, `findings`, `table_csv`, `fixture_findings`, … run the binary on a capture;
//!   `csv_rows`, `csv_column`, `column_has` read its CSV tables by column name.
//! * `assert_kinds`, `one`, `assert_keys`, `pretty` check findings.
//! * Scenario builders shared by several test modules: a session `s1` ([`SID`], [`handshake`]),
//!   its `tools/call` 2 streamed and cut ([`tools_call_stream`], [`cut_and_resume`],
//!   [`call_under_way`]), resumptions ([`resume`], [`resume_with`], [`resume_from_3`]), polls
//!   ([`poll_capture`]), dead sessions ([`dead_session`]) and proxies ([`through_proxy`]).
//!
//! Every binary uses only part of this, hence `allow(dead_code)`.

#![allow(dead_code)]

use etherparse::PacketBuilder;
use serde_json::{json, Value};

/// Server port of every connection.
pub const SERVER_PORT: u16 = 3000;
const CLIENT_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const SERVER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const LOCALHOST: [u8; 4] = [127, 0, 0, 1];
const WINDOW: u16 = 65535;
/// Capture start: 2026-01-01T00:00:00Z in µs.
const START_US: i64 = 1_767_225_600_000_000;

// ---------------------------------------------------------------------------
// pcap

/// Serialise frames as a classic pcap file: `(timestamp in µs, Ethernet frame)`.
pub fn pcap_file(frames: &[(i64, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + frames.iter().map(|(_, f)| 16 + f.len()).sum::<usize>());
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes()); // magic, µs resolution
    out.extend_from_slice(&2u16.to_le_bytes()); // version major
    out.extend_from_slice(&4u16.to_le_bytes()); // version minor
    out.extend_from_slice(&0i32.to_le_bytes()); // thiszone
    out.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
    out.extend_from_slice(&65535u32.to_le_bytes()); // snaplen
    out.extend_from_slice(&1u32.to_le_bytes()); // linktype: Ethernet
    for (ts, data) in frames {
        out.extend_from_slice(&((ts / 1_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&((ts % 1_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes()); // incl_len
        out.extend_from_slice(&(data.len() as u32).to_le_bytes()); // orig_len
        out.extend_from_slice(data);
    }
    out
}

// ---------------------------------------------------------------------------
// Capture and connections

/// One captured frame and what it carries.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The Ethernet frame.
    pub data: Vec<u8>,
    /// Client port of the connection it belongs to.
    pub client_port: u16,
    /// Sent by the client.
    pub from_client: bool,
    /// TCP payload length.
    pub payload_len: usize,
}

/// Frames of several connections, in capture order.
#[derive(Debug)]
pub struct Capture {
    /// Frames in file order; timestamps are given by position.
    pub frames: Vec<Frame>,
    /// Largest TCP payload per segment.
    pub segment_size: usize,
    next_port: u16,
    /// Pauses: (frame position, µs added before that frame and every later one).
    waits: Vec<(usize, i64)>,
}

impl Default for Capture {
    fn default() -> Self {
        Self::new()
    }
}

impl Capture {
    /// An empty capture with ~1000-byte segments.
    pub fn new() -> Self {
        Capture {
            frames: Vec::new(),
            segment_size: 1000,
            next_port: 50000,
            waits: Vec::new(),
        }
    }

    /// An empty capture whose data segments carry at most `n` bytes.
    pub fn with_segment_size(n: usize) -> Self {
        assert!(n > 0);
        Capture {
            segment_size: n,
            ..Self::new()
        }
    }

    /// Open a new connection (SYN, SYN-ACK, ACK) from the next ephemeral port.
    pub fn connect(&mut self) -> Conn {
        self.connect_to(SERVER_PORT)
    }

    /// Open a new connection from the next ephemeral port to server port `server_port`
    /// (e.g. a proxy's backend leg).
    pub fn connect_to(&mut self, server_port: u16) -> Conn {
        let port = self.next_port;
        self.next_port += 1;
        Conn::open(self, port, server_port, LOCALHOST)
    }

    /// Open a new connection to the server port from another client address.
    pub fn connect_from(&mut self, client_ip: [u8; 4]) -> Conn {
        let port = self.next_port;
        self.next_port += 1;
        Conn::open(self, port, SERVER_PORT, client_ip)
    }

    /// Swap two frames in file order (their timestamps stay with the positions).
    pub fn swap(&mut self, i: usize, j: usize) {
        self.frames.swap(i, j);
    }

    /// Insert a copy of frame `i` at position `at` (a retransmission).
    pub fn retransmit(&mut self, i: usize, at: usize) {
        let f = self.frames[i].clone();
        self.frames.insert(at, f);
    }

    /// Drop frame `i`, as a capture that missed it (a gap in its direction).
    pub fn lose(&mut self, i: usize) {
        self.frames.remove(i);
    }

    /// Positions of the data-carrying frames sent by the server on connection `client_port`.
    pub fn server_data_frames(&self, client_port: u16) -> Vec<usize> {
        self.frames
            .iter()
            .enumerate()
            .filter(|(_, f)| f.client_port == client_port && !f.from_client && f.payload_len > 0)
            .map(|(i, _)| i)
            .collect()
    }

    /// Let `us` microseconds pass before the next frame.
    pub fn wait(&mut self, us: i64) {
        self.waits.push((self.frames.len(), us));
    }

    /// The capture as a classic pcap file, one frame per millisecond plus the pauses.
    pub fn pcap(&self) -> Vec<u8> {
        let frames: Vec<(i64, Vec<u8>)> = self
            .frames
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let paused: i64 = self
                    .waits
                    .iter()
                    .filter(|(at, _)| *at <= i)
                    .map(|(_, us)| us)
                    .sum();
                (START_US + 1000 * i as i64 + paused, f.data.clone())
            })
            .collect();
        pcap_file(&frames)
    }

    fn push(&mut self, f: Frame) {
        self.frames.push(f);
    }
}

/// TCP flags of one segment.
#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    syn: bool,
    ack: bool,
    fin: bool,
    psh: bool,
    rst: bool,
}

/// One TCP connection client:port → server:3000.
#[derive(Debug)]
pub struct Conn {
    /// Client (ephemeral) port.
    pub port: u16,
    /// Server port.
    pub server_port: u16,
    /// Next sequence number of the client.
    client_seq: u32,
    /// Next sequence number of the server.
    server_seq: u32,
    /// The client's IPv4 address (the server is 127.0.0.1).
    client_ip: [u8; 4],
}

impl Conn {
    fn open(cap: &mut Capture, port: u16, server_port: u16, client_ip: [u8; 4]) -> Conn {
        let client_isn = 0x1000_0000u32.wrapping_add(u32::from(port) << 8);
        let server_isn = 0x8000_0000u32.wrapping_add(u32::from(port) << 12);
        let mut c = Conn {
            port,
            server_port,
            client_seq: client_isn,
            server_seq: server_isn,
            client_ip,
        };
        c.emit(
            cap,
            true,
            client_isn,
            0,
            Flags {
                syn: true,
                ..Default::default()
            },
            &[],
        );
        c.emit(
            cap,
            false,
            server_isn,
            client_isn.wrapping_add(1),
            Flags {
                syn: true,
                ack: true,
                ..Default::default()
            },
            &[],
        );
        c.client_seq = client_isn.wrapping_add(1);
        c.server_seq = server_isn.wrapping_add(1);
        c.emit(
            cap,
            true,
            c.client_seq,
            c.server_seq,
            Flags {
                ack: true,
                ..Default::default()
            },
            &[],
        );
        c
    }

    /// Client → server bytes, split into segments.
    pub fn client(&mut self, cap: &mut Capture, data: &[u8]) {
        self.send(cap, true, data);
    }

    /// Server → client bytes, split into segments.
    pub fn server(&mut self, cap: &mut Capture, data: &[u8]) {
        self.send(cap, false, data);
    }

    /// Orderly close started by the client: FIN/ACK, FIN/ACK, ACK.
    pub fn close(self, cap: &mut Capture) {
        self.fin_exchange(cap, true);
    }

    /// Orderly close started by the server (e.g. it cut an SSE stream): FIN/ACK, FIN/ACK, ACK.
    pub fn server_close(self, cap: &mut Capture) {
        self.fin_exchange(cap, false);
    }

    /// A bare ACK from the client of every byte the server sent so far.
    pub fn client_ack(&mut self, cap: &mut Capture) {
        let (c, s) = (self.client_seq, self.server_seq);
        let ack = Flags {
            ack: true,
            ..Default::default()
        };
        self.emit(cap, true, c, s, ack, &[]);
    }

    /// Both ends close at once: the server's FIN crosses the client's, which acknowledges the
    /// server's bytes only up to `unacked` bytes before its FIN (what was still in flight).
    pub fn close_crossed(mut self, cap: &mut Capture, unacked: u32) {
        let fin_ack = Flags {
            fin: true,
            ack: true,
            ..Default::default()
        };
        let (s, c) = (self.server_seq, self.client_seq);
        self.emit(cap, false, s, c, fin_ack, &[]);
        self.emit(cap, true, c, s.wrapping_sub(unacked), fin_ack, &[]);
        self.client_seq = c.wrapping_add(1);
        self.server_seq = s.wrapping_add(1);
    }

    /// The server resets the connection.
    pub fn server_reset(self, cap: &mut Capture) {
        let (s, c) = (self.server_seq, self.client_seq);
        self.emit(
            cap,
            false,
            s,
            c,
            Flags {
                rst: true,
                ack: true,
                ..Default::default()
            },
            &[],
        );
    }

    fn fin_exchange(mut self, cap: &mut Capture, client_first: bool) {
        let fin_ack = Flags {
            fin: true,
            ack: true,
            ..Default::default()
        };
        let ack = Flags {
            ack: true,
            ..Default::default()
        };
        let first = client_first;
        let (a_seq, b_seq) = if first {
            (self.client_seq, self.server_seq)
        } else {
            (self.server_seq, self.client_seq)
        };
        self.emit(cap, first, a_seq, b_seq, fin_ack, &[]);
        self.emit(cap, !first, b_seq, a_seq.wrapping_add(1), fin_ack, &[]);
        self.emit(
            cap,
            first,
            a_seq.wrapping_add(1),
            b_seq.wrapping_add(1),
            ack,
            &[],
        );
        self.client_seq = self.client_seq.wrapping_add(1);
        self.server_seq = self.server_seq.wrapping_add(1);
    }

    fn send(&mut self, cap: &mut Capture, from_client: bool, data: &[u8]) {
        let n = cap.segment_size;
        for seg in data.chunks(n) {
            let (seq, ack) = if from_client {
                (self.client_seq, self.server_seq)
            } else {
                (self.server_seq, self.client_seq)
            };
            self.emit(
                cap,
                from_client,
                seq,
                ack,
                Flags {
                    ack: true,
                    psh: true,
                    ..Default::default()
                },
                seg,
            );
            let next = seq.wrapping_add(seg.len() as u32);
            if from_client {
                self.client_seq = next;
            } else {
                self.server_seq = next;
            }
        }
    }

    fn emit(
        &self,
        cap: &mut Capture,
        from_client: bool,
        seq: u32,
        ack: u32,
        f: Flags,
        payload: &[u8],
    ) {
        let (smac, dmac, sport, dport) = if from_client {
            (CLIENT_MAC, SERVER_MAC, self.port, self.server_port)
        } else {
            (SERVER_MAC, CLIENT_MAC, self.server_port, self.port)
        };
        let (sip, dip) = if from_client {
            (self.client_ip, LOCALHOST)
        } else {
            (LOCALHOST, self.client_ip)
        };
        let mut b = PacketBuilder::ethernet2(smac, dmac)
            .ipv4(sip, dip, 64)
            .tcp(sport, dport, seq, WINDOW);
        if f.syn {
            b = b.syn();
        }
        if f.ack {
            b = b.ack(ack);
        }
        if f.fin {
            b = b.fin();
        }
        if f.psh {
            b = b.psh();
        }
        if f.rst {
            b = b.rst();
        }
        let mut data = Vec::with_capacity(b.size(payload.len()));
        b.write(&mut data, payload).expect("build TCP frame");
        cap.push(Frame {
            data,
            client_port: self.port,
            from_client,
            payload_len: payload.len(),
        });
    }
}

// ---------------------------------------------------------------------------
// HTTP

fn session_header(session: Option<&str>) -> String {
    session
        .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
        .unwrap_or_default()
}

/// `POST /mcp` with a JSON body.
pub fn post(session: Option<&str>, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{}Content-Length: {}\r\n\r\n{}",
        session_header(session),
        body.len(),
        body
    )
    .into_bytes()
}

/// `GET /mcp` opening (or resuming, with `Last-Event-ID`) an event stream.
pub fn get(session: Option<&str>, last_event_id: Option<&str>) -> Vec<u8> {
    format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nAccept: text/event-stream\r\n{}{}\r\n",
        session_header(session),
        last_event_id
            .map(|l| format!("Last-Event-ID: {l}\r\n"))
            .unwrap_or_default()
    )
    .into_bytes()
}

/// One SSE event: optional `id:`, `event: message`, `data: <json>`.
#[derive(Debug, Clone)]
pub struct Ev {
    /// The `id:` line, if any.
    pub id: Option<String>,
    /// The JSON-RPC message in `data:`.
    pub data: Value,
}

impl Ev {
    /// An event with an id line.
    pub fn id(id: impl ToString, data: Value) -> Ev {
        Ev {
            id: Some(id.to_string()),
            data,
        }
    }
    /// An event without an id line.
    pub fn no_id(data: Value) -> Ev {
        Ev { id: None, data }
    }
    /// The event as event-stream text, ending with its blank line.
    pub fn text(&self) -> String {
        let id = self
            .id
            .as_ref()
            .map(|i| format!("id: {i}\n"))
            .unwrap_or_default();
        format!("{id}event: message\ndata: {}\n\n", self.data)
    }
}

/// One HTTP/1.1 chunk.
pub fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// The last chunk of a chunked body.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Head of a `200 text/event-stream` chunked response.
pub fn sse_head(session: Option<&str>) -> Vec<u8> {
    format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n{}Transfer-Encoding: chunked\r\n\r\n", session_header(session)).into_bytes()
}

/// An SSE response: head, one chunk per event, and the last chunk when `complete`
/// (without it the stream is left open, to be cut by the caller).
pub fn sse_response(session: Option<&str>, events: &[Ev], complete: bool) -> Vec<u8> {
    let mut out = sse_head(session);
    for ev in events {
        out.extend(chunk(ev.text().as_bytes()));
    }
    if complete {
        out.extend_from_slice(LAST_CHUNK);
    }
    out
}

/// A `200 application/json` response with Content-Length.
pub fn json_response(session: Option<&str>, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{}Content-Length: {}\r\n\r\n{}",
        session_header(session),
        body.len(),
        body
    )
    .into_bytes()
}

/// A bodiless `202 Accepted` (answer to a notification or response).
pub fn accepted() -> Vec<u8> {
    b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_vec()
}

/// A `409 Conflict` with a small JSON-RPC error body.
pub fn conflict() -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Conflict: stream cannot be resumed"}}).to_string();
    format!(
        "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
        body.len(),
        body
    )
    .into_bytes()
}

// ---------------------------------------------------------------------------
// JSON-RPC

/// Protocol version used throughout.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// `initialize` request.
pub fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "test-client", "version": "1.0"}}})
}

/// `initialize` result.
pub fn initialize_result(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {"tools": {}}, "serverInfo": {"name": "test-server", "version": "1.0"}}})
}

/// `notifications/initialized`.
pub fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

/// `tools/call` request with `_meta.progressToken`.
pub fn tools_call(id: i64, progress_token: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "long_task", "arguments": {"steps": 5}, "_meta": {"progressToken": progress_token}}})
}

/// `notifications/progress`.
pub fn progress(progress_token: &Value, progress: u64, total: u64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
        "progressToken": progress_token, "progress": progress, "total": total}})
}

/// A successful `tools/call` result for request `id`.
pub fn result(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "done"}], "isError": false}})
}

/// A fresh path in the temp directory, unique per process and call (tests run in parallel).
pub fn temp_path(tag: &str, ext: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "mcpcap-{tag}-{}-{}.{ext}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Run `mcpcap <args…> <capture>` and return its NDJSON rows; the run must succeed with
/// nothing on stderr.
pub fn ndjson(cap: &Capture, args: &[&str]) -> Vec<Value> {
    let (code, rows) = run_status(cap, args);
    assert_eq!(code, 0, "mcpcap {args:?} must succeed");
    rows
}

/// Run `mcpcap <args…> <capture>`: its exit status and its NDJSON rows; nothing may come on
/// stderr.
pub fn run_status(cap: &Capture, args: &[&str]) -> (i32, Vec<Value>) {
    let path = temp_path("run", "pcap");
    std::fs::write(&path, cap.pcap()).expect("write temp pcap");
    let got = run_path(&path, args);
    let _ = std::fs::remove_file(&path);
    got
}

/// Run `mcpcap <args…> <path>`: its exit status and its NDJSON rows; nothing may come on
/// stderr but the note that TLS connections were not decrypted ([`is_tls_note`]), which a
/// TLS capture without its key log gives by design.
pub fn run_path(path: &std::path::Path, args: &[&str]) -> (i32, Vec<Value>) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(args)
        .arg(path)
        .output()
        .expect("run mcpcap");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let unexpected: Vec<&str> = stderr.lines().filter(|l| !is_tls_note(l)).collect();
    assert!(unexpected.is_empty(), "unexpected stderr: {stderr}");
    let rows = String::from_utf8(out.stdout)
        .expect("utf-8 stdout")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (out.status.code().expect("exit code"), rows)
}

/// Whether a stderr line is the note that TLS connections carried data that was not decrypted,
/// or that HTTP/2 connections were not read.
pub fn is_tls_note(line: &str) -> bool {
    line.starts_with("mcpcap: ")
        && (line.contains("TLS connection(s)") || line.contains("HTTP/2 connection(s)"))
        && line.contains("not seen")
}

/// Run `mcpcap analyze --format ndjson --fail-on never <extra…>` on the capture and return the
/// findings; the run must succeed with nothing on stderr.
pub fn analyze(cap: &Capture, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["analyze", "--format", "ndjson", "--fail-on", "never"];
    args.extend_from_slice(extra);
    ndjson(cap, &args)
}

/// The findings of a capture: [`analyze`] without extra arguments.
pub fn findings(cap: &Capture) -> Vec<Value> {
    analyze(cap, &[])
}

/// Exit status of `analyze --format ndjson --fail-on <level>` on the capture.
pub fn exit_status(cap: &Capture, fail_on: &str) -> i32 {
    run_status(
        cap,
        &["analyze", "--format", "ndjson", "--fail-on", fail_on],
    )
    .0
}

/// The path of a fixture capture, `fixtures/<rel>`.
pub fn fixture_path(rel: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// The findings of the fixture capture `fixtures/<rel>` (`analyze --format ndjson --fail-on
/// never`, which must exit 0 with nothing on stderr).
pub fn fixture_findings(rel: &str) -> Vec<Value> {
    let (code, rows) = run_path(
        &fixture_path(rel),
        &["analyze", "--format", "ndjson", "--fail-on", "never"],
    );
    assert_eq!(code, 0, "fixtures/{rel}");
    rows
}

/// Run `mcpcap analyze --quiet --fail-on never --format csv --out OUT PCAP`; the run must
/// succeed.
pub fn write_csv_tables(pcap: &std::path::Path, out: &std::path::Path) {
    write_csv_tables_with(pcap, out, &[]);
}

/// [`write_csv_tables`] with `extra` arguments (`--tls-keylog FILE`, …) before `--out`.
pub fn write_csv_tables_with(
    pcap: &std::path::Path,
    out: &std::path::Path,
    extra: &[&std::ffi::OsStr],
) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args([
            "analyze",
            "--quiet",
            "--fail-on",
            "never",
            "--format",
            "csv",
        ])
        .args(extra)
        .arg("--out")
        .arg(out)
        .arg(pcap)
        .output()
        .expect("run mcpcap");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// One table (`resumptions`, `anomalies`, …) of a capture's `analyze --format csv` output, as
/// CSV text.
pub fn table_csv(cap: &Capture, table: &str) -> String {
    let pcap = temp_path("table", "pcap");
    let out = temp_path("table", "d");
    std::fs::write(&pcap, cap.pcap()).unwrap();
    write_csv_tables(&pcap, &out);
    let text = std::fs::read_to_string(out.join(format!("{table}.csv"))).unwrap();
    let _ = std::fs::remove_file(&pcap);
    let _ = std::fs::remove_dir_all(&out);
    text
}

/// The `exchanges` table of a capture, as NDJSON rows.
pub fn exchanges_table(cap: &Capture) -> Vec<Value> {
    ndjson(cap, &["exchanges", "--format", "ndjson"])
}

/// The `events` table (SSE events) of a capture, as NDJSON rows.
pub fn events_table(cap: &Capture) -> Vec<Value> {
    ndjson(cap, &["events", "--format", "ndjson"])
}

/// The `flows` table of a capture, as NDJSON rows.
pub fn flows_table(cap: &Capture) -> Vec<Value> {
    ndjson(cap, &["flows", "--format", "ndjson"])
}

/// The `verdict` column of the `resumptions` table, in order.
pub fn resumption_verdicts(cap: &Capture) -> Vec<String> {
    csv_column(&table_csv(cap, "resumptions"), "verdict")
}

/// The findings' (kind, severity) pairs, sorted.
pub fn kinds_and_severities(fs: &[Value]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = fs
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap_or_default().to_string(),
                f["severity"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The `kind` of each finding, in output order.
pub fn kinds_of(fs: &[Value]) -> Vec<String> {
    fs.iter()
        .map(|f| f["kind"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A CSV table as its header and its records, each a list of fields (RFC 4180: quoted fields
/// may hold commas, quotes doubled, and line breaks).
pub fn csv_records(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut records: Vec<Vec<String>> = Vec::new();
    let (mut field, mut record) = (String::new(), Vec::new());
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\n') => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, '\r') => {}
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    let mut it = records.into_iter();
    let header = it.next().unwrap_or_default();
    (header, it.collect())
}

/// The column names of a CSV table.
pub fn csv_header(text: &str) -> Vec<String> {
    csv_records(text).0
}

/// The rows of a CSV table as maps from column name to value, so that tests read columns by
/// name ([`csv_records`] parses them).
pub fn csv_rows(text: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let (header, records) = csv_records(text);
    records
        .into_iter()
        .map(|r| header.iter().cloned().zip(r).collect())
        .collect()
}

/// The values of column `name` of a CSV table, in row order.
pub fn csv_column(text: &str, name: &str) -> Vec<String> {
    csv_rows(text)
        .into_iter()
        .map(|r| r.get(name).cloned().unwrap_or_default())
        .collect()
}

/// Whether some row of a CSV table has `value` in column `name` (e.g. the `code` column of
/// `anomalies`, the `verdict` column of `resumptions`).
pub fn column_has(text: &str, name: &str, value: &str) -> bool {
    csv_column(text, name).iter().any(|v| v == value)
}

// ---------------------------------------------------------------------------
// Findings

/// Assert exactly this multiset of (kind, severity) findings.
#[track_caller]
pub fn assert_kinds(fs: &[Value], expected: &[(&str, &str)]) {
    let mut want: Vec<(String, String)> = expected
        .iter()
        .map(|(k, s)| (k.to_string(), s.to_string()))
        .collect();
    want.sort();
    assert_eq!(kinds_and_severities(fs), want, "findings:\n{}", pretty(fs));
}

/// The only finding of a kind.
#[track_caller]
pub fn one<'a>(fs: &'a [Value], kind: &str) -> &'a Value {
    let v: Vec<&Value> = fs.iter().filter(|f| f["kind"] == kind).collect();
    assert_eq!(v.len(), 1, "one {kind} expected:\n{}", pretty(fs));
    v[0]
}

/// Whether any finding is of kind `kind`.
pub fn has_kind(fs: &[Value], kind: &str) -> bool {
    fs.iter().any(|f| f["kind"] == kind)
}

/// Assert the key fields of a finding of session [`SID`] (`None`: the column is null).
#[track_caller]
pub fn assert_keys(
    f: &Value,
    last_event_id: Option<&str>,
    event_id: Option<&str>,
    request_id: Option<&str>,
) {
    let s = |k: &str| f[k].as_str().map(str::to_string);
    assert_eq!(s("session_id").as_deref(), Some(SID), "{f}");
    assert_eq!(
        s("last_event_id").as_deref(),
        last_event_id,
        "last_event_id of {f}"
    );
    assert_eq!(s("event_id").as_deref(), event_id, "event_id of {f}");
    assert_eq!(s("request_id").as_deref(), request_id, "request_id of {f}");
}

/// The findings one a line: kind, severity, key fields and detail.
pub fn pretty(fs: &[Value]) -> String {
    fs.iter()
        .map(|f| {
            format!(
                "  {} {} leid={} eid={} rid={}: {}",
                f["kind"],
                f["severity"],
                f["last_event_id"],
                f["event_id"],
                f["request_id"],
                f["detail"]
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------
// Scenarios: one session `s1` with a tools/call 2 streamed over SSE, cut and resumed

/// The session id of the scenarios.
pub const SID: &str = "s1";

/// How the server ends the tools/call POST stream.
#[derive(Clone, Copy)]
pub enum End {
    /// Last chunk, then an orderly close by the client.
    Complete,
    /// FIN from the server without the last chunk.
    CutFin,
    /// RST from the server without the last chunk.
    CutRst,
}

/// The progress token of request `id`: `"t<id>"`.
pub fn token(id: i64) -> Value {
    json!(format!("t{id}"))
}

/// Event `id` carrying progress `n` of `total` for the tools/call 2.
pub fn prog(id: impl ToString, n: u64, total: u64) -> Ev {
    Ev::id(id, progress(&token(2), n, total))
}

/// Event `id` carrying the result of the tools/call 2.
pub fn res(id: impl ToString) -> Ev {
    Ev::id(id, result(2))
}

/// Events `ids[i]` with progress `from + i` of `total`, for the tools/call 2.
pub fn prog_range(ids: std::ops::RangeInclusive<u64>, from: u64, total: u64) -> Vec<Ev> {
    ids.enumerate()
        .map(|(i, id)| prog(id, from + i as u64, total))
        .collect()
}

/// Progress events of request `req` under the given ids, progress `from`, `from + 1`, … of
/// `total`.
pub fn progs(req: i64, ids: &[&str], from: u64, total: u64) -> Vec<Ev> {
    ids.iter()
        .enumerate()
        .map(|(i, id)| Ev::id(id, progress(&token(req), from + i as u64, total)))
        .collect()
}

/// `notifications/message` (level info, data `x`).
pub fn log_message() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}})
}

/// `initialize` → `Mcp-Session-Id: s1`, then `notifications/initialized` → 202, on one
/// connection.
pub fn handshake(cap: &mut Capture) {
    handshake_as(cap, SID);
}

/// `initialize` → `Mcp-Session-Id: sid`, then `notifications/initialized`, on one connection.
pub fn handshake_as(cap: &mut Capture, sid: &str) {
    handshake_version(cap, sid, PROTOCOL_VERSION);
}

/// The same, negotiating protocol revision `version`.
pub fn handshake_version(cap: &mut Capture, sid: &str, version: &str) {
    let mut init = initialize(1);
    init["params"]["protocolVersion"] = json!(version);
    let mut result = initialize_result(1);
    result["result"]["protocolVersion"] = json!(version);
    let mut c = cap.connect();
    c.client(cap, &post(None, &init));
    c.server(cap, &json_response(Some(sid), &result));
    c.client(cap, &post(Some(sid), &initialized()));
    c.server(cap, &accepted());
    c.close(cap);
}

/// A new connection carrying the `tools/call` request 2 (the response is the caller's).
pub fn tools_call_conn(cap: &mut Capture) -> Conn {
    let mut c = cap.connect();
    c.client(cap, &post(Some(SID), &tools_call(2, &token(2))));
    c
}

/// `tools/call` id 2 answered by an SSE stream of `events`; returns the client port.
pub fn tools_call_stream(cap: &mut Capture, events: &[Ev], end: End) -> u16 {
    let mut c = tools_call_conn(cap);
    let port = c.port;
    c.server(
        cap,
        &sse_response(None, events, matches!(end, End::Complete)),
    );
    match end {
        End::Complete => c.close(cap),
        End::CutFin => c.server_close(cap),
        End::CutRst => c.server_reset(cap),
    }
    port
}

/// A GET with `Last-Event-ID` on a new connection, answered by the bytes `response` (head and
/// body); the client closes.
pub fn resume(cap: &mut Capture, last_event_id: &str, response: &[u8]) {
    let mut c = cap.connect();
    c.client(cap, &get(Some(SID), Some(last_event_id)));
    c.server(cap, response);
    c.close(cap);
}

/// A GET resuming the session's stream from `cursor`, answered by `evs` and closed.
pub fn resume_with(cap: &mut Capture, cursor: &str, evs: &[Ev]) {
    resume(cap, cursor, &sse_response(None, evs, true));
}

/// The client resumes from id 3 on a new connection and gets progress 4, 5 (of 5) and the
/// result on 6.
pub fn resume_from_3(cap: &mut Capture) {
    let mut rest = progs(2, &["4", "5"], 4, 5);
    rest.push(Ev::id("6", result(2)));
    resume_with(cap, "3", &rest);
}

/// The healthy session: progress 1..5 on ids 1..5, the result on id 6; returns the client port
/// of the tools/call.
pub fn healthy(cap: &mut Capture) -> u16 {
    handshake(cap);
    let mut evs = prog_range(1..=5, 1, 5);
    evs.push(res(6));
    tools_call_stream(cap, &evs, End::Complete)
}

/// The POST stream is cut after ids 1..3 (progress 1..3 of `total`); the client resumes with
/// `Last-Event-ID: 3` and gets `resumed` on a complete SSE response.
pub fn cut_and_resume(total: u64, cut: End, resumed: &[Ev]) -> Capture {
    let mut cap = Capture::new();
    handshake(&mut cap);
    tools_call_stream(&mut cap, &prog_range(1..=3, 1, total), cut);
    resume(&mut cap, "3", &sse_response(None, resumed, true));
    cap
}

/// A session whose tools/call stream has delivered ids 1..3 (progress 1..3 of 5) and is still
/// open: the capture and that connection.
pub fn call_under_way() -> (Capture, Conn) {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    c.server(
        &mut cap,
        &sse_response(None, &progs(2, &["1", "2", "3"], 1, 5), false),
    );
    (cap, c)
}

/// One POST stream of request 2 whose events carry `ids` in order (notifications/message, so
/// no progress shows a loss), then the result under `result_id`.
pub fn raw_ids_capture(ids: &[&str], result_id: &str) -> Capture {
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "step"}});
    let mut evs: Vec<Ev> = ids.iter().map(|id| Ev::id(id, log.clone())).collect();
    evs.push(Ev::id(result_id, result(2)));
    c.server(&mut cap, &sse_response(None, &evs, true));
    c.close(&mut cap);
    cap
}

/// A `200 text/event-stream` head plus raw event-stream text in one chunk (no last chunk).
pub fn raw_sse(text: &str) -> Vec<u8> {
    let mut out = sse_head(None);
    out.extend(chunk(text.as_bytes()));
    out
}

/// A `200 text/event-stream` chunked head, assigning `session` and naming `backend` in an
/// `X-Backend` header when given.
pub fn sse_head_from(session: Option<&str>, backend: Option<&str>) -> Vec<u8> {
    let mut h = sse_head(session);
    if let Some(b) = backend {
        let at = h.len() - 2;
        h.splice(at..at, format!("X-Backend: {b}\r\n").into_bytes());
    }
    h
}

/// A status-only answer with a small text body.
pub fn status(code: u16, reason: &str) -> Vec<u8> {
    format!("HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\nnot found").into_bytes()
}

/// A session `s1` whose `tools/list` is answered 404; with `reinitialize` the client then
/// initialises session `s2` and lists there, else it sends the dead id twice more, a second
/// apart. The findings.
pub fn dead_session(reinitialize: bool) -> Vec<Value> {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let mut cap = Capture::new();
    handshake_as(&mut cap, SID);
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &list));
    c.server(&mut cap, &status(404, "Not Found"));
    if reinitialize {
        c.client(&mut cap, &post(None, &initialize(1)));
        c.server(&mut cap, &json_response(Some("s2"), &initialize_result(1)));
        c.client(&mut cap, &post(Some("s2"), &list));
        c.server(
            &mut cap,
            &json_response(
                None,
                &json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}),
            ),
        );
    } else {
        for _ in 0..2 {
            cap.wait(1_000_000);
            c.client(&mut cap, &post(Some(SID), &list));
            c.server(&mut cap, &status(404, "Not Found"));
        }
    }
    c.close(&mut cap);
    analyze(&cap, &[])
}

// ---------------------------------------------------------------------------
// Scenarios: MCP 2025-11-25 polling

/// How the polled POST response ends.
#[derive(Clone, Copy)]
pub enum PollEnd {
    /// Chunked, with its last chunk, then the server's FIN.
    LastChunk,
    /// Chunked, without its last chunk: cut by the server's FIN.
    Cut,
    /// Without chunking or length (delimited by the close, RFC 9112 §6.3): the server's FIN.
    CloseFin,
    /// Delimited by the close, but the server resets the connection: an abort.
    CloseRst,
}

/// A poll during a tool call whose result is the first event after the cursor.
#[derive(Clone, Copy)]
pub struct PollThenResult<'a> {
    /// How the first connection ends (after progress 1..3 of `total`, ids 1..3).
    pub end: PollEnd,
    /// The backend of each connection, in an `X-Backend` header.
    pub backends: Option<(&'a str, &'a str)>,
    /// Progress 5 before the result, skipping 4.
    pub jump: bool,
    /// The progress total.
    pub total: u64,
    /// A poll held 5 s that carries nothing and ends cleanly, before the one with the result.
    pub quiet: bool,
    /// `retry` on a Go-style `event: close` after the last progress, not on the priming event.
    pub go_close: bool,
    /// Progress as fractions of 1 (4/7, 5/7, 6/7 of 1.0) instead of 1..3 of `total`.
    pub sevenths: bool,
}

impl Default for PollThenResult<'_> {
    fn default() -> Self {
        PollThenResult {
            end: PollEnd::LastChunk,
            backends: None,
            jump: false,
            total: 4,
            quiet: false,
            go_close: false,
            sevenths: false,
        }
    }
}

/// The client comes back 0.5 s after each close with Last-Event-ID 3; the result is id 4 (5
/// with `jump`). The findings.
pub fn poll_then_result(p: PollThenResult) -> Vec<Value> {
    analyze(&poll_capture(p), &[])
}

/// The capture of [`poll_then_result`].
pub fn poll_capture(p: PollThenResult) -> Capture {
    let mut cap = Capture::new();
    handshake_version(&mut cap, SID, "2025-11-25");
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut body = sse_head_from(None, p.backends.map(|b| b.0));
    if p.go_close {
        body.extend(chunk(b"event: prime\nid: 0\ndata: \n\n"));
    } else {
        body.extend(chunk(b"id: 0\nretry: 500\ndata: \n\n"));
    }
    let mut first = progs(2, &["1", "2", "3"], 1, p.total);
    if p.sevenths {
        for (ev, i) in first.iter_mut().zip(4..) {
            ev.data["params"]["progress"] = json!(f64::from(i) / 7.0);
            ev.data["params"]["total"] = json!(1.0);
        }
    }
    for ev in first {
        body.extend(chunk(ev.text().as_bytes()));
    }
    if p.go_close {
        body.extend(chunk(b"event: close\nretry: 500\ndata: \n\n"));
    }
    if matches!(p.end, PollEnd::LastChunk) {
        body.extend_from_slice(LAST_CHUNK);
    }
    c.server(&mut cap, &body);
    match p.end {
        PollEnd::CloseRst => c.server_reset(&mut cap),
        _ => c.server_close(&mut cap),
    }
    cap.wait(500_000);
    if p.quiet {
        let mut q = cap.connect();
        q.client(&mut cap, &get(Some(SID), Some("3")));
        q.server(&mut cap, &sse_head_from(None, p.backends.map(|b| b.0)));
        cap.wait(5_000_000);
        if p.go_close {
            // Go closes whichever connection holds the stream the same way.
            q.server(&mut cap, &chunk(b"event: close\nretry: 500\ndata: \n\n"));
        }
        q.server(&mut cap, LAST_CHUNK);
        q.server_close(&mut cap);
        cap.wait(500_000);
    }
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), Some("3")));
    let mut answer = sse_head_from(None, p.backends.map(|b| b.1));
    let mut rest = vec![Ev::id("4", result(2))];
    if p.jump {
        rest.insert(0, Ev::id("4", progress(&token(2), 5, p.total)));
        rest[1] = Ev::id("5", result(2));
    }
    for ev in rest {
        answer.extend(chunk(ev.text().as_bytes()));
    }
    answer.extend_from_slice(LAST_CHUNK);
    g.server(&mut cap, &answer);
    g.close(&mut cap);
    cap
}

/// A POST stream cut right after its priming event (2025-11-25), resumed from the priming id.
/// The resumed stream carries `resumed` for request 2, whose progress the client never saw
/// before the cut.
pub fn cut_at_priming_then(resumed: &[Ev]) -> Vec<Value> {
    cut_at_priming_id_then("1", None, resumed)
}

/// [`cut_at_priming_then`] with priming id `priming`, and with `backends` (the cut connection's,
/// the resumption's) named in `X-Backend` headers.
pub fn cut_at_priming_id_then(
    priming: &str,
    backends: Option<(&str, &str)>,
    resumed: &[Ev],
) -> Vec<Value> {
    let mut cap = Capture::new();
    handshake_version(&mut cap, SID, "2025-11-25");
    let mut c = cap.connect();
    c.client(&mut cap, &post(Some(SID), &tools_call(2, &token(2))));
    let mut body = sse_head_from(None, backends.map(|b| b.0));
    body.extend(chunk(format!("id: {priming}\ndata: \n\n").as_bytes()));
    c.server(&mut cap, &body);
    c.server_reset(&mut cap);
    let mut g = cap.connect();
    g.client(&mut cap, &get(Some(SID), Some(priming)));
    let mut body = sse_head_from(None, backends.map(|b| b.1));
    for ev in resumed {
        body.extend(chunk(ev.text().as_bytes()));
    }
    body.extend_from_slice(LAST_CHUNK);
    g.server(&mut cap, &body);
    g.close(&mut cap);
    analyze(&cap, &[])
}

// ---------------------------------------------------------------------------
// Scenarios: a proxy in front of backends

/// The first backend's port.
pub const B1: u16 = 3301;
/// The second backend's port.
pub const B2: u16 = 3302;

/// How the capture sees the proxy.
#[derive(Clone, Copy, PartialEq)]
pub enum View {
    /// Only the client↔proxy connections; responses name their backend in `X-Backend`.
    ClientLeg,
    /// Both legs; no backend header.
    BothLegs,
}

/// One exchange through the proxy: `request` from the client, forwarded to `backend`, whose
/// response body `body` (after the SSE head) goes back; `complete` ends it with the last chunk,
/// else both legs are closed by their servers.
pub fn through_proxy(
    cap: &mut Capture,
    view: View,
    backend: u16,
    request: &[u8],
    session: Option<&str>,
    body: &[u8],
    complete: bool,
) {
    let name = if backend == B1 { "b1" } else { "b2" };
    let mut c = cap.connect();
    c.client(cap, request);
    let mut up = (view == View::BothLegs).then(|| {
        let mut u = cap.connect_to(backend);
        u.client(cap, request);
        u.server(cap, &sse_head_from(session, None));
        u.server(cap, body);
        if complete {
            u.server(cap, LAST_CHUNK);
        }
        u
    });
    c.server(
        cap,
        &sse_head_from(session, (view == View::ClientLeg).then_some(name)),
    );
    c.server(cap, body);
    if complete {
        c.server(cap, LAST_CHUNK);
        c.close(cap);
        if let Some(u) = up.take() {
            u.close(cap);
        }
    } else {
        if let Some(u) = up.take() {
            u.server_close(cap);
        }
        c.server_close(cap);
    }
}

/// Events as the chunks of a chunked event-stream body.
pub fn event_chunks(evs: &[Ev]) -> Vec<u8> {
    evs.iter()
        .flat_map(|e| chunk(e.text().as_bytes()))
        .collect()
}

/// The rows of table `name` of `captures` as JSON objects: `analyze --format ndjson --fail-on
/// never --out DIR` into a fresh directory (removed after), which must succeed.
pub fn ndjson_table<P: AsRef<std::path::Path>>(captures: &[P], name: &str) -> Vec<Value> {
    let out = temp_path("tables", "d");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args([
            "analyze",
            "--format",
            "ndjson",
            "--fail-on",
            "never",
            "--out",
        ])
        .arg(&out)
        .args(captures.iter().map(AsRef::as_ref))
        .output()
        .expect("run mcpcap");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(out.join(format!("{name}.ndjson"))).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

// ---------------------------------------------------------------------------
// External tools

/// Whether `tool --version` runs and succeeds.
pub fn have(tool: &str) -> bool {
    std::process::Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Say that a test leaves out what needs `missing` (`.ci/run` installs it); with
/// `MCPCAP_REQUIRE_READERS` set (as CI sets it) a missing tool is a failure instead.
pub fn skip_without(missing: &str) {
    if std::env::var_os("MCPCAP_REQUIRE_READERS").is_some() {
        panic!("MCPCAP_REQUIRE_READERS is set, but {missing} was not found");
    }
    eprintln!("skipped: {missing} not found (.ci/run installs it)");
}

/// Whether every tool of `tools` runs; when one does not, [`skip_without`] says so.
pub fn have_all(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !have(t)).collect();
    if !missing.is_empty() {
        skip_without(&missing.join(" and "));
    }
    missing.is_empty()
}

/// The frame numbers of a `wireshark_filter` cell, `frame.number in {a, b, c}`.
pub fn filter_frames(filter: &str) -> std::collections::BTreeSet<u64> {
    let inner = filter
        .strip_prefix("frame.number in {")
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or_else(|| panic!("not a frame filter: {filter}"));
    inner.split(", ").map(|n| n.parse().unwrap()).collect()
}

/// A Python interpreter that imports `modules` (`"duckdb, pyarrow"`): `MCPCAP_READERS_PYTHON`,
/// else the venv `.ci/run` makes, else `python3`; `Err` names what is missing.
pub fn python_with(modules: &str) -> Result<std::path::PathBuf, String> {
    let mut candidates: Vec<std::path::PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("MCPCAP_READERS_PYTHON") {
        candidates.push(p.into());
    }
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(std::path::Path::new(&home).join(".cache/mcpcap-venv/bin/python"));
    }
    candidates.push("python3".into());
    candidates
        .into_iter()
        .find(|py| {
            std::process::Command::new(py)
                .args(["-c", &format!("import {modules}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .ok_or_else(|| format!("a Python with {modules}"))
}

/// The frame numbers of `file` that tshark's display filter `filter` selects.
pub fn tshark_frames(file: &std::path::Path, filter: &str) -> std::collections::BTreeSet<u64> {
    let o = std::process::Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "tshark -r {} -Y '{filter}': {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// Every TCP stream event of the classic pcap or pcapng file `path`, as the flow table hands
/// them to `sink` (the stage the test drives).
#[allow(dead_code)]
pub fn flow_events<S: mcpcap::tcp::StreamSink>(path: &std::path::Path, sink: &mut S) {
    use mcpcap::tcp::{FlowTable, ReassemblyLimits};
    let data = std::fs::read(path).unwrap();
    let mut table = FlowTable::new(ReassemblyLimits::default());
    let mut anomalies = mcpcap::anomaly::Anomalies::default();
    mcpcap::capture::read_capture(&data[..], 1, &mut anomalies, |f| {
        if let mcpcap::decode::Decoded::Tcp(seg) =
            mcpcap::decode::decode(f.linktype, f.data, f.orig_len)
        {
            table.segment(&seg, f.ts, f.number, sink);
        }
    })
    .unwrap();
    table.finish(sink);
}
