//! A SQL session over a strata database: DataFusion with every strata table
//! registered, strata's settings, and the statements DataFusion does not have
//! or that strata runs itself: `ANALYZE`, `CREATE`/`DROP` of tables and
//! indexes ([`crate::ddl`]), and `BEGIN`/`COMMIT`/`ROLLBACK`
//! ([`crate::dml::txn`]). `INSERT`, `UPDATE` and `DELETE` are planned by DataFusion
//! and run by the tables' providers ([`crate::dml`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};
use std::time::{Duration, Instant};
use strata_storage::db::SNAPSHOT_TRIES;

use datafusion::arrow::array::{ArrayRef, Float64Array, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::dataframe::DataFrame;
use datafusion::execution::SessionState;
use datafusion::execution::context::{SessionConfig, SessionContext};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use strata_storage::Database;
use strata_storage::device::IoCounters;

pub use crate::error::SqlError;

pub mod inline;

use crate::ddl;
use crate::ddl::describe;
use crate::dml;
use crate::dml::direct_dml;
use crate::dml::txn::Writes;
use crate::explain_total;
use crate::options::StrataOptions;
use crate::prepare::Described;
use crate::rules::depth;
use crate::scan::provider::StrataTable;
use crate::shell::script::analyze_targets;
use crate::statement::{self, Kind};
use crate::statement_thread::{Worker, on_statement_thread};
use crate::stats;
use crate::stop::{Stop, Stopped};

/// One statement's result.
pub struct QueryResult {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
    pub elapsed: Duration,
    /// The device's counters over the statement.
    pub io: IoCounters,
}

impl QueryResult {
    pub fn rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    /// The rows an INSERT, UPDATE, DELETE or COPY without RETURNING wrote:
    /// its one `count` row ([`dml::count_batch`]); `None` for any other
    /// result.
    pub fn written(&self) -> Option<u64> {
        let f = self.schema.fields();
        if f.len() != 1 || f[0].name() != "count" || *f[0].data_type() != DataType::UInt64 {
            return None;
        }
        self.batches
            .iter()
            .find(|b| b.num_rows() > 0)
            .and_then(|b| {
                b.column(0)
                    .as_any()
                    .downcast_ref::<UInt64Array>()
                    .map(|a| a.value(0))
            })
    }
}

/// A SQL session: statements run one at a time per caller, each on a
/// statement thread ([`Worker`]) with [`depth::STACK_BYTES`] of stack.
pub struct SqlSession {
    /// Replaced only when a read-only handle moves to a new snapshot
    /// ([`SqlSession::new_snapshot`]).
    engine: RwLock<Arc<Engine>>,
    /// Tables made by [`SqlSession::register_batches`], registered again in
    /// a new snapshot's context.
    registered: Mutex<Vec<(String, Arc<dyn datafusion::catalog::TableProvider>)>>,
    /// Statement threads waiting for a statement. A statement takes one (or
    /// starts one) and gives it back when it ends, so a session used from one
    /// thread keeps one statement thread, and callers on several threads get
    /// one each.
    idle: Mutex<Vec<Worker>>,
}

/// Statements longer than this run on a thread of their own that ends with
/// them: only long statements nest deep (each level takes at least two
/// characters, `a+a+…`), and the stack a deep statement touched would stay
/// resident in a kept thread. Such a statement's thread start is small
/// beside its own planning.
const LONG_STATEMENT: usize = 1 << 10;

impl SqlSession {
    /// A session over `db` with every table registered.
    pub fn new(db: Arc<Database>) -> Result<SqlSession, SqlError> {
        Ok(SqlSession {
            engine: RwLock::new(Arc::new(Engine::new(db)?)),
            registered: Mutex::new(Vec::new()),
            idle: Mutex::new(Vec::new()),
        })
    }

    fn engine(&self) -> Arc<Engine> {
        self.engine.read().clone()
    }

    /// The database its statements run on (for a read-only handle, the one
    /// of its latest snapshot).
    pub fn database(&self) -> Arc<Database> {
        self.engine().db.clone()
    }

    /// Whether a `BEGIN` is waiting for its `COMMIT` or `ROLLBACK`.
    pub fn in_transaction(&self) -> bool {
        self.engine().writes.in_transaction()
    }

    /// Sets a session setting, like `SET key = value`.
    pub fn set(&self, key: &str, value: &str) -> Result<(), SqlError> {
        self.execute(&format!("SET {key} = '{value}'")).map(|_| ())
    }

    /// Runs one statement.
    pub fn execute(&self, sql: &str) -> Result<QueryResult, SqlError> {
        self.run(sql, Stop::never())?
            .map_err(|_| SqlError::Execution("statement ran out of time".into()))
    }

    /// Runs one statement, cancelling it after `limit`; `None` when cancelled.
    /// Cancelling drops the plan's streams, which stops strata's scan threads.
    pub fn execute_with_timeout(
        &self,
        sql: &str,
        limit: Duration,
    ) -> Result<Option<QueryResult>, SqlError> {
        Ok(self.run(sql, Stop::after(Some(limit)))?.ok())
    }

    /// Runs one statement until it ends or `stop` stops it (a query; a write
    /// always runs to its end): `Err(Stopped)` inside when it was stopped.
    pub fn execute_until(
        &self,
        sql: &str,
        stop: Stop,
    ) -> Result<Result<QueryResult, Stopped>, SqlError> {
        self.run(sql, stop)
    }

    /// The types of `sql`'s `$n` parameters and the columns of its rows,
    /// without running it (a client's prepared statement).
    pub fn describe_statement(&self, sql: &str) -> Result<Described, SqlError> {
        let engine = self.engine();
        engine.refresh_catalog()?;
        let (settings, state) = engine.state();
        let described = crate::prepare::describe(&state, &engine.runtime, sql);
        engine.keep(settings, state);
        described
    }

    /// How long a write waits for another session's transaction to end
    /// before it fails with SQLSTATE 55P03 (`lock_timeout`); `None` waits.
    pub fn set_lock_timeout(&self, limit: Option<Duration>) {
        self.engine().writes.set_lock_timeout(limit);
    }

    /// Tables and their columns and indexes, for `\d`.
    pub fn describe(&self, table: Option<&str>) -> Result<String, SqlError> {
        crate::ddl::describe::text(&self.engine().db, table)
    }

    /// Makes `batches` a table of this session named `name` (a client's
    /// data: a Python DataFrame, an Arrow table), read by its queries until
    /// [`SqlSession::unregister`]; the database does not store it. The name
    /// of a table or view of the database is refused.
    pub fn register_batches(
        &self,
        name: &str,
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
    ) -> Result<(), SqlError> {
        let engine = self.engine();
        engine.refresh_catalog()?;
        let db = &engine.db;
        let stored = db
            .table_names()
            .into_iter()
            .chain(db.views().into_iter().map(|v| v.name));
        if let Some(n) = stored.into_iter().find(|n| n.eq_ignore_ascii_case(name)) {
            return Err(SqlError::Query(format!(
                "{n} is a table of the database; register the data under another name"
            )));
        }
        let table: Arc<dyn datafusion::catalog::TableProvider> = Arc::new(
            datafusion::datasource::MemTable::try_new(schema, vec![batches])?,
        );
        engine.ctx.deregister_table(name)?;
        engine.ctx.register_table(name, table.clone())?;
        engine.settings.fetch_add(1, Ordering::AcqRel);
        let mut registered = self.registered.lock();
        registered.retain(|(n, _)| n != name);
        registered.push((name.to_string(), table));
        Ok(())
    }

    /// Forgets a table made by [`SqlSession::register_batches`]; whether
    /// there was one. A table of the database is not touched.
    pub fn unregister(&self, name: &str) -> Result<bool, SqlError> {
        let engine = self.engine();
        let db = &engine.db;
        if db
            .table_names()
            .iter()
            .any(|n| n.eq_ignore_ascii_case(name))
        {
            return Ok(false);
        }
        let had = engine.ctx.deregister_table(name)?.is_some();
        engine.settings.fetch_add(1, Ordering::AcqRel);
        self.registered.lock().retain(|(n, _)| n != name);
        Ok(had)
    }

    /// Starts `job` with this session on one of the session's statement
    /// threads and returns at once; the statements the job runs run on that
    /// thread directly. The job reports its own outcome — a server sends it
    /// to the connection's task, so a statement costs one thread wake-up
    /// each way instead of a blocking thread that waits for the statement
    /// thread. A panic in the job is printed (by the panic hook) and the
    /// thread is kept; what the job would have reported is never sent.
    pub fn spawn(
        self: &Arc<Self>,
        job: impl FnOnce(&SqlSession) + Send + 'static,
    ) -> Result<(), SqlError> {
        let idle = self.idle.lock().pop();
        let worker = match idle {
            Some(w) => w,
            None => Worker::start()?,
        };
        let me = Arc::clone(self);
        worker.hand_over(move |worker| {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&me)));
            me.idle.lock().push(worker);
            // `me` may be the session's last reference: it ends here, on its
            // own statement thread (which `Worker`'s drop allows for).
            drop(me);
        })
    }

    /// Runs a statement on a statement thread.
    ///
    /// On a read-only handle beside a writer, the statement runs on the
    /// commits made before it began: a new snapshot is taken first when the
    /// log has a commit past the handle's, and the statement runs again on a
    /// new one when it met a page committed after it began (up to
    /// [`SNAPSHOT_TRIES`] times; then it fails with SQLSTATE 40001) or failed
    /// while a writer committed (a file it read may have been replaced).
    fn run(&self, sql: &str, stop: Stop) -> Result<Result<QueryResult, Stopped>, SqlError> {
        let engine = self.engine();
        if !engine.writes.in_transaction() && engine.db.snapshot_is_stale() {
            self.new_snapshot(&engine)?;
        }
        let mut tries = 0;
        loop {
            let answer = self.run_once(sql, stop.clone());
            let engine = self.engine();
            if answer.is_err()
                && tries < SNAPSHOT_TRIES
                && engine.db.worth_a_new_snapshot()
                && !engine.writes.in_transaction()
            {
                tries += 1;
                self.new_snapshot(&engine)?;
                continue;
            }
            return answer;
        }
    }

    /// Moves a read-only session to a new snapshot: the database opened
    /// again, a new context with `old`'s settings and registered tables.
    fn new_snapshot(&self, old: &Engine) -> Result<(), SqlError> {
        let db = Arc::new(old.db.reopen()?);
        let fresh = Engine::new(db)?;
        let options = old.ctx.state().config().options().as_ref().clone();
        *fresh.ctx.state_ref().write().config_mut().options_mut() = options;
        for (name, table) in self.registered.lock().iter() {
            fresh.ctx.register_table(name.as_str(), table.clone())?;
        }
        fresh.settings.fetch_add(1, Ordering::AcqRel);
        *self.engine.write() = Arc::new(fresh);
        Ok(())
    }

    fn run_once(&self, sql: &str, stop: Stop) -> Result<Result<QueryResult, Stopped>, SqlError> {
        if sql.len() > LONG_STATEMENT {
            return std::thread::scope(|s| {
                std::thread::Builder::new()
                    .name("strata-sql-statement".into())
                    .stack_size(depth::STACK_BYTES)
                    .spawn_scoped(s, || self.engine().run_here(sql, &stop))
                    .map_err(|e| {
                        SqlError::Execution(format!("cannot start a statement thread: {e}"))
                    })?
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))
            });
        }
        // Already on one (a job of `spawn`): the statement runs here.
        if on_statement_thread() {
            return self.engine().run_here(sql, &stop);
        }
        let idle = self.idle.lock().pop();
        let worker = match idle {
            Some(w) => w,
            None => Worker::start()?,
        };
        let engine = self.engine();
        let sql = sql.to_owned();
        let answer = worker.run(move || engine.run_here(&sql, &stop))?;
        match answer {
            Ok(result) => {
                self.idle.lock().push(worker);
                result
            }
            // The worker is dropped (its thread ends); the panic goes on here.
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

/// What a session's statements run against: the database, the session's
/// write transaction, DataFusion's context and the runtime that executes
/// plans.
struct Engine {
    db: Arc<Database>,
    writes: Arc<Writes>,
    ctx: SessionContext,
    runtime: tokio::runtime::Runtime,
    /// A copy of the context's state kept from one statement to the next,
    /// with the settings version it was copied at: copying DataFusion's
    /// state (its function registries and settings) and dropping the copy
    /// cost a one-row UPDATE a tenth of its time. Statements that only parse
    /// with it or plan directly ([`crate::dml::direct_dml`]) give it back.
    kept: Mutex<Option<(u64, SessionState)>>,
    /// Bumped after every statement DataFusion runs itself (`SET` among
    /// them), which may change the settings.
    settings: AtomicU64,
    /// The catalog as the context registered it last.
    known: Mutex<Known>,
    /// Syntax trees of the statements run inline, by shape.
    parsed: crate::parse_cache::ParseCache,
    /// Plans of the point queries run inline, by shape.
    points: crate::dml::point_plans::PointPlans,
    /// Plans of the writes run inline, by shape.
    write_plans: crate::dml::write_plans::WritePlans,
}

/// The tables and views registered in a session's context, and the count of
/// catalog saves they were read at ([`strata_storage::catalog::Catalog::saves`]).
struct Known {
    saves: u64,
    names: Vec<String>,
}

impl Engine {
    fn new(db: Arc<Database>) -> Result<Engine, SqlError> {
        let mut config = SessionConfig::new()
            .with_option_extension(StrataOptions::default())
            .with_information_schema(true);
        // Exact numeric literals are DECIMALs, as SQL says (`0.06 + 0.01` must
        // equal 0.07 when compared with a DECIMAL column).
        config.options_mut().sql_parser.parse_float_as_decimal = true;
        // Queries over cold tables run out of order (MJoin) when
        // `strata.skipper` is on; the planner decides per statement.
        // DataFusion's physical optimizer rules, then strata's index joins.
        let mut rules = datafusion::physical_optimizer::optimizer::PhysicalOptimizer::new().rules;
        rules.push(Arc::new(crate::scan::index_join::IndexJoinRule));
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .with_physical_optimizer_rules(rules)
            // A DATE compared with a number is refused before type coercion
            // makes the number a DATE (`crate::rules::date_compare`).
            .with_analyzer_rules(analyzer_rules())
            // Integer `+ - *` and negation raise "out of range" instead of
            // wrapping (`crate::rules::overflow`), after type coercion.
            .with_analyzer_rule(Arc::new(crate::rules::overflow::CheckedArithmetic))
            // DECIMAL `+ - *` of values that fit in 64 bits skips the
            // 128-bit overflow checks (`crate::rules::decimal_arith`).
            .with_analyzer_rule(Arc::new(crate::rules::decimal_arith::DecimalArith))
            // `-0.0 = 0.0` and `NULL = NULL` as SQL has them where DataFusion
            // compares otherwise (`crate::rules::equality`).
            .with_analyzer_rule(Arc::new(crate::rules::equality::SqlEquality))
            // EXCEPT ALL and INTERSECT ALL count copies (`crate::rules::set_all`).
            .with_analyzer_rule(Arc::new(crate::rules::set_all::SetAll))
            // A CAST that rounds or overflows is not unwrapped from a
            // comparison (`crate::rules::lossy_cast`).
            .with_analyzer_rule(Arc::new(crate::rules::lossy_cast::LossyCast))
            // A DOUBLE compared with a DECIMAL is compared as a DOUBLE
            // (`crate::rules::float_compare`).
            .with_analyzer_rule(Arc::new(crate::rules::float_compare::FloatCompare))
            // A number cast to an integer is rounded (`crate::rules::integer_cast`).
            .with_analyzer_rule(Arc::new(crate::rules::integer_cast::RoundedIntegerCast))
            // A scalar subquery finding no row is NULL even over a NOT NULL
            // column (`crate::rules::scalar_subquery`).
            .with_analyzer_rule(Arc::new(
                crate::rules::scalar_subquery::NullableScalarSubquery,
            ))
            // An IN / EXISTS / NOT EXISTS runs where its keys' columns first
            // appear, not above the whole join tree (`crate::rules::semi_join_sink`).
            .with_optimizer_rule(Arc::new(crate::rules::semi_join_sink::SemiJoinSink))
            // Inner joins in the order of the rows they make, smallest first,
            // from the ANALYZE statistics (`crate::rules::join_order`).
            .with_optimizer_rule(Arc::new(crate::rules::join_order::JoinOrder))
            // A grouped aggregate joined on its group key groups only the keys
            // a filtered scan on the other side has (`crate::rules::aggregate_keys`).
            .with_optimizer_rule(Arc::new(crate::rules::aggregate_keys::AggregateKeys))
            .with_query_planner(Arc::new(crate::skipper::SkipperPlanner::new(db.clone())))
            .build();
        // `SELECT * FROM 'x.csv'` reads the file (`crate::files::read`).
        let ctx = crate::files::read::with_file_tables(SessionContext::new_with_state(state));
        // `sum` of integers is exact (DECIMAL(38,0)), not a wrapping BIGINT.
        ctx.register_udaf(crate::rules::wide_sum::WideSum::udaf());
        ctx.register_udtf(
            "strata_waste",
            Arc::new(crate::waste::WasteFunction::new(db.clone())),
        );
        // Files read in a query (`crate::files::read`).
        ctx.register_udtf("read_csv", Arc::new(crate::files::read::ReadCsv));
        ctx.register_udtf("read_parquet", Arc::new(crate::files::read::ReadParquet));
        // PostgreSQL's system catalog, for clients written for PostgreSQL
        // (`crate::pg_catalog`).
        crate::pg_catalog::register(&ctx, &db)?;
        let writes = Writes::new(db.clone());
        // `strata info` and `strata check` as SQL (`crate::inspect`).
        ctx.register_udtf(
            "strata_info",
            Arc::new(crate::inspect::InfoFunction::new(db.clone())),
        );
        ctx.register_udtf(
            "strata_describe",
            Arc::new(crate::inspect::DescribeFunction::new(db.clone())),
        );
        ctx.register_udtf(
            "strata_check",
            Arc::new(crate::inspect::CheckFunction::new(writes.clone())),
        );
        let saves = strata_storage::catalog::Catalog::saves();
        let mut names = db.table_names();
        for name in &names {
            register(&ctx, &writes, name)?;
        }
        names.extend(db.views().into_iter().map(|v| v.name));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("strata-sql-exec")
            // The plans' threads run at the statement threads' priority
            // (`crate::thread_priority`).
            .on_thread_start(crate::thread_priority::lower_this_thread)
            .thread_stack_size(depth::STACK_BYTES)
            .enable_all()
            .build()
            .map_err(|e| SqlError::Execution(format!("cannot start the runtime: {e}")))?;
        // The catalog's views, planned over the tables (`crate::ddl::view`).
        crate::ddl::view::register_all(&ctx, &runtime, &db)?;
        Ok(Engine {
            db,
            writes,
            ctx,
            runtime,
            kept: Mutex::new(None),
            settings: AtomicU64::new(0),
            known: Mutex::new(Known { saves, names }),
            parsed: Default::default(),
            points: Default::default(),
            write_plans: Default::default(),
        })
    }

    /// Registers the tables and views again when the catalog changed since
    /// they were (another session of the server created, dropped or altered
    /// one, or analyzed a table).
    fn refresh_catalog(&self) -> Result<(), SqlError> {
        let saves = strata_storage::catalog::Catalog::saves();
        let mut known = self.known.lock();
        if known.saves == saves {
            return Ok(());
        }
        let mut names = self.db.table_names();
        // The session's own DDL registered some of them already.
        for name in known.names.iter().chain(&names) {
            self.ctx
                .deregister_table(name.as_str())
                .map_err(SqlError::from)?;
        }
        for name in &names {
            register(&self.ctx, &self.writes, name)?;
        }
        crate::ddl::view::register_all(&self.ctx, &self.runtime, &self.db)?;
        names.extend(self.db.views().into_iter().map(|v| v.name));
        *known = Known { saves, names };
        Ok(())
    }

    /// A state to parse and plan a statement with: the kept one when its
    /// settings are current, else a fresh copy of the context's; with the
    /// settings version it is good for. Its start time is now (`now()`).
    fn state(&self) -> (u64, SessionState) {
        let settings = self.settings.load(Ordering::Acquire);
        let mut state = match self.kept.lock().take() {
            Some((v, s)) if v == settings => s,
            _ => self.ctx.state(),
        };
        state.mark_start_execution();
        (settings, state)
    }

    /// Keeps `state` for the next statement, unless the settings changed
    /// since it was copied.
    fn keep(&self, settings: u64, state: SessionState) {
        if self.settings.load(Ordering::Acquire) == settings {
            *self.kept.lock() = Some((settings, state));
        }
    }

    /// Runs a statement on the calling thread, which must have
    /// [`depth::STACK_BYTES`] of stack.
    fn run_here(&self, sql: &str, stop: &Stop) -> Result<Result<QueryResult, Stopped>, SqlError> {
        self.refresh_catalog()?;
        let device = self.db.device().clone();
        device.stats().forget_position();
        let before = device.stats().snapshot();
        let start = Instant::now();
        let mut explain_analyze = false;
        // `COPY … TO 'file'`: strata writes the file (`crate::files::copy`).
        if let Some(copy) = crate::files::copy::parse(sql) {
            let copy = copy?;
            let (_settings, state) = self.state();
            let (_snapshot, _own);
            if self.writes.writing() {
                _own = self.db.read_own_writes();
            } else {
                _snapshot = self.db.read_snapshot();
            }
            let n = match crate::files::copy::run(&copy, state, &self.ctx, &self.runtime, stop)? {
                Ok(n) => n,
                Err(stopped) => return Ok(Err(stopped)),
            };
            let count = dml::count_batch(n)?;
            return Ok(Ok(QueryResult {
                schema: count.schema(),
                batches: vec![count],
                elapsed: start.elapsed(),
                io: device.stats().snapshot() - before,
            }));
        }
        let (schema, batches) = match analyze_targets(sql) {
            Some(tables) => self.analyze(&tables)?,
            None => {
                let (settings, state) = self.state();
                let dialect = state.config().options().sql_parser.dialect;
                let parsed = state
                    .sql_to_statement(sql, &dialect)
                    .map(crate::rules::exponent_literal::exponents_as_double)
                    .map(crate::pg_catalog::rewrite::for_postgres)
                    .map_err(SqlError::from);
                let classified = parsed.and_then(|stmt| {
                    depth::check(&stmt)?;
                    let kind = statement::classify(&stmt)?;
                    Ok((stmt, kind))
                });
                let (stmt, kind) = match classified {
                    Ok(x) => x,
                    Err(e) => {
                        self.keep(settings, state);
                        return Err(e);
                    }
                };
                explain_analyze = explain_total::is_explain_analyze(&stmt);
                // `DESCRIBE t` of a strata table: its SQL types, from the
                // catalog (Arrow's would say Utf8 for CHAR(n) and VARCHAR(n)).
                if let Some(table) =
                    describe::described(&stmt).and_then(|n| describe::find(&self.db, &n))
                {
                    self.keep(settings, state);
                    let table = self.db.table(&table)?;
                    let (schema, batches) = describe::table(&table)?;
                    return Ok(Ok(QueryResult {
                        schema,
                        batches,
                        elapsed: start.elapsed(),
                        io: device.stats().snapshot() - before,
                    }));
                }
                // What does not plan with DataFusion gives the state back.
                let state = match kind {
                    Kind::Write(_) | Kind::Other => Some(state),
                    _ => {
                        self.keep(settings, state);
                        None
                    }
                };
                match kind {
                    Kind::Begin => self.writes.begin().map(|()| nothing())?,
                    Kind::Commit => self.writes.commit().map(|()| nothing())?,
                    Kind::Rollback => self.writes.rollback().map(|()| nothing())?,
                    Kind::Ddl(d) => self.ddl(&d).map(|()| nothing())?,
                    Kind::Write(verb) => {
                        let state = state.expect("a write's state is not kept");
                        // Inside BEGIN, the block's first write takes the
                        // writer turn before any read guard is held.
                        if let Err(e) = self
                            .writes
                            .check_writable(verb)
                            .and_then(|()| self.writes.start_writing())
                        {
                            self.keep(settings, state);
                            return Err(e);
                        }
                        let direct = direct_dml::enabled(&state);
                        if crate::dml::returning::has_returning(&stmt) {
                            let state = match verb {
                                "INSERT" => state,
                                _ => unoptimized(state),
                            };
                            let _own = self.writes.writing().then(|| self.db.read_own_writes());
                            let (schema, batches) = crate::dml::returning::run(
                                &stmt,
                                state,
                                &self.writes,
                                &self.runtime,
                                direct,
                            )
                            .map_err(|e| {
                                statement::values_null(&stmt, &self.db, &e).unwrap_or(e)
                            })?;
                            return Ok(Ok(QueryResult {
                                schema,
                                batches,
                                elapsed: start.elapsed(),
                                io: device.stats().snapshot() - before,
                            }));
                        }
                        let saves = self.known.lock().saves;
                        if direct
                            && let Some(write) = self.direct_write(
                                &stmt,
                                crate::parse_cache::shape(sql).as_ref(),
                                &state,
                                settings,
                                saves,
                            )
                        {
                            self.keep(settings, state);
                            let _own = self.writes.writing().then(|| self.db.read_own_writes());
                            let count =
                                dml::count_batch(write.run(&stmt, &self.db, &self.writes)?)?;
                            return Ok(Ok(QueryResult {
                                schema: count.schema(),
                                batches: vec![count],
                                elapsed: start.elapsed(),
                                io: device.stats().snapshot() - before,
                            }));
                        }
                        let state = match verb {
                            "INSERT" => state,
                            _ => unoptimized(state),
                        };
                        // Never cancelled: a write runs to its end or fails,
                        // so it is never left half applied.
                        // Inside BEGIN, an INSERT ... SELECT reads the
                        // transaction's own changes.
                        let _own = self.writes.writing().then(|| self.db.read_own_writes());
                        match self.plan_and_run(state, stmt.clone(), &Stop::never()) {
                            Ok(Ok(r)) => r,
                            Ok(Err(_)) => {
                                return Err(SqlError::Execution("a write ran out of time".into()));
                            }
                            Err(e) => {
                                return Err(
                                    statement::values_null(&stmt, &self.db, &e).unwrap_or(e)
                                );
                            }
                        }
                    }
                    // A query sees each transaction whole or not at all: commits
                    // wait until it ends (strata_storage::Database::read_snapshot);
                    // inside this session's BEGIN it sees the transaction's own
                    // changes (Database::read_own_writes).
                    Kind::Other => {
                        let state = state.expect("a query's state is not kept");
                        let (_snapshot, _own);
                        if self.writes.writing() {
                            _own = self.db.read_own_writes();
                        } else {
                            _snapshot = self.db.read_snapshot();
                        }
                        // A point query by an index's key skips DataFusion's
                        // planning (`crate::dml::direct_select`).
                        let point = crate::dml::direct_select::plan(&stmt, &state, &self.writes);
                        if let Some(point) = point
                            && let Some((schema, batches)) = point.run(&self.writes)?
                        {
                            self.keep(settings, state);
                            return Ok(Ok(QueryResult {
                                schema,
                                batches,
                                elapsed: start.elapsed(),
                                io: device.stats().snapshot() - before,
                            }));
                        }
                        let answer = self.plan_and_run(state, stmt, stop);
                        // It may have been a SET: states kept before are stale.
                        self.settings.fetch_add(1, Ordering::AcqRel);
                        match answer? {
                            Ok(r) => r,
                            Err(stopped) => return Ok(Err(stopped)),
                        }
                    }
                }
            }
        };
        let batches = if explain_analyze {
            explain_total::with_total_time(&schema, batches, start.elapsed())
        } else {
            batches
        };
        Ok(Ok(QueryResult {
            schema,
            batches,
            elapsed: start.elapsed(),
            io: device.stats().snapshot() - before,
        }))
    }

    /// Plans and runs a statement with DataFusion until it ends or `stop`
    /// stops it.
    fn plan_and_run(
        &self,
        state: SessionState,
        stmt: DfStatement,
        stop: &Stop,
    ) -> Result<Result<(SchemaRef, Vec<RecordBatch>), Stopped>, SqlError> {
        let ctx = self.ctx.clone();
        let work = async move {
            let plan = state.statement_to_plan(stmt).await?;
            // DataFusion's DESCRIBE (of a query, a view) in SQL's type names.
            if let LogicalPlan::DescribeTable(d) = &plan {
                return describe::arrow_schema(&d.schema);
            }
            let df = match plan {
                // Runs in `state`, which may be `unoptimized`.
                LogicalPlan::Dml(_) | LogicalPlan::Explain(_) | LogicalPlan::Analyze(_) => {
                    DataFrame::new(state, plan)
                }
                plan => ctx.execute_logical_plan(plan).await?,
            };
            let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
            let batches = df.collect().await.map_err(SqlError::from)?;
            let plain = crate::result_types::plain(&schema, batches)
                .map_err(|e| SqlError::from(datafusion::error::DataFusionError::from(e)))?;
            Ok::<_, SqlError>(plain)
        };
        if stop.is_never() {
            return self.runtime.block_on(work).map(Ok);
        }
        // The plan runs as a task of its own and this thread only waits: an
        // operator that computes long between two yields (a nested loop join
        // over one large batch) cannot hold up the answer to a cancel or a
        // timeout. The task is aborted, which drops the plan's streams at its
        // next yield.
        let task = crate::stop::AbortOnDrop(self.runtime.spawn(work));
        match self.runtime.block_on(stop.run(task.join())) {
            Ok(r) => r.map(Ok),
            Err(stopped) => Ok(Err(stopped)),
        }
    }

    /// Runs a DDL statement and makes the session see its tables.
    fn ddl(&self, d: &ddl::Ddl) -> Result<(), SqlError> {
        self.writes.check_writable(d.verb())?;
        if self.writes.in_transaction() {
            return Err(SqlError::Query(format!(
                "{} cannot run inside a transaction (it commits on its own): COMMIT or ROLLBACK first",
                d.verb()
            )));
        }
        let changed = ddl::run_in_session(&self.ctx, &self.runtime, &self.db, d)?;
        for name in &changed.dropped {
            self.ctx
                .deregister_table(name.as_str())
                .map_err(SqlError::from)?;
        }
        for name in &changed.created {
            register(&self.ctx, &self.writes, name)?;
        }
        // Views are planned again over the tables as they are now.
        crate::ddl::view::register_all(&self.ctx, &self.runtime, &self.db)
    }

    /// `ANALYZE [t, ...]`: collects statistics of the tables (all when none is
    /// named) and stores them in the catalog.
    fn analyze(&self, tables: &[String]) -> Result<(SchemaRef, Vec<RecordBatch>), SqlError> {
        let names = if tables.is_empty() {
            self.db.table_names()
        } else {
            tables.to_vec()
        };
        let (mut out_names, mut rows, mut pages, mut secs) = (vec![], vec![], vec![], vec![]);
        for name in names {
            let table = self.db.table(&name)?;
            let start = Instant::now();
            let s = stats::analyze(&table, &self.db, 42)?;
            let json = serde_json::to_value(&s).map_err(|e| SqlError::Execution(e.to_string()))?;
            self.db.set_table_stats(&name, json)?;
            out_names.push(name);
            rows.push(s.rows);
            pages.push(s.pages);
            secs.push(start.elapsed().as_secs_f64());
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("table", DataType::Utf8, false),
            Field::new("rows", DataType::UInt64, false),
            Field::new("pages", DataType::UInt64, false),
            Field::new("seconds", DataType::Float64, false),
        ]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(out_names)),
            Arc::new(UInt64Array::from(rows)),
            Arc::new(UInt64Array::from(pages)),
            Arc::new(Float64Array::from(secs)),
        ];
        let batch = RecordBatch::try_new(schema.clone(), cols)
            .map_err(|e| SqlError::Execution(e.to_string()))?;
        Ok((schema, vec![batch]))
    }
}

