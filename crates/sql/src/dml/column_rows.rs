//! The rows of a columnar table's column part that an `UPDATE` or `DELETE`
//! changes.
//!
//! A column row is not changed in place: its position goes into the table's
//! delete set (`strata_storage::db::deletes`) and, for an `UPDATE`, its new
//! row into the delta, the heap, where the table's inserts go. The rows are
//! found through an index's tree over the column rows: straight from it when
//! its range names a batch of rows at most
//! ([`strata_columns::index::few_positions`]: a point change reads the pages
//! of its rows and nothing is pruned or costed first), else as a scan finds
//! them, through the tree when one narrows them, else the row groups and
//! pages the WHERE's comparisons can be true on
//! ([`strata_columns::index::plan`]); the rows deleted already left out,
//! every column read, the whole WHERE evaluated on them.

use std::ops::Bound;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::DataFusionError;
use strata_access::batch::BATCH_ROWS;
use strata_columns::{ColumnPart, ColumnsError};
use strata_storage::db::Index;
use strata_storage::{Database, Table};

use super::filter::{Filter, table_schema};
use crate::error::SqlError;

fn columns_error(e: strata_columns::ColumnsError) -> SqlError {
    SqlError::from(DataFusionError::External(Box::new(e)))
}

/// Hands `each` the rows of `table`'s column part that satisfy `filter`, in
/// batches: their positions in the part, and the rows (every column, in the
/// table's Arrow schema). Nothing for a row table.
pub(super) fn find_column_rows(
    db: &Database,
    table: &Table,
    filter: &Filter,
    each: &mut dyn FnMut(Vec<u64>, RecordBatch) -> Result<(), SqlError>,
) -> Result<(), SqlError> {
    let Some(part) = ColumnPart::of(db, table).map_err(columns_error)? else {
        return Ok(());
    };
    let all: Vec<usize> = (0..table.schema().len()).collect();
    let schema = table_schema(table);
    let mut failed: Option<SqlError> = None;
    // An index's column tree narrows a point change to the pages of its
    // rows (`strata_columns::index`): read straight from the tree when its
    // range names a batch of rows at most, else as a scan plans it.
    let few = strata_columns::index::few_positions(&part, table, &filter.conjuncts, BATCH_ROWS)
        .map_err(columns_error)?;
    let plan = match few {
        Some(positions) => part.plan_positions(&positions),
        None => {
            strata_columns::index::plan(&part, table, &filter.conjuncts, &all)
                .map_err(columns_error)?
                .0
        }
    };
    for unit in &plan.units {
        let positions = unit.positions();
        let mut at = 0usize;
        part.read(unit, &all, |batch| {
            let n = batch.num_rows();
            let Some(pos) = positions.get(at..at + n) else {
                failed = Some(SqlError::Execution(format!(
                    "the column part of '{}' gave more rows than its row group {} selects",
                    table.name(),
                    unit.row_group
                )));
                return Ok(false);
            };
            at += n;
            let step = RecordBatch::try_new(schema.clone(), batch.columns().to_vec())
                .map_err(|e| SqlError::Execution(e.to_string()))
                .and_then(|batch| filter.select(pos.to_vec(), batch))
                .and_then(|(keep, rows)| {
                    if keep.is_empty() {
                        Ok(())
                    } else {
                        each(keep, rows)
                    }
                });
            match step {
                Ok(()) => Ok(true),
                Err(e) => {
                    failed = Some(e);
                    Ok(false)
                }
            }
        })
        .map_err(columns_error)?;
        if let Some(e) = failed.take() {
            return Err(e);
        }
    }
    Ok(())
}

/// The rows of `table`'s column part at the live entries of `index`'s tree
/// over them in [`lo`, `hi`] (a point query's, `super::direct_select`):
/// columns `columns` of the table, in that order, as batches of `schema`;
/// `None`, with no row read, when the range names more than `limit` rows.
pub(super) fn rows_at(
    db: &Database,
    table: &Table,
    index: &Index,
    (lo, hi): (Bound<Vec<u8>>, Bound<Vec<u8>>),
    columns: &[usize],
    schema: &SchemaRef,
    limit: usize,
) -> Result<Option<Vec<RecordBatch>>, SqlError> {
    let Some(part) = ColumnPart::of(db, table).map_err(columns_error)? else {
        return Ok(Some(Vec::new()));
    };
    let Some(positions) =
        strata_columns::index::positions_in(&part, index, lo, hi, limit).map_err(columns_error)?
    else {
        return Ok(None);
    };
    if positions.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let plan = part.plan_positions(&positions);
    // The reader gives the columns in table order.
    let mut read = columns.to_vec();
    read.sort_unstable();
    read.dedup();
    let at: Vec<usize> = columns
        .iter()
        .map(|c| read.binary_search(c).expect("read"))
        .collect();
    // Each row is a page of each column to decode: the units split over
    // the cores, as a scan's partitions are.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let parts = strata_columns::read::split(&plan.units, cores);
    let failed = |reason: String| ColumnsError::Convert {
        table: table.name().to_string(),
        reason,
    };
    let read_part = |units: &[strata_columns::read::Unit]| {
        let mut out = Vec::new();
        part.read_units(units, &read, |batch| {
            let picked = at.iter().map(|&i| batch.column(i).clone()).collect();
            out.push(
                RecordBatch::try_new(schema.clone(), picked).map_err(|e| failed(e.to_string()))?,
            );
            Ok(true)
        })
        .map(|()| out)
    };
    let read_parts = std::thread::scope(|s| {
        let others: Vec<_> = parts[1..]
            .iter()
            .map(|units| {
                std::thread::Builder::new()
                    .name(format!("lookup {}", table.name()))
                    .spawn_scoped(s, || read_part(units))
            })
            .collect();
        let mut all = vec![read_part(&parts[0])];
        for t in others {
            all.push(match t {
                Ok(t) => t
                    .join()
                    .unwrap_or_else(|_| Err(failed("a lookup thread panicked".into()))),
                Err(e) => Err(failed(format!("no thread for the lookup: {e}"))),
            });
        }
        all
    });
    let mut out = Vec::new();
    for batches in read_parts {
        out.extend(batches.map_err(columns_error)?);
    }
    Ok(Some(out))
}
