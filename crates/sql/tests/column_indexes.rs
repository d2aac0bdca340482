//! Indexes of a columnar table in SQL, against a second opinion: the same
//! rows in a row table with the same indexes. Point and range queries,
//! UPDATE and DELETE by key (column rows marked, their new rows in the
//! delta), inserts, a merge, all answered alike; EXPLAIN shows the lookup
//! in the index's tree over the column rows, and that a wide range leaves
//! it for the pruned scan.

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_sql::SqlSession;
use strata_storage::db::NoProgress;
use strata_storage::maintenance::check::check_database;
use strata_storage::row::Value;

use crate::common;

const ROWS: i64 = 40_000;

/// Row `n`: `k` a permutation of 0..ROWS (no order, so min/max pruning
/// keeps every page), `g` a group of about 30 rows, `v` a value.
fn rows(rng: &mut SmallRng) -> Vec<Vec<Value>> {
    let mut keys: Vec<i64> = (0..ROWS).collect();
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.random_range(0..=i));
    }
    keys.into_iter()
        .enumerate()
        .map(|(n, k)| {
            vec![
                Value::Int64(k),
                Value::Int32((k % 1333) as i32),
                Value::Int64(n as i64 * 7 % 1000),
                Value::Str(format!("r{n}")),
            ]
        })
        .collect()
}

fn explain(s: &SqlSession, sql: &str) -> String {
    common::query(s, &format!("EXPLAIN {sql}"))
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n")
}

/// The same rows as a columnar table `c` and a row table `r`, each with an
/// index `<t>_<col>` on each of `indexed`; a session on them.
fn twins(
    rng: &mut SmallRng,
    indexed: &[&str],
) -> (tempfile::TempDir, Arc<strata_storage::Database>, SqlSession) {
    let (dir, db) = common::empty_db();
    let data = rows(rng);
    let schema = "k BIGINT, g INT, v BIGINT, s VARCHAR(12)";
    common::load(&db, "c", schema, vec![], data.iter().cloned());
    common::load(&db, "r", schema, vec![], data.iter().cloned());
    strata_columns::rewrite(&db, "c", strata_columns::Format::Columns, &NoProgress).unwrap();
    let db = Arc::new(db);
    let s = SqlSession::new(db.clone()).unwrap();
    for t in ["c", "r"] {
        for col in indexed {
            common::run(&s, &format!("CREATE INDEX {t}_{col} ON {t} ({col})"));
        }
    }
    (dir, db, s)
}

#[test]
fn a_columnar_tables_indexes_answer_as_a_row_tables() {
    let mut rng = SmallRng::seed_from_u64(61);
    let (_dir, db, s) = twins(&mut rng, &["k", "g"]);
    let same = |s: &SqlSession, q: &str| {
        let a = common::query(s, &q.replace("{t}", "c"));
        let b = common::query(s, &q.replace("{t}", "r"));
        assert_eq!(a, b, "{q}");
        a
    };
    // A point lookup goes through the tree over the column rows.
    let plan = explain(&s, "SELECT v, s FROM c WHERE k = 17");
    assert!(plan.contains("index c_k: 1 row(s)"), "{plan}");
    // A range of half the groups leaves it after its first leaves.
    let plan = explain(&s, "SELECT count(*) FROM c WHERE g < 700");
    assert!(plan.contains("index c_g given up"), "{plan}");
    for round in 0..150 {
        let k = rng.random_range(0..ROWS + 100);
        let g = rng.random_range(0..1400);
        match round % 10 {
            0 => {
                // The same change to both tables; the counts must agree.
                let w = same(
                    &s,
                    &format!("UPDATE {{t}} SET v = v + 1, g = {g} WHERE k = {k}"),
                );
                assert!(w[0][0] == "0" || w[0][0] == "1", "{w:?}");
            }
            1 => {
                same(
                    &s,
                    &format!("DELETE FROM {{t}} WHERE k = {k} OR k = {}", k + 1),
                );
            }
            2 => {
                same(
                    &s,
                    &format!("INSERT INTO {{t}} VALUES ({}, {g}, 5, 'new')", ROWS + round),
                );
            }
            3 => {
                same(
                    &s,
                    &format!(
                        "SELECT count(*), sum(v) FROM {{t}} WHERE g >= {g} AND g < {}",
                        g + 3
                    ),
                );
            }
            4 if round == 74 => {
                // The merge: the column tree is built again over the new file.
                strata_columns::rewrite(&db, "c", strata_columns::Format::Columns, &NoProgress)
                    .unwrap();
            }
            _ => {
                same(
                    &s,
                    &format!("SELECT k, g, v, s FROM {{t}} WHERE k = {k} ORDER BY s"),
                );
                same(
                    &s,
                    &format!("SELECT count(*), min(k), max(s) FROM {{t}} WHERE g = {g}"),
                );
            }
        }
    }
    same(&s, "SELECT count(*), sum(k), sum(v), sum(g) FROM {t}");
    let c = db.table("c").unwrap();
    assert!(c.columns().unwrap().rows() > 0);
    assert!(c.rows() > 0, "inserts and updates went to the delta");
    check_database(&db, &NoProgress).unwrap();
    let part = strata_columns::ColumnPart::of(&db, &c).unwrap().unwrap();
    assert!(part.deleted_rows() > 0);
    let checked = strata_columns::index::verify(&part, &c, &NoProgress).unwrap();
    assert_eq!(checked.len(), 2);
}

