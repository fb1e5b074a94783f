//! The `exchanges` as a HAR 1.2 document ("HTTP Archive 1.2", Jan Odvarko,
//! <http://www.softwareishard.com/blog/har-12-spec/>; the W3C Web Performance draft "HTTP Archive
//! (HAR) format"), for the tools that read HAR: browsers' developer tools (import), HAR
//! viewers.
//!
//! One `entries[]` item per exchange, in the order of the `exchanges` table; one `pages[]` item
//! per MCP session (the `sessions` table's rows), each entry's `pageref` its session, so that a
//! viewer groups the exchanges by session. Times are capture times. What mcpcap does not keep is
//! left out rather than invented, and said in the objects' `comment`:
//!
//! - bodies: only their lengths and JSON-RPC messages are kept, so `postData` and `content` have
//!   no `text`; an error response's excerpt is `content._excerpt`;
//! - the time of a request's last byte: `timings.send` is 0 and `wait` runs from the request's
//!   first byte to the response's first byte;
//! - head sizes: `headersSize` is -1.
//!
//! Fields of mcpcap's own (HAR allows names starting with `_`; their members have the names of
//! the tables' columns, `docs/tables.md`): `_mcp` on each entry (session, logical stream and its
//! verdict, flow, frames), `_sseEvents` on an SSE response's entry (its events, each the
//! `events` table's row without the columns `_mcp` has), `_tls` on an entry of a TLS
//! connection, `_verdict` and `_protocol_version` on each page. `docs/har.md` has the mapping.
//!
//! The document is written entry by entry (and an entry's events one by one) to any
//! [`Write`]: memory does not grow with the capture.

use std::io::Write;

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::tables::{self, FlowsPart};
use super::{format_ts, Values};
use crate::detect::Analysis;
use crate::http::{EventLog, EventRec, Exchange, Head, MessageRef};
use crate::tcp::FlowId;
use crate::tls::FlowTls;

/// What a HAR document is written from: the detectors' results, every exchange (the order of
/// the `exchanges` table) and each vantage point's flows (for their TLS facts).
#[derive(Clone, Copy)]
pub struct HarInput<'a> {
    /// The detectors' results (session model, resumptions).
    pub analysis: &'a Analysis,
    /// Every exchange, in time order.
    pub exchanges: &'a [Exchange],
    /// Each vantage point's flows: an exchange on a flow the TLS stage knows is `https`.
    pub flows: &'a [FlowsPart<'a>],
}

/// Write the HAR 1.2 document of `input` to `w`: one JSON object, `log` with `version` `"1.2"`,
/// `creator` (`mcpcap` and this crate's version), `pages` (one per session) and `entries` (one
/// per exchange), each entry on a line of its own.
///
/// Errors: writing to `w` fails (the I/O error as it came, so that a caller can tell a closed
/// pipe).
pub fn write_har(w: &mut impl Write, input: HarInput<'_>) -> std::io::Result<()> {
    let a = input.analysis;
    let ex = input.exchanges;
    let m = &a.model;
    w.write_all(b"{\"log\":{\"version\":\"1.2\",\"creator\":")?;
    serde_json::to_writer(
        &mut *w,
        &NameVersion {
            name: "mcpcap",
            version: env!("CARGO_PKG_VERSION"),
        },
    )?;
    w.write_all(b",\"comment\":")?;
    serde_json::to_writer(&mut *w, LOG_COMMENT)?;
    w.write_all(b",\"pages\":[")?;
    let sessions = tables::sessions(a, ex);
    let column = |name: &str| {
        sessions
            .columns
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    };
    let (verdicts, versions, firsts) = (
        column("verdict"),
        column("protocol_version"),
        column("ts_first"),
    );
    for (i, s) in m.sessions.iter().enumerate() {
        w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
        let page = Page {
            started_date_time: format_ts(clamp(match firsts {
                Some(Values::Ts(t)) => t.get(i).copied().flatten().unwrap_or(0),
                _ => 0,
            })),
            id: s.label_str(),
            title: format!("MCP session {}", s.label_str()),
            page_timings: PageTimings {
                on_content_load: -1,
                on_load: -1,
            },
            verdict: text_at(verdicts, i),
            protocol_version: text_at(versions, i),
        };
        serde_json::to_writer(&mut *w, &page)?;
    }
    drop(sessions);
    w.write_all(b"\n],\"entries\":[")?;
    let verdicts = tables::stream_verdicts(a);
    for (i, e) in ex.iter().enumerate() {
        w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
        let tls = input.flows.iter().find_map(|p| p.tls.get(&e.flow_index));
        let stream = m.exchange_stream.get(i).copied().flatten();
        let session = m
            .exchange_session
            .get(i)
            .and_then(|&s| m.sessions.get(s))
            .map_or("none", |s| s.label_str());
        let mcp = Mcp {
            e,
            session_id: session,
            stream_id: stream.map(|s| format!("S{s}")),
            verdict: stream.and_then(|s| verdicts.get(s).copied()),
            hop_of: m
                .hops
                .primary
                .get(i)
                .copied()
                .flatten()
                .and_then(|p| ex.get(p))
                .map(|p| format!("{}#{}", FlowId(p.flow_index), p.trans_depth)),
            backend: m.backend(i),
        };
        serde_json::to_writer(&mut *w, &entry(e, session, tls, mcp))?;
    }
    w.write_all(b"\n]}}\n")
}

