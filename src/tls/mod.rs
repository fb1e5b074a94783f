//! Stage 3½: TLS between the TCP byte streams and HTTP.
//!
//! Fed by the same stream events as [`crate::http`] (bytes and gaps per direction,
//! [`crate::tcp::StreamEvent`]), sans-IO: a connection is TLS when its first bytes are a TLS
//! record header (RFC 8446 §5.1, RFC 5246 §6.2: content type 20–23, version 3.x, a length of at
//! most 2^14 + 2048), on any port. Its records are reassembled across segments (at most one
//! record held per direction); the ClientHello and ServerHello give the version
//! (`supported_versions` for TLS 1.3), the cipher suite, SNI and ALPN ([`hello`]).
//!
//! With the connection's secrets ([`keylog::Secrets`], from `--tls-keylog` or a pcapng
//! Decryption Secrets Block), records are opened ([`decrypt`]) and the plaintext goes on to the
//! HTTP stage as the connection's bytes, so everything above reads decrypted traffic as it reads
//! cleartext. A record lost to a capture gap is a gap in the plaintext, and decryption goes on
//! with the following sequence numbers. Without secrets nothing of the connection reaches HTTP:
//! the flows row says `decrypted` = `no_keys`, and the `undecrypted_tls` finding counts it.
//!
//! Every other connection's events pass through unchanged.

pub mod decrypt;
pub mod hello;
pub mod keylog;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use crate::anomaly::{Anomalies, Anomaly, Code};
use crate::tcp::{Chunk, Dir, FlowId, FlowMeta, StreamEvent, StreamSink};
use decrypt::{DirKeys, SEQ_WINDOW};
use hello::Hello;

/// The largest record body accepted (RFC 5246 §6.2.3: 2^14 + 2048 for a protected record).
pub const MAX_RECORD: usize = (1 << 14) + 2048;
/// The most bytes of a direction's first handshake message (a ClientHello or ServerHello) held
/// while it arrives over several records.
pub const MAX_HELLO: usize = 64 << 10;

/// Options of the TLS stage.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// The secrets to decrypt with (shared by every worker).
    pub secrets: Option<Arc<keylog::Secrets>>,
}

/// Whether a TLS connection's application data was decrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Decrypted {
    /// Every protected record opened.
    Yes,
    /// No secrets for the connection.
    NoKeys,
    /// Secrets were there, and some record did not open with them.
    Failed,
}

impl Decrypted {
    /// `ok`, `no_keys`, `failed`: the flows table's `decrypted` column (not `yes`, which
    /// DuckDB's CSV sniffing reads as a boolean when no other value is in the column).
    pub fn as_str(self) -> &'static str {
        match self {
            Decrypted::Yes => "ok",
            Decrypted::NoKeys => "no_keys",
            Decrypted::Failed => "failed",
        }
    }
}

/// What the TLS stage learnt of one TLS connection: the flows table's TLS columns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowTls {
    /// Index of the flow (`F<index>`).
    pub flow_index: usize,
    /// The client's and the server's address (the ClientHello's sender is the client; else the
    /// first sender).
    pub client: Option<(IpAddr, u16)>,
    /// See `client`.
    pub server: Option<(IpAddr, u16)>,
    /// Negotiated version code (ServerHello `supported_versions`, else its `legacy_version`),
    /// else the most the ClientHello offered.
    pub version: Option<u16>,
    /// The cipher suite the ServerHello chose (IANA code).
    pub cipher: Option<u16>,
    /// ClientHello `server_name`.
    pub sni: Option<String>,
    /// The protocol the server chose (a TLS 1.2 ServerHello's; a TLS 1.3 server's
    /// EncryptedExtensions, once decrypted), else those the ClientHello offered
    /// (comma-separated).
    pub alpn: Option<String>,
    /// Protected records that carried (or, unopened, may carry) application data: TLS 1.2
    /// `application_data` records; TLS 1.3 records of the client after its first (its
    /// Finished) and of the server after the client's first.
    pub app_records: u64,
    /// Records opened.
    pub opened: u64,
    /// Records that did not open with the connection's secrets.
    pub failed: u64,
    /// Whether secrets for the connection were found.
    pub keyed: bool,
    /// Time (µs) and frame of the first application-data record.
    pub first_app: Option<(i64, u64)>,
    /// Time (µs) and frame of the last application-data record.
    pub last_app: Option<(i64, u64)>,
    /// The ClientHello's random (RFC 8446 §4.1.2), by which a key log names the connection.
    pub client_random: Option<[u8; 32]>,
}

