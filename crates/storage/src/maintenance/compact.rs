//! `strata compact TABLE`: types as hints (No Bits Left Behind §4.1) acted on.
//!
//! One pass reads every value and chooses each column's narrowest encoding
//! ([`crate::row::encoding::choose`]); a second rewrites the rows, in heap order,
//! into a new heap in those encodings, and every index is rebuilt over it. The
//! switch is a load's: new files synced, then the catalog swapped, then the old
//! files removed. A crash before the swap leaves the table as it was (the new
//! files are orphans, removed at the next open); after it, the compacted one.
//!
//! Tuple ids change, so the access counts start over and hot partitions go
//! (the next `strata cluster --hot` makes them again), as after a load.
//!
//! With [`CompactOptions::semantic_id`] (`strata compact T --semantic-id COL`)
//! one BIGINT column becomes a semantic id (No Bits Left Behind §4.2,
//! [`Encoding::Address`]): not stored, its value the tuple's address in the
//! rewritten heap. Its old values are dropped, so it is never chosen from the
//! data, only asked for; later compactions keep it.

use std::sync::Arc;

use serde::Serialize;

use crate::db::{Database, TableLoad};
use crate::error::{Result, StorageError};
use crate::heap::HeapFile;
use crate::progress::Progress;
use crate::row::encoding::{ChooseOptions, ColumnSample, Encoding, choose, is_plain};

/// What `strata compact` may do.
#[derive(Clone, Debug, Default)]
pub struct CompactOptions {
    /// Store every column as declared (undo a compaction).
    pub plain: bool,
    /// Leave low-cardinality text out of dictionaries.
    pub no_dictionary: bool,
    /// Make this BIGINT column a semantic id (No Bits Left Behind §4.2): no
    /// longer stored, its value from now on the tuple's address
    /// ([`Encoding::Address`]). Its present values are dropped: only for a
    /// surrogate key whose values only need to be unique. No index may
    /// cover it (a lookup by it reads the tuple directly).
    pub semantic_id: Option<String>,
}

/// One column before and after.
#[derive(Clone, Debug, Serialize)]
pub struct ColumnChange {
    pub column: String,
    pub declared: String,
    pub before: Encoding,
    pub after: Encoding,
}

/// What a compaction did.
#[derive(Clone, Debug, Serialize)]
pub struct CompactReport {
    pub table: String,
    pub rows: u64,
    pub pages_before: u64,
    pub pages_after: u64,
    pub columns: Vec<ColumnChange>,
}

