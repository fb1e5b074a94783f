//! Captures an attacker may shape, built at any size: each makes some structure of the analysis
//! grow with the input unless a bound holds it. `tests/hostile.rs` runs small versions and
//! checks the anomaly codes and that no false finding comes out; `benches/hostile.rs` runs the
//! full sizes and reports peak RSS and time per shape.
//!
//! Every shape is a classic pcap (Ethernet, µs), written as it is built, with its own small
//! TCP writer: a flood of a million connections does not fit the test builder's ports.

#![allow(dead_code)]

use std::io::Write;

use etherparse::PacketBuilder;

/// Capture start: 2026-01-01T00:00:00Z in µs.
const START_US: i64 = 1_767_225_600_000_000;
const SERVER: [u8; 4] = [10, 0, 0, 1];
const PORT: u16 = 3000;
const MSS: usize = 1400;

/// A pcap being written into memory.
pub struct Pcap {
    /// The file so far.
    pub bytes: Vec<u8>,
    /// Time of the next frame, µs.
    pub ts: i64,
    /// Frames written.
    pub frames: u64,
}

impl Default for Pcap {
    fn default() -> Self {
        Self::new()
    }
}

impl Pcap {
    /// A file with its header, the clock at the capture start.
    pub fn new() -> Pcap {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&4u16.to_le_bytes());
        bytes.extend_from_slice(&[0; 8]);
        bytes.extend_from_slice(&262_144u32.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
        Pcap {
            bytes,
            ts: START_US,
            frames: 0,
        }
    }

