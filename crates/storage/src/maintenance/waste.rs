//! Where a table's bytes go that its data does not need (No Bits Left Behind
//! §2 and §4): the **unused space** of its heap pages and index leaves, and
//! the **encoding waste** of each column, the bytes its declared type takes
//! beyond the tightest type that holds every value it stores.
//!
//! One pass over the heap reads every page (free, dead and overhead bytes)
//! and every live tuple (each column's values). What a column's values allow:
//!
//! * **integers** (INT, BIGINT, DECIMAL's scaled integers, DATE's days, whole
//!   DOUBLEs, and strings that are integers or dates written canonically):
//!   the narrowest of 1, 2, 4 or 8 bytes that holds the values as they are,
//!   or as offsets from the smallest (a frame of reference); nothing for a
//!   column with one value;
//! * **timestamps written as text** (`YYYYMMDDHHMMSS`, as Wikipedia's
//!   tables keep them: the paper's own example of 14 bytes that need 4) as
//!   seconds, narrowed the same way;
//! * **DOUBLE** whose values are all exact in 4 bytes;
//! * **dictionary codes** for a column of few distinct values (at most
//!   65,536 and 16 MiB of them tracked): ⌈log2 d⌉ bits a value, plus the
//!   dictionary;
//! * **strings**: CHAR(n)'s padding dropped, a 1-byte length for values
//!   under 256 bytes.
//!
//! The cheapest of these is the suggestion; bytes are counted for the
//! non-NULL values (a NULL takes only its bitmap bit, today and after). The
//! report is what `strata waste` prints; it suggests, it changes nothing.

use std::collections::HashSet;
use std::ops::ControlFlow;

use serde::Serialize;

use crate::db::Table;
use crate::error::Result;
use crate::heap::WRITE_RUN_PAGES;
use crate::page::{HEADER_SIZE, PAGE_SIZE, SLOT_SIZE};
use crate::row::date::timestamp_seconds;
use crate::row::{DataType, Tid, Value, format_date};

/// Distinct values tracked per column before a dictionary is ruled out.
pub const MAX_DICTIONARY: usize = 1 << 16;
/// Bytes of distinct values tracked per column: past this a dictionary is
/// ruled out too (it would not be a small one), and the pass's memory stays
/// bounded whatever the values.
pub const MAX_DICTIONARY_BYTES: u64 = 16 << 20;

/// The waste of one table.
#[derive(Clone, Debug, Serialize)]
pub struct TableWaste {
    pub table: String,
    pub rows: u64,
    pub heap: HeapSpace,
    pub indexes: Vec<IndexSpace>,
    pub columns: Vec<ColumnWaste>,
    /// Bytes the columns' values take as declared, and in their suggested types.
    pub stored_bytes: u64,
    pub tight_bytes: u64,
    /// Bytes they take in the table's physical encodings (`strata compact`;
    /// the declared bytes until a table is compacted).
    pub encoded_bytes: u64,
}

impl TableWaste {
    /// Bytes of the table's heap file.
    pub fn heap_bytes(&self) -> u64 {
        self.heap.pages * PAGE_SIZE as u64
    }

    /// Encoding waste over all columns.
    pub fn encoding_waste(&self) -> u64 {
        self.stored_bytes - self.tight_bytes
    }
}

/// Where the heap's bytes go.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HeapSpace {
    pub pages: u64,
    /// Bytes of live tuples.
    pub tuple_bytes: u64,
    /// Page headers and slot directories.
    pub overhead_bytes: u64,
    /// Contiguous free bytes between the slots and the tuples.
    pub free_bytes: u64,
    /// Bytes of deleted or moved tuples not yet reclaimed.
    pub dead_bytes: u64,
    /// Free bytes of the emptiest and the fullest page.
    pub max_page_free: u64,
    pub min_page_free: u64,
}

