//! HTTP/2 (RFC 9113) on the real captures of `fixtures/mcp-h2/` (nginx terminating TLS 1.3 and
//! speaking h2 to the TypeScript SDK over undici) and `fixtures/mcp-h2py/` (hypercorn and the
//! Python SDK: prior knowledge, h2 over TLS, curl's `Upgrade: h2c`): against tshark, against the
//! HTTP/1.1 twins of the same scenarios, split at every byte through the library, and hostile
//! frames after a real preface.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// A table as rows of (column → value).
type Rows = Vec<BTreeMap<String, String>>;

/// Every table of `analyze --format csv --out` on `pcap` with `extra` arguments, by name.
fn tables(pcap: &Path, extra: &[&std::ffi::OsStr]) -> BTreeMap<String, Rows> {
    let out = common::temp_path("h2-tables", "d");
    common::write_csv_tables_with(pcap, &out, extra);
    let all = mcpcap::report::TABLE_NAMES
        .iter()
        .map(|t| {
            let text = std::fs::read_to_string(out.join(format!("{t}.csv"))).unwrap();
            (t.to_string(), common::csv_rows(&text))
        })
        .collect();
    let _ = std::fs::remove_dir_all(&out);
    all
}

/// The tables of the fixture `rel`, decrypted with the key log `keys` when given.
fn fixture_tables(rel: &str, keys: Option<&str>) -> BTreeMap<String, Rows> {
    let keys = keys.map(common::fixture_path);
    let mut extra: Vec<&std::ffi::OsStr> = Vec::new();
    if let Some(k) = &keys {
        extra.extend(["--tls-keylog".as_ref(), k.as_os_str()]);
    }
    tables(&common::fixture_path(rel), &extra)
}

// ---------------------------------------------------------------------------
// 1. Peer check against tshark

/// One fixture of the peer check: its path under `fixtures/`, its key log, the decode-as
/// tshark needs for its cleartext port (prior knowledge is `http2`; an `Upgrade: h2c` begins as
/// `http`), and the HTTP/2 streams it carries (with a request or a response head).
struct Peer {
    file: &'static str,
    keys: Option<&'static str>,
    decode_as: Option<&'static str>,
    streams: usize,
}

const PEERS: &[Peer] = &[
    Peer {
        file: "mcp-h2/h2_fork.pcap",
        keys: Some("mcp-h2/h2_fork.keys"),
        decode_as: None,
        streams: 7,
    },
    Peer {
        file: "mcp-h2/h2_fork_dsb.pcapng",
        keys: None,
        decode_as: None,
        streams: 7,
    },
    Peer {
        file: "mcp-h2/h2_fork_client.pcap",
        keys: Some("mcp-h2/h2_fork_client.keys"),
        decode_as: None,
        streams: 7,
    },
    Peer {
        file: "mcp-h2/h2_fork_client_dsb.pcapng",
        keys: None,
        decode_as: None,
        streams: 7,
    },
    Peer {
        file: "mcp-h2/h2_healthy.pcap",
        keys: Some("mcp-h2/h2_healthy.keys"),
        decode_as: None,
        streams: 7,
    },
    Peer {
        file: "mcp-h2/h2_healthy_dsb.pcapng",
        keys: None,
        decode_as: None,
        streams: 7,
    },
    Peer {
        file: "mcp-h2py/h2c_healthy.pcap",
        keys: None,
        decode_as: Some("tcp.port==3600,http2"),
        streams: 7,
    },
    Peer {
        file: "mcp-h2py/h2_tls_healthy.pcap",
        keys: Some("mcp-h2py/h2_tls_healthy.keys"),
        decode_as: None,
        streams: 7,
    },
    Peer {
        file: "mcp-h2py/h2_tls_healthy_dsb.pcapng",
        keys: None,
        decode_as: None,
        streams: 7,
    },
    Peer {
        file: "mcp-h2py/h1_healthy_clear.pcap",
        keys: None,
        decode_as: Some("tcp.port==3602,http"),
        streams: 0,
    },
    Peer {
        file: "mcp-h2py/h2_resume_same_conn.pcap",
        keys: None,
        decode_as: Some("tcp.port==3603,http2"),
        streams: 7,
    },
    Peer {
        file: "mcp-h2py/h2_planned_poll.pcap",
        keys: None,
        decode_as: Some("tcp.port==3604,http2"),
        streams: 7,
    },
    Peer {
        file: "mcp-h2py/h2_lost_response.pcap",
        keys: None,
        decode_as: Some("tcp.port==3605,http2"),
        streams: 8,
    },
    Peer {
        file: "mcp-h2py/h2c_upgrade_curl.pcap",
        keys: None,
        decode_as: Some("tcp.port==3606,http"),
        streams: 7,
    },
    Peer {
        file: "mcp-h2py/h2c_upgrade_ignored_curl.pcap",
        keys: None,
        decode_as: Some("tcp.port==3607,http"),
        streams: 3,
    },
];

