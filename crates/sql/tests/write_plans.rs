//! Writes planned from a kept plan (`dml::write_plans`): an UPDATE, DELETE
//! or one-row INSERT of a shape planned before gets the kept plan with its
//! own literals, and changes exactly what DataFusion's plan of the same
//! text changes in a second database, with the same answer or error — for
//! literals at and past the ends of the columns' types, negative ones,
//! strings too long or with trailing spaces, two indexes to choose from,
//! `now()`, inside a block that is rolled back, after `SET`s and after
//! DDL replaced the table. The kept plan is used exactly when it should be
//! (the `HITS` counter).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use strata_sql::dml::write_plans::HITS;
use strata_sql::{QueryResult, SqlError, SqlSession};
use strata_storage::Database;

use crate::common;

fn hits() -> u64 {
    HITS.load(Ordering::Relaxed)
}

/// `sql` as a server runs it: inline when it may be, else on the session.
fn run(s: &SqlSession, sql: &str) -> Result<QueryResult, SqlError> {
    s.run_inline(sql, &|f| f())
        .unwrap_or_else(|| s.execute(sql))
}

fn answer(r: Result<QueryResult, SqlError>) -> Result<Vec<Vec<String>>, String> {
    r.map(|r| common::text(&r)).map_err(|e| e.to_string())
}

/// Two databases with the same tables: one written inline with kept plans,
/// one by DataFusion's plans (`strata.direct_dml = false`).
struct Pair {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    direct: SqlSession,
    planned: SqlSession,
}

impl Pair {
    fn new(setup: &[&str]) -> Pair {
        let made = || {
            let (dir, db) = common::empty_db();
            (dir, Arc::new(db))
        };
        let pair = Pair::of(made(), made());
        for sql in setup {
            pair.direct.execute(sql).unwrap();
            pair.planned.execute(sql).unwrap();
        }
        pair
    }

    /// The pair over two databases made alike.
    fn of(
        (d1, db1): (tempfile::TempDir, Arc<Database>),
        (d2, db2): (tempfile::TempDir, Arc<Database>),
    ) -> Pair {
        let direct = SqlSession::new(db1).unwrap();
        let planned = SqlSession::new(db2).unwrap();
        planned.set("strata.direct_dml", "false").unwrap();
        Pair {
            _dirs: (d1, d2),
            direct,
            planned,
        }
    }

    /// Runs each case in both databases: the same answer (rows changed, or
    /// the error), the same rows after it in every table, and the kept plan
    /// used when the case says so.
    fn check(&self, tables: &[&str], cases: &[(&str, bool)]) {
        for &(sql, hit) in cases {
            let before = hits();
            let got = answer(run(&self.direct, sql));
            assert_eq!(hits() - before, hit as u64, "{sql}: kept plan used?");
            assert_eq!(got, answer(self.planned.execute(sql)), "{sql}");
            for t in tables {
                let all = format!("SELECT * FROM {t} ORDER BY 1, 2");
                assert_eq!(
                    answer(self.direct.execute(&all)),
                    answer(self.planned.execute(&all)),
                    "{t} after {sql}"
                );
            }
        }
    }
}

