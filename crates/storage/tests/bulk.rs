//! Batched row changes (`Table::insert_rows`, `Table::delete_rows`) and the
//! batched index operations under them (`BTree::insert_sorted`,
//! `BTree::delete_sorted`): checked against a model and against the same
//! changes made a row at a time on a twin table, kept durable by the log, and
//! cheap in pages. The timing run at the end is ignored by default:
//! `cargo test --release -p strata-storage --test integration bulk:: -- --ignored --nocapture`.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use strata_storage::btree::BTree;
use strata_storage::buffer::{BufferPool, as_writer};
use strata_storage::db::NoProgress;
use strata_storage::device::{Device, FileDevice};
use strata_storage::maintenance::check::check_database;
use strata_storage::row::{DataType, Schema, Tid, Value, encode_key};
use strata_storage::util::proptest_cases;
use strata_storage::{Database, DbOptions, IndexSpec, StorageError, Table, TableOptions};

fn opts(pool_bytes: usize) -> DbOptions {
    DbOptions {
        buffer_pool_bytes: pool_bytes,
        direct_io: false,
        ..DbOptions::default()
    }
}

const SCHEMA: &str = "k BIGINT, g INT NULL, s VARCHAR(12) NULL, pad VARCHAR(40)";

/// Index column sets the tests pick from: a mostly unique key, a key with many
/// duplicates (and NULLs), a string key, a composite one.
const INDEX_SETS: [&[&str]; 4] = [&["k"], &["g"], &["s"], &["g", "s"]];

const STRS: [&str; 8] = ["", "a", "ab", "abc", "b", "zz", "\u{e4}", "longer one"];

/// Creates tables `a` and `b`, alike, each with the indexes `which` (positions
/// in [`INDEX_SETS`]) and `initial` rows loaded.
fn setup(dir: &Path, which: &[usize], fill: f64, initial: &[Vec<Value>]) -> Database {
    let db = Database::create(dir, opts(8 << 20)).unwrap();
    for name in ["a", "b"] {
        let specs = which
            .iter()
            .map(|&i| IndexSpec::new(format!("{name}_{i}"), INDEX_SETS[i]))
            .collect();
        let topts = TableOptions {
            fill_factor: fill,
            segment_pages: 16,
        };
        let mut load = db
            .begin_create_load(name, Schema::parse(SCHEMA).unwrap(), topts, specs)
            .unwrap();
        for r in initial {
            load.append(r).unwrap();
        }
        load.commit(&NoProgress).unwrap();
    }
    db
}

fn row(k: i64, g: Option<i32>, s: Option<usize>, pad: usize) -> Vec<Value> {
    vec![
        Value::Int64(k),
        g.map_or(Value::Null, Value::Int32),
        s.map_or(Value::Null, |i| Value::Str(STRS[i % STRS.len()].into())),
        Value::Str("x".repeat(pad)),
    ]
}

fn any_row() -> impl Strategy<Value = Vec<Value>> {
    (
        0i64..400,
        proptest::option::weighted(0.9, 0i32..8),
        proptest::option::weighted(0.9, 0usize..8),
        0usize..40,
    )
        .prop_map(|(k, g, s, pad)| row(k, g, s, pad))
}

/// Every row of a table by tid.
type Model = BTreeMap<Tid, Vec<Value>>;

fn contents(t: &Table) -> Model {
    let mut out = Model::new();
    as_writer(|| {
        t.scan_rows(|tid, r| {
            out.insert(tid, r);
            Ok(())
        })
    })
    .unwrap();
    out
}

