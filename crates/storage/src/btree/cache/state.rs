//! The state an index keeps for its leaf cache (No Bits Left Behind §2.1):
//! the CSN that validates every leaf's cache, each thread's random source,
//! the counters, the predicate log of changes in flight, and the values
//! lookups and fills hand back ([`Probe`], [`Found`], [`FillTicket`],
//! [`Filled`]). The protocol that reads and writes leaves is `protocol.rs`.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use serde::Serialize;

use crate::btree::layout::*;
use crate::row::Tid;

use super::admission::Doorkeeper;
use super::leaf::{CacheLayout, CacheRng};
use super::leaf_write;

/// The process-wide source of CSNs (0 is never issued: it means "no cache").
pub(super) static NEXT_CSN: AtomicU32 = AtomicU32::new(1);

pub(super) fn fresh_csn() -> u32 {
    loop {
        let c = NEXT_CSN.fetch_add(1, Ordering::SeqCst);
        if c != 0 {
            return c;
        }
    }
}

pub(super) static NEXT_SEED: AtomicU64 = AtomicU64::new(0x5EED_CAC4E);

thread_local! {
    /// Each thread's random source for the cache's choices: slots, and the
    /// governor's way (`governor.rs`).
    static RNG: Cell<u64> = Cell::new(
        NEXT_SEED.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed),
    );
}

/// Runs `f` with this thread's random source.
pub(crate) fn with_rng<R>(f: impl FnOnce(&mut CacheRng) -> R) -> R {
    RNG.with(|c| {
        let mut rng = CacheRng::new(c.get());
        let out = f(&mut rng);
        c.set(rng.state());
        out
    })
}

/// A split leaf's cached items ([`BTree::carry_for_split`]).
pub(crate) struct SplitCarry {
    pub(super) csn: u32,
    /// How far the predicate log was checked against the split leaf.
    pub(super) checked: usize,
    pub(super) layout: CacheLayout,
    pub(super) items: std::collections::HashMap<Tid, Vec<u8>>,
}

/// Counters of one index's cache (cumulative since the tree was opened).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheCounters {
    /// Entries a lookup answered from a leaf.
    pub hits: u64,
    pub misses: u64,
    /// Items written by fills.
    pub fills: u64,
    /// Fills refused because the CSN moved since their lookup.
    pub stale: u64,
    /// Fills into a full leaf refused because the item had not missed before
    /// (`admission.rs`).
    pub rejected: u64,
    /// Cache writes (fills and promotions) given up because the leaf's latch
    /// was not free, or the page was not resident or in a transaction.
    pub busy: u64,
    /// Hits moved a bucket toward S.
    pub promotions: u64,
    /// Invalidations (fresh CSNs) since the tree was opened.
    pub invalidations: u64,
    /// Predicates (updated or deleted tids) appended to the log.
    pub predicates: u64,
    /// Predicate checks: one per leaf per log entry it had not been checked
    /// against (§2.1.2: a leaf pays once per new entry, not once per read).
    pub predicate_checks: u64,
    /// Leaf caches zeroed because a logged predicate matched an item.
    pub predicate_zeroed: u64,
    /// Times the log passed its threshold and was cleared by a fresh CSN.
    pub log_bumps: u64,
}

/// Entries the predicate log holds before it is cleared by a fresh CSN.
pub const DEFAULT_LOG_THRESHOLD: usize = 1024;

