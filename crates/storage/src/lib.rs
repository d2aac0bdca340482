//! strata's storage layer: typed rows on 8 KiB slotted pages, heap files, B+-tree
//! secondary indexes, a buffer pool, real (direct-I/O) and modeled devices, and a
//! crash-safe catalog. See `docs/architecture.md` for a walk through the layers.

pub mod device;
pub mod error;
pub mod page;
pub mod types;

pub use error::{Result, StorageError};
