//! The encoded rows of a compacted table (No Bits Left Behind §4.1): checking
//! that a stored row fits its encodings, and decoding its fields.

use super::encoding::{
    Col, Phys, Step, address_of, escaped_in, format_timestamp, get_uint, int_value, read_code,
    tail_of,
};
use super::key::Tid;
use super::layout::{RowLayout, decode_value};
use super::value::{DataType, Value};

impl RowLayout {
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
                Col::Side(true) => super::encoding::SIDE_POINTER,
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
    pub(super) fn validate_encoded(
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
    /// is not checked), for [`crate::row::shape::TupleShape`].
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
                    super::encoding::SIDE_POINTER
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

    pub(super) fn decode_encoded(&self, p: &[Phys], bytes: &[u8], tid: Tid) -> Vec<Value> {
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
    pub(super) fn encoded_pos(&self, p: &[Phys], bytes: &[u8], col: usize) -> usize {
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

    pub(super) fn decode_column_encoded(
        &self,
        p: &[Phys],
        bytes: &[u8],
        col: usize,
        tid: Tid,
    ) -> Value {
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
}
