//! I/O errors in the temporary files of the operators that spill — the flash
//! paper's external and partitioned sorts and ordered Smooth Scan's Result
//! Cache — injected deterministically by the fault device at every write (and
//! read) they make: the scan fails with an error that names the file and the
//! injected errno, never panics, leaves no temporary file behind, and the same
//! scan succeeds with the right rows once the device is healthy again.

use std::path::Path;
use std::sync::Arc;

use strata_access::{
    FinalSort, OrderedPlan, PathChoice, Predicate, ScanSpec, SmoothOptions, SortOptions,
    run_ordered, run_scan,
};
use strata_storage::db::{DbOptions, NoProgress};
use strata_storage::device::{FaultInjector, FaultPlan};
use strata_storage::{Database, Table};

fn db(dir: &Path, faults: &Arc<FaultInjector>) -> Database {
    Database::create(
        dir,
        DbOptions {
            buffer_pool_bytes: 1 << 20,
            direct_io: false,
            faults: Some(faults.clone()),
            ..DbOptions::default()
        },
    )
    .unwrap()
}

fn microbench(db: &Database, rows: u64) -> Arc<Table> {
    let spec = strata_load::GenSpec::new(strata_load::GenKind::Microbench, rows);
    strata_load::generate(db, &spec, &NoProgress).unwrap();
    db.table("microbench").unwrap()
}

fn temp_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

/// Runs `scan` with the Nth request of `fault` failing, for N = 1, 2, ... until
/// the scan makes fewer such requests and succeeds; returns how many failed.
/// Every failure must name the injected error and leave `temp` empty; the
/// successful run must produce `rows` rows.
fn sweep(
    faults: &FaultInjector,
    fault: &str,
    temp: &Path,
    rows: u64,
    scan: &dyn Fn() -> strata_access::Result<u64>,
) -> u64 {
    let mut failures = 0;
    for n in 1.. {
        let plan: FaultPlan = format!("{fault}:{n}").parse().unwrap();
        faults.arm(plan);
        let result = scan();
        faults.disarm();
        match result {
            Ok(got) => {
                assert_eq!(got, rows, "{plan}: the scan that passed");
                break;
            }
            Err(e) => {
                failures += 1;
                let msg = e.to_string();
                assert!(
                    msg.contains("(injected)") && msg.contains("Input/output error"),
                    "{plan}: {msg}"
                );
                assert_eq!(temp_files(temp), 0, "{plan}: temporary files left");
            }
        }
    }
    failures
}

#[test]
fn sorts_fail_cleanly_at_every_temp_file_write_and_read() {
    let dir = tempfile::tempdir().unwrap();
    let faults = FaultInjector::new();
    let db = db(&dir.path().join("db"), &faults);
    let table = microbench(&db, 30_000);
    let pred = Predicate::parse(table.schema(), "c2 >= 0 AND c2 < 20000").unwrap();
    let mut want = 0;
    run_scan(
        ScanSpec::new(table.clone(), pred.clone()),
        &PathChoice::Full,
        &SortOptions::default(),
        |b| want += b.len() as u64,
    )
    .unwrap();
    let temp = dir.path().join("tmp");
    for (plan, final_sort) in [
        (OrderedPlan::FtsEs, FinalSort::Merge),
        (OrderedPlan::FtsPs, FinalSort::Partitioned),
        (OrderedPlan::SidxPs, FinalSort::Partitioned),
    ] {
        let opts = SortOptions {
            memory_bytes: 256 << 10,
            temp_dir: temp.clone(),
            sidx_depth: 4,
            tuple_estimate: None,
            final_sort,
        };
        let scan = || {
            let spec = ScanSpec::new(table.clone(), pred.clone()).ordered(true);
            run_ordered(spec, plan, &opts, |_| {}).map(|o| o.rows)
        };
        let writes = sweep(&faults, "eio-on-write", &temp, want, &scan);
        // The heap's own reads come first; failing every read from the first
        // also covers the temp files' reads.
        let reads = sweep(&faults, "eio-on-read", &temp, want, &scan);
        assert!(writes >= 2, "{plan}: only {writes} temp-file writes failed");
        assert!(reads >= 2, "{plan}: only {reads} reads failed");
    }
}

#[test]
fn the_result_cache_fails_cleanly_at_every_spill_write() {
    let dir = tempfile::tempdir().unwrap();
    let faults = FaultInjector::new();
    let db = db(&dir.path().join("db"), &faults);
    let table = microbench(&db, 40_000);
    let pred = Predicate::parse(table.schema(), "c2 >= 0 AND c2 < 60000").unwrap();
    let temp = dir.path().join("tmp");
    let choice = PathChoice::Smooth(SmoothOptions {
        result_cache_bytes: 64 << 10,
        temp_dir: temp.clone(),
        ..Default::default()
    });
    let mut want = 0;
    run_scan(
        ScanSpec::new(table.clone(), pred.clone()),
        &PathChoice::Full,
        &SortOptions::default(),
        |b| want += b.len() as u64,
    )
    .unwrap();
    let scan = || {
        let spec = ScanSpec::new(table.clone(), pred.clone()).ordered(true);
        run_scan(spec, &choice, &SortOptions::default(), |_| {}).map(|o| o.rows)
    };
    let failures = sweep(&faults, "eio-on-write", &temp, want, &scan);
    assert!(failures >= 2, "only {failures} spill writes failed");
}
