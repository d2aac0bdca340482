//! `ALTER TABLE`: a column added or dropped, a column or the table renamed
//! ([`Database::alter_table`]).
//!
//! A rename changes only the catalog. Adding or dropping a column rewrites
//! the table, as a compaction does (`maintenance/compact.rs`): every row,
//! with the new column NULL or the dropped one left out, goes into a new
//! heap in the declared (plain) encodings, every index is rebuilt over it,
//! all of it is synced, and only then is the catalog swapped; the old files
//! go after. A crash before the swap leaves the table as it was (the new
//! files are orphans, removed at the next open); after it, the altered one.
//! Either way, as every DDL statement, the log is checkpointed first.
//!
//! Refused: a table split into a side table (`strata split`), one on the
//! cold tier, one with a semantic id (`strata compact --semantic-id`), and
//! dropping a column an index has as a key or caches (the error names the
//! index: drop it first).

use std::sync::Arc;

use crate::catalog::{TableDef, validate_name};
use crate::error::{Result, StorageError};
use crate::progress::Progress;
use crate::row::encoding::Encoding;
use crate::row::{Column, Schema, Value};

use super::database::Database;
use super::load::TableLoad;

/// One change `ALTER TABLE` makes.
#[derive(Clone, Debug, PartialEq)]
pub enum TableChange {
    /// A new last column, NULL in the rows already there (so nullable,
    /// unless the table is empty).
    AddColumn(Column),
    /// Column (as the schema spells it) removed with its values.
    DropColumn(String),
    /// Column `from` (as the schema spells it) is now called `to`.
    RenameColumn { from: String, to: String },
    /// The table is now called this.
    Rename(String),
}

fn schema_error(table: &str, why: String) -> StorageError {
    StorageError::Schema(format!("table '{table}': {why}"))
}

impl Database {
    /// Applies `change` to `table` (see the module docs).
    pub fn alter_table(
        &self,
        table: &str,
        change: &TableChange,
        progress: &dyn Progress,
    ) -> Result<()> {
        self.writable()?;
        let writer = self.writer_lock();
        self.checkpoint_locked()?;
        let old = self.movable_table(table)?;
        let def = self.catalog().table(table)?.clone();
        if def.side.is_some() {
            return Err(schema_error(
                table,
                format!(
                    "its columns are split into a side table (strata split); strata split {table} --merge first"
                ),
            ));
        }
        let col = |name: &str| {
            def.schema
                .index_of(name)
                .ok_or_else(|| StorageError::UnknownColumn {
                    table: table.into(),
                    column: name.into(),
                })
        };
        let mut next = def.clone();
        match change {
            TableChange::Rename(to) => {
                validate_name(to, "table")?;
                let cat = self.catalog();
                if let Some(t) = cat.tables.keys().find(|t| t.eq_ignore_ascii_case(to))
                    && t != table
                {
                    return Err(StorageError::TableExists(t.clone()));
                }
                if let Some(v) = cat.views.keys().find(|v| v.eq_ignore_ascii_case(to)) {
                    return Err(StorageError::ViewExists(v.clone()));
                }
                next.name = to.clone();
                return self.swap_def(table, next, &old);
            }
            TableChange::RenameColumn { from, to } => {
                let c = col(from)?;
                let spelled = def.schema.columns[c].name.clone();
                let mut columns = def.schema.columns.clone();
                columns[c].name = to.clone();
                next.schema =
                    Schema::new(columns).map_err(|e| schema_error(table, e.to_string()))?;
                let rename = |names: &mut Vec<String>| {
                    for n in names
                        .iter_mut()
                        .filter(|n| n.eq_ignore_ascii_case(&spelled))
                    {
                        *n = to.clone();
                    }
                };
                for i in &mut next.indexes {
                    rename(&mut i.columns);
                    rename(&mut i.cache);
                }
                // Statistics name columns by position and name: gone.
                next.stats = None;
                return self.swap_def(table, next, &old);
            }
            TableChange::AddColumn(_) | TableChange::DropColumn(_) => {}
        }
        if def.encodings.contains(&Encoding::Address) {
            return Err(schema_error(
                table,
                format!(
                    "it has a semantic id (strata compact --semantic-id); strata compact {table} --plain first"
                ),
            ));
        }
        // Where each new column's value comes from in an old row (`None`: NULL).
        let sources: Vec<Option<usize>> = match change {
            TableChange::AddColumn(c) => {
                if !c.nullable && def.rows > 0 {
                    return Err(schema_error(
                        table,
                        format!(
                            "a new column is NULL in the {} rows it has, so column '{}' cannot be NOT NULL \
                             (add it without NOT NULL; DEFAULT is not supported)",
                            def.rows, c.name
                        ),
                    ));
                }
                c.ty.validate()
                    .map_err(|e| schema_error(table, format!("column '{}': {e}", c.name)))?;
                let mut columns = def.schema.columns.clone();
                columns.push(c.clone());
                next.schema =
                    Schema::new(columns).map_err(|e| schema_error(table, e.to_string()))?;
                (0..def.schema.len())
                    .map(Some)
                    .chain(std::iter::once(None))
                    .collect()
            }
            TableChange::DropColumn(name) => {
                let c = col(name)?;
                let spelled = &def.schema.columns[c].name;
                if let Some(ix) = def.indexes.iter().find(|i| {
                    i.columns
                        .iter()
                        .chain(&i.cache)
                        .any(|k| k.eq_ignore_ascii_case(spelled))
                }) {
                    return Err(schema_error(
                        table,
                        format!(
                            "index '{}' has column '{spelled}' as a key or caches it, so the \
                             column cannot be dropped: DROP INDEX {} first",
                            ix.name, ix.name
                        ),
                    ));
                }
                if def.schema.len() == 1 {
                    return Err(schema_error(
                        table,
                        format!("'{spelled}' is its only column; DROP TABLE drops the table"),
                    ));
                }
                let mut columns = def.schema.columns.clone();
                columns.remove(c);
                next.schema =
                    Schema::new(columns).map_err(|e| schema_error(table, e.to_string()))?;
                (0..def.schema.len())
                    .filter(|&i| i != c)
                    .map(Some)
                    .collect()
            }
            TableChange::Rename(_) | TableChange::RenameColumn { .. } => unreachable!(),
        };
        next.heap_file = self.new_file_name(&format!("{}.heap", def.name));
        next.pages = 0;
        next.rows = 0;
        next.hot_region = None;
        next.encodings = vec![];
        next.stats = None;
        for i in &mut next.indexes {
            i.hot = None;
        }
        let mut load = TableLoad::replacing(self, writer, next, old.clone())?;
        progress.phase(&format!("rewrite {table}"), def.rows);
        old.scan_rows(|_, row| {
            let new: Vec<Value> = sources
                .iter()
                .map(|s| s.map_or(Value::Null, |i| row[i].clone()))
                .collect();
            load.append(&new)?;
            Ok(())
        })?;
        progress.advance(def.rows);
        load.commit(progress)?;
        Ok(())
    }

    /// Replaces `table`'s catalog entry with `next` (same files; a rename
    /// moves it to its new name) and closes the open table, which reopens
    /// from the catalog when next asked for. The caller holds the writer
    /// lock and has checkpointed.
    fn swap_def(&self, table: &str, next: TableDef, open: &Arc<crate::db::Table>) -> Result<()> {
        {
            let mut cat = self.catalog.lock();
            let mut new = cat.clone();
            new.tables.remove(table);
            new.tables.insert(next.name.clone(), next);
            new.save(&self.dir)?;
            *cat = new;
        }
        self.tables.lock().remove(table);
        self.forget_table(open)
    }
}
