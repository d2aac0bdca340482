//! A database: a directory holding `catalog.json`, a `LOCK` file, the data files
//! under `data/` and the write-ahead log under `wal/`, plus the device and buffer
//! pool every table shares.
//!
//! Loads are atomic ([`TableLoad`]): new heap pages are written after the last
//! committed page, every index of the table is rebuilt into a new file, all of it
//! is fsynced, and only then is the catalog swapped. A crash at any point leaves
//! either the old state or the new one: opening the database read-write removes
//! files the catalog does not know and cuts heaps back to their committed size.
//!
//! Row changes ([`Table::insert_row`] and friends, and their batched forms
//! [`Table::insert_rows`] and [`Table::delete_rows`], which visit each heap page
//! and index leaf once per batch) happen inside a write
//! transaction ([`Database::begin_write`]): its pages stay in the buffer pool
//! until it commits, when the changes are logged (`wal.rs`) and the log is
//! synced; opening the database redoes committed changes the data files do not
//! have yet (`recovery.rs`). A checkpoint writes every changed page back and
//! lets the log start over; it runs when the log has grown past
//! [`CHECKPOINT_LOG_BYTES`], before loads and DDL, and when the database closes.
//!
//! Concurrency between processes: a read-write open takes an exclusive `flock` on
//! `LOCK`, a read-only open a shared one (`db_lock.rs`, which also says who holds
//! it when an open is refused). A read-only open of a database that was not
//! closed cleanly redoes the log in memory and writes nothing (`recovery.rs`).

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::btree::BTree;
use crate::buffer::{BufferPool, as_writer};
use crate::cache_governor::{CacheGovernor, Way};
use crate::cached_fields::CachedFields;
use crate::catalog::{Catalog, IndexDef, TableDef, sync_dir};
use crate::device::{
    COLD_MANIFEST_SUFFIX, Device, DeviceLayer, DeviceProfile, FaultDevice, FaultInjector,
    FaultPlan, FileDevice, ModeledDevice, cold_manifest_path,
};
use crate::error::{Result, StorageError};
use crate::heap::{HeapFile, HeapWriter};
use crate::keysort::SortedEntries;
// Callers name them `strata_storage::db::{Progress, NoProgress}` too.
pub use crate::progress::{NoProgress, Progress};
use crate::row::{DataType, RowLayout, Schema, Tid, Value, encode_key};
use crate::wal::{self, LogRecord, PageImage, TableSize, Wal};

thread_local! {
    /// A cache miss's encoded fields on their way into the leaf, kept per
    /// thread so a fill allocates nothing.
    static CACHE_VALUE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

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
    /// [`crate::device::layer`]; `strata-csd` makes one). Without it, opening
    /// a table on the cold tier fails saying so.
    pub cold_tier: Option<Arc<dyn DeviceLayer>>,
}

impl DbOptions {
    /// Sets the device from the command line's `--device` value: `real`
    /// (direct I/O), `buffered` (through the OS page cache), or a modeled
    /// profile over the real files (`hdd`, `ssd`, or a JSON profile file).
    pub fn device(mut self, spec: &str) -> Result<DbOptions> {
        (self.direct_io, self.profile) = match spec {
            "real" => (true, None),
            "buffered" => (false, None),
            spec => (true, Some(DeviceProfile::parse(spec)?)),
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
}

impl IndexSpec {
    pub fn new(name: impl Into<String>, columns: &[&str]) -> IndexSpec {
        IndexSpec {
            name: name.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            leaf_fill: DEFAULT_LEAF_FILL,
            cache: Vec::new(),
        }
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

/// Pages [`Database::prewarm`] reads per request (1 MiB).
const PREWARM_RUN_PAGES: u64 = 128;

pub struct Database {
    dir: PathBuf,
    device: Arc<dyn Device>,
    pool: Arc<BufferPool>,
    catalog: Mutex<Catalog>,
    tables: Mutex<HashMap<String, Arc<Table>>>,
    read_only: bool,
    profile: Option<DeviceProfile>,
    /// Held by the one write transaction at a time ([`Database::begin_write`]),
    /// and by loads, DDL and checkpoints.
    writer: Mutex<()>,
    /// Whether a write transaction runs (row changes check it).
    owner: Arc<TxnOwner>,
    /// Read statements hold it shared ([`Database::read_snapshot`]); a commit
    /// takes it to make its changes visible, so no statement sees part of one.
    publish: parking_lot::RwLock<()>,
    /// The log (`None` when read-only).
    wal: Option<Arc<Wal>>,
    /// The last commit sequence number handed out.
    csn: AtomicU64,
    checkpoint_log_bytes: u64,
    /// The cold tier wrapping the device, if any (tables on it can be
    /// opened only then).
    cold_tier: Option<Arc<dyn DeviceLayer>>,
    /// Set by [`Database::crash`]: closing writes nothing back.
    crashed: std::sync::atomic::AtomicBool,
    /// Read-only over a log redone in memory: it writes nothing, not even
    /// access counts when it closes.
    redone_in_memory: bool,
    _lock: File,
}

/// Whether rows may change now: while a write transaction runs. The
/// transaction is not tied to the thread that began it (a SQL session keeps
/// one open across statements that run on other threads); there is one at a
/// time, so every row change while it runs belongs to it.
#[derive(Default)]
pub(crate) struct TxnOwner(std::sync::atomic::AtomicBool);

impl TxnOwner {
    fn check(&self, table: &str) -> Result<()> {
        if self.0.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(StorageError::NoTransaction {
                table: table.to_string(),
            })
        }
    }
}

impl Database {
    /// Creates a new, empty database in `dir` (created if missing).
    pub fn create(dir: &Path, opts: DbOptions) -> Result<Database> {
        let dberr = |reason: String| StorageError::Database {
            path: dir.to_path_buf(),
            reason,
        };
        if Catalog::path(dir).exists() {
            return Err(dberr("a database already exists here".into()));
        }
        std::fs::create_dir_all(dir.join("data")).map_err(|e| StorageError::io(dir, e))?;
        let lock = crate::db_lock::lock(dir, false)?;
        wal::create(dir)?;
        Catalog::default().save(dir)?;
        sync_dir(&dir.join("data"))?;
        drop(lock);
        Self::open(dir, opts)
    }

    /// Opens the database in `dir`, creating it if it does not exist.
    pub fn open_or_create(dir: &Path, opts: DbOptions) -> Result<Database> {
        if Catalog::path(dir).exists() {
            Self::open(dir, opts)
        } else {
            Self::create(dir, opts)
        }
    }

    /// Opens an existing database. A read-write open first redoes what the log
    /// holds past the last checkpoint, then repairs what an interrupted load
    /// left behind (see the module docs). A read-only open of a database that
    /// was not closed cleanly redoes the log in memory and writes nothing.
    pub fn open(dir: &Path, opts: DbOptions) -> Result<Database> {
        let lock = crate::db_lock::lock(dir, opts.read_only)?;
        let mut catalog = Catalog::load(dir)?;
        let mut real: Arc<dyn Device> = Arc::new(FileDevice::new(opts.direct_io));
        if let Some(faults) = &opts.faults {
            real = Arc::new(FaultDevice::new(real, faults.clone()));
        }
        let mut device: Arc<dyn Device> = match &opts.profile {
            Some(p) => Arc::new(ModeledDevice::new(real, p.clone())),
            None => real,
        };
        if let Some(layer) = &opts.cold_tier {
            device = layer.wrap(device, dir)?;
        }
        let mut in_memory = None;
        if opts.read_only
            && let Some((overlay, r)) =
                crate::recovery::recover_in_memory(dir, &mut catalog, device.clone())?
        {
            (device, in_memory) = (overlay, Some(r));
        }
        let pool = Arc::new(BufferPool::new(device.clone(), opts.buffer_pool_bytes));
        let (wal, recovered) = if opts.read_only {
            (None, None)
        } else {
            let faults = opts.faults.as_deref();
            let r = crate::recovery::recover(dir, &mut catalog, device.as_ref(), faults)?;
            let wal = Arc::new(Wal::open(dir, r.end, opts.faults.clone())?);
            pool.set_log(wal.clone());
            (Some(wal), Some(r))
        };
        let csn = match recovered.as_ref().or(in_memory.as_ref()) {
            Some(r) => r.csn,
            None => wal::read_control(&dir.join(wal::WAL_DIR))?.csn,
        };
        let db = Database {
            dir: dir.to_path_buf(),
            device,
            pool,
            catalog: Mutex::new(catalog),
            tables: Mutex::new(HashMap::new()),
            read_only: opts.read_only,
            profile: opts.profile.clone(),
            writer: Mutex::new(()),
            owner: Arc::default(),
            publish: parking_lot::RwLock::new(()),
            wal,
            csn: AtomicU64::new(csn),
            checkpoint_log_bytes: opts.checkpoint_log_bytes,
            cold_tier: opts.cold_tier.clone(),
            crashed: Default::default(),
            redone_in_memory: in_memory.is_some(),
            _lock: lock,
        };
        if let Some(r) = recovered
            && r.end != r.redo_lsn
        {
            // The log restarts after what was redone (and after any torn tail);
            // the tables it changed are open, so the checkpoint records their
            // sizes and entry counts in the catalog before the log forgets them.
            let _w = db.writer.lock();
            for t in &r.tables {
                db.table(t)?;
            }
            // Recovery brought the sizes forward in memory only; the redone
            // pages are synced, so the catalog may now say so.
            db.catalog.lock().save(&db.dir)?;
            db.checkpoint_locked()?;
        }
        if let Some(r) = in_memory {
            // The index entry counts the log brought forward, in memory only.
            let mut cat = db.catalog.lock().clone();
            for t in &r.tables {
                let table = db.table(t)?;
                if let Some(def) = cat.tables.get_mut(t) {
                    bring_counts_forward(def, &table);
                }
            }
            *db.catalog.lock() = cat;
        }
        if !opts.read_only {
            db.remove_orphans()?;
        }
        Ok(db)
    }

    /// Why this handle, opened read-only, may not write: who else holds the
    /// database now and what it does, or that no one does.
    pub fn read_only_reason(&self) -> String {
        crate::db_lock::read_only_reason(&self.dir, &self._lock, self.redone_in_memory)
    }

    /// The cold tier layer the database was opened with (`DbOptions::cold_tier`).
    pub fn cold_tier(&self) -> Option<&Arc<dyn DeviceLayer>> {
        self.cold_tier.as_ref()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn device(&self) -> &Arc<dyn Device> {
        &self.device
    }
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }
    /// The modeled device profile the database was opened with, if any.
    pub fn profile(&self) -> Option<&DeviceProfile> {
        self.profile.as_ref()
    }
    /// A copy of the current catalog.
    pub fn catalog(&self) -> Catalog {
        self.catalog.lock().clone()
    }
    /// The tables, by name; side tables (`split.rs`) are part of their
    /// tables, not listed.
    pub fn table_names(&self) -> Vec<String> {
        self.catalog
            .lock()
            .tables
            .values()
            .filter(|t| t.side_of.is_none())
            .map(|t| t.name.clone())
            .collect()
    }

    /// The statistics `ANALYZE` last stored for `table` (see [`TableDef::stats`]).
    pub fn table_stats(&self, table: &str) -> Result<Option<serde_json::Value>> {
        Ok(self.catalog.lock().table(table)?.stats.clone())
    }

    /// Stores `stats` for `table`, replacing the catalog atomically.
    pub fn set_table_stats(&self, table: &str, stats: serde_json::Value) -> Result<()> {
        self.writable()?;
        self.change_table_def(table, |def| {
            def.stats = Some(stats);
            Ok(())
        })
    }

    /// Changes `table`'s catalog entry with `f` and saves the catalog, which
    /// is the commit point of every catalog change: if `f` or the save fails,
    /// the catalog stays as it was, on disk and in memory.
    fn change_table_def<T>(
        &self,
        table: &str,
        f: impl FnOnce(&mut TableDef) -> Result<T>,
    ) -> Result<T> {
        let mut cat = self.catalog.lock();
        let mut next = cat.clone();
        let def = next
            .tables
            .get_mut(table)
            .ok_or_else(|| StorageError::UnknownTable(table.into()))?;
        let out = f(def)?;
        next.save(&self.dir)?;
        *cat = next;
        Ok(out)
    }

    /// Whether this handle may write (a read-only open may not).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    pub(crate) fn writable(&self) -> Result<()> {
        if self.read_only {
            return Err(StorageError::Database {
                path: self.dir.clone(),
                reason: "opened read-only".into(),
            });
        }
        Ok(())
    }

    /// Deletes data files the catalog does not reference (from loads that never
    /// committed), a leftover temporary catalog and stale Result Cache spill files.
    fn remove_orphans(&self) -> Result<()> {
        let cat = self.catalog.lock();
        let mut live = BTreeSet::new();
        for t in cat.tables.values() {
            live.insert(t.heap_file.clone());
            for i in &t.indexes {
                live.insert(i.file.clone());
                if let Some(h) = &i.hot {
                    live.insert(h.file.clone());
                }
            }
        }
        let data = self.dir.join("data");
        let entries = std::fs::read_dir(&data).map_err(|e| StorageError::io(&data, e))?;
        let mut removed = false;
        for e in entries {
            let e = e.map_err(|e| StorageError::io(&data, e))?;
            let name = e.file_name().to_string_lossy().into_owned();
            // Segment files are `<base>.NNNN`; a file on the cold tier has a
            // manifest `<base>.cold.json` (and, while one is written,
            // `<base>.cold.json.tmp`, never live).
            let (base, segment) = match name.rsplit_once('.') {
                Some((b, seg)) if seg.len() == 4 && seg.bytes().all(|c| c.is_ascii_digit()) => {
                    (b.to_string(), true)
                }
                _ => match name
                    .strip_suffix(COLD_MANIFEST_SUFFIX)
                    .or_else(|| name.strip_suffix(".heat"))
                {
                    Some(b) => (b.to_string(), false),
                    None => (name.clone(), false),
                },
            };
            // Local segments of a file whose manifest exists are leftovers of
            // a move to or from the cold tier that did not finish: the
            // manifest is the move's commit point, so the objects hold the file.
            let stale_copy = segment && data.join(format!("{base}{COLD_MANIFEST_SUFFIX}")).exists();
            if !live.contains(&format!("data/{base}")) || stale_copy {
                std::fs::remove_file(e.path()).map_err(|err| StorageError::io(e.path(), err))?;
                removed = true;
            }
        }
        let _ = std::fs::remove_file(
            self.dir
                .join(format!("{}.tmp", crate::catalog::CATALOG_FILE)),
        );
        // Temporary files in `tmp/` (the temp dir the CLI and benches give
        // operators) left by a process that died: no other process can be
        // using them while we hold the exclusive lock.
        crate::temp::remove_all(&self.dir.join("tmp"));
        if removed {
            sync_dir(&data)?;
        }
        Ok(())
    }

    /// The open table `name`.
    pub fn table(&self, name: &str) -> Result<Arc<Table>> {
        if let Some(t) = self.tables.lock().get(name) {
            return Ok(t.clone());
        }
        let def = self.catalog.lock().table(name)?.clone();
        let t = Arc::new(Table::open(self, def)?);
        Ok(self
            .tables
            .lock()
            .entry(name.to_string())
            .or_insert(t)
            .clone())
    }

    /// Creates an empty table and commits it.
    pub fn create_table(&self, name: &str, schema: Schema, opts: TableOptions) -> Result<()> {
        let load = self.begin_create_load(name, schema, opts, vec![])?;
        load.commit(&NoProgress)?;
        Ok(())
    }

    /// Starts a load that creates table `name` with `indexes`; nothing is visible
    /// until [`TableLoad::commit`].
    pub fn begin_create_load(
        &self,
        name: &str,
        schema: Schema,
        opts: TableOptions,
        indexes: Vec<IndexSpec>,
    ) -> Result<TableLoad<'_>> {
        self.writable()?;
        validate_name(name, "table")?;
        let writer = self.writer.lock();
        self.checkpoint_locked()?;
        if !crate::catalog::FILL_FACTORS.contains(&opts.fill_factor) {
            return Err(StorageError::Schema(format!(
                "fill factor {} is outside 0.05..=1.0",
                opts.fill_factor
            )));
        }
        if opts.segment_pages == 0 {
            return Err(StorageError::Schema(
                "segment size must be at least one page".into(),
            ));
        }
        let heap_file = {
            let mut cat = self.catalog.lock();
            if cat.tables.contains_key(name) {
                return Err(StorageError::TableExists(name.to_string()));
            }
            cat.new_file_name(&format!("{name}.heap"))
        };
        let def = TableDef {
            name: name.to_string(),
            schema,
            heap_file,
            segment_pages: opts.segment_pages,
            fill_factor: opts.fill_factor,
            pages: 0,
            rows: 0,
            indexes: vec![],
            stats: None,
            hot_region: None,
            encodings: vec![],
            side: None,
            side_of: None,
        };
        let heap = Arc::new(HeapFile::create(
            self.pool.clone(),
            &self.dir.join(&def.heap_file),
            name,
            def.segment_pages,
            def.fill_factor,
        )?);
        heap.set_tuple_shape(crate::row::shape::TupleShape::new(&def.schema));
        TableLoad::new(self, writer, def, heap, true, indexes)
    }

    /// Starts a load that appends to an existing table.
    pub fn begin_load(&self, name: &str) -> Result<TableLoad<'_>> {
        self.writable()?;
        let writer = self.writer.lock();
        // The catalog then holds every table's size as of the log's end, which
        // the load's catalog swap keeps.
        self.checkpoint_locked()?;
        let table = self.table(name)?;
        if table.is_cold() {
            return Err(cold_read_only(name));
        }
        let def = self.catalog.lock().table(name)?.clone();
        if let Some(owner) = &def.side_of {
            return Err(side_table_refused(name, owner));
        }
        let mut load = TableLoad::new(self, writer, def, table.heap.clone(), false, vec![])?;
        if let Some(s) = &table.side {
            let side_def = self.catalog.lock().table(s.table.name())?.clone();
            load.set_side(side_def, s.table.heap.clone())?;
        }
        Ok(load)
    }

