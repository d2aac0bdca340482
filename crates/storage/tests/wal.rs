//! Write transactions on the write-ahead log: commits survive crashes, aborts
//! and crashes leave no trace, torn pages are repaired from the log, checked
//! against a model of the table.

use std::collections::BTreeMap;
use std::path::Path;

use rand::{Rng, SeedableRng};
use strata_storage::db::NoProgress;
use strata_storage::maintenance::check::check_database;
use strata_storage::row::{Schema, Tid, Value};
use strata_storage::{Database, DbOptions, IndexSpec, TableOptions};

fn opts(pool_bytes: usize) -> DbOptions {
    DbOptions {
        buffer_pool_bytes: pool_bytes,
        direct_io: false,
        ..DbOptions::default()
    }
}

/// A table `t (id BIGINT, grp INT, note VARCHAR(40))` with indexes on id and grp,
/// loaded with ids 0..n.
pub(crate) fn setup(dir: &Path, n: i64, pool_bytes: usize) -> Database {
    let db = Database::create(dir, opts(pool_bytes)).unwrap();
    let schema = Schema::parse("id BIGINT NOT NULL, grp INT, note VARCHAR(40)").unwrap();
    let topts = TableOptions {
        fill_factor: 0.9,
        segment_pages: 16,
    };
    let mut load = db
        .begin_create_load(
            "t",
            schema,
            topts,
            vec![
                IndexSpec::new("t_id", &["id"]),
                IndexSpec::new("t_grp", &["grp"]),
            ],
        )
        .unwrap();
    for i in 0..n {
        load.append(&row(i, 0)).unwrap();
    }
    load.commit(&NoProgress).unwrap();
    db
}

fn row(id: i64, version: i64) -> Vec<Value> {
    vec![
        Value::Int64(id),
        Value::Int32((id % 97) as i32),
        Value::Str(format!(
            "{id} v{version} {}",
            "x".repeat((version % 25) as usize)
        )),
    ]
}

/// The table's rows by id.
pub(crate) fn contents(db: &Database) -> BTreeMap<i64, Vec<Value>> {
    let t = db.table("t").unwrap();
    let mut out = BTreeMap::new();
    t.scan_rows(|_, r| {
        let Value::Int64(id) = r[0] else {
            panic!("id is a BIGINT")
        };
        assert!(out.insert(id, r).is_none(), "id {id} twice");
        Ok(())
    })
    .unwrap();
    out
}

fn tid_of(db: &Database, id: i64) -> Option<Tid> {
    // Inside a transaction: see its own changes.
    strata_storage::buffer::as_writer(|| {
        let t = db.table("t").unwrap();
        let i = t.index("t_id").unwrap();
        let tids = i
            .btree
            .lookup(&i.key_of_row(&[Value::Int64(id), Value::Null, Value::Null]))
            .unwrap();
        assert!(tids.len() <= 1);
        tids.first().copied()
    })
}

fn assert_consistent(db: &Database, model: &BTreeMap<i64, Vec<Value>>) {
    assert_eq!(&contents(db), model);
    let report = check_database(db, &NoProgress).unwrap();
    assert_eq!(report[0].rows, model.len() as u64);
    assert_eq!(db.table("t").unwrap().rows(), model.len() as u64);
}

/// One random change to the table and the model.
pub(crate) fn change(
    db: &Database,
    model: &mut BTreeMap<i64, Vec<Value>>,
    rng: &mut impl Rng,
    next: &mut i64,
) {
    let t = db.table("t").unwrap();
    let ids: Vec<i64> = model.keys().copied().collect();
    match rng.random_range(0..3) {
        0 => {
            let r = row(*next, rng.random_range(0..100));
            t.insert_row(&r).unwrap();
            model.insert(*next, r);
            *next += 1;
        }
        1 if !ids.is_empty() => {
            let id = ids[rng.random_range(0..ids.len())];
            let r = row(id, rng.random_range(0..100));
            t.update_row(tid_of(db, id).unwrap(), &r).unwrap();
            model.insert(id, r);
        }
        _ if !ids.is_empty() => {
            let id = ids[rng.random_range(0..ids.len())];
            t.delete_row(tid_of(db, id).unwrap()).unwrap();
            model.remove(&id);
        }
        _ => {}
    }
}

