//! SQL answered from an index cache (No Bits Left Behind §2.1): a query that
//! needs only an index's key and cached columns, with equality on the full
//! key, runs `StrataIndexCacheExec`. Its rows equal the heap path's (the same
//! query with `strata.index_cache = false`) and a plain Rust model's on random
//! data and keys (absent keys, duplicate keys, duplicate list values, NULLs);
//! a second run hits and touches fewer pages; an UPDATE or DELETE is seen by
//! the next SELECT; a transaction sees its own writes; EXPLAIN names the path.

use crate::common;
use crate::common::run;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::{counter, query};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_sql::SqlSession;
use strata_storage::Database;
use strata_storage::db::IndexSpec;
use strata_storage::row::Value;

#[derive(Clone, Debug)]
struct Page {
    id: i32,
    ns: i32,
    title: String,
    len: Option<i32>,
    body: String,
}

/// `n` pages; ids in `0..n/2` (so most ids have two rows), namespaces in
/// `0..8`, titles from a small set (so (ns, title) repeats too), a NULL
/// length in every ninth row.
fn pages(n: i32, seed: u64) -> Vec<Page> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|i| Page {
            id: rng.random_range(0..n / 2),
            ns: rng.random_range(0..8),
            title: format!("t{}", rng.random_range(0..200)),
            len: (i % 9 != 0).then(|| rng.random_range(0..10_000)),
            body: format!("body of {i}"),
        })
        .collect()
}

/// Table `page` with `page_id (id)` caching ns, title, len and
/// `page_name (ns, title)` caching len; `body` is cached by neither.
fn setup(data: &[Page]) -> (tempfile::TempDir, Arc<Database>) {
    let (dir, db) = common::empty_db();
    common::load(
        &db,
        "page",
        "id INT, ns INT, title VARCHAR(40), len INT NULL, body VARCHAR(100)",
        vec![
            IndexSpec::new("page_id", &["id"]).cache(&["ns", "title", "len"]),
            IndexSpec::new("page_name", &["ns", "title"]).cache(&["len"]),
        ],
        data.iter().map(|p| {
            vec![
                Value::Int32(p.id),
                Value::Int32(p.ns),
                Value::Str(p.title.clone()),
                p.len.map_or(Value::Null, Value::Int32),
                Value::Str(p.body.clone()),
            ]
        }),
    );
    (dir, Arc::new(db))
}

