//! Write transactions of a SQL session.
//!
//! Every statement that changes rows runs in a write transaction
//! ([`Database::begin_write`]): its own, committed when the statement
//! succeeds and dropped (aborted) when it fails — or, between `BEGIN` and
//! `COMMIT`/`ROLLBACK`, the session's open one.
//!
//! A [`WriteTxn`] borrows the [`Database`] it writes, so the session cannot
//! keep one in a field next to its `Arc<Database>`. The open transaction lives
//! instead on a thread of the session's ([`Holder`], kept between
//! transactions), which holds an `Arc<Database>` and the transaction and
//! waits to be told to commit or roll back. The statements in between change rows through the database's tables
//! as usual: changes made while the transaction lives belong to it.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use strata_storage::{Database, StorageError};

use crate::error::SqlError;

/// What the holder thread is asked to do.
enum Request {
    Begin(Option<Duration>),
    Commit,
    Rollback,
}

/// The thread that holds a session's open transaction. It is kept between
/// transactions: a TPC-B-like transaction spent a twentieth of its time
/// starting a fresh one.
struct Holder {
    requests: Option<Sender<Request>>,
    answers: Receiver<Result<(), StorageError>>,
    thread: Option<JoinHandle<()>>,
}

impl Holder {
    fn start(db: Arc<Database>) -> Result<Holder, SqlError> {
        let (requests, inbox) = channel::<Request>();
        let (answer, answers) = channel::<Result<(), StorageError>>();
        let thread = std::thread::Builder::new()
            .name("strata-sql-transaction".into())
            .spawn(move || {
                while let Ok(request) = inbox.recv() {
                    let Request::Begin(limit) = request else {
                        // An end without a transaction: nothing to end.
                        let _ = answer.send(Ok(()));
                        continue;
                    };
                    let txn = match db.begin_write_within(limit) {
                        Ok(t) => t,
                        Err(e) => {
                            let _ = answer.send(Err(e));
                            continue;
                        }
                    };
                    let _ = answer.send(Ok(()));
                    // A session dropped without COMMIT closes the channel:
                    // abort, and end.
                    let result = match inbox.recv() {
                        Ok(Request::Commit) => txn.commit().map(|_| ()),
                        Ok(Request::Rollback) | Ok(Request::Begin(_)) => {
                            drop(txn);
                            Ok(())
                        }
                        Err(_) => return,
                    };
                    let _ = answer.send(result);
                }
            })
            .map_err(|e| SqlError::Execution(format!("cannot start a transaction thread: {e}")))?;
        Ok(Holder {
            requests: Some(requests),
            answers,
            thread: Some(thread),
        })
    }

    /// Asks the thread and waits for its answer.
    fn ask(&mut self, request: Request) -> Result<(), SqlError> {
        let sent = self
            .requests
            .as_ref()
            .is_some_and(|r| r.send(request).is_ok());
        match sent.then(|| self.answers.recv()) {
            Some(Ok(r)) => r.map_err(SqlError::from),
            _ => {
                self.join();
                Err(SqlError::Execution(
                    "the transaction thread ended unexpectedly".into(),
                ))
            }
        }
    }

    fn join(&mut self) {
        self.requests = None;
        if let Some(t) = self.thread.take() {
            // The thread only begins, commits and rolls back; a panic there
            // is a bug to report, not to hide.
            if let Err(p) = t.join() {
                std::panic::resume_unwind(p);
            }
        }
    }
}

impl Drop for Holder {
    /// Closing the requests ends the thread, rolling back a transaction
    /// that was never ended (the session went away).
    fn drop(&mut self) {
        self.requests = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// An open write transaction, held by its session's holder thread.
struct Transaction {
    holder: Holder,
}

/// The session's transaction block (`BEGIN` ... `COMMIT`).
enum Block {
    /// No `BEGIN`: every write statement is a transaction of its own.
    None,
    /// `BEGIN` ran and nothing was written yet. The writer turn is taken at
    /// the block's first write, so a block that only reads (as drivers open
    /// one before every statement) never holds other sessions' writes up.
    Begun,
    /// The block wrote: it holds the database's writer turn until it ends.
    Writing(Transaction),
}

/// Where a session's writes go: the open transaction, or one per statement.
pub struct Writes {
    db: Arc<Database>,
    open: Mutex<Block>,
    /// How long a write waits for another session's transaction to end
    /// before it fails with SQLSTATE 55P03 (`lock_timeout`); `None` waits.
    lock_timeout: Mutex<Option<Duration>>,
    /// The holder thread between transactions.
    kept: Mutex<Option<Holder>>,
}

impl Writes {
    pub fn new(db: Arc<Database>) -> Arc<Writes> {
        Arc::new(Writes {
            db,
            open: Mutex::new(Block::None),
            lock_timeout: Mutex::new(None),
            kept: Mutex::new(None),
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
        self.end(Request::Commit, "COMMIT")
    }

    /// `ROLLBACK`: abandons the open transaction.
    pub fn rollback(&self) -> Result<(), SqlError> {
        self.end(Request::Rollback, "ROLLBACK")
    }

    fn end(&self, how: Request, what: &str) -> Result<(), SqlError> {
        match std::mem::replace(&mut *self.open.lock(), Block::None) {
            Block::None => Err(SqlError::Query(format!(
                "{what} without a transaction (BEGIN starts one)"
            ))),
            Block::Begun => Ok(()),
            Block::Writing(Transaction { mut holder }) => {
                let ended = holder.ask(how);
                if holder.thread.is_some() {
                    *self.kept.lock() = Some(holder);
                }
                ended
            }
        }
    }

    /// Opens the block's transaction on the kept holder thread (started the
    /// first time, or again after it ended).
    fn begin_transaction(&self) -> Result<Transaction, SqlError> {
        let kept = self.kept.lock().take();
        let mut holder = match kept {
            Some(h) => h,
            None => Holder::start(self.db.clone())?,
        };
        match holder.ask(Request::Begin(self.lock_timeout())) {
            Ok(()) => Ok(Transaction { holder }),
            Err(e) => {
                if holder.thread.is_some() {
                    *self.kept.lock() = Some(holder);
                }
                Err(e)
            }
        }
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
