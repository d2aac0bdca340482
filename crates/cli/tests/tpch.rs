//! `strata gen tpch`: the command line, its errors, and crashes at every stage.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

const TABLES: [&str; 8] = [
    "region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem",
];

fn no_panic(o: &std::process::Output) {
    assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
}

#[test]
fn bad_arguments_exit_2_with_a_clear_message_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&db, &["create"]);
    for (args, msg) in [
        (vec!["--sf", "-1"], "scale factor '-1' is too small"),
        (vec!["--sf", "abc"], "scale factor 'abc' is not a number"),
        (vec!["--sf", "0"], "scale factor '0' is too small"),
        (vec!["--sf", "1e9"], "is too large"),
        (vec![], "tpch needs a scale factor"),
        (vec!["--sf", "1", "--rows", "10"], "--rows is not for tpch"),
        (vec!["--sf", "1", "--table", "x"], "--table is not for tpch"),
        (
            vec!["--sf", "1", "--fill-factor", "2"],
            "fill factor 2 is outside",
        ),
    ] {
        let mut all = vec!["gen", "tpch"];
        all.extend(&args);
        let o = strata(&db, &all);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(msg), "{args:?}: {}", stderr(&o));
    }
    let o = strata(&db, &["gen", "microbench", "--sf", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--sf is for tpch, not microbench"));
    let o = strata(&db, &["gen", "tpch", "--sf", "1", "--parquet-only"]);
    assert_eq!(o.status.code(), Some(2), "--parquet-only needs --parquet");
    for t in TABLES {
        assert_eq!(rows(&db, t), None, "{t}");
    }
}

#[test]
fn gen_tpch_loads_checks_and_refuses_a_second_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let pq = dir.path().join("pq");
    let out = ok(
        &db,
        &[
            "gen",
            "tpch",
            "--sf",
            "0.01",
            "--parquet",
            pq.to_str().unwrap(),
        ],
    );
    for t in TABLES {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("generated {t} "))),
            "{t}: {out}"
        );
        assert!(pq.join(format!("{t}.parquet")).is_file(), "{t}");
    }
    assert!(out.contains("generated TPC-H SF 0.01: 86805 rows"), "{out}");
    assert!(out.contains("lineitem_l_shipdate"), "{out}");
    assert_eq!(rows(&db, "lineitem"), Some(60_175));
    assert_eq!(rows(&db, "orders"), Some(15_000));
    let check = ok(&db, &["check"]);
    assert!(check.contains("check passed: 8 table(s)"), "{check}");
    assert!(
        check.contains("lineitem_l_receiptdate (60175 entries)"),
        "{check}"
    );

    let o = strata(&db, &["gen", "tpch", "--sf", "0.01"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("already exist"), "{}", stderr(&o));
    assert_eq!(rows(&db, "lineitem"), Some(60_175));

    // Parquet only: no database is created.
    let pq2 = dir.path().join("pq2");
    let nodb = dir.path().join("nodb");
    let out = ok(
        &nodb,
        &[
            "gen",
            "tpch",
            "--sf",
            "0.01",
            "--parquet-only",
            "--parquet",
            pq2.to_str().unwrap(),
        ],
    );
    assert!(out.contains("Parquet"), "{out}");
    assert!(!nodb.exists());
    for t in TABLES {
        let a = std::fs::metadata(pq.join(format!("{t}.parquet"))).unwrap();
        let b = std::fs::metadata(pq2.join(format!("{t}.parquet"))).unwrap();
        assert_eq!(a.len(), b.len(), "{t}: the same data either way");
    }
}

fn gen_cmd(db: &Path, pq: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
    c.arg("--db")
        .arg(db)
        .args(["--device", "buffered", "--buffer-pool", "16MiB"])
        .args(["gen", "tpch", "--sf", "0.02", "--parquet"])
        .arg(pq)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Crashes `strata gen tpch` right after its write N (the fault-injecting
/// device, `STRATA_FAULT`), for N = 1, 2, 3, 4, 6, 8, 12, ... until a run makes
/// fewer writes and completes: every table is then absent or complete with its
/// indexes, `strata check` passes, and every `<table>.parquet` is a whole file.
/// Deterministic: the same points every run, whatever the machine's speed.
#[test]
fn crashed_generation_leaves_whole_tables_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let pq = dir.path().join("pq");
    assert!(gen_cmd(&db, &pq).status().unwrap().success());
    let complete: Vec<u64> = TABLES.iter().map(|t| rows(&db, t).unwrap()).collect();
    let sizes: Vec<u64> = TABLES
        .iter()
        .map(|t| {
            std::fs::metadata(pq.join(format!("{t}.parquet")))
                .unwrap()
                .len()
        })
        .collect();

    let mut partial = 0;
    let points = (0..).flat_map(|k| [1u64 << k, 3 << k]).skip(1);
    for (i, n) in points.enumerate() {
        std::fs::remove_dir_all(&db).ok();
        std::fs::remove_dir_all(&pq).ok();
        let status = gen_cmd(&db, &pq)
            .env("STRATA_FAULT", format!("crash-after-writes:{n}"))
            .status()
            .unwrap();
        if status.success() {
            assert!(i > 0, "the generation made no write");
            break;
        }
        assert_eq!(status.code(), Some(86), "crash after write {n}: {status}");
        if !db.exists() {
            continue;
        }
        let out = strata(&db, &["check"]);
        assert!(out.status.success(), "iteration {i}: {}", stderr(&out));
        let present: Vec<Option<u64>> = TABLES.iter().map(|t| rows(&db, t)).collect();
        for (k, t) in TABLES.iter().enumerate() {
            if let Some(n) = present[k] {
                assert_eq!(n, complete[k], "iteration {i}: {t} is incomplete");
            }
            let f = pq.join(format!("{t}.parquet"));
            if f.exists() {
                assert_eq!(
                    std::fs::metadata(&f).unwrap().len(),
                    sizes[k],
                    "iteration {i}: {t}.parquet is not whole"
                );
            }
        }
        if present.iter().any(Option::is_none) && present.iter().any(Option::is_some) {
            partial += 1;
        }
        // A re-run says which tables are there.
        if present.iter().any(Option::is_some) {
            let o = strata(&db, &["gen", "tpch", "--sf", "0.02"]);
            assert_eq!(o.status.code(), Some(2));
            assert!(stderr(&o).contains("already exist"), "{}", stderr(&o));
        }
    }
    assert!(
        partial > 0,
        "no crash point fell between the first and last table"
    );
}
