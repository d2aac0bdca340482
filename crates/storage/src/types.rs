//! Column types, values, schemas, the on-page row format and the order-preserving
//! key format used by B+-trees.
//!
//! Row format (one tuple on a heap page): an optional null bitmap (present only when
//! the schema has nullable columns, one bit per column, set = NULL), then each
//! non-NULL value in column order, little-endian, unaligned:
//! INT32/DATE 4 bytes, INT64/DECIMAL/FLOAT64 8 bytes, BOOL 1 byte, CHAR(n) n bytes
//! space-padded, VARCHAR(n) a u16 length then the bytes. When no column is nullable
//! or variable-length every column sits at a fixed offset, so a predicate reads its
//! column without decoding the rest of the row ([`RowLayout::fixed_offset`]).
//!
//! Key format (B+-tree entries): each column is one flag byte (0 = NULL, 1 = value;
//! NULLs sort first) followed by a byte string whose unsigned lexicographic order is
//! the value order (sign-flipped big-endian integers, IEEE-754 total order for
//! floats, 0x00-escaped strings with a 0x00 0x00 terminator). Comparing encoded keys
//! with `memcmp` is then comparing values, and appending a [`Tid`] makes every
//! entry unique and strictly ordered by (key, tuple id).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::encoding::{
    CodeKind, Col, Encoding, Phys, Step, address_of, escaped_in, format_timestamp, get_uint,
    int_value, put_uint, read_code, tail_of,
};
use crate::error::{Result, StorageError};

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
    /// Fixed length in bytes, space padded; trailing spaces are not significant.
    Char {
        len: u16,
    },
    /// At most `len` bytes.
    Varchar {
        len: u16,
    },
    Bool,
}

