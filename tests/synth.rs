//! The benchmark generator says what it wrote, and the analysis finds it: every resumption, and
//! the forks (a replica without the log that starts a fresh one numbered from 1:
//! docs/resumption.md, "Forks").

mod common;

#[test]
fn the_analysis_finds_the_resumptions_and_forks_synth_wrote() {
    let dir = std::env::temp_dir().join(format!("mcpcap-synth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("synth.pcap");
    let summary = mcpcap::synth::write_capture(
        std::io::BufWriter::new(std::fs::File::create(&pcap).unwrap()),
        &mcpcap::synth::SynthOptions {
            bytes: 6 << 20,
            seed: 4,
            concurrent: 64,
        },
    )
    .unwrap();
    assert!(
        summary.forks >= 1 && summary.resumptions > summary.forks,
        "{summary:?}"
    );
    let out = dir.join("out");
    common::write_csv_tables(&pcap, &out);
    let table = std::fs::read_to_string(out.join("resumptions.csv")).unwrap();
    let verdicts = common::csv_column(&table, "verdict");
    assert_eq!(verdicts.len() as u64, summary.resumptions, "{table}");
    let forked = verdicts.iter().filter(|v| *v == "forked").count() as u64;
    assert_eq!(forked, summary.forks, "{table}");
    assert!(
        verdicts.iter().all(|v| v == "forked" || v == "resumed"),
        "{table}"
    );
    let findings = std::fs::read_to_string(out.join("findings.csv")).unwrap();
    let regressions = common::csv_rows(&findings)
        .iter()
        .filter(|f| f["kind"] == "id_regression" && f["severity"] == "error")
        .count() as u64;
    assert_eq!(regressions, summary.forks, "{findings}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The frames of a classic little-endian pcap (as `synth` writes it): their bytes.
fn pcap_frames(pcap: &[u8]) -> Vec<&[u8]> {
    let mut frames = Vec::new();
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let caplen = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        frames.push(&pcap[at + 16..at + 16 + caplen]);
        at += 16 + caplen;
    }
    frames
}

/// A synth frame's TCP flags and payload length (Ethernet, 20-byte IPv4 and TCP headers).
fn tcp(frame: &[u8]) -> (u8, usize) {
    (frame[14 + 20 + 13], frame.len() - 14 - 40)
}

/// The cleartext frame number of each frame of the TLS capture (`None`: a TLS handshake
/// frame), checking on the way that the frames pair up: the same flags, the same payload
/// plus one record's overhead (22 bytes) for each data segment.
fn frame_map(clear: &[u8], tls: &[u8]) -> Vec<Option<u64>> {
    let (clear, tls) = (pcap_frames(clear), pcap_frames(tls));
    let mut map = Vec::new();
    let mut c = 0;
    let mut skip = 0;
    let mut syn_ack = false;
    for f in &tls {
        if skip > 0 {
            skip -= 1;
            map.push(None);
            continue;
        }
        let (flags, len) = tcp(f);
        let (cflags, clen) = tcp(clear[c]);
        assert_eq!(flags, cflags, "TLS frame {}", map.len() + 1);
        assert_eq!(len, if clen == 0 { 0 } else { clen + 22 });
        c += 1;
        map.push(Some(c as u64));
        // The third frame of a TCP handshake is followed by the three of the TLS handshake.
        if syn_ack && flags == 0x10 {
            skip = 3;
        }
        syn_ack = flags == 0x12;
    }
    assert_eq!(c, clear.len(), "every cleartext frame has its TLS one");
    map
}

/// Column `name` of table `text`'s rows with frame numbers (columns `frame`, `frame_*`) mapped
/// through `map`, and the digits of the columns that quote frame numbers in text (`detail`,
/// `wireshark_filter`) blanked; `file` dropped. Rows as sorted maps.
fn normalised(
    text: &str,
    map: Option<&[Option<u64>]>,
) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut rows = common::csv_rows(text);
    for r in &mut rows {
        r.remove("file");
        for (k, v) in r.iter_mut() {
            if (k == "frame" || k.starts_with("frame_")) && !v.is_empty() {
                if let Some(map) = map {
                    let n: usize = v.parse().unwrap();
                    *v = map[n - 1]
                        .expect("a TLS handshake frame in a table")
                        .to_string();
                }
            } else if k == "detail" || k == "wireshark_filter" {
                *v = v.replace(|c: char| c.is_ascii_digit(), "#");
            }
        }
    }
    rows
}

#[test]
fn the_tls_synth_decrypts_to_the_tables_of_the_cleartext_one() {
    let dir = std::env::temp_dir().join(format!("mcpcap-synth-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (clear, tls, keys) = (
        dir.join("c.pcap"),
        dir.join("t.pcap"),
        dir.join("t.pcap.keys"),
    );
    let synth = |extra: &[&str], out: &std::path::Path| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_mcpcap"))
            .args([
                "synth",
                "--bytes",
                "3M",
                "--seed",
                "5",
                "--concurrent",
                "24",
                "--out",
            ])
            .arg(out)
            .args(extra)
            .output()
            .expect("run mcpcap");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    synth(&[], &clear);
    synth(&["--tls"], &tls);
    let (cb, tb) = (std::fs::read(&clear).unwrap(), std::fs::read(&tls).unwrap());
    let map = frame_map(&cb, &tb);
    let key_lines = std::fs::read_to_string(&keys).unwrap().lines().count();
    let handshakes = map.iter().filter(|m| m.is_none()).count();
    assert_eq!(
        key_lines / 4 * 3,
        handshakes,
        "four key log lines and three frames a connection"
    );

    common::write_csv_tables_with(&clear, &dir.join("c"), &[]);
    common::write_csv_tables_with(
        &tls,
        &dir.join("t"),
        &["--tls-keylog".as_ref(), keys.as_os_str()],
    );
    let table = |side: &str, t: &str| {
        std::fs::read_to_string(dir.join(side).join(format!("{t}.csv"))).unwrap()
    };
    for t in [
        "sessions",
        "streams",
        "resumptions",
        "findings",
        "events",
        "exchanges",
        "calls",
        "anomalies",
    ] {
        let (c, x) = (table("c", t), table("t", t));
        assert!(
            t == "anomalies" || common::csv_rows(&c).len() > 1,
            "{t}: {c}"
        );
        assert_eq!(normalised(&c, None), normalised(&x, Some(&map)), "{t}");
    }
    // The sessions table quotes no frame: it is the same byte for byte.
    assert_eq!(table("c", "sessions"), table("t", "sessions"));
    let flows = common::csv_rows(&table("t", "flows"));
    assert_eq!(flows.len(), common::csv_rows(&table("c", "flows")).len());
    for f in &flows {
        assert_eq!(
            (
                &*f["tls_version"],
                &*f["tls_cipher"],
                &*f["sni"],
                &*f["alpn"],
                &*f["decrypted"]
            ),
            (
                "TLSv1.3",
                "TLS_AES_128_GCM_SHA256",
                "mcp.example",
                "http/1.1",
                "ok"
            ),
            "{f:?}"
        );
    }

    // Without the key log: no MCP, and every connection is an undecrypted one.
    common::write_csv_tables_with(&tls, &dir.join("n"), &[]);
    assert_eq!(common::csv_rows(&table("n", "sessions")).len(), 0);
    let findings = common::csv_rows(&table("n", "findings"));
    assert!(!findings.is_empty());
    assert!(
        findings.iter().all(|f| f["kind"] == "undecrypted_tls"),
        "{findings:?}"
    );
    let anomalies = table("n", "anomalies");
    assert!(
        common::column_has(&anomalies, "code", "tls.no_keys"),
        "{anomalies}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// tshark's HTTP messages of `pcap` (port 3000 read as `proto`, with `extra` options): per
/// request or response its TCP stream, method and URI, status code and body length.
fn tshark_http(pcap: &std::path::Path, proto: &str, extra: &[&str]) -> Vec<String> {
    let o = std::process::Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(["-d", &format!("tcp.port==3000,{proto}")])
        .args(extra)
        .args(["-Y", "http.request || http.response", "-T", "fields"])
        .args(["-e", "tcp.stream"])
        .args(["-e", "http.request.method", "-e", "http.request.uri"])
        .args([
            "-e",
            "http.response.code",
            "-e",
            "http.content_length_header",
        ])
        .output()
        .expect("run tshark");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Peer check: tshark, given the key log, decrypts the TLS synth to the HTTP messages it reads
/// in the cleartext synth of the same seed (its AEAD tags check out). Skipped without tshark,
/// saying so, unless `MCPCAP_REQUIRE_READERS` is set.
#[test]
fn tshark_decrypts_the_tls_synth_to_the_cleartext_http() {
    if !common::have_all(&["tshark"]) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("mcpcap-synth-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (clear, tls) = (dir.join("c.pcap"), dir.join("t.pcap"));
    let opts = mcpcap::synth::SynthOptions {
        bytes: 400_000,
        seed: 9,
        concurrent: 16,
    };
    let file = |p: &std::path::Path| std::io::BufWriter::new(std::fs::File::create(p).unwrap());
    mcpcap::synth::write_capture(file(&clear), &opts).unwrap();
    let mut keys = Vec::new();
    mcpcap::synth::write_tls_capture(file(&tls), &mut keys, &opts).unwrap();
    let keylog = dir.join("t.keys");
    std::fs::write(&keylog, &keys).unwrap();
    let want = tshark_http(&clear, "http", &[]);
    assert!(want.len() > 100, "{want:?}");
    let opt = format!("tls.keylog_file:{}", keylog.display());
    assert_eq!(tshark_http(&tls, "tls", &["-o", &opt]), want);
    // Without the keys tshark sees no HTTP in it.
    assert_eq!(tshark_http(&tls, "tls", &[]), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}
