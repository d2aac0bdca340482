//! Sort scan (PostgreSQL's bitmap heap scan; the flash paper's SIDX): all tuple
//! ids of the index range first, sorted by page, then each page fetched once in
//! page order — adjacent pages coalesced into one request, several requests in
//! flight at once (like `effective_io_concurrency`). It is the strongest
//! classical baseline for selective and medium queries; the price is the
//! blocking RID collection and, when the query needs index order, a final sort.

use strata_storage::btree::RangeCursor;
use strata_storage::device::AlignedBuf;
use strata_storage::page::{PAGE_SIZE, PageView};
use strata_storage::row::Tid;

use crate::batch::TupleBatch;
use crate::error::Result;
use crate::report::ScanReport;
use crate::scan::{AccessPath, ScanSpec};

/// Requests in flight and the longest coalesced request (pages).
pub const DEPTH: usize = 16;
pub const MAX_RUN_PAGES: u64 = 32;

/// Sees each index entry of the range as it is read.
type EntryObserver = Box<dyn FnMut(&[u8]) + Send>;

pub struct SortScan {
    spec: ScanSpec,
    cursor: Option<RangeCursor>,
    tids: Vec<Tid>,
    /// Next tid to produce.
    pos: usize,
    /// Fetched runs: (first page, pages) and their buffers; tids before
    /// `window_end` lie in them.
    window: Vec<(u64, AlignedBuf)>,
    window_end: usize,
    run_ptr: usize,
    depth: usize,
    /// Sees every index entry of the range while the tuple ids are collected
    /// (partitioned sort computes its boundaries from them).
    observer: Option<EntryObserver>,
    report: ScanReport,
}

impl SortScan {
    pub fn new(spec: ScanSpec) -> Result<SortScan> {
        Self::with_depth(spec, DEPTH)
    }

    /// A sort scan with `depth` requests in flight.
    pub fn with_depth(spec: ScanSpec, depth: usize) -> Result<SortScan> {
        let cursor = Some(spec.cursor()?);
        Ok(SortScan {
            spec,
            cursor,
            tids: Vec::new(),
            pos: 0,
            window: Vec::new(),
            window_end: 0,
            run_ptr: 0,
            depth: depth.max(1),
            observer: None,
            report: ScanReport {
                path: "sort".into(),
                ..Default::default()
            },
        })
    }

    /// A sort scan of the tuples `tids` names, collected by the caller (an
    /// index nested-loop join's probes of one batch of outer keys): each page
    /// read once, in page order, several requests in flight; the tuples that
    /// pass `spec`'s predicate are produced.
    pub fn from_tids(spec: ScanSpec, mut tids: Vec<Tid>) -> SortScan {
        tids.sort_unstable();
        tids.dedup();
        SortScan {
            spec,
            cursor: None,
            report: ScanReport {
                path: "sort".into(),
                index_entries: tids.len() as u64,
                ..Default::default()
            },
            tids,
            pos: 0,
            window: Vec::new(),
            window_end: 0,
            run_ptr: 0,
            depth: DEPTH,
            observer: None,
        }
    }

    /// Hands every index entry (key ++ tuple id) of the range, in order, to
    /// `f` while the tuple ids are collected, so that a consumer needing the
    /// entries (partitioned sort) does not read the index a second time.
    pub fn observe_entries(mut self, f: impl FnMut(&[u8]) + Send + 'static) -> SortScan {
        self.observer = Some(Box::new(f));
        self
    }

    /// The blocking step: every tuple id of the range, sorted by (page, slot).
    fn collect(&mut self) -> Result<()> {
        let Some(mut cursor) = self.cursor.take() else {
            return Ok(());
        };
        let index = self.spec.index()?;
        while let Some(e) = cursor.next_entry(&index.btree) {
            let (entry, tid) = e?;
            if let Some(f) = &mut self.observer {
                f(entry);
            }
            self.tids.push(tid);
        }
        self.report.index_entries = self.tids.len() as u64;
        self.tids.sort_unstable();
        Ok(())
    }

    /// Reads the next window: up to `depth` runs of adjacent pages.
    fn fetch_window(&mut self) -> Result<()> {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let mut i = self.pos;
        while i < self.tids.len() {
            let p = self.tids[i].page as u64;
            let full = runs.len() == self.depth;
            match runs.last_mut() {
                Some((first, n)) if p < *first + *n => {}
                Some((first, n)) if p == *first + *n && *n < MAX_RUN_PAGES => *n += 1,
                _ if full => break,
                _ => runs.push((p, 1)),
            }
            i += 1;
        }
        self.window_end = i;
        self.window = runs
            .iter()
            .map(|&(first, n)| (first, AlignedBuf::new(n as usize)))
            .collect();
        let mut reqs: Vec<(u64, &mut AlignedBuf)> =
            self.window.iter_mut().map(|(f, b)| (*f, b)).collect();
        let heap = self.spec.table.heap();
        heap.read_runs(&mut reqs)?;
        self.report.heap_pages += runs.iter().map(|r| r.1).sum::<u64>();
        self.run_ptr = 0;
        Ok(())
    }
}

impl AccessPath for SortScan {
    fn next_batch(&mut self, out: &mut TupleBatch) -> Result<bool> {
        out.clear();
        self.collect()?;
        while self.pos < self.tids.len() && !out.is_full() {
            if self.pos >= self.window_end {
                self.fetch_window()?;
            }
            let tid = self.tids[self.pos];
            let p = tid.page as u64;
            while !(self.window[self.run_ptr].0 <= p
                && p < self.window[self.run_ptr].0 + self.window[self.run_ptr].1.pages() as u64)
            {
                self.run_ptr += 1;
            }
            let (first, buf) = &self.window[self.run_ptr];
            let off = (p - first) as usize * PAGE_SIZE;
            let view = PageView::new(&buf[off..off + PAGE_SIZE]);
            if let Some(t) = view.get(tid.slot)
                && self.spec.qualifies(t, tid)
            {
                self.spec.accessed(tid);
                out.push(tid, t);
            }
            self.pos += 1;
        }
        self.report.rows += out.len() as u64;
        Ok(!out.is_empty())
    }

    fn report(&self) -> ScanReport {
        self.report.clone()
    }
}
