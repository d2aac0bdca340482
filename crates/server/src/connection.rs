//! One client connection: its SQL session, its transaction block, its
//! settings, and the protocol's handlers over them.
//!
//! Each connection owns a [`SqlSession`] (its own `SET strata.…` settings and
//! its own transaction); the sessions share the server's one `Database`. A
//! statement runs on the session's statement thread under a [`Stop`]: the connection's
//! `statement_timeout` and its cancel signal, raised by a CancelRequest (the
//! protocol layer drops the statement's future; [`CancelOnDrop`] turns that
//! into the signal the running plan watches) — so a cancelled scan stops
//! and frees its memory instead of running on unseen.
//!
//! The transaction block follows PostgreSQL: after an error inside `BEGIN`
//! every statement but `ROLLBACK`/`COMMIT` fails with SQLSTATE 25P02, and
//! `COMMIT` of a failed block rolls it back. A block left idle longer than
//! `idle_in_transaction_session_timeout` is rolled back and the connection
//! closed (SQLSTATE 25P03), so it cannot hold other sessions' writes up
//! forever. A connection that goes away drops its session, which rolls back
//! its open transaction.

use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use futures::stream;
use futures::{Sink, SinkExt};
use parking_lot::Mutex;
use pgwire::api::auth::StartupHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{CopyResponse, FieldInfo, Response, Tag};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireServerHandlers, Type};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use strata_sql::arrow::array::StringArray;
use strata_sql::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use strata_sql::arrow::record_batch::RecordBatch;
use strata_sql::{Cancel, QueryResult, SqlError, SqlSession, Stop, Stopped};
use strata_storage::Database;

use crate::reply::{self, error, fatal, sql_error, verb};
use crate::settings::{Intercepted, Settings};
use crate::shared::{Shared, Slot};
use crate::startup::Startup;

/// A statement prepared by Parse: its text, its parameters' types and the
/// columns of its rows (`None`: it returns none).
#[derive(Clone, Debug)]
pub struct Prepared {
    pub sql: String,
    pub parameters: Vec<Type>,
    pub columns: Option<SchemaRef>,
}

/// A connection's SQL session, made at its first statement: a connection
/// that only carries a CancelRequest, or is refused, never makes one (a
/// session registers every table, which is not free).
pub struct SessionCell {
    db: Arc<Database>,
    cell: OnceLock<Arc<SqlSession>>,
}

impl SessionCell {
    /// The session, made on a blocking thread the first time.
    async fn get(self: &Arc<Self>) -> Result<Arc<SqlSession>, SqlError> {
        if let Some(s) = self.cell.get() {
            return Ok(s.clone());
        }
        let me = self.clone();
        tokio::task::spawn_blocking(move || {
            if let Some(s) = me.cell.get() {
                return Ok(s.clone());
            }
            let made = Arc::new(SqlSession::new(me.db.clone())?);
            Ok(me.cell.get_or_init(|| made).clone())
        })
        .await
        .map_err(|e| SqlError::Execution(format!("cannot start a session: {e}")))?
    }

    /// The session, when it was made.
    fn current(&self) -> Option<&Arc<SqlSession>> {
        self.cell.get()
    }
}

impl Drop for SessionCell {
    /// A session owns a runtime, which cannot be dropped on the server's
    /// runtime: it ends on a thread of its own (rolling back an open
    /// transaction block with it).
    fn drop(&mut self) {
        if let Some(session) = self.cell.take() {
            let _ = std::thread::Builder::new()
                .name("strata-serve-close".into())
                .spawn(move || drop(session));
        }
    }
}

/// A connection's state beside its session.
pub struct Connection {
    session: Arc<SessionCell>,
    /// Raised to stop the running statement.
    cancel: Cancel,
    settings: Mutex<Settings>,
    /// An error happened inside the open transaction block.
    failed: AtomicBool,
    /// Statements started; an idle-in-transaction timer that finds it moved
    /// lets the block be.
    statements: Arc<AtomicU64>,
    /// The block was rolled back for idling: the next statement closes the
    /// connection.
    expired: Arc<AtomicBool>,
    parser: Arc<Parser>,
    /// A `COPY … FROM STDIN` in progress.
    copy_in: Mutex<Option<CopyingIn>>,
    _slot: Slot,
}

