//! Statements a caller may run on its own thread, without the hand-off to a
//! statement thread: the ones that do a bounded amount of work and never
//! wait for another session.
//!
//! A server answers an OLTP client's statements one at a time, and most of
//! them are tiny: `BEGIN`, a lookup by a unique key, an `UPDATE` of one row
//! by its key inside a block that already holds the writer turn. Handing
//! such a statement to the session's statement thread and its answer back
//! costs two thread wake-ups, each more than the statement itself on a
//! virtual machine (pgbench's select-only spent more time switching threads
//! than looking up). So the server first offers each statement here
//! ([`SqlSession::run_inline`]); what is not one of these kinds comes back
//! untouched (`None`, nothing done) and goes to the statement thread.
//!
//! Inline means: no DataFusion planning (it needs the session's runtime and
//! a deep stack), no wait for the writer turn (a block's first write, and a
//! write outside a block, take it and may wait `lock_timeout`), no catalog
//! refresh (registering views plans them). What remains reads or changes a
//! few pages: `BEGIN`, `ROLLBACK`, the point queries of
//! [`crate::dml::direct_select`], and the direct writes of
//! [`crate::dml::direct_dml`] and [`crate::dml::direct_insert`] inside a block
//! that holds the writer turn or finds it free — and `COMMIT`, whose wait
//! for the log's sync runs in the caller's `sync` (a worker of an async
//! runtime lets its other tasks go on meanwhile).

use std::sync::atomic::Ordering;
use std::time::Instant;

use datafusion::execution::SessionState;
use datafusion::sql::parser::Statement as DfStatement;

use super::{Engine, LONG_STATEMENT, QueryResult, SqlError, SqlSession};
use crate::dml::direct_select::{self, DirectSelect};
use crate::dml::direct_write::DirectWrite;
use crate::dml::{self, direct_dml};
use crate::parse_cache::Shape;
use crate::statement::{self, Kind};

/// Statements answered inline in this process (tests assert they were).
pub static INLINE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl SqlSession {
    /// Runs `sql` on the calling thread when it is one of the statements
    /// described above; `None` when it is not, and then nothing was done:
    /// run it with [`SqlSession::execute_until`] or [`SqlSession::spawn`].
    ///
    /// The caller's thread needs the stack of a statement thread
    /// ([`crate::rules::depth::STACK_BYTES`]): parsing recurses as the
    /// statement nests. Only short statements ([`LONG_STATEMENT`] bytes at
    /// most) run here. A panic is caught and answered as an error, as on a
    /// statement thread.
    ///
    /// `sync` runs the one part that waits for the device rather than for
    /// another session: a `COMMIT`'s wait for its log sync (shared with the
    /// commits beside it). A caller on an async runtime's worker passes what
    /// lets the worker's other tasks go on meanwhile (tokio's
    /// `block_in_place`); any other caller, `|f| f()`.
    pub fn run_inline(
        &self,
        sql: &str,
        sync: &dyn Fn(&mut dyn FnMut()),
    ) -> Option<Result<QueryResult, SqlError>> {
        let engine = self.engine();
        if sql.len() > LONG_STATEMENT || engine.db.is_read_only() || !engine.catalog_current() {
            return None;
        }
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            engine.run_inline(sql, sync)
        }));
        let answer = match ran {
            Ok(answer) => answer?,
            Err(_) => Err(SqlError::Execution(
                "the statement failed: it panicked (see the server's log)".into(),
            )),
        };
        INLINE.fetch_add(1, Ordering::Relaxed);
        Some(answer)
    }
}

/// Whether the first word of `sql` can start an inline statement; anything
/// else is not parsed here at all.
fn may_be_inline(sql: &str) -> bool {
    statement::first_word_of(
        sql,
        &[
            "SELECT", "BEGIN", "START", "UPDATE", "DELETE", "INSERT", "COMMIT", "END", "ROLLBACK",
            "ABORT",
        ],
    )
    .is_some()
}

impl Engine {
    /// Whether the session's context holds the catalog as it is now.
    fn catalog_current(&self) -> bool {
        self.known.lock().saves == strata_storage::catalog::Catalog::saves()
    }

