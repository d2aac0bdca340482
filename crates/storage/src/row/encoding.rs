//! Types as hints (No Bits Left Behind §4.1): a table's declared types stay its
//! logical types, while each column may be stored in a narrower physical
//! encoding that its data allows.
//!
//! * [`Encoding::Offset`]: an integer, DATE or DECIMAL column stored as
//!   `value - base` in `width` bytes (a frame of reference);
//! * [`Encoding::Dict`]: a CHAR or VARCHAR column with few distinct values
//!   stored as a `width`-byte code into a dictionary kept in the catalog;
//! * [`Encoding::Short`]: a CHAR stored without its padding, or a VARCHAR of at
//!   most 255 bytes with a one-byte length instead of two;
//! * [`Encoding::Timestamp`]: text timestamps `YYYYMMDDHHMMSS` (Wikipedia's
//!   14-byte strings, the paper's example) as seconds from a base.
//! * [`Encoding::Address`]: a *semantic id* (§4.2): a BIGINT surrogate key
//!   whose values only need to be unique is not stored at all; the tuple's
//!   address stands in (`page · 2^16 + slot`, [`address_of`]). Only `strata
//!   compact --semantic-id` sets it, since it replaces the column's values.
//! * [`Encoding::Side`]: the column lives in the table's *side table*
//!   (vertical partitioning, §3.2, `split.rs`); the main row keeps only a
//!   pointer to the side row, in the place of the first such column.
//!
//! The encodings are chosen from the data ([`choose`]) by `strata compact`
//! and `strata load --compact`, which rewrite the table in them.
//!
//! **Widening.** A value an encoding cannot hold (outside the frame, not in
//! the dictionary) never fails an insert or an update: the column's code is
//! the all-ones *escape* and the value follows, in its declared (plain)
//! encoding, after the row's encoded columns — a per-value widening, as in
//! patched frame-of-reference column stores. Reads decode it like any other
//! value. The next `strata compact` chooses the encodings again from what the
//! table then holds, so a column whose values outgrew its encoding widens for
//! good, in one crash-safe rewrite (a new heap and indexes, then the catalog
//! swap, as a load).
//!
//! Row format of an encoded table (see `layout.rs` for the plain one): the null
//! bitmap, then each non-NULL column in its encoding, then the escaped values
//! in plain encoding, in column order. Columns whose encoded width is fixed keep
//! fixed offsets, so predicates on plain columns still read in place.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::key::Tid;
use super::value::{DataType, Schema, Value};
use crate::page::MAX_TUPLE;

/// How one column is stored (the catalog keeps one per column; absent: all
/// [`Encoding::Plain`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Encoding {
    /// As declared (`layout.rs`).
    Plain,
    /// `value - base` as an unsigned `width`-byte integer; the all-ones code
    /// escapes a value outside the frame.
    Offset { base: i64, width: u8 },
    /// A `width`-byte index into `values`; the all-ones code escapes a value
    /// not in the dictionary. CHAR values are kept without their padding.
    Dict { width: u8, values: Vec<String> },
    /// A one-byte length then the bytes (CHAR: without the padding).
    Short,
    /// Text timestamps `YYYYMMDDHHMMSS` (Wikipedia's 14-byte strings, the
    /// paper's example) as seconds since 1970 minus `base`, in `width`
    /// bytes; a value not in that exact form is escaped.
    Timestamp { base: i64, width: u8 },
    /// Not stored: the value is the tuple's address ([`address_of`]), so it
    /// changes when the tuple moves (an update that relocates it, clustering,
    /// compaction). A semantic id (No Bits Left Behind §4.2).
    Address,
    /// Stored in the table's side table (vertical partitioning, No Bits Left
    /// Behind §3.2; `split.rs`), in that table's own encoding. The main row
    /// holds, in the place of the first side column, the side row's tuple id
    /// (6 bytes); the other side columns take no bytes there.
    Side,
}

/// Bytes of the side row's tuple id in a main row ([`Encoding::Side`]).
pub const SIDE_POINTER: usize = 6;

