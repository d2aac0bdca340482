//! The on-page row format: [`RowLayout`] encodes and decodes the rows of one
//! schema, plain or in the physical encodings of a compacted table (the encoded
//! rows' checks and decoders are in `layout_encoded.rs`).
//!
//! Row format (one tuple on a heap page): an optional null bitmap (present only when
//! the schema has nullable columns, one bit per column, set = NULL), then each
//! non-NULL value in column order, little-endian, unaligned:
//! INT32/DATE 4 bytes, INT64/DECIMAL/FLOAT64 8 bytes, BOOL 1 byte, CHAR(n) n bytes
//! space-padded, VARCHAR(n) a u16 length then the bytes. When no column is nullable
//! or variable-length every column sits at a fixed offset, so a predicate reads its
//! column without decoding the rest of the row ([`RowLayout::fixed_offset`]).

use super::encoding::{CodeKind, Col, Encoding, Phys, Step, address_of, put_uint, read_code};
use super::key::Tid;
use super::value::{DataType, Schema, Value};
use crate::error::{Result, StorageError};

/// Encodes and decodes rows of one schema.
#[derive(Clone, Debug)]
pub struct RowLayout {
    pub(super) types: Vec<DataType>,
    pub(super) nullable: Vec<bool>,
    pub(super) bitmap_len: usize,
    /// Offsets of the leading columns that sit at the same place in every
    /// row: none are nullable, and every column before them has a fixed
    /// width (the first variable-width column is the last with one).
    pub(super) offsets: Vec<usize>,
    /// The same for a row without NULLs, whichever columns are nullable (a
    /// NULL takes no bytes, so a row with one shifts the later columns).
    pub(super) offsets_without_nulls: Vec<usize>,
    /// The columns' physical encodings (`encoding.rs`); `None`: all plain.
    pub(super) phys: Option<std::sync::Arc<[Phys]>>,
    /// The same, as the per-tuple loops read them (empty when all plain).
    pub(super) plan: std::sync::Arc<[Col]>,
    /// The per-page shape walk of a row without NULLs, from the end of its
    /// null bitmap (`encoding::runs`).
    pub(super) steps: std::sync::Arc<[Step]>,
    /// The encodings as the catalog states them (empty when all plain).
    pub(super) encodings: std::sync::Arc<[Encoding]>,
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
                super::encoding::read_code(row, self.offset, width)
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
    /// [`super::encoding::format_timestamp`]).
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
        if super::encoding::is_plain(encodings) {
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
        l.steps = super::encoding::runs(&l.plan).into();
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
                super::encoding::SIDE_POINTER
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
                        .and_then(super::encoding::tid_of_address)
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
                        pos += super::encoding::SIDE_POINTER;
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

    /// Whether the stored row `bytes` has a NULL (never, for a layout
    /// without nullable columns).
    #[inline]
    pub fn has_null(&self, bytes: &[u8]) -> bool {
        self.bitmap_len > 0 && bytes[..self.bitmap_len].iter().any(|&b| b != 0)
    }

    pub(super) fn is_null(&self, bytes: &[u8], col: usize) -> bool {
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
        let b = &bytes[pos..pos + super::encoding::SIDE_POINTER];
        Some(Tid::new(
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            u16::from_le_bytes([b[4], b[5]]),
        ))
    }
}

impl Schema {
    /// Largest encoded row.
    pub fn max_row_size(&self) -> usize {
        RowLayout::new(self).bitmap_len
            + self.columns.iter().map(|c| c.ty.max_width()).sum::<usize>()
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
        (DataType::Int64, Value::Int64(x))
        | (DataType::Decimal { .. }, Value::Decimal(x))
        | (DataType::Timestamp, Value::Timestamp(x)) => out.extend_from_slice(&x.to_le_bytes()),
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

pub(super) fn decode_value(ty: &DataType, b: &[u8]) -> (Value, usize) {
    let i32_at = || i32::from_le_bytes(b[..4].try_into().unwrap());
    let i64_at = || i64::from_le_bytes(b[..8].try_into().unwrap());
    match ty {
        DataType::Int32 => (Value::Int32(i32_at()), 4),
        DataType::Date => (Value::Date(i32_at()), 4),
        DataType::Int64 => (Value::Int64(i64_at()), 8),
        DataType::Decimal { .. } => (Value::Decimal(i64_at()), 8),
        DataType::Timestamp => (Value::Timestamp(i64_at()), 8),
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

/// Bytes a non-NULL column of encoding `c` takes at the start of `bytes` in a
/// stored (checked) tuple, escapes aside: they are stored past the last
/// column.
fn stored_width(c: &Col, bytes: &[u8]) -> usize {
    match *c {
        Col::Fixed(w) | Col::Code { width: w, .. } => w,
        Col::Var => 2 + u16::from_le_bytes([bytes[0], bytes[1]]) as usize,
        Col::Short => 1 + bytes[0] as usize,
        Col::Address | Col::Side(false) => 0,
        Col::Side(true) => super::encoding::SIDE_POINTER,
    }
}
