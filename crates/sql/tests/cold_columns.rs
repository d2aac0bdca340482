//! Columnar tables on the cold tier: `strata tier cold` moves each column
//! file as one object (a Parquet file), the delta and the trees as objects
//! of pages; queries read only the byte ranges of the columns they need
//! (ranged GETs, each checked against its block's CRC32C), and answer as
//! on the local tier under every access path; a move stopped after any of
//! its durable steps, the database crashed there, loses nothing; a
//! corrupt object fails naming it; and pyarrow reads the object over S3 as
//! it is, DuckDB querying what it read.

use std::process::Command;
use std::sync::Arc;

use strata_cold::client::memory_factory;
use strata_cold::device::{ColdConfig, ColdTier};
use strata_cold::tier::{self, TableTier, TierOptions};
use strata_load::{TpchSpec, generate_tpch};
use strata_sql::SqlSession;
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};
use strata_storage::row::Value;

use crate::common;

fn options(tier: &ColdTier) -> DbOptions {
    crate::common::cold_options(tier)
}

fn memory_tier() -> ColdTier {
    ColdTier::with_factory(
        ColdConfig {
            cache_bytes: 6 << 20,
            ..ColdConfig::default()
        },
        memory_factory(),
    )
}

fn tier_options() -> TierOptions {
    TierOptions {
        object_bytes: 1 << 20,
        ..TierOptions::new("http://csd.test:9000")
    }
}

/// The 22 answers under access path `path`; `skipper` as set.
fn answers(db: &Arc<Database>, path: &str, skipper: bool) -> Vec<String> {
    let skipper = if skipper { "true" } else { "false" };
    common::tpch_answers(
        db,
        &[("strata.skipper", skipper), ("strata.access_path", path)],
    )
}

/// Bytes of the column files of table `t`.
fn column_bytes(db: &Database, t: &str) -> u64 {
    let t = db.table(t).unwrap();
    t.columns().unwrap().files.iter().map(|f| f.bytes).sum()
}

const PATHS: [&str; 5] = ["optimizer", "full", "index", "sort", "smooth"];

/// TPC-H SF 0.01 with its key indexes, every table converted to columns,
/// then rows deleted from the column part (the delete set) and inserted
/// into the delta, so that every kind of file a columnar table has moves.
fn columnar_tpch(path: &std::path::Path, tier: &ColdTier) -> Arc<Database> {
    let db = Database::create(path, options(tier)).unwrap();
    generate_tpch(
        Some(&db),
        &TpchSpec {
            indexes: true,
            ..TpchSpec::new(0.01)
        },
        &NoProgress,
        |_| {},
    )
    .unwrap();
    let db = Arc::new(db);
    for t in db.table_names() {
        strata_columns::rewrite(&db, &t, strata_columns::Format::Columns, &NoProgress).unwrap();
    }
    let s = SqlSession::new(db.clone()).unwrap();
    common::run(&s, "DELETE FROM lineitem WHERE l_orderkey < 200");
    common::run(
        &s,
        "INSERT INTO orders SELECT o_orderkey + 10000000, o_custkey, o_orderstatus, \
         o_totalprice, o_orderdate, o_orderpriority, o_clerk, o_shippriority, o_comment \
         FROM orders WHERE o_orderkey < 100",
    );
    common::run(&s, "ANALYZE");
    db
}

