//! One CSV or Parquet load under way ([`Import`]): the [`TableLoad`] it
//! appends to, the bad rows it may skip ([`LoadTarget::max_errors`]), and
//! what it reports at commit ([`LoadReport`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_storage::StorageError;
use strata_storage::db::{
    Database, IndexSpec, LoadSummary, Progress, Table, TableLoad, TableOptions,
};
use strata_storage::row::{Schema, Value};

use crate::error::{LoadError, RowError};

/// What a committed CSV or Parquet load did.
#[derive(Clone, Debug)]
pub struct LoadReport {
    pub table: String,
    /// The load created the table.
    pub created: bool,
    pub rows_loaded: u64,
    /// Bad rows skipped (at most `max_errors`), in input order.
    pub skipped: Vec<RowError>,
    /// Size of the input file.
    pub bytes: u64,
    /// Wall time from opening the input to the committed catalog, index builds included.
    pub elapsed: Duration,
    /// The storage layer's account of the commit (total rows, pages, indexes built).
    pub summary: LoadSummary,
}

impl LoadReport {
    pub fn rows_skipped(&self) -> u64 {
        self.skipped.len() as u64
    }
}

/// Where a CSV or Parquet load puts its rows and how many bad ones it may skip:
/// the options [`CsvOptions`] and [`ParquetOptions`] share.
#[derive(Clone, Debug, Default)]
pub struct LoadTarget {
    /// Heap options of a table the load creates.
    pub create: TableOptions,
    /// Indexes to build at commit: all of them for a new table; for an existing
    /// table those whose name it does not have yet.
    pub indexes: Vec<IndexSpec>,
    /// Bad rows to skip (and report) before the load is rolled back (default 0:
    /// the first bad row aborts).
    pub max_errors: u64,
}

/// Counts bad rows against `max_errors` and decides when a load must give up.
struct ErrorBudget {
    max_errors: u64,
    skipped: Vec<RowError>,
}

impl ErrorBudget {
    fn new(max_errors: u64) -> Self {
        ErrorBudget {
            max_errors,
            skipped: Vec::new(),
        }
    }

    /// Records a bad row; `Err` (the load must be rolled back) once there are more
    /// than `max_errors`.
    fn reject(&mut self, error: RowError, table: &str, new_table: bool) -> Result<(), LoadError> {
        if (self.skipped.len() as u64) < self.max_errors {
            self.skipped.push(error);
            Ok(())
        } else {
            Err(LoadError::Rejected {
                error: Box::new(error),
                skipped: std::mem::take(&mut self.skipped),
                max_errors: self.max_errors,
                table: table.to_string(),
                new_table,
            })
        }
    }
}

/// Splits a failed `TableLoad::append` into a row error (the row is at fault: a
/// value out of range, a row too large for a page) or a fatal storage error.
fn classify_append_error(e: StorageError) -> Result<(Option<String>, String), LoadError> {
    match e {
        StorageError::Value { column, reason } => Ok((Some(column), reason)),
        e @ StorageError::TupleTooLarge { .. } => Ok((None, e.to_string())),
        e => Err(e.into()),
    }
}

/// The table a load goes into, if it exists.
pub(crate) fn existing_table(db: &Database, table: &str) -> Result<Option<Arc<Table>>, LoadError> {
    match db.table(table) {
        Ok(t) => Ok(Some(t)),
        Err(StorageError::UnknownTable(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The schema of existing table `t` when a load also gives one: it must be
/// the table's (a load never changes a table's columns).
pub(crate) fn existing_schema(t: &Table, given: Option<&Schema>) -> Result<Schema, LoadError> {
    if let Some(s) = given
        && s != t.schema()
    {
        return Err(LoadError::Mismatch(format!(
            "table '{}' already exists with columns ({}), which differ from the given schema ({s})",
            t.name(),
            t.schema()
        )));
    }
    Ok(t.schema().clone())
}

/// A CSV or Parquet load under way: its [`TableLoad`], the bad rows skipped so
/// far and the rows appended, which [`Import::commit`] reports.
pub(crate) struct Import<'a> {
    load: TableLoad<'a>,
    table: &'a str,
    schema: Schema,
    new_table: bool,
    budget: ErrorBudget,
    loaded: u64,
    /// When the load started (opening the input).
    start: Instant,
}

impl<'a> Import<'a> {
    /// Starts loading rows of `schema` into `table`, a new table (created at
    /// commit) or an existing one, as `target` says; `start` is when the load
    /// began.
    pub fn begin(
        db: &'a Database,
        table: &'a str,
        schema: &Schema,
        new_table: bool,
        target: &LoadTarget,
        start: Instant,
    ) -> Result<Self, LoadError> {
        Ok(Import {
            load: begin_load(db, table, schema, new_table, target)?,
            table,
            schema: schema.clone(),
            new_table,
            budget: ErrorBudget::new(target.max_errors),
            loaded: 0,
            start,
        })
    }

    /// Skips a bad row; `Err` (the load must be rolled back) once there are
    /// more than `max_errors`.
    pub fn reject(&mut self, error: RowError) -> Result<(), LoadError> {
        self.budget.reject(error, self.table, self.new_table)
    }

    /// Appends `row`. A row the table refuses (a value out of range, a row too
    /// large for a page) is rejected as `bad(column, reason)`, `column` being
    /// the table column at fault (its position and name), if one is.
    pub fn append(
        &mut self,
        row: &[Value],
        bad: impl FnOnce(Option<(usize, String)>, String) -> RowError,
    ) -> Result<(), LoadError> {
        match self.load.append(row) {
            Ok(_) => {
                self.loaded += 1;
                Ok(())
            }
            Err(e) => {
                let (column, reason) = classify_append_error(e)?;
                let column = column.and_then(|name| Some((self.schema.index_of(&name)?, name)));
                self.reject(bad(column, reason))
            }
        }
    }

    /// Commits the load (with its index builds) and reports it; `bytes` is the
    /// input file's size.
    pub fn commit(self, bytes: u64, progress: &dyn Progress) -> Result<LoadReport, LoadError> {
        let summary = self.load.commit(progress)?;
        Ok(LoadReport {
            table: self.table.to_string(),
            created: self.new_table,
            rows_loaded: self.loaded,
            skipped: self.budget.skipped,
            bytes,
            elapsed: self.start.elapsed(),
            summary,
        })
    }
}

/// Starts the load: creates the table with its indexes, or appends to the existing
/// one and adds the requested indexes it does not have yet (so re-running a load
/// with the same `--index` options appends instead of failing).
fn begin_load<'a>(
    db: &'a Database,
    table: &str,
    schema: &Schema,
    new_table: bool,
    target: &LoadTarget,
) -> Result<TableLoad<'a>, LoadError> {
    if new_table {
        return Ok(db.begin_create_load(
            table,
            schema.clone(),
            target.create.clone(),
            target.indexes.clone(),
        )?);
    }
    let t = db.table(table)?;
    let mut load = db.begin_load(table)?;
    for spec in &target.indexes {
        if t.index(&spec.name).is_err() {
            load.add_index(spec.clone())?;
        }
    }
    Ok(load)
}
