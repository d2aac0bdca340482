//! PRIMARY KEY and UNIQUE constraints: a unique index
//! ([`strata_storage::catalog::IndexDef::unique`]) checked before an
//! `INSERT` or `UPDATE` changes anything ([`crate::dml`] collects every new
//! row first), so a statement that would repeat a key fails whole with
//! SQLSTATE 23505 and leaves the table as it was. Keys holding a NULL are
//! never equal to another (SQL's UNIQUE); a PRIMARY KEY's columns are NOT
//! NULL. Loads check the same when they rebuild the index
//! (`strata_storage::db::load`).

use std::collections::HashSet;

use strata_storage::row::{Tid, Value};
use strata_storage::{StorageError, Table};

use crate::error::SqlError;

fn violation(table: &Table, index: usize, row: &[Value], why: &'static str) -> SqlError {
    let ix = &table.indexes()[index];
    let schema = table.schema();
    let key: Vec<String> = ix
        .key_cols
        .iter()
        .map(|&c| row[c].display(&schema.columns[c].ty))
        .collect();
    SqlError::Storage(StorageError::Unique {
        index: ix.def.name.clone(),
        table: table.name().to_string(),
        columns: ix.def.columns.join(", "),
        key: key.join(", "),
        why,
    })
}

/// Whether `row`'s key in index `ix` has a NULL (never a duplicate).
fn has_null(table: &Table, index: usize, row: &[Value]) -> bool {
    table.indexes()[index]
        .key_cols
        .iter()
        .any(|&c| row[c].is_null())
}

/// Checks that `rows`, inserted into `table`, repeat no key of a unique
/// index: not among themselves, not with a row already there.
pub(crate) fn check_insert<'a>(
    table: &Table,
    rows: impl Iterator<Item = &'a [Value]> + Clone,
) -> Result<(), SqlError> {
    for (i, ix) in table.indexes().iter().enumerate() {
        if !ix.def.unique {
            continue;
        }
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        for row in rows.clone() {
            if has_null(table, i, row) {
                continue;
            }
            let key = ix.key_of_row(row);
            if !ix.btree.lookup(&key)?.is_empty() {
                return Err(violation(table, i, row, "already exists"));
            }
            if !seen.insert(key) {
                return Err(violation(
                    table,
                    i,
                    row,
                    "appears twice among the rows inserted",
                ));
            }
        }
    }
    Ok(())
}

/// Checks that `table` with the rows at `changes`' tids replaced by their
/// new rows repeats no key of a unique index: a new key may be held now
/// only by one of the rows changed (whose old keys go), and no two new rows
/// share one.
pub(crate) fn check_update(table: &Table, changes: &[(Tid, Vec<Value>)]) -> Result<(), SqlError> {
    if !table.indexes().iter().any(|ix| ix.def.unique) {
        return Ok(());
    }
    let changed: HashSet<Tid> = changes.iter().map(|(t, _)| *t).collect();
    for (i, ix) in table.indexes().iter().enumerate() {
        if !ix.def.unique {
            continue;
        }
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        for (_, row) in changes {
            if has_null(table, i, row) {
                continue;
            }
            let key = ix.key_of_row(row);
            if ix.btree.lookup(&key)?.iter().any(|t| !changed.contains(t)) {
                return Err(violation(table, i, row, "already exists"));
            }
            if !seen.insert(key) {
                return Err(violation(
                    table,
                    i,
                    row,
                    "would be given to more than one row",
                ));
            }
        }
    }
    Ok(())
}