#[test]
fn committed_changes_survive_a_crash_and_uncommitted_ones_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path(), 500, 4 << 20);
    let mut model = contents(&db);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let mut next = 500;
    for _ in 0..20 {
        let txn = db.begin_write().unwrap();
        for _ in 0..25 {
            change(&db, &mut model, &mut rng, &mut next);
        }
        let c = txn.commit().unwrap();
        assert!(c.csn > 0 && c.pages > 0 && c.log_bytes > 0, "{c:?}");
    }
    // A transaction that never commits.
    let txn = db.begin_write().unwrap();
    let mut lost = model.clone();
    for _ in 0..50 {
        change(&db, &mut lost, &mut rng, &mut next);
    }
    std::mem::forget(txn);
    let csn = db.csn();
    db.crash();

    let db = Database::open(dir.path(), opts(4 << 20)).unwrap();
    assert_eq!(db.csn(), csn);
    assert_consistent(&db, &model);
    // And it keeps working.
    let txn = db.begin_write().unwrap();
    change(&db, &mut model, &mut rng, &mut next);
    txn.commit().unwrap();
    drop(db);
    let db = Database::open(dir.path(), opts(4 << 20)).unwrap();
    assert_consistent(&db, &model);
}

#[test]
fn an_abort_puts_pages_sizes_and_trees_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path(), 300, 4 << 20);
    let model = contents(&db);
    let pages = db.table("t").unwrap().heap().num_pages();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(2);
    let mut next = 300;
    {
        let _txn = db.begin_write().unwrap();
        let mut scratch = model.clone();
        // Enough inserts to add heap pages and split index leaves.
        for _ in 0..3000 {
            change(&db, &mut scratch, &mut rng, &mut next);
        }
        let t = db.table("t").unwrap();
        // The transaction sees its new pages; a reader does not.
        assert!(strata_storage::buffer::as_writer(|| t.heap().num_pages()) > pages);
        assert_eq!(t.heap().num_pages(), pages);
    }
    assert_eq!(db.table("t").unwrap().heap().num_pages(), pages);
    assert_consistent(&db, &model);
    let e = db
        .table("t")
        .unwrap()
        .insert_row(&row(1, 1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs a write transaction"), "{e}");
}

/// A held transaction (a session's BEGIN ... COMMIT) is begun on one
/// thread, changed on a second and ended on a third; while it holds the
/// writer turn no other transaction gets it without waiting, and one
/// dropped on another thread is undone as if dropped where it began.
#[test]
fn a_held_transaction_ends_on_any_thread_and_keeps_the_turn_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let db = std::sync::Arc::new(setup(dir.path(), 200, 4 << 20));
    let mut model = contents(&db);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    let mut next = 200;
    let txn = db.begin_held_write(None).unwrap();
    assert!(db.try_begin_held_write().unwrap().is_none());
    let e = db
        .begin_held_write(Some(std::time::Duration::from_millis(20)))
        .err()
        .unwrap();
    assert!(
        matches!(
            e,
            strata_storage::error::StorageError::LockTimeout { waited_ms: 20 }
        ),
        "{e}"
    );
    let changed = std::thread::scope(|s| {
        s.spawn(|| {
            let mut m = model.clone();
            for _ in 0..40 {
                change(&db, &mut m, &mut rng, &mut next);
            }
            m
        })
        .join()
        .unwrap()
    });
    let c = std::thread::spawn(move || txn.commit().unwrap())
        .join()
        .unwrap();
    assert!(c.csn > 0 && c.pages > 0, "{c:?}");
    model = changed;
    assert_consistent(&db, &model);
    // Free again: taken without waiting, changed, and dropped elsewhere.
    let txn = db
        .try_begin_held_write()
        .unwrap()
        .expect("the turn is free");
    let mut lost = model.clone();
    for _ in 0..40 {
        change(&db, &mut lost, &mut rng, &mut next);
    }
    std::thread::spawn(move || drop(txn)).join().unwrap();
    assert_consistent(&db, &model);
    assert!(db.try_begin_held_write().unwrap().is_some());
    // What committed survives a reopen.
    drop(db);
    let db = Database::open(dir.path(), opts(4 << 20)).unwrap();
    assert_consistent(&db, &model);
}

