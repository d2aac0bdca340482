//! Write transactions ([`WriteTxn`], [`Database::begin_write`]) and the read
//! guards that keep a statement from seeing part of a commit
//! ([`ReadSnapshot`], [`OwnWrites`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::error::{Result, StorageError};
use crate::wal::{LogRecord, PageImage, TableSize};

use super::database::Database;
use super::table::Table;

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
    pub(super) db: DbRef<'a>,
    /// The writer turn while the transaction holds it.
    pub(super) writer: Option<parking_lot::ArcMutexGuard<parking_lot::RawMutex, ()>>,
}

/// A write transaction that owns its handle on the database, so it can
/// outlive the statement that began it: a session keeps one between `BEGIN`
/// and `COMMIT` and ends it from whichever thread runs the `COMMIT`
/// ([`Database::begin_held_write`]).
pub type HeldWriteTxn = WriteTxn<'static>;

/// The database a transaction writes: borrowed for one that lives within a
/// call, shared for a [`HeldWriteTxn`].
#[derive(Clone)]
pub(super) enum DbRef<'a> {
    Borrowed(&'a Database),
    Held(Arc<Database>),
}

impl std::ops::Deref for DbRef<'_> {
    type Target = Database;

    fn deref(&self) -> &Database {
        match self {
            DbRef::Borrowed(db) => db,
            DbRef::Held(db) => db,
        }
    }
}

/// A read statement's view: every commit up to `csn`, none after
/// ([`Database::read_snapshot`]).
pub struct ReadSnapshot<'a> {
    pub(super) _guard: parking_lot::RwLockReadGuard<'a, ()>,
    /// The last commit it sees.
    pub csn: u64,
}

/// See [`Database::read_own_writes`].
pub struct OwnWrites<'a> {
    pub(super) db: &'a Database,
    pub(super) _guard: parking_lot::RwLockWriteGuard<'a, ()>,
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
        self.begin_write_within(None)
    }

    /// Starts a write transaction, waiting for the one in progress at most
    /// `limit` ([`StorageError::LockTimeout`] after that); `None` waits as
    /// long as it takes.
    pub fn begin_write_within(&self, limit: Option<std::time::Duration>) -> Result<WriteTxn<'_>> {
        let turn = self.take_turn(limit)?;
        Ok(self.started(DbRef::Borrowed(self), turn))
    }

    /// [`Database::begin_write_within`] for a transaction kept beyond the
    /// call that begins it (between a session's statements).
    pub fn begin_held_write(
        self: &Arc<Self>,
        limit: Option<std::time::Duration>,
    ) -> Result<HeldWriteTxn> {
        let turn = self.take_turn(limit)?;
        Ok(self.started(DbRef::Held(self.clone()), turn))
    }

    /// A held write transaction if the writer turn is free now; `None` when
    /// another transaction (or a load, DDL, a checkpoint) holds it.
    pub fn try_begin_held_write(self: &Arc<Self>) -> Result<Option<HeldWriteTxn>> {
        self.writable()?;
        Ok(self
            .writer
            .try_lock_arc()
            .map(|turn| self.started(DbRef::Held(self.clone()), turn)))
    }

    fn take_turn(
        &self,
        limit: Option<std::time::Duration>,
    ) -> Result<parking_lot::ArcMutexGuard<parking_lot::RawMutex, ()>> {
        self.writable()?;
        match limit {
            None => Ok(self.writer.lock_arc()),
            Some(l) => self
                .writer
                .try_lock_arc_for(l)
                .ok_or(StorageError::LockTimeout {
                    waited_ms: l.as_millis() as u64,
                }),
        }
    }

    fn started<'a>(
        &self,
        db: DbRef<'a>,
        turn: parking_lot::ArcMutexGuard<parking_lot::RawMutex, ()>,
    ) -> WriteTxn<'a> {
        self.pool.begin_capture();
        self.owner.0.store(true, Ordering::Release);
        WriteTxn {
            db,
            writer: Some(turn),
        }
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
        let db = self.db.clone();
        let db = &*db;
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
                if let Some(d) = &t.deleted {
                    d.publish_marks();
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
    pub(super) fn log_records(
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
    pub(super) fn abort(&mut self) {
        let db = self.db.clone();
        let db = &*db;
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
            if let Some(d) = &t.deleted {
                d.forget_marks();
            }
        }
        self.end();
    }

    pub(super) fn end(&mut self) {
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

impl Database {
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

    /// [`Database::read_snapshot`] if it can be had without waiting (no
    /// commit is publishing or waiting to); for a caller that must not
    /// block, and goes another way when it cannot.
    pub fn try_read_snapshot(&self) -> Option<ReadSnapshot<'_>> {
        Some(ReadSnapshot {
            _guard: self.publish.try_read()?,
            csn: self.csn(),
        })
    }

    /// [`Database::read_own_writes`] if no read statement is running.
    pub fn try_read_own_writes(&self) -> Option<OwnWrites<'_>> {
        let guard = self.publish.try_write()?;
        self.pool.set_own_reads(true);
        Some(OwnWrites {
            db: self,
            _guard: guard,
        })
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
}
