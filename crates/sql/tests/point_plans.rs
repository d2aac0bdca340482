//! Point queries planned from a kept plan (`dml::point_plans`): a statement
//! of a shape planned before gets the kept plan with its own literals, and
//! answers exactly what DataFusion's plan of the same text answers — for
//! literals at and past the ends of the column's type, negative ones,
//! strings with trailing spaces, flipped comparisons, inside a block that
//! wrote, and after DDL replaced the table. The kept plan is used exactly
//! when it should be (the `HITS` counter).

use std::sync::atomic::Ordering;

use strata_sql::dml::point_plans::HITS;
use strata_sql::{QueryResult, SqlError, SqlSession};

use crate::common;

fn hits() -> u64 {
    HITS.load(Ordering::Relaxed)
}

/// `sql` as a server runs it: inline when it may be, else on the session.
fn run(s: &SqlSession, sql: &str) -> Result<QueryResult, SqlError> {
    s.run_inline(sql, &|f| f())
        .unwrap_or_else(|| s.execute(sql))
}

type Answer = Result<(Vec<(String, String)>, Vec<Vec<String>>), String>;

fn answer(r: Result<QueryResult, SqlError>) -> Answer {
    r.map(|r| {
        (
            r.schema
                .fields()
                .iter()
                .map(|f| (f.name().clone(), f.data_type().to_string()))
                .collect(),
            common::text(&r),
        )
    })
    .map_err(|e| e.to_string())
}

