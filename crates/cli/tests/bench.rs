//! The experiments at `--quick` size: every file a figure promises is written,
//! with the standard columns, and every path returns the same rows.

use crate::common;

use std::collections::BTreeMap;

use common::*;

#[test]
fn quick_smooth_scan_figure_writes_csv_plots_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let out = dir.path().join("results");
    let bench_db = dir.path().join("bench.db");
    let args = [
        "bench",
        "smooth-scan",
        "15b",
        "--quick",
        "--rows",
        "20000",
        "--devices",
        "hdd,ssd",
        "--bench-db",
        bench_db.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let text = ok(&db, &args);
    assert!(text.contains("Smooth Scan, figure 15b"), "{text}");
    for f in [
        "15b.csv",
        "15b.md",
        "15b-hdd.svg",
        "15b-hdd.png",
        "15b-ssd.svg",
        "15b-ssd.png",
    ] {
        let p = out.join(f);
        assert!(
            p.exists() && std::fs::metadata(&p).unwrap().len() > 100,
            "{f} missing or empty"
        );
    }
    let csv = std::fs::read_to_string(out.join("15b.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    // (Header names have no commas; the rows are read with the CSV reader below.)
    for c in strata_bench::report::results::STANDARD_COLUMNS {
        assert!(header.contains(&c), "column {c} missing: {header:?}");
    }
    // Every path returns the same number of rows at each (device, x).
    let set = strata_bench::ResultSet::read_csv(out.join("15b.csv")).unwrap();
    let mut seen: BTreeMap<(String, String), u64> = BTreeMap::new();
    for r in set.rows() {
        let key = (r.device.clone(), format!("{}", r.x));
        if let Some(prev) = seen.insert(key.clone(), r.rows_out) {
            assert_eq!(prev, r.rows_out, "{key:?}: {}", r.variant);
        }
    }
    assert!(seen.len() >= 12, "{seen:?}");
    // The model beside the measurement (Fig. 24).
    let text = ok(
        &db,
        &[
            "model",
            "--measured",
            out.join("15b.csv").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--rows",
            "20000",
            "--pages",
            "109",
        ],
    );
    assert!(text.contains("Model / measured"), "{text}");
    assert!(out.join("fig24.csv").exists() && out.join("fig24.md").exists());
}

#[test]
fn quick_robustness_matrix_writes_csv_heat_maps_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let out = dir.path().join("results");
    let bench_db = dir.path().join("bench.db");
    let args = [
        "bench",
        "smooth-scan",
        "robustness",
        "--quick",
        "--sizes",
        "5000",
        "--fills",
        "1,0.25",
        "--layouts",
        "uniform,alternating",
        "--devices",
        "hdd,ssd",
        "--bench-db",
        bench_db.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let first = strata(&db, &args);
    assert!(first.status.success(), "{}", stderr(&first));
    let text = stdout(&first);
    assert!(text.contains("Smooth Scan robustness"), "{text}");
    assert!(stderr(&first).contains("generated rob_alternating_5000_25"));
    for f in [
        "robustness.csv",
        "robustness.md",
        "robustness-hdd.svg",
        "robustness-hdd.png",
        "robustness-ssd.svg",
        "robustness-ssd.png",
    ] {
        let p = out.join(f);
        assert!(
            p.exists() && std::fs::metadata(&p).unwrap().len() > 100,
            "{f} missing or empty"
        );
    }
    let set = strata_bench::ResultSet::read_csv(out.join("robustness.csv")).unwrap();
    // Every path returns the same rows in a cell (a stopped run returns fewer).
    let mut seen: BTreeMap<(String, String, String, String), u64> = BTreeMap::new();
    let mut bands = 0;
    for r in set.rows() {
        for c in ["table_rows", "fill", "layout", "ratio_to_best", "best_ms"] {
            assert!(!r.get(c).is_empty(), "{c} missing: {r:?}");
        }
        bands += (r.get("point") == "band") as usize;
        if r.get("censored") == "yes" {
            continue;
        }
        let key = (
            r.device.clone(),
            r.get("layout"),
            r.get("fill"),
            format!("{}", r.x),
        );
        if let Some(prev) = seen.insert(key.clone(), r.rows_out) {
            assert_eq!(prev, r.rows_out, "{key:?}: {}", r.variant);
        }
    }
    // 2 layouts x 2 fills x 2 devices x 6 selectivities, plus alternating's band.
    assert_eq!(seen.len(), 2 * 2 * 2 * 6 + 2 * 2);
    assert!(bands >= 2 * 2 * 3, "{bands}");
    // The tables are reused by a second run.
    let md = std::fs::read_to_string(out.join("robustness.md")).unwrap();
    assert!(
        md.contains("Greedy CR") && md.contains("alternating"),
        "{md}"
    );
    let again = strata(&db, &args);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(!stderr(&again).contains("generated rob_"));
}

/// `strata bench csd all`: both simulated figures write their CSV (standard
/// columns, one row per policy and point) and summary, and state whether the
/// paper's claims held.
#[test]
fn csd_bench_writes_pull_model_and_schedulers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let out = dir.path().join("results");
    let text = ok(
        &db,
        &[
            "bench",
            "csd",
            "all",
            "--repeats",
            "3",
            "--seeds",
            "1",
            "--mix-clients",
            "3",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(text.contains("pull-model: C=1"), "{text}");
    assert!(text.contains("schedulers (Fig. 12)"), "{text}");
    let pull = strata_bench::ResultSet::read_csv(out.join("pull-model.csv")).unwrap();
    // Fig. 4: 5 client counts, Fig. 5: 5 switch times; csd and hdd each
    assert_eq!(pull.len(), 20);
    let sched = strata_bench::ResultSet::read_csv(out.join("schedulers.csv")).unwrap();
    // Fig. 12: 4 policies; mixes: 3 layouts × 1 client count × 1 seed × 4
    assert_eq!(sched.len(), 4 + 12);
    for f in ["pull-model.md", "schedulers.md"] {
        let md = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(md.contains("Made by `strata"), "{f}: {md}");
    }
    let md = std::fs::read_to_string(out.join("schedulers.md")).unwrap();
    assert!(
        md.contains("Rank makes fewer switches than query FCFS"),
        "{md}"
    );
    let e = strata(&db, &["bench", "csd", "fig99"]);
    assert_eq!(e.status.code(), Some(2));
    assert!(
        stderr(&e).contains("unknown figure fig99"),
        "{}",
        stderr(&e)
    );
}

/// Fig. 3 with rev_id a semantic id, small: the states are made and
/// measured, clustering the most read half cuts the device reads of a lookup,
/// and an unknown `--ids` is refused by name.
#[test]
fn fig3_with_semantic_ids_clusters_what_lookups_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let out = dir.path().join("results");
    let work = dir.path().join("work");
    let args = [
        "bench",
        "waste",
        "fig3",
        "--rows",
        "20000",
        "--ids",
        "semantic",
        "--devices",
        "ssd",
        "--pool-pct",
        "75",
        "--rounds",
        "1",
        "--lookups",
        "3000",
        "--warmup",
        "3000",
        "--train-per-hot",
        "16",
        "--work-dir",
        work.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let text = ok(&db, &args);
    assert!(text.contains("rev_id a semantic id"), "{text}");
    let csv = std::fs::read_to_string(out.join("fig3/fig3.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (variant, pages, n) = (col("variant"), col("pages_read"), col("rows_out"));
    let mut reads = BTreeMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let r = f[pages].parse::<f64>().unwrap() / f[n].parse::<f64>().unwrap();
        reads.insert(f[variant].to_string(), r);
    }
    let keys: Vec<&String> = reads.keys().collect();
    assert_eq!(keys, ["id 0%", "id 100%", "id 54%"], "{csv}");
    assert!(
        reads["id 54%"] < 0.6 * reads["id 0%"] && reads["id 100%"] < reads["id 54%"],
        "{reads:?}"
    );
    let e = strata(&db, &["bench", "waste", "fig3", "--ids", "stored,uuid"]);
    assert_eq!(e.status.code(), Some(2));
    assert!(
        stderr(&e).contains("unknown --ids 'uuid'"),
        "{}",
        stderr(&e)
    );
}
