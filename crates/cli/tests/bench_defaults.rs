//! Safe benchmark defaults (issue 54): a run without `--out` writes into a
//! fresh `./strata-bench-<time>/` and nothing under the checkout's
//! `results/`; `--db` names the database a benchmark generates its tables
//! in; `bench io` never installs fio unless asked, and says how to get it;
//! `--drop-caches` belongs to the PostgreSQL figures; a `--quick` run's
//! plots say so in their titles.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;

/// `strata ARGS` run in `cwd` (no `--db` unless `args` give one).
fn strata_in(cwd: &Path, args: &[&str], path: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
    c.current_dir(cwd).args(args);
    if let Some(p) = path {
        c.env("PATH", p);
    }
    c.output().expect("run strata")
}

#[test]
fn a_bench_without_out_writes_a_new_directory_and_leaves_results_alone() {
    let dir = tempfile::tempdir().unwrap();
    // A checkout's committed results.
    std::fs::create_dir(dir.path().join("results")).unwrap();
    let args = [
        "bench",
        "csd",
        "schedulers",
        "--repeats",
        "1",
        "--seeds",
        "1",
        "--mix-clients",
        "2",
    ];
    let o = strata_in(dir.path(), &args, None);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with("results go to ./strata-bench-")
            && text.contains("(a new directory; --out DIR chooses another)"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path().join("results"))
            .unwrap()
            .count(),
        0,
        "something was written under results/"
    );
    let fresh: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("strata-bench-"))
        .collect();
    assert_eq!(fresh.len(), 1, "{fresh:?}");
    assert!(
        dir.path()
            .join(&fresh[0])
            .join("csd/schedulers.csv")
            .exists()
    );
    // A second run in the same second gets a directory of its own.
    let o = strata_in(dir.path(), &args, None);
    assert!(o.status.success(), "{}", stderr(&o));
    let runs = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("strata-bench-")
        })
        .count();
    assert_eq!(runs, 2);
    // --out names the directory.
    let o = strata_in(
        dir.path(),
        &[&args[..], &["--out", "results/csd"]].concat(),
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.path().join("results/csd/schedulers.csv").exists());
}

#[test]
fn db_names_the_bench_database_and_quick_plots_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("mine.db");
    let out = dir.path().join("out");
    let text = ok(
        &db,
        &[
            "bench",
            "flash",
            "table2",
            "--quick",
            "--devices",
            "ssd",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        text.contains(&format!("bench database: {}", db.display())),
        "{text}"
    );
    assert!(db.join("catalog.json").exists(), "no tables in --db");
    assert!(!dir.path().join("strata-flash.db").exists());
    let svg = std::fs::read_to_string(out.join("table2-ssd.svg")).unwrap();
    assert!(
        svg.contains("(quick run)"),
        "the title does not say quick run"
    );
}

#[test]
fn bench_io_without_fio_says_how_to_get_it_and_installs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&db, &["gen", "microbench", "--rows", "5000"]);
    // No fio (nor apt-get) on this PATH.
    let empty = dir.path().join("empty-path");
    std::fs::create_dir(&empty).unwrap();
    let out = dir.path().join("io");
    let o = strata_in(
        dir.path(),
        &[
            "--db",
            db.to_str().unwrap(),
            "bench",
            "io",
            "--repeat",
            "1",
            "--random-reads",
            "200",
            "--out",
            out.to_str().unwrap(),
        ],
        Some(&empty),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("fio not run: fio is not installed") && text.contains("--install-fio"),
        "{text}"
    );
    assert!(!text.contains("installing fio"), "{text}");
    assert!(out.join("io.csv").exists());
}

#[test]
fn drop_caches_is_for_the_postgres_figures_only() {
    let dir = tempfile::tempdir().unwrap();
    let o = strata(
        &dir.path().join("db"),
        &["bench", "smooth-scan", "15b", "--drop-caches"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--drop-caches is for the postgres figures only"),
        "{}",
        stderr(&o)
    );
}
