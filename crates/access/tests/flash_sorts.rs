//! The flash paper's sorts and plans: external merge sort (ES) and partitioned
//! sort (PS) after a sorted index scan (SIDX) or a full scan (FTS), against a
//! plain in-memory sort; their counters (one write and one read for PS, the
//! merge-pass formula for ES), memory peaks, duplicates, wrong estimates and
//! temporary files.

use std::sync::Arc;

use proptest::prelude::*;
use strata_access::external_sort::{fan_in, theory_passes};
use strata_access::partitioned_sort::MIN_PS_BUDGET;
use strata_access::report::SortReport;
use strata_access::{
    OrderedPlan, PathChoice, Predicate, ScanOutcome, ScanSpec, SortOptions, open_ordered,
    run_ordered, run_scan,
};
use strata_storage::db::{DbOptions, IndexSpec, NoProgress, TableOptions};
use strata_storage::page::PAGE_SIZE;
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

fn flash(db: &Database, rows: u64) -> Arc<Table> {
    let spec = strata_load::GenSpec::new(strata_load::GenKind::Flash, rows);
    strata_load::generate(db, &spec, &NoProgress).unwrap();
    db.table("flash").unwrap()
}

/// A table `k INT, v INT, pad VARCHAR(200)` with index on k: duplicates and
/// tuples of varying length.
fn random_table(db: &Database, rows: &[(i32, i32, usize)]) -> Arc<Table> {
    let schema = Schema::parse("k INT, v INT, pad VARCHAR(200)").unwrap();
    let mut load = db
        .begin_create_load(
            "r",
            schema,
            TableOptions {
                fill_factor: 0.9,
                segment_pages: 64,
            },
            vec![IndexSpec::new("r_k", &["k"])],
        )
        .unwrap();
    for (k, v, len) in rows {
        load.append(&[
            Value::Int32(*k),
            Value::Int32(*v),
            Value::Str("p".repeat(*len)),
        ])
        .unwrap();
    }
    load.commit(&NoProgress).unwrap();
    db.table("r").unwrap()
}

/// Tuples in output order: (tid, bytes).
type Rows = Vec<(Tid, Vec<u8>)>;

/// The expected output: the full scan's qualifying tuples sorted in memory by
/// their index entry (key ++ tid).
fn in_memory_sort(table: &Arc<Table>, pred: &Predicate) -> Vec<(Tid, Vec<u8>)> {
    let spec = ScanSpec::new(table.clone(), pred.clone());
    let mut rows: Vec<(Vec<u8>, Tid, Vec<u8>)> = Vec::new();
    run_scan(
        spec.clone(),
        &PathChoice::Full,
        &SortOptions::default(),
        |b| {
            for (tid, t) in b.iter() {
                let mut e = Vec::new();
                spec.entry_of(t, tid, &mut e).unwrap();
                rows.push((e, tid, t.to_vec()));
            }
        },
    )
    .unwrap();
    rows.sort();
    rows.into_iter().map(|(_, tid, t)| (tid, t)).collect()
}

fn run_plan(
    table: &Arc<Table>,
    pred: &Predicate,
    plan: OrderedPlan,
    opts: &SortOptions,
) -> strata_access::Result<(Rows, ScanOutcome)> {
    let spec = ScanSpec::new(table.clone(), pred.clone()).ordered(true);
    let mut got = Vec::new();
    let out = run_ordered(spec, plan, opts, |b| {
        got.extend(b.iter().map(|(tid, t)| (tid, t.to_vec())))
    })?;
    Ok((got, out))
}

fn opts(dir: &std::path::Path, memory: usize) -> SortOptions {
    SortOptions {
        memory_bytes: memory,
        temp_dir: dir.join("tmp"),
        sidx_depth: 4,
        tuple_estimate: None,
        final_sort: strata_access::FinalSort::Partitioned,
    }
}

fn sort_report(out: &ScanOutcome) -> SortReport {
    out.report.sort.clone().expect("a sort report")
}

