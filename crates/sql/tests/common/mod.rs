//! Helpers shared by the SQL tests.
#![allow(dead_code)]

use strata_sql::{QueryResult, SqlError, SqlSession};
use strata_storage::Database;
use strata_storage::db::{DbOptions, IndexSpec, NoProgress, TableOptions};
use strata_storage::row::{Schema, Value};

/// The options every test database is opened with (buffered I/O, 4 MiB pool).
pub fn options() -> DbOptions {
    DbOptions {
        buffer_pool_bytes: 4 << 20,
        direct_io: false,
        ..DbOptions::default()
    }
}

/// [`options`] with the cold tier `tier` installed.
pub fn cold_options(tier: &strata_cold::device::ColdTier) -> DbOptions {
    DbOptions {
        cold_tier: Some(tier.layer()),
        ..options()
    }
}

/// A fresh database in a temporary directory, at `<dir>/db`.
pub fn empty_db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(&dir.path().join("db"), options()).unwrap();
    (dir, db)
}

/// Opens the database in `dir` again.
pub fn reopen(dir: &std::path::Path) -> Database {
    Database::open(dir, options()).unwrap()
}

/// Creates table `name` with `schema` and `indexes`, holding `rows`.
pub fn load(
    db: &Database,
    name: &str,
    schema: &str,
    indexes: Vec<IndexSpec>,
    rows: impl IntoIterator<Item = Vec<Value>>,
) {
    let mut l = db
        .begin_create_load(
            name,
            Schema::parse(schema).unwrap(),
            TableOptions::default(),
            indexes,
        )
        .unwrap();
    for r in rows {
        l.append(&r).unwrap();
    }
    l.commit(&NoProgress).unwrap();
}

/// All values of a result as text, row by row (NULL as `NULL`).
pub fn text(r: &QueryResult) -> Vec<Vec<String>> {
    use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
    let opts = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for b in &r.batches {
        let f: Vec<_> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).unwrap())
            .collect();
        for i in 0..b.num_rows() {
            out.push(f.iter().map(|f| f.value(i).to_string()).collect());
        }
    }
    out
}

/// The rows `sql` answers, as text.
pub fn query(s: &SqlSession, sql: &str) -> Vec<Vec<String>> {
    text(&s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}")))
}

/// The value of counter `name` in an EXPLAIN ANALYZE output (its first
/// occurrence; DataFusion sums a counter over an operator's partitions).
pub fn counter(out: &str, name: &str) -> u64 {
    out.split(&format!("{name}="))
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no counter {name} in:\n{out}"))
}

/// Runs `cmd` with `input` written to its standard input (a pipe) and
/// returns what it printed and how it exited.
pub fn with_stdin(mut cmd: std::process::Command, input: &str) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// A process's output as text.
pub fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs a statement that must succeed.
pub fn run(s: &SqlSession, sql: &str) {
    s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Runs a statement that must fail, and gives its error.
pub fn error(s: &SqlSession, sql: &str) -> SqlError {
    match s.execute(sql) {
        Err(e) => e,
        Ok(_) => panic!("{sql} succeeded"),
    }
}

/// The answers of the 22 TPC-H queries as CSV, each under its name, in a
/// session of `db` with `settings` set.
pub fn tpch_answers(db: &std::sync::Arc<Database>, settings: &[(&str, &str)]) -> Vec<String> {
    let s = SqlSession::new(db.clone()).unwrap();
    for (k, v) in settings {
        s.set(k, v).unwrap();
    }
    strata_sql::tpch::QUERIES
        .iter()
        .map(|(name, sql)| {
            let r = s
                .execute(sql.trim().trim_end_matches(';'))
                .unwrap_or_else(|e| panic!("{name} with {settings:?}: {e}"));
            let csv = strata_sql::shell::format::render(
                strata_sql::shell::format::Format::Csv,
                &r.schema,
                &r.batches,
            )
            .unwrap();
            format!("{name}\n{csv}")
        })
        .collect()
}

/// A cold storage device without delays (`strata csd serve`, in-process,
/// data under `data`) on a free loopback port, and the runtime serving it.
pub fn csd_without_delays(
    data: &std::path::Path,
) -> (tokio::runtime::Runtime, strata_csd::server::RunningServer) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let csd = rt
        .block_on(strata_csd::server::spawn(
            strata_csd::config::CsdConfig {
                time_scale: 0.0,
                ..strata_csd::config::CsdConfig::default()
            },
            data,
            "127.0.0.1:0".parse().unwrap(),
        ))
        .unwrap();
    (rt, csd)
}