impl HeapSpace {
    /// Accounts heap page `v`, whose live tuples take `live` bytes.
    fn add_page(&mut self, v: &crate::page::PageView<'_>, live: u64) {
        self.pages += 1;
        let free = v.free_space() as u64;
        self.free_bytes += free;
        self.max_page_free = self.max_page_free.max(free);
        self.min_page_free = self.min_page_free.min(free);
        let overhead = (HEADER_SIZE + v.n_slots() as usize * SLOT_SIZE) as u64;
        self.overhead_bytes += overhead;
        self.tuple_bytes += live;
        self.dead_bytes += (PAGE_SIZE as u64).saturating_sub(overhead + free + live);
    }

    /// Live tuple bytes over the heap's bytes.
    pub fn fill(&self) -> f64 {
        let total = self.pages * PAGE_SIZE as u64;
        if total == 0 {
            0.0
        } else {
            self.tuple_bytes as f64 / total as f64
        }
    }
}

/// An index's pages and how full its leaves are.
#[derive(Clone, Debug, Serialize)]
pub struct IndexSpace {
    pub name: String,
    pub leaf_pages: u64,
    pub internal_pages: u64,
    /// Used share of a leaf (header, slots and entries over the page).
    pub leaf_fill: f64,
    /// Unused bytes of the leaves.
    pub leaf_free_bytes: u64,
}

/// One column's encoding waste.
#[derive(Clone, Debug, Serialize)]
pub struct ColumnWaste {
    pub column: String,
    pub declared: String,
    pub nulls: u64,
    pub values: u64,
    /// Bytes its non-NULL values take as declared.
    pub stored_bytes: u64,
    /// The narrowest SQL type that holds every value (what MySQL's
    /// `PROCEDURE ANALYSE` suggested): `INT8`..`INT64`, `FLOAT32`, `DATE`,
    /// `BOOL`, `DECIMAL(p,s)`, `CHAR(n)` or `VARCHAR(n)`.
    pub tightest_type: String,
    /// How the column is stored now (`encoding.rs`), and its values' bytes so.
    pub encoding: String,
    pub encoded_bytes: u64,
    /// The cheapest encoding found, and the bytes it would take.
    pub suggestion: Suggestion,
    pub tight_bytes: u64,
    /// What the values showed: their range, distinct count, longest string.
    pub facts: Facts,
}

impl ColumnWaste {
    pub fn wasted_bytes(&self) -> u64 {
        self.stored_bytes - self.tight_bytes
    }
}

/// An encoding for a column's values.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Suggestion {
    /// The declared type is already the tightest.
    Keep,
    /// Every value is the same: nothing a row.
    Constant,
    /// Integers in `bytes` bytes each (1, 2, 4 or 8), as they are
    /// (`offset` 0) or minus `offset` (a frame of reference).
    Integer { bytes: u32, offset: i64 },
    /// 4-byte floating point.
    Float32,
    /// Text timestamps as seconds since 1970 in `bytes` bytes, minus
    /// `offset`.
    Timestamp { bytes: u32, offset: i64 },
    /// Codes of `bits` bits into a dictionary of `distinct` values.
    Dictionary { bits: u32, distinct: u64 },
    /// Strings of at most `max_len` bytes with a `len_bytes`-byte length
    /// (0: all are `max_len` long, a CHAR(max_len)).
    String { max_len: u32, len_bytes: u32 },
}

impl std::fmt::Display for Suggestion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Suggestion::Keep => write!(f, "keep"),
            Suggestion::Constant => write!(f, "constant (no bytes a row)"),
            Suggestion::Integer { bytes, offset: 0 } => write!(f, "INT{}", bytes * 8),
            Suggestion::Integer { bytes, offset } => {
                write!(f, "INT{} + frame of reference {offset}", bytes * 8)
            }
            Suggestion::Float32 => write!(f, "FLOAT32"),
            Suggestion::Timestamp { bytes, offset } => {
                let (days, secs) = (offset.div_euclid(86_400), offset.rem_euclid(86_400));
                write!(
                    f,
                    "INT{} seconds from {} {:02}:{:02}:{:02}",
                    bytes * 8,
                    format_date(days as i32),
                    secs / 3600,
                    secs / 60 % 60,
                    secs % 60
                )
            }
            Suggestion::Dictionary { bits, distinct } => {
                write!(f, "dictionary of {distinct}, {bits}-bit codes")
            }
            Suggestion::String {
                max_len,
                len_bytes: 0,
            } => write!(f, "CHAR({max_len})"),
            Suggestion::String { max_len, .. } => write!(f, "VARCHAR({max_len}), 1-byte length"),
        }
    }
}

