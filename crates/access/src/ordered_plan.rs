//! Plans for `SELECT * FROM t WHERE a BETWEEN x AND y ORDER BY a` (§4.2 of the
//! flash paper): an access path and, unless it keeps index order, a sort with a
//! memory budget.
//!
//! | plan | access path | sort |
//! | --- | --- | --- |
//! | `idx` | index scan ([`IndexScan`]): already in order | none |
//! | `sidx+ps` | sorted index scan ([`SortScan`], "SIDX") | partitioned sort, boundaries from the entries SIDX reads |
//! | `sidx+es` | sorted index scan | external merge sort |
//! | `fts+ps` | full scan ([`FullScan`]) | partitioned sort, boundaries from the index range's leaves |
//! | `fts+es` | full scan | external merge sort |
//!
//! [`OrderedPlan`] parses from those names (`FromStr`), so a CLI flag or a SQL
//! session setting can name a plan. [`sort_on_index`] is what a caller that must
//! sort another operator's output on an indexed key uses: a partitioned sort.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::batch::TupleBatch;
use crate::error::{AccessError, Result};
use crate::external_sort::ExternalSort;
use crate::full::FullScan;
use crate::index_scan::IndexScan;
use crate::measure::{ScanOutcome, measure};
use crate::partitioned_sort::{BoundarySource, PartitionedSort};
use crate::scan::{AccessPath, ScanSpec};
use crate::sort_scan::{self, SortScan};

/// One of the paper's five plans for an ordered range query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrderedPlan {
    Idx,
    SidxPs,
    SidxEs,
    FtsPs,
    FtsEs,
}

impl OrderedPlan {
    pub const ALL: [OrderedPlan; 5] = [
        OrderedPlan::Idx,
        OrderedPlan::SidxPs,
        OrderedPlan::SidxEs,
        OrderedPlan::FtsPs,
        OrderedPlan::FtsEs,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OrderedPlan::Idx => "idx",
            OrderedPlan::SidxPs => "sidx+ps",
            OrderedPlan::SidxEs => "sidx+es",
            OrderedPlan::FtsPs => "fts+ps",
            OrderedPlan::FtsEs => "fts+es",
        }
    }

    /// The paper's label: IDX, SIDX+PS, ...
    pub fn label(self) -> String {
        self.name().to_uppercase()
    }
}

impl fmt::Display for OrderedPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for OrderedPlan {
    type Err = AccessError;

    /// `idx`, `sidx+ps`, `sidx+es`, `fts+ps` or `fts+es` (case-insensitive).
    fn from_str(s: &str) -> Result<OrderedPlan> {
        let t = s.trim().to_ascii_lowercase().replace(' ', "");
        OrderedPlan::ALL
            .into_iter()
            .find(|p| p.name() == t)
            .ok_or_else(|| {
                AccessError::Config(format!(
                    "unknown ordered plan '{s}': expected one of {}",
                    OrderedPlan::ALL.map(|p| p.name()).join(", ")
                ))
            })
    }
}

/// How the sorts of a plan run.
#[derive(Clone, Debug)]
pub struct SortOptions {
    /// Sort memory budget in bytes (the paper's "sort memory").
    pub memory_bytes: usize,
    /// Directory of the sorts' temporary files (the database's `tmp/`).
    pub temp_dir: PathBuf,
    /// Requests the sorted index scan keeps in flight (1: the paper's
    /// synchronous fetches).
    pub sidx_depth: usize,
    /// Overrides PS's tuple size estimate (tests of wrong estimates).
    pub tuple_estimate: Option<usize>,
    /// How [`crate::open_path`] orders a path that does not produce index
    /// order: partitioned sort (the default; one write and one read of the data
    /// at any memory, best on flash) or external merge sort (sequential runs,
    /// best on a disk, where PS's scattered partition writes seek).
    pub final_sort: FinalSort,
}

/// The sort [`crate::open_path`] puts after a full, sort or switch scan for
/// ordered output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinalSort {
    Partitioned,
    Merge,
}