    /// Builds a new index over an existing table and commits it.
    pub fn create_index(
        &self,
        table: &str,
        spec: IndexSpec,
        progress: &dyn Progress,
    ) -> Result<()> {
        let mut load = self.begin_load(table)?;
        load.add_index(spec)?;
        load.commit(progress)?;
        Ok(())
    }

    /// Removes a table and its files.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.writable()?;
        let _writer = self.writer.lock();
        self.checkpoint_locked()?;
        let table = self.table(name)?;
        let mut cat = self.catalog.lock();
        let def = cat.table(name)?.clone();
        if let Some(owner) = &def.side_of {
            return Err(side_table_refused(name, owner));
        }
        // A side table goes with its table, in the same catalog swap.
        let side = def.side.as_ref().map(|s| cat.tables.remove(s));
        cat.tables.remove(name);
        cat.save(&self.dir)?;
        drop(cat);
        self.tables.lock().remove(name);
        self.forget_table(&table)?;
        for heap_file in
            std::iter::once(&def.heap_file).chain(side.iter().flatten().map(|s| &s.heap_file))
        {
            remove_files(&self.dir, heap_file)?;
            let _ = std::fs::remove_file(crate::heat::AccessCounts::path_of(
                &self.dir.join(heap_file),
            ));
        }
        if let Some(s) = &def.side {
            self.tables.lock().remove(s);
        }
        for i in &def.indexes {
            remove_files(&self.dir, &i.file)?;
            if let Some(h) = &i.hot {
                remove_files(&self.dir, &h.file)?;
            }
        }
        Ok(())
    }

    /// Removes index `index` of `table` and its file.
    pub fn drop_index(&self, table: &str, index: &str) -> Result<()> {
        self.writable()?;
        let _writer = self.writer.lock();
        self.checkpoint_locked()?;
        let open = self.table(table)?;
        let file = open.index(index)?.btree.file_id();
        let gone = self.change_table_def(table, |def| {
            let at = def.index_position(index)?;
            Ok(def.indexes.remove(at))
        })?;
        // The table reopens from the catalog the next time it is asked for.
        self.tables.lock().remove(table);
        self.pool.discard_file(file)?;
        self.device.close(file);
        if let Some(h) = open.index(index)?.hot() {
            self.pool.discard_file(h.btree.file_id())?;
            self.device.close(h.btree.file_id());
        }
        if let Some(h) = &gone.hot {
            remove_files(&self.dir, &h.file)?;
        }
        remove_files(&self.dir, &gone.file)
    }

    /// Declares the columns index `index` of `table` caches in its leaves'
    /// free space (No Bits Left Behind §2.1); `columns` empty: no cache. The
    /// catalog keeps them (the commit point, as for other DDL); the open tree
    /// takes the new cache layout at once, which invalidates everything
    /// cached. An error names the table, index or column that is wrong, or
    /// the column that makes the items too wide (see `cached_fields.rs`).
    /// (`strata index cache` calls it; SQL's `CREATE INDEX ... WITH (cache =
    /// ...)` declares them at creation through [`IndexSpec::cache`].)
    pub fn set_index_cache(&self, table: &str, index: &str, columns: &[&str]) -> Result<()> {
        self.writable()?;
        let _writer = self.writer.lock();
        let open = self.table(table)?;
        let ix = open.index(index)?;
        let names: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        let fields =
            CachedFields::new(&open.name, &ix.def.name, &open.schema, &ix.key_cols, &names)?;
        if let Some(&c) = fields.cols.iter().find(|&&c| open.layout.is_side(c)) {
            return Err(side_column_in_index(
                &ix.def.name,
                &open.schema.columns[c].name,
            ));
        }
        // Stored as the schema spells them.
        let spelled = fields.names.clone();
        self.change_table_def(&open.name, |def| {
            def.index_mut(index)?.cache = spelled;
            Ok(())
        })?;
        ix.set_cached(fields);
        Ok(())
    }

    /// Holds off write transactions, loads, DDL and checkpoints.
    pub(crate) fn writer_lock(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.writer.lock()
    }

    /// Table `name` open for a rewrite or a move of its rows (compaction,
    /// split, clustering): not on the cold tier, and not a side table, whose
    /// rows' ids the rows of its table point to.
    pub(crate) fn movable_table(&self, name: &str) -> Result<Arc<Table>> {
        let t = self.table(name)?;
        if t.is_cold() {
            return Err(cold_read_only(name));
        }
        if let Some(owner) = &self.catalog.lock().table(name)?.side_of {
            return Err(side_table_refused(name, owner));
        }
        Ok(t)
    }

    /// A new data file's base path (`data/<what>.<n>`).
    pub(crate) fn new_file_name(&self, what: &str) -> String {
        self.catalog.lock().new_file_name(what)
    }

    /// Records `table`'s hot region and, with `hot`, index `hot.0`'s hot
    /// partition, in the catalog (the commit point of a clustering; the
    /// caller holds the writer lock). Another index's partition is kept.
    pub(crate) fn set_hot(
        &self,
        table: &str,
        region: u64,
        hot: Option<(String, crate::catalog::HotDef)>,
    ) -> Result<()> {
        self.change_table_def(table, |def| {
            def.hot_region = Some(region);
            if let Some((index, h)) = hot {
                def.index_mut(&index)?.hot = Some(h);
            }
            Ok(())
        })
    }

    /// Drops a replaced hot partition's pages and files.
    pub(crate) fn drop_hot_files(&self, h: &crate::hot::HotPartition) -> Result<()> {
        self.pool.discard_file(h.btree.file_id())?;
        self.device.close(h.btree.file_id());
        remove_files(&self.dir, &h.def.file)
    }

    /// Closes table `name` if it is open: its pages leave the buffer pool and
    /// its files are closed; the next [`Database::table`] opens it again from
    /// its files (the cold tier calls it after moving a table's files).
    /// Handles to the old table must not be used afterwards.
    pub fn close_table(&self, name: &str) -> Result<()> {
        self.writable()?;
        let _writer = self.writer.lock();
        self.checkpoint_locked()?;
        let open = self.tables.lock().remove(name);
        match open {
            Some(t) => self.forget_table(&t),
            None => Ok(()),
        }
    }

    fn forget_table(&self, table: &Table) -> Result<()> {
        for f in std::iter::once(table.heap.file_id())
            .chain(table.trees().iter().map(|i| i.btree().file_id()))
        {
            self.pool.discard_file(f)?;
            self.device.close(f);
        }
        if let Some(s) = &table.side {
            self.forget_table(&s.table)?;
        }
        Ok(())
    }

    /// Writes every change back to the data files and lets the log start over
    /// (waits for a write transaction in progress).
    pub fn checkpoint(&self) -> Result<()> {
        self.writable()?;
        let _writer = self.writer.lock();
        self.checkpoint_locked()
    }

    /// [`Database::checkpoint`] with the writer lock held.
    pub(crate) fn checkpoint_locked(&self) -> Result<()> {
        let Some(wal) = &self.wal else {
            return Ok(());
        };
        let redo = wal.next_lsn();
        // Pages go back only with their changes durable in the log.
        wal.flush_to(redo)?;
        // Under the writer lock: no page changes while they are written.
        self.pool.flush_all_in_runs()?;
        let tables: Vec<Arc<Table>> = self.tables.lock().values().cloned().collect();
        let mut cat = self.catalog.lock();
        let mut next = cat.clone();
        for t in &tables {
            self.device.sync(t.heap.file_id())?;
            for i in t.trees() {
                self.device.sync(i.btree().file_id())?;
            }
            if let Some(def) = next.tables.get_mut(&t.name) {
                def.pages = t.heap.num_pages();
                bring_counts_forward(def, t);
            }
            // Advice, not data: a counts file that cannot be written is
            // written at the next checkpoint.
            let _ = t.heat.save(&crate::heat::AccessCounts::path_of(
                &self.dir.join(&t.heap_file),
            ));
        }
        if next != *cat {
            next.save(&self.dir)?;
            *cat = next;
        }
        drop(cat);
        if wal.redo_lsn() != redo {
            wal.checkpoint(redo, self.csn.load(Ordering::Acquire))?;
        }
        Ok(())
    }

    /// Reads table `name`'s heap and index pages into the buffer pool, 1 MiB
    /// per request, heap first: what `pg_prewarm` does for PostgreSQL's
    /// shared buffers. A table larger than the pool leaves the pages read
    /// last. Returns the pages read from the device (cached ones are skipped).
    pub fn prewarm(&self, name: &str) -> Result<u64> {
        let t = self.table(name)?;
        let mut files = vec![(t.heap.file_id(), t.heap.num_pages())];
        for i in &t.indexes {
            files.push((i.btree.file_id(), i.btree.num_pages()));
        }
        let before = self.device.stats().snapshot().pages_read;
        for (file, pages) in files {
            let mut first = 0;
            while first < pages {
                let n = (pages - first).min(PREWARM_RUN_PAGES);
                self.pool.prefetch(file, first, n as usize)?;
                first += n;
            }
        }
        Ok(self.device.stats().snapshot().pages_read - before)
    }

    /// Holds off commits from becoming visible while the guard lives, so a read
    /// statement sees each write statement whole or not at all: it reads the
    /// last commit (a running transaction's changed pages are served to it as
    /// they were committed). Do not hold one across a commit of your own.
    pub fn read_snapshot(&self) -> ReadSnapshot<'_> {
        ReadSnapshot {
            _guard: self.publish.read(),
            csn: self.csn(),
        }
    }

    /// For a query of the session whose transaction is open (BEGIN ... COMMIT):
    /// while the guard lives every read sees that transaction's changes, and
    /// no other read statement runs (they wait, as a commit waits for them).
    pub fn read_own_writes(&self) -> OwnWrites<'_> {
        let guard = self.publish.write();
        self.pool.set_own_reads(true);
        OwnWrites {
            db: self,
            _guard: guard,
        }
    }

    /// The last commit sequence number.
    pub fn csn(&self) -> u64 {
        self.csn.load(Ordering::Acquire)
    }

    /// The write-ahead log (`None` when read-only).
    pub fn wal(&self) -> Option<&Arc<Wal>> {
        self.wal.as_ref()
    }

    /// Drops the predicates a transaction that commits nothing or aborts
    /// recorded (nothing it changed becomes visible).
    fn forget_pending_cache_changes(&self) {
        for t in self.tables.lock().values() {
            for i in &t.indexes {
                i.pending.lock().clear();
            }
        }
    }

    /// The open tables owning `files`.
    fn tables_of(
        &self,
        files: &std::collections::BTreeSet<crate::device::FileId>,
    ) -> Vec<Arc<Table>> {
        self.tables
            .lock()
            .values()
            .filter(|t| {
                files.contains(&t.heap.file_id())
                    || t.trees()
                        .iter()
                        .any(|i| files.contains(&i.btree().file_id()))
            })
            .cloned()
            .collect()
    }

    /// The paths (as the catalog names them) of the open data files.
    fn file_names(&self) -> HashMap<crate::device::FileId, String> {
        let mut out = HashMap::new();
        for t in self.tables.lock().values() {
            out.insert(t.heap.file_id(), t.heap_file.clone());
            for i in t.trees() {
                out.insert(i.btree().file_id(), i.file().to_string());
            }
        }
        out
    }
}

