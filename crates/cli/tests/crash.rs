//! The crash loop: SIGKILL `strata load` at random points, many times, and reopen.
//! Every time, `strata check` passes and the table is either absent (or as before,
//! for appends) or complete.

mod common;

use std::process::Command;
use std::time::Instant;

use common::*;
use rand::{Rng, SeedableRng};

const ROWS: u64 = 60_000;

fn load_cmd(db: &std::path::Path, csv: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
    c.arg("--db")
        .arg(db)
        .args([
            "--device",
            "buffered",
            "--buffer-pool",
            "16MiB",
            "load",
            "t",
        ])
        .arg(csv)
        .args([
            "--schema",
            SCHEMA,
            "--index",
            "t_grp:grp",
            "--segment-size",
            "256KiB",
        ]);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    c
}

#[test]
fn killed_loads_leave_the_old_state_or_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let csv = dir.path().join("t.csv");
    write_csv(&csv, ROWS);
    ok(&db, &["create"]);

    // How long does a whole load take? Kill points are drawn from that span.
    let start = Instant::now();
    assert!(load_cmd(&db, &csv).status().unwrap().success());
    let full = start.elapsed();
    ok(&db, &["check"]);
    assert_eq!(rows(&db, "t"), Some(ROWS));
    // Start over so the first iterations exercise "absent or complete".
    std::fs::remove_dir_all(&db).unwrap();
    ok(&db, &["create"]);

    let mut rng = rand::rngs::SmallRng::seed_from_u64(2026);
    let mut expected: Option<u64> = None;
    let (mut killed, mut finished) = (0, 0);
    for i in 0..40 {
        let mut child = load_cmd(&db, &csv).spawn().unwrap();
        let wait = full.mul_f64(rng.random_range(0.0..1.1));
        std::thread::sleep(wait);
        match child.try_wait().unwrap() {
            Some(status) => {
                assert!(status.success(), "iteration {i}: load failed on its own");
                finished += 1;
            }
            None => {
                child.kill().unwrap(); // SIGKILL
                child.wait().unwrap();
                killed += 1;
            }
        }
        let out = strata(&db, &["check"]);
        assert!(
            out.status.success(),
            "iteration {i}: check failed after the kill: {}",
            stderr(&out)
        );
        let now = rows(&db, "t");
        let before = expected.unwrap_or(0);
        assert!(
            now == expected || now == Some(before + ROWS),
            "iteration {i}: table has {now:?} rows; expected {expected:?} or {}",
            before + ROWS
        );
        expected = now;
    }
    assert!(
        killed >= 5,
        "only {killed} loads were killed; the test did not test much"
    );
    assert_eq!(finished + killed, 40);

    // The next read-write open removed what killed loads left behind: every data
    // file belongs to the catalog.
    assert!(load_cmd(&db, &csv).status().unwrap().success());
    assert_eq!(rows(&db, "t"), Some(expected.unwrap_or(0) + ROWS));
    let catalog = std::fs::read_to_string(db.join("catalog.json")).unwrap();
    for f in std::fs::read_dir(db.join("data")).unwrap() {
        let name = f.unwrap().file_name().to_string_lossy().into_owned();
        let base = name.rsplit_once('.').unwrap().0;
        assert!(
            catalog.contains(&format!("\"data/{base}\"")),
            "stray file {name}"
        );
    }
}