impl Default for SortOptions {
    fn default() -> Self {
        SortOptions {
            memory_bytes: 32 << 20,
            temp_dir: std::env::temp_dir(),
            sidx_depth: sort_scan::DEPTH,
            tuple_estimate: None,
            final_sort: FinalSort::Partitioned,
        }
    }
}

/// Opens `plan` over `spec` (its predicate and index; the index must be on the
/// ORDER BY column).
pub fn open_ordered(
    spec: ScanSpec,
    plan: OrderedPlan,
    opts: &SortOptions,
) -> Result<Box<dyn AccessPath>> {
    spec.index()?;
    let unordered = spec.clone().ordered(false);
    let mem = opts.memory_bytes;
    let dir = &opts.temp_dir;
    Ok(match plan {
        OrderedPlan::Idx => Box::new(IndexScan::new(spec.ordered(true))?),
        OrderedPlan::SidxEs => Box::new(ExternalSort::new(
            spec,
            Box::new(SortScan::with_depth(unordered, opts.sidx_depth)?),
            mem,
            dir,
        )?),
        OrderedPlan::FtsEs => Box::new(ExternalSort::new(
            spec,
            Box::new(FullScan::new(unordered)?),
            mem,
            dir,
        )?),
        OrderedPlan::SidxPs => {
            let builder = Arc::new(Mutex::new(Some(PartitionedSort::builder(
                &spec,
                mem,
                opts.tuple_estimate,
            ))));
            let feed = builder.clone();
            let sidx =
                SortScan::with_depth(unordered, opts.sidx_depth)?.observe_entries(move |e| {
                    if let Some(b) = feed.lock().as_mut() {
                        b.add(e);
                    }
                });
            Box::new(PartitionedSort::new(
                spec,
                Box::new(sidx),
                BoundarySource::Observed(builder),
                mem,
                dir,
                opts.tuple_estimate,
            )?)
        }
        OrderedPlan::FtsPs => sort_on_index(spec, Box::new(FullScan::new(unordered)?), opts)?,
    })
}

/// Sorts `input` (tuples of `spec`'s table within its range) into the order of
/// `spec`'s index, by a partitioned sort unless `opts.final_sort` asks for an
/// external merge sort: what a caller uses when it must sort on an indexed key.
pub fn sort_on_index(
    spec: ScanSpec,
    input: Box<dyn AccessPath>,
    opts: &SortOptions,
) -> Result<Box<dyn AccessPath>> {
    if opts.final_sort == FinalSort::Merge {
        return Ok(Box::new(ExternalSort::new(
            spec,
            input,
            opts.memory_bytes,
            &opts.temp_dir,
        )?));
    }
    Ok(Box::new(PartitionedSort::new(
        spec,
        input,
        BoundarySource::Index,
        opts.memory_bytes,
        &opts.temp_dir,
        opts.tuple_estimate,
    )?))
}

/// Runs a plan to the end, handing every batch to `sink`, with the counters of
/// [`crate::run_scan`].
pub fn run_ordered(
    spec: ScanSpec,
    plan: OrderedPlan,
    opts: &SortOptions,
    sink: impl FnMut(&TupleBatch),
) -> Result<ScanOutcome> {
    let device = spec.table.heap().pool().device().clone();
    measure(&device, || open_ordered(spec, plan, opts), sink)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_parse_by_name() {
        for p in OrderedPlan::ALL {
            assert_eq!(p.name().parse::<OrderedPlan>().unwrap(), p);
            assert_eq!(p.label().parse::<OrderedPlan>().unwrap(), p);
        }
        assert_eq!(
            " SIDX + PS ".parse::<OrderedPlan>().unwrap(),
            OrderedPlan::SidxPs
        );
        let e = "sidx".parse::<OrderedPlan>().unwrap_err().to_string();
        assert!(
            e.contains("unknown ordered plan 'sidx'") && e.contains("fts+es"),
            "{e}"
        );
    }
}
