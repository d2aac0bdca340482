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

use datafusion::arrow::array::{BooleanArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::DataFusionError;
use strata_access::batch::BATCH_ROWS;
use strata_columns::read::Plan;
use strata_columns::{ColumnPart, ColumnsError};
use strata_storage::catalog::ColumnsDef;
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
fn find_column_rows(
    db: &Database,
    table: &Table,
    filter: &Filter,
    each: &mut dyn FnMut(Vec<u64>, RecordBatch) -> Result<(), SqlError>,
) -> Result<(), SqlError> {
    let Some(part) = ColumnPart::of(db, table).map_err(columns_error)? else {
        return Ok(());
    };
    let all: Vec<usize> = (0..table.schema().len()).collect();
    // An index's column tree narrows a point change to the pages of its
    // rows (`strata_columns::index`): read straight from the tree when its
    // range names a batch of rows at most, else as a scan plans it.
    let few = strata_columns::index::few_positions(&part, table, &filter.conjuncts, BATCH_ROWS)
        .map_err(columns_error)?;
    // A few rows are a lookup's: read as point reads.
    let part = if few.is_some() {
        part.with_point_reads()
    } else {
        part
    };
    let plan = match few {
        Some(positions) => part.plan_positions(&positions),
        None => {
            strata_columns::index::plan(&part, table, &filter.conjuncts, &all)
                .map_err(columns_error)?
                .0
        }
    };
    read_plan(&part, table, &plan, filter, each)
}

/// The column rows a point `UPDATE` or `DELETE` found before it took the
/// writer turn ([`find_early`]), to be used under the turn
/// ([`column_rows_under_turn`]).
pub(super) struct FoundEarly {
    /// The column part they are rows of: a part replaced since (a merge of
    /// the delta, a conversion) makes them stale.
    def: ColumnsDef,
    schema: SchemaRef,
    rows: Vec<(Vec<u64>, RecordBatch)>,
}

/// A point change's column rows, read before the writer turn: the rows
/// `filter` keeps when an index's column tree names a batch of rows at most
/// (`None` otherwise, and for a row table; those are found under the turn).
///
/// Reading the pages of a column row is most of a point change's work on a
/// columnar table; done here, it overlaps other sessions' turns instead of
/// lengthening this one's. It reads only what never changes (the column
/// files and the index's tree over them), so it needs no statement snapshot
/// and holds no commit up. Nothing a later commit does can make the rows
/// wrong: column rows never change (a change deletes the row and inserts
/// its new version into the delta), so the only difference the turn can
/// find is rows deleted (before or since), which [`column_rows_under_turn`]
/// leaves out, or a part replaced whole, which it reads again.
pub(super) fn find_early(
    db: &Database,
    table: &Table,
    filter: &Filter,
) -> Result<Option<FoundEarly>, SqlError> {
    let Some(def) = table.columns() else {
        return Ok(None);
    };
    // Not the delete set: it changes as transactions commit, and read
    // outside a statement snapshot it could be seen half published. The
    // rows deleted already are left out under the turn, with those deleted
    // since.
    let Some(part) = ColumnPart::of_every_row(db, table).map_err(columns_error)? else {
        return Ok(None);
    };
    let Some(positions) =
        strata_columns::index::few_positions(&part, table, &filter.conjuncts, BATCH_ROWS)
            .map_err(columns_error)?
    else {
        return Ok(None);
    };
    let mut rows = Vec::new();
    let part = part.with_point_reads();
    let plan = part.plan_positions(&positions);
    read_plan(&part, table, &plan, filter, &mut |found, batch| {
        rows.push((found, batch));
        Ok(())
    })?;
    Ok(Some(FoundEarly {
        def: def.clone(),
        schema: table_schema(table),
        rows,
    }))
}

/// Under the writer turn: hands `each` the rows found early that are still
/// live (the transaction's own deletes and every committed one left out),
/// or, when none were found early or the part was replaced since, the rows
/// [`find_column_rows`] finds now.
pub(super) fn column_rows_under_turn(
    db: &Database,
    table: &Table,
    filter: &Filter,
    early: Option<FoundEarly>,
    each: &mut dyn FnMut(Vec<u64>, RecordBatch) -> Result<(), SqlError>,
) -> Result<(), SqlError> {
    let early =
        early.filter(|e| table.columns() == Some(&e.def) && e.schema == table_schema(table));
    let Some(early) = early else {
        return find_column_rows(db, table, filter, each);
    };
    let deleted = table.deleted_column_rows()?;
    for (positions, batch) in early.rows {
        let live: Vec<bool> = positions
            .iter()
            .map(|p| deleted.binary_search(p).is_err())
            .collect();
        if live.iter().all(|&l| l) {
            each(positions, batch)?;
            continue;
        }
        let kept: Vec<u64> = positions
            .iter()
            .zip(&live)
            .filter_map(|(&p, &l)| l.then_some(p))
            .collect();
        if kept.is_empty() {
            continue;
        }
        let batch = filter_record_batch(&batch, &BooleanArray::from(live))
            .map_err(|e| SqlError::Execution(e.to_string()))?;
        each(kept, batch)?;
    }
    Ok(())
}

/// Reads `plan`'s rows of `part` (every column), keeps those `filter`
/// passes and hands them to `each` with their positions.
fn read_plan(
    part: &ColumnPart,
    table: &Table,
    plan: &Plan,
    filter: &Filter,
    each: &mut dyn FnMut(Vec<u64>, RecordBatch) -> Result<(), SqlError>,
) -> Result<(), SqlError> {
    let all: Vec<usize> = (0..table.schema().len()).collect();
    let schema = table_schema(table);
    let mut failed: Option<SqlError> = None;
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
    let part = part.with_point_reads();
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
    // the cores, as a scan's partitions are; unless the cache holds every
    // page's values already, when a thread would cost more than the rows.
    let cores = if plan.units.iter().all(|u| part.is_decoded(u, &read)) {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    };
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::logical_expr::{col, lit};
    use datafusion::prelude::SessionContext;
    use strata_storage::db::{DbOptions, NoProgress, TableOptions};
    use strata_storage::row::{Schema, Value};

    use super::super::DmlExec;
    use super::super::txn::Writes;
    use super::*;
    use crate::SqlSession;

    const ROWS: i64 = 5_000;

    /// `t (k, v)`, `v = k`, as column rows (no delta), an index on `k`.
    fn columnar() -> (tempfile::TempDir, Arc<Database>, SqlSession) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(&dir.path().join("db"), DbOptions::default()).unwrap();
        let mut load = db
            .begin_create_load(
                "t",
                Schema::parse("k BIGINT, v BIGINT").unwrap(),
                TableOptions::default(),
                vec![],
            )
            .unwrap();
        for k in 0..ROWS {
            load.append(&[Value::Int64(k), Value::Int64(k)]).unwrap();
        }
        load.commit(&NoProgress).unwrap();
        strata_columns::rewrite(&db, "t", strata_columns::Format::Columns, &NoProgress).unwrap();
        let db = Arc::new(db);
        let s = SqlSession::new(db.clone()).unwrap();
        s.execute("CREATE INDEX t_k ON t (k)").unwrap();
        (dir, db, s)
    }

    fn v_of(s: &SqlSession, k: i64) -> Vec<i64> {
        let r = s
            .execute(&format!("SELECT v FROM t WHERE k = {k}"))
            .unwrap();
        r.batches
            .iter()
            .flat_map(|b| {
                b.column(0)
                    .as_any()
                    .downcast_ref::<datafusion::arrow::array::Int64Array>()
                    .unwrap()
                    .values()
                    .to_vec()
            })
            .collect()
    }

    #[test]
    fn a_point_change_uses_the_column_rows_read_before_its_turn_less_those_deleted_since() {
        let (_dir, db, s) = columnar();
        let ctx = SessionContext::new();
        let state = ctx.state();
        let add = |k: i64, by: i64| {
            DmlExec::update(
                Writes::new(db.clone()),
                "t",
                &state,
                vec![("v".into(), col("v") + lit(by))],
                vec![col("k").eq(lit(k))],
            )
            .unwrap()
        };
        let early = |e: &DmlExec| find_early(&db, &db.table("t").unwrap(), &e.filter).unwrap();
        let found = |f: &Option<FoundEarly>| {
            f.as_ref()
                .map(|f| f.rows.iter().map(|(p, _)| p.len()).sum::<usize>())
        };

        // Read and still live: those rows change.
        let a = add(8, 1);
        let read = early(&a);
        assert_eq!(found(&read), Some(1), "a point change by the index");
        assert_eq!(a.run_found(None, read).unwrap().0, 1);
        assert_eq!(v_of(&s, 8), [9]);

        // Another session changes the row between the early read and the
        // turn (its column row deleted, its new version in the delta) and
        // commits: under the turn the early row is left out and the delta's
        // version changes instead. No change lost, none made twice (the
        // column row deleted twice would be an error).
        let b = add(7, 1);
        let read = early(&b);
        assert_eq!(found(&read), Some(1));
        s.execute("UPDATE t SET v = v + 10 WHERE k = 7").unwrap();
        assert_eq!(b.run_found(None, read).unwrap().0, 1);
        assert_eq!(v_of(&s, 7), [7 + 10 + 1]);
        // Read early, the deleted column row is there too (the early read
        // does not look at the delete set); under the turn only the delta's
        // version changes.
        let b2 = add(7, 1);
        let read = early(&b2);
        assert_eq!(found(&read), Some(1));
        assert_eq!(b2.run_found(None, read).unwrap().0, 1);
        assert_eq!(v_of(&s, 7), [7 + 10 + 1 + 1]);

        // A DELETE read early whose row another session deleted meanwhile
        // deletes nothing.
        let d = DmlExec::delete(
            Writes::new(db.clone()),
            "t",
            &state,
            vec![col("k").eq(lit(5i64))],
        )
        .unwrap();
        let read = early(&d);
        assert_eq!(found(&read), Some(1));
        s.execute("DELETE FROM t WHERE k = 5").unwrap();
        assert_eq!(d.run_found(None, read).unwrap().0, 0);
        assert!(v_of(&s, 5).is_empty());

        // The part replaced since (the delta merged into new column files):
        // the positions read early name rows of the old files, so the rows
        // are found again.
        let c = add(9, 1);
        let read = early(&c);
        assert_eq!(found(&read), Some(1));
        s.execute("UPDATE t SET v = v + 100 WHERE k = 9").unwrap();
        strata_columns::rewrite(&db, "t", strata_columns::Format::Columns, &NoProgress).unwrap();
        assert_eq!(c.run_found(None, read).unwrap().0, 1);
        assert_eq!(v_of(&s, 9), [9 + 100 + 1]);

        // A range of more than a batch of rows is not read early.
        let wide = DmlExec::delete(
            Writes::new(db.clone()),
            "t",
            &state,
            vec![col("k").lt(lit(ROWS))],
        )
        .unwrap();
        assert_eq!(found(&early(&wide)), None);
        let r = s.execute("SELECT count(*) FROM t").unwrap();
        assert_eq!(
            r.batches[0]
                .column(0)
                .as_any()
                .downcast_ref::<datafusion::arrow::array::Int64Array>()
                .unwrap()
                .value(0),
            ROWS - 1
        );
    }
}
