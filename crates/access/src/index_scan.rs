//! Index scan: the B+-tree range, then one heap fetch per tuple id through the
//! buffer pool — the classic non-clustered index scan, in (key, tid) order.

use strata_storage::btree::RangeCursor;

use crate::batch::TupleBatch;
use crate::error::Result;
use crate::report::ScanReport;
use crate::scan::{AccessPath, ScanSpec};

pub struct IndexScan {
    spec: ScanSpec,
    cursor: RangeCursor,
    done: bool,
    report: ScanReport,
}

impl IndexScan {
    pub fn new(spec: ScanSpec) -> Result<IndexScan> {
        let cursor = spec.cursor()?;
        Ok(IndexScan {
            spec,
            cursor,
            done: false,
            report: ScanReport {
                path: "index".into(),
                ..Default::default()
            },
        })
    }
}

impl AccessPath for IndexScan {
    fn next_batch(&mut self, out: &mut TupleBatch) -> Result<bool> {
        out.clear();
        let index = self.spec.index()?;
        while !self.done && !out.is_full() {
            let Some(entry) = self.cursor.next_entry(&index.btree) else {
                self.done = true;
                break;
            };
            let (_, tid) = entry?;
            self.report.index_entries += 1;
            self.report.heap_pages += 1;
            self.spec.fetch(tid, out)?;
        }
        self.report.rows += out.len() as u64;
        Ok(!out.is_empty())
    }

    fn report(&self) -> ScanReport {
        self.report.clone()
    }
}