/// What a column's values showed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Facts {
    /// Smallest and largest value as integers (days for dates, the scaled
    /// integer for decimals, the number for integer strings), when every
    /// value is one.
    pub int_range: Option<(i64, i64)>,
    /// Distinct values, when at most [`MAX_DICTIONARY`].
    pub distinct: Option<u64>,
    /// Longest and total string bytes (strings only).
    pub max_len: Option<u32>,
    /// The values are strings that are canonical integers, dates or
    /// timestamps.
    pub text_holds: Option<&'static str>,
}

/// Reads the table once and reports its unused space and encoding waste.
pub fn analyze(table: &Table) -> Result<TableWaste> {
    let schema = table.schema();
    let mut cols: Vec<Acc> = schema.columns.iter().map(|c| Acc::new(c.ty)).collect();
    let mut heap = HeapSpace {
        min_page_free: u64::MAX,
        ..HeapSpace::default()
    };
    let layout = table.layout().clone();
    let side = table.side_table();
    let side_cols = table.side_columns();
    let mut rows = 0u64;
    table.heap().scan_pages(WRITE_RUN_PAGES, 2, |_, v| {
        let mut live = 0u64;
        for (slot, t) in v.tuples() {
            live += t.len() as u64;
            rows += 1;
            let tid = Tid::new(v.page_no() as u32, slot);
            let mut row = layout.decode(t, tid);
            // A split table's side columns are in its side rows, and
            // stored in the side table's encodings.
            table.join_side(t, tid, &mut row)?;
            for (i, (acc, value)) in cols.iter_mut().zip(row).enumerate() {
                acc.encoded += match (side, side_cols.iter().position(|&c| c == i)) {
                    (Some(s), Some(j)) => s.layout().field_bytes(j, &value),
                    _ => layout.field_bytes(i, &value),
                } as u64;
                acc.add(&value);
            }
        }
        heap.add_page(&v, live);
        Ok(ControlFlow::Continue(()))
    })?;
    // The side table's pages are the table's too.
    if let Some(s) = side {
        s.heap().scan_pages(WRITE_RUN_PAGES, 2, |_, v| {
            let live = v.tuples().map(|(_, t)| t.len() as u64).sum();
            heap.add_page(&v, live);
            Ok(ControlFlow::Continue(()))
        })?;
    }
    if heap.pages == 0 {
        heap.min_page_free = 0;
    }
    let mut indexes = Vec::new();
    for i in table.indexes() {
        let s = i.btree.stats()?;
        indexes.push(IndexSpace {
            name: i.def.name.clone(),
            leaf_pages: s.leaf_pages,
            internal_pages: s.internal_pages,
            leaf_fill: s.leaf_fill,
            leaf_free_bytes: ((1.0 - s.leaf_fill) * (s.leaf_pages * PAGE_SIZE as u64) as f64)
                .round() as u64,
        });
    }
    let columns: Vec<ColumnWaste> = schema
        .columns
        .iter()
        .zip(cols)
        .enumerate()
        .map(|(i, (c, acc))| {
            let encoding = match (side, side_cols.iter().position(|&c| c == i)) {
                (Some(s), Some(j)) => format!(
                    "side table, {}",
                    s.encodings()
                        .get(j)
                        .map_or("plain".to_string(), |e| e.describe())
                ),
                _ => table
                    .encodings()
                    .get(i)
                    .map_or("plain".to_string(), |e| e.describe()),
            };
            acc.finish(&c.name, c.ty, encoding)
        })
        .collect();
    Ok(TableWaste {
        table: table.name().to_string(),
        rows,
        heap,
        indexes,
        stored_bytes: columns.iter().map(|c| c.stored_bytes).sum(),
        tight_bytes: columns.iter().map(|c| c.tight_bytes).sum(),
        encoded_bytes: columns.iter().map(|c| c.encoded_bytes).sum(),
        columns,
    })
}