/// `log.comment`: what the document leaves out.
const LOG_COMMENT: &str = "Written by mcpcap from packet captures (capture times). Bodies are not kept: postData and content carry no text; JSON-RPC messages are summarised in _mcp and _sseEvents. timings.send is 0 (the request's last byte is not kept) and wait runs from the request's first byte.";

/// The `i`-th value of a text column, if any.
fn text_at(v: Option<&Values>, i: usize) -> Option<&str> {
    match v {
        Some(Values::Str(t)) => t.get(i),
        _ => None,
    }
}

/// A time as tables write it, clamped to the years they can show.
fn clamp(us: i64) -> i64 {
    crate::capture::clamp_ts(us)
}

/// `creator`.
#[derive(serde::Serialize)]
struct NameVersion<'a> {
    name: &'a str,
    version: &'a str,
}

/// A `pages[]` item: one MCP session.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Page<'a> {
    started_date_time: String,
    id: &'a str,
    title: String,
    page_timings: PageTimings,
    #[serde(rename = "_verdict")]
    verdict: Option<&'a str>,
    #[serde(rename = "_protocol_version")]
    protocol_version: Option<&'a str>,
}

/// `pageTimings`: no page loads in a capture of MCP.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PageTimings {
    on_content_load: i64,
    on_load: i64,
}

/// An `entries[]` item.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Entry<'a> {
    pageref: &'a str,
    started_date_time: String,
    time: f64,
    request: Request<'a>,
    response: Response<'a>,
    cache: Empty,
    timings: Timings,
    #[serde(rename = "serverIPAddress", skip_serializing_if = "Option::is_none")]
    server_ip_address: Option<String>,
    connection: String,
    #[serde(rename = "_mcp")]
    mcp: Mcp<'a>,
    #[serde(rename = "_sseEvents", skip_serializing_if = "Option::is_none")]
    sse_events: Option<SseEvents<'a>>,
    #[serde(rename = "_tls", skip_serializing_if = "Option::is_none")]
    tls: Option<Tls>,
}

/// `cache`: nothing is known of caches.
#[derive(serde::Serialize)]
struct Empty {}

/// The entry of exchange `e` of session `session`; `tls` when its flow is TLS.
fn entry<'a>(
    e: &'a Exchange,
    session: &'a str,
    tls: Option<&'a FlowTls>,
    mcp: Mcp<'a>,
) -> Entry<'a> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let timings = timings(e);
    Entry {
        pageref: session,
        started_date_time: format_ts(clamp(e.ts())),
        time: timings.total(),
        request: request(e, scheme),
        response: response(e),
        cache: Empty {},
        timings,
        server_ip_address: e.server.map(|(ip, _)| ip.to_string()),
        connection: FlowId(e.flow_index).to_string(),
        mcp,
        sse_events: (e.is_sse || !e.sse.events.is_empty()).then_some(SseEvents(&e.sse.events)),
        tls: tls.map(|t| Tls {
            tls_version: t.version_name(),
            tls_cipher: t.cipher_name(),
            sni: t.sni.clone(),
            alpn: t.alpn.clone(),
        }),
    }
}

