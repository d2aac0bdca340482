//! Choosing an access path by name and running it to completion with the
//! counters an EXPLAIN ANALYZE shows.

use crate::batch::TupleBatch;
use crate::error::{AccessError, Result};
use crate::full::FullScan;
use crate::index_scan::IndexScan;
use crate::measure::{ScanOutcome, measure};
use crate::ordered_plan::{SortOptions, sort_on_index};
use crate::scan::{AccessPath, ScanSpec};
use crate::smooth::SmoothOptions;
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
    // A Smooth Scan says itself whether it splits (`smooth::open`).
    if let Some(p) = &spec.part
        && !matches!(choice, PathChoice::Smooth(_))
    {
        return Err(AccessError::Config(format!(
            "a {} scan cannot run as part {} of {}: only a page-ordered Smooth Scan shares one index walk among parts",
            choice.name(),
            p.part + 1,
            p.walk.parts()
        )));
    }
    let ordered = spec.ordered;
    let unordered = spec.clone().ordered(false);
    let p: Box<dyn AccessPath> = match choice {
        PathChoice::Full => Box::new(FullScan::new(unordered)?),
        PathChoice::Index => return Ok(Box::new(IndexScan::new(spec)?)),
        PathChoice::Sort => Box::new(SortScan::new(unordered)?),
        PathChoice::Switch { estimate } => Box::new(SwitchScan::new(unordered, *estimate)?),
        PathChoice::Smooth(opts) => return crate::smooth::open(spec, opts),
    };
    if ordered {
        spec.index()
            .map_err(|_| AccessError::Config("ORDER BY needs an index to order by".into()))?;
        sort_on_index(spec, p, sort)
    } else {
        Ok(p)
    }
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
