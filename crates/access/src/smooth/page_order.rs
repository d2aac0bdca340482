//! Smooth Scan's page-ordered policy ([`Policy::PageOrder`], the default for
//! unordered output): the Page-ID cache filled from the index before the heap
//! is touched, the heap read once in page order, and the morph into a full
//! scan decided from a lower bound on what the rest of the index can cost.
//!
//! The region policies (Greedy, SI, Elastic, cost-aware) learn the density of
//! the data from the heap pages they read around each index entry, so the data
//! can mislead them: a dense start keeps regions large over sparse pages, a
//! periodic key grows regions into the empty stretches between its cycles, and
//! whatever they guess wrong they have already paid for in random reads. The
//! index holds the same information, at a fraction of the price: an 8 KiB leaf
//! names the pages of hundreds of qualifying tuples. This operator therefore
//! walks the index range first and sets one bit per heap page an entry points
//! at (the Page-ID cache of §4.1, as a *wanted* set), then reads exactly those
//! pages, each once, in page order:
//!
//! * **Mode 1 (entire page probe)** for every wanted page: all its qualifying
//!   tuples are produced when it is read, so later entries pointing at it cost
//!   nothing.
//! * **Flattening** where it pays on this device: a gap of unwanted pages
//!   between two wanted ones is read as part of one request when reading the
//!   gap costs less than a separate request (`gap × sequential page cost ≤ one
//!   request's fixed cost`: about 40 pages on a disk, one page on flash with
//!   many requests in flight). The pages are read in one ascending pass, so
//!   none is read twice.
//! * **The morph into a full scan** ([`morph`]): while the range is being
//!   read, the cost of finishing this way is bounded from below by the exact
//!   cost of the wanted pages seen so far, plus the rest of the index (its
//!   leaves read in sequence, or on the wall clock the entries left at the
//!   cheapest rate per entry seen so far, whichever is more), plus the fewest
//!   heap pages the remaining entries can occupy (the entries
//!   left over the tuples a page holds, minus the room left on wanted pages).
//!   Once that lower bound reaches the cost of a sequential sweep of the whole
//!   heap, the operator stops reading the index and sweeps: at 100% of a table
//!   it does so before reading a leaf (the range's size comes from the
//!   internal nodes over it), whatever the layout. At the end of
//!   the range it compares the wanted pages' exact cost with the sweep.
//!
//! Because the decisions use counts of pages and the device's own costs (one
//! random request against a sequential page, from [`PageCosts`]), and never the
//! order in which the data arrives, no arrangement of the results can steer it
//! into reading pages it does not need, beyond the sweep the bound justified.
//! What it gives up is pipelining: its first row comes after the index range
//! (or the bound) has been read, as with a sort scan. Ordered output and the
//! Optimizer/SLA triggers keep the region operator ([`super::SmoothScan`]).
//!
//! **Split among threads** ([`super::shared_walk::SharedWalk`], `ScanSpec::part_of`): the index
//! walk and the morph decision are made once, by whichever part gets to them
//! first while the others wait; then each part reads its share of what was
//! decided — the k-th of n equal stretches of the heap for a sweep, of the
//! wanted pages' runs (cut where a share ends) otherwise — so the parts
//! together read every page the unsplit scan would, each once, and convert
//! their tuples on threads of their own.

use std::ops::Bound;

use strata_storage::btree::RangeCursor;
use strata_storage::row::Tid;

use super::{PageCosts, Policy, SmoothOptions};
use crate::batch::TupleBatch;
use crate::error::Result;
use crate::full::StreamedPages;
use crate::report::{Mode, ModeChange, ScanReport};
use crate::scan::{AccessPath, ScanSpec};
use crate::smooth::shared_walk::{Decided, SplitPart};

/// A set of heap pages: one bit per page.
#[derive(Clone, Debug)]
pub struct PageSet {
    words: Vec<u64>,
    len: u64,
}

impl PageSet {
    pub fn new(pages: u64) -> PageSet {
        PageSet {
            words: vec![0; pages.div_ceil(64) as usize],
            len: 0,
        }
    }

    /// Adds `page`; returns whether it was new.
    pub fn insert(&mut self, page: u64) -> bool {
        let (w, bit) = ((page / 64) as usize, 1u64 << (page % 64));
        let new = self.words[w] & bit == 0;
        self.words[w] |= bit;
        self.len += new as u64;
        new
    }