/// What is compared of one HTTP/2 stream: the request's `:method` and `:path`, the final
/// response's `:status`, the session id (the request's `mcp-session-id`, else the response's:
/// the `mcp_session_id` column of docs/tables.md, which for `initialize` is the id the server
/// assigned) and the request's `last-event-id`; empty when absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct StreamFacts {
    method: String,
    target: String,
    status: String,
    mcp_session_id: String,
    last_event_id: String,
}

/// A head's fields, (name, value) in order.
type Fields = Vec<(String, String)>;

/// A request head: method, target, fields.
type Request = (String, String, Fields);

/// A stream as tshark dissects it: its request and final response head fields (names in lower
/// case), and the frame of the request's head.
#[derive(Debug, Default)]
struct TsharkStream {
    request: Option<Request>,
    response: Option<(String, Fields)>,
    frame: u64,
}

impl TsharkStream {
    fn facts(&self) -> StreamFacts {
        let find = |fields: Option<&Fields>, name: &str| {
            fields
                .and_then(|f| f.iter().find(|(n, _)| n == name))
                .map(|(_, v)| v.clone())
                .filter(|v| !v.is_empty())
        };
        let req = self.request.as_ref().map(|r| &r.2);
        let resp = self.response.as_ref().map(|r| &r.1);
        StreamFacts {
            method: self.request.as_ref().map_or("", |r| &r.0).to_string(),
            target: self.request.as_ref().map_or("", |r| &r.1).to_string(),
            status: self.response.as_ref().map_or("", |r| &r.0).to_string(),
            mcp_session_id: find(req, "mcp-session-id")
                .or_else(|| find(resp, "mcp-session-id"))
                .unwrap_or_default(),
            last_event_id: find(req, "last-event-id").unwrap_or_default(),
        }
    }
}

/// `v` as a list: an array's elements, or `v` itself (tshark's JSON with
/// `--no-duplicate-keys` gives one object or an array of them).
fn as_list(v: Option<&Value>) -> Vec<&Value> {
    match v {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v) => vec![v],
        None => vec![],
    }
}

/// Every value of key `key` in `v`, depth first, in document order.
fn find_all<'a>(v: &'a Value, key: &str, out: &mut Vec<&'a Value>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| find_all(x, key, out)),
        Value::Object(o) => {
            for (k, x) in o {
                if k == key {
                    out.push(x);
                } else {
                    find_all(x, key, out);
                }
            }
        }
        _ => {}
    }
}

/// Every HTTP/2 frame of a packet's `http2` layers: the objects with `http2.streamid` and
/// `http2.type` (one TCP segment may carry several frames of several streams).
fn h2_frames<'a>(v: &'a Value, out: &mut Vec<&'a serde_json::Map<String, Value>>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| h2_frames(x, out)),
        Value::Object(o) if o.contains_key("http2.streamid") && o.contains_key("http2.type") => {
            out.push(o)
        }
        Value::Object(o) => o.values().for_each(|x| h2_frames(x, out)),
        _ => {}
    }
}

fn text(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or_default().to_string()
}

