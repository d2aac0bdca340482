//! The columnar format's error type.

use std::path::PathBuf;

use strata_storage::StorageError;

pub type Result<T, E = ColumnsError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum ColumnsError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Access(#[from] strata_access::AccessError),
    /// A column file could not be written or read as Parquet.
    #[error("column file {file}: {source}")]
    Parquet {
        file: PathBuf,
        source: parquet::errors::ParquetError,
    },
    /// A column file is not the one the catalog committed (its size, its
    /// rows or its columns differ).
    #[error("column file {file}: {reason}")]
    Corrupt { file: PathBuf, reason: String },
    /// Rows and Arrow batches did not convert (a value the type cannot hold).
    #[error("table {table}: {reason}")]
    Convert { table: String, reason: String },
}

impl ColumnsError {
    pub(crate) fn parquet(file: impl Into<PathBuf>, source: parquet::errors::ParquetError) -> Self {
        ColumnsError::Parquet {
            file: file.into(),
            source,
        }
    }

    /// This error's process exit code (see `strata_storage::exit`).
    pub fn exit_code(&self) -> u8 {
        use strata_storage::exit;
        match self {
            ColumnsError::Storage(s) => s.exit_code(),
            ColumnsError::Access(a) => a.exit_code(),
            ColumnsError::Parquet { .. } => exit::FAILURE,
            ColumnsError::Corrupt { .. } => exit::CORRUPT,
            ColumnsError::Convert { .. } => exit::BAD_INPUT,
        }
    }

    /// An [`exit::Classifier`](strata_storage::exit::Classifier) for this type.
    pub fn classify(e: &(dyn std::error::Error + 'static)) -> Option<u8> {
        e.downcast_ref::<ColumnsError>()
            .map(ColumnsError::exit_code)
    }
}