impl FlowTls {
    /// The `decrypted` column.
    pub fn decrypted(&self) -> Decrypted {
        if self.failed > 0 || self.keyed && self.opened == 0 && self.app_records > 0 {
            Decrypted::Failed
        } else if self.keyed && self.opened > 0 {
            Decrypted::Yes
        } else {
            Decrypted::NoKeys
        }
    }

    /// The version's name (`TLSv1.3`).
    pub fn version_name(&self) -> Option<String> {
        self.version.map(hello::version_name)
    }

    /// The cipher suite's name.
    pub fn cipher_name(&self) -> Option<String> {
        self.cipher.map(hello::cipher_name)
    }

    /// Whether it carried application data that was not (all) decrypted: `no_keys` or
    /// `failed` with application-data records.
    pub fn undecrypted(&self) -> bool {
        self.app_records > 0 && self.decrypted() != Decrypted::Yes
    }

    /// Move its times by `us` microseconds (onto another vantage point's clock).
    pub fn shift_time(&mut self, us: i64) {
        for t in [&mut self.first_app, &mut self.last_app]
            .into_iter()
            .flatten()
        {
            t.0 = t.0.saturating_add(us);
        }
    }
}

/// Where a direction's record stream stands.
#[derive(Debug, Default)]
struct Side {
    /// Bytes of a record not yet complete (at most one record).
    buf: Vec<u8>,
    /// Bytes of a record lost to a gap still to come: skipped.
    skip: u64,
    /// The record boundaries were lost in a gap: searching for a record header.
    lost: bool,
    /// The first handshake message so far, until parsed.
    hello: Vec<u8>,
    hello_done: bool,
    /// ChangeCipherSpec seen (TLS 1.2: the direction is protected from here).
    ccs: bool,
    /// Records of type application_data (23).
    app_type_records: u64,
    keys: Option<DirKeys>,
    /// Plaintext offset handed to HTTP.
    plain_off: u64,
    /// Try sequence numbers ahead at the next record (its predecessors were lost).
    resync: bool,
}

#[derive(Debug, Default)]
struct Conn {
    sides: [Side; 2],
    /// The direction of the ClientHello.
    client: Option<Dir>,
    ch: Option<Hello>,
    sh: Option<Hello>,
    info: FlowTls,
    /// A bad record stopped the connection's reading.
    dead: bool,
    /// TLS 1.3: the server's first decrypted handshake record was read for its
    /// EncryptedExtensions (the ALPN it chose).
    ee_read: bool,
}

/// The TLS stage: TLS connections' records and hellos, their plaintext handed on.
#[derive(Debug, Default)]
pub struct TlsLayer {
    /// Options.
    pub options: TlsOptions,
    conns: crate::hash::FastMap<usize, Box<Conn>>,
    /// Open connections that are not TLS: their events pass through.
    plain: crate::hash::FastSet<usize>,
    /// Every TLS connection seen, by flow index (closed ones; open ones join at their close).
    pub flows: BTreeMap<usize, FlowTls>,
    /// Anomalies raised (`tls.*`).
    pub anomalies: Anomalies,
}

impl TlsLayer {
    /// Whether [`TlsLayer::event`] would hand `ev` of flow `fi` on unchanged and keep no state
    /// of it: a connection already known not to be TLS (its chunks), and every event but a
    /// chunk or the close. The stage above may then take the event itself.
    pub fn passes_through(&self, fi: usize, ev: &StreamEvent<'_>) -> bool {
        match ev {
            StreamEvent::Chunk(..) => !self.plain.is_empty() && self.plain.contains(&fi),
            StreamEvent::Close => false,
            _ => true,
        }
    }
}

/// Whether `b` starts like a TLS record (as much of the header as there is).
pub fn looks_like_tls(b: &[u8]) -> bool {
    matches!(b.first(), Some(20..=23))
        && b.get(1).is_none_or(|&v| v == 3)
        && b.get(2).is_none_or(|&m| m <= 4)
}

/// A record header's (type, length), when it is one.
fn header(b: &[u8]) -> Option<(u8, usize)> {
    let h = b.get(..5)?;
    let len = u16::from_be_bytes([h[3], h[4]]) as usize;
    (matches!(h[0], 20..=24) && h[1] == 3 && h[2] <= 4 && len <= MAX_RECORD).then_some((h[0], len))
}

