//! The order-preserving key format used by B+-trees, and the tuple id ([`Tid`])
//! that follows every key in an index entry.
//!
//! Key format (B+-tree entries): each column is one flag byte (0 = NULL, 1 = value;
//! NULLs sort first) followed by a byte string whose unsigned lexicographic order is
//! the value order (sign-flipped big-endian integers, IEEE-754 total order for
//! floats, 0x00-escaped strings with a 0x00 0x00 terminator). Comparing encoded keys
//! with `memcmp` is then comparing values, and appending a [`Tid`] makes every
//! entry unique and strictly ordered by (key, tuple id).

use std::fmt;

use super::value::{DataType, Value};

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

    /// The tid of row `pos` of a columnar table's column part (the files in
    /// catalog order, the rows of each in order): the high bits as the page,
    /// the low 16 as the slot, so that tids order like positions. Only the
    /// trees of the column part (its delete set, its indexes' column trees)
    /// hold such tids; a heap never sees them.
    pub fn of_position(pos: u64) -> Tid {
        Tid::new((pos >> 16) as u32, (pos & 0xffff) as u16)
    }

    /// The position [`Tid::of_position`] made this tid of.
    pub fn position(&self) -> u64 {
        ((self.page as u64) << 16) | self.slot as u64
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
        Value::Int64(x) | Value::Decimal(x) | Value::Timestamp(x) => {
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
            DataType::Timestamp => {
                out.push(Value::Timestamp((u64_at(pos) ^ (1 << 63)) as i64));
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
