//! The shape every stored tuple of a table must have, checked when a heap page
//! enters from the device, so that decoding a tuple afterwards cannot fail.
//!
//! A page whose checksum verifies may still hold bytes strata never wrote (a
//! crafted or mis-assembled file). [`crate::row::RowLayout`]'s decoders, and
//! the raw fixed-offset reads of compiled predicates, index a tuple by the
//! widths its schema gives; a tuple of another length would make them read past
//! its end. Rather than make every decode (millions a second, many of them
//! outside this crate) fallible, a heap checks each page against its table's
//! [`TupleShape`] once, where the page comes in ([`crate::heap::HeapFile`]'s
//! streams, run reads and point reads):
//!
//! * a layout of fixed-width, non-nullable columns (every column at a fixed
//!   offset) needs one comparison per slot: the tuple's length is the row length;
//! * otherwise the tuple's null bitmap and VARCHAR length prefixes are walked
//!   (only those: runs of fixed-width NOT NULL columns are one addition), and the
//!   widths must end exactly at the tuple's end, with no NULL flag on a NOT NULL
//!   column.
//!
//! Text is not checked for UTF-8 here (decoders replace bad bytes); `strata
//! check` does that with [`crate::row::RowLayout::validate`].

use super::layout::RowLayout;
use super::value::Schema;
use crate::page::{HEADER_SIZE, PageKind, PageView, SLOT_SIZE};

/// What the tuples of one table look like; see the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TupleShape {
    kind: Kind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// Every tuple has exactly this many bytes.
    Fixed(usize),
    /// A table stored in narrow encodings (`encoding.rs`): its layout walks
    /// each tuple, escaped values included.
    Encoded(EncodedLayout),
    Var {
        /// Bytes of the null bitmap at the start of the tuple.
        bitmap_len: usize,
        /// Bits of the bitmap that must be clear (NOT NULL columns), a byte each.
        not_null: Vec<u8>,
        steps: Vec<Step>,
    },
}

/// An encoded table's layout; shapes are equal when they share it.
#[derive(Clone, Debug)]
struct EncodedLayout(std::sync::Arc<RowLayout>);

impl PartialEq for EncodedLayout {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for EncodedLayout {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Fixed-width NOT NULL columns back to back: always this many bytes.
    Skip(usize),
    /// A nullable fixed-width column: its width unless its NULL bit is set.
    Nullable { col: usize, width: usize },
    /// A VARCHAR: a 2-byte length and that many bytes, unless NULL.
    Var { col: usize, nullable: bool },
}

impl TupleShape {
    /// The shape of rows as `layout` (of `schema`) encodes them.
    pub fn of_layout(schema: &Schema, layout: &RowLayout) -> TupleShape {
        if layout.is_encoded() {
            TupleShape {
                kind: Kind::Encoded(EncodedLayout(std::sync::Arc::new(layout.clone()))),
            }
        } else {
            TupleShape::new(schema)
        }
    }

    /// The shape of rows of `schema` as [`crate::row::RowLayout`] encodes them.
    pub fn new(schema: &Schema) -> TupleShape {
        let cols = &schema.columns;
        let any_null = cols.iter().any(|c| c.nullable);
        let all_fixed = cols.iter().all(|c| c.ty.fixed_width().is_some());
        if !any_null && all_fixed {
            let len = cols.iter().filter_map(|c| c.ty.fixed_width()).sum();
            return TupleShape {
                kind: Kind::Fixed(len),
            };
        }
        let bitmap_len = if any_null { cols.len().div_ceil(8) } else { 0 };
        let mut not_null = vec![0u8; bitmap_len];
        let mut steps: Vec<Step> = Vec::new();
        for (col, c) in cols.iter().enumerate() {
            if any_null && !c.nullable {
                not_null[col / 8] |= 1 << (col % 8);
            }
            match c.ty.fixed_width() {
                Some(width) if c.nullable => steps.push(Step::Nullable { col, width }),
                Some(width) => match steps.last_mut() {
                    Some(Step::Skip(w)) => *w += width,
                    _ => steps.push(Step::Skip(width)),
                },
                None => steps.push(Step::Var {
                    col,
                    nullable: c.nullable,
                }),
            }
        }
        TupleShape {
            kind: Kind::Var {
                bitmap_len,
                not_null,
                steps,
            },
        }
    }