    fn frame(&mut self, data: &[u8]) {
        let ts = self.ts;
        self.bytes
            .extend_from_slice(&((ts / 1_000_000) as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&((ts % 1_000_000) as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&(data.len() as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&(data.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(data);
        self.frames += 1;
    }

    /// Let `us` microseconds pass.
    pub fn wait(&mut self, us: i64) {
        self.ts += us;
    }
}

/// TCP flags of a segment.
#[derive(Clone, Copy, Default)]
struct F {
    syn: bool,
    ack: bool,
    fin: bool,
    rst: bool,
}

/// One TCP connection from `client:port` to the server `10.0.0.1:3000`.
pub struct Tcp {
    client: [u8; 4],
    port: u16,
    seq: [u32; 2],
}

impl Tcp {
    /// The `n`-th client endpoint: addresses 10.1.0.0/16 up, ports 1024.. (unique for any n
    /// below 2^32).
    pub fn nth(n: u64) -> Tcp {
        let host = (n / 60_000) as u32;
        let port = 1024 + (n % 60_000) as u16;
        let a = 0x0a01_0000u32.wrapping_add(host);
        Tcp {
            client: a.to_be_bytes(),
            port,
            seq: [1000, 900_000],
        }
    }

    fn emit(&mut self, p: &mut Pcap, from_client: bool, f: F, payload: &[u8]) {
        let d = usize::from(!from_client);
        let (sip, dip, sp, dp) = if from_client {
            (self.client, SERVER, self.port, PORT)
        } else {
            (SERVER, self.client, PORT, self.port)
        };
        let mut b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4(sip, dip, 64)
            .tcp(sp, dp, self.seq[d], 65535);
        if f.syn {
            b = b.syn();
        }
        if f.ack {
            b = b.ack(self.seq[1 - d]);
        }
        if f.fin {
            b = b.fin();
        }
        if f.rst {
            b = b.rst();
        }
        let mut data = Vec::with_capacity(b.size(payload.len()));
        b.write(&mut data, payload).expect("TCP frame");
        p.frame(&data);
        self.seq[d] = self.seq[d]
            .wrapping_add(payload.len() as u32)
            .wrapping_add(u32::from(f.syn || f.fin));
    }

    /// The client's SYN only.
    pub fn syn(&mut self, p: &mut Pcap) {
        self.emit(
            p,
            true,
            F {
                syn: true,
                ..F::default()
            },
            &[],
        );
    }

    /// SYN, SYN-ACK, ACK.
    pub fn open(&mut self, p: &mut Pcap) {
        self.syn(p);
        let sa = F {
            syn: true,
            ack: true,
            ..F::default()
        };
        self.emit(p, false, sa, &[]);
        self.ack(p, true);
    }

    fn ack(&mut self, p: &mut Pcap, from_client: bool) {
        let a = F {
            ack: true,
            ..F::default()
        };
        self.emit(p, from_client, a, &[]);
    }

    /// Bytes from one side, in segments of at most `mss`, each acknowledged.
    pub fn send(&mut self, p: &mut Pcap, from_client: bool, data: &[u8], mss: usize) {
        for c in data.chunks(mss.max(1)) {
            let a = F {
                ack: true,
                ..F::default()
            };
            self.emit(p, from_client, a, c);
            self.ack(p, !from_client);
        }
    }

    /// Client bytes.
    pub fn client(&mut self, p: &mut Pcap, data: &[u8]) {
        self.send(p, true, data, MSS);
    }

    /// Server bytes.
    pub fn server(&mut self, p: &mut Pcap, data: &[u8]) {
        self.send(p, false, data, MSS);
    }

    /// FIN from the client, FIN from the server, last ACK.
    pub fn close(mut self, p: &mut Pcap) {
        let fa = F {
            fin: true,
            ack: true,
            ..F::default()
        };
        self.emit(p, true, fa, &[]);
        self.emit(p, false, fa, &[]);
        self.ack(p, true);
    }

    /// A RST from the server.
    pub fn reset(mut self, p: &mut Pcap) {
        let r = F {
            rst: true,
            ack: true,
            ..F::default()
        };
        self.emit(p, false, r, &[]);
    }
}

const SID: &str = "hostile-session";

fn post_bytes(extra_headers: &str, body: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "POST /mcp HTTP/1.1\r\nHost: 10.0.0.1:3000\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: {SID}\r\nMCP-Protocol-Version: 2025-03-26\r\n{extra_headers}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    v.extend_from_slice(body);
    v
}

const ACCEPTED: &[u8] = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";

fn json_response(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: {SID}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn sse_head(extra: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: {SID}\r\n{extra}"
    )
}

fn chunked(data: &[u8]) -> Vec<u8> {
    let mut v = format!("{:x}\r\n", data.len()).into_bytes();
    v.extend_from_slice(data);
    v.extend_from_slice(b"\r\n");
    v
}

/// `initialize` answered, on its own connection: the session exists.
fn handshake(p: &mut Pcap, n: u64) {
    let mut c = Tcp::nth(n);
    c.open(p);
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}"#;
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 10.0.0.1:3000\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{init}",
        init.len()
    );
    c.client(p, req.as_bytes());
    let res = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
    c.server(p, &json_response(res));
    c.close(p);
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(data).expect("gzip");
    z.finish().expect("gzip")
}

/// A batch of `len` bytes: `[{},{},…]`, or (`valid`) notifications.
fn batch_text(len: usize, valid: bool) -> Vec<u8> {
    let el: &[u8] = if valid {
        br#"{"jsonrpc":"2.0","method":"notifications/x"}"#
    } else {
        b"{}"
    };
    let mut v = Vec::with_capacity(len + el.len() + 2);
    v.push(b'[');
    while v.len() + el.len() + 1 < len {
        if v.len() > 1 {
            v.push(b',');
        }
        v.extend_from_slice(el);
    }
    v.push(b']');
    v
}

/// Item 1: `bodies` POSTs, each a JSON-RPC batch of `len` bytes (`[{},…]`, or notifications
/// when `valid`), gzip-coded when `coded`, each answered 202.
pub fn batch_bomb(bodies: usize, len: usize, valid: bool, coded: bool) -> Vec<u8> {
    let mut p = Pcap::new();
    handshake(&mut p, 0);
    let text = batch_text(len, valid);
    let (body, header) = if coded {
        (gzip(&text), "Content-Encoding: gzip\r\n")
    } else {
        (text, "")
    };
    for k in 0..bodies {
        let mut c = Tcp::nth(1 + k as u64);
        c.open(&mut p);
        c.client(&mut p, &post_bytes(header, &body));
        c.server(&mut p, ACCEPTED);
        c.close(&mut p);
    }
    p.bytes
}

/// Item 2: `bodies` SSE responses (to a tools/call each), gzip-coded, each decoding to `len`
/// bytes of tiny events (`data: {}`), every one within the decoded-body bound: a few hundred
/// bytes of gzip a megabyte of events.
pub fn gzip_tiny_events(bodies: usize, len: usize) -> Vec<u8> {
    let mut p = Pcap::new();
    handshake(&mut p, 0);
    let mut text = Vec::with_capacity(len + 64);
    while text.len() < len {
        text.extend_from_slice(b"data: {}\n\n");
    }
    let body = gzip(&text);
    for k in 0..bodies {
        let mut c = Tcp::nth(1 + k as u64);
        c.open(&mut p);
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"t","arguments":{{}}}}}}"#,
            k + 1
        );
        c.client(&mut p, &post_bytes("", call.as_bytes()));
        let mut resp = format!(
            "{}Content-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
            sse_head(""),
            body.len()
        )
        .into_bytes();
        resp.extend_from_slice(&body);
        c.server(&mut p, &resp);
        c.close(&mut p);
    }
    p.bytes
}