/// One column's values as the pass sees them.
struct Acc {
    /// Bytes of the values in the table's physical encoding.
    encoded: u64,
    nulls: u64,
    values: u64,
    stored: u64,
    /// Every value so far is an integer (or reads as one): their range.
    ints: Option<(i64, i64)>,
    all_ints: bool,
    /// Strings: every one so far a canonical integer / a canonical date.
    text_int: bool,
    text_date: bool,
    /// Strings: every one so far a `YYYYMMDDHHMMSS` timestamp, and the
    /// range of their seconds since 1970.
    text_timestamp: bool,
    seconds: Option<(i64, i64)>,
    /// DOUBLE: every value so far exact as an f32.
    f32_exact: bool,
    max_len: u32,
    str_bytes: u64,
    /// Distinct values' encodings, until there are too many.
    distinct: Option<HashSet<Vec<u8>>>,
    /// Scratch for a value's bytes.
    key: Vec<u8>,
    distinct_bytes: u64,
}

impl Acc {
    fn new(ty: DataType) -> Acc {
        let text = matches!(ty, DataType::Char { .. } | DataType::Varchar { .. });
        Acc {
            encoded: 0,
            nulls: 0,
            values: 0,
            stored: 0,
            ints: None,
            all_ints: true,
            text_int: text,
            text_date: text,
            text_timestamp: text,
            seconds: None,
            f32_exact: ty == DataType::Float64,
            max_len: 0,
            str_bytes: 0,
            distinct: Some(HashSet::new()),
            key: Vec::new(),
            distinct_bytes: 0,
        }
    }

    fn int(&mut self, x: i64) {
        self.ints = Some(match self.ints {
            None => (x, x),
            Some((lo, hi)) => (lo.min(x), hi.max(x)),
        });
    }

    fn add(&mut self, v: &Value) {
        // The value's bytes for the distinct set, in a buffer kept between
        // values (a new one is allocated only for a new distinct value).
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        match v {
            Value::Null => {
                self.nulls += 1;
                self.key = key;
                return;
            }
            Value::Int32(x) | Value::Date(x) => {
                self.stored += 4;
                self.int(*x as i64);
                key.extend_from_slice(&x.to_le_bytes());
            }
            Value::Int64(x) | Value::Decimal(x) | Value::Timestamp(x) => {
                self.stored += 8;
                self.int(*x);
                key.extend_from_slice(&x.to_le_bytes());
            }
            Value::Float64(x) => {
                self.stored += 8;
                if x.fract() == 0.0 && x.abs() < 9.0e15 {
                    self.int(*x as i64);
                } else {
                    self.all_ints = false;
                }
                self.f32_exact &= (*x as f32) as f64 == *x || x.is_nan();
                key.extend_from_slice(&x.to_bits().to_le_bytes());
            }
            Value::Bool(b) => {
                self.stored += 1;
                self.all_ints = false;
                key.push(*b as u8);
            }
            Value::Str(s) => {
                // CHAR values are stored padded; the padding is not data.
                let s = s.trim_end_matches(' ');
                self.all_ints = false;
                self.max_len = self.max_len.max(s.len() as u32);
                self.str_bytes += s.len() as u64;
                if self.text_int {
                    match s.parse::<i64>() {
                        Ok(x) if x.to_string() == s => self.int(x),
                        _ => self.text_int = false,
                    }
                }
                if self.text_date {
                    match DataType::Date.parse_value(s) {
                        Ok(Value::Date(d)) if format_date(d) == s => {
                            if !self.text_int {
                                self.int(d as i64);
                            }
                        }
                        _ => self.text_date = false,
                    }
                }
                if self.text_timestamp {
                    match timestamp_seconds(s) {
                        Some(x) => {
                            self.seconds = Some(match self.seconds {
                                None => (x, x),
                                Some((lo, hi)) => (lo.min(x), hi.max(x)),
                            })
                        }
                        None => self.text_timestamp = false,
                    }
                }
                key.extend_from_slice(s.as_bytes());
            }
        }
        self.values += 1;
        if let Some(set) = &mut self.distinct
            && !set.contains(key.as_slice())
        {
            if set.len() == MAX_DICTIONARY
                || self.distinct_bytes + key.len() as u64 > MAX_DICTIONARY_BYTES
            {
                self.distinct = None;
            } else {
                self.distinct_bytes += key.len() as u64;
                set.insert(key.clone());
            }
        }
        self.key = key;
    }