/// The tree's cache state: the layout, CSN_idx, the predicate log and the
/// counters.
pub(crate) struct IndexCache {
    /// The layout as one word ([`CacheLayout::to_bits`], 0: none), read by
    /// lookups without a lock: a lookup loads it after observing the CSN,
    /// and a change of layout moves the CSN both before and after it stores
    /// the word, so a lookup that read an old word under a CSN whose leaves
    /// carry the new layout cannot happen (see `set_cache_layout`).
    pub(super) layout_bits: AtomicU32,
    /// Held shared by a fill through its write and exclusively by a change
    /// of layout: the word cannot change under a fill.
    pub(super) layout_change: parking_lot::RwLock<()>,
    /// CSN_idx in the high 32 bits, the predicate log's length in the low
    /// ones: one load gives a consistent pair.
    pub(super) state: AtomicU64,
    /// The predicate log of the current CSN (§2.1.2): tids whose cached fields
    /// changed or whose rows were deleted, in append order. Cleared with every
    /// fresh CSN.
    pub(super) log: parking_lot::Mutex<Vec<Tid>>,
    /// Per leaf page: the CSN (high 32 bits) under which the leaf's cache was
    /// last checked against the log, and the log position (low 32 bits) it
    /// was checked up to. Memory only, like the stamp it sits beside; a leaf
    /// whose entry names another CSN is checked from the log's start.
    pub(super) checked: parking_lot::RwLock<Vec<AtomicU64>>,
    pub(super) threshold: AtomicUsize,
    /// Live [`CacheChange`]s.
    pub(super) changing: AtomicU32,
    pub(super) hits: AtomicU64,
    pub(super) misses: AtomicU64,
    pub(super) fills: AtomicU64,
    pub(super) stale: AtomicU64,
    pub(super) busy: AtomicU64,
    pub(super) promotions: AtomicU64,
    pub(super) invalidations: AtomicU64,
    pub(super) predicates: AtomicU64,
    pub(super) predicate_checks: AtomicU64,
    pub(super) predicate_zeroed: AtomicU64,
    pub(super) log_bumps: AtomicU64,
    /// Which misses may evict from a full leaf (`admission.rs`); made by the
    /// first fill that finds a leaf full, so a tree whose caches never fill
    /// up does not carry its 128 KiB.
    pub(super) doorkeeper: std::sync::OnceLock<Doorkeeper>,
    /// Fills refused by it.
    pub(super) rejected: AtomicU64,
}

pub(super) fn pack(csn: u32, pos: usize) -> u64 {
    ((csn as u64) << 32) | pos as u64
}

pub(super) fn unpack(v: u64) -> (u32, usize) {
    ((v >> 32) as u32, (v & 0xFFFF_FFFF) as usize)
}

/// What a reader observed before reading a leaf: the CSN (0 while a change is
/// in progress) and the predicate log's length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Observed {
    pub(super) csn: u32,
    pub(super) pos: usize,
}

impl IndexCache {
    /// A cache with no layout and a fresh CSN (a tree being opened).
    pub(crate) fn new() -> IndexCache {
        IndexCache {
            layout_bits: AtomicU32::new(0),
            layout_change: parking_lot::RwLock::new(()),
            state: AtomicU64::new(pack(fresh_csn(), 0)),
            log: parking_lot::Mutex::new(Vec::new()),
            checked: parking_lot::RwLock::new(Vec::new()),
            threshold: AtomicUsize::new(DEFAULT_LOG_THRESHOLD),
            changing: AtomicU32::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            fills: AtomicU64::new(0),
            stale: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            promotions: AtomicU64::new(0),
            invalidations: AtomicU64::new(0),
            predicates: AtomicU64::new(0),
            predicate_checks: AtomicU64::new(0),
            predicate_zeroed: AtomicU64::new(0),
            log_bumps: AtomicU64::new(0),
            doorkeeper: std::sync::OnceLock::new(),
            rejected: AtomicU64::new(0),
        }
    }

    pub(super) fn state(&self) -> (u32, usize) {
        unpack(self.state.load(Ordering::SeqCst))
    }

    pub(super) fn csn(&self) -> u32 {
        self.state().0
    }

    pub(crate) fn invalidate(&self) {
        self.renew();
        self.invalidations.fetch_add(1, Ordering::Relaxed);
    }

    /// A fresh CSN and an empty log (not counted: `invalidate` counts).
    pub(super) fn renew(&self) {
        let mut log = self.log.lock();
        log.clear();
        self.state.store(pack(fresh_csn(), 0), Ordering::SeqCst);
    }

    /// Appends predicates on `tids` to the log; past the threshold the log is
    /// cleared by a fresh CSN instead (every leaf's cache becomes stale).
    pub(crate) fn append(&self, tids: &[Tid]) {
        if tids.is_empty() {
            return;
        }
        let mut log = self.log.lock();
        self.predicates
            .fetch_add(tids.len() as u64, Ordering::Relaxed);
        if log.len() + tids.len() > self.threshold.load(Ordering::Relaxed) {
            log.clear();
            self.state.store(pack(fresh_csn(), 0), Ordering::SeqCst);
            self.invalidations.fetch_add(1, Ordering::Relaxed);
            self.log_bumps.fetch_add(1, Ordering::Relaxed);
            return;
        }
        log.extend_from_slice(tids);
        let (csn, _) = self.state();
        self.state.store(pack(csn, log.len()), Ordering::SeqCst);
    }

    /// What a reader may fill under, observed now: the CSN (0 while a change
    /// is in progress: its fills would be refused anyway) and the log's
    /// length. The pair is loaded before `changing`, so a change whose
    /// predicates are not in `pos` is seen as in progress.
    pub(super) fn observe(&self) -> Observed {
        let (csn, pos) = self.state();
        let csn = if self.changing.load(Ordering::SeqCst) != 0 {
            0
        } else {
            csn
        };
        Observed { csn, pos }
    }