impl Database {
    /// Closes the database as a crash would: nothing more is written, what the
    /// pool holds is lost, and the next open recovers from the log. (Tests use
    /// it to crash at a chosen point without a second process.)
    pub fn crash(self) {
        self.crashed.store(true, Ordering::Release);
    }
}

impl Drop for Database {
    /// A clean close: everything written back, the log empty.
    fn drop(&mut self) {
        if self.crashed.load(Ordering::Acquire) || self.redone_in_memory {
            return;
        }
        if self.wal.is_some() {
            let _ = self.checkpoint();
        } else {
            // A read-only open changes no data, but its lookups were
            // accesses: the counts (advice, `heat.rs`) are kept. Readers
            // that run at once each write theirs; the last one wins.
            for t in self.tables.lock().values() {
                let _ = t.heat.save(&crate::heat::AccessCounts::path_of(
                    &self.dir.join(&t.heap_file),
                ));
            }
        }
    }
}

/// A write transaction: every change made through [`Table`]'s row methods
/// while it lives belongs to it. [`WriteTxn::commit`] logs them and
/// makes them durable together; dropping it without committing undoes them. One
/// runs at a time per database ([`Database::begin_write`] waits for the last).
///
/// Until it ends, the pages it changed stay pinned in the buffer pool with
/// their images from before its first change (no page of an uncommitted
/// transaction reaches the device), so undo is copying them back, and the log
/// holds only committed work.
pub struct WriteTxn<'a> {
    db: &'a Database,
    writer: Option<parking_lot::MutexGuard<'a, ()>>,
}

/// A read statement's view: every commit up to `csn`, none after
/// ([`Database::read_snapshot`]).
pub struct ReadSnapshot<'a> {
    _guard: parking_lot::RwLockReadGuard<'a, ()>,
    /// The last commit it sees.
    pub csn: u64,
}

/// See [`Database::read_own_writes`].
pub struct OwnWrites<'a> {
    db: &'a Database,
    _guard: parking_lot::RwLockWriteGuard<'a, ()>,
}

impl Drop for OwnWrites<'_> {
    fn drop(&mut self) {
        self.db.pool.set_own_reads(false);
    }
}

/// What a commit did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Commit {
    /// Its commit sequence number (0 when it changed nothing).
    pub csn: u64,
    /// Pages it changed.
    pub pages: usize,
    /// Bytes of log it wrote.
    pub log_bytes: u64,
}

impl Database {
    /// Starts a write transaction (waits for the one in progress).
    pub fn begin_write(&self) -> Result<WriteTxn<'_>> {
        self.writable()?;
        let guard = self.writer.lock();
        self.pool.begin_capture();
        self.owner.0.store(true, Ordering::Release);
        Ok(WriteTxn {
            db: self,
            writer: Some(guard),
        })
    }
}

impl WriteTxn<'_> {
    /// The open table `name`.
    pub fn table(&self, name: &str) -> Result<Arc<Table>> {
        self.db.table(name)
    }

    /// Logs the transaction's changes, makes the log durable up to them and
    /// returns when they are (other transactions committing meanwhile share the
    /// sync). On an error before the log took the changes they are undone.
    pub fn commit(mut self) -> Result<Commit> {
        let db = self.db;
        let wal = db.wal.clone().expect("a writable database has a log");
        // The trees' metas (root, height, entry count) go with their pages.
        let files = db.pool.captured_files();
        for t in db.tables_of(&files) {
            for i in t.trees() {
                if files.contains(&i.btree().file_id())
                    && let Err(e) = i.btree().store_meta()
                {
                    self.abort();
                    return Err(e);
                }
            }
        }
        let changed = db.pool.captured_keys();
        if changed.is_empty() {
            db.pool.end_capture();
            db.forget_pending_cache_changes();
            self.end();
            return Ok(Commit::default());
        }
        let tables = db.tables_of(&changed.iter().map(|c| c.0).collect());
        let csn = db.csn.load(Ordering::Acquire) + 1;
        let lsn = wal.next_lsn();
        let logged = crate::buffer::as_writer(|| {
            Self::log_records(db, &changed, &tables, lsn, csn, wal.redo_lsn())
        })
        .and_then(|bytes| {
            let end = wal.append(lsn, &bytes)?;
            Ok((end, bytes.len() as u64))
        });
        let (end, log_bytes) = match logged {
            Ok(x) => x,
            Err(e) => {
                self.abort();
                return Err(e);
            }
        };
        // Committed in memory, visible to readers at once (never to a read
        // statement in progress: it holds `publish`). The pages may go back once
        // the log is durable (the pool syncs it up to a page's LSN first).
        {
            let _publish = db.publish.write();
            // Index caches (No Bits Left Behind §2.1.2): predicates on the
            // tuples whose cached fields changed or that were deleted go to
            // each index's log before the switch, and no fill is taken until
            // it is over (a reader may have read the old fields). A row
            // changed in place keeps its index entries, but not the fields
            // cached for it; only the leaves caching one of these tuples lose
            // their caches, when next read.
            let cache_changes: Vec<_> = tables
                .iter()
                .flat_map(|t| &t.indexes)
                .filter_map(|i| {
                    let tids = std::mem::take(&mut *i.pending.lock());
                    (!tids.is_empty()).then(|| i.btree.begin_cache_update(&tids))
                })
                .collect();
            for c in db.pool.end_capture() {
                db.pool.release(c.file, c.page);
            }
            for t in &tables {
                t.heap.publish_pages();
                *t.committed.lock() = (t.heap.num_pages(), t.rows());
                for i in t.trees() {
                    i.btree().publish_meta();
                }
            }
            db.csn.store(csn, Ordering::Release);
            drop(cache_changes);
        }
        let pages = changed.len();
        self.end();
        wal.flush_to(end)?;
        if wal.since_checkpoint() > db.checkpoint_log_bytes {
            db.checkpoint()?;
        }
        Ok(Commit {
            csn,
            pages,
            log_bytes,
        })
    }

    /// Stamps the changed pages with the transaction's LSN and CSN and encodes
    /// their records (a full image for a page new or first changed since the
    /// checkpoint at `redo`, the changed ranges otherwise) and the commit record.
    fn log_records(
        db: &Database,
        changed: &[(crate::device::FileId, u64)],
        tables: &[Arc<Table>],
        lsn: u64,
        csn: u64,
        redo: u64,
    ) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let names = db.file_names();
        for &(file_id, page) in changed {
            let file = names
                .get(&file_id)
                .cloned()
                .ok_or_else(|| StorageError::Database {
                    path: db.dir.clone(),
                    reason: format!(
                        "a transaction changed {}, which no open table owns",
                        db.device.path(file_id).display()
                    ),
                })?;
            let before = db.pool.before_image(file_id, page);
            let mut g = db.pool.write(file_id, page)?;
            crate::page::set_lsn_csn(&mut g, lsn, csn);
            // Index-cache bytes are memory-only: neither image carries them,
            // so they never reach the log (nor, through it, the device).
            let after = crate::page::without_cache(&g);
            let image = match &before {
                Some(before) if crate::page::lsn_of(before) >= redo => {
                    PageImage::diff(&crate::page::without_cache(before), &after)
                }
                _ => PageImage::Full(after.into_owned()),
            };
            drop(g);
            LogRecord::Page { file, page, image }.encode(lsn + out.len() as u64, &mut out);
        }
        LogRecord::Commit {
            csn,
            tables: tables
                .iter()
                .map(|t| TableSize {
                    table: t.name.clone(),
                    pages: t.heap.num_pages(),
                    rows: t.rows(),
                })
                .collect(),
        }
        .encode(lsn + out.len() as u64, &mut out);
        Ok(out)
    }

    /// Undoes everything the transaction changed: its pages go back as they
    /// were while they are still captured (readers keep reading the committed
    /// images meanwhile), the pages it created are dropped, and the tables'
    /// sizes and trees go back to the last commit.
    fn abort(&mut self) {
        let db = self.db;
        db.pool.restore_captured();
        db.forget_pending_cache_changes();
        let tables = db.tables_of(&db.pool.captured_files());
        // Like a commit, out of sight of read statements: between the end of
        // the capture and the sizes going back, a reader would see the pages
        // the transaction created.
        let _publish = db.publish.write();
        for c in db.pool.end_capture() {
            match c.before {
                Some(_) => db.pool.release(c.file, c.page),
                None => db.pool.forget_changed(c.file, c.page),
            }
        }
        for t in &tables {
            let (pages, rows) = *t.committed.lock();
            t.heap.reset_pages(pages);
            t.rows.store(rows, Ordering::Release);
            for i in t.trees() {
                let _ = i.btree().reload_meta();
            }
        }
        self.end();
    }

    fn end(&mut self) {
        self.db.owner.0.store(false, Ordering::Release);
        self.writer = None;
    }
}