/// `state` without logical optimizer rules (the analyzer, which coerces
/// types, still runs). `UPDATE` and `DELETE` are planned so: DataFusion
/// hands the provider the WHERE conjuncts and SET expressions it finds in the
/// plan, and the optimizer rewrites them into forms it cannot find — a WHERE
/// that folds to false becomes an empty relation, which reads as no WHERE at
/// all (every row), and a subexpression used twice in SET becomes a column of
/// a projection below.
fn unoptimized(state: SessionState) -> SessionState {
    SessionStateBuilder::new_from_existing(state)
        .with_optimizer_rules(vec![])
        .build()
}

/// DataFusion's analyzer rules, after strata's checks that must see the
/// plan's types before coercion changes them.
fn analyzer_rules() -> Vec<Arc<dyn datafusion::optimizer::AnalyzerRule + Send + Sync>> {
    let mut rules: Vec<Arc<dyn datafusion::optimizer::AnalyzerRule + Send + Sync>> =
        vec![Arc::new(crate::rules::date_compare::DateCompare)];
    rules.extend(datafusion::optimizer::Analyzer::new().rules);
    rules
}

/// Makes table `name` visible to the session's queries.
fn register(ctx: &SessionContext, writes: &Arc<Writes>, name: &str) -> Result<(), SqlError> {
    let table = writes.database().table(name)?;
    ctx.register_table(name, Arc::new(StrataTable::new(writes.clone(), &table)))
        .map_err(SqlError::from)?;
    Ok(())
}

/// The result of a statement that answers nothing (DDL, BEGIN, COMMIT).
fn nothing() -> (SchemaRef, Vec<RecordBatch>) {
    (Arc::new(Schema::empty()), Vec::new())
}
