//! SQL writes against a model: random mixes of INSERT, UPDATE and DELETE (some
//! inside BEGIN … COMMIT) leave the table holding what a plain Rust model of
//! the same statements holds, every statement answers the rows it changed,
//! and every index agrees with the heap afterwards (`strata check`). A
//! statement that fails on a bad value is a data error that changes nothing;
//! a single-row UPDATE through an index reads a handful of pages; forms whose
//! rows DataFusion would not describe exactly are refused as usage errors.
//! What single statements answer, and their errors' messages, are
//! `tests/slt/dml.slt`.

use crate::common;
use crate::common::error;

use std::sync::Arc;

use common::query;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_sql::{SqlError, SqlSession};
use strata_storage::Database;
use strata_storage::db::{IndexSpec, NoProgress};
use strata_storage::maintenance::check::check_database;
use strata_storage::row::Value;

/// One row of the test table `t (k BIGINT NOT NULL, v INT, s VARCHAR(12))`.
type Row = (i64, Option<i32>, Option<String>);

fn values(r: &Row) -> Vec<Value> {
    vec![
        Value::Int64(r.0),
        r.1.map_or(Value::Null, Value::Int32),
        r.2.clone().map_or(Value::Null, Value::Str),
    ]
}

fn setup(rows: &[Row]) -> (tempfile::TempDir, Arc<Database>) {
    let (dir, db) = common::empty_db();
    common::load(
        &db,
        "t",
        "k BIGINT, v INT NULL, s VARCHAR(12) NULL",
        vec![IndexSpec::new("t_k", &["k"]), IndexSpec::new("t_v", &["v"])],
        rows.iter().map(values),
    );
    (dir, Arc::new(db))
}

fn sql_text(v: &Option<String>) -> String {
    v.as_ref().map_or("NULL".into(), |s| format!("'{s}'"))
}

fn sql_int(v: Option<i32>) -> String {
    v.map_or("NULL".into(), |v| v.to_string())
}

/// The table's rows, sorted.
fn contents(s: &SqlSession) -> Vec<Row> {
    let mut rows: Vec<Row> = query(s, "SELECT k, v, s FROM t")
        .into_iter()
        .map(|r| {
            (
                r[0].parse().unwrap(),
                (r[1] != "NULL").then(|| r[1].parse().unwrap()),
                (r[2] != "NULL").then(|| r[2].clone()),
            )
        })
        .collect();
    rows.sort();
    rows
}

/// The `count` a write answers.
fn count(s: &SqlSession, sql: &str) -> u64 {
    let r = query(s, sql);
    assert_eq!(r.len(), 1, "{sql}");
    r[0][0].parse().unwrap()
}

fn consistent(db: &Database) {
    check_database(db, &NoProgress).unwrap_or_else(|e| panic!("strata check: {e}"));
}

fn random_row(rng: &mut SmallRng) -> Row {
    (
        rng.random_range(0..300),
        (!rng.random_ratio(1, 6)).then(|| rng.random_range(-50..50)),
        (!rng.random_ratio(1, 5)).then(|| format!("s{}", rng.random_range(0..1000))),
    )
}

