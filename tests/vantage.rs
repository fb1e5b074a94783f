//! Several vantage points of one run: files whose times overlap are analysed each on its own,
//! their clocks aligned, and one exchange seen at several points counted once.
//!
//! The run is `fixtures/mcp/fork_restart.pcap` (nginx on 3300 in front of backends 3301 and
//! 3302, both legs captured). It is cut into a "load balancer front" capture (port 3300) and a
//! "backend side" capture (ports 3301/3302) whose clock runs 250 ms ahead; and, separately, copied
//! whole as a second capture whose clock runs 1.5 s behind.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// One pcap record: its 16-byte header and its frame.
type Record = ([u8; 16], Vec<u8>);
/// One finding as compared here: (session, kind, last_event_id, event_id).
type Key = (String, String, String, String);

/// The records of a classic little-endian Ethernet pcap: (header, records).
fn records(pcap: &[u8]) -> (Vec<u8>, Vec<Record>) {
    assert_eq!(
        pcap[..4],
        [0xd4, 0xc3, 0xb2, 0xa1],
        "little-endian µs pcap expected"
    );
    let mut out = Vec::new();
    let mut i = 24;
    while i + 16 <= pcap.len() {
        let mut h = [0u8; 16];
        h.copy_from_slice(&pcap[i..i + 16]);
        let len = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
        out.push((h, pcap[i + 16..i + 16 + len].to_vec()));
        i += 16 + len;
    }
    (pcap[..24].to_vec(), out)
}

/// TCP ports of an Ethernet/IPv4 frame.
fn ports(frame: &[u8]) -> Option<(u16, u16)> {
    if frame.len() < 14 + 20 || frame[12..14] != [0x08, 0x00] {
        return None;
    }
    let ihl = (frame[14] & 0x0f) as usize * 4;
    let t = 14 + ihl;
    (frame.get(23) == Some(&6) && frame.len() >= t + 4).then(|| {
        (
            u16::from_be_bytes([frame[t], frame[t + 1]]),
            u16::from_be_bytes([frame[t + 2], frame[t + 3]]),
        )
    })
}