/// An index's entries, in order.
fn entries(t: &Table, index: usize) -> Vec<(Vec<u8>, Tid)> {
    as_writer(|| {
        t.indexes()[index]
            .btree
            .range(Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    })
}

/// The entries an index should have for the model's rows.
fn model_entries(t: &Table, index: usize, model: &Model) -> Vec<(Vec<u8>, Tid)> {
    let i = &t.indexes()[index];
    let mut v: Vec<_> = model
        .iter()
        .map(|(tid, r)| (i.key_of_row(r), *tid))
        .collect();
    v.sort();
    v
}

#[derive(Clone, Debug)]
enum Step {
    /// `insert_rows` on `a`, `insert_row` of each on `b`.
    Insert(Vec<Vec<Value>>),
    /// Rows picked by position among the live ones, in the order picked.
    Delete(Vec<usize>),
    /// Every row with `k` below the bound (`DELETE FROM t WHERE k < X`).
    DeleteBelow(i64),
    /// A row at a time on both tables: an insert, a delete, an update.
    Single(Vec<Value>, usize, u8),
    /// `delete_rows` with a tid that has no row among live ones: an error,
    /// and nothing changes.
    DeleteMissing(Vec<usize>, u16),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => proptest::collection::vec(any_row(), 0..150).prop_map(Step::Insert),
        2 => proptest::collection::vec(any::<usize>(), 0..80).prop_map(Step::Delete),
        1 => (0i64..400).prop_map(Step::DeleteBelow),
        2 => (any_row(), any::<usize>(), 0u8..3).prop_map(|(r, i, w)| Step::Single(r, i, w)),
        1 => (proptest::collection::vec(any::<usize>(), 0..20), any::<u16>())
            .prop_map(|(v, s)| Step::DeleteMissing(v, s)),
    ]
}

/// Applies one step to `a` (batched) and `b` (a row at a time) and the model.
fn apply(a: &Table, b: &Table, model: &mut Model, step: &Step) {
    let live: Vec<Tid> = model.keys().copied().collect();
    let pick = |picks: &[usize]| -> Vec<Tid> {
        if live.is_empty() {
            return Vec::new();
        }
        let mut seen = std::collections::BTreeSet::new();
        picks
            .iter()
            .map(|&i| live[i % live.len()])
            .filter(|t| seen.insert(*t))
            .collect()
    };
    match step {
        Step::Insert(rows) => {
            let got = a.insert_rows(rows).unwrap();
            let want: Vec<Tid> = rows.iter().map(|r| b.insert_row(r).unwrap()).collect();
            assert_eq!(got, want, "batched inserts land where single ones do");
            for (tid, r) in got.into_iter().zip(rows) {
                assert!(model.insert(tid, r.clone()).is_none());
            }
        }
        Step::Delete(picks) => {
            let tids = pick(picks);
            a.delete_rows(&tids).unwrap();
            for &t in &tids {
                b.delete_row(t).unwrap();
                model.remove(&t);
            }
        }
        Step::DeleteBelow(x) => {
            let tids: Vec<Tid> = model
                .iter()
                .filter(|(_, r)| matches!(r[0], Value::Int64(k) if k < *x))
                .map(|(t, _)| *t)
                .collect();
            a.delete_rows(&tids).unwrap();
            for &t in &tids {
                b.delete_row(t).unwrap();
                model.remove(&t);
            }
        }
        Step::Single(r, i, what) => match (what, live.is_empty()) {
            (0, _) | (_, true) => {
                let ta = a.insert_row(r).unwrap();
                assert_eq!(b.insert_row(r).unwrap(), ta);
                model.insert(ta, r.clone());
            }
            (1, false) => {
                let t = live[i % live.len()];
                a.delete_row(t).unwrap();
                b.delete_row(t).unwrap();
                model.remove(&t);
            }
            _ => {
                let t = live[i % live.len()];
                let ta = a.update_row(t, r).unwrap();
                assert_eq!(b.update_row(t, r).unwrap(), ta);
                model.remove(&t);
                model.insert(ta, r.clone());
            }
        },
        Step::DeleteMissing(picks, slot) => {
            let mut tids = pick(picks);
            // A slot past every live one on a page of the table, or a page
            // past its end.
            let gone = if live.is_empty() || slot % 3 == 0 {
                Tid::new(as_writer(|| a.heap().num_pages()) as u32 + 1, 0)
            } else {
                let page = live[*slot as usize % live.len()].page;
                Tid::new(page, 1000 + slot % 100)
            };
            tids.insert(tids.len() / 2, gone);
            let before = (contents(a), entries_all(a), as_writer(|| a.rows()));
            let e = a.delete_rows(&tids).unwrap_err();
            assert!(
                matches!(
                    e,
                    StorageError::NoSuchTuple { .. } | StorageError::PageOutOfRange { .. }
                ),
                "{e}"
            );
            assert_eq!(
                std::mem::discriminant(&e),
                std::mem::discriminant(&b.delete_row(gone).unwrap_err()),
                "the error delete_row gives"
            );
            assert_eq!(
                (contents(a), entries_all(a), as_writer(|| a.rows())),
                before
            );
            // A tid named twice is the same error, with nothing changed either.
            if let Some(&t) = tids.first().filter(|t| **t != gone) {
                let e = a.delete_rows(&[t, t]).unwrap_err();
                assert!(matches!(e, StorageError::NoSuchTuple { .. }), "{e}");
                assert_eq!(
                    (contents(a), entries_all(a), as_writer(|| a.rows())),
                    before
                );
            }
        }
    }
}

