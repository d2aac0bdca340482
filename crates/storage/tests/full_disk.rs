//! A full disk (issue 53, item 5), with the fault injected rather than a real
//! disk filled: after the log ran out of room, a read-only open writes nothing
//! and serves the committed state from memory; a read-write open that finds too
//! little room gives back what it took, says how much it needs, and recovers
//! once that much is free.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::wal::contents;
use strata_storage::db::NoProgress;
use strata_storage::device::FaultInjector;
use strata_storage::maintenance::check::check_database;
use strata_storage::row::{Schema, Value};
use strata_storage::{Database, DbOptions, IndexSpec, TableOptions};

fn opts(faults: &Arc<FaultInjector>, read_only: bool) -> DbOptions {
    DbOptions {
        buffer_pool_bytes: 16 << 20,
        direct_io: false,
        read_only,
        faults: Some(faults.clone()),
        // No checkpoint from a commit: the log keeps everything since the load.
        checkpoint_log_bytes: 1 << 40,
        ..DbOptions::default()
    }
}

fn row(id: i64) -> Vec<Value> {
    vec![
        Value::Int64(id),
        Value::Str(format!("row {id} {}", "y".repeat((id % 30) as usize))),
    ]
}

/// A database whose log ran out of room: table `t` (with an index on `id` if
/// `indexed`) loaded with 100 rows and checkpointed, then one committed
/// transaction of 2,000 more rows (the heap and index grow past their files'
/// ends, in the log only), then a transaction whose commit found the disk
/// full. The process ends there. Returns the committed rows.
fn full_log(dir: &Path, indexed: bool) -> BTreeMap<i64, Vec<Value>> {
    let faults = FaultInjector::new();
    let db = Database::create(dir, opts(&faults, false)).unwrap();
    let schema = Schema::parse("id BIGINT NOT NULL, note VARCHAR(40)").unwrap();
    let indexes = if indexed {
        vec![IndexSpec::new("t_id", &["id"])]
    } else {
        vec![]
    };
    let topts = TableOptions {
        fill_factor: 0.9,
        segment_pages: 16,
    };
    let mut load = db.begin_create_load("t", schema, topts, indexes).unwrap();
    for i in 0..100 {
        load.append(&row(i)).unwrap();
    }
    load.commit(&NoProgress).unwrap();
    db.checkpoint().unwrap();
    let t = db.table("t").unwrap();
    let txn = db.begin_write().unwrap();
    t.insert_rows(&(100..2100).map(row).collect::<Vec<_>>())
        .unwrap();
    txn.commit().unwrap();
    // Not read back here: a scan writes the table's changed pages back first,
    // and the point is a log holding pages the data files do not have.
    let model: BTreeMap<i64, Vec<Value>> = (0..2100).map(|i| (i, row(i))).collect();
    // The disk is full: the next commit's log write fails.
    faults.arm("enospc-on-write:1".parse().unwrap());
    let txn = db.begin_write().unwrap();
    t.insert_rows(&[row(5000)]).unwrap();
    let e = txn.commit().expect_err("the log is full").to_string();
    assert!(e.contains("No space left on device"), "{e}");
    drop(t);
    db.crash();
    model
}

/// Every file under `dir` and its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The size of every data file (`data/...`).
fn data_sizes(dir: &Path) -> BTreeMap<PathBuf, usize> {
    snapshot(&dir.join("data"))
        .into_iter()
        .map(|(p, b)| (p, b.len()))
        .collect()
}

/// A read-only open of a database that was not closed cleanly, on a disk
/// where every write fails, writes nothing and sees every committed row
/// (last checkpoint + committed log, redone in memory), index and catalog
/// sizes included.
#[test]
fn a_read_only_open_after_enospc_in_the_log_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let model = full_log(dir.path(), true);
    let before = snapshot(dir.path());
    let faults = FaultInjector::new();
    faults.arm("enospc-on-write:1".parse().unwrap());
    let db = Database::open(dir.path(), opts(&faults, true))
        .unwrap_or_else(|e| panic!("a read-only open must not need room: {e}"));
    assert_eq!(contents(&db), model);
    let why = db.read_only_reason();
    assert!(why.contains("not closed cleanly"), "{why}");
    let t = db.table("t").unwrap();
    assert_eq!(t.rows(), model.len() as u64);
    assert_eq!(db.catalog().table("t").unwrap().rows, model.len() as u64);
    let ix = t.index("t_id").unwrap();
    assert_eq!(ix.btree.len(), model.len() as u64);
    assert_eq!(
        db.catalog().table("t").unwrap().indexes[0].entries,
        model.len() as u64,
        "the catalog's entry count is brought forward in memory too"
    );
    let key = ix.key_of_row(&[Value::Int64(2099), Value::Null]);
    assert_eq!(ix.btree.lookup(&key).unwrap().len(), 1);
    let report = check_database(&db, &NoProgress).unwrap();
    assert_eq!(report[0].rows, model.len() as u64);
    drop(t);
    drop(db);
    assert_eq!(faults.fired(), 0, "nothing tried to write");
    let after = snapshot(dir.path());
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    for (p, b) in &before {
        assert!(after[p] == *b, "{} changed", p.display());
    }
    // And the read-write open that follows recovers the same rows.
    let db = Database::open(dir.path(), opts(&FaultInjector::new(), false)).unwrap();
    assert_eq!(contents(&db), model);
}