    pub fn contains(&self, page: u64) -> bool {
        self.words[(page / 64) as usize] & (1 << (page % 64)) != 0
    }

    /// Pages in the set.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the bitmap takes.
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// The pages in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let bit = w.trailing_zeros() as u64;
                w &= w - 1;
                Some(i as u64 * 64 + bit)
            })
        })
    }
}

/// What reading pages costs, in the terms the morph decision uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReadCosts {
    /// One page of a sequential run (heap or index leaf).
    pub sequential_ms: f64,
    /// What a request costs beyond its pages: the seek of a disk, the latency
    /// of flash at the operator's I/O depth.
    pub request_ms: f64,
}

impl ReadCosts {
    pub fn new(costs: &PageCosts, io_depth: usize) -> ReadCosts {
        let random = if io_depth > 1 {
            costs.parallel_random_ms
        } else {
            costs.random_ms
        };
        ReadCosts {
            sequential_ms: costs.sequential_ms,
            request_ms: (random - costs.sequential_ms).max(0.0),
        }
    }

    /// The longest gap of unwanted pages worth reading to save a request.
    pub fn bridge_pages(&self) -> u64 {
        if self.sequential_ms <= 0.0 {
            return u64::MAX;
        }
        (self.request_ms / self.sequential_ms).floor() as u64
    }
}

/// Reading a page set in page order: its runs (bridging gaps where cheaper)
/// and what they cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PageOrderPlan {
    /// (first page, pages), ascending.
    pub runs: Vec<(u64, usize)>,
    /// Pages read that are not in the set (bridged gaps).
    pub bridged: u64,
    pub cost_ms: f64,
}

/// The runs that read `set` in page order, bridging gaps of at most
/// `costs.bridge_pages()` pages.
pub fn plan_page_order(set: &PageSet, costs: &ReadCosts) -> PageOrderPlan {
    let bridge = costs.bridge_pages();
    let mut plan = PageOrderPlan::default();
    let mut pages = 0u64;
    for p in set.iter() {
        if let Some((first, n)) = plan.runs.last_mut() {
            let end = *first + *n as u64;
            let gap = p - end;
            if gap <= bridge {
                *n += gap as usize + 1;
                plan.bridged += gap;
                pages += gap + 1;
                continue;
            }
        }
        plan.runs.push((p, 1));
        pages += 1;
    }
    plan.cost_ms = plan.runs.len() as f64 * costs.request_ms + pages as f64 * costs.sequential_ms;
    plan
}

/// What the morph decision knows while the index range is being read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MorphInputs {
    /// Heap pages, and the cost of sweeping all of them in page order.
    pub heap_pages: u64,
    /// Index entries read so far, and the estimate for the whole range.
    pub entries_read: u64,
    pub entries_estimate: f64,
    /// Distinct heap pages those entries point at, and the exact cost of
    /// reading them in page order.
    pub wanted_pages: u64,
    pub wanted_cost_ms: f64,
    /// Tuples on an average heap page, and index entries on an average leaf.
    pub tuples_per_page: f64,
    pub entries_per_leaf: f64,
    /// What reading one more index entry has been seen to cost on the wall
    /// clock (0 where time is the device's modeled time, which charges no CPU).
    pub entry_ms: f64,
}

/// Whether to stop reading the index and sweep the heap: true once a lower
/// bound on finishing the page-ordered way — the wanted pages' exact cost, the
/// rest of the index, and the fewest new heap pages the entries left can fill —
/// is no less than sweeping every heap page. The rest of the index costs at
/// least its leaves read in sequence, and at least the entries left at the
/// cheapest rate the entries read so far took: on a fast device it is the
/// CPU that decodes hundreds of thousands of entries, not the leaf reads,
/// that makes a wide range cost more than the sweep. Returns the bound and
/// the sweep's cost too.
pub fn morph(m: &MorphInputs, costs: &ReadCosts) -> (bool, f64, f64) {
    let sweep = m.heap_pages as f64 * costs.sequential_ms + costs.request_ms;
    let left = (m.entries_estimate - m.entries_read as f64).max(0.0);
    let tpp = m.tuples_per_page.max(1.0);
    // The wanted pages can take this many more of the remaining entries.
    let room = (m.wanted_pages as f64 * tpp - m.entries_read as f64).max(0.0);
    let new_pages =
        ((left - room).max(0.0) / tpp).min(m.heap_pages.saturating_sub(m.wanted_pages) as f64);
    let leaves = left / m.entries_per_leaf.max(1.0);
    let index = (leaves * costs.sequential_ms).max(left * m.entry_ms);
    let bound = m.wanted_cost_ms + new_pages * costs.sequential_ms + index;
    (bound >= sweep, bound, sweep)
}