/// Write the records that `keep` accepts, their times moved by `shift_us`.
fn write(
    path: &Path,
    header: &[u8],
    recs: &[Record],
    keep: impl Fn(u16, u16) -> bool,
    shift_us: i64,
) {
    let mut out = header.to_vec();
    for (h, data) in recs {
        let Some((a, b)) = ports(data) else { continue };
        if !keep(a, b) {
            continue;
        }
        let sec = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as i64;
        let usec = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as i64;
        let t = sec * 1_000_000 + usec + shift_us;
        let mut nh = *h;
        nh[..4].copy_from_slice(&((t / 1_000_000) as u32).to_le_bytes());
        nh[4..8].copy_from_slice(&((t % 1_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&nh);
        out.extend_from_slice(data);
    }
    std::fs::write(path, out).unwrap();
}

/// `analyze --format csv` into `out`; returns (findings as (session, kind, last_event_id,
/// event_id) sorted, the vantages table rows, the number of exchange rows and of client-facing ones).
fn run(files: &[&Path], out: &Path) -> (Vec<Key>, Vec<Vec<String>>, usize, usize) {
    let o = Command::new(env!("CARGO_BIN_EXE_mcpcap"))
        .args(["analyze", "--format", "csv", "--fail-on", "never", "--out"])
        .arg(out)
        .args(files)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let read =
        |t: &str| common::csv_rows(&std::fs::read_to_string(out.join(format!("{t}.csv"))).unwrap());
    let mut findings: Vec<Key> = read("findings")
        .into_iter()
        .map(|f| {
            (
                f["session_id"].clone(),
                f["kind"].clone(),
                f["last_event_id"].clone(),
                f["event_id"].clone(),
            )
        })
        .collect();
    findings.sort();
    let vantages = read("vantages")
        .into_iter()
        .map(|v| {
            vec![
                v["vantage"].clone(),
                v["clock_offset_us"].clone(),
                v["offset_basis"].clone(),
            ]
        })
        .collect();
    let exchanges = read("exchanges");
    let client = exchanges.iter().filter(|e| e["hop_of"].is_empty()).count();
    (findings, vantages, exchanges.len(), client)
}

fn setup(tag: &str) -> (PathBuf, Vec<u8>) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("mcpcap-vantage-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    (
        dir,
        std::fs::read(root.join("fixtures/mcp/fork_restart.pcap")).unwrap(),
    )
}

#[test]
fn front_and_backend_captures_with_skewed_clocks() {
    let (dir, whole) = setup("hops");
    let (header, recs) = records(&whole);
    let front = dir.join("front.pcap");
    let back = dir.join("back.pcap");
    write(&front, &header, &recs, |a, b| a == 3300 || b == 3300, 0);
    write(
        &back,
        &header,
        &recs,
        |a, b| a != 3300 && b != 3300,
        250_000,
    );
    std::fs::write(dir.join("whole.pcap"), &whole).unwrap();
    let (want, one, n, client) = run(&[&dir.join("whole.pcap")], &dir.join("o1"));
    let (got, two, m, client2) = run(&[&back, &front], &dir.join("o2"));
    assert_eq!(got, want);
    assert!(want.iter().any(|f| f.1 == "backend_switch"), "{want:?}");
    assert_eq!(one.len(), 1);
    assert_eq!(two.len(), 2, "{two:?}");
    // v1 is the front (first frame first); the backend side's clock is found 250 ms ahead, give or
    // take nginx's forwarding delay.
    assert_eq!(two[0], ["v1", "0", "reference"]);
    let off: i64 = two[1][1].parse().unwrap();
    assert!((off - 250_000).abs() < 5_000, "{two:?}");
    assert_eq!(two[1][2], "adjacent_hop");
    // Nothing counted twice: the same exchanges, the same client-facing ones.
    assert_eq!((m, client2), (n, client));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_same_capture_from_two_points() {
    let (dir, whole) = setup("copy");
    let (header, recs) = records(&whole);
    let a = dir.join("a.pcap");
    let b = dir.join("b.pcap");
    write(&a, &header, &recs, |_, _| true, 0);
    write(&b, &header, &recs, |_, _| true, -1_500_000);
    let (want, _, n, client) = run(&[&a], &dir.join("o1"));
    let (got, two, m, client2) = run(&[&a, &b], &dir.join("o2"));
    assert_eq!(got, want);
    // b starts first, so it is v1; a's clock is 1.5 s ahead of it, exactly (same connections).
    assert_eq!(two[0], ["v1", "0", "reference"]);
    assert_eq!(two[1], ["v2", "1500000", "same_connection"]);
    // Every exchange is seen twice; the client-facing ones are the same.
    assert_eq!((m, client2), (2 * n, client));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_gap_in_one_copy_is_filled_by_the_other() {
    let (dir, whole) = setup("gap");
    let (header, recs) = records(&whole);
    // The copy seen first (its clock is behind) lost the largest server→client data frame.
    let lost = recs
        .iter()
        .enumerate()
        .filter(|(_, (_, d))| ports(d).is_some_and(|(a, _)| a == 3300))
        .max_by_key(|(_, (_, d))| d.len())
        .map(|(i, _)| i)
        .unwrap();
    let kept: Vec<_> = recs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != lost)
        .map(|(_, r)| r.clone())
        .collect();
    let a = dir.join("a.pcap");
    let b = dir.join("b.pcap");
    write(&a, &header, &recs, |_, _| true, 0);
    write(&b, &header, &kept, |_, _| true, -1_500_000);
    let (want, ..) = run(&[&a], &dir.join("o1"));
    let (alone, ..) = run(&[&b], &dir.join("o2"));
    assert_ne!(alone, want, "the lost frame must matter on its own");
    let (got, ..) = run(&[&a, &b], &dir.join("o3"));
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fork_named_by_backend_from_both_legs_same_as_client_leg() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("mcpcap-vantage-fork-{}", std::process::id()));
    let (both, ..) = run(
        &[&root.join("fixtures/mcp/fork_restart.pcap")],
        &dir.join("a"),
    );
    let (client, ..) = run(
        &[&root.join("fixtures/mcp/fork_restart_client.pcap")],
        &dir.join("b"),
    );
    assert_eq!(both, client);
    let text = std::fs::read_to_string(dir.join("a/findings.csv")).unwrap();
    let findings = common::csv_rows(&text);
    let switch = findings
        .iter()
        .find(|f| f["kind"] == "backend_switch")
        .unwrap();
    assert!(
        switch["observed"].contains("127.0.0.1:3302 (b2)")
            && switch["expected"].contains("127.0.0.1:3301 (b1)")
            && switch["detail"].contains("127.0.0.1:3302 (b2)")
            && switch["detail"].contains("127.0.0.1:3301 (b1)"),
        "{switch:?}"
    );
    let resumptions = std::fs::read_to_string(dir.join("a/resumptions.csv")).unwrap();
    let first = &common::csv_rows(&resumptions)[0];
    assert_eq!(
        (first["backend"].as_str(), first["cursor_backend"].as_str()),
        ("127.0.0.1:3302 (b2)", "127.0.0.1:3301 (b1)"),
        "{resumptions}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_later_copy_of_the_same_connections_is_another_vantage_point() {
    // A second point captured the same run, its clock so far behind that its file starts after
    // the first one ends: by time it could be a rotated part, but it carries the same, already
    // closed connections.
    let (dir, whole) = setup("later");
    let (header, recs) = records(&whole);
    let a = dir.join("a.pcap");
    let b = dir.join("b.pcap");
    write(&a, &header, &recs, |_, _| true, 0);
    write(&b, &header, &recs, |_, _| true, 60_000_000);
    let (want, _, n, client) = run(&[&a], &dir.join("o1"));
    let (got, two, m, client2) = run(&[&a, &b], &dir.join("o2"));
    assert_eq!(two.len(), 2, "{two:?}");
    assert_eq!(two[1], ["v2", "60000000", "same_connection"]);
    assert_eq!(got, want);
    assert_eq!((m, client2), (2 * n, client));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A second capture of the same run that began later, after the first request was sent: its
/// copy of that exchange has no request, so it cannot be paired as a copy; it is still the same
/// connection (same endpoints), not a second delivery of the response.
#[test]
fn a_second_point_that_began_after_a_request() {
    let (dir, whole) = setup("late");
    let (header, recs) = records(&whole);
    let late = dir.join("late.pcap");
    let mut out = header.clone();
    for (h, data) in &recs[6..] {
        out.extend_from_slice(h);
        out.extend_from_slice(data);
    }
    std::fs::write(&late, out).unwrap();
    std::fs::write(dir.join("whole.pcap"), &whole).unwrap();
    let (want, _, _, _) = run(&[&dir.join("whole.pcap")], &dir.join("o1"));
    let (got, two, _, _) = run(&[&dir.join("whole.pcap"), &late], &dir.join("o2"));
    assert_eq!(two.len(), 2, "{two:?}");
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&dir);
}