/// A read-write open whose recovery runs out of room midway gives back what
/// it wrote past the data files' ends, and its error says how much room it
/// needs and where.
#[test]
fn a_failed_recovery_gives_back_the_room_it_took() {
    let dir = tempfile::tempdir().unwrap();
    let model = full_log(dir.path(), false);
    let sizes = data_sizes(dir.path());
    // The first redone write lands inside the heap, the second past its end,
    // the third finds the disk full.
    let faults = FaultInjector::new();
    faults.arm("enospc-on-write:3".parse().unwrap());
    let e = Database::open(dir.path(), opts(&faults, false))
        .err()
        .expect("no room to recover")
        .to_string();
    assert_eq!(data_sizes(dir.path()), sizes, "{e}");
    assert!(e.contains("bytes") && e.contains("free"), "{e}");
    assert!(e.contains(&dir.path().display().to_string()), "{e}");
    let need = needed(&e);
    assert!(need > 0, "{e}");
    // One byte less than it asks for: refused before it writes anything.
    let faults = FaultInjector::new();
    faults.arm(format!("full-disk:{}", need - 1).parse().unwrap());
    let e = Database::open(dir.path(), opts(&faults, false))
        .err()
        .expect("one byte short")
        .to_string();
    assert_eq!(needed(&e), need, "{e}");
    assert!(e.contains("nothing was written"), "{e}");
    assert_eq!(data_sizes(dir.path()), sizes, "{e}");
    assert_eq!(faults.free_bytes(), Some(need - 1));
    // As much as it asks for is enough.
    faults.arm(format!("full-disk:{need}").parse().unwrap());
    let db = Database::open(dir.path(), opts(&faults, false)).unwrap();
    assert_eq!(contents(&db), model);
    assert_eq!(check_database(&db, &NoProgress).unwrap()[0].rows, 2100);
    drop(db);
    // What it asked for is what the heap grew by, plus the catalog's rewrite
    // in whole blocks, and no more than the log it replaced.
    let grown: usize =
        data_sizes(dir.path()).values().sum::<usize>() - sizes.values().sum::<usize>();
    assert!(grown > 0, "the log held pages past the heap's end");
    let catalog = std::fs::metadata(dir.path().join("catalog.json"))
        .unwrap()
        .len();
    assert_eq!(need, grown as u64 + catalog.div_ceil(4096) * 4096);
}

/// The bytes a refused recovery says it needs.
fn needed(e: &str) -> u64 {
    let at = e.find("recovery needs ").unwrap_or_else(|| panic!("{e}")) + 15;
    let n: String = e[at..].chars().take_while(char::is_ascii_digit).collect();
    n.parse().unwrap_or_else(|_| panic!("{e}"))
}

/// A commit whose log segment cannot grow on a full disk (no byte free) fails
/// with ENOSPC; the database stays readable without room and recovers with
/// the room it names.
#[test]
fn a_log_that_cannot_grow_fails_the_commit_and_loses_nothing_committed() {
    let dir = tempfile::tempdir().unwrap();
    let faults = FaultInjector::new();
    let db = Database::create(dir.path(), opts(&faults, false)).unwrap();
    let schema = Schema::parse("id BIGINT NOT NULL, note VARCHAR(40)").unwrap();
    let topts = TableOptions {
        fill_factor: 0.9,
        segment_pages: 16,
    };
    let mut load = db.begin_create_load("t", schema, topts, vec![]).unwrap();
    for i in 0..50 {
        load.append(&row(i)).unwrap();
    }
    load.commit(&NoProgress).unwrap();
    db.checkpoint().unwrap();
    let model = contents(&db);
    faults.arm("full-disk:0".parse().unwrap());
    let t = db.table("t").unwrap();
    let txn = db.begin_write().unwrap();
    t.insert_rows(&[row(1000)]).unwrap();
    let e = txn.commit().expect_err("no room for the log").to_string();
    assert!(
        e.contains("No space left on device") && e.contains("wal"),
        "{e}"
    );
    drop(t);
    drop(db);
    let reader = Database::open(dir.path(), opts(&faults, true)).unwrap();
    assert_eq!(contents(&reader), model);
    drop(reader);
    let db = Database::open(dir.path(), opts(&faults, false)).unwrap();
    assert_eq!(contents(&db), model);
}