fn entries_all(t: &Table) -> Vec<Vec<(Vec<u8>, Tid)>> {
    (0..t.indexes().len()).map(|i| entries(t, i)).collect()
}

/// After a step: both tables hold the model's rows, `strata check` finds every
/// index in step with its heap, and range scans give the model's entries.
fn verify(db: &Database, model: &Model, rng: &mut impl Rng) {
    let (a, b) = (db.table("a").unwrap(), db.table("b").unwrap());
    assert_eq!(&contents(&a), model);
    assert_eq!(&contents(&b), model);
    assert_eq!(a.rows(), model.len() as u64);
    assert_eq!(b.rows(), model.len() as u64);
    for r in check_database(db, &NoProgress).unwrap() {
        assert_eq!(r.rows, model.len() as u64, "{r:?}");
    }
    for i in 0..a.indexes().len() {
        let want = model_entries(&a, i, model);
        assert_eq!(entries(&a, i), want);
        assert_eq!(entries(&b, i), want);
        let index = &a.indexes()[i];
        for _ in 0..4 {
            let bound = |rng: &mut dyn rand::RngCore| {
                let k = index.key_of_row(&row(
                    rng.random_range(0..400),
                    Some(rng.random_range(0..8)),
                    Some(rng.random_range(0..8)),
                    0,
                ));
                match rng.random_range(0..3) {
                    0 => Bound::Unbounded,
                    1 => Bound::Included(k),
                    _ => Bound::Excluded(k),
                }
            };
            let (lo, hi) = (bound(rng), bound(rng));
            let got: Vec<_> = index
                .btree
                .range(lo.clone(), hi.clone())
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let inside = |k: &Vec<u8>| {
                (match &lo {
                    Bound::Unbounded => true,
                    Bound::Included(b) => k >= b,
                    Bound::Excluded(b) => k > b,
                }) && (match &hi {
                    Bound::Unbounded => true,
                    Bound::Included(b) => k <= b,
                    Bound::Excluded(b) => k < b,
                })
            };
            let want: Vec<_> = want.iter().filter(|(k, _)| inside(k)).cloned().collect();
            assert_eq!(got, want, "range {lo:?} .. {hi:?} of {}", index.def.name);
        }
    }
}

fn run(which: &[usize], fill: f64, initial: &[Vec<Value>], steps: &[Step], seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path(), which, fill, initial);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut model = contents(&db.table("a").unwrap());
    for step in steps {
        let txn = db.begin_write().unwrap();
        let (a, b) = (txn.table("a").unwrap(), txn.table("b").unwrap());
        apply(&a, &b, &mut model, step);
        txn.commit().unwrap();
        verify(&db, &model, &mut rng);
    }
    // And all of it from the log and the files after a reopen.
    drop(db);
    let db = Database::open(dir.path(), opts(8 << 20)).unwrap();
    verify(&db, &model, &mut rng);
}

fn index_sets() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        (0usize..4).prop_map(|i| vec![i]),
        (0usize..4, 0usize..4)
            .prop_filter("two different indexes", |(i, j)| i != j)
            .prop_map(|(i, j)| vec![i, j]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(16)))]

    /// Random batches mixed with single-row changes on tables with one or two
    /// indexes, against the model and a twin changed a row at a time.
    #[test]
    fn batches_match_the_model_and_single_rows(
        which in index_sets(),
        fill in prop_oneof![Just(1.0), Just(0.5), Just(0.1)],
        initial in proptest::collection::vec(any_row(), 0..300),
        steps in proptest::collection::vec(step(), 1..10),
        seed in any::<u64>(),
    ) {
        run(&which, fill, &initial, &steps, seed);
    }
}