/// `timings`, in milliseconds (µs precision). `blocked`, `dns`, `connect` and `ssl` are -1 (not
/// measured). `send` is 0 when the request was captured (the time of its last byte is not kept),
/// `wait` from the request's first byte to the response's, `receive` from the response's first
/// byte to its end (`ts_end`); each -1 when a time it needs was not captured.
#[derive(serde::Serialize)]
struct Timings {
    blocked: f64,
    dns: f64,
    connect: f64,
    ssl: f64,
    send: f64,
    wait: f64,
    receive: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    comment: Option<&'static str>,
}

impl Timings {
    /// `time`: the sum of the timings that are not -1 (HAR 1.2 `entries.time`).
    fn total(&self) -> f64 {
        let us: i64 = [self.send, self.wait, self.receive]
            .into_iter()
            .filter(|t| *t >= 0.0)
            .map(|t| (t * 1000.0).round() as i64)
            .sum();
        ms(us)
    }
}

/// Microseconds as milliseconds.
fn ms(us: i64) -> f64 {
    us as f64 / 1000.0
}

/// The timings of `e` (see [`Timings`]).
fn timings(e: &Exchange) -> Timings {
    let span = |from: Option<i64>, to: Option<i64>| match (from, to) {
        (Some(a), Some(b)) => ms(b.saturating_sub(a).max(0)),
        _ => -1.0,
    };
    let end = e.ts_end.or(e.ts_last_byte).or(e.ts_response);
    let comment = match (e.ts_request, e.ts_response) {
        (Some(_), Some(_)) => None,
        (Some(_), None) => Some("no response captured: wait and receive are unknown"),
        (None, _) => Some("the request was not captured: send and wait are unknown"),
    };
    Timings {
        blocked: -1.0,
        dns: -1.0,
        connect: -1.0,
        ssl: -1.0,
        send: if e.ts_request.is_some() { 0.0 } else { -1.0 },
        wait: span(e.ts_request, e.ts_response),
        receive: span(e.ts_response, e.ts_response.and(end)),
        comment,
    }
}

/// `HTTP/1.<minor>` of a head, `HTTP/2` of one read from HTTP/2.
fn http_version(h: Option<&Head>) -> String {
    h.map_or(String::new(), |h| match h.version {
        2 => "HTTP/2".to_string(),
        v => format!("HTTP/1.{v}"),
    })
}

/// A `request`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Request<'a> {
    method: &'a str,
    url: String,
    http_version: String,
    cookies: Cookies<'a>,
    headers: Headers<'a>,
    query_string: Query<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    post_data: Option<PostData<'a>>,
    headers_size: i64,
    body_size: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    comment: Option<&'static str>,
}

/// The `request` of `e`, its URL of `scheme`. Without a captured request: empty method and
/// version, the URL of the server's address without a path, no headers.
fn request<'a>(e: &'a Exchange, scheme: &str) -> Request<'a> {
    let h = e.request.as_ref();
    let target = h.map_or("", |h| h.target.as_str());
    let authority = e
        .req_header("host")
        .map(str::to_string)
        .or_else(|| e.server.map(|(ip, port)| authority_of(ip, port)));
    Request {
        method: e.method(),
        url: url(
            scheme,
            authority.as_deref(),
            target,
            h.map(|h| h.method.as_str()),
        ),
        http_version: http_version(h),
        cookies: Cookies {
            head: h,
            set: false,
        },
        headers: Headers(h),
        query_string: Query(query_of(target)),
        post_data: (h.is_some() && e.req_body_len > 0).then(|| PostData {
            mime_type: e.req_header("content-type").unwrap_or(""),
            comment:
                "the body is not kept (its length is bodySize; its JSON-RPC messages are in _mcp)",
        }),
        headers_size: -1,
        body_size: if h.is_some() {
            e.req_body_len as i64
        } else {
            -1
        },
        comment: match (h.is_some(), e.req_gap) {
            (false, _) => {
                Some("the request was not captured (the capture began inside its response)")
            }
            (true, true) => Some("bytes of the request are missing from the capture"),
            _ => None,
        },
    }
}

/// `host:port` of an address (IPv6 in brackets, RFC 3986 §3.2.2).
fn authority_of(ip: std::net::IpAddr, port: u16) -> String {
    match ip {
        std::net::IpAddr::V6(v6) => format!("[{v6}]:{port}"),
        v4 => format!("{v4}:{port}"),
    }
}