/// A `COPY … FROM STDIN` between its start and the client's CopyDone.
struct CopyingIn {
    table: String,
    columns: Vec<(String, Type)>,
    rows: crate::copy::Incoming,
    pending: Vec<Vec<Option<String>>>,
    /// Line of the first pending row.
    first_line: usize,
    copied: usize,
    /// The COPY began a transaction block of its own (none was open).
    own_block: bool,
    /// The first error; later data is read and dropped.
    failed: Option<PgWireError>,
}

/// Prepares statements (the protocol's Parse) with the session.
pub struct Parser {
    session: Arc<SessionCell>,
}

/// The handlers of one connection.
pub struct Handlers {
    pub(crate) connection: Arc<Connection>,
    pub(crate) startup: Arc<Startup>,
    pub(crate) shared: Arc<Shared>,
}

impl Handlers {
    pub(crate) fn new(shared: Arc<Shared>, slot: Slot) -> Handlers {
        let refuse = slot.over.then(|| {
            format!(
                "sorry, too many clients already (strata serve --max-connections {})",
                shared.max_connections
            )
        });
        let session = Arc::new(SessionCell {
            db: shared.db.clone(),
            cell: OnceLock::new(),
        });
        Handlers {
            connection: Arc::new(Connection {
                parser: Arc::new(Parser {
                    session: session.clone(),
                }),
                session,
                cancel: Cancel::new(),
                settings: Mutex::new(Settings::default()),
                failed: AtomicBool::new(false),
                statements: Arc::new(AtomicU64::new(0)),
                expired: Arc::new(AtomicBool::new(false)),
                copy_in: Mutex::new(None),
                _slot: slot,
            }),
            startup: Arc::new(Startup::new(
                shared.manager.clone(),
                shared.passwords.clone(),
                refuse,
            )),
            shared,
        }
    }
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.connection.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.connection.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.startup.clone()
    }

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        self.connection.clone()
    }

    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        self.shared.cancel.clone()
    }
}

/// Raises the cancel signal when dropped before [`CancelOnDrop::disarm`]: the
/// protocol layer drops a statement's future on CancelRequest.
struct CancelOnDrop(Option<Cancel>);

impl CancelOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(c) = &self.0 {
            c.cancel();
        }
    }
}

/// A statement's outcome before it becomes a protocol answer.
enum Outcome {
    Answer(Response),
    Failed(PgWireError),
}