    /// Whether nothing happened since `observed` was: the same CSN, and no
    /// change in progress.
    pub(super) fn still(&self, observed: u32) -> bool {
        observed != 0 && self.changing.load(Ordering::SeqCst) == 0 && self.csn() == observed
    }

    /// The log position `leaf`'s cache was checked up to under `csn` (0: from
    /// the start).
    pub(super) fn checked(&self, leaf: u32, csn: u32) -> usize {
        let c = self.checked.read();
        match c.get(leaf as usize) {
            Some(a) => match unpack(a.load(Ordering::SeqCst)) {
                (c, pos) if c == csn => pos,
                _ => 0,
            },
            None => 0,
        }
    }

    /// Records that `leaf`'s cache under `csn` was checked up to `pos`.
    /// Positions of one CSN only grow (a lower value would only cost checks
    /// again, never skip one).
    pub(super) fn set_checked(&self, leaf: u32, csn: u32, pos: usize) {
        let i = leaf as usize;
        let want = pack(csn, pos);
        {
            let c = self.checked.read();
            if let Some(a) = c.get(i) {
                let _ = a.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                    let (c, p) = unpack(now);
                    (c != csn || p < pos).then_some(want)
                });
                return;
            }
        }
        let mut c = self.checked.write();
        if c.len() <= i {
            let n = (i + 1).next_power_of_two().max(64);
            c.resize_with(n, || AtomicU64::new(0));
        }
        drop(c);
        self.set_checked(leaf, csn, pos);
    }

    /// Checks the leaf `page` (valid under `csn`) against the log entries
    /// `[from, to)`: `Some(true)` when one of them names an item it holds,
    /// `None` when the log is no longer `csn`'s.
    pub(super) fn log_matches(
        &self,
        page: &[u8],
        layout: &CacheLayout,
        csn: u32,
        from: usize,
        to: usize,
    ) -> Option<bool> {
        let mut tids: Vec<Tid> = {
            let log = self.log.lock();
            if self.csn() != csn || log.len() < to {
                return None;
            }
            log[from..to].to_vec()
        };
        self.predicate_checks
            .fetch_add((to - from) as u64, Ordering::Relaxed);
        tids.sort_unstable();
        Some(leaf_write::holds_any(page, layout, csn, &tids))
    }

    /// Whether the log of `csn` names `tid` at or after position `from`, and
    /// its length now (`None` when the log is no longer `csn`'s).
    pub(super) fn logged_since(&self, csn: u32, from: usize, tid: Tid) -> Option<(bool, usize)> {
        // Nothing appended since `from` (the log only grows under one CSN):
        // no lock needed.
        if self.state() == (csn, from) {
            return Some((false, from));
        }
        let log = self.log.lock();
        if self.csn() != csn {
            return None;
        }
        let from = from.min(log.len());
        Some((log[from..].contains(&tid), log.len()))
    }
}

/// What a lookup must do to a leaf after it checked the leaf against the log.
pub(super) enum Settle {
    /// No entry up to `to` matched: record `to`.
    Advance { to: usize },
    /// An entry in `[from, ..)` matched: zero the leaf's cache.
    Zero { from: usize },
}

/// What a lookup found for one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The cached value bytes.
    Hit(Vec<u8>),
    /// Not cached: read the heap, then [`BTree::fill_cache`] with the ticket.
    Miss(FillTicket),
}

/// One entry of a [`BTree::lookup_cached`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedEntry {
    pub tid: Tid,
    pub probe: Probe,
}

/// What [`BTree::lookup_cached_with`] found for one entry.
#[derive(Debug)]
pub enum Found<'a> {
    /// The cached value bytes, on the leaf.
    Hit(&'a [u8]),
    /// Not cached: read the heap, then [`BTree::fill_cache`] with the ticket.
    Miss(FillTicket),
}

