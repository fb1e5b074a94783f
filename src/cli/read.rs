//! Reading the captures: each file, in capture order, into the analyzer of its vantage point,
//! with a one-line note for what a file lacked (frames out of time order, an unsupported link
//! type, a snapshot length that cut segments, IP fragments, a cut or damaged end).

use mcpcap::anomaly::Code;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use mcpcap::anomaly::Anomalies;
use mcpcap::capture::{self, CaptureError, FileSummary};
use mcpcap::report::tables::FileRow;
use mcpcap::{Analyzer, Options};

use super::dump::Dump;
use super::plan::{Inputs, Plan};
use super::progress::{Counting, Progress};

/// One vantage point being read: its files feed one analyzer, in time order.
pub struct Vantage {
    /// `--vantage` name, or `v<n>` in order of first frames.
    pub name: String,
    /// Named by `--vantage` (no other file joins it by time).
    explicit: bool,
    /// Its files as given, in the order read.
    pub files: Vec<String>,
    /// Its analyzer.
    pub analyzer: Analyzer,
    /// Frames numbered in its files so far (some not handed to the analyzer: a malformed block,
    /// a packet of an unknown interface): the next file's first frame follows them.
    numbered: u64,
    /// Time of its first frame, µs since the Unix epoch (its own clock).
    pub ts_first: Option<i64>,
    /// Time of its latest frame so far.
    last_ts: Option<i64>,
}

/// What reading every capture gave.
pub struct Capture {
    /// The vantage points, in order of their first file.
    pub vantages: Vec<Vantage>,
    /// What the capture reader counted (malformed blocks, bad options…), over every file.
    pub anomalies: Anomalies,
    /// Per file read, its row of the `files` table.
    pub file_rows: Vec<FileRow>,
    /// Whether some file could be read (one that stops before its first frame could not).
    read_any: bool,
    /// Frames of a link type that can be decoded.
    readable_frames: u64,
}

impl Capture {
    /// Whether there is nothing to analyse: no file could be read, or none of the frames read
    /// has a link type that can be decoded. The run then exits [`super::EXIT_USAGE`] (each
    /// file's message is said already).
    pub fn unreadable(&self) -> bool {
        let frames: u64 = self
            .vantages
            .iter()
            .map(|v| v.analyzer.counters.frames)
            .sum();
        !self.read_any || (self.readable_frames == 0 && frames > 0)
    }

    /// A frame-level counter summed over the vantage points.
    pub fn count(&self, f: fn(&mcpcap::Counters) -> u64) -> u64 {
        self.vantages.iter().map(|v| f(&v.analyzer.counters)).sum()
    }

    /// Sessions made so far over the vantage points (for the progress bar).
    pub fn live_sessions(&self) -> u64 {
        self.vantages
            .iter()
            .map(|v| v.analyzer.live().sessions.load(Ordering::Relaxed))
            .sum()
    }
}

/// Open a capture to read: standard input (`stdin`) or the file at `path`; `None`, said in
/// one line, when it cannot be opened.
pub fn open(path: &Path, stdin: bool) -> Option<Box<dyn std::io::Read + Send>> {
    if stdin {
        return Some(Box::new(std::io::stdin()));
    }
    match std::fs::File::open(path) {
        Ok(f) => Some(Box::new(f)),
        Err(e) => {
            say!("mcpcap: {}: {}", path.display(), e);
            None
        }
    }
}

/// Read the files of `order` (path, first frame's time) into vantage points, with analyzers
/// made from `options`; `stream`, when given, is the one input of [`Inputs::Stream`], opened
/// already. `dump` taps every stream, and `progress` shows the bytes read.
pub fn read_all(
    plan: &Plan,
    order: &[(PathBuf, Option<i64>)],
    mut stream: Option<Box<dyn std::io::Read + Send>>,
    options: &Options,
    dump: Option<&mut Dump>,
    progress: &mut Progress,
) -> Capture {
    let mut reading = Reading {
        named: &plan.named,
        options,
        threads: plan.threads,
        ids: Arc::new(AtomicUsize::new(0)),
        dump,
        progress,
        done_bytes: 0,
        capture: Capture {
            vantages: Vec::new(),
            anomalies: Anomalies::default(),
            file_rows: Vec::new(),
            read_any: false,
            readable_frames: 0,
        },
    };
    let stdin = matches!(plan.inputs, Inputs::Stream { stdin: true, .. });
    let is_stream = matches!(plan.inputs, Inputs::Stream { .. });
    for (path, first_ts) in order {
        let input = match stream.take() {
            Some(input) => input,
            // The stream could not be opened (said already).
            None if is_stream => continue,
            None => match open(path, stdin) {
                Some(input) => input,
                None => continue,
            },
        };
        reading.file(path, *first_ts, input);
    }
    reading.capture
}

