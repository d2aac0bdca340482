//! Index nested-loop joins (Smooth Scan §4.2): `IndexJoinExec` with a plain
//! index inner and with Smooth Scan as the parameterized inner. Their rows
//! equal the hash join's and a Rust model's (NULL keys, keys with no match,
//! keys with many, an inner predicate, an inner residual, a join filter);
//! Smooth Scan as the inner never reads a heap page twice and, on keys with
//! many matches, reads fewer pages than the plain probes; the optimizer picks
//! the index join from stale statistics and the hash join from fresh ones.
//! `EXISTS`, `NOT EXISTS` and `IN` become index semi / anti joins whose rows
//! equal the hash join's and the model's; `NOT IN` stays a hash join.

use crate::common;

use std::sync::Arc;

use common::query;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_sql::SqlSession;
use strata_storage::Database;
use strata_storage::db::{IndexSpec, NoProgress};
use strata_storage::row::Value;

/// A row of `ord` (k, a) and of `item` (k, v).
type OrdRow = (Option<i32>, i32);
type ItemRow = (i32, i32);

/// `ord(k INT NULL, a INT)` and `item(k INT, v INT, note VARCHAR(200))` with
/// an index on `item.k`. Outer keys fall in `0..2·keys`, half of them have
/// no item; every ninth outer key is NULL.
fn setup(
    outer: usize,
    items: usize,
    keys: i32,
    seed: u64,
) -> (tempfile::TempDir, Arc<Database>, Vec<OrdRow>, Vec<ItemRow>) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let ord: Vec<OrdRow> = (0..outer)
        .map(|i| {
            (
                (i % 9 != 0).then(|| rng.random_range(0..2 * keys)),
                rng.random_range(0..1000),
            )
        })
        .collect();
    let item: Vec<ItemRow> = (0..items)
        .map(|_| (rng.random_range(0..keys), rng.random_range(0..1000)))
        .collect();
    let (dir, db) = common::empty_db();
    common::load(
        &db,
        "ord",
        "k INT NULL, a INT",
        vec![],
        ord.iter()
            .map(|&(k, a)| vec![k.map_or(Value::Null, Value::Int32), Value::Int32(a)]),
    );
    common::load(
        &db,
        "item",
        "k INT, v INT, note VARCHAR(200)",
        vec![IndexSpec::new("item_k", &["k"])],
        item.iter().enumerate().map(|(i, &(k, v))| {
            vec![
                Value::Int32(k),
                Value::Int32(v),
                Value::Str(format!("{i:>150}")),
            ]
        }),
    );
    (dir, Arc::new(db), ord, item)
}

fn session(db: &Arc<Database>, access_path: &str, index_join: &str) -> SqlSession {
    let s = SqlSession::new(db.clone()).unwrap();
    s.set("strata.access_path", access_path).unwrap();
    s.set("strata.index_join", index_join).unwrap();
    s
}

fn sorted(mut rows: Vec<Vec<String>>) -> Vec<Vec<String>> {
    rows.sort();
    rows
}

