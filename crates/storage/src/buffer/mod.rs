//! The buffer pool: a fixed number of 8 KiB frames shared by every thread, with pin
//! guards, sampled-LFU eviction and dirty write-back.
//!
//! * [`BufferPool::read`] / [`BufferPool::write`] pin one page and return a guard
//!   (shared or exclusive); the page stays in its frame while a guard lives.
//! * A miss reads the page from the device and verifies its checksum; write-back
//!   seals (checksums) the page before it goes to the device.
//! * Eviction is a sampled LFU with aging: each frame counts its pins (up to
//!   15, halved for every frame after 16 frames' worth of evictions), and a
//!   miss evicts the least counted of 16 unpinned frames drawn at random
//!   ([`BufferPool::find_victim`]). A page read for the first time starts at
//!   zero, so pages wanted once (a scan's, a cold key's) leave first; a page
//!   read ahead is passed over until its reader has pinned it.
//! * B+-tree leaves carry an index cache in their free space (No Bits Left
//!   Behind §2.1, `btree/cache/leaf.rs`). [`BufferPool::try_cache_write`] lets a
//!   reader write it without marking the page dirty, and without waiting: it
//!   gives up when the frame is latched. Cache bytes are memory-only: every
//!   leaf is stripped of them ([`page::strip_cache`]) in the copy that goes to
//!   the device, and when it comes back from it.
//! * Scans do not go through frames at all: [`BufferPool::read_run`] reads a run of
//!   contiguous pages in one device request into the caller's own buffer (a small
//!   ring the scan owns), overlaying any page that is dirty in the pool, so a full
//!   scan neither floods the pool nor misses a write that is not yet on disk.
//!
//! Locking: one mutex protects the page table and the eviction state; each frame has a
//! reader-writer lock over its bytes. The table mutex is never held while waiting
//! for a frame lock (an unpinned frame's lock is free by construction), so there is
//! no lock-order cycle. A frame being loaded is pinned and write-locked by the
//! loader; other threads that find it in the table wait on its lock and then check
//! that the load succeeded.

//!
//! The files: `frame.rs` (frames and the table), `page_table.rs`, `pool.rs`
//! (pins, misses, eviction), `capture.rs` (a transaction's pages) and
//! `runs.rs` (read-ahead, flushes, scans' run reads).

pub mod capture;
pub mod frame;
mod page_table;
pub mod pool;
pub mod runs;

pub use frame::FLUSH_RUN_PAGES;
pub use pool::{
    BufferPool, CacheWriteRef, Changed, LogGate, PageMutRef, PageRef, PoolCounters, as_writer,
};
