//! DDL, transactions and read-only sessions through SQL: tables created with
//! SQL types hold what is inserted and survive a reopen; indexes come and go;
//! mistakes are usage errors that leave the catalog as it was; a session
//! knows its open transaction; a read-only database refuses writes; and the
//! `strata-sql` binary runs a script of them (the README's example). What
//! DDL and transactions answer, and their errors' messages, are
//! `tests/slt/ddl.slt` and `tests/slt/transactions.slt`.

use crate::common;
use crate::common::{error, run};

use std::sync::Arc;

use common::query;
use strata_sql::{SqlError, SqlSession};
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};
use strata_storage::maintenance::check::check_database;

fn session() -> (tempfile::TempDir, Arc<Database>, SqlSession) {
    let (dir, db) = common::empty_db();
    let db = Arc::new(db);
    let s = SqlSession::new(db.clone()).unwrap();
    (dir, db, s)
}

fn strs(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|v| v.to_string()).collect())
        .collect()
}

#[test]
fn tables_created_with_sql_types_hold_their_rows_across_a_reopen() {
    let (dir, db, s) = session();
    run(
        &s,
        "CREATE TABLE Orders (id INT NOT NULL, customer BIGINT, total DECIMAL(15,2), \
         placed DATE, code CHAR(3), note VARCHAR(20), weight DOUBLE, paid BOOLEAN)",
    );
    run(
        &s,
        "INSERT INTO orders VALUES \
         (1, 10, 12.50, DATE '1995-03-01', 'AB', 'first', 1.5, true), \
         (2, NULL, 0.07, NULL, NULL, NULL, NULL, NULL)",
    );
    run(&s, "INSERT INTO orders (id, total) VALUES (3, 0.06 + 0.01)");
    run(&s, "CREATE INDEX orders_total ON orders (total, id)");
    let want = strs(&[
        &[
            "1",
            "10",
            "12.50",
            "1995-03-01",
            "AB",
            "first",
            "1.5",
            "true",
        ],
        &["2", "NULL", "0.07", "NULL", "NULL", "NULL", "NULL", "NULL"],
        &["3", "NULL", "0.07", "NULL", "NULL", "NULL", "NULL", "NULL"],
    ]);
    assert_eq!(query(&s, "SELECT * FROM orders ORDER BY id"), want);
    assert_eq!(
        query(&s, "SELECT id FROM orders WHERE total = 0.07 ORDER BY id"),
        strs(&[&["2"], &["3"]])
    );
    let d = s.describe(Some("orders")).unwrap();
    assert!(
        d.contains("id INT NOT NULL") && d.contains("total DECIMAL(15,2)\n"),
        "{d}"
    );
    assert!(d.contains("index orders_total (total, id)"), "{d}");

    // Everything is in the catalog and the files: reopen and look again.
    let path = db.dir().to_path_buf();
    drop(s);
    drop(Arc::into_inner(db).unwrap());
    let db = Arc::new(common::reopen(&path));
    check_database(&db, &NoProgress).unwrap();
    let s = SqlSession::new(db.clone()).unwrap();
    assert_eq!(query(&s, "SELECT * FROM orders ORDER BY id"), want);

    run(&s, "DROP INDEX orders_total");
    assert!(!s.describe(Some("orders")).unwrap().contains("index"));
    run(&s, "DROP TABLE orders");
    let e = error(&s, "SELECT * FROM orders");
    assert!(e.to_string().contains("orders"), "{e}");
    assert!(db.table_names().is_empty());
    // The files went with it.
    let data: Vec<_> = std::fs::read_dir(path.join("data")).unwrap().collect();
    assert!(data.is_empty(), "{data:?}");
    drop(dir);
}