/// The HTTP/2 streams tshark dissects in `cap`, by (client port, stream id): heads from the
/// HEADERS frames (`:method` and `:path` from the client's, the first non-1xx `:status` from
/// the server's), and for a connection upgraded to h2c (a `101` to an HTTP/1.1 request), that
/// request as stream 1's (RFC 7540 §3.2).
fn tshark_streams(cap: &Path, peer: &Peer) -> BTreeMap<(u16, u32), TsharkStream> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(cap);
    if let Some(k) = peer.keys {
        let k = common::fixture_path(k);
        cmd.arg("-o")
            .arg(format!("tls.keylog_file:{}", k.display()));
    }
    if let Some(d) = peer.decode_as {
        cmd.args(["-d", d]);
    }
    let o = cmd
        .args(["-Y", "http2 || http", "-T", "json", "--no-duplicate-keys"])
        .args(["-J", "frame tcp http http2"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let packets: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    let mut streams: BTreeMap<(u16, u32), TsharkStream> = BTreeMap::new();
    // The last HTTP/1.1 request per client port (an upgrade's, when a 101 answers it).
    let mut h1: BTreeMap<u16, (Request, u64)> = BTreeMap::new();
    for p in &packets {
        let l = &p["_source"]["layers"];
        let port = |k: &str| text(l["tcp"].get(k)).parse::<u16>().unwrap();
        let (src, dst) = (port("tcp.srcport"), port("tcp.dstport"));
        let frame: u64 = text(l["frame"].get("frame.number")).parse().unwrap();
        for h in as_list(l.get("http")) {
            let (mut method, mut code) = (Vec::new(), Vec::new());
            find_all(h, "http.request.method", &mut method);
            find_all(h, "http.response.code", &mut code);
            if let Some(m) = method.first() {
                let mut uri = Vec::new();
                find_all(h, "http.request.uri", &mut uri);
                let fields = as_list(h.get("http.request.line"))
                    .into_iter()
                    .filter_map(|line| {
                        let (n, v) = line.as_str()?.split_once(':')?;
                        Some((n.trim().to_ascii_lowercase(), v.trim().to_string()))
                    })
                    .collect();
                let uri = uri.first().and_then(|u| u.as_str()).unwrap_or_default();
                h1.insert(src, ((text(Some(m)), uri.to_string(), fields), frame));
            } else if code.first().and_then(|c| c.as_str()) == Some("101") {
                let (request, at) = h1.get(&dst).cloned().unwrap();
                let s = streams.entry((dst, 1)).or_default();
                s.request = Some(request);
                s.frame = at;
            }
        }
        let mut frames = Vec::new();
        if let Some(h2) = l.get("http2") {
            h2_frames(h2, &mut frames);
        }
        for f in frames {
            if text(f.get("http2.type")) != "1" {
                continue;
            }
            let id: u32 = text(f.get("http2.streamid")).parse().unwrap();
            let fields: Fields = as_list(f.get("http2.header"))
                .into_iter()
                .map(|x| {
                    (
                        text(x.get("http2.header.name")),
                        text(x.get("http2.header.value")),
                    )
                })
                .collect();
            let get = |n: &str| fields.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
            if let Some(m) = get(":method") {
                let s = streams.entry((src, id)).or_default();
                if s.request.is_none() {
                    s.request = Some((m, get(":path").unwrap_or_default(), fields.clone()));
                    s.frame = frame;
                }
            } else if let Some(st) = get(":status").filter(|s| !s.starts_with('1')) {
                let s = streams.entry((dst, id)).or_default();
                if s.response.is_none() {
                    s.response = Some((st, fields.clone()));
                }
            }
        }
    }
    streams
}

/// The HTTP/2 exchanges of mcpcap's `exchanges` table, by (client port, stream id), with the
/// client port from the `flows` table (`orig_p`).
fn mcpcap_streams(t: &BTreeMap<String, Rows>) -> BTreeMap<(u16, u32), StreamFacts> {
    let ports: BTreeMap<&str, u16> = t["flows"]
        .iter()
        .map(|f| (f["flow_id"].as_str(), f["orig_p"].parse().unwrap()))
        .collect();
    let mut out = BTreeMap::new();
    for e in t["exchanges"]
        .iter()
        .filter(|e| !e["h2_stream_id"].is_empty())
    {
        assert_eq!(e["http_version"], "2", "{e:?}");
        let key = (
            ports[e["flow_id"].as_str()],
            e["h2_stream_id"].parse().unwrap(),
        );
        let facts = StreamFacts {
            method: e["method"].clone(),
            target: e["target"].clone(),
            status: e["status"].clone(),
            mcp_session_id: e["mcp_session_id"].clone(),
            last_event_id: e["last_event_id"].clone(),
        };
        assert!(
            out.insert(key, facts).is_none(),
            "two exchanges for {key:?}"
        );
    }
    out
}

/// Peer check: per HTTP/2 stream of every capture of `fixtures/mcp-h2/` and
/// `fixtures/mcp-h2py/` (keyed by the connection's client port and the stream id), the
/// request's `:method` and `:path`, the response's `:status`, the session id and the
/// `last-event-id` in mcpcap's `exchanges` table are those tshark dissects, with the same key
/// logs (TLS) and decode-as (cleartext ports), and both see the same streams. The HTTP/1.1
/// exchanges (the backend legs of h2_fork.pcap, the POSTs whose `Upgrade: h2c` hypercorn
/// ignores, all of h1_healthy_clear.pcap) are no HTTP/2 stream to either. No difference is
/// accepted. Skipped without tshark, saying so, unless `MCPCAP_REQUIRE_READERS` is set.
#[test]
fn h2_streams_match_tshark() {
    let mut listed: Vec<&str> = PEERS.iter().map(|p| p.file).collect();
    listed.sort();
    let mut files: Vec<String> = ["mcp-h2", "mcp-h2py"]
        .iter()
        .flat_map(|d| {
            std::fs::read_dir(common::fixture_path(d))
                .unwrap()
                .map(move |e| format!("{d}/{}", e.unwrap().file_name().to_string_lossy()))
        })
        .filter(|f| f.ends_with(".pcap") || f.ends_with(".pcapng"))
        .collect();
    files.sort();
    assert_eq!(listed, files, "every capture is checked");
    if !common::have_all(&["tshark"]) {
        return;
    }
    for peer in PEERS {
        let cap = common::fixture_path(peer.file);
        let theirs = tshark_streams(&cap, peer);
        let ours = mcpcap_streams(&fixture_tables(peer.file, peer.keys));
        let name = peer.file;
        assert_eq!(theirs.len(), peer.streams, "{name}: tshark's streams");
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{name}: the streams (client port, stream id)"
        );
        for (key, s) in &theirs {
            let want = s.facts();
            assert!(
                !want.method.is_empty() && !want.status.is_empty(),
                "{name} {key:?}"
            );
            assert_eq!(
                ours[key], want,
                "{name}: stream {key:?} (request head in frame {})",
                s.frame
            );
        }
    }
}

// ---------------------------------------------------------------------------
// 2. HTTP/2 captures and their HTTP/1.1 twins