/// One random statement and what it does to the model: (SQL, rows it changes).
fn statement(rng: &mut SmallRng, model: &mut Vec<Row>) -> (String, u64) {
    let pick = rng.random_range(0..10);
    let k = rng.random_range(0..300i64);
    let v = rng.random_range(-50..50i32);
    match pick {
        0 | 1 => {
            let rows: Vec<Row> = (0..rng.random_range(1..5))
                .map(|_| random_row(rng))
                .collect();
            let list: Vec<String> = rows
                .iter()
                .map(|r| format!("({}, {}, {})", r.0, sql_int(r.1), sql_text(&r.2)))
                .collect();
            model.extend(rows.iter().cloned());
            (
                format!("INSERT INTO t VALUES {}", list.join(", ")),
                rows.len() as u64,
            )
        }
        2 => {
            // Columns named out of order; s left out is NULL.
            model.push((k, Some(v), None));
            (format!("INSERT INTO t (v, k) VALUES ({v}, {k})"), 1)
        }
        3 => {
            let copied: Vec<Row> = model
                .iter()
                .filter(|r| r.0 < k / 10)
                .map(|r| (r.0 + 1000, r.1, r.2.clone()))
                .collect();
            let n = copied.len() as u64;
            model.extend(copied);
            (
                format!(
                    "INSERT INTO t SELECT k + 1000, v, s FROM t WHERE k < {}",
                    k / 10
                ),
                n,
            )
        }
        4 => {
            // Through the index on k.
            let mut n = 0;
            for r in model.iter_mut().filter(|r| r.0 == k) {
                r.1 = r.1.map(|x| x + 1);
                n += 1;
            }
            (format!("UPDATE t SET v = v + 1 WHERE k = {k}"), n)
        }
        5 => {
            // Moves index entries of both indexes; rows may grow.
            let (lo, hi) = (v, v + 10);
            let mut n = 0;
            for r in model
                .iter_mut()
                .filter(|r| r.1.is_some_and(|x| x >= lo && x <= hi))
            {
                r.0 += 7;
                r.1 = Some(-r.1.unwrap());
                r.2 = Some(format!("u{}", r.0));
                n += 1;
            }
            (
                format!(
                    "UPDATE t SET k = k + 7, v = -v, s = concat('u', CAST(k + 7 AS VARCHAR)) \
                     WHERE v BETWEEN {lo} AND {hi}"
                ),
                n,
            )
        }
        6 => {
            // No index helps: a heap scan.
            let m = rng.random_range(2..9i64);
            let mut n = 0;
            for r in model.iter_mut().filter(|r| r.0 % m == 1) {
                r.2 = None;
                n += 1;
            }
            (format!("UPDATE t SET s = NULL WHERE k % {m} = 1"), n)
        }
        7 => {
            let before = model.len();
            model.retain(|r| r.0 != k);
            (
                format!("DELETE FROM t WHERE k = {k}"),
                (before - model.len()) as u64,
            )
        }
        8 => {
            let before = model.len();
            model.retain(|r| !(r.1.is_none() && r.0 < k));
            (
                format!("DELETE FROM t WHERE v IS NULL AND k < {k}"),
                (before - model.len()) as u64,
            )
        }
        _ => {
            let before = model.len();
            model.retain(|r| !(r.0 >= k && r.0 < k + 5 && r.2.as_deref() != Some("s1")));
            (
                format!(
                    "DELETE FROM t WHERE k >= {k} AND k < {} AND (s IS NULL OR s <> 's1')",
                    k + 5
                ),
                (before - model.len()) as u64,
            )
        }
    }
}

#[test]
fn random_writes_match_a_model_and_keep_indexes_consistent() {
    random_writes(true, false);
}

/// The same with UPDATE and DELETE planned by DataFusion as queries.
#[test]
fn random_writes_planned_as_queries_match_the_model_too() {
    random_writes(false, false);
}

/// The same on a columnar table: its column rows deleted through the delete
/// set (an UPDATE's new rows go to the delta), the delta's rows in place,
/// and every 25 rounds the delta merged into new column files (`strata
/// compact --format columns`), which renumbers the column rows.
#[test]
fn random_writes_on_a_columnar_table_match_the_model() {
    random_writes(true, true);
}

fn random_writes(direct: bool, columnar: bool) {
    let mut rng = SmallRng::seed_from_u64(11);
    let mut model: Vec<Row> = (0..300).map(|_| random_row(&mut rng)).collect();
    let (_dir, db) = if columnar {
        let (dir, db) = common::empty_db();
        common::load(
            &db,
            "t",
            "k BIGINT, v INT NULL, s VARCHAR(12) NULL",
            vec![],
            model.iter().map(values),
        );
        strata_columns::rewrite(&db, "t", strata_columns::Format::Columns, &NoProgress).unwrap();
        (dir, Arc::new(db))
    } else {
        setup(&model)
    };
    let s = SqlSession::new(db.clone()).unwrap();
    s.set("strata.direct_dml", &direct.to_string()).unwrap();
    let mut marked = 0;
    for round in 0..120 {
        if columnar && round % 25 == 24 {
            marked += db.table("t").unwrap().delete_set().unwrap().len();
            strata_columns::rewrite(&db, "t", strata_columns::Format::Columns, &NoProgress)
                .unwrap();
            assert_eq!(db.table("t").unwrap().rows(), 0, "the delta merged");
        }
        // Some statements run inside one explicit transaction.
        let txn = round % 20 == 10;
        if txn {
            s.execute("BEGIN").unwrap();
        }
        for _ in 0..if txn { 5 } else { 1 } {
            let (sql, changed) = statement(&mut rng, &mut model);
            assert_eq!(count(&s, &sql), changed, "{sql}");
        }
        if txn {
            s.execute("COMMIT").unwrap();
        }
        if round % 30 == 29 {
            let mut want = model.clone();
            want.sort();
            assert_eq!(contents(&s), want, "after round {round}");
            consistent(&db);
        }
    }
    if columnar {
        assert!(
            marked > 0,
            "column rows were deleted through the delete set"
        );
    }
    // The same rows after a reopen: every statement committed.
    let dir = db.dir().to_path_buf();
    drop(s);
    drop(Arc::into_inner(db).expect("the session let the database go"));
    let db = Arc::new(common::reopen(&dir));
    consistent(&db);
    let s = SqlSession::new(db).unwrap();
    model.sort();
    assert_eq!(contents(&s), model);
}

