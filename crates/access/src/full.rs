//! Full scan: every heap page in large sequential runs (read-ahead on another
//! thread), the predicate evaluated on every tuple.

use strata_storage::heap::PageStream;
use strata_storage::page::{PAGE_SIZE, PageView};
use strata_storage::types::Tid;

use crate::batch::TupleBatch;
use crate::error::Result;
use crate::report::ScanReport;
use crate::scan::{AccessPath, ScanSpec};

/// Pages per sequential request (1 MiB) and requests in flight.
pub const RUN_PAGES: usize = 128;
pub const DEPTH: usize = 2;

pub struct FullScan {
    spec: ScanSpec,
    stream: PageStream,
    /// Position in the current run: page index and next slot; `None` before the
    /// first run.
    pos: Option<(usize, u16)>,
    done: bool,
    report: ScanReport,
}

impl FullScan {
    pub fn new(spec: ScanSpec) -> Result<FullScan> {
        let heap = spec.table.heap().clone();
        let stream = heap.stream(0, heap.num_pages(), RUN_PAGES, DEPTH)?;
        Ok(FullScan {
            spec,
            stream,
            pos: None,
            done: false,
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
            if slot == 0 {
                self.report.heap_pages += 1;
            }
            let n = view.n_slots();
            let mut s = slot;
            while s < n && !out.is_full() {
                if let Some(t) = view.get(s)
                    && self.spec.qualifies(t)
                {
                    out.push(Tid::new((first + page_idx as u64) as u32, s), t);
                }
                s += 1;
            }
            self.pos = Some(if s >= n {
                (page_idx + 1, 0)
            } else {
                (page_idx, s)
            });
        }
        self.report.rows += out.len() as u64;
        Ok(!out.is_empty())
    }

    fn report(&self) -> ScanReport {
        self.report.clone()
    }
}