/// Per session (in order of their verdicts and findings, as session ids differ between
/// twins): the session's verdict and the (kind, severity) pairs of its findings, sorted;
/// findings of no session under an empty verdict.
fn findings_by_session(t: &BTreeMap<String, Rows>) -> Vec<(String, Fields)> {
    let mut by: BTreeMap<&str, (String, Fields)> = t["sessions"]
        .iter()
        .map(|s| (s["session_id"].as_str(), (s["verdict"].clone(), Vec::new())))
        .collect();
    for f in &t["findings"] {
        by.entry(f["session_id"].as_str())
            .or_default()
            .1
            .push((f["kind"].clone(), f["severity"].clone()));
    }
    let mut out: Vec<_> = by
        .into_values()
        .map(|(v, mut k)| {
            k.sort();
            (v, k)
        })
        .collect();
    out.sort();
    out
}

/// Each HTTP/2 capture finds per session what its HTTP/1.1 twin (the same scenario, the same
/// server and client, HTTP/1.1) finds: the same verdicts and the same (kind, severity) pairs.
/// The first of each pair is read as HTTP/2 (at least its 7 client exchanges on HTTP/2
/// streams), but ts_https_resume.pcap, the TLS twin of a cleartext capture (HTTP/1.1 over TLS).
#[test]
fn h2_captures_find_what_their_http1_twins_find() {
    let fork = [
        ("backend_switch", "error"),
        ("duplicate_delivery", "error"),
        ("id_regression", "error"),
        ("id_restart", "error"),
    ];
    let lost = [("lost_response", "error"), ("resume_ok", "info")];
    // (HTTP/2 capture, its key log, its HTTP/1.1 twin, the verdict, the findings).
    type Twin<'a> = (
        &'a str,
        Option<&'a str>,
        &'a str,
        &'a str,
        &'a [(&'a str, &'a str)],
    );
    let twins: &[Twin] = &[
        (
            "mcp-h2/h2_fork_client.pcap",
            Some("mcp-h2/h2_fork_client.keys"),
            "mcp/fork_restart_client.pcap",
            "broken",
            &fork,
        ),
        (
            "mcp-h2/h2_fork.pcap",
            Some("mcp-h2/h2_fork.keys"),
            "mcp/fork_restart.pcap",
            "broken",
            &fork,
        ),
        (
            "mcp-h2py/h2_tls_healthy.pcap",
            Some("mcp-h2py/h2_tls_healthy.keys"),
            "mcp-h2py/h1_healthy_clear.pcap",
            "intact",
            &[],
        ),
        (
            "mcp-h2py/h2c_healthy.pcap",
            None,
            "mcp-h2py/h1_healthy_clear.pcap",
            "intact",
            &[],
        ),
        (
            "mcp-h2py/h2_lost_response.pcap",
            None,
            "mcp/lost_response.pcap",
            "broken",
            &lost,
        ),
        (
            "mcp-tls/ts_https_resume.pcap",
            Some("mcp-tls/ts_https_resume.keys"),
            "mcp-tls/ts_https_resume_clear.pcap",
            "intact",
            &[("resume_ok", "info")],
        ),
    ];
    for &(h2, keys, twin, verdict, kinds) in twins {
        let t = fixture_tables(h2, keys);
        let c = fixture_tables(twin, None);
        let want: Vec<(String, String)> = kinds
            .iter()
            .map(|(k, s)| (k.to_string(), s.to_string()))
            .collect();
        assert_eq!(
            findings_by_session(&t),
            [(verdict.to_string(), want)],
            "{h2}: {:#?}",
            t["findings"]
        );
        assert_eq!(
            findings_by_session(&t),
            findings_by_session(&c),
            "{h2} against {twin}"
        );
        let h2_rows = t["exchanges"]
            .iter()
            .filter(|e| e["http_version"] == "2")
            .count();
        if h2.starts_with("mcp-tls/") {
            assert_eq!(h2_rows, 0, "{h2}");
        } else {
            assert!(h2_rows >= 7, "{h2}: {h2_rows} HTTP/2 exchanges");
        }
        assert!(
            c["exchanges"].iter().all(|e| e["http_version"] == "1.1"),
            "{twin}"
        );
    }
}

/// A capture with its key log in a pcapng Decryption Secrets Block reads, without
/// `--tls-keylog`, as the capture with its key log: every table alike but for the file's name
/// (`files`, `vantages`, the `file` column of `findings`).
#[test]
fn h2_dsb_captures_read_as_their_key_log_runs() {
    for name in [
        "mcp-h2/h2_fork",
        "mcp-h2/h2_fork_client",
        "mcp-h2/h2_healthy",
        "mcp-h2py/h2_tls_healthy",
        "mcp-tls/ts_https_resume",
    ] {
        let d = fixture_tables(&format!("{name}_dsb.pcapng"), None);
        let k = fixture_tables(&format!("{name}.pcap"), Some(&format!("{name}.keys")));
        assert!(
            d["flows"]
                .iter()
                .filter(|f| !f["tls_version"].is_empty())
                .all(|f| f["decrypted"] == "ok"),
            "{name}"
        );
        assert_eq!(d["sessions"].len(), 1, "{name}");
        assert!(!d["exchanges"].is_empty(), "{name}");
        for (table, rows) in &d {
            if table == "files" || table == "vantages" {
                continue;
            }
            let drop_file = |rows: &Rows| -> Rows {
                rows.iter()
                    .map(|r| {
                        let mut r = r.clone();
                        r.remove("file");
                        r
                    })
                    .collect()
            };
            assert_eq!(
                drop_file(rows),
                drop_file(&k[table]),
                "{name}: table {table}"
            );
        }
        let file = |t: &BTreeMap<String, Rows>| -> Vec<String> {
            t["findings"].iter().map(|f| f["file"].clone()).collect()
        };
        let base = name.rsplit('/').next().unwrap();
        assert!(
            file(&d).iter().all(|f| *f == format!("{base}_dsb.pcapng")),
            "{name}"
        );
    }
}