/// Entries between two morph checks once the first checks (before the first
/// entry, then after 16, 32, 64, ... entries) are past. A check walks the
/// wanted pages, so one every half heap's worth of entries costs at most two
/// bit steps per entry, and delays a morph by a thousandth of the heap in
/// index leaves.
fn check_interval(heap_pages: u64) -> u64 {
    (heap_pages / 2).max(1024)
}

/// The cheapest wall-clock cost per index entry seen over stretches of at
/// least [`EntryClock::STRETCH`] entries. The first stretch starts after the
/// first entry, so the descent to the first leaf is not counted; taking the
/// cheapest stretch keeps a preempted or stalled stretch from inflating it, so
/// it stays a lower bound on what the entries left will cost.
#[derive(Clone, Copy, Debug)]
struct EntryClock {
    on: bool,
    since: Option<(std::time::Instant, u64)>,
    best_ms: f64,
}

impl EntryClock {
    const STRETCH: u64 = 1024;

    fn new(on: bool) -> EntryClock {
        EntryClock {
            on,
            since: None,
            best_ms: f64::INFINITY,
        }
    }

    /// Called at each morph check with the entries read so far.
    fn tick(&mut self, entries: u64, now: std::time::Instant) {
        if !self.on || entries == 0 {
            return;
        }
        match self.since {
            None => self.since = Some((now, entries)),
            Some((at, from)) if entries - from >= Self::STRETCH => {
                let ms = now.duration_since(at).as_secs_f64() * 1e3 / (entries - from) as f64;
                self.best_ms = self.best_ms.min(ms);
                self.since = Some((now, entries));
            }
            Some(_) => {}
        }
    }

    fn ms_per_entry(&self) -> f64 {
        if self.best_ms.is_finite() {
            self.best_ms
        } else {
            0.0
        }
    }
}

/// Plans of fewer pages are read by the scan's own thread: a read-ahead
/// thread pays off when there is work to overlap with the reads, and on a
/// busy machine handing a few pages over from another thread costs more than
/// reading them.
const INLINE_PAGES: usize = 1024;

enum Phase {
    /// Reading the index range into the wanted set.
    Collect,
    /// Reading pages (boxed: the other phases are a word).
    Read(Box<StreamedPages>),
    Done,
}

/// Where the index entries come from: the predicate's one range, or one
/// equality probe per key of a parameterized (join) scan.
enum Entries {
    Range(RangeCursor),
    /// The one key's entries, from the index's hot partition.
    Hot(std::vec::IntoIter<Tid>),
    /// Encoded first-column keys, ascending and distinct; the next to probe;
    /// the cursor of the key being read.
    Keys {
        keys: Vec<Vec<u8>>,
        next: usize,
        cursor: Option<RangeCursor>,
    },
}

impl Entries {
    /// The next entry's tuple id, probing the next key when one is done.
    fn next_tid(&mut self, index: &strata_storage::btree::BTree) -> Option<Result<Tid>> {
        match self {
            Entries::Range(c) => c.next_entry(index).map(|e| Ok(e?.1)),
            Entries::Hot(tids) => tids.next().map(Ok),
            Entries::Keys { keys, next, cursor } => loop {
                if let Some(c) = cursor {
                    match c.next_entry(index) {
                        Some(e) => return Some(e.map(|e| e.1).map_err(Into::into)),
                        None => *cursor = None,
                    }
                }
                let k = keys.get(*next)?;
                *next += 1;
                *cursor = Some(
                    index.range_cursor(Bound::Included(k.clone()), Bound::Included(k.clone())),
                );
            },
        }
    }

