//! Smooth Scan (Borovica-Gajic et al., §3–4): an access path that morphs from an
//! index scan into a full scan as the selectivity it observes grows, without
//! trusting any estimate.
//!
//! It walks the index range in (key, tid) order. For an entry whose heap page it
//! has not processed yet, it reads a *region* of adjacent pages starting at that
//! page in one request and produces every qualifying tuple on them (or, for
//! ordered output, the entry's own tuple now and the others into the
//! [`ResultCache`]). The region size is the mode: 1 page is mode 1 (entire page
//! probe), 2 pages mode 2 (flattening), more mode 2+ (expansion), up to a cap
//! (2000 pages = 16 MB, the paper's best, §7.4). Before morphing — only with the
//! Optimizer- or SLA-driven triggers — it is a plain index scan (mode 0).
//!
//! * **Page-ID cache**: a bitmap with one bit per heap page; an entry whose page is
//!   processed is skipped (its tuple was produced or cached already).
//! * **Tuple-ID cache**: not needed. Entries are strictly ordered by (key, tid),
//!   so a tuple produced in mode 0 is exactly one whose entry is at most the last
//!   entry mode 0 produced (§4.1's remark); probed pages skip those.
//! * **Policies** decide the next region size after each region, from the local
//!   page selectivity (pages with results / pages in the last region, Eq. 1) and
//!   the global one (pages with results / pages seen, Eq. 2):
//!   Greedy doubles every time; Selectivity-Increase doubles when the local
//!   selectivity is at least `grow` × the global one and keeps the size otherwise;
//!   Elastic doubles on the same condition, divides by `shrink` when the local
//!   selectivity is below `shrink_below` × the global one, and keeps the size in
//!   between (a hysteresis band; with both factors 1 it halves whenever it does
//!   not double, the paper's description).
//!   (With page selectivities a region that is as dense as everything seen so far
//!   — e.g. every page at 100% selectivity — must count as "increasing", or no
//!   policy would ever leave mode 1 on uniformly dense data; hence "at least".)
//! * **Triggers**: Eager morphs from the first tuple (so the pages read never
//!   exceed the table's); Optimizer-driven morphs once the rows produced exceed
//!   the optimizer's estimate; SLA-driven morphs — with Greedy, as in the paper —
//!   as soon as the time spent plus the next index fetch plus the worst case of
//!   morphing over the whole table (every heap page and index leaf sequentially,
//!   plus log2(#P) jumps) could no longer meet the bound.
//! * **Regions** never re-read a processed page: a region stops at the first
//!   processed page after its start, or the end of the table.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use strata_storage::btree::RangeCursor;
use strata_storage::device::AlignedBuf;
use strata_storage::page::{PAGE_SIZE, PageView};
use strata_storage::row::Tid;

mod options;
pub mod page_order;
mod regions;
pub mod shared_walk;

pub use options::{PageCosts, Policy, SmoothOptions, Trigger};
use page_order::{PageOrderScan, PageSet};

/// Opens a Smooth Scan: the page-ordered operator where its policy applies
/// (unordered output, eager trigger), the region operator otherwise.
pub fn open(spec: ScanSpec, opts: &SmoothOptions) -> Result<Box<dyn AccessPath>> {
    if splits(spec.ordered, opts) {
        return Ok(Box::new(PageOrderScan::new(spec, opts)?));
    }
    if let Some(p) = &spec.part {
        return Err(AccessError::Config(format!(
            "this Smooth Scan cannot run as part {} of {}: only the page-ordered policy, eager and unordered, splits",
            p.part + 1,
            p.walk.parts()
        )));
    }
    Ok(Box::new(SmoothScan::new(spec, opts.clone())?))
}

/// Whether a scan (`ordered` or not) under `opts` opens the page-ordered
/// operator, the one Smooth Scan that can be split among threads
/// (`ScanSpec::part_of`).
pub fn splits(ordered: bool, opts: &SmoothOptions) -> bool {
    opts.policy == Policy::PageOrder && !ordered && opts.trigger == Trigger::Eager
}

use crate::batch::TupleBatch;
use crate::error::{AccessError, Result};
use crate::report::{Mode, ModeChange, ScanReport};
use crate::result_cache::{ResultCache, TUPLE_OVERHEAD};
use crate::scan::{AccessPath, ScanSpec};

