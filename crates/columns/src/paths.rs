//! The access paths over a columnar table's column part, as the row heap
//! has them (`strata_access`): full, index, sort and Smooth Scan, each
//! producing the rows (every column) that pass a conjunction of
//! comparisons. The robustness matrix runs them side by side (`strata bench
//! smooth-scan robustness --table-format columns`); SQL's column scan plans
//! with the same pieces ([`crate::index::plan`]).
//!
//! * **Full**: what min/max pruning of row groups and pages keeps
//!   ([`ColumnPart::plan`]), every row of it tested.
//! * **Index**: the index's tree over the column rows in key order, each
//!   entry's row read on its own (its page of each column; a page read
//!   before comes from the database's cache of column-file bytes, as a heap
//!   page from the buffer pool).
//! * **Sort**: the tree's entries in the range first, their positions
//!   sorted, then the rows read in position order as one row selection: the
//!   pages holding them, adjacent ones in one request.
//! * **Smooth**: the sort scan's reads while they cost less than the full
//!   scan, and the full scan as soon as a lower bound on finishing through
//!   the index reaches its cost ([`crate::smooth`]).
//!
//! The delta (rows inserted since the part was written) is not theirs: it
//! is a heap, read by the heap's paths.

use arrow::array::{Array, ArrayRef, BooleanArray};
use arrow::compute::kernels::cmp;
use arrow::compute::{and, filter_record_batch};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::RowSelection;
use strata_access::predicate::{CmpOp, Comparison, compare};
use strata_storage::Table;
use strata_storage::row::DataType;

use crate::convert::{ValueBatchBuilder, arrow_values};
use crate::error::{ColumnsError, Result};
use crate::read::{ColumnPart, Plan, Unit};

/// Which path reads the column part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnPath {
    Full,
    Index,
    Sort,
    Smooth,
}

impl ColumnPath {
    pub fn name(self) -> &'static str {
        match self {
            ColumnPath::Full => "full",
            ColumnPath::Index => "index",
            ColumnPath::Sort => "sort",
            ColumnPath::Smooth => "smooth",
        }
    }
}

/// What a path did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PathRun {
    /// Rows read from the column files (before the comparisons).
    pub rows_read: u64,
    /// Index entries and leaves read.
    pub entries: u64,
    pub leaves: u64,
    /// Smooth Scan morphed into the full scan.
    pub morphed: bool,
    /// What Smooth Scan decided, in words.
    pub note: String,
}

