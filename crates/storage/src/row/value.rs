//! Column types, values and schemas: [`DataType`], [`Value`], [`Column`],
//! [`Schema`], with the text forms they parse from and print as.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::date::{format_date, format_timestamp_micros, parse_date, parse_timestamp};
use super::decimal::{format_decimal, parse_decimal};
use crate::error::{Result, StorageError};

/// The length of a `TEXT` column: a VARCHAR of this length holds a string of
/// any length that fits a row on a page (its 2-byte length can say 65,535;
/// a row must fit [`crate::page::MAX_TUPLE`]). It prints as `TEXT`.
pub const TEXT_LEN: u16 = u16::MAX;

/// The longest declared CHAR or VARCHAR length (bytes); TEXT aside.
pub const MAX_DECLARED_LEN: u16 = 4000;

/// A column type. DECIMAL is a scaled 64-bit integer, so precision is at most 18.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum DataType {
    Int32,
    Int64,
    Float64,
    Decimal {
        precision: u8,
        scale: u8,
    },
    /// Days since 1970-01-01.
    Date,
    /// Microseconds since 1970-01-01 00:00:00, without a time zone.
    Timestamp,
    /// Fixed length in bytes, space padded; trailing spaces are not significant.
    Char {
        len: u16,
    },
    /// At most `len` bytes; `len` [`TEXT_LEN`] is `TEXT`, whose values are
    /// as long as a row on a page allows.
    Varchar {
        len: u16,
    },
    Bool,
}

impl DataType {
    /// Parses a type name as written in a schema: `INT`, `INT32`, `INTEGER`,
    /// `BIGINT`, `INT64`, `DOUBLE`, `FLOAT64`, `DECIMAL(p,s)`, `DATE`, `CHAR(n)`,
    /// `VARCHAR(n)`, `TEXT` (or `VARCHAR` without a length), `BOOL`, `BOOLEAN`
    /// (case-insensitive).
    pub fn parse(text: &str) -> Result<DataType> {
        let t = text.trim().to_ascii_uppercase();
        let args = |name: &str| -> Option<Vec<u32>> {
            let rest = t.strip_prefix(name)?.trim();
            let inner = rest.strip_prefix('(')?.strip_suffix(')')?;
            inner
                .split(',')
                .map(|p| p.trim().parse::<u32>().ok())
                .collect()
        };
        let bad = |why: &str| StorageError::Schema(format!("type '{}': {why}", text.trim()));
        Ok(match t.as_str() {
            "INT" | "INT4" | "INT32" | "INTEGER" => DataType::Int32,
            "BIGINT" | "INT8" | "INT64" => DataType::Int64,
            "DOUBLE" | "FLOAT" | "FLOAT8" | "FLOAT64" | "DOUBLE PRECISION" | "REAL" => {
                DataType::Float64
            }
            "DATE" => DataType::Date,
            "TIMESTAMP" | "DATETIME" | "TIMESTAMP WITHOUT TIME ZONE" => DataType::Timestamp,
            "BOOL" | "BOOLEAN" => DataType::Bool,
            "TEXT" | "STRING" | "VARCHAR" => DataType::Varchar { len: TEXT_LEN },
            _ if t.starts_with("DECIMAL") || t.starts_with("NUMERIC") => {
                let name = if t.starts_with("DECIMAL") {
                    "DECIMAL"
                } else {
                    "NUMERIC"
                };
                let a = args(name).ok_or_else(|| bad("expected DECIMAL(p,s)"))?;
                let (p, s) = match a.as_slice() {
                    [p] => (*p, 0),
                    [p, s] => (*p, *s),
                    _ => return Err(bad("expected DECIMAL(p,s)")),
                };
                if p == 0 || p > 18 || s > p {
                    return Err(bad(
                        "precision must be 1..=18 and scale at most the precision",
                    ));
                }
                DataType::Decimal {
                    precision: p as u8,
                    scale: s as u8,
                }
            }
            _ if t.starts_with("VARCHAR") || t.starts_with("CHAR") => {
                let var = t.starts_with("VARCHAR");
                let a = args(if var { "VARCHAR" } else { "CHAR" })
                    .ok_or_else(|| bad("expected a length, e.g. CHAR(10)"))?;
                let [n] = a.as_slice() else {
                    return Err(bad("expected one length"));
                };
                if *n == 0 || *n > 4000 {
                    return Err(bad("length must be 1..=4000 bytes"));
                }
                if var {
                    DataType::Varchar { len: *n as u16 }
                } else {
                    DataType::Char { len: *n as u16 }
                }
            }
            _ => return Err(bad("unknown type")),
        })
    }

    /// Checks the parameters [`DataType::parse`] checks, for a type that came
    /// from elsewhere (a catalog file).
    pub fn validate(&self) -> std::result::Result<(), String> {
        match *self {
            DataType::Decimal { precision, scale }
                if precision == 0 || precision > 18 || scale > precision =>
            {
                Err(format!(
                    "DECIMAL({precision},{scale}): precision must be 1..=18 and scale at most the precision"
                ))
            }
            DataType::Varchar { len: TEXT_LEN } => Ok(()),
            DataType::Char { len } | DataType::Varchar { len }
                if len == 0 || len > MAX_DECLARED_LEN =>
            {
                Err(format!("{self}: length must be 1..=4000 bytes"))
            }
            _ => Ok(()),
        }
    }