impl DataType {
    /// Parses a type name as written in a schema: `INT`, `INT32`, `INTEGER`,
    /// `BIGINT`, `INT64`, `DOUBLE`, `FLOAT64`, `DECIMAL(p,s)`, `DATE`, `CHAR(n)`,
    /// `VARCHAR(n)`, `BOOL`, `BOOLEAN` (case-insensitive).
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
            "BOOL" | "BOOLEAN" => DataType::Bool,
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
            DataType::Char { len } | DataType::Varchar { len } if len == 0 || len > 4000 => {
                Err(format!("{self}: length must be 1..=4000 bytes"))
            }
            _ => Ok(()),
        }
    }

    /// Bytes a value of this type takes in a row; `None` when it varies.
    pub fn fixed_width(&self) -> Option<usize> {
        match self {
            DataType::Int32 | DataType::Date => Some(4),
            DataType::Int64 | DataType::Float64 | DataType::Decimal { .. } => Some(8),
            DataType::Bool => Some(1),
            DataType::Char { len } => Some(*len as usize),
            DataType::Varchar { .. } => None,
        }
    }

    /// Largest number of bytes a value takes in a row.
    pub fn max_width(&self) -> usize {
        match self {
            DataType::Varchar { len } => 2 + *len as usize,
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

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::Int32 => write!(f, "INT32"),
            DataType::Int64 => write!(f, "INT64"),
            DataType::Float64 => write!(f, "FLOAT64"),
            DataType::Decimal { precision, scale } => write!(f, "DECIMAL({precision},{scale})"),
            DataType::Date => write!(f, "DATE"),
            DataType::Char { len } => write!(f, "CHAR({len})"),
            DataType::Varchar { len } => write!(f, "VARCHAR({len})"),
            DataType::Bool => write!(f, "BOOL"),
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
    Str(String),
    Bool(bool),
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int32(_) => "INT32",
            Value::Int64(_) => "INT64",
            Value::Float64(_) => "FLOAT64",
            Value::Decimal(_) => "DECIMAL",
            Value::Date(_) => "DATE",
            Value::Str(_) => "string",
            Value::Bool(_) => "BOOL",
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value as an i64 when it is an integer-like value (INT32, INT64, DATE,
    /// scaled DECIMAL, BOOL).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int32(v) | Value::Date(v) => Some(*v as i64),
            Value::Int64(v) | Value::Decimal(v) => Some(*v),
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

    /// Largest encoded row.
    pub fn max_row_size(&self) -> usize {
        RowLayout::new(self).bitmap_len
            + self.columns.iter().map(|c| c.ty.max_width()).sum::<usize>()
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

/// Encodes and decodes rows of one schema.
#[derive(Clone, Debug)]
pub struct RowLayout {
    types: Vec<DataType>,
    nullable: Vec<bool>,
    bitmap_len: usize,
    /// Offsets of the leading columns that sit at the same place in every
    /// row: none are nullable, and every column before them has a fixed
    /// width (the first variable-width column is the last with one).
    offsets: Vec<usize>,
    /// The same for a row without NULLs, whichever columns are nullable (a
    /// NULL takes no bytes, so a row with one shifts the later columns).
    offsets_without_nulls: Vec<usize>,
    /// The columns' physical encodings (`encoding.rs`); `None`: all plain.
    phys: Option<std::sync::Arc<[Phys]>>,
    /// The same, as the per-tuple loops read them (empty when all plain).
    plan: std::sync::Arc<[Col]>,
    /// The per-page shape walk of a row without NULLs, from the end of its
    /// null bitmap (`encoding::runs`).
    steps: std::sync::Arc<[Step]>,
    /// The encodings as the catalog states them (empty when all plain).
    encodings: std::sync::Arc<[Encoding]>,
}

/// A column at the same offset in every row ([`RowLayout::fixed_column`]).
#[derive(Clone, Copy, Debug)]
pub struct FixedColumn<'a> {
    /// Where the column's bytes start in a row.
    pub offset: usize,
    pub kind: FixedKind<'a>,
}

/// How a [`FixedColumn`]'s bytes hold its value.
#[derive(Clone, Copy, Debug)]
pub enum FixedKind<'a> {
    /// The declared type's plain bytes, of this width (little-endian
    /// numbers; CHAR bytes with their padding; a BOOL's byte).
    Plain(usize),
    /// A `width`-byte code: the integer-like value minus `base`; the
    /// `escape` code says the value is stored past the columns (decode it
    /// with [`RowLayout::decode_column`]).
    Int {
        width: usize,
        base: i64,
        escape: u64,
    },
    /// A `width`-byte index into `values`; `escape` as for `Int`.
    Dict {
        width: usize,
        escape: u64,
        values: &'a [String],
    },
}

impl FixedColumn<'_> {
    /// The code of a coded column in `row` (its first `width` bytes at the
    /// offset, little-endian). `row` must be a stored row of the layout.
    #[inline(always)]
    pub fn code(&self, row: &[u8]) -> u64 {
        match self.kind {
            FixedKind::Int { width, .. } | FixedKind::Dict { width, .. } => {
                crate::encoding::read_code(row, self.offset, width)
            }
            FixedKind::Plain(_) => 0,
        }
    }
}

/// One stored field of a tuple, as [`RowLayout::fields`] hands it out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Field<'a> {
    Null,
    /// The value's plain bytes: little-endian fixed-width, CHAR bytes (maybe
    /// padded), VARCHAR bytes without their length.
    Raw(&'a [u8]),
    /// An integer-like value (INT, BIGINT, DATE days, DECIMAL scaled) decoded
    /// from a narrow encoding.
    Int(i64),
    /// A string from a dictionary.
    Text(&'a str),
    /// A text timestamp's seconds since 1970 (format it with
    /// [`crate::encoding::format_timestamp`]).
    Stamp(i64),
}

impl RowLayout {
    pub fn new(schema: &Schema) -> RowLayout {
        let any_null = schema.columns.iter().any(|c| c.nullable);
        let bitmap_len = if any_null {
            schema.len().div_ceil(8)
        } else {
            0
        };
        let offsets_without_nulls: Vec<usize> =
            fixed_prefix(schema.columns.iter().map(|c| c.ty.fixed_width()))
                .into_iter()
                .map(|o| o + bitmap_len)
                .collect();
        let offsets = if any_null {
            vec![]
        } else {
            offsets_without_nulls.clone()
        };
        RowLayout {
            types: schema.types(),
            nullable: schema.columns.iter().map(|c| c.nullable).collect(),
            bitmap_len,
            offsets,
            offsets_without_nulls,
            phys: None,
            plan: std::sync::Arc::from(Vec::new()),
            steps: std::sync::Arc::from(Vec::new()),
            encodings: std::sync::Arc::from(Vec::new()),
        }
    }

    /// The layout of rows of `schema` stored in `encodings` (one per column;
    /// empty or all plain: [`RowLayout::new`]). The error says which
    /// encoding does not suit its column.
    pub fn encoded(schema: &Schema, encodings: &[Encoding]) -> Result<RowLayout> {
        let mut l = RowLayout::new(schema);
        if crate::encoding::is_plain(encodings) {
            return Ok(l);
        }
        if encodings.len() != schema.len() {
            return Err(StorageError::Schema(format!(
                "{} column encodings for {} columns",
                encodings.len(),
                schema.len()
            )));
        }
        let mut phys = Vec::with_capacity(schema.len());
        for (e, c) in encodings.iter().zip(&schema.columns) {
            e.check(&c.ty).map_err(|reason| StorageError::Value {
                column: c.name.clone(),
                reason: format!("encoding: {reason}"),
            })?;
            phys.push(Phys::new(e, &c.ty));
        }
        // The first side column's place holds the pointer to the side row.
        if let Some(Phys::Side { pointer }) =
            phys.iter_mut().find(|p| matches!(p, Phys::Side { .. }))
        {
            *pointer = true;
        }
        l.offsets_without_nulls =
            fixed_prefix(phys.iter().zip(&l.types).map(|(p, ty)| p.fixed_width(ty)))
                .into_iter()
                .map(|o| o + l.bitmap_len)
                .collect();
        l.offsets = if l.bitmap_len == 0 {
            l.offsets_without_nulls.clone()
        } else {
            vec![]
        };
        l.plan = phys
            .iter()
            .zip(&l.types)
            .map(|(p, ty)| Col::new(p, ty))
            .collect::<Vec<_>>()
            .into();
        l.steps = crate::encoding::runs(&l.plan).into();
        l.phys = Some(phys.into());
        l.encodings = encodings.into();
        Ok(l)
    }

    /// How column `col` is stored when it sits at the same offset in every
    /// row without NULLs (every column before it has a fixed width), so that
    /// a batch of such rows can be decoded column by column: a fixed-width
    /// plain value, a frame-of-reference code or a dictionary code. `None`
    /// for every other column (variable width, after one, timestamp codes,
    /// semantic ids, side columns). A row with a NULL
    /// ([`RowLayout::has_null`]) does not have it there.
    pub fn fixed_column(&self, col: usize) -> Option<FixedColumn<'_>> {
        let offset = *self.offsets_without_nulls.get(col)?;
        let kind = match self.phys.as_ref().map(|p| &p[col]) {
            None | Some(Phys::Plain) => FixedKind::Plain(self.types[col].fixed_width()?),
            Some(Phys::Offset {
                base,
                width,
                escape,
            }) => FixedKind::Int {
                width: *width,
                base: *base,
                escape: *escape,
            },
            Some(Phys::Dict {
                width,
                escape,
                values,
                ..
            }) => FixedKind::Dict {
                width: *width,
                escape: *escape,
                values,
            },
            Some(_) => return None,
        };
        Some(FixedColumn { offset, kind })
    }

    /// Bytes value `v` of column `col` takes in a row of this layout (an
    /// escaped value counts its code and its plain bytes; NULL: 0).
    pub fn field_bytes(&self, col: usize, v: &Value) -> usize {
        if let Some(Phys::Side { pointer }) = self.phys.as_ref().map(|p| &p[col]) {
            return if *pointer {
                crate::encoding::SIDE_POINTER
            } else {
                0
            };
        }
        if v.is_null() || self.is_address(col) {
            return 0;
        }
        let ty = &self.types[col];
        let plain = match (ty, v) {
            (DataType::Varchar { .. }, Value::Str(s)) => 2 + s.len(),
            _ => ty.fixed_width().unwrap_or(0),
        };
        match self.phys.as_ref().map(|p| &p[col]) {
            None | Some(Phys::Plain) => plain,
            Some(Phys::Short { trim }) => match v {
                Value::Str(s) if *trim => 1 + s.trim_end_matches(' ').len(),
                Value::Str(s) => 1 + s.len(),
                _ => plain,
            },
            Some(p) => {
                let w = p.fixed_width(ty).unwrap_or(0);
                if p.code(v).is_some() { w } else { w + plain }
            }
        }
    }

    /// The columns' declared types.
    pub fn types(&self) -> &[DataType] {
        &self.types
    }

    /// Each column's physical encoding; empty when every column is stored
    /// as declared.
    pub fn encodings(&self) -> &[Encoding] {
        &self.encodings
    }

    /// Whether some column is stored in other than its declared encoding.
    pub fn is_encoded(&self) -> bool {
        self.phys.is_some()
    }

    /// Byte offset of column `col` in every row, when rows have a fixed layout.
    /// Only a column stored as declared has one: its bytes are the plain
    /// value's.
    pub fn fixed_offset(&self, col: usize) -> Option<usize> {
        if let Some(p) = &self.phys
            && !matches!(p[col], Phys::Plain)
        {
            return None;
        }
        self.offsets.get(col).copied()
    }

    /// Appends the encoding of `row` to `out`, checking types, NULLs and lengths.
    /// `names` is only used for error messages.
    pub fn encode(&self, row: &[Value], out: &mut Vec<u8>, names: &Schema) -> Result<()> {
        if row.len() != self.types.len() {
            return Err(StorageError::Schema(format!(
                "row has {} values, table has {} columns",
                row.len(),
                self.types.len()
            )));
        }
        let start = out.len();
        out.resize(start + self.bitmap_len, 0);
        for (i, (v, ty)) in row.iter().zip(&self.types).enumerate() {
            let col_err = |reason: String| StorageError::Value {
                column: names.columns[i].name.clone(),
                reason,
            };
            if self.is_address(i) {
                // Not stored: the tuple's address is the value.
                continue;
            }
            if let Some(Phys::Side { pointer }) = self.phys.as_ref().map(|p| &p[i]) {
                // In the side table; the main row given here holds the side
                // row's address in the pointer's place (see `side_row`).
                if *pointer {
                    let tid = v
                        .as_i64()
                        .and_then(crate::encoding::tid_of_address)
                        .ok_or_else(|| col_err("no side row to point to".into()))?;
                    out.extend_from_slice(&tid.page.to_le_bytes());
                    out.extend_from_slice(&tid.slot.to_le_bytes());
                }
                continue;
            }
            if v.is_null() {
                if !self.nullable[i] {
                    return Err(col_err("NULL in a NOT NULL column".into()));
                }
                out[start + i / 8] |= 1 << (i % 8);
                continue;
            }
            ty.check(v).map_err(col_err)?;
            match self.phys.as_ref().map(|p| &p[i]) {
                None | Some(Phys::Plain) => encode_plain(ty, v, out),
                Some(Phys::Short { trim }) => {
                    let s = match v {
                        Value::Str(s) if *trim => s.trim_end_matches(' '),
                        Value::Str(s) => s.as_str(),
                        _ => unreachable!("checked by DataType::check"),
                    };
                    out.push(s.len() as u8);
                    out.extend_from_slice(s.as_bytes());
                }
                Some(Phys::Address | Phys::Side { .. }) => {}
                Some(p) => {
                    let w = p.fixed_width(ty).expect("codes have a width");
                    let code = p.code(v).unwrap_or_else(|| p.escape().expect("has one"));
                    put_uint(out, code, w);
                }
            }
        }
        // Values the encodings could not hold follow, plain (see encoding.rs).
        if let Some(p) = &self.phys {
            for (i, (v, ty)) in row.iter().zip(&self.types).enumerate() {
                if !v.is_null() && p[i].escape().is_some() && p[i].code(v).is_none() {
                    encode_plain(ty, v, out);
                }
            }
        }
        Ok(())
    }

    /// Checks that `bytes` is a well-formed row of this layout (lengths, NULLs,
    /// UTF-8), so that decoding it cannot fail. Used by `strata check`.
    pub fn validate(&self, bytes: &[u8]) -> std::result::Result<(), String> {
        if let Some(p) = &self.phys {
            return self.validate_encoded(p, bytes, true);
        }
        if bytes.len() < self.bitmap_len {
            return Err(format!(
                "tuple of {} bytes is shorter than its null bitmap",
                bytes.len()
            ));
        }
        let mut pos = self.bitmap_len;
        for i in 0..self.types.len() {
            if self.is_null(bytes, i) {
                if !self.nullable[i] {
                    return Err(format!("column {} is NULL but NOT NULL", i + 1));
                }
                continue;
            }
            let rest = &bytes[pos..];
            let w = match self.types[i].fixed_width() {
                Some(w) => w,
                None if rest.len() >= 2 => 2 + u16::from_le_bytes([rest[0], rest[1]]) as usize,
                None => usize::MAX,
            };
            if w > rest.len() {
                return Err(format!("tuple ends inside column {}", i + 1));
            }
            if let DataType::Char { .. } | DataType::Varchar { .. } = self.types[i] {
                let text = if w == self.types[i].fixed_width().unwrap_or(0) {
                    &rest[..w]
                } else {
                    &rest[2..w]
                };
                if std::str::from_utf8(text).is_err() {
                    return Err(format!("column {} is not valid UTF-8", i + 1));
                }
            }
            pos += w;
        }
        if pos != bytes.len() {
            return Err(format!(
                "tuple has {} bytes, its columns account for {pos}",
                bytes.len()
            ));
        }
        Ok(())
    }

    /// Decodes a whole row, the tuple at `tid`. `bytes` must have been produced by [`RowLayout::encode`]
    /// for the same schema (pages are checksummed, so this holds for stored tuples).
    /// `tid` is the value of a semantic id column ([`Encoding::Address`]).
    pub fn decode(&self, bytes: &[u8], tid: Tid) -> Vec<Value> {
        if let Some(p) = &self.phys {
            return self.decode_encoded(p, bytes, tid);
        }
        let mut out = Vec::with_capacity(self.types.len());
        let mut pos = self.bitmap_len;
        for i in 0..self.types.len() {
            if self.is_null(bytes, i) {
                out.push(Value::Null);
                continue;
            }
            let (v, w) = decode_value(&self.types[i], &bytes[pos..]);
            pos += w;
            out.push(v);
        }
        out
    }

    /// Decodes one column of the tuple at `tid`, skipping the others
    /// (constant time for fixed layouts).
    pub fn decode_column(&self, bytes: &[u8], col: usize, tid: Tid) -> Value {
        if let Some(p) = &self.phys {
            return self.decode_column_encoded(p, bytes, col, tid);
        }
        if let Some(off) = self.fixed_offset(col) {
            return decode_value(&self.types[col], &bytes[off..]).0;
        }
        if self.is_null(bytes, col) {
            return Value::Null;
        }
        let mut pos = self.bitmap_len;
        for i in 0..col {
            if !self.is_null(bytes, i) {
                pos += value_width(&self.types[i], &bytes[pos..]);
            }
        }
        decode_value(&self.types[col], &bytes[pos..]).0
    }

    /// The stored fields of every column of a tuple, in column order, into
    /// `out` (see [`Field`]). One pass over the tuple, for converters that want
    /// every column (e.g. to Arrow). `tid`: the tuple's, for a semantic id.
    pub fn fields<'a>(&'a self, bytes: &'a [u8], tid: Tid, out: &mut Vec<Field<'a>>) {
        self.fields_upto(bytes, tid, self.types.len(), out)
    }

    /// [`RowLayout::fields`] of the first `upto` columns only: a scan that
    /// needs none of the later ones stops walking the tuple there (TPC-H's
    /// Q1 and Q6 want none of lineitem's last five columns, its three text
    /// ones among them). A value of an earlier column that its encoding
    /// could not hold is stored past the last column; then the walk goes on
    /// to find it, without producing the later columns' fields.
    pub fn fields_upto<'a>(
        &'a self,
        bytes: &'a [u8],
        tid: Tid,
        upto: usize,
        out: &mut Vec<Field<'a>>,
    ) {
        out.clear();
        let upto = upto.min(self.types.len());
        let mut pos = self.bitmap_len;
        let Some(phys) = &self.phys else {
            for i in 0..upto {
                if self.is_null(bytes, i) {
                    out.push(Field::Null);
                    continue;
                }
                let (field, w) = plain_field(&self.types[i], &bytes[pos..]);
                out.push(field);
                pos += w;
            }
            return;
        };
        let mut escaped = Vec::new();
        for (i, c) in self.plan.iter().enumerate() {
            if i == upto {
                if escaped.is_empty() {
                    return;
                }
                // Past the wanted columns: only their widths, to reach the
                // escaped values.
                for (j, c) in self.plan.iter().enumerate().skip(upto) {
                    if !(self.bitmap_len > 0 && self.is_null(bytes, j)) {
                        pos += stored_width(c, &bytes[pos..]);
                    }
                }
                break;
            }
            if self.bitmap_len > 0 && self.is_null(bytes, i) {
                out.push(Field::Null);
                continue;
            }
            match *c {
                Col::Fixed(w) => {
                    out.push(Field::Raw(&bytes[pos..pos + w]));
                    pos += w;
                }
                Col::Var => {
                    let n = u16::from_le_bytes([bytes[pos], bytes[pos + 1]]) as usize;
                    out.push(Field::Raw(&bytes[pos + 2..pos + 2 + n]));
                    pos += 2 + n;
                }
                Col::Short => {
                    let n = bytes[pos] as usize;
                    out.push(Field::Raw(&bytes[pos + 1..pos + 1 + n]));
                    pos += 1 + n;
                }
                Col::Address => out.push(Field::Int(address_of(tid))),
                // In the side table: the caller joins it (`split.rs`).
                Col::Side(pointer) => {
                    out.push(Field::Null);
                    if pointer {
                        pos += crate::encoding::SIDE_POINTER;
                    }
                }
                Col::Code {
                    width,
                    base,
                    escape,
                    kind,
                    ..
                } => {
                    let code = read_code(bytes, pos, width);
                    pos += width;
                    if code == escape {
                        escaped.push(i);
                        out.push(Field::Null);
                        continue;
                    }
                    out.push(match kind {
                        CodeKind::Int => Field::Int(base.wrapping_add(code as i64)),
                        CodeKind::Stamp => Field::Stamp(base.wrapping_add(code as i64)),
                        CodeKind::Dict => {
                            let text = match &phys[i] {
                                Phys::Dict { values, .. } => values.get(code as usize),
                                _ => None,
                            };
                            Field::Text(text.map_or("", |v| v.as_str()))
                        }
                    });
                }
            }
        }
        for i in escaped {
            let (field, w) = plain_field(&self.types[i], &bytes[pos..]);
            out[i] = field;
            pos += w;
        }
    }

    /// [`RowLayout::fits_encoded`] of a row without NULLs, run by run from
    /// `start`, the end of its null bitmap.
    #[inline]
    fn fits_runs(&self, t: &[u8], start: usize) -> bool {
        let mut pos = start;
        let (mut tail_fixed, mut tail_var) = (0usize, 0usize);
        for step in self.steps.iter() {
            match step {
                Step::Run { len, codes } => {
                    let Some(run) = t.get(pos..pos + len) else {
                        return false;
                    };
                    let (f, v) = (&mut tail_fixed, &mut tail_var);
                    let mut ok = true;
                    for (width, group) in codes {
                        ok &= match width {
                            1 => escaped_in::<1>(run, group, f, v),
                            2 => escaped_in::<2>(run, group, f, v),
                            3 => escaped_in::<3>(run, group, f, v),
                            4 => escaped_in::<4>(run, group, f, v),
                            5 => escaped_in::<5>(run, group, f, v),
                            6 => escaped_in::<6>(run, group, f, v),
                            7 => escaped_in::<7>(run, group, f, v),
                            // Codes are 1 to 8 bytes wide (`Encoding::check`).
                            _ => escaped_in::<8>(run, group, f, v),
                        };
                    }
                    if !ok {
                        return false;
                    }
                    pos += len;
                }
                Step::Var => match t.get(pos..pos + 2) {
                    Some(n) => pos += 2 + u16::from_le_bytes([n[0], n[1]]) as usize,
                    None => return false,
                },
                Step::Short => match t.get(pos) {
                    Some(n) => pos += 1 + *n as usize,
                    None => return false,
                },
            }
        }
        if tail_var == 0 {
            return pos + tail_fixed == t.len();
        }
        self.check_encoded_shape(t).is_ok()
    }

    /// Whether `t` is a well-formed tuple of this encoded layout: the
    /// per-page shape check's fast yes/no ([`RowLayout::check_encoded_shape`]
    /// says why not).
    #[inline]
    pub(crate) fn fits_encoded(&self, t: &[u8]) -> bool {
        if self.bitmap_len == 0 {
            return self.fits_runs(t, 0);
        }
        let Some(bitmap) = t.get(..self.bitmap_len) else {
            return false;
        };
        // Most rows of a table with nullable columns have no NULL: then every
        // column is where the walk without NULLs puts it.
        if bitmap.iter().all(|&b| b == 0) {
            return self.fits_runs(t, self.bitmap_len);
        }
        let mut pos = self.bitmap_len;
        // Escaped values' widths, summed for fixed ones; VARCHARs need their
        // length prefixes, read in a second pass.
        let mut tail_fixed = 0usize;
        let mut tail_var = 0usize;
        for (i, c) in self.plan.iter().enumerate() {
            if self.bitmap_len > 0 && self.is_null(t, i) {
                if !self.nullable[i] {
                    return false;
                }
                continue;
            }
            let w = match *c {
                Col::Fixed(w) => w,
                Col::Var => match t.get(pos..pos + 2) {
                    Some(n) => 2 + u16::from_le_bytes([n[0], n[1]]) as usize,
                    None => return false,
                },
                Col::Short => match t.get(pos) {
                    Some(n) => 1 + *n as usize,
                    None => return false,
                },
                Col::Address | Col::Side(false) => 0,
                Col::Side(true) => crate::encoding::SIDE_POINTER,
                Col::Code {
                    width,
                    escape,
                    valid,
                    plain,
                    ..
                } => {
                    if pos + width > t.len() {
                        return false;
                    }
                    let code = read_code(t, pos, width);
                    if !tail_of(code, escape, valid, plain, &mut tail_fixed, &mut tail_var) {
                        return false;
                    }
                    width
                }
            };
            pos += w;
            if pos > t.len() {
                return false;
            }
        }
        if tail_var == 0 {
            return pos + tail_fixed == t.len();
        }
        // Rare: an escaped VARCHAR; the careful walk decides.
        self.check_encoded_shape(t).is_ok()
    }

    /// [`RowLayout::validate`] of an encoded layout; `utf8`: check text too.
    fn validate_encoded(
        &self,
        p: &[Phys],
        bytes: &[u8],
        utf8: bool,
    ) -> std::result::Result<(), String> {
        if bytes.len() < self.bitmap_len {
            return Err(format!(
                "tuple of {} bytes is shorter than its null bitmap",
                bytes.len()
            ));
        }
        let text_ok = |t: &[u8], col: usize| {
            if utf8 && std::str::from_utf8(t).is_err() {
                Err(format!("column {} is not valid UTF-8", col + 1))
            } else {
                Ok(())
            }
        };
        let mut pos = self.bitmap_len;
        let mut escaped = Vec::new();
        for (i, ph) in p.iter().enumerate() {
            if self.is_null(bytes, i) {
                if !self.nullable[i] {
                    return Err(format!("column {} is NULL but NOT NULL", i + 1));
                }
                if matches!(ph, Phys::Side { .. }) {
                    return Err(format!(
                        "column {} is in the side table but NULL in the main row",
                        i + 1
                    ));
                }
                continue;
            }
            let ty = &self.types[i];
            let rest = &bytes[pos..];
            let w = match ph.width(ty, rest) {
                Some(w) if w <= rest.len() => w,
                _ => return Err(format!("tuple ends inside column {}", i + 1)),
            };
            match ph {
                Phys::Plain => match ty {
                    DataType::Char { .. } => text_ok(&rest[..w], i)?,
                    DataType::Varchar { .. } => text_ok(&rest[2..w], i)?,
                    _ => {}
                },
                Phys::Short { .. } => text_ok(&rest[1..w], i)?,
                Phys::Address | Phys::Side { .. } => {}
                Phys::Offset { escape, .. } | Phys::Timestamp { escape, .. } => {
                    if get_uint(rest, w) == *escape {
                        escaped.push(i);
                    }
                }
                Phys::Dict { escape, values, .. } => match get_uint(rest, w) {
                    c if c == *escape => escaped.push(i),
                    c if c as usize >= values.len() => {
                        return Err(format!(
                            "column {} has code {c} of a dictionary of {}",
                            i + 1,
                            values.len()
                        ));
                    }
                    _ => {}
                },
            }
            pos += w;
        }
        for i in escaped {
            let ty = &self.types[i];
            let rest = &bytes[pos..];
            let w = match Phys::Plain.width(ty, rest) {
                Some(w) if w <= rest.len() => w,
                _ => {
                    return Err(format!(
                        "tuple ends inside the escaped value of column {}",
                        i + 1
                    ));
                }
            };
            match ty {
                DataType::Char { .. } => text_ok(&rest[..w], i)?,
                DataType::Varchar { .. } => text_ok(&rest[2..w], i)?,
                _ => {}
            }
            pos += w;
        }
        if pos != bytes.len() {
            return Err(format!(
                "tuple has {} bytes, its columns account for {pos}",
                bytes.len()
            ));
        }
        Ok(())
    }

    /// Whether `bytes` has the shape of a row of this encoded layout (text
    /// is not checked), for [`crate::shape::TupleShape`].
    pub(crate) fn check_encoded_shape(&self, bytes: &[u8]) -> std::result::Result<(), String> {
        match &self.phys {
            Some(p) => self.validate_encoded(p, bytes, false),
            None => self.validate(bytes),
        }
    }

    /// Decodes field `i` of the encoded part at `b`: the value (`None`:
    /// escaped) and its width.
    fn decode_encoded_field(
        &self,
        p: &Phys,
        i: usize,
        b: &[u8],
        tid: Tid,
    ) -> (Option<Value>, usize) {
        let ty = &self.types[i];
        match p {
            Phys::Address => (Some(Value::Int64(address_of(tid))), 0),
            // In the side table: the caller joins it (`split.rs`).
            Phys::Side { pointer } => (
                Some(Value::Null),
                if *pointer {
                    crate::encoding::SIDE_POINTER
                } else {
                    0
                },
            ),
            Phys::Plain => {
                let (v, w) = decode_value(ty, b);
                (Some(v), w)
            }
            Phys::Short { .. } => {
                let n = b[0] as usize;
                let s = String::from_utf8_lossy(&b[1..1 + n]).into_owned();
                (Some(Value::Str(s)), 1 + n)
            }
            Phys::Timestamp {
                base,
                width,
                escape,
                ..
            } => match get_uint(b, *width) {
                c if c == *escape => (None, *width),
                c => (
                    Some(Value::Str(format_timestamp(base.wrapping_add(c as i64)))),
                    *width,
                ),
            },
            Phys::Offset {
                base,
                width,
                escape,
            } => match get_uint(b, *width) {
                c if c == *escape => (None, *width),
                c => (Some(int_value(ty, base.wrapping_add(c as i64))), *width),
            },
            Phys::Dict {
                width,
                escape,
                values,
                ..
            } => match get_uint(b, *width) {
                c if c == *escape => (None, *width),
                c => (
                    Some(Value::Str(
                        values.get(c as usize).cloned().unwrap_or_default(),
                    )),
                    *width,
                ),
            },
        }
    }

    fn decode_encoded(&self, p: &[Phys], bytes: &[u8], tid: Tid) -> Vec<Value> {
        let mut out = Vec::with_capacity(self.types.len());
        let mut pos = self.bitmap_len;
        let mut escaped = Vec::new();
        for (i, ph) in p.iter().enumerate() {
            if self.is_null(bytes, i) {
                out.push(Value::Null);
                continue;
            }
            let (v, w) = self.decode_encoded_field(ph, i, &bytes[pos..], tid);
            out.push(v.unwrap_or_else(|| {
                escaped.push(i);
                Value::Null
            }));
            pos += w;
        }
        for i in escaped {
            let (v, w) = decode_value(&self.types[i], &bytes[pos..]);
            out[i] = v;
            pos += w;
        }
        out
    }

    /// Where column `col`'s field starts in the encoded tuple `bytes`.
    fn encoded_pos(&self, p: &[Phys], bytes: &[u8], col: usize) -> usize {
        match self.offsets.get(col) {
            Some(&o) => o,
            None => {
                let mut pos = self.bitmap_len;
                for (i, ph) in p.iter().enumerate().take(col) {
                    if !self.is_null(bytes, i) {
                        pos += ph
                            .width(&self.types[i], &bytes[pos..])
                            .expect("checked by the page's tuple shape");
                    }
                }
                pos
            }
        }
    }

    fn decode_column_encoded(&self, p: &[Phys], bytes: &[u8], col: usize, tid: Tid) -> Value {
        if self.is_null(bytes, col) {
            return Value::Null;
        }
        let pos = self.encoded_pos(p, bytes, col);
        match self
            .decode_encoded_field(&p[col], col, &bytes[pos..], tid)
            .0
        {
            Some(v) => v,
            // Escaped (rare): its place in the tail depends on every column.
            None => self.decode_encoded(p, bytes, tid).swap_remove(col),
        }
    }

    /// Whether the stored row `bytes` has a NULL (never, for a layout
    /// without nullable columns).
    #[inline]
    pub fn has_null(&self, bytes: &[u8]) -> bool {
        self.bitmap_len > 0 && bytes[..self.bitmap_len].iter().any(|&b| b != 0)
    }

    fn is_null(&self, bytes: &[u8], col: usize) -> bool {
        self.bitmap_len > 0 && bytes[col / 8] & (1 << (col % 8)) != 0
    }

    /// Whether column `col` is a semantic id ([`Encoding::Address`]): not
    /// stored, its value the tuple's address.
    pub fn is_address(&self, col: usize) -> bool {
        matches!(self.phys.as_ref().map(|p| &p[col]), Some(Phys::Address))
    }

    /// The semantic id column, if the table has one.
    pub fn address_column(&self) -> Option<usize> {
        (0..self.types.len()).find(|&c| self.is_address(c))
    }

    /// Whether column `col` is in the table's side table
    /// ([`Encoding::Side`]): a main row decodes it as NULL; its value is in
    /// the side row [`RowLayout::side_tid`] points to.
    pub fn is_side(&self, col: usize) -> bool {
        matches!(self.phys.as_ref().map(|p| &p[col]), Some(Phys::Side { .. }))
    }

    /// Whether some column is in a side table.
    pub fn has_side(&self) -> bool {
        self.phys
            .as_ref()
            .is_some_and(|p| p.iter().any(|c| matches!(c, Phys::Side { .. })))
    }

    /// The tuple id of the side row of the main row `bytes` (`None`: the
    /// layout has no side columns).
    pub fn side_tid(&self, bytes: &[u8]) -> Option<Tid> {
        let p = self.phys.as_ref()?;
        let col = p
            .iter()
            .position(|c| matches!(c, Phys::Side { pointer: true }))?;
        let pos = self.encoded_pos(p, bytes, col);
        let b = &bytes[pos..pos + crate::encoding::SIDE_POINTER];
        Some(Tid::new(
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            u16::from_le_bytes([b[4], b[5]]),
        ))
    }
}