impl Connection {
    /// Runs one statement and answers it, rows in `format`.
    async fn statement(&self, sql: &str, format: &Format) -> Outcome {
        let n = self.statements.fetch_add(1, Ordering::AcqRel) + 1;
        if self.expired.load(Ordering::Acquire) {
            return Outcome::Failed(fatal(
                "25P03",
                "terminating connection due to idle-in-transaction timeout",
            ));
        }
        if let Some(copy) = crate::copy::parse(sql) {
            let answer = match copy {
                Ok(c) => self.copy(c).await,
                Err(e) => Err(e),
            };
            return match answer {
                Ok(a) => Outcome::Answer(a),
                Err(e) => self.failed_in_block(e),
            };
        }
        let intercepted = self.settings.lock().intercept(sql);
        let mut sql = sql;
        match &intercepted {
            Some(Intercepted::Set) => {
                self.apply_settings();
                return Outcome::Answer(Response::Execution(Tag::new("SET")));
            }
            Some(Intercepted::Show(name, value)) => return Outcome::Answer(show(name, value)),
            Some(Intercepted::Refused(code, msg)) => {
                return self.failed_in_block(error(code, msg.clone()));
            }
            Some(Intercepted::Rewrite(s)) => sql = s,
            None => {}
        }
        let ends_block = matches!(sql, "COMMIT" | "ROLLBACK");
        if self.failed.load(Ordering::Acquire) && self.in_transaction() {
            if !ends_block {
                return Outcome::Failed(error(
                    "25P02",
                    "current transaction is aborted, commands ignored until end of transaction block",
                ));
            }
            // COMMIT of a failed block rolls it back, as PostgreSQL does.
            sql = "ROLLBACK";
        }
        let tag = verb(sql);
        let result = self.run(sql.to_owned()).await;
        let answer = match result {
            Ok(Ok(r)) => match tag.as_str() {
                "BEGIN" => Ok(Response::TransactionStart(Tag::new("BEGIN"))),
                "COMMIT" | "ROLLBACK" => {
                    self.failed.store(false, Ordering::Release);
                    let said = if ends_block
                        && sql == "ROLLBACK"
                        && intercepted == Some(Intercepted::Rewrite("COMMIT"))
                    {
                        "ROLLBACK"
                    } else {
                        tag.as_str()
                    };
                    Ok(Response::TransactionEnd(Tag::new(said)))
                }
                _ => reply::response(&tag, r, format),
            },
            Ok(Err(Stopped::Cancelled)) => {
                Err(error("57014", "canceling statement due to user request"))
            }
            Ok(Err(Stopped::TimedOut)) => Err(error(
                "57014",
                "canceling statement due to statement timeout",
            )),
            Err(e) => Err(sql_error(&e)),
        };
        match answer {
            Ok(a) => {
                self.arm_idle_timer(n);
                Outcome::Answer(a)
            }
            Err(e) => self.failed_in_block(e),
        }
    }

    /// Starts a COPY to or from the client.
    async fn copy(&self, copy: crate::copy::Copy) -> Result<Response, PgWireError> {
        use crate::copy::{Copy, encode, header};
        let stopped = |_| error("57014", "canceling statement due to user request");
        match copy {
            Copy::Out { query, layout } => {
                let r = self
                    .run(query)
                    .await
                    .map_err(|e| sql_error(&e))?
                    .map_err(stopped)?;
                let mut lines = Vec::new();
                if layout.header {
                    lines.push(header(&r.schema, &layout));
                }
                for b in &r.batches {
                    let text = encode(b, &layout)?;
                    lines.extend(text.split_inclusive('\n').map(str::to_owned));
                }
                let columns = r.schema.fields().len();
                let data = lines
                    .into_iter()
                    .map(|l| Ok(pgwire::messages::copy::CopyData::new(bytes::Bytes::from(l))));
                Ok(Response::CopyOut(CopyResponse::new(
                    0,
                    columns,
                    stream::iter(data),
                )))
            }
            Copy::In {
                table,
                columns,
                layout,
            } => {
                let wanted = if columns.is_empty() {
                    "*".to_owned()
                } else {
                    columns.join(", ")
                };
                let session = self.session.get().await.map_err(|e| sql_error(&e))?;
                let probe = format!("SELECT {wanted} FROM {table}");
                let described = on_session(&session, move |s| s.describe_statement(&probe))
                    .await
                    .and_then(|d| d)
                    .map_err(|e| sql_error(&e))?;
                let schema = described
                    .columns
                    .ok_or_else(|| error("42P01", format!("COPY: {table} has no columns")))?;
                let columns: Vec<(String, Type)> = schema
                    .fields()
                    .iter()
                    .map(|f| (f.name().clone(), crate::copy::pg_type(f.data_type())))
                    .collect();
                let own_block = !self.in_transaction();
                if own_block {
                    self.run("BEGIN".into())
                        .await
                        .map_err(|e| sql_error(&e))?
                        .map_err(stopped)?;
                }
                let n = columns.len();
                *self.copy_in.lock() = Some(CopyingIn {
                    table,
                    columns,
                    rows: crate::copy::Incoming::new(layout),
                    pending: Vec::new(),
                    first_line: 1,
                    copied: 0,
                    own_block,
                    failed: None,
                });
                Ok(Response::CopyIn(CopyResponse::new(0, n, stream::empty())))
            }
        }
    }