/// Item 3: a tools/call whose result is valid JSON nested `depth` levels deep, answered in a
/// JSON body and, for a second call, in an SSE event.
pub fn deep_result(depth: usize) -> Vec<u8> {
    let mut p = Pcap::new();
    handshake(&mut p, 0);
    let nested = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    for (k, sse) in [(1, false), (2, true)] {
        let mut c = Tcp::nth(k);
        c.open(&mut p);
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":{k},"method":"tools/call","params":{{"name":"t","arguments":{{}}}}}}"#
        );
        c.client(&mut p, &post_bytes("", call.as_bytes()));
        let result = format!(
            r#"{{"jsonrpc":"2.0","id":{k},"result":{{"content":[{{"type":"text","text":"x"}}],"structuredContent":{{"v":{nested}}}}}}}"#
        );
        if sse {
            let ev = format!("id: 1\ndata: {result}\n\n");
            let mut resp =
                format!("{}Transfer-Encoding: chunked\r\n\r\n", sse_head("")).into_bytes();
            resp.extend_from_slice(&chunked(ev.as_bytes()));
            resp.extend_from_slice(b"0\r\n\r\n");
            c.server(&mut p, &resp);
        } else {
            c.server(&mut p, &json_response(&result));
        }
        c.close(&mut p);
    }
    p.bytes
}

/// Item 4: a tools/call stream cut after its third event (id 3), then `n` resumptions from
/// `Last-Event-ID: 3`, each answered 200 with an empty event stream closed at once (rust-sdk
/// #958's answer to a resume it cannot serve), 1 ms apart.
pub fn empty_resume_loop(n: usize) -> Vec<u8> {
    let mut p = Pcap::new();
    handshake(&mut p, 0);
    let mut c = Tcp::nth(1);
    c.open(&mut p);
    c.client(
        &mut p,
        &post_bytes("", br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"_meta":{"progressToken":1}}}"#),
    );
    let mut resp = format!("{}Transfer-Encoding: chunked\r\n\r\n", sse_head("")).into_bytes();
    for i in 1..=3 {
        let ev = format!(
            "id: {i}\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":1,\"progress\":{i},\"total\":10}}}}\n\n"
        );
        resp.extend_from_slice(&chunked(ev.as_bytes()));
    }
    c.server(&mut p, &resp);
    c.reset(&mut p);
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: 10.0.0.1:3000\r\nAccept: text/event-stream\r\nMcp-Session-Id: {SID}\r\nLast-Event-ID: 3\r\n\r\n"
    );
    let empty = format!("{}Content-Length: 0\r\n\r\n", sse_head(""));
    for k in 0..n {
        let mut r = Tcp::nth(2 + k as u64);
        r.open(&mut p);
        r.client(&mut p, get.as_bytes());
        r.server(&mut p, empty.as_bytes());
        r.close(&mut p);
        p.wait(1_000);
    }
    p.bytes
}