    /// The length every tuple has, when the layout is fixed.
    pub fn fixed_len(&self) -> Option<usize> {
        match self.kind {
            Kind::Fixed(n) => Some(n),
            Kind::Var { .. } | Kind::Encoded(_) => None,
        }
    }

    /// Whether `t` has this shape; the error says how it differs.
    #[inline]
    pub fn check(&self, t: &[u8]) -> Result<(), String> {
        match &self.kind {
            Kind::Encoded(l) => l.0.check_encoded_shape(t),
            Kind::Fixed(n) => {
                if t.len() != *n {
                    return Err(format!(
                        "tuple of {} bytes, the table's rows have {n}",
                        t.len()
                    ));
                }
                Ok(())
            }
            Kind::Var {
                bitmap_len,
                not_null,
                steps,
            } => {
                let Some(bitmap) = t.get(..*bitmap_len) else {
                    return Err(format!(
                        "tuple of {} bytes is shorter than its null bitmap ({bitmap_len} bytes)",
                        t.len()
                    ));
                };
                if bitmap.iter().zip(not_null).any(|(b, m)| b & m != 0) {
                    return Err(null_in_not_null(bitmap, not_null));
                }
                let null = |col: usize| bitmap[col / 8] & (1 << (col % 8)) != 0;
                let mut pos = *bitmap_len;
                for step in steps {
                    match *step {
                        Step::Skip(w) => pos += w,
                        Step::Nullable { col, width } => {
                            if !null(col) {
                                pos += width;
                            }
                        }
                        Step::Var { col, nullable } => {
                            if nullable && null(col) {
                                continue;
                            }
                            let Some(n) = t.get(pos..pos + 2) else {
                                return Err(format!(
                                    "tuple of {} bytes ends before the length of column {}",
                                    t.len(),
                                    col + 1
                                ));
                            };
                            pos += 2 + u16::from_le_bytes([n[0], n[1]]) as usize;
                        }
                    }
                }
                if pos != t.len() {
                    return Err(format!(
                        "tuple has {} bytes, its columns account for {pos}",
                        t.len()
                    ));
                }
                Ok(())
            }
        }
    }

    /// Checks a whole heap page (its slot directory already verified by
    /// [`crate::page::verify`]): its kind, and every live tuple's shape. The
    /// error names the slot.
    pub fn check_page(&self, v: &PageView<'_>) -> Result<(), String> {
        if v.kind() != Some(PageKind::Heap) {
            return Err(format!(
                "expected a heap page, found kind {}",
                v.bytes()[12]
            ));
        }
        match self.kind {
            // The hot case (every scan of a fixed-layout table): one compare a slot.
            Kind::Fixed(n) => {
                // Branch-free over the directory; the slot at fault is looked
                // for only when there is one.
                let n16 = n as u32;
                let mut wrong = 0u32;
                for e in slot_dir(v) {
                    let len = u32::from_le_bytes(*e) >> 16;
                    wrong |= ((len != 0) & (len != n16)) as u32;
                }
                if wrong != 0 {
                    for s in 0..v.n_slots() {
                        let (_, len) = v.slot(s);
                        if len != 0 && len != n {
                            return Err(format!(
                                "slot {s}: tuple of {len} bytes, the table's rows have {n}"
                            ));
                        }
                    }
                }
                Ok(())
            }
            Kind::Encoded(ref l) => self.each_tuple(v, |t| l.0.fits_encoded(t)),
            Kind::Var {
                bitmap_len,
                ref not_null,
                ref steps,
            } => self.each_tuple(v, |t| fits(bitmap_len, not_null, steps, t)),
        }
    }

