//! Which columns an index caches in its leaves' free space (No Bits Left
//! Behind §2.1), and their encoding in a cache item.
//!
//! An index declares a list of cached columns (the catalog's
//! `IndexDef::cache`); the tree's cache stores opaque values of one fixed
//! size per index ([`CacheLayout`]), so every cached column gets a fixed
//! width here:
//!
//! * `INT`, `DATE`: 4 bytes; `BIGINT`, `DOUBLE`, `DECIMAL`: 8; `BOOL`: 1
//!   (little-endian, as in rows);
//! * `CHAR(n)` and `VARCHAR(n)`: a 2-byte length and `n` bytes — the declared
//!   maximum, zero-padded. A variable-length column therefore always costs
//!   its declared maximum in every item; a set whose items would be wider
//!   than [`MAX_VALUE`] bytes is refused, naming the index and the column
//!   that crosses the limit;
//! * a nullable column has one more byte before its value (1 = NULL).
//!
//! Key columns of the index are refused: their values are in the entry.

use crate::error::{Result, StorageError};
use crate::row::{DataType, Schema, Value};

use super::leaf::{CacheLayout, MAX_VALUE};

/// Slots per bucket of every declared index cache.
pub const BUCKET_SLOTS: usize = 4;

/// The cached columns of one index and their item encoding.
#[derive(Clone, Debug, PartialEq)]
pub struct CachedFields {
    /// Positions in the table's schema, in declared order.
    pub cols: Vec<usize>,
    pub names: Vec<String>,
    types: Vec<DataType>,
    nullable: Vec<bool>,
    width: usize,
}

fn column_width(ty: &DataType) -> usize {
    match ty {
        DataType::Char { len } | DataType::Varchar { len } => 2 + *len as usize,
        t => t.fixed_width().unwrap_or(0),
    }
}

impl CachedFields {
    /// Resolves `names` against `schema` for index `index` (key columns
    /// `key_cols`): an error names the index and the column that is unknown,
    /// a key column, named twice, or makes the items too wide.
    pub fn new(
        table: &str,
        index: &str,
        schema: &Schema,
        key_cols: &[usize],
        names: &[String],
    ) -> Result<CachedFields> {
        let bad = |reason: String| StorageError::Schema(format!("index '{index}': {reason}"));
        let mut out = CachedFields {
            cols: Vec::new(),
            names: Vec::new(),
            types: Vec::new(),
            nullable: Vec::new(),
            width: 0,
        };
        for name in names {
            let c = schema
                .index_of(name)
                .ok_or_else(|| StorageError::UnknownColumn {
                    table: table.to_string(),
                    column: name.clone(),
                })?;
            let col = &schema.columns[c];
            if key_cols.contains(&c) {
                return Err(bad(format!(
                    "cannot cache column '{}': it is a key column of the index (its value is in every entry)",
                    col.name
                )));
            }
            if out.cols.contains(&c) {
                return Err(bad(format!("column '{}' is cached twice", col.name)));
            }
            let w = column_width(&col.ty) + col.nullable as usize;
            if out.width + w > MAX_VALUE {
                return Err(bad(format!(
                    "cannot cache column '{}' ({}): the cached fields would take {} bytes per item, more than the {MAX_VALUE} an index cache allows (variable-length columns take their declared maximum)",
                    col.name,
                    col.ty,
                    out.width + w
                )));
            }
            out.width += w;
            out.cols.push(c);
            out.names.push(col.name.clone());
            out.types.push(col.ty);
            out.nullable.push(col.nullable);
        }
        Ok(out)
    }

    /// Bytes of one item's value.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The tree's cache layout for these fields (`None` when there are none).
    pub fn layout(&self) -> Option<CacheLayout> {
        if self.cols.is_empty() {
            return None;
        }
        CacheLayout::new(self.width.max(1), BUCKET_SLOTS).ok()
    }

    /// Appends the encoding of the cached columns of `row` (a whole row of
    /// the table) to `out`.
    pub fn encode_row(&self, row: &[Value], out: &mut Vec<u8>) {
        for (i, &c) in self.cols.iter().enumerate() {
            self.encode_value(i, &row[c], out);
        }
    }

    /// Appends the encoding of the cached columns' `values`, in declared
    /// order.
    pub fn encode_values(&self, values: &[Value], out: &mut Vec<u8>) {
        for (i, v) in values.iter().enumerate() {
            self.encode_value(i, v, out);
        }
    }

    fn encode_value(&self, i: usize, v: &Value, out: &mut Vec<u8>) {
        if self.nullable[i] {
            out.push(matches!(v, Value::Null) as u8);
        }
        let ty = &self.types[i];
        let w = column_width(ty);
        let start = out.len();
        match v {
            Value::Int32(x) | Value::Date(x) => out.extend_from_slice(&x.to_le_bytes()),
            Value::Int64(x) | Value::Decimal(x) | Value::Timestamp(x) => {
                out.extend_from_slice(&x.to_le_bytes())
            }
            Value::Float64(x) => out.extend_from_slice(&x.to_le_bytes()),
            Value::Bool(b) => out.push(*b as u8),
            Value::Str(s) => {
                let b = &s.as_bytes()[..s.len().min(w - 2)];
                out.extend_from_slice(&(b.len() as u16).to_le_bytes());
                out.extend_from_slice(b);
            }
            Value::Null => {}
        }
        out.resize(start + w, 0);
    }

