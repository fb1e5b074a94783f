//! `--dump-streams DIR`: each direction's reassembled bytes in a file, gaps as holes.
//!
//! Files are written as `F<n>.d<dir>.bin` while the capture is read and renamed at the end to
//! `F<n>.orig.bin` / `F<n>.resp.bin` once the client is known. A gap advances the file offset
//! without writing (a sparse hole reading as zeros), so file offsets are stream offsets.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use mcpcap::tcp::{Chunk, FlowId, FlowMeta, StreamEvent, StreamSink};

/// The dump sink.
pub struct Dump {
    dir: PathBuf,
    open: HashMap<(usize, usize), (File, u64)>,
    written: Vec<(usize, usize)>,
    /// The first write error, reported at the end.
    pub error: Option<String>,
}

impl Dump {
    /// A sink writing into `dir` (created if missing).
    ///
    /// Errors: the directory cannot be created (the message names it).
    pub fn new(dir: &Path) -> anyhow::Result<Dump> {
        std::fs::create_dir_all(dir).map_err(|e| super::at(dir, e))?;
        Ok(Dump {
            dir: dir.to_path_buf(),
            open: HashMap::new(),
            written: Vec::new(),
            error: None,
        })
    }

    /// The file of direction `d` of `flow` while the capture is read (`F<n>.d<d>.bin`).
    fn path(&self, flow: usize, d: usize) -> PathBuf {
        self.dir.join(format!("{}.d{d}.bin", FlowId(flow)))
    }

    /// Append a chunk of direction `d` of `flow` to its file (opened at its first chunk): data
    /// is written, a gap moves the file offset past its length.
    fn write(&mut self, flow: usize, d: usize, chunk: Chunk<'_>) -> std::io::Result<()> {
        if !self.open.contains_key(&(flow, d)) {
            let f = File::create(self.path(flow, d))?;
            self.open.insert((flow, d), (f, 0));
            self.written.push((flow, d));
        }
        let (f, len) = self.open.get_mut(&(flow, d)).expect("just opened");
        match chunk {
            Chunk::Data { bytes, .. } => {
                f.write_all(bytes)?;
                *len += bytes.len() as u64;
            }
            Chunk::Gap { len: gap, .. } => {
                *len += gap;
                f.seek(SeekFrom::Start(*len))?;
            }
        }
        Ok(())
    }

    /// Close both files of `flow`, each extended to its stream's length.
    fn close(&mut self, flow: usize) -> std::io::Result<()> {
        for d in 0..2 {
            if let Some((f, len)) = self.open.remove(&(flow, d)) {
                // A trailing gap: extend the file to the stream's length.
                f.set_len(len)?;
            }
        }
        Ok(())
    }

    /// Close everything and name each file by the side that sent it; `client` gives the
    /// client's direction of a flow.
    ///
    /// Errors: the first write error (`--dump-streams DIR: …`), or a file that cannot be
    /// renamed (the message names its new name).
    pub fn finish(mut self, client: impl Fn(usize) -> usize) -> anyhow::Result<()> {
        let open: Vec<usize> = self.open.keys().map(|k| k.0).collect();
        for flow in open {
            if let Err(e) = self.close(flow) {
                self.error.get_or_insert(e.to_string());
            }
        }
        if let Some(e) = self.error.take() {
            anyhow::bail!("--dump-streams {}: {e}", self.dir.display());
        }
        for &(flow, d) in &self.written {
            let side = if d == client(flow) { "orig" } else { "resp" };
            let to = self.dir.join(format!("{}.{side}.bin", FlowId(flow)));
            std::fs::rename(self.path(flow, d), &to).map_err(|e| super::at(&to, e))?;
        }
        Ok(())
    }
}

impl StreamSink for Dump {
    /// Write a chunk or close a flow's files; after the first error nothing more is written.
    fn event(&mut self, flow: FlowMeta, ev: StreamEvent<'_>, _ts: i64, _frame: u64) {
        if self.error.is_some() {
            return;
        }
        let r = match ev {
            StreamEvent::Chunk(d, c) => self.write(flow.index, d, c),
            StreamEvent::Close => self.close(flow.index),
            _ => Ok(()),
        };
        if let Err(e) = r {
            self.error = Some(e.to_string());
        }
    }
}