// ---------------------------------------------------------------------------
// 3. The HTTP/2 stage split at every byte

use mcpcap::http::{HttpLayer, HttpOptions};
use mcpcap::tcp::{Chunk, FlowMeta, StreamEvent, StreamSink};

/// A stream event kept with its bytes: what the flow table hands the HTTP stage.
#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Open,
    Data(usize, Vec<u8>),
    Gap(usize, u64),
    End {
        dir: usize,
        fin: bool,
        reset: bool,
        peer_acked: bool,
        acked_by_peer: bool,
    },
    CaptureEnd,
    Close,
}

/// One event with its flow, time and frame.
type Rec = (FlowMeta, Ev, i64, u64);

/// Every stream event of the flow table, in order.
#[derive(Default)]
struct Recorded(Vec<Rec>);

impl StreamSink for Recorded {
    fn event(&mut self, flow: FlowMeta, ev: StreamEvent<'_>, ts: i64, frame: u64) {
        let ev = match ev {
            StreamEvent::Open => Ev::Open,
            StreamEvent::Chunk(d, Chunk::Data { bytes, .. }) => Ev::Data(d, bytes.to_vec()),
            StreamEvent::Chunk(d, Chunk::Gap { len, .. }) => Ev::Gap(d, len),
            StreamEvent::End {
                dir,
                fin,
                reset,
                peer_acked,
                acked_by_peer,
            } => Ev::End {
                dir,
                fin,
                reset,
                peer_acked,
                acked_by_peer,
            },
            StreamEvent::CaptureEnd => Ev::CaptureEnd,
            StreamEvent::Close => Ev::Close,
        };
        self.0.push((flow, ev, ts, frame));
    }
}

/// The stream events of the fixture `rel` (classic pcap), as the flow table hands them on.
fn stream_events(rel: &str) -> Vec<Rec> {
    let mut rec = Recorded::default();
    common::flow_events(&common::fixture_path(rel), &mut rec);
    rec.0
}

/// What is compared of one exchange: its heads, its HTTP/2 stream and how it ended, its
/// lengths, gaps and completeness, its SSE events (id, data hash, priming, messages) and the
/// JSON-RPC messages of its bodies.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    method: String,
    target: String,
    status: u16,
    h2_stream: Option<u32>,
    h2_end: Option<String>,
    req_body_len: u64,
    resp_body_len: u64,
    req_gap: bool,
    resp_gap: bool,
    resp_complete: bool,
    events: Vec<(Option<String>, u64, bool, String)>,
    rpc: String,
}

/// The HTTP stage of an analysis (MCP's event roles) fed `events` (each chunk at its offset
/// in its direction): the exchanges it made, in order, and its anomaly codes.
fn through_http(events: &[Rec]) -> (Vec<Seen>, Vec<String>) {
    let mut http = HttpLayer::new(HttpOptions {
        event_role: Some(mcpcap::mcp::event_role),
        ..Default::default()
    });
    let mut offsets: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    for (flow, ev, ts, frame) in events {
        let mut at = |d: usize, n: u64| {
            let o = offsets.entry((flow.index, d)).or_default();
            let offset = *o;
            *o += n;
            offset
        };
        let ev = match ev {
            Ev::Open => StreamEvent::Open,
            Ev::Data(d, bytes) => StreamEvent::Chunk(
                *d,
                Chunk::Data {
                    offset: at(*d, bytes.len() as u64),
                    bytes,
                },
            ),
            Ev::Gap(d, len) => StreamEvent::Chunk(
                *d,
                Chunk::Gap {
                    offset: at(*d, *len),
                    len: *len,
                },
            ),
            &Ev::End {
                dir,
                fin,
                reset,
                peer_acked,
                acked_by_peer,
            } => StreamEvent::End {
                dir,
                fin,
                reset,
                peer_acked,
                acked_by_peer,
            },
            Ev::CaptureEnd => StreamEvent::CaptureEnd,
            Ev::Close => StreamEvent::Close,
        };
        http.event(*flow, ev, *ts, *frame);
    }
    let seen = http
        .exchanges
        .iter()
        .map(|e| Seen {
            method: e.method().to_string(),
            target: e
                .request
                .as_ref()
                .map(|h| h.target.clone())
                .unwrap_or_default(),
            status: e.status(),
            h2_stream: e.h2_stream,
            h2_end: e.h2_end.map(|h| h.describe()),
            req_body_len: e.req_body_len,
            resp_body_len: e.resp_body_len,
            req_gap: e.req_gap,
            resp_gap: e.resp_gap,
            resp_complete: e.resp_complete,
            events: e
                .sse
                .events
                .iter()
                .map(|ev| {
                    let msgs: Vec<String> = ev.messages.iter().map(|m| format!("{m:?}")).collect();
                    (
                        ev.sse.id.map(str::to_string),
                        ev.data_hash,
                        ev.priming,
                        msgs.join(";"),
                    )
                })
                .collect(),
            rpc: format!("{:?} {:?}", e.rpc.request, e.rpc.response),
        })
        .collect();
    let codes = http
        .anomalies
        .counts
        .keys()
        .map(|c| format!("{c:?}"))
        .collect();
    (seen, codes)
}

