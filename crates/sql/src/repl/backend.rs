//! Where the interactive session's statements run: a session of this
//! process over the database it opened, or the `strata serve` that owns the
//! database (its `LOCK` refuses this process), reached by the PostgreSQL
//! protocol ([`Remote`]). The session behaves the same over both: results
//! in the same formats, `\d` (the server's `strata_describe()`), completion
//! of table and column names (its `pg_catalog`), errors with their exit
//! codes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Instant;

use strata_sql::arrow::datatypes::SchemaRef;
use strata_sql::arrow::record_batch::RecordBatch;
use strata_sql::shell::remote::Remote;
use strata_sql::{SqlError, SqlSession};

use strata_sql::QueryResult;
use strata_storage::util::format_bytes;

use super::complete::Names;

/// A statement's result and the line the timing shows for it.
pub struct Answer {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
    pub summary: String,
}

pub enum Backend<'a> {
    Local(&'a SqlSession),
    Served {
        remote: Box<Remote>,
        addr: SocketAddr,
        db: PathBuf,
    },
}

impl Backend<'_> {
    pub fn execute(&mut self, sql: &str) -> Result<Answer, SqlError> {
        match self {
            Backend::Local(session) => {
                let r = session.execute(sql)?;
                let summary = summary(&r);
                Ok(Answer {
                    schema: r.schema,
                    batches: r.batches,
                    summary,
                })
            }
            Backend::Served { remote, addr, .. } => {
                let start = Instant::now();
                let (schema, batches) = remote.execute(sql)?;
                let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
                Ok(Answer {
                    schema,
                    batches,
                    summary: format!(
                        "({rows} row{}, {:.1} ms through strata serve at {addr})",
                        if rows == 1 { "" } else { "s" },
                        start.elapsed().as_secs_f64() * 1e3
                    ),
                })
            }
        }
    }

    /// What `\d` shows: the tables, or one table's columns and indexes.
    pub fn describe(&mut self, table: Option<&str>) -> Result<String, SqlError> {
        match self {
            Backend::Local(session) => session.describe(table),
            Backend::Served { .. } => {
                let arg = table
                    .map(|t| format!("'{}'", t.replace('\'', "''")))
                    .unwrap_or_default();
                let a = self.execute(&format!("SELECT line FROM strata_describe({arg})"))?;
                let mut text = String::new();
                for b in &a.batches {
                    let lines = strata_sql::arrow::array::cast::as_string_array(b.column(0));
                    for line in lines.iter().flatten() {
                        text.push_str(line);
                        text.push('\n');
                    }
                }
                Ok(text)
            }
        }
    }

    /// The table and column names completion offers; through a server, from
    /// its `pg_catalog` (none if it cannot say).
    pub fn names(&mut self) -> Names {
        match self {
            Backend::Local(session) => Names::read(&session.database()),
            Backend::Served { .. } => {
                let Ok(a) = self.execute(
                    "SELECT c.relname, a.attname FROM pg_catalog.pg_class c \
                     JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid \
                     WHERE c.relkind IN ('r', 'v') AND a.attnum > 0 \
                     ORDER BY c.relname, a.attnum",
                ) else {
                    return Names::new(Vec::new());
                };
                let mut tables: Vec<(String, Vec<String>)> = Vec::new();
                for b in &a.batches {
                    let t = strata_sql::arrow::array::cast::as_string_array(b.column(0));
                    let c = strata_sql::arrow::array::cast::as_string_array(b.column(1));
                    for (t, c) in t.iter().zip(c.iter()) {
                        let (Some(t), Some(c)) = (t, c) else { continue };
                        match tables.last_mut() {
                            Some((name, cols)) if name == t => cols.push(c.to_string()),
                            _ => tables.push((t.to_string(), vec![c.to_string()])),
                        }
                    }
                }
                Names::new(tables)
            }
        }
    }

    /// The line the session opens with.
    pub fn banner(&self) -> String {
        match self {
            Backend::Local(session) => {
                format!("strata SQL on {}", session.database().dir().display())
            }
            Backend::Served { addr, db, .. } => format!(
                "strata SQL on {} through strata serve at {addr}",
                db.display()
            ),
        }
    }

    /// Says so when the session ends inside a transaction, which is then
    /// rolled back. (A server rolls back a block whose connection ends; the
    /// protocol's client here does not say whether one is open.)
    pub fn warn_open_transaction(&self) {
        if let Backend::Local(session) = self {
            warn_open_transaction(session);
        }
    }
}

/// The line printed after a result: rows, time, and the device's I/O.
pub fn summary(r: &QueryResult) -> String {
    format!(
        "({} row{}, {:.1} ms; I/O: {} requests, {} read, {} written{})",
        r.rows(),
        if r.rows() == 1 { "" } else { "s" },
        r.elapsed.as_secs_f64() * 1e3,
        r.io.read_requests,
        format_bytes(r.io.bytes_read()),
        format_bytes(r.io.bytes_written()),
        if r.io.modeled_ns > 0 {
            format!(", modeled {:.1} ms", r.io.modeled_ms())
        } else {
            String::new()
        }
    )
}

/// Says so when the session ends inside a transaction, which is rolled back.
pub fn warn_open_transaction(session: &SqlSession) {
    if session.in_transaction() {
        eprintln!(
            "warning: the session ended inside a transaction (BEGIN without COMMIT); it is rolled back"
        );
    }
}
