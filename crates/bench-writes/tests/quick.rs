//! The benchmark's harness at a small size: every workload on strata (and
//! on PostgreSQL when it is installed; skipped with a note when not), the
//! counters of what the statements changed, the tables after the runs, and
//! the result files.

use std::os::unix::fs::PermissionsExt;

use strata_bench::ResultSet;
use strata_bench_writes::workload::Workload;
use strata_bench_writes::{Options, PgMode, report, run};
use strata_storage::DbOptions;
use strata_storage::util::note_skip;

#[test]
fn quick_run_counts_changes_and_checks_the_tables() {
    let dir = tempfile::tempdir().unwrap();
    // As root, PostgreSQL runs as the `postgres` user, who must reach its
    // work directory inside this one.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut o = Options::new(dir.path().join("bench.db"), true);
    o.rows = 3_000;
    o.updates = 20;
    o.clients = 4;
    o.runs = 2;
    o.diagnostic_samples = 5;
    o.out = dir.path().join("out");
    o.db_options = DbOptions {
        buffer_pool_bytes: 64 << 20,
        ..DbOptions::default()
    };
    o.shared_buffers = "16MB".into();
    o.postgres = PgMode::IfInstalled;
    let mut log = Vec::new();
    let r = run(&o, &mut |l| log.push(l.to_string())).unwrap();
    eprintln!("{}", log.join("\n"));

    // Each run: 20 updates by one client and 20 by each of 4; the
    // diagnostics' 5 SQL and 5 storage-level updates come last.
    let updates = 2 * (20 + 4 * 20) + 2 * 5;
    assert_eq!(r.expected_sum_v, updates);
    assert_eq!(r.strata.rows, 3_000);
    assert_eq!(r.strata.sum_v, updates);
    assert_eq!(r.strata.copy_rows, 3_000);

    let strata_rows: Vec<_> = r
        .runs
        .rows()
        .iter()
        .filter(|x| x.variant == "strata")
        .collect();
    assert_eq!(strata_rows.len(), 2 * 4);
    for row in &strata_rows {
        let want = match row.get("workload").as_str() {
            w if w == Workload::UpdateOne.name() => 20,
            w if w == Workload::UpdateMany.name() => 80,
            w if w == Workload::InsertSelect.name() => 3_000,
            w if w == Workload::DeleteRange.name() => 300,
            w => panic!("unexpected workload {w}"),
        };
        assert_eq!(row.rows_out, want, "{row:?}");
        assert!(row.wall_ms > 0.0 && row.extra_f64("rate").unwrap() > 0.0);
        assert!(row.extra_f64("fdatasync_us_before_run").unwrap() > 0.0);
        // Every durable commit syncs the log or shares a sync: at most one
        // sync per statement, and at least one per workload.
        let syncs = row.extra_f64("log_syncs").unwrap();
        assert!(syncs >= 1.0, "{row:?}");
        if row.get("workload") == Workload::UpdateOne.name() {
            assert!(syncs >= 20.0, "one client commits alone: {row:?}");
        }
    }

    if r.postgres_ran {
        let pg = r.postgres.clone().unwrap();
        assert_eq!(
            (pg.rows, pg.sum_v, pg.copy_rows),
            (3_000, 2 * (20 + 4 * 20), 3_000)
        );
        assert_eq!(r.runs.len(), 2 * 4 * 2);
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("synchronous_commit = on")),
            "{:?}",
            r.notes
        );
    } else {
        assert!(
            r.notes.iter().any(|n| n.contains("PostgreSQL was not run")),
            "{:?}",
            r.notes
        );
        note_skip(
            "bench-writes quick_run_counts_changes_and_checks_the_tables",
            "PostgreSQL is not installed: its half of the run was not checked",
        );
    }

    let md = report::write(&r).unwrap();
    let text = std::fs::read_to_string(&md).unwrap();
    for part in [
        "strata / PostgreSQL",
        "goal met?",
        "Group commit",
        "Made by `",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    let medians = ResultSet::read_csv(o.out.join("writes.csv")).unwrap();
    assert_eq!(
        medians
            .rows()
            .iter()
            .filter(|x| x.variant == "strata")
            .count(),
        4
    );
    assert_eq!(
        ResultSet::read_csv(o.out.join("writes-runs.csv"))
            .unwrap()
            .len(),
        r.runs.len()
    );
}

#[test]
fn a_database_with_other_tables_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.db");
    {
        let db = strata_storage::Database::create(&path, DbOptions::default()).unwrap();
        db.create_table(
            "precious",
            strata_storage::row::Schema::parse("a BIGINT").unwrap(),
            strata_storage::TableOptions::default(),
        )
        .unwrap();
    }
    let mut o = Options::new(path.clone(), true);
    o.postgres = PgMode::Off;
    o.out = dir.path().join("out");
    let e = run(&o, &mut |_| {}).err().unwrap();
    assert!(format!("{e:#}").contains("precious"), "{e:#}");
    let db = strata_storage::Database::open(&path, DbOptions::default()).unwrap();
    assert_eq!(db.table_names(), vec!["precious".to_string()]);
}