/// The absolute URL of a request (RFC 9112 §3.3: reconstructing the target URI) to `authority`
/// with `target`: an absolute-form target as it is, an authority-form one (`CONNECT`) after the
/// scheme, `*` or an empty target as the authority alone; the fragment is never sent. Empty
/// when nothing names the server.
fn url(scheme: &str, authority: Option<&str>, target: &str, method: Option<&str>) -> String {
    if target.contains("://") {
        return target.to_string();
    }
    if method == Some("CONNECT") {
        return format!("{scheme}://{target}");
    }
    let Some(authority) = authority else {
        return String::new();
    };
    if target.starts_with('/') {
        format!("{scheme}://{authority}{target}")
    } else {
        format!("{scheme}://{authority}")
    }
}

/// The query of a target (after `?`, before any `#`), or "".
fn query_of(target: &str) -> &str {
    let q = target.split_once('?').map_or("", |(_, q)| q);
    q.split_once('#').map_or(q, |(q, _)| q)
}

/// `queryString`: the query's `name=value` pairs in order, as in the URL (not percent-decoded);
/// a pair without `=` has an empty value.
struct Query<'a>(&'a str);

impl Serialize for Query<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.split('&').filter(|p| !p.is_empty()).map(|p| {
            let (name, value) = p.split_once('=').unwrap_or((p, ""));
            NameValue { name, value }
        }))
    }
}

/// A `headers[]` or `queryString[]` item.
#[derive(serde::Serialize)]
struct NameValue<'a> {
    name: &'a str,
    value: &'a str,
}

/// `headers`: a head's fields in order, names as sent (none without a head).
struct Headers<'a>(Option<&'a Head>);

impl Serialize for Headers<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.0
                .into_iter()
                .flat_map(|h| h.headers())
                .map(|(name, value)| NameValue { name, value }),
        )
    }
}

/// `cookies`: a request's `Cookie` pairs (RFC 6265 §4.2), or (`set`) a response's `Set-Cookie`
/// cookies (§4.1) with their `Path`, `Domain`, `HttpOnly` and `Secure` attributes; `Expires` is
/// an HTTP date, not the ISO 8601 time HAR wants, and is left out.
struct Cookies<'a> {
    head: Option<&'a Head>,
    set: bool,
}

/// A `cookies[]` item.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Cookie<'a> {
    name: &'a str,
    value: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    domain: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    http_only: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    secure: Option<bool>,
}

/// `name=value` of a cookie pair, trimmed (a pair without `=` is a name with an empty value).
fn pair(p: &str) -> (&str, &str) {
    let (n, v) = p.split_once('=').unwrap_or((p, ""));
    (n.trim(), v.trim())
}

/// The cookie of one `Set-Cookie` value.
fn set_cookie(v: &str) -> Cookie<'_> {
    let mut parts = v.split(';');
    let (name, value) = pair(parts.next().unwrap_or(""));
    let mut c = Cookie {
        name,
        value,
        path: None,
        domain: None,
        http_only: None,
        secure: None,
    };
    for a in parts {
        let (k, v) = pair(a);
        match k.to_ascii_lowercase().as_str() {
            "path" => c.path = Some(v),
            "domain" => c.domain = Some(v),
            "httponly" => c.http_only = Some(true),
            "secure" => c.secure = Some(true),
            _ => {}
        }
    }
    c
}

impl Serialize for Cookies<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let want = if self.set { "set-cookie" } else { "cookie" };
        let values = self
            .head
            .into_iter()
            .flat_map(|h| h.headers())
            .filter(move |(n, _)| n.eq_ignore_ascii_case(want))
            .map(|(_, v)| v);
        if self.set {
            s.collect_seq(values.map(set_cookie))
        } else {
            s.collect_seq(
                values
                    .flat_map(|v| v.split(';'))
                    .filter(|p| !p.trim().is_empty())
                    .map(|p| {
                        let (name, value) = pair(p);
                        Cookie {
                            name,
                            value,
                            path: None,
                            domain: None,
                            http_only: None,
                            secure: None,
                        }
                    }),
            )
        }
    }
}

