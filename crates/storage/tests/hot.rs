//! Hot/cold clustering and the hot partition (`maintenance/cluster.rs`, the lookup in `db/table.rs`), checked against a
//! model of the rows: every row stays findable through every path, the hot
//! tuples end up together, the partition answers exactly what the full index
//! does, row changes keep it so, tuples that cool move back, and a crash in
//! the middle of a clustering loses nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_storage::db::NoProgress;
use strata_storage::device::FaultInjector;
use strata_storage::device::fault::{FaultKind, FaultOp, FaultPlan};
use strata_storage::maintenance::check::check_database;
use strata_storage::maintenance::cluster::ClusterOptions;
use strata_storage::row::{Schema, Value, encode_key};
use strata_storage::{Database, DbOptions, IndexSpec, Table, TableOptions};

const ROWS: i64 = 6000;

fn opts() -> DbOptions {
    DbOptions {
        buffer_pool_bytes: 256 * 8192,
        direct_io: false,
        ..DbOptions::default()
    }
}

fn row(id: i64, pad: usize) -> Vec<Value> {
    vec![
        Value::Int64(id),
        Value::Int32((id % 97) as i32),
        Value::Str("x".repeat(pad)),
    ]
}

fn create(dir: &Path) -> Database {
    let db = Database::create(dir, opts()).unwrap();
    let schema = Schema::parse("id BIGINT NOT NULL, g INT, pad VARCHAR(400)").unwrap();
    let mut load = db
        .begin_create_load(
            "t",
            schema,
            TableOptions {
                fill_factor: 1.0,
                segment_pages: 64,
            },
            vec![
                IndexSpec::new("t_id", &["id"]),
                IndexSpec::new("t_g", &["g"]),
            ],
        )
        .unwrap();
    for id in 0..ROWS {
        load.append(&row(id, 150)).unwrap();
    }
    load.commit(&NoProgress).unwrap();
    db
}

fn key(id: i64) -> Vec<u8> {
    let mut k = Vec::new();
    encode_key(
        &[strata_storage::row::DataType::Int64],
        &[Value::Int64(id)],
        &mut k,
    );
    k
}

/// Every id in the model is found by `Table::lookup` exactly once with its
/// row, and no other id is.
fn check_model(t: &Table, model: &BTreeMap<i64, Vec<Value>>) {
    let ix = t.index("t_id").unwrap();
    for (&id, want) in model {
        let tids = t.lookup(ix, &key(id)).unwrap();
        assert_eq!(tids.len(), 1, "id {id}: {tids:?}");
        assert_eq!(&t.get_row(tids[0]).unwrap().unwrap(), want, "id {id}");
    }
    let mut seen = BTreeMap::new();
    t.scan_rows(|_, r| {
        let Value::Int64(id) = r[0] else { panic!() };
        assert!(seen.insert(id, r).is_none(), "id {id} twice in the heap");
        Ok(())
    })
    .unwrap();
    assert_eq!(&seen, model);
}

/// The ids a workload reads over and over: scattered over the heap.
fn hot_ids(rng: &mut SmallRng, n: usize) -> Vec<i64> {
    let mut s = BTreeSet::new();
    while s.len() < n {
        s.insert(rng.random_range(0..ROWS));
    }
    s.into_iter().collect()
}

fn read(t: &Table, ids: &[i64], times: usize) {
    let ix = t.index("t_id").unwrap();
    for _ in 0..times {
        for &id in ids {
            assert_eq!(t.lookup(ix, &key(id)).unwrap().len(), 1);
        }
    }
}

