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

impl AccessError {
    /// This error's process exit code (see `strata_storage::exit`): a bad
    /// predicate, index or setting is the user's (usage); a Result Cache
    /// failure is operational.
    pub fn exit_code(&self) -> u8 {
        use strata_storage::exit;
        match self {
            AccessError::Storage(s) => s.exit_code(),
            AccessError::ResultCache(_) | AccessError::ResultCacheSpill(_) => exit::FAILURE,
            AccessError::Predicate { .. }
            | AccessError::NoIndex { .. }
            | AccessError::Config(_) => exit::USAGE,
        }
    }

    /// An [`exit::Classifier`](strata_storage::exit::Classifier) for this type.
    pub fn classify(e: &(dyn std::error::Error + 'static)) -> Option<u8> {
        e.downcast_ref::<AccessError>().map(AccessError::exit_code)
    }
}