/// Offsets of the leading columns at a fixed place, from the columns'
/// widths (`None`: variable): up to and including the first variable one.
fn fixed_prefix(widths: impl Iterator<Item = Option<usize>>) -> Vec<usize> {
    let mut v = Vec::new();
    let mut off = 0;
    for w in widths {
        v.push(off);
        match w {
            Some(w) => off += w,
            None => break,
        }
    }
    v
}

/// Appends the plain (declared) encoding of `v`, which `ty.check` accepted.
fn encode_plain(ty: &DataType, v: &Value, out: &mut Vec<u8>) {
    match (ty, v) {
        (DataType::Int32, Value::Int32(x)) | (DataType::Date, Value::Date(x)) => {
            out.extend_from_slice(&x.to_le_bytes())
        }
        (DataType::Int64, Value::Int64(x)) | (DataType::Decimal { .. }, Value::Decimal(x)) => {
            out.extend_from_slice(&x.to_le_bytes())
        }
        (DataType::Float64, Value::Float64(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (DataType::Bool, Value::Bool(b)) => out.push(*b as u8),
        (DataType::Char { len }, Value::Str(s)) => {
            out.extend_from_slice(s.as_bytes());
            out.resize(out.len() + *len as usize - s.len(), b' ');
        }
        (DataType::Varchar { .. }, Value::Str(s)) => {
            out.extend_from_slice(&(s.len() as u16).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        _ => unreachable!("checked by DataType::check"),
    }
}

/// The plain field at the start of `b` and its width.
fn plain_field<'a>(ty: &DataType, b: &'a [u8]) -> (Field<'a>, usize) {
    let w = value_width(ty, b);
    let field = match ty {
        DataType::Varchar { .. } => &b[2..w],
        _ => &b[..w],
    };
    (Field::Raw(field), w)
}

fn value_width(ty: &DataType, bytes: &[u8]) -> usize {
    match ty.fixed_width() {
        Some(w) => w,
        None => 2 + u16::from_le_bytes([bytes[0], bytes[1]]) as usize,
    }
}

fn decode_value(ty: &DataType, b: &[u8]) -> (Value, usize) {
    let i32_at = || i32::from_le_bytes(b[..4].try_into().unwrap());
    let i64_at = || i64::from_le_bytes(b[..8].try_into().unwrap());
    match ty {
        DataType::Int32 => (Value::Int32(i32_at()), 4),
        DataType::Date => (Value::Date(i32_at()), 4),
        DataType::Int64 => (Value::Int64(i64_at()), 8),
        DataType::Decimal { .. } => (Value::Decimal(i64_at()), 8),
        DataType::Float64 => (
            Value::Float64(f64::from_le_bytes(b[..8].try_into().unwrap())),
            8,
        ),
        DataType::Bool => (Value::Bool(b[0] != 0), 1),
        DataType::Char { len } => {
            let s = String::from_utf8_lossy(&b[..*len as usize]);
            (
                Value::Str(s.trim_end_matches(' ').to_string()),
                *len as usize,
            )
        }
        DataType::Varchar { .. } => {
            let n = u16::from_le_bytes([b[0], b[1]]) as usize;
            (
                Value::Str(String::from_utf8_lossy(&b[2..2 + n]).into_owned()),
                2 + n,
            )
        }
    }
}

/// A tuple id: heap page number and slot on that page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Tid {
    pub page: u32,
    pub slot: u16,
}

impl Tid {
    pub const ENCODED_LEN: usize = 6;

    pub fn new(page: u32, slot: u16) -> Tid {
        Tid { page, slot }
    }

    /// Big-endian, so encoded tids order like tids.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.page.to_be_bytes());
        out.extend_from_slice(&self.slot.to_be_bytes());
    }

    pub fn decode(b: &[u8]) -> Tid {
        Tid {
            page: u32::from_be_bytes(b[..4].try_into().unwrap()),
            slot: u16::from_be_bytes(b[4..6].try_into().unwrap()),
        }
    }
}

impl fmt::Display for Tid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},{})", self.page, self.slot)
    }
}

