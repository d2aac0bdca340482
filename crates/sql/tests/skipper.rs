//! Skipper's out-of-order execution (MJoin, §4.1–4.3) over tables on the cold
//! tier: the 22 TPC-H queries (SF 0.01) give the local answers under every
//! MJoin cache size down to the smallest that holds one object of each input
//! (found per query from the refusal of a smaller one), with both eviction
//! policies — and with the small caches, evictions and reissues really
//! happen (counted from MJoin's reports). EXPLAIN shows MJoin where the plan
//! reads cold tables; `strata.skipper = false` is the pull path.

use std::path::Path;
use std::sync::Arc;

use strata_cold::client::memory_factory;
use strata_cold::device::{ColdConfig, ColdTier};
use strata_cold::tier::{self, TierOptions};
use strata_load::{TpchSpec, generate_tpch};
use strata_sql::SqlSession;
use strata_sql::shell::format::{Format, render};
use strata_sql::skipper::exec::REPORT_ENV;
use strata_sql::tpch::QUERIES;
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};

/// A join whose predicate only the first objects of each table satisfy.
const PRUNED: &str = "SELECT count(*), sum(l_quantity) FROM orders, lineitem \
     WHERE o_orderkey = l_orderkey AND o_orderkey < 200 AND l_orderkey < 200";

fn options(tier: &ColdTier) -> DbOptions {
    DbOptions {
        buffer_pool_bytes: 4 << 20,
        direct_io: false,
        cold_tier: Some(tier.layer()),
        ..DbOptions::default()
    }
}

fn answer(s: &SqlSession, name: &str, sql: &str) -> String {
    let r = s
        .execute(sql.trim().trim_end_matches(';'))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    format!(
        "{name}\n{}",
        render(Format::Csv, &r.schema, &r.batches).unwrap()
    )
}

/// MJoin reports (one JSON object per line) appended since line `from`.
fn reports(file: &Path, from: usize) -> Vec<serde_json::Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .skip(from)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .collect()
}

fn lines(file: &Path) -> usize {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .count()
}

fn sum(reports: &[serde_json::Value], key: &str) -> u64 {
    reports.iter().map(|r| r[key].as_u64().unwrap()).sum()
}

/// Reports of MJoins that ran to the end (not refused, not stopped early).
fn complete(reports: &[serde_json::Value]) -> Vec<serde_json::Value> {
    reports
        .iter()
        .filter(|r| r["complete"].as_bool() == Some(true))
        .cloned()
        .collect()
}