/// Larger batches, so leaves split into many pages and trees grow levels,
/// then a range delete of most of it.
#[test]
fn large_batches_split_many_leaves() {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
    let rows = |n: usize, rng: &mut rand::rngs::SmallRng| -> Vec<Vec<Value>> {
        (0..n)
            .map(|_| {
                row(
                    rng.random_range(0..400),
                    Some(rng.random_range(0..8)),
                    Some(rng.random_range(0..8)),
                    rng.random_range(0..40),
                )
            })
            .collect()
    };
    let initial = rows(2000, &mut rng);
    let steps = vec![
        Step::Insert(rows(6000, &mut rng)),
        Step::DeleteBelow(100),
        Step::Insert(rows(3000, &mut rng)),
        Step::Delete((0..3000).map(|_| rng.random::<u32>() as usize).collect()),
        Step::DeleteBelow(390),
    ];
    run(&[0, 3], 1.0, &initial, &steps, 6);
    run(&[2], 0.5, &initial, &steps, 7);
}

fn model_of(t: &Table) -> BTreeMap<i64, Vec<Value>> {
    contents(t)
        .into_values()
        .map(|r| match r[0] {
            Value::Int64(k) => (k, r),
            _ => panic!("k is a BIGINT"),
        })
        .collect()
}

/// A committed bulk insert and range delete survive a crash (redone from the
/// log); an aborted one, or one a crash cut off before its commit, leaves
/// nothing behind.
#[test]
fn committed_batches_survive_a_crash_and_uncommitted_ones_vanish() {
    let dir = tempfile::tempdir().unwrap();
    let initial: Vec<_> = (0..1000)
        .map(|k| row(k, Some((k % 7) as i32), Some(k as usize), 10))
        .collect();
    drop(setup(dir.path(), &[0, 3], 0.9, &initial));
    let unique = |from: i64, n: i64| -> Vec<Vec<Value>> {
        (from..from + n)
            .map(|k| row(k, Some((k % 7) as i32), Some(k as usize), (k % 40) as usize))
            .collect()
    };

    // Committed: 5000 rows in, then every k below 2500 out, then a crash.
    let db = Database::open(dir.path(), opts(32 << 20)).unwrap();
    let txn = db.begin_write().unwrap();
    let t = txn.table("a").unwrap();
    t.insert_rows(&unique(1000, 5000)).unwrap();
    let below: Vec<Tid> = contents(&t)
        .into_iter()
        .filter(|(_, r)| matches!(r[0], Value::Int64(k) if k < 2500))
        .map(|(tid, _)| tid)
        .collect();
    assert_eq!(below.len(), 2500);
    t.delete_rows(&below).unwrap();
    let want = model_of(&t);
    assert_eq!(want.len(), 3500);
    drop(t);
    let c = txn.commit().unwrap();
    assert!(c.pages > 0 && c.log_bytes > 0, "{c:?}");
    db.crash();
    let db = Database::open(dir.path(), opts(32 << 20)).unwrap();
    assert_eq!(model_of(&db.table("a").unwrap()), want);
    check_database(&db, &NoProgress).unwrap();

    // Aborted (dropped uncommitted): nothing, at once and after a crash.
    {
        let txn = db.begin_write().unwrap();
        let t = txn.table("a").unwrap();
        t.insert_rows(&unique(10_000, 4000)).unwrap();
        let all: Vec<Tid> = contents(&t).into_keys().collect();
        t.delete_rows(&all[..all.len() / 2]).unwrap();
        assert_eq!(as_writer(|| t.rows()), 3500 + 4000 - all.len() as u64 / 2);
    }
    let t = db.table("a").unwrap();
    assert_eq!(model_of(&t), want);
    assert_eq!(t.rows(), 3500);
    check_database(&db, &NoProgress).unwrap();
    drop(t);
    // Cut off by a crash before its commit.
    let txn = db.begin_write().unwrap();
    let t = txn.table("a").unwrap();
    t.insert_rows(&unique(20_000, 4000)).unwrap();
    t.delete_rows(&contents(&t).into_keys().take(1000).collect::<Vec<_>>())
        .unwrap();
    drop(t);
    std::mem::forget(txn);
    db.crash();
    let db = Database::open(dir.path(), opts(32 << 20)).unwrap();
    let t = db.table("a").unwrap();
    assert_eq!(model_of(&t), want);
    assert_eq!(t.rows(), 3500);
    check_database(&db, &NoProgress).unwrap();
    // And the table keeps taking batches.
    drop(t);
    let txn = db.begin_write().unwrap();
    txn.table("a")
        .unwrap()
        .insert_rows(&unique(30_000, 10))
        .unwrap();
    txn.commit().unwrap();
    drop(db);
    let db = Database::open(dir.path(), opts(32 << 20)).unwrap();
    assert_eq!(db.table("a").unwrap().rows(), 3510);
    check_database(&db, &NoProgress).unwrap();
}

