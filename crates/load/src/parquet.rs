//! Parquet import through the arrow reader.
//!
//! Type mapping when the load creates the table (nullability from the arrow field):
//!
//! | arrow                                  | strata                   |
//! |----------------------------------------|--------------------------|
//! | Int8, Int16, Int32, UInt8, UInt16      | INT32                    |
//! | Int64, UInt32, UInt64                  | INT64 (UInt64 range-checked per value) |
//! | Float32, Float64                       | FLOAT64                  |
//! | Decimal32/64/128(p, s), p <= 18, s >= 0| DECIMAL(p,s)             |
//! | Date32                                 | DATE                     |
//! | Timestamp(unit, no time zone)          | TIMESTAMP (microseconds; a nanosecond value must be whole microseconds) |
//! | Utf8, LargeUtf8, Utf8View              | VARCHAR(n), see below    |
//! | Boolean                                | BOOL                     |
//!
//! Anything else (lists, structs, timestamps with a time zone, binary, ...) is
//! rejected up front with the column's name and type.
//!
//! Strings: strata's VARCHAR has a declared maximum, which Parquet does not record.
//! Unless [`ParquetOptions::varchar_len`] fixes it, a first pass reads only the
//! string columns and sizes each as VARCHAR(longest value in bytes, at least 1), so
//! the table is as narrow as the data allows and no value can fail to fit. The
//! extra pass reads only those columns; give `varchar_len` to skip it.
//!
//! Loading into an existing table maps columns by name (case-insensitively); each
//! arrow type must convert to its column's type: integers into any integer,
//! FLOAT64 or DECIMAL column (range-checked per value), decimals into DECIMAL
//! columns of at least their scale or FLOAT64, and strings into any column (parsed
//! like CSV text).

use std::fs::File;
use std::path::Path;
use std::time::Instant;

use ::parquet::arrow::ProjectionMask;
use ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use arrow_array::RecordBatch;
use strata_storage::db::{Database, Progress};
use strata_storage::row::{Column, DataType, Schema, Value};

use crate::arrow_rows::{BatchRows, Col, creation_type, map_fields, unsupported};
use crate::error::{LoadError, RowError, RowPosition};
use crate::import::{Import, LoadReport, LoadTarget, existing_schema, existing_table};

/// What [`load_parquet`] returns.
pub type ParquetReport = LoadReport;

/// Longest VARCHAR strata supports.
const MAX_VARCHAR: usize = 4000;

/// How to load a Parquet file.
#[derive(Clone, Debug)]
pub struct ParquetOptions {
    /// The table's creation options and indexes, and the bad rows (e.g. NULL
    /// in a NOT NULL column, a value out of range) to skip.
    pub target: LoadTarget,
    /// VARCHAR length for the string columns of a new table; `None` (default):
    /// the longest value in the file, found by a first pass over those columns.
    pub varchar_len: Option<u16>,
    /// Rows per arrow record batch (default 8192).
    pub batch_size: usize,
    /// The schema of a new table (`strata load --schema`): the file's columns
    /// are matched to it by name and each value is checked against its type
    /// and nullability. `None` (default): the table's schema comes from the
    /// file's. When the table exists it must be absent or equal to the
    /// table's schema.
    pub schema: Option<Schema>,
}

impl Default for ParquetOptions {
    fn default() -> Self {
        ParquetOptions {
            target: LoadTarget::default(),
            varchar_len: None,
            batch_size: 8192,
            schema: None,
        }
    }
}

