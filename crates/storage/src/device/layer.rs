//! A device layer a database puts on top of its device stack when it opens,
//! and the one fact about the cold tier storage has to know.
//!
//! Why a hook rather than a device here: the cold tier (Skipper's cold storage
//! device's client, crate `strata-cold`) needs an HTTP client, an async runtime and a
//! local object cache, none of which belong in the storage crate every other
//! crate links. Storage only offers [`DeviceLayer`] — "wrap the stack
//! real → fault → modeled in this" — through `DbOptions::cold_tier`, and knows
//! the name of the file that says a paged file lives on the cold tier:
//! `<path>.cold.json`, the *manifest*. The manifest is the commit point of
//! moving a file to the cold tier and back: while it exists the file's pages
//! are the objects it lists, whatever local segments are still there (they
//! are leftovers of an interrupted move, which a read-write open removes).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Device;
use crate::error::Result;

/// The suffix of a paged file's cold-tier manifest: `<path>.cold.json`.
pub const COLD_MANIFEST_SUFFIX: &str = ".cold.json";

/// The manifest path of the paged file whose base path is `base`.
pub fn cold_manifest_path(base: &Path) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(COLD_MANIFEST_SUFFIX);
    PathBuf::from(s)
}

/// Whether the paged file whose base path is `base` is on the cold tier.
pub fn is_cold(base: &Path) -> bool {
    cold_manifest_path(base).exists()
}

/// Something that wraps a database's device stack when the database opens
/// (the cold tier: files with a manifest are read from the cold storage
/// device, everything else goes to the device it wraps).
pub trait DeviceLayer: Send + Sync + std::fmt::Debug {
    /// The device the database uses: `inner` wrapped. `db_dir` is the
    /// database's directory (for a cache under its `tmp/`).
    fn wrap(&self, inner: Arc<dyn Device>, db_dir: &Path) -> Result<Arc<dyn Device>>;

    /// The layer itself, for the crate that made it to find its own type
    /// again (the SQL layer's out-of-order executor asks the cold tier for
    /// objects directly).
    fn as_any(&self) -> &dyn std::any::Any;
}