    /// Keys probed so far and in all (a range counts as one key).
    fn keys(&self) -> (usize, usize) {
        match self {
            Entries::Range(_) | Entries::Hot(_) => (1, 1),
            Entries::Keys { keys, next, .. } => (*next, keys.len()),
        }
    }
}

pub struct PageOrderScan {
    spec: ScanSpec,
    entries: Entries,
    costs: ReadCosts,
    num_pages: u64,
    wanted: PageSet,
    /// Pages processed, to count any read twice.
    read: PageSet,
    entries_estimate: f64,
    tuples_per_page: f64,
    entries_per_leaf: f64,
    next_check: u64,
    /// The wall-clock cost of an index entry (off on a modeled clock).
    entry_clock: EntryClock,
    phase: Phase,
    report: ScanReport,
}

impl PageOrderScan {
    pub fn new(spec: ScanSpec, opts: &SmoothOptions) -> Result<PageOrderScan> {
        let index = &spec.index()?.btree;
        let (lo, hi) = spec.key_range()?;
        let (entries, entries_estimate) = match spec.hot_tids()? {
            Some(tids) => {
                let n = tids.len() as f64;
                (Entries::Hot(tids.into_iter()), n)
            }
            None => (
                Entries::Range(spec.cursor()?),
                index.estimate_range(&lo, &hi)?,
            ),
        };
        let hot = matches!(entries, Entries::Hot(_));
        let mut scan = Self::with_entries(spec, entries, entries_estimate, opts)?;
        if hot {
            scan.report.notes.push(format!(
                "the key's {} entries came from the hot partition of {}",
                entries_estimate,
                scan.spec.index()?.def.name
            ));
        }
        Ok(scan)
    }

    /// The parameterized Smooth Scan of an index nested-loop join's inner
    /// side (§4.2): the tuples of `spec`'s predicate whose index key (first
    /// column, encoded) is one of `keys`. One Page-ID cache serves every
    /// probe, so a page holding the matches of many keys is read once; the
    /// morph bound counts the entries left at the rate the keys probed so far
    /// showed. Every tuple on a page read is produced if it passes `spec`'s
    /// predicate — the caller keeps those whose key it asked for (a page
    /// read for one key may hold another's matches, which are produced then
    /// and only then).
    pub fn for_keys(
        spec: ScanSpec,
        mut keys: Vec<Vec<u8>>,
        opts: &SmoothOptions,
    ) -> Result<PageOrderScan> {
        spec.index()?;
        keys.sort_unstable();
        keys.dedup();
        let n = keys.len();
        let entries = Entries::Keys {
            keys,
            next: 0,
            cursor: None,
        };
        let mut scan = Self::with_entries(spec, entries, 0.0, opts)?;
        scan.report.notes[0] = format!(
            "starts in mode {}; {n} join keys to probe",
            Mode::PageProbe.label()
        );
        Ok(scan)
    }

    fn with_entries(
        spec: ScanSpec,
        entries: Entries,
        entries_estimate: f64,
        opts: &SmoothOptions,
    ) -> Result<PageOrderScan> {
        // Every way in (a range, join keys) checks the part it is given.
        if let Some(p) = &spec.part
            && p.part >= p.walk.parts()
        {
            return Err(crate::error::AccessError::Config(format!(
                "part {} of a scan split into {}",
                p.part + 1,
                p.walk.parts()
            )));
        }
        let heap = spec.table.heap();
        let num_pages = heap.num_pages();
        let io_depth = if opts.io_depth == 0 {
            heap.pool().device().parallelism().max(1)
        } else {
            opts.io_depth
        };
        let index = &spec.index()?.btree;
        let tuples_per_page = spec.table.rows() as f64 / num_pages.max(1) as f64;
        let entries_per_leaf = index.len() as f64 / index.num_pages().max(1) as f64;
        let wanted = PageSet::new(num_pages);
        Ok(PageOrderScan {
            entries,
            costs: ReadCosts::new(&opts.page_costs, io_depth),
            num_pages,
            entries_estimate,
            tuples_per_page,
            entries_per_leaf,
            next_check: 0,
            entry_clock: EntryClock::new(!opts.modeled_clock),
            phase: Phase::Collect,
            report: ScanReport {
                path: format!("smooth ({:?}, eager)", Policy::PageOrder),
                page_cache_bytes: wanted.bytes(),
                regions: vec![(0, 1)],
                notes: vec![format!(
                    "starts in mode {}; about {entries_estimate:.0} index entries in the range",
                    Mode::PageProbe.label()
                )],
                ..Default::default()
            },
            read: PageSet::new(num_pages),
            wanted,
            spec,
        })
    }

