//! End to end: `strata scan --plan` (the flash paper's ordered plans, their sort
//! report and I/O trace) and `strata bench flash --quick` (CSV, plots, summary).

use crate::common;

use common::*;

#[test]
fn ordered_plans_report_their_sorts_and_write_traces() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&db, &["gen", "flash", "--rows", "20000"]);
    let pred = "a >= 1 AND a <= 6000";
    let trace = dir.path().join("trace.csv");
    let out = ok(
        &db,
        &[
            "--device",
            "ssd",
            "scan",
            "flash",
            "--where",
            pred,
            "--plan",
            "sidx+ps",
            "--sort-memory",
            "256KiB",
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    assert!(out.contains("(rows=6000)"), "{out}");
    assert!(out.contains("partitioned sort: memory 256.0 KiB"), "{out}");
    assert!(
        out.contains("partitions: 11 (0 split by tuple id, 0 fell back"),
        "{out}"
    );
    let csv = std::fs::read_to_string(&trace).unwrap();
    assert!(csv.starts_with("step,file,temp,first_page"), "{csv}");
    assert!(
        csv.lines()
            .any(|l| l.contains(",true,") && l.contains(",write,"))
    );
    let out = ok(
        &db,
        &[
            "scan",
            "flash",
            "--where",
            pred,
            "--plan",
            "FTS+ES",
            "--sort-memory",
            "64KiB",
        ],
    );
    assert!(out.contains("external merge sort"), "{out}");
    assert!(
        out.contains("merge passes 4 (ceil(log_fan-in runs) = 4)"),
        "{out}"
    );
    // Usage errors name what is wrong.
    let o = strata(&db, &["scan", "flash", "--where", pred, "--plan", "sidx"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown ordered plan 'sidx'"),
        "{}",
        stderr(&o)
    );
    let o = strata(
        &db,
        &[
            "scan",
            "flash",
            "--where",
            pred,
            "--plan",
            "fts+es",
            "--sort-memory",
            "1KiB",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("too small"), "{}", stderr(&o));
    // The real device traces too: every request with its wall-clock times, the
    // table's reads first and the external sort's temporary writes and reads.
    let real = dir.path().join("real.csv");
    ok(
        &db,
        &[
            "scan",
            "flash",
            "--where",
            pred,
            "--plan",
            "fts+es",
            "--sort-memory",
            "64KiB",
            "--trace",
            real.to_str().unwrap(),
        ],
    );
    let csv = std::fs::read_to_string(&real).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert!(
        rows.iter().any(|r| r[2] == "false" && r[5] == "read"),
        "{csv}"
    );
    assert!(
        rows.iter().any(|r| r[2] == "true" && r[5] == "write"),
        "{csv}"
    );
    assert!(
        rows.iter().any(|r| r[2] == "true" && r[5] == "read"),
        "{csv}"
    );
    for r in &rows {
        let (start, end): (f64, f64) = (r[6].parse().unwrap(), r[7].parse().unwrap());
        assert!(
            start < end && r[6] == r[8] && r[7] == r[9],
            "wall clock in both: {r:?}"
        );
    }
}

#[test]
fn bench_flash_quick_writes_csv_plots_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let bench_db = dir.path().join("bench.db");
    ok(
        &dir.path().join("unused"),
        &[
            "bench",
            "flash",
            "table2",
            "--quick",
            "--devices",
            "ssd",
            "--bench-db",
            bench_db.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    for f in [
        "table2.csv",
        "table2.md",
        "table2-ssd.svg",
        "table2-ssd.png",
    ] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let md = std::fs::read_to_string(out.join("table2.md")).unwrap();
    assert!(md.contains("FTS+ES / SIDX+PS at 2 MB"), "{md}");
    let o = strata(&dir.path().join("unused"), &["bench", "flash", "9"]);
    assert_eq!(o.status.code(), Some(2));
}