/// A planned region: its unprocessed pages, read as runs (first page, pages)
/// placed back to back in the scan's buffer from `offset` (in pages).
struct Region {
    runs: Vec<(u64, usize)>,
    offset: usize,
    /// The pages the region covers that were unprocessed when planned.
    pages: Vec<u64>,
    done: bool,
    /// A large region, read by a read-ahead stream while it is processed
    /// instead of up front (so its tuples are worked on while the rest arrives).
    streamed: bool,
    /// A sweep's region: read by the sweep's one stream, which goes on into
    /// the next region (see `SmoothScan::sweep_stream`).
    swept: bool,
}

/// A read-ahead stream and where its consumer stands in it.
struct Streaming {
    stream: strata_storage::heap::PageStream,
    /// The stream stands on a run not yet finished, at this page of it.
    on_run: bool,
    next: usize,
}

impl Streaming {
    fn new(stream: strata_storage::heap::PageStream) -> Streaming {
        Streaming {
            stream,
            on_run: false,
            next: 0,
        }
    }
}

/// The region being produced: where its production stands between batches.
struct ActiveRegion {
    /// Its index among the planned regions, and the region itself.
    r: usize,
    region: Region,
    /// The tuple id of the index entry that reached it (none for a sweep's
    /// region), and whether mode 0 produced tuples.
    tid: Option<Tid>,
    check_m0: bool,
    /// The page that entry points at (the others are the region's "extra"
    /// pages; all of a sweep's are).
    first_page: u64,
    /// Pages of the region that held results so far.
    results: u64,
    /// A streamed region's read-ahead; otherwise its pages are in the scan's
    /// buffer from `region.offset`.
    stream: Option<Streaming>,
    /// Next run (buffered regions), its first page's place in the buffer
    /// relative to the region, and the next page within the current run.
    run: usize,
    at: usize,
    next: usize,
}

impl Region {
    /// Pages the region occupies in the buffer.
    fn span(&self) -> usize {
        self.runs.iter().map(|r| r.1).sum()
    }
}

/// Regions spanning at least this many pages are streamed.
const STREAM_PAGES: usize = 256;

pub struct SmoothScan {
    spec: ScanSpec,
    opts: SmoothOptions,
    cursor: RangeCursor,
    /// Page-ID cache: one bit per heap page.
    processed: Vec<u64>,
    /// Pages put in a read request so far, to count any read twice.
    read: PageSet,
    num_pages: u64,
    /// Still a plain index scan (non-eager triggers before they fire).
    mode0: bool,
    policy: Policy,
    region: u32,
    /// Entry of the last tuple mode 0 produced (empty if none).
    last_m0: Vec<u8>,
    pages_seen: u64,
    pages_with_results: u64,
    /// Pages and result pages of the regions of the batch being processed, and
    /// of the pages beyond each region's first (the one the index pointed at).
    batch_pages: u64,
    batch_results: u64,
    batch_extra: u64,
    batch_extra_results: u64,
    cache: Option<ResultCache>,
    /// Index entries read ahead of processing.
    window: VecDeque<(Vec<u8>, Tid)>,
    cursor_done: bool,
    /// Regions read and not yet processed, and which region each of their
    /// pages belongs to.
    regions: Vec<Region>,
    planned: HashMap<u64, usize>,
    buf: Option<AlignedBuf>,
    /// The region being produced, if one is under way.
    active: Option<ActiveRegion>,
    /// Regions are placed in page order from `sweep_at` rather than at the
    /// next index entry's page (cost-aware policy, unordered output, once the
    /// largest regions keep paying off; see [`Policy::CostAware`]).
    sweep: bool,
    sweep_at: u64,
    /// The sweep's read-ahead over every page it has left, made when it starts
    /// and handed from region to region: one reader thread and one set of
    /// buffers for the rest of the table, as a full scan has, instead of a
    /// stream per region.
    sweep_stream: Option<Streaming>,
    /// Where the last region read ended (the next page after its last one).
    last_region_end: u64,
    /// Cost-aware probing while regions are one page: batches to wait before
    /// the next probe, and batches since the last one.
    probe_wait: u32,
    since_probe: u32,
    /// Pages read by probes not judged yet, and those holding results.
    probe_pages: u64,
    probe_hits: u64,
    started: Instant,
    modeled_start_ns: u64,
    done: bool,
    report: ScanReport,
    scratch: Vec<u8>,
}

