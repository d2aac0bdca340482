//! Query shapes over cold tables that MJoin must handle beyond TPC-H, and
//! what a statement over a cold table reports (issue 53, items 2 and 8):
//!
//! * scans that project no column (`count(*)`, cross joins whose sides are
//!   only filtered, `EXISTS`) give the local answers, out of order and
//!   pulled;
//! * the statement's I/O counters are the cold tier's requests and bytes,
//!   out of order and pulled, and EXPLAIN ANALYZE shows MJoin's;
//! * EXPLAIN labels a cold scan MJoin reads object by object with what runs,
//!   not with the index path it would take on a local table.

use std::sync::Arc;

use strata_cold::client::memory_factory;
use strata_cold::device::{ColdConfig, ColdTier};
use strata_cold::tier::{self, TierOptions};
use strata_sql::SqlSession;
use strata_sql::shell::format::{Format, render};
use strata_storage::Database;
use strata_storage::db::DbOptions;

fn options(tier: &ColdTier) -> DbOptions {
    crate::common::cold_options(tier)
}

/// Queries whose scans project no column somewhere, and their neighbours.
const QUERIES: &[&str] = &[
    "SELECT count(*) FROM a",
    "SELECT count(*) FROM a WHERE x < 700",
    "SELECT count(*) FROM a WHERE s LIKE 'v1%'",
    "SELECT count(*) FROM a, b WHERE a.y = b.y",
    "SELECT count(*) FROM a, b WHERE a.x < 30 AND b.x < 20",
    "SELECT count(*), sum(a.x) FROM a, b WHERE b.x < 5",
    "SELECT count(*) FROM a JOIN b ON a.y = b.y WHERE b.s LIKE 'v1%'",
    "SELECT count(*) FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.y = a.y)",
    "SELECT count(*) FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.y = a.y)",
    "SELECT count(*) FROM b WHERE EXISTS (SELECT 1 FROM a WHERE a.x < 3)",
    "SELECT count(*) FROM b WHERE y IN (SELECT y FROM a WHERE x < 50)",
    "SELECT count(*) FROM (SELECT DISTINCT y FROM a) t",
];

fn answer(s: &SqlSession, sql: &str) -> String {
    let r = s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    format!(
        "{sql}\n{}",
        render(Format::Csv, &r.schema, &r.batches).unwrap()
    )
}

fn answers(s: &SqlSession) -> Vec<String> {
    QUERIES.iter().map(|q| answer(s, q)).collect()
}