    fn run_inline(
        &self,
        sql: &str,
        sync: &dyn Fn(&mut dyn FnMut()),
    ) -> Option<Result<QueryResult, SqlError>> {
        if !may_be_inline(sql) {
            return None;
        }
        let device = self.db.device().clone();
        device.stats().forget_position();
        let before = device.stats().snapshot();
        let start = Instant::now();
        let answer = |schema, batches| {
            Ok(QueryResult {
                schema,
                batches,
                elapsed: start.elapsed(),
                io: device.stats().snapshot() - before,
            })
        };
        let shape = crate::parse_cache::shape(sql);
        // A point query of a shape planned before, under these settings and
        // this catalog: the kept plan with its own literals, not parsed
        // (`crate::dml::point_plans`).
        let saves = self.known.lock().saves;
        let kept = |settings, state: Option<&SessionState>| {
            let shape = shape.as_ref()?;
            self.points
                .plan(shape, settings, saves, &self.writes, state)
        };
        // A lookup whose key names more than a batch of rows answers
        // nothing here (`DirectSelect::run`).
        let looked_up = |point: &DirectSelect| match point.run(&self.writes) {
            Ok(Some((schema, batches))) => Some(answer(schema, batches)),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        };
        let run_point = |point: DirectSelect| {
            let _guard = self.try_read_guard()?;
            looked_up(&point)
        };
        if let Some(point) = kept(self.settings.load(Ordering::Acquire), None) {
            return run_point(point);
        }
        let (settings, state) = self.state();
        // The settings version moved since the plan was kept: it still holds
        // if what it depends on did not change.
        if let Some(point) = kept(settings, Some(&state)) {
            self.keep(settings, state);
            return run_point(point);
        }
        let dialect = state.config().options().sql_parser.dialect;
        // A statement of a shape parsed before is a copy of its tree with
        // its own literals (`crate::parse_cache`). One that does not parse
        // goes the usual way, which words its error.
        let stmt = self
            .parsed
            .parse_shaped(sql, shape.as_ref(), dialect.as_ref(), |sql| {
                state.sql_to_statement(sql, &dialect).ok()
            })
            .map(crate::rules::exponent_literal::exponents_as_double)
            .map(crate::pg_catalog::rewrite::for_postgres);
        let kind = stmt.as_ref().and_then(|s| statement::classify(s).ok());
        let (Some(stmt), Some(kind)) = (stmt, kind) else {
            self.keep(settings, state);
            return None;
        };
        let done = || {
            let (schema, batches) = super::nothing();
            answer(schema, batches)
        };
        let direct = direct_dml::enabled(&state);
        match kind {
            Kind::Begin => {
                self.keep(settings, state);
                Some(self.writes.begin().and_then(|()| done()))
            }
            Kind::Commit => {
                self.keep(settings, state);
                let mut ended = None;
                sync(&mut || ended = Some(self.writes.commit()));
                let ended = ended
                    .unwrap_or_else(|| Err(SqlError::Execution("the COMMIT did not run".into())));
                Some(ended.and_then(|()| done()))
            }
            Kind::Rollback => {
                self.keep(settings, state);
                Some(self.writes.rollback().and_then(|()| done()))
            }
            // Only inside a block that holds the writer turn or takes it now,
            // free: waiting for it is the statement thread's.
            Kind::Write(_)
                if direct
                    && !dml::returning::has_returning(&stmt)
                    && is_plain(&stmt)
                    && matches!(self.writes.try_start_writing(), Ok(true)) =>
            {
                let write = self.direct_write(&stmt, shape.as_ref(), &state, settings, saves);
                self.keep(settings, state);
                let write = write?;
                // A read statement in progress: waiting for it is the
                // statement thread's.
                let _own = self.db.try_read_own_writes()?;
                let n = write.run(&stmt, &self.db, &self.writes);
                Some(
                    n.and_then(dml::count_batch)
                        .and_then(|count| answer(count.schema(), vec![count])),
                )
            }
            Kind::Other => {
                let Some(_guard) = self.try_read_guard() else {
                    self.keep(settings, state);
                    return None;
                };
                let point = direct_select::plan(&stmt, &state, &self.writes);
                if let (Some(point), Some(shape)) = (&point, &shape) {
                    self.points
                        .learn(&stmt, shape, point, &state, settings, saves);
                }
                self.keep(settings, state);
                looked_up(&point?)
            }
            _ => {
                self.keep(settings, state);
                None
            }
        }
    }
}

impl Engine {
    /// A write planned from its syntax tree ([`crate::dml::direct_write`]),
    /// or for a statement of a shape planned before under these settings
    /// and this catalog, the kept plan with its own literals
    /// ([`crate::dml::write_plans`]); `None` leaves it to DataFusion.
    pub(super) fn direct_write(
        &self,
        stmt: &DfStatement,
        shape: Option<&Shape>,
        state: &SessionState,
        settings: u64,
        saves: u64,
    ) -> Option<DirectWrite> {
        if let Some(shape) = shape
            && let Some(write) = self
                .write_plans
                .plan(shape, settings, saves, state, &self.writes)
        {
            return Some(write);
        }
        let write = crate::dml::direct_write::plan(stmt, state, &self.writes)?;
        if let Some(shape) = shape {
            self.write_plans
                .learn(shape, &write, state, settings, saves, &self.writes);
        }
        Some(write)
    }
}

/// What a read statement run inline holds: its snapshot, or inside a block
/// that writes, the block's own writes.
enum ReadGuard<'a> {
    Snapshot {
        _guard: strata_storage::db::ReadSnapshot<'a>,
    },
    Own {
        _guard: strata_storage::db::OwnWrites<'a>,
    },
}

impl Engine {
    /// The guard for a read statement, if it is free now. Neither guard is
    /// waited for here: a commit publishing (or waiting to), or for the
    /// block's own reads a read statement in progress, sends the query to
    /// the statement thread.
    fn try_read_guard(&self) -> Option<ReadGuard<'_>> {
        if self.writes.writing() {
            let _guard = self.db.try_read_own_writes()?;
            Some(ReadGuard::Own { _guard })
        } else {
            let _guard = self.db.try_read_snapshot()?;
            Some(ReadGuard::Snapshot { _guard })
        }
    }
}

/// Not `EXPLAIN` or any other wrapper: a statement of its own.
fn is_plain(stmt: &DfStatement) -> bool {
    matches!(stmt, DfStatement::Statement(_))
}