#[test]
fn clustering_gathers_the_hot_tuples_and_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = create(dir.path());
    let t = db.table("t").unwrap();
    t.heat().set_every(1);
    let model: BTreeMap<i64, Vec<Value>> = (0..ROWS).map(|i| (i, row(i, 150))).collect();
    let mut rng = SmallRng::seed_from_u64(7);
    let hot = hot_ids(&mut rng, 300);
    // And some cold reads, once each: below the threshold.
    read(&t, &hot, 3);
    read(&t, &hot_ids(&mut rng, 200), 1);
    let pages_before = t.heap().num_pages();
    let rep = db
        .cluster_hot(
            "t",
            &ClusterOptions {
                batch: Some(37),
                ..ClusterOptions::default()
            },
        )
        .unwrap();
    // Only the tuples read 3 times: the cold ones were read once.
    assert!(rep.hot >= 290 && rep.hot <= 300, "{rep:?}");
    assert_eq!(rep.moved_in, rep.hot);
    assert_eq!(rep.region_start, pages_before);
    assert!(rep.transactions >= rep.moved_in / 37);
    let per_page = (8192 / 190) as u64;
    assert!(
        rep.hot_pages_after <= rep.hot / per_page + 2,
        "hot tuples on {} pages after",
        rep.hot_pages_after
    );
    assert!(rep.hot_pages_before > 5 * rep.hot_pages_after, "{rep:?}");
    check_model(&t, &model);
    check_database(&db, &NoProgress).unwrap();
    // Each hot tuple is now in the hot region.
    let ix = t.index("t_id").unwrap();
    let mut in_region = 0;
    for &id in &hot {
        let tid = t.lookup(ix, &key(id)).unwrap()[0];
        if tid.page as u64 >= rep.region_start {
            in_region += 1;
        }
    }
    assert_eq!(in_region, rep.hot);
}

/// The most counted tuples go first: a hotter tuple never sits on a later
/// page of the hot region than a cooler one, so a pool that holds only the
/// region's first pages holds the most read tuples.
#[test]
fn clustering_places_the_most_counted_tuples_first() {
    let dir = tempfile::tempdir().unwrap();
    let db = create(dir.path());
    let t = db.table("t").unwrap();
    t.heat().set_every(1);
    let mut rng = SmallRng::seed_from_u64(11);
    let mut ids = hot_ids(&mut rng, 360);
    // Three tiers of 120, scattered over the heap, read 8, 5 and 2 times.
    for i in (1..ids.len()).rev() {
        ids.swap(i, rng.random_range(0..=i));
    }
    let tiers: Vec<(&[i64], usize)> = vec![(&ids[..120], 8), (&ids[120..240], 5), (&ids[240..], 2)];
    for &(tier, times) in tiers.iter().rev() {
        read(&t, tier, times);
    }
    let rep = db.cluster_hot("t", &ClusterOptions::default()).unwrap();
    assert_eq!(rep.moved_in, 360, "{rep:?}");
    let ix = t.index("t_id").unwrap();
    let pages = |tier: &[i64]| -> (u32, u32) {
        let p: Vec<u32> = tier
            .iter()
            .map(|&id| t.lookup(ix, &key(id)).unwrap()[0].page)
            .collect();
        (*p.iter().min().unwrap(), *p.iter().max().unwrap())
    };
    let (hot, warm, cool) = (pages(tiers[0].0), pages(tiers[1].0), pages(tiers[2].0));
    assert_eq!(
        hot.0 as u64, rep.region_start,
        "the hottest open the region"
    );
    assert!(
        hot.1 <= warm.0 && warm.1 <= cool.0,
        "{hot:?} {warm:?} {cool:?}"
    );
    // In tuple-id order the tiers would share every page.
    assert!(hot.1 < cool.0, "{hot:?} {cool:?}");
}

