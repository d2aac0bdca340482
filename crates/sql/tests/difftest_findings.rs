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

/// A table with both zeros: 0.0 (k = 1, 3) and -0.0 (k = 2), which SQL
/// calls equal.
fn zeros() -> (tempfile::TempDir, SqlSession) {
    let (dir, db) = empty_db();
    let s = SqlSession::new(Arc::new(db)).unwrap();
    s.execute("CREATE TABLE z (k INT NOT NULL, d DOUBLE)")
        .unwrap();
    s.execute("INSERT INTO z VALUES (1, 0.0), (3, 0.0), (4, 2.5), (5, NULL)")
        .unwrap();
    s.execute("INSERT INTO z SELECT 2, -d FROM z WHERE k = 1")
        .unwrap();
    assert_eq!(
        query(&s, "SELECT CAST(d AS VARCHAR) FROM z WHERE k = 2"),
        [["-0.0"]]
    );
    (dir, s)
}

/// `NULLIF` and `CASE x WHEN` compared the raw bits: `NULLIF(-0.0, 0.0)`
/// was -0.0 (so `1 / NULLIF(d, 0)` an infinity where SQL gives NULL), and
/// `CASE d WHEN 0` took the ELSE for -0.0.
#[test]
fn nullif_and_case_take_negative_zero_for_zero() {
    let (_dir, s) = zeros();
    assert_eq!(
        query(
            &s,
            "SELECT k, 1.0 / NULLIF(d, CAST(0 AS DOUBLE)), \
             CASE d WHEN CAST(0 AS DOUBLE) THEN 'zero' WHEN 2.5 THEN 'two' ELSE 'else' END \
             FROM z ORDER BY k"
        ),
        [
            ["1", "NULL", "zero"],
            ["2", "NULL", "zero"],
            ["3", "NULL", "zero"],
            ["4", "0.4", "two"],
            ["5", "NULL", "else"],
        ]
    );
    // The same through the direct UPDATE path.
    s.execute("UPDATE z SET d = NULLIF(d, CAST(0 AS DOUBLE)) WHERE k = 2")
        .unwrap();
    assert_eq!(query(&s, "SELECT d FROM z WHERE k = 2"), [["NULL"]]);
}

/// `count(DISTINCT)` and `PARTITION BY` told -0.0 from 0.0 (2 values, two
/// partitions) while `GROUP BY` made one group.
#[test]
fn distinct_aggregates_and_partitions_take_negative_zero_for_zero() {
    let (_dir, s) = zeros();
    assert_eq!(
        query(&s, "SELECT count(DISTINCT d), sum(DISTINCT d) FROM z"),
        [["2", "2.5"]]
    );
    assert_eq!(
        query(
            &s,
            "SELECT k, count(*) OVER (PARTITION BY d) FROM z ORDER BY k"
        ),
        [["1", "3"], ["2", "3"], ["3", "3"], ["4", "1"], ["5", "1"]]
    );
    // An IN list of expressions compares item by item.
    assert_eq!(
        query(
            &s,
            "SELECT k FROM z WHERE -(d) IN (CAST(7 AS DOUBLE), d) ORDER BY k"
        ),
        [["1"], ["2"], ["3"]]
    );
    assert_eq!(
        query(
            &s,
            "SELECT k FROM z WHERE -(d) NOT IN (CAST(7 AS DOUBLE), d) ORDER BY k"
        ),
        [["4"]]
    );
    // The names are those of the query as written.
    let r = s.execute("SELECT count(DISTINCT d) FROM z").unwrap();
    assert_eq!(r.schema.field(0).name(), "count(DISTINCT z.d)");
}

/// DataFusion's decorrelation drops a subquery conjunct `e = e` as always
/// true, and its simplifier makes `o.a IN (o.a)` into one: the NOT EXISTS
/// lost the outer rows whose `a` is NULL (for it `NULL IN (NULL)` is NULL,
/// so no inner row matches).
#[test]
fn not_exists_keeps_the_row_an_outer_in_list_makes_unknown() {
    let (_dir, s) = session();
    for (p, not_exists, exists) in [
        ("o.a IN (o.a)", vec![["1"], ["3"]], vec![["2"]]),
        ("o.a NOT IN (o.a)", vec![["1"], ["2"], ["3"]], vec![]),
        ("o.a = o.a", vec![["1"], ["3"]], vec![["2"]]),
    ] {
        let sub = format!("SELECT 1 FROM t i WHERE i.k = o.k AND ({p})");
        assert_eq!(
            query(
                &s,
                &format!("SELECT k FROM t o WHERE NOT EXISTS ({sub}) ORDER BY k")
            ),
            not_exists,
            "{p}"
        );
        let rows: Vec<[&str; 1]> = exists;
        assert_eq!(
            query(
                &s,
                &format!("SELECT k FROM t o WHERE EXISTS ({sub}) ORDER BY k")
            ),
            rows,
            "{p}"
        );
    }
}