fn values(rows: std::ops::Range<i64>, y_mod: i64) -> String {
    rows.map(|i| format!("({i}, {}, 'v{}')", i % y_mod, i * 7 % 1000))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A database with tables `a` (2000 rows, index on x) and `b` (500 rows)
/// moved to an in-memory cold tier in one-page objects, opened again; with
/// the answers of [`QUERIES`] while the tables were local.
fn cold_db() -> (tempfile::TempDir, Arc<Database>, ColdTier, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let tier = ColdTier::with_factory(ColdConfig::default(), memory_factory());
    let db = Arc::new(Database::create(&path, options(&tier)).unwrap());
    let s = SqlSession::new(db.clone()).unwrap();
    for sql in [
        "CREATE TABLE a (x INT NOT NULL, y INT, s VARCHAR(20))".to_string(),
        "CREATE TABLE b (x INT NOT NULL, y INT, s VARCHAR(20))".to_string(),
        format!("INSERT INTO a VALUES {}", values(0..2000, 97)),
        format!("INSERT INTO b VALUES {}", values(0..500, 131)),
        "CREATE INDEX a_x ON a (x)".to_string(),
        "ANALYZE a".to_string(),
    ] {
        s.execute(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let local = answers(&s);
    drop(s);
    let opts = TierOptions {
        object_bytes: 8192,
        ..TierOptions::new("http://csd.test:9000")
    };
    for t in ["a", "b"] {
        let r = tier::to_cold(&db, &tier, t, &opts).unwrap();
        // Each heap in several objects: MJoin has subplans to combine.
        assert!(r.objects > 1, "{t}: {r:?}");
    }
    drop(Arc::into_inner(db).unwrap());
    let db = Arc::new(Database::open(&path, options(&tier)).unwrap());
    assert!(db.table("a").unwrap().is_cold());
    (dir, db, tier, local)
}

#[test]
fn scans_projecting_no_column_give_the_local_answers_out_of_order_and_pulled() {
    let (_dir, db, _tier, local) = cold_db();
    let s = SqlSession::new(db.clone()).unwrap();
    let mjoin = answers(&s);
    for (l, c) in local.iter().zip(&mjoin) {
        assert_eq!(l, c, "out of order (MJoin)");
    }
    // The plans really are MJoin's.
    let plan = answer(
        &s,
        "EXPLAIN SELECT count(*) FROM a, b WHERE a.x < 30 AND b.x < 20",
    );
    assert!(
        plan.contains("MJoinExec: relations=[a (cold), b (cold)]"),
        "{plan}"
    );
    s.set("strata.skipper", "false").unwrap();
    let pulled = answers(&s);
    for (l, c) in local.iter().zip(&pulled) {
        assert_eq!(l, c, "pulled");
    }
}

/// The `name=N` metric of the first plan line containing `op`.
fn metric(plan: &str, op: &str, name: &str) -> u64 {
    let line = plan
        .lines()
        .find(|l| l.contains(op))
        .unwrap_or_else(|| panic!("no {op} in\n{plan}"));
    let at = line
        .find(&format!(" {name}="))
        .or_else(|| line.find(&format!("[{name}=")))
        .unwrap_or_else(|| panic!("no {name} in {line}"));
    line[at + name.len() + 2..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .unwrap_or_else(|e| panic!("{name} in {line}: {e}"))
}

#[test]
fn a_statements_io_is_the_cold_tiers_requests_and_bytes() {
    let (_dir, db, tier, _) = cold_db();
    let s = SqlSession::new(db.clone()).unwrap();
    for skipper in ["true", "false"] {
        s.set("strata.skipper", skipper).unwrap();
        let before = tier.counters();
        let r = s.execute("SELECT sum(y), count(s) FROM a").unwrap();
        let c = tier.counters() - before;
        assert!(c.gets > 0 && c.bytes_fetched > 0, "skipper={skipper}: {c}");
        assert_eq!(
            (r.io.read_requests, r.io.bytes_read()),
            (c.gets - c.retries, c.bytes_fetched),
            "skipper={skipper}: the statement's I/O {:?} against the tier's {c}",
            r.io
        );
    }
    s.set("strata.skipper", "true").unwrap();
    let before = tier.counters();
    let plan = answer(&s, "EXPLAIN ANALYZE SELECT count(*) FROM a WHERE x < 700");
    let c = tier.counters() - before;
    assert_eq!(metric(&plan, "MJoinExec", "io_requests"), c.gets, "{plan}");
    assert_eq!(
        metric(&plan, "MJoinExec", "pages_read") * 8192,
        c.bytes_fetched,
        "{plan}"
    );
}

#[test]
fn explain_labels_a_cold_scan_with_what_runs() {
    let (_dir, db, _tier, _) = cold_db();
    let s = SqlSession::new(db.clone()).unwrap();
    for path in ["index", "smooth", "optimizer"] {
        s.set("strata.access_path", path).unwrap();
        let plan = answer(&s, "EXPLAIN SELECT count(*) FROM a WHERE x < 700");
        let scan = plan
            .lines()
            .find(|l| l.contains("StrataScanExec: table=a"))
            .unwrap_or_else(|| panic!("{plan}"));
        assert!(!scan.contains("a_x"), "{path}: {scan}");
        assert!(
            scan.contains("path=cold objects, each read whole by MJoin"),
            "{path}: {scan}"
        );
    }
    // Pulled, the planned path runs, through the cold tier's cache.
    s.set("strata.skipper", "false").unwrap();
    s.set("strata.access_path", "index").unwrap();
    let plan = answer(&s, "EXPLAIN SELECT count(*) FROM a WHERE x < 700");
    assert!(plan.contains("path=index via a_x"), "{plan}");
}