#[test]
fn partition_answers_as_the_full_index_through_changes_crash_and_cooling() {
    let dir = tempfile::tempdir().unwrap();
    let mut model: BTreeMap<i64, Vec<Value>> = (0..ROWS).map(|i| (i, row(i, 150))).collect();
    let mut rng = SmallRng::seed_from_u64(11);
    let hot = hot_ids(&mut rng, 250);
    {
        let db = create(dir.path());
        let t = db.table("t").unwrap();
        t.heat().set_every(1);
        read(&t, &hot, 4);
        let rep = db
            .cluster_hot(
                "t",
                &ClusterOptions {
                    partition: Some("t_id".into()),
                    ..ClusterOptions::default()
                },
            )
            .unwrap();
        assert_eq!(rep.partition.as_deref(), Some("t_id"));
        assert_eq!(rep.partition_entries, 250);
        assert!(rep.partition_pages * 4 < rep.full_index_pages, "{rep:?}");
        let ix = t.index("t_id").unwrap();
        let h = ix.hot().unwrap();
        for &id in &hot {
            assert_eq!(h.btree.lookup(&key(id)).unwrap().len(), 1, "id {id}");
        }
        check_model(&t, &model);
        check_database(&db, &NoProgress).unwrap();

        // Row changes: an update in place, one that moves the row, a delete,
        // an insert of a new id, all on hot rows.
        let txn = db.begin_write().unwrap();
        let tid = |id: i64| t.lookup(t.index("t_id").unwrap(), &key(id)).unwrap()[0];
        t.update_row(tid(hot[0]), &row(hot[0], 100)).unwrap();
        model.insert(hot[0], row(hot[0], 100));
        t.update_row(tid(hot[1]), &row(hot[1], 390)).unwrap();
        model.insert(hot[1], row(hot[1], 390));
        t.delete_row(tid(hot[2])).unwrap();
        model.remove(&hot[2]);
        t.insert_row(&row(ROWS + 1, 20)).unwrap();
        model.insert(ROWS + 1, row(ROWS + 1, 20));
        txn.commit().unwrap();
        let h = t.index("t_id").unwrap().hot().unwrap();
        assert_eq!(
            h.btree.lookup(&key(hot[1])).unwrap().len(),
            1,
            "moved stays hot"
        );
        assert!(h.btree.lookup(&key(hot[2])).unwrap().is_empty());
        assert!(h.btree.lookup(&key(ROWS + 1)).unwrap().is_empty());
        // An aborted change leaves the partition as it was.
        {
            let _txn = db.begin_write().unwrap();
            t.delete_row(tid(hot[3])).unwrap();
        }
        assert_eq!(h.btree.lookup(&key(hot[3])).unwrap().len(), 1);
        check_model(&t, &model);
        check_database(&db, &NoProgress).unwrap();
        db.crash();
    }
    // After a crash: the committed changes, the partition, the counts of the
    // last checkpoint (none here: it crashed before any).
    let db = Database::open(dir.path(), opts()).unwrap();
    let t = db.table("t").unwrap();
    assert!(t.index("t_id").unwrap().hot().is_some());
    check_model(&t, &model);
    check_database(&db, &NoProgress).unwrap();

    // The workload moves on: the old hot set cools, a new one heats.
    t.heat().set_every(1);
    let hot2: Vec<i64> = hot_ids(&mut rng, 200)
        .into_iter()
        .filter(|i| model.contains_key(i))
        .collect();
    // Two clusterings age the old counts (halved each time) below the threshold.
    for _ in 0..3 {
        read(&t, &hot2, 4);
        db.cluster_hot("t", &ClusterOptions::default()).unwrap();
    }
    read(&t, &hot2, 4);
    let rep = db.cluster_hot("t", &ClusterOptions::default()).unwrap();
    assert_eq!(
        rep.partition.as_deref(),
        Some("t_id"),
        "an existing partition is rebuilt"
    );
    assert_eq!(rep.partition_entries, hot2.len() as u64, "{rep:?}");
    let h = t.index("t_id").unwrap().hot().unwrap();
    let old_only = hot.iter().filter(|i| !hot2.contains(i)).count();
    let still = hot
        .iter()
        .filter(|i| !hot2.contains(i) && !h.btree.lookup(&key(**i)).unwrap().is_empty())
        .count();
    assert_eq!(
        still, 0,
        "{old_only} cooled ids, {still} still in the partition"
    );
    check_model(&t, &model);
    check_database(&db, &NoProgress).unwrap();
    drop(db);
    // A clean close keeps the counts.
    let db = Database::open(dir.path(), opts()).unwrap();
    let t = db.table("t").unwrap();
    assert!(!t.heat().is_empty());
    assert!(t.heat().load_warning().is_none());
}

