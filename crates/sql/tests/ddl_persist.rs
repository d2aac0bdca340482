//! The DDL of issue 54 across sessions over one database directory, each
//! opened fresh as a new `strata sql` process opens it: views, `CREATE TABLE
//! AS`, TEXT, `ALTER TABLE`, PRIMARY KEY / UNIQUE and TIMESTAMP are in the
//! catalog and the files, not in a session. What each statement answers and
//! its errors are the `ddl_*.slt` and `types_timestamp.slt` files.

use crate::common;
use crate::common::{error, run};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::query;
use strata_sql::SqlSession;
use strata_storage::db::NoProgress;
use strata_storage::maintenance::check::check_database;

/// A session over the database at `path`, opened afresh (checked first).
fn open(path: &Path) -> SqlSession {
    let db = Arc::new(common::reopen(path));
    check_database(&db, &NoProgress).unwrap();
    SqlSession::new(db).unwrap()
}

/// Closes the session and its database (as a process ends).
fn close(s: SqlSession) {
    let db = s.database().clone();
    drop(s);
    drop(Arc::into_inner(db).expect("the session let the database go"));
}

fn rows(r: &[&[&str]]) -> Vec<Vec<String>> {
    r.iter()
        .map(|r| r.iter().map(|v| v.to_string()).collect())
        .collect()
}

fn fresh() -> (tempfile::TempDir, PathBuf, SqlSession) {
    let (dir, db) = common::empty_db();
    let path = db.dir().to_path_buf();
    let s = SqlSession::new(Arc::new(db)).unwrap();
    (dir, path, s)
}

#[test]
fn views_outlive_their_session_and_say_when_their_table_is_gone() {
    let (_dir, path, s) = fresh();
    run(&s, "CREATE TABLE t (a INT, b TEXT)");
    run(
        &s,
        "INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three')",
    );
    run(&s, "CREATE VIEW big AS SELECT a, b FROM t WHERE a >= 2");
    run(&s, "CREATE VIEW named (x) AS SELECT a * 10 FROM big");
    close(s);

    let s = open(&path);
    let want = rows(&[&["2", "two"], &["3", "three"]]);
    assert_eq!(query(&s, "SELECT * FROM big ORDER BY a"), want);
    assert_eq!(
        query(&s, "SELECT x FROM named ORDER BY x"),
        rows(&[&["20"], &["30"]])
    );
    assert!(s.describe(None).unwrap().contains("big: view (a, b)"));
    run(
        &s,
        "CREATE OR REPLACE VIEW big AS SELECT a, b FROM t WHERE a = 1",
    );
    run(&s, "DROP VIEW named");
    close(s);

    let s = open(&path);
    assert_eq!(query(&s, "SELECT * FROM big"), rows(&[&["1", "one"]]));
    let e = error(&s, "SELECT * FROM named");
    assert!(e.to_string().contains("named"), "{e}");
    run(&s, "DROP TABLE t");
    let e = error(&s, "SELECT * FROM big");
    assert!(e.to_string().contains("view 'big' cannot be read"), "{e}");
    close(s);

    // Still there, still broken, in the next process; a new t mends it.
    let s = open(&path);
    let e = error(&s, "SELECT a FROM big");
    assert!(e.to_string().contains("view 'big' cannot be read"), "{e}");
    run(&s, "CREATE TABLE t (a INT, b TEXT)");
    run(&s, "INSERT INTO t VALUES (1, 'uno')");
    assert_eq!(query(&s, "SELECT * FROM big"), rows(&[&["1", "uno"]]));
    close(s);
}