/// Many transactions through a pool small enough that committed pages are
/// evicted between checkpoints (the log is synced before each such write),
/// crashes at random points, and a reopen checked against the model each time.
#[test]
fn random_transactions_and_crashes_match_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let pool = 64 * 8192;
    drop(setup(dir.path(), 2000, pool));
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    let mut model = {
        let db = Database::open(dir.path(), opts(pool)).unwrap();
        contents(&db)
    };
    let mut next = 2000;
    for round in 0..12 {
        let db = Database::open(dir.path(), opts(pool)).unwrap();
        assert_consistent(&db, &model);
        for _ in 0..rng.random_range(1..15) {
            let txn = db.begin_write().unwrap();
            let mut after = model.clone();
            for _ in 0..rng.random_range(1..40) {
                change(&db, &mut after, &mut rng, &mut next);
            }
            if rng.random_bool(0.8) {
                txn.commit().unwrap();
                model = after;
            } else {
                drop(txn);
            }
        }
        if round % 4 == 3 {
            db.checkpoint().unwrap();
        }
        db.crash();
    }
    let db = Database::open(dir.path(), opts(pool)).unwrap();
    assert_consistent(&db, &model);
}

/// A data page torn by a crash during its write is rebuilt from the full image
/// the log holds of it since the last checkpoint.
#[test]
fn a_torn_data_page_is_repaired_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path(), 400, 4 << 20);
    let mut model = contents(&db);
    let txn = db.begin_write().unwrap();
    let t = db.table("t").unwrap();
    let tid = tid_of(&db, 7).unwrap();
    let r = row(7, 99);
    t.update_row(tid, &r).unwrap();
    model.insert(7, r);
    txn.commit().unwrap();
    // The page reaches the file, then half of it is overwritten (a torn write).
    db.pool().flush_all().unwrap();
    drop(t);
    db.crash();
    let seg = dir.path().join("data").read_dir().unwrap().find_map(|e| {
        let p = e.unwrap().path();
        p.to_string_lossy().contains("t.heap").then_some(p)
    });
    let seg = seg.unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    let at = tid.page as usize * 8192 + 4096;
    bytes[at..at + 4096].fill(0xAB);
    std::fs::write(&seg, bytes).unwrap();

    let db = Database::open(dir.path(), opts(4 << 20)).unwrap();
    assert_consistent(&db, &model);
}

/// The 100-row table after one committed transaction of 30 random changes,
/// and its model.
fn with_a_commit(dir: &Path, seed: u64) -> (Database, BTreeMap<i64, Vec<Value>>) {
    let db = setup(dir, 100, 4 << 20);
    let mut model = contents(&db);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut next = 100;
    let txn = db.begin_write().unwrap();
    for _ in 0..30 {
        change(&db, &mut model, &mut rng, &mut next);
    }
    txn.commit().unwrap();
    (db, model)
}

pub(crate) fn read_only(dir: &Path) -> Database {
    Database::open(
        dir,
        DbOptions {
            read_only: true,
            ..opts(4 << 20)
        },
    )
    .unwrap()
}