    fn finish(self, name: &str, ty: DataType, encoding: String) -> ColumnWaste {
        let text = matches!(ty, DataType::Char { .. } | DataType::Varchar { .. });
        // Stored bytes of strings: CHAR(n) pads, VARCHAR has a 2-byte length.
        let stored = match ty {
            DataType::Char { len } => self.values * len as u64,
            DataType::Varchar { .. } => self.values * 2 + self.str_bytes,
            _ => self.stored,
        };
        let n = self.values;
        let mut best = (Suggestion::Keep, stored);
        let mut offer = |s: Suggestion, bytes: u64| {
            if bytes < best.1 {
                best = (s, bytes);
            }
        };
        // Text timestamps first: at a tie, seconds say what the values are.
        if let (true, Some((lo, hi))) = (text && self.text_timestamp, self.seconds)
            && let Some(b) = unsigned_bytes((hi as i128 - lo as i128) as u128)
        {
            offer(
                Suggestion::Timestamp {
                    bytes: b,
                    offset: lo,
                },
                n * b as u64 + 8,
            );
        }
        // Integers: the numbers themselves, or strings that are integers or
        // dates (not both: a string of digits is an integer).
        let ints = if text {
            (self.text_int || self.text_date)
                .then_some(self.ints)
                .flatten()
        } else {
            self.all_ints.then_some(self.ints).flatten()
        };
        if let Some((lo, hi)) = ints {
            if lo == hi {
                offer(Suggestion::Constant, 8);
            }
            if let Some(b) = int_bytes(lo, hi) {
                offer(
                    Suggestion::Integer {
                        bytes: b,
                        offset: 0,
                    },
                    n * b as u64,
                );
            }
            let span = (hi as i128 - lo as i128) as u128;
            if let Some(b) = unsigned_bytes(span) {
                offer(
                    Suggestion::Integer {
                        bytes: b,
                        offset: lo,
                    },
                    n * b as u64 + 8,
                );
            }
        }
        if self.f32_exact && n > 0 {
            offer(Suggestion::Float32, n * 4);
        }
        let distinct = self.distinct.as_ref().map(|d| d.len() as u64);
        if let Some(d) = distinct.filter(|&d| d > 1) {
            let bits = 64 - (d - 1).leading_zeros();
            // The dictionary: every value once, with a 2-byte length when
            // the values vary in length.
            let dict = self.distinct_bytes + if text { 2 * d } else { 0 };
            offer(
                Suggestion::Dictionary { bits, distinct: d },
                (n * bits as u64).div_ceil(8) + dict,
            );
        }
        if text && n > 0 {
            let fixed = self.str_bytes == n * self.max_len as u64;
            if fixed {
                offer(
                    Suggestion::String {
                        max_len: self.max_len,
                        len_bytes: 0,
                    },
                    n * self.max_len as u64,
                );
            }
            if self.max_len < 256 {
                offer(
                    Suggestion::String {
                        max_len: self.max_len,
                        len_bytes: 1,
                    },
                    n + self.str_bytes,
                );
            }
        }
        let tightest_type = tightest_type(ty, ints, &self, text);
        let text_holds = if !text {
            None
        } else if self.text_timestamp {
            Some("timestamps")
        } else if self.text_int {
            Some("integers")
        } else if self.text_date {
            Some("dates")
        } else {
            None
        };
        ColumnWaste {
            column: name.to_string(),
            declared: ty.to_string(),
            nulls: self.nulls,
            values: n,
            stored_bytes: stored,
            encoding,
            encoded_bytes: self.encoded,
            tightest_type,
            tight_bytes: best.1,
            suggestion: best.0,
            facts: Facts {
                int_range: ints,
                distinct,
                max_len: text.then_some(self.max_len),
                text_holds,
            },
        }
    }
}

