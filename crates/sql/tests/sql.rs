//! SQL over strata against a model: the flash paper's ordered plans return
//! the rows in key order; EXPLAIN ANALYZE shows strata's counters; a scan split
//! into parts reads each page once and answers what a model of the rows
//! answers; the optimizer follows its (possibly stale) statistics. (Every
//! access path's answers and plans over an indexed table, and bad statements'
//! errors, are `tests/slt/access_paths.slt`.)

use crate::common;

use std::sync::Arc;

use common::{counter, query};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_sql::SqlSession;
use strata_storage::Database;
use strata_storage::db::{IndexSpec, NoProgress, TableOptions};
use strata_storage::row::{Schema, Value, days_from_civil};

#[derive(Clone, Debug)]
struct Row {
    id: i32,
    grp: i32,
    cents: i64,
    day: i32,
    name: Option<String>,
}

fn rows(n: i32, grp_base: i32, seed: u64) -> Vec<Row> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let base = days_from_civil(1995, 1, 1);
    (0..n)
        .map(|i| Row {
            id: grp_base * 10 + i,
            grp: grp_base + rng.random_range(0..1000),
            cents: rng.random_range(0..100_000),
            day: base + rng.random_range(0..365),
            name: (i % 7 != 0).then(|| format!("n{}", i % 97)),
        })
        .collect()
}

fn values(r: &Row) -> Vec<Value> {
    vec![
        Value::Int32(r.id),
        Value::Int32(r.grp),
        Value::Decimal(r.cents),
        Value::Date(r.day),
        r.name.clone().map_or(Value::Null, Value::Str),
    ]
}

fn load(db: &Database, data: &[Row], create: bool) {
    let mut l = if create {
        db.begin_create_load(
            "t",
            Schema::parse("id INT, grp INT, price DECIMAL(12,2), day DATE, name VARCHAR(20) NULL")
                .unwrap(),
            TableOptions::default(),
            vec![
                IndexSpec::new("t_grp", &["grp"]),
                IndexSpec::new("t_day", &["day"]),
            ],
        )
        .unwrap()
    } else {
        db.begin_load("t").unwrap()
    };
    for r in data {
        l.append(&values(r)).unwrap();
    }
    l.commit(&NoProgress).unwrap();
}

fn setup(n: i32) -> (tempfile::TempDir, Vec<Row>, Arc<Database>) {
    let (dir, db) = common::empty_db();
    let data = rows(n, 0, 7);
    load(&db, &data, true);
    (dir, data, Arc::new(db))
}

