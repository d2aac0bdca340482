//! Integer overflow is an error, never a wrapped value (issue 53, item 1):
//! `+ - *` and negation of INT and BIGINT raise "out of range" wherever they
//! are evaluated — a SELECT, a constant folded while planning, INSERT …
//! VALUES, INSERT … SELECT, UPDATE by DataFusion's plan or strata's direct
//! one — and the statement changes nothing; `sum` of integers is exact.
//! PostgreSQL, DuckDB and SQLite answer the same way. Before the fix each of
//! these stored or returned the wrapped value.

use crate::common;

use std::sync::Arc;

use strata_sql::{SqlError, SqlSession};
use strata_storage::db::IndexSpec;
use strata_storage::row::Value;

const MAX: i64 = i64::MAX;

fn session() -> (tempfile::TempDir, SqlSession) {
    let (dir, db) = common::empty_db();
    common::load(
        &db,
        "t",
        "k INT, a INT, b BIGINT NULL",
        vec![IndexSpec::new("t_k", &["k"])],
        vec![
            vec![Value::Int32(1), Value::Int32(i32::MAX), Value::Int64(MAX)],
            vec![Value::Int32(2), Value::Int32(-7), Value::Int64(i64::MIN)],
            vec![Value::Int32(3), Value::Int32(0), Value::Null],
        ],
    );
    (dir, SqlSession::new(Arc::new(db)).unwrap())
}

fn out_of_range(s: &SqlSession, sql: &str, ty: &str) {
    match s.execute(sql) {
        Err(e @ SqlError::Data(_)) => {
            assert!(
                e.to_string().contains(&format!("{ty} out of range: ")),
                "{sql}: {e}"
            );
            assert!(!e.to_string().contains("External error"), "{sql}: {e}");
            assert_eq!(e.exit_code(), strata_storage::exit::BAD_INPUT);
        }
        Err(e) => panic!("{sql}: expected a data error, got {e:?}"),
        Ok(r) => panic!("{sql}: expected out of range, got {:?}", common::text(&r)),
    }
}

fn all_rows(s: &SqlSession) -> Vec<Vec<String>> {
    common::query(s, "SELECT k, a, b FROM t ORDER BY k")
}

#[test]
fn bigint_arithmetic_that_overflows_is_an_error_in_every_statement() {
    let (_dir, s) = session();
    let before = all_rows(&s);
    for sql in [
        "SELECT 9223372036854775807 + 1",
        "SELECT b + 1 FROM t",
        "SELECT b - 1 FROM t WHERE k = 2",
        "SELECT b * 2 FROM t WHERE k = 1",
        "SELECT -b FROM t WHERE k = 2",
        "SELECT k FROM t WHERE b + 1 > 0",
        "SELECT k FROM t ORDER BY b * 3",
        "SELECT b * 2, count(*) FROM t GROUP BY b * 2",
        "SELECT k FROM t WHERE k IN (SELECT k FROM t WHERE b * 2 > 0)",
        "INSERT INTO t VALUES (4, 0, 9223372036854775807 + 1)",
        "INSERT INTO t SELECT k + 10, a, b * 9223372036854775807 FROM t",
        "UPDATE t SET b = b * 9223372036854775807",
        "UPDATE t SET b = b + 1 WHERE k = 1",
    ] {
        out_of_range(&s, sql, "BIGINT");
        assert_eq!(all_rows(&s), before, "{sql} changed the table");
    }
    // The same UPDATEs through DataFusion's plan instead of strata's direct one.
    s.set("strata.direct_dml", "false").unwrap();
    for sql in [
        "UPDATE t SET b = b * 9223372036854775807",
        "UPDATE t SET b = -b WHERE k = 2",
    ] {
        out_of_range(&s, sql, "BIGINT");
        assert_eq!(all_rows(&s), before, "{sql} changed the table");
    }
    // Inside a transaction the failed statement leaves the earlier ones.
    s.execute("BEGIN").unwrap();
    s.execute("UPDATE t SET b = 5 WHERE k = 3").unwrap();
    out_of_range(&s, "UPDATE t SET b = b + b WHERE k = 1", "BIGINT");
    s.execute("COMMIT").unwrap();
    assert_eq!(common::query(&s, "SELECT b FROM t WHERE k = 3"), [["5"]]);
}

#[test]
fn int_arithmetic_that_overflows_is_an_error() {
    let (_dir, s) = session();
    out_of_range(&s, "SELECT a + a FROM t WHERE k = 1", "INT");
    out_of_range(&s, "SELECT a * a FROM t WHERE k = 1", "INT");
    // An integer literal is a BIGINT (as in DataFusion), so `a * 2` is
    // computed as one and is exact; PostgreSQL and DuckDB type the literal
    // INTEGER and refuse (docs/sql-differences.md).
    assert_eq!(
        common::query(&s, "SELECT a * 2 FROM t WHERE k = 1"),
        [["4294967294"]]
    );
    // Stored into an INT column, that value is out of the column's range.
    let e = s
        .execute("UPDATE t SET a = a + 1 WHERE k = 1")
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.exit_code(), strata_storage::exit::BAD_INPUT, "{e}");
    assert!(e.to_string().contains("column 'a'"), "{e}");
    assert_eq!(
        common::query(&s, "SELECT a FROM t WHERE k = 1"),
        [[i32::MAX.to_string()]]
    );
}

