//! Which encoding each column of a column file gets, decided from its data.
//!
//! Parquet's writer gives every column a dictionary and falls back to plain
//! values once the dictionary passes 1 MiB. For a column of distinct values
//! (keys, prices, comments) that leaves a dictionary page of up to 1 MiB at
//! the head of each column chunk — a page every read of one row of the chunk
//! (an index lookup) must read and decode first — and plain values after it.
//! And for a sorted key a dictionary is the wrong tool: the differences of
//! consecutive values take a few bits each.
//!
//! So [`choose`] decides per file, on its first page's worth of rows (8,192,
//! `file::PAGE_ROWS`), like types-as-hints decides a heap column's width from
//! its values (No Bits Left Behind §4.1): the encoding whose bytes for those
//! rows are fewest of
//!
//! * **plain**: every value at its width (a string: its bytes and a 4-byte
//!   length);
//! * **dictionary**: the distinct values once, then a code of ⌈log2 d⌉ bits
//!   per value;
//! * **delta** (`DELTA_BINARY_PACKED`, integers, dates, timestamps and the
//!   decimals stored as integers): per miniblock of 32 values, the
//!   differences of consecutive values less their least, bit-packed at the
//!   width of the largest — a sorted key's few bits, a random one's about
//!   log2 of its range.
//!
//! These are the sizes before Snappy, which each encoding then gets alike.

use std::collections::HashSet;
use std::hash::Hash;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{
    DataType as A, Decimal128Type, Float64Type, Int32Type, Int64Type, TimestampMicrosecondType,
};

/// A column's encoding in a column file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnEncoding {
    Dictionary,
    Plain,
    Delta,
}

/// The encoding of `array`'s values with the fewest bytes (see the module
/// docs).
pub fn choose(array: &dyn Array) -> ColumnEncoding {
    let n = array.len() - array.null_count();
    if n == 0 {
        return ColumnEncoding::Dictionary;
    }
    let (distinct, width, delta) = match array.data_type() {
        A::Int32 | A::Date32 => {
            // Both are 32-bit integers (a date is days since the epoch).
            let a = arrow::compute::cast(array, &A::Int32).expect("an i32 array casts to i32");
            ints(
                a.as_primitive::<Int32Type>()
                    .iter()
                    .map(|v| v.map(i64::from)),
                4.0,
            )
        }
        A::Int64 => ints(array.as_primitive::<Int64Type>().iter(), 8.0),
        A::Timestamp(..) => ints(array.as_primitive::<TimestampMicrosecondType>().iter(), 8.0),
        A::Decimal128(p, _) => {
            // Stored as INT32 up to 9 digits, INT64 up to 18; wider ones are
            // fixed-length bytes, which delta does not take.
            let w = if *p <= 9 { 4.0 } else { 8.0 };
            let a = array.as_primitive::<Decimal128Type>();
            if *p <= 18 {
                ints(a.iter().map(|v| v.and_then(|v| i64::try_from(v).ok())), w)
            } else {
                (count(a.iter()), 16.0, None)
            }
        }
        A::Float64 => (
            count(
                array
                    .as_primitive::<Float64Type>()
                    .iter()
                    .map(|v| v.map(f64::to_bits)),
            ),
            8.0,
            None,
        ),
        A::Utf8 => {
            let a = array.as_string::<i32>();
            let bytes: usize = a.iter().flatten().map(str::len).sum();
            (count(a.iter()), 4.0 + bytes as f64 / n as f64, None)
        }
        _ => return ColumnEncoding::Dictionary,
    };
    let n = n as f64;
    let d = distinct as f64;
    let plain = n * width;
    let dictionary = d * width + n * d.log2().ceil().max(1.0) / 8.0;
    let mut best = (plain, ColumnEncoding::Plain);
    if dictionary < best.0 {
        best = (dictionary, ColumnEncoding::Dictionary);
    }
    if let Some(delta) = delta
        && delta < best.0
    {
        best = (delta, ColumnEncoding::Delta);
    }
    best.1
}

fn count<T: Hash + Eq>(it: impl Iterator<Item = Option<T>>) -> usize {
    it.flatten().collect::<HashSet<T>>().len()
}

/// Distinct values, width, and the bytes of `DELTA_BINARY_PACKED` of
/// integer values (NULLs are not stored).
fn ints(values: impl Iterator<Item = Option<i64>>, width: f64) -> (usize, f64, Option<f64>) {
    let v: Vec<i64> = values.flatten().collect();
    let distinct = v.iter().collect::<HashSet<_>>().len();
    (distinct, width, Some(delta_bytes(&v)))
}

/// The bytes `DELTA_BINARY_PACKED` takes for `v`: blocks of 128 values, each
/// with its least difference (a varint, up to 10 bytes) and a bit width per
/// miniblock of 32 (4 bytes), then each miniblock's differences less the
/// least, packed at the width of its largest.
fn delta_bytes(v: &[i64]) -> f64 {
    let deltas: Vec<i128> = v.windows(2).map(|w| w[1] as i128 - w[0] as i128).collect();
    let mut bytes = 10.0;
    for block in deltas.chunks(128) {
        let least = *block.iter().min().expect("a block has values");
        bytes += 10.0 + 4.0;
        for mini in block.chunks(32) {
            let most = mini.iter().map(|d| d - least).max().unwrap_or(0);
            let bits = 128 - most.leading_zeros();
            bytes += 32.0 * bits as f64 / 8.0;
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};

    #[test]
    fn each_kind_of_column_gets_the_smallest_encoding() {
        let n = 8192i64;
        // A sorted key with runs (l_orderkey): delta.
        let sorted = Int64Array::from_iter_values((0..n).map(|i| i / 4));
        assert_eq!(choose(&sorted), ColumnEncoding::Delta);
        // Few values in no order (flags, quantities): a dictionary.
        let few = Int64Array::from_iter_values((0..n).map(|i| (i * 7919) % 50));
        assert_eq!(choose(&few), ColumnEncoding::Dictionary);
        // Distinct values in no order over a narrow range: delta beats 8
        // plain bytes.
        let random = Int64Array::from_iter_values((0..n).map(|i| (i * 7919) % 200_000));
        assert_eq!(choose(&random), ColumnEncoding::Delta);
        // Distinct values over the whole range: plain.
        let wide = Int64Array::from_iter_values(
            (0..n).map(|i| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as i64),
        );
        assert_eq!(choose(&wide), ColumnEncoding::Plain);
        // Strings: repeated ones a dictionary, distinct ones plain.
        let flags = StringArray::from_iter_values((0..n).map(|i| ["A", "N", "R"][i as usize % 3]));
        assert_eq!(choose(&flags), ColumnEncoding::Dictionary);
        let comments = StringArray::from_iter_values((0..n).map(|i| format!("comment {i}")));
        assert_eq!(choose(&comments), ColumnEncoding::Plain);
    }
}