/// The temporary directory holds no file.
fn no_temp_files(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir.join("tmp"))
        .map(|d| d.count() == 0)
        .unwrap_or(true)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(16)))]
    /// Every plan, at tiny and larger budgets, over duplicate-heavy keys and
    /// varying tuple sizes, gives exactly the in-memory sort.
    #[test]
    fn every_plan_equals_an_in_memory_sort(
        keys in prop_oneof![Just(1i32), Just(3), Just(40), Just(100_000)],
        rows in proptest::collection::vec((0i32..100_000, 0i32..10, 0usize..200), 1..2500),
        lo_pct in 0i32..60, width_pct in 0i32..120, v_max in 1i32..11,
        memory in prop_oneof![Just(MIN_PS_BUDGET), Just(64usize << 10), Just(160 << 10), Just(1 << 20)],
    ) {
        let rows: Vec<(i32, i32, usize)> = rows.into_iter().map(|(k, v, l)| (k % keys, v, l)).collect();
        let dir = tempfile::tempdir().unwrap();
        let db = db(&dir.path().join("db"));
        let table = random_table(&db, &rows);
        let lo = (keys as i64 * lo_pct as i64 / 100) as i32;
        let hi = lo as i64 + (keys as i64 * width_pct as i64 / 100).max(1);
        let pred = Predicate::parse(table.schema(), &format!("k >= {lo} AND k < {hi} AND v < {v_max}")).unwrap();
        let want = in_memory_sort(&table, &pred);
        for plan in OrderedPlan::ALL {
            let (got, out) = run_plan(&table, &pred, plan, &opts(dir.path(), memory)).unwrap();
            prop_assert!(got == want, "{plan} at {memory} bytes: {} rows, want {}", got.len(), want.len());
            if let Some(s) = &out.report.sort {
                prop_assert!(s.peak_bytes <= memory, "{plan}: peak {} > {memory}", s.peak_bytes);
                prop_assert_eq!(s.merge_passes, s.theory_passes, "{}", plan);
            }
            prop_assert!(no_temp_files(dir.path()));
        }
    }
}

#[test]
fn ps_writes_and_reads_the_sorted_data_exactly_once_at_every_memory_size() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir.path().join("db"));
    let table = flash(&db, 20_000);
    // 30% of the table: 6000 rows of 300 bytes, ~1.9 MB of records.
    let pred = Predicate::parse(table.schema(), "a >= 1 AND a <= 6000").unwrap();
    let want = in_memory_sort(&table, &pred);
    assert_eq!(want.len(), 6000);
    let bytes: u64 = want
        .iter()
        .map(|(_, t)| 4 + 4 + 1 + 6 + t.len() as u64)
        .sum();
    for memory in [192usize << 10, 256 << 10, 1 << 20, 4 << 20] {
        for plan in [OrderedPlan::SidxPs, OrderedPlan::FtsPs] {
            let (got, out) = run_plan(&table, &pred, plan, &opts(dir.path(), memory)).unwrap();
            assert!(got == want, "{plan} at {memory}");
            let s = sort_report(&out);
            assert_eq!(s.fallbacks, 0, "{plan} at {memory}: {s:?}");
            assert_eq!(s.merge_passes, 0);
            assert_eq!(s.records, 6000);
            if memory == 4 << 20 {
                // It all fits: one partition, sorted in memory, no temporary I/O.
                assert_eq!(s.partitions, 1);
                assert_eq!(
                    (s.pages_written, s.pages_read, out.io.pages_written),
                    (0, 0, 0)
                );
                continue;
            }
            assert!(s.partitions > 1);
            // Every record is written once and read once, bytes for bytes.
            assert_eq!(s.record_bytes, bytes, "{plan} at {memory}");
            assert_eq!(s.record_bytes_written, bytes);
            assert_eq!(s.record_bytes_read, bytes);
            // Every page written is read once; pages are full but for each
            // partition's last page and each page's unused tail (< one record).
            assert_eq!(s.pages_read, s.pages_written);
            let rec = 315u64;
            let per_page = PAGE_SIZE as u64 / rec;
            assert!(s.pages_written >= bytes.div_ceil(PAGE_SIZE as u64));
            assert!(
                s.pages_written <= 6000u64.div_ceil(per_page) + s.partitions,
                "{plan} at {memory}: {s:?}"
            );
            // The device saw exactly the sort's writes (the heap is not written).
            assert_eq!(out.io.pages_written, s.pages_written);
            assert!(s.peak_bytes <= memory, "{s:?}");
            // Partitions follow the memory: fewer with more memory, each full.
            let cap = strata_access::partitioned_sort::partition_capacity(memory) as u64;
            assert_eq!(s.partitions, 6000u64.div_ceil(cap / (rec + 4)), "{s:?}");
            assert!(no_temp_files(dir.path()));
        }
    }
}