impl Drop for WriteTxn<'_> {
    fn drop(&mut self) {
        if self.writer.is_some() {
            self.abort();
        }
    }
}

pub(crate) fn validate_name(name: &str, what: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        && !name.as_bytes()[0].is_ascii_digit();
    if ok {
        Ok(())
    } else {
        Err(StorageError::Schema(format!(
            "{what} name '{name}' must be 1-64 letters, digits or '_' and not start with a digit"
        )))
    }
}

/// Sets `def`'s row and index entry counts to what the open table `t` has.
fn bring_counts_forward(def: &mut TableDef, t: &Table) {
    def.rows = t.rows();
    for (d, i) in def.indexes.iter_mut().zip(&t.indexes) {
        d.entries = i.btree.len();
        if let (Some(dh), Some(h)) = (d.hot.as_mut(), i.hot()) {
            dh.entries = h.btree.len();
        }
    }
}

/// The error of a change to a table on the cold tier.
/// The error of an index over, or caching, a side column (`split.rs`).
fn side_column_in_index(index: &str, column: &str) -> StorageError {
    StorageError::Index {
        index: index.to_string(),
        reason: format!(
            "column {column} is in the side table (strata split): an index entry is built from the table's row; strata split --merge puts it back"
        ),
    }
}

/// The error of a change asked of a side table directly (`split.rs`).
pub(crate) fn side_table_refused(table: &str, owner: &str) -> StorageError {
    StorageError::Schema(format!(
        "{table} holds side columns of table {owner} (vertical partitioning) and changes only through it; strata split {owner} --merge puts them back"
    ))
}

pub fn cold_read_only(table: &str) -> StorageError {
    StorageError::ColdTier {
        table: table.to_string(),
        message: format!(
            "table {table} is on the cold tier (read-only); strata tier local {table} brings it back"
        ),
    }
}

fn remove_files(dir: &Path, base: &str) -> Result<()> {
    let base = dir.join(base);
    for seg in 0.. {
        let p = crate::device::segment_path(&base, seg);
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => return Err(StorageError::io(p, e)),
        }
    }
    Ok(())
}

/// One B+-tree of a table: an index, or the index of its hot partition.
pub(crate) enum TreeRef<'a> {
    Index(&'a Index),
    Hot(Arc<crate::hot::HotPartition>),
}

impl TreeRef<'_> {
    pub(crate) fn btree(&self) -> &BTree {
        match self {
            TreeRef::Index(i) => &i.btree,
            TreeRef::Hot(h) => &h.btree,
        }
    }

    /// Its file as the catalog names it.
    pub(crate) fn file(&self) -> &str {
        match self {
            TreeRef::Index(i) => &i.def.file,
            TreeRef::Hot(h) => &h.def.file,
        }
    }
}

/// An open table: heap, row layout and indexes.
pub struct Table {
    name: String,
    schema: Schema,
    layout: RowLayout,
    heap: Arc<HeapFile>,
    /// The heap's path as the catalog names it (log records name files so).
    heap_file: String,
    indexes: Vec<Index>,
    rows: AtomicU64,
    /// Heap pages and rows as of the last commit (an abort goes back to them).
    committed: Mutex<(u64, u64)>,
    segment_pages: u64,
    owner: Arc<TxnOwner>,
    /// Whether a file of the table is on the cold tier (read-only).
    cold: bool,
    /// Sampled access counts of its tuples (`heat.rs`), shared by the table's
    /// successive handles (a load makes a new one).
    heat: Arc<crate::heat::AccessCounts>,
    /// The side table holding its side columns (vertical partitioning,
    /// `split.rs`), and where those columns are in this table's rows.
    side: Option<SidePart>,
}

/// Rows a joined scan of a split table decodes before it reads their side
/// rows: enough that the side rows of a batch take a few long reads.
const JOIN_BATCH_ROWS: usize = 4096;

/// A table's side table, open, with the places of its columns.
#[derive(Clone)]
pub(crate) struct SidePart {
    pub(crate) table: Arc<Table>,
    /// The side columns' positions in the main table, in order (the side
    /// table's columns).
    pub(crate) cols: Vec<usize>,
}

impl SidePart {
    fn of(layout: &RowLayout, table: Arc<Table>) -> SidePart {
        let cols = (0..layout.types().len())
            .filter(|&c| layout.is_side(c))
            .collect();
        SidePart { table, cols }
    }
}

/// The index's cached columns, read under its lock rather than cloned out
/// of it (a lookup takes no reference count, and they cannot change under
/// it); an index without them is an error.
fn cached_fields_of(ix: &Index) -> Result<parking_lot::MappedRwLockReadGuard<'_, CachedFields>> {
    parking_lot::RwLockReadGuard::try_map(ix.cached.read(), |c| c.as_deref()).map_err(|_| {
        StorageError::Index {
            index: ix.def.name.clone(),
            reason: "caches no columns".into(),
        }
    })
}

/// What [`Table::lookup_cached`] did, summed over calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CachedLookups {
    /// Entries answered from a leaf's cache (no heap page read).
    pub hits: u64,
    /// Entries whose heap tuple was read.
    pub misses: u64,
    /// Misses whose values were cached.
    pub fills: u64,
    /// Misses whose fill was refused (stale, leaf busy, entry moved, no room).
    pub refused: u64,
    /// Entries read from the heap by the plain path, the cache untouched,
    /// because the index's governor found that the cache does not pay
    /// ([`Table::lookup_cached_auto`], `cache_governor.rs`).
    pub plain: u64,
}

/// An open B+-tree index over some columns of a table.
pub struct Index {
    pub def: IndexDef,
    /// Positions of the key columns in the table.
    pub key_cols: Vec<usize>,
    pub key_types: Vec<DataType>,
    pub btree: BTree,
    /// The columns cached in the leaves' free space (None: no cache).
    cached: parking_lot::RwLock<Option<Arc<CachedFields>>>,
    /// Tids whose cached fields the running write transaction changed, or
    /// whose rows it deleted: its commit appends predicates on them to the
    /// tree's log (No Bits Left Behind §2.1.2) around the publish.
    pending: Mutex<Vec<Tid>>,
    /// The hot partition's index (`hot.rs`), if there is one.
    hot: parking_lot::RwLock<Option<Arc<crate::hot::HotPartition>>>,
    /// Whether lookups through [`Table::lookup_cached_auto`] use the cache.
    pub governor: CacheGovernor,
}

impl Index {
    fn new(
        def: IndexDef,
        schema: &Schema,
        table: &str,
        key_cols: Vec<usize>,
        key_types: Vec<DataType>,
        btree: BTree,
    ) -> Result<Index> {
        let ix = Index {
            key_cols,
            key_types,
            btree,
            cached: parking_lot::RwLock::new(None),
            pending: Mutex::new(Vec::new()),
            hot: parking_lot::RwLock::new(None),
            governor: CacheGovernor::default(),
            def,
        };
        let fields = CachedFields::new(table, &ix.def.name, schema, &ix.key_cols, &ix.def.cache)?;
        ix.set_cached(fields);
        Ok(ix)
    }

    /// The hot partition's index, if `strata cluster --hot` made one.
    pub fn hot(&self) -> Option<Arc<crate::hot::HotPartition>> {
        self.hot.read().clone()
    }

    /// Attaches (or detaches) the hot partition; returns the one it replaces.
    pub(crate) fn set_hot(
        &self,
        h: Option<Arc<crate::hot::HotPartition>>,
    ) -> Option<Arc<crate::hot::HotPartition>> {
        std::mem::replace(&mut *self.hot.write(), h)
    }

    /// The columns this index caches, if any.
    pub fn cached_fields(&self) -> Option<Arc<CachedFields>> {
        self.cached.read().clone()
    }

    /// Sets the cached columns in memory and the tree's cache layout from
    /// them (which invalidates everything cached).
    fn set_cached(&self, fields: CachedFields) {
        let mut c = self.cached.write();
        self.btree.set_cache_layout(fields.layout());
        *c = (!fields.cols.is_empty()).then(|| Arc::new(fields));
    }

    /// Records that the running transaction changed the cached fields of
    /// `tids` (or deleted them).
    fn changed_cached(&self, tids: &[Tid]) {
        if self.cached.read().is_some() {
            self.pending.lock().extend_from_slice(tids);
        }
    }

    /// The encoded key of a row.
    pub fn key_of_row(&self, row: &[Value]) -> Vec<u8> {
        let vals: Vec<Value> = self.key_cols.iter().map(|&c| row[c].clone()).collect();
        let mut k = Vec::new();
        encode_key(&self.key_types, &vals, &mut k);
        k
    }

    /// The encoded key of the stored tuple at `tid`.
    pub fn key_of_tuple(&self, layout: &RowLayout, tuple: &[u8], tid: Tid, out: &mut Vec<u8>) {
        out.clear();
        for (ty, &c) in self.key_types.iter().zip(&self.key_cols) {
            crate::row::encode_key_value(ty, &layout.decode_column(tuple, c, tid), out);
        }
    }
}

fn resolve_columns(def: &TableDef, cols: &[String]) -> Result<(Vec<usize>, Vec<DataType>)> {
    let mut idx = Vec::new();
    for c in cols {
        let i = def
            .schema
            .index_of(c)
            .ok_or_else(|| StorageError::UnknownColumn {
                table: def.name.clone(),
                column: c.clone(),
            })?;
        idx.push(i);
    }
    let types = idx.iter().map(|&i| def.schema.columns[i].ty).collect();
    Ok((idx, types))
}