/// Appends the order-preserving encoding of `values` (typed by `types`) to `out`.
pub fn encode_key(types: &[DataType], values: &[Value], out: &mut Vec<u8>) {
    debug_assert_eq!(types.len(), values.len());
    for (ty, v) in types.iter().zip(values) {
        encode_key_value(ty, v, out);
    }
}

/// Encodes one key column (see the module docs).
pub fn encode_key_value(ty: &DataType, v: &Value, out: &mut Vec<u8>) {
    if v.is_null() {
        out.push(0);
        return;
    }
    out.push(1);
    match v {
        Value::Int32(x) | Value::Date(x) => {
            out.extend_from_slice(&((*x as u32) ^ 0x8000_0000).to_be_bytes())
        }
        Value::Int64(x) | Value::Decimal(x) => {
            out.extend_from_slice(&((*x as u64) ^ 0x8000_0000_0000_0000).to_be_bytes())
        }
        Value::Float64(x) => {
            let bits = x.to_bits();
            let k = if bits >> 63 == 1 {
                !bits
            } else {
                bits ^ (1 << 63)
            };
            out.extend_from_slice(&k.to_be_bytes());
        }
        Value::Bool(b) => out.push(*b as u8),
        Value::Str(s) => {
            let s = if matches!(ty, DataType::Char { .. }) {
                s.trim_end_matches(' ')
            } else {
                s
            };
            for &byte in s.as_bytes() {
                out.push(byte);
                if byte == 0 {
                    out.push(0xFF);
                }
            }
            out.extend_from_slice(&[0, 0]);
        }
        Value::Null => unreachable!(),
    }
}

