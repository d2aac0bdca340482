//! A loader's errors: a bad row located in its file ([`RowError`]: file,
//! line or row, column by number and name, reason) and [`LoadError`], with
//! its exit code.

use std::fmt;
use std::path::PathBuf;

use strata_storage::StorageError;

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