/// `events` with direction `d`'s bytes split once more, `at` bytes into that direction (the
/// two parts in the original place among the other events: the order of the directions, which
/// the exchanges' meaning rests on, stays); `None` when `at` is a chunk boundary already.
fn split_at(events: &[Rec], d: usize, at: usize) -> Option<Vec<Rec>> {
    let mut out = Vec::with_capacity(events.len() + 1);
    let (mut seen, mut split) = (0, false);
    for e in events {
        match &e.1 {
            Ev::Data(dd, b) if *dd == d && seen < at && at < seen + b.len() => {
                let k = at - seen;
                out.push((e.0, Ev::Data(d, b[..k].to_vec()), e.2, e.3));
                out.push((e.0, Ev::Data(d, b[k..].to_vec()), e.2, e.3));
                (seen, split) = (seen + b.len(), true);
            }
            Ev::Data(dd, b) if *dd == d => {
                seen += b.len();
                out.push(e.clone());
            }
            _ => out.push(e.clone()),
        }
    }
    split.then_some(out)
}

/// `events` with direction `d`'s bytes `from..from + len` missing from the capture: a gap in
/// their place.
fn with_gap(events: &[Rec], d: usize, from: usize, len: usize) -> Vec<Rec> {
    let to = from + len;
    let mut out = Vec::new();
    let mut seen = 0;
    for e in events {
        let Ev::Data(dd, b) = &e.1 else {
            out.push(e.clone());
            continue;
        };
        if *dd != d || seen + b.len() <= from || seen >= to {
            seen += if *dd == d { b.len() } else { 0 };
            out.push(e.clone());
            continue;
        }
        let (a, z) = (from.saturating_sub(seen), (to - seen).min(b.len()));
        if a > 0 {
            out.push((e.0, Ev::Data(d, b[..a].to_vec()), e.2, e.3));
        }
        out.push((e.0, Ev::Gap(d, (z - a) as u64), e.2, e.3));
        if z < b.len() {
            out.push((e.0, Ev::Data(d, b[z..].to_vec()), e.2, e.3));
        }
        seen += b.len();
    }
    out
}

/// The bytes of direction `d`.
fn bytes_of(events: &[Rec], d: usize) -> Vec<u8> {
    events
        .iter()
        .filter_map(|e| match &e.1 {
            Ev::Data(dd, b) if *dd == d => Some(&b[..]),
            _ => None,
        })
        .flatten()
        .copied()
        .collect()
}

/// The frames of an HTTP/2 byte stream from `start` (RFC 9113 §4.1): (offset of the header,
/// payload length, type, stream id).
fn h2_frame_list(b: &[u8], start: usize) -> Vec<(usize, usize, u8, u32)> {
    let mut out = Vec::new();
    let mut at = start;
    while at + 9 <= b.len() {
        let len = usize::from(b[at]) << 16 | usize::from(b[at + 1]) << 8 | usize::from(b[at + 2]);
        let id = u32::from_be_bytes([b[at + 5], b[at + 6], b[at + 7], b[at + 8]]) & 0x7fff_ffff;
        out.push((at, len, b[at + 3], id));
        at += 9 + len;
    }
    assert_eq!(at, b.len(), "the frames end with the direction");
    out
}