impl SmoothScan {
    pub fn new(spec: ScanSpec, opts: SmoothOptions) -> Result<SmoothScan> {
        let cursor = spec.cursor()?;
        if opts.max_region_pages == 0 || opts.shrink == 0 || opts.grow <= 0.0 {
            return Err(AccessError::Config(
                "smooth scan: region cap and shrink factor must be at least 1, grow factor positive".into(),
            ));
        }
        let heap = spec.table.heap();
        // Regions are read from the device, past the buffer pool: pages the
        // session wrote and the pool holds dirty must be on it first (a heap
        // filled after its index was made has none on the device yet).
        heap.pool().flush_file(heap.file_id())?;
        let mut opts = opts;
        if opts.io_depth == 0 {
            opts.io_depth = heap.pool().device().parallelism().max(1);
        }
        let num_pages = heap.num_pages();
        let words = num_pages.div_ceil(64) as usize;
        let mode0 = !matches!(opts.trigger, Trigger::Eager);
        let cache = if spec.ordered {
            Some(Self::result_cache(&spec, &opts)?)
        } else {
            None
        };
        let path = format!(
            "smooth ({:?}, {}{})",
            opts.policy,
            match opts.trigger {
                Trigger::Eager => "eager".to_string(),
                Trigger::Optimizer { estimate } => format!("optimizer-driven, estimate {estimate}"),
                Trigger::Sla { bound_ms } => format!("SLA-driven, bound {bound_ms} ms"),
            },
            if spec.ordered { ", ordered" } else { "" }
        );
        let start_mode = if mode0 { Mode::Index } else { Mode::PageProbe };
        let modeled_start_ns = heap.pool().device().stats().snapshot().modeled_ns;
        Ok(SmoothScan {
            processed: vec![0; words],
            read: PageSet::new(num_pages),
            num_pages,
            mode0,
            // The page-ordered policy's regions, where it cannot collect
            // first (ordered output, a trigger), are the cost-aware ones.
            policy: match opts.policy {
                Policy::PageOrder => Policy::CostAware,
                p => p,
            },
            region: 1,
            last_m0: Vec::new(),
            pages_seen: 0,
            pages_with_results: 0,
            batch_pages: 0,
            batch_results: 0,
            batch_extra: 0,
            batch_extra_results: 0,
            cache,
            window: VecDeque::new(),
            cursor_done: false,
            regions: Vec::new(),
            planned: HashMap::new(),
            buf: None,
            active: None,
            sweep: false,
            sweep_at: 0,
            sweep_stream: None,
            probe_wait: 1,
            since_probe: 0,
            probe_pages: 0,
            probe_hits: 0,
            last_region_end: 0,
            started: Instant::now(),
            modeled_start_ns,
            done: false,
            report: ScanReport {
                path,
                page_cache_bytes: words * 8,
                regions: if mode0 { vec![] } else { vec![(0, 1)] },
                notes: vec![format!("starts in mode {}", start_mode.label())],
                ..Default::default()
            },
            scratch: Vec::new(),
            spec,
            opts,
            cursor,
        })
    }

    /// Partitions the Result Cache at the index's own separators: the highest
    /// level (root first) whose subtrees are small enough that a partition's
    /// worst case — every entry qualifying — is a quarter of the budget, grouping
    /// adjacent subtrees up to that size. Only the nodes over the scan's key
    /// range are read: a selective query reads a page per level, not a level.
    fn result_cache(spec: &ScanSpec, opts: &SmoothOptions) -> Result<ResultCache> {
        let index = spec.index()?;
        let tree = &index.btree;
        let (lo, hi) = spec.key_range()?;
        let entries = tree.len().max(1) as f64;
        let row = spec.table.schema().max_row_size() + TUPLE_OVERHEAD;
        let target = (opts.result_cache_bytes / 4).max(1);
        let mut bounds = Vec::new();
        for level in 0..tree.height().saturating_sub(1) {
            let (seps, subtrees) = tree.level_entries_in(level, &lo, &hi)?;
            let per_subtree = (entries / subtrees.max(1.0)) as usize * row;
            let last_level = level + 2 == tree.height();
            if per_subtree <= target || last_level {
                let group = (target / per_subtree.max(1)).max(1);
                bounds = seps.into_iter().skip(group - 1).step_by(group).collect();
                break;
            }
        }
        let device = spec.table.heap().pool().device().clone();
        Ok(ResultCache::new(
            bounds,
            opts.result_cache_bytes,
            device,
            &opts.temp_dir,
        ))
    }

