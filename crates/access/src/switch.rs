//! Switch Scan (§7.7 of the Smooth Scan paper): an index scan until the rows
//! produced exceed the optimizer's estimate, then a full scan that skips the
//! tuples the index phase already produced. Entries are strictly ordered by
//! (key, tuple id), so "already produced" is simply "its entry is at most the last
//! entry the index phase produced" — no tuple-id set is needed. It models
//! run-time re-optimisation with one switch point, and so its cliff.

use strata_storage::btree::RangeCursor;

use crate::batch::TupleBatch;
use crate::error::Result;
use crate::full::FullScan;
use crate::report::{Mode, ModeChange, ScanReport};
use crate::scan::{AccessPath, ScanSpec};

pub struct SwitchScan {
    spec: ScanSpec,
    estimate: u64,
    cursor: RangeCursor,
    /// The last entry the index phase produced.
    last: Vec<u8>,
    full: Option<FullScan>,
    index_done: bool,
    report: ScanReport,
}

impl SwitchScan {
    pub fn new(spec: ScanSpec, estimate: u64) -> Result<SwitchScan> {
        let cursor = spec.cursor()?;
        Ok(SwitchScan {
            spec,
            estimate,
            cursor,
            last: Vec::new(),
            full: None,
            index_done: false,
            report: ScanReport {
                path: format!("switch (estimate {estimate})"),
                ..Default::default()
            },
        })
    }
}

impl AccessPath for SwitchScan {
    fn next_batch(&mut self, out: &mut TupleBatch) -> Result<bool> {
        out.clear();
        if !self.index_done {
            let index = self.spec.index()?;
            while !out.is_full() {
                if self.report.rows + out.len() as u64 >= self.estimate {
                    // Over the estimate: switch to a full scan.
                    self.index_done = true;
                    self.full = Some(FullScan::new(self.spec.clone())?);
                    self.report.mode_changes.push(ModeChange {
                        at_row: self.report.rows + out.len() as u64,
                        from: Mode::Index,
                        to: Mode::Expansion,
                    });
                    self.report.notes.push("switched to a full scan".into());
                    break;
                }
                let Some(entry) = self.cursor.next_entry(&index.btree) else {
                    self.index_done = true;
                    break;
                };
                let (e, tid) = entry?;
                self.report.index_entries += 1;
                self.report.heap_pages += 1;
                let produced = self.spec.fetch(tid, out)?;
                if produced {
                    self.last.clear();
                    self.last.extend_from_slice(e);
                }
            }
            if !out.is_empty() {
                self.report.rows += out.len() as u64;
                return Ok(true);
            }
        }
        let Some(full) = self.full.as_mut() else {
            return Ok(false);
        };
        let mut b = TupleBatch::new();
        let mut entry = Vec::new();
        while out.is_empty() && full.next_batch(&mut b)? {
            for (tid, t) in b.iter() {
                self.spec.entry_of(t, tid, &mut entry)?;
                if self.last.is_empty() || entry > self.last {
                    out.push(tid, t);
                }
            }
        }
        self.report.heap_pages = self.report.index_entries + full.report().heap_pages;
        self.report.rows += out.len() as u64;
        Ok(!out.is_empty())
    }

    fn report(&self) -> ScanReport {
        self.report.clone()
    }
}