/// A failed `delete_rows` changes nothing (checked before any page is
/// touched): rows, index entries, row count; and its transaction commits the
/// rest as usual.
#[test]
fn a_missing_tid_fails_delete_rows_before_anything_changes() {
    let dir = tempfile::tempdir().unwrap();
    let initial: Vec<_> = (0..500)
        .map(|k| row(k, Some((k % 3) as i32), None, 5))
        .collect();
    let db = setup(dir.path(), &[0, 1], 1.0, &initial);
    let txn = db.begin_write().unwrap();
    let t = txn.table("a").unwrap();
    let before = (contents(&t), entries_all(&t), as_writer(|| t.rows()));
    let mut tids: Vec<Tid> = before.0.keys().copied().collect();
    let last = *tids.last().unwrap();
    tids.push(Tid::new(last.page, last.slot + 1));
    let e = t.delete_rows(&tids).unwrap_err();
    match &e {
        StorageError::NoSuchTuple { table, page, slot } => {
            assert_eq!(
                (table.as_str(), *page, *slot),
                ("a", last.page, last.slot + 1)
            );
        }
        other => panic!("{other}"),
    }
    assert_eq!(
        e.to_string(),
        t.delete_row(Tid::new(last.page, last.slot + 1))
            .unwrap_err()
            .to_string()
    );
    assert_eq!(
        (contents(&t), entries_all(&t), as_writer(|| t.rows())),
        before
    );
    // Without a transaction: the error delete_row gives.
    drop(t);
    txn.commit().unwrap();
    let t = db.table("a").unwrap();
    let e = t.delete_rows(&tids[..2]).unwrap_err().to_string();
    assert!(e.contains("needs a write transaction"), "{e}");
    let e = t.insert_rows(&initial[..2]).unwrap_err().to_string();
    assert!(e.contains("needs a write transaction"), "{e}");
    // A row that does not fit the schema: nothing inserted.
    let txn = db.begin_write().unwrap();
    let mut bad = initial[..3].to_vec();
    bad[2][0] = Value::Null;
    assert!(t.insert_rows(&bad).is_err());
    assert_eq!(
        (contents(&t), entries_all(&t), as_writer(|| t.rows())),
        before
    );
    drop(txn);
}

fn int_key(v: i64) -> Vec<u8> {
    let mut out = Vec::new();
    encode_key(&[DataType::Int64], &[Value::Int64(v)], &mut out);
    out
}

/// `delete_sorted` of N entries on L leaves pins about L leaves (a descent,
/// a read and a write each), not N descents; so does `insert_sorted`.
#[test]
fn batched_index_changes_touch_each_leaf_once() {
    let dir = tempfile::tempdir().unwrap();
    let dev: Arc<dyn Device> = Arc::new(FileDevice::new(false));
    let pool = Arc::new(BufferPool::new(dev, 4096 * 8192));
    let t = BTree::create(
        pool.clone(),
        &dir.path().join("i"),
        "i",
        vec![DataType::Int64],
        1 << 16,
    )
    .unwrap();
    let all: Vec<_> = (0..400_000i64)
        .map(|k| (int_key(k / 2), Tid::new(k as u32, (k % 2) as u16)))
        .collect();
    t.bulk_build(all.iter().cloned(), 0.9).unwrap();
    let height = t.height() as u64;
    assert_eq!(height, 3);
    let leaves_before = t.stats().unwrap().leaf_pages;
    // Every other entry of a tenth of the tree.
    let batch: Vec<_> = all[100_000..140_000].iter().step_by(2).cloned().collect();
    let n = batch.len() as u64;
    let per_leaf = 400_000 / leaves_before;
    let leaves = 40_000 / per_leaf + 2;
    let before = pool.counters();
    assert_eq!(t.delete_sorted(&batch).unwrap(), n);
    let d = pool.counters() - before;
    let pins = d.hits + d.misses;
    eprintln!(
        "delete_sorted: {n} entries on about {leaves} leaves of a height-{height} tree: {pins} page pins"
    );
    // A descent reads height - 1 internal pages; then the leaf is read and written.
    assert!(
        pins <= leaves * (height + 1),
        "{pins} pins for {n} entries on about {leaves} leaves"
    );
    assert!(
        pins * 20 < n * height,
        "{pins} pins is not far below one descent per entry"
    );
    assert_eq!(t.check().unwrap(), 400_000 - n);
    // Putting them back: the same leaves, each once (they fit, so no splits).
    let before = pool.counters();
    t.insert_sorted(&batch).unwrap();
    let d = pool.counters() - before;
    eprintln!(
        "insert_sorted: {n} entries back: {} page pins",
        d.hits + d.misses
    );
    assert!(d.hits + d.misses <= leaves * height, "{d:?}");
    assert_eq!(t.check().unwrap(), 400_000);
    assert_eq!(t.stats().unwrap().leaf_pages, leaves_before);
    let got: Vec<_> = t
        .range(Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got, all);
}