/// Decodes a key produced by [`encode_key`]; returns the values and the number of
/// bytes consumed (a tid may follow).
pub fn decode_key(types: &[DataType], b: &[u8]) -> (Vec<Value>, usize) {
    let mut pos = 0;
    let mut out = Vec::with_capacity(types.len());
    for ty in types {
        let flag = b[pos];
        pos += 1;
        if flag == 0 {
            out.push(Value::Null);
            continue;
        }
        let u32_at = |p: usize| u32::from_be_bytes(b[p..p + 4].try_into().unwrap());
        let u64_at = |p: usize| u64::from_be_bytes(b[p..p + 8].try_into().unwrap());
        match ty {
            DataType::Int32 => {
                out.push(Value::Int32((u32_at(pos) ^ 0x8000_0000) as i32));
                pos += 4;
            }
            DataType::Date => {
                out.push(Value::Date((u32_at(pos) ^ 0x8000_0000) as i32));
                pos += 4;
            }
            DataType::Int64 => {
                out.push(Value::Int64((u64_at(pos) ^ (1 << 63)) as i64));
                pos += 8;
            }
            DataType::Decimal { .. } => {
                out.push(Value::Decimal((u64_at(pos) ^ (1 << 63)) as i64));
                pos += 8;
            }
            DataType::Float64 => {
                let k = u64_at(pos);
                let bits = if k >> 63 == 1 { k ^ (1 << 63) } else { !k };
                out.push(Value::Float64(f64::from_bits(bits)));
                pos += 8;
            }
            DataType::Bool => {
                out.push(Value::Bool(b[pos] != 0));
                pos += 1;
            }
            DataType::Char { .. } | DataType::Varchar { .. } => {
                let mut s = Vec::new();
                loop {
                    let byte = b[pos];
                    if byte == 0 {
                        if b[pos + 1] == 0 {
                            pos += 2;
                            break;
                        }
                        s.push(0);
                        pos += 2;
                    } else {
                        s.push(byte);
                        pos += 1;
                    }
                }
                out.push(Value::Str(String::from_utf8_lossy(&s).into_owned()));
            }
        }
    }
    (out, pos)
}