impl Table {
    fn open(db: &Database, def: TableDef) -> Result<Table> {
        let mut cold = false;
        let files = std::iter::once(&def.heap_file).chain(def.indexes.iter().map(|i| &i.file));
        for f in files {
            let manifest = cold_manifest_path(&db.dir.join(f));
            if manifest.exists() {
                cold = true;
                if db.cold_tier.is_none() {
                    return Err(StorageError::ColdTier {
                        table: def.name.clone(),
                        message: format!(
                            "table {t} is on the cold tier ({f} has its pages in cold storage, \
                             listed in {m}) and this database was opened without a cold tier; \
                             the strata and strata-sql binaries open one, or \
                             `strata tier local {t}` brings the table back",
                            t = def.name,
                            m = manifest.display()
                        ),
                    });
                }
            }
        }
        let heap = Arc::new(HeapFile::open(
            db.pool.clone(),
            &db.dir.join(&def.heap_file),
            &def.name,
            def.segment_pages,
            def.fill_factor,
            def.pages,
            !db.read_only,
        )?);
        let layout =
            RowLayout::encoded(&def.schema, &def.encodings).map_err(|e| StorageError::Catalog {
                path: db.dir.join("catalog.json"),
                reason: format!("table {}'s column encodings: {e}", def.name),
            })?;
        heap.set_tuple_shape(crate::row::shape::TupleShape::of_layout(
            &def.schema,
            &layout,
        ));
        let mut indexes = Vec::new();
        for idef in &def.indexes {
            let (key_cols, key_types) = resolve_columns(&def, &idef.columns)?;
            let btree = BTree::open(
                db.pool.clone(),
                &db.dir.join(&idef.file),
                &idef.name,
                key_types.clone(),
                def.segment_pages,
            )?;
            let ix = Index::new(
                idef.clone(),
                &def.schema,
                &def.name,
                key_cols,
                key_types.clone(),
                btree,
            )?;
            if let Some(h) = &idef.hot {
                let btree = BTree::open(
                    db.pool.clone(),
                    &db.dir.join(&h.file),
                    &format!("{} (hot partition)", idef.name),
                    key_types,
                    def.segment_pages,
                )?;
                ix.set_hot(Some(Arc::new(crate::hot::HotPartition {
                    def: h.clone(),
                    btree,
                })));
            }
            indexes.push(ix);
        }
        let heat = Arc::new(crate::heat::AccessCounts::load(
            &crate::heat::AccessCounts::path_of(&db.dir.join(&def.heap_file)),
        ));
        let side = match &def.side {
            Some(s) => Some(SidePart::of(&layout, db.table(s)?)),
            None => None,
        };
        Ok(Table {
            side,
            heat,
            layout,
            name: def.name,
            schema: def.schema,
            heap,
            heap_file: def.heap_file,
            indexes,
            rows: AtomicU64::new(def.rows),
            committed: Mutex::new((def.pages, def.rows)),
            segment_pages: def.segment_pages,
            owner: db.owner.clone(),
            cold,
        })
    }

    /// The sampled access counts of its tuples (`heat.rs`).
    pub fn heat(&self) -> &crate::heat::AccessCounts {
        &self.heat
    }

