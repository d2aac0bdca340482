//! Helpers shared by the loader tests.
#![allow(dead_code)]

use std::sync::Mutex;

use strata_storage::db::{Database, DbOptions, Progress};
use strata_storage::row::Value;

/// A fresh database in a temporary directory (buffered I/O, small pool).
pub fn db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(
        &dir.path().join("db"),
        DbOptions {
            direct_io: false,
            buffer_pool_bytes: 8 << 20,
            ..Default::default()
        },
    )
    .unwrap();
    (dir, db)
}

/// Every row of `table` in heap order.
pub fn rows(db: &Database, table: &str) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    db.table(table)
        .unwrap()
        .scan_rows(|_, r| {
            out.push(r);
            Ok(())
        })
        .unwrap();
    out
}

/// Records phases and the units advanced in each.
#[derive(Default)]
pub struct Recorder {
    pub phases: Mutex<Vec<(String, u64, u64)>>,
}

impl Progress for Recorder {
    fn phase(&self, name: &str, total: u64) {
        self.phases
            .lock()
            .unwrap()
            .push((name.to_string(), total, 0));
    }
    fn advance(&self, n: u64) {
        if let Some(p) = self.phases.lock().unwrap().last_mut() {
            p.2 += n;
        }
    }
}

impl Recorder {
    pub fn phase(&self, name: &str) -> Option<(u64, u64)> {
        self.phases
            .lock()
            .unwrap()
            .iter()
            .find(|p| p.0 == name)
            .map(|p| (p.1, p.2))
    }
}