/// The state of [`read_all`] across files.
struct Reading<'a> {
    /// `--vantage` files.
    named: &'a [(String, PathBuf)],
    /// Options of every analyzer.
    options: &'a Options,
    /// [`Plan::threads`].
    threads: usize,
    /// Flow indices, shared by the vantage points' analyzers.
    ids: Arc<AtomicUsize>,
    /// `--dump-streams`.
    dump: Option<&'a mut Dump>,
    /// The progress bar.
    progress: &'a mut Progress,
    /// Bytes of the files read before this one.
    done_bytes: u64,
    /// What has been read.
    capture: Capture,
}

/// An analyzer's counts before a file, to tell what the file added.
struct Before {
    unsupported: u64,
    cut: u64,
    segments: u64,
    fragments: u64,
    backwards: u64,
}

impl Before {
    /// The counts of `a` now.
    fn of(a: &Analyzer) -> Before {
        Before {
            unsupported: a.anomalies.count(Code::CaptureUnsupportedLinktype),
            cut: a.anomalies.count(Code::CaptureSnaplenCut),
            segments: a.counters.tcp_segments,
            fragments: a.anomalies.count(Code::IpFragment),
            backwards: a.anomalies.count(Code::CaptureTimeBackwards),
        }
    }
}

/// What reading one file's frames gave.
struct Frames {
    /// The capture reader's summary, or why the file could not be read at all.
    result: Result<FileSummary, CaptureError>,
    /// Earliest and latest frame times (µs; `(i64::MAX, i64::MIN)` without frames): frames
    /// need not be in time order.
    span: (i64, i64),
    /// The first frame's time (standard input is not read ahead for it).
    first_ts: Option<i64>,
}

