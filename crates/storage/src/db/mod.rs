//! A database: a directory holding `catalog.json`, a `LOCK` file, the data files
//! under `data/` and the write-ahead log under `wal/`, plus the device and buffer
//! pool every table shares.
//!
//! Loads are atomic ([`TableLoad`]): new heap pages are written after the last
//! committed page, every index of the table is rebuilt into a new file, all of it
//! is fsynced, and only then is the catalog swapped. A crash at any point leaves
//! either the old state or the new one: opening the database read-write removes
//! files the catalog does not know and cuts heaps back to their committed size.
//!
//! Row changes ([`Table::insert_row`] and friends, and their batched forms
//! [`Table::insert_rows`] and [`Table::delete_rows`], which visit each heap page
//! and index leaf once per batch) happen inside a write
//! transaction ([`Database::begin_write`]): its pages stay in the buffer pool
//! until it commits, when the changes are logged (`wal.rs`) and the log is
//! synced; opening the database redoes committed changes the data files do not
//! have yet (`recovery.rs`). A checkpoint writes every changed page back and
//! lets the log start over; it runs when the log has grown past
//! [`CHECKPOINT_LOG_BYTES`], before loads and DDL, and when the database closes.
//!
//! Concurrency between processes: a read-write open takes an exclusive `flock` on
//! `LOCK`, a read-only open a shared one (`lock.rs`, which also says who holds
//! it when an open is refused). A read-only open of a database that was not
//! closed cleanly redoes the log in memory and writes nothing (`recovery.rs`).
//! A database that `strata serve` owns names the server in `<db>/SERVER`
//! (`served.rs`), so the commands that would be refused go through it.
//!
//! The files, bottom up: `options.rs` (how things are opened), `lock.rs`,
//! `served.rs`,
//! `heat.rs` (sampled access counts), `keysort.rs` (sorting index entries),
//! `index.rs`, `table.rs` (rows and the point lookup), `database.rs`,
//! `txn.rs` (write transactions), `load.rs` (loads and index builds),
//! `alter.rs` (ALTER TABLE) and `views.rs` (views in the catalog).

pub mod alter;
pub mod database;
pub mod deletes;
pub mod heat;
pub mod index;
pub mod keysort;
pub mod load;
pub(crate) mod lock;
pub mod options;
pub mod served;
pub mod table;
pub mod txn;
pub mod views;

pub use alter::TableChange;
pub use database::{Database, SNAPSHOT_TRIES};
pub use index::{CachedLookups, HotPartition, Index};
pub use load::{LoadSummary, TableLoad};
pub use options::{
    CACHED_LEAF_FILL, CHECKPOINT_LOG_BYTES, DEFAULT_LEAF_FILL, DEFAULT_POOL_BYTES,
    DEFAULT_SEGMENT_PAGES, DbOptions, IndexSpec, TableOptions,
};
pub use table::{Table, cold_read_only};
pub use txn::{Commit, HeldWriteTxn, OwnWrites, ReadSnapshot, WriteTxn};

