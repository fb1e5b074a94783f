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
        assert!(t["flows"].iter().all(|f| f["decrypted"] == "yes"), "{name}");
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
    assert!(t["flows"].iter().all(|f| f["decrypted"] == "yes"));
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
        assert!(d["flows"].iter().all(|f| f["decrypted"] == "yes"), "{name}");
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

/// Secrets after the first packet, and secrets of another type, are counted anomalies; the
/// secrets are not used (they are fixed before the packets are read).
#[test]
fn secrets_after_the_first_packet_are_counted_not_used() {
    let pcap = fixture("tls13.pcap");
    let dir = std::env::temp_dir().join(format!("mcpcap-tls-late-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (head, tail) = (dir.join("head.pcapng"), dir.join("tail.pcapng"));
    let late = dir.join("late.pcapng");
    // Frame 1 alone, then the rest with the secrets in front of them: joined, the secrets come
    // after the first packet.
    let run = |args: &[&std::ffi::OsStr]| {
        let o = Command::new("editcap").args(args).output();
        o.is_ok_and(|o| o.status.success())
    };
    let made = run(&[
        "-r".as_ref(),
        pcap.as_os_str(),
        head.as_os_str(),
        "1".as_ref(),
    ]) && run(&[
        "--inject-secrets".as_ref(),
        format!("tls,{}", fixture("tls13.keys").display()).as_ref(),
        pcap.as_os_str(),
        tail.as_os_str(),
        "1".as_ref(),
    ]) && Command::new("mergecap")
        .args(["-a", "-w"])
        .arg(&late)
        .arg(&head)
        .arg(&tail)
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        let _ = std::fs::remove_dir_all(&dir);
        if std::env::var_os("MCPCAP_REQUIRE_READERS").is_some() {
            panic!("editcap and mergecap are needed (MCPCAP_REQUIRE_READERS is set)");
        }
        eprintln!("skipped: editcap or mergecap (Wireshark) not found");
        return;
    }
    let (t, _) = tables("late", &[late.as_os_str()]);
    let _ = std::fs::remove_dir_all(&dir);
    let codes: Vec<&str> = t["anomalies"].iter().map(|a| a["code"].as_str()).collect();
    assert!(t["flows"].iter().all(|f| f["decrypted"] == "no_keys"));
    assert!(codes.contains(&"pcapng.late_secrets"), "{codes:?}");
    let late = t["anomalies"]
        .iter()
        .find(|a| a["code"] == "pcapng.late_secrets")
        .unwrap();
    assert!(late["detail"].contains("not used"), "{late:?}");
}