/// The refused DDL of `tests/slt/ddl.slt` (which checks each one's message)
/// is a usage error (exit code 2) that leaves the catalog byte for byte as it
/// was, and IF [NOT] EXISTS makes the same statements no-ops.
#[test]
fn ddl_mistakes_are_usage_errors_that_change_nothing() {
    let (_dir, db, s) = session();
    run(&s, "CREATE TABLE t (a INT NOT NULL, b VARCHAR(5))");
    run(&s, "CREATE INDEX t_a ON t (a)");
    let catalog = serde_json::to_string(&db.catalog()).unwrap();
    for sql in [
        "CREATE TABLE t (x INT)",
        "CREATE TABLE T (x INT)",
        "CREATE TABLE u (x BYTEA)",
        "CREATE TABLE u (x INT, y TIMESTAMP WITH TIME ZONE)",
        "CREATE TABLE u (x DECIMAL(30,2))",
        "CREATE TABLE u (x INT CHECK (x > 0))",
        "CREATE TABLE u (x INT) AS SELECT 1",
        "CREATE TABLE t AS SELECT 1",
        "CREATE VIEW t AS SELECT 1",
        "CREATE VIEW v AS SELECT * FROM nosuch",
        "DROP VIEW nosuch",
        "ALTER TABLE t DROP COLUMN a",
        "ALTER TABLE nosuch ADD COLUMN c INT",
        "CREATE TABLE \"bad name\" (x INT)",
        "CREATE INDEX t_a ON t (b)",
        "CREATE INDEX i ON nosuch (a)",
        "CREATE INDEX i ON t (nosuch)",
        "CREATE UNIQUE INDEX i ON t (a) WHERE a > 1",
        "CREATE INDEX i ON t (a) WITH (cache = 'nosuch')",
        "CREATE INDEX i ON t (a) INCLUDE (b)",
        "CREATE INDEX i ON t (a) WITH (fillfactor = 70)",
        "CREATE INDEX i ON t (a) WITH (cache = 'b', cache = 'b')",
        "DROP TABLE nosuch",
        "DROP TABLE t, nosuch",
        "DROP INDEX nosuch",
        "DROP INDEX t_a ON nosuch",
    ] {
        let e = error(&s, sql);
        assert_eq!(e.exit_code(), 2, "{sql}: {e:?}");
        assert!(matches!(e, SqlError::Query(_)), "{sql}: {e:?}");
        assert_eq!(
            serde_json::to_string(&db.catalog()).unwrap(),
            catalog,
            "{sql}"
        );
    }
    for sql in [
        "CREATE TABLE IF NOT EXISTS t (x INT)",
        "CREATE INDEX IF NOT EXISTS t_a ON t (b)",
        "DROP TABLE IF EXISTS nosuch",
        "DROP INDEX IF EXISTS nosuch",
    ] {
        run(&s, sql);
        assert_eq!(
            serde_json::to_string(&db.catalog()).unwrap(),
            catalog,
            "{sql}"
        );
    }
}

#[test]
fn create_index_with_cache_declares_the_leaf_cache_columns_and_keeps_them() {
    let (dir, db, s) = session();
    run(
        &s,
        "CREATE TABLE t (k BIGINT NOT NULL, a INT, b VARCHAR(8))",
    );
    run(
        &s,
        "INSERT INTO t VALUES (1, 10, 'x'), (2, 20, 'y'), (3, 30, NULL)",
    );
    run(&s, "CREATE INDEX t_k ON t (k) WITH (cache = 'A, b')");
    let described = s.describe(Some("t")).unwrap();
    assert!(
        described.contains("index t_k (k) caches (a, b)"),
        "{described}"
    );
    // A key column cannot be cached: refused naming it, nothing created.
    let e = error(&s, "CREATE INDEX t_a ON t (a) WITH (cache = 'a')");
    assert!(e.to_string().contains("'a'"), "{e}");
    assert_eq!(db.table("t").unwrap().indexes().len(), 1);
    assert_eq!(
        common::query(&s, "SELECT a, b FROM t WHERE k >= 2 ORDER BY k"),
        strs(&[&["20", "y"], &["30", "NULL"]])
    );
    // Updates through SQL keep answering right with the cache declared.
    run(&s, "UPDATE t SET b = 'z' WHERE k = 2");
    assert_eq!(
        common::query(&s, "SELECT b FROM t WHERE k = 2"),
        strs(&[&["z"]])
    );
    drop(s);
    drop(db);
    let db = common::reopen(&dir.path().join("db"));
    let t = db.table("t").unwrap();
    assert_eq!(t.indexes()[0].def.cache, vec!["a", "b"]);
}