// Callers name them `strata_storage::db::{Progress, NoProgress}` too.
pub use crate::progress::{NoProgress, Progress};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::StorageError;
    use crate::row::{Schema, Value};

    fn opts() -> DbOptions {
        DbOptions {
            buffer_pool_bytes: 2 << 20,
            direct_io: false,
            profile: None,
            read_only: false,
            faults: None,
            checkpoint_log_bytes: CHECKPOINT_LOG_BYTES,
            cold_tier: None,
            read_window: false,
        }
    }

    fn rows(n: i64, start: i64) -> impl Iterator<Item = Vec<Value>> {
        (start..start + n).map(|i| {
            vec![
                Value::Int64(i),
                Value::Int32((i % 1000) as i32),
                Value::Str(format!("row {i}")),
            ]
        })
    }

    /// Single-row changes keep the heap and every index in step (checked by
    /// `check` after a checkpoint and a reopen) and the row count right.
    #[test]
    fn row_changes_keep_indexes_consistent() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), opts()).unwrap();
        let schema = Schema::parse("id BIGINT, grp INT, note VARCHAR(20)").unwrap();
        let topts = TableOptions {
            fill_factor: 0.5,
            segment_pages: 8,
        };
        let mut load = db
            .begin_create_load("t", schema, topts, vec![IndexSpec::new("t_grp", &["grp"])])
            .unwrap();
        let mut tids = Vec::new();
        for r in rows(2000, 0) {
            tids.push(load.append(&r).unwrap());
        }
        load.commit(&NoProgress).unwrap();
        let t = db.table("t").unwrap();
        let e = t.delete_row(tids[0]).unwrap_err().to_string();
        assert!(e.contains("needs a write transaction"), "{e}");
        let txn = db.begin_write().unwrap();
        for i in 0..300i64 {
            let tid = tids[i as usize];
            match i % 4 {
                0 => t.delete_row(tid).unwrap(),
                1 => {
                    let row = vec![Value::Int64(i), Value::Int32(7), Value::Str("x".repeat(20))];
                    tids[i as usize] = t.update_row(tid, &row).unwrap();
                }
                2 => tids[i as usize] = t.move_row(tid, None).unwrap(),
                _ => {
                    t.insert_row(&[
                        Value::Int64(10_000 + i),
                        Value::Int32(3),
                        Value::Str("new".into()),
                    ])
                    .unwrap();
                }
            }
        }
        let e = t.delete_row(tids[0]).unwrap_err().to_string();
        assert!(e.contains("no tuple at page") && e.contains("'t'"), "{e}");
        assert_eq!(t.rows(), 2000 - 75 + 75);
        txn.commit().unwrap();
        drop(t);
        drop(db);
        let db = Database::open(dir.path(), opts()).unwrap();
        let report = crate::maintenance::check::check_database(&db, &NoProgress).unwrap();
        assert_eq!(report[0].rows, 2000);
        let t = db.table("t").unwrap();
        assert_eq!(
            t.index("t_grp")
                .unwrap()
                .btree
                .lookup(&t.index("t_grp").unwrap().key_of_row(&[
                    Value::Int64(0),
                    Value::Int32(7),
                    Value::Null
                ]))
                .unwrap()
                .len(),
            75 + 2
        );
    }

    /// Appending to a table whose last segment is partly full, with small segments,
    /// rebuilds its index over every row (a crash-loop failure once).
    #[test]
    fn statistics_survive_loads_and_reopen_until_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), opts()).unwrap();
        let schema = Schema::parse("id BIGINT, grp INT, note VARCHAR(20)").unwrap();
        let mut load = db
            .begin_create_load("t", schema, TableOptions::default(), vec![])
            .unwrap();
        for r in rows(100, 0) {
            load.append(&r).unwrap();
        }
        load.commit(&NoProgress).unwrap();
        assert_eq!(db.table_stats("t").unwrap(), None);
        db.set_table_stats("t", serde_json::json!({"rows": 100}))
            .unwrap();
        let mut load = db.begin_load("t").unwrap();
        for r in rows(100, 100) {
            load.append(&r).unwrap();
        }
        load.commit(&NoProgress).unwrap();
        // stale on purpose: the load did not refresh them
        assert_eq!(
            db.table_stats("t").unwrap(),
            Some(serde_json::json!({"rows": 100}))
        );
        assert!(matches!(
            db.set_table_stats("nope", serde_json::json!(1)),
            Err(StorageError::UnknownTable(_))
        ));
        drop(db);
        let db = Database::open(dir.path(), opts()).unwrap();
        assert_eq!(db.table("t").unwrap().rows(), 200);
        assert_eq!(
            db.table_stats("t").unwrap(),
            Some(serde_json::json!({"rows": 100}))
        );
    }

    #[test]
    fn append_loads_index_every_row() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), opts()).unwrap();
        let schema = Schema::parse("id BIGINT, grp INT, note VARCHAR(20)").unwrap();
        let topts = TableOptions {
            fill_factor: 1.0,
            segment_pages: 32,
        };
        let mut load = db
            .begin_create_load("t", schema, topts, vec![IndexSpec::new("t_grp", &["grp"])])
            .unwrap();
        for r in rows(60_000, 0) {
            load.append(&r).unwrap();
        }
        load.commit(&NoProgress).unwrap();
        for round in 1..=3 {
            let mut load = db.begin_load("t").unwrap();
            for r in rows(60_000, round * 60_000) {
                load.append(&r).unwrap();
            }
            let s = load.commit(&NoProgress).unwrap();
            assert_eq!(s.rows_total, 60_000 * (round as u64 + 1));
            let t = db.table("t").unwrap();
            assert_eq!(
                t.index("t_grp").unwrap().btree.len(),
                s.rows_total,
                "round {round}"
            );
            let mut n = 0;
            t.scan_rows(|_, _| {
                n += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!(n, s.rows_total);
        }
        drop(db);
        let db = Database::open(dir.path(), opts()).unwrap();
        let report = crate::maintenance::check::check_database(&db, &NoProgress).unwrap();
        assert_eq!(report[0].rows, 240_000);
    }
}