/// Runs `path` over `part` (of `table`) for the rows passing `conjuncts`,
/// handing `f` each batch of them (every column, in table order); `f`
/// returning false stops the scan. The index is the one whose tree over
/// the column rows narrows the range most (an error for the index and sort
/// paths if there is none; Smooth Scan is then the full scan).
pub fn run(
    part: &ColumnPart,
    table: &Table,
    conjuncts: &[Comparison],
    path: ColumnPath,
    mut f: impl FnMut(&RecordBatch) -> Result<bool>,
) -> Result<PathRun> {
    let columns: Vec<usize> = (0..part.schema().len()).collect();
    let filter = BatchFilter::new(part, table.name(), conjuncts)?;
    let mut run = PathRun::default();
    let best = crate::index::best_index(table, conjuncts)?;
    let mut emit = |b: RecordBatch, run: &mut PathRun| -> Result<bool> {
        run.rows_read += b.num_rows() as u64;
        let kept = filter.apply(&b)?;
        if kept.num_rows() == 0 {
            return Ok(true);
        }
        f(&kept)
    };
    let read_plan = |plan: &Plan,
                     run: &mut PathRun,
                     emit: &mut dyn FnMut(RecordBatch, &mut PathRun) -> Result<bool>|
     -> Result<()> { part.read_units(&plan.units, &columns, |b| emit(b, run)) };
    let no_index = || ColumnsError::Convert {
        table: table.name().to_string(),
        reason: format!(
            "the {} path needs an index whose first column the query bounds",
            path.name()
        ),
    };
    if path != ColumnPath::Index {
        if path == ColumnPath::Sort && best.is_none() {
            return Err(no_index());
        }
        let (plan, probe) = plan(part, table, conjuncts, &columns, path)?;
        match probe {
            Some(p) => {
                run.entries = p.entries;
                run.leaves = p.leaves;
                run.morphed = p.positions.is_none();
                run.note = p.note;
            }
            None if path == ColumnPath::Smooth => {
                run.morphed = true;
                run.note = "no index on the query's columns: the full scan".into();
            }
            None => {}
        }
        read_plan(&plan, &mut run, &mut emit)?;
        return Ok(run);
    }
    // The index path: each entry's row read on its own, in key order.
    let (ix, lo, hi) = best.ok_or_else(no_index)?;
    let tree = ix.column_tree().expect("best_index has a column tree");
    let groups = part.row_groups();
    let deleted = part.deleted();
    let mut cursor = tree.range_cursor(lo, hi);
    while let Some(e) = cursor.next_entry(tree) {
        let pos = e?.1.position();
        run.entries += 1;
        if deleted.binary_search(&pos).is_ok() {
            continue;
        }
        let unit = row_unit(&groups, pos);
        let mut go = true;
        part.read(&unit, &columns, |b| {
            go = emit(b, &mut run)?;
            Ok(go)
        })?;
        if !go {
            break;
        }
    }
    run.leaves = cursor.leaves_read();
    Ok(run)
}

/// The plan SQL's column scan reads for `path` (a partition of its units
/// per thread): the rows passing `conjuncts`, of table columns `columns`.
/// The index scan's plan is one unit per entry, in key order (each row
/// read on its own); the sort scan's the entries' rows in position order;
/// Smooth Scan's [`crate::index::plan`]. The index and sort paths without
/// an index to take are the full scan, as on a row table. The probe says
/// what the index walk did, for EXPLAIN.
pub fn plan(
    part: &ColumnPart,
    table: &Table,
    conjuncts: &[Comparison],
    columns: &[usize],
    path: ColumnPath,
) -> Result<(Plan, Option<crate::index::Probe>)> {
    let best = match path {
        ColumnPath::Full => return Ok((part.plan(conjuncts)?, None)),
        ColumnPath::Smooth => return crate::index::plan(part, table, conjuncts, columns),
        ColumnPath::Index | ColumnPath::Sort => crate::index::best_index(table, conjuncts)?,
    };
    let full = part.plan(conjuncts)?;
    let Some((ix, lo, hi)) = best else {
        return Ok((full, None));
    };
    let tree = ix.column_tree().expect("best_index has a column tree");
    let mut cursor = tree.range_cursor(lo, hi);
    let deleted = part.deleted();
    let mut positions = Vec::new();
    let mut entries = 0u64;
    while let Some(e) = cursor.next_entry(tree) {
        let pos = e?.1.position();
        entries += 1;
        if deleted.binary_search(&pos).is_err() {
            positions.push(pos);
        }
    }
    let probe = |positions: Vec<u64>| crate::index::Probe {
        index: ix.def.name.clone(),
        entries,
        leaves: cursor.leaves_read(),
        note: format!("the {} path", path.name()),
        positions: Some(positions),
    };
    if path == ColumnPath::Sort {
        positions.sort_unstable();
        let plan = ColumnPart::plan_at(full, &positions);
        return Ok((plan, Some(probe(positions))));
    }
    let groups = part.row_groups();
    let mut plan = Plan {
        units: Vec::with_capacity(positions.len()),
        row_groups_total: full.row_groups_total,
        rows_total: full.rows_total,
    };
    for &pos in &positions {
        plan.units.push(row_unit(&groups, pos));
    }
    Ok((plan, Some(probe(positions))))
}