#[test]
fn kept_point_plans_answer_every_literal_as_a_fresh_plan_does() {
    let (_dir, db) = common::empty_db();
    let db = std::sync::Arc::new(db);
    let direct = SqlSession::new(db.clone()).unwrap();
    let planned = SqlSession::new(db).unwrap();
    planned.set("strata.direct_dml", "false").unwrap();
    for sql in [
        "CREATE TABLE t (k INT NOT NULL PRIMARY KEY, v BIGINT, s VARCHAR(12), c CHAR(4))",
        "INSERT INTO t SELECT value, value * 1000000000, 'n' || value, 'c' || (value % 7) \
         FROM generate_series(-50, 300)",
        "INSERT INTO t VALUES (2147483647, 1, 'max', 'x'), (-2147483648, 2, 'min', 'y')",
        "CREATE TABLE w (name VARCHAR(10) NOT NULL, n INT)",
        "CREATE UNIQUE INDEX w_name ON w (name)",
        "INSERT INTO w VALUES ('abc', 1), ('', 2), ('a b', 3), ('abc  x', 4)",
    ] {
        planned.execute(sql).unwrap();
    }
    // The other session reads the catalog as it is now (a statement run
    // inline does not: it goes the usual way once).
    direct.execute("SELECT count(*) FROM t").unwrap();
    // Each case: the text, and whether the kept plan answers it.
    let check = |cases: &[(&str, bool)]| {
        for &(sql, hit) in cases {
            let before = hits();
            let got = answer(run(&direct, sql));
            assert_eq!(hits() - before, hit as u64, "{sql}: kept plan used?");
            assert_eq!(got, answer(planned.execute(sql)), "{sql}");
        }
    };
    check(&[
        // The first of a shape makes the plan; the rest use it.
        ("SELECT v FROM t WHERE k = 42", false),
        ("SELECT v FROM t WHERE k = 7", true),
        ("SELECT v FROM t WHERE k = 0", true),
        ("SELECT v FROM t WHERE k = 000299", true),
        ("SELECT v FROM t WHERE k = 9999", true),
        ("SELECT v FROM t WHERE k = 2147483647", true),
        // Past INT: the usual path answers (no row).
        ("SELECT v FROM t WHERE k = 2147483648", false),
        ("SELECT v FROM t WHERE k = 99999999999999999999999", false),
        (
            "SELECT v FROM t WHERE k = 999999999999999999999999999999999999999999",
            false,
        ),
        ("SELECT v FROM t WHERE k = 42.5", false),
        // A negative literal is its own shape.
        ("SELECT v, s FROM t WHERE k = -3", false),
        ("SELECT v, s FROM t WHERE k = -50", true),
        ("SELECT v, s FROM t WHERE k = -2147483648", true),
        ("SELECT v, s FROM t WHERE k = -2147483649", false),
        // Flipped, with a second conjunct on a BIGINT column.
        ("SELECT * FROM t WHERE 10 = k AND v >= 3", false),
        ("SELECT * FROM t WHERE 11 = k AND v >= 11000000000", true),
        ("SELECT * FROM t WHERE 12 = k AND v >= 12000000001", true),
        (
            "SELECT * FROM t WHERE 13 = k AND v >= -9223372036854775808",
            false,
        ),
        (
            "SELECT * FROM t WHERE 13 = k AND v >= -9223372036854775809",
            false,
        ),
        ("SELECT * FROM t WHERE 14 = k AND v >= -5", true),
        (
            "SELECT * FROM t WHERE 15 = k AND v >= -9223372036854775808",
            true,
        ),
        (
            "SELECT * FROM t WHERE 16 = k AND v >= -9223372036854775809",
            false,
        ),
        ("SELECT k FROM t WHERE k = 5 AND k < 3", false),
        ("SELECT k FROM t WHERE k = 5 AND k < 9", true),
        ("SELECT k FROM t WHERE (k = 6) AND (s = 'n6')", false),
        ("SELECT k FROM t WHERE (k = 6) AND (s = 'n7')", true),
        ("SELECT k FROM t WHERE (k = 7) AND (s = 'n7')", true),
        // Strings: trailing spaces go the usual way (CHAR ignores them).
        ("SELECT n FROM w WHERE name = 'abc'", false),
        ("SELECT n FROM w WHERE name = ''", true),
        ("SELECT n FROM w WHERE name = 'a b'", true),
        ("SELECT n FROM w WHERE name = 'zzz'", true),
        ("SELECT n FROM w WHERE name = 'abc '", false),
        ("SELECT n FROM w WHERE name = 'abc  x'", true),
        ("SELECT k FROM t WHERE k = 3 AND c = 'c3'", false),
        ("SELECT k FROM t WHERE k = 10 AND c = 'c3'", true),
        ("SELECT k FROM t WHERE k = 10 AND c = 'c3 '", false),
        // A number for a string column, a string for a number: never kept.
        ("SELECT n FROM w WHERE name = 5", false),
        ("SELECT n FROM w WHERE name = 6", false),
        ("SELECT v FROM t WHERE k = '8'", false),
        ("SELECT v FROM t WHERE k = '9'", false),
    ]);
    // Inside a block that wrote, the kept plan reads the block's writes.
    run(&direct, "BEGIN").unwrap();
    run(&direct, "UPDATE t SET v = -1 WHERE k = 42").unwrap();
    let before = hits();
    assert_eq!(
        common::text(&run(&direct, "SELECT v FROM t WHERE k = 42").unwrap()),
        vec![vec!["-1".to_string()]]
    );
    assert_eq!(hits() - before, 1);
    run(&direct, "ROLLBACK").unwrap();
    check(&[("SELECT v FROM t WHERE k = 42", true)]);
    // A plan holds under the settings it was made with: with direct
    // planning off or a forced full scan, none is used; back on, the kept
    // one is.
    direct.set("strata.direct_dml", "false").unwrap();
    check(&[
        ("SELECT v FROM t WHERE k = 43", false),
        ("SELECT v FROM t WHERE k = 44", false),
    ]);
    direct.set("strata.direct_dml", "true").unwrap();
    direct.set("strata.access_path", "full").unwrap();
    check(&[("SELECT v FROM t WHERE k = 45", false)]);
    direct.set("strata.access_path", "smooth").unwrap();
    check(&[
        ("SELECT v FROM t WHERE k = 43", true),
        ("SELECT v FROM t WHERE k = 44", true),
    ]);
    // DDL by another session empties the cache; a table dropped and made
    // again with other types is planned afresh.
    planned.execute("DROP TABLE t").unwrap();
    planned
        .execute("CREATE TABLE t (k BIGINT NOT NULL PRIMARY KEY, v VARCHAR(5))")
        .unwrap();
    planned
        .execute("INSERT INTO t VALUES (44, 'new'), (5000000000, 'big')")
        .unwrap();
    check(&[
        // The session reads the new catalog, then plans afresh.
        ("SELECT v FROM t WHERE k = 44", false),
        ("SELECT v FROM t WHERE k = 5000000000", false),
        ("SELECT v FROM t WHERE k = 43", true),
        ("SELECT v FROM t WHERE k = 44", true),
    ]);
}