/// A `CASE` none of whose arms can be taken is NULL, and so is an integer
/// operation on it, without computing the other operand: `CASE WHEN NULL <
/// d THEN k END + k * k` overflowed in `k * k` where PostgreSQL and DuckDB
/// fold it to NULL while planning.
#[test]
fn an_operation_on_a_case_no_arm_of_which_can_be_taken_is_null() {
    let (_dir, s) = session();
    s.execute("INSERT INTO t VALUES (2147483647, 2147483647, 0.5)")
        .unwrap();
    assert_eq!(
        query(
            &s,
            "SELECT CASE WHEN CAST(NULL AS DOUBLE) < b THEN a END + a * a FROM t WHERE k > 5"
        ),
        [["NULL"]]
    );
    // An arm that can be taken still computes, and overflows.
    let e = s
        .execute("SELECT CASE WHEN b < 1.0 THEN a END + a * a FROM t WHERE k > 5")
        .err()
        .unwrap();
    assert!(e.to_string().contains("INT out of range"), "{e}");
}

/// `ORDER BY d, k DESC` put every -0.0 before every 0.0 (arrow sorts by
/// IEEE totalOrder) instead of ordering the zeros, one value, by `k`; a
/// window's ORDER BY made them different ranks.
#[test]
fn order_by_takes_negative_zero_for_zero() {
    let (_dir, s) = zeros();
    assert_eq!(
        query(&s, "SELECT k FROM z ORDER BY d, k DESC"),
        [["3"], ["2"], ["1"], ["4"], ["5"]]
    );
    assert_eq!(
        query(&s, "SELECT k FROM z ORDER BY d DESC NULLS LAST, k LIMIT 4"),
        [["4"], ["1"], ["2"], ["3"]]
    );
    assert_eq!(
        query(&s, "SELECT k, rank() OVER (ORDER BY d) FROM z ORDER BY k"),
        [["1", "1"], ["2", "1"], ["3", "1"], ["4", "4"], ["5", "5"]]
    );
}

/// DataFusion unwrapped `CAST(c AS DECIMAL(15,1)) < 0` into `c < 0.000`,
/// which is not the same test when the CAST rounds: -0.040 rounds to 0.0
/// (not below 0) but is below 0.000, so the row came into the answer. A
/// CAST that overflows is computed too, and refuses, as in PostgreSQL.
#[test]
fn a_cast_that_rounds_or_overflows_is_computed_in_a_comparison() {
    let (dir, db) = empty_db();
    let s = SqlSession::new(Arc::new(db)).unwrap();
    s.execute("CREATE TABLE d (k INT NOT NULL, c DECIMAL(10,3))")
        .unwrap();
    s.execute("INSERT INTO d VALUES (1, -0.040), (2, -0.050), (3, 0.040), (4, NULL)")
        .unwrap();
    let below =
        "SELECT k FROM d WHERE CAST(c AS DECIMAL(15,1)) < CAST(0 AS DECIMAL(9,4)) ORDER BY k";
    assert_eq!(query(&s, below), [["2"]]);
    assert_eq!(
        query(
            &s,
            "SELECT k, CAST(c AS DECIMAL(15,1)) < 0 FROM d ORDER BY k"
        ),
        [["1", "false"], ["2", "true"], ["3", "false"], ["4", "NULL"]]
    );
    // Through the direct DELETE path as well.
    s.execute("DELETE FROM d WHERE CAST(c AS DECIMAL(15,1)) < 0")
        .unwrap();
    assert_eq!(
        query(&s, "SELECT k FROM d ORDER BY k"),
        [["1"], ["3"], ["4"]]
    );
    // 1000 does not fit DECIMAL(5,3): the comparison cannot be answered.
    s.execute("INSERT INTO d VALUES (1000, 0)").unwrap();
    let e = s
        .execute("SELECT k FROM d WHERE CAST(k AS DECIMAL(5,3)) <> 264")
        .err()
        .unwrap();
    assert!(e.to_string().contains("1000"), "{e}");
    drop(dir);
}

/// A plain UPDATE whose SET holds a constant that cannot be computed (in a
/// CASE arm no row takes) fell back to the unsimplified expression, and its
/// `coalesce`, which runs only simplified, failed with an internal error.
#[test]
fn an_update_with_a_constant_that_fails_still_takes_coalesce() {
    let (_dir, s) = session();
    s.execute(
        "UPDATE t SET a = CASE k WHEN -1 THEN CAST(9223372036854775807 AS DECIMAL(4,3)) \
         ELSE COALESCE(a, k) END",
    )
    .unwrap();
    assert_eq!(
        query(&s, "SELECT k, a FROM t ORDER BY k"),
        [["1", "1"], ["2", "5"], ["3", "3"]]
    );
}