    fn is_processed(&self, page: u64) -> bool {
        self.processed[(page / 64) as usize] & (1 << (page % 64)) != 0
    }

    fn mark(&mut self, page: u64) {
        self.processed[(page / 64) as usize] |= 1 << (page % 64);
    }

    fn mode(&self) -> Mode {
        if self.mode0 {
            Mode::Index
        } else {
            Mode::of_region(self.effective_region())
        }
    }

    fn effective_region(&self) -> u32 {
        let cap = match self.opts.max_mode {
            Mode::Index | Mode::PageProbe => 1,
            Mode::Flattening => 2,
            Mode::Expansion => self.opts.max_region_pages,
        };
        self.region.min(cap).max(1)
    }

    fn set_region(&mut self, region: u32, rows: u64) {
        let before = self.mode();
        let old = self.effective_region();
        self.region = region.clamp(1, self.opts.max_region_pages);
        let after = self.mode();
        if before != after {
            self.report.mode_changes.push(ModeChange {
                at_row: rows,
                from: before,
                to: after,
            });
        }
        if old != self.effective_region() {
            self.report.regions.push((rows, self.effective_region()));
        }
    }

    /// Time spent so far, for the SLA trigger.
    fn spent_ms(&self) -> f64 {
        if self.opts.modeled_clock {
            let now = self
                .spec
                .table
                .heap()
                .pool()
                .device()
                .stats()
                .snapshot()
                .modeled_ns;
            (now - self.modeled_start_ns) as f64 / 1e6
        } else {
            self.started.elapsed().as_secs_f64() * 1e3
        }
    }

    /// Whether mode 0 should end before fetching the next tuple.
    fn trigger_fires(&self, rows: u64) -> bool {
        match self.opts.trigger {
            Trigger::Eager => true,
            Trigger::Optimizer { estimate } => rows >= estimate,
            Trigger::Sla { bound_ms } => {
                let c = self.opts.page_costs;
                let p = self.num_pages as f64;
                // Morphing from here reads at worst every heap page in doubling
                // regions (log2 #P jumps) and the rest of the index's leaves.
                let leaves = self.spec.index().map_or(0, |i| i.btree.num_pages()) as f64;
                let worst_morph = (p + leaves) * c.sequential_ms + (p + 1.0).log2() * c.random_ms;
                self.spent_ms() + c.random_ms + worst_morph > bound_ms
            }
        }
    }

    fn is_free(&self, page: u64) -> bool {
        !self.is_processed(page) && !self.planned.contains_key(&page)
    }

    /// Produces the qualifying tuples of one page; returns whether it had any.
    /// `tid` is the index entry that reached the page's region, none for a
    /// sweep's: only tuples the index led to are counted as accesses for
    /// hot/cold clustering (a sweep reads the table as a full scan does, and
    /// full scans record nothing).
    fn process_page(
        &mut self,
        q: u64,
        page: &[u8],
        tid: Option<Tid>,
        out: &mut TupleBatch,
        check_m0: bool,
    ) -> Result<bool> {
        let view = PageView::new(page);
        let mut had = false;
        for (slot, t) in view.tuples() {
            let t_tid = Tid::new(q as u32, slot);
            if !self.spec.qualifies(t, t_tid) {
                continue;
            }
            if check_m0 || self.cache.is_some() {
                self.spec.entry_of(t, t_tid, &mut self.scratch)?;
                if check_m0 && self.scratch <= self.last_m0 {
                    continue; // produced in mode 0
                }
            }
            had = true;
            if tid.is_some() {
                self.spec.accessed(t_tid);
            }
            match &mut self.cache {
                Some(cache) if Some(t_tid) != tid => cache.insert(&self.scratch, t_tid, t)?,
                _ => out.push(t_tid, t),
            }
        }
        Ok(had)
    }