/// The h2c connection of h2c_healthy.pcap (one for the whole session, prior knowledge): what
/// the HTTP stage makes of it whole, checked against the capture's manifest.
fn h2c_whole() -> (Vec<Rec>, Vec<Seen>) {
    let events = stream_events("mcp-h2py/h2c_healthy.pcap");
    assert!(events.iter().all(|e| e.0.index == 0), "one connection");
    let (whole, codes) = through_http(&events);
    assert!(codes.is_empty(), "{codes:?}");
    let heads: Vec<(&str, Option<u32>, u16)> = whole
        .iter()
        .map(|s| (s.method.as_str(), s.h2_stream, s.status))
        .collect();
    let mut sorted = heads.clone();
    sorted.sort_by_key(|h| h.1);
    assert_eq!(
        sorted,
        [
            ("POST", Some(1), 200),
            ("POST", Some(3), 202),
            ("GET", Some(5), 200),
            ("POST", Some(7), 200),
            ("POST", Some(9), 200),
            ("POST", Some(11), 200),
            ("DELETE", Some(13), 200),
        ]
    );
    assert!(whole
        .iter()
        .all(|s| s.resp_complete && !s.resp_gap && !s.req_gap));
    assert!(whole
        .iter()
        .all(|s| s.target == "/mcp" && s.h2_end.is_none()));
    let stream = |id| whole.iter().find(|s| s.h2_stream == Some(id)).unwrap();
    // The count call (stream 11): a priming event, 5 progress notifications, the result.
    let count = stream(11);
    assert_eq!(count.events.len(), 7, "{count:#?}");
    assert!(count.events[0].2 && count.events[0].0.is_some());
    assert!(count.events[1..6]
        .iter()
        .all(|e| e.3.contains("notifications/progress")));
    assert!(
        count.events[6].3.contains("Response"),
        "{:?}",
        count.events[6]
    );
    // The standalone GET (stream 5): the 3 notifications/message of the announce tool.
    let get = stream(5);
    let messages = get
        .events
        .iter()
        .filter(|e| e.3.contains("notifications/message"))
        .count();
    assert_eq!(messages, 3, "{get:#?}");
    assert!(stream(1).rpc.contains("initialize"));
    (events, whole)
}

/// The h2c connection's bytes split at every offset of either direction (the two parts where
/// the chunk was, so that every request still comes before its response) give the same
/// exchanges: heads, streams, bodies, SSE events and JSON-RPC messages; and fed a byte at a
/// time, too.
#[test]
fn h2_split_at_every_byte_reads_alike() {
    let (events, whole) = h2c_whole();
    let mut splits = 0;
    for d in 0..2 {
        for at in 1..bytes_of(&events, d).len() {
            let Some(cut) = split_at(&events, d, at) else {
                continue;
            };
            let (got, codes) = through_http(&cut);
            assert!(codes.is_empty(), "direction {d} split at {at}: {codes:?}");
            assert!(got == whole, "direction {d} split at {at}: {got:#?}");
            splits += 1;
        }
    }
    assert!(splits > 4000, "{splits} splits");
    let bytewise: Vec<Rec> = events
        .iter()
        .flat_map(|e| match &e.1 {
            Ev::Data(d, b) => b
                .iter()
                .map(|&x| (e.0, Ev::Data(*d, vec![x]), e.2, e.3))
                .collect(),
            _ => vec![e.clone()],
        })
        .collect();
    assert_eq!(through_http(&bytewise).0, whole, "a byte at a time");
}

/// Bytes lost inside a DATA frame of the count call's event stream (the third progress
/// notification's frame, stream 11) are a gap in that response's body: the response is
/// marked as having a gap, the frame boundaries stay known, and every other exchange, the
/// ones whose frames come after it included, reads as without the gap.
#[test]
fn h2_gap_inside_a_data_frame_is_a_body_gap() {
    let (events, whole) = h2c_whole();
    let server = bytes_of(&events, 1);
    let progress: Vec<(usize, usize)> = h2_frame_list(&server, 0)
        .into_iter()
        .filter(|&(at, len, kind, id)| {
            kind == 0
                && id == 11
                && String::from_utf8_lossy(&server[at + 9..at + 9 + len])
                    .contains("notifications/progress")
        })
        .map(|(at, len, ..)| (at + 9, len))
        .collect();
    assert_eq!(progress.len(), 5, "one DATA frame per progress event");
    let (payload, len) = progress[2];
    let i = whole.iter().position(|s| s.h2_stream == Some(11)).unwrap();
    for n in [1, 7, len - 20] {
        let (got, _) = through_http(&with_gap(&events, 1, payload + 10, n));
        assert_eq!(got.len(), whole.len(), "gap of {n}");
        for (j, (g, w)) in got.iter().zip(&whole).enumerate() {
            if j != i {
                assert_eq!(g, w, "gap of {n}: exchange {j}");
            }
        }
        let (g, w) = (&got[i], &whole[i]);
        assert!(g.resp_gap && !w.resp_gap, "gap of {n}");
        assert_eq!(
            (&g.method, g.status, g.h2_stream),
            (&w.method, w.status, w.h2_stream)
        );
        // The body's length counts the bytes seen, as for HTTP/1.x.
        assert_eq!(g.resp_body_len, w.resp_body_len - n as u64, "gap of {n}");
        // The event the gap fell in is lost; those before and after it are read.
        let ids = |s: &Seen| s.events.iter().map(|e| e.0.clone()).collect::<Vec<_>>();
        let mut without = ids(w);
        without.remove(3);
        assert_eq!(ids(g), without, "gap of {n}");
    }
}

// ---------------------------------------------------------------------------
// 4. Hostile bytes after a real preface

/// The client's connection preface (RFC 9113 §3.4).
use mcpcap::http::h2::frame::PREFACE;