/// The exact smallest MJoin cache for `sql`: raised to what each refusal
/// names until none is refused (a query may run several MJoins); `None`
/// when the query runs no MJoin over cold objects.
fn minimum_cache(s: &SqlSession, sql: &str) -> Option<u64> {
    let mut min = 1u64;
    loop {
        s.execute(&format!("SET strata.skipper_cache = '{min}'"))
            .unwrap();
        let Err(e) = s.execute(sql.trim().trim_end_matches(';')) else {
            return (min > 1).then_some(min);
        };
        let e = e.to_string();
        assert!(e.contains("strata.skipper_cache"), "{e}");
        let n: u64 = e
            .split("needs at least ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("{e}"));
        assert!(n > min, "{e}");
        min = n;
    }
}

#[test]
fn tpch_answers_are_the_same_out_of_order_under_every_cache_size() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("mjoin.jsonl");
    // SAFETY: set before this binary's tests start any query; nothing else
    // in this process reads or writes the environment meanwhile.
    unsafe { std::env::set_var(REPORT_ENV, &report) };
    let path = dir.path().join("db");
    let tier = ColdTier::with_factory(ColdConfig::default(), memory_factory());
    let db = Database::create(&path, options(&tier)).unwrap();
    generate_tpch(Some(&db), &TpchSpec::new(0.01), &NoProgress, |_| {}).unwrap();
    let db = Arc::new(db);
    let s = SqlSession::new(db.clone()).unwrap();
    let local: Vec<String> = QUERIES.iter().map(|(n, q)| answer(&s, n, q)).collect();
    let pruned_local = answer(&s, "pruned", PRUNED);
    drop(s);
    let object = 512u64 << 10;
    let opts = TierOptions {
        object_bytes: object,
        ..TierOptions::new("http://csd.test:9000")
    };
    for t in db.table_names() {
        tier::to_cold(&db, &tier, &t, &opts).unwrap();
    }
    drop(Arc::into_inner(db).unwrap());
    let db = Arc::new(Database::open(&path, options(&tier)).unwrap());
    let s = SqlSession::new(db.clone()).unwrap();

    // EXPLAIN: Q12's join of two cold tables is one MJoin. Planning opens
    // both tables and their indexes without a request to the device (each
    // file's first page, a B-tree's meta page, is kept in its manifest).
    let (_, q12) = QUERIES.iter().find(|(n, _)| *n == "q12").unwrap();
    let before = tier.counters();
    let plan = answer(
        &s,
        "q12",
        &format!("EXPLAIN {}", q12.trim().trim_end_matches(';')),
    );
    let c = tier.counters() - before;
    assert_eq!(c.gets, 0, "planning fetched objects: {c}");
    assert!(
        plan.contains("MJoinExec: relations=[orders (cold), lineitem (cold)]")
            || plan.contains("MJoinExec: relations=[lineitem (cold), orders (cold)]"),
        "{plan}"
    );
    s.execute("SET strata.skipper = false").unwrap();
    let plan = answer(
        &s,
        "q12",
        &format!("EXPLAIN {}", q12.trim().trim_end_matches(';')),
    );
    assert!(!plan.contains("MJoin"), "{plan}");
    // The pull path gives the same answers.
    for ((n, q), l) in QUERIES.iter().zip(&local) {
        assert_eq!(&answer(&s, n, q), l, "pull path");
    }
    s.execute("SET strata.skipper = true").unwrap();

    // A cache that holds everything: one cycle per MJoin, no eviction.
    let from = lines(&report);
    for ((n, q), l) in QUERIES.iter().zip(&local) {
        assert_eq!(&answer(&s, n, q), l, "{n} out of order, 4 GiB cache");
    }
    let big = reports(&report, from);
    assert!(big.len() >= 22, "{} MJoin reports", big.len());
    assert_eq!(sum(&big, "reissues"), 0);
    assert_eq!(sum(&big, "evictions"), 0);
    let big = complete(&big);
    assert!(big.len() >= 22, "{} complete MJoin reports", big.len());
    assert_eq!(
        sum(&big, "executed") + sum(&big, "pruned"),
        sum(&big, "subplans")
    );

    // The smallest cache for each query, and twice that, under both
    // policies: same answers; evictions and reissues happen.
    for policy in ["max-progress", "max-pending"] {
        s.execute(&format!("SET strata.skipper_evict = '{policy}'"))
            .unwrap();
        for factor in [1, 2] {
            let from = lines(&report);
            for ((n, q), l) in QUERIES.iter().zip(&local) {
                let Some(min) = minimum_cache(&s, q) else {
                    continue;
                };
                s.execute(&format!("SET strata.skipper_cache = '{}'", min * factor))
                    .unwrap();
                let t = std::time::Instant::now();
                assert_eq!(
                    &answer(&s, n, q),
                    l,
                    "{n} out of order, {policy}, cache {factor} x {min} bytes"
                );
                println!("{policy} x{factor} {n}: {:.2} s", t.elapsed().as_secs_f64());
            }
            let r = reports(&report, from);
            let (ev, re) = (sum(&r, "evictions"), sum(&r, "reissues"));
            println!(
                "{policy}, {factor} x the smallest cache: {} MJoins, {ev} evictions, {re} reissues, {} requests",
                r.len(),
                sum(&r, "requests")
            );
            assert!(
                ev > 0 && re > 0,
                "{policy} x{factor}: {ev} evictions, {re} reissues"
            );
            assert!(
                sum(&r, "cache_hits") > 0,
                "{policy} x{factor}: no cache hits"
            );
            let r = complete(&r);
            assert_eq!(sum(&r, "executed") + sum(&r, "pruned"), sum(&r, "subplans"));
        }
    }
    // Pruning (§5.2.4): the tables are stored in key order, so all but the
    // first objects of orders and lineitem hold no row with a small key;
    // their subplans are pruned instead of run.
    s.execute("SET strata.skipper_cache = '4GiB'").unwrap();
    let from = lines(&report);
    assert_eq!(answer(&s, "pruned", PRUNED), pruned_local);
    let r = complete(&reports(&report, from));
    assert_eq!(r.len(), 1);
    let (pruned, subplans) = (sum(&r, "pruned"), sum(&r, "subplans"));
    assert!(
        pruned * 2 > subplans,
        "{pruned} of {subplans} subplans pruned"
    );
    assert_eq!(sum(&r, "executed") + pruned, subplans);
    drop(s);
}