/// Where and under which CSN a missed entry may be cached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FillTicket {
    pub(super) leaf: u32,
    /// The buffer-pool frame the lookup read the leaf in (`u32::MAX`: none):
    /// the fill tries that frame's latch first, without the page table.
    pub(super) frame: u32,
    /// The entry's position on the leaf then (checked first by the fill).
    pub(super) at: u16,
    /// The entry (key ++ tid) the lookup found there.
    pub(super) entry: EntryBytes,
    /// The CSN observed before the leaf was read (0: none may be filled).
    pub(super) csn: u32,
    /// The predicate log's length then: a predicate on the tid appended since
    /// refuses the fill.
    pub(super) pos: usize,
    /// A free slot the lookup picked for the fill (already loading into the
    /// CPU's cache), if it saw one.
    pub(super) free: Option<u16>,
    /// The frame's version under the lookup's latch ([`PageRef::version`]):
    /// a fill that finds the next one found the leaf as the lookup saw it.
    pub(super) seen: Option<u64>,
}

impl FillTicket {
    pub fn leaf(&self) -> u32 {
        self.leaf
    }
    pub fn tid(&self) -> Tid {
        let e = self.entry.bytes();
        Tid::decode(&e[e.len() - TID_LEN..])
    }
    pub fn csn(&self) -> u32 {
        self.csn
    }
}

/// Entries up to this many bytes (a key of up to 34 bytes and its tid) are
/// kept in a ticket itself: a miss allocates nothing for them.
pub(super) const INLINE_ENTRY: usize = 40;

/// An index entry's bytes, inline when short.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum EntryBytes {
    Inline { len: u8, bytes: [u8; INLINE_ENTRY] },
    Heap(Box<[u8]>),
}

impl EntryBytes {
    pub(super) fn new(e: &[u8]) -> EntryBytes {
        if e.len() <= INLINE_ENTRY {
            let mut bytes = [0u8; INLINE_ENTRY];
            bytes[..e.len()].copy_from_slice(e);
            EntryBytes::Inline {
                len: e.len() as u8,
                bytes,
            }
        } else {
            EntryBytes::Heap(e.into())
        }
    }
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            EntryBytes::Inline { len, bytes } => &bytes[..*len as usize],
            EntryBytes::Heap(b) => b,
        }
    }
}

/// The hits on one leaf a lookup promotes, kept without allocating: past
/// [`Promotions::MAX`] (a key with that many entries on one leaf), the rest
/// stay where they are this time (a promotion is best-effort anyway).
#[derive(Default)]
pub(super) struct Promotions {
    pub(super) n: usize,
    pub(super) hits: [(Tid, usize); Promotions::MAX],
}

impl Promotions {
    const MAX: usize = 8;
    pub(super) fn push(&mut self, tid: Tid, slot: usize) {
        if self.n < Self::MAX {
            self.hits[self.n] = (tid, slot);
            self.n += 1;
        }
    }
    pub(super) fn is_empty(&self) -> bool {
        self.n == 0
    }
    pub(super) fn as_slice(&self) -> &[(Tid, usize)] {
        &self.hits[..self.n]
    }
}

/// What [`BTree::fill_cache`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filled {
    /// Cached (in a free slot, over a peripheral item, or over the tid's old
    /// value).
    Cached(leaf_write::Filled),
    /// Refused: the CSN moved since the lookup (an invalidation or a change in
    /// progress), so the value may be stale.
    Stale,
    /// Given up: the leaf's latch was not free at once, the leaf is not in the
    /// pool, or a running write transaction changed it.
    Busy,
    /// The entry is no longer on that leaf (a split moved it, a delete
    /// removed it).
    Moved,
    /// The leaf has no slot left in its free region.
    NoRoom,
    /// No slot was free, and the item has not missed before recently enough
    /// to evict another (`admission.rs`).
    Rejected,
}

/// A change of cached values in progress ([`BTree::begin_cache_change`],
/// [`BTree::begin_cache_update`]): meanwhile lookups hit nothing and fills are
/// refused. A whole-index change invalidates when it begins and when it is
/// dropped; an update of some tuples has appended predicates on them when it
/// begins, and invalidates nothing.
pub struct CacheChange<'a> {
    pub(super) cache: &'a IndexCache,
    pub(super) whole: bool,
}

impl Drop for CacheChange<'_> {
    fn drop(&mut self) {
        if self.whole {
            self.cache.invalidate();
        }
        self.cache.changing.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One leaf's size and cache room ([`BTree::leaf_capacities`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafCapacity {
    /// Index entries on the leaf.
    pub entries: usize,
    /// Items its free region can hold now.
    pub slots: usize,
}

/// How full the caches of a tree's leaves are ([`BTree::cache_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    pub leaves: u64,
    /// Leaves whose cache is valid under the current CSN.
    pub valid_leaves: u64,
    /// Items cached in them.
    pub items: u64,
    /// Items all leaves' free regions can hold now (their slots less those
    /// of their directories, built or to be built).
    pub slots: u64,
}
