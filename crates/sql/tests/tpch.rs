//! The 22 TPC-H queries through strata's SQL layer against an independent
//! engine: the data is generated once into strata and, from the same batches,
//! into Parquet; DuckDB answers the queries over the Parquet files and
//! `scripts/tpch_check.py` compares its answers with strata's by the TPC-H
//! specification's validation rules (clause 2.1.3.5).
//!
//! The database is loaded as `strata bench tpch` loads it — the orders before
//! 1993 and their lines, `ANALYZE`, then the rest — so it has stale and fresh
//! statistics. All 22 queries run under every access path setting with fresh
//! statistics, under `optimizer` and `smooth` with stale ones (where index
//! nested-loop joins come from small estimates of their outer sides), and with
//! `strata.index_join = on` under `index` and `smooth`; then again under every
//! access path after `strata compact` rewrote every table in its narrowest
//! encodings (types as hints). Then every table moves to a cold storage device — a `strata csd
//! serve` started here, over S3 on loopback — and the 22 queries, reading the
//! tables back object by object through a cache smaller than `lineitem`, must
//! give exactly the local answers (Skipper §3.2's pull-based baseline). Scale
//! factor 0.1 (`STRATA_TPCH_SF` overrides it). DuckDB comes
//! from PyPI, pinned, installed by `.ci/run`; without it the test fails naming
//! the command that installs it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use strata_cold::device::{ColdConfig, ColdTier};
use strata_cold::tier::{TierOptions, to_cold};
use strata_load::{TpchSpec, TpchTable, generate_tpch, load_tpch_history_then_recent};
use strata_sql::SqlSession;
use strata_sql::shell::format::{Format, render};
use strata_sql::tpch::QUERIES;
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};
use strata_storage::maintenance::compact::CompactOptions;
use strata_storage::row::days_from_civil;

const DUCKDB: &str = "duckdb==1.4.4";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// DuckDB is the second implementation the answers are checked against; the
/// test does not install it (`.ci/run` does, pinned), it says what is missing.
fn ensure_duckdb() {
    let probe = Command::new("python3")
        .args(["-c", "import duckdb; print(duckdb.__version__)"])
        .output();
    match probe {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "the TPC-H check needs DuckDB for Python, which python3 cannot import ({}); \
             install it with: python3 -m pip install {DUCKDB}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!(
            "the TPC-H check needs python3 with DuckDB ({e}); install python3, then: \
             python3 -m pip install {DUCKDB}"
        ),
    }
}

/// Runs `queries` under `path`, writing `<out>/<query>.csv` (and the query
/// text to `<qdir>/<query>.sql` for the checker).
fn answer(s: &SqlSession, path: &str, queries: &[(&str, &str)], out: &Path, qdir: &Path) {
    std::fs::create_dir_all(out).unwrap();
    std::fs::create_dir_all(qdir).unwrap();
    s.set("strata.access_path", path).unwrap();
    for (name, sql) in queries {
        let r = s
            .execute(sql.trim().trim_end_matches(';'))
            .unwrap_or_else(|e| panic!("{name} under {path}: {e}"));
        std::fs::write(
            out.join(format!("{name}.csv")),
            render(Format::Csv, &r.schema, &r.batches).unwrap(),
        )
        .unwrap();
        std::fs::write(qdir.join(format!("{name}.sql")), sql).unwrap();
    }
}

/// The scale factor of the tests: 0.1, or `STRATA_TPCH_SF`.
fn scale_factor() -> f64 {
    std::env::var("STRATA_TPCH_SF")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.1)
}

/// The TPC-H tables at `sf` as Parquet files in `dir`, for DuckDB.
fn parquet_for_duckdb(dir: &Path, sf: f64) {
    generate_tpch(
        None,
        &TpchSpec {
            parquet_dir: Some(dir.to_path_buf()),
            ..TpchSpec::new(sf)
        },
        &NoProgress,
        |_| {},
    )
    .unwrap();
}