    /// Every B+-tree of the table: its indexes' and their hot partitions'.
    pub(crate) fn trees(&self) -> Vec<TreeRef<'_>> {
        let mut out = Vec::new();
        for i in &self.indexes {
            out.push(TreeRef::Index(i));
            if let Some(h) = i.hot() {
                out.push(TreeRef::Hot(h));
            }
        }
        out
    }

    /// Whether a file of the table is on the cold tier: then it is read-only.
    pub fn is_cold(&self) -> bool {
        self.cold
    }

    /// Row changes need a write transaction and a table on the local tier.
    fn check_change(&self) -> Result<()> {
        if self.cold {
            return Err(cold_read_only(&self.name));
        }
        if let Some(s) = &self.side {
            s.table.check_change()?;
        }
        self.owner.check(&self.name)
    }

    /// The side table holding the columns whose encoding is
    /// [`crate::row::encoding::Encoding::Side`] (vertical partitioning,
    /// `split.rs`), if the table has one. Its rows are the side columns in
    /// table order; [`RowLayout::side_tid`] of a main tuple finds its row.
    pub fn side_table(&self) -> Option<&Arc<Table>> {
        self.side.as_ref().map(|s| &s.table)
    }

    /// Positions of the side columns in this table's rows (empty: none).
    pub fn side_columns(&self) -> &[usize] {
        self.side.as_ref().map_or(&[], |s| &s.cols)
    }

    /// A full row's side columns: the side table's row.
    fn side_values(&self, row: &[Value]) -> Result<Vec<Value>> {
        let s = self.side.as_ref().expect("only for a split table");
        if row.len() != self.schema.len() {
            return Err(StorageError::Schema(format!(
                "row has {} values, table has {} columns",
                row.len(),
                self.schema.len()
            )));
        }
        Ok(s.cols.iter().map(|&c| row[c].clone()).collect())
    }

    /// A full row as the main heap stores it: the side row's address in the
    /// pointer's place (the first side column), NULL in the other side
    /// columns (encoded as nothing).
    fn main_values(&self, row: &[Value], side_tid: Tid) -> Vec<Value> {
        let s = self.side.as_ref().expect("only for a split table");
        let mut out = row.to_vec();
        if out.len() != self.schema.len() {
            // The encoding says what is wrong.
            return out;
        }
        for (i, &c) in s.cols.iter().enumerate() {
            out[c] = if i == 0 {
                Value::Int64(crate::row::encoding::address_of(side_tid))
            } else {
                Value::Null
            };
        }
        out
    }

    /// Fills `row`'s side columns (a main tuple's decoding, NULL there) from
    /// the side row the main tuple `bytes` points to. An error names the
    /// main tuple when its side row is missing (a damaged table).
    pub fn join_side(&self, bytes: &[u8], tid: Tid, row: &mut [Value]) -> Result<()> {
        let Some(s) = &self.side else {
            return Ok(());
        };
        let side_tid = self.layout.side_tid(bytes).expect("a split table's layout");
        let values = s
            .table
            .get_row(side_tid)?
            .ok_or_else(|| self.lost_side(tid, side_tid))?;
        for (&c, v) in s.cols.iter().zip(values) {
            row[c] = v;
        }
        Ok(())
    }

    fn lost_side(&self, tid: Tid, side_tid: Tid) -> StorageError {
        StorageError::LostSideRow {
            table: self.name.clone(),
            page: tid.page,
            slot: tid.slot,
            side_page: side_tid.page,
            side_slot: side_tid.slot,
        }
    }

    /// Decodes the main tuple `bytes` at `tid` into a full row (joining its
    /// side row when the table has one).
    fn decode_row(&self, bytes: &[u8], tid: Tid) -> Result<Vec<Value>> {
        let mut row = self.layout.decode(bytes, tid);
        self.join_side(bytes, tid, &mut row)?;
        Ok(row)
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn schema(&self) -> &Schema {
        &self.schema
    }
    /// Each column's physical encoding; empty when every column is stored
    /// as declared.
    pub fn encodings(&self) -> &[crate::row::encoding::Encoding] {
        self.layout.encodings()
    }

    pub fn layout(&self) -> &RowLayout {
        &self.layout
    }
    pub fn heap(&self) -> &Arc<HeapFile> {
        &self.heap
    }
    pub fn indexes(&self) -> &[Index] {
        &self.indexes
    }
    /// Live rows — for a reader while a write transaction runs, as of the last
    /// commit.
    pub fn rows(&self) -> u64 {
        if self.heap.pool().reads_committed() {
            self.committed.lock().1
        } else {
            self.rows.load(Ordering::Acquire)
        }
    }
    pub fn segment_pages(&self) -> u64 {
        self.segment_pages
    }
    pub fn index(&self, name: &str) -> Result<&Index> {
        self.indexes
            .iter()
            .find(|i| i.def.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| StorageError::UnknownIndex(name.into()))
    }
    /// An index whose first key column is `column`.
    pub fn index_on(&self, column: &str) -> Option<&Index> {
        let c = self.schema.index_of(column)?;
        self.indexes.iter().find(|i| i.key_cols[0] == c)
    }
    /// Position of a column, or an error naming the table and column.
    pub fn column(&self, name: &str) -> Result<usize> {
        self.schema
            .index_of(name)
            .ok_or_else(|| StorageError::UnknownColumn {
                table: self.name.clone(),
                column: name.into(),
            })
    }

    pub fn get_row(&self, tid: Tid) -> Result<Option<Vec<Value>>> {
        if self.side.is_none() {
            return self.heap.with_tuple(tid, |b| self.layout.decode(b, tid));
        }
        self.heap
            .with_tuple(tid, |b| self.decode_row(b, tid))?
            .transpose()
    }

    /// The tuple id of the side row of the row at `tid` (`None`: no such
    /// row, or the table is not split).
    fn side_tid_of(&self, tid: Tid) -> Result<Option<Tid>> {
        Ok(self
            .heap
            .with_tuple(tid, |b| self.layout.side_tid(b))?
            .flatten())
    }

    /// Encodes `row` into `out` as an insert would store it, checking every
    /// value, without storing it; returns the largest stored tuple's size
    /// (a split table stores two: its row, with a pointer, and the side row).
    pub fn encode_checked(&self, row: &[Value], out: &mut Vec<u8>) -> Result<usize> {
        out.clear();
        match &self.side {
            None => {
                self.layout.encode(row, out, &self.schema)?;
                Ok(out.len())
            }
            Some(s) => {
                self.layout
                    .encode(&self.main_values(row, Tid::new(0, 0)), out, &self.schema)?;
                let mut side = Vec::new();
                s.table
                    .layout
                    .encode(&self.side_values(row)?, &mut side, &s.table.schema)?;
                Ok(out.len().max(side.len()))
            }
        }
    }

    fn encode(&self, row: &[Value]) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.layout.encode(row, &mut buf, &self.schema)?;
        Ok(buf)
    }

    /// Inserts a row and its index entries (in the thread's write transaction).
    pub fn insert_row(&self, row: &[Value]) -> Result<Tid> {
        self.check_change()?;
        as_writer(|| {
            let tid = match &self.side {
                None => self.heap.insert(&self.encode(row)?)?,
                Some(s) => {
                    // The main row is checked before the side row is written.
                    self.encode(&self.main_values(row, Tid::new(0, 0)))?;
                    let side_tid = s.table.insert_row(&self.side_values(row)?)?;
                    self.heap
                        .insert(&self.encode(&self.main_values(row, side_tid))?)?
                }
            };
            for i in &self.indexes {
                let k = i.key_of_row(row);
                i.btree.insert(&k, tid)?;
                i.hot_insert(&k, tid)?;
            }
            self.rows.fetch_add(1, Ordering::AcqRel);
            Ok(tid)
        })
    }

    /// The row at `tid`, or an error naming the table and tuple.
    fn existing_row(&self, tid: Tid) -> Result<Vec<Value>> {
        self.get_row(tid)?.ok_or_else(|| self.missing_tuple(tid))
    }

    fn missing_tuple(&self, tid: Tid) -> StorageError {
        StorageError::NoSuchTuple {
            table: self.name.clone(),
            page: tid.page,
            slot: tid.slot,
        }
    }

    /// Deletes a row and its index entries.
    pub fn delete_row(&self, tid: Tid) -> Result<()> {
        self.check_change()?;
        as_writer(|| {
            let row = self.existing_row(tid)?;
            for i in &self.indexes {
                let k = i.key_of_row(&row);
                i.btree.delete(&k, tid)?;
                i.hot_delete(&k, tid)?;
                i.changed_cached(&[tid]);
            }
            if let Some(s) = &self.side
                && let Some(side_tid) = self.side_tid_of(tid)?
            {
                s.table.delete_row(side_tid)?;
            }
            self.heap.delete(tid)?;
            self.heat.forget(tid);
            self.rows.fetch_sub(1, Ordering::AcqRel);
            Ok(())
        })
    }

    /// Inserts `rows` and their index entries (in the thread's write
    /// transaction), with the same result as [`Table::insert_row`] of each in
    /// turn — the same tids, returned in the order of `rows` — but batched: the
    /// heap takes the tuples pinning each page once ([`HeapFile::insert_many`]),
    /// and each index takes its entries sorted, visiting each leaf they land on
    /// once ([`BTree::insert_sorted`]). Every row is checked against the schema
    /// and every index key's size before anything changes.
    pub fn insert_rows(&self, rows: &[Vec<Value>]) -> Result<Vec<Tid>> {
        self.check_change()?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        as_writer(|| {
            let mut tuples = Vec::new();
            let mut ends = Vec::with_capacity(rows.len());
            for row in rows {
                match &self.side {
                    None => self.layout.encode(row, &mut tuples, &self.schema)?,
                    // Checked with a stand-in pointer; encoded again below.
                    Some(_) => self.layout.encode(
                        &self.main_values(row, Tid::new(0, 0)),
                        &mut tuples,
                        &self.schema,
                    )?,
                }
                ends.push(tuples.len());
            }
            if let Some(s) = &self.side {
                // Every row was checked above; now the side rows go first,
                // and the main rows point to them.
                let side_rows = rows
                    .iter()
                    .map(|r| self.side_values(r))
                    .collect::<Result<Vec<_>>>()?;
                let side_tids = s.table.insert_rows(&side_rows)?;
                tuples.clear();
                ends.clear();
                for (row, side_tid) in rows.iter().zip(side_tids) {
                    self.layout.encode(
                        &self.main_values(row, side_tid),
                        &mut tuples,
                        &self.schema,
                    )?;
                    ends.push(tuples.len());
                }
            }
            let mut keys: Vec<Vec<Vec<u8>>> = Vec::with_capacity(self.indexes.len());
            for i in &self.indexes {
                let mut ks = Vec::with_capacity(rows.len());
                for row in rows {
                    let mut k = Vec::new();
                    for (ty, &c) in i.key_types.iter().zip(&i.key_cols) {
                        crate::row::encode_key_value(ty, &row[c], &mut k);
                    }
                    i.btree.check_key(&k)?;
                    ks.push(k);
                }
                keys.push(ks);
            }
            let starts = std::iter::once(0).chain(ends.iter().copied());
            let tids = self
                .heap
                .insert_many(starts.zip(ends.iter().copied()).map(|(a, b)| &tuples[a..b]))?;
            for (i, ks) in self.indexes.iter().zip(keys) {
                let mut entries: Vec<(Vec<u8>, Tid)> =
                    ks.into_iter().zip(tids.iter().copied()).collect();
                // Encoded keys are prefix-free, so (key, tid) order is entry order.
                entries.sort_unstable();
                i.btree.insert_sorted(&entries)?;
                if i.hot().is_some() {
                    for (k, tid) in &entries {
                        i.hot_insert(k, *tid)?;
                    }
                }
            }
            self.rows.fetch_add(rows.len() as u64, Ordering::AcqRel);
            Ok(tids)
        })
    }

    /// Deletes the rows at `tids` and their index entries, with the same result
    /// as [`Table::delete_row`] of each, batched: each heap page is read once
    /// for the index keys of its rows ([`HeapFile::with_tuples`]), each index
    /// deletes its entries sorted, reading and writing each leaf they are on
    /// once ([`BTree::delete_sorted`]), and each heap page is written once
    /// ([`HeapFile::delete_many`]). Every tid is checked first: one without a
    /// row (or named twice) is the error `delete_row` gives for it, and then
    /// nothing has changed.
    pub fn delete_rows(&self, tids: &[Tid]) -> Result<()> {
        self.check_change()?;
        if tids.is_empty() {
            return Ok(());
        }
        as_writer(|| {
            let mut sorted = tids.to_vec();
            sorted.sort_unstable();
            let missing = |tid: Tid| StorageError::NoSuchTuple {
                table: self.name.clone(),
                page: tid.page,
                slot: tid.slot,
            };
            if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
                return Err(missing(w[1]));
            }
            let mut entries: Vec<Vec<(Vec<u8>, Tid)>> = self
                .indexes
                .iter()
                .map(|_| Vec::with_capacity(sorted.len()))
                .collect();
            let mut side_tids = Vec::new();
            self.heap.with_tuples(&sorted, |tid, tuple| {
                let tuple = tuple.ok_or_else(|| missing(tid))?;
                for (i, out) in self.indexes.iter().zip(entries.iter_mut()) {
                    let mut k = Vec::new();
                    i.key_of_tuple(&self.layout, tuple, tid, &mut k);
                    out.push((k, tid));
                }
                side_tids.extend(self.layout.side_tid(tuple));
                Ok(())
            })?;
            if let Some(s) = &self.side {
                s.table.delete_rows(&side_tids)?;
            }
            for (i, mut es) in self.indexes.iter().zip(entries) {
                es.sort_unstable();
                i.btree.delete_sorted(&es)?;
                for (k, tid) in &es {
                    i.hot_delete(k, *tid)?;
                }
                i.changed_cached(&sorted);
            }
            for &tid in &sorted {
                self.heat.forget(tid);
            }
            self.heap.delete_many(&sorted)?;
            self.rows.fetch_sub(sorted.len() as u64, Ordering::AcqRel);
            Ok(())
        })
    }

    /// Replaces a row; returns its tid, which changes when the row had to move.
    pub fn update_row(&self, tid: Tid, row: &[Value]) -> Result<Tid> {
        self.check_change()?;
        as_writer(|| {
            let old = self.existing_row(tid)?;
            let new_tid = match &self.side {
                None => self.heap.update(tid, &self.encode(row)?)?,
                Some(s) => {
                    self.encode(&self.main_values(row, Tid::new(0, 0)))?;
                    let side_tid = self
                        .side_tid_of(tid)?
                        .ok_or_else(|| self.missing_tuple(tid))?;
                    let side_row = self.side_values(row)?;
                    // A side row that did not change is not written.
                    let new_side = if side_row != self.side_values(&old)? {
                        s.table.update_row(side_tid, &side_row)?
                    } else {
                        side_tid
                    };
                    let main = self.main_values(row, new_side);
                    if new_side == side_tid && main == self.main_values(&old, side_tid) {
                        // Only side columns changed, in place: the row is as
                        // it was, and its page is not written (what splitting
                        // often updated columns off is for).
                        tid
                    } else {
                        self.heap.update(tid, &self.encode(&main)?)?
                    }
                }
            };
            for i in &self.indexes {
                let (ok, nk) = (i.key_of_row(&old), i.key_of_row(row));
                if ok != nk || new_tid != tid {
                    i.btree.delete(&ok, tid)?;
                    i.btree.insert(&nk, new_tid)?;
                    i.hot_replace(&ok, tid, &nk, new_tid)?;
                    i.changed_cached(&[tid]);
                } else if i.cached_fields().is_some_and(|f| f.changed(&old, row)) {
                    // Same entry, new cached fields: a predicate on the tid.
                    // An update of no cached column and no key changes no
                    // cache.
                    i.changed_cached(&[tid]);
                }
            }
            if new_tid != tid {
                self.heat.moved(tid, new_tid);
            }
            Ok(new_tid)
        })
    }

    /// Moves a row to another heap page (`None`: the page inserts fill), keeping
    /// its indexes pointing at it. Hot/cold partitioning is built on this.
    pub fn move_row(&self, tid: Tid, target_page: Option<u64>) -> Result<Tid> {
        self.check_change()?;
        as_writer(|| {
            let row = self.existing_row(tid)?;
            let new_tid = self.heap.move_tuple(tid, target_page)?;
            self.moved_entries(&row, tid, new_tid)?;
            Ok(new_tid)
        })
    }

    /// Moves a row into heap page `page` if it has room there (`None` if it
    /// has not, and nothing changed), keeping its indexes pointing at it.
    pub fn move_row_into(&self, tid: Tid, page: u64) -> Result<Option<Tid>> {
        self.check_change()?;
        as_writer(|| {
            let row = self.existing_row(tid)?;
            let stored = match &self.side {
                Some(_) => {
                    let side_tid = self
                        .side_tid_of(tid)?
                        .ok_or_else(|| self.missing_tuple(tid))?;
                    self.main_values(&row, side_tid)
                }
                None => row.clone(),
            };
            let Some(new_tid) = self.heap.insert_into(page, &self.encode(&stored)?)? else {
                return Ok(None);
            };
            self.heap.delete(tid)?;
            self.moved_entries(&row, tid, new_tid)?;
            Ok(Some(new_tid))
        })
    }

    /// Index entries follow a row from `tid` to `new_tid`.
    fn moved_entries(&self, row: &[Value], tid: Tid, new_tid: Tid) -> Result<()> {
        for i in &self.indexes {
            let k = i.key_of_row(row);
            i.btree.delete(&k, tid)?;
            i.btree.insert(&k, new_tid)?;
            i.hot_replace(&k, tid, &k, new_tid)?;
            i.changed_cached(&[tid]);
        }
        self.heat.moved(tid, new_tid);
        Ok(())
    }

    /// The values of `fields`' columns (an index's cached columns, in their
    /// declared order) in the heap tuple `tid`, decoding only those; `None`
    /// when the tuple is gone. What a cache miss reads, and what a lookup
    /// without the cache reads for the same answer.
    pub fn cached_columns(&self, fields: &CachedFields, tid: Tid) -> Result<Option<Vec<Value>>> {
        self.heap.with_tuple(tid, |b| {
            fields
                .cols
                .iter()
                .map(|&c| self.layout.decode_column(b, c, tid))
                .collect()
        })
    }

    /// Every entry of `key` (a full encoded key of `ix`) with the values of
    /// the index's cached columns (in their declared order): from the leaf on
    /// a cache hit, from the heap on a miss, which then fills the cache (No
    /// Bits Left Behind §2.1). Counts go to `counts`. An index without cached
    /// columns is an error.
    pub fn lookup_cached(
        &self,
        ix: &Index,
        key: &[u8],
        counts: &mut CachedLookups,
    ) -> Result<Vec<(Tid, Vec<Value>)>> {
        let fields = &*cached_fields_of(ix)?;
        let mut out: Vec<(Tid, Vec<Value>)> = Vec::new();
        // The misses' places in `out` and tickets, filled after the leaves'
        // latches are given up (nothing allocated when every entry hits).
        let mut misses = Vec::new();
        ix.btree.lookup_cached_with(key, |tid, found| match found {
            crate::btree::Found::Hit(v) => {
                counts.hits += 1;
                out.push((tid, fields.decode(v)));
            }
            crate::btree::Found::Miss(ticket) => {
                counts.misses += 1;
                misses.push((out.len(), ticket));
                out.push((tid, Vec::new()));
            }
        })?;
        if misses.is_empty() {
            return Ok(out);
        }
        let mut gone = Vec::new();
        CACHE_VALUE.with_borrow_mut(|buf| -> Result<()> {
            for (i, ticket) in misses {
                let Some(values) = self.cached_columns(fields, out[i].0)? else {
                    // Deleted since the lookup read the leaf.
                    gone.push(i);
                    continue;
                };
                buf.clear();
                fields.encode_values(&values, buf);
                match ix.btree.fill_cache(&ticket, buf)? {
                    crate::btree::Filled::Cached(_) => counts.fills += 1,
                    _ => counts.refused += 1,
                }
                out[i].1 = values;
            }
            Ok(())
        })?;
        for i in gone.into_iter().rev() {
            out.remove(i);
        }
        Ok(out)
    }

    /// What [`lookup_cached`](Self::lookup_cached) gives, answered the way the
    /// index's governor finds cheaper (`cache_governor.rs`): through the cache,
    /// or by the plain path (the index's entries, then each one's heap tuple;
    /// the cache neither read nor filled, counted in `counts.plain`). The
    /// answer is the same either way.
    pub fn lookup_cached_auto(
        &self,
        ix: &Index,
        key: &[u8],
        counts: &mut CachedLookups,
    ) -> Result<Vec<(Tid, Vec<Value>)>> {
        let choice = ix.governor.choose();
        // Wall time, plus the modeled device time no one waited for (zero on
        // the real device): what the lookup cost on this device.
        let start = choice.timed.then(|| {
            (
                std::time::Instant::now(),
                crate::device::thread_unwaited_ns(),
            )
        });
        let out = match choice.way {
            Way::Cache => self.lookup_cached(ix, key, counts)?,
            Way::Plain => self.lookup_plain(ix, key, counts)?,
        };
        if let Some((start, unwaited)) = start {
            let wall = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            let modeled = crate::device::thread_unwaited_ns().saturating_sub(unwaited);
            ix.governor.record(choice.way, wall.saturating_add(modeled));
        }
        Ok(out)
    }

    /// The plain path of [`lookup_cached_auto`](Self::lookup_cached_auto):
    /// what [`lookup_cached`](Self::lookup_cached) gives, from the index's
    /// entries and their heap tuples, the cache neither read nor filled.
    pub fn lookup_plain(
        &self,
        ix: &Index,
        key: &[u8],
        counts: &mut CachedLookups,
    ) -> Result<Vec<(Tid, Vec<Value>)>> {
        let fields = &*cached_fields_of(ix)?;
        let mut out = Vec::new();
        for tid in ix.btree.lookup(key)? {
            counts.plain += 1;
            // None: deleted since the lookup read the leaf.
            if let Some(values) = self.cached_columns(fields, tid)? {
                out.push((tid, values));
            }
        }
        Ok(out)
    }

    /// Visits every row in heap order.
    pub fn scan_rows(&self, mut f: impl FnMut(Tid, Vec<Value>) -> Result<()>) -> Result<()> {
        let Some(side) = &self.side else {
            return self.heap.scan(|tid, b| f(tid, self.layout.decode(b, tid)));
        };
        // Rows a batch at a time, their side rows read in side-heap order
        // (each side page once, neighbours in one request).
        let mut rows: Vec<(Tid, Vec<Value>)> = Vec::new();
        let mut wanted: Vec<(Tid, usize)> = Vec::new();
        let mut join = |rows: &mut Vec<(Tid, Vec<Value>)>, wanted: &mut Vec<(Tid, usize)>| {
            wanted.sort_unstable();
            let side_tids: Vec<Tid> = wanted.iter().map(|w| w.0).collect();
            let mut k = 0;
            side.table.heap.with_tuples_prefetched(
                &side_tids,
                crate::heap::WRITE_RUN_PAGES,
                |side_tid, b| {
                    let (_, i) = wanted[k];
                    k += 1;
                    let b = b.ok_or_else(|| self.lost_side(rows[i].0, side_tid))?;
                    let values = side.table.layout.decode(b, side_tid);
                    for (&c, v) in side.cols.iter().zip(values) {
                        rows[i].1[c] = v;
                    }
                    Ok(())
                },
            )?;
            wanted.clear();
            for (tid, row) in rows.drain(..) {
                f(tid, row)?;
            }
            Ok(())
        };
        self.heap
            .scan_pages(crate::heap::WRITE_RUN_PAGES, 2, |p, v| {
                for (slot, t) in v.tuples() {
                    let tid = Tid::new(p as u32, slot);
                    let side_tid = self.layout.side_tid(t).expect("a split table's layout");
                    wanted.push((side_tid, rows.len()));
                    rows.push((tid, self.layout.decode(t, tid)));
                }
                if rows.len() >= JOIN_BATCH_ROWS {
                    join(&mut rows, &mut wanted)?;
                }
                Ok(std::ops::ControlFlow::Continue(()))
            })?;
        join(&mut rows, &mut wanted)
    }
}

