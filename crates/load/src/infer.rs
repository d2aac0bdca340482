//! A CSV file's column types, inferred from its values, and its rows read
//! as typed values ([`CsvRowReader`]).
//!
//! [`infer_csv_schema`] reads the whole file once and gives each column the
//! narrowest type every value of it parses as, in the spirit of DuckDB's
//! `read_csv` sniffer:
//!
//! | every non-empty value is …                          | type            |
//! |-----------------------------------------------------|-----------------|
//! | `true` or `false` (any case)                        | BOOLEAN         |
//! | a 64-bit integer                                    | BIGINT          |
//! | a number written plainly (`-12.50`), ≤ 18 digits    | DECIMAL(p,s)    |
//! | any other number (`1e3`, `inf`, more digits)        | DOUBLE          |
//! | a date `YYYY-MM-DD`                                 | DATE            |
//! | anything else, or no value at all                   | VARCHAR(n)      |
//!
//! DuckDB makes every fractional number a DOUBLE; strata keeps a number
//! written plainly exact as a DECIMAL whose precision and scale are the
//! largest seen (`12.50` and `3.125` make DECIMAL(5,3)), so the values load
//! as written. A VARCHAR's length is the longest value in bytes (at least
//! 1). The empty field (the NULL string) is NULL and makes its column
//! nullable; a column without one is NOT NULL. Column names come from the
//! header (a blank one is `columnN`, a repeated one gets `_1`, `_2`, as
//! DuckDB names them), or are `column0`, `column1`, … without one.

use std::fs::File;
use std::path::{Path, PathBuf};

use ::csv::{ByteRecord, Reader, ReaderBuilder};
use strata_storage::row::{Column, DataType, Schema, Value};

use crate::error::LoadError;

/// Longest VARCHAR strata supports.
const MAX_VARCHAR: usize = 4000;

/// Most digits a strata DECIMAL holds.
const MAX_DECIMAL_DIGITS: u32 = 18;

/// How a CSV file is written.
#[derive(Clone, Debug)]
pub struct CsvDialect {
    /// The first record names the columns (default true).
    pub header: bool,
    /// Field separator (default `,`).
    pub delimiter: u8,
    /// The text that stands for NULL (default: the empty field).
    pub null_string: String,
}

impl Default for CsvDialect {
    fn default() -> Self {
        CsvDialect {
            header: true,
            delimiter: b',',
            null_string: String::new(),
        }
    }
}

/// What [`infer_csv_schema`] found.
#[derive(Clone, Debug)]
pub struct InferredSchema {
    pub schema: Schema,
    /// Data records read (the header not counted).
    pub records: u64,
}

/// What one column's values so far allow.
#[derive(Clone, Debug)]
struct Candidates {
    bool: bool,
    int: bool,
    /// Every value a plain decimal number: the most integer digits and the
    /// most fraction digits seen.
    decimal: Option<(u32, u32)>,
    double: bool,
    date: bool,
    /// Longest value in bytes.
    longest: usize,
    /// A NULL was seen.
    nullable: bool,
    /// A non-NULL value was seen.
    any: bool,
}

impl Candidates {
    fn new() -> Candidates {
        Candidates {
            bool: true,
            int: true,
            decimal: Some((0, 0)),
            double: true,
            date: true,
            longest: 0,
            nullable: false,
            any: false,
        }
    }

    fn add(&mut self, text: &str) {
        self.any = true;
        self.longest = self.longest.max(text.len());
        let s = text.trim();
        if self.bool {
            self.bool = s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false");
        }
        if self.int {
            self.int = s.parse::<i64>().is_ok();
        }
        if let Some((int_digits, scale)) = self.decimal {
            self.decimal = plain_decimal(s).map(|(i, f)| (int_digits.max(i), scale.max(f)));
        }
        if self.double {
            self.double = s.parse::<f64>().is_ok();
        }
        if self.date {
            self.date = s.as_bytes().first().is_some_and(u8::is_ascii_digit)
                && DataType::Date.parse_value(s).is_ok();
        }
    }

    /// The column's type.
    fn data_type(&self) -> DataType {
        if !self.any {
            return DataType::Varchar { len: 1 };
        }
        if self.bool {
            return DataType::Bool;
        }
        if self.int {
            return DataType::Int64;
        }
        if let Some((i, s)) = self.decimal
            && i + s <= MAX_DECIMAL_DIGITS
        {
            return DataType::Decimal {
                precision: (i + s).max(1) as u8,
                scale: s as u8,
            };
        }
        if self.double {
            return DataType::Float64;
        }
        if self.date {
            return DataType::Date;
        }
        DataType::Varchar {
            len: self.longest.max(1) as u16,
        }
    }
}

/// The integer digits (leading zeros not counted) and fraction digits of a
/// number written plainly (`-0012.50`: 2 and 2), else `None`.
fn plain_decimal(s: &str) -> Option<(u32, u32)> {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let int = int.trim_start_matches('0');
    Some((int.len() as u32, frac.len() as u32))
}