    /// Inserts the pending rows of a COPY in progress.
    async fn copy_flush(&self, c: &mut CopyingIn) {
        if c.pending.is_empty() || c.failed.is_some() {
            c.pending.clear();
            return;
        }
        let rows = std::mem::take(&mut c.pending);
        let first = c.first_line;
        c.first_line = c.rows.lines + 1;
        let sql = match crate::copy::insert(&c.table, &c.columns, &rows, first) {
            Ok(s) => s,
            Err(e) => {
                c.failed = Some(e);
                return;
            }
        };
        match self.run(sql).await {
            Ok(Ok(_)) => c.copied += rows.len(),
            Ok(Err(_)) => {
                c.failed = Some(error("57014", "canceling statement due to user request"))
            }
            Err(e) => {
                c.failed = Some(error(
                    e.sqlstate(),
                    format!(
                        "COPY {}, lines {first}..{}: {e}",
                        c.table,
                        first + rows.len() - 1
                    ),
                ))
            }
        }
    }

    /// Ends a COPY in progress: commits its own block, or rolls it back on
    /// an error; the rows copied, or the error.
    async fn copy_end(
        &self,
        mut c: CopyingIn,
        fail: Option<PgWireError>,
    ) -> Result<usize, PgWireError> {
        if fail.is_none() && c.failed.is_none() {
            match c.rows.finish() {
                Ok(rows) => c.pending.extend(rows),
                Err(e) => c.failed = Some(e),
            }
            self.copy_flush(&mut c).await;
        }
        let failed = fail.or(c.failed.take());
        if c.own_block {
            let end = if failed.is_none() {
                "COMMIT"
            } else {
                "ROLLBACK"
            };
            let ended = self.run(end.into()).await;
            if failed.is_none() {
                ended
                    .map_err(|e| sql_error(&e))?
                    .map_err(|_| error("57014", "canceling statement due to user request"))?;
            }
        } else if failed.is_some() {
            self.failed.store(true, Ordering::Release);
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(c.copied),
        }
    }

    /// An error; inside a transaction block it fails the block.
    fn failed_in_block(&self, e: PgWireError) -> Outcome {
        if self.in_transaction() {
            self.failed.store(true, Ordering::Release);
        }
        Outcome::Failed(e)
    }

    fn in_transaction(&self) -> bool {
        self.session.current().is_some_and(|s| s.in_transaction())
    }

    fn apply_settings(&self) {
        let lock = self.settings.lock().lock_timeout;
        if let Some(s) = self.session.current() {
            s.set_lock_timeout(lock);
        }
    }

    /// Runs `sql` on the session's statement thread under the connection's
    /// stop.
    async fn run(&self, sql: String) -> Result<Result<QueryResult, Stopped>, SqlError> {
        let session = self.session.get().await?;
        // A session made by this statement takes the settings made before.
        session.set_lock_timeout(self.settings.lock().lock_timeout);
        // A statement of bounded work that never waits (BEGIN, a lookup by
        // a unique key, a write by key once the block holds the writer
        // turn) runs right here, on the connection's task: the hand-off to
        // the statement thread and back would cost more than it does. A
        // COMMIT's wait for the log sync gives the worker's other
        // connections to another thread meanwhile.
        let sync = |f: &mut dyn FnMut()| tokio::task::block_in_place(f);
        if let Some(answer) = session.run_inline(&sql, &sync) {
            return answer.map(Ok);
        }
        self.cancel.reset();
        let stop = Stop {
            timeout: self.settings.lock().statement_timeout,
            cancel: Some(self.cancel.clone()),
        };
        let guard = CancelOnDrop(Some(self.cancel.clone()));
        let answer = on_session(&session, move |s| s.execute_until(&sql, stop)).await;
        guard.disarm();
        answer?
    }

