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