/// Statement forms at the edge of the direct UPDATE/DELETE planner (names in
/// other cases, qualified columns, literals that need coercion, forms it
/// leaves to DataFusion, bad ones): each answers the same with it and
/// without it — the same count, or the same error — and leaves the same rows.
#[test]
fn direct_and_query_planned_writes_agree_on_every_form() {
    let rows: Vec<Row> = (0..40)
        .map(|i| (i, Some(i as i32 % 7), Some(format!("r{i}"))))
        .collect();
    let statements = [
        "UPDATE t SET v = v + 1 WHERE k = 3",
        "UPDATE T SET v = V * 2 WHERE K < 5",
        "UPDATE t SET v = 9 WHERE t.k = 7",
        "UPDATE t SET v = v + 1.5 WHERE k = '8'",
        "UPDATE t SET v = v + 1 WHERE k BETWEEN 10 AND 12 AND s LIKE 'r1%'",
        "UPDATE t SET s = upper(s), v = NULL WHERE v = 2",
        "UPDATE t AS x SET v = 0 WHERE x.k = 13",
        "UPDATE \"t\" SET \"v\" = 5 WHERE \"k\" = 14",
        "UPDATE t SET v = 1",
        "DELETE FROM t WHERE k = 20 OR k = 21",
        "DELETE FROM t WHERE s IS NULL",
        "DELETE FROM T WHERE K > 35",
        "UPDATE t SET nope = 1 WHERE k = 1",
        "UPDATE t SET v = 1 WHERE nope = 1",
        "UPDATE t SET v = 1, v = 2 WHERE k = 1",
        "UPDATE nope SET v = 1",
        "DELETE FROM t WHERE k",
        "DELETE FROM t WHERE sum(v) > 1",
        "UPDATE t SET s = 'much too long for it' WHERE k = 2",
        "UPDATE t SET k = NULL WHERE k = 2",
        "UPDATE t SET v = 3000000000 WHERE k = 2",
        // One-row INSERTs (`strata_sql::dml::direct_insert`), and the forms
        // it leaves to DataFusion.
        "INSERT INTO t VALUES (100, 1, 'a')",
        "INSERT INTO t (k, s) VALUES (101, 'b')",
        "INSERT INTO t (s, k) VALUES ('c', 102)",
        "INSERT INTO t VALUES (103, 2.5, 'x')",
        "INSERT INTO t VALUES (104, -2.5, 'x')",
        "INSERT INTO t VALUES (105, 2.5e0, 'f')",
        "INSERT INTO t VALUES (106, 3.5e0, 'f')",
        "INSERT INTO t VALUES ('107', '7', 'y')",
        "INSERT INTO t VALUES (108, 1 + 2 * 3, upper('q'))",
        "INSERT INTO T (K, V) VALUES (109, 9)",
        "INSERT INTO t VALUES (110, NULL, NULL)",
        "INSERT INTO t VALUES (111, CAST(NULL AS INT), 'z')",
        "INSERT INTO t VALUES (112, -7, 12345)",
        "INSERT INTO t VALUES (113, 3000000000, 'x')",
        "INSERT INTO t VALUES (114, 2147483647 + 1, 'o')",
        "INSERT INTO t VALUES (115, 'abc', 'x')",
        "INSERT INTO t VALUES (NULL, 1, 'x')",
        "INSERT INTO t VALUES (nullif(1, 1), 1, 'x')",
        "INSERT INTO t (v) VALUES (5)",
        "INSERT INTO t VALUES (116, 1, 'much too long for it')",
        "INSERT INTO t VALUES (117, 1)",
        "INSERT INTO t (k, k) VALUES (118, 1)",
        "INSERT INTO t (k, nope) VALUES (119, 1)",
        "INSERT INTO nope VALUES (1)",
        "INSERT INTO t VALUES (120, 1, 'a'), (121, 2.5, 'b')",
        "INSERT INTO t VALUES (122, v, 'a')",
        "DELETE FROM t",
    ];
    let inserts = strata_sql::dml::direct_insert::TAKEN.load(std::sync::atomic::Ordering::Relaxed);
    let (_d1, db1) = setup(&rows);
    let (_d2, db2) = setup(&rows);
    let direct = SqlSession::new(db1.clone()).unwrap();
    let planned = SqlSession::new(db2.clone()).unwrap();
    planned.set("strata.direct_dml", "false").unwrap();
    let answer = |s: &SqlSession, sql: &str| match s.execute(sql) {
        Ok(r) => Ok(common::text(&r)),
        Err(e) => Err((e.exit_code(), e.to_string())),
    };
    for sql in statements {
        assert_eq!(answer(&direct, sql), answer(&planned, sql), "{sql}");
        assert_eq!(contents(&direct), contents(&planned), "after {sql}");
    }
    consistent(&db1);
    // The direct path answered the plain one-row INSERTs (at least the eleven
    // that succeed; tests run in parallel, so more may be counted).
    let taken =
        strata_sql::dml::direct_insert::TAKEN.load(std::sync::atomic::Ordering::Relaxed) - inserts;
    assert!(taken >= 11, "{taken} INSERTs took the direct path");
    // An unquoted SET target folds to lower case like any unquoted name;
    // DataFusion's own UPDATE planner does not fold it.
    assert_eq!(count(&direct, "INSERT INTO t VALUES (1, 1, 'a')"), 1);
    assert_eq!(count(&direct, "UPDATE t SET V = 4 WHERE k = 1"), 1);
    assert_eq!(count(&direct, "SELECT v FROM t WHERE k = 1"), 4);
    let e = error(&planned, "UPDATE t SET V = 4");
    assert!(e.to_string().contains("No field named"), "{e}");
    // A SET reaches the next statement although the session keeps its
    // planning state between statements.
    direct.set("strata.direct_dml", "false").unwrap();
    let e = error(&direct, "UPDATE t SET V = 5 WHERE k = 1");
    assert!(e.to_string().contains("No field named"), "{e}");
    direct.set("strata.direct_dml", "true").unwrap();
    assert_eq!(count(&direct, "UPDATE t SET V = 5 WHERE k = 1"), 1);
}