fn plan_text(s: &SqlSession, sql: &str) -> String {
    query(s, &format!("EXPLAIN {sql}"))
        .into_iter()
        .map(|r| r.join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

fn sorted(mut rows: Vec<Vec<String>>) -> Vec<Vec<String>> {
    rows.sort();
    rows
}

fn len_text(len: Option<i32>) -> String {
    len.map_or("NULL".into(), |l| l.to_string())
}

fn list(values: &[i32]) -> String {
    values
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn explain_names_the_index_cache_path_only_where_it_applies() {
    let data = pages(400, 1);
    let (_d, db) = setup(&data);
    let s = SqlSession::new(db).unwrap();
    for sql in [
        "SELECT ns, title, len FROM page WHERE id = 42",
        "SELECT id, len FROM page WHERE id IN (3, 1, 2, 3)",
        "SELECT len FROM page WHERE id = 1 OR id = 7",
        "SELECT count(*) FROM page WHERE id = 5",
        "SELECT title FROM page WHERE id IN (1, 2) AND len > 100",
        "SELECT len FROM page WHERE ns = 1 AND title = 't5'",
        "SELECT len FROM page WHERE ns IN (1, 2) AND title IN ('t5', 't6')",
    ] {
        let p = plan_text(&s, sql);
        assert!(
            p.contains("StrataIndexCacheExec: table=page, path=index-cache via"),
            "{sql}:\n{p}"
        );
        assert!(!p.contains("StrataScanExec"), "{sql}:\n{p}");
    }
    let p = plan_text(
        &s,
        "SELECT ns, title, len FROM page WHERE id IN (3, 1, 2, 3)",
    );
    assert!(
        p.contains(
            "path=index-cache via page_id (caches ns, title, len), keys=3 [id IN (1, 2, 3)]"
        ),
        "{p}"
    );
    let p = plan_text(
        &s,
        "SELECT len FROM page WHERE ns IN (1, 2) AND title = 't5' AND len > 3",
    );
    assert!(
        p.contains("via page_name (caches len), keys=2 [ns IN (1, 2) AND title = t5]"),
        "{p}"
    );
    assert!(p.contains("residual=[len > Int32(3)]"), "{p}");
    // A column neither index has, no equality on the whole key, an
    // inequality, or the setting off: the ordinary scan.
    s.set("strata.access_path", "index").unwrap();
    for sql in [
        "SELECT body FROM page WHERE id = 42",
        "SELECT * FROM page WHERE id = 42",
        "SELECT len FROM page WHERE ns = 1",
        "SELECT len FROM page WHERE id < 3",
        "SELECT len FROM page WHERE id = 3 AND body = 'x'",
        "SELECT len FROM page WHERE id = 1 OR ns = 2",
        "SELECT len FROM page WHERE id NOT IN (1, 2)",
    ] {
        let p = plan_text(&s, sql);
        assert!(!p.contains("index-cache"), "{sql}:\n{p}");
        assert!(p.contains("StrataScanExec"), "{sql}:\n{p}");
    }
    s.set("strata.index_cache", "false").unwrap();
    let p = plan_text(&s, "SELECT ns, title, len FROM page WHERE id = 42");
    assert!(
        p.contains("StrataScanExec: table=page, path=index via page_id"),
        "{p}"
    );
}

#[test]
fn the_cache_path_returns_the_heap_paths_rows_on_random_keys() {
    let data = pages(3000, 2);
    let (_d, db) = setup(&data);
    let cached = SqlSession::new(db.clone()).unwrap();
    cached.set("strata.index_cache", "on").unwrap();
    let heap = SqlSession::new(db).unwrap();
    heap.set("strata.index_cache", "false").unwrap();
    let mut rng = SmallRng::seed_from_u64(3);
    let mut hits = 0;
    for round in 0..60 {
        // Keys mostly present (some with two rows), some absent (past the
        // ids, or negative), lists with repeats.
        let key = |rng: &mut SmallRng| rng.random_range(-20..1700);
        let (sql, want): (String, Vec<Vec<String>>) = match round % 4 {
            0 => {
                let k = key(&mut rng);
                (
                    format!("SELECT id, ns, title, len FROM page WHERE id = {k}"),
                    data.iter()
                        .filter(|p| p.id == k)
                        .map(|p| {
                            vec![
                                p.id.to_string(),
                                p.ns.to_string(),
                                p.title.clone(),
                                len_text(p.len),
                            ]
                        })
                        .collect(),
                )
            }
            1 => {
                let ks: Vec<i32> = (0..rng.random_range(1..40))
                    .map(|_| key(&mut rng))
                    .collect();
                let set: BTreeSet<i32> = ks.iter().copied().collect();
                (
                    format!(
                        "SELECT title, len, id FROM page WHERE id IN ({})",
                        list(&ks)
                    ),
                    data.iter()
                        .filter(|p| set.contains(&p.id))
                        .map(|p| vec![p.title.clone(), len_text(p.len), p.id.to_string()])
                        .collect(),
                )
            }
            2 => {
                let ks: Vec<i32> = (0..rng.random_range(1..30))
                    .map(|_| key(&mut rng))
                    .collect();
                let set: BTreeSet<i32> = ks.iter().copied().collect();
                let min = rng.random_range(0..10_000);
                (
                    format!(
                        "SELECT id, len FROM page WHERE id IN ({}) AND len >= {min}",
                        list(&ks)
                    ),
                    data.iter()
                        .filter(|p| set.contains(&p.id) && p.len.is_some_and(|l| l >= min))
                        .map(|p| vec![p.id.to_string(), len_text(p.len)])
                        .collect(),
                )
            }
            _ => {
                let nss: Vec<i32> = (0..rng.random_range(1..4))
                    .map(|_| rng.random_range(0..10))
                    .collect();
                let titles: Vec<String> = (0..rng.random_range(1..4))
                    .map(|_| format!("t{}", rng.random_range(0..210)))
                    .collect();
                let quoted: Vec<String> = titles.iter().map(|t| format!("'{t}'")).collect();
                (
                    format!(
                        "SELECT ns, title, len FROM page WHERE ns IN ({}) AND title IN ({})",
                        list(&nss),
                        quoted.join(", ")
                    ),
                    data.iter()
                        .filter(|p| nss.contains(&p.ns) && titles.contains(&p.title))
                        .map(|p| vec![p.ns.to_string(), p.title.clone(), len_text(p.len)])
                        .collect(),
                )
            }
        };
        let p = plan_text(&cached, &sql);
        assert!(p.contains("path=index-cache"), "{sql}:\n{p}");
        assert!(!plan_text(&heap, &sql).contains("index-cache"), "{sql}");
        let want = sorted(want);
        // Twice: the first run fills, the second hits what stayed.
        for _ in 0..2 {
            assert_eq!(sorted(query(&cached, &sql)), want, "{sql}");
        }
        assert_eq!(sorted(query(&heap, &sql)), want, "{sql}");
        let out = plan_text(&cached, &format!("ANALYZE {sql}"));
        assert_eq!(
            counter(&out, "output_rows"),
            want.len() as u64,
            "{sql}:\n{out}"
        );
        hits += counter(&out, "cache_hits");
    }
    assert!(hits > 0, "no lookup ever hit the cache");
}

/// `auto` (the default): each lookup goes through the cache or around it,
/// as the index's governor chooses; the rows are the heap path's and every
/// entry is counted once, as a hit, a miss or an entry read without the cache.
#[test]
fn auto_answers_every_lookup_either_way_with_the_heap_paths_rows() {
    let data = pages(3000, 8);
    let (_d, db) = setup(&data);
    let auto = SqlSession::new(db.clone()).unwrap();
    let heap = SqlSession::new(db).unwrap();
    heap.set("strata.index_cache", "off").unwrap();
    let mut rng = SmallRng::seed_from_u64(9);
    let (mut through, mut around) = (0, 0);
    for _ in 0..40 {
        let ids: Vec<i32> = (0..150).map(|_| rng.random_range(-5..1600)).collect();
        let sql = format!(
            "SELECT id, ns, title, len FROM page WHERE id IN ({})",
            list(&ids)
        );
        let want = sorted(query(&heap, &sql));
        assert_eq!(sorted(query(&auto, &sql)), want, "{sql}");
        let out = plan_text(&auto, &format!("ANALYZE {sql}"));
        assert!(out.contains("path=index-cache via page_id"), "{out}");
        let (hits, misses, plain) = (
            counter(&out, "cache_hits"),
            counter(&out, "cache_misses"),
            counter(&out, "entries_without_cache"),
        );
        assert_eq!(
            hits + misses + plain,
            counter(&out, "index_entries"),
            "{out}"
        );
        assert_eq!(counter(&out, "output_rows"), want.len() as u64, "{out}");
        through += hits + misses;
        around += plain;
    }
    // The first window explores the way not chosen one lookup in 16.
    assert!(through > 0 && around > 0, "{through} {around}");
}

#[test]
fn a_second_run_hits_the_cache_and_touches_fewer_pages() {
    let data = pages(3000, 4);
    let (_d, db) = setup(&data);
    let s = SqlSession::new(db).unwrap();
    s.set("strata.index_cache", "on").unwrap();
    let ids: Vec<i32> = (0..150).map(|i| i * 7).collect();
    let sql = format!(
        "ANALYZE SELECT ns, title, len FROM page WHERE id IN ({})",
        list(&ids)
    );
    let entries = data.iter().filter(|p| ids.contains(&p.id)).count() as u64;
    let first = plan_text(&s, &sql);
    assert!(first.contains("path=index-cache via page_id"), "{first}");
    assert_eq!(counter(&first, "index_keys"), ids.len() as u64, "{first}");
    assert_eq!(counter(&first, "index_entries"), entries, "{first}");
    assert_eq!(counter(&first, "cache_hits"), 0, "{first}");
    assert_eq!(counter(&first, "cache_misses"), entries, "{first}");
    assert!(counter(&first, "cache_fills") > 0, "{first}");
    let second = plan_text(&s, &sql);
    let (hits, misses) = (
        counter(&second, "cache_hits"),
        counter(&second, "cache_misses"),
    );
    assert_eq!(hits + misses, entries, "{second}");
    assert!(hits > 0, "{second}");
    assert!(misses < counter(&first, "cache_misses"), "{second}");
    // Each miss read a heap page through the pool; a hit does not.
    assert!(
        counter(&second, "pool_page_accesses") + hits <= counter(&first, "pool_page_accesses"),
        "first:\n{first}\nsecond:\n{second}"
    );
    // The heap path reads every heap tuple every time.
    s.set("strata.index_cache", "false").unwrap();
    s.set("strata.access_path", "index").unwrap();
    let heap = plan_text(&s, &sql);
    assert!(counter(&heap, "heap_pages") > 0, "{heap}");
}

#[test]
fn updates_and_deletes_are_seen_by_the_next_select() {
    let data = pages(2000, 5);
    let (_d, db) = setup(&data);
    let s = SqlSession::new(db.clone()).unwrap();
    s.set("strata.index_cache", "on").unwrap();
    let heap = SqlSession::new(db).unwrap();
    heap.set("strata.index_cache", "false").unwrap();
    let mut rng = SmallRng::seed_from_u64(6);
    let ids: Vec<i32> = (0..40).map(|_| rng.random_range(0..1000)).collect();
    let select = format!(
        "SELECT id, ns, title, len FROM page WHERE id IN ({})",
        list(&ids)
    );
    let analyze = format!("ANALYZE {select}");
    // Warm: the second run hits.
    query(&s, &select);
    assert!(counter(&plan_text(&s, &format!("ANALYZE {select}")), "cache_hits") > 0);
    for step in 0..30 {
        let k = ids[rng.random_range(0..ids.len())];
        let change = match step % 5 {
            0 | 1 => format!("UPDATE page SET len = {} WHERE id = {k}", 20_000 + step),
            2 => format!("UPDATE page SET title = 'new{step}', ns = 9 WHERE id = {k}"),
            3 => format!("UPDATE page SET len = NULL WHERE id = {k}"),
            // The key itself changes: the rows leave this key.
            _ => format!("UPDATE page SET id = {} WHERE id = {k}", 5000 + step),
        };
        run(&s, &change);
        let out = plan_text(&s, &analyze);
        assert!(out.contains("path=index-cache"), "{out}");
        assert_eq!(
            sorted(query(&s, &select)),
            sorted(query(&heap, &select)),
            "after {change}"
        );
    }
    // A changed value is the new one from the cache path, never the old.
    run(
        &s,
        &format!("UPDATE page SET len = 77777 WHERE id = {}", ids[0]),
    );
    let got = query(&s, &format!("SELECT len FROM page WHERE id = {}", ids[0]));
    assert!(got.iter().all(|r| r[0] == "77777"), "{got:?}");
    run(&s, &format!("DELETE FROM page WHERE id = {}", ids[0]));
    assert!(query(&s, &format!("SELECT len FROM page WHERE id = {}", ids[0])).is_empty());
    assert_eq!(sorted(query(&s, &select)), sorted(query(&heap, &select)));
}

#[test]
fn a_transaction_reads_its_own_writes_and_others_read_the_committed_values() {
    let data = pages(600, 7);
    let (_d, db) = setup(&data);
    let s = SqlSession::new(db.clone()).unwrap();
    let other = SqlSession::new(db).unwrap();
    for session in [&s, &other] {
        session.set("strata.index_cache", "on").unwrap();
    }
    run(&s, "CREATE TABLE audit (n INT)");
    let k = data[10].id;
    let select = format!("SELECT len FROM page WHERE id = {k}");
    let before = sorted(query(&s, &select));
    assert!(!before.is_empty());
    // Warm the cache, so a stale hit would show.
    query(&s, &select);
    let out = plan_text(&s, &format!("ANALYZE {select}"));
    assert!(counter(&out, "cache_hits") > 0, "{out}");

    // A transaction that changed only another table still uses the cache.
    run(&s, "BEGIN");
    run(&s, "INSERT INTO audit VALUES (1)");
    assert!(plan_text(&s, &select).contains("path=index-cache"));
    assert_eq!(sorted(query(&s, &select)), before);
    // Once it changes `page`, its reads of `page` go to the heap.
    run(&s, &format!("UPDATE page SET len = 4242 WHERE id = {k}"));
    let p = plan_text(&s, &select);
    assert!(!p.contains("StrataIndexCacheExec"), "{p}");
    assert!(
        p.contains("index cache not used: this transaction changed page"),
        "{p}"
    );
    let n = before.len();
    assert_eq!(query(&s, &select), vec![vec!["4242".to_string()]; n]);
    // Another session reads the committed values meanwhile, from the cache.
    assert!(plan_text(&other, &select).contains("path=index-cache"));
    assert_eq!(sorted(query(&other, &select)), before);
    run(&s, "ROLLBACK");
    assert!(plan_text(&s, &select).contains("path=index-cache"));
    assert_eq!(sorted(query(&s, &select)), before);
    assert_eq!(sorted(query(&other, &select)), before);

    // Committed: everybody sees the new value through the cache.
    run(&s, "BEGIN");
    run(&s, &format!("UPDATE page SET len = 4343 WHERE id = {k}"));
    assert_eq!(query(&s, &select), vec![vec!["4343".to_string()]; n]);
    assert_eq!(sorted(query(&other, &select)), before);
    run(&s, "COMMIT");
    for sess in [&s, &other] {
        assert!(plan_text(sess, &select).contains("path=index-cache"));
        for _ in 0..2 {
            assert_eq!(query(sess, &select), vec![vec!["4343".to_string()]; n]);
        }
    }
}

#[test]
fn declared_with_sql_and_shown_by_explain_analyze() {
    let (_d, db) = common::empty_db();
    let s = SqlSession::new(Arc::new(db)).unwrap();
    s.set("strata.index_cache", "on").unwrap();
    run(
        &s,
        "CREATE TABLE page (id INT NOT NULL, ns INT NOT NULL, title VARCHAR(20) NOT NULL, len INT)",
    );
    run(
        &s,
        "INSERT INTO page VALUES (1, 0, 'Main', 10), (2, 0, 'Help', 20), (2, 1, 'Talk', 30), (3, 4, 'Misc', NULL)",
    );
    run(
        &s,
        "CREATE INDEX page_id ON page (id) WITH (cache = 'ns, title, len')",
    );
    let sql = "SELECT ns, title, len FROM page WHERE id IN (2, 3, 9) ORDER BY ns";
    let want = vec![
        vec!["0".to_string(), "Help".into(), "20".into()],
        vec!["1".to_string(), "Talk".into(), "30".into()],
        vec!["4".to_string(), "Misc".into(), "NULL".into()],
    ];
    assert_eq!(query(&s, sql), want);
    assert_eq!(query(&s, sql), want);
    let out = plan_text(&s, &format!("ANALYZE {sql}"));
    assert!(
        out.contains(
            "path=index-cache via page_id (caches ns, title, len), keys=3 [id IN (2, 3, 9)]"
        ),
        "{out}"
    );
    assert_eq!(counter(&out, "index_entries"), 3, "{out}");
    assert_eq!(counter(&out, "cache_hits"), 3, "{out}");
    assert_eq!(counter(&out, "cache_misses"), 0, "{out}");
    // No column at all (count), and a LIMIT the scan stops at.
    let count = "SELECT count(*) FROM page WHERE id IN (2, 3, 9)";
    assert!(plan_text(&s, count).contains("path=index-cache"));
    assert_eq!(query(&s, count), vec![vec!["3".to_string()]]);
    let limited = "SELECT title FROM page WHERE id IN (1, 2, 3) LIMIT 2";
    assert!(plan_text(&s, limited).contains("limit=2"));
    assert_eq!(query(&s, limited).len(), 2);
    // Dropping the cache gives the ordinary scan, with the same rows.
    run(&s, "DROP INDEX page_id");
    run(&s, "CREATE INDEX page_id ON page (id)");
    assert!(!plan_text(&s, sql).contains("index-cache"));
    assert_eq!(query(&s, sql), want);
}