/// Item 5: `n` connections that send a SYN and nothing else, `spacing_us` apart.
pub fn syn_flood(n: u64, spacing_us: i64) -> Vec<u8> {
    let mut p = Pcap::new();
    for k in 0..n {
        Tcp::nth(k).syn(&mut p);
        p.wait(spacing_us);
    }
    p.bytes
}

/// Item 5: `n` connections, each opened and left with `head` bytes of a request head that never
/// ends (all open at once).
pub fn open_heads(n: u64, head: usize) -> Vec<u8> {
    let mut p = Pcap::new();
    let line = "X-Pad: ".to_string() + &"p".repeat(64) + "\r\n";
    let mut text = "POST /mcp HTTP/1.1\r\nHost: 10.0.0.1:3000\r\n".to_string();
    while text.len() + line.len() < head {
        text.push_str(&line);
    }
    for k in 0..n {
        let mut c = Tcp::nth(k);
        c.open(&mut p);
        c.send(&mut p, true, text.as_bytes(), 1400);
        p.wait(10);
    }
    p.bytes
}

/// Item 5: `n` sessions, each `initialize` and one tools/call answered on a short SSE stream.
pub fn many_sessions(n: u64) -> Vec<u8> {
    many_sessions_forked(n, 0)
}

/// [`many_sessions`], every `every`-th session (none for 0) forked: its call's stream is reset
/// after its first event and the resumption from that event is answered by a fresh log that
/// begins with it again (an `id_regression`, a broken session), for the report's scale.
pub fn many_sessions_forked(n: u64, every: u64) -> Vec<u8> {
    let mut p = Pcap::new();
    for k in 0..n {
        let forked = every > 0 && k % every == 0;
        let sid = format!("s{k:08}");
        let mut c = Tcp::nth(2 * k);
        c.open(&mut p);
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}"#;
        c.client(
            &mut p,
            format!("POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{init}", init.len()).as_bytes(),
        );
        let res = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
        c.server(
            &mut p,
            format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: {sid}\r\nContent-Length: {}\r\n\r\n{res}", res.len()).as_bytes(),
        );
        c.close(&mut p);
        let mut d = Tcp::nth(2 * k + 1);
        d.open(&mut p);
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"_meta":{"progressToken":1}}}"#;
        d.client(
            &mut p,
            format!("POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nMcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n{call}", call.len()).as_bytes(),
        );
        let mut body = Vec::new();
        for (i, ev) in [
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"total":2}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
        ]
        .iter()
        .enumerate()
        {
            body.extend_from_slice(&chunked(format!("id: {sid}-{i}\ndata: {ev}\n\n").as_bytes()));
        }
        body.extend_from_slice(b"0\r\n\r\n");
        let mut resp = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: {sid}\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        .into_bytes();
        if forked {
            let cut = format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: {sid}\r\nTransfer-Encoding: chunked\r\n\r\n").into_bytes();
            let mut cut = cut;
            cut.extend_from_slice(&chunked(format!("id: {sid}-0\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":1,\"progress\":1,\"total\":2}}}}\n\n").as_bytes()));
            d.server(&mut p, &cut);
            d.reset(&mut p);
            let mut g = Tcp::nth(2 * n + k);
            g.open(&mut p);
            g.client(
                &mut p,
                format!("GET /mcp HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\nMcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\nLast-Event-ID: {sid}-0\r\n\r\n").as_bytes(),
            );
            resp.extend_from_slice(&body);
            g.server(&mut p, &resp);
            g.close(&mut p);
            continue;
        }
        resp.extend_from_slice(&body);
        d.server(&mut p, &resp);
        d.close(&mut p);
    }
    p.bytes
}