/// The semantic id of the tuple at `tid` ([`Encoding::Address`]):
/// `page · 2^16 + slot`, so ids order like tuple ids and a range of ids is a
/// range of heap pages.
pub fn address_of(tid: Tid) -> i64 {
    ((tid.page as i64) << 16) | tid.slot as i64
}

/// The tuple id whose semantic id is `x`, if `x` is one.
pub fn tid_of_address(x: i64) -> Option<Tid> {
    let page = u32::try_from(x >> 16).ok()?;
    (x >= 0).then(|| Tid::new(page, (x & 0xFFFF) as u16))
}

impl Encoding {
    /// Whether this encoding can store a column of type `ty`, and why not.
    pub fn check(&self, ty: &DataType) -> Result<(), String> {
        let int_width = int_width(ty);
        match self {
            Encoding::Plain => Ok(()),
            Encoding::Offset { width, .. } => match int_width {
                Some(w) if (1..w as u8).contains(width) => Ok(()),
                Some(w) => Err(format!(
                    "a frame of reference of {width} bytes for a {ty} column ({w} bytes)"
                )),
                None => Err(format!("a frame of reference for a {ty} column")),
            },
            Encoding::Dict { width, values } => {
                if !is_text(ty) {
                    return Err(format!("a dictionary for a {ty} column"));
                }
                if !(1..=2).contains(width) || values.len() as u64 >= escape(*width as usize) {
                    return Err(format!(
                        "a dictionary of {} values with {width}-byte codes",
                        values.len()
                    ));
                }
                for v in values {
                    ty.check(&Value::Str(v.clone()))?;
                }
                Ok(())
            }
            Encoding::Short => match ty {
                DataType::Char { len } | DataType::Varchar { len } if *len <= 255 => Ok(()),
                _ => Err(format!("a one-byte length for a {ty} column")),
            },
            Encoding::Timestamp { width, .. } => match ty {
                DataType::Char { len } | DataType::Varchar { len }
                    if *len >= 14 && (1..=8).contains(width) =>
                {
                    Ok(())
                }
                _ => Err(format!("{width}-byte text timestamps in a {ty} column")),
            },
            Encoding::Address => match ty {
                DataType::Int64 => Ok(()),
                _ => Err(format!(
                    "a semantic id (the tuple's address) in a {ty} column: it needs BIGINT"
                )),
            },
            Encoding::Side => Ok(()),
        }
    }

    /// A short description for reports (`strata compact`, `strata info`).
    pub fn describe(&self) -> String {
        match self {
            Encoding::Plain => "plain".into(),
            Encoding::Offset { base, width } => format!("{width}-byte offset from {base}"),
            Encoding::Dict { width, values } => {
                format!("dictionary of {}, {width}-byte codes", values.len())
            }
            Encoding::Short => "1-byte length, no padding".into(),
            Encoding::Timestamp { base, width } => {
                format!("{width}-byte timestamp from {}", format_timestamp(*base))
            }
            Encoding::Address => "semantic id: the tuple's address, not stored".into(),
            Encoding::Side => "in the side table (vertical partition)".into(),
        }
    }
}

/// Width of a plain integer-like column (INT, BIGINT, DATE, DECIMAL).
fn int_width(ty: &DataType) -> Option<usize> {
    match ty {
        DataType::Int32 | DataType::Date => Some(4),
        DataType::Int64 | DataType::Decimal { .. } => Some(8),
        _ => None,
    }
}

fn is_text(ty: &DataType) -> bool {
    matches!(ty, DataType::Char { .. } | DataType::Varchar { .. })
}

/// The escape code of a `width`-byte code: all ones.
fn escape(width: usize) -> u64 {
    if width >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * width)) - 1
    }
}

/// A column's encoding ready for use (dictionary lookups hashed).
#[derive(Clone, Debug)]
pub(crate) enum Phys {
    Plain,
    Offset {
        base: i64,
        width: usize,
        escape: u64,
    },
    Dict {
        width: usize,
        escape: u64,
        values: Vec<String>,
        codes: HashMap<String, u64>,
        trim: bool,
    },
    Short {
        trim: bool,
    },
    Timestamp {
        base: i64,
        width: usize,
        escape: u64,
        trim: bool,
    },
    Address,
    /// In the side table; `pointer`: this column's place in the main row
    /// holds the side row's tuple id.
    Side {
        pointer: bool,
    },
}

