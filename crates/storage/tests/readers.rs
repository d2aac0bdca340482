//! Read-only handles beside a writer (issue 57, item 2): a reader opens while
//! a writer holds the database, reads the commits the log held when it
//! opened, and never serves a page the writer committed later — it refuses
//! it (`SnapshotMoved`, SQLSTATE 40001) and knows its snapshot moved; opened
//! again, it reads the new state. Checked against the model of the table's
//! history, with the writer's pages written back between the reader's reads
//! (checkpoints, and a small pool that evicts).

use std::collections::BTreeMap;
use std::path::Path;

use rand::{Rng, SeedableRng};
use strata_storage::row::Value;
use strata_storage::{Database, DbOptions, StorageError};

use crate::wal::{change, contents, setup};

fn reader(dir: &Path, pool_bytes: usize) -> Database {
    Database::open(
        dir,
        DbOptions {
            buffer_pool_bytes: pool_bytes,
            direct_io: false,
            read_only: true,
            ..DbOptions::default()
        },
    )
    .unwrap()
}

/// The table's rows by id, or the error the read met.
fn try_contents(db: &Database) -> Result<BTreeMap<i64, Vec<Value>>, StorageError> {
    let t = db.table("t")?;
    let mut out = BTreeMap::new();
    t.scan_rows(|_, r| {
        let Value::Int64(id) = r[0] else {
            panic!("id is a BIGINT")
        };
        out.insert(id, r);
        Ok(())
    })?;
    Ok(out)
}

#[test]
fn a_reader_beside_a_writer_refuses_a_page_committed_after_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path(), 2000, 4 << 20);
    let mut model = contents(&db);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    let mut next = 2000;
    // A commit the log holds and the data files do not (no checkpoint).
    let txn = db.begin_write().unwrap();
    for _ in 0..30 {
        change(&db, &mut model, &mut rng, &mut next);
    }
    txn.commit().unwrap();
    // Read from the log redone in memory.
    let r = reader(dir.path(), 4 << 20);
    assert_eq!(try_contents(&r).unwrap(), model);
    assert!(!r.snapshot_is_stale());
    // A reader on a checkpoint; the writer commits again and writes its
    // pages back before the reader reads anything.
    db.checkpoint().unwrap();
    let at_open = model.clone();
    let r = reader(dir.path(), 4 << 20);
    assert!(!r.snapshot_is_stale());
    let txn = db.begin_write().unwrap();
    for _ in 0..30 {
        change(&db, &mut model, &mut rng, &mut next);
    }
    txn.commit().unwrap();
    assert!(r.snapshot_is_stale(), "a commit past the snapshot");
    db.checkpoint().unwrap();
    let e = try_contents(&r).expect_err("a page from after the snapshot");
    assert!(matches!(e, StorageError::SnapshotMoved { .. }), "{e}");
    assert!(e.to_string().contains("SQLSTATE 40001"), "{e}");
    assert!(r.snapshot_moved());
    assert_ne!(model, at_open);
    // Opened again: the new state, and nothing moved under it.
    let r = r.reopen().unwrap();
    assert_eq!(try_contents(&r).unwrap(), model);
    assert!(!r.snapshot_moved() && !r.snapshot_is_stale());
    // A scan reads its pages again (a scan does not keep them in the pool):
    // after the next commit written back, it is refused again.
    let txn = db.begin_write().unwrap();
    change(&db, &mut model, &mut rng, &mut next);
    txn.commit().unwrap();
    db.checkpoint().unwrap();
    assert!(r.snapshot_is_stale());
    let e = try_contents(&r).expect_err("a page from after the snapshot");
    assert!(matches!(e, StorageError::SnapshotMoved { .. }), "{e}");
}

/// Random transactions of a writer whose small pool evicts committed pages
/// and which checkpoints now and then; between them a reader with a small
/// pool reads the whole table. Every read is either its snapshot's state,
/// exactly, or refused as moved — and some are refused.
#[test]
fn every_read_beside_a_writer_is_its_snapshot_or_refused() {
    for seed in 0..2u64 {
        let dir = tempfile::tempdir().unwrap();
        let db = setup(dir.path(), 20_000, 1 << 20);
        let mut model = contents(&db);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(40 + seed);
        let mut next = 20_000;
        let mut r = reader(dir.path(), 1 << 20);
        let mut seen = model.clone();
        let (mut served, mut refused, mut reopened) = (0, 0, 0);
        for step in 0..60 {
            let txn = db.begin_write().unwrap();
            for _ in 0..rng.random_range(1..40) {
                change(&db, &mut model, &mut rng, &mut next);
            }
            txn.commit().unwrap();
            if rng.random_ratio(1, 4) {
                db.checkpoint().unwrap();
            }
            match try_contents(&r) {
                Ok(c) => {
                    assert!(c == seen, "seed {seed} step {step}: a read mixed snapshots");
                    served += 1;
                }
                Err(e) => {
                    assert!(
                        matches!(e, StorageError::SnapshotMoved { .. }),
                        "seed {seed} step {step}: {e}"
                    );
                    assert!(r.snapshot_moved());
                    refused += 1;
                    r = r.reopen().unwrap();
                    seen = model.clone();
                    assert_eq!(try_contents(&r).unwrap(), seen);
                }
            }
            if rng.random_ratio(1, 3) && r.snapshot_is_stale() {
                r = r.reopen().unwrap();
                reopened += 1;
                seen = model.clone();
            }
        }
        eprintln!(
            "seed {seed}: {served} reads of the snapshot served, {refused} refused as moved, \
             {reopened} reopened as stale"
        );
        assert!(
            refused > 0,
            "seed {seed}: no read met a page from after its snapshot"
        );
        assert!(served > 0, "seed {seed}: no read was served");
    }
}
