//! TLS through the real binary, on the real captures of `fixtures/mcp-tls/` (MCP over TLS 1.3
//! and 1.2 through a TLS proxy, each with its key log and the backend leg in the clear:
//! `fixtures/gen/tls/`).

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/mcp-tls")
        .join(name)
}

/// A table as rows of (column → value), with the columns of `skip` dropped.
type Rows = Vec<BTreeMap<String, String>>;

/// Run `analyze --format csv --out` with `args`; every table by name, and stderr.
fn tables(tag: &str, args: &[&std::ffi::OsStr]) -> (BTreeMap<String, Rows>, String) {
    let out = std::env::temp_dir().join(format!("mcpcap-tls-{}-{tag}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(["analyze", "--format", "csv", "--fail-on", "never", "--out"])
        .arg(&out)
        .args(args)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut all = BTreeMap::new();
    for t in mcpcap::report::TABLE_NAMES {
        all.insert(
            t.to_string(),
            common::csv_rows(&std::fs::read_to_string(out.join(format!("{t}.csv"))).unwrap()),
        );
    }
    let _ = std::fs::remove_dir_all(&out);
    (all, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// The columns that differ between a TLS leg and its cleartext twin by nature: times, frames,
/// flows, ports, sizes on the wire, and how connections ended (the proxy closes its backend
/// connections on its own schedule: one of them is still open when the capture of the cleartext
/// leg stops, its twin on the TLS leg is closed).
fn strip(rows: &Rows) -> Rows {
    rows.iter()
        .map(|r| {
            r.iter()
                .filter(|(k, _)| {
                    !(k.starts_with("ts")
                        || k.starts_with("frame")
                        || k.contains("flow")
                        || k.ends_with("_p")
                        || k.ends_with("bytes")
                        || k.ends_with("pkts")
                        || k.starts_with("open_at")
                        || k.starts_with("latency")
                        || k.starts_with("response_complete")
                        || k == &"vantage"
                        || k == &"file")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .collect()
}

#[test]
fn tls_without_keys_is_named_in_flows_findings_and_stderr() {
    let (t, stderr) = tables("nokeys", &[fixture("tls13.pcap").as_os_str()]);
    let flows = &t["flows"];
    assert_eq!(flows.len(), 7);
    for f in flows {
        assert_eq!(f["tls_version"], "TLSv1.3");
        assert_eq!(f["tls_cipher"], "TLS_AES_256_GCM_SHA384");
        assert_eq!(f["sni"], "localhost");
        assert_eq!(f["alpn"], "http/1.1");
        assert_eq!(f["decrypted"], "no_keys");
        assert_eq!(f["resp_p"], "3443");
    }
    let findings = &t["findings"];
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0]["kind"], "undecrypted_tls");
    assert_eq!(findings[0]["severity"], "warning");
    assert_eq!(findings[0]["observed"], "7 TLS connection(s) not decrypted");
    assert!(findings[0]["detail"].contains("127.0.0.1:3443 (SNI localhost)"));
    assert!(t["sessions"].is_empty());
    let no_keys = t["anomalies"]
        .iter()
        .filter(|a| a["code"] == "tls.no_keys")
        .count();
    assert_eq!(no_keys, 7);
    assert!(
        stderr.contains("7 TLS connection(s)") && stderr.contains("not seen"),
        "{stderr}"
    );
}

/// With its key log, each TLS capture reads as its cleartext twin: the same sessions, exchanges,
/// events, calls and findings (times, frames, flows and ports aside).
#[test]
fn tls_with_keys_reads_as_the_cleartext_leg() {
    for name in ["tls13", "tls12"] {
        let pcap = fixture(&format!("{name}.pcap"));
        let keys = fixture(&format!("{name}.keys"));
        let clear = fixture(&format!("{name}_clear.pcap"));
        let (t, stderr) = tables(
            &format!("{name}-keys"),
            &["--tls-keylog".as_ref(), keys.as_os_str(), pcap.as_os_str()],
        );
        let (c, _) = tables(&format!("{name}-clear"), &[clear.as_os_str()]);
        assert!(stderr.is_empty(), "{name}: {stderr}");
        assert!(t["flows"].iter().all(|f| f["decrypted"] == "ok"), "{name}");
        assert!(
            c["flows"].iter().all(|f| f["decrypted"].is_empty()),
            "{name}"
        );
        assert_eq!(t["sessions"].len(), 1, "{name}");
        for table in [
            "sessions",
            "exchanges",
            "events",
            "calls",
            "findings",
            "resumptions",
        ] {
            assert_eq!(strip(&t[table]), strip(&c[table]), "{name}: table {table}");
        }
        assert!(t["anomalies"].is_empty(), "{name}: {:#?}", t["anomalies"]);
    }
}

/// Secrets that do not fit: `decrypted` = `failed`, and the finding says so.
#[test]
fn tls_with_wrong_keys_is_failed() {
    let text = std::fs::read_to_string(fixture("tls13.keys")).unwrap();
    // Every secret changed in its last hex digit.
    let bad: String = text
        .lines()
        .map(|l| match l.rsplit_once(' ') {
            Some((head, s)) if !l.starts_with('#') => {
                let last = if s.ends_with('0') { '1' } else { '0' };
                format!("{head} {}{last}\n", &s[..s.len() - 1])
            }
            _ => format!("{l}\n"),
        })
        .collect();
    let keys = std::env::temp_dir().join(format!("mcpcap-tls-bad-{}.keys", std::process::id()));
    std::fs::write(&keys, bad).unwrap();
    let (t, stderr) = tables(
        "bad",
        &[
            "--tls-keylog".as_ref(),
            keys.as_os_str(),
            fixture("tls13.pcap").as_os_str(),
        ],
    );
    let _ = std::fs::remove_file(&keys);
    assert!(t["flows"].iter().all(|f| f["decrypted"] == "failed"));
    assert_eq!(t["findings"].len(), 1);
    assert!(t["findings"][0]["detail"].contains("7 whose records did not open"));
    assert!(stderr.contains("not seen"));
}

/// A key log without a single secret is an error of the command line (exit 2).
#[test]
fn tls_keylog_without_secrets_is_a_usage_error() {
    let keys = std::env::temp_dir().join(format!("mcpcap-tls-empty-{}.keys", std::process::id()));
    std::fs::write(&keys, "# nothing\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(["analyze", "--tls-keylog"])
        .arg(&keys)
        .arg(fixture("tls13.pcap"))
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&keys);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no TLS secrets"));
}

/// `pcap` (classic pcap) without its frame `drop` (1-based).
fn without_frame(pcap: &[u8], drop: usize) -> Vec<u8> {
    let mut out = pcap[..24].to_vec();
    let (mut at, mut n) = (24, 1);
    while at + 16 <= pcap.len() {
        let caplen = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        let end = at + 16 + caplen;
        if n != drop {
            out.extend_from_slice(&pcap[at..end]);
        }
        (at, n) = (end, n + 1);
    }
    out
}

/// A TLS record lost to a capture gap (frame 105 of tls13.pcap: one whole record of the count
/// call's event stream) is a gap in the plaintext; decryption goes on with the records after it.
#[test]
fn a_record_lost_in_a_gap_is_a_plaintext_gap_and_decryption_goes_on() {
    let pcap = std::fs::read(fixture("tls13.pcap")).unwrap();
    let cut = std::env::temp_dir().join(format!("mcpcap-tls-gap-{}.pcap", std::process::id()));
    std::fs::write(&cut, without_frame(&pcap, 105)).unwrap();
    let keys = fixture("tls13.keys");
    let (t, _) = tables(
        "gap",
        &["--tls-keylog".as_ref(), keys.as_os_str(), cut.as_os_str()],
    );
    let _ = std::fs::remove_file(&cut);
    assert!(t["flows"].iter().all(|f| f["decrypted"] == "ok"));
    let codes: Vec<&str> = t["anomalies"].iter().map(|a| a["code"].as_str()).collect();
    assert!(codes.contains(&"tls.gap"), "{codes:?}");
    assert!(!codes.contains(&"tls.decrypt_failed"), "{codes:?}");
    // The exchanges after the gap are all there, the DELETE last.
    let ex = &t["exchanges"];
    assert_eq!(ex.len(), 7);
    assert_eq!(ex[6]["method"], "DELETE");
    assert_eq!(ex[6]["status"], "200");
}

/// The tables every run of a capture and its copies must share: all but `files` and
/// `vantages`, which name the file read.
const SAME_TABLES: [&str; 6] = [
    "sessions",
    "exchanges",
    "events",
    "calls",
    "findings",
    "flows",
];

/// The key log embedded in the capture as a pcapng Decryption Secrets Block (`editcap
/// --inject-secrets`, `fixtures/gen/tls/run_tls.sh`) decrypts it without `--tls-keylog`: the
/// findings, sessions and every other table of the key-log run, and of the cleartext twin;
/// read from standard input alike.
#[test]
fn secrets_embedded_in_the_pcapng_decrypt_as_the_key_log_does() {
    for name in ["tls13", "tls12"] {
        let dsb = fixture(&format!("{name}_dsb.pcapng"));
        let pcap = fixture(&format!("{name}.pcap"));
        let keys = fixture(&format!("{name}.keys"));
        let clear = fixture(&format!("{name}_clear.pcap"));
        let (d, stderr) = tables(&format!("{name}-dsb"), &[dsb.as_os_str()]);
        let (k, _) = tables(
            &format!("{name}-dsbkeys"),
            &["--tls-keylog".as_ref(), keys.as_os_str(), pcap.as_os_str()],
        );
        let (c, _) = tables(&format!("{name}-dsbclear"), &[clear.as_os_str()]);
        assert!(stderr.is_empty(), "{name}: {stderr}");
        assert!(d["flows"].iter().all(|f| f["decrypted"] == "ok"), "{name}");
        assert_eq!(d["sessions"].len(), 1, "{name}");
        assert!(d["anomalies"].is_empty(), "{name}: {:#?}", d["anomalies"]);
        for table in SAME_TABLES {
            assert_eq!(
                d[table], k[table],
                "{name}: table {table} of the key-log run"
            );
        }
        for table in ["sessions", "findings", "exchanges", "events"] {
            assert_eq!(strip(&d[table]), strip(&c[table]), "{name}: table {table}");
        }
        let piped = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
            .args(["exchanges", "--format", "csv", "-"])
            .stdin(std::fs::File::open(&dsb).unwrap())
            .output()
            .unwrap();
        assert_eq!(piped.status.code(), Some(0), "{name}");
        assert_eq!(
            common::csv_rows(&String::from_utf8_lossy(&piped.stdout)),
            d["exchanges"],
            "{name}: standard input"
        );
    }
}

/// A key log block after the first packet is counted, and decrypts the connections whose
/// handshake follows it, not those before, whatever the number of threads: here it comes
/// after frame 10 of tls13.pcap, past the first connection's ServerHello (frame 6) and before
/// the second's (frame 27).
#[test]
fn secrets_after_the_first_packet_decrypt_what_follows() {
    let pcap = fixture("tls13.pcap");
    let dir = std::env::temp_dir().join(format!("mcpcap-tls-late-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (head, tail) = (dir.join("head.pcapng"), dir.join("tail.pcapng"));
    let late = dir.join("late.pcapng");
    // Frames 1–10, then the rest with the secrets in front of them: joined, the secrets come
    // after frame 10.
    let run = |args: &[&std::ffi::OsStr]| {
        let o = Command::new("editcap").args(args).output();
        o.is_ok_and(|o| o.status.success())
    };
    let made = run(&[
        "-r".as_ref(),
        pcap.as_os_str(),
        head.as_os_str(),
        "1-10".as_ref(),
    ]) && run(&[
        "--inject-secrets".as_ref(),
        format!("tls,{}", fixture("tls13.keys").display()).as_ref(),
        pcap.as_os_str(),
        tail.as_os_str(),
        "1-10".as_ref(),
    ]) && Command::new("mergecap")
        .args(["-a", "-w"])
        .arg(&late)
        .arg(&head)
        .arg(&tail)
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        let _ = std::fs::remove_dir_all(&dir);
        common::skip_without("editcap or mergecap");
        return;
    }
    let (t, _) = tables(
        "late1",
        &["--threads".as_ref(), "1".as_ref(), late.as_os_str()],
    );
    let (t3, _) = tables(
        "late3",
        &["--threads".as_ref(), "3".as_ref(), late.as_os_str()],
    );
    let _ = std::fs::remove_dir_all(&dir);
    for table in mcpcap::report::TABLE_NAMES {
        assert_eq!(t[table], t3[table], "table {table}: 1 thread against 3");
    }
    let decrypted: Vec<&str> = t["flows"].iter().map(|f| f["decrypted"].as_str()).collect();
    assert_eq!(decrypted, ["no_keys", "ok", "ok", "ok", "ok", "ok", "ok"]);
    let late: Vec<_> = t["anomalies"]
        .iter()
        .filter(|a| a["code"] == "pcapng.late_secrets")
        .collect();
    assert_eq!(late.len(), 1, "{:#?}", t["anomalies"]);
    assert!(
        late[0]["detail"].contains("decrypts the connections whose handshake comes after it"),
        "{late:?}"
    );
    // The first connection (initialize) is not seen, the rest of the session is: its records
    // end before the first exchange seen, but without its initialize the session may have
    // begun earlier, and it says so.
    let kinds: Vec<&str> = t["findings"].iter().map(|f| f["kind"].as_str()).collect();
    assert_eq!(kinds, ["undecrypted_tls", "partly_undecrypted"]);
    let f = &t["findings"][1];
    assert!(f["detail"].contains("its initialize is not seen"), "{f:?}");
    assert!(
        f["detail"].contains("F0 to 127.0.0.1:3443 (no_keys"),
        "{f:?}"
    );
    assert_eq!(t["sessions"][0]["verdict"], "unverifiable");
    assert_eq!(t["exchanges"].len(), 6);
}

use mcpcap::tcp::{Chunk, FlowMeta, StreamEvent, StreamSink};
use mcpcap::tls::{keylog::Secrets, TlsLayer, TlsOptions};

/// A stream event kept: a chunk of direction `d` (data, or a gap of its length), or the close.
#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Data(usize, Vec<u8>),
    Gap(usize, u64),
    Close,
}

/// The events of every connection, as the flow table hands them on, in order, with the
/// connection's flow, time and frame.
#[derive(Default)]
struct Recorded(Vec<(FlowMeta, Ev, i64, u64)>);

impl StreamSink for Recorded {
    fn event(&mut self, flow: FlowMeta, ev: StreamEvent<'_>, ts: i64, frame: u64) {
        let ev = match ev {
            StreamEvent::Chunk(d, Chunk::Data { bytes, .. }) => Ev::Data(d, bytes.to_vec()),
            StreamEvent::Chunk(d, Chunk::Gap { len, .. }) => Ev::Gap(d, len),
            StreamEvent::Close => Ev::Close,
            _ => return,
        };
        self.0.push((flow, ev, ts, frame));
    }
}

/// What the TLS stage hands on (to HTTP), per (flow, direction): the bytes, a gap as its
/// length in `?`.
#[derive(Default)]
struct Plain(BTreeMap<(usize, usize), Vec<u8>>);

impl StreamSink for Plain {
    fn event(&mut self, flow: FlowMeta, ev: StreamEvent<'_>, _: i64, _: u64) {
        match ev {
            StreamEvent::Chunk(d, Chunk::Data { bytes, .. }) => self
                .0
                .entry((flow.index, d))
                .or_default()
                .extend_from_slice(bytes),
            StreamEvent::Chunk(d, Chunk::Gap { len, .. }) => self
                .0
                .entry((flow.index, d))
                .or_default()
                .extend(std::iter::repeat_n(b'?', len as usize)),
            _ => {}
        }
    }
}

/// The TCP stream events of the capture `name` of `fixtures/mcp-tls/`.
fn tcp_events(name: &str) -> Vec<(FlowMeta, Ev, i64, u64)> {
    let mut rec = Recorded::default();
    common::flow_events(&fixture(name), &mut rec);
    rec.0
}

/// The key log `name` of `fixtures/mcp-tls/`.
fn secrets(name: &str) -> Secrets {
    let mut s = Secrets::default();
    s.add_keylog(&std::fs::read_to_string(fixture(name)).unwrap());
    s
}

/// `events` through a TLS stage with `secrets` (each chunk at its offset in its direction):
/// what it hands on, per (flow, direction), and the TLS stage.
fn through_tls(events: &[(FlowMeta, Ev, i64, u64)], secrets: &Secrets) -> (Plain, TlsLayer) {
    let mut tls = TlsLayer::new(TlsOptions {
        secrets: Some(std::sync::Arc::new(secrets.clone())),
    });
    let mut plain = Plain::default();
    let mut offsets: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    for (flow, ev, ts, frame) in events {
        let ev = match ev {
            Ev::Data(d, bytes) => {
                let at = offsets.entry((flow.index, *d)).or_default();
                let offset = *at;
                *at += bytes.len() as u64;
                StreamEvent::Chunk(*d, Chunk::Data { offset, bytes })
            }
            Ev::Gap(d, len) => {
                let at = offsets.entry((flow.index, *d)).or_default();
                let offset = *at;
                *at += len;
                StreamEvent::Chunk(*d, Chunk::Gap { offset, len: *len })
            }
            Ev::Close => StreamEvent::Close,
        };
        tls.event(*flow, ev, *ts, *frame, &mut plain);
    }
    (plain, tls)
}

/// The events of flow `fi` with direction `d`'s bytes split once more, `at` bytes into that
/// direction; `None` when `at` is at a chunk boundary already or past the end.
fn split_at(
    events: &[(FlowMeta, Ev, i64, u64)],
    fi: usize,
    d: usize,
    at: usize,
) -> Option<Vec<(FlowMeta, Ev, i64, u64)>> {
    let mut out = Vec::with_capacity(events.len() + 1);
    let mut seen = 0;
    let mut split = false;
    for e in events.iter().filter(|e| e.0.index == fi) {
        match &e.1 {
            Ev::Data(dd, b) if *dd == d && seen < at && at < seen + b.len() => {
                let k = at - seen;
                out.push((e.0, Ev::Data(d, b[..k].to_vec()), e.2, e.3));
                out.push((e.0, Ev::Data(d, b[k..].to_vec()), e.2, e.3));
                split = true;
                seen += b.len();
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

/// A TLS connection's bytes split at every offset of either direction give the same
/// plaintext to HTTP and the same flows row: here the count call's connection of each capture
/// (TLS 1.3 and 1.2: the one with the most records), its records opened every time.
#[test]
fn tls_records_split_at_every_byte_decrypt_alike() {
    for name in ["tls13", "tls12"] {
        let events = tcp_events(&format!("{name}.pcap"));
        let keys = secrets(&format!("{name}.keys"));
        let (whole, tls) = through_tls(&events, &keys);
        let (fi, row) = tls
            .flows
            .iter()
            .max_by_key(|(_, t)| t.app_records)
            .map(|(f, t)| (*f, t.clone()))
            .unwrap();
        assert_eq!(row.decrypted(), mcpcap::tls::Decrypted::Yes, "{name}");
        let want: Vec<_> = (0..2).map(|d| whole.0[&(fi, d)].clone()).collect();
        assert!(want.iter().all(|p| !p.contains(&b'?')), "{name}: a gap");
        assert!(
            String::from_utf8_lossy(&want[0]).contains("tools/call"),
            "{name}"
        );
        let mine: Vec<_> = events.iter().filter(|e| e.0.index == fi).cloned().collect();
        let mut splits = 0;
        for d in 0..2 {
            let len: usize = mine
                .iter()
                .map(|e| match &e.1 {
                    Ev::Data(dd, b) if *dd == d => b.len(),
                    _ => 0,
                })
                .sum();
            for at in 1..len {
                let Some(cut) = split_at(&mine, fi, d, at) else {
                    continue;
                };
                let (got, t) = through_tls(&cut, &keys);
                assert_eq!(t.flows[&fi], row, "{name}: direction {d} split at {at}");
                for (dd, w) in want.iter().enumerate() {
                    assert!(
                        got.0.get(&(fi, dd)) == Some(w),
                        "{name}: direction {d} split at {at}: the plaintext of direction {dd} differs"
                    );
                }
                splits += 1;
            }
        }
        assert!(splits > 4000, "{name}: {splits} splits");
    }
}

/// tshark's decrypted application data of TCP stream `stream` (`-z follow,tls,raw`): the
/// bytes sent by its `Node 0`, by the other side, and `Node 0` as `address:port`.
fn tshark_follow_tls(
    cap: &std::path::Path,
    keys: &std::path::Path,
    stream: usize,
) -> (Vec<u8>, Vec<u8>, String) {
    let o = Command::new("tshark")
        .arg("-r")
        .arg(cap)
        .arg("-o")
        .arg(format!("tls.keylog_file:{}", keys.display()))
        .args(["-q", "-z", &format!("follow,tls,raw,{stream}")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let (mut first, mut other, mut node0) = (Vec::new(), Vec::new(), String::new());
    let hex = |s: &str| -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    };
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("Node 0: ") {
            node0 = n.to_string();
        } else if line.starts_with("====") || line.contains(':') || line.trim().is_empty() {
            continue;
        } else if let Some(h) = line.strip_prefix('\t') {
            other.extend(hex(h.trim()));
        } else {
            first.extend(hex(line.trim()));
        }
    }
    (first, other, node0)
}

/// Peer check: per TLS connection of the fixture captures, the decrypted application bytes the
/// TLS stage hands to HTTP are those tshark decrypts with the same key log (`-z
/// follow,tls,raw`), in both directions. Skipped without tshark, saying so, unless
/// `MCPCAP_REQUIRE_READERS` is set.
#[test]
fn decrypted_bytes_match_tshark_with_the_same_keys() {
    if !common::have_all(&["tshark"]) {
        return;
    }
    for (name, conns) in [("tls13", 7), ("tls12", 7), ("tls_edges", 4)] {
        let cap = fixture(&format!("{name}.pcap"));
        let keys = fixture(&format!("{name}.keys"));
        let events = tcp_events(&format!("{name}.pcap"));
        let (plain, tls) = through_tls(&events, &secrets(&format!("{name}.keys")));
        // Flows are numbered, as tshark numbers TCP streams, in order of their first segment.
        let metas: BTreeMap<usize, FlowMeta> = events.iter().map(|e| (e.0.index, e.0)).collect();
        assert_eq!(metas.len(), conns, "{name}");
        assert_eq!(tls.flows.len(), conns, "{name}");
        for (&fi, meta) in &metas {
            let (first, other, node0) = tshark_follow_tls(&cap, &keys, fi);
            let end = |d: usize| format!("{}:{}", meta.ends[d].0, meta.ends[d].1);
            let d0 = (0..2)
                .find(|&d| end(d) == node0)
                .unwrap_or_else(|| panic!("{name} F{fi}: tshark's node 0 {node0} is neither end"));
            let mine = |d: usize| plain.0.get(&(fi, d)).cloned().unwrap_or_default();
            assert!(!first.is_empty() && !other.is_empty(), "{name} F{fi}");
            assert!(
                mine(d0) == first,
                "{name} F{fi}: the bytes {node0} sent differ from tshark's"
            );
            assert!(
                mine(1 - d0) == other,
                "{name} F{fi}: the bytes to {node0} differ from tshark's"
            );
        }
    }
}

/// OpenSSL's corner cases (`tls_edges.pcap`): a HelloRetryRequest, a PSK resumption, a
/// KeyUpdate of both directions and TLS 1.2 ChaCha20-Poly1305 all decrypt, each connection
/// carrying its one request and response whole.
#[test]
fn retry_resumption_key_update_and_chacha_decrypt() {
    let (t, stderr) = tables(
        "edges",
        &[
            "--tls-keylog".as_ref(),
            fixture("tls_edges.keys").as_os_str(),
            fixture("tls_edges.pcap").as_os_str(),
        ],
    );
    assert!(stderr.is_empty(), "{stderr}");
    let flows: Vec<(String, String, String)> = t["flows"]
        .iter()
        .map(|r| {
            (
                r["tls_version"].clone(),
                r["tls_cipher"].clone(),
                r["decrypted"].clone(),
            )
        })
        .collect();
    let c13 = "TLS_CHACHA20_POLY1305_SHA256";
    let c12 = "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256";
    let want = |v: &str, c: &str| (v.to_string(), c.to_string(), "ok".to_string());
    assert_eq!(
        flows,
        [
            want("TLSv1.3", c13),
            want("TLSv1.3", c13),
            want("TLSv1.3", c13),
            want("TLSv1.2", c12)
        ]
    );
    let ex: Vec<(String, String, String)> = t["exchanges"]
        .iter()
        .map(|r| {
            (
                r["target"].clone(),
                r["status"].clone(),
                r["response_complete"].clone(),
            )
        })
        .collect();
    let w = |p: &str| (p.to_string(), "200".to_string(), "true".to_string());
    assert_eq!(ex, [w("/hrr"), w("/psk"), w("/keyupdate"), w("/tls12")]);
    assert!(t["anomalies"].is_empty(), "{:?}", t["anomalies"]);
}

/// A TLS 1.3 server names the protocol it chose in its encrypted EncryptedExtensions: without
/// keys `alpn` is what the client offered, decrypted it is the server's choice (`h2`), as
/// tshark's `tls.handshake.extensions_alpn_str` of the server's flight says.
#[test]
fn alpn_is_the_servers_choice_once_decrypted() {
    let cap = common::fixture_path("mcp-h2/h2_fork_client.pcap");
    let keys = common::fixture_path("mcp-h2/h2_fork_client.keys");
    let alpn = |t: &BTreeMap<String, Rows>| -> Vec<String> {
        t["flows"].iter().map(|r| r["alpn"].clone()).collect()
    };
    let (plain, _) = tables("alpn-nokeys", &[cap.as_os_str()]);
    assert_eq!(alpn(&plain), ["http/1.1,h2", "http/1.1,h2"]);
    let (keyed, _) = tables(
        "alpn-keys",
        &["--tls-keylog".as_ref(), keys.as_os_str(), cap.as_os_str()],
    );
    assert_eq!(alpn(&keyed), ["h2", "h2"]);
    if common::have_all(&["tshark"]) {
        let o = Command::new("tshark")
            .arg("-r")
            .arg(&cap)
            .arg("-o")
            .arg(format!("tls.keylog_file:{}", keys.display()))
            .args(["-Y", "tls.handshake.type == 8", "-T", "fields"])
            .args(["-e", "tls.handshake.extensions_alpn_str"])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(out.lines().collect::<Vec<_>>(), ["h2", "h2"], "{out}");
    }
}