/// A declared type in the report's vocabulary of widths (INT8..INT64,
/// FLOAT32/FLOAT64, BOOL), in which the narrower types it proposes are named.
fn width_name(ty: DataType) -> String {
    match ty {
        DataType::Int32 => "INT32".into(),
        DataType::Int64 => "INT64".into(),
        DataType::Float64 => "FLOAT64".into(),
        DataType::Bool => "BOOL".into(),
        t => t.to_string(),
    }
}

/// The narrowest type of [`ColumnWaste::tightest_type`]; the declared type
/// when there are no values.
fn tightest_type(ty: DataType, ints: Option<(i64, i64)>, acc: &Acc, text: bool) -> String {
    let int_type = |(lo, hi): (i64, i64)| format!("INT{}", int_bytes(lo, hi).unwrap_or(8) * 8);
    if acc.values == 0 {
        return width_name(ty);
    }
    match (ty, ints) {
        (DataType::Int32 | DataType::Int64, Some(r)) => int_type(r),
        (DataType::Decimal { scale, .. }, Some((lo, hi))) => {
            let digits = lo.unsigned_abs().max(hi.unsigned_abs()).to_string().len() as u8;
            format!("DECIMAL({},{scale})", digits.max(scale + 1))
        }
        (DataType::Float64, Some(r)) => int_type(r),
        (DataType::Float64, None) if acc.f32_exact => "FLOAT32".into(),
        (DataType::Char { .. } | DataType::Varchar { .. }, _) if acc.text_timestamp => {
            "TIMESTAMP".into()
        }
        (DataType::Char { .. } | DataType::Varchar { .. }, Some(r)) if acc.text_int => int_type(r),
        (DataType::Char { .. } | DataType::Varchar { .. }, Some(_)) if acc.text_date => {
            "DATE".into()
        }
        _ if text => {
            if acc.str_bytes == acc.values * acc.max_len as u64 {
                format!("CHAR({})", acc.max_len.max(1))
            } else {
                format!("VARCHAR({})", acc.max_len)
            }
        }
        _ => width_name(ty),
    }
}

/// The fewest of 1, 2, 4, 8 bytes holding every integer in `lo..=hi` as a
/// signed integer.
pub fn int_bytes(lo: i64, hi: i64) -> Option<u32> {
    [1u32, 2, 4, 8].into_iter().find(|&b| {
        let bits = b * 8;
        let (min, max) = if bits == 64 {
            (i64::MIN, i64::MAX)
        } else {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        };
        lo >= min && hi <= max
    })
}