/// The session says whether a transaction is open (the rows each statement
/// sees, and the refusals, are `tests/slt/transactions.slt`); a failing
/// statement inside keeps it open; after COMMIT the files are consistent.
#[test]
fn a_session_knows_its_open_transaction_and_commits_consistently() {
    let (_dir, db, s) = session();
    run(&s, "CREATE TABLE t (a INT NOT NULL)");
    run(&s, "CREATE INDEX t_a ON t (a)");
    assert!(!s.in_transaction());
    run(&s, "BEGIN");
    assert!(s.in_transaction());
    run(&s, "INSERT INTO t VALUES (1), (2), (3)");
    run(&s, "UPDATE t SET a = a * 10 WHERE a > 1");
    error(&s, "INSERT INTO t VALUES (4), (NULL)");
    assert!(s.in_transaction());
    run(&s, "DELETE FROM t WHERE a = 1");
    run(&s, "COMMIT");
    assert!(!s.in_transaction());
    error(&s, "COMMIT");
    assert!(!s.in_transaction());
    check_database(&db, &NoProgress).unwrap();
}

#[test]
fn a_read_only_database_refuses_writes_and_answers_queries() {
    let (dir, db, s) = session();
    run(&s, "CREATE TABLE t (a INT NOT NULL)");
    run(&s, "INSERT INTO t VALUES (1)");
    let path = db.dir().to_path_buf();
    drop(s);
    drop(Arc::into_inner(db).unwrap());
    let ro = Database::open(
        &path,
        DbOptions {
            read_only: true,
            ..common::options()
        },
    )
    .unwrap();
    let s = SqlSession::new(Arc::new(ro)).unwrap();
    for sql in [
        "INSERT INTO t VALUES (2)",
        "UPDATE t SET a = 3",
        "DELETE FROM t",
        "CREATE TABLE u (a INT)",
        "CREATE INDEX i ON t (a)",
        "DROP TABLE t",
        "BEGIN",
    ] {
        let e = error(&s, sql);
        assert!(
            e.to_string().starts_with("database opened read-only: "),
            "{sql}: {e}"
        );
    }
    assert_eq!(query(&s, "SELECT a FROM t"), strs(&[&["1"]]));
    drop(dir);
}

/// `strata-sql sql --db DIR -e SQL` (buffered I/O).
fn binary(db: &std::path::Path, sql: &str) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_strata-sql"))
        .args(["sql", "--device", "buffered", "--format", "csv", "--db"])
        .arg(db)
        .args(["-e", sql])
        .output()
        .unwrap()
}

#[test]
fn the_binary_runs_the_sql_pages_example_and_exits_by_error_kind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(Database::create(&path, common::options()).unwrap());
    // The SQL page's example, as written there.
    let readme = include_str!("../../../docs/sql.md");
    let start = readme
        .find("CREATE TABLE accounts")
        .expect("docs/sql.md has the SQL example");
    // Up to the closing quote of `-e "..."`.
    let example = &readme[start..start + readme[start..].find('"').unwrap()];
    let out = binary(&path, example);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.ends_with("id,owner,balance\n1,ada,120.50\n3,edsger,75.00\n"),
        "{stdout}"
    );

    let out = binary(&path, "INSERT INTO accounts (owner) VALUES ('nobody')");
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("column 'id'"), "{err}");
    let out = binary(&path, "CREATE TABLE x (a BYTEA)");
    assert_eq!(out.status.code(), Some(2));
}