/// Two writers never meet: while one process (here: one handle) has the
/// database open for writing, another read-write open is refused, naming why;
/// a reader opens beside it and reads every commit; once the writer closes,
/// a writer opens and sees every commit too.
#[test]
fn a_second_writer_is_refused_and_sees_every_commit_after() {
    let dir = tempfile::tempdir().unwrap();
    let (db, model) = with_a_commit(dir.path(), 4);
    let e = Database::open(dir.path(), opts(4 << 20))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("in use by another strata process"), "{e}");
    let reader = read_only(dir.path());
    assert_eq!(contents(&reader), model);
    let e = reader.begin_write().err().unwrap().to_string();
    assert!(e.contains("read-only"), "{e}");
    drop(db);
    assert_eq!(
        contents(&Database::open(dir.path(), opts(4 << 20)).unwrap()),
        model
    );
}

/// A read-only open of a database that crashed recovers it first (no log
/// record is lost to a reader).
#[test]
fn a_reader_after_a_crash_sees_the_recovered_state() {
    let dir = tempfile::tempdir().unwrap();
    let (db, model) = with_a_commit(dir.path(), 5);
    db.crash();
    let reader = read_only(dir.path());
    assert_eq!(contents(&reader), model);
}

/// Readers on other threads while transactions commit and abort: each read
/// statement (under `read_snapshot`) sees every transaction whole or not at
/// all. Every transaction keeps the row count and the sum of `grp` as they
/// were (it moves `grp` between rows, inserts a row and deletes one), so a
/// reader that saw part of one would see them change.
#[test]
fn readers_see_each_transaction_whole_or_not_at_all() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path(), 3000, 8 << 20);
    let (count, sum) = {
        let c = contents(&db);
        let sum: i64 = c.values().map(|r| grp(r)).sum();
        (c.len(), sum)
    };
    let done = AtomicBool::new(false);
    let reads = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while !done.load(Ordering::Acquire) {
                    let snap = db.read_snapshot();
                    let before = db.pool().in_transaction();
                    let c = contents(&db);
                    let after = db.pool().in_transaction();
                    assert_eq!(c.len(), count, "rows at csn {}", snap.csn);
                    assert_eq!(
                        c.values().map(|r| grp(r)).sum::<i64>(),
                        sum,
                        "csn {} txn {before} {after} now csn {}",
                        snap.csn,
                        db.csn()
                    );
                    // The index agrees with the heap in the same snapshot.
                    let t = db.table("t").unwrap();
                    let i = t.index("t_id").unwrap();
                    let n = i
                        .btree
                        .range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
                        .unwrap()
                        .count();
                    assert_eq!(n, count, "index entries at csn {}", snap.csn);
                    assert_eq!(t.rows() as usize, count);
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let mut rng = rand::rngs::SmallRng::seed_from_u64(6);
        let t = db.table("t").unwrap();
        for n in 0..150i64 {
            let next = 3000 + n;
            let txn = db.begin_write().unwrap();
            let ids: Vec<i64> = strata_storage::buffer::as_writer(|| contents(&db))
                .keys()
                .copied()
                .collect();
            let (a, b) = (
                ids[rng.random_range(0..ids.len())],
                ids[rng.random_range(0..ids.len())],
            );
            if a != b {
                let (ta, tb) = (tid_of(&db, a).unwrap(), tid_of(&db, b).unwrap());
                let ra = strata_storage::buffer::as_writer(|| t.get_row(ta))
                    .unwrap()
                    .unwrap();
                let rb = strata_storage::buffer::as_writer(|| t.get_row(tb))
                    .unwrap()
                    .unwrap();
                let d = rng.random_range(1..50);
                let mut ra2 = ra.clone();
                let mut rb2 = rb.clone();
                ra2[1] = Value::Int32(grp(&ra) as i32 - d);
                rb2[1] = Value::Int32(grp(&rb) as i32 + d);
                ra2[2] = Value::Str("moved ".repeat(rng.random_range(0..6)));
                t.update_row(ta, &ra2).unwrap();
                t.update_row(tid_of(&db, b).unwrap(), &rb2).unwrap();
            }
            // One row in, one row out, the sum kept.
            let victim = ids[rng.random_range(0..ids.len())];
            let vt = tid_of(&db, victim).unwrap();
            let vr = strata_storage::buffer::as_writer(|| t.get_row(vt))
                .unwrap()
                .unwrap();
            t.delete_row(vt).unwrap();
            t.insert_row(&[Value::Int64(next), vr[1].clone(), Value::Str("new".into())])
                .unwrap();
            if n % 5 == 4 {
                drop(txn);
            } else {
                txn.commit().unwrap();
            }
        }
        done.store(true, Ordering::Release);
    });
    assert!(reads.load(std::sync::atomic::Ordering::Relaxed) > 0);
    let c = contents(&db);
    assert_eq!(
        (c.len(), c.values().map(|r| grp(r)).sum::<i64>()),
        (count, sum)
    );
    check_database(&db, &NoProgress).unwrap();
}