fn check(parquet: &Path, qdir: &Path, results: &Path, what: &str) {
    let out = Command::new("python3")
        .arg(repo().join("scripts/tpch_check.py"))
        .arg("--parquet")
        .arg(parquet)
        .arg("--queries")
        .arg(qdir)
        .arg("--results")
        .arg(results)
        .output()
        .expect("run python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{what}:\n{text}");
    assert!(
        out.status.success(),
        "{what}: strata's answers differ from DuckDB's:\n{text}"
    );
}

#[test]
fn tpch_answers_match_duckdb_under_every_access_path() {
    ensure_duckdb();
    let sf = scale_factor();
    let dir = tempfile::tempdir().unwrap();
    let pq = dir.path().join("parquet");
    // The cold tier's cache (16 MiB) is smaller than lineitem: the cold
    // queries fetch, evict and fetch again.
    let tier = ColdTier::new(ColdConfig {
        cache_bytes: 16 << 20,
        ..ColdConfig::default()
    });
    let options = || DbOptions {
        buffer_pool_bytes: 64 << 20,
        direct_io: false,
        cold_tier: Some(tier.layer()),
        ..DbOptions::default()
    };
    // Parquet for DuckDB; strata's database loaded as a warehouse is (its
    // history, ANALYZE, then the recent orders), so that it has both stale
    // and fresh statistics, as `strata bench tpch` does.
    parquet_for_duckdb(&pq, sf);
    let db = Arc::new(Database::create(&dir.path().join("db"), options()).unwrap());
    let snapshot = |db: &Database| -> Vec<(String, serde_json::Value)> {
        db.table_names()
            .into_iter()
            .filter_map(|t| Some((t.clone(), db.table_stats(&t).unwrap()?)))
            .collect()
    };
    let mut stale = Vec::new();
    load_tpch_history_then_recent::<Box<dyn std::error::Error>>(
        &db,
        &TpchSpec::new(sf),
        days_from_civil(1993, 1, 1),
        &mut || {
            SqlSession::new(db.clone())?.execute("ANALYZE")?;
            stale = snapshot(&db);
            Ok(())
        },
        &mut |_| {},
        &NoProgress,
    )
    .unwrap();
    let s = SqlSession::new(db.clone()).unwrap();
    s.execute("ANALYZE").unwrap();
    let fresh = snapshot(&db);
    let install = |stats: &[(String, serde_json::Value)]| {
        for (t, v) in stats {
            db.set_table_stats(t, v.clone()).unwrap();
        }
    };

    let all: Vec<(&str, &str)> = QUERIES.to_vec();
    let smooth = dir.path().join("smooth");
    answer(&s, "smooth", &all, &smooth.join("out"), &smooth.join("q"));
    check(
        &pq,
        &smooth.join("q"),
        &smooth.join("out"),
        "all 22 under smooth",
    );
    // Every setting over all 22, with fresh statistics, then the two that
    // read statistics with stale ones (index joins where the optimizer's
    // estimate of an outer side is small), then index joins wherever
    // possible under the classical and the Smooth inner.
    let mut runs: Vec<(&str, &str, &str)> = ["optimizer", "full", "index", "sort", "switch"]
        .iter()
        .map(|p| (*p, "fresh", "auto"))
        .collect();
    runs.extend([
        ("optimizer", "stale", "auto"),
        ("smooth", "stale", "auto"),
        ("index", "fresh", "on"),
        ("smooth", "fresh", "on"),
    ]);
    for (path, stats, index_join) in runs {
        install(if stats == "stale" { &stale } else { &fresh });
        s.set("strata.index_join", index_join).unwrap();
        s.set("strata.access_path", path).unwrap();
        if stats == "stale" {
            // The paper's Q14 plan: an index scan of lineitem, estimated
            // empty, as the outer side of an index join into part.
            let q14 = all.iter().find(|(n, _)| *n == "q14").unwrap().1;
            let r = s
                .execute(&format!("EXPLAIN {}", q14.trim().trim_end_matches(';')))
                .unwrap();
            let plan = render(Format::Csv, &r.schema, &r.batches).unwrap();
            assert!(
                plan.contains("IndexJoinExec: inner=part via part_p_partkey"),
                "{path} with stale statistics: no index join in Q14's plan:\n{plan}"
            );
        }
        let what = format!("{path}-{stats}-{index_join}");
        let d = dir.path().join(&what);
        answer(&s, path, &all, &d.join("out"), &d.join("q"));
        check(
            &pq,
            &d.join("q"),
            &d.join("out"),
            &format!("all 22 under {path}, {stats} statistics, strata.index_join={index_join}"),
        );
    }
    install(&fresh);
    s.set("strata.index_join", "auto").unwrap();

    // Types as hints (No Bits Left Behind §4.1): every table rewritten in the
    // narrowest encodings its values allow, then all 22 again under every
    // access path; the cold runs below read the compacted tables too.
    drop(s);
    let before = db.table("lineitem").unwrap().heap().num_pages();
    for t in db.table_names() {
        db.compact(&t, &CompactOptions::default(), &NoProgress)
            .unwrap_or_else(|e| panic!("compact {t}: {e}"));
    }
    let after = db.table("lineitem").unwrap().heap().num_pages();
    println!("lineitem compacted: {after} pages of {before}");
    assert!(
        (after as f64) <= 0.45 * before as f64,
        "lineitem compacted into {after} pages of {before}"
    );
    let s = SqlSession::new(db.clone()).unwrap();
    for path in ["smooth", "optimizer", "full", "index", "sort", "switch"] {
        let d = dir.path().join(format!("compact-{path}"));
        answer(&s, path, &all, &d.join("out"), &d.join("q"));
        check(
            &pq,
            &d.join("q"),
            &d.join("out"),
            &format!("all 22 under {path}, every table compacted"),
        );
    }
    s.set("strata.access_path", "smooth").unwrap();

    // Every table to a CSD (no delays: the answers are the question here),
    // then the 22 queries again over S3.
    drop(s);
    let (rt, csd) = crate::common::csd_without_delays(&dir.path().join("csd"));
    let opts = TierOptions {
        object_bytes: 4 << 20,
        ..TierOptions::new(&csd.endpoint())
    };
    let tables = db.table_names();
    for t in &tables {
        to_cold(&db, &tier, t, &opts).unwrap_or_else(|e| panic!("tier cold {t}: {e}"));
    }
    drop(Arc::into_inner(db).expect("the only handle"));
    let db = Database::open(&dir.path().join("db"), options()).unwrap();
    let s = SqlSession::new(Arc::new(db)).unwrap();
    let read =
        |d: &Path, name: &str| std::fs::read_to_string(d.join(format!("{name}.csv"))).unwrap();
    // Pulled in plan order through the tier's cache (Skipper §3.2).
    s.set("strata.skipper", "false").unwrap();
    let before = tier.counters();
    let cold = dir.path().join("cold");
    answer(&s, "smooth", &all, &cold.join("out"), &cold.join("q"));
    for (name, _) in &all {
        assert_eq!(
            read(&smooth.join("out"), name),
            read(&cold.join("out"), name),
            "{name}: the answer pulled from the CSD differs from the local one"
        );
    }
    let c = tier.counters() - before;
    println!("the 22 queries pulled from the CSD: {c}");
    assert!(c.gets > 0 && c.evictions > 0, "{c}");
    assert!(c.peak_cached_bytes <= 16 << 20, "{c}");
    // Out of order through MJoin (Skipper §4), its cache a quarter of the
    // data: the same answers again.
    s.set("strata.skipper", "true").unwrap();
    s.set("strata.skipper_cache", "32MiB").unwrap();
    let before = tier.counters();
    let mjoin = dir.path().join("mjoin");
    answer(&s, "smooth", &all, &mjoin.join("out"), &mjoin.join("q"));
    for (name, _) in &all {
        assert_eq!(
            read(&smooth.join("out"), name),
            read(&mjoin.join("out"), name),
            "{name}: the answer out of order over the CSD differs from the local one"
        );
    }
    let c = tier.counters() - before;
    println!("the 22 queries out of order over the CSD: {c}");
    assert!(c.gets > 0, "{c}");
    drop(s);
    rt.block_on(csd.shutdown());
}