impl Phys {
    pub(crate) fn new(e: &Encoding, ty: &DataType) -> Phys {
        let trim = matches!(ty, DataType::Char { .. });
        match e {
            Encoding::Plain => Phys::Plain,
            Encoding::Offset { base, width } => Phys::Offset {
                base: *base,
                width: *width as usize,
                escape: escape(*width as usize),
            },
            Encoding::Dict { width, values } => Phys::Dict {
                width: *width as usize,
                escape: escape(*width as usize),
                codes: values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (v.clone(), i as u64))
                    .collect(),
                values: values.clone(),
                trim,
            },
            Encoding::Short => Phys::Short { trim },
            Encoding::Timestamp { base, width } => Phys::Timestamp {
                base: *base,
                width: *width as usize,
                escape: escape(*width as usize),
                trim,
            },
            Encoding::Address => Phys::Address,
            // The layout marks the first side column as the pointer's place.
            Encoding::Side => Phys::Side { pointer: false },
        }
    }

    /// Bytes this column takes in a main row when it is in the side table.
    fn side_width(pointer: bool) -> usize {
        if pointer { SIDE_POINTER } else { 0 }
    }

    /// The code of `v` when the encoding holds it (None: escape it).
    /// Only for `Offset` and `Dict`.
    pub(crate) fn code(&self, v: &Value) -> Option<u64> {
        match self {
            Phys::Offset { base, escape, .. } => {
                let x = v.as_i64()?;
                let d = x as i128 - *base as i128;
                (0..*escape as i128).contains(&d).then_some(d as u64)
            }
            Phys::Dict { codes, trim, .. } => match v {
                Value::Str(s) => {
                    let s = if *trim { s.trim_end_matches(' ') } else { s };
                    codes.get(s).copied()
                }
                _ => None,
            },
            Phys::Timestamp {
                base, escape, trim, ..
            } => match v {
                Value::Str(s) => {
                    let x = timestamp_of(if *trim { s.trim_end_matches(' ') } else { s })?;
                    let d = x as i128 - *base as i128;
                    (0..*escape as i128).contains(&d).then_some(d as u64)
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// Bytes of the column's field in the row's encoded part, from its first
    /// byte; `None` if `b` is too short to tell.
    pub(crate) fn width(&self, ty: &DataType, b: &[u8]) -> Option<usize> {
        match self {
            Phys::Plain => match ty.fixed_width() {
                Some(w) => Some(w),
                None => Some(2 + u16::from_le_bytes([*b.first()?, *b.get(1)?]) as usize),
            },
            Phys::Offset { width, .. }
            | Phys::Dict { width, .. }
            | Phys::Timestamp { width, .. } => Some(*width),
            Phys::Short { .. } => Some(1 + *b.first()? as usize),
            Phys::Address => Some(0),
            Phys::Side { pointer } => Some(Phys::side_width(*pointer)),
        }
    }

    /// Width of the field when it is the same for every row.
    pub(crate) fn fixed_width(&self, ty: &DataType) -> Option<usize> {
        match self {
            Phys::Plain => ty.fixed_width(),
            Phys::Offset { width, .. }
            | Phys::Dict { width, .. }
            | Phys::Timestamp { width, .. } => Some(*width),
            Phys::Short { .. } => None,
            Phys::Address => Some(0),
            Phys::Side { pointer } => Some(Phys::side_width(*pointer)),
        }
    }

    /// The escape code, for encodings that have one.
    pub(crate) fn escape(&self) -> Option<u64> {
        match self {
            Phys::Offset { escape, .. }
            | Phys::Dict { escape, .. }
            | Phys::Timestamp { escape, .. } => Some(*escape),
            _ => None,
        }
    }
}

/// A column's encoding as the hot loops read it (small and `Copy`; the
/// dictionaries' strings stay in [`Phys`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Col {
    /// Plain, fixed width.
    Fixed(usize),
    /// Plain VARCHAR: a 2-byte length and the bytes.
    Var,
    /// A `width`-byte code: the value minus `base` (`dict`: false) or a
    /// dictionary index. `plain`: the escaped value's width (`None`: a
    /// VARCHAR's 2-byte length and bytes). Codes below `valid` name a value
    /// (a dictionary's size; every code below the escape for the others).
    Code {
        width: usize,
        base: i64,
        escape: u64,
        valid: u64,
        kind: CodeKind,
        plain: Option<usize>,
    },
    /// A 1-byte length and the bytes.
    Short,
    /// Nothing: the tuple's address ([`Encoding::Address`]).
    Address,
    /// In the side table ([`Encoding::Side`]); `true`: the 6-byte pointer to
    /// the side row is here, else nothing.
    Side(bool),
}

impl Col {
    pub(crate) fn new(p: &Phys, ty: &DataType) -> Col {
        let (base, kind) = match p {
            Phys::Plain => {
                return match ty.fixed_width() {
                    Some(w) => Col::Fixed(w),
                    None => Col::Var,
                };
            }
            Phys::Short { .. } => return Col::Short,
            Phys::Address => return Col::Address,
            Phys::Side { pointer } => return Col::Side(*pointer),
            Phys::Offset { base, .. } => (*base, CodeKind::Int),
            Phys::Dict { .. } => (0, CodeKind::Dict),
            Phys::Timestamp { base, .. } => (*base, CodeKind::Stamp),
        };
        let escape = p.escape().expect("codes have an escape");
        Col::Code {
            width: p.fixed_width(ty).expect("codes have a width"),
            base,
            escape,
            valid: match p {
                Phys::Dict { values, .. } => values.len() as u64,
                _ => escape,
            },
            kind,
            plain: ty.fixed_width(),
        }
    }
}

/// One step of the per-page shape walk of a NOT NULL encoded layout
/// ([`runs`]): fixed-width columns back to back are one run, checked for
/// escapes by their codes' places in it.
#[derive(Clone, Debug)]
pub(crate) enum Step {
    Run {
        len: usize,
        /// The run's codes grouped by width (the walk reads each group with
        /// its width fixed rather than choosing a width per code).
        codes: Vec<(usize, Vec<RunCode>)>,
    },
    Var,
    Short,
}

/// A code of a [`Step::Run`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunCode {
    /// Where it starts in the run.
    at: usize,
    escape: u64,
    /// Codes below this name a value ([`Col::Code`]).
    valid: u64,
    /// The escaped value's width (`None`: a VARCHAR's 2-byte length and
    /// bytes).
    plain: Option<usize>,
}

/// The escaped values among `codes`, all `W` bytes wide, of `run`: their
/// fixed widths added to `fixed`, the variable ones counted in `var`. False
/// if a code is neither a value's nor the escape (a dictionary index past
/// its end).
#[inline(always)]
pub(crate) fn escaped_in<const W: usize>(
    run: &[u8],
    codes: &[RunCode],
    fixed: &mut usize,
    var: &mut usize,
) -> bool {
    let mut bad = false;
    for c in codes {
        let mut b = [0u8; 8];
        b[..W].copy_from_slice(&run[c.at..c.at + W]);
        bad |= !tail_of(
            u64::from_le_bytes(b),
            c.escape,
            c.valid,
            c.plain,
            fixed,
            var,
        );
    }
    !bad
}

/// What a code read in a row means for the row's length: an escaped value's
/// tail (its fixed width added to `fixed`, a VARCHAR counted in `var`), or
/// nothing. False for a code that is neither a value's nor the escape (a
/// dictionary index past its end). The escape is the largest code, so the
/// common case is one comparison.
#[inline(always)]
pub(crate) fn tail_of(
    code: u64,
    escape: u64,
    valid: u64,
    plain: Option<usize>,
    fixed: &mut usize,
    var: &mut usize,
) -> bool {
    if code < valid {
        return true;
    }
    if code != escape {
        return false;
    }
    match plain {
        Some(p) => *fixed += p,
        None => *var += 1,
    }
    true
}

/// The shape walk of a row of layout `plan` without NULLs.
pub(crate) fn runs(plan: &[Col]) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    for c in plan {
        let (w, code) = match *c {
            Col::Fixed(w) => (w, None),
            Col::Code {
                width,
                escape,
                valid,
                plain,
                ..
            } => (width, Some((width, escape, valid, plain))),
            Col::Var => {
                steps.push(Step::Var);
                continue;
            }
            Col::Short => {
                steps.push(Step::Short);
                continue;
            }
            Col::Address | Col::Side(false) => continue,
            Col::Side(true) => (SIDE_POINTER, None),
        };
        if !matches!(steps.last(), Some(Step::Run { .. })) {
            steps.push(Step::Run {
                len: 0,
                codes: vec![],
            });
        }
        if let Some(Step::Run { len, codes }) = steps.last_mut() {
            if let Some((width, escape, valid, plain)) = code {
                let c = RunCode {
                    at: *len,
                    escape,
                    valid,
                    plain,
                };
                match codes.iter_mut().find(|g| g.0 == width) {
                    Some(g) => g.1.push(c),
                    None => codes.push((width, vec![c])),
                }
            }
            *len += w;
        }
    }
    steps
}