    /// Starts producing the qualifying tuples of planned region `r` (read
    /// already unless streamed). `tid` is the index entry that reached it first
    /// (ordered output emits that tuple now and caches the others).
    fn start_region(&mut self, r: usize, tid: Option<Tid>) -> Result<()> {
        let region = std::mem::replace(
            &mut self.regions[r],
            Region {
                runs: vec![],
                offset: 0,
                pages: vec![],
                done: true,
                streamed: false,
                swept: false,
            },
        );
        let stream = if region.swept {
            let s = self.sweep_stream.take();
            Some(s.expect("plan_sweep starts the sweep's stream"))
        } else if region.streamed {
            let heap = self.spec.table.heap().clone();
            let stream = heap.stream_runs(
                &region.runs,
                crate::full::RUN_PAGES,
                crate::full::DEPTH,
                crate::full::BATCH_PAGES,
            )?;
            self.report.read_ahead_streams += 1;
            Some(Streaming::new(stream))
        } else {
            None
        };
        self.active = Some(ActiveRegion {
            r,
            tid,
            check_m0: !self.last_m0.is_empty(),
            first_page: tid.map_or(u64::MAX, |t| t.page as u64),
            region,
            results: 0,
            stream,
            run: 0,
            at: 0,
            next: 0,
        });
        Ok(())
    }

    /// Works on the active region until `out` is full (whole pages at a time)
    /// or the region is done; then lets the policy pick the next region size.
    /// Returning with a full batch keeps the consumer busy while the region's
    /// read-ahead goes on, as a full scan does.
    fn continue_region(&mut self, out: &mut TupleBatch, rows_before: u64) -> Result<()> {
        let mut a = self.active.take().expect("a region is active");
        let finished = match self.work_on(&mut a, out) {
            Ok(finished) => finished,
            Err(e) => {
                self.active = Some(a);
                return Err(e);
            }
        };
        if finished {
            self.finish_region(a, out, rows_before)
        } else {
            self.active = Some(a);
            Ok(())
        }
    }