#[test]
fn tpch_on_columnar_tables_answers_alike_on_the_cold_tier_under_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let tier = memory_tier();
    let db = columnar_tpch(&path, &tier);
    let local: Vec<Vec<String>> = PATHS.iter().map(|p| answers(&db, p, false)).collect();
    let lineitem_bytes = column_bytes(&db, "lineitem");
    let tables = db.table_names();
    for t in &tables {
        let r = tier::to_cold(&db, &tier, t, &tier_options()).unwrap();
        assert!(r.objects > 0, "{t}: {r:?}");
    }
    for t in &tables {
        let def = db.catalog().table(t).unwrap().clone();
        assert!(
            matches!(
                tier::table_tier(&path, &def).unwrap(),
                TableTier::Cold { .. }
            ),
            "{t}"
        );
        for f in def.column_files() {
            assert!(!path.join(&f).exists(), "{f} is still local");
        }
    }
    drop(Arc::into_inner(db).unwrap());

    let db = Arc::new(Database::open(&path, options(&tier)).unwrap());
    for (p, want) in PATHS.iter().zip(&local) {
        for skipper in [false, true] {
            let got = answers(&db, p, skipper);
            for (w, g) in want.iter().zip(&got) {
                assert_eq!(w, g, "under {p}, skipper {skipper}");
            }
        }
    }

    // One column of lineitem, on a fresh open (nothing cached): ranged
    // GETs of its chunks, not the file.
    drop(Arc::into_inner(db).unwrap());
    let db = Arc::new(Database::open(&path, options(&tier)).unwrap());
    let s = SqlSession::new(db.clone()).unwrap();
    let before = tier.counters();
    common::query(&s, "SELECT sum(l_quantity) FROM lineitem");
    let c = tier.counters() - before;
    assert!(c.gets > 0, "{c}");
    assert!(
        c.bytes_fetched * 4 < lineitem_bytes,
        "one column of lineitem fetched {} bytes of its {lineitem_bytes}: {c}",
        c.bytes_fetched
    );

    // A join through MJoin: its objects are row groups' chunks of the
    // columns it reads (and the delta's pages), not whole files.
    drop(s);
    drop(Arc::into_inner(db).unwrap());
    let db = Arc::new(Database::open(&path, options(&tier)).unwrap());
    let s = SqlSession::new(db.clone()).unwrap();
    let join = "SELECT count(*), sum(l_extendedprice) FROM orders, lineitem \
                WHERE o_orderkey = l_orderkey AND l_quantity > 45";
    let plan = common::query(&s, &format!("EXPLAIN ANALYZE {join}"))
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n");
    assert!(plan.contains("MJoinExec"), "{plan}");
    let objects = common::counter(&plan, "objects");
    assert!(objects >= 2, "{plan}");
    let before = tier.counters();
    let got = common::query(&s, join);
    let c = tier.counters() - before;
    let orders_bytes = column_bytes(&db, "orders");
    assert!(
        c.bytes_fetched * 2 < lineitem_bytes + orders_bytes,
        "the join fetched {} bytes of {} in the two tables' column files: {c}",
        c.bytes_fetched,
        lineitem_bytes + orders_bytes
    );
    s.set("strata.skipper", "false").unwrap();
    assert_eq!(
        common::query(&s, join),
        got,
        "MJoin and the pull path agree"
    );

    // Read-only: inserts, deletes and a merge of the delta are refused.
    for sql in [
        "INSERT INTO region VALUES (9, 'X', 'y')",
        "DELETE FROM lineitem WHERE l_orderkey = 1000",
        "UPDATE nation SET n_comment = 'x' WHERE n_nationkey = 1",
    ] {
        let e = common::error(&s, sql).to_string();
        assert!(
            e.contains("is on the cold tier (read-only)") && e.contains("strata tier local"),
            "{sql}: {e}"
        );
    }
    let e = strata_columns::rewrite(&db, "orders", strata_columns::Format::Columns, &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cold tier"), "{e}");
    drop(s);

    for t in &tables {
        tier::to_local(&db, &tier, t, &tier_options()).unwrap();
    }
    drop(Arc::into_inner(db).unwrap());
    let db = Arc::new(Database::open(&path, options(&tier)).unwrap());
    assert_eq!(answers(&db, "optimizer", true), local[0]);
    strata_storage::maintenance::check::check_database(&db, &NoProgress).unwrap();
    for t in &tables {
        let table = db.table(t).unwrap();
        let part = strata_columns::ColumnPart::of(&db, &table)
            .unwrap()
            .unwrap();
        part.verify().unwrap();
    }
}