/// The fewest of 1, 2, 4, 8 bytes holding `0..=span` unsigned.
pub fn unsigned_bytes(span: u128) -> Option<u32> {
    [1u32, 2, 4, 8]
        .into_iter()
        .find(|&b| span < 1u128 << (b * 8))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{Database, DbOptions, NoProgress, TableOptions};
    use crate::row::Schema;

    /// `YYYYMMDDHHMMSS` of seconds since 1970.
    fn text_timestamp(s: i64) -> String {
        let (d, t) = (s.div_euclid(86_400), s.rem_euclid(86_400));
        format!(
            "{}{:02}{:02}{:02}",
            format_date(d as i32).replace('-', ""),
            t / 3600,
            t / 60 % 60,
            t % 60
        )
    }

    fn table(dir: &std::path::Path, n: i64) -> std::sync::Arc<Table> {
        let db = Database::create(dir, DbOptions::default()).unwrap();
        let schema = Schema::parse(
            "k BIGINT, small INT, d DATE, price DECIMAL(15,2), f DOUBLE, half DOUBLE, \
             flag BOOL, code CHAR(10), num VARCHAR(20), day VARCHAR(10), note VARCHAR(40), \
             maybe INT NULL, one INT, touched CHAR(14)",
        )
        .unwrap();
        let mut load = db
            .begin_create_load("t", schema, TableOptions::default(), vec![])
            .unwrap();
        for i in 0..n {
            load.append(&[
                Value::Int64(i),
                Value::Int32((i % 10) as i32),
                Value::Date(40_000 + (i % 3000) as i32),
                Value::Decimal(i % 1000),
                Value::Float64(i as f64 * 0.1),
                Value::Float64(i as f64 * 0.5),
                Value::Bool(i % 3 == 0),
                Value::Str(["A", "BB", "C"][(i % 3) as usize].into()),
                Value::Str((i * 7).to_string()),
                Value::Str(format_date(9_000 + (i % 400) as i32)),
                Value::Str(format!("note {i} {}", "x".repeat((i % 17) as usize))),
                if i % 4 == 0 {
                    Value::Null
                } else {
                    Value::Int32(-(i as i32))
                },
                Value::Int32(7),
                Value::Str(text_timestamp(1_704_069_000 + i * 997)),
            ])
            .unwrap();
        }
        load.commit(&NoProgress).unwrap();
        db.table("t").unwrap()
    }

    #[test]
    fn each_column_gets_its_tightest_type_and_cheapest_encoding() {
        let dir = tempfile::tempdir().unwrap();
        let n = 20_000;
        let t = table(dir.path(), n);
        let w = analyze(&t).unwrap();
        assert_eq!(w.rows, n as u64);
        let col = |name: &str| w.columns.iter().find(|c| c.column == name).unwrap();
        let n = n as u64;

        let k = col("k");
        assert_eq!(k.tightest_type, "INT16");
        assert_eq!(k.stored_bytes, 8 * n);
        assert_eq!(
            k.suggestion,
            Suggestion::Integer {
                bytes: 2,
                offset: 0
            }
        );
        assert_eq!(k.tight_bytes, 2 * n);
        assert_eq!(k.facts.int_range, Some((0, 19_999)));

        // Ten values: 4-bit codes beat a byte each.
        let small = col("small");
        assert_eq!(small.tightest_type, "INT8");
        assert_eq!(
            small.suggestion,
            Suggestion::Dictionary {
                bits: 4,
                distinct: 10
            }
        );
        assert_eq!(small.tight_bytes, (n * 4).div_ceil(8) + 40);

        // 3000 days from day 40000 (past INT16): two bytes from the first day.
        let d = col("d");
        assert_eq!(d.tightest_type, "DATE");
        assert_eq!(
            d.suggestion,
            Suggestion::Integer {
                bytes: 2,
                offset: 40_000
            }
        );
        assert_eq!(d.tight_bytes, 2 * n + 8);

        assert_eq!(col("price").tightest_type, "DECIMAL(3,2)");
        assert_eq!(
            col("price").suggestion,
            Suggestion::Dictionary {
                bits: 10,
                distinct: 1000
            }
        );
        // Tenths are not exact in an f32; halves are.
        assert_eq!(col("f").tightest_type, "FLOAT64");
        assert_eq!(col("f").suggestion, Suggestion::Keep);
        assert_eq!(col("half").tightest_type, "FLOAT32");
        assert_eq!(col("flag").tightest_type, "BOOL");
        assert_eq!(
            col("flag").suggestion,
            Suggestion::Dictionary {
                bits: 1,
                distinct: 2
            }
        );

        let code = col("code");
        assert_eq!(code.tightest_type, "VARCHAR(2)");
        assert_eq!(code.stored_bytes, 10 * n);
        assert_eq!(
            code.suggestion,
            Suggestion::Dictionary {
                bits: 2,
                distinct: 3
            }
        );
        assert_eq!(code.facts.max_len, Some(2));

        let num = col("num");
        assert_eq!(num.facts.text_holds, Some("integers"));
        assert_eq!(num.tightest_type, "INT32");
        assert_eq!(
            num.suggestion,
            Suggestion::Integer {
                bytes: 4,
                offset: 0
            }
        );
        let day = col("day");
        assert_eq!(day.facts.text_holds, Some("dates"));
        assert_eq!(day.tightest_type, "DATE");
        assert_eq!(
            day.suggestion,
            Suggestion::Dictionary {
                bits: 9,
                distinct: 400
            }
        );

        // Distinct free text: only the length prefix shrinks.
        let note = col("note");
        assert_eq!(note.facts.distinct, Some(n));
        assert!(matches!(
            note.suggestion,
            Suggestion::String { len_bytes: 1, .. }
        ));
        assert_eq!(note.stored_bytes - note.tight_bytes, n);

        // NULLs take no bytes, before or after.
        let maybe = col("maybe");
        assert_eq!(maybe.nulls, n / 4);
        assert_eq!(maybe.values, n - n / 4);
        assert_eq!(maybe.stored_bytes, 4 * maybe.values);
        assert_eq!(maybe.tightest_type, "INT16");
        assert_eq!(col("one").suggestion, Suggestion::Constant);
        // The paper's example: a 14-byte text timestamp in 4 bytes.
        let touched = col("touched");
        assert_eq!(touched.facts.text_holds, Some("timestamps"));
        assert_eq!(touched.tightest_type, "TIMESTAMP");
        let from = timestamp_seconds("20240101003000").unwrap();
        assert_eq!(text_timestamp(from), "20240101003000");
        assert_eq!(
            touched.suggestion,
            Suggestion::Timestamp {
                bytes: 4,
                offset: from
            }
        );
        assert_eq!(
            touched.suggestion.to_string(),
            "INT32 seconds from 2024-01-01 00:30:00"
        );
        assert_eq!(touched.tight_bytes, 4 * n + 8);

        assert_eq!(
            w.stored_bytes,
            w.columns.iter().map(|c| c.stored_bytes).sum::<u64>()
        );
        assert!(w.encoding_waste() > 0);
        // Every heap byte is a tuple's, overhead, free or dead.
        let h = &w.heap;
        assert_eq!(
            h.tuple_bytes + h.overhead_bytes + h.free_bytes + h.dead_bytes,
            w.heap_bytes()
        );
        assert_eq!(h.dead_bytes, 0);
    }

    #[test]
    fn deleted_tuples_count_as_dead_bytes_and_an_empty_table_has_no_waste() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), 1000);
        let mut gone = 0;
        let mut tids = Vec::new();
        t.heap()
            .scan(|tid, b| {
                if tid.page == 0 && tids.len() < 10 {
                    gone += b.len() as u64;
                    tids.push(tid);
                }
                Ok(())
            })
            .unwrap();
        t.heap().delete_many(&tids).unwrap();
        let w = analyze(&t).unwrap();
        assert_eq!(w.rows, 990);
        assert_eq!(w.heap.dead_bytes, gone);

        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), 0);
        let w = analyze(&t).unwrap();
        assert_eq!((w.rows, w.stored_bytes, w.tight_bytes), (0, 0, 0));
        assert!(w.columns.iter().all(|c| c.suggestion == Suggestion::Keep));
    }

    #[test]
    fn text_timestamps_are_read_only_when_valid() {
        assert_eq!(timestamp_seconds("19700101000000"), Some(0));
        assert_eq!(timestamp_seconds("19700102000001"), Some(86_401));
        assert_eq!(
            timestamp_seconds("20240229235959").map(|s| s % 86_400),
            Some(86_399)
        );
        for bad in [
            "20230229000000",
            "20241301000000",
            "20240101240000",
            "20240101006000",
            "2024010100000",
            "202401010000000",
            "2024-01-01 00:00",
            "2024010100000x",
            "",
        ] {
            assert_eq!(timestamp_seconds(bad), None, "{bad}");
        }
    }

    #[test]
    fn long_distinct_values_stop_being_tracked_past_the_byte_cap() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), DbOptions::default()).unwrap();
        let schema = Schema::parse("k INT, long VARCHAR(4000)").unwrap();
        let mut load = db
            .begin_create_load("wide", schema, TableOptions::default(), vec![])
            .unwrap();
        let n = (MAX_DICTIONARY_BYTES / 4000 + 100) as i32;
        for i in 0..n {
            let mut s = format!("{i:08}");
            s.push_str(&"y".repeat(3992));
            load.append(&[Value::Int32(i), Value::Str(s)]).unwrap();
        }
        load.commit(&NoProgress).unwrap();
        let w = analyze(&db.table("wide").unwrap()).unwrap();
        let long = &w.columns[1];
        assert_eq!(long.facts.distinct, None);
        assert_eq!(long.facts.max_len, Some(4000));
        assert_eq!(w.columns[0].facts.distinct, Some(n as u64));
    }
}