/// `strata.access_path` chooses the column scan's path as it does a heap
/// scan's: full, index, sort and Smooth Scan give the row table's answers
/// at a point, a narrow range and a wide one, and EXPLAIN shows which path
/// read the column rows.
#[test]
fn every_access_path_on_a_columnar_table_answers_as_the_row_table() {
    let mut rng = SmallRng::seed_from_u64(67);
    let (_dir, _db, s) = twins(&mut rng, &["k"]);
    let queries = [
        "SELECT k, g, v, s FROM {t} WHERE k = 123 ORDER BY k",
        "SELECT k, g, v, s FROM {t} WHERE k >= 1000 AND k < 1040 ORDER BY k",
        "SELECT count(*), sum(v), min(s) FROM {t} WHERE k >= 5000 AND k < 30000",
    ];
    for path in ["full", "index", "sort", "smooth"] {
        common::run(&s, &format!("SET strata.access_path = '{path}'"));
        for q in queries {
            let a = common::query(&s, &q.replace("{t}", "c"));
            let b = common::query(&s, &q.replace("{t}", "r"));
            assert_eq!(a, b, "{path}: {q}");
            assert!(!a.is_empty(), "{path}: {q}");
        }
        let plan = explain(&s, "SELECT v FROM c WHERE k >= 1000 AND k < 1040");
        match path {
            "full" => assert!(!plan.contains("index c_k"), "{plan}"),
            // One unit per row, 40 rows from 40 entries.
            "index" | "sort" => {
                assert!(
                    plan.contains("index c_k: 40 row(s) from 40 entries"),
                    "{path}: {plan}"
                )
            }
            // Tried; in a table this small (one row group, one request per
            // column) reading the 40 rows' pages costs what the full scan
            // does, and Smooth Scan may take either.
            "smooth" => assert!(plan.contains("index c_k"), "{path}: {plan}"),
            _ => unreachable!(),
        }
    }
    // A wide range: Smooth Scan morphs into the full scan; the sort path
    // does not.
    common::run(&s, "SET strata.access_path = 'smooth'");
    let plan = explain(&s, "SELECT v FROM c WHERE k < 30000");
    assert!(
        plan.contains("given up") && plan.contains("morphed into the full scan"),
        "{plan}"
    );
    common::run(&s, "SET strata.access_path = 'sort'");
    let plan = explain(&s, "SELECT v FROM c WHERE k < 30000");
    assert!(plan.contains("index c_k: 30000 row(s)"), "{plan}");
}

/// The scan's columns as EXPLAIN names them.
fn scan_columns(plan: &str) -> String {
    let at = plan.find("columns [").expect("a column scan") + "columns [".len();
    plan[at..at + plan[at..].find(']').unwrap()].to_string()
}

/// Rows an index's range names exactly (a comparison on an integer key,
/// the lookup finished) pass the WHERE already: the key column is not read
/// unless the query returns it. Any other conjunct, a lookup given up, or
/// a key whose encoding does not compare as its values keep the filter and
/// read the column. The answers are the row table's either way.
#[test]
fn a_lookup_its_index_answers_does_not_read_the_key_column() {
    let mut rng = SmallRng::seed_from_u64(71);
    let (_dir, _db, s) = twins(&mut rng, &["k", "s"]);
    let same = |q: &str| {
        let a = common::query(&s, &q.replace("{t}", "c"));
        let b = common::query(&s, &q.replace("{t}", "r"));
        assert_eq!(a, b, "{q}");
        a
    };
    common::run(&s, "DELETE FROM c WHERE k = 18");
    common::run(&s, "DELETE FROM r WHERE k = 18");
    let cases = [
        // (query, the access path, the columns read)
        ("SELECT v, s FROM {t} WHERE k = 17", "smooth", "v, s"),
        ("SELECT v, s FROM {t} WHERE k = 18", "smooth", "v, s"),
        ("SELECT k, v FROM {t} WHERE k = 17", "smooth", "k, v"),
        (
            "SELECT v FROM {t} WHERE k >= 1000 AND k < 1040 ORDER BY v",
            "index",
            "v",
        ),
        (
            "SELECT v FROM {t} WHERE k BETWEEN 990 AND 1010 ORDER BY v",
            "sort",
            "v",
        ),
        ("SELECT v FROM {t} WHERE k = 17 AND v > 3", "smooth", "k, v"),
        (
            "SELECT v FROM {t} WHERE k = 17 AND s LIKE 'r%'",
            "smooth",
            "k, v, s",
        ),
        (
            "SELECT v FROM {t} WHERE k > 17 AND k <> 20 AND k < 30 ORDER BY v",
            "smooth",
            "k, v",
        ),
        ("SELECT count(v) FROM {t} WHERE k < 30000", "smooth", "k, v"),
        ("SELECT v FROM {t} WHERE s = 'r5'", "smooth", "v, s"),
    ];
    for (q, path, columns) in cases {
        common::run(&s, &format!("SET strata.access_path = '{path}'"));
        let rows = same(q);
        assert!(
            q.contains("18") || q.contains("count") || !rows.is_empty(),
            "{q}"
        );
        let plan = explain(&s, &q.replace("{t}", "c"));
        assert_eq!(scan_columns(&plan), columns, "{q}\n{plan}");
    }
}

