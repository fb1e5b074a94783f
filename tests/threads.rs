//! `--threads N` shards flows over worker threads after decoding; every table must be byte for
//! byte what one thread writes — on fixture captures (keep-alive, pipelining through proxies,
//! gaps, two vantage points of one run) and on a generated capture with thousands of flows,
//! retransmissions and reordering.

use std::path::{Path, PathBuf};
use std::process::Command;

use mcpcap::report::TABLE_NAMES as TABLES;

fn tables(files: &[&Path], threads: usize, out: &Path) -> Vec<(String, String)> {
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args([
            "analyze",
            "--format",
            "csv",
            "--fail-on",
            "never",
            "--quiet",
            "--threads",
        ])
        .arg(threads.to_string())
        .arg("--out")
        .arg(out)
        .args(files)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    TABLES
        .iter()
        .map(|t| {
            (
                t.to_string(),
                std::fs::read_to_string(out.join(format!("{t}.csv"))).unwrap(),
            )
        })
        .collect()
}

#[test]
fn threads_give_the_same_tables() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("mcpcap-threads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let synth = dir.join("synth.pcap");
    let file = std::fs::File::create(&synth).unwrap();
    mcpcap::synth::write_capture(
        std::io::BufWriter::new(file),
        &mcpcap::synth::SynthOptions {
            bytes: 6 << 20,
            seed: 5,
            concurrent: 24,
        },
    )
    .unwrap();
    let mut files = vec![synth];
    for f in [
        "fixtures/mcp/fork_restart.pcap",
        "fixtures/mcp-gen/many_sessions.pcap",
        "fixtures/mcp-gen/tcp_noise_s7.pcap",
        "fixtures/mcp-sdk/buffered_nginx.pcap",
        // Streams the capture began inside (headless), adopted by resumptions.
        "fixtures/mcp-cut/many_sessions_cut.pcap",
        "fixtures/mcp-cut/fork_restart_client_cut.pcap",
    ] {
        files.push(root.join(f));
    }
    let mut runs: Vec<Vec<&Path>> = files.iter().map(|f| vec![f.as_path()]).collect();
    // Two vantage points of one run (both legs of the proxy, and the client leg on its own).
    let both = root.join("fixtures/mcp/fork_restart.pcap");
    let client = root.join("fixtures/mcp/fork_restart_client.pcap");
    runs.push(vec![both.as_path(), client.as_path()]);
    for run in &runs {
        let one = tables(run, 1, &dir.join("one"));
        for n in [2, 3] {
            let many = tables(run, n, &dir.join(format!("t{n}")));
            for ((t, a), (_, b)) in one.iter().zip(&many) {
                assert!(a == b, "{run:?}: table {t} differs with --threads {n}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Which connections an analyzer has seen open or closed (what tells a rotated part of a capture
/// from another capture) is the same whether its stages run inline or on workers.
#[test]
fn seen_connections_do_not_depend_on_threads() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let files = [
        "fixtures/mcp/fork_restart.pcap",
        "fixtures/mcp-gen/many_sessions.pcap",
        "fixtures/mcp-gen/tcp_noise_s7.pcap",
    ];
    for f in files {
        let mut inline = mcpcap::Analyzer::new(Default::default());
        let mut workers = mcpcap::Analyzer::new(Default::default()).with_workers(2);
        let mut probes = Vec::new();
        let mut anomalies = mcpcap::anomaly::Anomalies::default();
        let file = std::fs::File::open(root.join(f)).unwrap();
        mcpcap::capture::read_capture(file, 1, &mut anomalies, |fr| {
            inline.frame(&fr);
            workers.frame(&fr);
            if let mcpcap::decode::Decoded::Tcp(seg) =
                mcpcap::decode::decode(fr.linktype, fr.data, fr.orig_len)
            {
                let k = mcpcap::conn_key(&seg);
                probes.push((k, false, true));
                probes.push((k, true, false));
            }
        })
        .unwrap();
        assert!(!probes.is_empty());
        for p in probes.chunks(7) {
            assert_eq!(inline.continuity(p), workers.continuity(p), "{f}");
        }
        let all = inline.continuity(&probes);
        assert_eq!(all, workers.continuity(&probes), "{f}");
        // Not vacuous: the connections were seen, some closed or still open.
        assert!(all.closed > 0 || all.open > 0, "{f}: {all:?}");
        workers.finish();
    }
}
