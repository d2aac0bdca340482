//! Arrow values as Python objects, for `fetchone`/`fetchall` (no pyarrow
//! needed): integers as `int`, DOUBLE as `float`, DECIMAL as
//! `decimal.Decimal`, DATE as `datetime.date`, TIMESTAMP as
//! `datetime.datetime`, text as `str`, BOOLEAN as `bool`, NULL as `None`.
//! A type strata does not store (an interval from date arithmetic, say) is
//! given as Arrow's text of it.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use arrow_array::cast::AsArray;
use arrow_array::types::DecimalType;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Float16Type, Float32Type, Float64Type, Int8Type,
    Int16Type, Int32Type, Int64Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, TimeUnit};
use strata_sql::arrow::util::display::{ArrayFormatter, FormatOptions};

/// Days from 0001-01-01 (Python's ordinal 1) to 1970-01-01.
const UNIX_EPOCH_ORDINAL: i64 = 719_163;

/// Python's constructors for the values that are not builtins, looked up
/// once per conversion.
struct Makers<'py> {
    decimal: Bound<'py, PyAny>,
    date_from_ordinal: Bound<'py, PyAny>,
    epoch: Bound<'py, PyAny>,
    timedelta: Bound<'py, PyAny>,
}

impl<'py> Makers<'py> {
    fn new(py: Python<'py>) -> PyResult<Makers<'py>> {
        let datetime = py.import("datetime")?;
        let dt = datetime.getattr("datetime")?;
        Ok(Makers {
            decimal: py.import("decimal")?.getattr("Decimal")?,
            date_from_ordinal: datetime.getattr("date")?.getattr("fromordinal")?,
            epoch: dt.call1((1970, 1, 1))?,
            timedelta: datetime.getattr("timedelta")?,
        })
    }

    fn date(&self, days: i64) -> PyResult<Bound<'py, PyAny>> {
        self.date_from_ordinal.call1((days + UNIX_EPOCH_ORDINAL,))
    }

    fn timestamp(&self, micros: i64) -> PyResult<Bound<'py, PyAny>> {
        let days = micros.div_euclid(86_400_000_000);
        let rest = micros.rem_euclid(86_400_000_000);
        let delta = self.timedelta.call1((days, 0, rest))?;
        self.epoch.call_method1("__add__", (delta,))
    }
}

/// Rows `from..to` of `batch` as tuples.
pub fn rows<'py>(
    py: Python<'py>,
    batch: &RecordBatch,
    from: usize,
    to: usize,
) -> PyResult<Vec<Bound<'py, PyTuple>>> {
    let makers = Makers::new(py)?;
    let mut columns = Vec::with_capacity(batch.num_columns());
    for array in batch.columns() {
        columns.push(column(py, &makers, array.as_ref(), from, to)?);
    }
    let mut out = Vec::with_capacity(to - from);
    for r in 0..to - from {
        let row: Vec<&Bound<'py, PyAny>> = columns.iter().map(|c| &c[r]).collect();
        out.push(PyTuple::new(py, row)?);
    }
    Ok(out)
}

/// Values `from..to` of `array`.
fn column<'py>(
    py: Python<'py>,
    m: &Makers<'py>,
    array: &dyn Array,
    from: usize,
    to: usize,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let mut out = Vec::with_capacity(to - from);
    macro_rules! each {
        ($get:expr) => {{
            for i in from..to {
                if array.is_null(i) {
                    out.push(py.None().into_bound(py));
                } else {
                    out.push($get(i)?);
                }
            }
        }};
    }
    macro_rules! primitive {
        ($t:ty) => {{
            let a = array.as_primitive::<$t>();
            each!(|i| a.value(i).into_pyobject(py).map(|v| v.into_any()))
        }};
    }
    match array.data_type() {
        DataType::Null => {
            each!(|_| -> PyResult<Bound<'py, PyAny>> { Ok(py.None().into_bound(py)) })
        }
        DataType::Boolean => {
            let a = array.as_boolean();
            each!(|i| -> PyResult<Bound<'py, PyAny>> {
                Ok(pyo3::types::PyBool::new(py, a.value(i))
                    .to_owned()
                    .into_any())
            })
        }
        DataType::Int8 => primitive!(Int8Type),
        DataType::Int16 => primitive!(Int16Type),
        DataType::Int32 => primitive!(Int32Type),
        DataType::Int64 => primitive!(Int64Type),
        DataType::UInt8 => primitive!(UInt8Type),
        DataType::UInt16 => primitive!(UInt16Type),
        DataType::UInt32 => primitive!(UInt32Type),
        DataType::UInt64 => primitive!(UInt64Type),
        DataType::Float16 => {
            let a = array.as_primitive::<Float16Type>();
            each!(|i| f64::from(a.value(i).to_f32())
                .into_pyobject(py)
                .map(|v| v.into_any()))
        }
        DataType::Float32 => {
            let a = array.as_primitive::<Float32Type>();
            each!(|i| f64::from(a.value(i))
                .into_pyobject(py)
                .map(|v| v.into_any()))
        }
        DataType::Float64 => primitive!(Float64Type),
        DataType::Decimal128(precision, scale) => {
            let a = array.as_primitive::<Decimal128Type>();
            let (p, s) = (*precision, *scale);
            each!(|i| m
                .decimal
                .call1((Decimal128Type::format_decimal(a.value(i), p, s),)))
        }
        DataType::Date32 => {
            let a = array.as_primitive::<Date32Type>();
            each!(|i| m.date(i64::from(a.value(i))))
        }
        DataType::Date64 => {
            let a = array.as_primitive::<Date64Type>();
            each!(|i| m.date(a.value(i).div_euclid(86_400_000)))
        }
        DataType::Timestamp(unit, None) => {
            let micros: Box<dyn Fn(usize) -> i64> = match unit {
                TimeUnit::Second => {
                    let a = array.as_primitive::<TimestampSecondType>();
                    Box::new(move |i| a.value(i).saturating_mul(1_000_000))
                }
                TimeUnit::Millisecond => {
                    let a = array.as_primitive::<TimestampMillisecondType>();
                    Box::new(move |i| a.value(i).saturating_mul(1_000))
                }
                TimeUnit::Microsecond => {
                    let a = array.as_primitive::<TimestampMicrosecondType>();
                    Box::new(move |i| a.value(i))
                }
                TimeUnit::Nanosecond => {
                    let a = array.as_primitive::<TimestampNanosecondType>();
                    Box::new(move |i| a.value(i).div_euclid(1_000))
                }
            };
            each!(|i| m.timestamp(micros(i)))
        }
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            each!(|i| a.value(i).into_pyobject(py).map(|v| v.into_any()))
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            each!(|i| a.value(i).into_pyobject(py).map(|v| v.into_any()))
        }
        DataType::Utf8View => {
            let a = array.as_string_view();
            each!(|i| a.value(i).into_pyobject(py).map(|v| v.into_any()))
        }
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            each!(|i| -> PyResult<Bound<'py, PyAny>> {
                Ok(PyBytes::new(py, a.value(i)).into_any())
            })
        }
        _ => {
            let f = ArrayFormatter::try_new(array, &FormatOptions::default())
                .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
            each!(|i| f
                .value(i)
                .to_string()
                .into_pyobject(py)
                .map(|v| v.into_any()))
        }
    }
    Ok(out)
}
