//! The progress bar on stderr: bytes read of the total, throughput, flows, exchanges and sessions
//! so far while reading; then the analysis and its findings while the tables are written. Shown
//! only on a terminal, without `--quiet`, and once a run has lasted a second.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A reader that counts the bytes read through it.
pub struct Counting<R> {
    inner: R,
    n: Arc<AtomicU64>,
}

impl<R> Counting<R> {
    /// `inner`, counted from 0.
    pub fn new(inner: R) -> Self {
        Counting {
            inner,
            n: Arc::new(AtomicU64::new(0)),
        }
    }
    /// A handle on the count.
    pub fn counter(&self) -> Arc<AtomicU64> {
        self.n.clone()
    }
}

impl<R: Read> Read for Counting<R> {
    /// Read from the inner reader and count what it gave.
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n.fetch_add(k as u64, Ordering::Relaxed);
        Ok(k)
    }
}

/// The progress bar (hidden until a run has lasted a second; absent when not enabled).
pub struct Progress {
    bar: Option<ProgressBar>,
    start: Instant,
    shown: bool,
}

impl Progress {
    /// A bar over `total` bytes, when `enabled`.
    pub fn new(enabled: bool, total: u64) -> Self {
        let bar = enabled.then(|| {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {msg}",
            ) {
                b.set_style(style);
            }
            b
        });
        Progress {
            bar,
            start: Instant::now(),
            shown: false,
        }
    }

    /// Move the bar to `position` bytes; once shown, its message is `message()`.
    pub fn update(&mut self, position: u64, message: impl FnOnce() -> String) {
        let Some(b) = &self.bar else { return };
        if !self.shown && self.start.elapsed() >= Duration::from_secs(1) {
            b.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        b.set_position(position);
        if self.shown {
            b.set_message(message());
        }
    }

    /// Say what the run is doing now that every byte is read.
    pub fn say(&mut self, message: String) {
        let Some(b) = &self.bar else { return };
        if !self.shown && self.start.elapsed() >= Duration::from_secs(1) {
            b.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        if self.shown {
            b.set_message(message);
        }
    }

    /// Clear the bar from the terminal.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    /// A run that ends early (an error) leaves no bar behind.
    fn drop(&mut self) {
        self.finish();
    }
}