fn parse_decimal(s: &str, precision: u8, scale: u8) -> std::result::Result<i64, String> {
    let bad = || format!("'{s}' is not a decimal number");
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    if (int_part.is_empty() && frac_part.is_empty())
        || !int_part.bytes().all(|c| c.is_ascii_digit())
        || !frac_part.bytes().all(|c| c.is_ascii_digit())
    {
        return Err(bad());
    }
    let mut v: i128 = 0;
    for c in int_part.bytes() {
        v = v * 10 + (c - b'0') as i128;
        if v > i64::MAX as i128 {
            return Err(format!(
                "'{s}' is out of range for DECIMAL({precision},{scale})"
            ));
        }
    }
    let frac = frac_part.as_bytes();
    for i in 0..scale as usize {
        v = v * 10 + frac.get(i).map_or(0, |c| (c - b'0') as i128);
    }
    // Round half away from zero on the first dropped digit, as PostgreSQL's numeric does.
    if frac.get(scale as usize).is_some_and(|c| *c >= b'5') {
        v += 1;
    }
    if v >= 10i128.pow(precision as u32) {
        return Err(format!(
            "'{s}' is out of range for DECIMAL({precision},{scale})"
        ));
    }
    Ok(if neg { -(v as i64) } else { v as i64 })
}