#[test]
fn tables_made_by_a_query_alter_and_text_persist() {
    let (_dir, path, s) = fresh();
    run(
        &s,
        "CREATE TABLE src (k INT NOT NULL, v VARCHAR(10), d DATE)",
    );
    run(
        &s,
        "INSERT INTO src VALUES (1, 'a', DATE '2024-01-01'), (2, 'bb', NULL), (3, NULL, DATE '2024-03-01')",
    );
    run(
        &s,
        "CREATE TABLE made AS SELECT k, v, d, k * 2 AS k2, sum(k) OVER () AS total FROM src",
    );
    run(&s, "CREATE TABLE notes (id INT, body TEXT, short VARCHAR)");
    let long = "x".repeat(6000);
    run(
        &s,
        &format!("INSERT INTO notes VALUES (1, '{long}', 'abc')"),
    );
    close(s);

    let s = open(&path);
    let d = s.describe(Some("made")).unwrap();
    assert!(
        d.contains("k INT\n") && d.contains("v TEXT\n") && d.contains("k2 BIGINT\n"),
        "{d}"
    );
    assert_eq!(
        query(&s, "SELECT k, v, d, k2, total FROM made ORDER BY k"),
        rows(&[
            &["1", "a", "2024-01-01", "2", "6"],
            &["2", "bb", "NULL", "4", "6"],
            &["3", "NULL", "2024-03-01", "6", "6"],
        ])
    );
    let d = s.describe(Some("notes")).unwrap();
    assert!(d.contains("body TEXT") && d.contains("short TEXT"), "{d}");
    assert_eq!(
        query(&s, "SELECT length(body), short FROM notes"),
        rows(&[&["6000", "abc"]])
    );

    run(&s, "ALTER TABLE made ADD COLUMN note TEXT");
    run(&s, "ALTER TABLE made DROP COLUMN total");
    run(&s, "ALTER TABLE made RENAME COLUMN k2 TO doubled");
    run(&s, "ALTER TABLE made RENAME TO kept");
    run(&s, "CREATE INDEX kept_doubled ON kept (doubled)");
    run(&s, "UPDATE kept SET note = 'n' || k WHERE k < 3");
    close(s);

    let s = open(&path);
    assert!(error(&s, "SELECT * FROM made").exit_code() == 2);
    assert_eq!(
        query(&s, "SELECT * FROM kept ORDER BY k"),
        rows(&[
            &["1", "a", "2024-01-01", "2", "n1"],
            &["2", "bb", "NULL", "4", "n2"],
            &["3", "NULL", "2024-03-01", "6", "NULL"],
        ])
    );
    assert_eq!(
        query(&s, "SELECT k FROM kept WHERE doubled = 4"),
        rows(&[&["2"]])
    );
    let e = error(&s, "ALTER TABLE kept DROP COLUMN doubled");
    assert!(e.to_string().contains("kept_doubled"), "{e}");
    close(s);
}

#[test]
fn keys_are_enforced_in_every_later_session() {
    let (_dir, path, s) = fresh();
    run(
        &s,
        "CREATE TABLE acct (id INT PRIMARY KEY, email TEXT UNIQUE, name TEXT)",
    );
    run(
        &s,
        "INSERT INTO acct VALUES (1, 'a@x', 'a'), (2, 'b@x', 'b'), (3, NULL, 'c')",
    );
    close(s);

    let s = open(&path);
    let d = s.describe(Some("acct")).unwrap();
    assert!(
        d.contains("id INT NOT NULL") && d.contains("unique index acct_pkey (id)"),
        "{d}"
    );
    let e = error(
        &s,
        "INSERT INTO acct VALUES (4, 'd@x', 'd'), (1, 'e@x', 'e')",
    );
    assert!(
        e.to_string().contains("23505") && e.to_string().contains("acct_pkey"),
        "{e}"
    );
    assert_eq!(e.exit_code(), 3);
    let e = error(&s, "UPDATE acct SET email = 'a@x' WHERE id = 2");
    assert!(e.to_string().contains("acct_email_key"), "{e}");
    // Nothing of the failed statements is there; NULLs are not equal.
    run(&s, "INSERT INTO acct VALUES (5, NULL, 'e')");
    run(&s, "UPDATE acct SET id = id + 10");
    close(s);

    let s = open(&path);
    assert_eq!(
        query(&s, "SELECT id, email FROM acct ORDER BY id"),
        rows(&[
            &["11", "a@x"],
            &["12", "b@x"],
            &["13", "NULL"],
            &["15", "NULL"],
        ])
    );
    close(s);
}

#[test]
fn timestamps_are_stored_indexed_and_read_back() {
    let (_dir, path, s) = fresh();
    run(&s, "CREATE TABLE ev (ts TIMESTAMP NOT NULL, what TEXT)");
    run(
        &s,
        "INSERT INTO ev VALUES (TIMESTAMP '2024-01-03 10:00:00', 'a'), \
         ('2024-01-03 10:00:00.25', 'b'), (TIMESTAMP '1969-12-31 23:59:59.999999', 'c')",
    );
    run(&s, "CREATE INDEX ev_ts ON ev (ts)");
    close(s);

    let s = open(&path);
    assert_eq!(
        query(&s, "SELECT ts, what FROM ev ORDER BY ts"),
        rows(&[
            &["1969-12-31T23:59:59.999999", "c"],
            &["2024-01-03T10:00:00", "a"],
            &["2024-01-03T10:00:00.250", "b"],
        ])
    );
    assert_eq!(
        query(
            &s,
            "SELECT what FROM ev WHERE ts > TIMESTAMP '2024-01-03 10:00:00' ORDER BY what"
        ),
        rows(&[&["b"]])
    );
    assert!(
        s.describe(Some("ev"))
            .unwrap()
            .contains("ts TIMESTAMP NOT NULL")
    );
    close(s);
}