/// The 22 queries over columnar tables (`strata compact --format columns`)
/// that also have a delta: the history is converted to columns, then the
/// recent orders and lines are appended to the tables' heaps. Every scan of
/// `orders` and `lineitem` is then a column scan beside a heap scan, and
/// the answers must be DuckDB's.
#[test]
fn tpch_answers_match_duckdb_on_columnar_tables_with_a_delta() {
    ensure_duckdb();
    let sf = scale_factor();
    let dir = tempfile::tempdir().unwrap();
    let pq = dir.path().join("parquet");
    parquet_for_duckdb(&pq, sf);
    let db = Arc::new(
        Database::create(
            &dir.path().join("db"),
            DbOptions {
                buffer_pool_bytes: 64 << 20,
                direct_io: false,
                ..DbOptions::default()
            },
        )
        .unwrap(),
    );
    load_tpch_history_then_recent::<Box<dyn std::error::Error>>(
        &db,
        &TpchSpec {
            // The TPC-H key indexes: each a tree over the column rows
            // and one over the delta.
            indexes: true,
            ..TpchSpec::new(sf)
        },
        days_from_civil(1993, 1, 1),
        &mut || {
            for t in TpchTable::ALL {
                strata_columns::rewrite(
                    &db,
                    t.name(),
                    strata_columns::Format::Columns,
                    &NoProgress,
                )?;
            }
            Ok(())
        },
        &mut |_| {},
        &NoProgress,
    )
    .unwrap();
    for t in ["orders", "lineitem"] {
        let t = db.table(t).unwrap();
        let in_columns = t.columns().expect("columnar").rows();
        assert!(
            in_columns > 0 && t.rows() > 0,
            "{}: {in_columns} rows in columns, {} in the delta",
            t.name(),
            t.rows()
        );
    }
    let s = SqlSession::new(db.clone()).unwrap();
    s.execute("ANALYZE").unwrap();
    let plan = s
        .execute("EXPLAIN SELECT count(*) FROM lineitem WHERE l_shipdate < DATE '1992-03-01'")
        .unwrap();
    let text = render(Format::Csv, &plan.schema, &plan.batches).unwrap();
    assert!(
        text.contains("StrataColumnScanExec: table=lineitem, columns [l_shipdate]")
            && text.contains("the delta of a columnar table"),
        "{text}"
    );
    let all: Vec<(&str, &str)> = QUERIES.to_vec();
    for path in ["optimizer", "full"] {
        let run = dir.path().join(format!("columns-{path}"));
        answer(&s, path, &all, &run.join("out"), &run.join("q"));
        check(
            &pq,
            &run.join("q"),
            &run.join("out"),
            &format!("all 22 on columnar tables under {path}"),
        );
    }

    // The same tables moved to the cold tier (an in-memory object store):
    // MJoin reads their row groups by ranged GETs and their deltas by
    // objects of pages.
    drop(s);
    drop(Arc::into_inner(db).unwrap());
    let tier = ColdTier::with_factory(ColdConfig::default(), strata_cold::client::memory_factory());
    let db = Arc::new(
        Database::open(
            &dir.path().join("db"),
            DbOptions {
                buffer_pool_bytes: 64 << 20,
                direct_io: false,
                cold_tier: Some(tier.layer()),
                ..DbOptions::default()
            },
        )
        .unwrap(),
    );
    for t in TpchTable::ALL {
        to_cold(
            &db,
            &tier,
            t.name(),
            &TierOptions::new("http://csd.test:9000"),
        )
        .unwrap();
    }
    let s = SqlSession::new(db.clone()).unwrap();
    for path in ["optimizer", "full", "index", "sort", "smooth"] {
        let run = dir.path().join(format!("cold-columns-{path}"));
        answer(&s, path, &all, &run.join("out"), &run.join("q"));
        check(
            &pq,
            &run.join("q"),
            &run.join("out"),
            &format!("all 22 on columnar tables on the cold tier under {path}"),
        );
    }
    assert!(tier.counters().gets > 0);
}