/// `postData`: the body's type; its text is not kept.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PostData<'a> {
    mime_type: &'a str,
    comment: &'static str,
}

/// A `response`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Response<'a> {
    status: u16,
    status_text: &'a str,
    http_version: String,
    cookies: Cookies<'a>,
    headers: Headers<'a>,
    content: Content<'a>,
    #[serde(rename = "redirectURL")]
    redirect_url: &'a str,
    headers_size: i64,
    body_size: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    comment: Option<&'static str>,
}

/// `content`: size and type; `text` is not kept. `_excerpt`: the start of an error response's
/// body as the `findings` quote it.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Content<'a> {
    size: i64,
    mime_type: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    comment: Option<&'static str>,
    #[serde(rename = "_excerpt", skip_serializing_if = "Option::is_none")]
    excerpt: Option<&'a str>,
}

/// The `response` of `e`: status 0 and no headers when none was captured (as browsers write a
/// request that got no response). `bodySize` is the body after chunked framing is removed,
/// before any content coding is undone; `content.size` is -1 for a coded body (its decoded size
/// is not kept).
fn response(e: &Exchange) -> Response<'_> {
    let h = e.response.as_ref();
    let comment = match (h.is_some(), e.open_at_capture_end, e.resp_gap, e.resp_complete) {
        (false, true, ..) => Some("no response captured: the capture ended while it was awaited"),
        (false, false, ..) => Some("no response captured"),
        (true, _, true, _) => Some("bytes of the response are missing from the capture"),
        (true, _, false, false) => Some("the response ended before its framing said it would (cut by a close, a reset or the capture's end)"),
        _ => None,
    };
    Response {
        status: e.status(),
        status_text: h.map_or("", |h| h.reason.as_str()),
        http_version: http_version(h),
        cookies: Cookies { head: h, set: true },
        headers: Headers(h),
        content: Content {
            size: match (h, e.resp_coded) {
                (None, _) => 0,
                (Some(_), true) => -1,
                (Some(_), false) => e.resp_body_len as i64,
            },
            mime_type: e.resp_header("content-type").unwrap_or(""),
            comment: match (e.resp_body_len, e.is_sse) {
                (0, _) => None,
                (_, true) => Some("the body is not kept: its events are in _sseEvents"),
                (_, false) => Some("the body is not kept (its JSON-RPC messages are in _mcp)"),
            },
            excerpt: e.resp_excerpt.as_deref(),
        },
        redirect_url: e.resp_header("location").unwrap_or(""),
        headers_size: -1,
        body_size: if h.is_some() {
            e.resp_body_len as i64
        } else {
            -1
        },
        comment,
    }
}

/// `_mcp`: the exchange in mcpcap's tables (names of the `exchanges` table's columns, and the
/// logical stream's `verdict` from the `streams` table).
struct Mcp<'a> {
    e: &'a Exchange,
    session_id: &'a str,
    stream_id: Option<String>,
    verdict: Option<&'static str>,
    hop_of: Option<String>,
    backend: Option<&'a str>,
}

impl Serialize for Mcp<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let e = self.e;
        let (methods, ids) = tables::methods_and_ids(e);
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("session_id", self.session_id)?;
        m.serialize_entry("stream_id", &self.stream_id)?;
        m.serialize_entry("verdict", &self.verdict)?;
        m.serialize_entry("flow_id", &FlowId(e.flow_index).to_string())?;
        m.serialize_entry("trans_depth", &e.trans_depth)?;
        m.serialize_entry("client_port", &e.client_port)?;
        m.serialize_entry("hop_of", &self.hop_of)?;
        m.serialize_entry("backend", &self.backend)?;
        m.serialize_entry("mcp_session_id", &crate::mcp::session_id_of(e))?;
        m.serialize_entry("last_event_id", &e.req_header("last-event-id"))?;
        m.serialize_entry("jsonrpc_methods", &methods)?;
        m.serialize_entry("jsonrpc_ids", &ids)?;
        m.serialize_entry("sse_events", &e.sse.events.len())?;
        m.serialize_entry("sse_events_not_kept", &e.sse.not_kept)?;
        m.serialize_entry("request_gap", &e.req_gap)?;
        m.serialize_entry("response_gap", &e.resp_gap)?;
        m.serialize_entry("response_complete", &e.resp_complete)?;
        m.serialize_entry("open_at_capture_end", &e.open_at_capture_end)?;
        m.serialize_entry("frame_first", &e.frame())?;
        m.serialize_entry("frame_last", &e.frame_last.or(e.frame_request))?;
        m.end()
    }
}

