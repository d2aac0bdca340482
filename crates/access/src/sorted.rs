//! A blocking sort of an access path's output into (index key, tuple id) order,
//! for paths that do not produce index order themselves (full, sort and switch
//! scans) when the query needs it. It is a visible, separate operator: the cost
//! Smooth Scan's ordered variant avoids.

use crate::batch::TupleBatch;
use crate::error::Result;
use crate::report::ScanReport;
use crate::scan::{AccessPath, ScanSpec};
use strata_storage::types::Tid;

pub struct Sorted {
    spec: ScanSpec,
    input: Option<Box<dyn AccessPath>>,
    /// (entry = key ++ tid, tuple) in order once the input is drained.
    rows: Vec<(Vec<u8>, Vec<u8>)>,
    pos: usize,
    report: ScanReport,
}

impl Sorted {
    pub fn new(spec: ScanSpec, input: Box<dyn AccessPath>) -> Sorted {
        Sorted {
            spec,
            input: Some(input),
            rows: Vec::new(),
            pos: 0,
            report: ScanReport::default(),
        }
    }
}

impl AccessPath for Sorted {
    fn next_batch(&mut self, out: &mut TupleBatch) -> Result<bool> {
        if let Some(mut input) = self.input.take() {
            let mut b = TupleBatch::new();
            while input.next_batch(&mut b)? {
                for (tid, t) in b.iter() {
                    let mut e = Vec::new();
                    self.spec.entry_of(t, tid, &mut e)?;
                    self.rows.push((e, t.to_vec()));
                }
            }
            self.rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            self.report = input.report();
            self.report.path = format!("{} + sort", self.report.path);
        }
        out.clear();
        while self.pos < self.rows.len() && !out.is_full() {
            let (e, t) = &self.rows[self.pos];
            out.push(Tid::decode(&e[e.len() - Tid::ENCODED_LEN..]), t);
            self.pos += 1;
        }
        Ok(!out.is_empty())
    }

    fn report(&self) -> ScanReport {
        self.report.clone()
    }
}