    /// Runs the fast yes/no walk `fits` over every live tuple of `v`; the
    /// reason ([`TupleShape::check`]) only for a bad one, naming its slot.
    #[inline(always)]
    fn each_tuple(&self, v: &PageView<'_>, fits: impl Fn(&[u8]) -> bool) -> Result<(), String> {
        let page = v.bytes();
        for (s, e) in slot_dir(v).iter().enumerate() {
            let off = u16::from_le_bytes([e[0], e[1]]) as usize;
            let len = u16::from_le_bytes([e[2], e[3]]) as usize;
            if len == 0 {
                continue;
            }
            let t = page.get(off..off + len).unwrap_or(&[]);
            if !fits(t) {
                let e = self.check(t).err().unwrap_or_default();
                return Err(format!("slot {s}: {e}"));
            }
        }
        Ok(())
    }
}

/// Whether a tuple of a variable layout is well formed: [`TupleShape::check`]
/// without the reasons, for the per-page pass.
#[inline(always)]
fn fits(bitmap_len: usize, not_null: &[u8], steps: &[Step], t: &[u8]) -> bool {
    let Some(bitmap) = t.get(..bitmap_len) else {
        return false;
    };
    let mut flagged = 0u8;
    for (b, m) in bitmap.iter().zip(not_null) {
        flagged |= b & m;
    }
    if flagged != 0 {
        return false;
    }
    let null = |col: usize| bitmap[col / 8] & (1 << (col % 8)) != 0;
    let mut pos = bitmap_len;
    for step in steps {
        match *step {
            Step::Skip(w) => pos += w,
            Step::Nullable { col, width } => pos += if null(col) { 0 } else { width },
            Step::Var { col, nullable } => {
                if nullable && null(col) {
                    continue;
                }
                let Some(n) = t.get(pos..pos + 2) else {
                    return false;
                };
                pos += 2 + u16::from_le_bytes([n[0], n[1]]) as usize;
            }
        }
    }
    pos == t.len()
}

#[cold]
fn null_in_not_null(bitmap: &[u8], not_null: &[u8]) -> String {
    let (i, b) = bitmap
        .iter()
        .zip(not_null)
        .map(|(b, m)| b & m)
        .enumerate()
        .find(|(_, b)| *b != 0)
        .unwrap_or((0, 1));
    format!(
        "column {} is NULL but NOT NULL",
        i * 8 + b.trailing_zeros() as usize + 1
    )
}

/// The slot directory's entries (offset, length: 2 bytes each, little-endian).
fn slot_dir<'a>(v: &PageView<'a>) -> &'a [[u8; SLOT_SIZE]] {
    let end = HEADER_SIZE + v.n_slots() as usize * SLOT_SIZE;
    v.bytes()
        .get(HEADER_SIZE..end)
        .unwrap_or(&[])
        .as_chunks::<SLOT_SIZE>()
        .0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::{RowLayout, Value};
    use proptest::prelude::*;

    #[test]
    fn fixed_layouts_need_the_exact_length() {
        let s = Schema::parse("a INT, b BIGINT, c CHAR(3), d BOOL").unwrap();
        let shape = TupleShape::new(&s);
        assert_eq!(shape.fixed_len(), Some(16));
        assert!(shape.check(&[0; 16]).is_ok());
        let e = shape.check(&[0; 15]).unwrap_err();
        assert!(e.contains("15 bytes") && e.contains("16"), "{e}");
        assert!(shape.check(&[0; 17]).is_err());
    }

    #[test]
    fn variable_layouts_walk_lengths_and_null_flags() {
        let s = Schema::parse("a INT, s VARCHAR(10) NULL, d DATE, t VARCHAR(5)").unwrap();
        let shape = TupleShape::new(&s);
        assert_eq!(shape.fixed_len(), None);
        let l = RowLayout::new(&s);
        let mut row = Vec::new();
        let vals = [
            Value::Int32(1),
            Value::Str("hey".into()),
            Value::Date(2),
            Value::Str("x".into()),
        ];
        l.encode(&vals, &mut row, &s).unwrap();
        shape.check(&row).unwrap();
        // Every proper prefix and every extension is refused.
        for n in 0..row.len() {
            assert!(shape.check(&row[..n]).is_err(), "prefix {n}");
        }
        let mut longer = row.clone();
        longer.push(0);
        assert!(shape.check(&longer).is_err());
        // A VARCHAR length running past the end.
        let mut past = row.clone();
        past[1 + 4] = 200;
        let e = shape.check(&past).unwrap_err();
        assert!(e.contains("ends before the length of column 4"), "{e}");
        // The last VARCHAR one byte longer than the tuple.
        let mut past = row.clone();
        let at = row.len() - 3;
        past[at] += 1;
        let e = shape.check(&past).unwrap_err();
        assert!(e.contains("account for"), "{e}");
        // A NULL flag on a NOT NULL column.
        let mut nul = row.clone();
        nul[0] |= 1;
        let e = shape.check(&nul).unwrap_err();
        assert!(e.contains("column 1 is NULL but NOT NULL"), "{e}");
        // Empty tuple: shorter than the bitmap.
        assert!(shape.check(&[]).unwrap_err().contains("null bitmap"));
    }

    fn arb_schema() -> impl Strategy<Value = Schema> {
        let ty = prop_oneof![
            Just("INT"),
            Just("BIGINT"),
            Just("DOUBLE"),
            Just("BOOL"),
            Just("DATE"),
            Just("CHAR(3)"),
            Just("VARCHAR(7)"),
            Just("DECIMAL(10,2)"),
        ];
        proptest::collection::vec((ty, any::<bool>()), 1..12).prop_map(|cols| {
            let text: Vec<String> = cols
                .iter()
                .enumerate()
                .map(|(i, (t, n))| format!("c{i} {t}{}", if *n { " NULL" } else { "" }))
                .collect();
            Schema::parse(&text.join(", ")).unwrap()
        })
    }

    proptest! {
        /// The shape check agrees with `RowLayout::validate` (less its UTF-8
        /// test) on arbitrary bytes, and accepts every encoded row.
        #[test]
        fn agrees_with_validate(schema in arb_schema(), bytes in proptest::collection::vec(any::<u8>(), 0..60), seed in any::<u64>()) {
            let shape = TupleShape::new(&schema);
            let layout = RowLayout::new(&schema);
            // Only ASCII in text so that UTF-8 never decides.
            let ascii: Vec<u8> = bytes.iter().map(|b| b & 0x7f).collect();
            prop_assert_eq!(shape.check(&ascii).is_ok(), layout.validate(&ascii).is_ok());
            // An encoded row (values from the seed) passes, and decodes.
            let mut x = seed;
            let row: Vec<Value> = schema.columns.iter().map(|c| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                if c.nullable && x >> 60 == 0 { return Value::Null; }
                match c.ty {
                    crate::row::DataType::Int32 => Value::Int32(x as i32),
                    crate::row::DataType::Date => Value::Date((x % 100_000) as i32),
                    crate::row::DataType::Int64 => Value::Int64(x as i64),
                    crate::row::DataType::Timestamp => Value::Timestamp(x as i64),
                    crate::row::DataType::Decimal { .. } => Value::Decimal((x % 1_000_000) as i64),
                    crate::row::DataType::Float64 => Value::Float64(x as f64),
                    crate::row::DataType::Bool => Value::Bool(x & 1 == 1),
                    crate::row::DataType::Char { .. } => Value::Str("ab".into()),
                    crate::row::DataType::Varchar { .. } => Value::Str("abc".repeat((x % 3) as usize)),
                }
            }).collect();
            let mut enc = Vec::new();
            layout.encode(&row, &mut enc, &schema).unwrap();
            prop_assert!(shape.check(&enc).is_ok());
        }
    }
}
