//! Every access path against the full scan, on the papers' micro-benchmark data
//! and on random data: same rows, index order where asked, counters that say
//! what the Smooth Scan design promises.

use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;
use strata_access::report::Mode;
use strata_access::{
    PathChoice, Policy, Predicate, ScanSpec, SmoothOptions, SortOptions, Trigger, run_scan,
};
use strata_storage::db::{DbOptions, IndexSpec, NoProgress, TableOptions};
use strata_storage::row::{Schema, Tid, Value};
use strata_storage::util::proptest_cases;
use strata_storage::{Database, Table};

fn db(dir: &std::path::Path) -> Database {
    Database::create(
        dir,
        DbOptions {
            buffer_pool_bytes: 1 << 20,
            direct_io: false,
            profile: None,
            read_only: false,
            ..DbOptions::default()
        },
    )
    .unwrap()
}

fn microbench(db: &Database, rows: u64) -> Arc<Table> {
    let mut spec = strata_load::GenSpec::new(strata_load::GenKind::Microbench, rows);
    spec.seed = 7;
    strata_load::generate(db, &spec, &NoProgress).unwrap();
    db.table("microbench").unwrap()
}

fn smooth(policy: Policy, trigger: Trigger, dir: &std::path::Path) -> PathChoice {
    PathChoice::Smooth(SmoothOptions {
        policy,
        trigger,
        temp_dir: dir.to_path_buf(),
        ..Default::default()
    })
}

/// The final sort of ordered full, sort and switch scans: a budget small
/// enough that the test tables' larger results spill.
fn sort_options() -> SortOptions {
    SortOptions {
        memory_bytes: 256 << 10,
        ..SortOptions::default()
    }
}

/// Runs a path; returns the tids in output order and the outcome.
fn run(
    table: &Arc<Table>,
    pred: &Predicate,
    ordered: bool,
    choice: &PathChoice,
) -> (Vec<Tid>, strata_access::ScanOutcome) {
    let spec = ScanSpec::new(table.clone(), pred.clone()).ordered(ordered);
    let mut tids = Vec::new();
    let out = run_scan(spec, choice, &sort_options(), |b| {
        tids.extend(b.iter().map(|(t, _)| t))
    })
    .unwrap();
    assert_eq!(out.rows, tids.len() as u64);
    (tids, out)
}

fn all_paths(dir: &std::path::Path) -> Vec<PathChoice> {
    let mut v = vec![
        PathChoice::Full,
        PathChoice::Index,
        PathChoice::Sort,
        PathChoice::Switch { estimate: 50 },
        smooth(Policy::Elastic, Trigger::Eager, dir),
        smooth(Policy::Greedy, Trigger::Eager, dir),
        smooth(Policy::SelectivityIncrease, Trigger::Eager, dir),
        smooth(Policy::CostAware, Trigger::Eager, dir),
        smooth(Policy::PageOrder, Trigger::Eager, dir),
        smooth(Policy::Elastic, Trigger::Optimizer { estimate: 50 }, dir),
        smooth(Policy::Elastic, Trigger::Sla { bound_ms: 1e9 }, dir),
        smooth(Policy::Elastic, Trigger::Sla { bound_ms: 0.0 }, dir),
    ];
    v.push(PathChoice::Smooth(SmoothOptions {
        policy: Policy::CostAware,
        max_mode: Mode::PageProbe,
        temp_dir: dir.to_path_buf(),
        ..Default::default()
    }));
    // A small region cap, so the cost-aware policy reaches it and sweeps in
    // page order; after an optimizer-driven mode 0 the sweep must skip what
    // mode 0 produced.
    for trigger in [Trigger::Eager, Trigger::Optimizer { estimate: 50 }] {
        v.push(PathChoice::Smooth(SmoothOptions {
            policy: Policy::CostAware,
            max_region_pages: 4,
            trigger,
            temp_dir: dir.to_path_buf(),
            ..Default::default()
        }));
    }
    v
}

