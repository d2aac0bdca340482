//! Statements the differential SQL tester (crates/difftest, issue 53) found
//! strata answering unlike DuckDB and PostgreSQL, one test per finding, each
//! failing before its fix.

use std::sync::Arc;

use strata_sql::SqlSession;

use crate::common::{empty_db, query};

fn session() -> (tempfile::TempDir, SqlSession) {
    let (dir, db) = empty_db();
    let s = SqlSession::new(Arc::new(db)).unwrap();
    s.execute("CREATE TABLE t (k INT NOT NULL, a INT, b DOUBLE)")
        .unwrap();
    s.execute("INSERT INTO t VALUES (1, NULL, 1.5), (2, 5, NULL), (3, NULL, NULL)")
        .unwrap();
    (dir, s)
}

/// A plain UPDATE or DELETE is planned from its syntax tree, past
/// DataFusion's simplifier; `coalesce` ran only once simplified and was
/// refused ("coalesce should have been simplified to case").
#[test]
fn update_and_delete_take_coalesce() {
    let (_dir, s) = session();
    s.execute("UPDATE t SET a = COALESCE(a, k * 10) WHERE COALESCE(b, 0.0) < 1.0")
        .unwrap();
    assert_eq!(
        query(&s, "SELECT k, a FROM t ORDER BY k"),
        [["1", "NULL"], ["2", "5"], ["3", "30"]]
    );
    s.execute("DELETE FROM t WHERE COALESCE(a, 0) = 5").unwrap();
    assert_eq!(query(&s, "SELECT k FROM t ORDER BY k"), [["1"], ["3"]]);
}

/// `SET k = 5, k = 6` kept the last value without a word; PostgreSQL and
/// DuckDB refuse it, and so does strata now, changing nothing.
#[test]
fn update_refuses_a_column_set_twice() {
    let (_dir, s) = session();
    let e = s
        .execute("UPDATE t SET a = 5, b = 1.0, A = 6 WHERE k = 1")
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("column 'a' is assigned more than once"),
        "{e}"
    );
    assert_eq!(
        query(&s, "SELECT a, b FROM t WHERE k = 1"),
        [["NULL", "1.5"]]
    );
}