#[test]
fn kept_write_plans_change_what_a_fresh_plan_changes() {
    let pair = Pair::new(&[
        "CREATE TABLE t (k INT NOT NULL PRIMARY KEY, v BIGINT, s VARCHAR(12), c CHAR(4))",
        "INSERT INTO t SELECT value, value * 1000000000, 'n' || value, 'c' || (value % 7) \
         FROM generate_series(-50, 300)",
        "INSERT INTO t VALUES (2147483647, 9000000000000000000, 'max', 'x')",
        "CREATE INDEX t_v ON t (v)",
    ]);
    pair.check(
        &["t"],
        &[
            // The first of a shape makes the plan; the rest use it.
            ("UPDATE t SET v = v + -1234 WHERE k = 42", false),
            ("UPDATE t SET v = v + -7 WHERE k = 9", true),
            (
                "UPDATE t SET v = v + -9223372036854775808 WHERE k = 10",
                true,
            ),
            // Past INT for k: the comparison is made again from the value
            // (no row).
            ("UPDATE t SET v = v + -7 WHERE k = 2147483648", true),
            ("UPDATE t SET v = v + -8 WHERE k = 2147483647", true),
            // A fraction is typed otherwise: the usual path.
            ("UPDATE t SET v = v + -7 WHERE k = 9.5", false),
            // Overflow of BIGINT: the same error from the kept plan.
            ("UPDATE t SET v = v * 3 WHERE k = 2147483647", false),
            ("UPDATE t SET v = v * 2 WHERE k = 2147483647", true),
            ("UPDATE t SET v = v * 4 WHERE k = 100", true),
            // Equal literals bind to no site: never kept from them.
            ("UPDATE t SET v = 5 WHERE k = 5", false),
            ("UPDATE t SET v = 6 WHERE k = 6", false),
            ("UPDATE t SET v = 8 WHERE k = 7", false),
            ("UPDATE t SET v = 9 WHERE k = 9", true),
            // Nor from a 0, whose sign the text does not show.
            ("UPDATE t SET v = v - 0 WHERE k = 11", false),
            ("UPDATE t SET v = v - 3 WHERE k = 12", false),
            ("UPDATE t SET v = v - 0 WHERE k = 13", true),
            // Strings: too long for VARCHAR(12) fails alike; trailing
            // spaces go the usual way.
            ("UPDATE t SET s = 'x1' WHERE k = 3", false),
            ("UPDATE t SET s = 'x2' WHERE k = 4", true),
            ("UPDATE t SET s = 'abcdefghijklmnop' WHERE k = 4", true),
            ("UPDATE t SET s = 'x3  ' WHERE k = 4", false),
            ("UPDATE t SET c = 'ab' WHERE k = 14", false),
            ("UPDATE t SET c = 'abcde' WHERE k = 15", true),
            // Two indexes the WHERE bounds: the one to try is chosen
            // again for each statement's values.
            (
                "UPDATE t SET s = 'r1' WHERE k > 10 AND v < 20000000000",
                false,
            ),
            (
                "UPDATE t SET s = 'r2' WHERE k > 280 AND v < 300000000000",
                true,
            ),
            (
                "UPDATE t SET s = 'r3' WHERE k > 45 AND v < 50000000000",
                true,
            ),
            // DELETE, by key and by range.
            ("DELETE FROM t WHERE k = 100", false),
            ("DELETE FROM t WHERE k = 101", true),
            ("DELETE FROM t WHERE k = 99999", true),
            ("DELETE FROM t WHERE k >= 290 AND k < 295", false),
            ("DELETE FROM t WHERE k >= 50 AND k < 60", true),
            // One-row INSERTs, with a unique key and NOT NULL.
            ("INSERT INTO t VALUES (1000, 5, 'a', 'b')", false),
            ("INSERT INTO t VALUES (1001, -6, 'c', 'd')", false),
            ("INSERT INTO t VALUES (1002, 7, 'e', 'f')", true),
            ("INSERT INTO t VALUES (1003, 70, 'e', 'f')", true),
            // A duplicate key fails alike.
            ("INSERT INTO t VALUES (1002, 8, 'g', 'h')", true),
            // Past INT: the kept row does not compute, the usual path
            // gives DataFusion's error.
            ("INSERT INTO t VALUES (3000000000, 8, 'g', 'h')", false),
            (
                "INSERT INTO t VALUES (1004, 8, 'this is too long', 'h')",
                true,
            ),
            ("INSERT INTO t (k, s) VALUES (1005, 'only')", false),
            ("INSERT INTO t (k, s) VALUES (1006, 'two')", true),
        ],
    );
    // Inside a block that is rolled back, kept plans write the block.
    run(&pair.direct, "BEGIN").unwrap();
    pair.planned.execute("BEGIN").unwrap();
    pair.check(
        &["t"],
        &[
            ("UPDATE t SET v = v + -3 WHERE k = 20", true),
            ("INSERT INTO t VALUES (2000, 1, 'in', 'bl')", true),
            ("DELETE FROM t WHERE k = 21", true),
        ],
    );
    run(&pair.direct, "ROLLBACK").unwrap();
    pair.planned.execute("ROLLBACK").unwrap();
    pair.check(&["t"], &[("UPDATE t SET v = v + -3 WHERE k = 22", true)]);
    // A SET of what the plan does not depend on keeps it; of what it does
    // (the time zone), the next is planned afresh, then kept again.
    pair.direct.set("strata.access_path", "full").unwrap();
    pair.check(&["t"], &[("UPDATE t SET v = v + -4 WHERE k = 23", true)]);
    pair.direct
        .set("datafusion.execution.time_zone", "+02:00")
        .unwrap();
    pair.check(
        &["t"],
        &[
            ("UPDATE t SET v = v + -5 WHERE k = 24", false),
            ("UPDATE t SET v = v + -6 WHERE k = 25", true),
        ],
    );
    // DDL replaced the table with other types: planned afresh.
    for s in [&pair.direct, &pair.planned] {
        s.execute("DROP TABLE t").unwrap();
        s.execute("CREATE TABLE t (k BIGINT NOT NULL PRIMARY KEY, v INT, s VARCHAR(5), c CHAR(2))")
            .unwrap();
        s.execute("INSERT INTO t VALUES (5000000000, 1, 'big', 'b'), (24, 2, 'x', 'y')")
            .unwrap();
    }
    pair.check(
        &["t"],
        &[
            ("UPDATE t SET v = v + -5 WHERE k = 24", false),
            ("UPDATE t SET v = v + -6 WHERE k = 5000000000", true),
            // INT now: a value past it fails alike.
            ("UPDATE t SET v = v + -2147483647 WHERE k = 24", true),
        ],
    );
}