/// `client` (after the preface) and `server` bytes of one connection through the HTTP stage,
/// the two directions interleaved in chunks of `k` bytes, then both FINs and the close; the
/// exchanges' body lengths are bounded by what was sent.
fn hostile(client: &[u8], server: &[u8], k: usize) {
    let a = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    let flow = FlowMeta {
        index: 0,
        ends: [(a, 40000), (a, 3600)],
        client_by_syn: true,
    };
    let client = [PREFACE, client].concat();
    let mut events: Vec<Rec> = vec![(flow, Ev::Open, 0, 0)];
    let (mut c, mut s) = (client.chunks(k), server.chunks(k));
    let mut frame = 1;
    loop {
        let (cc, sc) = (c.next(), s.next());
        if cc.is_none() && sc.is_none() {
            break;
        }
        for (d, bytes) in [(0, cc), (1, sc)] {
            if let Some(b) = bytes {
                events.push((flow, Ev::Data(d, b.to_vec()), frame, frame as u64));
                frame += 1;
            }
        }
    }
    for dir in 0..2 {
        let end = Ev::End {
            dir,
            fin: true,
            reset: false,
            peer_acked: true,
            acked_by_peer: true,
        };
        events.push((flow, end, frame, frame as u64));
    }
    events.push((flow, Ev::Close, frame, frame as u64));
    let (seen, _) = through_http(&events);
    for x in &seen {
        assert!(x.req_body_len <= client.len() as u64, "{x:?}");
        assert!(x.resp_body_len <= server.len() as u64, "{x:?}");
    }
}

/// HTTP/2 frames (RFC 9113 §4.1) of the given (type, flags, stream, payload), one after the
/// other; types 0 to 9 are those RFC 9113 defines, so that HEADERS and CONTINUATION payloads
/// reach the HPACK decoder.
fn frames(list: &[(u8, u8, u32, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (kind, flags, stream, payload) in list {
        let len = payload.len() as u32;
        out.extend_from_slice(&len.to_be_bytes()[1..]);
        out.extend([*kind, *flags]);
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
    }
    out
}

/// An HPACK-flavoured payload: random bytes, or a header block of literal fields (RFC 7541
/// §6.2: new names, random values, some pseudo-header fields) with random bytes after it.
fn hpack_payload() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let literal = (
        prop::sample::select(vec![":method", ":path", ":status", "mcp-session-id", "x"]),
        prop::collection::vec(any::<u8>(), 0..20),
    )
        .prop_map(|(n, v)| {
            let mut b = vec![0x00, n.len() as u8];
            b.extend_from_slice(n.as_bytes());
            b.push(v.len() as u8);
            b.extend(v);
            b
        });
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..48),
        (
            prop::collection::vec(literal, 0..4),
            prop::collection::vec(any::<u8>(), 0..8)
        )
            .prop_map(|(fields, tail)| [fields.concat(), tail].concat()),
    ]
}

/// One frame: a type of RFC 9113 (HEADERS and CONTINUATION most often), any flags, a small
/// stream id, and a payload.
fn frame() -> impl proptest::strategy::Strategy<Value = (u8, u8, u32, Vec<u8>)> {
    use proptest::prelude::*;
    (
        prop::sample::select(vec![0u8, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 0x42]),
        any::<u8>(),
        0u32..8,
        hpack_payload(),
    )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    /// Random bytes after the client's preface, and random server bytes: no panic.
    #[test]
    fn h2_random_bytes_after_the_preface_do_not_panic(
        client in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
        server in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
        k in 1usize..64,
    ) {
        hostile(&client, &server, k);
    }

    /// Random well-framed frames of random types, flags, streams and (HPACK-like) payloads,
    /// the server's after its SETTINGS: no panic, whatever the HPACK decoder is given.
    #[test]
    fn h2_random_frames_do_not_panic(
        client in proptest::collection::vec(frame(), 0..12),
        server in proptest::collection::vec(frame(), 0..12),
        k in 1usize..80,
    ) {
        let settings = frames(&[(4, 0, 0, Vec::new())]);
        hostile(&frames(&client), &[settings, frames(&server)].concat(), k);
    }

    /// The real h2c connection of h2c_healthy.pcap with bytes changed (its header blocks
    /// against the dynamic table built so far, its frame headers, its bodies): no panic.
    #[test]
    fn h2_a_real_connection_with_bytes_changed_does_not_panic(
        edits in proptest::collection::vec(
            (0usize..2, proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<u8>()),
            1..6,
        ),
        k in 1usize..400,
    ) {
        let mut dirs = real_h2c();
        for (d, at, x) in edits {
            let i = at.index(dirs[d].len());
            if d == 0 && i < PREFACE.len() {
                continue;
            }
            dirs[d][i] = x;
        }
        hostile(&dirs[0][PREFACE.len()..], &dirs[1], k);
    }
}

/// The two directions of the h2c connection of h2c_healthy.pcap.
fn real_h2c() -> [Vec<u8>; 2] {
    static DIRS: std::sync::OnceLock<[Vec<u8>; 2]> = std::sync::OnceLock::new();
    DIRS.get_or_init(|| {
        let events = stream_events("mcp-h2py/h2c_healthy.pcap");
        let dirs = [bytes_of(&events, 0), bytes_of(&events, 1)];
        assert!(dirs[0].starts_with(PREFACE));
        dirs
    })
    .clone()
}