    /// The entries the scan will read in all: the range's estimate, or for
    /// join keys the entries read so far plus the keys left at the rate of
    /// the keys probed so far.
    fn entries_estimate(&self) -> f64 {
        let read = self.report.index_entries as f64;
        match &self.entries {
            Entries::Range(_) | Entries::Hot(_) => self.entries_estimate.max(read),
            Entries::Keys { .. } => {
                let (probed, all) = self.entries.keys();
                if probed == 0 {
                    0.0
                } else {
                    read + (all - probed) as f64 * read / probed as f64
                }
            }
        }
    }

    fn inputs(&self, wanted_cost_ms: f64) -> MorphInputs {
        MorphInputs {
            heap_pages: self.num_pages,
            entries_read: self.report.index_entries,
            entries_estimate: self.entries_estimate(),
            wanted_pages: self.wanted.len(),
            wanted_cost_ms,
            tuples_per_page: self.tuples_per_page,
            entries_per_leaf: self.entries_per_leaf,
            entry_ms: self.entry_clock.ms_per_entry(),
        }
    }

    /// Walks the index and starts reading what it decided: the whole of it,
    /// or this part's share when the scan is split (the walk made by the
    /// first part to get here, the others waiting for it).
    fn collect(&mut self) -> Result<()> {
        let Some(SplitPart { walk, part }) = self.spec.part.clone() else {
            let decided = self.walk()?;
            return self.start(decided, None);
        };
        let share = walk.share_of(part, || self.walk())?;
        self.start(share, Some((part, walk.parts())))
    }

    /// Reads index entries until the range ends or the bound says to sweep,
    /// and says which pages to read.
    fn walk(&mut self) -> Result<Decided> {
        let table = self.spec.table.clone();
        let index = &table.indexes()[self.spec.index.expect("checked by new")].btree;
        let mut ended = false;
        loop {
            // The first check comes before any leaf is read: with the range's
            // estimate alone, a query over the whole table sweeps at once.
            if ended || self.report.index_entries >= self.next_check {
                self.entry_clock
                    .tick(self.report.index_entries, std::time::Instant::now());
                let plan = plan_page_order(&self.wanted, &self.costs);
                let (sweep, bound, sweep_ms) = morph(&self.inputs(plan.cost_ms), &self.costs);
                if sweep || (ended && plan.cost_ms >= sweep_ms) {
                    return Ok(self.decide_sweep(bound, sweep_ms, ended));
                }
                if ended {
                    return Ok(self.decide_runs(plan, sweep_ms));
                }
                let n = self.report.index_entries;
                self.next_check = if n < check_interval(self.num_pages) {
                    (n * 2).max(16)
                } else {
                    n + check_interval(self.num_pages)
                };
            }
            match self.entries.next_tid(index) {
                Some(tid) => {
                    let tid = tid?;
                    self.wanted.insert(tid.page as u64);
                    self.report.index_entries += 1;
                }
                None => ended = true,
            }
        }
    }

    fn decide_sweep(&mut self, bound: f64, sweep_ms: f64, ended: bool) -> Decided {
        self.report.notes.push(if ended {
            format!(
                "the range's {} entries point at {} pages; sweeping all {} pages in page order costs less ({sweep_ms:.1} ms modeled)",
                self.report.index_entries,
                self.wanted.len(),
                self.num_pages
            )
        } else {
            format!(
                "after {} index entries (of about {:.0}) the rest costs at least {bound:.1} ms, a full sweep {sweep_ms:.1} ms: morphs into a full scan, the rest of the index is not read",
                self.report.index_entries,
                self.entries_estimate()
            )
        });
        self.morph_to(Mode::Expansion, self.num_pages);
        Decided::Sweep {
            from: 0,
            to: self.num_pages,
        }
    }

