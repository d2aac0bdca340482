//! Arrow record batches to strata rows: the one conversion every arrow-fed load
//! uses (the Parquet loader, the TPC-H generator).
//!
//! A load first maps the batch's fields onto the table's columns by name
//! ([`map_fields`], which also checks that each arrow type converts to its
//! column's type), then converts row after row with [`BatchRows`], which
//! downcasts each column once per batch, not per value. Integers are carried as
//! i128 and decimals as their unscaled i128, so every conversion into INT32,
//! INT64 or DECIMAL is exact or fails with a range error; strings go through
//! [`DataType::parse_value`], the same text rules as CSV (CHAR drops trailing
//! spaces, VARCHAR keeps the text exactly, lengths are checked).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal32Type, Decimal64Type, Decimal128Type, Float32Type, Float64Type, Int8Type,
    Int16Type, Int32Type, Int64Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType as Arrow, TimeUnit};
use strata_storage::row::{DataType, Schema, Value};

use crate::error::LoadError;

/// One record batch seen as rows of a strata table.
pub(crate) struct BatchRows<'a> {
    cols: Vec<Col<'a>>,
}

impl<'a> BatchRows<'a> {
    /// `map[c]` is the batch column that feeds table column `c`, as [`map_fields`]
    /// returned it (so every type is known to convert).
    pub fn new(batch: &'a RecordBatch, map: &[usize]) -> BatchRows<'a> {
        BatchRows {
            cols: map
                .iter()
                .map(|&f| Col::new(batch.column(f)).expect("types were checked by map_fields"))
                .collect(),
        }
    }

    /// Converts row `i` of the batch into `row` (one value per column of
    /// `schema`). On failure: the table column at fault and a short reason, e.g.
    /// a NULL in a NOT NULL column or a value out of range.
    pub fn row(&self, i: usize, schema: &Schema, row: &mut [Value]) -> Result<(), (usize, String)> {
        for (c, (col, def)) in self.cols.iter().zip(&schema.columns).enumerate() {
            col.value(i, &def.ty, &mut row[c]).map_err(|e| (c, e))?;
            if row[c].is_null() && !def.nullable {
                return Err((c, "NULL in a NOT NULL column".into()));
            }
        }
        Ok(())
    }
}

/// The strata type a new table gives an arrow type: `Some(Some(t))`, `Some(None)`
/// for strings (sized later), `None` when unsupported.
pub(crate) fn creation_type(t: &Arrow) -> Option<Option<DataType>> {
    Some(Some(match t {
        Arrow::Int8 | Arrow::Int16 | Arrow::Int32 | Arrow::UInt8 | Arrow::UInt16 => DataType::Int32,
        Arrow::Int64 | Arrow::UInt32 | Arrow::UInt64 => DataType::Int64,
        Arrow::Float32 | Arrow::Float64 => DataType::Float64,
        Arrow::Decimal32(p, s) | Arrow::Decimal64(p, s) | Arrow::Decimal128(p, s)
            if (1..=18).contains(p) && *s >= 0 && *s as u8 <= *p =>
        {
            DataType::Decimal {
                precision: *p,
                scale: *s as u8,
            }
        }
        Arrow::Date32 => DataType::Date,
        Arrow::Timestamp(_, None) => DataType::Timestamp,
        Arrow::Boolean => DataType::Bool,
        Arrow::Utf8 | Arrow::LargeUtf8 | Arrow::Utf8View => return Some(None),
        _ => return None,
    }))
}

pub(crate) fn unsupported(file: &str, i: usize, name: &str, t: &Arrow) -> LoadError {
    let why = match t {
        Arrow::Decimal32(..)
        | Arrow::Decimal64(..)
        | Arrow::Decimal128(..)
        | Arrow::Decimal256(..) => {
            " (strata's DECIMAL holds at most 18 digits and a scale of 0..=precision)"
        }
        Arrow::Timestamp(_, Some(_)) => " (strata's TIMESTAMP has no time zone)",
        _ => "",
    };
    LoadError::Mismatch(format!(
        "{file}: column {} ({name}) has type {t}, which strata does not support{why}; supported: integers, \
         Float32/64, Decimal(p<=18,s), Date32, Timestamp without a time zone, Utf8, Boolean",
        i + 1
    ))
}

/// Whether values of arrow type `from` can be stored in a `to` column.
fn convertible(from: &Arrow, to: &DataType) -> bool {
    use DataType as S;
    match from {
        Arrow::Int8
        | Arrow::Int16
        | Arrow::Int32
        | Arrow::Int64
        | Arrow::UInt8
        | Arrow::UInt16
        | Arrow::UInt32
        | Arrow::UInt64 => matches!(to, S::Int32 | S::Int64 | S::Float64 | S::Decimal { .. }),
        Arrow::Float32 | Arrow::Float64 => matches!(to, S::Float64),
        Arrow::Decimal32(_, s) | Arrow::Decimal64(_, s) | Arrow::Decimal128(_, s) => match to {
            S::Decimal { scale, .. } => *s >= 0 && *scale as i8 >= *s,
            S::Float64 => true,
            _ => false,
        },
        Arrow::Date32 => matches!(to, S::Date),
        Arrow::Timestamp(_, None) => matches!(to, S::Timestamp),
        Arrow::Boolean => matches!(to, S::Bool),
        Arrow::Utf8 | Arrow::LargeUtf8 | Arrow::Utf8View => true,
        _ => false,
    }
}

/// Maps the file's fields to an existing table's columns by name.
pub(crate) fn map_fields(
    fields: &arrow_schema::Fields,
    schema: &Schema,
    file: &str,
    table: &str,
) -> Result<Vec<usize>, LoadError> {
    let unknown: Vec<String> = fields
        .iter()
        .filter(|f| schema.index_of(f.name()).is_none())
        .map(|f| format!("'{}'", f.name()))
        .collect();
    if !unknown.is_empty() {
        return Err(LoadError::Mismatch(format!(
            "{file}: unknown column{} {} for table '{table}' (it has {})",
            if unknown.len() > 1 { "s" } else { "" },
            unknown.join(", "),
            schema.names()
        )));
    }
    let mut map = Vec::with_capacity(schema.len());
    for c in &schema.columns {
        let mut found = fields
            .iter()
            .enumerate()
            .filter(|(_, f)| f.name().eq_ignore_ascii_case(&c.name));
        let Some((i, f)) = found.next() else {
            return Err(LoadError::Mismatch(format!(
                "{file}: has no column '{}' of table '{table}' (every column must be present)",
                c.name
            )));
        };
        if found.next().is_some() {
            return Err(LoadError::Mismatch(format!(
                "{file}: has more than one column named '{}'",
                c.name
            )));
        }
        if !convertible(f.data_type(), &c.ty) {
            return Err(LoadError::Mismatch(format!(
                "{file}: column {} ({}) has type {}, which cannot be loaded into {} column '{}' of table '{table}'",
                i + 1,
                f.name(),
                f.data_type(),
                c.ty,
                c.name
            )));
        }
        map.push(i);
    }
    Ok(map)
}

/// A typed view of one arrow column of a batch (downcast once per batch, not per value).
pub(crate) enum Col<'a> {
    /// Any integer type, read as i128 so every one converts exactly.
    Int(&'a ArrayRef, fn(&ArrayRef, usize) -> i128),
    Float(&'a ArrayRef, fn(&ArrayRef, usize) -> f64),
    Decimal(&'a ArrayRef, fn(&ArrayRef, usize) -> i128, i8),
    Date(&'a arrow_array::Date32Array),
    /// A timestamp of any unit, as microseconds (`None`: a nanosecond
    /// value that microseconds cannot hold exactly, or out of range).
    Timestamp(&'a ArrayRef, fn(&ArrayRef, usize) -> Option<i64>),
    Str(&'a arrow_array::StringArray),
    LargeStr(&'a arrow_array::LargeStringArray),
    View(&'a arrow_array::StringViewArray),
    Bool(&'a arrow_array::BooleanArray),
}

impl<'a> Col<'a> {
    pub fn new(a: &'a ArrayRef) -> Option<Col<'a>> {
        macro_rules! int {
            ($t:ty) => {
                Col::Int(a, |a, i| a.as_primitive::<$t>().value(i) as i128)
            };
        }
        Some(match a.data_type() {
            Arrow::Int8 => int!(Int8Type),
            Arrow::Int16 => int!(Int16Type),
            Arrow::Int32 => int!(Int32Type),
            Arrow::Int64 => int!(Int64Type),
            Arrow::UInt8 => int!(UInt8Type),
            Arrow::UInt16 => int!(UInt16Type),
            Arrow::UInt32 => int!(UInt32Type),
            Arrow::UInt64 => int!(UInt64Type),
            Arrow::Float32 => Col::Float(a, |a, i| a.as_primitive::<Float32Type>().value(i) as f64),
            Arrow::Float64 => Col::Float(a, |a, i| a.as_primitive::<Float64Type>().value(i)),
            Arrow::Decimal32(_, s) => Col::Decimal(
                a,
                |a, i| a.as_primitive::<Decimal32Type>().value(i) as i128,
                *s,
            ),
            Arrow::Decimal64(_, s) => Col::Decimal(
                a,
                |a, i| a.as_primitive::<Decimal64Type>().value(i) as i128,
                *s,
            ),
            Arrow::Decimal128(_, s) => {
                Col::Decimal(a, |a, i| a.as_primitive::<Decimal128Type>().value(i), *s)
            }
            Arrow::Date32 => Col::Date(a.as_primitive::<Date32Type>()),
            Arrow::Timestamp(unit, None) => Col::Timestamp(
                a,
                match unit {
                    TimeUnit::Second => |a, i| {
                        a.as_primitive::<TimestampSecondType>()
                            .value(i)
                            .checked_mul(1_000_000)
                    },
                    TimeUnit::Millisecond => |a, i| {
                        a.as_primitive::<TimestampMillisecondType>()
                            .value(i)
                            .checked_mul(1_000)
                    },
                    TimeUnit::Microsecond => {
                        |a, i| Some(a.as_primitive::<TimestampMicrosecondType>().value(i))
                    }
                    TimeUnit::Nanosecond => |a, i| {
                        let ns = a.as_primitive::<TimestampNanosecondType>().value(i);
                        (ns % 1_000 == 0).then_some(ns / 1_000)
                    },
                },
            ),
            Arrow::Utf8 => Col::Str(a.as_string::<i32>()),
            Arrow::LargeUtf8 => Col::LargeStr(a.as_string::<i64>()),
            Arrow::Utf8View => Col::View(a.as_string_view()),
            Arrow::Boolean => Col::Bool(a.as_boolean()),
            _ => return None,
        })
    }

    fn array(&self) -> &dyn Array {
        match self {
            Col::Int(a, _) | Col::Float(a, _) | Col::Decimal(a, _, _) | Col::Timestamp(a, _) => {
                a.as_ref()
            }
            Col::Date(a) => *a,
            Col::Str(a) => *a,
            Col::LargeStr(a) => *a,
            Col::View(a) => *a,
            Col::Bool(a) => *a,
        }
    }

    /// Stores value `i` converted to `ty` in `out` (NULL when the arrow value is);
    /// the error is a short reason.
    fn value(&self, i: usize, ty: &DataType, out: &mut Value) -> Result<(), String> {
        if self.array().is_null(i) {
            *out = Value::Null;
            return Ok(());
        }
        *out = match self {
            Col::Int(a, get) => int_value(get(a, i), 0, ty)?,
            Col::Decimal(a, get, scale) => {
                let v = get(a, i);
                match ty {
                    DataType::Float64 => Value::Float64(v as f64 / 10f64.powi(*scale as i32)),
                    _ => int_value(v, *scale as u8, ty)?,
                }
            }
            Col::Float(a, get) => Value::Float64(get(a, i)),
            Col::Date(a) => Value::Date(a.value(i)),
            Col::Timestamp(a, get) => Value::Timestamp(get(a, i).ok_or_else(|| {
                "a timestamp with a fraction of a microsecond, or out of range: \
                 TIMESTAMP holds whole microseconds"
                    .to_string()
            })?),
            Col::Bool(a) => Value::Bool(a.value(i)),
            Col::Str(a) => ty.parse_value(a.value(i))?,
            Col::LargeStr(a) => ty.parse_value(a.value(i))?,
            Col::View(a) => ty.parse_value(a.value(i))?,
        };
        Ok(())
    }
}

/// Converts an integer (a decimal scaled by `scale`) to an integer-like column type.
fn int_value(v: i128, scale: u8, ty: &DataType) -> Result<Value, String> {
    let range = || {
        let shown = if scale == 0 {
            v.to_string()
        } else {
            let p = 10u128.pow(scale as u32);
            let sign = if v < 0 { "-" } else { "" };
            format!(
                "{sign}{}.{:0w$}",
                v.unsigned_abs() / p,
                v.unsigned_abs() % p,
                w = scale as usize
            )
        };
        format!("{shown} is out of range for {ty}")
    };
    Ok(match ty {
        DataType::Int32 => Value::Int32(i32::try_from(v).map_err(|_| range())?),
        DataType::Int64 => Value::Int64(i64::try_from(v).map_err(|_| range())?),
        DataType::Float64 => Value::Float64(v as f64),
        DataType::Decimal {
            precision,
            scale: to,
        } => {
            let scaled = v
                .checked_mul(10i128.pow((*to - scale) as u32))
                .ok_or_else(range)?;
            if scaled.unsigned_abs() >= 10u128.pow(*precision as u32) {
                return Err(range());
            }
            Value::Decimal(scaled as i64)
        }
        _ => unreachable!("checked by convertible()"),
    })
}
