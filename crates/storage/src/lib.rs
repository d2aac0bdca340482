//! strata's storage layer: typed rows on 8 KiB slotted pages, heap files, B+-tree
//! secondary indexes, a buffer pool, real (direct-I/O) and modeled devices, and a
//! crash-safe catalog. See `docs/architecture.md` for a walk through the layers.

pub mod btree;
pub mod buffer;
pub mod catalog;
pub mod db;
pub mod device;

pub mod error;
pub mod exit;
pub mod heap;
pub mod maintenance;
pub mod page;
pub mod panic_guard;
pub mod progress;
pub mod recovery;
pub mod row;

pub mod temp;

pub mod util;
pub mod wal;

pub use db::{Database, DbOptions, IndexSpec, Progress, Table, TableOptions};
pub use error::{Result, StorageError};