fn input_err(path: &Path, reason: String) -> LoadError {
    LoadError::Input {
        path: path.to_path_buf(),
        reason,
    }
}

fn read_err(path: &Path, e: ::csv::Error) -> LoadError {
    let line = e
        .position()
        .map(|p| format!("line {}: ", p.line()))
        .unwrap_or_default();
    input_err(path, format!("{line}{e}"))
}

fn open(path: &Path, d: &CsvDialect) -> Result<Reader<File>, LoadError> {
    let file = File::open(path).map_err(|e| input_err(path, e.to_string()))?;
    Ok(ReaderBuilder::new()
        .has_headers(false)
        .delimiter(d.delimiter)
        // Field counts are checked here, so the error can say what was expected.
        .flexible(true)
        .buffer_capacity(1 << 20)
        .from_reader(file))
}

/// The column names of the header `rec`, made unique as DuckDB does.
fn header_names(path: &Path, rec: &ByteRecord) -> Result<Vec<String>, LoadError> {
    let mut names: Vec<String> = Vec::with_capacity(rec.len());
    for (i, f) in rec.iter().enumerate() {
        let name = std::str::from_utf8(f).map_err(|_| {
            input_err(
                path,
                format!("line 1: header field {} is not valid UTF-8", i + 1),
            )
        })?;
        let name = match name.trim() {
            "" => format!("column{i}"),
            n => n.to_string(),
        };
        let mut unique = name.clone();
        let mut k = 1;
        while names.iter().any(|n| n.eq_ignore_ascii_case(&unique)) {
            unique = format!("{name}_{k}");
            k += 1;
        }
        names.push(unique);
    }
    Ok(names)
}

/// Infers the schema of the CSV file `path` from all its values (see the
/// module docs). A record with another number of fields than the first,
/// a field that is not UTF-8 or a text longer than VARCHAR's 4000 bytes is
/// an error naming the line and column.
pub fn infer_csv_schema(path: &Path, d: &CsvDialect) -> Result<InferredSchema, LoadError> {
    let mut reader = open(path, d)?;
    let mut rec = ByteRecord::new();
    if !reader
        .read_byte_record(&mut rec)
        .map_err(|e| read_err(path, e))?
    {
        return Err(input_err(
            path,
            "the file is empty: there are no columns to infer".into(),
        ));
    }
    let (names, first) = if d.header {
        (header_names(path, &rec)?, None)
    } else {
        let names = (0..rec.len()).map(|i| format!("column{i}")).collect();
        (names, Some(rec.clone()))
    };
    let mut columns = vec![Candidates::new(); names.len()];
    let null = d.null_string.as_bytes();
    let mut records = 0u64;
    let mut take = |rec: &ByteRecord| -> Result<(), LoadError> {
        records += 1;
        let line = rec.position().map_or(0, |p| p.line());
        if rec.len() != names.len() {
            return Err(input_err(
                path,
                format!(
                    "line {line}: expected {} fields, found {}",
                    names.len(),
                    rec.len()
                ),
            ));
        }
        for (c, (raw, cand)) in rec.iter().zip(columns.iter_mut()).enumerate() {
            if raw == null {
                cand.nullable = true;
                continue;
            }
            let text = std::str::from_utf8(raw).map_err(|e| {
                input_err(
                    path,
                    format!(
                        "line {line}: column {} ({}): not valid UTF-8 (at byte {} of the field)",
                        c + 1,
                        names[c],
                        e.valid_up_to() + 1
                    ),
                )
            })?;
            cand.add(text);
            if cand.longest > MAX_VARCHAR {
                return Err(input_err(
                    path,
                    format!(
                        "line {line}: column {} ({}): a value of {} bytes, longer than a \
                         VARCHAR holds ({MAX_VARCHAR})",
                        c + 1,
                        names[c],
                        cand.longest
                    ),
                ));
            }
        }
        Ok(())
    };
    if let Some(f) = &first {
        take(f)?;
    }
    while reader
        .read_byte_record(&mut rec)
        .map_err(|e| read_err(path, e))?
    {
        take(&rec)?;
    }
    let schema = Schema::new(
        names
            .iter()
            .zip(&columns)
            .map(|(n, c)| Column::new(n.clone(), c.data_type(), c.nullable || !c.any))
            .collect(),
    )
    .map_err(|e| input_err(path, e.to_string()))?;
    Ok(InferredSchema { schema, records })
}

/// A type as SQL writes it.
pub fn sql_type(t: &DataType) -> String {
    match t {
        DataType::Int32 => "INT".into(),
        DataType::Int64 => "BIGINT".into(),
        DataType::Float64 => "DOUBLE".into(),
        DataType::Bool => "BOOLEAN".into(),
        t => t.to_string(),
    }
}

