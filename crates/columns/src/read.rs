//! Reading a columnar table's column part: only the projected columns, only
//! the row groups and pages the scan's comparisons can be true on.
//!
//! A scan opens the part ([`ColumnPart::open`]: each file's footer and page
//! index, checked against the catalog), plans its units ([`ColumnPart::plan`]:
//! a row group with the rows of its pages to read) and reads each unit's
//! batches ([`ColumnPart::read`]), on as many threads as it splits the units
//! among. Every read is counted ([`ReadCounters`]): bytes and requests.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ParquetRecordBatchReaderBuilder, RowSelection,
};
use strata_access::predicate::Comparison;
use strata_storage::catalog::ColumnsDef;
use strata_storage::row::Schema;
use strata_storage::{Database, Table};

use crate::convert::arrow_schema;
use crate::error::{ColumnsError, Result};
use crate::file::{CountedFile, ReadCounters};
use crate::prune;

/// Rows per batch a scan hands out.
pub const BATCH_ROWS: usize = 8_192;

/// One open column file.
struct OpenFile {
    path: PathBuf,
    file: CountedFile,
    meta: ArrowReaderMetadata,
}

/// A columnar table's column part, open for reading.
pub struct ColumnPart {
    files: Vec<OpenFile>,
    schema: Schema,
    arrow: SchemaRef,
    counters: Arc<ReadCounters>,
}

/// A row group to read, and which of its rows (`None`: all).
#[derive(Clone, Debug)]
pub struct Unit {
    pub file: usize,
    pub row_group: usize,
    pub selection: Option<RowSelection>,
    /// Rows the unit reads (those of its selected pages).
    pub rows: u64,
}

/// What planning kept of the part.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub units: Vec<Unit>,
    pub row_groups_total: usize,
    pub rows_total: u64,
}

impl Plan {
    /// Rows the plan reads.
    pub fn rows(&self) -> u64 {
        self.units.iter().map(|u| u.rows).sum()
    }
}

impl ColumnPart {
    /// Opens the column part of `table` of `db` (`None` for a row table).
    pub fn of(db: &Database, table: &Table) -> Result<Option<ColumnPart>> {
        match table.columns() {
            None => Ok(None),
            Some(def) => ColumnPart::open(db.dir(), def, table.schema(), db.direct_io()).map(Some),
        }
    }

    /// Opens the files of `def` (in the database at `dir`), of a table of
    /// `schema`, checking each against the catalog; with `O_DIRECT` when
    /// `direct`.
    pub fn open(dir: &Path, def: &ColumnsDef, schema: &Schema, direct: bool) -> Result<ColumnPart> {
        let counters = Arc::new(ReadCounters::default());
        let arrow = arrow_schema(schema);
        let mut files = Vec::with_capacity(def.files.len());
        for c in &def.files {
            let path = dir.join(&c.file);
            let file = CountedFile::open(dir, c, direct, counters.clone())?;
            let meta = file.metadata(&path)?;
            let rows = meta.metadata().file_metadata().num_rows();
            if rows as u64 != c.rows {
                return Err(ColumnsError::Corrupt {
                    file: path,
                    reason: format!("{rows} rows where the catalog committed {}", c.rows),
                });
            }
            let names: Vec<&str> = meta
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect();
            let want: Vec<&str> = schema.columns.iter().map(|c| c.name.as_str()).collect();
            if names != want || meta.schema().fields().len() != arrow.fields().len() {
                return Err(ColumnsError::Corrupt {
                    file: path,
                    reason: format!(
                        "columns ({}) are not the table's ({})",
                        names.join(", "),
                        want.join(", ")
                    ),
                });
            }
            files.push(OpenFile { path, file, meta });
        }
        Ok(ColumnPart {
            files,
            schema: schema.clone(),
            arrow,
            counters,
        })
    }

    /// The bytes and requests its reads took so far.
    pub fn counters(&self) -> &Arc<ReadCounters> {
        &self.counters
    }

    /// Bytes of the part's files.
    pub fn bytes(&self) -> u64 {
        self.files
            .iter()
            .map(|f| parquet::file::reader::Length::len(&f.file))
            .sum()
    }

    /// The units a scan whose rows must pass `conjuncts` reads.
    pub fn plan(&self, conjuncts: &[Comparison]) -> Plan {
        let tests = prune::tests(&self.schema, &self.arrow, conjuncts);
        let mut plan = Plan::default();
        for (f, of) in self.files.iter().enumerate() {
            let meta = of.meta.metadata();
            plan.row_groups_total += meta.num_row_groups();
            plan.rows_total += meta.file_metadata().num_rows() as u64;
            for g in prune::row_groups(meta, &self.arrow, &tests) {
                let selection = prune::pages(meta, &self.arrow, &tests, g);
                let rows = match &selection {
                    Some(s) => s.row_count() as u64,
                    None => meta.row_group(g).num_rows() as u64,
                };
                if rows > 0 {
                    plan.units.push(Unit {
                        file: f,
                        row_group: g,
                        selection,
                        rows,
                    });
                }
            }
        }
        plan
    }

    /// Reads `unit`'s rows of table columns `columns` (in table order in
    /// each batch: the reader gives a file's columns in its order), handing
    /// each batch to `f`; `f` returning false stops the read.
    pub fn read(
        &self,
        unit: &Unit,
        columns: &[usize],
        mut f: impl FnMut(RecordBatch) -> Result<bool>,
    ) -> Result<()> {
        let of = &self.files[unit.file];
        let mask = ProjectionMask::roots(of.meta.parquet_schema(), columns.iter().copied());
        let mut b =
            ParquetRecordBatchReaderBuilder::new_with_metadata(of.file.clone(), of.meta.clone())
                .with_projection(mask)
                .with_row_groups(vec![unit.row_group])
                .with_batch_size(BATCH_ROWS);
        if let Some(s) = &unit.selection {
            b = b.with_row_selection(s.clone());
        }
        let reader = b.build().map_err(|e| ColumnsError::parquet(&of.path, e))?;
        for batch in reader {
            let batch = batch.map_err(|e| ColumnsError::Corrupt {
                file: of.path.clone(),
                reason: e.to_string(),
            })?;
            if !f(batch)? {
                break;
            }
        }
        Ok(())
    }

    /// Reads every row of columns `columns`, unit after unit.
    pub fn read_all(
        &self,
        columns: &[usize],
        mut f: impl FnMut(RecordBatch) -> Result<bool>,
    ) -> Result<()> {
        let plan = self.plan(&[]);
        for u in &plan.units {
            let mut go = true;
            self.read(u, columns, |b| {
                go = f(b)?;
                Ok(go)
            })?;
            if !go {
                break;
            }
        }
        Ok(())
    }
}

/// Splits `units` into at most `parts` runs of about equal rows, in order.
pub fn split(units: &[Unit], parts: usize) -> Vec<Vec<Unit>> {
    let parts = parts.max(1).min(units.len().max(1));
    let total: u64 = units.iter().map(|u| u.rows).sum();
    let share = total.div_ceil(parts as u64).max(1);
    let mut out: Vec<Vec<Unit>> = vec![Vec::new()];
    let mut acc = 0;
    for u in units {
        if acc >= share && out.len() < parts {
            out.push(Vec::new());
            acc = 0;
        }
        acc += u.rows;
        out.last_mut().expect("one part at least").push(u.clone());
    }
    out
}