/// A DELETE whose WHERE strata evaluates on the stored bytes removes exactly
/// the rows a SELECT with the same WHERE counts, NULLs, strings and ranges
/// included.
#[test]
fn a_delete_removes_exactly_what_a_select_with_its_where_counts() {
    let mut rng = SmallRng::seed_from_u64(5);
    let rows: Vec<Row> = (0..2_000)
        .map(|i| {
            let mut r = random_row(&mut rng);
            r.0 = i;
            r
        })
        .collect();
    let (_dir, db) = setup(&rows);
    let s = SqlSession::new(db.clone()).unwrap();
    for w in [
        "v < 3",
        "v >= -10 AND v <= 10",
        "v BETWEEN 0 AND 20",
        "s >= 'm' AND s < 't'",
        "k < 300 AND v <> 5",
        "v = 7",
        "k >= 1900",
        "s = 'x'",
    ] {
        let want = count(&s, &format!("SELECT count(*) FROM t WHERE {w}"));
        assert_eq!(count(&s, &format!("DELETE FROM t WHERE {w}")), want, "{w}");
        assert_eq!(
            count(&s, &format!("SELECT count(*) FROM t WHERE {w}")),
            0,
            "{w}"
        );
    }
    consistent(&db);
}

/// A statement failing on a value (the messages naming row, column and value
/// are `tests/slt/dml.slt`) is a data error, exit code 3, and changes
/// nothing: not the rows, not the indexes.
#[test]
fn a_statement_failing_on_a_value_is_a_data_error_that_changes_nothing() {
    let rows: Vec<Row> = (0..50)
        .map(|i| (i, Some(i as i32), Some(format!("r{i}"))))
        .collect();
    let (_dir, db) = setup(&rows);
    let s = SqlSession::new(db.clone()).unwrap();
    let before = contents(&s);
    for sql in [
        // NOT NULL on the third row: none of the three is inserted.
        "INSERT INTO t VALUES (100, 1, 'a'), (101, 2, 'b'), (NULL, 3, 'c')",
        "INSERT INTO t (v) VALUES (5)",
        // Too long for VARCHAR(12), on the second row.
        "INSERT INTO t VALUES (102, 1, 'ok'), (103, 1, 'much too long for it')",
        // One row of the 50 becomes too long: no row changes.
        "UPDATE t SET s = CASE WHEN k = 37 THEN 'far too long to fit' ELSE 'fits' END",
        // NOT NULL on UPDATE, through the index.
        "UPDATE t SET k = NULL WHERE k = 3",
    ] {
        let e = error(&s, sql);
        assert!(matches!(e, SqlError::Data(_)), "{sql}: {e:?}");
        assert_eq!(e.exit_code(), 3, "{sql}: {e}");
    }
    // Out of range for INT; a SET expression failing on one row (division by
    // zero at k = 5).
    error(&s, "INSERT INTO t VALUES (104, 3000000000, 'x')");
    error(&s, "UPDATE t SET v = 10 / (k - 5)");

    assert_eq!(contents(&s), before);
    consistent(&db);
}

