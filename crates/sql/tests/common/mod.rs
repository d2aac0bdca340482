//! Helpers shared by the SQL tests.
#![allow(dead_code)]

use strata_storage::Database;
use strata_storage::db::{DbOptions, IndexSpec, NoProgress, TableOptions};
use strata_storage::types::{Schema, Value};

/// A fresh database in a temporary directory (buffered I/O, 4 MiB pool).
pub fn empty_db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(
        &dir.path().join("db"),
        DbOptions {
            buffer_pool_bytes: 4 << 20,
            direct_io: false,
            ..DbOptions::default()
        },
    )
    .unwrap();
    (dir, db)
}

/// Creates table `name` with `schema` and `indexes`, holding `rows`.
pub fn load(
    db: &Database,
    name: &str,
    schema: &str,
    indexes: Vec<IndexSpec>,
    rows: impl IntoIterator<Item = Vec<Value>>,
) {
    let mut l = db
        .begin_create_load(
            name,
            Schema::parse(schema).unwrap(),
            TableOptions::default(),
            indexes,
        )
        .unwrap();
    for r in rows {
        l.append(&r).unwrap();
    }
    l.commit(&NoProgress).unwrap();
}