impl TlsLayer {
    /// A stage with the given options.
    pub fn new(options: TlsOptions) -> TlsLayer {
        TlsLayer {
            options,
            ..Default::default()
        }
    }

    /// One stream event: passed on to `next` for connections that are not TLS, the plaintext
    /// of TLS connections (bytes, gaps, their ends) otherwise.
    pub fn event(
        &mut self,
        flow: FlowMeta,
        ev: StreamEvent<'_>,
        ts: i64,
        frame: u64,
        next: &mut impl StreamSink,
    ) {
        let fi = flow.index;
        match ev {
            StreamEvent::Chunk(d, chunk) => {
                if !self.plain.is_empty() && self.plain.contains(&fi) {
                    return next.event(flow, ev, ts, frame);
                }
                let mut c = match self.conns.remove(&fi) {
                    Some(c) => c,
                    None => match chunk {
                        // Nothing to decide on yet.
                        Chunk::Data { bytes: [], .. } | Chunk::Gap { .. } => {
                            return next.event(flow, ev, ts, frame)
                        }
                        Chunk::Data { bytes, .. } if looks_like_tls(bytes) => {
                            let mut c = Box::<Conn>::default();
                            c.info.flow_index = fi;
                            c
                        }
                        Chunk::Data { .. } => {
                            self.plain.insert(fi);
                            return next.event(flow, ev, ts, frame);
                        }
                    },
                };
                match chunk {
                    Chunk::Data { bytes, .. } => {
                        self.push(&mut c, &flow, d, bytes, ts, frame, next)
                    }
                    Chunk::Gap { len, .. } => self.gap(&mut c, &flow, d, len, ts, frame, next),
                }
                self.conns.insert(fi, c);
            }
            StreamEvent::Close => {
                self.plain.remove(&fi);
                if let Some(c) = self.conns.remove(&fi) {
                    self.close(*c, &flow, frame);
                }
                next.event(flow, ev, ts, frame);
            }
            _ => next.event(flow, ev, ts, frame),
        }
    }

    /// A connection's last word: its row, and `tls.no_keys` / `tls.decrypt_failed` when its
    /// application data was not read.
    fn close(&mut self, mut c: Conn, flow: &FlowMeta, frame: u64) {
        for s in &c.sides {
            if !s.buf.is_empty() && !s.lost && !c.dead {
                self.bad(
                    Code::TlsTruncatedRecord,
                    flow,
                    frame,
                    format!(
                        "the connection ended {} bytes into a TLS record",
                        s.buf.len()
                    ),
                );
            }
        }
        let client = c.client.unwrap_or(0);
        c.info.client = Some(flow.ends[client]);
        c.info.server = Some(flow.ends[1 - client]);
        if c.info.app_records > 0 {
            let (code, why) = match c.info.decrypted() {
                Decrypted::Yes => (None, String::new()),
                Decrypted::NoKeys => (
                    Some(Code::TlsNoKeys),
                    "no secrets for this TLS connection: its application data (any MCP in it) is not seen".to_string(),
                ),
                Decrypted::Failed => (
                    Some(Code::TlsDecryptFailed),
                    format!(
                        "{} of {} protected records did not open with the connection's secrets",
                        c.info.failed,
                        c.info.opened + c.info.failed
                    ),
                ),
            };
            if let Some(code) = code {
                let at = c.info.first_app.map_or(frame, |(_, f)| f);
                self.anomalies
                    .add(Anomaly::new(code, Some(at), Some(flow.flow_id()), why));
            }
        }
        self.flows.insert(flow.index, c.info);
    }