#[test]
fn es_passes_match_the_formula_and_each_pass_moves_the_data_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir.path().join("db"));
    let table = flash(&db, 20_000);
    let pred = Predicate::parse(table.schema(), "a >= 1 AND a <= 6000").unwrap();
    let want = in_memory_sort(&table, &pred);
    let mut seen_passes = Vec::new();
    for memory in [48usize << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20] {
        for plan in [OrderedPlan::SidxEs, OrderedPlan::FtsEs] {
            let (got, out) = run_plan(&table, &pred, plan, &opts(dir.path(), memory)).unwrap();
            assert!(got == want, "{plan} at {memory}");
            let s = sort_report(&out);
            let k = fan_in(memory) as u64;
            assert_eq!(s.fan_in, k);
            // Runs: the arena (budget less one block) filled again and again.
            let cap = strata_access::external_sort::arena_capacity(memory) as u64;
            let charged = s.record_bytes + 4 * s.records;
            if charged <= cap {
                assert_eq!((s.runs, s.merge_passes, s.pages_written), (0, 0, 0));
                continue;
            }
            // Every record charges 4 + 11 + 300 + 4 = 319 bytes; a run holds as many as fit.
            assert_eq!(s.runs, 6000u64.div_ceil(cap / 319), "{s:?}");
            // Independent formula: smallest p with k^p >= runs.
            let p = (0..).find(|&p| k.pow(p) >= s.runs).unwrap() as u64;
            assert_eq!(s.merge_passes, p, "{plan} at {memory}: {s:?}");
            assert_eq!(s.theory_passes, theory_passes(s.runs, k));
            // Run generation and every pass but the last write the data; every pass reads it.
            assert_eq!(s.record_bytes_written, p * s.record_bytes, "{s:?}");
            assert_eq!(s.record_bytes_read, p * s.record_bytes, "{s:?}");
            assert!(s.peak_bytes <= memory, "{s:?}");
            assert_eq!(out.io.pages_written, s.pages_written);
            seen_passes.push(p);
            assert!(no_temp_files(dir.path()));
        }
    }
    // Small memory needs more passes than large.
    assert!(
        seen_passes.iter().max() > seen_passes.iter().min(),
        "{seen_passes:?}"
    );
    assert!(seen_passes.contains(&1) && seen_passes.iter().any(|&p| p >= 3));
}

#[test]
fn one_key_everywhere_is_split_by_tid_and_stays_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir.path().join("db"));
    let rows: Vec<(i32, i32, usize)> = (0..4000).map(|i| (7, i % 10, 100)).collect();
    let table = random_table(&db, &rows);
    let pred = Predicate::parse(table.schema(), "k >= 0 AND k <= 10").unwrap();
    let want = in_memory_sort(&table, &pred);
    for plan in [OrderedPlan::SidxPs, OrderedPlan::FtsPs] {
        let (got, out) = run_plan(&table, &pred, plan, &opts(dir.path(), 128 << 10)).unwrap();
        assert!(got == want);
        let s = sort_report(&out);
        assert!(s.partitions > 3, "{s:?}");
        // Every boundary falls inside the one key's run: split by tuple id.
        assert_eq!(s.partitions_split, s.partitions - 1, "{s:?}");
        assert_eq!(s.fallbacks, 0);
        assert_eq!(s.pages_read, s.pages_written);
        assert!(s.peak_bytes <= 128 << 10);
    }
}