#[test]
fn a_full_scan_split_within_page_bounds_reads_each_page_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir.path().join("db"));
    let table = microbench(&db, 20_000);
    let pages = table.heap().num_pages();
    assert!(pages > 20, "{pages} pages");
    let pred = Predicate::parse(table.schema(), "c2 >= 0 AND c2 < 30000").unwrap();
    let (whole, _) = run(&table, &pred, false, &PathChoice::Full);
    for cuts in [
        vec![],
        vec![pages / 2],
        vec![1, 7, pages - 1],
        vec![0, pages, pages + 5],
    ] {
        // Part k reads from cut k-1 (none for the first) to cut k (none for
        // the last).
        let mut got = Vec::new();
        let mut heap_pages = 0;
        for k in 0..=cuts.len() {
            let from = k.checked_sub(1).map(|i| cuts[i]);
            let to = cuts.get(k).copied();
            let spec = ScanSpec::new(table.clone(), pred.clone()).within(from, to);
            let lo = from.unwrap_or(0);
            let hi = to.unwrap_or(pages).min(pages).max(lo);
            assert_eq!(spec.heap_pages(), (lo, hi), "{cuts:?} part {k}");
            let out = run_scan(spec, &PathChoice::Full, &sort_options(), |b| {
                got.extend(b.iter().map(|(t, _)| t));
                for (t, _) in b.iter() {
                    assert!(
                        (lo..hi).contains(&(t.page as u64)),
                        "{t:?} outside part {k} of {cuts:?}"
                    );
                }
            })
            .unwrap();
            heap_pages += out.report.heap_pages;
        }
        // The parts, in order, are the whole scan, and read every page once.
        assert_eq!(got, whole, "{cuts:?}");
        assert_eq!(heap_pages, pages, "{cuts:?}");
    }
}

/// Keys of the rows, in output order, to check index order.
fn keys(table: &Table, tids: &[Tid], col: usize) -> Vec<(i64, Tid)> {
    tids.iter()
        .map(|&t| (table.get_row(t).unwrap().unwrap()[col].as_i64().unwrap(), t))
        .collect()
}

#[test]
fn every_path_returns_the_full_scans_rows_over_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir.path().join("db"));
    let table = microbench(&db, 40_000);
    let c2 = table.column("c2").unwrap();
    for pct in [0.0, 0.001, 0.01, 0.1, 1.0, 10.0, 50.0, 100.0] {
        let hi = (100_001.0 * pct / 100.0) as i64;
        let pred = Predicate::parse(table.schema(), &format!("c2 >= 0 AND c2 < {hi}")).unwrap();
        let (full, _) = run(&table, &pred, false, &PathChoice::Full);
        let want: BTreeSet<Tid> = full.iter().copied().collect();
        assert_eq!(want.len(), full.len());
        for choice in all_paths(dir.path()) {
            for ordered in [false, true] {
                let (got, out) = run(&table, &pred, ordered, &choice);
                let set: BTreeSet<Tid> = got.iter().copied().collect();
                assert_eq!(
                    set.len(),
                    got.len(),
                    "{} at {pct}% produced a tuple twice",
                    out.report.path
                );
                assert_eq!(
                    set, want,
                    "{} (ordered {ordered}) at {pct}%",
                    out.report.path
                );
                if ordered || matches!(choice, PathChoice::Index) {
                    let k = keys(&table, &got, c2);
                    assert!(
                        k.windows(2).all(|w| w[0] < w[1]),
                        "{} at {pct}% is not in index order",
                        out.report.path
                    );
                }
            }
        }
    }
}

#[test]
fn smooth_scan_reads_each_page_at_most_once_and_keeps_a_bitmap() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir.path().join("db"));
    let table = microbench(&db, 40_000);
    let pages = table.heap().num_pages();
    let pred = Predicate::parse(table.schema(), "c2 >= 0 AND c2 < 100001").unwrap();
    let (_, out) = run(
        &table,
        &pred,
        false,
        &smooth(Policy::Elastic, Trigger::Eager, dir.path()),
    );
    assert_eq!(out.rows, 40_000);
    assert_eq!(out.report.reread_pages, 0);
    assert!(
        out.report.heap_pages <= pages,
        "{} > {pages}",
        out.report.heap_pages
    );
    assert_eq!(
        out.report.page_cache_bytes as u64,
        pages.div_ceil(64) * 8,
        "one bit per page"
    );
    // At 100% the region doubles towards the cap: far fewer requests than pages.
    assert!(
        out.report.regions.iter().any(|&(_, r)| r >= 16),
        "{:?}",
        out.report.regions
    );
    // The paper's synchronous operator doubles after every region, and stops
    // reading the index once every page is processed.
    let sync = PathChoice::Smooth(SmoothOptions {
        policy: Policy::CostAware,
        io_depth: 1,
        temp_dir: dir.path().to_path_buf(),
        ..Default::default()
    });
    let (_, out1) = run(&table, &pred, false, &sync);
    assert_eq!(out1.rows, 40_000);
    assert!(
        out1.report.regions.iter().any(|&(_, r)| r >= 64),
        "{:?}",
        out1.report.regions
    );
    assert!(
        out1.report.index_entries < 40_000,
        "{} index entries",
        out1.report.index_entries
    );
    let index_pages = table.indexes()[0].btree.num_pages();
    assert!(
        out.io.pages_read <= pages + index_pages,
        "{} pages read",
        out.io.pages_read
    );
    assert_eq!(
        out.report.mode_changes.first().map(|m| m.to),
        Some(Mode::Flattening)
    );

    // At a tiny selectivity the region stays small: pages read close to result pages.
    let pred = Predicate::parse(table.schema(), "c2 >= 0 AND c2 < 10").unwrap();
    let (tids, out) = run(
        &table,
        &pred,
        false,
        &smooth(Policy::Elastic, Trigger::Eager, dir.path()),
    );
    let result_pages: BTreeSet<u32> = tids.iter().map(|t| t.page).collect();
    assert!(
        out.report.heap_pages <= 2 * result_pages.len() as u64 + 2,
        "{} for {}",
        out.report.heap_pages,
        result_pages.len()
    );
}

