//! Crashes and I/O errors in `strata load`, and what a reopen finds.
//!
//! The deterministic tests arm the fault-injecting device through `STRATA_FAULT`
//! (`strata_storage::device::fault`) and sweep the fault over every write of a
//! load, counted, not timed: the process dies right after write N (whole or torn)
//! or write N fails with EIO/ENOSPC. Every time, `strata check` passes and the
//! table is either as before or complete. One loop also sends real `SIGKILL`s,
//! to loads that stopped themselves after a write chosen by a seeded generator.

use crate::common;

use std::process::Command;

use common::*;
use rand::{Rng, SeedableRng};

const ROWS: u64 = 60_000;

/// Exit status of a process the fault plan crashed (`fault::CRASH_EXIT_CODE`).
const CRASHED: i32 = 86;

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
fn sigkilled_loads_leave_the_old_state_or_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let csv = dir.path().join("t.csv");
    write_csv(&csv, ROWS);
    ok(&db, &["create"]);

    // The first iterations exercise "absent or complete", later ones appends.
    // Each load stops itself after write N (N drawn from a seeded generator),
    // and is then killed by a real SIGKILL: a real signal at a point chosen by
    // count, so no sleep and no race with the machine's speed.
    let mut rng = rand::rngs::SmallRng::seed_from_u64(2026);
    let mut expected: Option<u64> = None;
    let (mut killed, mut finished) = (0, 0);
    for i in 0..40 {
        let n: u64 = rng.random_range(1..300);
        // Reaped below by libc::waitpid, which std's Child cannot do (it has
        // no way to wait for a stop).
        #[allow(clippy::zombie_processes)]
        let child = load_cmd(&db, &csv)
            .env("STRATA_FAULT", format!("stop-after-writes:{n}"))
            .spawn()
            .unwrap();
        let pid = child.id() as libc::pid_t;
        let mut status = 0;
        // SAFETY: waiting for our own child; status is a plain int.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
        assert_eq!(r, pid, "iteration {i}: waitpid");
        if libc::WIFSTOPPED(status) {
            // SAFETY: signalling our own stopped child, then reaping it.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            assert!(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL);
            killed += 1;
        } else {
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "iteration {i}: the load (fewer than {n} writes) failed on its own"
            );
            finished += 1;
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
    eprintln!("{killed} loads killed by SIGKILL, {finished} finished");
    assert!(
        killed >= 10 && finished >= 1,
        "{killed} killed, {finished} finished"
    );

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

/// Asserts the database is sound, has no stray data files, and `t` has one of
/// `allowed` row counts; returns the count.
fn consistent(db: &std::path::Path, what: &str, allowed: &[Option<u64>]) -> Option<u64> {
    let out = strata(db, &["check"]);
    assert!(
        out.status.success(),
        "{what}: check failed: {}",
        stderr(&out)
    );
    let now = rows(db, "t");
    assert!(
        allowed.contains(&now),
        "{what}: table t has {now:?} rows; expected one of {allowed:?}"
    );
    now
}

#[test]
fn a_crash_after_any_write_of_a_load_leaves_the_old_state_or_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let csv = dir.path().join("t.csv");
    write_csv(&csv, ROWS);
    ok(&db, &["create"]);
    // A new table (absent or complete after the crash), then an append to it (as
    // before or complete). The crash point walks over every write, whole and
    // torn, until a load makes fewer writes than the point and completes.
    for (phase, before) in [("create", None), ("append", Some(ROWS))] {
        return_to(&db, &csv, before);
        let after = Some(before.unwrap_or(0) + ROWS);
        let mut crashes = 0;
        'sweep: for n in 1.. {
            for torn in ["", ",torn"] {
                let plan = format!("crash-after-writes:{n}{torn}");
                let what = format!("{phase}, {plan}");
                let status = load_cmd(&db, &csv)
                    .env("STRATA_FAULT", &plan)
                    .status()
                    .unwrap();
                if status.success() {
                    assert!(n > 1, "{what}: the load made no write");
                    consistent(&db, &what, &[after]);
                    break 'sweep;
                }
                assert_eq!(status.code(), Some(CRASHED), "{what}: {status}");
                crashes += 1;
                consistent(&db, &what, &[before, after]);
                return_to(&db, &csv, before);
            }
        }
        eprintln!("{phase}: crashed at {crashes} points, every one consistent");
        assert!(crashes >= 4, "{phase}: only {crashes} crash points");
    }
}

/// Brings table `t` back to `rows` rows (None: absent), loading without faults.
fn return_to(db: &std::path::Path, csv: &std::path::Path, rows_wanted: Option<u64>) {
    if rows(db, "t") == rows_wanted {
        return;
    }
    std::fs::remove_dir_all(db).unwrap();
    ok(db, &["create"]);
    if rows_wanted.is_some() {
        assert!(load_cmd(db, csv).status().unwrap().success());
    }
    assert_eq!(rows(db, "t"), rows_wanted);
}

#[test]
fn an_io_error_at_any_write_or_sync_fails_the_load_clearly_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let csv = dir.path().join("t.csv");
    write_csv(&csv, ROWS);
    ok(&db, &["create"]);
    assert!(load_cmd(&db, &csv).status().unwrap().success());
    let mut failures = 0;
    for fault in ["eio-on-write", "enospc-on-write", "eio-on-sync"] {
        for n in 1.. {
            let plan = format!("{fault}:{n}");
            let out = load_cmd(&db, &csv)
                .env("STRATA_FAULT", &plan)
                .stderr(std::process::Stdio::piped())
                .output()
                .unwrap();
            if out.status.success() {
                assert!(n > 1, "{plan}: the load made no request of this kind");
                break;
            }
            failures += 1;
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{plan}: {err}");
            let expected = if fault.starts_with("enospc") {
                "No space left on device"
            } else {
                "Input/output error"
            };
            assert!(
                err.contains(expected) && err.contains("(injected)") && err.contains("/data/"),
                "{plan}: the error should say what failed and on which file: {err}"
            );
            assert!(!err.contains("panicked"), "{plan}: {err}");
            // The failed load rolled back: t still has its one load of rows.
            consistent(&db, &plan, &[Some(ROWS)]);
        }
        // The load that passed appended once: start the next fault from ROWS.
        return_to(&db, &csv, Some(ROWS));
    }
    eprintln!("{failures} injected I/O errors, every one reported and rolled back");
    assert!(failures >= 6, "only {failures} fault points");
}
