//! The capture files of a run in the order they are read: directories expanded, files named
//! twice read once, and every file in order of its first frame's time, so that rotated files
//! (`tcpdump -C/-G`) given in any order continue one vantage point.

use std::path::{Path, PathBuf};

use std::io::Read;

use mcpcap::capture::{self, CaptureError, SecretsBlock};

/// The files of the run in capture order, each with its first frame's time (µs since the Unix
/// epoch; `None` when it holds no frame): directories expand to the files in them (by name),
/// and files are read in order of their first frame's time (files without one first, then by
/// position). A file that cannot be opened or is not a capture gets its one-line message here
/// and is left out; a file named twice is read once. With them, the TLS key log Decryption
/// Secrets Blocks at the start of every file ([`capture::read_head`]), in the order read.
pub fn capture_order(args: &[PathBuf]) -> (Vec<(PathBuf, Option<i64>)>, Vec<SecretsBlock>) {
    let dirs: Vec<&PathBuf> = args.iter().filter(|p| p.is_dir()).collect();
    let mut files = expand(args, &dirs);
    let mut seen = std::collections::HashSet::new();
    files.retain(|(f, _)| seen.insert(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone())));
    let mut keyed = first_times(files, &dirs);
    keyed.sort_by_key(|(ts, i, _, _)| (*ts, *i));
    let mut secrets = Vec::new();
    let order = keyed
        .into_iter()
        .map(|(ts, _, f, s)| {
            secrets.extend(s);
            (f, (ts != i64::MIN).then_some(ts))
        })
        .collect();
    (order, secrets)
}

/// The bytes of a stream held while its head is read ([`stream_head`]): the secrets a file's
/// start may hold, and a read buffer's worth beside them.
const STREAM_HEAD_BYTES: usize = capture::MAX_SECRETS + 2 * capture::BLOCK_BUFFER;

/// The TLS key log Decryption Secrets Blocks at the start of a capture read once as it comes
/// (standard input, a pipe), and the stream to read it from: the bytes read for them (at most
/// [`STREAM_HEAD_BYTES`]), then the rest. A stream that is no capture has none; reading it
/// says why.
pub fn stream_head(
    mut input: Box<dyn std::io::Read + Send>,
) -> (Vec<SecretsBlock>, Box<dyn std::io::Read + Send>) {
    let mut tee = Tee {
        inner: &mut input,
        kept: Vec::new(),
    };
    let secrets = capture::read_head(&mut tee).map_or_else(|_| Vec::new(), |h| h.secrets);
    let kept = tee.kept;
    (secrets, Box::new(std::io::Cursor::new(kept).chain(input)))
}

/// A reader that keeps what it reads, up to [`STREAM_HEAD_BYTES`] (then it ends).
struct Tee<'a> {
    inner: &'a mut Box<dyn std::io::Read + Send>,
    kept: Vec<u8>,
}

impl std::io::Read for Tee<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let room = STREAM_HEAD_BYTES
            .saturating_sub(self.kept.len())
            .min(buf.len());
        let n = self.inner.read(&mut buf[..room])?;
        self.kept.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

/// Every file of `args` with the index in `dirs` of the directory it was found in (`None`: named
/// itself), in argument order; a directory's regular files by name.
fn expand(args: &[PathBuf], dirs: &[&PathBuf]) -> Vec<(PathBuf, Option<usize>)> {
    let mut files = Vec::new();
    for p in args {
        if !p.is_dir() {
            files.push((p.clone(), None));
            continue;
        }
        match std::fs::read_dir(p) {
            Ok(rd) => {
                let d = dirs.iter().position(|x| *x == p);
                files.extend(directory_files(p, rd).into_iter().map(|f| (f, d)));
            }
            Err(e) => say!("mcpcap: {}: {}", p.display(), e),
        }
    }
    files
}

/// The regular files of directory `dir` (listed by `rd`), by name. Subdirectories are not
/// searched, nor pipes or sockets read: said in one line, not dropped silently; so is a
/// directory without files.
fn directory_files(dir: &Path, rd: std::fs::ReadDir) -> Vec<PathBuf> {
    let (mut inside, mut other): (Vec<PathBuf>, Vec<PathBuf>) = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .partition(|f| f.is_file());
    inside.sort();
    if !other.is_empty() {
        other.sort();
        let names: Vec<String> = other.iter().map(|f| file_name(f)).collect();
        say!(
            "mcpcap: {}: skipped {} entr{} that {} not regular files (subdirectories are not searched): {}",
            dir.display(),
            names.len(),
            if names.len() == 1 { "y" } else { "ies" },
            if names.len() == 1 { "is" } else { "are" },
            names.join(", ")
        );
    }
    if inside.is_empty() {
        say!("mcpcap: {}: directory holds no files", dir.display());
    }
    inside
}

/// Each readable capture of `files` keyed for ordering: (first frame's time, `i64::MIN` without
/// one; position; path), with the secrets at its start. A file that cannot be read gets its one-line message. Files of a
/// directory that are not captures and do not claim to be by their names (notes, manifests)
/// get one line per directory of `dirs` instead of an error each.
fn first_times(
    files: Vec<(PathBuf, Option<usize>)>,
    dirs: &[&PathBuf],
) -> Vec<(i64, usize, PathBuf, Vec<SecretsBlock>)> {
    let mut keyed = Vec::new();
    let mut skipped: Vec<Vec<String>> = vec![Vec::new(); dirs.len()];
    for (i, (f, dir)) in files.into_iter().enumerate() {
        let first = std::fs::File::open(&f)
            .map_err(|e| e.to_string())
            .and_then(|file| {
                capture::read_head(std::io::BufReader::new(file)).map_err(|e| match (&e, dir) {
                    (CaptureError::NotACapture, Some(d)) if !capture_name(&f) => {
                        skipped[d].push(file_name(&f));
                        String::new()
                    }
                    _ => e.to_string(),
                })
            });
        match first {
            Ok(head) => keyed.push((head.first_ts.unwrap_or(i64::MIN), i, f, head.secrets)),
            Err(e) if e.is_empty() => {}
            Err(e) => say!("mcpcap: {}: {}", f.display(), e),
        }
    }
    for (d, names) in dirs.iter().zip(&skipped) {
        if !names.is_empty() {
            say!(
                "mcpcap: {}: skipped {} file(s) that are not pcap or pcapng: {}",
                d.display(),
                names.len(),
                names.join(", ")
            );
        }
    }
    keyed
}

/// The last component of `f` as text (empty when it has none).
fn file_name(f: &Path) -> String {
    f.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether a file name says it is a capture (`.pcap`, `.pcapng`, `.cap`, `.dmp`, and rotated
/// parts like `trace.pcap1` or `trace.pcap.2`): such a file that cannot be read is an error.
fn capture_name(f: &Path) -> bool {
    let name = f
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    [".pcap", ".pcapng", ".cap", ".dmp"].iter().any(|ext| {
        name.match_indices(ext).any(|(i, _)| {
            name[i + ext.len()..]
                .trim_start_matches('.')
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::capture_name;

    #[test]
    fn capture_names() {
        for yes in [
            "a.pcap",
            "A.PCAPNG",
            "x.cap",
            "win.dmp",
            "trace.pcap1",
            "trace.pcap.12",
            "dir/y.pcap",
        ] {
            assert!(capture_name(std::path::Path::new(yes)), "{yes}");
        }
        for no in [
            "MANIFEST.json",
            "NOTES.md",
            "a.pcap.txt",
            "capture",
            "x.pcapx",
        ] {
            assert!(!capture_name(std::path::Path::new(no)), "{no}");
        }
    }
}
