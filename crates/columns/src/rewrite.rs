//! Converting a table between the row heap and columns, and merging a
//! columnar table's delta into its column files.
//!
//! To columns: every row (the column part's, then the heap's, in that order)
//! is written into one new column file; the file and its directory are
//! fsynced, then one catalog swap names the file and a new, empty heap (the
//! delta) and drops the old heap and old files. A crash before the swap
//! leaves the table as it was (the new file is an orphan the next open
//! removes); after it, the new table. To rows: every row goes into a new
//! heap, committed the same way. Tuple ids of a converted table are new, as
//! after any rewrite.

use std::sync::Arc;

use strata_access::{PathChoice, Predicate, ScanSpec, SortOptions, TupleBatch, open_path};
use strata_storage::catalog::ColumnsDef;
use strata_storage::db::keysort::SortedEntries;
use strata_storage::row::Tid;
use strata_storage::{Database, Progress, Table};

use crate::convert::{BatchConverter, arrow_schema, arrow_values};
use crate::error::{ColumnsError, Result};
use crate::file::FileWriter;
use crate::index::KeyEncoder;
use crate::read::ColumnPart;

/// A table's storage format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Rows in slotted heap pages: every paper's access paths, indexes, and
    /// many small writes in place.
    Rows,
    /// Column row groups in Parquet files, plus a row delta.
    Columns,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Format, String> {
        match s.to_ascii_lowercase().as_str() {
            "rows" | "row" | "heap" => Ok(Format::Rows),
            "columns" | "column" | "columnar" => Ok(Format::Columns),
            _ => Err(format!("format '{s}': expected 'rows' or 'columns'")),
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Format::Rows => "rows",
            Format::Columns => "columns",
        })
    }
}

/// What a rewrite did.
#[derive(Clone, Debug)]
pub struct RewriteReport {
    pub table: String,
    pub format: Format,
    pub rows: u64,
    /// Heap pages and column-file bytes before and after.
    pub heap_pages_before: u64,
    pub column_bytes_before: u64,
    pub heap_pages_after: u64,
    pub column_bytes_after: u64,
}

/// Rewrites table `name` in `format`: converts it, or, for a columnar table
/// asked for columns again, merges its delta into a new column file.
pub fn rewrite(
    db: &Database,
    name: &str,
    format: Format,
    progress: &dyn Progress,
) -> Result<RewriteReport> {
    let (mut load, old) = db.begin_rewrite(name, format == Format::Columns)?;
    let total = old.live_rows();
    let bytes_before = old
        .columns()
        .map_or(0, |c| c.files.iter().map(|f| f.bytes).sum());
    let pages_before = old.heap().num_pages();
    let part = ColumnPart::of(db, &old)?;
    let all: Vec<usize> = (0..old.schema().len()).collect();
    progress.phase(&format!("rewrite {name} as {format}"), total);
    let mut report = RewriteReport {
        table: name.to_string(),
        format,
        rows: total,
        heap_pages_before: pages_before,
        column_bytes_before: bytes_before,
        heap_pages_after: 0,
        column_bytes_after: 0,
    };
    match format {
        Format::Columns => {
            let file = format!("{}.parquet", db.new_column_file_name(name));
            let mut w = FileWriter::create(db.dir(), file, arrow_schema(old.schema()))?;
            // Each index's entries for its tree over the new part: the rows'
            // keys with their positions in the new file.
            let mut keys: Vec<(String, KeyEncoder, SortedEntries)> = old
                .indexes()
                .iter()
                .map(|i| {
                    let enc = KeyEncoder::of_schema(old.schema(), name, &i.key_cols, &all);
                    (i.def.name.clone(), enc, SortedEntries::new())
                })
                .collect();
            let mut position = 0u64;
            let mut write = |b: &arrow::record_batch::RecordBatch| -> Result<()> {
                w.write(b)?;
                for (_, enc, entries) in &mut keys {
                    enc.each(b, |r, key| {
                        entries.push(key, Tid::of_position(position + r as u64))
                    })?;
                }
                position += b.num_rows() as u64;
                progress.advance(b.num_rows() as u64);
                Ok(())
            };
            if let Some(p) = &part {
                p.read_all(&all, |b| write(&b).map(|()| true))?;
            }
            heap_batches(&old, |b| write(&b))?;
            let written = w.finish()?;
            for (index, _, mut entries) in keys {
                entries.sort();
                load.set_column_entries(&index, entries);
            }
            report.column_bytes_after = written.bytes;
            let files = if written.rows > 0 {
                vec![written]
            } else {
                vec![]
            };
            load.set_columns(Some(ColumnsDef {
                files,
                ..Default::default()
            }));
        }
        Format::Rows => {
            let types = old.schema().types();
            let mut append = |b: arrow::record_batch::RecordBatch| -> Result<()> {
                let cols: Vec<Vec<strata_storage::row::Value>> = b
                    .columns()
                    .iter()
                    .zip(&types)
                    .map(|(a, t)| {
                        arrow_values(a.as_ref(), t).map_err(|reason| ColumnsError::Convert {
                            table: name.to_string(),
                            reason,
                        })
                    })
                    .collect::<Result<_>>()?;
                let mut row = Vec::with_capacity(cols.len());
                for i in 0..b.num_rows() {
                    row.clear();
                    row.extend(cols.iter().map(|c| c[i].clone()));
                    load.append(&row)?;
                }
                progress.advance(b.num_rows() as u64);
                Ok(())
            };
            if let Some(p) = &part {
                p.read_all(&all, |b| append(b).map(|()| true))?;
            }
            heap_batches(&old, &mut append)?;
            load.set_columns(None);
        }
    }
    let summary = load.commit(progress)?;
    report.heap_pages_after = summary.pages_total;
    Ok(report)
}

/// Every row of `table`'s heap, all columns, as Arrow batches (a full scan).
fn heap_batches(
    table: &Arc<Table>,
    mut f: impl FnMut(arrow::record_batch::RecordBatch) -> Result<()>,
) -> Result<()> {
    if table.rows() == 0 {
        return Ok(());
    }
    let all: Vec<usize> = (0..table.schema().len()).collect();
    let conv = BatchConverter::new(table, all, arrow_schema(table.schema()));
    let spec = ScanSpec::new(table.clone(), Predicate::all());
    let mut path = open_path(spec, &PathChoice::Full, &SortOptions::default())?;
    let mut batch = TupleBatch::new();
    while path.next_batch(&mut batch)? {
        let b = conv.convert(&batch).map_err(|e| ColumnsError::Convert {
            table: table.name().to_string(),
            reason: e.to_string(),
        })?;
        f(b)?;
    }
    Ok(())
}
