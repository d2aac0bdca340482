//! Running an opened operator to its end and measuring what it did — the
//! counters an EXPLAIN ANALYZE shows. Every way of running a scan (by path name
//! in `run`, an ordered plan in `ordered_plan`) goes through [`measure`].

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use strata_storage::device::{Device, IoCounters};

use crate::batch::TupleBatch;
use crate::error::Result;
use crate::report::ScanReport;
use crate::scan::AccessPath;

/// What one run of a scan did.
#[derive(Clone, Debug, Serialize)]
pub struct ScanOutcome {
    pub report: ScanReport,
    pub io: IoCounters,
    pub wall_ms: f64,
    pub rows: u64,
}

/// Opens an operator with `open`, runs it to the end handing every batch to
/// `sink`, and measures it on `device` (shared by [`crate::run::run_scan`] and
/// [`crate::ordered_plan::run_ordered`]).
pub fn measure(
    device: &Arc<dyn Device>,
    open: impl FnOnce() -> Result<Box<dyn AccessPath>>,
    mut sink: impl FnMut(&TupleBatch),
) -> Result<ScanOutcome> {
    device.stats().forget_position();
    let before = device.stats().snapshot();
    let start = Instant::now();
    let mut path = open()?;
    let mut batch = TupleBatch::new();
    let mut rows = 0u64;
    while path.next_batch(&mut batch)? {
        rows += batch.len() as u64;
        sink(&batch);
    }
    let report = path.report();
    drop(path);
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    Ok(ScanOutcome {
        report,
        io: device.stats().snapshot() - before,
        wall_ms,
        rows,
    })
}