#[test]
fn insert_select_and_update_meet_each_row_once() {
    let rows: Vec<Row> = (0..400).map(|i| (i, Some(1), None)).collect();
    let (_dir, db) = setup(&rows);
    let s = SqlSession::new(db.clone()).unwrap();
    // Reads only the rows that were there before.
    assert_eq!(count(&s, "INSERT INTO t SELECT k + 400, v, s FROM t"), 400);
    assert_eq!(count(&s, "SELECT count(*) FROM t"), 800);
    // Every row moves up the index it is found through, and grows (so some
    // move to other pages): each is still updated once.
    assert_eq!(
        count(&s, "UPDATE t SET k = k + 1, s = 'grown' WHERE k >= 0"),
        800
    );
    assert_eq!(count(&s, "SELECT count(*) FROM t WHERE s = 'grown'"), 800);
    assert_eq!(count(&s, "SELECT min(k) FROM t"), 1);
    assert_eq!(count(&s, "SELECT max(k) FROM t"), 800);
    assert_eq!(count(&s, "UPDATE t SET v = v + 1 WHERE v = 1"), 800);
    assert_eq!(count(&s, "SELECT count(*) FROM t WHERE v = 2"), 800);
    consistent(&db);
}

#[test]
fn a_single_row_update_through_an_index_reads_a_handful_of_pages() {
    let (_dir, db) = common::empty_db();
    common::load(
        &db,
        "t",
        "k BIGINT, v INT",
        vec![IndexSpec::new("t_k", &["k"])],
        (0..1_000_000i64).map(|k| vec![Value::Int64(k), Value::Int32(0)]),
    );
    let db = Arc::new(db);
    let pages = db.table("t").unwrap().heap().num_pages();
    assert!(pages > 1500, "{pages}");
    let s = SqlSession::new(db.clone()).unwrap();
    let plan = query(&s, "EXPLAIN UPDATE t SET v = v + 1 WHERE k = 42");
    let plan = format!("{plan:?}");
    assert!(plan.contains("rows by index t_k"), "{plan}");

    for (sql, want) in [
        ("UPDATE t SET v = v + 1 WHERE k = 42", 1),
        ("UPDATE t SET v = v + 1 WHERE k = 42 AND v = 1", 1),
        ("DELETE FROM t WHERE k = 43", 1),
        ("DELETE FROM t WHERE k = 43", 0),
    ] {
        let r = s.execute(sql).unwrap();
        assert_eq!(common::text(&r), vec![vec![want.to_string()]], "{sql}");
        assert!(
            r.io.pages_read < 20,
            "{sql} read {} pages of {pages}",
            r.io.pages_read
        );
    }
    assert_eq!(
        query(
            &s,
            "SELECT k, v FROM t WHERE k BETWEEN 41 AND 44 ORDER BY k"
        ),
        vec![
            vec!["41".to_string(), "0".into()],
            vec!["42".into(), "2".into()],
            vec!["44".into(), "0".into()],
        ]
    );
}