/// `_tls`: the `flows` table's TLS columns of the entry's connection.
#[derive(serde::Serialize)]
struct Tls {
    tls_version: Option<String>,
    tls_cipher: Option<String>,
    sni: Option<String>,
    alpn: Option<String>,
}

/// `_sseEvents`: an event stream's events in order, each written as it is read from the log.
struct SseEvents<'a>(&'a EventLog);

impl Serialize for SseEvents<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(SseEvent))
    }
}

/// One `_sseEvents` item: the `events` table's columns of the event, with its own names, but
/// those of its exchange (`session_id`, `stream_id`, `flow_id`, `trans_depth`, in `_mcp`).
/// `data` itself is not kept: `data_len` is its length.
struct SseEvent<'a>(EventRec<'a>);

impl<'a> Serialize for SseEvent<'a> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ev = &self.0;
        let msgs: smallvec::SmallVec<[MessageRef<'a>; 2]> = ev.messages.refs().collect();
        let joined = |f: fn(&MessageRef<'a>) -> Option<&'a str>| {
            let v: Vec<&str> = msgs.iter().filter_map(f).collect();
            (!v.is_empty()).then(|| v.join(","))
        };
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("ts", &format_ts(clamp(ev.sse.ts)))?;
        m.serialize_entry("frame_first", &ev.sse.frame_first)?;
        m.serialize_entry("frame_last", &ev.sse.frame_last)?;
        m.serialize_entry("offset", &ev.sse.offset)?;
        m.serialize_entry("has_own_id", &ev.sse.has_own_id)?;
        m.serialize_entry("event_id", &ev.sse.id)?;
        m.serialize_entry("event_type", &ev.sse.event_type)?;
        m.serialize_entry("data_len", &ev.data_len)?;
        m.serialize_entry("retry", &ev.sse.retry)?;
        m.serialize_entry("priming", &ev.priming)?;
        m.serialize_entry("truncated", &ev.sse.truncated)?;
        m.serialize_entry("jsonrpc_kinds", &joined(|m| Some(m.kind.as_str())))?;
        m.serialize_entry("jsonrpc_methods", &joined(|m| m.method))?;
        m.serialize_entry("jsonrpc_ids", &joined(|m| m.id))?;
        m.serialize_entry(
            "progress_token",
            &msgs.iter().find_map(|m| m.progress_token),
        )?;
        m.serialize_entry("progress", &msgs.iter().find_map(|m| m.progress))?;
        m.serialize_entry("parse_error", &ev.parse_error)?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_from_each_form_of_target() {
        let u = |t, m| url("http", Some("h:3000"), t, Some(m));
        assert_eq!(u("/mcp?a=1", "POST"), "http://h:3000/mcp?a=1");
        assert_eq!(u("http://x/y", "GET"), "http://x/y");
        assert_eq!(u("x:443", "CONNECT"), "http://x:443");
        assert_eq!(u("*", "OPTIONS"), "http://h:3000");
        assert_eq!(url("https", None, "", None), "");
        assert_eq!(
            authority_of("::1".parse().unwrap(), 8443),
            "[::1]:8443".to_string()
        );
    }

    #[test]
    fn query_pairs_as_in_the_url() {
        let q = serde_json::to_string(&Query(query_of("/p?a=1&b&&c=%20#f"))).unwrap();
        assert_eq!(
            q,
            r#"[{"name":"a","value":"1"},{"name":"b","value":""},{"name":"c","value":"%20"}]"#
        );
        assert_eq!(query_of("/p"), "");
    }

    #[test]
    fn set_cookie_attributes() {
        let c = serde_json::to_string(&set_cookie(
            "sid=abc; Path=/; Domain=x.org; Expires=Wed, 21 Oct 2026 07:28:00 GMT; HttpOnly; Secure",
        ))
        .unwrap();
        assert_eq!(
            c,
            r#"{"name":"sid","value":"abc","path":"/","domain":"x.org","httpOnly":true,"secure":true}"#
        );
    }
}