/// What a code stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CodeKind {
    /// An integer: base + code.
    Int,
    /// A dictionary index.
    Dict,
    /// A text timestamp: base + code seconds since 1970.
    Stamp,
}

/// The `width`-byte little-endian code at `b[pos..]`.
#[inline(always)]
pub(crate) fn read_code(b: &[u8], pos: usize, width: usize) -> u64 {
    match width {
        1 => b[pos] as u64,
        2 => u16::from_le_bytes([b[pos], b[pos + 1]]) as u64,
        3 => u32::from_le_bytes([b[pos], b[pos + 1], b[pos + 2], 0]) as u64,
        4 => u32::from_le_bytes(b[pos..pos + 4].try_into().unwrap()) as u64,
        w => get_uint(&b[pos..], w),
    }
}

/// The seconds since 1970 of a text timestamp in exactly the form
/// `YYYYMMDDHHMMSS`, so that formatting them gives the text back (a CHAR's
/// padding is the caller's to drop: a VARCHAR's trailing spaces are data).
pub(crate) fn timestamp_of(s: &str) -> Option<i64> {
    let x = super::date::timestamp_seconds(s)?;
    (format_timestamp(x) == s).then_some(x)
}

/// `YYYYMMDDHHMMSS` of seconds since 1970.
pub fn format_timestamp(x: i64) -> String {
    let (days, secs) = (x.div_euclid(86_400), x.rem_euclid(86_400));
    let (y, m, d) = super::date::civil_from_days(days as i32);
    format!(
        "{y:04}{m:02}{d:02}{:02}{:02}{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Reads a little-endian unsigned integer of `w` bytes.
pub(crate) fn get_uint(b: &[u8], w: usize) -> u64 {
    let mut a = [0u8; 8];
    a[..w].copy_from_slice(&b[..w]);
    u64::from_le_bytes(a)
}

/// Appends `x` as a little-endian unsigned integer of `w` bytes.
pub(crate) fn put_uint(out: &mut Vec<u8>, x: u64, w: usize) {
    out.extend_from_slice(&x.to_le_bytes()[..w]);
}

/// The value of integer-like type `ty` whose number is `x`.
pub(crate) fn int_value(ty: &DataType, x: i64) -> Value {
    match ty {
        DataType::Int32 => Value::Int32(x as i32),
        DataType::Date => Value::Date(x as i32),
        DataType::Decimal { .. } => Value::Decimal(x),
        DataType::Timestamp => Value::Timestamp(x),
        _ => Value::Int64(x),
    }
}

/// What [`choose`] may use.
#[derive(Clone, Copy, Debug)]
pub struct ChooseOptions {
    /// Dictionaries for low-cardinality text.
    pub dictionary: bool,
}

impl Default for ChooseOptions {
    fn default() -> Self {
        ChooseOptions { dictionary: true }
    }
}

/// Largest dictionary: 2-byte codes, one code kept for the escape.
const MAX_DICT: usize = 65_535;
/// Bytes of dictionary strings the catalog keeps for one column at most.
const MAX_DICT_BYTES: usize = 1 << 20;

/// One column's values, as [`choose`] sees them.
pub struct ColumnSample {
    ty: DataType,
    range: Option<(i64, i64)>,
    values: u64,
    /// Bytes of the values without CHAR padding.
    text_bytes: u64,
    distinct: Option<HashSet<String>>,
    distinct_bytes: usize,
    /// Text: every value so far a canonical timestamp, and their range.
    stamps: Option<(i64, i64)>,
    all_stamps: bool,
}

impl ColumnSample {
    pub fn new(ty: DataType) -> ColumnSample {
        ColumnSample {
            ty,
            range: None,
            values: 0,
            text_bytes: 0,
            distinct: is_text(&ty).then(HashSet::new),
            distinct_bytes: 0,
            stamps: None,
            all_stamps: is_text(&ty),
        }
    }

    pub fn add(&mut self, v: &Value) {
        if v.is_null() {
            return;
        }
        self.values += 1;
        if let Some(x) = v.as_i64()
            && int_width(&self.ty).is_some()
        {
            self.range = Some(match self.range {
                None => (x, x),
                Some((lo, hi)) => (lo.min(x), hi.max(x)),
            });
        }
        if let Value::Str(s) = v {
            let s = if matches!(self.ty, DataType::Char { .. }) {
                s.trim_end_matches(' ')
            } else {
                s
            };
            self.text_bytes += s.len() as u64;
            if self.all_stamps {
                match timestamp_of(s) {
                    Some(x) => {
                        self.stamps = Some(match self.stamps {
                            None => (x, x),
                            Some((lo, hi)) => (lo.min(x), hi.max(x)),
                        })
                    }
                    None => self.all_stamps = false,
                }
            }
            if let Some(set) = &mut self.distinct
                && !set.contains(s)
            {
                if set.len() == MAX_DICT - 1 || self.distinct_bytes + s.len() > MAX_DICT_BYTES {
                    self.distinct = None;
                } else {
                    self.distinct_bytes += s.len();
                    set.insert(s.to_string());
                }
            }
        }
    }

    /// The encoding that stores these values in the fewest bytes (plain
    /// when nothing is narrower), and its bytes per value.
    fn best(&self, opts: &ChooseOptions) -> Encoding {
        let plain = match self.ty {
            DataType::Varchar { .. } => 2.0 + self.avg_len(),
            t => t.fixed_width().unwrap_or(0) as f64,
        };
        let mut best = (plain, Encoding::Plain);
        if let (Some(w), Some((lo, hi))) = (int_width(&self.ty), self.range) {
            let span = (hi as i128 - lo as i128) as u128;
            // The smallest width whose codes below the escape cover the span.
            if let Some(width) = (1..w).find(|&b| span < escape(b) as u128) {
                best = (
                    width as f64,
                    Encoding::Offset {
                        base: lo,
                        width: width as u8,
                    },
                );
            }
        }
        if let DataType::Char { len } | DataType::Varchar { len } = self.ty {
            if let (true, Some((lo, hi)), true) = (self.all_stamps, self.stamps, len >= 14) {
                let span = (hi as i128 - lo as i128) as u128;
                if let Some(width) = (1..=8).find(|&b| span < escape(b) as u128)
                    && (width as f64) < best.0
                {
                    best = (
                        width as f64,
                        Encoding::Timestamp {
                            base: lo,
                            width: width as u8,
                        },
                    );
                }
            }
            if len <= 255 && 1.0 + self.avg_len() < best.0 {
                best = (1.0 + self.avg_len(), Encoding::Short);
            }
            if opts.dictionary
                && let Some(set) = &self.distinct
            {
                let width = if set.len() < escape(1) as usize { 1 } else { 2 };
                // The dictionary lives in the catalog: count it, spread over the rows.
                let per_row = width as f64 + self.distinct_bytes as f64 / self.values.max(1) as f64;
                if per_row < best.0 && !set.is_empty() {
                    let mut values: Vec<String> = set.iter().cloned().collect();
                    values.sort();
                    best = (
                        per_row,
                        Encoding::Dict {
                            width: width as u8,
                            values,
                        },
                    );
                }
            }
        }
        best.1
    }

    fn avg_len(&self) -> f64 {
        self.text_bytes as f64 / self.values.max(1) as f64
    }
}

/// Chooses each column's encoding from samples of all of its values, so that
/// every value fits (none is escaped). A column stays plain when no encoding
/// is narrower, and the widest row the encodings allow (every value escaped)
/// must still fit a page: columns go back to plain, widest first, until it does.
pub fn choose(schema: &Schema, samples: &[ColumnSample], opts: &ChooseOptions) -> Vec<Encoding> {
    let mut out: Vec<Encoding> = samples.iter().map(|s| s.best(opts)).collect();
    let phys: Vec<Phys> = out
        .iter()
        .zip(&schema.columns)
        .map(|(e, c)| Phys::new(e, &c.ty))
        .collect();
    let extra: Vec<usize> = phys
        .iter()
        .map(|p| match p {
            Phys::Offset { width, .. }
            | Phys::Dict { width, .. }
            | Phys::Timestamp { width, .. } => *width,
            // A CHAR's length byte; a VARCHAR's is one less than plain.
            Phys::Short { trim } => *trim as usize,
            Phys::Plain | Phys::Address | Phys::Side { .. } => 0,
        })
        .collect();
    let mut worst = schema.max_row_size() + extra.iter().sum::<usize>();
    while worst > MAX_TUPLE {
        let Some(i) = (0..out.len())
            .filter(|&i| extra[i] > 0 && out[i] != Encoding::Plain)
            .max_by_key(|&i| extra[i])
        else {
            break;
        };
        out[i] = Encoding::Plain;
        worst -= extra[i];
    }
    out
}

/// Whether a table with these encodings stores anything other than plain.
pub fn is_plain(encodings: &[Encoding]) -> bool {
    encodings.iter().all(|e| *e == Encoding::Plain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::RowLayout;
    use proptest::prelude::*;

    /// Every encoding, and escapes, read back as the plain layout reads.
    #[test]
    fn every_encoding_round_trips_with_escapes() {
        let schema =
            Schema::parse("t CHAR(14), n INT, s VARCHAR(20), c CHAR(5), d BIGINT").unwrap();
        let encodings = vec![
            Encoding::Timestamp {
                base: timestamp_of("20040101000000").unwrap(),
                width: 4,
            },
            Encoding::Offset { base: 10, width: 1 },
            Encoding::Short,
            Encoding::Dict {
                width: 1,
                values: vec!["a".into(), "b c".into()],
            },
            Encoding::Offset { base: 0, width: 2 },
        ];
        let narrow = RowLayout::encoded(&schema, &encodings).unwrap();
        let plain = RowLayout::new(&schema);
        let rows = [
            ["20100102030405", "10", "x", "a", "1"],
            // Not canonical timestamps, a value below the frame, the value
            // whose code is the escape, a string not in the dictionary.
            ["2010-01-02 03", "9", "", "zz", "65535"],
            ["20101301000000", "265", "trailing  ", "b c  ", "-1"],
            ["1999123123595 ", "264", "y", "", "65534"],
        ];
        for r in rows {
            let row: Vec<Value> = schema
                .columns
                .iter()
                .zip(r)
                .map(|(c, t)| c.ty.parse_value(t).unwrap())
                .collect();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            narrow.encode(&row, &mut a, &schema).unwrap();
            plain.encode(&row, &mut b, &schema).unwrap();
            narrow.validate(&a).unwrap();
            assert!(narrow.fits_encoded(&a), "{r:?}");
            assert_eq!(
                narrow.decode(&a, Tid::default()),
                plain.decode(&b, Tid::default()),
                "{r:?}"
            );
            for col in 0..schema.len() {
                assert_eq!(
                    narrow.decode_column(&a, col, Tid::default()),
                    plain.decode_column(&b, col, Tid::default()),
                    "{r:?} column {col}"
                );
            }
            // A tuple cut short, or with a byte more, is refused.
            assert!(narrow.validate(&a[..a.len() - 1]).is_err());
            assert!(!narrow.fits_encoded(&a[..a.len() - 1]));
            let mut longer = a.clone();
            longer.push(0);
            assert!(narrow.validate(&longer).is_err());
        }
    }

    proptest! {
        /// Any second from year 0 to 9999 formats to the text that parses back
        /// to it; text that is not exactly that form is not a timestamp.
        #[test]
        fn timestamps_format_and_parse_back(x in -62_167_219_200i64..253_402_300_799) {
            let t = format_timestamp(x);
            prop_assert_eq!(t.len(), 14);
            prop_assert_eq!(timestamp_of(&t), Some(x));
            prop_assert_eq!(timestamp_of(&format!("{t}0")), None);
            prop_assert_eq!(timestamp_of(&t[1..]), None);
            prop_assert_eq!(timestamp_of(&format!("{t} ")), None);
        }

        /// The per-page shape check's fast walk (rows without a NULL take
        /// the walk of a layout without nullable columns, from the end of
        /// the bitmap) says yes exactly when the careful walk does: on every
        /// encoded row, NULLs and escapes among its values, on the same row
        /// cut, lengthened or with a byte changed, and on arbitrary bytes.
        #[test]
        fn the_fast_shape_walk_agrees_with_the_careful_one(
            cols in proptest::collection::vec((0usize..8, any::<bool>()), 1..10),
            seed in any::<u64>(),
            noise in proptest::collection::vec(any::<u8>(), 0..48),
            flip in (any::<usize>(), any::<u8>()),
        ) {
            // (declared type, encoding) pairs strata stores.
            let menu = |k: usize| -> (&'static str, Encoding) {
                match k {
                    0 => ("INT", Encoding::Offset { base: 100, width: 1 }),
                    1 => ("BIGINT", Encoding::Offset { base: -5, width: 3 }),
                    2 => ("DATE", Encoding::Offset { base: 8000, width: 2 }),
                    3 => ("VARCHAR(7)", Encoding::Short),
                    4 => ("CHAR(5)", Encoding::Dict { width: 1, values: vec!["a".into(), "bb".into()] }),
                    5 => ("CHAR(3)", Encoding::Plain),
                    6 => ("VARCHAR(7)", Encoding::Plain),
                    _ => ("INT", Encoding::Plain),
                }
            };
            let text: Vec<String> = cols
                .iter()
                .enumerate()
                .map(|(i, &(k, n))| format!("c{i} {}{}", menu(k).0, if n { " NULL" } else { "" }))
                .collect();
            let schema = Schema::parse(&text.join(", ")).unwrap();
            let encodings: Vec<Encoding> = cols.iter().map(|&(k, _)| menu(k).1).collect();
            let layout = RowLayout::encoded(&schema, &encodings).unwrap();
            // Plain layouts have their own walk (`shape.rs`).
            prop_assume!(layout.is_encoded());
            let agree = |t: &[u8]| -> Result<(), TestCaseError> {
                prop_assert_eq!(layout.fits_encoded(t), layout.check_encoded_shape(t).is_ok(), "{:?}", t);
                Ok(())
            };
            let mut x = seed;
            let row: Vec<Value> = schema.columns.iter().map(|c| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let r = x >> 58;
                if c.nullable && r < 16 {
                    return Value::Null;
                }
                match c.ty {
                    // In the frame, or escaped (below it, above it).
                    DataType::Int32 => Value::Int32([100, 101, 354, 99, 1 << 20][(r % 5) as usize]),
                    DataType::Int64 => Value::Int64([-5, 0, 1 << 30, -6][(r % 4) as usize]),
                    DataType::Date => Value::Date([8000, 9000, 7999, 80_000][(r % 4) as usize]),
                    _ => Value::Str(["a", "bb", "", "zzz"][(r % 4) as usize].into()),
                }
            }).collect();
            let mut t = Vec::new();
            layout.encode(&row, &mut t, &schema).unwrap();
            prop_assert!(layout.fits_encoded(&t), "{:?} as {:?}", row, t);
            agree(&t)?;
            agree(&t[..t.len() - 1])?;
            let mut longer = t.clone();
            longer.push(noise.first().copied().unwrap_or(0));
            agree(&longer)?;
            let mut changed = t.clone();
            let at = flip.0 % changed.len();
            changed[at] ^= flip.1;
            agree(&changed)?;
            agree(&noise)?;
        }
    }
}
