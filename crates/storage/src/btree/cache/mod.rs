//! The index cache of No Bits Left Behind (§2.1), all of it: hot tuples'
//! fields kept in the free space of B+-tree leaves, so a lookup is answered
//! without the heap.
//!
//! * `leaf.rs`, `leaf_write.rs`: the cache on one leaf's bytes (slots,
//!   buckets, the directory, lookups, fills, promotions, splits);
//! * `admission.rs`: which misses may evict (a doorkeeper);
//! * `state.rs`, `protocol.rs`: what an index keeps for its cache, and when a
//!   leaf's cache may be read and written (CSNs, the predicate log);
//! * `fields.rs`: which columns an index caches, and their encoding;
//! * `governor.rs`: whether the cache pays, from what lookups cost.

pub mod admission;
pub mod fields;
pub mod governor;
pub mod leaf;
pub mod leaf_write;
pub mod protocol;
pub mod state;

pub use state::{
    CacheChange, CacheCounters, CacheStats, CachedEntry, DEFAULT_LOG_THRESHOLD, FillTicket, Filled,
    Found, LeafCapacity, Probe,
};
