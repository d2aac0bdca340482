//! Index caches in B+-tree leaf free space (No Bits Left Behind §2.1) inside a
//! real database: cache writes cost no page write and no log byte, a leaf
//! written back or logged for a real change carries no cache bytes, and no
//! cache byte survives a close or a crash.

use std::path::Path;

use strata_storage::btree::cache::leaf::{CacheLayout, CacheRng};
use strata_storage::btree::cache::leaf_write::{self, Filled};
use strata_storage::db::CachedLookups;
use strata_storage::db::NoProgress;
use strata_storage::maintenance::check::check_database;
use strata_storage::page;
use strata_storage::row::{Schema, Value};
use strata_storage::{Database, DbOptions, IndexSpec, TableOptions};

fn opts() -> DbOptions {
    DbOptions {
        buffer_pool_bytes: 8 << 20,
        direct_io: false,
        ..DbOptions::default()
    }
}

/// `t (id BIGINT, grp INT, note VARCHAR(40))` with an index on id (leaves 90%
/// full, the default), ids 0..n.
fn setup(dir: &Path, n: i64) -> Database {
    let db = Database::create(dir, opts()).unwrap();
    let schema = Schema::parse("id BIGINT NOT NULL, grp INT, note VARCHAR(40)").unwrap();
    let topts = TableOptions {
        fill_factor: 0.9,
        segment_pages: 64,
    };
    let mut load = db
        .begin_create_load("t", schema, topts, vec![IndexSpec::new("t_id", &["id"])])
        .unwrap();
    for i in 0..n {
        load.append(&row(i)).unwrap();
    }
    load.commit(&NoProgress).unwrap();
    db.checkpoint().unwrap();
    db
}

fn row(id: i64) -> Vec<Value> {
    vec![
        Value::Int64(id),
        Value::Int32((id % 97) as i32),
        Value::Str(format!("row {id}")),
    ]
}

fn layout() -> CacheLayout {
    CacheLayout::new(25, 4).unwrap()
}

/// Fills the cache of every leaf of `t_id` with an item per entry, through
/// the pool's cache writes, under CSN `csn`; returns how many fills were made.
fn fill_every_leaf(db: &Database, csn: u32) -> usize {
    let t = db.table("t").unwrap();
    let tree = &t.index("t_id").unwrap().btree;
    let mut rng = CacheRng::new(7);
    let mut fills = 0;
    for leaf in tree.leaves().unwrap() {
        let (page, entries) = leaf.unwrap();
        for (_, tid) in entries {
            let mut g = db
                .pool()
                .try_cache_write(tree.file_id(), page as u64)
                .expect("nobody else uses the pool");
            let value = [tid.slot as u8; 25];
            match leaf_write::fill(&mut g, &layout(), csn, tid, &value, &mut rng) {
                Filled::Inserted(_) | Filled::Evicted(_) | Filled::Refreshed(_) => fills += 1,
                other => panic!("{other:?}"),
            }
        }
    }
    fills
}

/// Leaves of `t_id` whose cache is stamped, as the pool has them.
fn cached_leaves(db: &Database) -> usize {
    let t = db.table("t").unwrap();
    let tree = &t.index("t_id").unwrap().btree;
    tree.leaves()
        .unwrap()
        .filter(|l| {
            let page = l.as_ref().unwrap().0 as u64;
            page::cache_stamp(&db.pool().read(tree.file_id(), page).unwrap()) != 0
        })
        .count()
}

/// Every file under `dir` with its bytes, by name.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn cache_fills_cost_no_page_write_and_no_log_byte() {
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path(), 5000);
    let wal = db.wal().unwrap().clone();
    let (lsn, writes, writebacks) = (
        wal.next_lsn(),
        db.device().stats().snapshot().pages_written,
        db.pool().counters().writebacks,
    );
    let mut fills = 0;
    for round in 0..5 {
        fills += fill_every_leaf(&db, 1 + round % 2);
    }
    assert!(fills >= 5 * 5000, "{fills}");
    assert!(cached_leaves(&db) > 10);
    db.pool().flush_all().unwrap();
    db.checkpoint().unwrap();
    assert_eq!(db.device().stats().snapshot().pages_written, writes);
    assert_eq!(db.pool().counters().writebacks, writebacks);
    assert_eq!(wal.next_lsn(), lsn, "not a byte of log");
}

