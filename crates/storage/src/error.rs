//! The storage layer's one error type. Every variant names *where* the problem is
//! (file, page, table, column) so a user can act on it.

use std::path::PathBuf;

pub type Result<T, E = StorageError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("corrupt page {page} of {path}: {reason}")]
    CorruptPage {
        path: PathBuf,
        page: u64,
        reason: String,
    },
    #[error(
        "{path} is truncated: it has {bytes} bytes, expected a multiple of the page size with at least {expected_pages} pages"
    )]
    Truncated {
        path: PathBuf,
        bytes: u64,
        expected_pages: u64,
    },
    #[error("page {page} is beyond the end of {path} ({pages} pages)")]
    PageOutOfRange {
        path: PathBuf,
        page: u64,
        pages: u64,
    },
    #[error("unknown table '{0}'")]
    UnknownTable(String),
    #[error("table '{0}' already exists")]
    TableExists(String),
    /// A table and a view share one name space (SQLSTATE 42P07, as
    /// PostgreSQL's "relation already exists").
    #[error("'{0}' is a view; a table cannot have its name (SQLSTATE 42P07)")]
    ViewExists(String),
    #[error("unknown index '{0}'")]
    UnknownIndex(String),
    #[error("index '{0}' already exists")]
    IndexExists(String),
    #[error("unknown column '{column}' in table '{table}'")]
    UnknownColumn { table: String, column: String },
    #[error("invalid schema: {0}")]
    Schema(String),
    #[error("value does not fit column '{column}': {reason}")]
    Value { column: String, reason: String },
    #[error("tuple of {size} bytes does not fit in a page (at most {max} bytes)")]
    TupleTooLarge { size: usize, max: usize },
    #[error("no tuple at page {page} slot {slot} of table '{table}'")]
    NoSuchTuple { table: String, page: u32, slot: u16 },
    #[error(
        "table '{table}': the row at page {page} slot {slot} points to side row page {side_page} slot {side_slot}, which does not exist (run strata check)"
    )]
    LostSideRow {
        table: String,
        page: u32,
        slot: u16,
        side_page: u32,
        side_slot: u16,
    },
    #[error("page {page} of table '{table}' has no room for a tuple of {size} bytes")]
    NoRoom {
        table: String,
        page: u64,
        size: usize,
    },
    #[error("page {page} of {path} is pinned; it cannot be dropped now")]
    PagePinned { path: PathBuf, page: u64 },
    #[error(
        "buffer pool exhausted: all {frames} frames are pinned (a write transaction keeps \
         every page it changes in the pool until it commits: a larger --buffer-pool or \
         smaller statements help)"
    )]
    PoolExhausted { frames: usize },
    #[error("catalog {path}: {reason}")]
    Catalog { path: PathBuf, reason: String },
    #[error("database directory {path}: {reason}")]
    Database { path: PathBuf, reason: String },
    #[error("device profile: {0}")]
    Profile(String),
    #[error("index '{index}': {reason}")]
    Index { index: String, reason: String },
    /// A unique index (a PRIMARY KEY or UNIQUE constraint) would hold a key
    /// twice (SQLSTATE 23505).
    #[error(
        "duplicate key value violates unique constraint '{index}' of table '{table}' \
         (SQLSTATE 23505): key ({columns})=({key}) {why}"
    )]
    Unique {
        index: String,
        table: String,
        columns: String,
        key: String,
        /// "already exists" or "appears twice".
        why: &'static str,
    },
    #[error("changing table '{table}' needs a write transaction (Database::begin_write)")]
    NoTransaction { table: String },
    /// A write waited longer than its lock timeout for the transaction
    /// holding the database's writer turn (SQLSTATE 55P03).
    #[error(
        "canceling statement due to lock timeout: another transaction held the writer turn \
         for more than {waited_ms} ms (SQLSTATE 55P03)"
    )]
    LockTimeout { waited_ms: u64 },
    /// A read-only handle read a page a writer committed after the handle's
    /// snapshot (`device/snapshot.rs`): the statement must run again on a
    /// new snapshot (SQLSTATE 40001).
    #[error(
        "{path}: page {page} was written by a commit after this read-only snapshot (log \
         position {lsn}, the snapshot ends at {end}): another process wrote the database \
         meanwhile; run the statement again on a new snapshot (SQLSTATE 40001)"
    )]
    SnapshotMoved {
        path: std::path::PathBuf,
        page: u64,
        lsn: u64,
        end: u64,
    },
    /// A table on the cold tier was written to, or opened without a cold tier
    /// (the message says which and what to do).
    #[error("{message}")]
    ColdTier { table: String, message: String },
    /// What a columnar table does not do (yet): the message says what and
    /// how to convert the table back.
    #[error("{message}")]
    Columnar { table: String, message: String },
    /// An object (or bucket) of the cold tier could not be read or was not
    /// what its manifest says (`corrupt`: its checksum or size is wrong).
    /// `object` says which: `object <bucket>/<key>` or `bucket <bucket>`.
    #[error("cold tier: {object} at {endpoint}: {reason}")]
    ColdObject {
        object: String,
        endpoint: String,
        reason: String,
        corrupt: bool,
    },
}

impl StorageError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StorageError::Io {
            path: path.into(),
            source,
        }
    }

    /// Whether a read-only handle may have met this because a writer beside
    /// it changed what it read (a page from after its snapshot, a page read
    /// while it was written, a file or log segment replaced): then it is
    /// worth reading again on a new snapshot. Met again on a new one, it is
    /// what it says.
    pub fn may_be_a_writer_beside(&self) -> bool {
        match self {
            StorageError::SnapshotMoved { .. }
            | StorageError::CorruptPage { .. }
            | StorageError::Truncated { .. } => true,
            StorageError::Io { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::UnexpectedEof
            ),
            _ => false,
        }
    }
}