/// `schema` as the column list of a SQL `CREATE TABLE`: `id BIGINT NOT
/// NULL, name VARCHAR(12), …` (names that are not plain lower-case
/// identifiers in double quotes).
pub fn sql_column_list(schema: &Schema) -> String {
    schema
        .columns
        .iter()
        .map(|c| {
            let plain = c
                .name
                .chars()
                .next()
                .is_some_and(|ch| ch.is_ascii_lowercase() || ch == '_')
                && c.name
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_');
            let name = if plain {
                c.name.clone()
            } else {
                format!("\"{}\"", c.name.replace('"', "\"\""))
            };
            format!(
                "{name} {}{}",
                sql_type(&c.ty),
                if c.nullable { "" } else { " NOT NULL" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads a CSV file's records as rows of a schema's typed values, in file
/// order (the columns in the file's order). An error names the file, the
/// line, the column and the reason.
pub struct CsvRowReader {
    reader: Reader<File>,
    rec: ByteRecord,
    path: PathBuf,
    schema: Schema,
    null: Vec<u8>,
}

impl CsvRowReader {
    /// Opens `path`, skipping its header if `d` says it has one.
    pub fn open(path: &Path, d: &CsvDialect, schema: Schema) -> Result<CsvRowReader, LoadError> {
        let mut reader = open(path, d)?;
        let mut rec = ByteRecord::new();
        if d.header {
            reader
                .read_byte_record(&mut rec)
                .map_err(|e| read_err(path, e))?;
        }
        Ok(CsvRowReader {
            reader,
            rec,
            path: path.to_path_buf(),
            schema,
            null: d.null_string.as_bytes().to_vec(),
        })
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Reads the next record into `row`; `false` at the end of the file.
    pub fn next_row(&mut self, row: &mut Vec<Value>) -> Result<bool, LoadError> {
        if !self
            .reader
            .read_byte_record(&mut self.rec)
            .map_err(|e| read_err(&self.path, e))?
        {
            return Ok(false);
        }
        let line = self.rec.position().map_or(0, |p| p.line());
        let expected = self.schema.len();
        if self.rec.len() != expected {
            return Err(input_err(
                &self.path,
                format!(
                    "line {line}: expected {expected} fields, found {}",
                    self.rec.len()
                ),
            ));
        }
        row.clear();
        for (c, (raw, col)) in self.rec.iter().zip(&self.schema.columns).enumerate() {
            let bad = |reason: String| {
                input_err(
                    &self.path,
                    format!("line {line}: column {} ({}): {reason}", c + 1, col.name),
                )
            };
            if raw == self.null.as_slice() {
                if !col.nullable {
                    return Err(bad("empty field in a NOT NULL column".into()));
                }
                row.push(Value::Null);
                continue;
            }
            let text = std::str::from_utf8(raw).map_err(|e| {
                bad(format!(
                    "not valid UTF-8 (at byte {} of the field)",
                    e.valid_up_to() + 1
                ))
            })?;
            row.push(col.ty.parse_value(text).map_err(bad)?);
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_number_counts_its_digits() {
        assert_eq!(plain_decimal("-0012.50"), Some((2, 2)));
        assert_eq!(plain_decimal("0.5"), Some((0, 1)));
        assert_eq!(plain_decimal(".5"), Some((0, 1)));
        assert_eq!(plain_decimal("7"), Some((1, 0)));
        assert_eq!(plain_decimal("1e3"), None);
        assert_eq!(plain_decimal("."), None);
        assert_eq!(plain_decimal("-"), None);
        assert_eq!(plain_decimal("1.2.3"), None);
    }

    fn type_of(values: &[&str]) -> DataType {
        let mut c = Candidates::new();
        for v in values {
            c.add(v);
        }
        c.data_type()
    }

    #[test]
    fn each_column_gets_the_narrowest_type_all_its_values_fit() {
        assert_eq!(type_of(&["true", "FALSE"]), DataType::Bool);
        assert_eq!(type_of(&["1", "-20", "300"]), DataType::Int64);
        assert_eq!(
            type_of(&["12.50", "3.125", "-7"]),
            DataType::Decimal {
                precision: 5,
                scale: 3
            }
        );
        assert_eq!(type_of(&["1.5", "1e3"]), DataType::Float64);
        assert_eq!(type_of(&["99999999999999999999"]), DataType::Float64);
        assert_eq!(type_of(&["2024-02-29", "1999-01-01"]), DataType::Date);
        assert_eq!(type_of(&["2023-02-29"]), DataType::Varchar { len: 10 });
        assert_eq!(type_of(&["1", "x", "abcd"]), DataType::Varchar { len: 4 });
        assert_eq!(type_of(&["1", "true"]), DataType::Varchar { len: 4 });
        assert_eq!(type_of(&[]), DataType::Varchar { len: 1 });
    }
}