    /// Produces the region's pages until `out` is full; returns whether the
    /// region is done.
    fn work_on(&mut self, a: &mut ActiveRegion, out: &mut TupleBatch) -> Result<bool> {
        let r = a.r;
        let wanted = |me: &Self, q: u64| !me.is_processed(q) && me.planned.get(&q) == Some(&r);
        let (tid, check_m0, first_page) = (a.tid, a.check_m0, a.first_page);
        // A sweep's stream goes on past its region: the region is done once
        // its last page is (its pages are all the free pages up to there).
        let last = if a.region.swept {
            a.region.pages.last().copied()
        } else {
            None
        };
        if let Some(s) = &mut a.stream {
            loop {
                // A batch can fill at any page, the first of a run included:
                // move on only once the current run is finished.
                if !s.on_run {
                    if !s.stream.next_run()? {
                        debug_assert!(last.is_none(), "a sweep's stream holds its regions");
                        return Ok(true);
                    }
                    s.on_run = true;
                }
                let (f, bytes) = s.stream.run();
                let pages = bytes.len() / PAGE_SIZE;
                while s.next < pages {
                    if out.is_full() {
                        return Ok(false);
                    }
                    let q = f + s.next as u64;
                    let page = &bytes[s.next * PAGE_SIZE..(s.next + 1) * PAGE_SIZE];
                    s.next += 1;
                    if wanted(self, q) {
                        let had = self.process_page(q, page, tid, out, check_m0)?;
                        self.count(&mut a.results, first_page, q, had);
                    }
                    if last == Some(q) {
                        return Ok(true);
                    }
                }
                s.next = 0;
                s.on_run = false;
            }
        }
        let buf = self.buf.take().expect("read before processing");
        let mut result = Ok(true);
        'runs: while a.run < a.region.runs.len() {
            let (first, n) = a.region.runs[a.run];
            while a.next < n {
                if out.is_full() {
                    result = Ok(false);
                    break 'runs;
                }
                let q = first + a.next as u64;
                let off = (a.region.offset + a.at + a.next) * PAGE_SIZE;
                a.next += 1;
                if !wanted(self, q) {
                    continue; // processed meanwhile (cannot happen: planned pages are this region's)
                }
                match self.process_page(q, &buf[off..off + PAGE_SIZE], tid, out, check_m0) {
                    Ok(had) => self.count(&mut a.results, first_page, q, had),
                    Err(e) => {
                        result = Err(e);
                        break 'runs;
                    }
                }
            }
            a.at += n;
            a.run += 1;
            a.next = 0;
        }
        self.buf = Some(buf);
        result
    }

    /// Counts a processed page of a region: whether it had results, and
    /// whether it is one beyond the page the index pointed at.
    fn count(&mut self, results: &mut u64, first_page: u64, q: u64, had: bool) {
        *results += had as u64;
        if q != first_page {
            self.batch_extra += 1;
            self.batch_extra_results += had as u64;
        }
    }

    /// Bookkeeping once a region is produced: its pages become processed, and
    /// when its batch of regions is done the policy sizes the next region.
    fn finish_region(&mut self, a: ActiveRegion, out: &TupleBatch, rows_before: u64) -> Result<()> {
        let ActiveRegion {
            region,
            results,
            stream,
            ..
        } = a;
        if region.swept {
            self.sweep_stream = stream;
        }
        let region_results = results;
        if let Some(&last) = region.pages.last() {
            self.last_region_end = last + 1;
        }
        let n = region.pages.len() as u64;
        for &q in &region.pages {
            self.mark(q);
            self.planned.remove(&q);
        }
        self.report.heap_pages += n;
        self.pages_seen += n;
        self.pages_with_results += region_results;
        self.batch_pages += n;
        self.batch_results += region_results;
        if !self.regions.iter().all(|r| r.done) {
            return Ok(());
        }
        self.regions.clear();
        // The batch of regions read together is done: the policy picks the next
        // region size from its pages (with io_depth 1, after every region, as in
        // the paper). Deciding per region within a batch would count every
        // one-page region — always a result page, the index pointed at it — as a
        // selectivity increase.
        let (n, region_results) = (
            std::mem::take(&mut self.batch_pages),
            std::mem::take(&mut self.batch_results),
        );
        let (extra, extra_results) = (
            std::mem::take(&mut self.batch_extra),
            std::mem::take(&mut self.batch_extra_results),
        );
        let break_even = self.opts.page_costs.break_even_density(self.opts.io_depth);
        let (extra_density, probe) = self.evidence(extra, extra_results, break_even);
        let local = region_results as f64 / n.max(1) as f64;
        let global = self.pages_with_results as f64 / self.pages_seen.max(1) as f64;
        let denser = local >= self.opts.grow * global;
        let sparser = local < self.opts.shrink_below * global;
        let next = match self.policy {
            Policy::Greedy => self.region.saturating_mul(2),
            Policy::SelectivityIncrease if denser => self.region.saturating_mul(2),
            Policy::SelectivityIncrease => self.region,
            Policy::Elastic if denser => self.region.saturating_mul(2),
            Policy::Elastic if sparser => (self.region / self.opts.shrink).max(1),
            Policy::Elastic => self.region,
            // (`new` maps the page-ordered policy to the cost-aware regions.)
            Policy::CostAware | Policy::PageOrder if !probe => self.region,
            Policy::CostAware | Policy::PageOrder if extra_density >= break_even => {
                self.region.saturating_mul(2)
            }
            Policy::CostAware | Policy::PageOrder if extra_density < break_even / 2.0 => {
                (self.region / 2).max(1)
            }
            Policy::CostAware | Policy::PageOrder => self.region,
        };
        if self.policy == Policy::CostAware && self.cache.is_none() {
            let sweep = if extra_density < break_even / 2.0 {
                false
            } else {
                // A batch of regions that read a cap's worth of pages and paid
                // off: reading the same amount in page order is no dearer.
                self.sweep
                    || (extra_density >= break_even && n >= self.opts.max_region_pages as u64)
            };
            if sweep != self.sweep {
                let rows = rows_before + out.len() as u64;
                self.report.notes.push(if sweep {
                    format!(
                        "from row {rows}: regions in page order from page {} (the largest regions kept paying off)",
                        self.last_region_end
                    )
                } else {
                    format!("from row {rows}: regions at index entries again")
                });
                self.sweep_at = self.last_region_end;
                self.sweep = sweep;
                // Pages it read ahead and did not get to are left for the
                // regions at index entries.
                self.sweep_stream = None;
            }
        }
        self.set_region(next, rows_before + out.len() as u64);
        Ok(())
    }

    /// The density of the pages this batch read beyond the index's pages, and
    /// whether the cost-aware policy may act on it. Without such pages
    /// (regions of one page) there is no evidence: it probes (density 1, so
    /// the region grows to two) when a probe is due. Probes that found too few
    /// results, judged over at least [`MIN_PROBE_PAGES`] pages together (a
    /// probe reads one page with one region per batch, as on a disk), double
    /// the batches to wait before the next.
    fn evidence(&mut self, extra: u64, extra_results: u64, break_even: f64) -> (f64, bool) {
        if extra == 0 {
            self.since_probe += 1;
            return (1.0, self.since_probe >= self.probe_wait);
        }
        let d = extra_results as f64 / extra as f64;
        if self.region > 2 {
            return (d, true);
        }
        self.probe_pages += extra;
        self.probe_hits += extra_results;
        if d >= break_even {
            self.probe_wait = 1;
        } else if self.probe_pages >= MIN_PROBE_PAGES {
            let density = self.probe_hits as f64 / self.probe_pages as f64;
            self.probe_wait = if density >= break_even {
                1
            } else {
                (self.probe_wait * 2).min(MAX_PROBE_WAIT)
            };
        } else {
            // Not enough evidence yet: probe again next batch.
            self.since_probe = 0;
            return (d, true);
        }
        (self.probe_pages, self.probe_hits) = (0, 0);
        self.since_probe = 0;
        (d, true)
    }
}