    /// The cached columns' values from an item's value bytes, in declared
    /// order.
    pub fn decode(&self, mut b: &[u8]) -> Vec<Value> {
        let mut out = Vec::with_capacity(self.cols.len());
        for (i, ty) in self.types.iter().enumerate() {
            let null = if self.nullable[i] {
                let n = b[0] == 1;
                b = &b[1..];
                n
            } else {
                false
            };
            let w = column_width(ty);
            let (v, rest) = b.split_at(w);
            b = rest;
            if null {
                out.push(Value::Null);
                continue;
            }
            let i32_ = || i32::from_le_bytes(v[..4].try_into().unwrap());
            let i64_ = || i64::from_le_bytes(v[..8].try_into().unwrap());
            out.push(match ty {
                DataType::Int32 => Value::Int32(i32_()),
                DataType::Date => Value::Date(i32_()),
                DataType::Int64 => Value::Int64(i64_()),
                DataType::Decimal { .. } => Value::Decimal(i64_()),
                DataType::Timestamp => Value::Timestamp(i64_()),
                DataType::Float64 => Value::Float64(f64::from_bits(i64_() as u64)),
                DataType::Bool => Value::Bool(v[0] != 0),
                DataType::Char { .. } | DataType::Varchar { .. } => {
                    let n = (u16::from_le_bytes([v[0], v[1]]) as usize).min(w - 2);
                    Value::Str(String::from_utf8_lossy(&v[2..2 + n]).into_owned())
                }
            });
        }
        out
    }

    /// Whether `old` and `new` (whole rows) differ in a cached column.
    pub fn changed(&self, old: &[Value], new: &[Value]) -> bool {
        self.cols.iter().any(|&c| old[c] != new[c])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        Schema::parse(
            "id BIGINT, a INT NULL, b VARCHAR(10) NULL, c DOUBLE, d DATE NULL, e BOOL NULL, f CHAR(3), g DECIMAL(10,2) NULL",
        )
        .unwrap()
    }

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn values_round_trip_at_a_fixed_width() {
        let s = schema();
        let f = CachedFields::new(
            "t",
            "ix",
            &s,
            &[0],
            &names(&["b", "a", "c", "d", "e", "f", "g"]),
        )
        .unwrap();
        // b: 1 + 2 + 10, a: 1 + 4, c: 8, d: 1 + 4, e: 1 + 1, f: 2 + 3, g: 1 + 8
        assert_eq!(f.width(), 13 + 5 + 8 + 5 + 2 + 5 + 9);
        assert_eq!(f.layout().unwrap().value_len(), f.width());
        let rows = [
            vec![
                Value::Int64(1),
                Value::Int32(-7),
                Value::Str("héllo".into()),
                Value::Float64(2.5),
                Value::Date(19000),
                Value::Bool(true),
                Value::Str("ab".into()),
                Value::Decimal(-12345),
            ],
            vec![
                Value::Int64(2),
                Value::Null,
                Value::Null,
                Value::Float64(-0.0),
                Value::Null,
                Value::Null,
                Value::Str(String::new()),
                Value::Null,
            ],
        ];
        for row in &rows {
            let mut b = Vec::new();
            f.encode_row(row, &mut b);
            assert_eq!(b.len(), f.width());
            let want: Vec<Value> = f.cols.iter().map(|&c| row[c].clone()).collect();
            assert_eq!(f.decode(&b), want);
            let mut b2 = Vec::new();
            f.encode_values(&want, &mut b2);
            assert_eq!(b, b2);
        }
        assert!(f.changed(&rows[0], &rows[1]));
        let mut same_cached = rows[0].clone();
        same_cached[0] = Value::Int64(99);
        assert!(!f.changed(&rows[0], &same_cached));
        assert_eq!(
            CachedFields::new("t", "ix", &s, &[0], &[])
                .unwrap()
                .layout(),
            None
        );
    }

    #[test]
    fn bad_sets_are_refused_naming_index_and_column() {
        let s = schema();
        let e = |n: &[&str]| {
            CachedFields::new("t", "t_id", &s, &[0], &names(n))
                .unwrap_err()
                .to_string()
        };
        let m = e(&["zz"]);
        assert!(m.contains("zz") && m.contains("'t'"), "{m}");
        let m = e(&["id"]);
        assert!(m.contains("t_id") && m.contains("key column"), "{m}");
        let m = e(&["a", "a"]);
        assert!(m.contains("t_id") && m.contains("twice"), "{m}");
        let wide = Schema::parse("id INT NOT NULL, w VARCHAR(3000), v VARCHAR(10)").unwrap();
        let m = CachedFields::new("t", "t_id", &wide, &[0], &names(&["v", "w"]))
            .unwrap_err()
            .to_string();
        assert!(
            m.contains("t_id") && m.contains("'w'") && m.contains("2048"),
            "{m}"
        );
    }
}