#[test]
fn arithmetic_in_range_is_unchanged_and_keeps_its_names() {
    let (_dir, s) = session();
    assert_eq!(
        common::query(&s, "SELECT b - 1, -a, a - 3 FROM t WHERE k = 1"),
        [[
            (MAX - 1).to_string(),
            (-i32::MAX).to_string(),
            (i32::MAX - 3).to_string()
        ]]
    );
    let r = s.execute("SELECT b + 1, -a FROM t WHERE k = 2").unwrap();
    let names: Vec<_> = r.schema.fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names, ["t.b + Int64(1)", "(- t.a)"]);
    assert_eq!(
        common::text(&r),
        [[(i64::MIN + 1).to_string(), "7".to_string()]]
    );
    // Constants still fold while planning: the plan shows the literal.
    let plan = common::query(&s, "EXPLAIN SELECT k FROM t WHERE k = 1 + 1");
    let plan: String = plan.iter().flatten().cloned().collect();
    assert!(plan.contains("Int32(2)") || plan.contains("= 2"), "{plan}");
}

#[test]
fn sum_of_integers_is_exact_where_a_bigint_would_wrap() {
    let (_dir, s) = session();
    s.execute("UPDATE t SET b = 9223372036854775807 WHERE k = 2")
        .unwrap();
    // 2 * (2^63 - 1): past BIGINT, exact as a DECIMAL(38,0), as PostgreSQL's
    // NUMERIC and DuckDB's HUGEINT give it.
    assert_eq!(
        common::query(&s, "SELECT sum(b) FROM t"),
        [["18446744073709551614"]]
    );
    assert_eq!(
        common::query(
            &s,
            "SELECT k % 2 AS g, sum(b) FROM t GROUP BY k % 2 ORDER BY g"
        ),
        [["0", "9223372036854775807"], ["1", "9223372036854775807"]]
    );
    assert_eq!(
        common::query(
            &s,
            "SELECT k, sum(b) OVER (ORDER BY k ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t ORDER BY k"
        ),
        [
            ["1", "9223372036854775807"],
            ["2", "18446744073709551614"],
            ["3", "9223372036854775807"]
        ]
    );
    assert_eq!(
        common::query(&s, "SELECT sum(DISTINCT b), sum(a) FROM t"),
        [[
            "9223372036854775807",
            (i32::MAX as i64 - 7).to_string().as_str()
        ]]
    );
    // Storing a sum that does not fit BIGINT is refused, and nothing changes.
    let Err(e) = s.execute("INSERT INTO t SELECT 9, 0, sum(b) FROM t") else {
        panic!("a sum past BIGINT was stored");
    };
    assert_eq!(e.exit_code(), strata_storage::exit::BAD_INPUT, "{e}");
    assert_eq!(common::query(&s, "SELECT count(*) FROM t"), [["3"]]);
}

/// strata's direct UPDATE plans an expression of columns, literals, casts
/// and operators as it stands, and simplifies the rest first: both give
/// what DataFusion's own plan gives.
#[test]
fn a_direct_update_simplifies_only_what_needs_it_and_answers_as_datafusion_does() {
    let statements = [
        // As it stands (checked arithmetic of a column and a literal).
        "UPDATE t SET a = a + -5 WHERE k = 2",
        // A NULL operand: NULL, without computing `b * b` (which overflows).
        "UPDATE t SET b = NULL * (b * b) WHERE k = 1",
        // `coalesce` runs only simplified.
        "UPDATE t SET b = coalesce(b, 7) WHERE k = 3",
    ];
    let mut answers = Vec::new();
    for direct in ["true", "false"] {
        let (_dir, s) = session();
        s.set("strata.direct_dml", direct).unwrap();
        for sql in statements {
            s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        // A constant that overflows fails when it is evaluated, either way.
        let before = all_rows(&s);
        out_of_range(
            &s,
            "UPDATE t SET b = 9223372036854775807 + 1 WHERE k = 2",
            "BIGINT",
        );
        assert_eq!(all_rows(&s), before);
        answers.push(before);
    }
    let max = i32::MAX.to_string();
    let want = [
        ["1", max.as_str(), "NULL"],
        ["2", "-12", &i64::MIN.to_string()],
        ["3", "0", "7"],
    ];
    assert_eq!(answers[0], want, "direct");
    assert_eq!(answers[1], want, "DataFusion's plan");
}