/// Formats a scaled decimal.
pub fn format_decimal(v: i64, scale: u8) -> String {
    if scale == 0 {
        return v.to_string();
    }
    let p = 10u64.pow(scale as u32);
    let a = v.unsigned_abs();
    format!(
        "{}{}.{:0width$}",
        if v < 0 { "-" } else { "" },
        a / p,
        a % p,
        width = scale as usize
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i32, m: u32, d: u32) -> i32 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = (y - era * 400) as u32;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe as i32 - 719468
}

/// The (year, month, day) of a day number.
pub fn civil_from_days(z: i32) -> (i32, u32, u32) {
    // In i64: any stored day number (a page may hold any bits) has a date.
    let z = z as i64 + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = (z - era * 146097) as u32;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = (yoe as i64 + era * 400) as i32;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn parse_date(s: &str) -> std::result::Result<i32, String> {
    let bad = || format!("'{s}' is not a date (expected YYYY-MM-DD)");
    let mut it = s.splitn(3, '-');
    let (Some(y), Some(m), Some(d)) = (it.next(), it.next(), it.next()) else {
        return Err(bad());
    };
    let (y, m, d) = (
        y.parse::<i32>().map_err(|_| bad())?,
        m.parse::<u32>().map_err(|_| bad())?,
        d.parse::<u32>().map_err(|_| bad())?,
    );
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days_in_month = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m)
        || d == 0
        || d > days_in_month[m as usize - 1]
        || !(-9999..=9999).contains(&y)
    {
        return Err(format!("'{s}' is not a valid date"));
    }
    Ok(days_from_civil(y, m, d))
}

