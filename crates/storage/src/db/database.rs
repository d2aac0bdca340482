//! [`Database`]: opening (with recovery) and closing, the catalog, the tables
//! it has open, DDL (drop, close, caches), checkpoints and prewarming.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::btree::BTree;
use crate::btree::cache::fields::CachedFields;
use crate::buffer::BufferPool;
use crate::catalog::{Catalog, TableDef, sync_dir};
use crate::device::{
    COLD_MANIFEST_SUFFIX, Device, DeviceLayer, DeviceProfile, FaultDevice, FileDevice,
    ModeledDevice, cold_manifest_path,
};
use crate::error::{Result, StorageError};
use crate::heap::HeapFile;
use crate::row::RowLayout;
use crate::wal::{self, Wal};

use super::index::{Index, resolve_columns, side_column_in_index};
use super::options::DbOptions;
use super::table::{
    SidePart, Table, TxnOwner, cold_read_only, columnar_refused, side_table_refused,
};

/// Pages [`Database::prewarm`] reads per request (1 MiB).
pub(super) const PREWARM_RUN_PAGES: u64 = 128;

pub struct Database {
    pub(super) dir: PathBuf,
    /// Whether data files are read with `O_DIRECT` (`DbOptions::direct_io`).
    pub(super) direct_io: bool,
    /// State a layer above keeps per open database, one value per type
    /// (strata-columns' cache of column chunks).
    pub(super) extensions: Mutex<HashMap<std::any::TypeId, Arc<dyn std::any::Any + Send + Sync>>>,
    pub(super) device: Arc<dyn Device>,
    pub(super) pool: Arc<BufferPool>,
    pub(super) catalog: Mutex<Catalog>,
    pub(super) tables: Mutex<HashMap<String, Arc<Table>>>,
    pub(super) read_only: bool,
    pub(super) profile: Option<DeviceProfile>,
    /// Held by the one write transaction at a time ([`Database::begin_write`]),
    /// and by loads, DDL and checkpoints. In an `Arc` so a transaction a
    /// session keeps between statements owns its hold on it
    /// ([`Database::begin_held_write`]).
    pub(super) writer: Arc<Mutex<()>>,
    /// Whether a write transaction runs (row changes check it).
    pub(super) owner: Arc<TxnOwner>,
    /// Read statements hold it shared ([`Database::read_snapshot`]); a commit
    /// takes it to make its changes visible, so no statement sees part of one.
    pub(super) publish: parking_lot::RwLock<()>,
    /// The log (`None` when read-only).
    pub(super) wal: Option<Arc<Wal>>,
    /// The last commit sequence number handed out.
    pub(super) csn: AtomicU64,
    pub(super) checkpoint_log_bytes: u64,
    /// The cold tier wrapping the device, if any (tables on it can be
    /// opened only then).
    pub(super) cold_tier: Option<Arc<dyn DeviceLayer>>,
    /// Set by [`Database::crash`]: closing writes nothing back.
    pub(super) crashed: std::sync::atomic::AtomicBool,
    /// Read-only over a log redone in memory: it writes nothing, not even
    /// access counts when it closes.
    pub(super) redone_in_memory: bool,
    /// A writer's `LOCK`, a reader's `READERS` (`lock.rs`).
    pub(super) _lock: Option<File>,
    /// A read-only handle's snapshot guard: whether it refused a page a
    /// writer committed after the snapshot (`device/snapshot.rs`).
    pub(super) snapshot_moved: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// A read-only handle's snapshot: the checkpoint it starts from and the
    /// log position it ends at (`recovery::Recovered::snapshot_end`).
    pub(super) snapshot_at: Option<(u64, u64)>,
    /// The options it was opened with (a read-only handle reopens on a new
    /// snapshot with them).
    pub(super) options: DbOptions,
}