    /// After a statement that leaves a transaction block open: when the
    /// connection set `idle_in_transaction_session_timeout` and no statement
    /// follows within it, the block is rolled back and the connection is
    /// closed at its next message.
    fn arm_idle_timer(&self, statement: u64) {
        let Some(limit) = self.settings.lock().idle_in_transaction else {
            return;
        };
        if !self.in_transaction() {
            return;
        }
        // Weak: a connection that goes away rolls back at once, not when
        // the timer fires.
        let session = Arc::downgrade(&self.session);
        let expired = self.expired.clone();
        let statements = self.statements.clone();
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            if statements.load(Ordering::Acquire) != statement {
                return;
            }
            let Some(cell) = session.upgrade() else {
                return;
            };
            expired.store(true, Ordering::Release);
            let _ = tokio::task::spawn_blocking(move || {
                if let Some(session) = cell.current()
                    && session.in_transaction()
                {
                    let _ = session.execute("ROLLBACK");
                }
            })
            .await;
        });
    }
}

/// Runs `job` with `session` on one of the session's statement threads
/// and waits for its answer without taking a thread of the server's: one
/// thread wake-up to start it, one to answer.
async fn on_session<T: Send + 'static>(
    session: &Arc<SqlSession>,
    job: impl FnOnce(&SqlSession) -> T + Send + 'static,
) -> Result<T, SqlError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    session.spawn(move |s| {
        let _ = tx.send(job(s));
    })?;
    rx.await.map_err(|_| {
        SqlError::Execution(
            "the statement failed: its thread panicked (see the server's log)".into(),
        )
    })
}

/// `SHOW name` of a connection setting: one text row.
fn show(name: &str, value: &str) -> Response {
    let schema = Arc::new(Schema::new(vec![Field::new(name, DataType::Utf8, false)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(StringArray::from(vec![value]))],
    )
    .expect("one text column");
    let result = QueryResult {
        schema,
        batches: vec![batch],
        elapsed: std::time::Duration::ZERO,
        io: Default::default(),
    };
    reply::response("SHOW", result, &Format::UnifiedText).unwrap_or_else(|e| {
        Response::Error(Box::new(pgwire::error::ErrorInfo::new(
            "ERROR".into(),
            "XX000".into(),
            e.to_string(),
        )))
    })
}

fn into_error_response(e: PgWireError) -> Response {
    Response::Error(Box::new(e.into()))
}

/// The statements of a simple Query message. One without quotes, comments
/// or a semicolon before its end is one statement as it stands (OLTP
/// clients send such, and tokenizing them cost a tenth of a lookup);
/// anything else is split by SQL's tokens.
fn split(query: &str) -> Vec<String> {
    let body = query.trim_end().trim_end_matches(';').trim();
    // `--` and `/*` start comments (a lone `-` or `/` is an operator, as in
    // pgbench's `abalance + -1234`); quotes and `$` start literals.
    let plain = !body.is_empty()
        && !body.contains([';', '\'', '"', '$'])
        && !body.contains("--")
        && !body.contains("/*");
    if plain {
        return vec![body.to_string()];
    }
    let (mut statements, rest) = strata_sql::split_statements(query);
    if !rest.trim().is_empty() {
        statements.push(rest);
    }
    statements
}

#[async_trait]
impl SimpleQueryHandler for Connection {
    async fn do_query<C>(&self, _client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statements = split(query);
        let mut answers = Vec::with_capacity(statements.len());
        // A query string of several statements stops at the first error.
        for sql in statements {
            match self.statement(&sql, &Format::UnifiedText).await {
                Outcome::Answer(a) => answers.push(a),
                Outcome::Failed(e) => {
                    let fatal = matches!(&e, PgWireError::UserError(i) if i.severity == "FATAL");
                    if fatal {
                        return Err(e);
                    }
                    answers.push(into_error_response(e));
                    break;
                }
            }
        }
        Ok(answers)
    }
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let intercepted = Settings::default().intercept(sql);
        let copy = crate::copy::parse(sql).is_some();
        let session = match intercepted {
            None if !copy => Some(self.session.get().await.map_err(|e| sql_error(&e))?),
            _ => None,
        };
        let described = match (session, intercepted) {
            (_, Some(Intercepted::Show(name, _))) => strata_sql::prepare::Described {
                parameters: Vec::new(),
                columns: Some(Arc::new(Schema::new(vec![Field::new(
                    name,
                    DataType::Utf8,
                    false,
                )]))),
            },
            (Some(session), None) => {
                let text = sql.to_owned();
                on_session(&session, move |s| s.describe_statement(&text))
                    .await
                    .and_then(|d| d)
                    .map_err(|e| sql_error(&e))?
            }
            _ => strata_sql::prepare::Described {
                parameters: Vec::new(),
                columns: None,
            },
        };
        let count = described.parameters.len().max(types.len());
        let parameters = (0..count)
            .map(|i| {
                types
                    .get(i)
                    .cloned()
                    .flatten()
                    .filter(|t| *t != Type::UNKNOWN)
                    .or_else(|| {
                        described
                            .parameters
                            .get(i)
                            .cloned()
                            .flatten()
                            .and_then(|d| arrow_pg::datatypes::into_pg_type(&d).ok())
                    })
                    .unwrap_or(Type::TEXT)
            })
            .collect();
        Ok(Some(Prepared {
            sql: sql.to_owned(),
            parameters,
            columns: described.columns,
        }))
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(stmt.parameters.clone())
    }

    fn get_result_schema(
        &self,
        stmt: &Prepared,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        match &stmt.columns {
            None => Ok(Vec::new()),
            Some(schema) => {
                let fields = reply::fields(schema, format.unwrap_or(&Format::UnifiedBinary))?;
                Ok(fields.as_ref().clone())
            }
        }
    }
}