#[test]
fn a_kept_insert_takes_now_from_its_own_statement() {
    let pair = Pair::new(&["CREATE TABLE h (id INT NOT NULL, at TIMESTAMP)"]);
    let s = &pair.direct;
    let mut times = Vec::new();
    for id in 1..=4 {
        let before = hits();
        run(
            s,
            &format!("INSERT INTO h VALUES ({id}, CURRENT_TIMESTAMP)"),
        )
        .unwrap();
        // The first makes the plan.
        assert_eq!(hits() - before, (id > 1) as u64);
        let r = s
            .execute(&format!(
                "SELECT CAST(at AS VARCHAR), now() - at < INTERVAL '1 second' FROM h WHERE id = {id}"
            ))
            .unwrap();
        let row = common::text(&r).remove(0);
        assert_eq!(row[1], "true", "row {id}: {row:?}");
        times.push(row[0].clone());
    }
    // Each row has its own statement's time, not the first one's.
    for w in times.windows(2) {
        assert!(w[0] < w[1], "{times:?}");
    }
}

/// A columnar table's point changes (the column row deleted, its new
/// version written to the delta) take kept plans as a row table's do, and
/// change what DataFusion's plans change, before and after the delta is
/// merged into new row groups.
#[test]
fn kept_write_plans_serve_a_columnar_table() {
    use strata_storage::db::NoProgress;
    let columnar = || {
        let (dir, db) = common::empty_db();
        common::load(
            &db,
            "c",
            "k BIGINT, v BIGINT, pad VARCHAR(12)",
            vec![],
            (1..=400).map(|k| {
                vec![
                    strata_storage::row::Value::Int64(k),
                    strata_storage::row::Value::Int64(k * 10),
                    strata_storage::row::Value::Str(format!("p{k}")),
                ]
            }),
        );
        strata_columns::rewrite(&db, "c", strata_columns::Format::Columns, &NoProgress).unwrap();
        (dir, Arc::new(db))
    };
    let pair = Pair::of(columnar(), columnar());
    let db = pair.direct.database();
    for s in [&pair.direct, &pair.planned] {
        s.execute("CREATE INDEX c_k ON c (k)").unwrap();
    }
    let cases = [
        ("UPDATE c SET v = v + 1 WHERE k = 17", false),
        ("UPDATE c SET v = v + 1 WHERE k = 230", true),
        ("UPDATE c SET v = v + 1 WHERE k = 230", true),
        // A trailing semicolon is a shape of its own.
        ("UPDATE c SET v = v + 1 WHERE k = 231;", false),
        ("UPDATE c SET v = v + 1 WHERE k = 232;", true),
        ("UPDATE c SET pad = 'q7' WHERE k = 399", false),
        ("UPDATE c SET pad = 'q8' WHERE k = 398", true),
        ("DELETE FROM c WHERE k = 5", false),
        ("DELETE FROM c WHERE k = 6", true),
        ("DELETE FROM c WHERE k = 6", true),
        ("INSERT INTO c VALUES (1000, 1, 'a')", false),
        ("INSERT INTO c VALUES (1001, 2, 'b')", true),
        ("INSERT INTO c VALUES (1002, 3, 'c')", true),
        // Too long for VARCHAR(12): the same error, nothing written.
        ("INSERT INTO c VALUES (1003, 4, 'far too long a pad')", true),
        ("UPDATE c SET v = v + 1 WHERE k = 1001", true),
    ];
    pair.check(&["c"], &cases);
    // The delta merged into new row groups: every kept plan is forgotten
    // with the catalog version, and the shapes are kept again.
    strata_columns::rewrite(&db, "c", strata_columns::Format::Columns, &NoProgress).unwrap();
    assert_eq!(db.table("c").unwrap().rows(), 0, "the delta merged");
    pair.check(
        &["c"],
        &[
            ("UPDATE c SET v = v + 1 WHERE k = 31", false),
            ("UPDATE c SET v = v + 1 WHERE k = 32", true),
        ],
    );
}
