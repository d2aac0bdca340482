//! What the cold tier did: requests to the cold storage device, bytes moved,
//! the local object cache's hits, misses, evictions and refetches, and the
//! time readers spent waiting on the device — the pull-based baseline's cost
//! (Skipper §3.2), which benches and `strata info` report.
//!
//! One set of counters is shared by the client, the cache and the device of a
//! [`crate::device::ColdTier`], cheap atomics as `IoStats`; subtract two
//! snapshots to get what a query did.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default, Debug)]
pub struct ColdStats {
    gets: AtomicU64,
    puts: AtomicU64,
    deletes: AtomicU64,
    bytes_fetched: AtomicU64,
    bytes_sent: AtomicU64,
    retries: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    shared_fetches: AtomicU64,
    refetches: AtomicU64,
    evictions: AtomicU64,
    cached_bytes: AtomicU64,
    peak_cached_bytes: AtomicU64,
    wait_ns: AtomicU64,
}

macro_rules! bump {
    ($($name:ident => $field:ident),* $(,)?) => {
        $(pub fn $name(&self, n: u64) {
            self.$field.fetch_add(n, Ordering::Relaxed);
        })*
    };
}

impl ColdStats {
    bump! {
        add_gets => gets,
        add_puts => puts,
        add_deletes => deletes,
        add_bytes_fetched => bytes_fetched,
        add_bytes_sent => bytes_sent,
        add_retries => retries,
        add_hits => hits,
        add_misses => misses,
        add_shared_fetches => shared_fetches,
        add_refetches => refetches,
        add_evictions => evictions,
        add_wait_ns => wait_ns,
    }

    /// Records the bytes the cache now holds (and the peak).
    pub fn set_cached_bytes(&self, bytes: u64) {
        self.cached_bytes.store(bytes, Ordering::Relaxed);
        self.peak_cached_bytes.fetch_max(bytes, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> ColdCounters {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ColdCounters {
            gets: l(&self.gets),
            puts: l(&self.puts),
            deletes: l(&self.deletes),
            bytes_fetched: l(&self.bytes_fetched),
            bytes_sent: l(&self.bytes_sent),
            retries: l(&self.retries),
            hits: l(&self.hits),
            misses: l(&self.misses),
            shared_fetches: l(&self.shared_fetches),
            refetches: l(&self.refetches),
            evictions: l(&self.evictions),
            cached_bytes: l(&self.cached_bytes),
            peak_cached_bytes: l(&self.peak_cached_bytes),
            wait_ns: l(&self.wait_ns),
        }
    }
}

/// A plain copy of [`ColdStats`]. `after - before` subtracts the counters;
/// `cached_bytes` and `peak_cached_bytes` are levels and keep `after`'s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ColdCounters {
    /// GET requests (each attempt of a retried one counts).
    pub gets: u64,
    pub puts: u64,
    pub deletes: u64,
    pub bytes_fetched: u64,
    pub bytes_sent: u64,
    /// Requests repeated after a transient failure (connection refused, reset).
    pub retries: u64,
    /// Object reads served by the local cache.
    pub hits: u64,
    /// Object reads that had to fetch the object.
    pub misses: u64,
    /// Object reads that waited for another reader's fetch of the object.
    pub shared_fetches: u64,
    /// Misses on objects fetched before and evicted since.
    pub refetches: u64,
    pub evictions: u64,
    pub cached_bytes: u64,
    pub peak_cached_bytes: u64,
    /// Time readers waited for objects to arrive.
    pub wait_ns: u64,
}

impl std::ops::Sub for ColdCounters {
    type Output = ColdCounters;
    fn sub(self, o: ColdCounters) -> ColdCounters {
        ColdCounters {
            gets: self.gets - o.gets,
            puts: self.puts - o.puts,
            deletes: self.deletes - o.deletes,
            bytes_fetched: self.bytes_fetched - o.bytes_fetched,
            bytes_sent: self.bytes_sent - o.bytes_sent,
            retries: self.retries - o.retries,
            hits: self.hits - o.hits,
            misses: self.misses - o.misses,
            shared_fetches: self.shared_fetches - o.shared_fetches,
            refetches: self.refetches - o.refetches,
            evictions: self.evictions - o.evictions,
            cached_bytes: self.cached_bytes,
            peak_cached_bytes: self.peak_cached_bytes,
            wait_ns: self.wait_ns - o.wait_ns,
        }
    }
}

impl std::fmt::Display for ColdCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use strata_storage::util::format_bytes;
        write!(
            f,
            "cold tier: {} GETs ({} fetched), {} PUTs ({} sent), {} retries; cache {} hits / {} misses ({} refetches, {} evictions, {} held); waited {:.3} ms",
            self.gets,
            format_bytes(self.bytes_fetched),
            self.puts,
            format_bytes(self.bytes_sent),
            self.retries,
            self.hits,
            self.misses,
            self.refetches,
            self.evictions,
            format_bytes(self.cached_bytes),
            self.wait_ns as f64 / 1e6
        )
    }
}