/// A table big enough for regions of several hundred pages, which are streamed
/// (read ahead while processed) instead of read up front: same rows, each page
/// once, and batches that stay small (a region is produced across many batches,
/// whole pages at a time, so the consumer works while the read-ahead goes on).
#[test]
fn long_regions_are_streamed_and_still_exact() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir.path().join("db"));
    let table = microbench(&db, 200_000);
    let pages = table.heap().num_pages();
    assert!(pages > 1000);
    for pct in [100.0, 70.0, 30.0, 10.0] {
        let pred = Predicate::parse(table.schema(), &q(pct)).unwrap();
        let (full, _) = run(&table, &pred, false, &PathChoice::Full);
        let want: BTreeSet<Tid> = full.iter().copied().collect();
        // Several caps and depths, so batches fill at many places in a
        // streamed region, run boundaries included.
        for (depth, cap) in [(1, 2000), (4, 2000), (1, 300), (2, 700), (3, 1100)] {
            let choice = PathChoice::Smooth(SmoothOptions {
                policy: Policy::CostAware,
                io_depth: depth,
                max_region_pages: cap,
                temp_dir: dir.path().to_path_buf(),
                ..Default::default()
            });
            let spec = ScanSpec::new(table.clone(), pred.clone());
            let (mut got, mut largest) = (Vec::new(), 0);
            let out = run_scan(spec, &choice, &sort_options(), |b| {
                largest = largest.max(b.len());
                got.extend(b.iter().map(|(t, _)| t));
            })
            .unwrap();
            let mut on_page = std::collections::HashMap::new();
            for t in &got {
                *on_page.entry(t.page).or_insert(0usize) += 1;
            }
            let per_page = on_page.values().copied().max().unwrap_or(0);
            assert!(
                largest < strata_access::batch::BATCH_ROWS + per_page,
                "a batch of {largest} rows (at most {per_page} rows per page)"
            );
            let set: BTreeSet<Tid> = got.iter().copied().collect();
            assert_eq!(set.len(), got.len());
            assert!(
                set == want,
                "{pct}% depth {depth} cap {cap}: {} rows, want {}; first missing {:?}",
                set.len(),
                want.len(),
                want.difference(&set).next()
            );
            assert!(out.report.heap_pages <= pages);
            // Four regions in flight share the 2000-page buffer, so on this
            // table none of them gets to be streamed; every other case streams.
            if (depth, cap) != (4, 2000) {
                assert!(out.report.read_ahead_streams > 0, "{:?}", out.report);
            }
            assert!(
                out.report.regions.iter().any(|&(_, r)| r >= 256),
                "{:?}",
                out.report.regions
            );
        }
    }
}