/// A load in progress: rows appended after the table's committed pages, indexes
/// rebuilt at commit. Dropping it without committing leaves the table as it was.
pub struct TableLoad<'a> {
    db: &'a Database,
    /// Loads exclude write transactions, checkpoints and other loads.
    _writer: parking_lot::MutexGuard<'a, ()>,
    def: TableDef,
    heap: Arc<HeapFile>,
    writer: Option<HeapWriter>,
    layout: RowLayout,
    new_table: bool,
    /// The table whose heap this load's new heap replaces (`compact.rs`).
    replaces: Option<Arc<Table>>,
    new_indexes: Vec<IndexSpec>,
    appended: u64,
    scratch: Vec<u8>,
    /// The side table's part of the load (vertical partitioning, `split.rs`).
    side: Option<SideLoad>,
    /// A side table the commit removes (`strata split --merge`).
    retire: Option<Arc<Table>>,
}

/// The side table's rows of a load: appended to its heap, committed in the
/// same catalog swap as the table's.
struct SideLoad {
    def: TableDef,
    heap: Arc<HeapFile>,
    writer: Option<HeapWriter>,
    layout: RowLayout,
    /// The side columns' positions in the table's rows.
    cols: Vec<usize>,
    appended: u64,
    /// The table the new heap replaces (`compact.rs`, `split.rs`).
    replaces: Option<Arc<Table>>,
}

/// What a committed load did.
#[derive(Clone, Debug, Default)]
pub struct LoadSummary {
    pub rows_appended: u64,
    pub rows_total: u64,
    pub pages_total: u64,
    pub indexes_built: usize,
}

impl<'a> TableLoad<'a> {
    fn new(
        db: &'a Database,
        lock: parking_lot::MutexGuard<'a, ()>,
        def: TableDef,
        heap: Arc<HeapFile>,
        new_table: bool,
        indexes: Vec<IndexSpec>,
    ) -> Result<TableLoad<'a>> {
        let layout = RowLayout::encoded(&def.schema, &def.encodings)?;
        heap.set_tuple_shape(crate::row::shape::TupleShape::of_layout(
            &def.schema,
            &layout,
        ));
        let writer = Some(heap.writer());
        let mut load = TableLoad {
            db,
            _writer: lock,
            def,
            heap,
            writer,
            layout,
            new_table,
            replaces: None,
            new_indexes: vec![],
            appended: 0,
            scratch: Vec::new(),
            side: None,
            retire: None,
        };
        for s in indexes {
            load.add_index(s)?;
        }
        Ok(load)
    }

    /// A load that writes `def`'s rows into `heap`, a new heap that replaces
    /// `old`'s at commit (`compact.rs`).
    pub(crate) fn replacing(
        db: &'a Database,
        lock: parking_lot::MutexGuard<'a, ()>,
        def: TableDef,
        heap: Arc<HeapFile>,
        old: Arc<Table>,
    ) -> Result<TableLoad<'a>> {
        let mut load = TableLoad::new(db, lock, def, heap, false, vec![])?;
        load.replaces = Some(old);
        Ok(load)
    }

    /// The table's side columns go to `heap`, the heap of side table `def`
    /// (appending after its committed pages, or a new heap).
    pub(crate) fn set_side(&mut self, def: TableDef, heap: Arc<HeapFile>) -> Result<()> {
        let layout = RowLayout::encoded(&def.schema, &def.encodings)?;
        heap.set_tuple_shape(crate::row::shape::TupleShape::of_layout(
            &def.schema,
            &layout,
        ));
        let cols = (0..self.def.schema.len())
            .filter(|&c| self.layout.is_side(c))
            .collect();
        self.side = Some(SideLoad {
            writer: Some(heap.writer()),
            def,
            heap,
            layout,
            cols,
            appended: 0,
            replaces: None,
        });
        Ok(())
    }

    /// The side table's new heap replaces `old`'s at commit; without a
    /// side part in this load, `old` goes (the table is no longer split).
    pub(crate) fn side_replaces(&mut self, old: Arc<Table>) {
        match &mut self.side {
            Some(s) => s.replaces = Some(old),
            None => self.retire = Some(old),
        }
    }

    /// Also build this index at commit.
    pub fn add_index(&mut self, spec: IndexSpec) -> Result<()> {
        validate_name(&spec.name, "index")?;
        if spec.columns.is_empty() {
            return Err(StorageError::Index {
                index: spec.name,
                reason: "needs at least one column".into(),
            });
        }
        if !crate::catalog::LEAF_FILLS.contains(&spec.leaf_fill) {
            return Err(StorageError::Index {
                index: spec.name,
                reason: format!("leaf fill {} is outside 0.1..=1.0", spec.leaf_fill),
            });
        }
        let (key_cols, _) = resolve_columns(&self.def, &spec.columns)?;
        if let Some(&c) = key_cols
            .iter()
            .find(|&&c| self.def.encodings.get(c) == Some(&crate::row::encoding::Encoding::Address))
        {
            return Err(StorageError::Index {
                index: spec.name,
                reason: format!(
                    "column {} is a semantic id (the tuple's address): a lookup by it reads its tuple directly, without an index",
                    self.def.schema.columns[c].name
                ),
            });
        }
        // The cached columns are checked now, before anything is built.
        let fields = CachedFields::new(
            &self.def.name,
            &spec.name,
            &self.def.schema,
            &key_cols,
            &spec.cache,
        )?;
        if let Some(&c) = key_cols
            .iter()
            .chain(&fields.cols)
            .find(|&&c| self.layout.is_side(c))
        {
            return Err(side_column_in_index(
                &spec.name,
                &self.def.schema.columns[c].name,
            ));
        }
        let cat = self.db.catalog.lock();
        let taken = cat
            .tables
            .values()
            .flat_map(|t| &t.indexes)
            .any(|i| i.name.eq_ignore_ascii_case(&spec.name))
            || self
                .def
                .indexes
                .iter()
                .any(|i| i.name.eq_ignore_ascii_case(&spec.name))
            || self
                .new_indexes
                .iter()
                .any(|i| i.name.eq_ignore_ascii_case(&spec.name));
        if taken {
            return Err(StorageError::IndexExists(spec.name));
        }
        self.new_indexes.push(spec);
        Ok(())
    }

    pub fn schema(&self) -> &Schema {
        &self.def.schema
    }

    /// Rows appended so far.
    pub fn appended(&self) -> u64 {
        self.appended
    }

    /// Appends one row (checked against the schema).
    pub fn append(&mut self, row: &[Value]) -> Result<Tid> {
        self.scratch.clear();
        match &mut self.side {
            None => self
                .layout
                .encode(row, &mut self.scratch, &self.def.schema)?,
            Some(side) => {
                if row.len() != self.def.schema.len() {
                    return Err(StorageError::Schema(format!(
                        "row has {} values, table has {} columns",
                        row.len(),
                        self.def.schema.len()
                    )));
                }
                // Both rows are checked before either is written.
                let side_row: Vec<Value> = side.cols.iter().map(|&c| row[c].clone()).collect();
                let mut side_bytes = Vec::new();
                side.layout
                    .encode(&side_row, &mut side_bytes, &side.def.schema)?;
                let main_row = |side_tid: Tid| {
                    let mut out = row.to_vec();
                    for (i, &c) in side.cols.iter().enumerate() {
                        out[c] = if i == 0 {
                            Value::Int64(crate::row::encoding::address_of(side_tid))
                        } else {
                            Value::Null
                        };
                    }
                    out
                };
                self.layout.encode(
                    &main_row(Tid::new(0, 0)),
                    &mut self.scratch,
                    &self.def.schema,
                )?;
                let side_tid = side
                    .writer
                    .as_mut()
                    .expect("writer lives until commit")
                    .append(&side_bytes)?;
                side.appended += 1;
                self.scratch.clear();
                self.layout
                    .encode(&main_row(side_tid), &mut self.scratch, &self.def.schema)?;
            }
        }
        let tid = self
            .writer
            .as_mut()
            .expect("writer lives until commit")
            .append(&self.scratch)?;
        self.appended += 1;
        Ok(tid)
    }

    /// Appends every row of `old` (joined, in heap order) and commits: the
    /// rewrite of a compaction or a split.
    pub(crate) fn rewrite(mut self, old: &Table, progress: &dyn Progress) -> Result<LoadSummary> {
        let rows = old.rows();
        progress.phase(&format!("rewrite {}", old.name()), rows);
        old.scan_rows(|_, row| {
            self.append(&row)?;
            Ok(())
        })?;
        progress.advance(rows);
        self.commit(progress)
    }

    /// Makes the load durable and visible: heap pages fsynced, every index of the
    /// table (re)built into new files and fsynced, then the catalog swapped.
    pub fn commit(mut self, progress: &dyn Progress) -> Result<LoadSummary> {
        let db = self.db;
        self.writer.take().expect("commit once").finish()?;
        self.heap.flush()?;
        if let Some(s) = &mut self.side {
            s.writer.take().expect("commit once").finish()?;
            s.heap.flush()?;
        }

        // Every index of the table is rebuilt over the whole heap into a new file.
        let mut specs: Vec<IndexSpec> = self
            .def
            .indexes
            .iter()
            .map(|i| IndexSpec {
                name: i.name.clone(),
                columns: i.columns.clone(),
                leaf_fill: i.leaf_fill,
                cache: i.cache.clone(),
            })
            .collect();
        specs.extend(self.new_indexes.iter().cloned());
        let mut new_defs = Vec::new();
        let mut built = Vec::new();
        for spec in &specs {
            let file = db
                .catalog
                .lock()
                .new_file_name(&format!("{}.{}.idx", self.def.name, spec.name));
            let (key_cols, key_types) = resolve_columns(&self.def, &spec.columns)?;
            let entries =
                SortedEntries::collect(&self.heap, &self.layout, &key_cols, &key_types, progress)?;
            let btree = BTree::create(
                db.pool.clone(),
                &db.dir.join(&file),
                &spec.name,
                key_types,
                self.def.segment_pages,
            )?;
            progress.phase(&format!("build index {}", spec.name), entries.len() as u64);
            btree.bulk_build(entries.iter(), spec.leaf_fill)?;
            progress.advance(entries.len() as u64);
            btree.flush()?;
            new_defs.push(IndexDef {
                name: spec.name.clone(),
                columns: spec.columns.clone(),
                file,
                leaf_fill: spec.leaf_fill,
                entries: entries.len() as u64,
                cache: spec.cache.clone(),
                // A load rebuilds the indexes and drops hot partitions (its rows
                // may repeat a hot key); the next clustering makes them again.
                hot: None,
            });
            built.push(btree);
        }
        sync_dir(&db.dir.join("data"))?;

        let old_indexes = std::mem::take(&mut self.def.indexes);
        let mut def = self.def.clone();
        def.pages = self.heap.num_pages();
        def.rows += self.appended;
        def.indexes = new_defs;
        let side_def = self.side.as_ref().map(|s| {
            let mut d = s.def.clone();
            d.pages = s.heap.num_pages();
            d.rows += s.appended;
            d
        });
        {
            let mut cat = db.catalog.lock();
            if self.new_table && cat.tables.contains_key(&def.name) {
                return Err(StorageError::TableExists(def.name.clone()));
            }
            let mut next = cat.clone();
            next.tables.insert(def.name.clone(), def.clone());
            // A table that is no longer split loses its side table here
            // (`split.rs`): the same swap.
            if let Some(old) = cat.tables.get(&def.name).and_then(|o| o.side.clone())
                && def.side.as_ref() != Some(&old)
            {
                next.tables.remove(&old);
            }
            if let Some(d) = &side_def {
                next.tables.insert(d.name.clone(), d.clone());
            }
            next.save(&db.dir)?;
            *cat = next;
        }
        // The side table's new handle, which the table's points to.
        let side = match (&self.side, &side_def) {
            (Some(s), Some(d)) => {
                let heat = db
                    .tables
                    .lock()
                    .get(&d.name)
                    .filter(|_| s.replaces.is_none())
                    .map(|t| t.heat.clone())
                    .unwrap_or_else(|| {
                        Arc::new(crate::heat::AccessCounts::load(
                            &crate::heat::AccessCounts::path_of(&db.dir.join(&d.heap_file)),
                        ))
                    });
                let t = Arc::new(Table {
                    name: d.name.clone(),
                    schema: d.schema.clone(),
                    layout: s.layout.clone(),
                    heap: s.heap.clone(),
                    heap_file: d.heap_file.clone(),
                    indexes: vec![],
                    rows: AtomicU64::new(d.rows),
                    committed: Mutex::new((d.pages, d.rows)),
                    segment_pages: d.segment_pages,
                    owner: db.owner.clone(),
                    cold: false,
                    heat,
                    side: None,
                });
                db.tables.lock().insert(d.name.clone(), t.clone());
                Some(SidePart::of(&self.layout, t))
            }
            _ => None,
        };
        // Committed: the open table now uses the new indexes (and the same heap);
        // the old index files go.
        let mut indexes = Vec::new();
        for (idef, btree) in def.indexes.iter().zip(built) {
            let (key_cols, key_types) = resolve_columns(&def, &idef.columns)?;
            indexes.push(Index::new(
                idef.clone(),
                &def.schema,
                &def.name,
                key_cols,
                key_types,
                btree,
            )?);
        }
        // The counts go on (a load appends; tids stay where they were), but
        // not over a rewritten heap, whose tids are new.
        let heat = db
            .tables
            .lock()
            .get(&def.name)
            .filter(|_| self.replaces.is_none())
            .map(|t| t.heat.clone())
            .unwrap_or_else(|| {
                Arc::new(crate::heat::AccessCounts::load(
                    &crate::heat::AccessCounts::path_of(&db.dir.join(&def.heap_file)),
                ))
            });
        let table = Arc::new(Table {
            name: def.name.clone(),
            schema: def.schema.clone(),
            layout: self.layout.clone(),
            heap: self.heap.clone(),
            heap_file: def.heap_file.clone(),
            indexes,
            rows: AtomicU64::new(def.rows),
            committed: Mutex::new((def.pages, def.rows)),
            segment_pages: def.segment_pages,
            owner: db.owner.clone(),
            // Loads are refused on cold tables (`begin_load`).
            cold: false,
            heat,
            side,
        });
        if let Some(old) = db.tables.lock().insert(def.name.clone(), table) {
            for i in old.trees() {
                db.pool.discard_file(i.btree().file_id())?;
                db.device.close(i.btree().file_id());
            }
        }
        let side_replaces = self.side.as_mut().and_then(|s| s.replaces.take());
        if let Some(old) = &self.retire {
            db.tables.lock().remove(old.name());
        }
        for old in self
            .replaces
            .take()
            .into_iter()
            .chain(side_replaces)
            .chain(self.retire.take())
        {
            db.pool.discard_file(old.heap.file_id())?;
            db.device.close(old.heap.file_id());
            let old_heap = db.dir.join(&old.heap_file);
            remove_files(&db.dir, &old.heap_file)?;
            let _ = std::fs::remove_file(crate::heat::AccessCounts::path_of(&old_heap));
        }
        for i in &old_indexes {
            remove_files(&db.dir, &i.file)?;
            if let Some(h) = &i.hot {
                remove_files(&db.dir, &h.file)?;
            }
        }
        let summary = LoadSummary {
            rows_appended: self.appended,
            rows_total: def.rows,
            pages_total: def.pages,
            indexes_built: def.indexes.len(),
        };
        self.appended = 0;
        self.new_table = false;
        if let Some(s) = &mut self.side {
            s.appended = 0;
        }
        Ok(summary)
    }
}

