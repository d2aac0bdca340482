//! A connection: one database opened in this process and one SQL session
//! over it.
//!
//! `Connection(path)` opens the database at `path`, creating it when the
//! directory does not exist; `Connection(None)` makes a temporary database
//! removed at `close()`. `read_only=True` opens beside other readers and
//! beside a writer (in this process or another), each statement on the
//! commits made before it began, and never writes.
//!
//! A statement runs on the session's statement thread with the GIL released
//! (other Python threads, and other connections' statements, go on). The
//! calling thread waits in slices of [`SIGNAL_POLL`], looking for a signal
//! between them: Ctrl-C raises the statement's cancel signal — the plan's
//! streams are dropped, which stops strata's scan threads — and the
//! KeyboardInterrupt goes on once the statement has let go of the session, so
//! the connection is usable again at once. (A write is never cancelled half
//! way: it ends first.)

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use parking_lot::Mutex;
use pyo3::prelude::*;

use strata_sql::shell::open::OpenArgs;
use strata_sql::{Cancel, QueryResult, SqlError, SqlSession, Stop, Stopped};
use strata_storage::Database;
use strata_storage::db::DbOptions;

use crate::errors;
use crate::maintenance;
use crate::params;
use crate::result::Result as PyResultSet;

/// How long a waiting statement sleeps between looks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(20);

/// A connection to a strata database in this process.
#[pyclass(module = "strata._strata", frozen)]
pub struct Connection {
    session: Mutex<Option<Arc<SqlSession>>>,
    /// The database's directory.
    path: PathBuf,
    read_only: bool,
    /// A temporary database's directory, removed when the connection closes.
    temporary: Mutex<Option<tempfile::TempDir>>,
    /// The cold tier the database reads cold tables through (`tier()`
    /// moves tables to it).
    cold: strata_cold::device::ColdTier,
}

impl Connection {
    fn session(&self, py: Python<'_>) -> PyResult<Arc<SqlSession>> {
        self.session
            .lock()
            .clone()
            .ok_or_else(|| errors::interface(py, "the connection is closed"))
    }

    /// Runs `sql` with the GIL released; Ctrl-C cancels it.
    fn run(&self, py: Python<'_>, sql: String) -> PyResult<PyResultSet> {
        let session = self.session(py)?;
        let cancel = Cancel::new();
        let stop = Stop {
            timeout: None,
            cancel: Some(cancel.clone()),
        };
        let (tx, rx) = std::sync::mpsc::channel::<
            std::result::Result<std::result::Result<QueryResult, Stopped>, SqlError>,
        >();
        let rx = Mutex::new(rx);
        let text = sql.clone();
        session
            .spawn(move |s| {
                let _ = tx.send(s.execute_until(&text, stop));
            })
            .map_err(|e| errors::sql(py, &e))?;
        let answer = loop {
            match py.detach(|| rx.lock().recv_timeout(SIGNAL_POLL)) {
                Ok(answer) => break answer,
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(interrupt) = py.check_signals() {
                        cancel.cancel();
                        // The statement lets go of the session first.
                        let _ = py.detach(|| rx.lock().recv());
                        return Err(interrupt);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(errors::raise(
                        py,
                        "InternalError",
                        "the statement ended without an answer (its thread panicked; the message is on stderr)",
                        "XX000",
                    ));
                }
            }
        };
        match answer {
            Ok(Ok(r)) => Ok(PyResultSet::new(&sql, r)),
            Ok(Err(Stopped::Cancelled)) => Err(errors::raise(
                py,
                "OperationalError",
                "canceling statement due to user request",
                "57014",
            )),
            Ok(Err(Stopped::TimedOut)) => Err(errors::raise(
                py,
                "OperationalError",
                "canceling statement due to statement timeout",
                "57014",
            )),
            Err(e) => Err(errors::sql(py, &e)),
        }
    }
}

/// The database's options (buffer pool, device and cold cache as `strata
/// sql` takes them) and its cold tier.
fn options(
    path: &std::path::Path,
    buffer_pool: &str,
    device: &str,
) -> anyhow::Result<(DbOptions, strata_cold::device::ColdTier)> {
    OpenArgs {
        db: path.to_path_buf(),
        buffer_pool: buffer_pool.to_owned(),
        device: device.to_owned(),
        cold_cache: "512MiB".to_owned(),
    }
    .options_and_tier()
}