    fn bad(&mut self, code: Code, flow: &FlowMeta, frame: u64, detail: String) {
        self.anomalies.add(Anomaly::new(
            code,
            Some(frame),
            Some(FlowId(flow.index).to_string()),
            detail,
        ));
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        c: &mut Conn,
        flow: &FlowMeta,
        d: Dir,
        mut bytes: &[u8],
        ts: i64,
        frame: u64,
        next: &mut impl StreamSink,
    ) {
        if c.dead {
            return;
        }
        let s = &mut c.sides[d];
        if s.skip > 0 {
            let n = (s.skip.min(bytes.len() as u64)) as usize;
            s.skip -= n as u64;
            bytes = &bytes[n..];
        }
        if !s.lost && s.buf.is_empty() {
            // Whole records at the start of the chunk are read where they are, not copied.
            while let Some((typ, len)) = header(bytes).filter(|&(_, len)| bytes.len() >= 5 + len) {
                let (rec, rest) = bytes.split_at(5 + len);
                self.record(c, flow, d, typ, rec, ts, frame, next);
                if c.dead {
                    return;
                }
                bytes = rest;
            }
        }
        let s = &mut c.sides[d];
        s.buf.extend_from_slice(bytes);
        if s.lost {
            // A header of a protected record, then another or the end: where records resume.
            let at = (0..s.buf.len().saturating_sub(4)).find(|&i| {
                header(&s.buf[i..]).is_some_and(|(t, len)| {
                    t == 23
                        && (s.buf.len() < i + 5 + len + 5
                            || header(&s.buf[i + 5 + len..]).is_some())
                })
            });
            match at {
                Some(i) => {
                    s.buf.drain(..i);
                    s.lost = false;
                    s.resync = true;
                }
                None => {
                    let keep = s.buf.len().saturating_sub(MAX_RECORD + 5);
                    s.buf.drain(..keep);
                    return;
                }
            }
        }
        let mut at = 0;
        loop {
            let s = &c.sides[d];
            let rest = &s.buf[at..];
            if rest.len() < 5 {
                break;
            }
            let Some((typ, len)) = header(rest) else {
                let h = rest[..5].to_vec();
                self.bad(
                    Code::TlsBadRecord,
                    flow,
                    frame,
                    format!(
                        "not a TLS record header: {h:02x?}; the connection is not read further"
                    ),
                );
                c.dead = true;
                c.sides[d].buf.clear();
                return;
            };
            if rest.len() < 5 + len {
                break;
            }
            let rec: Vec<u8> = rest[..5 + len].to_vec();
            at += 5 + len;
            self.record(c, flow, d, typ, &rec, ts, frame, next);
            if c.dead {
                return;
            }
        }
        c.sides[d].buf.drain(..at);
    }