impl Drop for TableLoad<'_> {
    /// An uncommitted load gives its pages back (a new table's files are removed
    /// at the next read-write open if this process dies first).
    fn drop(&mut self) {
        let dev = self.db.device();
        if self.writer.is_some() || self.appended > 0 {
            let committed = self.def.pages;
            self.db.pool.discard_from(self.heap.file_id(), committed);
            let _ = dev.truncate(self.heap.file_id(), committed);
            self.heap.reset_pages(committed);
        }
        if let Some(s) = &self.side
            && (s.writer.is_some() || s.appended > 0)
        {
            let committed = s.def.pages;
            self.db.pool.discard_from(s.heap.file_id(), committed);
            let _ = dev.truncate(s.heap.file_id(), committed);
            s.heap.reset_pages(committed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> DbOptions {
        DbOptions {
            buffer_pool_bytes: 2 << 20,
            direct_io: false,
            profile: None,
            read_only: false,
            faults: None,
            checkpoint_log_bytes: CHECKPOINT_LOG_BYTES,
            cold_tier: None,
        }
    }

    fn rows(n: i64, start: i64) -> impl Iterator<Item = Vec<Value>> {
        (start..start + n).map(|i| {
            vec![
                Value::Int64(i),
                Value::Int32((i % 1000) as i32),
                Value::Str(format!("row {i}")),
            ]
        })
    }

    /// Single-row changes keep the heap and every index in step (checked by
    /// `check` after a checkpoint and a reopen) and the row count right.
    #[test]
    fn row_changes_keep_indexes_consistent() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), opts()).unwrap();
        let schema = Schema::parse("id BIGINT, grp INT, note VARCHAR(20)").unwrap();
        let topts = TableOptions {
            fill_factor: 0.5,
            segment_pages: 8,
        };
        let mut load = db
            .begin_create_load("t", schema, topts, vec![IndexSpec::new("t_grp", &["grp"])])
            .unwrap();
        let mut tids = Vec::new();
        for r in rows(2000, 0) {
            tids.push(load.append(&r).unwrap());
        }
        load.commit(&NoProgress).unwrap();
        let t = db.table("t").unwrap();
        let e = t.delete_row(tids[0]).unwrap_err().to_string();
        assert!(e.contains("needs a write transaction"), "{e}");
        let txn = db.begin_write().unwrap();
        for i in 0..300i64 {
            let tid = tids[i as usize];
            match i % 4 {
                0 => t.delete_row(tid).unwrap(),
                1 => {
                    let row = vec![Value::Int64(i), Value::Int32(7), Value::Str("x".repeat(20))];
                    tids[i as usize] = t.update_row(tid, &row).unwrap();
                }
                2 => tids[i as usize] = t.move_row(tid, None).unwrap(),
                _ => {
                    t.insert_row(&[
                        Value::Int64(10_000 + i),
                        Value::Int32(3),
                        Value::Str("new".into()),
                    ])
                    .unwrap();
                }
            }
        }
        let e = t.delete_row(tids[0]).unwrap_err().to_string();
        assert!(e.contains("no tuple at page") && e.contains("'t'"), "{e}");
        assert_eq!(t.rows(), 2000 - 75 + 75);
        txn.commit().unwrap();
        drop(t);
        drop(db);
        let db = Database::open(dir.path(), opts()).unwrap();
        let report = crate::check::check_database(&db, &NoProgress).unwrap();
        assert_eq!(report[0].rows, 2000);
        let t = db.table("t").unwrap();
        assert_eq!(
            t.index("t_grp")
                .unwrap()
                .btree
                .lookup(&t.index("t_grp").unwrap().key_of_row(&[
                    Value::Int64(0),
                    Value::Int32(7),
                    Value::Null
                ]))
                .unwrap()
                .len(),
            75 + 2
        );
    }

    /// Appending to a table whose last segment is partly full, with small segments,
    /// rebuilds its index over every row (a crash-loop failure once).
    #[test]
    fn statistics_survive_loads_and_reopen_until_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), opts()).unwrap();
        let schema = Schema::parse("id BIGINT, grp INT, note VARCHAR(20)").unwrap();
        let mut load = db
            .begin_create_load("t", schema, TableOptions::default(), vec![])
            .unwrap();
        for r in rows(100, 0) {
            load.append(&r).unwrap();
        }
        load.commit(&NoProgress).unwrap();
        assert_eq!(db.table_stats("t").unwrap(), None);
        db.set_table_stats("t", serde_json::json!({"rows": 100}))
            .unwrap();
        let mut load = db.begin_load("t").unwrap();
        for r in rows(100, 100) {
            load.append(&r).unwrap();
        }
        load.commit(&NoProgress).unwrap();
        // stale on purpose: the load did not refresh them
        assert_eq!(
            db.table_stats("t").unwrap(),
            Some(serde_json::json!({"rows": 100}))
        );
        assert!(matches!(
            db.set_table_stats("nope", serde_json::json!(1)),
            Err(StorageError::UnknownTable(_))
        ));
        drop(db);
        let db = Database::open(dir.path(), opts()).unwrap();
        assert_eq!(db.table("t").unwrap().rows(), 200);
        assert_eq!(
            db.table_stats("t").unwrap(),
            Some(serde_json::json!({"rows": 100}))
        );
    }

    #[test]
    fn append_loads_index_every_row() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), opts()).unwrap();
        let schema = Schema::parse("id BIGINT, grp INT, note VARCHAR(20)").unwrap();
        let topts = TableOptions {
            fill_factor: 1.0,
            segment_pages: 32,
        };
        let mut load = db
            .begin_create_load("t", schema, topts, vec![IndexSpec::new("t_grp", &["grp"])])
            .unwrap();
        for r in rows(60_000, 0) {
            load.append(&r).unwrap();
        }
        load.commit(&NoProgress).unwrap();
        for round in 1..=3 {
            let mut load = db.begin_load("t").unwrap();
            for r in rows(60_000, round * 60_000) {
                load.append(&r).unwrap();
            }
            let s = load.commit(&NoProgress).unwrap();
            assert_eq!(s.rows_total, 60_000 * (round as u64 + 1));
            let t = db.table("t").unwrap();
            assert_eq!(
                t.index("t_grp").unwrap().btree.len(),
                s.rows_total,
                "round {round}"
            );
            let mut n = 0;
            t.scan_rows(|_, _| {
                n += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!(n, s.rows_total);
        }
        drop(db);
        let db = Database::open(dir.path(), opts()).unwrap();
        let report = crate::check::check_database(&db, &NoProgress).unwrap();
        assert_eq!(report[0].rows, 240_000);
    }
}