#[test]
fn a_range_delete_takes_the_index_when_its_rows_lie_together_and_the_heap_when_they_are_spread() {
    const N: i64 = 100_000;
    // `a.k` follows heap order; `b.u` is a permutation of 0..N spread over
    // the heap. Each table has one index, so the pages a statement reads are
    // its heap pages and that index's.
    let spread = |k: i64| (k * 7_919) % N;
    let pad = "x".repeat(100);
    let (dir, db) = common::empty_db();
    common::load(
        &db,
        "a",
        "k BIGINT, pad VARCHAR(100)",
        vec![IndexSpec::new("a_k", &["k"])],
        (0..N).map(|k| vec![Value::Int64(k), Value::Str(pad.clone())]),
    );
    common::load(
        &db,
        "b",
        "k BIGINT, u BIGINT, pad VARCHAR(100)",
        vec![IndexSpec::new("b_u", &["u"])],
        (0..N).map(|k| {
            vec![
                Value::Int64(k),
                Value::Int64(spread(k)),
                Value::Str(pad.clone()),
            ]
        }),
    );
    let path = db.dir().to_path_buf();
    drop(db);
    // Cold: every page the statements need comes from the device. The pool
    // holds what the second DELETE changes (every page of b): a write
    // transaction keeps its changed pages until it commits.
    let options = strata_storage::DbOptions {
        buffer_pool_bytes: 32 << 20,
        ..common::options()
    };
    let db = Arc::new(Database::open(&path, options).unwrap());
    let pages = db.table("a").unwrap().heap().num_pages();
    let s = SqlSession::new(db.clone()).unwrap();

    // 10% of the rows, on the first 10% of the heap's pages: by the index,
    // reading about a tenth of the heap in a few large requests, although
    // the index names many more rows than the heap has pages.
    assert!(pages < (N / 10) as u64, "{pages}");
    let r = s.execute("DELETE FROM a WHERE k < 10000").unwrap();
    assert_eq!(common::text(&r), vec![vec!["10000".to_string()]]);
    assert!(
        r.io.pages_read < pages / 5,
        "the clustered range read {} pages; the heap has {pages}",
        r.io.pages_read
    );
    assert!(
        r.io.read_requests < pages / 20,
        "the clustered range made {} read requests; the heap has {pages} pages",
        r.io.read_requests
    );

    // 1% of the rows by u, spread over the heap: the same answer, by whichever
    // path (a heap scan here).
    let want = (0..N).filter(|&k| spread(k) < 1_000).count();
    let r = s.execute("DELETE FROM b WHERE u < 1000").unwrap();
    assert_eq!(common::text(&r), vec![vec![want.to_string()]]);

    assert_eq!(
        query(&s, "SELECT count(*), min(k) FROM a"),
        vec![vec![(N - 10_000).to_string(), "10000".to_string()]]
    );
    assert_eq!(
        query(&s, "SELECT count(*), min(u) FROM b"),
        vec![vec![(N as usize - want).to_string(), "1000".to_string()]]
    );
    check_database(&db, &NoProgress).unwrap();
    drop(dir);
}

/// The forms strata refuses (their messages are `tests/slt/dml.slt`) are
/// usage errors, exit code 2; TRUNCATE leaves the indexes agreeing with the
/// empty heap.
#[test]
fn updates_and_deletes_whose_rows_datafusion_would_not_describe_are_refused() {
    let rows: Vec<Row> = (0..20).map(|i| (i, Some(i as i32), None)).collect();
    let (_dir, db) = setup(&rows);
    let s = SqlSession::new(db.clone()).unwrap();
    for sql in [
        "DELETE FROM t WHERE k IN (SELECT k FROM t WHERE k < 3)",
        "DELETE FROM t WHERE EXISTS (SELECT 1 FROM t)",
        "UPDATE t SET v = (SELECT max(v) FROM t)",
        "DELETE FROM t WHERE k < 5 LIMIT 1",
        "EXPLAIN ANALYZE DELETE FROM t WHERE k IN (SELECT 1)",
        "INSERT INTO t VALUES (1, 1, 'x') RETURNING nope",
    ] {
        let e = error(&s, sql);
        assert_eq!(e.exit_code(), 2, "{sql}: {e}");
    }
    assert_eq!(count(&s, "SELECT count(*) FROM t"), 20);
    assert_eq!(count(&s, "TRUNCATE TABLE t"), 20);
    consistent(&db);
}