    /// One whole record (`rec`: header and body) of direction `d`.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        c: &mut Conn,
        flow: &FlowMeta,
        d: Dir,
        typ: u8,
        rec: &[u8],
        ts: i64,
        frame: u64,
        next: &mut impl StreamSink,
    ) {
        let tls13 = c.sh.as_ref().is_some_and(|h| h.version() == 0x0304);
        let body = &rec[5..];
        let protected = if tls13 {
            typ == 23
        } else {
            c.sides[d].ccs && typ != 20
        };
        if !protected {
            match typ {
                20 => c.sides[d].ccs = true,
                22 if !c.sides[d].hello_done => self.hello(c, flow, d, body, frame),
                _ => {}
            }
            return;
        }
        if typ == 23 {
            c.sides[d].app_type_records += 1;
        }
        // TLS 1.3 without keys: the client's first protected record is its Finished, and the
        // server's records before the client's first are its handshake.
        let app = typ == 23
            && (!tls13 || {
                let client = c.client.unwrap_or(0);
                let client_n = c.sides[client].app_type_records;
                if d == client {
                    client_n > 1
                } else {
                    client_n > 0
                }
            });
        if app {
            c.info.app_records += 1;
            c.info.first_app.get_or_insert((ts, frame));
            c.info.last_app = Some((ts, frame));
        }
        let s = &mut c.sides[d];
        let Some(keys) = s.keys.as_mut().filter(|k| k.usable()) else {
            return;
        };
        let Ok(h) = <[u8; 5]>::try_from(&rec[..5]) else {
            return;
        };
        let window = if std::mem::take(&mut s.resync) {
            SEQ_WINDOW
        } else {
            0
        };
        match keys.open(&h, body, window) {
            Some(o) => {
                c.info.opened += 1;
                if tls13 && o.typ == 22 && Some(d) != c.client && !c.ee_read {
                    // The protocol chosen is in the encrypted flight (RFC 8446 §4.3.1).
                    c.ee_read = true;
                    if let Some(p) = hello::encrypted_extensions_alpn(&o.bytes) {
                        c.info.alpn = Some(p);
                    }
                }
                if o.typ == 23 && !o.bytes.is_empty() {
                    let offset = s.plain_off;
                    s.plain_off += o.bytes.len() as u64;
                    next.event(
                        *flow,
                        StreamEvent::Chunk(
                            d,
                            Chunk::Data {
                                offset,
                                bytes: &o.bytes,
                            },
                        ),
                        ts,
                        frame,
                    );
                }
            }
            None => {
                c.info.failed += 1;
                keys.skip();
                let len = body.len().saturating_sub(17) as u64;
                let offset = s.plain_off;
                s.plain_off += len;
                if len > 0 {
                    next.event(
                        *flow,
                        StreamEvent::Chunk(d, Chunk::Gap { offset, len }),
                        ts,
                        frame,
                    );
                }
            }
        }
    }

    /// A plaintext handshake record before the direction's hello was read.
    fn hello(&mut self, c: &mut Conn, flow: &FlowMeta, d: Dir, body: &[u8], frame: u64) {
        let s = &mut c.sides[d];
        s.hello.extend_from_slice(body);
        if s.hello.len() < 4 {
            return;
        }
        let (typ, len) = (
            s.hello[0],
            u32::from_be_bytes([0, s.hello[1], s.hello[2], s.hello[3]]) as usize,
        );
        if len > MAX_HELLO {
            s.hello_done = true;
            s.hello = Vec::new();
            return self.bad(
                Code::TlsHelloTooLong,
                flow,
                frame,
                format!("handshake message of {len} bytes, over {MAX_HELLO}: not read"),
            );
        }
        if s.hello.len() < 4 + len {
            return;
        }
        s.hello_done = true;
        let msg = std::mem::take(&mut s.hello);
        let client = match typ {
            hello::CLIENT_HELLO => true,
            hello::SERVER_HELLO => false,
            _ => return,
        };
        let Some(h) = hello::parse(&msg[4..4 + len], client) else {
            return self.bad(
                Code::TlsBadHello,
                flow,
                frame,
                format!(
                    "{} that does not parse",
                    if client { "ClientHello" } else { "ServerHello" }
                ),
            );
        };
        if client {
            c.client = Some(d);
            c.info.sni = h.sni.clone();
            c.info.version = Some(h.version());
            c.info.client_random = Some(h.random);
            if c.info.alpn.is_none() && !h.alpn.is_empty() {
                c.info.alpn = Some(h.alpn.join(","));
            }
            c.ch = Some(h);
        } else {
            if c.client.is_none() {
                c.client = Some(1 - d);
            }
            c.info.version = Some(h.version());
            c.info.cipher = h.ciphers.first().copied();
            if let Some(a) = h.alpn.first() {
                c.info.alpn = Some(a.clone());
            }
            c.sh = Some(h);
            self.keys(c);
        }
    }

    /// Both hellos seen: the directions' keys from the secrets of the connection, if any.
    fn keys(&mut self, c: &mut Conn) {
        let (Some(ch), Some(sh), Some(client)) = (&c.ch, &c.sh, c.client) else {
            return;
        };
        let Some(sec) = self
            .options
            .secrets
            .as_ref()
            .and_then(|s| s.get(&ch.random))
        else {
            return;
        };
        let Some((alg, hash)) = sh.ciphers.first().and_then(|&s| decrypt::suite(s)) else {
            return;
        };
        c.info.keyed = true;
        let (ck, sk) = if sh.version() == 0x0304 {
            (
                Some(DirKeys::tls13(
                    alg,
                    hash,
                    sec.client_hs.as_deref(),
                    sec.client_app.as_deref(),
                )),
                Some(DirKeys::tls13(
                    alg,
                    hash,
                    sec.server_hs.as_deref(),
                    sec.server_app.as_deref(),
                )),
            )
        } else if let Some(m) = &sec.master {
            (
                DirKeys::tls12(alg, hash, m, &ch.random, &sh.random, true),
                DirKeys::tls12(alg, hash, m, &ch.random, &sh.random, false),
            )
        } else {
            (None, None)
        };
        c.sides[client].keys = ck;
        c.sides[1 - client].keys = sk;
    }

    /// `len` bytes of direction `d` never captured.
    #[allow(clippy::too_many_arguments)]
    fn gap(
        &mut self,
        c: &mut Conn,
        flow: &FlowMeta,
        d: Dir,
        len: u64,
        ts: i64,
        frame: u64,
        next: &mut impl StreamSink,
    ) {
        if c.dead {
            return;
        }
        let s = &mut c.sides[d];
        if s.lost {
            s.buf.clear();
            return;
        }
        if s.skip >= len {
            s.skip -= len;
            return;
        }
        let len = len - s.skip;
        s.skip = 0;
        // What is left of the record the gap began in, when its header was seen.
        let left = header(&s.buf).map(|(_, n)| (5 + n - s.buf.len()) as u64);
        match left {
            Some(left) if len <= left => {
                s.skip = left - len;
                if let Some(k) = s.keys.as_mut() {
                    k.skip();
                }
            }
            _ => {
                s.lost = true;
                s.resync = true;
                if left.is_some() {
                    if let Some(k) = s.keys.as_mut() {
                        k.skip();
                    }
                }
            }
        }
        s.buf.clear();
        let decrypting = s.keys.as_ref().is_some_and(DirKeys::usable);
        let offset = s.plain_off;
        if decrypting {
            s.plain_off += len;
            next.event(
                *flow,
                StreamEvent::Chunk(d, Chunk::Gap { offset, len }),
                ts,
                frame,
            );
        }
        self.bad(
            Code::TlsGap,
            flow,
            frame,
            format!("{len} bytes of TLS records lost in a capture gap: their plaintext is a gap"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    /// Records the plaintext handed on.
    #[derive(Default)]
    struct Rec(Vec<String>);

    impl StreamSink for Rec {
        fn event(&mut self, _: FlowMeta, ev: StreamEvent<'_>, _: i64, _: u64) {
            self.0.push(format!("{ev:?}"));
        }
    }

    fn flow() -> FlowMeta {
        let a = IpAddr::V4(Ipv4Addr::LOCALHOST);
        FlowMeta {
            index: 0,
            ends: [(a, 40000), (a, 443)],
            client_by_syn: true,
        }
    }

    /// A ClientHello record, then (as after a TLS 1.2 ChangeCipherSpec) two application-data
    /// records: made here after RFC 5246 §6.2.
    fn client_stream() -> Vec<u8> {
        let body = hello::tests::client_hello();
        let mut hs = vec![1, 0, (body.len() >> 8) as u8, body.len() as u8];
        hs.extend(body);
        let mut b = vec![22, 3, 1, (hs.len() >> 8) as u8, hs.len() as u8];
        b.extend(hs);
        b.extend([20, 3, 3, 0, 1, 1]);
        for n in [40u16, 300] {
            b.extend([23, 3, 3, 0, 0]);
            let at = b.len() - 2;
            b[at..].copy_from_slice(&n.to_be_bytes());
            b.extend(std::iter::repeat_n(0xee, n as usize));
        }
        b
    }

    fn run(pieces: &[&[u8]]) -> (FlowTls, Vec<String>, u64) {
        let mut t = TlsLayer::default();
        let mut rec = Rec::default();
        let mut off = 0;
        for p in pieces.iter().filter(|p| !p.is_empty()) {
            let ch = Chunk::Data {
                offset: off,
                bytes: p,
            };
            off += p.len() as u64;
            t.event(flow(), StreamEvent::Chunk(0, ch), 1, 1, &mut rec);
        }
        t.event(flow(), StreamEvent::Close, 2, 2, &mut rec);
        (t.flows[&0].clone(), rec.0, t.anomalies.total())
    }

    /// Whole, byte by byte and split at every index: the same hello, the same records counted,
    /// nothing of the ciphertext handed on.
    #[test]
    fn records_split_anywhere_read_alike() {
        let b = client_stream();
        let whole = run(&[&b]);
        assert_eq!(whole.0.sni.as_deref(), Some("example.com"));
        assert_eq!(whole.0.version, Some(0x0304));
        assert_eq!(whole.0.app_records, 2);
        assert_eq!(whole.0.decrypted(), Decrypted::NoKeys);
        assert_eq!(whole.1, vec!["Close".to_string()]);
        assert_eq!(whole.2, 1); // tls.no_keys
        let bytes: Vec<&[u8]> = b.chunks(1).collect();
        assert_eq!(run(&bytes), whole);
        for i in 0..b.len() {
            assert_eq!(run(&[&b[..i], &b[i..]]), whole, "split at {i}");
        }
    }

    /// A connection whose first bytes are HTTP passes through untouched.
    #[test]
    fn cleartext_passes_through() {
        let mut t = TlsLayer::default();
        let mut rec = Rec::default();
        let ch = Chunk::Data {
            offset: 0,
            bytes: b"GET / HTTP/1.1\r\n",
        };
        t.event(flow(), StreamEvent::Chunk(0, ch), 1, 1, &mut rec);
        assert_eq!(rec.0.len(), 1);
        assert!(rec.0[0].contains("Data"));
        assert!(t.flows.is_empty() && t.anomalies.total() == 0);
    }

    /// A record header that is none stops the connection, counted once.
    #[test]
    fn bad_record_is_counted_and_stops() {
        let (_, _, n) = run(&[&[22, 3, 3, 0, 2, 1, 0, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99]]);
        assert_eq!(n, 1);
    }
}