fn explain(s: &SqlSession, sql: &str, analyze: bool) -> String {
    let what = if analyze {
        "EXPLAIN ANALYZE"
    } else {
        "EXPLAIN"
    };
    query(s, &format!("{what} {sql}"))
        .into_iter()
        .map(|r| r.join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A counter of the `IndexJoinExec` line of an EXPLAIN ANALYZE
/// (DataFusion prints large counts as `3.51 K`).
fn counter(plan: &str, name: &str) -> f64 {
    let line = plan
        .lines()
        .find(|l| l.contains("IndexJoinExec"))
        .unwrap_or_else(|| panic!("no IndexJoinExec in\n{plan}"));
    let at = line
        .find(&format!(" {name}="))
        .or_else(|| line.find(&format!("[{name}=")))
        .unwrap_or_else(|| panic!("no {name} in {line}"));
    let v = &line[at + name.len() + 2..];
    let v: String = v.chars().take_while(|c| *c != ',' && *c != ']').collect();
    let mut parts = v.split_whitespace();
    let n: f64 = parts.next().unwrap().parse().unwrap();
    n * match parts.next() {
        Some("K") => 1e3,
        Some("M") => 1e6,
        _ => 1.0,
    }
}

/// Under `index`, `smooth` and `optimizer` with `strata.index_join = on`,
/// `sql` joins by probing `item_k` (the plan also names `also`, with no hash
/// join left) and answers `expected` (sorted).
fn every_path_probes_item(db: &Arc<Database>, sql: &str, also: &str, expected: &[Vec<String>]) {
    for path in ["index", "smooth", "optimizer"] {
        let s = session(db, path, "on");
        let plan = explain(&s, sql, false);
        let inner = if path == "smooth" { "smooth" } else { "index" };
        assert!(
            plan.contains(&format!(
                "IndexJoinExec: inner=item via item_k, inner_path={inner}"
            )) && plan.contains(also)
                && !plan.contains("HashJoinExec"),
            "{path}: {sql}\n{plan}"
        );
        assert_eq!(sorted(query(&s, sql)), expected, "{path}: {sql}");
    }
}

const JOIN: &str = "SELECT o.a, i.k, i.v FROM ord o JOIN item i ON o.k = i.k";

#[test]
fn index_joins_answer_as_the_hash_join_and_the_model() {
    let (_dir, db, ord, item) = setup(3000, 12_000, 3000, 7);
    let queries = [
        JOIN.to_string(),
        format!("{JOIN} WHERE i.v > 500"),
        format!("{JOIN} WHERE i.note LIKE '%7'"),
        "SELECT o.a, i.k, i.v FROM ord o JOIN item i ON o.k = i.k AND o.a < i.v".to_string(),
        "SELECT count(*), sum(i.v) FROM ord o JOIN item i ON o.k = i.k WHERE o.a < 300".to_string(),
    ];
    for sql in &queries {
        let reference = sorted(query(&session(&db, "full", "off"), sql));
        assert!(!reference.is_empty(), "{sql}");
        every_path_probes_item(&db, sql, "", &reference);
    }
    // The first query against a model.
    let mut model: Vec<Vec<String>> = Vec::new();
    for &(k, a) in &ord {
        for &(ik, v) in &item {
            if k == Some(ik) {
                model.push(vec![a.to_string(), ik.to_string(), v.to_string()]);
            }
        }
    }
    assert_eq!(
        sorted(query(&session(&db, "smooth", "on"), JOIN)),
        sorted(model)
    );
    // off keeps the hash join.
    let plan = explain(&session(&db, "smooth", "off"), JOIN, false);
    assert!(
        plan.contains("HashJoinExec") && !plan.contains("IndexJoinExec"),
        "{plan}"
    );
}

/// `EXISTS`, `NOT EXISTS` and `IN` over `item`, each with the rows of
/// `ord` it must return: `(sql, is_anti, test(outer row, item row))`.
type Tested = (&'static str, bool, fn(OrdRow, ItemRow) -> bool);

const TESTED: &[Tested] = &[
    (
        "SELECT o.k, o.a FROM ord o WHERE EXISTS (SELECT 1 FROM item i WHERE i.k = o.k)",
        false,
        |_, _| true,
    ),
    (
        "SELECT o.k, o.a FROM ord o WHERE NOT EXISTS (SELECT 1 FROM item i WHERE i.k = o.k)",
        true,
        |_, _| true,
    ),
    (
        "SELECT o.k, o.a FROM ord o WHERE EXISTS (SELECT 1 FROM item i WHERE i.k = o.k AND i.v > o.a)",
        false,
        |(_, a), (_, v)| v > a,
    ),
    (
        "SELECT o.k, o.a FROM ord o WHERE NOT EXISTS (SELECT 1 FROM item i WHERE i.k = o.k AND i.v > o.a)",
        true,
        |(_, a), (_, v)| v > a,
    ),
    (
        "SELECT o.k, o.a FROM ord o WHERE o.k IN (SELECT k FROM item WHERE v > 900)",
        false,
        |_, (_, v)| v > 900,
    ),
];

/// The model's count of the rows of `ord` the `TESTED` query `sql` returns.
fn model_count(ord: &[OrdRow], item: &[ItemRow], sql: &str) -> String {
    let &(_, anti, test) = TESTED.iter().find(|t| t.0 == sql).unwrap();
    ord.iter()
        .filter(|&&(k, a)| item.iter().any(|&it| Some(it.0) == k && test((k, a), it)) != anti)
        .count()
        .to_string()
}

#[test]
fn semi_and_anti_index_joins_answer_as_the_hash_join_and_the_model() {
    let (_dir, db, ord, item) = setup(3000, 12_000, 3000, 17);
    for &(sql, anti, test) in TESTED {
        // The model: each outer row once, if some item of its key passes
        // (semi), or if none does (anti; a NULL key matches nothing).
        let model = sorted(
            ord.iter()
                .filter(|&&(k, a)| {
                    let found = item.iter().any(|&it| Some(it.0) == k && test((k, a), it));
                    found != anti
                })
                .map(|&(k, a)| {
                    vec![
                        k.map_or("NULL".to_string(), |k| k.to_string()),
                        a.to_string(),
                    ]
                })
                .collect(),
        );
        assert!(!model.is_empty(), "{sql}");
        let reference = sorted(query(&session(&db, "full", "off"), sql));
        assert_eq!(reference, model, "the hash join: {sql}");
        let kind = if anti { "Anti" } else { "Semi" };
        every_path_probes_item(&db, sql, kind, &model);
    }
    // count(*) over each: the join returns rows of no columns.
    for &(sql, _, _) in TESTED {
        let count = sql.replacen("SELECT o.k, o.a", "SELECT count(*)", 1);
        let reference = query(&session(&db, "full", "off"), &count);
        assert_eq!(reference, vec![vec![model_count(&ord, &item, sql)]]);
        for path in ["index", "smooth"] {
            assert_eq!(
                query(&session(&db, path, "on"), &count),
                reference,
                "{path}: {count}"
            );
        }
    }
    let count = "SELECT count(*) FROM ord o JOIN item i ON o.k = i.k";
    let reference = query(&session(&db, "full", "off"), count);
    for path in ["index", "smooth"] {
        assert_eq!(query(&session(&db, path, "on"), count), reference, "{path}");
    }
    // Small batches: a semi join's outer rows are decided chunk by chunk,
    // and a chunk stops reading once all of its rows have matched.
    let s = session(&db, "index", "on");
    s.execute("SET datafusion.execution.batch_size = 100")
        .unwrap();
    for &(sql, _, _) in TESTED {
        let reference = sorted(query(&session(&db, "full", "off"), sql));
        assert_eq!(sorted(query(&s, sql)), reference, "batch_size 100: {sql}");
    }
    // NOT IN is null-aware (one NULL in the subquery empties the answer):
    // it stays a hash join, and answers as one.
    let sql = "SELECT o.k, o.a FROM ord o WHERE o.k NOT IN (SELECT k FROM item WHERE v > 900)";
    let s = session(&db, "index", "on");
    let plan = explain(&s, sql, false);
    assert!(
        plan.contains("HashJoinExec") && !plan.contains("IndexJoinExec"),
        "{plan}"
    );
    assert_eq!(
        sorted(query(&s, sql)),
        sorted(query(&session(&db, "full", "off"), sql))
    );
}

#[test]
fn smooth_inner_reads_each_page_once_and_fewer_pages_than_plain_probes_on_keys_with_many_matches() {
    // 40 keys, each with ~750 items spread over every page of `item`; the
    // outer side's 30,000 rows come in several batches, each naming every key.
    let (_dir, db, _, _) = setup(30_000, 30_000, 40, 11);
    let sql = "SELECT count(*), sum(i.v) FROM ord o JOIN item i ON o.k = i.k";
    let reference = query(&session(&db, "full", "off"), sql);
    let plain = session(&db, "index", "on");
    let smooth = session(&db, "smooth", "on");
    assert_eq!(query(&plain, sql), reference);
    assert_eq!(query(&smooth, sql), reference);
    let p = explain(&plain, sql, true);
    let s = explain(&smooth, sql, true);
    let pages = db.table("item").unwrap().heap().num_pages() as f64;
    assert_eq!(counter(&s, "heap_pages_read_twice"), 0.0, "{s}");
    assert!(counter(&s, "heap_pages") <= pages, "{s}");
    assert!(counter(&p, "heap_pages_read_twice") > 0.0, "{p}");
    assert!(
        counter(&p, "heap_pages") > 1.5 * counter(&s, "heap_pages"),
        "plain {p}\nsmooth {s}"
    );
    // Many matches per key: the smooth inner morphs into a sweep.
    assert!(counter(&s, "mode_changes") >= 1.0, "{s}");
}

/// `setup`'s tables (200 outer rows, 20,000 items over 5,000 keys) after
/// `ANALYZE`, then 5,000 rows appended to `ord` with `a` in 2000..3000,
/// beyond anything `ANALYZE` saw: a scan of `ord` for them is estimated at a
/// handful of rows. Returns an `optimizer` / `auto` session.
fn stale_ord() -> (tempfile::TempDir, Arc<Database>, SqlSession) {
    let (dir, db, _, _) = setup(200, 20_000, 5000, 3);
    let s = session(&db, "optimizer", "auto");
    s.execute("ANALYZE").unwrap();
    let mut l = db.begin_load("ord").unwrap();
    let mut rng = SmallRng::seed_from_u64(5);
    for _ in 0..5000 {
        l.append(&[
            Value::Int32(rng.random_range(0..5000)),
            Value::Int32(rng.random_range(2000..3000)),
        ])
        .unwrap();
    }
    l.commit(&NoProgress).unwrap();
    (dir, db, s)
}

#[test]
fn the_optimizer_takes_the_index_join_from_stale_statistics_and_the_hash_join_from_fresh() {
    let (_dir, db, s) = stale_ord();
    let sql = format!("{JOIN} WHERE o.a >= 2000");
    let reference = sorted(query(&session(&db, "full", "off"), &sql));
    let stale = explain(&s, &sql, false);
    assert!(
        stale.contains("IndexJoinExec: inner=item via item_k, inner_path=index"),
        "{stale}"
    );
    assert_eq!(sorted(query(&s, &sql)), reference);
    // Smooth keeps the optimizer's join, with Smooth Scan inside.
    let smooth = session(&db, "smooth", "auto");
    assert!(
        explain(&smooth, &sql, false).contains("inner_path=smooth"),
        "{}",
        explain(&smooth, &sql, false)
    );
    assert_eq!(sorted(query(&smooth, &sql)), reference);
    s.execute("ANALYZE").unwrap();
    let fresh = explain(&s, &sql, false);
    assert!(
        fresh.contains("HashJoinExec") && !fresh.contains("IndexJoinExec"),
        "{fresh}"
    );
    // The fixed paths keep hash joins under auto.
    let full = explain(&session(&db, "full", "auto"), &sql, false);
    assert!(!full.contains("IndexJoinExec"), "{full}");
}

#[test]
fn auto_takes_a_semi_join_over_a_scan_estimate_but_not_over_a_join_estimate() {
    let (_dir, db, s) = stale_ord();
    let over_scan = "SELECT o.k, o.a FROM ord o WHERE o.a >= 2000 \
         AND EXISTS (SELECT 1 FROM item i WHERE i.k = o.k AND i.v > 500)";
    let plan = explain(&s, over_scan, false);
    assert!(
        plan.contains("IndexJoinExec: inner=item via item_k, inner_path=index")
            && plan.contains("join_type=LeftSemi"),
        "{plan}"
    );
    let reference = sorted(query(&session(&db, "full", "off"), over_scan));
    assert!(!reference.is_empty());
    assert_eq!(sorted(query(&s, over_scan)), reference);
    // The same test over a join of `ord` with itself: the outer estimate is
    // DataFusion's join arithmetic, and auto keeps the hash join (`on` still
    // takes the index).
    let over_join = "SELECT o.k, o.a FROM ord o JOIN ord p ON o.a = p.a + 1 \
         WHERE o.a >= 2000 AND p.a >= 2000 \
         AND NOT EXISTS (SELECT 1 FROM item i WHERE i.k = o.k AND i.v > 500)";
    let plan = explain(&s, over_join, false);
    assert!(
        plan.contains("join_type=LeftAnti") && !plan.contains("IndexJoinExec"),
        "{plan}"
    );
    let plan = explain(&session(&db, "optimizer", "on"), over_join, false);
    assert!(
        plan.contains("IndexJoinExec: inner=item via item_k"),
        "{plan}"
    );
    let reference = sorted(query(&session(&db, "full", "off"), over_join));
    assert!(!reference.is_empty());
    assert_eq!(sorted(query(&s, over_join)), reference);
    assert_eq!(
        sorted(query(&session(&db, "smooth", "on"), over_join)),
        reference
    );
}

#[test]
fn bad_settings_are_named() {
    let (_dir, db, _, _) = setup(10, 10, 5, 1);
    let s = SqlSession::new(db).unwrap();
    let Err(e) = s.execute("SET strata.index_join = 'sometimes'") else {
        panic!("a bad strata.index_join was accepted");
    };
    let e = e.to_string();
    assert!(
        e.contains("strata.index_join") && e.contains("sometimes"),
        "{e}"
    );
}