/// Sessions over one database at once: one moves amounts between rows in
/// transactions (some rolled back) while two others query; every query sees
/// the total and the row count unchanged — each transaction whole or not at
/// all — and the writer's durable commits survive a reopen.
#[test]
fn concurrent_queries_see_each_transaction_whole() {
    let rows: Vec<Row> = (0..2000)
        .map(|k| (k, Some(100), Some("x".into())))
        .collect();
    let (dir, db) = setup(&rows);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|sc| {
        for _ in 0..2 {
            let db = db.clone();
            let done = &done;
            sc.spawn(move || {
                let s = SqlSession::new(db).unwrap();
                let mut n = 0;
                while !done.load(std::sync::atomic::Ordering::Acquire) || n == 0 {
                    let r = query(&s, "SELECT count(*), sum(v) FROM t");
                    assert_eq!(r, vec![vec!["2000".to_string(), "200000".to_string()]]);
                    n += 1;
                }
            });
        }
        let w = SqlSession::new(db.clone()).unwrap();
        let mut rng = SmallRng::seed_from_u64(9);
        for i in 0..60 {
            let (a, b) = (rng.random_range(0..2000), rng.random_range(0..2000));
            let d = rng.random_range(1..20);
            w.execute("BEGIN").unwrap();
            w.execute(&format!(
                "UPDATE t SET v = v - {d}, s = 'moved' WHERE k = {a}"
            ))
            .unwrap();
            w.execute(&format!("UPDATE t SET v = v + {d} WHERE k = {b}"))
                .unwrap();
            w.execute(if i % 4 == 3 { "ROLLBACK" } else { "COMMIT" })
                .unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Release);
    });
    drop(db);
    let db = Arc::new(common::reopen(&dir.path().join("db")));
    let s = SqlSession::new(db.clone()).unwrap();
    assert_eq!(
        query(&s, "SELECT count(*), sum(v) FROM t"),
        vec![vec!["2000".to_string(), "200000".to_string()]]
    );
    check_database(&db, &NoProgress).unwrap();
}

/// A VARCHAR's trailing spaces are data (SQL reads them back, compares with
/// them, and a pushed-down filter agrees with one DataFusion evaluates); a
/// CHAR's are padding, on a plain and on a compacted (narrow) table alike.
#[test]
fn varchar_trailing_spaces_are_data_and_char_padding_is_not() {
    let (_dir, db) = common::empty_db();
    common::load(
        &db,
        "w",
        "k BIGINT, s VARCHAR(12), c CHAR(6)",
        vec![IndexSpec::new("w_k", &["k"])],
        [
            vec![
                Value::Int64(1),
                Value::Str("ab  ".into()),
                Value::Str("x".into()),
            ],
            vec![
                Value::Int64(2),
                Value::Str("ab".into()),
                Value::Str("x  ".into()),
            ],
        ],
    );
    let db = Arc::new(db);
    for compacted in [false, true] {
        if compacted {
            db.compact("w", &Default::default(), &NoProgress).unwrap();
        }
        let s = SqlSession::new(db.clone()).unwrap();
        assert_eq!(
            query(
                &s,
                "SELECT k, s || '|', length(s), c || '|' FROM w ORDER BY k"
            ),
            vec![vec!["1", "ab  |", "4", "x|"], vec!["2", "ab|", "2", "x|"],],
            "compacted: {compacted}"
        );
        // Pushed down (the scan's predicate) and not (an expression).
        assert_eq!(count(&s, "SELECT count(*) FROM w WHERE s = 'ab  '"), 1);
        assert_eq!(
            count(&s, "SELECT count(*) FROM w WHERE s || '' = 'ab  '"),
            1
        );
        assert_eq!(count(&s, "SELECT count(*) FROM w WHERE c = 'x'"), 2);
    }
}