#[test]
fn cooled_tuples_move_back_into_the_holes() {
    let dir = tempfile::tempdir().unwrap();
    let db = create(dir.path());
    let t = db.table("t").unwrap();
    t.heat().set_every(1);
    let model: BTreeMap<i64, Vec<Value>> = (0..ROWS).map(|i| (i, row(i, 150))).collect();
    let mut rng = SmallRng::seed_from_u64(3);
    let a = hot_ids(&mut rng, 200);
    read(&t, &a, 4);
    let first = db.cluster_hot("t", &ClusterOptions::default()).unwrap();
    assert_eq!(first.moved_in, 200);
    // Nothing reads `a` any more; `b` is hot now.
    t.heat().clear();
    let b: Vec<i64> = hot_ids(&mut rng, 200)
        .into_iter()
        .filter(|i| !a.contains(i))
        .collect();
    read(&t, &b, 4);
    let rep = db.cluster_hot("t", &ClusterOptions::default()).unwrap();
    assert_eq!(rep.region_start, first.region_start);
    assert_eq!(rep.moved_in, b.len() as u64);
    assert_eq!(rep.moved_out + rep.cooled_left, 200, "{rep:?}");
    assert!(rep.moved_out >= 190, "{rep:?}");
    let ix = t.index("t_id").unwrap();
    for &id in &a {
        let tid = t.lookup(ix, &key(id)).unwrap()[0];
        assert!((tid.page as u64) < rep.region_start || rep.cooled_left > 0);
    }
    // The heap did not grow by more than the new hot set's pages.
    assert!(
        rep.heap_pages <= first.heap_pages + b.len() as u64 / 40 + 2,
        "{rep:?}"
    );
    check_model(&t, &model);
    check_database(&db, &NoProgress).unwrap();
}

#[test]
fn a_crash_in_the_middle_of_a_clustering_loses_nothing() {
    for at in [1u64, 4, 9, 15] {
        let dir = tempfile::tempdir().unwrap();
        let model: BTreeMap<i64, Vec<Value>> = (0..ROWS).map(|i| (i, row(i, 150))).collect();
        drop(create(dir.path()));
        let faults = FaultInjector::new();
        let db = Database::open(
            dir.path(),
            DbOptions {
                faults: Some(faults.clone()),
                ..opts()
            },
        )
        .unwrap();
        let t = db.table("t").unwrap();
        t.heat().set_every(1);
        let mut rng = SmallRng::seed_from_u64(at);
        read(&t, &hot_ids(&mut rng, 400), 3);
        // The device fails the `at`-th write from now (the log's or a page's)
        // and every one after it; then the process dies.
        faults.arm(FaultPlan {
            kind: FaultKind::Eio,
            op: FaultOp::Write,
            nth: at,
        });
        let r = db.cluster_hot(
            "t",
            &ClusterOptions {
                partition: Some("t_id".into()),
                batch: Some(25),
                ..ClusterOptions::default()
            },
        );
        assert!(
            r.is_err(),
            "a failed write {at} did not stop the clustering"
        );
        drop(t);
        db.crash();
        let db = Database::open(dir.path(), opts()).unwrap();
        let t = db.table("t").unwrap();
        check_model(&t, &model);
        check_database(&db, &NoProgress).unwrap();
        // And it can be clustered again.
        t.heat().set_every(1);
        read(&t, &hot_ids(&mut rng, 100), 3);
        db.cluster_hot(
            "t",
            &ClusterOptions {
                partition: Some("t_id".into()),
                ..ClusterOptions::default()
            },
        )
        .unwrap();
        check_model(&t, &model);
        check_database(&db, &NoProgress).unwrap();
    }
}