/// A small columnar table with an index (a tree over the column rows), a
/// delete set and a delta: what `strata tier cold` has to move.
fn small(path: &std::path::Path, tier: &ColdTier) -> Database {
    let db = Database::create(path, options(tier)).unwrap();
    let rows = (0..30_000i64).map(|i| {
        vec![
            Value::Int64(i * 7919 % 30_000),
            Value::Int64(i % 97),
            Value::Str(format!("row {i}")),
        ]
    });
    common::load(&db, "t", "k BIGINT, g BIGINT, s VARCHAR(16)", vec![], rows);
    strata_columns::rewrite(&db, "t", strata_columns::Format::Columns, &NoProgress).unwrap();
    let db = Arc::new(db);
    let s = SqlSession::new(db.clone()).unwrap();
    common::run(&s, "CREATE INDEX t_k ON t (k)");
    common::run(&s, "DELETE FROM t WHERE g = 5");
    common::run(&s, "INSERT INTO t VALUES (100000, 1, 'new')");
    drop(s);
    db.checkpoint().unwrap();
    Arc::into_inner(db).unwrap()
}

fn summary(db: Database) -> (Vec<Vec<String>>, Database) {
    let db = Arc::new(db);
    let s = SqlSession::new(db.clone()).unwrap();
    let mut out = common::query(&s, "SELECT count(*), sum(k), sum(g), max(s) FROM t");
    s.set("strata.access_path", "index").unwrap();
    out.extend(common::query(
        &s,
        "SELECT k, g, s FROM t WHERE k BETWEEN 100 AND 140 ORDER BY k",
    ));
    drop(s);
    (out, Arc::into_inner(db).unwrap())
}

/// Stops each move after each of its durable steps, crashing the database
/// there: reopened, the table answers the same; the move run again
/// finishes; the last state opens without a cold tier.
#[test]
fn a_move_of_a_columnar_table_stopped_after_any_step_loses_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let tier = memory_tier();
    let (expected, db) = summary(small(&scratch.path().join("ref"), &tier));
    drop(db);
    let mut n = 1;
    let mut finished = false;
    while !finished {
        let dir = scratch.path().join(format!("move-{n}"));
        let tier = memory_tier();
        let db = small(&dir, &tier);
        let stop = TierOptions {
            stop_after: Some(n),
            ..tier_options()
        };
        let r = tier::to_cold(&db, &tier, "t", &stop);
        finished = r.is_ok();
        if let Err(e) = &r {
            assert!(e.to_string().contains("fault injection"), "{e}");
        }
        db.crash();
        let db = Database::open(&dir, options(&tier)).unwrap();
        let (got, db) = summary(db);
        assert_eq!(got, expected, "to cold, stopped after step {n}");
        let def = db.catalog().table("t").unwrap().clone();
        if !matches!(
            tier::table_tier(&dir, &def).unwrap(),
            TableTier::Cold { .. }
        ) {
            assert!(!finished);
            tier::to_cold(&db, &tier, "t", &tier_options()).unwrap();
        }
        let (got, db) = summary(db);
        assert_eq!(got, expected, "cold after step {n}");

        let stop = TierOptions {
            stop_after: Some(n),
            delete_objects: true,
            ..tier_options()
        };
        let back = tier::to_local(&db, &tier, "t", &stop);
        db.crash();
        let db = Database::open(&dir, options(&tier)).unwrap();
        let (got, db) = summary(db);
        assert_eq!(got, expected, "to local, stopped after step {n}");
        let def = db.catalog().table("t").unwrap().clone();
        if tier::table_tier(&dir, &def).unwrap() != TableTier::Local {
            assert!(back.is_err());
            tier::to_local(&db, &tier, "t", &tier_options()).unwrap();
        }
        drop(db);
        let db = Database::open(&dir, common::options()).unwrap();
        let (got, _) = summary(db);
        assert_eq!(got, expected, "local without a cold tier after step {n}");
        n += 1;
    }
    // Uploads of the heap, index, tree, delete set and column file, their
    // manifests and removals: more than a dozen durable steps.
    assert!(n > 12, "the sweep covered {n} steps");
}