    fn decide_runs(&mut self, plan: PageOrderPlan, sweep_ms: f64) -> Decided {
        let longest = plan.runs.iter().map(|r| r.1).max().unwrap_or(0);
        self.report.notes.push(format!(
            "the range's {} entries point at {} pages: read in page order as {} runs ({} gap pages bridged), {:.1} ms modeled against {sweep_ms:.1} ms for a full sweep",
            self.report.index_entries,
            self.wanted.len(),
            plan.runs.len(),
            plan.bridged,
            plan.cost_ms
        ));
        if longest > 1 {
            self.morph_to(Mode::of_region(longest as u32), longest as u64);
        }
        Decided::Runs(plan.runs)
    }

    /// Starts reading `read` (`part`: this part's number and the parts, when
    /// `read` is a share).
    fn start(&mut self, read: Decided, part: Option<(usize, usize)>) -> Result<()> {
        let heap = self.spec.table.heap().clone();
        let pages = match &read {
            Decided::Sweep { from, to } => to - from,
            Decided::Runs(runs) => runs.iter().map(|r| r.1 as u64).sum(),
        };
        if let Some((k, n)) = part {
            self.report.notes.push(format!(
                "part {} of {n}: {pages} of the pages the index walk chose",
                k + 1
            ));
        }
        match read {
            Decided::Sweep { from, to } => {
                let stream = heap.stream(from, to, crate::full::RUN_PAGES, crate::full::DEPTH)?;
                self.report.swept_pages += to - from;
                self.report.read_ahead_streams += 1;
                // A full scan from here on, which, like one, records no
                // accesses for hot/cold clustering: a query that wants most
                // of the table says nothing about which of its tuples are
                // hot (and counting them all would cost a map update a tuple
                // and a tracker of the whole table).
                self.phase = Phase::Read(Box::new(StreamedPages::new(stream)));
            }
            Decided::Runs(runs) if runs.is_empty() => self.phase = Phase::Done,
            Decided::Runs(runs) => {
                // Long runs go as a full scan's large requests, scattered
                // pages as many small ones in flight together (a sort scan's
                // depth), within the pages a full scan keeps in flight.
                let (run_pages, depth, batch) = (
                    crate::full::RUN_PAGES,
                    crate::sort_scan::DEPTH,
                    crate::full::BATCH_PAGES,
                );
                let stream = if pages < INLINE_PAGES as u64 {
                    heap.read_runs_inline(&runs, run_pages, depth, batch)?
                } else {
                    self.report.read_ahead_streams += 1;
                    heap.stream_runs(&runs, run_pages, depth, batch)?
                };
                self.phase = Phase::Read(Box::new(StreamedPages::new(stream).counting_accesses()));
            }
        }
        Ok(())
    }

    fn morph_to(&mut self, to: Mode, region: u64) {
        self.report.mode_changes.push(ModeChange {
            at_row: 0,
            from: Mode::PageProbe,
            to,
        });
        self.report
            .regions
            .push((0, region.min(u32::MAX as u64) as u32));
    }
}

impl AccessPath for PageOrderScan {
    fn next_batch(&mut self, out: &mut TupleBatch) -> Result<bool> {
        out.clear();
        if matches!(self.phase, Phase::Collect) {
            self.collect()?;
        }
        if let Phase::Read(pages) = &mut self.phase {
            let (heap_pages, reread, read) = (
                &mut self.report.heap_pages,
                &mut self.report.reread_pages,
                &mut self.read,
            );
            let more = pages.produce(&self.spec, out, |page| {
                *heap_pages += 1;
                *reread += !read.insert(page) as u64;
            })?;
            if !more {
                self.phase = Phase::Done;
            }
        }
        self.report.rows += out.len() as u64;
        Ok(!out.is_empty())
    }

    fn report(&self) -> ScanReport {
        self.report.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pages: u64, of: &[u64]) -> PageSet {
        let mut s = PageSet::new(pages);
        for &p in of {
            s.insert(p);
        }
        s
    }

    const DISK: ReadCosts = ReadCosts {
        sequential_ms: 0.1,
        request_ms: 1.0,
    };