/// A point query by a unique key is answered without DataFusion's planning
/// (`dml::direct_select`), with the rows, column names and types DataFusion
/// gives; every other SELECT still plans through DataFusion.
#[test]
fn point_queries_by_a_unique_key_answer_as_datafusion_does() {
    use std::sync::atomic::Ordering;
    use strata_sql::dml::direct_select::TAKEN;
    let mut rng = SmallRng::seed_from_u64(11);
    let rows: Vec<Row> = (0..500)
        .map(|i| {
            let mut r = random_row(&mut rng);
            r.0 = i * 2;
            r
        })
        .collect();
    let (_d1, db) = setup(&rows);
    let direct = SqlSession::new(db.clone()).unwrap();
    direct
        .execute("CREATE UNIQUE INDEX t_k_unique ON t (k)")
        .unwrap();
    let planned = SqlSession::new(db).unwrap();
    planned.set("strata.direct_dml", "false").unwrap();
    let answer = |s: &SqlSession, sql: &str| match s.execute(sql) {
        Ok(r) => Ok((
            r.schema
                .fields()
                .iter()
                .map(|f| (f.name().clone(), f.data_type().clone()))
                .collect::<Vec<_>>(),
            // In any order: the statements have no ORDER BY but one, whose
            // one row has none to keep.
            {
                let mut rows = common::text(&r);
                rows.sort();
                rows
            },
        )),
        Err(e) => Err((e.exit_code(), e.to_string())),
    };
    let taken = || TAKEN.load(Ordering::Relaxed);
    // Each statement's answer is DataFusion's, and the direct path is taken
    // exactly when it should be.
    let check = |cases: &[(&str, bool)]| {
        for &(sql, point) in cases {
            let before = taken();
            let got = answer(&direct, sql);
            assert_eq!(taken() - before, point as u64, "{sql}: direct path taken?");
            assert_eq!(got, answer(&planned, sql), "{sql}");
        }
    };
    check(&[
        ("SELECT v FROM t WHERE k = 42", true),
        ("SELECT * FROM t WHERE k = 42", true),
        ("select S, v from T where K = 998", true),
        ("SELECT v, k FROM t WHERE 42 = k", true),
        ("SELECT v, k, v FROM t WHERE 42 = k", false),
        ("SELECT s FROM t WHERE k = 43", true),
        ("SELECT s FROM t WHERE k = 42 AND v > 1000000", true),
        ("SELECT s FROM t WHERE k = 42 AND v > 5000000000", false),
        ("SELECT s FROM t WHERE k = 42 AND v IS NULL", false),
        ("SELECT s FROM t WHERE k = 42 AND k >= 40", true),
        ("SELECT s FROM t WHERE k = 42 AND k > 50", true),
        ("SELECT v FROM t WHERE k = NULL", false),
        ("SELECT v FROM t WHERE k < 10", false),
        // A key of a non-unique index (t_v) that names a few rows.
        ("SELECT v FROM t WHERE v = 7", true),
        ("SELECT v + 1 FROM t WHERE k = 42", false),
        ("SELECT v FROM t WHERE k = 42 ORDER BY v", false),
        ("SELECT v FROM t WHERE k = 42 OR k = 44", false),
        ("SELECT nope FROM t WHERE k = 42", false),
        ("SELECT v FROM t WHERE k = 'x'", false),
    ]);
    // An INT key compared with a BIGINT literal (type coercion widens the
    // column, `CAST(id AS BIGINT) = 7`) is still a lookup of its key; a
    // literal no INT can equal is left to DataFusion.
    direct
        .execute("CREATE TABLE u (id INT NOT NULL PRIMARY KEY, w INT)")
        .unwrap();
    direct
        .execute("INSERT INTO u SELECT value, value * 3 FROM generate_series(1, 300)")
        .unwrap();
    check(&[
        ("SELECT w FROM u WHERE id = 7", true),
        ("SELECT w, id FROM u WHERE 300 = id", true),
        ("SELECT w FROM u WHERE id = 301", true),
        ("SELECT w FROM u WHERE id = -7", true),
        ("SELECT w FROM u WHERE id = 5000000000", false),
        ("SELECT w FROM u WHERE id = 7 AND id < 5000000000", false),
        ("SELECT w FROM u WHERE id = 7 AND id BETWEEN 1 AND 9", true),
        ("SELECT w FROM u WHERE id = 7 AND id BETWEEN 8 AND 9", true),
    ]);
    // A key of a non-unique index naming more than a batch of rows is
    // DataFusion's; one naming fewer is looked up.
    direct.execute("CREATE TABLE d (g INT, x INT)").unwrap();
    direct.execute("CREATE INDEX d_g ON d (g)").unwrap();
    direct
        .execute("INSERT INTO d SELECT value % 2, value FROM generate_series(1, 3000)")
        .unwrap();
    direct
        .execute("INSERT INTO d SELECT 7, value FROM generate_series(1, 1024)")
        .unwrap();
    direct
        .execute("INSERT INTO d SELECT 8, value FROM generate_series(1, 1025)")
        .unwrap();
    check(&[
        ("SELECT count(*) FROM d WHERE g = 1", false),
        ("SELECT x FROM d WHERE g = 1", false),
        ("SELECT x FROM d WHERE g = 1 AND x < 10", false),
        ("SELECT x FROM d WHERE g = 7", true),
        ("SELECT x FROM d WHERE g = 8", false),
        ("SELECT * FROM d WHERE g = 5", true),
    ]);
    // A forced full scan is honoured.
    direct.set("strata.access_path", "full").unwrap();
    let before = taken();
    direct.execute("SELECT v FROM t WHERE k = 42").unwrap();
    assert_eq!(taken(), before);
}
