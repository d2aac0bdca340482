//! Vertical partitioning (`strata split`, No Bits Left Behind §3.2) through
//! SQL: a split table answers every query and takes every change as its
//! unsplit twin does (the second implementation here), filters on side
//! columns included, and a query that needs no side column does not read the
//! side table.

use crate::common;

use std::sync::Arc;

use common::*;
use strata_sql::SqlSession;
use strata_storage::db::{IndexSpec, NoProgress};
use strata_storage::maintenance::check::check_database;
use strata_storage::row::Value;

const ROWS: i64 = 4_000;
const SCHEMA: &str = "id BIGINT NOT NULL, k INT NOT NULL, note VARCHAR(200) NULL, body VARCHAR(40) NOT NULL, flag BOOL NULL";

fn rows() -> impl Iterator<Item = Vec<Value>> {
    (0..ROWS).map(|i| {
        vec![
            Value::Int64(i),
            Value::Int32((i % 97) as i32),
            if i % 5 == 0 {
                Value::Null
            } else {
                Value::Str(format!("note {i} {}", "z".repeat((i % 120) as usize)))
            },
            Value::Str(format!("body {}", i % 13)),
            if i % 7 == 0 {
                Value::Null
            } else {
                Value::Bool(i % 2 == 0)
            },
        ]
    })
}

/// `sql` over table `t` answers what it answers over `u`.
fn same(s: &SqlSession, sql: &str) {
    let on_t = query(s, sql);
    let on_u = query(s, &sql.replace(" t ", " u ").replace(" t.", " u."));
    assert_eq!(on_t, on_u, "{sql}");
    assert!(!on_t.is_empty(), "{sql} answered nothing");
}

#[test]
fn a_split_table_answers_and_changes_as_its_unsplit_twin() {
    let (_dir, db) = empty_db();
    for name in ["t", "u"] {
        load(
            &db,
            name,
            SCHEMA,
            vec![IndexSpec::new(format!("{name}_k"), &["k"])],
            rows(),
        );
    }
    db.split("t", &["note".into(), "body".into()], &NoProgress)
        .unwrap();
    let db = Arc::new(db);
    let s = SqlSession::new(db.clone()).unwrap();
    let queries = [
        "SELECT * FROM t ORDER BY id",
        "SELECT id, k FROM t WHERE k = 7 ORDER BY id",
        "SELECT note, body FROM t WHERE k = 7 ORDER BY id",
        "SELECT id FROM t WHERE note LIKE '%zzzz%' AND k < 50 ORDER BY id",
        "SELECT id, note FROM t WHERE body = 'body 3' ORDER BY id",
        "SELECT count(*) FROM t WHERE note IS NULL",
        "SELECT body, count(*), max(length(note)) FROM t GROUP BY body ORDER BY body",
        "SELECT flag, count(*) FROM t WHERE body < 'body 5' GROUP BY flag ORDER BY flag",
    ];
    for q in queries {
        same(&s, q);
    }
    // A join of the twins row by row agrees column by column.
    assert_eq!(
        query(
            &s,
            "SELECT count(*) FROM t JOIN u ON t.id = u.id \
             WHERE (t.note IS NOT DISTINCT FROM u.note) AND t.body = u.body AND t.k = u.k"
        ),
        vec![vec![ROWS.to_string()]]
    );
    // Comparisons on side columns are not the access path's: they stay with
    // the scan, evaluated once it has the side row.
    let plan = query(&s, "EXPLAIN SELECT id FROM t WHERE body = 'body 3'").concat();
    let twin = query(&s, "EXPLAIN SELECT id FROM u WHERE body = 'body 3'").concat();
    assert!(
        twin.concat().contains("predicate=[body = body 3]"),
        "{twin:?}"
    );
    assert!(
        plan.concat().contains("residual=[body = Utf8(\"body 3\")]"),
        "{plan:?}"
    );

    // The same changes to both.
    for sql in [
        "INSERT INTO t VALUES (100000, 1, 'new note', 'new body', true), (100001, 2, NULL, 'b', NULL)",
        "UPDATE t SET note = 'rewritten' WHERE body = 'body 4'",
        "UPDATE t SET k = k + 1000 WHERE note LIKE 'note 1%'",
        "UPDATE t SET note = concat(note, repeat('w', 60)), flag = NOT flag WHERE k = 3",
        "DELETE FROM t WHERE note IS NULL AND k > 50",
        "DELETE FROM t WHERE body = 'body 11'",
    ] {
        let a = query(&s, sql);
        let b = query(&s, &sql.replace(" t ", " u "));
        assert_eq!(a, b, "{sql}");
    }
    for q in queries {
        same(&s, q);
    }
    same(&s, "SELECT * FROM t WHERE k >= 1000 ORDER BY id");
    query(&s, "ANALYZE t");
    check_database(&db, &NoProgress).unwrap();

    // Bad values are refused naming the column, and nothing changes.
    let e = s
        .execute(&format!(
            "INSERT INTO t VALUES (1, 1, '{}', 'x', NULL)",
            "n".repeat(201)
        ))
        .err()
        .expect("an error")
        .to_string();
    assert!(e.contains("note"), "{e}");
    same(&s, "SELECT count(*) FROM t");
}

#[test]
fn a_query_without_side_columns_reads_no_side_page() {
    let (dir, db) = empty_db();
    load(
        &db,
        "t",
        SCHEMA,
        vec![IndexSpec::new("t_k", &["k"])],
        rows(),
    );
    db.split("t", &["note".into()], &NoProgress).unwrap();
    let main = db.table("t").unwrap().heap().num_pages();
    let side = db
        .table("t")
        .unwrap()
        .side_table()
        .unwrap()
        .heap()
        .num_pages();
    drop(db);
    // Cold (a fresh pool) each time: the pages read are the pages touched.
    let pages_read = |sql: &str| {
        let db = Arc::new(reopen(&dir.path().join("db")));
        let s = SqlSession::new(db.clone()).unwrap();
        let before = db.device().stats().snapshot().pages_read;
        query(&s, sql);
        db.device().stats().snapshot().pages_read - before
    };
    let own = pages_read("SELECT sum(k), count(body) FROM t");
    let all = pages_read("SELECT sum(k), count(note) FROM t");
    assert!(own <= main + 2, "{own} pages read, {main} in the table");
    assert!(all >= main + side, "{all} pages read, {main} + {side}");
}
