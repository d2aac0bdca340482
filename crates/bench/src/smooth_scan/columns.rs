//! The robustness matrix on columnar tables (`strata bench smooth-scan
//! robustness --table-format columns`): the matrix's tables converted to
//! column files with their index kept as a tree over the column rows, and
//! each cell's paths run by `strata_columns::paths` — full (what min/max
//! pruning keeps), index (each entry's row on its own), sort (the rows in
//! position order) and the column Smooth Scan — where the row tables run
//! `strata_access`'s. Column reads are charged to the device like heap
//! reads (`Device::charge_read`), so modeled hdd and ssd cost them as they
//! cost heap pages.

use std::time::Instant;

use anyhow::{Context, Result};
use strata_access::Predicate;
use strata_access::report::ScanReport;
use strata_columns::ColumnPart;
use strata_columns::paths::{self, ColumnPath};
use strata_storage::Database;

use super::{BenchOptions, Limit, Run, device_options};

/// The column path a matrix variant names.
pub fn path_of(variant: &str) -> ColumnPath {
    match variant {
        "full" => ColumnPath::Full,
        "sort" => ColumnPath::Sort,
        "index" => ColumnPath::Index,
        _ => ColumnPath::Smooth,
    }
}

/// Converts table `name` of `db` (just generated as rows, with its index)
/// to column files; its index becomes a tree over the column rows.
pub fn convert(db: &Database, name: &str, progress: &dyn strata_storage::Progress) -> Result<()> {
    strata_columns::rewrite(db, name, strata_columns::Format::Columns, progress)
        .with_context(|| format!("converting {name} to columns"))?;
    Ok(())
}

/// Runs `path` over columnar table `table` once, cold (a fresh open: no
/// footer, page or byte cached), stopped (censored) past `limit`, checked
/// after every batch.
pub(super) fn run_limited(
    opts: &BenchOptions,
    device: &str,
    table: &str,
    pred: &str,
    path: ColumnPath,
    limit: Limit,
) -> Result<Run> {
    let db = Database::open(&opts.db_dir, device_options(device, opts.pool_bytes)?)?;
    let t = db.table(table)?;
    let predicate = Predicate::parse(t.schema(), pred)?;
    let dev = db.device().clone();
    dev.stats().forget_position();
    let before = dev.stats().snapshot();
    let start = Instant::now();
    let part =
        ColumnPart::of(&db, &t)?.with_context(|| format!("{table} is not a columnar table"))?;
    let mut rows = 0u64;
    let mut censored = false;
    let r = paths::run(&part, &t, &predicate.conjuncts, path, |b| {
        rows += b.num_rows() as u64;
        censored = limit.passed(dev.as_ref(), &before, start);
        Ok(!censored)
    })?;
    let report = ScanReport {
        path: path.name().to_string(),
        index_entries: r.entries,
        notes: vec![r.note],
        ..ScanReport::default()
    };
    Ok(Run::since(
        start,
        dev.as_ref(),
        &before,
        rows,
        report,
        censored,
    ))
}