/// Dense predicates take the cost-aware policy's regions to the cap, after
/// which it sweeps in page order: the same rows, every page read once, and
/// the index left alone for the rest of the scan. A sparse one never sweeps.
#[test]
fn cost_aware_smooth_scan_sweeps_dense_data_in_page_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir.path().join("db"));
    let table = microbench(&db, 200_000);
    let pages = table.heap().num_pages();
    let choice = PathChoice::Smooth(SmoothOptions {
        policy: Policy::CostAware,
        max_region_pages: 64,
        temp_dir: dir.path().to_path_buf(),
        ..Default::default()
    });
    for pct in [100.0, 20.0, 0.01] {
        let pred = Predicate::parse(table.schema(), &q(pct)).unwrap();
        let (full, _) = run(&table, &pred, false, &PathChoice::Full);
        let want: BTreeSet<Tid> = full.iter().copied().collect();
        table.heat().set_every(1);
        table.heat().clear();
        let (got, out) = run(&table, &pred, false, &choice);
        let set: BTreeSet<Tid> = got.iter().copied().collect();
        assert_eq!(set.len(), got.len(), "{pct}%: a tuple twice");
        assert_eq!(set, want, "{pct}%");
        let r = &out.report;
        // Hot/cold clustering counts the tuples the index led to, not those
        // of the sweep (which reads the table as a full scan does).
        let counted = table.heat().total();
        if r.swept_pages > 0 {
            assert!(
                counted < want.len() as u64 / 2,
                "{pct}%: {counted} counted: {r:?}"
            );
        } else {
            assert_eq!(counted, want.len() as u64, "{pct}%: {r:?}");
        }
        if pct >= 20.0 {
            assert!(r.swept_pages > pages / 2, "{pct}%: {r:?}");
            assert_eq!(r.heap_pages, pages, "{pct}%: every page once");
            assert!(
                out.io.pages_read <= pages + pages / 10,
                "{pct}%: {:?}",
                out.io
            );
            assert!(r.index_entries < want.len() as u64 / 4, "{pct}%: {r:?}");
            // The sweep's regions share one read-ahead stream (the ramp's
            // regions, at most 64 pages here, are read into the buffer).
            assert_eq!(r.read_ahead_streams, 1, "{pct}%: {r:?}");
        } else {
            assert_eq!(r.swept_pages, 0, "{pct}%: {r:?}");
        }
    }
}

fn q(pct: f64) -> String {
    format!("c2 >= 0 AND c2 < {}", (100_001.0 * pct / 100.0) as i64)
}

#[test]
fn triggers_change_mode_where_they_should() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir.path().join("db"));
    let table = microbench(&db, 40_000);
    let pred = Predicate::parse(table.schema(), "c2 >= 0 AND c2 < 5000").unwrap();
    let (_, out) = run(
        &table,
        &pred,
        false,
        &smooth(
            Policy::Elastic,
            Trigger::Optimizer { estimate: 300 },
            dir.path(),
        ),
    );
    let first = &out.report.mode_changes[0];
    assert_eq!(
        (first.from, first.to, first.at_row),
        (Mode::Index, Mode::PageProbe, 300)
    );
    let (_, out) = run(&table, &pred, false, &PathChoice::Switch { estimate: 300 });
    assert_eq!(out.report.mode_changes[0].at_row, 300);
    // An SLA that cannot be met even by morphing at once morphs at once; a loose
    // one never morphs.
    let (_, out) = run(
        &table,
        &pred,
        false,
        &smooth(Policy::Elastic, Trigger::Sla { bound_ms: 0.0 }, dir.path()),
    );
    assert_eq!(out.report.mode_changes[0].at_row, 0);
    let (_, out) = run(
        &table,
        &pred,
        false,
        &smooth(Policy::Elastic, Trigger::Sla { bound_ms: 1e12 }, dir.path()),
    );
    assert!(out.report.mode_changes.is_empty());
}

#[test]
fn ordered_smooth_scan_spills_under_a_tiny_budget_and_stays_within_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir.path().join("db"));
    let table = microbench(&db, 40_000);
    let c2 = table.column("c2").unwrap();
    let pred = Predicate::parse(table.schema(), "c2 >= 0 AND c2 < 60000").unwrap();
    let (want, _) = run(&table, &pred, true, &PathChoice::Index);
    for budget in [64 << 10, 256 << 10, 64 << 20] {
        let choice = PathChoice::Smooth(SmoothOptions {
            result_cache_bytes: budget,
            temp_dir: dir.path().join("tmp"),
            ..Default::default()
        });
        let (got, out) = run(&table, &pred, true, &choice);
        assert_eq!(got, want, "budget {budget}");
        let rc = out.report.result_cache.unwrap();
        assert!(
            rc.peak_bytes <= budget,
            "peak {} over budget {budget}",
            rc.peak_bytes
        );
        if budget < 1 << 20 {
            assert!(
                rc.spilled_partitions > 0 && out.io.pages_written > 0,
                "{rc:?}"
            );
        } else {
            assert_eq!(rc.spilled_partitions, 0);
        }
        let k = keys(&table, &got, c2);
        assert!(k.windows(2).all(|w| w[0] < w[1]));
    }
    // Spill files are gone.
    assert_eq!(
        std::fs::read_dir(dir.path().join("tmp")).unwrap().count(),
        0
    );
}

