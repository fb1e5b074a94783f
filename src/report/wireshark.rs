//! Where a finding's frames are in Wireshark: the capture file they come from and a display
//! filter that selects exactly the frames the finding cites (the `file` and `wireshark_filter`
//! columns of `findings`).
//!
//! Frame numbers of the tables count a vantage point's frames on across its files (as
//! `mergecap -a`); Wireshark numbers each file's frames from 1. Frame `n` of the file whose
//! range holds it is frame `n - frame_first + 1` there (see `files` in docs/tables.md).
//!
//! The filter uses the membership operator of Wireshark's display filter language
//! (wireshark-filter(4), "Membership Operator": `frame.number in {48, 49, 52}`). Since
//! Wireshark 4.0 the elements of a set must be separated by commas; white space alone is an
//! error there.

use super::tables::{FileRow, FlowsPart};
use crate::detect::Finding;

/// A capture file's place in its vantage point's frame numbering.
#[derive(Debug, Clone)]
struct FileSpan {
    /// Its base name (the last component of the path as given; `-` for standard input).
    name: String,
    /// Its vantage point.
    vantage: String,
    /// Its first and last frame in the vantage point's numbering.
    first: u64,
    /// See `first`.
    last: u64,
}

/// Maps a finding's flow and frame to a capture file and that file's own frame numbers.
/// [`FrameFiles::default`] knows no files: frames are then taken as numbered in the tables.
#[derive(Debug, Clone, Default)]
pub struct FrameFiles<'a> {
    /// Each vantage point's name and flows.
    parts: Vec<FlowsPart<'a>>,
    /// Every file that has frames, in the order read.
    files: Vec<FileSpan>,
}

/// The `file` and `wireshark_filter` cells of one finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Base name of the file holding the finding's `frame`, when the files are known.
    pub file: Option<String>,
    /// `frame.number in {a, b, c}`: the cited frames in that file's own numbering, ascending.
    pub filter: String,
}

impl<'a> FrameFiles<'a> {
    /// From the vantage points' flows (the `flows` table's parts) and the `files` rows.
    pub fn new(parts: &[FlowsPart<'a>], files: &[FileRow]) -> FrameFiles<'a> {
        let files = files
            .iter()
            .filter_map(|f| {
                Some(FileSpan {
                    name: base_name(&f.file).to_string(),
                    vantage: f.vantage.clone(),
                    first: f.frame_first?,
                    last: f.frame_last?,
                })
            })
            .collect();
        FrameFiles {
            parts: parts.to_vec(),
            files,
        }
    }

    /// The file of `f`'s first evidence and the filter selecting, in that file, `f.frame` and
    /// every other frame of [`Finding::cited`] on a flow of the same vantage point that lies
    /// in the same file (frames of other files or vantage points are left out).
    pub fn locate(&self, f: &Finding) -> Located {
        let index = f
            .flow_id
            .strip_prefix('F')
            .and_then(|n| n.parse::<usize>().ok());
        let vantage = index.and_then(|i| self.vantage_of(i));
        let span = self.files.iter().find(|s| {
            vantage.is_none_or(|v| v == s.vantage) && (s.first..=s.last).contains(&f.frame)
        });
        let mut frames: Vec<u64> = f
            .cited
            .iter()
            .filter(|c| self.parts.len() <= 1 || self.vantage_of(c.flow_index) == vantage)
            .map(|c| c.frame)
            .chain([f.frame])
            .collect();
        if let Some(s) = span {
            frames.retain(|n| (s.first..=s.last).contains(n));
            frames.iter_mut().for_each(|n| *n = *n - s.first + 1);
        }
        Located {
            file: span.map(|s| s.name.clone()),
            filter: filter(frames),
        }
    }

    /// The name of the vantage point whose flows include flow `flow_index`; `None` when the
    /// flows are not known ([`FrameFiles::default`]) or none has it.
    pub fn vantage_of(&self, flow_index: usize) -> Option<&str> {
        self.parts
            .iter()
            .find(|p| p.flows.row(flow_index).is_some())
            .map(|p| p.vantage)
    }
}

/// `frame.number in {a, b, c}` for `frames` (sorted and deduplicated here).
pub fn filter(mut frames: Vec<u64>) -> String {
    frames.sort_unstable();
    frames.dedup();
    let list: Vec<String> = frames.iter().map(u64::to_string).collect();
    format!("frame.number in {{{}}}", list.join(", "))
}

/// The last component of a path as given (`/` or `\` separated); the path itself when it has
/// none (`-`).
fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\'])
        .find(|s| !s.is_empty())
        .unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_is_sorted_and_deduplicated() {
        assert_eq!(filter(vec![52, 48, 49, 48]), "frame.number in {48, 49, 52}");
        assert_eq!(base_name("fixtures/mcp/a.pcap"), "a.pcap");
        assert_eq!(base_name("-"), "-");
    }
}
