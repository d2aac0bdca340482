//! Index scan: the B+-tree range, then one heap fetch per tuple id through the
//! buffer pool — the classic non-clustered index scan, in (key, tid) order.
//!
//! A lookup of one key of an index with a hot partition (No Bits Left Behind
//! §3.1, `strata_storage::maintenance::cluster`) tries the partition's small index first: when
//! it holds the key it holds every entry of it, and the full index is not read.

use strata_storage::btree::RangeCursor;
use strata_storage::row::Tid;

use crate::batch::TupleBatch;
use crate::error::Result;
use crate::report::ScanReport;
use crate::scan::{AccessPath, ScanSpec};

pub struct IndexScan {
    spec: ScanSpec,
    cursor: RangeCursor,
    /// The key's entries from the hot partition, when it holds them (then
    /// the cursor is not read), in (key, tid) order.
    hot: Option<std::vec::IntoIter<Tid>>,
    done: bool,
    report: ScanReport,
}

impl IndexScan {
    pub fn new(spec: ScanSpec) -> Result<IndexScan> {
        let cursor = spec.cursor()?;
        let mut report = ScanReport {
            path: "index".into(),
            ..Default::default()
        };
        let mut hot = None;
        if let Some(tids) = spec.hot_tids()? {
            report.notes.push(format!(
                "the key's {} entries came from the hot partition of {}",
                tids.len(),
                spec.index()?.def.name
            ));
            hot = Some(tids.into_iter());
        }
        Ok(IndexScan {
            spec,
            cursor,
            hot,
            done: false,
            report,
        })
    }
}

impl AccessPath for IndexScan {
    fn next_batch(&mut self, out: &mut TupleBatch) -> Result<bool> {
        out.clear();
        let index = self.spec.index()?;
        while !self.done && !out.is_full() {
            let tid = if let Some(hot) = &mut self.hot {
                let Some(tid) = hot.next() else {
                    self.done = true;
                    break;
                };
                tid
            } else {
                let Some(entry) = self.cursor.next_entry(&index.btree) else {
                    self.done = true;
                    break;
                };
                entry?.1
            };
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
