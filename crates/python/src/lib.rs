//! strata in Python: the native half of the `strata` package (imported as
//! `strata._strata`; the DB-API classes and the exceptions are the package's
//! Python half, `python/strata`).
//!
//! A [`connection::Connection`] is one [`strata_sql::SqlSession`] over a
//! database opened in this process — no server. Statements run on the
//! session's statement thread with the GIL released; the calling thread
//! wakes every few milliseconds to look for Ctrl-C and cancels the statement
//! when it comes. A [`result::Result`] keeps the statement's Arrow batches as
//! the plan produced them and hands them out through Arrow's C stream
//! interface (`__arrow_c_stream__`) any number of times without copying a
//! buffer: pyarrow, pandas and polars read them in place.
//!
//! The modules: `connection.rs` (open, run, register), `result.rs` (the
//! result and its Arrow export), `values.rs` (Arrow values as Python
//! objects), `params.rs` (Python values as SQL literals), `errors.rs`
//! (strata's errors as PEP 249 exceptions with their SQLSTATE).

use pyo3::prelude::*;

mod connection;
mod errors;
mod maintenance;
mod params;
mod result;
mod values;

/// The native module `strata._strata`.
#[pymodule]
fn _strata(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<connection::Connection>()?;
    m.add_class::<result::Result>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
