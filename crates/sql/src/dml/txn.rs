//! Write transactions of a SQL session.
//!
//! Every statement that changes rows runs in a write transaction
//! ([`Database::begin_write`]): its own, committed when the statement
//! succeeds and dropped (aborted) when it fails — or, between `BEGIN` and
//! `COMMIT`/`ROLLBACK`, the session's open one, a [`HeldWriteTxn`] kept in
//! the session's [`Writes`] and ended by whichever thread runs the `COMMIT`
//! (the server's connection task or the session's statement thread). The
//! statements in between change rows through the database's tables as usual:
//! changes made while the transaction lives belong to it.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use strata_storage::Database;
use strata_storage::db::HeldWriteTxn;

use crate::error::SqlError;

/// The session's transaction block (`BEGIN` ... `COMMIT`).
enum Block {
    /// No `BEGIN`: every write statement is a transaction of its own.
    None,
    /// `BEGIN` ran and nothing was written yet. The writer turn is taken at
    /// the block's first write, so a block that only reads (as drivers open
    /// one before every statement) never holds other sessions' writes up.
    Begun,
    /// The block wrote: it holds the database's writer turn until it ends.
    Writing(HeldWriteTxn),
}

/// Where a session's writes go: the open transaction, or one per statement.
pub struct Writes {
    db: Arc<Database>,
    open: Mutex<Block>,
    /// How long a write waits for another session's transaction to end
    /// before it fails with SQLSTATE 55P03 (`lock_timeout`); `None` waits.
    lock_timeout: Mutex<Option<Duration>>,
}

impl Writes {
    pub fn new(db: Arc<Database>) -> Arc<Writes> {
        Arc::new(Writes {
            db,
            open: Mutex::new(Block::None),
            lock_timeout: Mutex::new(None),
        })
    }

    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// Whether a `BEGIN` is waiting for its `COMMIT` or `ROLLBACK`.
    pub fn in_transaction(&self) -> bool {
        !matches!(*self.open.lock(), Block::None)
    }

    /// Whether the open transaction block has written (then its queries read
    /// its own changes, and it holds the writer turn).
    pub fn writing(&self) -> bool {
        matches!(*self.open.lock(), Block::Writing(_))
    }

    /// Takes the writer turn for the open block before its first write, so
    /// the turn is never waited for while holding a read guard (a writer
    /// committing waits for read guards). Nothing outside a block.
    pub fn start_writing(&self) -> Result<(), SqlError> {
        let mut open = self.open.lock();
        if matches!(*open, Block::Begun) {
            *open = Block::Writing(self.begin_transaction()?);
        }
        Ok(())
    }

    /// [`Writes::start_writing`] without waiting: whether the open block
    /// holds the writer turn now (taken here if it was free). False outside a
    /// block, and when another transaction holds the turn.
    pub fn try_start_writing(&self) -> Result<bool, SqlError> {
        let mut open = self.open.lock();
        match &*open {
            Block::None => Ok(false),
            Block::Writing(_) => Ok(true),
            Block::Begun => match self.db.try_begin_held_write()? {
                Some(txn) => {
                    *open = Block::Writing(txn);
                    Ok(true)
                }
                None => Ok(false),
            },
        }
    }

    /// Sets how long a write waits for the writer turn (`lock_timeout`).
    pub fn set_lock_timeout(&self, limit: Option<Duration>) {
        *self.lock_timeout.lock() = limit;
    }

    fn lock_timeout(&self) -> Option<Duration> {
        *self.lock_timeout.lock()
    }

    /// Refuses `what` (e.g. "INSERT") when the database was opened read-only.
    pub fn check_writable(&self, what: &str) -> Result<(), SqlError> {
        if self.db.is_read_only() {
            return Err(SqlError::Execution(format!(
                "database opened read-only: {what} cannot run ({})",
                self.db.read_only_reason()
            )));
        }
        Ok(())
    }

    /// `BEGIN`: opens the session's transaction.
    pub fn begin(&self) -> Result<(), SqlError> {
        self.check_writable("BEGIN")?;
        let mut open = self.open.lock();
        if !matches!(*open, Block::None) {
            return Err(SqlError::Query(
                "a transaction is already open (COMMIT or ROLLBACK it first)".into(),
            ));
        }
        *open = Block::Begun;
        Ok(())
    }

    /// `COMMIT`: makes the open transaction's changes durable.
    pub fn commit(&self) -> Result<(), SqlError> {
        match self.end("COMMIT")? {
            Some(txn) => txn.commit().map(|_| ()).map_err(SqlError::from),
            None => Ok(()),
        }
    }

    /// `ROLLBACK`: abandons the open transaction.
    pub fn rollback(&self) -> Result<(), SqlError> {
        // Dropping the transaction undoes it.
        self.end("ROLLBACK").map(drop)
    }

    /// Ends the block; its transaction, if it wrote.
    fn end(&self, what: &str) -> Result<Option<HeldWriteTxn>, SqlError> {
        match std::mem::replace(&mut *self.open.lock(), Block::None) {
            Block::None => Err(SqlError::Query(format!(
                "{what} without a transaction (BEGIN starts one)"
            ))),
            Block::Begun => Ok(None),
            Block::Writing(txn) => Ok(Some(txn)),
        }
    }

    /// Opens the block's transaction, waiting for the writer turn at most
    /// `lock_timeout`.
    fn begin_transaction(&self) -> Result<HeldWriteTxn, SqlError> {
        Ok(self.db.begin_held_write(self.lock_timeout())?)
    }

    /// Runs `apply` (the changes of one statement) inside the open
    /// transaction, or else inside a transaction of its own that commits when
    /// `apply` succeeds and aborts when it fails.
    pub fn apply<R>(
        &self,
        what: &str,
        apply: impl FnOnce(&Database) -> Result<R, SqlError>,
    ) -> Result<R, SqlError> {
        self.check_writable(what)?;
        // Held while the statement applies, so the transaction cannot end
        // under it.
        let mut open = self.open.lock();
        match &*open {
            Block::Writing(_) => return apply(&self.db),
            Block::Begun => {
                *open = Block::Writing(self.begin_transaction()?);
                return apply(&self.db);
            }
            Block::None => {}
        }
        drop(open);
        let txn = self.db.begin_write_within(self.lock_timeout())?;
        let r = apply(&self.db)?;
        txn.commit()?;
        Ok(r)
    }
}
