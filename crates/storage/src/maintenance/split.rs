//! `strata split TABLE --columns a,b`: vertical partitioning (No Bits Left
//! Behind §3.2).
//!
//! A tuple is read whole even when a query needs a few of its fields, so a
//! wide column that is rarely read (a comment, a document) costs every scan
//! and every lookup the bytes it takes in each page. Splitting moves such
//! columns to the table's *side table* (`<table>.side`, hidden from
//! listings): a heap of its own whose rows hold those columns, one per row of
//! the table. The table's row keeps, in the place of the first side column,
//! the side row's tuple id (6 bytes, [`Encoding::Side`]); the other side
//! columns take nothing there. A read that needs a side column follows that
//! pointer ([`crate::db::Table::join_side`], and the SQL scan for the
//! columns it projects); one that does not never touches the side heap.
//!
//! Rows are joined back by tuple id, so the side table needs no index. Every
//! change goes through the table: an insert writes the side row first and
//! points to it, a delete removes both, an update writes the side row only
//! when a side column changed, and moves of the table's rows (clustering,
//! updates that relocate) keep the pointer. Both heaps are changed in the
//! same write transactions, logged alike.
//!
//! The split is a rewrite, like `strata compact`: one pass reads every row
//! (joined) and appends it to a new heap of the table and a new side heap,
//! the indexes are rebuilt, and one catalog swap commits both, so a crash
//! shows the table as it was or as split. `--merge` (no side columns) puts
//! every column back into the table's rows and drops the side table.
//!
//! The side columns may not be index keys nor cached in an index (an index
//! entry is built from the table's row alone), nor a semantic id.

use std::sync::Arc;

use serde::Serialize;

use crate::catalog::side_table_name;
use crate::db::{Database, TableLoad};
use crate::error::{Result, StorageError};
use crate::heap::HeapFile;
use crate::progress::Progress;
use crate::row::encoding::Encoding;

/// What a split did.
#[derive(Clone, Debug, Serialize)]
pub struct SplitReport {
    pub table: String,
    pub rows: u64,
    /// Heap pages of the table before (its side table's included).
    pub pages_before: u64,
    pub side_pages_before: u64,
    /// After: the table's heap and its side table's.
    pub pages_after: u64,
    pub side_pages_after: u64,
    /// The columns in the side table now.
    pub side_columns: Vec<String>,
}

impl Database {
    /// Moves `columns` of `table` to its side table (the others back into
    /// its rows; none: merges the side table back). See the module docs.
    pub fn split(
        &self,
        table: &str,
        columns: &[String],
        progress: &dyn Progress,
    ) -> Result<SplitReport> {
        self.writable()?;
        let writer = self.writer_lock();
        self.checkpoint_locked()?;
        let old = self.movable_table(table)?;
        let cat = self.catalog();
        let def = cat.table(table)?.clone();
        let schema = def.schema.clone();
        let mut side_cols = Vec::new();
        for name in columns {
            let c = schema
                .index_of(name)
                .ok_or_else(|| StorageError::UnknownColumn {
                    table: def.name.clone(),
                    column: name.clone(),
                })?;
            if side_cols.contains(&c) {
                return Err(StorageError::Schema(format!(
                    "column {} is named twice",
                    schema.columns[c].name
                )));
            }
            let col = &schema.columns[c].name;
            if let Some(ix) = def.indexes.iter().find(|ix| {
                ix.columns
                    .iter()
                    .chain(&ix.cache)
                    .any(|k| k.eq_ignore_ascii_case(col))
            }) {
                return Err(StorageError::Index {
                    index: ix.name.clone(),
                    reason: format!(
                        "it has column {col} as a key or cached column; an index entry is built from the table's row, so {col} cannot move to the side table (drop the index first)"
                    ),
                });
            }
            if def.encodings.get(c) == Some(&Encoding::Address) {
                return Err(StorageError::Schema(format!(
                    "column {col} is a semantic id (the tuple's address), stored nowhere: it cannot move to the side table"
                )));
            }
            side_cols.push(c);
        }
        side_cols.sort_unstable();

        // Each column keeps its encoding wherever it goes: a column now in
        // the side table has its encoding there.
        let old_side = match &def.side {
            Some(s) => Some(cat.table(s)?.clone()),
            None => None,
        };
        let mut stored: Vec<Encoding> = (0..schema.len())
            .map(|c| def.encodings.get(c).cloned().unwrap_or(Encoding::Plain))
            .collect();
        if let Some(sd) = &old_side {
            let was: Vec<usize> = (0..schema.len())
                .filter(|&c| stored[c] == Encoding::Side)
                .collect();
            for (j, &c) in was.iter().enumerate() {
                stored[c] = sd.encodings.get(j).cloned().unwrap_or(Encoding::Plain);
            }
        }
        let side_name = side_table_name(&def.name);
        let mut next = def.clone();
        next.heap_file = self.new_file_name(&format!("{}.heap", def.name));
        next.pages = 0;
        next.rows = 0;
        next.hot_region = None;
        next.stats = def.stats.clone();
        for i in &mut next.indexes {
            i.hot = None;
        }
        let mut main_enc = stored.clone();
        for &c in &side_cols {
            main_enc[c] = Encoding::Side;
        }
        next.encodings = if crate::row::encoding::is_plain(&main_enc) {
            vec![]
        } else {
            main_enc
        };
        next.side = (!side_cols.is_empty()).then(|| side_name.clone());
        let mut load = TableLoad::replacing(self, writer, next, old.clone())?;
        if !side_cols.is_empty() {
            let side_schema = crate::row::Schema::new(
                side_cols
                    .iter()
                    .map(|&c| schema.columns[c].clone())
                    .collect(),
            )?;
            let side_enc: Vec<Encoding> = side_cols.iter().map(|&c| stored[c].clone()).collect();
            let side_def = crate::catalog::TableDef {
                name: side_name.clone(),
                schema: side_schema,
                heap_file: self.new_file_name(&format!("{side_name}.heap")),
                segment_pages: def.segment_pages,
                fill_factor: def.fill_factor,
                pages: 0,
                rows: 0,
                indexes: vec![],
                stats: None,
                hot_region: None,
                encodings: if crate::row::encoding::is_plain(&side_enc) {
                    vec![]
                } else {
                    side_enc
                },
                side: None,
                side_of: Some(def.name.clone()),
                columns: None,
            };
            let side_heap = Arc::new(HeapFile::create(
                self.pool().clone(),
                &self.dir().join(&side_def.heap_file),
                &side_name,
                side_def.segment_pages,
                side_def.fill_factor,
            )?);
            load.set_side(side_def, side_heap)?;
        }
        if let Some(s) = old.side_table() {
            load.side_replaces(s.clone());
        }
        let summary = load.rewrite(&old, progress)?;
        let new = self.table(table)?;
        Ok(SplitReport {
            table: def.name.clone(),
            rows: summary.rows_total,
            pages_before: def.pages,
            side_pages_before: old_side.as_ref().map_or(0, |s| s.pages),
            pages_after: summary.pages_total,
            side_pages_after: new.side_table().map_or(0, |s| s.heap().num_pages()),
            side_columns: side_cols
                .iter()
                .map(|&c| schema.columns[c].name.clone())
                .collect(),
        })
    }
}