#[test]
fn a_corrupt_column_object_fails_naming_it_and_its_block() {
    let scratch = tempfile::tempdir().unwrap();
    let tier = memory_tier();
    let dir = scratch.path().join("db");
    let db = small(&dir, &tier);
    tier::to_cold(&db, &tier, "t", &tier_options()).unwrap();
    let def = db.catalog().table("t").unwrap().clone();
    drop(db);
    let file = &def.column_files()[0];
    let name = std::path::Path::new(file)
        .file_name()
        .unwrap()
        .to_string_lossy();
    let key = format!("t/{name}");
    // The object replaced by one of the same size with a byte changed.
    let client = tier.client().unwrap();
    let tmp = scratch.path().join("object");
    client
        .get_to_file("http://csd.test:9000", "db", &key, &tmp)
        .unwrap();
    let mut bytes = std::fs::read(&tmp).unwrap();
    let at = bytes.len() / 3;
    bytes[at] ^= 0x40;
    client
        .put("http://csd.test:9000", "db", &key, bytes.into())
        .unwrap();
    let db = Arc::new(Database::open(&dir, options(&tier)).unwrap());
    let s = SqlSession::new(db).unwrap();
    let block = at / (64 << 10);
    // Through MJoin (its column objects) and through the pull path (the
    // column reader's ranged GETs).
    for skipper in ["true", "false"] {
        s.set("strata.skipper", skipper).unwrap();
        let e = common::error(&s, "SELECT sum(k), max(s) FROM t").to_string();
        assert!(
            e.contains(&format!("db/{key}"))
                && e.contains(&format!("block {block} "))
                && e.contains("CRC32C")
                && e.contains("corrupt"),
            "skipper {skipper}: {e}"
        );
    }
}

/// Any S3 + Parquet reader reads a column file's object as it is: pyarrow
/// opens it on the cold storage device (`strata csd serve`, in-process) over
/// S3, and DuckDB queries what it read. (DuckDB's own httpfs extension is
/// downloaded on first use, which this machine's network refuses.)
#[test]
fn pyarrow_and_duckdb_read_a_column_object_over_s3() {
    let scratch = tempfile::tempdir().unwrap();
    let (rt, csd) = common::csd_without_delays(&scratch.path().join("csd"));
    let tier = ColdTier::new(ColdConfig::default());
    let dir = scratch.path().join("db");
    let db = Arc::new(small(&dir, &tier));
    // The column part alone (the delete set and delta merged in): every
    // row of the table is in the file.
    let s = SqlSession::new(db.clone()).unwrap();
    common::run(&s, "DELETE FROM t WHERE k = 100000");
    drop(s);
    strata_columns::rewrite(&db, "t", strata_columns::Format::Columns, &NoProgress).unwrap();
    let s = SqlSession::new(db.clone()).unwrap();
    let want = common::query(&s, "SELECT count(*), sum(k), sum(g) FROM t");
    drop(s);
    tier::to_cold(&db, &tier, "t", &TierOptions::new(&csd.endpoint())).unwrap();
    let def = db.catalog().table("t").unwrap().clone();
    let file = &def.column_files()[0];
    let name = std::path::Path::new(file)
        .file_name()
        .unwrap()
        .to_string_lossy();
    let bucket = tier::default_bucket(&dir);
    let script = format!(
        "import duckdb, pyarrow.fs as fs, pyarrow.parquet as pq\n\
         s3 = fs.S3FileSystem(endpoint_override='{host}', scheme='http', access_key='strata', \
         secret_key='strata-secret', region='us-east-1')\n\
         t = pq.read_table('{bucket}/t/{name}', filesystem=s3)\n\
         r = duckdb.sql('SELECT count(*), sum(k), sum(g) FROM t').fetchone()\n\
         print(','.join(str(v) for v in r))",
        host = csd.endpoint().trim_start_matches("http://"),
    );
    let run = Command::new("python3").args(["-c", &script]).output();
    let run = match run {
        Ok(r) if r.status.success() => r,
        Ok(r) => panic!(
            "pyarrow and DuckDB for Python (scripts/test-requirements.txt) could not read the object: {}",
            String::from_utf8_lossy(&r.stderr)
        ),
        Err(e) => panic!("python3 with pyarrow and DuckDB is needed: {e}"),
    };
    let got = String::from_utf8_lossy(&run.stdout).trim().to_string();
    assert_eq!(got, want[0].join(","));
    drop(db);
    rt.block_on(csd.shutdown());
}