/// Two identical databases run the same transaction; one of them has filled
/// every leaf's cache first. The log and the index files on the device come
/// out byte for byte the same: cache bytes reach neither.
#[test]
fn a_leaf_logged_and_written_for_a_real_change_carries_no_cache_bytes() {
    let (da, db_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = setup(da.path(), 5000);
    let b = setup(db_dir.path(), 5000);
    assert!(fill_every_leaf(&a, 1) > 0);
    let run = |db: &Database| {
        let txn = db.begin_write().unwrap();
        let t = txn.table("t").unwrap();
        // Ids spread over the key range: entries land in leaves with caches.
        for id in (0..5000).step_by(97) {
            t.insert_row(&row(id)).unwrap();
        }
        txn.commit().unwrap()
    };
    let (ca, cb) = (run(&a), run(&b));
    assert_eq!(ca.pages, cb.pages);
    assert_eq!(ca.log_bytes, cb.log_bytes);
    // (Compared without printing: the files are megabytes.)
    let (wa, wb) = (
        files(&da.path().join("wal")),
        files(&db_dir.path().join("wal")),
    );
    assert!(!wa.is_empty() && wa == wb, "the logs differ");
    // Frames changed by the transaction still have their caches in memory.
    let cached = cached_leaves(&a);
    assert!(cached > 10, "{cached}");
    a.checkpoint().unwrap();
    b.checkpoint().unwrap();
    let index_files = |d: &Path| -> Vec<(String, Vec<u8>)> {
        files(&d.join("data"))
            .into_iter()
            .filter(|(n, _)| n.contains("t_id"))
            .collect()
    };
    let (fa, fb) = (index_files(da.path()), index_files(db_dir.path()));
    assert!(!fa.is_empty());
    assert!(fa == fb, "the index files differ");
    assert_eq!(
        cached_leaves(&a),
        cached,
        "written back, the frames keep the cache"
    );
    check_database(&a, &NoProgress).unwrap();

    // Reopened (after a clean close, and after a crash): checksums verify and
    // no leaf has a cache.
    drop(a);
    let a = Database::open(da.path(), opts()).unwrap();
    check_database(&a, &NoProgress).unwrap();
    assert_eq!(cached_leaves(&a), 0);
    assert!(fill_every_leaf(&a, 3) > 0);
    let txn = a.begin_write().unwrap();
    txn.table("t").unwrap().insert_row(&row(42)).unwrap();
    txn.commit().unwrap();
    a.crash();
    let a = Database::open(da.path(), opts()).unwrap();
    check_database(&a, &NoProgress).unwrap();
    assert_eq!(cached_leaves(&a), 0);
}

/// The cached fields of a row: its note.
fn cached_note(row: &[Value]) -> Vec<Value> {
    vec![row[2].clone()]
}

/// Looks id up through the cache (`t_id` caches `note`); a miss reads the
/// heap and fills. Returns (whether it hit, the cached columns' values).
fn note_of(db: &Database, id: i64) -> (bool, Vec<Value>) {
    let t = db.table("t").unwrap();
    let ix = t.index("t_id").unwrap();
    let key = ix.key_of_row(&[Value::Int64(id), Value::Null, Value::Null]);
    let mut counts = CachedLookups::default();
    let mut found = t.lookup_cached(ix, &key, &mut counts).unwrap();
    assert_eq!(found.len(), 1, "id {id}");
    (counts.hits == 1, found.pop().unwrap().1)
}

/// A committed update that keeps the row's key and tid (so its index entry
/// stays) still drops what is cached for it: the commit logs a predicate on
/// the tid. An update of no cached column logs nothing.
#[test]
fn a_commit_drops_the_cached_fields_it_changed_and_only_those() {
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path(), 2000);
    db.set_index_cache("t", "t_id", &["note"]).unwrap();
    let t = db.table("t").unwrap();
    let ix = t.index("t_id").unwrap();
    assert!(!note_of(&db, 77).0);
    assert_eq!(note_of(&db, 77), (true, cached_note(&row(77))));
    // Ten rows on another leaf (one leaf holds ~400 entries and, 90% full,
    // ~16 items of 50 bytes).
    for id in 1500..1510 {
        note_of(&db, id);
    }
    let tid = ix
        .btree
        .lookup(&ix.key_of_row(&row(77)))
        .unwrap()
        .pop()
        .unwrap();
    let mut changed = row(77);
    changed[2] = Value::Str("changed".into());
    let (csn, before) = (ix.btree.cache_csn(), ix.btree.cache_counters());
    let txn = db.begin_write().unwrap();
    assert_eq!(
        txn.table("t").unwrap().update_row(tid, &changed).unwrap(),
        tid
    );
    // Before the commit, readers still get the committed note.
    assert_eq!(note_of(&db, 77), (true, cached_note(&row(77))));
    txn.commit().unwrap();
    assert_eq!(note_of(&db, 77), (false, cached_note(&changed)));
    assert_eq!(note_of(&db, 77), (true, cached_note(&changed)));
    let after = ix.btree.cache_counters();
    assert_eq!(after.predicates, before.predicates + 1);
    assert_eq!(ix.btree.cache_csn(), csn, "no whole-index invalidation");
    // Rows on other leaves still hit.
    assert!((1500..1510).all(|id| note_of(&db, id).0));
    // An abort changes nothing committed and keeps the cache.
    let txn = db.begin_write().unwrap();
    txn.table("t").unwrap().update_row(tid, &row(77)).unwrap();
    drop(txn);
    assert_eq!(note_of(&db, 77), (true, cached_note(&changed)));
    // An update of grp only (not cached, not a key): no predicate, no miss.
    let before = ix.btree.cache_counters();
    let txn = db.begin_write().unwrap();
    let mut grp = changed.clone();
    grp[1] = Value::Int32(-5);
    txn.table("t").unwrap().update_row(tid, &grp).unwrap();
    txn.commit().unwrap();
    assert_eq!(ix.btree.cache_counters().predicates, before.predicates);
    assert_eq!(note_of(&db, 77), (true, cached_note(&changed)));
    // A delete, and a new row with the same key in the freed tid: never the
    // old row's note.
    let txn = db.begin_write().unwrap();
    let tt = txn.table("t").unwrap();
    tt.delete_row(tid).unwrap();
    let mut reborn = row(77);
    reborn[2] = Value::Str("reborn".into());
    let new_tid = tt.insert_row(&reborn).unwrap();
    txn.commit().unwrap();
    assert_eq!(
        note_of(&db, 77).1,
        cached_note(&reborn),
        "{tid:?} {new_tid:?}"
    );
    assert_eq!(note_of(&db, 77), (true, cached_note(&reborn)));
}

