//! strata's loaders: typed CSV ([`load_csv`]) and Parquet ([`load_parquet`])
//! import, native generators for the papers' synthetic data ([`generate`]), and
//! the TPC-H tables ([`generate_tpch`]).
//!
//! Every loader appends through one [`TableLoad`]
//! and commits it at the very end, so a load is atomic: it either adds every good
//! row (and rebuilds the table's indexes) or leaves the table exactly as it was. A
//! load that fails before commit simply drops the `TableLoad`, which gives its
//! pages back; a table the load was creating never appears in the catalog.
//!
//! Errors name where the problem is: the file, the line (CSV) or row (Parquet),
//! the column by number and name, and the reason, e.g.
//! `data.csv:17: column 3 (c2): 'abc' is not a 32-bit integer`. Loaders print
//! nothing; rows skipped under `max_errors` are returned in the [`LoadReport`].

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_storage::StorageError;
use strata_storage::db::{
    Database, IndexSpec, LoadSummary, Progress, Table, TableLoad, TableOptions,
};
use strata_storage::row::{Schema, Value};

mod arrow_rows;
mod csv;
// `gen` is a reserved word in edition 2024.
#[path = "gen.rs"]
mod generator;
pub mod layout;
mod parquet;
mod tpch;

pub use crate::csv::{CsvOptions, CsvReport, load_csv};
pub use crate::generator::{
    GenKind, GenReport, GenSpec, MICROBENCH_MAX, PAGE_CACHED, PAGE_KEY, PAGE_NAMESPACES,
    PAGE_TITLE_MAX, REVISION_KEY, REVISION_ONCE, REVISION_PARETO, REVISION_TEXT_MAX, SkewedCounts,
    flash_schema, generate, microbench_schema, page_schema, revision_pages, revision_schema,
    skewed_counts,
};
pub use crate::parquet::{ParquetOptions, ParquetReport, load_parquet};
pub use crate::tpch::{
    BATCH_ROWS, MAX_SCALE_FACTOR, MIN_SCALE_FACTOR, TPCH_INDEXES, TpchIndex, TpchSpec, TpchTable,
    TpchTableReport, append_tpch_rows, generate_tpch, load_tpch_history_then_recent,
    parse_scale_factor,
};

/// Where in an input file a bad row is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowPosition {
    /// 1-based physical line where a CSV record starts.
    Line(u64),
    /// 1-based row number in a Parquet file.
    Row(u64),
}

/// One bad input row: where it is, which column (when one is to blame) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowError {
    /// The input file as the caller named it.
    pub file: String,
    pub position: RowPosition,
    /// 1-based column (field) number in the input and the table column's name.
    pub column: Option<(usize, String)>,
    pub reason: String,
}

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            RowPosition::Line(l) => write!(f, "{}:{l}: ", self.file)?,
            RowPosition::Row(r) => write!(f, "{}: row {r}: ", self.file)?,
        }
        if let Some((n, name)) = &self.column {
            write!(f, "column {n} ({name}): ")?;
        }
        write!(f, "{}", self.reason)
    }
}

/// Why a load or generation failed. In every case nothing was committed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The input could not be read (open, read or format errors below the row level).
    #[error("{path}: {reason}")]
    Input { path: PathBuf, reason: String },
    /// The input does not fit the table (header names, column count, types), or
    /// the request is incomplete (no schema for a new table).
    #[error("{0}")]
    Mismatch(String),
    /// A bad row beyond `max_errors`: the whole load was rolled back.
    #[error("{}", rejected_message(.error, *.max_errors, .table, *.new_table))]
    Rejected {
        /// The bad row that made the count exceed `max_errors`.
        error: Box<RowError>,
        /// Bad rows before it, which were being skipped.
        skipped: Vec<RowError>,
        max_errors: u64,
        table: String,
        /// The load was creating the table (which therefore does not exist now).
        new_table: bool,
    },
    /// Bad generator name or parameters.
    #[error("{0}")]
    Usage(String),
}

fn rejected_message(error: &RowError, max_errors: u64, table: &str, new_table: bool) -> String {
    let outcome = if new_table {
        format!("table '{table}' was not created")
    } else {
        format!("table '{table}' is unchanged")
    };
    if max_errors == 0 {
        format!("{error}; load rolled back, {outcome}")
    } else {
        format!("{error}; more than {max_errors} bad rows, load rolled back, {outcome}")
    }
}

impl LoadError {
    /// The located row error, when the load failed on a bad row.
    pub fn row_error(&self) -> Option<&RowError> {
        match self {
            LoadError::Rejected { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The input or the request is at fault (unreadable file, bad rows, columns
    /// that do not match, bad generator parameters), not the database; a CLI maps
    /// this to its "bad input" exit code.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, LoadError::Storage(_))
    }

    /// This error's process exit code (see `strata_storage::exit`): bad
    /// generator parameters are usage, any other fault of the input is bad
    /// input, and a database failure has the storage error's code.
    pub fn exit_code(&self) -> u8 {
        use strata_storage::exit;
        match self {
            LoadError::Storage(s) => s.exit_code(),
            LoadError::Usage(_) => exit::USAGE,
            _ => exit::BAD_INPUT,
        }
    }

    /// An [`exit::Classifier`](strata_storage::exit::Classifier) for this type.
    pub fn classify(e: &(dyn std::error::Error + 'static)) -> Option<u8> {
        e.downcast_ref::<LoadError>().map(LoadError::exit_code)
    }

    /// The storage error underneath, if the database failed.
    pub fn storage(&self) -> Option<&StorageError> {
        match self {
            LoadError::Storage(e) => Some(e),
            _ => None,
        }
    }
}

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