    /// Bytes a value of this type takes in a row; `None` when it varies.
    pub fn fixed_width(&self) -> Option<usize> {
        match self {
            DataType::Int32 | DataType::Date => Some(4),
            DataType::Int64
            | DataType::Float64
            | DataType::Decimal { .. }
            | DataType::Timestamp => Some(8),
            DataType::Bool => Some(1),
            DataType::Char { len } => Some(*len as usize),
            DataType::Varchar { .. } => None,
        }
    }

    /// The type's SQL name, as `CREATE TABLE` takes it and `\d`, `DESCRIBE`
    /// and `strata info` show it (the one place a type gets its user-facing
    /// name; [`DataType::parse`] reads every name back).
    pub fn sql_name(&self) -> String {
        self.to_string()
    }

    /// Largest number of bytes a value takes in a row.
    pub fn max_width(&self) -> usize {
        match self {
            // TEXT: no row holds more than a page does.
            DataType::Varchar { len } => 2 + (*len as usize).min(crate::page::MAX_TUPLE),
            t => t.fixed_width().unwrap_or(0),
        }
    }

    /// Parses a value written as text (a CSV field, a literal on the command line).
    /// The error is a short reason, meant to be prefixed with where the text came from.
    pub fn parse_value(&self, text: &str) -> std::result::Result<Value, String> {
        let s = text.trim();
        match self {
            DataType::Int32 => s
                .parse::<i32>()
                .map(Value::Int32)
                .map_err(|_| format!("'{s}' is not a 32-bit integer")),
            DataType::Int64 => s
                .parse::<i64>()
                .map(Value::Int64)
                .map_err(|_| format!("'{s}' is not a 64-bit integer")),
            DataType::Float64 => s
                .parse::<f64>()
                .map(Value::Float64)
                .map_err(|_| format!("'{s}' is not a number")),
            DataType::Decimal { precision, scale } => {
                parse_decimal(s, *precision, *scale).map(Value::Decimal)
            }
            DataType::Date => parse_date(s).map(Value::Date),
            DataType::Timestamp => parse_timestamp(s).map(Value::Timestamp),
            DataType::Bool => match s.to_ascii_lowercase().as_str() {
                "true" | "t" | "1" | "yes" | "y" => Ok(Value::Bool(true)),
                "false" | "f" | "0" | "no" | "n" => Ok(Value::Bool(false)),
                _ => Err(format!("'{s}' is not a boolean")),
            },
            DataType::Char { len } | DataType::Varchar { len } => {
                // Strings keep their inner text exactly; only CHAR drops trailing spaces.
                let v = if matches!(self, DataType::Char { .. }) {
                    text.trim_end_matches(' ')
                } else {
                    text
                };
                if v.len() > *len as usize {
                    Err(format!(
                        "value of {} bytes is too long for {self} (at most {len})",
                        v.len()
                    ))
                } else {
                    Ok(Value::Str(v.to_string()))
                }
            }
        }
    }

    /// Checks that `v` can be stored in a column of this type (NULL is checked by the
    /// schema, not here).
    pub fn check(&self, v: &Value) -> std::result::Result<(), String> {
        let ok = match (self, v) {
            (_, Value::Null) => true,
            (DataType::Int32, Value::Int32(_))
            | (DataType::Int64, Value::Int64(_))
            | (DataType::Float64, Value::Float64(_))
            | (DataType::Date, Value::Date(_))
            | (DataType::Timestamp, Value::Timestamp(_))
            | (DataType::Bool, Value::Bool(_)) => true,
            (DataType::Decimal { precision, .. }, Value::Decimal(d)) => {
                return if d.unsigned_abs() < 10u64.pow(*precision as u32) {
                    Ok(())
                } else {
                    Err(format!("{d} (scaled) is out of range for {self}"))
                };
            }
            (DataType::Char { len } | DataType::Varchar { len }, Value::Str(s)) => {
                return if s.len() <= *len as usize {
                    Ok(())
                } else {
                    Err(format!(
                        "string of {} bytes is too long for {self}",
                        s.len()
                    ))
                };
            }
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "a {} value does not fit a {self} column",
                v.type_name()
            ))
        }
    }
}

/// A type shows as its SQL name everywhere: in `\d`, `strata info`,
/// `DESCRIBE` and in error messages.
impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::Int32 => write!(f, "INT"),
            DataType::Int64 => write!(f, "BIGINT"),
            DataType::Float64 => write!(f, "DOUBLE"),
            DataType::Decimal { precision, scale } => write!(f, "DECIMAL({precision},{scale})"),
            DataType::Date => write!(f, "DATE"),
            DataType::Timestamp => write!(f, "TIMESTAMP"),
            DataType::Char { len } => write!(f, "CHAR({len})"),
            DataType::Varchar { len: TEXT_LEN } => write!(f, "TEXT"),
            DataType::Varchar { len } => write!(f, "VARCHAR({len})"),
            DataType::Bool => write!(f, "BOOLEAN"),
        }
    }
}