fn plan_text(s: &SqlSession, sql: &str) -> String {
    query(s, &format!("EXPLAIN {sql}"))
        .into_iter()
        .map(|r| r.join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

fn money(c: i64) -> String {
    format!("{}.{:02}", c / 100, c % 100)
}

/// `GROUP BY g ... count(*), sum(price)` by a model: the rows `group` gives a
/// group, in group order.
fn count_and_sum(data: &[Row], group: impl Fn(&Row) -> Option<i32>) -> Vec<Vec<String>> {
    let mut by: std::collections::BTreeMap<i32, (u64, i64)> = Default::default();
    for r in data {
        if let Some(g) = group(r) {
            let e = by.entry(g).or_default();
            e.0 += 1;
            e.1 += r.cents;
        }
    }
    by.into_iter()
        .map(|(g, (n, c))| vec![g.to_string(), n.to_string(), money(c)])
        .collect()
}

#[test]
fn the_flash_papers_ordered_plans_are_session_settings() {
    let (_d, data, db) = setup(20_000);
    let s = SqlSession::new(db).unwrap();
    s.set("strata.sort_memory", "256KiB").unwrap();
    let sql = "SELECT grp, id FROM t WHERE grp BETWEEN 100 AND 700 ORDER BY grp";
    let mut want: Vec<(i32, i32)> = data
        .iter()
        .filter(|r| (100..=700).contains(&r.grp))
        .map(|r| (r.grp, r.id))
        .collect();
    want.sort();
    for plan in ["idx", "sidx+ps", "sidx+es", "fts+ps", "fts+es"] {
        s.set("strata.ordered_plan", plan).unwrap();
        let p = plan_text(&s, sql);
        assert!(
            p.contains(&format!("ordered by {}", plan.to_uppercase())),
            "{plan}:\n{p}"
        );
        assert!(!p.contains("SortExec"), "{plan}:\n{p}");
        let mut got: Vec<(i32, i32)> = query(&s, sql)
            .iter()
            .map(|r| (r[0].parse().unwrap(), r[1].parse().unwrap()))
            .collect();
        assert!(
            got.windows(2).all(|w| w[0].0 <= w[1].0),
            "{plan}: not in key order"
        );
        got.sort();
        assert_eq!(got, want, "{plan}");
    }
}

#[test]
fn explain_analyze_shows_strata_counters() {
    let (dir, data, db) = setup(20_000);
    let s = SqlSession::new(db).unwrap();
    s.set("strata.access_path", "index").unwrap();
    let out = plan_text(&s, "ANALYZE SELECT id FROM t WHERE grp = 5");
    let matches = data.iter().filter(|r| r.grp == 5).count();
    assert!(out.contains(&format!("index_entries={matches}")), "{out}");
    assert!(out.contains(&format!("output_rows={matches}")), "{out}");
    for counter in [
        "heap_pages=",
        "io_requests=",
        "pages_read=",
        "random_reads=",
        "sequential_reads=",
        "mode_changes=",
    ] {
        assert!(out.contains(counter), "{counter} missing:\n{out}");
    }
    // The statement's total time is the last line (issue 54); a real
    // device's I/O is not modeled, so no modeled time is shown.
    let last = out.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("Total time ") && last.contains(" ms"),
        "{out}"
    );
    assert!(!out.contains("modeled_io_time"), "{out}");
    // Smooth Scan over most of the table morphs, and says so.
    s.set("strata.access_path", "smooth").unwrap();
    let out = plan_text(&s, "ANALYZE SELECT count(*) FROM t WHERE grp >= 1");
    let changes = counter(&out, "mode_changes");
    assert!(changes >= 1, "{out}");
    // On a modeled device the modeled I/O time is shown.
    drop(s);
    let mut opts = common::options().device("ssd").unwrap();
    opts.direct_io = false;
    let db = Arc::new(Database::open(&dir.path().join("db"), opts).unwrap());
    let s = SqlSession::new(db).unwrap();
    s.set("strata.access_path", "index").unwrap();
    let out = plan_text(&s, "ANALYZE SELECT id FROM t WHERE grp = 5");
    assert!(out.contains("modeled_io_time="), "{out}");
}

#[test]
fn a_full_scan_split_into_parts_reads_every_page_once_and_answers_the_same() {
    let (_d, data, db) = setup(60_000);
    let pages = db.table("t").unwrap().heap().num_pages();
    let s = SqlSession::new(db).unwrap();
    s.set("strata.access_path", "full").unwrap();
    let cut = days_from_civil(1995, 7, 1);
    // The model: per group below 50, rows and cents of the days before `cut`.
    let want = count_and_sum(&data, |r| (r.day < cut && r.grp < 50).then_some(r.grp));
    let sql = "SELECT grp, count(*), sum(price) FROM t \
               WHERE day < DATE '1995-07-01' AND grp < 50 GROUP BY grp ORDER BY grp";
    let selected = data.iter().filter(|r| r.grp < 500).count() as u64;
    for parts in [1u64, 2, 3, 7] {
        s.set("strata.scan_partitions", &parts.to_string()).unwrap();
        let plan = plan_text(&s, "SELECT id FROM t WHERE grp < 500");
        assert_eq!(
            plan.contains(&format!("{parts} parts split at heap pages")),
            parts > 1,
            "{parts} parts:\n{plan}"
        );
        assert_eq!(query(&s, sql), want, "{parts} parts");
        // Every heap page read once, in all, by the parts together.
        let out = plan_text(&s, "ANALYZE SELECT id FROM t WHERE grp < 500");
        assert_eq!(counter(&out, "heap_pages"), pages, "{parts} parts:\n{out}");
        assert_eq!(counter(&out, "pages_read"), pages, "{parts} parts:\n{out}");
        assert_eq!(
            query(&s, "SELECT count(*) FROM t WHERE grp < 500"),
            vec![vec![selected.to_string()]],
            "{parts} parts"
        );
    }
    // A scan that wants its first rows or key order stays whole.
    s.set("strata.scan_partitions", "4").unwrap();
    let plan = plan_text(&s, "SELECT id FROM t WHERE grp < 500 LIMIT 3");
    assert!(!plan.contains("parts split"), "{plan}");
    let plan = plan_text(&s, "SELECT grp FROM t WHERE grp < 500 ORDER BY grp");
    assert!(!plan.contains("parts split"), "{plan}");
    // Under auto, a table of fewer than two parts' worth of pages is one.
    assert!(pages < 2 * strata_sql::scan::scan_exec::MIN_PART_PAGES);
    s.set("strata.scan_partitions", "auto").unwrap();
    let plan = plan_text(&s, "SELECT id FROM t WHERE grp < 500");
    assert!(!plan.contains("parts split"), "{plan}");
    let e = s
        .set("strata.scan_partitions", "0")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("strata.scan_partitions") && e.contains("'0'"),
        "{e}"
    );
}

