//! `strata bench skipper fig7` end to end at the smallest scale: a CSD in
//! process, two `strata-sql` clients over TPC-H SF 0.01 through MJoin, the
//! pull baseline and local tables; every answer checked by the bench itself
//! (a differing answer fails the run), MJoin's reports read back.
//!
//! Needs `strata-sql` built beside `strata` (`cargo build -p strata-sql`;
//! `cargo test --workspace` builds it).

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::{stderr, stdout};

fn strata_sql() -> PathBuf {
    let strata = PathBuf::from(env!("CARGO_BIN_EXE_strata"));
    let sql = strata.with_file_name("strata-sql");
    assert!(
        sql.exists(),
        "{} is missing: build it first (cargo build -p strata-sql)",
        sql.display()
    );
    sql
}

#[test]
fn fig7_runs_skipper_pull_and_local_and_reads_mjoin_reports() {
    strata_sql();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "bench",
            "skipper",
            "fig7",
            "--sf",
            "0.01",
            "--clients",
            "1,2",
            "--repeat",
            "1",
            "--object-size",
            "256KiB",
            "--time-scale",
            "0.0001",
        ])
        .arg("--bench-db")
        .arg(dir.path().join("bench"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let csv = std::fs::read_to_string(out.join("fig7.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows.len(),
        8,
        "local, HDD, pull and Skipper at 1 and 2 clients:\n{csv}"
    );
    for variant in ["local", "hdd", "pull", "skipper"] {
        for x in ["1", "2"] {
            let r = rows
                .iter()
                .find(|r| r[col("variant")] == variant && r[col("x")] == x)
                .unwrap_or_else(|| panic!("no {variant} row at {x} clients:\n{csv}"));
            let wall: f64 = r[col("wall_ms")].parse().unwrap();
            assert!(wall > 0.0, "{variant} at {x}: {wall}");
            let requests: f64 = r[col("requests")].parse().unwrap();
            let served: f64 = r[col("io_requests")].parse().unwrap();
            match variant {
                // MJoin's report was read: it asked for objects, and the
                // device served them under the client's tag.
                "skipper" => assert!(requests > 0.0 && served > 0.0, "{csv}"),
                "pull" | "hdd" => assert!(requests == 0.0 && served > 0.0, "{csv}"),
                _ => assert!(served == 0.0, "{csv}"),
            }
        }
    }
    let md = std::fs::read_to_string(out.join("fig7.md")).unwrap();
    assert!(md.contains("| 2 |"), "{md}");
    assert!(md.contains("Scaling:"), "{md}");
    assert!(md.contains("Made by `strata bench skipper fig7"), "{md}");
    assert!(out.join("fig7.png").exists() && out.join("fig7.svg").exists());
}

#[test]
fn unknown_figure_and_bad_options_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (args, msg) in [
        (vec!["fig99"], "unknown figure fig99"),
        (vec!["fig7", "--time-scale=0"], "--time-scale 0"),
        (vec!["fig7", "--clients", "0"], "--clients"),
        (vec!["fig8", "--queries", "7"], "Q7"),
        (vec!["fig7", "--evict", "lru"], "--evict lru"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["bench", "skipper"])
            .args(&args)
            .arg("--bench-db")
            .arg(dir.path())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(msg), "{args:?}: {}", stderr(&o));
    }
}