/// A table whose `id` is a semantic id (the tuple's address), and a unique
/// `name` that says which row is which across moves.
fn create_semantic(dir: &Path) -> Database {
    let db = Database::create(dir, opts()).unwrap();
    let schema = Schema::parse("id BIGINT, name BIGINT NOT NULL, pad VARCHAR(400)").unwrap();
    let mut load = db
        .begin_create_load(
            "s",
            schema,
            TableOptions {
                fill_factor: 1.0,
                segment_pages: 64,
            },
            vec![],
        )
        .unwrap();
    for i in 0..ROWS {
        load.append(&[
            Value::Int64(i),
            Value::Int64(i),
            Value::Str("y".repeat(150)),
        ])
        .unwrap();
    }
    load.commit(&NoProgress).unwrap();
    let opts = strata_storage::maintenance::compact::CompactOptions {
        semantic_id: Some("id".into()),
        ..Default::default()
    };
    db.compact("s", &opts, &NoProgress).unwrap();
    db
}

/// Each row's id by its name.
fn ids_by_name(t: &Table) -> BTreeMap<i64, i64> {
    let mut m = BTreeMap::new();
    t.scan_rows(|_, r| {
        let (Value::Int64(id), Value::Int64(name)) = (&r[0], &r[1]) else {
            panic!("{r:?}")
        };
        assert!(m.insert(*name, *id).is_none(), "name {name} twice");
        Ok(())
    })
    .unwrap();
    m
}

/// Lookups by a semantic id read the row the id names and count as accesses,
/// so clustering gathers the rows looked up by id; a moved row gets a new id
/// in the hot region, and its old id no longer names it.
#[test]
fn lookups_by_semantic_id_are_counted_and_clustering_gives_new_ids() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_semantic(dir.path());
    let t = db.table("s").unwrap();
    t.heat().set_every(1);
    let before = ids_by_name(&t);
    assert_eq!(before.len(), ROWS as usize);
    let mut rng = SmallRng::seed_from_u64(11);
    let hot = hot_ids(&mut rng, 300);
    for _ in 0..3 {
        for &name in &hot {
            let (tid, row) = t.lookup_address(before[&name]).unwrap().unwrap();
            assert_eq!(row[1], Value::Int64(name));
            assert_eq!(
                row[0],
                Value::Int64(strata_storage::row::encoding::address_of(tid))
            );
        }
    }
    // Ids that name no row: negative, past the heap, an empty slot.
    assert!(t.lookup_address(-1).unwrap().is_none());
    assert!(t.lookup_address(i64::MAX).unwrap().is_none());
    let last = *before.values().max().unwrap();
    assert!(t.lookup_address(last + 1).unwrap().is_none());
    let pages_before = t.heap().num_pages();
    let rep = db.cluster_hot("s", &ClusterOptions::default()).unwrap();
    assert_eq!(rep.hot, 300, "{rep:?}");
    assert_eq!(rep.region_start, pages_before);
    let t = db.table("s").unwrap();
    let after = ids_by_name(&t);
    assert_eq!(after.len(), ROWS as usize);
    let first = (rep.region_start as i64) << 16;
    for (&name, &id) in &after {
        let (_, row) = t.lookup_address(id).unwrap().unwrap();
        assert_eq!(row[1], Value::Int64(name));
        if hot.binary_search(&name).is_ok() {
            assert!(id >= first, "hot {name}: id {id} before the region");
            let old = t.lookup_address(before[&name]).unwrap();
            assert!(old.is_none_or(|(_, r)| r[1] != Value::Int64(name)));
        } else {
            assert_eq!(id, before[&name], "cold {name} moved");
        }
    }
    check_database(&db, &NoProgress).unwrap();
    // A table without a semantic id says so.
    let db2 = create(&dir.path().join("plain"));
    let e = db2.table("t").unwrap().lookup_address(0).unwrap_err();
    assert!(e.to_string().contains("has no semantic id"), "{e}");
}
