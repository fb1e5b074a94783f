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