/// Random small tables (a skewed key domain with duplicates and NULL-free keys)
/// and random range-plus-residual predicates: every path agrees with the full scan.
fn random_table(db: &Database, rows: &[(i32, i32)]) -> Arc<Table> {
    let schema = Schema::parse("k INT, v INT, pad CHAR(40)").unwrap();
    let mut load = db
        .begin_create_load(
            "r",
            schema,
            TableOptions {
                fill_factor: 0.7,
                segment_pages: 16,
            },
            vec![IndexSpec::new("r_k", &["k"])],
        )
        .unwrap();
    for (k, v) in rows {
        load.append(&[Value::Int32(*k), Value::Int32(*v), Value::Str("x".into())])
            .unwrap();
    }
    load.commit(&NoProgress).unwrap();
    db.table("r").unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(12)))]
    #[test]
    fn random_data_and_predicates(
        rows in proptest::collection::vec((0i32..200, 0i32..10), 1..3000),
        lo in 0i32..200, width in 0i32..220, v_max in 0i32..11,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = db(&dir.path().join("db"));
        let table = random_table(&db, &rows);
        let pred = Predicate::parse(table.schema(), &format!("k >= {lo} AND k < {} AND v < {v_max}", lo + width)).unwrap();
        let (full, _) = run(&table, &pred, false, &PathChoice::Full);
        let want: BTreeSet<Tid> = full.iter().copied().collect();
        let expected = rows.iter().filter(|(k, v)| *k >= lo && *k < lo + width && *v < v_max).count();
        prop_assert_eq!(want.len(), expected);
        for choice in all_paths(dir.path()) {
            for ordered in [false, true] {
                let (got, out) = run(&table, &pred, ordered, &choice);
                let set: BTreeSet<Tid> = got.iter().copied().collect();
                prop_assert_eq!(set.len(), got.len());
                prop_assert_eq!(&set, &want, "{}", out.report.path);
                if ordered {
                    let k = keys(&table, &got, 0);
                    prop_assert!(k.windows(2).all(|w| w[0] < w[1]), "{}", out.report.path);
                }
            }
        }
        // Ordered Smooth Scan under a small budget still gives the same rows in order.
        let tiny = PathChoice::Smooth(SmoothOptions { result_cache_bytes: 48 << 10, temp_dir: dir.path().join("t"), ..Default::default() });
        let (ordered_idx, _) = run(&table, &pred, true, &PathChoice::Index);
        match strata_access::run_scan(ScanSpec::new(table.clone(), pred.clone()).ordered(true), &tiny, &sort_options(), |_| {}) {
            Ok(out) => {
                let (got, _) = run(&table, &pred, true, &tiny);
                prop_assert_eq!(got, ordered_idx);
                prop_assert!(out.report.result_cache.unwrap().peak_bytes <= 48 << 10);
            }
            Err(e) => prop_assert!(e.to_string().contains("budget"), "{e}"),
        }
    }
}

/// On sparse data the cost-aware policy's probes (two-page regions, when
/// one-page regions give no evidence) find too little and come less and less
/// often: few pages beyond the ones the index points at (reading a neighbour
/// for every other batch of regions cost 230 extra pages on 504 here). On
/// dense data the same probes grow the regions to the cap, with one region per
/// batch (a disk) as with sixteen.
#[test]
fn cost_aware_probes_back_off_on_sparse_data_and_grow_on_dense() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir.path().join("db"));
    let table = microbench(&db, 1_000_000);
    let choice = |depth| {
        PathChoice::Smooth(SmoothOptions {
            policy: Policy::CostAware,
            io_depth: depth,
            temp_dir: dir.path().to_path_buf(),
            ..Default::default()
        })
    };
    // 500 rows on 5400 pages: a neighbour holds results about 9% of the time,
    // below the 36% break-even of the default costs at depth 16.
    let pred = Predicate::parse(table.schema(), &q(0.05)).unwrap();
    let (got, out) = run(&table, &pred, false, &choice(16));
    let pages: BTreeSet<u32> = got.iter().map(|t| t.page).collect();
    let extra = out.report.heap_pages - pages.len() as u64;
    assert!(
        extra <= pages.len() as u64 / 5,
        "{extra} pages beyond {} result pages: {:?}",
        pages.len(),
        out.report.regions
    );
    let pred = Predicate::parse(table.schema(), &q(20.0)).unwrap();
    for depth in [1, 16] {
        let (_, out) = run(&table, &pred, false, &choice(depth));
        let largest = out.report.regions.iter().map(|r| r.1).max();
        assert_eq!(
            largest,
            Some(2000),
            "depth {depth}: {:?}",
            out.report.regions
        );
    }
}
