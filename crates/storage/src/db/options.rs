//! How a database, a table and an index are opened or made: [`DbOptions`]
//! (pool size, device, faults, checkpoint threshold, cold tier),
//! [`TableOptions`] and [`IndexSpec`], and their defaults.

use std::sync::Arc;

use crate::device::{DeviceLayer, DeviceProfile, FaultInjector, FaultPlan};
use crate::error::Result;

/// Default buffer pool size.
pub const DEFAULT_POOL_BYTES: usize = 256 << 20;
/// The log grows to this many bytes past the last checkpoint before a commit
/// starts the next checkpoint (recovery then reads at most about this much).
pub const CHECKPOINT_LOG_BYTES: u64 = 64 << 20;
/// Default segment size: 1 GiB of pages, as Skipper ships 1 GB objects.
pub const DEFAULT_SEGMENT_PAGES: u64 = (1 << 30) / crate::page::PAGE_SIZE as u64;

#[derive(Clone, Debug)]
pub struct DbOptions {
    pub buffer_pool_bytes: usize,
    /// Open data files with O_DIRECT (cold reads).
    pub direct_io: bool,
    /// Charge I/O by a modeled device profile.
    pub profile: Option<DeviceProfile>,
    /// Open with a shared lock and change nothing.
    pub read_only: bool,
    /// Inject the faults of this injector into every request to the files
    /// (tests; the CLI arms one from `STRATA_FAULT`).
    pub faults: Option<Arc<FaultInjector>>,
    /// A commit starts a checkpoint once the log has grown this much past the
    /// last one ([`CHECKPOINT_LOG_BYTES`] by default).
    pub checkpoint_log_bytes: u64,
    /// The cold tier: a layer over the device stack that reads files with a
    /// cold-tier manifest from the cold storage device (see
    /// [`crate::device::layer`]; `strata-cold` makes one). Without it, opening
    /// a table on the cold tier fails saying so.
    pub cold_tier: Option<Arc<dyn DeviceLayer>>,
    /// Pace scans' reads on the real device by a window learned from its
    /// latencies (see [`crate::device::read_window`]); on by default, and
    /// only for the real device with direct I/O.
    pub read_window: bool,
}

impl DbOptions {
    /// Sets the device from the command line's `--device` value: `real`
    /// (direct I/O, scans' reads paced by the read window), `real-unpaced`
    /// (direct I/O, every scan's reads in flight as it issues them), `buffered` (through the OS page cache), or a modeled
    /// profile over the real files (`hdd`, `ssd`, or a JSON profile file).
    pub fn device(mut self, spec: &str) -> Result<DbOptions> {
        (self.direct_io, self.profile, self.read_window) = match spec {
            "real" => (true, None, true),
            "real-unpaced" => (true, None, false),
            "buffered" => (false, None, false),
            spec => (true, Some(DeviceProfile::parse(spec)?), false),
        };
        Ok(self)
    }

    /// Arms the fault plan in `STRATA_FAULT`, if set (see
    /// [`crate::device::fault`]): both binaries call this, so the crash and
    /// I/O-error tests drive the real programs at a chosen write.
    pub fn faults_from_env(mut self) -> Result<DbOptions> {
        if let Ok(plan) = std::env::var(crate::device::fault::FAULT_ENV) {
            self.faults = Some(FaultInjector::with_plan(plan.parse::<FaultPlan>()?));
        }
        Ok(self)
    }
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            buffer_pool_bytes: DEFAULT_POOL_BYTES,
            direct_io: true,
            profile: None,
            read_only: false,
            faults: None,
            checkpoint_log_bytes: CHECKPOINT_LOG_BYTES,
            cold_tier: None,
            read_window: true,
        }
    }
}

#[derive(Clone, Debug)]
pub struct TableOptions {
    /// Fraction of each heap page filled by loads and inserts.
    pub fill_factor: f64,
    pub segment_pages: u64,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            fill_factor: 1.0,
            segment_pages: DEFAULT_SEGMENT_PAGES,
        }
    }
}

/// The fraction of each leaf a bulk build fills, by default.
pub const DEFAULT_LEAF_FILL: f64 = 0.9;

/// The default leaf fill of an index with cached columns: the free 30% of
/// each leaf is the index cache's. Measured by `strata bench index-cache fill`
/// (`results/index-cache/fill.md`): from 0.9 to 0.7 the cache's capacity
/// grows from 6% to 25% of the items and zipf 0.8 lookups hit 57% instead of
/// 41% (the oracle allows 59%), for 29% more leaves; below 0.7 the hit rate
/// of skewed lookups hardly grows while the index keeps growing.
pub const CACHED_LEAF_FILL: f64 = 0.7;

/// An index to create.
#[derive(Clone, Debug)]
pub struct IndexSpec {
    pub name: String,
    pub columns: Vec<String>,
    /// Fraction of each leaf filled by the bulk build ([`DEFAULT_LEAF_FILL`],
    /// or [`CACHED_LEAF_FILL`] once [`IndexSpec::cache`] declares columns).
    pub leaf_fill: f64,
    /// Columns cached in the leaves' free space (default none; see
    /// [`Database::set_index_cache`]).
    pub cache: Vec<String>,
    /// Whether no two rows may have the same key (a PRIMARY KEY or UNIQUE
    /// constraint; keys with a NULL are never equal to another).
    pub unique: bool,
}

impl IndexSpec {
    pub fn new(name: impl Into<String>, columns: &[&str]) -> IndexSpec {
        IndexSpec {
            name: name.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            leaf_fill: DEFAULT_LEAF_FILL,
            cache: Vec::new(),
            unique: false,
        }
    }

    /// The same index, enforcing that no two rows have the same key.
    pub fn unique(mut self) -> IndexSpec {
        self.unique = true;
        self
    }

    /// The same index, caching `columns` in its leaves' free space; a leaf
    /// fill left at [`DEFAULT_LEAF_FILL`] becomes [`CACHED_LEAF_FILL`] (set
    /// `leaf_fill` afterwards to choose another).
    pub fn cache(mut self, columns: &[&str]) -> IndexSpec {
        self.cache = columns.iter().map(|c| c.to_string()).collect();
        if !self.cache.is_empty() && self.leaf_fill == DEFAULT_LEAF_FILL {
            self.leaf_fill = CACHED_LEAF_FILL;
        }
        self
    }
}
