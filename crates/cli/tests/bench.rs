//! The experiments at `--quick` size: every file a figure promises is written,
//! with the standard columns, and every path returns the same rows.

mod common;

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
    for c in strata_bench::results::STANDARD_COLUMNS {
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