/// Opens (or creates) the database at `path`.
fn open(
    path: &std::path::Path,
    read_only: bool,
    opts: DbOptions,
) -> std::result::Result<Database, String> {
    if path.join("catalog.json").exists() {
        let opts = DbOptions { read_only, ..opts };
        return Database::open(path, opts).map_err(|e| e.to_string());
    }
    let empty = match std::fs::read_dir(path) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    if !empty {
        return Err(format!(
            "{} is not a strata database (it has files but no catalog.json)",
            path.display()
        ));
    }
    if read_only {
        return Err(format!(
            "{} is not a strata database, and a read-only connection does not create one",
            path.display()
        ));
    }
    std::fs::create_dir_all(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Database::create(path, opts).map_err(|e| e.to_string())
}

#[pymethods]
impl Connection {
    #[new]
    #[pyo3(signature = (database=None, read_only=false, buffer_pool="256MiB", device="real"))]
    fn new(
        py: Python<'_>,
        database: Option<PathBuf>,
        read_only: bool,
        buffer_pool: &str,
        device: &str,
    ) -> PyResult<Connection> {
        let (path, temporary) = match database {
            Some(p) if p.as_os_str() != ":memory:" => (p, None),
            _ => {
                if read_only {
                    return Err(errors::interface(
                        py,
                        "a temporary database cannot be read-only: give the path of a database",
                    ));
                }
                let dir = tempfile::Builder::new()
                    .prefix("strata-")
                    .tempdir()
                    .map_err(|e| errors::raise(py, "OperationalError", &e.to_string(), "58030"))?;
                (dir.path().join("db"), Some(dir))
            }
        };
        let (opts, cold) = options(&path, buffer_pool, device)
            .map_err(|e| errors::argument(py, &format!("{e:#}")))?;
        let db = py
            .detach(|| open(&path, read_only, opts))
            .map_err(|m| errors::raise(py, "OperationalError", &m, "58030"))?;
        let session = SqlSession::new(Arc::new(db)).map_err(|e| errors::sql(py, &e))?;
        Ok(Connection {
            session: Mutex::new(Some(Arc::new(session))),
            path,
            read_only,
            temporary: Mutex::new(temporary),
            cold,
        })
    }

    /// Runs one statement, its `$n` bound to `params` (a sequence).
    #[pyo3(signature = (sql, params=None))]
    fn execute(
        &self,
        py: Python<'_>,
        sql: &str,
        params: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PyResultSet> {
        let text = match params {
            Some(p) if !p.is_none() => params::bind(py, sql, &p)?,
            _ => sql.to_owned(),
        };
        self.run(py, text)
    }

    /// Makes the rows of an Arrow stream (anything with
    /// `__arrow_c_stream__`: a pyarrow Table, a RecordBatchReader, a polars
    /// or pandas DataFrame) a table of this connection named `name`, for its
    /// queries; the database does not store it.
    fn register(&self, py: Python<'_>, name: &str, data: Bound<'_, PyAny>) -> PyResult<()> {
        use arrow_pyarrow::FromPyArrow;
        let session = self.session(py)?;
        let reader = arrow_array::ffi_stream::ArrowArrayStreamReader::from_pyarrow_bound(&data)?;
        let schema = arrow_array::RecordBatchReader::schema(&reader);
        let batches = py
            .detach(|| reader.collect::<std::result::Result<Vec<_>, _>>())
            .map_err(|e| {
                errors::raise(
                    py,
                    "DataError",
                    &format!("reading the Arrow stream of {name}: {e}"),
                    "22000",
                )
            })?;
        session
            .register_batches(name, schema, batches)
            .map_err(|e| errors::sql(py, &e))
    }

    /// Forgets a table made by `register`; whether there was one.
    fn unregister(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        self.session(py)?
            .unregister(name)
            .map_err(|e| errors::sql(py, &e))
    }

    /// Rewrites `table` as `strata compact` does (narrowest encodings;
    /// `plain=True` as declared; `format="columns"` or `"rows"` converts it);
    /// its report as a dict.
    #[pyo3(signature = (table, format=None, plain=false))]
    fn compact<'py>(
        &self,
        py: Python<'py>,
        table: &str,
        format: Option<&str>,
        plain: bool,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        maintenance::compact(py, &*self.session(py)?, table, format, plain)
    }

    /// Moves `table` to the cold tier (`to="cold"`, objects on the cold
    /// storage device at `endpoint`) or back (`to="local"`), as `strata
    /// tier` does; its report as a dict.
    #[pyo3(signature = (table, to="cold", endpoint=None, bucket=None, object_size="1GiB", delete_objects=false))]
    #[allow(clippy::too_many_arguments)]
    fn tier<'py>(
        &self,
        py: Python<'py>,
        table: &str,
        to: &str,
        endpoint: Option<&str>,
        bucket: Option<String>,
        object_size: &str,
        delete_objects: bool,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        maintenance::tier(
            py,
            &*self.session(py)?,
            &self.cold,
            table,
            to,
            endpoint,
            bucket,
            object_size,
            delete_objects,
        )
    }

    /// Whether a BEGIN is waiting for its COMMIT or ROLLBACK.
    #[getter]
    fn in_transaction(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.session(py)?.in_transaction())
    }

    #[getter]
    fn closed(&self) -> bool {
        self.session.lock().is_none()
    }

    /// The database's directory.
    #[getter]
    fn database(&self) -> PathBuf {
        self.path.clone()
    }

    #[getter]
    fn read_only(&self) -> bool {
        self.read_only
    }

    /// Closes the database (a transaction still open is rolled back); a
    /// temporary database is removed.
    fn close(&self, py: Python<'_>) {
        let session = self.session.lock().take();
        let temporary = self.temporary.lock().take();
        py.detach(move || {
            if let Some(s) = session {
                if s.in_transaction() {
                    let _ = s.execute("ROLLBACK");
                }
                drop(s);
            }
            drop(temporary);
        });
    }
}
