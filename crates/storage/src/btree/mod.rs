//! B+-tree secondary indexes: one paged file per index, pages through the buffer
//! pool.
//!
//! # Entries
//! An entry is an encoded key ([`crate::row::encode_key`]) followed by the 6-byte
//! big-endian [`Tid`] of the row it points to. Encoded keys are prefix-free and
//! compare like their values under `memcmp`, so comparing whole entries as bytes is
//! comparing `(key, tid)`: every entry is unique and there is one total order, and
//! duplicates of one key are just neighbouring entries that may span many leaves.
//!
//! # Pages
//! ```text
//! page 0            meta (PageKind::BTreeMeta): one tuple with magic, format version,
//!                   root, height, first leaf, page count, entry count, key types
//! leaf              slotted page (PageKind::BTreeLeaf); special = next leaf u32 BE,
//!                   prev leaf u32 BE (0 = none: page 0 is never a leaf); the slot
//!                   directory is kept in entry order, so a leaf is binary searched
//! internal          slotted page (PageKind::BTreeInternal); special = leftmost child
//!                   u32 BE, level u32 BE (1 = children are leaves); slot i is
//!                   `separator entry ++ child u32 BE`, in order; the child holds the
//!                   entries >= its separator and < the next separator, the leftmost
//!                   child those below the first separator
//! ```
//! Separators are full entries (key ++ tid), not just keys, so a run of equal keys
//! can be split anywhere and a descent for one `(key, tid)` still finds one leaf.
//!
//! A leaf's free space is always ONE contiguous region between the slot directory
//! and the entries: inserts place the entry at `upper` ([`PageMut::insert_at`]),
//! deletes compact ([`PageMut::remove_at`], or [`PageMut::remove_many`] for a
//! batch) and splits rewrite every page they fill. The index-cache work keeps hot
//! tuples in that gap; [`BTree::leaf_free_region`] tells where it is.
//!
//! # Index caches
//! No Bits Left Behind §2.1: `cache/leaf.rs` (and `cache/leaf_write.rs`) is the cache store on one leaf's
//! free region, `cache/protocol.rs` the tree's API over it ([`BTree::lookup_cached`],
//! [`BTree::fill_cache`]) with its CSN and latching rules. Deletes invalidate
//! the cache (tuple ids are reused); see `docs/architecture.md`.
//!
//! # Batched changes
//! [`BTree::insert_sorted`] and [`BTree::delete_sorted`] take a run of entries
//! sorted strictly by `(key, tid)` (checked before anything changes) and apply
//! it leaf by leaf: one descent for the first entry not yet done also yields the
//! leaf's upper bound (the smallest separator above it on the way down), every
//! entry of the run below that bound is applied to that leaf in one write, and
//! the next descent starts at the first entry past the bound. So the cost is a
//! descent, a read and a write per leaf touched, not per entry.
//! * A batched delete removes the leaf's matching entries in one compaction
//!   (entries that are not there are skipped, as [`BTree::delete`] does) and,
//!   as every delete, merges nothing.
//! * A batched insert puts the entries in place when they fit. Otherwise the
//!   leaf's old and new entries, merged, are laid out over the leaf and as many
//!   new pages linked in after it as they need, of about equal fill; at the very
//!   end of the tree (everything new after everything old on the last leaf) the
//!   pages are filled full instead, as a single insert keeps the old leaf full
//!   there, so ascending appends leave full leaves either way. Each new page's
//!   first entry then goes to the parents as a single insert's split puts it
//!   (a descent per new page), splitting internal pages and the root as needed.
//!   An entry that exists already is an error when its leaf is reached; the
//!   leaves before it keep their part of the run.
//!
//! # What is deliberately simple
//! * Concurrency: one tree latch (a reader-writer lock). Writers (insert, delete,
//!   their batched forms, bulk build) hold it exclusively for the whole operation
//!   (a whole batch), readers share it, and
//!   nobody holds it between two `next()` calls of an iterator, so an iterator can
//!   be kept open while the same thread writes to the tree. Page frames are pinned
//!   one at a time (two during a split), so a small pool suffices; a batch does
//!   the same, leaf after leaf.
//! * No merging: a delete removes the entry and nothing else. Underfull and even
//!   empty leaves stay linked in the tree and are reused by later inserts into their
//!   key range; separators of deleted entries stay valid bounds. Rebuild the index
//!   (bulk build) to compact it. Pages are never freed, so every page of the file
//!   below the meta's page count is part of the tree (which `check` verifies).
//! * Durability: the meta page is written by [`BTree::flush`]; between flushes the
//!   in-memory meta is authoritative. A crash between flushes can leave a tree whose
//!   pages disagree with its meta; the catalog rebuilds indexes from the heap after
//!   a load, which is how strata gets crash safety for indexes.

pub mod batch;
pub mod cache;
pub mod check;
pub mod layout;
pub mod read;
pub mod tree;
pub mod write;

pub use cache::{
    CacheChange, CacheCounters, CacheStats, CachedEntry, DEFAULT_LOG_THRESHOLD, FillTicket, Filled,
    Found, LeafCapacity, Probe,
};
pub use layout::leaf_siblings;
pub use read::{LeafIter, RangeCursor, RangeIter};
pub use tree::{BTree, BTreeStats, MAX_ENTRY, MAX_KEY};