impl Database {
    /// Rewrites `table` with each column in the narrowest encoding its values
    /// allow (or, with `opts.plain`, as declared); see the module docs.
    pub fn compact(
        &self,
        table: &str,
        opts: &CompactOptions,
        progress: &dyn Progress,
    ) -> Result<CompactReport> {
        self.writable()?;
        let writer = self.writer_lock();
        self.checkpoint_locked()?;
        let old = self.movable_table(table)?;
        let def = self.catalog().table(old.name())?.clone();
        let schema = def.schema.clone();
        // Semantic ids: the one asked for, and those the table has (kept,
        // unless every column goes back to plain).
        let mut addresses: Vec<usize> = (0..schema.len())
            .filter(|&i| def.encodings.get(i) == Some(&Encoding::Address) && !opts.plain)
            .collect();
        if let Some(name) = &opts.semantic_id {
            let c = schema
                .index_of(name)
                .ok_or_else(|| StorageError::UnknownColumn {
                    table: def.name.clone(),
                    column: name.clone(),
                })?;
            if old.side_columns().contains(&c) {
                return Err(StorageError::Schema(format!(
                    "column {} is in the side table (strata split); a semantic id is the table's own tuple address",
                    schema.columns[c].name
                )));
            }
            Encoding::Address
                .check(&schema.columns[c].ty)
                .map_err(|reason| StorageError::Value {
                    column: schema.columns[c].name.clone(),
                    reason,
                })?;
            if let Some(ix) = def.indexes.iter().find(|ix| {
                ix.columns
                    .iter()
                    .any(|k| k.eq_ignore_ascii_case(&schema.columns[c].name))
            }) {
                return Err(StorageError::Index {
                    index: ix.name.clone(),
                    reason: format!(
                        "it covers {}, which is to become a semantic id (the tuple's address): a lookup by it reads its tuple directly; drop the index first",
                        schema.columns[c].name
                    ),
                });
            }
            if !addresses.contains(&c) {
                addresses.push(c);
            }
        }

        progress.phase(&format!("read {}", def.name), def.rows);
        let mut samples: Vec<ColumnSample> = schema
            .columns
            .iter()
            .map(|c| ColumnSample::new(c.ty))
            .collect();
        old.scan_rows(|_, row| {
            for (s, v) in samples.iter_mut().zip(&row) {
                s.add(v);
            }
            Ok(())
        })?;
        progress.advance(def.rows);
        let mut encodings = if opts.plain {
            vec![]
        } else {
            choose(
                &schema,
                &samples,
                &ChooseOptions {
                    dictionary: !opts.no_dictionary,
                },
            )
        };
        if !addresses.is_empty() {
            encodings.resize(schema.len(), Encoding::Plain);
            for &c in &addresses {
                encodings[c] = Encoding::Address;
            }
        }
        // A split table's side columns (`split.rs`) stay in its side table,
        // in the encodings chosen for them there.
        let side_cols = old.side_columns().to_vec();
        let enc_of = |v: &[Encoding], i: usize| v.get(i).cloned().unwrap_or(Encoding::Plain);
        let side_enc: Vec<Encoding> = side_cols.iter().map(|&c| enc_of(&encodings, c)).collect();
        let old_side_enc: Vec<Encoding> = match old.side_table() {
            Some(s) => (0..side_cols.len())
                .map(|j| enc_of(s.encodings(), j))
                .collect(),
            None => vec![],
        };
        if !side_cols.is_empty() {
            encodings.resize(schema.len(), Encoding::Plain);
            for &c in &side_cols {
                encodings[c] = Encoding::Side;
            }
        }
        if is_plain(&encodings) {
            encodings.clear();
        }
        let in_side = |c: usize| side_cols.iter().position(|&s| s == c);
        let columns = schema
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| ColumnChange {
                column: c.name.clone(),
                declared: c.ty.to_string(),
                before: match in_side(i) {
                    Some(j) => old_side_enc[j].clone(),
                    None => enc_of(&def.encodings, i),
                },
                after: match in_side(i) {
                    Some(j) => side_enc[j].clone(),
                    None => enc_of(&encodings, i),
                },
            })
            .collect();

        let mut next = def.clone();
        next.heap_file = self.new_file_name(&format!("{}.heap", def.name));
        next.pages = 0;
        next.rows = 0;
        next.hot_region = None;
        next.encodings = encodings;
        for i in &mut next.indexes {
            i.hot = None;
        }
        let mut load = TableLoad::replacing(self, writer, next, old.clone())?;
        if let Some(s) = old.side_table() {
            let mut side_def = self.catalog().table(s.name())?.clone();
            side_def.heap_file = self.new_file_name(&format!("{}.heap", side_def.name));
            side_def.pages = 0;
            side_def.rows = 0;
            side_def.encodings = if is_plain(&side_enc) {
                vec![]
            } else {
                side_enc
            };
            let side_heap = Arc::new(HeapFile::create(
                self.pool().clone(),
                &self.dir().join(&side_def.heap_file),
                &side_def.name,
                side_def.segment_pages,
                side_def.fill_factor,
            )?);
            load.set_side(side_def, side_heap)?;
            load.side_replaces(s.clone());
        }
        let summary = load.rewrite(&old, progress)?;
        Ok(CompactReport {
            table: def.name.clone(),
            rows: summary.rows_total,
            pages_before: def.pages,
            pages_after: summary.pages_total,
            columns,
        })
    }
}