/// The version a note carries ("v<n>"; the loaded "row <id>" is version 0).
fn version_of(v: &[Value]) -> u64 {
    match &v[1] {
        Value::Str(s) => s.strip_prefix('v').map_or(0, |n| n.parse().unwrap()),
        other => panic!("{other:?}"),
    }
}

/// Readers on three threads look rows up through the cache while a writer
/// commits updates of the cached note (and every tenth time deletes the row
/// and inserts it again, which may reuse its tid). Every value a reader gets,
/// hit or miss, must be one committed during its lookup: at least the version
/// committed before it began, at most the one being committed when it ended.
/// The third reader makes SQL's default lookup (`lookup_cached_auto`), whose
/// governor sends some lookups around the cache while the others hit or
/// fill it: the same rule holds for both ways, mixed on one index.
#[test]
fn concurrent_readers_never_see_a_cached_value_older_than_the_last_commit() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let n = 2000i64;
    let db = setup(dir.path(), n);
    db.set_index_cache("t", "t_id", &["grp", "note"]).unwrap();
    let hot = 60usize;
    let committed: Vec<AtomicU64> = (0..hot).map(|_| AtomicU64::new(0)).collect();
    let pending: Vec<AtomicU64> = (0..hot).map(|_| AtomicU64::new(0)).collect();
    let stop = AtomicBool::new(false);
    let (hits, lookups) = (AtomicU64::new(0), AtomicU64::new(0));
    // The auto reader's entries through the cache and around it.
    let (auto_cached, auto_plain) = (AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|s| {
        for r in 0..3u64 {
            let (db, committed, pending, stop, hits, lookups) =
                (&db, &committed, &pending, &stop, &hits, &lookups);
            let (auto_cached, auto_plain) = (&auto_cached, &auto_plain);
            s.spawn(move || {
                use rand::{Rng, SeedableRng};
                let mut rng = rand::rngs::SmallRng::seed_from_u64(r);
                let t = db.table("t").unwrap();
                let ix = t.index("t_id").unwrap();
                while !stop.load(Ordering::Relaxed) {
                    let id = rng.random_range(0..hot);
                    let lo = committed[id].load(Ordering::SeqCst);
                    let key = ix.key_of_row(&[Value::Int64(id as i64), Value::Null, Value::Null]);
                    let mut c = CachedLookups::default();
                    let found = if r == 2 {
                        t.lookup_cached_auto(ix, &key, &mut c).unwrap()
                    } else {
                        t.lookup_cached(ix, &key, &mut c).unwrap()
                    };
                    let hi = pending[id].load(Ordering::SeqCst);
                    assert!(found.len() <= 1, "id {id}: {found:?}");
                    for (_, v) in &found {
                        let got = version_of(v);
                        assert!(
                            lo <= got && got <= hi,
                            "id {id}: version {got} ({} hits), committed {lo}..={hi}",
                            c.hits
                        );
                    }
                    hits.fetch_add(c.hits, Ordering::Relaxed);
                    lookups.fetch_add(1, Ordering::Relaxed);
                    if r == 2 {
                        auto_cached.fetch_add(c.hits + c.misses, Ordering::Relaxed);
                        auto_plain.fetch_add(c.plain, Ordering::Relaxed);
                    }
                }
            });
        }
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(99);
        let t = db.table("t").unwrap();
        let ix = t.index("t_id").unwrap();
        let mut updates = 0u64;
        while updates < 300 || lookups.load(Ordering::Relaxed) < 3000 {
            updates += 1;
            let id = rng.random_range(0..hot);
            let v = committed[id].load(Ordering::SeqCst) + 1;
            let mut new = row(id as i64);
            new[2] = Value::Str(format!("v{v}"));
            let tid = ix
                .btree
                .lookup(&ix.key_of_row(&new))
                .unwrap()
                .pop()
                .unwrap();
            pending[id].store(v, Ordering::SeqCst);
            let txn = db.begin_write().unwrap();
            let tt = txn.table("t").unwrap();
            if updates.is_multiple_of(10) {
                tt.delete_row(tid).unwrap();
                tt.insert_row(&new).unwrap();
            } else {
                tt.update_row(tid, &new).unwrap();
            }
            txn.commit().unwrap();
            committed[id].store(v, Ordering::SeqCst);
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Relaxed);
    });
    let t = db.table("t").unwrap();
    let c = t.index("t_id").unwrap().btree.cache_counters();
    let (hits, lookups) = (hits.into_inner(), lookups.into_inner());
    let (auto_cached, auto_plain) = (auto_cached.into_inner(), auto_plain.into_inner());
    eprintln!(
        "{lookups} lookups, {hits} hits, the auto reader's entries {auto_cached} through \
         the cache and {auto_plain} around it, {c:?}"
    );
    assert!(
        lookups >= 3000 && hits > 100,
        "{lookups} lookups, {hits} hits"
    );
    // A fresh governor explores one lookup in 16 until its first decision,
    // so both ways answered some of the auto reader's lookups.
    assert!(
        auto_cached > 0 && auto_plain > 0,
        "auto reader: {auto_cached} entries through the cache, {auto_plain} around it"
    );
    assert!(
        c.predicates >= 300 && c.predicate_zeroed > 0 && c.stale > 0,
        "{c:?}"
    );
}

/// An index declared with cached columns is built with room for them
/// (`CACHED_LEAF_FILL`) unless a fill is chosen; others keep the default.
#[test]
fn an_index_with_cached_columns_is_built_with_room_for_them() {
    use strata_storage::db::{CACHED_LEAF_FILL, DEFAULT_LEAF_FILL};
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path(), 20_000);
    let t = db.table("t").unwrap();
    let fill_of =
        |t: &strata_storage::Table, ix: &str| t.index(ix).unwrap().btree.stats().unwrap().leaf_fill;
    assert!((fill_of(&t, "t_id") - DEFAULT_LEAF_FILL).abs() < 0.02);
    db.create_index(
        "t",
        IndexSpec::new("t_cached", &["id"]).cache(&["grp"]),
        &NoProgress,
    )
    .unwrap();
    let mut chosen = IndexSpec::new("t_chosen", &["id"]).cache(&["grp"]);
    chosen.leaf_fill = 0.95;
    db.create_index("t", chosen, &NoProgress).unwrap();
    let t = db.table("t").unwrap();
    assert!((fill_of(&t, "t_cached") - CACHED_LEAF_FILL).abs() < 0.02);
    assert!((fill_of(&t, "t_chosen") - 0.95).abs() < 0.02);
}
