//! The access layer's error type.

use strata_storage::StorageError;

pub type Result<T, E = AccessError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("predicate '{text}': {reason}")]
    Predicate { text: String, reason: String },
    #[error("table '{table}' has no index on column '{column}'")]
    NoIndex { table: String, column: String },
    #[error("{0}")]
    Config(String),
    #[error("result cache: {0}")]
    ResultCache(String),
    /// Writing the Result Cache's spill file failed (the file is removed).
    #[error("result cache spill: {0}")]
    ResultCacheSpill(String),
}
