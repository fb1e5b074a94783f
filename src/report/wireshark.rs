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
    /// every other frame [`named_frames`] finds in its detail that lies in the same file
    /// (frames of other files or vantage points are left out).
    pub fn locate(&self, f: &Finding) -> Located {
        let (span, frames) = self.span_and_frames(f);
        let frames = match span {
            Some(s) => frames.into_iter().map(|n| n - s.first + 1).collect(),
            None => frames,
        };
        Located {
            file: span.map(|s| s.name.clone()),
            filter: filter(frames),
        }
    }

    /// The vantage point of `f` (when the files are known) and the frames it cites, in the
    /// vantage point's numbering (the tables'), as [`FrameFiles::locate`] selects them.
    pub fn cited(&self, f: &Finding) -> (Option<&str>, Vec<u64>) {
        let (span, mut frames) = self.span_and_frames(f);
        frames.sort_unstable();
        frames.dedup();
        (span.map(|s| s.vantage.as_str()), frames)
    }

    /// The file holding `f.frame` and the cited frames within it (vantage numbering).
    fn span_and_frames(&self, f: &Finding) -> (Option<&FileSpan>, Vec<u64>) {
        let index = f
            .flow_id
            .strip_prefix('F')
            .and_then(|n| n.parse::<usize>().ok());
        let vantage = index.and_then(|i| {
            self.parts
                .iter()
                .find(|p| p.flows.row(i).is_some())
                .map(|p| p.vantage)
        });
        let span = self.files.iter().find(|s| {
            vantage.is_none_or(|v| v == s.vantage) && (s.first..=s.last).contains(&f.frame)
        });
        let mut frames = named_frames(&f.detail);
        frames.push(f.frame);
        if let Some(s) = span {
            frames.retain(|n| (s.first..=s.last).contains(n));
        }
        (span, frames)
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

/// Every frame number a finding's detail names: the numbers after the word `frame` or
/// `frames`, and those that follow them in a list (`frames 42 and 44`, `frames 20, 33, 43`,
/// `frames 67–101`, `frames 25 to 106`, `frames 27→28, 29→30`). A range names its two ends.
pub fn named_frames(detail: &str) -> Vec<u64> {
    const SEPARATORS: [&str; 7] = [", and ", ", ", " and ", " to ", "–", "→", "-"];
    let mut out = Vec::new();
    let mut rest = detail;
    while let Some(at) = rest.find("frame") {
        let word_start = rest[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric() && c != '_');
        rest = &rest[at + "frame".len()..];
        if !word_start {
            continue;
        }
        let Some(mut list) = rest.strip_prefix("s ").or_else(|| rest.strip_prefix(' ')) else {
            continue;
        };
        loop {
            let digits = list.bytes().take_while(u8::is_ascii_digit).count();
            let Ok(n) = list[..digits].parse::<u64>() else {
                break;
            };
            out.push(n);
            list = &list[digits..];
            let next = SEPARATORS.iter().find_map(|s| {
                list.strip_prefix(s)
                    .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))
            });
            match next {
                Some(r) => list = r,
                None => break,
            }
        }
        rest = list;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // Details as the detectors write them (tests/golden/*/findings.csv).
    #[test]
    fn lists_and_ranges_name_each_frame_written() {
        assert_eq!(
            named_frames("in frames 42 and 44: the client; frame 30) delivered"),
            [42, 44, 30]
        );
        assert_eq!(
            named_frames("(frames 27→28, 29→30, over 101 ms"),
            [27, 28, 29, 30]
        );
        assert_eq!(
            named_frames("(flow F7, frames 67–101) in frame 105"),
            [67, 101, 105]
        );
        assert_eq!(
            named_frames("(frames 25 to 106, about every 1004 ms)"),
            [25, 106]
        );
        assert_eq!(
            named_frames("cuts in frames 20, 33, 43, 53): a"),
            [20, 33, 43, 53]
        );
    }

    #[test]
    fn words_that_only_contain_frame_name_nothing() {
        assert_eq!(
            named_frames("frame_first 3, frames, frame x, reframe 4"),
            [] as [u64; 0]
        );
        assert_eq!(named_frames("ends in frame 9."), [9]);
    }

    #[test]
    fn the_filter_is_sorted_and_deduplicated() {
        assert_eq!(filter(vec![52, 48, 49, 48]), "frame.number in {48, 49, 52}");
        assert_eq!(base_name("fixtures/mcp/a.pcap"), "a.pcap");
        assert_eq!(base_name("-"), "-");
    }
}