/// Times a read-only open, or a read on a read-only handle, is tried again on
/// a new snapshot when a writer beside it changed what it was reading.
pub const SNAPSHOT_TRIES: usize = 5;

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
        let lock = super::lock::lock(dir)?;
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
    /// left behind (see the module docs). A read-only open redoes the log in
    /// memory and writes nothing; it opens beside a writer, on a snapshot of
    /// the commits its log holds when it opens (`device/snapshot.rs`).
    pub fn open(dir: &Path, opts: DbOptions) -> Result<Database> {
        if !opts.read_only {
            return Self::open_once(dir, opts);
        }
        // A writer beside it may replace a file or log segment between the
        // reads that make the snapshot: a few tries, each on the newer state.
        // A checkpoint meanwhile (the log's redo point moved) may have removed
        // the segment the snapshot began to read, whatever the error says.
        let redo = || {
            wal::read_control(&dir.join(wal::WAL_DIR))
                .ok()
                .map(|c| c.redo_lsn)
        };
        let mut tries = 0;
        loop {
            let before = redo();
            match Self::open_once(dir, opts.clone()) {
                Err(e)
                    if tries < SNAPSHOT_TRIES
                        && (e.may_be_a_writer_beside() || redo() != before) =>
                {
                    tries += 1
                }
                r => return r,
            }
        }
    }

    fn open_once(dir: &Path, opts: DbOptions) -> Result<Database> {
        let lock = if opts.read_only {
            super::lock::reader(dir)?
        } else {
            Some(super::lock::lock(dir)?)
        };
        let mut catalog = Catalog::load(dir)?;
        // A modeled device charges its own time; only the real one is paced.
        let mut real: Arc<dyn Device> = Arc::new(
            FileDevice::new(opts.direct_io)
                .with_read_window(opts.read_window && opts.profile.is_none()),
        );
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
        let mut snapshot_moved = None;
        let mut snapshot_csn = None;
        let mut snapshot_at = None;
        if opts.read_only {
            let (redone, r) =
                crate::recovery::recover_in_memory(dir, &mut catalog, device.clone())?;
            let guard = crate::device::SnapshotDevice::new(redone, r.snapshot_end);
            snapshot_moved = Some(guard.moved());
            device = Arc::new(guard);
            snapshot_csn = Some(r.csn);
            snapshot_at = Some((r.redo_lsn, r.snapshot_end));
            if r.transactions > 0 {
                in_memory = Some(r);
            }
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
        let csn = match (recovered.as_ref(), snapshot_csn) {
            (Some(r), _) => r.csn,
            (None, Some(c)) => c,
            (None, None) => wal::read_control(&dir.join(wal::WAL_DIR))?.csn,
        };
        let db = Database {
            dir: dir.to_path_buf(),
            device,
            pool,
            catalog: Mutex::new(catalog),
            tables: Mutex::new(HashMap::new()),
            read_only: opts.read_only,
            profile: opts.profile.clone(),
            writer: Arc::new(Mutex::new(())),
            owner: Arc::default(),
            publish: parking_lot::RwLock::new(()),
            wal,
            csn: AtomicU64::new(csn),
            checkpoint_log_bytes: opts.checkpoint_log_bytes,
            cold_tier: opts.cold_tier.clone(),
            crashed: Default::default(),
            redone_in_memory: in_memory.is_some(),
            _lock: lock,
            snapshot_moved,
            snapshot_at,
            options: opts.clone(),
            direct_io: opts.direct_io,
            extensions: Mutex::default(),
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
        super::lock::read_only_reason(&self.dir, self.redone_in_memory)
    }

    /// Whether this read-only handle refused a page a writer committed after
    /// its snapshot: its statements must run again on a new one
    /// ([`Database::reopen`]). Always false for a read-write handle.
    pub fn snapshot_moved(&self) -> bool {
        self.snapshot_moved
            .as_ref()
            .is_some_and(|m| m.load(Ordering::Acquire))
    }

    /// Whether a writer has committed or checkpointed since this read-only
    /// handle took its snapshot (its log holds a commit past the snapshot's
    /// end, or starts at another checkpoint): a statement that must see
    /// every commit made before it began runs on a new one
    /// ([`Database::reopen`]). Always false for a read-write handle.
    pub fn snapshot_is_stale(&self) -> bool {
        let Some((redo, end)) = self.snapshot_at else {
            return false;
        };
        match wal::read_control(&self.dir.join(wal::WAL_DIR)) {
            Ok(c) if c.redo_lsn == redo => {}
            _ => return true,
        }
        match wal::read_log(&self.dir, end) {
            Ok((records, _)) => records
                .iter()
                .any(|(_, r)| matches!(r, wal::LogRecord::Commit { .. })),
            Err(_) => true,
        }
    }

    /// Whether a read that failed on this read-only handle is worth running
    /// again on a new snapshot ([`Database::reopen`]): it met a page a later
    /// commit wrote back, or a writer has committed since (a file it read
    /// may have been replaced). Always false for a read-write handle.
    pub fn worth_a_new_snapshot(&self) -> bool {
        self.snapshot_moved() || self.snapshot_is_stale()
    }

    /// The same database opened again with the same options: for a
    /// read-only handle, a new snapshot with every commit made since.
    pub fn reopen(&self) -> Result<Database> {
        Database::open(&self.dir, self.options.clone())
    }

    /// The cold tier layer the database was opened with (`DbOptions::cold_tier`).
    pub fn cold_tier(&self) -> Option<&Arc<dyn DeviceLayer>> {
        self.cold_tier.as_ref()
    }

    /// Whether data files are read with `O_DIRECT` (`DbOptions::direct_io`):
    /// every read goes to the device, so every run is cold.
    pub fn direct_io(&self) -> bool {
        self.direct_io
    }

    /// The value of type `T` a layer above keeps for this database, made by
    /// `make` on first use.
    pub fn extension<T: std::any::Any + Send + Sync>(&self, make: impl FnOnce() -> T) -> Arc<T> {
        let any = self
            .extensions
            .lock()
            .entry(std::any::TypeId::of::<T>())
            .or_insert_with(|| Arc::new(make()))
            .clone();
        any.downcast::<T>()
            .expect("an extension is keyed by its type")
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
    pub(super) fn change_table_def<T>(
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
    pub(super) fn remove_orphans(&self) -> Result<()> {
        let cat = self.catalog.lock();
        let mut live = BTreeSet::new();
        for t in cat.tables.values() {
            live.insert(t.heap_file.clone());
            for c in t.columns.iter().flat_map(|c| &c.files) {
                live.insert(c.file.clone());
            }
            for f in t.columns.iter().flat_map(|c| c.tree_files()) {
                live.insert(f.clone());
            }
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
            // So is a local column file (named as it is, not a segment)
            // whose manifest exists.
            let stale_copy = (segment || base == name)
                && data.join(format!("{base}{COLD_MANIFEST_SUFFIX}")).exists();
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
            let _ = std::fs::remove_file(super::heat::AccessCounts::path_of(
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
        for c in def.columns.iter().flat_map(|c| &c.files) {
            remove_column_file(&self.dir, &c.file)?;
        }
        for f in def.columns.iter().flat_map(|c| c.tree_files()) {
            remove_files(&self.dir, f)?;
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
        let (gone, column_tree) = self.change_table_def(table, |def| {
            let at = def.index_position(index)?;
            let gone = def.indexes.remove(at);
            let tree = def.columns.as_mut().and_then(|c| {
                let at = c.indexes.iter().position(|i| i.index == gone.name)?;
                Some(c.indexes.remove(at))
            });
            Ok((gone, tree))
        })?;
        // The table reopens from the catalog the next time it is asked for.
        self.tables.lock().remove(table);
        self.pool.discard_file(file)?;
        self.device.close(file);
        if let Some(t) = open.index(index)?.column_tree() {
            self.pool.discard_file(t.file_id())?;
            self.device.close(t.file_id());
        }
        if let Some(t) = &column_tree {
            remove_files(&self.dir, &t.file)?;
        }
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
    /// the column that makes the items too wide (see `btree/cache/fields.rs`).
    /// (`strata index cache` calls it; SQL's `CREATE INDEX ... WITH (cache =
    /// ...)` declares them at creation through [`IndexSpec::cache`].)
    pub fn set_index_cache(&self, table: &str, index: &str, columns: &[&str]) -> Result<()> {
        self.writable()?;
        let _writer = self.writer.lock();
        let open = self.table(table)?;
        let ix = open.index(index)?;
        if open.columns.is_some() && !columns.is_empty() {
            return Err(columnar_refused(table, "an index cache"));
        }
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
        if t.columns.is_some() {
            return Err(columnar_refused(
                name,
                "rewriting its heap (compact, split, cluster, ALTER TABLE)",
            ));
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
    pub(crate) fn drop_hot_files(&self, h: &super::index::HotPartition) -> Result<()> {
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

    pub(super) fn forget_table(&self, table: &Table) -> Result<()> {
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
            let _ = t.heat.save(&super::heat::AccessCounts::path_of(
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
    pub(super) fn forget_pending_cache_changes(&self) {
        for t in self.tables.lock().values() {
            for i in &t.indexes {
                i.pending.lock().clear();
            }
        }
    }

    /// The open tables owning `files`.
    pub(super) fn tables_of(
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
    pub(super) fn file_names(&self) -> HashMap<crate::device::FileId, String> {
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
                let _ = t.heat.save(&super::heat::AccessCounts::path_of(
                    &self.dir.join(&t.heap_file),
                ));
            }
        }
    }
}

impl Table {
    /// Opens table `def` of `db`.
    pub(super) fn open(db: &Database, def: TableDef) -> Result<Table> {
        let mut cold = false;
        for f in def.paged_files().iter().chain(&def.column_files()) {
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
            let mut ix = ix;
            if let Some(c) = def.columns.as_ref().and_then(|c| c.index_tree(&idef.name)) {
                ix.column_tree = Some(Arc::new(super::index::ColumnTree {
                    file: c.file.clone(),
                    btree: BTree::open(
                        db.pool.clone(),
                        &db.dir.join(&c.file),
                        &super::index::column_tree_name(&idef.name),
                        key_types.clone(),
                        def.segment_pages,
                    )?,
                }));
            }
            if let Some(h) = &idef.hot {
                let btree = BTree::open(
                    db.pool.clone(),
                    &db.dir.join(&h.file),
                    &format!("{} (hot partition)", idef.name),
                    key_types,
                    def.segment_pages,
                )?;
                ix.set_hot(Some(Arc::new(super::index::HotPartition {
                    def: h.clone(),
                    btree,
                })));
            }
            indexes.push(ix);
        }
        let heat = Arc::new(super::heat::AccessCounts::load(
            &super::heat::AccessCounts::path_of(&db.dir.join(&def.heap_file)),
        ));
        let side = match &def.side {
            Some(s) => Some(SidePart::of(&layout, db.table(s)?)),
            None => None,
        };
        let deleted = match def.columns.as_ref().and_then(|c| c.deleted.as_ref()) {
            Some(f) => Some(Arc::new(super::deletes::DeleteSet::open(
                db.pool.clone(),
                &db.dir,
                f,
                &def.name,
                def.segment_pages,
            )?)),
            None => None,
        };
        Ok(Table {
            side,
            deleted,
            heat,
            columns: def.columns,
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
}

/// Sets `def`'s row and index entry counts to what the open table `t` has.
pub(super) fn bring_counts_forward(def: &mut TableDef, t: &Table) {
    def.rows = t.rows();
    for (d, i) in def.indexes.iter_mut().zip(&t.indexes) {
        d.entries = i.btree.len();
        if let (Some(dh), Some(h)) = (d.hot.as_mut(), i.hot()) {
            dh.entries = h.btree.len();
        }
    }
}

/// Removes a columnar table's Parquet file (gone already: nothing to do).
pub(super) fn remove_column_file(dir: &Path, file: &str) -> Result<()> {
    let p = dir.join(file);
    match std::fs::remove_file(&p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StorageError::io(p, e)),
    }
}

pub(super) fn remove_files(dir: &Path, base: &str) -> Result<()> {
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
