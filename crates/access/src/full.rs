//! Full scan: every heap page in large sequential runs (read-ahead on another
//! thread), the predicate evaluated on every tuple.

use strata_storage::heap::PageStream;
use strata_storage::page::{PAGE_SIZE, PageView};
use strata_storage::row::Tid;

use crate::batch::TupleBatch;
use crate::error::Result;
use crate::report::ScanReport;
use crate::scan::{AccessPath, ScanSpec, address_pages};

/// Pages per sequential request (1 MiB) and requests in flight.
pub const RUN_PAGES: usize = 128;
pub const DEPTH: usize = 2;
/// Pages in flight at once: a scan that reads runs of pages with holes
/// between them (Smooth Scan) puts up to this many in flight, in however many
/// requests its runs make.
pub const BATCH_PAGES: usize = RUN_PAGES * DEPTH;

pub struct FullScan {
    spec: ScanSpec,
    pages: StreamedPages,
    report: ScanReport,
}

impl FullScan {
    pub fn new(spec: ScanSpec) -> Result<FullScan> {
        let heap = spec.table.heap().clone();
        let (from, to) = spec.heap_pages();
        let stream = heap.stream(from, to, RUN_PAGES, DEPTH)?;
        let mut pages = StreamedPages::new(stream);
        if address_pages(&spec.table, &spec.predicate).is_some_and(|r| r != (0, heap.num_pages())) {
            // Pages a semantic id's bound picked: lookups by id, counted for
            // hot/cold clustering like an index's.
            pages = pages.counting_accesses();
        }
        Ok(FullScan {
            spec,
            pages,
            report: ScanReport {
                path: "full".into(),
                ..Default::default()
            },
        })
    }
}

impl AccessPath for FullScan {
    fn next_batch(&mut self, out: &mut TupleBatch) -> Result<bool> {
        out.clear();
        let heap_pages = &mut self.report.heap_pages;
        self.pages.produce(&self.spec, out, |_| *heap_pages += 1)?;
        self.report.rows += out.len() as u64;
        Ok(!out.is_empty())
    }

    fn report(&self) -> ScanReport {
        self.report.clone()
    }
}

/// The qualifying tuples of every page a [`PageStream`] delivers, produced
/// batch by batch: where production stands between batches.
pub struct StreamedPages {
    stream: PageStream,
    /// Position in the current run: page index and next slot; `None` before
    /// the run's first page.
    pos: Option<(usize, u16)>,
    done: bool,
    /// Whether the tuples produced are index accesses (Smooth Scan's pages
    /// from the index), counted for hot/cold clustering; a full scan's are not.
    accesses: bool,
}

impl StreamedPages {
    pub fn new(stream: PageStream) -> StreamedPages {
        StreamedPages {
            stream,
            pos: None,
            done: false,
            accesses: false,
        }
    }

    /// Counts every tuple produced as an access (`ScanSpec::accessed`).
    pub fn counting_accesses(mut self) -> StreamedPages {
        self.accesses = true;
        self
    }

    /// Fills `out` (whole pages at a time, a page split across batches when
    /// it holds more than the batch takes) with the qualifying tuples of the
    /// next pages; `on_page` sees each page number as its first tuple is
    /// looked at. Returns whether pages are left.
    pub fn produce(
        &mut self,
        spec: &ScanSpec,
        out: &mut TupleBatch,
        mut on_page: impl FnMut(u64),
    ) -> Result<bool> {
        while !self.done && !out.is_full() {
            let (page_idx, slot) = match self.pos {
                Some(p) => p,
                None => {
                    if !self.stream.next_run()? {
                        self.done = true;
                        break;
                    }
                    (0, 0)
                }
            };
            let (first, bytes) = self.stream.run();
            let pages = bytes.len() / PAGE_SIZE;
            if page_idx >= pages {
                self.pos = None;
                continue;
            }
            let view = PageView::new(&bytes[page_idx * PAGE_SIZE..(page_idx + 1) * PAGE_SIZE]);
            let page = first + page_idx as u64;
            if slot == 0 {
                on_page(page);
            }
            let n = view.n_slots();
            let mut s = slot;
            while s < n && !out.is_full() {
                let tid = Tid::new(page as u32, s);
                if let Some(t) = view.get(s)
                    && spec.qualifies(t, tid)
                {
                    if self.accesses {
                        spec.accessed(tid);
                    }
                    out.push(tid, t);
                }
                s += 1;
            }
            self.pos = Some(if s >= n {
                (page_idx + 1, 0)
            } else {
                (page_idx, s)
            });
        }
        Ok(!self.done)
    }
}
