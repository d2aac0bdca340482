//! strata's errors as the exceptions PEP 249 names, each carrying the
//! SQLSTATE `strata serve` would send for it (`e.sqlstate`).
//!
//! The exception classes are defined by the package's Python half
//! (`strata/errors.py`, so they are ordinary Python classes users can
//! subclass and catch); the class an error gets follows its SQLSTATE's class
//! as psycopg maps PostgreSQL's: 22 data, 23 integrity, 42 and 3D/3F
//! programming, 0A not supported, 08/53/54/55/57/58 operational, the rest
//! internal.

use pyo3::prelude::*;
use strata_sql::SqlError;

/// The PEP 249 class name for a SQLSTATE.
pub fn class_of(sqlstate: &str) -> &'static str {
    match sqlstate.get(..2).unwrap_or("") {
        "22" => "DataError",
        "23" => "IntegrityError",
        "42" | "3D" | "3F" | "26" | "34" => "ProgrammingError",
        "0A" => "NotSupportedError",
        "08" | "40" | "53" | "54" | "55" | "57" | "58" => "OperationalError",
        _ => "InternalError",
    }
}

/// A Python exception of class `class` (from `strata.errors`) with `message`
/// and `sqlstate`.
pub fn raise(py: Python<'_>, class: &str, message: &str, sqlstate: &str) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let cls = py.import("strata.errors")?.getattr(class)?;
        let exc = cls.call1((message,))?;
        exc.setattr("sqlstate", sqlstate)?;
        Ok(PyErr::from_value(exc))
    })();
    made.unwrap_or_else(|e| e)
}

/// `e` as the exception of its SQLSTATE's class.
pub fn sql(py: Python<'_>, e: &SqlError) -> PyErr {
    let state = e.sqlstate();
    raise(py, class_of(state), &e.to_string(), state)
}

/// A misuse of the API (a closed connection, a bad argument): PEP 249's
/// InterfaceError or ProgrammingError, SQLSTATE 08003 or 42601-like.
pub fn interface(py: Python<'_>, message: &str) -> PyErr {
    raise(py, "InterfaceError", message, "08003")
}

/// A bad argument of an API call (an unknown format, a missing endpoint):
/// ProgrammingError, SQLSTATE 22023 (invalid parameter value).
pub fn argument(py: Python<'_>, message: &str) -> PyErr {
    raise(py, "ProgrammingError", message, "22023")
}

/// A value the binding cannot use (a parameter of an unsupported type).
pub fn programming(py: Python<'_>, message: &str, sqlstate: &str) -> PyErr {
    raise(py, class_of(sqlstate), message, sqlstate)
}