    #[test]
    fn page_sets_iterate_in_order_and_count_once() {
        let s = set(200, &[130, 3, 64, 3, 199, 0]);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 3, 64, 130, 199]);
        assert_eq!(s.len(), 5);
        assert!(s.contains(64) && !s.contains(65));
    }

    #[test]
    fn gaps_are_bridged_only_where_a_request_costs_more() {
        assert_eq!(DISK.bridge_pages(), 10);
        let s = set(100, &[0, 5, 16, 27, 60]);
        let p = plan_page_order(&s, &DISK);
        // 0..5 (gap 4) and 5..16 (gap 10) bridge; 16..27 (gap 10) too; 60 is alone.
        assert_eq!(p.runs, vec![(0, 28), (60, 1)]);
        assert_eq!(p.bridged, 24);
        assert!((p.cost_ms - (2.0 * 1.0 + 29.0 * 0.1)).abs() < 1e-9);
    }

    fn inputs(read: u64, estimate: f64, wanted: u64, cost: f64) -> MorphInputs {
        MorphInputs {
            heap_pages: 1000,
            entries_read: read,
            entries_estimate: estimate,
            wanted_pages: wanted,
            wanted_cost_ms: cost,
            tuples_per_page: 100.0,
            entries_per_leaf: 400.0,
            entry_ms: 0.0,
        }
    }

    #[test]
    fn the_whole_table_morphs_at_once_and_a_narrow_range_never() {
        // 100% of 100,000 rows: after 16 entries on 16 pages, the other
        // entries need the other 984 pages at least.
        let (sweep, bound, full) = morph(&inputs(16, 100_000.0, 16, 17.6), &DISK);
        assert!(sweep, "{bound} vs {full}");
        // 1% of it, spread one result per page: the bound stays below the sweep.
        let (sweep, bound, full) = morph(&inputs(16, 1_000.0, 16, 17.6), &DISK);
        assert!(!sweep && bound < full);
        // ... until the wanted pages alone cost as much as the sweep.
        assert!(morph(&inputs(1_000, 1_000.0, 91, 101.0), &DISK).0);
    }

    #[test]
    fn entries_left_count_at_their_measured_cost_when_it_exceeds_the_leaves() {
        // 9,000 entries left: on the leaves alone (22.5 leaves, 2.25 ms) the
        // bound stays far below the 101 ms sweep ...
        let mut m = inputs(1_000, 10_000.0, 10, 2.0);
        let (sweep, bound, full) = morph(&m, &DISK);
        assert!(!sweep && (bound - 13.25).abs() < 1e-9, "{bound} vs {full}");
        // ... at 10 µs an entry they cost 90 ms, and the scan sweeps.
        m.entry_ms = 0.01;
        let (sweep, bound, _) = morph(&m, &DISK);
        assert!(sweep && (bound - 101.0).abs() < 1e-9, "{bound}");
        // A rate below the leaves' cost does not lower the bound.
        m.entry_ms = 1e-6;
        assert!((morph(&m, &DISK).1 - 13.25).abs() < 1e-9);
    }

    #[test]
    fn the_entry_clock_keeps_the_cheapest_stretch_and_is_off_on_a_modeled_clock() {
        use std::time::{Duration, Instant};
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_micros(n * 1000);
        let mut c = EntryClock::new(true);
        c.tick(0, t0); // before the first entry: nothing to time from
        c.tick(16, ms(5)); // the descent to the first leaf is not counted
        assert_eq!(c.ms_per_entry(), 0.0);
        c.tick(1_000, ms(6)); // shorter than a stretch
        assert_eq!(c.ms_per_entry(), 0.0);
        c.tick(2_064, ms(7)); // 2,048 entries in 2 ms
        assert!((c.ms_per_entry() - 2.0 / 2_048.0).abs() < 1e-12);
        c.tick(3_088, ms(57)); // a stalled stretch: 1,024 entries in 50 ms
        assert!((c.ms_per_entry() - 2.0 / 2_048.0).abs() < 1e-12);
        let mut off = EntryClock::new(false);
        off.tick(16, t0);
        off.tick(5_000, ms(100));
        assert_eq!(off.ms_per_entry(), 0.0);
    }

    #[test]
    fn room_on_wanted_pages_lowers_the_bound() {
        // 50,000 entries left; the wanted pages are full (no room) or empty.
        let full = morph(&inputs(10_000, 60_000.0, 100, 11.0), &DISK).1;
        let room = morph(&inputs(100, 50_100.0, 600, 11.0), &DISK).1;
        assert!(room < full, "{room} {full}");
    }
}