/// The longest the cost-aware policy waits between probes (batches).
const MAX_PROBE_WAIT: u32 = 64;

/// Pages beyond the index's that probes read before their density is judged.
const MIN_PROBE_PAGES: u64 = 16;

/// Index entries read ahead per planned batch of regions.
const LOOKAHEAD: usize = 512;

impl AccessPath for SmoothScan {
    fn next_batch(&mut self, out: &mut TupleBatch) -> Result<bool> {
        out.clear();
        let table = self.spec.table.clone();
        let index = &table.indexes()[self.spec.index.expect("checked by new")].btree;
        let rows_before = self.report.rows;
        while !out.is_full() && !self.done {
            if self.active.is_some() {
                self.continue_region(out, rows_before)?;
                continue;
            }
            // Unordered output is complete once every heap page is processed:
            // the rest of the index can only point at tuples already produced
            // (the morph into a full scan is then finished, §3.1).
            if self.cache.is_none() && !self.mode0 && self.pages_seen >= self.num_pages {
                self.done = true;
                self.report.notes.push(format!(
                    "every heap page processed after {} index entries; the rest of the index was not read",
                    self.report.index_entries
                ));
                break;
            }
            if self.sweep {
                if let Some(r) = self.plan_sweep()? {
                    self.report.swept_pages += self.regions[r].pages.len() as u64;
                    self.start_region(r, None)?;
                    continue;
                }
                self.sweep = false;
                self.sweep_stream = None;
            }
            // Keep the window filled.
            // Entry bytes are only needed to order output or to skip what mode 0
            // produced; the eager unordered scan keeps just the tuple ids.
            let keep_entries = self.cache.is_some() || self.mode0 || !self.last_m0.is_empty();
            while !self.cursor_done && self.window.len() < LOOKAHEAD {
                match self.cursor.next_entry(index) {
                    Some(e) => {
                        let (e, tid) = e?;
                        self.window
                            .push_back((if keep_entries { e.to_vec() } else { Vec::new() }, tid));
                    }
                    None => self.cursor_done = true,
                }
            }
            let Some((entry, tid)) = self.window.pop_front() else {
                self.done = true;
                break;
            };
            self.report.index_entries += 1;
            let rows = rows_before + out.len() as u64;
            if self.mode0 {
                if self.trigger_fires(rows) {
                    self.mode0 = false;
                    if matches!(self.opts.trigger, Trigger::Sla { .. }) {
                        self.policy = Policy::Greedy;
                    }
                    self.report.mode_changes.push(ModeChange {
                        at_row: rows,
                        from: Mode::Index,
                        to: self.mode(),
                    });
                    self.report.regions.push((rows, self.effective_region()));
                } else {
                    self.report.heap_pages += 1;
                    let produced = self.spec.fetch(tid, out)?;
                    if produced {
                        self.last_m0 = entry;
                    }
                    continue;
                }
            }
            let page = tid.page as u64;
            if !self.is_processed(page) {
                if !self.planned.contains_key(&page) {
                    // Plan from this entry on (it leads the window again).
                    self.window.push_front((entry, tid));
                    self.plan_and_read()?;
                    self.window.pop_front();
                    debug_assert!(self.planned.contains_key(&page));
                }
                self.start_region(self.planned[&page], Some(tid))?;
            } else if let Some(cache) = &mut self.cache
                && let Some(t) = cache.take(&entry, tid)?
            {
                out.push(tid, t);
            }
        }
        self.report.rows += out.len() as u64;
        if let Some(c) = &self.cache {
            self.report.result_cache = Some(c.report());
        }
        Ok(!out.is_empty())
    }

    fn report(&self) -> ScanReport {
        self.report.clone()
    }
}
