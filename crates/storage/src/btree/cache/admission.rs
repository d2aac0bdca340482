//! Admission to a full leaf cache: a missed item evicts another only on its
//! second miss within a window (a "doorkeeper", as in TinyLFU).
//!
//! The paper fills every miss, evicting a random item of the peripheral
//! bucket when no slot is free. Under a skewed workload most misses on a full
//! cache are items looked up once in a long while, and each such fill throws
//! out an item that may be hot but has not yet been promoted out of the
//! periphery. An item missed twice within the window is more likely to come
//! back than one missed once, so only those may evict. Fills into free slots
//! are never gated: an empty slot costs nothing to use.
//!
//! The window is a bitmap with one bit per hashed tid, set by a first miss;
//! after `bits / 8` first misses it is cleared, so the false "seen before"
//! rate stays under 1/8 and an item's old misses are forgotten.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::row::Tid;

/// Bits of the window (128 KiB).
const BITS: usize = 1 << 20;

pub(crate) struct Doorkeeper {
    words: Box<[AtomicU64]>,
    /// First misses recorded since the last clear.
    added: AtomicU64,
}

impl Doorkeeper {
    pub(crate) fn new() -> Doorkeeper {
        Doorkeeper::with_bits(BITS)
    }

    /// A window of `bits` bits (a multiple of 64).
    fn with_bits(bits: usize) -> Doorkeeper {
        Doorkeeper {
            words: (0..bits / 64).map(|_| AtomicU64::new(0)).collect(),
            added: AtomicU64::new(0),
        }
    }

    /// Whether `tid` missed before within the window; records this miss.
    /// Concurrent callers may lose a bit or a count: the window is a
    /// heuristic, never a correctness matter.
    pub(crate) fn missed_before(&self, tid: Tid) -> bool {
        let x = ((tid.page as u64) << 16 | tid.slot as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let bits = self.words.len() * 64;
        let bit = (x >> 32) as usize % bits;
        let (w, mask) = (bit / 64, 1u64 << (bit % 64));
        if self.words[w].load(Ordering::Relaxed) & mask != 0 {
            return true;
        }
        self.words[w].fetch_or(mask, Ordering::Relaxed);
        if self.added.fetch_add(1, Ordering::Relaxed) + 1 >= (bits / 8) as u64 {
            self.clear();
        }
        false
    }

    /// Forgets every recorded miss.
    fn clear(&self) {
        self.added.store(0, Ordering::Relaxed);
        for w in self.words.iter() {
            w.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_miss_is_let_in_and_the_window_forgets() {
        let d = Doorkeeper::with_bits(1024);
        let t = Tid::new(7, 3);
        assert!(!d.missed_before(t));
        assert!(d.missed_before(t));
        assert!(!d.missed_before(Tid::new(7, 4)));
        // A window's worth of first misses (128, two of them above) clears it.
        let mut p = 0;
        let cleared = loop {
            p += 1;
            d.missed_before(Tid::new(1_000 + p, 0));
            if d.added.load(Ordering::Relaxed) == 0 {
                break p;
            }
        };
        assert_eq!(cleared, 126);
        assert!(!d.missed_before(t), "forgotten after the window");
    }
}