/// Loads the Parquet file `path` into `table` (created from the file's schema when
/// it does not exist) in one atomic load. Progress: phase `load <file>` in rows
/// (preceded by `scan <file> for string lengths` when that pass runs).
pub fn load_parquet(
    db: &Database,
    table: &str,
    path: &Path,
    opts: &ParquetOptions,
    progress: &dyn Progress,
) -> Result<ParquetReport, LoadError> {
    let start = Instant::now();
    let file_name = path.display().to_string();
    let input_err = |reason: String| LoadError::Input {
        path: path.to_path_buf(),
        reason,
    };
    let open = || -> Result<ParquetRecordBatchReaderBuilder<File>, LoadError> {
        let file = File::open(path).map_err(|e| input_err(e.to_string()))?;
        guarded(|| ParquetRecordBatchReaderBuilder::try_new(file))
            .map_err(|e| input_err(e.to_string()))
    };
    let size = std::fs::metadata(path)
        .map_err(|e| input_err(e.to_string()))?
        .len();
    let builder = open()?;
    let arrow_schema = builder.schema().clone();
    let fields = arrow_schema.fields();
    let total_rows = builder.metadata().file_metadata().num_rows().max(0) as u64;

    let existing = existing_table(db, table)?;
    let new_table = existing.is_none();
    // (schema, map[c] = arrow field of table column c)
    let (schema, map) = match (&existing, &opts.schema) {
        (Some(t), given) => {
            let schema = existing_schema(t, given.as_ref())?;
            let map = map_fields(fields, &schema, &file_name, table)?;
            (schema, map)
        }
        (None, Some(given)) => {
            let map = map_fields(fields, given, &file_name, table)?;
            (given.clone(), map)
        }
        (None, None) => {
            let mut columns = Vec::with_capacity(fields.len());
            let mut strings = Vec::new();
            for (i, f) in fields.iter().enumerate() {
                let ty = match creation_type(f.data_type()) {
                    Some(Some(ty)) => ty,
                    Some(None) => {
                        strings.push(i);
                        DataType::Varchar { len: 1 }
                    }
                    None => return Err(unsupported(&file_name, i, f.name(), f.data_type())),
                };
                columns.push(Column::new(f.name().clone(), ty, f.is_nullable()));
            }
            if !strings.is_empty() {
                let lens = match opts.varchar_len {
                    Some(n) => vec![n as usize; strings.len()],
                    None => longest_strings(open()?, &strings, path, total_rows, progress)?,
                };
                for (&i, len) in strings.iter().zip(lens) {
                    if len > MAX_VARCHAR {
                        return Err(LoadError::Mismatch(format!(
                            "{file_name}: column {} ({}) has values of up to {len} bytes; strata's VARCHAR holds at most {MAX_VARCHAR}",
                            i + 1,
                            fields[i].name()
                        )));
                    }
                    columns[i].ty = DataType::Varchar {
                        len: len.max(1) as u16,
                    };
                }
            }
            let schema = Schema::new(columns)?;
            let map = (0..fields.len()).collect();
            (schema, map)
        }
    };

    let mut load = Import::begin(db, table, &schema, new_table, &opts.target, start)?;
    let mut reader = guarded(|| builder.with_batch_size(opts.batch_size.max(1)).build())
        .map_err(|e| input_err(e.to_string()))?;
    progress.phase(&format!("load {file_name}"), total_rows);
    let mut row = vec![Value::Null; schema.len()];
    let mut row_no = 0u64;
    while let Some(batch) = guarded_next(&mut reader) {
        let batch: RecordBatch =
            batch.map_err(|e| input_err(format!("after row {row_no}: {e}")))?;
        let rows = BatchRows::new(&batch, &map);
        for i in 0..batch.num_rows() {
            row_no += 1;
            // `column`: the table column at fault (position, name), reported
            // as its arrow field.
            let bad = |column: Option<(usize, String)>, reason: String| RowError {
                file: file_name.clone(),
                position: RowPosition::Row(row_no),
                column: column.map(|(c, name)| (map[c] + 1, name)),
                reason,
            };
            if let Err((c, reason)) = rows.row(i, &schema, &mut row) {
                load.reject(bad(Some((c, schema.columns[c].name.clone())), reason))?;
                continue;
            }
            load.append(&row, bad)?;
        }
        progress.advance(batch.num_rows() as u64);
    }
    load.commit(size, progress)
}

/// The Parquet reader's own calls, with its panics on damaged files turned
/// into errors (see [`strata_storage::panic_guard`]).
fn guarded<T>(f: impl FnOnce() -> ::parquet::errors::Result<T>) -> ::parquet::errors::Result<T> {
    strata_storage::panic_guard::catch(f).unwrap_or_else(|panic| {
        Err(::parquet::errors::ParquetError::General(format!(
            "the Parquet reader failed on damaged data: {panic}"
        )))
    })
}

/// The next batch of `reader`, guarded like [`guarded`].
fn guarded_next(
    reader: &mut ::parquet::arrow::arrow_reader::ParquetRecordBatchReader,
) -> Option<std::result::Result<RecordBatch, arrow_schema::ArrowError>> {
    strata_storage::panic_guard::catch(|| reader.next()).unwrap_or_else(|panic| {
        Some(Err(arrow_schema::ArrowError::ExternalError(
            format!("the Parquet reader failed on damaged data: {panic}").into(),
        )))
    })
}

/// First pass: the longest value (in bytes) of each string column in `cols`.
fn longest_strings(
    builder: ParquetRecordBatchReaderBuilder<File>,
    cols: &[usize],
    path: &Path,
    total_rows: u64,
    progress: &dyn Progress,
) -> Result<Vec<usize>, LoadError> {
    let input = |e: &dyn std::fmt::Display| LoadError::Input {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let mask = ProjectionMask::roots(builder.parquet_schema(), cols.iter().copied());
    let mut reader = guarded(|| builder.with_projection(mask).with_batch_size(8192).build())
        .map_err(|e| input(&e))?;
    progress.phase(
        &format!("scan {} for string lengths", path.display()),
        total_rows,
    );
    let mut longest = vec![0usize; cols.len()];
    while let Some(batch) = guarded_next(&mut reader) {
        let batch = batch.map_err(|e| input(&e))?;
        // The projection keeps the selected columns in file order, as `cols` is.
        for (k, a) in batch.columns().iter().enumerate() {
            let m = match Col::new(a) {
                Some(Col::Str(s)) => s.iter().flatten().map(str::len).max(),
                Some(Col::LargeStr(s)) => s.iter().flatten().map(str::len).max(),
                Some(Col::View(s)) => s.iter().flatten().map(str::len).max(),
                _ => None,
            };
            longest[k] = longest[k].max(m.unwrap_or(0));
        }
        progress.advance(batch.num_rows() as u64);
    }
    Ok(longest)
}
