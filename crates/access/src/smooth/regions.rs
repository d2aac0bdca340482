//! Planning and reading Smooth Scan's regions: for the window of index
//! entries ahead, the unprocessed pages each region covers (its mode's
//! size, capped by the buffer), read with one batch of requests, or by a
//! read-ahead stream when large or when the scan sweeps the rest of the
//! table.

use strata_storage::device::{AlignedBuf, ReadRequest};
use strata_storage::page::PAGE_SIZE;

use super::{Region, STREAM_PAGES, SmoothScan, Streaming};
use crate::error::Result;

impl SmoothScan {
    /// Plans regions for the window's unprocessed pages, in entry order, until
    /// `io_depth` regions or the buffer (one maximal region) are used up, and
    /// reads them all with one batch of requests.
    pub(super) fn plan_and_read(&mut self) -> Result<()> {
        // Entries are processed in order and every region belongs to an earlier
        // entry of the window, so all regions read before are processed by now
        // and the buffer is free.
        debug_assert!(self.regions.iter().all(|r| r.done));
        self.regions.clear();
        let budget = self.opts.max_region_pages.max(1) as usize;
        let want = self.effective_region() as usize;
        let mut used = 0usize;
        let mut regions: Vec<Region> = Vec::new();
        for i in 0..self.window.len() {
            if regions.len() >= self.opts.io_depth.max(1) || used == budget {
                break;
            }
            let p = self.window[i].1.page as u64;
            if !self.is_free(p) {
                continue;
            }
            let region = self.plan_region(p, want.min(budget - used), used, regions.len());
            used += region.span();
            regions.push(region);
        }
        self.read_regions(regions, used)
    }

    /// Plans and reads the next region of a sweep: the next unprocessed pages
    /// in page order from where the sweep stands (wrapping around once).
    /// Returns the region's index, or `None` when no page is left.
    pub(super) fn plan_sweep(&mut self) -> Result<Option<usize>> {
        debug_assert!(self.regions.iter().all(|r| r.done));
        self.regions.clear();
        let from = (self.sweep_at..self.num_pages)
            .chain(0..self.sweep_at)
            .find(|&q| self.is_free(q));
        let Some(p) = from else {
            return Ok(None);
        };
        if self.sweep_stream.is_none() {
            let runs = self.sweep_runs();
            self.count_reads(&runs);
            let heap = self.spec.table.heap().clone();
            let stream = heap.stream_runs(
                &runs,
                crate::full::RUN_PAGES,
                crate::full::DEPTH,
                crate::full::BATCH_PAGES,
            )?;
            self.sweep_stream = Some(Streaming::new(stream));
            self.report.read_ahead_streams += 1;
        }
        let want = self.effective_region() as usize;
        let mut region = self.plan_region(p, want, 0, 0);
        region.streamed = true;
        region.swept = true;
        self.sweep_at = region.pages.last().map_or(p, |&q| q + 1);
        self.regions.push(region);
        Ok(Some(0))
    }

    /// The pages a sweep has left, in the order it takes them (from `sweep_at`
    /// to the end, then from the start), as runs of consecutive pages (a
    /// processed page is never read again, so it ends a run).
    fn sweep_runs(&self) -> Vec<(u64, usize)> {
        let mut runs: Vec<(u64, usize)> = Vec::new();
        for (from, to) in [(self.sweep_at, self.num_pages), (0, self.sweep_at)] {
            let segment = runs.len();
            for q in (from..to).filter(|&q| self.is_free(q)) {
                if runs.len() > segment
                    && let Some((first, n)) = runs.last_mut()
                    && q == *first + *n as u64
                {
                    *n += 1;
                    continue;
                }
                runs.push((q, 1));
            }
        }
        runs
    }

    /// A region of the next `want` unprocessed pages from `p` (stopping at a
    /// page planned for another region), as runs of consecutive pages (the
    /// processed pages between them are not read again), placed at `offset`
    /// in the buffer; its pages are marked planned for region
    /// `self.regions.len() + batch`.
    fn plan_region(&mut self, p: u64, want: usize, offset: usize, batch: usize) -> Region {
        let mut pages = Vec::new();
        let mut q = p;
        while pages.len() < want && q < self.num_pages {
            if self.is_free(q) {
                pages.push(q);
            } else if self.planned.contains_key(&q) {
                break;
            }
            q += 1;
        }
        let mut runs: Vec<(u64, usize)> = Vec::new();
        for &pg in &pages {
            match runs.last_mut() {
                Some((first, n)) if pg == *first + *n as u64 => *n += 1,
                _ => runs.push((pg, 1)),
            }
        }
        let span = pages.len();
        let kept = pages;
        let idx = self.regions.len() + batch;
        for &pg in &kept {
            self.planned.insert(pg, idx);
        }
        Region {
            runs,
            offset,
            pages: kept,
            done: false,
            streamed: span >= STREAM_PAGES,
            swept: false,
        }
    }

    /// Reads the planned regions that are not streamed into the buffer (`used`
    /// pages of it) with one batch of requests, and adds them to the regions.
    fn read_regions(&mut self, regions: Vec<Region>, used: usize) -> Result<()> {
        if regions.is_empty() {
            return Ok(());
        }
        for r in &regions {
            self.count_reads(&r.runs);
        }
        let budget = self.opts.max_region_pages.max(1) as usize;
        let buf = self.buf.get_or_insert_with(|| AlignedBuf::new(budget));
        let heap = self.spec.table.heap();
        let file = heap.file_id();
        {
            let mut rest: &mut [u8] = &mut buf[..used * PAGE_SIZE];
            let mut reqs = Vec::new();
            for r in &regions {
                for &(first, n) in &r.runs {
                    let (head, tail) = rest.split_at_mut(n * PAGE_SIZE);
                    if !r.streamed {
                        reqs.push(ReadRequest {
                            file,
                            first_page: first,
                            buf: head,
                        });
                    }
                    rest = tail;
                }
            }
            if !reqs.is_empty() {
                heap.pool().device().read_many(&mut reqs)?;
            }
        }
        let mut off = 0;
        for r in &regions {
            for &(first, n) in &r.runs {
                if !r.streamed {
                    heap.finish_run(first, &mut buf[off * PAGE_SIZE..(off + n) * PAGE_SIZE])?;
                }
                off += n;
            }
        }
        self.regions.extend(regions);
        Ok(())
    }

    /// Notes the pages of `runs` as read, counting those read before.
    fn count_reads(&mut self, runs: &[(u64, usize)]) {
        for &(first, n) in runs {
            for q in first..first + n as u64 {
                self.report.reread_pages += !self.read.insert(q) as u64;
            }
        }
    }
}
