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
//! | Utf8, LargeUtf8, Utf8View              | VARCHAR(n), see below    |
//! | Boolean                                | BOOL                     |
//!
//! Anything else (lists, structs, timestamps, binary, ...) is rejected up front with
//! the column's name and type.
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
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal32Type, Decimal64Type, Decimal128Type, Float32Type, Float64Type, Int8Type,
    Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType as Arrow;
use strata_storage::StorageError;
use strata_storage::db::{Database, IndexSpec, Progress, TableOptions};
use strata_storage::types::{Column, DataType, Schema, Value};

use crate::{
    ErrorBudget, LoadError, LoadReport, RowError, RowPosition, begin_load, classify_append_error,
};

/// What [`load_parquet`] returns.
pub type ParquetReport = LoadReport;

/// Longest VARCHAR strata supports.
const MAX_VARCHAR: usize = 4000;

/// How to load a Parquet file.
#[derive(Clone, Debug)]
pub struct ParquetOptions {
    /// Heap options of a table the load creates.
    pub create: TableOptions,
    /// Indexes to build at commit (for an existing table: those it lacks).
    pub indexes: Vec<IndexSpec>,
    /// VARCHAR length for the string columns of a new table; `None` (default):
    /// the longest value in the file, found by a first pass over those columns.
    pub varchar_len: Option<u16>,
    /// Bad rows (e.g. NULL in a NOT NULL column, value out of range) to skip
    /// before the load is rolled back (default 0).
    pub max_errors: u64,
    /// Rows per arrow record batch (default 8192).
    pub batch_size: usize,
}

impl Default for ParquetOptions {
    fn default() -> Self {
        ParquetOptions {
            create: TableOptions::default(),
            indexes: Vec::new(),
            varchar_len: None,
            max_errors: 0,
            batch_size: 8192,
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
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| input_err(e.to_string()))
    };
    let size = std::fs::metadata(path)
        .map_err(|e| input_err(e.to_string()))?
        .len();
    let builder = open()?;
    let arrow_schema = builder.schema().clone();
    let fields = arrow_schema.fields();
    let total_rows = builder.metadata().file_metadata().num_rows().max(0) as u64;