/// A point query by an integer key of a columnar table is answered without
/// DataFusion's planning (`dml::direct_select`): its column rows through the
/// index's tree over them, its delta's through the delta's index. The
/// answers are DataFusion's and the row table's, before and after changes
/// that mark column rows deleted and put rows in the delta; a WHERE the
/// index's range does not answer whole is DataFusion's.
#[test]
fn point_queries_on_a_columnar_table_answer_as_datafusion_and_the_row_table() {
    use std::sync::atomic::Ordering;
    use strata_sql::dml::direct_select::TAKEN;
    let mut rng = SmallRng::seed_from_u64(73);
    let (_dir, db, s) = twins(&mut rng, &["k", "g", "s"]);
    let planned = SqlSession::new(db).unwrap();
    planned.set("strata.direct_dml", "false").unwrap();
    let sorted = |s: &SqlSession, q: &str| {
        let mut rows = common::query(s, q);
        rows.sort();
        rows
    };
    let check = || {
        for (q, point) in [
            ("SELECT v, s FROM {t} WHERE k = 17", true),
            ("SELECT * FROM {t} WHERE k = 17", true),
            ("SELECT s, k, v FROM {t} WHERE g = 5", true),
            ("SELECT v FROM {t} WHERE k = -1", true),
            ("SELECT v FROM {t} WHERE k = 18", true),
            ("SELECT v FROM {t} WHERE k = 17 AND k >= 10", true),
            ("SELECT v FROM {t} WHERE k = 17 AND v > 3", false),
            ("SELECT v FROM {t} WHERE s = 'r5'", false),
            ("SELECT v + 1 FROM {t} WHERE k = 17", false),
        ] {
            let c = q.replace("{t}", "c");
            let before = TAKEN.load(Ordering::Relaxed);
            let got = sorted(&s, &c);
            assert_eq!(
                TAKEN.load(Ordering::Relaxed) - before,
                point as u64,
                "{c}: direct?"
            );
            assert_eq!(got, sorted(&planned, &c), "{c}: DataFusion's answer");
            assert_eq!(
                got,
                sorted(&s, &q.replace("{t}", "r")),
                "{c}: the row table's"
            );
        }
    };
    check();
    // Column rows marked deleted, their new versions and new rows in the
    // delta.
    for t in ["c", "r"] {
        common::run(&s, &format!("UPDATE {t} SET v = v + 1, g = 5 WHERE k = 17"));
        common::run(&s, &format!("DELETE FROM {t} WHERE k = 18"));
        common::run(&s, &format!("INSERT INTO {t} VALUES (18, 5, 9, 'again')"));
        common::run(&s, &format!("INSERT INTO {t} VALUES (40017, 5, 1, 'new')"));
    }
    let c = db_table_rows(&s);
    assert!(c > 0, "the delta holds rows");
    check();
}

/// Rows in the columnar table `c`'s delta.
fn db_table_rows(s: &SqlSession) -> u64 {
    s.database().table("c").unwrap().rows()
}

/// Sessions changing the same few rows of a columnar table at once. Each
/// point UPDATE reads its column rows before its writer turn and, under it,
/// leaves out those another session deleted meanwhile (changing the delta's
/// new version instead). Whatever the interleaving, nothing is lost or
/// applied twice: the sum grows by exactly the number of updates, every key
/// keeps one row, and the database checks.
#[test]
fn concurrent_point_updates_of_the_same_rows_lose_nothing() {
    const SESSIONS: i64 = 4;
    const EACH: i64 = 30;
    let mut rng = SmallRng::seed_from_u64(5);
    let (_dir, db, s) = twins(&mut rng, &["k"]);
    let totals = |s: &SqlSession| {
        let r = common::query(s, "SELECT sum(v), count(*) FROM c WHERE k < 4");
        (
            r[0][0].parse::<i64>().unwrap(),
            r[0][1].parse::<i64>().unwrap(),
        )
    };
    let (sum, count) = totals(&s);
    assert_eq!(count, 4);
    std::thread::scope(|sc| {
        for t in 0..SESSIONS {
            let db = db.clone();
            sc.spawn(move || {
                let s = SqlSession::new(db).unwrap();
                for i in 0..EACH {
                    common::run(
                        &s,
                        &format!("UPDATE c SET v = v + 1 WHERE k = {}", (t + i) % 4),
                    );
                }
            });
        }
    });
    assert_eq!(totals(&s), (sum + SESSIONS * EACH, 4));
    assert!(db_table_rows(&s) >= 4, "the new versions are in the delta");
    check_database(&db, &NoProgress).unwrap();
}