/// The unit that reads the row at `pos` alone (`groups`:
/// [`ColumnPart::row_groups`]).
fn row_unit(groups: &[(usize, usize, u64, u64)], pos: u64) -> Unit {
    let g = groups.partition_point(|r| r.2 <= pos).saturating_sub(1);
    let (file, row_group, first, rows) = groups[g];
    let at = (pos - first) as usize;
    Unit {
        file,
        row_group,
        selection: Some(RowSelection::from_consecutive_ranges(
            std::iter::once(at..at + 1),
            rows as usize,
        )),
        rows: 1,
        first,
        group_rows: rows,
    }
}

/// A conjunction of comparisons evaluated on Arrow batches of every column
/// of a table: with Arrow's kernels, but on FLOAT and BOOL columns by
/// strata's own comparison (NaN above every number, as in strata's order).
struct BatchFilter {
    table: String,
    tests: Vec<(usize, CmpOp, Test)>,
}

enum Test {
    Kernel(ArrayRef),
    Values(strata_storage::row::Value, DataType),
}

impl BatchFilter {
    fn new(part: &ColumnPart, table: &str, conjuncts: &[Comparison]) -> Result<BatchFilter> {
        let schema = part.schema();
        let arrow: SchemaRef = crate::convert::arrow_schema(schema);
        let mut tests = Vec::new();
        for c in conjuncts {
            let ty = schema.columns[c.column].ty;
            let test = if matches!(ty, DataType::Float64 | DataType::Bool) || c.value.is_null() {
                Test::Values(c.value.clone(), ty)
            } else {
                let one = std::sync::Arc::new(arrow::datatypes::Schema::new(vec![
                    arrow.field(c.column).clone(),
                ]));
                let mut b = ValueBatchBuilder::new(&[ty], one);
                b.push_row([&c.value])
                    .and_then(|_| b.finish())
                    .map(|batch| Test::Kernel(batch.column(0).clone()))
                    .map_err(|e| ColumnsError::Convert {
                        table: table.to_string(),
                        reason: e.to_string(),
                    })?
            };
            tests.push((c.column, c.op, test));
        }
        Ok(BatchFilter {
            table: table.to_string(),
            tests,
        })
    }

    /// The rows of `b` that pass every comparison (a NULL passes none).
    fn apply(&self, b: &RecordBatch) -> Result<RecordBatch> {
        let err = |reason: String| ColumnsError::Convert {
            table: self.table.clone(),
            reason,
        };
        let mut mask: Option<BooleanArray> = None;
        for (column, op, test) in &self.tests {
            let col = b.column(*column);
            let m = match test {
                Test::Kernel(lit) => {
                    let v = arrow::array::Scalar::new(lit.clone());
                    let r = match op {
                        CmpOp::Eq => cmp::eq(col, &v),
                        CmpOp::Ne => cmp::neq(col, &v),
                        CmpOp::Lt => cmp::lt(col, &v),
                        CmpOp::Le => cmp::lt_eq(col, &v),
                        CmpOp::Gt => cmp::gt(col, &v),
                        CmpOp::Ge => cmp::gt_eq(col, &v),
                    };
                    r.map_err(|e| err(e.to_string()))?
                }
                Test::Values(lit, ty) => {
                    let values = arrow_values(col.as_ref(), ty).map_err(err)?;
                    values
                        .iter()
                        .map(|v| Some(compare(v, lit).is_some_and(|o| op.holds(o))))
                        .collect()
                }
            };
            // NULL is not true.
            let m = if m.null_count() > 0 {
                (0..m.len())
                    .map(|i| Some(m.is_valid(i) && m.value(i)))
                    .collect()
            } else {
                m
            };
            mask = Some(match mask {
                None => m,
                Some(prev) => and(&prev, &m).map_err(|e| err(e.to_string()))?,
            });
        }
        match mask {
            None => Ok(b.clone()),
            Some(m) => filter_record_batch(b, &m).map_err(|e| err(e.to_string())),
        }
    }
}
