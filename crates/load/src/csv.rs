//! Typed CSV import.
//!
//! Every field is parsed with the column's [`DataType::parse_value`], so a value
//! that does not fit its column is reported with the file, the physical line the
//! record starts on, the field's number and the column's name. Types are never
//! guessed: a table that does not exist yet needs an explicit schema.
//!
//! NULLs: a field equal to [`CsvOptions::null_string`] (by default the empty field)
//! is NULL. In a NOT NULL column that is an error rather than an empty string, so a
//! missing value never slips in as `''`; to load empty strings into a NOT NULL text
//! column, choose another null string (e.g. `\N`).

use std::fs::File;
use std::path::Path;
use std::time::Instant;

use ::csv::{ByteRecord, ReaderBuilder};
use strata_storage::db::{Database, Progress};
use strata_storage::row::{Schema, Value};

use crate::error::{LoadError, RowError, RowPosition};
use crate::import::{Import, LoadReport, LoadTarget, existing_schema, existing_table};

/// What [`load_csv`] returns.
pub type CsvReport = LoadReport;

/// How to read a CSV file and where its rows go.
#[derive(Clone, Debug)]
pub struct CsvOptions {
    /// The first record is a header naming the columns (default true). Columns are
    /// then matched to the table by name (case-insensitively) and may come in any
    /// order; without a header they are matched by position.
    pub header: bool,
    /// Field separator (default `,`).
    pub delimiter: u8,
    /// Schema of the table to create when it does not exist. Required in that case;
    /// when the table exists it must be absent or equal to the table's schema.
    pub schema: Option<Schema>,
    /// The table's creation options and indexes, and the bad rows to skip.
    pub target: LoadTarget,
    /// The text that stands for NULL (default: the empty field).
    pub null_string: String,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            header: true,
            delimiter: b',',
            schema: None,
            target: LoadTarget::default(),
            null_string: String::new(),
        }
    }
}

/// Records between progress reports: often enough for a smooth bar, rarely enough
/// that a progress callback taking a lock costs nothing measurable.
const PROGRESS_EVERY: u64 = 4096;

/// Loads the CSV file `path` into `table` (creating it from `opts.schema` when it
/// does not exist) in one atomic [`TableLoad`](strata_storage::db::TableLoad). Reports progress as phase
/// `load <file>` in bytes of the file, then the commit's own phases.
pub fn load_csv(
    db: &Database,
    table: &str,
    path: &Path,
    opts: &CsvOptions,
    progress: &dyn Progress,
) -> Result<CsvReport, LoadError> {
    let start = Instant::now();
    let file_name = path.display().to_string();
    let input_err = |reason: String| LoadError::Input {
        path: path.to_path_buf(),
        reason,
    };
    let file = File::open(path).map_err(|e| input_err(e.to_string()))?;
    let size = file.metadata().map_err(|e| input_err(e.to_string()))?.len();
    let mut reader = ReaderBuilder::new()
        .has_headers(false)
        .delimiter(opts.delimiter)
        // Field counts are checked here, so the error can say what was expected.
        .flexible(true)
        .buffer_capacity(1 << 20)
        .from_reader(file);
    let mut rec = ByteRecord::new();
    let read_err = |e: ::csv::Error| {
        let line = e
            .position()
            .map(|p| format!("line {}: ", p.line()))
            .unwrap_or_default();
        input_err(format!("{line}{e}"))
    };

    let header = if opts.header {
        if !reader.read_byte_record(&mut rec).map_err(read_err)? {
            return Err(input_err(
                "the file is empty, but a header row was expected".into(),
            ));
        }
        let mut names = Vec::with_capacity(rec.len());
        for (i, f) in rec.iter().enumerate() {
            let name = std::str::from_utf8(f).map_err(|_| {
                input_err(format!("line 1: header field {} is not valid UTF-8", i + 1))
            })?;
            names.push(name.trim().to_string());
        }
        Some(names)
    } else {
        None
    };

    // The target table: existing, or created from the given schema.
    let existing = existing_table(db, table)?;
    let schema = match (&existing, &opts.schema) {
        (Some(t), given) => existing_schema(t, given.as_ref())?,
        (None, Some(s)) => s.clone(),
        (None, None) => {
            let hint = match &header {
                Some(names) => format!(
                    "; the header names the columns ({}) but types are not guessed",
                    names.join(", ")
                ),
                None => String::new(),
            };
            return Err(LoadError::Mismatch(format!(
                "table '{table}' does not exist: give its schema to create it, e.g. \"a INT, b DECIMAL(12,2) NULL, c VARCHAR(40)\"{hint}"
            )));
        }
    };

    // map[c] = the field holding table column c; `expected` fields per record.
    let (map, expected) = match &header {
        Some(names) => (map_header(names, &schema, &file_name, table)?, names.len()),
        None => ((0..schema.len()).collect(), schema.len()),
    };

    let new_table = existing.is_none();
    let mut load = Import::begin(db, table, &schema, new_table, &opts.target, start)?;

    progress.phase(&format!("load {file_name}"), size);
    let mut reported = reader.position().byte();
    progress.advance(reported);
    let null = opts.null_string.as_bytes();
    let mut row = vec![Value::Null; schema.len()];
    let mut records = 0u64;
    while reader.read_byte_record(&mut rec).map_err(read_err)? {
        records += 1;
        if records.is_multiple_of(PROGRESS_EVERY) {
            let b = reader.position().byte();
            progress.advance(b - reported);
            reported = b;
        }
        let line = rec.position().map_or(0, |p| p.line());
        // `column`: the table column at fault (position, name), reported as
        // its field.
        let bad = |column: Option<(usize, String)>, reason: String| RowError {
            file: file_name.clone(),
            position: RowPosition::Line(line),
            column: column.map(|(c, name)| (map[c] + 1, name)),
            reason,
        };
        if rec.len() != expected {
            let e = bad(
                None,
                format!("expected {expected} fields, found {}", rec.len()),
            );
            load.reject(e)?;
            continue;
        }
        if let Err((c, reason)) = fill_row(&rec, &schema, &map, null, &mut row) {
            load.reject(bad(Some((c, schema.columns[c].name.clone())), reason))?;
            continue;
        }
        load.append(&row, bad)?;
    }
    progress.advance(size.saturating_sub(reported));
    load.commit(size, progress)
}