#[async_trait]
impl ExtendedQueryHandler for Connection {
    type Statement = Prepared;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        self.parser.clone()
    }

    async fn do_query<C>(
        &self,
        _client: &mut C,
        portal: &Portal<Prepared>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let prepared = &portal.statement.statement;
        let sql = crate::params::bind(&prepared.sql, &prepared.parameters, portal)?;
        match self.statement(&sql, &portal.result_column_format).await {
            Outcome::Answer(Response::Query(q)) => Ok(Response::Query(q)),
            Outcome::Answer(a) => Ok(a),
            Outcome::Failed(e) => Err(e),
        }
    }
}

#[async_trait]
impl CopyHandler for Connection {
    async fn on_copy_data<C>(&self, _client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(mut c) = self.copy_in.lock().take() else {
            return Err(error("08P01", "copy data without a COPY FROM STDIN"));
        };
        if c.failed.is_none() {
            match c.rows.feed(&data.data) {
                Ok(rows) => c.pending.extend(rows),
                Err(e) => c.failed = Some(e),
            }
            if c.pending.len() >= crate::copy::ROWS_PER_INSERT {
                self.copy_flush(&mut c).await;
            }
        }
        *self.copy_in.lock() = Some(c);
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(c) = self.copy_in.lock().take() else {
            return Err(error("08P01", "CopyDone without a COPY FROM STDIN"));
        };
        let copied = self.copy_end(c, None).await?;
        let tag = Tag::new("COPY").with_rows(copied);
        client
            .send(PgWireBackendMessage::CommandComplete(tag.into()))
            .await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, _client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let e = error("57014", format!("COPY from stdin failed: {}", fail.message));
        let copying = self.copy_in.lock().take();
        match copying {
            Some(c) => match self.copy_end(c, Some(e)).await {
                Err(e) => e,
                Ok(_) => error("57014", "COPY from stdin failed"),
            },
            None => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn a_query_string_splits_into_its_statements() {
        // One statement as it stands: a lone `-` or `/` is an operator.
        assert_eq!(
            split("UPDATE a SET v = v + -12 / 2 WHERE k = 3;"),
            vec!["UPDATE a SET v = v + -12 / 2 WHERE k = 3"]
        );
        // Several, split by SQL's tokens; comments and quoted `;` kept apart.
        assert_eq!(
            split("SELECT 1; SELECT ';' -- two; three\n; SELECT 2 /* ; */"),
            vec!["SELECT 1", "SELECT ';'", "SELECT 2"]
        );
        assert_eq!(split("SELECT 1--2; no"), vec!["SELECT 1"]);
        assert!(split("  ;  ").is_empty());
    }
}
