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
    let path = temp_path("run", "pcap");
    std::fs::write(&path, cap.pcap()).expect("write temp pcap");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(args)
        .arg(&path)
        .output()
        .expect("run mcpcap");
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

/// Run `mcpcap analyze --format ndjson --fail-on never <extra…>` on the capture and return the
/// findings; the run must succeed with nothing on stderr.
pub fn analyze(cap: &Capture, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["analyze", "--format", "ndjson", "--fail-on", "never"];
    args.extend_from_slice(extra);
    ndjson(cap, &args)
}

/// Run `mcpcap analyze --quiet --fail-on never --format csv --out OUT PCAP`; the run must
/// succeed.
pub fn write_csv_tables(pcap: &std::path::Path, out: &std::path::Path) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args([
            "analyze",
            "--quiet",
            "--fail-on",
            "never",
            "--format",
            "csv",
            "--out",
        ])
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

/// The rows of a CSV table as maps from column name to value (RFC 4180: quoted fields may hold
/// commas, quotes doubled, and line breaks), so that tests read columns by name.
pub fn csv_rows(text: &str) -> Vec<std::collections::BTreeMap<String, String>> {
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
    it.map(|r| header.iter().cloned().zip(r).collect())
        .collect()
}

/// The values of column `name` of a CSV table, in row order.
pub fn csv_column(text: &str, name: &str) -> Vec<String> {
    csv_rows(text)
        .into_iter()
        .map(|r| r.get(name).cloned().unwrap_or_default())
        .collect()
}