#[test]
fn a_smooth_scan_split_into_parts_walks_the_index_once_and_answers_the_same() {
    let (_d, data, db) = setup(60_000);
    let pages = db.table("t").unwrap().heap().num_pages();
    let s = SqlSession::new(db).unwrap();
    // A range the walk morphs into a sweep of the heap (day < 1995-07-01 is
    // most of it), a narrow one read as the pages the index names, and one
    // with no rows.
    for (pred, keep) in [
        (
            "day < DATE '1995-07-01'",
            &(|r: &Row| r.day < days_from_civil(1995, 7, 1)) as &dyn Fn(&Row) -> bool,
        ),
        ("grp BETWEEN 40 AND 49", &|r: &Row| {
            (40..50).contains(&r.grp)
        }),
        ("grp < 0", &|r: &Row| r.grp < 0),
    ] {
        // The model: per group, rows and cents.
        let want = count_and_sum(&data, |r| keep(r).then_some(r.grp % 10));
        let sql = format!(
            "SELECT grp % 10, count(*), sum(price) FROM t WHERE {pred} GROUP BY grp % 10 ORDER BY grp % 10"
        );
        let scan = format!("SELECT id FROM t WHERE {pred}");
        let mut one = None;
        for parts in [1u64, 2, 3, 7] {
            s.set("strata.scan_partitions", &parts.to_string()).unwrap();
            let plan = plan_text(&s, &scan);
            assert!(plan.contains("path=smooth via"), "{plan}");
            assert_eq!(
                plan.contains(&format!("{parts} parts sharing one index walk")),
                parts > 1,
                "{parts} parts:\n{plan}"
            );
            assert_eq!(query(&s, &sql), want, "{pred}, {parts} parts");
            // The parts together read the heap pages one scan reads, each
            // once, and the index entries once.
            let out = plan_text(&s, &format!("ANALYZE {scan}"));
            let got = [
                "heap_pages",
                "heap_pages_read_twice",
                "index_entries",
                "mode_changes",
            ]
            .map(|c| counter(&out, c));
            assert!(got[0] <= pages, "{pred}, {parts} parts:\n{out}");
            assert_eq!(got[1], 0, "{pred}, {parts} parts:\n{out}");
            match one {
                None => one = Some(got),
                Some(one) => assert_eq!(got, one, "{pred}, {parts} parts:\n{out}"),
            }
        }
    }
    // Key order and LIMIT keep one part.
    s.set("strata.scan_partitions", "4").unwrap();
    for sql in [
        "SELECT grp FROM t WHERE grp < 500 ORDER BY grp",
        "SELECT id FROM t WHERE grp < 500 LIMIT 3",
    ] {
        let plan = plan_text(&s, sql);
        assert!(!plan.contains("parts sharing"), "{plan}");
    }
}

#[test]
fn the_optimizer_follows_its_statistics_even_when_stale() {
    let (_d, _data, db) = setup(60_000);
    let s = SqlSession::new(db.clone()).unwrap();
    s.set("strata.access_path", "optimizer").unwrap();
    s.execute("ANALYZE t").unwrap();
    // ~60 rows of ~220 pages: a bitmap (sort) scan; most of the table: full.
    let p = plan_text(&s, "SELECT * FROM t WHERE grp = 5");
    assert!(p.contains("optimizer chose sort"), "{p}");
    let p = plan_text(&s, "SELECT * FROM t WHERE grp >= 100");
    assert!(p.contains("optimizer chose full"), "{p}");
    // Load as many rows again, all with grp in [5000, 6000): the statistics
    // say no such rows exist (an estimate of one row), so the optimizer takes
    // the plain index scan for half the table.
    load(&db, &rows(60_000, 5000, 8), false);
    let s = SqlSession::new(db).unwrap();
    s.set("strata.access_path", "optimizer").unwrap();
    let p = plan_text(&s, "SELECT * FROM t WHERE grp >= 5000");
    assert!(p.contains("optimizer chose index"), "{p}");
    assert!(p.contains("of 60000 rows"), "{p}");
    let n = query(&s, "SELECT count(*) FROM t WHERE grp >= 5000");
    assert_eq!(n, vec![vec!["60000".to_string()]]);
    s.execute("ANALYZE").unwrap();
    let p = plan_text(&s, "SELECT * FROM t WHERE grp >= 5000");
    assert!(p.contains("optimizer chose full"), "{p}");
    assert!(p.contains("of 120000 rows"), "{p}");
}