    let existing = match db.table(table) {
        Ok(t) => Some(t),
        Err(StorageError::UnknownTable(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let new_table = existing.is_none();
    // (schema, map[c] = arrow field of table column c)
    let (schema, map) = match &existing {
        Some(t) => {
            let schema = t.schema().clone();
            let map = map_fields(fields, &schema, &file_name, table)?;
            (schema, map)
        }
        None => {
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

    let mut load = begin_load(db, table, &schema, new_table, &opts.create, &opts.indexes)?;
    let reader = builder
        .with_batch_size(opts.batch_size.max(1))
        .build()
        .map_err(|e| input_err(e.to_string()))?;
    progress.phase(&format!("load {file_name}"), total_rows);
    let mut row = vec![Value::Null; schema.len()];
    let mut budget = ErrorBudget::new(opts.max_errors);
    let mut loaded = 0u64;
    let mut row_no = 0u64;
    for batch in reader {
        let batch: RecordBatch =
            batch.map_err(|e| input_err(format!("after row {row_no}: {e}")))?;
        let cols: Vec<Col<'_>> = map
            .iter()
            .map(|&f| Col::new(batch.column(f)).expect("types were checked against the schema"))
            .collect();
        for i in 0..batch.num_rows() {
            row_no += 1;
            let bad = |c: usize, reason: String| RowError {
                file: file_name.clone(),
                position: RowPosition::Row(row_no),
                column: Some((map[c] + 1, schema.columns[c].name.clone())),
                reason,
            };
            let mut failed = None;
            for (c, (col, def)) in cols.iter().zip(&schema.columns).enumerate() {
                match col.value(i, &def.ty, &mut row[c]) {
                    Ok(()) if row[c].is_null() && !def.nullable => {
                        failed = Some(bad(c, "NULL in a NOT NULL column".into()));
                        break;
                    }
                    Ok(()) => {}
                    Err(reason) => {
                        failed = Some(bad(c, reason));
                        break;
                    }
                }
            }
            if let Some(e) = failed {
                budget.reject(e, table, new_table)?;
                continue;
            }
            match load.append(&row) {
                Ok(_) => loaded += 1,
                Err(e) => {
                    let (column, reason) = classify_append_error(e)?;
                    let e = RowError {
                        file: file_name.clone(),
                        position: RowPosition::Row(row_no),
                        column: column
                            .and_then(|name| Some((map[schema.index_of(&name)?] + 1, name))),
                        reason,
                    };
                    budget.reject(e, table, new_table)?;
                }
            }
        }
        progress.advance(batch.num_rows() as u64);
    }

    let summary = load.commit(progress)?;
    Ok(LoadReport {
        table: table.to_string(),
        created: new_table,
        rows_loaded: loaded,
        skipped: budget.skipped,
        bytes: size,
        elapsed: start.elapsed(),
        summary,
    })
}

/// The strata type a new table gives an arrow type: `Some(Some(t))`, `Some(None)`
/// for strings (sized later), `None` when unsupported.
fn creation_type(t: &Arrow) -> Option<Option<DataType>> {
    Some(Some(match t {
        Arrow::Int8 | Arrow::Int16 | Arrow::Int32 | Arrow::UInt8 | Arrow::UInt16 => DataType::Int32,
        Arrow::Int64 | Arrow::UInt32 | Arrow::UInt64 => DataType::Int64,
        Arrow::Float32 | Arrow::Float64 => DataType::Float64,
        Arrow::Decimal32(p, s) | Arrow::Decimal64(p, s) | Arrow::Decimal128(p, s)
            if (1..=18).contains(p) && *s >= 0 && *s as u8 <= *p =>
        {
            DataType::Decimal {
                precision: *p,
                scale: *s as u8,
            }
        }
        Arrow::Date32 => DataType::Date,
        Arrow::Boolean => DataType::Bool,
        Arrow::Utf8 | Arrow::LargeUtf8 | Arrow::Utf8View => return Some(None),
        _ => return None,
    }))
}

fn unsupported(file: &str, i: usize, name: &str, t: &Arrow) -> LoadError {
    let why = match t {
        Arrow::Decimal32(..)
        | Arrow::Decimal64(..)
        | Arrow::Decimal128(..)
        | Arrow::Decimal256(..) => {
            " (strata's DECIMAL holds at most 18 digits and a scale of 0..=precision)"
        }
        _ => "",
    };
    LoadError::Mismatch(format!(
        "{file}: column {} ({name}) has type {t}, which strata does not support{why}; supported: integers, \
         Float32/64, Decimal(p<=18,s), Date32, Utf8, Boolean",
        i + 1
    ))
}

/// Whether values of arrow type `from` can be stored in a `to` column.
fn convertible(from: &Arrow, to: &DataType) -> bool {
    use DataType as S;
    match from {
        Arrow::Int8
        | Arrow::Int16
        | Arrow::Int32
        | Arrow::Int64
        | Arrow::UInt8
        | Arrow::UInt16
        | Arrow::UInt32
        | Arrow::UInt64 => matches!(to, S::Int32 | S::Int64 | S::Float64 | S::Decimal { .. }),
        Arrow::Float32 | Arrow::Float64 => matches!(to, S::Float64),
        Arrow::Decimal32(_, s) | Arrow::Decimal64(_, s) | Arrow::Decimal128(_, s) => match to {
            S::Decimal { scale, .. } => *s >= 0 && *scale as i8 >= *s,
            S::Float64 => true,
            _ => false,
        },
        Arrow::Date32 => matches!(to, S::Date),
        Arrow::Boolean => matches!(to, S::Bool),
        Arrow::Utf8 | Arrow::LargeUtf8 | Arrow::Utf8View => true,
        _ => false,
    }
}

/// Maps the file's fields to an existing table's columns by name.
fn map_fields(
    fields: &arrow_schema::Fields,
    schema: &Schema,
    file: &str,
    table: &str,
) -> Result<Vec<usize>, LoadError> {
    let unknown: Vec<String> = fields
        .iter()
        .filter(|f| schema.index_of(f.name()).is_none())
        .map(|f| format!("'{}'", f.name()))
        .collect();
    if !unknown.is_empty() {
        return Err(LoadError::Mismatch(format!(
            "{file}: unknown column{} {} for table '{table}' (it has {})",
            if unknown.len() > 1 { "s" } else { "" },
            unknown.join(", "),
            schema
                .columns
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut map = Vec::with_capacity(schema.len());
    for c in &schema.columns {
        let mut found = fields
            .iter()
            .enumerate()
            .filter(|(_, f)| f.name().eq_ignore_ascii_case(&c.name));
        let Some((i, f)) = found.next() else {
            return Err(LoadError::Mismatch(format!(
                "{file}: has no column '{}' of table '{table}' (every column must be present)",
                c.name
            )));
        };
        if found.next().is_some() {
            return Err(LoadError::Mismatch(format!(
                "{file}: has more than one column named '{}'",
                c.name
            )));
        }
        if !convertible(f.data_type(), &c.ty) {
            return Err(LoadError::Mismatch(format!(
                "{file}: column {} ({}) has type {}, which cannot be loaded into {} column '{}' of table '{table}'",
                i + 1,
                f.name(),
                f.data_type(),
                c.ty,
                c.name
            )));
        }
        map.push(i);
    }
    Ok(map)
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
    let reader = builder
        .with_projection(mask)
        .with_batch_size(8192)
        .build()
        .map_err(|e| input(&e))?;
    progress.phase(
        &format!("scan {} for string lengths", path.display()),
        total_rows,
    );
    let mut longest = vec![0usize; cols.len()];
    for batch in reader {
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

/// A typed view of one arrow column of a batch (downcast once per batch, not per value).
enum Col<'a> {
    /// Any integer type, read as i128 so every one converts exactly.
    Int(&'a ArrayRef, fn(&ArrayRef, usize) -> i128),
    Float(&'a ArrayRef, fn(&ArrayRef, usize) -> f64),
    Decimal(&'a ArrayRef, fn(&ArrayRef, usize) -> i128, i8),
    Date(&'a arrow_array::Date32Array),
    Str(&'a arrow_array::StringArray),
    LargeStr(&'a arrow_array::LargeStringArray),
    View(&'a arrow_array::StringViewArray),
    Bool(&'a arrow_array::BooleanArray),
}

impl<'a> Col<'a> {
    fn new(a: &'a ArrayRef) -> Option<Col<'a>> {
        macro_rules! int {
            ($t:ty) => {
                Col::Int(a, |a, i| a.as_primitive::<$t>().value(i) as i128)
            };
        }
        Some(match a.data_type() {
            Arrow::Int8 => int!(Int8Type),
            Arrow::Int16 => int!(Int16Type),
            Arrow::Int32 => int!(Int32Type),
            Arrow::Int64 => int!(Int64Type),
            Arrow::UInt8 => int!(UInt8Type),
            Arrow::UInt16 => int!(UInt16Type),
            Arrow::UInt32 => int!(UInt32Type),
            Arrow::UInt64 => int!(UInt64Type),
            Arrow::Float32 => Col::Float(a, |a, i| a.as_primitive::<Float32Type>().value(i) as f64),
            Arrow::Float64 => Col::Float(a, |a, i| a.as_primitive::<Float64Type>().value(i)),
            Arrow::Decimal32(_, s) => Col::Decimal(
                a,
                |a, i| a.as_primitive::<Decimal32Type>().value(i) as i128,
                *s,
            ),
            Arrow::Decimal64(_, s) => Col::Decimal(
                a,
                |a, i| a.as_primitive::<Decimal64Type>().value(i) as i128,
                *s,
            ),
            Arrow::Decimal128(_, s) => {
                Col::Decimal(a, |a, i| a.as_primitive::<Decimal128Type>().value(i), *s)
            }
            Arrow::Date32 => Col::Date(a.as_primitive::<Date32Type>()),
            Arrow::Utf8 => Col::Str(a.as_string::<i32>()),
            Arrow::LargeUtf8 => Col::LargeStr(a.as_string::<i64>()),
            Arrow::Utf8View => Col::View(a.as_string_view()),
            Arrow::Boolean => Col::Bool(a.as_boolean()),
            _ => return None,
        })
    }

    fn array(&self) -> &dyn Array {
        match self {
            Col::Int(a, _) | Col::Float(a, _) | Col::Decimal(a, _, _) => a.as_ref(),
            Col::Date(a) => *a,
            Col::Str(a) => *a,
            Col::LargeStr(a) => *a,
            Col::View(a) => *a,
            Col::Bool(a) => *a,
        }
    }

    /// Stores value `i` converted to `ty` in `out` (NULL when the arrow value is);
    /// the error is a short reason.
    fn value(&self, i: usize, ty: &DataType, out: &mut Value) -> Result<(), String> {
        if self.array().is_null(i) {
            *out = Value::Null;
            return Ok(());
        }
        *out = match self {
            Col::Int(a, get) => int_value(get(a, i), 0, ty)?,
            Col::Decimal(a, get, scale) => {
                let v = get(a, i);
                match ty {
                    DataType::Float64 => Value::Float64(v as f64 / 10f64.powi(*scale as i32)),
                    _ => int_value(v, *scale as u8, ty)?,
                }
            }
            Col::Float(a, get) => Value::Float64(get(a, i)),
            Col::Date(a) => Value::Date(a.value(i)),
            Col::Bool(a) => Value::Bool(a.value(i)),
            Col::Str(a) => ty.parse_value(a.value(i))?,
            Col::LargeStr(a) => ty.parse_value(a.value(i))?,
            Col::View(a) => ty.parse_value(a.value(i))?,
        };
        Ok(())
    }
}

/// Converts an integer (a decimal scaled by `scale`) to an integer-like column type.
fn int_value(v: i128, scale: u8, ty: &DataType) -> Result<Value, String> {
    let range = || {
        let shown = if scale == 0 {
            v.to_string()
        } else {
            let p = 10u128.pow(scale as u32);
            let sign = if v < 0 { "-" } else { "" };
            format!(
                "{sign}{}.{:0w$}",
                v.unsigned_abs() / p,
                v.unsigned_abs() % p,
                w = scale as usize
            )
        };
        format!("{shown} is out of range for {ty}")
    };
    Ok(match ty {
        DataType::Int32 => Value::Int32(i32::try_from(v).map_err(|_| range())?),
        DataType::Int64 => Value::Int64(i64::try_from(v).map_err(|_| range())?),
        DataType::Float64 => Value::Float64(v as f64),
        DataType::Decimal {
            precision,
            scale: to,
        } => {
            let scaled = v
                .checked_mul(10i128.pow((*to - scale) as u32))
                .ok_or_else(range)?;
            if scaled.unsigned_abs() >= 10u128.pow(*precision as u32) {
                return Err(range());
            }
            Value::Decimal(scaled as i64)
        }
        _ => unreachable!("checked by convertible()"),
    })
}
