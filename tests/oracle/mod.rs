//! Shared by the peer tests: tshark's oracle files (`../shared/corpus/oracle/expected/`) and the
//! pairing of its streams with mcpcap's flows.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use mcpcap::tcp::FlowTable;

pub fn endpoint(ip: std::net::IpAddr, port: u16) -> String {
    match ip {
        std::net::IpAddr::V4(v) => format!("{v}:{port}"),
        std::net::IpAddr::V6(v) => format!("[{v}]:{port}"),
    }
}

pub struct Row {
    pub stream: String,
    pub a: String,
    pub b: String,
    pub first: f64,
    pub lost: u64,
    /// Packets and tcp.len bytes (retransmissions included), a→b and b→a.
    pub packets: [u64; 2],
    pub bytes: [u64; 2],
}

pub fn streams(dir: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(dir.join("streams.tsv")).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            (c.len() >= 19).then(|| Row {
                stream: c[0].to_string(),
                a: c[1].to_string(),
                b: c[2].to_string(),
                first: c[3].parse().unwrap_or(0.0),
                lost: c[13].parse().unwrap_or(0),
                packets: [c[5].parse().unwrap_or(0), c[6].parse().unwrap_or(0)],
                bytes: [c[7].parse().unwrap_or(0), c[8].parse().unwrap_or(0)],
            })
        })
        .collect()
}

/// Pair tshark's streams with mcpcap's flows: same endpoints, in order of first packet.
pub fn pair(table: &FlowTable, rows: &mut [Row]) -> Vec<Option<usize>> {
    let mut ours: HashMap<(String, String), Vec<usize>> = HashMap::new();
    for f in table.rows() {
        let (x, y) = (
            endpoint(f.ends[0].0, f.ends[0].1),
            endpoint(f.ends[1].0, f.ends[1].1),
        );
        let key = if x <= y { (x, y) } else { (y, x) };
        ours.entry(key).or_default().push(f.index);
    }
    rows.sort_by(|p, q| {
        p.first
            .partial_cmp(&q.first)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    rows.iter()
        .map(|row| {
            let key = if row.a <= row.b {
                (row.a.clone(), row.b.clone())
            } else {
                (row.b.clone(), row.a.clone())
            };
            ours.get_mut(&key).and_then(|v| {
                if v.is_empty() {
                    None
                } else {
                    Some(v.remove(0))
                }
            })
        })
        .collect()
}

/// Every public capture with its tshark oracle directory.
pub fn corpus() -> Vec<(String, PathBuf, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    let Ok(entries) = std::fs::read_dir(root.join("oracle/expected")) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    dirs.into_iter()
        .filter_map(|dir| {
            let name = dir.file_name()?.to_string_lossy().to_string();
            let (source, file) = name.split_once("__")?;
            let capture = if source == "generated" {
                root.join("generated").join(file)
            } else {
                root.join("public").join(source).join(file)
            };
            let data = std::fs::read(capture).ok()?;
            Some((name, dir, data))
        })
        .collect()
}