impl Reading<'_> {
    /// Read one file (`path`, opened as `input`; `first_ts` its first frame's time when known)
    /// into its vantage point, say what it lacked, and add its row of the `files` table.
    fn file(&mut self, path: &Path, first_ts: Option<i64>, input: Box<dyn std::io::Read + Send>) {
        let file = Counting::new(input);
        let read_bytes = file.counter();
        let vi = self.vantage(path, first_ts);
        let v = &mut self.capture.vantages[vi];
        v.files.push(path.display().to_string());
        let first = v.numbered + 1;
        let before = Before::of(&v.analyzer);
        let frames = self.frames(vi, file, first, &read_bytes);
        let v = &mut self.capture.vantages[vi];
        note_backwards(path, &v.analyzer, &before);
        let bytes = read_bytes.load(Ordering::Relaxed);
        self.done_bytes += bytes;
        let n = frames.result.as_ref().map_or(0, |s| s.frames);
        v.numbered += n;
        let (lo, hi) = frames.span;
        self.capture.file_rows.push(FileRow {
            file: path.display().to_string(),
            vantage: v.name.clone(),
            frame_first: (n > 0).then_some(first),
            frame_last: (n > 0).then_some(first + n - 1),
            frames: n,
            bytes,
            // Times only of frames handed on (a file's numbered frames may all be malformed).
            ts_first: (lo <= hi).then_some(lo),
            ts_last: (lo <= hi).then_some(hi),
            stopped: match &frames.result {
                Ok(summary) => summary.truncated.clone(),
                Err(e) => Some(e.to_string()),
            },
        });
        match frames.result {
            Ok(summary) => {
                // A file that stops before its first frame could not be read at all.
                self.capture.read_any |= summary.frames > 0 || summary.truncated.is_none();
                let unsupported = v.analyzer.anomalies.count(Code::CaptureUnsupportedLinktype)
                    - before.unsupported;
                self.capture.readable_frames += summary.frames - unsupported;
                note_summary(path, &v.analyzer, &before, &summary);
            }
            Err(e) => say!("mcpcap: {}: {}", path.display(), e),
        }
        v.last_ts = v.analyzer.counters.ts_last.or(v.last_ts);
        v.ts_first = v.ts_first.or(frames.first_ts);
    }

    /// Hand every frame of `reader` (numbered from `first`) to vantage point `vi`'s analyzer,
    /// and to the dump; note frames earlier than the one before them, and move the progress
    /// bar (`read_bytes`: bytes of this file read so far).
    fn frames(
        &mut self,
        vi: usize,
        reader: Counting<Box<dyn std::io::Read + Send>>,
        first: u64,
        read_bytes: &AtomicU64,
    ) -> Frames {
        let analyzer = &mut self.capture.vantages[vi].analyzer;
        let (dump, progress, done_bytes) = (&mut self.dump, &mut *self.progress, self.done_bytes);
        let mut n = 0u64;
        let mut first_ts = None;
        let mut span = (i64::MAX, i64::MIN);
        let mut prev_ts: Option<i64> = None;
        // No BufReader: the capture reader has its own buffer (`capture::BLOCK_BUFFER`) and reads
        // into it directly; another buffer in front would copy every byte once more.
        let anomalies = &mut self.capture.anomalies;
        let result = capture::read_capture_items(reader, first, anomalies, |item| {
            let f = match item {
                capture::Item::Frame(f) => f,
                // A Decryption Secrets Block after the first packet: for what follows.
                capture::Item::Secrets(b) => {
                    analyzer.add_key_log(&String::from_utf8_lossy(&b.data));
                    return true;
                }
            };
            first_ts.get_or_insert(f.ts);
            span = (span.0.min(f.ts), span.1.max(f.ts));
            if let Some(p) = prev_ts.filter(|&p| f.ts < p) {
                let back = p.saturating_sub(f.ts);
                analyzer.anomalies.add_with(
                    Code::CaptureTimeBackwards,
                    Some(f.number),
                    None,
                    || format!("{back} µs earlier than the frame before it"),
                );
            }
            prev_ts = Some(f.ts);
            match dump {
                Some(d) => analyzer.frame_tap(&f, *d),
                None => analyzer.frame(&f),
            }
            n += 1;
            if n.is_multiple_of(4096) {
                let position = done_bytes + read_bytes.load(Ordering::Relaxed);
                progress.update(position, || live_line(analyzer));
            }
            true
        });
        Frames {
            result,
            span,
            first_ts,
        }
    }

    /// The vantage point a file belongs to: the one `--vantage` names; else the automatic one
    /// whose last frame is the latest not after the file's first and whose connections the file
    /// continues (a rotated part: see [`mcpcap::Continuity`]); else a new one (the file
    /// overlaps every vantage point so far, or carries other connections).
    fn vantage(&mut self, path: &Path, first_ts: Option<i64>) -> usize {
        let vantages = &mut self.capture.vantages;
        let explicit = self
            .named
            .iter()
            .find(|(_, f)| f == path)
            .map(|(n, _)| n.clone());
        let found = match &explicit {
            Some(n) => vantages.iter().position(|v| &v.name == n),
            None => continued(vantages, path, first_ts),
        };
        if let Some(i) = found {
            if vantages[i].ts_first.is_none() {
                vantages[i].ts_first = first_ts;
            }
            return i;
        }
        // Automatic names follow the order of first frames, so rotating a capture renames
        // nothing.
        let name = explicit
            .clone()
            .unwrap_or_else(|| format!("v{}", vantages.len() + 1));
        let analyzer = Analyzer::with_flow_ids(self.options.clone(), self.ids.clone());
        vantages.push(Vantage {
            name,
            explicit: explicit.is_some(),
            files: Vec::new(),
            numbered: 0,
            // `threads` 0: every stage on this thread (see `Plan::threads`); else shards (this
            // thread's own and `threads - 1` workers), even for one thread: flows of every
            // vantage point are then numbered alike for any --threads.
            analyzer: match self.threads {
                0 => analyzer,
                n => analyzer.with_workers(n),
            },
            ts_first: first_ts,
            last_ts: None,
        });
        vantages.len() - 1
    }
}