/// Timing (release): 1M rows `(k BIGINT, v BIGINT, pad VARCHAR(40))` with an
/// index on k, inserted by `insert_rows` in one transaction and committed,
/// then the first 10% deleted by `delete_rows`; the same a row at a time.
/// `BULK_ROWS` sets the row count.
#[test]
#[ignore]
fn bulk_timing() {
    let n: i64 = std::env::var("BULK_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let rows: Vec<Vec<Value>> = (0..n)
        .map(|k| {
            vec![
                Value::Int64(k),
                Value::Int64(k * 7 % 1000),
                Value::Str(format!("{k:040}")),
            ]
        })
        .collect();
    let cut = n / 10;
    // BULK_WAYS=batched or =rows runs one of the two (for a profile).
    let ways = std::env::var("BULK_WAYS").unwrap_or_default();
    for batched in [true, false] {
        if (batched && ways == "rows") || (!batched && ways == "batched") {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), opts(1 << 30)).unwrap();
        let schema = Schema::parse("k BIGINT NOT NULL, v BIGINT, pad VARCHAR(40)").unwrap();
        db.begin_create_load(
            "t",
            schema,
            TableOptions::default(),
            vec![IndexSpec::new("t_k", &["k"])],
        )
        .unwrap()
        .commit(&NoProgress)
        .unwrap();
        let how = if batched { "batched" } else { "row at a time" };

        let start = std::time::Instant::now();
        let txn = db.begin_write().unwrap();
        let t = txn.table("t").unwrap();
        let tids = if batched {
            t.insert_rows(&rows).unwrap()
        } else {
            rows.iter().map(|r| t.insert_row(r).unwrap()).collect()
        };
        let applied = start.elapsed();
        drop(t);
        let c = txn.commit().unwrap();
        let total = start.elapsed();
        eprintln!(
            "insert {n} rows {how}: {:.0} rows/s applied ({applied:.2?}), {:.0} rows/s with the commit ({total:.2?}, {} pages, {} MB of log)",
            n as f64 / applied.as_secs_f64(),
            n as f64 / total.as_secs_f64(),
            c.pages,
            c.log_bytes >> 20
        );

        let start = std::time::Instant::now();
        let txn = db.begin_write().unwrap();
        let t = txn.table("t").unwrap();
        // DELETE FROM t WHERE k < n / 10: the tids from the index, as a plan would.
        let idx = t.index("t_k").unwrap();
        let victims: Vec<Tid> = as_writer(|| {
            idx.btree
                .range(Bound::Unbounded, Bound::Excluded(int_key(cut)))
                .unwrap()
                .map(|e| e.unwrap().1)
                .collect()
        });
        assert_eq!(victims, tids[..cut as usize]);
        let found = start.elapsed();
        if batched {
            t.delete_rows(&victims).unwrap();
        } else {
            for &tid in &victims {
                t.delete_row(tid).unwrap();
            }
        }
        let applied = start.elapsed();
        drop(t);
        let c = txn.commit().unwrap();
        let total = start.elapsed();
        eprintln!(
            "delete {cut} rows {how}: {:.2} us/row applied ({applied:.2?}, {found:.2?} of it finding them), {:.2} us/row with the commit ({total:.2?}, {} pages)",
            applied.as_secs_f64() * 1e6 / cut as f64,
            total.as_secs_f64() * 1e6 / cut as f64,
            c.pages
        );
        let t = db.table("t").unwrap();
        assert_eq!(t.rows(), (n - cut) as u64);
        if n <= 200_000 {
            check_database(&db, &NoProgress).unwrap();
        }
    }
}