#[test]
fn a_wrong_size_estimate_falls_back_to_an_external_sort_of_the_partition() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir.path().join("db"));
    let table = flash(&db, 20_000);
    let pred = Predicate::parse(table.schema(), "a >= 1 AND a <= 6000").unwrap();
    let want = in_memory_sort(&table, &pred);
    let mut o = opts(dir.path(), 256 << 10);
    o.tuple_estimate = Some(30); // a tenth of the real 300 bytes
    let (got, out) = run_plan(&table, &pred, OrderedPlan::SidxPs, &o).unwrap();
    assert!(got == want);
    let s = sort_report(&out);
    assert!(s.fallbacks >= 1 && s.fallbacks <= s.partitions, "{s:?}");
    assert!(s.peak_bytes <= 256 << 10, "{s:?}");
    // The fallbacks' runs are written and read on top of the partitions.
    assert!(s.pages_written > s.record_bytes / PAGE_SIZE as u64 + s.partitions);
    assert!(no_temp_files(dir.path()));
}

#[test]
fn too_little_memory_for_the_partition_buffers_falls_back_to_es_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir.path().join("db"));
    let table = flash(&db, 20_000);
    let pred = Predicate::parse(table.schema(), "a >= 1 AND a <= 6000").unwrap();
    let want = in_memory_sort(&table, &pred);
    let (got, out) = run_plan(
        &table,
        &pred,
        OrderedPlan::FtsPs,
        &opts(dir.path(), 64 << 10),
    )
    .unwrap();
    assert!(got == want);
    let s = sort_report(&out);
    assert_eq!(s.fallbacks, 1, "{s:?}");
    assert!(s.merge_passes >= 2 && s.merge_passes == s.theory_passes);
    assert!(
        out.report
            .notes
            .iter()
            .any(|n| n.contains("external merge sort")),
        "{:?}",
        out.report.notes
    );
    assert!(s.peak_bytes <= 64 << 10);
}

#[test]
fn temp_files_go_when_a_sort_is_dropped_half_way_and_bad_budgets_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir.path().join("db"));
    let table = flash(&db, 20_000);
    let pred = Predicate::parse(table.schema(), "a >= 1 AND a <= 6000").unwrap();
    for plan in [OrderedPlan::SidxPs, OrderedPlan::FtsEs] {
        let spec = ScanSpec::new(table.clone(), pred.clone()).ordered(true);
        let mut p = open_ordered(spec, plan, &opts(dir.path(), 128 << 10)).unwrap();
        let mut b = strata_access::TupleBatch::new();
        assert!(p.next_batch(&mut b).unwrap());
        assert!(!no_temp_files(dir.path()), "{plan} wrote nothing");
        drop(p);
        assert!(no_temp_files(dir.path()), "{plan} left its temp file");
    }
    let spec = ScanSpec::new(table.clone(), pred.clone()).ordered(true);
    let e = open_ordered(spec, OrderedPlan::FtsEs, &opts(dir.path(), 1000))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("sort memory of 1000 bytes is too small"), "{e}");
    // A table without an index on the predicate's column is named.
    let rows: Vec<(i32, i32, usize)> = (0..10).map(|i| (i, i, 1)).collect();
    let r = random_table(&db, &rows);
    let spec = ScanSpec::new(r.clone(), Predicate::parse(r.schema(), "v < 3").unwrap());
    let e = open_ordered(spec, OrderedPlan::SidxPs, &opts(dir.path(), 1 << 20))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("no index"), "{e}");
}