/// The automatic vantage point that file `path` (first frame at `first_ts`) continues: of those
/// whose last frame is not after its first, the latest whose connections its first segments
/// continue.
fn continued(vantages: &[Vantage], path: &Path, first_ts: Option<i64>) -> Option<usize> {
    // Candidates by time (the latest first); a rotated part also shares connections.
    let mut cands: Vec<usize> = (0..vantages.len())
        .filter(|&i| !vantages[i].explicit)
        .filter(|&i| match (vantages[i].last_ts, first_ts) {
            (Some(l), Some(f)) => l <= f,
            _ => true,
        })
        .collect();
    cands.sort_by_key(|&i| (std::cmp::Reverse(vantages[i].last_ts), i));
    let first = if cands.is_empty() {
        Vec::new()
    } else {
        first_segments(path, 200)
    };
    cands
        .into_iter()
        .find(|&i| vantages[i].analyzer.continuity(&first).continues())
}

/// The address pairs of the first `n` TCP segments of a capture file: (pair, SYN without ACK,
/// carries data). Empty when the file cannot be read.
fn first_segments(path: &Path, n: usize) -> Vec<(mcpcap::ConnKey, bool, bool)> {
    let mut out = Vec::new();
    let Ok(file) = std::fs::File::open(path) else {
        return out;
    };
    let mut anomalies = Anomalies::default();
    let _ = capture::read_capture_while(std::io::BufReader::new(file), 1, &mut anomalies, |f| {
        if let mcpcap::decode::Decoded::Tcp(seg) =
            mcpcap::decode::decode(f.linktype, f.data, f.orig_len)
        {
            out.push((
                mcpcap::conn_key(&seg),
                seg.syn && !seg.ack,
                seg.wire_len > 0,
            ));
        }
        out.len() < n
    });
    out
}

/// The progress bar's message while reading: flows, exchanges and sessions so far.
fn live_line(analyzer: &Analyzer) -> String {
    let live = analyzer.live();
    let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
    format!(
        "{} flows, {} exchanges, {} sessions",
        n(&live.flows),
        n(&live.exchanges),
        n(&live.sessions)
    )
}

/// Say that frames of file `path` came earlier than the frame before them, when some did
/// (counted in `a` since `before`).
fn note_backwards(path: &Path, a: &Analyzer, before: &Before) {
    let backwards = a.anomalies.count(Code::CaptureTimeBackwards) - before.backwards;
    if backwards > 0 {
        // Frames are analysed in file order, as Wireshark and Zeek do; sorting is the user's
        // call (`reordercap`).
        say!(
            "mcpcap: {}: {} frames are earlier than the frame before them; frames are analysed in file order (anomaly capture.time_backwards; `reordercap` sorts a capture)",
            path.display(),
            backwards
        );
    }
}

/// Say what file `path` lacked, read into `a` (counts since `before`; `summary` the reader's):
/// frames of an unsupported link type, segments the snapshot length cut, IP fragments, an end
/// cut or damaged.
fn note_summary(path: &Path, a: &Analyzer, before: &Before, summary: &FileSummary) {
    let unsupported = a.anomalies.count(Code::CaptureUnsupportedLinktype) - before.unsupported;
    if unsupported > 0 {
        let which = a
            .anomalies
            .rows
            .iter()
            .rev()
            .find(|a| a.code == Code::CaptureUnsupportedLinktype)
            .map(|a| a.detail.clone())
            .unwrap_or_default();
        say!(
            "mcpcap: {}: unsupported {} ({} of {} frames skipped)",
            path.display(),
            which,
            unsupported,
            summary.frames
        );
    }
    let cut = a.anomalies.count(Code::CaptureSnaplenCut) - before.cut;
    if cut > 0 {
        say!(
            "mcpcap: {}: the snapshot length cut {} of {} TCP segments; their missing payload bytes are gaps (anomaly capture.snaplen_cut)",
            path.display(),
            cut,
            a.counters.tcp_segments - before.segments
        );
    }
    let fragments = a.anomalies.count(Code::IpFragment) - before.fragments;
    if fragments > 0 {
        say!(
            "mcpcap: {}: {} IP fragments were not reassembled; the TCP data they carry is missing from the streams (anomaly ip.fragment)",
            path.display(),
            fragments
        );
    }
    if let Some(why) = &summary.truncated {
        say!(
            "mcpcap: {}: {} at byte {}; analysed the {} frames before it",
            path.display(),
            why,
            summary.stopped_at.unwrap_or(0),
            summary.frames
        );
    }
}