/// Item 6: a POST whose batch is `n` empty objects, and an SSE event whose data is a batch of
/// `n` zeros: valid JSON, no JSON-RPC message.
pub fn invalid_batches(n: usize) -> Vec<u8> {
    let mut p = Pcap::new();
    handshake(&mut p, 0);
    let mut c = Tcp::nth(1);
    c.open(&mut p);
    c.client(&mut p, &post_bytes("", &batch_text(3 * n, false)));
    c.server(&mut p, ACCEPTED);
    c.close(&mut p);
    let mut g = Tcp::nth(2);
    g.open(&mut p);
    g.client(
        &mut p,
        format!("GET /mcp HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\nMcp-Session-Id: {SID}\r\n\r\n").as_bytes(),
    );
    let zeros = format!("[{}]", vec!["0"; n].join(","));
    let ev = format!("data: {zeros}\n\n");
    let mut resp = format!("{}Transfer-Encoding: chunked\r\n\r\n", sse_head("")).into_bytes();
    resp.extend_from_slice(&chunked(ev.as_bytes()));
    resp.extend_from_slice(b"0\r\n\r\n");
    g.server(&mut p, &resp);
    g.close(&mut p);
    p.bytes
}

/// Holds already: `n` out-of-order segments on one connection (each ahead of a hole that is
/// never filled), 100 bytes each.
pub fn ooo_flood(n: u64) -> Vec<u8> {
    let mut p = Pcap::new();
    let mut c = Tcp::nth(1);
    c.open(&mut p);
    let base = c.seq[0];
    for k in 0..n {
        // Every other 100 bytes: holes between them.
        c.seq[0] = base.wrapping_add(200 * k as u32 + 100);
        let a = F {
            ack: true,
            ..F::default()
        };
        c.emit(&mut p, true, a, &[b'x'; 100]);
    }
    p.bytes
}

/// Holds already: an SSE response whose one line is `len` bytes long.
pub fn long_sse_line(len: usize) -> Vec<u8> {
    let mut p = Pcap::new();
    handshake(&mut p, 0);
    let mut g = Tcp::nth(1);
    g.open(&mut p);
    g.client(
        &mut p,
        format!("GET /mcp HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\nMcp-Session-Id: {SID}\r\n\r\n").as_bytes(),
    );
    g.server(&mut p, format!("{}\r\n", sse_head("")).as_bytes());
    g.server(&mut p, b"data: ");
    let block = vec![b'a'; 1 << 16];
    let mut left = len;
    while left > 0 {
        let k = left.min(block.len());
        g.send(&mut p, false, &block[..k], 1400);
        left -= k;
    }
    g.server(&mut p, b"\n\n");
    g.close(&mut p);
    p.bytes
}

/// Holds already: a JSON response body coded `coding` (`gzip` or `br`) that decodes to `len`
/// zero bytes.
pub fn decoding_bomb(len: u64, coding: &str) -> Vec<u8> {
    let mut body = Vec::new();
    let zeros = vec![0u8; 1 << 20];
    match coding {
        "br" => {
            let mut w = brotli::CompressorWriter::new(&mut body, 1 << 16, 5, 24);
            for _ in 0..len >> 20 {
                w.write_all(&zeros).expect("br");
            }
        }
        _ => {
            let mut z = flate2::write::GzEncoder::new(&mut body, flate2::Compression::fast());
            for _ in 0..len >> 20 {
                z.write_all(&zeros).expect("gzip");
            }
            z.finish().expect("gzip");
        }
    }
    let mut p = Pcap::new();
    handshake(&mut p, 0);
    let mut c = Tcp::nth(1);
    c.open(&mut p);
    c.client(
        &mut p,
        &post_bytes("", br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
    );
    let mut resp = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: {coding}\r\nMcp-Session-Id: {SID}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    resp.extend_from_slice(&body);
    c.server(&mut p, &resp);
    c.close(&mut p);
    p.bytes
}

/// Holds already: a port scan, `n` SYNs to other ports of the server each answered by a RST.
pub fn port_scan(n: u64) -> Vec<u8> {
    let mut p = Pcap::new();
    for k in 0..n {
        let mut c = Tcp::nth(k);
        c.syn(&mut p);
        c.reset(&mut p);
    }
    p.bytes
}