/// Maps header names to table columns: every column must be named exactly once
/// and no name may be unknown.
fn map_header(
    names: &[String],
    schema: &Schema,
    file: &str,
    table: &str,
) -> Result<Vec<usize>, LoadError> {
    let mut map = vec![usize::MAX; schema.len()];
    let mut unknown = Vec::new();
    for (f, name) in names.iter().enumerate() {
        match schema.index_of(name) {
            Some(c) if map[c] != usize::MAX => {
                return Err(LoadError::Mismatch(format!(
                    "{file}:1: header names column '{name}' twice (fields {} and {})",
                    map[c] + 1,
                    f + 1
                )));
            }
            Some(c) => map[c] = f,
            None => unknown.push(format!("'{name}'")),
        }
    }
    let columns = || schema.names();
    if !unknown.is_empty() {
        return Err(LoadError::Mismatch(format!(
            "{file}:1: header names unknown column{} {} (table '{table}' has {})",
            if unknown.len() > 1 { "s" } else { "" },
            unknown.join(", "),
            columns()
        )));
    }
    let missing: Vec<String> = schema
        .columns
        .iter()
        .zip(&map)
        .filter(|(_, f)| **f == usize::MAX)
        .map(|(c, _)| format!("'{}'", c.name))
        .collect();
    if !missing.is_empty() {
        return Err(LoadError::Mismatch(format!(
            "{file}:1: header lacks column{} {} of table '{table}' (every column must be present)",
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", ")
        )));
    }
    Ok(map)
}

/// Parses the fields of `rec` into `row`; on failure, the table column at fault
/// and the reason.
fn fill_row(
    rec: &ByteRecord,
    schema: &Schema,
    map: &[usize],
    null: &[u8],
    row: &mut [Value],
) -> Result<(), (usize, String)> {
    for (c, col) in schema.columns.iter().enumerate() {
        let raw = &rec[map[c]];
        row[c] = if raw == null {
            if !col.nullable {
                let what = if null.is_empty() {
                    "empty field".to_string()
                } else {
                    format!("'{}' (the NULL string)", String::from_utf8_lossy(null))
                };
                return Err((c, format!("{what} in a NOT NULL column")));
            }
            Value::Null
        } else {
            let text = std::str::from_utf8(raw).map_err(|e| {
                (
                    c,
                    format!(
                        "not valid UTF-8 (at byte {} of the field)",
                        e.valid_up_to() + 1
                    ),
                )
            })?;
            col.ty.parse_value(text).map_err(|reason| (c, reason))?
        };
    }
    Ok(())
}
