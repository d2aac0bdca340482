//! Python values bound to a statement's `$n` parameters, as SQL literals of
//! their type ([`strata_sql::literal`]): `None` is NULL, `bool` BOOLEAN,
//! `int` an integer, `float` DOUBLE, `decimal.Decimal` an exact number,
//! `str` a string, `datetime.date` DATE and `datetime.datetime` TIMESTAMP.
//! A value never becomes SQL syntax: numbers are written by Python's own
//! formatting of a number, strings are quoted with their quotes doubled.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};
use strata_sql::literal;

use crate::errors;

/// `sql` with its `$n` replaced by the literals of `params` (a sequence).
pub fn bind(py: Python<'_>, sql: &str, params: &Bound<'_, PyAny>) -> PyResult<String> {
    if params.is_instance_of::<PyString>() {
        return Err(errors::programming(
            py,
            "parameters must be a sequence (a list or a tuple), not a string",
            "42601",
        ));
    }
    let kinds = Kinds::new(py)?;
    let mut literals = Vec::new();
    for (i, v) in params.try_iter()?.enumerate() {
        literals.push(literal_of(py, &kinds, &v?, i + 1)?);
    }
    literal::bind(sql, &literals).map_err(|e| match e {
        literal::BindError::Syntax(e) => errors::sql(py, &e),
        missing => errors::programming(py, &missing.to_string(), "42P02"),
    })
}

/// The Python classes with literals that are not builtins, looked up once
/// per statement.
struct Kinds<'py> {
    decimal: Bound<'py, PyAny>,
    datetime: Bound<'py, PyAny>,
    date: Bound<'py, PyAny>,
}

impl<'py> Kinds<'py> {
    fn new(py: Python<'py>) -> PyResult<Kinds<'py>> {
        let datetime = py.import("datetime")?;
        Ok(Kinds {
            decimal: py.import("decimal")?.getattr("Decimal")?,
            datetime: datetime.getattr("datetime")?,
            date: datetime.getattr("date")?,
        })
    }
}

/// Parameter `n`'s value as a SQL literal.
fn literal_of(
    py: Python<'_>,
    kinds: &Kinds<'_>,
    v: &Bound<'_, PyAny>,
    n: usize,
) -> PyResult<String> {
    if v.is_none() {
        return Ok("NULL".into());
    }
    // bool before int: True is an int in Python.
    if v.is_instance_of::<PyBool>() {
        return Ok(if v.extract::<bool>()? {
            "TRUE"
        } else {
            "FALSE"
        }
        .into());
    }
    if v.is_instance_of::<PyInt>() {
        let text: String = v.str()?.extract()?;
        return Ok(literal::number(&text));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(literal::double(v.extract::<f64>()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(literal::quoted(&v.extract::<String>()?));
    }
    if v.is_instance(&kinds.decimal)? {
        if !v.call_method0("is_finite")?.extract::<bool>()? {
            return Err(errors::programming(
                py,
                &format!(
                    "parameter ${n}: {} is not a number strata can store",
                    v.str()?
                ),
                "22P02",
            ));
        }
        // Positional notation, never an exponent.
        let text: String = v.call_method1("__format__", ("f",))?.extract()?;
        return Ok(literal::number(&text));
    }
    // datetime before date: a datetime is a date in Python.
    if v.is_instance(&kinds.datetime)? {
        if !v.getattr("tzinfo")?.is_none() {
            return Err(errors::programming(
                py,
                &format!(
                    "parameter ${n}: a datetime with a time zone; strata's TIMESTAMP has none \
                     (convert it, e.g. dt.astimezone(timezone.utc).replace(tzinfo=None))"
                ),
                "0A000",
            ));
        }
        let text: String = v.call_method1("isoformat", (" ",))?.extract()?;
        return Ok(format!("TIMESTAMP {}", literal::quoted(&text)));
    }
    if v.is_instance(&kinds.date)? {
        let text: String = v.call_method0("isoformat")?.extract()?;
        return Ok(format!("DATE {}", literal::quoted(&text)));
    }
    let kind: String = v.get_type().name()?.extract()?;
    Err(errors::programming(
        py,
        &format!(
            "parameter ${n}: cannot bind a value of type {kind} (strata binds None, bool, int, \
             float, decimal.Decimal, str, datetime.date and datetime.datetime)"
        ),
        "0A000",
    ))
}