fn grp(r: &[Value]) -> i64 {
    match r[1] {
        Value::Int32(g) => g as i64,
        _ => panic!("grp is an INT"),
    }
}

/// A checkpoint writes neighbouring pages of a file in one request: after a
/// transaction appended thousands of pages, it makes a few requests per
/// hundred pages, not one per page — and the pages it wrote are what a
/// reopened database reads.
#[test]
fn a_checkpoint_writes_neighbouring_pages_together() {
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path(), 10, 64 << 20);
    let t = db.table("t").unwrap();
    let txn = db.begin_write().unwrap();
    let rows: Vec<Vec<Value>> = (10..60_000).map(|i| row(i, 1)).collect();
    t.insert_rows(&rows).unwrap();
    txn.commit().unwrap();
    let device = db.device().clone();
    let before = device.stats().snapshot();
    let dirty_before = db.pool().counters().writebacks;
    db.checkpoint().unwrap();
    let written = device.stats().snapshot() - before;
    let pages = db.pool().counters().writebacks - dirty_before;
    assert!(pages > 300, "the checkpoint wrote {pages} pages");
    // Segments of 16 pages split a run; files' tails and internal pages add a few.
    assert!(
        written.write_requests * 8 < pages,
        "{} write requests for {pages} pages",
        written.write_requests
    );
    drop(t);
    drop(db);
    let db = Database::open(dir.path(), opts(4 << 20)).unwrap();
    check_database(&db, &NoProgress).unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(t.rows(), 60_000);
    assert_eq!(t.get_row(Tid::new(0, 0)).unwrap(), Some(row(0, 0)));
}

/// `prewarm` reads a table's heap and index pages into the pool in large
/// requests, after which fetching every row through its index reads nothing
/// from the device; a second prewarm reads nothing either.
#[test]
fn prewarm_puts_a_table_in_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path(), 20_000, 64 << 20);
    drop(db);
    let db = Database::open(dir.path(), opts(64 << 20)).unwrap();
    let t = db.table("t").unwrap();
    let pages = t.heap().num_pages() + t.indexes().iter().map(|i| i.btree.num_pages()).sum::<u64>();
    let device = db.device().clone();
    let before = device.stats().snapshot();
    let read = db.prewarm("t").unwrap();
    let io = device.stats().snapshot() - before;
    assert_eq!(read, io.pages_read);
    assert!(read >= t.heap().num_pages(), "{read} of {pages} pages");
    assert!(
        io.read_requests * 16 < read,
        "{} requests for {read} pages",
        io.read_requests
    );
    let before = device.stats().snapshot();
    let index = t.index("t_id").unwrap();
    for id in (0..20_000).step_by(7) {
        let key = index.key_of_row(&row(id, 0));
        let tids = index.btree.lookup(&key).unwrap();
        assert_eq!(t.get_row(tids[0]).unwrap(), Some(row(id, 0)));
    }
    assert_eq!((device.stats().snapshot() - before).pages_read, 0);
    assert_eq!(db.prewarm("t").unwrap(), 0);
    assert!(db.prewarm("nope").is_err());
}
