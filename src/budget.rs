//! One bound on the bytes a stage holds for all its connections at once.
//!
//! Each connection's buffers have their own limits (a JSON body 16 MiB, an SSE event 16 MiB, a
//! line 1 MiB), but a capture can hold many connections at once, each with its buffers full: a
//! few kilobytes of gzip on the wire fill 16 MiB. A [`Budget`] is shared by the buffers of one
//! HTTP stage; each buffer holds its part of it through a [`Charge`], which gives the bytes back
//! when it is lowered or dropped, so the count cannot drift from what the buffers hold.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// Bytes the buffers of one HTTP stage (JSON bodies, SSE events and lines) may hold at once:
/// 128 MiB, for each thread of a run (each shard has its own budget, so that what is refused
/// does not depend on how threads interleave). Ordinary traffic holds a few megabytes.
pub const HELD_LIMIT: usize = 128 << 20;

/// A shared count of held bytes, and its limit (bytes).
#[derive(Debug)]
pub struct Budget {
    held: AtomicUsize,
    limit: usize,
}

impl Default for Budget {
    /// A budget of [`HELD_LIMIT`] bytes.
    fn default() -> Budget {
        Budget {
            held: AtomicUsize::new(0),
            limit: HELD_LIMIT,
        }
    }
}

impl Budget {
    /// A budget of `limit` bytes, none held.
    pub fn new(limit: usize) -> Arc<Budget> {
        Arc::new(Budget {
            held: AtomicUsize::new(0),
            limit,
        })
    }

    /// Bytes held now.
    pub fn held(&self) -> usize {
        self.held.load(Relaxed)
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Room left under the limit.
    pub fn room(&self) -> usize {
        self.limit.saturating_sub(self.held())
    }

    /// Take `n` for good (what is kept to the end of the run: messages, events), when there is
    /// room for it; false, taking nothing, when there is not.
    pub fn take(&self, n: usize) -> bool {
        self.held
            .fetch_update(Relaxed, Relaxed, |h| {
                h.checked_add(n).filter(|&t| t <= self.limit)
            })
            .is_ok()
    }

    /// Give back `n` taken with [`Budget::take`].
    pub fn give_back(&self, n: usize) {
        let _ = self
            .held
            .fetch_update(Relaxed, Relaxed, |h| Some(h.saturating_sub(n)));
    }
}

/// Batch elements (JSON-RPC messages of JSON arrays) one HTTP stage keeps at most, over all its
/// bodies and events: 1,048,576 (about 120 bytes each). Past it, elements are checked and
/// counted, not kept (`jsonrpc.batch_too_large`).
pub const BATCH_KEPT_LIMIT: usize = 1 << 20;

/// Bytes of SSE event records one HTTP stage keeps at most (each response's [`EventLog`]:
/// about 60 bytes an event plus its id and messages): 256 MiB. Past it, events are parsed and
/// counted, not kept (`sse.events_not_kept`). Ordinary captures keep about 114 bytes an event:
/// some 2.3 million events per thread.
///
/// [`EventLog`]: crate::http::EventLog
pub const EVENT_LOG_LIMIT: usize = 256 << 20;

/// Of [`EVENT_LOG_LIMIT`], the bytes that events of content-coded (gzip, deflate, br) bodies
/// may take: 64 MiB. A few kilobytes of gzip decode to millions of tiny events.
pub const DECODED_EVENT_LOG_LIMIT: usize = 64 << 20;

/// The bounds on what one HTTP stage keeps to the end of the run (each shard has its own).
#[derive(Debug, Clone)]
pub struct Kept {
    /// Batch elements ([`BATCH_KEPT_LIMIT`]).
    pub batch_elements: Arc<Budget>,
    /// Event-log bytes ([`EVENT_LOG_LIMIT`]).
    pub event_bytes: Arc<Budget>,
    /// Event-log bytes of decoded bodies ([`DECODED_EVENT_LOG_LIMIT`]).
    pub decoded_event_bytes: Arc<Budget>,
}

impl Default for Kept {
    fn default() -> Kept {
        Kept::with_limits(BATCH_KEPT_LIMIT, EVENT_LOG_LIMIT, DECODED_EVENT_LOG_LIMIT)
    }
}

impl Kept {
    /// Fresh bounds of these limits (elements, bytes, bytes), none taken.
    pub fn with_limits(batch: usize, events: usize, decoded: usize) -> Kept {
        Kept {
            batch_elements: Budget::new(batch),
            event_bytes: Budget::new(events),
            decoded_event_bytes: Budget::new(decoded),
        }
    }

    /// The same limits, none taken.
    pub fn fresh(&self) -> Kept {
        Kept::with_limits(
            self.batch_elements.limit(),
            self.event_bytes.limit(),
            self.decoded_event_bytes.limit(),
        )
    }
}

/// The part of a [`Budget`] one buffer holds, in bytes; given back when lowered or dropped. The
/// default charge draws on no budget and is never refused. A clone holds nothing.
#[derive(Debug, Default)]
pub struct Charge {
    budget: Option<Arc<Budget>>,
    n: usize,
    refused: bool,
}

impl Charge {
    /// A charge on `budget`, holding nothing yet.
    pub fn new(budget: &Arc<Budget>) -> Charge {
        Charge {
            budget: Some(Arc::clone(budget)),
            n: 0,
            refused: false,
        }
    }

    /// Draw on `budget` from now on, when this charge draws on none yet.
    pub fn draw_on(&mut self, budget: &Arc<Budget>) {
        if self.budget.is_none() {
            self.budget = Some(Arc::clone(budget));
            if let Some(b) = &self.budget {
                b.held.fetch_add(self.n, Relaxed);
            }
        }
    }

    /// Hold `want` bytes in all, more or fewer than now. Returns false, holding what it held,
    /// when the budget has not that much more room.
    pub fn hold(&mut self, want: usize) -> bool {
        if want == self.n {
            return true;
        }
        let Some(b) = &self.budget else {
            self.n = want;
            return true;
        };
        if want < self.n {
            b.held.fetch_sub(self.n - want, Relaxed);
        } else {
            let add = want - self.n;
            let ok = b
                .held
                .fetch_update(Relaxed, Relaxed, |h| {
                    h.checked_add(add).filter(|&t| t <= b.limit)
                })
                .is_ok();
            if !ok {
                self.refused = true;
                return false;
            }
        }
        self.n = want;
        true
    }

    /// Bytes held.
    pub fn held(&self) -> usize {
        self.n
    }

    /// Whether the budget ever refused this charge more room.
    pub fn refused(&self) -> bool {
        self.refused
    }
}

impl Clone for Charge {
    fn clone(&self) -> Charge {
        Charge {
            budget: self.budget.clone(),
            n: 0,
            refused: false,
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Some(b) = &self.budget {
            b.held.fetch_sub(self.n, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_hold_and_give_back() {
        let b = Budget::new(100);
        let mut x = Charge::new(&b);
        let mut y = Charge::new(&b);
        assert!(x.hold(60));
        assert!(!y.hold(50), "60 + 50 is over 100");
        assert_eq!((y.held(), b.held()), (0, 60));
        assert!(y.hold(40));
        assert!(x.hold(10));
        assert_eq!(b.held(), 50);
        let z = x.clone();
        assert_eq!(z.held(), 0);
        drop(z);
        drop(x);
        assert_eq!(b.held(), 40);
        drop(y);
        assert_eq!(b.held(), 0);
        let mut free = Charge::default();
        assert!(free.hold(usize::MAX));
    }
}
