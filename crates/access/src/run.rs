//! Choosing an access path by name and running it to completion with the
//! counters an EXPLAIN ANALYZE shows.

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use strata_storage::device::{Device, IoCounters};

use crate::batch::TupleBatch;
use crate::error::{AccessError, Result};
use crate::full::FullScan;
use crate::index_scan::IndexScan;
use crate::ordered_plan::{SortOptions, sort_on_index};
use crate::report::ScanReport;
use crate::scan::{AccessPath, ScanSpec};
use crate::smooth::{SmoothOptions, SmoothScan};
use crate::sort_scan::SortScan;
use crate::switch::SwitchScan;

/// The access paths by name.
#[derive(Clone, Debug)]
pub enum PathChoice {
    Full,
    Index,
    Sort,
    Switch { estimate: u64 },
    Smooth(SmoothOptions),
}

impl PathChoice {
    pub fn name(&self) -> &'static str {
        match self {
            PathChoice::Full => "full",
            PathChoice::Index => "index",
            PathChoice::Sort => "sort",
            PathChoice::Switch { .. } => "switch",
            PathChoice::Smooth(_) => "smooth",
        }
    }
}

/// Opens an access path. Paths that do not produce index order (full, sort and
/// switch scans) get [`sort_on_index`] when `spec.ordered` — the sort
/// `sort.final_sort` names, within `sort.memory_bytes` like any other operator
/// of the engine: the visible cost Smooth Scan's ordered variant avoids
/// (`sort` is unused otherwise).
pub fn open_path(
    spec: ScanSpec,
    choice: &PathChoice,
    sort: &SortOptions,
) -> Result<Box<dyn AccessPath>> {
    let ordered = spec.ordered;
    let unordered = spec.clone().ordered(false);
    let p: Box<dyn AccessPath> = match choice {
        PathChoice::Full => Box::new(FullScan::new(unordered)?),
        PathChoice::Index => return Ok(Box::new(IndexScan::new(spec)?)),
        PathChoice::Sort => Box::new(SortScan::new(unordered)?),
        PathChoice::Switch { estimate } => Box::new(SwitchScan::new(unordered, *estimate)?),
        PathChoice::Smooth(opts) => return Ok(Box::new(SmoothScan::new(spec, opts.clone())?)),
    };
    if ordered {
        spec.index()
            .map_err(|_| AccessError::Config("ORDER BY needs an index to order by".into()))?;
        sort_on_index(spec, p, sort)
    } else {
        Ok(p)
    }
}

/// What one run of a scan did.
#[derive(Clone, Debug, Serialize)]
pub struct ScanOutcome {
    pub report: ScanReport,
    pub io: IoCounters,
    pub wall_ms: f64,
    pub rows: u64,
}

/// Runs a scan to the end, handing every batch to `sink`, and measures it.
pub fn run_scan(
    spec: ScanSpec,
    choice: &PathChoice,
    sort: &SortOptions,
    sink: impl FnMut(&TupleBatch),
) -> Result<ScanOutcome> {
    let device = spec.table.heap().pool().device().clone();
    measure(&device, || open_path(spec, choice, sort), sink)
}

/// Opens an operator with `open`, runs it to the end handing every batch to
/// `sink`, and measures it on `device` (shared by [`run_scan`] and
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