/// One value. DECIMAL values are scaled integers (the scale is the column's).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Int32(i32),
    Int64(i64),
    Float64(f64),
    Decimal(i64),
    Date(i32),
    /// Microseconds since 1970-01-01 00:00:00.
    Timestamp(i64),
    Str(String),
    Bool(bool),
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int32(_) => "INT",
            Value::Int64(_) => "BIGINT",
            Value::Float64(_) => "DOUBLE",
            Value::Decimal(_) => "DECIMAL",
            Value::Date(_) => "DATE",
            Value::Timestamp(_) => "TIMESTAMP",
            Value::Str(_) => "string",
            Value::Bool(_) => "BOOLEAN",
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value as an i64 when it is an integer-like value (INT32, INT64, DATE,
    /// scaled DECIMAL, TIMESTAMP microseconds, BOOL).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int32(v) | Value::Date(v) => Some(*v as i64),
            Value::Int64(v) | Value::Decimal(v) | Value::Timestamp(v) => Some(*v),
            Value::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }

    /// Formats the value for display given its column type (needed for DECIMAL's scale).
    pub fn display(&self, ty: &DataType) -> String {
        match (self, ty) {
            (Value::Null, _) => "NULL".to_string(),
            (Value::Decimal(d), DataType::Decimal { scale, .. }) => format_decimal(*d, *scale),
            (Value::Date(d), _) => format_date(*d),
            (Value::Timestamp(t), _) => format_timestamp_micros(*t),
            (Value::Int32(v), _) => v.to_string(),
            (Value::Int64(v), _) | (Value::Decimal(v), _) => v.to_string(),
            (Value::Float64(v), _) => v.to_string(),
            (Value::Str(s), _) => s.clone(),
            (Value::Bool(b), _) => b.to_string(),
        }
    }
}

/// A column of a table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    #[serde(flatten)]
    pub ty: DataType,
    #[serde(default)]
    pub nullable: bool,
}

impl Column {
    pub fn new(name: impl Into<String>, ty: DataType, nullable: bool) -> Column {
        Column {
            name: name.into(),
            ty,
            nullable,
        }
    }
}

/// An ordered list of columns with unique names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schema {
    pub columns: Vec<Column>,
}

impl Schema {
    pub fn new(columns: Vec<Column>) -> Result<Schema> {
        if columns.is_empty() {
            return Err(StorageError::Schema(
                "a table needs at least one column".into(),
            ));
        }
        for (i, c) in columns.iter().enumerate() {
            if c.name.is_empty() {
                return Err(StorageError::Schema(format!(
                    "column {} has an empty name",
                    i + 1
                )));
            }
            if columns[..i]
                .iter()
                .any(|o| o.name.eq_ignore_ascii_case(&c.name))
            {
                return Err(StorageError::Schema(format!(
                    "duplicate column name '{}'",
                    c.name
                )));
            }
        }
        if columns.len() > u16::MAX as usize {
            return Err(StorageError::Schema("too many columns".into()));
        }
        Ok(Schema { columns })
    }

    /// Parses `name TYPE [NULL|NOT NULL], ...` (columns are NOT NULL unless marked NULL).
    pub fn parse(text: &str) -> Result<Schema> {
        let mut columns = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (name, rest) = part.split_once(char::is_whitespace).ok_or_else(|| {
                StorageError::Schema(format!("'{part}': expected 'name TYPE [NULL]'"))
            })?;
            let mut rest = rest.trim().to_string();
            let upper = rest.to_ascii_uppercase();
            let mut nullable = false;
            if let Some(stripped) = upper.strip_suffix("NOT NULL") {
                rest.truncate(stripped.len());
            } else if let Some(stripped) = upper.strip_suffix("NULL") {
                rest.truncate(stripped.len());
                nullable = true;
            }
            columns.push(Column::new(name, DataType::parse(&rest)?, nullable));
        }
        Schema::new(columns)
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Position of a column by name (case-insensitive).
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    pub fn types(&self) -> Vec<DataType> {
        self.columns.iter().map(|c| c.ty).collect()
    }

    /// The column names, comma-separated, for messages.
    pub fn names(&self) -> String {
        self.columns
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.columns.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(
                f,
                "{} {}{}",
                c.name,
                c.ty,
                if c.nullable { " NULL" } else { "" }
            )?;
        }
        Ok(())
    }
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, ch) in text.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[cfg(test)]
mod sql_name_tests {
    use super::DataType;

    #[test]
    fn every_sql_name_parses_back_to_its_type() {
        for t in [
            DataType::Int32,
            DataType::Int64,
            DataType::Float64,
            DataType::Decimal {
                precision: 15,
                scale: 2,
            },
            DataType::Date,
            DataType::Char { len: 3 },
            DataType::Varchar { len: 40 },
            DataType::Bool,
        ] {
            assert_eq!(
                DataType::parse(&t.sql_name()).unwrap(),
                t,
                "{}",
                t.sql_name()
            );
        }
        assert_eq!(DataType::Int64.sql_name(), "BIGINT");
    }
}