/// Formats a day number as YYYY-MM-DD.
pub fn format_date(days: i32) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Bytes a non-NULL column of encoding `c` takes at the start of `bytes` in a
/// stored (checked) tuple, escapes aside: they are stored past the last
/// column.
fn stored_width(c: &Col, bytes: &[u8]) -> usize {
    match *c {
        Col::Fixed(w) | Col::Code { width: w, .. } => w,
        Col::Var => 2 + u16::from_le_bytes([bytes[0], bytes[1]]) as usize,
        Col::Short => 1 + bytes[0] as usize,
        Col::Address | Col::Side(false) => 0,
        Col::Side(true) => crate::encoding::SIDE_POINTER,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn schema() -> Schema {
        Schema::parse("a INT, b BIGINT NULL, c DECIMAL(12,2), d DATE, e CHAR(5), f VARCHAR(20) NULL, g BOOL, h DOUBLE").unwrap()
    }

    #[test]
    fn fields_are_the_stored_bytes_of_each_column() {
        let s = schema();
        let layout = RowLayout::new(&s);
        let row = vec![
            Value::Int32(-7),
            Value::Null,
            Value::Decimal(12345),
            Value::Date(9000),
            Value::Str("ab".into()),
            Value::Str("hello".into()),
            Value::Bool(true),
            Value::Float64(2.5),
        ];
        let mut bytes = Vec::new();
        layout.encode(&row, &mut bytes, &s).unwrap();
        let mut f = Vec::new();
        layout.fields(&bytes, Tid::default(), &mut f);
        assert_eq!(f.len(), 8);
        assert_eq!(f[0], Field::Raw(&(-7i32).to_le_bytes()[..]));
        assert_eq!(f[1], Field::Null);
        assert_eq!(f[2], Field::Raw(&12345i64.to_le_bytes()[..]));
        assert_eq!(f[3], Field::Raw(&9000i32.to_le_bytes()[..]));
        assert_eq!(f[4], Field::Raw(&b"ab   "[..]));
        assert_eq!(f[5], Field::Raw(&b"hello"[..]));
        assert_eq!(f[6], Field::Raw(&[1u8][..]));
        assert_eq!(f[7], Field::Raw(&2.5f64.to_le_bytes()[..]));
    }

    #[test]
    fn parses_schemas_and_rejects_bad_types() {
        let s = schema();
        assert_eq!(s.len(), 8);
        assert_eq!(
            s.columns[2].ty,
            DataType::Decimal {
                precision: 12,
                scale: 2
            }
        );
        assert!(s.columns[1].nullable && !s.columns[0].nullable);
        let e = Schema::parse("a INT, b FOO").unwrap_err().to_string();
        assert!(e.contains("'FOO'") && e.contains("unknown type"), "{e}");
        let e = Schema::parse("a INT, A INT").unwrap_err().to_string();
        assert!(e.contains("duplicate column name 'A'"), "{e}");
        assert!(Schema::parse("a DECIMAL(19,2)").is_err());
    }

    #[test]
    fn parses_values_with_clear_errors() {
        let dec = DataType::Decimal {
            precision: 5,
            scale: 2,
        };
        assert_eq!(dec.parse_value("123.456"), Ok(Value::Decimal(12346)));
        assert_eq!(dec.parse_value("-0.5"), Ok(Value::Decimal(-50)));
        assert!(
            dec.parse_value("1234.5")
                .unwrap_err()
                .contains("out of range")
        );
        assert!(
            dec.parse_value("1.2.3")
                .unwrap_err()
                .contains("not a decimal")
        );
        assert_eq!(
            DataType::Date.parse_value("1998-12-01"),
            Ok(Value::Date(days_from_civil(1998, 12, 1)))
        );
        assert!(
            DataType::Date
                .parse_value("1998-02-30")
                .unwrap_err()
                .contains("not a valid date")
        );
        assert!(
            DataType::Int32
                .parse_value("12x")
                .unwrap_err()
                .contains("not a 32-bit integer")
        );
        assert!(DataType::Int32.parse_value("3000000000").is_err());
        assert!(
            DataType::Char { len: 3 }
                .parse_value("abcd")
                .unwrap_err()
                .contains("too long")
        );
        assert_eq!(format_decimal(-1205, 2), "-12.05");
        assert_eq!(format_date(0), "1970-01-01");
    }

    #[test]
    fn fixed_layout_offsets() {
        let s = Schema::parse("a INT, b BIGINT, c CHAR(3), d INT").unwrap();
        let l = RowLayout::new(&s);
        assert_eq!(l.fixed_offset(3), Some(4 + 8 + 3));
        // Up to the first variable-width column, offsets are fixed.
        let s2 = Schema::parse("a INT, b VARCHAR(3), c INT").unwrap();
        let l2 = RowLayout::new(&s2);
        assert_eq!(l2.fixed_offset(0), Some(0));
        assert_eq!(l2.fixed_offset(1), Some(4));
        assert_eq!(l2.fixed_offset(2), None);
        let s3 = Schema::parse("a INT NULL, b INT").unwrap();
        assert_eq!(RowLayout::new(&s3).fixed_offset(1), None);
    }

    #[test]
    fn encode_rejects_nulls_and_wrong_types() {
        let s = schema();
        let l = RowLayout::new(&s);
        let mut row = vec![
            Value::Null,
            Value::Null,
            Value::Decimal(1),
            Value::Date(1),
            Value::Str("x".into()),
            Value::Null,
            Value::Bool(true),
            Value::Float64(1.0),
        ];
        let e = l.encode(&row, &mut Vec::new(), &s).unwrap_err().to_string();
        assert!(e.contains("'a'") && e.contains("NOT NULL"), "{e}");
        row[0] = Value::Str("no".into());
        let e = l.encode(&row, &mut Vec::new(), &s).unwrap_err().to_string();
        assert!(e.contains("'a'") && e.contains("string"), "{e}");
    }

    fn arb_row() -> impl Strategy<Value = Vec<Value>> {
        (
            any::<i32>(),
            proptest::option::of(any::<i64>()),
            -99_999_999_999i64..99_999_999_999,
            -100_000i32..100_000,
            "[a-z ]{0,5}",
            proptest::option::of("[a-z\\x00é]{0,6}"),
            any::<bool>(),
            any::<f64>().prop_filter("no NaN", |f| !f.is_nan()),
        )
            .prop_map(|(a, b, c, d, e, f, g, h)| {
                vec![
                    Value::Int32(a),
                    b.map_or(Value::Null, Value::Int64),
                    Value::Decimal(c),
                    Value::Date(d),
                    Value::Str(e.trim_end_matches(' ').to_string()),
                    f.map_or(Value::Null, Value::Str),
                    Value::Bool(g),
                    Value::Float64(h),
                ]
            })
    }

    fn cmp_values(a: &[Value], b: &[Value]) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        for (x, y) in a.iter().zip(b) {
            let o = match (x, y) {
                (Value::Null, Value::Null) => Ordering::Equal,
                (Value::Null, _) => Ordering::Less,
                (_, Value::Null) => Ordering::Greater,
                (Value::Float64(p), Value::Float64(q)) => p.total_cmp(q),
                (Value::Str(p), Value::Str(q)) => p.as_bytes().cmp(q.as_bytes()),
                (Value::Bool(p), Value::Bool(q)) => p.cmp(q),
                _ => x.as_i64().unwrap().cmp(&y.as_i64().unwrap()),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    proptest! {
        #[test]
        fn rows_round_trip(row in arb_row()) {
            let s = schema();
            let l = RowLayout::new(&s);
            let mut buf = Vec::new();
            l.encode(&row, &mut buf, &s).unwrap();
            prop_assert!(buf.len() <= s.max_row_size());
            prop_assert_eq!(&l.decode(&buf, Tid::default()), &row);
            for (c, v) in row.iter().enumerate() {
                prop_assert_eq!(&l.decode_column(&buf, c, Tid::default()), v);
            }
        }

        #[test]
        fn keys_round_trip_and_preserve_order(a in arb_row(), b in arb_row()) {
            let types = schema().types();
            let (mut ka, mut kb) = (Vec::new(), Vec::new());
            encode_key(&types, &a, &mut ka);
            encode_key(&types, &b, &mut kb);
            prop_assert_eq!(decode_key(&types, &ka), (a.clone(), ka.len()));
            prop_assert_eq!(ka.cmp(&kb), cmp_values(&a, &b));
        }

        #[test]
        fn dates_round_trip(d in -1_000_000i32..1_000_000) {
            let (y, m, dd) = civil_from_days(d);
            prop_assert_eq!(days_from_civil(y, m, dd), d);
        }
    }
}
